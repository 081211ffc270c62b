/* What several strategies need: levels seen from a VP, and load below a run queue. */
#include "ma_strategies.h"
#include "ma_view_build.h"

struct ma_runqueue *ma_strategy_level_rq(const struct ma_worker *w, int kind)
{
	if (!kind)
		return NULL;
	/* path[0] is the VP's own queue; items follow, leaf first. */
	for (unsigned i = 1; i < w->path_len; i++)
		if (w->path[i]->level->kinds & (unsigned)kind)
			return w->path[i];
	if (kind == MARCEL_LEVEL_CORE || kind == MARCEL_LEVEL_PU)
		return w->path[1];
	return w->path[w->path_len - 1];
}

unsigned ma_rq_children(const struct ma_runqueue *rq, struct ma_runqueue **out, unsigned max)
{
	if (rq->vp >= 0)
		return 0;
	unsigned n = 0;
	for (unsigned i = 0; i < rq->level->arity && n < max; i++) {
		const struct ma_level *c = rq->level->children[i];
		if (c->nb_vps)
			out[n++] = &ma_rt.rqs[c->id];
	}
	return n;
}
