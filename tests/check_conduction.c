/*
 * examples/conduction: the four variants of the heat-conduction stencil (plain pthreads,
 * pinned pthreads, the marcel port with bubbles, OpenMP) print bit-identical checksums,
 * whatever the thread count, the bubble strategy or the topology, and that checksum is
 * the one a plain sequential computation gives. Bad options exit with status 2, naming
 * the option. The marcel variant reports what hwprio did (MARCEL_HWPRIO, --report) in
 * the shape its usage gives, with sane values, and the same checksum.
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

/* ---- conduction/marcel's report: what hwprio did. */

/* On two synthetic SMT cores (4 VPs), 4 stripes: iterations of about a millisecond here,
 * long enough for hwprio to measure many of them (shorter rounds merge). */
#define HW_ENV "MARCEL_HWPRIO=none MARCEL_TOPOLOGY='core:2 pu:2' MARCEL_SMT=1"
#define HW_ARGS "--size 1024x512 --iters 40 --threads 4 --imbalance"
#define HW_N 1024
#define HW_ITERS 40
#define HW_STRIPES 4
#define HW_VPS 4
#define HW_BAND ((HW_N - 2) / 8)

/* What a run printed, after the size line and before the checksum. */
struct report {
	int legend, niters, nstripes, hwprio_lines;
	int levels_seen, nonzero_level;
	double imbalance;
	unsigned measured, changes;
	char checksum[17];
	int nlines;
};

/* Reads "iter T MS ms  H:C/W ... [levels L ...]": the iterations in order, every stripe's
 * rows in the band (they hold the whole band, which starts in the first stripe and ends
 * in the last), its fractions in [0, 1] with compute + wait <= 1, every VP's level in
 * -2..+2. */
static void parse_iter(const char *line, int hwprio, struct report *rep)
{
	long t, hot;
	double ms, c, w;
	int used;
	ck_assert_msg(sscanf(line, "iter %ld %lf ms%n", &t, &ms, &used) == 2 && t == rep->niters && ms >= 0,
		      "iteration %d: bad line '%s'", rep->niters, line);
	rep->niters++;
	line += used;
	long band = 0;
	for (int s = 0; s < HW_STRIPES; s++) {
		ck_assert_msg(sscanf(line, " %ld:%lf/%lf%n", &hot, &c, &w, &used) == 3,
			      "iteration %ld: stripe %d missing in '%s'", t, s, line);
		line += used;
		/* Three decimals each: the sum may exceed 1 by two roundings. */
		ck_assert_msg(c >= 0 && c <= 1 && w >= 0 && w <= 1 && c + w <= 1.0011,
			      "iteration %ld, stripe %d: compute %g, wait %g", t, s, c, w);
		ck_assert_msg(hot >= 0 && hot <= HW_BAND, "iteration %ld, stripe %d: %ld rows in the band", t, s, hot);
		if ((t == 0 && s == 0) || (t == HW_ITERS - 1 && s == HW_STRIPES - 1))
			ck_assert_msg(hot == HW_BAND, "iteration %ld: the band is not all in stripe %d (%ld rows)", t, s, hot);
		band += hot;
	}
	ck_assert_msg(band == HW_BAND, "iteration %ld: %ld rows in the band, not %d", t, band, HW_BAND);
	if (!hwprio) {
		ck_assert_msg(*line == 0, "iteration %ld: '%s' after the stripes, hwprio off", t, line);
		return;
	}
	ck_assert_msg(strncmp(line, "  levels", 8) == 0, "iteration %ld: no levels: '%s'", t, line);
	line += 8;
	for (int v = 0; v < HW_VPS; v++) {
		int l;
		ck_assert_msg(sscanf(line, " %d%n", &l, &used) == 1, "iteration %ld: VP %d's level missing", t, v);
		line += used;
		ck_assert_msg(l >= -2 && l <= 2, "iteration %ld: VP %d at level %d", t, v, l);
		rep->nonzero_level |= l != 0;
	}
	ck_assert_msg(*line == 0, "iteration %ld: more than %d levels: '%s'", t, HW_VPS, line);
	rep->levels_seen++;
}

/* Reads "stripe S: compute X s (P%), wait Y s (Q%)[; compute A% in the first 2 iterations,
 * B% in the last N]": the stripes in order, the parts of the time in [0, 100]. */
static void parse_stripe(const char *line, int hwprio, struct report *rep)
{
	int s, used = 0, first, last;
	double c, cp, w, wp, early, late;
	ck_assert_msg(sscanf(line, "stripe %d: compute %lf s (%lf%%), wait %lf s (%lf%%)%n", &s, &c, &cp, &w, &wp,
			     &used) == 5 && s == rep->nstripes,
		      "summary line %d: '%s'", rep->nstripes, line);
	rep->nstripes++;
	ck_assert_msg(c >= 0 && w >= 0 && cp >= 0 && wp >= 0 && cp + wp <= 100.11, "stripe %d: '%s'", s, line);
	line += used;
	if (!hwprio) {
		ck_assert_msg(*line == 0, "stripe %d: '%s' after the totals, hwprio off", s, line);
		return;
	}
	ck_assert_msg(sscanf(line, "; compute %lf%% in the first %d iterations, %lf%% in the last %d%n", &early, &first,
			     &late, &last, &used) == 4 && line[used] == 0,
		      "stripe %d: no utilisation before and after hwprio: '%s'", s, line);
	ck_assert_msg(first == 2 && last == HW_ITERS - HW_ITERS / 2, "stripe %d: the first %d, the last %d iterations", s,
		      first, last);
	ck_assert_msg(early >= 0 && early <= 100.05 && late >= 0 && late <= 100.05, "stripe %d: %g%% then %g%%", s,
		      early, late);
}

/* Runs conduction/marcel (env, args) and reads its report, asserting its shape: a line per
 * iteration with --report (lines), then the totals, with hwprio's parts when it is on;
 * neither: no report at all. */
static void report_run(const char *env, const char *args, int hwprio, int lines, struct report *rep)
{
	int st;
	char *out = run(env, "marcel", args, &st);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s marcel %s: status %#x:\n%s", env, args, st, out);
	memset(rep, 0, sizeof(*rep));
	for (char *line = strtok(out, "\n"); line != NULL; line = strtok(NULL, "\n"), rep->nlines++) {
		unsigned a, b;
		if (rep->nlines == 0)
			ck_assert_msg(strncmp(line, "conduction/marcel: 2D ", 22) == 0, "first line '%s'", line);
		else if (strncmp(line, "# iteration", 11) == 0)
			rep->legend++;
		else if (strncmp(line, "iter ", 5) == 0)
			parse_iter(line, hwprio, rep);
		else if (strncmp(line, "stripe ", 7) == 0)
			parse_stripe(line, hwprio, rep);
		else if (strncmp(line, "imbalance ", 10) == 0)
			ck_assert_msg(sscanf(line, "imbalance %lf", &rep->imbalance) == 1 && rep->imbalance >= 1.0,
				      "'%s'", line);
		else if (sscanf(line, "hwprio: %u iterations measured, levels changed after %u", &a, &b) == 2) {
			rep->measured = a;
			rep->changes = b;
			rep->hwprio_lines++;
		} else if (strncmp(line, "checksum ", 9) == 0 && strspn(line + 9, "0123456789abcdef") == 16)
			memcpy(rep->checksum, line + 9, 17);
		else
			ck_assert_msg(strncmp(line, "time ", 5) == 0, "%s marcel %s: unexpected line '%s'", env, args, line);
	}
	free(out);
	ck_assert_msg(rep->legend == lines && rep->niters == (lines ? HW_ITERS : 0) &&
			      rep->levels_seen == (lines && hwprio ? HW_ITERS : 0),
		      "%s marcel %s: %d legends, %d iteration lines, %d with levels", env, args, rep->legend,
		      rep->niters, rep->levels_seen);
	int totals = hwprio || lines;
	ck_assert_msg(rep->nstripes == (totals ? HW_STRIPES : 0) && (rep->imbalance >= 1.0) == totals &&
			      rep->hwprio_lines == hwprio,
		      "%s marcel %s: %d stripes in the totals, imbalance %g, %d hwprio lines", env, args, rep->nstripes,
		      rep->imbalance, rep->hwprio_lines);
	ck_assert_msg(rep->checksum[0] != 0, "%s marcel %s: no checksum", env, args);
	if (!hwprio)
		return;
	/* Rounds of the barrier: the initialisation's and one per iteration, some merged. */
	ck_assert_msg(rep->measured > 0 && rep->measured <= HW_ITERS + 1 && rep->changes <= rep->measured,
		      "hwprio measured %u iterations of %d and changed levels after %u", rep->measured, HW_ITERS + 1,
		      rep->changes);
	ck_assert_msg(!rep->nonzero_level || rep->changes > 0, "levels other than 0 shown, but hwprio changed none");
}

START_TEST(test_hwprio_report)
{
	char ref[17];
	struct report rep;
	checksum("", "simple", HW_ARGS, ref);
	/* hwprio off: the output is what it always was, the checksum too. */
	report_run("", HW_ARGS, 0, 0, &rep);
	ck_assert_msg(rep.nlines == 3, "hwprio off: %d lines", rep.nlines);
	ck_assert_str_eq(rep.checksum, ref);
	/* hwprio on (backend none: it decides, changes nothing): the totals; with --report, a
	 * line per iteration; measuring changes nothing in the result. */
	report_run(HW_ENV, HW_ARGS, 1, 0, &rep);
	ck_assert_str_eq(rep.checksum, ref);
	report_run(HW_ENV, HW_ARGS " --report", 1, 1, &rep);
	ck_assert_str_eq(rep.checksum, ref);
	/* --report without hwprio: the fractions, no levels, no hwprio lines. */
	report_run("MARCEL_TOPOLOGY='core:2 pu:2' MARCEL_SMT=1", HW_ARGS " --report", 0, 1, &rep);
	ck_assert_str_eq(rep.checksum, ref);
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
	/* Only the marcel variant reports; the others say so. */
	for (int v = 0; v < NVARIANTS; v++)
		if (strcmp(variants[v], "marcel") != 0)
			expect_usage_error(variants[v], "--size 96 --report", "'--report'");
	/* marcel_init names a bad runtime option itself (no usage); still a usage error. */
	char *out = ma_example_run_expect("", DIR "marcel", "--marcel-nvp zero", 30, 2);
	ck_assert_msg(strstr(out, "--marcel-nvp") != NULL, "marcel --marcel-nvp zero: not named:\n%s", out);
	free(out);
}
END_TEST

/* hwprio's variables, which ma_example_clean_env leaves: a run without them has it off. */
static void clean_hwprio_env(void)
{
	unsetenv("MARCEL_HWPRIO");
	unsetenv("MARCEL_HWPRIO_POLICY");
	unsetenv("MARCEL_SMT");
}

int main(void)
{
	Suite *s = suite_create("conduction");
	TCase *tc = tcase_create("examples");
	tcase_add_checked_fixture(tc, ma_example_clean_env, NULL);
	tcase_add_checked_fixture(tc, clean_hwprio_env, NULL);
	tcase_add_test(tc, test_reference);
	tcase_add_test(tc, test_variants_agree);
	tcase_add_test(tc, test_variants_agree_3d);
	tcase_add_test(tc, test_strategies);
	tcase_add_test(tc, test_imbalance);
	tcase_add_test(tc, test_hwprio_report);
	tcase_add_test(tc, test_bad_options);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return ma_test_run(s);
}
