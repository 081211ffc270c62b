/*
 * Threads outside the bubble tree: what a program that never asks for a bubble pays for
 * bubbles, which is nothing.
 *
 * Every thread belongs to a bubble (marcel_root_bubble, or its creator's children
 * bubble), and keeping that membership was a third of a create and join: a member list
 * under the bubble's lock at creation, again at the exit (doc/design.md, "The core's hot
 * paths against Argobots"). Nobody reads it until something looks at the tree: a bubble
 * made or named, a children bubble asked for, a snapshot, hwprio, or a strategy whose
 * hooks read the root's members (all but those that set ma_strategy.free_threads). Until
 * then a thread created without naming a bubble is *free*: no parent, queued where the
 * root would have sent it. The core makes and ends such threads itself while its free
 * gate is open (marcel/ma_hooks.h, which also says how the races with the close are
 * closed). The first look (ma_tree_want) closes the gate and puts every free thread into
 * the root bubble, which then holds everything again; from then on threads are created
 * into the tree as before.
 *
 * The gate's `home` is where the root sends its members: rqs[0], where the root is opened
 * at the start. Nothing moves the root while the gate is open: naming it closes the gate
 * (ma_bubble_get), and the strategies that allow free threads leave the root opened.
 */
#include <errno.h>
#include "ma_hooks.h"
#include "ma_strategy.h"
#include "ma_trace.h"

/* Whether t is a free thread the look may adopt (the tree lock held). The loads are in
 * the order the races of the free gate need (marcel/ma_hooks.h): tree_exit before the
 * state. A BORN thread not made to stay BORN is being put into the tree by its creator
 * right now (ma_bubble_task_new_rooted): the root must not count as waiting for it
 * (nb_born) a thread its creator starts without the root's lock, so it is left to it. */
static int ma_free_adoptable(struct marcel_task *t)
{
	if (t->is_idle || ma_read_once(&t->e.natural_holder))
		return 0;
	if (atomic_load_explicit(&t->tree_exit, memory_order_seq_cst))
		return 0;
	int st = atomic_load_explicit(&t->state, memory_order_seq_cst);
	if (st == MA_TASK_FREE || st == MA_TASK_DEAD)
		return 0;
	return st != MA_TASK_BORN || t->dontsched;
}

/* Puts free thread t into the root bubble (the tree lock held, t still free). */
static void ma_free_adopt(struct marcel_task *t)
{
	struct ma_bubble *r = ma_root_bubble;
	ma_spin_lock(&r->hold.lock);
	ma_member_add(r, &t->e, 0);
	ma_spin_unlock(&r->hold.lock);
	MA_TRACE(MA_TR_BUBBLE_INSERT, r->uid, t->id, NULL);
}

static void ma_free_adopt_one(struct marcel_task *t, void *arg)
{
	(void)arg;
	if (ma_free_adoptable(t))
		ma_free_adopt(t);
}

void ma_tree_want(void)
{
	if (ma_likely(atomic_load_explicit(&ma_free_gate.closed, memory_order_acquire)))
		return;
	ma_tree_lock();
	if (!atomic_load_explicit(&ma_free_gate.closed, memory_order_relaxed)) {
		atomic_store_explicit(&ma_free_gate.closed, 1, memory_order_seq_cst);
		ma_threads_walk(ma_free_adopt_one, NULL);
	}
	ma_tree_unlock();
}

void ma_free_open(void)
{
	struct ma_holder *h = ma_bubble_holder_for_member(ma_root_bubble);
	ma_free_gate.home = h->type == MA_RUNQUEUE_HOLDER ? h : NULL;
	atomic_store(&ma_free_gate.closed, 0);
}

void ma_free_adopt_late(struct marcel_task *t)
{
	ma_tree_lock();
	if (!ma_read_once(&t->e.natural_holder))
		ma_free_adopt(t);
	ma_tree_unlock();
}

/* The queue a free thread started now goes to: where the root sends its members, or NULL
 * if the root is not opened on a queue (then it joins the root as before). */
static struct ma_holder *ma_free_holder(struct marcel_task *t, struct ma_runqueue *rq)
{
	if (t->placed)
		return rq ? &rq->hold : ma_read_once(&t->e.sched_holder);
	struct ma_holder *h = ma_bubble_holder_for_member(ma_root_bubble);
	return h->type == MA_RUNQUEUE_HOLDER ? h : NULL;
}

int ma_free_task_new(struct ma_worker *w, struct marcel_task *t, marcel_t *pid, const marcel_attr_t *attr,
		     struct ma_runqueue *rq, int start)
{
	struct ma_holder *h = start ? ma_free_holder(t, rq) : NULL;
	if (start && !h)
		return ma_bubble_task_new_rooted(w, t, pid, attr, rq, start);
	ma_free_task_publish(w, t, pid, h);
	return 0;
}

int ma_free_task_start(struct marcel_task *t)
{
	ma_tree_lock();
	if (ma_read_once(&t->e.natural_holder)) {
		ma_tree_unlock();
		return EAGAIN; /* adopted meanwhile: it starts as the root's member */
	}
	if (atomic_load(&t->state) != MA_TASK_BORN) {
		ma_tree_unlock();
		return EINVAL;
	}
	struct ma_holder *h = ma_free_holder(t, NULL);
	if (!h) {
		ma_free_adopt(t);
		ma_tree_unlock();
		return EAGAIN;
	}
	ma_store_release(&t->e.sched_holder, h);
	atomic_store_explicit(&t->state, MA_TASK_READY, memory_order_relaxed);
	ma_tree_unlock();
	ma_entity_enqueue(&t->e);
	return 0;
}
