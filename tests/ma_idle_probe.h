/*
 * How long idle workers poll, seen from outside: the CPU time a process burns while its
 * main thread sleeps 40 times 5 ms. Each time, the VP running main (and any other idle
 * one) polls for its idle poll, up to the 5 ms, then sleeps until main's timer: about 160
 * ms on the 2-core VM with the 2 ms poll, 4-8 ms with 50 us, more when pollers never
 * sleep. Used by check_options and by check_mpi's helper; the callers compare runs with
 * each other, not with fixed figures, since load and sanitizers move both.
 */
#ifndef MA_IDLE_PROBE_H
#define MA_IDLE_PROBE_H

#include <time.h>
#include <marcel.h>

static inline double ma_process_cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Call from a marcel thread; returns the CPU time (ms) of the 40 sleeps. */
static inline double ma_idle_probe_ms(void)
{
	marcel_usleep(20000);  /* start-up over */
	double t0 = ma_process_cpu_ms();
	for (int i = 0; i < 40; i++)
		marcel_usleep(5000);
	return ma_process_cpu_ms() - t0;
}

#endif
