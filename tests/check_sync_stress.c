/*
 * Stress for the synchronisation primitives (marcel/sync.h), on this machine and on the
 * synthetic 32-PU topology (16 workers on this 2-core box):
 *
 *   cond        64 waiter ULTs spread over every VP x 10k rounds, by signal and by
 *               broadcast; then with plain pthreads among the waiters and as coordinator
 *   sem         producers/consumers through P/V, sem_wait/post, timed_P, sem_timedwait,
 *               try_P/trywait; exact unit accounting (also with pthreads on both sides)
 *   barrier     100k rounds of 4 ULTs (shared queue, then one per VP), yield mode, a
 *               wide barrier over every VP, and ULTs with pthreads
 *   locks       rwlock readers/writers over every VP, plain/try/timed variants, with
 *               invariants checked inside the critical sections; a plain counter under
 *               a mutex over every VP with lock/trylock/timedlock mixed
 *   timed-race  cond_timedwait and sem_timedwait with very short deadlines racing with
 *               signals and posts, one unit per round, every round acknowledged
 *
 * Plain pthreads (kernel threads that are not marcel threads) take part in the cond,
 * sem, barrier, rwlock, mutex and timed-race tests.
 *
 * Lost wake-ups never hang the suite: a wait that must be woken has a generous deadline
 * (GENEROUS_NS), and its time-out with the condition already true is reported as a lost
 * wake-up naming the round. A watchdog kernel thread fails the test, naming the round or
 * unit in flight, if a test makes no progress for WATCHDOG_S seconds.
 *
 * Sizes: the defaults are the required ones (64 waiters x 10k cond rounds, 100k barrier
 * rounds). MA_TEST_QUICK=1 divides every count by 10, for quick local runs only (CI runs
 * the defaults). MA_TEST_VALGRIND (set by check-valgrind) divides them by 100.
 *
 * Worker ULTs never call ck_assert (they record the first failure with fail_note());
 * the test's main thread asserts once everything is joined.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include "ma_test.h"

#define I2P(i) ((any_t)(intptr_t)(i))
#define P2I(p) ((long)(intptr_t)(p))

/* A wait that must be woken gives up after this long: then it is a lost wake-up. */
#define GENEROUS_NS (5L * 1000000000L)
/* A test that makes no progress for this long fails, naming the round in flight. */
#define WATCHDOG_S 10.0
/* ETIMEDOUT this much before an absolute CLOCK_REALTIME deadline is a failure (smaller
 * gaps are only counted: the wall clock may be slewed). */
#define EARLY_TOLERANCE_NS 1000000L
/* The same for marcel_sem_timed_P's relative time-outs, measured on CLOCK_MONOTONIC. */
#define EARLY_REL_TOLERANCE_NS 100000L

/* ------------------------------------------------------------------ helpers */

static long scaled(long n)
{
	static int div = -1;
	if (div < 0) {
		const char *q = getenv("MA_TEST_QUICK");
		div = getenv("MA_TEST_VALGRIND") ? 100 : (q && *q && strcmp(q, "0") != 0) ? 10 : 1;
		div *= (int)ma_test_scale_div();
	}
	long v = n / div;
	return v < 10 ? (n < 10 ? n : 10) : v;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CLOCK_REALTIME + ns (ns may be negative: a deadline already passed). */
static struct timespec rt_after_ns(long ns)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	long long t = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec + ns;
	ts.tv_sec = (time_t)(t / 1000000000LL);
	ts.tv_nsec = (long)(t % 1000000000LL);
	return ts;
}

static void spin_ns(long ns)
{
	double end = now() + (double)ns * 1e-9;
	while (now() < end)
		;
}

static unsigned rnd(unsigned *s)
{
	unsigned x = *s ? *s : 0x9e3779b9u;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *s = x;
}

static const char *topo_tag(void)
{
	return ma_test_topology ? "-synth32" : "";
}

/* marcel_yield() in a ULT, sched_yield() in a plain pthread. */
static void any_yield(int is_pthread)
{
	if (is_pthread)
		sched_yield();
	else
		marcel_yield();
}

/* Between two polls of a busy object: mostly a yield, now and then a short sleep. A ULT
 * that only yields keeps its worker's kernel thread running, which on the synthetic
 * topology (more workers than cores) takes the processor from the workers it waits for. */
static void poll_pause(int is_pthread, long attempt)
{
	if (is_pthread)
		sched_yield();
	else if ((attempt & 7) == 7)
		marcel_usleep(10);
	else
		marcel_yield();
}

/* ------------------------------------------------------------------ failures */

static atomic_int nb_failures;
static atomic_int first_failure_ready;
static char first_failure[600];
static atomic_long early_small; /* time-outs less than EARLY_TOLERANCE_NS early */

static void fail_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail_note(const char *fmt, ...)
{
	if (atomic_fetch_add(&nb_failures, 1) == 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(first_failure, sizeof(first_failure), fmt, ap);
		va_end(ap);
		atomic_store(&first_failure_ready, 1);
	}
}

static int failed(void)
{
	return atomic_load_explicit(&nb_failures, memory_order_relaxed) != 0;
}

static void failures_reset(void)
{
	atomic_store(&nb_failures, 0);
	atomic_store(&first_failure_ready, 0);
	atomic_store(&early_small, 0);
	first_failure[0] = 0;
}

static void assert_no_failure(const char *test)
{
	int n = atomic_load(&nb_failures);
	if (n) {
		while (!atomic_load(&first_failure_ready))
			sched_yield();
		ck_abort_msg("%s%s: %s (%d failure(s) in all)", test, topo_tag(), first_failure, n);
	}
}

/* After ETIMEDOUT from a wait with absolute deadline dl: it must not be early. */
static void check_not_early(const struct timespec *dl, const char *what)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	long long early = ((long long)dl->tv_sec - t.tv_sec) * 1000000000LL + (dl->tv_nsec - t.tv_nsec);
	if (early > EARLY_TOLERANCE_NS)
		fail_note("%s returned ETIMEDOUT %lld us before its deadline", what, early / 1000);
	else if (early > 0)
		atomic_fetch_add(&early_small, 1);
}

/* ------------------------------------------------------------------ watchdog */

/* A kernel thread watching wd.progress: if it does not move for WATCHDOG_S, the test
 * fails with a message naming the round (or unit) in flight and the state that
 * wd.describe prints. It never hangs the suite, whatever the runtime does. */
static struct {
	pthread_t th;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	int stop;
	const char *what, *unit;
	long total;
	atomic_long progress; /* rounds (or units) completed */
	void (*describe)(char *buf, size_t n);
} wd = { .lock = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static void watchdog_fail(const char *msg)
{
	fprintf(stderr, "%s\n", msg);
	fflush(stderr);
	const char *f = getenv("CK_FORK");
	if (f && strcmp(f, "no") == 0)
		abort(); /* no child process to end: a longjmp from here would be worse */
	ck_abort_msg("%s", msg); /* in the forked child: reports the message and exits */
}

static void *watchdog_main(void *arg)
{
	(void)arg;
	long last = atomic_load(&wd.progress);
	double since = now();
	pthread_mutex_lock(&wd.lock);
	while (!wd.stop) {
		struct timespec ts = rt_after_ns(100000000L);
		pthread_cond_timedwait(&wd.cv, &wd.lock, &ts);
		long p = atomic_load(&wd.progress);
		if (p != last) {
			last = p;
			since = now();
			continue;
		}
		/* Once a failure is noted, threads may be stranded (a barrier that let one
		 * thread through early waits forever for it at the end): give up sooner. */
		double limit = failed() ? 1.0 : WATCHDOG_S;
		if (!wd.stop && now() - since >= limit) {
			char state[400] = "", msg[1400];
			if (wd.describe)
				wd.describe(state, sizeof(state));
			int noted = atomic_load(&nb_failures) && atomic_load(&first_failure_ready);
			snprintf(msg, sizeof(msg), "%s%s: %s%s%s %ld of %ld did not complete within %.0f s (hang or lost wake-up)%s%s",
				 wd.what, topo_tag(), noted ? first_failure : "", noted ? "; then stuck: " : "", wd.unit,
				 p < wd.total ? p + 1 : wd.total, wd.total, limit, state[0] ? ": " : "", state);
			pthread_mutex_unlock(&wd.lock);
			watchdog_fail(msg);
		}
	}
	pthread_mutex_unlock(&wd.lock);
	return NULL;
}

static void watchdog_start(const char *what, const char *unit, long total, void (*describe)(char *, size_t))
{
	wd.stop = 0;
	wd.what = what;
	wd.unit = unit;
	wd.total = total;
	wd.describe = describe;
	atomic_store(&wd.progress, 0);
	ck_assert_int_eq(pthread_create(&wd.th, NULL, watchdog_main, NULL), 0);
}

static void watchdog_stop(void)
{
	pthread_mutex_lock(&wd.lock);
	wd.stop = 1;
	pthread_cond_signal(&wd.cv);
	pthread_mutex_unlock(&wd.lock);
	pthread_join(wd.th, NULL);
}

/* ------------------------------------------------------------------ threads */

static marcel_attr_t vp_attr[MARCEL_NBMAXVPS];
static unsigned nvps;

/* After ma_test_init(): one attribute per VP. */
static void vps_setup(void)
{
	nvps = marcel_nbvps();
	ck_assert_uint_ge(nvps, 1);
	for (unsigned vp = 0; vp < nvps; vp++) {
		ck_assert_int_eq(marcel_attr_init(&vp_attr[vp]), 0);
		ck_assert_int_eq(marcel_attr_setvpset(&vp_attr[vp], MARCEL_VPSET_VP(vp)), 0);
	}
}

/* A ULT on VP vp (vp < 0: default placement). */
static marcel_t ult_start(int vp, marcel_func_t f, any_t arg)
{
	marcel_t t;
	int e = marcel_create(&t, vp >= 0 ? &vp_attr[vp % nvps] : NULL, f, arg);
	ck_assert_msg(e == 0, "marcel_create: %d", e);
	return t;
}

static any_t ult_join(marcel_t t)
{
	any_t r = NULL;
	int e = marcel_join(t, &r);
	ck_assert_msg(e == 0, "marcel_join: %d", e);
	return r;
}

/* A plain kernel thread (not a marcel thread) running a ULT body. */
struct pt {
	pthread_t th;
	marcel_func_t f;
	any_t arg, ret;
	atomic_int done;
};

static void *pt_main(void *a)
{
	struct pt *p = a;
	p->ret = p->f(p->arg);
	atomic_store(&p->done, 1);
	return NULL;
}

static void pt_start(struct pt *p, marcel_func_t f, any_t arg)
{
	p->f = f;
	p->arg = arg;
	p->ret = NULL;
	atomic_store(&p->done, 0);
	ck_assert_int_eq(pthread_create(&p->th, NULL, pt_main, p), 0);
}

/* Joins without blocking the caller's VP in the kernel (other ULTs of the VP may be
 * what the pthread waits for). */
static any_t pt_join(struct pt *p)
{
	while (!atomic_load(&p->done))
		marcel_usleep(200);
	ck_assert_int_eq(pthread_join(p->th, NULL), 0);
	return p->ret;
}

/* ================================================================== 1. cond rounds */

enum { COND_ULTS = 64, COND_PTHREADS = 4, COND_MAX = COND_ULTS + COND_PTHREADS };
enum { CM_SIGNAL, CM_BROADCAST, CM_MIXED };

struct cwaiter {
	int idx, vp; /* vp < 0: a pthread */
	atomic_long last; /* last round seen */
	long seen, wrong_vp;
	int first_vp;
};

/* Round r: the coordinator sets cs.round = r and wakes the waiters (signal once per
 * waiter, or broadcast); each waiter records the round and comes back (cs.nback); when
 * all are back the coordinator checks that every waiter saw round r and starts r + 1.
 * A round only starts when every waiter is blocked in its wait (nback counted under the
 * mutex before the wait), so nwaiters signals issued under the mutex must unblock every
 * one of them: a waiter left behind is a lost wake-up. */
static struct {
	marcel_mutex_t m;
	marcel_cond_t go, back;
	atomic_long round;
	atomic_int nback, stop;
	int nwaiters, mode;
	long rounds;
	struct cwaiter w[COND_MAX];
} cs;

static any_t cond_waiter(any_t arg)
{
	struct cwaiter *me = arg;
	long mine = 0;
	me->first_vp = marcel_current_vp();
	int e = marcel_mutex_lock(&cs.m);
	if (e) {
		fail_note("waiter %d: marcel_mutex_lock: %d", me->idx, e);
		return NULL;
	}
	for (;;) {
		if (atomic_fetch_add(&cs.nback, 1) + 1 == cs.nwaiters)
			marcel_cond_signal(&cs.back);
		while (atomic_load(&cs.round) == mine && !atomic_load(&cs.stop)) {
			struct timespec dl = rt_after_ns(GENEROUS_NS);
			e = marcel_cond_timedwait(&cs.go, &cs.m, &dl);
			if (e == ETIMEDOUT && atomic_load(&cs.round) != mine)
				fail_note("lost wake-up: waiter %d (%s %d) was not woken for round %ld within %ld s", me->idx,
					  me->vp < 0 ? "pthread" : "VP", me->vp < 0 ? 0 : me->vp % (int)nvps, atomic_load(&cs.round),
					  GENEROUS_NS / 1000000000L);
			else if (e && e != ETIMEDOUT)
				fail_note("waiter %d: marcel_cond_timedwait returned %d", me->idx, e);
		}
		if (atomic_load(&cs.stop))
			break;
		long r = atomic_load(&cs.round);
		if (r != mine + 1)
			fail_note("waiter %d jumped from round %ld to round %ld", me->idx, mine, r);
		mine = r;
		atomic_store(&me->last, r);
		me->seen++;
		if (me->vp >= 0 && marcel_current_vp() != me->vp % (int)nvps)
			me->wrong_vp++;
	}
	e = marcel_mutex_unlock(&cs.m);
	if (e)
		fail_note("waiter %d: marcel_mutex_unlock: %d", me->idx, e);
	return NULL;
}

/* With cs.m held: waits until every waiter is back from round r and checks they saw it. */
static int cond_all_back(long r)
{
	while (atomic_load(&cs.nback) < cs.nwaiters) {
		if (failed())
			return 0;
		struct timespec dl = rt_after_ns(GENEROUS_NS);
		int e = marcel_cond_timedwait(&cs.back, &cs.m, &dl);
		if (e == ETIMEDOUT && atomic_load(&cs.nback) == cs.nwaiters) {
			fail_note("lost wake-up: the coordinator was not woken when the last waiter finished round %ld", r);
			return 0;
		}
		if (e && e != ETIMEDOUT) {
			fail_note("coordinator: marcel_cond_timedwait returned %d", e);
			return 0;
		}
	}
	for (int i = 0; i < cs.nwaiters; i++)
		if (atomic_load(&cs.w[i].last) != r) {
			fail_note("round %ld: waiter %d is back but saw round %ld", r, i, atomic_load(&cs.w[i].last));
			return 0;
		}
	atomic_store(&wd.progress, r);
	return 1;
}

static any_t cond_coordinator(any_t arg)
{
	(void)arg;
	unsigned seed = 12345;
	long r;
	for (r = 1; r <= cs.rounds; r++) {
		marcel_mutex_lock(&cs.m);
		if (!cond_all_back(r - 1)) {
			marcel_mutex_unlock(&cs.m);
			break;
		}
		atomic_store(&cs.nback, 0);
		atomic_store(&cs.round, r);
		int bcast = cs.mode == CM_BROADCAST || (cs.mode == CM_MIXED && (rnd(&seed) & 1));
		/* Signals go out under the mutex (see above); broadcasts alternate. */
		int inside = !bcast || (r & 1);
		int e = 0;
		if (!bcast)
			for (int i = 0; i < cs.nwaiters && !e; i++)
				e = marcel_cond_signal(&cs.go);
		else if (inside)
			e = marcel_cond_broadcast(&cs.go);
		marcel_mutex_unlock(&cs.m);
		if (!inside)
			e = marcel_cond_broadcast(&cs.go);
		if (e)
			fail_note("round %ld: marcel_cond_%s returned %d", r, bcast ? "broadcast" : "signal", e);
	}
	marcel_mutex_lock(&cs.m);
	if (r > cs.rounds)
		cond_all_back(cs.rounds);
	atomic_store(&cs.stop, 1);
	marcel_cond_broadcast(&cs.go);
	marcel_mutex_unlock(&cs.m);
	return NULL;
}

static void cond_describe(char *buf, size_t n)
{
	long r = atomic_load(&cs.round);
	int len = snprintf(buf, n, "%d of %d waiters back from round %ld; not back:", atomic_load(&cs.nback),
			   cs.nwaiters, r);
	int shown = 0;
	for (int i = 0; i < cs.nwaiters && len > 0 && (size_t)len < n; i++)
		if (atomic_load(&cs.w[i].last) != r && shown++ < 12)
			len += snprintf(buf + len, n - (size_t)len, " #%d(%s%d, saw %ld)", i,
					cs.w[i].vp < 0 ? "pthread" : "VP", cs.w[i].vp < 0 ? 0 : cs.w[i].vp % (int)nvps,
					atomic_load(&cs.w[i].last));
}

static void cond_run(const char *name, int mode, int npthreads, int pthread_coordinator, long rounds)
{
	ma_test_init();
	failures_reset();
	vps_setup();
	memset(&cs, 0, sizeof(cs));
	ck_assert_int_eq(marcel_mutex_init(&cs.m, NULL), 0);
	ck_assert_int_eq(marcel_cond_init(&cs.go, NULL), 0);
	ck_assert_int_eq(marcel_cond_init(&cs.back, NULL), 0);
	cs.nwaiters = COND_ULTS + npthreads;
	cs.mode = mode;
	cs.rounds = rounds;
	marcel_t t[COND_ULTS];
	struct pt p[COND_PTHREADS + 1];
	watchdog_start(name, "round", rounds, cond_describe);
	double t0 = now();
	for (int i = 0; i < cs.nwaiters; i++) {
		cs.w[i].idx = i;
		cs.w[i].vp = i < COND_ULTS ? i : -1;
		if (i < COND_ULTS)
			t[i] = ult_start(i, cond_waiter, &cs.w[i]);
		else
			pt_start(&p[i - COND_ULTS], cond_waiter, &cs.w[i]);
	}
	if (pthread_coordinator) {
		pt_start(&p[npthreads], cond_coordinator, NULL);
		pt_join(&p[npthreads]);
	} else {
		cond_coordinator(NULL);
	}
	for (int i = 0; i < COND_ULTS; i++)
		ult_join(t[i]);
	for (int i = 0; i < npthreads; i++)
		pt_join(&p[i]);
	double dt = now() - t0;
	watchdog_stop();
	assert_no_failure(name);
	int vp_seen[MARCEL_NBMAXVPS] = { 0 }, distinct = 0;
	for (int i = 0; i < cs.nwaiters; i++) {
		ck_assert_msg(cs.w[i].seen == rounds, "%s: waiter %d saw %ld of %ld rounds", name, i, cs.w[i].seen,
			      rounds);
		ck_assert_msg(cs.w[i].wrong_vp == 0, "%s: waiter %d bound to VP %d woke %ld times on another VP", name,
			      i, cs.w[i].vp % (int)nvps, cs.w[i].wrong_vp);
		if (cs.w[i].vp >= 0 && cs.w[i].first_vp >= 0 && !vp_seen[cs.w[i].first_vp]++)
			distinct++;
	}
	unsigned want = nvps < COND_ULTS ? nvps : COND_ULTS;
	ck_assert_msg((unsigned)distinct == want, "%s: waiters ran on %d VPs, expected %u", name, distinct, want);
	ck_assert_int_eq(marcel_cond_destroy(&cs.go), 0);
	ck_assert_int_eq(marcel_cond_destroy(&cs.back), 0);
	ck_assert_int_eq(marcel_mutex_destroy(&cs.m), 0);
	printf("sync-stress%s: %s: %d waiters (%d pthreads) over %u VPs x %ld rounds in %.2fs (%.1f us/round)\n",
	       topo_tag(), name, cs.nwaiters, npthreads, nvps, rounds, dt, dt * 1e6 / (double)rounds);
	marcel_end();
}

START_TEST(test_cond_signal)
{
	cond_run("cond-signal", CM_SIGNAL, 0, 0, scaled(10000));
}
END_TEST

START_TEST(test_cond_broadcast)
{
	cond_run("cond-broadcast", CM_BROADCAST, 0, 0, scaled(10000));
}
END_TEST

/* 7. Plain pthreads among the waiters, and a pthread as the coordinator. */
START_TEST(test_cond_pthreads)
{
	cond_run("cond-pthreads", CM_MIXED, COND_PTHREADS, 1, scaled(2000));
}
END_TEST

/* ================================================================== 2. semaphores */

enum { SEM_P_V, SEM_POST_WAIT, SEM_TIMED_P, SEM_TIMEDWAIT, SEM_TRY, SEM_PASSED_DEADLINE, SEM_KINDS };
static const char *const sem_kind_name[SEM_KINDS] = { "P/V", "post/wait", "timed_P", "timedwait", "try",
							"timedwait(passed)" };

struct sem_actor {
	int idx, kind, is_pthread;
	long quota; /* producers: units to post */
	long units;
};

/* Consumers claim a ticket before taking a unit: exactly ps.total units are taken, so a
 * unit lost or duplicated shows in the counts (taken never exceeds posted, final value 0). */
static struct {
	marcel_sem_t s;
	long total;
	atomic_long posted, taken, claimed, timeouts;
} ps;

static any_t sem_producer(any_t arg)
{
	struct sem_actor *a = arg;
	for (long i = 0; i < a->quota; i++) {
		atomic_fetch_add(&ps.posted, 1); /* before the unit exists: taken <= posted always */
		if (a->kind == SEM_P_V) {
			marcel_sem_V(&ps.s);
		} else if (marcel_sem_post(&ps.s) != 0) {
			fail_note("producer %d: marcel_sem_post: errno %d", a->idx, errno);
			atomic_fetch_sub(&ps.posted, 1);
		}
		a->units++;
		if ((i & 63) == 63)
			any_yield(a->is_pthread);
	}
	return NULL;
}

/* Takes one unit with the actor's kind of call. */
static void sem_take(struct sem_actor *a)
{
	switch (a->kind) {
	case SEM_P_V:
		marcel_sem_P(&ps.s);
		return;
	case SEM_POST_WAIT:
		while (marcel_sem_wait(&ps.s) != 0)
			if (errno != EINTR) {
				fail_note("consumer %d: marcel_sem_wait: errno %d", a->idx, errno);
				return;
			}
		return;
	case SEM_TIMED_P:
		for (;;) {
			double t0 = now();
			if (marcel_sem_timed_P(&ps.s, 1))
				return;
			if (errno != ETIMEDOUT)
				fail_note("consumer %d: marcel_sem_timed_P failed with errno %d", a->idx, errno);
			if (now() - t0 < 1e-3 - EARLY_REL_TOLERANCE_NS * 1e-9)
				fail_note("consumer %d: marcel_sem_timed_P(1 ms) timed out after %.0f us", a->idx,
					  (now() - t0) * 1e6);
			atomic_fetch_add(&ps.timeouts, 1);
		}
	case SEM_TIMEDWAIT:
	case SEM_PASSED_DEADLINE:
		for (;;) {
			struct timespec dl = rt_after_ns(a->kind == SEM_TIMEDWAIT ? 50000 : -1000);
			if (marcel_sem_timedwait(&ps.s, &dl) == 0)
				return;
			if (errno != ETIMEDOUT)
				fail_note("consumer %d: marcel_sem_timedwait failed with errno %d", a->idx, errno);
			else
				check_not_early(&dl, "marcel_sem_timedwait");
			if (a->kind == SEM_PASSED_DEADLINE)
				poll_pause(a->is_pthread, atomic_fetch_add(&ps.timeouts, 1));
			else
				atomic_fetch_add(&ps.timeouts, 1);
		}
	default:
		for (unsigned k = 0;; k++) {
			if (k & 1) {
				if (marcel_sem_try_P(&ps.s))
					return;
			} else {
				if (marcel_sem_trywait(&ps.s) == 0)
					return;
				if (errno != EAGAIN)
					fail_note("consumer %d: marcel_sem_trywait failed with errno %d", a->idx, errno);
			}
			poll_pause(a->is_pthread, atomic_fetch_add(&ps.timeouts, 1));
		}
	}
}

static any_t sem_consumer(any_t arg)
{
	struct sem_actor *a = arg;
	while (atomic_fetch_add(&ps.claimed, 1) < ps.total) {
		sem_take(a);
		long t = atomic_fetch_add(&ps.taken, 1) + 1;
		long p = atomic_load(&ps.posted);
		if (t > p)
			fail_note("unit duplicated: consumer %d (%s) took unit %ld but only %ld were posted", a->idx,
				  sem_kind_name[a->kind], t, p);
		atomic_store_explicit(&wd.progress, t, memory_order_relaxed);
		a->units++;
	}
	return NULL;
}

static void sem_describe(char *buf, size_t n)
{
	int v = -1;
	marcel_sem_getvalue(&ps.s, &v);
	snprintf(buf, n, "posted %ld, taken %ld of %ld, semaphore value %d", atomic_load(&ps.posted),
		 atomic_load(&ps.taken), ps.total, v);
}

enum { SEM_MAX_ACTORS = 64 };

static void sem_run(const char *name, int pthreads)
{
	ma_test_init();
	failures_reset();
	vps_setup();
	memset(&ps, 0, sizeof(ps));
	ck_assert_int_eq(marcel_sem_init(&ps.s, 0), 0);
	int nprod = 4, ncons = 2 * (int)nvps < 12 ? 12 : 2 * (int)nvps;
	if (ncons > SEM_MAX_ACTORS - 8)
		ncons = SEM_MAX_ACTORS - 8;
	int npprod = pthreads ? 2 : 0, npcons = pthreads ? 3 : 0;
	ps.total = scaled(pthreads ? 100000 : 500000);
	static struct sem_actor prod[8], cons[SEM_MAX_ACTORS];
	memset(prod, 0, sizeof(prod));
	memset(cons, 0, sizeof(cons));
	int np = nprod + npprod, nc = ncons + npcons;
	marcel_t tp[8], tc[SEM_MAX_ACTORS];
	struct pt pp[8], pc[8];
	watchdog_start(name, "unit", ps.total, sem_describe);
	double t0 = now();
	for (int i = 0; i < nc; i++) {
		cons[i] = (struct sem_actor){ .idx = i, .kind = i % SEM_KINDS, .is_pthread = i >= ncons };
		if (i < ncons)
			tc[i] = ult_start(i, sem_consumer, &cons[i]);
		else
			pt_start(&pc[i - ncons], sem_consumer, &cons[i]);
	}
	for (int i = 0; i < np; i++) {
		prod[i] = (struct sem_actor){ .idx = i, .kind = i & 1 ? SEM_POST_WAIT : SEM_P_V,
					      .is_pthread = i >= nprod,
					      .quota = ps.total / np + (i < ps.total % np) };
		if (i < nprod)
			tp[i] = ult_start((int)((unsigned)i * nvps / (unsigned)nprod + 1), sem_producer, &prod[i]);
		else
			pt_start(&pp[i - nprod], sem_producer, &prod[i]);
	}
	for (int i = 0; i < nprod; i++)
		ult_join(tp[i]);
	for (int i = 0; i < npprod; i++)
		pt_join(&pp[i]);
	for (int i = 0; i < ncons; i++)
		ult_join(tc[i]);
	for (int i = 0; i < npcons; i++)
		pt_join(&pc[i]);
	double dt = now() - t0;
	watchdog_stop();
	assert_no_failure(name);
	long posted = 0, taken = 0;
	for (int i = 0; i < np; i++)
		posted += prod[i].units;
	for (int i = 0; i < nc; i++)
		taken += cons[i].units;
	ck_assert_int_eq(posted, ps.total);
	ck_assert_int_eq(atomic_load(&ps.posted), ps.total);
	ck_assert_int_eq(taken, ps.total);
	ck_assert_int_eq(atomic_load(&ps.taken), ps.total);
	int v = -1;
	ck_assert_int_eq(marcel_sem_getvalue(&ps.s, &v), 0);
	ck_assert_msg(v == 0, "%s: %ld units posted and taken, but the semaphore still holds %d", name, ps.total, v);
	ck_assert_int_eq(marcel_sem_try_P(&ps.s), 0);
	errno = 0;
	ck_assert_int_eq(marcel_sem_trywait(&ps.s), -1);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_int_eq(marcel_sem_destroy(&ps.s), 0);
	printf("sync-stress%s: %s: %ld units, %d producers, %d consumers (%d pthreads) in %.2fs, %ld time-outs or failed tries\n",
	       topo_tag(), name, ps.total, np, nc, npprod + npcons, dt, atomic_load(&ps.timeouts));
	marcel_end();
}

START_TEST(test_sem_prodcons)
{
	sem_run("sem", 0);
}
END_TEST

/* 7. Plain pthreads among producers and consumers. */
START_TEST(test_sem_pthreads)
{
	sem_run("sem-pthreads", 1);
}
END_TEST

/* ================================================================== 3. barriers */

enum { BAR_MAX = 80 };

/* Each thread counts its arrival before waiting; after leaving round r, all nth arrivals
 * of round r must be in (nobody left early) and nobody may have arrived beyond round
 * r + 1 (nobody ran ahead). bs.serial[r] counts the SERIAL_THREAD results of round r. */
static struct {
	marcel_barrier_t b;
	int nth;
	long rounds;
	atomic_long arrived;
	atomic_uchar *serial;
	atomic_long bad_ret;
} bs;

struct bar_arg {
	int idx, is_pthread;
};

static any_t bar_body(any_t arg)
{
	struct bar_arg *a = arg;
	long nth = bs.nth;
	for (long r = 0; r < bs.rounds; r++) {
		atomic_fetch_add(&bs.arrived, 1);
		int e = marcel_barrier_wait(&bs.b);
		long got = atomic_load(&bs.arrived);
		if (e == MARCEL_BARRIER_SERIAL_THREAD)
			atomic_fetch_add(&bs.serial[r], 1);
		else if (e != 0 && atomic_fetch_add(&bs.bad_ret, 1) == 0)
			fail_note("round %ld: thread %d: marcel_barrier_wait returned %d", r, a->idx, e);
		if (got < nth * (r + 1))
			fail_note("round %ld: thread %d left the barrier after only %ld of %ld arrivals", r, a->idx,
				  got - nth * r, nth);
		else if (got > nth * (r + 2) - 1)
			fail_note("round %ld: thread %d is still leaving while others arrived for round %ld", r, a->idx,
				  (got - 1) / nth);
		if (a->idx == 0)
			atomic_store_explicit(&wd.progress, r + 1, memory_order_relaxed);
	}
	return NULL;
}

static void bar_describe(char *buf, size_t n)
{
	long a = atomic_load(&bs.arrived);
	snprintf(buf, n, "%ld arrivals in all: %ld of %d threads arrived in round %ld", a, a % bs.nth, bs.nth,
		 a / bs.nth);
}

enum { BP_SHARED, BP_SPREAD, BP_TWO_VPS };

static void bar_run(const char *name, int nult, int npt, int placement, int mode, long rounds)
{
	ma_test_init();
	failures_reset();
	vps_setup();
	memset(&bs, 0, sizeof(bs));
	bs.nth = nult + npt;
	bs.rounds = rounds;
	bs.serial = calloc((size_t)rounds, sizeof(*bs.serial));
	ck_assert_ptr_nonnull(bs.serial);
	marcel_barrierattr_t ba;
	ck_assert_int_eq(marcel_barrierattr_init(&ba), 0);
	ck_assert_int_eq(marcel_barrierattr_setmode(&ba, mode), 0);
	ck_assert_int_eq(marcel_barrier_init(&bs.b, &ba, (unsigned)bs.nth), 0);
	ck_assert_int_eq(marcel_barrierattr_destroy(&ba), 0);
	struct bar_arg args[BAR_MAX];
	marcel_t t[BAR_MAX];
	struct pt p[4];
	watchdog_start(name, "round", rounds, bar_describe);
	double t0 = now();
	for (int i = 0; i < bs.nth; i++) {
		args[i] = (struct bar_arg){ .idx = i, .is_pthread = i >= nult };
		if (i >= nult)
			pt_start(&p[i - nult], bar_body, &args[i]);
		else if (placement == BP_SHARED)
			t[i] = ult_start(-1, bar_body, &args[i]);
		else if (placement == BP_TWO_VPS) /* two threads per VP: a yielder has a peer to run */
			t[i] = ult_start((int)((unsigned)(i % 2) * (nvps / 2)), bar_body, &args[i]);
		else /* as far apart as possible: 0, n/4, n/2, 3n/4 for 4 threads */
			t[i] = ult_start((int)((unsigned)i * nvps / (unsigned)(nult < (int)nvps ? nult : (int)nvps)),
					 bar_body, &args[i]);
	}
	for (int i = 0; i < nult; i++)
		ult_join(t[i]);
	for (int i = 0; i < npt; i++)
		pt_join(&p[i]);
	double dt = now() - t0;
	watchdog_stop();
	assert_no_failure(name);
	ck_assert_int_eq(atomic_load(&bs.arrived), (long)bs.nth * rounds);
	for (long r = 0; r < rounds; r++)
		ck_assert_msg(atomic_load(&bs.serial[r]) == 1, "%s: round %ld had %d MARCEL_BARRIER_SERIAL_THREAD results",
			      name, r, (int)atomic_load(&bs.serial[r]));
	ck_assert_int_eq(marcel_barrier_destroy(&bs.b), 0);
	free((void *)bs.serial);
	printf("sync-stress%s: %s: %d threads (%d pthreads) x %ld rounds in %.2fs (%.2f us/round)\n", topo_tag(),
	       name, bs.nth, npt, rounds, dt, dt * 1e6 / (double)rounds);
	marcel_end();
}

START_TEST(test_barrier_shared)
{
	bar_run("barrier-4-shared", 4, 0, BP_SHARED, MARCEL_BARRIER_SLEEP_MODE, scaled(100000));
}
END_TEST

START_TEST(test_barrier_spread)
{
	bar_run("barrier-4-vps", 4, 0, BP_SPREAD, MARCEL_BARRIER_SLEEP_MODE, scaled(100000));
}
END_TEST

START_TEST(test_barrier_yield)
{
	/* Yield mode on two VPs, two threads each: with one thread per VP the waiters spin
	 * their workers, which on the synthetic topology (16 workers, 2 cores) costs the
	 * kernel's time slice per round (about 20 ms: measured). */
	bar_run("barrier-4-2vps-yield", 4, 0, BP_TWO_VPS, MARCEL_BARRIER_YIELD_MODE, scaled(20000));
}
END_TEST

START_TEST(test_barrier_wide)
{
	bar_run("barrier-64-vps", 64, 0, BP_SPREAD, MARCEL_BARRIER_SLEEP_MODE, scaled(2000));
}
END_TEST

START_TEST(test_barrier_pthreads)
{
	bar_run("barrier-pthreads", 4, 2, BP_SPREAD, MARCEL_BARRIER_SLEEP_MODE, scaled(10000));
}
END_TEST

/* ================================================================== 4. rwlock */

enum { RW_DATA = 8, RW_MAX = 80 };

static struct {
	marcel_rwlock_t l;
	atomic_int readers_in, writers_in;
	long data[RW_DATA]; /* written under the write lock only; all equal outside it */
	long writes;        /* idem: counts write sections */
	long iters;
	atomic_long ops, timeouts, busy;
} rw;

struct rw_arg {
	int idx, writer, is_pthread;
	long done;
};

/* Takes the lock with a plain, try (retried) or timed (retried) call, chosen at random. */
static int rw_acquire(struct rw_arg *a, unsigned *seed)
{
	unsigned k = rnd(seed) % 4;
	int e;
	if (k <= 1)
		return a->writer ? marcel_rwlock_wrlock(&rw.l) : marcel_rwlock_rdlock(&rw.l);
	if (k == 2) {
		while ((e = a->writer ? marcel_rwlock_trywrlock(&rw.l) : marcel_rwlock_tryrdlock(&rw.l)) == EBUSY) {
			poll_pause(a->is_pthread, atomic_fetch_add_explicit(&rw.busy, 1, memory_order_relaxed));
		}
		return e;
	}
	for (;;) {
		unsigned d = rnd(seed) % 8;
		struct timespec dl = rt_after_ns(d == 0 ? -1000 : (long)(d * 20000));
		e = a->writer ? marcel_rwlock_timedwrlock(&rw.l, &dl) : marcel_rwlock_timedrdlock(&rw.l, &dl);
		if (e != ETIMEDOUT)
			return e;
		check_not_early(&dl, a->writer ? "marcel_rwlock_timedwrlock" : "marcel_rwlock_timedrdlock");
		atomic_fetch_add_explicit(&rw.timeouts, 1, memory_order_relaxed);
	}
}

static any_t rw_body(any_t arg)
{
	struct rw_arg *a = arg;
	unsigned seed = 0x51ed27u * (unsigned)(a->idx + 1);
	for (long i = 0; i < rw.iters; i++) {
		int e = rw_acquire(a, &seed);
		if (e) {
			fail_note("%s %d: acquiring the rwlock returned %d", a->writer ? "writer" : "reader", a->idx, e);
			return NULL;
		}
		if (a->writer) {
			int w = atomic_fetch_add(&rw.writers_in, 1);
			int r = atomic_load(&rw.readers_in);
			if (w != 0 || r != 0)
				fail_note("writer %d got the lock with %d other writer(s) and %d reader(s) inside", a->idx, w, r);
			long v = rw.data[0] + 1;
			for (int k = 0; k < RW_DATA; k++) {
				rw.data[k] = v;
				if (k == RW_DATA / 2 && (rnd(&seed) & 7) == 0)
					any_yield(a->is_pthread); /* readers must not see the torn array */
			}
			rw.writes++;
			atomic_fetch_sub(&rw.writers_in, 1);
		} else {
			atomic_fetch_add(&rw.readers_in, 1);
			int w = atomic_load(&rw.writers_in);
			if (w != 0)
				fail_note("reader %d got the lock with %d writer(s) inside", a->idx, w);
			long v = rw.data[0];
			if ((rnd(&seed) & 15) == 0)
				any_yield(a->is_pthread);
			for (int k = 1; k < RW_DATA; k++)
				if (rw.data[k] != v) {
					fail_note("reader %d saw a torn write: data[0] = %ld, data[%d] = %ld", a->idx, v, k,
						  rw.data[k]);
					break;
				}
			atomic_fetch_sub(&rw.readers_in, 1);
		}
		e = marcel_rwlock_unlock(&rw.l);
		if (e)
			fail_note("%s %d: marcel_rwlock_unlock returned %d", a->writer ? "writer" : "reader", a->idx, e);
		a->done++;
		atomic_store_explicit(&wd.progress, atomic_fetch_add_explicit(&rw.ops, 1, memory_order_relaxed) + 1,
				      memory_order_relaxed);
		if ((i & 7) == 7)
			any_yield(a->is_pthread);
	}
	return NULL;
}

static void rw_describe(char *buf, size_t n)
{
	snprintf(buf, n, "%ld operations done; %d reader(s) and %d writer(s) inside", atomic_load(&rw.ops),
		 atomic_load(&rw.readers_in), atomic_load(&rw.writers_in));
}

START_TEST(test_rwlock)
{
	ma_test_init();
	failures_reset();
	vps_setup();
	memset(&rw, 0, sizeof(rw));
	ck_assert_int_eq(marcel_rwlock_init(&rw.l, NULL), 0);
	int nr = 3 * (int)nvps < 6 ? 6 : 3 * (int)nvps, nw = (int)nvps < 2 ? 2 : (int)nvps;
	if (nr + nw > RW_MAX - 2)
		nr = RW_MAX - 2 - nw;
	int npt = 2, n = nr + nw + npt; /* one pthread reader and one pthread writer */
	rw.iters = scaled(240000) / n;
	struct rw_arg args[RW_MAX];
	marcel_t t[RW_MAX];
	struct pt p[2];
	watchdog_start("rwlock", "operation", rw.iters * n, rw_describe);
	double t0 = now();
	for (int i = 0; i < n; i++) {
		args[i] = (struct rw_arg){ .idx = i, .writer = i >= nr && i < nr + nw ? 1 : i == n - 1,
					   .is_pthread = i >= nr + nw };
		if (i < nr + nw)
			t[i] = ult_start(i, rw_body, &args[i]);
		else
			pt_start(&p[i - nr - nw], rw_body, &args[i]);
	}
	for (int i = 0; i < nr + nw; i++)
		ult_join(t[i]);
	for (int i = 0; i < npt; i++)
		pt_join(&p[i]);
	double dt = now() - t0;
	watchdog_stop();
	assert_no_failure("rwlock");
	long writes = 0;
	for (int i = 0; i < n; i++) {
		ck_assert_int_eq(args[i].done, rw.iters);
		if (args[i].writer)
			writes += args[i].done;
	}
	ck_assert_int_eq(rw.writes, writes);
	ck_assert_int_eq(rw.data[0], writes);
	ck_assert_int_eq(atomic_load(&rw.readers_in), 0);
	ck_assert_int_eq(atomic_load(&rw.writers_in), 0);
	ck_assert_int_eq(marcel_rwlock_destroy(&rw.l), 0);
	printf("sync-stress%s: rwlock: %d readers + %d writers (2 pthreads) x %ld ops in %.2fs, %ld time-outs, %ld busy\n",
	       topo_tag(), nr + 1, nw + 1, rw.iters, dt, atomic_load(&rw.timeouts), atomic_load(&rw.busy));
	marcel_end();
}
END_TEST

/* ================================================================== 5. mutex */

enum { MX_MAX = 80 };

static struct {
	marcel_mutex_t m;
	long counter; /* plain: only the mutex protects it */
	atomic_int holder; /* 1 + index of the holder, 0 when free */
	long iters;
	atomic_long ops, timeouts, busy;
} mx;

struct mx_arg {
	int idx, is_pthread;
	long done;
};

static any_t mx_body(any_t arg)
{
	struct mx_arg *a = arg;
	unsigned seed = 0x2545f491u * (unsigned)(a->idx + 1);
	for (long i = 0; i < mx.iters; i++) {
		unsigned k = rnd(&seed) % 4;
		int e;
		if (k <= 1) {
			e = marcel_mutex_lock(&mx.m);
		} else if (k == 2) {
			while ((e = marcel_mutex_trylock(&mx.m)) == EBUSY) {
				poll_pause(a->is_pthread, atomic_fetch_add_explicit(&mx.busy, 1, memory_order_relaxed));
			}
		} else {
			for (;;) {
				unsigned d = rnd(&seed) % 8;
				struct timespec dl = rt_after_ns(d == 0 ? -1000 : (long)(d * 10000));
				e = marcel_mutex_timedlock(&mx.m, &dl);
				if (e != ETIMEDOUT)
					break;
				check_not_early(&dl, "marcel_mutex_timedlock");
				atomic_fetch_add_explicit(&mx.timeouts, 1, memory_order_relaxed);
			}
		}
		if (e) {
			fail_note("thread %d: taking the mutex returned %d", a->idx, e);
			return NULL;
		}
		int h = atomic_exchange(&mx.holder, a->idx + 1);
		if (h != 0)
			fail_note("thread %d got the mutex while thread %d held it", a->idx, h - 1);
		mx.counter++;
		if ((rnd(&seed) & 31) == 0)
			any_yield(a->is_pthread); /* others pile up behind the held mutex */
		h = atomic_exchange(&mx.holder, 0);
		if (h != a->idx + 1)
			fail_note("thread %d: the mutex changed hands while it held it (holder %d)", a->idx, h - 1);
		e = marcel_mutex_unlock(&mx.m);
		if (e)
			fail_note("thread %d: marcel_mutex_unlock returned %d", a->idx, e);
		a->done++;
		atomic_store_explicit(&wd.progress, atomic_fetch_add_explicit(&mx.ops, 1, memory_order_relaxed) + 1,
				      memory_order_relaxed);
		if ((i & 15) == 15)
			any_yield(a->is_pthread);
	}
	return NULL;
}

static void mx_describe(char *buf, size_t n)
{
	snprintf(buf, n, "%ld increments done; holder %d", atomic_load(&mx.ops), atomic_load(&mx.holder) - 1);
}

START_TEST(test_mutex)
{
	ma_test_init();
	failures_reset();
	vps_setup();
	memset(&mx, 0, sizeof(mx));
	ck_assert_int_eq(marcel_mutex_init(&mx.m, NULL), 0);
	int nult = 4 * (int)nvps < 8 ? 8 : 4 * (int)nvps, npt = 2;
	if (nult > MX_MAX - npt)
		nult = MX_MAX - npt;
	int n = nult + npt;
	mx.iters = scaled(400000) / n;
	struct mx_arg args[MX_MAX];
	marcel_t t[MX_MAX];
	struct pt p[2];
	watchdog_start("mutex", "increment", mx.iters * n, mx_describe);
	double t0 = now();
	for (int i = 0; i < n; i++) {
		args[i] = (struct mx_arg){ .idx = i, .is_pthread = i >= nult };
		if (i < nult)
			t[i] = ult_start(i, mx_body, &args[i]);
		else
			pt_start(&p[i - nult], mx_body, &args[i]);
	}
	for (int i = 0; i < nult; i++)
		ult_join(t[i]);
	for (int i = 0; i < npt; i++)
		pt_join(&p[i]);
	double dt = now() - t0;
	watchdog_stop();
	assert_no_failure("mutex");
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(args[i].done, mx.iters);
	ck_assert_msg(mx.counter == mx.iters * n, "mutex: counter %ld, expected %ld", mx.counter, mx.iters * n);
	ck_assert_int_eq(marcel_mutex_destroy(&mx.m), 0);
	printf("sync-stress%s: mutex: %d threads (2 pthreads) over %u VPs x %ld increments in %.2fs, %ld time-outs, %ld busy\n",
	       topo_tag(), n, nvps, mx.iters, dt, atomic_load(&mx.timeouts), atomic_load(&mx.busy));
	marcel_end();
}
END_TEST

/* ================================================================== 6. timed waits racing */

/* Rounds of one unit each. "Short" waiters (one ULT per VP and a pthread) each make one
 * wait per round with a deadline of a few microseconds (or already passed), racing the
 * unit's signal or post, which comes after a random delay; "long" waiters (two ULTs and
 * a pthread) wait continuously with generous deadlines. Whoever gets the unit
 * acknowledges it, and the round only ends when every short waiter has finished its
 * wait (barrier). The predicate is checked after every return, ETIMEDOUT included (POSIX
 * lets a timed-out wait consume a concurrent signal), so a unit must always be
 * acknowledged: if it is not within GENEROUS_NS, the wake-up was lost (a signal or post
 * went to a waiter that had already left, or a timed-out wait took the unit). About one
 * round in four is "late": the unit is given only once every short wait is over, so its
 * wake-up can only go to a long waiter and nobody polls to repair a lost one. The
 * accounting is exact: units given == units taken, final count 0, and destroy succeeds
 * (no waiter left registered by a time-out). The round barriers are marcel barriers,
 * checked like in the barrier test: a time-out firing late must not release a thread
 * from another primitive. */
enum { TR_SHORT_MAX = 40, TR_LONG_ULTS = 2, TR_LONG = TR_LONG_ULTS + 1 };
enum { TR_COND, TR_SEM };

static struct {
	int kind;
	long rounds;
	/* cond */
	marcel_mutex_t m;
	marcel_cond_t cv, ack;
	long tokens, consumed; /* under m */
	/* sem */
	marcel_sem_t s, sack;
	/* both */
	marcel_barrier_t b; /* shorts + the giver */
	atomic_int stop;
	atomic_long by_short, by_long, short_timeouts, long_timeouts, round;
	atomic_long arrivals; /* barrier arrivals, checked as in the barrier test */
	atomic_int shorts_done; /* short waiters done with this round's wait */
	int nbar, nshort;
	long late_rounds;
} tr;

struct tr_arg {
	int idx, is_pthread;
};

/* One barrier of the round: also checks that it does not let anybody through early
 * (a stale time-out must not wake a thread blocked in another primitive). */
static void tr_barrier(long phase, int who)
{
	atomic_fetch_add(&tr.arrivals, 1);
	int e = marcel_barrier_wait(&tr.b);
	long got = atomic_load(&tr.arrivals);
	if (e != 0 && e != MARCEL_BARRIER_SERIAL_THREAD)
		fail_note("timed-race: marcel_barrier_wait returned %d", e);
	if (got < tr.nbar * (phase + 1))
		fail_note("timed-race: thread %d left barrier %ld after only %ld of %d arrivals", who, phase,
			  got - tr.nbar * phase, tr.nbar);
}

static void tr_cond_short(struct tr_arg *a, unsigned *seed)
{
	unsigned d = rnd(seed) % 10;
	struct timespec dl = rt_after_ns(d == 0 ? -1000 : (long)(d * 5000));
	marcel_mutex_lock(&tr.m);
	if (tr.tokens == 0) {
		int e = marcel_cond_timedwait(&tr.cv, &tr.m, &dl);
		if (e == ETIMEDOUT) {
			atomic_fetch_add_explicit(&tr.short_timeouts, 1, memory_order_relaxed);
			check_not_early(&dl, "marcel_cond_timedwait");
		} else if (e) {
			fail_note("short waiter %d: marcel_cond_timedwait returned %d", a->idx, e);
		}
	}
	if (tr.tokens > 0) {
		tr.tokens--;
		tr.consumed++;
		atomic_fetch_add(&tr.by_short, 1);
		marcel_cond_signal(&tr.ack);
	}
	marcel_mutex_unlock(&tr.m);
}

static void tr_sem_short(struct tr_arg *a, unsigned *seed)
{
	unsigned d = rnd(seed) % 10;
	int got;
	if (d == 9) { /* relative: 0 ms (tries once), now and then 1 ms */
		double t0 = now();
		unsigned long ms = (rnd(seed) & 7) == 0;
		got = marcel_sem_timed_P(&tr.s, ms);
		if (!got && errno != ETIMEDOUT)
			fail_note("short waiter %d: marcel_sem_timed_P failed with errno %d", a->idx, errno);
		if (!got && (double)ms * 1e-3 - (now() - t0) > EARLY_REL_TOLERANCE_NS * 1e-9)
			fail_note("marcel_sem_timed_P(%lu ms) timed out after %.0f us", ms, (now() - t0) * 1e6);
	} else {
		struct timespec dl = rt_after_ns(d == 0 ? -1000 : (long)(d * 5000));
		got = marcel_sem_timedwait(&tr.s, &dl) == 0;
		if (!got && errno != ETIMEDOUT)
			fail_note("short waiter %d: marcel_sem_timedwait failed with errno %d", a->idx, errno);
		else if (!got)
			check_not_early(&dl, "marcel_sem_timedwait");
	}
	if (got) {
		atomic_fetch_add(&tr.by_short, 1);
		marcel_sem_V(&tr.sack);
	} else {
		atomic_fetch_add_explicit(&tr.short_timeouts, 1, memory_order_relaxed);
	}
}

static any_t tr_short(any_t arg)
{
	struct tr_arg *a = arg;
	unsigned seed = 0x6b43a9b5u * (unsigned)(a->idx + 1);
	for (long r = 0; r < tr.rounds; r++) {
		tr_barrier(2 * r, a->idx);
		if (tr.kind == TR_COND)
			tr_cond_short(a, &seed);
		else
			tr_sem_short(a, &seed);
		atomic_fetch_add(&tr.shorts_done, 1);
		tr_barrier(2 * r + 1, a->idx);
	}
	return NULL;
}

static any_t tr_long(any_t arg)
{
	struct tr_arg *a = arg;
	if (tr.kind == TR_COND) {
		marcel_mutex_lock(&tr.m);
		for (;;) {
			while (tr.tokens == 0 && !atomic_load(&tr.stop)) {
				/* Longer than the giver's wait for its acknowledgement, so that a lost
				 * wake-up is reported as such rather than repaired by this time-out. */
				struct timespec dl = rt_after_ns(2 * GENEROUS_NS);
				int e = marcel_cond_timedwait(&tr.cv, &tr.m, &dl);
				if (e == ETIMEDOUT)
					atomic_fetch_add(&tr.long_timeouts, 1); /* the shorts may take every unit */
				else if (e)
					fail_note("long waiter %d: marcel_cond_timedwait returned %d", a->idx, e);
			}
			if (tr.tokens == 0)
				break;
			tr.tokens--;
			tr.consumed++;
			atomic_fetch_add(&tr.by_long, 1);
			marcel_cond_signal(&tr.ack);
		}
		marcel_mutex_unlock(&tr.m);
		return NULL;
	}
	for (unsigned k = 0;; k++) {
		int got;
		if (k % 3 == 0) { /* deadlines: see the cond case */
			struct timespec dl = rt_after_ns(2 * GENEROUS_NS);
			got = marcel_sem_timedwait(&tr.s, &dl) == 0;
			if (!got && errno != ETIMEDOUT)
				fail_note("long waiter %d: marcel_sem_timedwait failed with errno %d", a->idx, errno);
		} else if (k % 3 == 1) {
			got = marcel_sem_timed_P(&tr.s, 2 * GENEROUS_NS / 1000000);
		} else {
			got = marcel_sem_wait(&tr.s) == 0;
		}
		if (!got) {
			atomic_fetch_add(&tr.long_timeouts, 1);
			continue;
		}
		if (atomic_load(&tr.stop))
			break; /* one stop unit per long waiter */
		atomic_fetch_add(&tr.by_long, 1);
		marcel_sem_V(&tr.sack);
	}
	return NULL;
}

/* The giver: main. Returns the rounds acknowledged. */
static long tr_give(void)
{
	unsigned seed = 0x1234567u;
	long r;
	for (r = 0; r < tr.rounds && !failed(); r++) {
		atomic_store(&tr.shorts_done, 0);
		tr_barrier(2 * r, -1);
		atomic_store(&tr.round, r + 1);
		unsigned j = rnd(&seed);
		if ((j & 0x180) == 0) {
			/* A late round: every short wait is over, only long waiters are blocked, so
			 * the unit's wake-up has exactly one kind of target: a waiter a time-out left
			 * registered must not absorb it. */
			while (atomic_load(&tr.shorts_done) < tr.nshort)
				marcel_usleep(5); /* not marcel_yield: see test_barrier_yield */
			tr.late_rounds++;
		} else if (j & 1) {
			spin_ns((long)(rnd(&seed) % 40000));
		} else {
			for (unsigned y = j % 5; y; y--)
				marcel_yield();
		}
		if (tr.kind == TR_COND) {
			int bcast = (j & 0x30) == 0, inside = (j & 0x40) != 0;
			int e = 0;
			marcel_mutex_lock(&tr.m);
			tr.tokens++;
			if (inside)
				e = bcast ? marcel_cond_broadcast(&tr.cv) : marcel_cond_signal(&tr.cv);
			marcel_mutex_unlock(&tr.m);
			if (!inside)
				e = bcast ? marcel_cond_broadcast(&tr.cv) : marcel_cond_signal(&tr.cv);
			if (e)
				fail_note("round %ld: marcel_cond_%s returned %d", r + 1, bcast ? "broadcast" : "signal", e);
			marcel_mutex_lock(&tr.m);
			while (tr.consumed < r + 1) {
				struct timespec dl = rt_after_ns(GENEROUS_NS);
				e = marcel_cond_timedwait(&tr.ack, &tr.m, &dl);
				if (e == ETIMEDOUT && tr.consumed < r + 1) {
					fail_note("round %ld: lost wake-up: the unit given by cond_%s (%s the mutex) was not taken within %ld s (%ld pending)",
						  r + 1, bcast ? "broadcast" : "signal", inside ? "holding" : "after releasing",
						  GENEROUS_NS / 1000000000L, tr.tokens);
					break;
				}
				if (e == ETIMEDOUT) /* taken, and acknowledged under the mutex while we waited */
					fail_note("round %ld: lost wake-up: the giver was not woken by the acknowledgement", r + 1);
				else if (e)
					fail_note("round %ld: marcel_cond_timedwait returned %d", r + 1, e);
			}
			marcel_mutex_unlock(&tr.m);
		} else {
			if (j & 0x10)
				marcel_sem_V(&tr.s);
			else if (marcel_sem_post(&tr.s) != 0)
				fail_note("round %ld: marcel_sem_post failed with errno %d", r + 1, errno);
			if (!marcel_sem_timed_P(&tr.sack, GENEROUS_NS / 1000000)) {
				int v = -1, va = -1;
				marcel_sem_getvalue(&tr.s, &v);
				marcel_sem_getvalue(&tr.sack, &va);
				long taken = atomic_load(&tr.by_short) + atomic_load(&tr.by_long);
				if (va > 0 || taken > r)
					fail_note("round %ld: the unit was taken but the giver was not woken by its acknowledgement (%ld taken, acknowledgement semaphore value %d)",
						  r + 1, taken, va);
				else
					fail_note("round %ld: the unit posted was not taken within %ld s: %s (semaphore value %d)",
						  r + 1, GENEROUS_NS / 1000000000L,
						  v > 0 ? "lost wake-up, waiters stay blocked" : "unit lost by a timed-out wait", v);
			}
		}
		atomic_store_explicit(&wd.progress, r + 1, memory_order_relaxed);
		tr_barrier(2 * r + 1, -1);
	}
	if (r < tr.rounds) /* failed: release the shorts still going through their rounds */
		for (; r < tr.rounds; r++) {
			tr_barrier(2 * r, -1);
			tr_barrier(2 * r + 1, -1);
		}
	return r;
}

static void tr_describe(char *buf, size_t n)
{
	int v = -1;
	marcel_sem_getvalue(&tr.s, &v);
	snprintf(buf, n, "round %ld given; %ld units taken by short waiters, %ld by long ones; barrier arrivals %ld; semaphore value %d",
		 atomic_load(&tr.round), atomic_load(&tr.by_short), atomic_load(&tr.by_long),
		 atomic_load(&tr.arrivals), v);
}

/* short_waits: rounds x short waiters (one per VP and a pthread). */
static void tr_run(const char *name, int kind, long short_waits)
{
	ma_test_init();
	failures_reset();
	vps_setup();
	memset(&tr, 0, sizeof(tr));
	int nshort_ult = (int)nvps < TR_SHORT_MAX - 1 ? (int)nvps : TR_SHORT_MAX - 1, nshort = nshort_ult + 1;
	long rounds = short_waits / nshort;
	tr.kind = kind;
	tr.rounds = rounds;
	ck_assert_int_eq(marcel_mutex_init(&tr.m, NULL), 0);
	ck_assert_int_eq(marcel_cond_init(&tr.cv, NULL), 0);
	ck_assert_int_eq(marcel_cond_init(&tr.ack, NULL), 0);
	ck_assert_int_eq(marcel_sem_init(&tr.s, 0), 0);
	ck_assert_int_eq(marcel_sem_init(&tr.sack, 0), 0);
	tr.nbar = nshort + 1;
	tr.nshort = nshort;
	ck_assert_int_eq(marcel_barrier_init(&tr.b, NULL, (unsigned)tr.nbar), 0);
	struct tr_arg sa[TR_SHORT_MAX], la[TR_LONG];
	marcel_t st[TR_SHORT_MAX], lt[TR_LONG_ULTS];
	struct pt sp, lp;
	watchdog_start(name, "round", rounds, tr_describe);
	double t0 = now();
	for (int i = 0; i < TR_LONG; i++) {
		la[i] = (struct tr_arg){ .idx = 100 + i, .is_pthread = i == TR_LONG_ULTS };
		if (i < TR_LONG_ULTS) /* the last VP and the middle one */
			lt[i] = ult_start((int)(i == 0 ? nvps - 1 : nvps / 2), tr_long, &la[i]);
		else
			pt_start(&lp, tr_long, &la[i]);
	}
	for (int i = 0; i < nshort; i++) {
		sa[i] = (struct tr_arg){ .idx = i, .is_pthread = i == nshort_ult };
		if (i < nshort_ult)
			st[i] = ult_start(i, tr_short, &sa[i]);
		else
			pt_start(&sp, tr_short, &sa[i]);
	}
	long given = tr_give();
	for (int i = 0; i < nshort_ult; i++)
		ult_join(st[i]);
	pt_join(&sp);
	/* Stop the long waiters: one stop unit each (sem), or the stop flag (cond). */
	atomic_store(&tr.stop, 1);
	if (kind == TR_COND) {
		marcel_mutex_lock(&tr.m);
		marcel_cond_broadcast(&tr.cv);
		marcel_mutex_unlock(&tr.m);
	} else {
		for (int i = 0; i < TR_LONG; i++)
			marcel_sem_V(&tr.s);
	}
	for (int i = 0; i < TR_LONG_ULTS; i++)
		ult_join(lt[i]);
	pt_join(&lp);
	double dt = now() - t0;
	watchdog_stop();
	assert_no_failure(name);
	long taken = atomic_load(&tr.by_short) + atomic_load(&tr.by_long);
	ck_assert_msg(given == rounds, "%s: %ld of %ld rounds given", name, given, rounds);
	ck_assert_msg(taken == rounds, "%s: %ld units given, %ld taken (%ld by short waiters, %ld by long ones)", name,
		      rounds, taken, atomic_load(&tr.by_short), atomic_load(&tr.by_long));
	int v = -1;
	ck_assert_int_eq(marcel_sem_getvalue(&tr.s, &v), 0);
	ck_assert_msg(v == 0, "%s: semaphore value %d at the end", name, v);
	ck_assert_int_eq(marcel_sem_getvalue(&tr.sack, &v), 0);
	ck_assert_msg(v == 0, "%s: %d acknowledgements too many", name, v);
	if (kind == TR_COND) {
		ck_assert_int_eq(tr.tokens, 0);
		ck_assert_int_eq(tr.consumed, rounds);
	}
	ck_assert_int_eq(marcel_cond_destroy(&tr.cv), 0);
	ck_assert_int_eq(marcel_cond_destroy(&tr.ack), 0);
	ck_assert_int_eq(marcel_mutex_destroy(&tr.m), 0);
	ck_assert_int_eq(marcel_sem_destroy(&tr.s), 0);
	ck_assert_int_eq(marcel_sem_destroy(&tr.sack), 0);
	ck_assert_int_eq(marcel_barrier_destroy(&tr.b), 0);
	printf("sync-stress%s: %s: %ld rounds (%ld late), %d short waiters (1 pthread) + %d long (1 pthread) in %.2fs; units to short %ld, to long %ld; short time-outs %ld; slightly early time-outs %ld\n",
	       topo_tag(), name, rounds, tr.late_rounds, nshort, TR_LONG, dt, atomic_load(&tr.by_short), atomic_load(&tr.by_long),
	       atomic_load(&tr.short_timeouts), atomic_load(&early_small));
	marcel_end();
}

START_TEST(test_cond_timed_race)
{
	tr_run("cond-timed-race", TR_COND, scaled(24000));
}
END_TEST

START_TEST(test_sem_timed_race)
{
	tr_run("sem-timed-race", TR_SEM, scaled(24000));
}
END_TEST

/* ------------------------------------------------------------------ registration */

static void tc_cond(TCase *tc)
{
	tcase_add_test(tc, test_cond_signal);
	tcase_add_test(tc, test_cond_broadcast);
	tcase_add_test(tc, test_cond_pthreads);
}

static void tc_sem(TCase *tc)
{
	tcase_add_test(tc, test_sem_prodcons);
	tcase_add_test(tc, test_sem_pthreads);
}

static void tc_barrier(TCase *tc)
{
	tcase_add_test(tc, test_barrier_shared);
	tcase_add_test(tc, test_barrier_spread);
	tcase_add_test(tc, test_barrier_yield);
	tcase_add_test(tc, test_barrier_wide);
	tcase_add_test(tc, test_barrier_pthreads);
}

static void tc_locks(TCase *tc)
{
	tcase_add_test(tc, test_rwlock);
	tcase_add_test(tc, test_mutex);
}

static void tc_timed(TCase *tc)
{
	tcase_add_test(tc, test_cond_timed_race);
	tcase_add_test(tc, test_sem_timed_race);
}

int main(void)
{
	Suite *s = suite_create("sync-stress");
	/* Check's timeouts only back up the watchdog (which names the round); each test
	 * also fails by itself as soon as a wait exceeds GENEROUS_NS. */
	ma_test_add_both(s, "cond", tc_cond, 300);
	ma_test_add_both(s, "sem", tc_sem, 300);
	ma_test_add_both(s, "barrier", tc_barrier, 300);
	ma_test_add_both(s, "locks", tc_locks, 300);
	ma_test_add_both(s, "timed-race", tc_timed, 300);
	return ma_test_run(s);
}
