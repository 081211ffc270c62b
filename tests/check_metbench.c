/*
 * examples/metbench: the checksum of the workers' results is the one a sequential
 * re-computation gives here, whatever the strategy, the number of VPs or the bubble; a
 * heavy worker computes longer and waits less than a light one; --swap exchanges them at
 * the right iterations; every reported fraction is in [0, 1] and compute + wait <= 1;
 * bad options exit with status 2, naming the option.
 *
 * Timing assertions compare two workers of the same run, summed over several iterations,
 * with loads eight times apart: a loaded machine slows both, it does not reverse them.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdint.h>
#include "ma_example_test.h"

#ifndef MA_EXAMPLES_DIR
#error "MA_EXAMPLES_DIR (the build's examples directory) must be defined"
#endif

#define PROG MA_EXAMPLES_DIR "/metbench/metbench"
#define MAX_ITERS 16
#define MAX_WORKERS 4

static const char *const strategies[] = { "null", "burst", "spread", "cache", "steal", "gang", "memory" };

/* Runs "env metbench args" (stderr merged); asserts the exit status @p want and returns
 * the output (malloc'd). */
static char *run(const char *env, const char *args, int want)
{
	return ma_example_run_expect(env, PROG, args, 60, want);
}

/* ---- What a run printed. */

struct iteration {
	long load[MAX_WORKERS];
	double compute[MAX_WORKERS], wait[MAX_WORKERS];
};

struct result {
	int niters;
	struct iteration it[MAX_ITERS];
	double compute[MAX_WORKERS], wait[MAX_WORKERS];  /* the summary's totals, in seconds */
	double imbalance;
	uint64_t checksum;
};

/* Reads one "iter" line: "iter T MS ms  L:C/W  L:C/W ..." for @p workers workers. */
static void parse_iteration(const char *line, int workers, struct result *res)
{
	long t;
	double ms;
	int used;
	ck_assert_msg(sscanf(line, "iter %ld %lf ms%n", &t, &ms, &used) == 2 && t == res->niters && ms >= 0,
		      "iteration %d: bad line '%.80s'", res->niters, line);
	ck_assert_int_lt(res->niters, MAX_ITERS);
	struct iteration *it = &res->it[res->niters++];
	line += used;
	for (int w = 0; w < workers; w++) {
		ck_assert_msg(sscanf(line, " %ld:%lf/%lf%n", &it->load[w], &it->compute[w], &it->wait[w], &used) == 3,
			      "iteration %ld: worker %d missing in '%.80s'", t, w, line);
		line += used;
		/* Three decimals each: the sum may exceed 1 by two roundings. */
		ck_assert_msg(it->compute[w] >= 0 && it->wait[w] >= 0 && it->compute[w] + it->wait[w] <= 1.0011,
			      "iteration %ld, worker %d: compute %g, wait %g", t, w, it->compute[w], it->wait[w]);
	}
}

/* Runs metbench with @p args (which must give @p workers workers) and reads its output. */
static void measure(const char *env, const char *args, int workers, struct result *res)
{
	char *out = run(env, args, 0);
	memset(res, 0, sizeof(*res));
	int seen = 0;
	for (char *line = strtok(out, "\n"); line != NULL; line = strtok(NULL, "\n")) {
		int w;
		double c, cp, wt, wp;
		if (strncmp(line, "iter ", 5) == 0)
			parse_iteration(line, workers, res);
		else if (sscanf(line, "worker %d: compute %lf s (%lf%%), wait %lf s (%lf%%)", &w, &c, &cp, &wt, &wp) == 5) {
			ck_assert_msg(w == seen && w < workers, "summary line for worker %d out of order", w);
			ck_assert_msg(c >= 0 && wt >= 0 && cp + wp <= 100.11, "worker %d: %g%% + %g%% of the time", w, cp, wp);
			res->compute[w] = c;
			res->wait[w] = wt;
			seen++;
		} else if (strncmp(line, "imbalance ", 10) == 0)
			ck_assert_int_eq(sscanf(line, "imbalance %lf", &res->imbalance), 1);
		else if (strncmp(line, "checksum ", 9) == 0) {
			ck_assert_msg(strspn(line + 9, "0123456789abcdef") == 16, "bad '%s'", line);
			res->checksum = strtoull(line + 9, NULL, 16);
		}
	}
	ck_assert_msg(seen == workers && res->checksum != 0 && res->imbalance >= 1.0,
		      "%s: incomplete summary (%d workers, imbalance %g)", args, seen, res->imbalance);
	free(out);
}

/* ---- The reference: the workers' results, recomputed sequentially. */

static double ref_work(long trips, long w, long t)
{
	double x = (double)(w + 1) + (double)t * 0.001, sum = 0.0;
	while (trips-- > 0) {
		x = x * 0.999 + 1.0;
		sum += x;
	}
	return sum;
}

/* The checksum for @p workers workers cycling through @p loads (@p nloads of them), with
 * the loads reversed (L -> min + max - L) in every other period of @p swap iterations. */
static uint64_t ref_checksum(int workers, const long *loads, int nloads, long unit, long iters, long swap)
{
	long lo = loads[0], hi = loads[0];
	for (int i = 1; i < nloads; i++) {
		lo = loads[i] < lo ? loads[i] : lo;
		hi = loads[i] > hi ? loads[i] : hi;
	}
	uint64_t h = 0xcbf29ce484222325ULL;
	for (long t = 0; t < iters; t++)
		for (int w = 0; w < workers; w++) {
			long load = loads[w % nloads];
			if (swap && t / swap % 2)
				load = lo + hi - load;
			double r = ref_work(load * unit, w, t);
			uint64_t bits;
			memcpy(&bits, &r, sizeof(bits));
			h = (h ^ bits) * 0x100000001b3ULL;
		}
	return h;
}

#define SMALL "--workers 3 --loads 1,5,0 --unit 1000 --iters 7 --swap 2"
static const long small_loads[] = { 1, 5, 0 };

START_TEST(test_checksum_reference)
{
	struct result res;
	uint64_t want = ref_checksum(3, small_loads, 3, 1000, 7, 2);
	measure("", SMALL, 3, &res);
	ck_assert_msg(res.checksum == want, "checksum %016" PRIx64 ", expected %016" PRIx64, res.checksum, want);
	ck_assert_int_eq(res.niters, 7);
	/* The loads each iteration, reversed in iterations 2, 3 and 6. */
	for (int t = 0; t < 7; t++)
		for (int w = 0; w < 3; w++)
			ck_assert_int_eq(res.it[t].load[w], t / 2 % 2 ? 5 - small_loads[w] : small_loads[w]);
	/* The work really depends on the trip count, and --summary drops the iteration lines
	 * only. */
	measure("", "--workers 3 --loads 1,5,0 --unit 1001 --iters 7 --swap 2 --summary", 3, &res);
	ck_assert_int_eq(res.niters, 0);
	ck_assert(res.checksum == ref_checksum(3, small_loads, 3, 1001, 7, 2) && res.checksum != want);
	/* A list shorter than the workers repeats. */
	char *out = run("", "--workers 4 --loads 1,3 --unit 10 --iters 1 --quiet", 0);
	ck_assert_msg(strstr(out, "loads 1,3,1,3 ") != NULL, "loads not cycled:\n%s", out);
	free(out);
	/* The default list (1,4) is cut to a single worker; only a given list must fit. */
	out = run("", "--workers 1 --unit 10 --iters 1 --quiet", 0);
	ck_assert_msg(strstr(out, "loads 1 ") != NULL, "default loads for one worker:\n%s", out);
	free(out);
}
END_TEST

START_TEST(test_checksum_schedules)
{
	char env[256];
	struct result res;
	uint64_t want = ref_checksum(3, small_loads, 3, 1000, 7, 2);
	for (unsigned s = 0; s < sizeof(strategies) / sizeof(strategies[0]); s++)
		for (int setup = 0; setup < 3; setup++) {
			const char *where[] = { "", "MARCEL_NVP=1", "MARCEL_TOPOLOGY='numa:4 core:4' MARCEL_NVP=16" };
			snprintf(env, sizeof(env), "MARCEL_BUBBLE_SCHEDULER=%s %s", strategies[s], where[setup]);
			measure(env, SMALL " --quiet", 3, &res);
			ck_assert_msg(res.checksum == want, "%s: checksum %016" PRIx64, env, res.checksum);
			measure(env, SMALL " --quiet --bubble", 3, &res);
			ck_assert_msg(res.checksum == want, "%s --bubble: checksum %016" PRIx64, env, res.checksum);
		}
}
END_TEST

/* Loads 2 and 16 units of about 1 ms: the heavy worker computes about 16 ms a round. */
#define SKEWED "--workers 2 --loads 2,16 --unit 250000"

START_TEST(test_imbalance)
{
	struct result res;
	measure("", SKEWED " --iters 8", 2, &res);
	ck_assert_int_eq(res.niters, 8);
	ck_assert_msg(res.compute[1] > res.compute[0] && res.wait[0] > res.wait[1],
		      "heavy worker: compute %g s, wait %g s; light one: compute %g s, wait %g s", res.compute[1],
		      res.wait[1], res.compute[0], res.wait[0]);
	double c[2] = { 0, 0 }, wt[2] = { 0, 0 };
	for (int t = 0; t < res.niters; t++)
		for (int w = 0; w < 2; w++) {
			c[w] += res.it[t].compute[w];
			wt[w] += res.it[t].wait[w];
		}
	ck_assert_msg(c[1] > c[0] && wt[0] > wt[1], "fractions summed over the iterations: heavy %g/%g, light %g/%g",
		      c[1], wt[1], c[0], wt[0]);
	ck_assert_msg(res.imbalance > 1.0 && res.imbalance <= 2.0, "imbalance %g for two workers", res.imbalance);
}
END_TEST

START_TEST(test_swap)
{
	struct result res;
	measure("", SKEWED " --iters 8 --swap 4 --bubble", 2, &res);
	ck_assert_int_eq(res.niters, 8);
	/* Worker 1 is the heavy one in iterations 0-3, worker 0 in 4-7. */
	double before[2] = { 0, 0 }, after[2] = { 0, 0 };
	for (int t = 0; t < 8; t++) {
		int heavy = t < 4;
		ck_assert_msg(res.it[t].load[heavy] == 16 && res.it[t].load[!heavy] == 2, "iteration %d: loads %ld,%ld", t,
			      res.it[t].load[0], res.it[t].load[1]);
		for (int w = 0; w < 2; w++)
			(t < 4 ? before : after)[w] += res.it[t].compute[w];
	}
	ck_assert_msg(before[1] > before[0] && after[0] > after[1],
		      "compute fractions before the swap %g, %g; after %g, %g", before[0], before[1], after[0], after[1]);
}
END_TEST

/* A bad command line: status 2, the usage and a message naming the culprit. */
static void expect_usage_error(const char *args, const char *named)
{
	ma_example_expect_usage_error(PROG, args, named, "usage: metbench");
}

START_TEST(test_bad_options)
{
	expect_usage_error("--bogus", "'--bogus'");
	expect_usage_error("--workers 0", "'--workers'");
	expect_usage_error("--workers 4x", "'4x'");
	expect_usage_error("--workers", "'--workers'");
	expect_usage_error("--loads 1,,2", "'--loads'");
	expect_usage_error("--loads 1,-2", "'--loads'");
	expect_usage_error("--workers 2 --loads 1,2,3", "3 loads for 2 workers");
	expect_usage_error("--unit 0", "'--unit'");
	expect_usage_error("--iters 1e3", "'--iters'");
	expect_usage_error("--swap -1", "'--swap'");
	/* marcel_init names a bad runtime option itself (no usage); still a usage error. */
	char *out = ma_example_run_expect("", PROG, "--marcel-nvp zero", 30, 2);
	ck_assert_msg(strstr(out, "--marcel-nvp") != NULL, "--marcel-nvp zero: not named:\n%s", out);
	free(out);
	char *help = run("", "--help", 0);
	ck_assert_msg(strstr(help, "--swap") != NULL && strstr(help, "usage: metbench") != NULL, "--help:\n%s", help);
	free(help);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("metbench");
	TCase *tc = tcase_create("example");
	tcase_add_checked_fixture(tc, ma_example_clean_env, NULL);
	tcase_add_test(tc, test_checksum_reference);
	tcase_add_test(tc, test_checksum_schedules);
	tcase_add_test(tc, test_imbalance);
	tcase_add_test(tc, test_swap);
	tcase_add_test(tc, test_bad_options);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return ma_test_run(s);
}
