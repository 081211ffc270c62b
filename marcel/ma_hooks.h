/*
 * The hooks through which the core reaches the layer above it without naming it, the
 * way Linux's scheduler core calls a sched_class and Argobots calls a pool's ops.
 *
 * One table, filled by the bubbles' start step (startup.c runs it before the carriers,
 * so before any worker but VP 0's runs) and emptied by its stop step, after the carriers
 * have stopped: it never changes while another worker runs, so it is read with plain
 * loads (starting a carrier's kernel thread orders the store before every read there).
 *
 * Holders. The core owns run queues (MA_RUNQUEUE_HOLDER) and queues entities on them
 * itself; a holder of any other type (today only a closed bubble, MA_BUBBLE_HOLDER) is
 * reached through `holder`. The hot paths test the type first, so a program without
 * bubbles makes no indirect call on a yield, a wake-up or find_next.
 *
 *  hook                     | called by                         | locks held on entry
 * --------------------------+-----------------------------------+---------------------
 *  holder.add(h, e)         | ma_entity_enqueue: every wake-up, | none; takes h's lock,
 *                           | requeue or start of e held by h   | then maybe a queue's
 *  holder.take_locked(h, e, | ma_entity_claim_ready (a seed     | h->lock
 *      claim)               | joined), ma_entity_move_to_holder |
 *  holder.serving(h)        | ma_task_still_ours, at a switch   | none (lock-free)
 *                           | to a thread held by h             |
 *  pick(w, rq, e)           | find_next met an entity that is   | rq->hold.lock;
 *                           | not a thread at the head of rq    | released on return
 *  unit_back(unit)          | ma_finish_switch, after the post  | none
 *                           | step; ma_seed_enter/leave         |
 *  task_new(w, t, pid, ...) | marcel_create (calls back         | none
 *                           | ma_task_born once it accepts t)   |
 *  task_start(t, at_end)    | marcel_wake_up_created_thread,    | none
 *                           | marcel_end (never started)        |
 *  task_end(t)              | ma_task_finish (t ends as itself; | none
 *                           | not a free thread, gate open)     |
 *  adopt_free(t)            | marcel_create, free thread t born | none
 *                           | as the free gate closed           |
 *  describe(out, t)         | ma_print_thread (diagnostics)     | none
 *  publish(w)               | a thread leaves w's processor,    | none
 *                           | marcel_end (w keeps private work) |
 *  vp_hungry(w)             | ma_idle_loop, counted idle        | none
 *  claim_private(w, t)      | ma_seed_join, w asked to publish  | none
 *  vp_idle(w)               | ma_idle_loop, nothing found       | none
 *  yield(w, t)              | marcel_yield, t marked stray      | none
 *  tick()                   | ma_timers_run/steal, hook_work    | none (timer lock
 *                           | raised                            | released)
 *
 * None of them may block: they take spin locks only, in the lock order of
 * bubbles/ma_bubble.h (a bubble before a run queue).
 */
#ifndef MA_HOOKS_H
#define MA_HOOKS_H

#include "ma_sched.h"

struct ma_holder_ops {
	/* Queues ready entity e in h, which was e's sched holder when the caller read it.
	 * 0 if it no longer is (nothing done: the caller reads the sched holder again). */
	int (*add)(struct ma_holder *h, struct ma_entity *e);
	/* Takes queued e out of h (h locked, e queued in h). With `claim` (the caller means to
	 * run e now, in place of whoever would have taken it from h), 0 and nothing done if
	 * h serves nothing at the moment; else 1. */
	int (*take_locked)(struct ma_holder *h, struct ma_entity *e, int claim);
	/* The holder the entities held by h are served from now (a run queue, or the holder
	 * of a closed unit that contains h), NULL if h serves nothing (it is being gathered,
	 * or taken off the queues). Reads without locks: the answer may be stale, which the
	 * callers allow for (a thread moved meanwhile is requeued where it belongs). */
	struct ma_holder *(*serving)(const struct ma_holder *h);
};

struct ma_hooks {
	struct ma_holder_ops holder; /* for every holder that is not a run queue */
	/* find_next took entity e, which is not a thread, off the head of rq (rq locked):
	 * returns a thread for w to run (taken off its queue or cache), or NULL to look
	 * again. Returns with rq unlocked, always; may only try-lock another holder while
	 * it holds rq. Bounded: no wait. */
	struct marcel_task *(*pick)(struct ma_worker *w, struct ma_runqueue *rq, struct ma_entity *e);
	/* A thread its unit asked back (leave_req: a gather waits for it) has left
	 * its processor or stopped running its own code: unit (the holder of the unit that
	 * asked) counts one thread back and drops the reference the thread held on it. */
	void (*unit_back)(struct ma_holder *unit);

	/* Thread life. */
	/* New thread t (set up, not yet visible: FREE) joins the unit attr names (or its
	 * creator's) and, if `start`, becomes ready: on rq if its attributes chose a queue,
	 * else where its unit says. w: the creator's worker, NULL if not a marcel thread.
	 * Once it has accepted t, and before it puts t anywhere another thread could see it,
	 * it calls ma_task_born(w, t, pid) (exactly once); if it refuses t (EINVAL: attr
	 * names what is not a bubble) it returns the error without calling it, and the core
	 * frees t. One call, not a check then an adoption: a level of a recursion creates
	 * through here, and each call across layers costs it (doc/design.md, "Spawn
	 * cost"). */
	int (*task_new)(struct ma_worker *w, struct marcel_task *t, marcel_t *pid, const marcel_attr_t *attr,
			struct ma_runqueue *rq, int start);
	/* Starts BORN thread t, made with marcel_create_dontsched (or left unstarted in a unit
	 * never woken): 0, or EINVAL if it was not BORN or has no unit. `at_end`: for
	 * marcel_end's start of what was never started, which leaves a unit private to a VP
	 * to that VP (EAGAIN; it publishes it in its own time). */
	int (*task_start)(struct marcel_task *t, int at_end);
	/* t ends, as itself, after its key destructors: it leaves its unit (which may wake a
	 * joiner of that unit, or free an implicit one). Takes holder locks, never waits. Not
	 * called for a free thread while the free gate is open (below). */
	void (*task_end)(struct marcel_task *t);
	/* The core published new free thread t, then found the free gate closed: the close
	 * may have missed t, so the layer above takes it in unless it already has. */
	void (*adopt_free)(struct marcel_task *t);

	/* Diagnostics: adds to the line about t (marcel_print_threads, marcel_join's and
	 * marcel_end's reports of waits that may never end) what the layer above knows: its
	 * unit, and why it has not started. Prints without a newline; takes a holder lock. */
	void (*describe)(FILE *out, struct marcel_task *t);

	/* Work kept private to a VP. */
	/* w's private work (its counter nb_private is not 0) must become public: the thread
	 * running on w switches out, blocks, ends or enters a blocking section, marcel_end. */
	void (*publish)(struct ma_worker *w);
	/* Idle VP w counted itself idle and is about to sleep: it asks the VPs keeping
	 * private work for some, and may wait a bounded time for them (never in the kernel). */
	void (*vp_hungry)(struct ma_worker *w);
	/* BORN seed t waits in a woken unit private to w, but w was asked to publish (an idle
	 * VP wants work): takes t for its joiner, who runs it at once (1), or 0 (nothing done,
	 * or w published everything: t may be READY now). The joiner's fast path, when w
	 * was not asked, is the core's own (ma_seed_join). */
	int (*claim_private)(struct ma_worker *w, struct marcel_task *t);

	/* Idle VP w found nothing on its queues: 1 if the strategy made work visible to it
	 * (w then looks again). Bounded. */
	int (*vp_idle)(struct ma_worker *w);
	/* t, running on w, yields with its stray mark set (a strategy lent it away from its
	 * unit's side): the strategy may send it back (move_req) or clear the mark. */
	void (*yield)(struct ma_worker *w, struct marcel_task *t);
	/* ma_rt.hook_work was raised: the deferred work of the layer above (regenerations,
	 * a strategy's heartbeat), run at a scheduling point with no lock held. */
	void (*tick)(void);
};

extern struct ma_hooks ma_hooks MA_HIDDEN;

/* The wrappers call without a NULL test: an entity that is not a thread, or a holder
 * that is not a run queue, can only have been made by the layer that fills these hooks,
 * and it fills them before it makes any (its start step) and empties them after the
 * last is gone (its stop step, once every worker has stopped). */
static inline int ma_hook_holder_add(struct ma_holder *h, struct ma_entity *e)
{
	return ma_hooks.holder.add(h, e);
}

static inline int ma_hook_holder_take_locked(struct ma_holder *h, struct ma_entity *e, int claim)
{
	return ma_hooks.holder.take_locked(h, e, claim);
}

static inline struct ma_holder *ma_hook_holder_serving(const struct ma_holder *h)
{
	return ma_hooks.holder.serving(h);
}

/* A unit asked t back (leave_req): its holder, with the request claimed (the count is
 * the caller's to give with ma_hook_unit_back), or NULL if none was pending. Claimed in
 * its own step so that a switch can claim while the descriptor is still its own (before
 * on_cpu is cleared: a joiner may then recycle it, leave_req with it) and count once the
 * thread is where it goes. */
static inline struct ma_holder *ma_task_back_claim(struct marcel_task *t)
{
	return atomic_exchange(&t->leave_req, NULL);
}

static inline void ma_hook_unit_back(struct ma_holder *unit)
{
	ma_hooks.unit_back(unit);
}

/* t, which its unit may have asked back, is back for it (it hosts a seed, or stopped
 * hosting one) without a switch. */
static inline void ma_task_back(struct marcel_task *t)
{
	struct ma_holder *u = ma_task_back_claim(t);
	if (u)
		ma_hook_unit_back(u);
}

static inline int ma_hook_task_new(struct ma_worker *w, struct marcel_task *t, marcel_t *pid,
				   const marcel_attr_t *attr, struct ma_runqueue *rq, int start)
{
	return ma_hooks.task_new(w, t, pid, attr, rq, start);
}

/* New thread t is counted as created (before it can end: marcel_end's count of live
 * threads relies on it) and its handle given out (before it can run: the program may hand
 * it to the thread). Its state, stored next, makes it visible. */
static inline void ma_task_count_born(struct ma_worker *w, struct marcel_task *t, marcel_t *pid)
{
	if (w)
		atomic_store_explicit(&w->nb_created, w->nb_created + 1, memory_order_relaxed);
	else
		atomic_fetch_add(&ma_rt.foreign_created, 1);
	if (ma_unlikely(t->posix))
		atomic_fetch_add(&ma_rt.posix_live, 1);
	if (pid)
		*pid = t;
}

/* New thread t becomes visible (the task_new hook calls it once it accepted t): counted,
 * its handle given out, BORN. */
static inline void ma_task_born(struct ma_worker *w, struct marcel_task *t, marcel_t *pid)
{
	ma_task_count_born(w, t, pid);
	atomic_store_explicit(&t->state, MA_TASK_BORN, memory_order_release);
}

/* ---- free threads ----
 *
 * A thread created without naming a bubble is *free* while the layer above lets it be:
 * it belongs to no unit, and the core creates it and ends it without a call up (a third
 * of a create and join was the membership nobody read, doc/design.md "The core's hot
 * paths against Argobots"). The layer above opens the free gate at its start, naming
 * the queue free threads start on (`home`, NULL: it is asked for each thread), and
 * closes it at the first look at its tree, then takes in every live free thread
 * (bubbles/free.c). `home` is written only while no other thread runs; the layer above
 * keeps it where it would send such a thread for as long as the gate is open.
 *
 * The close races with creations and exits. Two stores meet two loads, each side storing
 * first, sequentially consistent on both sides, so at least one side sees the other:
 * - a creation stores its thread's state, then reads `closed`; the close stores `closed`,
 *   then reads each descriptor's state. A creation that saw the gate open was seen by the
 *   close's walk; one that saw it closed asks the layer above to take its thread in
 *   (adopt_free), which that walk may have done already.
 * - an exit stores t->tree_exit, then reads `closed`; the walk reads tree_exit before the
 *   state. An exit that saw the gate open was seen by the walk, which left the thread
 *   out; one that saw it closed tells the layer above (task_end).
 * A free thread made not to start stays BORN, and the walk takes it in like the others. */
struct ma_free_gate {
	atomic_int closed;
	struct ma_holder *home;
};
extern struct ma_free_gate ma_free_gate MA_HIDDEN;

static inline int ma_free_gate_closed(void)
{
	return atomic_load_explicit(&ma_free_gate.closed, memory_order_seq_cst);
}

/* Publishes new free thread t: READY on holder h and made runnable, or BORN if h is NULL.
 * A close it raced with may have missed it: then the layer above takes it in. */
static inline void ma_free_task_publish(struct ma_worker *w, struct marcel_task *t, marcel_t *pid,
					struct ma_holder *h)
{
	ma_task_count_born(w, t, pid);
	if (h) {
		ma_store_release(&t->e.sched_holder, h);
		atomic_store_explicit(&t->state, MA_TASK_READY, memory_order_seq_cst);
	} else {
		atomic_store_explicit(&t->state, MA_TASK_BORN, memory_order_seq_cst);
	}
	if (ma_unlikely(ma_free_gate_closed()))
		ma_hooks.adopt_free(t);
	if (h)
		ma_task_ready_new(w, t);
}

/* Ending thread t: 1 if it is free and the gate still open, so the layer above need not
 * hear of it; else 0 (task_end follows, which may call this again to the same effect).
 * While the gate is open only creation gives a thread a unit, so a thread without one
 * then is free. */
static inline int ma_free_task_leave(struct marcel_task *t)
{
	if (t->is_idle || ma_read_once(&t->e.natural_holder))
		return 0;
	atomic_store_explicit(&t->tree_exit, 1, memory_order_seq_cst);
	return !ma_free_gate_closed();
}

static inline int ma_hook_task_start(struct marcel_task *t, int at_end)
{
	return ma_hooks.task_start(t, at_end);
}

static inline void ma_hook_task_end(struct marcel_task *t)
{
	ma_hooks.task_end(t);
}

static inline void ma_hook_describe(FILE *out, struct marcel_task *t)
{
	ma_hooks.describe(out, t);
}

/* Publishes w's private work, if it keeps any: every scheduling point that lets the
 * running thread go calls it. The counter test is inline: most VPs keep none. */
static inline void ma_private_publish_pending(struct ma_worker *w)
{
	if (ma_unlikely(atomic_load_explicit(&w->nb_private, memory_order_relaxed) != 0))
		ma_hooks.publish(w);
}

static inline int ma_hook_claim_private(struct ma_worker *w, struct marcel_task *t)
{
	return ma_hooks.claim_private(w, t);
}

static inline void ma_hook_vp_hungry(struct ma_worker *w)
{
	ma_hooks.vp_hungry(w);
}

static inline int ma_hook_vp_idle(struct ma_worker *w)
{
	return ma_hooks.vp_idle(w);
}

static inline void ma_hook_yield(struct ma_worker *w, struct marcel_task *t)
{
	ma_hooks.yield(w, t);
}

/* Runs the tick hook if the layer above raised ma_rt.hook_work. */
static inline void ma_hook_tick_pending(void)
{
	if (ma_unlikely(atomic_load_explicit(&ma_rt.hook_work, memory_order_relaxed)))
		ma_hooks.tick();
}

static inline struct marcel_task *ma_hook_pick(struct ma_worker *w, struct ma_runqueue *rq, struct ma_entity *e)
{
	return ma_hooks.pick(w, rq, e);
}

/* hwprio's hook (hwprio/runtime.c): called after every switch of a worker, in the
 * context switched to, while hwprio runs. Set by hwprio's start step (before the
 * carriers start; VP 0 may already switch), cleared by its quiesce step; NULL the rest of
 * the time. The switch tests it through ma_switch_watch's hw byte only. */
extern void (*_Atomic ma_hw_switched_hook)(struct ma_worker *w) MA_HIDDEN;

static inline void ma_hook_hw_switched(struct ma_worker *w)
{
	void (*f)(struct ma_worker *) = atomic_load_explicit(&ma_hw_switched_hook, memory_order_relaxed);
	if (f != NULL)
		f(w);
}

/* Sets hwprio's switch hook (NULL: clears it). The hook is stored before the byte that
 * announces it and cleared after: a switch that sees the byte set reads the hook, and
 * NULL there is harmless. */
static inline void ma_hook_hw_switched_set(void (*f)(struct ma_worker *))
{
	if (f) {
		atomic_store_explicit(&ma_hw_switched_hook, f, memory_order_release);
		atomic_store_explicit(&ma_switch_watch.hw, 1, memory_order_relaxed);
	} else {
		atomic_store_explicit(&ma_switch_watch.hw, 0, memory_order_relaxed);
		atomic_store_explicit(&ma_hw_switched_hook, NULL, memory_order_relaxed);
	}
}

/* hwprio's iteration hook: called by the thread that completes a barrier round
 * (marcel_barrier_wait, marcel_bubble_barrier; key: the barrier) and by
 * marcel_hwprio_iteration (key NULL), with no lock held. NULL while hwprio is off. */
extern void (*_Atomic ma_hw_iteration_hook)(const void *key) MA_HIDDEN;

static inline void ma_hook_hw_iteration(const void *key)
{
	void (*f)(const void *) = atomic_load_explicit(&ma_hw_iteration_hook, memory_order_relaxed);
	if (ma_unlikely(f != NULL))
		f(key);
}

#endif
