/*
 * Nested fork-join parallelism: the recursions of examples/sumtime and
 * examples/nested-sort (their very code: sumtime.h, nested-sort.h) against the same
 * recursions written with OpenMP tasks (libgomp) and with TBB task_group, in one run.
 * Every side spawns two tasks per level and waits for both, splits where the others do
 * and runs the same sequential code below the cut-off (sort-kernel.h), with as many
 * workers as marcel has VPs. Every line gives ns (marcel_ns=, peer_ns=):
 *
 *   sumtime_marcel    sum of 1..N (2^17; --full: 2^18), down to single numbers: ns per
 *                     spawn (2N - 2 spawns). Not more: ordinary marcel threads queued on
 *                     the machine's queue all live at once here (2^20 of them take 5 GB)
 *   nested_sort       quicksort (merge sort: nested_sort_merge) of 10^7 keys, nested-sort's
 *                     default, down to parts of 10^4 keys (its default cut-off too): ns per
 *                     sort, about 0.5 s on 2 cores. 3776 spawns for quicksort, 2046 for
 *                     merge sort: a fraction of a millisecond of spawning against half a
 *                     second of sorting, so these lines measure the sort and where its
 *                     parts ran. 5 repetitions (--full: 11; --reps N sets them too) rather
 *                     than the usual 11, to keep bench_nested under a minute
 *   nested_sort_fine  quicksort of 10^6 keys down to parts of 64 keys: ns per sort. 58534
 *                     spawns, one per 17 keys (nested_sort: one per 2,600), so what a spawn
 *                     costs is a visible share of the sort. 10^6 rather than 10^7 keys: ten
 *                     times the spawns would add half a minute for the same share
 *
 * (the keys are refilled, untimed, before each sort). Each of the four gives five lines,
 * told apart by their peer: openmp_tasks and tbb_task_group (marcel against each),
 * marcel_threads (seeds against ordinary threads), marcel_no_bubbles (a bubble per
 * level against none) and marcel_two_bubbles (a bubble per pair against one per thread).
 *
 * The marcel side runs first, in four variants measured in turn within each
 * repetition: seeds with a bubble per level (what the examples do by default; it is the
 * marcel figure of the lines against the peers), ordinary threads with a bubble per level
 * (peer marcel_threads: what seeds buy), seeds without bubbles (marcel_no_bubbles: what bubbles
 * cost), seeds with a bubble per thread (marcel_two_bubbles: the classic Marcel sumtime's
 * layout, --two-bubbles in the examples). The strategy is the examples' (nested_init(): MARCEL_BUBBLE_SCHEDULER when set,
 * else NESTED_DEFAULT_SCHED).
 * Then marcel_end(), and the OpenMP side in this process: libgomp starts its pool at the
 * first parallel region, after marcel's workers are gone, so neither disturbs the other.
 * Then the TBB side, in a helper process (bench_nested_tbb, C++, beside this program;
 * the lines are left out when it was not built), given the same workload on its command
 * line; it times each repetition itself, so its process start is not counted.
 *
 * Every side's result is checked after every run: the sum against N(N+1)/2, the sorted
 * keys for order and against the input's digest, and the sorted keys' checksum across
 * sides and variants.
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

/* One sort measured on every side. */
struct sort_load {
	const char *name;   /* of its BENCH lines */
	int merge;          /* merge sort, else quicksort */
	size_t n, cutoff;
	int reps;
	struct sk_digest in;  /* of the unsorted keys */
};

enum { SORT_DEFAULT, SORT_DEFAULT_MERGE, SORT_FINE, NSORTS };

struct workload {
	unsigned long sum_n, sum_cutoff;
	int sum_reps;
	struct sort_load sort[NSORTS];
	size_t max_n;  /* of the sorts: the key arrays' length */
	uint64_t seed;
	unsigned nvp;
	char sched[32];  /* the strategy marcel ran under */
};

/* What one side measured on one workload. */
struct side {
	double *t;              /* per repetition: ns per spawn (sum) or ns per sort */
	unsigned long long result;  /* the sum, or the sorted keys' checksum */
	unsigned long spawns;
};

enum { SEEDS_BUBBLES, THREADS_BUBBLES, SEEDS_NO_BUBBLES, SEEDS_TWO_BUBBLES, NVARIANTS };
static const char *const variant_name[NVARIANTS] = { "seeds, a bubble per level",
						     "threads, a bubble per level",
						     "seeds, no bubbles",
						     "seeds, two bubbles per level" };
static const enum nested_bubbles variant_bubbles[NVARIANTS] = { NESTED_PAIR_BUBBLE, NESTED_PAIR_BUBBLE,
								NESTED_NO_BUBBLES, NESTED_TWO_BUBBLES };

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
static unsigned long long sorted_checksum(const char *who, const struct sort_load *l, const uint64_t *keys)
{
	if (sk_unsorted_at(keys, l->n) < l->n || !sk_digest_eq(sk_digest_of(keys, l->n), l->in))
		bench_fail("%s: %s: the keys came out unsorted or changed", l->name, who);
	return sk_checksum(keys, l->n);
}

static void same_result(const char *what, const char *who, unsigned long long got, unsigned long long want)
{
	if (got != want)
		bench_fail("%s: %s gave %llu (%#llx), expected %llu (%#llx)", what, who, got, got, want, want);
}

/* ---------------- marcel ---------------- */

struct marcel_sides {
	struct side sum[NVARIANTS], sort[NSORTS][NVARIANTS];
};

static double mc_sum_once(const struct nested_how *how, const struct workload *w, struct side *s)
{
	struct sum_job j = { .how = how, .cutoff = w->sum_cutoff, .lo = 1, .hi = w->sum_n };
	uint64_t t0 = bench_now_ns();
	sum_range(&j);
	double ns = (double)(bench_now_ns() - t0);
	BENCH_CHECK(j.err);
	same_result("sumtime", "marcel", j.sum, (unsigned long long)w->sum_n * (w->sum_n + 1) / 2);
	s->result = j.sum;
	s->spawns = j.threads;
	return ns / (double)j.threads;
}

static double mc_sort_once(const struct nested_how *how, const struct workload *w, const struct sort_load *l,
			   uint64_t *keys, uint64_t *tmp, struct side *s)
{
	sk_fill(keys, l->n, w->seed);
	struct sort_job j = { .how = how, .cutoff = l->cutoff, .algo = l->merge ? SORT_MERGE : SORT_QUICK,
			      .a = keys, .tmp = l->merge ? tmp : NULL, .n = l->n };
	uint64_t t0 = bench_now_ns();
	sort_keys(&j);
	double ns = (double)(bench_now_ns() - t0);
	BENCH_CHECK(j.err);
	s->result = sorted_checksum("marcel", l, keys);
	s->spawns = j.threads;
	return ns;
}

static void run_marcel(struct workload *w, struct marcel_sides *m)
{
	BENCH_CHECK(nested_init(NULL, NULL));
	w->nvp = marcel_nbvps();
	snprintf(w->sched, sizeof(w->sched), "%s", nested_sched());
	BENCH_CHECK(marcel_bubble_sched_begin());
	struct nested_how how[NVARIANTS];
	for (int v = 0; v < NVARIANTS; v++)
		BENCH_CHECK(nested_how_init(&how[v], v != THREADS_BUBBLES, variant_bubbles[v]));
	/* Repetition -1 warms up (stacks, descriptors, pages of the key arrays). */
	for (int r = -1; r < w->sum_reps; r++)
		for (int v = 0; v < NVARIANTS; v++) {
			double ns = mc_sum_once(&how[v], w, &m->sum[v]);
			if (r >= 0)
				m->sum[v].t[r] = ns;
		}
	uint64_t *keys = keys_alloc(w->max_n), *tmp = keys_alloc(w->max_n);
	for (int l = 0; l < NSORTS; l++)
		for (int r = -1; r < w->sort[l].reps; r++)
			for (int v = 0; v < NVARIANTS; v++) {
				double ns = mc_sort_once(&how[v], w, &w->sort[l], keys, tmp, &m->sort[l][v]);
				if (r >= 0)
					m->sort[l][v].t[r] = ns;
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

/* Fills sum->t with ns per run (per spawn once main knows the spawn count). */
static void run_openmp(const struct workload *w, struct side *sum, struct side sort[NSORTS])
{
	omp_set_num_threads((int)w->nvp);
	for (int r = -1; r < w->sum_reps; r++) {
		unsigned long long s = 0;
		uint64_t t0 = bench_now_ns();
#pragma omp parallel
#pragma omp single
		s = omp_sum(1, w->sum_n, w->sum_cutoff);
		double ns = (double)(bench_now_ns() - t0);
		same_result("sumtime", "openmp", s, (unsigned long long)w->sum_n * (w->sum_n + 1) / 2);
		sum->result = s;
		if (r >= 0)
			sum->t[r] = ns;
	}
	uint64_t *keys = keys_alloc(w->max_n), *tmp = keys_alloc(w->max_n);
	for (int l = 0; l < NSORTS; l++) {
		const struct sort_load *ld = &w->sort[l];
		for (int r = -1; r < ld->reps; r++) {
			sk_fill(keys, ld->n, w->seed);
			uint64_t t0 = bench_now_ns();
#pragma omp parallel
#pragma omp single
			omp_sort(ld->merge, keys, tmp, ld->n, 0, ld->cutoff);
			double ns = (double)(bench_now_ns() - t0);
			sort[l].result = sorted_checksum("openmp", ld, keys);
			if (r >= 0)
				sort[l].t[r] = ns;
		}
	}
	free(keys);
	free(tmp);
}
#endif

/* ---------------- TBB (helper process) ---------------- */

/* Runs "bench_nested_tbb <workers> <reps> <args>" from this program's directory; fills s
 * from its line "<result> <t1> ... <tR>" (seconds per repetition). Returns 0 if the
 * helper is not there (not built: no oneTBB). */
static int run_tbb(const struct workload *w, int reps, const char *args, struct side *s)
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
	snprintf(cmd, sizeof(cmd), "%s %u %d %s", self, w->nvp, reps, args);
	FILE *p = popen(cmd, "r");
	if (!p)
		bench_fail("popen %s: %s", cmd, strerror(errno));
	int ok = fscanf(p, "%llu", &s->result) == 1;
	for (int r = 0; ok && r < reps; r++)
		ok = fscanf(p, "%lf", &s->t[r]) == 1;
	int st = pclose(p);
	if (!ok || st != 0)
		bench_fail("%s: exit status %#x, or not a result and %d times on its output", cmd, st, reps);
	return 1;
}

/* ---------------- main ---------------- */

static void scale(struct side *s, int reps, double by)
{
	for (int r = 0; r < reps; r++)
		s->t[r] *= by;
}

/* One line of a workload against one peer. The sorts' ranges are in ms for the reader; the
 * fields before the '#' are in ns on every line. */
struct line {
	const char *name;
	struct side *mc, *omp, *tbb;  /* mc: the marcel variants */
	int reps, in_ms;
	char what[160];
};

static void print_line(const struct line *l, const char *peer, const struct side *p, const char *how)
{
	struct bench_stat m = bench_stat_of(l->mc[SEEDS_BUBBLES].t, l->reps), q = bench_stat_of(p->t, l->reps);
	if (!l->in_ms) {
		bench_line(l->name, "ns", m, peer, q, "%s; %s; %d reps", l->what, how, l->reps);
		return;
	}
	printf("BENCH %s marcel_ns=%.0f peer=%s peer_ns=%.0f ratio=%.2f  # marcel %.1f ms (%.1f..%.1f), "
	       "%s %.1f ms (%.1f..%.1f); %s; %s; %d reps\n",
	       l->name, m.med, peer, q.med, m.med > 0 ? q.med / m.med : 0.0, m.med * 1e-6, m.min * 1e-6,
	       m.max * 1e-6, peer, q.med * 1e-6, q.min * 1e-6, q.max * 1e-6, l->what, how, l->reps);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	bench_parse(argc, argv, &o);
	/* Half a second per sort of 10^7 keys, twelve such sorts per repetition (quicksort
	 * and merge sort, four marcel variants, OpenMP, TBB): fewer repetitions than the
	 * micro-benchmarks unless --reps says otherwise. */
	int big_reps = o.reps_set ? o.reps : o.full ? 11 : 5;
	struct workload w = {
		.sum_n = o.full ? 1UL << 18 : 1UL << 17, .sum_cutoff = 1, .sum_reps = o.reps,
		.sort = {
			[SORT_DEFAULT] = { "nested_sort", 0, 10000000, 10000, big_reps, { 0, 0, 0 } },
			[SORT_DEFAULT_MERGE] = { "nested_sort_merge", 1, 10000000, 10000, big_reps, { 0, 0, 0 } },
			[SORT_FINE] = { "nested_sort_fine", 0, 1000000, 64, o.reps, { 0, 0, 0 } },
		},
		.seed = 1,
	};
	for (int l = 0; l < NSORTS; l++)
		if (w.sort[l].n > w.max_n)
			w.max_n = w.sort[l].n;
	uint64_t *keys = keys_alloc(w.max_n);
	for (int l = 0; l < NSORTS; l++) {
		sk_fill(keys, w.sort[l].n, w.seed);
		w.sort[l].in = sk_digest_of(keys, w.sort[l].n);
	}
	free(keys);

	struct marcel_sides m;
	struct side omp_sum_s, omp_sort[NSORTS], tbb_sum, tbb_sort[NSORTS];
	for (int v = 0; v < NVARIANTS; v++) {
		side_alloc(&m.sum[v], w.sum_reps);
		for (int l = 0; l < NSORTS; l++)
			side_alloc(&m.sort[l][v], w.sort[l].reps);
	}
	side_alloc(&omp_sum_s, w.sum_reps);
	side_alloc(&tbb_sum, w.sum_reps);
	for (int l = 0; l < NSORTS; l++) {
		side_alloc(&omp_sort[l], w.sort[l].reps);
		side_alloc(&tbb_sort[l], w.sort[l].reps);
	}

	run_marcel(&w, &m);
	const unsigned long long want_sum = (unsigned long long)w.sum_n * (w.sum_n + 1) / 2;
	const unsigned long spawns = m.sum[0].spawns;
	for (int v = 0; v < NVARIANTS; v++) {
		same_result("sumtime", variant_name[v], m.sum[v].result, want_sum);
		for (int l = 0; l < NSORTS; l++)
			same_result(w.sort[l].name, variant_name[v], m.sort[l][v].result, m.sort[l][0].result);
	}
	/* The same keys sorted by either algorithm: the same checksum. */
	same_result(w.sort[SORT_DEFAULT_MERGE].name, "marcel", m.sort[SORT_DEFAULT_MERGE][0].result,
		    m.sort[SORT_DEFAULT][0].result);

	int have_omp = 0;
#ifdef _OPENMP
	run_openmp(&w, &omp_sum_s, omp_sort);
	scale(&omp_sum_s, w.sum_reps, 1.0 / (double)spawns);
	same_result("sumtime", "openmp", omp_sum_s.result, want_sum);
	for (int l = 0; l < NSORTS; l++)
		same_result(w.sort[l].name, "openmp", omp_sort[l].result, m.sort[l][0].result);
	have_omp = 1;
#endif
	char args[128];
	snprintf(args, sizeof(args), "sum %lu %lu", w.sum_n, w.sum_cutoff);
	int have_tbb = run_tbb(&w, w.sum_reps, args, &tbb_sum);
	if (have_tbb) {
		scale(&tbb_sum, w.sum_reps, 1e9 / (double)spawns);
		same_result("sumtime", "tbb", tbb_sum.result, want_sum);
	}
	for (int l = 0; have_tbb && l < NSORTS; l++) {
		const struct sort_load *ld = &w.sort[l];
		snprintf(args, sizeof(args), "%s %zu %zu %" PRIu64, ld->merge ? "merge" : "quick", ld->n, ld->cutoff,
			 w.seed);
		if (!run_tbb(&w, ld->reps, args, &tbb_sort[l]))
			bench_fail("bench_nested_tbb went away during the run");
		scale(&tbb_sort[l], ld->reps, 1e9);
		same_result(ld->name, "tbb", tbb_sort[l].result, m.sort[l][0].result);
	}

	/* ---- the lines ---- */
	struct line lines[1 + NSORTS] = { { "sumtime_marcel", m.sum, &omp_sum_s, &tbb_sum, w.sum_reps, 0, "" } };
	snprintf(lines[0].what, sizeof(lines[0].what), "sum of 1..%lu, cut-off %lu, %lu spawns, ns per spawn",
		 w.sum_n, w.sum_cutoff, spawns);
	for (int l = 0; l < NSORTS; l++) {
		const struct sort_load *ld = &w.sort[l];
		lines[1 + l] = (struct line){ ld->name, m.sort[l], &omp_sort[l], &tbb_sort[l], ld->reps, 1, "" };
		snprintf(lines[1 + l].what, sizeof(lines[1 + l].what),
			 "%s of %zu keys, cut-off %zu, %lu spawns, ns per sort", ld->merge ? "merge sort" : "quicksort",
			 ld->n, ld->cutoff, m.sort[l][SEEDS_BUBBLES].spawns);
	}
	char how[128];
	for (int l = 0; l < 1 + NSORTS; l++) {
		snprintf(how, sizeof(how), "marcel: %s, strategy %s; %u workers each", variant_name[SEEDS_BUBBLES],
			 w.sched, w.nvp);
		if (have_omp)
			print_line(&lines[l], "openmp_tasks", lines[l].omp, how);
		if (have_tbb)
			print_line(&lines[l], "tbb_task_group", lines[l].tbb, how);
		snprintf(how, sizeof(how), "seeds vs ordinary threads, a bubble per level both, strategy %s",
			 w.sched);
		print_line(&lines[l], "marcel_threads", &lines[l].mc[THREADS_BUBBLES], how);
		snprintf(how, sizeof(how), "a bubble per level vs none, seeds both, strategy %s (ratio < 1: what "
			 "the bubbles cost)", w.sched);
		print_line(&lines[l], "marcel_no_bubbles", &lines[l].mc[SEEDS_NO_BUBBLES], how);
		snprintf(how, sizeof(how), "a bubble per level vs one per thread (the classic sumtime's "
			 "layout), seeds both, strategy %s", w.sched);
		print_line(&lines[l], "marcel_two_bubbles", &lines[l].mc[SEEDS_TWO_BUBBLES], how);
	}
	if (!have_tbb)
		printf("INFO nested: no tbb_task_group lines (bench_nested_tbb not built: no oneTBB)\n");
	for (int v = 0; v < NVARIANTS; v++) {
		free(m.sum[v].t);
		for (int l = 0; l < NSORTS; l++)
			free(m.sort[l][v].t);
	}
	free(omp_sum_s.t);
	free(tbb_sum.t);
	for (int l = 0; l < NSORTS; l++) {
		free(omp_sort[l].t);
		free(tbb_sort[l].t);
	}
	return 0;
}
