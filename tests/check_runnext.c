/*
 * The runnext slot as the tail of a VP's own queue (white-box: links the static library
 * and reads the worker's slot).
 *
 * A new thread, and a yielding one, wait in their VP's runnext slot instead of its queue
 * when nothing queued there would run before them (ma_runnext_fits). What a program sees
 * must not change: each case runs on one VP and checks the order in which threads run
 * against the order a plain FIFO queue gives (worked out by hand in each case), and reads
 * the slot to check that the case went through it. The slot must not hide work from an
 * idle VP: with a second VP asleep, nothing waits there.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "ma_white.h"

/* What ran, in order: one letter per turn. */
static char order[64];
static unsigned nb_turns;

static void turn(char c)
{
	ck_assert_uint_lt(nb_turns, sizeof(order) - 1);
	order[nb_turns++] = c;
	order[nb_turns] = 0;
}

static void reset_order(void)
{
	nb_turns = 0;
	order[0] = 0;
}

static struct ma_worker *vp0(void)
{
	return &ma_rt.workers[0];
}

static any_t log_once(any_t arg)
{
	turn((char)(uintptr_t)arg);
	return arg;
}

/* Threads made one after the other, then joined: they run in the order they were made.
 * The first waits in the slot, the others in the queue. */
START_TEST(test_create_order)
{
	ma_white_start(NULL, "0", "1");
	reset_order();
	marcel_t t[5];
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(marcel_create(&t[i], NULL, log_once, (any_t)(uintptr_t)('a' + i)), 0);
	ck_assert_ptr_eq(vp0()->runnext, t[0]);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(marcel_join(t[i], NULL), 0);
	ck_assert_str_eq(order, "abcde");
	ck_assert_ptr_null(vp0()->runnext);
	marcel_end();
}
END_TEST

struct pinger {
	char name;
	int rounds;
	int spawn_at;    /* the round at which it makes `late`, -1 never */
	marcel_t late;
	int saw_slot;    /* times it found the other thread in the slot after its yield */
};

static any_t ping(any_t arg)
{
	struct pinger *p = arg;
	for (int i = 0; i < p->rounds; i++) {
		turn(p->name);
		if (i == p->spawn_at)
			ck_assert_int_eq(marcel_create(&p->late, NULL, log_once, (any_t)(uintptr_t)'C'), 0);
		marcel_yield();
		p->saw_slot += vp0()->runnext != NULL;
	}
	if (p->spawn_at >= 0)
		ck_assert_int_eq(marcel_join(p->late, NULL), 0);
	return NULL;
}

/* Makes the n pingers' threads in order, then joins them. */
static void run_pingers(struct pinger *p, int n)
{
	marcel_t t[3];
	ck_assert_int_le(n, 3);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(marcel_create(&t[i], NULL, ping, &p[i]), 0);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(marcel_join(t[i], NULL), 0);
}

/* Two threads yielding to each other alternate, and swap through the slot. */
START_TEST(test_yield_pair)
{
	ma_white_start(NULL, "0", "1");
	reset_order();
	struct pinger p[2] = { { 'A', 6, -1, NULL, 0 }, { 'B', 6, -1, NULL, 0 } };
	run_pingers(p, 2);
	ck_assert_str_eq(order, "ABABABABABAB");
	/* From B's first yield on, each thread resumes with the other one waiting in the
	 * slot (the slot, not the queue, carries the pair). */
	ck_assert_int_ge(p[0].saw_slot + p[1].saw_slot, 8);
	marcel_end();
}
END_TEST

/* Three threads yielding take turns: the slot never lets two of them starve the third. */
START_TEST(test_yield_three)
{
	ma_white_start(NULL, "0", "1");
	reset_order();
	struct pinger p[3] = { { 'A', 4, -1, NULL, 0 }, { 'B', 4, -1, NULL, 0 }, { 'C', 4, -1, NULL, 0 } };
	run_pingers(p, 3);
	ck_assert_str_eq(order, "ABCABCABCABC");
	marcel_end();
}
END_TEST

/* A thread made while the pair swaps through the slot goes behind the one in the slot
 * and ahead of the one yielding, as in a FIFO queue: A0 B0 A1 (makes C) B1 C A2 B2. */
START_TEST(test_yield_late_arrival)
{
	ma_white_start(NULL, "0", "1");
	reset_order();
	struct pinger p[2] = { { 'A', 3, 1, NULL, 0 }, { 'B', 3, -1, NULL, 0 } };
	run_pingers(p, 2);
	ck_assert_str_eq(order, "ABABCAB");
	marcel_end();
}
END_TEST

/* A more urgent thread queued behind the slot is not passed by the slot's thread, at a
 * yield as at a block. */
static any_t make_urgent(any_t arg)
{
	marcel_t *x = arg;
	turn('M');
	/* X waits in the slot (nothing queued), U in the queue (the slot is taken). */
	ck_assert_int_eq(marcel_create(&x[0], NULL, log_once, (any_t)(uintptr_t)'X'), 0);
	ck_assert_ptr_eq(vp0()->runnext, x[0]);
	marcel_attr_t at;
	ck_assert_int_eq(marcel_attr_init(&at), 0);
	ck_assert_int_eq(marcel_attr_setprio(&at, MA_DEF_PRIO - 1), 0);
	ck_assert_int_eq(marcel_create(&x[1], &at, log_once, (any_t)(uintptr_t)'U'), 0);
	ck_assert_ptr_eq(vp0()->runnext, x[0]);
	marcel_yield();
	turn('m');
	return NULL;
}

START_TEST(test_urgent_first)
{
	ma_white_start(NULL, "0", "1");
	reset_order();
	marcel_t tm, x[2];
	ck_assert_int_eq(marcel_create(&tm, NULL, make_urgent, x), 0);
	ck_assert_int_eq(marcel_join(tm, NULL), 0);
	ck_assert_int_eq(marcel_join(x[0], NULL), 0);
	ck_assert_int_eq(marcel_join(x[1], NULL), 0);
	/* M's yield goes to U, the most urgent; then X, which was ahead of M. */
	ck_assert_str_eq(order, "MUXm");
	marcel_end();
}
END_TEST

/* marcel_yield_to reaches a thread waiting in the slot. Y runs first (from the slot), T
 * is queued; Y's yield runs T and leaves Y in the slot; T's yield runs Y and leaves T in
 * the slot, where Y's yield_to must find it. */
static marcel_t target;

static any_t target_fn(any_t arg)
{
	(void)arg;
	turn('T');
	marcel_yield();
	turn('t');
	return NULL;
}

static any_t yield_to_slot(any_t arg)
{
	(void)arg;
	turn('Y');
	marcel_yield();
	ck_assert_ptr_eq(vp0()->runnext, target);
	ck_assert_int_eq(marcel_yield_to(target), 0);
	turn('y');
	return NULL;
}

START_TEST(test_yield_to_slot)
{
	ma_white_start(NULL, "0", "1");
	reset_order();
	marcel_t ty;
	ck_assert_int_eq(marcel_create(&ty, NULL, yield_to_slot, NULL), 0);
	ck_assert_int_eq(marcel_create(&target, NULL, target_fn, NULL), 0);
	ck_assert_int_eq(marcel_join(ty, NULL), 0);
	ck_assert_int_eq(marcel_join(target, NULL), 0);
	ck_assert_str_eq(order, "YTty");
	marcel_end();
}
END_TEST

/* With another VP idle, new threads are queued where that VP's strategy can see them. */
START_TEST(test_idle_vp_sees_work)
{
	ma_white_start("pu:2", "0", "2");
	ma_white_wait_sleeping();
	ck_assert_uint_ge(atomic_load(&ma_rt.nb_idle), 1);
	marcel_attr_t at;
	ck_assert_int_eq(marcel_attr_init(&at), 0);
	marcel_vpset_t own;
	marcel_vpset_zero(&own);
	marcel_vpset_set(&own, 0);
	ck_assert_int_eq(marcel_attr_setvpset(&at, own), 0);
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, &at, log_once, (any_t)(uintptr_t)'x'), 0);
	ck_assert_ptr_null(vp0()->runnext);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	marcel_end();
}
END_TEST

/* The load estimates count the thread in the slot. */
START_TEST(test_slot_counted)
{
	ma_white_start(NULL, "0", "1");
	unsigned before = ma_worker_nr_ready(vp0());
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, NULL, log_once, (any_t)(uintptr_t)'x'), 0);
	ck_assert_ptr_eq(vp0()->runnext, t);
	ck_assert_uint_eq(ma_worker_nr_ready(vp0()), before + 1);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_uint_eq(ma_worker_nr_ready(vp0()), before);
	marcel_end();
}
END_TEST

static Suite *runnext_suite(void)
{
	Suite *s = suite_create("runnext");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_create_order);
	tcase_add_test(tc, test_yield_pair);
	tcase_add_test(tc, test_yield_three);
	tcase_add_test(tc, test_yield_late_arrival);
	tcase_add_test(tc, test_urgent_first);
	tcase_add_test(tc, test_yield_to_slot);
	tcase_add_test(tc, test_idle_vp_sees_work);
	tcase_add_test(tc, test_slot_counted);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(runnext_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
