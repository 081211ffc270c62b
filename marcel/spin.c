/*
 * Spin locks and marcel_once.
 *
 * A spin lock waiter keeps its worker, but a holder may be a thread that was switched
 * out on this very VP (it blocked or yielded inside its critical section): after a short
 * poll the waiter yields so that such a holder gets to finish.
 */
#include "ma_sync.h"

#define MA_SPIN_POLL 128

static inline atomic_int *ma_spinword(marcel_spinlock_t *l)
{
	return (atomic_int *)&l->__lock;
}

int marcel_spin_init(marcel_spinlock_t *l, int pshared)
{
	if (!l)
		return EINVAL;
	int e = MA_CHECK_PSHARED(pshared);
	if (e)
		return e;
	l->__lock = 0;
	l->__owner = NULL;
	return 0;
}

int marcel_spin_destroy(marcel_spinlock_t *l)
{
	if (!l)
		return EINVAL;
	return atomic_load(ma_spinword(l)) ? EBUSY : 0;
}

int marcel_spin_lock(marcel_spinlock_t *l)
{
	if (!l)
		return EINVAL;
	void *self = ma_owner_self();
	if (ma_read_once(&l->__owner) == self)
		return EDEADLK;
	unsigned polls = 0;
	while (atomic_exchange_explicit(ma_spinword(l), 1, memory_order_acquire)) {
		while (atomic_load_explicit(ma_spinword(l), memory_order_relaxed)) {
			if (++polls < MA_SPIN_POLL) {
				ma_cpu_relax();
				continue;
			}
			polls = 0;
			ma_poll_yield();
		}
	}
	ma_write_once(&l->__owner, self);
	return 0;
}

int marcel_spin_trylock(marcel_spinlock_t *l)
{
	if (!l)
		return EINVAL;
	if (atomic_exchange_explicit(ma_spinword(l), 1, memory_order_acquire))
		return EBUSY;
	ma_write_once(&l->__owner, ma_owner_self());
	return 0;
}

int marcel_spin_unlock(marcel_spinlock_t *l)
{
	if (!l)
		return EINVAL;
	if (ma_read_once(&l->__owner) != ma_owner_self() ||
	    !atomic_load_explicit(ma_spinword(l), memory_order_relaxed))
		return EPERM;
	ma_write_once(&l->__owner, NULL);
	atomic_store_explicit(ma_spinword(l), 0, memory_order_release);
	return 0;
}

/* ---- once ---- */

enum { MA_ONCE_NEW, MA_ONCE_RUNNING, MA_ONCE_DONE };

int marcel_once(marcel_once_t *once, void (*init)(void))
{
	if (!once || !init)
		return EINVAL;
	atomic_int *st = (atomic_int *)&once->__state;
	if (ma_likely(atomic_load_explicit(st, memory_order_acquire) == MA_ONCE_DONE))
		return 0;
	int s = MA_ONCE_NEW;
	if (atomic_compare_exchange_strong(st, &s, MA_ONCE_RUNNING)) {
		init();
		atomic_store_explicit(st, MA_ONCE_DONE, memory_order_release);
		ma_fwake(st, ~0u);
		return 0;
	}
	while (atomic_load_explicit(st, memory_order_acquire) == MA_ONCE_RUNNING)
		ma_fwait_u32(st, MA_ONCE_RUNNING, MA_NO_DEADLINE);
	return 0;
}
