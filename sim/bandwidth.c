/*
 * The memory bandwidth of each NUMA node (node_bw, doc/simulator.md): a node serves
 * node_bw threads in their memory part at full speed. A thread computing with memory
 * fraction m is in its memory part a share f = a x / (c + a x) of its time, where
 * a = m (times numa_factor when its memory is remote), c = 1 - m and x is how much
 * slower the node makes memory access. When the threads homed on a node would be in their
 * memory part more than node_bw at once, their memory part slows in proportion:
 * x = sum f(x) / node_bw. That fixed point is the one x > 1 with
 *
 *     h(x) = sum a / (c + a x) - node_bw = 0,
 *
 * the node's memory traffic at its limit: threads all alike and local take
 * k m / node_bw times as long as alone, the time their traffic needs at the node's rate.
 * h falls and is convex, so Newton's steps from x = 1 climb to the root without passing it.
 *
 * Only the threads running a computation count: a thread waiting at a barrier or in a
 * queue draws on no memory. Every thread of a node gets its new speed when x changes:
 * once per instant, when the engine is about to move time on (sim_bw_flush), so that a
 * barrier releasing a node's threads costs one new speed each, not one per thread
 * released. Speeds set meanwhile, at that same instant, have run for no time.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include "ma_sim_int.h"

int sim_bw_start(struct sim *s)
{
	if (!(s->m->node_bw > 0))
		return 0;
	unsigned n = s->topo.nb_numa ? s->topo.nb_numa : 1;
	s->bw = calloc(n, sizeof(*s->bw));
	s->bw_dirty = calloc(n, sizeof(*s->bw_dirty));
	if (!s->bw || !s->bw_dirty)
		return ENOMEM;
	for (unsigned i = 0; i < n; i++)
		s->bw[i].slow = 1;
	return 0;
}

void sim_bw_stop(struct sim *s)
{
	free(s->bw);
	free(s->bw_dirty);
	s->bw = NULL;
	s->bw_dirty = NULL;
}

double sim_bw_slow(const struct sim *s, int node)
{
	return s->bw && node >= 0 ? s->bw[node].slow : 1;
}

/* The node's x for the threads now on its list. */
static double sim_bw_solve(const struct sim *s, const struct sim_bw_node *b)
{
	double bw = s->m->node_bw, x = 1;
	for (int k = 0; k < 60; k++) {
		double h = -bw, dh = 0;
		for (const struct sim_ent *t = b->head; t; t = t->bw_next) {
			double d = t->bw_c + t->bw_a * x;
			h += (1 - t->bw_c) / d;
			dh -= (1 - t->bw_c) * t->bw_a / (d * d);
		}
		if (h <= 1e-12 || dh >= 0)
			break;
		double step = -h / dh;
		x += step;
		if (step < 1e-12 * x)
			break;
	}
	return x;
}

static void sim_bw_unlink(struct sim *s, struct sim_ent *t)
{
	struct sim_bw_node *b = &s->bw[t->bw_node];
	if (t->bw_prev)
		t->bw_prev->bw_next = t->bw_next;
	else
		b->head = t->bw_next;
	if (t->bw_next)
		t->bw_next->bw_prev = t->bw_prev;
	t->bw_prev = t->bw_next = NULL;
	t->bw_node = -1;
}

/* Node n's threads changed: its x is computed again before time moves on. */
static void sim_bw_mark(struct sim *s, int n)
{
	if (s->bw[n].dirty)
		return;
	s->bw[n].dirty = 1;
	s->bw_dirty[s->nb_bw_dirty++] = (unsigned)n;
}

void sim_bw_flush(struct sim *s)
{
	for (unsigned i = 0; i < s->nb_bw_dirty; i++) {
		struct sim_bw_node *b = &s->bw[s->bw_dirty[i]];
		b->dirty = 0;
		double x = sim_bw_solve(s, b);
		if (x == b->slow)
			continue;
		/* The old speeds up to now, then the new ones (sim_reschedule settles first). */
		b->slow = x;
		for (struct sim_ent *t = b->head; t; t = t->bw_next)
			sim_reschedule(s, t);
	}
	s->nb_bw_dirty = 0;
}

void sim_bw_track(struct sim *s, struct sim_ent *t)
{
	if (!s->bw)
		return;
	int old = t->bw_node, node = -1;
	double a = 0, m = t->phase.mem;
	if (t->vp >= 0 && t->state == SIM_T_RUNNING && t->phase.kind == SIM_COMPUTE && t->remaining > 0 && m > 0 &&
	    t->home_node >= 0) {
		int here = s->vp[t->vp].node;
		node = t->home_node;
		a = m * (here >= 0 && here != node ? s->m->numa_factor : 1);
	}
	if (old == node && (node < 0 || (t->bw_a == a && t->bw_c == 1 - m)))
		return;
	if (old >= 0)
		sim_bw_unlink(s, t);
	if (node >= 0) {
		struct sim_bw_node *b = &s->bw[node];
		t->bw_node = node;
		t->bw_a = a;
		t->bw_c = 1 - m;
		t->bw_prev = NULL;
		t->bw_next = b->head;
		if (b->head)
			b->head->bw_prev = t;
		b->head = t;
	}
	if (old >= 0)
		sim_bw_mark(s, old);
	if (node >= 0)
		sim_bw_mark(s, node);
}
