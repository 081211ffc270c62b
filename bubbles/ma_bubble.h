/*
 * Bubbles inside the runtime: the bubble structure, where entities are scheduled, and the
 * primitives strategies are built from.
 *
 * States of a bubble (b->status, b->e.sched_holder):
 *  - CLOSED and placed (sched_holder is a run queue): one scheduling unit. Every thread of
 *    its subtree has sched_holder == &b->hold; the ready ones wait in b's cache, and b
 *    sits on its run queue while the cache is not empty (b->queued).
 *  - CLOSED inside a closed ancestor: part of the ancestor's unit (sched_holder NULL).
 *  - CLOSED, woken, not placed yet: only between marcel_wake_up_bubble and the submit.
 *  - OPENED (burst) on a run queue: its members are units of their own; new members go
 *    to that queue unless a strategy says otherwise.
 *  - CLOSING: like CLOSED and placed, but some threads of its subtree are still running
 *    (they come back at their next requeue or block; see regen.c).
 *
 * Locking. One lock per holder. Order: bubble locks before run-queue locks; among
 * bubbles, ancestor first; among run queues, higher level first, then lower index.
 * The strategy lock (strategy.c: changes of strategy and its serialised hooks, which
 * build views and carry decisions out) comes before all of them and the tree lock.
 * A bubble's regen_lock (arming and cancelling its regeneration timer) comes before its
 * hold.lock and is never taken under it: timer callbacks take bubble locks under their
 * timer lock, which arming and cancelling take.
 * find_next, which holds a run queue when it meets a bubble, only try-locks the bubble
 * and otherwise starts again in order. How sched_holder changes and is read is the
 * core's protocol (marcel/runqueue.c).
 */
#ifndef MA_BUBBLE_H
#define MA_BUBBLE_H

#include <stdio.h>
#include "ma_sched.h"
#include "ma_sync.h"

#define MA_BUBBLE_MAGIC 0x4d42424cu /* "MBBL" */

enum ma_bubble_status { MA_BUBBLE_CLOSED = 0, MA_BUBBLE_OPENED = 1, MA_BUBBLE_CLOSING = 2 };

struct ma_bubble {
	struct ma_entity e;               /* first: a bubble is an entity */
	union {
		/* What the core reads of it as a holder (private owner, unstarted members). */
		struct ma_unit unit;
		struct ma_holder hold;    /* unit.hold: protects everything below unless
					     said otherwise */
	};
	unsigned magic;
	int id;                           /* the application's (marcel_bubble_setid) */
	uint64_t uid;                     /* unique, for traces and snapshots */
	atomic_int status;                /* enum ma_bubble_status; written under hold.lock */
	unsigned char woken, implicit;
	/* Keeps nb_threads_sub: an application's bubble (it can be joined) and the implicit
	 * bubbles below one. Implicit bubbles whose ancestors up to the root are all implicit
	 * are not: nobody can join them, and counting would cost every create and exit a
	 * lock per level. Fixed at creation: implicit bubbles never move. */
	unsigned char counted;
	atomic_uchar joining;             /* written under hold.lock; read by descendants'
					     thread counting, which holds only their own lock */
	unsigned char freeing;            /* implicit: the party that frees it decided so */
	struct marcel_task *owner;        /* implicit children bubble: its creator, NULL once
					     it ended (the bubble is freed when also empty) */
	struct ma_list members;           /* entities whose natural_holder is this bubble */
	unsigned nb_members;
	atomic_long nb_threads_sub;       /* threads of the subtree, each sub-bubble counted up
					     to a cap (nb_vps + 2, bubble.c): 0 exactly when
					     the subtree has none (join waits for 0), exact up
					     to the cap, at least the cap above it. Changed
					     under cnt_lock, read without it */
	ma_spinlock_t cnt_lock;           /* leaf lock: nb_threads_sub and, for a change of parent,
					     e.natural_holder, so that a count walking up through
					     this bubble lands on exactly one side of a move */
	/* Statistics kept here rather than synthesized. */
	_Atomic unsigned long long cpu_ended_ns; /* threads of the subtree that ended */
	struct ma_memrange *ranges;       /* attached memory (stats.c) */
	/* Private (private.c; the owner and the woken flag are in unit): woken while
	 * private, it is published into its waker's bubble, or joined by its waker. */
	struct marcel_task *private_waker;
	unsigned private_rt;              /* ma_runtime_gen when it was made private */
	/* Everything from here on is set up only when a private bubble is published
	 * (ma_bubble_complete): nothing reads it before. Everything above is what a private
	 * bubble's VP and other VPs' glances (a strategy reading a running seed's bubble, a
	 * marcel call naming it) may touch while it is private, and is set up field by field
	 * (bubble.c, ma_bubble_setup_hot): a field added above must be added there. */
	struct ma_list cache;             /* ready threads of the subtree (closed and placed) */
	unsigned nb_cached;               /* written under hold.lock (ma_cached_add); read
					     without it as an estimate */
	int queued;                       /* on its run queue because the cache is not empty; set
					     under hold.lock, the queue insertion follows it */
	struct ma_waiter *joiner;
	/* Bubble barrier. */
	unsigned bar_arrived;
	atomic_uint bar_seq;
	int fixed_item;                   /* scheduleonlevel: topology item, -1: none */
	/* Regeneration (regen.c). */
	unsigned long timeslice_us;
	struct ma_timer regen_timer;      /* armed by the worker that burst it */
	atomic_int regen_armed;           /* regen_timer may be on a heap or in the due list */
	ma_spinlock_t regen_lock;         /* serialises arming and cancelling regen_timer */
	unsigned char regen_closed;       /* going away: never armed again (set, and read
					     with regen_armed set, under hold.lock) */
	struct ma_list regen_node;        /* due list (regen.c), under its lock */
	unsigned char regen_queued;
	/* References from code that keeps a pointer after releasing the lock that made the
	 * bubble reachable (a strategy's view, the due list). An implicit bubble is freed
	 * when its own reference is dropped and no other remains; a destroy waits for 0. */
	atomic_uint refs;
	uint64_t burst_ns;                /* when it last burst */
	atomic_uint nb_out;               /* CLOSING: threads still to come back */
};

/* Takes a reference on b; the caller holds a lock through which b is reachable (its
 * parent's, its run queue's, the tree lock) or already holds a reference.
 *
 * A thread a gather asks back (leave_req) holds one on the unit waiting for it from the
 * request (ma_gather_out) until it is counted back: meanwhile it may end and empty an
 * implicit bubble, which is then let go of. Whoever counts it back (nb_out) releases
 * that reference only once ma_bubble_check_closed has handed the bubble back to the
 * strategy: meanwhile the thread may end and the bubble be joined, and
 * marcel_bubble_join waits for a bubble that is neither closing nor referenced before it
 * takes it out of the scheduler (a destroy could otherwise free it under the strategy
 * placing it again). */
static inline void ma_bubble_ref(struct ma_bubble *b)
{
	atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
}
/* Drops a reference; frees an implicit bubble that was already let go of. */
void ma_bubble_unref(struct ma_bubble *b) MA_HIDDEN;
/* Whether b is going away (b locked): placement primitives leave it alone. */
static inline int ma_bubble_dead(const struct ma_bubble *b)
{
	return b->freeing || b->magic != MA_BUBBLE_MAGIC;
}

/* Changes b's cache count (b locked); strategies read it unlocked as an estimate. */
static inline void ma_cached_add(struct ma_bubble *b, int d)
{
	ma_write_once(&b->nb_cached, b->nb_cached + (unsigned)d);
}

/* Public storage must hold it. */
_Static_assert(sizeof(struct ma_bubble) <= MARCEL_BUBBLE_STORAGE, "marcel_bubble_t too small");

struct ma_memrange {
	struct ma_memrange *next;
	void *addr;
	size_t len;
	unsigned node_bytes_len;
	size_t node_bytes[];              /* bytes per NUMA node, at attach time */
};

extern struct ma_bubble *const ma_root_bubble MA_HIDDEN;

static inline struct ma_bubble *ma_bubble_of(marcel_bubble_t *b)
{
	return (struct ma_bubble *)(void *)b;
}
static inline marcel_bubble_t *ma_bubble_pub(struct ma_bubble *b)
{
	return (marcel_bubble_t *)(void *)b;
}
static inline struct ma_bubble *ma_bubble_of_holder(struct ma_holder *h)
{
	return ma_container_of(h, struct ma_bubble, hold);
}
static inline struct ma_bubble *ma_bubble_of_entity(struct ma_entity *e)
{
	return ma_container_of(e, struct ma_bubble, e);
}
static inline struct ma_bubble *ma_entity_parent(const struct ma_entity *e)
{
	struct ma_holder *h = ma_read_once(&e->natural_holder);
	return h ? ma_bubble_of_holder(h) : NULL;
}
static inline uint64_t ma_entity_uid(struct ma_entity *e)
{
	return e->type == MA_TASK_ENTITY ? ma_task_of_entity(e)->id : ma_bubble_of_entity(e)->uid;
}

/* ---- bubble.c ---- */
/* Validates a public bubble, initialising a MARCEL_BUBBLE_INITIALIZER one on first use.
 * NULL if it is not a bubble. */
struct ma_bubble *ma_bubble_get(marcel_bubble_t *b) MA_HIDDEN;
/* The same without making a private bubble public: for calls that only name it, or that
 * handle private bubbles themselves (private.c). Inline: a level of a recursion makes
 * half a dozen such calls. */
struct ma_bubble *ma_bubble_get_slow(marcel_bubble_t *b) MA_HIDDEN;
static inline struct ma_bubble *ma_bubble_get_raw(marcel_bubble_t *pub)
{
	struct ma_bubble *b = ma_bubble_of(pub);
	if (ma_likely(b && ma_load_acquire(&b->magic) == MA_BUBBLE_MAGIC))
		return b;
	return ma_bubble_get_slow(pub);
}
/* Wakes b as marcel_wake_up_bubble called by `self` would (into self's bubble). */
int ma_bubble_wake_as(struct ma_bubble *b, struct marcel_task *self) MA_HIDDEN;
/* Sets up the fields of b that a private bubble goes without (struct ma_bubble): done
 * when one is published, on its VP. */
void ma_bubble_complete(struct ma_bubble *b) MA_HIDDEN;
int ma_bubbles_start(void) MA_HIDDEN;
void ma_bubbles_stop(void) MA_HIDDEN;
/* Makes BORN thread t of b (locked, woken or forced) READY where it is to run; the caller
 * queues it once b is unlocked. */
void ma_bubble_start_locked(struct ma_bubble *b, struct marcel_task *t, struct ma_runqueue *rq) MA_HIDDEN;
/* The same for a thread that is not placed, b woken: h is ma_bubble_holder_for_member(b),
 * read once for all the threads a wake-up starts. */
void ma_bubble_start_in_locked(struct ma_bubble *b, struct marcel_task *t, struct ma_holder *h) MA_HIDDEN;
/* A thread ended: out of its bubble (may complete a join or free a children bubble). */
void ma_bubble_task_exit(struct marcel_task *t) MA_HIDDEN;
/* Whether b is in the subtree of anc (b == anc included). Caller keeps the tree still. */
int ma_bubble_is_within(const struct ma_bubble *b, const struct ma_bubble *anc) MA_HIDDEN;
/* Serialises structural changes (insert, remove, destroy, joins completing): they touch
 * two bubbles that are not in a known order. Scheduling never takes it. */
extern ma_spinlock_t ma_bubble_tree_lock MA_HIDDEN;
/* Whether this kernel thread holds the tree lock (code holding a spin lock never switches
 * threads, so per kernel thread is per holder). */
extern __thread int ma_tree_held MA_HIDDEN;
static inline void ma_tree_lock(void)
{
	ma_spin_lock(&ma_bubble_tree_lock);
	ma_tree_held = 1;
}
static inline void ma_tree_unlock(void)
{
	ma_tree_held = 0;
	ma_spin_unlock(&ma_bubble_tree_lock);
}

/* Its owner ended (or the runtime stops): the children bubble is freed once empty. */
void ma_bubble_task_exit_owner(struct marcel_task *t) MA_HIDDEN;

/* ---- holder.c: where entities are scheduled ---- */
/* A closed, gathered, woken bubble whose parent changed or that was just woken: merged
 * into its parent's closed unit, or handed to the strategy if its parent is opened. */
void ma_bubble_resettle(struct ma_bubble *b) MA_HIDDEN;
/* Closed bubble b's parent is part of a closed unit: b's threads (and its cache) join
 * that unit. 1 if done (or b is not closed any more), 0 if b has no parent or its
 * parent is opened (b is a unit of its own: the strategy places it). */
int ma_bubble_absorb(struct ma_bubble *b) MA_HIDDEN;
/* b (locked) belongs to the closed unit above it: its parent is not opened. Placing b
 * then would make a unit inside a unit; ma_bubble_place absorbs it instead. */
int ma_bubble_in_unit_locked(struct ma_bubble *b) MA_HIDDEN;
/* Woken bubble b, part of a closed unit above it, is about to leave its parent (tree lock
 * held): its threads become its own again (its cache holds its ready ones), so that it
 * can be placed by itself. Nothing happens if b is a unit itself. */
void ma_bubble_detach_from_unit(struct ma_bubble *b) MA_HIDDEN;
/* Starts the created-not-started threads of b's subtree (wake-up). */
void ma_bubble_start_born(struct ma_bubble *b) MA_HIDDEN;
/* The same, the caller holding the tree lock. */
void ma_start_born(struct ma_bubble *b) MA_HIDDEN;
/* Takes placed bubble b off its run queue (it becomes unplaced and closed). */
void ma_bubble_unplace(struct ma_bubble *b) MA_HIDDEN;
/* Queues the n ready threads of ts as ma_entity_enqueue would, taking a bubble cache's
 * lock once for each run of threads bound for it. */
enum { MA_ENQUEUE_BATCH = 64 };
void ma_tasks_enqueue(struct marcel_task *const *ts, unsigned n) MA_HIDDEN;
/* Where a new member of b (locked) is scheduled: b's run queue if b is opened, else the
 * holder of b's closed unit (the topmost closed bubble above b under an opened one). */
struct ma_holder *ma_bubble_holder_for_member(struct ma_bubble *b) MA_HIDDEN;
/* Starts created-not-started thread t of bubble b where b's placement says (rq, if not
 * NULL and b is opened: the thread's own placement). force: even if b was not woken (the
 * thread then runs on the machine's queue). 0, or EINVAL if t was not BORN. */
int ma_bubble_start_task(struct ma_bubble *b, struct marcel_task *t, struct ma_runqueue *rq, int force) MA_HIDDEN;
/* find_next met closed bubble e at the head of rq (rq locked): the pick hook
 * (ma_hooks.h). Returns the thread to run, with rq unlocked, or NULL (rq unlocked) to
 * make find_next look again. */
struct marcel_task *ma_bubble_picked(struct ma_worker *w, struct ma_runqueue *rq, struct ma_entity *e) MA_HIDDEN;
/* The scheduled unit the bubble belongs to: itself if placed or opened, else the nearest
 * closed placed ancestor; NULL if not woken/placed. Caller holds the tree still. */
struct ma_bubble *ma_bubble_unit(struct ma_bubble *b) MA_HIDDEN;

/* Placement primitives (what strategies are built from). All take the locks they need:
 * call them with no lock held. */
/* Gathers every thread of b's subtree back into b (closing it): queued ones are pulled
 * from their queues, running ones will come back (leave_req + preemption request).
 * Returns the number of threads still out (running). */
unsigned ma_bubble_gather(struct ma_bubble *b) MA_HIDDEN;
/* Places closed bubble b on rq (queued there when it has ready threads). */
void ma_bubble_place(struct ma_bubble *b, struct ma_runqueue *rq) MA_HIDDEN;
/* Bursts closed placed bubble b on rq: members become units placed on rq (threads
 * queued there, sub-bubbles placed closed there). */
void ma_bubble_burst(struct ma_bubble *b, struct ma_runqueue *rq) MA_HIDDEN;
/* Moves entity e (a thread, or a placed bubble) to rq: a queued one is requeued there, a
 * running or blocked thread goes there next time it is ready. 0, or EBUSY if e is not
 * placed on a run queue (held in a closed bubble, fixed by scheduleonlevel...). */
int ma_entity_move(struct ma_entity *e, struct ma_runqueue *rq) MA_HIDDEN;
/* A closed bubble whose cache ran dry while it was CLOSING: checks whether every thread is
 * back and, if so, marks it CLOSED and hands it to the strategy again. */
void ma_bubble_check_closed(struct ma_bubble *b) MA_HIDDEN;

/* The same primitives for a decision (decide.c): what it saw of b, checked under b's lock
 * before anything is done; each returns 1 if it acted, 0 if b is not so any more (or
 * the primitive itself declines), having changed nothing of b's placement. */
struct ma_seen {
	uint64_t uid;                     /* b->uid (a storage set up again gets another) */
	int status;                       /* enum ma_bubble_status */
	struct ma_holder *sched;          /* b->e.sched_holder */
	int fixed_item;
};
/* ma_bubble_place; quiet: scheduled on rq but not queued there. Inside a unit now (its
 * parent closed since), b is absorbed by that unit as ma_bubble_place does, and 0. */
int ma_bubble_place_seen(struct ma_bubble *b, struct ma_runqueue *rq, int quiet, const struct ma_seen *s) MA_HIDDEN;
/* ma_bubble_burst of closed b, first placed on rq (not queued) if it was elsewhere or
 * not placed, under the same hold of its lock. */
int ma_bubble_burst_seen(struct ma_bubble *b, struct ma_runqueue *rq, const struct ma_seen *s) MA_HIDDEN;
/* ma_bubble_gather of opened b. */
int ma_bubble_gather_seen(struct ma_bubble *b, const struct ma_seen *s) MA_HIDDEN;
/* ma_bubble_unplace of closed b. */
int ma_bubble_unplace_seen(struct ma_bubble *b, const struct ma_seen *s) MA_HIDDEN;

/* ---- private.c: the levels of a recursion kept off the shared tree ---- */
/* marcel_bubble_init of b (its private part set up, not yet valid) on w (the caller's
 * VP, NULL if none): makes it private to w if it may (1), else 0. */
int ma_bubble_private_init(struct ma_worker *w, struct ma_bubble *b) MA_HIDDEN;
/* marcel_bubble_init on a valid bubble's storage: a VP that counts it private forgets it. */
void ma_bubble_private_reinit(struct ma_bubble *b) MA_HIDDEN;
/* b, private to w (the caller's VP), is destroyed: w forgets it. */
void ma_private_forget(struct ma_worker *w, struct ma_bubble *b) MA_HIDDEN;
/* Makes b public, whoever calls: its VP publishes it, or is asked to and waited for. */
void ma_bubble_unprivate(struct ma_bubble *b) MA_HIDDEN;
/* Fast paths on b, private to w (the caller's VP). Each returns what it did, or -1 / 0
 * after publishing every private bubble of w: the caller then takes the public path. */
int ma_private_wake(struct ma_worker *w, struct ma_bubble *b) MA_HIDDEN;      /* 0, -1 (also: woken already) */
int ma_private_join(struct ma_worker *w, struct ma_bubble *b) MA_HIDDEN;      /* 1, 0 */
int ma_private_adopt(struct ma_worker *w, struct ma_bubble *b, struct marcel_task *t, int explicit_member) MA_HIDDEN; /* 1, 0 */
/* BORN seed t is in a woken private bubble of w: takes it for its joiner to run (1), or
 * 0 (nothing done, or every private bubble of w published: t may be READY now). */
int ma_private_claim(struct ma_worker *w, struct marcel_task *t) MA_HIDDEN;

/* The fast paths of a recursion's level, inline: a level takes each once or twice, and
 * calls across files are a visible share of a spawn (doc/design.md, "Spawn cost"). Each
 * does what its private.c counterpart does when nobody asked w for anything, and hands
 * over to it otherwise. */

/* New seed t joins b, private to the caller's VP. */
static inline void ma_private_add_seed(struct ma_bubble *b, struct marcel_task *t, int explicit_member)
{
	ma_list_add_tail(&b->members, &t->e.member_node);
	b->nb_members++;
	b->unit.nb_born++;
	t->e.explicit_member = (unsigned char)explicit_member;
	ma_store_release(&t->e.natural_holder, &b->hold);
	atomic_store_explicit(&b->nb_threads_sub, atomic_load_explicit(&b->nb_threads_sub, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}


/* ma_private_adopt. */
static inline int ma_private_adopt_fast(struct ma_worker *w, struct ma_bubble *b, struct marcel_task *t,
					int explicit_member)
{
	if (ma_unlikely(ma_private_asked(w) || !t->seed || t->placed))
		return ma_private_adopt(w, b, t, explicit_member);
	ma_private_add_seed(b, t, explicit_member);
	return 1;
}

/* Seed t of a private bubble of w ends (the caller runs it on w). */
static inline void ma_private_task_exit(struct ma_bubble *b, struct marcel_task *t, unsigned long long cpu_ns)
{
	ma_list_del(&t->e.member_node);
	b->nb_members--;
	t->e.explicit_member = 0;
	ma_store_release(&t->e.natural_holder, NULL);
	atomic_store_explicit(&b->nb_threads_sub, atomic_load_explicit(&b->nb_threads_sub, memory_order_relaxed) - 1,
			      memory_order_relaxed);
	if (cpu_ns)
		atomic_store_explicit(&b->cpu_ended_ns,
				      atomic_load_explicit(&b->cpu_ended_ns, memory_order_relaxed) + cpu_ns,
				      memory_order_relaxed);
}

/* ---- the core's hooks (marcel/ma_hooks.h), installed by hooks.c ---- */
void ma_bubble_hooks_install(void) MA_HIDDEN;
void ma_bubble_hooks_remove(void) MA_HIDDEN;
/* holder.c */
int ma_bubble_holder_add(struct ma_holder *h, struct ma_entity *e) MA_HIDDEN;
int ma_bubble_holder_take_locked(struct ma_holder *h, struct ma_entity *e, int claim) MA_HIDDEN;
struct ma_holder *ma_bubble_holder_serving(const struct ma_holder *h) MA_HIDDEN;
void ma_unit_back(struct ma_holder *unit) MA_HIDDEN;
/* bubble.c: thread life (ma_bubble_task_exit is task_end) */
int ma_bubble_task_new(struct ma_worker *w, struct marcel_task *t, marcel_t *pid, const marcel_attr_t *attr,
		       struct ma_runqueue *rq, int start) MA_HIDDEN;
int ma_bubble_task_start(struct marcel_task *t, int at_end) MA_HIDDEN;
/* bubble.c: links e into b's members (b locked), explicitly named or not. */
void ma_member_add(struct ma_bubble *b, struct ma_entity *e, int explicit_member) MA_HIDDEN;
/* free.c: threads outside the bubble tree until something looks at it (the core's free
 * gate, marcel/ma_hooks.h). */
/* The root's state at the start: free threads may be made, started where its members go.
 * Before any other thread runs. */
void ma_free_open(void) MA_HIDDEN;
/* adopt_free hook: free thread t was born as the gate closed. */
void ma_free_adopt_late(struct marcel_task *t) MA_HIDDEN;
/* Something is about to look at the bubble tree: every free thread joins the root bubble
 * (once per runtime; a load after that). Takes the tree lock: not with it or a bubble's
 * lock held. */
void ma_tree_want(void) MA_HIDDEN;
/* ma_bubble_task_new for a thread that names no bubble while the tree is not wanted: born,
 * and started if `start`; if the root sends its members to no queue now, it becomes the
 * root's member instead (ma_bubble_task_new_rooted). Its result is ma_bubble_task_new's. */
int ma_free_task_new(struct ma_worker *w, struct marcel_task *t, marcel_t *pid, const marcel_attr_t *attr,
		     struct ma_runqueue *rq, int start) MA_HIDDEN;
/* ma_bubble_task_new for a thread that names no bubble, in the tree: born, and made its
 * creator's children bubble's member or the root's (bubble.c). */
int ma_bubble_task_new_rooted(struct ma_worker *w, struct marcel_task *t, marcel_t *pid, const marcel_attr_t *attr,
			      struct ma_runqueue *rq, int start) MA_HIDDEN;
/* marcel_wake_up_created_thread of a thread read with no bubble: 0 (started), EINVAL (not
 * BORN), or EAGAIN: it is the root's member now, start it as such. */
int ma_free_task_start(struct marcel_task *t) MA_HIDDEN;
/* threads.c */
void ma_bubble_describe(FILE *out, struct marcel_task *t) MA_HIDDEN;
/* private.c: publishes every private bubble of w (the caller's VP), oldest first (done
 * before the threads running on w switch out or end, and when asked); what an idle VP
 * does before it sleeps (asks the VPs keeping private bubbles for work, waits a little
 * for them to serve it, has those that did not preempted). */
void ma_private_publish_all(struct ma_worker *w) MA_HIDDEN;
void ma_private_vp_hungry(struct ma_worker *w) MA_HIDDEN;
/* The caller (running on w) is about to add to the bubble holding it, or to wake a bubble
 * into it, the public way: if that bubble is private, w publishes first. */
void ma_private_before_public(struct ma_worker *w, struct marcel_task *self) MA_HIDDEN;
/* regen.c: the tick hook, run when ma_rt.hook_work was raised (regenerations due). */
void ma_bubble_work(void) MA_HIDDEN;

/* ---- regen.c ---- */
/* Arms b's regeneration after it burst on worker w (if it has a time slice). */
void ma_bubble_regen_arm(struct ma_worker *w, struct ma_bubble *b) MA_HIDDEN;
void ma_bubble_regen_cancel(struct ma_bubble *b) MA_HIDDEN;
/* Cancels for good: b is going away, nothing arms it again. */
void ma_bubble_regen_close(struct ma_bubble *b) MA_HIDDEN;
/* The same for a caller that holds b's lock anyway (b locked): closes it and says
 * whether it may be armed, in which case ma_bubble_regen_cancel (b unlocked) must follow
 * (an arming that set the flag first may still be inserting the timer). */
int ma_bubble_regen_close_locked(struct ma_bubble *b) MA_HIDDEN;
/* Regenerates b now: gather, then re-submit when every thread is back. */
int ma_bubble_regenerate(struct ma_bubble *b) MA_HIDDEN;
/* b's period expired and the strategy has no tick of its own: regenerates b if that is
 * worth it now (its own period, or an idle VP while work waits), else looks again one
 * period later. */
void ma_bubble_regen_due(struct ma_bubble *b) MA_HIDDEN;

/* ---- stats.c ---- */
struct ma_stats {
	long long load, nb_threads, nb_ready, nb_running, cpu_ns, memory, masters, nb_spinning;
	int last_vp, last_level;
};
/* Synthesizes e's statistics over its subtree. nodes_bytes, if not NULL, receives bytes
 * per NUMA node (ma_rt.topo.nb_numa entries, added to). */
void ma_entity_stats(struct ma_entity *e, struct ma_stats *s, size_t *node_bytes) MA_HIDDEN;
/* The load strategies balance: the hint if set, else threads (1 each, or their hints). */
long long ma_entity_load(struct ma_entity *e) MA_HIDDEN;
/* CPU time of a thread in ns. */
static inline unsigned long long ma_task_cpu_ns(const struct marcel_task *t)
{
	return atomic_load_explicit(&t->e.cpu_ns, memory_order_relaxed);
}
void ma_bubble_memory_free(struct ma_bubble *b) MA_HIDDEN;
/* NUMA node holding most of e's attached memory, -1 if none attached. */
int ma_entity_preferred_node(struct ma_entity *e) MA_HIDDEN;

#endif
