/* Run queues: per-priority FIFOs with a bitmap, and find_next over a worker's path. */
#include <string.h>
#include "ma_sched.h"

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
	ma_list_add_tail(&rq->queue[e->prio], &e->run_node);
	atomic_store_explicit(&rq->bitmap,
			      atomic_load_explicit(&rq->bitmap, memory_order_relaxed) | (1ULL << e->prio),
			      memory_order_relaxed);
	rq->nr_ready++;
	e->ready_holder = &rq->hold;
}

void ma_rq_dequeue_locked(struct ma_runqueue *rq, struct ma_entity *e)
{
	ma_list_del(&e->run_node);
	if (ma_list_empty(&rq->queue[e->prio]))
		atomic_store_explicit(&rq->bitmap,
				      atomic_load_explicit(&rq->bitmap, memory_order_relaxed) &
					      ~(1ULL << e->prio),
				      memory_order_relaxed);
	rq->nr_ready--;
	e->ready_holder = NULL;
}

void ma_rq_enqueue(struct ma_runqueue *rq, struct ma_entity *e)
{
	ma_spin_lock(&rq->hold.lock);
	ma_rq_enqueue_locked(rq, e);
	/* Read under the lock: an idle worker bumps these before it checks our bitmap under
	 * the same lock, so either it sees the entity or we see it (worker.c). */
	int spinning = atomic_load_explicit(&rq->nr_spinning, memory_order_relaxed);
	int sleeping = atomic_load_explicit(&rq->nr_sleeping, memory_order_relaxed);
	ma_spin_unlock(&rq->hold.lock);
	if (!spinning && sleeping)
		ma_wake_idle_worker(rq);
}

struct marcel_task *ma_find_next(struct ma_worker *w, int worst_prio)
{
	for (;;) {
		int prio;
		struct ma_runqueue *rq = ma_peek_next(w, worst_prio, &prio);
		if (!rq)
			return NULL;
		ma_spin_lock(&rq->hold.lock);
		uint64_t bm = atomic_load_explicit(&rq->bitmap, memory_order_relaxed);
		if (bm && __builtin_ctzll(bm) <= worst_prio) {
			struct ma_list *l = &rq->queue[__builtin_ctzll(bm)];
			struct ma_entity *e = ma_container_of(l->next, struct ma_entity, run_node);
			ma_rq_dequeue_locked(rq, e);
			/* An enqueue skips the wake-up when a worker spins, but that worker takes
			 * one entity: whoever takes one from a shared queue that still holds work,
			 * with nobody spinning, wakes the next sleeper, so wake-ups chain. */
			int more = rq->vp < 0 && atomic_load_explicit(&rq->bitmap, memory_order_relaxed) &&
				   !atomic_load_explicit(&rq->nr_spinning, memory_order_relaxed) &&
				   atomic_load_explicit(&rq->nr_sleeping, memory_order_relaxed);
			ma_spin_unlock(&rq->hold.lock);
			if (more)
				ma_wake_idle_worker(rq);
			/* Only threads are queued until bubbles arrive; their strategy hook will
			 * decide here what picking a bubble means. */
			return ma_container_of(e, struct marcel_task, e);
		}
		/* Someone else took it between the peek and the lock: look again. */
		ma_spin_unlock(&rq->hold.lock);
	}
}
