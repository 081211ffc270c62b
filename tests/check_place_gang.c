/*
 * The gang strategy on the synthetic machine "numa:2 core:4", seen through snapshots:
 * three bubbles of four busy threads take turns, and at no time do threads of two of them
 * run together; every one of them gets processor time; a gang filled after it was woken
 * runs too.
 */
#include <errno.h>
#include <stdatomic.h>
#include "ma_test.h"

#define NG 3
#define NT 4


static marcel_bubble_t gang[NG];
static marcel_t th[NG][NT];

static void statuses(int *st)
{
	for (int g = 0; g < NG; g++)
		st[g] = marcel_bubble_status(&gang[g]);
}

/* The gang index of thread entity e, -1 if in none. */
static int gang_of(const struct marcel_snapshot *s, int e)
{
	for (int g = 0; g < NG; g++)
		for (int k = 0; k < NT; k++)
			if (s->entities[e].thread == th[g][k])
				return g;
	return -1;
}

/* Gang g made, with a time slice of `slice_us` (0: the strategy's), and NT threads of
 * fn in it, each given its own flag of `flags` (NULL: none). Not woken. */
static void gang_make(int g, unsigned long slice_us, any_t (*fn)(any_t), atomic_int *flags)
{
	marcel_attr_t a;
	ck_assert_int_eq(marcel_bubble_init(&gang[g]), 0);
	ck_assert_int_eq(marcel_bubble_setid(&gang[g], g), 0);
	if (slice_us)
		ck_assert_int_eq(marcel_bubble_settimeslice(&gang[g], slice_us), 0);
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setnaturalbubble(&a, &gang[g]), 0);
	for (int k = 0; k < NT; k++)
		ck_assert_int_eq(marcel_create(&th[g][k], &a, fn, flags ? &flags[k] : NULL), 0);
}

/* The busy threads of the first n gangs stop, are joined, and the gangs go. */
static void gangs_end(int n)
{
	__atomic_store_n(&ma_test_busy_stop, 1, __ATOMIC_RELAXED);
	for (int g = 0; g < n; g++) {
		for (int k = 0; k < NT; k++)
			ck_assert_int_eq(marcel_join(th[g][k], NULL), 0);
		ck_assert_int_eq(marcel_bubble_join(&gang[g]), 0);
		ck_assert_int_eq(marcel_bubble_destroy(&gang[g]), 0);
	}
}

/* Required: at every sample, the running gang threads belong to one gang; and each gang
 * ran. */
START_TEST(one_gang_at_a_time)
{
	ma_test_init_with("numa:2 core:4", "gang");
	ck_assert_int_eq(marcel_bubble_sched_begin(), 0);
	__atomic_store_n(&ma_test_busy_stop, 0, __ATOMIC_RELAXED);
	for (int g = 0; g < NG; g++)
		gang_make(g, 0, ma_test_busy, NULL);
	for (int g = 0; g < NG; g++)
		ck_assert_int_eq(marcel_wake_up_bubble(&gang[g]), 0);

	int valid = 0, seen[NG] = { 0 };
	for (int sample = 0; sample < 400; sample++) {
		marcel_usleep(1000);
		int before[NG], after[NG];
		statuses(before);
		struct marcel_snapshot *s = marcel_sched_snapshot();
		ck_assert_ptr_nonnull(s);
		statuses(after);
		/* A snapshot is not one instant: one taken across a hand-over (statuses changed
		 * meanwhile) proves nothing either way. */
		int same = !memcmp(before, after, sizeof(before)), open = 0;
		for (int g = 0; g < NG; g++)
			open += before[g] != MARCEL_BUBBLE_CLOSED;
		if (same) {
			ck_assert_int_le(open, 1);
			int running = -1;
			valid++;
			for (unsigned e = 0; e < s->nb_entities; e++) {
				if (s->entities[e].kind != MARCEL_SNAPSHOT_THREAD ||
				    s->entities[e].state != MARCEL_SNAPSHOT_RUNNING)
					continue;
				int g = gang_of(s, (int)e);
				if (g < 0)
					continue;
				ck_assert_msg(running < 0 || running == g,
					      "sample %d: threads of gangs %d and %d run together", sample, running, g);
				running = g;
				seen[g] = 1;
			}
		}
		marcel_sched_snapshot_free(s);
	}
	ck_assert_int_ge(valid, 100);
	for (int g = 0; g < NG; g++) {
		ck_assert_msg(seen[g], "gang %d never seen running", g);
		for (int k = 0; k < NT; k++) {
			long long ns;
			ck_assert_int_eq(marcel_task_stats_get(th[g][k], MARCEL_STATS_CPU_TIME, &ns), 0);
			ck_assert_int_gt(ns, 0);
		}
	}
	gangs_end(NG);
	marcel_end();
}
END_TEST

/* A gang with its own slice, and threads in no gang running beside the gangs. */
static atomic_int loose_runs;

static any_t loose_fn(any_t arg)
{
	while (!__atomic_load_n(&ma_test_busy_stop, __ATOMIC_RELAXED)) {
		atomic_fetch_add(&loose_runs, 1);
		marcel_usleep(500);
	}
	return arg;
}

START_TEST(own_slice_and_loose_threads)
{
	ma_test_init_with("numa:2 core:4", "gang");
	ck_assert_int_eq(marcel_bubble_sched_begin(), 0);
	__atomic_store_n(&ma_test_busy_stop, 0, __ATOMIC_RELAXED);
	atomic_store(&loose_runs, 0);
	marcel_t loose;
	ck_assert_int_eq(marcel_create(&loose, NULL, loose_fn, NULL), 0);
	for (int g = 0; g < 2; g++) {
		gang_make(g, 2000, ma_test_busy, NULL);
		ck_assert_int_eq(marcel_wake_up_bubble(&gang[g]), 0);
	}
	/* 2 ms slices: both gangs take many turns within 200 ms. */
	int turns = 0, last = -1;
	for (int i = 0; i < 200; i++) {
		marcel_usleep(1000);
		int open = -1;
		for (int g = 0; g < 2; g++)
			if (marcel_bubble_status(&gang[g]) == MARCEL_BUBBLE_OPENED)
				open = g;
		if (open >= 0 && open != last) {
			turns++;
			last = open;
		}
	}
	ck_assert_int_ge(turns, 4);
	ck_assert_int_gt(atomic_load(&loose_runs), 10);
	gangs_end(2);
	ck_assert_int_eq(marcel_join(loose, NULL), 0);
	marcel_end();
}
END_TEST

static atomic_int late_ran;

/* A gang woken while still empty is submitted empty, and nothing submits it again when a
 * thread is created in it later: the thread only fills its cache. The heartbeat must
 * still be going then to start it (it stopped once no gang waited, and such a thread
 * waited for ever: check_seeds' nested sum hung so under gang with TSan). */
START_TEST(filled_after_waking)
{
	ma_test_init_with("numa:2 core:4", "gang");
	ck_assert_int_eq(marcel_bubble_sched_begin(), 0);
	atomic_store(&late_ran, 0);
	marcel_bubble_t g;
	ck_assert_int_eq(marcel_bubble_init(&g), 0);
	ck_assert_int_eq(marcel_wake_up_bubble(&g), 0);
	/* Many 1 ms heartbeats with nothing to do. */
	marcel_usleep(30000);
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setnaturalbubble(&a, &g), 0);
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, &a, ma_test_set_flag, &late_ran), 0);
	/* It runs within a heartbeat or two; 5 s is a hang guard. */
	for (int i = 0; i < 1000 && !atomic_load(&late_ran); i++)
		marcel_usleep(5000);
	ck_assert_msg(atomic_load(&late_ran), "a thread created in a gang woken empty never ran");
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_int_eq(marcel_bubble_join(&g), 0);
	ck_assert_int_eq(marcel_bubble_destroy(&g), 0);
	marcel_end();
}
END_TEST

static atomic_int ran[NG][NT];

static any_t mark_and_spin(any_t arg)
{
	atomic_store((atomic_int *)arg, 1);
	return ma_test_busy(NULL);
}

/* Whether every thread of gang g has run. */
static int gang_ran(int g)
{
	for (int k = 0; k < NT; k++)
		if (!atomic_load(&ran[g][k]))
			return 0;
	return 1;
}

/* Switching away from gang while gangs wait their turn off the queues: the new strategy
 * gets them (nothing else would ever submit them), and every thread runs. Switching back
 * takes the gangs over again. */
START_TEST(switch_hands_waiting_gangs_over)
{
	ma_test_init_with("numa:2 core:4", "gang");
	ck_assert_int_eq(marcel_bubble_sched_begin(), 0);
	__atomic_store_n(&ma_test_busy_stop, 0, __ATOMIC_RELAXED);
	for (int g = 0; g < NG; g++) {
		for (int k = 0; k < NT; k++)
			atomic_store(&ran[g][k], 0);
		/* The first gang keeps the machine for 10 s: the others wait. */
		gang_make(g, g ? 1000 : 10000000, mark_and_spin, ran[g]);
	}
	for (int g = 0; g < NG; g++)
		ck_assert_int_eq(marcel_wake_up_bubble(&gang[g]), 0);
	for (int i = 0; i < 1000 && !gang_ran(0); i++)
		marcel_usleep(5000);
	ck_assert_msg(gang_ran(0), "the first gang did not run within 5 s");
	marcel_usleep(20000);
	for (int g = 1; g < NG; g++)
		for (int k = 0; k < NT; k++)
			ck_assert_msg(!atomic_load(&ran[g][k]), "gang %d ran during the first one's slice", g);
	const marcel_bubble_sched_t *gang_s = marcel_lookup_bubble_scheduler("gang");
	ck_assert_ptr_nonnull(marcel_bubble_change_sched(marcel_lookup_bubble_scheduler("burst")));
	for (int i = 0; i < 1000 && !(gang_ran(1) && gang_ran(2)); i++)
		marcel_usleep(5000);
	ck_assert_msg(gang_ran(1) && gang_ran(2), "gangs waiting at the switch never ran under burst");
	ck_assert_ptr_nonnull(marcel_bubble_change_sched(gang_s));
	marcel_usleep(20000);
	gangs_end(NG);
	marcel_end();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("place_gang");
	TCase *tc = tcase_create("gang");
	tcase_add_test(tc, one_gang_at_a_time);
	tcase_add_test(tc, own_slice_and_loose_threads);
	tcase_add_test(tc, filled_after_waking);
	tcase_add_test(tc, switch_hands_waiting_gangs_over);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return ma_test_run(s);
}
