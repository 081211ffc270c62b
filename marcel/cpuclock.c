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
 *
 * Going back must not wait for the helper's next look: a burst of fine-grained work after
 * a quiet stretch (a nested recursion after a sequential phase) would read the clock twice
 * per seed for up to MA_CPU_CLOCK_SLOW_NS. A sum of 2^17 numbers by nested seeds (bench_nested)
 * lasts less than that, and ran at 66 ns per spawn instead of 36. So each worker counts its
 * own precise reads, and the one that makes MA_CPU_CLOCK_FEW of them within a period wakes
 * the helper, which goes back to the word at once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include "ma_sync.h"

/* How often the helper looks at the switch counts meanwhile. */
#define MA_CPU_CLOCK_SLOW_NS 20000000u

_Atomic uint64_t ma_cpu_clock;

static struct {
	pthread_t thread;
	int started;
	atomic_int stop;
	atomic_uint wake;         /* futex word: bumped to wake the helper early */
	atomic_int hurry;         /* a worker found switches frequent (ma_cpu_clock_precise) */
} ma_cc;

/* Switches and inline seed runs so far, over all VPs (each counter is its worker's). */
static unsigned long ma_cpu_clock_events(void)
{
	unsigned long n = 0;
	for (unsigned v = 0; v < ma_rt.nb_vps; v++)
		n += atomic_load_explicit(&ma_rt.workers[v].nr_switches, memory_order_relaxed) +
		     atomic_load_explicit(&ma_rt.workers[v].nr_seed_runs, memory_order_relaxed);
	return n;
}

static void *ma_cpu_clock_main(void *arg)
{
	(void)arg;
	uint64_t next = ma_clock_ns();
	unsigned long seen = ma_cpu_clock_events();
	int coarse = 1;
	for (;;) {
		/* Read before the stop flag: a stop or hurry after it makes the wait return. */
		unsigned seq = atomic_load(&ma_cc.wake);
		if (atomic_load(&ma_cc.stop))
			break;
		unsigned long now_seen = ma_cpu_clock_events(), events = now_seen - seen;
		seen = now_seen;
		uint64_t now = ma_clock_ns();
		if (atomic_exchange(&ma_cc.hurry, 0)) {
			/* Woken before the look was due: its period starts now. */
			coarse = 1;
			next = now;
		} else if (coarse) {
			coarse = events >= MA_CPU_CLOCK_FEW;
		} else {
			coarse = events >= (unsigned long)MA_CPU_CLOCK_FEW * (MA_CPU_CLOCK_SLOW_NS / MA_CPU_CLOCK_PERIOD_NS);
		}
		atomic_store_explicit(&ma_cpu_clock, coarse ? now : MA_CPU_CLOCK_PRECISE, memory_order_relaxed);
		next += coarse ? MA_CPU_CLOCK_PERIOD_NS : MA_CPU_CLOCK_SLOW_NS;
		/* Late by more than a period (the helper was not scheduled): start afresh. */
		if (next < now)
			next = now + MA_CPU_CLOCK_PERIOD_NS;
		ma_futex_wait_until(&ma_cc.wake, seq, next);
	}
	return NULL;
}

uint64_t ma_cpu_clock_precise(struct ma_worker *w)
{
	uint64_t now = ma_clock_ns();
	if (now - w->precise_since >= MA_CPU_CLOCK_PERIOD_NS) {
		w->precise_since = now;
		w->precise_reads = 1;
	} else if (++w->precise_reads == MA_CPU_CLOCK_FEW && !atomic_load_explicit(&ma_cc.hurry, memory_order_relaxed) &&
		   !atomic_exchange(&ma_cc.hurry, 1)) {
		/* The word comes back now: the helper, woken while every processor runs a VP,
		 * may get one only at the end of a kernel time slice, milliseconds later (a
		 * sum of 2^17 by nested seeds still read the clock 60 000 times meanwhile).
		 * Until it runs the word stands still, and the run then in progress is charged
		 * the wait, as with any late update. One wake-up per request: the others see
		 * the flag until the helper takes it. */
		atomic_store_explicit(&ma_cpu_clock, now, memory_order_relaxed);
		atomic_fetch_add(&ma_cc.wake, 1);
		ma_futex_wake(&ma_cc.wake, 1);
	}
	return now;
}

int ma_cpu_clock_start(void)
{
	atomic_store(&ma_cpu_clock, ma_clock_ns());
	atomic_store(&ma_cc.stop, 0);
	atomic_store(&ma_cc.hurry, 0);
	atomic_store(&ma_cc.wake, 0);
	int e = ma_service_thread_create(&ma_cc.thread, 0, ma_cpu_clock_main, NULL);
	ma_cc.started = !e;
	return e;
}

void ma_cpu_clock_stop(void)
{
	if (!ma_cc.started)
		return;
	atomic_store(&ma_cc.stop, 1);
	atomic_fetch_add(&ma_cc.wake, 1);
	ma_futex_wake(&ma_cc.wake, 1);
	pthread_join(ma_cc.thread, NULL);
	ma_cc.started = 0;
}
