/*
 * examples/sumtime and examples/nested-sort (nested parallelism: two threads and a bubble
 * per recursion level): the sum is N(N+1)/2 and the sort's checksum is that of the same
 * keys sorted here by the C library, whatever the strategy, the topology, the VP count,
 * seeds or not, bubbles or not, the algorithm and the cut-off; the number of threads is
 * the one the recursion calls for (computed here for the halving recursions; the same in
 * every run for quicksort, whose splits depend on the keys alone). Deep recursions (a
 * thread per number or key) nest thousands of threads. Bad options exit with status 2,
 * naming the option.
 *
 * The examples are separate programs, run by path (MA_EXAMPLES_DIR) through popen; the
 * runtime is never started in this process.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include "ma_example_test.h"
#include "nested-sort/sort-kernel.h"
#include "sumtime/nested.h"

#ifndef MA_EXAMPLES_DIR
#error "MA_EXAMPLES_DIR (the build's examples directory) must be defined"
#endif

#define SUMTIME "sumtime/sumtime"
#define SORT "nested-sort/nested-sort"
#define SYNTH "MARCEL_TOPOLOGY='numa:2 core:4' MARCEL_NVP=8"

static const char *const strategies[] = { "null", "burst", "spread", "cache", "steal", "gang", "memory",
						   "contention", "pa", "mintlp" };
static const char *const kinds[] = { "", "--no-seeds", "--no-bubbles", "--no-seeds --no-bubbles", "--two-bubbles",
				      "--no-seeds --two-bubbles" };
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

/* Sizes are divided by MA_TEST_SCALE (ThreadSanitizer runs), down to a floor. */
static long scaled(long n, long floor)
{
	long s = n / ma_test_scale_div();
	return s > floor ? s : floor;
}

/* Seconds a run may take (times CK_TIMEOUT_MULTIPLIER) before it counts as hung: well
 * above what the largest takes under ThreadSanitizer, and below Check's own time limit,
 * so that a hang is reported as the run that hung. */
#define RUN_LIMIT 40

/* Runs "env MA_EXAMPLES_DIR/prog args" (ma_example_run): its output, to free, and its
 * status. */
static char *run(const char *env, const char *prog, const char *args, int *status)
{
	char path[1024];
	snprintf(path, sizeof(path), MA_EXAMPLES_DIR "/%s", prog);
	return ma_example_run(env, path, args, RUN_LIMIT, status);
}

/* What a successful run printed. */
struct outcome {
	unsigned long long value;  /* sumtime: the sum; nested-sort: the checksum */
	unsigned long threads;
	unsigned vps;
	char sched[32];            /* the strategy it ran under */
};

/* The decimal number just before the first occurrence of suffix in out. */
static unsigned long long number_before(const char *out, const char *suffix)
{
	const char *end = strstr(out, suffix), *p = end;
	ck_assert_msg(end != NULL, "no '%s' in the output:\n%s", suffix, out);
	while (p > out && p[-1] >= '0' && p[-1] <= '9')
		p--;
	ck_assert_msg(p < end, "no number before '%s' in the output:\n%s", suffix, out);
	return strtoull(p, NULL, 10);
}

/* Runs a program that must succeed; key is "\nsum " or "\nchecksum ". Checks that it
 * ran under the strategy env names, or the examples' default. */
static struct outcome outcome_of(const char *env, const char *prog, const char *args, const char *key)
{
	int st;
	char *out = run(env, prog, args, &st);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s %s %s: status %#x, output:\n%s", env, prog,
		      args, st, out);
	/* "1 thread", "2 threads"; "1 VP", "2 VPs". */
	struct outcome o = { 0, number_before(out, " thread"), (unsigned)number_before(out, " VP"), "" };
	const char *sched = strstr(out, ", strategy ");
	ck_assert_msg(sched && sscanf(sched, ", strategy %31[a-z],", o.sched) == 1, "no strategy in:\n%s", out);
	const char *want = strstr(env, "MARCEL_BUBBLE_SCHEDULER=");
	char named[32];
	if (!want || sscanf(want, "MARCEL_BUBBLE_SCHEDULER=%31[a-z]", named) != 1)
		snprintf(named, sizeof(named), "%s", NESTED_DEFAULT_SCHED);
	ck_assert_msg(strstr(args, "--marcel-bubble-scheduler") || strcmp(o.sched, named) == 0,
		      "%s %s %s ran under %s, not %s", env, prog, args, o.sched, named);
	const char *v = strstr(out, key);
	ck_assert_msg(v != NULL, "%s %s %s printed no '%s':\n%s", env, prog, args, key + 1, out);
	o.value = strtoull(v + strlen(key), NULL, strcmp(key, "\nsum ") ? 16 : 10);
	free(out);
	return o;
}

/* Threads a halving recursion creates for n items with cut-off c: sumtime's ranges and
 * the merge sort's halves both split n into ceil(n/2) and floor(n/2). */
static unsigned long halving_threads(unsigned long n, unsigned long c)
{
	return n <= c ? 0 : 2 + halving_threads(n - n / 2, c) + halving_threads(n / 2, c);
}

/* Runs sumtime on 1..n with cut-off c and checks the sum and the thread count; returns
 * the VP count it reported. */
static unsigned expect_sum(const char *env, const char *flags, long n, long c)
{
	char args[256];
	snprintf(args, sizeof(args), "--n %ld --cutoff %ld %s", n, c, flags);
	struct outcome o = outcome_of(env, SUMTIME, args, "\nsum ");
	unsigned long long want = (unsigned long long)n * (unsigned long long)(n + 1) / 2;
	ck_assert_msg(o.value == want, "%s sumtime %s: sum %llu, expected %llu", env, args, o.value, want);
	unsigned long t = halving_threads((unsigned long)n, (unsigned long)c);
	ck_assert_msg(o.threads == t, "%s sumtime %s: %lu threads, expected %lu", env, args, o.threads, t);
	return o.vps;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return (a > b) - (a < b);
}

/* The checksum of the n keys of seed s once sorted, by qsort rather than the example. */
static unsigned long long reference_checksum(long n, long s)
{
	uint64_t *k = malloc((size_t)n * sizeof(*k));
	ck_assert_ptr_nonnull(k);
	sk_fill(k, (size_t)n, (uint64_t)s);
	qsort(k, (size_t)n, sizeof(*k), cmp_u64);
	unsigned long long sum = sk_checksum(k, (size_t)n);
	free(k);
	return sum;
}

/* Runs nested-sort on n keys of seed s and checks the checksum (and, for merge sort, the
 * thread count); returns what it printed. */
static struct outcome expect_sorted(const char *env, const char *flags, long n, long c, const char *algo,
				    long s, unsigned long long want)
{
	char args[256];
	snprintf(args, sizeof(args), "--n %ld --cutoff %ld --algo %s --seed %ld %s", n, c, algo, s, flags);
	struct outcome o = outcome_of(env, SORT, args, "\nchecksum ");
	ck_assert_msg(o.value == want, "%s nested-sort %s: checksum %016llx, expected %016llx", env, args,
		      o.value, want);
	if (strcmp(algo, "merge") == 0) {
		unsigned long t = halving_threads((unsigned long)n, (unsigned long)c);
		ck_assert_msg(o.threads == t, "%s nested-sort %s: %lu threads, expected %lu", env, args,
			      o.threads, t);
	}
	return o;
}

START_TEST(test_sumtime)
{
	for (unsigned k = 0; k < NKINDS; k++) {
		expect_sum("", kinds[k], 1000, 1);
		expect_sum("", kinds[k], 1000, 7);
	}
	expect_sum("", "", 1, 1);        /* one leaf, no thread */
	expect_sum("", "", 2, 1);
	expect_sum("", "", 999, 3);
	expect_sum("", "", 1000, 1000);  /* below the cut-off: no thread */
	expect_sum("", "", 1000, 999);
	expect_sum("", "--reps 3 --no-seeds --seeds", 500, 2);  /* the last of the two wins */
	expect_sum("", "", 3000000, 1000000);  /* the sum needs 43 bits */
	/* Each layout says which it is: the pair bubble by default, the classic one asked. */
	const char *const layouts[][2] = { { "", "(seeds, a bubble per level)" },
					   { "--two-bubbles", "(seeds, two bubbles per level)" },
					   { "--no-seeds --no-bubbles", "(threads, no bubbles)" } };
	for (int l = 0; l < 3; l++) {
		int st;
		char args[64];
		snprintf(args, sizeof(args), "--n 100 %s", layouts[l][0]);
		char *out = run("", SUMTIME, args, &st);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, layouts[l][1]),
			      "sumtime %s: status %#x, no '%s' in:\n%s", args, st, layouts[l][1], out);
		free(out);
	}
}
END_TEST

START_TEST(test_sort)
{
	const long n = scaled(20000, 2000);
	unsigned long long want = reference_checksum(n, 42);
	const char *const algos[] = { "quick", "merge" };
	for (int a = 0; a < 2; a++) {
		unsigned long quick_threads = 0;
		for (unsigned k = 0; k < NKINDS; k++) {
			struct outcome o = expect_sorted("", kinds[k], n, 100, algos[a], 42, want);
			/* Quicksort's splits depend on the keys alone: every run makes as many. */
			if (k == 0)
				quick_threads = o.threads;
			ck_assert_msg(o.threads == quick_threads && o.threads > 0,
				      "nested-sort --algo %s %s: %lu threads, the first run %lu", algos[a],
				      kinds[k], o.threads, quick_threads);
		}
		expect_sorted("", "", n, 16, algos[a], 42, want);
		expect_sorted("", "", n, n, algos[a], 42, want);  /* sequential */
		expect_sorted("", "--reps 2", n, 1000, algos[a], 42, want);
		expect_sorted("", "", n, 100, algos[a], 0, reference_checksum(n, 0));
		for (long small = 1; small <= 3; small++)
			expect_sorted("", "", small, 1, algos[a], 7, reference_checksum(small, 7));
		expect_sorted("", "", 17, 1, algos[a], 7, reference_checksum(17, 7));
	}
	/* The defaults (quicksort, seed 1) give the reference too. */
	char args[64];
	snprintf(args, sizeof(args), "--n %ld", n);
	struct outcome o = outcome_of("", SORT, args, "\nchecksum ");
	ck_assert_uint_eq(o.value, reference_checksum(n, 1));
}
END_TEST

/* Every number, every key a thread of its own: thousands of threads, a dozen levels
 * deep, a bubble per level. */
START_TEST(test_deep)
{
	const long n = scaled(4096, 256);
	for (unsigned k = 0; k < NKINDS; k++)
		expect_sum("", kinds[k], n, 1);
	unsigned long long want = reference_checksum(n, 5);
	for (unsigned k = 0; k < 2; k++) {
		expect_sorted("", kinds[k], n, 1, "merge", 5, want);
		struct outcome o = expect_sorted("", kinds[k], n, 1, "quick", 5, want);
		/* Down to single keys, quicksort creates two threads per key but one. */
		ck_assert_uint_eq(o.threads, 2 * (unsigned long)n - 2);
	}
}
END_TEST

START_TEST(test_strategies)
{
	const long n = scaled(5000, 500), sum_n = scaled(300, 60);
	unsigned long long want = reference_checksum(n, 3);
	char env[256];
	for (unsigned s = 0; s < sizeof(strategies) / sizeof(strategies[0]); s++)
		for (int synth = 0; synth < 2; synth++) {
			snprintf(env, sizeof(env), "MARCEL_BUBBLE_SCHEDULER=%s %s", strategies[s], synth ? SYNTH : "");
			unsigned vps = expect_sum(env, "", sum_n, 1);
			if (synth)
				ck_assert_uint_eq(vps, 8);
			expect_sum(env, "--no-seeds", sum_n, 1);
			expect_sum(env, "--two-bubbles", sum_n, 1);
			expect_sorted(env, "", n, 50, "quick", 3, want);
			expect_sorted(env, "--no-seeds", n, 50, "merge", 3, want);
		}
}
END_TEST

START_TEST(test_runtime_options)
{
	const long n = scaled(5000, 500);
	unsigned long long want = reference_checksum(n, 9);
	char env[64];
	for (unsigned nvp = 1; nvp <= 4; nvp++) {
		snprintf(env, sizeof(env), "MARCEL_NVP=%u", nvp);
		ck_assert_uint_eq(expect_sum(env, "", 700, 1), nvp);
		ck_assert_uint_eq(expect_sorted(env, "", n, 40, "quick", 9, want).vps, nvp);
		ck_assert_uint_eq(expect_sorted(env, "", n, 40, "merge", 9, want).vps, nvp);
	}
	/* The runtime's own option, before the program's. */
	struct outcome o = outcome_of("", SUMTIME, "--marcel-nvp 3 --n 700", "\nsum ");
	ck_assert_uint_eq(o.vps, 3);
	ck_assert_uint_eq(o.value, 700ULL * 701 / 2);
	o = outcome_of("", SUMTIME, "--marcel-bubble-scheduler steal --n 700", "\nsum ");
	ck_assert_str_eq(o.sched, "steal");
	o = outcome_of("MARCEL_BUBBLE_SCHEDULER=null", SORT, "--marcel-bubble-scheduler=gang --n 700", "\nchecksum ");
	ck_assert_str_eq(o.sched, "gang");
	ck_assert_uint_eq(o.value, reference_checksum(700, 1));
}
END_TEST

/* A bad command line: status 2 and a message naming the culprit, then the usage. */
static void expect_usage_error(const char *prog, const char *args, const char *named)
{
	char path[1024];
	snprintf(path, sizeof(path), MA_EXAMPLES_DIR "/%s", prog);
	ma_example_expect_usage_error(path, args, named, NULL);
}

/* Bad command lines, with what the message must name. */
static const char *const bad_both[][2] = {
	{ "--n 10 --bogus", "unknown option '--bogus'" },
	{ "--n", "'--n' needs a value" },
	{ "--n 0", "'--n': '0' is not a whole number from 1 to 1000000000" },
	{ "--n 1e3", "'--n': '1e3'" },
	{ "--n -5", "'--n': '-5'" },
	{ "--n 1000000001", "'--n'" },
	{ "--n 99999999999999999999999", "'--n'" },
	{ "--cutoff 0", "'--cutoff'" },
	{ "--cutoff ' 5'", "'--cutoff'" },
	{ "--reps 0", "'--reps': '0' is not a whole number from 1 to 1000" },
	{ "--seeds=1", "'--seeds=1'" },
	{ "-n 5", "'-n'" },
};
static const char *const bad_sort[][2] = {
	{ "--algo heap", "'--algo': 'heap' is not one of quick, merge" },
	{ "--algo", "'--algo' needs a value" },
	{ "--seed -1", "'--seed'" },
	{ "--seed x", "'--seed'" },
};

START_TEST(test_bad_options)
{
	for (unsigned b = 0; b < sizeof(bad_both) / sizeof(bad_both[0]); b++) {
		expect_usage_error(SUMTIME, bad_both[b][0], bad_both[b][1]);
		expect_usage_error(SORT, bad_both[b][0], bad_both[b][1]);
	}
	for (unsigned b = 0; b < sizeof(bad_sort) / sizeof(bad_sort[0]); b++)
		expect_usage_error(SORT, bad_sort[b][0], bad_sort[b][1]);
	expect_usage_error(SUMTIME, "--algo quick", "'--algo'");  /* not sumtime's */
	/* A bad runtime option is marcel_init's to report (naming it); a usage error too. */
	int st;
	char *out = run("", SUMTIME, "--marcel-nvp zero", &st);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2 && strstr(out, "--marcel-nvp") != NULL,
		      "sumtime --marcel-nvp zero: status %#x:\n%s", st, out);
	free(out);
}
END_TEST

START_TEST(test_help)
{
	const char *const progs[] = { SUMTIME, SORT };
	for (int p = 0; p < 2; p++) {
		int st;
		char *out = run("", progs[p], "--help", &st);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s --help: status %#x", progs[p], st);
		ck_assert_msg(strncmp(out, "usage: ", 7) == 0 && strstr(out, "--no-bubbles") != NULL &&
			      strstr(out, "--cutoff") != NULL, "%s --help printed:\n%s", progs[p], out);
		free(out);
	}
}
END_TEST

int main(void)
{
	/* Every run names what it needs in its command line (Check forks each test from
	 * here). */
	ma_example_clean_env();
	const TTest *tests[] = { test_sumtime, test_sort, test_deep, test_strategies, test_runtime_options,
				 test_bad_options, test_help };
	Suite *s = suite_create("nested");
	TCase *tc = tcase_create("examples");
	for (unsigned t = 0; t < sizeof(tests) / sizeof(tests[0]); t++)
		tcase_add_test(tc, tests[t]);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return ma_test_run(s);
}
