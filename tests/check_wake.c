/*
 * Which idle worker new work wakes (white-box: links the static library and reads the
 * runtime's internals, since the choice is not observable through the public API).
 *
 * Main machine: synthetic "pack:2 core:2 pu:2" with MARCEL_SMT=1, i.e. 8 VPs, two per core:
 *   Package0: Core0 {VP0, VP1}  Core1 {VP2, VP3}
 *   Package1: Core2 {VP4, VP5}  Core3 {VP6, VP7}
 * main runs on VP0 (busy); the test waits until VP1..VP7 sleep, then asks whom work on a
 * given queue would wake. Expected: a core whose other VP is idle beats one whose sibling
 * is busy, then the worker nearest to the queue, then the nearest to the producer.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ma_white.h"

/* Starts the runtime on `topology` and waits until every VP but ours (VP0) sleeps. */
static void start_and_wait_sleepers(const char *topology, const char *smt, const char *nvp,
				    unsigned nbvps)
{
	ma_white_start(topology, smt, nvp);
	ck_assert_uint_eq(marcel_nbvps(), nbvps);
	ma_white_wait_sleeping();
}

#define SMT8 "pack:2 core:2 pu:2", "1", NULL, 8

/* The run queue of the topology item called `name`. */
static struct ma_runqueue *rq_named(const char *name)
{
	for (unsigned i = 0; i < ma_rt.topo.nb_levels; i++)
		if (!strcmp(ma_rt.rqs[i].name, name))
			return &ma_rt.rqs[i];
	ck_abort_msg("no run queue named %s", name);
	return NULL;
}

static int chosen_vp(struct ma_runqueue *rq)
{
	struct ma_worker *w = ma_wake_choose(rq, ma_worker_self());
	return w ? (int)w->vp : -1;
}

START_TEST(test_prefers_idle_core_then_nearest)
{
	start_and_wait_sleepers(SMT8);
	/* Machine queue: VP1 shares Core0 with busy VP0, so Core1 (same package as us) wins. */
	ck_assert_int_eq(chosen_vp(rq_named("machine")), 2);
	/* Package1: both cores idle and equally far: the first one. */
	ck_assert_int_eq(chosen_vp(rq_named("Package1")), 4);
	/* Core0: VP1 is the only other VP that sees it, busy sibling or not. */
	ck_assert_int_eq(chosen_vp(rq_named("Core0")), 1);
	/* A VP's own queue: only that VP. */
	ck_assert_int_eq(chosen_vp(&ma_rt.workers[7].rq), 7);
	/* The producer's own queue: VP0 is busy, nobody else sees it. */
	ck_assert_int_eq(chosen_vp(&ma_rt.workers[0].rq), -1);
	marcel_end();
}
END_TEST

START_TEST(test_busy_workers_are_not_chosen)
{
	start_and_wait_sleepers(SMT8);
	/* Pretend VP2 is busy (restored before anything can wake): then Core1 has a busy
	 * sibling too, and the whole idle cores are in Package1. */
	int saved = atomic_exchange(&ma_rt.workers[2].state, MA_WORKER_BUSY);
	ck_assert_int_eq(saved, MA_WORKER_SLEEPING);
	int vp = chosen_vp(rq_named("machine"));
	atomic_store(&ma_rt.workers[2].state, saved);
	ck_assert_msg(vp == 4 || vp == 6, "chose VP%d, expected a VP of an idle core (4 or 6)", vp);
	marcel_end();
}
END_TEST

/* More VPs than cores: "core:3 pu:1" with 6 VPs puts VP n on Core(n mod 3), so a core's
 * VPs are not consecutive (Core0 {0,3}, Core1 {1,4}, Core2 {2,5}). With VP0 and VP2 busy,
 * only Core1 is wholly idle. */
START_TEST(test_siblings_with_wrapped_vps)
{
	start_and_wait_sleepers("core:3 pu:1", "0", "6", 6);
	int saved = atomic_exchange(&ma_rt.workers[2].state, MA_WORKER_BUSY);
	ck_assert_int_eq(saved, MA_WORKER_SLEEPING);
	int vp = chosen_vp(rq_named("machine"));
	atomic_store(&ma_rt.workers[2].state, saved);
	ck_assert_msg(vp == 1 || vp == 4, "chose VP%d, expected VP1 or VP4 (Core1, wholly idle)", vp);
	marcel_end();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("wake");
	TCase *tc = tcase_create("choice");
	tcase_add_test(tc, test_prefers_idle_core_then_nearest);
	tcase_add_test(tc, test_busy_workers_are_not_chosen);
	tcase_add_test(tc, test_siblings_with_wrapped_vps);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
