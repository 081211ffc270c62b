/* Threads: pthread_create makes a marcel thread (marcel_create_posix, so that main's
 * return ends the process whatever is left), and a pthread_t is its marcel_t. Every
 * function of the C library that takes a pthread_t is defined here: given a marcel_t,
 * the C library's would read a struct pthread that is not there. */
#include "ma_preload.h"
#include <signal.h>
#include <stdio.h>
#include <string.h>

_Static_assert(sizeof(pthread_t) == sizeof(marcel_t), "a pthread_t holds a marcel_t");

static inline marcel_t ma_pl_t(pthread_t t)
{
	return (marcel_t)(uintptr_t)t;
}

MA_PRELOAD_API int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	if (MA_PL_FROM_RUNTIME())
		return MA_PL_REAL(pthread_create)(th, attr, fn, arg);
	if (!th || !fn)
		return EINVAL;
	marcel_attr_t ma;
	int e = ma_pl_attr_to_marcel(attr, &ma);
	if (e)
		return e;
	marcel_t t;
	e = marcel_create_posix(&t, &ma, fn, arg);
	marcel_attr_destroy(&ma);
	if (e)
		return e;
	__atomic_fetch_add(&ma_pl_created, 1, __ATOMIC_RELAXED);
	*th = (pthread_t)(uintptr_t)t;
	return 0;
}

MA_PRELOAD_API int pthread_join(pthread_t t, void **ret)
{
	if (MA_PL_FROM_RUNTIME())
		return MA_PL_REAL(pthread_join)(t, ret);
	return marcel_join(ma_pl_t(t), ret);
}

MA_PRELOAD_API int pthread_detach(pthread_t t)
{
	return marcel_detach(ma_pl_t(t));
}

MA_PRELOAD_API void pthread_exit(void *ret)
{
	if (!marcel_self())
		MA_PL_REAL(pthread_exit)(ret);
	marcel_exit(ret);
}

MA_PRELOAD_API pthread_t pthread_self(void)
{
	marcel_t t;
	if (MA_PL_FROM_RUNTIME() || !(t = marcel_self()))
		return MA_PL_REAL(pthread_self)();
	return (pthread_t)(uintptr_t)t;
}

MA_PRELOAD_API int pthread_equal(pthread_t a, pthread_t b)
{
	return a == b;
}

MA_PRELOAD_API int sched_yield(void)
{
	if (MA_PL_FROM_RUNTIME() || !marcel_self())
		return MA_PL_REAL(sched_yield)();
	marcel_yield();
	return 0;
}

/* pthread_yield: glibc's header makes it a second name of sched_yield. */

MA_PRELOAD_API int pthread_setconcurrency(int level)
{
	return level < 0 ? EINVAL : 0;
}

MA_PRELOAD_API int pthread_getconcurrency(void)
{
	return (int)marcel_nbvps();
}

MA_PRELOAD_API int pthread_setname_np(pthread_t t, const char *name)
{
	if (!name)
		return EINVAL;
	/* The C library refuses names of 16 bytes and more; marcel takes up to 31. */
	if (strlen(name) >= 16)
		return ERANGE;
	return marcel_setname(ma_pl_t(t), name);
}

MA_PRELOAD_API int pthread_getname_np(pthread_t t, char *buf, size_t n)
{
	if (!buf)
		return EINVAL;
	return marcel_getname(ma_pl_t(t), buf, n);
}

/* ---- cancellation (deferred: marcel's cancellation points) ---- */

MA_PRELOAD_API int pthread_cancel(pthread_t t)
{
	return marcel_cancel(ma_pl_t(t));
}

MA_PRELOAD_API void pthread_testcancel(void)
{
	if (marcel_self())
		marcel_testcancel();
}

MA_PRELOAD_API int pthread_setcancelstate(int state, int *old)
{
	if (MA_PL_FROM_RUNTIME() || !marcel_self())
		return MA_PL_REAL(pthread_setcancelstate)(state, old);
	return marcel_setcancelstate(state, old);
}

MA_PRELOAD_API int pthread_setcanceltype(int type, int *old)
{
	if (MA_PL_FROM_RUNTIME() || !marcel_self())
		return MA_PL_REAL(pthread_setcanceltype)(type, old);
	return marcel_setcanceltype(type, old);
}

/* ---- what marcel threads do not have ---- */

MA_PRELOAD_API int pthread_kill(pthread_t t, int sig)
{
	(void)t;
	/* Signal 0 asks whether the thread exists; a handle the program holds does. */
	if (sig == 0)
		return 0;
	return ma_pl_unsupported("pthread_kill", "no per-thread signals (a signal goes to a worker kernel thread)",
				 ENOTSUP);
}

MA_PRELOAD_API int pthread_sigqueue(pthread_t t, int sig, const union sigval v)
{
	(void)t, (void)sig, (void)v;
	return ma_pl_unsupported("pthread_sigqueue", "no per-thread signals", ENOTSUP);
}

MA_PRELOAD_API int pthread_getschedparam(pthread_t t, int *policy, struct sched_param *p)
{
	(void)t;
	if (!policy || !p)
		return EINVAL;
	/* What every thread of an unprivileged program has. */
	*policy = SCHED_OTHER;
	memset(p, 0, sizeof(*p));
	return 0;
}

MA_PRELOAD_API int pthread_setschedparam(pthread_t t, int policy, const struct sched_param *p)
{
	(void)t;
	if (policy == SCHED_OTHER && p && p->sched_priority == 0)
		return 0;
	return ma_pl_unsupported("pthread_setschedparam", "kernel scheduling policies do not apply", ENOTSUP);
}

MA_PRELOAD_API int pthread_setschedprio(pthread_t t, int prio)
{
	(void)t;
	if (prio == 0)
		return 0;
	return ma_pl_unsupported("pthread_setschedprio", "kernel scheduling policies do not apply", ENOTSUP);
}

MA_PRELOAD_API int pthread_setaffinity_np(pthread_t t, size_t n, const cpu_set_t *set)
{
	(void)t, (void)n, (void)set;
	return ma_pl_unsupported("pthread_setaffinity_np", "marcel places threads on its VPs", ENOTSUP);
}

/* The processors a marcel thread may run on are the process's (libgomp asks, to count
 * them). */
MA_PRELOAD_API int pthread_getaffinity_np(pthread_t t, size_t n, cpu_set_t *set)
{
	if (MA_PL_FROM_RUNTIME())
		return MA_PL_REAL(pthread_getaffinity_np)(t, n, set);
	return sched_getaffinity(0, n, set) ? errno : 0;
}

MA_PRELOAD_API int pthread_getcpuclockid(pthread_t t, clockid_t *c)
{
	(void)t, (void)c;
	return ma_pl_unsupported("pthread_getcpuclockid", "no per-thread CPU clock", ENOTSUP);
}

/* main's marcel handle and the C library's handle of the kernel thread whose stack it
 * runs on, taken where both are main's: in a constructor, which runs before main could
 * move to another worker. */
static pthread_t ma_pl_main, ma_pl_main_kernel;

__attribute__((constructor)) static void ma_pl_note_main(void)
{
	ma_pl_main = (pthread_t)(uintptr_t)marcel_self();
	ma_pl_main_kernel = MA_PL_REAL(pthread_self)();
}

/* For main, whose stack is the process's (a Rust program asks at start-up), the C
 * library's answer; other marcel stacks are not published. */
MA_PRELOAD_API int pthread_getattr_np(pthread_t t, pthread_attr_t *a)
{
	if (MA_PL_FROM_RUNTIME())
		return MA_PL_REAL(pthread_getattr_np)(t, a);
	if (t && t == ma_pl_main)
		return ma_pl_attr_main(ma_pl_main_kernel, a);
	return ma_pl_unsupported("pthread_getattr_np", "marcel does not publish its threads' stacks", ENOTSUP);
}

MA_PRELOAD_API int pthread_tryjoin_np(pthread_t t, void **ret)
{
	(void)t, (void)ret;
	return ma_pl_unsupported("pthread_tryjoin_np", "marcel has no non-blocking join", ENOTSUP);
}

MA_PRELOAD_API int pthread_timedjoin_np(pthread_t t, void **ret, const struct timespec *abstime)
{
	(void)t, (void)ret, (void)abstime;
	return ma_pl_unsupported("pthread_timedjoin_np", "marcel has no timed join", ENOTSUP);
}

MA_PRELOAD_API int pthread_clockjoin_np(pthread_t t, void **ret, clockid_t c, const struct timespec *abstime)
{
	(void)t, (void)ret, (void)c, (void)abstime;
	return ma_pl_unsupported("pthread_clockjoin_np", "marcel has no timed join", ENOTSUP);
}
