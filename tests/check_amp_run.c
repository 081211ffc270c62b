/*
 * pa and mintlp in the running library: a Marcel program with bubbles attached to
 * marcel_root_bubble, on a synthetic machine with one fast core and three slow ones
 * (MARCEL_TOPOLOGY's cpukinds), chosen by MARCEL_BUBBLE_SCHEDULER. A single-threaded
 * program beside a highly parallel application ends up on the fast core; the parallel
 * application's threads keep to the slow ones. Counts of samples, not times: where each
 * thread is seen running when it looks.
 */
#include <stdatomic.h>
#include "ma_test.h"

#define TOPO "pack:1 core:4; cpukinds=1-3@1000/0@2000"
#define SAMPLES 4000

/* Rounds of a worker before its samples count (the parallel application's), and the
 * most the single program may run before it first reaches the fast core. */
#define WARMUP 200
#define PLACED_WITHIN (WARMUP + SAMPLES)

static atomic_int stop;
static atomic_int on_fast[4], seen[4];
/* The single program's round when it first ran on the fast core (0: not yet). */
static atomic_uint placed_at;

/* Computes and yields, counting the samples it was on VP 0 (the fast core), until told to
 * stop. The parallel application's first WARMUP rounds are not counted; the single
 * program's samples count from its first round on the fast core (the strategy's first
 * placement, which a loaded machine may delay by many rounds: it started on whatever VP
 * took it), or from round PLACED_WITHIN if it never got there. */
static any_t worker(any_t arg)
{
	int who = (int)(intptr_t)arg;
	unsigned n = 0;
	while (!atomic_load(&stop)) {
		volatile unsigned x = 0;
		for (unsigned k = 0; k < 20000; k++)
			x += k;
		int fast = marcel_current_vp() == 0;
		++n;
		if (who == 3 && !atomic_load(&placed_at) && (fast || n >= PLACED_WITHIN))
			atomic_store(&placed_at, n);
		if (who == 3 ? atomic_load(&placed_at) != 0 : n > WARMUP) {
			atomic_fetch_add(&seen[who], 1);
			atomic_fetch_add(&on_fast[who], fast);
		}
		if (who == 3 && atomic_load(&seen[3]) >= SAMPLES)
			atomic_store(&stop, 1);
		marcel_yield();
	}
	return NULL;
}

static void run(const char *strategy)
{
	setenv("MARCEL_TOPOLOGY", TOPO, 1);
	setenv("MARCEL_BUBBLE_SCHEDULER", strategy, 1);
	ma_test_init();
	unsetenv("MARCEL_TOPOLOGY");
	unsetenv("MARCEL_BUBBLE_SCHEDULER");
	ck_assert_uint_eq(marcel_nbvps(), 4);
	atomic_store(&stop, 0);
	atomic_store(&placed_at, 0);
	for (int i = 0; i < 4; i++) {
		atomic_store(&on_fast[i], 0);
		atomic_store(&seen[i], 0);
	}
	/* A parallel application (3 threads in a bubble) and a single-threaded program (a
	 * bubble of one). */
	marcel_bubble_t par, single;
	marcel_bubble_init(&par);
	marcel_bubble_init(&single);
	marcel_bubble_insertbubble(&marcel_root_bubble, &par);
	marcel_bubble_insertbubble(&marcel_root_bubble, &single);
	marcel_t t[4];
	for (int i = 0; i < 4; i++) {
		marcel_attr_t a;
		marcel_attr_init(&a);
		marcel_attr_setinitbubble(&a, i < 3 ? &par : &single);
		ck_assert_int_eq(marcel_create(&t[i], &a, worker, (any_t)(intptr_t)i), 0);
	}
	marcel_wake_up_bubble(&par);
	marcel_wake_up_bubble(&single);
	marcel_bubble_sched_begin();
	/* main, a master thread, waits blocked in joins: no candidate for the fast core. The
	 * single program stops everyone once it has its samples. */
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(marcel_join(t[i], NULL), 0);
	marcel_end();
}

/* Once placed, at least 9 samples in 10 on the fast core (a strategy blind to core kinds
 * gives it about 1 in 4). Counted from round WARMUP, the share was 82-90% under load:
 * the single program had started on another VP and the misses were all its first
 * rounds, before the strategy's first placement. */
#define MA_FAST_SHARE_MIN 9

START_TEST(pa_single_program_on_fast_core)
{
	run("pa");
	int s = atomic_load(&seen[3]), f = atomic_load(&on_fast[3]);
	ck_assert_msg(atomic_load(&placed_at) < PLACED_WITHIN,
		      "pa: the single-threaded program never ran on the fast core in %d rounds", PLACED_WITHIN);
	int pf = atomic_load(&on_fast[0]) + atomic_load(&on_fast[1]) + atomic_load(&on_fast[2]);
	int ps = atomic_load(&seen[0]) + atomic_load(&seen[1]) + atomic_load(&seen[2]);
	ck_assert_msg(f * 10 >= s * MA_FAST_SHARE_MIN, "pa: the single-threaded program ran %d of %d samples on the fast core", f, s);
	ck_assert_msg(pf * 10 <= ps, "pa: the parallel application ran %d of %d samples on the fast core", pf, ps);
}
END_TEST

START_TEST(mintlp_single_program_on_fast_core)
{
	run("mintlp");
	int s = atomic_load(&seen[3]), f = atomic_load(&on_fast[3]);
	ck_assert_msg(atomic_load(&placed_at) < PLACED_WITHIN,
		      "mintlp: the single-threaded program never ran on the fast core in %d rounds", PLACED_WITHIN);
	ck_assert_msg(f * 10 >= s * MA_FAST_SHARE_MIN, "mintlp: the single-threaded program ran %d of %d samples on the fast core", f,
		      s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("amp_run");
	TCase *tc = tcase_create("amp_run");
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, pa_single_program_on_fast_core);
	tcase_add_test(tc, mintlp_single_program_on_fast_core);
	suite_add_tcase(s, tc);
	return ma_test_run(s);
}
