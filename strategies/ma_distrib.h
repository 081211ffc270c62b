/*
 * The placement decision of the `spread` and `memory` strategies, as a pure function: a
 * topology and a tree of view nodes in, a burst flag and a topology item per node out.
 * It touches no runtime state, so it can be unit-tested on a synthetic 1024-PU machine
 * without running a thread, and the simulator can run the very same code; spread.c
 * makes its nodes from a view (ma_view.h) and turns the outcome into decisions.
 */
#ifndef MA_DISTRIB_H
#define MA_DISTRIB_H

#include "ma_topology.h"

#ifndef MA_HIDDEN
#define MA_HIDDEN __attribute__((visibility("hidden")))
#endif

/* One entity of the tree to place. Inputs are filled by the caller; outputs and scratch
 * are written by ma_distrib_decide. */
struct ma_dnode {
	/* ---- inputs ---- */
	const void *ref;             /* the caller's (the view node it stands for); not read */
	int is_bubble;
	/* The load statistic: < 0 means unset, i.e. 1 for a thread and the sum of its
	 * members' for a bubble (the rule of ma_entity_load). */
	double load;
	int sched_level;             /* a ma_level_kind bit, 0: none */
	/* Not moved: the item it sits on (pinned thread, scheduleonlevel bubble), -1 if
	 * movable. Its load counts there; its members are not looked at. */
	int fixed_item;
	int pref_node;               /* NUMA node holding most of its memory, -1: none */
	unsigned nb_children;
	struct ma_dnode **children;
	/* ---- outputs ---- */
	int burst;                   /* burst on `item` (its members are then placed apart) */
	/* Item it is placed or burst on; -1 if it stays inside a closed bubble. */
	int item;
	/* ---- scratch ---- */
	double eff_load;             /* load with the unset rule applied */
	unsigned seq;                /* pre-order number: the deterministic tie-break */
	unsigned size;               /* nodes in its subtree, itself included */
	unsigned pick;               /* index of the child item it was given */
};

/*
 * Places the entities ents[0..n) (disjoint subtrees) below topology item `item`.
 * init_load, if not NULL, gives per item the load already queued on that item itself
 * (not its subtree) by what is not part of this decision. memory: a bubble with a
 * pref_node is sent to that NUMA node first, the rest is balanced around it.
 *
 * The algorithm, level by level from `item` down (recursive greedy, after Marcel's
 * spread), at an item P whose children with VPs are C1..Ck:
 *  1. bubbles whose sched_level is reached at P burst here (threads with a reached level
 *     stay on P);
 *  2. while there are fewer entities than children, the biggest burstable bubble bursts;
 *  3. entities are taken by decreasing load (ties: pre-order) and each goes to the child
 *     with the least load per VP (ties: lowest index), except that a burstable bubble that
 *     would take that child past its fair share (the total over C1..Ck, already queued
 *     load included, weighted by VP count) bursts instead and its members join the queue.
 *     Under `memory`, bubbles whose node lies below one child go there first;
 *  4. each child gets the same treatment with what it received.
 * A bubble is burstable at P unless its sched_level is not reached yet, or (memory) its
 * node lies below P. Entities reaching a leaf item stay there, bubbles closed.
 *
 * Returns 0, or ENOMEM (outputs then unspecified). Not thread-safe for one tree.
 */
int ma_distrib_decide(const struct ma_topo *t, unsigned item, struct ma_dnode *const *ents, unsigned n,
		      const double *init_load, int memory) MA_HIDDEN;

#endif
