/*
 * hwprio in the running library: MARCEL_HWPRIO and MARCEL_HWPRIO_POLICY (bad values get
 * one line and leave nothing behind), the backends' descriptions, the per-VP levels and
 * their application by the workers. The backends' own mechanisms are tested in their own
 * suites on fake trees (check_hwprio_resctrl, ...); the policy in check_hwprio_policy.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <marcel.h>
#include "ma_test.h"

static void env_clear(void)
{
	unsetenv("MARCEL_HWPRIO");
	unsetenv("MARCEL_HWPRIO_POLICY");
	unsetenv("MARCEL_HWPRIO_RESCTRL");
	unsetenv("MARCEL_HWPRIO_SYSFS");
}

static unsigned lines(const char *s)
{
	unsigned n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* marcel_init refuses var=value with err, in one line that names both and contains
 * `accepted`; then a plain marcel_init works. */
static void refused(const char *var, const char *value, int err, const char *accepted)
{
	char msg[2048];
	env_clear();
	setenv(var, value, 1);
	int e = ma_test_init_captured(msg, sizeof(msg));
	ck_assert_msg(e == err, "%s=%s: marcel_init returned %d, expected %d (%s)", var, value, e, err, msg);
	ck_assert_msg(lines(msg) == 1, "%s=%s: expected one line, got '%s'", var, value, msg);
	ck_assert_msg(strstr(msg, var) && strstr(msg, value), "%s=%s not named in '%s'", var, value, msg);
	ck_assert_msg(strstr(msg, accepted), "'%s' not in '%s'", accepted, msg);
	ck_assert_uint_eq(marcel_nbvps(), 0);
	env_clear();
	ck_assert_int_eq(ma_test_init_captured(msg, sizeof(msg)), 0);
	ck_assert_str_eq(msg, "");
	marcel_end();
}

START_TEST(bad_values)
{
	refused("MARCEL_HWPRIO", "bogus", EINVAL, "'bogus' is not a backend");
	refused("MARCEL_HWPRIO", "bogus", EINVAL, "auto, none, or a comma-separated list of:");
	refused("MARCEL_HWPRIO", "none,none", EINVAL, "'none' changes nothing and goes alone");
	refused("MARCEL_HWPRIO", "auto,none", EINVAL, "is not a backend");
	refused("MARCEL_HWPRIO", ",", EINVAL, "is not a backend");
	refused("MARCEL_HWPRIO", "", EINVAL, "auto, none or backend names");
	refused("MARCEL_HWPRIO_POLICY", "fastest", EINVAL, "dlrb (the default), uniform or adaptive");
}
END_TEST

/* The argv form, as for every knob; and a policy by name. */
START_TEST(flag_and_policy)
{
	env_clear();
	setenv("MARCEL_HWPRIO_POLICY", "adaptive", 1);
	int argc = 3;
	char *argv[] = { (char *)"test", (char *)"--marcel-hwprio=none", (char *)"keep", NULL };
	ck_assert_int_eq(marcel_init(&argc, argv), 0);
	ck_assert_int_eq(argc, 2);
	ck_assert_str_eq(argv[1], "keep");
	ck_assert_int_eq(marcel_hwprio_set_vp_level(0, 1), 0);
	marcel_end();
	env_clear();
}
END_TEST

/* Off by default: levels read 0, and setting one says hwprio is off. */
START_TEST(off_by_default)
{
	env_clear();
	int l = 7;
	ck_assert_int_eq(marcel_hwprio_vp_level(0, &l), ENOENT);
	ck_assert_int_eq(marcel_init(NULL, NULL), 0);
	ck_assert_int_eq(marcel_hwprio_vp_level(0, &l), 0);
	ck_assert_int_eq(l, 0);
	ck_assert_int_eq(marcel_hwprio_set_vp_level(0, 1), ENOTSUP);
	marcel_end();
}
END_TEST

/* auto on a machine that offers nothing: no message, hwprio off. (Whether this machine
 * offers something is read from the backends' own probes.) */
START_TEST(auto_quiet_when_nothing)
{
	env_clear();
	setenv("MARCEL_HWPRIO_RESCTRL", "/nonexistent/resctrl", 1);
	setenv("MARCEL_HWPRIO_SYSFS", "/nonexistent/sys", 1);
	int offered = 0;
	for (unsigned i = 0; i < marcel_hwprio_backend_count(); i++) {
		struct marcel_hwprio_backend_info info;
		ck_assert_int_eq(marcel_hwprio_backend(i, &info), 0);
		offered |= strcmp(info.name, "none") && info.presence == MARCEL_HWPRIO_PRESENT;
	}
	setenv("MARCEL_HWPRIO", "auto", 1);
	char msg[1024];
	ck_assert_int_eq(ma_test_init_captured(msg, sizeof(msg)), 0);
	ck_assert_str_eq(msg, "");
	if (!offered)
		ck_assert_int_eq(marcel_hwprio_set_vp_level(0, 1), ENOTSUP);
	marcel_end();
	env_clear();
}
END_TEST

/* What the library says about its backends, without marcel_init and while running. */
START_TEST(backends_described)
{
	env_clear();
	unsigned n = marcel_hwprio_backend_count();
	ck_assert_uint_ge(n, 1);
	struct marcel_hwprio_backend_info info;
	ck_assert_int_eq(marcel_hwprio_backend(n, &info), EINVAL);
	ck_assert_int_eq(marcel_hwprio_backend(0, NULL), EINVAL);
	int none = -1;
	for (unsigned i = 0; i < n; i++) {
		ck_assert_int_eq(marcel_hwprio_backend(i, &info), 0);
		ck_assert_ptr_nonnull(info.name);
		ck_assert_ptr_nonnull(info.description);
		ck_assert_int_le(MARCEL_HWPRIO_MIN, info.lo);
		ck_assert_int_le(info.lo, info.hi);
		ck_assert_int_le(info.hi, MARCEL_HWPRIO_MAX);
		ck_assert_int_eq(info.active, 0);
		/* Not present: a reason in words. */
		ck_assert_int_eq(info.presence == MARCEL_HWPRIO_PRESENT, info.reason[0] == 0);
		if (!strcmp(info.name, "none"))
			none = (int)i;
	}
	ck_assert_int_ge(none, 0);
	setenv("MARCEL_HWPRIO", "none", 1);
	ck_assert_int_eq(marcel_init(NULL, NULL), 0);
	ck_assert_int_eq(marcel_hwprio_backend((unsigned)none, &info), 0);
	ck_assert_int_eq(info.presence, MARCEL_HWPRIO_PRESENT);
	ck_assert_int_eq(info.active, 1);
	marcel_end();
	ck_assert_int_eq(marcel_hwprio_backend((unsigned)none, &info), 0);
	ck_assert_int_eq(info.active, 0);
	env_clear();
}
END_TEST

static void *spin_yield(void *arg)
{
	for (int i = 0; i < 200; i++)
		marcel_yield();
	return arg;
}

/* Levels by hand with the none backend: recorded per VP, checked, reset by marcel_end;
 * threads keep running while VPs change levels. */
START_TEST(levels_by_hand)
{
	env_clear();
	setenv("MARCEL_HWPRIO", "none", 1);
	ck_assert_int_eq(marcel_init(NULL, NULL), 0);
	unsigned nvp = marcel_nbvps();
	int l;
	ck_assert_int_eq(marcel_hwprio_set_vp_level(0, 3), EINVAL);
	ck_assert_int_eq(marcel_hwprio_set_vp_level(0, -3), EINVAL);
	ck_assert_int_eq(marcel_hwprio_set_vp_level(nvp, 1), EINVAL);
	ck_assert_int_eq(marcel_hwprio_vp_level(nvp, &l), EINVAL);
	ck_assert_int_eq(marcel_hwprio_vp_level(0, NULL), EINVAL);
	for (unsigned v = 0; v < nvp; v++)
		ck_assert_int_eq(marcel_hwprio_set_vp_level(v, v % 2 ? -2 : 2), 0);
	marcel_t t[8];
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(marcel_create(&t[i], NULL, spin_yield, NULL), 0);
	for (int round = 0; round < 20; round++) {
		ck_assert_int_eq(marcel_hwprio_set_vp_level((unsigned)round % nvp, round % 5 - 2), 0);
		marcel_yield();
	}
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(marcel_join(t[i], NULL), 0);
	ck_assert_int_eq(marcel_hwprio_set_vp_level(0, -1), 0);
	ck_assert_int_eq(marcel_hwprio_vp_level(0, &l), 0);
	ck_assert_int_eq(l, -1);
	marcel_end();
	ck_assert_int_eq(marcel_hwprio_vp_level(0, &l), ENOENT);
	/* A new runtime starts from 0. */
	ck_assert_int_eq(marcel_init(NULL, NULL), 0);
	ck_assert_int_eq(marcel_hwprio_vp_level(0, &l), 0);
	ck_assert_int_eq(l, 0);
	marcel_end();
	env_clear();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hwprio");
	TCase *tc = tcase_create("runtime");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, bad_values);
	tcase_add_test(tc, flag_and_policy);
	tcase_add_test(tc, off_by_default);
	tcase_add_test(tc, auto_quiet_when_nothing);
	tcase_add_test(tc, backends_described);
	tcase_add_test(tc, levels_by_hand);
	suite_add_tcase(s, tc);
	return ma_test_run(s);
}
