/*
 * MetBench with marcel threads (metbench.h): the master is the main thread, the workers
 * are marcel threads, two barriers frame each iteration: `go` releases the workers,
 * `done` collects them. Written with marcel's own API rather than <marcel/pthread.h>:
 * there is no pthread original to port, and the benchmark is about what marcel does with
 * the workers (bubbles, strategies, hwprio), which acts on marcel handles.
 *
 * Each worker times its computation with a monotonic clock; the master times the
 * iteration, from just before it releases the workers to just after the last one
 * arrived. Per worker and iteration:
 *   compute = its computation's time,
 *   wait    = from the end of its computation to the end of the iteration (the barrier),
 * both as fractions of the iteration. What is left, from the release to the start of the
 * computation, is the time the worker waited for a processor.
 * With MARCEL_HWPRIO set, each iteration's line ends with the VPs' hardware-priority
 * levels, and the summary compares each worker's compute fraction over the first two
 * iterations (before hwprio decides) with the last half.
 * Usage: metbench [--workers N] [--loads L1,L2,...] [--unit TRIPS] [--iters T] [--swap K]
 *                 [--bubble] [--bind] [--quiet|--summary]
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <marcel.h>
#include "metbench.h"

/* What a worker tells the master about the current iteration: written before `done`,
 * read after it. A cache line each, as the workers write theirs at the same time. */
struct report {
	_Alignas(64) double start, end;
	double result;
};

static struct mb_config cfg;
static struct report *reports;
static marcel_barrier_t go, done;

/* Exits with status 1 after "metbench: what: strerror(err)" when err is not 0. */
static void check(int err, const char *what)
{
	if (err != 0) {
		fprintf(stderr, MB_PROG ": %s: %s\n", what, strerror(err));
		exit(1);
	}
}

/* Zeroed memory aligned for struct report (calloc only promises 16 bytes). */
static void *zalloc(size_t n, size_t size)
{
	void *p = aligned_alloc(64, (n * size + 63) / 64 * 64);
	if (p == NULL)
		check(ENOMEM, "allocating the per-worker records");
	return memset(p, 0, n * size);
}

static void barrier(marcel_barrier_t *b)
{
	int err = marcel_barrier_wait(b);
	check(err == MARCEL_BARRIER_SERIAL_THREAD ? 0 : err, "marcel_barrier_wait");
}

static any_t worker(any_t arg)
{
	long w = (long)arg;
	struct report *r = &reports[w];
	for (long t = 0; t < cfg.iters; t++) {
		barrier(&go);
		r->start = mb_now();
		r->result = mb_work(mb_load(&cfg, w, t) * cfg.unit, mb_seed(w, t));
		r->end = mb_now();
		barrier(&done);
	}
	return NULL;
}

/* Creates the workers; with --bubble, in one bubble woken as a whole, so that the
 * strategy places the group before any of them runs. */
static void start_workers(marcel_t *tids, marcel_bubble_t *bubble)
{
	marcel_attr_t attr;
	check(marcel_attr_init(&attr), "marcel_attr_init");
	unsigned nvp = marcel_nbvps();
	if (cfg.bubble)
		check(marcel_bubble_init(bubble), "marcel_bubble_init");
	for (long w = 0; w < cfg.workers; w++) {
		char name[32];
		snprintf(name, sizeof(name), "worker %ld", w);
		check(marcel_attr_setname(&attr, name), "marcel_attr_setname");
		if (cfg.bind)
			check(marcel_attr_setvpset(&attr, MARCEL_VPSET_VP((unsigned)(w + 1) % nvp)), "marcel_attr_setvpset");
		if (!cfg.bubble) {
			check(marcel_create(&tids[w], &attr, worker, (any_t)w), "marcel_create");
			continue;
		}
		check(marcel_create_dontsched(&tids[w], &attr, worker, (any_t)w), "marcel_create_dontsched");
		check(marcel_bubble_inserttask(bubble, tids[w]), "marcel_bubble_inserttask");
	}
	marcel_attr_destroy(&attr);
	if (cfg.bubble) {
		check(marcel_wake_up_bubble(bubble), "marcel_wake_up_bubble");
		check(marcel_bubble_sched_begin(), "marcel_bubble_sched_begin");
	}
}

/* Totals over the iterations. */
struct totals {
	double *compute, *wait;
	double time;
	uint64_t checksum;
	int hwprio;              /* MARCEL_HWPRIO is on */
	double *early, *late;    /* compute fraction summed over the first two, the last half */
	double early_n, late_n;
};

/* Runs iteration @p t from the master's side and accounts for it. */
static void iteration(long t, struct totals *tot)
{
	double t0 = mb_now();
	barrier(&go);
	barrier(&done);
	double t1 = mb_now(), span = t1 - t0;
	tot->time += span;
	if (!cfg.quiet)
		printf("iter %ld %.3f ms", t, span * 1e3);
	for (long w = 0; w < cfg.workers; w++) {
		const struct report *r = &reports[w];
		double compute = r->end - r->start, wait = t1 - r->end;
		tot->compute[w] += compute;
		tot->wait[w] += wait;
		/* In worker order, whoever finished first: the checksum depends on the results only. */
		tot->checksum = mb_fold(tot->checksum, r->result);
		if (!cfg.quiet)
			printf("  %ld:%.3f/%.3f", mb_load(&cfg, w, t), span > 0 ? compute / span : 0.0,
			       span > 0 ? wait / span : 0.0);
		if (tot->hwprio && span > 0) {
			if (t < 2)
				tot->early[w] += compute / span;
			if (t >= cfg.iters / 2)
				tot->late[w] += compute / span;
		}
	}
	tot->early_n += tot->hwprio && t < 2;
	tot->late_n += tot->hwprio && t >= cfg.iters / 2;
	if (!cfg.quiet && tot->hwprio) {
		printf("  levels");
		for (unsigned v = 0; v < marcel_nbvps(); v++) {
			int l = 0;
			marcel_hwprio_vp_level(v, &l);
			printf(" %+d", l);
		}
	}
	if (!cfg.quiet)
		putchar('\n');
}

static void print_header(void)
{
	printf(MB_PROG ": %ld worker%s, loads ", cfg.workers, cfg.workers > 1 ? "s" : "");
	for (long w = 0; w < cfg.workers; w++)
		printf("%s%ld", w ? "," : "", cfg.loads[w]);
	printf(" (1 unit = %ld trip%s), %ld iteration%s", cfg.unit, cfg.unit == 1 ? "" : "s", cfg.iters,
	       cfg.iters == 1 ? "" : "s");
	if (cfg.swap)
		printf(", loads reversed every %ld", cfg.swap);
	printf("%s\n", cfg.bubble ? ", workers in one bubble" : "");
	if (!cfg.quiet)
		printf("# iteration, its time, then per worker load:compute/wait (fractions of the iteration)\n");
}

static void print_summary(const struct totals *tot)
{
	double max = 0.0, mean = 0.0, time = tot->time > 0 ? tot->time : 1.0;
	for (long w = 0; w < cfg.workers; w++) {
		printf("worker %ld: compute %.4f s (%.1f%%), wait %.4f s (%.1f%%)", w, tot->compute[w],
		       100.0 * tot->compute[w] / time, tot->wait[w], 100.0 * tot->wait[w] / time);
		if (tot->hwprio && tot->early_n > 0 && tot->late_n > 0)
			printf("; compute %.1f%% in the first %.0f iterations, %.1f%% in the last %.0f",
			       100.0 * tot->early[w] / tot->early_n, tot->early_n, 100.0 * tot->late[w] / tot->late_n,
			       tot->late_n);
		putchar('\n');
		max = tot->compute[w] > max ? tot->compute[w] : max;
		mean += tot->compute[w] / (double)cfg.workers;
	}
	/* 1 is balanced; with no work at all, nothing is out of balance either. */
	printf("imbalance %.2f (max compute / mean compute)\n", mean > 0 ? max / mean : 1.0);
	if (tot->hwprio) {
		unsigned iterations = 0, changes = 0;
		marcel_hwprio_stats(&iterations, &changes);
		printf("hwprio: %u iterations measured, levels changed after %u\n", iterations, changes);
	}
	printf("checksum %016" PRIx64 "\n", tot->checksum);
	printf("time %.3f s\n", tot->time);
}

int main(int argc, char **argv)
{
	int err = marcel_init(&argc, argv);
	if (err != 0)  /* it said why; EINVAL: a bad --marcel-* option or MARCEL_* variable */
		return err == EINVAL ? 2 : 1;
	mb_parse(&cfg, argc, argv);
	reports = zalloc((size_t)cfg.workers, sizeof(*reports));
	marcel_t *tids = zalloc((size_t)cfg.workers, sizeof(*tids));
	struct totals tot = { zalloc((size_t)cfg.workers, sizeof(double)),
			      zalloc((size_t)cfg.workers, sizeof(double)), 0.0, 0xcbf29ce484222325ULL,
			      marcel_hwprio_stats(NULL, NULL) == 0, zalloc((size_t)cfg.workers, sizeof(double)),
			      zalloc((size_t)cfg.workers, sizeof(double)), 0, 0 };
	marcel_bubble_t bubble;
	check(marcel_barrier_init(&go, NULL, (unsigned)cfg.workers + 1), "marcel_barrier_init");
	check(marcel_barrier_init(&done, NULL, (unsigned)cfg.workers + 1), "marcel_barrier_init");

	print_header();
	start_workers(tids, &bubble);
	for (long t = 0; t < cfg.iters; t++)
		iteration(t, &tot);
	for (long w = 0; w < cfg.workers; w++)
		check(marcel_join(tids[w], NULL), "marcel_join");
	if (cfg.bubble)
		check(marcel_bubble_join(&bubble) ?: marcel_bubble_destroy(&bubble), "marcel_bubble_join/destroy");
	print_summary(&tot);

	marcel_barrier_destroy(&go);
	marcel_barrier_destroy(&done);
	free(tot.compute);
	free(tot.wait);
	free(tot.early);
	free(tot.late);
	free(tids);
	free(reports);
	free(cfg.loads);
	marcel_end();
	return 0;
}
