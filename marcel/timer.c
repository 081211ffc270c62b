/*
 * Per-worker timers: a pairing heap per worker, under the worker's timer lock.
 *
 * A pairing heap is intrusive (the links live in the sleeper's own struct ma_timer, on
 * its stack), so arming never allocates and cannot fail, and 10k sleepers cost nothing
 * but their stacks. Insert is O(1), removing the first or any timer O(log n) amortised.
 *
 * Callbacks run with the owner's lock held; ma_timer_cancel takes the same lock, which is
 * what lets a waiter know that a racing callback has finished with its timer.
 */
#include "ma_sync.h"

static struct ma_timer *ma_heap_meld(struct ma_timer *a, struct ma_timer *b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	if (b->deadline < a->deadline) {
		struct ma_timer *t = a;
		a = b;
		b = t;
	}
	/* b becomes a's first child. */
	b->prev = a;
	b->next = a->child;
	if (a->child)
		a->child->prev = b;
	a->child = b;
	a->next = a->prev = NULL;
	return a;
}

/* The classic two passes: meld siblings pairwise left to right, then fold right to left. */
static struct ma_timer *ma_heap_merge_pairs(struct ma_timer *first)
{
	struct ma_timer *pairs = NULL;
	while (first) {
		struct ma_timer *a = first, *b = a->next;
		first = b ? b->next : NULL;
		a->next = a->prev = NULL;
		if (b)
			b->next = b->prev = NULL;
		struct ma_timer *m = ma_heap_meld(a, b);
		m->next = pairs; /* a stack: the fold below goes right to left */
		pairs = m;
	}
	struct ma_timer *root = NULL;
	while (pairs) {
		struct ma_timer *n = pairs->next;
		pairs->next = NULL;
		root = ma_heap_meld(root, pairs);
		pairs = n;
	}
	return root;
}

static void ma_heap_remove(struct ma_worker *w, struct ma_timer *t)
{
	if (t == w->timer_root) {
		w->timer_root = ma_heap_merge_pairs(t->child);
	} else {
		if (t->prev->child == t)
			t->prev->child = t->next;
		else
			t->prev->next = t->next;
		if (t->next)
			t->next->prev = t->prev;
		w->timer_root = ma_heap_meld(w->timer_root, ma_heap_merge_pairs(t->child));
	}
	if (w->timer_root)
		w->timer_root->prev = NULL;
	t->child = t->next = t->prev = NULL;
	t->armed = 0;
}

static void ma_timer_publish_next(struct ma_worker *w)
{
	atomic_store_explicit(&w->timer_next, w->timer_root ? w->timer_root->deadline : MA_NO_DEADLINE,
			      memory_order_relaxed);
}

void ma_timer_arm(struct ma_worker *w, struct ma_timer *t, uint64_t deadline,
		  void (*fire)(struct ma_timer *))
{
	t->deadline = deadline;
	t->fire = fire;
	t->child = t->next = t->prev = NULL;
	t->owner = w;
	ma_spin_lock(&w->timer_lock);
	t->armed = 1;
	w->timer_root = ma_heap_meld(w->timer_root, t);
	ma_timer_publish_next(w);
	ma_spin_unlock(&w->timer_lock);
}

void ma_timer_cancel(struct ma_timer *t)
{
	/* Always take the lock, even if the timer already fired: its callback runs under
	 * it, so holding it proves the callback is over. */
	struct ma_worker *w = t->owner;
	ma_spin_lock(&w->timer_lock);
	if (t->armed) {
		ma_heap_remove(w, t);
		ma_timer_publish_next(w);
	}
	ma_spin_unlock(&w->timer_lock);
}

static void ma_timers_fire(struct ma_worker *w, uint64_t now)
{
	struct ma_timer *t;
	while ((t = w->timer_root) && t->deadline <= now) {
		ma_heap_remove(w, t);
		t->fire(t);
	}
	ma_timer_publish_next(w);
}

void ma_timers_run(struct ma_worker *w, uint64_t now)
{
	ma_spin_lock(&w->timer_lock);
	ma_timers_fire(w, now);
	ma_spin_unlock(&w->timer_lock);
	/* Bubble regeneration cannot run in a callback (it takes holder locks): its timers
	 * leave the work for here. */
	if (ma_unlikely(atomic_load_explicit(&ma_bubble_work_pending, memory_order_relaxed)))
		ma_bubble_work();
}

void ma_timers_steal(uint64_t now)
{
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		struct ma_worker *w = &ma_rt.workers[v];
		if (atomic_load_explicit(&w->timer_next, memory_order_relaxed) > now)
			continue;
		/* Never wait for a busy owner: it is about to do the job itself. */
		if (atomic_exchange_explicit(&w->timer_lock.locked, 1, memory_order_acquire))
			continue;
		ma_timers_fire(w, now);
		ma_spin_unlock(&w->timer_lock);
	}
	if (ma_unlikely(atomic_load_explicit(&ma_bubble_work_pending, memory_order_relaxed)))
		ma_bubble_work();
}
