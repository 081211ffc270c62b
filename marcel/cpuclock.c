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
 *
 * That helper's wake-ups are not free either: when every processor runs a VP, each one
 * preempts a VP, and on this 2-core VM a stencil ran 6% slower with them (3,300 context
 * switches in 1.7 s against 130: bench/RESULTS.md). So the helper keeps the word only
 * while switches are frequent. When fewer than MA_CPU_CLOCK_FEW happen per period, the
 * word takes the value MA_CPU_CLOCK_PRECISE, switches read the clock itself (a few
 * hundred reads per second cost nothing), and the helper only looks at the switch counts
 * every MA_CPU_CLOCK_SLOW_NS, going back to the word when they rise again. A run that
 * straddles a change is charged up to one period too much or too little, once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include "ma_sync.h"

/* One update per millisecond while switches are frequent: finer than the kernel's tick. */
#define MA_CPU_CLOCK_PERIOD_NS 1000000u
/* Below this many switches per period the clock is read at each one (about 20 ns on a
 * VM: 0.2% of a processor at the threshold). */
#define MA_CPU_CLOCK_FEW 100u
/* How often the helper looks at the switch counts meanwhile. */
#define MA_CPU_CLOCK_SLOW_NS 20000000u

_Atomic uint64_t ma_cpu_clock;

static struct {
	pthread_t thread;
	int started;
	atomic_int stop;
	atomic_uint wake;         /* futex word the stop wakes the helper with */
} ma_cc;

/* Switches and inline seed runs so far, over all VPs (each counter is its worker's). */
static unsigned long ma_cpu_clock_events(void)
{
	unsigned long n = 0;
	for (unsigned v = 0; v < ma_rt.nb_vps; v++)
		n += __atomic_load_n(&ma_rt.workers[v].nr_switches, __ATOMIC_RELAXED) +
		     __atomic_load_n(&ma_rt.workers[v].nr_seed_runs, __ATOMIC_RELAXED);
	return n;
}

static void *ma_cpu_clock_main(void *arg)
{
	(void)arg;
	uint64_t next = ma_clock_ns();
	unsigned long seen = ma_cpu_clock_events();
	int coarse = 1;
	while (!atomic_load_explicit(&ma_cc.stop, memory_order_relaxed)) {
		unsigned long now_seen = ma_cpu_clock_events(), events = now_seen - seen;
		seen = now_seen;
		if (coarse)
			coarse = events >= MA_CPU_CLOCK_FEW;
		else
			coarse = events >= (unsigned long)MA_CPU_CLOCK_FEW * (MA_CPU_CLOCK_SLOW_NS / MA_CPU_CLOCK_PERIOD_NS);
		uint64_t now = ma_clock_ns();
		atomic_store_explicit(&ma_cpu_clock, coarse ? now : MA_CPU_CLOCK_PRECISE, memory_order_relaxed);
		next += coarse ? MA_CPU_CLOCK_PERIOD_NS : MA_CPU_CLOCK_SLOW_NS;
		/* Late by more than a period (the helper was not scheduled): start afresh. */
		if (next < now)
			next = now + MA_CPU_CLOCK_PERIOD_NS;
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
