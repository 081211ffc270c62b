/*
 * The path summary and the path index (white-box: links the static library and reads the
 * runtime's internals).
 *
 * For several machines (this one with one VP; synthetic ones with SMT, with more VPs than
 * a summary covers, and with more VPs than processing units, whose VP map wraps):
 * - ma_path_index, which finds a queue's place in a path from its depth, agrees with a
 *   search of the path, for every worker and every queue;
 * - a worker's summary is full exactly when every queue of its path is seen by at most
 *   MA_SUMMARY_VPS workers and the path fits in MA_SUMMARY_LEVELS;
 * - after each of a few thousand random enqueues and dequeues of entities of random
 *   priorities on random queues, every full summary shows each queue's best priority,
 *   and a scan through the summary picks what a scan of the bitmaps picks (the queue, its
 *   priority, the farthest tie), for every bound on the priority.
 * The entities queued are stand-ins that nothing may run: every VP but ours is disabled and asleep
 * first, and ours runs only this test's code between the queueing and the emptying.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ma_white.h"

#define NB_ENTITIES 64

/* VPs 1.. (every VP but ours). */
static void other_vps(marcel_vpset_t *set)
{
	marcel_vpset_zero(set);
	for (unsigned v = 1; v < marcel_nbvps(); v++)
		marcel_vpset_set(set, v);
}

/* Disables every VP but 0 and waits until each sleeps: from then on none takes anything
 * from a queue (find_next returns at once on a disabled VP). */
static void quiet_other_vps(void)
{
	if (marcel_nbvps() == 1)
		return;
	marcel_vpset_t set;
	other_vps(&set);
	ck_assert_int_eq(marcel_disable_vps(&set), 0);
	ma_white_wait_sleeping();
}

static void wake_other_vps(void)
{
	if (marcel_nbvps() == 1)
		return;
	marcel_vpset_t set;
	other_vps(&set);
	ck_assert_int_eq(marcel_enable_vps(&set), 0);
}

/* Every queue: the topology items' and each VP's own. */
static unsigned all_queues(struct ma_runqueue **out)
{
	unsigned n = 0;
	for (unsigned i = 0; i < ma_rt.topo.nb_levels; i++)
		out[n++] = &ma_rt.rqs[i];
	for (unsigned v = 0; v < ma_rt.nb_vps; v++)
		out[n++] = &ma_rt.workers[v].rq;
	return n;
}

static int searched_index(const struct ma_worker *w, const struct ma_runqueue *rq)
{
	for (unsigned i = 0; i < w->path_len; i++)
		if (w->path[i] == rq)
			return (int)i;
	return -1;
}

static unsigned seen_by(const struct ma_runqueue *rq)
{
	unsigned n = 0;
	for (unsigned v = 0; v < ma_rt.nb_vps; v++)
		n += searched_index(&ma_rt.workers[v], rq) >= 0;
	return n;
}

static void check_path_index_and_fullness(void)
{
	struct ma_runqueue **qs = malloc((ma_rt.topo.nb_levels + ma_rt.nb_vps) * sizeof(*qs));
	ck_assert_ptr_nonnull(qs);
	unsigned nq = all_queues(qs);
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		const struct ma_worker *w = &ma_rt.workers[v];
		int full = w->path_len <= MA_SUMMARY_LEVELS;
		for (unsigned q = 0; q < nq; q++)
			ck_assert_msg(ma_path_index(w, qs[q]) == searched_index(w, qs[q]),
				      "VP%u, queue %s: path index %d, searched %d", v, qs[q]->name,
				      ma_path_index(w, qs[q]), searched_index(w, qs[q]));
		for (unsigned i = 0; i < w->path_len; i++)
			full = full && seen_by(w->path[i]) <= MA_SUMMARY_VPS;
		ck_assert_msg(w->summary_full == full, "VP%u: summary_full %d, expected %d", v, w->summary_full, full);
	}
	free(qs);
}

/* The scan of the bitmaps, as the library does when a summary is not full. */
static struct ma_runqueue *reference_scan(const struct ma_worker *w, int worst_prio, int *prio,
					  struct ma_runqueue **far)
{
	struct ma_runqueue *best = NULL;
	int best_prio = worst_prio + 1;
	*far = NULL;
	for (unsigned i = 0; i < w->path_len; i++) {
		uint64_t bm = atomic_load(&w->path[i]->bitmap);
		if (!bm)
			continue;
		int p = __builtin_ctzll(bm);
		if (p < best_prio) {
			best_prio = p;
			best = w->path[i];
			*far = NULL;
		} else if (p == best_prio && best) {
			*far = w->path[i];
		}
	}
	*prio = best_prio;
	return best;
}

static void check_summaries(unsigned op)
{
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		const struct ma_worker *w = &ma_rt.workers[v];
		if (!w->summary_full)
			continue;
		for (unsigned i = 0; i < w->path_len; i++) {
			uint64_t bm = atomic_load(&w->path[i]->bitmap);
			unsigned want = bm ? (unsigned)__builtin_ctzll(bm) + 1 : 0;
			ck_assert_msg(w->summary[i] == want, "op %u, VP%u, path[%u] %s: summary byte %u, best priority + 1 %u",
				      op, v, i, w->path[i]->name, w->summary[i], want);
		}
		for (int worst = -1; worst < MA_MAX_PRIO; worst++) {
			int p1, p2;
			struct ma_runqueue *f1, *f2;
			struct ma_runqueue *b1 = ma_scan_path(w, worst, &p1, &f1);
			struct ma_runqueue *b2 = reference_scan(w, worst, &p2, &f2);
			ck_assert_msg(b1 == b2 && p1 == p2 && f1 == f2,
				      "op %u, VP%u, worst %d: summary picks %s/%d (far %s), bitmaps %s/%d (far %s)", op, v,
				      worst, b1 ? b1->name : "-", p1, f1 ? f1->name : "-", b2 ? b2->name : "-", p2,
				      f2 ? f2->name : "-");
		}
	}
}

static void random_queueing(unsigned seed)
{
	struct ma_runqueue **qs = malloc((ma_rt.topo.nb_levels + ma_rt.nb_vps) * sizeof(*qs));
	ck_assert_ptr_nonnull(qs);
	unsigned nq = all_queues(qs);
	static struct ma_entity ents[NB_ENTITIES];
	struct ma_runqueue *where[NB_ENTITIES] = { 0 };
	memset(ents, 0, sizeof(ents));
	for (unsigned k = 0; k < NB_ENTITIES; k++)
		ents[k].type = MA_TASK_ENTITY;
	srand(seed);
	for (unsigned op = 0; op < 3000; op++) {
		unsigned k = (unsigned)rand() % NB_ENTITIES;
		if (where[k]) {
			ma_spin_lock(&where[k]->hold.lock);
			ma_rq_dequeue_locked(where[k], &ents[k]);
			ma_spin_unlock(&where[k]->hold.lock);
			where[k] = NULL;
		} else {
			/* Few priorities, so that ties between queues are frequent. */
			static const int prios[] = { 0, 1, MA_DEF_PRIO, MA_DEF_PRIO, MA_DEF_PRIO, MA_MAX_PRIO - 1 };
			atomic_store(&ents[k].prio, prios[(unsigned)rand() % (sizeof(prios) / sizeof(prios[0]))]);
			where[k] = qs[(unsigned)rand() % nq];
			ma_spin_lock(&where[k]->hold.lock);
			ma_rq_enqueue_locked(where[k], &ents[k]);
			ma_spin_unlock(&where[k]->hold.lock);
		}
		check_summaries(op);
	}
	for (unsigned k = 0; k < NB_ENTITIES; k++)
		if (where[k]) {
			ma_spin_lock(&where[k]->hold.lock);
			ma_rq_dequeue_locked(where[k], &ents[k]);
			ma_spin_unlock(&where[k]->hold.lock);
		}
	for (unsigned v = 0; v < ma_rt.nb_vps; v++)
		for (unsigned i = 0; i < MA_SUMMARY_LEVELS; i++)
			ck_assert_uint_eq(ma_rt.workers[v].summary[i], 0);
	free(qs);
}

static void run_on(const char *topology, const char *smt, const char *nvp, int expect_full)
{
	ma_white_start(topology, smt, nvp);
	check_path_index_and_fullness();
	if (expect_full >= 0)
		ck_assert_int_eq(ma_rt.workers[0].summary_full, expect_full);
	quiet_other_vps();
	random_queueing(12345);
	wake_other_vps();
	marcel_end();
}

START_TEST(test_this_machine_one_vp)
{
	run_on(NULL, "0", "1", 1);
}
END_TEST

START_TEST(test_smt_eight_vps)
{
	/* The machine's queue is seen by 8 workers: still summarised. */
	run_on("pack:2 core:2 pu:2", "1", NULL, 1);
}
END_TEST

START_TEST(test_thirty_two_vps)
{
	/* 32 workers see the machine's queue: nobody's summary is full. */
	run_on("pack:2 numa:2 core:4 pu:2", "1", NULL, 0);
}
END_TEST

START_TEST(test_wrapped_vp_map)
{
	/* More VPs than processing units: VPs 0 and 3 share a leaf, and the path index must
	 * not take one's own queue for the other's. */
	run_on("core:3", "0", "7", -1);
}
END_TEST

static Suite *summary_suite(void)
{
	Suite *s = suite_create("summary");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_this_machine_one_vp);
	tcase_add_test(tc, test_smt_eight_vps);
	tcase_add_test(tc, test_thirty_two_vps);
	tcase_add_test(tc, test_wrapped_vp_map);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(summary_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
