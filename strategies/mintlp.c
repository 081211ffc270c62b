/*
 * mintlp: the 004 seed's MinTLP on asymmetric machines. The fast cores go to the
 * applications (bubbles of the root, or threads alone) with the fewest runnable threads,
 * the lowest first, with no turns: a thread keeps its fast core while nothing of lower
 * parallelism waits. Spinning waiters do not count (spin-then-notify).
 * strategies/ma_amp.h has the rules, amp.c the code it shares with pa.
 */
#include "ma_strategies.h"
#include "ma_amp.h"

static void ma_mintlp_start(const struct ma_view *v, void *priv, struct ma_dlist *out)
{
	ma_amp_start(v, priv, out, MA_AMP_MINTLP);
}

static void ma_mintlp_submit(const struct ma_view *v, void *priv, struct ma_dlist *out)
{
	(void)priv;
	ma_amp_submit(v, out);
}

static void ma_mintlp_tick(const struct ma_view *v, void *priv, struct ma_dlist *out)
{
	ma_amp_tick(v, priv, out, MA_AMP_MINTLP);
}

const struct ma_strategy ma_strategy_mintlp = {
	.name = "mintlp",
	.description = "asymmetric cores: fast ones to the applications with the fewest runnable threads",
	.heartbeat_us = MA_AMP_BEAT_US,
	.view_detail = MA_VIEW_TREE,
	.priv_size = sizeof(struct ma_amp_priv),
	.decide_start = ma_mintlp_start,
	.decide_submit = ma_mintlp_submit,
	.decide_tick = ma_mintlp_tick,
};
