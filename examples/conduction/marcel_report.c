/*
 * conduction/marcel's reporter (conduction.h): what hwprio did to the stencil. With
 * MARCEL_HWPRIO set or --report, each stripe reads the clock around its computation
 * (cond_stripe_step) and stripe 0 records the VPs' levels; after the run, the report
 * reads as MetBench's (metbench/report.c), a stripe for a worker:
 *   iteration t    from the release of the barrier before it (the last stripe's arrival
 *                  there: the end of the initialisation for iteration 0) to its own,
 *   compute        the stripe's cond_step,
 *   wait           from its end to the release,
 *   load           the stripe's rows in the --imbalance band,
 *   levels         those the VPs had as stripe 0 finished computing iteration t: the
 *                  policy decides as a barrier releases, so these are what iteration t
 *                  ran with. The barrier's first round ends the initialisation, which
 *                  hwprio measures as its first iteration: levels may change from
 *                  iteration 0 on, so "the first two iterations" of the totals are the
 *                  least hwprio had acted on, not always none.
 * Nothing is printed while the stencil runs, and the stripes take no lock for it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <marcel.h>
#include "conduction.h"
#include "../metbench/report.h"

static int hwprio;           /* MARCEL_HWPRIO is on */
static unsigned nvps;
static signed char *levels;  /* nvps per iteration, written by stripe 0 alone */

static int start(const struct cond_run *r)
{
	hwprio = marcel_hwprio_stats(NULL, NULL) == 0;
	if (!hwprio && !r->report)
		return 0;
	nvps = marcel_nbvps();
	if (hwprio)
		levels = cond_calloc(r, (size_t)r->iters * nvps, sizeof(*levels));
	return 1;
}

static void iteration(const struct cond_run *r, long t)
{
	(void)r;
	if (levels)
		mb_report_levels(&levels[(size_t)t * nvps]);
}

/* When the last stripe arrived at the barrier after iteration t (-1: the initialisation). */
static double released(const struct cond_run *r, long t)
{
	double last = r->times[0][t + 1].end;
	for (int s = 1; s < r->nthreads; s++)
		last = r->times[s][t + 1].end > last ? r->times[s][t + 1].end : last;
	return last;
}

static void print(const struct cond_run *r)
{
	struct mb_report rep;
	mb_report_init(&rep, r->prog, "stripe", r->nthreads, r->iters, r->report);
	struct mb_sample *sample = cond_calloc(r, (size_t)r->nthreads, sizeof(*sample));
	if (r->report)
		printf("# iteration, its time, then per stripe hot:compute/wait (hot: its rows in the band; "
		       "fractions of the iteration)%s\n", hwprio ? ", then each VP's hwprio level" : "");
	double before = released(r, -1);
	for (long t = 0; t < r->iters; t++) {
		double end = released(r, t);
		for (int s = 0; s < r->nthreads; s++) {
			const struct cond_times *at = &r->times[s][t + 1];
			sample[s] = (struct mb_sample){ .load = cond_hot_rows(r, s, t), .compute = at->end - at->start,
							.wait = end - at->end };
		}
		mb_report_iteration(&rep, t, end - before, sample, levels ? &levels[(size_t)t * nvps] : NULL);
		before = end;
	}
	mb_report_summary(&rep);
	free(sample);
	mb_report_free(&rep);
}

static void stop(void)
{
	free(levels);
	levels = NULL;
}

static const struct cond_reporter marcel_reporter = {
	.start = start,
	.iteration = iteration,
	.print = print,
	.stop = stop,
};

const struct cond_reporter *cond_reporter(void)
{
	return &marcel_reporter;
}
