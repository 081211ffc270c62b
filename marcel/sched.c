/*
 * Switching between threads: the switch itself, what the next context finishes for the
 * previous one, blocking and waking, yield, and each worker's idle loop.
 *
 * Invariant: a task's on_cpu is set from the moment a worker decides to run it until its
 * registers are saved after it leaves. A task may therefore be queued (or woken) while it
 * is still switching out; whoever picks it waits for on_cpu to clear. That lets yield swap
 * the current thread and the next one under a single queue lock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "ma_sync.h"
#include "ma_hooks.h"
#include "ma_sanitizer.h"
#include "ma_signal.h"
#include "ma_tls_check.h"
#include "ma_trace.h"

struct ma_switch_watch ma_switch_watch;

/* The exited task's stack is free now; its death was published before the switch. */
static __attribute__((noinline)) void ma_release_exited(struct ma_worker *w, struct marcel_task *t)
{
	int reclaim = (atomic_load_explicit(&t->link, memory_order_relaxed) & MA_LINK_DETACHED) != 0;
	ma_posix_note_exit(t);
	ma_stack_release(w, t);
	/* A joiner waits for this before recycling the descriptor. */
	atomic_store_explicit(&t->on_cpu, 0, memory_order_release);
	if (reclaim)
		ma_task_free(w, t);
	atomic_store_explicit(&w->nb_exited, w->nb_exited + 1, memory_order_release);
	ma_end_note_exit();
}

/* What the context we switched to does on behalf of the one we left (now fully saved):
 * prev's post step. Tests in the order of their frequency, not a switch: a jump table
 * cost every block and exit an indirect branch. */
static inline void ma_finish_post(struct ma_worker *w, struct marcel_task *prev)
{
	enum ma_post post = prev->post;
	if (post == MA_POST_BLOCK) {
		/* Sequentially consistent, against ma_make_ready's checks of on_cpu. */
		atomic_store(&prev->on_cpu, 0);
		if (ma_unlikely(atomic_load_explicit(&prev->wake_pending, memory_order_relaxed)) &&
		    atomic_exchange(&prev->wake_pending, 0))
			ma_entity_enqueue(&prev->e);
	} else if (post == MA_POST_EXIT) {
		ma_release_exited(w, prev);
	} else if (post == MA_POST_REQUEUE) {
		atomic_store_explicit(&prev->on_cpu, 0, memory_order_release);
		atomic_store_explicit(&prev->state, MA_TASK_READY, memory_order_relaxed);
		ma_entity_enqueue(&prev->e);
	} else if (post == MA_POST_NONE) {
		atomic_store_explicit(&prev->on_cpu, 0, memory_order_release);
	} else {
		/* MA_POST_HANDOFF: only ever finished by a carrier (carrier.c). */
		abort();
	}
}

/* ma_finish_switch for a thread its unit asked back (regeneration): it is back once
 * queued in the unit, blocked or gone, i.e. after its post step. The count is claimed
 * first, while on_cpu still keeps the descriptor ours: once it is cleared, prev may be
 * run elsewhere, end and be joined, and its descriptor recycled with leave_req reset. A
 * queueing in the post step into that closing unit's cache then finds nothing to count.
 * Out of line: a yield must not pay for it in its frame. */
static __attribute__((noinline)) void ma_finish_switch_back(struct ma_worker *w, struct marcel_task *prev)
{
	struct ma_holder *back = ma_task_back_claim(prev);
	ma_finish_post(w, prev);
	if (back)
		ma_hook_unit_back(back);
}

/* Runs in the context we switched to, on behalf of the one we left. */
static inline void ma_finish_switch(struct ma_worker *w, struct marcel_task *prev)
{
	/* A yield's swap, the most frequent: nothing else to do. */
	if (ma_likely(prev->post == MA_POST_NONE))
		atomic_store_explicit(&prev->on_cpu, 0, memory_order_release);
	else if (ma_unlikely(atomic_load_explicit(&prev->leave_req, memory_order_relaxed) != NULL))
		ma_finish_switch_back(w, prev);
	else
		ma_finish_post(w, prev);
}

/* The switch's own step and the watchers' (ma_switch_watch), in their order. */
static __attribute__((noinline)) void ma_after_switch_watched(struct ma_worker *w, struct marcel_task *self,
							      struct marcel_task *prev)
{
	ma_tls_check_switch(self, prev);
	ma_finish_switch(w, prev);
	if (atomic_load_explicit(&ma_switch_watch.hw, memory_order_relaxed))
		ma_hook_hw_switched(w);
}

/* Work common to every context resuming after a switch (or starting). */
static inline __attribute__((always_inline)) struct ma_worker *
ma_after_switch(struct marcel_task *self, struct marcel_task *prev)
{
	ma_asan_finish_switch(self->asan_fake_stack, &prev->asan_bottom, &prev->asan_size);
	struct ma_worker *w = ma_worker_self();
	if (ma_unlikely(ma_switch_watched()))
		ma_after_switch_watched(w, self, prev);
	else
		ma_finish_switch(w, prev);
	return w;
}

/* Whether w may run t, which it took off a queue (or a bubble's cache) and has not
 * switched to yet: t is still scheduled on a queue of w's path, directly or through the
 * closed bubble holding it. Until the switch, a strategy sees t neither queued nor running
 * and may move it (ma_entity_move_to_holder, ma_bubble_place, ma_bubble_burst). */
static inline int ma_still_ours(const struct ma_worker *w, const struct marcel_task *t)
{
	struct ma_holder *h = ma_load_acquire(&t->e.sched_holder);
	/* A queue of w's path, so served (w is the caller, not disabled: a VP disabled
	 * meanwhile runs it once and sends it on at its next yield): the one w took t from,
	 * or one only w looks at (where its runnext slot's threads are scheduled). */
	if (ma_likely(h == w->took_from) || (h && ma_holder_only_for(h, w)))
		return 1;
	if (h && h->type != MA_RUNQUEUE_HOLDER) {
		/* Held by a closed bubble: where it is served from, if it serves anything. */
		h = ma_hook_holder_serving(h);
		if (!h)
			return 0;
	}
	if (!h || h->type != MA_RUNQUEUE_HOLDER)
		return 1;
	/* A queue only disabled VPs look at sends its work up (ma_rq_enqueue). Most often
	 * it is w's own, the first of its path. */
	return ma_path_index(w, ma_rq_target(ma_rq_of_holder(h))) >= 0;
}

int ma_task_still_ours(const struct ma_worker *w, const struct marcel_task *t)
{
	return ma_still_ours(w, t);
}

/* Waits until t's registers are saved by the worker it left. Out of line: the switch
 * finds them saved but for a cross-VP hand-off caught in its last instructions. */
static __attribute__((noinline)) void ma_wait_off_cpu(struct marcel_task *t)
{
	unsigned rounds = 0;
	while (atomic_load_explicit(&t->on_cpu, memory_order_acquire))
		ma_spin_backoff(&rounds);
}

/* Inlined into yield, block and exit: one prologue instead of two on the hot paths.
 * may_be_prev is a constant: 0 where next cannot be prev (a yield's next was ready while
 * prev ran). */
static inline __attribute__((always_inline)) void
ma_switch_to_inl_(struct ma_worker *w, struct marcel_task *prev, struct marcel_task *next, const int may_be_prev)
{
	if (may_be_prev && ma_unlikely(next == prev)) {
		/* It was woken (and queued) before it could leave, and we picked it ourselves. */
		atomic_store_explicit(&prev->state, MA_TASK_RUNNING, memory_order_relaxed);
		return;
	}
	if (ma_unlikely(!next->stack_base && !next->is_main && !next->is_idle && !next->inline_run)) {
		if (ma_stack_bind(w, next)) {
			/* Out of memory for a stack: leave it queued for later and let the worker
			 * do something else; nothing is lost. */
			atomic_store_explicit(&w->picked, NULL, memory_order_relaxed);
			ma_entity_enqueue(&next->e);
			if (prev == &w->idle) {
				usleep(1000);
				return;
			}
			next = &w->idle;
		}
	}
	/* Its previous worker may still be saving its registers. */
	if (ma_unlikely(atomic_load_explicit(&next->on_cpu, memory_order_acquire)))
		ma_wait_off_cpu(next);
	if (ma_unlikely(!next->is_idle && !ma_still_ours(w, next))) {
		/* Moved since we took it: it goes there now rather than after a run here (it
		 * would only follow the move at its next yield). */
		atomic_store_explicit(&w->picked, NULL, memory_order_relaxed);
		ma_entity_enqueue(&next->e);
		if (prev == &w->idle)
			return;
		next = &w->idle;
		if (ma_unlikely(atomic_load_explicit(&next->on_cpu, memory_order_acquire)))
			ma_wait_off_cpu(next);
	}
	atomic_store_explicit(&next->on_cpu, 1, memory_order_relaxed);
	atomic_store_explicit(&next->state, MA_TASK_RUNNING, memory_order_relaxed);
	atomic_store_explicit(&next->last_vp, (int)w->vp, memory_order_relaxed);
	/* Release: load estimates read next's fields through it (bubbles/view.c). */
	atomic_store_explicit(&w->current, next, memory_order_release);
	atomic_store_explicit(&w->picked, NULL, memory_order_relaxed);
	/* CPU time, charged to the thread leaving from the coarse clock (cpuclock.c). */
	ma_cpu_charge(w, prev);
	ma_owner_inc(&w->nr_switches);
	if (ma_unlikely(ma_tracing())) {
		if (!prev->is_idle)
			ma_trace_emit(MA_TR_THREAD_STOP, prev->id, 0, prev->name);
		if (!next->is_idle)
			ma_trace_emit(MA_TR_THREAD_RUN, next->id, 0, next->name);
	}
	prev->saved_errno = *w->errno_loc;
	if (ma_unlikely(prev->canary) && !ma_stack_canary_ok(prev))
		ma_stack_canary_failed(prev);

	ma_asan_start_switch(prev->post == MA_POST_EXIT ? NULL : &prev->asan_fake_stack,
			     next->asan_bottom, next->asan_size);
	ma_tsan_switch(prev, next);
	struct marcel_task *from = ma_ctx_switch(&prev->ctx, &next->ctx, prev);
	/* We are `prev` again, maybe on another worker: re-read everything per-worker. */
	w = ma_after_switch(prev, from);
	*w->errno_loc = prev->saved_errno;
	ma_sig_check(prev);
}

#define ma_switch_to_inl(w, prev, next) ma_switch_to_inl_((w), (prev), (next), 1)

void ma_switch_to(struct ma_worker *w, struct marcel_task *prev, struct marcel_task *next)
{
	ma_switch_to_inl(w, prev, next);
}

static void ma_claim_cpu(struct marcel_task *t)
{
	unsigned rounds = 0;
	while (ma_unlikely(atomic_load_explicit(&t->on_cpu, memory_order_acquire)))
		ma_spin_backoff(&rounds);
	atomic_store_explicit(&t->on_cpu, 1, memory_order_relaxed);
}

void ma_switch_out(struct marcel_task *self, struct marcel_task *to)
{
	ma_claim_cpu(to);
	self->saved_errno = errno;
	ma_asan_start_switch(&self->asan_fake_stack, to->asan_bottom, to->asan_size);
	ma_tsan_switch(self, to);
	struct marcel_task *from = ma_ctx_switch(&self->ctx, &to->ctx, self);
	/* Resumed by a worker, like any switch. */
	struct ma_worker *w = ma_after_switch(self, from);
	*w->errno_loc = self->saved_errno;
	ma_sig_check(self);
}

struct marcel_task *ma_carrier_switch(struct marcel_task *self, struct marcel_task *next)
{
	ma_claim_cpu(next);
	ma_asan_start_switch(&self->asan_fake_stack, next->asan_bottom, next->asan_size);
	ma_tsan_switch(self, next);
	struct marcel_task *from = ma_ctx_switch(&self->ctx, &next->ctx, self);
	ma_asan_finish_switch(self->asan_fake_stack, &from->asan_bottom, &from->asan_size);
	return from;
}

static _Noreturn void ma_exit_self(struct ma_worker *w, struct marcel_task *cur, any_t retval);

void ma_task_entry(void *from, void *arg)
{
	struct marcel_task *self = arg;
	struct ma_worker *w = ma_after_switch(self, from);
	*w->errno_loc = 0;
	/* Canceled before it started: it ends here, its function never called (nothing of
	 * it can be pending yet: no handler, no key, no disabled state). */
	if (ma_unlikely(atomic_load_explicit(&self->cancel, memory_order_relaxed) & MA_CANCEL_REQ))
		ma_exit_self(w, self, MARCEL_CANCELED);
	/* Signals sent before it started, or pending for the process. */
	ma_sig_check(self);
	/* Not marcel_exit: returning runs no cleanup handler (POSIX leaves returning from
	 * inside a push/pop block undefined; its buffers are gone with the frames). */
	any_t retval = self->func(self->arg);
	ma_exit_self(ma_worker_self(), self, retval);
}

/* The runnext slot's thread, taken if nothing queued on w's path is strictly better (the
 * rule of ma_find_next_in, which handles every other case): a same-VP hand-off then
 * switches without a call or a queue. */
static inline struct marcel_task *ma_take_runnext(struct ma_worker *w)
{
	struct marcel_task *rn = w->runnext;
	if (!rn || ma_unlikely(atomic_load_explicit(&w->attn.disabled, memory_order_relaxed)))
		return NULL;
	int rprio = atomic_load_explicit(&rn->e.prio, memory_order_relaxed), qprio;
	if (ma_peek_next(w, rprio - 1, &qprio))
		return NULL;
	if (ma_unlikely(atomic_load_explicit(&rn->req.suspend_req, memory_order_relaxed)))
		return NULL;
	ma_write_once(&w->runnext, NULL);
	return rn;
}

void ma_schedule_blocked(struct ma_worker *w, struct marcel_task *prev)
{
	if (ma_unlikely(ma_worker_attention(w))) {
		/* Leaving the VP: its private bubbles go public first (bubbles/private.c). */
		ma_private_publish_pending(w);
		ma_timers_poll(w);
	}
	struct marcel_task *next = ma_take_runnext(w);
	if (!next)
		next = ma_find_next(w, MA_MAX_PRIO - 1);
	if (!next)
		next = &w->idle;
	ma_switch_to_inl(w, prev, next);
}

/* ---- waiting ---- */

void ma_waiter_wait(struct ma_waiter *wt)
{
	struct marcel_task *self = wt->task;
	if (!self) {
		while (!atomic_load_explicit(&wt->done, memory_order_acquire))
			ma_futex_wait(&wt->done, 0);
		return;
	}
	while (!atomic_load_explicit(&wt->done, memory_order_acquire)) {
		int s = MA_TASK_BLOCKING;
		if (atomic_compare_exchange_strong(&self->state, &s, MA_TASK_BLOCKED)) {
			if (ma_unlikely(ma_sig_due(self)) && ma_sig_unblock(self))
				continue;
			struct ma_worker *w = ma_worker_self();
			self->post = MA_POST_BLOCK;
			ma_schedule_blocked(w, self);
			continue;
		}
		/* A waker cancelled the block (or a late one from an earlier wait did, or a
		 * signal's sender did: its handler runs, then the wait goes on). */
		if (atomic_load_explicit(&wt->done, memory_order_acquire))
			break;
		ma_sig_check(self);
		atomic_store(&self->state, MA_TASK_BLOCKING);
	}
	atomic_store_explicit(&self->state, MA_TASK_RUNNING, memory_order_relaxed);
}

/* Makes a claimed task (now READY) runnable. A task that only the waker's VP may run and
 * that last ran there goes to that VP's runnext slot: the common hand-off between
 * threads of one VP then costs no queue lock on either side. */
static void ma_make_ready(struct marcel_task *t)
{
	/* Never queue a task whose registers are still being saved: a worker picking it
	 * would wait for its switch, which may itself wait for a task this worker is
	 * leaving -- two workers waiting for each other. The worker switching it out
	 * queues it instead, once it has cleared on_cpu (ma_finish_switch). */
	if (ma_unlikely(atomic_load(&t->on_cpu))) {
		atomic_store(&t->wake_pending, 1);
		if (atomic_load(&t->on_cpu) || !atomic_exchange(&t->wake_pending, 0))
			return;
	}
	struct ma_holder *h = ma_load_acquire(&t->e.sched_holder);
	struct ma_worker *w = ma_worker_self();
	/* A queue only w looks at. */
	if (w && !w->runnext && ma_holder_only_for(h, w) &&
	    atomic_load_explicit(&t->last_vp, memory_order_relaxed) == (int)w->vp &&
	    !atomic_load_explicit(&w->attn.disabled, memory_order_relaxed)) {
		ma_write_once(&w->runnext, t);
		return;
	}
	ma_entity_enqueue(&t->e);
}

void ma_wake_task(struct marcel_task *t)
{
	for (;;) {
		int s = atomic_load(&t->state);
		if (s == MA_TASK_BLOCKING) {
			if (atomic_compare_exchange_strong(&t->state, &s, MA_TASK_RUNNING))
				return;
		} else if (s == MA_TASK_BLOCKED) {
			if (atomic_compare_exchange_strong(&t->state, &s, MA_TASK_READY)) {
				ma_make_ready(t);
				return;
			}
		} else {
			/* Running or ready: it will look at `done` again, but only if our store of
			 * `done` is visible before it does. A plain load of the state may pass that
			 * store (x86 keeps stores in a buffer, loads do not wait for it): we could
			 * then read RUNNING while the waiter, woken spuriously, stores BLOCKING, reads
			 * the old `done` and blocks for good. A read-modify-write of the state cannot
			 * pass it, and the waiter changes its state with read-modify-writes (or a
			 * sequentially consistent store) before it reads `done`: whichever of the
			 * two comes second in the state's order sees the other's. If the state
			 * changed meanwhile, look again. */
			if (atomic_compare_exchange_strong(&t->state, &s, s))
				return;
		}
	}
}

struct marcel_task *ma_waiter_wake_handoff(struct ma_worker *w, struct ma_waiter *wt)
{
	struct marcel_task *t = wt->task;
	/* Only take over a waiter that last ran here: pulling it from another worker would
	 * trade its cache for a queue round trip. */
	struct ma_holder *h = t ? ma_load_acquire(&t->e.sched_holder) : NULL;
	if (!t || atomic_load_explicit(&t->last_vp, memory_order_relaxed) != (int)w->vp ||
	    (!ma_holder_only_for(h, w) && (h->type != MA_RUNQUEUE_HOLDER || ma_path_index(w, ma_rq_of_holder(h)) < 0))) {
		ma_waiter_wake(wt);
		return NULL;
	}
	atomic_store_explicit(&wt->done, 1, memory_order_release);
	int s = MA_TASK_BLOCKED;
	/* Claim it without queuing it: nobody else can pick it, we switch to it next. */
	if (atomic_compare_exchange_strong(&t->state, &s, MA_TASK_READY))
		return t;
	ma_wake_task(t);
	return NULL;
}

void ma_waiter_wake(struct ma_waiter *wt)
{
	struct marcel_task *t = wt->task;
	atomic_store_explicit(&wt->done, 1, memory_order_release);
	/* wt may be gone from here on (its owner can see `done` and return). */
	if (t)
		ma_wake_task(t);
	else
		ma_futex_wake(&wt->done, 1);
}

/* ---- yield ---- */

/* A yield is a point where signals are taken, whether it switches or not: a switch takes
 * them when the thread resumes (ma_switch_to_inl), a yield that stays here now. */
static inline int ma_yield_stay(struct marcel_task *cur)
{
	ma_sig_check(cur);
	return 0;
}

/* The part of a yield that the attention words ask for: private bubbles, timers, the
 * stray hook; then, if the thread must leave whatever else is ready, it leaves (1).
 * Out of line: the common yield does not pay for its frame. */
static __attribute__((noinline)) int ma_yield_attend(struct ma_worker *w, struct marcel_task *cur)
{
	/* Whatever else runs here next, the private bubbles are not its (bubbles/private.c). */
	ma_private_publish_pending(w);
	ma_timers_poll(w);
	if (ma_unlikely(atomic_load_explicit(&cur->req.stray, memory_order_relaxed)))
		ma_hook_yield(w, cur);
	if (atomic_load_explicit(&w->attn.disabled, memory_order_relaxed) ||
	    atomic_load_explicit(&cur->req.suspend_req, memory_order_relaxed) ||
	    atomic_load_explicit(&cur->leave_req, memory_order_relaxed) ||
	    atomic_load_explicit(&cur->req.move_req, memory_order_relaxed)) {
		atomic_store_explicit(&cur->req.move_req, 0, memory_order_relaxed);
		/* Leave this VP (disabled), stop (suspended) or go back to a closing bubble:
		 * requeued, it is moved, parked or cached. */
		cur->post = MA_POST_REQUEUE;
		ma_schedule_blocked(w, cur);
		return 1;
	}
	return 0;
}

int marcel_yield(void)
{
	struct ma_worker *w = ma_worker_self();
	if (ma_unlikely(!w))
		return EPERM;
	struct marcel_task *cur = ma_worker_current(w);
	if (ma_unlikely(ma_worker_attention(w) | ma_task_attention(cur)) && ma_yield_attend(w, cur))
		return 0;
	int prio, rprio, my_prio = atomic_load_explicit(&cur->e.prio, memory_order_relaxed);
	struct marcel_task *rn = w->runnext;
	struct ma_runqueue *q;
	/* The slot's thread, unless something queued is more urgent (ma_take_runnext's rule);
	 * one look at the path tells that and whether cur fits in the slot after it. */
	if (rn && (rprio = atomic_load_explicit(&rn->e.prio, memory_order_relaxed)) <= my_prio &&
	    (!(q = ma_peek_next(w, my_prio, &prio)) || prio >= rprio)) {
		ma_write_once(&w->runnext, NULL);
		if (!ma_park_if_suspended(rn)) {
			/* The slot is empty now, and the attention word said w is not disabled. */
			if (!q && ma_holder_only_for(ma_read_once(&cur->e.sched_holder), w) &&
			    !atomic_load_explicit(&ma_rt.nb_idle, memory_order_relaxed)) {
				/* It takes rn's place: a ping-pong of two threads stays lock-free. */
				atomic_store_explicit(&cur->state, MA_TASK_READY, memory_order_relaxed);
				ma_write_once(&w->runnext, cur);
				cur->post = MA_POST_NONE;
			} else {
				cur->post = MA_POST_REQUEUE;
			}
			ma_switch_to_inl_(w, cur, rn, 0);
			return 0;
		}
	}
	struct ma_runqueue *rq = ma_pick_next(w, my_prio, &prio);
	if (!rq)
		return ma_yield_stay(cur);
	if (&rq->hold == ma_read_once(&cur->e.sched_holder)) {
		/* Common case: swap with the head of our own queue under one lock. */
		ma_spin_lock(&rq->hold.lock);
		uint64_t bm = atomic_load_explicit(&rq->bitmap, memory_order_relaxed);
		if (ma_unlikely(ma_read_once(&cur->e.sched_holder) != &rq->hold)) {
			/* A strategy moved us meanwhile. */
			ma_spin_unlock(&rq->hold.lock);
			goto slow;
		}
		if (!bm || __builtin_ctzll(bm) > my_prio) {
			ma_spin_unlock(&rq->hold.lock);
			return ma_yield_stay(cur);
		}
		int p = __builtin_ctzll(bm);
		struct ma_entity *e = ma_container_of(rq->queue[p].next, struct ma_entity, run_node);
		if (ma_unlikely(e->type == MA_BUBBLE_ENTITY ||
				atomic_load_explicit(&ma_container_of(e, struct marcel_task, e)->req.suspend_req,
						     memory_order_relaxed))) {
			/* find_next parks it, or asks the strategy about the bubble. */
			ma_spin_unlock(&rq->hold.lock);
			goto slow;
		}
		atomic_store_explicit(&cur->state, MA_TASK_READY, memory_order_relaxed);
		if (p == my_prio && e->run_node.next == &rq->queue[p] && !(bm & (bm - 1)) && ma_runnext_may(w, &rq->hold)) {
			/* e was all that was queued here: cur waits in the runnext slot instead of
			 * the queue (ma_runnext_fits), and the next yields of the two swap them
			 * there without this lock. */
			ma_rq_dequeue_locked(rq, e);
			if (!ma_peek_next(w, my_prio, &prio))
				ma_write_once(&w->runnext, cur);
			else
				ma_rq_enqueue_locked(rq, &cur->e);
		} else if (p == my_prio) {
			/* Same list: rotate, the bitmap and the counts do not change (nr_taken
			 * neither: for a spinning worker, the thread yielding waits there as the
			 * one it takes over from did). */
			ma_list_del(&e->run_node);
			ma_list_add_tail(&rq->queue[p], &cur->e.run_node);
			cur->e.queued_prio = p;
			ma_write_once(&e->ready_holder, NULL);
			ma_write_once(&cur->e.ready_holder, &rq->hold);
		} else {
			ma_rq_dequeue_locked(rq, e);
			ma_rq_enqueue_locked(rq, &cur->e);
		}
		ma_spin_unlock(&rq->hold.lock);
		w->took_from = &rq->hold;
		cur->post = MA_POST_NONE;
		ma_switch_to_inl_(w, cur, ma_container_of(e, struct marcel_task, e), 0);
		return 0;
	}
slow:;
	struct marcel_task *next = ma_find_next_in(w, my_prio, rq);
	if (!next)
		return ma_yield_stay(cur);
	cur->post = MA_POST_REQUEUE;
	ma_switch_to_inl(w, cur, next);
	return 0;
}

void ma_yield_preempted(void)
{
	struct ma_worker *w = ma_worker_self();
	struct marcel_task *cur = ma_worker_current(w);
	if (atomic_load_explicit(&cur->leave_req, memory_order_relaxed)) {
		/* Counted back by ma_finish_switch once it is cached in its bubble. */
		cur->post = MA_POST_REQUEUE;
		ma_schedule_blocked(w, cur);
		return;
	}
	marcel_yield();
}

int marcel_yield_to(marcel_t t)
{
	struct ma_worker *w = ma_worker_self();
	if (ma_unlikely(!w))
		return EPERM;
	if (!ma_task_valid(t) || atomic_load(&t->link) & MA_LINK_DEAD)
		return ESRCH;
	struct marcel_task *cur = ma_worker_current(w);
	if (t == cur)
		return 0;
	ma_private_publish_pending(w);
	/* Made or yielded on this VP, it may wait in the runnext slot (ma_runnext_fits). */
	if (ma_runnext_claim(w, t) && !ma_park_if_suspended(t)) {
		cur->post = MA_POST_REQUEUE;
		ma_switch_to(w, cur, t);
		return 0;
	}
	/* Read without the lock, checked again under it. */
	struct ma_holder *h = ma_read_once(&t->e.ready_holder);
	if (h && h->type == MA_RUNQUEUE_HOLDER && ma_path_index(w, ma_rq_of_holder(h)) >= 0) {
		struct ma_runqueue *rq = ma_rq_of_holder(h);
		ma_spin_lock(&rq->hold.lock);
		if (ma_read_once(&t->e.ready_holder) == h &&
		    atomic_load(&t->state) == MA_TASK_READY) {
			ma_rq_dequeue_locked(rq, &t->e);
			ma_spin_unlock(&rq->hold.lock);
			cur->post = MA_POST_REQUEUE;
			ma_switch_to(w, cur, t);
			return 0;
		}
		ma_spin_unlock(&rq->hold.lock);
	}
	marcel_yield();
	return EAGAIN;
}

/* ---- exit ---- */

/* Inline in the exit: a call and its frame fewer on every thread's end. */
static inline __attribute__((always_inline)) void ma_task_finish_inl(struct marcel_task *t, any_t retval)
{
	t->retval = retval;
	/* Destructors run as the thread itself: they may use any marcel call, but no
	 * cancellation point in them acts (cancel.c). */
	if (t->specific) {
		atomic_fetch_or(&t->cancel, MA_CANCEL_ENDING);
		ma_keys_exit(t);
	}
	if (ma_likely(ma_free_task_leave(t))) {
		/* An inline seed's run ends before any switch would charge it (seed.c). */
		struct ma_worker *w;
		if (ma_unlikely(t->inline_run) && (w = ma_worker_self()) != NULL)
			ma_cpu_charge(w, t);
	} else {
		ma_hook_task_end(t);
	}
	MA_TRACE(MA_TR_THREAD_END, t->id, 0, t->name);
	atomic_store_explicit(&t->state, MA_TASK_DEAD, memory_order_relaxed);
}

void ma_task_finish(struct marcel_task *t, any_t retval)
{
	ma_task_finish_inl(t, retval);
}

/* ma_task_finish, then publishes the death in t's link word; returns the link's previous
 * value (its joiner's waiter, if any). */
static inline __attribute__((always_inline)) uintptr_t ma_task_end(struct marcel_task *t, any_t retval)
{
	ma_task_finish_inl(t, retval);
	return atomic_fetch_or(&t->link, MA_LINK_DEAD);
}

void marcel_exit(any_t retval)
{
	struct ma_worker *w = ma_worker_self();
	if (!w) {
		fprintf(stderr, "marcel: marcel_exit called outside a marcel thread\n");
		abort();
	}
	struct marcel_task *cur = ma_worker_current(w);
	if (ma_unlikely(cur->cleanup != NULL)) {
		/* They may block: the thread may be on another worker afterwards. */
		ma_cleanup_run(cur);
		w = ma_worker_self();
	}
	ma_exit_self(w, cur, retval);
}

/* The end of thread cur, running on w (cleanup handlers done, if any). */
static _Noreturn void ma_exit_self(struct ma_worker *w, struct marcel_task *cur, any_t retval)
{
	if (cur->is_main) {
		ma_end(1);
		exit(0);
	}
	if (cur->inline_run)
		ma_seed_exit(cur, retval);
	/* What it made private and left goes into its bubble while it is still there. */
	ma_private_publish_pending(w);
	/* Published now, so a blocked joiner can take over this worker directly; it will
	 * not recycle the descriptor before on_cpu clears (ma_release_exited). */
	uintptr_t old = ma_task_end(cur, retval);
	w = ma_worker_self();
	struct marcel_task *next = NULL;
	if (!(old & MA_LINK_DETACHED) && (old & ~MA_LINK_FLAGS))
		next = ma_waiter_wake_handoff(w, (struct ma_waiter *)(old & ~MA_LINK_FLAGS));
	cur->post = MA_POST_EXIT;
	if (!next)
		next = ma_find_next(w, MA_MAX_PRIO - 1);
	ma_switch_to_inl(w, cur, next ? next : &w->idle);
	__builtin_unreachable();
}

/* ---- idle ---- */

void ma_idle_loop(void *from, void *arg)
{
	struct ma_worker *w = arg;
	if (from)
		ma_after_switch(&w->idle, from);
	for (;;) {
		ma_timers_poll(w);
		struct marcel_task *next = ma_find_next(w, MA_MAX_PRIO - 1);
		if (next) {
			atomic_store_explicit(&w->picked, next, memory_order_release);
			w->idle.post = MA_POST_NONE;
			ma_switch_to(w, &w->idle, next);
			continue;
		}
		if (atomic_load_explicit(&ma_rt.stopping, memory_order_acquire) && w->vp != 0)
			return;
		/* Stealing strategies look for work for this VP here. */
		if (ma_hook_vp_idle(w))
			continue;
		/* Counted idle first: a VP waking a private bubble now hands this one a seed.
		 * Then those keeping private work are asked for some. */
		atomic_fetch_add(&ma_rt.nb_idle, 1);
		atomic_store_explicit(&w->hungry, 1, memory_order_relaxed);
		ma_hook_vp_hungry(w);
		ma_idle_wait(w);
		atomic_store_explicit(&w->hungry, 0, memory_order_relaxed);
		atomic_fetch_sub_explicit(&ma_rt.nb_idle, 1, memory_order_relaxed);
		atomic_store_explicit(&w->fed, 0, memory_order_relaxed);
	}
}
