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

/** Returns the strategy in use (NULL if the runtime is not running). */
const marcel_bubble_sched_t *marcel_bubble_current_sched(void);

/** Returns the name of @p s (NULL for NULL). */
const char *marcel_bubble_sched_name(const marcel_bubble_sched_t *s);

/** Returns the one-line description of @p s (NULL for NULL). */
const char *marcel_bubble_sched_description(const marcel_bubble_sched_t *s);

/** Returns the @p i-th registered strategy (0-based), NULL past the last: lists them. */
const marcel_bubble_sched_t *marcel_bubble_sched_nth(unsigned i);

/** Prints every strategy's name, aliases and description, one per line, to @p out.
 * @return 0, or EINVAL if @p out is NULL. */
int marcel_bubble_list_schedulers(FILE *out);

/**
 * Switches to strategy @p s. Everything placed stays where it is; the new strategy places
 * what is submitted from now on and, if marcel_bubble_sched_begin() was called, takes the
 * whole root bubble at once as it would at sched_begin.
 * @return the previous strategy, or NULL if @p s is NULL or not a strategy, or the runtime
 * is not running (nothing changes then).
 */
const marcel_bubble_sched_t *marcel_bubble_change_sched(const marcel_bubble_sched_t *s);

/**
 * Hands the whole root bubble to the strategy at once (its `start` operation): call it
 * after building the bubble tree and waking the bubbles, so that the strategy places
 * everything knowing everything. Bubbles woken before it were placed one at a time.
 * @return 0; EPERM if the runtime is not running.
 */
int marcel_bubble_sched_begin(void);

/**
 * Regenerates @p b now: closes it, gathers its threads (running ones at their next
 * preemption point) and, once all are back, lets the strategy place it again. A bubble
 * that is not burst is just placed again.
 * @return 0; EINVAL for NULL/uninitialised or marcel_root_bubble; EPERM if the runtime is
 * not running or @p b was not woken.
 */
int marcel_bubble_shake(marcel_bubble_t *b);

/**
 * Hands woken bubble @p b to the strategy now, as waking it did (useful after changing
 * its statistics or memory).
 * @return 0; EINVAL for NULL/uninitialised or marcel_root_bubble; EPERM if the runtime is
 * not running or @p b was not woken; EBUSY if @p b is burst (shake it instead) or part of
 * a closed bubble.
 */
int marcel_bubble_submit(marcel_bubble_t *b);

/** @} */

#ifdef __cplusplus
}
#endif

#endif
