/**
 * @file marcel/features.h
 * @brief The feature macros Marcel programs test before using a feature.
 *
 * Programs written for PM2's Marcel guard optional parts with `#ifdef MARCEL_KEYS_ENABLED`,
 * `#ifdef MARCEL_BUBBLES` and the like, and skip the part (or the whole test) when the
 * macro is missing. This header defines the macros of the features that work in this
 * marcel, and only those, so such a program runs exactly what it can.
 *
 * Deliberately left undefined, because the feature does not work (yet):
 *  - `MARCEL_FORK_ENABLED`: marcel_fork()'s child may only exec or exit (see
 *    marcel/compat.h), Marcel's child could go on using threads;
 *  - `MARCEL_DEVIATION_ENABLED`, `MARCEL_EXCEPTIONS_ENABLED`, `MARCEL_MIGRATION_ENABLED`,
 *    `MARCEL_POSTEXIT_ENABLED`, `MARCEL_USERSPACE_ENABLED`, `MARCEL_MAMI_ENABLED`: none
 *    of these Marcel extras exists here;
 *  - `MARCEL_LIBPTHREAD`, `MARCEL_POSIX`, `MA__IFACE_PMARCEL`: marcel is not built as a
 *    libpthread replacement and has no `pmarcel_*` interface (pthread programs include
 *    `<marcel/pthread.h>`);
 *  - `MARCEL_MONO`: never a single kernel thread;
 *  - `MARCEL_SMT_ENABLED`: one VP per core by default (`MARCEL_SMT` asks for one per
 *    hardware thread at run time, which a compile-time macro cannot tell).
 */
#ifndef MARCEL_FEATURES_H
#define MARCEL_FEATURES_H

#include <marcel/types.h>

/** @addtogroup marcel_features
 * @{ */

/** Defined: thread-specific data (marcel_key_create() and the rest of marcel/keys.h). */
#define MARCEL_KEYS_ENABLED 1
/** Defined: marcel_once() and ::MARCEL_ONCE_INITIALIZER. */
#define MARCEL_ONCE_ENABLED 1
/** Defined: marcel_cleanup_push() and marcel_cleanup_pop(), whose handlers run at
 * marcel_exit() and at cancellation (marcel/cancel.h). */
#define MARCEL_CLEANUP_ENABLED 1
/** Defined: marcel_suspend() and marcel_resume(). */
#define MARCEL_SUSPEND_ENABLED 1
/** Defined: blocking sections and the `marcel_read/write/...` calls (marcel/blocking.h). */
#define MARCEL_BLOCKING_ENABLED 1
/** Defined: per-thread and per-bubble statistics (marcel_task_stats_get(), in both
 * Marcel's form and marcel's). */
#define MARCEL_STATS_ENABLED 1
/** Defined: bubbles and bubble schedulers (marcel/bubble.h, marcel/bubble_sched.h). */
#define MARCEL_BUBBLES 1
/** Defined: the topology knows NUMA nodes (marcel_nbnodes(), marcel_malloc_on_node()). */
#define MARCEL_NUMA 1
/** Defined: per-thread signals: marcel_kill(), marcel_sigaction(), the signal waits and
 * the rest of marcel/signal.h. */
#define MARCEL_SIGNALS_ENABLED 1
/** Defined: per-thread signal masks (marcel_sigmask()). */
#define MARCEL_SIGMASK_ENABLED 1
/** Defined: threads run on several kernel threads, one per VP (Marcel's SMP flavour,
 * whose internal macro ::MA__LWPS is defined too). */
#define MARCEL_SMP 1

/** @} */

#endif
