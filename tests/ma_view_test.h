/*
 * Views made by hand, for the unit tests of strategies (tests/check_strategies.c): a
 * synthetic machine loaded with the topology module alone, the run queues' counters set
 * queue by queue and summed the way the builder sums them (bubbles/view.c), and a bubble
 * tree of nodes whose totals are synthesized the way the builder synthesizes them. No
 * runtime is involved: this header needs bubbles/ma_view.h, the topology and Check.
 *
 * Usage: ma_vt_load, then ma_vt_queue for the loads, ma_vt_bubble/ma_vt_thread for the
 * tree (parents before their members, members in member order), then ma_vt_finish; the
 * view is t.v. A test may change fields of the nodes and items between ma_vt_finish and
 * a hook's call (call ma_vt_finish again to synthesize anew). ma_vt_free at the end.
 */
#ifndef MA_VIEW_TEST_H
#define MA_VIEW_TEST_H

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "ma_view.h"

/* The runtime's default (MARCEL_MAXARITY): the items a strategy meets in a real view. */
#define MA_VT_MAXARITY 8u

struct ma_vt {
	struct ma_topo topo;
	struct ma_view v;             /* items and vps point into `it`; root set by ma_vt_finish */
	struct ma_vitem *it;          /* nb_items + nb_vps, by queue number */
	struct ma_vnode **nodes;      /* every node made, in creation order */
	unsigned nb_nodes, cap_nodes;
	const struct ma_vnode **kids; /* the children arrays, one block (ma_vt_finish) */
};

/*
 * Loads synthetic topology `spec` (hwloc's syntax), one VP per core, or per PU with smt,
 * and makes its view: every queue empty, no VP idle, nothing running, no tree.
 */
static inline void ma_vt_load(struct ma_vt *t, const char *spec, int smt)
{
	memset(t, 0, sizeof(*t));
	char err[256];
	struct ma_topo_options opt = { .spec = spec, .maxarity = MA_VT_MAXARITY, .smt = smt };
	int ret = ma_topo_load(&t->topo, &opt, err, sizeof(err));
	ck_assert_msg(ret == 0, "loading \"%s\" failed: %s", spec, err);
	unsigned nl = t->topo.nb_levels, nv = t->topo.nb_vps;
	t->it = calloc(nl + nv, sizeof(*t->it));
	ck_assert_ptr_nonnull(t->it);
	for (unsigned q = 0; q < nl; q++) {
		const struct ma_level *l = &t->topo.levels[q];
		t->it[q] = (struct ma_vitem){ .vp = -1, .parent = l->parent ? (int)l->parent->id : -1,
					      .depth = l->depth, .first_vp = l->first_vp };
	}
	for (unsigned v = 0; v < nv; v++) {
		const struct ma_level *leaf = t->topo.vps[v].leaf;
		t->it[nl + v] = (struct ma_vitem){ .vp = (int)v, .parent = (int)leaf->id, .depth = leaf->depth + 1,
						   .first_vp = v };
	}
	t->v = (struct ma_view){ .topo = &t->topo, .nb_items = nl, .nb_vps = nv, .items = t->it, .vps = t->it + nl,
				 .self_vp = -1 };
}

static inline void ma_vt_free(struct ma_vt *t)
{
	for (unsigned i = 0; i < t->nb_nodes; i++)
		free(t->nodes[i]);
	free(t->nodes);
	free(t->kids);
	free(t->it);
	ma_topo_free(&t->topo);
	memset(t, 0, sizeof(*t));
}

/* Queue number of VP vp's own queue. */
static inline int ma_vt_vpq(const struct ma_vt *t, unsigned vp)
{
	return ma_view_vp_queue(&t->v, vp);
}

/* Queue number of the index-th item (in pre-order) that carries `kind` (a ma_level_kind
 * bit), -1 if there are not that many. */
static inline int ma_vt_item(const struct ma_vt *t, unsigned kind, unsigned index)
{
	for (unsigned q = 0; q < t->topo.nb_levels; q++)
		if ((t->topo.levels[q].kinds & kind) && !index--)
			return (int)q;
	return -1;
}

/* Queue q's own counters: entities queued there (a closed bubble counts one), threads
 * belonging there that run, and, for a VP's queue, whether its VP is busy or idle. The
 * ready count is the queued one (a view built without MA_VIEW_READY). */
static inline void ma_vt_queue(struct ma_vt *t, int q, unsigned queued, unsigned running)
{
	ck_assert_int_ge(q, 0);
	ck_assert_int_lt(q, (int)(t->v.nb_items + t->v.nb_vps));
	t->it[q].queued = t->it[q].ready = queued;
	t->it[q].running = running;
}

static inline void ma_vt_vp_state(struct ma_vt *t, unsigned vp, int busy, int idle)
{
	struct ma_vitem *x = &t->it[ma_vt_vpq(t, vp)];
	x->busy = busy != 0;
	x->idle_vps = idle != 0;
}

/* The sub_* sums, nb_vps and idle_vps of the items, by the builders' rule. */
static inline void ma_vt_sum(struct ma_vt *t)
{
	ma_view_items_sum(t->it, t->v.nb_items, t->v.nb_vps);
}

/* A node, with its creation index (a node's address is its wrapper's). */
struct ma_vt_node {
	struct ma_vnode n;
	unsigned index;
};

static inline unsigned ma_vt_index(const struct ma_vnode *n)
{
	return ((const struct ma_vt_node *)(const void *)n)->index;
}

static inline struct ma_vnode *ma_vt_node(struct ma_vt *t, const struct ma_vnode *parent, uint64_t id)
{
	if (t->nb_nodes == t->cap_nodes) {
		t->cap_nodes = t->cap_nodes ? 2 * t->cap_nodes : 64;
		t->nodes = realloc(t->nodes, t->cap_nodes * sizeof(*t->nodes));
		ck_assert_ptr_nonnull(t->nodes);
	}
	struct ma_vt_node *x = calloc(1, sizeof(*x));
	ck_assert_ptr_nonnull(x);
	x->n = (struct ma_vnode){ .id = id, .parent = parent, .item = -1, .queued_item = -1, .home = -1,
				  .last_item = -1, .last_vp = -1, .fixed_item = -1, .pref_node = -1, .load_hint = -1 };
	x->index = t->nb_nodes;
	t->nodes[t->nb_nodes++] = &x->n;
	return &x->n;
}

/* A bubble, member of `parent` (NULL: the tree's root): woken, closed, placed nowhere
 * (item -1). */
static inline struct ma_vnode *ma_vt_bubble(struct ma_vt *t, const struct ma_vnode *parent, uint64_t id)
{
	struct ma_vnode *n = ma_vt_node(t, parent, id);
	n->is_bubble = 1;
	n->woken = 1;
	n->status = MA_V_CLOSED;
	return n;
}

/* A thread, member of bubble `parent`: started and ready, never run, load 1. */
static inline struct ma_vnode *ma_vt_thread(struct ma_vt *t, const struct ma_vnode *parent, uint64_t id)
{
	struct ma_vnode *n = ma_vt_node(t, parent, id);
	n->state = MA_V_READY;
	n->load = 1;
	n->nb_threads = 1;
	n->nb_ready = 1;
	return n;
}

/* A bubble's totals over its members, as the builder synthesizes them. */
static inline void ma_vt_synth(struct ma_vnode *n)
{
	ma_vnode_synth(n);
}

/* Links every node to its parent's children (in creation order), synthesizes the
 * bubbles' totals, makes `root` the view's root and sums the items. */
static inline void ma_vt_finish(struct ma_vt *t, struct ma_vnode *root)
{
	unsigned n = t->nb_nodes;
	free(t->kids);
	t->kids = calloc(n ? n : 1, sizeof(*t->kids));
	unsigned *first = calloc(n + 1, sizeof(*first));
	ck_assert_ptr_nonnull(t->kids);
	ck_assert_ptr_nonnull(first);
	/* Children counted per parent, their blocks laid out in creation order. */
	for (unsigned i = 0; i < n; i++)
		if (t->nodes[i]->parent)
			first[ma_vt_index(t->nodes[i]->parent) + 1]++;
	for (unsigned i = 0; i < n; i++) {
		first[i + 1] += first[i];
		t->nodes[i]->children = t->kids + first[i];
		t->nodes[i]->nb_children = 0;
	}
	for (unsigned i = 0; i < n; i++) {
		const struct ma_vnode *p = t->nodes[i]->parent;
		if (p)
			t->kids[first[ma_vt_index(p)] + t->nodes[ma_vt_index(p)]->nb_children++] = t->nodes[i];
	}
	free(first);
	if (root)
		ma_vt_synth(root);
	t->v.root = root;
	ma_vt_sum(t);
}

/* A pick view with room for its children items. */
#define MA_VT_PICK_KIDS 64u
struct ma_vt_pick {
	struct ma_pick_view pv;
	struct ma_pick_kid kids[MA_VT_PICK_KIDS];
};

/* The pick view of closed bubble b (made by ma_vt_bubble; its totals synthesized by
 * ma_vt_finish) met on queue q by VP vp, as ma_pick_view_fill makes it: without the
 * children items. */
static inline struct ma_pick_view *ma_vt_pick(struct ma_vt *t, struct ma_vt_pick *p, const struct ma_vnode *b,
					      int q, unsigned vp)
{
	memset(p, 0, sizeof(*p));
	p->pv.topo = &t->topo;
	p->pv.b = *b;
	p->pv.b.parent = NULL;
	p->pv.b.children = NULL;
	p->pv.b.nb_children = 0;
	p->pv.b.item = p->pv.b.queued_item = q;
	p->pv.item = q;
	p->pv.self_vp = (int)vp;
	p->pv.kids = p->kids;
	p->pv.max_kids = MA_VT_PICK_KIDS;
	return &p->pv;
}

/* Fills in pick view pv's children items as ma_pick_view_kids does, from t's counters. */
static inline void ma_vt_pick_kids(const struct ma_vt *t, struct ma_pick_view *pv)
{
	pv->has_kids = 1;
	pv->nb_kids = 0;
	if (pv->item >= (int)t->topo.nb_levels)
		return;
	const struct ma_level *l = &t->topo.levels[pv->item];
	for (unsigned i = 0; i < l->arity && pv->nb_kids < pv->max_kids; i++) {
		const struct ma_level *c = l->children[i];
		if (!c->nb_vps)
			continue;
		pv->kids[pv->nb_kids++] = (struct ma_pick_kid){
			.item = (int)c->id,
			.nb_vps = c->nb_vps,
			.work = ma_vitem_work(&t->it[c->id]),
			.mine = ma_view_sees(&t->v, (int)c->id, (unsigned)pv->self_vp),
		};
	}
}

/* A decision list with its storage. */
#define MA_VT_LIST_MAX 4096
struct ma_vt_list {
	struct ma_decision d[MA_VT_LIST_MAX];
	struct ma_dlist l;
};

static inline struct ma_dlist *ma_vt_list(struct ma_vt_list *x, unsigned cap)
{
	ck_assert_uint_le(cap, MA_VT_LIST_MAX);
	ma_dlist_init(&x->l, x->d, cap);
	return &x->l;
}

#endif
