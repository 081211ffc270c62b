/*
 * The shapes timed against Argobots (bench/vs-argobots), shared by bench_shapes.c
 * (marcel) and bench_shapes_abt.c (Argobots): the same command line, the same work, one
 * figure per run, so that a driver can interleave the two libraries' runs and count
 * their instructions the same way (callgrind, N against 2N operations).
 *
 *   yield        two threads on one worker, each yielding n times: ns per yield
 *   create1      one thread creates and joins n empty threads, one at a time: ns per pair
 *   batch        n created, then all joined: ns per thread
 *   condhandoff  two threads on one worker hand a turn back and forth n times with a
 *                mutex and a condition each: ns per hand-off
 *   sem          two threads on one worker hand a turn back and forth n times with a
 *                semaphore each (post the other's, wait on one's own): ns per hand-off.
 *                Argobots has no semaphore: its peer is the usual one built from a
 *                mutex, a condition and a count.
 *   barrier      four threads on one worker meet at a barrier n times: ns per round
 *
 * usage: PROG --shape S [--n N] [--warmup W]: prints "SHAPE ns=X n=N" after W (1) warm-up
 * runs of the same size; --warmup 0 for instruction counts.
 */
#ifndef BENCH_SHAPES_H
#define BENCH_SHAPES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum shape { SHAPE_YIELD, SHAPE_CREATE1, SHAPE_BATCH, SHAPE_CONDHANDOFF, SHAPE_SEM, SHAPE_BARRIER, SHAPE_NB };
static const char *const shape_names[SHAPE_NB] = { "yield", "create1", "batch", "condhandoff", "sem", "barrier" };
/* Default sizes: runs of about 50-100 ms here. */
static const long shape_default_n[SHAPE_NB] = { 2000000, 500000, 100000, 500000, 500000, 200000 };
/* Threads meeting at the barrier of the barrier shape. */
#define SHAPE_BARRIER_N 4

struct shape_opts {
	enum shape shape;
	long n;
	int warmup;
};

static inline void shape_usage(const char *prog)
{
	fprintf(stderr, "usage: %s --shape yield|create1|batch|condhandoff|sem|barrier [--n N (1 to 10^8)] [--warmup W (0 to 10)]\n",
		prog);
	exit(2);
}

static inline void shape_parse(int argc, char **argv, struct shape_opts *o)
{
	o->shape = SHAPE_NB;
	o->n = 0;
	o->warmup = 1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--shape") && i + 1 < argc) {
			const char *s = argv[++i];
			for (int k = 0; k < SHAPE_NB; k++)
				if (!strcmp(s, shape_names[k]))
					o->shape = (enum shape)k;
			if (o->shape == SHAPE_NB) {
				fprintf(stderr, "%s: --shape %s: expected yield, create1, batch, condhandoff, sem or barrier\n", argv[0], s);
				exit(2);
			}
		} else if (!strcmp(argv[i], "--n") && i + 1 < argc) {
			char *end;
			long n = strtol(argv[++i], &end, 10);
			if (*end || n < 1 || n > 100000000)
				shape_usage(argv[0]);
			o->n = n;
		} else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) {
			char *end;
			long w = strtol(argv[++i], &end, 10);
			if (*end || w < 0 || w > 10)
				shape_usage(argv[0]);
			o->warmup = (int)w;
		} else {
			shape_usage(argv[0]);
		}
	}
	if (o->shape == SHAPE_NB)
		shape_usage(argv[0]);
	if (!o->n)
		o->n = shape_default_n[o->shape];
}

static inline double shape_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

__attribute__((noreturn)) static inline void shape_fail(const char *what, int e)
{
	fprintf(stderr, "bench shapes: FAILED: %s returned %d\n", what, e);
	exit(1);
}

#define SHAPE_CHECK(call)                                  \
	do {                                               \
		int shape_e_ = (call);                     \
		if (shape_e_)                              \
			shape_fail(#call, shape_e_);       \
	} while (0)

#endif
