/*
 * nested-sort: a parallel sort of 64-bit keys, quicksort or merge sort, with two threads
 * and a bubble per recursion level down to a cut-off (nested-sort.h), the same recursion
 * OpenMP tasks or TBB would run, but whose bubble tree tells the strategy
 * (MARCEL_BUBBLE_SCHEDULER) which threads share which keys. The keys come from a seeded
 * generator, so a run is reproducible; the output is checked to be sorted and to hold
 * the same keys as the input (exit status 1 otherwise), and its checksum printed: it
 * depends on the keys alone, not on the algorithm, the cut-off or the machine.
 * Usage: nested-sort [--n N] [--cutoff C] [--algo quick|merge] [--seed S]
 *                    [--seeds|--no-seeds] [--no-bubbles|--two-bubbles] [--reps R]
 */
#include <inttypes.h>
#include "nested-sort.h"

#define PROG "nested-sort"
#define DEFAULT_N 10000000
#define DEFAULT_CUTOFF 10000

#define STR_(x) #x
#define STR(x) STR_(x)

static const char usage[] =
	"usage: " PROG " [--n N] [--cutoff C] [--algo quick|merge] [--seed S]\n"
	"                   [--seeds|--no-seeds] [--no-bubbles|--two-bubbles] [--reps R]\n"
	"  --n N          keys to sort (default " STR(DEFAULT_N) "; 1 to 10^9)\n"
	"  --cutoff C     parts of at most C keys are sorted sequentially, larger ones split\n"
	"                 in two threads (default " STR(DEFAULT_CUTOFF) "; 1 to 10^9)\n"
	"  --algo A       quick (partition, then sort both sides; the default) or merge (sort\n"
	"                 both halves, then merge them)\n"
	"  --seed S       the keys' generator seed (default 1; 0 to 2^63-1)\n"
	"  --seeds        the threads are seeds (marcel_attr_setseed; the default)\n"
	"  --no-seeds     the threads are ordinary threads\n"
	"  --no-bubbles   no bubble per level: the threads are created with default attributes\n"
	"  --two-bubbles  a bubble per thread rather than per pair, both inside the parent's\n"
	"                 (the classic Marcel sumtime's layout; twice the bubbles)\n"
	"  --reps R       sort the same keys R times and report the median time (default 1)\n"
	"Marcel options (--marcel-nvp N, --marcel-bubble-scheduler NAME...) go before these;\n"
	"without a strategy named there or in MARCEL_BUBBLE_SCHEDULER, " NESTED_DEFAULT_SCHED " is used.\n";

static const char *const algos[] = { "quick", "merge", NULL };

/* Exits with status 1, saying what is wrong, unless a is sorted and holds the keys
 * digested in want. */
static void verify(const uint64_t *a, size_t n, struct sk_digest want)
{
	size_t bad = sk_unsorted_at(a, n);
	if (bad < n) {
		fprintf(stderr, "%s: the output is not sorted: key %zu (%#" PRIx64 ") is smaller than key "
			"%zu (%#" PRIx64 ")\n", PROG, bad, a[bad], bad - 1, a[bad - 1]);
		exit(1);
	}
	if (!sk_digest_eq(sk_digest_of(a, n), want)) {
		fprintf(stderr, "%s: the output does not hold the input's keys (lost, duplicated or "
			"changed)\n", PROG);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	int err = nested_init(&argc, argv);
	if (err != 0)  /* it said why; EINVAL: a bad --marcel-* option or MARCEL_* variable */
		return err == EINVAL ? 2 : 1;
	long n = DEFAULT_N, cutoff = DEFAULT_CUTOFF, algo = SORT_QUICK, seed = 1;
	const struct nested_opt opts[] = {
		{ "--n", &n, 1, 1000000000L, NULL },
		{ "--cutoff", &cutoff, 1, 1000000000L, NULL },
		{ "--algo", &algo, 0, 0, algos },
		{ "--seed", &seed, 0, INT64_MAX, NULL },
		{ NULL, NULL, 0, 0, NULL },
	};
	struct nested_cli cli = { .prog = PROG, .usage = usage, .opts = opts };
	struct nested_how how;
	nested_start(&cli, argc, argv, &how);

	uint64_t *keys = nested_calloc(PROG, (size_t)n, sizeof(*keys));
	uint64_t *tmp = algo == SORT_MERGE ? nested_calloc(PROG, (size_t)n, sizeof(*tmp)) : NULL;
	double *times = nested_calloc(PROG, (size_t)cli.reps, sizeof(*times));
	struct sort_job job;
	struct sk_digest input = { 0, 0, 0 };
	for (long r = 0; r < cli.reps; r++) {
		sk_fill(keys, (size_t)n, (uint64_t)seed);
		if (r == 0)
			input = sk_digest_of(keys, (size_t)n);
		job = (struct sort_job){ .how = &how, .cutoff = (size_t)cutoff, .algo = (enum sort_algo)algo,
					 .a = keys, .tmp = tmp, .n = (size_t)n };
		double t0 = nested_now();
		sort_keys(&job);
		times[r] = nested_now() - t0;
		nested_check(PROG, job.err, "creating a thread");
		verify(keys, (size_t)n, input);
	}
	printf("%s: %ld key%s (seed %ld), %s sort, parts of at most %ld key%s sorted sequentially, "
	       "%lu thread%s (%s), strategy %s, %u VP%s\n", PROG, n, nested_s((unsigned long)n), seed,
	       algos[algo], cutoff, nested_s((unsigned long)cutoff), job.threads, nested_s(job.threads),
	       nested_how_name(&how), nested_sched(), marcel_nbvps(), nested_s(marcel_nbvps()));
	printf("checksum %016" PRIx64 "\n", sk_checksum(keys, (size_t)n));
	printf("time %.6f s%s\n", nested_median(times, (int)cli.reps), cli.reps > 1 ? " (median)" : "");
	free(times);
	free(tmp);
	free(keys);
	nested_end(PROG, &how);
	return 0;
}
