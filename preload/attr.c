/* Thread attributes, kept in the pthread_attr_t itself (the C library's layout is not
 * used: every pthread_attr_* function is defined here) and turned into marcel
 * attributes by pthread_create. */
#include "ma_preload.h"
#include <stddef.h>
#include <string.h>

struct ma_pl_attr {
	uint32_t magic;
	int detach;
	size_t stacksize; /* 0: marcel's default (MARCEL_STACK_SIZE) */
	size_t guardsize;
	int scope, inherit, policy, prio;
	void *stackaddr; /* lowest address, set by pthread_getattr_np for main only */
};
_Static_assert(sizeof(struct ma_pl_attr) <= sizeof(pthread_attr_t), "thread attributes fit in pthread_attr_t");

#define MA_PL_ATTR(a) ((struct ma_pl_attr *)(a))
#define MA_PL_CATTR(a) ((const struct ma_pl_attr *)(a))

static int ma_pl_attr_ok(const pthread_attr_t *a)
{
	return a && MA_PL_CATTR(a)->magic == MA_PL_MAGIC;
}

int ma_pl_attr_to_marcel(const pthread_attr_t *a, marcel_attr_t *out)
{
	marcel_attr_init(out);
	if (!a)
		return 0;
	if (!ma_pl_attr_ok(a))
		return EINVAL;
	int e = marcel_attr_setdetachstate(out, MA_PL_CATTR(a)->detach == PTHREAD_CREATE_DETACHED);
	if (!e && MA_PL_CATTR(a)->stacksize)
		e = marcel_attr_setstacksize(out, MA_PL_CATTR(a)->stacksize);
	return e;
}

MA_PRELOAD_API int pthread_attr_init(pthread_attr_t *a)
{
	if (MA_PL_FROM_RUNTIME())
		return MA_PL_REAL(pthread_attr_init)(a);
	if (!a)
		return EINVAL;
	memset(a, 0, sizeof(*a));
	*MA_PL_ATTR(a) = (struct ma_pl_attr){ .magic = MA_PL_MAGIC, .detach = PTHREAD_CREATE_JOINABLE,
					      .scope = PTHREAD_SCOPE_PROCESS, .inherit = PTHREAD_INHERIT_SCHED,
					      .policy = SCHED_OTHER };
	return 0;
}

MA_PRELOAD_API int pthread_attr_destroy(pthread_attr_t *a)
{
	if (MA_PL_FROM_RUNTIME() || (a && MA_PL_CATTR(a)->magic != MA_PL_MAGIC))
		/* The runtime's (also when its call was a tail call: the magic tells). */
		return MA_PL_REAL(pthread_attr_destroy)(a);
	if (!a)
		return EINVAL;
	MA_PL_ATTR(a)->magic = 0;
	return 0;
}

MA_PRELOAD_API int pthread_attr_setdetachstate(pthread_attr_t *a, int d)
{
	if (!ma_pl_attr_ok(a) || (d != PTHREAD_CREATE_JOINABLE && d != PTHREAD_CREATE_DETACHED))
		return EINVAL;
	MA_PL_ATTR(a)->detach = d;
	return 0;
}

MA_PRELOAD_API int pthread_attr_getdetachstate(const pthread_attr_t *a, int *d)
{
	if (!ma_pl_attr_ok(a) || !d)
		return EINVAL;
	*d = MA_PL_CATTR(a)->detach;
	return 0;
}

MA_PRELOAD_API int pthread_attr_setstacksize(pthread_attr_t *a, size_t size)
{
	if (MA_PL_FROM_RUNTIME())
		return MA_PL_REAL(pthread_attr_setstacksize)(a, size);
	if (!ma_pl_attr_ok(a) || size < MARCEL_STACK_MIN || size > MARCEL_STACK_MAX)
		return EINVAL;
	MA_PL_ATTR(a)->stacksize = size;
	return 0;
}

MA_PRELOAD_API int pthread_attr_getstacksize(const pthread_attr_t *a, size_t *size)
{
	if (!ma_pl_attr_ok(a) || !size)
		return EINVAL;
	*size = MA_PL_CATTR(a)->stacksize;
	return 0;
}

/* Recorded and given back; marcel stacks always have one guard page. */
MA_PRELOAD_API int pthread_attr_setguardsize(pthread_attr_t *a, size_t size)
{
	if (!ma_pl_attr_ok(a))
		return EINVAL;
	MA_PL_ATTR(a)->guardsize = size;
	return 0;
}

MA_PRELOAD_API int pthread_attr_getguardsize(const pthread_attr_t *a, size_t *size)
{
	if (!ma_pl_attr_ok(a) || !size)
		return EINVAL;
	*size = MA_PL_CATTR(a)->guardsize;
	return 0;
}

MA_PRELOAD_API int pthread_attr_setscope(pthread_attr_t *a, int scope)
{
	if (!ma_pl_attr_ok(a))
		return EINVAL;
	if (scope == PTHREAD_SCOPE_SYSTEM)
		return ma_pl_unsupported("pthread_attr_setscope(PTHREAD_SCOPE_SYSTEM)",
					 "marcel threads are user-level (process scope)", ENOTSUP);
	return scope == PTHREAD_SCOPE_PROCESS ? 0 : EINVAL;
}

MA_PRELOAD_API int pthread_attr_getscope(const pthread_attr_t *a, int *scope)
{
	if (!ma_pl_attr_ok(a) || !scope)
		return EINVAL;
	*scope = PTHREAD_SCOPE_PROCESS;
	return 0;
}

/* Kernel scheduling: the defaults are accepted (programs set them explicitly), the rest
 * refused. */
MA_PRELOAD_API int pthread_attr_setinheritsched(pthread_attr_t *a, int inherit)
{
	if (!ma_pl_attr_ok(a) || (inherit != PTHREAD_INHERIT_SCHED && inherit != PTHREAD_EXPLICIT_SCHED))
		return EINVAL;
	MA_PL_ATTR(a)->inherit = inherit;
	return 0;
}

MA_PRELOAD_API int pthread_attr_getinheritsched(const pthread_attr_t *a, int *inherit)
{
	if (!ma_pl_attr_ok(a) || !inherit)
		return EINVAL;
	*inherit = MA_PL_CATTR(a)->inherit;
	return 0;
}

MA_PRELOAD_API int pthread_attr_setschedpolicy(pthread_attr_t *a, int policy)
{
	if (!ma_pl_attr_ok(a))
		return EINVAL;
	if (policy != SCHED_OTHER)
		return ma_pl_unsupported("pthread_attr_setschedpolicy", "kernel scheduling policies do not apply",
					 ENOTSUP);
	return 0;
}

MA_PRELOAD_API int pthread_attr_getschedpolicy(const pthread_attr_t *a, int *policy)
{
	if (!ma_pl_attr_ok(a) || !policy)
		return EINVAL;
	*policy = SCHED_OTHER;
	return 0;
}

MA_PRELOAD_API int pthread_attr_setschedparam(pthread_attr_t *a, const struct sched_param *p)
{
	if (!ma_pl_attr_ok(a) || !p)
		return EINVAL;
	if (p->sched_priority != 0)
		return ma_pl_unsupported("pthread_attr_setschedparam", "kernel scheduling priorities do not apply",
					 ENOTSUP);
	return 0;
}

MA_PRELOAD_API int pthread_attr_getschedparam(const pthread_attr_t *a, struct sched_param *p)
{
	if (!ma_pl_attr_ok(a) || !p)
		return EINVAL;
	memset(p, 0, sizeof(*p));
	return 0;
}

/* Stacks of the caller's: marcel allocates every stack (and its guard page) itself. */
MA_PRELOAD_API int pthread_attr_setstack(pthread_attr_t *a, void *addr, size_t size)
{
	(void)a, (void)addr, (void)size;
	return ma_pl_unsupported("pthread_attr_setstack", "marcel allocates the stacks", ENOTSUP);
}

MA_PRELOAD_API int pthread_attr_getstack(const pthread_attr_t *a, void **addr, size_t *size)
{
	if (MA_PL_FROM_RUNTIME() || (a && MA_PL_CATTR(a)->magic != MA_PL_MAGIC))
		return MA_PL_REAL(pthread_attr_getstack)(a, addr, size);
	if (!a || !addr || !size)
		return EINVAL;
	if (!MA_PL_CATTR(a)->stackaddr)
		return ma_pl_unsupported("pthread_attr_getstack", "marcel allocates the stacks", ENOTSUP);
	*addr = MA_PL_CATTR(a)->stackaddr;
	*size = MA_PL_CATTR(a)->stacksize;
	return 0;
}

int ma_pl_attr_main(pthread_t main_kernel_thread, pthread_attr_t *a)
{
	pthread_attr_t g;
	void *addr;
	size_t size;
	int e = MA_PL_REAL(pthread_getattr_np)(main_kernel_thread, &g);
	if (e)
		return e;
	e = MA_PL_REAL(pthread_attr_getstack)(&g, &addr, &size);
	MA_PL_REAL(pthread_attr_destroy)(&g);
	if (e)
		return e;
	pthread_attr_init(a);
	MA_PL_ATTR(a)->stackaddr = addr;
	MA_PL_ATTR(a)->stacksize = size;
	return 0;
}

MA_PRELOAD_API int pthread_attr_setstackaddr(pthread_attr_t *a, void *addr)
{
	(void)a, (void)addr;
	return ma_pl_unsupported("pthread_attr_setstackaddr", "marcel allocates the stacks", ENOTSUP);
}

MA_PRELOAD_API int pthread_attr_getstackaddr(const pthread_attr_t *a, void **addr)
{
	(void)a, (void)addr;
	return ma_pl_unsupported("pthread_attr_getstackaddr", "marcel allocates the stacks", ENOTSUP);
}

MA_PRELOAD_API int pthread_attr_setaffinity_np(pthread_attr_t *a, size_t n, const cpu_set_t *set)
{
	(void)a, (void)n, (void)set;
	return ma_pl_unsupported("pthread_attr_setaffinity_np", "marcel places threads on its VPs", ENOTSUP);
}

MA_PRELOAD_API int pthread_attr_getaffinity_np(const pthread_attr_t *a, size_t n, cpu_set_t *set)
{
	(void)a, (void)n, (void)set;
	return ma_pl_unsupported("pthread_attr_getaffinity_np", "marcel places threads on its VPs", ENOTSUP);
}

MA_PRELOAD_API int pthread_attr_setsigmask_np(pthread_attr_t *a, const sigset_t *set)
{
	(void)a, (void)set;
	return ma_pl_unsupported("pthread_attr_setsigmask_np", "marcel threads run with their worker's mask",
				 ENOTSUP);
}

MA_PRELOAD_API int pthread_attr_getsigmask_np(const pthread_attr_t *a, sigset_t *set)
{
	(void)a, (void)set;
	return ma_pl_unsupported("pthread_attr_getsigmask_np", "marcel threads run with their worker's mask",
				 ENOTSUP);
}

MA_PRELOAD_API int pthread_getattr_default_np(pthread_attr_t *a)
{
	return pthread_attr_init(a);
}

MA_PRELOAD_API int pthread_setattr_default_np(const pthread_attr_t *a)
{
	(void)a;
	return ma_pl_unsupported("pthread_setattr_default_np", "defaults come from the MARCEL_* variables",
				 ENOTSUP);
}
