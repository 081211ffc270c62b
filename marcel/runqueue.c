/* Run queues: per-priority FIFOs with a bitmap, and find_next over a worker's path. */
#include <string.h>
#include "ma_bubble.h"

void ma_rq_init(struct ma_runqueue *rq, const char *name, const struct ma_level *level, int vp,
		struct ma_runqueue *father)
{
	memset(rq, 0, sizeof(*rq));
	rq->hold.type = MA_RUNQUEUE_HOLDER;
	ma_spin_init(&rq->hold.lock);
	atomic_init(&rq->bitmap, 0);
	atomic_init(&rq->nr_spinning, 0);
	atomic_init(&rq->nr_sleeping, 0);
	rq->father = father;
	rq->level = level;
	rq->vp = vp;
	snprintf(rq->name, sizeof(rq->name), "%s", name);
	for (int p = 0; p < MA_MAX_PRIO; p++)
		ma_list_init(&rq->queue[p]);
}

void ma_rq_enqueue_locked(struct ma_runqueue *rq, struct ma_entity *e)
{
	/* prio may be changed by marcel_sched_setparam at any time: read it once, and
	 * remember which list the entity went to. */
	int p = __atomic_load_n(&e->prio, __ATOMIC_RELAXED);
	e->queued_prio = p;
	ma_list_add_tail(&rq->queue[p], &e->run_node);
	atomic_store_explicit(&rq->bitmap,
			      atomic_load_explicit(&rq->bitmap, memory_order_relaxed) | (1ULL << p),
			      memory_order_relaxed);
	__atomic_store_n(&rq->nr_ready, rq->nr_ready + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&e->ready_holder, &rq->hold, __ATOMIC_RELAXED);
}

void ma_rq_dequeue_locked(struct ma_runqueue *rq, struct ma_entity *e)
{
	ma_list_del(&e->run_node);
	if (ma_list_empty(&rq->queue[e->queued_prio]))
		atomic_store_explicit(&rq->bitmap,
				      atomic_load_explicit(&rq->bitmap, memory_order_relaxed) &
					      ~(1ULL << e->queued_prio),
				      memory_order_relaxed);
	__atomic_store_n(&rq->nr_ready, rq->nr_ready - 1, __ATOMIC_RELAXED);
	__atomic_store_n(&rq->nr_taken, rq->nr_taken + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&e->ready_holder, NULL, __ATOMIC_RELAXED);
}

int ma_rq_served(const struct ma_runqueue *rq)
{
	unsigned lo, hi;
	ma_rq_vp_range(rq, &lo, &hi);
	for (unsigned v = lo; v < hi; v++) {
		const struct ma_worker *o = &ma_rt.workers[v];
		if (!atomic_load_explicit(&o->disabled, memory_order_relaxed) && ma_path_index(o, rq) >= 0)
			return 1;
	}
	return 0;
}

int ma_rq_enqueue(struct ma_runqueue *rq, struct ma_entity *e)
{
	struct ma_runqueue *q = rq;
	for (;;) {
		ma_spin_lock(&q->hold.lock);
		/* A strategy may have moved it since the caller read its holder (bubbles/). */
		if (ma_unlikely(__atomic_load_n(&e->sched_holder, __ATOMIC_RELAXED) != &rq->hold)) {
			ma_spin_unlock(&q->hold.lock);
			return 0;
		}
		/* A disabled VP runs nothing: work for queues only disabled VPs look at goes up
		 * to one an enabled VP looks at. Checked under q's lock: marcel_disable_vps
		 * counts the VP, then empties such queues under their locks (vps.c), so it
		 * either finds e there or we see the count. */
		if (ma_likely(!atomic_load_explicit(&ma_rt.nb_disabled, memory_order_relaxed)) || !q->father ||
		    ma_rq_served(q))
			break;
		ma_spin_unlock(&q->hold.lock);
		q = q->father;
	}
	ma_rq_enqueue_locked(q, e);
	/* Read under the lock: an idle worker bumps these before it checks our bitmap under
	 * the same lock, so either it sees the entity or we see it (worker.c). */
	int spinning = atomic_load_explicit(&q->nr_spinning, memory_order_relaxed);
	int sleeping = atomic_load_explicit(&q->nr_sleeping, memory_order_relaxed);
	ma_spin_unlock(&q->hold.lock);
	if (!spinning && sleeping)
		ma_wake_idle_worker(q);
	return 1;
}

/* A suspended task picked from a queue is parked instead of run (marcel_suspend).
 * Parked first, checked again after: marcel_resume clears the request first and takes
 * the parked flag after, so exactly one side requeues it. */
int ma_park_if_suspended(struct marcel_task *t)
{
	if (ma_likely(!atomic_load_explicit(&t->suspend_req, memory_order_relaxed)))
		return 0;
	atomic_store(&t->state, MA_TASK_SUSPENDED);
	atomic_store(&t->parked, 1);
	if (atomic_load(&t->suspend_req))
		return 1;
	if (atomic_exchange(&t->parked, 0)) {
		atomic_store(&t->state, MA_TASK_READY);
		return 0;
	}
	return 1; /* resume took it and queued it again */
}

struct marcel_task *ma_find_next(struct ma_worker *w, int worst_prio)
{
	return ma_find_next_in(w, worst_prio, NULL);
}

struct marcel_task *ma_find_next_in(struct ma_worker *w, int worst_prio, struct ma_runqueue *first)
{
	struct marcel_task *rn = w->runnext;
	if (ma_unlikely(atomic_load_explicit(&w->disabled, memory_order_relaxed))) {
		if (rn) {
			/* Disabled since: its queue sends it to an enabled one. */
			w->runnext = NULL;
			ma_entity_enqueue(&rn->e);
		}
		return NULL;
	}
	if (rn) {
		int rprio = __atomic_load_n(&rn->e.prio, __ATOMIC_RELAXED), qprio;
		struct ma_runqueue *q = ma_peek_next(w, worst_prio, &qprio);
		if (rprio <= worst_prio && (!q || rprio <= qprio)) {
			w->runnext = NULL;
			if (!ma_park_if_suspended(rn))
				return rn;
		}
	}
	for (;;) {
		int prio;
		struct ma_runqueue *rq = first ? first : ma_pick_next(w, worst_prio, &prio);
		first = NULL;
		if (!rq)
			return NULL;
		ma_spin_lock(&rq->hold.lock);
		uint64_t bm = atomic_load_explicit(&rq->bitmap, memory_order_relaxed);
		if (bm && __builtin_ctzll(bm) <= worst_prio) {
			struct ma_list *l = &rq->queue[__builtin_ctzll(bm)];
			struct ma_entity *e = ma_container_of(l->next, struct ma_entity, run_node);
			if (ma_unlikely(e->type == MA_BUBBLE_ENTITY)) {
				/* The strategy decides; the thread comes from the bubble's cache. */
				struct marcel_task *t = ma_bubble_picked(w, rq, ma_bubble_of_entity(e));
				if (t && !ma_park_if_suspended(t))
					return t;
				continue;
			}
			ma_rq_dequeue_locked(rq, e);
			__atomic_store_n(&e->last_level, (int)rq->level->id, __ATOMIC_RELAXED);
			/* An enqueue skips the wake-up when a worker spins, but that worker takes
			 * one entity: whoever takes one from a shared queue that still holds work,
			 * with nobody spinning, wakes the next sleeper, so wake-ups chain. */
			int more = rq->vp < 0 && atomic_load_explicit(&rq->bitmap, memory_order_relaxed) &&
				   !atomic_load_explicit(&rq->nr_spinning, memory_order_relaxed) &&
				   atomic_load_explicit(&rq->nr_sleeping, memory_order_relaxed);
			ma_spin_unlock(&rq->hold.lock);
			if (more)
				ma_wake_idle_worker(rq);
			struct marcel_task *t = ma_container_of(e, struct marcel_task, e);
			if (ma_unlikely(ma_park_if_suspended(t)))
				continue;
			return t;
		}
		/* Someone else took it between the peek and the lock: look again. */
		ma_spin_unlock(&rq->hold.lock);
	}
}
