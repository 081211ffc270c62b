/**
 * @file marcel/compat.h
 * @brief The rest of the everyday Marcel API: output, random numbers, suspending
 * threads, scheduling parameters, VP sets, and the ABI check.
 */
#ifndef MARCEL_COMPAT_H
#define MARCEL_COMPAT_H

#include <stdarg.h>
#include <stdio.h>
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

/** @} */

/** @defgroup marcel_abi ABI check
 * @{ */

/** Version of the marcel ABI; changes whenever a public structure changes. */
#define MARCEL_ABI_VERSION 1UL
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
