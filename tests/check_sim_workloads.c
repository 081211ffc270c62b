/*
 * marcel-sim's structured workloads and the phases they are made of: spawn and join
 * (sumtime's tree), halo exchanges with neighbours (BT-MZ), mixes of applications with
 * serial phases; and the errors of a program that cannot go on.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ma_check_run.h"
#include "ma_sim.h"

static char err[300];

static struct sim_config config(const char *topology, const char *strategy)
{
	struct sim_config c = { .strategy = strategy, .seed = 1 };
	sim_machine_defaults(&c.machine);
	c.machine.topology = topology;
	return c;
}

static struct sim_result run_spec(const char *topology, const char *spec, const char *strategy, unsigned nb_vps)
{
	struct sim_workload w;
	ck_assert_msg(sim_workload_make(&w, spec, nb_vps, err, sizeof(err)) == 0, "%s: %s", spec, err);
	struct sim_config c = config(topology, strategy);
	struct sim_result r;
	ck_assert_msg(sim_run(&c, &w, &r, err, sizeof(err)) == 0, "%s with %s on %s: %s", spec, strategy, topology, err);
	sim_workload_free(&w);
	return r;
}

static const char *const strategies[] = { "null", "burst", "spread", "cache", "steal", "gang", "memory" };
#define NB_STRATEGIES (sizeof(strategies) / sizeof(strategies[0]))

/* A tree of 32 leaves of 1 ms on 8 VPs: every strategy ends it, no faster than the
 * leaves allow and, once the tree has unfolded, near it; each parent ends after its
 * children (it joined them). */
START_TEST(sumtime_tree)
{
	for (unsigned i = 0; i < NB_STRATEGIES; i++)
		for (int flat = 0; flat < 2; flat++) {
			struct sim_result r = run_spec("pack:2 core:4", flat ? "sumtime:depth=5:flat" : "sumtime:depth=5",
						       strategies[i], 8);
			ck_assert_uint_eq(r.nb_threads, 63);
			ck_assert_msg(r.makespan >= 32 * 1e-3 / 8 && r.makespan < 32 * 1e-3 / 8 * 1.6,
				      "%s%s: %.6f s for 32 leaves of 1 ms on 8 VPs", strategies[i], flat ? " flat" : "",
				      r.makespan);
			for (unsigned t = 0; t < 31; t++)
				ck_assert_msg(r.thread[t].end >= r.thread[2 * t + 1].end &&
						      r.thread[t].end >= r.thread[2 * t + 2].end,
					      "%s: thread %u ends at %g before its children (%g, %g)", strategies[i], t,
					      r.thread[t].end, r.thread[2 * t + 1].end, r.thread[2 * t + 2].end);
			/* A leaf does not wait before it is spawned: its wait is the queues'. */
			for (unsigned t = 31; t < 63; t++)
				ck_assert_msg(r.thread[t].wait < r.makespan, "%s: leaf %u waited %g", strategies[i], t,
					      r.thread[t].wait);
			sim_result_free(&r);
		}
	/* One VP: the whole tree in turn, and nothing lost. */
	struct sim_result one = run_spec("core:1", "sumtime:depth=4:leaf=0.01", "burst", 1);
	ck_assert_msg(fabs(one.makespan - 16 * 0.01) < 0.01, "one VP: %.4f s for 16 leaves of 10 ms", one.makespan);
	sim_result_free(&one);
}
END_TEST

/* A line of three ranks 0 - 1 - 2 exchanging each iteration, on three VPs: rank 2's
 * 1 s of work is alone, rank 0's 2 s sets the pace for all (rank 2 waits for 1, which
 * waits for 0), and every exchange round is an iteration. */
struct line {
	unsigned long iters;
};

static unsigned line_neighbours(const struct sim_workload *w, unsigned t, unsigned *out, unsigned max)
{
	(void)w;
	unsigned n = 0;
	if (t > 0 && n < max)
		out[n++] = t - 1;
	if (t < 2 && n < max)
		out[n++] = t + 1;
	return n;
}

static void line_next(const struct sim_workload *w, unsigned t, unsigned long n, struct sim_phase *p)
{
	const struct line *l = w->data;
	static const double work[3] = { 2, 1.5, 1 };
	if (n / 2 >= l->iters)
		*p = (struct sim_phase){ .kind = SIM_END };
	else if (n % 2)
		*p = (struct sim_phase){ .kind = SIM_EXCHANGE };
	else
		*p = (struct sim_phase){ .kind = SIM_COMPUTE, .work = work[t] };
}

static void line_free(struct sim_workload *w)
{
	(void)w; /* data is the test's */
}

static void line_workload(struct sim_workload *w, struct line *l, int *tb, int *pin)
{
	memset(w, 0, sizeof(*w));
	for (unsigned t = 0; t < 3; t++)
		tb[t] = pin[t] = -1;
	*w = (struct sim_workload){ .name = "line", .nb_threads = 3, .thread_bubble = tb, .pin = pin, .data = l,
				    .free_data = line_free, .neighbours = line_neighbours, .next = line_next };
}

START_TEST(exchange_neighbours)
{
	struct line l = { .iters = 10 };
	int tb[3], pin[3];
	struct sim_workload w;
	line_workload(&w, &l, tb, pin);
	struct sim_config c = config("core:3", "null");
	struct sim_result r;
	ck_assert_msg(sim_run(&c, &w, &r, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(fabs(r.makespan - 20) < 0.01, "%.4f s, expected 10 iterations of the slowest rank's 2 s",
		      r.makespan);
	ck_assert_uint_eq(r.iterations, 10);
	/* Rank 2 waits only for rank 1, which posts half a second before rank 0 does: its
	 * last iteration ends then, not at the end of the run as after a barrier. */
	ck_assert_msg(fabs(r.thread[2].run - 10) < 0.01 && fabs(r.thread[2].end - 19.5) < 0.01,
		      "rank 2 ran %g, ended at %g", r.thread[2].run, r.thread[2].end);
	sim_result_free(&r);
	/* On one VP the three take turns: the sum of their work. */
	c.machine.topology = "core:1";
	ck_assert_msg(sim_run(&c, &w, &r, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(fabs(r.makespan - 45) < 0.01, "one VP: %.4f s, expected 10 x 4.5 s", r.makespan);
	sim_result_free(&r);
}
END_TEST

/* A rank that stops exchanging leaves its neighbour waiting: the run says so. */
static void line_short_next(const struct sim_workload *w, unsigned t, unsigned long n, struct sim_phase *p)
{
	line_next(w, t, n, p);
	if (t == 0 && n >= 4)
		*p = (struct sim_phase){ .kind = SIM_END };
}

/* Thread 0's bad programs: it spawns thread 1 twice, joins itself, spawns a thread that
 * does not exist, exchanges without neighbours, leaves thread 1 unspawned, joins thread 1
 * that nobody spawns. */
static int bad_case;
static void bad_next(const struct sim_workload *w, unsigned t, unsigned long n, struct sim_phase *p)
{
	(void)w;
	static const struct sim_phase prog[][3] = {
		{ { .kind = SIM_SPAWN, .id = 1 }, { .kind = SIM_JOIN, .id = 1 }, { .kind = SIM_SPAWN, .id = 1 } },
		{ { .kind = SIM_JOIN, .id = 0 }, { .kind = SIM_END }, { .kind = SIM_END } },
		{ { .kind = SIM_SPAWN, .id = 7 }, { .kind = SIM_END }, { .kind = SIM_END } },
		{ { .kind = SIM_EXCHANGE }, { .kind = SIM_END }, { .kind = SIM_END } },
		{ { .kind = SIM_COMPUTE, .work = 1 }, { .kind = SIM_END }, { .kind = SIM_END } },
		{ { .kind = SIM_JOIN, .id = 1 }, { .kind = SIM_END }, { .kind = SIM_END } },
	};
	if (t == 1)
		*p = n ? (struct sim_phase){ .kind = SIM_END } : (struct sim_phase){ .kind = SIM_COMPUTE, .work = 1 };
	else
		*p = n < 3 ? prog[bad_case][n] : (struct sim_phase){ .kind = SIM_END };
}

START_TEST(structure_errors)
{
	struct line l = { .iters = 10 };
	int tb[3], pin[3];
	struct sim_workload w;
	line_workload(&w, &l, tb, pin);
	w.next = line_short_next;
	struct sim_config c = config("core:3", "null");
	struct sim_result r;
	ck_assert_int_eq(sim_run(&c, &w, &r, err, sizeof(err)), EINVAL);
	ck_assert_msg(strstr(err, "never ends") && strstr(err, "wait in an exchange"), "%s", err);

	unsigned char dormant[2] = { 0, 1 };
	static const char *const expect[] = { "not dormant", "is itself", "does not exist", "neighbours it does not have",
					      "never spawned", "wait in a join (thread 0" };
	for (bad_case = 0; bad_case < 6; bad_case++) {
		struct sim_workload b = { .name = "bad", .nb_threads = 2, .thread_bubble = tb, .pin = pin,
					  .dormant = dormant, .next = bad_next, .data = &l, .free_data = line_free };
		int e = sim_run(&c, &b, &r, err, sizeof(err));
		ck_assert_msg(e == EINVAL && strstr(err, expect[bad_case]), "case %d: %d, %s", bad_case, e, err);
	}
	ck_assert_msg(strstr(err, "1 are never spawned"), "%s", err);
}
END_TEST

/* BT-MZ's zones: blocks of rows give the seed's imbalance (the corners 20 apart, so the
 * rows 4.47) and a ring of neighbours; greedy balances, and a balanced run is faster. */
START_TEST(btmz_zones)
{
	struct sim_workload w;
	ck_assert_int_eq(sim_workload_make(&w, "btmz", 4, err, sizeof(err)), 0);
	ck_assert_msg(strstr(w.desc, "4.47 times"), "%s", w.desc);
	unsigned nb[8];
	unsigned n = w.neighbours(&w, 0, nb, 8);
	ck_assert_uint_eq(n, 2);
	ck_assert_msg((nb[0] == 1 && nb[1] == 3) || (nb[0] == 3 && nb[1] == 1), "rank 0's neighbours %u, %u", nb[0],
		      nb[1]);
	sim_workload_free(&w);
	ck_assert_int_eq(sim_workload_make(&w, "btmz:assign=greedy", 4, err, sizeof(err)), 0);
	const char *times = strstr(w.desc, "lightest");
	ck_assert_ptr_nonnull(times);
	double ratio = strtod(strstr(w.desc, "rank ") + 5, NULL);
	ck_assert_msg(ratio < 1.2, "greedy: the heaviest rank %g times the lightest (%s)", ratio, w.desc);
	sim_workload_free(&w);
	struct sim_result block = run_spec("core:4", "btmz:iters=20", "null", 4);
	struct sim_result greedy = run_spec("core:4", "btmz:iters=20:assign=greedy", "null", 4);
	ck_assert_msg(greedy.makespan < 0.7 * block.makespan, "greedy %.3f s, blocks %.3f s", greedy.makespan,
		      block.makespan);
	ck_assert_uint_eq(block.iterations, 20);
	sim_result_free(&block);
	sim_result_free(&greedy);
	/* Ranks of several threads, in bubbles: every strategy ends them. */
	for (unsigned i = 0; i < NB_STRATEGIES; i++) {
		struct sim_result r = run_spec("pack:2 core:4", "btmz:threads=4:iters=10", strategies[i], 8);
		ck_assert_msg(r.iterations == 10, "%s: %u iterations", strategies[i], r.iterations);
		sim_result_free(&r);
	}
	ck_assert_int_eq(sim_workload_make(&w, "btmz:ranks=20", 4, err, sizeof(err)), EINVAL);
	ck_assert_msg(strstr(err, "ranks=20") && strstr(err, "16 zones"), "%s", err);
	ck_assert_int_eq(sim_workload_make(&w, "btmz:assign=random", 4, err, sizeof(err)), EINVAL);
	ck_assert_msg(strstr(err, "assign=random"), "%s", err);
}
END_TEST

/* Applications side by side: a single-threaded one ends after its own work, a parallel
 * one's master computes the serial phases besides its share. */
START_TEST(mix_apps)
{
	for (unsigned i = 0; i < NB_STRATEGIES; i++) {
		struct sim_result r = run_spec("pack:2 core:4", "mix:apps=1/0/4/1,4/0.1/1/10,2/0/1/5", strategies[i], 8);
		ck_assert_uint_eq(r.nb_threads, 7);
		ck_assert_msg(fabs(r.thread[0].run - 4) < 0.01, "%s: the serial program ran %g s", strategies[i],
			      r.thread[0].run);
		ck_assert_msg(fabs(r.thread[1].run - 10 * (0.1 + 0.25)) < 0.01 && fabs(r.thread[2].run - 2.5) < 0.01,
			      "%s: master %g s, worker %g s", strategies[i], r.thread[1].run, r.thread[2].run);
		/* 8 VPs for 7 threads: nobody shares, the longest is the serial program. */
		ck_assert_msg(fabs(r.makespan - 4) < 0.05, "%s: %.4f s", strategies[i], r.makespan);
		sim_result_free(&r);
	}
	struct sim_workload w;
	ck_assert_int_eq(sim_workload_make(&w, "mix:apps=4/0.1/1", 4, err, sizeof(err)), EINVAL);
	ck_assert_msg(strstr(err, "application 1") && strstr(err, "N/S/P/K"), "%s", err);
	ck_assert_int_eq(sim_workload_make(&w, "mix:apps=1/0/1/1,0/0/1/1", 4, err, sizeof(err)), EINVAL);
	ck_assert_msg(strstr(err, "application 2"), "%s", err);
	ck_assert_int_eq(sim_workload_make(&w, "mix", 4, err, sizeof(err)), EINVAL);
	ck_assert_msg(strstr(err, "apps="), "%s", err);
}
END_TEST

/* pa and mintlp on the 004 seed's machines (core kinds through the topology's cpukinds):
 * a single-threaded program beside a parallel one with serial phases. The measure is the
 * seed's, the geometric mean of the applications' completion times, averaged over the
 * two orders of the applications (which one the asymmetry-agnostic baseline happens to put
 * on the fast cores). Both beat null by at least 10% on every machine; the seed reports up
 * to 40% (tools/sim-amp has the full table). */
static double apps_mean(const char *topology, unsigned n, const char *strategy)
{
	double sum = 0;
	for (int order = 0; order < 2; order++) {
		char spec[128];
		snprintf(spec, sizeof(spec), order ? "mix:apps=%u/0.05/0.6/20,1/0/10/1" : "mix:apps=1/0/10/1,%u/0.05/0.6/20",
			 n);
		struct sim_workload w;
		ck_assert_msg(sim_workload_make(&w, spec, n + 1, err, sizeof(err)) == 0, "%s", err);
		struct sim_config c = config(topology, strategy);
		struct sim_result r;
		ck_assert_msg(sim_run(&c, &w, &r, err, sizeof(err)) == 0, "%s: %s", strategy, err);
		unsigned apps;
		sum += sim_apps_gmean(&w, &r, &apps);
		ck_assert_uint_eq(apps, 2);
		sim_result_free(&r);
		sim_workload_free(&w);
	}
	return sum / 2;
}

START_TEST(asymmetric_cores)
{
	static const struct {
		const char *name, *topology;
		unsigned threads;
	} m[] = {
		{ "1FC-12SC", "pack:4 core:4; restrict=0,4-15; cpukinds=4-15@1150/0@2300", 12 },
		{ "4FC-12SC", "pack:4 core:4; cpukinds=1-3,5-7,9-11,13-15@1150/0,4,8,12@2300", 15 },
		{ "1FC-3SC", "pack:1 core:4; cpukinds=1-3@1150/0@2300", 3 },
	};
	for (unsigned i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		double base = apps_mean(m[i].topology, m[i].threads, "null");
		double pa = apps_mean(m[i].topology, m[i].threads, "pa");
		double mintlp = apps_mean(m[i].topology, m[i].threads, "mintlp");
		printf("asymmetric cores, %s: null %.2f s, pa %.2f s (%+.0f%%), mintlp %.2f s (%+.0f%%)\n", m[i].name, base,
		       pa, 100 * (base / pa - 1), mintlp, 100 * (base / mintlp - 1));
		ck_assert_msg(base > 1.1 * pa && base > 1.1 * mintlp, "%s: null %.3f, pa %.3f, mintlp %.3f", m[i].name, base,
			      pa, mintlp);
	}
	/* The kinds' speeds come from their frequencies: a 10 s program alone on the fast
	 * core of 1FC-3SC takes 10 s, on a slow one 20 s. */
	struct sim_result fast = run_spec("pack:1 core:4; cpukinds=1-3@1150/0@2300", "mix:apps=1/0/10/1", "pa", 4);
	ck_assert_msg(fabs(fast.makespan - 10) < 0.1, "alone under pa: %.3f s", fast.makespan);
	sim_result_free(&fast);
	struct sim_result slow = run_spec("pack:1 core:4; cpukinds=0-2@1150/3@2300", "mix:apps=1/0/10/1", "null", 4);
	ck_assert_msg(fabs(slow.makespan - 20) < 0.1, "alone on a slow core: %.3f s", slow.makespan);
	sim_result_free(&slow);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sim_workloads");
	TCase *tc = tcase_create("sim_workloads");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, sumtime_tree);
	tcase_add_test(tc, exchange_neighbours);
	tcase_add_test(tc, structure_errors);
	tcase_add_test(tc, btmz_zones);
	tcase_add_test(tc, mix_apps);
	tcase_add_test(tc, asymmetric_cores);
	suite_add_tcase(s, tc);
	return ma_check_run(s);
}
