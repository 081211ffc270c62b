/**
 * @file marcel/compat.h
 * @brief The rest of the everyday Marcel API: output, random numbers, suspending
 * threads, scheduling parameters, VP sets, clock, memory, the list of threads, fork,
 * and the ABI check.
 */
#ifndef MARCEL_COMPAT_H
#define MARCEL_COMPAT_H

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/types.h>
#include <marcel/types.h>
#include <marcel/vpset.h>
#include <marcel/sync.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup marcel_output Output
 * Calls of the stdio family that are safe to use from many threads at once (stdio locks
 * each stream per call, as Marcel guaranteed).
 * @{ */

/** printf() to stdout. @return as printf(). */
int marcel_printf(const char *format, ...) __attribute__((format(printf, 1, 2)));
/** fprintf(). @return as fprintf(). */
int marcel_fprintf(FILE *stream, const char *format, ...) __attribute__((format(printf, 2, 3)));
/** vfprintf(). @return as vfprintf(). */
int marcel_vfprintf(FILE *stream, const char *format, va_list ap);
/** snprintf(). @return as snprintf(). */
int marcel_snprintf(char *buf, size_t size, const char *format, ...) __attribute__((format(printf, 3, 4)));
/** puts(). @return as puts(). */
int marcel_puts(const char *s);
/** fflush(). @return as fflush(). */
int marcel_fflush(FILE *stream);

/** @} */

/** @defgroup marcel_misc Threads: more control
 * @{ */

/** Returns a pseudo-random number in 0..RAND_MAX from a generator private to the calling
 * thread (seeded from its identity), so threads do not contend on one state. */
long marcel_random(void);

/** Suspends @p t: it stops running at its next scheduling point (at once if it is the
 * caller or is ready) until marcel_resume(). Suspensions do not count: one resume
 * undoes any number of suspends.
 * @return 0; ESRCH if @p t is NULL or has ended; EPERM if the caller is not a marcel thread. */
int marcel_suspend(marcel_t t);
/** Lets a suspended thread run again (nothing if it is not suspended).
 * @return 0; ESRCH if @p t is NULL or has ended. */
int marcel_resume(marcel_t t);

/** Scheduling parameters. */
struct marcel_sched_param {
	int sched_priority; /**< priority, 0 .. ::MA_MAX_PRIO - 1 (lower is more urgent) */
};

/** Sets @p t's priority; takes effect the next time it is queued.
 * @return 0; EINVAL for a NULL @p param or a priority outside 0 .. ::MA_MAX_PRIO - 1;
 * ESRCH if @p t is NULL or has ended. */
int marcel_sched_setparam(marcel_t t, const struct marcel_sched_param *param);
/** Reads @p t's priority. @return 0; EINVAL/ESRCH as marcel_sched_setparam(). */
int marcel_sched_getparam(marcel_t t, struct marcel_sched_param *param);

/** Moves the calling thread onto the VPs of @p set: from now on it is queued on the run
 * queue of the smallest topology item holding them all (as with marcel_attr_setvpset(),
 * so a set that is not a whole item is widened to one); it migrates at once if its VP
 * does not serve that queue.
 * @return 0; EINVAL if @p set is NULL or names no existing VP; EPERM outside a marcel
 * thread. */
int marcel_apply_vpset(const marcel_vpset_t *set);

/** Stops scheduling threads on the VPs of @p set: their workers go idle and their
 * queued threads move to the nearest enabled queue (a thread running there finishes its
 * turn first). @return 0; EINVAL if @p set is NULL, names no existing VP, or would leave
 * no VP enabled. */
int marcel_disable_vps(const marcel_vpset_t *set);
/** Enables the VPs of @p set again. @return 0; EINVAL if @p set is NULL. */
int marcel_enable_vps(const marcel_vpset_t *set);

/** Marcel's "wait forever" for a timeout counted in scheduler ticks (`LONG_MAX`);
 * given to marcel_sem_timed_P() as milliseconds it waits practically forever. */
#define MARCEL_MAX_SCHEDULE_TIMEOUT LONG_MAX

/** Returns a clock in milliseconds, for measuring intervals (Marcel's `marcel_clock()`).
 * It never goes back; its origin is when the library was loaded, where Marcel's was
 * marcel_init(). It can be read from any thread, before marcel_init() too. */
unsigned long marcel_clock(void);

/** malloc() (Marcel's allocator for thread-shared memory): any thread may free the block.
 * @return the block, or NULL with `errno` ENOMEM. */
void *marcel_malloc(size_t size);
/** calloc(). @return as calloc(). */
void *marcel_calloc(size_t nmemb, size_t size);
/** realloc(). @return as realloc(). */
void *marcel_realloc(void *ptr, size_t size);
/** free() of a block from marcel_malloc(), marcel_calloc() or marcel_realloc(). */
void marcel_free(void *ptr);

/** Returns the number of processors (hardware threads) of the machine marcel runs on:
 * those of its topology (a synthetic `MARCEL_TOPOLOGY` included) once marcel_init() was
 * called, the online processors of the system before. */
unsigned marcel_get_nbprocessors(void);
/** Marcel's global variable holding the number of processors; here an expression that
 * reads marcel_get_nbprocessors() (so it cannot be assigned). */
#define marcel_nbprocessors (marcel_get_nbprocessors())

/** marcel_threadslist() filter: threads that may move between VPs (not bound to a VP set
 * by marcel_attr_setvpset()). */
#define MIGRATABLE_ONLY 1
/** marcel_threadslist() filter: threads bound to a VP set. */
#define NOT_MIGRATABLE_ONLY 2
/** marcel_threadslist() filter: detached threads. */
#define DETACHED_ONLY 4
/** marcel_threadslist() filter: joinable threads. */
#define NOT_DETACHED_ONLY 8
/** marcel_threadslist() filter: threads blocked (waiting for a primitive, sleeping or
 * suspended). */
#define BLOCKED_ONLY 16
/** marcel_threadslist() filter: threads not blocked. */
#define NOT_BLOCKED_ONLY 32
/** marcel_threadslist() filter: threads ready to run or running. */
#define READY_ONLY 64
/** marcel_threadslist() filter: threads neither ready nor running. */
#define NOT_READY_ONLY 128

/**
 * Lists the threads alive now (created and not ended; the main thread included), as
 * Marcel's `marcel_threadslist()`: stores up to @p max of them in @p pids and their
 * number (which may exceed @p max) in @p *nb. @p which is 0 (all) or an OR of the
 * filters above, each of which a listed thread must pass. The list is a snapshot: a
 * thread may end right after it was listed, so use the handles as any stale handle
 * (calls on an ended thread return ESRCH).
 * @return 0; EINVAL if @p nb is NULL, @p max is negative, @p pids is NULL while @p max is
 * not 0, or @p which holds an unknown bit; EPERM if the runtime is not running.
 */
int marcel_threadslist(int max, marcel_t *pids, int *nb, int which);

/** @} */

/** @defgroup marcel_fork Processes
 * @{ */

/**
 * fork(), with POSIX's rule for a process running several threads: the child runs only
 * the calling thread, on one kernel thread, and may only call async-signal-safe
 * functions until it calls exec or `_exit()`; marcel is not usable there (no worker
 * runs, so no marcel call but this one may be made). Marcel's child could go on
 * creating threads: here `MARCEL_FORK_ENABLED` stays undefined (marcel/features.h) and
 * such a program must exec. The parent goes on as before. Handlers registered with
 * marcel_atfork() run around it.
 * @return as fork(): the child's pid in the parent, 0 in the child, -1 with `errno` on
 * failure.
 */
pid_t marcel_fork(void);

/** pthread_atfork(): @p prepare runs in the forking thread before marcel_fork() (or
 * fork()), @p parent and @p child after it in the parent and in the child; any may be
 * NULL. @p child runs under the same restriction as the child of marcel_fork().
 * @return 0, or ENOMEM. */
int marcel_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void));

/** @} */

/** @defgroup marcel_abi ABI check
 * @{ */

/** Version of the marcel ABI; changes whenever a public structure changes. */
#define MARCEL_ABI_VERSION 2UL
/** A hash of the public headers a program was compiled against: the ABI version and
 * the sizes of the public structures. */
#define MARCEL_HEADER_HASH                                                                   \
	((MARCEL_ABI_VERSION << 48) ^ ((unsigned long)sizeof(marcel_mutex_t) << 40) ^        \
	 ((unsigned long)sizeof(marcel_cond_t) << 32) ^ ((unsigned long)sizeof(marcel_vpset_t) << 16) ^ \
	 ((unsigned long)sizeof(marcel_rwlock_t) << 8) ^ (unsigned long)sizeof(marcel_barrier_t))

/** Checks that the library was built from the same headers as the caller (pass
 * ::MARCEL_HEADER_HASH). @return 0; EINVAL after printing both hashes to stderr if they
 * differ (the program should not go on). */
int marcel_ensure_abi_compatibility(unsigned long header_hash);

/** @} */

#ifdef __cplusplus
}
#endif

#endif
