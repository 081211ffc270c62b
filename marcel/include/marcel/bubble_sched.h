/**
 * @file marcel/bubble_sched.h
 * @brief Bubble schedulers (strategies): choosing one, starting and shaking placement.
 *
 * A strategy maps the bubble tree onto the run-queue tree. It is chosen with
 * `MARCEL_BUBBLE_SCHEDULER=NAME` (or `--marcel-bubble-scheduler NAME`) and may be changed
 * at run time with marcel_bubble_change_sched(). `MARCEL_BUBBLE_SCHEDULER=list` (or
 * `--marcel-list-schedulers`) prints the names with one line each and exits.
 *
 * | name | what it does |
 * |---|---|
 * | `null` | no placement: bubbles stay closed on the machine's queue, any VP serves them |
 * | `burst` (`explode`) | VPs pull bubbles down toward them; a bubble bursts at its scheduling level (default: the deepest level with at least as many VPs as it has threads); regenerated every 20 ms (the default) |
 * | `spread` | recursive greedy distribution of the load statistic over the levels, bursting only bubbles too big for one child |
 * | `cache` (`affinity`) | keeps entities where they last ran, bursts as few bubbles as possible, then balances |
 * | `steal` | bubbles start closed where they are woken; idle VPs steal whole bubbles from the nearest loaded subtree first |
 * | `gang` | the bubbles of the root run one at a time (gangs), each for a time slice (its own, 10 ms by default) |
 * | `memory` | a bubble goes to the NUMA node holding most of its attached memory; the rest is balanced by load |
 * | `contention` | SMT siblings: threads that use the same resource (FP, cache misses, memory operations: MARCEL_STATS_FP_RATE...) kept off the same core; spread without metrics |
 * | `pa` | asymmetric cores: the fast ones to serial phases, master threads (marcel_task_setmaster()), then applications of low parallelism in turns |
 * | `mintlp` | asymmetric cores: the fast ones to the applications with the fewest runnable threads |
 *
 * The default is `burst`.
 */
#ifndef MARCEL_BUBBLE_SCHED_H
#define MARCEL_BUBBLE_SCHED_H

#include <stdio.h>
#include <marcel/bubble.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup marcel_bubble_sched Bubble schedulers
 * @{ */

/** A strategy (opaque). */
typedef struct ma_strategy marcel_bubble_sched_t;

/** Returns the strategy called @p name (or one of its aliases), or NULL if there is none. */
const marcel_bubble_sched_t *marcel_lookup_bubble_scheduler(const char *name);

/** Returns the strategy in use (NULL if the runtime is not running): the very handle
 * last given to marcel_bubble_change_sched() (an instance from
 * marcel_bubble_sched_instantiate() included), else the strategy chosen at marcel_init().
 * Not `const`, as in Marcel: the handle is opaque anyway. */
marcel_bubble_sched_t *marcel_bubble_current_sched(void);

/** Returns the name of @p s, a strategy or an instance (NULL for NULL). */
const char *marcel_bubble_sched_name(const marcel_bubble_sched_t *s);

/** Returns the one-line description of @p s (NULL for NULL). */
const char *marcel_bubble_sched_description(const marcel_bubble_sched_t *s);

/** Returns the @p i-th registered strategy (0-based), NULL past the last: lists them. */
const marcel_bubble_sched_t *marcel_bubble_sched_nth(unsigned i);

/** Prints every strategy's name, aliases and description, one per line, to @p out.
 * @return 0, or EINVAL if @p out is NULL. */
int marcel_bubble_list_schedulers(FILE *out);

/**
 * Switches to strategy @p s: one this header returned, or an instance made with
 * marcel_bubble_sched_instantiate() (which must stay valid while it is in use, as in
 * Marcel). Everything placed stays where it is; the new strategy places what is submitted
 * from now on and, if marcel_bubble_sched_begin() was called, takes the whole root bubble
 * at once as it would at sched_begin.
 * @return the previous strategy (the handle marcel_bubble_current_sched() returned), or
 * NULL if @p s is NULL, neither a strategy nor an instance, or the runtime is not running
 * (nothing changes then).
 */
marcel_bubble_sched_t *marcel_bubble_change_sched(const marcel_bubble_sched_t *s);

/**
 * Hands the whole root bubble to the strategy at once (its `start` operation): call it
 * after building the bubble tree and waking the bubbles, so that the strategy places
 * everything knowing everything. Bubbles woken before it were placed one at a time.
 * @return 0; EPERM if the runtime is not running.
 */
int marcel_bubble_sched_begin(void);

/**
 * Marcel's shake: asks the strategy to distribute everything again from scratch. Every
 * woken bubble directly in marcel_root_bubble is regenerated as by
 * marcel_bubble_shake_bubble() (threads directly in the root bubble stay where they
 * are). Does nothing when the runtime is not running.
 */
void marcel_bubble_shake(void);

/**
 * Regenerates @p b now: closes it, gathers its threads (running ones at their next
 * preemption point) and, once all are back, lets the strategy place it again. A bubble
 * that is not burst is just placed again. marcel_bubble_shake() does this to every woken
 * bubble under marcel_root_bubble.
 * @return 0; EINVAL for NULL/uninitialised or marcel_root_bubble; EPERM if the runtime is
 * not running or @p b was not woken.
 */
int marcel_bubble_shake_bubble(marcel_bubble_t *b);

/**
 * Hands woken bubble @p b to the strategy now, as waking it did (useful after changing
 * its statistics or memory).
 * @return 0; EINVAL for NULL/uninitialised or marcel_root_bubble; EPERM if the runtime is
 * not running or @p b was not woken; EBUSY if @p b is burst (shake it instead) or part of
 * a closed bubble.
 */
int marcel_bubble_submit(marcel_bubble_t *b);

/** @} */

/** @defgroup marcel_bubble_sched_class Bubble scheduler classes (Marcel)
 * Marcel's way of choosing a strategy: look its *class* up, make an *instance* of it in
 * memory of marcel_bubble_sched_instance_size() bytes, and switch to that instance:
 *
 * @code
 * marcel_bubble_sched_t *s = alloca(marcel_bubble_sched_instance_size(&marcel_bubble_cache_sched_class));
 * marcel_bubble_sched_instantiate(&marcel_bubble_cache_sched_class, s);
 * marcel_bubble_change_sched(s);
 * @endcode
 *
 * Every strategy of this marcel is a class (`marcel_bubble_NAME_sched_class`); an instance
 * runs its class's strategy with the defaults (strategies here take no per-instance
 * parameters). Classes cannot be defined by the program: Marcel's
 * `MARCEL_DEFINE_BUBBLE_SCHEDULER_CLASS` needed its internal scheduler interface.
 * @{ */

/** A bubble scheduler class, as in Marcel. */
typedef struct ma_bubble_sched_class {
	const char *name;     /**< The class's name: the strategy's (marcel_lookup_bubble_scheduler()). */
	size_t instance_size; /**< Bytes an instance takes. */
	/** Makes @p instance (of @ref instance_size bytes) an instance of this class with the
	 * default parameters; 0 or an error code (as marcel_bubble_sched_instantiate()). */
	int (*instantiate)(marcel_bubble_sched_t *instance);
} marcel_bubble_sched_class_t;

/** Class of the `null` strategy (no placement). */
extern const marcel_bubble_sched_class_t marcel_bubble_null_sched_class;
/** Class of the `burst` strategy (Marcel's `explode`). */
extern const marcel_bubble_sched_class_t marcel_bubble_burst_sched_class;
/** Class of the `spread` strategy. */
extern const marcel_bubble_sched_class_t marcel_bubble_spread_sched_class;
/** Class of the `cache` strategy (also `affinity`). */
extern const marcel_bubble_sched_class_t marcel_bubble_cache_sched_class;
/** Class of the `steal` strategy. */
extern const marcel_bubble_sched_class_t marcel_bubble_steal_sched_class;
/** Class of the `gang` strategy. */
extern const marcel_bubble_sched_class_t marcel_bubble_gang_sched_class;
/** Class of the `memory` strategy. */
extern const marcel_bubble_sched_class_t marcel_bubble_memory_sched_class;
/** Class of the `contention` strategy (SMT siblings paired by their load metrics). */
extern const marcel_bubble_sched_class_t marcel_bubble_contention_sched_class;
/** Class of the `pa` strategy (parallelism-aware, for asymmetric cores). */
extern const marcel_bubble_sched_class_t marcel_bubble_pa_sched_class;
/** Class of the `mintlp` strategy (fast cores to the least parallel applications). */
extern const marcel_bubble_sched_class_t marcel_bubble_mintlp_sched_class;
/** Marcel's name of ::marcel_bubble_burst_sched_class. */
#define marcel_bubble_explode_sched_class marcel_bubble_burst_sched_class
/** Marcel's older name of ::marcel_bubble_cache_sched_class. */
#define marcel_bubble_affinity_sched_class marcel_bubble_cache_sched_class

/** Marcel's ready-made instance of the null scheduler (an lvalue: pass
 * `&marcel_bubble_null_sched` to marcel_bubble_change_sched()). */
#define marcel_bubble_null_sched (*(marcel_bubble_sched_t *)marcel_lookup_bubble_scheduler("null"))

/** Returns the class called @p name (a strategy's name or alias), or NULL if there is
 * none (or @p name is NULL). */
const marcel_bubble_sched_class_t *marcel_lookup_bubble_scheduler_class(const char *name);

/** Returns the size in bytes of an instance of @p klass (0 for NULL). */
size_t marcel_bubble_sched_instance_size(const marcel_bubble_sched_class_t *klass);

/** Returns the name of @p klass (NULL for NULL). */
const char *marcel_bubble_sched_class_name(const marcel_bubble_sched_class_t *klass);

/** Returns the class of @p s, a strategy or an instance (NULL if it is neither). */
const marcel_bubble_sched_class_t *marcel_bubble_sched_class(const marcel_bubble_sched_t *s);

/** Makes @p instance, memory of at least marcel_bubble_sched_instance_size(@p klass)
 * bytes, an instance of @p klass. Needs no running runtime.
 * @return 0; EINVAL if an argument is NULL or @p klass is not one of the classes above. */
int marcel_bubble_sched_instantiate(const marcel_bubble_sched_class_t *klass, marcel_bubble_sched_t *instance);

/** @} */

#ifdef __cplusplus
}
#endif

#endif
