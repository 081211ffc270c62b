/*
 * Barriers: arrivals are counted under a small lock; the last one of a round starts the
 * next round by bumping the generation and waking everyone the round queued. A waiter
 * links its wait node (ma_waitq.h) into the barrier's list under the lock, and the last
 * arrival takes the whole list under it: a thread of the next round, which must take the
 * lock to arrive, starts a new list, so the wake-up reaches this round exactly. Waiters
 * never touch the barrier again once woken (any thread may destroy it as soon as it
 * returns).
 */
#include <limits.h>
#include "ma_waitq.h"
#include "ma_hooks.h"

static inline ma_spinlock_t *ma_block(marcel_barrier_t *b)
{
	return (ma_spinlock_t *)&b->__lock;
}

static inline atomic_uint *ma_bgen(marcel_barrier_t *b)
{
	return (atomic_uint *)&b->__gen;
}

/* The round's waiters, newest first (under the lock). */
static inline struct ma_wq_node **ma_bq(marcel_barrier_t *b)
{
	return (struct ma_wq_node **)&b->__waiters;
}

int marcel_barrierattr_init(marcel_barrierattr_t *attr)
{
	if (!attr)
		return EINVAL;
	attr->__mode = MARCEL_BARRIER_SLEEP_MODE;
	attr->__pshared = MARCEL_PROCESS_PRIVATE;
	attr->__magic = MA_SYNC_ATTR_MAGIC;
	return 0;
}

int marcel_barrierattr_destroy(marcel_barrierattr_t *attr)
{
	if (!attr || attr->__magic != MA_SYNC_ATTR_MAGIC)
		return EINVAL;
	attr->__magic = 0;
	return 0;
}

int marcel_barrierattr_setmode(marcel_barrierattr_t *attr, int mode)
{
	if (!attr || attr->__magic != MA_SYNC_ATTR_MAGIC)
		return EINVAL;
	if (mode != MARCEL_BARRIER_SLEEP_MODE && mode != MARCEL_BARRIER_YIELD_MODE)
		return EINVAL;
	attr->__mode = mode;
	return 0;
}

int marcel_barrierattr_getmode(const marcel_barrierattr_t *attr, int *mode)
{
	if (!attr || attr->__magic != MA_SYNC_ATTR_MAGIC || !mode)
		return EINVAL;
	*mode = attr->__mode;
	return 0;
}

int marcel_barrierattr_setpshared(marcel_barrierattr_t *attr, int pshared)
{
	if (!attr || attr->__magic != MA_SYNC_ATTR_MAGIC)
		return EINVAL;
	return MA_CHECK_PSHARED(pshared);
}

int marcel_barrierattr_getpshared(const marcel_barrierattr_t *attr, int *pshared)
{
	if (!attr || attr->__magic != MA_SYNC_ATTR_MAGIC || !pshared)
		return EINVAL;
	*pshared = attr->__pshared;
	return 0;
}

int marcel_barrier_init(marcel_barrier_t *b, const marcel_barrierattr_t *attr, unsigned count)
{
	if (!b || !count || count > INT_MAX || (attr && attr->__magic != MA_SYNC_ATTR_MAGIC))
		return EINVAL;
	ma_spin_init(ma_block(b));
	b->__count = count;
	b->__arrived = 0;
	b->__gen = 0;
	b->__mode = attr ? attr->__mode : MARCEL_BARRIER_SLEEP_MODE;
	b->__pad = 0;
	b->__waiters = 0;
	return 0;
}

int marcel_barrier_destroy(marcel_barrier_t *b)
{
	if (!b)
		return EINVAL;
	ma_spin_lock(ma_block(b));
	int busy = b->__arrived != 0;
	ma_spin_unlock(ma_block(b));
	return busy ? EBUSY : 0;
}

int marcel_barrier_wait(marcel_barrier_t *b)
{
	if (!b)
		return EINVAL;
	ma_spin_lock(ma_block(b));
	unsigned gen = b->__gen;
	if (++b->__arrived >= b->__count) {
		b->__arrived = 0;
		atomic_store(ma_bgen(b), gen + 1);
		struct ma_wq_node *n = *ma_bq(b);
		*ma_bq(b) = NULL;
		ma_spin_unlock(ma_block(b));
		while (n) {
			struct ma_wq_node *next = n->next; /* read before the wake: n may vanish after it */
			ma_waiter_wake(&n->w);
			n = next;
		}
		ma_hook_hw_iteration(b);
		return MARCEL_BARRIER_SERIAL_THREAD;
	}
	if (ma_after_failed_init()) {
		/* Nobody saw the arrival: the lock is still held. */
		b->__arrived--;
		ma_spin_unlock(ma_block(b));
		return ma_not_running("marcel_barrier_wait", EPERM);
	}
	if (b->__mode == MARCEL_BARRIER_YIELD_MODE) {
		ma_spin_unlock(ma_block(b));
		while (atomic_load_explicit(ma_bgen(b), memory_order_acquire) == gen)
			ma_poll_yield();
		return 0;
	}
	struct ma_wq_node n;
	ma_wq_node_init(&n, ma_task_self());
	n.next = *ma_bq(b);
	*ma_bq(b) = &n;
	/* The lock's release publishes the node (ma_waiter_init's rule: the last arrival
	 * finds it under the same lock). */
	ma_spin_unlock(ma_block(b));
	/* No deadline, not a cancellation point: this ends with the last arrival's wake-up
	 * (the node is in no queue that ma_wq_wait would take it out of). */
	ma_wq_wait(NULL, &n, MA_NO_DEADLINE, 0);
	return 0;
}

int marcel_barrier_setcount(marcel_barrier_t *b, unsigned count)
{
	if (!b || !count || count > INT_MAX)
		return EINVAL;
	ma_spin_lock(ma_block(b));
	int e = 0;
	if (count <= b->__arrived)
		e = EINVAL;
	else
		b->__count = count;
	ma_spin_unlock(ma_block(b));
	return e;
}

int marcel_barrier_addcount(marcel_barrier_t *b, int delta)
{
	if (!b)
		return EINVAL;
	ma_spin_lock(ma_block(b));
	long count = (long)b->__count + delta;
	int e = 0;
	if (count <= 0 || count > INT_MAX || (unsigned long)count <= b->__arrived)
		e = EINVAL;
	else
		b->__count = (unsigned)count;
	ma_spin_unlock(ma_block(b));
	return e;
}

int marcel_barrier_getcount(const marcel_barrier_t *b, unsigned *count)
{
	if (!b || !count)
		return EINVAL;
	*count = ma_read_once(&b->__count);
	return 0;
}
