/*
 * Moving the calling thread onto a VP set, and switching VPs off and on.
 */
#include "ma_bubble.h"

/* Requeues the caller on its (new) sched holder and runs something else: the next worker
 * that can see the holder picks it up. */
static void ma_migrate_self(struct ma_worker *w, struct marcel_task *self)
{
	self->post = MA_POST_REQUEUE;
	ma_schedule_blocked(w, self);
}

int marcel_apply_vpset(const marcel_vpset_t *set)
{
	if (!set)
		return EINVAL;
	struct ma_worker *w = ma_worker_self();
	if (!w)
		return EPERM;
	struct ma_runqueue *rq = ma_rq_for_set(set);
	if (!rq)
		return EINVAL;
	struct marcel_task *self = w->current;
	/* Pinned: strategies and bubble regeneration leave it there. */
	self->pinned = 1;
	ma_entity_move_to_holder(&self->e, &rq->hold);
	/* Moved at once if this VP does not serve that queue. */
	if (ma_path_index(w, rq) < 0)
		ma_migrate_self(w, self);
	return 0;
}

/* Moves what is queued on a disabled VP's own queue to its father queue. */
static void ma_drain_vp(struct ma_worker *w)
{
	struct ma_runqueue *rq = &w->rq;
	for (;;) {
		ma_spin_lock(&rq->hold.lock);
		uint64_t bm = atomic_load_explicit(&rq->bitmap, memory_order_relaxed);
		if (!bm) {
			ma_spin_unlock(&rq->hold.lock);
			return;
		}
		struct ma_entity *e = ma_container_of(rq->queue[__builtin_ctzll(bm)].next, struct ma_entity, run_node);
		ma_rq_dequeue_locked(rq, e);
		ma_spin_unlock(&rq->hold.lock);
		/* The disabled VP's queue sends it to its father. */
		ma_entity_enqueue(e);
	}
}

int marcel_disable_vps(const marcel_vpset_t *set)
{
	if (!set || !ma_rt.running)
		return EINVAL;
	unsigned enabled_left = 0, named = 0;
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		if (marcel_vpset_isset(set, v))
			named++;
		else if (!atomic_load(&ma_rt.workers[v].disabled))
			enabled_left++;
	}
	if (!named || !enabled_left)
		return EINVAL;
	for (unsigned v = 0; v < ma_rt.nb_vps; v++)
		if (marcel_vpset_isset(set, v)) {
			atomic_store(&ma_rt.workers[v].disabled, 1);
			ma_drain_vp(&ma_rt.workers[v]);
		}
	/* The caller itself leaves if it runs on one of them. */
	struct ma_worker *w = ma_worker_self();
	if (w && atomic_load(&w->disabled))
		ma_migrate_self(w, w->current);
	return 0;
}

int marcel_enable_vps(const marcel_vpset_t *set)
{
	if (!set || !ma_rt.running)
		return EINVAL;
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		struct ma_worker *w = &ma_rt.workers[v];
		if (marcel_vpset_isset(set, v) && atomic_exchange(&w->disabled, 0)) {
			/* It may sleep with work waiting on the queues it sees. */
			int s = MA_WORKER_SLEEPING;
			if (atomic_compare_exchange_strong(&w->state, &s, MA_WORKER_WAKING))
				ma_worker_kick(w);
		}
	}
	return 0;
}
