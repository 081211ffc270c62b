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

atomic_int ma_bubble_work_pending;
static ma_spinlock_t ma_regen_lock;
static struct ma_bubble *ma_regen_list;

static void ma_regen_fire(struct ma_timer *t)
{
	struct ma_bubble *b = ma_container_of(t, struct ma_bubble, regen_timer);
	ma_spin_lock(&ma_regen_lock);
	if (!b->regen_queued) {
		b->regen_queued = 1;
		b->regen_next = ma_regen_list;
		ma_regen_list = b;
	}
	ma_spin_unlock(&ma_regen_lock);
	atomic_store(&ma_bubble_work_pending, 1);
}

void ma_bubble_regen_arm(struct ma_worker *w, struct ma_bubble *b)
{
	unsigned long us = b->timeslice_us;
	if (!us && !b->implicit)
		us = ma_strategy()->default_timeslice_us;
	if (!us || atomic_load(&b->regen_armed))
		return;
	/* Arming and cancelling are serialised per bubble, so a cancel never runs between
	 * the flag and the timer's insertion (the timer would then outlive the cancel). */
	ma_spin_lock(&b->regen_lock);
	if (!b->regen_closed && !atomic_load(&b->regen_armed)) {
		b->regen_timer.owner = w;
		atomic_store(&b->regen_armed, 1);
		ma_timer_arm(w, &b->regen_timer, ma_clock_ns() + (uint64_t)us * 1000, ma_regen_fire);
	}
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
		for (struct ma_bubble **p = &ma_regen_list; *p; p = &(*p)->regen_next)
			if (*p == b) {
				*p = b->regen_next;
				break;
			}
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

void ma_bubble_regen_close(struct ma_bubble *b)
{
	ma_spin_lock(&b->regen_lock);
	b->regen_closed = 1;
	ma_regen_cancel_locked(b);
	ma_spin_unlock(&b->regen_lock);
}

int ma_bubble_regenerate(struct ma_bubble *b)
{
	if (atomic_load(&b->status) != MA_BUBBLE_OPENED)
		return 0;
	ma_bubble_gather(b);
	return 0;
}

void ma_bubble_work(void)
{
	if (!atomic_exchange(&ma_bubble_work_pending, 0))
		return;
	for (;;) {
		ma_spin_lock(&ma_regen_lock);
		struct ma_bubble *b = ma_regen_list;
		if (b) {
			ma_regen_list = b->regen_next;
			b->regen_queued = 0;
			atomic_store(&b->regen_armed, 0);
			/* Taken before a cancel can unlink it: keeps it while we work on it. */
			ma_bubble_ref(b);
		}
		ma_spin_unlock(&ma_regen_lock);
		if (!b)
			return;
		const struct ma_strategy *s = ma_strategy();
		if (!s)
			; /* the runtime is stopping: nothing is placed any more */
		else if (s->tick)
			s->tick(b);
		else
			ma_bubble_regenerate(b);
		ma_bubble_unref(b);
	}
}
