/* The other synchronisation objects: read-write locks, spin locks, barriers, one-time
 * initialisation and keys. Each marcel object sits in the first bytes of its pthread
 * object, whose all-zero static initialiser is a valid marcel object; attributes are
 * one word under a magic. */
#include "ma_preload.h"
#include <string.h>

_Static_assert(sizeof(marcel_rwlock_t) <= sizeof(pthread_rwlock_t), "a marcel rwlock fits in pthread_rwlock_t");
_Static_assert(sizeof(marcel_barrier_t) <= sizeof(pthread_barrier_t), "a marcel barrier fits in pthread_barrier_t");
_Static_assert(sizeof(marcel_once_t) == sizeof(pthread_once_t), "a marcel once fits in pthread_once_t");
_Static_assert(sizeof(marcel_key_t) == sizeof(pthread_key_t), "a marcel key is a pthread_key_t");
_Static_assert(PTHREAD_BARRIER_SERIAL_THREAD == MARCEL_BARRIER_SERIAL_THREAD, "same serial-thread value");

/* Attribute words of rwlocks and barriers: the magic in the high half, the rwlock kind
 * (recorded only: marcel's rwlocks prefer writers) in the low one. */
#define MA_PL_SA_MAGIC 0x73610000u
#define MA_PL_SA_MAGIC_MASK 0xffff0000u

static int ma_pl_sattr_ok(const void *a)
{
	return a && (*(const uint32_t *)a & MA_PL_SA_MAGIC_MASK) == MA_PL_SA_MAGIC;
}

static int ma_pl_sattr_init(void *a, size_t size)
{
	if (!a)
		return EINVAL;
	memset(a, 0, size);
	*(uint32_t *)a = MA_PL_SA_MAGIC;
	return 0;
}

static int ma_pl_sattr_destroy(void *a)
{
	if (!ma_pl_sattr_ok(a))
		return EINVAL;
	*(uint32_t *)a = 0;
	return 0;
}

static int ma_pl_sattr_setpshared(void *a, int pshared, const char *fn)
{
	return ma_pl_sattr_ok(a) ? ma_pl_pshared(pshared, fn) : EINVAL;
}

static int ma_pl_sattr_getpshared(const void *a, int *pshared)
{
	if (!ma_pl_sattr_ok(a) || !pshared)
		return EINVAL;
	*pshared = PTHREAD_PROCESS_PRIVATE;
	return 0;
}

/* ---- read-write locks ---- */

#define MA_PL_RW(l) ((marcel_rwlock_t *)(l))

MA_PRELOAD_API int pthread_rwlockattr_init(pthread_rwlockattr_t *a)
{
	return ma_pl_sattr_init(a, sizeof(*a));
}

MA_PRELOAD_API int pthread_rwlockattr_destroy(pthread_rwlockattr_t *a)
{
	return ma_pl_sattr_destroy(a);
}

MA_PRELOAD_API int pthread_rwlockattr_setpshared(pthread_rwlockattr_t *a, int pshared)
{
	return ma_pl_sattr_setpshared(a, pshared, "pthread_rwlockattr_setpshared(PTHREAD_PROCESS_SHARED)");
}

MA_PRELOAD_API int pthread_rwlockattr_getpshared(const pthread_rwlockattr_t *a, int *pshared)
{
	return ma_pl_sattr_getpshared(a, pshared);
}

MA_PRELOAD_API int pthread_rwlockattr_setkind_np(pthread_rwlockattr_t *a, int kind)
{
	if (!ma_pl_sattr_ok(a) || kind < 0 || kind > 0xffff)
		return EINVAL;
	*(uint32_t *)a = MA_PL_SA_MAGIC | (uint32_t)kind;
	return 0;
}

MA_PRELOAD_API int pthread_rwlockattr_getkind_np(const pthread_rwlockattr_t *a, int *kind)
{
	if (!ma_pl_sattr_ok(a) || !kind)
		return EINVAL;
	*kind = (int)(*(const uint32_t *)a & ~MA_PL_SA_MAGIC_MASK);
	return 0;
}

MA_PRELOAD_API int pthread_rwlock_init(pthread_rwlock_t *l, const pthread_rwlockattr_t *a)
{
	if (!l || (a && !ma_pl_sattr_ok(a)))
		return EINVAL;
	memset(l, 0, sizeof(*l));
	return marcel_rwlock_init(MA_PL_RW(l), NULL);
}

MA_PRELOAD_API int pthread_rwlock_destroy(pthread_rwlock_t *l)
{
	int e = l ? marcel_rwlock_destroy(MA_PL_RW(l)) : EINVAL;
	if (!e)
		memset(l, 0, sizeof(*l));
	return e;
}

MA_PRELOAD_API int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
	return marcel_rwlock_rdlock(MA_PL_RW(l));
}

MA_PRELOAD_API int pthread_rwlock_tryrdlock(pthread_rwlock_t *l)
{
	return marcel_rwlock_tryrdlock(MA_PL_RW(l));
}

MA_PRELOAD_API int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *abstime)
{
	return marcel_rwlock_timedrdlock(MA_PL_RW(l), abstime);
}

MA_PRELOAD_API int pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t clock, const struct timespec *abstime)
{
	struct timespec rt;
	int e = ma_pl_deadline_on(clock, abstime, CLOCK_REALTIME, &rt);
	return e ? e : marcel_rwlock_timedrdlock(MA_PL_RW(l), &rt);
}

MA_PRELOAD_API int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
	return marcel_rwlock_wrlock(MA_PL_RW(l));
}

MA_PRELOAD_API int pthread_rwlock_trywrlock(pthread_rwlock_t *l)
{
	return marcel_rwlock_trywrlock(MA_PL_RW(l));
}

MA_PRELOAD_API int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *abstime)
{
	return marcel_rwlock_timedwrlock(MA_PL_RW(l), abstime);
}

MA_PRELOAD_API int pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t clock, const struct timespec *abstime)
{
	struct timespec rt;
	int e = ma_pl_deadline_on(clock, abstime, CLOCK_REALTIME, &rt);
	return e ? e : marcel_rwlock_timedwrlock(MA_PL_RW(l), &rt);
}

MA_PRELOAD_API int pthread_rwlock_unlock(pthread_rwlock_t *l)
{
	return marcel_rwlock_unlock(MA_PL_RW(l));
}

/* ---- spin locks ----
 * The C library's pthread_spinlock_t is one int, too small for a marcel spin lock: this
 * is a lock word of its own. A waiter that keeps finding it taken yields, so that on one
 * VP the holder, switched out while it held the lock, gets to release it. */

#define MA_PL_SPIN_ROUNDS 100

MA_PRELOAD_API int pthread_spin_init(pthread_spinlock_t *l, int pshared)
{
	if (!l)
		return EINVAL;
	int e = ma_pl_pshared(pshared, "pthread_spin_init(PTHREAD_PROCESS_SHARED)");
	if (e)
		return e;
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
	return 0;
}

MA_PRELOAD_API int pthread_spin_destroy(pthread_spinlock_t *l)
{
	if (!l)
		return EINVAL;
	return __atomic_load_n(l, __ATOMIC_RELAXED) ? EBUSY : 0;
}

MA_PRELOAD_API int pthread_spin_trylock(pthread_spinlock_t *l)
{
	int free_ = 0;
	if (!l)
		return EINVAL;
	return __atomic_compare_exchange_n(l, &free_, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED) ? 0 : EBUSY;
}

MA_PRELOAD_API int pthread_spin_lock(pthread_spinlock_t *l)
{
	if (!l)
		return EINVAL;
	for (unsigned i = 1;; i++) {
		int free_ = 0;
		if (!__atomic_load_n(l, __ATOMIC_RELAXED) &&
		    __atomic_compare_exchange_n(l, &free_, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return 0;
		if (i % MA_PL_SPIN_ROUNDS == 0)
			marcel_self() ? (void)marcel_yield() : (void)MA_PL_REAL(sched_yield)();
	}
}

MA_PRELOAD_API int pthread_spin_unlock(pthread_spinlock_t *l)
{
	if (!l)
		return EINVAL;
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
	return 0;
}

/* ---- barriers ---- */

#define MA_PL_BAR(b) ((marcel_barrier_t *)(b))

MA_PRELOAD_API int pthread_barrierattr_init(pthread_barrierattr_t *a)
{
	return ma_pl_sattr_init(a, sizeof(*a));
}

MA_PRELOAD_API int pthread_barrierattr_destroy(pthread_barrierattr_t *a)
{
	return ma_pl_sattr_destroy(a);
}

MA_PRELOAD_API int pthread_barrierattr_setpshared(pthread_barrierattr_t *a, int pshared)
{
	return ma_pl_sattr_setpshared(a, pshared, "pthread_barrierattr_setpshared(PTHREAD_PROCESS_SHARED)");
}

MA_PRELOAD_API int pthread_barrierattr_getpshared(const pthread_barrierattr_t *a, int *pshared)
{
	return ma_pl_sattr_getpshared(a, pshared);
}

MA_PRELOAD_API int pthread_barrier_init(pthread_barrier_t *b, const pthread_barrierattr_t *a, unsigned count)
{
	if (!b || (a && !ma_pl_sattr_ok(a)))
		return EINVAL;
	memset(b, 0, sizeof(*b));
	return marcel_barrier_init(MA_PL_BAR(b), NULL, count);
}

MA_PRELOAD_API int pthread_barrier_destroy(pthread_barrier_t *b)
{
	return b ? marcel_barrier_destroy(MA_PL_BAR(b)) : EINVAL;
}

MA_PRELOAD_API int pthread_barrier_wait(pthread_barrier_t *b)
{
	return b ? marcel_barrier_wait(MA_PL_BAR(b)) : EINVAL;
}

/* ---- one-time initialisation ---- */

MA_PRELOAD_API int pthread_once(pthread_once_t *once, void (*init)(void))
{
	if (MA_PL_FROM_RUNTIME())
		return MA_PL_REAL(pthread_once)(once, init);
	return marcel_once((marcel_once_t *)once, init);
}

/* ---- keys ---- */

MA_PRELOAD_API int pthread_key_create(pthread_key_t *key, void (*destructor)(void *))
{
	return marcel_key_create(key, destructor);
}

MA_PRELOAD_API int pthread_key_delete(pthread_key_t key)
{
	return marcel_key_delete(key);
}

MA_PRELOAD_API void *pthread_getspecific(pthread_key_t key)
{
	return marcel_getspecific(key);
}

/* glibc declares the value as not accessed (access none), which makes GCC take passing it
 * on for a read of uninitialised memory. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
MA_PRELOAD_API int pthread_setspecific(pthread_key_t key, const void *value)
{
	return marcel_setspecific(key, value);
}
#pragma GCC diagnostic pop
