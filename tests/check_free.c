/*
 * Threads outside the bubble tree (bubbles/free.c): a program that names no bubble keeps
 * its threads out of it under the strategies that allow it, and the first look at the
 * tree (a bubble, a snapshot, another strategy, the root named) puts every live one into
 * the root bubble, also while threads are being created and are ending on other VPs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ma_test.h"
#include "ma_bubble.h"
#include "ma_hooks.h"

static marcel_sem_t go;

static any_t wait_go(any_t arg)
{
	marcel_sem_wait(&go);
	return arg;
}

static any_t nothing(any_t arg)
{
	return arg;
}

/* The root's thread members, each checked alive. */
static unsigned root_threads(void)
{
	struct ma_bubble *r = ma_root_bubble;
	unsigned n = 0;
	ma_tree_lock();
	ma_spin_lock(&r->hold.lock);
	ma_list_for_each_entry(struct ma_entity, m, &r->members, member_node) {
		if (m->type != MA_TASK_ENTITY)
			continue;
		int st = atomic_load(&ma_task_of_entity(m)->state);
		ck_assert_msg(st != MA_TASK_FREE && st != MA_TASK_DEAD, "a root member in state %d", st);
		n++;
	}
	ma_spin_unlock(&r->hold.lock);
	ma_tree_unlock();
	return n;
}

START_TEST(free_until_a_bubble)
{
	ma_test_init_with(NULL, "burst");
	ck_assert_int_eq(atomic_load(&ma_free_gate.closed), 0);
	marcel_sem_init(&go, 0);
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, NULL, wait_go, (any_t)7), 0);
	/* Outside the tree, yet the root's, as every thread that names no bubble. */
	ck_assert_ptr_null(ma_entity_parent(&t->e));
	ck_assert_ptr_eq(marcel_bubble_holding_task(t), &marcel_root_bubble);
	ck_assert_uint_eq(root_threads(), 1); /* main */
	marcel_bubble_t b;
	ck_assert_int_eq(marcel_bubble_init(&b), 0);
	ck_assert_int_eq(atomic_load(&ma_free_gate.closed), 1);
	ck_assert_ptr_eq(ma_entity_parent(&t->e), ma_root_bubble);
	ck_assert_uint_eq(root_threads(), 2);
	/* From now on creations go into the tree: main's children bubble. */
	marcel_t u;
	ck_assert_int_eq(marcel_create(&u, NULL, wait_go, (any_t)8), 0);
	struct ma_bubble *p = ma_entity_parent(&u->e);
	ck_assert(p && p->implicit && ma_entity_parent(&p->e) == ma_root_bubble);
	marcel_sem_post(&go);
	marcel_sem_post(&go);
	any_t r;
	ck_assert_int_eq(marcel_join(t, &r), 0);
	ck_assert_ptr_eq(r, (any_t)7);
	ck_assert_int_eq(marcel_join(u, &r), 0);
	ck_assert_ptr_eq(r, (any_t)8);
	ck_assert_uint_eq(root_threads(), 1);
	ck_assert_int_eq(marcel_bubble_destroy(&b), 0);
	marcel_sem_destroy(&go);
	marcel_end();
}
END_TEST

/* Strategies whose hooks read the root's members want the tree from the start; a switch
 * to one adopts the free threads. */
START_TEST(strategies_that_look)
{
	ma_test_init_with(NULL, "spread");
	ck_assert_int_eq(atomic_load(&ma_free_gate.closed), 1);
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, NULL, nothing, NULL), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	marcel_end();

	ma_test_init_with(NULL, "null");
	ck_assert_int_eq(atomic_load(&ma_free_gate.closed), 0);
	marcel_sem_init(&go, 0);
	ck_assert_int_eq(marcel_create(&t, NULL, wait_go, NULL), 0);
	ck_assert_ptr_null(ma_entity_parent(&t->e));
	ck_assert_ptr_nonnull(marcel_bubble_change_sched(marcel_lookup_bubble_scheduler("cache")));
	ck_assert_ptr_eq(ma_entity_parent(&t->e), ma_root_bubble);
	marcel_sem_post(&go);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_uint_eq(root_threads(), 1);
	marcel_sem_destroy(&go);
	marcel_end();
}
END_TEST

/* A snapshot shows every thread: it puts the free ones into the tree first. */
START_TEST(snapshot_looks)
{
	ma_test_init_with(NULL, "burst");
	marcel_sem_init(&go, 0);
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, NULL, wait_go, NULL), 0);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(marcel_sched_snapshot_json(f), 0);
	fclose(f);
	ck_assert_ptr_eq(ma_entity_parent(&t->e), ma_root_bubble);
	char id[64];
	snprintf(id, sizeof(id), "%llu", (unsigned long long)t->id);
	ck_assert_msg(strstr(buf, id), "thread %s missing from the snapshot", id);
	free(buf);
	marcel_sem_post(&go);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	marcel_sem_destroy(&go);
	marcel_end();
}
END_TEST

/* Created not started: a free thread starts when woken, and one adopted meanwhile starts
 * as the root's member (the root no longer counts it as waiting). */
START_TEST(dontsched)
{
	ma_test_init_with(NULL, "burst");
	marcel_t t, u;
	ck_assert_int_eq(marcel_create_dontsched(&t, NULL, nothing, (any_t)1), 0);
	ck_assert_ptr_null(ma_entity_parent(&t->e));
	ck_assert_int_eq(marcel_wake_up_created_thread(t), 0);
	ck_assert_int_eq(marcel_wake_up_created_thread(t), EINVAL);
	ck_assert_int_eq(marcel_create_dontsched(&u, NULL, nothing, (any_t)2), 0);
	marcel_bubble_t b;
	ck_assert_int_eq(marcel_bubble_init(&b), 0);
	ck_assert_ptr_eq(ma_entity_parent(&u->e), ma_root_bubble);
	ck_assert_uint_eq(ma_root_bubble->unit.nb_born, 1);
	ck_assert_int_eq(marcel_wake_up_created_thread(u), 0);
	ck_assert_uint_eq(ma_root_bubble->unit.nb_born, 0);
	any_t r;
	ck_assert_int_eq(marcel_join(t, &r), 0);
	ck_assert_ptr_eq(r, (any_t)1);
	ck_assert_int_eq(marcel_join(u, &r), 0);
	ck_assert_ptr_eq(r, (any_t)2);
	ck_assert_int_eq(marcel_bubble_destroy(&b), 0);
	marcel_end();
}
END_TEST

/* The first look while another VP creates and ends threads as fast as it can, joined and
 * detached: afterwards the root holds exactly the live threads, and none once they end. */
static atomic_int stop;
static atomic_uint churned;

static any_t churn(any_t arg)
{
	(void)arg;
	unsigned n = 0;
	while (!atomic_load(&stop)) {
		marcel_t t;
		ck_assert_int_eq(marcel_create(&t, NULL, nothing, NULL), 0);
		if (n++ % 2)
			ck_assert_int_eq(marcel_detach(t), 0);
		else
			ck_assert_int_eq(marcel_join(t, NULL), 0);
		ck_assert_int_eq(marcel_create(NULL, NULL, nothing, NULL), 0);
		atomic_fetch_add(&churned, 1);
	}
	return (any_t)(uintptr_t)n;
}

START_TEST(first_look_races)
{
	for (int round = 0; round < 20; round++) {
		ma_test_init_with("pack:1 core:2 pu:1", "burst");
		atomic_store(&stop, 0);
		marcel_attr_t a = ma_test_attr_on_vp(1);
		marcel_t c;
		ck_assert_int_eq(marcel_create(&c, &a, churn, NULL), 0);
		/* Let it run for a varying while, then look. */
		atomic_store(&churned, 0);
		while (atomic_load(&churned) < (unsigned)round * 20 + 1)
			marcel_yield();
		marcel_bubble_t b;
		ck_assert_int_eq(marcel_bubble_init(&b), 0);
		unsigned during = root_threads();
		ck_assert_uint_ge(during, 2); /* main and the churner, at least */
		unsigned then = atomic_load(&churned);
		while (atomic_load(&churned) < then + 100)
			marcel_yield();
		atomic_store(&stop, 1);
		any_t n;
		ck_assert_int_eq(marcel_join(c, &n), 0);
		ck_assert_uint_gt((uintptr_t)n, 0);
		/* Detached threads may still be ending: each leaves the root as it does. */
		for (int i = 0; i < 10000 && root_threads() > 1; i++)
			marcel_yield();
		ck_assert_uint_eq(root_threads(), 1);
		ck_assert_int_eq(marcel_bubble_destroy(&b), 0);
		marcel_attr_destroy(&a);
		marcel_end();
	}
}
END_TEST

/* The adopt_free hook, as a creation calls it when it sees the gate closed after it
 * published its thread: the close's walk may or may not have found that thread. Here the
 * gate is closed by hand, without a walk (the walk missed it): the hook puts the thread
 * into the root, once; a second call (the walk found it) changes nothing; and the
 * thread's end takes it out again, through the task_end hook now that the gate is shut.
 * The race itself is a few instructions wide and is left to first_look_races. */
START_TEST(late_adoption)
{
	ma_test_init_with(NULL, "burst");
	marcel_sem_init(&go, 0);
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, NULL, wait_go, (any_t)5), 0);
	ck_assert_ptr_null(ma_entity_parent(&t->e));
	ma_tree_lock();
	atomic_store(&ma_free_gate.closed, 1);
	ma_tree_unlock();
	ck_assert_uint_eq(root_threads(), 1); /* main only: nothing walked */
	ma_hooks.adopt_free(t);
	ck_assert_ptr_eq(ma_entity_parent(&t->e), ma_root_bubble);
	ck_assert_uint_eq(root_threads(), 2);
	ma_hooks.adopt_free(t);
	ck_assert_uint_eq(root_threads(), 2);
	marcel_sem_post(&go);
	any_t r;
	ck_assert_int_eq(marcel_join(t, &r), 0);
	ck_assert_ptr_eq(r, (any_t)5);
	ck_assert_uint_eq(root_threads(), 1);
	/* And the gate stays shut: a new thread goes into the tree. */
	ck_assert_int_eq(marcel_create(&t, NULL, nothing, NULL), 0);
	ck_assert_ptr_nonnull(ma_entity_parent(&t->e));
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	marcel_sem_destroy(&go);
	marcel_end();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("free");
	TCase *tc = tcase_create("free");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, free_until_a_bubble);
	tcase_add_test(tc, strategies_that_look);
	tcase_add_test(tc, snapshot_looks);
	tcase_add_test(tc, dontsched);
	tcase_add_test(tc, first_look_races);
	tcase_add_test(tc, late_adoption);
	suite_add_tcase(s, tc);
	return ma_test_run(s);
}
