/*
 * The simulated scheduler: run queues that mirror the topology, bubbles that hold their
 * threads while closed and scatter them on a queue when burst, find_next, and the
 * strategy's hooks. The hooks are the library's own (the ops tables of strategies/),
 * called on views of this state (view.c); their decisions are carried out here, by the
 * rules bubbles/ma_view.h states for each kind. What the executor of the library also
 * checks under its locks (that an entity is still where the view saw it) is checked
 * here against the simulated state, and a decision that no longer applies is skipped,
 * as there.
 *
 * Simplifications, said in doc/simulator.md: priorities are the entities' own (strategies
 * do not set them here), a served closed bubble stays at its place in its queue, WAKE
 * wakes the nearest idle VP, and a regeneration (GATHER) waits for no running thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "ma_sim_int.h"

/* ---- queues ---- */

int sim_parent_queue(const struct sim *s, int q)
{
	return s->qparent[q];
}

int sim_queue_within(const struct sim *s, int q, int anc)
{
	for (; q >= 0; q = sim_parent_queue(s, q))
		if (q == anc)
			return 1;
	return 0;
}

int sim_queue_sees(const struct sim *s, int q, unsigned v)
{
	for (int x = s->vp[v].queue; x >= 0; x = sim_parent_queue(s, x))
		if (x == q)
			return 1;
	return 0;
}

static int sim_runnable(const struct sim_ent *e)
{
	return !e->is_bubble || e->ready;
}

/*
 * A queue keeps its runnable entities (threads, closed bubbles with ready threads) ahead
 * of its closed bubbles with none, each part in the order it came: find_next then stops
 * at the head, where the library's scans past the empty ones (a queue of thousands of
 * them costs the simulator, not the machine it models). `idle` is the first entity of the
 * second part, NULL if there is none.
 */
static void sim_link(struct sim_queue *x, struct sim_ent *e)
{
	struct sim_ent *before = sim_runnable(e) ? x->idle : NULL;
	e->next = before;
	e->prev = before ? before->prev : x->tail;
	if (e->prev)
		e->prev->next = e;
	else
		x->head = e;
	if (before)
		before->prev = e;
	else
		x->tail = e;
	if (!sim_runnable(e) && !x->idle)
		x->idle = e;
}

static void sim_unlink(struct sim_queue *x, struct sim_ent *e)
{
	if (x->idle == e)
		x->idle = e->next;
	if (e->prev)
		e->prev->next = e->next;
	else
		x->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		x->tail = e->prev;
	e->prev = e->next = NULL;
}

/* A closed bubble's ready count changes: its queue's count of runnable entities too, and
 * its part of the queue if it became runnable or stopped being so. */
/* What an entity adds to its queue's ready count (ma_vitem.ready). */
static unsigned sim_ready_of(const struct sim_ent *e)
{
	return e->is_bubble && e->ready ? e->ready : 1;
}

void sim_ready_add(struct sim *s, struct sim_ent *b, int delta)
{
	int was = sim_runnable(b);
	if (b->queue >= 0)
		s->q[b->queue].ready -= sim_ready_of(b);
	b->ready = (unsigned)((int)b->ready + delta);
	if (b->queue >= 0)
		s->q[b->queue].ready += sim_ready_of(b);
	int now = sim_runnable(b);
	if (b->queue < 0 || was == now)
		return;
	struct sim_queue *x = &s->q[b->queue];
	x->runnable = x->runnable - (unsigned)was + (unsigned)now;
	sim_unlink(x, b);
	sim_link(x, b);
}

void sim_enqueue(struct sim *s, struct sim_ent *e, int q)
{
	struct sim_queue *x = &s->q[q];
	x->runnable += (unsigned)sim_runnable(e);
	x->ready += sim_ready_of(e);
	for (int y = q; y >= 0; y = sim_parent_queue(s, y))
		s->q[y].sub_queued++;
	e->queue = q;
	sim_link(x, e);
	x->n++;
}

void sim_dequeue(struct sim *s, struct sim_ent *e)
{
	if (e->queue < 0)
		return;
	struct sim_queue *x = &s->q[e->queue];
	x->runnable -= (unsigned)sim_runnable(e);
	x->ready -= sim_ready_of(e);
	for (int y = e->queue; y >= 0; y = sim_parent_queue(s, y))
		s->q[y].sub_queued--;
	sim_unlink(x, e);
	x->n--;
	e->queue = -1;
}

/* The closed bubble whose cache a thread without a queue of its own waits in: its
 * outermost closed ancestor below an opened one. */
struct sim_ent *sim_unit_of(struct sim_ent *t)
{
	struct sim_ent *u = NULL;
	for (struct sim_ent *b = t->parent; b && !b->opened; b = b->parent)
		u = b;
	return u;
}

/* The VPs of queue q's span: first .. first + n - 1. */
static void sim_span(const struct sim *s, int q, unsigned *first, unsigned *n)
{
	if (q >= (int)s->nl) {
		*first = (unsigned)q - s->nl;
		*n = 1;
	} else {
		*first = s->topo.levels[q].first_vp;
		*n = s->topo.levels[q].nb_vps;
	}
	if (*first + *n > s->nv)
		*n = *first < s->nv ? s->nv - *first : 0;
}

enum { SIM_IDLE_SEEING, SIM_IDLE_ANY, SIM_BUSY_SEEING };

/* The first VP of span [first, first + n) that is `what`, going outward from `from` (VP
 * numbers follow the topology: the nearer in number, the nearer in the tree): from,
 * from+1, from-1, from+2... -1 if none. */
static int sim_outward(const struct sim *s, int q, unsigned first, unsigned n, int from, int what)
{
	if (!n)
		return -1;
	if (from < (int)first || from >= (int)(first + n))
		from = (int)first;
	unsigned reach = (unsigned)from - first > first + n - 1 - (unsigned)from ? (unsigned)from - first
										    : first + n - 1 - (unsigned)from;
	for (unsigned d = 0; d <= reach; d++)
		for (int side = 0; side < (d ? 2 : 1); side++) {
			int v = side ? from - (int)d : from + (int)d;
			if (v < (int)first || v >= (int)(first + n))
				continue;
			const struct sim_vp *p = &s->vp[v];
			int ok = what == SIM_BUSY_SEEING ? p->cur && !p->slice_armed
							 : !p->cur && !p->wake_pending && v != s->choosing_vp;
			if (ok && (what == SIM_IDLE_ANY || sim_queue_sees(s, q, (unsigned)v)))
				return v;
		}
	return -1;
}

/* Wakes an idle VP for what was put on queue q: one that looks at q, the nearest to
 * near_vp first; if none does and the strategy steals (decide_vp_idle), the nearest idle
 * one elsewhere, which will look around. With none idle, busy VPs under q get a time
 * slice, one per entity waiting there. */
void sim_notify(struct sim *s, int q, int near_vp)
{
	unsigned first, n;
	sim_span(s, q, &first, &n);
	int best = -1;
	if (s->nb_free) {
		best = sim_outward(s, q, first, n, near_vp, SIM_IDLE_SEEING);
		if (best < 0 && s->s->decide_vp_idle)
			best = sim_outward(s, q, 0, s->nv, near_vp, SIM_IDLE_ANY);
	}
	if (best < 0) {
		for (unsigned k = 0; k < s->q[q].n; k++) {
			int v = sim_outward(s, q, first, n, near_vp, SIM_BUSY_SEEING);
			if (v < 0)
				break;
			sim_arm_slice(s, (unsigned)v);
		}
		return;
	}
	s->vp[best].wake_pending = 1;
	s->nb_free--;
	/* An idle VP takes a moment to notice (wake_us): among several woken at once, which
	 * reaches a shared queue first is chance, as on a real machine. */
	sim_push(s, s->now + s->m->wake_s * sim_random(s), SIM_EV_WAKE, best, 0);
}

/* ---- bubbles ---- */

/* Takes a ready thread out of closed bubble b's cache (depth first, member order). */
static struct sim_ent *sim_cache_take(struct sim *s, struct sim_ent *b, struct sim_ent *unit)
{
	for (unsigned i = 0; i < b->nb_kids; i++) {
		struct sim_ent *k = b->kids[i];
		if (!k->is_bubble && k->in_cache && k->state == SIM_T_READY) {
			k->in_cache = 0;
			for (struct sim_ent *x = k->parent; x; x = x->parent) {
				sim_ready_add(s, x, -1);
				if (x == unit)
					break;
			}
			return k;
		}
		if (k->is_bubble && !k->opened && k->ready) {
			struct sim_ent *t = sim_cache_take(s, k, unit);
			if (t)
				return t;
		}
	}
	return NULL;
}

/* Bursts closed bubble b on queue q: its members are scheduled there. */
static int sim_burst(struct sim *s, struct sim_ent *b, int q)
{
	if (!b->is_bubble || b->opened || (b->parent && !b->parent->opened))
		return 0;
	sim_dequeue(s, b);
	b->opened = 1;
	b->item = b->last_item = q;
	b->ready = 0;
	for (unsigned i = 0; i < b->nb_kids; i++) {
		struct sim_ent *k = b->kids[i];
		if (k->is_bubble) {
			k->item = q;
			sim_enqueue(s, k, q);
			continue;
		}
		if (k->fixed_item >= 0)
			continue;
		k->item = q;
		if (k->in_cache) {
			k->in_cache = 0;
			sim_enqueue(s, k, q);
		}
	}
	sim_notify(s, q, -1);
	return 1;
}

/* Closes opened bubble b: its members that wait come back into it (its sub-bubbles
 * closed too); the running ones come back when they next wait. */
static void sim_close(struct sim *s, struct sim_ent *b)
{
	b->opened = 0;
	b->ready = 0;
	for (unsigned i = 0; i < b->nb_kids; i++) {
		struct sim_ent *k = b->kids[i];
		if (k->is_bubble) {
			sim_dequeue(s, k);
			if (k->opened)
				sim_close(s, k);
			k->item = -1;
			b->ready += k->ready;
			continue;
		}
		if (k->fixed_item >= 0)
			continue;
		k->item = -1;
		if (k->queue >= 0) {
			sim_dequeue(s, k);
			k->in_cache = 1;
		}
		b->ready += k->in_cache;
	}
}

static void sim_submit(struct sim *s, struct sim_ent *b);

/* A regeneration: b closes and is submitted again (placed by the strategy). */
static int sim_gather(struct sim *s, struct sim_ent *b)
{
	if (!b->is_bubble || !b->opened || b == &s->root)
		return 0;
	sim_close(s, b);
	sim_submit(s, b);
	return 1;
}

static int sim_place(struct sim *s, struct sim_ent *b, int q, unsigned flags)
{
	if (!b->is_bubble || b->opened || (b->parent && !b->parent->opened))
		return 0;
	sim_dequeue(s, b);
	b->item = q;
	if (!(flags & MA_D_NOQUEUE)) {
		sim_enqueue(s, b, q);
		if (b->ready)
			sim_notify(s, q, -1);
	}
	return 1;
}

static void sim_requeue(struct sim *s, struct sim_ent *e, int q);

/* MOVE and STEAL: a queued entity to queue q; a thread running or blocked keeps its new
 * queue for when it waits again. */
static int sim_move(struct sim *s, struct sim_ent *e, int q, int from, unsigned flags)
{
	if (q < 0) {
		if (!e->is_bubble && (flags & MA_D_UNSTRAY)) {
			e->stray = 0;
			return 1;
		}
		return 0;
	}
	if (from >= 0 && e->queue != from)
		return 0;
	if (e->is_bubble) {
		if (e->opened || e->queue < 0)
			return 0;
	} else if (e->fixed_item >= 0 || (e->queue < 0 && e->item < 0)) {
		return 0; /* pinned, or waiting in a closed bubble */
	}
	if (flags & MA_D_STRAY)
		e->stray = 1;
	if (flags & MA_D_UNSTRAY)
		e->stray = 0;
	sim_requeue(s, e, q);
	return 1;
}

/* e's queue is q from now on: queued, it moves there now; running on a VP that does not
 * see q, it leaves at its time slice's end. */
static void sim_requeue(struct sim *s, struct sim_ent *e, int q)
{
	e->item = q;
	if (e->queue >= 0) {
		sim_dequeue(s, e);
		sim_enqueue(s, e, q);
		if (!e->is_bubble || e->ready)
			sim_notify(s, q, -1);
	} else if (!e->is_bubble && e->state == SIM_T_RUNNING && !sim_queue_sees(s, q, (unsigned)e->vp)) {
		/* As the library's move_req: it leaves its VP at the end of its time slice, even
		 * if nothing else waits there, so that the move takes effect. */
		e->move_req = 1;
		sim_arm_slice(s, (unsigned)e->vp);
	}
}

void sim_pin_move(struct sim *s, struct sim_ent *t, unsigned v)
{
	int q = (int)(s->nl + v % s->nv);
	if (t->fixed_item == q)
		return;
	t->fixed_item = q;
	sim_requeue(s, t, q);
}

/* ---- carrying decisions out ---- */

/* ma_vitem_load_exact of queue q's subtree, now. */
static long sim_load_exact(struct sim *s, int q)
{
	long load = 0;
	for (unsigned x = 0; x < s->nq; x++) {
		int in = 0;
		for (int y = (int)x; y >= 0 && !in; y = sim_parent_queue(s, y))
			in = y == q;
		if (!in)
			continue;
		for (struct sim_ent *e = s->q[x].head; e; e = e->next)
			load += e->is_bubble ? (long)e->ready : 1;
	}
	for (unsigned v = 0; v < s->nv; v++)
		if (s->vp[v].cur && s->vp[v].cur->item >= 0) {
			int in = 0;
			for (int y = s->vp[v].cur->item; y >= 0 && !in; y = sim_parent_queue(s, y))
				in = y == q;
			load += in;
		}
	return load;
}

static unsigned sim_queue_vps(const struct sim *s, int q)
{
	return q >= (int)s->nl ? 1 : s->topo.levels[q].nb_vps;
}

/* MA_D_GUARD: the theft still leaves the thief no busier per VP than its victim. */
static int sim_guard(struct sim *s, const struct ma_decision *d, const struct sim_ent *e)
{
	long x = e->is_bubble ? (long)e->ready : 1;
	long lf = sim_load_exact(s, d->guard_from), lt = sim_load_exact(s, d->guard_to);
	long vf = sim_queue_vps(s, d->guard_from), vt = sim_queue_vps(s, d->guard_to);
	return lf > vf && (lf - x) * vt - (lt + x) * vf >= d->min_gap;
}

struct sim_ent *sim_entity(struct sim *s, uint64_t id)
{
	if (id == s->root.id)
		return &s->root;
	if (id & SIM_BUBBLE_TAG) {
		uint64_t b = (id & ~SIM_BUBBLE_TAG) - 1;
		return b < s->w->nb_bubbles ? &s->bubble[b] : NULL;
	}
	return id >= 1 && id <= s->w->nb_threads ? &s->thread[id - 1] : NULL;
}

static int sim_decide_one(struct sim *s, const struct ma_decision *d)
{
	int nq = (int)s->nq;
	if (d->kind == MA_D_WAKE) {
		if (d->item < 0 || d->item >= nq)
			return 0;
		sim_notify(s, d->item, -1);
		return 1;
	}
	struct sim_ent *e = sim_entity(s, d->entity);
	if (!e || d->item >= nq)
		return 0;
	switch (d->kind) {
	case MA_D_BURST:
		return d->item >= 0 && sim_burst(s, e, d->item);
	case MA_D_PLACE:
		return d->item >= 0 && sim_place(s, e, d->item, d->flags);
	case MA_D_MOVE:
		return sim_move(s, e, d->item, -1, d->flags);
	case MA_D_STEAL:
		if (d->item < 0 || d->from_item < 0 || d->from_item >= nq)
			return 0;
		if ((d->flags & MA_D_GUARD) && !sim_guard(s, d, e))
			return 0;
		return sim_move(s, e, d->item, d->from_item, d->flags);
	case MA_D_GATHER:
		return sim_gather(s, e);
	case MA_D_UNPLACE:
		if (!e->is_bubble || e->opened)
			return 0;
		sim_dequeue(s, e);
		e->item = -1;
		return 1;
	default:
		return 0; /* SERVE outside a pick: nothing to serve */
	}
}

void sim_execute(struct sim *s, const struct ma_dlist *l)
{
	int prev = 1, chain_done = 0;
	for (unsigned i = 0; i < l->n && !s->failed; i++) {
		const struct ma_decision *d = &l->d[i];
		int done;
		if ((d->flags & MA_D_ELSE) && chain_done) {
			done = 1;
		} else if ((d->flags & MA_D_THEN) && !prev) {
			done = 0;
		} else {
			done = sim_decide_one(s, d);
		}
		chain_done = (d->flags & MA_D_ELSE) ? chain_done || done : done;
		prev = done;
	}
}

/* ---- the hooks ---- */

/* Calls a serialised hook on a view of root (NULL: none) and carries its list out, with
 * the rounds it asks for (ma_dlist.again, twice at most). */
static void sim_serialised(struct sim *s, void (*hook)(const struct ma_view *, void *, struct ma_dlist *),
			   struct sim_ent *root)
{
	/* Its own list: carrying one out may call a hook again (a GATHER resubmits). */
	struct ma_decision *storage = malloc(SIM_LIST_MAX * sizeof(*storage));
	if (!storage) {
		sim_fail(s, "out of memory for a decision list");
		return;
	}
	unsigned flags = s->s->view_detail;
	for (int round = 0; round < 3 && !s->failed; round++) {
		struct ma_view v;
		if (sim_view_build(s, &v, root, -1, flags)) {
			sim_fail(s, "out of memory for a view");
			break;
		}
		v.round = (unsigned char)round;
		struct ma_dlist l;
		ma_dlist_init(&l, storage, SIM_LIST_MAX);
		hook(&v, s->priv, &l);
		sim_view_free(&v);
		sim_execute(s, &l);
		if (l.beat && s->s->heartbeat_us && !s->beat_armed) {
			s->beat_armed = 1;
			sim_push(s, s->now + (double)s->s->heartbeat_us * 1e-6, SIM_EV_BEAT, 0, 0);
		}
		if (!l.again)
			break;
		flags |= l.again & ~MA_VIEW_AGAIN;
	}
	free(storage);
}

/* A woken closed bubble whose parent is opened: the strategy places it (default: on its
 * parent's queue). */
static void sim_submit(struct sim *s, struct sim_ent *b)
{
	if (s->s->decide_submit) {
		sim_serialised(s, s->s->decide_submit, b);
		if (b->queue >= 0 || b->opened || b->item >= 0)
			return;
	}
	int q = b->parent && b->parent->item >= 0 ? b->parent->item : 0;
	sim_place(s, b, q, 0);
}

void sim_strategy_start(struct sim *s)
{
	/* The program wakes its bubbles (each submitted), then marcel_bubble_sched_begin. */
	for (unsigned i = 0; i < s->root.nb_kids; i++)
		if (s->root.kids[i]->is_bubble)
			sim_submit(s, s->root.kids[i]);
	if (s->s->decide_start)
		sim_serialised(s, s->s->decide_start, &s->root);
}

void sim_strategy_beat(struct sim *s)
{
	s->beat_armed = 0;
	if (s->s->decide_tick)
		sim_serialised(s, s->s->decide_tick, NULL);
}

void sim_strategy_vp_idle(struct sim *s, unsigned v)
{
	struct ma_view view;
	if (sim_view_build(s, &view, NULL, (int)v, MA_VIEW_READY)) {
		sim_fail(s, "out of memory for a view");
		return;
	}
	struct ma_dlist l;
	ma_dlist_init(&l, s->idle_list, SIM_LIST_MAX);
	s->s->decide_vp_idle(&view, s->priv, &l);
	sim_view_free(&view);
	/* Nothing it carries out calls this hook again (a STEAL, MOVE or WAKE only queues
	 * and wakes: the woken VP looks later, at its event). */
	sim_execute(s, &l);
}

/* The strategy's answer about closed bubble b met on queue q by VP v. */
static struct ma_decision sim_pick(struct sim *s, struct sim_ent *b, int q, unsigned v)
{
	struct ma_decision serve = { .kind = MA_D_SERVE, .entity = b->id, .item = q };
	if (!s->s->decide_pick)
		return serve;
	struct ma_pick_view pv;
	sim_pick_view(s, &pv, b, q, v);
	struct ma_decision d = s->s->decide_pick(&pv, s->priv);
	if (d.flags & (MA_D_KIDS | MA_D_LOAD)) {
		if (d.flags & MA_D_KIDS)
			sim_pick_kids(s, &pv, v);
		if (d.flags & MA_D_LOAD)
			sim_pick_load(s, &pv, b);
		d = s->s->decide_pick(&pv, s->priv);
		d.flags &= ~(unsigned)(MA_D_KIDS | MA_D_LOAD);
	}
	if (d.entity != b->id || (d.kind == MA_D_BURST && d.item != q) || (d.kind == MA_D_MOVE && d.item < 0) ||
	    (d.kind != MA_D_BURST && d.kind != MA_D_MOVE))
		return serve;
	return d;
}

/* The most urgent entity on VP v's path: highest priority, the nearest queue on ties;
 * a closed bubble counts only with ready threads in it. */
static struct sim_ent *sim_best(struct sim *s, unsigned v)
{
	struct sim_ent *best = NULL;
	for (int q = s->vp[v].queue; q >= 0; q = sim_parent_queue(s, q))
		for (struct sim_ent *e = s->q[q].runnable ? s->q[q].head : NULL; e; e = e->next)
			if ((!e->is_bubble || e->ready) && (!best || e->prio > best->prio)) {
				best = e;
				break;
			}
	return best;
}

struct sim_ent *sim_find_next(struct sim *s, unsigned v)
{
	/* A bubble moved to the back of its queue, or elsewhere, is looked at again; a
	 * strategy that keeps moving is served in the end. */
	for (int tries = 0; tries < 64 && !s->failed; tries++) {
		struct sim_ent *e = sim_best(s, v);
		if (!e)
			return NULL;
		if (!e->is_bubble) {
			sim_dequeue(s, e);
			return e;
		}
		int q = e->queue;
		struct ma_decision d = tries < 63 ? sim_pick(s, e, q, v) : (struct ma_decision){ .kind = MA_D_SERVE };
		if (d.kind == MA_D_BURST) {
			sim_burst(s, e, q);
		} else if (d.kind == MA_D_MOVE) {
			sim_dequeue(s, e);
			e->item = d.item;
			sim_enqueue(s, e, d.item);
			if (!sim_queue_sees(s, d.item, v))
				sim_notify(s, d.item, (int)v);
		} else {
			struct sim_ent *t = sim_cache_take(s, e, e);
			if (t)
				return t;
			return NULL;
		}
	}
	return NULL;
}

/* ---- the strategies linked in ---- */

#define MA_STRATEGY(x) extern const struct ma_strategy ma_strategy_##x;
#include "ma_strategy_list.h"
#undef MA_STRATEGY

static const struct ma_strategy *const sim_strategies[] = {
#define MA_STRATEGY(x) &ma_strategy_##x,
#include "ma_strategy_list.h"
#undef MA_STRATEGY
};

const struct ma_strategy *sim_strategy_find(const char *name)
{
	for (unsigned i = 0; i < sizeof(sim_strategies) / sizeof(sim_strategies[0]); i++)
		if (!strcmp(name, sim_strategies[i]->name) ||
		    (sim_strategies[i]->alias && !strcmp(name, sim_strategies[i]->alias)))
			return sim_strategies[i];
	return NULL;
}

void sim_strategy_list(FILE *out)
{
	for (unsigned i = 0; i < sizeof(sim_strategies) / sizeof(sim_strategies[0]); i++)
		fprintf(out, "%-8s %s\n", sim_strategies[i]->name, sim_strategies[i]->description);
}
