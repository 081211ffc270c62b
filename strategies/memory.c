/*
 * memory: spread's distribution (spread.c, distrib.c) where a bubble first goes to the
 * NUMA node holding most of the memory attached to its subtree (marcel_bubble_attach_mem,
 * bubbles/memory.c), and only the rest is balanced by load. Its views carry the preferred
 * nodes (MA_VIEW_MEMORY). It keeps its own placed-load figures, so switching between
 * spread and memory starts both afresh.
 */
#include "ma_spread.h"

static void ma_memory_start(const struct ma_view *v, void *priv, struct ma_dlist *out)
{
	ma_spread_decide_start(v, priv, out, 1);
}

static void ma_memory_submit(const struct ma_view *v, void *priv, struct ma_dlist *out)
{
	ma_spread_decide_submit(v, priv, out, 1);
}

const struct ma_strategy ma_strategy_memory = {
	.name = "memory",
	.description = "a bubble goes to the NUMA node holding most of its attached memory; the rest is "
		       "balanced by load",
	.view_detail = MA_VIEW_MEMORY | MA_VIEW_SHAPE,
	.priv_size = sizeof(struct ma_spread_priv),
	.priv_exit = ma_spread_priv_exit,
	.decide_start = ma_memory_start,
	.decide_submit = ma_memory_submit,
};
