/*
 * Thread creation + join, marcel against pthreads, in one process:
 *
 *   create_join_1by1        create one thread, join it, repeat; ns per pair. marcel: the
 *                           children get a vpset holding only the creator's VP
 *                           (marcel_current_vp()), so this measures the thread machinery
 *                           on one worker, not a hand-off between cores.
 *   create_join_1by1_shared the same with default attributes (NULL): children go to the
 *                           machine-wide queue that every worker polls, so another VP may
 *                           take them (the comment says how often one did).
 *   create_join_batch100k   create 100k threads, then join them all; ns per thread.
 *                           marcel: creator's VP as above. pthreads: 100k at once if the
 *                           box allows it, otherwise batches as large as it allows (the
 *                           comment gives the batch size and where EAGAIN struck).
 *
 * The marcel side runs first, in a driver thread whose vpset is VP0 (so that it stays on
 * VP0 when it blocks in marcel_join and is woken again). The pthread peers run after
 * marcel_end, which restores the affinity marcel_init gave the calling kernel thread
 * (pthreads created while it is bound to PU0 would inherit that), and before any process
 * state left by 100k pthreads can affect the marcel figures. Pthreads use default
 * attributes.
 *
 * Every child returns a value derived from its argument and the joiner checks it.
 */
#include "common.h"
#include <pthread.h>
#include <sched.h>
#include <marcel.h>

#define BATCH 100000L

/* ---------------- pthreads ---------------- */

static void *pt_body(void *a)
{
	return (void *)((uintptr_t)a + 1);
}

static void pt_join_check(pthread_t t, long i)
{
	void *r;
	BENCH_CHECK(pthread_join(t, &r));
	if ((uintptr_t)r != (uintptr_t)i + 1)
		bench_fail("pthread %ld returned %p", i, r);
}

static double pt_1by1(long n)
{
	uint64_t t0 = bench_now_ns();
	for (long i = 0; i < n; i++) {
		pthread_t t;
		BENCH_CHECK(pthread_create(&t, NULL, pt_body, (void *)(uintptr_t)i));
		pt_join_check(t, i);
	}
	return (double)(bench_now_ns() - t0) / (double)n;
}

/* Creates `total` threads in batches of at most `batch` (create all of a batch, then join
 * them all). A batch that hits EAGAIN is cut short there and joined. Returns ns per thread;
 * *smallest receives the smallest batch that was cut short by EAGAIN (or `batch`). */
static double pt_batches(pthread_t *ts, long total, long batch, long *smallest)
{
	*smallest = batch;
	uint64_t t0 = bench_now_ns();
	for (long done = 0; done < total;) {
		long want = total - done < batch ? total - done : batch, k = 0;
		for (; k < want; k++) {
			int e = pthread_create(&ts[k], NULL, pt_body, (void *)(uintptr_t)(done + k));
			if (e == EAGAIN && k > 0)
				break;
			BENCH_CHECK(e);
		}
		if (k < want && k < *smallest)
			*smallest = k;
		for (long i = 0; i < k; i++)
			pt_join_check(ts[i], done + i);
		done += k;
	}
	return (double)(bench_now_ns() - t0) / (double)total;
}

/* ---------------- marcel ---------------- */

static any_t mc_body(any_t a)
{
	return (any_t)((uintptr_t)a + 1);
}

/* Also reports where it ran: result = (arg << 12) | vp. */
static any_t mc_body_vp(any_t a)
{
	return (any_t)(((uintptr_t)a << 12) | (uintptr_t)(marcel_current_vp() & 0xfff));
}

static void mc_join_check(marcel_t t, long i)
{
	any_t r;
	BENCH_CHECK(marcel_join(t, &r));
	if ((uintptr_t)r != (uintptr_t)i + 1)
		bench_fail("marcel thread %ld returned %p", i, r);
}

static double mc_1by1(const marcel_attr_t *attr, long n)
{
	uint64_t t0 = bench_now_ns();
	for (long i = 0; i < n; i++) {
		marcel_t t;
		BENCH_CHECK(marcel_create(&t, attr, mc_body, (any_t)(uintptr_t)i));
		mc_join_check(t, i);
	}
	return (double)(bench_now_ns() - t0) / (double)n;
}

/* Default attributes; *elsewhere counts children that ran on another VP than the creator. */
static double mc_1by1_shared(long n, long *elsewhere)
{
	int me = marcel_current_vp();
	long away = 0;
	uint64_t t0 = bench_now_ns();
	for (long i = 0; i < n; i++) {
		marcel_t t;
		any_t r;
		BENCH_CHECK(marcel_create(&t, NULL, mc_body_vp, (any_t)(uintptr_t)i));
		BENCH_CHECK(marcel_join(t, &r));
		if ((uintptr_t)r >> 12 != (uintptr_t)i)
			bench_fail("marcel thread %ld returned %p", i, r);
		away += (int)((uintptr_t)r & 0xfff) != me;
	}
	double ns = (double)(bench_now_ns() - t0) / (double)n;
	*elsewhere += away;
	return ns;
}

static double mc_batch(const marcel_attr_t *attr, marcel_t *ts, long n)
{
	uint64_t t0 = bench_now_ns();
	for (long i = 0; i < n; i++)
		BENCH_CHECK(marcel_create(&ts[i], attr, mc_body, (any_t)(uintptr_t)i));
	for (long i = 0; i < n; i++)
		mc_join_check(ts[i], i);
	return (double)(bench_now_ns() - t0) / (double)n;
}

struct job {
	int reps;
	long n_1by1, n_shared;
	double *one, *shared, *batch; /* per-rep results */
	long shared_elsewhere;
	int vp_moves;                 /* times the driver found itself off its VP */
	unsigned nvp; /* VPs the runtime had */
};

static any_t driver(any_t arg)
{
	struct job *j = arg;
	j->nvp = marcel_nbvps();
	int vp = marcel_current_vp();
	marcel_attr_t local;
	BENCH_CHECK(marcel_attr_init(&local));
	BENCH_CHECK(marcel_attr_setvpset(&local, MARCEL_VPSET_VP((unsigned)vp)));
	marcel_t *ts = malloc((size_t)BATCH * sizeof(*ts));
	if (!ts)
		bench_fail("out of memory");

	/* Warm-up: fills the descriptor and stack pools. */
	mc_1by1(&local, j->n_1by1 / 10);
	long dummy = 0;
	mc_1by1_shared(j->n_shared / 10, &dummy);

	/* Same order as the pthread side: one-at-a-time runs first, batches last. The shared
	 * runs come after the VP-local ones so that the other workers' polling they provoke
	 * cannot spill over into the VP-local figures. */
	for (int r = 0; r < j->reps; r++) {
		j->one[r] = mc_1by1(&local, j->n_1by1);
		j->vp_moves += marcel_current_vp() != vp;
	}
	for (int r = 0; r < j->reps; r++) {
		j->shared[r] = mc_1by1_shared(j->n_shared, &j->shared_elsewhere);
		j->vp_moves += marcel_current_vp() != vp;
	}
	mc_batch(&local, ts, BATCH);
	for (int r = 0; r < j->reps; r++) {
		j->batch[r] = mc_batch(&local, ts, BATCH);
		j->vp_moves += marcel_current_vp() != vp;
	}
	free(ts);
	BENCH_CHECK(marcel_attr_destroy(&local));
	return (any_t)(uintptr_t)0x600d;
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	bench_parse(argc, argv, &o);
	const int R = o.reps;
	const long n_pt = o.full ? 5000 : 2000;
	struct job j = { .reps = R, .n_1by1 = o.full ? 500000 : 200000, .n_shared = o.full ? 300000 : 100000 };
	double *pt_one = calloc((size_t)R, sizeof(double)), *pt_batch = calloc((size_t)R, sizeof(double));
	double *pt_pinned = calloc((size_t)R, sizeof(double));
	j.one = calloc((size_t)R, sizeof(double));
	j.shared = calloc((size_t)R, sizeof(double));
	j.batch = calloc((size_t)R, sizeof(double));
	pthread_t *pts = malloc((size_t)BATCH * sizeof(*pts));
	if (!pt_one || !pt_pinned || !pt_batch || !j.one || !j.shared || !j.batch || !pts)
		bench_fail("out of memory");

	/* ---- marcel ---- */
	bench_run_on_vp0(driver, &j);
	unsigned nvp = j.nvp;
	if (j.vp_moves)
		bench_fail("the VP0-bound driver left VP0 %d times", j.vp_moves);

	/* ---- pthreads (after marcel_end: see the top of the file) ---- */
	/* All one-at-a-time runs come before any batch: after tens of thousands of threads
	 * have existed, pthread_create+join one at a time gets 3-4x slower for the rest of
	 * the process on this box (measured: ~20 us before, 70-100 us after a 30k batch). */
	cpu_set_t all, cpu0;
	if (sched_getaffinity(0, sizeof(all), &all))
		bench_fail("sched_getaffinity: %s", strerror(errno));
	CPU_ZERO(&cpu0);
	CPU_SET(0, &cpu0);
	pt_1by1(n_pt / 10);
	for (int r = 0; r < R; r++) {
		/* Pinned (children inherit CPU 0): the analogue of marcel's VP-local case. */
		if (sched_setaffinity(0, sizeof(cpu0), &cpu0))
			bench_fail("sched_setaffinity: %s", strerror(errno));
		pt_pinned[r] = pt_1by1(n_pt);
		if (sched_setaffinity(0, sizeof(all), &all))
			bench_fail("sched_setaffinity: %s", strerror(errno));
		pt_one[r] = pt_1by1(n_pt);
	}
	long probe;
	/* Probe: how many simultaneous pthreads this box allows (up to BATCH). */
	pt_batches(pts, BATCH, BATCH, &probe);
	long pt_batch_size = probe;
	if (probe < BATCH) /* leave headroom so timed batches do not hit the limit */
		pt_batch_size = probe * 9 / 10 / 1000 * 1000 > 0 ? probe * 9 / 10 / 1000 * 1000 : probe;
	long smallest = pt_batch_size;
	for (int r = 0; r < R; r++) {
		long s;
		pt_batch[r] = pt_batches(pts, BATCH, pt_batch_size, &s);
		if (s < smallest)
			smallest = s;
	}
	free(pts);


	bench_line("create_join_1by1", "ns", bench_stat_of(j.one, R), "pthread", bench_stat_of(pt_pinned, R),
		   "marcel N=%ld, children on the creator's VP (vpset); pthread N=%ld, default attrs, "
		   "creator pinned to CPU 0 so children run on its core too (unpinned: see the _shared "
		   "line); %d reps",
		   j.n_1by1, n_pt, R);
	bench_line("create_join_1by1_shared", "ns", bench_stat_of(j.shared, R), "pthread",
		   bench_stat_of(pt_one, R),
		   "marcel N=%ld, default attrs (machine-wide queue), %u VPs, %.1f%% of children ran on "
		   "another VP than the creator; pthread N=%ld, default attrs, unpinned; %d reps",
		   j.n_shared, nvp, 100.0 * (double)j.shared_elsewhere / ((double)j.n_shared * R), n_pt, R);
	if (pt_batch_size == BATCH && smallest == BATCH)
		bench_line("create_join_batch100k", "ns", bench_stat_of(j.batch, R), "pthread",
			   bench_stat_of(pt_batch, R),
			   "100000 created then all joined, both sides; marcel children on the creator's "
			   "VP; %d reps",
			   R);
	else
		bench_line("create_join_batch100k", "ns", bench_stat_of(j.batch, R), "pthread",
			   bench_stat_of(pt_batch, R),
			   "marcel: 100000 created then all joined, children on the creator's VP; pthread: "
			   "100000 in batches of %ld created then joined (EAGAIN at %ld simultaneous "
			   "threads; smallest batch %ld); %d reps",
			   pt_batch_size, probe, smallest, R);

	free(pt_one);
	free(pt_pinned);
	free(pt_batch);
	free(j.one);
	free(j.shared);
	free(j.batch);
	return 0;
}
