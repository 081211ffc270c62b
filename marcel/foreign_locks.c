/*
 * Locks marcel does not own: counted per marcel thread so that preemption leaves their
 * holders alone.
 *
 * A thread switched out by a time slice while it holds a C library mutex, spin lock,
 * read-write lock or stdio lock, or while it runs a pthread_once routine or a C++ static
 * initialiser, deadlocks its VP when the next thread there asks for the same lock: that
 * thread waits in the kernel, its kernel thread carries the VP, and the holder may only
 * run on that VP. The safe-point rule of preempt.c sees the interrupted pc, not what the
 * frames below it hold. So libmarcel defines these entry points itself: the dynamic
 * linker binds the program's and its libraries' calls to the first definition in load
 * order, which is libmarcel's (it comes before libc), and each wrapper counts the lock in
 * the calling thread's foreign_locks before calling the C library's function
 * (dlsym(RTLD_NEXT)). While the count is not zero the thread is not at a safe point: a
 * slice that ends meanwhile stays pending, and the next tick tries again. (Yielding at the
 * release instead would switch inside whatever library called it, which the pc rule
 * exists to avoid: libgcc_s takes pthread mutexes while unwinding.)
 *
 * Code compiled with <marcel/pthread.h> uses marcel's own locks and never comes here;
 * this is for what marcel does not compile: statically linked helpers (Check), libstdc++
 * (std::mutex, std::call_once, function-local statics), other libraries.
 *
 * Invariants: the count belongs to a marcel thread, written by that thread only (it may
 * change kernel thread between a lock and its release, at a yield or a blocking
 * section); kernel threads that run no marcel thread count nothing. It is raised before
 * the lock is taken, so no instant exists where the lock is held and the count zero,
 * and dropped after the release. A release by a thread that counted nothing (a spin lock
 * released by another thread, which POSIX allows) leaves the count at zero: the thread
 * that took it stays unpreemptible until it ends, which is safe.
 *
 * Not covered: locks built on futexes by hand (libgomp's, tcmalloc's spin locks),
 * semaphores used as locks, and a lock taken in one marcel thread and released in
 * another (the taker stays unpreemptible, the releaser is unaffected).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "ma_preempt.h"

/* The thread to count in, or NULL: a kernel thread running no marcel thread, or a
 * worker in its scheduling context. */
static inline struct marcel_task *ma_lock_owner(void)
{
	struct ma_worker *w = ma_tls_worker;
	if (w) {
		struct marcel_task *t = ma_worker_current(w);
		return t && !t->is_idle ? t : NULL;
	}
	return ma_tls_section_task;
}

static inline struct marcel_task *ma_held_up(void)
{
	struct marcel_task *t = ma_lock_owner();
	if (t) {
		int n = atomic_load_explicit(&t->foreign_locks, memory_order_relaxed);
		atomic_store_explicit(&t->foreign_locks, n + 1, memory_order_relaxed);
		/* Ordered against the handler, which runs on this kernel thread. */
		atomic_signal_fence(memory_order_seq_cst);
	}
	return t;
}

static inline void ma_held_down(struct marcel_task *t)
{
	if (!t)
		return;
	atomic_signal_fence(memory_order_seq_cst);
	int n = atomic_load_explicit(&t->foreign_locks, memory_order_relaxed);
	if (n <= 0)
		return;
	atomic_store_explicit(&t->foreign_locks, n - 1, memory_order_relaxed);
}

/* The C library's definition of name, resolved at first use. Called before main too (by
 * libraries' constructors), so no initialisation order is assumed; two threads resolving
 * at once store the same value. A missing function is a broken installation: say which. */
static __attribute__((noinline, cold)) void *ma_next_resolve(const char *name, void *_Atomic *slot)
{
	void *f = dlsym(RTLD_NEXT, name);
	if (!f) {
		fprintf(stderr, "marcel: cannot find the C library's %s (dlsym: %s)\n", name, dlerror());
		abort();
	}
	atomic_store_explicit(slot, f, memory_order_release);
	return f;
}

static inline void *ma_next(const char *name, void *_Atomic *slot)
{
	void *f = atomic_load_explicit(slot, memory_order_acquire);
	return ma_likely(f != NULL) ? f : ma_next_resolve(name, slot);
}

/* Defines a wrapper: ret name(params) calls the next definition with args; `ok` says,
 * from its result r, whether the lock is now held (acquire) or was released (release). */
#define MA_REAL(type, name) \
	static void *_Atomic ma_next_##name; \
	typedef type; \
	static inline ma_fn_##name *ma_real_##name(void) \
	{ \
		return (ma_fn_##name *)ma_next(#name, &ma_next_##name); \
	}

#define MA_ACQUIRE(name, params, args, ok) \
	int name params \
	{ \
		struct marcel_task *t = ma_held_up(); \
		int r = ma_real_##name() args; \
		if (!(ok)) \
			ma_held_down(t); \
		return r; \
	}

/* A kernel thread running no marcel thread goes straight to the C library (a tail call). */
#define MA_RELEASE(name, params, args) \
	int name params \
	{ \
		struct marcel_task *t = ma_lock_owner(); \
		if (!t) \
			return ma_real_##name() args; \
		int r = ma_real_##name() args; \
		if (r == 0) \
			ma_held_down(ma_lock_owner()); \
		return r; \
	}

MA_REAL(int ma_fn_pthread_mutex_lock(pthread_mutex_t *), pthread_mutex_lock)
MA_REAL(int ma_fn_pthread_mutex_trylock(pthread_mutex_t *), pthread_mutex_trylock)
MA_REAL(int ma_fn_pthread_mutex_timedlock(pthread_mutex_t *, const struct timespec *), pthread_mutex_timedlock)
MA_REAL(int ma_fn_pthread_mutex_clocklock(pthread_mutex_t *, clockid_t, const struct timespec *),
	pthread_mutex_clocklock)
MA_REAL(int ma_fn_pthread_mutex_unlock(pthread_mutex_t *), pthread_mutex_unlock)
MA_REAL(int ma_fn_pthread_spin_lock(pthread_spinlock_t *), pthread_spin_lock)
MA_REAL(int ma_fn_pthread_spin_trylock(pthread_spinlock_t *), pthread_spin_trylock)
MA_REAL(int ma_fn_pthread_spin_unlock(pthread_spinlock_t *), pthread_spin_unlock)
MA_REAL(int ma_fn_pthread_rwlock_rdlock(pthread_rwlock_t *), pthread_rwlock_rdlock)
MA_REAL(int ma_fn_pthread_rwlock_tryrdlock(pthread_rwlock_t *), pthread_rwlock_tryrdlock)
MA_REAL(int ma_fn_pthread_rwlock_timedrdlock(pthread_rwlock_t *, const struct timespec *), pthread_rwlock_timedrdlock)
MA_REAL(int ma_fn_pthread_rwlock_clockrdlock(pthread_rwlock_t *, clockid_t, const struct timespec *),
	pthread_rwlock_clockrdlock)
MA_REAL(int ma_fn_pthread_rwlock_wrlock(pthread_rwlock_t *), pthread_rwlock_wrlock)
MA_REAL(int ma_fn_pthread_rwlock_trywrlock(pthread_rwlock_t *), pthread_rwlock_trywrlock)
MA_REAL(int ma_fn_pthread_rwlock_timedwrlock(pthread_rwlock_t *, const struct timespec *), pthread_rwlock_timedwrlock)
MA_REAL(int ma_fn_pthread_rwlock_clockwrlock(pthread_rwlock_t *, clockid_t, const struct timespec *),
	pthread_rwlock_clockwrlock)
MA_REAL(int ma_fn_pthread_rwlock_unlock(pthread_rwlock_t *), pthread_rwlock_unlock)
MA_REAL(int ma_fn_pthread_once(pthread_once_t *, void (*)(void)), pthread_once)
MA_REAL(void ma_fn_flockfile(FILE *), flockfile)
MA_REAL(int ma_fn_ftrylockfile(FILE *), ftrylockfile)
MA_REAL(void ma_fn_funlockfile(FILE *), funlockfile)
MA_REAL(int ma_fn___cxa_guard_acquire(int64_t *), __cxa_guard_acquire)
MA_REAL(void ma_fn___cxa_guard_release(int64_t *), __cxa_guard_release)
MA_REAL(void ma_fn___cxa_guard_abort(int64_t *), __cxa_guard_abort)

/* A robust mutex whose owner died is acquired too, with EOWNERDEAD. */
#define MA_MUTEX_HELD(r) ((r) == 0 || (r) == EOWNERDEAD)
MA_ACQUIRE(pthread_mutex_lock, (pthread_mutex_t *m), (m), MA_MUTEX_HELD(r))
MA_ACQUIRE(pthread_mutex_trylock, (pthread_mutex_t *m), (m), MA_MUTEX_HELD(r))
MA_ACQUIRE(pthread_mutex_timedlock, (pthread_mutex_t *m, const struct timespec *ts), (m, ts), MA_MUTEX_HELD(r))
MA_ACQUIRE(pthread_mutex_clocklock, (pthread_mutex_t *m, clockid_t c, const struct timespec *ts), (m, c, ts),
	   MA_MUTEX_HELD(r))
MA_RELEASE(pthread_mutex_unlock, (pthread_mutex_t *m), (m))
MA_ACQUIRE(pthread_spin_lock, (pthread_spinlock_t *s), (s), r == 0)
MA_ACQUIRE(pthread_spin_trylock, (pthread_spinlock_t *s), (s), r == 0)
MA_RELEASE(pthread_spin_unlock, (pthread_spinlock_t *s), (s))
MA_ACQUIRE(pthread_rwlock_rdlock, (pthread_rwlock_t *l), (l), r == 0)
MA_ACQUIRE(pthread_rwlock_tryrdlock, (pthread_rwlock_t *l), (l), r == 0)
MA_ACQUIRE(pthread_rwlock_timedrdlock, (pthread_rwlock_t *l, const struct timespec *ts), (l, ts), r == 0)
MA_ACQUIRE(pthread_rwlock_clockrdlock, (pthread_rwlock_t *l, clockid_t c, const struct timespec *ts), (l, c, ts),
	   r == 0)
MA_ACQUIRE(pthread_rwlock_wrlock, (pthread_rwlock_t *l), (l), r == 0)
MA_ACQUIRE(pthread_rwlock_trywrlock, (pthread_rwlock_t *l), (l), r == 0)
MA_ACQUIRE(pthread_rwlock_timedwrlock, (pthread_rwlock_t *l, const struct timespec *ts), (l, ts), r == 0)
MA_ACQUIRE(pthread_rwlock_clockwrlock, (pthread_rwlock_t *l, clockid_t c, const struct timespec *ts), (l, c, ts),
	   r == 0)
MA_RELEASE(pthread_rwlock_unlock, (pthread_rwlock_t *l), (l))
MA_ACQUIRE(ftrylockfile, (FILE *f), (f), r == 0)

/* The routine runs while callers of the same once wait for it in the kernel. */
MA_ACQUIRE(pthread_once, (pthread_once_t *o, void (*init)(void)), (o, init), 0)

void flockfile(FILE *f)
{
	ma_held_up();
	ma_real_flockfile()(f);
}

void funlockfile(FILE *f)
{
	ma_real_funlockfile()(f);
	ma_held_down(ma_lock_owner());
}

/*
 * C++ function-local statics: the thread that gets 1 runs the initialiser while others
 * wait for it in the kernel, until it calls release (done) or abort (it threw). The
 * guard is the Itanium C++ ABI's 64-bit word.
 */
int __cxa_guard_acquire(int64_t *g);
void __cxa_guard_release(int64_t *g);
void __cxa_guard_abort(int64_t *g);

MA_ACQUIRE(__cxa_guard_acquire, (int64_t *g), (g), r != 0)

void __cxa_guard_release(int64_t *g)
{
	ma_real___cxa_guard_release()(g);
	ma_held_down(ma_lock_owner());
}

void __cxa_guard_abort(int64_t *g)
{
	ma_real___cxa_guard_abort()(g);
	ma_held_down(ma_lock_owner());
}
