/*
 * burst (alias explode): the bubble scheduler of the original Marcel. A VP that finds a
 * closed bubble above its bursting level pulls it one level down, toward the lightest
 * child (its own on ties); at its level the bubble bursts, and its members go on from
 * there the same way. Bursting bubbles are regenerated every time slice (20 ms unless the
 * bubble sets its own), so placement follows the load as threads end.
 *
 * The level is the bubble's sched_level; without one, the deepest item on the VP's path
 * with at least as many VPs as the bubble has threads (ready ones, and for a bubble that
 * counts them, blocked ones too).
 */
#include "ma_strategies.h"

#define MA_BURST_TIMESLICE_US 20000

static struct ma_runqueue *ma_burst_target(const struct ma_worker *w, struct ma_bubble *b)
{
	int level = __atomic_load_n(&b->e.sched_level, __ATOMIC_RELAXED);
	if (level)
		return ma_strategy_level_rq(w, level);
	/* Read without b's lock (we hold a queue): an estimate is enough to choose a level.
	 * Its ready threads alone undercount a bubble whose other threads are blocked for a
	 * moment: the two stripes of a stencil, one waiting at the barrier when a
	 * regeneration closes the bubble, burst on one core and shared it until the next
	 * regeneration, every time (conduction ran on one VP of two). A counted bubble
	 * knows all its threads (exact up to nb_vps + 2, more than any level has VPs). */
	unsigned threads = __atomic_load_n(&b->nb_cached, __ATOMIC_RELAXED);
	if (b->counted) {
		long n = atomic_load_explicit(&b->nb_threads_sub, memory_order_relaxed);
		if (n > (long)threads)
			threads = (unsigned)n;
	}
	if (!threads)
		threads = 1;
	for (unsigned i = 1; i < w->path_len; i++)
		if (w->path[i]->level->nb_vps >= threads)
			return w->path[i];
	return w->path[w->path_len - 1];
}

static enum ma_pick ma_burst_sched(struct ma_worker *w, struct ma_runqueue *rq, struct ma_bubble *b,
				   struct ma_runqueue **to)
{
	if (rq->vp >= 0)
		return MA_PICK_SERVE;
	struct ma_runqueue *target = ma_burst_target(w, b);
	if (rq->level->depth >= target->level->depth)
		return MA_PICK_BURST;
	struct ma_runqueue *c = ma_rq_lightest_child(rq, w);
	if (!c)
		return MA_PICK_BURST;
	*to = c;
	return MA_PICK_MOVE;
}

const struct ma_strategy ma_strategy_burst = {
	.name = "burst",
	.alias = "explode",
	.description = "VPs pull bubbles down toward them; bubbles burst at their level, regenerated every 20 ms",
	.sched = ma_burst_sched,
	.default_timeslice_us = MA_BURST_TIMESLICE_US,
};
