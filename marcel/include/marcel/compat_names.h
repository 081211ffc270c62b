/**
 * @file marcel/compat_names.h
 * @brief Marcel's spellings that share a name with a marcel call of another signature,
 * and Marcel's names that cannot be honoured here (each a build error naming what to
 * use instead).
 *
 * Included last by `<marcel.h>`: its macros pick, by the number of arguments, between
 * Marcel's form and marcel's form of one name, so programs written for either compile
 * unchanged.
 */
#ifndef MARCEL_COMPAT_NAMES_H
#define MARCEL_COMPAT_NAMES_H

#include <marcel/types.h>
#include <marcel/bubble.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup marcel_test_codes Test exit codes (Marcel)
 * @{ */
/** Exit status of a Marcel test program that passed. */
#define MARCEL_TEST_SUCCEEDED 0
/** Exit status of a Marcel test program that had nothing to test here (Automake's
 * "skipped"). */
#define MARCEL_TEST_SKIPPED 77
/** @} */

/** @defgroup marcel_stats_marcel Statistics, Marcel's form
 * Marcel read a statistic through a pointer, `*(long *)marcel_task_stats_get(t, LAST_VP)`,
 * and wrote one with `marcel_task_stats_set(long, t, LOAD, 10)`. Both forms work here:
 * marcel_task_stats_get() and marcel_bubble_stats_get() with two arguments are Marcel's
 * (they call marcel_task_stats_ptr() and marcel_bubble_stats_ptr()), with three they are
 * marcel's (marcel/bubble.h); marcel_task_stats_set() with four arguments is Marcel's,
 * with three marcel's.
 * @{ */

/** Marcel's statistics. */
typedef enum marcel_stats_type {
	LAST_VP, /**< VP the entity last ran on (-1: never), read-only. */
	LOAD,    /**< Load hint (::MARCEL_STATS_LOAD): writable with marcel_task_stats_set(). */
	MEMNODE, /**< Bytes of attached memory on each NUMA node: an array of marcel_nbnodes()
		      longs (at most ::MARCEL_STATS_MAX_NODES), read-only. */
} marcel_stats_type_t;

/** NUMA nodes a ::MEMNODE array reports (the first ones). */
#define MARCEL_STATS_MAX_NODES 64

/**
 * Reads statistic @p type of thread @p t (the caller if NULL), Marcel's way: returns a
 * pointer to a `long` (for ::MEMNODE, to an array of them) holding its value now. The
 * storage belongs to the calling thread and keeps the values until that thread's next
 * call of marcel_task_stats_ptr() or marcel_bubble_stats_ptr() for the same @p type;
 * writing through the pointer changes nothing (use marcel_task_stats_set() with four
 * arguments, which is honoured). A thread's ::MEMNODE is its bubble's, where
 * marcel_task_attach_memory() puts it.
 * @return the pointer, or NULL with `errno` EINVAL (@p type unknown, or NULL @p t outside
 * a marcel thread), ESRCH (@p t ended) or ENOMEM.
 */
long *marcel_task_stats_ptr(marcel_t t, marcel_stats_type_t type);

/** marcel_task_stats_ptr() for bubble @p b (its statistics synthesized over its subtree).
 * @return the pointer, or NULL with `errno` EINVAL (NULL or uninitialised @p b, @p type
 * unknown) or ENOMEM. */
long *marcel_bubble_stats_ptr(marcel_bubble_t *b, marcel_stats_type_t type);

/** Writes statistic @p type of thread @p t (the caller if NULL): only ::LOAD is writable
 * (a negative value unsets the hint, as marcel_task_stats_set() with three arguments).
 * @return 0; EINVAL for another statistic, or NULL @p t outside a marcel thread; ESRCH if
 * @p t ended. */
int marcel_task_stats_put(marcel_t t, marcel_stats_type_t type, long value);

/** Adds @p delta to statistic @p type of thread @p t (Marcel's `marcel_task_stats_add`
 * and `_sub`). @return as marcel_task_stats_put(). */
int marcel_task_stats_adjust(marcel_t t, marcel_stats_type_t type, long delta);

/** @cond MARCEL_COMPAT_PRIVATE */
#define MARCEL_COMPAT_PICK3_(a, b, c, name, ...) name
#define MARCEL_COMPAT_PICK4_(a, b, c, d, name, ...) name
/* Never defined: a call with a wrong number of arguments is a build error. */
int marcel_compat_wrong_number_of_arguments_(void)
	__attribute__((error("wrong number of arguments for a Marcel statistics call")));
#define MARCEL_COMPAT_ARGC_ERROR_(...) marcel_compat_wrong_number_of_arguments_()
#define MARCEL_TASK_STATS_SET4_(cast, t, type, val) marcel_task_stats_put((t), (type), (long)(cast)(val))
/** @endcond */

/** Marcel's `marcel_task_stats_get(t, type)` (marcel_task_stats_ptr()), or marcel's
 * `marcel_task_stats_get(t, which, &value)` (marcel/bubble.h). */
#define marcel_task_stats_get(...)                                                          \
	MARCEL_COMPAT_PICK3_(__VA_ARGS__, marcel_task_stats_get, marcel_task_stats_ptr,     \
			     MARCEL_COMPAT_ARGC_ERROR_, MARCEL_COMPAT_ARGC_ERROR_)(__VA_ARGS__)
/** Marcel's `marcel_bubble_stats_get(b, type)` (marcel_bubble_stats_ptr()), or marcel's
 * `marcel_bubble_stats_get(b, which, &value)`. */
#define marcel_bubble_stats_get(...)                                                        \
	MARCEL_COMPAT_PICK3_(__VA_ARGS__, marcel_bubble_stats_get, marcel_bubble_stats_ptr, \
			     MARCEL_COMPAT_ARGC_ERROR_, MARCEL_COMPAT_ARGC_ERROR_)(__VA_ARGS__)
/** Marcel's `marcel_task_stats_set(cast, t, type, value)` (marcel_task_stats_put()), or
 * marcel's `marcel_task_stats_set(t, which, value)`. */
#define marcel_task_stats_set(...)                                                          \
	MARCEL_COMPAT_PICK4_(__VA_ARGS__, MARCEL_TASK_STATS_SET4_, marcel_task_stats_set,   \
			     MARCEL_COMPAT_ARGC_ERROR_, MARCEL_COMPAT_ARGC_ERROR_,              \
			     MARCEL_COMPAT_ARGC_ERROR_)(__VA_ARGS__)
/** Marcel's `marcel_task_stats_add(cast, t, type, delta)`. */
#define marcel_task_stats_add(cast, t, type, val) marcel_task_stats_adjust((t), (type), (long)(cast)(val))
/** Marcel's `marcel_task_stats_sub(cast, t, type, delta)`. */
#define marcel_task_stats_sub(cast, t, type, val) marcel_task_stats_adjust((t), (type), -(long)(cast)(val))

/** @} */

/** @defgroup marcel_unhonoured Marcel names that are build errors
 * These Marcel names have no honest meaning here; each expands to a call of a function
 * that is never defined and carries GCC's `error` attribute, so the compiler stops with
 * a message naming what to use instead, rather than letting the program run without the
 * feature.
 * @{ */

/** @cond MARCEL_COMPAT_PRIVATE */
#define MARCEL_COMPAT_UNHONOURED_(name, msg) int marcel_unhonoured_##name(void) __attribute__((error(msg)))
MARCEL_COMPAT_UNHONOURED_(kill_other_threads_np,
			  "marcel_kill_other_threads_np: marcel cannot stop other threads; after marcel_fork() "
			  "the child runs only the caller: exec or _exit there");
MARCEL_COMPAT_UNHONOURED_(bubble_sched_init,
			  "Marcel's marcel_bubble_<name>_sched_init takes Marcel's internal topology levels: "
			  "use marcel_bubble_sched_instantiate(&marcel_bubble_<name>_sched_class, s)");
/** @endcond */

/** No equivalent: marcel_fork()'s child must exec or exit. */
#define marcel_kill_other_threads_np(...) marcel_unhonoured_kill_other_threads_np()
/** Use marcel_bubble_sched_instantiate() with ::marcel_bubble_cache_sched_class. */
#define marcel_bubble_cache_sched_init(...) marcel_unhonoured_bubble_sched_init()
/** Use marcel_bubble_sched_instantiate() with ::marcel_bubble_memory_sched_class. */
#define marcel_bubble_memory_sched_init(...) marcel_unhonoured_bubble_sched_init()
/** Use marcel_bubble_sched_instantiate() with ::marcel_bubble_steal_sched_class. */
#define marcel_bubble_steal_sched_init(...) marcel_unhonoured_bubble_sched_init()
/** Use marcel_bubble_sched_instantiate() with ::marcel_bubble_spread_sched_class. */
#define marcel_bubble_spread_sched_init(...) marcel_unhonoured_bubble_sched_init()
/** Use marcel_bubble_sched_instantiate() with ::marcel_bubble_gang_sched_class. */
#define marcel_bubble_gang_sched_init(...) marcel_unhonoured_bubble_sched_init()
/** Use marcel_bubble_sched_instantiate() with ::marcel_bubble_explode_sched_class. */
#define marcel_bubble_explode_sched_init(...) marcel_unhonoured_bubble_sched_init()
/** Programs cannot define strategies (Marcel's needed its internal scheduler interface):
 * choose one with marcel_lookup_bubble_scheduler_class(). A declaration, as Marcel's. */
#define MARCEL_DEFINE_BUBBLE_SCHEDULER_CLASS(...)                                               \
	_Static_assert(0, "MARCEL_DEFINE_BUBBLE_SCHEDULER_CLASS: programs cannot define bubble "  \
			  "schedulers; choose one with marcel_lookup_bubble_scheduler_class()")
/** Same as ::MARCEL_DEFINE_BUBBLE_SCHEDULER_CLASS. */
#define MARCEL_DECLARE_BUBBLE_SCHEDULER_CLASS(...)                                              \
	_Static_assert(0, "MARCEL_DECLARE_BUBBLE_SCHEDULER_CLASS: programs cannot define bubble " \
			  "schedulers; choose one with marcel_lookup_bubble_scheduler_class()")

/** @} */

#ifdef __cplusplus
}
#endif

#endif
