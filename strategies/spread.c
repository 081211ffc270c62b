/*
 * spread (and, through ma_spread.h, memory.c): the decision of distrib.c, made on the
 * view. The hooks turn the view's nodes into distrib's (struct ma_dnode), decide, and
 * turn the outcome into decisions, top down: a bubble is placed on the item it bursts
 * on and burst there (MA_D_BURST), and only then are its members moved further down
 * (ma_bubble_burst wants it closed and on that queue; the executor checks each step).
 *
 * spread: recursive greedy distribution of the load statistic over the levels, bursting
 * only bubbles too big for one child. memory: the same, but a bubble first goes to the
 * NUMA node holding most of its attached memory.
 *
 * decide_start distributes the root bubble's members at once from the machine (the root
 * stays opened there), after gathering those of them that are opened; decide_submit
 * decides for one bubble below the item its parent is opened on, with what is already
 * placed as the starting load (see "what is already placed"); below an item with a
 * single VP there is nothing to decide. shake, tick and pick are the dispatchers'
 * defaults (regenerate, serve).
 *
 * The walks of the view's trees keep their own stacks or queues: a submit may be decided
 * on a preempted thread's stack (ma_strategy.h), and trees nest deep.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "ma_spread.h"
#include "ma_distrib.h"

int ma_spread_wants(const struct ma_vnode *n)
{
	return n->is_bubble || (n->state != MA_V_BORN && n->state != MA_V_DEAD && !n->is_main);
}

const struct ma_vnode **ma_spread_tops(const struct ma_vnode *r, unsigned *n)
{
	/* Bubbles still closing are submitted on their own once every thread is back. */
	const struct ma_vnode **tops = malloc((r->nb_children ? r->nb_children : 1) * sizeof(*tops));
	*n = 0;
	for (unsigned k = 0; tops && k < r->nb_children; k++) {
		const struct ma_vnode *m = r->children[k];
		if (m->is_bubble ? m->woken && m->status == MA_V_CLOSED : ma_spread_wants(m))
			tops[(*n)++] = m;
	}
	return tops;
}

/* The topology item of queue q: a VP's own queue counts on its leaf (distrib decides
 * on items). */
static int ma_spread_item(const struct ma_view *v, int q)
{
	return q >= (int)v->nb_items ? v->items[q].parent : q;
}

/* ---- the nodes of a decision ---- */

/* distrib's nodes, made breadth first from the view's: a node's children come after it,
 * so the array is also the order decisions are carried out in (a bubble burst before
 * its members move). */
struct ma_spread_nodes {
	struct ma_dnode *nodes;       /* one block holding the arrays below too */
	struct ma_dnode **kids;       /* every node's children array, end to end */
	int *up;                      /* index of each node's parent, -1 for a top one */
	unsigned nb, nb_kids, cap;
	struct ma_dnode **top;
	unsigned nb_top;
	unsigned char *flag;          /* scratch of ma_spread_emit and ma_spread_keep_add */
};

/* Nodes a decision about the entities `tops` (nb of them) takes: them and their wanted
 * members, down to fixed bubbles. 0 if memory ran out. */
static unsigned ma_spread_count(const struct ma_vnode *const *tops, unsigned nb)
{
	unsigned cap = 64, n = 0, count = 0;
	const struct ma_vnode **stack = malloc(cap * sizeof(*stack));
	if (!stack)
		return 0;
	for (unsigned i = 0; i < nb; i++) {
		stack[n++] = tops[i];
		while (n) {
			const struct ma_vnode *x = stack[--n];
			count++;
			if (!x->is_bubble || x->fixed_item >= 0)
				continue;
			if (n + x->nb_children > cap) {
				unsigned more = 2 * (n + x->nb_children);
				const struct ma_vnode **s = realloc(stack, more * sizeof(*stack));
				if (!s) {
					free(stack);
					return 0;
				}
				stack = s;
				cap = more;
			}
			for (unsigned k = 0; k < x->nb_children; k++)
				if (ma_spread_wants(x->children[k]))
					stack[n++] = x->children[k];
		}
	}
	free(stack);
	return count;
}

static struct ma_dnode *ma_spread_node(struct ma_spread_nodes *m, const struct ma_view *v,
				       const struct ma_vnode *n, int up, int memory)
{
	struct ma_dnode *x = &m->nodes[m->nb];
	m->up[m->nb++] = up;
	int fixed = n->fixed_item >= 0 ? ma_spread_item(v, n->fixed_item) : -1;
	*x = (struct ma_dnode){
		.ref = n,
		.is_bubble = n->is_bubble,
		/* Unset: distrib sums the members it is given; a fixed bubble is not looked
		 * into, so it comes with its whole load (hint, or every member's). */
		.load = fixed >= 0 && n->is_bubble ? n->load : n->load_hint,
		.sched_level = n->sched_level,
		.fixed_item = fixed,
		.pref_node = memory && fixed < 0 && (v->flags & MA_VIEW_HAS_MEMORY) ? n->pref_node : -1,
	};
	return x;
}

/* Makes the nodes of the entities `tops` (nb of them) and their wanted members. 0 or
 * ENOMEM. */
static int ma_spread_nodes_make(struct ma_spread_nodes *m, const struct ma_view *v,
				const struct ma_vnode *const *tops, unsigned nb, int memory)
{
	memset(m, 0, sizeof(*m));
	unsigned cap = ma_spread_count(tops, nb);
	if (!cap)
		return nb ? ENOMEM : 0;
	m->cap = cap;
	/* The largest alignment first. */
	m->nodes = malloc(cap * (sizeof(*m->nodes) + sizeof(*m->kids) + sizeof(*m->top) + sizeof(*m->up) + 1));
	if (!m->nodes)
		return ENOMEM;
	m->kids = (struct ma_dnode **)(m->nodes + cap);
	m->top = m->kids + cap;
	m->up = (int *)(m->top + cap);
	m->flag = (unsigned char *)(m->up + cap);
	for (unsigned i = 0; i < nb; i++)
		m->top[m->nb_top++] = ma_spread_node(m, v, tops[i], -1, memory);
	/* The array is its own queue: each node's children are appended when it is reached. */
	for (unsigned i = 0; i < m->nb; i++) {
		struct ma_dnode *x = &m->nodes[i];
		const struct ma_vnode *n = x->ref;
		if (!n->is_bubble || x->fixed_item >= 0)
			continue;
		x->children = m->kids + m->nb_kids;
		for (unsigned k = 0; k < n->nb_children && m->nb < m->cap; k++)
			if (ma_spread_wants(n->children[k]))
				m->kids[m->nb_kids + x->nb_children++] = ma_spread_node(m, v, n->children[k], (int)i, memory);
		m->nb_kids += x->nb_children;
	}
	return 0;
}

static void ma_spread_nodes_free(struct ma_spread_nodes *m)
{
	free(m->nodes);
}

/* The decisions of a distributed set: a node acts if every node above it burst. */
static void ma_spread_emit(const struct ma_spread_nodes *m, struct ma_dlist *out)
{
	unsigned char *live = m->flag;
	for (unsigned i = 0; i < m->nb; i++) {
		const struct ma_dnode *x = &m->nodes[i];
		int up = m->up[i];
		int acts = up < 0 || (live[up] && m->nodes[up].burst);
		live[i] = (unsigned char)acts;
		if (!acts || x->fixed_item >= 0 || x->item < 0)
			continue;
		const struct ma_vnode *n = x->ref;
		if (!x->is_bubble) {
			if (n->item != x->item)
				(void)ma_dlist_add(out, MA_D_MOVE, n->id, x->item);
		}
		else if (x->burst)
			(void)ma_dlist_add(out, MA_D_BURST, n->id, x->item);
		else if (n->item != x->item)
			(void)ma_dlist_add(out, MA_D_PLACE, n->id, x->item);
	}
}

/* ---- what is already placed ---- */

/*
 * A submit starts from the load already placed on each item: every unit scheduled there
 * (a thread on the item's queue or one of its VPs', a closed bubble placed there), below
 * the opened bubbles of the whole tree (ma_view.placed, a walk of the tree by the view
 * builder, asked for with MA_VIEW_PLACED). Asking for it at each submit made a wake-up
 * cost the whole tree: examples/sumtime keeps
 * thousands of bubbles opened on the machine's queue (each level's pair is spread over
 * the machine, so the next level is decided from there again), and at --n 20000 a wake-up
 * cost about 700 us. So the figures of a tree of MA_PLACED_SMALL bubbles or more are kept,
 * every placement decided is added to them as it is decided, and they are reused until
 * they are older than MA_PLACED_REUSE times the CPU time their walk took: a VP that does
 * nothing but wake bubbles spends at most about 1/MA_PLACED_REUSE of its time walking, whatever the size of the tree, and a decision misses what the core changed
 * meanwhile (threads that ended or were created in opened bubbles, bubbles joined or
 * moved by hand) for at most that long. Smaller trees are looked at for every decision:
 * there the figures are exact, whatever the machine's speed.
 */
#define MA_PLACED_SMALL 64
#define MA_PLACED_REUSE 16

/* Whether the kept figures may stand for the tree now. */
static int ma_spread_kept_ok(const struct ma_spread_priv *p, const struct ma_view *v)
{
	return p->valid && p->own && p->nb == v->nb_items &&
	       (v->now_ns <= p->at_ns || v->now_ns - p->at_ns <= MA_PLACED_REUSE * p->cost_ns);
}

/* Keeps v's figures of what is placed, if its tree is big. */
static void ma_spread_keep(struct ma_spread_priv *p, const struct ma_view *v)
{
	p->valid = 0;
	if (v->placed_visits < MA_PLACED_SMALL)
		return;
	if (!p->own || p->nb != v->nb_items) {
		free(p->own);
		p->nb = 0;
		if (!(p->own = malloc(v->nb_items * sizeof(*p->own))))
			return;
		p->nb = v->nb_items;
	}
	memcpy(p->own, v->placed, v->nb_items * sizeof(*p->own));
	p->valid = 1;
	p->at_ns = v->now_ns;
	p->cost_ns = v->placed_cpu_ns;
}

/* What the decided nodes place, added to the kept figures as the tree will show it once
 * carried out: a fixed node where it stays, its members with it; a node placed closed
 * where it goes (its members are inside it, but fixed ones). */
static void ma_spread_keep_add(struct ma_spread_priv *p, const struct ma_spread_nodes *m)
{
	if (!p->valid)
		return;
	unsigned char *under = m->flag;  /* below a fixed node */
	for (unsigned i = 0; i < m->nb; i++) {
		under[i] = 0;
		const struct ma_dnode *x = &m->nodes[i];
		int up = m->up[i];
		if (up >= 0 && (under[up] || m->nodes[up].fixed_item >= 0)) {
			under[i] = 1;
			continue;
		}
		if (x->fixed_item >= 0) {
			if ((unsigned)x->fixed_item < p->nb)
				p->own[x->fixed_item] += x->eff_load;
		} else if (x->item >= 0 && !x->burst) {
			p->own[x->item] += x->eff_load;
		}
	}
}

/* ---- the hooks ---- */

/* The item a decision below `l`, which has a single VP, would take a closed bubble to:
 * down the chain of children with VPs, to the last. */
static const struct ma_level *ma_single_vp_bottom(const struct ma_level *l)
{
	for (;;) {
		const struct ma_level *next = NULL;
		for (unsigned i = 0; i < l->arity && !next; i++)
			if (l->children[i]->nb_vps)
				next = l->children[i];
		if (!next)
			return l;
		l = next;
	}
}

void ma_spread_decide_submit(const struct ma_view *v, void *priv, struct ma_dlist *out, int memory)
{
	struct ma_spread_priv *p = priv;
	const struct ma_vnode *b = v->root;
	if (!b)
		return;
	/* The queue its parent is opened on (the machine's for the root). */
	int pq = b->home >= 0 ? b->home : 0;
	/* Before sched_begin, or while start gathers (a bubble that closed at once, handed
	 * back while start's list is carried out), a bubble waits where its parent is. A
	 * submit of its own means no start is under way. */
	if (!v->nested)
		p->starting = 0;
	if (!v->begun || p->starting) {
		(void)ma_dlist_add(out, MA_D_PLACE, b->id, pq);
		return;
	}
	/* A VP's own queue has nothing below it. Below an item with one VP (or none), a
	 * decision only takes a bubble down the chain of items with that VP, whole (a single
	 * child gets all of the load, and nothing bursts to fill children), unless the
	 * bubble's own level is met on the way: no figures are needed. */
	int to = -1;
	if (pq >= (int)v->nb_items)
		to = pq;
	else if (v->topo->levels[pq].nb_vps <= 1 && !b->sched_level)
		to = (int)ma_single_vp_bottom(&v->topo->levels[pq])->id;
	if (to >= 0) {
		(void)ma_dlist_add(out, MA_D_PLACE, b->id, to);
		if (p->valid && p->own)
			p->own[ma_spread_item(v, to)] += b->load;
		return;
	}
	double *own = malloc(v->nb_items * sizeof(*own));
	if (!own) {
		(void)ma_dlist_add(out, MA_D_PLACE, b->id, pq);
		return;
	}
	if (v->flags & MA_VIEW_HAS_PLACED) {
		memcpy(own, v->placed, v->nb_items * sizeof(*own));
		ma_spread_keep(p, v);
	} else if (ma_spread_kept_ok(p, v)) {
		memcpy(own, p->own, v->nb_items * sizeof(*own));
	} else {
		/* The figures are missing or stale: ask for them. */
		free(own);
		out->again = MA_VIEW_PLACED;
		return;
	}
	struct ma_spread_nodes m;
	int err = ma_spread_nodes_make(&m, v, &b, 1, memory);
	if (!err)
		err = ma_distrib_decide(v->topo, (unsigned)pq, m.top, m.nb_top, own, memory);
	if (!err) {
		ma_spread_keep_add(p, &m);
		ma_spread_emit(&m, out);
	} else {
		(void)ma_dlist_add(out, MA_D_PLACE, b->id, pq); /* out of memory: at least schedule it */
	}
	ma_spread_nodes_free(&m);
	free(own);
}

int ma_spread_gather_round(const struct ma_view *v, struct ma_spread_priv *p, struct ma_dlist *out)
{
	const struct ma_vnode *r = v->root;
	if (!v->round) {
		unsigned gathered = 0;
		for (unsigned k = 0; k < r->nb_children; k++) {
			const struct ma_vnode *m = r->children[k];
			if (m->is_bubble && m->status == MA_V_OPENED) {
				(void)ma_dlist_add(out, MA_D_GATHER, m->id, -1);
				gathered++;
			}
		}
		if (gathered) {
			p->starting = 1;
			out->again = MA_VIEW_AGAIN;
			return 1;
		}
	}
	p->starting = 0;
	return 0;
}

void ma_spread_decide_start(const struct ma_view *v, void *priv, struct ma_dlist *out, int memory)
{
	struct ma_spread_priv *p = priv;
	const struct ma_vnode *r = v->root;
	if (!r)
		return;
	if (ma_spread_gather_round(v, p, out))
		return;
	unsigned n;
	const struct ma_vnode **tops = ma_spread_tops(r, &n);
	if (!tops)
		return; /* out of memory: everything stays where it was, still scheduled */
	struct ma_spread_nodes m;
	int err = ma_spread_nodes_make(&m, v, tops, n, memory);
	if (!err)
		err = ma_distrib_decide(v->topo, 0, m.top, m.nb_top, NULL, memory);
	if (!err)
		ma_spread_emit(&m, out);
	ma_spread_nodes_free(&m);
	free(tops);
	/* Everything moved: the next submit looks at the tree. */
	p->valid = 0;
}

void ma_spread_priv_exit(void *priv)
{
	struct ma_spread_priv *p = priv;
	free(p->own);
	p->own = NULL;
}

static void ma_spread_start(const struct ma_view *v, void *priv, struct ma_dlist *out)
{
	ma_spread_decide_start(v, priv, out, 0);
}

static void ma_spread_submit(const struct ma_view *v, void *priv, struct ma_dlist *out)
{
	ma_spread_decide_submit(v, priv, out, 0);
}

const struct ma_strategy ma_strategy_spread = {
	.name = "spread",
	.description = "recursive greedy distribution of the load statistic over the levels, bursting only "
		       "bubbles too big for one child",
	/* It reads no load of the queues, only what is placed (asked for when needed). */
	.view_detail = MA_VIEW_SHAPE,
	.priv_size = sizeof(struct ma_spread_priv),
	.priv_exit = ma_spread_priv_exit,
	.decide_start = ma_spread_start,
	.decide_submit = ma_spread_submit,
};
