/*
 * smt-quiet's decisions, on a time line the test keeps: how long a lowered worker parks
 * for the time it ran, what is accounted per VP on a core of two hardware threads (one
 * raised, one lowered), and the probe on fake sysfs trees. No thread runs.
 */
#include <check.h>
#include "ma_check_run.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ma_hwprio.h"
#include "ma_smt_quiet.h"

extern const struct ma_hw_backend ma_hw_smt_quiet;

static uint64_t now_ns, parked_ns;

static uint64_t fake_clock(void)
{
	return now_ns;
}

static void fake_park(uint64_t ns)
{
	parked_ns += ns;
	now_ns += ns;
}

static void *started(void)
{
	void *priv = calloc(1, ma_hw_smt_quiet.priv_size);
	ck_assert_ptr_nonnull(priv);
	struct ma_hw_env env = { .sysfs = "/nonexistent", .resctrl = "/nonexistent" };
	struct ma_hw_why why;
	ck_assert_int_eq(ma_hw_smt_quiet.start(priv, &env, &why), 0);
	ma_hw_sq_set_clock(priv, fake_clock, fake_park);
	now_ns = 1000000000;
	parked_ns = 0;
	return priv;
}

START_TEST(quiet_share_per_level)
{
	ck_assert_uint_eq(ma_hw_sq_quiet_for(300000, 0), 0);
	ck_assert_uint_eq(ma_hw_sq_quiet_for(300000, -1), 100000);
	ck_assert_uint_eq(ma_hw_sq_quiet_for(300000, -2), 300000);
	/* At most a millisecond at once. */
	ck_assert_uint_eq(ma_hw_sq_quiet_for(5000000, -2), 1000000);
	ck_assert_uint_eq(ma_hw_sq_quiet_for(6000000, -1), 1000000);
}
END_TEST

/* A core of two hardware threads, VP 0 raised (0 after fitting), VP 1 lowered: each runs
 * 200 us between switches for 1000 switches; VP 1 parks half its time at -2, a quarter at
 * -1, VP 0 never. */
START_TEST(accounted_on_a_core_of_two)
{
	static const struct {
		int level;
		uint64_t quiet;
	} cases[] = { { -2, 999 * 200000ull }, { -1, 999 * 66666ull }, { 0, 0 } };
	for (unsigned k = 0; k < 3; k++) {
		void *priv = started();
		for (int i = 0; i < 1000; i++) {
			now_ns += 200000;
			ma_hw_smt_quiet.apply_self(priv, 0, 0);
			ma_hw_smt_quiet.apply_self(priv, 1, cases[k].level);
		}
		ck_assert_uint_eq(ma_hw_sq_quiet_ns(priv, 0), 0);
		ck_assert_uint_eq(ma_hw_sq_quiet_ns(priv, 1), cases[k].quiet);
		ck_assert_uint_eq(parked_ns, cases[k].quiet);
		free(priv);
	}
}
END_TEST

/* Back at 0, the time before does not count: the next park is for what ran since. */
START_TEST(level_zero_forgets)
{
	void *priv = started();
	ma_hw_smt_quiet.apply_self(priv, 3, -2);
	now_ns += 100000;
	ma_hw_smt_quiet.apply_self(priv, 3, 0);
	now_ns += 900000;
	ma_hw_smt_quiet.apply_self(priv, 3, -2); /* starts counting again: no park */
	ck_assert_uint_eq(parked_ns, 0);
	now_ns += 50000;
	ma_hw_smt_quiet.apply_self(priv, 3, -2);
	ck_assert_uint_eq(parked_ns, 50000);
	ck_assert_uint_eq(ma_hw_sq_quiet_ns(priv, 3), 50000);
	/* VPs past the table's end: nothing done, nothing broken. */
	ma_hw_smt_quiet.apply_self(priv, 100000, -2);
	free(priv);
}
END_TEST

START_TEST(apply_checks_its_reach)
{
	void *priv = started();
	struct ma_hw_why why;
	struct ma_hw_target t = { .vp = 1, .tid = 0, .cpu = -1, .core = 0, .cache = -1, .node = -1, .kind = -1 };
	ck_assert_int_eq(ma_hw_smt_quiet.apply(priv, &t, -2, &why), 0);
	ck_assert_int_eq(ma_hw_smt_quiet.apply(priv, &t, 0, &why), 0);
	ck_assert_int_eq(ma_hw_smt_quiet.apply(priv, &t, 1, &why), EINVAL);
	ck_assert_msg(strstr(why.s, "level 1") && strstr(why.s, "-2..0"), "%s", why.s);
	ck_assert_int_eq(ma_hw_smt_quiet.lo, -2);
	ck_assert_int_eq(ma_hw_smt_quiet.hi, 0);
	free(priv);
}
END_TEST

START_TEST(probe_needs_smt)
{
	char root[] = "/tmp/check-smtquiet-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(root));
	char smt[600], nosmt[600], cmd[700];
	snprintf(smt, sizeof(smt), "%s/smt", root);
	snprintf(nosmt, sizeof(nosmt), "%s/nosmt", root);
	ma_check_fake_smt_sysfs(smt, 4, 2);
	ma_check_fake_smt_sysfs(nosmt, 4, 1);
	struct ma_hw_why why = { "" };
	struct ma_hw_env env = { .sysfs = smt, .resctrl = "/nonexistent" };
	ck_assert_int_eq(ma_hw_smt_quiet.probe(&env, &why), MA_HW_PRESENT);
	env.sysfs = nosmt;
	ck_assert_int_eq(ma_hw_smt_quiet.probe(&env, &why), MA_HW_ABSENT);
	ck_assert_msg(strstr(why.s, "no SMT"), "%s", why.s);
	env.sysfs = "/nonexistent/sys";
	ck_assert_int_eq(ma_hw_smt_quiet.probe(&env, &why), MA_HW_ABSENT);
	ck_assert_msg(why.s[0], "no reason given");
	/* This machine: whatever it says, with a reason when absent. */
	env.sysfs = "/sys";
	enum ma_hw_presence p = ma_hw_smt_quiet.probe(&env, &why);
	printf("smt-quiet on this machine: %s%s%s\n", ma_hw_presence_name(p), p ? ": " : "", p ? why.s : "");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hwprio smt-quiet");
	TCase *tc = tcase_create("smt-quiet");
	tcase_add_test(tc, quiet_share_per_level);
	tcase_add_test(tc, accounted_on_a_core_of_two);
	tcase_add_test(tc, level_zero_forgets);
	tcase_add_test(tc, apply_checks_its_reach);
	tcase_add_test(tc, probe_needs_smt);
	suite_add_tcase(s, tc);
	return ma_check_run(s);
}
