/*
 * The view builder (ma_view_build.h): the run queues' counters and the bubble tree copied
 * into a struct ma_view (ma_view.h), in an arena the view owns and ma_view_release frees
 * in one call.
 */
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ma_view_build.h"
#include "ma_strategy.h"
#include "ma_metrics.h"

_Static_assert((int)MA_VM_FP == (int)MA_METRIC_FP && (int)MA_VM_MISS == (int)MA_METRIC_MISS &&
		       (int)MA_VM_MEMOP == (int)MA_METRIC_MEMOP && (int)MA_VM_NB == (int)MA_METRIC_NB,
	       "the view's metrics in the core's order");

/* ---- the arena ---- */

#define MA_ARENA_CHUNK 16384u

struct ma_chunk {
	struct ma_chunk *next;
	size_t size, used;
	max_align_t data[];
};

struct ma_view_rt {
	struct ma_chunk *chunks;          /* newest first; the oldest holds this structure */
	struct ma_vslot *first, **tail;   /* every slot, in creation order */
	unsigned nb_slots;
	struct ma_vslot **index;          /* the slots by id, made last */
	int failed;                       /* memory ran out: the build fails */
	unsigned char metrics;            /* threads' nodes get their metrics (MA_VIEW_METRICS) */
};

static size_t ma_arena_round(size_t n)
{
	size_t a = alignof(max_align_t);
	return (n + a - 1) / a * a;
}

/* First chunks of released views, kept for the next ones: a view is built at every
 * decision (a submit, an idle turn), and a 16 KiB malloc and free cost more than a small
 * view's walk. At most MA_ARENA_SPARE; freed when the bubbles layer stops. */
#define MA_ARENA_SPARE 8
static ma_spinlock_t ma_arena_spare_lock;
static struct ma_chunk *ma_arena_spare;
static unsigned ma_arena_nb_spare;

static struct ma_chunk *ma_chunk_first(void)
{
	ma_spin_lock(&ma_arena_spare_lock);
	struct ma_chunk *c = ma_arena_spare;
	if (c) {
		ma_arena_spare = c->next;
		ma_arena_nb_spare--;
	}
	ma_spin_unlock(&ma_arena_spare_lock);
	return c ? c : malloc(sizeof(*c) + MA_ARENA_CHUNK);
}

/* c, the first chunk of a released view (MA_ARENA_CHUNK bytes). */
static void ma_chunk_spare(struct ma_chunk *c)
{
	ma_spin_lock(&ma_arena_spare_lock);
	int keep = ma_arena_nb_spare < MA_ARENA_SPARE;
	if (keep) {
		c->next = ma_arena_spare;
		ma_arena_spare = c;
		ma_arena_nb_spare++;
	}
	ma_spin_unlock(&ma_arena_spare_lock);
	if (!keep)
		free(c);
}

/* When the bubbles layer stops: the counters the views' metrics opened are closed with
 * the spare chunks. */
void ma_view_spares_free(void)
{
	ma_metrics_stop();
	ma_spin_lock(&ma_arena_spare_lock);
	struct ma_chunk *c = ma_arena_spare;
	ma_arena_spare = NULL;
	ma_arena_nb_spare = 0;
	ma_spin_unlock(&ma_arena_spare_lock);
	while (c) {
		struct ma_chunk *next = c->next;
		free(c);
		c = next;
	}
}

static struct ma_view_rt *ma_arena_new(void)
{
	struct ma_chunk *c = ma_chunk_first();
	if (!c)
		return NULL;
	c->next = NULL;
	c->size = MA_ARENA_CHUNK;
	c->used = ma_arena_round(sizeof(struct ma_view_rt));
	struct ma_view_rt *rt = (struct ma_view_rt *)(void *)c->data;
	*rt = (struct ma_view_rt){ .chunks = c };
	rt->tail = &rt->first;
	return rt;
}

/* Zeroed memory from rt's arena; NULL (and the build failed) if memory ran out. Called
 * under bubble and queue locks too: a chunk is allocated once per 16 KiB. */
static void *ma_arena_alloc(struct ma_view_rt *rt, size_t size)
{
	size = ma_arena_round(size ? size : 1);
	struct ma_chunk *c = rt->chunks;
	if (c->size - c->used < size) {
		size_t sz = size > MA_ARENA_CHUNK ? size : MA_ARENA_CHUNK;
		struct ma_chunk *n = malloc(sizeof(*n) + sz);
		if (!n) {
			rt->failed = 1;
			return NULL;
		}
		n->next = c;
		n->size = sz;
		n->used = 0;
		rt->chunks = c = n;
	}
	void *p = (char *)c->data + c->used;
	c->used += size;
	memset(p, 0, size);
	return p;
}

void ma_view_release(struct ma_view *v)
{
	struct ma_view_rt *rt = v->rt;
	if (rt) {
		for (struct ma_vslot *s = rt->first; s; s = s->next)
			if (s->n.is_bubble)
				ma_bubble_unref(ma_bubble_of_entity(s->e));
		/* rt lives in the last chunk, the first one made, which is kept. */
		for (struct ma_chunk *c = rt->chunks, *next; c; c = next) {
			next = c->next;
			if (next)
				free(c);
			else
				ma_chunk_spare(c);
		}
	}
	memset(v, 0, sizeof(*v));
	v->self_vp = -1;
}

void *ma_view_alloc(struct ma_view *v, size_t size)
{
	return v->rt ? ma_arena_alloc(v->rt, size) : NULL;
}

unsigned ma_view_nb_nodes(const struct ma_view *v)
{
	return v->rt ? v->rt->nb_slots : 0;
}

/* A node for entity e, seen a member of `in` (NULL: the view's root, or seen on a queue).
 * A bubble is referenced here, under the lock through which the caller reached it, and
 * unreferenced by ma_view_release. */
static struct ma_vslot *ma_slot_new(struct ma_view_rt *rt, struct ma_entity *e, struct ma_bubble *in)
{
	struct ma_vslot *s = ma_arena_alloc(rt, sizeof(*s));
	if (!s)
		return NULL;
	s->e = e;
	s->in = in;
	if (e->type == MA_BUBBLE_ENTITY) {
		ma_bubble_ref(ma_bubble_of_entity(e));
		s->n.is_bubble = 1;
	}
	*rt->tail = s;
	rt->tail = &s->next;
	rt->nb_slots++;
	return s;
}

static int ma_slot_cmp(const void *a, const void *b)
{
	uint64_t x = (*(struct ma_vslot *const *)a)->n.id, y = (*(struct ma_vslot *const *)b)->n.id;
	return x < y ? -1 : x > y;
}

struct ma_vslot *ma_view_slot(const struct ma_view *v, uint64_t id)
{
	struct ma_view_rt *rt = v->rt;
	if (!rt || !rt->index)
		return NULL;
	unsigned lo = 0, hi = rt->nb_slots;
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		uint64_t m = rt->index[mid]->n.id;
		if (m == id)
			return rt->index[mid];
		if (m < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* ---- queues ---- */

int ma_view_queue_number(const struct ma_runqueue *rq)
{
	return rq->vp >= 0 ? (int)(ma_rt.topo.nb_levels + (unsigned)rq->vp) : (int)rq->level->id;
}

struct ma_runqueue *ma_view_queue(int q)
{
	unsigned nl = ma_rt.topo.nb_levels;
	if (q < 0)
		return NULL;
	if ((unsigned)q < nl)
		return &ma_rt.rqs[q];
	if ((unsigned)q - nl < ma_rt.nb_vps)
		return &ma_rt.workers[(unsigned)q - nl].rq;
	return NULL;
}

unsigned ma_view_queue_vps(int q)
{
	const struct ma_runqueue *rq = ma_view_queue(q);
	return !rq ? 0 : rq->vp >= 0 ? 1 : rq->level->nb_vps;
}

/* Queue number of holder h if it is a run queue, else -1. */
static int ma_holder_queue(const struct ma_holder *h)
{
	return h && h->type == MA_RUNQUEUE_HOLDER ? ma_view_queue_number(ma_rq_of_holder((struct ma_holder *)h)) : -1;
}

/* Threads queued on rq (locked): a closed bubble counts its cached threads, at least
 * one. The bubble is not locked (we hold its queue): its count is the estimate that is
 * written for such readers (ma_cached_add). */
static unsigned ma_queue_ready_locked(struct ma_runqueue *rq)
{
	unsigned n = 0;
	for (int p = 0; p < MA_MAX_PRIO; p++)
		ma_list_for_each_entry(struct ma_entity, e, &rq->queue[p], run_node) {
			if (e->type == MA_TASK_ENTITY) {
				n++;
				continue;
			}
			unsigned c = ma_read_once(&ma_bubble_of_entity(e)->nb_cached);
			n += c ? c : 1;
		}
	return n;
}

static unsigned ma_queue_ready(struct ma_runqueue *rq)
{
	if (!ma_read_once(&rq->nr_ready))
		return 0;
	ma_spin_lock(&rq->hold.lock);
	unsigned n = ma_queue_ready_locked(rq);
	ma_spin_unlock(&rq->hold.lock);
	return n;
}

/* The thread worker o runs, or the one its idle context took and is switching to (it is
 * then neither queued nor running); NULL if none. Inside ma_estimate_begin/end. */
static const struct marcel_task *ma_vp_thread(const struct ma_worker *o)
{
	const struct marcel_task *cur = atomic_load_explicit(&o->current, memory_order_acquire);
	if (!cur || cur == &o->idle)
		cur = atomic_load_explicit(&o->picked, memory_order_acquire);
	return cur;
}

/* The queue t belongs to: its own scheduling queue, or its closed unit's; NULL if it has
 * none (held in a unit not placed). Read without locks: only an estimate. */
static struct ma_runqueue *ma_task_queue(const struct marcel_task *t)
{
	struct ma_holder *h = ma_read_once(&t->e.sched_holder);
	if (h && h->type == MA_BUBBLE_HOLDER)
		h = ma_read_once(&ma_bubble_of_holder(h)->e.sched_holder);
	return h && h->type == MA_RUNQUEUE_HOLDER ? ma_rq_of_holder(h) : NULL;
}

/* Whether queue q is rq or lies below it. */
static int ma_rq_within(const struct ma_runqueue *q, const struct ma_runqueue *rq)
{
	for (; q; q = q->father)
		if (q == rq)
			return 1;
	return 0;
}

/* ---- the items part ---- */

/* Every queue's own counters, read without locks; ready = queued for now. */
static void ma_view_counters(struct ma_vitem *it)
{
	unsigned nl = ma_rt.topo.nb_levels, nv = ma_rt.nb_vps;
	for (unsigned q = 0; q < nl; q++) {
		const struct ma_level *l = &ma_rt.topo.levels[q];
		const struct ma_runqueue *rq = &ma_rt.rqs[q];
		it[q].vp = -1;
		it[q].parent = l->parent ? (int)l->parent->id : -1;
		it[q].depth = l->depth;
		it[q].first_vp = l->first_vp;
		it[q].queued = ma_read_once(&rq->nr_ready);
		it[q].incoming = (unsigned)atomic_load_explicit(&rq->nr_incoming, memory_order_relaxed);
	}
	for (unsigned v = 0; v < nv; v++) {
		const struct ma_worker *o = &ma_rt.workers[v];
		struct ma_vitem *x = &it[nl + v];
		x->vp = (int)v;
		x->parent = (int)o->rq.level->id;
		x->depth = o->rq.level->depth + 1;
		x->first_vp = v;
		x->queued = ma_worker_nr_ready(o);
		x->incoming = (unsigned)atomic_load_explicit(&o->rq.nr_incoming, memory_order_relaxed);
		x->nb_vps = 1;
		int s = atomic_load_explicit(&o->state, memory_order_relaxed);
		x->idle_vps = (s == MA_WORKER_SPINNING || s == MA_WORKER_SLEEPING) &&
			      !atomic_load_explicit(&o->attn.disabled, memory_order_relaxed);
	}
	for (unsigned q = 0; q < nl + nv; q++)
		it[q].ready = it[q].queued;
	/* Running threads where they belong (a thread moved or stolen runs on its old VP
	 * until its next yield: counted where it runs, both sides would look wrong until
	 * then); one that belongs to no queue counts on the VP running it, hence on every
	 * queue that VP looks at. The descriptor read may be one just recycled: its
	 * bubble's storage is not reused before ma_estimate_end. */
	struct ma_worker *est = ma_estimate_begin();
	for (unsigned v = 0; v < nv; v++) {
		const struct ma_worker *o = &ma_rt.workers[v];
		const struct marcel_task *cur = atomic_load_explicit(&o->current, memory_order_acquire);
		/* Busy as ma_rq_subtree_load has it: a VP looking for work is not. */
		it[nl + v].busy = atomic_load_explicit(&o->state, memory_order_relaxed) == MA_WORKER_BUSY && cur &&
				  !cur->is_idle;
		const struct marcel_task *t = ma_vp_thread(o);
		if (!t)
			continue;
		const struct ma_runqueue *home = ma_task_queue(t);
		it[home ? ma_view_queue_number(home) : (int)(nl + v)].running++;
	}
	ma_estimate_end(est);
}

/* it[].ready: every queue with entities locked in turn. */
static void ma_view_counters_ready(struct ma_vitem *it)
{
	unsigned nq = ma_rt.topo.nb_levels + ma_rt.nb_vps;
	for (unsigned q = 0; q < nq; q++)
		it[q].ready = it[q].queued ? ma_queue_ready(ma_view_queue((int)q)) : 0;
}

/* ---- the tree part ---- */

static unsigned char ma_vstate_of(int s)
{
	switch (s) {
	case MA_TASK_BORN: return MA_V_BORN;
	case MA_TASK_READY: return MA_V_READY;
	case MA_TASK_RUNNING: return MA_V_RUNNING;
	case MA_TASK_BLOCKING:
	case MA_TASK_BLOCKED:
	case MA_TASK_SUSPENDED: return MA_V_BLOCKED;
	default: return MA_V_DEAD;
	}
}

/* Queue number of the queue e's bubble is opened on, -1 if none (main, the root's
 * threads, a bubble not opened). e is queued on a locked queue or is a member of a
 * locked bubble, so its bubble cannot go, or the caller is inside an estimate; that
 * bubble's fields are read without its lock (they only guide a choice). */
static int ma_view_home(const struct ma_entity *e)
{
	struct ma_bubble *b = ma_entity_parent(e);
	if (!b || b == ma_root_bubble || atomic_load_explicit(&b->status, memory_order_relaxed) != MA_BUBBLE_OPENED)
		return -1;
	return ma_holder_queue(ma_read_once(&b->e.sched_holder));
}

/* Whether b is the root bubble, or an implicit bubble with only implicit bubbles between
 * it and the root: its explicit members are outer bubbles (ma_vnode.outer). The parents
 * are read without their locks: an estimate, as a bubble moved meanwhile may be seen on
 * either side. */
static int ma_bubble_top(const struct ma_bubble *b)
{
	for (;;) {
		if (!b)
			return 0;
		if (b == ma_root_bubble)
			return 1;
		if (!b->implicit)
			return 0;
		b = ma_entity_parent(&b->e);
	}
}

static int ma_bubble_outer(const struct ma_bubble *b)
{
	return b != ma_root_bubble && !b->implicit && ma_bubble_top(ma_entity_parent(&b->e));
}

/* Thread t, proven alive by the caller (a member of a bubble it holds, or queued on a
 * queue it holds). */
static void ma_view_fill_task(const struct ma_view_rt *rt, struct ma_vslot *s, struct marcel_task *t)
{
	struct ma_vnode *n = &s->n;
	struct ma_entity *e = &t->e;
	int st = atomic_load_explicit(&t->state, memory_order_relaxed);
	long long hint = atomic_load_explicit(&e->load_hint, memory_order_relaxed);
	int last_vp = atomic_load_explicit(&t->last_vp, memory_order_relaxed);
	s->sched = ma_load_acquire(&e->sched_holder);
	s->ready = ma_load_acquire(&e->ready_holder);
	n->id = t->id;
	n->state = ma_vstate_of(st);
	n->is_main = t->is_main;
	n->pinned = t->pinned;
	n->stray = atomic_load_explicit(&t->req.stray, memory_order_relaxed) != 0;
	n->suspended = atomic_load_explicit(&t->req.suspend_req, memory_order_relaxed) != 0;
	n->prio = atomic_load_explicit(&e->prio, memory_order_relaxed);
	int q = ma_holder_queue(s->sched);
	/* A thread not started gets its holder when it starts (bubble.c). */
	n->item = st == MA_TASK_BORN ? -1 : q;
	n->queued_item = ma_holder_queue(s->ready);
	n->in_cache = s->ready && s->ready->type == MA_BUBBLE_HOLDER;
	n->home = -1;
	n->last_item = ma_read_once(&e->last_level);
	n->last_vp = last_vp >= 0 && (unsigned)last_vp < ma_rt.nb_vps ? last_vp : -1;
	n->sched_level = atomic_load_explicit(&e->sched_level, memory_order_relaxed);
	/* Left where its VP set put it; its load counts there. */
	n->fixed_item = t->pinned ? (q >= 0 ? q : 0) : -1;
	n->pref_node = -1;
	n->load_hint = hint >= 0 ? (double)hint : -1;
	n->load = hint >= 0 ? (double)hint : 1;
	n->nb_threads = st != MA_TASK_BORN && st != MA_TASK_DEAD && st != MA_TASK_FREE;
	n->nb_ready = st == MA_TASK_READY;
	n->nb_running = st == MA_TASK_RUNNING;
	n->master = atomic_load_explicit(&t->master, memory_order_relaxed);
	n->spinning = n->nb_running && atomic_load_explicit(&t->spinning, memory_order_relaxed);
	n->nb_spinning = n->spinning;
	n->nb_masters = n->master && n->nb_threads;
	n->cpu_ns = ma_task_cpu_ns(t);
	if (rt->metrics)
		n->metrics = (unsigned char)ma_metrics_of(t, n->metric);
}

/* Bubble b, locked by the caller: its own fields (its members are the caller's). */
static void ma_view_fill_bubble(struct ma_vslot *s, struct ma_bubble *b)
{
	struct ma_vnode *n = &s->n;
	long long hint = atomic_load_explicit(&b->e.load_hint, memory_order_relaxed);
	s->sched = ma_load_acquire(&b->e.sched_holder);
	s->ready = ma_load_acquire(&b->e.ready_holder);
	s->status = atomic_load(&b->status);
	s->fixed_item = b->fixed_item;
	s->memory = b->ranges != NULL;
	n->id = b->uid;
	n->status = (unsigned char)s->status;
	n->woken = b->woken;
	n->implicit = b->implicit;
	n->counted = b->counted;
	n->prio = atomic_load_explicit(&b->e.prio, memory_order_relaxed);
	n->item = ma_holder_queue(s->sched);
	n->queued_item = ma_holder_queue(s->ready);
	n->home = -1;
	n->last_item = ma_read_once(&b->e.last_level);
	n->last_vp = -1;
	n->sched_level = atomic_load_explicit(&b->e.sched_level, memory_order_relaxed);
	n->fixed_item = b->fixed_item;
	n->pref_node = -1;
	n->load_hint = hint >= 0 ? (double)hint : -1;
	n->load = hint >= 0 ? (double)hint : 0;
	n->nb_cached = ma_read_once(&b->nb_cached);
	n->nb_members = b->nb_members;
	n->timeslice_us = b->timeslice_us;
	n->cpu_ns = atomic_load_explicit(&b->cpu_ended_ns, memory_order_relaxed);
}

/* A bubble of the tree walk in progress (ma_view_bubble), in the view's arena. */
struct ma_vframe {
	struct ma_bubble *b;          /* locked while its frame is open */
	struct ma_vslot *s;
	struct ma_list *pos;          /* the next member to look at */
	const struct ma_vnode **kids;
	unsigned cap, k;
	double load;
	int vp;
	unsigned char top;            /* ma_bubble_top(b): its explicit members are outer */
	struct ma_vframe *up;         /* the frame of b's parent, NULL for the walk's root */
};

/* Opens bubble b (locked by the caller), below frame `up` (NULL: the walk's root, whose
 * parent slot is `in`). NULL if memory ran out for its slot or its frame. */
static struct ma_vframe *ma_vframe_open(struct ma_view_rt *rt, struct ma_bubble *b, struct ma_vslot *in,
					 struct ma_vframe *up)
{
	struct ma_vslot *s = ma_slot_new(rt, &b->e, in ? ma_bubble_of_entity(in->e) : NULL);
	struct ma_vframe *f = s ? ma_arena_alloc(rt, sizeof(*f)) : NULL;
	if (!f)
		return NULL;
	ma_view_fill_bubble(s, b);
	s->n.parent = in ? &in->n : NULL;
	s->n.outer = up ? !b->implicit && up->top : ma_bubble_outer(b);
	*f = (struct ma_vframe){ .b = b, .s = s, .pos = b->members.next, .vp = -1, .up = up };
	f->top = up ? b->implicit && up->top : ma_bubble_top(b);
	/* A bubble private to a VP is that VP's alone (private.c): another VP's is not looked
	 * into (a public bubble never holds one; this only keeps a view from reading one if
	 * that ever changes). Our own VP's is: a bubble being published is submitted by its
	 * VP while still private, and its members are what the strategy decides about. */
	struct ma_worker *pw = atomic_load_explicit(&b->unit.private_w, memory_order_relaxed);
	if (pw && pw != ma_worker_self())
		f->pos = &b->members;
	else if ((f->cap = b->nb_members) && !(f->kids = ma_arena_alloc(rt, f->cap * sizeof(*f->kids))))
		f->cap = 0;
	return f;
}

/* c is the next child of f's bubble: its totals go into the bubble's. */
static void ma_vframe_add(struct ma_vframe *f, const struct ma_vslot *c)
{
	struct ma_vslot *s = f->s;
	f->kids[f->k++] = &c->n;
	s->n.nb_threads += c->n.nb_threads;
	s->n.nb_ready += c->n.nb_ready;
	s->n.nb_running += c->n.nb_running;
	s->n.nb_spinning += c->n.nb_spinning;
	s->n.nb_masters += c->n.nb_masters;
	s->n.cpu_ns += c->n.cpu_ns;
	s->memory |= c->memory;
	f->load += c->n.load;
	if (c->n.last_vp != -1)
		f->vp = f->vp == -1 || f->vp == c->n.last_vp ? c->n.last_vp : MA_V_SEVERAL;
}

/*
 * Adds bubble b (locked by the caller) and its subtree below `in` (the slot of b's
 * parent, locked too; NULL for the view's root). Each sub-bubble is locked while b is,
 * parent first. Returns b's slot, NULL if memory ran out.
 *
 * The walk keeps its own stack of frames in the arena rather than recursing: it may run
 * on a preempted thread's stack (a bubble closing in the finish of a switch is submitted
 * there), which promises 4 KiB, and trees nest as deep as the program's recursion.
 */
static struct ma_vslot *ma_view_bubble(struct ma_view_rt *rt, struct ma_bubble *b, struct ma_vslot *in)
{
	struct ma_vframe *f = ma_vframe_open(rt, b, in, NULL);
	if (!f)
		return NULL;
	struct ma_vslot *root = f->s;
	while (f) {
		struct ma_bubble *x = f->b;
		if (f->pos != &x->members && f->k < f->cap) {
			struct ma_entity *m = ma_container_of(f->pos, struct ma_entity, member_node);
			f->pos = f->pos->next;
			if (m->type == MA_TASK_ENTITY) {
				struct ma_vslot *c = ma_slot_new(rt, m, x);
				if (c) {
					ma_view_fill_task(rt, c, ma_task_of_entity(m));
					c->n.parent = &f->s->n;
					if (x != ma_root_bubble && f->s->status == MA_BUBBLE_OPENED)
						c->n.home = f->s->n.item;
					ma_vframe_add(f, c);
				}
				continue;
			}
			struct ma_bubble *sb = ma_bubble_of_entity(m);
			ma_spin_lock(&sb->hold.lock);
			struct ma_vframe *down = ma_vframe_open(rt, sb, f->s, f);
			if (down)
				f = down;
			else
				ma_spin_unlock(&sb->hold.lock);
			continue;
		}
		/* Every member seen (or no room for more): b's slot is complete. */
		struct ma_vslot *s = f->s;
		s->n.children = f->kids;
		s->n.nb_children = f->k;
		s->n.last_vp = f->vp;
		if (s->n.load_hint < 0)
			s->n.load = f->load;
		struct ma_vframe *up = f->up;
		if (up) {
			ma_spin_unlock(&x->hold.lock);
			ma_vframe_add(up, s);
		}
		f = up;
	}
	return root;
}

/* ---- starting and finishing a view ---- */

/* The items' shape alone (MA_VIEW_SHAPE): counters left at zero. */
static void ma_view_shape(struct ma_vitem *it)
{
	unsigned nl = ma_rt.topo.nb_levels, nv = ma_rt.nb_vps;
	for (unsigned q = 0; q < nl; q++) {
		const struct ma_level *l = &ma_rt.topo.levels[q];
		it[q].vp = -1;
		it[q].parent = l->parent ? (int)l->parent->id : -1;
		it[q].depth = l->depth;
		it[q].first_vp = l->first_vp;
	}
	for (unsigned v = 0; v < nv; v++) {
		const struct ma_level *leaf = ma_rt.workers[v].rq.level;
		struct ma_vitem *x = &it[nl + v];
		x->vp = (int)v;
		x->parent = (int)leaf->id;
		x->depth = leaf->depth + 1;
		x->first_vp = v;
		x->nb_vps = 1;
	}
}

static int ma_view_begin(struct ma_view *v, const struct ma_worker *self, struct ma_vitem **items, unsigned flags)
{
	memset(v, 0, sizeof(*v));
	v->self_vp = -1;
	struct ma_view_rt *rt = ma_arena_new();
	if (!rt)
		return ENOMEM;
	unsigned nl = ma_rt.topo.nb_levels, nv = ma_rt.nb_vps;
	v->rt = rt;
	v->topo = &ma_rt.topo;
	v->nb_items = nl;
	v->nb_vps = nv;
	v->self_vp = self ? (int)self->vp : -1;
	v->now_ns = ma_clock_ns();
	v->begun = atomic_load(&ma_sched_begun) != 0;
	/* The counters are sampled before any lock is taken; each thread's metrics are read
	 * where its node is filled, while the walk keeps it alive. */
	if ((flags & MA_VIEW_METRICS) && ma_metrics_refresh(1)) {
		rt->metrics = 1;
		v->flags |= MA_VIEW_HAS_METRICS;
	}
	struct ma_vitem *it = ma_arena_alloc(rt, (nl + nv) * sizeof(*it));
	if (!it) {
		ma_view_release(v);
		return ENOMEM;
	}
	if (flags & MA_VIEW_SHAPE) {
		ma_view_shape(it);
		v->flags |= MA_VIEW_SHAPE;
	} else {
		ma_view_counters(it);
	}
	v->items = it;
	v->vps = it + nl;
	*items = it;
	return 0;
}

/* The index by id; with MA_VIEW_MEMORY, the preferred nodes (after every lock is
 * released: synthesizing statistics takes the bubbles' locks). */
static int ma_view_finish(struct ma_view *v, struct ma_vitem *it, unsigned flags)
{
	struct ma_view_rt *rt = v->rt;
	if (flags & MA_VIEW_READY) {
		ma_view_counters_ready(it);
		v->flags |= MA_VIEW_HAS_READY;
	}
	ma_view_items_sum(it, ma_rt.topo.nb_levels, ma_rt.nb_vps);
	struct ma_vslot **index = rt->nb_slots ? ma_arena_alloc(rt, rt->nb_slots * sizeof(*index)) : NULL;
	if (rt->failed) {
		ma_view_release(v);
		return ENOMEM;
	}
	unsigned i = 0;
	for (struct ma_vslot *s = rt->first; s; s = s->next)
		index[i++] = s;
	if (flags & MA_VIEW_MEMORY) {
		/* Memory below a bubble is memory of its own or of a sub-bubble's subtree. The
		 * walk marked every bubble on the way back up already; ask only those: asking
		 * synthesizes the statistics of the whole subtree. */
		for (i = 0; i < rt->nb_slots; i++)
			if (index[i]->n.is_bubble && index[i]->memory)
				index[i]->n.pref_node = ma_entity_preferred_node(index[i]->e);
		v->flags |= MA_VIEW_HAS_MEMORY;
	}
	if (rt->nb_slots > 16) {
		qsort(index, rt->nb_slots, sizeof(*index), ma_slot_cmp);
	} else {
		/* A few slots (most decisions are about a small bubble): insertion. */
		for (unsigned k = 1; k < rt->nb_slots; k++) {
			struct ma_vslot *x = index[k];
			unsigned j = k;
			for (; j && ma_slot_cmp(&index[j - 1], &x) > 0; j--)
				index[j] = index[j - 1];
			index[j] = x;
		}
	}
	rt->index = index;
	return 0;
}

int ma_view_build_items(struct ma_view *v, unsigned flags)
{
	struct ma_vitem *it;
	int err = ma_view_begin(v, ma_worker_self(), &it, flags);
	return err ? err : ma_view_finish(v, it, flags);
}

/* ---- what is already placed (MA_VIEW_PLACED) ---- */

/* A bubble of the placed walk: an opened one (its members scheduled on queues count), or
 * a closed one whose load is summed as ma_entity_load has it (its hint, else its
 * members': a thread's hint or 1); of the outer walk, the root or an implicit bubble.
 * Kept in the arena: the walk may run on a preempted thread's stack. */
struct ma_pframe {
	struct ma_bubble *b;          /* locked while its frame is open */
	struct ma_list *pos;
	struct ma_pframe *up;
	int closed;
	int item;                     /* closed, below an opened one: where it is placed */
	double load;                  /* closed: its members' so far */
};

static struct ma_pframe *ma_pframe_open(struct ma_view_rt *rt, struct ma_bubble *b, struct ma_pframe *up, int closed,
					 int item)
{
	struct ma_pframe *f = ma_arena_alloc(rt, sizeof(*f));
	if (f)
		*f = (struct ma_pframe){ .b = b, .pos = b->members.next, .up = up, .closed = closed, .item = item };
	return f;
}

/* The root bubble locked and its frame opened, where both walks from the root start;
 * NULL (nothing locked) if memory ran out. */
static struct ma_pframe *ma_pframe_root(struct ma_view_rt *rt)
{
	struct ma_bubble *r = ma_root_bubble;
	ma_spin_lock(&r->hold.lock);
	struct ma_pframe *f = ma_pframe_open(rt, r, NULL, 0, -1);
	if (!f)
		ma_spin_unlock(&r->hold.lock);
	return f;
}

/* A walk gives up: every bubble locked down the path from the root to f, f's included,
 * is let go of. */
static void ma_pframe_abandon(struct ma_pframe *f)
{
	for (; f; f = f->up)
		ma_spin_unlock(&f->b->hold.lock);
}

static double ma_hint_or(const struct ma_entity *e, double none)
{
	long long h = ma_entity_hint_or(e, -1);
	return h >= 0 ? (double)h : none;
}

/* The item of the queue holder h is, -1 if h is not a queue. */
static int ma_placed_item(struct ma_holder *h)
{
	return h && h->type == MA_RUNQUEUE_HOLDER ? (int)ma_rq_of_holder(h)->level->id : -1;
}

/* Fills placed (nb_levels entries) walking from the root bubble, bubble `skip` left out;
 * returns the bubbles of opened ones it locked, -1 if memory ran out. */
static int ma_view_placed_walk(struct ma_view_rt *rt, double *placed, const struct ma_bubble *skip)
{
	int visits = 0;
	struct ma_pframe *f = ma_pframe_root(rt);
	if (!f)
		return -1;
	while (f) {
		struct ma_bubble *x = f->b;
		if (f->pos == &x->members) {
			struct ma_pframe *up = f->up;
			if (f->closed) {
				if (up->closed)
					up->load += f->load;
				else
					placed[f->item] += f->load;
			}
			ma_spin_unlock(&x->hold.lock);
			f = up;
			continue;
		}
		struct ma_entity *m = ma_container_of(f->pos, struct ma_entity, member_node);
		f->pos = f->pos->next;
		if (m->type == MA_TASK_ENTITY) {
			if (f->closed) {
				f->load += ma_hint_or(m, 1);
				continue;
			}
			struct marcel_task *t = ma_task_of_entity(m);
			int item = ma_placed_item(ma_load_acquire(&m->sched_holder));
			int st = atomic_load_explicit(&t->state, memory_order_relaxed);
			if (item >= 0 && st != MA_TASK_BORN && st != MA_TASK_FREE && st != MA_TASK_DEAD && !t->is_main &&
			    !t->is_idle)
				placed[item] += ma_hint_or(m, 1);
			continue;
		}
		struct ma_bubble *s = ma_bubble_of_entity(m);
		if (s == skip && !f->closed)
			continue;
		ma_spin_lock(&s->hold.lock);
		int closed = 1, item = -1;
		if (!f->closed) {
			visits++;
			closed = atomic_load(&s->status) != MA_BUBBLE_OPENED;
			item = closed ? ma_placed_item(s->e.sched_holder) : -1;
			if (closed && item < 0) {
				/* Not placed: nothing of it counts anywhere. */
				ma_spin_unlock(&s->hold.lock);
				continue;
			}
		}
		double hint = closed ? ma_hint_or(&s->e, -1) : -1;
		if (hint >= 0) {
			if (f->closed)
				f->load += hint;
			else
				placed[item] += hint;
			ma_spin_unlock(&s->hold.lock);
			continue;
		}
		struct ma_pframe *down = ma_pframe_open(rt, s, f, closed, item);
		if (!down) {
			ma_spin_unlock(&s->hold.lock);
			ma_pframe_abandon(f);
			return -1;
		}
		f = down;
	}
	return visits;
}

/* ---- the outer bubbles (MA_VIEW_OUTER) ---- */

/* Adds a node for every outer bubble not in the subtree of `skip` (the view's root, whose
 * own are its nodes already; NULL: none), walking from the root bubble down its implicit
 * bubbles, each locked while its parent is. 0, or -1 if memory ran out. */
static int ma_view_outer_walk(struct ma_view_rt *rt, const struct ma_bubble *skip)
{
	if (skip == ma_root_bubble)
		return 0;
	struct ma_pframe *f = ma_pframe_root(rt);
	if (!f)
		return -1;
	while (f) {
		struct ma_bubble *x = f->b;
		if (f->pos == &x->members) {
			ma_spin_unlock(&x->hold.lock);
			f = f->up;
			continue;
		}
		struct ma_entity *m = ma_container_of(f->pos, struct ma_entity, member_node);
		f->pos = f->pos->next;
		struct ma_bubble *sb = m->type == MA_BUBBLE_ENTITY ? ma_bubble_of_entity(m) : NULL;
		if (!sb || sb == skip)
			continue;
		ma_spin_lock(&sb->hold.lock);
		if (sb->implicit) {
			struct ma_pframe *down = ma_pframe_open(rt, sb, f, 0, -1);
			if (down) {
				f = down;
				continue;
			}
		} else {
			struct ma_vslot *s = ma_slot_new(rt, m, x);
			if (s) {
				ma_view_fill_bubble(s, sb);
				s->n.outer = 1;
				ma_spin_unlock(&sb->hold.lock);
				continue;
			}
		}
		ma_spin_unlock(&sb->hold.lock);
		ma_pframe_abandon(f);
		return -1;
	}
	return 0;
}

/* v->outer: every outer node of the view, in creation order. 0, or -1. */
static int ma_view_outer_list(struct ma_view *v)
{
	unsigned n = 0;
	for (const struct ma_vslot *s = v->rt->first; s; s = s->next)
		n += s->n.is_bubble && s->n.outer;
	const struct ma_vnode **o = n ? ma_arena_alloc(v->rt, n * sizeof(*o)) : NULL;
	if (n && !o)
		return -1;
	n = 0;
	for (const struct ma_vslot *s = v->rt->first; s; s = s->next)
		if (s->n.is_bubble && s->n.outer)
			o[n++] = &s->n;
	v->outer = o;
	v->nb_outer = n;
	return 0;
}

static uint64_t ma_thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int ma_view_build_subtree(struct ma_view *v, struct ma_bubble *b, unsigned flags)
{
	struct ma_vitem *it;
	int err = ma_view_begin(v, ma_worker_self(), &it, flags);
	if (err)
		return err;
	if (!b && (flags & MA_VIEW_TREE))
		b = ma_root_bubble;
	if (b) {
		ma_spin_lock(&b->hold.lock);
		struct ma_vslot *s = ma_view_bubble(v->rt, b, NULL);
		if (s)
			s->n.home = ma_view_home(&b->e);
		ma_spin_unlock(&b->hold.lock);
		v->root = s ? &s->n : NULL;
	}
	if (flags & MA_VIEW_OUTER) {
		/* After b's lock is let go of: the walk locks from the root down. */
		if (ma_view_outer_walk(v->rt, b) || ma_view_outer_list(v)) {
			ma_view_release(v);
			return ENOMEM;
		}
		v->flags |= MA_VIEW_HAS_OUTER;
	}
	if (flags & MA_VIEW_PLACED) {
		/* After b's lock is let go of: the walk locks from the root down. */
		uint64_t cpu = ma_thread_cpu_ns();
		double *placed = ma_arena_alloc(v->rt, v->nb_items * sizeof(*placed));
		int visits = placed ? ma_view_placed_walk(v->rt, placed, b) : -1;
		if (visits < 0) {
			ma_view_release(v);
			return ENOMEM;
		}
		v->placed = placed;
		v->placed_visits = (unsigned)visits;
		v->placed_cpu_ns = ma_thread_cpu_ns() - cpu;
		v->flags |= MA_VIEW_HAS_PLACED;
	}
	return ma_view_finish(v, it, flags);
}

int ma_view_build_tree(struct ma_view *v, unsigned flags)
{
	return ma_view_build_subtree(v, ma_root_bubble, flags);
}

int ma_view_build_thread(struct ma_view *v, struct marcel_task *t, unsigned flags)
{
	struct ma_vitem *it;
	int err = ma_view_begin(v, ma_worker_self(), &it, flags);
	if (err)
		return err;
	struct ma_vslot *s = ma_slot_new(v->rt, &t->e, NULL);
	if (s) {
		ma_view_fill_task(v->rt, s, t);
		/* Its bubble's storage is not reused before ma_estimate_end, should t leave it
		 * meanwhile (ma_view_home reads it without its lock). */
		struct ma_worker *est = ma_estimate_begin();
		s->n.home = ma_view_home(&t->e);
		ma_estimate_end(est);
		v->root = &s->n;
	}
	return ma_view_finish(v, it, flags);
}

/* Queue rq (locked) of the neighbourhood of an idle VP: its waiting entities, up to
 * MA_VIEW_WAITING_MAX, most urgent first. Returns its ready threads (ma_vitem.ready). */
static unsigned ma_view_waiting_locked(struct ma_view_rt *rt, struct ma_runqueue *rq, int collect)
{
	unsigned ready = 0, taken = 0;
	for (int p = 0; p < MA_MAX_PRIO; p++)
		ma_list_for_each_entry(struct ma_entity, e, &rq->queue[p], run_node) {
			if (e->type == MA_TASK_ENTITY) {
				ready++;
				if (!collect || taken == MA_VIEW_WAITING_MAX)
					continue;
				/* Queued here, it cannot end while we hold its queue. */
				struct ma_vslot *s = ma_slot_new(rt, e, NULL);
				if (!s)
					continue;
				ma_view_fill_task(rt, s, ma_task_of_entity(e));
				s->n.home = ma_view_home(e);
				taken++;
				continue;
			}
			struct ma_bubble *b = ma_bubble_of_entity(e);
			unsigned c = ma_read_once(&b->nb_cached);
			ready += c ? c : 1;
			/* Met out of order (we hold its queue): only try-locked. One that is busy
			 * is left out, as a thief holding the queue would leave it. */
			if (!collect || taken == MA_VIEW_WAITING_MAX || !ma_spin_trylock(&b->hold.lock))
				continue;
			/* Queued, it cannot be destroyed while we hold its queue: referenced here. */
			struct ma_vslot *s = ma_slot_new(rt, e, NULL);
			if (s) {
				ma_view_fill_bubble(s, b);
				s->n.nb_threads = ma_bubble_threads_locked(b);
				taken++;
			}
			ma_spin_unlock(&b->hold.lock);
		}
	return ready;
}

int ma_view_build_vp(struct ma_view *v, const struct ma_worker *w, unsigned flags)
{
	struct ma_vitem *it;
	int err = ma_view_begin(v, w, &it, flags);
	if (err)
		return err;
	unsigned nq = ma_rt.topo.nb_levels + ma_rt.nb_vps;
	for (unsigned q = 0; q < nq; q++) {
		struct ma_runqueue *rq = ma_view_queue((int)q);
		if (!ma_read_once(&rq->nr_ready)) {
			it[q].ready = 0;
			continue;
		}
		/* What w does not look at, and some VP does (nothing waits for a thief where
		 * no VP looks: it would find nothing to take it to). */
		int collect = ma_path_index(w, rq) < 0 && (rq->vp >= 0 || rq->level->nb_vps);
		ma_spin_lock(&rq->hold.lock);
		it[q].ready = ma_view_waiting_locked(v->rt, rq, collect);
		ma_spin_unlock(&rq->hold.lock);
	}
	v->flags |= MA_VIEW_HAS_READY;
	struct ma_view_rt *rt = v->rt;
	const struct ma_vnode **waiting = rt->nb_slots ? ma_arena_alloc(rt, rt->nb_slots * sizeof(*waiting)) : NULL;
	if (waiting) {
		unsigned i = 0;
		for (struct ma_vslot *s = rt->first; s; s = s->next)
			waiting[i++] = &s->n;
		v->waiting = waiting;
		v->nb_waiting = i;
	}
	return ma_view_finish(v, it, flags & ~MA_VIEW_READY);
}

/* ---- measures ---- */

unsigned ma_bubble_threads_locked(struct ma_bubble *b)
{
	/* The count kept for joins is exact up to nb_vps + 2 (bubble.c), more than any
	 * comparison with a number of VPs needs; walking instead costs the whole subtree at
	 * every question (deep recursions of nested bubbles). */
	if (b->counted) {
		long n = atomic_load_explicit(&b->nb_threads_sub, memory_order_relaxed);
		return n > 0 ? (unsigned)n : 0;
	}
	unsigned n = 0;
	ma_list_for_each_entry(struct ma_entity, m, &b->members, member_node) {
		if (m->type == MA_TASK_ENTITY) {
			int s = atomic_load_explicit(&ma_task_of_entity(m)->state, memory_order_relaxed);
			n += s != MA_TASK_BORN && s != MA_TASK_DEAD && s != MA_TASK_FREE;
			continue;
		}
		struct ma_bubble *sb = ma_bubble_of_entity(m);
		if (!ma_spin_trylock(&sb->hold.lock)) {
			n++;
			continue;
		}
		n += ma_bubble_threads_locked(sb);
		ma_spin_unlock(&sb->hold.lock);
	}
	return n;
}

/* Ready threads and incoming entities of item l's subtree (items with VPs only). */
static unsigned long ma_item_ready_now(const struct ma_level *l)
{
	if (!l->nb_vps)
		return 0;
	struct ma_runqueue *rq = &ma_rt.rqs[l->id];
	unsigned long n = ma_queue_ready(rq) + (unsigned long)atomic_load_explicit(&rq->nr_incoming, memory_order_relaxed);
	for (unsigned i = 0; i < l->arity; i++)
		n += ma_item_ready_now(l->children[i]);
	return n;
}

unsigned long ma_view_load_now(int q, const struct ma_worker *self)
{
	struct ma_runqueue *rq = ma_view_queue(q);
	if (!rq)
		return 0;
	unsigned long load;
	if (rq->vp >= 0) {
		load = ma_queue_ready(rq) + (unsigned long)atomic_load_explicit(&rq->nr_incoming, memory_order_relaxed);
	} else {
		load = ma_item_ready_now(rq->level);
		for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
			struct ma_runqueue *vq = &ma_rt.workers[v].rq;
			if (ma_rq_within(vq, rq))
				load += ma_queue_ready(vq) +
					(unsigned long)atomic_load_explicit(&vq->nr_incoming, memory_order_relaxed);
		}
	}
	struct ma_worker *est = ma_estimate_begin();
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		const struct ma_worker *o = &ma_rt.workers[v];
		if (o == self)
			continue;
		const struct marcel_task *t = ma_vp_thread(o);
		if (!t)
			continue;
		const struct ma_runqueue *home = ma_task_queue(t);
		load += ma_rq_within(home ? home : &o->rq, rq);
	}
	ma_estimate_end(est);
	return load;
}

/* ---- the pick view ---- */

/* Entities queued or incoming on the items of l's subtree, l included; with vps_only,
 * those without VPs are left out (nothing waits there for a VP of the subtree). The VPs'
 * own queues are the caller's: ma_rq_subtree_load adds them with its busy VPs, the pick
 * load those of the VPs that look at l. */
static unsigned long ma_item_queued(const struct ma_level *l, int vps_only)
{
	if (vps_only && !l->nb_vps)
		return 0;
	const struct ma_runqueue *rq = &ma_rt.rqs[l->id];
	unsigned long n = ma_read_once(&rq->nr_ready) +
			  (unsigned long)atomic_load_explicit(&rq->nr_incoming, memory_order_relaxed);
	for (unsigned i = 0; i < l->arity; i++)
		n += ma_item_queued(l->children[i], vps_only);
	return n;
}

unsigned long ma_rq_subtree_load(const struct ma_runqueue *rq)
{
	if (rq->vp >= 0) {
		const struct ma_worker *w = &ma_rt.workers[rq->vp];
		return ma_worker_nr_ready(w) +
		       (atomic_load_explicit(&w->state, memory_order_relaxed) == MA_WORKER_BUSY);
	}
	const struct ma_level *l = rq->level;
	unsigned long n = ma_item_queued(l, 0);
	for (unsigned v = l->first_vp; v < l->first_vp + l->nb_vps && v < ma_rt.nb_vps; v++) {
		const struct ma_worker *o = &ma_rt.workers[v];
		n += ma_worker_nr_ready(o);
		/* Acquire: cur may be a seed that VP just began to run inline (seed.c stores
		 * current with release), and its is_idle is read. */
		const struct marcel_task *cur = atomic_load_explicit(&o->current, memory_order_acquire);
		n += atomic_load_explicit(&o->state, memory_order_relaxed) == MA_WORKER_BUSY && cur && !cur->is_idle;
	}
	return n;
}

void ma_pick_view_fill(struct ma_pick_view *pv, const struct ma_worker *w, const struct ma_runqueue *rq,
		       struct ma_bubble *b)
{
	/* Queued on rq, which the caller holds, b cannot be destroyed; its fields are read
	 * without its lock (find_next meets it out of order), as estimates. */
	long long hint = atomic_load_explicit(&b->e.load_hint, memory_order_relaxed);
	long count = b->counted ? atomic_load_explicit(&b->nb_threads_sub, memory_order_relaxed) : 0;
	int q = ma_view_queue_number(rq);
	pv->topo = &ma_rt.topo;
	pv->item = q;
	pv->self_vp = w ? (int)w->vp : -1;
	pv->b = (struct ma_vnode){
		.id = b->uid,
		.is_bubble = 1,
		.status = (unsigned char)atomic_load_explicit(&b->status, memory_order_relaxed),
		.woken = 1,
		.implicit = b->implicit,
		.outer = (unsigned char)ma_bubble_outer(b),
		.counted = b->counted,
		.prio = atomic_load_explicit(&b->e.prio, memory_order_relaxed),
		.item = q,
		.queued_item = q,
		.home = -1,
		.last_item = ma_read_once(&b->e.last_level),
		.last_vp = -1,
		.sched_level = atomic_load_explicit(&b->e.sched_level, memory_order_relaxed),
		.fixed_item = b->fixed_item,
		.pref_node = -1,
		.load_hint = hint >= 0 ? (double)hint : -1,
		.nb_threads = count > 0 ? (unsigned)count : 0,
		.nb_cached = ma_read_once(&b->nb_cached),
	};
	/* Without a walk, a load without a hint is its threads as far as they are known. */
	pv->b.load = hint >= 0 ? (double)hint
			       : (double)(pv->b.nb_threads > pv->b.nb_cached ? pv->b.nb_threads : pv->b.nb_cached);
	pv->has_kids = 0;
	pv->nb_kids = 0;
	pv->has_load = 0;
}

/* Whether VP v looks at rq (rq is on its path). */
static int ma_rq_seen_by(const struct ma_runqueue *rq, unsigned v)
{
	if (rq->vp >= 0)
		return (unsigned)rq->vp == v;
	return v < ma_rt.nb_vps && ma_path_index(&ma_rt.workers[v], rq) >= 0;
}

/* Running threads that belong below rq (ma_vitem.running's rule: where they are
 * scheduled, or, belonging to no queue, on every queue their VP looks at), those of
 * bubble `except` left out. */
static unsigned long ma_rq_running(const struct ma_runqueue *rq, const struct ma_bubble *except)
{
	unsigned long n = 0;
	struct ma_worker *est = ma_estimate_begin();
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		const struct marcel_task *t = ma_vp_thread(&ma_rt.workers[v]);
		if (!t || ma_read_once(&t->e.sched_holder) == &except->hold)
			continue;
		const struct ma_runqueue *q = ma_task_queue(t);
		n += q ? ma_rq_within(q, rq) : ma_rq_seen_by(rq, (unsigned)v);
	}
	ma_estimate_end(est);
	return n;
}

/* Whether a closed sibling of b is placed in rq's subtree. A placed bubble is off the
 * queues while all its threads run or are being switched to, so the queues alone would
 * let two bubbles woken together burst on one item before a thief can take either. The
 * parent is met out of order (rq is held): only try-locked; busy, it counts as a yes. */
static int ma_sibling_below(struct ma_bubble *b, const struct ma_runqueue *rq)
{
	struct ma_bubble *p = ma_entity_parent(&b->e);
	if (!p || p == ma_root_bubble)
		return 0;
	if (!ma_spin_trylock(&p->hold.lock))
		return 1;
	int found = 0;
	ma_list_for_each_entry(struct ma_entity, m, &p->members, member_node) {
		if (m == &b->e || m->type != MA_BUBBLE_ENTITY)
			continue;
		struct ma_bubble *sb = ma_bubble_of_entity(m);
		struct ma_holder *h = ma_load_acquire(&sb->e.sched_holder);
		if (h && h->type == MA_RUNQUEUE_HOLDER && atomic_load(&sb->status) == MA_BUBBLE_CLOSED &&
		    ma_rq_within(ma_rq_of_holder(h), rq)) {
			found = 1;
			break;
		}
	}
	ma_spin_unlock(&p->hold.lock);
	return found;
}

void ma_pick_view_load(struct ma_pick_view *pv, const struct ma_runqueue *rq, struct ma_bubble *b)
{
	struct ma_pick_load *x = &pv->load;
	pv->has_load = 1;
	*x = (struct ma_pick_load){ .nb_vps = rq->vp >= 0 ? 1 : rq->level->nb_vps };
	x->queued = rq->vp >= 0 ? 0 : ma_item_queued(rq->level, 1);
	unsigned lo, hi;
	ma_rq_vp_range(rq, &lo, &hi);
	for (unsigned v = lo; v < hi; v++)
		if (ma_rq_seen_by(rq, v)) {
			const struct ma_worker *o = &ma_rt.workers[v];
			x->queued += ma_worker_nr_ready(o) +
				     (unsigned long)atomic_load_explicit(&o->rq.nr_incoming, memory_order_relaxed);
		}
	x->running = ma_rq_running(rq, b);
	/* Queued on rq, which the caller holds, b cannot go; met out of order, it is only
	 * try-locked. */
	if (ma_spin_trylock(&b->hold.lock)) {
		ma_list_for_each_entry(struct ma_entity, m, &b->members, member_node)
			if (m->type == MA_TASK_ENTITY) {
				x->direct = 1;
				break;
			}
		x->threads = x->direct ? ma_bubble_threads_locked(b) : 0;
		ma_spin_unlock(&b->hold.lock);
	} else {
		x->busy = 1;
	}
	x->sibling = (unsigned char)ma_sibling_below(b, rq);
}

void ma_pick_view_kids(struct ma_pick_view *pv, const struct ma_worker *w, const struct ma_runqueue *rq)
{
	pv->has_kids = 1;
	pv->nb_kids = 0;
	if (rq->vp >= 0)
		return;
	for (unsigned i = 0; i < rq->level->arity && pv->nb_kids < pv->max_kids; i++) {
		const struct ma_level *c = rq->level->children[i];
		if (!c->nb_vps)
			continue;
		const struct ma_runqueue *crq = &ma_rt.rqs[c->id];
		pv->kids[pv->nb_kids++] = (struct ma_pick_kid){
			.item = (int)c->id,
			.nb_vps = c->nb_vps,
			.work = ma_rq_subtree_load(crq),
			.mine = w && ma_path_index(w, crq) >= 0,
		};
	}
}

unsigned ma_pick_max_kids(void)
{
	unsigned most = 0;
	for (unsigned i = 0; i < ma_rt.topo.nb_levels; i++) {
		const struct ma_level *l = &ma_rt.topo.levels[i];
		unsigned n = 0;
		for (unsigned c = 0; c < l->arity; c++)
			n += l->children[c]->nb_vps != 0;
		if (n > most)
			most = n;
	}
	return most;
}
