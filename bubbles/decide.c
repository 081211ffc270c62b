/*
 * The decision executor (ma_view_build.h): carries out a strategy's decisions with the
 * placement primitives, each one checked under its locks against what the view saw.
 *
 * Locks, per kind (ma_bubble.h's order: bubbles before queues, ancestors first, never two
 * queues at once):
 *  - PLACE, MOVE of a bubble, BURST, GATHER, UNPLACE: the bubble's lock (inside the
 *    *_seen primitives of holder.c), then what the primitive takes below it (its queue,
 *    its members, their queues).
 *  - MOVE of a thread: the bubble the view saw it a member of (proving the thread still
 *    lives), then the queue it is scheduled on; queued on the new one once both are
 *    released.
 *  - STEAL of a bubble: the bubble, then the queue it waits on; then the target queue, the
 *    first one released. STEAL of a thread: the queue it waits on alone; queued on the
 *    target once released. A guard's loads are measured before any lock is taken, each
 *    queue locked alone.
 *  - WAKE: none (the idle workers' own protocol).
 */
#include "ma_view_build.h"
#include "ma_trace.h"

/* What the view (or an earlier decision of the list) expects of bubble slot s. */
static struct ma_seen ma_slot_seen(const struct ma_vslot *s)
{
	return (struct ma_seen){
		.uid = s->n.id,
		.status = s->status,
		.sched = s->sched,
		.fixed_item = s->fixed_item,
	};
}

static struct ma_bubble *ma_slot_bubble(const struct ma_vslot *s)
{
	return ma_bubble_of_entity(s->e);
}

/* After bubble slot s burst on rq: what the burst did to the expectations of its subtree
 * (ma_bubble_burst): members that were scheduled on s's bubble go to rq, closed
 * sub-bubbles become units on rq, and the threads of their subtrees that targeted s's
 * bubble target them. Threads waiting in s's cache wait in their new holder. */
static void ma_expect_retarget(const struct ma_vnode *x, struct ma_holder *from, struct ma_holder *to)
{
	for (unsigned i = 0; i < x->nb_children; i++) {
		struct ma_vslot *c = (struct ma_vslot *)(void *)x->children[i];
		if (c->spent)
			continue;
		if (!c->n.is_bubble) {
			if (c->sched == from)
				c->sched = to;
			if (c->ready == from)
				c->ready = to;
			continue;
		}
		ma_expect_retarget(&c->n, from, to);
	}
}

static void ma_expect_burst(struct ma_vslot *s, struct ma_runqueue *rq)
{
	struct ma_holder *bh = &ma_slot_bubble(s)->hold;
	s->sched = &rq->hold;
	s->ready = NULL;
	s->status = MA_BUBBLE_OPENED;
	for (unsigned i = 0; i < s->n.nb_children; i++) {
		struct ma_vslot *c = (struct ma_vslot *)(void *)s->n.children[i];
		if (c->spent)
			continue;
		if (!c->n.is_bubble) {
			if (c->sched == bh)
				c->sched = &rq->hold;
			if (c->ready == bh)
				c->ready = &rq->hold;
			continue;
		}
		if (c->status == MA_BUBBLE_OPENED)
			continue;
		c->sched = &rq->hold;
		ma_expect_retarget(&c->n, bh, &ma_slot_bubble(c)->hold);
	}
}

/* ---- bubbles ---- */

/* Whether bubble slot s may be scheduled on rq: woken (a bubble never woken waits for its
 * wake-up, which submits it), and not fixed elsewhere by scheduleonlevel. */
static int ma_may_schedule(const struct ma_vslot *s, const struct ma_runqueue *rq)
{
	return s->n.is_bubble && s->n.woken && (s->fixed_item < 0 || ma_view_queue_number(rq) == s->fixed_item);
}

static int ma_exec_place(struct ma_vslot *s, struct ma_runqueue *rq, unsigned flags)
{
	if (!ma_may_schedule(s, rq))
		return 0;
	struct ma_seen seen = ma_slot_seen(s);
	if (!ma_bubble_place_seen(ma_slot_bubble(s), rq, (flags & MA_D_NOQUEUE) != 0, &seen))
		return 0;
	s->sched = &rq->hold;
	s->ready = NULL;
	return 1;
}

/* MOVE of a bubble: as ma_entity_move, only a closed one already placed on a queue. */
static int ma_exec_move_bubble(struct ma_vslot *s, struct ma_runqueue *rq)
{
	if (s->fixed_item >= 0 || s->status != MA_BUBBLE_CLOSED || !s->sched || s->sched->type != MA_RUNQUEUE_HOLDER)
		return 0;
	return ma_exec_place(s, rq, 0);
}

static int ma_exec_burst(struct ma_vslot *s, struct ma_runqueue *rq)
{
	if (!ma_may_schedule(s, rq))
		return 0;
	struct ma_seen seen = ma_slot_seen(s);
	if (!ma_bubble_burst_seen(ma_slot_bubble(s), rq, &seen))
		return 0;
	ma_expect_burst(s, rq);
	return 1;
}

static int ma_exec_gather(struct ma_vslot *s)
{
	if (!s->n.is_bubble)
		return 0;
	struct ma_seen seen = ma_slot_seen(s);
	if (!ma_bubble_gather_seen(ma_slot_bubble(s), &seen))
		return 0;
	/* Its threads come back in their time, and once closed it is handed to the strategy
	 * again: nothing more about it in this list. */
	s->spent = 1;
	return 1;
}

static int ma_exec_unplace(struct ma_vslot *s)
{
	if (!s->n.is_bubble)
		return 0;
	struct ma_seen seen = ma_slot_seen(s);
	if (!ma_bubble_unplace_seen(ma_slot_bubble(s), &seen))
		return 0;
	s->sched = NULL;
	s->ready = NULL;
	return 1;
}

/* ---- threads ---- */

static void ma_stray_mark(struct marcel_task *t, unsigned flags)
{
	if (flags & MA_D_STRAY)
		atomic_store_explicit(&t->req.stray, 1, memory_order_relaxed);
	else if (flags & MA_D_UNSTRAY)
		atomic_store_explicit(&t->req.stray, 0, memory_order_relaxed);
}

/* MOVE of a thread scheduled on a run queue (ma_entity_move's cases): queued, it is
 * requeued on rq; running or blocked, it goes there when next ready. */
static int ma_exec_move_task(struct ma_vslot *s, struct ma_runqueue *rq, unsigned flags)
{
	struct marcel_task *t = ma_task_of_entity(s->e);
	struct ma_holder *h = s->sched;
	if (!h || h->type != MA_RUNQUEUE_HOLDER || s->n.state == MA_V_BORN || s->n.state == MA_V_DEAD)
		return 0;
	/* The thread has no reference: it lives while it is a member of the bubble the view
	 * saw it in (its exit takes it out under that bubble's lock), while it is queued on
	 * the queue we hold, or while it is the caller. */
	struct ma_bubble *p = s->in;
	if (p)
		ma_spin_lock(&p->hold.lock);
	int alive = p && ma_entity_parent(&t->e) == p;
	ma_spin_lock(&h->lock);
	int ok = ma_read_once(&t->e.sched_holder) == h;
	if (ok && !alive)
		alive = ma_read_once(&t->e.ready_holder) == h || t == ma_task_self();
	ok = ok && alive && t->id == s->n.id && !t->pinned;
	if (ok) {
		int st = atomic_load_explicit(&t->state, memory_order_relaxed);
		ok = st != MA_TASK_BORN && st != MA_TASK_DEAD && st != MA_TASK_FREE;
	}
	int moved = 0, queued = 0;
	if (ok && h != &rq->hold) {
		queued = ma_read_once(&t->e.ready_holder) == h;
		if (queued)
			ma_rq_dequeue_locked(ma_rq_of_holder(h), &t->e);
		ma_store_release(&t->e.sched_holder, &rq->hold);
		moved = 1;
	}
	if (ok)
		ma_stray_mark(t, flags);
	ma_spin_unlock(&h->lock);
	if (p)
		ma_spin_unlock(&p->hold.lock);
	if (!ok)
		return 0;
	if (moved) {
		/* As ma_entity_move_to_holder: off its old queue it waits for nobody else, so it
		 * cannot end before it is queued again; a running one requeues at its next
		 * yield. */
		if (queued)
			ma_entity_enqueue(&t->e);
		else
			atomic_store(&t->req.move_req, 1);
		MA_TRACE(MA_TR_RQ_SWITCH, s->n.id, rq->level->id, rq->name);
	}
	s->sched = &rq->hold;
	s->ready = NULL;
	return 1;
}

/* A MOVE to no queue with MA_D_UNSTRAY, about the caller (a stray hook's thread, which is
 * not on a queue: gathered into its bubble): only its mark is cleared. */
static int ma_exec_unstray(struct ma_vslot *s)
{
	struct marcel_task *t = ma_task_of_entity(s->e);
	if (t != ma_task_self())
		return 0;
	atomic_store_explicit(&t->req.stray, 0, memory_order_relaxed);
	return 1;
}

/* ---- stealing ---- */

/* A STEAL's guard, with the loads measured before any lock (ma_view_load_now). */
struct ma_guard {
	int on;
	long long from, to, from_vps, to_vps, min_gap;
};

static void ma_guard_measure(struct ma_guard *g, const struct ma_decision *d)
{
	g->on = (d->flags & MA_D_GUARD) != 0;
	if (!g->on)
		return;
	const struct ma_worker *self = ma_worker_self();
	g->from = (long long)ma_view_load_now(d->guard_from, self);
	g->to = (long long)ma_view_load_now(d->guard_to, self);
	g->from_vps = ma_view_queue_vps(d->guard_from);
	g->to_vps = ma_view_queue_vps(d->guard_to);
	g->min_gap = d->min_gap;
}

/* Whether taking x threads passes the guard: the victim has more threads than VPs (what
 * waits there otherwise is about to run there), and the thief ends no busier per VP than
 * the victim, by min_gap (it could take them back at once). */
static int ma_guard_ok(const struct ma_guard *g, long long x)
{
	if (!g->on)
		return 1;
	if (!g->from_vps || !g->to_vps)
		return 0;
	return g->from > g->from_vps && (g->from - x) * g->to_vps - (g->to + x) * g->from_vps >= g->min_gap;
}

/* A thread waiting on `from` to `to`, if still there: off `from` and retargeted under its
 * lock, then queued on `to`. */
static int ma_steal_task(struct ma_vslot *s, struct ma_runqueue *from, struct ma_runqueue *to,
			 const struct ma_guard *g, unsigned flags)
{
	struct marcel_task *t = ma_task_of_entity(s->e);
	ma_spin_lock(&from->hold.lock);
	/* Queued on the queue we hold, it lives: its fields can be read. */
	int ok = ma_read_once(&t->e.ready_holder) == &from->hold &&
		 ma_read_once(&t->e.sched_holder) == &from->hold && t->id == s->n.id &&
		 !t->pinned && !atomic_load_explicit(&t->req.suspend_req, memory_order_relaxed) && ma_guard_ok(g, 1);
	if (ok) {
		ma_rq_dequeue_locked(from, &t->e);
		ma_stray_mark(t, flags);
		ma_store_release(&t->e.sched_holder, &to->hold);
	}
	ma_spin_unlock(&from->hold.lock);
	if (!ok)
		return 0;
	MA_TRACE(MA_TR_STEAL, t->id, from->level->id, from->name);
	ma_entity_enqueue(&t->e);
	s->sched = &to->hold;
	s->ready = NULL;
	return 1;
}

/* A closed bubble waiting on `from` to `to`, whole, if still there, in lock order: the
 * bubble, then its queue. */
static int ma_steal_bubble(struct ma_vslot *s, struct ma_runqueue *from, struct ma_runqueue *to,
			   const struct ma_guard *g)
{
	struct ma_bubble *b = ma_slot_bubble(s);
	if (s->sched != &from->hold)
		return 0;
	struct ma_seen seen = ma_slot_seen(s);
	ma_spin_lock(&b->hold.lock);
	int ok = !ma_bubble_dead(b) && b->uid == seen.uid && atomic_load(&b->status) == MA_BUBBLE_CLOSED &&
		 b->e.sched_holder == &from->hold && b->fixed_item < 0 && b->queued && !ma_list_empty(&b->cache);
	if (ok) {
		/* Its threads: those waiting, or more if it knows more (some run or block). */
		unsigned threads = ma_bubble_threads_locked(b);
		ok = ma_guard_ok(g, threads > b->nb_cached ? threads : b->nb_cached);
	}
	if (ok) {
		ma_spin_lock(&from->hold.lock);
		ok = ma_read_once(&b->e.ready_holder) == &from->hold;
		if (ok) {
			/* Its sched holder changes under its queue's lock and its own. */
			ma_rq_dequeue_locked(from, &b->e);
			ma_store_release(&b->e.sched_holder, &to->hold);
		}
		ma_spin_unlock(&from->hold.lock);
	}
	if (ok) {
		MA_TRACE(MA_TR_STEAL, b->uid, from->level->id, from->name);
		/* Still b's holder (b is locked): it stays queued, on `to`. */
		ma_rq_enqueue(to, &b->e);
	}
	ma_spin_unlock(&b->hold.lock);
	if (!ok)
		return 0;
	s->sched = &to->hold;
	s->ready = NULL;
	return 1;
}

static int ma_exec_steal(struct ma_vslot *s, const struct ma_decision *d, struct ma_runqueue *to)
{
	struct ma_runqueue *from = ma_view_queue(d->from_item);
	/* Where the view saw it wait (or where an earlier decision of the list left it). */
	if (!from || from == to || s->ready != &from->hold)
		return 0;
	struct ma_guard g;
	ma_guard_measure(&g, d);
	if (!(s->n.is_bubble ? ma_steal_bubble(s, from, to, &g) : ma_steal_task(s, from, to, &g, d->flags)))
		return 0;
	/* What is left there still overloads it: the next thief. */
	struct ma_runqueue *victim = (d->flags & MA_D_OUTSIDE) ? ma_view_queue(d->guard_from) : NULL;
	if (victim && ma_view_load_now(d->guard_from, ma_worker_self()) > ma_view_queue_vps(d->guard_from))
		ma_wake_outside(victim);
	return 1;
}

/* ---- waking ---- */

/* Wakes apart: a thief that finds nothing goes back to sleep, so waking one per event
 * would cost a futex round trip per yield of an overloaded subtree. */
#define MA_WAKE_GAP_NS 200000u
static _Atomic uint64_t ma_wake_last;

int ma_wake_outside(const struct ma_runqueue *rq)
{
	uint64_t now = ma_clock_ns(), last = atomic_load_explicit(&ma_wake_last, memory_order_relaxed);
	if (now - last < MA_WAKE_GAP_NS ||
	    !atomic_compare_exchange_strong_explicit(&ma_wake_last, &last, now, memory_order_relaxed,
						     memory_order_relaxed))
		return 0;
	for (const struct ma_runqueue *a = rq->father; a; a = a->father) {
		unsigned lo, hi;
		ma_rq_vp_range(a, &lo, &hi);
		for (unsigned v = lo; v < hi; v++) {
			struct ma_worker *o = &ma_rt.workers[v];
			int s = MA_WORKER_SLEEPING;
			if (ma_path_index(o, rq) >= 0 || ma_path_index(o, a) < 0 ||
			    atomic_load_explicit(&o->attn.disabled, memory_order_relaxed) ||
			    atomic_load_explicit(&o->state, memory_order_relaxed) != MA_WORKER_SLEEPING)
				continue;
			/* The claim of ma_wake_idle_worker: only the claimer kicks. */
			if (atomic_compare_exchange_strong(&o->state, &s, MA_WORKER_WAKING)) {
				ma_worker_kick(o);
				return 1;
			}
		}
	}
	return 0;
}

static int ma_exec_wake(const struct ma_decision *d, struct ma_runqueue *rq)
{
	if (d->flags & MA_D_OUTSIDE)
		return ma_wake_outside(rq);
	if (!atomic_load_explicit(&rq->nr_sleeping, memory_order_relaxed))
		return 0;
	ma_wake_idle_worker(rq);
	return 1;
}

/* ---- the list ---- */

static int ma_exec_one(struct ma_view *v, const struct ma_decision *d)
{
	struct ma_runqueue *rq = ma_view_queue(d->item);
	if (d->kind == MA_D_WAKE)
		return rq && ma_exec_wake(d, rq);
	/* SERVE is find_next's, carried out where it meets the bubble (ma_bubble_picked). */
	struct ma_vslot *s = d->kind == MA_D_SERVE ? NULL : ma_view_slot(v, d->entity);
	if (!s || s->spent)
		return 0;
	switch (d->kind) {
	case MA_D_PLACE:
		return rq && ma_exec_place(s, rq, d->flags);
	case MA_D_BURST:
		return rq && ma_exec_burst(s, rq);
	case MA_D_MOVE:
		if (!rq)
			return !s->n.is_bubble && (d->flags & MA_D_UNSTRAY) && ma_exec_unstray(s);
		return s->n.is_bubble ? ma_exec_move_bubble(s, rq) : ma_exec_move_task(s, rq, d->flags);
	case MA_D_STEAL:
		return rq && ma_exec_steal(s, d, rq);
	case MA_D_GATHER:
		return ma_exec_gather(s);
	case MA_D_UNPLACE:
		return ma_exec_unplace(s);
	default:
		return 0;
	}
}

struct ma_dresult ma_decisions_execute(struct ma_view *v, const struct ma_dlist *l)
{
	struct ma_dresult r = { 0, 0, 0 };
	/* What the decision before came to, for MA_D_ELSE and MA_D_THEN: an alternative
	 * skipped because an earlier one was done counts as done, a consequence skipped
	 * because its cause was not as not done. */
	int before = 0;
	for (unsigned i = 0; i < l->n; i++) {
		const struct ma_decision *d = &l->d[i];
		if (((d->flags & MA_D_ELSE) && before) || ((d->flags & MA_D_THEN) && !before)) {
			r.skipped++;
			continue;
		}
		before = v->rt && ma_exec_one(v, d);
		if (before)
			r.done++;
		else
			r.dropped++;
	}
	return r;
}
