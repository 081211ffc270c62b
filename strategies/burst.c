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
 *
 * It decides on the pick view alone (decide_pick): nothing here reads the runtime.
 */
#include "ma_strategies.h"
#include "ma_view.h"

#define MA_BURST_TIMESLICE_US 20000

/* The item bubble b bursts on, seen from VP vp: a queue number. */
static int ma_burst_level(const struct ma_topo *t, unsigned vp, const struct ma_vnode *b)
{
	if (b->sched_level)
		return ma_topo_path_item(t, vp, (unsigned)b->sched_level);
	/* The pick view's figures are read without b's lock (find_next holds a queue): an
	 * estimate is enough to choose a level. Its ready threads alone undercount a bubble
	 * whose other threads are blocked for a moment: the two stripes of a stencil, one
	 * waiting at the barrier when a regeneration closes the bubble, burst on one core and
	 * shared it until the next regeneration, every time (conduction ran on one VP of
	 * two). A counted bubble knows all its threads (nb_threads; 0 if it does not count). */
	unsigned threads = b->nb_cached > b->nb_threads ? b->nb_cached : b->nb_threads;
	if (!threads)
		threads = 1;
	for (const struct ma_level *l = t->vps[vp].leaf; l; l = l->parent)
		if (l->nb_vps >= threads)
			return (int)l->id;
	return 0;
}

/* The child item with the least work per VP, the asking VP's own on ties; -1 if none. */
static int ma_burst_lightest(const struct ma_pick_view *pv)
{
	const struct ma_pick_kid *best = NULL;
	for (unsigned i = 0; i < pv->nb_kids; i++) {
		const struct ma_pick_kid *k = &pv->kids[i];
		if (!best) {
			best = k;
			continue;
		}
		/* work_k / vps_k < work_best / vps_best, without a division. */
		unsigned long long a = (unsigned long long)k->work * best->nb_vps,
				   b = (unsigned long long)best->work * k->nb_vps;
		if (a < b || (a == b && k->mine && !best->mine))
			best = k;
	}
	return best ? best->item : -1;
}

static struct ma_decision ma_burst_pick(const struct ma_pick_view *pv, const void *priv)
{
	(void)priv;
	struct ma_decision d = { .kind = MA_D_SERVE, .entity = pv->b.id, .item = pv->item };
	if (ma_pick_on_vp(pv) || pv->self_vp < 0)
		return d;
	const struct ma_topo *t = pv->topo;
	int at = ma_burst_level(t, (unsigned)pv->self_vp, &pv->b);
	d.kind = MA_D_BURST;
	if (t->levels[pv->item].depth >= t->levels[at].depth)
		return d;
	if (!pv->has_kids) {
		d.flags = MA_D_KIDS;
		return d;
	}
	int c = ma_burst_lightest(pv);
	if (c >= 0) {
		d.kind = MA_D_MOVE;
		d.item = c;
	}
	return d;
}

const struct ma_strategy ma_strategy_burst = {
	.name = "burst",
	.alias = "explode",
	.description = "VPs pull bubbles down toward them; bubbles burst at their level, regenerated every 20 ms",
	.decide_pick = ma_burst_pick,
	.default_timeslice_us = MA_BURST_TIMESLICE_US,
	/* It sees closed bubbles on the queues only; the root and the children bubbles stay
	 * opened: threads that name no bubble may stay outside the tree. */
	.free_threads = 1,
};
