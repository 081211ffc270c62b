/*
 * null: the baseline without placement. Bubbles stay closed on the machine's queue and
 * any VP serves their threads, round robin; nothing is ever burst or moved. It shows what
 * bubbles cost when they buy nothing, and what the other strategies gain.
 */
#include "ma_strategies.h"

static void ma_null_submit(struct ma_bubble *b)
{
	ma_bubble_place(b, &ma_rt.rqs[0]);
}

static enum ma_pick ma_null_sched(struct ma_worker *w, struct ma_runqueue *rq, struct ma_bubble *b,
				  struct ma_runqueue **to)
{
	(void)w, (void)rq, (void)b, (void)to;
	return MA_PICK_SERVE;
}

const struct ma_strategy ma_strategy_null = {
	.name = "null",
	.description = "no placement: bubbles stay closed on the machine's queue, any VP serves them",
	.submit = ma_null_submit,
	.sched = ma_null_sched,
};
