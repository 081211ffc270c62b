/*
 * The simulator's state, shared by its parts: engine.c (events, threads, VPs, barriers,
 * the run), sched.c (run queues, bubbles, find_next, the strategies' hooks and the
 * execution of their decisions), view.c (views of this state for the hooks), hw.c
 * (hwprio's iterations and levels), model.c (speeds).
 */
#ifndef MA_SIM_INT_H
#define MA_SIM_INT_H

#include "ma_sim.h"
#include "ma_dlrb_balance.h"

#define SIM_BUBBLE_TAG (UINT64_C(1) << 63) /* as marcel's bubble uids */
#define SIM_LIST_MAX 8192                  /* decisions a hook may append */

enum sim_tstate { SIM_T_READY, SIM_T_RUNNING, SIM_T_BLOCKED, SIM_T_DONE };

/* A NUMA node's memory under a bandwidth limit: the threads computing with memory homed
 * there, and how much slower their memory part runs for it (1: not at all). */
struct sim_bw_node {
	struct sim_ent *head;
	double slow;
	int dirty;                  /* its threads changed since slow was computed */
};

/* A thread or a bubble. The root bubble is opened on the machine's queue. */
struct sim_ent {
	uint64_t id;
	unsigned char is_bubble;
	unsigned char opened;       /* bubble: burst, its members scheduled on `item` */
	unsigned char in_cache;     /* thread: ready inside its closed unit */
	unsigned char stray;
	unsigned char master;       /* thread: a master thread (the workload's hint) */
	unsigned char move_req;     /* thread: moved while it ran, off its VP at its slice's end */
	int index;                  /* thread or bubble index in the workload, -1: the root */
	struct sim_ent *parent;     /* NULL: the root bubble (or the root itself) */
	struct sim_ent **kids;      /* bubble: members, in member order */
	unsigned nb_kids;
	/* on a queue's list */
	int queue;                  /* -1: on none */
	struct sim_ent *prev, *next;
	int prio;
	/* placement: a closed bubble's queue, an opened one's; a thread's own queue (-1:
	 * it waits in its closed unit, or nowhere) */
	int item;
	int last_item;
	int fixed_item;             /* a pinned thread's VP queue, else -1 */
	unsigned ready;             /* closed bubble: threads ready in its cache (subtree) */
	unsigned alive;             /* bubble: threads of its subtree not ended */
	/* thread */
	enum sim_tstate state;
	int vp, last_vp;
	int last_core;              /* core item it last ran under, -1 */
	unsigned long step;         /* its program's next phase */
	struct sim_phase phase;     /* the current one */
	double remaining;           /* compute work left in the phase */
	double rate;                /* speed now, while running */
	double since;               /* rate valid since */
	double cpu;                 /* time run so far */
	double ready_at;            /* when it last became ready (its wait is counted) */
	double wait;
	double latency;             /* of wait: held by the scheduler latency */
	unsigned long version;      /* invalidates its completion event (or its wake-up) */
	unsigned migrations;
	int home_node;              /* NUMA node of its memory (first touch), -1: none yet */
	int run_home;               /* while running: the queue it counts in (sub_running) */
	struct sim_ent *joiner;     /* a thread waiting in SIM_JOIN for this one to end */
	/* while it computes with memory access under a bandwidth limit (bandwidth.c): the
	 * node whose streams it counts in (-1: none), its place in that node's list, and
	 * its memory part's a = mem * (numa_factor if remote), c = 1 - mem */
	int bw_node;
	struct sim_ent *bw_prev, *bw_next;
	double bw_a, bw_c;
	unsigned long posted;       /* SIM_EXCHANGEs reached */
	double end;
};

struct sim_queue {
	struct sim_ent *head, *tail;
	struct sim_ent *idle;       /* first closed bubble with nothing ready (sched.c) */
	unsigned n;
	unsigned runnable;          /* of those, threads and closed bubbles with ready ones */
	unsigned long sub_queued;   /* entities queued here and on the queues below */
	unsigned long sub_running;  /* threads running that belong here or below */
	unsigned ready;             /* threads waiting here, a closed bubble's counted (at least 1) */
};

struct sim_vp {
	struct sim_ent *cur;        /* running thread, NULL: idle */
	int queue;                  /* its own queue's number */
	int core;                   /* its core's item (the SMT domain), or its leaf */
	int node;                   /* its NUMA node, -1 */
	int kind;                   /* core kind, -1 */
	int level;                  /* hwprio level applied */
	double idle_since;          /* when it went idle, < 0 while busy */
	double idle_total;
	double idle_mark;           /* idle_total at the last iteration */
	unsigned long slice_version;
	int wake_pending;           /* a wake event is on its way */
	int slice_armed;            /* a slice end is on its way: something waits beside */
};

struct sim_event {
	double t;
	unsigned long seq;
	int kind;                   /* SIM_EV_* */
	int who;
	unsigned long version;
};

enum { SIM_EV_COMPLETE, SIM_EV_SLICE, SIM_EV_BEAT, SIM_EV_WAKE, SIM_EV_AWAKE };

struct sim_barrier {
	unsigned count, arrived;
	struct sim_ent **waiting;
	unsigned rounds;
};

struct sim {
	const struct sim_config *c;
	const struct sim_machine *m;
	const struct sim_workload *w;
	struct ma_topo topo;
	unsigned nl, nv, nq;        /* items, VPs, queues (items + VPs) */
	struct sim_queue *q;
	struct sim_vp *vp;
	struct sim_ent *thread;     /* nb_threads */
	struct sim_ent *bubble;     /* nb_bubbles */
	struct sim_ent root;
	struct sim_barrier *bar;
	double now;
	struct sim_event *heap;
	unsigned nb_ev, cap_ev;
	unsigned long seq, events;
	unsigned alive;
	/* the strategy */
	const struct ma_strategy *s;
	void *priv;
	int beat_armed;
	unsigned max_kids;          /* the widest item's children (pick views) */
	int *qparent;               /* each queue's parent queue, -1: the machine's */
	unsigned char *on_path;     /* scratch for view.c: the queues of one VP's path */
	unsigned nb_free;           /* VPs idle with no wake-up on its way */
	int choosing_vp;            /* a VP about to choose its next thread (not one to wake
				       for what it is putting back), -1 */
	struct ma_pick_kid *pick_kids;
	struct ma_decision *idle_list; /* decide_vp_idle's list (SIM_LIST_MAX) */
	/* hwprio */
	struct ma_hw_policy_params params;
	struct ma_hw_policy_state st;
	struct ma_hw_sample *samples, *pooled;
	struct ma_hw_path *path;
	uint64_t *unit;
	int *fit;
	double *cpu_mark;           /* per thread, CPU time at the last iteration */
	/* --hwprio balance (balance.c): libmarcel-dlrb's controller, per thread (rank) */
	struct ma_dlrb_ctl *dctl;
	double *dutil;
	int *dvp, *dlevel;
	double iter_start;
	int iter_barrier;           /* the barrier whose rounds are iterations, -1: none yet */
	/* Without barriers, an exchange round every thread has passed is an iteration. */
	unsigned long ex_min;       /* exchanges every exchanging thread has posted */
	unsigned ex_ahead;          /* exchanging threads that have posted more than ex_min */
	unsigned ex_threads;        /* threads with neighbours */
	unsigned *nbuf;             /* scratch: one thread's neighbours (nb_threads) */
	unsigned iterations, hw_changes;
	struct sim_bw_node *bw;     /* per NUMA node, its streams (bandwidth.c); NULL: no limit */
	unsigned *bw_dirty, nb_bw_dirty; /* the nodes to compute again before time moves on */
	double *kind_speed;         /* per core kind (hwloc's index) */
	unsigned nb_kinds;
	uint64_t rng;
	FILE *trace;
	/* The snapshot: taken or not, when, and the threads spawned and not ended (alive
	 * minus those never spawned yet). peak_*: the first instant with the most of them. */
	int snapshot_done;
	enum sim_snapshot_when snap_when;
	double snap_t, snap_until, peak_t;
	unsigned snap_live, peak_live, unspawned;
	char *err;
	size_t errlen;
	int failed;
};

/* engine.c */
void sim_push(struct sim *s, double t, int kind, int who, unsigned long version);
void sim_thread_ready(struct sim *s, struct sim_ent *t);
void sim_vp_schedule(struct sim *s, unsigned v);
void sim_core_rates(struct sim *s, int core);
/* t's speed set again (it may have changed), its remaining work brought to now first. */
void sim_reschedule(struct sim *s, struct sim_ent *t);
void sim_arm_slice(struct sim *s, unsigned v);
double sim_random(struct sim *s);
void sim_fail(struct sim *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sim_trace_event(struct sim *s, const char *ph, unsigned vp, const char *name, uint64_t id);

/* sched.c */
void sim_enqueue(struct sim *s, struct sim_ent *e, int q);
void sim_dequeue(struct sim *s, struct sim_ent *e);
void sim_ready_add(struct sim *s, struct sim_ent *b, int delta);
int sim_home_queue(const struct sim_ent *t);
struct sim_ent *sim_unit_of(struct sim_ent *t);
void sim_notify(struct sim *s, int q, int near_vp);
struct sim_ent *sim_find_next(struct sim *s, unsigned v);
void sim_strategy_start(struct sim *s);
void sim_strategy_vp_idle(struct sim *s, unsigned v);
void sim_strategy_beat(struct sim *s);
struct sim_ent *sim_entity(struct sim *s, uint64_t id);
int sim_queue_sees(const struct sim *s, int q, unsigned v);
int sim_parent_queue(const struct sim *s, int q);
int sim_queue_within(const struct sim *s, int q, int anc);
void sim_execute(struct sim *s, const struct ma_dlist *l);
/* Thread t bound to VP v from now on (libmarcel-dlrb's rebinding of a rank). */
void sim_pin_move(struct sim *s, struct sim_ent *t, unsigned v);

/* view.c */
int sim_view_build(struct sim *s, struct ma_view *v, struct sim_ent *root, int self_vp, unsigned flags);
void sim_view_free(struct ma_view *v);
void sim_pick_view(struct sim *s, struct ma_pick_view *pv, struct sim_ent *b, int q, unsigned v);
void sim_pick_kids(struct sim *s, struct ma_pick_view *pv, unsigned v);
void sim_pick_load(struct sim *s, struct ma_pick_view *pv, struct sim_ent *b);

/* hw.c */
int sim_hw_start(struct sim *s);
void sim_hw_iteration(struct sim *s);
void sim_hw_stop(struct sim *s);
int sim_hw_level_of(const struct sim *s, unsigned v);
int sim_balance_start(struct sim *s);
void sim_balance_iteration(struct sim *s);
void sim_balance_stop(struct sim *s);

/* snapshot.c */
int sim_snapshot_write(struct sim *s, FILE *out);
/* The configuration's snapshot of now, once, taken for reason `when`; the state lasts
 * until the next event's time `until`. */
void sim_snapshot(struct sim *s, enum sim_snapshot_when when, double until);
/* The event loop is about to move to an event at time next: the state at s->now is
 * complete. Takes the snapshot asked for that time, or notes a new peak of threads. */
void sim_snapshot_watch(struct sim *s, double next);

/* bandwidth.c */
int sim_bw_start(struct sim *s);
void sim_bw_stop(struct sim *s);
/* Thread t started, stopped or changed phase: its memory's node is computed again at the
 * next sim_bw_flush, which the engine calls before time moves on. */
void sim_bw_track(struct sim *s, struct sim_ent *t);
void sim_bw_flush(struct sim *s);
/* How much slower the memory part of a thread homed on `node` runs now (1: no limit). */
double sim_bw_slow(const struct sim *s, int node);

/* model.c */
/* Each core kind's speed: its FrequencyMaxMHz over the fastest's; 1 for all if a kind
 * has none. 0 or ENOMEM. */
int sim_kind_speeds(struct sim *s);
double sim_speed(const struct sim *s, const struct sim_ent *t, unsigned v);

#endif
