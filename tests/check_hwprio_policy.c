/*
 * The hwprio policy as the pure function it is: workloads shaped like the seeds' (MetBench,
 * MetBenchVar, BT-MZ) run on a small model of SMT cores, iteration after iteration, with
 * the levels the policy gives fed back into the model. No thread runs and libmarcel is
 * not linked (the program takes libhwprio alone).
 *
 * The model, for these tests only: the two hardware threads of a core split its decode
 * slots as POWER5 does (R = 2^(|d|+1) for a level difference d: the higher one gets R-1 of
 * each R slots, equal levels one each); a thread's speed is 1.3 times its share, at most
 * 1 (two threads together do more than one alone); alone on its core a thread runs at 1.
 * All ranks meet at a barrier at the end of each iteration, as MetBench's do. A worker's
 * run time is its compute time, its wait the rest of the iteration.
 */
#include <check.h>
#include "ma_check_run.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ma_hwprio.h"

#define MAXW 16

struct model {
	unsigned n;              /* workers; worker i is on core i / 2 */
	double work[MAXW];       /* compute per iteration */
	struct ma_hw_slot slot[MAXW];
	struct ma_hw_policy_state st;
	struct ma_hw_policy_params p;
	double last_time;        /* the last iteration's length */
};

static void model_init(struct model *m, enum ma_hw_policy_kind kind, unsigned n, const double *work)
{
	memset(m, 0, sizeof(*m));
	m->n = n;
	memcpy(m->work, work, n * sizeof(double));
	for (unsigned i = 0; i < n; i++)
		m->slot[i].domain = (int)(i / 2);
	m->st.n = n;
	m->st.slot = m->slot;
	ma_hw_policy_defaults(&m->p, kind);
}

static double speed(double share)
{
	double s = 1.3 * share;
	return s > 1 ? 1 : s;
}

/* One core's two threads with works a and b at levels la and lb: when each is done. */
static void core_run(double a, double b, int la, int lb, double *ta, double *tb)
{
	int d = la > lb ? la - lb : lb - la;
	double r = (double)(1 << (d + 1));
	double sa = la == lb ? 0.5 : la > lb ? (r - 1) / r : 1 / r;
	double va = speed(sa), vb = speed(1 - sa);
	if (a / va <= b / vb) {
		*ta = a / va;
		*tb = *ta + (b - vb * *ta);
	} else {
		*tb = b / vb;
		*ta = *tb + (a - va * *tb);
	}
}

/* Runs one iteration at the current levels and gives the policy its samples; returns the
 * policy's flags. */
static int model_step(struct model *m)
{
	double done[MAXW], t = 0;
	for (unsigned i = 0; i < m->n; i += 2)
		core_run(m->work[i], m->work[i + 1], m->slot[i].level, m->slot[i + 1].level, &done[i], &done[i + 1]);
	for (unsigned i = 0; i < m->n; i++)
		if (done[i] > t)
			t = done[i];
	struct ma_hw_sample s[MAXW];
	for (unsigned i = 0; i < m->n; i++)
		s[i] = (struct ma_hw_sample){ .run = done[i], .wait = t - done[i] };
	m->last_time = t;
	return ma_hw_policy_step(&m->p, &m->st, s);
}

static void levels(const struct model *m, int *out)
{
	for (unsigned i = 0; i < m->n; i++)
		out[i] = m->slot[i].level;
}

/* Runs iterations until the levels stay put for `quiet` iterations in a row; returns the
 * number of iterations whose decision changed a level (0: never moved), fails if they
 * still move after `max`. */
static unsigned run_until_stable(struct model *m, unsigned quiet, unsigned max)
{
	unsigned changes = 0, still = 0;
	for (unsigned it = 0; it < max; it++) {
		if (model_step(m) & MA_HWP_CHANGED) {
			changes++;
			still = 0;
		} else if (++still == quiet) {
			return changes;
		}
	}
	ck_abort_msg("levels still change after %u iterations", max);
	return changes;
}

static const enum ma_hw_policy_kind kinds[] = { MA_HWP_DLRB, MA_HWP_UNIFORM, MA_HWP_ADAPTIVE };

/* ---- MetBench: a constant imbalance, one rank 4x its core sibling's work ---- */

START_TEST(metbench_converges_and_raises_the_heavy_rank)
{
	const double w[4] = { 1, 4, 1, 4 };
	struct model m;
	model_init(&m, kinds[_i], 4, w);
	model_step(&m);
	double base = m.last_time;
	/* Decided after the first iteration, at most once more after the second. */
	unsigned first = 0;
	int l1[MAXW], l2[MAXW], l[MAXW];
	levels(&m, l1);
	model_step(&m);
	levels(&m, l2);
	for (unsigned i = 0; i < 4; i++)
		first |= l1[i] != l2[i];
	(void)first;
	for (unsigned it = 0; it < 30; it++) {
		ck_assert_int_eq(model_step(&m) & MA_HWP_CHANGED, 0);
		levels(&m, l);
		ck_assert_mem_eq(l, l2, sizeof(int) * 4);
	}
	/* The heavy rank of each core above its light sibling, within 2 levels. */
	for (unsigned c = 0; c < 2; c++) {
		ck_assert_int_gt(l[2 * c + 1], l[2 * c]);
		ck_assert_int_le(l[2 * c + 1] - l[2 * c], 2);
		ck_assert_int_ge(l[2 * c], 0);
		ck_assert_int_le(l[2 * c + 1], 2);
	}
	/* And the iteration is shorter than unprioritised. */
	ck_assert_double_lt(m.last_time, base * 0.97);
}
END_TEST

/* Balanced ranks: nothing moves, ever. */
START_TEST(balanced_does_nothing)
{
	const double w[4] = { 3, 3, 3, 3 };
	struct model m;
	model_init(&m, kinds[_i], 4, w);
	for (unsigned it = 0; it < 40; it++)
		ck_assert_int_eq(model_step(&m), 0);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_int_eq(m.slot[i].level, 0);
}
END_TEST

/* A small imbalance, under DLRB's 20 points and inside HPCSched's bands: left alone. */
START_TEST(small_imbalance_left_alone)
{
	const double w[4] = { 3, 3.3, 3, 3.3 };
	struct model m;
	model_init(&m, kinds[_i], 4, w);
	for (unsigned it = 0; it < 40; it++)
		ck_assert_int_eq(model_step(&m) & MA_HWP_CHANGED, 0);
}
END_TEST

/* ---- MetBenchVar: the heavy rank swaps every 15 iterations ---- */

START_TEST(metbenchvar_follows_the_heavy_rank)
{
	enum ma_hw_policy_kind kind = kinds[_i];
	struct model m;
	const double a[4] = { 1, 4, 1, 4 }, b[4] = { 4, 1, 4, 1 };
	model_init(&m, kind, 4, a);
	for (unsigned phase = 0; phase < 6; phase++) {
		const double *w = phase % 2 ? b : a;
		memcpy(m.work, w, sizeof(a));
		unsigned heavy = phase % 2 ? 0 : 1;
		int prev[MAXW], l[MAXW];
		levels(&m, prev);
		unsigned last_change = 0, right = 16;
		for (unsigned it = 1; it <= 15; it++) {
			model_step(&m);
			levels(&m, l);
			if (getenv("TRACE_MODEL"))
				printf("%s phase %u it %u: levels %d %d  time %.2f\n", ma_hw_policy_name(kind), phase, it,
				       l[0], l[1], m.last_time);
			if (memcmp(l, prev, sizeof(int) * 4))
				last_change = it;
			memcpy(prev, l, sizeof(l));
			if (right == 16 && l[heavy] > l[1 - heavy] && l[2 + heavy] > l[3 - heavy])
				right = it;
		}
		if (kind != MA_HWP_UNIFORM) {
			/* DLRB and Adaptive: the seeds' two-iteration convergence, every phase. */
			ck_assert_uint_le(last_change, 2);
			ck_assert_uint_le(right, 2);
		} else {
			/* Uniform judges the whole run, which moves ever slower: it follows the
			 * first switch late, and (as the seed observed, each switch taking it
			 * longer) the second not within its 15 iterations on this model. */
			if (phase == 1)
				ck_assert_uint_ge(right, 3);
			if (phase < 2)
				ck_assert_uint_le(right, 15);
			if (phase == 2)
				ck_assert_uint_eq(right, 16);
		}
	}
}
END_TEST

/* ---- BT-MZ: four zones of uneven sizes, paired heavy with light ---- */

START_TEST(btmz_raises_the_heaviest_of_each_core)
{
	/* The seed's class A shares (17, 29, 66, 99 % computing) paired as its balancer pairs
	 * them: the heaviest with the lightest on one core. */
	const double w[4] = { 1.7, 9.9, 2.9, 6.6 };
	struct model m;
	model_init(&m, kinds[_i], 4, w);
	model_step(&m);
	double base = m.last_time;
	run_until_stable(&m, 10, 40);
	ck_assert_int_gt(m.slot[1].level, m.slot[0].level);
	ck_assert_int_ge(m.slot[3].level, m.slot[2].level);
	ck_assert_double_lt(m.last_time, base);
}
END_TEST

/* ---- the rules themselves ---- */

/* Never more than max_gap apart in a domain, never outside lo..hi, whatever the samples. */
START_TEST(levels_stay_in_range)
{
	struct ma_hw_slot slot[6];
	memset(slot, 0, sizeof(slot));
	for (unsigned i = 0; i < 6; i++)
		slot[i].domain = (int)(i / 3);
	struct ma_hw_policy_state st = { .n = 6, .slot = slot };
	struct ma_hw_policy_params p;
	ma_hw_policy_defaults(&p, kinds[_i]);
	unsigned seed = 12345;
	for (unsigned it = 0; it < 500; it++) {
		struct ma_hw_sample s[6];
		for (unsigned i = 0; i < 6; i++) {
			seed = seed * 1103515245u + 12345u;
			s[i].run = (double)(seed >> 16 & 1023);
			seed = seed * 1103515245u + 12345u;
			s[i].wait = (double)(seed >> 16 & 1023);
		}
		ma_hw_policy_step(&p, &st, s);
		for (unsigned d = 0; d < 2; d++) {
			int mn = 99, mx = -99;
			for (unsigned i = 3 * d; i < 3 * d + 3; i++) {
				ck_assert_int_ge(slot[i].level, p.lo);
				ck_assert_int_le(slot[i].level, p.hi);
				mn = slot[i].level < mn ? slot[i].level : mn;
				mx = slot[i].level > mx ? slot[i].level : mx;
			}
			ck_assert_int_le(mx - mn, p.max_gap);
		}
	}
}
END_TEST

/* DLRB: one step above 20 points, two above 40, none at or under 20. */
START_TEST(dlrb_steps)
{
	static const struct {
		double light;
		int expect;
	} cases[] = { { 0.85, 0 }, { 0.80, 0 }, { 0.75, 1 }, { 0.61, 1 }, { 0.55, 2 }, { 0.10, 2 } };
	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct ma_hw_slot slot[2] = { { .domain = 0 }, { .domain = 0 } };
		struct ma_hw_policy_state st = { .n = 2, .slot = slot };
		struct ma_hw_policy_params p;
		ma_hw_policy_defaults(&p, MA_HWP_DLRB);
		struct ma_hw_sample s[2] = { { .run = cases[k].light * 100, .wait = (1 - cases[k].light) * 100 },
					     { .run = 100, .wait = 0 } };
		ma_hw_policy_step(&p, &st, s);
		ck_assert_msg(slot[1].level == cases[k].expect && slot[0].level == 0,
			      "light at %.2f: levels %d %d, expected 0 %d", cases[k].light, slot[0].level, slot[1].level,
			      cases[k].expect);
	}
}
END_TEST

/* At the top, DLRB lowers the other worker instead, if it may. */
START_TEST(dlrb_lowers_at_the_top)
{
	struct ma_hw_slot slot[2] = { { .domain = 0, .level = 1 }, { .domain = 0, .level = 2 } };
	struct ma_hw_policy_state st = { .n = 2, .slot = slot };
	struct ma_hw_policy_params p;
	ma_hw_policy_defaults(&p, MA_HWP_DLRB);
	struct ma_hw_sample s[2] = { { .run = 50, .wait = 50 }, { .run = 100, .wait = 0 } };
	ck_assert_int_eq(ma_hw_policy_step(&p, &st, s), MA_HWP_CHANGED);
	ck_assert_int_eq(slot[0].level, 0);
	ck_assert_int_eq(slot[1].level, 2);
	/* At the bottom too: nothing left to do. */
	ck_assert_int_eq(ma_hw_policy_step(&p, &st, s), 0);
}
END_TEST

/* A phase change (a bottleneck that stopped being one, its level unchanged), seen in two
 * iterations in a row, sends every level back to 0 for one iteration; the next decides
 * afresh. Seen once, it changes nothing. */
START_TEST(dlrb_phase_change_one_quiet_iteration)
{
	struct ma_hw_slot slot[2] = { { .domain = 0 }, { .domain = 0 } };
	struct ma_hw_policy_state st = { .n = 2, .slot = slot };
	struct ma_hw_policy_params p;
	ma_hw_policy_defaults(&p, MA_HWP_DLRB);
	struct ma_hw_sample heavy1[2] = { { 30, 70 }, { 100, 0 } }, heavy0[2] = { { 100, 0 }, { 30, 70 } },
			    balanced[2] = { { 97, 3 }, { 100, 0 } };
	ck_assert_int_eq(ma_hw_policy_step(&p, &st, heavy1), MA_HWP_CHANGED);
	ck_assert_int_eq(slot[1].level, 2);
	ck_assert_int_eq(ma_hw_policy_step(&p, &st, balanced), 0);
	ck_assert_int_eq(ma_hw_policy_step(&p, &st, heavy0), 0);
	ck_assert_int_eq(slot[1].level, 2);
	ck_assert_int_eq(ma_hw_policy_step(&p, &st, heavy0), MA_HWP_CHANGED | MA_HWP_PHASE);
	ck_assert_int_eq(slot[0].level, 0);
	ck_assert_int_eq(slot[1].level, 0);
	ck_assert_int_eq(ma_hw_policy_step(&p, &st, heavy0), MA_HWP_CHANGED);
	ck_assert_int_eq(slot[0].level, 2);
	ck_assert_int_eq(slot[1].level, 0);
}
END_TEST

/* One noisy iteration (the bottleneck kept off its processor once) is not a phase. */
START_TEST(dlrb_noise_is_not_a_phase)
{
	struct ma_hw_slot slot[2] = { { .domain = 0 }, { .domain = 0 } };
	struct ma_hw_policy_state st = { .n = 2, .slot = slot };
	struct ma_hw_policy_params p;
	ma_hw_policy_defaults(&p, MA_HWP_DLRB);
	struct ma_hw_sample heavy1[2] = { { 30, 70 }, { 100, 0 } }, balanced[2] = { { 97, 3 }, { 100, 0 } },
			    late[2] = { { 60, 40 }, { 66, 34 } };
	ma_hw_policy_step(&p, &st, heavy1);
	ma_hw_policy_step(&p, &st, balanced);
	for (int k = 0; k < 10; k++) {
		ck_assert_int_eq(ma_hw_policy_step(&p, &st, k % 3 ? balanced : late), 0);
		ck_assert_int_eq(slot[1].level, 2);
	}
}
END_TEST

/* A worker that measured nothing (no time at all) is left out of its domain's decision. */
START_TEST(unmeasured_workers_are_left_alone)
{
	struct ma_hw_slot slot[3] = { { .domain = 0 }, { .domain = 0 }, { .domain = 1 } };
	struct ma_hw_policy_state st = { .n = 3, .slot = slot };
	struct ma_hw_policy_params p;
	ma_hw_policy_defaults(&p, kinds[_i]);
	struct ma_hw_sample s[3] = { { 0, 0 }, { 100, 0 }, { 10, 90 } };
	for (unsigned it = 0; it < 5; it++)
		ck_assert_int_eq(ma_hw_policy_step(&p, &st, s), 0);
}
END_TEST

/* Fitting the levels to a backend's reach keeps each domain's order. */
START_TEST(levels_fit_a_backend)
{
	struct ma_hw_slot slot[4] = {
		{ .domain = 0, .level = 0 }, { .domain = 0, .level = 2 }, { .domain = 1, .level = 1 }, { .domain = 1, .level = 1 }
	};
	int out[4];
	/* POWER's user-mode reach, -2..+1: the raised one at +1, its sibling lowered. */
	ma_hw_levels_fit(slot, 4, -2, 1, out);
	ck_assert_int_eq(out[0], -1);
	ck_assert_int_eq(out[1], 1);
	ck_assert_int_eq(out[2], 1);
	ck_assert_int_eq(out[3], 1);
	/* A lower-only backend (-2..0). */
	ma_hw_levels_fit(slot, 4, -2, 0, out);
	ck_assert_int_eq(out[0], -2);
	ck_assert_int_eq(out[1], 0);
	ck_assert_int_eq(out[2], 0);
	ck_assert_int_eq(out[3], 0);
	/* The whole scale: unchanged. */
	ma_hw_levels_fit(slot, 4, -2, 2, out);
	ck_assert_int_eq(out[0], 0);
	ck_assert_int_eq(out[1], 2);
}
END_TEST

/* ---- the unit: bubbles, or threads ---- */

#define A 0x8000000000000001ull
#define B 0x8000000000000002ull
#define C 0x8000000000000003ull
#define D 0x8000000000000004ull
#define E 0x8000000000000005ull

static struct ma_hw_path path_of(unsigned len, const uint64_t *id)
{
	struct ma_hw_path p = { .len = len };
	for (unsigned i = 0; i < len; i++)
		p.id[i] = id[i];
	return p;
}

/* Each worker is judged by what tells it apart from the others of its core. */
START_TEST(units_compare_what_differs)
{
	struct ma_hw_path path[10] = {
		path_of(2, (uint64_t[]){ A, 1 }),    path_of(2, (uint64_t[]){ A, 2 }),    /* one bubble */
		path_of(2, (uint64_t[]){ A, 3 }),    path_of(2, (uint64_t[]){ B, 4 }),    /* two */
		path_of(3, (uint64_t[]){ C, D, 5 }), path_of(3, (uint64_t[]){ C, E, 6 }), /* nested */
		path_of(1, (uint64_t[]){ 7 }),                                              /* alone */
		path_of(2, (uint64_t[]){ C, 8 }),    path_of(0, NULL),                      /* one ran */
		path_of(1, (uint64_t[]){ 9 }),                                              /* no bubble */
	};
	struct ma_hw_slot slot[10] = { { .domain = 0 }, { .domain = 0 }, { .domain = 1 }, { .domain = 1 },
				       { .domain = 2 }, { .domain = 2 }, { .domain = 3 }, { .domain = 4 },
				       { .domain = 4 }, { .domain = 5 } };
	uint64_t unit[10];
	ma_hw_units(path, slot, 10, unit);
	const uint64_t want[10] = { 1, 2, A, B, D, E, 7, C, 0, 9 };
	for (unsigned i = 0; i < 10; i++)
		ck_assert_msg(unit[i] == want[i], "worker %u: unit %llx, expected %llx", i, (unsigned long long)unit[i],
			      (unsigned long long)want[i]);
}
END_TEST

/* A unit's workers get its utilisation, each over its own time; unit 0 keeps its own. */
START_TEST(samples_pooled_by_unit)
{
	const struct ma_hw_sample s[5] = { { 8, 0 }, { 1, 7 }, { 4, 4 }, { 6, 2 }, { 3, 1 } };
	const uint64_t unit[5] = { A, B, A, B, 0 };
	struct ma_hw_sample out[5];
	ma_hw_samples_pool(s, unit, 5, out);
	ck_assert_double_eq_tol(out[0].run, 6, 1e-9);
	ck_assert_double_eq_tol(out[0].wait, 2, 1e-9);
	ck_assert_double_eq_tol(out[2].run, 6, 1e-9);
	ck_assert_double_eq_tol(out[1].run, 3.5, 1e-9);
	ck_assert_double_eq_tol(out[3].wait, 4.5, 1e-9);
	ck_assert_double_eq_tol(out[4].run, 3, 1e-9);
	ck_assert_double_eq_tol(out[4].wait, 1, 1e-9);
}
END_TEST

/* The innermost bubble with a level by hand wins. */
START_TEST(pins_innermost_wins)
{
	const struct ma_hw_pin pin[2] = { { .id = A, .level = 2 }, { .id = D, .level = -1 } };
	struct ma_hw_path inner = path_of(3, (uint64_t[]){ A, D, 5 }), outer = path_of(2, (uint64_t[]){ A, 3 }),
			  none = path_of(2, (uint64_t[]){ B, 4 }), empty = path_of(0, NULL);
	ck_assert_int_eq(ma_hw_pin_of(&inner, pin, 2), 1);
	ck_assert_int_eq(ma_hw_pin_of(&outer, pin, 2), 0);
	ck_assert_int_eq(ma_hw_pin_of(&none, pin, 2), -1);
	ck_assert_int_eq(ma_hw_pin_of(&empty, pin, 2), -1);
	ck_assert_int_eq(ma_hw_pin_of(&inner, pin, 0), -1);
}
END_TEST

/* Two programs' bubbles on two cores, a worker of each per core: A's workers are busy 100%
 * and 72%, B's 10% and 95%. Judged as bubbles (A 86%, B 52.5%: high and low for
 * HPCSched's bands too), A is raised on both cores, though on core 1 B's worker is the
 * busier: what the heaviest bubble gets. Judged as workers, DLRB goes the other way on
 * core 1. */
START_TEST(bubbles_raised_together)
{
	const struct ma_hw_sample s[4] = { { 10, 0 }, { 1, 9 }, { 7.2, 2.8 }, { 9.5, 0.5 } };
	struct ma_hw_path path[4] = { path_of(2, (uint64_t[]){ A, 1 }), path_of(2, (uint64_t[]){ B, 2 }),
				      path_of(2, (uint64_t[]){ A, 3 }), path_of(2, (uint64_t[]){ B, 4 }) };
	for (int pooled = 0; pooled < 2; pooled++) {
		struct ma_hw_slot slot[4] = { { .domain = 0 }, { .domain = 0 }, { .domain = 1 }, { .domain = 1 } };
		struct ma_hw_policy_state st = { .n = 4, .slot = slot };
		struct ma_hw_policy_params p;
		ma_hw_policy_defaults(&p, kinds[_i]);
		uint64_t unit[4];
		struct ma_hw_sample in[4];
		for (unsigned it = 0; it < 4; it++) {
			ma_hw_units(path, slot, 4, unit);
			if (pooled)
				ma_hw_samples_pool(s, unit, 4, in);
			else
				memcpy(in, s, sizeof(in));
			ma_hw_policy_step(&p, &st, in);
		}
		ck_assert_msg(slot[0].level > slot[1].level, "%s, %s: core 0 at %d %d", ma_hw_policy_name(kinds[_i]),
			      pooled ? "bubbles" : "workers", slot[0].level, slot[1].level);
		if (pooled || kinds[_i] == MA_HWP_DLRB)
			ck_assert_msg(pooled ? slot[2].level > slot[3].level : slot[3].level > slot[2].level,
				      "%s, %s: core 1 at %d %d", ma_hw_policy_name(kinds[_i]), pooled ? "bubbles" : "workers",
				      slot[2].level, slot[3].level);
	}
}
END_TEST

START_TEST(names)
{
	enum ma_hw_policy_kind k;
	for (unsigned i = 0; i < 3; i++) {
		ck_assert_int_eq(ma_hw_policy_find(ma_hw_policy_name(kinds[i]), &k), 0);
		ck_assert_int_eq(k, kinds[i]);
	}
	ck_assert_int_eq(ma_hw_policy_find("fastest", &k), -1);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("hwprio policy");
	TCase *tc = tcase_create("policy");
	tcase_add_loop_test(tc, metbench_converges_and_raises_the_heavy_rank, 0, 3);
	tcase_add_loop_test(tc, balanced_does_nothing, 0, 3);
	tcase_add_loop_test(tc, small_imbalance_left_alone, 0, 3);
	tcase_add_loop_test(tc, metbenchvar_follows_the_heavy_rank, 0, 3);
	tcase_add_loop_test(tc, btmz_raises_the_heaviest_of_each_core, 0, 3);
	tcase_add_loop_test(tc, levels_stay_in_range, 0, 3);
	tcase_add_test(tc, dlrb_steps);
	tcase_add_test(tc, dlrb_lowers_at_the_top);
	tcase_add_test(tc, dlrb_phase_change_one_quiet_iteration);
	tcase_add_test(tc, dlrb_noise_is_not_a_phase);
	tcase_add_loop_test(tc, unmeasured_workers_are_left_alone, 0, 3);
	tcase_add_test(tc, levels_fit_a_backend);
	tcase_add_test(tc, units_compare_what_differs);
	tcase_add_test(tc, samples_pooled_by_unit);
	tcase_add_test(tc, pins_innermost_wins);
	tcase_add_loop_test(tc, bubbles_raised_together, 0, 3);
	tcase_add_test(tc, names);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ma_check_run(suite());
}
