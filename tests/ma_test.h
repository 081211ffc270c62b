/*
 * Shared by the Check suites that run the runtime: each suite is registered twice, once
 * on this machine and once on the synthetic 32-PU machine "pack:2 numa:2 core:4 pu:2"
 * (16 workers on this 2-core box), so hierarchical code paths are tested everywhere.
 */
#ifndef MA_TEST_H
#define MA_TEST_H

#include "ma_check_run.h"
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <marcel.h>

#define MA_TEST_SYNTH32 "pack:2 numa:2 core:4 pu:2"

/* Divisor of stress loop sizes: MA_TEST_SCALE when set (tests/run-all sets it for the
 * ThreadSanitizer job, which runs 5-15 times slower), else 1. Suites apply it on top of
 * their own valgrind scaling. */
static inline long ma_test_scale_div(void)
{
	const char *s = getenv("MA_TEST_SCALE");
	long d = s ? atol(s) : 1;
	return d > 1 ? d : 1;
}

/* True when built with ThreadSanitizer (some tests exceed its limits). */
#if defined(__SANITIZE_THREAD__)
#define MA_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MA_TEST_TSAN 1
#endif
#endif

/* errno through calls the compiler cannot see into: glibc declares __errno_location()
 * const, so in one function the compiler may keep the address it got before a call that
 * moved the thread to another worker, and read the errno of the kernel thread it left. */
static __attribute__((noinline, unused)) int get_errno(void)
{
	__asm__ volatile("" ::: "memory");
	return errno;
}

static __attribute__((noinline, unused)) void set_errno(int e)
{
	__asm__ volatile("" ::: "memory");
	errno = e;
}

/* Checks in threads other than the test's own: each records the first failed line with
 * MA_THREAD_CHECK, and the test asserts with ma_thread_checks_passed() that none failed. */
static int ma_thread_failed_line __attribute__((unused));
#define MA_THREAD_CHECK(cond)                                                              \
	do {                                                                               \
		if (!(cond)) {                                                             \
			int zero_ = 0;                                                     \
			__atomic_compare_exchange_n(&ma_thread_failed_line, &zero_, __LINE__, 0, \
						    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);   \
		}                                                                          \
	} while (0)

static inline __attribute__((unused)) void ma_thread_checks_reset(void)
{
	__atomic_store_n(&ma_thread_failed_line, 0, __ATOMIC_SEQ_CST);
}

static inline __attribute__((unused)) void ma_thread_checks_passed(void)
{
	int line = __atomic_load_n(&ma_thread_failed_line, __ATOMIC_SEQ_CST);
	ck_assert_msg(line == 0, "a thread check failed at line %d", line);
}

/* Which topology the current suite runs on; set by the fixtures below. */
static const char *ma_test_topology;

static inline void ma_test_setup_real(void)
{
	ma_test_topology = NULL;
	unsetenv("MARCEL_TOPOLOGY");
}

static inline void ma_test_setup_synth32(void)
{
	ma_test_topology = MA_TEST_SYNTH32;
	setenv("MARCEL_TOPOLOGY", MA_TEST_SYNTH32, 1);
}

/* Starts the runtime for one test; fails the test if it does not start. */
static inline void ma_test_init(void)
{
	int argc = 1;
	char *argv[] = { (char *)"test", NULL };
	ck_assert_int_eq(marcel_init(&argc, argv), 0);
}

/* Starts the runtime for a test whose threads use MA_THREAD_CHECK (on one VP if one_vp),
 * and ends it once none of their checks failed. */
static inline __attribute__((unused)) void ma_test_start_checked(int one_vp)
{
	ma_thread_checks_reset();
	if (one_vp)
		setenv("MARCEL_NVP", "1", 1);
	ma_test_init();
	unsetenv("MARCEL_NVP");
}

static inline __attribute__((unused)) void ma_test_end_checked(void)
{
	ma_thread_checks_passed();
	marcel_end();
}

/* Starts the runtime on a synthetic topology (NULL: this machine) with bubble scheduler
 * sched (NULL: the default), leaving the environment as it was found. */
static inline void ma_test_init_with(const char *topology, const char *sched)
{
	if (topology)
		setenv("MARCEL_TOPOLOGY", topology, 1);
	if (sched)
		setenv("MARCEL_BUBBLE_SCHEDULER", sched, 1);
	ma_test_init();
	unsetenv("MARCEL_BUBBLE_SCHEDULER");
	if (topology)
		unsetenv("MARCEL_TOPOLOGY");
}

/* Placement tests' busy threads: they compute until ma_test_busy_stop is set, yielding
 * every few microseconds (cooperative mode), so a test can sample where they run. */
static int ma_test_busy_stop;

static inline any_t ma_test_busy_until(int *stop)
{
	unsigned long n = 0;
	while (!__atomic_load_n(stop, __ATOMIC_RELAXED))
		if (++n % 256 == 0)
			marcel_yield();
	return NULL;
}

static inline any_t ma_test_busy(any_t arg)
{
	ma_test_busy_until(&ma_test_busy_stop);
	return arg;
}

/* The same with a flag of its own (arg: an int, set to stop). */
static inline any_t ma_test_busy_flag(any_t arg)
{
	return ma_test_busy_until(arg);
}

/* Sets the atomic_int arg points to: a thread that only says it ran. */
static inline any_t ma_test_set_flag(any_t arg)
{
	atomic_store((atomic_int *)arg, 1);
	return NULL;
}

/* The watchdog: a test that hangs is killed by Check at its time limit and reported as
 * "Test timeout expired", which says nothing of why. A second before that, SIGALRM makes
 * the test print the state of every marcel thread (marcel_print_threads), so that the
 * log names what waits for what. Each test case gets a fixture of its own that knows the
 * case's limit, as given to ma_test_add_one and scaled by CK_TIMEOUT_MULTIPLIER as Check
 * does: Check's tcase_name() names the test function, not the case, and only inside it. */
#define MA_TEST_MAX_CASES 64
static double ma_test_limits[MA_TEST_MAX_CASES];
static unsigned ma_test_nb_limits;

static void ma_test_watchdog_fire(int sig)
{
	(void)sig;
	/* Not async-signal-safe, knowingly: the process is about to be killed, and a
	 * report that cannot be printed (a lock held by the interrupted thread) costs
	 * nothing more than the missing report did. */
	static const char head[] = "\nma_test: this test is about to time out; marcel's threads:\n";
	if (write(STDERR_FILENO, head, sizeof(head) - 1) < 0)
		return;
	if (marcel_print_threads(stderr) == EPERM)
		fprintf(stderr, "  (the runtime is not running)\n");
	fflush(stderr);
}

static void ma_test_watchdog_arm(unsigned c)
{
	/* Without fork, one process runs every test, and valgrind's pace has no limit. */
	const char *fork_mode = getenv("CK_FORK");
	if (fork_mode && !strcmp(fork_mode, "no"))
		return;
	double limit = ma_test_limits[c];
	if (limit <= 0) {
		const char *d = getenv("CK_DEFAULT_TIMEOUT");
		limit = d ? atof(d) : 4;
	}
	const char *m = getenv("CK_TIMEOUT_MULTIPLIER");
	if (m && atof(m) > 0)
		limit *= atof(m);
	if (limit < 3)
		return;
	signal(SIGALRM, ma_test_watchdog_fire);
	alarm((unsigned)(limit - 1));
}

#define MA_TEST_WD(h, d) \
	static void ma_test_wd_##h##_##d(void) \
	{ \
		ma_test_watchdog_arm(h * 8 + d); \
	}
#define MA_TEST_WD8(h) MA_TEST_WD(h, 0) MA_TEST_WD(h, 1) MA_TEST_WD(h, 2) MA_TEST_WD(h, 3) \
	MA_TEST_WD(h, 4) MA_TEST_WD(h, 5) MA_TEST_WD(h, 6) MA_TEST_WD(h, 7)
#define MA_TEST_WD8_REF(h) ma_test_wd_##h##_0, ma_test_wd_##h##_1, ma_test_wd_##h##_2, ma_test_wd_##h##_3, \
	ma_test_wd_##h##_4, ma_test_wd_##h##_5, ma_test_wd_##h##_6, ma_test_wd_##h##_7
MA_TEST_WD8(0) MA_TEST_WD8(1) MA_TEST_WD8(2) MA_TEST_WD8(3)
MA_TEST_WD8(4) MA_TEST_WD8(5) MA_TEST_WD8(6) MA_TEST_WD8(7)
static void (*const ma_test_wd[MA_TEST_MAX_CASES])(void) __attribute__((unused)) = {
	MA_TEST_WD8_REF(0), MA_TEST_WD8_REF(1), MA_TEST_WD8_REF(2), MA_TEST_WD8_REF(3),
	MA_TEST_WD8_REF(4), MA_TEST_WD8_REF(5), MA_TEST_WD8_REF(6), MA_TEST_WD8_REF(7),
};

/* Adds tc to s twice: as-is on this machine, and a copy on the synthetic topology. */
typedef void (*ma_test_populate)(TCase *tc);

static inline void ma_test_add_one(Suite *s, const char *name, void (*setup)(void),
				   ma_test_populate populate, int timeout)
{
	TCase *tc = tcase_create(name);
	if (ma_test_nb_limits < MA_TEST_MAX_CASES) {
		ma_test_limits[ma_test_nb_limits] = timeout;
		tcase_add_checked_fixture(tc, ma_test_wd[ma_test_nb_limits++], NULL);
	}
	tcase_add_checked_fixture(tc, setup, NULL);
	populate(tc);
	if (timeout)
		tcase_set_timeout(tc, timeout);
	suite_add_tcase(s, tc);
}

static inline void ma_test_add_both(Suite *s, const char *name, ma_test_populate populate, int timeout)
{
	/* Check keeps the name pointer: give each copy storage that outlives the run. */
	static char names[32][64];
	static unsigned nb_names;
	char *synth = names[nb_names++ % 32];
	snprintf(synth, sizeof(names[0]), "%s-synth32", name);
	ma_test_add_one(s, name, ma_test_setup_real, populate, timeout);
	ma_test_add_one(s, synth, ma_test_setup_synth32, populate, timeout);
}

/* Attributes placing a thread on VP vp alone. */
static inline marcel_attr_t ma_test_attr_on_vp(unsigned vp)
{
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setvpset(&a, MARCEL_VPSET_VP(vp)), 0);
	return a;
}

/* The caller's VP, checked to be a valid one. */
static inline unsigned ma_test_here(void)
{
	int vp = marcel_current_vp();
	ck_assert_int_ge(vp, 0);
	ck_assert_int_lt(vp, (int)marcel_nbvps());
	return (unsigned)vp;
}

/* Captures what the caller writes on stderr between begin and end. */
struct ma_test_capture {
	FILE *tmp;
	int saved;
};

static inline void ma_test_capture_begin(struct ma_test_capture *c)
{
	fflush(stderr);
	c->tmp = tmpfile();
	ck_assert_ptr_nonnull(c->tmp);
	c->saved = dup(STDERR_FILENO);
	ck_assert_int_ge(c->saved, 0);
	ck_assert_int_ge(dup2(fileno(c->tmp), STDERR_FILENO), 0);
}

/* Restores stderr and copies what was written (at most n - 1 bytes, NUL-terminated). */
static inline void ma_test_capture_end(struct ma_test_capture *c, char *buf, size_t n)
{
	fflush(stderr);
	dup2(c->saved, STDERR_FILENO);
	close(c->saved);
	rewind(c->tmp);
	size_t len = fread(buf, 1, n - 1, c->tmp);
	buf[len] = 0;
	fclose(c->tmp);
}

/* Runs marcel_init with what it writes on stderr captured into msg; returns its result. */
static inline int ma_test_init_captured(char *msg, size_t n)
{
	struct ma_test_capture cap;
	ma_test_capture_begin(&cap);
	int argc = 1;
	char *argv[] = { (char *)"test", NULL };
	int e = marcel_init(&argc, argv);
	ma_test_capture_end(&cap, msg, n);
	return e;
}

static inline int ma_test_run(Suite *s)
{
	return ma_check_run(s);
}

/* Runs cmd with popen; returns its stdout (malloc'd) and its wait status. */
static inline char *ma_test_run_capture(const char *cmd, int *status)
{
	FILE *p = popen(cmd, "r");
	ck_assert_msg(p != NULL, "popen(%s) failed", cmd);
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	ck_assert_ptr_nonnull(buf);
	size_t n;
	while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (cap - len < 1024) {
			cap *= 2;
			buf = realloc(buf, cap);
			ck_assert_ptr_nonnull(buf);
		}
	}
	buf[len] = 0;
	*status = pclose(p);
	return buf;
}

#endif
