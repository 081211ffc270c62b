/*
 * Seeds (marcel_attr_setseed): threads meant for fine-grained nested parallelism, where a
 * parent creates children and soon joins them.
 *
 * Every thread gets its stack only when it first runs (ma_stack_bind), so a created
 * thread costs a descriptor and a queue slot. A seed goes further: when its joiner finds
 * it not started yet, the joiner takes it off its queue and calls its function on its
 * own stack, as a function call -- no stack, no switch, no wake-up. The seed is still a
 * thread while it runs there: marcel_self() is the seed, it is counted in its bubble, its
 * keys and CPU time are its own, and it may block, yield or be preempted like any thread:
 * it is then switched out with its frames on the joiner's stack, which cannot run before
 * the seed ends anyway. marcel_exit() in such a seed comes back here.
 *
 * A seed runs inline only when at least MA_SEED_STACK_MIN bytes of the joiner's stack are
 * left (else on its own stack, as any thread), and never if its attributes placed it (a
 * VP set or a policy): those start where they asked.
 */
#define _GNU_SOURCE /* pthread_getattr_np */
#include <pthread.h>
#include "ma_hooks.h"
#include "ma_sync.h"
#include "ma_sanitizer.h"
#include "ma_trace.h"

#define MA_SEED_STACK_MIN ((size_t)32 * 1024)

struct ma_seed_run {
	ma_unwind_buf exit;               /* marcel_exit() in the seed lands here */
	any_t retval;
	char *stack_lo;                   /* lowest byte of the stack it runs on */
};

void ma_seed_note_main_stack(void)
{
	pthread_attr_t a;
	void *lo;
	size_t size;
	/* Unknown bounds only cost main the inline runs. */
	if (pthread_getattr_np(pthread_self(), &a) != 0)
		return;
	if (pthread_attr_getstack(&a, &lo, &size) == 0)
		ma_rt.main_stack_lo = lo;
	pthread_attr_destroy(&a);
}

/* The lowest byte of the stack self runs on, NULL if unknown. */
static char *ma_stack_lo(const struct marcel_task *self)
{
	if (self->inline_run)
		return self->inline_run->stack_lo;
	return self->stack_base ? self->stack_base : self->is_main ? ma_rt.main_stack_lo : NULL;
}

/* Bytes of self's stack below the caller's frame, 0 if unknown. */
static size_t ma_stack_left(char *lo)
{
	char *sp = __builtin_frame_address(0);
	return lo && sp > lo ? (size_t)(sp - lo) : 0;
}

/* t, claimed by self on w, becomes the worker's current thread on self's stack. */
static void ma_seed_enter(struct ma_worker *w, struct marcel_task *self, struct marcel_task *t)
{
	/* If it is switched out, its context is saved on this stack: the switch and the
	 * preemption and overflow checks must see this stack as its own (main's has no
	 * stack_base: inline_run tells them, see ma_switch_to_inl and preempt.c). */
	t->stack_base = self->stack_base;
	t->stack_size = self->stack_size;
	t->canary = self->canary;
	ma_asan_seed_borrow(t, self);
	ma_tsan_seed_borrow(t);
	atomic_store_explicit(&t->on_cpu, 1, memory_order_relaxed);
	atomic_store_explicit(&t->state, MA_TASK_RUNNING, memory_order_relaxed);
	atomic_store_explicit(&t->last_vp, (int)w->vp, memory_order_relaxed);
	ma_cpu_charge(w, self);
	ma_owner_inc(&w->nr_seed_runs);
	/* From here self waits for t like a blocked thread: a gather of its bubble does not
	 * wait for it (it would wait for ever if t waits for threads of that bubble). Store
	 * then load, against ma_gather_out's store of leave_req then load of hosts_seed:
	 * one of the two sees the other and counts self back. */
	if (ma_holder_private_to(ma_read_once(&self->e.natural_holder), w)) {
		/* No gather can reach a bubble private to this VP (bubbles/private.c); one that
		 * comes after it is published finds the flag through the publication. */
		atomic_store_explicit(&self->hosts_seed, 1, memory_order_relaxed);
	} else {
		atomic_store(&self->hosts_seed, 1);
		if (atomic_load(&self->leave_req))
			ma_task_back(self);
	}
	self->saved_errno = *w->errno_loc;
	*w->errno_loc = 0;
	if (ma_unlikely(ma_tracing())) {
		ma_trace_emit(MA_TR_THREAD_STOP, self->id, 0, self->name);
		ma_trace_emit(MA_TR_THREAD_RUN, t->id, 0, t->name);
	}
	atomic_store_explicit(&w->current, t, memory_order_release);
}

/* t has ended (ma_task_finish): self, its joiner, is the worker's current thread again. */
static void ma_seed_leave(struct marcel_task *self, struct marcel_task *t)
{
	/* It may have moved to another worker while it ran. Its time was charged when it
	 * left its bubble (ma_bubble_task_exit); what comes after goes to self. */
	struct ma_worker *w = ma_worker_self();
	if (ma_unlikely(ma_tracing()))
		ma_trace_emit(MA_TR_THREAD_RUN, self->id, 0, self->name);
	/* The stack is self's: nothing to release but the borrowed bookkeeping. */
	t->stack_base = NULL;
	t->canary = 0;
	ma_tsan_seed_return(t);
	ma_asan_seed_return(t);
	t->inline_run = NULL;
	atomic_store_explicit(&w->current, self, memory_order_release);
	atomic_store_explicit(&self->state, MA_TASK_RUNNING, memory_order_relaxed);
	/* No fence: a gather that still reads 1 does not wait for self, as one that read it
	 * a moment earlier would not have; self then finds its unit moved at its next check
	 * (ma_task_still_ours below, or at a switch). */
	atomic_store_explicit(&self->hosts_seed, 0, memory_order_relaxed);
	*w->errno_loc = self->saved_errno;
	/* Asked back by a gather of its bubble while it ran: it has left for good. A gather
	 * asks a thread (ma_gather_out) while it walks its bubble's members under that
	 * bubble's lock, and t left its bubble under the same lock (ma_bubble_task_exit):
	 * either the gather came first and that lock shows us its leave_req, or it came
	 * after and did not find t. Most seeds never were asked, and the exchange in
	 * ma_task_back costs a locked instruction. */
	if (atomic_load_explicit(&t->leave_req, memory_order_relaxed))
		ma_task_back(t);
	ma_posix_note_exit(t);
	atomic_store_explicit(&t->on_cpu, 0, memory_order_release);
	atomic_store_explicit(&w->nb_exited, w->nb_exited + 1, memory_order_release);
	ma_end_note_exit();
	/* Its bubble was gathered (or moved) while t ran: self, not waited for, goes where
	 * it is expected, as a woken thread would, instead of running outside its unit. A
	 * bubble private to this VP was neither (bubbles/private.c). */
	if (ma_unlikely(!ma_holder_private_to(ma_read_once(&self->e.natural_holder), w) &&
			!ma_task_still_ours(w, self))) {
		self->post = MA_POST_REQUEUE;
		ma_schedule_blocked(w, self);
	}
}

/* Calls t's function; marcel_exit() in it comes back here. A function of its own: the
 * compiler keeps no variable of a function that sets a jump buffer in a register (it may
 * come back twice), and ma_seed_join spilled and reloaded all of its own around every
 * use, a third of its instructions. */
static __attribute__((noinline)) any_t ma_seed_call(struct marcel_task *t, struct ma_seed_run *run)
{
	if (ma_unwind_set(run->exit) == 0) {
		/* Canceled before it started: it ends at once, as ma_task_entry does. */
		if (ma_unlikely(atomic_load_explicit(&t->cancel, memory_order_relaxed) & MA_CANCEL_REQ))
			return MARCEL_CANCELED;
		return t->func(t->arg);
	}
	return run->retval;
}

/* Whether joiner's worker w takes BORN seed t out of a woken unit private to w, with no
 * lock (nobody else may touch that unit); when w was asked to publish, the layer above
 * decides (claim_private). */
static inline int ma_seed_claim_private(struct ma_worker *w, struct marcel_task *t)
{
	struct ma_holder *h = ma_read_once(&t->e.natural_holder);
	if (!ma_holder_private_to(h, w))
		return 0;
	struct ma_unit *u = ma_unit_of_holder(h);
	if (!u->private_woken)
		return 0;
	if (ma_unlikely(ma_private_asked(w)))
		return ma_hook_claim_private(w, t);
	if (atomic_load_explicit(&t->state, memory_order_relaxed) != MA_TASK_BORN)
		return 0;
	ma_unit_take_seed(u, t);
	return 1;
}

int ma_seed_join(struct marcel_task *t, struct ma_waiter *wt)
{
	struct ma_worker *w = ma_worker_self();
	if (!w || t->placed)
		return 0;
	struct marcel_task *self = ma_worker_current(w);
	char *lo = ma_stack_lo(self);
	if (self->is_idle || self != wt->task || ma_stack_left(lo) < MA_SEED_STACK_MIN)
		return 0;
	if (atomic_load_explicit(&t->req.suspend_req, memory_order_relaxed))
		return 0;
	int st = atomic_load_explicit(&t->state, memory_order_acquire);
	/* In a bubble private to this VP (bubbles/private.c): ours without a lock. Else it
	 * must have been started (READY); publishing private bubbles may just have done so. */
	if (st == MA_TASK_BORN && ma_seed_claim_private(w, t))
		goto run;
	if (st == MA_TASK_BORN)
		st = atomic_load_explicit(&t->state, memory_order_acquire);
	if (st != MA_TASK_READY)
		return 0;
	/* Created by this VP, it may wait in its runnext slot rather than in a queue. */
	int from_slot = ma_runnext_claim(w, t);
	if (!from_slot && !ma_entity_claim_ready(&t->e))
		return 0;
	/* Read after the claim: whoever queued it last did so under the lock we took (or it
	 * is this VP's slot). A stack means it ran already (and yielded): it goes on where it
	 * was. A strategy may also have moved it, or its bubble be gathered: it goes where it
	 * is expected. */
	if (t->stack_base || !ma_task_still_ours(w, t)) {
		if (from_slot && ma_task_still_ours(w, t))
			ma_write_once(&w->runnext, t);
		else
			ma_entity_enqueue(&t->e);
		return 0;
	}
run:;
	struct ma_seed_run run;
	run.stack_lo = lo;
	t->inline_run = &run;
	ma_seed_enter(w, self, t);
	run.retval = ma_seed_call(t, &run);
	/* Private bubbles it woke and left (bubbles/private.c) go into its bubble, as its
	 * wake-ups would have put them: published while it is still there. Those it made and
	 * left unwoken stay as an unwoken bubble would. */
	if (ma_unlikely(t->nb_private_woken))
		ma_private_publish_pending(ma_worker_self());
	ma_task_finish(t, run.retval);
	/* We are its joiner (wt is published in its link): nobody to wake, and nobody else
	 * writes a link that names a joiner (join and detach then fail), so its death is
	 * published with a plain store, not ma_task_end's read-modify-write. */
	atomic_store_explicit(&t->link, atomic_load_explicit(&t->link, memory_order_relaxed) | MA_LINK_DEAD,
			      memory_order_release);
	atomic_store_explicit(&wt->done, 1, memory_order_relaxed);
	ma_seed_leave(self, t);
	return 1;
}

_Noreturn void ma_seed_exit(struct marcel_task *t, any_t retval)
{
	t->inline_run->retval = retval;
	ma_unwind_to(t->inline_run->exit);
}
