/*
 * What the parts of marcel-render share (the tool's own files, nothing else includes it):
 * the command's exits and memory (marcel-render.c), text escaped for XML and JSON, the
 * colours and the rule giving them (marcel-render-common.c), the snapshot's model that marcel-render-snapshot.c
 * reads and marcel-render-svg.c draws, and the trace's that marcel-render-trace.c reads
 * and marcel-render-page.c writes out as a page.
 */
#ifndef MARCEL_RENDER_H
#define MARCEL_RENDER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "trace-json.h"

#define MR_TAG (UINT64_C(1) << 63)      /* marcel's bubble-id tag (MA_TRACE_BUBBLE_TAG) */

/* ---- the command (marcel-render.c) ---- */

extern const char mr_prog[];

/* One line naming file and what is wrong with it on stderr, then exit status 2: every
 * input is checked in full before anything is written. */
void mr_bad(const char *file, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
/* calloc and a growing array that exit (status 1) rather than return NULL. */
void *mr_alloc(size_t n);
void *mr_grow(void *a, unsigned *n, unsigned *cap, size_t sz);
void mr_add_int(int **a, unsigned *n, unsigned *cap, int v);
/* The whole of file (to free), or mr_bad. */
char *mr_read(const char *file, size_t *len);

/* ---- text, colours and the colour rule (marcel-render-common.c) ---- */

/* s as XML text, as a JSON string safe inside a script element; the bytes of its first
 * chars characters; its width in characters. Invalid UTF-8 is written U+FFFD. */
void mr_xml(FILE *f, const char *s);
void mr_jstr(FILE *f, const char *s);
int mr_prefix(const char *s, int chars);
int mr_chars(const char *s);

#define MR_NB_COLOURS ((size_t)12)      /* mr_palette's entries: group k gets k % 12 */
#define MR_NO_GROUP "#d9d9d9"           /* threads in no group */
#define MR_LEGEND_GROUPS 24             /* groups named in a legend */
extern const char *const mr_palette[MR_NB_COLOURS];
const char *mr_colour(int group);

/* Bubble membership as the colour rule reads it, filled by the snapshot's reader and the
 * trace's alike so that both pictures colour alike: threads and bubbles are nodes
 * 0..n-1 of one space. */
struct mr_members {
	unsigned n;
	int *up;                          /* the bubble holding node x, -1 */
	char *explicit_;                  /* per bubble: it may tell threads apart (not the
					     root, not an implicit children bubble) */
	uint64_t *key;                    /* per bubble: its id, the order of the colours */
	int *threads;                     /* the thread nodes, in the order groups are met */
	unsigned nb_threads;
	unsigned max_chain;               /* a chain is cut after max_chain + 1 bubbles: a
					     trace may record a loop */
	/* what mr_colour_groups finds */
	long *below;                      /* per explicit bubble: its threads, at any depth */
	int *group;                       /* per thread: its group, -1 */
	long in_bubbles;                  /* threads in an explicit bubble */
};

/* Allocates mb's inputs, for the caller to fill (threads[0..nb_threads-1] among them). */
void mr_members_init(struct mr_members *mb, unsigned n, unsigned nb_threads, unsigned max_chain);
/* The colour rule: a thread takes its outermost explicit bubble's colour, passing over
 * bubbles that hold every thread in explicit bubbles (one colour for all tells nothing
 * apart), or the innermost one's when all do. Groups are numbered by bubble key, which is
 * creation order in marcel and in marcel-sim; their bubbles fill *groups (empty before)
 * in that order. Allocates mb's results. */
void mr_colour_groups(struct mr_members *mb, int **groups, unsigned *nb_groups, unsigned *cap_groups);
void mr_members_free(struct mr_members *mb);

/* ---- snapshots: read by marcel-render-snapshot.c, drawn by marcel-render-svg.c ---- */

struct mr_queue {
	const char *name;
	int vp, parent, running, hw;
	int *kids;                        /* child queues, in file order */
	unsigned nb_kids, cap_kids;
	int *threads;                     /* threads placed on it, in entity order */
	unsigned nb_threads, cap_threads;
	int *bubbles;                     /* bubbles placed on it */
	unsigned nb_bubbles, cap_bubbles;
};

struct mr_ent {
	int bubble;                       /* 1: a bubble, 0: a thread */
	uint64_t uid;
	const char *name;
	int implicit, state, parent, queue, held_by, running_vp;
	int *kids;
	unsigned nb_kids, cap_kids;
	long nb_threads;                  /* bubbles: threads below it */
	int group;                        /* colour group, -1 none; a bubble's is its first thread's */
	/* the SVG's working state (marcel-render-svg.c) */
	int shown;                        /* stamp of the queue being drawn, if drawn there */
	int counted;                      /* stamp under which count is valid */
	unsigned count;                   /* things drawn on that queue it holds */
};

struct mr_snap {
	const char *file;
	struct tj_node doc;
	const char *strategy;
	unsigned nb_vps, nq, ne, nb_threads;
	struct mr_queue *q;
	struct mr_ent *e;
	int root_q, root_e;
	int *vp_queue;                    /* VP -> its queue */
	int *groups;                      /* group -> its bubble (entity), in colour order */
	unsigned nb_groups, cap_groups;
	long ungrouped;                   /* threads in no group */
	struct mr_queue unplaced;         /* threads on no queue */
	/* the SVG's working state (marcel-render-svg.c) */
	int stamp;
	int top;                          /* the queue being drawn: the bubble its drawing starts at */
	int compact;                      /* many VPs: no nesting of outlines */
	unsigned cap_item, cap_vp;        /* thread chips (and bubbles) drawn per queue */
	unsigned vp_maxw;
};

/* Reads and checks file whole (mr_bad if it is not a snapshot as marcel writes them). */
void mr_snap_load(struct mr_snap *s, const char *file);
void mr_snap_free(struct mr_snap *s);

/* What the SVG draws per queue (also in the usage). */
#define MR_COMPACT_VPS 64               /* beyond: compact boxes */
#define MR_CAP_ITEM 32                  /* threads, and bubbles, drawn per queue */
#define MR_CAP_VP 8                     /* threads drawn per VP queue */
#define MR_CAP_ITEM_COMPACT 8
#define MR_CAP_VP_COMPACT 3

void mr_svg(struct mr_snap *s, FILE *f);

/* ---- traces: read by marcel-render-trace.c, written out by marcel-render-page.c ---- */

/* Caps on what the page embeds; beyond them it says what was left out. */
#define MR_MAX_SLICES 200000u
#define MR_MAX_EVENTS 20000u
#define MR_MAX_HW 100000u

struct mr_track {
	long long pid, tid;
	int vp;                           /* -1: not a VP's track */
	int open;                         /* a slice is open: its thread */
	long long open_ts;
	int idle;                         /* an idle period is open */
	long long idle_ts;
};

/* Slices, idle periods, level changes and log lines; seq is the order they were read in,
 * which breaks ties when they are sorted by VP and time. */
struct mr_slice {
	long long s, e;
	int vp, thread, keep;
	unsigned seq;
};

struct mr_point {
	long long ts;
	int vp, value;
	unsigned seq;
	char *text;
};

struct mr_thr {
	uint64_t uid;
	char *name;
	int64_t bubble;                   /* the bubble it was last inserted into, -1 */
	int group;                        /* colour group (by_thread: its own index), -1 none */
};

struct mr_bub {
	uint64_t uid;
	int64_t parent;                   /* the bubble it was last inserted into, -1 */
	int explicit_;                    /* woken, or threads were inserted into it */
	long nb_threads;
};

/* Index by id (thread or bubble uid): open addressing, slots hold index + 1. Only looks
 * up: what is stored, and in which order, is decided by the callers. */
struct mr_map {
	uint64_t *keys;
	int *vals;
	unsigned cap, n;
};

struct mr_movie {
	const char *file;
	char process[64];
	struct tj_summary sum;            /* the checks marcel-trace-summary makes */
	struct mr_track *tracks;
	unsigned nb_tracks, cap_tracks, nb_vps;
	struct mr_map track_of;           /* pid << 32 | tid -> track */
	int has_ts;
	double t0;                        /* µs */
	long long t_end;                  /* ns from t0 */
	struct mr_slice *slices;
	unsigned nb_slices, cap_slices;
	struct mr_slice *idle;
	unsigned nb_idle, cap_idle;
	struct mr_point *hw, *ev;
	unsigned nb_hw, cap_hw, nb_ev, cap_ev;
	unsigned long ev_total, hw_total, pauses;
	struct mr_thr *thr;
	unsigned nb_thr, cap_thr;
	struct mr_map thr_of;
	struct mr_bub *bub;
	unsigned nb_bub, cap_bub;
	struct mr_map bub_of;
	int *groups;                      /* group -> bubble, in colour order */
	unsigned nb_groups, cap_groups;
	int by_thread;                    /* no membership in the trace: colour by thread */
	long long slice_cut;              /* slices shorter than this (ns) were left out */
};

/* Reads and checks file whole (mr_bad if it is not a trace as marcel writes them); what
 * the page looks up by time comes out sorted by VP, then time. */
void mr_movie_load(struct mr_movie *m, const char *file);
void mr_movie_free(struct mr_movie *m);

void mr_page(FILE *f, const struct mr_movie *m);

#endif
