/*
 * Views of the simulated state, filled as the library's builders fill theirs
 * (bubbles/view.c): the same counters per queue, summed by the same rule
 * (ma_view_items_sum), and the bubble tree's nodes with their totals synthesized. What
 * the library reads under locks is here simply read: the simulator is one thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "ma_sim_int.h"

/* As the library's builder: at most this many entities per queue in v->waiting. */
#define MA_VIEW_WAITING_MAX 256

/* Every block a view holds, freed together. */
struct ma_view_rt {
	void **blocks;
	unsigned n, cap;
};

static void *sim_alloc(struct ma_view_rt *rt, size_t size)
{
	if (rt->n == rt->cap) {
		unsigned cap = rt->cap ? 2 * rt->cap : 16;
		void **b = realloc(rt->blocks, cap * sizeof(*b));
		if (!b)
			return NULL;
		rt->blocks = b;
		rt->cap = cap;
	}
	void *p = calloc(1, size ? size : 1);
	if (p)
		rt->blocks[rt->n++] = p;
	return p;
}

void sim_view_free(struct ma_view *v)
{
	struct ma_view_rt *rt = v->rt;
	if (rt) {
		for (unsigned i = 0; i < rt->n; i++)
			free(rt->blocks[i]);
		free(rt->blocks);
		free(rt);
	}
	memset(v, 0, sizeof(*v));
}

/* The queue thread t belongs to while it runs: its own, its closed unit's, or none. */
int sim_home_queue(const struct sim_ent *t)
{
	if (t->item >= 0)
		return t->item;
	for (const struct sim_ent *b = t->parent; b; b = b->parent)
		if (!b->parent || b->parent->opened)
			return b->queue >= 0 ? b->queue : b->item;
	return -1;
}

static void sim_items(struct sim *s, struct ma_vitem *it, unsigned flags)
{
	for (unsigned q = 0; q < s->nq; q++) {
		struct ma_vitem *x = &it[q];
		if (q < s->nl) {
			const struct ma_level *l = &s->topo.levels[q];
			*x = (struct ma_vitem){ .vp = -1, .parent = l->parent ? (int)l->parent->id : -1, .depth = l->depth,
						.first_vp = l->first_vp };
		} else {
			unsigned v = q - s->nl;
			const struct ma_level *leaf = s->topo.vps[v].leaf;
			*x = (struct ma_vitem){ .vp = (int)v, .parent = (int)leaf->id, .depth = leaf->depth + 1,
						.first_vp = v, .busy = s->vp[v].cur != NULL, .idle_vps = !s->vp[v].cur };
		}
		if (flags & MA_VIEW_SHAPE)
			continue;
		x->queued = s->q[q].n;
		x->ready = (flags & MA_VIEW_READY) ? s->q[q].ready : x->queued;
	}
	if (!(flags & MA_VIEW_SHAPE))
		for (unsigned v = 0; v < s->nv; v++)
			if (s->vp[v].cur) {
				int h = sim_home_queue(s->vp[v].cur);
				it[h >= 0 ? (unsigned)h : s->nl + v].running++;
			}
	ma_view_items_sum(it, s->nl, s->nv);
}

static unsigned char sim_vstate(const struct sim_ent *t)
{
	switch (t->state) {
	case SIM_T_READY:
		return MA_V_READY;
	case SIM_T_RUNNING:
		return MA_V_RUNNING;
	case SIM_T_BLOCKED:
		return MA_V_BLOCKED;
	default:
		return MA_V_DEAD;
	}
}

/* A node of entity e alone (no children; totals of a bubble are synthesized after). */
static void sim_node_fill(struct ma_vnode *n, const struct sim_ent *e, const struct ma_vnode *parent)
{
	*n = (struct ma_vnode){ .id = e->id, .parent = parent, .is_bubble = e->is_bubble, .prio = e->prio,
				.item = e->item, .queued_item = e->queue, .home = -1, .last_item = e->last_item,
				.last_vp = -1, .fixed_item = e->fixed_item, .pref_node = -1, .load_hint = -1 };
	if (e->is_bubble) {
		n->status = e->opened ? MA_V_OPENED : MA_V_CLOSED;
		n->woken = 1;
		n->nb_cached = e->opened ? 0 : e->ready;
		n->nb_members = e->nb_kids;
		/* The root's members are outer bubbles (gangs), as explicit bubbles of
		 * marcel_root_bubble are in the library's views, whatever was asked. */
		n->outer = e->parent && !e->parent->parent;
		return;
	}
	n->state = sim_vstate(e);
	n->pinned = e->fixed_item >= 0;
	n->stray = e->stray;
	n->in_cache = e->in_cache;
	n->last_vp = e->last_vp;
	n->load = 1;
	n->nb_threads = e->state != SIM_T_DONE;
	n->nb_ready = e->state == SIM_T_READY;
	n->nb_running = e->state == SIM_T_RUNNING;
	n->master = e->master;
	n->nb_masters = e->master && n->nb_threads;
	n->cpu_ns = (uint64_t)(e->cpu * 1e9);
	if (e->parent && e->parent->opened)
		n->home = e->parent->item;
}

/* The subtree of e, depth first; returns its node or NULL (memory). */
static struct ma_vnode *sim_tree(struct ma_view_rt *rt, const struct sim_ent *e, const struct ma_vnode *parent)
{
	struct ma_vnode *n = sim_alloc(rt, sizeof(*n));
	if (!n)
		return NULL;
	sim_node_fill(n, e, parent);
	if (!e->is_bubble)
		return n;
	const struct ma_vnode **kids = sim_alloc(rt, e->nb_kids * sizeof(*kids));
	if (!kids)
		return NULL;
	for (unsigned i = 0; i < e->nb_kids; i++) {
		struct ma_vnode *k = sim_tree(rt, e->kids[i], n);
		if (!k)
			return NULL;
		kids[i] = k;
	}
	n->children = kids;
	n->nb_children = e->nb_kids;
	return n;
}

/* MA_VIEW_METRICS: the metrics each thread of n's subtree shows, as the library's views
 * have a thread's measure or hint (bubbles/view.c): a thread that shows any (the
 * workload's profile for it) shows its current phase's while it computes one with a
 * profile. */
static void sim_metrics(struct sim *s, struct ma_vnode *n)
{
	if (n->is_bubble) {
		for (unsigned i = 0; i < n->nb_children; i++)
			sim_metrics(s, (struct ma_vnode *)(uintptr_t)n->children[i]);
		return;
	}
	const struct sim_ent *e = sim_entity(s, n->id);
	if (!e || e->index < 0)
		return;
	enum sim_profile p = s->w->metric[e->index];
	if (p != SIM_PROF_NONE && e->phase.kind == SIM_COMPUTE && e->phase.profile != SIM_PROF_NONE)
		p = e->phase.profile;
	n->metrics = (unsigned char)sim_profile_metric(p, n->metric);
}

/* Marks the outer bubbles (the root's members) and lists them. */
static int sim_outer(struct sim *s, struct ma_view *v, struct ma_view_rt *rt)
{
	unsigned n = 0;
	for (unsigned i = 0; i < s->root.nb_kids; i++)
		n += s->root.kids[i]->is_bubble;
	const struct ma_vnode **o = sim_alloc(rt, n * sizeof(*o));
	if (!o)
		return -1;
	unsigned k = 0;
	for (unsigned i = 0; i < s->root.nb_kids; i++) {
		const struct sim_ent *b = s->root.kids[i];
		if (!b->is_bubble)
			continue;
		const struct ma_vnode *found = NULL;
		if (v->root && v->root->id == s->root.id)
			for (unsigned j = 0; j < v->root->nb_children && !found; j++)
				if (v->root->children[j]->id == b->id)
					found = v->root->children[j];
		if (!found && v->root && v->root->id == b->id)
			found = v->root;
		if (!found) {
			struct ma_vnode *x = sim_alloc(rt, sizeof(*x));
			if (!x)
				return -1;
			sim_node_fill(x, b, NULL);
			found = x;
		}
		((struct ma_vnode *)(uintptr_t)found)->outer = 1;
		o[k++] = found;
	}
	v->outer = o;
	v->nb_outer = k;
	return 0;
}

/* Whether e lies in the subtree of x. */
static int sim_within(const struct sim_ent *e, const struct sim_ent *x)
{
	for (; e; e = e->parent)
		if (e == x)
			return 1;
	return 0;
}

/* MA_VIEW_PLACED: per item, the load scheduled there, the view root's subtree left out. */
static int sim_placed(struct sim *s, struct ma_view *v, struct ma_view_rt *rt, const struct sim_ent *skip)
{
	double *placed = sim_alloc(rt, s->nl * sizeof(*placed));
	if (!placed)
		return -1;
	for (unsigned t = 0; t < s->w->nb_threads; t++) {
		const struct sim_ent *e = &s->thread[t];
		if (e->state == SIM_T_DONE || e->item < 0 || (skip && sim_within(e, skip)))
			continue;
		int q = e->item >= (int)s->nl ? (int)s->topo.vps[e->item - (int)s->nl].leaf->id : e->item;
		placed[q] += 1;
	}
	for (unsigned b = 0; b < s->w->nb_bubbles; b++) {
		const struct sim_ent *e = &s->bubble[b];
		if (e->opened || e->item < 0 || (e->parent && !e->parent->opened) || (skip && sim_within(e, skip)))
			continue;
		int q = e->item >= (int)s->nl ? (int)s->topo.vps[e->item - (int)s->nl].leaf->id : e->item;
		placed[q] += e->alive;
	}
	v->placed = placed;
	return 0;
}

/* The entities waiting off VP self's path, most urgent first queue by queue. */
static int sim_waiting(struct sim *s, struct ma_view *v, struct ma_view_rt *rt, unsigned self)
{
	unsigned n = 0;
	for (int q = s->vp[self].queue; q >= 0; q = sim_parent_queue(s, q))
		s->on_path[q] = 1;
	for (unsigned q = 0; q < s->nq; q++)
		if (!s->on_path[q])
			n += s->q[q].n < MA_VIEW_WAITING_MAX ? s->q[q].n : MA_VIEW_WAITING_MAX;
	const struct ma_vnode **w = sim_alloc(rt, n * sizeof(*w));
	struct ma_vnode *nodes = sim_alloc(rt, n * sizeof(*nodes));
	if (!w || !nodes) {
		for (int q = s->vp[self].queue; q >= 0; q = sim_parent_queue(s, q))
			s->on_path[q] = 0;
		return -1;
	}
	unsigned k = 0;
	for (unsigned q = 0; q < s->nq; q++) {
		if (s->on_path[q] || !s->q[q].n)
			continue;
		unsigned c = 0;
		for (const struct sim_ent *e = s->q[q].head; e && c < MA_VIEW_WAITING_MAX; e = e->next, c++) {
			sim_node_fill(&nodes[k], e, NULL);
			if (e->is_bubble) {
				nodes[k].nb_threads = e->alive;
				nodes[k].load = e->alive;
			}
			w[k] = &nodes[k];
			k++;
		}
	}
	v->waiting = w;
	v->nb_waiting = k;
	for (int q = s->vp[self].queue; q >= 0; q = sim_parent_queue(s, q))
		s->on_path[q] = 0;
	return 0;
}

int sim_view_build(struct sim *s, struct ma_view *v, struct sim_ent *root, int self_vp, unsigned flags)
{
	memset(v, 0, sizeof(*v));
	struct ma_view_rt *rt = calloc(1, sizeof(*rt));
	if (!rt)
		return ENOMEM;
	v->rt = rt;
	struct ma_vitem *it = sim_alloc(rt, s->nq * sizeof(*it));
	if (!it) {
		sim_view_free(v);
		return ENOMEM;
	}
	sim_items(s, it, flags);
	v->topo = &s->topo;
	v->nb_items = s->nl;
	v->nb_vps = s->nv;
	v->items = it;
	v->vps = it + s->nl;
	v->self_vp = self_vp;
	v->now_ns = (uint64_t)(s->now * 1e9);
	v->begun = 1;
	v->flags = flags & (MA_VIEW_READY | MA_VIEW_SHAPE);
	if (!root && (flags & MA_VIEW_TREE))
		root = &s->root;
	if (root) {
		struct ma_vnode *r = sim_tree(rt, root, NULL);
		if (!r) {
			sim_view_free(v);
			return ENOMEM;
		}
		ma_vnode_synth(r);
		if (root->parent && root->parent->opened)
			r->home = root->parent->item;
		v->root = r;
	}
	if ((flags & MA_VIEW_METRICS) && s->w->metric) {
		if (v->root)
			sim_metrics(s, (struct ma_vnode *)(uintptr_t)v->root);
		v->flags |= MA_VIEW_HAS_METRICS;
	}
	if ((flags & MA_VIEW_OUTER) && sim_outer(s, v, rt)) {
		sim_view_free(v);
		return ENOMEM;
	}
	if (flags & MA_VIEW_OUTER)
		v->flags |= MA_VIEW_HAS_OUTER;
	if ((flags & MA_VIEW_PLACED) && sim_placed(s, v, rt, root)) {
		sim_view_free(v);
		return ENOMEM;
	}
	if (flags & MA_VIEW_PLACED)
		v->flags |= MA_VIEW_HAS_PLACED;
	if (self_vp >= 0 && !root && sim_waiting(s, v, rt, (unsigned)self_vp)) {
		sim_view_free(v);
		return ENOMEM;
	}
	return 0;
}

/* ---- pick views ---- */

void sim_pick_view(struct sim *s, struct ma_pick_view *pv, struct sim_ent *b, int q, unsigned v)
{
	memset(pv, 0, sizeof(*pv));
	pv->topo = &s->topo;
	sim_node_fill(&pv->b, b, NULL);
	pv->b.nb_threads = b->alive;
	pv->b.load = b->alive;
	pv->item = q;
	pv->self_vp = (int)v;
	pv->max_kids = s->max_kids;
	pv->kids = s->pick_kids;
}

void sim_pick_kids(struct sim *s, struct ma_pick_view *pv, unsigned v)
{
	pv->has_kids = 1;
	pv->nb_kids = 0;
	if (pv->item >= (int)s->nl)
		return;
	struct ma_vitem *it = calloc(s->nq, sizeof(*it));
	if (!it)
		return;
	sim_items(s, it, 0);
	const struct ma_level *l = &s->topo.levels[pv->item];
	for (unsigned i = 0; i < l->arity && pv->nb_kids < pv->max_kids; i++) {
		const struct ma_level *c = l->children[i];
		if (!c->nb_vps)
			continue;
		pv->kids[pv->nb_kids++] = (struct ma_pick_kid){ .item = (int)c->id, .nb_vps = c->nb_vps,
								.work = ma_vitem_work(&it[c->id]),
								.mine = sim_queue_sees(s, (int)c->id, v) };
	}
	free(it);
}

/* From the queues' running sums (sched.c, engine.c keep them): no walk of the queues. */
void sim_pick_load(struct sim *s, struct ma_pick_view *pv, struct sim_ent *b)
{
	const struct sim_queue *x = &s->q[pv->item];
	unsigned own = 0;
	for (unsigned i = 0; i < b->nb_kids; i++)
		if (!b->kids[i]->is_bubble && b->kids[i]->state == SIM_T_RUNNING && b->kids[i]->run_home >= 0 &&
		    sim_queue_within(s, b->kids[i]->run_home, pv->item))
			own++;
	unsigned nb_vps = pv->item >= (int)s->nl ? 1 : s->topo.levels[pv->item].nb_vps;
	pv->has_load = 1;
	pv->load = (struct ma_pick_load){ .nb_vps = nb_vps, .queued = x->sub_queued,
					  .running = x->sub_running > own ? x->sub_running - own : 0,
					  .threads = pv->b.nb_threads };
	for (unsigned i = 0; i < b->nb_kids; i++)
		pv->load.direct |= !b->kids[i]->is_bubble;
}
