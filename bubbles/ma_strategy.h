/*
 * Strategies: the ops table every bubble scheduler fills, and the registry.
 *
 * A strategy decides; the core (bubbles/) executes. Hooks are called with no lock held
 * except sched, which is called with the run queue locked and must only read: it returns
 * what to do with the bubble find_next met, and the core does it in lock order.
 */
#ifndef MA_STRATEGY_H
#define MA_STRATEGY_H

#include "ma_bubble.h"

/* What find_next does with a closed bubble it took from a run queue. */
enum ma_pick {
	MA_PICK_SERVE,  /* run one of its threads here (from its cache) */
	MA_PICK_BURST,  /* burst it on this queue, then look again */
	MA_PICK_MOVE,   /* move it to *to (a queue), then look again */
};

struct ma_strategy {
	const char *name;
	const char *alias;               /* another accepted name, or NULL */
	const char *description;         /* one line */
	/* Selected (at marcel_init or marcel_bubble_change_sched): 0 or an errno value. */
	int (*init)(void);
	/* Deselected or runtime stopping. */
	void (*exit)(void);
	/* marcel_bubble_sched_begin: the whole root bubble at once. */
	void (*start)(void);
	/* A closed, woken bubble whose parent is opened: place it (the core places it on the
	 * parent's queue when this is NULL). */
	void (*submit)(struct ma_bubble *b);
	/* marcel_bubble_shake: NULL means regenerate (gather, then submit again). */
	void (*shake)(struct ma_bubble *b);
	/* An idle worker found nothing: 1 if it made work visible to w (then w looks again). */
	int (*vp_is_idle)(struct ma_worker *w);
	/* A thread it marked stray (marcel_task.stray) yields on w; NULL clears the mark. */
	void (*stray)(struct ma_worker *w, struct marcel_task *t);
	/* b's regeneration period expired (NULL: regenerate it). */
	void (*tick)(struct ma_bubble *b);
	/* find_next met closed bubble b at the head of rq (rq locked; read only). NULL: serve. */
	enum ma_pick (*sched)(struct ma_worker *w, struct ma_runqueue *rq, struct ma_bubble *b,
			      struct ma_runqueue **to);
	/* Regeneration period given to bubbles that have none (0: none). */
	unsigned long default_timeslice_us;
	/* A bubble of seeds may stay private to the VP that woke it until another VP wants
	 * work (bubbles/private.c): right for a strategy that keeps a woken bubble where it
	 * started anyway. */
	unsigned char private_levels;
};

extern const struct ma_strategy ma_strategy_null MA_HIDDEN;
extern const struct ma_strategy ma_strategy_burst MA_HIDDEN;
extern const struct ma_strategy ma_strategy_spread MA_HIDDEN;
extern const struct ma_strategy ma_strategy_cache MA_HIDDEN;
extern const struct ma_strategy ma_strategy_steal MA_HIDDEN;
extern const struct ma_strategy ma_strategy_gang MA_HIDDEN;
extern const struct ma_strategy ma_strategy_memory MA_HIDDEN;

/* The strategy in use (never NULL while the runtime runs). */
extern const struct ma_strategy *_Atomic ma_strategy_cur MA_HIDDEN;
/* Whether marcel_bubble_sched_begin was called. */
extern atomic_int ma_sched_begun MA_HIDDEN;

static inline const struct ma_strategy *ma_strategy(void)
{
	return atomic_load_explicit(&ma_strategy_cur, memory_order_acquire);
}

/* Looks a strategy up by name or alias; NULL if unknown. */
const struct ma_strategy *ma_strategy_lookup(const char *name) MA_HIDDEN;
/* At marcel_init: selects ma_rt.opt.bubble_sched (or the default). "list" prints the
 * names and exits; an unknown name prints the valid ones and returns EINVAL. */
int ma_strategies_start(void) MA_HIDDEN;
void ma_strategies_stop(void) MA_HIDDEN;
/* Hands woken bubble b to the strategy (or places it on its parent's queue). */
void ma_strategy_submit(struct ma_bubble *b) MA_HIDDEN;

/* ---- helpers shared by strategies (strategies/common.c) ---- */
/* The run queue of the item covering VP w's path at sched level `kind` (a kind bit), as
 * documented for marcel_entity_setschedlevel; NULL if kind is 0. */
struct ma_runqueue *ma_strategy_level_rq(const struct ma_worker *w, int kind) MA_HIDDEN;
/* Work visible below rq: ready entities queued in its subtree plus busy workers. */
unsigned long ma_rq_subtree_load(const struct ma_runqueue *rq) MA_HIDDEN;
/* The child queue of rq (an item queue) with the least load per VP, ties broken toward
 * prefer (a VP whose path it is on), NULL if rq has no child items with VPs. */
struct ma_runqueue *ma_rq_lightest_child(const struct ma_runqueue *rq, const struct ma_worker *prefer) MA_HIDDEN;
/* Children item queues of rq that have VPs, in index order (returns the count). */
unsigned ma_rq_children(const struct ma_runqueue *rq, struct ma_runqueue **out, unsigned max) MA_HIDDEN;

#endif
