/*
 * cache (alias affinity): entities go back where they last ran, so that they find their
 * data in the caches they left it in; bubbles are burst only when they cannot stay whole;
 * what never ran is balanced.
 *
 * A submitted bubble (woken, or closed again by a shake or a regeneration) starts from
 * the smallest item covering the VPs its threads last ran on (a single VP's queue when
 * they all ran on one), widened while that item cannot take it without overloading; a
 * bubble that never ran starts from its parent's queue. From there it goes down the
 * levels: at each item, every entity goes whole to the child holding its last VPs (or
 * most of them) if that child has room, else to the lightest child with room; one with
 * room nowhere is burst there (its members then choose the same way), unless every child
 * is full anyway, in which case it stays whole where it ran (or on the lightest child).
 * Among equally light children, what never ran goes to the one running its waker.
 * Entities end on VP queues: a thread on its last VP when it can, a closed bubble served
 * by one VP.
 *
 * It decides on the view (decide_start, decide_submit): the plan is made on a copy of the
 * view's subtree with the view's loads (each closed bubble queued counted as its ready
 * threads: MA_VIEW_READY), then returned as decisions, top down. The plan's walks keep
 * their own stacks: a submit may be decided on a preempted thread's stack.
 */
#include <stdlib.h>
#include "ma_strategies.h"
#include "ma_view.h"

enum ma_cn_act { MA_CN_NONE, MA_CN_PLACE, MA_CN_BURST };

/* One entity of the plan. */
struct ma_cn {
	const struct ma_vnode *n;
	long long load;
	int vp;                        /* the VP all its threads last ran on; -1: several; -2: none ran */
	int cover;                     /* smallest item covering those VPs; -1: none ran */
	int first, next;               /* members (first child, next sibling); -1: none */
	unsigned char burstable;       /* a closed bubble with members that may be burst */
	unsigned char movable;         /* the executor may move it */
	enum ma_cn_act act;
	int q;                         /* the queue it is placed or burst on */
};

struct ma_cplan {
	const struct ma_view *v;
	struct ma_cn *n;
	unsigned nb, cap;
	int failed;
	int waker_vp;                  /* the VP deciding (it woke the bubble), -1: none */
};

/* The item of queue q's subtree with VPs that holds both a and b (items), -1 if one is. */
static int ma_cache_lca(const struct ma_view *v, int a, int b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	while (v->items[a].depth > v->items[b].depth)
		a = v->items[a].parent;
	while (v->items[b].depth > v->items[a].depth)
		b = v->items[b].parent;
	while (a != b) {
		a = v->items[a].parent;
		b = v->items[b].parent;
	}
	return a;
}

/* ---- the plan: a copy of the subtree ---- */

/* Room for `more` nodes; 0 if memory ran out. */
static int ma_cn_room(struct ma_cplan *p, unsigned more)
{
	if (p->nb + more <= p->cap)
		return 1;
	unsigned cap = 2 * (p->nb + more) + 64;
	struct ma_cn *x = realloc(p->n, cap * sizeof(*x));
	if (!x) {
		p->failed = 1;
		return 0;
	}
	p->n = x;
	p->cap = cap;
	return 1;
}

static int ma_cn_new(struct ma_cplan *p, const struct ma_vnode *n)
{
	p->n[p->nb] = (struct ma_cn){ .n = n, .vp = -2, .cover = -1, .first = -1, .next = -1 };
	return (int)p->nb++;
}

/* Copies the subtree of view node `top` into the plan, breadth first (the array is its
 * own queue: a node's members come after it), then sums loads, last VPs and covers from
 * the members up (the array backwards). Returns top's node, -1 if memory ran out. */
static int ma_cn_build(struct ma_cplan *p, const struct ma_vnode *top)
{
	unsigned from = p->nb;
	if (!ma_cn_room(p, 1))
		return -1;
	ma_cn_new(p, top);
	for (unsigned i = from; i < p->nb; i++) {
		const struct ma_vnode *n = p->n[i].n;
		if (!ma_cn_room(p, n->nb_children))
			return -1;
		int last = -1;
		for (unsigned k = 0; k < n->nb_children; k++) {
			int m = ma_cn_new(p, n->children[k]);
			if (last < 0)
				p->n[i].first = m;
			else
				p->n[last].next = m;
			last = m;
		}
	}
	const struct ma_view *v = p->v;
	for (unsigned i = p->nb; i-- > from;) {
		struct ma_cn *c = &p->n[i];
		const struct ma_vnode *n = c->n;
		if (!n->is_bubble) {
			c->load = n->load_hint >= 0 ? (long long)n->load_hint : 1;
			c->movable = !n->pinned && n->state != MA_V_BORN && n->state != MA_V_DEAD;
			if (n->last_vp >= 0 && (unsigned)n->last_vp < v->nb_vps) {
				c->vp = n->last_vp;
				c->cover = v->items[ma_view_vp_queue(v, (unsigned)n->last_vp)].parent;
			}
			continue;
		}
		long long load = 0;
		int vp = -2, cover = -1;
		for (int m = c->first; m >= 0; m = p->n[m].next) {
			const struct ma_cn *x = &p->n[m];
			load += x->load;
			if (x->vp != -2) {
				vp = vp == -2 ? x->vp : (vp == x->vp ? vp : -1);
				cover = ma_cache_lca(v, cover, x->cover);
			}
		}
		c->load = n->load_hint >= 0 ? (long long)n->load_hint : load;
		c->vp = vp;
		c->cover = cover;
		c->movable = n->fixed_item < 0;
		c->burstable = c->movable && c->first >= 0 && n->status == MA_V_CLOSED;
	}
	return (int)from;
}

/* Doubles an int array (at least to *cap * 2): 0 if memory ran out (*a unchanged). */
static int ma_cache_grow(int **a, unsigned *cap)
{
	int *n = realloc(*a, 2 * *cap * sizeof(**a));
	if (!n)
		return 0;
	*a = n;
	*cap *= 2;
	return 1;
}

/* ---- deciding ---- */

#define MA_CACHE_MAXKIDS 256

struct ma_cdist {
	int kid[MA_CACHE_MAXKIDS];     /* queue numbers */
	long long load[MA_CACHE_MAXKIDS], vps[MA_CACHE_MAXKIDS];
	unsigned nb;
};

/* The queues just below queue q that a VP looks at: its child items with VPs, then the
 * own queues of the VPs whose leaf it is. */
static unsigned ma_cache_kids(const struct ma_view *v, int q, int *out, unsigned max)
{
	if (q >= (int)v->nb_items)
		return 0;
	const struct ma_level *l = &v->topo->levels[q];
	unsigned n = 0;
	for (unsigned i = 0; i < l->arity && n < max; i++)
		if (l->children[i]->nb_vps)
			out[n++] = (int)l->children[i]->id;
	const struct ma_vitem *it = &v->items[q];
	for (unsigned vp = it->first_vp; vp < v->nb_vps && n < max; vp++) {
		int vq = ma_view_vp_queue(v, vp);
		if (v->items[vq].parent == q)
			out[n++] = vq;
	}
	return n;
}

/* The child whose subtree VP vp looks at, -1 if none. */
static int ma_cdist_kid_of_vp(const struct ma_view *v, const struct ma_cdist *d, int vp)
{
	for (unsigned k = 0; k < d->nb; k++)
		if (ma_view_sees(v, d->kid[k], (unsigned)vp))
			return (int)k;
	return -1;
}

/* The child entity i would rather go to: the one holding its last VPs, else the one
 * holding most of them (its threads' votes); -1 if it never ran (or ran elsewhere). */
static int ma_cn_pref(const struct ma_cplan *p, int i, const struct ma_cdist *d)
{
	const struct ma_cn *c = &p->n[i];
	if (c->vp == -2)
		return -1;
	if (c->vp >= 0)
		return ma_cdist_kid_of_vp(p->v, d, c->vp);
	unsigned *votes = calloc(d->nb ? d->nb : 1, sizeof(*votes));
	unsigned cap = 64, n = 0;
	int *stack = malloc(cap * sizeof(*stack));
	int k = -1;
	if (votes && stack) {
		stack[n++] = i;
		while (n) {
			const struct ma_cn *x = &p->n[stack[--n]];
			if (!x->n->is_bubble) {
				int j = x->vp >= 0 ? ma_cdist_kid_of_vp(p->v, d, x->vp) : -1;
				if (j >= 0)
					votes[j]++;
				continue;
			}
			for (int m = x->first; m >= 0; m = p->n[m].next) {
				if (n == cap && !ma_cache_grow(&stack, &cap))
					break;
				stack[n++] = m;
			}
		}
		unsigned best = 0;
		for (unsigned j = 0; j < d->nb; j++)
			if (votes[j] > best) {
				best = votes[j];
				k = (int)j;
			}
	}
	free(votes);
	free(stack);
	return k;
}

/* Whether (la + x) / va < (lb + x) / vb, i.e. a is lighter once x is added. */
static int ma_cdist_lighter(const struct ma_cdist *d, unsigned a, unsigned b, long long x)
{
	return (d->load[a] + x) * d->vps[b] < (d->load[b] + x) * d->vps[a];
}

/* The lightest child once x is added (among those that fit it whole if `fit`), ties to
 * pref then to the lower index; -1 if none. */
static int ma_cdist_lightest(const struct ma_cdist *d, long long x, int fit, int pref)
{
	int best = -1;
	for (unsigned k = 0; k < d->nb; k++) {
		if (fit && d->load[k] + x > d->vps[k])
			continue;
		if (best < 0 || ma_cdist_lighter(d, k, (unsigned)best, x) ||
		    ((int)k == pref && !ma_cdist_lighter(d, (unsigned)best, k, x)))
			best = (int)k;
	}
	return best;
}

/* Chooses where the entities list[0..n) go from queue C: placed on a VP queue, or burst
 * here and their members decided in turn. Recurses once per level of the topology. */
static void ma_cache_distribute(struct ma_cplan *p, int C, int *list, unsigned n)
{
	if (!n)
		return;
	const struct ma_view *v = p->v;
	struct ma_cdist *d = malloc(sizeof(*d));
	if (!d) {
		p->failed = 1;
		return;
	}
	d->nb = ma_cache_kids(v, C, d->kid, MA_CACHE_MAXKIDS);
	if (d->nb == 1 && d->kid[0] < (int)v->nb_items) {
		/* A level with a single child adds nothing: go down at once. */
		int only = d->kid[0];
		free(d);
		ma_cache_distribute(p, only, list, n);
		return;
	}
	if (!d->nb || d->nb == 1) {
		/* A VP's queue, or an item served by one VP: everything stays here, whole. */
		int here = d->nb ? d->kid[0] : C;
		for (unsigned i = 0; i < n; i++) {
			p->n[list[i]].act = MA_CN_PLACE;
			p->n[list[i]].q = here;
		}
		free(d);
		return;
	}
	for (unsigned k = 0; k < d->nb; k++) {
		d->load[k] = (long long)ma_vitem_load_exact(&v->items[d->kid[k]]);
		d->vps[k] = v->items[d->kid[k]].nb_vps;
	}
	/* Ties for what never ran go to the child running the caller, which woke it: in a
	 * nested fork-join that is the level's joiner, which runs seeds inline only from its
	 * own VP's path. Sent to another VP on a full machine, they would run there as
	 * threads while the joiner blocks. */
	int waker = p->waker_vp >= 0 ? ma_cdist_kid_of_vp(v, d, p->waker_vp) : -1;
	/* Work list: grows as bubbles burst into their members; `to`: the entities placed. */
	unsigned cap = n + 16, len = 0, capto = n + 16, nto = 0;
	int *work = malloc(cap * sizeof(*work)), *to = malloc(capto * sizeof(*to));
	if (!work || !to) {
		p->failed = 1;
		goto out;
	}
	for (unsigned i = 0; i < n; i++)
		work[len++] = list[i];
	while (len) {
		/* Heaviest first: it has the fewest places left to fit. */
		unsigned h = 0;
		for (unsigned i = 1; i < len; i++)
			if (p->n[work[i]].load > p->n[work[h]].load)
				h = i;
		int x = work[h];
		work[h] = work[--len];
		struct ma_cn *c = &p->n[x];
		int pref = ma_cn_pref(p, x, d), k;
		int tie = c->vp == -2 ? waker : pref;
		if (pref >= 0 && d->load[pref] + c->load <= d->vps[pref]) {
			k = pref;
		} else if ((k = ma_cdist_lightest(d, c->load, 1, tie)) >= 0) {
			/* Whole elsewhere rather than in pieces. */
		} else {
			int room = 0;
			for (unsigned j = 0; j < d->nb; j++)
				room |= d->load[j] < d->vps[j];
			if (c->burstable && room) {
				c->act = MA_CN_BURST;
				c->q = C;
				for (int m = c->first; m >= 0; m = p->n[m].next) {
					if (len == cap && !ma_cache_grow(&work, &cap)) {
						p->failed = 1;
						goto out;
					}
					work[len++] = m;
				}
				continue;
			}
			/* Everything is full: stay whole, where it ran if it did. */
			k = pref >= 0 ? pref : ma_cdist_lightest(d, c->load, 0, tie);
		}
		d->load[k] += c->load;
		c->q = d->kid[k]; /* for now: which child; the recursion refines it */
		if (nto == capto && !ma_cache_grow(&to, &capto)) {
			p->failed = 1;
			goto out;
		}
		to[nto++] = x;
	}
	/* `work` is free again: the recursion's lists are built in `to`'s order. */
	while (cap < nto)
		if (!ma_cache_grow(&work, &cap)) {
			p->failed = 1;
			goto out;
		}
	/* Each child decides for what it received. */
	for (unsigned k = 0; k < d->nb && !p->failed; k++) {
		unsigned m = 0;
		for (unsigned i = 0; i < nto; i++)
			if (p->n[to[i]].q == d->kid[k])
				work[m++] = to[i];
		ma_cache_distribute(p, d->kid[k], work, m);
	}
out:
	free(work);
	free(to);
	free(d);
}

/* ---- the decisions ---- */

/* The decisions of the plan from node `top` down, top down: a bubble placed or burst,
 * and the members of a burst one in turn (threads moved, started and not ended); a full
 * list counts what it refuses (the dispatcher reports it). The executor bursts a bubble placed first without queueing it, so that
 * no thread runs on the wrong VP. */
static void ma_cache_emit(const struct ma_cplan *p, int top, struct ma_dlist *out)
{
	unsigned cap = 64, n = 0;
	int *stack = malloc(cap * sizeof(*stack));
	if (!stack)
		return;
	stack[n++] = top;
	while (n) {
		const struct ma_cn *c = &p->n[stack[--n]];
		const struct ma_vnode *x = c->n;
		if (!c->movable || c->act == MA_CN_NONE)
			continue;
		if (!x->is_bubble) {
			if (x->item != c->q)
				(void)ma_dlist_add(out, MA_D_MOVE, x->id, c->q);
			continue;
		}
		if (c->act == MA_CN_PLACE) {
			/* Where it is already too: placing queues it again (a bubble that closed
			 * on its queue is off it until then). */
			(void)ma_dlist_add(out, MA_D_PLACE, x->id, c->q);
			continue;
		}
		(void)ma_dlist_add(out, MA_D_BURST, x->id, c->q);
		/* Members in member order: pushed backwards, popped forwards. */
		unsigned from = n;
		for (int m = c->first; m >= 0; m = p->n[m].next) {
			if (n == cap && !ma_cache_grow(&stack, &cap))
				break;
			stack[n++] = m;
		}
		for (unsigned a = from, b = n; a + 1 < b; a++, b--) {
			int t = stack[a];
			stack[a] = stack[b - 1];
			stack[b - 1] = t;
		}
	}
	free(stack);
}

/* The queue to decide bubble c's placement from (see the top of the file). */
static int ma_cache_start_q(const struct ma_view *v, const struct ma_cn *c)
{
	if (c->cover < 0)
		return c->n->home >= 0 ? c->n->home : 0;
	int q = c->vp >= 0 ? ma_view_vp_queue(v, (unsigned)c->vp) : c->cover;
	while (v->items[q].parent >= 0 &&
	       (long long)ma_vitem_load_exact(&v->items[q]) + c->load > (long long)v->items[q].nb_vps)
		q = v->items[q].parent;
	return q;
}

static void ma_cache_submit(const struct ma_view *v, void *priv, struct ma_dlist *out)
{
	(void)priv;
	const struct ma_vnode *b = v->root;
	if (!b)
		return;
	struct ma_cplan p = { .v = v, .waker_vp = v->self_vp };
	int top = ma_cn_build(&p, b);
	if (top >= 0 && !p.failed)
		ma_cache_distribute(&p, ma_cache_start_q(v, &p.n[top]), &top, 1);
	if (top < 0 || p.failed) {
		/* Out of memory: at least schedule it. */
		(void)ma_dlist_add(out, MA_D_PLACE, b->id, 0);
	} else {
		if (p.n[top].act == MA_CN_NONE) {
			p.n[top].act = MA_CN_PLACE;
			p.n[top].q = 0;
		}
		ma_cache_emit(&p, top, out);
	}
	free(p.n);
}

/* marcel_bubble_sched_begin: every closed bubble of the root is placed at once, knowing
 * the others. */
static void ma_cache_start(const struct ma_view *v, void *priv, struct ma_dlist *out)
{
	(void)priv;
	const struct ma_vnode *r = v->root;
	if (!r)
		return;
	struct ma_cplan p = { .v = v, .waker_vp = v->self_vp };
	int *tops = malloc(sizeof(int) * (r->nb_children ? r->nb_children : 1));
	unsigned nt = 0;
	for (unsigned k = 0; tops && k < r->nb_children && !p.failed; k++) {
		const struct ma_vnode *b = r->children[k];
		/* The root is opened: its members are on queues, or not placed yet. */
		if (!b->is_bubble || !b->woken || b->fixed_item >= 0 || b->status != MA_V_CLOSED)
			continue;
		int i = ma_cn_build(&p, b);
		if (i >= 0)
			tops[nt++] = i;
	}
	if (tops && !p.failed) {
		ma_cache_distribute(&p, 0, tops, nt);
		for (unsigned i = 0; i < nt && !p.failed; i++)
			ma_cache_emit(&p, tops[i], out);
	}
	free(tops);
	free(p.n);
}

const struct ma_strategy ma_strategy_cache = {
	.name = "cache",
	.alias = "affinity",
	.description = "keeps entities where they last ran, bursts as few bubbles as possible, then balances",
	/* Loads count a queued closed bubble as its ready threads. */
	.view_detail = MA_VIEW_READY,
	.decide_start = ma_cache_start,
	.decide_submit = ma_cache_submit,
	/* Closed bubbles are only ever met where this strategy put them: decide_pick NULL,
	 * they are served there. */
	.private_levels = 1,
};
