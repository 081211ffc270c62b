/* Condition variables: a marcel condition in the first bytes of the pthread_cond_t (the
 * all-zero PTHREAD_COND_INITIALIZER is a valid marcel condition on CLOCK_REALTIME), the
 * attributes in one word. */
#include "ma_preload.h"
#include <string.h>

_Static_assert(sizeof(marcel_cond_t) <= sizeof(pthread_cond_t), "a marcel condition fits in pthread_cond_t");
_Static_assert(CLOCK_REALTIME == 0, "zero bytes are a condition on CLOCK_REALTIME");

#define MA_PL_CA_MAGIC 0x63700000u
#define MA_PL_CA_MAGIC_MASK 0xffff0000u
#define MA_PL_CA_CLOCK 0xffu

#define MA_PL_COND(c) ((marcel_cond_t *)(c))

static uint32_t *ma_pl_cattr(const pthread_condattr_t *a)
{
	return (uint32_t *)a;
}

static int ma_pl_cattr_ok(const pthread_condattr_t *a)
{
	return a && (*ma_pl_cattr(a) & MA_PL_CA_MAGIC_MASK) == MA_PL_CA_MAGIC;
}

MA_PRELOAD_API int pthread_condattr_init(pthread_condattr_t *a)
{
	if (!a)
		return EINVAL;
	memset(a, 0, sizeof(*a));
	*ma_pl_cattr(a) = MA_PL_CA_MAGIC | CLOCK_REALTIME;
	return 0;
}

MA_PRELOAD_API int pthread_condattr_destroy(pthread_condattr_t *a)
{
	if (!ma_pl_cattr_ok(a))
		return EINVAL;
	*ma_pl_cattr(a) = 0;
	return 0;
}

MA_PRELOAD_API int pthread_condattr_setclock(pthread_condattr_t *a, clockid_t clock)
{
	if (!ma_pl_cattr_ok(a) || (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC))
		return EINVAL;
	*ma_pl_cattr(a) = (*ma_pl_cattr(a) & ~MA_PL_CA_CLOCK) | (uint32_t)clock;
	return 0;
}

MA_PRELOAD_API int pthread_condattr_getclock(const pthread_condattr_t *a, clockid_t *clock)
{
	if (!ma_pl_cattr_ok(a) || !clock)
		return EINVAL;
	*clock = (clockid_t)(*ma_pl_cattr(a) & MA_PL_CA_CLOCK);
	return 0;
}

MA_PRELOAD_API int pthread_condattr_setpshared(pthread_condattr_t *a, int pshared)
{
	if (!ma_pl_cattr_ok(a))
		return EINVAL;
	return ma_pl_pshared(pshared, "pthread_condattr_setpshared(PTHREAD_PROCESS_SHARED)");
}

MA_PRELOAD_API int pthread_condattr_getpshared(const pthread_condattr_t *a, int *pshared)
{
	if (!ma_pl_cattr_ok(a) || !pshared)
		return EINVAL;
	*pshared = PTHREAD_PROCESS_PRIVATE;
	return 0;
}

MA_PRELOAD_API int pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *a)
{
	if (!c || (a && !ma_pl_cattr_ok(a)))
		return EINVAL;
	memset(c, 0, sizeof(*c));
	marcel_condattr_t ma;
	marcel_condattr_init(&ma);
	if (a)
		marcel_condattr_setclock(&ma, (clockid_t)(*ma_pl_cattr(a) & MA_PL_CA_CLOCK));
	int e = marcel_cond_init(MA_PL_COND(c), &ma);
	marcel_condattr_destroy(&ma);
	return e;
}

MA_PRELOAD_API int pthread_cond_destroy(pthread_cond_t *c)
{
	int e = c ? marcel_cond_destroy(MA_PL_COND(c)) : EINVAL;
	if (!e)
		memset(c, 0, sizeof(*c));
	return e;
}

MA_PRELOAD_API int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	if (!c || !m)
		return EINVAL;
	return marcel_cond_wait(MA_PL_COND(c), ma_pl_mutex(m));
}

MA_PRELOAD_API int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime)
{
	if (!c || !m)
		return EINVAL;
	return marcel_cond_timedwait(MA_PL_COND(c), ma_pl_mutex(m), abstime);
}

/* What std::condition_variable::wait_for and wait_until use (on CLOCK_MONOTONIC): the
 * deadline is carried over to the condition's own clock. */
MA_PRELOAD_API int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock,
					  const struct timespec *abstime)
{
	if (!c || !m || !abstime)
		return EINVAL;
	struct timespec own;
	int e = ma_pl_deadline_on(clock, abstime, (clockid_t)MA_PL_COND(c)->__clock, &own);
	if (e)
		return e;
	return marcel_cond_timedwait(MA_PL_COND(c), ma_pl_mutex(m), &own);
}

MA_PRELOAD_API int pthread_cond_signal(pthread_cond_t *c)
{
	return c ? marcel_cond_signal(MA_PL_COND(c)) : EINVAL;
}

MA_PRELOAD_API int pthread_cond_broadcast(pthread_cond_t *c)
{
	return c ? marcel_cond_broadcast(MA_PL_COND(c)) : EINVAL;
}
