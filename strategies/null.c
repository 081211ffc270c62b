/*
 * null: the baseline without placement. Bubbles stay closed on the machine's queue and
 * any VP serves their threads, round robin; nothing is ever burst or moved. It shows what
 * bubbles cost when they buy nothing, and what the other strategies gain.
 *
 * It decides on the view alone (bubbles/ma_view.h): a bubble handed to it is placed on
 * the machine's queue, whatever the loads and wherever its parent is opened; a bubble met
 * by find_next is served (no decide_pick). Its decisions are unit-tested without the
 * runtime (tests/check_strategies.c).
 */
#include "ma_strategies.h"
#include "ma_view.h"

/* The machine's item: queue number 0 in every view. */
#define MA_NULL_ITEM 0

static void ma_null_submit(const struct ma_view *v, void *priv, struct ma_dlist *out)
{
	(void)priv;
	struct ma_decision d = { .kind = MA_D_PLACE, .entity = v->root->id, .item = MA_NULL_ITEM };
	/* Refused only by a full list, which counts it (the dispatcher reports it). */
	(void)ma_dlist_push(out, &d);
}

const struct ma_strategy ma_strategy_null = {
	.name = "null",
	.description = "no placement: bubbles stay closed on the machine's queue, any VP serves them",
	.decide_submit = ma_null_submit,
	/* It reads nothing of the queues. */
	.view_detail = MA_VIEW_SHAPE,
	/* A bubble is its only business: threads that name none may stay outside the tree. */
	.free_threads = 1,
};
