/*
 * The recursion of examples/sumtime: the sum of lo..hi is the sum of its two halves, each
 * computed by a thread of its own (the pair in a bubble of its own, see nested_fork2()),
 * down to ranges of at most `cutoff` numbers, which a loop sums. bench/bench_nested runs
 * this same code beside OpenMP tasks and TBB.
 */
#ifndef EXAMPLES_SUMTIME_H
#define EXAMPLES_SUMTIME_H

#include "nested.h"

struct sum_job {
	const struct nested_how *how;
	unsigned long cutoff;
	unsigned long lo, hi;      /* the range, both ends included */
	unsigned long long sum;    /* result */
	unsigned long threads;     /* result: threads created for the range, at any depth */
	int err;                   /* result: 0, or the error of a marcel call that failed */
};

static inline unsigned long long sum_loop(unsigned long lo, unsigned long hi)
{
	unsigned long long s = 0;
	for (unsigned long i = lo; i <= hi; i++)
		s += i;
	return s;
}

static inline any_t sum_thread(any_t arg);

static inline void sum_range(struct sum_job *j)
{
	j->sum = 0;
	j->threads = 0;
	j->err = 0;
	if (j->hi - j->lo < j->cutoff) {
		j->sum = sum_loop(j->lo, j->hi);
		return;
	}
	struct sum_job half[2] = { *j, *j };
	half[0].hi = j->lo + (j->hi - j->lo) / 2;
	half[1].lo = half[0].hi + 1;
	int err = nested_fork2(j->how, sum_thread, &half[0], &half[1]);
	j->err = err ? err : half[0].err ? half[0].err : half[1].err;
	j->sum = half[0].sum + half[1].sum;
	j->threads = 2 + half[0].threads + half[1].threads;
}

static inline any_t sum_thread(any_t arg)
{
	sum_range(arg);
	return NULL;
}

#endif
