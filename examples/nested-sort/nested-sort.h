/*
 * The parallel recursion of examples/nested-sort: above the cut-off, a level splits its
 * keys in two (quicksort: partitions them first; merge sort: halves them, and merges once
 * both halves are sorted) and sorts the two parts in two threads of its own, the pair in
 * a new bubble inside the parent's (nested_fork2()), so the bubble tree follows the
 * recursion: a subtree's threads share the subtree's keys, and a strategy that keeps a
 * bubble on one part of the machine keeps those keys in that part's caches. At or below
 * the cut-off, the sequential sort of sort-kernel.h. bench/bench_nested runs this code.
 */
#ifndef EXAMPLES_NESTED_SORT_H
#define EXAMPLES_NESTED_SORT_H

#include "../sumtime/nested.h"
#include "sort-kernel.h"

enum sort_algo { SORT_QUICK, SORT_MERGE };

struct sort_job {
	const struct nested_how *how;
	size_t cutoff;          /* this many keys or fewer: sorted sequentially */
	enum sort_algo algo;
	uint64_t *a, *tmp;      /* the keys; merge sort: scratch as long as a */
	size_t n;
	int into;               /* merge sort: the result goes into tmp */
	unsigned long threads;  /* result: threads created for these keys, at any depth */
	int err;                /* result: 0, or the error of a marcel call that failed */
};

static inline any_t sort_thread(any_t arg);

static inline void sort_keys(struct sort_job *j)
{
	j->threads = 0;
	j->err = 0;
	if (j->n <= j->cutoff) {
		sk_leaf(j->algo == SORT_MERGE, j->a, j->tmp, j->n, j->into);
		return;
	}
	size_t k = sk_split(j->algo == SORT_MERGE, j->a, j->n);
	struct sort_job part[2] = { *j, *j };
	part[0].n = k;
	part[1].a += k;
	if (j->tmp)  /* quicksort has no scratch */
		part[1].tmp += k;
	part[1].n -= k;
	part[0].into = part[1].into = !j->into;
	int err = nested_fork2(j->how, sort_thread, &part[0], &part[1]);
	j->err = err ? err : part[0].err ? part[0].err : part[1].err;
	j->threads = 2 + part[0].threads + part[1].threads;
	if (j->algo == SORT_MERGE && !j->err)
		sk_msort_merge(j->a, j->tmp, j->n, j->into);
}

static inline any_t sort_thread(any_t arg)
{
	sort_keys(arg);
	return NULL;
}

#endif
