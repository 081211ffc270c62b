/*
 * Synchronisation primitives and sleeping, marcel against the pthread/POSIX equivalent
 * measured in the same process:
 *
 *   mutex_pingpong_2vp      two ULTs, one bound to VP0 and one to VP1 (vpset), hand a turn
 *                           word to each other under a marcel mutex: each waits on its own
 *                           cond until the word names it, sets it to the other side and
 *                           signals the other's cond. ns per hand-off, timed by the VP0 side
 *                           over 2N hand-offs. Peer: two pthreads pinned to CPU 0 and CPU 1
 *                           (pthread_attr_setaffinity_np) doing the same with
 *                           pthread_mutex_t/pthread_cond_t.
 *   cond_pingpong_1vp       the same hand-off with both ULTs bound to VP0. Peer: the two
 *                           pthreads both pinned to CPU 0 -- the honest equivalent of one
 *                           VP: every hand-off is a kernel context switch on one core.
 *   sem_pingpong_1vp        two ULTs on VP0, two semaphores: A posts B's and waits on its
 *                           own, B the converse (marcel_sem_post/marcel_sem_wait). Peer:
 *                           POSIX sem_t between two pthreads pinned to CPU 0. ns per
 *                           hand-off over 2N hand-offs.
 *   barrier_4ult_1vp        4 ULTs on VP0 doing N rounds of marcel_barrier_wait (default,
 *                           sleep mode); ns per round, timed by the first ULT after one
 *                           untimed round. Peer: 4 pthreads pinned to CPU 0 with
 *                           pthread_barrier_t. Serial-thread returns are counted and must be
 *                           exactly one per round.
 *   usleep_10k_ult          10 000 ULTs bound to VP0, each marcel_usleep(1000), all created
 *                           then all joined; the figure is wall time / 10 000 (ns per
 *                           sleeper), the comment gives the wall time and the peak RSS growth
 *                           (VmHWM during the repetition, reset through /proc/self/clear_refs,
 *                           minus VmRSS before the warm-up run: memory the runtime keeps
 *                           between repetitions, e.g. pooled stacks, counts). Peer: 10 000
 *                           pthreads pinned to CPU 0 (as many as the box allows if fewer,
 *                           then said so), each nanosleep(1 ms). Every sleeper, on both
 *                           sides, reads the clock around its sleep (2 x ~60 ns here) and
 *                           checks that it slept at least 1 ms.
 *   marcel_rss_100k_blocked 100 000 ULTs with default attributes except a vpset of VP0
 *                           (default stack size) all blocked on one semaphore; the figure is
 *                           the VmRSS growth in KiB while they are all blocked (one
 *                           measurement, not a median), in its own marcel_init/marcel_end
 *                           cycle so the pools of the other benchmarks do not hide part of it.
 *                           If the ULTs cannot all get there (creation fails, or a stack
 *                           cannot be mapped: vm.max_map_count allows ~32 700 stacks of two
 *                           mappings), marcel_kib=FAILED and the comment says what happened
 *                           and how far it got (a watchdog kernel thread declares the failure
 *                           after 5 s without progress, then releases everyone) and the
 *                           program exits 1 after printing all its lines. Peer: as many
 *                           pthreads as the box allows blocked on one sem_t, their RSS growth
 *                           extrapolated linearly to 100 000 (peer=pthread_extrapolated).
 *
 * Order: the pthread peers of the timed benchmarks run first, before marcel_init (while the
 * runtime runs, the calling kernel thread is bound to PU0 and pthreads would inherit it);
 * then the marcel side in a driver ULT bound to VP0; then the RSS cycle; the pthread RSS
 * peer runs last because tens of thousands of pthreads slow pthread creation down for the
 * rest of the process (see RESULTS.md).
 */
#include "common.h"
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <unistd.h>
#include <marcel.h>

#define NSLEEPERS 10000L
#define NBLOCKED 100000L
#define SLEEP_US 1000
#define BARRIER_N 4

/* ---------------- memory ---------------- */

/* A "VmXXX:   1234 kB" field of /proc/self/status, in KiB; -1 if absent. */
static long status_kib(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		bench_fail("/proc/self/status: %s", strerror(errno));
	char line[256];
	size_t len = strlen(field);
	long v = -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, len) && line[len] == ':') {
			v = strtol(line + len + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* Resets VmHWM to the current RSS (Linux >= 4.0). Returns 0 if it could. */
static int hwm_reset(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");
	if (!f)
		return -1;
	int bad = fputs("5", f) < 0;
	bad |= fclose(f) != 0;
	return bad ? -1 : 0;
}

static long map_count(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return -1;
	long n = 0;
	int c;
	while ((c = getc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static long max_map_count(void)
{
	FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
	long v = -1;
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* ---------------- pthread helpers ---------------- */

/* cpu < 0: unpinned (default attributes). */
static int pt_start(pthread_t *t, int cpu, void *(*fn)(void *), void *arg)
{
	pthread_attr_t a;
	BENCH_CHECK(pthread_attr_init(&a));
	if (cpu >= 0) {
		cpu_set_t s;
		CPU_ZERO(&s);
		CPU_SET(cpu, &s);
		BENCH_CHECK(pthread_attr_setaffinity_np(&a, sizeof(s), &s));
	}
	int e = pthread_create(t, &a, fn, arg);
	BENCH_CHECK(pthread_attr_destroy(&a));
	return e;
}

static void pt_check_cpu(int cpu)
{
	if (cpu >= 0 && sched_getcpu() != cpu)
		bench_fail("a pthread pinned to CPU %d runs on CPU %d", cpu, sched_getcpu());
}

/* ---------------- pthread: mutex+cond hand-off ---------------- */

struct pt_cpp {
	pthread_mutex_t m;
	pthread_cond_t c[2];
	int turn;
	long n;
};

struct pt_side {
	struct pt_cpp *pp;
	int me, cpu;
	long count;
	double ns;
};

static void *pt_cond_side(void *p)
{
	struct pt_side *s = p;
	struct pt_cpp *pp = s->pp;
	int me = s->me, other = !me;
	pt_check_cpu(s->cpu);
	BENCH_CHECK(pthread_mutex_lock(&pp->m));
	uint64_t t0 = bench_now_ns();
	for (long i = 0; i < pp->n; i++) {
		while (pp->turn != me)
			BENCH_CHECK(pthread_cond_wait(&pp->c[me], &pp->m));
		pp->turn = other;
		BENCH_CHECK(pthread_cond_signal(&pp->c[other]));
		s->count++;
	}
	if (me == 0) {
		/* B's last hand-off back, so 2N hand-offs are timed. */
		while (pp->turn != me)
			BENCH_CHECK(pthread_cond_wait(&pp->c[me], &pp->m));
		s->ns = (double)(bench_now_ns() - t0) / (2.0 * (double)pp->n);
	}
	BENCH_CHECK(pthread_mutex_unlock(&pp->m));
	return NULL;
}

static double pt_cond_pingpong(long n, int cpu_a, int cpu_b)
{
	struct pt_cpp pp = { .turn = 0, .n = n };
	BENCH_CHECK(pthread_mutex_init(&pp.m, NULL));
	BENCH_CHECK(pthread_cond_init(&pp.c[0], NULL));
	BENCH_CHECK(pthread_cond_init(&pp.c[1], NULL));
	struct pt_side a = { .pp = &pp, .me = 0, .cpu = cpu_a }, b = { .pp = &pp, .me = 1, .cpu = cpu_b };
	pthread_t ta, tb;
	BENCH_CHECK(pt_start(&tb, cpu_b, pt_cond_side, &b));
	BENCH_CHECK(pt_start(&ta, cpu_a, pt_cond_side, &a));
	BENCH_CHECK(pthread_join(ta, NULL));
	BENCH_CHECK(pthread_join(tb, NULL));
	if (a.count != n || b.count != n)
		bench_fail("pthread cond ping-pong: counts %ld/%ld, expected %ld", a.count, b.count, n);
	pthread_cond_destroy(&pp.c[0]);
	pthread_cond_destroy(&pp.c[1]);
	pthread_mutex_destroy(&pp.m);
	return a.ns;
}

/* ---------------- pthread: semaphore hand-off ---------------- */

struct pt_spp {
	sem_t s[2];
	long n;
};

struct pt_sside {
	struct pt_spp *pp;
	int me, cpu;
	long count;
	double ns;
};

static void pt_sem_wait(sem_t *s)
{
	while (sem_wait(s))
		if (errno != EINTR)
			bench_fail("sem_wait: %s", strerror(errno));
}

static void *pt_sem_side(void *p)
{
	struct pt_sside *s = p;
	struct pt_spp *pp = s->pp;
	pt_check_cpu(s->cpu);
	uint64_t t0 = bench_now_ns();
	for (long i = 0; i < pp->n; i++) {
		if (s->me == 0) {
			if (sem_post(&pp->s[1]))
				bench_fail("sem_post: %s", strerror(errno));
			pt_sem_wait(&pp->s[0]);
		} else {
			pt_sem_wait(&pp->s[1]);
			if (sem_post(&pp->s[0]))
				bench_fail("sem_post: %s", strerror(errno));
		}
		s->count++;
	}
	if (s->me == 0)
		s->ns = (double)(bench_now_ns() - t0) / (2.0 * (double)pp->n);
	return NULL;
}

static double pt_sem_pingpong(long n, int cpu)
{
	struct pt_spp pp = { .n = n };
	if (sem_init(&pp.s[0], 0, 0) || sem_init(&pp.s[1], 0, 0))
		bench_fail("sem_init: %s", strerror(errno));
	struct pt_sside a = { .pp = &pp, .me = 0, .cpu = cpu }, b = { .pp = &pp, .me = 1, .cpu = cpu };
	pthread_t ta, tb;
	BENCH_CHECK(pt_start(&tb, cpu, pt_sem_side, &b));
	BENCH_CHECK(pt_start(&ta, cpu, pt_sem_side, &a));
	BENCH_CHECK(pthread_join(ta, NULL));
	BENCH_CHECK(pthread_join(tb, NULL));
	int v0, v1;
	sem_getvalue(&pp.s[0], &v0);
	sem_getvalue(&pp.s[1], &v1);
	if (a.count != n || b.count != n || v0 || v1)
		bench_fail("sem ping-pong: counts %ld/%ld (expected %ld), values left %d/%d", a.count,
			   b.count, n, v0, v1);
	sem_destroy(&pp.s[0]);
	sem_destroy(&pp.s[1]);
	return a.ns;
}

/* ---------------- pthread: barrier ---------------- */

struct pt_bar {
	pthread_barrier_t b;
	long n;
	atomic_long serial;
};

struct pt_bside {
	struct pt_bar *bar;
	int timed, cpu;
	double ns;
};

static void pt_bar_wait(struct pt_bar *bar)
{
	int r = pthread_barrier_wait(&bar->b);
	if (r == PTHREAD_BARRIER_SERIAL_THREAD)
		atomic_fetch_add(&bar->serial, 1);
	else if (r)
		bench_fail("pthread_barrier_wait returned %d", r);
}

static void *pt_bar_side(void *p)
{
	struct pt_bside *s = p;
	pt_check_cpu(s->cpu);
	pt_bar_wait(s->bar); /* untimed round: everyone has started */
	uint64_t t0 = bench_now_ns();
	for (long i = 0; i < s->bar->n; i++)
		pt_bar_wait(s->bar);
	if (s->timed)
		s->ns = (double)(bench_now_ns() - t0) / (double)s->bar->n;
	return NULL;
}

static double pt_barrier(long n, int cpu)
{
	struct pt_bar bar = { .n = n };
	BENCH_CHECK(pthread_barrier_init(&bar.b, NULL, BARRIER_N));
	struct pt_bside s[BARRIER_N];
	pthread_t t[BARRIER_N];
	for (int i = 0; i < BARRIER_N; i++) {
		s[i] = (struct pt_bside){ .bar = &bar, .timed = i == 0, .cpu = cpu };
		BENCH_CHECK(pt_start(&t[i], cpu, pt_bar_side, &s[i]));
	}
	for (int i = 0; i < BARRIER_N; i++)
		BENCH_CHECK(pthread_join(t[i], NULL));
	if (atomic_load(&bar.serial) != n + 1)
		bench_fail("pthread barrier: %ld serial returns for %ld rounds", atomic_load(&bar.serial), n + 1);
	BENCH_CHECK(pthread_barrier_destroy(&bar.b));
	return s[0].ns;
}

/* ---------------- pthread: 10k sleepers ---------------- */

static atomic_long pt_short_sleeps;

static void *pt_sleeper(void *p)
{
	(void)p;
	struct timespec req = { 0, SLEEP_US * 1000L }, rem;
	uint64_t t0 = bench_now_ns();
	while (nanosleep(&req, &rem))
		if (errno == EINTR)
			req = rem;
		else
			bench_fail("nanosleep: %s", strerror(errno));
	if (bench_now_ns() - t0 < SLEEP_US * 1000ull)
		atomic_fetch_add(&pt_short_sleeps, 1);
	return (void *)1;
}

struct sleep_res {
	double per_ns;   /* wall / sleepers */
	double wall_ms;
	double rss_kib;  /* peak RSS growth */
	long sleepers;   /* threads actually created */
};

/* Creates up to NSLEEPERS pthreads (stops at EAGAIN), then joins them. RSS growth is
 * counted from base_kib (VmRSS before the first sleepers ever existed, so that memory
 * kept from an earlier repetition counts), or from now if base_kib < 0. */
static struct sleep_res pt_sleepers(pthread_t *ts, int cpu, long base_kib)
{
	int hwm = hwm_reset();
	long rss0 = base_kib >= 0 ? base_kib : status_kib("VmRSS");
	uint64_t t0 = bench_now_ns();
	long k = 0;
	for (; k < NSLEEPERS; k++) {
		int e = pt_start(&ts[k], cpu, pt_sleeper, NULL);
		if (e == EAGAIN && k > 0)
			break;
		BENCH_CHECK(e);
	}
	for (long i = 0; i < k; i++) {
		void *r;
		BENCH_CHECK(pthread_join(ts[i], &r));
		if (r != (void *)1)
			bench_fail("pthread sleeper %ld returned %p", i, r);
	}
	uint64_t t1 = bench_now_ns();
	long peak = hwm ? status_kib("VmRSS") : status_kib("VmHWM");
	if (atomic_load(&pt_short_sleeps))
		bench_fail("%ld pthreads slept less than %d us", atomic_load(&pt_short_sleeps), SLEEP_US);
	return (struct sleep_res){ (double)(t1 - t0) / (double)k, (double)(t1 - t0) / 1e6,
				   (double)(peak - rss0), k };
}

/* ---------------- marcel: mutex+cond hand-off ---------------- */

struct mc_cpp {
	marcel_mutex_t m;
	marcel_cond_t c[2];
	int turn;
	long n;
};

struct mc_side {
	void *pp;
	int me, vp;
	long count;
	int vp_moves;
	double ns;
};

static any_t mc_cond_side(any_t p)
{
	struct mc_side *s = p;
	struct mc_cpp *pp = s->pp;
	int me = s->me, other = !me;
	BENCH_CHECK(marcel_mutex_lock(&pp->m));
	uint64_t t0 = bench_now_ns();
	for (long i = 0; i < pp->n; i++) {
		while (pp->turn != me)
			BENCH_CHECK(marcel_cond_wait(&pp->c[me], &pp->m));
		pp->turn = other;
		BENCH_CHECK(marcel_cond_signal(&pp->c[other]));
		s->count++;
	}
	if (me == 0) {
		while (pp->turn != me)
			BENCH_CHECK(marcel_cond_wait(&pp->c[me], &pp->m));
		s->ns = (double)(bench_now_ns() - t0) / (2.0 * (double)pp->n);
	}
	BENCH_CHECK(marcel_mutex_unlock(&pp->m));
	s->vp_moves += marcel_current_vp() != s->vp;
	return (any_t)(uintptr_t)s->count;
}

static void mc_create_on(marcel_t *t, int vp, marcel_func_t fn, void *arg)
{
	marcel_attr_t a;
	BENCH_CHECK(marcel_attr_init(&a));
	BENCH_CHECK(marcel_attr_setvpset(&a, MARCEL_VPSET_VP((unsigned)vp)));
	BENCH_CHECK(marcel_create(t, &a, fn, arg));
	BENCH_CHECK(marcel_attr_destroy(&a));
}

static void mc_join_count(marcel_t t, long n, const char *what)
{
	any_t r;
	BENCH_CHECK(marcel_join(t, &r));
	if ((uintptr_t)r != (uintptr_t)n)
		bench_fail("%s: a ULT counted %lu, expected %ld", what, (unsigned long)(uintptr_t)r, n);
}

static double mc_cond_pingpong(long n, int vp_a, int vp_b)
{
	struct mc_cpp pp = { .turn = 0, .n = n };
	BENCH_CHECK(marcel_mutex_init(&pp.m, NULL));
	BENCH_CHECK(marcel_cond_init(&pp.c[0], NULL));
	BENCH_CHECK(marcel_cond_init(&pp.c[1], NULL));
	struct mc_side a = { .pp = &pp, .me = 0, .vp = vp_a }, b = { .pp = &pp, .me = 1, .vp = vp_b };
	marcel_t ta, tb;
	/* B first, as for the pthreads (on one VP, FIFO: B runs first and waits). */
	mc_create_on(&tb, vp_b, mc_cond_side, &b);
	mc_create_on(&ta, vp_a, mc_cond_side, &a);
	mc_join_count(ta, n, "cond ping-pong");
	mc_join_count(tb, n, "cond ping-pong");
	if (a.vp_moves || b.vp_moves)
		bench_fail("cond ping-pong: a vpset-bound ULT ended on another VP");
	BENCH_CHECK(marcel_cond_destroy(&pp.c[0]));
	BENCH_CHECK(marcel_cond_destroy(&pp.c[1]));
	BENCH_CHECK(marcel_mutex_destroy(&pp.m));
	return a.ns;
}

/* ---------------- marcel: semaphore hand-off ---------------- */

struct mc_spp {
	marcel_sem_t s[2];
	long n;
};

static void mc_sem_wait(marcel_sem_t *s)
{
	if (marcel_sem_wait(s))
		bench_fail("marcel_sem_wait: %s", strerror(errno));
}

static void mc_sem_post(marcel_sem_t *s)
{
	if (marcel_sem_post(s))
		bench_fail("marcel_sem_post: %s", strerror(errno));
}

static any_t mc_sem_side(any_t p)
{
	struct mc_side *s = p;
	struct mc_spp *pp = s->pp;
	uint64_t t0 = bench_now_ns();
	for (long i = 0; i < pp->n; i++) {
		if (s->me == 0) {
			mc_sem_post(&pp->s[1]);
			mc_sem_wait(&pp->s[0]);
		} else {
			mc_sem_wait(&pp->s[1]);
			mc_sem_post(&pp->s[0]);
		}
		s->count++;
	}
	if (s->me == 0)
		s->ns = (double)(bench_now_ns() - t0) / (2.0 * (double)pp->n);
	s->vp_moves += marcel_current_vp() != s->vp;
	return (any_t)(uintptr_t)s->count;
}

static double mc_sem_pingpong(long n, int vp)
{
	struct mc_spp pp = { .n = n };
	BENCH_CHECK(marcel_sem_init(&pp.s[0], 0));
	BENCH_CHECK(marcel_sem_init(&pp.s[1], 0));
	struct mc_side a = { .pp = &pp, .me = 0, .vp = vp }, b = { .pp = &pp, .me = 1, .vp = vp };
	marcel_t ta, tb;
	mc_create_on(&tb, vp, mc_sem_side, &b);
	mc_create_on(&ta, vp, mc_sem_side, &a);
	mc_join_count(ta, n, "sem ping-pong");
	mc_join_count(tb, n, "sem ping-pong");
	int v0, v1;
	if (marcel_sem_getvalue(&pp.s[0], &v0) || marcel_sem_getvalue(&pp.s[1], &v1))
		bench_fail("marcel_sem_getvalue: %s", strerror(errno));
	if (v0 || v1 || a.vp_moves || b.vp_moves)
		bench_fail("sem ping-pong: values left %d/%d, VP moves %d/%d", v0, v1, a.vp_moves, b.vp_moves);
	BENCH_CHECK(marcel_sem_destroy(&pp.s[0]));
	BENCH_CHECK(marcel_sem_destroy(&pp.s[1]));
	return a.ns;
}

/* ---------------- marcel: barrier ---------------- */

struct mc_bar {
	marcel_barrier_t b;
	long n;
	atomic_long serial;
};

static void mc_bar_wait(struct mc_bar *bar)
{
	int r = marcel_barrier_wait(&bar->b);
	if (r == MARCEL_BARRIER_SERIAL_THREAD)
		atomic_fetch_add_explicit(&bar->serial, 1, memory_order_relaxed);
	else if (r)
		bench_fail("marcel_barrier_wait returned %d", r);
}

static any_t mc_bar_side(any_t p)
{
	struct mc_side *s = p;
	struct mc_bar *bar = s->pp;
	mc_bar_wait(bar);
	uint64_t t0 = bench_now_ns();
	for (long i = 0; i < bar->n; i++)
		mc_bar_wait(bar);
	if (s->me == 0)
		s->ns = (double)(bench_now_ns() - t0) / (double)bar->n;
	s->vp_moves += marcel_current_vp() != s->vp;
	return (any_t)(uintptr_t)bar->n;
}

static double mc_barrier(long n, int vp)
{
	struct mc_bar bar = { .n = n };
	BENCH_CHECK(marcel_barrier_init(&bar.b, NULL, BARRIER_N));
	struct mc_side s[BARRIER_N];
	marcel_t t[BARRIER_N];
	for (int i = 0; i < BARRIER_N; i++) {
		s[i] = (struct mc_side){ .pp = &bar, .me = i, .vp = vp };
		mc_create_on(&t[i], vp, mc_bar_side, &s[i]);
	}
	int moves = 0;
	for (int i = 0; i < BARRIER_N; i++) {
		mc_join_count(t[i], n, "barrier");
		moves += s[i].vp_moves;
	}
	if (atomic_load(&bar.serial) != n + 1 || moves)
		bench_fail("marcel barrier: %ld serial returns for %ld rounds, %d VP moves",
			   atomic_load(&bar.serial), n + 1, moves);
	BENCH_CHECK(marcel_barrier_destroy(&bar.b));
	return s[0].ns;
}

/* ---------------- marcel: 10k sleepers ---------------- */

static atomic_long mc_short_sleeps;

static any_t mc_sleeper(any_t p)
{
	(void)p;
	uint64_t t0 = bench_now_ns();
	int e = marcel_usleep(SLEEP_US);
	if (e)
		return (any_t)(uintptr_t)(0x1000 + e);
	if (bench_now_ns() - t0 < SLEEP_US * 1000ull)
		atomic_fetch_add_explicit(&mc_short_sleeps, 1, memory_order_relaxed);
	return (any_t)1;
}

static struct sleep_res mc_sleepers(marcel_t *ts, int vp, long base_kib)
{
	marcel_attr_t a;
	BENCH_CHECK(marcel_attr_init(&a));
	BENCH_CHECK(marcel_attr_setvpset(&a, MARCEL_VPSET_VP((unsigned)vp)));
	int hwm = hwm_reset();
	long rss0 = base_kib >= 0 ? base_kib : status_kib("VmRSS");
	uint64_t t0 = bench_now_ns();
	for (long i = 0; i < NSLEEPERS; i++)
		BENCH_CHECK(marcel_create(&ts[i], &a, mc_sleeper, NULL));
	for (long i = 0; i < NSLEEPERS; i++) {
		any_t r;
		BENCH_CHECK(marcel_join(ts[i], &r));
		if ((uintptr_t)r != 1) {
			if ((uintptr_t)r > 0x1000)
				bench_fail("marcel_usleep returned %d (%s) in ULT %ld", (int)((uintptr_t)r - 0x1000),
					   strerror((int)((uintptr_t)r - 0x1000)), i);
			bench_fail("marcel sleeper %ld returned %p", i, r);
		}
	}
	uint64_t t1 = bench_now_ns();
	long peak = hwm ? status_kib("VmRSS") : status_kib("VmHWM");
	BENCH_CHECK(marcel_attr_destroy(&a));
	if (atomic_load(&mc_short_sleeps))
		bench_fail("%ld ULTs slept less than %d us", atomic_load(&mc_short_sleeps), SLEEP_US);
	return (struct sleep_res){ (double)(t1 - t0) / (double)NSLEEPERS, (double)(t1 - t0) / 1e6,
				   (double)(peak - rss0), NSLEEPERS };
}

/* ---------------- the timed marcel driver ---------------- */

struct sizes {
	long mpp_2vp, cpp, spp, bar;
};

struct job {
	int reps;
	struct sizes n;
	double *mpp2, *cpp, *spp, *bar, *slp, *slp_wall, *slp_rss;
	unsigned nvp;
	int vp_moves;
};

static any_t driver(any_t p)
{
	struct job *j = p;
	const int R = j->reps;
	j->nvp = marcel_nbvps();
	int vp = marcel_current_vp();
	if (vp != 0)
		bench_fail("the driver runs on VP %d, not VP0", vp);

	if (j->nvp >= 2) {
		mc_cond_pingpong(j->n.mpp_2vp / 10, 0, 1);
		for (int r = 0; r < R; r++)
			j->mpp2[r] = mc_cond_pingpong(j->n.mpp_2vp, 0, 1);
	}
	mc_cond_pingpong(j->n.cpp / 10, 0, 0);
	for (int r = 0; r < R; r++)
		j->cpp[r] = mc_cond_pingpong(j->n.cpp, 0, 0);
	mc_sem_pingpong(j->n.spp / 10, 0);
	for (int r = 0; r < R; r++)
		j->spp[r] = mc_sem_pingpong(j->n.spp, 0);
	mc_barrier(j->n.bar / 10, 0);
	for (int r = 0; r < R; r++)
		j->bar[r] = mc_barrier(j->n.bar, 0);

	marcel_t *ts = malloc((size_t)NSLEEPERS * sizeof(*ts));
	if (!ts)
		bench_fail("out of memory");
	long base = status_kib("VmRSS");
	mc_sleepers(ts, 0, base);
	for (int r = 0; r < R; r++) {
		struct sleep_res s = mc_sleepers(ts, 0, base);
		j->slp[r] = s.per_ns;
		j->slp_wall[r] = s.wall_ms;
		j->slp_rss[r] = s.rss_kib;
	}
	free(ts);
	j->vp_moves += marcel_current_vp() != vp;
	return (any_t)(uintptr_t)0x600d;
}

/* ---------------- marcel: 100k blocked, RSS ---------------- */

enum { RSS_IDLE, RSS_WAITING, RSS_RELEASED, RSS_DONE };

struct rss_job {
	marcel_sem_t release, all_in;
	atomic_long arrived;
	atomic_int phase;
	atomic_int failed;     /* the watchdog gave up waiting */
	long rss0, rss_all, maps_all;
	/* failure record */
	long create_failed_at;
	int create_err;
	long stall_arrived, stall_rss, stall_maps;
	double stall_after_s;
	uint64_t t_release;    /* when the watchdog released them */
	double cleanup_s;      /* from that release to the last join */
};

static struct rss_job rj;

static any_t mc_blocker(any_t p)
{
	(void)p;
	long k = atomic_fetch_add(&rj.arrived, 1) + 1;
	if (k == NBLOCKED)
		mc_sem_post(&rj.all_in);
	mc_sem_wait(&rj.release);
	return (any_t)2;
}

/* A kernel thread (not a marcel thread): notices a stall while the ULTs are supposed to
 * be getting to their wait, records how far they got, and releases them all (semaphores
 * accept posts from kernel threads). */
static void *rss_watchdog(void *p)
{
	(void)p;
	long last = -1;
	uint64_t t_last = bench_now_ns(), t_start = 0, t_fail = 0;
	for (;;) {
		usleep(50000);
		int ph = atomic_load(&rj.phase);
		if (ph == RSS_DONE)
			return NULL;
		uint64_t now = bench_now_ns();
		if (ph == RSS_WAITING && !atomic_load(&rj.failed)) {
			if (!t_start)
				t_start = now;
			long a = atomic_load(&rj.arrived);
			if (a != last) {
				last = a;
				t_last = now;
			} else if (a < NBLOCKED && now - t_last > 5000000000ull) {
				rj.stall_arrived = a;
				rj.stall_rss = status_kib("VmRSS");
				rj.stall_maps = map_count();
				rj.stall_after_s = (double)(now - t_start) / 1e9;
				atomic_store(&rj.failed, 1);
				t_fail = now;
				rj.t_release = now;
				fprintf(stderr,
					"bench_sync: marcel_rss_100k_blocked: stalled at %ld of %ld ULTs blocked "
					"(%ld mappings); releasing them\n",
					a, NBLOCKED, rj.stall_maps);
				for (long i = 0; i < NBLOCKED; i++)
					mc_sem_post(&rj.release);
			}
		}
		if (t_fail && now - t_fail > 120000000000ull) {
			printf("BENCH marcel_rss_100k_blocked marcel_kib=FAILED peer=none peer_kib=0 ratio=NA  "
			       "# stalled at %ld of %ld ULTs blocked, and after releasing them they did not "
			       "all finish within 120 s; VmRSS growth at the stall %ld KiB, %ld mappings "
			       "(vm.max_map_count %ld)\n",
			       rj.stall_arrived, NBLOCKED, rj.stall_rss - rj.rss0, rj.stall_maps, max_map_count());
			fflush(stdout);
			_exit(1);
		}
	}
}

static any_t rss_driver(any_t p)
{
	(void)p;
	marcel_t *ts = malloc((size_t)NBLOCKED * sizeof(*ts));
	if (!ts)
		bench_fail("out of memory");
	BENCH_CHECK(marcel_sem_init(&rj.release, 0));
	BENCH_CHECK(marcel_sem_init(&rj.all_in, 0));
	marcel_attr_t a;
	BENCH_CHECK(marcel_attr_init(&a));
	BENCH_CHECK(marcel_attr_setvpset(&a, MARCEL_VPSET_VP(0)));
	rj.rss0 = status_kib("VmRSS");
	rj.create_failed_at = -1;
	atomic_store(&rj.phase, RSS_WAITING);
	long n = 0;
	for (; n < NBLOCKED; n++) {
		int e = marcel_create(&ts[n], &a, mc_blocker, NULL);
		if (e) {
			rj.create_failed_at = n;
			rj.create_err = e;
			break;
		}
	}
	if (n == NBLOCKED) {
		mc_sem_wait(&rj.all_in);
		if (!atomic_load(&rj.failed)) {
			rj.rss_all = status_kib("VmRSS");
			rj.maps_all = map_count();
		}
	} else {
		/* Could not create them all: release those that exist. */
		atomic_store(&rj.failed, 1);
		rj.stall_arrived = -1;
	}
	atomic_store(&rj.phase, RSS_RELEASED);
	if (!atomic_load(&rj.failed) || rj.create_failed_at >= 0)
		for (long i = 0; i < n; i++)
			mc_sem_post(&rj.release);
	for (long i = 0; i < n; i++) {
		any_t r;
		BENCH_CHECK(marcel_join(ts[i], &r));
		if ((uintptr_t)r != 2)
			bench_fail("blocked ULT %ld returned %p", i, r);
	}
	if (rj.t_release)
		rj.cleanup_s = (double)(bench_now_ns() - rj.t_release) / 1e9;
	BENCH_CHECK(marcel_attr_destroy(&a));
	free(ts);
	return (any_t)(uintptr_t)0x600d;
}

/* ---------------- pthread: as many blocked as possible ---------------- */

static sem_t pt_release;
static atomic_long pt_arrived;

static void *pt_blocker(void *p)
{
	(void)p;
	atomic_fetch_add(&pt_arrived, 1);
	pt_sem_wait(&pt_release);
	return (void *)2;
}

struct pt_rss {
	long threads, kib;
	int eagain;
};

static struct pt_rss pt_blocked_rss(void)
{
	pthread_t *ts = malloc((size_t)NBLOCKED * sizeof(*ts));
	if (!ts)
		bench_fail("out of memory");
	if (sem_init(&pt_release, 0, 0))
		bench_fail("sem_init: %s", strerror(errno));
	long rss0 = status_kib("VmRSS");
	struct pt_rss res = { 0, 0, 0 };
	long k = 0;
	for (; k < NBLOCKED; k++) {
		int e = pthread_create(&ts[k], NULL, pt_blocker, NULL);
		if (e == EAGAIN && k > 0) {
			res.eagain = 1;
			break;
		}
		BENCH_CHECK(e);
	}
	uint64_t t0 = bench_now_ns();
	while (atomic_load(&pt_arrived) < k) {
		if (bench_now_ns() - t0 > 60000000000ull)
			bench_fail("only %ld of %ld pthreads reached their sem_wait in 60 s",
				   atomic_load(&pt_arrived), k);
		usleep(1000);
	}
	usleep(100000); /* the last arrivals get into sem_wait */
	res.kib = status_kib("VmRSS") - rss0;
	res.threads = k;
	for (long i = 0; i < k; i++)
		if (sem_post(&pt_release))
			bench_fail("sem_post: %s", strerror(errno));
	for (long i = 0; i < k; i++) {
		void *r;
		BENCH_CHECK(pthread_join(ts[i], &r));
		if (r != (void *)2)
			bench_fail("blocked pthread %ld returned %p", i, r);
	}
	sem_destroy(&pt_release);
	free(ts);
	return res;
}

/* ---------------- main ---------------- */

int main(int argc, char **argv)
{
	struct bench_opts o;
	bench_parse(argc, argv, &o);
	const int R = o.reps;
	const int full = o.full;
	/* pthread sizes: a hand-off on one CPU costs 2-4 us here, across CPUs ~35 us (the VM's
	 * cross-CPU wake-ups); marcel ones: 0.2-2 us. About 0.1 s per repetition each. */
	const struct sizes npt = { full ? 5000 : 2000, full ? 50000 : 20000, full ? 50000 : 20000,
				   full ? 20000 : 5000 };
	struct job j = { .reps = R,
			 .n = { full ? 100000 : 50000, full ? 500000 : 200000, full ? 500000 : 200000,
				full ? 300000 : 100000 } };
	double *pt_mpp2 = calloc((size_t)R, sizeof(double)), *pt_cpp = calloc((size_t)R, sizeof(double));
	double *pt_spp = calloc((size_t)R, sizeof(double)), *pt_bar = calloc((size_t)R, sizeof(double));
	double *pt_slp = calloc((size_t)R, sizeof(double)), *pt_slp_wall = calloc((size_t)R, sizeof(double));
	double *pt_slp_rss = calloc((size_t)R, sizeof(double));
	j.mpp2 = calloc((size_t)R, sizeof(double));
	j.cpp = calloc((size_t)R, sizeof(double));
	j.spp = calloc((size_t)R, sizeof(double));
	j.bar = calloc((size_t)R, sizeof(double));
	j.slp = calloc((size_t)R, sizeof(double));
	j.slp_wall = calloc((size_t)R, sizeof(double));
	j.slp_rss = calloc((size_t)R, sizeof(double));
	pthread_t *pts = malloc((size_t)NSLEEPERS * sizeof(*pts));
	if (!pt_mpp2 || !pt_cpp || !pt_spp || !pt_bar || !pt_slp || !pt_slp_wall || !pt_slp_rss ||
	    !j.mpp2 || !j.cpp || !j.spp || !j.bar || !j.slp || !j.slp_wall || !j.slp_rss || !pts)
		bench_fail("out of memory");
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int hwm_ok = hwm_reset() == 0;

	/* ---- pthread peers of the timed benchmarks (before marcel_init) ---- */
	if (ncpu >= 2) {
		pt_cond_pingpong(npt.mpp_2vp / 10, 0, 1);
		for (int r = 0; r < R; r++)
			pt_mpp2[r] = pt_cond_pingpong(npt.mpp_2vp, 0, 1);
	}
	pt_cond_pingpong(npt.cpp / 10, 0, 0);
	for (int r = 0; r < R; r++)
		pt_cpp[r] = pt_cond_pingpong(npt.cpp, 0, 0);
	pt_sem_pingpong(npt.spp / 10, 0);
	for (int r = 0; r < R; r++)
		pt_spp[r] = pt_sem_pingpong(npt.spp, 0);
	pt_barrier(npt.bar / 10, 0);
	for (int r = 0; r < R; r++)
		pt_bar[r] = pt_barrier(npt.bar, 0);
	long pt_sleepers_min = NSLEEPERS;
	long pt_base = status_kib("VmRSS");
	pt_sleepers(pts, 0, pt_base);
	for (int r = 0; r < R; r++) {
		struct sleep_res s = pt_sleepers(pts, 0, pt_base);
		pt_slp[r] = s.per_ns;
		pt_slp_wall[r] = s.wall_ms;
		pt_slp_rss[r] = s.rss_kib;
		if (s.sleepers < pt_sleepers_min)
			pt_sleepers_min = s.sleepers;
	}
	free(pts);

	/* ---- marcel, timed ---- */
	bench_run_on_vp0(driver, &j);
	if (j.vp_moves)
		bench_fail("the VP0-bound driver left VP0");

	if (j.nvp >= 2 && ncpu >= 2)
		bench_line("mutex_pingpong_2vp", "ns", bench_stat_of(j.mpp2, R), "pthread", bench_stat_of(pt_mpp2, R),
			   "mutex+cond turn hand-off, ns per hand-off over 2N; marcel: ULTs on VP0 and VP1, "
			   "N=%ld; pthread: pinned to CPU 0 and CPU 1, N=%ld; %d reps",
			   j.n.mpp_2vp, npt.mpp_2vp, R);
	else
		printf("INFO mutex_pingpong_2vp skipped: %u VPs, %ld CPUs (needs 2)\n", j.nvp, ncpu);
	bench_line("cond_pingpong_1vp", "ns", bench_stat_of(j.cpp, R), "pthread", bench_stat_of(pt_cpp, R),
		   "mutex+cond turn hand-off, ns per hand-off over 2N; marcel: both ULTs on VP0, N=%ld; "
		   "pthread: both pinned to CPU 0 (pthread_attr_setaffinity_np), N=%ld; %d reps",
		   j.n.cpp, npt.cpp, R);
	bench_line("sem_pingpong_1vp", "ns", bench_stat_of(j.spp, R), "pthread_sem", bench_stat_of(pt_spp, R),
		   "two semaphores, post other/wait own, ns per hand-off over 2N; marcel: "
		   "marcel_sem_post/wait, both ULTs on VP0, N=%ld; POSIX sem_t, both pthreads pinned to "
		   "CPU 0, N=%ld; %d reps",
		   j.n.spp, npt.spp, R);
	bench_line("barrier_4ult_1vp", "ns", bench_stat_of(j.bar, R), "pthread", bench_stat_of(pt_bar, R),
		   "4 threads, ns per barrier round; marcel: marcel_barrier_t (sleep mode), 4 ULTs on "
		   "VP0, N=%ld rounds; pthread_barrier_t, 4 pthreads pinned to CPU 0, N=%ld rounds; %d reps",
		   j.n.bar, npt.bar, R);
	struct bench_stat mw = bench_stat_of(j.slp_wall, R), pw = bench_stat_of(pt_slp_wall, R);
	struct bench_stat mr = bench_stat_of(j.slp_rss, R), pr = bench_stat_of(pt_slp_rss, R);
	char pt_count[160];
	if (pt_sleepers_min == NSLEEPERS)
		snprintf(pt_count, sizeof(pt_count), "%ld pthreads", NSLEEPERS);
	else
		snprintf(pt_count, sizeof(pt_count),
			 "only %ld pthreads in some reps (EAGAIN; as many as the box allowed), ns = wall/created",
			 pt_sleepers_min);
	bench_line("usleep_10k_ult", "ns", bench_stat_of(j.slp, R), "pthread", bench_stat_of(pt_slp, R),
		   "%ld sleepers created then joined, each sleeping %d us, ns = wall/sleepers; marcel: "
		   "marcel_usleep, ULTs on VP0, wall %.2f ms (%.2f..%.2f), peak RSS growth %.0f KiB "
		   "(%.0f..%.0f); pthread: nanosleep, %s pinned to CPU 0, wall %.1f ms (%.1f..%.1f), "
		   "peak RSS growth %.0f KiB (%.0f..%.0f); RSS growth = %s; %d reps",
		   NSLEEPERS, SLEEP_US, mw.med, mw.min, mw.max, mr.med, mr.min, mr.max, pt_count, pw.med,
		   pw.min, pw.max, pr.med, pr.min, pr.max,
		   hwm_ok ? "VmHWM during the rep (reset via clear_refs) - VmRSS before the warm-up run"
		          : "VmRSS after the rep - VmRSS before the warm-up run (no clear_refs)",
		   R);

	/* ---- marcel, 100k blocked (own runtime cycle) ---- */
	pthread_t wd;
	BENCH_CHECK(pthread_create(&wd, NULL, rss_watchdog, NULL));
	bench_run_on_vp0(rss_driver, NULL);
	atomic_store(&rj.phase, RSS_DONE);
	BENCH_CHECK(pthread_join(wd, NULL));

	/* ---- pthread, as many blocked as possible (last: see the top of the file) ---- */
	struct pt_rss pr100 = pt_blocked_rss();
	double pt_per = (double)pr100.kib / (double)pr100.threads;
	double pt_x = pt_per * (double)NBLOCKED;
	char pt_desc[256];
	if (pr100.threads == NBLOCKED)
		snprintf(pt_desc, sizeof(pt_desc), "pthread: %ld blocked on a sem_t, growth %ld KiB (%.2f KiB each)",
			 pr100.threads, pr100.kib, pt_per);
	else
		snprintf(pt_desc, sizeof(pt_desc),
			 "pthread: only %ld could be created (EAGAIN; vm.max_map_count %ld), blocked on a "
			 "sem_t: growth %ld KiB = %.2f KiB each, x%ld = peer_kib (extrapolated)",
			 pr100.threads, max_map_count(), pr100.kib, pt_per, NBLOCKED);
	const char *stack = getenv("MARCEL_STACK_SIZE");
	char stackdesc[96];
	snprintf(stackdesc, sizeof(stackdesc), "%s%s", stack ? "MARCEL_STACK_SIZE=" : "default stack size",
		 stack ? stack : "");
	int failed = atomic_load(&rj.failed);
	if (!failed) {
		long kib = rj.rss_all - rj.rss0;
		printf("BENCH marcel_rss_100k_blocked marcel_kib=%ld peer=%s peer_kib=%.0f ratio=%.2f  # marcel: "
		       "%ld ULTs (%s, vpset VP0) all blocked on one semaphore: VmRSS growth %ld KiB = %.2f KiB "
		       "per ULT (VmRSS %ld KiB, %ld mappings, vm.max_map_count %ld); %s; one measurement each\n",
		       kib, pr100.threads == NBLOCKED ? "pthread" : "pthread_extrapolated", pt_x,
		       kib > 0 ? pt_x / (double)kib : 0.0, NBLOCKED, stackdesc, kib, (double)kib / NBLOCKED,
		       rj.rss_all, rj.maps_all, max_map_count(), pt_desc);
	} else if (rj.create_failed_at >= 0) {
		printf("BENCH marcel_rss_100k_blocked marcel_kib=FAILED peer=%s peer_kib=%.0f ratio=NA  # marcel: "
		       "marcel_create failed for ULT %ld of %ld with %d (%s) (%s, vpset VP0); %s\n",
		       pr100.threads == NBLOCKED ? "pthread" : "pthread_extrapolated", pt_x,
		       rj.create_failed_at, NBLOCKED, rj.create_err, strerror(rj.create_err), stackdesc, pt_desc);
	} else {
		long kib = rj.stall_rss - rj.rss0;
		printf("BENCH marcel_rss_100k_blocked marcel_kib=FAILED peer=%s peer_kib=%.0f ratio=NA  # marcel: "
		       "all %ld ULTs created (%s, vpset VP0) but only %ld got to block (no progress for 5 s, "
		       "%.1f s after the first creation; %ld mappings then, vm.max_map_count %ld -- stacks "
		       "take 2 mappings each, see marcel's stderr); at that point VmRSS growth %ld KiB = "
		       "%.2f KiB per blocked ULT (partial, not the figure asked for); after the watchdog "
		       "released them, all %ld ended and were joined in %.1f s; %s\n",
		       pr100.threads == NBLOCKED ? "pthread" : "pthread_extrapolated", pt_x, NBLOCKED, stackdesc,
		       rj.stall_arrived, rj.stall_after_s, rj.stall_maps, max_map_count(), kib,
		       rj.stall_arrived > 0 ? (double)kib / (double)rj.stall_arrived : 0.0, NBLOCKED,
		       rj.cleanup_s, pt_desc);
	}
	fflush(stdout);

	free(pt_mpp2);
	free(pt_cpp);
	free(pt_spp);
	free(pt_bar);
	free(pt_slp);
	free(pt_slp_wall);
	free(pt_slp_rss);
	free(j.mpp2);
	free(j.cpp);
	free(j.spp);
	free(j.bar);
	free(j.slp);
	free(j.slp_wall);
	free(j.slp_rss);
	return failed ? 1 : 0;
}
