/**
 * @file marcel/types.h
 * @brief Basic types, priorities and feature macros shared by the whole marcel API.
 */
#ifndef MARCEL_TYPES_H
#define MARCEL_TYPES_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup marcel_types Basic types
 * @{ */

/** Generic pointer type used by Marcel for thread arguments and results (= `void *`). */
typedef void *any_t;

/** A thread's body: takes the argument given to marcel_create() and returns its result. */
typedef any_t (*marcel_func_t)(any_t arg);

/** Opaque thread descriptor. */
struct marcel_task;

/** Thread handle: valid from creation until the thread is joined (or, detached, ends). */
typedef struct marcel_task *marcel_t;

/** Longest thread name, including the terminating NUL; longer names are truncated. */
#define MARCEL_MAXNAMESIZE 32

/** Largest number of workers (VPs) a process may run. */
#define MARCEL_NBMAXVPS 1024

/** @} */

/** @defgroup marcel_prio Priorities
 * Lower values are more urgent. A worker always runs the most urgent ready thread it can
 * see; among equal priorities, threads on the queue nearest to the worker come first.
 * @{ */

/** Most urgent level, reserved for the runtime's own system threads. */
#define MA_SYS_RT_PRIO 0
/** Number of levels reserved for the runtime's system threads. */
#define MA_MAX_SYS_RT_PRIO 9
/** First (most urgent) real-time level available to applications. */
#define MA_RT_PRIO MA_MAX_SYS_RT_PRIO
/** Number of real-time levels available to applications (`MA_RT_PRIO + 0 .. + 31`). */
#define MA_MAX_USER_RT_PRIO 32
/** First level after the real-time ones; equal to ::MA_DEF_PRIO as in Marcel. */
#define MA_MAX_RT_PRIO (MA_RT_PRIO + MA_MAX_USER_RT_PRIO)
/** Default priority of application threads. */
#define MA_DEF_PRIO MA_MAX_RT_PRIO
/** Batch priority: runs when no default-priority thread is ready. */
#define MA_BATCH_PRIO (MA_DEF_PRIO + 1)
/** Idle priority: runs only when nothing else is ready. */
#define MA_IDLE_PRIO (MA_DEF_PRIO + 2)
/** Number of priority levels (valid priorities are `0 .. MA_MAX_PRIO - 1`). */
#define MA_MAX_PRIO (MA_IDLE_PRIO + 1)

/** @} */

/** @defgroup marcel_features Feature macros
 * Programs written for the original Marcel test these.
 * @{ */
/** Defined: bubbles are part of this marcel. */
#define MA__BUBBLES 1
/** Defined: threads run on several kernel threads (workers). */
#define MA__LWPS 1
/** Defined: the topology knows NUMA nodes. */
#define MA__NUMA 1
/** @} */

#ifdef __cplusplus
}
#endif

#endif
