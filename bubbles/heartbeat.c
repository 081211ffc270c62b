/*
 * The strategy's heartbeat (ma_strategy.heartbeat_us): a private bubble, never inserted
 * anywhere nor woken, whose regeneration timer (regen.c) brings ma_strategy_tick back
 * with it one period after it was armed. There is one for the runtime, which the strategy
 * in use owns: a switch gives it the new strategy's period, and a beat armed by the old
 * one that comes after the switch meets the new one (one tick it did not ask for).
 *
 * The bubble is set up at the first start after marcel_init and never destroyed: its
 * storage is static, and a worker may still be on its way into a tick with it while
 * the heartbeat stops.
 */
#include "ma_strategy.h"

static marcel_bubble_t ma_hb_storage;
static struct ma_bubble *_Atomic ma_hb;
/* Serialises arming and stopping: regen.c marks a bubble armed before its timer is, and a
 * worker may still be in a hook of the strategy whose heartbeat is stopping. Static (zero:
 * unlocked) and never set up again, for the same reason. */
static ma_spinlock_t ma_hb_lock;
static int ma_hb_on;

int ma_heartbeat_prepare(void)
{
	if (atomic_load_explicit(&ma_hb, memory_order_relaxed))
		return 0;
	int e = marcel_bubble_init(&ma_hb_storage);
	if (!e)
		atomic_store_explicit(&ma_hb, ma_bubble_of(&ma_hb_storage), memory_order_release);
	return e;
}

void ma_heartbeat_start(unsigned long period_us)
{
	ma_heartbeat_stop();
	struct ma_bubble *b = atomic_load_explicit(&ma_hb, memory_order_relaxed);
	if (!period_us || !b)
		return;
	ma_spin_lock(&ma_hb_lock);
	b->timeslice_us = period_us;
	ma_hb_on = 1;
	ma_spin_unlock(&ma_hb_lock);
}

void ma_heartbeat_arm(void)
{
	struct ma_worker *w = ma_worker_self();
	/* Timers live on a worker's heap. */
	if (!w)
		return;
	ma_spin_lock(&ma_hb_lock);
	if (ma_hb_on)
		ma_bubble_regen_arm(w, atomic_load_explicit(&ma_hb, memory_order_relaxed));
	ma_spin_unlock(&ma_hb_lock);
}

void ma_heartbeat_stop(void)
{
	ma_spin_lock(&ma_hb_lock);
	if (ma_hb_on)
		ma_bubble_regen_cancel(atomic_load_explicit(&ma_hb, memory_order_relaxed));
	ma_hb_on = 0;
	ma_spin_unlock(&ma_hb_lock);
}

void ma_heartbeat_forget(void)
{
	ma_heartbeat_stop();
	atomic_store_explicit(&ma_hb, NULL, memory_order_relaxed);
}

int ma_heartbeat_is(const struct ma_bubble *b)
{
	return b && b == atomic_load_explicit(&ma_hb, memory_order_acquire);
}
