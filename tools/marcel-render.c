/*
 * marcel-render: pictures of placement from the two files that marcel and marcel-sim both
 * write -- a snapshot (marcel_sched_snapshot_json) drawn as an SVG of the run-queue tree,
 * and a trace (MARCEL_TRACE) turned into one self-contained HTML page that replays it. It
 * reads those files only, through tools/trace-json.h, and links nothing of the runtime, so
 * a live run and a simulated one draw alike. The page's player (CSS and script) is in
 * marcel-render-page.c.
 *
 * Every input is checked in full before anything is written: a file that is not JSON,
 * or not a snapshot or trace as marcel writes them, gets one line naming it and exit 2.
 * The output goes to a temporary file renamed over OUT at the end, so a failure leaves
 * OUT as it was. Same input, same bytes: nothing depends on time, addresses or hashing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "trace-json.h"

/* The page's parts, in marcel-render-page.c: CSS, then the player's script. */
extern const char mr_page_css[];
extern const char mr_page_js[];

#define MR_TAG (UINT64_C(1) << 63)      /* marcel's bubble-id tag (MA_TRACE_BUBBLE_TAG) */

static const char *mr_prog = "marcel-render";

/* ---- errors and output ---- */

static void mr_bad(const char *file, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void mr_bad(const char *file, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: %s: ", mr_prog, file);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

static void *mr_alloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);
	if (!p) {
		fprintf(stderr, "%s: out of memory\n", mr_prog);
		exit(1);
	}
	return p;
}

/* Grows array a (*n elements of sz bytes, room for *cap) by one zeroed element at its
 * end; returns the array, which may have moved. */
static void *mr_grow(void *a, unsigned *n, unsigned *cap, size_t sz)
{
	if (*n == *cap) {
		unsigned ncap = *cap ? *cap * 2 : 16;
		a = realloc(a, (size_t)ncap * sz);
		if (!a) {
			fprintf(stderr, "%s: out of memory\n", mr_prog);
			exit(1);
		}
		*cap = ncap;
	}
	memset((char *)a + (size_t)(*n)++ * sz, 0, sz);
	return a;
}

static void mr_add_int(int **a, unsigned *n, unsigned *cap, int v)
{
	*a = mr_grow(*a, n, cap, sizeof(int));
	(*a)[*n - 1] = v;
}

/* Where the output goes: a temporary file beside OUT, renamed over it by mr_out_close. */
struct mr_out {
	FILE *f;
	const char *path;                 /* NULL: standard output */
	char *tmp;
};

static void mr_out_open(struct mr_out *o, const char *path)
{
	o->path = path;
	o->tmp = NULL;
	if (!path) {
		o->f = stdout;
		return;
	}
	o->tmp = mr_alloc(strlen(path) + 16);
	sprintf(o->tmp, "%s.XXXXXX", path);
	int fd = mkstemp(o->tmp);
	if (fd < 0) {
		fprintf(stderr, "%s: %s: cannot create a file beside it: %s\n", mr_prog, path, strerror(errno));
		exit(1);
	}
	/* mkstemp makes it private; the picture gets the mode a plain fopen would give. */
	mode_t um = umask(0);
	umask(um);
	fchmod(fd, 0666 & ~um);
	o->f = fdopen(fd, "w");
	if (!o->f) {
		fprintf(stderr, "%s: %s: %s\n", mr_prog, path, strerror(errno));
		unlink(o->tmp);
		exit(1);
	}
}

static int mr_out_close(struct mr_out *o)
{
	int bad = fflush(o->f) != 0 || ferror(o->f);
	int e = errno;
	if (o->path) {
		bad |= fclose(o->f) != 0;
		if (!bad && rename(o->tmp, o->path))
			bad = 1, e = errno;
		if (bad)
			unlink(o->tmp);
		free(o->tmp);
	}
	if (bad) {
		fprintf(stderr, "%s: %s: cannot write: %s\n", mr_prog, o->path ? o->path : "standard output",
			strerror(e ? e : EIO));
		return 1;
	}
	return 0;
}

/* Length of the valid UTF-8 sequence at p, 0 if there is none. The parser checks what it
 * reads, but cuts strings to fit its buffers, possibly inside a character. */
static unsigned mr_utf8(const unsigned char *p)
{
	unsigned n, c;
	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2, c = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3, c = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, c = p[0] & 0x07;
	else
		return 0;
	for (unsigned i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) || (n == 4 && (c < 0x10000 || c > 0x10ffff)))
		return 0;
	return n;
}

#define MR_REPLACEMENT "\xef\xbf\xbd" /* U+FFFD */

/* Text for XML (SVG, XHTML): markup characters as entities; control characters XML does
 * not allow and invalid UTF-8 become U+FFFD. */
static void mr_xml(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		unsigned n = mr_utf8(p);
		if (!n || (*p < 0x20 && *p != '\t' && *p != '\n')) {
			fputs(MR_REPLACEMENT, f);
			p++;
			continue;
		}
		switch (*p) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fwrite(p, 1, n, f);
		}
		p += n;
	}
}

/* A JSON string safe inside an HTML or XML script element: no '<', '>' or '&' (so
 * neither "</script" nor "]]>" can appear), no control characters, valid UTF-8. */
static void mr_jstr(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		unsigned n = mr_utf8(p);
		if (!n)
			fputs(MR_REPLACEMENT, f), n = 1;
		else if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&')
			fprintf(f, "\\u%04x", *p);
		else
			fwrite(p, 1, n, f);
		p += n;
	}
	fputc('"', f);
}

/* Bytes of the first chars characters of s (cutting between characters). */
static int mr_prefix(const char *s, int chars)
{
	const unsigned char *p = (const unsigned char *)s;
	int i = 0;
	while (p[i] && chars > 0) {
		unsigned n = mr_utf8(p + i);
		i += n ? (int)n : 1;
		chars--;
	}
	return i;
}

/* Display width of s in characters (UTF-8 continuation bytes do not count). */
static int mr_chars(const char *s)
{
	int n = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		n += (*p & 0xc0) != 0x80;
	return n;
}

/* ---- colours ---- */

/* Twelve hues told apart easily (Tableau's), in a fixed order: group k gets entry k % 12
 * in the snapshot and in the movie alike. */
static const char *const mr_palette[] = {
	"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
	"#b07aa1", "#ff9da7", "#9c755f", "#86bcb6", "#d37295", "#8cd17d",
};
#define MR_NB_COLOURS (sizeof(mr_palette) / sizeof(mr_palette[0]))
#define MR_NO_GROUP "#d9d9d9"

static const char *mr_colour(int group)
{
	return group < 0 ? MR_NO_GROUP : mr_palette[(unsigned)group % MR_NB_COLOURS];
}

/* ---- reading files ---- */

static char *mr_read(const char *file, size_t *len)
{
	char *text = tj_read_file(file, len);
	if (!text)
		mr_bad(file, "cannot read: %s", strerror(errno));
	return text;
}

/* ---- snapshots ---- */

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
	int stamp;
	int top;                          /* the queue being drawn: the bubble its drawing starts at */
	int compact;                      /* many VPs: no nesting of outlines */
	unsigned cap_item, cap_vp;        /* thread chips (and bubbles) drawn per queue */
	unsigned vp_maxw;
};

/* Member key of array element i of what ("queue", "entity") as an integer in [lo, hi]. */
static long long mr_num(const struct mr_snap *s, const struct tj_node *obj, const char *what, unsigned i,
			const char *key, long long lo, long long hi)
{
	const struct tj_node *v = tj_get(obj, key);
	long long x;
	if (!v)
		mr_bad(s->file, "not a marcel snapshot: %s %u has no \"%s\"", what, i, key);
	if (v->type != TJ_NUMBER)
		mr_bad(s->file, "not a marcel snapshot: %s %u: \"%s\" is not a number", what, i, key);
	if (tj_int(v, lo, hi, &x))
		mr_bad(s->file, "not a marcel snapshot: %s %u: \"%s\" is %s, expected an integer from %lld to %lld", what,
		       i, key, v->str, lo, hi);
	return x;
}

static const char *mr_text(const struct mr_snap *s, const struct tj_node *obj, const char *what, unsigned i,
			   const char *key)
{
	const struct tj_node *v = tj_get(obj, key);
	if (!v || v->type != TJ_STRING)
		mr_bad(s->file, "not a marcel snapshot: %s %u: \"%s\" %s", what, i, key, v ? "is not a string" : "is missing");
	return v->str;
}

static const struct tj_node *mr_array(const struct mr_snap *s, const struct tj_node *obj, const char *key)
{
	const struct tj_node *v = tj_get(obj, key);
	if (!v || v->type != TJ_ARRAY) {
		if (tj_get(obj, "traceEvents"))
			mr_bad(s->file, "a trace, not a snapshot: draw it with '%s movie'", mr_prog);
		mr_bad(s->file, "not a marcel snapshot: %s \"%s\" array (a snapshot is what "
				"marcel_sched_snapshot_json or marcel-sim --snapshot writes)",
		       v ? "\"" : "no", key);
	}
	return v;
}

static void mr_snap_queues(struct mr_snap *s, const struct tj_node *qs)
{
	s->nq = qs->n;
	s->q = mr_alloc(s->nq * sizeof(*s->q));
	s->vp_queue = mr_alloc(s->nb_vps * sizeof(int));
	for (unsigned v = 0; v < s->nb_vps; v++)
		s->vp_queue[v] = -1;
	s->root_q = -1;
	for (unsigned i = 0; i < s->nq; i++) {
		const struct tj_node *o = &qs->items[i];
		struct mr_queue *q = &s->q[i];
		if (o->type != TJ_OBJECT)
			mr_bad(s->file, "not a marcel snapshot: queue %u is not an object", i);
		mr_num(s, o, "queue", i, "index", i, i);
		q->name = mr_text(s, o, "queue", i, "name");
		q->vp = (int)mr_num(s, o, "queue", i, "vp", -1, (long long)s->nb_vps - 1);
		q->parent = (int)mr_num(s, o, "queue", i, "parent", -1, (long long)s->nq - 1);
		q->running = (int)mr_num(s, o, "queue", i, "running", -1, (long long)s->ne - 1);
		q->hw = (int)mr_num(s, o, "queue", i, "hwprio_level", -1000, 1000);
		const struct tj_node *queued = tj_get(o, "queued");
		if (!queued || queued->type != TJ_ARRAY)
			mr_bad(s->file, "not a marcel snapshot: queue %u: \"queued\" is not an array", i);
		for (unsigned k = 0; k < queued->n; k++) {
			long long x;
			if (tj_int(&queued->items[k], 0, (long long)s->ne - 1, &x))
				mr_bad(s->file, "not a marcel snapshot: queue %u: \"queued\" holds %s, not an entity index",
				       i, queued->items[k].type == TJ_NUMBER ? queued->items[k].str : "a non-number");
		}
		if (q->vp >= 0) {
			if (s->vp_queue[q->vp] >= 0)
				mr_bad(s->file, "not a marcel snapshot: queues %d and %u are both VP %d's", s->vp_queue[q->vp],
				       i, q->vp);
			s->vp_queue[q->vp] = (int)i;
		}
		if (q->parent < 0) {
			if (s->root_q >= 0)
				mr_bad(s->file, "not a marcel snapshot: queues %d and %u both have no parent", s->root_q, i);
			s->root_q = (int)i;
		}
	}
	if (s->root_q < 0)
		mr_bad(s->file, "not a marcel snapshot: no queue without a parent (the machine's)");
	for (unsigned v = 0; v < s->nb_vps; v++)
		if (s->vp_queue[v] < 0)
			mr_bad(s->file, "not a marcel snapshot: \"vps\" is %u but VP %u has no queue", s->nb_vps, v);
	for (unsigned i = 0; i < s->nq; i++) {
		unsigned steps = 0;
		for (int x = (int)i; x >= 0 && steps <= s->nq; x = s->q[x].parent)
			steps++;
		if (steps > s->nq)
			mr_bad(s->file, "not a marcel snapshot: queue %u's parents loop", i);
		if (s->q[i].parent >= 0) {
			struct mr_queue *p = &s->q[s->q[i].parent];
			mr_add_int(&p->kids, &p->nb_kids, &p->cap_kids, (int)i);
		}
	}
}

static void mr_snap_entities(struct mr_snap *s, const struct tj_node *es)
{
	s->e = mr_alloc(s->ne * sizeof(*s->e));
	s->root_e = -1;
	for (unsigned i = 0; i < s->ne; i++) {
		const struct tj_node *o = &es->items[i];
		struct mr_ent *e = &s->e[i];
		if (o->type != TJ_OBJECT)
			mr_bad(s->file, "not a marcel snapshot: entity %u is not an object", i);
		mr_num(s, o, "entity", i, "index", i, i);
		const char *kind = mr_text(s, o, "entity", i, "kind");
		if (strcmp(kind, "thread") && strcmp(kind, "bubble"))
			mr_bad(s->file, "not a marcel snapshot: entity %u: \"kind\" is \"%.40s\", expected \"thread\" or "
					"\"bubble\"", i, kind);
		e->bubble = kind[0] == 'b';
		if (tj_u64(tj_get(o, "uid"), &e->uid))
			mr_bad(s->file, "not a marcel snapshot: entity %u: \"uid\" is not an unsigned integer", i);
		e->name = mr_text(s, o, "entity", i, "name");
		e->implicit = (int)mr_num(s, o, "entity", i, "implicit", 0, 1);
		e->state = (int)mr_num(s, o, "entity", i, "state", -1000, 1000);
		e->parent = (int)mr_num(s, o, "entity", i, "parent", -1, (long long)s->ne - 1);
		e->queue = (int)mr_num(s, o, "entity", i, "queue", -1, (long long)s->nq - 1);
		e->held_by = (int)mr_num(s, o, "entity", i, "held_by", -1, (long long)s->ne - 1);
		e->running_vp = (int)mr_num(s, o, "entity", i, "running_vp", -1, (long long)s->nb_vps - 1);
		e->group = -1;
		if (e->parent < 0) {
			if (s->root_e >= 0)
				mr_bad(s->file, "not a marcel snapshot: entities %d and %u both have no parent", s->root_e, i);
			s->root_e = (int)i;
		}
	}
	if (s->root_e < 0 || !s->e[s->root_e].bubble)
		mr_bad(s->file, "not a marcel snapshot: no root bubble (an entity of kind \"bubble\" without a parent)");
	for (unsigned i = 0; i < s->ne; i++) {
		struct mr_ent *e = &s->e[i];
		if (e->parent >= 0 && !s->e[e->parent].bubble)
			mr_bad(s->file, "not a marcel snapshot: entity %u's parent %d is a thread", i, e->parent);
		unsigned steps = 0;
		for (int x = (int)i; x >= 0 && steps <= s->ne; x = s->e[x].parent)
			steps++;
		if (steps > s->ne)
			mr_bad(s->file, "not a marcel snapshot: entity %u's parents loop", i);
		if (e->parent >= 0) {
			struct mr_ent *p = &s->e[e->parent];
			mr_add_int(&p->kids, &p->nb_kids, &p->cap_kids, (int)i);
		}
	}
	for (unsigned i = 0; i < s->nq; i++)
		if (s->q[i].running >= 0 && s->e[s->q[i].running].bubble)
			mr_bad(s->file, "not a marcel snapshot: queue %u runs entity %d, a bubble", i, s->q[i].running);
}

/* Where each entity is drawn: threads on their queue (the VP's when running: marcel sets
 * it so), or in the unplaced box; bubbles on their own queue, besides around members. */
static void mr_snap_place(struct mr_snap *s)
{
	for (unsigned i = 0; i < s->ne; i++) {
		struct mr_ent *e = &s->e[i];
		int qi = e->queue;
		if (!e->bubble && e->running_vp >= 0)
			qi = s->vp_queue[e->running_vp];
		struct mr_queue *q = qi >= 0 ? &s->q[qi] : &s->unplaced;
		if (!e->bubble) {
			s->nb_threads++;
			mr_add_int(&q->threads, &q->nb_threads, &q->cap_threads, (int)i);
		} else if (qi >= 0 && (int)i != s->root_e) {
			mr_add_int(&q->bubbles, &q->nb_bubbles, &q->cap_bubbles, (int)i);
		}
	}
}

/* An explicit bubble: not the root, not an implicit children bubble. */
static int mr_explicit(const struct mr_snap *s, int b)
{
	return b >= 0 && b != s->root_e && !s->e[b].implicit;
}

static int mr_uid_cmp(const void *a, const void *b, void *arg)
{
	const struct mr_snap *s = arg;
	uint64_t x = s->e[*(const int *)a].uid & ~MR_TAG, y = s->e[*(const int *)b].uid & ~MR_TAG;
	return x < y ? -1 : x > y;
}

/* Colours: a thread takes its outermost explicit bubble's, passing over bubbles that hold
 * every thread in explicit bubbles (one colour for all tells nothing apart), or the
 * innermost one when all do. Groups are numbered by bubble uid, which is creation order
 * in marcel and in marcel-sim. */
static void mr_snap_groups(struct mr_snap *s)
{
	long in_bubbles = 0;
	for (unsigned i = 0; i < s->ne; i++) {
		if (s->e[i].bubble)
			continue;
		int any = 0;
		for (int b = s->e[i].parent; b >= 0; b = s->e[b].parent)
			if (mr_explicit(s, b)) {
				s->e[b].nb_threads++;
				any = 1;
			}
		in_bubbles += any;
	}
	int *bubble_group = mr_alloc(s->ne * sizeof(int));
	for (unsigned i = 0; i < s->ne; i++) {
		if (s->e[i].bubble)
			continue;
		int pick = -1, innermost = -1;
		for (int b = s->e[i].parent; b >= 0; b = s->e[b].parent)
			if (mr_explicit(s, b)) {
				if (innermost < 0)
					innermost = b;
				if (s->e[b].nb_threads < in_bubbles)
					pick = b;
			}
		if (pick < 0)
			pick = innermost;
		if (pick < 0) {
			s->ungrouped++;
			continue;
		}
		if (!bubble_group[pick]) {
			mr_add_int(&s->groups, &s->nb_groups, &s->cap_groups, pick);
			bubble_group[pick] = 1;
		}
		s->e[i].group = pick; /* a bubble index for now */
	}
	if (s->nb_groups)
		qsort_r(s->groups, s->nb_groups, sizeof(int), mr_uid_cmp, s);
	for (unsigned g = 0; g < s->nb_groups; g++)
		bubble_group[s->groups[g]] = (int)g;
	for (unsigned i = 0; i < s->ne; i++)
		if (!s->e[i].bubble && s->e[i].group >= 0)
			s->e[i].group = bubble_group[s->e[i].group];
	/* A bubble's outline: the colour of its first thread (in pre-order). */
	int *coloured = bubble_group;
	memset(coloured, 0, s->ne * sizeof(int));
	for (unsigned i = 0; i < s->ne; i++)
		if (!s->e[i].bubble)
			for (int b = s->e[i].parent; b >= 0 && !coloured[b]; b = s->e[b].parent) {
				coloured[b] = 1;
				s->e[b].group = s->e[i].group;
			}
	free(bubble_group);
}

static void mr_snap_load(struct mr_snap *s, const char *file)
{
	memset(s, 0, sizeof(*s));
	s->file = file;
	size_t len;
	char *text = mr_read(file, &len);
	struct tj_parser ps;
	if (tj_parse_doc(&ps, text, len, &s->doc))
		mr_bad(file, "not valid JSON: %s", ps.err);
	free(text);
	if (s->doc.type != TJ_OBJECT)
		mr_bad(file, "not a marcel snapshot: the document is not an object");
	const struct tj_node *qs = mr_array(s, &s->doc, "queues"), *es = mr_array(s, &s->doc, "entities");
	const struct tj_node *st = tj_get(&s->doc, "strategy");
	if (!st || st->type != TJ_STRING)
		mr_bad(file, "not a marcel snapshot: \"strategy\" %s", st ? "is not a string" : "is missing");
	s->strategy = st->str;
	long long vps;
	if (tj_int(tj_get(&s->doc, "vps"), 1, 1 << 20, &vps))
		mr_bad(file, "not a marcel snapshot: \"vps\" is not a number of VPs (1 or more)");
	s->nb_vps = (unsigned)vps;
	s->ne = es->n;
	mr_snap_queues(s, qs);
	mr_snap_entities(s, es);
	mr_snap_place(s);
	mr_snap_groups(s);
}

/* ---- the SVG: measured, then drawn, by the same functions ----
 *
 * Each function below lays out one thing at (x, y) and returns its size; with f NULL it
 * only measures. A box is measured before it is drawn (its outline comes first), so a
 * subtree at depth d is laid out about 2d times: cheap, and one code path for both.
 *
 * Beyond MR_COMPACT_VPS VPs the boxes are compact: a queue shows its own bubbles as
 * labelled outlines and its threads as chips, without the nesting of outlines. */

#define MR_FONT_W 6                     /* width of a 10px monospace character, rounded */
#define MR_TITLE_W 7                    /* the same, 11px bold (queue names) */
#define MR_PAD 4
#define MR_GAP 4
#define MR_CHIP_H 16
#define MR_LABEL_H 12
#define MR_TITLE_H 16
#define MR_ITEM_MINW 150
#define MR_MAX_LABEL 28                 /* characters of a bubble's name in its outline */
#define MR_MAX_PATH 8                   /* bubbles named in an outline's tooltip */
#define MR_COMPACT_VPS 64
#define MR_CAP_ITEM 32                  /* threads, and bubbles, drawn per queue */
#define MR_CAP_VP 8                     /* threads drawn per VP queue */
#define MR_CAP_ITEM_COMPACT 8
#define MR_CAP_VP_COMPACT 3

struct mr_size {
	int w, h;
};

static int mr_max(int a, int b)
{
	return a > b ? a : b;
}

static void mr_uid_text(char *buf, size_t n, uint64_t uid)
{
	snprintf(buf, n, "%llu", (unsigned long long)(uid & ~MR_TAG));
}

/* Black or white text, whichever reads better on colour c ("#rrggbb"). */
static const char *mr_ink(const char *c)
{
	unsigned r, g, b;
	if (sscanf(c, "#%2x%2x%2x", &r, &g, &b) != 3)
		return "#000";
	return 299 * r + 587 * g + 114 * b > 140000 ? "#000" : "#fff";
}

static const char *const mr_thread_states[] = { "born", "ready", "running", "blocked", "other" };

static struct mr_size mr_chip(const struct mr_snap *s, int t, FILE *f, int x, int y)
{
	const struct mr_ent *e = &s->e[t];
	char label[24];
	mr_uid_text(label, sizeof(label), e->uid);
	struct mr_size z = { 8 + MR_FONT_W * (int)strlen(label), MR_CHIP_H };
	if (!f)
		return z;
	const char *fill = mr_colour(e->group);
	int running = e->running_vp >= 0;
	/* Blocked and not yet started threads are faded: they are where they will run. */
	int waiting = e->state == 0 || e->state == 3;
	fprintf(f, "<g class=\"thread%s\" data-entity=\"%d\" data-uid=\"%s\" transform=\"translate(%d,%d)\"><title>",
		running ? " running" : waiting ? " waiting" : "", t, label, x, y);
	fprintf(f, "thread %s \"", label);
	mr_xml(f, e->name);
	fprintf(f, "\", %s", e->state >= 0 && e->state <= 4 ? mr_thread_states[e->state] : "?");
	if (running)
		fprintf(f, " on VP%d", e->running_vp);
	if (e->held_by >= 0) {
		fputs(", served by its closed bubble ", f);
		mr_xml(f, s->e[e->held_by].name);
	}
	if (e->group >= 0) {
		fputs(", colour of ", f);
		mr_xml(f, s->e[s->groups[e->group]].name);
	}
	fprintf(f, "</title><rect width=\"%d\" height=\"%d\" rx=\"3\" fill=\"%s\"%s/>"
		   "<text x=\"4\" y=\"12\" fill=\"%s\">%s</text></g>\n",
		z.w, z.h, fill, running ? " class=\"run\"" : "", mr_ink(fill), label);
	return z;
}

static void mr_bubble_label(const struct mr_snap *s, int b, char *buf, size_t n)
{
	const struct mr_ent *e = &s->e[b];
	static const char *const st[] = { "closed", "burst", "closing" };
	const char *state = e->state >= 0 && e->state <= 2 ? st[e->state] : "?";
	if (mr_chars(e->name) > MR_MAX_LABEL)
		snprintf(buf, n, "%.*s… %s", mr_prefix(e->name, MR_MAX_LABEL - 1), e->name, state);
	else
		snprintf(buf, n, "%s %s", e->name, state);
}

/* "root > bubble 1 > bubble 6": where bubble b sits (its last MR_MAX_PATH levels). */
static void mr_path(FILE *f, const struct mr_snap *s, int b)
{
	int chain[MR_MAX_PATH], n = 0, more = 0;
	for (int x = b; x >= 0; x = s->e[x].parent) {
		if (n == MR_MAX_PATH) {
			more = 1;
			break;
		}
		chain[n++] = x;
	}
	if (more)
		fputs("… &gt; ", f);
	while (n--) {
		mr_xml(f, s->e[chain[n]].name);
		if (n)
			fputs(" &gt; ", f);
	}
}

/* Opens a bubble's outline (w x h at x, y), with its label and its place in the tree as
 * tooltip: solid in its colour when explicit (thick when closed, dashed when closing),
 * dotted grey for an implicit children bubble. The caller closes the <g>. */
static void mr_outline(FILE *f, const struct mr_snap *s, int b, int x, int y, int w, int h, const char *label)
{
	const struct mr_ent *e = &s->e[b];
	const char *stroke = e->implicit ? "#888" : e->group >= 0 ? mr_colour(e->group) : "#555";
	char uid[24];
	mr_uid_text(uid, sizeof(uid), e->uid);
	fprintf(f, "<g class=\"bubble%s\" data-entity=\"%d\" data-uid=\"%s\" transform=\"translate(%d,%d)\">"
		   "<rect class=\"outline%s\" width=\"%d\" height=\"%d\" rx=\"6\" stroke=\"%s\"/>"
		   "<text class=\"blabel\" x=\"%d\" y=\"10\">",
		e->implicit ? " implicit" : "", b, uid, x, y,
		e->implicit ? " dotted" : e->state == 0 ? " closed" : e->state == 2 ? " closing" : "", w, h, stroke,
		MR_PAD);
	mr_xml(f, label);
	fputs("</text><title>", f);
	mr_path(f, s, b);
	fputs("</title>\n", f);
}

static struct mr_size mr_group(struct mr_snap *s, int b, int maxw, FILE *f, int x, int y);

/* The drawn members of bubble b, flowed left to right in rows no wider than maxw. */
static struct mr_size mr_members(struct mr_snap *s, int b, int maxw, FILE *f, int x, int y)
{
	int cx = 0, cy = 0, rowh = 0, w = 0;
	const struct mr_ent *e = &s->e[b];
	for (unsigned k = 0; k < e->nb_kids; k++) {
		int m = e->kids[k];
		if (s->e[m].shown != s->stamp)
			continue;
		struct mr_size z = s->e[m].bubble ? mr_group(s, m, maxw, NULL, 0, 0) : mr_chip(s, m, NULL, 0, 0);
		if (cx > 0 && cx + z.w > maxw) {
			cy += rowh + MR_GAP;
			cx = rowh = 0;
		}
		if (f) {
			if (s->e[m].bubble)
				mr_group(s, m, maxw, f, x + cx, y + cy);
			else
				mr_chip(s, m, f, x + cx, y + cy);
		}
		cx += z.w + MR_GAP;
		rowh = mr_max(rowh, z.h);
		w = mr_max(w, cx - MR_GAP);
	}
	return (struct mr_size){ w, cy + rowh };
}

/* A bubble's outline around its drawn members. */
static struct mr_size mr_group(struct mr_snap *s, int b, int maxw, FILE *f, int x, int y)
{
	char label[128];
	mr_bubble_label(s, b, label, sizeof(label));
	struct mr_size in = mr_members(s, b, maxw - 2 * MR_PAD, NULL, 0, 0);
	struct mr_size z = { mr_max(in.w, MR_FONT_W * mr_chars(label)) + 2 * MR_PAD,
			     MR_LABEL_H + in.h + MR_PAD + (in.h ? MR_PAD : 0) };
	if (f) {
		mr_outline(f, s, b, x, y, z.w, z.h, label);
		mr_members(s, b, maxw - 2 * MR_PAD, f, MR_PAD, MR_LABEL_H + MR_PAD);
		fputs("</g>\n", f);
	}
	return z;
}

/* A bubble as a labelled outline alone (compact boxes). */
static struct mr_size mr_pill(const struct mr_snap *s, int b, FILE *f, int x, int y)
{
	char label[128];
	mr_bubble_label(s, b, label, sizeof(label));
	struct mr_size z = { MR_FONT_W * mr_chars(label) + 2 * MR_PAD, MR_LABEL_H + MR_PAD };
	if (f) {
		mr_outline(f, s, b, x, y, z.w, z.h, label);
		fputs("</g>\n", f);
	}
	return z;
}

/* What a queue draws, and what it leaves out. */
struct mr_drawn {
	unsigned threads, bubbles;        /* drawn: the first ones of the queue's lists */
	unsigned more_threads, more_bubbles;
};

/* Marks what queue q draws with a fresh stamp: its first threads and bubbles (up to the
 * caps) and their ancestors below the root. The outlines of the bubbles that hold
 * everything drawn there but the innermost would repeat the same nesting in every box
 * (a VP's box would show the whole chain down from the machine's bubble): the drawing
 * starts at that innermost one (s->top, -1 for the root), and each outline's tooltip
 * gives its chain. */
static struct mr_drawn mr_mark(struct mr_snap *s, const struct mr_queue *q, unsigned cap)
{
	unsigned bcap = s->cap_item;
	struct mr_drawn d = { q->nb_threads < cap ? q->nb_threads : cap, q->nb_bubbles < bcap ? q->nb_bubbles : bcap, 0, 0 };
	d.more_threads = q->nb_threads - d.threads;
	d.more_bubbles = q->nb_bubbles - d.bubbles;
	unsigned items = d.threads + d.bubbles;
	s->stamp++;
	for (unsigned i = 0; i < items; i++) {
		int x = i < d.threads ? q->threads[i] : q->bubbles[i - d.threads];
		s->e[x].shown = s->stamp;
		for (int b = s->e[x].bubble ? x : s->e[x].parent; b >= 0 && b != s->root_e; b = s->e[b].parent) {
			struct mr_ent *e = &s->e[b];
			e->shown = s->stamp;
			if (e->counted != s->stamp) {
				e->counted = s->stamp;
				e->count = 0;
			}
			e->count++;
		}
	}
	s->top = -1;
	if (items) {
		int x = d.threads ? q->threads[0] : q->bubbles[0];
		for (int b = s->e[x].bubble ? x : s->e[x].parent; b >= 0 && b != s->root_e && s->top < 0; b = s->e[b].parent)
			if (s->e[b].count == items)
				s->top = b;
	}
	return d;
}

/* Flows the compact form: q's first bubbles as outlines, then its first threads. */
static struct mr_size mr_flat(struct mr_snap *s, const struct mr_queue *q, struct mr_drawn d, int maxw, FILE *f, int x,
			      int y)
{
	int cx = 0, cy = 0, rowh = 0, w = 0;
	for (unsigned i = 0; i < d.bubbles + d.threads; i++) {
		int b = i < d.bubbles;
		int e = b ? q->bubbles[i] : q->threads[i - d.bubbles];
		struct mr_size z = b ? mr_pill(s, e, NULL, 0, 0) : mr_chip(s, e, NULL, 0, 0);
		if (cx > 0 && cx + z.w > maxw) {
			cy += rowh + MR_GAP;
			cx = rowh = 0;
		}
		if (f && b)
			mr_pill(s, e, f, x + cx, y + cy);
		else if (f)
			mr_chip(s, e, f, x + cx, y + cy);
		cx += z.w + MR_GAP;
		rowh = mr_max(rowh, z.h);
		w = mr_max(w, cx - MR_GAP);
	}
	return (struct mr_size){ w, cy + rowh };
}

/* What a queue holds: outlines and chips, then "+N more" for what was not drawn. */
static struct mr_size mr_content(struct mr_snap *s, const struct mr_queue *q, unsigned cap, int maxw, FILE *f,
				 int x, int y)
{
	struct mr_drawn d = mr_mark(s, q, cap);
	struct mr_size z;
	if (s->compact)
		z = mr_flat(s, q, d, maxw, f, x, y);
	else if (s->top >= 0)
		z = mr_group(s, s->top, maxw, f, x, y);
	else
		z = mr_members(s, s->root_e, maxw, f, x, y);
	if (d.more_threads || d.more_bubbles) {
		char t[96];
		if (d.more_threads && d.more_bubbles)
			snprintf(t, sizeof(t), "+%u threads, +%u bubbles", d.more_threads, d.more_bubbles);
		else if (d.more_threads)
			snprintf(t, sizeof(t), "+%u thread%s", d.more_threads, d.more_threads > 1 ? "s" : "");
		else
			snprintf(t, sizeof(t), "+%u bubble%s", d.more_bubbles, d.more_bubbles > 1 ? "s" : "");
		if (f)
			fprintf(f, "<text class=\"more\" data-threads=\"%u\" data-bubbles=\"%u\" x=\"%d\" y=\"%d\">%s</text>\n",
				d.more_threads, d.more_bubbles, x, y + z.h + (z.h ? MR_GAP : 0) + 10, t);
		z.w = mr_max(z.w, MR_FONT_W * (int)strlen(t));
		z.h += MR_LABEL_H + (z.h ? MR_GAP : 0);
	}
	return z;
}

/* Columns for n cells of cw x ch: about as wide as 1.6 times high, preferring a divisor
 * of n (no ragged last row) when one is near. */
static int mr_columns(unsigned n, int cw, int ch)
{
	if (n <= 1)
		return 1;
	double target = sqrt(1.6 * n * ch / (double)cw), best = 1e9;
	int cols = 1;
	for (unsigned c = 1; c <= n; c++) {
		double cost = fabs(log(c / target)) + (n % c ? 0.4 : 0);
		if (cost < best - 1e-12) {
			best = cost;
			cols = (int)c;
		}
	}
	return cols;
}

static struct mr_size mr_queue(struct mr_snap *s, int qi, FILE *f, int x, int y, struct mr_size cell);

/* A queue's children in a grid of equal cells (each drawn at the cell's size). */
static struct mr_size mr_kids(struct mr_snap *s, const struct mr_queue *q, FILE *f, int x, int y)
{
	if (!q->nb_kids)
		return (struct mr_size){ 0, 0 };
	struct mr_size cell = { 0, 0 };
	for (unsigned k = 0; k < q->nb_kids; k++) {
		struct mr_size z = mr_queue(s, q->kids[k], NULL, 0, 0, (struct mr_size){ 0, 0 });
		cell.w = mr_max(cell.w, z.w);
		cell.h = mr_max(cell.h, z.h);
	}
	int cols = mr_columns(q->nb_kids, cell.w, cell.h);
	int rows = ((int)q->nb_kids + cols - 1) / cols;
	if (f)
		for (unsigned k = 0; k < q->nb_kids; k++)
			mr_queue(s, q->kids[k], f, x + (int)(k % (unsigned)cols) * (cell.w + MR_GAP),
				 y + (int)(k / (unsigned)cols) * (cell.h + MR_GAP), cell);
	return (struct mr_size){ cols * cell.w + (cols - 1) * MR_GAP, rows * cell.h + (rows - 1) * MR_GAP };
}

/* The VP's hardware-priority level as a badge; returns its width. */
static int mr_hw_badge(FILE *f, int level, int x, int y)
{
	char t[32];
	snprintf(t, sizeof(t), level ? "hw %+d" : "hw %d", level);
	int w = MR_FONT_W * (int)strlen(t) + 6;
	if (f)
		fprintf(f, "<g class=\"hwprio\" data-level=\"%d\" transform=\"translate(%d,%d)\"><rect width=\"%d\" height=\"13\" "
			   "rx=\"2\" fill=\"%s\"/><text x=\"3\" y=\"10\">%s</text></g>\n",
			level, x, y, w, level > 0 ? "#f4a6a6" : level < 0 ? "#a6c8f4" : "#eeeeee", t);
	return w;
}

/* A queue that holds nothing and has one child is drawn as that child, titled with both
 * names ("Core5 / VP5"; compact boxes show the last one, and the others in a tooltip): a
 * level of boxes less, nothing lost. Returns the queue drawn. */
static int mr_merge(const struct mr_snap *s, int qi, char *chain, size_t n)
{
	size_t len = 0;
	chain[0] = 0;
	for (;;) {
		const struct mr_queue *q = &s->q[qi];
		int merge = q->nb_kids == 1 && !q->nb_threads && !q->nb_bubbles;
		if (len < n)
			len += (size_t)snprintf(chain + len, n - len, "%s%s", q->name, merge ? " / " : "");
		if (!merge)
			return qi;
		qi = q->kids[0];
	}
}

/* One queue's box: its name (and a VP's hwprio level), what it holds, its children. */
static struct mr_size mr_queue(struct mr_snap *s, int qi, FILE *f, int x, int y, struct mr_size cell)
{
	char chain[256];
	qi = mr_merge(s, qi, chain, sizeof(chain));
	const struct mr_queue *q = &s->q[qi];
	const char *title = s->compact ? q->name : chain;
	int vp = q->vp >= 0;
	int titlew = MR_TITLE_W * mr_chars(title) + (vp ? MR_GAP + mr_hw_badge(NULL, q->hw, 0, 0) : 0);
	struct mr_size kids = mr_kids(s, q, NULL, 0, 0);
	int maxw = vp ? (int)s->vp_maxw : mr_max(kids.w, MR_ITEM_MINW);
	unsigned cap = vp ? s->cap_vp : s->cap_item;
	struct mr_size in = mr_content(s, q, cap, maxw, NULL, 0, 0);
	struct mr_size z = { mr_max(mr_max(titlew, in.w), kids.w) + 2 * MR_PAD,
			     MR_TITLE_H + in.h + (in.h ? MR_GAP : 0) + kids.h + (kids.h ? MR_GAP : 0) + MR_PAD };
	z.w = mr_max(z.w, cell.w);
	z.h = mr_max(z.h, cell.h);
	if (!f)
		return z;
	if (vp)
		fprintf(f, "<g class=\"queue vp\" data-queue=\"%d\" data-vp=\"%d\" transform=\"translate(%d,%d)\">", qi, q->vp,
			x, y);
	else
		fprintf(f, "<g class=\"queue\" data-queue=\"%d\" transform=\"translate(%d,%d)\">", qi, x, y);
	fprintf(f, "<rect class=\"%s\" width=\"%d\" height=\"%d\"/><text class=\"qname\" x=\"%d\" y=\"12\">",
		vp ? "vpbox" : "qbox", z.w, z.h, MR_PAD);
	mr_xml(f, title);
	if (title != chain) {
		fputs("<title>", f);
		mr_xml(f, chain);
		fputs("</title>", f);
	}
	fputs("</text>\n", f);
	if (vp)
		mr_hw_badge(f, q->hw, MR_PAD + MR_TITLE_W * mr_chars(title) + MR_GAP, 2);
	mr_content(s, q, cap, maxw, f, MR_PAD, MR_TITLE_H);
	mr_kids(s, q, f, MR_PAD, MR_TITLE_H + in.h + (in.h ? MR_GAP : 0));
	fputs("</g>\n", f);
	return z;
}

/* The box of threads on no queue (blocked, not started, ending). */
static struct mr_size mr_unplaced(struct mr_snap *s, int maxw, FILE *f, int x, int y)
{
	static const char title[] = "on no queue: blocked, not started or ending";
	struct mr_size in = mr_content(s, &s->unplaced, s->cap_item, maxw, NULL, 0, 0);
	struct mr_size z = { mr_max(MR_TITLE_W * (int)strlen(title), in.w) + 2 * MR_PAD, MR_TITLE_H + in.h + MR_PAD };
	if (f) {
		fprintf(f, "<g class=\"queue unplaced\" transform=\"translate(%d,%d)\"><rect class=\"qbox\" width=\"%d\" "
			   "height=\"%d\"/><text class=\"qname\" x=\"%d\" y=\"12\">%s</text>\n",
			x, y, z.w, z.h, MR_PAD, title);
		mr_content(s, &s->unplaced, s->cap_item, maxw, f, MR_PAD, MR_TITLE_H);
		fputs("</g>\n", f);
	}
	return z;
}

#define MR_LEGEND_GROUPS 24

/* One legend entry: a swatch (fill, or an outline style) and its text. */
static struct mr_size mr_key(FILE *f, int x, int y, const char *swatch, const char *text)
{
	struct mr_size z = { 22 + MR_FONT_W * mr_chars(text), 14 };
	if (f) {
		fprintf(f, "<g class=\"key\" transform=\"translate(%d,%d)\">%s<text x=\"20\" y=\"11\">", x, y, swatch);
		mr_xml(f, text);
		fputs("</text></g>\n", f);
	}
	return z;
}

/* Legend entry i (of the groups, then the keys); 0 if there is none such. */
static int mr_legend_entry(const struct mr_snap *s, unsigned i, char *text, size_t tn, char *sw, size_t sn)
{
	unsigned n = s->nb_groups < MR_LEGEND_GROUPS ? s->nb_groups : MR_LEGEND_GROUPS;
	sw[0] = 0;
	if (i < n) {
		const struct mr_ent *b = &s->e[s->groups[i]];
		snprintf(text, tn, "%.*s (#%llu, %ld thread%s)", mr_prefix(b->name, 60), b->name,
			 (unsigned long long)(b->uid & ~MR_TAG), b->nb_threads,
			 b->nb_threads > 1 ? "s" : "");
		snprintf(sw, sn, "<rect class=\"swatch\" data-group=\"%u\" width=\"16\" height=\"12\" fill=\"%s\"/>", i,
			 mr_colour((int)i));
		return 1;
	}
	switch (i - n) {
	case 0:
		snprintf(text, tn, "and %u more bubbles (colours repeat every %zu)", s->nb_groups - n, MR_NB_COLOURS);
		return s->nb_groups > n;
	case 1:
		snprintf(text, tn, "in no bubble that tells threads apart (%ld)", s->ungrouped);
		snprintf(sw, sn, "<rect width=\"16\" height=\"12\" fill=\"%s\"/>", MR_NO_GROUP);
		return s->ungrouped > 0;
	case 2:
		snprintf(text, tn, "running (label: thread id)");
		snprintf(sw, sn, "<rect class=\"run\" width=\"16\" height=\"12\" fill=\"#fff\"/>");
		return 1;
	case 3:
		snprintf(text, tn, "bubble: thick closed, thin burst, dashed closing");
		snprintf(sw, sn, "<rect class=\"outline closed\" width=\"16\" height=\"12\" stroke=\"#555\"/>");
		return 1;
	case 4:
		snprintf(text, tn, "implicit children bubble");
		snprintf(sw, sn, "<rect class=\"outline dotted\" width=\"16\" height=\"12\" stroke=\"#888\"/>");
		return 1;
	case 5:
		snprintf(text, tn, "the VP's hwprio level");
		snprintf(sw, sn, "<rect width=\"16\" height=\"12\" fill=\"#f4a6a6\"/>");
		return 1;
	case 6:
		snprintf(text, tn, "faded: blocked or not started (where it will run)");
		snprintf(sw, sn, "<rect class=\"waiting\" width=\"16\" height=\"12\" fill=\"%s\"/>", mr_palette[0]);
		return 1;
	default:
		return 0;
	}
}

/* The legend, flowed in rows no wider than maxw. */
static struct mr_size mr_legend(const struct mr_snap *s, int maxw, FILE *f, int x, int y)
{
	char text[160], sw[256];
	int cx = 0, cy = 0, w = 0;
	unsigned n = s->nb_groups < MR_LEGEND_GROUPS ? s->nb_groups : MR_LEGEND_GROUPS;
	for (unsigned i = 0; i < n + 7; i++) {
		if (!mr_legend_entry(s, i, text, sizeof(text), sw, sizeof(sw)))
			continue;
		struct mr_size z = mr_key(NULL, 0, 0, sw, text);
		if (cx > 0 && cx + z.w > maxw) {
			cy += 18;
			cx = 0;
		}
		mr_key(f, x + cx, y + cy, sw, text);
		cx += z.w + 14;
		w = mr_max(w, cx - 14);
	}
	return (struct mr_size){ w, cy + 14 };
}

static const char mr_svg_style[] =
	"text{font-family:monospace;font-size:10px;fill:#000}"
	".qname{font-size:11px;font-weight:bold}"
	".qbox{fill:#fafafa;stroke:#999}"
	".vpbox{fill:#fff;stroke:#666}"
	".outline{fill:none;stroke-width:1.2}"
	".outline.closed{stroke-width:2.5}"
	".outline.closing{stroke-dasharray:5 3}"
	".outline.dotted{stroke-dasharray:1 2}"
	".blabel{font-size:9px;fill:#333}"
	".run{stroke:#000;stroke-width:2}"
	".more{fill:#555;font-style:italic}"
	".waiting{opacity:.45}"
	".title{font-size:13px;font-weight:bold}";

static void mr_svg(struct mr_snap *s, FILE *f)
{
	s->compact = s->nb_vps > MR_COMPACT_VPS;
	s->cap_item = s->compact ? MR_CAP_ITEM_COMPACT : MR_CAP_ITEM;
	s->cap_vp = s->compact ? MR_CAP_VP_COMPACT : MR_CAP_VP;
	s->vp_maxw = s->compact ? 76 : 132;
	struct mr_size tree = mr_queue(s, s->root_q, NULL, 0, 0, (struct mr_size){ 0, 0 });
	int width = mr_max(tree.w, 900);
	struct mr_size legend = mr_legend(s, width, NULL, 0, 0);
	struct mr_size un = s->unplaced.nb_threads ? mr_unplaced(s, width - 2 * MR_PAD, NULL, 0, 0) : (struct mr_size){ 0, 0 };
	int top = 44 + legend.h + 10;
	int W = width + 20, H = top + tree.h + (un.h ? 10 + un.h : 0) + 10;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n"
		   "<style>%s</style>\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n"
		   "<text class=\"title\" x=\"10\" y=\"18\">marcel snapshot: ",
		W, H, W, H, mr_svg_style);
	mr_xml(f, s->file);
	fputs("</text>\n<text class=\"subtitle\" x=\"10\" y=\"34\">strategy ", f);
	mr_xml(f, s->strategy[0] ? s->strategy : "(none)");
	fprintf(f, ", %u VPs, %u queues, %u threads, %u entities; at most %u threads and %u bubbles drawn per queue "
		   "(%u threads per VP)%s</text>\n",
		s->nb_vps, s->nq, s->nb_threads, s->ne, s->cap_item, s->cap_item, s->cap_vp,
		s->compact ? "; compact: bubbles without their nesting" : "");
	fprintf(f, "<g class=\"legend\">\n");
	mr_legend(s, width, f, 10, 44);
	fputs("</g>\n", f);
	mr_queue(s, s->root_q, f, 10, top, (struct mr_size){ 0, 0 });
	if (un.h)
		mr_unplaced(s, width - 2 * MR_PAD, f, 10, top + tree.h + 10);
	fputs("</svg>\n", f);
}

static void mr_snap_free(struct mr_snap *s)
{
	for (unsigned i = 0; i < s->nq; i++) {
		free(s->q[i].kids);
		free(s->q[i].threads);
		free(s->q[i].bubbles);
	}
	for (unsigned i = 0; i < s->ne; i++)
		free(s->e[i].kids);
	free(s->unplaced.threads);
	free(s->q);
	free(s->e);
	free(s->vp_queue);
	free(s->groups);
	tj_node_free(&s->doc);
}

static int mr_snapshot(const char *in, const char *out)
{
	struct mr_snap s;
	mr_snap_load(&s, in);
	struct mr_out o;
	mr_out_open(&o, out);
	mr_svg(&s, o.f);
	mr_snap_free(&s);
	return mr_out_close(&o);
}

/* ---- traces ---- */

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
	int group;
};

struct mr_bub {
	uint64_t uid;
	int64_t parent;                   /* the bubble it was last inserted into, -1 */
	int explicit_;                    /* woken, or threads were inserted into it */
	long nb_threads;
	int group;
};

/* Index by id (thread or bubble uid): open addressing, slots hold index + 1. Only looks
 * up: what is stored, and in which order, is decided by the callers. */
struct mr_map {
	uint64_t *keys;
	int *vals;
	unsigned cap, n;
};

static unsigned mr_hash(uint64_t k, unsigned cap)
{
	k ^= k >> 29;
	k *= UINT64_C(0x9e3779b97f4a7c15);
	return (unsigned)(k >> 32) & (cap - 1);
}

static int mr_map_get(const struct mr_map *h, uint64_t k)
{
	if (!h->cap)
		return -1;
	for (unsigned i = mr_hash(k, h->cap);; i = (i + 1) & (h->cap - 1)) {
		if (!h->vals[i])
			return -1;
		if (h->keys[i] == k)
			return h->vals[i] - 1;
	}
}

static void mr_map_put(struct mr_map *h, uint64_t k, int v)
{
	if (2 * (h->n + 1) > h->cap) {
		struct mr_map g = { mr_alloc((h->cap ? 2 * h->cap : 64) * sizeof(uint64_t)), NULL, h->cap ? 2 * h->cap : 64, 0 };
		g.vals = mr_alloc(g.cap * sizeof(int));
		for (unsigned i = 0; i < h->cap; i++)
			if (h->vals[i])
				mr_map_put(&g, h->keys[i], h->vals[i] - 1);
		free(h->keys);
		free(h->vals);
		*h = g;
	}
	unsigned i = mr_hash(k, h->cap);
	while (h->vals[i])
		i = (i + 1) & (h->cap - 1);
	h->keys[i] = k;
	h->vals[i] = v + 1;
	h->n++;
}

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

static const char *mr_arg(const struct tj_event *e, const char *key)
{
	for (unsigned i = 0; i < e->nb_args; i++)
		if (!strcmp(e->args[i].key, key))
			return e->args[i].val;
	return NULL;
}

/* An integer argument (the trace writes them as JSON numbers); 0 if absent or not one. */
static int mr_arg_int(const struct tj_event *e, const char *key, long long *v)
{
	const char *a = mr_arg(e, key);
	char *end;
	if (!a || !*a)
		return 0;
	errno = 0;
	*v = strtoll(a, &end, 10);
	return !*end && !errno;
}

static int mr_arg_u64(const struct tj_event *e, const char *key, uint64_t *v)
{
	const char *a = mr_arg(e, key);
	char *end;
	if (!a || !*a || *a == '-')
		return 0;
	errno = 0;
	*v = strtoull(a, &end, 10);
	return !*end && !errno;
}

static struct mr_track *mr_track(struct mr_movie *m, long long pid, long long tid)
{
	/* The key is exact for the pids and tids of both writers (under 2^32); others that
	 * collide cost a search. */
	uint64_t key = (uint64_t)pid << 32 ^ (uint64_t)tid;
	int i = mr_map_get(&m->track_of, key);
	if (i >= 0 && m->tracks[i].pid == pid && m->tracks[i].tid == tid)
		return &m->tracks[i];
	for (unsigned k = 0; i >= 0 && k < m->nb_tracks; k++)
		if (m->tracks[k].pid == pid && m->tracks[k].tid == tid)
			return &m->tracks[k];
	if (i < 0)
		mr_map_put(&m->track_of, key, (int)m->nb_tracks);
	m->tracks = mr_grow(m->tracks, &m->nb_tracks, &m->cap_tracks, sizeof(*m->tracks));
	struct mr_track *t = &m->tracks[m->nb_tracks - 1];
	t->pid = pid;
	t->tid = tid;
	t->vp = -1;
	t->open = -1;
	return t;
}

/* Threads and bubbles are kept in first-seen order, found by id. */
static int mr_thread(struct mr_movie *m, uint64_t uid)
{
	int i = mr_map_get(&m->thr_of, uid);
	if (i >= 0)
		return i;
	mr_map_put(&m->thr_of, uid, (int)m->nb_thr);
	m->thr = mr_grow(m->thr, &m->nb_thr, &m->cap_thr, sizeof(*m->thr));
	struct mr_thr *t = &m->thr[m->nb_thr - 1];
	t->uid = uid;
	t->bubble = -1;
	t->group = -1;
	return (int)(m->nb_thr - 1);
}

static int mr_bubble(struct mr_movie *m, uint64_t uid)
{
	int i = mr_map_get(&m->bub_of, uid);
	if (i >= 0)
		return i;
	mr_map_put(&m->bub_of, uid, (int)m->nb_bub);
	m->bub = mr_grow(m->bub, &m->nb_bub, &m->cap_bub, sizeof(*m->bub));
	struct mr_bub *b = &m->bub[m->nb_bub - 1];
	b->uid = uid;
	b->parent = -1;
	b->group = -1;
	return (int)(m->nb_bub - 1);
}

static void mr_set_name(struct mr_thr *t, const char *name, int replace)
{
	if (t->name && !replace)
		return;
	free(t->name);
	t->name = strdup(name);
	if (!t->name) {
		fprintf(stderr, "%s: out of memory\n", mr_prog);
		exit(1);
	}
}

static long long mr_ns(const struct mr_movie *m, double ts)
{
	return llround((ts - m->t0) * 1000.0);
}

/* Pass 1: track names (VPn), the time origin, and the summary's checks. */
static int mr_pass1(const struct tj_event *e, void *ctx)
{
	struct mr_movie *m = ctx;
	tj_sum_event(e, &m->sum);
	if (!strcmp(e->ph, "M") && e->has_pid) {
		const char *name = mr_arg(e, "name");
		if (!strcmp(e->name, "process_name") && name && !m->process[0])
			tj_copy(m->process, sizeof(m->process), name);
		if (!strcmp(e->name, "thread_name") && e->has_tid && name) {
			unsigned vp;
			int len = -1;
			if (sscanf(name, "VP%u%n", &vp, &len) == 1 && len == (int)strlen(name) && name[2] >= '0' &&
			    name[2] <= '9' && vp < (1u << 20)) {
				struct mr_track *t = mr_track(m, e->pid, e->tid);
				for (unsigned i = 0; i < m->nb_tracks; i++)
					if (m->tracks[i].vp == (int)vp && &m->tracks[i] != t)
						mr_bad(m->file, "not a marcel trace: two tracks are named %s", name);
				t->vp = (int)vp;
				if (vp + 1 > m->nb_vps)
					m->nb_vps = vp + 1;
			}
		}
	} else if (e->has_ts && (!m->has_ts || e->ts < m->t0)) {
		m->t0 = e->ts;
		m->has_ts = 1;
	}
	return 0;
}

static void mr_add_slice(struct mr_movie *m, struct mr_track *t, long long end)
{
	m->slices = mr_grow(m->slices, &m->nb_slices, &m->cap_slices, sizeof(*m->slices));
	struct mr_slice *s = &m->slices[m->nb_slices - 1];
	*s = (struct mr_slice){ t->open_ts, end, t->vp, t->open, 1, m->nb_slices };
	t->open = -1;
}

static void mr_end_idle(struct mr_movie *m, struct mr_track *t, long long end)
{
	m->idle = mr_grow(m->idle, &m->nb_idle, &m->cap_idle, sizeof(*m->idle));
	struct mr_slice *s = &m->idle[m->nb_idle - 1];
	*s = (struct mr_slice){ t->idle_ts, end, t->vp, -1, 1, m->nb_idle };
	t->idle = 0;
}

/* One line of the page's event log. */
static void mr_log(struct mr_movie *m, long long ts, int vp, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void mr_log(struct mr_movie *m, long long ts, int vp, const char *fmt, ...)
{
	m->ev_total++;
	if (m->nb_ev >= MR_MAX_EVENTS)
		return;
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	m->ev = mr_grow(m->ev, &m->nb_ev, &m->cap_ev, sizeof(*m->ev));
	struct mr_point *p = &m->ev[m->nb_ev - 1];
	p->ts = ts;
	p->vp = vp;
	p->seq = m->nb_ev;
	p->text = strdup(buf);
	if (!p->text) {
		fprintf(stderr, "%s: out of memory\n", mr_prog);
		exit(1);
	}
}

/* "thread N" / "bubble N", the trace's names for entities. */
static int mr_entity(const char *s, int *bubble, uint64_t *id)
{
	char *end;
	if (!s)
		return 0;
	if (!strncmp(s, "thread ", 7))
		*bubble = 0;
	else if (!strncmp(s, "bubble ", 7))
		*bubble = 1;
	else
		return 0;
	if (s[7] < '0' || s[7] > '9')
		return 0;
	errno = 0;
	*id = strtoull(s + 7, &end, 10);
	return !*end && !errno;
}

static void mr_membership(struct mr_movie *m, const struct tj_event *e, long long ts, int vp)
{
	uint64_t b, id;
	int is_bubble;
	if (!mr_arg_u64(e, "bubble", &b) || !mr_entity(mr_arg(e, "entity"), &is_bubble, &id))
		mr_bad(m->file, "not a marcel trace: a \"%s\" event at %.3f us without \"bubble\" and \"entity\"", e->name,
		       e->ts);
	int bi = mr_bubble(m, b);
	int inserted = !strcmp(e->name, "bubble insert");
	if (is_bubble) {
		int x = mr_bubble(m, id);
		if (inserted)
			m->bub[x].parent = bi;
	} else {
		int x = mr_thread(m, id);
		if (inserted) {
			m->thr[x].bubble = bi;
			m->bub[bi].explicit_ = 1;
		}
	}
	mr_log(m, ts, vp, "%s%llu %s bubble #%llu", is_bubble ? "bubble #" : "thread ", (unsigned long long)id,
	       inserted ? "into" : "out of", (unsigned long long)b);
}

/* Bubble events, moves and steals, as log lines ("bubble 3 burst on NUMANode1"). */
static void mr_other(struct mr_movie *m, const struct tj_event *e, long long ts, int vp)
{
	const char *bub = mr_arg(e, "bubble"), *ent = mr_arg(e, "entity"), *queue = mr_arg(e, "queue");
	const char *from = mr_arg(e, "from");
	uint64_t id;
	char who[48];
	int is_bubble;
	/* Bubbles are "#id" throughout the page, as in snapshots: their ids are not threads'. */
	if (ent && mr_entity(ent, &is_bubble, &id)) {
		snprintf(who, sizeof(who), "%s%llu", is_bubble ? "bubble #" : "thread ", (unsigned long long)id);
		ent = who;
	}
	if (!strcmp(e->name, "bubble wake") && mr_arg_u64(e, "bubble", &id))
		m->bub[mr_bubble(m, id)].explicit_ = 1;
	if (bub && !strncmp(e->name, "bubble ", 7))
		mr_log(m, ts, vp, "bubble #%.*s %s%s%.*s", mr_prefix(bub, 24), bub, e->name + 7, queue ? " on " : "",
		       queue ? mr_prefix(queue, 40) : 0, queue ? queue : "");
	else if (ent && queue)
		mr_log(m, ts, vp, "%.*s moved to %.*s", mr_prefix(ent, 40), ent, mr_prefix(queue, 40), queue);
	else if (ent && from)
		mr_log(m, ts, vp, "%.*s stolen from %.*s", mr_prefix(ent, 40), ent, mr_prefix(from, 40), from);
	else
		mr_log(m, ts, vp, "%.*s", mr_prefix(e->name, 80), e->name);
}

/* Instant events: idle periods, hwprio levels, membership, pauses; the rest is logged. */
static void mr_instant(struct mr_movie *m, struct mr_track *t, const struct tj_event *e, long long ts)
{
	int vp = t->vp;
	long long v;
	uint64_t id;
	if (!strcmp(e->name, "idle start")) {
		if (vp >= 0 && !t->idle) {
			t->idle = 1;
			t->idle_ts = ts;
		}
	} else if (!strcmp(e->name, "idle stop")) {
		if (vp >= 0 && t->idle)
			mr_end_idle(m, t, ts);
	} else if (!strcmp(e->name, "hwprio")) {
		long long level;
		if (!mr_arg_int(e, "vp", &v) || !mr_arg_int(e, "level", &level) || v < 0 || v >= m->nb_vps ||
		    level < -1000 || level > 1000)
			mr_bad(m->file, "not a marcel trace: a \"hwprio\" event at %.3f us without a VP's \"vp\" and \"level\"",
			       e->ts);
		m->hw_total++;
		if (m->nb_hw < MR_MAX_HW) {
			m->hw = mr_grow(m->hw, &m->nb_hw, &m->cap_hw, sizeof(*m->hw));
			struct mr_point *p = &m->hw[m->nb_hw - 1];
			*p = (struct mr_point){ ts, (int)v, (int)level, m->nb_hw, NULL };
		}
	} else if (!strcmp(e->name, "bubble insert") || !strcmp(e->name, "bubble remove")) {
		mr_membership(m, e, ts, vp);
	} else if (!strcmp(e->name, "trace off")) {
		m->pauses++;
		for (unsigned i = 0; i < m->nb_tracks; i++)
			if (m->tracks[i].idle)
				mr_end_idle(m, &m->tracks[i], ts);
		mr_log(m, ts, vp, "trace off (nothing recorded until trace on)");
	} else if (!strcmp(e->name, "thread new") || !strcmp(e->name, "thread end")) {
		const char *name = mr_arg(e, "thread");
		if (mr_arg_u64(e, "id", &id)) {
			int x = mr_thread(m, id);
			if (name && *name)
				mr_set_name(&m->thr[x], name, 1);
			mr_log(m, ts, vp, "%s %llu (%.*s)", e->name, (unsigned long long)id, name ? mr_prefix(name, 64) : 0,
			       name ? name : "");
		}
	} else {
		mr_other(m, e, ts, vp);
	}
}

/* Pass 2: slices, idle periods, levels, membership, the log. */
static int mr_pass2(const struct tj_event *e, void *ctx)
{
	struct mr_movie *m = ctx;
	if (!strcmp(e->ph, "M") || !e->has_ts)
		return 0;
	struct mr_track *t = mr_track(m, e->pid, e->tid);
	long long ts = mr_ns(m, e->ts);
	if (ts > m->t_end)
		m->t_end = ts;
	if (!strcmp(e->ph, "B")) {
		uint64_t id;
		if (!mr_arg_u64(e, "id", &id))
			mr_bad(m->file, "not a marcel trace: a slice at %.3f us without a thread \"id\" argument", e->ts);
		if (t->vp < 0)
			return 0;
		if (t->open >= 0)
			mr_add_slice(m, t, ts);
		t->open = mr_thread(m, id);
		t->open_ts = ts;
		if (e->name[0])
			mr_set_name(&m->thr[t->open], e->name, 0);
	} else if (!strcmp(e->ph, "E")) {
		if (t->vp >= 0 && t->open >= 0)
			mr_add_slice(m, t, ts);
	} else if (!strcmp(e->ph, "X")) {
		uint64_t id;
		if (t->vp >= 0 && mr_arg_u64(e, "id", &id)) {
			m->slices = mr_grow(m->slices, &m->nb_slices, &m->cap_slices, sizeof(*m->slices));
			struct mr_slice *s = &m->slices[m->nb_slices - 1];
			*s = (struct mr_slice){ ts, mr_ns(m, e->ts + e->dur), t->vp, mr_thread(m, id), 1, m->nb_slices };
		}
	} else if (!strcmp(e->ph, "i") || !strcmp(e->ph, "I")) {
		if (strcmp(e->cat, "mark"))
			mr_instant(m, t, e, ts);
		else
			mr_log(m, ts, t->vp, "mark: %.*s", mr_prefix(e->name, 120), e->name);
	}
	return 0;
}

static int mr_bub_cmp(const void *a, const void *b, void *arg)
{
	const struct mr_bub *bub = arg;
	uint64_t x = bub[*(const int *)a].uid, y = bub[*(const int *)b].uid;
	return x < y ? -1 : x > y;
}

/* Same rule as the snapshot's (mr_snap_groups), on the membership the trace records: a
 * thread's bubble is the last it was inserted into, a bubble's parent likewise, and a
 * bubble is explicit when it was woken or had threads inserted (implicit children bubbles
 * and the root have neither in a trace). */
static void mr_movie_groups(struct mr_movie *m)
{
	long in_bubbles = 0;
	for (unsigned i = 0; i < m->nb_thr; i++) {
		int any = 0;
		unsigned steps = 0;
		for (int64_t b = m->thr[i].bubble; b >= 0 && steps <= m->nb_bub; b = m->bub[b].parent, steps++)
			if (m->bub[b].explicit_) {
				m->bub[b].nb_threads++;
				any = 1;
			}
		in_bubbles += any;
	}
	m->by_thread = in_bubbles == 0;
	int *seen = mr_alloc((m->nb_bub + 1) * sizeof(int));
	for (unsigned i = 0; i < m->nb_thr; i++) {
		int64_t pick = -1, innermost = -1;
		unsigned steps = 0;
		for (int64_t b = m->thr[i].bubble; b >= 0 && steps <= m->nb_bub; b = m->bub[b].parent, steps++)
			if (m->bub[b].explicit_) {
				if (innermost < 0)
					innermost = b;
				if (m->bub[b].nb_threads < in_bubbles)
					pick = b;
			}
		if (pick < 0)
			pick = innermost;
		if (pick >= 0 && !seen[pick]) {
			seen[pick] = 1;
			mr_add_int(&m->groups, &m->nb_groups, &m->cap_groups, (int)pick);
		}
		m->thr[i].group = (int)pick;
	}
	/* Colour order: bubble ids, as in the snapshot. */
	if (m->nb_groups)
		qsort_r(m->groups, m->nb_groups, sizeof(int), mr_bub_cmp, m->bub);
	for (unsigned g = 0; g < m->nb_groups; g++)
		m->bub[m->groups[g]].group = (int)g;
	for (unsigned i = 0; i < m->nb_thr; i++) {
		if (m->by_thread)
			m->thr[i].group = (int)i;
		else if (m->thr[i].group >= 0)
			m->thr[i].group = m->bub[m->thr[i].group].group;
	}
	free(seen);
}

static int mr_longer(const void *a, const void *b, void *arg)
{
	const struct mr_slice *s = arg;
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	long long dx = s[x].e - s[x].s, dy = s[y].e - s[y].s;
	if (dx != dy)
		return dx > dy ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* Over MR_MAX_SLICES, the shortest slices go (ties: the later ones). */
static void mr_decimate(struct mr_movie *m)
{
	if (m->nb_slices <= MR_MAX_SLICES)
		return;
	unsigned *order = mr_alloc(m->nb_slices * sizeof(unsigned));
	for (unsigned i = 0; i < m->nb_slices; i++)
		order[i] = i;
	qsort_r(order, m->nb_slices, sizeof(unsigned), mr_longer, m->slices);
	for (unsigned i = MR_MAX_SLICES; i < m->nb_slices; i++)
		m->slices[order[i]].keep = 0;
	m->slice_cut = m->slices[order[MR_MAX_SLICES - 1]].e - m->slices[order[MR_MAX_SLICES - 1]].s;
	free(order);
}

static int mr_slice_cmp(const void *a, const void *b)
{
	const struct mr_slice *x = a, *y = b;
	if (x->vp != y->vp)
		return x->vp < y->vp ? -1 : 1;
	if (x->s != y->s)
		return x->s < y->s ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Level changes: by VP, then time. */
static int mr_point_cmp(const void *a, const void *b)
{
	const struct mr_point *x = a, *y = b;
	if (x->vp != y->vp)
		return x->vp < y->vp ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int mr_log_cmp(const void *a, const void *b)
{
	const struct mr_point *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* qsort, which must not be given a null array even when it is empty. */
static void mr_sort(void *a, unsigned n, size_t sz, int (*cmp)(const void *, const void *))
{
	if (n)
		qsort(a, n, sz, cmp);
}

/* What the page looks up by time is sorted by time; per VP, ties keep the trace's order. */
static void mr_movie_sort(struct mr_movie *m)
{
	mr_sort(m->slices, m->nb_slices, sizeof(*m->slices), mr_slice_cmp);
	mr_sort(m->idle, m->nb_idle, sizeof(*m->idle), mr_slice_cmp);
	mr_sort(m->hw, m->nb_hw, sizeof(*m->hw), mr_point_cmp);
	mr_sort(m->ev, m->nb_ev, sizeof(*m->ev), mr_log_cmp);
}

static void mr_movie_load(struct mr_movie *m, const char *file)
{
	memset(m, 0, sizeof(*m));
	m->file = file;
	size_t len;
	char *text = mr_read(file, &len);
	struct tj_parser ps;
	if (tj_parse(&ps, text, len, mr_pass1, m)) {
		/* Valid JSON that is not a trace, or not JSON at all? The plain grammar says. */
		struct tj_parser plain;
		memset(&plain, 0, sizeof(plain));
		plain.p = text;
		plain.end = text + len;
		tj_ws(&plain);
		int json = !tj_value(&plain, 1);
		tj_ws(&plain);
		if (!json || plain.p != plain.end)
			mr_bad(file, "not valid JSON: %s", ps.err);
		mr_bad(file, "not a marcel trace: %s%s", ps.err, strstr(text, "\"entities\"") ?
		       " (a snapshot? draw it with 'marcel-render snapshot')" : "");
	}
	tj_sum_finish(&m->sum);
	if (m->sum.nb_errors)
		mr_bad(file, "not a valid marcel trace: %s", m->sum.first_error);
	if (!m->nb_vps)
		mr_bad(file, "not a marcel trace: no track is named VP0, VP1... (MARCEL_TRACE and marcel-sim --trace "
			     "name one track per VP)");
	tj_parse(&ps, text, len, mr_pass2, m);
	free(text);
	for (unsigned i = 0; i < m->nb_tracks; i++) {
		struct mr_track *t = &m->tracks[i];
		if (t->vp >= 0 && t->open >= 0)
			mr_add_slice(m, t, m->t_end);
		if (t->vp >= 0 && t->idle)
			mr_end_idle(m, t, m->t_end);
	}
	mr_movie_groups(m);
	mr_decimate(m);
	mr_movie_sort(m);
}

/* ---- the page ---- */

/* Per VP, the flattened list of slices (start, end, thread) or idle periods (start, end);
 * the arrays are sorted by VP, then time. */
static void mr_json_spans(FILE *f, const struct mr_movie *m, const struct mr_slice *a, unsigned n, int with_thread)
{
	unsigned i = 0;
	fputc('[', f);
	for (unsigned v = 0; v < m->nb_vps; v++) {
		fputs(v ? ",[" : "[", f);
		for (int first = 1; i < n && a[i].vp == (int)v; i++) {
			if (!a[i].keep)
				continue;
			fprintf(f, "%s%lld,%lld", first ? "" : ",", a[i].s, a[i].e);
			if (with_thread)
				fprintf(f, ",%d", a[i].thread);
			first = 0;
		}
		fputc(']', f);
	}
	fputc(']', f);
}

/* Per VP, the level changes (time, level). */
static void mr_json_levels(FILE *f, const struct mr_movie *m)
{
	unsigned i = 0;
	fputc('[', f);
	for (unsigned v = 0; v < m->nb_vps; v++) {
		fputs(v ? ",[" : "[", f);
		for (int first = 1; i < m->nb_hw && m->hw[i].vp == (int)v; i++, first = 0)
			fprintf(f, "%s%lld,%d", first ? "" : ",", m->hw[i].ts, m->hw[i].value);
		fputc(']', f);
	}
	fputc(']', f);
}

/* The notes the page shows above the player (also written into the data). */
static unsigned mr_notes(const struct mr_movie *m, char notes[][320])
{
	unsigned n = 0;
	if (m->by_thread)
		snprintf(notes[n++], 320, "This trace records no bubble membership (no \"bubble insert\" of a thread): "
					  "threads are coloured by thread, not by bubble.");
	else
		snprintf(notes[n++], 320, "Threads are coloured by their outermost explicit bubble (not counting one that holds "
					  "every thread in bubbles), from the trace's \"bubble insert\" events: a thread's "
					  "bubble is the last it was inserted into.");
	unsigned long kept = m->nb_slices < MR_MAX_SLICES ? m->nb_slices : MR_MAX_SLICES;
	if (kept < m->nb_slices)
		snprintf(notes[n++], 320, "Large trace: %lu of %u thread slices are shown; the %lu shorter than %lld ns were "
					  "left out (gaps in the timeline, not idle time).",
			 kept, m->nb_slices, m->nb_slices - kept, m->slice_cut);
	if (m->ev_total > m->nb_ev)
		snprintf(notes[n++], 320, "The event log holds the first %u of %lu events.", m->nb_ev, m->ev_total);
	if (m->hw_total > m->nb_hw)
		snprintf(notes[n++], 320, "Only the first %u of %lu hwprio level changes are shown.", m->nb_hw, m->hw_total);
	if (m->pauses)
		snprintf(notes[n++], 320, "Recording was paused %lu time(s) (marcel_trace_off): nothing is known of those "
					  "periods.", m->pauses);
	return n;
}

static void mr_page_data(FILE *f, const struct mr_movie *m, char notes[][320], unsigned nb_notes)
{
	fputs("{\"file\":", f);
	mr_jstr(f, m->file);
	fputs(",\"process\":", f);
	mr_jstr(f, m->process);
	fprintf(f, ",\"span\":%lld,\"colour_by\":\"%s\",\"palette\":[", m->t_end, m->by_thread ? "thread" : "bubble");
	for (unsigned i = 0; i < MR_NB_COLOURS; i++)
		fprintf(f, "%s\"%s\"", i ? "," : "", mr_palette[i]);
	fprintf(f, "],\"none\":\"%s\",\n\"vps\":[", MR_NO_GROUP);
	for (unsigned v = 0; v < m->nb_vps; v++)
		fprintf(f, "%s\"VP%u\"", v ? "," : "", v);
	fputs("],\n\"threads\":[", f);
	for (unsigned i = 0; i < m->nb_thr; i++) {
		char name[48];
		snprintf(name, sizeof(name), "thread %llu", (unsigned long long)m->thr[i].uid);
		fprintf(f, "%s[%llu,", i ? "," : "", (unsigned long long)m->thr[i].uid);
		mr_jstr(f, m->thr[i].name ? m->thr[i].name : name);
		fprintf(f, ",%d]", m->thr[i].group);
	}
	fputs("],\n\"groups\":[", f);
	for (unsigned g = 0; g < m->nb_groups; g++) {
		const struct mr_bub *b = &m->bub[m->groups[g]];
		fprintf(f, "%s[\"bubble #%llu\",%ld]", g ? "," : "", (unsigned long long)(b->uid & ~MR_TAG), b->nb_threads);
	}
	fputs("],\n\"slices\":", f);
	mr_json_spans(f, m, m->slices, m->nb_slices, 1);
	fputs(",\n\"idle\":", f);
	mr_json_spans(f, m, m->idle, m->nb_idle, 0);
	fputs(",\n\"hw\":", f);
	mr_json_levels(f, m);
	fputs(",\n\"events\":[", f);
	for (unsigned i = 0; i < m->nb_ev; i++) {
		fprintf(f, "%s[%lld,%d,", i ? ",\n" : "", m->ev[i].ts, m->ev[i].vp);
		mr_jstr(f, m->ev[i].text);
		fputc(']', f);
	}
	fputs("],\n\"notes\":[", f);
	for (unsigned i = 0; i < nb_notes; i++) {
		fputs(i ? "," : "", f);
		mr_jstr(f, notes[i]);
	}
	unsigned long kept = m->nb_slices < MR_MAX_SLICES ? m->nb_slices : MR_MAX_SLICES;
	fprintf(f, "],\n\"counts\":{\"trace_events\":%lu,\"slices\":%u,\"slices_shown\":%lu,\"idle\":%u,\"hwprio\":%lu,"
		   "\"hwprio_shown\":%u,\"events\":%lu,\"events_shown\":%u}}",
		m->sum.nb_events, m->nb_slices, kept, m->nb_idle, m->hw_total, m->nb_hw, m->ev_total, m->nb_ev);
}

/* The page's static part: title, notes and legend, so they read without the script. */
static void mr_page_head(FILE *f, const struct mr_movie *m, char notes[][320], unsigned nb_notes)
{
	fputs("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
	      "<title>marcel movie: ", f);
	mr_xml(f, m->file);
	fprintf(f, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>marcel movie: ", mr_page_css);
	mr_xml(f, m->file);
	fputs("</h1>\n<p id=\"summary\">", f);
	mr_xml(f, m->process[0] ? m->process : "(unnamed process)");
	fprintf(f, ": %u VPs, %u threads, %lu trace events over %.3f ms</p>\n", m->nb_vps, m->nb_thr, m->sum.nb_events,
		m->t_end / 1e6);
	for (unsigned i = 0; i < nb_notes; i++) {
		fputs("<p class=\"note\">", f);
		mr_xml(f, notes[i]);
		fputs("</p>\n", f);
	}
	fputs("<div id=\"legend\">", f);
	for (unsigned g = 0; g < m->nb_groups && g < MR_LEGEND_GROUPS; g++) {
		const struct mr_bub *b = &m->bub[m->groups[g]];
		fprintf(f, "<span class=\"key\"><span class=\"sw\" style=\"background:%s\"></span>bubble #%llu (%ld thread%s)</span>",
			mr_colour((int)g), (unsigned long long)(b->uid & ~MR_TAG), b->nb_threads, b->nb_threads > 1 ? "s" : "");
	}
	if (m->nb_groups > MR_LEGEND_GROUPS)
		fprintf(f, "<span class=\"key\">and %u more bubbles (colours repeat every %zu)</span>",
			m->nb_groups - MR_LEGEND_GROUPS, MR_NB_COLOURS);
	if (!m->by_thread)
		fprintf(f, "<span class=\"key\"><span class=\"sw\" style=\"background:%s\"></span>in no bubble that tells threads "
			   "apart</span>", MR_NO_GROUP);
	fputs("<span class=\"key\"><span class=\"sw idle\"></span>idle</span></div>\n", f);
	fputs("<div id=\"controls\"><button id=\"play\" type=\"button\">Play</button>"
	      "<input id=\"slider\" type=\"range\" min=\"0\" max=\"10000\" step=\"1\" value=\"0\"/>"
	      "<span id=\"time\"></span><label>speed <select id=\"speed\"><option value=\"0.25\">0.25x</option>"
	      "<option value=\"1\" selected=\"selected\">1x</option><option value=\"4\">4x</option>"
	      "<option value=\"16\">16x</option></select></label></div>\n"
	      "<div id=\"vps\"></div>\n<canvas id=\"timeline\" width=\"1200\" height=\"100\"></canvas>\n"
	      "<div id=\"log\"></div>\n<noscript><p class=\"note\">The player needs JavaScript.</p></noscript>\n", f);
}

static void mr_page(FILE *f, const struct mr_movie *m)
{
	char notes[8][320];
	unsigned nb_notes = mr_notes(m, notes);
	mr_page_head(f, m, notes, nb_notes);
	fputs("<script type=\"application/json\" id=\"data\">", f);
	mr_page_data(f, m, notes, nb_notes);
	/* The script as CDATA behind comments: the page is well-formed XML too (xmllint
	 * checks it so), and HTML parsers see two comment lines. */
	fprintf(f, "</script>\n<script>//<![CDATA[\n%s//]]></script>\n</body>\n</html>\n", mr_page_js);
}

static void mr_movie_free(struct mr_movie *m)
{
	for (unsigned i = 0; i < m->nb_thr; i++)
		free(m->thr[i].name);
	for (unsigned i = 0; i < m->nb_ev; i++)
		free(m->ev[i].text);
	free(m->thr);
	free(m->bub);
	free(m->ev);
	free(m->hw);
	free(m->slices);
	free(m->idle);
	free(m->tracks);
	free(m->groups);
	struct mr_map *maps[] = { &m->track_of, &m->thr_of, &m->bub_of };
	for (unsigned i = 0; i < 3; i++) {
		free(maps[i]->keys);
		free(maps[i]->vals);
	}
	tj_sum_free(&m->sum);
}

static int mr_movie(const char *in, const char *out)
{
	struct mr_movie m;
	mr_movie_load(&m, in);
	struct mr_out o;
	mr_out_open(&o, out);
	mr_page(o.f, &m);
	mr_movie_free(&m);
	return mr_out_close(&o);
}

/* ---- command line ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s snapshot FILE.json [-o OUT.svg]\n"
		"       %s movie TRACE.json [-o OUT.html]\n"
		"\n"
		"snapshot: draws a scheduler snapshot (marcel_sched_snapshot_json, or marcel-sim\n"
		"  --snapshot) as SVG: the run-queue tree as nested boxes (machine, NUMA nodes,\n"
		"  caches, cores, then each VP's own queue with its hwprio level; a queue holding\n"
		"  nothing with one child is drawn as that child, \"Core5 / VP5\"), the threads as\n"
		"  chips labelled with their ids in the box of the queue they are on (running ones\n"
		"  outlined in black in their VP's box, blocked or unstarted ones faded, threads on\n"
		"  no queue in a box of their own), bubbles as outlines around their members in\n"
		"  each box where members are. Threads take the colour of their outermost explicit\n"
		"  bubble (not counting one that holds every thread in bubbles); a legend says\n"
		"  which. Big machines: each box lays its children out in a grid about 1.6 times as\n"
		"  wide as high; a queue draws at most %d threads and %d bubbles, a VP's queue %d\n"
		"  threads, and says how many more it holds; beyond %d VPs the boxes are compact\n"
		"  (bubbles as outlines without their nesting, %d per queue, %d threads per VP):\n"
		"  1024 VPs draw in about 5800 x 3100 pixels.\n"
		"movie: turns a trace (MARCEL_TRACE, or marcel-sim --trace) into one HTML page,\n"
		"  with no outside reference, that replays it: a time slider, play/pause, each VP\n"
		"  with the thread it runs (coloured as above, from the trace's bubble insert\n"
		"  events; by thread when the trace has none, and the page says so), idle or not,\n"
		"  and its hwprio level; a timeline of every VP, and the log of scheduler events\n"
		"  up to the cursor. Large traces: at most %u thread slices (the shortest go\n"
		"  first), %u log events and %u level changes; the page says what was left out.\n"
		"\n"
		"Writes to OUT (replaced only once complete), or to standard output. Exit\n"
		"status 2 for a bad command line or an input that is not JSON or not what marcel\n"
		"writes (one line says what is wrong), 1 if the output cannot be written.\n",
		mr_prog, mr_prog, MR_CAP_ITEM, MR_CAP_ITEM, MR_CAP_VP, MR_COMPACT_VPS, MR_CAP_ITEM_COMPACT, MR_CAP_VP_COMPACT,
		MR_MAX_SLICES, MR_MAX_EVENTS, MR_MAX_HW);
}

int main(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	const char *cmd = argc > 1 ? argv[1] : "", *in = NULL, *out = NULL;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "-o")) {
			if (i + 1 >= argc || out) {
				fprintf(stderr, "%s: -o %s\n", mr_prog, out ? "given twice" : "needs a file name");
				usage(stderr);
				return 2;
			}
			out = argv[++i];
		} else if (!in && argv[i][0] != '-') {
			in = argv[i];
		} else {
			fprintf(stderr, "%s: unexpected argument '%s'\n", mr_prog, argv[i]);
			usage(stderr);
			return 2;
		}
	}
	if ((strcmp(cmd, "snapshot") && strcmp(cmd, "movie")) || !in) {
		if (*cmd && strcmp(cmd, "snapshot") && strcmp(cmd, "movie"))
			fprintf(stderr, "%s: unknown command '%s' (snapshot or movie)\n", mr_prog, cmd);
		else
			fprintf(stderr, "%s: %s\n", mr_prog, *cmd ? "no input file" : "no command");
		usage(stderr);
		return 2;
	}
	return cmd[0] == 's' ? mr_snapshot(in, out) : mr_movie(in, out);
}
