/*
 * bubble_wake_burst_64: how long a bubble of 64 threads takes to get going once woken,
 * under the default strategy (burst).
 *
 * The runtime runs on the synthetic topology "pack:2 core:2 pu:1" with 2 VPs (one per
 * CPU of the development VM; VP0 and VP1 are Core0 and Core1 of Package0, Package1 has
 * no VP), so each VP looks at 4 queues: its own, its core's, Package0's and the
 * machine's. A driver ULT bound to VP0 creates 64 threads with marcel_create_dontsched()
 * in a fresh bubble whose burst level is MARCEL_LEVEL_PACKAGE, then times from just
 * before marcel_wake_up_bubble() until the 64th thread has started: the bubble is queued
 * closed on the machine's queue, the first VP that meets it pulls it down to Package0,
 * the next look bursts it there and the VPs run its threads. Each thread bumps a
 * counter and returns; the one that brings it to 64 reads the clock (so the figure ends
 * at the last start, not when the driver notices) and posts the semaphore the driver
 * waits on. Threads that started earlier on the same VP have also ended by then (their
 * exit is in the figure, on both sides). The
 * bubble's level is set so that bursting goes through a level: left unset, burst bursts a
 * 64-thread bubble on the machine at once (no level has 64 VPs); that variant is timed
 * too and given in the comment.
 *
 * Peer `flat`: the same 64 threads created with marcel_create_dontsched() without a
 * bubble, then woken one at a time with marcel_wake_up_created_thread() (they go to the
 * machine's queue, which both VPs serve), timed the same way. It is the fair peer: the
 * threads exist before the clock starts on both sides, so what differs is one bubble
 * wake-up against 64 thread wake-ups. (pthreads created and started would mostly time
 * kernel thread creation.)
 *
 * Figure: microseconds from the wake-up call to the 64th start, per wake-up of the 64
 * threads; mean over N wake-ups per repetition, the three kinds interleaved so drift
 * hits all of them. The comment also gives the time spent in the wake-up call(s) alone
 * and the share of threads VP1 ran. Threads are joined (and the bubble joined and destroyed) outside the
 * timed part. Checked: every thread ran once and returned its value, the counter reached
 * 64, and the bubble burst on Package0 (its MARCEL_STATS_LAST_LEVEL).
 */
#include "common.h"
#include <stdatomic.h>

#define TOPO "pack:2 core:2 pu:1"
#define NB 64

enum kind { K_LEVEL, K_UNSET, K_FLAT, NB_KINDS };

struct wake {
	atomic_uint started;
	uint64_t t_last;        /* written by the thread that starts last */
	marcel_sem_t all;       /* posted by the thread that starts last */
	unsigned char ran[NB];
	unsigned char vp[NB];
};

struct targ {
	struct wake *w;
	unsigned i;
};

static any_t body(any_t p)
{
	struct targ *a = p;
	struct wake *w = a->w;
	w->ran[a->i]++;
	w->vp[a->i] = (unsigned char)marcel_current_vp();
	if (atomic_fetch_add(&w->started, 1) == NB - 1) {
		w->t_last = bench_now_ns();
		marcel_sem_V(&w->all);
	}
	return (any_t)(uintptr_t)(a->i + 1);
}

struct drv {
	long n;
	int reps;
	int package_item;        /* Package0's topology item: where the bubble must burst */
	double *fig[NB_KINDS];   /* us per wake-up, one per repetition */
	double *call[NB_KINDS];  /* us in the wake-up call(s) alone, one per repetition */
	long on_vp1[NB_KINDS];   /* threads that ran on VP1, over the timed repetitions */
};

static marcel_bubble_t bub;

/* One wake-up of 64 threads of kind k; returns ns from the wake-up call to the 64th
 * start, adds the ns until the wake-up call(s) returned to *call and the threads that
 * ran on VP1 to *vp1. */
static uint64_t one_wake(enum kind k, const struct drv *d, uint64_t *call, long *vp1)
{
	static struct wake w;
	static struct targ args[NB];
	marcel_t t[NB];
	memset(&w, 0, sizeof(w));
	atomic_init(&w.started, 0);
	BENCH_CHECK(marcel_sem_init(&w.all, 0));
	marcel_attr_t at;
	BENCH_CHECK(marcel_attr_init(&at));
	if (k != K_FLAT) {
		BENCH_CHECK(marcel_bubble_init(&bub));
		if (k == K_LEVEL)
			BENCH_CHECK(marcel_bubble_setschedlevel(&bub, MARCEL_LEVEL_PACKAGE));
		BENCH_CHECK(marcel_attr_setnaturalbubble(&at, &bub));
	}
	for (unsigned i = 0; i < NB; i++) {
		args[i] = (struct targ){ &w, i };
		BENCH_CHECK(marcel_create_dontsched(&t[i], &at, body, &args[i]));
	}
	uint64_t t0 = bench_now_ns();
	if (k == K_FLAT)
		for (unsigned i = 0; i < NB; i++)
			BENCH_CHECK(marcel_wake_up_created_thread(t[i]));
	else
		BENCH_CHECK(marcel_wake_up_bubble(&bub));
	*call += bench_now_ns() - t0;
	/* Joining at once would interleave the driver (bound to VP0) with the threads' starts:
	 * each exit would hand VP0 back to it. It waits once, for the last start. */
	marcel_sem_P(&w.all);
	for (unsigned i = 0; i < NB; i++) {
		any_t res;
		BENCH_CHECK(marcel_join(t[i], &res));
		if ((uintptr_t)res != i + 1)
			bench_fail("kind %d: thread %u returned %p", k, i, res);
	}
	if (atomic_load(&w.started) != NB)
		bench_fail("kind %d: %u threads started, expected %d", k, atomic_load(&w.started), NB);
	for (unsigned i = 0; i < NB; i++) {
		if (w.ran[i] != 1)
			bench_fail("kind %d: thread %u ran %u times", k, i, w.ran[i]);
		*vp1 += w.vp[i] == 1;
	}
	if (k == K_LEVEL) {
		/* Only a burst sets a bubble's last level, and with the level fixed every burst of
		 * it happens on Package0 (the only package with VPs), regeneration included. */
		long long lvl;
		BENCH_CHECK(marcel_bubble_stats_get(&bub, MARCEL_STATS_LAST_LEVEL, &lvl));
		if (lvl != d->package_item)
			bench_fail("bubble burst on item %lld, expected Package0 (item %d)", lvl, d->package_item);
	}
	if (k != K_FLAT) {
		BENCH_CHECK(marcel_bubble_join(&bub));
		BENCH_CHECK(marcel_bubble_destroy(&bub));
	}
	BENCH_CHECK(marcel_attr_destroy(&at));
	BENCH_CHECK(marcel_sem_destroy(&w.all));
	if (w.t_last < t0)
		bench_fail("kind %d: last start before the wake-up", k);
	return w.t_last - t0;
}

/* One repetition: n wake-ups of each kind, interleaved; us per wake-up into fig[k][r]
 * (r < 0: warm-up, nothing kept). */
static void repetition(struct drv *d, long n, int r)
{
	uint64_t sum[NB_KINDS] = { 0 }, call[NB_KINDS] = { 0 };
	long vp1[NB_KINDS] = { 0 };
	for (long i = 0; i < n; i++)
		for (int k = 0; k < NB_KINDS; k++)
			sum[k] += one_wake((enum kind)k, d, &call[k], &vp1[k]);
	if (r < 0)
		return;
	for (int k = 0; k < NB_KINDS; k++) {
		d->fig[k][r] = (double)sum[k] / (double)n / 1000.0;
		d->call[k][r] = (double)call[k] / (double)n / 1000.0;
		d->on_vp1[k] += vp1[k];
	}
}

static any_t driver(any_t p)
{
	struct drv *d = p;
	repetition(d, d->n / 10 + 1, -1);
	for (int r = 0; r < d->reps; r++)
		repetition(d, d->n, r);
	if (marcel_current_vp() != 0)
		bench_fail("the driver left VP0");
	return (any_t)0x600d;
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	bench_parse(argc, argv, &o);
	struct drv d = { .n = o.full ? 1000 : 400, .reps = o.reps };
	for (int k = 0; k < NB_KINDS; k++)
		if (!(d.fig[k] = calloc((size_t)o.reps, sizeof(double))) ||
		    !(d.call[k] = calloc((size_t)o.reps, sizeof(double))))
			bench_fail("out of memory");

	/* The strategy is named although it is the default, so that a MARCEL_BUBBLE_SCHEDULER
	 * in the environment cannot turn this into another benchmark. */
	char a0[] = "bench_bubble_wake", a1[] = "--marcel-topology", a2[] = TOPO, a3[] = "--marcel-nvp",
	     a4[] = "2", a5[] = "--marcel-bubble-scheduler", a6[] = "burst";
	char *mv[] = { a0, a1, a2, a3, a4, a5, a6, NULL };
	int mc = 7;
	BENCH_CHECK(marcel_init(&mc, mv));
	if (mc != 1)
		bench_fail("marcel_init left %d arguments", mc);
	const char *sched = marcel_bubble_sched_name(marcel_bubble_current_sched());
	/* 7 items: machine, 2 packages, 4 cores (marcel-topo). */
	if (marcel_nbvps() != 2 || !marcel_topo_is_fake() || marcel_topo_nbitems() != 7 || !sched ||
	    strcmp(sched, "burst"))
		bench_fail("runtime: %u VPs, fake=%d, %u items, strategy %s (expected 2, 1, 7, burst)",
			   marcel_nbvps(), marcel_topo_is_fake(), marcel_topo_nbitems(), sched ? sched : "none");
	d.package_item = marcel_topo_vp_ancestor(0, MARCEL_LEVEL_PACKAGE);
	if (d.package_item < 0 || marcel_topo_vp_ancestor(1, MARCEL_LEVEL_PACKAGE) != d.package_item)
		bench_fail("VP0 and VP1 are not in one package");

	marcel_attr_t a;
	BENCH_CHECK(marcel_attr_init(&a));
	BENCH_CHECK(marcel_attr_setvpset(&a, MARCEL_VPSET_VP(0)));
	marcel_t t;
	any_t res;
	BENCH_CHECK(marcel_create(&t, &a, driver, &d));
	BENCH_CHECK(marcel_join(t, &res));
	if ((uintptr_t)res != 0x600d)
		bench_fail("driver returned %p", res);
	BENCH_CHECK(marcel_attr_destroy(&a));
	marcel_end();

	struct bench_stat lv = bench_stat_of(d.fig[K_LEVEL], o.reps), un = bench_stat_of(d.fig[K_UNSET], o.reps),
			  fl = bench_stat_of(d.fig[K_FLAT], o.reps);
	double per = (double)(d.n * o.reps * NB) / 100.0;
	bench_line("bubble_wake_burst_64", "us", lv, "flat", fl,
		   "us from marcel_wake_up_bubble to the 64th start (threads made with "
		   "marcel_create_dontsched bump a counter and return); burst, \"%s\", 2 VPs, bubble level "
		   "Package (queued on the machine, pulled to Package0, burst there); %.0f ns/thread; level "
		   "unset (bursts at once) %.1f us (%.1f..%.1f); flat: no bubble, 64 x "
		   "marcel_wake_up_created_thread; in the wake-up call(s) %.2f / %.2f / %.2f us, on VP1 "
		   "%.0f/%.0f/%.0f%% (level/unset/flat); %ld wake-ups x %d reps",
		   TOPO, lv.med * 1000.0 / NB, un.med, un.min, un.max, bench_stat_of(d.call[K_LEVEL], o.reps).med,
		   bench_stat_of(d.call[K_UNSET], o.reps).med, bench_stat_of(d.call[K_FLAT], o.reps).med,
		   (double)d.on_vp1[K_LEVEL] / per, (double)d.on_vp1[K_UNSET] / per, (double)d.on_vp1[K_FLAT] / per,
		   d.n, o.reps);
	for (int k = 0; k < NB_KINDS; k++) {
		free(d.fig[k]);
		free(d.call[k]);
	}
	return 0;
}
