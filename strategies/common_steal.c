/*
 * Subtree measures and the stealing primitives of the cache, steal and gang strategies
 * (common_steal.h). Lock order as in bubbles/holder.c: bubbles before run queues, so a
 * bubble met on a locked queue is only try-locked.
 */
#include "common_steal.h"
#include "ma_trace.h"

unsigned ma_sl_nb_vps(const struct ma_runqueue *rq)
{
	return rq->vp >= 0 ? 1 : rq->level->nb_vps;
}

int ma_sl_sees(const struct ma_runqueue *rq, unsigned v)
{
	if (rq->vp >= 0)
		return (unsigned)rq->vp == v;
	return v < ma_rt.nb_vps && ma_path_index(&ma_rt.workers[v], rq) >= 0;
}

/* VPs that may look at rq: [*lo, *hi), membership checked with ma_sl_sees (the range is
 * wider than the set when there are more VPs than cores). */
static void ma_sl_range(const struct ma_runqueue *rq, unsigned *lo, unsigned *hi)
{
	*lo = rq->first_vp;
	*hi = rq->first_vp + rq->nb_vps;
	if (*hi > ma_rt.nb_vps)
		*hi = ma_rt.nb_vps;
}

/* Calls fn on rq and every queue below it: item queues top-down, then VP queues. */
static void ma_sl_items_each(const struct ma_level *l, void (*fn)(struct ma_runqueue *, void *), void *arg)
{
	if (!l->nb_vps)
		return;
	fn(&ma_rt.rqs[l->id], arg);
	for (unsigned i = 0; i < l->arity; i++)
		ma_sl_items_each(l->children[i], fn, arg);
}

static void ma_sl_each(struct ma_runqueue *rq, void (*fn)(struct ma_runqueue *, void *), void *arg)
{
	if (rq->vp >= 0) {
		fn(rq, arg);
		return;
	}
	ma_sl_items_each(rq->level, fn, arg);
	unsigned lo, hi;
	ma_sl_range(rq, &lo, &hi);
	for (unsigned v = lo; v < hi; v++)
		if (ma_sl_sees(rq, v))
			fn(&ma_rt.workers[v].rq, arg);
}

struct ma_sl_collect {
	struct ma_runqueue **out;
	unsigned n, max;
};

static void ma_sl_collect_one(struct ma_runqueue *rq, void *arg)
{
	struct ma_sl_collect *c = arg;
	if (c->n < c->max)
		c->out[c->n++] = rq;
}

unsigned ma_sl_queues(struct ma_runqueue *rq, struct ma_runqueue **out, unsigned max)
{
	struct ma_sl_collect c = { out, 0, max };
	ma_sl_each(rq, ma_sl_collect_one, &c);
	return c.n;
}

unsigned ma_sl_kids(struct ma_runqueue *rq, struct ma_runqueue **out, unsigned max)
{
	if (rq->vp >= 0)
		return 0;
	unsigned n = ma_rq_children(rq, out, max), lo, hi;
	ma_sl_range(rq, &lo, &hi);
	for (unsigned v = lo; v < hi && n < max; v++)
		if (ma_rt.workers[v].rq.level == rq->level)
			out[n++] = &ma_rt.workers[v].rq;
	return n;
}

int ma_sl_within(const struct ma_runqueue *q, const struct ma_runqueue *rq)
{
	for (; q; q = q->father)
		if (q == rq)
			return 1;
	return 0;
}

/* Running threads that belong below rq, wherever they run (self's excluded): a thread
 * moved or stolen runs on its old VP until its next yield, and counting it where it runs
 * would make both sides look wrong meanwhile -- and send thieves after it. A thread of a
 * queue above rq (main, on the machine's) is nobody's load: it runs wherever a VP is
 * free. Read without locks (descriptors stay mapped): an estimate. */
unsigned long ma_sl_running(const struct ma_runqueue *rq, const struct ma_worker *self,
			    const struct ma_bubble *except)
{
	unsigned long n = 0;
	struct ma_worker *est = ma_estimate_begin();
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		const struct ma_worker *o = &ma_rt.workers[v];
		/* Not the worker state: a worker looking for work is busy too. The idle context is
		 * recognised by its address: the descriptor of a thread that just ended may be
		 * recycled under us, so read as little of it as possible (its bubble is not
		 * reused before ma_estimate_end: ma_estimates_quiesce). */
		const struct marcel_task *cur = __atomic_load_n(&o->current, __ATOMIC_ACQUIRE);
		if (o == self)
			continue;
		/* Between taking a thread and running it, the idle context holds it. */
		if (!cur || cur == &o->idle)
			cur = __atomic_load_n(&o->picked, __ATOMIC_ACQUIRE);
		if (!cur)
			continue;
		struct ma_holder *h = __atomic_load_n(&cur->e.sched_holder, __ATOMIC_RELAXED);
		if (except && h == &except->hold)
			continue;
		if (h && h->type == MA_BUBBLE_HOLDER)
			h = __atomic_load_n(&ma_bubble_of_holder(h)->e.sched_holder, __ATOMIC_RELAXED);
		if (!h || h->type != MA_RUNQUEUE_HOLDER)
			n += ma_sl_sees(rq, v);
		else
			n += ma_sl_within(ma_rq_of_holder(h), rq);
	}
	ma_estimate_end(est);
	return n;
}

static void ma_sl_add_queued(struct ma_runqueue *rq, void *arg)
{
	*(unsigned long *)arg += __atomic_load_n(&rq->nr_ready, __ATOMIC_RELAXED) +
				 (unsigned long)atomic_load_explicit(&rq->nr_incoming, memory_order_relaxed);
}

unsigned long ma_sl_queued(const struct ma_runqueue *rq)
{
	unsigned long n = 0;
	ma_sl_each((struct ma_runqueue *)rq, ma_sl_add_queued, &n);
	return n;
}

unsigned long ma_sl_load(const struct ma_runqueue *rq, const struct ma_worker *self)
{
	unsigned long load = ma_sl_running(rq, self, NULL);
	ma_sl_each((struct ma_runqueue *)rq, ma_sl_add_queued, &load);
	return load;
}

/* Ready threads of closed bubble b met on a locked queue: its cache, if b can be looked
 * at now. */
static unsigned ma_sl_cached(struct ma_bubble *b)
{
	if (!ma_spin_trylock(&b->hold.lock))
		return 1;
	unsigned n = b->nb_cached;
	ma_spin_unlock(&b->hold.lock);
	return n ? n : 1;
}

static void ma_sl_add_ready(struct ma_runqueue *q, void *arg)
{
	unsigned long *load = arg;
	*load += (unsigned long)atomic_load_explicit(&q->nr_incoming, memory_order_relaxed);
	if (!__atomic_load_n(&q->nr_ready, __ATOMIC_RELAXED))
		return;
	ma_spin_lock(&q->hold.lock);
	for (int p = 0; p < MA_MAX_PRIO; p++)
		for (struct ma_list *l = q->queue[p].next; l != &q->queue[p]; l = l->next) {
			struct ma_entity *e = ma_container_of(l, struct ma_entity, run_node);
			*load += e->type == MA_TASK_ENTITY ? 1 : ma_sl_cached(ma_bubble_of_entity(e));
		}
	ma_spin_unlock(&q->hold.lock);
}

unsigned long ma_sl_load_exact(struct ma_runqueue *rq, const struct ma_worker *self)
{
	unsigned long load = ma_sl_running(rq, self, NULL);
	ma_sl_each(rq, ma_sl_add_ready, &load);
	return load;
}

/* ---- waking a thief ---- */

int ma_sl_has_idle(const struct ma_runqueue *rq)
{
	unsigned lo, hi;
	ma_sl_range(rq, &lo, &hi);
	for (unsigned v = lo; v < hi; v++) {
		int s = atomic_load_explicit(&ma_rt.workers[v].state, memory_order_relaxed);
		if ((s == MA_WORKER_SPINNING || s == MA_WORKER_SLEEPING) && ma_sl_sees(rq, v) &&
		    !atomic_load_explicit(&ma_rt.workers[v].disabled, memory_order_relaxed))
			return 1;
	}
	return 0;
}

/* ---- stealing ---- */

int ma_sl_take_bubble(struct ma_runqueue *from, struct ma_runqueue *to, ma_sl_accept accept, void *arg)
{
	if (from == to || !__atomic_load_n(&from->nr_ready, __ATOMIC_RELAXED))
		return 0;
	ma_spin_lock(&from->hold.lock);
	for (int p = 0; p < MA_MAX_PRIO; p++)
		for (struct ma_list *l = from->queue[p].next; l != &from->queue[p]; l = l->next) {
			struct ma_entity *e = ma_container_of(l, struct ma_entity, run_node);
			if (e->type != MA_BUBBLE_ENTITY)
				continue;
			struct ma_bubble *b = ma_bubble_of_entity(e);
			/* Held, b cannot go (it has ready threads) nor change state. */
			if (!ma_spin_trylock(&b->hold.lock))
				continue;
			int ok = atomic_load(&b->status) == MA_BUBBLE_CLOSED && b->fixed_item < 0 &&
				 b->e.sched_holder == &from->hold && b->queued && !ma_list_empty(&b->cache);
			if (ok) {
				unsigned threads = ma_bubble_threads_locked(b);
				ok = accept(threads > b->nb_cached ? threads : b->nb_cached, b->nb_cached, arg);
			}
			if (!ok) {
				ma_spin_unlock(&b->hold.lock);
				continue;
			}
			/* What ma_bubble_place does, from the old queue we already hold: its sched
			 * holder changes under that queue's lock and b's. */
			ma_rq_dequeue_locked(from, &b->e);
			__atomic_store_n(&b->e.sched_holder, &to->hold, __ATOMIC_RELEASE);
			ma_spin_unlock(&from->hold.lock);
			MA_TRACE(MA_TR_STEAL, b->uid, from->level->id, from->name);
			/* Still b's holder: b is locked. */
			ma_rq_enqueue(to, &b->e);
			ma_spin_unlock(&b->hold.lock);
			return 1;
		}
	ma_spin_unlock(&from->hold.lock);
	return 0;
}

struct ma_runqueue *ma_sl_bubble_home(const struct ma_entity *e)
{
	struct ma_bubble *b = ma_entity_parent(e);
	if (!b || b == ma_root_bubble || atomic_load_explicit(&b->status, memory_order_relaxed) != MA_BUBBLE_OPENED)
		return NULL;
	struct ma_holder *h = __atomic_load_n(&b->e.sched_holder, __ATOMIC_RELAXED);
	return h && h->type == MA_RUNQUEUE_HOLDER ? ma_rq_of_holder(h) : NULL;
}

/* What taking a thread whose bubble burst on `home` does (see enum ma_sl_kin). */
static enum ma_sl_kin ma_sl_kin_of(const struct ma_runqueue *home, const struct ma_runqueue *mine,
				   const struct ma_runqueue *victim)
{
	if (home && ma_sl_within(home, mine))
		return MA_SL_HOMING;
	return home && ma_sl_within(home, victim) ? MA_SL_BOUND : MA_SL_LOOSE;
}

int ma_sl_take_thread(struct ma_runqueue *from, struct ma_runqueue *to, const struct ma_runqueue *mine,
		      const struct ma_runqueue *victim, enum ma_sl_kin kin, ma_sl_accept accept, void *arg)
{
	if (from == to || !__atomic_load_n(&from->nr_ready, __ATOMIC_RELAXED))
		return 0;
	ma_spin_lock(&from->hold.lock);
	for (int p = 0; p < MA_MAX_PRIO; p++)
		for (struct ma_list *l = from->queue[p].next; l != &from->queue[p]; l = l->next) {
			struct ma_entity *e = ma_container_of(l, struct ma_entity, run_node);
			if (e->type != MA_TASK_ENTITY)
				continue;
			struct marcel_task *t = ma_task_of_entity(e);
			if (t->pinned || atomic_load_explicit(&t->suspend_req, memory_order_relaxed) ||
			    e->sched_holder != &from->hold)
				continue;
			struct ma_runqueue *home = ma_sl_bubble_home(e);
			if (ma_sl_kin_of(home, mine, victim) != kin || !accept(1, 1, arg))
				continue;
			/* Home beside its bubble's threads, if we serve that queue. */
			struct ma_runqueue *dest = kin == MA_SL_HOMING && ma_sl_within(to, home) ? home : to;
			/* As ma_entity_move_to_holder: off the old queue and re-targeted under its
			 * lock, then queued on the new one. */
			ma_rq_dequeue_locked(from, e);
			if (kin != MA_SL_LOOSE)
				atomic_store_explicit(&t->stray, kin == MA_SL_BOUND, memory_order_relaxed);
			__atomic_store_n(&e->sched_holder, &dest->hold, __ATOMIC_RELEASE);
			ma_spin_unlock(&from->hold.lock);
			MA_TRACE(MA_TR_STEAL, t->id, from->level->id, from->name);
			ma_entity_enqueue(e);
			return 1;
		}
	ma_spin_unlock(&from->hold.lock);
	return 0;
}
