/*
 * What the cache, steal and gang strategies share beyond ma_strategy.h: the VPs and
 * queues of a subtree, its load counted in threads, waking a thief, taking an entity
 * queued in one subtree to another queue, and placing a bubble without queuing it.
 * Locking as in bubbles/holder.c (ma_bubble.h): call these with no lock held unless
 * said otherwise.
 */
#ifndef MA_COMMON_STEAL_H
#define MA_COMMON_STEAL_H

#include "ma_strategies.h"
/* ma_bubble_threads_locked, ma_wake_outside, ma_rq_subtree_load: the bubble layer's,
 * shared with its view builder and decision executor. */
#include "ma_view_build.h"

/* Number of VPs whose find_next looks at rq. */
unsigned ma_sl_nb_vps(const struct ma_runqueue *rq) MA_HIDDEN;
/* Whether VP v looks at rq. */
int ma_sl_sees(const struct ma_runqueue *rq, unsigned v) MA_HIDDEN;
/* Whether queue q is rq or lies below it. */
int ma_sl_within(const struct ma_runqueue *q, const struct ma_runqueue *rq) MA_HIDDEN;
/* Entities queued on rq and the queues below it (lock-free estimate). */
unsigned long ma_sl_queued(const struct ma_runqueue *rq) MA_HIDDEN;
/* rq and every queue below it (item queues top-down, then VP queues); returns the count
 * (at most max). */
unsigned ma_sl_queues(struct ma_runqueue *rq, struct ma_runqueue **out, unsigned max) MA_HIDDEN;
/* The subtrees just below rq: child item queues with VPs, and the VP queues of the VPs
 * whose item rq is. Returns the count (at most max). */
unsigned ma_sl_kids(struct ma_runqueue *rq, struct ma_runqueue **out, unsigned max) MA_HIDDEN;

/* Threads running (anywhere) that belong below rq: scheduled on a queue of rq's subtree
 * or in a closed bubble placed there (those of queues above rq belong to no subtree).
 * Not self's, nor those of closed bubble `except` (NULL: none). Lock-free estimate. */
unsigned long ma_sl_running(const struct ma_runqueue *rq, const struct ma_worker *self,
			    const struct ma_bubble *except) MA_HIDDEN;
/* Threads below rq, lock-free estimate: entities queued (a bubble counts one) plus the
 * running ones (ma_sl_running, nothing excepted). */
unsigned long ma_sl_load(const struct ma_runqueue *rq, const struct ma_worker *self) MA_HIDDEN;
/* The same, with each queued closed bubble counted as its ready threads (queues are
 * locked one at a time; for idle VPs and placement decisions, not for hot paths). */
unsigned long ma_sl_load_exact(struct ma_runqueue *rq, const struct ma_worker *self) MA_HIDDEN;

/* Whether a VP that looks at rq is idle (polling or asleep): it will take rq's work. */
int ma_sl_has_idle(const struct ma_runqueue *rq) MA_HIDDEN;

/* Decides whether to take an entity of `threads` threads (whose `visible` ready threads
 * are counted in the victim's load). */
typedef int (*ma_sl_accept)(unsigned threads, unsigned visible, void *arg);
/* Takes a closed bubble queued on `from` (the first `accept` agrees to) and queues it on
 * `to`, closed. 1 if one was taken. */
int ma_sl_take_bubble(struct ma_runqueue *from, struct ma_runqueue *to, ma_sl_accept accept,
		      void *arg) MA_HIDDEN;
/* Where a queued thread's bubble burst, seen from a thief whose side is `mine` stealing
 * from subtree `victim`: taking a HOMING thread brings it back beside its bubble's other
 * threads, taking a BOUND one separates it from them, a LOOSE one (main, a thread of no
 * bubble, or of one opened elsewhere) makes no difference. */
enum ma_sl_kin { MA_SL_HOMING, MA_SL_LOOSE, MA_SL_BOUND };
/* The queue thread e's bubble burst on, NULL if none (main, the root's threads, a bubble
 * held closed in another). e must be queued on a locked queue or be the caller, so that
 * its bubble cannot go; the bubble's holder is read unlocked (it only guides a choice). */
struct ma_runqueue *ma_sl_bubble_home(const struct ma_entity *e) MA_HIDDEN;
/* Takes a thread of kin `kin` queued on `from` (not pinned) and queues it on `to`, or, if
 * HOMING and `to` lies below the queue its bubble burst on, on that queue. A BOUND thread
 * is marked stray (marcel_task.stray), a HOMING one no longer. 1 if one was taken. */
int ma_sl_take_thread(struct ma_runqueue *from, struct ma_runqueue *to, const struct ma_runqueue *mine,
		      const struct ma_runqueue *victim, enum ma_sl_kin kin, ma_sl_accept accept,
		      void *arg) MA_HIDDEN;

#endif
