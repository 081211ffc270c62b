/*
 * The replay workload: a real run's MARCEL_TRACE file becomes each thread's program. A
 * run slice of a thread on a VP track (its "B" to the track's next "E") is computation
 * as long as the slice (times `scale`: a machine of another speed); the time from the
 * end of one of its slices to the start of its next is a wait of that length; its first
 * slice starts after a wait as long as the trace's start to it. Bubbles come from the
 * trace's "bubble insert" events (a bubble inserted in a bubble nests).
 *
 * What a trace does not say is not replayed: why a thread waited. Waits are replayed as
 * fixed durations, not as the barrier or message they were, so on a faster machine the
 * threads wait as long as they did; and the time a thread waited for a processor in the
 * recorded run counts as a wait too. A replay shows where a strategy puts the recorded
 * threads and what the machine model makes of their computation, not how their
 * dependencies would play out there.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ma_sim_int.h"
#include "trace-json.h"

struct rp_thread {
	uint64_t id;
	struct sim_phase *phase;
	unsigned n, cap;
	double last_end;            /* µs, < 0: no slice yet */
	int bubble;                 /* index, -1: none */
};

struct rp_bubble {
	uint64_t id;
	int parent;                 /* index, -1: the root */
};

struct rp {
	struct rp_thread *t;
	unsigned nt, cap_t;
	struct rp_bubble *b;
	unsigned nb, cap_b;
	/* the open slice of each track: thread index, start (µs); -1: none */
	int open_thread[4096];
	double open_start[4096];
	double t0, t_last;          /* the trace's first and last times (µs) */
	int have_t0;
	double scale, mem;
	char err[200];
};

/* arr with room for one more element (n used of *cap, each `size` bytes), grown if it
 * had none: the array to use from now on, or NULL (arr then unchanged). */
static void *rp_room(void *arr, unsigned n, unsigned *cap, size_t size)
{
	if (n < *cap)
		return arr;
	unsigned c = *cap ? 2 * *cap : 16;
	void *x = realloc(arr, c * size);
	if (x)
		*cap = c;
	return x;
}

static int rp_thread_of(struct rp *r, uint64_t id)
{
	for (unsigned i = 0; i < r->nt; i++)
		if (r->t[i].id == id)
			return (int)i;
	struct rp_thread *t = rp_room(r->t, r->nt, &r->cap_t, sizeof(*r->t));
	if (!t)
		return -1;
	r->t = t;
	r->t[r->nt] = (struct rp_thread){ .id = id, .last_end = -1, .bubble = -1 };
	return (int)r->nt++;
}

static int rp_bubble_of(struct rp *r, uint64_t id)
{
	for (unsigned i = 0; i < r->nb; i++)
		if (r->b[i].id == id)
			return (int)i;
	struct rp_bubble *b = rp_room(r->b, r->nb, &r->cap_b, sizeof(*r->b));
	if (!b)
		return -1;
	r->b = b;
	r->b[r->nb] = (struct rp_bubble){ .id = id, .parent = -1 };
	return (int)r->nb++;
}

static int rp_push(struct rp_thread *t, struct sim_phase p)
{
	struct sim_phase *x = rp_room(t->phase, t->n, &t->cap, sizeof(*t->phase));
	if (!x)
		return -1;
	t->phase = x;
	t->phase[t->n++] = p;
	return 0;
}

/* One slice of thread t, from start to end (µs). */
static int rp_slice(struct rp *r, int t, double start, double end)
{
	struct rp_thread *x = &r->t[t];
	double gap = x->last_end < 0 ? start - r->t0 : start - x->last_end;
	if (gap > 0 && rp_push(x, (struct sim_phase){ .kind = SIM_SLEEP, .work = gap * 1e-6 }))
		return -1;
	if (end > start && rp_push(x, (struct sim_phase){ .kind = SIM_COMPUTE, .work = (end - start) * 1e-6 * r->scale,
							  .mem = r->mem }))
		return -1;
	x->last_end = end;
	return 0;
}

static int rp_event(const struct tj_event *e, void *ctx)
{
	struct rp *r = ctx;
	if (!e->has_ph || e->ph[0] == 'M')
		return 0;
	if (!e->has_ts || !e->has_tid) {
		snprintf(r->err, sizeof(r->err), "an event of phase \"%s\" without \"ts\" or \"tid\"", e->ph);
		return 1;
	}
	if (!r->have_t0 || e->ts < r->t0) {
		r->t0 = e->ts;
		r->have_t0 = 1;
	}
	if (e->ts > r->t_last)
		r->t_last = e->ts;
	long long track = e->tid - 1;
	if (e->ph[0] == 'B' || e->ph[0] == 'E') {
		if (track < 0 || track >= 4096) {
			snprintf(r->err, sizeof(r->err), "track %lld: only tracks 1 to 4096 (VPs) are read", e->tid);
			return 1;
		}
		if (r->open_thread[track] >= 0 && rp_slice(r, r->open_thread[track], r->open_start[track], e->ts))
			return 1;
		r->open_thread[track] = -1;
		if (e->ph[0] == 'E')
			return 0;
		const char *id = tj_arg(e, "id");
		char *end;
		unsigned long long v = id ? strtoull(id, &end, 10) : 0;
		if (!id || *end) {
			snprintf(r->err, sizeof(r->err), "a thread's slice (\"B\") without a numeric \"id\" argument");
			return 1;
		}
		int t = rp_thread_of(r, v);
		if (t < 0)
			return 1;
		r->open_thread[track] = t;
		r->open_start[track] = e->ts;
		return 0;
	}
	if (e->ph[0] == 'i' && !strcmp(e->name, "bubble insert")) {
		const char *b = tj_arg(e, "bubble"), *ent = tj_arg(e, "entity");
		unsigned long long bid, eid;
		char kind[8];
		if (!b || !ent || sscanf(b, "%llu", &bid) != 1 || sscanf(ent, "%7s %llu", kind, &eid) != 2) {
			snprintf(r->err, sizeof(r->err), "a \"bubble insert\" without its bubble and entity");
			return 1;
		}
		int bi = rp_bubble_of(r, bid);
		if (bi < 0)
			return 1;
		if (!strcmp(kind, "thread")) {
			int t = rp_thread_of(r, eid);
			if (t < 0)
				return 1;
			r->t[t].bubble = bi;
		} else {
			int c = rp_bubble_of(r, eid);
			if (c < 0)
				return 1;
			r->b[c].parent = bi;
		}
	}
	return 0;
}

/* The generator: each thread's recorded phases, then its end. */
static void rp_next(const struct sim_workload *w, unsigned t, unsigned long n, struct sim_phase *p)
{
	const struct rp *r = w->data;
	*p = n < r->t[t].n ? r->t[t].phase[n] : (struct sim_phase){ .kind = SIM_END };
}

static void rp_free(struct rp *r)
{
	for (unsigned i = 0; r->t && i < r->nt; i++)
		free(r->t[i].phase);
	free(r->t);
	free(r->b);
	free(r);
}

void sim_replay_free(struct sim_workload *w)
{
	rp_free(w->data);
	w->data = NULL;
}

/* Bubbles in an order where parents come first (the workload's rule); -1 on a cycle. */
static int rp_order(struct rp *r, int *order, int *rank)
{
	unsigned done = 0;
	for (unsigned i = 0; i < r->nb; i++)
		rank[i] = -1;
	while (done < r->nb) {
		unsigned before = done;
		for (unsigned i = 0; i < r->nb; i++)
			if (rank[i] < 0 && (r->b[i].parent < 0 || rank[r->b[i].parent] >= 0)) {
				rank[i] = (int)done;
				order[done++] = (int)i;
			}
		if (done == before)
			return -1;
	}
	return 0;
}

int sim_replay_make(struct sim_workload *w, const char *path, double scale, double mem, char *err, size_t errlen)
{
	size_t len;
	char *text = tj_read_file(path, &len);
	if (!text) {
		snprintf(err, errlen, "replay: %s: %s", path, strerror(errno));
		return errno ? errno : EIO;
	}
	struct rp *r = calloc(1, sizeof(*r));
	if (!r) {
		free(text);
		return ENOMEM;
	}
	r->scale = scale;
	r->mem = mem;
	for (unsigned i = 0; i < 4096; i++)
		r->open_thread[i] = -1;
	struct tj_parser ps;
	int e = tj_parse(&ps, text, len, rp_event, r);
	free(text);
	/* Slices still open at the end end with the trace. */
	for (unsigned k = 0; !e && k < 4096; k++)
		if (r->open_thread[k] >= 0 && rp_slice(r, r->open_thread[k], r->open_start[k], r->t_last))
			e = 1;
	if (e < 0 || e > 0 || !r->nt) {
		snprintf(err, errlen, "replay: %s: not a marcel trace: %s", path,
			 e < 0 ? ps.err : r->err[0] ? r->err : e ? "out of memory" : "no thread ran in it");
		rp_free(r);
		return EINVAL;
	}
	int *order = calloc(r->nb + 1, sizeof(int)), *rank = calloc(r->nb + 1, sizeof(int));
	if (!order || !rank || rp_order(r, order, rank)) {
		snprintf(err, errlen, "replay: %s: not a marcel trace: its bubbles hold each other", path);
		free(order);
		free(rank);
		rp_free(r);
		return EINVAL;
	}
	memset(w, 0, sizeof(*w));
	w->name = "replay";
	w->nb_threads = r->nt;
	w->nb_bubbles = r->nb;
	w->thread_bubble = calloc(r->nt, sizeof(int));
	w->bubbles = calloc(r->nb ? r->nb : 1, sizeof(*w->bubbles));
	w->pin = calloc(r->nt, sizeof(int));
	w->barrier_count = calloc(1, sizeof(unsigned));
	if (!w->thread_bubble || !w->bubbles || !w->pin || !w->barrier_count) {
		free(order);
		free(rank);
		rp_free(r);
		return ENOMEM;
	}
	for (unsigned i = 0; i < r->nb; i++) {
		int b = order[i];
		w->bubbles[i].parent = r->b[b].parent < 0 ? -1 : rank[r->b[b].parent];
	}
	unsigned long phases = 0;
	for (unsigned t = 0; t < r->nt; t++) {
		w->thread_bubble[t] = r->t[t].bubble < 0 ? -1 : rank[r->t[t].bubble];
		w->pin[t] = -1;
		phases += r->t[t].n;
	}
	free(order);
	free(rank);
	w->data = r;
	w->next = rp_next;
	w->free_data = sim_replay_free;
	snprintf(w->desc, sizeof(w->desc), "replay of %s: %u threads, %u bubbles, %lu phases, computation x%g", path,
		 r->nt, r->nb, phases, scale);
	return 0;
}
