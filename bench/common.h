/*
 * Shared by the benchmark programs: options, clocks, medians, the BENCH output line and
 * failure handling. Everything is static inline so each program stays one file.
 *
 * Method (see RESULTS.md): a warm-up run, then R repetitions of a timed loop of N
 * iterations; each repetition gives one per-iteration figure and the program reports the
 * median of the R figures (the min and max go in the line's trailing comment).
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <marcel.h>

#define BENCH_DEFAULT_REPS 11
#define BENCH_FULL_REPS 31

struct bench_opts {
	int reps;      /* repetitions per measurement (median taken over them) */
	int full;      /* --full: more repetitions (and programs may use larger N) */
	int reps_set;  /* --reps was given (programs with their own defaults keep it) */
};

static inline void bench_usage(const char *prog)
{
	fprintf(stderr, "usage: %s [--full] [--reps N]\n", prog);
	exit(2);
}

/* Parses --full and --reps N (any --marcel-* flags must be removed by marcel_init first,
 * or not be passed at all). */
static inline void bench_parse(int argc, char **argv, struct bench_opts *o)
{
	o->reps = BENCH_DEFAULT_REPS;
	o->full = 0;
	o->reps_set = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--full")) {
			o->full = 1;
		} else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			char *end;
			long r = strtol(argv[++i], &end, 10);
			if (*end || r < 1 || r > 10000)
				bench_usage(argv[0]);
			o->reps = (int)r;
			o->reps_set = 1;
		} else {
			bench_usage(argv[0]);
		}
	}
	if (o->full && !o->reps_set)
		o->reps = BENCH_FULL_REPS;
}

__attribute__((format(printf, 1, 2), noreturn)) static inline void bench_fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "bench: FAILED: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

/* Checks a POSIX-style return code. */
#define BENCH_CHECK(call)                                                                  \
	do {                                                                               \
		int bench_e_ = (call);                                                     \
		if (bench_e_)                                                              \
			bench_fail("%s:%d: %s returned %d (%s)", __FILE__, __LINE__, #call, \
				   bench_e_, strerror(bench_e_));                          \
	} while (0)

static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Time-stamp counter (no perf counters on the VM: cycles come from rdtsc). */
static inline uint64_t bench_cycles(void)
{
#if defined(__x86_64__) || defined(__i386__)
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#else
	return bench_now_ns(); /* no TSC: report nanoseconds, labelled as cycles */
#endif
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Summary of R per-iteration figures. */
struct bench_stat {
	double med, min, max;
};

static inline struct bench_stat bench_stat_of(const double *v, int n)
{
	double *s = malloc((size_t)n * sizeof(*s));
	if (!s)
		bench_fail("out of memory");
	memcpy(s, v, (size_t)n * sizeof(*s));
	qsort(s, (size_t)n, sizeof(*s), bench_cmp_double);
	struct bench_stat st = { n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2, s[0], s[n - 1] };
	free(s);
	return st;
}

/*
 * Prints the line bench/run collects:
 *   BENCH <name> marcel_<unit>=<x> peer=<peer> peer_<unit>=<y> ratio=<y/x>  # comment
 * ratio > 1 means marcel is faster (or, for a marcel-vs-marcel line, the first figure is
 * the better one).
 */
__attribute__((format(printf, 6, 7))) static inline void
bench_line(const char *name, const char *unit, struct bench_stat m, const char *peer,
	   struct bench_stat p, const char *comment_fmt, ...)
{
	char comment[512];
	va_list ap;
	va_start(ap, comment_fmt);
	vsnprintf(comment, sizeof(comment), comment_fmt, ap);
	va_end(ap);
	printf("BENCH %s marcel_%s=%.1f peer=%s peer_%s=%.1f ratio=%.2f  # marcel %.1f..%.1f, "
	       "%s %.1f..%.1f; %s\n",
	       name, unit, m.med, peer, unit, p.med, m.med > 0 ? p.med / m.med : 0.0, m.min, m.max, peer,
	       p.min, p.max, comment);
	fflush(stdout);
}

/*
 * Starts the runtime, runs driver(arg) in a ULT bound to VP0 and stops the runtime. The
 * main thread is not VP-local (its queue is the machine's, so any worker may resume it),
 * hence a bound driver for loops that must stay on one worker. The driver returns 0x600d
 * when all went well.
 */
static inline void bench_run_on_vp0(marcel_func_t driver, void *arg)
{
	BENCH_CHECK(marcel_init(NULL, NULL));
	marcel_attr_t a;
	BENCH_CHECK(marcel_attr_init(&a));
	BENCH_CHECK(marcel_attr_setvpset(&a, MARCEL_VPSET_VP(0)));
	marcel_t d;
	any_t res;
	BENCH_CHECK(marcel_create(&d, &a, driver, arg));
	BENCH_CHECK(marcel_join(d, &res));
	if ((uintptr_t)res != 0x600d)
		bench_fail("driver returned %p", res);
	marcel_end();
}

/* Estimated TSC frequency in GHz (cycles per ns) over a short busy interval. */
static inline double bench_tsc_ghz(void)
{
	uint64_t t0 = bench_now_ns(), c0 = bench_cycles();
	while (bench_now_ns() - t0 < 20000000u)
		;
	uint64_t t1 = bench_now_ns(), c1 = bench_cycles();
	return (double)(c1 - c0) / (double)(t1 - t0);
}

#endif
