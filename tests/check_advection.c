/*
 * examples/advection: the conduction drivers with the semi-Lagrangian advection kernel.
 * The four variants print bit-identical checksums whatever the thread count, the bubble
 * strategy or the topology; the checksum is the one of a sequential re-implementation of
 * the step written here; the field really moves; bad options exit with status 2, naming
 * the option and the advection program.
 *
 * The examples are separate programs, run by path (MA_EXAMPLES_DIR) through popen; the
 * runtime is never started in this process.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include "ma_example_test.h"

#ifndef MA_EXAMPLES_DIR
#error "MA_EXAMPLES_DIR (the build's examples directory) must be defined"
#endif
#ifndef MA_HAVE_OPENMP
#error "MA_HAVE_OPENMP (1 when examples/advection/openmp is built) must be defined"
#endif

/* libgomp is not built with ThreadSanitizer, which then sees its barriers as races. */
#if MA_HAVE_OPENMP && !defined(MA_TEST_TSAN)
#define NVARIANTS 4
#else
#define NVARIANTS 3
#endif
static const char *const variants[] = { "simple", "fixed", "marcel", "openmp" };
static const char *const strategies[] = { "null", "burst", "spread", "cache", "steal", "gang", "memory" };

#define SMALL "--size 64x48 --iters 30"
#define SMALL3 "--3d --size 20x16x12 --iters 10"
/* 16 single-PU cores on 4 NUMA nodes, a worker each: bubbles burst at two levels. */
#define SYNTH16 "MARCEL_TOPOLOGY='numa:4 core:4' MARCEL_NVP=16"

/* Runs "env advection/variant args" (stderr merged); asserts the exit status @p want and
 * returns the output (malloc'd). */
static char *run(const char *env, const char *variant, const char *args, int want)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/advection/%s", MA_EXAMPLES_DIR, variant);
	return ma_example_run_expect(env, path, args, 60, want);
}

/* The checksum a successful run prints, as a number. */
static uint64_t checksum(const char *env, const char *variant, const char *args)
{
	char *out = run(env, variant, args, 0);
	const char *line = strstr(out, "\nchecksum ");
	ck_assert_msg(line != NULL && strspn(line + 10, "0123456789abcdef") == 16,
		      "%s %s %s printed no checksum:\n%s", env, variant, args, out);
	uint64_t sum = strtoull(line + 10, NULL, 16);
	free(out);
	return sum;
}

static void expect(uint64_t want, const char *env, const char *variant, const char *args)
{
	uint64_t got = checksum(env, variant, args);
	ck_assert_msg(got == want, "%s %s %s: checksum %016" PRIx64 ", expected %016" PRIx64, env, variant,
		      args, got, want);
}

/* ---- The reference: the same update, sequential, on a whole grid. The arithmetic must
 * be the kernel's to the bit (same expressions, same order; -ffp-contract=off here too),
 * the structure is not: no stripes, no buffers swapped by iteration parity. */

struct grid {
	int dims;
	long ext[3];     /* points per axis; ext[2] = 1 in 2D */
	double *v;
};

static double *cell(const struct grid *g, long i, long j, long l)
{
	return &g->v[(i * g->ext[1] + j) * g->ext[2] + l];
}

static double ref_initial(const struct grid *g, long i, long j, long l)
{
	int wall = i == g->ext[0] - 1 || j == 0 || j == g->ext[1] - 1 ||
		   (g->dims == 3 && (l == 0 || l == g->ext[2] - 1));
	if (i == 0 || wall)
		return i == 0 ? 1.0 : 0.0;
	double x = (double)i / (double)(g->ext[0] - 1) - 0.3;
	double y = (double)j / (double)(g->ext[1] - 1) - 0.5;
	double z = g->dims == 3 ? (double)l / (double)(g->ext[2] - 1) - 0.5 : 0.0;
	return (x * x + y * y + z * z < 0.04 ? 1.0 : 0.0) + (double)((i * 31 + j * 17 + l * 7) % 101) * 0.001;
}

/* f(s) = 16 s^2 (1-s)^2 and its derivative. */
static double ref_f(double s)
{
	return 16.0 * (s * (1.0 - s)) * (s * (1.0 - s));
}

static double ref_df(double s)
{
	return 32.0 * (s * (1.0 - s)) * (1.0 - 2.0 * s);
}

/* The swirl at grid position p, in cells per step. */
static void ref_velocity(const struct grid *g, const double p[3], double v[3])
{
	long longest = 1;
	double u[3], sc[3];
	for (int d = 0; d < g->dims; d++)
		longest = g->ext[d] - 1 > longest ? g->ext[d] - 1 : longest;
	for (int d = 0; d < g->dims; d++) {
		u[d] = p[d] * (1.0 / (double)(g->ext[d] - 1));
		sc[d] = (double)(g->ext[d] - 1) * (0.3 / (double)longest);
	}
	v[0] = sc[0] * (ref_f(u[0]) * ref_df(u[1]));
	v[2] = 0.0;
	if (g->dims == 2) {
		v[1] = sc[1] * -(ref_df(u[0]) * ref_f(u[1]));
	} else {
		v[1] = sc[1] * (ref_f(u[1]) * ref_df(u[2]) - ref_df(u[0]) * ref_f(u[1]));
		v[2] = sc[2] * -(ref_df(u[1]) * ref_f(u[2]));
	}
}

static double mix(double a, double b, double t)
{
	return (1.0 - t) * a + t * b;
}

/* The departure point of the cell at p after @p sub steps back along the flow: cell
 * c[] below it and fractions f[] beyond. */
static void ref_departure(const struct grid *g, const double p[3], int sub, long c[3], double f[3])
{
	double x[3] = { p[0], p[1], p[2] }, v[3], mid[3];
	for (int s = 0; s < sub; s++) {
		ref_velocity(g, x, v);
		for (int d = 0; d < 3; d++)
			mid[d] = x[d] - 0.5 * (1.0 / sub) * v[d];
		ref_velocity(g, mid, v);
		for (int d = 0; d < 3; d++)
			x[d] = x[d] - (1.0 / sub) * v[d];
	}
	for (int d = 0; d < 3; d++) {
		c[d] = 0;
		f[d] = 0.0;
	}
	for (int d = 0; d < g->dims; d++) {
		/* What makes the step a stencil: reads at most two rows (cells) away. */
		ck_assert_msg(fabs(x[d] - p[d]) < 1.9, "departure %g cells away along axis %d", fabs(x[d] - p[d]), d);
		double y = fmin(fmax(x[d], 0.0), (double)(g->ext[d] - 1));
		c[d] = (long)y < g->ext[d] - 2 ? (long)y : g->ext[d] - 2;
		f[d] = y - (double)c[d];
	}
}

/* One semi-Lagrangian step from @p in to @p out (interior cells only); rows [hot0, hot1)
 * trace back in 8 sub-steps (--imbalance). */
static void ref_step(const struct grid *in, struct grid *out, long hot0, long hot1)
{
	long lo3 = in->dims == 3, hi3 = in->dims == 3 ? in->ext[2] - 1 : 1;
	for (long i = 1; i < in->ext[0] - 1; i++)
		for (long j = 1; j < in->ext[1] - 1; j++)
			for (long l = lo3; l < hi3; l++) {
				double p[3] = { (double)i, (double)j, (double)l }, f[3], side[2];
				long c[3];
				ref_departure(in, p, i >= hot0 && i < hot1 ? 8 : 1, c, f);
				/* Along the last axis, then the middle one, then the first. */
				for (int a = 0; a < 2; a++) {
					double *e = cell(in, c[0] + a, c[1], c[2]);
					long dj = in->ext[2], dl = in->dims == 3;
					double near = dl ? mix(e[0], e[1], f[2]) : e[0];
					double far = dl ? mix(e[dj], e[dj + 1], f[2]) : e[dj];
					side[a] = mix(near, far, f[1]);
				}
				*cell(out, i, j, l) = mix(side[0], side[1], f[0]);
			}
}

/* Runs @p iters steps on an n x m (x k in 3D) grid, with the moving costly band if
 * @p imbalance; returns the final grid's FNV-1a hash and, in *moved, the largest change
 * of a cell, in *lo / *hi the field's bounds at the start and the end. */
static uint64_t reference(int dims, long n, long m, long k, long iters, int imbalance, double *moved, double lo[2],
			  double hi[2])
{
	struct grid g[2];
	size_t cells = (size_t)n * m * k;
	for (int b = 0; b < 2; b++) {
		g[b] = (struct grid){ dims, { n, m, k }, malloc(cells * sizeof(double)) };
		ck_assert_ptr_nonnull(g[b].v);
	}
	for (long i = 0; i < n; i++)
		for (long j = 0; j < m; j++)
			for (long l = 0; l < k; l++)
				*cell(&g[0], i, j, l) = *cell(&g[1], i, j, l) = ref_initial(&g[0], i, j, l);
	long width = (n - 2) / 8 > 0 ? (n - 2) / 8 : 1;
	for (long t = 0; t < iters; t++) {
		/* The band sweeps rows 1 .. n - 2 once, in equal moves. */
		long first = 1 + t * (n - 2 - width) / (iters > 1 ? iters - 1 : 1);
		ref_step(&g[0], &g[1], imbalance ? first : 0, imbalance ? first + width : 0);
		struct grid swap = g[0];
		g[0] = g[1];
		g[1] = swap;
	}
	uint64_t h = 0xcbf29ce484222325ULL;
	*moved = 0.0;
	lo[0] = lo[1] = 1e300;
	hi[0] = hi[1] = -1e300;
	for (size_t c = 0; c < cells; c++) {
		uint64_t bits;
		memcpy(&bits, &g[0].v[c], sizeof(bits));
		h = (h ^ bits) * 0x100000001b3ULL;
		long i = (long)(c / ((size_t)m * k)), j = (long)(c / (size_t)k % (size_t)m), l = (long)(c % (size_t)k);
		double start = ref_initial(&g[0], i, j, l);
		*moved = fmax(*moved, fabs(g[0].v[c] - start));
		lo[0] = fmin(lo[0], start), hi[0] = fmax(hi[0], start);
		lo[1] = fmin(lo[1], g[0].v[c]), hi[1] = fmax(hi[1], g[0].v[c]);
	}
	free(g[0].v);
	free(g[1].v);
	return h;
}

/* The program against the reference, on one grid, before and after advection, with the
 * costly band if @p imbalance. */
static void check_against_reference(int dims, long n, long m, long k, long iters, int imbalance,
				    const char *variant, int threads)
{
	char grid[64], args[160];
	double moved, lo[2], hi[2];
	uint64_t start = reference(dims, n, m, k, 0, imbalance, &moved, lo, hi);
	uint64_t other = reference(dims, n, m, k, iters, !imbalance, &moved, lo, hi);
	uint64_t end = reference(dims, n, m, k, iters, imbalance, &moved, lo, hi);
	/* The blob (1 above a ripple of at most 0.1) must have travelled a good part of a
	 * cell, and interpolation only mixes existing values: nothing leaves the bounds. */
	ck_assert_msg(moved > 0.2, "%dD reference: the field barely moved (largest change %g)", dims, moved);
	ck_assert_msg(lo[1] >= lo[0] && hi[1] <= hi[0], "%dD reference: [%g, %g] left the initial [%g, %g]",
		      dims, lo[1], hi[1], lo[0], hi[0]);
	/* Sub-steps follow the curved flow more closely: other departure points. */
	ck_assert_msg(start != end && other != end, "%dD reference: the steps or the band change nothing", dims);
	if (dims == 2)
		snprintf(grid, sizeof(grid), "--size %ldx%ld", n, m);
	else
		snprintf(grid, sizeof(grid), "--3d --size %ldx%ldx%ld", n, m, k);
	snprintf(args, sizeof(args), "%s --threads %d --iters 0%s", grid, threads, imbalance ? " --imbalance" : "");
	expect(start, "", variant, args);
	snprintf(args, sizeof(args), "%s --threads %d --iters %ld%s", grid, threads, iters,
		 imbalance ? " --imbalance" : "");
	expect(end, "", variant, args);
}

START_TEST(test_reference)
{
	check_against_reference(2, 40, 33, 1, 25, 0, "simple", 3);
	check_against_reference(2, 40, 33, 1, 25, 1, "marcel", 38);  /* one interior row each */
	check_against_reference(3, 16, 13, 11, 8, 0, "marcel", 5);
	check_against_reference(3, 16, 13, 11, 8, 1, "simple", 4);
}
END_TEST

START_TEST(test_variants_agree)
{
	/* Departure points cross stripe edges, by more rows when stripes are thin (18
	 * threads: a plane each in 3D). openmp comes last, left out where it is not run. */
	static const struct { const char *variant; int threads; } more[] = {
		{ "simple", 1 }, { "fixed", 7 }, { "marcel", 3 }, { "marcel", 18 }, { "openmp", 6 },
	};
	static const char *const grids[] = { SMALL, SMALL3 };
	char args[128];
	for (int g = 0; g < 2; g++) {
		snprintf(args, sizeof(args), "%s --threads 4", grids[g]);
		uint64_t ref = checksum("", "simple", args);
		for (int v = 0; v < NVARIANTS; v++)
			expect(ref, "OMP_PROC_BIND=close OMP_PLACES=cores", variants[v], args);
		expect(ref, "MARCEL_NVP=1", "marcel", args);
		for (unsigned r = 0; r < sizeof(more) / sizeof(more[0]) - (NVARIANTS < 4); r++) {
			snprintf(args, sizeof(args), "%s --threads %d", grids[g], more[r].threads);
			expect(ref, "", more[r].variant, args);
		}
	}
}
END_TEST

START_TEST(test_strategies)
{
	/* 21 runs: fewer iterations where the runs are slower (MA_TEST_SCALE, ThreadSanitizer);
	 * what is tested here is placement, and a few iterations already cross VPs. */
	long iters = 30 / ma_test_scale_div() > 4 ? 30 / ma_test_scale_div() : 4;
	char grid[2][64], env[256], args[192];
	uint64_t ref[2];
	snprintf(grid[0], sizeof(grid[0]), "--size 64x48 --iters %ld", iters);
	snprintf(grid[1], sizeof(grid[1]), "--3d --size 20x16x12 --iters %ld", (iters + 2) / 3);
	for (int g = 0; g < 2; g++) {
		snprintf(args, sizeof(args), "%s --threads 4", grid[g]);
		ref[g] = checksum("", "simple", args);
	}
	for (unsigned s = 0; s < sizeof(strategies) / sizeof(strategies[0]); s++) {
		snprintf(env, sizeof(env), "MARCEL_BUBBLE_SCHEDULER=%s", strategies[s]);
		snprintf(args, sizeof(args), "%s --threads 4", grid[0]);
		expect(ref[0], env, "marcel", args);
		snprintf(env, sizeof(env), "MARCEL_BUBBLE_SCHEDULER=%s " SYNTH16, strategies[s]);
		snprintf(args, sizeof(args), "%s --threads 16", grid[0]);
		expect(ref[0], env, "marcel", args);
		snprintf(args, sizeof(args), "%s --threads 10", grid[1]);
		expect(ref[1], env, "marcel", args);
	}
}
END_TEST

/* A bad command line: status 2, the usage, and a message naming the culprit and the
 * program (advection/<variant>: the kernel names the stencil). */
static void expect_usage_error(const char *variant, const char *args, const char *named)
{
	char path[1024], prog[64];
	snprintf(path, sizeof(path), "%s/advection/%s", MA_EXAMPLES_DIR, variant);
	snprintf(prog, sizeof(prog), "advection/%s:", variant);
	ma_example_expect_usage_error(path, args, named, prog);
}

START_TEST(test_bad_options)
{
	for (int v = 0; v < NVARIANTS; v++) {
		expect_usage_error(variants[v], "--size 32 --bogus", "'--bogus'");
		expect_usage_error(variants[v], "--threads 0", "'--threads'");
	}
	expect_usage_error("simple", "--iters", "'--iters'");
	expect_usage_error("marcel", "--size 32 --threads 31", "'--threads'");
	expect_usage_error("marcel", "--size 8x8x8", "--3d");
	expect_usage_error("fixed", "--iters -1", "'--iters'");
	char *help = run("", "marcel", "--help", 0);
	ck_assert_msg(strstr(help, "usage: advection/marcel") != NULL, "--help:\n%s", help);
	free(help);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("advection");
	TCase *tc = tcase_create("examples");
	tcase_add_checked_fixture(tc, ma_example_clean_env, NULL);
	tcase_add_test(tc, test_reference);
	tcase_add_test(tc, test_variants_agree);
	tcase_add_test(tc, test_strategies);
	tcase_add_test(tc, test_bad_options);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return ma_test_run(s);
}
