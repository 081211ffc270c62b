/*
 * Stress: many creations and joins, yield storms, direct switches, deep creation trees,
 * marcel_end with work in flight, and joins from kernel threads. Run on this machine and
 * on the synthetic 32-PU topology (16 workers on this 2-core box).
 *
 * Sizes shrink under valgrind (MA_TEST_VALGRIND, see Makefile.am's check-valgrind).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include "ma_test.h"

#define I2P(i) ((any_t)(intptr_t)(i))
#define P2I(p) ((long)(intptr_t)(p))

/* Divides a stress size under valgrind. */
static long scaled(long n)
{
	static int valgrind = -1;
	if (valgrind < 0)
		valgrind = getenv("MA_TEST_VALGRIND") != NULL;
	n = valgrind ? (n / 100 > 10 ? n / 100 : 10) : n;
	return n / ma_test_scale_div() > 10 ? n / ma_test_scale_div() : 10;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One attribute per VP, to spread threads over every VP deterministically. */
static marcel_attr_t *vp_attrs(void)
{
	unsigned n = marcel_nbvps();
	marcel_attr_t *a = calloc(n, sizeof(*a));
	ck_assert_ptr_nonnull(a);
	for (unsigned vp = 0; vp < n; vp++) {
		ck_assert_int_eq(marcel_attr_init(&a[vp]), 0);
		ck_assert_int_eq(marcel_attr_setvpset(&a[vp], MARCEL_VPSET_VP(vp)), 0);
	}
	return a;
}

static atomic_long per_vp[MARCEL_NBMAXVPS];

static any_t square_plus(any_t arg)
{
	long x = P2I(arg);
	int vp = marcel_current_vp();
	if (vp >= 0)
		atomic_fetch_add_explicit(&per_vp[vp], 1, memory_order_relaxed);
	return I2P(x * 3 + 1);
}

/* 1M create/join in batches of 1000, cycling over the VPs (about 10 s on this machine,
 * less on the synthetic topology, whose VPs are mostly on the creator's side of the tree). */
START_TEST(test_create_join_batches)
{
	ma_test_init();
	unsigned n = marcel_nbvps();
	long total = scaled(1000000);
	enum { BATCH = 1000 };
	marcel_attr_t *a = vp_attrs();
	marcel_t t[BATCH];
	for (unsigned vp = 0; vp < n; vp++)
		atomic_store(&per_vp[vp], 0);
	double t0 = now();
	long done = 0;
	while (done < total) {
		long b = total - done < BATCH ? total - done : BATCH;
		for (long i = 0; i < b; i++) {
			int e = marcel_create(&t[i], &a[(done + i) % n], square_plus, I2P(done + i));
			ck_assert_msg(e == 0, "create #%ld: %d", done + i, e);
		}
		for (long i = 0; i < b; i++) {
			any_t r = NULL;
			int e = marcel_join(t[i], &r);
			ck_assert_msg(e == 0, "join #%ld: %d", done + i, e);
			ck_assert_msg(P2I(r) == (done + i) * 3 + 1, "thread #%ld returned %ld", done + i, P2I(r));
		}
		done += b;
	}
	double dt = now() - t0;
	long sum = 0;
	for (unsigned vp = 0; vp < n; vp++) {
		long c = atomic_load(&per_vp[vp]);
		ck_assert_msg(c >= total / n, "VP%u ran %ld threads of %ld", vp, c, total);
		sum += c;
	}
	ck_assert_int_eq(sum, total);
	printf("stress%s: %ld create/join over %u VPs in %.2fs (%.2f us each)\n",
	       ma_test_topology ? "-synth32" : "", total, n, dt, dt * 1e6 / (double)total);
	free(a);
	marcel_end();
}
END_TEST

/* 100k threads created before any is joined: no per-thread mapping may run out. */
START_TEST(test_single_batch)
{
	ma_test_init();
	long total = scaled(100000);
	marcel_t *t = malloc((size_t)total * sizeof(*t));
	ck_assert_ptr_nonnull(t);
	double t0 = now();
	for (long i = 0; i < total; i++) {
		int e = marcel_create(&t[i], NULL, square_plus, I2P(i));
		ck_assert_msg(e == 0, "create #%ld: %d", i, e);
	}
	for (long i = 0; i < total; i++) {
		any_t r = NULL;
		int e = marcel_join(t[i], &r);
		ck_assert_msg(e == 0, "join #%ld: %d", i, e);
		ck_assert_msg(P2I(r) == i * 3 + 1, "thread #%ld returned %ld", i, P2I(r));
	}
	printf("stress%s: %ld created, then joined, in %.2fs\n", ma_test_topology ? "-synth32" : "", total,
	       now() - t0);
	free(t);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ yields */

static atomic_long yields_done;
static long yields_each;

static any_t yielder(any_t arg)
{
	long bad = 0;
	for (long i = 0; i < yields_each; i++) {
		if (marcel_yield() != 0)
			bad++;
		atomic_fetch_add_explicit(&yields_done, 1, memory_order_relaxed);
	}
	return I2P(bad + P2I(arg));
}

static void yield_storm(int bound)
{
	ma_test_init();
	enum { NTH = 64 };
	unsigned n = marcel_nbvps();
	marcel_attr_t *a = bound ? vp_attrs() : NULL;
	marcel_t t[NTH];
	yields_each = scaled(20000);
	atomic_store(&yields_done, 0);
	double t0 = now();
	for (int i = 0; i < NTH; i++)
		ck_assert_int_eq(marcel_create(&t[i], bound ? &a[i % n] : NULL, yielder, I2P(i)), 0);
	for (int i = 0; i < NTH; i++) {
		any_t r;
		ck_assert_int_eq(marcel_join(t[i], &r), 0);
		ck_assert_int_eq(P2I(r), i);
	}
	ck_assert_int_eq(atomic_load(&yields_done), NTH * yields_each);
	printf("stress%s: %d threads x %ld yields (%s) in %.2fs\n", ma_test_topology ? "-synth32" : "",
	       NTH, yields_each, bound ? "one VP each" : "shared queue", now() - t0);
	free(a);
	marcel_end();
}

START_TEST(test_yield_storm_bound)
{
	yield_storm(1);
}
END_TEST

START_TEST(test_yield_storm_shared)
{
	yield_storm(0);
}
END_TEST

/* Strict alternation through marcel_yield_to, both threads on one VP. */
static marcel_t pp[2];
static atomic_long pp_turn;
static long pp_rounds;

struct pp_result {
	long out_of_turn, refused;
};

static struct pp_result pp_res[2];

static any_t pp_body(any_t arg)
{
	long me = P2I(arg);
	struct pp_result *r = &pp_res[me];
	for (long i = 0; i < pp_rounds; i++) {
		/* Turn t belongs to thread t % 2. */
		long t = atomic_load(&pp_turn);
		if (t != 2 * i + me)
			r->out_of_turn++;
		atomic_store(&pp_turn, t + 1);
		if (marcel_yield_to(pp[1 - me]) != 0)
			r->refused++;
	}
	return NULL;
}

START_TEST(test_ping_pong)
{
	ma_test_init();
	pp_rounds = scaled(100000);
	atomic_store(&pp_turn, 0);
	memset(pp_res, 0, sizeof(pp_res));
	/* On main's VP: neither starts before main blocks in its join. */
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setvpset(&a, MARCEL_VPSET_VP((unsigned)marcel_current_vp())), 0);
	double t0 = now();
	ck_assert_int_eq(marcel_create(&pp[0], &a, pp_body, I2P(0)), 0);
	ck_assert_int_eq(marcel_create(&pp[1], &a, pp_body, I2P(1)), 0);
	marcel_t t0h = pp[0], t1h = pp[1];
	ck_assert_int_eq(marcel_join(t0h, NULL), 0);
	ck_assert_int_eq(marcel_join(t1h, NULL), 0);
	ck_assert_int_eq(atomic_load(&pp_turn), 2 * pp_rounds);
	ck_assert_int_eq(pp_res[0].out_of_turn, 0);
	ck_assert_int_eq(pp_res[1].out_of_turn, 0);
	/* The last yield_to of thread 1 may target thread 0 after it ended. */
	ck_assert_int_eq(pp_res[0].refused, 0);
	ck_assert_int_le(pp_res[1].refused, 1);
	printf("stress%s: %ld ping-pong rounds in %.2fs\n", ma_test_topology ? "-synth32" : "", pp_rounds,
	       now() - t0);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ trees */

enum { TREE_DEPTH = 12 };

/* arg = (depth << 20) | index; a leaf returns index + 1, an inner node the sum of its
 * children (or -1 if anything failed). */
static any_t tree_node(any_t arg)
{
	long v = P2I(arg), depth = v >> 20, index = v & 0xfffff;
	if (depth == TREE_DEPTH)
		return I2P(index + 1);
	marcel_t c[2];
	long sum = 0;
	for (int k = 0; k < 2; k++)
		if (marcel_create(&c[k], NULL, tree_node, I2P(((depth + 1) << 20) | (2 * index + k))))
			return I2P(-1);
	for (int k = 0; k < 2; k++) {
		any_t r;
		if (marcel_join(c[k], &r) || P2I(r) < 0)
			return I2P(-1);
		sum += P2I(r);
	}
	return I2P(sum);
}

START_TEST(test_tree)
{
	ma_test_init();
	double t0 = now();
	marcel_t root;
	any_t r;
	ck_assert_int_eq(marcel_create(&root, NULL, tree_node, I2P(0)), 0);
	ck_assert_int_eq(marcel_join(root, &r), 0);
	long leaves = 1L << TREE_DEPTH;
	ck_assert_int_eq(P2I(r), leaves * (leaves + 1) / 2);
	printf("stress%s: creation tree of depth %d (%ld threads) in %.2fs\n",
	       ma_test_topology ? "-synth32" : "", TREE_DEPTH, 2 * leaves - 1, now() - t0);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ end with work in flight */

static atomic_int finished;

static any_t busy_50ms(any_t arg)
{
	(void)arg;
	double end = now() + 0.05;
	while (now() < end)
		marcel_yield();
	atomic_fetch_add(&finished, 1);
	return NULL;
}

START_TEST(test_end_waits)
{
	ma_test_init();
	atomic_store(&finished, 0);
	marcel_attr_t detached;
	ck_assert_int_eq(marcel_attr_init(&detached), 0);
	ck_assert_int_eq(marcel_attr_setdetachstate(&detached, MARCEL_CREATE_DETACHED), 0);
	for (int i = 0; i < 100; i++) {
		marcel_t t;
		int e;
		switch (i % 4) {
		case 0: /* no handle */
			e = marcel_create(NULL, NULL, busy_50ms, NULL);
			break;
		case 1: /* detached by attribute */
			e = marcel_create(&t, &detached, busy_50ms, NULL);
			break;
		case 2: /* detached after creation */
			e = marcel_create(&t, NULL, busy_50ms, NULL);
			if (!e)
				e = marcel_detach(t);
			break;
		default: /* joinable, never joined */
			e = marcel_create(&t, NULL, busy_50ms, NULL);
			break;
		}
		ck_assert_int_eq(e, 0);
	}
	ck_assert_int_lt(atomic_load(&finished), 100);
	marcel_end();
	ck_assert_int_eq(atomic_load(&finished), 100);
	/* And the runtime starts again cleanly. */
	ma_test_init();
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, NULL, busy_50ms, NULL), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_int_eq(atomic_load(&finished), 101);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ joins from pthreads */

enum { MIXED_THREADS = 2000, MIXED_PTHREADS = 4 };

static marcel_t mixed_t[MIXED_THREADS];

struct mixed_joiner {
	int first, step;
	long bad;
};

static void *mixed_pthread(void *arg)
{
	struct mixed_joiner *j = arg;
	for (int i = j->first; i < MIXED_THREADS; i += j->step) {
		any_t r = NULL;
		if (marcel_join(mixed_t[i], &r) != 0 || P2I(r) != (long)i * 3 + 1)
			j->bad++;
	}
	return NULL;
}

static any_t slow_square(any_t arg)
{
	for (int k = 0; k < 20; k++)
		marcel_yield();
	return square_plus(arg);
}

START_TEST(test_mixed_joiners)
{
	ma_test_init();
	for (int round = 0; round < 5; round++) {
		for (int i = 0; i < MIXED_THREADS; i++)
			ck_assert_int_eq(marcel_create(&mixed_t[i], NULL, i % 2 ? slow_square : square_plus, I2P(i)),
					 0);
		/* Kernel threads join most of them while main joins its share. */
		pthread_t pt[MIXED_PTHREADS];
		struct mixed_joiner j[MIXED_PTHREADS + 1];
		for (int k = 0; k <= MIXED_PTHREADS; k++)
			j[k] = (struct mixed_joiner){ .first = k, .step = MIXED_PTHREADS + 1 };
		for (int k = 0; k < MIXED_PTHREADS; k++)
			ck_assert_int_eq(pthread_create(&pt[k], NULL, mixed_pthread, &j[k]), 0);
		for (int i = MIXED_PTHREADS; i < MIXED_THREADS; i += MIXED_PTHREADS + 1) {
			any_t r = NULL;
			ck_assert_int_eq(marcel_join(mixed_t[i], &r), 0);
			ck_assert_int_eq(P2I(r), (long)i * 3 + 1);
		}
		for (int k = 0; k < MIXED_PTHREADS; k++) {
			ck_assert_int_eq(pthread_join(pt[k], NULL), 0);
			ck_assert_int_eq(j[k].bad, 0);
		}
	}
	marcel_end();
}
END_TEST

static void tc_create(TCase *tc)
{
	tcase_add_test(tc, test_create_join_batches);
	tcase_add_test(tc, test_single_batch);
	tcase_add_test(tc, test_tree);
}

static void tc_switch(TCase *tc)
{
	tcase_add_test(tc, test_yield_storm_bound);
	tcase_add_test(tc, test_ping_pong);
}

static void tc_storm_shared(TCase *tc)
{
	tcase_add_test(tc, test_yield_storm_shared);
}

static void tc_lifecycle(TCase *tc)
{
	tcase_add_test(tc, test_end_waits);
	tcase_add_test(tc, test_mixed_joiners);
}

int main(void)
{
	Suite *s = suite_create("stress");
	ma_test_add_both(s, "create", tc_create, 120);
	ma_test_add_both(s, "switch", tc_switch, 60);
	ma_test_add_both(s, "storm-shared", tc_storm_shared, 60);
	ma_test_add_both(s, "lifecycle", tc_lifecycle, 60);
	return ma_test_run(s);
}
