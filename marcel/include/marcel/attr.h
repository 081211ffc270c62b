/**
 * @file marcel/attr.h
 * @brief Thread attributes: stack, detach state, name, priority, placement, preemption.
 */
#ifndef MARCEL_ATTR_H
#define MARCEL_ATTR_H

#include <marcel/types.h>
#include <marcel/vpset.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup marcel_attr Thread attributes
 * An attribute object is initialised with marcel_attr_init(), adjusted with the setters
 * and passed to marcel_create(); one object may serve any number of creations. The
 * setters validate their argument and leave the object unchanged on error. None of
 * these functions needs marcel_init() to have been called, and all are thread-safe as
 * long as two threads do not modify the same object concurrently.
 * @{ */

/** marcel_attr_setdetachstate(): the thread must be joined (default). */
#define MARCEL_CREATE_JOINABLE 0
/** marcel_attr_setdetachstate(): the thread is reclaimed when it ends. */
#define MARCEL_CREATE_DETACHED 1

/** Scheduling policy: queue the thread on the machine-wide run queue, where any worker
 * may take it (Marcel's default). */
#define MARCEL_SCHED_SHARED 0
/** Scheduling policy: queue the thread on the next VP after the creator's. */
#define MARCEL_SCHED_OTHER 1
/** Scheduling policy: queue the thread on the creator's VP unless another VP is idle. */
#define MARCEL_SCHED_AFFINITY 2
/** Scheduling policy: queue the thread on the VP with the fewest ready threads. */
#define MARCEL_SCHED_BALANCE 3
/** Policy used when none is set: ::MARCEL_SCHED_SHARED. */
#define MARCEL_SCHED_DEFAULT MARCEL_SCHED_SHARED

/** Smallest accepted stack size, in bytes. */
#define MARCEL_STACK_MIN (16 * 1024)
/** Largest accepted stack size, in bytes. */
#define MARCEL_STACK_MAX ((size_t)1 << 30)

/** Thread attributes. Treat as opaque: use the functions below. */
typedef struct marcel_attr {
	unsigned magic;            /**< Set by marcel_attr_init(); catches uninitialised objects. */
	int detachstate;           /**< ::MARCEL_CREATE_JOINABLE or ::MARCEL_CREATE_DETACHED. */
	size_t stacksize;          /**< 0: the runtime default (`MARCEL_STACK_SIZE`). */
	int prio;                  /**< 0 .. ::MA_MAX_PRIO - 1. */
	int schedpolicy;           /**< One of the `MARCEL_SCHED_*` policies. */
	int preemptible;           /**< Whether time slicing may switch the thread out. */
	int seed;                  /**< Whether the thread is a seed (see marcel_attr_setseed()). */
	int has_vpset;             /**< Whether @ref vpset restricts placement. */
	int inherit_holder;        /**< Create in the creator's bubble rather than its children's. */
	marcel_vpset_t vpset;      /**< VPs the thread may run on. */
	int vpset_first;           /**< Lowest VP of @ref vpset (kept so creation need not scan it). */
	int vpset_last;            /**< Highest VP of @ref vpset. */
	char name[MARCEL_MAXNAMESIZE]; /**< Initial name. */
	struct marcel_bubble *natural_bubble; /**< Bubble to create the thread in (NULL: default). */
	int id;                    /**< Marcel's application id (marcel_attr_setid()). */
	void *reserved[4];         /**< Room for future attributes. */
} marcel_attr_t;

/** Initialises @p attr with the defaults: joinable, default stack size, ::MA_DEF_PRIO,
 * ::MARCEL_SCHED_DEFAULT, preemptible, every VP, name "user".
 * @return 0, or EINVAL if @p attr is NULL. */
int marcel_attr_init(marcel_attr_t *attr);

/** Invalidates @p attr; it must be initialised again before reuse.
 * @return 0, or EINVAL if @p attr is NULL or not initialised. */
int marcel_attr_destroy(marcel_attr_t *attr);

/** Sets the stack size in bytes (rounded up to a whole number of pages).
 * @return 0, or EINVAL if @p attr is invalid or @p size is outside
 * [::MARCEL_STACK_MIN, ::MARCEL_STACK_MAX]. */
int marcel_attr_setstacksize(marcel_attr_t *attr, size_t size);

/** Reads the stack size (0 means the runtime default).
 * @return 0, or EINVAL if an argument is NULL or @p attr is not initialised. */
int marcel_attr_getstacksize(const marcel_attr_t *attr, size_t *size);

/** Sets the detach state: ::MARCEL_CREATE_JOINABLE or ::MARCEL_CREATE_DETACHED
 * (Marcel programs pass a boolean, which maps to the same values).
 * @return 0, or EINVAL for another value or an invalid @p attr. */
int marcel_attr_setdetachstate(marcel_attr_t *attr, int detached);

/** Reads the detach state.
 * @return 0, or EINVAL if an argument is NULL or @p attr is not initialised. */
int marcel_attr_getdetachstate(const marcel_attr_t *attr, int *detached);

/** Sets the initial name; names longer than ::MARCEL_MAXNAMESIZE - 1 are truncated.
 * @return 0, or EINVAL if an argument is NULL or @p attr is not initialised. */
int marcel_attr_setname(marcel_attr_t *attr, const char *name);

/** Copies the initial name into @p buf (at most @p n bytes, NUL-terminated).
 * @return 0, EINVAL for NULL arguments, ERANGE if @p n is too small. */
int marcel_attr_getname(const marcel_attr_t *attr, char *buf, size_t n);

/** Sets the priority (see @ref marcel_prio).
 * @return 0, or EINVAL if @p prio is not in `0 .. MA_MAX_PRIO - 1` or @p attr is invalid. */
int marcel_attr_setprio(marcel_attr_t *attr, int prio);

/** Reads the priority.
 * @return 0, or EINVAL if an argument is NULL or @p attr is not initialised. */
int marcel_attr_getprio(const marcel_attr_t *attr, int *prio);

/** Sets the scheduling policy (`MARCEL_SCHED_SHARED/OTHER/AFFINITY/BALANCE`). A vpset,
 * when set, takes precedence over the policy.
 * @return 0, or EINVAL for an unknown policy or an invalid @p attr. */
int marcel_attr_setschedpolicy(marcel_attr_t *attr, int policy);

/** Reads the scheduling policy.
 * @return 0, or EINVAL if an argument is NULL or @p attr is not initialised. */
int marcel_attr_getschedpolicy(const marcel_attr_t *attr, int *policy);

/** Restricts the thread to the VPs of @p set. The thread is queued on the run queue of
 * the smallest topology item whose VPs include all of @p set (the VP's own queue for a
 * single VP), so a set that is not a whole topology item is widened to one.
 * marcel_create() fails with EINVAL if the set names no existing VP.
 * @return 0, or EINVAL if @p set is empty or @p attr is invalid. */
int marcel_attr_setvpset(marcel_attr_t *attr, marcel_vpset_t set);

/** Reads the VP set (all VPs if none was set).
 * @return 0, or EINVAL if an argument is NULL or @p attr is not initialised. */
int marcel_attr_getvpset(const marcel_attr_t *attr, marcel_vpset_t *set);

/** Sets whether the thread may be preempted (non-zero: yes, the default): by time slicing
 * (`MARCEL_TIMESLICE`, 10 ms by default where preemption works) and by a bubble
 * regeneration asking it back. A thread that may not
 * is switched only where it yields or blocks; marcel_thread_preemption_disable() does the
 * same for a section of code.
 * @return 0, or EINVAL if @p attr is invalid. */
int marcel_attr_setpreemptible(marcel_attr_t *attr, int preemptible);

/** Reads the preemptible flag.
 * @return 0, or EINVAL if an argument is NULL or @p attr is not initialised. */
int marcel_attr_getpreemptible(const marcel_attr_t *attr, int *preemptible);

/** Marks the thread as a *seed* (@p seed non-zero), for fine-grained nested parallelism
 * where a thread creates children and then joins them.
 *
 * Like every marcel thread, a seed gets a stack only when it first runs. In addition,
 * when marcel_join() finds the seed not started yet, the joiner takes it off its queue
 * and runs its function itself, on its own stack: no stack is taken, no context switch
 * and no wake-up happen. The seed is still a thread of its own while it runs there:
 * marcel_self() returns it, it belongs to its bubble, its keys, CPU time and name are its
 * own, and it may block, yield, be preempted or call marcel_exit(); if it is switched
 * out, its joiner waits with it (it was waiting for it anyway). A seed some worker has
 * started already is joined as any thread.
 *
 * A seed runs in its joiner only when at least 32 KiB of the joiner's stack remain below
 * the join (deep recursions then continue on stacks of their own), when its attributes
 * did not place it (no marcel_attr_setvpset(), policy MARCEL_SCHED_SHARED), and when it
 * was started (not left created with marcel_create_dontsched()). It runs with its
 * joiner's floating-point control state. A seed that is never joined (detached) runs as
 * an ordinary thread.
 * @return 0, or EINVAL if @p attr is invalid. */
int marcel_attr_setseed(marcel_attr_t *attr, int seed);

/** Reads the seed flag.
 * @return 0, or EINVAL if an argument is NULL or @p attr is not initialised. */
int marcel_attr_getseed(const marcel_attr_t *attr, int *seed);

/** Marcel's thread id attribute: records @p id in @p attr (0 by default), to be read
 * back with marcel_attr_getid(). In Marcel the id labelled the thread in its traces; here
 * threads carry a unique id of their own in traces and snapshots, so @p id stays with
 * the attribute: name the thread with marcel_attr_setname() to tell it apart there.
 * @return 0, or EINVAL if @p attr is NULL or not initialised. */
int marcel_attr_setid(marcel_attr_t *attr, int id);

/** Reads the id set by marcel_attr_setid().
 * @return 0, or EINVAL if an argument is NULL or @p attr is not initialised. */
int marcel_attr_getid(const marcel_attr_t *attr, int *id);

/** Marcel's name of marcel_attr_setnaturalbubble() (marcel/bubble.h): threads created
 * with @p attr go into bubble @p b. @return as marcel_attr_setnaturalbubble(). */
int marcel_attr_setinitbubble(marcel_attr_t *attr, struct marcel_bubble *b);

/** Marcel's name of marcel_attr_getnaturalbubble().
 * @return as marcel_attr_getnaturalbubble(). */
int marcel_attr_getinitbubble(const marcel_attr_t *attr, struct marcel_bubble **b);

/** @} */

#ifdef __cplusplus
}
#endif

#endif
