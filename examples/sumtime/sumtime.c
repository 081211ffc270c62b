/*
 * sumtime, the classic Marcel demo of nested parallelism: the sum of 1..N by recursive
 * halving, two threads per level (sumtime.h), each level's pair in a new bubble inside
 * its parent's (--two-bubbles: each thread in a bubble of its own, the classic demo's
 * layout), so that the bubble tree is the recursion tree and the strategy
 * (MARCEL_BUBBLE_SCHEDULER) can map subtrees onto parts of the machine. With the default
 * cut-off of 1 every number gets a thread: about 2N threads, most of them alive only
 * for a few instructions, which is what seeds (marcel_attr_setseed) are for.
 * Checks the result against N(N+1)/2 (exit status 1 if it differs).
 * Usage: sumtime [--n N] [--cutoff C] [--seeds|--no-seeds] [--no-bubbles|--two-bubbles]
 *                [--reps R]
 */
#include "sumtime.h"

#define PROG "sumtime"
#define DEFAULT_N 100000
#define DEFAULT_CUTOFF 1

#define STR_(x) #x
#define STR(x) STR_(x)

static const char usage[] =
	"usage: " PROG " [--n N] [--cutoff C] [--seeds|--no-seeds] [--no-bubbles|--two-bubbles]\n"
	"               [--reps R]\n"
	"  --n N          sum 1..N (default " STR(DEFAULT_N) "; 1 to 10^9)\n"
	"  --cutoff C     ranges of at most C numbers are summed by a loop, longer ones split in\n"
	"                 two threads (default " STR(DEFAULT_CUTOFF) ": a thread per number; 1 to 10^9)\n"
	"  --seeds        the threads are seeds (marcel_attr_setseed; the default)\n"
	"  --no-seeds     the threads are ordinary threads\n"
	"  --no-bubbles   no bubble per level: the threads are created with default attributes\n"
	"  --two-bubbles  a bubble per thread rather than per pair, both inside the parent's\n"
	"                 (the classic Marcel sumtime's layout; twice the bubbles)\n"
	"  --reps R       compute the sum R times and report the median time (default 1)\n"
	"Marcel options (--marcel-nvp N, --marcel-bubble-scheduler NAME...) go before these;\n"
	"without a strategy named there or in MARCEL_BUBBLE_SCHEDULER, " NESTED_DEFAULT_SCHED " is used.\n";

int main(int argc, char **argv)
{
	int err = nested_init(&argc, argv);
	if (err != 0)  /* it said why; EINVAL: a bad --marcel-* option or MARCEL_* variable */
		return err == EINVAL ? 2 : 1;
	long n = DEFAULT_N, cutoff = DEFAULT_CUTOFF;
	const struct nested_opt opts[] = {
		{ "--n", &n, 1, 1000000000L, NULL },
		{ "--cutoff", &cutoff, 1, 1000000000L, NULL },
		{ NULL, NULL, 0, 0, NULL },
	};
	struct nested_cli cli = { .prog = PROG, .usage = usage, .opts = opts };
	struct nested_how how;
	nested_start(&cli, argc, argv, &how);

	double *times = nested_calloc(PROG, (size_t)cli.reps, sizeof(*times));
	const unsigned long long want = (unsigned long long)n * (unsigned long long)(n + 1) / 2;
	struct sum_job job;
	for (long r = 0; r < cli.reps; r++) {
		job = (struct sum_job){ .how = &how, .cutoff = (unsigned long)cutoff, .lo = 1, .hi = (unsigned long)n };
		double t0 = nested_now();
		sum_range(&job);
		times[r] = nested_now() - t0;
		nested_check(PROG, job.err, "creating a thread");
		if (job.sum != want) {
			fprintf(stderr, "%s: the sum of 1..%ld came out as %llu instead of %llu\n", PROG, n,
				job.sum, want);
			return 1;
		}
	}
	double t = nested_median(times, (int)cli.reps);
	printf("%s: 1..%ld in ranges of at most %ld, %lu thread%s (%s), strategy %s, %u VP%s\n", PROG, n,
	       cutoff, job.threads, nested_s(job.threads), nested_how_name(&how), nested_sched(), marcel_nbvps(),
	       nested_s(marcel_nbvps()));
	printf("sum %llu\n", job.sum);
	printf("time %.6f s%s, %.1f ns per thread\n", t, cli.reps > 1 ? " (median)" : "",
	       job.threads ? t * 1e9 / (double)job.threads : 0.0);
	free(times);
	nested_end(PROG, &how);
	return 0;
}
