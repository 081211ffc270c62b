/*
 * Regeneration: when a burst bubble's time slice expires it closes (its queued threads
 * are pulled back, its running ones asked to come back at their next preemption point),
 * and once every thread is back it is handed to the strategy again, which bursts it
 * where the load now calls for it.
 *
 * The timer callback runs under a worker's timer lock, where taking bubble and queue
 * locks is not allowed: it only puts the bubble on a due list, which workers drain at
 * their next scheduling point (ma_bubble_work).
 */
#include "ma_strategy.h"

static ma_spinlock_t ma_regen_lock;
/* Doubly linked: with thousands of nested burst bubbles due at once, a cancel that
 * searched the list made every destroy linear in it. */
static struct ma_list ma_regen_list = { &ma_regen_list, &ma_regen_list };

static void ma_regen_fire(struct ma_timer *t)
{
	struct ma_bubble *b = ma_container_of(t, struct ma_bubble, regen_timer);
	ma_spin_lock(&ma_regen_lock);
	if (!b->regen_queued) {
		b->regen_queued = 1;
		ma_list_add_tail(&ma_regen_list, &b->regen_node);
	}
	ma_spin_unlock(&ma_regen_lock);
	atomic_store(&ma_rt.hook_work, 1);
}

/* Whether an opened ancestor of b regenerates on the strategy's default slice: its
 * gather closes b too, so b needs no timer of its own. Read without locks (a stale
 * answer costs one timer too many, or one slice late), inside an estimate so that an
 * ancestor destroyed meanwhile is not reused under us (ma_estimates_quiesce). */
static int ma_regen_covered(struct ma_bubble *b)
{
	int covered = 0;
	struct ma_worker *w = ma_estimate_begin();
	for (struct ma_bubble *p = ma_entity_parent(&b->e); p && p != ma_root_bubble && !covered;
	     p = ma_entity_parent(&p->e))
		covered = !p->timeslice_us && atomic_load_explicit(&p->regen_armed, memory_order_relaxed) &&
			  atomic_load_explicit(&p->status, memory_order_relaxed) == MA_BUBBLE_OPENED;
	ma_estimate_end(w);
	return covered;
}

void ma_bubble_regen_arm(struct ma_worker *w, struct ma_bubble *b)
{
	unsigned long us = b->timeslice_us;
	if (!us && !b->implicit)
		us = ma_strategy()->default_timeslice_us;
	if (!us || atomic_load(&b->regen_armed))
		return;
	/* A recursion bursting a bubble per level would otherwise arm thousands of timers
	 * due together, each gathering a part of what the outermost one gathers. */
	if (!b->timeslice_us && ma_regen_covered(b))
		return;
	/* Arming and cancelling are serialised per bubble (regen_lock), so a cancel never
	 * runs between the flag and the timer's insertion (the timer would then outlive the
	 * cancel). Not under the bubble's lock: a timer callback waking a thread takes the
	 * lock of the bubble caching it while it holds its timer lock, which arming takes.
	 * The flag is set under the bubble's lock, where marcel_bubble_destroy closes the
	 * bubble and reads the flag without taking regen_lock: a destroy that comes first
	 * stops the arming, one that comes after sees the flag and cancels (under
	 * regen_lock, so after the insertion). */
	ma_spin_lock(&b->regen_lock);
	ma_spin_lock(&b->hold.lock);
	int arm = !b->regen_closed && !atomic_load(&b->regen_armed);
	if (arm) {
		b->regen_timer.owner = w;
		atomic_store(&b->regen_armed, 1);
	}
	ma_spin_unlock(&b->hold.lock);
	if (arm)
		ma_timer_arm(w, &b->regen_timer, ma_clock_ns() + (uint64_t)us * 1000, ma_regen_fire);
	ma_spin_unlock(&b->regen_lock);
}

static void ma_regen_cancel_locked(struct ma_bubble *b)
{
	if (!atomic_exchange(&b->regen_armed, 0))
		return;
	/* Returns once the callback cannot run any more (timer.c). */
	ma_timer_cancel(&b->regen_timer);
	ma_spin_lock(&ma_regen_lock);
	if (b->regen_queued) {
		ma_list_del(&b->regen_node);
		b->regen_queued = 0;
	}
	ma_spin_unlock(&ma_regen_lock);
}

void ma_bubble_regen_cancel(struct ma_bubble *b)
{
	ma_spin_lock(&b->regen_lock);
	ma_regen_cancel_locked(b);
	ma_spin_unlock(&b->regen_lock);
}

int ma_bubble_regen_close_locked(struct ma_bubble *b)
{
	b->regen_closed = 1;
	return atomic_load_explicit(&b->regen_armed, memory_order_relaxed) != 0;
}

void ma_bubble_regen_close(struct ma_bubble *b)
{
	ma_spin_lock(&b->hold.lock);
	int armed = ma_bubble_regen_close_locked(b);
	ma_spin_unlock(&b->hold.lock);
	if (armed)
		ma_bubble_regen_cancel(b);
}

int ma_bubble_regenerate(struct ma_bubble *b)
{
	if (atomic_load(&b->status) != MA_BUBBLE_OPENED)
		return 0;
	ma_bubble_gather(b);
	return 0;
}

/* A regeneration hands a burst bubble's threads back to the strategy, which places them
 * again by the load then. While no VP is idle there is nothing to move work to, and
 * gathering then bursting again costs the whole subtree at every level it bursts
 * through: with a deep recursion of live threads (examples/sumtime without seeds, 40000
 * threads) that is more than the 20 ms slice itself, and the program crawled (43 s
 * instead of 0.3 s). The strategy's default slice is therefore only acted upon when some
 * VP is idle (anywhere: the bubble may burst higher up next time) while work waits on a
 * queue; a slice the application set (marcel_bubble_settimeslice) always is. An idle VP
 * alone is not enough: the stripes of a stencil leave their VPs idle at every barrier,
 * with nothing waiting anywhere, and regenerating then only stops them to put them back
 * (conduction on 2 VPs lost a few percent to it). */
static int ma_regen_wanted(struct ma_bubble *b)
{
	if (b->timeslice_us)
		return 1;
	/* Every VP counts itself idle in each queue of its path, the machine's included. */
	struct ma_runqueue *top = &ma_rt.rqs[0];
	if (!atomic_load_explicit(&top->nr_sleeping, memory_order_relaxed) &&
	    !atomic_load_explicit(&top->nr_spinning, memory_order_relaxed))
		return 0;
	/* One read per topology item and VP, once per slice. A closed bubble counts once. */
	for (unsigned i = 0; i < ma_rt.topo.nb_levels; i++)
		if (ma_read_once(&ma_rt.rqs[i].nr_ready))
			return 1;
	for (unsigned v = 0; v < ma_rt.nb_vps; v++)
		if (ma_worker_nr_ready(&ma_rt.workers[v]))
			return 1;
	return 0;
}

void ma_bubble_regen_due(struct ma_bubble *b)
{
	if (ma_regen_wanted(b))
		ma_bubble_regenerate(b);
	else if (ma_worker_self() && atomic_load(&b->status) == MA_BUBBLE_OPENED)
		ma_bubble_regen_arm(ma_worker_self(), b); /* look again next slice */
}

void ma_bubble_work(void)
{
	if (!atomic_exchange(&ma_rt.hook_work, 0))
		return;
	for (;;) {
		ma_spin_lock(&ma_regen_lock);
		struct ma_bubble *b = NULL;
		if (!ma_list_empty(&ma_regen_list)) {
			b = ma_container_of(ma_regen_list.next, struct ma_bubble, regen_node);
			ma_list_del(&b->regen_node);
			b->regen_queued = 0;
			atomic_store(&b->regen_armed, 0);
			/* Taken before a cancel can unlink it: keeps it while we work on it. */
			ma_bubble_ref(b);
		}
		ma_spin_unlock(&ma_regen_lock);
		if (!b)
			return;
		ma_strategy_tick(b);
		ma_bubble_unref(b);
	}
}
