/*
 * Wait queues held in the object's own word (ma_waitq.h): the list operations a lone
 * waiter does not need, and the wait itself (spin, block, deadline, cancellation).
 */
#include "ma_waitq.h"

/* Locks *q, whose value *seen must be a queue of at least one waiter: 1 once locked (the
 * caller then stores the new value, which unlocks); 0 if *q changed first (*seen is its
 * new value) and holds no queue any more. Waits while someone else holds the lock; while
 * it is held, nobody else changes the word (every other change expects it clear). */
static int ma_wq_lock(_Atomic uint64_t *q, uint64_t *seen)
{
	unsigned rounds = 0;
	for (;;) {
		uint64_t w = *seen;
		if (!ma_wq_queued(w))
			return 0;
		if (!(w & MA_WQ_LOCK)) {
			if (atomic_compare_exchange_strong(q, seen, w | MA_WQ_LOCK))
				return 1;
			continue;
		}
		ma_spin_backoff(&rounds);
		*seen = atomic_load(q);
	}
}

/* Unlocks *q with first as its oldest waiter (NULL: none) and the flags of keep. */
static void ma_wq_unlock(_Atomic uint64_t *q, struct ma_wq_node *first, uint64_t keep)
{
	uint64_t w = first ? (uint64_t)(uintptr_t)first | (first->next ? MA_WQ_MANY : 0) : 0;
	atomic_store_explicit(q, w | keep, memory_order_release);
}

int ma_wq_push_slow(_Atomic uint64_t *q, uint64_t *seen, struct ma_wq_node *n, uint64_t need)
{
	if (!ma_wq_lock(q, seen))
		return 0;
	struct ma_wq_node *f = ma_wq_first(*seen);
	uint64_t keep = *seen & MA_WQ_HELD;
	if ((*seen & need) != need) {
		ma_wq_unlock(q, f, keep);
		*seen = atomic_load(q);
		return 0;
	}
	if (!f->next)
		f->last = f;
	f->last->next = n;
	f->last = n;
	ma_wq_unlock(q, f, keep);
	return 1;
}

struct ma_wq_node *ma_wq_pop_slow(_Atomic uint64_t *q, uint64_t *seen)
{
	if (!ma_wq_lock(q, seen))
		return NULL;
	struct ma_wq_node *f = ma_wq_first(*seen), *nx = f->next;
	if (nx)
		nx->last = f->last;
	ma_wq_unlock(q, nx, 0);
	return f;
}

struct ma_wq_node *ma_wq_pop_all(_Atomic uint64_t *q)
{
	unsigned rounds = 0;
	uint64_t w = atomic_load(q);
	for (;;) {
		if (!ma_wq_queued(w))
			return NULL;
		if (!(w & MA_WQ_LOCK)) {
			if (atomic_compare_exchange_strong(q, &w, 0))
				return ma_wq_first(w);
			continue;
		}
		ma_spin_backoff(&rounds);
		w = atomic_load(q);
	}
}

int ma_wq_remove(_Atomic uint64_t *q, struct ma_wq_node *n)
{
	uint64_t w = atomic_load(q);
	for (;;) {
		if (!ma_wq_queued(w))
			return 0;
		struct ma_wq_node *f = ma_wq_first(w);
		if (!(w & (MA_WQ_LOCK | MA_WQ_MANY))) {
			if (f != n)
				return 0;
			if (atomic_compare_exchange_strong(q, &w, w & MA_WQ_HELD))
				return 1;
			continue;
		}
		if (ma_wq_lock(q, &w))
			break;
	}
	/* Locked. */
	struct ma_wq_node *f = ma_wq_first(w);
	uint64_t keep = w & MA_WQ_HELD;
	if (f == n) {
		if (f->next)
			f->next->last = f->last;
		ma_wq_unlock(q, f->next, keep);
		return 1;
	}
	struct ma_wq_node *p = f;
	while (p->next && p->next != n)
		p = p->next;
	if (!p->next) {
		ma_wq_unlock(q, f, keep);
		return 0;
	}
	p->next = n->next;
	if (f->last == n)
		f->last = p;
	ma_wq_unlock(q, f, keep);
	return 1;
}

/* ---- waiting ---- */

/* The timer of a marcel thread's timed wait: the thread sees the flag and leaves. */
static void ma_wq_expire(struct ma_timer *t)
{
	struct ma_wq_node *n = ma_container_of(t, struct ma_wq_node, timer);
	atomic_store(&n->expired, 1);
	ma_wake_task(n->w.task);
}

/* Polls n's wake-up for up to MARCEL_SPIN rounds while the worker has nothing else to
 * run (see ma_fwait_u32_spin): 1 if it came. The thread is RUNNING meanwhile (it runs, and
 * the strategies count it so), then BLOCKING again with a sequentially consistent store
 * before the wait reads `done`, as ma_waiter_wait does after a spurious wake-up. */
static int ma_wq_spin(struct ma_wq_node *n)
{
	unsigned limit = ma_spin_limit();
	struct ma_worker *w;
	if (ma_likely(!limit) || !(w = ma_worker_self()) || ma_worker_has_work(w))
		return 0;
	struct marcel_task *self = n->w.task;
	atomic_store_explicit(&self->state, MA_TASK_RUNNING, memory_order_relaxed);
	ma_spin_notify(1);
	unsigned i = 0;
	while (i < limit && !atomic_load_explicit(&n->w.done, memory_order_acquire) &&
	       !(i % 16 == 15 && ma_worker_has_work(w))) {
		ma_cpu_relax();
		i++;
	}
	ma_spin_notify(0);
	if (atomic_load_explicit(&n->w.done, memory_order_acquire))
		return 1;
	atomic_store(&self->state, MA_TASK_BLOCKING);
	return 0;
}

/* ma_wq_wait for a kernel thread that is not a marcel thread: the kernel's futex on
 * `done`, which has its own deadline. */
static int ma_wq_wait_foreign(_Atomic uint64_t *q, struct ma_wq_node *n, uint64_t deadline)
{
	if (deadline == MA_NO_DEADLINE || ma_waiter_wait_foreign_until(&n->w, deadline) == 0) {
		ma_waiter_wait(&n->w);
		return 0;
	}
	if (ma_wq_remove(q, n))
		return ETIMEDOUT;
	ma_waiter_wait(&n->w);
	return 0;
}

int ma_wq_leave(_Atomic uint64_t *q, struct ma_wq_node *n, int e)
{
	if (ma_wq_remove(q, n)) {
		atomic_store_explicit(&n->w.task->state, MA_TASK_RUNNING, memory_order_relaxed);
		return e;
	}
	/* A waker took the node first: its wake-up is on its way, and wins. */
	ma_waiter_wait(&n->w);
	return 0;
}

int ma_wq_wait_slow(_Atomic uint64_t *q, struct ma_wq_node *n, uint64_t deadline, int point)
{
	if (!n->w.task)
		return ma_wq_wait_foreign(q, n, deadline);
	if (ma_wq_spin(n))
		return 0;
	int e;
	if (deadline == MA_NO_DEADLINE) {
		e = point ? ma_waiter_block(&n->w, NULL, 1) : ma_waiter_block(&n->w, NULL, 0);
	} else if (ma_clock_ns() >= deadline) {
		e = ETIMEDOUT;
	} else {
		ma_timer_arm(ma_worker_self(), &n->timer, deadline, ma_wq_expire);
		e = point ? ma_waiter_block(&n->w, &n->expired, 1) : ma_waiter_block(&n->w, &n->expired, 0);
		/* Once disarmed, its callback is not running and will not run. */
		ma_timer_cancel(&n->timer);
	}
	return e ? ma_wq_leave(q, n, e) : 0;
}
