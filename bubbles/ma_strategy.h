/*
 * The strategy in use and the dispatchers through which bubbles/ and the core reach it:
 * they hold the defaults of the hooks a table leaves NULL, build the views its hooks
 * read and carry their decisions out. The table itself (struct ma_strategy, its hooks
 * and their contract) is ma_strategy_ops.h, which a strategy includes without the
 * runtime. The strategies and their registry live above, in strategies/; bubbles/ never
 * names one of them.
 */
#ifndef MA_STRATEGY_H
#define MA_STRATEGY_H

#include "ma_bubble.h"
/* The table, and the view and decision types its hooks take. */
#include "ma_strategy_ops.h"

/* What find_next does with a closed bubble it took from a run queue. */
enum ma_pick {
	MA_PICK_SERVE,  /* run one of its threads here (from its cache) */
	MA_PICK_BURST,  /* burst it on this queue, then look again */
	MA_PICK_MOVE,   /* move it to *to (a queue), then look again */
};


/*
 * The strategy in use with its private block, published as one pointer (release when
 * made current, acquire when read), so a hook always gets its own strategy's block and
 * never one whose priv_init has not finished. One per table, made at its first selection
 * and never freed while the runtime runs: a hook that read it just before a switch may
 * still use it (its private block has a grace period of its own, strategy.c).
 */
struct ma_strategy_use {
	const struct ma_strategy *s;
	/* s->priv_size bytes while s is in use; NULL if 0, or once s is no longer in use
	 * (strategy.c: the block is freed after a grace period). */
	void *_Atomic priv;
	/* s->private_levels, read on every nested spawn (private.c) with one load less. */
	unsigned char private_levels;
	struct ma_strategy_use *next;      /* strategy.c: every use made so far */
};

/* The strategy in use (never NULL while the runtime runs). */
extern struct ma_strategy_use *_Atomic ma_strategy_cur MA_HIDDEN;
/* Whether marcel_bubble_sched_begin was called. */
extern atomic_int ma_sched_begun MA_HIDDEN;

static inline const struct ma_strategy_use *ma_strategy_current(void)
{
	return atomic_load_explicit(&ma_strategy_cur, memory_order_acquire);
}

static inline const struct ma_strategy *ma_strategy(void)
{
	const struct ma_strategy_use *u = ma_strategy_current();
	return u ? u->s : NULL;
}

/* Makes s the strategy in use at marcel_init (nothing begun yet, no handle): its private
 * block, its priv_init and init, then it is current. 0, or ENOMEM or the errno of its
 * priv_init or init, with nothing changed. */
int ma_strategy_select(const struct ma_strategy *s) MA_HIDDEN;
/* At marcel_end or a failed marcel_init: the current strategy's exit and priv_exit; none
 * is current. */
void ma_strategy_deselect(void) MA_HIDDEN;
/* marcel_bubble_change_sched: makes s current (its private block, priv_init and init
 * first, the old one's exit and priv_exit after, under the strategy lock; then its start
 * if marcel_bubble_sched_begin was called) and remembers `handle`, what the program named
 * it by. *old_handle: the handle that was current (the old strategy itself if none was
 * given). 0, or ENOMEM or s's priv_init or init errno with nothing changed. */
int ma_strategy_switch(const struct ma_strategy *s, const void *handle, const void **old_handle) MA_HIDDEN;
/* The handle last given to ma_strategy_switch, NULL if none since selection. Never read
 * through: an instance may be gone once it is no longer in use. */
const void *ma_strategy_handle(void) MA_HIDDEN;
/* Once every worker has stopped (ma_bubbles_stop): frees the uses and the private blocks
 * still waiting for their grace period. */
void ma_strategy_reclaim(void) MA_HIDDEN;

/* ---- heartbeat.c: the strategy's heartbeat (heartbeat_us) ---- */
/* Sets its bubble up if this runtime has none yet: 0, or marcel_bubble_init's errno.
 * The strategy lock held. */
int ma_heartbeat_prepare(void) MA_HIDDEN;
/* The strategy in use is now one with this period (0: none): a beat armed before is
 * cancelled. After ma_heartbeat_prepare; the strategy lock held. */
void ma_heartbeat_start(unsigned long period_us) MA_HIDDEN;
/* One tick of the strategy in use one period from now (nothing if one is armed, if the
 * strategy has no heartbeat, or outside a worker, where no timer lives). Any lock but a
 * bubble's or a queue's may be held. */
void ma_heartbeat_arm(void) MA_HIDDEN;
/* No tick any more (one on its way may still come). */
void ma_heartbeat_stop(void) MA_HIDDEN;
/* Stopped, and its bubble forgotten: the runtime is stopping (marcel_end), the next
 * marcel_init sets up another. */
void ma_heartbeat_forget(void) MA_HIDDEN;
/* Whether b is the heartbeat's bubble. */
int ma_heartbeat_is(const struct ma_bubble *b) MA_HIDDEN;

/* ---- dispatchers: the NULL defaults of the hooks live here ---- */
/* Hands woken bubble b to the strategy (or places it on its parent's queue). */
void ma_strategy_submit(struct ma_bubble *b) MA_HIDDEN;
/* b's regeneration period expired (b referenced by the caller; no lock held). */
void ma_strategy_tick(struct ma_bubble *b) MA_HIDDEN;
/* An idle worker found nothing: 1 if the strategy made work visible to w (a decision of
 * decide_vp_idle was carried out). */
int ma_strategy_vp_idle(struct ma_worker *w) MA_HIDDEN;
/* A thread the strategy marked stray yields on w; without a stray hook, the mark (of a
 * strategy no longer in use) is cleared. */
void ma_strategy_stray(struct ma_worker *w, struct marcel_task *t) MA_HIDDEN;
/* find_next met closed bubble b at the head of rq (locked) and u's strategy decides with
 * decide_pick: its decision as ma_bubble_picked acts on it (*to: the queue of a MOVE). */
enum ma_pick ma_strategy_pick(const struct ma_strategy_use *u, const struct ma_worker *w, struct ma_runqueue *rq,
			      struct ma_bubble *b, struct ma_runqueue **to) MA_HIDDEN;

/* What the decision hooks asked for since the process started, summed over every list
 * the dispatchers carried out (decide_pick's single decisions are not lists). A list
 * that overflowed is never silent: `lost` counts the decisions it could not hold. */
struct ma_decide_stats {
	unsigned long lists;     /* lists carried out */
	unsigned long done;      /* decisions carried out */
	unsigned long dropped;   /* decisions dropped by the executor (stale, refused) */
	unsigned long lost;      /* decisions a hook pushed on a full list */
};
void ma_strategy_decide_stats(struct ma_decide_stats *out) MA_HIDDEN;

#endif
