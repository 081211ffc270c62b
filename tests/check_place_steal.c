/*
 * The steal strategy on the synthetic machine "numa:2 core:4" (two nodes of four cores),
 * seen through snapshots: all the work starts on one node, and the idle VPs of the other
 * take a whole sub-bubble, after which nothing moves back and forth.
 */
#include <errno.h>
#include "ma_test.h"

#define NB 4


static marcel_bubble_t outer, sub[2];
static marcel_t th[2][NB];

/* Runs on VP 0: builds the tree and wakes it from there, so it starts on VP 0's node. */
static any_t waker_fn(any_t arg)
{
	(void)arg;
	ck_assert_int_eq(marcel_bubble_init(&outer), 0);
	ck_assert_int_eq(marcel_bubble_setschedlevel(&outer, MARCEL_LEVEL_NUMA), 0);
	for (int i = 0; i < 2; i++) {
		marcel_attr_t a;
		ck_assert_int_eq(marcel_bubble_init(&sub[i]), 0);
		ck_assert_int_eq(marcel_bubble_insertbubble(&outer, &sub[i]), 0);
		ck_assert_int_eq(marcel_attr_init(&a), 0);
		ck_assert_int_eq(marcel_attr_setnaturalbubble(&a, &sub[i]), 0);
		for (int k = 0; k < NB; k++)
			ck_assert_int_eq(marcel_create(&th[i][k], &a, ma_test_busy, NULL), 0);
	}
	ck_assert_int_eq(marcel_wake_up_bubble(&outer), 0);
	return NULL;
}

/* The NUMA node (item) queue q lies under, -1 if none (the machine's queue). */
static int queue_node(const struct marcel_snapshot *s, int q)
{
	for (; q >= 0; q = s->queues[q].parent)
		if (s->queues[q].vp < 0 && (s->queues[q].kinds & MARCEL_LEVEL_NUMA))
			return s->queues[q].item;
	return -1;
}

/* The node all of sub-bubble i's threads are scheduled under, -1 if they are not under
 * a single one. */
static int sub_node(const struct marcel_snapshot *s, int i)
{
	int node = -2;
	for (int k = 0; k < NB; k++) {
		int e = marcel_snapshot_find_thread(s, th[i][k]);
		ck_assert_int_ge(e, 0);
		int n = queue_node(s, s->entities[e].queue);
		if (n < 0 || (node != -2 && n != node))
			return -1;
		node = n;
	}
	return node;
}

/* Whether the two sub-bubbles are each under one node, different ones; if not and
 * `show`, prints the snapshot (for the failure message's reader). */
static int split(int show)
{
	struct marcel_snapshot *s = marcel_sched_snapshot();
	ck_assert_ptr_nonnull(s);
	int n0 = sub_node(s, 0), n1 = sub_node(s, 1), ok = n0 >= 0 && n1 >= 0 && n0 != n1;
	if (!ok && show)
		marcel_sched_snapshot_write_json(s, stderr);
	marcel_sched_snapshot_free(s);
	return ok;
}

/* Required: the idle node steals a whole sub-bubble, and it stays there. */
START_TEST(idle_node_steals_bubble)
{
	ma_test_init_with("numa:2 core:4", "steal");
	ck_assert_int_eq(marcel_bubble_sched_begin(), 0);
	__atomic_store_n(&ma_test_busy_stop, 0, __ATOMIC_RELAXED);
	marcel_attr_t a = ma_test_attr_on_vp(0);
	marcel_t w;
	ck_assert_int_eq(marcel_create(&w, &a, waker_fn, NULL), 0);
	ck_assert_int_eq(marcel_join(w, NULL), 0);
	/* The outer bubble went to VP 0's node, closed. */
	int tries = 0;
	while (tries++ < 1000 && !split(tries == 1000))
		marcel_usleep(5000);
	ck_assert_msg(tries <= 1000, "the sub-bubbles never ended up on different nodes");
	/* And no thrashing: they stay put. */
	for (int i = 0; i < 20; i++) {
		marcel_usleep(5000);
		ck_assert_msg(split(1), "a sub-bubble left its node (sample %d)", i);
	}
	__atomic_store_n(&ma_test_busy_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < NB; k++)
			ck_assert_int_eq(marcel_join(th[i][k], NULL), 0);
	ck_assert_int_eq(marcel_bubble_join(&outer), 0);
	marcel_end();
}
END_TEST

/* Single threads too: eight threads queued on one VP's queue are spread by the idle
 * VPs, nearest first, until no VP has more than one. */
static any_t spawn_fn(any_t arg)
{
	marcel_t *t = arg;
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setinheritholder(&a, 1), 0);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(marcel_create(&t[i], &a, ma_test_busy, NULL), 0);
	return NULL;
}

START_TEST(idle_vps_steal_threads)
{
	ma_test_init_with("numa:2 core:4", "steal");
	__atomic_store_n(&ma_test_busy_stop, 0, __ATOMIC_RELAXED);
	marcel_t t[8], w;
	marcel_bubble_t b;
	/* A closed bubble on VP 3's own queue: only VP 3 serves it... */
	ck_assert_int_eq(marcel_bubble_init(&b), 0);
	ck_assert_int_eq(marcel_bubble_scheduleonlevel(&b, (unsigned)marcel_topo_vp_item(3)), 0);
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setnaturalbubble(&a, &b), 0);
	ck_assert_int_eq(marcel_create(&w, &a, spawn_fn, t), 0);
	ck_assert_int_eq(marcel_wake_up_bubble(&b), 0);
	ck_assert_int_eq(marcel_join(w, NULL), 0);
	/* ... and burst there (it is pinned), its threads queued on Core3's queue: the other
	 * VPs take them one by one, VP by VP. */
	int spread = 0;
	for (int tries = 0; tries < 1000 && !spread; tries++) {
		marcel_usleep(5000);
		struct marcel_snapshot *s = marcel_sched_snapshot();
		ck_assert_ptr_nonnull(s);
		int per_vp[64] = { 0 }, ok = 1;
		for (int i = 0; i < 8 && ok; i++) {
			int vp = marcel_snapshot_thread_vp(s, marcel_snapshot_find_thread(s, t[i]));
			ok = vp >= 0 && ++per_vp[vp] == 1;
		}
		spread = ok;
		marcel_sched_snapshot_free(s);
	}
	ck_assert_msg(spread, "eight busy threads never spread one per VP");
	__atomic_store_n(&ma_test_busy_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(marcel_join(t[i], NULL), 0);
	ck_assert_int_eq(marcel_bubble_join(&b), 0);
	marcel_end();
}
END_TEST

/* Threads a bubble had to lend out come back once their side has room. */
#define NS 6
static int stray_stop[NS];

/* The live (not stopped) threads among t[0..n), returned, and how many of them are
 * scheduled under VP 0's NUMA node (*home; on[i] says which). */
static int count_at_home(const marcel_t *t, int n, int *home, int *on)
{
	struct marcel_snapshot *s = marcel_sched_snapshot();
	ck_assert_ptr_nonnull(s);
	int node = -1, live = 0;
	for (unsigned q = 0; q < s->nb_queues && node < 0; q++)
		if (s->queues[q].vp == 0)
			node = queue_node(s, (int)q);
	ck_assert_int_ge(node, 0);
	*home = 0;
	for (int i = 0; i < n; i++) {
		on[i] = 0;
		if (__atomic_load_n(&stray_stop[i], __ATOMIC_RELAXED))
			continue;
		int e = marcel_snapshot_find_thread(s, t[i]);
		ck_assert_int_ge(e, 0);
		live++;
		on[i] = queue_node(s, s->entities[e].queue) == node;
		*home += on[i];
	}
	marcel_sched_snapshot_free(s);
	return live;
}

static marcel_bubble_t stray_b;
static marcel_t stray_t[NS];

/* Runs on VP 0, so that the bubble starts on VP 0's node. */
static any_t stray_waker(any_t arg)
{
	(void)arg;
	ck_assert_int_eq(marcel_bubble_init(&stray_b), 0);
	ck_assert_int_eq(marcel_bubble_setschedlevel(&stray_b, MARCEL_LEVEL_NUMA), 0);
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setnaturalbubble(&a, &stray_b), 0);
	for (int i = 0; i < NS; i++) {
		__atomic_store_n(&stray_stop[i], 0, __ATOMIC_RELAXED);
		ck_assert_int_eq(marcel_create(&stray_t[i], &a, ma_test_busy_flag, &stray_stop[i]), 0);
	}
	ck_assert_int_eq(marcel_wake_up_bubble(&stray_b), 0);
	return NULL;
}

/* Six busy threads of one bubble on a node of four VPs: too many for any node, it bursts
 * there, and the idle node borrows two of them. Once two of the four left at home end,
 * home has room again and the borrowed threads go back beside their bubble's others:
 * nothing else would bring them back, since where they are each of them has a VP. */
START_TEST(strays_go_home)
{
	ma_test_init_with("numa:2 core:4", "steal");
	ck_assert_int_eq(marcel_bubble_sched_begin(), 0);
	marcel_t *t = stray_t;
	marcel_attr_t wa = ma_test_attr_on_vp(0);
	marcel_t w;
	ck_assert_int_eq(marcel_create(&w, &wa, stray_waker, NULL), 0);
	ck_assert_int_eq(marcel_join(w, NULL), 0);
	int on[NS], under = 0, tries = 0;
	while (tries++ < 1000) {
		count_at_home(t, NS, &under, on);
		if (under <= NS - 2)
			break;
		marcel_usleep(5000);
	}
	ck_assert_msg(under <= NS - 2, "node 1 never borrowed threads (%d of %d on node 0)", under, NS);
	/* Two of those still at home end. */
	for (int i = 0, ended = 0; i < NS && ended < 2; i++)
		if (on[i]) {
			__atomic_store_n(&stray_stop[i], 1, __ATOMIC_RELAXED);
			ck_assert_int_eq(marcel_join(t[i], NULL), 0);
			ended++;
		}
	int live = 0;
	for (tries = 0; tries < 1000; tries++) {
		live = count_at_home(t, NS, &under, on);
		if (under == live)
			break;
		marcel_usleep(5000);
	}
	ck_assert_msg(under == live, "only %d of the %d threads left came back to node 0", under, live);
	for (int i = 0; i < NS; i++)
		if (!__atomic_load_n(&stray_stop[i], __ATOMIC_RELAXED)) {
			__atomic_store_n(&stray_stop[i], 1, __ATOMIC_RELAXED);
			ck_assert_int_eq(marcel_join(t[i], NULL), 0);
		}
	ck_assert_int_eq(marcel_bubble_join(&stray_b), 0);
	marcel_end();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("place_steal");
	TCase *tc = tcase_create("steal");
	tcase_add_test(tc, idle_node_steals_bubble);
	tcase_add_test(tc, idle_vps_steal_threads);
	tcase_add_test(tc, strays_go_home);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return ma_test_run(s);
}
