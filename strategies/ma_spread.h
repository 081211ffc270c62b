/*
 * What spread.c shares with memory.c: the two strategies are one decision (distrib.c)
 * with or without the memory preference, made on the view by the same hooks. `memory`
 * selects which: 0 for spread, 1 for memory; each has its own private block, so its own
 * placed-load figures. Pure functions of the view and the block (no runtime).
 */
#ifndef MA_SPREAD_H
#define MA_SPREAD_H

#include "ma_strategies.h"
#include "ma_view.h"

/* A decision looks at what is already placed (the load of every unit scheduled on each
 * item, from a view of the whole tree). Such a view costs the whole tree, so its figures
 * are kept for a while (spread.c, "what is already placed"). */
struct ma_spread_priv {
	double *own;              /* per item; NULL until a tree big enough was seen */
	unsigned nb;              /* entries of own (the topology's items) */
	int valid;
	uint64_t at_ns, cost_ns;  /* when the figures were taken, what their view cost */
	int starting;             /* start gathered the root's opened bubbles and distributes
				     next: those closing meanwhile wait where their parent is */
};

void ma_spread_priv_exit(void *priv) MA_HIDDEN;
/* What a decision places: bubbles, and threads started and not ended but main. */
int ma_spread_wants(const struct ma_vnode *n);
/* decide_start's entities: the root r's closed woken bubbles and the threads it wants, in
 * member order (*n of them); to free. NULL if memory ran out. */
const struct ma_vnode **ma_spread_tops(const struct ma_vnode *r, unsigned *n);
/* decide_start's first round (v->round 0): the root's opened members (implicit children
 * bubbles, bubbles burst by a previous strategy) gathered, so that they can be placed
 * with the rest; those that close at once come back through submit while the GATHERs
 * are carried out and wait on the machine's queue (p->starting). Returns 1 if it asked
 * for a new view (out->again): the hook then returns, and distributes everything on
 * that view. v->root must be set. */
int ma_spread_gather_round(const struct ma_view *v, struct ma_spread_priv *p, struct ma_dlist *out);
void ma_spread_decide_start(const struct ma_view *v, void *priv, struct ma_dlist *out, int memory) MA_HIDDEN;
void ma_spread_decide_submit(const struct ma_view *v, void *priv, struct ma_dlist *out, int memory) MA_HIDDEN;

#endif
