/*
 * Run queues: per-priority FIFOs with a bitmap; queueing an entity on its sched holder
 * (a run queue, or through marcel/ma_hooks.h a holder of the layer above); find_next
 * over a worker's path.
 *
 * The sched holder protocol: e->sched_holder says where e is scheduled; it changes only
 * under the lock of the holder it names. So a queuer reads it (acquire), locks that
 * holder, and checks again under the lock that it still names it; if not, e was moved
 * meanwhile and it starts over with the new one. e->ready_holder names the holder e is
 * queued in (NULL while it is not queued), written under that holder's lock.
 */
#include <string.h>
#include "ma_hooks.h"
#include "ma_trace.h"

struct ma_hooks ma_hooks;
void (*_Atomic ma_hw_switched_hook)(struct ma_worker *w);
void (*_Atomic ma_hw_iteration_hook)(const void *key);

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

int ma_rq_served(const struct ma_runqueue *rq)
{
	unsigned lo, hi;
	ma_rq_vp_range(rq, &lo, &hi);
	for (unsigned v = lo; v < hi; v++) {
		const struct ma_worker *o = &ma_rt.workers[v];
		if (!atomic_load_explicit(&o->attn.disabled, memory_order_relaxed) && ma_path_index(o, rq) >= 0)
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
		if (ma_unlikely(ma_read_once(&e->sched_holder) != &rq->hold)) {
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
int ma_park_suspended(struct marcel_task *t)
{
	atomic_store(&t->state, MA_TASK_SUSPENDED);
	atomic_store(&t->parked, 1);
	if (atomic_load(&t->req.suspend_req))
		return 1;
	if (atomic_exchange(&t->parked, 0)) {
		atomic_store(&t->state, MA_TASK_READY);
		return 0;
	}
	return 1; /* resume took it and queued it again */
}

struct marcel_task *ma_find_next_in(struct ma_worker *w, int worst_prio, struct ma_runqueue *first)
{
	struct marcel_task *rn = w->runnext;
	if (ma_unlikely(atomic_load_explicit(&w->attn.disabled, memory_order_relaxed))) {
		if (rn) {
			/* Disabled since: its queue sends it to an enabled one. */
			ma_write_once(&w->runnext, NULL);
			ma_entity_enqueue(&rn->e);
		}
		return NULL;
	}
	if (rn) {
		int rprio = atomic_load_explicit(&rn->e.prio, memory_order_relaxed), qprio;
		struct ma_runqueue *q = ma_peek_next(w, worst_prio, &qprio);
		if (rprio <= worst_prio && (!q || rprio <= qprio)) {
			ma_write_once(&w->runnext, NULL);
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
			if (ma_unlikely(e->type != MA_TASK_ENTITY)) {
				/* A closed bubble: the strategy decides, the thread comes from its
				 * cache. */
				struct marcel_task *t = ma_hook_pick(w, rq, e);
				if (t && !ma_park_if_suspended(t))
					return t;
				continue;
			}
			ma_rq_dequeue_locked(rq, e);
			ma_write_once(&e->last_level, (int)rq->level->id);
			w->took_from = &rq->hold;
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

void ma_entity_enqueue(struct ma_entity *e)
{
	for (;;) {
		struct ma_holder *h = ma_load_acquire(&e->sched_holder);
		if (ma_likely(h->type == MA_RUNQUEUE_HOLDER)) {
			if (ma_likely(ma_rq_enqueue(ma_rq_of_holder(h), e)))
				return;
		} else if (ma_hook_holder_add(h, e)) {
			return;
		}
	}
}

int ma_entity_claim_ready(struct ma_entity *e)
{
	struct ma_holder *h = ma_load_acquire(&e->ready_holder);
	if (!h)
		return 0;
	ma_spin_lock(&h->lock);
	int ok = ma_read_once(&e->ready_holder) == h;
	if (ok && h->type == MA_RUNQUEUE_HOLDER)
		ma_rq_dequeue_locked(ma_rq_of_holder(h), e);
	else if (ok)
		ok = ma_hook_holder_take_locked(h, e, 1);
	ma_spin_unlock(&h->lock);
	return ok;
}

void ma_entity_move_to_holder(struct ma_entity *e, struct ma_holder *nh)
{
	for (;;) {
		struct ma_holder *h = ma_load_acquire(&e->sched_holder);
		if (h == nh)
			return;
		ma_spin_lock(&h->lock);
		if (ma_read_once(&e->sched_holder) != h) {
			ma_spin_unlock(&h->lock);
			continue;
		}
		int queued = e->ready_holder == h;
		if (queued) {
			if (h->type == MA_RUNQUEUE_HOLDER)
				ma_rq_dequeue_locked(ma_rq_of_holder(h), e);
			else
				(void)ma_hook_holder_take_locked(h, e, 0);
		}
		ma_store_release(&e->sched_holder, nh);
		ma_spin_unlock(&h->lock);
		if (queued)
			ma_entity_enqueue(e);
		else if (e->type == MA_TASK_ENTITY && nh->type == MA_RUNQUEUE_HOLDER)
			atomic_store(&ma_task_of_entity(e)->req.move_req, 1);
		MA_TRACE(MA_TR_RQ_SWITCH, e->type == MA_TASK_ENTITY ? ma_task_of_entity(e)->id : 0,
			 nh->type == MA_RUNQUEUE_HOLDER ? ma_rq_of_holder(nh)->level->id : 0,
			 nh->type == MA_RUNQUEUE_HOLDER ? ma_rq_of_holder(nh)->name : NULL);
		return;
	}
}
