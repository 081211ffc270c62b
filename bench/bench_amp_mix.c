/*
 * Two applications side by side, each a bubble of marcel_root_bubble, for bench/amp-cgroup:
 * a single-threaded program (ST) and a parallel one with serial phases (PS: its master
 * computes alone while the others wait at a barrier, then all compute their share). On
 * this 2-core machine, one core is made slow by capping its worker's kernel thread with
 * the cgroup CPU controller (bench/amp-cgroup does it), and MARCEL_TOPOLOGY's cpukinds say
 * which one is fast. Prints each application's completion time and their geometric mean
 * (the 004 seed's measure).
 *
 * Usage: bench_amp_mix [--work MS] [--threads N] [--go FILE]
 *   --work MS   the single program's computation, in milliseconds of a full core (1000)
 *   --threads N the parallel application's threads (4: more than the fast cores + 1, so
 *               that pa counts it highly parallel)
 *   --go FILE   wait until FILE exists before starting (the script caps a worker first)
 * The parallel application does as much work in all, in 20 iterations with a serial
 * phase of a tenth of each.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <marcel.h>

#define ITERS 20
#define PS_MAX 64

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Units of computation calibrated before the run: about a microsecond each alone. */
static unsigned long spins_per_us;
static volatile unsigned long sink;

static void compute_us(double us)
{
	unsigned long n = (unsigned long)(us * (double)spins_per_us);
	unsigned long x = 0;
	for (unsigned long i = 0; i < n; i++) {
		x += i * i;
		if ((i & 0xfffff) == 0)
			marcel_yield(); /* a safe point: moves take effect here */
	}
	sink = x;
}

static void calibrate(void)
{
	unsigned long n = 1;
	for (;;) {
		double t0 = now();
		unsigned long x = 0;
		for (unsigned long i = 0; i < n; i++)
			x += i * i;
		sink = x;
		double dt = now() - t0;
		if (dt > 0.05) {
			spins_per_us = (unsigned long)((double)n / (dt * 1e6));
			return;
		}
		n *= 2;
	}
}

static double work_ms = 1000, start, end_st, end_ps;
static int ps_threads = 4;
static marcel_barrier_t bar;

static any_t single(any_t arg)
{
	(void)arg;
	compute_us(work_ms * 1000);
	end_st = now();
	return NULL;
}

static any_t parallel(any_t arg)
{
	int master = arg != NULL;
	double per_iter = work_ms * 1000 / ITERS;
	for (int it = 0; it < ITERS; it++) {
		if (master)
			compute_us(per_iter * 0.1);
		marcel_barrier_wait(&bar);
		compute_us(per_iter * 0.9 / ps_threads);
		marcel_barrier_wait(&bar);
	}
	if (master)
		end_ps = now();
	return NULL;
}

int main(int argc, char **argv)
{
	if (marcel_init(&argc, argv))
		return 1;
	const char *go = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--work") && i + 1 < argc) {
			work_ms = atof(argv[++i]);
		} else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
			ps_threads = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--go") && i + 1 < argc) {
			go = argv[++i];
		} else {
			fprintf(stderr, "usage: %s [--work MS] [--threads N] [--go FILE]\n", argv[0]);
			return 2;
		}
	}
	if (!(work_ms > 0)) {
		fprintf(stderr, "bench_amp_mix: --work must be positive milliseconds\n");
		return 2;
	}
	if (ps_threads < 1 || ps_threads > PS_MAX) {
		fprintf(stderr, "bench_amp_mix: --threads must be from 1 to %d\n", PS_MAX);
		return 2;
	}
	calibrate();
	while (go && access(go, F_OK))
		marcel_usleep(1000);
	/* main only waits: not a master competing for the fast core. */
	marcel_task_setmaster(marcel_self(), 0);
	marcel_barrier_init(&bar, NULL, (unsigned)ps_threads);
	marcel_bubble_t st, ps;
	marcel_bubble_init(&st);
	marcel_bubble_init(&ps);
	marcel_bubble_insertbubble(&marcel_root_bubble, &st);
	marcel_bubble_insertbubble(&marcel_root_bubble, &ps);
	marcel_t t[1 + PS_MAX];
	marcel_attr_t a;
	marcel_attr_init(&a);
	start = now();
	marcel_attr_setinitbubble(&a, &st);
	marcel_create(&t[0], &a, single, NULL);
	marcel_attr_setinitbubble(&a, &ps);
	for (int i = 0; i < ps_threads; i++)
		marcel_create(&t[1 + i], &a, parallel, i ? NULL : (any_t)1);
	marcel_wake_up_bubble(&st);
	marcel_wake_up_bubble(&ps);
	marcel_bubble_sched_begin();
	for (int i = 0; i < 1 + ps_threads; i++)
		marcel_join(t[i], NULL);
	double a1 = end_st - start, a2 = end_ps - start;
	printf("RESULT %s st %.4f ps %.4f gmean %.4f\n", marcel_bubble_sched_name(marcel_bubble_current_sched()), a1, a2, sqrt(a1 * a2));
	marcel_barrier_destroy(&bar);
	marcel_end();
	return 0;
}
