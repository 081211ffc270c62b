/*
 * Mutexes: one word, a wait queue of ma_waitq.h that carries MA_WQ_HELD while the mutex
 * is held (0: free and nobody waits), so the uncontended lock and unlock are one
 * compare-and-swap each, a lone blocked waiter is one more on each side, and no waiter
 * goes through the futex buckets. An unlock that finds waiters takes the oldest out and
 * frees the mutex in one operation; the waiter it wakes then competes for it (a running
 * thread may take it first: no convoy behind a waiter that has yet to run). The owner is
 * recorded for every kind: it costs one store and lets every kind report relocking and
 * foreign unlocks instead of hanging or corrupting.
 */
#include <stdint.h>
#include "ma_waitq.h"

_Static_assert(MA_MUTEX_HELD == MA_WQ_HELD, "a mutex's word is a wait queue carrying MA_WQ_HELD");

static inline void *ma_mowner(const marcel_mutex_t *m)
{
	return ma_read_once(&m->__owner);
}

/* ---- attributes ---- */

int marcel_mutexattr_init(marcel_mutexattr_t *attr)
{
	if (!attr)
		return EINVAL;
	attr->__kind = MARCEL_MUTEX_DEFAULT;
	attr->__pshared = MARCEL_PROCESS_PRIVATE;
	attr->__magic = MA_SYNC_ATTR_MAGIC;
	return 0;
}

int marcel_mutexattr_destroy(marcel_mutexattr_t *attr)
{
	if (!attr || attr->__magic != MA_SYNC_ATTR_MAGIC)
		return EINVAL;
	attr->__magic = 0;
	return 0;
}

int marcel_mutexattr_settype(marcel_mutexattr_t *attr, int kind)
{
	if (!attr || attr->__magic != MA_SYNC_ATTR_MAGIC)
		return EINVAL;
	if (kind != MARCEL_MUTEX_NORMAL && kind != MARCEL_MUTEX_RECURSIVE && kind != MARCEL_MUTEX_ERRORCHECK)
		return EINVAL;
	attr->__kind = kind;
	return 0;
}

int marcel_mutexattr_gettype(const marcel_mutexattr_t *attr, int *kind)
{
	if (!attr || attr->__magic != MA_SYNC_ATTR_MAGIC || !kind)
		return EINVAL;
	*kind = attr->__kind;
	return 0;
}

int marcel_mutexattr_setpshared(marcel_mutexattr_t *attr, int pshared)
{
	if (!attr || attr->__magic != MA_SYNC_ATTR_MAGIC)
		return EINVAL;
	return MA_CHECK_PSHARED(pshared);
}

int marcel_mutexattr_getpshared(const marcel_mutexattr_t *attr, int *pshared)
{
	if (!attr || attr->__magic != MA_SYNC_ATTR_MAGIC || !pshared)
		return EINVAL;
	*pshared = attr->__pshared;
	return 0;
}

/* ---- mutexes ---- */

int marcel_mutex_init(marcel_mutex_t *m, const marcel_mutexattr_t *attr)
{
	if (!m || (attr && attr->__magic != MA_SYNC_ATTR_MAGIC))
		return EINVAL;
	m->__state = 0;
	m->__kind = (unsigned short)(attr ? attr->__kind : MARCEL_MUTEX_DEFAULT);
	m->__owner = NULL;
	m->__count = 0;
	m->__spins = 0;
	return 0;
}

int marcel_mutex_destroy(marcel_mutex_t *m)
{
	if (!m)
		return EINVAL;
	/* Held, or waited for by a thread woken to take it. */
	if (atomic_load(ma_mword(m)))
		return EBUSY;
	return 0;
}

int ma_mutex_trytake_queued(marcel_mutex_t *m, uint64_t w)
{
	unsigned rounds = 0;
	for (;;) {
		if (w & MA_MUTEX_HELD)
			return 0;
		if (w & MA_WQ_LOCK) {
			/* A waiter is changing the queue: a few instructions. */
			ma_spin_backoff(&rounds);
			w = atomic_load_explicit(ma_mword(m), memory_order_relaxed);
			continue;
		}
		if (atomic_compare_exchange_weak_explicit(ma_mword(m), &w, w | MA_MUTEX_HELD, memory_order_acquire,
							  memory_order_relaxed))
			return 1;
	}
}

void ma_mutex_release_queued(marcel_mutex_t *m, uint64_t w)
{
	for (;;) {
		if (!ma_wq_queued(w)) {
			if (atomic_compare_exchange_weak_explicit(ma_mword(m), &w, 0, memory_order_release,
								  memory_order_relaxed))
				return;
			continue;
		}
		struct ma_wq_node *n = ma_wq_try_pop(ma_mword(m), &w);
		if (n) {
			ma_waiter_wake(&n->w);
			return;
		}
	}
}

/* Polls a held mutex for a while if its owner is running elsewhere: a critical section
 * usually ends sooner than a block and wake-up would. The estimate adapts to how long
 * acquisitions took before (as glibc's adaptive mutexes do). */
static int ma_mutex_spin(marcel_mutex_t *m)
{
	unsigned limit = ma_spin_limit();
	if (!limit)
		return 0;
	unsigned estimate = ma_read_once(&m->__spins);
	unsigned max = estimate * 2 + 10;
	if (max > limit)
		max = limit;
	ma_spin_notify(1);
	int got = 0;
	unsigned i;
	for (i = 0; i < max; i++) {
		uint64_t s = atomic_load_explicit(ma_mword(m), memory_order_relaxed);
		if (!(s & (MA_MUTEX_HELD | MA_WQ_LOCK))) {
			if (atomic_compare_exchange_weak_explicit(ma_mword(m), &s, s | MA_MUTEX_HELD,
								  memory_order_acquire, memory_order_relaxed)) {
				got = 1;
				break;
			}
		} else if (ma_wq_queued(s) || !ma_owner_running(ma_mowner(m))) {
			break; /* others already sleep, or the owner is not running: block */
		}
		ma_cpu_relax();
	}
	ma_spin_notify(0);
	int next = (int)estimate + ((int)i - (int)estimate) / 8;
	ma_write_once(&m->__spins, (unsigned short)(next > UINT16_MAX ? UINT16_MAX : next));
	return got;
}

int ma_mutex_acquire_slow(marcel_mutex_t *m, void *self, uint64_t deadline)
{
	if (ma_mutex_spin(m))
		goto owned;
	struct marcel_task *task = ma_task_self();
	uint64_t w = atomic_load(ma_mword(m));
	for (;;) {
		if (!(w & MA_MUTEX_HELD)) {
			if (ma_mutex_trytake_queued(m, w))
				goto owned;
			w = atomic_load(ma_mword(m));
			continue;
		}
		struct ma_wq_node n;
		ma_wq_node_init(&n, task);
		/* Queued only while it is held: its unlock then finds us. */
		if (!ma_wq_try_push_if(ma_mword(m), &w, &n, MA_MUTEX_HELD)) {
			if (task)
				atomic_store_explicit(&task->state, MA_TASK_RUNNING, memory_order_relaxed);
			continue;
		}
		/* Woken: the unlock freed it for us to compete for. */
		if (ma_wq_wait(ma_mword(m), &n, deadline, 0) == ETIMEDOUT)
			return ETIMEDOUT;
		w = atomic_load(ma_mword(m));
	}
owned:
	ma_write_once(&m->__owner, self);
	m->__count = 1;
	return 0;
}

static inline int ma_mutex_acquire(marcel_mutex_t *m, void *self, uint64_t deadline)
{
	if (ma_unlikely(!ma_mutex_trytake(m)))
		return ma_mutex_acquire_slow(m, self, deadline);
	ma_write_once(&m->__owner, self);
	m->__count = 1;
	return 0;
}

static int ma_mutex_lock(marcel_mutex_t *m, uint64_t deadline)
{
	void *self = ma_owner_self();
	if (ma_unlikely(ma_mowner(m) == self)) {
		if (m->__kind != MARCEL_MUTEX_RECURSIVE)
			return EDEADLK;
		if (m->__count == UINT32_MAX)
			return EAGAIN;
		m->__count++;
		return 0;
	}
	return ma_mutex_acquire(m, self, deadline);
}

int marcel_mutex_lock(marcel_mutex_t *m)
{
	if (ma_unlikely(!m))
		return EINVAL;
	return ma_mutex_lock(m, MA_NO_DEADLINE);
}

int marcel_mutex_timedlock(marcel_mutex_t *m, const struct timespec *abstime)
{
	uint64_t deadline;
	if (!m || ma_deadline_from_abs(CLOCK_REALTIME, abstime, &deadline))
		return EINVAL;
	return ma_mutex_lock(m, deadline);
}

int marcel_mutex_trylock(marcel_mutex_t *m)
{
	if (ma_unlikely(!m))
		return EINVAL;
	void *self = ma_owner_self();
	if (ma_mowner(m) == self) {
		if (m->__kind != MARCEL_MUTEX_RECURSIVE)
			return EBUSY;
		if (m->__count == UINT32_MAX)
			return EAGAIN;
		m->__count++;
		return 0;
	}
	if (!ma_mutex_trytake(m))
		return EBUSY;
	ma_write_once(&m->__owner, self);
	m->__count = 1;
	return 0;
}

int marcel_mutex_unlock(marcel_mutex_t *m)
{
	if (ma_unlikely(!m))
		return EINVAL;
	if (ma_unlikely(ma_mowner(m) != ma_owner_self()))
		return EPERM;
	if (--m->__count)
		return 0;
	ma_mutex_release(m);
	return 0;
}


/* ---- Marcel's recursive mutexes ---- */

int marcel_recursivemutexattr_init(marcel_recursivemutexattr_t *attr)
{
	int e = marcel_mutexattr_init(attr);
	if (!e)
		attr->__kind = MARCEL_MUTEX_RECURSIVE;
	return e;
}

int marcel_recursivemutexattr_destroy(marcel_recursivemutexattr_t *attr)
{
	return marcel_mutexattr_destroy(attr);
}

int marcel_recursivemutex_init(marcel_recursivemutex_t *m, const marcel_recursivemutexattr_t *attr)
{
	int e = marcel_mutex_init(m, attr);
	if (!e)
		m->__kind = MARCEL_MUTEX_RECURSIVE;
	return e;
}

int marcel_recursivemutex_destroy(marcel_recursivemutex_t *m)
{
	return marcel_mutex_destroy(m);
}

int marcel_recursivemutex_lock(marcel_recursivemutex_t *m)
{
	int e = marcel_mutex_lock(m);
	return e ? -e : (int)m->__count;
}

int marcel_recursivemutex_trylock(marcel_recursivemutex_t *m)
{
	int e = marcel_mutex_trylock(m);
	if (e == EBUSY)
		return 0;
	return e ? -e : (int)m->__count;
}

int marcel_recursivemutex_unlock(marcel_recursivemutex_t *m)
{
	if (!m)
		return -EINVAL;
	if (ma_mowner(m) != ma_owner_self())
		return -EPERM;
	unsigned left = m->__count - 1;
	int e = marcel_mutex_unlock(m);
	return e ? -e : (int)left;
}
