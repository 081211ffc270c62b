/*
 * MetBench (Minimum Execution Time Benchmark) with marcel threads: a master and N workers.
 * Each iteration the master releases the workers, each worker computes its load, then all
 * meet at a barrier; so every iteration lasts as long as the heaviest load, and lighter
 * workers wait. MetBenchVar (--swap K) reverses the imbalance every K iterations. The
 * program reports which fraction of each iteration each worker spent computing and
 * waiting: the imbalance hwprio balances; with MARCEL_HWPRIO set, also each VP's level per
 * iteration and each worker's compute fraction over the first iterations and the last.
 */
#ifndef METBENCH_H
#define METBENCH_H

#include <stdint.h>

#define MB_PROG "metbench"

struct mb_config {
	long workers;
	long *loads;       /* units per worker (the --loads list, cycled over the workers) */
	long unit;         /* loop trips per unit */
	long iters;
	long swap;         /* reverse the loads every swap iterations; 0: never */
	long min_load, max_load;
	int bubble;        /* put the workers in one bubble */
	int bind;          /* worker w on VP (w + 1) mod VPs */
	int quiet;         /* the summary only */
};

/* Fills @p c from the command line (usage in options.c). Exits with status 0 after
 * --help and 2 after a bad option, naming it. */
void mb_parse(struct mb_config *c, int argc, char **argv);

/* Worker @p w's load at iteration @p t, in units. In the reversed periods of --swap, a
 * load L becomes min + max - L: heavy and light workers exchange their loads. */
long mb_load(const struct mb_config *c, long w, long t);

/* One worker's computation: @p trips dependent floating-point steps from @p seed. The
 * result is a pure function of both, whoever runs it: the checksum is built from it. */
double mb_work(long trips, double seed);

/* The seed of worker @p w at iteration @p t. */
double mb_seed(long w, long t);

/* Folds @p v's bit pattern into the FNV-1a hash @p h. */
uint64_t mb_fold(uint64_t h, double v);

/* Monotonic clock, in seconds. */
double mb_now(void);

#endif
