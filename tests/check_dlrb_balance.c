/*
 * libmarcel-dlrb's decisions (hwprio/dlrb_balance.c) on synthetic machines: the thesis's two
 * worked examples of the load balancer, few moves, the resource balancer's steps and
 * bounds (hwprio's dlrb policy), and the controller's iterations (placement first, an
 * iteration without levels, then levels; a phase change placed anew; nothing when
 * balanced).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include "ma_check_run.h"
#include "ma_dlrb_balance.h"

static struct ma_topo topo;

static void load(const char *spec)
{
	char err[256];
	struct ma_topo_options opt = { .spec = spec, .maxarity = 8, .smt = 1 };
	ck_assert_msg(ma_topo_load(&topo, &opt, err, sizeof(err)) == 0, "%s: %s", spec, err);
}

/* The core of VP v: VPs 2c and 2c+1 on "core:N pu:2". */
static int core_of(int v)
{
	return v / 2;
}

/* Example 1 (thesis, chapter 5): utilisations 15, 23, 50, 99 on one chip of two cores of
 * two threads: {99, 15} on one core, {50, 23} on the other. */
START_TEST(thesis_example_one)
{
	load("core:2 pu:2");
	const double u[4] = { 0.15, 0.23, 0.50, 0.99 };
	int vp[4];
	ck_assert_int_eq(ma_dlrb_place(&topo, u, 4, NULL, vp), 0);
	ck_assert_int_eq(core_of(vp[3]), core_of(vp[0]));
	ck_assert_int_eq(core_of(vp[2]), core_of(vp[1]));
	ck_assert_int_ne(core_of(vp[3]), core_of(vp[2]));
	for (int i = 0; i < 4; i++)
		for (int j = i + 1; j < 4; j++)
			ck_assert_int_ne(vp[i], vp[j]);
	ma_topo_free(&topo);
}
END_TEST

/* Example 2 (MetBench): a master at 0 and workers 25, 99, 25, 99: {99 | 25, 0} and
 * {99 | 25}: each core a heavy thread and a light one, the master with a light worker. */
START_TEST(thesis_example_two)
{
	load("core:2 pu:2");
	const double u[5] = { 0.0, 0.25, 0.99, 0.25, 0.99 };
	int vp[5];
	ck_assert_int_eq(ma_dlrb_place(&topo, u, 5, NULL, vp), 0);
	ck_assert_int_ne(core_of(vp[2]), core_of(vp[4]));
	ck_assert_int_ne(core_of(vp[1]), core_of(vp[3]));
	ck_assert_int_eq(vp[0], core_of(vp[0]) == core_of(vp[1]) ? vp[1] : vp[3]);
	ck_assert_int_ne(vp[0], vp[2]);
	ck_assert_int_ne(vp[0], vp[4]);
	ma_topo_free(&topo);
}
END_TEST

/* Few moves: a placement already balanced stays where it is, whichever core each pair
 * was on; two packages split first by package. */
START_TEST(few_moves)
{
	load("core:2 pu:2");
	const double u[4] = { 0.99, 0.15, 0.50, 0.23 };
	int now[4] = { 2, 3, 0, 1 }, vp[4];
	ck_assert_int_eq(ma_dlrb_place(&topo, u, 4, now, vp), 0);
	ck_assert_int_eq(core_of(vp[0]), core_of(now[0]));
	ck_assert_int_eq(core_of(vp[2]), core_of(now[2]));
	ma_topo_free(&topo);
	load("pack:2 core:2 pu:2");
	const double w[8] = { 0.9, 0.9, 0.9, 0.9, 0.1, 0.1, 0.1, 0.1 };
	int v8[8];
	ck_assert_int_eq(ma_dlrb_place(&topo, w, 8, NULL, v8), 0);
	/* Each package gets two heavy and two light, each core one of each. */
	for (int c = 0; c < 4; c++) {
		int heavy = 0, light = 0;
		for (int i = 0; i < 8; i++)
			if (core_of(v8[i]) == c)
				heavy += w[i] > 0.5, light += w[i] < 0.5;
		ck_assert_msg(heavy == 1 && light == 1, "core %d: %d heavy, %d light", c, heavy, light);
	}
	ma_topo_free(&topo);
}
END_TEST

/* Without SMT, heavy ranks are paired with light ones on the cores of one cache domain:
 * two packages of an L3 and 2 cores each, ranks heavy 0 and 1 started on package 0,
 * light 2 and 3 on package 1: each package ends with one heavy and one light rank, one
 * rank per core, and only two ranks move. With more ranks than cores (time-shared
 * cores), each core holds a heavy one and a light one. */
START_TEST(no_smt_cache_domains)
{
	load("pack:2 l3:1 core:2");
	const double u[4] = { 0.99, 0.97, 0.20, 0.25 };
	int now[4] = { 0, 1, 2, 3 }, vp[4];
	ck_assert_int_eq(ma_dlrb_place(&topo, u, 4, now, vp), 0);
	ck_assert_int_ne(vp[0] / 2, vp[1] / 2);
	ck_assert_int_ne(vp[2] / 2, vp[3] / 2);
	int moved = 0;
	for (int i = 0; i < 4; i++) {
		moved += vp[i] != now[i];
		for (int j = i + 1; j < 4; j++)
			ck_assert_int_ne(vp[i], vp[j]);
	}
	ck_assert_int_eq(moved, 2);
	ma_topo_free(&topo);
	load("core:2");
	int two[4];
	ck_assert_int_eq(ma_dlrb_place(&topo, u, 4, NULL, two), 0);
	ck_assert_int_ne(two[0], two[1]);
	ck_assert_int_ne(two[2], two[3]);
	ma_topo_free(&topo);
}
END_TEST

/* Runs the controller on one iteration's figures. */
static struct ma_dlrb_decision step(struct ma_dlrb_ctl *c, const double *u, unsigned n, int *vp, int *lv, int lo,
				    int hi)
{
	return ma_dlrb_step(c, &topo, u, n, vp, lv, lo, hi);
}

/* The resource balancer (hwprio's dlrb policy) on tasks already well placed: 25 against
 * 99 (74 points: a double step) reaches the full width at once; 30 points, one step per
 * iteration; 20 or less, nothing. Within smt-quiet's range (-2..0), the light one is
 * lowered instead. */
START_TEST(resource_steps)
{
	load("core:2 pu:2");
	double u[4] = { 0.25, 0.99, 0.60, 0.90 };
	int vp[4] = { 0, 1, 2, 3 }, lv[4] = { 0 };
	struct ma_dlrb_ctl c;
	ma_dlrb_ctl_init(&c);
	/* Iteration 1: the policy judges it at once (25 against 99: the double step; 60
	 * against 90: one step). */
	struct ma_dlrb_decision d = step(&c, u, 4, vp, lv, 0, 2);
	ck_assert(!d.placed && d.levels_changed && !c.unprioritised);
	ck_assert_int_eq(lv[1], 2);
	ck_assert_int_eq(lv[0], 0);
	ck_assert_int_eq(lv[3], 1);
	ck_assert_int_eq(lv[2], 0);
	/* Iteration 2 confirms the imbalance: placed, but {25, 99} and {60, 90} already
	 * share cores, so nothing moves and no iteration is lost; core 1's gap still above
	 * 20 points: one more step. Then the widths are reached. */
	d = step(&c, u, 4, vp, lv, 0, 2);
	ck_assert(!d.placed && d.levels_changed && !c.unprioritised);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(vp[i], i);
	ck_assert_int_eq(lv[3], 2);
	d = step(&c, u, 4, vp, lv, 0, 2);
	ck_assert(!d.levels_changed);
	/* smt-quiet's range (-2..0): the same decisions, fitted by lowering. */
	int q[4] = { 0 }, vq[4] = { 0, 1, 2, 3 };
	ma_dlrb_ctl_init(&c);
	step(&c, u, 4, vq, q, -2, 0);
	ck_assert_int_eq(q[0], -2);
	ck_assert_int_eq(q[1], 0);
	ck_assert_int_eq(q[2], -1);
	ck_assert_int_eq(q[3], 0);
	ma_topo_free(&topo);
}
END_TEST

/* No imbalance (within 20 points): nothing moves, no level, ever; tasks whose VP is not
 * known stay unplaced. Without SMT, a core's tasks still form a domain (time-shared). */
START_TEST(balanced_does_nothing)
{
	load("core:2 pu:2");
	double even[4] = { 0.80, 0.95, 0.81, 0.90 };
	int vp[4] = { -1, -1, -1, -1 }, lv[4] = { 0 };
	struct ma_dlrb_ctl c;
	ma_dlrb_ctl_init(&c);
	for (int k = 0; k < 10; k++) {
		struct ma_dlrb_decision d = step(&c, even, 4, vp, lv, -2, 2);
		ck_assert(!d.placed && !d.levels_changed && !d.phase_change);
	}
	for (int i = 0; i < 4; i++)
		ck_assert(vp[i] == -1 && lv[i] == 0);
	ck_assert_uint_eq(c.placements + c.level_changes + c.phase_changes, 0);
	ma_topo_free(&topo);
}
END_TEST

/* The controller on MetBench's figures with the ranks badly placed (both heavy ones on
 * core 1): a noisy first iteration (imbalanced alone) moves nothing; iterations 1 and 2,
 * imbalanced both, pair each heavy rank with a light one (the levels the first one set
 * go back to 0); iteration 3 runs without levels, at its end the levels are set (the
 * double step), then nothing changes while the figures stay. MetBenchVar's swap (the heavy ranks fall to 25%), seen on two
 * iterations, is a phase change: levels back to 0, placed anew, then levels again. */
START_TEST(controller)
{
	load("core:2 pu:2");
	struct ma_dlrb_ctl c;
	ma_dlrb_ctl_init(&c);
	double u[4] = { 0.25, 0.25, 0.99, 0.99 }, noisy[4] = { 0.95, 0.99, 0.60, 0.99 };
	int vp[4] = { 0, 1, 2, 3 }, lv[4] = { 0, 0, 0, 0 };
	double even[4] = { 0.97, 0.99, 0.96, 0.99 };
	struct ma_dlrb_decision d = step(&c, noisy, 4, vp, lv, 0, 2);
	ck_assert(!d.placed);
	d = step(&c, even, 4, vp, lv, 0, 2);
	ck_assert(!d.placed);
	ck_assert_uint_eq(c.placements, 0);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(vp[i], i);
	ma_dlrb_ctl_init(&c);
	for (int i = 0; i < 4; i++)
		lv[i] = 0;
	d = step(&c, u, 4, vp, lv, 0, 2);
	ck_assert(!d.placed);
	d = step(&c, u, 4, vp, lv, 0, 2);
	ck_assert(d.placed);
	ck_assert_uint_eq(c.placements, 1);
	ck_assert(c.unprioritised);
	ck_assert_int_ne(core_of(vp[2]), core_of(vp[3]));
	ck_assert_int_ne(core_of(vp[0]), core_of(vp[1]));
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(lv[i], 0);
	d = step(&c, u, 4, vp, lv, 0, 2);
	ck_assert(!d.placed && d.levels_changed);
	ck_assert_int_eq(lv[2], 2);
	ck_assert_int_eq(lv[3], 2);
	ck_assert_int_eq(lv[0] + lv[1], 0);
	/* Balanced by the levels: the light ones now above 95% is no phase change. */
	for (int k = 0; k < 5; k++) {
		d = step(&c, even, 4, vp, lv, 0, 2);
		ck_assert(!d.placed && !d.levels_changed);
	}
	/* The swap: ranks 2 and 3 light now, 0 and 1 heavy. Seen once, only suspected. */
	double swapped[4] = { 0.99, 0.99, 0.25, 0.25 };
	d = step(&c, swapped, 4, vp, lv, 0, 2);
	ck_assert(!d.phase_change && !d.placed);
	d = step(&c, swapped, 4, vp, lv, 0, 2);
	ck_assert(d.phase_change && d.levels_changed);
	ck_assert_uint_eq(c.phase_changes, 1);
	/* Each core still holds a heavy and a light rank: the placement stands. */
	ck_assert(!d.placed);
	ck_assert(c.unprioritised);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(lv[i], 0);
	d = step(&c, swapped, 4, vp, lv, 0, 2);
	ck_assert_int_eq(lv[0], 2);
	ck_assert_int_eq(lv[1], 2);
	ck_assert_int_eq(lv[2] + lv[3], 0);
	ck_assert_uint_eq(c.placements, 1);
	ma_topo_free(&topo);
}
END_TEST

/* A placement made on disturbed rounds (a light task read busy, a heavy one not) is made
 * again: the task placed as a bottleneck is not one in the next two rounds, a phase change
 * against the placement's own figures, and the heavy tasks then end on different cores. */
START_TEST(disturbed_placement_redone)
{
	load("core:2 pu:2");
	struct ma_dlrb_ctl c;
	ma_dlrb_ctl_init(&c);
	double noisy[4] = { 0.99, 0.20, 0.90, 0.30 }, real[4] = { 0.25, 0.25, 0.99, 0.99 };
	int vp[4] = { -1, -1, -1, -1 }, lv[4] = { 0 };
	step(&c, noisy, 4, vp, lv, 0, 2);
	struct ma_dlrb_decision d = step(&c, noisy, 4, vp, lv, 0, 2);
	ck_assert(d.placed);
	/* Placed on the noise: task 0 read as the bottleneck, the heavy tasks 2 and 3 on one
	 * core. */
	ck_assert_int_eq(core_of(vp[2]), core_of(vp[3]));
	d = step(&c, real, 4, vp, lv, 0, 2);
	ck_assert(!d.phase_change);
	d = step(&c, real, 4, vp, lv, 0, 2);
	ck_assert(d.phase_change && d.placed);
	ck_assert_int_ne(core_of(vp[2]), core_of(vp[3]));
	ck_assert_int_ne(core_of(vp[0]), core_of(vp[1]));
	ck_assert_uint_eq(c.placements, 2);
	ma_topo_free(&topo);
}
END_TEST

/* More tasks than the limit: refused, nothing written. */
START_TEST(too_many)
{
	load("core:2 pu:2");
	static double u[MA_DLRB_MAX_TASKS + 1];
	static int vp[MA_DLRB_MAX_TASKS + 1];
	ck_assert_int_eq(ma_dlrb_place(&topo, u, MA_DLRB_MAX_TASKS + 1, NULL, vp), EINVAL);
	ma_topo_free(&topo);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dlrb_balance");
	TCase *tc = tcase_create("balance");
	tcase_add_test(tc, thesis_example_one);
	tcase_add_test(tc, thesis_example_two);
	tcase_add_test(tc, few_moves);
	tcase_add_test(tc, no_smt_cache_domains);
	tcase_add_test(tc, resource_steps);
	tcase_add_test(tc, balanced_does_nothing);
	tcase_add_test(tc, controller);
	tcase_add_test(tc, disturbed_placement_redone);
	tcase_add_test(tc, too_many);
	suite_add_tcase(s, tc);
	return ma_check_run(s);
}
