/*
 * Shared by the suites that run the example programs (examples/) by path: running one
 * under a hang guard, checking its answer to bad options, and the environment each test
 * starts from.
 */
#ifndef MA_EXAMPLE_TEST_H
#define MA_EXAMPLE_TEST_H

#include <signal.h>
#include <sys/wait.h>
#include "ma_test.h"

/* What the examples read from the environment: each test sets what it needs, nothing is
 * inherited from whoever runs the suite. A checked fixture. */
static inline void ma_example_clean_env(void)
{
	unsetenv("MARCEL_TOPOLOGY");
	unsetenv("MARCEL_BUBBLE_SCHEDULER");
	unsetenv("MARCEL_NVP");
	unsetenv("OMP_NUM_THREADS");
	unsetenv("MARCEL_HWPRIO");
	unsetenv("MARCEL_HWPRIO_POLICY");
	unsetenv("MARCEL_SMT");
}

/* Runs "env path args" with stderr merged into stdout; returns the output (to free) and
 * sets *status (as pclose). The run is killed after limit_s seconds (times
 * CK_TIMEOUT_MULTIPLIER), so that a hang fails the test with the output so far instead
 * of Check's bare time-out. */
static inline char *ma_example_run(const char *env, const char *path, const char *args, int limit_s, int *status)
{
	ck_assert_msg(access(path, X_OK) == 0, "%s not built: run make in the build's examples directory", path);
	const char *mult = getenv("CK_TIMEOUT_MULTIPLIER");
	int limit = limit_s * (mult && atoi(mult) > 1 ? atoi(mult) : 1);
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "%s timeout -s KILL %d %s %s 2>&1", env, limit, path, args);
	char *out = ma_test_run_capture(cmd, status);
	ck_assert_msg(!WIFEXITED(*status) || WEXITSTATUS(*status) != 128 + SIGKILL,
		      "%s %s %s did not end within %d s (hung?); its output:\n%s", env, path, args, limit, out);
	return out;
}

/* ma_example_run, which must exit with status want. */
static inline char *ma_example_run_expect(const char *env, const char *path, const char *args, int limit_s,
					  int want)
{
	int st;
	char *out = ma_example_run(env, path, args, limit_s, &st);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == want, "%s %s %s: status %#x, expected exit %d:\n%s", env,
		      path, args, st, want, out);
	return out;
}

/* path, given bad options args, must exit 2 and print its usage naming `named` (the
 * option at fault) and, if not NULL, `also`. */
static inline void ma_example_expect_usage_error(const char *path, const char *args, const char *named,
						 const char *also)
{
	char *out = ma_example_run_expect("", path, args, 30, 2);
	ck_assert_msg(strstr(out, named) != NULL && strstr(out, "usage:") != NULL && (!also || strstr(out, also)),
		      "%s %s: the message does not name %s%s%s or give the usage:\n%s", path, args, named,
		      also ? " and " : "", also ? also : "", out);
	free(out);
}

#endif
