/* Internal header of libmarcel-preload: what every file of the interposer shares. */
#ifndef MA_PRELOAD_H
#define MA_PRELOAD_H

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <marcel.h>

#define MA_PRELOAD_API __attribute__((visibility("default")))
#define ma_pl_likely(x) __builtin_expect(!!(x), 1)
#define ma_pl_unlikely(x) __builtin_expect(!!(x), 0)

/* ---- calls from the runtime itself (forward.c) ---- */

/* Whether a return address lies in libmarcel or a library it builds on (hwloc, libffi):
 * their pthread calls reach this library too, as it comes first in the symbol lookup,
 * and must get the C library's kernel threads and mutexes. */
int ma_pl_from_runtime(const void *ret);
/* In an exported function (not in a helper: the return address must be its own). */
#define MA_PL_FROM_RUNTIME() ma_pl_from_runtime(__builtin_return_address(0))

/* The next definition of `name` after this library (the C library's, or libmarcel's
 * counting wrapper when libmarcel comes first); aborts naming it if there is none. */
void *ma_pl_real(const char *name);
#define MA_PL_REAL(fn)                                                                   \
	({                                                                               \
		static __typeof__(&fn) ma_pl_r_;                                         \
		__typeof__(&fn) ma_pl_f_ = __atomic_load_n(&ma_pl_r_, __ATOMIC_RELAXED); \
		if (!ma_pl_f_) {                                                         \
			ma_pl_f_ = (__typeof__(&fn))ma_pl_real(#fn);                     \
			__atomic_store_n(&ma_pl_r_, ma_pl_f_, __ATOMIC_RELAXED);         \
		}                                                                        \
		ma_pl_f_;                                                                \
	})

/* A call this library cannot honour on marcel threads: says so on stderr, once per
 * function, and returns err for the caller to return. */
int ma_pl_unsupported(const char *fn, const char *why, int err);

/* The pshared argument of a *_setpshared or *_init call: 0 for PTHREAD_PROCESS_PRIVATE,
 * ENOTSUP (said once, under the name fn) for PTHREAD_PROCESS_SHARED, EINVAL otherwise. */
int ma_pl_pshared(int pshared, const char *fn);

/* Counted for the MARCEL_PRELOAD_REPORT line printed at exit. */
extern unsigned long ma_pl_created;

/* ---- objects ---- */

/* Marks a pthread object whose bytes this library owns (initialised by it, or turned
 * into a marcel object at first use). */
#define MA_PL_MAGIC 0x6d61706cu /* "mapl" */
/* Transient value of a magic word while one thread converts the object. */
#define MA_PL_CONVERTING 1u

/* The marcel mutex inside a pthread mutex, converted at first use if it was statically
 * initialised (mutex.c); NULL for NULL. */
marcel_mutex_t *ma_pl_mutex(pthread_mutex_t *m);

/* The marcel attributes equivalent to a pthread_attr_t made by attr.c (NULL: defaults).
 * EINVAL if @p a was not initialised by pthread_attr_init. */
int ma_pl_attr_to_marcel(const pthread_attr_t *a, marcel_attr_t *out);

/* Fills a pthread_attr_t with the process's main stack (pthread_getattr_np of main,
 * the one marcel thread whose stack the C library knows). */
int ma_pl_attr_main(pthread_t main_kernel_thread, pthread_attr_t *a);

/* The deadline on clock `to` equivalent to `abstime` on clock `from` (the pthread_*clock*
 * calls name a clock, marcel's waits take their object's). EINVAL for an unknown clock
 * or a malformed time. */
int ma_pl_deadline_on(clockid_t from, const struct timespec *abstime, clockid_t to, struct timespec *out);

#endif
