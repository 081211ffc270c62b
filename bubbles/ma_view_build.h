/*
 * The runtime side of views and decisions (ma_view.h): the builders (view.c), which fill a
 * view from the run queues and the bubble tree, and the executor (decide.c), which
 * carries a decision list out with the placement primitives of holder.c.
 *
 * Lock order (ma_bubble.h): bubble locks before run-queue locks, ancestors first; a
 * builder or the executor takes them in that order and never holds two run queues.
 * Every function here is called with no lock held, except ma_pick_view_fill.
 */
#ifndef MA_VIEW_BUILD_H
#define MA_VIEW_BUILD_H

#include "ma_view.h"
#include "ma_bubble.h"

/* ---- view.c: building ---- */

/*
 * The items part alone. Counters are read without locks; the running threads of other
 * VPs under ma_estimate_begin/end, as their bubbles' storage may be reused otherwise.
 * 0, or ENOMEM (v is then empty; releasing it does nothing).
 */
int ma_view_build_items(struct ma_view *v, unsigned flags) MA_HIDDEN;
/*
 * The items, and the tree below the root bubble (start, shake): see
 * ma_view_build_subtree.
 */
int ma_view_build_tree(struct ma_view *v, unsigned flags) MA_HIDDEN;
/*
 * The items, and the tree below bubble b, b included (submit, tick); b NULL: no tree, only
 * what `flags` asks for (the heartbeat's view). The caller keeps b alive meanwhile (a reference, the lock of its parent, or b is the root). Member lists
 * are walked under the bubbles' locks, each bubble locked while its parent is, parent
 * first; no run queue is locked (but with MA_VIEW_READY, each one alone afterwards).
 * Every bubble of the view holds a reference until ma_view_release: none can be freed or
 * set up again while the decision is made. Threads hold none: the executor checks each
 * one under a lock that proves it still lives (its bubble's, or its queue's). 0, or
 * ENOMEM (v empty).
 */
int ma_view_build_subtree(struct ma_view *v, struct ma_bubble *b, unsigned flags) MA_HIDDEN;
/*
 * An idle VP's neighbourhood (vp_idle): the items, with ready threads counted, and the
 * entities waiting on every queue that is not on w's path (the path's siblings' subtrees,
 * where a thief looks), at most MA_VIEW_WAITING_MAX per queue, most urgent first, in
 * v->waiting. Each queue is locked alone while its lists are read; a closed bubble met
 * there is only try-locked (the queue is held) and referenced. 0, or ENOMEM (v empty).
 */
#define MA_VIEW_WAITING_MAX 256
int ma_view_build_vp(struct ma_view *v, const struct ma_worker *w, unsigned flags) MA_HIDDEN;
/*
 * The items, and thread t alone as v->root (a strategy's stray hook): t is the caller,
 * alive while it runs this; its home (the queue its bubble is opened on) is read inside
 * an estimate, as its bubble may be let go of meanwhile. 0, or ENOMEM (v empty).
 */
int ma_view_build_thread(struct ma_view *v, struct marcel_task *t, unsigned flags) MA_HIDDEN;
/* Frees the memory kept from released views for the next ones (ma_bubbles_stop). */
void ma_view_spares_free(void) MA_HIDDEN;
/* Drops the view's references and frees its memory, in one call; v is empty after it. */
void ma_view_release(struct ma_view *v) MA_HIDDEN;
/* Zeroed memory that lives as long as built view v and goes with ma_view_release (the
 * storage of the decision list a hook fills about it); NULL if memory ran out or v is
 * empty. */
void *ma_view_alloc(struct ma_view *v, size_t size) MA_HIDDEN;
/* Entities built view v holds: its tree's nodes and the waiting ones; 0 if v is empty. */
unsigned ma_view_nb_nodes(const struct ma_view *v) MA_HIDDEN;

/*
 * find_next met closed bubble b at the head of rq, rq locked by the caller: the pick view,
 * from a handful of loads of b's fields (without its lock), without the children items
 * (has_kids 0). Allocates nothing, takes no lock. pv->kids and max_kids are left as they
 * are (the caller's storage).
 */
void ma_pick_view_fill(struct ma_pick_view *pv, const struct ma_worker *w, const struct ma_runqueue *rq,
		       struct ma_bubble *b) MA_HIDDEN;
/* Fills in pick view pv's load around b (ma_pick_load), rq locked by the caller: every VP
 * and every queue of rq's subtree read without locks, b and its parent only try-locked
 * (met out of order). */
void ma_pick_view_load(struct ma_pick_view *pv, const struct ma_runqueue *rq, struct ma_bubble *b) MA_HIDDEN;
/* Fills in pick view pv's children items of rq (ma_rq_subtree_load's measure), at most
 * pv->max_kids of them; rq locked by the caller. */
void ma_pick_view_kids(struct ma_pick_view *pv, const struct ma_worker *w, const struct ma_runqueue *rq) MA_HIDDEN;
/* Children items with VPs of the widest item: the room a pick view's kids need. */
unsigned ma_pick_max_kids(void) MA_HIDDEN;

/* Queue numbers (ma_view.h) of the runtime's run queues, and back (NULL if out of range). */
int ma_view_queue_number(const struct ma_runqueue *rq) MA_HIDDEN;
struct ma_runqueue *ma_view_queue(int q) MA_HIDDEN;
/* VPs that look at queue q, 0 if none (q out of range). */
unsigned ma_view_queue_vps(int q) MA_HIDDEN;
/* ma_vitem_load_exact's measure of queue q's subtree, now: each queue locked alone, the
 * running threads read under ma_estimate_begin/end; self's own thread left out. */
unsigned long ma_view_load_now(int q, const struct ma_worker *self) MA_HIDDEN;
/* Threads of bubble b's subtree, alive and started, b locked (maybe on a locked queue, so
 * sub-bubbles are only try-locked: a busy one counts one thread). A bubble that keeps a
 * count answers from it, in O(1) (it then counts threads not started too). */
unsigned ma_bubble_threads_locked(struct ma_bubble *b) MA_HIDDEN;
/* Wakes one sleeping VP that does not look at rq, the nearest first, so that it comes to
 * take rq's overloaded subtree's work; at most one every few hundred microseconds, for
 * every caller together. Takes no lock: may be called from find_next's bubble branch.
 * 1 if one was woken. */
int ma_wake_outside(const struct ma_runqueue *rq) MA_HIDDEN;
/* Work visible below rq: entities queued or incoming on its items and its VPs' queues,
 * plus its busy VPs (the measure burst pulls bubbles down by). A VP's own queue: its
 * queued entities plus 1 if its VP is busy. */
unsigned long ma_rq_subtree_load(const struct ma_runqueue *rq) MA_HIDDEN;

/* What the builder keeps of each node, beside what the strategy sees (the executor's
 * side). */
struct ma_vslot {
	struct ma_vnode n;                /* first: a node's address is its slot's */
	struct ma_vslot *next;            /* every slot of the view, in creation order */
	struct ma_entity *e;
	struct ma_bubble *in;             /* the bubble it was seen a member of (kept by that
					     bubble's own slot), NULL if seen on a queue */
	/* Where it was seen: the executor acts only if it is still there, and updates these
	 * as it acts, so that a list may go top down (burst a bubble, then place its
	 * members). */
	struct ma_holder *sched, *ready;
	int status;                       /* bubbles: enum ma_bubble_status */
	int fixed_item;                   /* bubbles */
	unsigned char memory;             /* building: memory attached in its subtree */
	unsigned char spent;              /* a decision made it unknown (gathered) */
};

/* The slot of the node with id `id`, NULL if the view has none. */
struct ma_vslot *ma_view_slot(const struct ma_view *v, uint64_t id) MA_HIDDEN;

/* ---- decide.c: executing ---- */

struct ma_dresult {
	unsigned done;                    /* decisions carried out */
	unsigned dropped;                 /* not carried out: stale, refused by their guard,
					     malformed, or SERVE (pick only) */
	unsigned skipped;                 /* not tried: MA_D_ELSE after one done, MA_D_THEN
					     after one not done */
};

/*
 * Carries out l's decisions in order, each checked first under its locks against what
 * view v saw (the entity still exists and is where the view saw it, or where earlier
 * decisions of l put it): one that is not is dropped whole, never half done, and the
 * strategy sees the new state at its next call. Traces what it does (RQ_SWITCH,
 * BUBBLE_BURST, BUBBLE_CLOSE, STEAL). v must be one a builder made (a view made by hand
 * has no way back to the runtime: everything is dropped).
 */
struct ma_dresult ma_decisions_execute(struct ma_view *v, const struct ma_dlist *l) MA_HIDDEN;

#endif
