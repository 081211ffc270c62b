/*
 * The bubble API: initialisation, membership (insert/remove), wake-up, join, barrier,
 * priority and levels, the root bubble and the implicit children bubbles.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "ma_strategy.h"
#include "ma_trace.h"
#include "ma_hooks.h"
#include "ma_view_build.h"

/* Lines of their own: the tree lock is written by every VP at every structural change,
 * which would otherwise take away whatever shares its line (the root's entity, read by
 * walks up the tree) from the other VPs each time. */
marcel_bubble_t marcel_root_bubble __attribute__((aligned(64)));
struct ma_bubble *const ma_root_bubble = (struct ma_bubble *)(void *)&marcel_root_bubble;
ma_spinlock_t ma_bubble_tree_lock __attribute__((aligned(64)));
__thread int ma_tree_held;

static int ma_member_remove(struct ma_bubble *b, struct ma_entity *e);

#define MA_BUBBLE_DESTROYED 0x44454144u /* "DEAD": a use after destroy is an error */
#define MA_BUBBLE_INITIALISING 1u

/*
 * Setting a bubble up comes in two parts (ma_bubble.h, struct ma_bubble): the fields a
 * private bubble uses, and the rest, which waits until the bubble is published (most
 * private bubbles never are). The first part stores field by field, without a memset:
 * compilers expand a memset of this size into `rep stos`, whose start-up cost is a
 * visible share of a level of a fine-grained recursion (doc/design.md, "Spawn cost").
 * Its magic number is left to the caller.
 */
static void ma_bubble_setup_hot(struct ma_bubble *b, struct ma_worker *w)
{
	b->e.type = MA_BUBBLE_ENTITY;
	atomic_init(&b->e.prio, MA_DEF_PRIO);
	ma_write_once(&b->e.natural_holder, NULL);
	ma_write_once(&b->e.sched_holder, NULL);
	ma_write_once(&b->e.ready_holder, NULL);
	ma_list_init(&b->e.run_node);
	b->e.queued_prio = 0;
	atomic_init(&b->e.sched_level, 0);
	ma_list_init(&b->e.member_node);
	b->e.explicit_member = 0;
	atomic_init(&b->e.load_hint, -1);
	atomic_init(&b->e.cpu_ns, 0);
	b->e.last_level = -1;
	b->hold.type = MA_BUBBLE_HOLDER;
	ma_spin_init(&b->hold.lock);
	b->hold.sole_vp1 = 0;
	b->id = -1;
	b->uid = MA_TRACE_BUBBLE_TAG | ma_new_id(w);
	atomic_init(&b->status, MA_BUBBLE_CLOSED);
	b->woken = 0;
	b->implicit = 0;
	b->counted = 1;
	atomic_init(&b->joining, 0);
	b->freeing = 0;
	b->owner = NULL;
	ma_list_init(&b->members);
	b->nb_members = 0;
	atomic_init(&b->nb_threads_sub, 0);
	ma_spin_init(&b->cnt_lock);
	b->unit.nb_born = 0;
	atomic_init(&b->cpu_ended_ns, 0);
	b->ranges = NULL;
	atomic_init(&b->unit.private_w, NULL);
	b->unit.private_woken = 0;
	b->private_waker = NULL;
	b->private_rt = 0;
}

void ma_bubble_complete(struct ma_bubble *b)
{
	size_t cold = offsetof(struct ma_bubble, cache);
	memset((char *)b + cold, 0, sizeof(*b) - cold);
	ma_list_init(&b->cache);
	ma_spin_init(&b->regen_lock);
	b->fixed_item = -1;
}

static void ma_bubble_setup(struct ma_bubble *b)
{
	ma_bubble_setup_hot(b, ma_worker_self());
	ma_bubble_complete(b);
}

struct ma_bubble *ma_bubble_get_slow(marcel_bubble_t *pub)
{
	struct ma_bubble *b = ma_bubble_of(pub);
	if (ma_unlikely(!b))
		return NULL;
	unsigned m = ma_load_acquire(&b->magic);
	if (ma_likely(m == MA_BUBBLE_MAGIC))
		return b;
	if (m == 0 || m == MA_BUBBLE_INITIALISING) {
		/* MARCEL_BUBBLE_INITIALIZER: all zero. Only the one that claims it sets it up. */
		ma_tree_want();
		unsigned zero = 0;
		if (ma_cas_acquire(&b->magic, &zero, MA_BUBBLE_INITIALISING)) {
			ma_bubble_setup(b);
			MA_TRACE(MA_TR_BUBBLE_NEW, b->uid, 0, NULL);
			ma_store_release(&b->magic, MA_BUBBLE_MAGIC);
			return b;
		}
		unsigned rounds = 0;
		while (ma_load_acquire(&b->magic) == MA_BUBBLE_INITIALISING)
			ma_spin_backoff(&rounds);
		return ma_load_acquire(&b->magic) == MA_BUBBLE_MAGIC ? b : NULL;
	}
	return NULL;
}

struct ma_bubble *ma_bubble_get(marcel_bubble_t *pub)
{
	struct ma_bubble *b = ma_bubble_get_raw(pub);
	/* Whoever names the root looks at the tree (free.c). */
	if (b == ma_root_bubble)
		ma_tree_want();
	/* Acquire: seeing it public, we see what its VP wrote while it was private. */
	if (b && ma_unlikely(atomic_load_explicit(&b->unit.private_w, memory_order_acquire) != NULL))
		ma_bubble_unprivate(b);
	return b;
}

int marcel_bubble_init(marcel_bubble_t *pub)
{
	struct ma_bubble *b = ma_bubble_of(pub);
	if (!b)
		return EINVAL;
	if (b == ma_root_bubble)
		return EBUSY;
	ma_tree_want();
	/* The storage of a private bubble that was let go of without a destroy: its VP must
	 * forget it before it is set up again (private.c). */
	if (ma_read_once(&b->magic) == MA_BUBBLE_MAGIC)
		ma_bubble_private_reinit(b);
	b->magic = 0;
	struct ma_worker *w = ma_worker_self();
	ma_bubble_setup_hot(b, w);
	/* Private: the rest when it is published (private.c). */
	if (!ma_bubble_private_init(w, b))
		ma_bubble_complete(b);
	MA_TRACE(MA_TR_BUBBLE_NEW, b->uid, 0, NULL);
	ma_store_release(&b->magic, MA_BUBBLE_MAGIC);
	return 0;
}

/* Waits while b's only members are implicit bubbles already being let go of: the last
 * thread of such a bubble ended, which is what let b's joiner return, and the VP that
 * ended it removes the bubble from b a moment later (ma_bubble_free_now). A destroy that
 * follows a join must not see b busy meanwhile. Takes no lock across the wait, and not
 * the tree lock at all: the removal may need it. */
static void ma_wait_freeing_members(struct ma_bubble *b)
{
	unsigned rounds = 0;
	for (;;) {
		int going = 0;
		ma_spin_lock(&b->hold.lock);
		ma_list_for_each_entry(struct ma_entity, e, &b->members, member_node) {
			if (e->type != MA_BUBBLE_ENTITY) {
				going = 0;
				break;
			}
			struct ma_bubble *c = ma_bubble_of_entity(e);
			ma_spin_lock(&c->hold.lock);
			going = c->implicit && c->freeing;
			ma_spin_unlock(&c->hold.lock);
			if (!going)
				break;
		}
		ma_spin_unlock(&b->hold.lock);
		if (!going)
			return;
		ma_spin_backoff(&rounds);
	}
}

int marcel_bubble_destroy(marcel_bubble_t *pub)
{
	struct ma_bubble *b = ma_bubble_get_raw(pub);
	if (!b || b->implicit)
		return EINVAL;
	if (b == ma_root_bubble)
		return EBUSY;
	struct ma_worker *w = ma_worker_self();
	struct ma_worker *o = atomic_load_explicit(&b->unit.private_w, memory_order_acquire);
	if (w && o == w) {
		/* Nobody else has seen it: its members are the seeds it still holds. */
		if (b->nb_members || b->unit.private_woken)
			return EBUSY;
		ma_private_forget(w, b);
		b->magic = MA_BUBBLE_DESTROYED;
		/* A load estimate may still read it through a seed that was in it. */
		ma_estimates_quiesce();
		/* Memory its seeds attached to it (marcel_task_attach_memory). */
		ma_bubble_memory_free(b);
		return 0;
	}
	if (o)
		ma_bubble_unprivate(b);
	ma_wait_freeing_members(b);
	/* Out of the tree (joined, or never woken): no membership changes, so no tree lock,
	 * which a recursion that destroys a bubble per level would take from every VP. */
	int in_tree = ma_entity_parent(&b->e) != NULL;
	if (in_tree) {
		ma_tree_lock();
		/* Put back in the root by a removal or a wake-up, not by the application: that
		 * one membership does not keep it. */
		if (b->e.natural_holder == &ma_root_bubble->hold && !b->e.explicit_member && !b->woken)
			ma_member_remove(ma_root_bubble, &b->e);
	}
	ma_spin_lock(&b->hold.lock);
	int busy = b->nb_members || b->e.natural_holder || b->joining ||
		   atomic_load(&b->status) == MA_BUBBLE_CLOSING || b->queued;
	int armed = 0;
	if (!busy) {
		b->magic = MA_BUBBLE_DESTROYED;
		armed = ma_bubble_regen_close_locked(b);
	}
	ma_spin_unlock(&b->hold.lock);
	if (in_tree)
		ma_tree_unlock();
	if (busy)
		return EBUSY;
	ma_estimates_quiesce();
	if (armed)
		ma_bubble_regen_cancel(b);
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
	struct ma_bubble *b = ma_bubble_get_raw((marcel_bubble_t *)pub);
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

/*
 * Thread counts (nb_threads_sub), for joins and for the strategies' estimates.
 *
 * A bubble counts its own threads plus, for each sub-bubble, that sub-bubble's count
 * capped at ma_count_cap. A change therefore goes up only while the capped value of the
 * bubble it reaches changes: creating and ending a thread touches its own bubble and a
 * few above it, not every ancestor. Counting every ancestor cost sumtime's nested
 * recursion a lock and an atomic add per level on every create and every exit (60% of
 * its time, 17 levels deep). The count is still 0 exactly when the subtree holds no
 * thread (what join waits for), and exact up to the cap (what strategies compare with
 * numbers of VPs); above it, it is a lower bound that is at least the cap.
 *
 * A sub-bubble's changes reach its parent in the order they happened: each goes up with
 * the sub-bubble's count lock held until the parent's is taken (hand over hand, child
 * before parent), and a change of parent happens under that same lock, with what the
 * bubble brings added to its new parent (or taken from the old one) before the lock is
 * released. Otherwise a parent could see a sub-bubble's -1 before its +1, drop to 0 with
 * threads still inside, and release its joiner.
 */
static long ma_count_cap = 1;

static long ma_count_capped(long n)
{
	return n < ma_count_cap ? n : ma_count_cap;
}

/* Adds delta to x's count, x->cnt_lock held (released on return) and x->hold.lock held
 * (x's members changed: ma_member_add, ma_member_del), and carries the change of x's
 * capped count up. The root is not counted: nobody can join it, and every
 * thread would write its counter. */
static void ma_count_locked(struct ma_bubble *x, long delta, struct ma_zeroed *z)
{
	/* The first bubble is the one whose members changed, which the caller holds: its
	 * joiner reads the count and publishes itself under that lock, and the caller wakes
	 * it (ma_bubble_empty_locked). Only the bubbles above need the store-load order. */
	int held = 1;
	for (;;) {
		long old = atomic_load_explicit(&x->nb_threads_sub, memory_order_relaxed);
		long now = old + delta;
		if (now || held) {
			atomic_store_explicit(&x->nb_threads_sub, now, memory_order_relaxed);
		} else {
			/* Sequentially consistent, like the joiner's store of joining then load of
			 * the count: one of the two sides sees the other. */
			atomic_store(&x->nb_threads_sub, now);
			if (z && z->n < 16 && atomic_load(&x->joining))
				z->x[z->n++] = x;
		}
		long up = ma_count_capped(now) - ma_count_capped(old);
		struct ma_bubble *p = ma_entity_parent(&x->e);
		if (!up || !p || !p->counted) {
			ma_spin_unlock(&x->cnt_lock);
			return;
		}
		ma_spin_lock(&p->cnt_lock);
		ma_spin_unlock(&x->cnt_lock);
		x = p;
		delta = up;
		held = 0;
	}
}

/* Sub-bubble s enters b (added: 1) or leaves it (added: 0), s->cnt_lock held (released
 * on return): its parent changes, and what it counts goes to b (and above) hand over
 * hand, so a count walking up through s lands on exactly one side of the move. */
static void ma_bubble_reparent_locked(struct ma_bubble *s, struct ma_bubble *b, int added, struct ma_zeroed *z)
{
	long n = ma_count_capped(atomic_load_explicit(&s->nb_threads_sub, memory_order_relaxed));
	ma_store_release(&s->e.natural_holder, added ? &b->hold : NULL);
	if (n && b->counted) {
		ma_spin_lock(&b->cnt_lock);
		ma_spin_unlock(&s->cnt_lock);
		ma_count_locked(b, added ? n : -n, z);
		return;
	}
	ma_spin_unlock(&s->cnt_lock);
}

/* Sets e's parent to b (added: 1) or takes it out of b (added: 0) and counts what e
 * brings along in b (and above). */
static void ma_entity_reparent(struct ma_bubble *b, struct ma_entity *e, int added, struct ma_zeroed *z)
{
	if (e->type == MA_TASK_ENTITY) {
		/* Threads change bubbles under the bubbles' locks, which the callers hold. */
		ma_store_release(&e->natural_holder, added ? &b->hold : NULL);
		if (b->counted) {
			ma_spin_lock(&b->cnt_lock);
			ma_count_locked(b, added ? 1 : -1, z);
		}
		return;
	}
	struct ma_bubble *s = ma_bubble_of_entity(e);
	ma_spin_lock(&s->cnt_lock);
	ma_bubble_reparent_locked(s, b, added, z);
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

/*
 * The tree lock and sub-bubbles. A sub-bubble enters or leaves a bubble under the tree
 * lock, except in the moves every level of a nested recursion makes, which skip it when
 * nobody holds it: a wake-up putting a bubble with no parent and no sub-bubble into the
 * caller's bubble, the creation of a children bubble (ma_member_add_untreed), and a join
 * or a free taking a bubble out of its parent (ma_member_remove_cpu). Each checks, under
 * the parent's lock (and, to insert, the moving bubble's count lock, under which every
 * change of parent happens), that the tree lock is free:
 * - what holds the tree lock to keep the tree still reads a bubble's parent under that
 *   bubble's count lock (insertentity) or a member list under its bubble's lock
 *   (ma_start_born_rec, the snapshot), after taking the tree lock: had it done so before
 *   the check, the check would have seen the tree lock taken (it is released only once
 *   that walk is done), and if after, it sees the move done;
 * - the move itself touches only the parent and the moving bubble, ancestor first.
 * The barrier's count walks member lists with the tree lock alone, as it already did
 * while threads come and go. The tree lock, taken by every VP at every level, cost a
 * recursion on 2 VPs all of what the second VP brought.
 */

/* Whether someone holds the tree lock. */
static int ma_tree_busy(void)
{
	return atomic_load_explicit(&ma_bubble_tree_lock.locked, memory_order_relaxed) != 0;
}

/* Links bubble s, which has no parent, into p's members (p locked) without the tree lock:
 * 0 if s has a parent or the tree lock is taken (nothing done). */
static int ma_member_add_untreed(struct ma_bubble *p, struct ma_bubble *s, int explicit_member)
{
	ma_spin_lock(&s->cnt_lock);
	if (s->e.natural_holder || ma_tree_busy()) {
		ma_spin_unlock(&s->cnt_lock);
		return 0;
	}
	ma_list_add_tail(&p->members, &s->e.member_node);
	p->nb_members++;
	s->e.explicit_member = (unsigned char)explicit_member;
	ma_bubble_reparent_locked(s, p, 1, NULL);
	return 1;
}

void ma_member_add(struct ma_bubble *b, struct ma_entity *e, int explicit_member)
{
	ma_list_add_tail(&b->members, &e->member_node);
	b->nb_members++;
	e->explicit_member = (unsigned char)explicit_member;
	ma_entity_reparent(b, e, 1, NULL);
	if (e->type == MA_TASK_ENTITY && atomic_load(&ma_task_of_entity(e)->state) == MA_TASK_BORN)
		b->unit.nb_born++;
}

/* Unlinks e from b (b locked). */
static void ma_member_del(struct ma_bubble *b, struct ma_entity *e, struct ma_zeroed *z)
{
	ma_list_del(&e->member_node);
	b->nb_members--;
	if (e->type == MA_TASK_ENTITY && atomic_load(&ma_task_of_entity(e)->state) == MA_TASK_BORN)
		b->unit.nb_born--;
	e->explicit_member = 0;
	ma_entity_reparent(b, e, 0, z);
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
 * empties it.
 *
 * untreed: the caller does not hold the tree lock, which removing a sub-bubble needs
 * unless nobody holds it (see above; -1 is returned, nothing done, if someone does). What
 * the tree lock keeps still for a removal is the walks that keep their place in a member
 * list across that list's lock (ma_start_born_rec, the barrier's count): one that read b's
 * list before we locked b took the tree lock before, and we see it taken; one that reads
 * it after we unlock b does not see e. */
static int ma_member_remove_cpu(struct ma_bubble *b, struct ma_entity *e, unsigned long long cpu_ns,
				int untreed)
{
	int free_it;
	ma_spin_lock(&b->hold.lock);
	if (ma_entity_parent(e) != b) {
		ma_spin_unlock(&b->hold.lock);
		return 0;
	}
	if (untreed && e->type == MA_BUBBLE_ENTITY && ma_tree_busy()) {
		ma_spin_unlock(&b->hold.lock);
		return -1;
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
	return ma_member_remove_cpu(b, e, 0, 0);
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
	struct ma_bubble *old;
	if (e->type == MA_BUBBLE_ENTITY) {
		/* b's chain and e's parent are read under the locks a move without the tree
		 * lock takes (see ma_member_add_untreed). */
		struct ma_bubble *sub = ma_bubble_of_entity(e);
		ma_spin_lock(&b->hold.lock);
		int cycle = ma_bubble_is_within(b, sub);
		ma_spin_unlock(&b->hold.lock);
		if (cycle) {
			ma_tree_unlock();
			return EINVAL;
		}
		ma_spin_lock(&sub->cnt_lock);
		old = ma_entity_parent(e);
		ma_spin_unlock(&sub->cnt_lock);
	} else {
		old = ma_entity_parent(e);
	}
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
	ma_list_for_each_entry(struct ma_entity, m, &x->members, member_node) {
		if (m->type == MA_BUBBLE_ENTITY)
			ma_mark_woken(ma_bubble_of_entity(m));
	}
	ma_spin_unlock(&x->hold.lock);
	MA_TRACE(MA_TR_BUBBLE_WAKE, x->uid, 0, NULL);
}

/* One pass of a wake-up over bubble b's members, b locked: its born threads started
 * (queued once b is unlocked, by ma_bubble_wake_finish). */
enum { MA_WAKE_BATCH = 64 };
struct ma_wake_pass {
	struct marcel_task *ready[MA_WAKE_BATCH];
	unsigned n;
	int subs;                         /* b has a sub-bubble: the pass stopped there */
	int own;                          /* b must be handed to ma_bubble_resettle */
};

/* Not an initializer: that would clear the whole array at every wake-up. */
static void ma_wake_pass_init(struct ma_wake_pass *wp)
{
	wp->n = 0;
	wp->subs = wp->own = 0;
}

/* A bubble of threads only (a level of a recursion) is marked and its threads started in
 * one pass under its lock, without the tree lock, which only a walk through sub-bubbles
 * needs. Marked in the same pass, so that a sub-bubble inserted after it is woken by its
 * insertion, and one inserted before sends the wake-up the whole way (ma_mark_woken,
 * ma_bubble_start_born). */
static void ma_wake_pass_locked(struct ma_bubble *b, struct ma_wake_pass *wp)
{
	wp->n = 0;
	b->woken = 1;
	/* Part of a closed unit above it: its threads start in that unit's cache, and it has
	 * nothing of its own to hand to the unit (ma_bubble_absorb) unless something waits
	 * for it, or is scheduled, in b itself. A concurrent burst or gather of the unit
	 * retargets what we start, as it does any thread of its. Where b's members go
	 * (ma_bubble_holder_for_member, a walk up the tree) is read once per pass. */
	wp->own |= b->e.sched_holder || b->queued || !ma_list_empty(&b->cache);
	struct ma_holder *h = NULL;
	ma_list_for_each_entry(struct ma_entity, m, &b->members, member_node) {
		if (wp->n >= MA_WAKE_BATCH)
			break;
		if (m->type == MA_BUBBLE_ENTITY) {
			wp->subs = 1;
			return;
		}
		struct marcel_task *t = ma_task_of_entity(m);
		if (ma_unlikely(t->private_claimed)) {
			/* Its joiner runs it, taken while b was private (private.c): it is where
			 * b's other threads start, as if it had been queued there and claimed. */
			if (!h)
				h = ma_bubble_holder_for_member(b);
			ma_store_release(&t->e.sched_holder, h);
			t->private_claimed = 0;
		}
		/* One being handed to an idle VP starts there once b is placed (private.c). */
		if (b->unit.nb_born && atomic_load(&t->state) == MA_TASK_BORN && !t->private_handed) {
			if (t->placed) {
				ma_bubble_start_locked(b, t, NULL);
			} else {
				if (!h)
					h = ma_bubble_holder_for_member(b);
				ma_bubble_start_in_locked(b, t, h);
			}
			wp->ready[wp->n++] = t;
		}
		wp->own |= ma_read_once(&m->sched_holder) == &b->hold;
	}
	if (!h)
		h = ma_bubble_holder_for_member(b);
	wp->own |= h == &b->hold || h->type != MA_BUBBLE_HOLDER;
}

/* The rest of b's wake-up after a first pass (b unlocked): queues what the passes
 * started, walks the sub-bubbles if there are any, then places b. */
static void ma_bubble_wake_finish(struct ma_bubble *b, struct ma_wake_pass *wp)
{
	for (;;) {
		ma_tasks_enqueue(wp->ready, wp->n);
		if (wp->subs || wp->n < MA_WAKE_BATCH)
			break;
		ma_spin_lock(&b->hold.lock);
		ma_wake_pass_locked(b, wp);
		ma_spin_unlock(&b->hold.lock);
	}
	if (wp->subs) {
		/* Marked first, so that threads started below find their bubbles woken; until
		 * b is placed its whole subtree is one closed unit and they wait in its cache. */
		ma_mark_woken(b);
		ma_bubble_start_born(b);
	} else {
		MA_TRACE(MA_TR_BUBBLE_WAKE, b->uid, 0, NULL);
	}
	if (wp->subs || wp->own)
		ma_bubble_resettle(b);
}

/* Marks b's subtree woken and starts its created-not-started threads, then places b. */
static void ma_bubble_wake_tree(struct ma_bubble *b)
{
	struct ma_wake_pass wp;
	ma_wake_pass_init(&wp);
	ma_spin_lock(&b->hold.lock);
	ma_wake_pass_locked(b, &wp);
	ma_spin_unlock(&b->hold.lock);
	ma_bubble_wake_finish(b, &wp);
}

/* The wake-up of a level of a recursion: b, with no parent and no sub-bubble, goes into
 * the caller's woken bubble without the tree lock (see ma_member_add_untreed), and its
 * first pass (ma_wake_pass_locked) is made under the same locks. 1 if done, -1 if b was
 * woken already, 0 if the tree lock is needed. */
static int ma_bubble_wake_untreed(struct ma_bubble *b, struct marcel_task *self, struct ma_wake_pass *wp)
{
	struct ma_bubble *p = self ? ma_entity_parent(&self->e) : NULL;
	if (!p)
		return 0;
	int done = 0;
	ma_spin_lock(&p->hold.lock);
	ma_spin_lock(&b->hold.lock);
	if (b->woken) {
		done = -1;
	} else if (p->woken && ma_entity_parent(&self->e) == p) {
		int subs = 0;
		ma_list_for_each_entry(struct ma_entity, m, &b->members, member_node)
			if ((subs = m->type == MA_BUBBLE_ENTITY))
				break;
		done = !subs && ma_member_add_untreed(p, b, 1);
		if (done)
			ma_wake_pass_locked(b, wp);
	}
	ma_spin_unlock(&b->hold.lock);
	ma_spin_unlock(&p->hold.lock);
	if (done > 0)
		MA_TRACE(MA_TR_BUBBLE_INSERT, p->uid, b->uid, NULL);
	return done;
}

int marcel_wake_up_bubble(marcel_bubble_t *pub)
{
	struct ma_bubble *b = ma_bubble_get_raw(pub);
	if (!b || b == ma_root_bubble)
		return EINVAL;
	if (!ma_rt.running)
		return EPERM;
	struct ma_worker *w = ma_worker_self();
	struct ma_worker *o = atomic_load_explicit(&b->unit.private_w, memory_order_acquire);
	if (o) {
		int r = o == w ? ma_private_wake(w, b) : -1;
		if (r >= 0)
			return r;
		ma_bubble_unprivate(b);
	}
	struct marcel_task *self = ma_task_self();
	/* Going into our bubble: not while it is private. */
	if (w)
		ma_private_before_public(w, self);
	return ma_bubble_wake_as(b, self);
}

/* Waking a woken bubble again starts the threads created in it since (with
 * marcel_create_dontsched), which is what Marcel programs do when they attach a bubble to
 * a woken one, marcel_root_bubble say, before filling and waking it. Not while an
 * ancestor sleeps: they start with it. The caller holds the tree lock. */
static void ma_bubble_rewake_treed(struct ma_bubble *b)
{
	int live = 1;
	for (struct ma_bubble *x = b; x && live; x = ma_entity_parent(&x->e)) {
		ma_spin_lock(&x->hold.lock);
		live = x->woken;
		ma_spin_unlock(&x->hold.lock);
	}
	if (live)
		ma_start_born(b);
}

int ma_bubble_wake_as(struct ma_bubble *b, struct marcel_task *self)
{
	struct ma_wake_pass wp;
	ma_wake_pass_init(&wp);
	int quick = ma_bubble_wake_untreed(b, self, &wp);
	if (quick) {
		if (quick < 0) {
			ma_tree_lock();
			ma_bubble_rewake_treed(b);
			ma_tree_unlock();
			return 0;
		}
		ma_bubble_wake_finish(b, &wp);
		return 0;
	}
	ma_tree_lock();
	/* Read under the locks a wake-up without the tree lock writes them under. */
	ma_spin_lock(&b->hold.lock);
	int woken = b->woken;
	ma_spin_unlock(&b->hold.lock);
	ma_spin_lock(&b->cnt_lock);
	int parentless = !b->e.natural_holder;
	ma_spin_unlock(&b->cnt_lock);
	if (woken) {
		ma_bubble_rewake_treed(b);
		ma_tree_unlock();
		return 0;
	}
	if (parentless) {
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
	if (!parent_woken) {
		ma_spin_lock(&b->hold.lock);
		b->woken = 1; /* runs when its parent is woken */
		ma_spin_unlock(&b->hold.lock);
	}
	ma_tree_unlock();
	if (parent_woken)
		ma_bubble_wake_tree(b);
	return 0;
}

/* ---- join ---- */

int marcel_bubble_join(marcel_bubble_t *pub)
{
	struct ma_bubble *b = ma_bubble_get_raw(pub);
	/* A children bubble lives and goes with its thread (and keeps no thread count). */
	if (!b || b == ma_root_bubble || b->implicit)
		return EINVAL;
	if (!ma_rt.running)
		return EPERM;
	struct ma_worker *w = ma_worker_self();
	struct ma_worker *o = atomic_load_explicit(&b->unit.private_w, memory_order_acquire);
	if (o) {
		if (o == w && ma_private_join(w, b))
			return 0;
		ma_bubble_unprivate(b);
	}
	struct marcel_task *self = ma_task_self();
	struct ma_bubble *sp = self ? ma_entity_parent(&self->e) : NULL;
	/* A sub-bubble of our own bubble (a level joining the bubble it woke) cannot hold
	 * us: no walk up the tree, nor the tree lock it needs. */
	if (sp && ma_entity_parent(&b->e) != sp) {
		ma_tree_lock();
		sp = ma_entity_parent(&self->e);
		int inside = sp && ma_bubble_is_within(sp, b);
		ma_tree_unlock();
		if (inside)
			return EDEADLK;
	}
	struct ma_waiter wt;
	ma_spin_lock(&b->hold.lock);
	if (b->joining) {
		ma_spin_unlock(&b->hold.lock);
		return EBUSY;
	}
	/* Empty already (its threads were run by their joiners, the usual with seeds): no
	 * waiter to arm, and joining need not be ordered against the counters, whose
	 * zeroing it only serves to see. Otherwise joining is stored, then the count
	 * loaded, against the counters' store of 0 then load of joining (ma_count_locked). */
	int wait = atomic_load(&b->nb_threads_sub) != 0;
	if (wait) {
		atomic_store(&b->joining, 1);
		wait = atomic_load(&b->nb_threads_sub) != 0;
	} else {
		atomic_store_explicit(&b->joining, 1, memory_order_relaxed);
	}
	if (wait) {
		/* Armed before it is published under the lock its waker takes. */
		ma_waiter_init(&wt);
		b->joiner = &wt;
	}
	int placed = b->queued || b->e.sched_holder;
	int closing = atomic_load_explicit(&b->status, memory_order_relaxed) == MA_BUBBLE_CLOSING;
	ma_spin_unlock(&b->hold.lock);
	if (wait) {
		ma_waiter_wait(&wt);
		placed = 1;
	}
	/* A regeneration may still be closing it, or handing it back to the strategy once
	 * closed (ma_bubble_ref): what that places must be taken out below. It may wait for
	 * us (asked back before we left b without a switch) or for a thread parked on our
	 * worker: yield, which counts us back and lets those run. */
	if (wait || closing || atomic_load(&b->refs)) {
		unsigned rounds = 0;
		while (atomic_load(&b->status) == MA_BUBBLE_CLOSING || atomic_load(&b->refs)) {
			if (self && !self->is_idle)
				marcel_yield();
			else
				ma_spin_backoff(&rounds);
		}
		placed = 1;
	}
	/* Empty: take it out of the scheduler and of its bubble. */
	if (placed)
		ma_bubble_unplace(b);
	/* Armed only by a burst: most bubbles never were. */
	if (atomic_load(&b->regen_armed))
		ma_bubble_regen_cancel(b);
	/* Out of its parent, without the tree lock when nobody holds it: a recursion joins a
	 * bubble per level on every VP. */
	struct ma_bubble *p = ma_entity_parent(&b->e);
	int untreed = p && ma_member_remove_cpu(p, &b->e, 0, 1) > 0;
	if (!untreed) {
		ma_tree_lock();
		p = ma_entity_parent(&b->e);
		if (p)
			ma_member_remove(p, &b->e);
	}
	ma_spin_lock(&b->hold.lock);
	atomic_store_explicit(&b->joining, 0, memory_order_relaxed);
	b->woken = 0;
	atomic_store_explicit(&b->status, MA_BUBBLE_CLOSED, memory_order_release);
	ma_spin_unlock(&b->hold.lock);
	if (!untreed)
		ma_tree_unlock();
	MA_TRACE(MA_TR_BUBBLE_JOIN, b->uid, 0, NULL);
	return 0;
}

/* ---- threads joining and leaving bubbles ---- */

static struct ma_bubble *ma_children_bubble(struct marcel_task *self)
{
	if (self->children_bubble)
		return self->children_bubble;
	ma_tree_want();
	/* It goes into our bubble, and counts there: not while that one is private. */
	struct ma_worker *w = ma_worker_self();
	if (w && ma_worker_current(w) == self)
		ma_private_before_public(w, self);
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
	/* Nobody knows it yet: without the tree lock unless someone holds it (see
	 * ma_member_add_untreed); every thread that creates gets one. */
	struct ma_bubble *p;
	for (int treed = 0;; treed = 1) {
		if (treed)
			ma_tree_lock();
		p = ma_entity_parent(&self->e);
		if (!p)
			p = ma_root_bubble;
		/* It opens where its creator's bubble sends new members (or is part of its
		 * creator's closed unit), decided under the parent's lock so that a gather of
		 * the parent sees it either before or after. */
		cb->counted = p->counted;
		ma_spin_lock(&p->hold.lock);
		struct ma_holder *h = ma_bubble_holder_for_member(p);
		if (h->type == MA_RUNQUEUE_HOLDER) {
			cb->e.sched_holder = h;
			atomic_store_explicit(&cb->status, MA_BUBBLE_OPENED, memory_order_relaxed);
		} else {
			cb->e.sched_holder = NULL;
			atomic_store_explicit(&cb->status, MA_BUBBLE_CLOSED, memory_order_relaxed);
		}
		int done = treed || ma_member_add_untreed(p, cb, 0);
		if (treed)
			ma_member_add(p, &cb->e, 0);
		ma_spin_unlock(&p->hold.lock);
		if (treed)
			ma_tree_unlock();
		if (done)
			break;
	}
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

/* Thread creation: puts t (BORN) into b (the bubble its attributes name, validated; NULL:
 * its creator's) and, if `start`, starts it there (rq: the queue its attributes chose, or
 * NULL) once that bubble is woken.
 * Out of line: ma_bubble_task_new's fast path, a level of a recursion, must not pay for
 * the registers this one needs. */
static __attribute__((noinline)) int ma_bubble_adopt_new(struct marcel_task *t, const marcel_attr_t *attr,
							   struct ma_bubble *b, struct ma_runqueue *rq, int start)
{
	/* Named explicitly: a member as if inserted. marcel_root_bubble named is the default
	 * holder of the threads that have none, not a membership. */
	int named = 0;
	if (b) {
		named = b != ma_root_bubble;
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
	/* A bubble private to our VP (private.c): named, or the one holding us. */
	struct ma_worker *o = atomic_load_explicit(&b->unit.private_w, memory_order_acquire);
	if (o) {
		if (o == ma_worker_self() && start && ma_private_adopt_fast(o, b, t, named))
			return 0;
		ma_bubble_unprivate(b);
	}
	ma_spin_lock(&b->hold.lock);
	ma_member_add(b, &t->e, named);
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

/* ma_bubble_task_new when attr names a bubble not set up yet (a static initializer) or no
 * bubble at all. */
static __attribute__((noinline)) int ma_bubble_task_new_slow(struct ma_worker *w, struct marcel_task *t, marcel_t *pid,
							     const marcel_attr_t *attr, struct ma_runqueue *rq,
							     int start)
{
	struct ma_bubble *b = ma_bubble_get_raw(attr->natural_bubble);
	if (!b)
		return EINVAL;
	ma_task_born(w, t, pid);
	return ma_bubble_adopt_new(t, attr, b, rq, start);
}

int ma_bubble_task_new_rooted(struct ma_worker *w, struct marcel_task *t, marcel_t *pid, const marcel_attr_t *attr,
			      struct ma_runqueue *rq, int start)
{
	ma_task_born(w, t, pid);
	return ma_bubble_adopt_new(t, attr, NULL, rq, start);
}

/* No call on the way to a private bubble, or out of the tree, but the tail calls: a level
 * of a recursion comes here twice, and registers saved for a call would cost each level. */
int ma_bubble_task_new(struct ma_worker *w, struct marcel_task *t, marcel_t *pid, const marcel_attr_t *attr,
		       struct ma_runqueue *rq, int start)
{
	struct ma_bubble *b = attr ? ma_bubble_of(attr->natural_bubble) : NULL;
	/* Outside the tree while nothing looks at it (free.c). */
	if (!b && ma_likely(!atomic_load_explicit(&ma_free_gate.closed, memory_order_relaxed)))
		return ma_free_task_new(w, t, pid, attr, rq, start);
	if (b && ma_unlikely(ma_load_acquire(&b->magic) != MA_BUBBLE_MAGIC))
		return ma_bubble_task_new_slow(w, t, pid, attr, rq, start);
	ma_task_born(w, t, pid);
	/* Into the private bubble of w its attributes name, without a lock, when nobody
	 * asked w for anything (ma_private_adopt_fast); else ma_bubble_adopt_new. */
	if (b && start && w && atomic_load_explicit(&b->unit.private_w, memory_order_acquire) == w &&
	    !ma_private_asked(w) && t->seed && !t->placed) {
		ma_private_add_seed(b, t, 1);
		return 0;
	}
	return ma_bubble_adopt_new(t, attr, b, rq, start);
}

int ma_bubble_task_start(struct marcel_task *t, int at_end)
{
	struct ma_bubble *b = ma_entity_parent(&t->e);
	if (!b) {
		int e = ma_free_task_start(t);
		if (e != EAGAIN)
			return e;
		b = ma_entity_parent(&t->e);
	}
	/* A bubble private to a VP whose threads still run is theirs to publish
	 * (private.c). */
	if (at_end && atomic_load_explicit(&b->unit.private_w, memory_order_acquire))
		return EAGAIN;
	return ma_bubble_start_task(b, t, NULL, 1);
}

void ma_bubble_task_exit(struct marcel_task *t)
{
	if (ma_unlikely(t->children_bubble != NULL))
		ma_bubble_task_exit_owner(t);
	/* Its last run is charged at the switch after it ends, too late for its bubble: a
	 * thread that never switched would leave it nothing. Charge it now (an inline seed's
	 * joiner then need not, seed.c). */
	struct ma_worker *w = ma_worker_self();
	if (w && ma_worker_current(w) == t)
		ma_cpu_charge(w, t);
	/* Its CPU time goes to the bubble it leaves, with the removal (to that bubble only:
	 * statistics sum up the tree, and one shared root counter would be written by every
	 * exit). */
	struct ma_bubble *b = ma_entity_parent(&t->e);
	if (!b) {
		/* Free (free.c), unless the tree adopted it meanwhile. */
		if (t->is_idle || ma_free_task_leave(t))
			return;
		ma_tree_lock();
		b = ma_entity_parent(&t->e);
		if (b)
			ma_member_remove_cpu(b, &t->e, ma_task_cpu_ns(t), 0);
		ma_tree_unlock();
		return;
	}
	unsigned long long cpu = ma_task_cpu_ns(t);
	if (w && atomic_load_explicit(&b->unit.private_w, memory_order_relaxed) == w) {
		ma_private_task_exit(b, t, cpu);
		return;
	}
	MA_TRACE(MA_TR_BUBBLE_REMOVE, b->uid, t->id, NULL);
	/* An insert may move it meanwhile: follow it. Between the two bubbles it has no
	 * parent for a moment, under the tree lock: wait there for the move to end. */
	while (b && !ma_member_remove_cpu(b, &t->e, cpu, 0))
		b = ma_entity_parent(&t->e);
	if (!b) {
		ma_tree_lock();
		b = ma_entity_parent(&t->e);
		if (b)
			ma_member_remove_cpu(b, &t->e, cpu, 0);
		ma_tree_unlock();
	}
}

/* Lets go of ownerless empty implicit bubble cb (its `freeing` set under its lock): it
 * leaves its parent and the scheduler now, its memory goes with the last reference. */
static void ma_bubble_free_now(struct ma_bubble *cb)
{
	/* Bubbles change parents under the tree lock (we may be inside such a change). */
	cb->magic = MA_BUBBLE_DESTROYED;
	struct ma_bubble *p = ma_entity_parent(&cb->e);
	int mine = !ma_tree_held;
	/* Without the tree lock when nobody holds it (see ma_member_add_untreed). */
	if (!p || !mine || ma_member_remove_cpu(p, &cb->e, atomic_load(&cb->cpu_ended_ns), 1) < 0) {
		if (mine)
			ma_tree_lock();
		p = ma_entity_parent(&cb->e);
		if (p)
			ma_member_remove_cpu(p, &cb->e, atomic_load(&cb->cpu_ended_ns), 0);
		if (mine)
			ma_tree_unlock();
	}
	ma_bubble_unplace(cb);
	ma_bubble_regen_close(cb);
	ma_bubble_unref(cb);
}

void ma_bubble_unref(struct ma_bubble *b)
{
	/* Read first: an application's bubble may be freed as soon as its count drops to 0
	 * (marcel_bubble_destroy waits for that, then returns). */
	int implicit = b->implicit;
	if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1 || !implicit)
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
	/* A free thread (free.c) is the root's, as every thread that names no bubble. */
	if (!b && !t->is_idle)
		b = ma_root_bubble;
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
	ma_list_for_each_entry(struct ma_entity, m, &b->members, member_node) {
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
		ma_hook_hw_iteration(b);
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
	atomic_store_explicit(&b->e.prio, prio, memory_order_relaxed);
	return 0;
}

int marcel_bubble_getprio(const marcel_bubble_t *pub, int *prio)
{
	struct ma_bubble *b = ma_bubble_get((marcel_bubble_t *)pub);
	if (!b || !prio)
		return EINVAL;
	*prio = atomic_load_explicit(&b->e.prio, memory_order_relaxed);
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
	atomic_store_explicit(&e->sched_level, level, memory_order_relaxed);
	return 0;
}

int marcel_entity_getschedlevel(const marcel_entity_t *e, int *level)
{
	if (!e || !level)
		return EINVAL;
	*level = atomic_load_explicit(&e->sched_level, memory_order_relaxed);
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
	struct ma_holder *h = ma_read_once(&self->e.sched_holder);
	struct ma_runqueue *rq;
	if (h->type == MA_RUNQUEUE_HOLDER)
		rq = ma_rq_of_holder(h);
	else {
		struct ma_bubble *u = ma_bubble_of_holder(h);
		struct ma_holder *uh = ma_read_once(&u->e.sched_holder);
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
	/* Naming a bubble does not touch it: a private one stays private. */
	if (b && !ma_bubble_get_raw(b))
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
	ma_bubble_hooks_install();
	ma_spin_init(&ma_bubble_tree_lock);
	/* Strategies compare a bubble's count with numbers of VPs, plus one at most
	 * (strategies/steal.c): up to there, counts must be exact. */
	ma_count_cap = (long)ma_rt.nb_vps + 2;
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
	ma_free_open();
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
			ma_write_once(&b->e.ready_holder, NULL);
			b->queued = 0;
			b->woken = 0;
			atomic_store(&b->status, MA_BUBBLE_CLOSED);
		}
	}
	r->magic = 0;
	ma_bubble_hooks_remove();
	/* Every worker has stopped: no hook of a strategy no longer in use can run. */
	ma_strategy_reclaim();
	ma_view_spares_free();
}
