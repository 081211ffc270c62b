/*
 * What time slicing costs a compute loop:
 *
 *   preempt_overhead  two ULTs bound to VP0 each run the same compute loop (no calls,
 *                     about 50 ms each); the figure is the CPU time the process used
 *                     (user + system, every thread: the ticker and the signal handling
 *                     included) until both have finished, in us. CPU time rather than
 *                     wall time because the development VM is shared and its load moves
 *                     wall-clock figures by tens of percent; the wall-clock medians are
 *                     in the comment. marcel: MARCEL_TIMESLICE=1000 (1 ms), so they
 *                     alternate every slice (about 100 preemptions per run, each a
 *                     signal, the trampoline's full register save and a switch).
 *   preempt_overhead_10ms
 *                     the same with MARCEL_TIMESLICE=10000 (10 ms, Marcel's default and
 *                     the candidate for marcel's), about 10 preemptions per run.
 *   peer cooperative  the same runtime and loops with MARCEL_TIMESLICE=0: the first runs
 *                     to completion, then the second.
 *
 * Both are measured in the same run, one runtime started per repetition, alternating
 * which goes first. ratio = cooperative / time-sliced: 0.99 means the slices cost 1%.
 */
#include "common.h"
#include <stdatomic.h>
#include <sys/resource.h>

struct looper {
	volatile long count;
	volatile long *other;
	long iters;
	long switches;                    /* times the other's counter moved under us */
	double result;
};

/* A dependent integer and floating-point chain: no memory traffic but the two counters,
 * so what is measured is the loop and what preemption takes from it. */
static __attribute__((noinline)) void compute(struct looper *l)
{
	uint64_t x = 88172645463325252ull;
	double acc = 1.0;
	long last = *l->other;
	for (long i = 0; i < l->iters; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		acc = acc * 0.9999 + (double)(x >> 11) * 0x1p-53;
		l->count++;
		long o = *l->other;
		if (o != last) {
			l->switches++;
			last = o;
		}
	}
	l->result = acc;
}

static any_t looper_main(any_t p)
{
	compute(p);
	return NULL;
}

struct run {
	long iters;
	double us;                        /* process CPU time */
	double wall_us;
	long switches;
};

static double cpu_us(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static any_t driver(any_t p)
{
	struct run *r = p;
	struct looper a = { 0 }, b = { 0 };
	a.other = &b.count;
	b.other = &a.count;
	a.iters = b.iters = r->iters;
	marcel_attr_t at;
	BENCH_CHECK(marcel_attr_init(&at));
	BENCH_CHECK(marcel_attr_setvpset(&at, MARCEL_VPSET_VP(0)));
	marcel_t ta, tb;
	double c0 = cpu_us();
	uint64_t t0 = bench_now_ns();
	BENCH_CHECK(marcel_create(&ta, &at, looper_main, &a));
	BENCH_CHECK(marcel_create(&tb, &at, looper_main, &b));
	BENCH_CHECK(marcel_join(ta, NULL));
	BENCH_CHECK(marcel_join(tb, NULL));
	r->wall_us = (double)(bench_now_ns() - t0) / 1000.0;
	r->us = cpu_us() - c0;
	r->switches = a.switches + b.switches;
	if (a.result != b.result || a.count != r->iters || b.count != r->iters)
		bench_fail("the two loops disagree (%.17g vs %.17g)", a.result, b.result);
	return (any_t)0x600d;
}

static struct run measure(const char *timeslice, long iters)
{
	if (setenv("MARCEL_TIMESLICE", timeslice, 1))
		bench_fail("setenv");
	struct run r = { .iters = iters };
	bench_run_on_vp0(driver, &r);
	return r;
}

/* One line: the loops under `slice` against MARCEL_TIMESLICE=0, the
 * two alternating which goes first; at least min_switches interleavings expected. */
static void compare(const char *name, const char *slice, const char *what, long min_switches, long iters,
		    const struct bench_opts *o)
{
	double *ts = malloc((size_t)o->reps * sizeof(double)), *co = malloc((size_t)o->reps * sizeof(double));
	double *tsw = malloc((size_t)o->reps * sizeof(double)), *cow = malloc((size_t)o->reps * sizeof(double));
	if (!ts || !co || !tsw || !cow)
		bench_fail("out of memory");
	long switches = 0;
	for (int i = 0; i < o->reps; i++) {
		struct run a, b;
		if (i & 1) {
			b = measure("0", iters);
			a = measure(slice, iters);
		} else {
			a = measure(slice, iters);
			b = measure("0", iters);
		}
		if (b.switches)
			bench_fail("cooperative loops were interleaved (%ld switches)", b.switches);
		if (a.switches < min_switches)
			bench_fail("%s did not interleave the loops (%ld switches)", what, a.switches);
		ts[i] = a.us;
		co[i] = b.us;
		tsw[i] = a.wall_us;
		cow[i] = b.wall_us;
		switches += a.switches;
	}
	struct bench_stat wt = bench_stat_of(tsw, o->reps), wc = bench_stat_of(cow, o->reps);
	bench_line(name, "us", bench_stat_of(ts, o->reps), "cooperative", bench_stat_of(co, o->reps),
		   "process CPU time; 2 ULTs x %ld iterations on VP0, %s, %ld preemptions per run on "
		   "average; wall-clock medians %.0f vs %.0f us (ratio %.2f)",
		   iters, what, switches / o->reps, wt.med, wc.med, wt.med > 0 ? wc.med / wt.med : 0.0);
	free(ts);
	free(co);
	free(tsw);
	free(cow);
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	bench_parse(argc, argv, &o);
	long ms = o.full ? 100 : 50;

	/* Loop length for about `ms` per thread, calibrated outside the runtime. */
	struct looper cal = { 0 };
	volatile long zero = 0;
	cal.other = &zero;
	cal.iters = 1 << 22;
	uint64_t t0 = bench_now_ns();
	compute(&cal);
	long iters = (long)((double)cal.iters * (double)ms * 1e6 / (double)(bench_now_ns() - t0));

	measure("1000", iters); /* warm-up */
	measure("0", iters);
	compare("preempt_overhead", "1000", "1 ms slice", 10, iters, &o);
	compare("preempt_overhead_10ms", "10000", "10 ms slice", 2, iters, &o);
	unsetenv("MARCEL_TIMESLICE");
	return 0;
}
