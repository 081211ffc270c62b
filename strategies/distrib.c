/*
 * spread's decision (see ma_distrib.h for the algorithm). Everything a decision needs is
 * carved out of one allocation: per-item loads, and stacks of node pointers that the
 * recursion over levels pushes and pops, so no step allocates.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "ma_distrib.h"

struct ma_dctx {
	const struct ma_topo *t;
	int memory;
	double *sub;              /* per item: load in its subtree, queued before + given now */
	double *lpv;              /* per item: sub / VPs (the greedy's key) */
	unsigned *kinds_above;    /* per item: kinds of the item and of its ancestors */
	unsigned present;         /* kinds somewhere on the machine */
	int *numa_item;           /* per NUMA node: the item carrying it, -1 if none */
	struct ma_dnode **ptrs;   /* node-pointer stack */
	size_t ptr_top, ptr_cap;
	unsigned *kids;           /* child-index stack */
	size_t kid_top, kid_cap;
};

/* What one item's step is working on. */
struct ma_dframe {
	const struct ma_level *at;
	unsigned *kids;           /* ids of the children that have VPs */
	unsigned k;
	double vsum;              /* VPs below those children */
	struct ma_dnode **w;      /* entities still to place here (a heap in step 3) */
	unsigned nw;
	struct ma_dnode **out;    /* entities given to a child */
	unsigned nout;
	double total;             /* load of the children plus what w holds */
};

static int ma_kind_reached(const struct ma_dctx *c, const struct ma_dframe *f, int kind)
{
	if (c->kinds_above[f->at->id] & (unsigned)kind)
		return 1;
	/* A leaf is as deep as anything goes. */
	if (!f->k)
		return 1;
	/* A kind the machine lacks means the nearest coarser item (marcel/bubble.h): the
	 * leaf for cores and PUs, else where we are. */
	if (!(c->present & (unsigned)kind))
		return !((unsigned)kind & (MA_LEVEL_CORE | MA_LEVEL_PU));
	return 0;
}

/* The child index x must go to because its memory is there, or -1. */
static int ma_memory_child(const struct ma_dctx *c, const struct ma_dframe *f, const struct ma_dnode *x)
{
	if (!c->memory || x->pref_node < 0 || (unsigned)x->pref_node >= c->t->nb_numa)
		return -1;
	int ni = c->numa_item[x->pref_node];
	if (ni < 0 || (unsigned)ni == f->at->id)
		return -1;
	const struct ma_level *l = &c->t->levels[ni];
	if (l->depth <= f->at->depth)
		return -1; /* we are at or below its node (or elsewhere): nothing to enforce */
	while (l->parent != f->at) {
		l = l->parent;
		if (!l || l->depth <= f->at->depth)
			return -1;
	}
	for (unsigned j = 0; j < f->k; j++)
		if (f->kids[j] == l->id)
			return (int)j;
	return -1;
}

static void ma_give(struct ma_dctx *c, struct ma_dframe *f, struct ma_dnode *x, unsigned j)
{
	unsigned id = f->kids[j];
	x->pick = j;
	c->sub[id] += x->eff_load;
	c->lpv[id] = c->sub[id] / c->t->levels[id].nb_vps;
	f->out[f->nout++] = x;
}

/* Takes entity x in at this step: what the rules decide at once is done (a reached level
 * bursts or stops it, memory sends it to its node's child); the rest joins w. total counts
 * what is now in w or given to a child. */
static void ma_admit(struct ma_dctx *c, struct ma_dframe *f, struct ma_dnode *x)
{
	if (x->fixed_item >= 0)
		return;
	if (x->sched_level && ma_kind_reached(c, f, x->sched_level)) {
		x->item = (int)f->at->id;
		if (x->is_bubble) {
			x->burst = 1;
			for (unsigned i = 0; i < x->nb_children; i++)
				ma_admit(c, f, x->children[i]);
		}
		return;
	}
	f->total += x->eff_load;
	int j = f->k ? ma_memory_child(c, f, x) : -1;
	if (j >= 0)
		ma_give(c, f, x, (unsigned)j);
	else
		f->w[f->nw++] = x;
}

static int ma_burstable(const struct ma_dnode *x)
{
	/* A bubble with a level not reached yet travels whole (a reached one burst already). */
	return x->is_bubble && x->nb_children && !x->sched_level;
}

/* Bursts x (in w or just popped) here: its members are admitted in its place. */
static void ma_burst_here(struct ma_dctx *c, struct ma_dframe *f, struct ma_dnode *x)
{
	x->burst = 1;
	x->item = (int)f->at->id;
	f->total -= x->eff_load;
	for (unsigned i = 0; i < x->nb_children; i++)
		ma_admit(c, f, x->children[i]);
}

/* Heap order: bigger load first, then pre-order. */
static int ma_before(const struct ma_dnode *a, const struct ma_dnode *b)
{
	return a->eff_load > b->eff_load || (a->eff_load == b->eff_load && a->seq < b->seq);
}

static void ma_sift_up(struct ma_dnode **h, unsigned i)
{
	struct ma_dnode *x = h[i];
	while (i) {
		unsigned p = (i - 1) / 2;
		if (!ma_before(x, h[p]))
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = x;
}

static void ma_sift_down(struct ma_dnode **h, unsigned n, unsigned i)
{
	struct ma_dnode *x = h[i];
	for (;;) {
		unsigned l = 2 * i + 1;
		if (l >= n)
			break;
		if (l + 1 < n && ma_before(h[l + 1], h[l]))
			l++;
		if (!ma_before(h[l], x))
			break;
		h[i] = h[l];
		i = l;
	}
	h[i] = x;
}

/* The child with the least load per VP; ties go to the lowest index (division is
 * correctly rounded, so equal ratios compare equal). */
static unsigned ma_lightest(const struct ma_dctx *c, const struct ma_dframe *f)
{
	unsigned best = 0;
	double bl = c->lpv[f->kids[0]];
	for (unsigned j = 1; j < f->k; j++) {
		double l = c->lpv[f->kids[j]];
		if (l < bl) {
			best = j;
			bl = l;
		}
	}
	return best;
}

static void ma_spread_at(struct ma_dctx *c, const struct ma_level *at, struct ma_dnode *const *in, unsigned n)
{
	size_t ptr_mark = c->ptr_top, kid_mark = c->kid_top;
	struct ma_dframe f = { .at = at };
	/* Every node this step can see lies in the subtrees of `in`. */
	size_t bound = 0;
	for (unsigned i = 0; i < n; i++)
		bound += in[i]->size;
	f.kids = c->kids + c->kid_top;
	for (unsigned i = 0; i < at->arity; i++)
		if (at->children[i]->nb_vps) {
			f.kids[f.k++] = at->children[i]->id;
			f.vsum += at->children[i]->nb_vps;
		}
	c->kid_top += f.k;
	f.w = c->ptrs + c->ptr_top;
	f.out = f.w + bound;
	c->ptr_top += 2 * bound;

	for (unsigned j = 0; j < f.k; j++)
		f.total += c->sub[f.kids[j]];
	for (unsigned i = 0; i < n; i++)
		ma_admit(c, &f, in[i]);

	if (!f.k) {
		/* A leaf: everything left stays here, bubbles closed. */
		for (unsigned i = 0; i < f.nw; i++)
			f.w[i]->item = (int)at->id;
		goto out;
	}

	/* Too few entities to occupy every child: burst the biggest bubble. */
	while (f.nw + f.nout < f.k) {
		int big = -1;
		for (unsigned i = 0; i < f.nw; i++)
			if (ma_burstable(f.w[i]) && (big < 0 || ma_before(f.w[i], f.w[big])))
				big = (int)i;
		if (big < 0)
			break;
		struct ma_dnode *x = f.w[big];
		f.w[big] = f.w[--f.nw];
		ma_burst_here(c, &f, x);
	}

	/* Greedy by decreasing load; a bubble too big for the lightest child bursts. */
	for (unsigned i = f.nw / 2; i-- > 0;)
		ma_sift_down(f.w, f.nw, i);
	while (f.nw) {
		struct ma_dnode *x = f.w[0];
		f.w[0] = f.w[--f.nw];
		ma_sift_down(f.w, f.nw, 0);
		unsigned j = ma_lightest(c, &f);
		const struct ma_level *cl = &c->t->levels[f.kids[j]];
		double share = f.total * cl->nb_vps / f.vsum;
		if (ma_burstable(x) && c->sub[cl->id] + x->eff_load > share * (1 + 1e-9) + 1e-9) {
			unsigned before = f.nw;
			ma_burst_here(c, &f, x);
			for (unsigned i = before; i < f.nw; i++)
				ma_sift_up(f.w, i);
			continue;
		}
		ma_give(c, &f, x, j);
	}

	/* Group by child (counting sort into w, free now), then each child's step. */
	{
		unsigned *cnt = c->kids + c->kid_top;
		memset(cnt, 0, (f.k + 1) * sizeof(*cnt));
		for (unsigned i = 0; i < f.nout; i++)
			cnt[f.out[i]->pick + 1]++;
		for (unsigned j = 0; j < f.k; j++)
			cnt[j + 1] += cnt[j];
		for (unsigned i = 0; i < f.nout; i++)
			f.w[cnt[f.out[i]->pick]++] = f.out[i];
		/* cnt[j] is now the end of child j's run. */
		c->ptr_top = (size_t)(f.w - c->ptrs) + f.nout;
		c->kid_top += f.k + 1;
		unsigned start = 0;
		for (unsigned j = 0; j < f.k; j++) {
			unsigned end = cnt[j];
			if (end > start)
				ma_spread_at(c, &c->t->levels[f.kids[j]], f.w + start, end - start);
			start = end;
		}
	}
out:
	c->ptr_top = ptr_mark;
	c->kid_top = kid_mark;
}

/* Numbers the subtree, applies the unset-load rule and resets the outputs; fixed nodes'
 * loads go to own[] (own is NULL inside a fixed node: it counted them). Returns the
 * subtree's node count. */
static unsigned ma_prepare(struct ma_dnode *x, unsigned *seq, double *own, unsigned nb_items)
{
	double *own_below = x->fixed_item >= 0 ? NULL : own;
	x->seq = (*seq)++;
	x->burst = 0;
	x->item = -1;
	x->size = 1;
	double sum = 0;
	for (unsigned i = 0; i < x->nb_children; i++) {
		struct ma_dnode *ch = x->children[i];
		x->size += ma_prepare(ch, seq, own_below, nb_items);
		/* A fixed member does not travel with its bubble. */
		if (ch->fixed_item < 0)
			sum += ch->eff_load;
	}
	x->eff_load = x->load >= 0 ? x->load : x->is_bubble ? sum : 1;
	if (x->fixed_item >= 0) {
		x->item = x->fixed_item;
		if (own && (unsigned)x->fixed_item < nb_items)
			own[x->fixed_item] += x->eff_load;
	}
	return x->size;
}

int ma_distrib_decide(const struct ma_topo *t, unsigned item, struct ma_dnode *const *ents, unsigned n,
		      const double *init_load, int memory)
{
	if (item >= t->nb_levels)
		return EINVAL;
	unsigned nl = t->nb_levels, max_arity = 1;
	for (unsigned i = 0; i < nl; i++)
		if (t->levels[i].arity > max_arity)
			max_arity = t->levels[i].arity;
	/* At most one step per level is live: each keeps what it hands its children (at most
	 * every node) while they run, and the deepest needs room for every node twice. */
	size_t depth = t->max_depth + 2;
	size_t sub_sz = 2 * nl * sizeof(double), kab_sz = nl * sizeof(unsigned);
	size_t numa_sz = (t->nb_numa + 1) * sizeof(int);
	size_t kid_cap = depth * (2 * (size_t)max_arity + 1);
	size_t kid_sz = kid_cap * sizeof(unsigned);

	/* The pre-order numbers and node counts come first: they size the pointer stack. */
	struct ma_dctx c = { .t = t, .memory = memory };
	double *own = calloc(nl, sizeof(double));
	if (!own)
		return ENOMEM;
	unsigned seq = 0;
	for (unsigned i = 0; i < n; i++)
		ma_prepare(ents[i], &seq, own, nl);
	c.ptr_cap = (size_t)seq * (depth + 1) + 1;
	size_t ptr_sz = c.ptr_cap * sizeof(struct ma_dnode *);
	char *mem = malloc(ptr_sz + sub_sz + kab_sz + numa_sz + kid_sz);
	if (!mem) {
		free(own);
		return ENOMEM;
	}
	c.ptrs = (struct ma_dnode **)(void *)mem;
	c.sub = (double *)(void *)(mem + ptr_sz);
	c.lpv = c.sub + nl;
	c.kinds_above = (unsigned *)(void *)(mem + ptr_sz + sub_sz);
	c.numa_item = (int *)(void *)(mem + ptr_sz + sub_sz + kab_sz);
	c.kids = (unsigned *)(void *)(mem + ptr_sz + sub_sz + kab_sz + numa_sz);
	c.kid_cap = kid_cap;

	for (unsigned i = 0; i <= t->nb_numa; i++)
		c.numa_item[i] = -1;
	for (unsigned i = 0; i < nl; i++) {
		const struct ma_level *l = &t->levels[i];
		c.sub[i] = own[i] + (init_load ? init_load[i] : 0);
		c.kinds_above[i] = l->kinds | (l->parent ? c.kinds_above[l->parent->id] : 0);
		c.present |= l->kinds;
		/* Pre-order: the shallowest item carrying the node wins. */
		if ((l->kinds & MA_LEVEL_NUMA) && l->numa >= 0 && (unsigned)l->numa < t->nb_numa &&
		    c.numa_item[l->numa] < 0)
			c.numa_item[l->numa] = (int)i;
	}
	free(own);
	/* Children come after their parent in pre-order: one backward pass sums subtrees. */
	for (unsigned i = nl; i-- > 1;)
		if (t->levels[i].parent)
			c.sub[t->levels[i].parent->id] += c.sub[i];
	for (unsigned i = 0; i < nl; i++)
		c.lpv[i] = t->levels[i].nb_vps ? c.sub[i] / t->levels[i].nb_vps : 0;

	ma_spread_at(&c, &t->levels[item], ents, n);
	free(mem);
	return 0;
}
