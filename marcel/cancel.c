/*
 * Cancellation (deferred, as POSIX) and cleanup handlers.
 *
 * A request is one bit (MA_CANCEL_REQ) of the target's `cancel` word, set with an atomic
 * read-modify-write; the thread's own state and type are other bits of that word, which
 * it changes with read-modify-writes too. A thread acts on a request only at a
 * cancellation point (ma_cancel_point on entry, ma_waiter_block while it blocks),
 * so it never ends in the middle of a marcel call: every point first undoes what its
 * wait registered (a wait-queue node, a timer, a joiner's link), as it does on a
 * timeout, and only then ends through marcel_exit (ma_cancel_act).
 *
 * Waking a blocked target without a lost wake-up: ma_waiter_block sets at_point,
 * publishes BLOCKED with a compare-and-swap, then reads `cancel`; marcel_cancel sets REQ,
 * then reads the state, both sequentially consistent. Either the waiter sees the request
 * and does not sleep, or marcel_cancel sees BLOCKED -- and at_point through that CAS -- and
 * wakes it (it then sees the request as it loops). marcel_cancel wakes only a thread at a
 * point: a wake-up elsewhere (a mutex wait) would only cost it a spurious round. Late
 * wake-ups are harmless for the same reason: every ma_waiter wait re-checks `done`.
 *
 * Invariants: at_point is 0 outside ma_waiter_block; `cancel` is reset when a
 * descriptor is given to a new thread (thread.c), `cleanup` when it is freed (task.c);
 * MA_CANCEL_ENDING, set once a thread runs its handlers or key destructors at its end,
 * keeps any point in them from acting again.
 */
#include <errno.h>
#include "ma_waitq.h"

/* Waiting at a cancellation point: ma_waiter_wait's loop, plus the request check
 * (ma_waitq.h: the loop is shared with the waits that have a deadline). */
int ma_waiter_wait_point(struct ma_waiter *wt)
{
	if (!wt->task) {
		/* A kernel thread that is not a marcel thread: nothing can cancel it. */
		ma_waiter_wait(wt);
		return 0;
	}
	return ma_waiter_block(wt, NULL, 1);
}

_Noreturn void ma_cancel_act(struct marcel_task *self)
{
	atomic_fetch_or(&self->cancel, MA_CANCEL_ENDING);
	marcel_exit(MARCEL_CANCELED);
}

void ma_cleanup_run(struct marcel_task *self)
{
	atomic_fetch_or(&self->cancel, MA_CANCEL_ENDING);
	struct marcel_cleanup_buffer *b;
	/* Popped before it runs: a handler that exits, or blocks and is canceled again,
	 * goes on with the next one, never runs twice. */
	while ((b = self->cleanup) != NULL) {
		self->cleanup = b->__prev;
		b->__routine(b->__arg);
	}
}

int marcel_cancel(marcel_t t)
{
	if (!ma_task_valid(t) || t->is_idle)
		return ESRCH;
	/* Ended, not joined yet: still a thread for POSIX, and its result stands. */
	if (atomic_load(&t->link) & MA_LINK_DEAD)
		return 0;
	unsigned prev = atomic_fetch_or(&t->cancel, MA_CANCEL_REQ);
	/* Disabled or ending: it acts (or not) later, by itself; only it can enable. */
	if (prev & (MA_CANCEL_DISABLED | MA_CANCEL_ENDING))
		return 0;
	/* See the top of this file. The state may change between this read and the wake-up
	 * (a waker got there first, and the target went on to another wait): that wait then
	 * sees a spurious wake-up, which every wait tolerates. */
	if (atomic_load(&t->state) == MA_TASK_BLOCKED && atomic_load_explicit(&t->at_point, memory_order_relaxed))
		ma_wake_task(t);
	return 0;
}

/* The caller as a marcel thread, on a VP or in a blocking section; NULL otherwise. */
static struct marcel_task *ma_cancel_self(void)
{
	return marcel_self();
}

/* A thread of the asynchronous type acts on a pending request as soon as it can. */
static void ma_cancel_async_check(struct marcel_task *self)
{
	unsigned c = atomic_load(&self->cancel);
	if ((c & MA_CANCEL_ASYNC) && ma_task_self() == self)
		ma_cancel_point(self);
}

int marcel_setcancelstate(int state, int *oldstate)
{
	struct marcel_task *self = ma_cancel_self();
	if (!self)
		return EPERM;
	if (state != MARCEL_CANCEL_ENABLE && state != MARCEL_CANCEL_DISABLE)
		return EINVAL;
	unsigned prev = state == MARCEL_CANCEL_DISABLE ? atomic_fetch_or(&self->cancel, MA_CANCEL_DISABLED)
						       : atomic_fetch_and(&self->cancel, ~MA_CANCEL_DISABLED);
	if (oldstate)
		*oldstate = (prev & MA_CANCEL_DISABLED) ? MARCEL_CANCEL_DISABLE : MARCEL_CANCEL_ENABLE;
	if (state == MARCEL_CANCEL_ENABLE)
		ma_cancel_async_check(self);
	return 0;
}

int marcel_setcanceltype(int type, int *oldtype)
{
	struct marcel_task *self = ma_cancel_self();
	if (!self)
		return EPERM;
	if (type != MARCEL_CANCEL_DEFERRED && type != MARCEL_CANCEL_ASYNCHRONOUS)
		return EINVAL;
	unsigned prev = type == MARCEL_CANCEL_ASYNCHRONOUS ? atomic_fetch_or(&self->cancel, MA_CANCEL_ASYNC)
							   : atomic_fetch_and(&self->cancel, ~MA_CANCEL_ASYNC);
	if (oldtype)
		*oldtype = (prev & MA_CANCEL_ASYNC) ? MARCEL_CANCEL_ASYNCHRONOUS : MARCEL_CANCEL_DEFERRED;
	if (type == MARCEL_CANCEL_ASYNCHRONOUS)
		ma_cancel_async_check(self);
	return 0;
}

void marcel_testcancel(void)
{
	ma_cancel_point(ma_task_self());
}

int marcel_cleanup_push_buffer(marcel_cleanup_buffer_t *buf, void (*routine)(void *), void *arg)
{
	if (!buf)
		return EINVAL;
	buf->__routine = routine;
	buf->__arg = arg;
	buf->__prev = NULL;
	buf->__owner = NULL;
	if (!routine)
		return EINVAL;
	struct marcel_task *self = ma_cancel_self();
	if (self) {
		buf->__prev = self->cleanup;
		buf->__owner = self;
		self->cleanup = buf;
	}
	return 0;
}

int marcel_cleanup_pop_buffer(marcel_cleanup_buffer_t *buf, int execute)
{
	if (!buf || !buf->__routine)
		return EINVAL;
	struct marcel_task *self = buf->__owner;
	if (self) {
		if (self->cleanup != buf)
			return EINVAL;
		self->cleanup = buf->__prev;
	}
	if (execute)
		buf->__routine(buf->__arg);
	return 0;
}
