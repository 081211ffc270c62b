/*
 * The bubble API: initialisation, membership (insert/remove), wake-up, join, barrier,
 * priority and levels, the root bubble and the implicit children bubbles.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "ma_strategy.h"
#include "ma_trace.h"

marcel_bubble_t marcel_root_bubble;
struct ma_bubble *const ma_root_bubble = (struct ma_bubble *)(void *)&marcel_root_bubble;
ma_spinlock_t ma_bubble_tree_lock;
__thread int ma_tree_held;

static int ma_member_remove(struct ma_bubble *b, struct ma_entity *e);

#define MA_BUBBLE_DESTROYED 0x44454144u /* "DEAD": a use after destroy is an error */
#define MA_BUBBLE_INITIALISING 1u

static void ma_bubble_setup(struct ma_bubble *b)
{
	unsigned magic = b->magic;
	memset(b, 0, sizeof(*b));
	b->magic = magic;
	b->e.type = MA_BUBBLE_ENTITY;
	b->e.prio = MA_DEF_PRIO;
	b->e.load_hint = -1;
	b->e.last_level = -1;
	ma_list_init(&b->e.run_node);
	ma_list_init(&b->e.member_node);
	b->hold.type = MA_BUBBLE_HOLDER;
	ma_spin_init(&b->hold.lock);
	ma_spin_init(&b->cnt_lock);
	ma_spin_init(&b->regen_lock);
	b->id = -1;
	b->uid = MA_TRACE_BUBBLE_TAG | (atomic_fetch_add_explicit(&ma_rt.next_id, 1, memory_order_relaxed) + 1);
	atomic_init(&b->status, MA_BUBBLE_CLOSED);
	ma_list_init(&b->members);
	ma_list_init(&b->cache);
	b->fixed_item = -1;
	b->counted = 1;
	atomic_init(&b->bar_seq, 0);
}

struct ma_bubble *ma_bubble_get(marcel_bubble_t *pub)
{
	struct ma_bubble *b = ma_bubble_of(pub);
	if (ma_unlikely(!b))
		return NULL;
	unsigned m = __atomic_load_n(&b->magic, __ATOMIC_ACQUIRE);
	if (ma_likely(m == MA_BUBBLE_MAGIC))
		return b;
	if (m == 0 || m == MA_BUBBLE_INITIALISING) {
		/* MARCEL_BUBBLE_INITIALIZER: all zero. Only the one that claims it sets it up. */
		unsigned zero = 0;
		if (__atomic_compare_exchange_n(&b->magic, &zero, MA_BUBBLE_INITIALISING, 0,
						__ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
			ma_bubble_setup(b);
			MA_TRACE(MA_TR_BUBBLE_NEW, b->uid, 0, NULL);
			__atomic_store_n(&b->magic, MA_BUBBLE_MAGIC, __ATOMIC_RELEASE);
			return b;
		}
		unsigned rounds = 0;
		while (__atomic_load_n(&b->magic, __ATOMIC_ACQUIRE) == MA_BUBBLE_INITIALISING)
			ma_spin_backoff(&rounds);
		return __atomic_load_n(&b->magic, __ATOMIC_ACQUIRE) == MA_BUBBLE_MAGIC ? b : NULL;
	}
	return NULL;
}

int marcel_bubble_init(marcel_bubble_t *pub)
{
	struct ma_bubble *b = ma_bubble_of(pub);
	if (!b)
		return EINVAL;
	if (b == ma_root_bubble)
		return EBUSY;
	b->magic = 0;
	ma_bubble_setup(b);
	MA_TRACE(MA_TR_BUBBLE_NEW, b->uid, 0, NULL);
	__atomic_store_n(&b->magic, MA_BUBBLE_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

int marcel_bubble_destroy(marcel_bubble_t *pub)
{
	struct ma_bubble *b = ma_bubble_get(pub);
	if (!b || b->implicit)
		return EINVAL;
	if (b == ma_root_bubble)
		return EBUSY;
	ma_tree_lock();
	/* Put back in the root by a removal or a wake-up, not by the application: that one
	 * membership does not keep it. */
	if (b->e.natural_holder == &ma_root_bubble->hold && !b->e.explicit_member && !b->woken)
		ma_member_remove(ma_root_bubble, &b->e);
	ma_spin_lock(&b->hold.lock);
	int busy = b->nb_members || b->e.natural_holder || b->joining ||
		   atomic_load(&b->status) == MA_BUBBLE_CLOSING || b->queued;
	if (!busy)
		b->magic = MA_BUBBLE_DESTROYED;
	ma_spin_unlock(&b->hold.lock);
	ma_tree_unlock();
	if (busy)
		return EBUSY;
	ma_estimates_quiesce();
	ma_bubble_regen_close(b);
	/* A strategy or the due list may still look at it for a moment: the application
	 * frees the storage after we return. */
	unsigned rounds = 0;
	while (atomic_load(&b->refs))
		ma_spin_backoff(&rounds);
	ma_bubble_memory_free(b);
	return 0;
}

int marcel_bubble_setid(marcel_bubble_t *pub, int id)
{
	struct ma_bubble *b = ma_bubble_get(pub);
	if (!b)
		return EINVAL;
	b->id = id;
	return 0;
}

int marcel_bubble_getid(const marcel_bubble_t *pub)
{
	struct ma_bubble *b = ma_bubble_get((marcel_bubble_t *)pub);
	return b ? b->id : -1;
}

marcel_entity_t *marcel_bubble_entity(marcel_bubble_t *pub)
{
	struct ma_bubble *b = ma_bubble_get(pub);
	return b ? &b->e : NULL;
}

marcel_entity_t *marcel_task_entity(marcel_t t)
{
	return t ? &t->e : NULL;
}

int marcel_bubble_status(const marcel_bubble_t *pub)
{
	struct ma_bubble *b = ma_bubble_get((marcel_bubble_t *)pub);
	return b ? atomic_load(&b->status) : -1;
}

/* ---- membership ---- */

int ma_bubble_is_within(const struct ma_bubble *b, const struct ma_bubble *anc)
{
	for (; b; b = ma_entity_parent(&b->e))
		if (b == anc)
			return 1;
	return 0;
}

/* Whether e names a live thread or an initialised bubble. */
static int ma_entity_ok(struct ma_entity *e)
{
	if (!e)
		return 0;
	if (e->type == MA_TASK_ENTITY) {
		struct marcel_task *t = ma_task_of_entity(e);
		return ma_task_valid(t) && atomic_load(&t->state) != MA_TASK_FREE;
	}
	if (e->type == MA_BUBBLE_ENTITY)
		return ma_bubble_get(ma_bubble_pub(ma_bubble_of_entity(e))) != NULL;
	return 0;
}

/* Bubbles whose thread count dropped to 0 (their joiner may be waiting). */
struct ma_zeroed {
	struct ma_bubble *x[16];
	unsigned n;
};

/* Adds delta threads to b and its ancestors (the root excepted: it cannot be joined and
 * every thread would write its counter). Each step reads the next parent under the count
 * lock of the bubble it just counted in, which is where a move changes that parent
 * (ma_member_transfer): the walk follows either the old chain or the new one, and the
 * move transfers exactly what it saw. */
static void ma_count_threads(struct ma_bubble *b, long delta, struct ma_zeroed *z)
{
	for (struct ma_bubble *x = b; x && x->counted;) {
		ma_spin_lock(&x->cnt_lock);
		/* Sequentially consistent, like the joiner's store of joining then load of the
		 * count: one of the two sides sees the other. */
		long now = atomic_fetch_add(&x->nb_threads_sub, delta) + delta;
		struct ma_bubble *p = ma_entity_parent(&x->e);
		ma_spin_unlock(&x->cnt_lock);
		if (z && now == 0 && z->n < 16 && atomic_load(&x->joining))
			z->x[z->n++] = x;
		x = p;
	}
}

/* Sets e's parent to h (NULL: none) and returns the threads e brings along. For a bubble
 * both happen under its count lock: a count that went through it before is in what we
 * return and still propagates along the old chain, one after goes along the new chain. */
static long ma_entity_reparent(struct ma_entity *e, struct ma_holder *h)
{
	if (e->type == MA_TASK_ENTITY) {
		__atomic_store_n(&e->natural_holder, h, __ATOMIC_RELEASE);
		return 1;
	}
	struct ma_bubble *s = ma_bubble_of_entity(e);
	ma_spin_lock(&s->cnt_lock);
	long n = atomic_load(&s->nb_threads_sub);
	__atomic_store_n(&e->natural_holder, h, __ATOMIC_RELEASE);
	ma_spin_unlock(&s->cnt_lock);
	return n;
}

/* Wakes the joiners of bubbles that became empty of threads (no lock held). */
static void ma_wake_zeroed(struct ma_zeroed *z)
{
	for (unsigned i = 0; i < z->n; i++) {
		struct ma_bubble *x = z->x[i];
		ma_spin_lock(&x->hold.lock);
		struct ma_waiter *j = atomic_load(&x->nb_threads_sub) ? NULL : x->joiner;
		if (j)
			x->joiner = NULL;
		ma_spin_unlock(&x->hold.lock);
		if (j)
			ma_waiter_wake(j);
	}
}

/* Links e into b's members (b locked). */
static void ma_member_add(struct ma_bubble *b, struct ma_entity *e, int explicit_member)
{
	ma_list_add_tail(&b->members, &e->member_node);
	b->nb_members++;
	e->explicit_member = (unsigned char)explicit_member;
	ma_count_threads(b, ma_entity_reparent(e, &b->hold), NULL);
	if (e->type == MA_TASK_ENTITY && atomic_load(&ma_task_of_entity(e)->state) == MA_TASK_BORN)
		b->nb_born_threads++;
}

/* Unlinks e from b (b locked). */
static void ma_member_del(struct ma_bubble *b, struct ma_entity *e, struct ma_zeroed *z)
{
	ma_list_del(&e->member_node);
	b->nb_members--;
	if (e->type == MA_TASK_ENTITY && atomic_load(&ma_task_of_entity(e)->state) == MA_TASK_BORN)
		b->nb_born_threads--;
	e->explicit_member = 0;
	ma_count_threads(b, -ma_entity_reparent(e, NULL), z);
}

/* What b's emptiness calls for, decided under b's lock (so exactly one party acts): the
 * joiner to wake, and whether to free an ownerless implicit bubble. */
static struct ma_waiter *ma_bubble_empty_locked(struct ma_bubble *b, int *free_it)
{
	*free_it = 0;
	struct ma_waiter *j = NULL;
	if (!atomic_load(&b->nb_threads_sub)) {
		j = b->joiner;
		b->joiner = NULL;
	}
	if (b->nb_members)
		return j;
	if (b->implicit && !b->owner && !b->freeing) {
		b->freeing = 1;
		*free_it = 1;
	}
	return j;
}

static void ma_bubble_free_now(struct ma_bubble *cb);

/* Removes e from b if it is still there: 1 if it was, and then credits b with cpu_ns (what
 * an ended thread or a freed bubble consumed). Wakes b's joiner or frees b when that
 * empties it. */
static int ma_member_remove_cpu(struct ma_bubble *b, struct ma_entity *e, unsigned long long cpu_ns)
{
	int free_it;
	ma_spin_lock(&b->hold.lock);
	if (ma_entity_parent(e) != b) {
		ma_spin_unlock(&b->hold.lock);
		return 0;
	}
	/* Written under b's lock only (no atomic add on a line every exit of b touches). */
	if (cpu_ns)
		atomic_store_explicit(&b->cpu_ended_ns,
				      atomic_load_explicit(&b->cpu_ended_ns, memory_order_relaxed) + cpu_ns,
				      memory_order_relaxed);
	struct ma_zeroed z; /* only n: the array is filled as used (this is every exit) */
	z.n = 0;
	ma_member_del(b, e, &z);
	struct ma_waiter *j = ma_bubble_empty_locked(b, &free_it);
	ma_spin_unlock(&b->hold.lock);
	if (j)
		ma_waiter_wake(j);
	ma_wake_zeroed(&z);
	if (free_it)
		ma_bubble_free_now(b);
	return 1;
}

/* Removes e from b if it is still there: 1 if it was. Wakes b's joiner or frees b when
 * that empties it. */
static int ma_member_remove(struct ma_bubble *b, struct ma_entity *e)
{
	return ma_member_remove_cpu(b, e, 0);
}

/* Moves a thread out of wherever it is scheduled into its new bubble's unit: it follows
 * its bubble from its next requeue on (a queued one moves now). */
static void ma_task_follow_bubble(struct marcel_task *t, struct ma_bubble *b)
{
	if (t->pinned)
		return;
	struct ma_holder *h = ma_bubble_holder_for_member(b);
	if (h && h->type == MA_BUBBLE_HOLDER)
		ma_entity_move_to_holder(&t->e, h);
}

static void ma_bubble_wake_tree(struct ma_bubble *b);

/* Woken bubble sub changed parents while it ran: gathered (if burst), it is placed again
 * as a member of its new parent once every thread is back. */
static void ma_bubble_replace(struct ma_bubble *sub)
{
	ma_bubble_gather(sub);
	ma_bubble_resettle(sub);
}

int marcel_bubble_insertentity(marcel_bubble_t *pub, marcel_entity_t *e)
{
	struct ma_bubble *b = ma_bubble_get(pub);
	if (!b || !ma_entity_ok(e) || e == &b->e || e == &ma_root_bubble->e)
		return EINVAL;
	/* Children bubbles stay where their thread made them (ma_bubble.h, counted). */
	if (e->type == MA_BUBBLE_ENTITY && ma_bubble_of_entity(e)->implicit)
		return EINVAL;
	if (!ma_rt.running)
		return EPERM;
	if (e->type == MA_TASK_ENTITY) {
		struct marcel_task *t = ma_task_of_entity(e);
		if (t->is_main || t->is_idle)
			return EINVAL;
		if (atomic_load(&t->state) == MA_TASK_DEAD)
			return ESRCH;
	}
	ma_tree_lock();
	if (e->type == MA_BUBBLE_ENTITY && ma_bubble_is_within(b, ma_bubble_of_entity(e))) {
		ma_tree_unlock();
		return EINVAL;
	}
	struct ma_bubble *old = ma_entity_parent(e);
	if (old == b) {
		e->explicit_member = 1;
		ma_tree_unlock();
		return 0;
	}
	if (old && e->explicit_member) {
		ma_tree_unlock();
		return EBUSY;
	}
	ma_spin_lock(&b->hold.lock);
	int woken = b->woken;
	ma_spin_unlock(&b->hold.lock);
	if (old && e->type == MA_BUBBLE_ENTITY)
		ma_bubble_detach_from_unit(ma_bubble_of_entity(e));
	if (old)
		ma_member_remove(old, e);
	ma_spin_lock(&b->hold.lock);
	ma_member_add(b, e, 1);
	ma_spin_unlock(&b->hold.lock);
	ma_tree_unlock();
	MA_TRACE(MA_TR_BUBBLE_INSERT, b->uid, ma_entity_uid(e), NULL);

	if (e->type == MA_TASK_ENTITY) {
		struct marcel_task *t = ma_task_of_entity(e);
		if (atomic_load(&t->state) == MA_TASK_BORN) {
			/* Created not started (marcel_create_dontsched included): it starts with
			 * its bubble, now if the bubble was woken. */
			if (woken)
				ma_bubble_start_task(b, t, NULL, 0);
		} else {
			ma_task_follow_bubble(t, b);
		}
	} else if (woken) {
		struct ma_bubble *sub = ma_bubble_of_entity(e);
		if (sub->woken)
			ma_bubble_replace(sub);
		else
			ma_bubble_wake_tree(sub);
	}
	return 0;
}

int marcel_bubble_insertbubble(marcel_bubble_t *b, marcel_bubble_t *sub)
{
	struct ma_bubble *s = ma_bubble_get(sub);
	return s ? marcel_bubble_insertentity(b, &s->e) : EINVAL;
}

int marcel_bubble_inserttask(marcel_bubble_t *b, marcel_t t)
{
	return t ? marcel_bubble_insertentity(b, &t->e) : EINVAL;
}

int marcel_bubble_removeentity(marcel_bubble_t *pub, marcel_entity_t *e)
{
	struct ma_bubble *b = ma_bubble_get(pub);
	if (!b || !ma_entity_ok(e) || (e->type == MA_BUBBLE_ENTITY && ma_bubble_of_entity(e)->implicit))
		return EINVAL;
	if (!ma_rt.running)
		return EPERM;
	ma_tree_lock();
	if (ma_entity_parent(e) != b) {
		ma_tree_unlock();
		return ENOENT;
	}
	if (e->type == MA_BUBBLE_ENTITY)
		ma_bubble_detach_from_unit(ma_bubble_of_entity(e));
	ma_member_remove(b, e);
	struct ma_bubble *root = ma_root_bubble;
	/* A thread always belongs somewhere; a bubble that never ran needs no home. */
	int rehome = e->type == MA_TASK_ENTITY || ma_bubble_of_entity(e)->woken;
	if (b != root && rehome) {
		ma_spin_lock(&root->hold.lock);
		ma_member_add(root, e, 0);
		ma_spin_unlock(&root->hold.lock);
	}
	ma_tree_unlock();
	MA_TRACE(MA_TR_BUBBLE_REMOVE, b->uid, ma_entity_uid(e), NULL);
	if (e->type == MA_TASK_ENTITY) {
		struct marcel_task *t = ma_task_of_entity(e);
		if (atomic_load(&t->state) != MA_TASK_BORN && !t->pinned)
			ma_entity_move_to_holder(e, &ma_rt.rqs[0].hold);
	} else {
		struct ma_bubble *sub = ma_bubble_of_entity(e);
		if (sub->woken)
			ma_bubble_replace(sub);
	}
	return 0;
}

int marcel_bubble_removebubble(marcel_bubble_t *b, marcel_bubble_t *sub)
{
	struct ma_bubble *s = ma_bubble_get(sub);
	return s ? marcel_bubble_removeentity(b, &s->e) : EINVAL;
}

int marcel_bubble_removetask(marcel_bubble_t *b, marcel_t t)
{
	return t ? marcel_bubble_removeentity(b, &t->e) : EINVAL;
}

/* ---- wake-up ---- */

static void ma_mark_woken(struct ma_bubble *x)
{
	ma_spin_lock(&x->hold.lock);
	x->woken = 1;
	for (struct ma_list *l = x->members.next; l != &x->members; l = l->next) {
		struct ma_entity *m = ma_container_of(l, struct ma_entity, member_node);
		if (m->type == MA_BUBBLE_ENTITY)
			ma_mark_woken(ma_bubble_of_entity(m));
	}
	ma_spin_unlock(&x->hold.lock);
	MA_TRACE(MA_TR_BUBBLE_WAKE, x->uid, 0, NULL);
}

/* Marks b's subtree woken and starts its created-not-started threads, then places b. */
static void ma_bubble_wake_tree(struct ma_bubble *b)
{
	/* Marked first, so that threads started below find their bubbles woken; until b is
	 * placed its whole subtree is one closed unit and they wait in its cache. */
	ma_mark_woken(b);
	ma_bubble_start_born(b);
	ma_bubble_resettle(b);
}

int marcel_wake_up_bubble(marcel_bubble_t *pub)
{
	struct ma_bubble *b = ma_bubble_get(pub);
	if (!b || b == ma_root_bubble)
		return EINVAL;
	if (!ma_rt.running)
		return EPERM;
	ma_tree_lock();
	if (b->woken) {
		ma_tree_unlock();
		return EALREADY;
	}
	if (!b->e.natural_holder) {
		struct marcel_task *self = ma_task_self();
		struct ma_bubble *p = self ? ma_entity_parent(&self->e) : NULL;
		if (!p)
			p = ma_root_bubble;
		ma_spin_lock(&p->hold.lock);
		ma_member_add(p, &b->e, 1);
		ma_spin_unlock(&p->hold.lock);
		MA_TRACE(MA_TR_BUBBLE_INSERT, p->uid, b->uid, NULL);
	}
	struct ma_bubble *p = ma_entity_parent(&b->e);
	int parent_woken = p->woken;
	if (!parent_woken)
		b->woken = 1; /* runs when its parent is woken */
	ma_tree_unlock();
	if (parent_woken)
		ma_bubble_wake_tree(b);
	return 0;
}

/* ---- join ---- */

int marcel_bubble_join(marcel_bubble_t *pub)
{
	struct ma_bubble *b = ma_bubble_get(pub);
	/* A children bubble lives and goes with its thread (and keeps no thread count). */
	if (!b || b == ma_root_bubble || b->implicit)
		return EINVAL;
	if (!ma_rt.running)
		return EPERM;
	struct marcel_task *self = ma_task_self();
	if (self) {
		ma_tree_lock();
		struct ma_bubble *p = ma_entity_parent(&self->e);
		int inside = p && ma_bubble_is_within(p, b);
		ma_tree_unlock();
		if (inside)
			return EDEADLK;
	}
	struct ma_waiter wt;
	ma_waiter_init(&wt);
	ma_spin_lock(&b->hold.lock);
	if (b->joining) {
		ma_spin_unlock(&b->hold.lock);
		ma_waiter_init(&wt); /* disarm: nobody will wake it */
		if (wt.task)
			atomic_store(&wt.task->state, MA_TASK_RUNNING);
		return EBUSY;
	}
	atomic_store(&b->joining, 1);
	int wait = atomic_load(&b->nb_threads_sub) != 0;
	if (wait)
		b->joiner = &wt;
	ma_spin_unlock(&b->hold.lock);
	if (wait)
		ma_waiter_wait(&wt);
	else if (wt.task)
		atomic_store(&wt.task->state, MA_TASK_RUNNING);
	/* Empty: take it out of its bubble and of the scheduler. */
	ma_bubble_unplace(b);
	ma_bubble_regen_cancel(b);
	ma_tree_lock();
	struct ma_bubble *p = ma_entity_parent(&b->e);
	if (p)
		ma_member_remove(p, &b->e);
	ma_spin_lock(&b->hold.lock);
	atomic_store(&b->joining, 0);
	b->woken = 0;
	atomic_store(&b->status, MA_BUBBLE_CLOSED);
	ma_spin_unlock(&b->hold.lock);
	ma_tree_unlock();
	MA_TRACE(MA_TR_BUBBLE_JOIN, b->uid, 0, NULL);
	return 0;
}

/* ---- threads joining and leaving bubbles ---- */

static struct ma_bubble *ma_children_bubble(struct marcel_task *self)
{
	if (self->children_bubble)
		return self->children_bubble;
	struct ma_bubble *cb = malloc(sizeof(*cb));
	if (!cb)
		return NULL;
	cb->magic = 0;
	ma_bubble_setup(cb);
	cb->magic = MA_BUBBLE_MAGIC;
	cb->implicit = 1;
	atomic_store_explicit(&cb->refs, 1, memory_order_relaxed); /* its own, until let go of */
	cb->owner = self;
	cb->woken = 1;
	MA_TRACE(MA_TR_BUBBLE_NEW, cb->uid, 0, NULL);
	ma_tree_lock();
	struct ma_bubble *p = ma_entity_parent(&self->e);
	if (!p)
		p = ma_root_bubble;
	/* It opens where its creator's bubble sends new members (or is part of its creator's
	 * closed unit), decided under the parent's lock so that a gather of the parent sees
	 * it either before or after. */
	cb->counted = p->counted;
	ma_spin_lock(&p->hold.lock);
	struct ma_holder *h = ma_bubble_holder_for_member(p);
	if (h->type == MA_RUNQUEUE_HOLDER) {
		cb->e.sched_holder = h;
		atomic_store(&cb->status, MA_BUBBLE_OPENED);
	}
	ma_member_add(p, &cb->e, 0);
	ma_spin_unlock(&p->hold.lock);
	ma_tree_unlock();
	MA_TRACE(MA_TR_BUBBLE_INSERT, p->uid, cb->uid, NULL);
	self->children_bubble = cb;
	return cb;
}

marcel_bubble_t *marcel_bubble_children(void)
{
	struct marcel_task *self = ma_task_self();
	if (!self)
		return NULL;
	struct ma_bubble *cb = ma_children_bubble(self);
	return cb ? ma_bubble_pub(cb) : NULL;
}

int ma_bubble_adopt_new(struct marcel_task *t, const marcel_attr_t *attr, struct ma_runqueue *rq, int start)
{
	struct ma_bubble *b = NULL;
	if (attr && attr->natural_bubble) {
		b = ma_bubble_get(attr->natural_bubble);
		if (!b)
			return EINVAL;
	} else {
		struct marcel_task *self = ma_task_self();
		if (!self || self->is_idle)
			b = ma_root_bubble;
		else if (attr && attr->inherit_holder)
			b = ma_entity_parent(&self->e);
		else
			b = ma_children_bubble(self);
		if (!b)
			b = ma_root_bubble;
	}
	ma_spin_lock(&b->hold.lock);
	ma_member_add(b, &t->e, attr && attr->natural_bubble);
	/* Started with the same lock held: creation is the hottest path that meets bubbles. */
	start = start && b->woken;
	if (start)
		ma_bubble_start_locked(b, t, rq);
	ma_spin_unlock(&b->hold.lock);
	if (start)
		ma_entity_enqueue(&t->e);
	return 0;
}

void ma_bubble_task_exit_owner(struct marcel_task *t)
{
	if (t->children_bubble) {
		struct ma_bubble *cb = t->children_bubble;
		t->children_bubble = NULL;
		ma_spin_lock(&cb->hold.lock);
		cb->owner = NULL;
		int free_it;
		struct ma_waiter *j = ma_bubble_empty_locked(cb, &free_it);
		ma_spin_unlock(&cb->hold.lock);
		if (j)
			ma_waiter_wake(j);
		if (free_it)
			ma_bubble_free_now(cb);
	}
}

void ma_bubble_task_exit(struct marcel_task *t)
{
	ma_bubble_task_exit_owner(t);
	/* Its CPU time goes to the bubble it leaves, with the removal (to that bubble only:
	 * statistics sum up the tree, and one shared root counter would be written by every
	 * exit). */
	struct ma_bubble *b = ma_entity_parent(&t->e);
	if (!b)
		return;
	unsigned long long cpu = ma_task_cpu_ns(t);
	MA_TRACE(MA_TR_BUBBLE_REMOVE, b->uid, t->id, NULL);
	/* An insert may move it meanwhile: follow it. Between the two bubbles it has no
	 * parent for a moment, under the tree lock: wait there for the move to end. */
	while (b && !ma_member_remove_cpu(b, &t->e, cpu))
		b = ma_entity_parent(&t->e);
	if (!b) {
		ma_tree_lock();
		b = ma_entity_parent(&t->e);
		if (b)
			ma_member_remove_cpu(b, &t->e, cpu);
		ma_tree_unlock();
	}
}

/* Lets go of ownerless empty implicit bubble cb (its `freeing` set under its lock): it
 * leaves its parent and the scheduler now, its memory goes with the last reference. */
static void ma_bubble_free_now(struct ma_bubble *cb)
{
	/* Bubbles change parents under the tree lock (we may be inside such a change). */
	cb->magic = MA_BUBBLE_DESTROYED;
	int mine = !ma_tree_held;
	if (mine)
		ma_tree_lock();
	struct ma_bubble *p = ma_entity_parent(&cb->e);
	if (p)
		ma_member_remove_cpu(p, &cb->e, atomic_load(&cb->cpu_ended_ns));
	if (mine)
		ma_tree_unlock();
	ma_bubble_unplace(cb);
	ma_bubble_regen_close(cb);
	ma_bubble_unref(cb);
}

void ma_bubble_unref(struct ma_bubble *b)
{
	if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1 || !b->implicit)
		return;
	/* Only an implicit bubble let go of reaches 0: it held one for itself until then. */
	b->magic = MA_BUBBLE_DESTROYED;
	ma_estimates_quiesce();
	ma_bubble_memory_free(b);
	free(b);
}

marcel_bubble_t *marcel_bubble_holding_task(marcel_t t)
{
	if (!t || !ma_task_valid(t))
		return NULL;
	struct ma_bubble *b = ma_entity_parent(&t->e);
	return b ? ma_bubble_pub(b) : NULL;
}

marcel_bubble_t *marcel_bubble_holding_bubble(marcel_bubble_t *pub)
{
	struct ma_bubble *b = ma_bubble_get(pub);
	struct ma_bubble *p = b ? ma_entity_parent(&b->e) : NULL;
	return p ? ma_bubble_pub(p) : NULL;
}

/* ---- barrier ---- */

/* Threads of b's subtree (alive). Walks with the tree lock held. */
static unsigned ma_bubble_count_threads(struct ma_bubble *b)
{
	unsigned n = 0;
	for (struct ma_list *l = b->members.next; l != &b->members; l = l->next) {
		struct ma_entity *m = ma_container_of(l, struct ma_entity, member_node);
		n += m->type == MA_TASK_ENTITY ? 1 : ma_bubble_count_threads(ma_bubble_of_entity(m));
	}
	return n;
}

int marcel_bubble_barrier(marcel_bubble_t *pub)
{
	struct ma_bubble *b = ma_bubble_get(pub);
	if (!b)
		return EINVAL;
	struct marcel_task *self = ma_task_self();
	if (!self)
		return EPERM;
	ma_tree_lock();
	struct ma_bubble *p = ma_entity_parent(&self->e);
	if (!p || !ma_bubble_is_within(p, b)) {
		ma_tree_unlock();
		return EPERM;
	}
	unsigned count = ma_bubble_count_threads(b);
	ma_spin_lock(&b->hold.lock);
	unsigned seq = atomic_load(&b->bar_seq);
	int serial = ++b->bar_arrived >= count;
	if (serial) {
		b->bar_arrived = 0;
		atomic_store(&b->bar_seq, seq + 1);
	}
	ma_spin_unlock(&b->hold.lock);
	ma_tree_unlock();
	if (serial) {
		ma_fwake(&b->bar_seq, ~0u);
		return MARCEL_BARRIER_SERIAL_THREAD;
	}
	while (atomic_load(&b->bar_seq) == seq)
		ma_fwait_u32(&b->bar_seq, seq, MA_NO_DEADLINE);
	return 0;
}

/* ---- priority, levels, pinning ---- */

int marcel_bubble_setprio(marcel_bubble_t *pub, int prio)
{
	struct ma_bubble *b = ma_bubble_get(pub);
	if (!b || prio < 0 || prio >= MA_MAX_PRIO)
		return EINVAL;
	/* Read when it is next queued, as for threads. */
	__atomic_store_n(&b->e.prio, prio, __ATOMIC_RELAXED);
	return 0;
}

int marcel_bubble_getprio(const marcel_bubble_t *pub, int *prio)
{
	struct ma_bubble *b = ma_bubble_get((marcel_bubble_t *)pub);
	if (!b || !prio)
		return EINVAL;
	*prio = __atomic_load_n(&b->e.prio, __ATOMIC_RELAXED);
	return 0;
}

static int ma_level_ok(int level)
{
	return level == 0 || (level > 0 && level <= MARCEL_LEVEL_PU && !(level & (level - 1)));
}

int marcel_entity_setschedlevel(marcel_entity_t *e, int level)
{
	if (!ma_entity_ok(e) || !ma_level_ok(level))
		return EINVAL;
	__atomic_store_n(&e->sched_level, level, __ATOMIC_RELAXED);
	return 0;
}

int marcel_entity_getschedlevel(const marcel_entity_t *e, int *level)
{
	if (!e || !level)
		return EINVAL;
	*level = __atomic_load_n(&e->sched_level, __ATOMIC_RELAXED);
	return 0;
}

int marcel_bubble_setschedlevel(marcel_bubble_t *b, int level)
{
	return marcel_entity_setschedlevel(marcel_bubble_entity(b), level);
}

int marcel_bubble_getschedlevel(const marcel_bubble_t *b, int *level)
{
	return marcel_entity_getschedlevel(marcel_bubble_entity((marcel_bubble_t *)b), level);
}

int marcel_task_setschedlevel(marcel_t t, int level)
{
	return marcel_entity_setschedlevel(marcel_task_entity(t), level);
}

int marcel_task_getschedlevel(marcel_t t, int *level)
{
	return marcel_entity_getschedlevel(marcel_task_entity(t), level);
}

int marcel_bubble_scheduleonlevel(marcel_bubble_t *pub, unsigned item)
{
	struct ma_bubble *b = ma_bubble_get(pub);
	if (!b || !ma_rt.running || item >= ma_rt.topo.nb_levels)
		return EINVAL;
	b->fixed_item = (int)item;
	return 0;
}

int marcel_bubble_scheduleonthreadholder(marcel_bubble_t *pub)
{
	struct ma_bubble *b = ma_bubble_get(pub);
	if (!b)
		return EINVAL;
	struct marcel_task *self = ma_task_self();
	if (!self)
		return EPERM;
	struct ma_holder *h = __atomic_load_n(&self->e.sched_holder, __ATOMIC_RELAXED);
	struct ma_runqueue *rq;
	if (h->type == MA_RUNQUEUE_HOLDER)
		rq = ma_rq_of_holder(h);
	else {
		struct ma_bubble *u = ma_bubble_of_holder(h);
		struct ma_holder *uh = __atomic_load_n(&u->e.sched_holder, __ATOMIC_RELAXED);
		rq = uh && uh->type == MA_RUNQUEUE_HOLDER ? ma_rq_of_holder(uh) : &ma_rt.rqs[0];
	}
	/* A VP's own queue is not an item: pin to the VP's item. */
	b->fixed_item = (int)rq->level->id;
	return 0;
}

int marcel_bubble_settimeslice(marcel_bubble_t *pub, unsigned long us)
{
	struct ma_bubble *b = ma_bubble_get(pub);
	if (!b)
		return EINVAL;
	b->timeslice_us = us;
	return 0;
}

int marcel_bubble_gettimeslice(const marcel_bubble_t *pub, unsigned long *us)
{
	struct ma_bubble *b = ma_bubble_get((marcel_bubble_t *)pub);
	if (!b || !us)
		return EINVAL;
	*us = b->timeslice_us;
	return 0;
}

/* ---- attributes ---- */

int marcel_attr_setnaturalbubble(marcel_attr_t *attr, marcel_bubble_t *b)
{
	if (!attr || attr->magic != MA_ATTR_MAGIC)
		return EINVAL;
	if (b && (!ma_bubble_get(b) || ma_bubble_of(b) == ma_root_bubble))
		return EINVAL;
	attr->natural_bubble = b;
	return 0;
}

int marcel_attr_getnaturalbubble(const marcel_attr_t *attr, marcel_bubble_t **b)
{
	if (!attr || attr->magic != MA_ATTR_MAGIC || !b)
		return EINVAL;
	*b = attr->natural_bubble;
	return 0;
}

int marcel_attr_setinheritholder(marcel_attr_t *attr, int yes)
{
	if (!attr || attr->magic != MA_ATTR_MAGIC)
		return EINVAL;
	attr->inherit_holder = yes != 0;
	return 0;
}

int marcel_attr_getinheritholder(const marcel_attr_t *attr, int *yes)
{
	if (!attr || attr->magic != MA_ATTR_MAGIC || !yes)
		return EINVAL;
	*yes = attr->inherit_holder;
	return 0;
}

/* ---- runtime start and stop ---- */

int ma_bubbles_start(void)
{
	ma_spin_init(&ma_bubble_tree_lock);
	struct ma_bubble *r = ma_root_bubble;
	r->magic = 0;
	ma_bubble_setup(r);
	r->magic = MA_BUBBLE_MAGIC;
	r->id = 0;
	r->woken = 1;
	r->counted = 0;
	atomic_store(&r->status, MA_BUBBLE_OPENED);
	r->e.sched_holder = &ma_rt.rqs[0].hold;
	MA_TRACE(MA_TR_BUBBLE_NEW, r->uid, 0, NULL);
	struct marcel_task *m = ma_rt.main_task;
	ma_member_add(r, &m->e, 0);
	return 0;
}

void ma_bubbles_stop(void)
{
	/* Every thread ended: what is left are bubbles the application did not destroy and
	 * implicit ones whose owner is main. Unlink them so nothing points at freed memory. */
	struct marcel_task *m = ma_rt.main_task;
	ma_bubble_task_exit_owner(m);
	struct ma_bubble *r = ma_root_bubble;
	while (!ma_list_empty(&r->members)) {
		struct ma_entity *e = ma_container_of(r->members.next, struct ma_entity, member_node);
		ma_member_del(r, e, NULL);
		if (e->type == MA_BUBBLE_ENTITY) {
			struct ma_bubble *b = ma_bubble_of_entity(e);
			ma_bubble_regen_cancel(b);
			b->e.sched_holder = NULL;
			__atomic_store_n(&b->e.ready_holder, NULL, __ATOMIC_RELAXED);
			b->queued = 0;
			b->woken = 0;
			atomic_store(&b->status, MA_BUBBLE_CLOSED);
		}
	}
	r->magic = 0;
}
