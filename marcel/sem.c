/*
 * Semaphores: the count, and the number of threads blocked or about to block. P takes a
 * unit with a CAS; with none left it blocks on the count's address while the count is
 * still 0. V adds a unit and wakes one waiter if any was announced. Both sides use
 * sequentially consistent operations on the two words, so either V sees the waiter or
 * the waiter's under-lock check sees the new unit.
 */
#include "ma_sync.h"

static inline atomic_int *ma_sval(marcel_sem_t *s)
{
	return (atomic_int *)&s->__value;
}

static inline atomic_uint *ma_swaiters(marcel_sem_t *s)
{
	return (atomic_uint *)&s->__waiters;
}

static int ma_sem_trytake(marcel_sem_t *s)
{
	int v = atomic_load_explicit(ma_sval(s), memory_order_relaxed);
	while (v > 0)
		if (atomic_compare_exchange_weak_explicit(ma_sval(s), &v, v - 1, memory_order_acquire,
							  memory_order_relaxed))
			return 1;
	return 0;
}

/* point: at a cancellation point (sem_wait, sem_timedwait; not Marcel's P): a request
 * acts on entry, or while it waits, without taking a unit. call: the public function,
 * named if it is refused (EPERM: a wait no thread could end, ma_after_failed_init). */
static inline __attribute__((always_inline)) int ma_sem_take_in(marcel_sem_t *s, uint64_t deadline, int point,
								 const char *call)
{
	if (point)
		ma_cancel_point(ma_task_self());
	if (ma_likely(ma_sem_trytake(s)))
		return 0;
	if (deadline == MA_NO_DEADLINE && ma_after_failed_init())
		return ma_not_running(call, EPERM);
	for (;;) {
		atomic_fetch_add(ma_swaiters(s), 1);
		int e = ma_fwait_u32_spin(ma_sval(s), 0, deadline, point);
		atomic_fetch_sub(ma_swaiters(s), 1);
		if (point && ma_unlikely(e == ECANCELED))
			ma_cancel_act(ma_task_self());
		if (ma_sem_trytake(s))
			return 0;
		if (e == ETIMEDOUT)
			return ETIMEDOUT;
	}
}

static int ma_sem_take(marcel_sem_t *s, uint64_t deadline, const char *call)
{
	return ma_sem_take_in(s, deadline, 0, call);
}

static int ma_sem_take_point(marcel_sem_t *s, uint64_t deadline, const char *call)
{
	return ma_sem_take_in(s, deadline, 1, call);
}

static int ma_sem_give(marcel_sem_t *s)
{
	int v = atomic_load_explicit(ma_sval(s), memory_order_relaxed);
	do {
		if (v == MARCEL_SEM_VALUE_MAX)
			return EOVERFLOW;
	} while (!atomic_compare_exchange_weak(ma_sval(s), &v, v + 1));
	if (atomic_load(ma_swaiters(s)))
		ma_fwake(ma_sval(s), 1);
	return 0;
}

int marcel_sem_init(marcel_sem_t *s, int initial)
{
	if (!s || initial < 0)
		return EINVAL;
	s->__value = initial;
	s->__waiters = 0;
	return 0;
}

int marcel_sem_destroy(marcel_sem_t *s)
{
	if (!s)
		return EINVAL;
	return ma_wait_leavers(ma_swaiters(s), ma_sval(s));
}

void marcel_sem_P(marcel_sem_t *s)
{
	/* Marcel's P returns nothing: errno is all it can tell. */
	if (ma_unlikely(ma_sem_take(s, MA_NO_DEADLINE, "marcel_sem_P")))
		errno = EPERM;
}

void marcel_sem_V(marcel_sem_t *s)
{
	ma_sem_give(s);
}

int marcel_sem_try_P(marcel_sem_t *s)
{
	return s && ma_sem_trytake(s);
}

int marcel_sem_timed_P(marcel_sem_t *s, unsigned long timeout_ms)
{
	if (!s) {
		errno = EINVAL;
		return 0;
	}
	uint64_t ns = timeout_ms > UINT64_MAX / 1000000 ? UINT64_MAX / 1000000 : (uint64_t)timeout_ms * 1000000;
	if (ma_sem_take(s, ma_deadline_in(ns), "marcel_sem_timed_P")) {
		errno = ETIMEDOUT;
		return 0;
	}
	return 1;
}

static int ma_fail(int e)
{
	errno = e;
	return -1;
}

int marcel_sem_posix_init(marcel_sem_t *s, int pshared, unsigned value)
{
	if (!s || value > MARCEL_SEM_VALUE_MAX)
		return ma_fail(EINVAL);
	if (pshared)
		return ma_fail(ENOTSUP);
	marcel_sem_init(s, (int)value);
	return 0;
}

int marcel_sem_wait(marcel_sem_t *s)
{
	if (!s)
		return ma_fail(EINVAL);
	int e = ma_sem_take_point(s, MA_NO_DEADLINE, "marcel_sem_wait");
	return e ? ma_fail(e) : 0;
}

int marcel_sem_trywait(marcel_sem_t *s)
{
	if (!s)
		return ma_fail(EINVAL);
	return ma_sem_trytake(s) ? 0 : ma_fail(EAGAIN);
}

int marcel_sem_timedwait(marcel_sem_t *s, const struct timespec *abstime)
{
	if (!s)
		return ma_fail(EINVAL);
	ma_cancel_point(ma_task_self());
	if (ma_sem_trytake(s))
		return 0;
	uint64_t deadline;
	if (ma_deadline_from_abs(CLOCK_REALTIME, abstime, &deadline))
		return ma_fail(EINVAL);
	return ma_sem_take_point(s, deadline, "marcel_sem_timedwait") ? ma_fail(ETIMEDOUT) : 0;
}

int marcel_sem_post(marcel_sem_t *s)
{
	if (!s)
		return ma_fail(EINVAL);
	int e = ma_sem_give(s);
	return e ? ma_fail(e) : 0;
}

int marcel_sem_getvalue(marcel_sem_t *s, int *value)
{
	if (!s || !value)
		return ma_fail(EINVAL);
	*value = atomic_load(ma_sval(s));
	return 0;
}
