/*
 * Per-worker timers: a pairing heap per worker, under the worker's timer lock.
 *
 * A pairing heap is intrusive (the links live in the sleeper's own struct ma_timer, on
 * its stack), so arming never allocates and cannot fail, and 10k sleepers cost nothing
 * but their stacks. Insert is O(1), removing the first or any timer O(log n) amortised.
 *
 * Callbacks run with the owner's lock held; ma_timer_cancel takes the same lock, which is
 * what lets a waiter know that a racing callback has finished with its timer.
 *
 * A worker fires its own timers whenever it schedules, and idle workers fire everybody's
 * overdue ones while they poll. A worker kept busy by a thread that never calls marcel
 * fires nothing, so one idle worker asleep in the kernel, the *watcher*, also sleeps no
 * later than everybody's earliest deadline (plus MA_TIMER_WATCH_SLACK_NS, to leave the
 * timers of owners that are about to schedule to them). Its wake-up time is published in
 * ma_rt.timer_watch; a timer armed earlier than that kicks the watcher (or, when there is
 * none, any sleeping worker, which becomes it). Both sides publish and then read with
 * sequentially consistent accesses, so either the arming worker sees the watcher's time
 * (and kicks it) or the watcher's scan sees the new timer.
 */
#include "ma_sync.h"
#include "ma_hooks.h"

/* How long past its deadline a busy worker's timer may stay for the watcher. */
#define MA_TIMER_WATCH_SLACK_NS 100000u

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
	atomic_store_explicit(&w->attn.timers, w->timer_root != NULL, memory_order_relaxed);
}

/* Wakes a sleeping idle worker other than self, if there is one: it takes the watch. */
static void ma_timer_watch_call(const struct ma_worker *self)
{
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		struct ma_worker *o = &ma_rt.workers[v];
		if (o != self && atomic_load_explicit(&o->state, memory_order_relaxed) == MA_WORKER_SLEEPING &&
		    !atomic_load_explicit(&o->attn.disabled, memory_order_relaxed)) {
			ma_worker_kick(o);
			return;
		}
	}
}

/* w's earliest deadline just became `deadline`: make sure a sleeping idle worker, if any,
 * wakes by then plus the slack. */
static void ma_timer_watch_check(struct ma_worker *w, uint64_t deadline)
{
	/* A sequentially consistent read-modify-write of what was just published (not a
	 * fence, which ThreadSanitizer does not model): the loads below come after it. */
	atomic_fetch_add(&w->timer_next, 0);
	int v = atomic_load(&ma_rt.timer_watcher);
	if (v < 0)
		ma_timer_watch_call(w);
	else if (deadline + MA_TIMER_WATCH_SLACK_NS < atomic_load(&ma_rt.timer_watch))
		ma_worker_kick(&ma_rt.workers[v]);
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
	int earliest = w->timer_root == t;
	ma_timer_publish_next(w);
	ma_spin_unlock(&w->timer_lock);
	/* A later timer changes nothing: whoever watches w's timers wakes earlier anyway. */
	if (earliest && ma_rt.nb_vps > 1)
		ma_timer_watch_check(w, deadline);
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
	ma_hook_tick_pending();
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
	ma_hook_tick_pending();
}

/* Everybody's earliest deadline plus the slack (MA_NO_DEADLINE if none). */
static uint64_t ma_timers_earliest(void)
{
	uint64_t d = MA_NO_DEADLINE;
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		uint64_t n = atomic_load(&ma_rt.workers[v].timer_next);
		if (n < d)
			d = n;
	}
	return d >= MA_NO_DEADLINE - MA_TIMER_WATCH_SLACK_NS ? MA_NO_DEADLINE : d + MA_TIMER_WATCH_SLACK_NS;
}

int ma_timer_watch_take(struct ma_worker *w)
{
	int none = -1;
	return atomic_compare_exchange_strong(&ma_rt.timer_watcher, &none, (int)w->vp);
}

uint64_t ma_timer_watch_publish(void)
{
	/* Scan, publish, scan again: a timer armed during the first scan that read the old
	 * watch (and so kicked nobody) is seen by the second. */
	for (;;) {
		uint64_t d = ma_timers_earliest();
		atomic_store(&ma_rt.timer_watch, d);
		if (ma_timers_earliest() >= d)
			return d;
	}
}

void ma_timer_watch_release(struct ma_worker *w)
{
	atomic_store(&ma_rt.timer_watch, MA_NO_DEADLINE);
	atomic_store(&ma_rt.timer_watcher, -1);
	/* Either this scan sees a timer armed meanwhile, or its arming worker saw no watcher
	 * and called a sleeper itself. */
	if (ma_timers_earliest() != MA_NO_DEADLINE)
		ma_timer_watch_call(w);
}
