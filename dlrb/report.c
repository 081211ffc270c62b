/*
 * The report at MPI_Finalize: each rank's figures gathered on rank 0 (by PMPI calls, not
 * counted), one line per rank, then what the iterations were found from. It goes to
 * standard error, to the file MARCEL_DLRB_REPORT names, or nowhere (MARCEL_DLRB_REPORT=off).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ma_dlrb.h"

/* Mean of the n first (or last) utilisations kept. */
static double ma_dlrb_mean(const double *u, unsigned n)
{
	double s = 0;
	for (unsigned i = 0; i < n; i++)
		s += u[i];
	return n ? s / n : 0;
}

static void ma_dlrb_summarise(struct ma_dlrb *d)
{
	unsigned long n = d->util_n;
	unsigned k = n < 10 ? (unsigned)n : 10;
	d->r.n_first = d->r.n_last = k;
	d->r.util_first = ma_dlrb_mean(d->util_head, k);
	double last[10];
	for (unsigned i = 0; i < k; i++)
		last[i] = d->util[(n - 1 - i) % MA_DLRB_KEEP];
	d->r.util_last = ma_dlrb_mean(last, k);
	d->r.periods_found = d->period.found;
}

static void ma_dlrb_print(FILE *out, const struct ma_dlrb_rank *all, int size, int balancing, const char *logs)
{
	unsigned long found = 0, fallback = 0;
	int iterative = 0;
	if (balancing)
		fprintf(out, "libmarcel-dlrb: %d ranks, balancing (each node's ranks placed and prioritised by their "
			     "computation per iteration; util_first and util_last: the first and the last 10 "
			     "iterations)\n", size);
	else
		fprintf(out, "libmarcel-dlrb: %d ranks, observing (measures each rank's computation per iteration, "
			     "changes nothing)\n", size);
	fprintf(out, "%4s %10s %10s %8s %7s %11s %11s %10s %10s", "rank", "calls", "iterations", "by_coll", "period",
		"compute_s", "mpi_s", "util_first", "util_last");
	if (balancing)
		fprintf(out, " %9s %8s %4s %5s %5s", "cpu_first", "cpu_last", "vp", "level", "moves");
	fprintf(out, "\n");
	for (int i = 0; i < size; i++) {
		const struct ma_dlrb_rank *r = &all[i];
		fprintf(out, "%4d %10lu %10lu %8lu %7u %11.4f %11.4f %9.1f%% %9.1f%%", i, r->calls, r->iterations,
			r->fallback, r->period, r->compute, r->mpi, 100 * r->util_first, 100 * r->util_last);
		if (balancing)
			fprintf(out, " %9d %8d %4d %5d %5u", r->cpu_first, r->cpu_last, r->vp_last, r->level_last, r->moves);
		fprintf(out, "\n");
		found += r->periods_found;
		fallback += r->fallback;
		/* A period held for MA_DLRB_STABLE iterations at least: one seen by chance in
		 * calls without structure breaks at once. */
		iterative |= r->iterations >= MA_DLRB_STABLE;
	}
	if (iterative)
		fprintf(out, "libmarcel-dlrb: iterations found from the stream of MPI calls (periods found: %lu over "
			     "the ranks; more than one per rank means phase changes)\n", found);
	else if (fallback >= MA_DLRB_STABLE)
		fprintf(out, "libmarcel-dlrb: no repeating sequence of MPI calls; iterations are the collectives over "
			     "MPI_COMM_WORLD\n");
	else
		fprintf(out, "libmarcel-dlrb: no iterations: the program's MPI calls repeat no sequence and it makes no "
			     "collective over MPI_COMM_WORLD; nothing to balance\n");
	if (logs && *logs)
		fputs(logs, out);
}

/* The nodes' logs, concatenated on rank 0 (NULL elsewhere, or out of memory). Every rank
 * takes part: the gathers are collective. */
static char *ma_dlrb_gather_logs(const struct ma_dlrb *d, const char *mine, const struct ma_dlrb_rank *all)
{
	int len = mine ? (int)strlen(mine) : 0, *counts = NULL, *displs = NULL, total = 0;
	char *logs = NULL;
	if (d->rank == 0 && all) {
		counts = calloc((size_t)d->size, sizeof(*counts));
		displs = calloc((size_t)d->size, sizeof(*displs));
		for (int i = 0; counts && displs && i < d->size; i++) {
			counts[i] = (int)all[i].log_len;
			displs[i] = total;
			total += counts[i];
		}
		logs = counts && displs ? malloc((size_t)total + 1) : NULL;
	}
	/* Rank 0 says whether it can take them; if not, no one sends. */
	int ok = d->rank != 0 || logs;
	PMPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (ok)
		PMPI_Gatherv(mine ? mine : "", len, MPI_CHAR, logs, counts, displs, MPI_CHAR, 0, MPI_COMM_WORLD);
	if (logs)
		logs[total] = 0;
	free(counts);
	free(displs);
	return logs;
}

void ma_dlrb_finish(void)
{
	struct ma_dlrb *d = &ma_dlrb;
	if (!d->active)
		return;
	d->active = 0;
	ma_dlrb_summarise(d);
	d->r.cpu_last = sched_getcpu();
	int balancing = d->mode == MA_DLRB_BALANCE;
	char *log = NULL;
	ma_dlrb_node_finish(d, &log);
	d->r.log_len = log ? (unsigned)strlen(log) : 0;
	struct ma_dlrb_rank *all = NULL;
	if (d->rank == 0)
		all = calloc((size_t)d->size, sizeof(*all));
	/* Rank 0 says whether it can take the figures; if not, no one sends them. */
	int ok = d->rank != 0 || all;
	PMPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (ok)
		PMPI_Gather(&d->r, (int)sizeof(d->r), MPI_BYTE, all, (int)sizeof(d->r), MPI_BYTE, 0, MPI_COMM_WORLD);
	char *logs = ma_dlrb_gather_logs(d, log, all);
	free(log);
	ma_dlrb_trace_finish(d);
	if (d->rank != 0)
		return;
	if (!all) {
		fprintf(stderr, "libmarcel-dlrb: out of memory for the report\n");
		free(logs);
		return;
	}
	if (strcmp(d->report, "off")) {
		FILE *out = stderr;
		if (d->report[0]) {
			out = fopen(d->report, "w");
			if (!out) {
				fprintf(stderr, "libmarcel-dlrb: MARCEL_DLRB_REPORT=%s: %s; the report goes to standard "
						"error\n", d->report, strerror(errno));
				out = stderr;
			}
		}
		ma_dlrb_print(out, all, d->size, balancing, logs);
		if (out != stderr)
			fclose(out);
	}
	free(logs);
	free(all);
}
