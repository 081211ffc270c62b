/*
 * The ops table every bubble scheduler fills, the strategy in use, and the dispatchers
 * through which bubbles/ and the core call it. The strategies themselves and their
 * registry live above, in strategies/; bubbles/ never names one of them.
 *
 * A strategy decides; bubbles/ executes. Hooks are called with no lock held except sched,
 * which is called with the run queue locked and must only read: it returns what to do
 * with the bubble find_next met, and bubbles/ does it in lock order.
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

/* The strategy in use (never NULL while the runtime runs). */
extern const struct ma_strategy *_Atomic ma_strategy_cur MA_HIDDEN;
/* Whether marcel_bubble_sched_begin was called. */
extern atomic_int ma_sched_begun MA_HIDDEN;

static inline const struct ma_strategy *ma_strategy(void)
{
	return atomic_load_explicit(&ma_strategy_cur, memory_order_acquire);
}

/* Makes s the strategy in use at marcel_init (nothing begun yet, no handle): its init,
 * then it is current. 0, or init's errno with nothing changed. */
int ma_strategy_select(const struct ma_strategy *s) MA_HIDDEN;
/* At marcel_end or a failed marcel_init: the current strategy's exit; none is current. */
void ma_strategy_deselect(void) MA_HIDDEN;
/* marcel_bubble_change_sched: makes s current (its init first, the old one's exit
 * after, under the change lock; then its start if marcel_bubble_sched_begin was called)
 * and remembers `handle`, what the program named it by. *old_handle: the handle that was
 * current (the old strategy itself if none was given). 0, or s's init errno with nothing
 * changed. */
int ma_strategy_switch(const struct ma_strategy *s, const void *handle, const void **old_handle) MA_HIDDEN;
/* The handle last given to ma_strategy_switch, NULL if none since selection. Never read
 * through: an instance may be gone once it is no longer in use. */
const void *ma_strategy_handle(void) MA_HIDDEN;

/* ---- dispatchers: the NULL defaults of the hooks live here ---- */
/* Hands woken bubble b to the strategy (or places it on its parent's queue). */
void ma_strategy_submit(struct ma_bubble *b) MA_HIDDEN;
/* An idle worker found nothing: 1 if the strategy made work visible to w. */
int ma_strategy_vp_idle(struct ma_worker *w) MA_HIDDEN;
/* A thread the strategy marked stray yields on w; without a stray hook, the mark (of a
 * strategy no longer in use) is cleared. */
void ma_strategy_stray(struct ma_worker *w, struct marcel_task *t) MA_HIDDEN;

#endif
