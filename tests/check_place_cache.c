/*
 * The cache (affinity) strategy on the synthetic machine "numa:2 core:4" (two nodes of
 * four single-PU cores: VPs 0-3 on one node, 4-7 on the other), seen through snapshots:
 * bubbles that never ran are balanced over the nodes, one VP per thread; after a shake,
 * every thread goes back to the VP it last ran on, even where a fresh placement would
 * choose another; on a full machine, a bubble that never ran stays with its waker.
 */
#include <errno.h>
#include "ma_test.h"


static void start_cache(void)
{
	ma_test_init_with("numa:2 core:4", "affinity"); /* the alias */
	ck_assert_str_eq(marcel_bubble_sched_name(marcel_bubble_current_sched()), "cache");
	ck_assert_int_eq(marcel_bubble_sched_begin(), 0);
	__atomic_store_n(&ma_test_busy_stop, 0, __ATOMIC_RELAXED);
}

/* A bubble of n busy threads, created in it (they start when it is woken). */
static void make_bubble(marcel_bubble_t *b, marcel_t *t, int n)
{
	marcel_attr_t a;
	ck_assert_int_eq(marcel_bubble_init(b), 0);
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setnaturalbubble(&a, b), 0);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(marcel_create(&t[i], &a, ma_test_busy, NULL), 0);
}

/* The VP each thread is on (running there or queued on that VP's queue), -1 if it is not
 * on a single VP; the snapshot is taken here. */
static void thread_vps(marcel_t *t, int n, int *vp)
{
	struct marcel_snapshot *s = marcel_sched_snapshot();
	ck_assert_ptr_nonnull(s);
	for (int i = 0; i < n; i++)
		vp[i] = marcel_snapshot_thread_vp(s, marcel_snapshot_find_thread(s, t[i]));
	marcel_sched_snapshot_free(s);
}

/* Waits until every thread has stayed on one VP, each its own, for a few samples, and
 * returns those VPs in vp; fails after about 5 s. */
static void settled_vps(marcel_t *t, int n, int *vp)
{
	int prev[8], stable = 0;
	for (int tries = 0; tries < 1000 && stable < 5; tries++) {
		marcel_usleep(5000);
		thread_vps(t, n, vp);
		int ok = 1;
		for (int i = 0; i < n && ok; i++) {
			ok = vp[i] >= 0;
			for (int j = 0; j < i && ok; j++)
				ok = vp[i] != vp[j];
		}
		stable = ok && (stable == 0 || !memcmp(prev, vp, n * sizeof(int))) ? stable + 1 : 0;
		memcpy(prev, vp, n * sizeof(int));
	}
	char seen[256] = "";
	for (int i = 0; i < n; i++)
		snprintf(seen + strlen(seen), sizeof(seen) - strlen(seen), " %d", vp[i]);
	ck_assert_msg(stable >= 5, "threads never settled on one VP each (last seen on VPs%s)", seen);
}

static int node_of(int vp)
{
	return marcel_topo_vp_ancestor((unsigned)vp, MARCEL_LEVEL_NUMA);
}

static void finish(marcel_bubble_t *b, marcel_t *t, int n)
{
	__atomic_store_n(&ma_test_busy_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(marcel_join(t[i], NULL), 0);
	ck_assert_int_eq(marcel_bubble_join(b), 0);
	ck_assert_int_eq(marcel_bubble_destroy(b), 0);
}

static int pin_stop;

static any_t pinned_fn(any_t arg)
{
	(void)arg;
	unsigned long n = 0;
	while (!__atomic_load_n(&pin_stop, __ATOMIC_RELAXED))
		if (++n % 256 == 0)
			marcel_yield();
	return NULL;
}

/* Required: after marcel_bubble_shake_bubble(b), threads return to the VP they last ran on.
 * Threads pinned on VPs 1, 4 and 5 make the first placement skip VP 1 (node 0 is the
 * lighter node, and VP 1 is busy there); they end before the shakes, so a placement
 * that did not remember would now use VP 1. */
START_TEST(shake_returns_home)
{
	start_cache();
	__atomic_store_n(&pin_stop, 0, __ATOMIC_RELAXED);
	marcel_t pin[3];
	const unsigned pin_vp[3] = { 1, 4, 5 };
	for (int i = 0; i < 3; i++) {
		marcel_attr_t a = ma_test_attr_on_vp(pin_vp[i]);
		ck_assert_int_eq(marcel_create(&pin[i], &a, pinned_fn, NULL), 0);
	}
	marcel_usleep(10000);
	marcel_bubble_t b;
	marcel_t t[3];
	int home[3], now[3];
	make_bubble(&b, t, 3);
	ck_assert_int_eq(marcel_wake_up_bubble(&b), 0);
	settled_vps(t, 3, home);
	/* It never ran: whole on the lighter node, one free VP per thread. */
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(node_of(home[i]), node_of(1));
		ck_assert_int_ne(home[i], 1);
	}
	__atomic_store_n(&pin_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(marcel_join(pin[i], NULL), 0);
	for (int round = 0; round < 3; round++) {
		ck_assert_int_eq(marcel_bubble_shake_bubble(&b), 0);
		/* Gathered (its threads come back at their next yield), then placed again. */
		for (int tries = 0; tries < 1000 && marcel_bubble_status(&b) != MARCEL_BUBBLE_OPENED; tries++)
			marcel_usleep(1000);
		ck_assert_int_eq(marcel_bubble_status(&b), MARCEL_BUBBLE_OPENED);
		settled_vps(t, 3, now);
		for (int i = 0; i < 3; i++)
			ck_assert_msg(now[i] == home[i], "round %d: thread %d went to VP %d instead of VP %d", round, i,
				      now[i], home[i]);
	}
	long long last;
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(marcel_task_stats_get(t[i], MARCEL_STATS_LAST_VP, &last), 0);
		ck_assert_int_eq(last, home[i]);
	}
	finish(&b, t, 3);
	marcel_end();
}
END_TEST

/* Bubbles that never ran are balanced: each fits a node, so each goes whole to the
 * lighter one, one VP per thread. */
START_TEST(never_run_balanced)
{
	start_cache();
	marcel_bubble_t b1, b2;
	marcel_t t1[3], t2[3];
	int v1[3], v2[3];
	make_bubble(&b1, t1, 3);
	make_bubble(&b2, t2, 3);
	ck_assert_int_eq(marcel_wake_up_bubble(&b1), 0);
	ck_assert_int_eq(marcel_wake_up_bubble(&b2), 0);
	marcel_t all[6];
	memcpy(all, t1, sizeof(t1));
	memcpy(all + 3, t2, sizeof(t2));
	int v[6];
	settled_vps(all, 6, v);
	memcpy(v1, v, sizeof(v1));
	memcpy(v2, v + 3, sizeof(v2));
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(node_of(v1[i]), node_of(v1[0]));
		ck_assert_int_eq(node_of(v2[i]), node_of(v2[0]));
	}
	ck_assert_int_ne(node_of(v1[0]), node_of(v2[0]));
	finish(&b1, t1, 3);
	finish(&b2, t2, 3);
	marcel_end();
}
END_TEST

static marcel_bubble_t level;
static marcel_t level_t[2];

/* Wakes a bubble of two threads that never ran from VP 5 of a full machine, and returns
 * where they were sent (read before it yields: nothing else can have moved them). */
static any_t waker_fn(any_t arg)
{
	int *vp = arg;
	make_bubble(&level, level_t, 2);
	ck_assert_int_eq(marcel_wake_up_bubble(&level), 0);
	thread_vps(level_t, 2, vp);
	return NULL;
}

/* Required: when every VP is busy, a bubble that never ran goes whole to the VP of the
 * thread that woke it (a nested fork-join's level, whose joiner runs its seeds inline
 * from there), not to the first VP of the machine. */
START_TEST(full_machine_keeps_new_bubble_with_waker)
{
	start_cache();
	__atomic_store_n(&pin_stop, 0, __ATOMIC_RELAXED);
	marcel_t pin[7];
	for (unsigned v = 0, k = 0; v < 8; v++) {
		if (v == 5)
			continue;
		marcel_attr_t a = ma_test_attr_on_vp(v);
		ck_assert_int_eq(marcel_create(&pin[k++], &a, pinned_fn, NULL), 0);
	}
	marcel_usleep(10000);
	int vp[2] = { -1, -1 };
	marcel_attr_t a = ma_test_attr_on_vp(5);
	marcel_t w;
	ck_assert_int_eq(marcel_create(&w, &a, waker_fn, vp), 0);
	ck_assert_int_eq(marcel_join(w, NULL), 0);
	for (int i = 0; i < 2; i++)
		ck_assert_msg(vp[i] == 5, "thread %d of the new bubble went to VP %d, not to its waker's VP 5", i,
			      vp[i]);
	__atomic_store_n(&pin_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 7; i++)
		ck_assert_int_eq(marcel_join(pin[i], NULL), 0);
	finish(&level, level_t, 2);
	marcel_end();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("place_cache");
	TCase *tc = tcase_create("cache");
	tcase_add_test(tc, shake_returns_home);
	tcase_add_test(tc, never_run_balanced);
	tcase_add_test(tc, full_machine_keeps_new_bubble_with_waker);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return ma_test_run(s);
}
