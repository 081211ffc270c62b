// The TBB task_group side of bench/bench_nested, which runs this helper (it is not run on
// its own) with the workload it measured marcel and OpenMP on:
//   bench_nested_tbb WORKERS REPS sum N CUTOFF
//   bench_nested_tbb WORKERS REPS quick|merge N CUTOFF SEED
// Same recursions as the other sides (two spawns per level, then wait for both; the same
// splits and sequential code from examples/nested-sort/sort-kernel.h), WORKERS threads.
// After a warm-up, prints one line: the result (the sum, or the sorted keys' checksum)
// and the REPS times in seconds. Checks the sorted keys itself (exit status 1 if wrong;
// 2 for a bad command line).
#include <tbb/global_control.h>
#include <tbb/task_group.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "nested-sort/sort-kernel.h"

namespace {

unsigned long long tbb_sum(unsigned long lo, unsigned long hi, unsigned long cutoff)
{
	if (hi - lo < cutoff) {
		unsigned long long s = 0;  // as sum_loop() in examples/sumtime/sumtime.h
		for (unsigned long i = lo; i <= hi; i++)
			s += i;
		return s;
	}
	unsigned long mid = lo + (hi - lo) / 2;
	unsigned long long x = 0, y = 0;
	tbb::task_group g;
	g.run([&x, lo, mid, cutoff] { x = tbb_sum(lo, mid, cutoff); });
	g.run([&y, mid, hi, cutoff] { y = tbb_sum(mid + 1, hi, cutoff); });
	g.wait();
	return x + y;
}

void tbb_sort(int merge, uint64_t *a, uint64_t *tmp, size_t n, int into, size_t cutoff)
{
	if (n <= cutoff) {
		sk_leaf(merge, a, tmp, n, into);
		return;
	}
	size_t k = sk_split(merge, a, n);
	tbb::task_group g;
	g.run([=] { tbb_sort(merge, a, tmp, k, !into, cutoff); });
	g.run([=] { tbb_sort(merge, a + k, merge ? tmp + k : nullptr, n - k, !into, cutoff); });
	g.wait();
	if (merge)
		sk_msort_merge(a, tmp, n, into);
}

[[noreturn]] void usage(const char *why)
{
	std::fprintf(stderr,
		     "bench_nested_tbb: %s\nusage: bench_nested_tbb WORKERS REPS sum N CUTOFF\n"
		     "       bench_nested_tbb WORKERS REPS quick|merge N CUTOFF SEED\n",
		     why);
	std::exit(2);
}

unsigned long long number(const char *s, const char *what)
{
	char *end;
	unsigned long long v = std::strtoull(s, &end, 10);
	if (*s < '0' || *s > '9' || *end || v == 0)
		usage(what);
	return v;
}

double seconds_since(std::chrono::steady_clock::time_point t0)
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char **argv)
{
	if (argc < 6)
		usage("too few arguments");
	size_t workers = number(argv[1], "WORKERS is not a positive number");
	int reps = (int)number(argv[2], "REPS is not a positive number");
	const char *what = argv[3];
	int sum = !std::strcmp(what, "sum"), merge = !std::strcmp(what, "merge");
	if (!sum && !merge && std::strcmp(what, "quick"))
		usage("the workload is not sum, quick or merge");
	if (argc != (sum ? 6 : 7))
		usage("wrong number of arguments for this workload");
	unsigned long long n = number(argv[4], "N is not a positive number");
	unsigned long long cutoff = number(argv[5], "CUTOFF is not a positive number");
	tbb::global_control gc(tbb::global_control::max_allowed_parallelism, workers);

	std::vector<double> t((size_t)reps);
	unsigned long long result = 0;
	if (sum) {
		for (int r = -1; r < reps; r++) {
			auto t0 = std::chrono::steady_clock::now();
			result = tbb_sum(1, (unsigned long)n, (unsigned long)cutoff);
			if (r >= 0)
				t[(size_t)r] = seconds_since(t0);
		}
	} else {
		// SEED may be 0: parsed apart from the positive numbers.
		char *end;
		uint64_t seed = std::strtoull(argv[6], &end, 10);
		if (*argv[6] < '0' || *argv[6] > '9' || *end)
			usage("SEED is not a number");
		std::vector<uint64_t> keys((size_t)n), tmp(merge ? (size_t)n : 0);
		sk_fill(keys.data(), keys.size(), seed);
		struct sk_digest in = sk_digest_of(keys.data(), keys.size());
		for (int r = -1; r < reps; r++) {
			sk_fill(keys.data(), keys.size(), seed);
			auto t0 = std::chrono::steady_clock::now();
			tbb_sort(merge, keys.data(), merge ? tmp.data() : nullptr, keys.size(), 0, (size_t)cutoff);
			if (r >= 0)
				t[(size_t)r] = seconds_since(t0);
			if (sk_unsorted_at(keys.data(), keys.size()) < keys.size() ||
			    !sk_digest_eq(sk_digest_of(keys.data(), keys.size()), in)) {
				std::fprintf(stderr, "bench_nested_tbb: the keys came out unsorted or changed\n");
				return 1;
			}
		}
		result = sk_checksum(keys.data(), keys.size());
	}
	std::printf("%llu", result);
	for (double s : t)
		std::printf(" %.9f", s);
	std::printf("\n");
	return 0;
}
