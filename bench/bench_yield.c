/*
 * Switching between two threads on one core, marcel against a futex hand-off:
 *
 *   yield_2ult_1vp          two ULTs bound to VP0 (vpset) call marcel_yield() in turn;
 *                           ns per yield, i.e. per switch. Timed in the first ULT from just
 *                           before its first yield to just after its last: 2N switches.
 *   peer pthread_futex      two pthreads pinned to CPU 0 hand a turn word to each other:
 *                           A sets it and FUTEX_WAKEs B, then FUTEX_WAITs until B hands it
 *                           back; ns per hand-off (one direction).
 *   yield_2ult_1vp_dirtyfp  the same ULT pair, but the first ULT raises the inexact flag in
 *                           MXCSR (1.0/3.0 on volatile operands, checked with fetestexcept)
 *                           before its loop. Compared with the clean marcel figure; clean and
 *                           dirty repetitions alternate so both see the same conditions.
 *
 * Sticky FP status flags are not per-thread state in marcel (marcel/thread.h), so the clean
 * runs clear them first (feclearexcept) and check they stayed clear.
 */
#include "common.h"
#include <fenv.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <marcel.h>

/* ---------------- pthread futex hand-off ---------------- */

static atomic_uint turn; /* 0: A's turn, 1: B's turn */

static void futex_wait(atomic_uint *w, unsigned val)
{
	syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(atomic_uint *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

struct pt_arg {
	long n;
	unsigned me;   /* 0 = A, 1 = B */
	double ns;     /* A: ns per hand-off */
	long count;
};

static void pin_cpu0(void)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(0, &s);
	BENCH_CHECK(pthread_setaffinity_np(pthread_self(), sizeof(s), &s));
}

static void *pt_side(void *p)
{
	struct pt_arg *a = p;
	pin_cpu0();
	unsigned mine = a->me, other = !a->me;
	uint64_t t0 = bench_now_ns();
	for (long i = 0; i < a->n; i++) {
		while (atomic_load(&turn) != mine)
			futex_wait(&turn, other);
		atomic_store(&turn, other);
		futex_wake(&turn);
		a->count++;
	}
	if (mine == 0) {
		/* Wait for B's last hand-off so both directions are counted: 2N hand-offs. */
		while (atomic_load(&turn) != mine)
			futex_wait(&turn, other);
		a->ns = (double)(bench_now_ns() - t0) / (2.0 * (double)a->n);
	}
	return NULL;
}

static double pt_handoff(long n)
{
	struct pt_arg a = { .n = n, .me = 0 }, b = { .n = n, .me = 1 };
	pthread_t ta, tb;
	atomic_store(&turn, 0);
	/* B first, so it is waiting when A starts; A's clock starts at its first hand-off. */
	BENCH_CHECK(pthread_create(&tb, NULL, pt_side, &b));
	BENCH_CHECK(pthread_create(&ta, NULL, pt_side, &a));
	BENCH_CHECK(pthread_join(ta, NULL));
	BENCH_CHECK(pthread_join(tb, NULL));
	if (a.count != n || b.count != n)
		bench_fail("futex hand-off: counts %ld/%ld, expected %ld", a.count, b.count, n);
	return a.ns;
}

/* ---------------- marcel yield ---------------- */

struct ult_arg {
	long n;
	int timed;     /* the first ULT measures */
	int dirty;     /* raise FE_INEXACT before the loop */
	double ns;
	long yields;
	int vp_moves;
};

static volatile double fp_num = 1.0, fp_den = 3.0, fp_sink;

static any_t ult(any_t p)
{
	struct ult_arg *a = p;
	if (a->timed) {
		feclearexcept(FE_ALL_EXCEPT);
		if (a->dirty) {
			fp_sink = fp_num / fp_den;
			if (!fetestexcept(FE_INEXACT))
				bench_fail("1.0/3.0 did not raise FE_INEXACT");
		}
	}
	uint64_t t0 = bench_now_ns();
	for (long i = 0; i < a->n; i++) {
		BENCH_CHECK(marcel_yield());
		a->yields++;
	}
	a->vp_moves += marcel_current_vp() != 0;
	if (a->timed) {
		uint64_t t1 = bench_now_ns();
		/* Nothing in the loop computes in floating point: the flags must be as we left them
		 * (checked before the division below, which may itself raise FE_INEXACT). */
		if (!!fetestexcept(FE_INEXACT) != !!a->dirty)
			bench_fail("FE_INEXACT is %s after the %s loop", a->dirty ? "clear" : "set",
				   a->dirty ? "dirty" : "clean");
		a->ns = (double)(t1 - t0) / (2.0 * (double)a->n);
	}
	return (any_t)(uintptr_t)a->yields;
}

static double mc_pair(long n, int dirty)
{
	marcel_attr_t attr;
	BENCH_CHECK(marcel_attr_init(&attr));
	BENCH_CHECK(marcel_attr_setvpset(&attr, MARCEL_VPSET_VP(0)));
	struct ult_arg a = { .n = n, .timed = 1, .dirty = dirty }, b = { .n = n };
	marcel_t ta, tb;
	any_t ra, rb;
	/* Both queued on VP0 before either runs; A runs first (FIFO) when we block in join. */
	BENCH_CHECK(marcel_create(&ta, &attr, ult, &a));
	BENCH_CHECK(marcel_create(&tb, &attr, ult, &b));
	BENCH_CHECK(marcel_join(ta, &ra));
	BENCH_CHECK(marcel_join(tb, &rb));
	BENCH_CHECK(marcel_attr_destroy(&attr));
	if ((uintptr_t)ra != (uintptr_t)n || (uintptr_t)rb != (uintptr_t)n)
		bench_fail("yield: counts %lu/%lu, expected %ld", (unsigned long)(uintptr_t)ra,
			   (unsigned long)(uintptr_t)rb, n);
	if (a.vp_moves || b.vp_moves)
		bench_fail("a VP0-bound ULT ran on another VP (%d/%d times)", a.vp_moves, b.vp_moves);
	feclearexcept(FE_ALL_EXCEPT);
	return a.ns;
}

struct job {
	int reps;
	long n;
	double *clean, *dirty;
};

static any_t driver(any_t p)
{
	struct job *j = p;
	mc_pair(j->n / 10, 0);
	mc_pair(j->n / 10, 1);
	for (int r = 0; r < j->reps; r++) {
		j->clean[r] = mc_pair(j->n, 0);
		j->dirty[r] = mc_pair(j->n, 1);
	}
	return (any_t)(uintptr_t)0x600d;
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	bench_parse(argc, argv, &o);
	const int R = o.reps;
	const long n_pt = o.full ? 50000 : 20000;
	struct job j = { .reps = R, .n = o.full ? 5000000 : 2000000 };
	double *pt = calloc((size_t)R, sizeof(double));
	j.clean = calloc((size_t)R, sizeof(double));
	j.dirty = calloc((size_t)R, sizeof(double));
	if (!pt || !j.clean || !j.dirty)
		bench_fail("out of memory");

	/* Peer first, before marcel_init binds this kernel thread. */
	pt_handoff(n_pt / 10);
	for (int r = 0; r < R; r++)
		pt[r] = pt_handoff(n_pt);

	bench_run_on_vp0(driver, &j);

	struct bench_stat clean = bench_stat_of(j.clean, R), dirty = bench_stat_of(j.dirty, R);
	bench_line("yield_2ult_1vp", "ns", clean, "pthread_futex", bench_stat_of(pt, R),
		   "marcel: 2 ULTs on VP0, %ld yields each, ns per yield; futex: 2 pthreads on CPU0, "
		   "%ld hand-offs each way, ns per hand-off; %d reps",
		   j.n, n_pt, R);
	bench_line("yield_2ult_1vp_dirtyfp", "ns", dirty, "marcel_clean", clean,
		   "one ULT raised FE_INEXACT before its loop; clean/dirty reps interleaved; %d reps", R);
	free(pt);
	free(j.clean);
	free(j.dirty);
	return 0;
}
