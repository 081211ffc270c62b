/*
 * Moving the calling thread onto a VP set, and switching VPs off and on.
 */
#include "ma_sched.h"

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
	struct marcel_task *self = ma_worker_current(w);
	/* Pinned: strategies and bubble regeneration leave it there. */
	self->pinned = 1;
	ma_entity_move_to_holder(&self->e, &rq->hold);
	/* Moved at once if this VP does not serve that queue. */
	if (ma_path_index(w, rq) < 0)
		ma_migrate_self(w, self);
	return 0;
}

/* Moves what is queued on rq, which no enabled VP looks at any more, up to a queue one
 * looks at (ma_rq_enqueue sends it there). */
static void ma_drain_rq(struct ma_runqueue *rq)
{
	for (;;) {
		ma_spin_lock(&rq->hold.lock);
		uint64_t bm = atomic_load_explicit(&rq->bitmap, memory_order_relaxed);
		/* Enabled again meanwhile: what is left runs here (and would come back here). */
		if (!bm || ma_rq_served(rq)) {
			ma_spin_unlock(&rq->hold.lock);
			return;
		}
		struct ma_entity *e = ma_container_of(rq->queue[__builtin_ctzll(bm)].next, struct ma_entity, run_node);
		ma_rq_dequeue_locked(rq, e);
		ma_spin_unlock(&rq->hold.lock);
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
		else if (!atomic_load(&ma_rt.workers[v].attn.disabled))
			enabled_left++;
	}
	if (!named || !enabled_left)
		return EINVAL;
	/* Counted first: an enqueue that finds a drained queue unserved sends its entity up
	 * (ma_rq_enqueue checks the count under the queue's lock, the drain takes it). */
	for (unsigned v = 0; v < ma_rt.nb_vps; v++)
		if (marcel_vpset_isset(set, v) && !atomic_exchange(&ma_rt.workers[v].attn.disabled, 1))
			atomic_fetch_add(&ma_rt.nb_disabled, 1);
	/* The queues on their paths that no enabled VP looks at any more, from the VP's own
	 * up: on some machines that is up to the NUMA node's. */
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		struct ma_worker *w = &ma_rt.workers[v];
		if (!marcel_vpset_isset(set, v))
			continue;
		for (unsigned i = 0; i < w->path_len && !ma_rq_served(w->path[i]); i++)
			ma_drain_rq(w->path[i]);
	}
	/* The caller itself leaves if it runs on one of them. */
	struct ma_worker *w = ma_worker_self();
	if (w && atomic_load(&w->attn.disabled))
		ma_migrate_self(w, ma_worker_current(w));
	return 0;
}

int marcel_enable_vps(const marcel_vpset_t *set)
{
	if (!set || !ma_rt.running)
		return EINVAL;
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		struct ma_worker *w = &ma_rt.workers[v];
		if (marcel_vpset_isset(set, v) && atomic_exchange(&w->attn.disabled, 0)) {
			atomic_fetch_sub(&ma_rt.nb_disabled, 1);
			/* It may sleep with work waiting on the queues it sees. */
			int s = MA_WORKER_SLEEPING;
			if (atomic_compare_exchange_strong(&w->state, &s, MA_WORKER_WAKING))
				ma_worker_kick(w);
		}
	}
	return 0;
}
