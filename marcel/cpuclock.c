/*
 * The clock CPU time is charged with. A thread's CPU time is the sum, over its runs, of
 * the clock at switch-out minus the clock at switch-in; the switch is the hottest path
 * of the library, and the cycle counter costs it 15 ns on a VM (a third of a yield). So
 * the switch reads a coarse clock instead: a word a helper thread sets to CLOCK_MONOTONIC
 * every MA_CPU_CLOCK_PERIOD_NS. A run then gets one period for each update that fell
 * inside it, and an update falls inside a run of length L with probability L / period:
 * the charge is unbiased, exact over many runs, and coarse for one short run (0 or one
 * period). Statistics are read over whole bubbles and long stretches, where that is what
 * they need.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include "ma_sync.h"

/* One update per millisecond: finer than the kernel's tick, and the helper's wake-ups
 * cost less than 0.1% of one processor. */
#define MA_CPU_CLOCK_PERIOD_NS 1000000u

_Atomic uint64_t ma_cpu_clock;

static struct {
	pthread_t thread;
	int started;
	atomic_int stop;
	atomic_uint wake;         /* futex word the stop wakes the helper with */
} ma_cc;

static void *ma_cpu_clock_main(void *arg)
{
	(void)arg;
	uint64_t next = ma_clock_ns();
	while (!atomic_load_explicit(&ma_cc.stop, memory_order_relaxed)) {
		atomic_store_explicit(&ma_cpu_clock, ma_clock_ns(), memory_order_relaxed);
		next += MA_CPU_CLOCK_PERIOD_NS;
		ma_futex_wait_until(&ma_cc.wake, 0, next);
	}
	return NULL;
}

int ma_cpu_clock_start(void)
{
	atomic_store(&ma_cpu_clock, ma_clock_ns());
	atomic_store(&ma_cc.stop, 0);
	atomic_store(&ma_cc.wake, 0);
	/* No signal for it: the application's handlers and our preemption signal belong to
	 * the threads that run marcel threads. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int e = pthread_create(&ma_cc.thread, NULL, ma_cpu_clock_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	ma_cc.started = !e;
	return e;
}

void ma_cpu_clock_stop(void)
{
	if (!ma_cc.started)
		return;
	atomic_store(&ma_cc.stop, 1);
	atomic_store(&ma_cc.wake, 1);
	ma_futex_wake(&ma_cc.wake, 1);
	pthread_join(ma_cc.thread, NULL);
	ma_cc.started = 0;
}
