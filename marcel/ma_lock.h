/* Spin locks for holders, and the futex calls idle workers and foreign waiters sleep on. */
#ifndef MA_LOCK_H
#define MA_LOCK_H

#include <errno.h>
#include <sched.h>
#include <time.h>
#include <stdatomic.h>
#include <stdint.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "ma_arch.h"
#include "ma_atomic.h"

/*
 * One round of a busy wait. After a few pause instructions it gives the processor away:
 * the thread we wait for may be a preempted kernel thread (more workers than processors
 * on fake topologies, or a loaded machine), and spinning would only delay it.
 */
static inline void ma_spin_backoff(unsigned *rounds)
{
	if (++*rounds < 64)
		ma_cpu_relax();
	else
		sched_yield();
}

typedef struct {
	atomic_int locked;
} ma_spinlock_t;

static inline void ma_spin_init(ma_spinlock_t *l)
{
	atomic_init(&l->locked, 0);
}

static inline void ma_spin_lock(ma_spinlock_t *l)
{
	/* Test-and-test-and-set: waiters spin on a shared line, not on the bus. */
	unsigned rounds = 0;
	while (atomic_exchange_explicit(&l->locked, 1, memory_order_acquire))
		while (atomic_load_explicit(&l->locked, memory_order_relaxed))
			ma_spin_backoff(&rounds);
}

/* 1 if taken. For the one place that meets a lock out of order (find_next holding a run
 * queue meets a bubble): on failure it backs off and starts again in order. */
static inline int ma_spin_trylock(ma_spinlock_t *l)
{
	return !atomic_load_explicit(&l->locked, memory_order_relaxed) &&
	       !atomic_exchange_explicit(&l->locked, 1, memory_order_acquire);
}

static inline void ma_spin_unlock(ma_spinlock_t *l)
{
	atomic_store_explicit(&l->locked, 0, memory_order_release);
}

static inline void ma_futex_wait(atomic_uint *addr, unsigned expected)
{
	syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

/* Like ma_futex_wait, giving up at deadline (CLOCK_MONOTONIC ns; UINT64_MAX: never).
 * Returns ETIMEDOUT once the deadline passed, else 0 (woken, value changed, or signal). */
static inline int ma_futex_wait_until(atomic_uint *addr, unsigned expected, uint64_t deadline)
{
	if (deadline == UINT64_MAX) {
		ma_futex_wait(addr, expected);
		return 0;
	}
	struct timespec ts = { (time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u) };
	/* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC time. */
	if (syscall(SYS_futex, addr, FUTEX_WAIT_BITSET_PRIVATE, expected, &ts, NULL,
		    FUTEX_BITSET_MATCH_ANY) == -1 && errno == ETIMEDOUT)
		return ETIMEDOUT;
	return 0;
}

static inline void ma_futex_wake(atomic_uint *addr, int n)
{
	syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

#endif
