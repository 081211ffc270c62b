/*
 * The ops table every bubble scheduler fills: its identity, a few declarative knobs, and
 * its decision hooks. This header needs the view and decision types alone (ma_view.h,
 * and through it the topology): a strategy is compiled against it and nothing of the
 * runtime (strategies/Makefile.am gives the strategies no other include folder), so it
 * can be unit-tested or simulated on views made by hand.
 *
 * A strategy decides; bubbles/ executes. Each hook reads a view and the strategy's
 * private block and appends decisions to a list; the dispatcher (ma_strategy.h,
 * strategy.c) builds the view, calls the hook, carries the list out
 * (ma_decisions_execute, which checks each decision under its locks against what the
 * view saw) and releases the view. A hook left NULL gets the default its dispatcher
 * holds, written beside each hook below.
 *
 * Locks. The serialised hooks (priv_init, priv_exit, decide_start, decide_submit,
 * decide_shake, decide_tick) run under the strategy lock (strategy.c), one at a time,
 * and only between their strategy's priv_init and its priv_exit: the dispatcher reads
 * the strategy in use under that lock. For decide_submit, decide_shake and decide_tick
 * it holds the lock only while the hook runs: the view is built before and the list
 * carried out after, so the hook may see a view a little older than priv (another VP's
 * decision carried out in between; the executor checks each decision against what is
 * there then). For decide_start it holds the lock throughout, its rounds
 * (ma_dlist.again) and the list of each included, and those take the tree, bubble,
 * queue and estimate locks: the strategy lock comes before every other lock of bubbles/
 * and of the core, and nobody takes it while holding one of those. A thread that holds
 * it takes it again without waiting: carrying start's decisions out may hand a bubble
 * back to the strategy (a GATHER whose bubble closes at once resubmits it), and that
 * nested call (ma_view.nested) runs its hook with priv as start left it.
 * The concurrent hooks (decide_vp_idle, decide_pick, decide_stray) run on any number of
 * VPs at once and without that lock, possibly while a serialised hook of the same
 * strategy writes priv: they only read it, through _Atomic members for what a serialised
 * hook may change meanwhile. A concurrent hook may also still run just after its
 * strategy was switched away from (it read the strategy in use before the switch): it
 * then gets its old block, which stays allocated, untouched, until no VP is in such a
 * hook any more (a grace period, strategy.c), or is not called at all.
 * No hook may block (sleep, or wait for a marcel thread or for a lock that a marcel
 * thread may hold while it blocks).
 *
 * Adding a strategy: doc/architecture.md §5, "Adding a strategy".
 */
#ifndef MA_STRATEGY_OPS_H
#define MA_STRATEGY_OPS_H

#include <stddef.h>
#include "ma_view.h"

#ifndef MA_HIDDEN
#define MA_HIDDEN __attribute__((visibility("hidden")))
#endif

struct ma_strategy {
	/* ---- identity: name and description are required, the rest optional ---- */
	const char *name;
	const char *alias;               /* another accepted name, or NULL */
	const char *description;         /* one line */
	/* Regeneration period given to bubbles that have none (0: none). */
	unsigned long default_timeslice_us;
	/* A bubble of seeds may stay private to the VP that woke it until another VP wants
	 * work (bubbles/private.c): right for a strategy that keeps a woken bubble where it
	 * started anyway. */
	unsigned char private_levels;
	/* Its hooks never read the root bubble's members or children bubbles, so threads
	 * created before the program asks for a bubble may stay outside the tree
	 * (bubbles/free.c); any other strategy, once selected, puts them in. */
	unsigned char free_threads;
	/* Period of the strategy's heartbeat in microseconds, 0: none. While the strategy
	 * is in use, a decision list with `beat` set (ma_dlist) brings decide_tick back once,
	 * on a view without root, that long after: the clock a strategy watches time slices
	 * or starving queues with. */
	unsigned long heartbeat_us;
	/* decide_stray is called at one yield of a stray thread in this many (0 or 1: at
	 * each), counted on the thread: its way home is looked at now and then, not at every
	 * switch, and a view is built only then. */
	unsigned stray_every;
	/* Detail every view of its serialised decision hooks is built with (MA_VIEW_READY,
	 * MA_VIEW_MEMORY, MA_VIEW_PLACED of ma_view.h; each costs locks or a walk), 0:
	 * the counters and the subtree alone. A hook that needs more only now and then asks
	 * for it by setting out->again (ma_view.h): the dispatcher carries its list out,
	 * then calls it again on a view with that detail, twice at most. */
	unsigned view_detail;

	/* ---- the hooks: every one optional ---- */

	/*
	 * priv_size: bytes of the strategy's private block, which replaces file statics: the
	 * dispatcher allocates it zeroed when the strategy is selected (marcel_init) or
	 * switched to (marcel_bubble_change_sched), before priv_init, and frees it after
	 * priv_exit, once no concurrent hook can read it any more: at a serialised event or
	 * a switch after every VP has left the concurrent hooks it was in, at the latest when
	 * the runtime stops. Each selection gets a new block. Every hook gets it as `priv`.
	 * 0: no block, priv is NULL (and the concurrent hooks cost no locked instruction).
	 */
	size_t priv_size;
	/*
	 * priv_init(priv): the strategy is about to be the one in use.
	 * Called by: ma_strategy_select (marcel_init), ma_strategy_switch.
	 * Locks: the strategy lock. Serialised. May allocate; must not block.
	 * Returns 0, or an errno value: the strategy is then not used and nothing changes
	 * (the block is freed without priv_exit).
	 * NULL: the zeroed block is the initial state.
	 */
	int (*priv_init)(void *priv);
	/*
	 * priv_exit(priv): the block is about to be freed: its strategy was switched away
	 * from or deselected (marcel_end, a failed marcel_init) and no hook can read this
	 * block any more. It may run while the same strategy is in use again with another
	 * block: it undoes only what this block holds (frees what it allocated).
	 * Called by: the grace-period sweep (a later serialised event or switch, or the
	 * runtime's stop). Locks: the strategy lock. Serialised. Must not block.
	 * NULL: nothing to undo.
	 */
	void (*priv_exit)(void *priv);
	/*
	 * decide_start(v, priv, out): distribute the whole bubble tree, once the program says
	 * its bubbles are built.
	 * Called by: marcel_bubble_sched_begin, and ma_strategy_switch when that was called
	 * before the switch.
	 * View: ma_view_build_tree, the root bubble (opened on the machine's queue) as
	 * v->root. Locks: the strategy lock. Serialised; may write priv. Must not block.
	 * NULL: nothing (bubbles are placed as they are woken).
	 */
	void (*decide_start)(const struct ma_view *v, void *priv, struct ma_dlist *out);
	/*
	 * decide_submit(v, priv, out): place a woken closed bubble whose parent is opened: it
	 * was woken, gathered by a regeneration, moved to another parent, or handed over by
	 * marcel_bubble_submit or a shake.
	 * Called by: ma_strategy_submit. Not for a bubble fixed by scheduleonlevel, which the
	 * dispatcher places on its item itself.
	 * View: ma_view_build_subtree of the bubble (v->root). Locks: the strategy lock.
	 * Serialised; may write priv. Must not block.
	 * NULL: the bubble goes, closed, on its parent's queue (the machine's if the parent
	 * is not on a run queue).
	 */
	void (*decide_submit)(const struct ma_view *v, void *priv, struct ma_dlist *out);
	/*
	 * decide_shake(v, priv, out): the program asks for a redistribution of a woken bubble
	 * (not the root).
	 * Called by: marcel_bubble_shake (each woken bubble under the root in turn),
	 * marcel_bubble_shake_bubble.
	 * View: ma_view_build_subtree of the bubble. Locks: the strategy lock. Serialised; may
	 * write priv. Must not block.
	 * NULL: an opened bubble is gathered (resubmitted once closed), a closed unit
	 * submitted again; anything else is left as it is.
	 */
	void (*decide_shake)(const struct ma_view *v, void *priv, struct ma_dlist *out);
	/*
	 * decide_tick(v, priv, out): a bubble's regeneration period expired (its own, or the
	 * strategy's default_timeslice_us), or the strategy's heartbeat beats (v->root NULL:
	 * a beat a list asked for, heartbeat_us after it).
	 * Called by: ma_strategy_tick, from ma_bubble_work at a worker's scheduling point (a
	 * yield, an idle turn; maybe on the stack of a preempted thread).
	 * View: ma_view_build_subtree of the bubble, or of none for the heartbeat. Locks: the
	 * strategy lock. Serialised; may write priv. Must not block. Neither the bubble's
	 * timer nor the heartbeat is armed again by the dispatcher (out->beat does the
	 * latter).
	 * NULL: regen.c's rule (ma_bubble_regen_due): gather it if regenerating is worth it
	 * now, else look again one period later; nothing for the heartbeat.
	 */
	void (*decide_tick)(const struct ma_view *v, void *priv, struct ma_dlist *out);
	/*
	 * decide_vp_idle(v, priv, out): VP v->self_vp found nothing to run; what may it take?
	 * Called by: ma_strategy_vp_idle, from the worker's idle loop (the vp_idle core hook).
	 * View: ma_view_build_vp (ready threads counted; v->waiting lists what waits off the
	 * VP's path). Locks: none. Concurrent, on every idle VP at once: priv read-only.
	 * Must not block.
	 * NULL: nothing (the VP goes on polling, then sleeps).
	 */
	void (*decide_vp_idle)(const struct ma_view *v, const void *priv, struct ma_dlist *out);
	/*
	 * decide_pick(pv, priv): find_next met closed bubble pv->b at the head of queue
	 * pv->item: serve it here, burst it here, or move it?
	 * Called by: ma_bubble_picked (the pick core hook), for every closed bubble find_next
	 * meets, on find_next's hottest bubble path.
	 * View: ma_pick_view_fill, without the children items of the queue (has_kids 0).
	 * Locks: that run queue's, held by the caller. Concurrent: priv read-only. Bounded
	 * time, no allocation, no lock, no call into the runtime.
	 * Returns one decision about pv->b (its entity must be pv->b.id): MA_D_SERVE;
	 * MA_D_BURST with item pv->item (bursts it on this queue); MA_D_MOVE to another
	 * queue; or any decision with MA_D_KIDS, "ask me again with the children items": the
	 * dispatcher fills them in (ma_pick_view_kids: every VP below the queue is read, so a
	 * hook asks only when it needs them) and calls the hook once more, which must then
	 * answer. MA_D_LOAD asks the same way for the load around the bubble
	 * (ma_pick_view_load: every VP and every queue below are read, the bubble and its
	 * parent try-locked); both may be asked at once. A MOVE to pv->item itself sends the
	 * bubble to the back of this queue (what else waits here goes first; find_next looks
	 * again). A SERVE with MA_D_OUTSIDE also wakes a VP outside the queue, to come and
	 * take the bubble whole. Anything else (another entity, a BURST elsewhere, a MOVE to
	 * no queue, another kind, asking twice) is taken as MA_D_SERVE.
	 * NULL: serve.
	 */
	struct ma_decision (*decide_pick)(const struct ma_pick_view *pv, const void *priv);
	/*
	 * decide_stray(v, priv, out): a thread the strategy marked stray (a STEAL or MOVE with
	 * MA_D_STRAY) yields; bring it home (MOVE to its home, MA_D_UNSTRAY), clear its mark
	 * (MOVE to where it is, MA_D_UNSTRAY), or leave it.
	 * Called by: ma_strategy_stray, from marcel_yield (the yield core hook), as the
	 * thread itself.
	 * View: ma_view_build_thread, that thread alone as v->root (its home filled in).
	 * Locks: none. Concurrent: priv read-only. Must not block.
	 * NULL: the mark is cleared.
	 */
	void (*decide_stray)(const struct ma_view *v, const void *priv, struct ma_dlist *out);
};

#endif
