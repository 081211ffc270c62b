/*
 * cpukind on a machine with two kinds of cores, read from an hwloc XML topology the test
 * writes (a hybrid: 8 efficient PUs, 8 fast ones): which CPUs each level binds a thread
 * to, back as it was at 0 and at reset, failures leaving it bound where it was. The
 * affinity calls are the test's own (the XML's CPUs are not this machine's).
 */
#define _GNU_SOURCE
#include <check.h>
#include "ma_check_run.h"
#include <errno.h>
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ma_hwprio.h"
#include "ma_cpukind.h"

extern const struct ma_hw_backend ma_hw_cpukind;

static struct ma_hw_kind kinds[2];
static struct ma_hw_env env;

/* Writes the hybrid's XML and reads its kinds back through hwloc, as the runtime does. */
static void load_hybrid(void)
{
	char path[] = "/tmp/check_hwprio_cpukind_XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	hwloc_topology_t hw;
	ck_assert_int_eq(hwloc_topology_init(&hw), 0);
	ck_assert_int_eq(hwloc_topology_set_synthetic(hw, "pack:2 core:4 pu:2"), 0);
	ck_assert_int_eq(hwloc_topology_load(hw), 0);
	hwloc_bitmap_t small = hwloc_bitmap_alloc(), big = hwloc_bitmap_alloc();
	hwloc_bitmap_set_range(small, 0, 7);
	hwloc_bitmap_set_range(big, 8, 15);
	struct hwloc_info_s core = { (char *)"CoreType", (char *)"IntelCore" }, atom = { (char *)"CoreType", (char *)"IntelAtom" };
	ck_assert_int_eq(hwloc_cpukinds_register(hw, big, 20, 1, &core, 0), 0);
	ck_assert_int_eq(hwloc_cpukinds_register(hw, small, 10, 1, &atom, 0), 0);
	ck_assert_int_eq(hwloc_topology_export_xml(hw, path, 0), 0);
	hwloc_bitmap_free(small);
	hwloc_bitmap_free(big);
	hwloc_topology_destroy(hw);

	ck_assert_int_eq(hwloc_topology_init(&hw), 0);
	ck_assert_int_eq(hwloc_topology_set_xml(hw, path), 0);
	ck_assert_int_eq(hwloc_topology_load(hw), 0);
	unlink(path);
	ck_assert_int_eq(hwloc_cpukinds_get_nr(hw, 0), 2);
	memset(kinds, 0, sizeof(kinds));
	for (unsigned k = 0; k < 2; k++) {
		hwloc_bitmap_t set = hwloc_bitmap_alloc();
		int eff;
		ck_assert_int_eq(hwloc_cpukinds_get_info(hw, k, set, &eff, NULL, NULL, 0), 0);
		kinds[k].efficiency = eff;
		int c;
		hwloc_bitmap_foreach_begin(c, set)
			kinds[k].cpus[c / 64] |= 1UL << (c % 64);
		hwloc_bitmap_foreach_end();
		hwloc_bitmap_free(set);
	}
	hwloc_topology_destroy(hw);
	env = (struct ma_hw_env){ .sysfs = "/sys", .resctrl = "/sys/fs/resctrl", .nb_kinds = 2, .kinds = kinds, .bound = 1 };
}

/* The test's kernel: each thread's CPUs. */
#define THREADS 8
static cpu_set_t bound[THREADS];
static int refuse;

static int fake_set(pid_t tid, size_t size, const cpu_set_t *set)
{
	(void)size;
	if (tid < 1 || tid > THREADS) {
		errno = ESRCH;
		return -1;
	}
	if (refuse) {
		errno = refuse;
		return -1;
	}
	bound[tid - 1] = *set;
	return 0;
}

static int fake_get(pid_t tid, size_t size, cpu_set_t *set)
{
	(void)size;
	if (tid < 1 || tid > THREADS) {
		errno = ESRCH;
		return -1;
	}
	*set = bound[tid - 1];
	return 0;
}

static void *prepared(void)
{
	load_hybrid();
	void *priv = calloc(1, ma_hw_cpukind.priv_size);
	ck_assert_ptr_nonnull(priv);
	ma_hw_ck_set_calls(priv, fake_set, fake_get);
	struct ma_hw_why why;
	ck_assert_int_eq(ma_hw_ck_prepare(priv, &env, &why), 0);
	for (int t = 0; t < THREADS; t++) {
		CPU_ZERO(&bound[t]);
		CPU_SET(t, &bound[t]); /* each thread on its own PU, as marcel_init binds them */
	}
	refuse = 0;
	return priv;
}

/* Whether thread tid is bound to exactly CPUs first..last. */
static int on(pid_t tid, int first, int last)
{
	cpu_set_t want;
	CPU_ZERO(&want);
	for (int c = first; c <= last; c++)
		CPU_SET(c, &want);
	return CPU_EQUAL(&want, &bound[tid - 1]);
}

static struct ma_hw_target target(pid_t tid)
{
	return (struct ma_hw_target){ .vp = (unsigned)tid - 1, .tid = tid, .cpu = tid - 1, .core = -1, .cache = -1, .node = -1, .kind = -1 };
}

START_TEST(kinds_from_the_xml)
{
	load_hybrid();
	int fast, slow;
	ma_hw_ck_pick(&env, &fast, &slow);
	ck_assert_int_ge(fast, 0);
	ck_assert_int_gt(kinds[fast].efficiency, kinds[slow].efficiency);
	ck_assert_uint_eq(kinds[fast].cpus[0], 0xff00);
	ck_assert_uint_eq(kinds[slow].cpus[0], 0x00ff);
}
END_TEST

START_TEST(levels_bind_to_kinds)
{
	void *priv = prepared();
	struct ma_hw_why why;
	struct ma_hw_target t1 = target(1), t2 = target(2), t3 = target(3);
	ck_assert_int_eq(ma_hw_cpukind.apply(priv, &t1, 2, &why), 0);
	ck_assert(on(1, 8, 15));
	ck_assert_int_eq(ma_hw_cpukind.apply(priv, &t2, -1, &why), 0);
	ck_assert(on(2, 0, 7));
	ck_assert_int_eq(ma_hw_cpukind.apply(priv, &t3, 1, &why), 0);
	ck_assert(on(3, 8, 15));
	/* Back to its own PU at 0; never moved, 0 changes nothing. */
	ck_assert_int_eq(ma_hw_cpukind.apply(priv, &t1, 0, &why), 0);
	ck_assert(on(1, 0, 0));
	struct ma_hw_target t5 = target(5);
	ck_assert_int_eq(ma_hw_cpukind.apply(priv, &t5, 0, &why), 0);
	ck_assert(on(5, 4, 4));
	/* reset: every moved thread back. */
	ck_assert_int_eq(ma_hw_cpukind.reset(priv, &why), 0);
	ck_assert(on(2, 1, 1));
	ck_assert(on(3, 2, 2));
	ma_hw_cpukind.stop(priv);
	free(priv);
}
END_TEST

START_TEST(failures_leave_it_where_it_was)
{
	void *priv = prepared();
	struct ma_hw_why why;
	struct ma_hw_target t1 = target(1), gone = target(99);
	ck_assert_int_eq(ma_hw_cpukind.apply(priv, &t1, 3, &why), EINVAL);
	ck_assert_msg(strstr(why.s, "level 3"), "%s", why.s);
	refuse = EPERM;
	ck_assert_int_eq(ma_hw_cpukind.apply(priv, &t1, 2, &why), EPERM);
	ck_assert_msg(strstr(why.s, "thread 1") && strstr(why.s, "fastest"), "%s", why.s);
	ck_assert(on(1, 0, 0));
	refuse = 0;
	ck_assert_int_eq(ma_hw_cpukind.apply(priv, &gone, 2, &why), ESRCH);
	ck_assert_msg(strstr(why.s, "thread 99"), "%s", why.s);
	/* The refused thread was not recorded as moved: reset leaves it alone. */
	ck_assert_int_eq(ma_hw_cpukind.reset(priv, &why), 0);
	ck_assert(on(1, 0, 0));
	ma_hw_cpukind.stop(priv);
	free(priv);
}
END_TEST

START_TEST(probe_needs_kinds_and_binding)
{
	load_hybrid();
	struct ma_hw_why why = { "" };
	ck_assert_int_eq(ma_hw_cpukind.probe(&env, &why), MA_HW_PRESENT);
	env.bound = 0;
	ck_assert_int_eq(ma_hw_cpukind.probe(&env, &why), MA_HW_ABSENT);
	ck_assert_msg(strstr(why.s, "synthetic or XML"), "%s", why.s);
	env.bound = 1;
	env.nb_kinds = 1;
	ck_assert_int_eq(ma_hw_cpukind.probe(&env, &why), MA_HW_ABSENT);
	ck_assert_msg(strstr(why.s, "one kind"), "%s", why.s);
	env.nb_kinds = 0;
	ck_assert_int_eq(ma_hw_cpukind.probe(&env, &why), MA_HW_ABSENT);
	ck_assert_msg(why.s[0], "no reason");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hwprio cpukind");
	TCase *tc = tcase_create("cpukind");
	tcase_add_test(tc, kinds_from_the_xml);
	tcase_add_test(tc, levels_bind_to_kinds);
	tcase_add_test(tc, failures_leave_it_where_it_was);
	tcase_add_test(tc, probe_needs_kinds_and_binding);
	suite_add_tcase(s, tc);
	return ma_check_run(s);
}
