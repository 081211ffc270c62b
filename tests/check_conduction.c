/*
 * examples/conduction: the four variants of the heat-conduction stencil (plain pthreads,
 * pinned pthreads, the marcel port with bubbles, OpenMP) print bit-identical checksums,
 * whatever the thread count, the bubble strategy or the topology, and that checksum is
 * the one a plain sequential computation gives. Bad options exit with status 2, naming
 * the option.
 *
 * The examples are separate programs, run by path (MA_EXAMPLES_DIR) through popen; the
 * runtime is never started in this process.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdint.h>
#include "ma_example_test.h"

#ifndef MA_EXAMPLES_DIR
#error "MA_EXAMPLES_DIR (the build's examples directory) must be defined"
#endif
#ifndef MA_HAVE_OPENMP
#error "MA_HAVE_OPENMP (1 when examples/conduction/openmp is built) must be defined"
#endif

/* libgomp is not built with ThreadSanitizer, which then sees its barriers as races: the
 * OpenMP variant only runs in builds without it. */
#if MA_HAVE_OPENMP && !defined(MA_TEST_TSAN)
#define RUN_OPENMP 1
#else
#define RUN_OPENMP 0
#endif

#define DIR MA_EXAMPLES_DIR "/conduction/"
#define SMALL "--size 96 --iters 50"

static const char *const variants[] = { "simple", "fixed", "marcel", "openmp" };
#define NVARIANTS (RUN_OPENMP ? 4 : 3)

static const char *const strategies[] = { "null", "burst", "spread", "cache", "steal", "gang", "memory" };

/* Runs "env DIR/variant args" (ma_example_run): its output, to free, and its status. */
static char *run(const char *env, const char *variant, const char *args, int *status)
{
	char path[1024];
	snprintf(path, sizeof(path), DIR "%s", variant);
	return ma_example_run(env, path, args, 60, status);
}

/* Runs a variant that must succeed; returns its checksum (16 hex digits) in sum. */
static void checksum(const char *env, const char *variant, const char *args, char sum[17])
{
	int st;
	char *out = run(env, variant, args, &st);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s %s %s: status %#x, output:\n%s",
		      env, variant, args, st, out);
	const char *line = strstr(out, "\nchecksum ");
	ck_assert_msg(line != NULL && strspn(line + 10, "0123456789abcdef") == 16,
		      "%s %s %s printed no checksum:\n%s", env, variant, args, out);
	memcpy(sum, line + 10, 16);
	sum[16] = 0;
	free(out);
}

/* Asserts that a run gives the checksum @p want. */
static void expect(const char *want, const char *env, const char *variant, const char *args)
{
	char got[17];
	checksum(env, variant, args, got);
	ck_assert_msg(strcmp(got, want) == 0, "%s %s %s: checksum %s, expected %s", env, variant, args,
		      got, want);
}

START_TEST(test_reference)
{
	/* From a sequential Python rendering of the same update (same expression, same
	 * order, fixed-order FNV-1a of the final cells): the shared kernel computes what it
	 * says, not merely the same thing in every variant. */
	expect("41cf4875d1a274b5", "", "simple", "--size 12x10 --iters 5 --threads 3");
}
END_TEST

START_TEST(test_variants_agree)
{
	char ref[17];
	checksum("", "simple", SMALL " --threads 4", ref);
	for (int v = 0; v < NVARIANTS; v++)
		expect(ref, "OMP_PROC_BIND=close OMP_PLACES=cores", variants[v], SMALL " --threads 4");
	/* The stripes change with the thread count; the cells' values must not. */
	expect(ref, "", "simple", SMALL " --threads 1");
	expect(ref, "", "simple", SMALL " --threads 7");
	expect(ref, "", "fixed", SMALL " --threads 3");
	expect(ref, "", "marcel", SMALL " --threads 5");
	expect(ref, "", "marcel", SMALL " --threads 94");  /* one interior row each */
	if (RUN_OPENMP)
		expect(ref, "", "openmp", SMALL " --threads 6");
	expect(ref, "", "marcel", "--marcel-nvp 1 " SMALL " --threads 4");
}
END_TEST

START_TEST(test_variants_agree_3d)
{
	char ref[17];
	const char *args = "--3d --size 24x20x16 --iters 20 --threads 4";
	checksum("", "simple", args, ref);
	for (int v = 0; v < NVARIANTS; v++)
		expect(ref, "", variants[v], args);
	expect(ref, "", "marcel", "--3d --size 24x20x16 --iters 20 --threads 9");
	expect(ref, "", "simple", "--3d --size 24x20x16 --iters 20 --threads 1");
}
END_TEST

START_TEST(test_strategies)
{
	char ref[17], env[256];
	checksum("", "simple", SMALL " --threads 4", ref);
	for (unsigned s = 0; s < sizeof(strategies) / sizeof(strategies[0]); s++) {
		snprintf(env, sizeof(env), "MARCEL_BUBBLE_SCHEDULER=%s", strategies[s]);
		expect(ref, env, "marcel", SMALL " --threads 4");
		/* 16 workers on a synthetic 32-PU machine: bubbles burst at several levels. */
		snprintf(env, sizeof(env), "MARCEL_BUBBLE_SCHEDULER=%s MARCEL_TOPOLOGY='%s'", strategies[s],
			 MA_TEST_SYNTH32);
		expect(ref, env, "marcel", SMALL " --threads 16");
	}
}
END_TEST

/* The imbalanced kernel (--imbalance), computed here from its description alone: 2D, a
 * band of max(1, (n-2)/8) rows starting at row 1 + t(n-2-w)/(iters-1) whose cells take
 * 8 sub-steps of alpha/8 each, every other interior cell one step of alpha = 0.2. */
static void reference_imbalanced(long n, long m, long iters, char out[17])
{
	double *g[2] = { calloc((size_t)(n * m), sizeof(double)), calloc((size_t)(n * m), sizeof(double)) };
	ck_assert(g[0] && g[1]);
	for (long i = 0; i < n; i++)
		for (long j = 0; j < m; j++) {
			double v = i == 0 ? 100.0 : j == 0 ? 50.0 : (i == n - 1 || j == m - 1) ? 0.0
							: (double)((i * 31 + j * 17) % 101) * 0.25;
			g[0][i * m + j] = g[1][i * m + j] = v;
		}
	long w = (n - 2) / 8 > 0 ? (n - 2) / 8 : 1;
	for (long t = 0; t < iters; t++) {
		const double *a = g[t % 2];
		double *b = g[(t + 1) % 2];
		long first = 1 + t * (n - 2 - w) / (iters > 1 ? iters - 1 : 1);
		for (long i = 1; i < n - 1; i++)
			for (long j = 1; j < m - 1; j++) {
				const double *c = a + i * m + j;
				double around = (c[-m] + c[m]) + (c[-1] + c[1]), v = *c;
				if (i >= first && i < first + w)
					for (int q = 0; q < 8; q++)
						v = v + (0.2 / 8) * (around - 4 * v);
				else
					v = v + 0.2 * (around - 4 * v);
				b[i * m + j] = v;
			}
	}
	uint64_t h = 0xcbf29ce484222325ULL;
	for (long c = 0; c < n * m; c++) {
		uint64_t bits;
		memcpy(&bits, &g[iters % 2][c], sizeof(bits));
		h = (h ^ bits) * 0x100000001b3ULL;
	}
	snprintf(out, 17, "%016" PRIx64, h);
	free(g[0]);
	free(g[1]);
}

/* --imbalance: the kernel computes what it says, every variant agrees, and the marcel port
 * completes under every strategy, here and on the synthetic machine. */
START_TEST(test_imbalance)
{
	char ref[17], plain[17], env[256];
	reference_imbalanced(40, 30, 12, ref);
	expect(ref, "", "simple", "--size 40x30 --iters 12 --threads 3 --imbalance");
	checksum("", "simple", "--size 40x30 --iters 12 --threads 3", plain);
	ck_assert_msg(strcmp(ref, plain) != 0, "--imbalance changed nothing");

	const char *args = SMALL " --threads 12 --imbalance";
	checksum("", "simple", args, ref);
	for (int v = 0; v < NVARIANTS; v++)
		expect(ref, "", variants[v], args);
	for (unsigned s = 0; s < sizeof(strategies) / sizeof(strategies[0]); s++) {
		snprintf(env, sizeof(env), "MARCEL_BUBBLE_SCHEDULER=%s", strategies[s]);
		expect(ref, env, "marcel", args);
		snprintf(env, sizeof(env), "MARCEL_BUBBLE_SCHEDULER=%s MARCEL_TOPOLOGY='%s'", strategies[s],
			 MA_TEST_SYNTH32);
		expect(ref, env, "marcel", args);
	}
}
END_TEST

/* A bad command line: status 2 and a message naming the culprit, from every variant. */
static void expect_usage_error(const char *variant, const char *args, const char *named)
{
	char path[1024];
	snprintf(path, sizeof(path), DIR "%s", variant);
	ma_example_expect_usage_error(path, args, named, NULL);
}

START_TEST(test_bad_options)
{
	for (int v = 0; v < NVARIANTS; v++) {
		expect_usage_error(variants[v], "--size 96 --bogus", "'--bogus'");
		expect_usage_error(variants[v], "--threads 0", "'--threads'");
	}
	expect_usage_error("simple", "--iters", "'--iters'");
	expect_usage_error("simple", "--size 96 --threads 95", "'--threads'");
	expect_usage_error("marcel", "--size 2", "'--size'");
	expect_usage_error("marcel", "--size 8x8x8", "--3d");
	expect_usage_error("marcel", "--iters 1e3", "'--iters'");
	/* marcel_init names a bad runtime option itself (no usage); still a usage error. */
	char *out = ma_example_run_expect("", DIR "marcel", "--marcel-nvp zero", 30, 2);
	ck_assert_msg(strstr(out, "--marcel-nvp") != NULL, "marcel --marcel-nvp zero: not named:\n%s", out);
	free(out);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("conduction");
	TCase *tc = tcase_create("examples");
	tcase_add_checked_fixture(tc, ma_example_clean_env, NULL);
	tcase_add_test(tc, test_reference);
	tcase_add_test(tc, test_variants_agree);
	tcase_add_test(tc, test_variants_agree_3d);
	tcase_add_test(tc, test_strategies);
	tcase_add_test(tc, test_imbalance);
	tcase_add_test(tc, test_bad_options);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return ma_test_run(s);
}
