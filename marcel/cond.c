/*
 * Condition variables: the waiters queue in the condition's own word (ma_waitq.h). A
 * waiter queues itself while it still holds the mutex, then releases it and blocks, so a
 * signal from a thread that takes the mutex after the release always finds it. A signal
 * takes the oldest waiter out and wakes it -- on the signaller's VP that puts it in the
 * VP's runnext slot, no queue lock on either side -- and broadcast takes them all; the
 * woken threads then compete for the mutex.
 */
#include "ma_waitq.h"

static inline _Atomic uint64_t *ma_cq(marcel_cond_t *c)
{
	return (_Atomic uint64_t *)&c->__waiters;
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
	c->__waiters = 0;
	c->__clock = attr ? attr->__clock : CLOCK_REALTIME;
	c->__pad = 0;
	return 0;
}

int marcel_cond_destroy(marcel_cond_t *c)
{
	if (!c)
		return EINVAL;
	/* Woken waiters never read c again (ma_waitq.h): only the queue matters. */
	return atomic_load(ma_cq(c)) ? EBUSY : 0;
}

/* A cancellation point (cancel.c): a request pending on entry acts with the mutex held;
 * one that comes while it waits takes it off the queue, then takes the mutex back before
 * acting, so the cleanup handlers run with the mutex held (POSIX). Inline in both entry
 * points: the untimed wait, half of every hand-off, loses its deadline tests. */
static inline __attribute__((always_inline)) int ma_cond_wait(marcel_cond_t *c, marcel_mutex_t *m,
							      uint64_t deadline)
{
	struct ma_worker *w = ma_worker_self();
	struct marcel_task *self = ma_likely(w != NULL) ? ma_worker_current(w) : NULL;
	void *owner = self ? (void *)self : ma_owner_foreign();
	if (ma_read_once(&m->__owner) != owner)
		return EPERM;
	if (deadline == MA_NO_DEADLINE && ma_after_failed_init())
		return ma_not_running("marcel_cond_wait", EPERM);
	ma_cancel_point(self);
	struct ma_wq_node n;
	ma_wq_node_init(&n, self);
	ma_wq_push(ma_cq(c), &n);
	unsigned depth = ma_mutex_release_all(m);
	int e = ma_wq_wait(ma_cq(c), &n, deadline, 1);
	ma_mutex_reacquire(m, owner, depth);
	if (ma_unlikely(e == ECANCELED))
		ma_cancel_act(self);
	return e;
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

int marcel_cond_signal(marcel_cond_t *c)
{
	if (ma_unlikely(!c))
		return EINVAL;
	struct ma_wq_node *n = ma_wq_pop(ma_cq(c));
	if (n)
		ma_waiter_wake(&n->w);
	return 0;
}

int marcel_cond_broadcast(marcel_cond_t *c)
{
	if (ma_unlikely(!c))
		return EINVAL;
	struct ma_wq_node *n = ma_wq_pop_all(ma_cq(c));
	while (n) {
		struct ma_wq_node *next = n->next; /* read before the wake: n may vanish after it */
		ma_waiter_wake(&n->w);
		n = next;
	}
	return 0;
}
