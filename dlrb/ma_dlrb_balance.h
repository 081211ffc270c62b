/*
 * DLRB's decisions for one node (balance.c), after the thesis among the seeds (000,
 * chapter 5): pure functions of the node's topology and its tasks' utilisations, so that
 * they are unit-tested on synthetic machines (tests/check_dlrb_balance.c). Which ranks
 * share the node's figures, and carrying the decisions out (binding, hwprio's backends),
 * are not here.
 *
 * - The load balancer (ma_dlrb_place): top-down over the topology, each item's tasks are
 *   split among its children, as many per child as its hardware threads allow (the
 *   thesis's blind split), the heaviest first, each to the child whose summed
 *   utilisation is the lowest (so that a core gets a heavy task beside a light one);
 *   among children of the same size the groups then go where most of their tasks
 *   already are, so that few tasks move.
 * - The resource balancer (ma_dlrb_levels): on each core of two hardware threads whose
 *   utilisations differ by more than the threshold (20 points), the busier one is raised
 *   a level (two above twice the threshold), or, at the backend's highest level, the
 *   other lowered; the levels stay within the backend's range, so never more than its
 *   width apart. Levels persist from one iteration to the next.
 * - The controller (ma_dlrb_step): at each iteration's end. Placement at the first
 *   iteration and whenever the set of tasks above 95% busy changes (a phase change); the
 *   iteration after a placement runs without levels, to measure the new placement.
 */
#ifndef MA_DLRB_BALANCE_H
#define MA_DLRB_BALANCE_H

#include "ma_topology.h"

#define MA_DLRB_MAX_TASKS 1024
#define MA_DLRB_THRESHOLD 0.20 /* utilisation difference between two threads of a core */
#define MA_DLRB_HIGH 0.95      /* a task busier than this counts in the phase bitmap */

/* Places n tasks (utilisations util[], 0..1) on the hardware threads of t (its VPs, one
 * per PU when loaded with smt): out[i] the VP of task i. current[i]: where it runs now
 * (-1: unknown; NULL: nowhere yet), to move as few as possible. 0, or EINVAL (more tasks
 * than MA_DLRB_MAX_TASKS), ENOMEM. */
int ma_dlrb_place(const struct ma_topo *t, const double *util, unsigned n, const int *current, int *out);

/* The resource balancer, once: level[v] of each VP (hardware thread), in [lo, hi], given
 * each VP's summed utilisation vp_util[v]. Returns the number of VPs whose level
 * changed. */
unsigned ma_dlrb_levels(const struct ma_topo *t, const double *vp_util, int *level, int lo, int hi);

/* The per-node state of the controller. */
struct ma_dlrb_ctl {
	unsigned iterations;           /* iterations decided on */
	unsigned placements;           /* load balancer runs */
	unsigned phase_changes;
	int unprioritised;             /* this iteration runs without levels */
	unsigned char high[MA_DLRB_MAX_TASKS]; /* the previous iteration's tasks above 95% */
};

/* What one iteration's end decided. */
struct ma_dlrb_decision {
	int placed;                    /* vp[] is a new placement */
	int levels_changed;            /* level[] changed (or was reset) */
};

/* One iteration's end: utilisations util[n] of the node's tasks, their VPs vp[n] (changed
 * in place by a placement), their levels level[n] (in place). lo..hi: the levels the
 * backend reaches. */
struct ma_dlrb_decision ma_dlrb_step(struct ma_dlrb_ctl *c, const struct ma_topo *t, const double *util, unsigned n,
				     int *vp, int *level, int lo, int hi);

#endif
