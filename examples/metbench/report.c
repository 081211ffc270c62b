/*
 * The MetBench-style report (report.h): fractions per iteration, totals, hwprio's view.
 */
#include <stdio.h>
#include <stdlib.h>
#include <marcel.h>
#include "report.h"

/* calloc that exits, naming the program, when memory runs out. */
static double *totals(const char *prog, long n)
{
	double *p = calloc((size_t)n, sizeof(double));
	if (p == NULL) {
		fprintf(stderr, "%s: out of memory for the report of %ld workers\n", prog, n);
		exit(1);
	}
	return p;
}

void mb_report_init(struct mb_report *rep, const char *prog, const char *noun, long workers, long iters,
		    int lines)
{
	*rep = (struct mb_report){ .noun = noun, .workers = workers, .iters = iters, .lines = lines,
				   .hwprio = marcel_hwprio_stats(NULL, NULL) == 0, .compute = totals(prog, workers),
				   .wait = totals(prog, workers), .early = totals(prog, workers),
				   .late = totals(prog, workers) };
}

void mb_report_free(struct mb_report *rep)
{
	free(rep->compute);
	free(rep->wait);
	free(rep->early);
	free(rep->late);
	rep->compute = rep->wait = rep->early = rep->late = NULL;
}

void mb_report_levels(signed char *levels)
{
	for (unsigned v = 0; v < marcel_nbvps(); v++) {
		int l = 0;
		marcel_hwprio_vp_level(v, &l);
		levels[v] = (signed char)l;
	}
}

void mb_report_iteration(struct mb_report *rep, long t, double span, const struct mb_sample *s,
			 const signed char *levels)
{
	rep->time += span;
	if (rep->lines)
		printf("iter %ld %.3f ms", t, span * 1e3);
	for (long w = 0; w < rep->workers; w++) {
		rep->compute[w] += s[w].compute;
		rep->wait[w] += s[w].wait;
		if (rep->lines)
			printf("  %ld:%.3f/%.3f", s[w].load, span > 0 ? s[w].compute / span : 0.0,
			       span > 0 ? s[w].wait / span : 0.0);
		if (rep->hwprio && span > 0) {
			if (t < 2)
				rep->early[w] += s[w].compute / span;
			if (t >= rep->iters / 2)
				rep->late[w] += s[w].compute / span;
		}
	}
	rep->early_n += rep->hwprio && t < 2;
	rep->late_n += rep->hwprio && t >= rep->iters / 2;
	if (rep->lines && rep->hwprio) {
		printf("  levels");
		for (unsigned v = 0; v < marcel_nbvps(); v++)
			printf(" %+d", levels[v]);
	}
	if (rep->lines)
		putchar('\n');
}

void mb_report_summary(const struct mb_report *rep)
{
	double max = 0.0, mean = 0.0, time = rep->time > 0 ? rep->time : 1.0;
	for (long w = 0; w < rep->workers; w++) {
		printf("%s %ld: compute %.4f s (%.1f%%), wait %.4f s (%.1f%%)", rep->noun, w, rep->compute[w],
		       100.0 * rep->compute[w] / time, rep->wait[w], 100.0 * rep->wait[w] / time);
		if (rep->hwprio && rep->early_n > 0 && rep->late_n > 0)
			printf("; compute %.1f%% in the first %.0f iterations, %.1f%% in the last %.0f",
			       100.0 * rep->early[w] / rep->early_n, rep->early_n, 100.0 * rep->late[w] / rep->late_n,
			       rep->late_n);
		putchar('\n');
		max = rep->compute[w] > max ? rep->compute[w] : max;
		mean += rep->compute[w] / (double)rep->workers;
	}
	/* 1 is balanced; with no work at all, nothing is out of balance either. */
	printf("imbalance %.2f (max compute / mean compute)\n", mean > 0 ? max / mean : 1.0);
	if (rep->hwprio) {
		unsigned iterations = 0, changes = 0;
		marcel_hwprio_stats(&iterations, &changes);
		printf("hwprio: %u iterations measured, levels changed after %u\n", iterations, changes);
	}
}
