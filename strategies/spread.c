/*
 * spread (and, through ma_spread.h, memory.c): the runtime side of the decision in
 * distrib.c. A decision reads a
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
 * with what is already placed as the starting load (summed by a walk of the tree, which
 * a big tree does not repeat at every submit: see "what is already placed"); below an
 * item with a single VP there is nothing to decide. init and exit set up and drop the
 * figures kept between walks. shake, tick and sched are the core's defaults
 * (regenerate, serve).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ma_strategies.h"
#include "ma_distrib.h"
#include "ma_spread.h"

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

/* pref_node while the view is built: memory is attached in the node's subtree (or, for a
 * fixed bubble, maybe: it is not looked into), so ma_view_build asks for its node. */
#define MA_VIEW_MEMORY (-2)

/* Bubble b is locked by the caller. */
static struct ma_dnode *ma_view_bubble(struct ma_view *v, struct ma_bubble *b)
{
	struct ma_dnode *x = ma_view_new(v, &b->e, 1);
	int fixed = __atomic_load_n(&b->fixed_item, __ATOMIC_RELAXED);
	if (x && (b->ranges || fixed >= 0))
		x->pref_node = MA_VIEW_MEMORY;
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
	unsigned want = 0, all = 0, added = 0, base = v->nb_kids;
	if (!v->counting) {
		for (struct ma_list *l = b->members.next; l != &b->members; l = l->next) {
			struct ma_entity *m = ma_container_of(l, struct ma_entity, member_node);
			want += m->type == MA_BUBBLE_ENTITY || ma_view_wants_task(ma_task_of_entity(m));
		}
		all = want;
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
		/* Members left out of a view that outgrew its room may hold memory. */
		if (added < all)
			x->pref_node = MA_VIEW_MEMORY;
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
	/* A bubble with memory below it is one with memory of its own or in a sub-bubble's
	 * subtree; children come after their parent. Only those are asked for their node:
	 * asking synthesizes the statistics of the whole subtree. */
	for (unsigned i = v->nb; i-- > 0;) {
		struct ma_dnode *x = &v->nodes[i];
		for (unsigned k = 0; k < x->nb_children && x->pref_node != MA_VIEW_MEMORY; k++)
			if (x->children[k]->pref_node == MA_VIEW_MEMORY)
				x->pref_node = MA_VIEW_MEMORY;
	}
	for (unsigned i = 0; i < v->nb; i++) {
		struct ma_dnode *x = &v->nodes[i];
		if (x->pref_node != MA_VIEW_MEMORY)
			continue;
		/* Outside the locks: it synthesizes statistics (and takes them itself). */
		x->pref_node = memory && x->fixed_item < 0 ? ma_entity_preferred_node(x->e) : -1;
	}
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
 * its VPs' queues) below opened bubble x (locked), skipping bubble `skip`; counts the
 * bubbles it locks in *visits. */
static void ma_placed_rec(struct ma_bubble *x, double *own, const struct ma_bubble *skip, unsigned *visits)
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
		++*visits;
		struct ma_holder *h = s->e.sched_holder;
		if (atomic_load(&s->status) == MA_BUBBLE_OPENED)
			ma_placed_rec(s, own, skip, visits);
		else if (h && h->type == MA_RUNQUEUE_HOLDER)
			own[ma_rq_of_holder(h)->level->id] += ma_locked_load(s);
		ma_spin_unlock(&s->hold.lock);
	}
}

/*
 * Summing those figures walks the tree, locking every bubble member of an opened bubble.
 * Doing it at each submit made a wake-up cost the whole tree: examples/sumtime keeps
 * thousands of bubbles opened on the machine's queue (each level's pair is spread over
 * the machine, so the next level is decided from there again), and at --n 20000 a
 * wake-up cost about 700 us. So the result of a walk that locked MA_PLACED_SMALL bubbles
 * or more is kept, every placement spread decides is added to it as it is decided, and
 * it is reused until it is older than MA_PLACED_REUSE times the CPU time the walk took:
 * a VP that does nothing but wake bubbles spends at most about 1/MA_PLACED_REUSE of its
 * time walking, whatever the size of the tree, and a decision misses what the core
 * changed meanwhile (threads that ended or were created in opened bubbles, bubbles
 * joined or moved by hand) for at most that long. Smaller trees are walked at every
 * decision, as before: there the figures are exact, whatever the machine's speed.
 */
#define MA_PLACED_SMALL 64
#define MA_PLACED_REUSE 16

struct ma_placed {
	ma_spinlock_t lock;       /* a leaf: taken with no other lock held */
	double *own;              /* per item; NULL outside init..exit */
	unsigned nb;              /* entries of own */
	unsigned gen;             /* bumped when the figures stop meaning anything (start) */
	int valid, walking;
	uint64_t at_ns, cost_ns;  /* when the walk began (CLOCK_MONOTONIC), its CPU time */
};

/* One each: a change from one to the other runs the new one's init before the old one's
 * exit. */
static struct ma_placed ma_placed_spread, ma_placed_memory;

static struct ma_placed *ma_placed_of(int memory)
{
	return memory ? &ma_placed_memory : &ma_placed_spread;
}

static uint64_t ma_thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Swaps in a new array (nb entries, or none), invalid; frees the old one. Copies are made
 * under the lock, so nobody holds the old array once the lock is released. */
static int ma_placed_reset(struct ma_placed *c, unsigned nb)
{
	double *fresh = nb ? calloc(nb, sizeof(*fresh)) : NULL;
	if (nb && !fresh)
		return ENOMEM;
	ma_spin_lock(&c->lock);
	double *old = c->own;
	c->own = fresh;
	c->nb = nb;
	c->gen++;
	c->valid = 0;
	ma_spin_unlock(&c->lock);
	free(old);
	return 0;
}

static void ma_placed_invalidate(struct ma_placed *c)
{
	ma_spin_lock(&c->lock);
	c->gen++;
	c->valid = 0;
	ma_spin_unlock(&c->lock);
}

/* Fills own (nb_levels entries) with the load already placed on each item, not counting
 * bubble `skip` (being submitted): the kept figures if they are recent enough, else a
 * walk, which is then kept. */
static void ma_placed_get(struct ma_placed *c, double *own, const struct ma_bubble *skip)
{
	unsigned nl = ma_rt.topo.nb_levels;
	uint64_t now = ma_clock_ns();
	ma_spin_lock(&c->lock);
	int usable = c->valid && c->own && c->nb == nl;
	/* While another walks, the previous figures do (they are only a little older). */
	if (usable && (c->walking || now <= c->at_ns || now - c->at_ns <= MA_PLACED_REUSE * c->cost_ns)) {
		memcpy(own, c->own, nl * sizeof(*own));
		ma_spin_unlock(&c->lock);
		return;
	}
	unsigned gen = c->gen;
	int mine = !c->walking;
	c->walking = 1;
	ma_spin_unlock(&c->lock);

	uint64_t cpu = ma_thread_cpu_ns();
	unsigned visits = 0;
	memset(own, 0, nl * sizeof(*own));
	struct ma_bubble *r = ma_root_bubble;
	ma_spin_lock(&r->hold.lock);
	ma_placed_rec(r, own, skip, &visits);
	ma_spin_unlock(&r->hold.lock);
	cpu = ma_thread_cpu_ns() - cpu;

	ma_spin_lock(&c->lock);
	if (mine)
		c->walking = 0;
	if (visits < MA_PLACED_SMALL) {
		c->valid = 0; /* a small tree: the next decision walks it again */
	} else if (c->gen == gen && c->own && c->nb == nl && (!c->valid || c->at_ns <= now)) {
		/* Not over figures reset meanwhile, nor over a walk that began later. */
		memcpy(c->own, own, nl * sizeof(*own));
		c->valid = 1;
		c->at_ns = now;
		c->cost_ns = cpu;
	}
	ma_spin_unlock(&c->lock);
}

/* What decided node x places, as the walk would count it once it is carried out (c
 * locked). */
static void ma_placed_add_rec(struct ma_placed *c, const struct ma_dnode *x)
{
	if (x->fixed_item >= 0) {
		/* Stays where it is, members included (it was not part of the walk). */
		if ((unsigned)x->fixed_item < c->nb)
			c->own[x->fixed_item] += x->eff_load;
		return;
	}
	if (x->item >= 0 && !x->burst)
		c->own[x->item] += x->eff_load;
	/* Members of a bubble kept closed are inside it, except fixed ones. */
	for (unsigned i = 0; i < x->nb_children; i++)
		ma_placed_add_rec(c, x->children[i]);
}

static void ma_placed_add(struct ma_placed *c, struct ma_dnode *const *top, unsigned n)
{
	ma_spin_lock(&c->lock);
	if (c->valid && c->own && c->nb == ma_rt.topo.nb_levels)
		for (unsigned i = 0; i < n; i++)
			ma_placed_add_rec(c, top[i]);
	ma_spin_unlock(&c->lock);
}

/* Closed bubble b placed whole on item `item` without a decision. */
static void ma_placed_add_bubble(struct ma_placed *c, struct ma_bubble *b, unsigned item)
{
	ma_spin_lock(&b->hold.lock);
	double load = ma_locked_load(b);
	ma_spin_unlock(&b->hold.lock);
	ma_spin_lock(&c->lock);
	if (c->valid && c->own && item < c->nb)
		c->own[item] += load;
	ma_spin_unlock(&c->lock);
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

/* Decides for view v below item `item` and executes; what it places is added to the kept
 * figures c (if not NULL) first, so that decisions made meanwhile count it. 0 or ENOMEM
 * (nothing done). */
static int ma_decide_and_execute(struct ma_view *v, unsigned item, const double *init, int memory,
				 struct ma_placed *c)
{
	int err = ma_distrib_decide(&ma_rt.topo, item, v->top, v->nb_top, init, memory);
	if (err)
		return err;
	if (c)
		ma_placed_add(c, v->top, v->nb_top);
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

void ma_spread_submit_common(struct ma_bubble *b, int memory)
{
	struct ma_placed *c = ma_placed_of(memory);
	struct ma_bubble *p = ma_entity_parent(&b->e);
	struct ma_holder *h = p ? __atomic_load_n(&p->e.sched_holder, __ATOMIC_ACQUIRE) : NULL;
	struct ma_runqueue *prq = h && h->type == MA_RUNQUEUE_HOLDER ? ma_rq_of_holder(h) : &ma_rt.rqs[0];
	/* Before sched_begin a bubble waits where its parent is. */
	if (!atomic_load(&ma_sched_begun) || ma_spread_deferred()) {
		ma_bubble_place(b, prq);
		return;
	}
	/* A VP's own queue has nothing below it. Below an item with one VP (or none), a
	 * decision only takes a bubble down the chain of items with that VP, whole (a single
	 * child gets all of the load, and nothing bursts to fill children), unless the
	 * bubble's own level is met on the way: no view is needed. */
	struct ma_runqueue *to = NULL;
	if (prq->vp >= 0)
		to = prq;
	else if (prq->level->nb_vps <= 1 && !__atomic_load_n(&b->e.sched_level, __ATOMIC_RELAXED))
		to = &ma_rt.rqs[ma_single_vp_bottom(prq->level)->id];
	if (to) {
		ma_bubble_place(b, to);
		ma_placed_add_bubble(c, b, to->level->id);
		return;
	}
	struct ma_view v;
	double *own = malloc(ma_rt.topo.nb_levels * sizeof(*own));
	int err = own ? ma_view_build(&v, b, memory) : ENOMEM;
	if (!err) {
		ma_placed_get(c, own, b);
		err = ma_decide_and_execute(&v, prq->level->id, own, memory, c);
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

void ma_spread_start_common(int memory)
{
	ma_spread_gather_root();
	struct ma_view v;
	int err = ma_view_build(&v, NULL, memory);
	if (!err)
		err = ma_decide_and_execute(&v, 0, NULL, memory, NULL);
	ma_view_free(&v);
	(void)err; /* out of memory: everything stays where it was, still scheduled */
	/* Everything moved: the next submit walks. */
	ma_placed_invalidate(ma_placed_of(memory));
}

/* Without room for the figures, every submit walks: slower, not wrong. */
int ma_spread_init_common(int memory)
{
	(void)ma_placed_reset(ma_placed_of(memory), ma_rt.topo.nb_levels);
	return 0;
}

void ma_spread_exit_common(int memory)
{
	(void)ma_placed_reset(ma_placed_of(memory), 0);
}

static int ma_spread_init(void)
{
	return ma_spread_init_common(0);
}

static void ma_spread_exit(void)
{
	ma_spread_exit_common(0);
}

static void ma_spread_start(void)
{
	ma_spread_start_common(0);
}

static void ma_spread_submit(struct ma_bubble *b)
{
	ma_spread_submit_common(b, 0);
}

const struct ma_strategy ma_strategy_spread = {
	.name = "spread",
	.description = "recursive greedy distribution of the load statistic over the levels, bursting only "
		       "bubbles too big for one child",
	.init = ma_spread_init,
	.exit = ma_spread_exit,
	.start = ma_spread_start,
	.submit = ma_spread_submit,
};
