/*
 * spread and memory: the runtime side of the decision in distrib.c. A decision reads a
 * view of the bubble tree (ma_dnode), taken under the bubble locks the way statistics are
 * synthesized, decides with no lock held, and executes with the core's primitives, top
 * down: a bubble is placed on the item it bursts on, burst there, and only then are its
 * members moved further down (ma_bubble_burst wants it closed and on that queue).
 *
 * spread: recursive greedy distribution of the load statistic over the levels, bursting
 * only bubbles too big for one child. memory: the same, but a bubble first goes to the
 * NUMA node holding most of its attached memory.
 *
 * start distributes the root bubble's members at once from the machine (the root stays
 * opened there); submit decides for one bubble below the item its parent is opened on,
 * with what is already placed as the starting load. shake, tick and sched are the core's
 * defaults (regenerate, serve).
 */
#include <errno.h>
#include <stdlib.h>
#include "ma_strategy.h"
#include "ma_distrib.h"

/* ---- the view ---- */

struct ma_view {
	int counting;             /* first pass: only count nodes */
	struct ma_dnode *nodes;
	unsigned nb, cap;
	struct ma_dnode **kids;   /* every node's children array, end to end */
	unsigned nb_kids;
	struct ma_dnode **top;    /* the entities to place */
	unsigned nb_top;
};

static int ma_view_wants_task(struct marcel_task *t)
{
	int s = atomic_load_explicit(&t->state, memory_order_relaxed);
	return s != MA_TASK_BORN && s != MA_TASK_FREE && s != MA_TASK_DEAD && !t->is_main && !t->is_idle;
}

static double ma_hint(const struct ma_entity *e)
{
	long long h = __atomic_load_n(&e->load_hint, __ATOMIC_RELAXED);
	return h >= 0 ? (double)h : -1;
}

/* Load of closed unit b (locked), by the rule of ma_entity_load. */
static double ma_locked_load(struct ma_bubble *b)
{
	double h = ma_hint(&b->e);
	if (h >= 0)
		return h;
	double sum = 0;
	for (struct ma_list *l = b->members.next; l != &b->members; l = l->next) {
		struct ma_entity *m = ma_container_of(l, struct ma_entity, member_node);
		if (m->type == MA_TASK_ENTITY) {
			double th = ma_hint(m);
			sum += th >= 0 ? th : 1;
			continue;
		}
		struct ma_bubble *s = ma_bubble_of_entity(m);
		ma_spin_lock(&s->hold.lock);
		sum += ma_locked_load(s);
		ma_spin_unlock(&s->hold.lock);
	}
	return sum;
}

static struct ma_dnode *ma_view_new(struct ma_view *v, struct ma_entity *e, int is_bubble)
{
	if (v->counting) {
		v->nb++;
		return NULL;
	}
	if (v->nb >= v->cap)
		return NULL; /* the tree grew since it was counted: the rest stays where it is */
	struct ma_dnode *x = &v->nodes[v->nb++];
	if (is_bubble) /* the view outlives the locks it was built under (ma_view_free) */
		ma_bubble_ref(ma_bubble_of_entity(e));
	*x = (struct ma_dnode){
		.e = e,
		.is_bubble = is_bubble,
		.load = ma_hint(e),
		.sched_level = __atomic_load_n(&e->sched_level, __ATOMIC_RELAXED),
		.fixed_item = -1,
		.pref_node = -1,
	};
	return x;
}

static struct ma_dnode *ma_view_task(struct ma_view *v, struct marcel_task *t)
{
	struct ma_dnode *x = ma_view_new(v, &t->e, 0);
	if (x && t->pinned) {
		/* Left where its VP set put it; its load still counts there. */
		struct ma_holder *h = __atomic_load_n(&t->e.sched_holder, __ATOMIC_ACQUIRE);
		x->fixed_item = h && h->type == MA_RUNQUEUE_HOLDER ? (int)ma_rq_of_holder(h)->level->id : 0;
	}
	return x;
}

/* Bubble b is locked by the caller. */
static struct ma_dnode *ma_view_bubble(struct ma_view *v, struct ma_bubble *b)
{
	struct ma_dnode *x = ma_view_new(v, &b->e, 1);
	int fixed = __atomic_load_n(&b->fixed_item, __ATOMIC_RELAXED);
	if (fixed >= 0) {
		/* scheduleonlevel: the core keeps it on its item; only its load matters here. */
		if (x) {
			x->fixed_item = fixed;
			x->load = ma_locked_load(b);
		}
		return x;
	}
	if (!v->counting && !x)
		return NULL;
	unsigned want = 0, added = 0, base = v->nb_kids;
	if (!v->counting) {
		for (struct ma_list *l = b->members.next; l != &b->members; l = l->next) {
			struct ma_entity *m = ma_container_of(l, struct ma_entity, member_node);
			want += m->type == MA_BUBBLE_ENTITY || ma_view_wants_task(ma_task_of_entity(m));
		}
		if (want > v->cap - v->nb_kids)
			want = v->cap - v->nb_kids;
		v->nb_kids += want;
	}
	for (struct ma_list *l = b->members.next; l != &b->members; l = l->next) {
		if (!v->counting && added == want)
			break;
		struct ma_entity *m = ma_container_of(l, struct ma_entity, member_node);
		struct ma_dnode *c;
		if (m->type == MA_TASK_ENTITY) {
			if (!ma_view_wants_task(ma_task_of_entity(m)))
				continue;
			c = ma_view_task(v, ma_task_of_entity(m));
		} else {
			/* Inside a closed bubble every sub-bubble is closed and woken. */
			struct ma_bubble *s = ma_bubble_of_entity(m);
			ma_spin_lock(&s->hold.lock);
			c = ma_view_bubble(v, s);
			ma_spin_unlock(&s->hold.lock);
		}
		if (c)
			v->kids[base + added++] = c;
	}
	if (x) {
		x->children = v->kids + base;
		x->nb_children = added;
	}
	return x;
}

static void ma_view_top(struct ma_view *v, struct ma_dnode *x)
{
	if (x && v->nb_top < v->cap)
		v->top[v->nb_top++] = x;
}

/* What a decision is made on: closed bubble b, or (b NULL) the root's members that are
 * closed bubbles or threads. */
static void ma_view_walk(struct ma_view *v, struct ma_bubble *b)
{
	if (b) {
		ma_spin_lock(&b->hold.lock);
		ma_view_top(v, ma_view_bubble(v, b));
		ma_spin_unlock(&b->hold.lock);
		return;
	}
	struct ma_bubble *r = ma_root_bubble;
	ma_spin_lock(&r->hold.lock);
	for (struct ma_list *l = r->members.next; l != &r->members; l = l->next) {
		struct ma_entity *m = ma_container_of(l, struct ma_entity, member_node);
		if (m->type == MA_TASK_ENTITY) {
			if (ma_view_wants_task(ma_task_of_entity(m)))
				ma_view_top(v, ma_view_task(v, ma_task_of_entity(m)));
			continue;
		}
		struct ma_bubble *s = ma_bubble_of_entity(m);
		ma_spin_lock(&s->hold.lock);
		/* Bubbles still closing are submitted on their own once every thread is back. */
		if (s->woken && atomic_load(&s->status) == MA_BUBBLE_CLOSED)
			ma_view_top(v, ma_view_bubble(v, s));
		ma_spin_unlock(&s->hold.lock);
	}
	ma_spin_unlock(&r->hold.lock);
}

/* Builds the view: counts, allocates, fills. 0 or ENOMEM. */
static int ma_view_build(struct ma_view *v, struct ma_bubble *b, int memory)
{
	*v = (struct ma_view){ .counting = 1 };
	ma_view_walk(v, b);
	/* Room for some growth in between. */
	unsigned cap = v->nb + v->nb / 8 + 16;
	*v = (struct ma_view){ .cap = cap };
	v->nodes = malloc(cap * sizeof(*v->nodes));
	v->kids = malloc(cap * sizeof(*v->kids));
	v->top = malloc(cap * sizeof(*v->top));
	if (!v->nodes || !v->kids || !v->top)
		return ENOMEM;
	ma_view_walk(v, b);
	if (memory)
		/* Outside the locks: it synthesizes statistics (and takes them itself). */
		for (unsigned i = 0; i < v->nb; i++)
			if (v->nodes[i].is_bubble && v->nodes[i].fixed_item < 0)
				v->nodes[i].pref_node = ma_entity_preferred_node(v->nodes[i].e);
	return 0;
}

static void ma_view_free(struct ma_view *v)
{
	for (unsigned i = 0; i < v->nb; i++)
		if (v->nodes[i].is_bubble)
			ma_bubble_unref(ma_bubble_of_entity(v->nodes[i].e));
	free(v->nodes);
	free(v->kids);
	free(v->top);
}

/* ---- what is already placed ---- */

/* Adds to own[item] the load of every unit scheduled on that item's queue (or on one of
 * its VPs' queues) below opened bubble x (locked), skipping bubble `skip`. */
static void ma_placed_rec(struct ma_bubble *x, double *own, const struct ma_bubble *skip)
{
	for (struct ma_list *l = x->members.next; l != &x->members; l = l->next) {
		struct ma_entity *m = ma_container_of(l, struct ma_entity, member_node);
		if (m->type == MA_TASK_ENTITY) {
			struct marcel_task *t = ma_task_of_entity(m);
			struct ma_holder *h = __atomic_load_n(&m->sched_holder, __ATOMIC_ACQUIRE);
			if (h && h->type == MA_RUNQUEUE_HOLDER && ma_view_wants_task(t)) {
				double th = ma_hint(m);
				own[ma_rq_of_holder(h)->level->id] += th >= 0 ? th : 1;
			}
			continue;
		}
		struct ma_bubble *s = ma_bubble_of_entity(m);
		if (s == skip)
			continue;
		ma_spin_lock(&s->hold.lock);
		struct ma_holder *h = s->e.sched_holder;
		if (atomic_load(&s->status) == MA_BUBBLE_OPENED)
			ma_placed_rec(s, own, skip);
		else if (h && h->type == MA_RUNQUEUE_HOLDER)
			own[ma_rq_of_holder(h)->level->id] += ma_locked_load(s);
		ma_spin_unlock(&s->hold.lock);
	}
}

/* ---- executing a decision ---- */

static void ma_execute(struct ma_dnode *x)
{
	if (x->fixed_item >= 0 || x->item < 0)
		return;
	struct ma_runqueue *rq = &ma_rt.rqs[x->item];
	if (!x->is_bubble) {
		/* EBUSY (pinned meanwhile, or held in a bubble that did not burst): leave it. */
		ma_entity_move(x->e, rq);
		return;
	}
	struct ma_bubble *b = ma_bubble_of_entity(x->e);
	if (__atomic_load_n(&b->e.sched_holder, __ATOMIC_ACQUIRE) != &rq->hold)
		ma_bubble_place(b, rq);
	if (!x->burst)
		return;
	ma_bubble_burst(b, rq);
	/* Not burst (someone gathered or moved it meanwhile): its members stay in it. */
	if (atomic_load(&b->status) != MA_BUBBLE_OPENED)
		return;
	for (unsigned i = 0; i < x->nb_children; i++)
		ma_execute(x->children[i]);
}

/* Decides for view v below item `item` and executes. 0 or ENOMEM (nothing done). */
static int ma_decide_and_execute(struct ma_view *v, unsigned item, const double *init, int memory)
{
	int err = ma_distrib_decide(&ma_rt.topo, item, v->top, v->nb_top, init, memory);
	if (err)
		return err;
	for (unsigned i = 0; i < v->nb_top; i++)
		ma_execute(v->top[i]);
	return 0;
}

/* ---- hooks ---- */

/* While start gathers the root's opened bubbles, those that close at once come back
 * through submit in the starting thread: they only wait on the machine's queue then, and
 * start places them with the rest. (Per marcel thread, not per kernel thread: a thread
 * may change workers.) */
static atomic_int ma_spread_starting;
static struct marcel_task *_Atomic ma_spread_starter;

static int ma_spread_deferred(void)
{
	return atomic_load(&ma_spread_starting) && atomic_load(&ma_spread_starter) == ma_task_self();
}

static void ma_spread_submit_common(struct ma_bubble *b, int memory)
{
	struct ma_bubble *p = ma_entity_parent(&b->e);
	struct ma_holder *h = p ? __atomic_load_n(&p->e.sched_holder, __ATOMIC_ACQUIRE) : NULL;
	struct ma_runqueue *prq = h && h->type == MA_RUNQUEUE_HOLDER ? ma_rq_of_holder(h) : &ma_rt.rqs[0];
	/* Before sched_begin a bubble waits where its parent is; a VP's own queue has
	 * nothing below it. */
	if (!atomic_load(&ma_sched_begun) || ma_spread_deferred() || prq->vp >= 0) {
		ma_bubble_place(b, prq);
		return;
	}
	struct ma_view v;
	double *own = calloc(ma_rt.topo.nb_levels, sizeof(*own));
	int err = own ? ma_view_build(&v, b, memory) : ENOMEM;
	if (!err) {
		struct ma_bubble *r = ma_root_bubble;
		ma_spin_lock(&r->hold.lock);
		ma_placed_rec(r, own, b);
		ma_spin_unlock(&r->hold.lock);
		err = ma_decide_and_execute(&v, prq->level->id, own, memory);
	}
	if (own)
		ma_view_free(&v);
	free(own);
	if (err)
		ma_bubble_place(b, prq); /* out of memory: at least schedule it */
}

/* Gathers the root's opened members (implicit children bubbles, bubbles burst by a
 * previous strategy) so that they can be placed with the rest. */
static void ma_spread_gather_root(void)
{
	struct ma_bubble *r = ma_root_bubble;
	unsigned n = 0, cap = 0;
	struct ma_bubble **open = NULL;
	for (;;) {
		ma_spin_lock(&r->hold.lock);
		n = 0;
		for (struct ma_list *l = r->members.next; l != &r->members; l = l->next) {
			struct ma_entity *m = ma_container_of(l, struct ma_entity, member_node);
			if (m->type != MA_BUBBLE_ENTITY ||
			    atomic_load(&ma_bubble_of_entity(m)->status) != MA_BUBBLE_OPENED)
				continue;
			if (n < cap) {
				open[n] = ma_bubble_of_entity(m);
				ma_bubble_ref(open[n]); /* an implicit one may be let go of meanwhile */
			}
			n++;
		}
		ma_spin_unlock(&r->hold.lock);
		if (n <= cap)
			break;
		for (unsigned i = 0; i < cap; i++)
			ma_bubble_unref(open[i]);
		free(open);
		cap = n + 8;
		open = malloc(cap * sizeof(*open));
		if (!open)
			return;
	}
	atomic_store(&ma_spread_starter, ma_task_self());
	atomic_store(&ma_spread_starting, 1);
	for (unsigned i = 0; i < n; i++) {
		ma_bubble_gather(open[i]);
		ma_bubble_unref(open[i]);
	}
	atomic_store(&ma_spread_starting, 0);
	free(open);
}

static void ma_spread_start_common(int memory)
{
	ma_spread_gather_root();
	struct ma_view v;
	int err = ma_view_build(&v, NULL, memory);
	if (!err)
		err = ma_decide_and_execute(&v, 0, NULL, memory);
	ma_view_free(&v);
	(void)err; /* out of memory: everything stays where it was, still scheduled */
}

static void ma_spread_start(void)
{
	ma_spread_start_common(0);
}

static void ma_spread_submit(struct ma_bubble *b)
{
	ma_spread_submit_common(b, 0);
}

static void ma_memory_start(void)
{
	ma_spread_start_common(1);
}

static void ma_memory_submit(struct ma_bubble *b)
{
	ma_spread_submit_common(b, 1);
}

const struct ma_strategy ma_strategy_spread = {
	.name = "spread",
	.description = "recursive greedy distribution of the load statistic over the levels, bursting only "
		       "bubbles too big for one child",
	.start = ma_spread_start,
	.submit = ma_spread_submit,
};

const struct ma_strategy ma_strategy_memory = {
	.name = "memory",
	.description = "a bubble goes to the NUMA node holding most of its attached memory; the rest is "
		       "balanced by load",
	.start = ma_memory_start,
	.submit = ma_memory_submit,
};
