/*
 * Condition variables: a sequence number bumped by every signal, and the waiters queued
 * on its address. A waiter reads the number while it still holds the mutex and blocks
 * only if it has not moved, so a signal between the unlock and the block is never lost.
 * Signals may wake a later waiter than the oldest (POSIX allows it) and broadcast wakes
 * every waiter, which then compete for the mutex.
 */
#include "ma_sync.h"

static inline atomic_uint *ma_cseq(marcel_cond_t *c)
{
	return (atomic_uint *)&c->__seq;
}

static inline atomic_uint *ma_cwaiters(marcel_cond_t *c)
{
	return (atomic_uint *)&c->__waiters;
}

int marcel_condattr_init(marcel_condattr_t *attr)
{
	if (!attr)
		return EINVAL;
	attr->__clock = CLOCK_REALTIME;
	attr->__pshared = MARCEL_PROCESS_PRIVATE;
	attr->__magic = MA_SYNC_ATTR_MAGIC;
	return 0;
}

int marcel_condattr_destroy(marcel_condattr_t *attr)
{
	if (!attr || attr->__magic != MA_SYNC_ATTR_MAGIC)
		return EINVAL;
	attr->__magic = 0;
	return 0;
}

int marcel_condattr_setclock(marcel_condattr_t *attr, clockid_t clock)
{
	if (!attr || attr->__magic != MA_SYNC_ATTR_MAGIC)
		return EINVAL;
	if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
		return EINVAL;
	attr->__clock = (int)clock;
	return 0;
}

int marcel_condattr_getclock(const marcel_condattr_t *attr, clockid_t *clock)
{
	if (!attr || attr->__magic != MA_SYNC_ATTR_MAGIC || !clock)
		return EINVAL;
	*clock = (clockid_t)attr->__clock;
	return 0;
}

int marcel_condattr_setpshared(marcel_condattr_t *attr, int pshared)
{
	if (!attr || attr->__magic != MA_SYNC_ATTR_MAGIC)
		return EINVAL;
	return MA_CHECK_PSHARED(pshared);
}

int marcel_condattr_getpshared(const marcel_condattr_t *attr, int *pshared)
{
	if (!attr || attr->__magic != MA_SYNC_ATTR_MAGIC || !pshared)
		return EINVAL;
	*pshared = attr->__pshared;
	return 0;
}

int marcel_cond_init(marcel_cond_t *c, const marcel_condattr_t *attr)
{
	if (!c || (attr && attr->__magic != MA_SYNC_ATTR_MAGIC))
		return EINVAL;
	c->__seq = 0;
	c->__waiters = 0;
	c->__clock = attr ? attr->__clock : CLOCK_REALTIME;
	c->__pad = 0;
	return 0;
}

int marcel_cond_destroy(marcel_cond_t *c)
{
	if (!c)
		return EINVAL;
	return ma_wait_leavers(ma_cwaiters(c), ma_cseq(c));
}

/* A cancellation point (cancel.c): a request pending on entry acts with the mutex held;
 * one that comes while it waits takes it off the queue, then takes the mutex back before
 * acting, so the cleanup handlers run with the mutex held (POSIX). */
static int ma_cond_wait(marcel_cond_t *c, marcel_mutex_t *m, uint64_t deadline)
{
	if (ma_read_once(&m->__owner) != ma_owner_self())
		return EPERM;
	if (deadline == MA_NO_DEADLINE && ma_after_failed_init())
		return ma_not_running("marcel_cond_wait", EPERM);
	struct marcel_task *self = ma_task_self();
	ma_cancel_point(self);
	atomic_fetch_add(ma_cwaiters(c), 1);
	unsigned seq = atomic_load(ma_cseq(c));
	unsigned depth = ma_mutex_release_all(m);
	int e = ma_fwait_u32_spin(ma_cseq(c), seq, deadline, 1);
	atomic_fetch_sub(ma_cwaiters(c), 1);
	ma_mutex_reacquire(m, depth);
	if (ma_unlikely(e == ECANCELED))
		ma_cancel_act(self);
	return e == ETIMEDOUT ? ETIMEDOUT : 0;
}

int marcel_cond_wait(marcel_cond_t *c, marcel_mutex_t *m)
{
	if (!c || !m)
		return EINVAL;
	return ma_cond_wait(c, m, MA_NO_DEADLINE);
}

int marcel_cond_timedwait(marcel_cond_t *c, marcel_mutex_t *m, const struct timespec *abstime)
{
	uint64_t deadline;
	if (!c || !m || ma_deadline_from_abs((clockid_t)c->__clock, abstime, &deadline))
		return EINVAL;
	return ma_cond_wait(c, m, deadline);
}

static int ma_cond_wake(marcel_cond_t *c, unsigned n)
{
	if (!c)
		return EINVAL;
	atomic_fetch_add(ma_cseq(c), 1);
	if (atomic_load(ma_cwaiters(c)))
		ma_fwake(ma_cseq(c), n);
	return 0;
}

int marcel_cond_signal(marcel_cond_t *c)
{
	return ma_cond_wake(c, 1);
}

int marcel_cond_broadcast(marcel_cond_t *c)
{
	return ma_cond_wake(c, ~0u);
}
