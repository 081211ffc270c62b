/*
 * hwprio's power-ppr backend (hwprio/power_ppr.c) with hwprio's library alone, no runtime.
 * On this build's processor: a build for anything but POWER says the backend is absent
 * and why, and its apply and start refuse rather than pretend; a POWER build reads back
 * what apply sets. On any machine: the level mapping, the search for SMT siblings on fake
 * sysfs trees, and the verdict of the calibration (which itself needs a POWER core:
 * doc/design.md "hwprio").
 */
#define _GNU_SOURCE
#include <check.h>
#include "ma_check_run.h"
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "ma_hwprio.h"
#include "arch/ma_ppr_arch.h"
#include "ma_smt.h"

static const struct ma_hw_backend *ppr(void)
{
	const struct ma_hw_backend *b = ma_hw_backend_find("power-ppr");
	ck_assert_ptr_nonnull(b);
	return b;
}

/* ---- fake sysfs trees ---- */

static char root[64];

static void tree_new(void)
{
	strcpy(root, "/tmp/check_hwprio_ppr.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
}

/* <root>/devices/system/cpu/cpu<n>/topology/thread_siblings_list holding text. */
static void siblings_file(int n, const char *text)
{
	char path[256];
	static const char *const dirs[] = { "/devices", "/devices/system", "/devices/system/cpu" };
	for (unsigned i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s%s", root, dirs[i]);
		mkdir(path, 0755);
	}
	snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%d", root, n);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%d/topology", root, n);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%d/topology/thread_siblings_list", root, n);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void tree_free(void)
{
	ck_assert_int_eq(nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

/* ---- the backend on this build ---- */

START_TEST(listed_after_none)
{
	const struct ma_hw_backend *b = ppr();
	ck_assert_int_eq(b->lo, -2);
	ck_assert_int_eq(b->hi, 1);
	ck_assert_ptr_nonnull(b->apply_self);
	ck_assert_uint_ge(b->priv_size, sizeof(int));
	unsigned none = ma_hw_nb_backends, me = ma_hw_nb_backends;
	for (unsigned i = 0; i < ma_hw_nb_backends; i++) {
		if (!strcmp(ma_hw_backends[i]->name, "none"))
			none = i;
		if (ma_hw_backends[i] == b)
			me = i;
	}
	ck_assert_uint_lt(none, me);
	ck_assert_uint_lt(me, ma_hw_nb_backends);
	/* MARCEL_HWPRIO takes its name. */
	struct ma_hw_choice c;
	struct ma_hw_why why = { "" };
	ck_assert_int_eq(ma_hw_choice_parse("power-ppr", &c, &why), 0);
	ck_assert_uint_eq(c.n, 1);
	ck_assert_ptr_eq(c.named[0], b);
	ck_assert_ptr_nonnull(strstr(ma_hw_accepted(), " power-ppr"));
}
END_TEST

START_TEST(probe_says_why_absent)
{
	const struct ma_hw_env env = { .sysfs = "/sys", .resctrl = "/sys/fs/resctrl" };
	struct ma_hw_why why = { "" };
	enum ma_hw_presence p = ppr()->probe(&env, &why);
	if (!ma_ppr_arch_missing()) {
		/* A POWER build on POWER7 or later. */
		ck_assert_msg(p == MA_HW_PRESENT, "probe on POWER: %s", why.s);
		return;
	}
	ck_assert_int_eq(p, MA_HW_ABSENT);
	ck_assert_str_eq(why.s, "not a POWER processor: this build is for " MA_HOST_CPU);
	ck_assert_str_eq(why.s, ma_ppr_arch_missing());
}
END_TEST

START_TEST(apply_and_start_refuse_without_power)
{
	if (!ma_ppr_arch_missing())
		return; /* apply_reads_back covers POWER */
	const struct ma_hw_backend *b = ppr();
	void *priv = calloc(1, b->priv_size);
	ck_assert_ptr_nonnull(priv);
	const struct ma_hw_target t = { .vp = 0, .tid = 0, .cpu = 0, .core = 0, .cache = -1, .node = -1, .kind = -1 };
	for (int level = b->lo; level <= b->hi; level++) {
		struct ma_hw_why why = { "" };
		ck_assert_int_eq(b->apply(priv, &t, level, &why), ENOTSUP);
		ck_assert_str_eq(why.s, "not a POWER processor: this build is for " MA_HOST_CPU);
	}
	/* start refuses before looking for siblings, even where there are some. */
	tree_new();
	siblings_file(0, "0-1\n");
	const struct ma_hw_env env = { .sysfs = root, .resctrl = "/sys/fs/resctrl" };
	struct ma_hw_why why = { "" };
	ck_assert_int_eq(b->start(priv, &env, &why), ENOTSUP);
	ck_assert_str_eq(why.s, "not a POWER processor: this build is for " MA_HOST_CPU);
	tree_free();
	free(priv);
}
END_TEST

START_TEST(apply_reads_back)
{
	if (ma_ppr_arch_missing())
		return; /* apply_and_start_refuse_without_power covers the others */
	const struct ma_hw_backend *b = ppr();
	void *priv = calloc(1, b->priv_size);
	ck_assert_ptr_nonnull(priv);
	for (int level = -1; level <= 1; level++) {
		struct ma_hw_why why = { "" };
		ck_assert_msg(!b->apply(priv, NULL, level, &why), "apply(%d): %s", level, why.s);
		ck_assert_int_eq(ma_ppr_pri(ma_ppr_arch_read()), ma_ppr_pri_of_level(level));
	}
	struct ma_hw_why why = { "" };
	ck_assert_int_eq(b->apply(priv, NULL, 2, &why), EINVAL);
	ck_assert_int_eq(ma_ppr_pri(ma_ppr_arch_read()), 4);
	free(priv);
}
END_TEST

/* ---- pure parts ---- */

START_TEST(levels_map_to_pri)
{
	static const int pri[] = { 1, 2, 3, 4, 5 }; /* levels -2..+2 */
	for (int level = MA_HW_LEVEL_MIN; level <= MA_HW_LEVEL_MAX; level++) {
		ck_assert_int_eq(ma_ppr_pri_of_level(level), pri[level + 2]);
		ck_assert_int_eq(ma_ppr_level_of_pri(pri[level + 2]), level);
	}
	ck_assert_int_eq(ma_ppr_level_of_pri(0), MA_PPR_NO_LEVEL);
	ck_assert_int_eq(ma_ppr_level_of_pri(6), MA_PPR_NO_LEVEL);
	ck_assert_int_eq(ma_ppr_level_of_pri(7), MA_PPR_NO_LEVEL);
	/* PRI is bits 11:13 in big-endian numbering. */
	ck_assert_int_eq(ma_ppr_pri(UINT64_C(3) << 50), 3);
	ck_assert_int_eq(ma_ppr_pri(~(UINT64_C(7) << 50)), 0);
	ck_assert_int_eq(ma_ppr_pri(UINT64_C(0x0010000000000000)), 4);
}
END_TEST

START_TEST(siblings_found)
{
	static const struct {
		const char *lists[4]; /* cpu0..cpu3, NULL: no file */
		int a, b;
	} cases[] = {
		{ { "0\n", "1\n", "2-3\n", "2-3\n" }, 2, 3 },       /* the first core with two */
		{ { "0,8\n", NULL, NULL, NULL }, 0, 8 },            /* POWER's numbering by thread */
		{ { "0-7\n", NULL, NULL, NULL }, 0, 1 },            /* SMT8 */
		{ { NULL, NULL, "2,5-6\n", NULL }, 2, 5 },          /* offline CPUs first */
		{ { "0", "1", "3,1", NULL }, 3, 1 },                /* no newline, any order */
	};
	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		tree_new();
		for (int n = 0; n < 4; n++)
			if (cases[k].lists[n])
				siblings_file(n, cases[k].lists[n]);
		int cpu[2] = { -1, -1 };
		struct ma_hw_why why = { "" };
		ck_assert_msg(!ma_hw_smt_siblings(root, cpu, &why), "case %u: %s", k, why.s);
		ck_assert_int_eq(cpu[0], cases[k].a);
		ck_assert_int_eq(cpu[1], cases[k].b);
		tree_free();
	}
}
END_TEST

START_TEST(no_siblings_said)
{
	tree_new();
	siblings_file(0, "0\n");
	siblings_file(1, "1\n");
	siblings_file(3, "3\n");
	int cpu[2];
	struct ma_hw_why why = { "" };
	ck_assert_int_eq(ma_hw_smt_siblings(root, cpu, &why), ENODEV);
	char want[256];
	snprintf(want, sizeof(want),
		 "no SMT siblings to share a core (each of the 3 CPUs of %s/devices/system/cpu is alone on its core)", root);
	ck_assert_str_eq(why.s, want);
	tree_free();

	/* No topology at all: the file it looked for is named. */
	tree_new();
	ck_assert_int_eq(ma_hw_smt_siblings(root, cpu, &why), ENOENT);
	snprintf(want, sizeof(want), "no %s/devices/system/cpu/cpuN/topology/thread_siblings_list", root);
	ck_assert_ptr_nonnull(strstr(why.s, want));
	tree_free();
}
END_TEST

START_TEST(bad_list_named)
{
	static const char *const bad[] = { "0-x", "3-1", "0;1", "", "-1", "0,", "5000", "0-2000" };
	for (unsigned k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		tree_new();
		siblings_file(0, bad[k]);
		siblings_file(1, "0-1"); /* never reached: the bad file stops the search */
		int cpu[2];
		struct ma_hw_why why = { "" };
		ck_assert_int_eq(ma_hw_smt_siblings(root, cpu, &why), EINVAL);
		char want[256];
		snprintf(want, sizeof(want),
			 "%s/devices/system/cpu/cpu0/topology/thread_siblings_list reads '%s': expected a list of CPUs below %d such as 0-3 or 0,8",
			 root, bad[k], CPU_SETSIZE);
		ck_assert_str_eq(why.s, want);
		tree_free();
	}
}
END_TEST

START_TEST(calibration_verdict)
{
	const int cpu[2] = { 0, 1 };
	struct ma_hw_why why = { "" };
	ck_assert_int_eq(ma_hw_ppr_judge(1.02, cpu, &why), ENOTSUP);
	ck_assert_str_eq(why.s, "measured gain 1.02x < 1.1x: the priorities do not change the split of this core "
				"(SMT siblings CPU 0 and CPU 1)");
	ck_assert_int_eq(ma_hw_ppr_judge(0, cpu, &why), ENOTSUP);
	ck_assert_int_eq(ma_hw_ppr_judge(NAN, cpu, &why), ENOTSUP);
	ck_assert_int_eq(ma_hw_ppr_judge(1.0999, cpu, &why), ENOTSUP);
	why.s[0] = 0;
	ck_assert_int_eq(ma_hw_ppr_judge(1.1, cpu, &why), 0);
	ck_assert_int_eq(ma_hw_ppr_judge(1.8, cpu, &why), 0);
	ck_assert_str_eq(why.s, "");
}
END_TEST

/* The calibration's threads on any processor (the priority nops do nothing off POWER, so
 * the gain says nothing here): they run where asked and end, or it says which CPU they
 * could not be bound to. */
START_TEST(calibration_threads)
{
	cpu_set_t set;
	ck_assert_int_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	int in = -1, out = -1;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (CPU_ISSET(c, &set) && in < 0)
			in = c;
		if (!CPU_ISSET(c, &set))
			out = c;
	}
	ck_assert_int_ge(in, 0);
	ck_assert_int_ge(out, 0);
	const int bad[2] = { in, out };
	struct ma_hw_why why = { "" };
	double gain = -1;
	ck_assert_int_eq(ma_hw_ppr_calibrate(bad, &gain, &why), EINVAL);
	char want[128];
	snprintf(want, sizeof(want), "cannot bind a calibration thread to CPU %d: %s", out, strerror(EINVAL));
	ck_assert_str_eq(why.s, want);
	ck_assert(gain == -1);

	/* Both on one CPU if this process has only one. */
	int second = in;
	for (int c = in + 1; c < CPU_SETSIZE && second == in; c++)
		if (CPU_ISSET(c, &set))
			second = c;
	const int good[2] = { in, second };
	why.s[0] = 0;
	ck_assert_msg(!ma_hw_ppr_calibrate(good, &gain, &why), "%s", why.s);
	/* The raised thread made progress in both phases. */
	ck_assert(isfinite(gain) && gain > 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("hwprio power-ppr");
	TCase *tc = tcase_create("power-ppr");
	tcase_add_test(tc, listed_after_none);
	tcase_add_test(tc, probe_says_why_absent);
	tcase_add_test(tc, apply_and_start_refuse_without_power);
	tcase_add_test(tc, apply_reads_back);
	tcase_add_test(tc, levels_map_to_pri);
	tcase_add_test(tc, siblings_found);
	tcase_add_test(tc, no_siblings_said);
	tcase_add_test(tc, bad_list_named);
	tcase_add_test(tc, calibration_verdict);
	tcase_add_test(tc, calibration_threads);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ma_check_run(suite());
}
