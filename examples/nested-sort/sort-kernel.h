/*
 * The sequential parts of examples/nested-sort: the keys, the quicksort partition and
 * merge steps, the sorts run below the cut-off, and the checks. Plain C that also
 * compiles as C++, so that bench/bench_nested's three sides (marcel, OpenMP tasks, TBB
 * task_group) run the same code and differ only in how they spawn and wait.
 */
#ifndef EXAMPLES_SORT_KERNEL_H
#define EXAMPLES_SORT_KERNEL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Below this many keys, insertion sort: recursion costs more than it saves there. */
#define SK_SMALL 16

/* splitmix64: the keys are a function of the seed alone, on every machine. */
static inline uint64_t sk_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline void sk_fill(uint64_t *a, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		a[i] = sk_mix(seed + 0x9e3779b97f4a7c15ULL * (i + 1));
}

/* Three sums that do not depend on the order of the keys: equal before and after a sort
 * unless a key was lost, duplicated or changed (the last one, of mixed keys, catches the
 * changes that keep the plain sum and xor). */
struct sk_digest {
	uint64_t sum, xr, mixed;
};

static inline struct sk_digest sk_digest_of(const uint64_t *a, size_t n)
{
	struct sk_digest d = { 0, 0, 0 };
	for (size_t i = 0; i < n; i++) {
		d.sum += a[i];
		d.xr ^= a[i];
		d.mixed += sk_mix(a[i]);
	}
	return d;
}

static inline int sk_digest_eq(struct sk_digest x, struct sk_digest y)
{
	return x.sum == y.sum && x.xr == y.xr && x.mixed == y.mixed;
}

/* Index of the first key smaller than its predecessor, or n if a is sorted. */
static inline size_t sk_unsorted_at(const uint64_t *a, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (a[i] < a[i - 1])
			return i;
	return n;
}

/* FNV-1a over the keys in order: the checksum a sorted output is printed with. */
static inline uint64_t sk_checksum(const uint64_t *a, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ a[i]) * 0x100000001b3ULL;
	return h;
}

static inline void sk_insertion(uint64_t *a, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		uint64_t k = a[i];
		size_t j = i;
		for (; j > 0 && a[j - 1] > k; j--)
			a[j] = a[j - 1];
		a[j] = k;
	}
}

/* ---------------- quicksort ---------------- */

/* Hoare's partition of a[0..n), n >= 2, around the median of the first, middle and last
 * keys. Returns k, 0 < k < n, with a[0..k) <= a[k..n): both parts are non-empty, so the
 * recursion always progresses, and equal keys split evenly instead of piling up on one
 * side. */
static inline size_t sk_partition(uint64_t *a, size_t n)
{
	size_t m = n / 2, l = n - 1;
	size_t med = a[0] < a[m] ? (a[m] < a[l] ? m : a[0] < a[l] ? l : 0)
				 : (a[0] < a[l] ? 0 : a[m] < a[l] ? l : m);
	uint64_t p = a[med];
	a[med] = a[0];
	a[0] = p;
	/* With the pivot first, i stops at 0 on the first round and j can never pass it:
	 * neither scan needs a bound check, and j ends below n - 1. */
	ptrdiff_t i = -1, j = (ptrdiff_t)n;
	for (;;) {
		do
			i++;
		while (a[i] < p);
		do
			j--;
		while (a[j] > p);
		if (i >= j)
			return (size_t)j + 1;
		uint64_t t = a[i];
		a[i] = a[j];
		a[j] = t;
	}
}

static inline void sk_quick(uint64_t *a, size_t n)
{
	/* Recurse into the smaller part, loop on the larger: the stack stays O(log n). */
	while (n > SK_SMALL) {
		size_t k = sk_partition(a, n);
		if (k < n - k) {
			sk_quick(a, k);
			a += k;
			n -= k;
		} else {
			sk_quick(a + k, n - k);
			n = k;
		}
	}
	sk_insertion(a, n);
}

/* ---------------- merge sort ---------------- */
/*
 * The merge sort sorts a[0..n) into a (into = 0) or into tmp (into = 1), tmp being as
 * long as a: it sorts both halves into the other buffer, then merges them into the one
 * asked for. Each level thus moves the keys once, without copying back.
 */

static inline void sk_merge(const uint64_t *x, size_t nx, const uint64_t *y, size_t ny, uint64_t *out)
{
	while (nx && ny) {
		if (*y < *x) {
			*out++ = *y++;
			ny--;
		} else {
			*out++ = *x++;
			nx--;
		}
	}
	memcpy(out, nx ? x : y, (nx ? nx : ny) * sizeof(*out));
}

/* The last step: merges the halves (sorted with !into) into the buffer asked for. */
static inline void sk_msort_merge(uint64_t *a, uint64_t *tmp, size_t n, int into)
{
	const uint64_t *src = into ? a : tmp;
	sk_merge(src, n / 2, src + n / 2, n - n / 2, into ? tmp : a);
}

static inline void sk_msort(uint64_t *a, uint64_t *tmp, size_t n, int into)
{
	if (n <= SK_SMALL) {
		sk_insertion(a, n);
		if (into)
			memcpy(tmp, a, n * sizeof(*a));
		return;
	}
	sk_msort(a, tmp, n / 2, !into);
	sk_msort(a + n / 2, tmp + n / 2, n - n / 2, !into);
	sk_msort_merge(a, tmp, n, into);
}

/* ---------------- what every side of a parallel sort shares ---------------- */

/* Where a level above the cut-off splits its keys: quicksort partitions them (which
 * moves them), merge sort halves them. */
static inline size_t sk_split(int merge, uint64_t *a, size_t n)
{
	return merge ? n / 2 : sk_partition(a, n);
}

/* A part at or below the cut-off, sorted sequentially (tmp, into: merge sort only). */
static inline void sk_leaf(int merge, uint64_t *a, uint64_t *tmp, size_t n, int into)
{
	if (merge)
		sk_msort(a, tmp, n, into);
	else
		sk_quick(a, n);
}

#endif
