/*
 * The command line, the grid and the report shared by every stencil variant
 * (conduction.h); the arithmetic is the kernel's (conduction/kernel.c, advection/kernel.c),
 * and what a runtime adds to the report its reporter's (conduction/marcel_report.c).
 * No thread call here: this file is linked into the pthread, marcel and OpenMP programs
 * alike.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "conduction.h"

#define DEFAULT_SIZE2 1024
#define DEFAULT_SIZE3 128
#define DEFAULT_ITERS 100
#define MAX_DIM 1000000L
#define MAX_CELLS (1LL << 32)  /* 64 GiB for the two buffers: beyond that, a typo */
#define MAX_THREADS 4096

/* What --threads means in the usage; cond_parse_named() may say it otherwise. The
 * command line is parsed once, by the main thread, before any other runs. */
static const char *threads_help = "threads, one stripe each (default: the processors online)";

static void usage(FILE *f, const char *prog)
{
	int reports = cond_reporter() != NULL;
	fprintf(f,
		"usage: %s [--size N|NxM|NxMxK] [--iters T] [--threads P] [--3d] [--imbalance]%s\n"
		"  --size       grid points per axis (default %d, or %d with --3d); N alone means\n"
		"               N along every axis; each at least 3\n"
		"  --iters      iterations (default %d)\n"
		"  --threads    %s\n"
		"  --3d         a 3D grid, N x M x K, instead of N x M\n"
		"  --imbalance  a band of rows (an eighth of the grid) costs 8 times more to\n"
		"               compute, and moves across the grid once during the run\n",
		prog, reports ? " [--report]" : "", DEFAULT_SIZE2, DEFAULT_SIZE3, DEFAULT_ITERS, threads_help);
	if (reports)
		fputs("  --report     after the run, a line per iteration: its time and, per stripe, its rows\n"
		      "               in the band and its compute and wait fractions (with MARCEL_HWPRIO\n"
		      "               set, each VP's hardware-priority level too); then per stripe totals.\n"
		      "               With MARCEL_HWPRIO set, the totals come without --report too, with\n"
		      "               the compute fractions over the first two iterations and the last half\n",
		      f);
}

/* Prints "prog: <message>" and the usage on stderr; exits with status 2, as for any
 * usage error. */
static _Noreturn __attribute__((format(printf, 2, 3)))
void bad_option(const char *prog, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	usage(stderr, prog);
	exit(2);
}

/* Parses a decimal integer in [lo, hi] ending at *end; 0 on success. */
static int parse_long(const char *s, long lo, long hi, long *out, char **end)
{
	if (*s < '0' || *s > '9')
		return -1;  /* strtol would accept a sign or spaces */
	errno = 0;
	long v = strtol(s, end, 10);
	if (errno != 0 || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

void cond_parse(struct cond_run *r, int argc, char **argv, const char *variant)
{
	static char prog[64];
	snprintf(prog, sizeof(prog), "%s/%s", cond_stencil, variant);
	cond_parse_named(r, argc, argv, prog, NULL);
}

void cond_parse_named(struct cond_run *r, int argc, char **argv, const char *prog,
		      const char *threads_usage)
{
	if (threads_usage)
		threads_help = threads_usage;
	long dim[3] = { 0, 0, 0 };
	int ndim = 0;
	long threads = 0;
	memset(r, 0, sizeof(*r));
	r->prog = prog;
	r->dims = 2;
	r->iters = DEFAULT_ITERS;

	for (int i = 1; i < argc; i++) {
		const char *opt = argv[i];
		if (strcmp(opt, "--help") == 0 || strcmp(opt, "-h") == 0) {
			usage(stdout, prog);
			exit(0);
		}
		if (strcmp(opt, "--3d") == 0) {
			r->dims = 3;
			continue;
		}
		if (strcmp(opt, "--imbalance") == 0) {
			r->imbalance = 1;
			continue;
		}
		if (strcmp(opt, "--report") == 0) {
			if (cond_reporter() == NULL)
				bad_option(prog, "option '--report': %s has no report (conduction/marcel has one)",
					   prog);
			r->report = 1;
			continue;
		}
		if (strcmp(opt, "--size") != 0 && strcmp(opt, "--iters") != 0 &&
		    strcmp(opt, "--threads") != 0)
			bad_option(prog, "unknown option '%s'", opt);
		if (i + 1 >= argc)
			bad_option(prog, "option '%s' needs a value", opt);
		const char *val = argv[++i];
		char *end;
		if (strcmp(opt, "--size") == 0) {
			for (ndim = 0;; val = end + 1) {
				if (ndim == 3 || parse_long(val, 3, MAX_DIM, &dim[ndim], &end) != 0)
					bad_option(prog, "option '%s': '%s' is not N, NxM or NxMxK with each "
						   "value from 3 to 1000000", opt, argv[i]);
				ndim++;
				if (*end != 'x')
					break;
			}
			if (*end != 0)
				bad_option(prog, "option '%s': '%s' is not N, NxM or NxMxK", opt, argv[i]);
		} else if (strcmp(opt, "--iters") == 0) {
			if (parse_long(val, 0, 1000000000L, &r->iters, &end) != 0 || *end != 0)
				bad_option(prog, "option '%s': '%s' is not an iteration count (0 to 10^9)",
					   opt, val);
		} else {
			if (parse_long(val, 1, MAX_THREADS, &threads, &end) != 0 || *end != 0)
				bad_option(prog, "option '%s': '%s' is not a thread count (1 to 4096)",
					   opt, val);
		}
	}

	if (ndim == 3 && r->dims == 2)
		bad_option(prog, "option '--size': a size with three values needs --3d");
	if (ndim == 0)
		dim[0] = r->dims == 3 ? DEFAULT_SIZE3 : DEFAULT_SIZE2;
	for (int d = ndim ? ndim : 1; d < 3; d++)
		dim[d] = ndim <= 1 ? dim[0] : dim[d - 1];  /* N means N everywhere; NxM in 3D: K = M */
	r->n = dim[0];
	r->m = dim[1];
	r->k = r->dims == 3 ? dim[2] : 1;
	if ((long long)r->n * r->m * r->k > MAX_CELLS)
		bad_option(prog, "option '--size': more than 2^32 grid points");

	if (threads == 0) {
		long online = sysconf(_SC_NPROCESSORS_ONLN);
		threads = online < 1 ? 1 : online > MAX_THREADS ? MAX_THREADS : online;
		if (threads > r->n - 2)
			threads = r->n - 2;
	}
	/* Every stripe must have an interior row to compute, or its thread only waits. */
	if (threads > r->n - 2)
		bad_option(prog, "option '--threads': %ld threads, but the first axis has only %ld interior "
			   "points to share", threads, r->n - 2);
	r->nthreads = (int)threads;
}

void *cond_calloc(const struct cond_run *r, size_t n, size_t size)
{
	void *p = calloc(n, size);
	if (p == NULL && n != 0 && size != 0) {
		fprintf(stderr, "%s: out of memory (%zu x %zu bytes)\n", r->prog, n, size);
		exit(1);
	}
	return p;
}

void cond_check(const struct cond_run *r, int err, const char *what)
{
	if (err != 0) {
		fprintf(stderr, "%s: %s: %s\n", r->prog, what, strerror(err));
		exit(1);
	}
}

void cond_alloc(struct cond_run *r)
{
	size_t cells = (size_t)r->n * (size_t)r->m * (size_t)r->k;
	for (int b = 0; b < 2; b++) {
		/* malloc, not calloc: calloc may touch the pages here, in the main thread. */
		r->buf[b] = malloc(cells * sizeof(double));
		if (r->buf[b] == NULL) {
			fprintf(stderr, "%s: out of memory for a %ldx%ldx%ld grid (%zu MiB per buffer)\n",
				r->prog, r->n, r->m, r->k, cells * sizeof(double) >> 20);
			exit(1);
		}
	}
	const struct cond_reporter *reporter = cond_reporter();
	if (reporter == NULL || !reporter->start(r))
		return;
	/* Whole cache lines: each stripe writes its array while the others write theirs. */
	size_t bytes = ((size_t)r->iters + 1) * sizeof(struct cond_times);
	bytes = (bytes + 63) / 64 * 64;
	r->times = cond_calloc(r, (size_t)r->nthreads, sizeof(*r->times));
	for (int s = 0; s < r->nthreads; s++) {
		r->times[s] = aligned_alloc(64, bytes);
		if (r->times[s] == NULL) {
			fprintf(stderr, "%s: out of memory for the stripes' times (%zu MiB each, for %ld "
				"iterations): fewer --iters, or run without the report\n", r->prog, bytes >> 20, r->iters);
			exit(1);
		}
		memset(r->times[s], 0, bytes);
	}
}

void cond_free(struct cond_run *r)
{
	free(r->buf[0]);
	free(r->buf[1]);
	r->buf[0] = r->buf[1] = NULL;
	if (r->times == NULL)
		return;
	for (int s = 0; s < r->nthreads; s++)
		free(r->times[s]);
	free(r->times);
	r->times = NULL;
	cond_reporter()->stop();
}

void cond_stripe_rows(const struct cond_run *r, int s, long *lo, long *hi)
{
	*lo = r->n * s / r->nthreads;
	*hi = r->n * (s + 1) / r->nthreads;
}

void cond_init_stripe(const struct cond_run *r, int s)
{
	long lo, hi;
	cond_stripe_rows(r, s, &lo, &hi);
	for (long i = lo; i < hi; i++)
		for (long j = 0; j < r->m; j++)
			for (long l = 0; l < r->k; l++) {
				size_t at = ((size_t)i * r->m + j) * r->k + l;
				r->buf[0][at] = r->buf[1][at] = cond_initial(r, i, j, l);
			}
	if (r->times)
		r->times[s][0].end = cond_now();
}

/* The band's rows at iteration t, [*first, *end) in this run's numbering. */
static void hot_band(const struct cond_run *r, long t, long *first, long *end)
{
	long n = r->grid_n ? r->grid_n : r->n;
	long width = (n - 2) / 8 > 0 ? (n - 2) / 8 : 1;
	*first = 1 + t * (n - 2 - width) / (r->iters > 1 ? r->iters - 1 : 1) - r->row0;
	*end = *first + width;
}

int cond_hot_row(const struct cond_run *r, long i, long t)
{
	long first, end;
	hot_band(r, t, &first, &end);
	return i >= first && i < end;
}

long cond_hot_rows(const struct cond_run *r, int s, long t)
{
	if (!r->imbalance)
		return 0;
	long lo, hi, first, end;
	cond_stripe_rows(r, s, &lo, &hi);
	hot_band(r, t, &first, &end);
	/* Of the stripe's rows, cond_step computes the interior ones. */
	lo = lo > 1 ? lo : 1;
	hi = hi < r->n - 1 ? hi : r->n - 1;
	lo = lo > first ? lo : first;
	hi = hi < end ? hi : end;
	return hi > lo ? hi - lo : 0;
}

void cond_stripe_step(const struct cond_run *r, int s, long t)
{
	if (r->times == NULL) {
		cond_step(r, s, t);
		return;
	}
	struct cond_times *at = &r->times[s][t + 1];
	at->start = cond_now();
	cond_step(r, s, t);
	at->end = cond_now();
	if (s == 0)
		cond_reporter()->iteration(r, t);
}

/* The programs that link no reporter get this one. */
__attribute__((weak)) const struct cond_reporter *cond_reporter(void)
{
	return NULL;
}

void cond_report(const struct cond_run *r, double seconds)
{
	/* FNV-1a over the cells' bit patterns in memory order: any change to any bit of any
	 * cell changes it, and it is computed once, sequentially, after the run. */
	const double *g = r->buf[r->iters % 2];
	size_t cells = (size_t)r->n * (size_t)r->m * (size_t)r->k;
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t c = 0; c < cells; c++) {
		uint64_t bits;
		memcpy(&bits, &g[c], sizeof(bits));
		h = (h ^ bits) * 0x100000001b3ULL;
	}
	if (r->dims == 2)
		printf("%s: 2D %ldx%ld, %ld iteration%s, %d thread%s%s\n", r->prog, r->n, r->m, r->iters,
		       r->iters == 1 ? "" : "s", r->nthreads, r->nthreads > 1 ? "s" : "",
		       r->imbalance ? ", imbalanced" : "");
	else
		printf("%s: 3D %ldx%ldx%ld, %ld iteration%s, %d thread%s%s\n", r->prog, r->n, r->m, r->k,
		       r->iters, r->iters == 1 ? "" : "s", r->nthreads, r->nthreads > 1 ? "s" : "",
		       r->imbalance ? ", imbalanced" : "");
	if (r->times)
		cond_reporter()->print(r);
	printf("checksum %016" PRIx64 "\n", h);
	printf("time %.3f s\n", seconds);
}

double cond_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
