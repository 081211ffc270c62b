/*
 * Stack overflow reporting: a thread that runs off its stack kills the process with
 * SIGABRT and one message naming the thread and its stack size; other faults are not
 * reported as overflows and still reach the application's own SIGSEGV handler.
 *
 * Each crash happens in a child process forked by the test; the parent checks how it
 * died and what it wrote on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "ma_test.h"

#define I2P(i) ((any_t)(intptr_t)(i))

#define OVERFLOW_MSG_FMT                                                                    \
	"marcel: stack overflow in thread '%s' (%zu bytes); raise MARCEL_STACK_SIZE or " \
	"marcel_attr_setstacksize\n"

/* Keeps the compiler from seeing that the recursion has no end. */
static volatile int recursion_limit = 1 << 30;

/* 512-byte frames (less than a page, so the guard page is hit rather than jumped over);
 * the addition after the call prevents a tail call. */
static __attribute__((noinline)) int recurse(int depth)
{
	volatile char frame[512];
	frame[0] = (char)depth;
	frame[sizeof(frame) - 1] = (char)depth;
	if (depth >= recursion_limit)
		return frame[0];
	return recurse(depth + 1) + frame[sizeof(frame) - 1];
}

static any_t overflow_body(any_t arg)
{
	(void)arg;
	return I2P(recurse(0));
}

/* A fault that is not a stack overflow. Not a NULL store: that is undefined behaviour,
 * which UBSan reports before the fault happens; an inaccessible page just faults. */
static void *volatile fault_addr;

static void fault_outside_stacks(void)
{
	volatile int *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		_exit(97);
	fault_addr = (void *)p;
	*p = 1;
}

static any_t fault_body(any_t arg)
{
	(void)arg;
	fault_outside_stacks();
	return NULL;
}

struct child_result {
	int status;
	char err[4096];
};

/* Runs fn in a forked child with stderr sent to a pipe; fn must not return normally
 * (if it does, the child exits with 0). */
static void run_child(void (*fn)(void), struct child_result *res)
{
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(p[0]);
		dup2(p[1], STDERR_FILENO);
		close(p[1]);
		fn();
		_exit(0);
	}
	close(p[1]);
	size_t len = 0;
	ssize_t r;
	while ((r = read(p[0], res->err + len, sizeof(res->err) - 1 - len)) > 0 ||
	       (r < 0 && errno == EINTR))
		if (r > 0)
			len += (size_t)r;
	res->err[len] = 0;
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &res->status, 0), pid);
}

/* In the child: fail loudly (exit code 90+) if the setup itself goes wrong. */
static void child_init(void)
{
	int argc = 1;
	char *argv[] = { (char *)"overflow", NULL };
	if (marcel_init(&argc, argv))
		_exit(90);
}

static void child_join(marcel_attr_t *a, marcel_func_t fn)
{
	marcel_t t;
	if (marcel_create(&t, a, fn, NULL))
		_exit(91);
	marcel_join(t, NULL);
	_exit(92);
}

static void child_overflow_64k(void)
{
	child_init();
	marcel_attr_t a;
	if (marcel_attr_init(&a) || marcel_attr_setstacksize(&a, 64 * 1024) ||
	    marcel_attr_setname(&a, "deep-recursor"))
		_exit(93);
	child_join(&a, overflow_body);
}

static void check_overflow_death(const struct child_result *res, const char *name, size_t size)
{
	char expected[256];
	snprintf(expected, sizeof(expected), OVERFLOW_MSG_FMT, name, size);
	ck_assert_msg(WIFSIGNALED(res->status) && WTERMSIG(res->status) == SIGABRT,
		      "child status %#x (exited %d, signal %d), stderr: %s", res->status,
		      WIFEXITED(res->status) ? WEXITSTATUS(res->status) : -1,
		      WIFSIGNALED(res->status) ? WTERMSIG(res->status) : -1, res->err);
	ck_assert_msg(strstr(res->err, expected) != NULL, "expected '%s' on stderr, got '%s'", expected,
		      res->err);
	/* Reported once. */
	ck_assert_ptr_null(strstr(strstr(res->err, expected) + strlen(expected), "stack overflow"));
}

START_TEST(test_overflow_64k)
{
	struct child_result res;
	run_child(child_overflow_64k, &res);
	check_overflow_death(&res, "deep-recursor", 65536);
}
END_TEST

#ifndef MA_TEST_TSAN /* see main() */
/* Past a budget of guarded stacks (a quarter of vm.max_map_count), stacks come from
 * unguarded slabs: an overflow there is caught by the canary below the stack (or, for a
 * runaway recursion, by the slab's guard page) and reported the same way. */
static marcel_sem_t park = MARCEL_SEM_INITIALIZER(0), parked = MARCEL_SEM_INITIALIZER(0);

static any_t park_body(any_t arg)
{
	(void)arg;
	marcel_sem_V(&parked);
	marcel_sem_P(&park);
	return NULL;
}

static long guard_budget(void)
{
	long max = 65530;
	FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
	if (f) {
		if (fscanf(f, "%ld", &max) != 1 || max < 1024)
			max = 65530;
		fclose(f);
	}
	return max / 4;
}

static void child_overflow_slab(void)
{
	setenv("MARCEL_STACK_SIZE", "16k", 1);
	child_init();
	long n = guard_budget() + 8;
	for (long i = 0; i < n; i++)
		if (marcel_create(NULL, NULL, park_body, NULL))
			_exit(93);
	for (long i = 0; i < n; i++)
		marcel_sem_P(&parked);
	marcel_attr_t a;
	if (marcel_attr_init(&a) || marcel_attr_setstacksize(&a, 64 * 1024) ||
	    marcel_attr_setname(&a, "slab-recursor"))
		_exit(94);
	child_join(&a, overflow_body);
}

/* Fills whole frames down to `depth`, then yields: a bounded overflow that never faults,
 * caught by the canary check when the thread leaves its worker. */
static __attribute__((noinline)) int fill_then_yield(int depth)
{
	volatile char frame[512];
	for (size_t i = 0; i < sizeof(frame); i++)
		frame[i] = (char)depth;
	if (depth == 0) {
		marcel_yield();
		return frame[3];
	}
	return fill_then_yield(depth - 1) + frame[7];
}

static any_t bounded_overflow_body(any_t arg)
{
	(void)arg;
	/* About 16k + 3k of frames on a 16k stack. */
	return I2P(fill_then_yield(36));
}

static void child_canary_slab(void)
{
	setenv("MARCEL_STACK_SIZE", "16k", 1);
	child_init();
	long n = guard_budget() + 8;
	for (long i = 0; i < n; i++)
		if (marcel_create(NULL, NULL, park_body, NULL))
			_exit(93);
	for (long i = 0; i < n; i++)
		marcel_sem_P(&parked);
	marcel_attr_t a;
	if (marcel_attr_init(&a) || marcel_attr_setname(&a, "slab-filler"))
		_exit(94);
	child_join(&a, bounded_overflow_body);
}

START_TEST(test_canary_slab_stack)
{
	struct child_result res;
	run_child(child_canary_slab, &res);
	check_overflow_death(&res, "slab-filler", 16384);
}
END_TEST

START_TEST(test_overflow_slab_stack)
{
	struct child_result res;
	run_child(child_overflow_slab, &res);
	check_overflow_death(&res, "slab-recursor", 65536);
}
END_TEST
#endif


/* The default stack size comes from MARCEL_STACK_SIZE; the default name is "user". */
static void child_overflow_default(void)
{
	setenv("MARCEL_STACK_SIZE", "64k", 1);
	child_init();
	child_join(NULL, overflow_body);
}

START_TEST(test_overflow_default_size)
{
	struct child_result res;
	run_child(child_overflow_default, &res);
	check_overflow_death(&res, "user", 65536);
}
END_TEST

static any_t bystander(any_t arg)
{
	for (int i = 0; i < 100000; i++)
		marcel_yield();
	return arg;
}

/* A name set with marcel_setname is the one reported; any stack size is reported as set. */
static any_t renamed_overflow(any_t arg)
{
	(void)arg;
	marcel_setname(marcel_self(), "renamed-late");
	return I2P(recurse(0));
}

static void child_overflow_renamed(void)
{
	child_init();
	marcel_attr_t a;
	if (marcel_attr_init(&a) || marcel_attr_setstacksize(&a, 200000))
		_exit(93);
	/* Several bystanders, so the overflow happens among other threads. */
	for (int i = 0; i < 8; i++)
		marcel_create(NULL, NULL, bystander, NULL);
	child_join(&a, renamed_overflow);
}

START_TEST(test_overflow_renamed)
{
	struct child_result res;
	run_child(child_overflow_renamed, &res);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	check_overflow_death(&res, "renamed-late", (200000 + page - 1) / page * page);
}
END_TEST

/* A fault outside any guard page is a plain SIGSEGV, not an overflow. */
static void child_fault(void)
{
	child_init();
	child_join(NULL, fault_body);
}

START_TEST(test_other_fault)
{
	struct child_result res;
	run_child(child_fault, &res);
#if defined(__SANITIZE_ADDRESS__)
	/* AddressSanitizer's handler was installed before ours: it is the one to get it. */
	ck_assert_msg(strstr(res.err, "AddressSanitizer: SEGV") != NULL, "child status %#x, stderr: %s",
		      res.status, res.err);
#elif defined(MA_TEST_TSAN)
	/* So was ThreadSanitizer's, which reports and exits. */
	ck_assert_msg(strstr(res.err, "ThreadSanitizer: SEGV") != NULL, "child status %#x, stderr: %s",
		      res.status, res.err);
#else
	ck_assert_msg(WIFSIGNALED(res.status) && WTERMSIG(res.status) == SIGSEGV,
		      "child status %#x, stderr: %s", res.status, res.err);
#endif
	ck_assert_msg(strstr(res.err, "stack overflow") == NULL, "reported as an overflow: %s", res.err);
}
END_TEST

/* The application's SIGSEGV handler, installed before marcel_init, still gets other faults. */
static void user_handler(int sig)
{
	(void)sig;
	_exit(42);
}

static void user_siginfo_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	/* 43: the handler got the fault's own siginfo, passed through unchanged. */
	_exit(si->si_addr == fault_addr ? 43 : 44);
}

static void install(int siginfo)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	if (siginfo) {
		sa.sa_sigaction = user_siginfo_handler;
		sa.sa_flags = SA_SIGINFO;
	} else {
		sa.sa_handler = user_handler;
	}
	if (sigaction(SIGSEGV, &sa, NULL))
		_exit(94);
}

static void child_user_handler(void)
{
	install(0);
	child_init();
	child_join(NULL, fault_body);
}

static void child_user_siginfo_handler(void)
{
	install(1);
	child_init();
	child_join(NULL, fault_body);
}

/* An overflow is still reported as such when the application has a handler. */
static void child_user_handler_overflow(void)
{
	install(0);
	child_init();
	marcel_attr_t a;
	if (marcel_attr_init(&a) || marcel_attr_setstacksize(&a, 64 * 1024) ||
	    marcel_attr_setname(&a, "with-handler"))
		_exit(93);
	child_join(&a, overflow_body);
}

/* After marcel_end, the application's handler is back in place. */
static void child_user_handler_after_end(void)
{
	install(0);
	child_init();
	marcel_t t;
	if (marcel_create(&t, NULL, bystander, NULL) || marcel_join(t, NULL))
		_exit(95);
	marcel_end();
	fault_outside_stacks();
	_exit(96);
}

START_TEST(test_user_handler)
{
	struct child_result res;
	run_child(child_user_handler, &res);
	ck_assert_msg(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 42, "child status %#x, stderr: %s",
		      res.status, res.err);
	ck_assert_ptr_null(strstr(res.err, "stack overflow"));

	run_child(child_user_siginfo_handler, &res);
	ck_assert_msg(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 43, "child status %#x, stderr: %s",
		      res.status, res.err);

	run_child(child_user_handler_overflow, &res);
	check_overflow_death(&res, "with-handler", 65536);

	run_child(child_user_handler_after_end, &res);
	ck_assert_msg(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 42, "child status %#x, stderr: %s",
		      res.status, res.err);
}
END_TEST

static void tc_overflow(TCase *tc)
{
	tcase_add_test(tc, test_overflow_64k);
#ifndef MA_TEST_TSAN
	/* These keep 16k threads alive: ThreadSanitizer counts each as a thread and stops
	 * at 8128. */
	tcase_add_test(tc, test_overflow_slab_stack);
	tcase_add_test(tc, test_canary_slab_stack);
#endif
	tcase_add_test(tc, test_overflow_default_size);
	tcase_add_test(tc, test_overflow_renamed);
	tcase_add_test(tc, test_other_fault);
	tcase_add_test(tc, test_user_handler);
}

int main(void)
{
	Suite *s = suite_create("overflow");
	ma_test_add_both(s, "overflow", tc_overflow, 60);
	return ma_test_run(s);
}
