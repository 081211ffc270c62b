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
 * iterations (before hwprio decides) with the last half. report.c prints all this, for
 * conduction/marcel too.
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
#include "report.h"

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

/* Runs iteration @p t from the master's side and accounts for it: @p s and @p levels are
 * room for a sample per worker and a level per VP. */
static void iteration(long t, struct mb_report *rep, struct mb_sample *s, signed char *levels, uint64_t *checksum)
{
	double t0 = mb_now();
	barrier(&go);
	barrier(&done);
	double t1 = mb_now();
	for (long w = 0; w < cfg.workers; w++) {
		const struct report *r = &reports[w];
		s[w] = (struct mb_sample){ .load = mb_load(&cfg, w, t), .compute = r->end - r->start, .wait = t1 - r->end };
		/* In worker order, whoever finished first: the checksum depends on the results only. */
		*checksum = mb_fold(*checksum, r->result);
	}
	if (rep->hwprio)
		mb_report_levels(levels);
	mb_report_iteration(rep, t, t1 - t0, s, levels);
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

int main(int argc, char **argv)
{
	int err = marcel_init(&argc, argv);
	if (err != 0)  /* it said why; EINVAL: a bad --marcel-* option or MARCEL_* variable */
		return err == EINVAL ? 2 : 1;
	mb_parse(&cfg, argc, argv);
	reports = zalloc((size_t)cfg.workers, sizeof(*reports));
	marcel_t *tids = zalloc((size_t)cfg.workers, sizeof(*tids));
	struct mb_report rep;
	mb_report_init(&rep, MB_PROG, "worker", cfg.workers, cfg.iters, !cfg.quiet);
	struct mb_sample *samples = zalloc((size_t)cfg.workers, sizeof(*samples));
	signed char *levels = zalloc(marcel_nbvps(), sizeof(*levels));
	uint64_t checksum = 0xcbf29ce484222325ULL;
	marcel_bubble_t bubble;
	check(marcel_barrier_init(&go, NULL, (unsigned)cfg.workers + 1), "marcel_barrier_init");
	check(marcel_barrier_init(&done, NULL, (unsigned)cfg.workers + 1), "marcel_barrier_init");

	print_header();
	start_workers(tids, &bubble);
	for (long t = 0; t < cfg.iters; t++)
		iteration(t, &rep, samples, levels, &checksum);
	for (long w = 0; w < cfg.workers; w++)
		check(marcel_join(tids[w], NULL), "marcel_join");
	if (cfg.bubble)
		check(marcel_bubble_join(&bubble) ?: marcel_bubble_destroy(&bubble), "marcel_bubble_join/destroy");
	mb_report_summary(&rep);
	printf("checksum %016" PRIx64 "\n", checksum);
	printf("time %.3f s\n", rep.time);

	marcel_barrier_destroy(&go);
	marcel_barrier_destroy(&done);
	mb_report_free(&rep);
	free(samples);
	free(levels);
	free(tids);
	free(reports);
	free(cfg.loads);
	marcel_end();
	return 0;
}
