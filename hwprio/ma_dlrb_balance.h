/*
 * DLRB's decisions for one node (dlrb_balance.c), after the thesis among the seeds (000,
 * chapter 5): pure functions of the node's topology and its tasks' utilisations, so that
 * they are unit-tested on synthetic machines (tests/check_dlrb_balance.c) and run by
 * libmarcel-dlrb (dlrb/node.c) and the simulator alike. Which ranks share the node's
 * figures, and carrying the decisions out (binding, the backends), are not here.
 *
 * - The load balancer (ma_dlrb_place): top-down over the topology, each item's tasks are
 *   split among its children, as many per child as its hardware threads allow (the
 *   thesis's blind split), the heaviest first, each to the child whose summed
 *   utilisation is the lowest (so that a core gets a heavy task beside a light one);
 *   among children of the same size the groups then go where most of their tasks
 *   already are, so that few tasks move.
 * - The resource balancer is hwprio's policy (hwprio/policy.c, kind dlrb): the tasks
 *   sharing a core form a domain; when their utilisations differ by more than 20 points
 *   the busier is raised a level (two above 40 points), or the other lowered at the top;
 *   a change of the set of tasks above 95% busy, seen twice, is a phase change. Its
 *   levels (0..2) are then fitted into the backend's reach.
 * - The controller (ma_dlrb_step): at each iteration's end. The node's tasks are placed
 *   after the second iteration if both differed by more than 20 points (one iteration
 *   alone may be a task the kernel kept waiting), and at each phase change if they
 *   differ so. An iteration after a placement that moved tasks runs without levels, to
 *   measure it; every other iteration is judged by the policy, from the first. The
 *   policy keeps the busy pattern a placement was made on, so that a placement made on
 *   disturbed figures is made again at the phase change that follows.
 */
#ifndef MA_DLRB_BALANCE_H
#define MA_DLRB_BALANCE_H

#include "ma_hwprio.h"
#include "ma_topology.h"

#define MA_DLRB_MAX_TASKS 1024
#define MA_DLRB_THRESHOLD 0.20 /* utilisation difference that calls for a placement */

/* Places n tasks (utilisations util[], 0..1) on the hardware threads of t (its VPs, one
 * per PU when loaded with smt): out[i] the VP of task i. current[i]: where it runs now
 * (-1: unknown; NULL: nowhere yet), to move as few as possible. 0, or EINVAL (more tasks
 * than MA_DLRB_MAX_TASKS), ENOMEM. */
int ma_dlrb_place(const struct ma_topo *t, const double *util, unsigned n, const int *current, int *out);

/* The per-node state of the controller: hwprio's policy state, one slot per task. It
 * holds no pointer between calls (ma_dlrb_step points st.slot at slot[] each time), so
 * it may live in memory the node's processes map at different addresses. */
struct ma_dlrb_ctl {
	unsigned iterations;           /* iterations decided on */
	unsigned placements;           /* load balancer runs that moved a task */
	unsigned phase_changes;
	unsigned level_changes;        /* iterations whose end changed a level */
	int unprioritised;             /* this iteration runs without levels */
	unsigned char imbalanced_first; /* the first iteration was imbalanced */
	struct ma_hw_policy_params params;
	struct ma_hw_policy_state st;
	struct ma_hw_slot slot[MA_DLRB_MAX_TASKS];
};

/* A controller with the thesis's parameters (hwprio's dlrb policy, its defaults). */
void ma_dlrb_ctl_init(struct ma_dlrb_ctl *c);

/* What one iteration's end decided. */
struct ma_dlrb_decision {
	int placed;                    /* vp[] is a new placement (some task moved) */
	int levels_changed;            /* level[] changed (or was reset) */
	int phase_change;              /* the policy saw a phase change */
};

/* One iteration's end: utilisations util[n] of the node's tasks (0..1; negative: not
 * measured, left as it is), their VPs vp[n] (-1: unknown; changed in place by a
 * placement), their levels level[n] (in place). lo..hi: the levels the backend reaches.
 * A change of n starts the policy afresh (its domains and levels). */
struct ma_dlrb_decision ma_dlrb_step(struct ma_dlrb_ctl *c, const struct ma_topo *t, const double *util, unsigned n,
				     int *vp, int *level, int lo, int hi);

#endif
