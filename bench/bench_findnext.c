/*
 * find_next_cycles: what looking for the next thread costs on a deeper run-queue tree,
 * measured through the public API.
 *
 * One worker (--marcel-nvp 1) and two ULTs on VP0's own queue that marcel_yield() to each
 * other; rdtsc cycles per yield (one yield = one look for the next thread + one switch),
 * timed in the first ULT over 2N switches. Run on two synthetic topologies:
 *
 *   deep  "pack:2 core:2 pu:1": VP0 looks at 4 queues (its own, Core0, Package0, machine),
 *         the three upper ones empty;
 *   flat  "core:1": VP0 looks at 2 queues (its own, machine).
 *
 * so deep - flat is the price of the deeper path. Each repetition starts the runtime on
 * one topology, measures, stops it, and does the same on the other, so drift hits both.
 * Synthetic topologies are not bound to processors (ARCHITECTURE.md, MARCEL_TOPOLOGY).
 *
 * find_next alone (without the switch) is measured by bench_find_next_internal.c, which
 * needs the runtime's private headers and so cannot be a public-API program like this one;
 * it prints `BENCH find_next_cycles_internal ...` and bench/run runs it next to this one.
 */
#include "common.h"
#include <marcel.h>

#define DEEP "pack:2 core:2 pu:1"
#define FLAT "core:1"

struct ult_arg {
	long n;
	int timed;
	uint64_t cycles;
	uint64_t ns;
	long yields;
	int off_vp0;
};

static any_t ult(any_t p)
{
	struct ult_arg *a = p;
	uint64_t t0 = bench_now_ns(), c0 = bench_cycles();
	for (long i = 0; i < a->n; i++) {
		BENCH_CHECK(marcel_yield());
		a->yields++;
	}
	uint64_t c1 = bench_cycles(), t1 = bench_now_ns();
	a->off_vp0 = marcel_current_vp() != 0;
	if (a->timed) {
		a->cycles = c1 - c0;
		a->ns = t1 - t0;
	}
	return (any_t)(uintptr_t)a->yields;
}

/* Starts the runtime on `topo` with one VP, times `n` yields each way, stops it.
 * Returns cycles per yield; *ns gets ns per yield. */
static double run_on(const char *topo, long n, unsigned expect_items, double *ns)
{
	char a0[] = "bench_findnext", a1[] = "--marcel-topology", a3[] = "--marcel-nvp", a4[] = "1";
	char a2[64];
	snprintf(a2, sizeof(a2), "%s", topo);
	char *argv[] = { a0, a1, a2, a3, a4, NULL };
	int argc = 5;
	BENCH_CHECK(marcel_init(&argc, argv));
	if (argc != 1)
		bench_fail("marcel_init left %d arguments", argc);
	if (marcel_nbvps() != 1 || !marcel_topo_is_fake() || marcel_topo_nbitems() != expect_items)
		bench_fail("topology '%s': %u VPs, fake=%d, %u items (expected 1, 1, %u)", topo,
			   marcel_nbvps(), marcel_topo_is_fake(), marcel_topo_nbitems(), expect_items);
	marcel_attr_t attr;
	BENCH_CHECK(marcel_attr_init(&attr));
	BENCH_CHECK(marcel_attr_setvpset(&attr, MARCEL_VPSET_VP(0)));
	struct ult_arg a = { .n = n, .timed = 1 }, b = { .n = n };
	marcel_t ta, tb;
	any_t ra, rb;
	BENCH_CHECK(marcel_create(&ta, &attr, ult, &a));
	BENCH_CHECK(marcel_create(&tb, &attr, ult, &b));
	BENCH_CHECK(marcel_join(ta, &ra));
	BENCH_CHECK(marcel_join(tb, &rb));
	BENCH_CHECK(marcel_attr_destroy(&attr));
	marcel_end();
	if ((uintptr_t)ra != (uintptr_t)n || (uintptr_t)rb != (uintptr_t)n || a.off_vp0 || b.off_vp0)
		bench_fail("yield on '%s': counts %lu/%lu (expected %ld), off VP0 %d/%d", topo,
			   (unsigned long)(uintptr_t)ra, (unsigned long)(uintptr_t)rb, n, a.off_vp0, b.off_vp0);
	*ns = (double)a.ns / (2.0 * (double)n);
	return (double)a.cycles / (2.0 * (double)n);
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	bench_parse(argc, argv, &o);
	const int R = o.reps;
	const long n = o.full ? 5000000 : 2000000;
	double *deep = calloc((size_t)R, sizeof(double)), *flat = calloc((size_t)R, sizeof(double));
	double *deep_ns = calloc((size_t)R, sizeof(double)), *flat_ns = calloc((size_t)R, sizeof(double));
	if (!deep || !flat || !deep_ns || !flat_ns)
		bench_fail("out of memory");
	/* Item counts as marcel-topo shows them: 7 for DEEP (machine, 2 packages, 4 cores),
	 * 1 for FLAT (machine, core and PU merged). */
	double ns;
	run_on(FLAT, n / 10, 1, &ns);
	run_on(DEEP, n / 10, 7, &ns);
	for (int r = 0; r < R; r++) {
		flat[r] = run_on(FLAT, n, 1, &flat_ns[r]);
		deep[r] = run_on(DEEP, n, 7, &deep_ns[r]);
	}
	double ghz = bench_tsc_ghz();
	struct bench_stat d = bench_stat_of(deep, R), f = bench_stat_of(flat, R);
	bench_line("find_next_cycles", "cycles", d, "flat", f,
		   "rdtsc cycles per marcel_yield (find_next + switch), 1 VP, 2 ULTs on VP0's queue, %ld "
		   "yields each; marcel = \"%s\" (4 queues on the path, upper 3 empty), flat = \"%s\" (2 "
		   "queues); deep-flat = %.1f cycles; %.1f / %.1f ns; TSC %.2f GHz; %d reps",
		   n, DEEP, FLAT, d.med - f.med, bench_stat_of(deep_ns, R).med, bench_stat_of(flat_ns, R).med,
		   ghz, R);
	free(deep);
	free(flat);
	free(deep_ns);
	free(flat_ns);
	return 0;
}
