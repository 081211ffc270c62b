/*
 * The stencil examples side by side (examples/conduction, examples/advection): the marcel
 * port with bubbles against the same program with pthreads pinned by hand (fixed), left
 * to the kernel (simple) and in OpenMP, all run by this program in the same minutes, the
 * variants interleaved repetition by repetition. The figure of each run is the time the
 * program itself prints (the iterations, not start-up), in ns; the line gives the median
 * over the repetitions, and as the ratio the median of the repetitions' own ratios: the
 * variants of one repetition run back to back, so the speed of this VM, which drifts by
 * 30% within minutes, cancels out of each (the ratio of the two medians is printed too).
 * A drift within a repetition would still favour whichever variant runs first, so the
 * order is rotated: repetition r starts with variant r % nv and goes on in order, so over
 * nv repetitions each variant runs in each position once. The comment gives the
 * repetitions' ratios' interquartile range (q1..q3) beside their extremes: a median ratio
 * whose range straddles 1 does not tell the two apart.
 * Every run's checksum must equal the others' (else exit 1).
 *
 *   conduction_bubbles, advection_bubbles: one stripe per processor, default strategy;
 *   conduction_dynamic_bubbles: --imbalance (a costly band of rows moving across the
 *     grid) with 8 stripes per processor, where a fixed placement cannot follow the load,
 *     under steal (BENCH_STENCIL_DYNAMIC_SCHED names another);
 *   conduction_dynamic_default: the same under the default strategy (burst, whose
 *     regenerations are what follows the load there), against pthread_fixed only.
 *
 * usage: bench_stencil [--full] [--reps N]
 */
#include <limits.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

#define MAX_RUNS 64
#define MAX_VARIANTS 4

static char examples[PATH_MAX + 16];

struct variant {
	const char *peer;       /* name in the BENCH line; NULL: the marcel side */
	const char *prog;       /* under examples/<stencil>/ */
	const char *env;        /* "NAME=value" or NULL */
	double t[MAX_RUNS];
	char sum[17];
};

/* Runs examples/<stencil>/<prog> args; returns the time it printed, fills sum. */
static double run_once(const char *stencil, struct variant *v, const char *args)
{
	char cmd[sizeof(examples) + 512];
	snprintf(cmd, sizeof(cmd), "%s %s/%s/%s %s 2>&1", v->env ? v->env : "", examples, stencil, v->prog,
		 args);
	FILE *p = popen(cmd, "r");
	if (!p)
		bench_fail("popen(%s): %s", cmd, strerror(errno));
	char line[512], sum[17] = "";
	double secs = -1;
	while (fgets(line, sizeof(line), p)) {
		if (!strncmp(line, "checksum ", 9))
			snprintf(sum, sizeof(sum), "%.16s", line + 9);
		else if (!strncmp(line, "time ", 5))
			secs = strtod(line + 5, NULL);
	}
	int st = pclose(p);
	if (st != 0 || secs < 0 || !sum[0])
		bench_fail("%s: exit status %#x, time %g, checksum '%s'", cmd, st, secs, sum);
	if (v->sum[0] && strcmp(v->sum, sum))
		bench_fail("%s: checksum %s, earlier runs %s", cmd, sum, v->sum);
	memcpy(v->sum, sum, sizeof(sum));
	return secs * 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *t, int n, double *lo, double *hi)
{
	qsort(t, (size_t)n, sizeof(*t), cmp_double);
	*lo = t[0];
	*hi = t[n - 1];
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

/* The p-quantile of n sorted figures, interpolated between the two nearest (the rule of
 * R's and numpy's default): with 5 repetitions, q1 and q3 are the 2nd and 4th figures. */
static double quantile(const double *sorted, int n, double p)
{
	double h = (n - 1) * p;
	int i = (int)h;
	return i + 1 < n ? sorted[i] + (h - i) * (sorted[i + 1] - sorted[i]) : sorted[n - 1];
}

static int built(const char *stencil, const char *prog)
{
	char path[sizeof(examples) + 64];
	snprintf(path, sizeof(path), "%s/%s/%s", examples, stencil, prog);
	return access(path, X_OK) == 0;
}

/* Runs every variant reps times, interleaved in a rotated order, then prints one line per
 * peer against vs[0], the marcel side. */
static void compare(const char *name, const char *stencil, const char *args, const char *what,
		    struct variant *vs, int nv, int reps)
{
	for (int i = 0; i < nv; i++)
		run_once(stencil, &vs[i], args);  /* warm-up: page cache, first-touch paths */
	for (int r = 0; r < reps; r++)
		for (int k = 0; k < nv; k++) {
			int i = (r + k) % nv;
			vs[i].t[r] = run_once(stencil, &vs[i], args);
		}
	for (int i = 1; i < nv; i++)
		if (strcmp(vs[i].sum, vs[0].sum))
			bench_fail("%s: %s printed checksum %s, marcel %s", name, vs[i].peer, vs[i].sum,
				   vs[0].sum);
	/* Before the medians: median() sorts in place. */
	double ratios[MAX_VARIANTS][MAX_RUNS], rlo, rhi;
	if (nv > MAX_VARIANTS)
		bench_fail("%s: %d variants, at most %d", name, nv, MAX_VARIANTS);
	for (int i = 1; i < nv; i++)
		for (int r = 0; r < reps; r++)
			ratios[i][r] = vs[i].t[r] / vs[0].t[r];
	double mlo, mhi, m = median(vs[0].t, reps, &mlo, &mhi);
	for (int i = 1; i < nv; i++) {
		double plo, phi, p = median(vs[i].t, reps, &plo, &phi);
		double ratio = median(ratios[i], reps, &rlo, &rhi);
		printf("BENCH %s marcel_ns=%.0f peer=%s peer_ns=%.0f ratio=%.3f  # %s; %s; "
		       "marcel %.3f..%.3f s, %s %.3f..%.3f s, medians of %d, order rotated; ratio: median "
		       "of the repetitions' ratios (%.3f..%.3f, interquartile %.3f..%.3f; ratio of the "
		       "medians %.3f), checksum %s\n",
		       name, m, vs[i].peer, p, ratio, what, vs[0].env ? vs[0].env : "default strategy",
		       mlo * 1e-9, mhi * 1e-9, vs[i].peer, plo * 1e-9, phi * 1e-9, reps, rlo, rhi,
		       quantile(ratios[i], reps, 0.25), quantile(ratios[i], reps, 0.75), p / m, vs[0].sum);
	}
	fflush(stdout);
}

static void static_stencil(const char *stencil, const struct bench_opts *o, int procs)
{
	if (!built(stencil, "marcel"))
		return;
	struct variant vs[] = {
		{ .prog = "marcel" },
		{ .peer = "pthread_fixed", .prog = "fixed" },
		{ .peer = "pthread_simple", .prog = "simple" },
		{ .peer = "openmp", .prog = "openmp", .env = "OMP_PROC_BIND=close OMP_PLACES=cores" },
	};
	int nv = built(stencil, "openmp") ? 4 : 3;
	char args[128], what[160], name[64];
	long size = o->full ? 4096 : 2048;
	snprintf(args, sizeof(args), "--size %ld --iters 100 --threads %d", size, procs);
	snprintf(what, sizeof(what), "%ldx%ld, 100 iterations, %d threads", size, size, procs);
	snprintf(name, sizeof(name), "%s_bubbles", stencil);
	compare(name, stencil, args, what, vs, nv, o->reps);
}

static void dynamic_stencil(const struct bench_opts *o, int procs)
{
	const char *sched = getenv("BENCH_STENCIL_DYNAMIC_SCHED");
	char env[64];
	snprintf(env, sizeof(env), "MARCEL_BUBBLE_SCHEDULER=%s", sched && *sched ? sched : "steal");
	struct variant vs[] = {
		{ .prog = "marcel", .env = env },
		{ .peer = "pthread_fixed", .prog = "fixed" },
		{ .peer = "pthread_simple", .prog = "simple" },
	};
	char args[128], what[160];
	int threads = 8 * procs;
	long iters = o->full ? 400 : 200;
	snprintf(args, sizeof(args), "--size 1024 --iters %ld --threads %d --imbalance", iters, threads);
	snprintf(what, sizeof(what), "1024x1024, %ld iterations, %d threads, --imbalance", iters, threads);
	compare("conduction_dynamic_bubbles", "conduction", args, what, vs, 3, o->reps);
	struct variant dflt[] = {
		{ .prog = "marcel" },
		{ .peer = "pthread_fixed", .prog = "fixed" },
	};
	compare("conduction_dynamic_default", "conduction", args, what, dflt, 2, o->reps);
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	bench_parse(argc, argv, &o);
	/* Long runs: fewer repetitions than the micro-benchmarks. */
	if (!o.reps_set)
		o.reps = o.full ? 11 : 5;
	if (o.reps > MAX_RUNS)
		bench_fail("--reps %d: at most %d for this program", o.reps, MAX_RUNS);
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		bench_fail("cannot read /proc/self/exe: %s", strerror(errno));
	self[n] = 0;
	*strrchr(self, '/') = 0;
	snprintf(examples, sizeof(examples), "%s/../examples", self);
	if (!built("conduction", "marcel"))
		bench_fail("%s/conduction/marcel is not built: run make in the build's examples directory",
			   examples);
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	int procs = online > 0 ? (int)online : 1;
	static_stencil("conduction", &o, procs);
	static_stencil("advection", &o, procs);
	dynamic_stencil(&o, procs);
	return 0;
}
