/*
 * Preemption (MARCEL_TIMESLICE): compute loops that never yield share a VP under a time
 * slice and not without one; preemption_disable, the non-preemptible attribute and C
 * library locks held (foreign_locks.c) keep a thread running; every register survives;
 * malloc/stdio-heavy threads under a 100 us slice never deadlock; blocked system calls
 * are not hammered with EINTR; bad values are refused. Where preemption cannot work
 * (ThreadSanitizer, the portable ucontext build) marcel_init must refuse a time slice
 * with a clear message, and the other tests stop there.
 *
 * The loops below make no calls on purpose: the only way another thread of the VP runs
 * meanwhile is preemption. They watch a counter of the other thread: it changes under
 * their feet only if they were switched out.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include "ma_test.h"

/* While several threads run, they record the first failure here and main asserts once
 * they have ended: a Check failure ends the test from the thread that fails, and the
 * counters these tests watch would be left half-way. */
static const char *volatile ult_failed_expr;
static volatile int ult_failed_line;
#define ULT_CHECK(e)                                                  \
	do {                                                          \
		if (!(e) && !ult_failed_line) {                       \
			ult_failed_expr = #e;                         \
			ult_failed_line = __LINE__;                   \
		}                                                     \
	} while (0)

static void ult_checks_passed(void)
{
	ck_assert_msg(!ult_failed_line, "line %d: %s", ult_failed_line, ult_failed_expr);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Starts the runtime with slice `ts` (NULL: cooperative) and `nvp` VPs (0: default).
 * Returns 0 if this build cannot preempt (after checking that marcel_init said so
 * clearly), 1 if the runtime runs. */
static int start(const char *ts, const char *nvp)
{
	if (ts)
		setenv("MARCEL_TIMESLICE", ts, 1);
	else
		unsetenv("MARCEL_TIMESLICE");
	if (nvp)
		setenv("MARCEL_NVP", nvp, 1);
	else
		unsetenv("MARCEL_NVP");
	char msg[512];
	int e = ma_test_init_captured(msg, sizeof(msg));
	unsetenv("MARCEL_TIMESLICE");
	unsetenv("MARCEL_NVP");
	if (e == EINVAL && ts && strcmp(ts, "0")) {
		/* One line, naming the variable and why. */
		ck_assert_msg(strstr(msg, "MARCEL_TIMESLICE=") && strstr(msg, "preemption") && strchr(msg, '\n') == strrchr(msg, '\n'),
			      "unclear refusal: %s", msg);
#ifdef MA_TEST_TSAN
		ck_assert_msg(strstr(msg, "ThreadSanitizer") != NULL, "%s", msg);
#endif
		return 0;
	}
#ifdef MA_TEST_TSAN
	ck_assert_msg(!ts || !strcmp(ts, "0"), "ThreadSanitizer builds must refuse a time slice");
#endif
	ck_assert_msg(e == 0, "marcel_init: %d, %s", e, msg);
	ck_assert_str_eq(msg, "");
	return 1;
}

/* ---- two compute loops on one VP ---- */

struct spinner {
	volatile long count;                 /* own progress */
	volatile long *other;                /* the other thread's */
	long iters;
	long changes;                        /* times the other's counter moved under us */
	int disable;                         /* run the loop with preemption disabled */
	int preemptible_seen[3];             /* marcel_thread_is_preemptible before/in/after */
};

/* Runs iters rounds without any call; returns how often *other changed meanwhile. */
static __attribute__((noinline)) long spin_watch(volatile long *mine, volatile long *other, long iters)
{
	long last = *other, changes = 0;
	for (long i = 0; i < iters; i++) {
		(*mine)++;
		long o = *other;
		if (o != last) {
			changes++;
			last = o;
		}
	}
	return changes;
}

static any_t spinner_main(any_t arg)
{
	struct spinner *s = arg;
	s->preemptible_seen[0] = marcel_thread_is_preemptible();
	if (s->disable) {
		/* Nested: the inner enable must not re-enable. */
		ULT_CHECK(marcel_thread_preemption_disable() == 0);
		ULT_CHECK(marcel_thread_preemption_disable() == 0);
		s->preemptible_seen[1] = marcel_thread_is_preemptible();
		s->changes = spin_watch(&s->count, s->other, s->iters / 2);
		ULT_CHECK(marcel_thread_preemption_enable() == 0);
		s->changes += spin_watch(&s->count, s->other, s->iters / 2);
		ULT_CHECK(marcel_thread_preemption_enable() == 0);
		s->preemptible_seen[2] = marcel_thread_is_preemptible();
		return NULL;
	}
	s->changes = spin_watch(&s->count, s->other, s->iters);
	return NULL;
}

/* Iterations of spin_watch that take about ms milliseconds here. */
static long iters_for_ms(long ms)
{
	volatile long a = 0, b = 0;
	long n = 1 << 20;
	uint64_t t0;
	for (;;) {
		t0 = now_ns();
		spin_watch(&a, &b, n);
		if (now_ns() - t0 >= 20000000u)
			break;
		n *= 2;
	}
	return (long)((double)n * (double)ms * 1e6 / (double)(now_ns() - t0)) + 1;
}

/* Two spinners of about ms milliseconds each, started on the only VP, A first; attr and
 * disable apply to A. Returns once A has ended, with B still running or not. */
static marcel_t start_pair(struct spinner *a, struct spinner *b, const marcel_attr_t *attr_a, long ms, int disable_a)
{
	long iters = iters_for_ms(ms);
	memset(a, 0, sizeof(*a));
	memset(b, 0, sizeof(*b));
	a->other = &b->count;
	b->other = &a->count;
	a->iters = b->iters = iters;
	a->disable = disable_a;
	marcel_t ta, tb;
	ULT_CHECK(marcel_create(&ta, attr_a, spinner_main, a) == 0);
	ULT_CHECK(marcel_create(&tb, NULL, spinner_main, b) == 0);
	ULT_CHECK(marcel_join(ta, NULL) == 0);
	return tb;
}

static void run_pair(struct spinner *a, struct spinner *b, const marcel_attr_t *attr_a, long ms)
{
	ULT_CHECK(marcel_join(start_pair(a, b, attr_a, ms, 0), NULL) == 0);
	ult_checks_passed();
}

START_TEST(slice_shares_the_vp)
{
	if (!start("1000", "1"))
		return;
	struct spinner a, b;
	run_pair(&a, &b, NULL, 100);
	/* About 100 slices each; leave room for a loaded machine. */
	ck_assert_int_ge(a.changes, 5);
	ck_assert_int_ge(b.changes, 5);
	ck_assert_int_eq(a.preemptible_seen[0], 1);
	marcel_end();
}
END_TEST

START_TEST(cooperative_runs_to_completion)
{
	if (!start("0", "1"))
		return;
	struct spinner a, b;
	run_pair(&a, &b, NULL, 50);
	/* A ran its whole loop before B started; B saw A's final count throughout. */
	ck_assert_int_eq(a.changes, 0);
	ck_assert_int_eq(b.changes, 0);
	marcel_end();
}
END_TEST

/* ---- locks marcel does not own ---- */

/* The C library's locks, as libraries and statically linked code (Check) take them: a
 * thread switched out while holding one would leave the next thread of its VP that asks
 * for it waiting in the kernel, and the VP with it, for good. */
enum foreign_kind { FK_MUTEX, FK_SPIN, FK_RWLOCK_WR, FK_RWLOCK_RD_WR, FK_STDIO, FK_ONCE, FK_NB };
static const char *const fk_names[FK_NB] = { "mutex", "spin", "rwlock write", "rwlock read", "flockfile",
					      "pthread_once" };

static struct {
	enum foreign_kind kind;
	pthread_mutex_t mutex;
	pthread_spinlock_t spin;
	pthread_rwlock_t rw;
	pthread_once_t once;
	FILE *file;
	struct spinner holder, other;
	long changes_held, changes_free;
	atomic_int done, holding;
} flk;

static void fl_lock(int reader)
{
	switch (flk.kind) {
	case FK_MUTEX: ULT_CHECK(pthread_mutex_lock(&flk.mutex) == 0); break;
	case FK_SPIN: ULT_CHECK(pthread_spin_lock(&flk.spin) == 0); break;
	case FK_RWLOCK_WR: ULT_CHECK(pthread_rwlock_wrlock(&flk.rw) == 0); break;
	/* The holder reads; the other thread writes, so it must wait for the reader. */
	case FK_RWLOCK_RD_WR:
		ULT_CHECK((reader ? pthread_rwlock_rdlock(&flk.rw) : pthread_rwlock_wrlock(&flk.rw)) == 0);
		break;
	case FK_STDIO: flockfile(flk.file); break;
	case FK_ONCE: case FK_NB: break;
	}
}

static void fl_unlock(void)
{
	switch (flk.kind) {
	case FK_MUTEX: ULT_CHECK(pthread_mutex_unlock(&flk.mutex) == 0); break;
	case FK_SPIN: ULT_CHECK(pthread_spin_unlock(&flk.spin) == 0); break;
	case FK_RWLOCK_WR: case FK_RWLOCK_RD_WR: ULT_CHECK(pthread_rwlock_unlock(&flk.rw) == 0); break;
	case FK_STDIO: funlockfile(flk.file); break;
	case FK_ONCE: case FK_NB: break;
	}
}

static void fl_held_part(void)
{
	atomic_store(&flk.holding, 1);
	flk.changes_held = spin_watch(&flk.holder.count, &flk.other.count, flk.holder.iters);
}

static any_t fl_holder(any_t arg)
{
	(void)arg;
	if (flk.kind == FK_ONCE) {
		ULT_CHECK(pthread_once(&flk.once, fl_held_part) == 0);
	} else {
		fl_lock(1);
		fl_held_part();
		fl_unlock();
	}
	/* Free of locks: the other thread gets slices again. */
	flk.changes_free = spin_watch(&flk.holder.count, &flk.other.count, flk.holder.iters);
	atomic_store(&flk.done, 1);
	return NULL;
}

static any_t fl_other(any_t arg)
{
	(void)arg;
	while (!atomic_load(&flk.done)) {
		flk.other.count++;
		if (!atomic_load(&flk.holding))
			continue; /* wait until the holder has the lock: then ask for it */
		if (flk.kind == FK_ONCE) {
			ULT_CHECK(pthread_once(&flk.once, fl_held_part) == 0);
		} else {
			fl_lock(0);
			fl_unlock();
		}
	}
	return NULL;
}

/* One VP, a 1 ms slice: the holder keeps the lock for about 30 slices and is not
 * switched out meanwhile (the other thread's counter never moves), then spins as long
 * free of locks and is (it moves). Before foreign_locks.c, the holder was switched out,
 * the other thread waited for the lock in the kernel, and the test hung. */
START_TEST(foreign_lock_holder_not_preempted)
{
	if (!start("1000", "1"))
		return;
	memset(&flk, 0, sizeof(flk));
	flk.kind = (enum foreign_kind)_i;
	pthread_mutex_init(&flk.mutex, NULL);
	pthread_spin_init(&flk.spin, PTHREAD_PROCESS_PRIVATE);
	pthread_rwlock_init(&flk.rw, NULL);
	flk.once = PTHREAD_ONCE_INIT;
	flk.file = tmpfile();
	ck_assert_ptr_nonnull(flk.file);
	flk.holder.iters = iters_for_ms(30);
	marcel_t h, o;
	ULT_CHECK(marcel_create(&h, NULL, fl_holder, NULL) == 0);
	ULT_CHECK(marcel_create(&o, NULL, fl_other, NULL) == 0);
	ULT_CHECK(marcel_join(h, NULL) == 0);
	ULT_CHECK(marcel_join(o, NULL) == 0);
	ult_checks_passed();
	ck_assert_msg(flk.changes_held == 0, "%s: switched out %ld times while holding it", fk_names[_i],
		      flk.changes_held);
	ck_assert_msg(flk.changes_free > 0, "%s: never switched out once free of it", fk_names[_i]);
	marcel_end();
	fclose(flk.file);
	pthread_rwlock_destroy(&flk.rw);
	pthread_spin_destroy(&flk.spin);
	pthread_mutex_destroy(&flk.mutex);
}
END_TEST

/* A failed try, a timed-out lock and a release by a thread that took nothing leave the
 * count right: the thread is preemptible afterwards. */
START_TEST(foreign_lock_failures_not_counted)
{
	if (!start("1000", "1"))
		return;
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_spinlock_t sp;
	ck_assert_int_eq(pthread_spin_init(&sp, PTHREAD_PROCESS_PRIVATE), 0);
	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	ck_assert_int_eq(marcel_thread_is_preemptible(), 1);
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	ck_assert_int_eq(pthread_rwlock_wrlock(&rw), 0);
	ck_assert_int_eq(pthread_spin_lock(&sp), 0);
	/* Held by this thread: the tries fail, and failing must not count. */
	ck_assert_int_eq(pthread_mutex_trylock(&m), EBUSY);
	ck_assert_int_eq(pthread_spin_trylock(&sp), EBUSY);
	ck_assert_int_eq(pthread_rwlock_tryrdlock(&rw), EBUSY);
	struct timespec past = { 0, 0 };
	ck_assert_int_eq(pthread_mutex_timedlock(&m, &past), ETIMEDOUT);
	ck_assert_int_eq(pthread_spin_unlock(&sp), 0);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	/* Released by a thread that never took it (POSIX allows it for spin locks). */
	ck_assert_int_eq(pthread_spin_lock(&sp), 0);
	ck_assert_int_eq(pthread_spin_unlock(&sp), 0);
	ck_assert_int_eq(pthread_spin_unlock(&sp), 0);
	struct spinner a, b;
	run_pair(&a, &b, NULL, 50);
	ck_assert_int_ge(a.changes, 1);
	marcel_end();
	pthread_spin_destroy(&sp);
}
END_TEST

/* ---- busy-waits of ported code ---- */

static atomic_int spin_flag;

/* A pool's start-up loop, or one side of a hand-written spin barrier: waits for a flag
 * that a thread of the same VP sets, without calling marcel. */
static any_t wait_for_flag(any_t arg)
{
	(void)arg;
	while (!atomic_load_explicit(&spin_flag, memory_order_relaxed))
		;
	return NULL;
}

static any_t set_flag(any_t arg)
{
	(void)arg;
	atomic_store(&spin_flag, 1);
	return NULL;
}

/* More threads than VPs, one VP, a 10 ms slice: each spinner is switched out after a
 * slice and the thread they wait for runs (cooperatively they wait for ever). */
static void busy_waits_finish(int rounds)
{
	for (int round = 0; round < rounds; round++) {
		atomic_store(&spin_flag, 0);
		marcel_t w[4], s;
		for (int i = 0; i < 4; i++)
			ULT_CHECK(marcel_create(&w[i], NULL, wait_for_flag, NULL) == 0);
		ULT_CHECK(marcel_create(&s, NULL, set_flag, NULL) == 0);
		for (int i = 0; i < 4; i++)
			ULT_CHECK(marcel_join(w[i], NULL) == 0);
		ULT_CHECK(marcel_join(s, NULL) == 0);
	}
	ult_checks_passed();
}

START_TEST(slice_frees_busy_waits)
{
	if (!start("10000", "1"))
		return;
	busy_waits_finish(3);
	marcel_end();
}
END_TEST

/* Without MARCEL_TIMESLICE: sliced (10 ms) where preemption works, so the same waits
 * end; elsewhere cooperative, silently (start checks that marcel_init printed nothing). */
START_TEST(default_slice_frees_busy_waits)
{
	if (!start(NULL, "1"))
		return;
	if (marcel_thread_is_preemptible())
		busy_waits_finish(1);
#ifdef MA_TEST_TSAN
	ck_assert_int_eq(marcel_thread_is_preemptible(), 0);
#endif
	marcel_end();
}
END_TEST

/* A program with its own SIGRTMIN+7 handler (in every build): marcel_init by default
 * says nothing and runs cooperatively; a slice asked for is refused, naming it. */
static void own_handler(int sig)
{
	(void)sig;
}

START_TEST(own_handler_cooperative)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = own_handler;
	ck_assert_int_eq(sigaction(SIGRTMIN + 7, &sa, &old), 0);
	char msg[512];
	unsetenv("MARCEL_TIMESLICE");
	ck_assert_int_eq(ma_test_init_captured(msg, sizeof(msg)), 0);
	ck_assert_str_eq(msg, "");
	ck_assert_int_eq(marcel_thread_is_preemptible(), 0);
	marcel_end();
	setenv("MARCEL_TIMESLICE", "10000", 1);
	ck_assert_int_ne(ma_test_init_captured(msg, sizeof(msg)), 0);
	unsetenv("MARCEL_TIMESLICE");
	ck_assert_msg(strstr(msg, "MARCEL_TIMESLICE=10000") != NULL, "message: %s", msg);
	ck_assert_int_eq(sigaction(SIGRTMIN + 7, &old, NULL), 0);
}
END_TEST

START_TEST(disabled_thread_keeps_the_vp)
{
	if (!start("1000", "1"))
		return;
	struct spinner a, b;
	marcel_t tb = start_pair(&a, &b, NULL, 100, 1);
	/* B never ran while A had preemption disabled (both halves, nested), and A yielded
	 * at its last enable: B had already started when A returned. */
	long b_count_when_a_ended = b.count;
	ULT_CHECK(marcel_join(tb, NULL) == 0);
	ult_checks_passed();
	ck_assert_int_eq(a.changes, 0);
	ck_assert_int_gt(b_count_when_a_ended, 0);
	ck_assert_int_eq(a.preemptible_seen[0], 1);
	ck_assert_int_eq(a.preemptible_seen[1], 0);
	ck_assert_int_eq(a.preemptible_seen[2], 1);
	marcel_end();
}
END_TEST

START_TEST(non_preemptible_attribute)
{
	if (!start("1000", "1"))
		return;
	marcel_attr_t attr;
	ck_assert_int_eq(marcel_attr_init(&attr), 0);
	ck_assert_int_eq(marcel_attr_setpreemptible(&attr, 0), 0);
	struct spinner a, b;
	run_pair(&a, &b, &attr, 100);
	ck_assert_int_eq(a.changes, 0);
	ck_assert_int_eq(a.preemptible_seen[0], 0);
	ck_assert_int_eq(b.preemptible_seen[0], 1);
	marcel_end();
}
END_TEST

/* ---- disable/enable misuse ---- */

static void *foreign_calls(void *arg)
{
	int *r = arg;
	r[0] = marcel_thread_preemption_disable();
	r[1] = marcel_thread_preemption_enable();
	r[2] = marcel_thread_is_preemptible();
	return NULL;
}

START_TEST(disable_enable_errors)
{
	ck_assert_int_eq(marcel_thread_preemption_disable(), EPERM);
	ck_assert_int_eq(marcel_thread_preemption_enable(), EPERM);
	ck_assert_int_eq(marcel_thread_is_preemptible(), 0);
	ma_test_init();
	ck_assert_int_eq(marcel_thread_preemption_enable(), EINVAL);
	ck_assert_int_eq(marcel_thread_preemption_disable(), 0);
	ck_assert_int_eq(marcel_thread_is_preemptible(), 0);
	ck_assert_int_eq(marcel_thread_preemption_enable(), 0);
	ck_assert_int_eq(marcel_thread_preemption_enable(), EINVAL);
	int r[3] = { -1, -1, -1 };
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, foreign_calls, r), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(r[0], EPERM);
	ck_assert_int_eq(r[1], EPERM);
	ck_assert_int_eq(r[2], 0);
	marcel_end();
}
END_TEST

/* ---- every register survives ---- */

typedef double v4d __attribute__((vector_size(32)));
typedef double v8d __attribute__((vector_size(64)));

static volatile long reg_turn[2];

static inline uint64_t xorshift(uint64_t x)
{
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

/* Eight dependent double chains (xmm), an integer generator (GPRs), an x87 chain. */
static __attribute__((noinline)) double work_sse(uint64_t seed, long n, volatile long *mine, volatile long *other,
						 long *changes)
{
	double a0 = 1, a1 = 2, a2 = 3, a3 = 4, a4 = 5, a5 = 6, a6 = 7, a7 = 8;
	long double x87 = 1.0L;
	uint64_t x = seed;
	long last = *other;
	for (long i = 0; i < n; i++) {
		x = xorshift(x);
		double d = (double)(x >> 11) * 0x1p-53;
		a0 = a0 * 0.999 + d;
		a1 = a1 * 0.998 + a0;
		a2 = a2 * 0.997 + a1 * d;
		a3 = a3 * 0.996 + a2;
		a4 = a4 * 0.995 + a3 * d;
		a5 = a5 * 0.994 + a4;
		a6 = a6 * 0.993 + a5 * d;
		a7 = a7 * 0.992 + a6;
		x87 = x87 * 0.9999L + (long double)d;
		(*mine)++;
		if (*other != last) {
			(*changes)++;
			last = *other;
		}
	}
	return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + (double)x87 + (double)(x & 0xffff);
}

__attribute__((target("avx2"), noinline)) static double work_avx2(uint64_t seed, long n, volatile long *mine,
								   volatile long *other, long *changes)
{
	v4d a = { 1, 2, 3, 4 }, b = { 5, 6, 7, 8 }, c = { 9, 10, 11, 12 }, k = { 0.999, 0.998, 0.997, 0.996 };
	uint64_t x = seed;
	long last = *other;
	for (long i = 0; i < n; i++) {
		x = xorshift(x);
		double d = (double)(x >> 11) * 0x1p-53;
		v4d dv = { d, d * 0.5, d * 0.25, d * 0.125 };
		a = a * k + dv;
		b = b * k + a;
		c = c * k + b * dv;
		(*mine)++;
		if (*other != last) {
			(*changes)++;
			last = *other;
		}
	}
	v4d s = a + b + c;
	return s[0] + s[1] + s[2] + s[3];
}

__attribute__((target("avx512f"), noinline)) static double work_avx512(uint64_t seed, long n, volatile long *mine,
									volatile long *other, long *changes)
{
	v8d a = { 1, 2, 3, 4, 5, 6, 7, 8 }, b = { 9, 10, 11, 12, 13, 14, 15, 16 };
	v8d k = { 0.999, 0.998, 0.997, 0.996, 0.995, 0.994, 0.993, 0.992 };
	uint64_t x = seed;
	long last = *other;
	for (long i = 0; i < n; i++) {
		x = xorshift(x);
		double d = (double)(x >> 11) * 0x1p-53;
		v8d dv = { d, d, d, d, d * 2, d * 2, d * 2, d * 2 };
		a = a * k + dv;
		b = b * k + a * dv;
		(*mine)++;
		if (*other != last) {
			(*changes)++;
			last = *other;
		}
	}
	v8d s = a + b;
	double r = 0;
	for (int i = 0; i < 8; i++)
		r += s[i];
	return r;
}

#if defined(__x86_64__)
/* The flags: CF set or clear and DF set, live across 256 instructions that do not touch
 * them (compiled code keeps flags live between a compare and its branch only). */
static __attribute__((noinline)) double work_flags(uint64_t seed, long n, volatile long *mine, volatile long *other,
						   long *changes)
{
	long bad = 0, last = *other;
	uint64_t x = seed;
	for (long i = 0; i < n / 64; i++) {
		unsigned char cf;
		unsigned long fl;
		__asm__ volatile("bt $0, %[i]\n\t"
				 "std\n\t"
				 ".rept 256\n\tlea 1(%[x]), %[x]\n\t.endr\n\t"
				 "setc %[cf]\n\t"
				 "pushfq\n\t"
				 "popq %[fl]\n\t"
				 "cld"
				 : [cf] "=r"(cf), [fl] "=r"(fl), [x] "+r"(x)
				 : [i] "r"(i)
				 : "cc", "memory");
		if (cf != (i & 1) || !(fl & 0x400))
			bad++;
		(*mine)++;
		if (*other != last) {
			(*changes)++;
			last = *other;
		}
	}
	return (double)bad + (double)(x & 1);
}
#endif

struct regs_arg {
	int me;
	long n;
	long changes;
	int mismatches;
};

typedef double (*work_fn)(uint64_t, long, volatile long *, volatile long *, long *);

static any_t regs_main(any_t p)
{
	struct regs_arg *r = p;
	work_fn fns[4] = { work_sse, NULL, NULL, NULL };
#if defined(__x86_64__)
	fns[3] = work_flags;
	if (__builtin_cpu_supports("avx2"))
		fns[1] = work_avx2;
	if (__builtin_cpu_supports("avx512f"))
		fns[2] = work_avx512;
#endif
	volatile long *mine = &reg_turn[r->me], *other = &reg_turn[!r->me];
	for (int f = 0; f < 4; f++) {
		if (!fns[f])
			continue;
		long unused = 0;
		uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(r->me + 1) + (uint64_t)f;
		/* The reference runs with preemption disabled; the other thread then runs the
		 * same code in between our slices. */
		ULT_CHECK(marcel_thread_preemption_disable() == 0);
		double ref = fns[f](seed, r->n, mine, other, &unused);
		ULT_CHECK(marcel_thread_preemption_enable() == 0);
		double got = fns[f](seed, r->n, mine, other, &r->changes);
		if (memcmp(&ref, &got, sizeof(ref)))
			r->mismatches++;
	}
	return NULL;
}

START_TEST(registers_survive)
{
	if (!start("100", "1"))
		return;
	long n = iters_for_ms(60);
	struct regs_arg a = { 0, n, 0, 0 }, b = { 1, n, 0, 0 };
	marcel_t ta, tb;
	ULT_CHECK(marcel_create(&ta, NULL, regs_main, &a) == 0);
	ULT_CHECK(marcel_create(&tb, NULL, regs_main, &b) == 0);
	ULT_CHECK(marcel_join(ta, NULL) == 0);
	ULT_CHECK(marcel_join(tb, NULL) == 0);
	ult_checks_passed();
	ck_assert_int_eq(a.mismatches, 0);
	ck_assert_int_eq(b.mismatches, 0);
	/* Each was switched out many times in the middle of its loops. */
	ck_assert_int_ge(a.changes + b.changes, 20);
	marcel_end();
}
END_TEST

/* ---- malloc and stdio under a 100 us slice ---- */

#define HEAVY_THREADS 8

static FILE *devnull;
static uint64_t heavy_deadline;

struct heavy_arg {
	unsigned seed;
	long rounds;
	uint64_t started;
};

static any_t heavy_main(any_t p)
{
	struct heavy_arg *h = p;
	h->started = now_ns();
	void *keep[16] = { 0 };
	unsigned s = h->seed;
	while (now_ns() < heavy_deadline) {
		for (int i = 0; i < 64; i++) {
			s = s * 1103515245u + 12345u;
			unsigned k = (s >> 8) % 16;
			size_t size = 16 + (s >> 12) % (s & 1 ? 256 : 65536);
			free(keep[k]);
			keep[k] = malloc(size);
			ULT_CHECK(keep[k] != NULL);
			if (!keep[k])
				break;
			memset(keep[k], (int)i, size < 64 ? size : 64);
			if ((s & 7) == 0) {
				void *r = realloc(keep[k], size * 2);
				ULT_CHECK(r != NULL);
				if (r)
					keep[k] = r;
			}
		}
		char buf[128];
		snprintf(buf, sizeof(buf), "%u %g %s", s, s * 0.5, "round");
		fprintf(devnull, "%s %ld\n", buf, h->rounds);
		h->rounds++;
	}
	for (int k = 0; k < 16; k++)
		free(keep[k]);
	return NULL;
}

START_TEST(malloc_heavy_threads_finish)
{
	if (!start("100", NULL))
		return;
	devnull = fopen("/dev/null", "w");
	ck_assert_ptr_nonnull(devnull);
	struct heavy_arg h[HEAVY_THREADS];
	marcel_t t[HEAVY_THREADS];
	uint64_t start_ns = now_ns();
	heavy_deadline = start_ns + 1000000000u;
	for (int i = 0; i < HEAVY_THREADS; i++) {
		h[i] = (struct heavy_arg){ .seed = (unsigned)i * 7919u + 1 };
		ULT_CHECK(marcel_create(&t[i], NULL, heavy_main, &h[i]) == 0);
	}
	for (int i = 0; i < HEAVY_THREADS; i++)
		ULT_CHECK(marcel_join(t[i], NULL) == 0);
	ult_checks_passed();
	fclose(devnull);
	/* Cooperatively, the first threads would have used the whole second and the others
	 * would start after it: with time slices, all of them started well before the end. */
	unsigned vps = marcel_nbvps();
	for (int i = 0; i < HEAVY_THREADS; i++) {
		ck_assert_int_gt(h[i].rounds, 0);
		if ((unsigned)i >= vps)
			ck_assert_uint_lt(h[i].started, heavy_deadline - 200000000u);
	}
	marcel_end();
}
END_TEST

/* ---- a thread blocked in the kernel is left alone ---- */

static int pipefd[2];
static volatile int poll_done;

static any_t poller_main(any_t arg)
{
	long *eintr = arg;
	uint64_t end = now_ns() + 300000000u;
	/* A little computing first, so that the thread has a slice to lose. */
	volatile long spin = 0, other = 0;
	spin_watch(&spin, &other, iters_for_ms(5));
	for (uint64_t now; (now = now_ns()) < end;) {
		struct pollfd pfd = { .fd = pipefd[0], .events = POLLIN };
		int r = poll(&pfd, 1, (int)((end - now) / 1000000u) + 1);
		if (r < 0 && errno == EINTR)
			(*eintr)++;
	}
	poll_done = 1;
	return NULL;
}

/* Always ready on the same VP: the poller's slice has run out at every tick. */
static any_t yielder_main(any_t arg)
{
	(void)arg;
	while (!poll_done)
		marcel_yield();
	return NULL;
}

START_TEST(blocked_calls_not_hammered)
{
	if (!start("1000", "1"))
		return;
	ck_assert_int_eq(pipe(pipefd), 0);
	poll_done = 0;
	long eintr = 0;
	marcel_t t, y;
	ULT_CHECK(marcel_create(&t, NULL, poller_main, &eintr) == 0);
	ULT_CHECK(marcel_create(&y, NULL, yielder_main, NULL) == 0);
	ULT_CHECK(marcel_join(t, NULL) == 0);
	ULT_CHECK(marcel_join(y, NULL) == 0);
	ult_checks_passed();
	/* 300 ticks went by while it slept in poll() outside a blocking section, holding
	 * its VP with another thread ready: it lost at most the slice it was computing in
	 * when it blocked. */
	ck_assert_int_le(eintr, 2);
	close(pipefd[0]);
	close(pipefd[1]);
	marcel_end();
}
END_TEST

/* ---- option values ---- */

static void expect_refused(const char *env, const char *arg)
{
	struct ma_test_capture cap;
	char msg[512];
	if (env)
		setenv("MARCEL_TIMESLICE", env, 1);
	char *argv[] = { (char *)"test", (char *)arg, NULL };
	int argc = arg ? 2 : 1;
	ma_test_capture_begin(&cap);
	int e = marcel_init(&argc, argv);
	ma_test_capture_end(&cap, msg, sizeof(msg));
	unsetenv("MARCEL_TIMESLICE");
	ck_assert_msg(e == EINVAL, "%s/%s accepted (%d)", env, arg, e);
	ck_assert_msg(strstr(msg, arg ? "--marcel-timeslice" : "MARCEL_TIMESLICE") != NULL, "message: %s", msg);
}

START_TEST(bad_values_refused)
{
	expect_refused("abc", NULL);
	expect_refused("5", NULL);
	expect_refused("-1", NULL);
	expect_refused("10000001", NULL);
	expect_refused(NULL, "--marcel-timeslice=9");
	/* The bounds, and 0, are accepted (where preemption works at all). */
	static const char *ok[] = { "0", "10", "10000000" };
	for (unsigned i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (start(ok[i], NULL))
			marcel_end();
}
END_TEST

static void populate_slices(TCase *tc)
{
	tcase_add_test(tc, slice_shares_the_vp);
	tcase_add_test(tc, cooperative_runs_to_completion);
	tcase_add_test(tc, slice_frees_busy_waits);
	tcase_add_test(tc, default_slice_frees_busy_waits);
	tcase_add_test(tc, disabled_thread_keeps_the_vp);
	tcase_add_test(tc, non_preemptible_attribute);
	tcase_add_test(tc, registers_survive);
	tcase_add_test(tc, malloc_heavy_threads_finish);
	tcase_add_test(tc, blocked_calls_not_hammered);
	tcase_add_loop_test(tc, foreign_lock_holder_not_preempted, 0, FK_NB);
	tcase_add_test(tc, foreign_lock_failures_not_counted);
}

static void populate_api(TCase *tc)
{
	tcase_add_test(tc, disable_enable_errors);
	tcase_add_test(tc, bad_values_refused);
	tcase_add_test(tc, own_handler_cooperative);
}

int main(void)
{
	Suite *s = suite_create("preempt");
	ma_test_add_both(s, "slices", populate_slices, 60);
	ma_test_add_one(s, "api", ma_test_setup_real, populate_api, 60);
	return ma_test_run(s);
}
