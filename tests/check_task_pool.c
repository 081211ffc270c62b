/*
 * Thread descriptors' pools (marcel/task.c), white-box: a worker keeps a list it pops and
 * pushes and one spare list, and whole lists move to and from the shared pool, each with
 * its oldest entry known. A wrong count or a stale oldest entry would lose descriptors
 * (or link one twice) only after a burst larger than the lists, so each case counts every
 * descriptor after bursts of every size around the lists' bounds: the free ones in each
 * list, walked, must match the counts, and the free ones plus the live ones must be every
 * descriptor ever mapped. A second burst of a size must map nothing new.
 */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include "ma_check_run.h"
#include "ma_white.h"

static any_t nothing(any_t arg)
{
	return arg;
}

/* The length of list l, whose oldest entry must be tail (if l is not empty). */
static unsigned list_len(struct marcel_task *l, struct marcel_task *tail)
{
	unsigned n = 0;
	struct marcel_task *last = NULL;
	for (; l; l = l->pool_next, n++) {
		ck_assert_uint_eq(l->magic, MA_TASK_MAGIC);
		ck_assert_int_eq(atomic_load(&l->state), MA_TASK_FREE);
		last = l;
		ck_assert_uint_lt(n, 1u << 24);
	}
	if (last)
		ck_assert_ptr_eq(last, tail);
	return n;
}

static unsigned live_descriptors(void)
{
	unsigned live = 0;
	for (unsigned c = 0; c < ma_rt.nb_task_chunks; c++) {
		struct marcel_task *chunk = ma_rt.task_chunks[c];
		for (unsigned k = 0; k < MA_TASK_CHUNK; k++)
			live += atomic_load(&chunk[k].state) != MA_TASK_FREE;
	}
	return live;
}

/* Every descriptor is free but main's: counts and lists agree, nothing is lost. */
static void check_all_free(void)
{
	unsigned free_n = 0;
	ma_spin_lock(&ma_rt.pool_lock);
	unsigned shared = 0;
	for (struct marcel_task *t = ma_rt.tasks; t; t = t->pool_next)
		shared++;
	ck_assert_uint_eq(shared, ma_rt.nb_tasks);
	free_n += shared;
	ma_spin_unlock(&ma_rt.pool_lock);
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		struct ma_worker *w = &ma_rt.workers[v];
		ck_assert_uint_eq(list_len(w->tasks, w->tasks_tail), w->nb_tasks);
		ck_assert_uint_eq(list_len(w->spare_tasks, w->spare_tail), w->nb_spare_tasks);
		ck_assert_uint_le(w->nb_tasks, 128);
		ck_assert_uint_le(w->nb_spare_tasks, 129);
		free_n += w->nb_tasks + w->nb_spare_tasks;
	}
	unsigned live = live_descriptors();
	ck_assert_uint_eq(free_n + live, ma_rt.nb_task_chunks * MA_TASK_CHUNK);
	ck_assert_uint_le(live, 1); /* main, if its descriptor is a pool's */
}

static void burst(unsigned n)
{
	marcel_t *ts = malloc(n * sizeof(*ts));
	ck_assert_ptr_nonnull(ts);
	for (unsigned i = 0; i < n; i++)
		ck_assert_int_eq(marcel_create(&ts[i], NULL, nothing, (any_t)(uintptr_t)i), 0);
	for (unsigned i = 0; i < n; i++) {
		any_t r;
		ck_assert_int_eq(marcel_join(ts[i], &r), 0);
		ck_assert_uint_eq((uintptr_t)r, i);
	}
	free(ts);
}

START_TEST(bursts_lose_nothing)
{
	ma_white_start(NULL, "0", "1");
	static const unsigned sizes[] = { 1, 63, 64, 65, 127, 128, 129, 130, 255, 256, 257, 258, 300, 1000, 5000 };
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		burst(sizes[i]);
		check_all_free();
		unsigned chunks = ma_rt.nb_task_chunks;
		burst(sizes[i]);
		check_all_free();
		ck_assert_uint_eq(ma_rt.nb_task_chunks, chunks);
	}
	marcel_end();
}
END_TEST

/* Detached threads end and free their descriptors on whichever worker finishes them,
 * and kernel threads that are not marcel threads create too (their descriptors come from
 * and go to the shared pool). */
static atomic_uint ended;

static any_t count_end(any_t arg)
{
	atomic_fetch_add(&ended, 1);
	return arg;
}

static void *foreign(void *arg)
{
	(void)arg;
	for (int i = 0; i < 300; i++) {
		marcel_t t;
		ck_assert_int_eq(marcel_create(&t, NULL, nothing, NULL), 0);
		ck_assert_int_eq(marcel_join(t, NULL), 0);
	}
	return NULL;
}

START_TEST(detached_and_foreign)
{
	ma_white_start(NULL, "0", "2");
	atomic_store(&ended, 0);
	for (int i = 0; i < 2000; i++)
		ck_assert_int_eq(marcel_create(NULL, NULL, count_end, NULL), 0);
	pthread_t k;
	ck_assert_int_eq(pthread_create(&k, NULL, foreign, NULL), 0);
	ck_assert_int_eq(pthread_join(k, NULL), 0);
	for (int tries = 0; tries < 100000 && atomic_load(&ended) < 2000; tries++)
		marcel_yield();
	ck_assert_uint_eq(atomic_load(&ended), 2000);
	/* A detached thread's descriptor goes back once its worker has left it. */
	for (int tries = 0; tries < 100000 && live_descriptors() > 1; tries++)
		marcel_yield();
	check_all_free();
	marcel_end();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("task_pool");
	TCase *tc = tcase_create("task_pool");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, bursts_lose_nothing);
	tcase_add_test(tc, detached_and_foreign);
	suite_add_tcase(s, tc);
	return ma_check_run(s);
}
