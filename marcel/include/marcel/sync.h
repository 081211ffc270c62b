/**
 * @file marcel/sync.h
 * @brief Synchronisation between threads: mutexes, condition variables, semaphores,
 * barriers, read-write locks, spin locks, one-time initialisation and futexes.
 *
 * Every primitive works between marcel threads on any VPs and with kernel threads that
 * are not marcel threads (those block in the kernel). A marcel thread that waits gives
 * its worker to other threads; before blocking it may spin briefly (see `MARCEL_SPIN`
 * in the README and marcel_spin_notify_set()).
 *
 * After a failed marcel_init(), until one succeeds, a wait without a deadline that would
 * block (marcel_barrier_wait(), marcel_cond_wait(), marcel_sem_wait(), marcel_sem_P())
 * returns EPERM at once instead, leaving its object as it was: no marcel thread exists
 * that could end it, and a program that did not check marcel_init() would wait for ever.
 * Mutexes (their holder exists and runs) and timed waits (they end by themselves) are
 * unchanged. See marcel_init().
 *
 * Unless stated otherwise, functions return 0 or a POSIX error code (they do not set
 * `errno`). Objects are process-private: asking for `PSHARED` gives ENOTSUP. Timeouts
 * are absolute `struct timespec` values on the clock the object uses (CLOCK_REALTIME by
 * default), as in POSIX; a deadline already passed still tries the operation once.
 */
#ifndef MARCEL_SYNC_H
#define MARCEL_SYNC_H

#include <time.h>
#include <marcel/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup marcel_mutex Mutexes
 * @{ */

/** Mutex kind: relocking by the owner returns EDEADLK, unlocking by another thread EPERM
 * (POSIX leaves both undefined for this kind; marcel checks them because it knows the
 * owner anyway). */
#define MARCEL_MUTEX_NORMAL 0
/** Mutex kind: the owner may lock again; it must unlock as many times. */
#define MARCEL_MUTEX_RECURSIVE 1
/** Mutex kind: relocking returns EDEADLK, unlocking a mutex one does not own EPERM. */
#define MARCEL_MUTEX_ERRORCHECK 2
/** Default mutex kind (= ::MARCEL_MUTEX_NORMAL). */
#define MARCEL_MUTEX_DEFAULT MARCEL_MUTEX_NORMAL

/** Process-private object (the only kind marcel supports). */
#define MARCEL_PROCESS_PRIVATE 0
/** Process-shared object: refused with ENOTSUP. */
#define MARCEL_PROCESS_SHARED 1

/** Mutex attributes. */
typedef struct {
	int __kind;    /**< @private */
	int __pshared; /**< @private */
	unsigned __magic; /**< @private */
} marcel_mutexattr_t;

/** A mutex. Initialise with marcel_mutex_init() or ::MARCEL_MUTEX_INITIALIZER. */
typedef struct {
	/** @private 0 when free and nobody waits; else bit 3 while it is held, and the
	 * threads blocked in a lock, oldest first, as a condition's __waiters. */
	unsigned long long __state;
	void *__owner;          /**< @private */
	unsigned __count;       /**< @private recursion depth */
	unsigned short __spins; /**< @private adaptive spin estimate */
	unsigned short __kind;  /**< @private */
} marcel_mutex_t;

/** Static initialiser for a default mutex. */
#define MARCEL_MUTEX_INITIALIZER { 0, 0, 0, 0, MARCEL_MUTEX_NORMAL }
/** Static initialiser for a recursive mutex. */
#define MARCEL_RECURSIVE_MUTEX_INITIALIZER { 0, 0, 0, 0, MARCEL_MUTEX_RECURSIVE }
/** Static initialiser for an error-checking mutex. */
#define MARCEL_ERRORCHECK_MUTEX_INITIALIZER { 0, 0, 0, 0, MARCEL_MUTEX_ERRORCHECK }

/** Initialises @p attr with the defaults. @return 0; EINVAL if @p attr is NULL. */
int marcel_mutexattr_init(marcel_mutexattr_t *attr);
/** Destroys @p attr. @return 0; EINVAL if it is NULL or not initialised. */
int marcel_mutexattr_destroy(marcel_mutexattr_t *attr);
/** Sets the kind (::MARCEL_MUTEX_NORMAL, ::MARCEL_MUTEX_RECURSIVE,
 * ::MARCEL_MUTEX_ERRORCHECK). @return 0; EINVAL for another value or a bad @p attr. */
int marcel_mutexattr_settype(marcel_mutexattr_t *attr, int kind);
/** Reads the kind into @p kind. @return 0; EINVAL for NULL arguments. */
int marcel_mutexattr_gettype(const marcel_mutexattr_t *attr, int *kind);
/** Accepts ::MARCEL_PROCESS_PRIVATE. @return 0; ENOTSUP for ::MARCEL_PROCESS_SHARED;
 * EINVAL otherwise. */
int marcel_mutexattr_setpshared(marcel_mutexattr_t *attr, int pshared);
/** Reads the sharing mode. @return 0; EINVAL for NULL arguments. */
int marcel_mutexattr_getpshared(const marcel_mutexattr_t *attr, int *pshared);

/** Initialises @p m (@p attr may be NULL for the defaults).
 * @return 0; EINVAL for a NULL @p m or an uninitialised @p attr. */
int marcel_mutex_init(marcel_mutex_t *m, const marcel_mutexattr_t *attr);
/** Destroys @p m. @return 0; EBUSY if it is held (it stays usable); EINVAL if NULL. */
int marcel_mutex_destroy(marcel_mutex_t *m);
/** Locks @p m, waiting as long as needed.
 * @return 0; EDEADLK if the caller holds it (normal and error-checking kinds); EAGAIN
 * if a recursive mutex's depth would overflow; EINVAL if NULL. */
int marcel_mutex_lock(marcel_mutex_t *m);
/** Locks @p m if it is free (or held by the caller, recursive kind).
 * @return 0; EBUSY if another thread (or, non-recursive, the caller) holds it. */
int marcel_mutex_trylock(marcel_mutex_t *m);
/** Locks @p m, giving up at @p abstime (CLOCK_REALTIME).
 * @return as marcel_mutex_lock(); ETIMEDOUT; EINVAL if @p abstime is NULL or its
 * `tv_nsec` is outside 0..999999999. */
int marcel_mutex_timedlock(marcel_mutex_t *m, const struct timespec *abstime);
/** Unlocks @p m. @return 0; EPERM if the caller does not hold it; EINVAL if NULL. */
int marcel_mutex_unlock(marcel_mutex_t *m);

/** Marcel's recursive mutex type (a ::marcel_mutex_t of the recursive kind). */
typedef marcel_mutex_t marcel_recursivemutex_t;
/** Attributes of a recursive mutex. */
typedef marcel_mutexattr_t marcel_recursivemutexattr_t;
/** Static initialiser for a ::marcel_recursivemutex_t. */
#define MARCEL_RECURSIVEMUTEX_INITIALIZER MARCEL_RECURSIVE_MUTEX_INITIALIZER
/** Initialises recursive mutex attributes. @return as marcel_mutexattr_init(). */
int marcel_recursivemutexattr_init(marcel_recursivemutexattr_t *attr);
/** Destroys recursive mutex attributes. @return as marcel_mutexattr_destroy(). */
int marcel_recursivemutexattr_destroy(marcel_recursivemutexattr_t *attr);
/** Initialises a recursive mutex (whatever kind @p attr names). @return as
 * marcel_mutex_init(). */
int marcel_recursivemutex_init(marcel_recursivemutex_t *m, const marcel_recursivemutexattr_t *attr);
/** Destroys a recursive mutex. @return as marcel_mutex_destroy(). */
int marcel_recursivemutex_destroy(marcel_recursivemutex_t *m);
/** Locks a recursive mutex. @return the caller's recursion depth after locking (>= 1),
 * as Marcel did; a negative POSIX code (-EINVAL, -EAGAIN) on error. */
int marcel_recursivemutex_lock(marcel_recursivemutex_t *m);
/** Tries a recursive mutex. @return the depth (>= 1) on success, 0 if another thread
 * holds it, a negative POSIX code on error. */
int marcel_recursivemutex_trylock(marcel_recursivemutex_t *m);
/** Unlocks a recursive mutex once. @return the depth left (0: released); -EPERM if the
 * caller does not hold it. */
int marcel_recursivemutex_unlock(marcel_recursivemutex_t *m);

/** @} */

/** @defgroup marcel_cond Condition variables
 * @{ */

/** Condition variable attributes. */
typedef struct {
	int __clock;   /**< @private */
	int __pshared; /**< @private */
	unsigned __magic; /**< @private */
} marcel_condattr_t;

/** A condition variable. Initialise with marcel_cond_init() or ::MARCEL_COND_INITIALIZER
 * (all-zero bytes are one too, on CLOCK_REALTIME). */
typedef struct {
	/** @private The threads blocked on it, oldest first: 0 if none, else the first one's
	 * wait node with flags in the low bits (the lock-free single-waiter path and the list
	 * of marcel/ma_waitq.h). */
	unsigned long long __waiters;
	int __clock;        /**< @private */
	unsigned __pad;     /**< @private */
} marcel_cond_t;

/** Static initialiser (timeouts on CLOCK_REALTIME). */
#define MARCEL_COND_INITIALIZER { 0, CLOCK_REALTIME, 0 }

/** Initialises @p attr (clock CLOCK_REALTIME). @return 0; EINVAL if NULL. */
int marcel_condattr_init(marcel_condattr_t *attr);
/** Destroys @p attr. @return 0; EINVAL if NULL or not initialised. */
int marcel_condattr_destroy(marcel_condattr_t *attr);
/** Chooses the clock of marcel_cond_timedwait() deadlines.
 * @return 0; EINVAL unless @p clock is CLOCK_REALTIME or CLOCK_MONOTONIC. */
int marcel_condattr_setclock(marcel_condattr_t *attr, clockid_t clock);
/** Reads the clock. @return 0; EINVAL for NULL arguments. */
int marcel_condattr_getclock(const marcel_condattr_t *attr, clockid_t *clock);
/** Accepts ::MARCEL_PROCESS_PRIVATE. @return 0; ENOTSUP for shared; EINVAL otherwise. */
int marcel_condattr_setpshared(marcel_condattr_t *attr, int pshared);
/** Reads the sharing mode. @return 0; EINVAL for NULL arguments. */
int marcel_condattr_getpshared(const marcel_condattr_t *attr, int *pshared);

/** Initialises @p c (@p attr may be NULL). @return 0; EINVAL for NULL/uninitialised. */
int marcel_cond_init(marcel_cond_t *c, const marcel_condattr_t *attr);
/** Destroys @p c. Threads woken by a signal or broadcast no longer read @p c, even
 * before they return: it may be destroyed (and its memory reused) as soon as none is
 * blocked on it.
 * @return 0; EBUSY if a thread is still blocked on @p c (it stays usable). */
int marcel_cond_destroy(marcel_cond_t *c);
/** Atomically releases @p m and waits for a signal, then relocks @p m. Spurious wake-ups
 * are possible, as in POSIX: wait in a loop on your predicate.
 * @return 0; EPERM if the caller does not hold @p m, or, with @p m still held, after a
 * failed marcel_init() (see the top of this file); EINVAL for NULL arguments. */
int marcel_cond_wait(marcel_cond_t *c, marcel_mutex_t *m);
/** marcel_cond_wait() with a deadline on the cond's clock.
 * @return as marcel_cond_wait(); ETIMEDOUT (with @p m held again); EINVAL for a bad
 * @p abstime. */
int marcel_cond_timedwait(marcel_cond_t *c, marcel_mutex_t *m, const struct timespec *abstime);
/** Wakes one waiter, if any. @return 0; EINVAL if NULL. */
int marcel_cond_signal(marcel_cond_t *c);
/** Wakes every waiter. @return 0; EINVAL if NULL. */
int marcel_cond_broadcast(marcel_cond_t *c);

/** @} */

/** @defgroup marcel_sem Semaphores
 * Two interfaces share one type: Marcel's `P`/`V` (return nothing or a success flag) and
 * the POSIX-like `marcel_sem_wait` family, which like POSIX `sem_*` returns 0, or -1 and
 * sets `errno`.
 * @{ */

/** A counting semaphore. Initialise with marcel_sem_init(), marcel_sem_posix_init() or
 * ::MARCEL_SEM_INITIALIZER (all-zero bytes are one too, with a count of 0). */
typedef struct {
	/** @private One word: 0 (no unit, nobody waits), the count (shifted left by 4, bit 2
	 * set), or the threads blocked on it, oldest first, as a condition's __waiters. A
	 * post hands its unit straight to the oldest waiter. */
	unsigned long long __state;
} marcel_sem_t;

/** Static initialiser with count @p n. */
#define MARCEL_SEM_INITIALIZER(n) { (unsigned long long)(n) << 4 | 4 }
/** Largest count a semaphore can hold. */
#define MARCEL_SEM_VALUE_MAX 0x7fffffff

/** Initialises @p s with count @p initial. @return 0; EINVAL if @p s is NULL or
 * @p initial is negative. */
int marcel_sem_init(marcel_sem_t *s, int initial);
/** Destroys @p s. A thread woken by a post no longer reads @p s, even before it returns.
 * @return 0; EBUSY if threads are blocked on it. */
int marcel_sem_destroy(marcel_sem_t *s);
/** Takes one unit, waiting while the count is 0. After a failed marcel_init() it does
 * not wait (see the top of this file): with the count at 0 it returns without a unit and
 * sets `errno` to EPERM. */
void marcel_sem_P(marcel_sem_t *s);
/** Gives one unit back, waking a waiter if any. */
void marcel_sem_V(marcel_sem_t *s);
/** Takes one unit if available. @return 1 if it did, 0 otherwise. */
int marcel_sem_try_P(marcel_sem_t *s);
/** Takes one unit, waiting at most @p timeout_ms milliseconds.
 * @return 1 if it did, 0 on timeout (then `errno` is ETIMEDOUT). */
int marcel_sem_timed_P(marcel_sem_t *s, unsigned long timeout_ms);

/** POSIX-like init. @return 0, or -1 with `errno` EINVAL (bad @p s or @p value above
 * ::MARCEL_SEM_VALUE_MAX) or ENOTSUP (@p pshared non-zero). */
int marcel_sem_posix_init(marcel_sem_t *s, int pshared, unsigned value);
/** Waits for a unit. @return 0, or -1 with `errno` EINVAL, or with `errno` EPERM and no
 * unit taken after a failed marcel_init() (see the top of this file). */
int marcel_sem_wait(marcel_sem_t *s);
/** Takes a unit if available. @return 0, or -1 with `errno` EAGAIN (none) or EINVAL. */
int marcel_sem_trywait(marcel_sem_t *s);
/** Waits for a unit until @p abstime (CLOCK_REALTIME).
 * @return 0, or -1 with `errno` ETIMEDOUT or EINVAL (bad @p abstime). */
int marcel_sem_timedwait(marcel_sem_t *s, const struct timespec *abstime);
/** Gives a unit back. @return 0, or -1 with `errno` EOVERFLOW (at the maximum) or EINVAL. */
int marcel_sem_post(marcel_sem_t *s);
/** Reads the count (0 when threads are waiting). @return 0, or -1 with `errno` EINVAL. */
int marcel_sem_getvalue(marcel_sem_t *s, int *value);

/** Returned by marcel_sem_open() on failure. */
#define MARCEL_SEM_FAILED ((marcel_sem_t *)0)

/**
 * Opens the named semaphore @p name, as POSIX `sem_open()` does, except that names are
 * private to the process, as with Marcel (its named semaphores were never shared
 * between processes either): two processes opening one name get two semaphores.
 * With `O_CREAT` in @p oflag, two more arguments follow, `mode_t mode` (accepted and
 * ignored: nothing outside the process can open the name) and `unsigned value` (the
 * initial count), and the semaphore is created if the name is not linked; with `O_CREAT |
 * O_EXCL`, it must not be. Every successful open must be matched by a marcel_sem_close().
 * Names compare without their leading slashes (`"/s"` and `"s"` are one name).
 * @return the semaphore, or ::MARCEL_SEM_FAILED with `errno` EINVAL (@p name NULL, empty
 * or holding a `/` after its leading ones; @p value above ::MARCEL_SEM_VALUE_MAX),
 * ENAMETOOLONG (@p name longer than `NAME_MAX`), ENOENT (no `O_CREAT` and the name is
 * not linked), EEXIST (`O_CREAT | O_EXCL` and it is), or ENOMEM.
 */
marcel_sem_t *marcel_sem_open(const char *name, int oflag, ...);
/** Closes a semaphore from marcel_sem_open(). It is freed once it is closed as many
 * times as it was opened and its name is unlinked.
 * @return 0, or -1 with `errno` EINVAL if @p s is not an open named semaphore. */
int marcel_sem_close(marcel_sem_t *s);
/** Removes @p name: later opens without `O_CREAT` fail, and an open with `O_CREAT` makes
 * a new semaphore; the one already open lives until it is closed.
 * @return 0, or -1 with `errno` ENOENT (not linked), EINVAL or ENAMETOOLONG (bad @p name,
 * as for marcel_sem_open()). */
int marcel_sem_unlink(const char *name);

/** @} */

/** @defgroup marcel_barrier Barriers
 * @{ */

/** Returned by marcel_barrier_wait() to exactly one thread of each round. */
#define MARCEL_BARRIER_SERIAL_THREAD (-1)
/** Barrier mode: waiting threads block, freeing their worker (default). */
#define MARCEL_BARRIER_SLEEP_MODE 0
/** Barrier mode: waiting threads keep yielding; lower latency when each VP has other
 * ready work, but they stay runnable. */
#define MARCEL_BARRIER_YIELD_MODE 1
/** Marcel's type of a barrier mode (::MARCEL_BARRIER_SLEEP_MODE or
 * ::MARCEL_BARRIER_YIELD_MODE). An `int`, so that a variable of this type can be passed
 * to marcel_barrierattr_getmode() as well as an `int`. */
typedef int marcel_barrier_mode_t;

/** Barrier attributes. */
typedef struct {
	int __mode;    /**< @private */
	int __pshared; /**< @private */
	unsigned __magic; /**< @private */
} marcel_barrierattr_t;

/** A reusable barrier. */
typedef struct {
	int __lock;        /**< @private */
	unsigned __count;  /**< @private threads per round */
	unsigned __arrived; /**< @private */
	unsigned __gen;    /**< @private round number */
	int __mode;        /**< @private */
	unsigned __pad;    /**< @private */
	/** @private The threads of this round blocked in it, newest first: a list of the
	 * wait nodes of marcel/ma_waitq.h, under __lock. */
	unsigned long long __waiters;
} marcel_barrier_t;

/** Initialises @p attr (sleep mode). @return 0; EINVAL if NULL. */
int marcel_barrierattr_init(marcel_barrierattr_t *attr);
/** Destroys @p attr. @return 0; EINVAL if NULL or not initialised. */
int marcel_barrierattr_destroy(marcel_barrierattr_t *attr);
/** Sets ::MARCEL_BARRIER_SLEEP_MODE or ::MARCEL_BARRIER_YIELD_MODE. @return 0; EINVAL. */
int marcel_barrierattr_setmode(marcel_barrierattr_t *attr, int mode);
/** Reads the mode. @return 0; EINVAL for NULL arguments. */
int marcel_barrierattr_getmode(const marcel_barrierattr_t *attr, int *mode);
/** Accepts ::MARCEL_PROCESS_PRIVATE. @return 0; ENOTSUP for shared; EINVAL otherwise. */
int marcel_barrierattr_setpshared(marcel_barrierattr_t *attr, int pshared);
/** Reads the sharing mode. @return 0; EINVAL for NULL arguments. */
int marcel_barrierattr_getpshared(const marcel_barrierattr_t *attr, int *pshared);

/** Initialises @p b for rounds of @p count threads (@p attr may be NULL).
 * @return 0; EINVAL if @p count is 0 or an argument is bad. */
int marcel_barrier_init(marcel_barrier_t *b, const marcel_barrierattr_t *attr, unsigned count);
/** Destroys @p b. @return 0; EBUSY if a round is in progress (it stays usable). */
int marcel_barrier_destroy(marcel_barrier_t *b);
/** Waits until @p count threads have called it in this round.
 * @return ::MARCEL_BARRIER_SERIAL_THREAD to one of them, 0 to the others; EINVAL if NULL;
 * EPERM, without arriving, for a caller that would wait after a failed marcel_init() (see
 * the top of this file). */
int marcel_barrier_wait(marcel_barrier_t *b);
/** Changes the number of threads per round, from the next round on (or this one, if
 * fewer have arrived). @return 0; EINVAL if @p count is 0 or not above the number that
 * already arrived. */
int marcel_barrier_setcount(marcel_barrier_t *b, unsigned count);
/** Adds @p delta (may be negative) to the number of threads per round.
 * @return as marcel_barrier_setcount(). */
int marcel_barrier_addcount(marcel_barrier_t *b, int delta);
/** Reads the number of threads per round. @return 0; EINVAL for NULL arguments. */
int marcel_barrier_getcount(const marcel_barrier_t *b, unsigned *count);

/** @} */

/** @defgroup marcel_rwlock Read-write locks
 * Writers have priority: once a writer waits, new readers wait too, except a thread
 * that already reads (it may take the lock for reading again). A marcel thread's read
 * holds are recorded (up to 4 different locks at once), which lets marcel report
 * EPERM for unlocking a lock one does not hold and EDEADLK for asking to write while
 * reading; beyond 4 locks, or from a kernel thread that is not a marcel thread, those
 * two misuses are not diagnosed.
 * @{ */

/** Read-write lock attributes. */
typedef struct {
	int __pshared; /**< @private */
	unsigned __magic; /**< @private */
} marcel_rwlockattr_t;

/** A read-write lock. */
typedef struct {
	int __lock;          /**< @private protects the counters */
	int __readers;       /**< @private readers holding it */
	void *__writer;      /**< @private the writer holding it */
	unsigned __wwaiting; /**< @private */
	unsigned __rwaiting; /**< @private */
	unsigned __rseq;     /**< @private */
	unsigned __wseq;     /**< @private */
} marcel_rwlock_t;

/** Static initialiser. */
#define MARCEL_RWLOCK_INITIALIZER { 0, 0, 0, 0, 0, 0, 0 }

/** Initialises @p attr. @return 0; EINVAL if NULL. */
int marcel_rwlockattr_init(marcel_rwlockattr_t *attr);
/** Destroys @p attr. @return 0; EINVAL if NULL or not initialised. */
int marcel_rwlockattr_destroy(marcel_rwlockattr_t *attr);
/** Accepts ::MARCEL_PROCESS_PRIVATE. @return 0; ENOTSUP for shared; EINVAL otherwise. */
int marcel_rwlockattr_setpshared(marcel_rwlockattr_t *attr, int pshared);
/** Reads the sharing mode. @return 0; EINVAL for NULL arguments. */
int marcel_rwlockattr_getpshared(const marcel_rwlockattr_t *attr, int *pshared);

/** Initialises @p l (@p attr may be NULL). @return 0; EINVAL for bad arguments. */
int marcel_rwlock_init(marcel_rwlock_t *l, const marcel_rwlockattr_t *attr);
/** Destroys @p l. @return 0; EBUSY if held or waited for (it stays usable). */
int marcel_rwlock_destroy(marcel_rwlock_t *l);
/** Takes @p l for reading. @return 0; EDEADLK if the caller holds it for writing;
 * EAGAIN if the reader count would overflow. */
int marcel_rwlock_rdlock(marcel_rwlock_t *l);
/** Takes @p l for reading if no writer holds or waits for it. @return 0; EBUSY (also
 * if the caller holds it for writing). */
int marcel_rwlock_tryrdlock(marcel_rwlock_t *l);
/** marcel_rwlock_rdlock() with a CLOCK_REALTIME deadline. @return also ETIMEDOUT;
 * EINVAL for a bad @p abstime. */
int marcel_rwlock_timedrdlock(marcel_rwlock_t *l, const struct timespec *abstime);
/** Takes @p l for writing. @return 0; EDEADLK if the caller holds it (for writing, or
 * for reading as far as recorded). */
int marcel_rwlock_wrlock(marcel_rwlock_t *l);
/** Takes @p l for writing if nobody holds it. @return 0; EBUSY (also if the caller
 * holds it). */
int marcel_rwlock_trywrlock(marcel_rwlock_t *l);
/** marcel_rwlock_wrlock() with a CLOCK_REALTIME deadline. @return also ETIMEDOUT;
 * EINVAL for a bad @p abstime. */
int marcel_rwlock_timedwrlock(marcel_rwlock_t *l, const struct timespec *abstime);
/** Releases the caller's hold (read or write). @return 0; EPERM if it holds none. */
int marcel_rwlock_unlock(marcel_rwlock_t *l);

/** @} */

/** @defgroup marcel_spin Spin locks
 * For very short critical sections. A waiter keeps its worker; after a while it yields,
 * so a holder that was descheduled on the same VP still gets to run.
 * @{ */

/** A spin lock. */
typedef struct {
	int __lock;    /**< @private */
	void *__owner; /**< @private */
} marcel_spinlock_t;

/** Static initialiser. */
#define MARCEL_SPINLOCK_INITIALIZER { 0, 0 }

/** Initialises @p l. @return 0; EINVAL if NULL or @p pshared is neither sharing mode;
 * ENOTSUP for ::MARCEL_PROCESS_SHARED. */
int marcel_spin_init(marcel_spinlock_t *l, int pshared);
/** Destroys @p l. @return 0; EBUSY if held. */
int marcel_spin_destroy(marcel_spinlock_t *l);
/** Takes @p l. @return 0; EDEADLK if the caller holds it. */
int marcel_spin_lock(marcel_spinlock_t *l);
/** Takes @p l if free. @return 0; EBUSY. */
int marcel_spin_trylock(marcel_spinlock_t *l);
/** Releases @p l. @return 0; EPERM if the caller does not hold it. */
int marcel_spin_unlock(marcel_spinlock_t *l);

/** @} */

/** @defgroup marcel_once One-time initialisation
 * @{ */

/** Control word of marcel_once(). */
typedef struct {
	int __state; /**< @private 0 not run, 1 running, 2 done */
} marcel_once_t;

/** Static initialiser of a ::marcel_once_t. */
#define MARCEL_ONCE_INIT { 0 }
/** Marcel's name of ::MARCEL_ONCE_INIT. */
#define MARCEL_ONCE_INITIALIZER MARCEL_ONCE_INIT

/** Runs @p init exactly once per @p once; concurrent callers wait until it has returned.
 * @return 0; EINVAL for NULL arguments. */
int marcel_once(marcel_once_t *once, void (*init)(void));

/** @} */

/** @defgroup marcel_futex Futexes
 * Marcel's wait queue keyed by an address: the building block of the primitives above,
 * for programs that build their own.
 * @{ */

/** A futex: only its address matters. */
typedef struct {
	unsigned long __unused; /**< @private */
} marcel_futex_t;

/** Static initialiser. */
#define MARCEL_FUTEX_INITIALIZER { 0 }
/** marcel_futex_wait() timeout meaning "no timeout". */
#define MARCEL_FUTEX_NO_TIMEOUT (~0UL)

/** Waits on @p futex if `(*addr & mask) == val` (checked atomically with respect to
 * marcel_futex_wake()), until woken or @p timeout_us microseconds have passed.
 * @return 0 if woken; EWOULDBLOCK if the value differed; ETIMEDOUT; EINVAL for NULL. */
int marcel_futex_wait(marcel_futex_t *futex, unsigned long *addr, unsigned long mask,
		      unsigned long val, unsigned long timeout_us);
/** Wakes up to @p nb threads waiting on @p futex. @return how many were woken. */
int marcel_futex_wake(marcel_futex_t *futex, unsigned nb);

/** @} */

/** @defgroup marcel_spinpolicy Waiting policy
 * @{ */

/** Called by a thread when it starts spinning for a primitive (`spinning` = 1) and when
 * it stops (0), so a scheduling strategy can tell spinning from working. Runs in the
 * spinning thread; it must not block. */
typedef void (*marcel_spin_notify_t)(marcel_t self, int spinning);

/** Installs @p fn (NULL removes it); returns the previous one. */
marcel_spin_notify_t marcel_spin_notify_set(marcel_spin_notify_t fn);

/** @} */

#ifdef __cplusplus
}
#endif

#endif
