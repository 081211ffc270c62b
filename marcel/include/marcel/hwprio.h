/**
 * @file marcel/hwprio.h
 * @brief Hardware resource priorities: which backends this machine offers, and the level
 * each VP has.
 *
 * hwprio biases a processor resource that workers share (SMT decode slots, whole cores,
 * cache ways, memory bandwidth, core kinds) toward the workers that run the heaviest
 * bubble. Each mechanism is a backend; all share one scale of levels from -2 to +2, 0
 * meaning "as the worker was before hwprio touched it". `MARCEL_HWPRIO` (or
 * `--marcel-hwprio`) turns it on: `auto` (every backend this machine offers; nothing, and
 * no message, if it offers none), `none` (the policy runs and its levels are traced and
 * shown, no resource changes) or a comma-separated list of backend names (marcel_init()
 * fails, saying which and why, if one of them cannot be used). Unset, hwprio is off.
 * `MARCEL_HWPRIO_POLICY` chooses the policy: `dlrb` (the default), `uniform`, `adaptive`.
 *
 * The policy judges bubbles: at each iteration it finds, per VP, the thread that ran the
 * most there and the bubbles holding it. VPs that share a core are compared by what tells
 * them apart: threads of one bubble as threads, threads of different bubbles as those
 * bubbles, whose VPs (on every core) are judged together by how busy the whole bubble
 * was. A program without bubbles has each thread judged alone.
 */
#ifndef MARCEL_HWPRIO_H
#define MARCEL_HWPRIO_H

#include <marcel/bubble.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup marcel_hwprio Hardware resource priorities
 * @{ */

/** Lowest level of the scale every backend shares. */
#define MARCEL_HWPRIO_MIN (-2)
/** Highest level of the scale. */
#define MARCEL_HWPRIO_MAX 2

/** Whether a backend can be used here. */
enum marcel_hwprio_presence {
	MARCEL_HWPRIO_PRESENT = 0,         /**< usable by this process */
	MARCEL_HWPRIO_ABSENT = 1,          /**< not on this machine, kernel or build */
	MARCEL_HWPRIO_NEEDS_PRIVILEGE = 2, /**< there, but this process may not use it */
};

/** What marcel_hwprio_backend() reports about one backend. */
struct marcel_hwprio_backend_info {
	const char *name;        /**< as `MARCEL_HWPRIO` names it; static storage */
	const char *description; /**< one line; static storage */
	enum marcel_hwprio_presence presence; /**< its probe's answer, now */
	char reason[256];        /**< why, when not present ("" when present) */
	int active;              /**< in use by the running runtime */
	int lo;                  /**< the lowest level it reaches */
	int hi;                  /**< the highest level it reaches */
};

/** The number of backends built into this library (the valid indexes of
 * marcel_hwprio_backend()). May be called at any time, without marcel_init(). */
unsigned marcel_hwprio_backend_count(void);

/** Describes backend @p i and probes it (reads the system's files, changes nothing).
 * May be called at any time, from any thread, without marcel_init(); the roots it reads are
 * `MARCEL_HWPRIO_SYSFS` (default `/sys`) and `MARCEL_HWPRIO_RESCTRL` (default
 * `/sys/fs/resctrl`).
 * @return 0; EINVAL if @p info is NULL or @p i is not below marcel_hwprio_backend_count(). */
int marcel_hwprio_backend(unsigned i, struct marcel_hwprio_backend_info *info);

/** The level VP @p vp has now (0 while hwprio is off).
 * @return 0; EINVAL if @p level is NULL or @p vp is not a VP of the running runtime;
 * ENOENT if the runtime is not running. */
int marcel_hwprio_vp_level(unsigned vp, int *level);

/** Asks for VP @p vp to have @p level: every backend in use applies it (within the part of
 * the scale it reaches) to the kernel thread running that VP, at that VP's next switch.
 * Meant for experiments and for programs that know their heavy work better than the
 * policy; with a policy running (`MARCEL_HWPRIO_POLICY`), its next decision may change it.
 * May be called from any thread while the runtime runs.
 * @return 0; EINVAL if @p vp is not a VP or @p level is outside MARCEL_HWPRIO_MIN..
 * MARCEL_HWPRIO_MAX; ENOTSUP if hwprio is off (`MARCEL_HWPRIO` unset, or `auto` found
 * nothing); ENOENT if the runtime is not running. */
int marcel_hwprio_set_vp_level(unsigned vp, int level);

/** Marks the end of one iteration of the program, for codes whose iterations end at no
 * barrier marcel sees (a reduction through shared memory, an MPI library of its own).
 * Without it, the rounds of the first barrier that completes (marcel_barrier_wait(),
 * pthread_barrier_wait() through <marcel/pthread.h>, marcel_bubble_barrier()) are the
 * iterations; once a program calls it, only its calls are. Call it once per iteration,
 * from one thread. Iterations shorter than a millisecond are merged with the next.
 * @return 0; ENOTSUP if hwprio is off; ENOENT if the runtime is not running. */
int marcel_hwprio_iteration(void);

/** Marks the end of one round of a wait the program repeats every iteration, for
 * libraries whose waits are the only iteration boundaries a program has (libmarcel-mpi
 * calls it after each completed marcel_mpi_wait() and its siblings, with the program's
 * call site as @p key). The rounds of the first key to complete are the iterations, as
 * for barriers; but a barrier's rounds, once one completes, replace a wait's, and once
 * the program calls marcel_hwprio_iteration(), only its calls count. Rounds less than a
 * millisecond after the last iteration's end are merged into it (the waits of several
 * threads in one iteration count once).
 * @return 0; EINVAL if @p key is NULL; ENOTSUP if hwprio is off; ENOENT if the runtime is
 * not running. */
int marcel_hwprio_wait_round(const void *key);

/** Gives bubble @p b the hardware priority @p level by hand, overriding the policy on the
 * VPs that run its threads (or those of a bubble inside it without a level of its own):
 * at once on the VPs that ran them most in the last iteration (before the first one
 * ends: since the start), and at each iteration after on those that ran them most during
 * it. A level on an inner bubble wins over one on an outer bubble. Until one of its
 * threads has run, no VP has it; in a program with no iterations (no barrier, no
 * marcel_hwprio_iteration()), the VPs are those found at the call. At most 64 bubbles
 * have a level at a time.
 * @return 0; EINVAL if @p b is not an initialised bubble or @p level is outside
 * MARCEL_HWPRIO_MIN..MARCEL_HWPRIO_MAX; ENOSPC if 64 other bubbles have a level;
 * ENOTSUP if hwprio is off; ENOENT if the runtime is not running. */
int marcel_bubble_set_hwprio(marcel_bubble_t *b, int level);

/** The level marcel_bubble_set_hwprio() gave bubble @p b, in @p level.
 * @return 0; ESRCH if it has none (the policy decides for its VPs); EINVAL if @p b is not
 * an initialised bubble or @p level is NULL; ENOTSUP if hwprio is off; ENOENT if the
 * runtime is not running. */
int marcel_bubble_get_hwprio(marcel_bubble_t *b, int *level);

/** Hands bubble @p b back to the policy: the VPs that had its level go back to 0 at once,
 * and the policy decides for them from the next iteration. Also call it before
 * destroying a bubble given a level, to free its place among the 64.
 * @return 0; ESRCH if it had no level; EINVAL if @p b is not an initialised bubble;
 * ENOTSUP if hwprio is off; ENOENT if the runtime is not running. */
int marcel_bubble_unset_hwprio(marcel_bubble_t *b);

/** How the policy went so far: @p iterations it measured, @p changes of them after which
 * it changed a level (either pointer may be NULL).
 * @return 0; ENOTSUP if hwprio is off; ENOENT if the runtime is not running. */
int marcel_hwprio_stats(unsigned *iterations, unsigned *changes);

/** @} */

#ifdef __cplusplus
}
#endif

#endif
