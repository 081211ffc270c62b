/*
 * The event loop: threads run their programs (phases of computation and barriers) on
 * VPs, at the speeds the machine model gives; the run queues, bubbles and the
 * strategy's decisions are sched.c's, hwprio's levels hw.c's.
 *
 * Events: a thread's computation ends (its completion is recomputed, and the old event
 * dropped by version, whenever its speed changes: a sibling starts or stops, a level
 * changes), a VP's time slice ends, the strategy's heartbeat beats. Equal times are
 * taken in the order they were pushed, so a run depends on its seed and nothing else.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "ma_sim_int.h"

void sim_fail(struct sim *s, const char *fmt, ...)
{
	if (s->failed)
		return;
	s->failed = 1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->err, s->errlen, fmt, ap);
	va_end(ap);
}

/* ---- the event heap ---- */

static int sim_before(const struct sim_event *a, const struct sim_event *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

void sim_push(struct sim *s, double t, int kind, int who, unsigned long version)
{
	if (s->nb_ev == s->cap_ev) {
		unsigned cap = s->cap_ev ? 2 * s->cap_ev : 1024;
		struct sim_event *h = realloc(s->heap, cap * sizeof(*h));
		if (!h) {
			sim_fail(s, "out of memory for events");
			return;
		}
		s->heap = h;
		s->cap_ev = cap;
	}
	unsigned i = s->nb_ev++;
	struct sim_event e = { .t = t, .seq = s->seq++, .kind = kind, .who = who, .version = version };
	while (i && sim_before(&e, &s->heap[(i - 1) / 2])) {
		s->heap[i] = s->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	s->heap[i] = e;
}

static struct sim_event sim_pop(struct sim *s)
{
	struct sim_event top = s->heap[0], last = s->heap[--s->nb_ev];
	unsigned i = 0;
	for (;;) {
		unsigned l = 2 * i + 1, m = l;
		if (l >= s->nb_ev)
			break;
		if (l + 1 < s->nb_ev && sim_before(&s->heap[l + 1], &s->heap[l]))
			m = l + 1;
		if (!sim_before(&s->heap[m], &last))
			break;
		s->heap[i] = s->heap[m];
		i = m;
	}
	if (s->nb_ev)
		s->heap[i] = last;
	return top;
}

/* ---- the trace (marcel's JSON format: tools read both alike) ---- */

void sim_trace_event(struct sim *s, const char *ph, unsigned vp, const char *name, uint64_t id)
{
	if (!s->trace)
		return;
	fprintf(s->trace, ",\n{\"ph\":\"%s\",\"pid\":1,\"tid\":%u,\"ts\":%.3f", ph, vp + 1, s->now * 1e6);
	if (ph[0] == 'B')
		fprintf(s->trace, ",\"cat\":\"thread\",\"name\":\"thread %llu\",\"args\":{\"id\":%llu}}",
			(unsigned long long)id, (unsigned long long)id);
	else if (ph[0] == 'i' && !strcmp(name, "hwprio"))
		fprintf(s->trace, ",\"s\":\"t\",\"cat\":\"hwprio\",\"name\":\"hwprio\",\"args\":{\"vp\":%u,\"level\":%d,"
				  "\"backend\":\"marcel-sim\"}}",
			vp, (int)(int64_t)id);
	else if (ph[0] == 'i')
		fprintf(s->trace, ",\"s\":\"t\",\"cat\":\"bubble\",\"name\":\"%s\",\"args\":{\"id\":%llu}}", name,
			(unsigned long long)id);
	else
		fputc('}', s->trace);
}

static void sim_trace_start(struct sim *s)
{
	if (!s->trace)
		return;
	fprintf(s->trace, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
			  "{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":\"marcel-sim\"}}");
	for (unsigned v = 0; v < s->nv; v++)
		fprintf(s->trace,
			",\n{\"ph\":\"M\",\"pid\":1,\"tid\":%u,\"name\":\"thread_name\",\"args\":{\"name\":\"VP%u\"}}"
			",\n{\"ph\":\"M\",\"pid\":1,\"tid\":%u,\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%u}}",
			v + 1, v, v + 1, v);
	fprintf(s->trace,
		",\n{\"ph\":\"M\",\"pid\":1,\"tid\":%u,\"name\":\"thread_name\",\"args\":{\"name\":\"outside\"}}"
		",\n{\"ph\":\"M\",\"pid\":1,\"tid\":%u,\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%u}}",
		s->nv + 1, s->nv + 1, s->nv);
	/* Membership, as the library traces it when bubbles are filled: bubbles in their
	 * parents (parents first), then threads. */
	for (unsigned b = 0; b < s->w->nb_bubbles; b++)
		if (s->bubble[b].parent && s->bubble[b].parent != &s->root)
			fprintf(s->trace,
				",\n{\"ph\":\"i\",\"pid\":1,\"tid\":%u,\"ts\":0.000,\"s\":\"t\",\"cat\":\"bubble\","
				"\"name\":\"bubble insert\",\"args\":{\"bubble\":%llu,\"entity\":\"bubble %llu\"}}",
				s->nv + 1, (unsigned long long)(s->bubble[b].parent->id & ~SIM_BUBBLE_TAG),
				(unsigned long long)(s->bubble[b].id & ~SIM_BUBBLE_TAG));
	for (unsigned t = 0; t < s->w->nb_threads; t++)
		if (s->thread[t].parent && s->thread[t].parent != &s->root)
			fprintf(s->trace,
				",\n{\"ph\":\"i\",\"pid\":1,\"tid\":%u,\"ts\":0.000,\"s\":\"t\",\"cat\":\"bubble\","
				"\"name\":\"bubble insert\",\"args\":{\"bubble\":%llu,\"entity\":\"thread %llu\"}}",
				s->nv + 1, (unsigned long long)(s->thread[t].parent->id & ~SIM_BUBBLE_TAG),
				(unsigned long long)s->thread[t].id);
}

static void sim_trace_end(struct sim *s)
{
	if (!s->trace)
		return;
	for (unsigned v = 0; v < s->nv; v++)
		if (s->vp[v].cur)
			sim_trace_event(s, "E", v, NULL, 0);
	fprintf(s->trace, "\n]}\n");
}

/* ---- speeds ---- */

/* Brings t's remaining work to now at its current rate. */
static void sim_settle(struct sim *s, struct sim_ent *t)
{
	if (t->state == SIM_T_RUNNING && t->phase.kind == SIM_COMPUTE) {
		t->remaining -= t->rate * (s->now - t->since);
		if (t->remaining < 0)
			t->remaining = 0;
	}
	t->since = s->now;
}

/* t's speed changed or it started: a new completion event. */
void sim_reschedule(struct sim *s, struct sim_ent *t)
{
	sim_settle(s, t);
	if (t->state != SIM_T_RUNNING || t->phase.kind != SIM_COMPUTE)
		return;
	t->rate = sim_speed(s, t, (unsigned)t->vp);
	t->version++;
	double dt = t->rate > 0 ? t->remaining / t->rate : 1e30;
	sim_push(s, s->now + dt, SIM_EV_COMPLETE, t->index, t->version);
}

void sim_core_rates(struct sim *s, int core)
{
	const struct ma_level *l = &s->topo.levels[core];
	for (unsigned u = l->first_vp; u < l->first_vp + l->nb_vps && u < s->nv; u++)
		if (s->vp[u].core == core && s->vp[u].cur)
			sim_reschedule(s, s->vp[u].cur);
}

/* ---- threads on VPs ---- */

/* Whether something runnable waits on VP v's path. */
static int sim_path_waiting(const struct sim *s, unsigned v)
{
	for (int q = s->vp[v].queue; q >= 0; q = sim_parent_queue(s, q))
		if (s->q[q].runnable)
			return 1;
	return 0;
}

/* Uniform in [0, 1), from the run's seed (xorshift64*): the run depends on it alone. */
double sim_random(struct sim *s)
{
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return (double)((s->rng * UINT64_C(2685821657736338717)) >> 11) / 9007199254740992.0;
}

static void sim_advance(struct sim *s, struct sim_ent *t);

static void sim_stop_run(struct sim *s, struct sim_ent *t)
{
	unsigned v = (unsigned)t->vp;
	sim_settle(s, t);
	t->cpu += s->now - t->ready_at;
	t->ready_at = s->now;
	t->last_vp = (int)v;
	t->last_core = s->vp[v].core;
	t->vp = -1;
	for (int y = t->run_home; y >= 0; y = sim_parent_queue(s, y))
		s->q[y].sub_running--;
	t->run_home = -1;
	sim_bw_track(s, t);
	s->vp[v].cur = NULL;
	s->nb_free += !s->vp[v].wake_pending;
	s->vp[v].idle_since = s->now;
	sim_trace_event(s, "E", v, NULL, 0);
	sim_core_rates(s, s->vp[v].core);
}

static void sim_start_run(struct sim *s, struct sim_ent *t, unsigned v)
{
	struct sim_vp *p = &s->vp[v];
	if (p->idle_since >= 0)
		p->idle_total += s->now - p->idle_since;
	p->idle_since = -1;
	s->nb_free -= !p->wake_pending;
	p->cur = t;
	t->move_req = 0;
	t->wait += s->now - t->ready_at;
	t->ready_at = s->now;
	t->state = SIM_T_RUNNING;
	t->vp = (int)v;
	t->since = s->now;
	/* Counted where it belongs (as the views count it), or on its VP's queue. */
	int h = sim_home_queue(t);
	t->run_home = h >= 0 ? h : p->queue;
	for (int y = t->run_home; y >= 0; y = sim_parent_queue(s, y))
		s->q[y].sub_running++;
	if (t->last_core >= 0 && t->last_core != p->core) {
		t->migrations++;
		if (t->phase.kind == SIM_COMPUTE)
			t->remaining += s->m->migrate_s *
					(double)ma_topo_distance(&s->topo.levels[t->last_core], &s->topo.levels[p->core]);
	}
	sim_trace_event(s, "B", v, NULL, t->id);
	p->slice_armed = 0;
	if (sim_path_waiting(s, v))
		sim_arm_slice(s, v);
	if (t->phase.kind == SIM_COMPUTE && t->remaining > 0) {
		if (t->home_node < 0)
			t->home_node = p->node; /* first touch */
		sim_bw_track(s, t);
		/* Its siblings' speeds change with it (and its own is set). */
		sim_core_rates(s, p->core);
	} else {
		sim_core_rates(s, p->core);
		sim_advance(s, t);
	}
}

void sim_vp_schedule(struct sim *s, unsigned v)
{
	if (s->vp[v].cur || s->failed)
		return;
	struct sim_ent *t = sim_find_next(s, v);
	if (!t && s->s->decide_vp_idle) {
		sim_strategy_vp_idle(s, v);
		if (!s->vp[v].cur)
			t = sim_find_next(s, v);
	}
	if (t && !s->vp[v].cur)
		sim_start_run(s, t, v);
}

void sim_thread_ready(struct sim *s, struct sim_ent *t)
{
	t->state = SIM_T_READY;
	if (t->item >= 0) {
		sim_enqueue(s, t, t->item);
		sim_notify(s, t->item, t->last_vp);
		return;
	}
	struct sim_ent *u = sim_unit_of(t);
	t->in_cache = 1;
	for (struct sim_ent *b = t->parent; b; b = b->parent) {
		sim_ready_add(s, b, 1);
		if (b == u)
			break;
	}
	if (u && u->queue >= 0)
		sim_notify(s, u->queue, t->last_vp);
}

/* Thread t, blocked at a barrier or in an exchange, may go on: ready at once, or after
 * the OS's scheduler latency, which hwprio's policy spares it (the 002 seed's SCHED_HPC
 * class: a woken task competes with no other process). */
static void sim_release(struct sim *s, struct sim_ent *t)
{
	double lat = s->c->hw == SIM_HW_POLICY ? 0 : s->m->sched_latency_s;
	if (!(lat > 0)) {
		sim_thread_ready(s, t);
		return;
	}
	t->latency += lat;
	sim_push(s, s->now + lat, SIM_EV_AWAKE, t->index, ++t->version);
}

/* The thread a SPAWN or JOIN of t names, NULL (the run failed) if none. */
static struct sim_ent *sim_thread_arg(struct sim *s, const struct sim_ent *t)
{
	if (t->phase.id >= 0 && (unsigned)t->phase.id < s->w->nb_threads)
		return &s->thread[t->phase.id];
	sim_fail(s, "workload %s: thread %d names thread %d, which does not exist", s->w->name, t->index,
		 t->phase.id);
	return NULL;
}

/* Thread t, running, waits: its VP takes something else. */
static void sim_block(struct sim *s, struct sim_ent *t)
{
	unsigned v = (unsigned)t->vp;
	sim_stop_run(s, t);
	t->state = SIM_T_BLOCKED;
	sim_vp_schedule(s, v);
}

static unsigned sim_neighbours(struct sim *s, unsigned t)
{
	unsigned n = s->w->neighbours(s->w, t, s->nbuf, s->w->nb_threads);
	return n < s->w->nb_threads ? n : s->w->nb_threads;
}

/* Whether every neighbour of t has posted at least as many exchanges as t. */
static int sim_exchange_done(struct sim *s, const struct sim_ent *t)
{
	unsigned n = sim_neighbours(s, (unsigned)t->index);
	for (unsigned i = 0; i < n; i++)
		if (s->thread[s->nbuf[i]].posted < t->posted)
			return 0;
	return 1;
}

/* Thread t posts an exchange: the neighbours it completes go on, and when every
 * exchanging thread has posted a round, that round is an iteration for hwprio (if no
 * barrier is one). Returns whether t itself can go on. */
static int sim_exchange(struct sim *s, struct sim_ent *t)
{
	if (++t->posted == s->ex_min + 1 && ++s->ex_ahead == s->ex_threads) {
		s->ex_min++;
		s->ex_ahead = 0;
		for (unsigned i = 0; i < s->w->nb_threads; i++)
			s->ex_ahead += s->thread[i].posted > s->ex_min;
		if (s->iter_barrier < 0)
			sim_hw_iteration(s);
	}
	unsigned n = sim_neighbours(s, (unsigned)t->index);
	for (unsigned i = 0; i < n; i++) {
		struct sim_ent *x = &s->thread[s->nbuf[i]];
		/* x waits for t alone if t was the last of its neighbours behind it. */
		if (x->state == SIM_T_BLOCKED && x->phase.kind == SIM_EXCHANGE && x->posted == t->posted &&
		    sim_exchange_done(s, x))
			sim_release(s, x);
		n = sim_neighbours(s, (unsigned)t->index); /* nbuf was reused */
	}
	return sim_exchange_done(s, t);
}

/* Thread t's program goes on from its current phase, which just ended (or is empty). */
static void sim_advance(struct sim *s, struct sim_ent *t)
{
	for (;;) {
		s->w->next(s->w, (unsigned)t->index, t->step++, &t->phase);
		switch (t->phase.kind) {
		case SIM_COMPUTE:
			t->remaining = t->phase.work;
			if (t->remaining <= 0)
				continue;
			if (t->home_node < 0)
				t->home_node = s->vp[t->vp].node;
			sim_bw_track(s, t);
			/* Its siblings' speeds may depend on what it computes now (a resource
			 * profile, the memory part under POWER5): the whole core again. */
			sim_core_rates(s, s->vp[t->vp].core);
			return;
		case SIM_BARRIER: {
			if (t->phase.id < 0 || (unsigned)t->phase.id >= s->w->nb_barriers) {
				sim_fail(s, "workload %s: thread %d waits at barrier %d, which does not exist", s->w->name,
					 t->index, t->phase.id);
				return;
			}
			struct sim_barrier *b = &s->bar[t->phase.id];
			if (++b->arrived < b->count) {
				b->waiting[b->arrived - 1] = t;
				sim_block(s, t);
				return;
			}
			/* The last one releases the others and goes on. */
			b->rounds++;
			unsigned n = b->arrived - 1;
			b->arrived = 0;
			for (unsigned i = 0; i < n; i++)
				sim_release(s, b->waiting[i]);
			/* The first barrier to complete marks the iterations, unless the threads
			 * exchange with neighbours: then their exchanges do. */
			if (s->iter_barrier < 0 && !s->w->neighbours)
				s->iter_barrier = t->phase.id;
			if (s->iter_barrier == t->phase.id)
				sim_hw_iteration(s);
			continue;
		}
		case SIM_SLEEP: {
			if (t->phase.work <= 0)
				continue;
			sim_push(s, s->now + t->phase.work, SIM_EV_AWAKE, t->index, ++t->version);
			sim_block(s, t);
			return;
		}
		case SIM_SPAWN: {
			struct sim_ent *x = sim_thread_arg(s, t);
			if (!x)
				return;
			if (!s->w->dormant || !s->w->dormant[x->index] || x->state != SIM_T_BLOCKED || x->step) {
				sim_fail(s, "workload %s: thread %d spawns thread %d, which is not dormant", s->w->name,
					 t->index, x->index);
				return;
			}
			x->ready_at = s->now; /* its wait starts now */
			s->unspawned--;
			sim_thread_ready(s, x);
			continue;
		}
		case SIM_JOIN: {
			struct sim_ent *x = sim_thread_arg(s, t);
			if (!x)
				return;
			if (x->state == SIM_T_DONE)
				continue;
			if (x->joiner || x == t) {
				sim_fail(s, "workload %s: thread %d joins thread %d, which %s", s->w->name, t->index,
					 x->index, x == t ? "is itself" : "another thread joins");
				return;
			}
			x->joiner = t;
			sim_block(s, t);
			return;
		}
		case SIM_EXCHANGE:
			if (!s->w->neighbours) {
				sim_fail(s, "workload %s: thread %d exchanges with neighbours it does not have",
					 s->w->name, t->index);
				return;
			}
			if (sim_exchange(s, t))
				continue;
			sim_block(s, t);
			return;
		case SIM_END: {
			unsigned v = (unsigned)t->vp;
			sim_stop_run(s, t);
			t->state = SIM_T_DONE;
			t->end = s->now;
			s->alive--;
			for (struct sim_ent *b = t->parent; b; b = b->parent)
				b->alive--;
			if (t->joiner) {
				s->choosing_vp = (int)v; /* as in sim_slice */
				sim_thread_ready(s, t->joiner);
				s->choosing_vp = -1;
				t->joiner = NULL;
			}
			sim_vp_schedule(s, v);
			return;
		}
		}
	}
}

static void sim_complete(struct sim *s, struct sim_ent *t, unsigned long version)
{
	if (t->version != version || t->state != SIM_T_RUNNING)
		return;
	sim_settle(s, t);
	t->remaining = 0;
	sim_advance(s, t);
}

/* VP v's thread gets a time slice from now, if it has none running: something waits on
 * its path (a VP alone with its thread is never interrupted, which keeps long
 * computations to two events). */
void sim_arm_slice(struct sim *s, unsigned v)
{
	struct sim_vp *p = &s->vp[v];
	if (!p->cur || p->slice_armed)
		return;
	p->slice_armed = 1;
	p->slice_version++;
	sim_push(s, s->now + s->m->timeslice_s, SIM_EV_SLICE, (int)v, p->slice_version);
}

/* A VP's time slice ended: its thread goes back if something else waits on its path. */
static void sim_slice(struct sim *s, unsigned v, unsigned long version)
{
	struct sim_vp *p = &s->vp[v];
	if (p->slice_version != version || !p->cur)
		return;
	p->slice_armed = 0;
	struct sim_ent *t = p->cur;
	if (!sim_path_waiting(s, v) && !t->move_req)
		return;
	sim_stop_run(s, t);
	/* v chooses next, among t and the rest: the wake-up t's queue gets is for another
	 * VP, or it would be spent on v, which may take something else. */
	s->choosing_vp = (int)v;
	sim_thread_ready(s, t);
	s->choosing_vp = -1;
	sim_vp_schedule(s, v);
}

/* ---- set up and run ---- */

static int sim_setup(struct sim *s)
{
	const struct sim_workload *w = s->w;
	unsigned n = w->nb_threads;
	s->thread = calloc(n ? n : 1, sizeof(*s->thread));
	s->bubble = calloc(w->nb_bubbles ? w->nb_bubbles : 1, sizeof(*s->bubble));
	s->bar = calloc(w->nb_barriers ? w->nb_barriers : 1, sizeof(*s->bar));
	s->q = calloc(s->nq, sizeof(*s->q));
	s->vp = calloc(s->nv, sizeof(*s->vp));
	if (!s->thread || !s->bubble || !s->bar || !s->q || !s->vp)
		return ENOMEM;
	for (unsigned b = 0; b < w->nb_barriers; b++) {
		s->bar[b].count = w->barrier_count[b];
		s->bar[b].waiting = calloc(w->barrier_count[b] ? w->barrier_count[b] : 1, sizeof(struct sim_ent *));
		if (!s->bar[b].waiting)
			return ENOMEM;
	}
	s->qparent = malloc(s->nq * sizeof(*s->qparent));
	s->on_path = calloc(s->nq, 1);
	if (!s->qparent || !s->on_path)
		return ENOMEM;
	for (unsigned q = 0; q < s->nl; q++)
		s->qparent[q] = s->topo.levels[q].parent ? (int)s->topo.levels[q].parent->id : -1;
	for (unsigned v = 0; v < s->nv; v++)
		s->qparent[s->nl + v] = (int)s->topo.vps[v].leaf->id;
	s->nb_free = s->nv;
	s->choosing_vp = -1;
	for (unsigned v = 0; v < s->nv; v++) {
		const struct ma_level *leaf = s->topo.vps[v].leaf;
		s->vp[v] = (struct sim_vp){ .queue = (int)(s->nl + v),
					    .core = ma_topo_path_item(&s->topo, v, MA_LEVEL_CORE),
					    .node = leaf->numa, .kind = leaf->cpukind, .idle_since = 0 };
	}
	/* The root bubble, opened on the machine's queue; the workload's bubbles closed and
	 * members of their parents; threads members of theirs, ready. */
	s->root = (struct sim_ent){ .id = SIM_BUBBLE_TAG, .is_bubble = 1, .opened = 1, .index = -1, .queue = -1,
				    .item = 0, .last_item = -1, .fixed_item = -1 };
	unsigned *count = calloc(w->nb_bubbles + 1, sizeof(unsigned));
	if (!count)
		return ENOMEM;
	for (unsigned b = 0; b < w->nb_bubbles; b++)
		count[w->bubbles[b].parent < 0 ? w->nb_bubbles : (unsigned)w->bubbles[b].parent]++;
	for (unsigned t = 0; t < n; t++)
		count[w->thread_bubble[t] < 0 ? w->nb_bubbles : (unsigned)w->thread_bubble[t]]++;
	for (unsigned b = 0; b <= w->nb_bubbles; b++) {
		struct sim_ent *x = b < w->nb_bubbles ? &s->bubble[b] : &s->root;
		x->kids = calloc(count[b] ? count[b] : 1, sizeof(*x->kids));
		if (!x->kids) {
			free(count);
			return ENOMEM;
		}
	}
	free(count);
	for (unsigned b = 0; b < w->nb_bubbles; b++) {
		struct sim_ent *x = &s->bubble[b];
		x->id = SIM_BUBBLE_TAG | (b + 1);
		x->is_bubble = 1;
		x->index = (int)b;
		x->queue = x->item = x->last_item = x->fixed_item = -1;
		x->parent = w->bubbles[b].parent < 0 ? &s->root : &s->bubble[w->bubbles[b].parent];
		x->parent->kids[x->parent->nb_kids++] = x;
	}
	for (unsigned t = 0; t < n; t++) {
		struct sim_ent *x = &s->thread[t];
		x->id = t + 1;
		x->index = (int)t;
		x->queue = x->last_item = x->run_home = -1;
		x->vp = x->last_vp = x->last_core = x->home_node = x->bw_node = -1;
		x->parent = w->thread_bubble[t] < 0 ? &s->root : &s->bubble[w->thread_bubble[t]];
		x->parent->kids[x->parent->nb_kids++] = x;
		x->master = w->master && w->master[t];
		x->fixed_item = w->pin && w->pin[t] >= 0 ? (int)(s->nl + (unsigned)w->pin[t] % s->nv) : -1;
		/* A member of the root (or pinned) has a queue of its own; a member of a
		 * bubble waits in it until the bubble is burst. */
		x->item = x->fixed_item >= 0 ? x->fixed_item : x->parent == &s->root ? 0 : -1;
		x->phase.kind = SIM_COMPUTE; /* empty: sim_advance fetches the first phase */
	}
	for (unsigned t = 0; t < n; t++)
		for (struct sim_ent *b = s->thread[t].parent; b; b = b->parent)
			b->alive++;
	s->alive = n;
	s->iter_barrier = -1;
	if (w->neighbours) {
		s->nbuf = calloc(n ? n : 1, sizeof(*s->nbuf));
		if (!s->nbuf)
			return ENOMEM;
		for (unsigned t = 0; t < n; t++)
			s->ex_threads += sim_neighbours(s, t) > 0;
	}
	for (unsigned l = 0; l < s->nl; l++)
		if (s->topo.levels[l].arity > s->max_kids)
			s->max_kids = s->topo.levels[l].arity;
	s->pick_kids = calloc(s->max_kids ? s->max_kids : 1, sizeof(*s->pick_kids));
	s->idle_list = malloc(SIM_LIST_MAX * sizeof(*s->idle_list));
	if (!s->pick_kids || !s->idle_list)
		return ENOMEM;
	return 0;
}

static void sim_teardown(struct sim *s)
{
	if (s->s && s->s->priv_exit && s->priv)
		s->s->priv_exit(s->priv);
	free(s->priv);
	sim_hw_stop(s);
	for (unsigned b = 0; s->bubble && b < s->w->nb_bubbles; b++)
		free(s->bubble[b].kids);
	free(s->root.kids);
	for (unsigned b = 0; s->bar && b < s->w->nb_barriers; b++)
		free(s->bar[b].waiting);
	free(s->bar);
	free(s->bubble);
	free(s->thread);
	free(s->q);
	free(s->vp);
	free(s->heap);
	free(s->pick_kids);
	free(s->idle_list);
	free(s->qparent);
	free(s->on_path);
	free(s->nbuf);
	free(s->kind_speed);
	sim_bw_stop(s);
	ma_topo_free(&s->topo);
}

/* Nothing left to happen, and threads have not ended: says what they wait for. */
static void sim_stuck(struct sim *s)
{
	static const char *const what[] = { [SIM_BARRIER] = "at a barrier", [SIM_JOIN] = "in a join",
					    [SIM_EXCHANGE] = "in an exchange" };
	unsigned count[SIM_END + 1] = { 0 }, dormant = 0, first[SIM_END + 1];
	for (unsigned t = 0; t < s->w->nb_threads; t++) {
		const struct sim_ent *x = &s->thread[t];
		if (x->state != SIM_T_BLOCKED)
			continue;
		if (!x->step) {
			dormant++;
			continue;
		}
		if (!count[x->phase.kind]++)
			first[x->phase.kind] = t;
	}
	char buf[200] = "";
	size_t len = 0;
	for (unsigned k = 0; k <= SIM_END; k++)
		if (count[k] && k < sizeof(what) / sizeof(what[0]) && what[k] && len < sizeof(buf))
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%u wait %s (thread %u first)",
						len ? ", " : "", count[k], what[k], first[k]);
	if (dormant && len < sizeof(buf))
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%u are never spawned", len ? ", " : "",
					dormant);
	sim_fail(s, "workload %s never ends: %s", s->w->name, len ? buf : "threads never run");
}

/* A run that goes on forever (a barrier nobody else reaches) stops here. */
#define SIM_MAX_EVENTS 2000000000ul

/* One simulation of the run. *peak: where a snapshot was asked and none was taken, the
 * first instant at whose end the most threads were alive; else -1. */
static int sim_run_once(const struct sim_config *c, const struct sim_workload *w, struct sim_result *r, double *peak,
			char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	*peak = -1;
	struct sim *s = calloc(1, sizeof(*s));
	if (!s)
		return ENOMEM;
	s->c = c;
	s->m = &c->machine;
	s->w = w;
	s->err = err;
	s->errlen = errlen;
	s->trace = c->trace;
	s->rng = c->seed ? c->seed : 1;
	err[0] = 0;
	s->s = sim_strategy_find(c->strategy ? c->strategy : "null");
	if (!s->s) {
		snprintf(err, errlen, "strategy '%s' is not one of marcel's (marcel-sim --list says which are)",
			 c->strategy);
		free(s);
		return EINVAL;
	}
	struct ma_topo_options opt = { .spec = s->m->topology, .maxarity = 8, .smt = s->m->smt };
	char terr[200];
	int e = ma_topo_load(&s->topo, &opt, terr, sizeof(terr));
	if (e) {
		snprintf(err, errlen, "topology '%s': %s", s->m->topology, terr);
		free(s);
		return e;
	}
	s->nl = s->topo.nb_levels;
	s->nv = s->topo.nb_vps;
	s->nq = s->nl + s->nv;
	e = sim_setup(s);
	if (!e)
		e = sim_kind_speeds(s);
	if (!e)
		e = sim_bw_start(s);
	if (!e && s->s->priv_size) {
		s->priv = calloc(1, s->s->priv_size);
		e = s->priv ? 0 : ENOMEM;
	}
	if (!e && s->s->priv_init)
		e = s->s->priv_init(s->priv);
	if (!e)
		e = sim_hw_start(s);
	if (e) {
		if (!err[0])
			snprintf(err, errlen, "cannot set up the run: %s", strerror(e));
		sim_teardown(s);
		free(s);
		return e;
	}
	sim_trace_start(s);
	/* As a Marcel program does: its threads are created (ready in their bubbles), then
	 * it wakes the bubbles and calls marcel_bubble_sched_begin. The strategy places the
	 * bubbles knowing how many threads wait in each. */
	for (unsigned t = 0; t < w->nb_threads; t++) {
		if (w->dormant && w->dormant[t]) {
			s->thread[t].state = SIM_T_BLOCKED; /* until spawned */
			s->unspawned++;
		} else
			sim_thread_ready(s, &s->thread[t]);
	}
	sim_strategy_start(s);
	for (unsigned v = 0; v < s->nv; v++)
		sim_vp_schedule(s, v);
	while (s->alive && s->nb_ev && !s->failed) {
		/* Speeds under a bandwidth limit, once all of this instant's changes are in. */
		if (s->nb_bw_dirty && s->heap[0].t > s->now)
			sim_bw_flush(s);
		struct sim_event ev = sim_pop(s);
		if (c->snapshot && !s->snapshot_done && ev.t > s->now)
			sim_snapshot_watch(s, ev.t);
		s->now = ev.t;
		if (++s->events > SIM_MAX_EVENTS) {
			sim_fail(s, "no end after %lu events", SIM_MAX_EVENTS);
			break;
		}
		switch (ev.kind) {
		case SIM_EV_COMPLETE:
			sim_complete(s, &s->thread[ev.who], ev.version);
			break;
		case SIM_EV_SLICE:
			sim_slice(s, (unsigned)ev.who, ev.version);
			break;
		case SIM_EV_BEAT:
			sim_strategy_beat(s);
			break;
		case SIM_EV_AWAKE:
			if (s->thread[ev.who].version == ev.version && s->thread[ev.who].state == SIM_T_BLOCKED)
				sim_thread_ready(s, &s->thread[ev.who]);
			break;
		case SIM_EV_WAKE:
			s->vp[ev.who].wake_pending = 0;
			if (!s->vp[ev.who].cur)
				s->nb_free++;
			sim_vp_schedule(s, (unsigned)ev.who);
			break;
		}
	}
	if (!s->failed && s->alive)
		sim_stuck(s);
	sim_trace_end(s);
	e = s->failed ? EINVAL : 0;
	if (!e) {
		r->makespan = s->now;
		r->iterations = s->iterations;
		r->hw_changes = s->hw_changes;
		r->events = s->events;
		r->nb_threads = w->nb_threads;
		r->nb_vps = s->nv;
		snprintf(r->strategy, sizeof(r->strategy), "%s", s->s->name);
		r->snapshot = s->snap_when;
		r->snapshot_t = s->snapshot_done ? s->snap_t : -1;
		r->snapshot_until = s->snapshot_done ? s->snap_until : -1;
		r->snapshot_live = s->snap_live;
		if (c->snapshot && !s->snapshot_done && s->peak_live)
			*peak = s->peak_t;
		r->thread = calloc(w->nb_threads ? w->nb_threads : 1, sizeof(*r->thread));
		r->vp_level = calloc(s->nv, sizeof(int));
		if (!r->thread || !r->vp_level) {
			sim_result_free(r);
			e = ENOMEM;
		}
		for (unsigned t = 0; !e && t < w->nb_threads; t++)
			r->thread[t] = (struct sim_thread_result){ .run = s->thread[t].cpu, .wait = s->thread[t].wait,
								  .end = s->thread[t].end,
								  .latency = s->thread[t].latency,
								  .migrations = s->thread[t].migrations,
								  .last_vp = s->thread[t].last_vp };
		for (unsigned v = 0; !e && v < s->nv; v++)
			r->vp_level[v] = sim_hw_level_of(s, v);
	}
	sim_teardown(s);
	free(s);
	return e;
}

int sim_run(const struct sim_config *c, const struct sim_workload *w, struct sim_result *r, char *err, size_t errlen)
{
	double peak;
	int e = sim_run_once(c, w, r, &peak, err, errlen);
	if (e || c->snapshot_at >= 0 || peak < 0)
		return e;
	/* No iteration ended. The run is the same again (same seed), so the snapshot asked
	 * at the peak's time shows the peak; its trace is written already. */
	struct sim_config again = *c;
	again.trace = NULL;
	again.snapshot_at = peak;
	struct sim_result r2;
	e = sim_run_once(&again, w, &r2, &peak, err, errlen);
	if (!e && (r2.events != r->events || r2.snapshot != SIM_SNAP_AT)) {
		snprintf(err, errlen, "the run simulated again for its snapshot differs (%lu events, not %lu)", r2.events,
			 r->events);
		e = EINVAL;
	}
	if (e) {
		sim_result_free(r);
	} else {
		r->snapshot = SIM_SNAP_PEAK;
		r->snapshot_t = r2.snapshot_t;
		r->snapshot_until = r2.snapshot_until;
		r->snapshot_live = r2.snapshot_live;
	}
	sim_result_free(&r2);
	return e;
}

void sim_result_free(struct sim_result *r)
{
	free(r->thread);
	free(r->vp_level);
	memset(r, 0, sizeof(*r));
}
