/*
 * pa: parallelism-aware placement on asymmetric machines (the 004 seed's PA). Each
 * application (a bubble of the root, or a thread alone) is classed by its thread-level
 * parallelism: one in a serial phase (several threads, one runnable) gets the fast cores
 * first, for MA_AMP_BOOST_BEATS; then applications of low parallelism (at most
 * hp_threshold = fast cores + 1 runnable threads), their master threads
 * (marcel_task_setmaster, main's) first, sharing the fast cores in turns of
 * MA_AMP_BOOST_BEATS; highly parallel ones stay on the slow cores. Spinning waiters do not count (spin-then-notify). A thread goes
 * to the fast core nearest to where it last ran, and back to its memory domain after.
 * strategies/ma_amp.h has the rules, amp.c the code it shares with mintlp.
 */
#include "ma_strategies.h"
#include "ma_amp.h"

static void ma_pa_start(const struct ma_view *v, void *priv, struct ma_dlist *out)
{
	ma_amp_start(v, priv, out, MA_AMP_PA);
}

static void ma_pa_submit(const struct ma_view *v, void *priv, struct ma_dlist *out)
{
	(void)priv;
	ma_amp_submit(v, out);
}

static void ma_pa_tick(const struct ma_view *v, void *priv, struct ma_dlist *out)
{
	ma_amp_tick(v, priv, out, MA_AMP_PA);
}

const struct ma_strategy ma_strategy_pa = {
	.name = "pa",
	.description = "asymmetric cores: fast ones to serial phases, master threads, then applications of low "
		       "parallelism in turns",
	.heartbeat_us = MA_AMP_BEAT_US,
	.view_detail = MA_VIEW_TREE,
	.priv_size = sizeof(struct ma_amp_priv),
	.decide_start = ma_pa_start,
	.decide_submit = ma_pa_submit,
	.decide_tick = ma_pa_tick,
};
