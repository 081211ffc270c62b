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
 * The plan is made on a copy of the subtree (read under the bubbles' locks, as stats.c
 * does), then carried out with the placement primitives, top-down.
 */
#include <stdlib.h>
#include "common_steal.h"

enum ma_cn_act { MA_CN_NONE, MA_CN_PLACE, MA_CN_BURST };

/* One entity of the plan. */
struct ma_cn {
	struct ma_entity *e;
	long long load;
	int vp;                        /* the VP all its threads last ran on; -1: several; -2: none ran */
	const struct ma_level *cover;  /* smallest item covering those VPs; NULL: none ran */
	int first, next;               /* members (first child, next sibling); -1: none */
	unsigned char burstable;       /* a closed bubble with members that may be burst */
	unsigned char movable;         /* the primitives may move it */
	enum ma_cn_act act;
	struct ma_runqueue *rq;        /* where it is placed or burst */
};

struct ma_cplan {
	struct ma_cn *n;
	unsigned nb, cap;
	int failed;
};

static const struct ma_level *ma_cache_lca(const struct ma_level *a, const struct ma_level *b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	while (a->depth > b->depth)
		a = a->parent;
	while (b->depth > a->depth)
		b = b->parent;
	while (a != b) {
		a = a->parent;
		b = b->parent;
	}
	return a;
}

static int ma_cn_new(struct ma_cplan *p, struct ma_entity *e)
{
	if (p->nb == p->cap) {
		unsigned cap = p->cap ? p->cap * 2 : 64;
		struct ma_cn *n = realloc(p->n, cap * sizeof(*n));
		if (!n) {
			p->failed = 1;
			return -1;
		}
		p->n = n;
		p->cap = cap;
	}
	struct ma_cn *c = &p->n[p->nb];
	*c = (struct ma_cn){ .e = e, .vp = -2, .first = -1, .next = -1 };
	if (e->type == MA_BUBBLE_ENTITY) /* the plan outlives the locks it was built under */
		ma_bubble_ref(ma_bubble_of_entity(e));
	return (int)p->nb++;
}

static void ma_cplan_free(struct ma_cplan *p)
{
	for (unsigned i = 0; i < p->nb; i++)
		if (p->n[i].e->type == MA_BUBBLE_ENTITY)
			ma_bubble_unref(ma_bubble_of_entity(p->n[i].e));
	free(p->n);
}

/* Copies e's subtree into the plan; e's parent is locked by the caller, or e is the
 * bubble being submitted. Returns its node, -1 if memory ran out. */
static int ma_cn_build(struct ma_cplan *p, struct ma_entity *e)
{
	int i = ma_cn_new(p, e);
	if (i < 0)
		return -1;
	if (e->type == MA_TASK_ENTITY) {
		struct marcel_task *t = ma_task_of_entity(e);
		int s = atomic_load(&t->state), vp = __atomic_load_n(&t->last_vp, __ATOMIC_RELAXED);
		struct ma_cn *c = &p->n[i];
		c->load = e->load_hint >= 0 ? e->load_hint : 1;
		c->movable = !t->pinned && s != MA_TASK_BORN && s != MA_TASK_DEAD && s != MA_TASK_FREE;
		if (vp >= 0 && (unsigned)vp < ma_rt.nb_vps) {
			c->vp = vp;
			c->cover = ma_rt.workers[vp].rq.level;
		}
		return i;
	}
	struct ma_bubble *b = ma_bubble_of_entity(e);
	ma_spin_lock(&b->hold.lock);
	long long load = 0;
	int vp = -2, last = -1;
	const struct ma_level *cover = NULL;
	for (struct ma_list *l = b->members.next; l != &b->members && !p->failed; l = l->next) {
		int k = ma_cn_build(p, ma_container_of(l, struct ma_entity, member_node));
		if (k < 0)
			break;
		if (last < 0)
			p->n[i].first = k;
		else
			p->n[last].next = k;
		last = k;
		const struct ma_cn *m = &p->n[k];
		load += m->load;
		if (m->vp != -2) {
			vp = vp == -2 ? m->vp : (vp == m->vp ? vp : -1);
			cover = ma_cache_lca(cover, m->cover);
		}
	}
	struct ma_cn *c = &p->n[i];
	c->load = e->load_hint >= 0 ? e->load_hint : load;
	c->vp = vp;
	c->cover = cover;
	c->movable = b->fixed_item < 0;
	c->burstable = c->movable && last >= 0 && atomic_load(&b->status) == MA_BUBBLE_CLOSED;
	ma_spin_unlock(&b->hold.lock);
	return i;
}

/* ---- deciding ---- */

#define MA_CACHE_MAXKIDS 256

struct ma_cdist {
	struct ma_runqueue *kid[MA_CACHE_MAXKIDS];
	long long load[MA_CACHE_MAXKIDS], vps[MA_CACHE_MAXKIDS];
	unsigned nb;
};

/* The child of C whose subtree holds queue/item x (a VP's queue or a level), -1 if none. */
static int ma_cdist_kid_of_vp(const struct ma_cdist *d, int vp)
{
	for (unsigned k = 0; k < d->nb; k++)
		if (ma_sl_sees(d->kid[k], (unsigned)vp))
			return (int)k;
	return -1;
}

/* Votes of node i's threads for each child (their last VPs). */
static void ma_cn_votes(const struct ma_cplan *p, int i, const struct ma_cdist *d, unsigned *votes)
{
	const struct ma_cn *c = &p->n[i];
	if (c->e->type == MA_TASK_ENTITY) {
		int k = c->vp >= 0 ? ma_cdist_kid_of_vp(d, c->vp) : -1;
		if (k >= 0)
			votes[k]++;
		return;
	}
	for (int m = c->first; m >= 0; m = p->n[m].next)
		ma_cn_votes(p, m, d, votes);
}

/* The child entity i would rather go to: the one holding its last VPs, else the one
 * holding most of them; -1 if it never ran (or ran elsewhere). */
static int ma_cn_pref(const struct ma_cplan *p, int i, const struct ma_cdist *d)
{
	const struct ma_cn *c = &p->n[i];
	if (c->vp == -2)
		return -1;
	if (c->vp >= 0)
		return ma_cdist_kid_of_vp(d, c->vp);
	unsigned votes[MA_CACHE_MAXKIDS] = { 0 }, best = 0;
	int k = -1;
	ma_cn_votes(p, i, d, votes);
	for (unsigned j = 0; j < d->nb; j++)
		if (votes[j] > best) {
			best = votes[j];
			k = (int)j;
		}
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

static int ma_cn_heavier(const struct ma_cplan *p, int a, int b)
{
	return p->n[a].load > p->n[b].load;
}

/* Chooses where the entities list[0..n) go from queue C: placed on a VP queue, or burst
 * here and their members decided in turn. */
static void ma_cache_distribute(struct ma_cplan *p, struct ma_runqueue *C, int *list, unsigned n)
{
	if (!n)
		return;
	struct ma_cdist *d = malloc(sizeof(*d));
	if (!d) {
		p->failed = 1;
		return;
	}
	d->nb = ma_sl_kids(C, d->kid, MA_CACHE_MAXKIDS);
	if (d->nb == 1 && d->kid[0]->vp < 0) {
		/* A level with a single child adds nothing: go down at once. */
		struct ma_runqueue *only = d->kid[0];
		free(d);
		ma_cache_distribute(p, only, list, n);
		return;
	}
	if (!d->nb || (d->nb == 1 && d->kid[0]->vp >= 0)) {
		/* A VP's queue, or an item served by one VP: everything stays here, whole. */
		struct ma_runqueue *here = d->nb ? d->kid[0] : C;
		for (unsigned i = 0; i < n; i++) {
			p->n[list[i]].act = MA_CN_PLACE;
			p->n[list[i]].rq = here;
		}
		free(d);
		return;
	}
	for (unsigned k = 0; k < d->nb; k++) {
		d->load[k] = (long long)ma_sl_load_exact(d->kid[k], NULL);
		d->vps[k] = ma_sl_nb_vps(d->kid[k]);
	}
	/* Ties for what never ran go to the child running the caller, which woke it: in a
	 * nested fork-join that is the level's joiner, which runs seeds inline only from its
	 * own VP's path. Sent to another VP on a full machine, they would run there as
	 * threads while the joiner blocks. */
	struct ma_worker *self = ma_worker_self();
	int waker = self ? ma_cdist_kid_of_vp(d, (int)self->vp) : -1;
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
			if (ma_cn_heavier(p, work[i], work[h]))
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
				c->rq = C;
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
		c->rq = d->kid[k]; /* for now: which child; the recursion refines it */
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
			if (p->n[to[i]].rq == d->kid[k])
				work[m++] = to[i];
		ma_cache_distribute(p, d->kid[k], work, m);
	}
out:
	free(work);
	free(to);
	free(d);
}

/* ---- carrying it out ---- */

static int ma_cn_find(const struct ma_cplan *p, int parent, struct ma_entity *e, int *hint)
{
	for (int pass = 0; pass < 2; pass++)
		for (int m = pass ? p->n[parent].first : *hint; m >= 0; m = p->n[m].next)
			if (p->n[m].e == e) {
				*hint = p->n[m].next;
				return m;
			}
	return -1;
}

/* Carries out node i's decision and its members'. Nothing is locked: i is the submitted
 * bubble or a sub-bubble met in its (locked) parent, which it cannot leave without
 * being gathered first (then our moves fail harmlessly). */
static void ma_cache_exec(struct ma_cplan *p, int i)
{
	struct ma_cn *c = &p->n[i];
	if (c->e->type != MA_BUBBLE_ENTITY || !c->movable)
		return;
	struct ma_bubble *b = ma_bubble_of_entity(c->e);
	if (c->act == MA_CN_PLACE) {
		ma_bubble_place(b, c->rq);
		return;
	}
	if (c->act != MA_CN_BURST)
		return;
	/* Burst before any VP serves it, so that no thread runs on the wrong VP. */
	if (!ma_sl_place_quiet(b, c->rq))
		ma_bubble_burst(b, c->rq);
	int nsub = 0, hint = c->first;
	int *subs = malloc(sizeof(int) * (p->nb ? p->nb : 1));
	ma_spin_lock(&b->hold.lock);
	for (struct ma_list *l = b->members.next; l != &b->members; l = l->next) {
		struct ma_entity *e = ma_container_of(l, struct ma_entity, member_node);
		int m = ma_cn_find(p, i, e, &hint);
		if (m < 0 || !p->n[m].movable || p->n[m].act == MA_CN_NONE)
			continue;
		if (e->type == MA_TASK_ENTITY) {
			/* A member, so alive while we hold its bubble. */
			int s = atomic_load(&ma_task_of_entity(e)->state);
			if (s != MA_TASK_BORN && s != MA_TASK_DEAD && s != MA_TASK_FREE)
				ma_entity_move(e, p->n[m].rq);
		} else if (subs) {
			subs[nsub++] = m;
		}
	}
	ma_spin_unlock(&b->hold.lock);
	/* Bursting arms regeneration timers: not under a bubble lock (timer callbacks take
	 * bubble locks under the timer lock). */
	for (int k = 0; k < nsub; k++)
		ma_cache_exec(p, subs[k]);
	free(subs);
}

/* ---- hooks ---- */

/* The queue to decide b's placement from (see the top of the file). */
static struct ma_runqueue *ma_cache_start_rq(struct ma_bubble *b, const struct ma_cn *c)
{
	if (!c->cover) {
		struct ma_bubble *par = ma_entity_parent(&b->e);
		struct ma_holder *h = par ? __atomic_load_n(&par->e.sched_holder, __ATOMIC_ACQUIRE) : NULL;
		return h && h->type == MA_RUNQUEUE_HOLDER ? ma_rq_of_holder(h) : &ma_rt.rqs[0];
	}
	struct ma_runqueue *rq = c->vp >= 0 ? &ma_rt.workers[c->vp].rq : &ma_rt.rqs[c->cover->id];
	while (rq->father && (long long)ma_sl_load_exact(rq, NULL) + c->load > (long long)ma_sl_nb_vps(rq))
		rq = rq->father;
	return rq;
}

static void ma_cache_submit(struct ma_bubble *b)
{
	struct ma_cplan p = { 0 };
	int top = ma_cn_build(&p, &b->e);
	if (top < 0 || p.failed) {
		ma_cplan_free(&p);
		ma_bubble_place(b, &ma_rt.rqs[0]);
		return;
	}
	ma_cache_distribute(&p, ma_cache_start_rq(b, &p.n[top]), &top, 1);
	if (p.n[top].act == MA_CN_NONE) {
		p.n[top].act = MA_CN_PLACE;
		p.n[top].rq = &ma_rt.rqs[0];
	}
	ma_cache_exec(&p, top);
	ma_cplan_free(&p);
}

/* marcel_bubble_sched_begin: every closed bubble of the root is placed at once, knowing
 * the others. */
static void ma_cache_start(void)
{
	struct ma_bubble *r = ma_root_bubble;
	struct ma_cplan p = { 0 };
	int *tops = NULL;
	unsigned nt = 0;
	ma_spin_lock(&r->hold.lock);
	tops = malloc(sizeof(int) * (r->nb_members ? r->nb_members : 1));
	for (struct ma_list *l = r->members.next; tops && l != &r->members && !p.failed; l = l->next) {
		struct ma_entity *e = ma_container_of(l, struct ma_entity, member_node);
		if (e->type != MA_BUBBLE_ENTITY)
			continue;
		struct ma_bubble *b = ma_bubble_of_entity(e);
		struct ma_holder *h = __atomic_load_n(&b->e.sched_holder, __ATOMIC_ACQUIRE);
		if (!b->woken || b->fixed_item >= 0 || atomic_load(&b->status) != MA_BUBBLE_CLOSED ||
		    (h && h->type != MA_RUNQUEUE_HOLDER))
			continue;
		int i = ma_cn_build(&p, e);
		if (i >= 0)
			tops[nt++] = i;
	}
	ma_spin_unlock(&r->hold.lock);
	if (tops && !p.failed) {
		ma_cache_distribute(&p, &ma_rt.rqs[0], tops, nt);
		for (unsigned i = 0; i < nt && !p.failed; i++)
			ma_cache_exec(&p, tops[i]);
	}
	free(tops);
	ma_cplan_free(&p);
}

/* Closed bubbles are only ever met where this strategy put them: serve them there. */
static enum ma_pick ma_cache_sched(struct ma_worker *w, struct ma_runqueue *rq, struct ma_bubble *b,
				   struct ma_runqueue **to)
{
	(void)w, (void)rq, (void)b, (void)to;
	return MA_PICK_SERVE;
}

const struct ma_strategy ma_strategy_cache = {
	.name = "cache",
	.alias = "affinity",
	.description = "keeps entities where they last ran, bursts as few bubbles as possible, then balances",
	.start = ma_cache_start,
	.submit = ma_cache_submit,
	.sched = ma_cache_sched,
	.private_levels = 1,
};
