/*
 * Wait queues held in the object itself (waitq.c): one 64-bit word per condition or
 * semaphore, instead of a bucket of the address-keyed futex (futex.c) with its hash,
 * its lock and its list walk.
 *
 * The word is 0 when nobody waits; else it points to the oldest waiter's node (on that
 * waiter's stack, 16-byte aligned), and its low bits say:
 *   MA_WQ_MANY   more nodes follow the first, linked through `next`; the first one's
 *                `last` is the newest;
 *   MA_WQ_LOCK   someone is changing that list: everybody else waits for the bit to
 *                clear (a few instructions: nobody is preempted inside the library);
 *   MA_WQ_COUNT  (semaphores) not a queue but a count of units, in the bits above the
 *                four low ones;
 *   MA_WQ_HELD   (mutexes) the object's own state, carried along by the queue's
 *                operations: queuing and leaving keep it, taking a waiter out clears it
 *                (the unlock that wakes a waiter frees the mutex in the same operation).
 * So a lone waiter queues itself with one compare-and-swap from 0, and its waker takes it
 * out with one compare-and-swap back to 0: no lock. Only a second waiter, or a waiter
 * taking itself out of a list, sets MA_WQ_LOCK.
 *
 * Whoever takes a node out of the word owns its wake-up (ma_waiter_wake, the last touch
 * of the node). Woken waiters never read the object again, so an object may be destroyed
 * as soon as its queue is empty; a waker's last touch of the object is the operation
 * that takes the node out. A waiter whose deadline passed or that is canceled takes its
 * own node out (ma_wq_remove); if a waker took it first, that wake-up stands.
 */
#ifndef MA_WAITQ_H
#define MA_WAITQ_H

#include "ma_sync.h"
#include "ma_signal.h"

#define MA_WQ_LOCK ((uint64_t)1)
#define MA_WQ_MANY ((uint64_t)2)
#define MA_WQ_COUNT ((uint64_t)4)
#define MA_WQ_HELD ((uint64_t)8)
#define MA_WQ_BITS ((uint64_t)15)

struct ma_wq_node {
	struct ma_waiter w;               /* set by the waker that took the node out */
	struct ma_wq_node *next;          /* the next waiter (under MA_WQ_LOCK) */
	struct ma_wq_node *last;          /* the first node's: the newest (under MA_WQ_LOCK) */
	/* Its deadline passed: set by its timer, which then wakes the thread; the thread
	 * takes its node out itself. */
	atomic_int expired;
	struct ma_timer timer;
} __attribute__((aligned(16)));

static inline struct ma_wq_node *ma_wq_first(uint64_t word)
{
	return (struct ma_wq_node *)(uintptr_t)(word & ~MA_WQ_BITS);
}

/* Whether word holds waiters (not a count, not just flags). */
static inline int ma_wq_queued(uint64_t word)
{
	return (word & ~MA_WQ_BITS) && !(word & MA_WQ_COUNT);
}

/* Arms n for self (the caller's descriptor, NULL for a kernel thread that is not a
 * marcel thread). As ma_waiter_init, its publication (ma_wq_push's compare-and-swap)
 * orders these stores for the waker. */
static inline void ma_wq_node_init(struct ma_wq_node *n, struct marcel_task *self)
{
	n->w.task = self;
	atomic_init(&n->w.done, 0);
	n->next = NULL;
	atomic_init(&n->expired, 0);
	if (self)
		atomic_store_explicit(&self->state, MA_TASK_BLOCKING, memory_order_relaxed);
}

/* The out-of-line halves, for a word seen locked or holding a list (waitq.c). */
int ma_wq_push_slow(_Atomic uint64_t *q, uint64_t *seen, struct ma_wq_node *n, uint64_t need) MA_HIDDEN;
struct ma_wq_node *ma_wq_pop_slow(_Atomic uint64_t *q, uint64_t *seen) MA_HIDDEN;

/* Queues n behind the waiters of *q, a queue whose value was *seen (0 or MA_WQ_HELD: none),
 * provided the flags of need are set in it. 1 once queued; 0 if *q changed first, or
 * lacks need (*seen is then its new value). */
static inline int ma_wq_try_push_if(_Atomic uint64_t *q, uint64_t *seen, struct ma_wq_node *n, uint64_t need)
{
	if (ma_likely(!(*seen & ~MA_WQ_HELD)) && (*seen & need) == need)
		return atomic_compare_exchange_strong(q, seen, (uint64_t)(uintptr_t)n | *seen);
	return ma_wq_push_slow(q, seen, n, need);
}

static inline int ma_wq_try_push(_Atomic uint64_t *q, uint64_t *seen, struct ma_wq_node *n)
{
	return ma_wq_try_push_if(q, seen, n, 0);
}

/* Takes the oldest waiter out of *q, whose value *seen is a queue of at least one, and
 * clears MA_WQ_HELD. The node (its wake-up is the caller's to do), or NULL if *q changed
 * first (*seen is then its new value). */
static inline struct ma_wq_node *ma_wq_try_pop(_Atomic uint64_t *q, uint64_t *seen)
{
	if (ma_likely(!(*seen & (MA_WQ_LOCK | MA_WQ_MANY)))) {
		uint64_t first = *seen;
		return atomic_compare_exchange_strong(q, seen, 0) ? ma_wq_first(first) : NULL;
	}
	return ma_wq_pop_slow(q, seen);
}

/* Queues n on the queue *q (a condition's: no count). */
static inline void ma_wq_push(_Atomic uint64_t *q, struct ma_wq_node *n)
{
	uint64_t seen = atomic_load_explicit(q, memory_order_relaxed);
	while (!ma_wq_try_push(q, &seen, n))
		;
}

/* Takes the oldest waiter out of *q; NULL if none. */
static inline struct ma_wq_node *ma_wq_pop(_Atomic uint64_t *q)
{
	uint64_t seen = atomic_load(q);
	struct ma_wq_node *n = NULL;
	while (seen && !(n = ma_wq_try_pop(q, &seen)))
		;
	return n;
}

/* Takes every waiter out of *q: the oldest, the others linked through `next`. */
struct ma_wq_node *ma_wq_pop_all(_Atomic uint64_t *q) MA_HIDDEN;

/* Takes n, the caller's own node, out of *q: 1 if it did; 0 if a waker took it first
 * (its wake-up is then on its way: wait for it with ma_waiter_wait). */
int ma_wq_remove(_Atomic uint64_t *q, struct ma_wq_node *n) MA_HIDDEN;

/*
 * The blocking loop of a marcel thread's waiter (self = wt->task, not NULL) at a
 * cancellation point (point) or with a deadline (expired: the flag its timer sets, or
 * NULL): 0 once woken; ECANCELED or ETIMEDOUT, with the thread RUNNING, if a request or
 * the deadline came first. As ma_waiter_wait otherwise. Whoever sets the request or the
 * flag then wakes the thread if it reads it BLOCKED (or BLOCKING): both sides are
 * sequentially consistent, so either the thread sees the reason before it sleeps or its
 * waker sees it asleep (cancel.c).
 */
static inline __attribute__((always_inline)) int ma_waiter_block(struct ma_waiter *wt, atomic_int *expired, int point)
{
	struct marcel_task *self = wt->task;
	if (point)
		/* Relaxed: the CAS to BLOCKED below publishes it to marcel_cancel. */
		atomic_store_explicit(&self->at_point, 1, memory_order_relaxed);
	int e = 0;
	while (!atomic_load_explicit(&wt->done, memory_order_acquire)) {
		int s = MA_TASK_BLOCKING;
		if (atomic_compare_exchange_strong(&self->state, &s, MA_TASK_BLOCKED)) {
			int why = point && ma_unlikely(ma_cancel_due(self)) ? ECANCELED
				  : expired && ma_unlikely(atomic_load(expired)) ? ETIMEDOUT : 0;
			if (why) {
				s = MA_TASK_BLOCKED;
				if (atomic_compare_exchange_strong(&self->state, &s, MA_TASK_RUNNING)) {
					e = why;
					break;
				}
				/* Someone saw BLOCKED and is waking us: that wake-up waits for our
				 * switch out (wake_pending), which requeues us at once. */
			}
			if (ma_unlikely(ma_sig_due(self)) && ma_sig_unblock(self))
				continue;
			self->post = MA_POST_BLOCK;
			ma_schedule_blocked(ma_worker_self(), self);
			continue;
		}
		/* A waker cancelled the block, or we were woken and run again. */
		if (atomic_load_explicit(&wt->done, memory_order_acquire))
			break;
		if (point && ma_cancel_due(self)) {
			e = ECANCELED;
			break;
		}
		if (expired && atomic_load(expired)) {
			e = ETIMEDOUT;
			break;
		}
		ma_sig_check(self);
		atomic_store(&self->state, MA_TASK_BLOCKING);
	}
	if (point)
		atomic_store_explicit(&self->at_point, 0, memory_order_relaxed);
	atomic_store_explicit(&self->state, MA_TASK_RUNNING, memory_order_relaxed);
	return e;
}

/* The caller's wait on n ended for reason e (ECANCELED, ETIMEDOUT) rather than a
 * wake-up: takes n out of *q and returns e; or, if a waker took it first, waits for that
 * wake-up and returns 0. */
int ma_wq_leave(_Atomic uint64_t *q, struct ma_wq_node *n, int e) MA_HIDDEN;
/* ma_wq_wait's other cases: a kernel thread, a deadline, spinning first. */
int ma_wq_wait_slow(_Atomic uint64_t *q, struct ma_wq_node *n, uint64_t deadline, int point) MA_HIDDEN;

/* Waits for the wake-up of n, queued on *q by the caller: spins first if that can pay off
 * (MARCEL_SPIN, see ma_fwait_u32_spin), then blocks. Returns 0 once woken; ETIMEDOUT
 * after deadline, or ECANCELED at a cancellation point (point) when a request came
 * first: n is then out of *q, and the caller acts on the request once it has undone the
 * rest of its wait (ma_cancel_act). Inline: a hand-off between threads of one VP is this
 * and the switch. */
static inline __attribute__((always_inline)) int ma_wq_wait(_Atomic uint64_t *q, struct ma_wq_node *n,
							      uint64_t deadline, int point)
{
	if (ma_likely(n->w.task != NULL && deadline == MA_NO_DEADLINE && !ma_spin_limit())) {
		int e = ma_waiter_block(&n->w, NULL, point);
		return ma_likely(!e) ? 0 : ma_wq_leave(q, n, e);
	}
	return ma_wq_wait_slow(q, n, deadline, point);
}

#endif
