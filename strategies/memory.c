/*
 * memory: spread's distribution (spread.c, distrib.c) where a bubble first goes to the
 * NUMA node holding most of the memory attached to its subtree (marcel_bubble_attach_mem,
 * bubbles/memory.c), and only the rest is balanced by load. It keeps its own placed-load
 * figures, so switching between spread and memory starts both afresh.
 */
#include "ma_spread.h"

static int ma_memory_init(void)
{
	return ma_spread_init_common(1);
}

static void ma_memory_exit(void)
{
	ma_spread_exit_common(1);
}

static void ma_memory_start(void)
{
	ma_spread_start_common(1);
}

static void ma_memory_submit(struct ma_bubble *b)
{
	ma_spread_submit_common(b, 1);
}

const struct ma_strategy ma_strategy_memory = {
	.name = "memory",
	.description = "a bubble goes to the NUMA node holding most of its attached memory; the rest is "
		       "balanced by load",
	.init = ma_memory_init,
	.exit = ma_memory_exit,
	.start = ma_memory_start,
	.submit = ma_memory_submit,
};
