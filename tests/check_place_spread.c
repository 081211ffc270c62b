/*
 * Placement by the `spread` and `memory` bubble schedulers, seen through the public API
 * only: the runtime runs on synthetic topologies (MARCEL_TOPOLOGY), bubbles of busy
 * threads are handed to the strategy, and scheduler snapshots taken while the threads run
 * must show each bubble where the strategy's rules put it.
 *
 * Busy threads loop until main raises a flag, yielding all the time (cooperative mode).
 * They and their bubbles have the batch priority, so main (default priority, on the
 * machine's queue, which every VP looks at last) still gets a VP whenever it is ready.
 * Threads that were running when the strategy placed them move at their next yield, so
 * each test first waits (up to a deadline) for a snapshot that matches, then requires a
 * series of later ones to match too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include "ma_test.h"

#define NB_MAX 8
#define THREADS_MAX 8

static atomic_int stop;
static atomic_long spins;

static any_t busy(any_t arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (volatile int i = 0; i < 200; i++)
			;
		atomic_fetch_add_explicit(&spins, 1, memory_order_relaxed);
		marcel_yield();
	}
	return NULL;
}

struct group {
	marcel_bubble_t b;
	unsigned nb;
	marcel_t t[THREADS_MAX];
	void *mem;
	size_t mem_len;
};

static struct group groups[NB_MAX];
static unsigned nb_groups;

static void start(const char *topology, const char *sched)
{
	setenv("MARCEL_TOPOLOGY", topology, 1);
	setenv("MARCEL_BUBBLE_SCHEDULER", sched, 1);
	unsetenv("MARCEL_NVP");
	unsetenv("MARCEL_SMT");
	unsetenv("MARCEL_TIMESLICE");
	ma_test_init();
	ck_assert_str_eq(marcel_bubble_sched_name(marcel_bubble_current_sched()), sched);
	atomic_store(&stop, 0);
	nb_groups = 0;
}

/* Makes g (slot id) a bubble of n threads running fn(arg), created, not started until
 * the bubble is woken. */
static struct group *group_fill(struct group *g, unsigned id, unsigned n, int level, marcel_func_t fn, any_t arg)
{
	memset(g, 0, sizeof(*g));
	ck_assert_int_eq(marcel_bubble_init(&g->b), 0);
	ck_assert_int_eq(marcel_bubble_setid(&g->b, (int)id), 0);
	ck_assert_int_eq(marcel_bubble_setprio(&g->b, MA_BATCH_PRIO), 0);
	ck_assert_int_eq(marcel_bubble_setschedlevel(&g->b, level), 0);
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setnaturalbubble(&a, &g->b), 0);
	ck_assert_int_eq(marcel_attr_setprio(&a, MA_BATCH_PRIO), 0);
	g->nb = n;
	for (unsigned i = 0; i < n; i++)
		ck_assert_int_eq(marcel_create(&g->t[i], &a, fn, arg), 0);
	ck_assert_int_eq(marcel_attr_destroy(&a), 0);
	return g;
}

/* A bubble of n busy threads (created, not started until the bubble is woken). */
static struct group *group(unsigned n, int level)
{
	nb_groups++;
	return group_fill(&groups[nb_groups - 1], nb_groups - 1, n, level, busy, NULL);
}

static void wake_all(void)
{
	for (unsigned i = 0; i < nb_groups; i++)
		ck_assert_int_eq(marcel_wake_up_bubble(&groups[i].b), 0);
}

static void finish(void)
{
	atomic_store(&stop, 1);
	for (unsigned i = 0; i < nb_groups; i++) {
		struct group *g = &groups[i];
		for (unsigned j = 0; j < g->nb; j++)
			ck_assert_int_eq(marcel_join(g->t[j], NULL), 0);
		ck_assert_int_eq(marcel_bubble_join(&g->b), 0);
		if (g->mem) {
			ck_assert_int_eq(marcel_bubble_detach_memory(&g->b, g->mem, g->mem_len), 0);
			marcel_free_on_node(g->mem, g->mem_len);
		}
		ck_assert_int_eq(marcel_bubble_destroy(&g->b), 0);
	}
	marcel_end();
}

/* ---- reading snapshots ---- */

/* The ancestor of queue q (itself included) whose item carries `kind`, or -1. */
static int queue_up_to(const struct marcel_snapshot *s, int q, unsigned kind)
{
	for (; q >= 0; q = s->queues[q].parent)
		if (s->queues[q].vp < 0 && (s->queues[q].kinds & kind))
			return q;
	return -1;
}

/* The item queue of topology item `item`. */
static int item_queue(const struct marcel_snapshot *s, int item)
{
	for (unsigned q = 0; q < s->nb_queues; q++)
		if (s->queues[q].vp < 0 && s->queues[q].item == item)
			return (int)q;
	return -1;
}

/* Where thread t is, at the granularity of `kind`: the item queue (of that kind) holding
 * its queue, checked against the VP running it if any. -1 if it is not within one such
 * item (its queue is higher up) or runs elsewhere. */
static int thread_place(const struct marcel_snapshot *s, marcel_t t, unsigned kind, char *why, size_t n)
{
	int e = marcel_snapshot_find_thread(s, t);
	ck_assert_int_ge(e, 0);
	const struct marcel_snapshot_entity *x = &s->entities[e];
	int q = x->queue >= 0 ? queue_up_to(s, x->queue, kind) : -1;
	if (q < 0) {
		snprintf(why, n, "%s: queue %s is above the level", x->name,
			 x->queue >= 0 ? s->queues[x->queue].name : "(none)");
		return -1;
	}
	if (x->running_vp >= 0) {
		int item = marcel_topo_vp_ancestor((unsigned)x->running_vp, kind);
		if (item != s->queues[q].item) {
			snprintf(why, n, "%s: scheduled under %s but running on VP %d", x->name, s->queues[q].name,
				 x->running_vp);
			return -1;
		}
	}
	return q;
}

/* Every thread of every group within one item of `kind`, a different one per group. */
static int groups_apart(const struct marcel_snapshot *s, unsigned kind, int *where, char *why, size_t n)
{
	for (unsigned i = 0; i < nb_groups; i++) {
		where[i] = -1;
		for (unsigned j = 0; j < groups[i].nb; j++) {
			int q = thread_place(s, groups[i].t[j], kind, why, n);
			if (q < 0)
				return 0;
			if (where[i] >= 0 && where[i] != q) {
				snprintf(why, n, "bubble %u is split between %s and %s", i, s->queues[where[i]].name,
					 s->queues[q].name);
				return 0;
			}
			where[i] = q;
		}
		for (unsigned k = 0; k < i; k++)
			if (where[k] == where[i]) {
				snprintf(why, n, "bubbles %u and %u share %s", k, i, s->queues[where[i]].name);
				return 0;
			}
	}
	return 1;
}

typedef int (*placement_check)(const struct marcel_snapshot *s, char *why, size_t n);

/* Waits (up to 20 s) for a snapshot passing `ok`, then requires 5 more, a few ms apart. */
static void expect_placement(placement_check ok)
{
	char why[256] = "no snapshot";
	int streak = 0;
	for (int tries = 0; tries < 20000 && streak < 6; tries++) {
		struct marcel_snapshot *s = marcel_sched_snapshot();
		ck_assert_ptr_nonnull(s);
		ck_assert_str_eq(s->strategy, marcel_bubble_sched_name(marcel_bubble_current_sched()));
		int good = ok(s, why, sizeof(why));
		if (!good && streak) /* the picture that broke it, for the log */
			marcel_sched_snapshot_write_json(s, stderr);
		marcel_sched_snapshot_free(s);
		if (good)
			streak++;
		else
			ck_assert_msg(streak == 0, "placement held %d snapshot(s), then broke: %s", streak, why);
		marcel_usleep(good ? 3000 : 1000);
	}
	ck_assert_msg(streak == 6, "placement never reached: %s", why);
	/* The threads really ran meanwhile. */
	ck_assert_int_gt(atomic_load(&spins), 0);
}

/* ---- spread ---- */

static int numa_apart(const struct marcel_snapshot *s, char *why, size_t n)
{
	int where[NB_MAX];
	if (!groups_apart(s, MARCEL_LEVEL_NUMA, where, why, n))
		return 0;
	/* And the threads of a bubble each on their own core. */
	for (unsigned i = 0; i < nb_groups; i++)
		for (unsigned j = 0; j < groups[i].nb; j++) {
			int cj = thread_place(s, groups[i].t[j], MARCEL_LEVEL_CORE, why, n);
			if (cj < 0)
				return 0;
			for (unsigned k = 0; k < j; k++)
				if (thread_place(s, groups[i].t[k], MARCEL_LEVEL_CORE, why, n) == cj) {
					snprintf(why, n, "bubble %u: threads %u and %u share %s", i, k, j,
						 s->queues[cj].name);
					return 0;
				}
		}
	return 1;
}

/* 4 bubbles x 4 threads with level NUMA, handed over at sched_begin: a node each. */
START_TEST(test_spread_numa_begin)
{
	start("numa:4 core:4", "spread");
	ck_assert_uint_eq(marcel_nbvps(), 16);
	for (int i = 0; i < 4; i++)
		group(4, MARCEL_LEVEL_NUMA);
	wake_all();
	ck_assert_int_eq(marcel_bubble_sched_begin(), 0);
	expect_placement(numa_apart);
	finish();
}
END_TEST

/* The same, bubbles woken one by one after sched_begin: each submit sees what the previous
 * ones placed. */
START_TEST(test_spread_numa_submit)
{
	start("numa:4 core:4", "spread");
	ck_assert_int_eq(marcel_bubble_sched_begin(), 0);
	for (int i = 0; i < 4; i++)
		group(4, MARCEL_LEVEL_NUMA);
	wake_all();
	expect_placement(numa_apart);
	finish();
}
END_TEST

/* Bubbles of 2, 2 and 4 threads on two packages of two cores: 4 threads per package, the
 * small bubbles whole. */
static int packages_balanced(const struct marcel_snapshot *s, char *why, size_t n)
{
	int count[64] = { 0 };
	for (unsigned i = 0; i < nb_groups; i++) {
		int first = -1;
		for (unsigned j = 0; j < groups[i].nb; j++) {
			int q = thread_place(s, groups[i].t[j], MARCEL_LEVEL_PACKAGE, why, n);
			if (q < 0)
				return 0;
			ck_assert_int_lt(q, 64);
			count[q]++;
			if (groups[i].nb == 2 && first >= 0 && q != first) {
				snprintf(why, n, "bubble %u (2 threads) is split", i);
				return 0;
			}
			first = q;
		}
	}
	int p0 = item_queue(s, marcel_topo_vp_ancestor(0, MARCEL_LEVEL_PACKAGE));
	int p1 = item_queue(s, marcel_topo_vp_ancestor(marcel_nbvps() - 1, MARCEL_LEVEL_PACKAGE));
	ck_assert(p0 >= 0 && p1 >= 0 && p0 != p1);
	if (count[p0] != 4 || count[p1] != 4) {
		snprintf(why, n, "%d threads on %s, %d on %s", count[p0], s->queues[p0].name, count[p1],
			 s->queues[p1].name);
		return 0;
	}
	return 1;
}

START_TEST(test_spread_balanced)
{
	start("pack:2 core:2 pu:2", "spread");
	ck_assert_uint_eq(marcel_nbvps(), 4);
	group(2, 0);
	group(2, 0);
	group(4, 0);
	wake_all();
	ck_assert_int_eq(marcel_bubble_sched_begin(), 0);
	expect_placement(packages_balanced);
	finish();
}
END_TEST

/* ---- what a submit counts as already placed ---- */

/* Groups that can be stopped one by one (busy stops on the global flag too). */
static atomic_int group_stop[NB_MAX];

static any_t busy_until(any_t arg)
{
	atomic_int *own_stop = arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed) &&
	       !atomic_load_explicit(own_stop, memory_order_relaxed)) {
		for (volatile int i = 0; i < 200; i++)
			;
		atomic_fetch_add_explicit(&spins, 1, memory_order_relaxed);
		marcel_yield();
	}
	return NULL;
}

/* Like group(), into slot i (which may be reused once its group was joined). */
static struct group *group_at(unsigned i, unsigned n, int level)
{
	atomic_store(&group_stop[i], 0);
	struct group *g = group_fill(&groups[i], i, n, level, busy_until, &group_stop[i]);
	if (i >= nb_groups)
		nb_groups = i + 1;
	return g;
}

/* spread keeps what it counted as placed between decisions when the tree is big (more
 * bubbles than it walks at every decision: strategies/spread.c). With 256 empty bubbles
 * besides, 4 groups woken one by one still get a node each, and when one group ends, a
 * group woken a while later takes the node it left: what the core changed is seen. */
START_TEST(test_spread_submit_big_tree)
{
	static marcel_bubble_t fill[256];
	start("numa:4 core:4", "spread");
	ck_assert_int_eq(marcel_bubble_sched_begin(), 0);
	for (unsigned i = 0; i < 256; i++) {
		ck_assert_int_eq(marcel_bubble_init(&fill[i]), 0);
		ck_assert_int_eq(marcel_wake_up_bubble(&fill[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++)
		group_at(i, 4, MARCEL_LEVEL_NUMA);
	wake_all();
	expect_placement(numa_apart);

	struct group *g = &groups[2];
	atomic_store(&group_stop[2], 1);
	for (unsigned k = 0; k < g->nb; k++)
		ck_assert_int_eq(marcel_join(g->t[k], NULL), 0);
	ck_assert_int_eq(marcel_bubble_join(&g->b), 0);
	ck_assert_int_eq(marcel_bubble_destroy(&g->b), 0);
	marcel_usleep(200000);
	g = group_at(2, 4, MARCEL_LEVEL_NUMA);
	ck_assert_int_eq(marcel_wake_up_bubble(&g->b), 0);
	expect_placement(numa_apart);

	for (unsigned i = 0; i < 256; i++) {
		ck_assert_int_eq(marcel_bubble_join(&fill[i]), 0);
		ck_assert_int_eq(marcel_bubble_destroy(&fill[i]), 0);
	}
	finish();
}
END_TEST

/* Every thread of every group within one item of `kind`, the same one for all. */
static int groups_together(const struct marcel_snapshot *s, unsigned kind, char *why, size_t n)
{
	int where = -1;
	for (unsigned i = 0; i < nb_groups; i++)
		for (unsigned j = 0; j < groups[i].nb; j++) {
			int q = thread_place(s, groups[i].t[j], kind, why, n);
			if (q < 0)
				return 0;
			if (where >= 0 && q != where) {
				snprintf(why, n, "bubble %u runs on %s, another on %s", i, s->queues[q].name,
					 s->queues[where].name);
				return 0;
			}
			where = q;
		}
	return 1;
}

static int one_core(const struct marcel_snapshot *s, char *why, size_t n)
{
	return groups_together(s, MARCEL_LEVEL_CORE, why, n);
}

/* A bubble woken inside a bubble burst on a core (its level) stays on that core, whole:
 * below an item with one VP there is nothing to decide. */
START_TEST(test_spread_submit_below_core)
{
	start("numa:4 core:4", "spread");
	ck_assert_int_eq(marcel_bubble_sched_begin(), 0);
	struct group *outer = group_at(0, 1, MARCEL_LEVEL_CORE);
	ck_assert_int_eq(marcel_wake_up_bubble(&outer->b), 0);
	expect_placement(one_core);
	struct group *inner = group_at(1, 3, 0);
	/* Inserted into a woken bubble, it is woken there. */
	ck_assert_int_eq(marcel_bubble_insertbubble(&outer->b, &inner->b), 0);
	expect_placement(one_core);
	/* finish(), inner first: outer cannot be destroyed while inner is still its member. */
	atomic_store(&stop, 1);
	for (unsigned i = nb_groups; i-- > 0;) {
		struct group *g = &groups[i];
		for (unsigned j = 0; j < g->nb; j++)
			ck_assert_int_eq(marcel_join(g->t[j], NULL), 0);
		ck_assert_int_eq(marcel_bubble_join(&g->b), 0);
		ck_assert_int_eq(marcel_bubble_destroy(&g->b), 0);
	}
	marcel_end();
}
END_TEST

/* ---- memory ---- */

static int nodes_of_memory(const struct marcel_snapshot *s, char *why, size_t n)
{
	int where[NB_MAX];
	if (!groups_apart(s, MARCEL_LEVEL_NUMA, where, why, n))
		return 0;
	for (unsigned i = 0; i < nb_groups; i++) {
		/* Group i's memory is on node 3 - i. */
		struct marcel_topo_item it;
		ck_assert_int_eq(marcel_topo_get_item((unsigned)s->queues[where[i]].item, &it), 0);
		if (it.numa != 3 - (int)i) {
			snprintf(why, n, "bubble %u (memory on node %u) runs on %s", i, 3 - i,
				 s->queues[where[i]].name);
			return 0;
		}
	}
	return 1;
}

static void attach_memory(struct group *g, unsigned node)
{
	g->mem_len = 1 << 20;
	g->mem = marcel_malloc_on_node(g->mem_len, node);
	ck_assert_ptr_nonnull(g->mem);
	ck_assert_int_eq(marcel_bubble_attach_memory(&g->b, g->mem, g->mem_len), 0);
	size_t bytes = 0;
	ck_assert_int_eq(marcel_bubble_memory_on_node(&g->b, node, &bytes), 0);
	ck_assert_uint_eq(bytes, g->mem_len);
}

/* Bubble i with memory on node 3 - i runs there (spread alone would give it node i). */
START_TEST(test_memory_nodes)
{
	start("numa:4 core:4", "memory");
	ck_assert_uint_eq(marcel_nbnodes(), 4);
	for (unsigned i = 0; i < 4; i++)
		attach_memory(group(4, 0), 3 - i);
	wake_all();
	ck_assert_int_eq(marcel_bubble_sched_begin(), 0);
	expect_placement(nodes_of_memory);
	finish();
}
END_TEST

/* The same through submit (woken after sched_begin). */
START_TEST(test_memory_submit)
{
	start("numa:4 core:4", "memory");
	ck_assert_int_eq(marcel_bubble_sched_begin(), 0);
	for (unsigned i = 0; i < 4; i++)
		attach_memory(group(4, 0), 3 - i);
	wake_all();
	expect_placement(nodes_of_memory);
	finish();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("place_spread");
	TCase *tc = tcase_create("spread");
	tcase_add_test(tc, test_spread_numa_begin);
	tcase_add_test(tc, test_spread_numa_submit);
	tcase_add_test(tc, test_spread_balanced);
	tcase_add_test(tc, test_spread_submit_big_tree);
	tcase_add_test(tc, test_spread_submit_below_core);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	tc = tcase_create("memory");
	tcase_add_test(tc, test_memory_nodes);
	tcase_add_test(tc, test_memory_submit);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return ma_test_run(s);
}
