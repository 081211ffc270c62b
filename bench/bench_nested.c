/*
 * Nested fork-join parallelism: the recursions of examples/sumtime and
 * examples/nested-sort (their very code: sumtime.h, nested-sort.h) against the same
 * recursions written with OpenMP tasks (libgomp) and with TBB task_group, in one run.
 * Every side spawns two tasks per level and waits for both, splits where the others do
 * and runs the same sequential code below the cut-off (sort-kernel.h), with as many
 * workers as marcel has VPs:
 *
 *   sumtime_marcel sum of 1..N (2^17; --full: 2^18), down to single numbers: ns per
 *                  spawn (2N - 2 spawns). Not more: ordinary marcel threads queued on
 *                  the machine's queue all live at once here (2^20 of them take 5 GB)
 *   nested_sort    quicksort (merge sort: nested_sort_merge) of N keys (10^6; --full:
 *                  10^7, nested-sort's default) down to parts of 10^4 keys: ms per sort
 *                  (the keys are refilled, untimed, before each sort)
 *
 * Each of the three (sumtime_marcel, nested_sort, nested_sort_merge) gives four lines,
 * told apart by their peer: openmp_tasks and tbb_task_group (marcel against each),
 * marcel_threads (seeds against ordinary threads) and marcel_no_bubbles (a bubble per
 * level against none).
 *
 * The marcel side runs first, in three variants measured in turn within each
 * repetition: seeds with a bubble per level (what the examples do by default; it is the
 * marcel figure of the lines against the peers), ordinary threads with a bubble per level
 * (peer marcel_threads: what seeds buy), seeds without bubbles (marcel_no_bubbles: what bubbles
 * cost). The strategy is the examples' (nested_init(): MARCEL_BUBBLE_SCHEDULER when set,
 * else NESTED_DEFAULT_SCHED).
 * Then marcel_end(), and the OpenMP side in this process: libgomp starts its pool at the
 * first parallel region, after marcel's workers are gone, so neither disturbs the other.
 * Then the TBB side, in a helper process (bench_nested_tbb, C++, beside this program;
 * the lines are left out when it was not built), given the same workload on its command
 * line; it times each repetition itself, so its process start is not counted.
 *
 * Every side's result is checked: the sum against N(N+1)/2, the sorted keys for order and
 * against the input's digest, and the sorted keys' checksum across sides.
 */
#include "common.h"
#include <inttypes.h>
#include <limits.h>
#include <unistd.h>
#include "sumtime/sumtime.h"
#include "nested-sort/nested-sort.h"
#ifdef _OPENMP
#include <omp.h>
#endif

struct workload {
	unsigned long sum_n, sum_cutoff;
	size_t sort_n, sort_cutoff;
	uint64_t seed;
	int reps;
	unsigned nvp;
	char sched[32];  /* the strategy marcel ran under */
};

/* What one side measured on one workload. */
struct side {
	double *t;              /* per repetition: ns per spawn (sum) or ms per sort */
	unsigned long long result;  /* the sum, or the sorted keys' checksum */
	unsigned long spawns;
};

enum { SEEDS_BUBBLES, THREADS_BUBBLES, SEEDS_NO_BUBBLES, NVARIANTS };
static const char *const variant_name[NVARIANTS] = { "seeds, a bubble per level",
						     "threads, a bubble per level",
						     "seeds, no bubbles" };

static void side_alloc(struct side *s, int reps)
{
	s->t = calloc((size_t)reps, sizeof(double));
	if (!s->t)
		bench_fail("out of memory");
}

static uint64_t *keys_alloc(size_t n)
{
	uint64_t *k = malloc(n * sizeof(*k));
	if (!k)
		bench_fail("out of memory for %zu keys", n);
	return k;
}

/* Fails unless keys are sorted and hold the keys digested in want; returns their
 * checksum. */
static unsigned long long sorted_checksum(const char *who, const uint64_t *keys, size_t n,
					  struct sk_digest want)
{
	if (sk_unsorted_at(keys, n) < n || !sk_digest_eq(sk_digest_of(keys, n), want))
		bench_fail("%s: the keys came out unsorted or changed", who);
	return sk_checksum(keys, n);
}

static void same_result(const char *what, const char *who, unsigned long long got, unsigned long long want)
{
	if (got != want)
		bench_fail("%s: %s gave %llu (%#llx), expected %llu (%#llx)", what, who, got, got, want, want);
}

/* ---------------- marcel ---------------- */

struct marcel_sides {
	struct side sum[NVARIANTS], quick[NVARIANTS], merge[NVARIANTS];
};

static double mc_sum_once(const struct nested_how *how, const struct workload *w, struct side *s)
{
	struct sum_job j = { .how = how, .cutoff = w->sum_cutoff, .lo = 1, .hi = w->sum_n };
	uint64_t t0 = bench_now_ns();
	sum_range(&j);
	double ns = (double)(bench_now_ns() - t0);
	BENCH_CHECK(j.err);
	s->result = j.sum;
	s->spawns = j.threads;
	return ns / (double)j.threads;
}

static double mc_sort_once(const struct nested_how *how, const struct workload *w, int merge,
			   uint64_t *keys, uint64_t *tmp, struct sk_digest in, struct side *s)
{
	sk_fill(keys, w->sort_n, w->seed);
	struct sort_job j = { .how = how, .cutoff = w->sort_cutoff, .algo = merge ? SORT_MERGE : SORT_QUICK,
			      .a = keys, .tmp = merge ? tmp : NULL, .n = w->sort_n };
	uint64_t t0 = bench_now_ns();
	sort_keys(&j);
	double ms = (double)(bench_now_ns() - t0) * 1e-6;
	BENCH_CHECK(j.err);
	s->result = sorted_checksum("marcel", keys, w->sort_n, in);
	s->spawns = j.threads;
	return ms;
}

static void run_marcel(struct workload *w, struct marcel_sides *m, struct sk_digest in)
{
	BENCH_CHECK(nested_init(NULL, NULL));
	w->nvp = marcel_nbvps();
	snprintf(w->sched, sizeof(w->sched), "%s", nested_sched());
	BENCH_CHECK(marcel_bubble_sched_begin());
	struct nested_how how[NVARIANTS];
	for (int v = 0; v < NVARIANTS; v++)
		BENCH_CHECK(nested_how_init(&how[v], v != THREADS_BUBBLES, v != SEEDS_NO_BUBBLES));
	uint64_t *keys = keys_alloc(w->sort_n), *tmp = keys_alloc(w->sort_n);
	/* Repetition -1 warms up (stacks, descriptors, pages of the key arrays). */
	for (int r = -1; r < w->reps; r++)
		for (int v = 0; v < NVARIANTS; v++) {
			double sum = mc_sum_once(&how[v], w, &m->sum[v]);
			double quick = mc_sort_once(&how[v], w, 0, keys, tmp, in, &m->quick[v]);
			double merge = mc_sort_once(&how[v], w, 1, keys, tmp, in, &m->merge[v]);
			if (r >= 0) {
				m->sum[v].t[r] = sum;
				m->quick[v].t[r] = quick;
				m->merge[v].t[r] = merge;
			}
		}
	free(keys);
	free(tmp);
	for (int v = 0; v < NVARIANTS; v++)
		BENCH_CHECK(marcel_attr_destroy(&how[v].attr));
	marcel_end();
}

/* ---------------- OpenMP tasks ---------------- */
#ifdef _OPENMP

static unsigned long long omp_sum(unsigned long lo, unsigned long hi, unsigned long cutoff)
{
	if (hi - lo < cutoff)
		return sum_loop(lo, hi);
	unsigned long mid = lo + (hi - lo) / 2;
	unsigned long long x, y;
#pragma omp task shared(x)
	x = omp_sum(lo, mid, cutoff);
#pragma omp task shared(y)
	y = omp_sum(mid + 1, hi, cutoff);
#pragma omp taskwait
	return x + y;
}

static void omp_sort(int merge, uint64_t *a, uint64_t *tmp, size_t n, int into, size_t cutoff)
{
	if (n <= cutoff) {
		sk_leaf(merge, a, tmp, n, into);
		return;
	}
	size_t k = sk_split(merge, a, n);
#pragma omp task
	omp_sort(merge, a, tmp, k, !into, cutoff);
#pragma omp task
	omp_sort(merge, a + k, merge ? tmp + k : NULL, n - k, !into, cutoff);
#pragma omp taskwait
	if (merge)
		sk_msort_merge(a, tmp, n, into);
}

static void run_openmp(const struct workload *w, struct side *sum, struct side *quick, struct side *merge,
		       struct sk_digest in)
{
	omp_set_num_threads((int)w->nvp);
	uint64_t *keys = keys_alloc(w->sort_n), *tmp = keys_alloc(w->sort_n);
	for (int r = -1; r < w->reps; r++) {
		unsigned long long s = 0;
		uint64_t t0 = bench_now_ns();
#pragma omp parallel
#pragma omp single
		s = omp_sum(1, w->sum_n, w->sum_cutoff);
		double ns = (double)(bench_now_ns() - t0);
		sum->result = s;
		for (int m = 0; m < 2; m++) {
			struct side *o = m ? merge : quick;
			sk_fill(keys, w->sort_n, w->seed);
			uint64_t t1 = bench_now_ns();
#pragma omp parallel
#pragma omp single
			omp_sort(m, keys, tmp, w->sort_n, 0, w->sort_cutoff);
			double ms = (double)(bench_now_ns() - t1) * 1e-6;
			o->result = sorted_checksum("openmp", keys, w->sort_n, in);
			if (r >= 0)
				o->t[r] = ms;
		}
		if (r >= 0)
			sum->t[r] = ns;  /* per spawn once the spawn count is known (main) */
	}
	free(keys);
	free(tmp);
}
#endif

/* ---------------- TBB (helper process) ---------------- */

/* Runs "bench_nested_tbb <args>" from this program's directory; fills s from its line
 * "<result> <t1> ... <tR>" (seconds per repetition). Returns 0 if the helper is not
 * there (not built: no oneTBB). */
static int run_tbb(const struct workload *w, const char *args, struct side *s)
{
	char self[PATH_MAX], cmd[PATH_MAX + 256];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0)
		bench_fail("readlink /proc/self/exe: %s", strerror(errno));
	self[len] = 0;
	char *slash = strrchr(self, '/');
	snprintf(slash + 1, sizeof(self) - (size_t)(slash + 1 - self), "bench_nested_tbb");
	if (access(self, X_OK) != 0)
		return 0;
	snprintf(cmd, sizeof(cmd), "%s %u %d %s", self, w->nvp, w->reps, args);
	FILE *p = popen(cmd, "r");
	if (!p)
		bench_fail("popen %s: %s", cmd, strerror(errno));
	int ok = fscanf(p, "%llu", &s->result) == 1;
	for (int r = 0; ok && r < w->reps; r++)
		ok = fscanf(p, "%lf", &s->t[r]) == 1;
	int st = pclose(p);
	if (!ok || st != 0)
		bench_fail("%s: exit status %#x, or not a result and %d times on its output", cmd, st, w->reps);
	return 1;
}

/* ---------------- main ---------------- */

static void scale(struct side *s, int reps, double by)
{
	for (int r = 0; r < reps; r++)
		s->t[r] *= by;
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	bench_parse(argc, argv, &o);
	struct workload w = {
		.sum_n = o.full ? 1UL << 18 : 1UL << 17, .sum_cutoff = 1,
		.sort_n = o.full ? 10000000 : 1000000, .sort_cutoff = 10000,
		.seed = 1, .reps = o.reps,
	};
	struct marcel_sides m;
	struct side omp_sum_s, omp_quick, omp_merge, tbb_sum, tbb_quick, tbb_merge;
	for (int v = 0; v < NVARIANTS; v++) {
		side_alloc(&m.sum[v], w.reps);
		side_alloc(&m.quick[v], w.reps);
		side_alloc(&m.merge[v], w.reps);
	}
	struct side *peers[] = { &omp_sum_s, &omp_quick, &omp_merge, &tbb_sum, &tbb_quick, &tbb_merge };
	for (unsigned i = 0; i < sizeof(peers) / sizeof(peers[0]); i++)
		side_alloc(peers[i], w.reps);

	uint64_t *keys = keys_alloc(w.sort_n);
	sk_fill(keys, w.sort_n, w.seed);
	struct sk_digest in = sk_digest_of(keys, w.sort_n);
	free(keys);
	run_marcel(&w, &m, in);
	const char *sched = w.sched;
	const unsigned long long want_sum = (unsigned long long)w.sum_n * (w.sum_n + 1) / 2;
	const unsigned long spawns = m.sum[0].spawns;
	for (int v = 0; v < NVARIANTS; v++) {
		same_result("sumtime", variant_name[v], m.sum[v].result, want_sum);
		same_result("nested_sort", variant_name[v], m.quick[v].result, m.quick[0].result);
		same_result("nested_sort_merge", variant_name[v], m.merge[v].result, m.quick[0].result);
	}

	int have_omp = 0;
#ifdef _OPENMP
	run_openmp(&w, &omp_sum_s, &omp_quick, &omp_merge, in);
	scale(&omp_sum_s, w.reps, 1.0 / (double)spawns);
	same_result("sumtime", "openmp", omp_sum_s.result, want_sum);
	same_result("nested_sort", "openmp", omp_quick.result, m.quick[0].result);
	same_result("nested_sort_merge", "openmp", omp_merge.result, m.quick[0].result);
	have_omp = 1;
#endif
	char args[128];
	snprintf(args, sizeof(args), "sum %lu %lu", w.sum_n, w.sum_cutoff);
	int have_tbb = run_tbb(&w, args, &tbb_sum);
	snprintf(args, sizeof(args), "quick %zu %zu %" PRIu64, w.sort_n, w.sort_cutoff, w.seed);
	have_tbb = have_tbb && run_tbb(&w, args, &tbb_quick);
	snprintf(args, sizeof(args), "merge %zu %zu %" PRIu64, w.sort_n, w.sort_cutoff, w.seed);
	have_tbb = have_tbb && run_tbb(&w, args, &tbb_merge);
	if (have_tbb) {
		scale(&tbb_sum, w.reps, 1e9 / (double)spawns);
		scale(&tbb_quick, w.reps, 1e3);
		scale(&tbb_merge, w.reps, 1e3);
		same_result("sumtime", "tbb", tbb_sum.result, want_sum);
		same_result("nested_sort", "tbb", tbb_quick.result, m.quick[0].result);
		same_result("nested_sort_merge", "tbb", tbb_merge.result, m.quick[0].result);
	}

	/* ---- the lines ---- */
	const int R = w.reps;
	struct {
		const char *name, *unit;
		struct side *mc;
		struct side *omp, *tbb;
		char what[160];
	} lines[] = {
		{ "sumtime_marcel", "ns", m.sum, &omp_sum_s, &tbb_sum, "" },
		{ "nested_sort", "ms", m.quick, &omp_quick, &tbb_quick, "" },
		{ "nested_sort_merge", "ms", m.merge, &omp_merge, &tbb_merge, "" },
	};
	snprintf(lines[0].what, sizeof(lines[0].what), "sum of 1..%lu, cut-off %lu, %lu spawns, ns per spawn",
		 w.sum_n, w.sum_cutoff, spawns);
	snprintf(lines[1].what, sizeof(lines[1].what), "quicksort of %zu keys, cut-off %zu, %lu spawns, ms per sort",
		 w.sort_n, w.sort_cutoff, m.quick[0].spawns);
	snprintf(lines[2].what, sizeof(lines[2].what), "merge sort of %zu keys, cut-off %zu, %lu spawns, ms per sort",
		 w.sort_n, w.sort_cutoff, m.merge[0].spawns);
	char name[64];
	for (unsigned l = 0; l < sizeof(lines) / sizeof(lines[0]); l++) {
		struct bench_stat mc = bench_stat_of(lines[l].mc[SEEDS_BUBBLES].t, R);
		if (have_omp) {
			snprintf(name, sizeof(name), "%s", lines[l].name);
			bench_line(name, lines[l].unit, mc, "openmp_tasks", bench_stat_of(lines[l].omp->t, R),
				   "%s; marcel: %s, strategy %s; %u workers each; %d reps", lines[l].what,
				   variant_name[SEEDS_BUBBLES], sched, w.nvp, R);
		}
		if (have_tbb) {
			snprintf(name, sizeof(name), "%s", lines[l].name);
			bench_line(name, lines[l].unit, mc, "tbb_task_group", bench_stat_of(lines[l].tbb->t, R),
				   "%s; marcel: %s, strategy %s; %u workers each; %d reps", lines[l].what,
				   variant_name[SEEDS_BUBBLES], sched, w.nvp, R);
		}
		snprintf(name, sizeof(name), "%s", lines[l].name);
		bench_line(name, lines[l].unit, mc, "marcel_threads", bench_stat_of(lines[l].mc[THREADS_BUBBLES].t, R),
			   "%s; seeds vs ordinary threads, a bubble per level both, strategy %s; %d reps",
			   lines[l].what, sched, R);
		snprintf(name, sizeof(name), "%s", lines[l].name);
		bench_line(name, lines[l].unit, mc, "marcel_no_bubbles", bench_stat_of(lines[l].mc[SEEDS_NO_BUBBLES].t, R),
			   "%s; a bubble per level vs none, seeds both, strategy %s; %d reps (ratio < 1: "
			   "what the bubbles cost)", lines[l].what, sched, R);
	}
	if (!have_tbb)
		printf("INFO nested: no tbb_task_group lines (bench_nested_tbb not built: no oneTBB)\n");
	for (int v = 0; v < NVARIANTS; v++) {
		free(m.sum[v].t);
		free(m.quick[v].t);
		free(m.merge[v].t);
	}
	for (unsigned i = 0; i < sizeof(peers) / sizeof(peers[0]); i++)
		free(peers[i]->t);
	return 0;
}
