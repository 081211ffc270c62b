/* Mutexes: a marcel mutex in the first bytes of the pthread_mutex_t, with a magic word
 * after it. All-zero bytes (PTHREAD_MUTEX_INITIALIZER) and the C library's recursive
 * and error-checking static initialisers (a kind word at byte 16, where the marcel mutex
 * keeps its count) are turned into a marcel mutex of that kind at first use, by the one
 * thread that claims the magic word. The attributes are a single word (the C library's
 * pthread_mutexattr_t is 4 bytes). */
#include "ma_preload.h"
#include <stddef.h>
#include <string.h>

struct ma_pl_mutex {
	marcel_mutex_t m;
	/* glibc's __list.__prev (only robust mutexes use it): 0 in its every initialiser. */
	uint32_t magic;
};
_Static_assert(sizeof(struct ma_pl_mutex) <= sizeof(pthread_mutex_t), "a marcel mutex fits in pthread_mutex_t");
_Static_assert(offsetof(struct ma_pl_mutex, magic) >= offsetof(pthread_mutex_t, __data.__list),
	       "the magic word is outside the fields the C library's initialisers set");

/* Mutex attributes: the kind in the low bits, then the flags, under a 16-bit magic. */
#define MA_PL_MA_MAGIC 0x6d700000u
#define MA_PL_MA_MAGIC_MASK 0xffff0000u
#define MA_PL_MA_KIND 0x3u

_Static_assert(PTHREAD_MUTEX_NORMAL == MARCEL_MUTEX_NORMAL && PTHREAD_MUTEX_RECURSIVE == MARCEL_MUTEX_RECURSIVE &&
		       PTHREAD_MUTEX_ERRORCHECK == MARCEL_MUTEX_ERRORCHECK,
	       "the mutex kinds have the same values");

static uint32_t *ma_pl_mattr(const pthread_mutexattr_t *a)
{
	return (uint32_t *)a;
}

static int ma_pl_mattr_ok(const pthread_mutexattr_t *a)
{
	return a && (*ma_pl_mattr(a) & MA_PL_MA_MAGIC_MASK) == MA_PL_MA_MAGIC;
}

static int ma_pl_marcel_kind(int kind)
{
	/* PTHREAD_MUTEX_ADAPTIVE_NP (3) spins before it sleeps, which marcel's mutexes do. */
	return kind == PTHREAD_MUTEX_RECURSIVE || kind == PTHREAD_MUTEX_ERRORCHECK ? kind : MARCEL_MUTEX_NORMAL;
}

static void ma_pl_mutex_make(struct ma_pl_mutex *p, int kind)
{
	marcel_mutexattr_t a;
	marcel_mutexattr_init(&a);
	marcel_mutexattr_settype(&a, ma_pl_marcel_kind(kind));
	marcel_mutex_init(&p->m, &a);
	marcel_mutexattr_destroy(&a);
}

marcel_mutex_t *ma_pl_mutex(pthread_mutex_t *m)
{
	if (ma_pl_unlikely(!m))
		return NULL;
	struct ma_pl_mutex *p = (struct ma_pl_mutex *)m;
	uint32_t s = __atomic_load_n(&p->magic, __ATOMIC_ACQUIRE);
	if (ma_pl_likely(s == MA_PL_MAGIC))
		return &p->m;
	s = 0;
	if (__atomic_compare_exchange_n(&p->magic, &s, MA_PL_CONVERTING, 0, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
		int kind = m->__data.__kind & MA_PL_MA_KIND;
		ma_pl_mutex_make(p, kind);
		__atomic_store_n(&p->magic, MA_PL_MAGIC, __ATOMIC_RELEASE);
		return &p->m;
	}
	while (__atomic_load_n(&p->magic, __ATOMIC_ACQUIRE) != MA_PL_MAGIC)
		marcel_self() ? (void)marcel_yield() : (void)MA_PL_REAL(sched_yield)();
	return &p->m;
}

/* ---- attributes ---- */

MA_PRELOAD_API int pthread_mutexattr_init(pthread_mutexattr_t *a)
{
	if (!a)
		return EINVAL;
	memset(a, 0, sizeof(*a));
	*ma_pl_mattr(a) = MA_PL_MA_MAGIC | PTHREAD_MUTEX_DEFAULT;
	return 0;
}

MA_PRELOAD_API int pthread_mutexattr_destroy(pthread_mutexattr_t *a)
{
	if (!ma_pl_mattr_ok(a))
		return EINVAL;
	*ma_pl_mattr(a) = 0;
	return 0;
}

MA_PRELOAD_API int pthread_mutexattr_settype(pthread_mutexattr_t *a, int kind)
{
	if (!ma_pl_mattr_ok(a) || kind < 0 || kind > (int)MA_PL_MA_KIND)
		return EINVAL;
	*ma_pl_mattr(a) = (*ma_pl_mattr(a) & ~MA_PL_MA_KIND) | (uint32_t)kind;
	return 0;
}

MA_PRELOAD_API int pthread_mutexattr_gettype(const pthread_mutexattr_t *a, int *kind)
{
	if (!ma_pl_mattr_ok(a) || !kind)
		return EINVAL;
	*kind = (int)(*ma_pl_mattr(a) & MA_PL_MA_KIND);
	return 0;
}

MA_PRELOAD_API int pthread_mutexattr_setpshared(pthread_mutexattr_t *a, int pshared)
{
	if (!ma_pl_mattr_ok(a))
		return EINVAL;
	return ma_pl_pshared(pshared, "pthread_mutexattr_setpshared(PTHREAD_PROCESS_SHARED)");
}

MA_PRELOAD_API int pthread_mutexattr_getpshared(const pthread_mutexattr_t *a, int *pshared)
{
	if (!ma_pl_mattr_ok(a) || !pshared)
		return EINVAL;
	*pshared = PTHREAD_PROCESS_PRIVATE;
	return 0;
}

MA_PRELOAD_API int pthread_mutexattr_setrobust(pthread_mutexattr_t *a, int robust)
{
	if (!ma_pl_mattr_ok(a))
		return EINVAL;
	if (robust == PTHREAD_MUTEX_ROBUST)
		return ma_pl_unsupported("pthread_mutexattr_setrobust(PTHREAD_MUTEX_ROBUST)",
					 "marcel has no robust mutexes", ENOTSUP);
	return robust == PTHREAD_MUTEX_STALLED ? 0 : EINVAL;
}

MA_PRELOAD_API int pthread_mutexattr_getrobust(const pthread_mutexattr_t *a, int *robust)
{
	if (!ma_pl_mattr_ok(a) || !robust)
		return EINVAL;
	*robust = PTHREAD_MUTEX_STALLED;
	return 0;
}

MA_PRELOAD_API int pthread_mutexattr_setprotocol(pthread_mutexattr_t *a, int protocol)
{
	if (!ma_pl_mattr_ok(a))
		return EINVAL;
	if (protocol != PTHREAD_PRIO_NONE)
		return ma_pl_unsupported("pthread_mutexattr_setprotocol", "marcel has no priority protocols", ENOTSUP);
	return 0;
}

MA_PRELOAD_API int pthread_mutexattr_getprotocol(const pthread_mutexattr_t *a, int *protocol)
{
	if (!ma_pl_mattr_ok(a) || !protocol)
		return EINVAL;
	*protocol = PTHREAD_PRIO_NONE;
	return 0;
}

MA_PRELOAD_API int pthread_mutex_consistent(pthread_mutex_t *m)
{
	(void)m;
	/* No mutex here is robust, which is what EINVAL says. */
	return EINVAL;
}

/* ---- mutexes ---- */

MA_PRELOAD_API int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
	if (MA_PL_FROM_RUNTIME())
		return MA_PL_REAL(pthread_mutex_init)(m, a);
	if (!m || (a && !ma_pl_mattr_ok(a)))
		return EINVAL;
	struct ma_pl_mutex *p = (struct ma_pl_mutex *)m;
	memset(m, 0, sizeof(*m));
	ma_pl_mutex_make(p, a ? (int)(*ma_pl_mattr(a) & MA_PL_MA_KIND) : PTHREAD_MUTEX_DEFAULT);
	__atomic_store_n(&p->magic, MA_PL_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

MA_PRELOAD_API int pthread_mutex_destroy(pthread_mutex_t *m)
{
	if (MA_PL_FROM_RUNTIME())
		return MA_PL_REAL(pthread_mutex_destroy)(m);
	if (!m)
		return EINVAL;
	struct ma_pl_mutex *p = (struct ma_pl_mutex *)m;
	if (__atomic_load_n(&p->magic, __ATOMIC_ACQUIRE) != MA_PL_MAGIC)
		return 0; /* statically initialised and never used */
	int e = marcel_mutex_destroy(&p->m);
	if (!e)
		memset(m, 0, sizeof(*m));
	return e;
}

MA_PRELOAD_API int pthread_mutex_lock(pthread_mutex_t *m)
{
	if (MA_PL_FROM_RUNTIME())
		return MA_PL_REAL(pthread_mutex_lock)(m);
	return m ? marcel_mutex_lock(ma_pl_mutex(m)) : EINVAL;
}

MA_PRELOAD_API int pthread_mutex_trylock(pthread_mutex_t *m)
{
	if (MA_PL_FROM_RUNTIME())
		return MA_PL_REAL(pthread_mutex_trylock)(m);
	return m ? marcel_mutex_trylock(ma_pl_mutex(m)) : EINVAL;
}

MA_PRELOAD_API int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime)
{
	if (MA_PL_FROM_RUNTIME())
		return MA_PL_REAL(pthread_mutex_timedlock)(m, abstime);
	return m ? marcel_mutex_timedlock(ma_pl_mutex(m), abstime) : EINVAL;
}

MA_PRELOAD_API int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clock, const struct timespec *abstime)
{
	struct timespec rt;
	int e = ma_pl_deadline_on(clock, abstime, CLOCK_REALTIME, &rt);
	if (e)
		return e;
	return m ? marcel_mutex_timedlock(ma_pl_mutex(m), &rt) : EINVAL;
}

MA_PRELOAD_API int pthread_mutex_unlock(pthread_mutex_t *m)
{
	/* A mutex this library never touched is the runtime's, whose unlock may come as a
	 * tail call with another library's return address. */
	if (MA_PL_FROM_RUNTIME() ||
	    (m && __atomic_load_n(&((struct ma_pl_mutex *)m)->magic, __ATOMIC_ACQUIRE) != MA_PL_MAGIC))
		return MA_PL_REAL(pthread_mutex_unlock)(m);
	return m ? marcel_mutex_unlock(&((struct ma_pl_mutex *)m)->m) : EINVAL;
}
