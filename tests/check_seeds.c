/*
 * Seeds (marcel_attr_setseed): a seed its joiner finds not started runs on the joiner's
 * stack, yet stays a thread of its own (identity, keys, bubble, exit value, blocking,
 * preemption); seeds that were started, placed, or never joined run as ordinary threads;
 * deep recursions of seeds compute the right result whatever runs where.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include "ma_test.h"

#define I2P(i) ((any_t)(intptr_t)(i))
#define P2I(p) ((intptr_t)(p))

/* Starts the runtime with nvp VPs (NULL: the default) and time slice ts (NULL: none).
 * 0 if this build refuses to preempt (ThreadSanitizer, ucontext: check_preempt checks the
 * message), 1 if the runtime runs. */
static int init_nvp(const char *nvp, const char *ts)
{
	if (nvp)
		setenv("MARCEL_NVP", nvp, 1);
	if (ts)
		setenv("MARCEL_TIMESLICE", ts, 1);
	char msg[512];
	int e = ma_test_init_captured(msg, sizeof(msg));
	unsetenv("MARCEL_NVP");
	unsetenv("MARCEL_TIMESLICE");
	if (e == EINVAL && ts && strstr(msg, "preemption"))
		return 0;
	ck_assert_msg(e == 0, "marcel_init: %d: %s", e, msg);
	return 1;
}

static marcel_attr_t seed_attr(void)
{
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setseed(&a, 1), 0);
	return a;
}

/* What a seed saw of itself. */
struct seen {
	marcel_t self;
	uintptr_t frame;        /* an address in its frame */
	int vp;
	char name[MARCEL_MAXNAMESIZE];
};

static any_t record(any_t arg)
{
	struct seen *s = arg;
	s->self = marcel_self();
	s->frame = (uintptr_t)__builtin_frame_address(0);
	s->vp = marcel_current_vp();
	marcel_getname(s->self, s->name, sizeof(s->name));
	return I2P(7);
}

/* Whether a frame of the seed lies just below the joiner's frame on the same stack. */
static int on_my_stack(uintptr_t seed_frame)
{
	uintptr_t mine = (uintptr_t)__builtin_frame_address(0);
	return seed_frame < mine && mine - seed_frame < 16 * 1024;
}

/* One VP, joined at once: nobody else could start it, so the joiner ran it, on its stack,
 * as a thread of its own. */
START_TEST(test_inline_identity)
{
	init_nvp("1", NULL);
	marcel_attr_t a = seed_attr();
	ck_assert_int_eq(marcel_attr_setname(&a, "little"), 0);
	struct seen s;
	memset(&s, 0, sizeof(s));
	marcel_t t;
	any_t r;
	ck_assert_int_eq(marcel_create(&t, &a, record, &s), 0);
	ck_assert_int_eq(marcel_join(t, &r), 0);
	ck_assert_int_eq(P2I(r), 7);
	ck_assert_ptr_eq(s.self, t);
	ck_assert(s.self != marcel_self());
	ck_assert_str_eq(s.name, "little");
	ck_assert_int_eq(s.vp, 0);
	ck_assert_msg(on_my_stack(s.frame), "the seed did not run on its joiner's stack");
	/* The joiner is itself again. */
	char name[MARCEL_MAXNAMESIZE];
	ck_assert_int_eq(marcel_getname(marcel_self(), name, sizeof(name)), 0);
	ck_assert_str_eq(name, "main");
	/* Handles of joined threads are dead. */
	ck_assert_int_eq(marcel_join(t, NULL), ESRCH);
	marcel_end();
}
END_TEST

/* An ordinary thread joined the same way ran on a stack of its own: the test above does
 * tell the two apart. */
START_TEST(test_plain_not_inline)
{
	init_nvp("1", NULL);
	struct seen s;
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, NULL, record, &s), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_ptr_eq(s.self, t);
	ck_assert(!on_my_stack(s.frame));
	marcel_end();
}
END_TEST

static marcel_key_t key;
static atomic_int destroyed;

static void key_gone(void *v)
{
	atomic_fetch_add(&destroyed, (int)P2I(v));
}

static any_t exits_early(any_t arg)
{
	ck_assert_int_eq(marcel_setspecific(key, I2P(5)), 0);
	ck_assert_ptr_eq(marcel_getspecific(key), I2P(5));
	if (arg)
		marcel_exit(I2P(99));  /* from inside the joiner's stack */
	return I2P(1);
}

/* marcel_exit in an inline seed returns its value to the join, and key destructors run
 * for the seed, not for its joiner. */
START_TEST(test_inline_exit_and_keys)
{
	init_nvp("1", NULL);
	atomic_store(&destroyed, 0);
	ck_assert_int_eq(marcel_key_create(&key, key_gone), 0);
	marcel_attr_t a = seed_attr();
	marcel_t t;
	any_t r;
	ck_assert_int_eq(marcel_create(&t, &a, exits_early, I2P(1)), 0);
	ck_assert_int_eq(marcel_join(t, &r), 0);
	ck_assert_int_eq(P2I(r), 99);
	ck_assert_int_eq(atomic_load(&destroyed), 5);
	ck_assert_int_eq(marcel_create(&t, &a, exits_early, NULL), 0);
	ck_assert_int_eq(marcel_join(t, &r), 0);
	ck_assert_int_eq(P2I(r), 1);
	ck_assert_int_eq(atomic_load(&destroyed), 10);
	ck_assert_ptr_null(marcel_getspecific(key));  /* the joiner's own value: never set */
	marcel_end();
}
END_TEST

static marcel_sem_t sem;
static atomic_int poster_ran;

static any_t waits(any_t arg)
{
	struct seen *s = arg;
	s->frame = (uintptr_t)__builtin_frame_address(0);
	marcel_sem_P(&sem);   /* blocks while on its joiner's stack */
	s->self = marcel_self();
	return I2P(3);
}

static any_t posts(any_t arg)
{
	(void)arg;
	atomic_store(&poster_ran, 1);
	marcel_sem_V(&sem);
	return NULL;
}

/* A seed blocking inside its joiner: the VP runs other threads meanwhile (here the one
 * that unblocks it), then the seed resumes where it was and the join completes. */
START_TEST(test_inline_blocks)
{
	init_nvp("1", NULL);
	marcel_sem_init(&sem, 0);
	atomic_store(&poster_ran, 0);
	marcel_attr_t a = seed_attr();
	struct seen s;
	marcel_t t, p;
	any_t r;
	ck_assert_int_eq(marcel_create(&t, &a, waits, &s), 0);
	/* Queued behind the seed: on one VP it runs once the seed has blocked. */
	ck_assert_int_eq(marcel_create(&p, NULL, posts, NULL), 0);
	ck_assert_int_eq(marcel_join(t, &r), 0);
	ck_assert_int_eq(P2I(r), 3);
	ck_assert_ptr_eq(s.self, t);
	ck_assert_int_eq(atomic_load(&poster_ran), 1);
	ck_assert_int_eq(marcel_join(p, NULL), 0);
	marcel_end();
}
END_TEST

static atomic_int spin_stop;

static any_t computes(any_t arg)
{
	struct seen *s = arg;
	s->frame = (uintptr_t)__builtin_frame_address(0);
	while (!atomic_load_explicit(&spin_stop, memory_order_relaxed))
		;
	s->self = marcel_self();
	return I2P(4);
}

static any_t stopper(any_t arg)
{
	(void)arg;
	atomic_store(&spin_stop, 1);
	return NULL;
}

/* Preempted while on its joiner's stack: another thread of the same VP gets the VP (and
 * ends the loop), and the seed completes. */
START_TEST(test_inline_preempted)
{
	if (!init_nvp("1", "1000"))
		return;
	atomic_store(&spin_stop, 0);
	marcel_attr_t a = seed_attr();
	struct seen s;
	marcel_t t, st;
	any_t r;
	ck_assert_int_eq(marcel_create(&t, &a, computes, &s), 0);
	ck_assert_int_eq(marcel_create(&st, NULL, stopper, NULL), 0);
	ck_assert_int_eq(marcel_join(t, &r), 0);
	ck_assert_int_eq(P2I(r), 4);
	ck_assert_ptr_eq(s.self, t);
	ck_assert_int_eq(marcel_join(st, NULL), 0);
	marcel_end();
}
END_TEST

/* A seed placed by its attributes starts where they say, even if its joiner could run
 * it: here on the last VP while the joiner is on VP 0. */
START_TEST(test_placed_not_inline)
{
	ma_test_init();
	unsigned last = marcel_nbvps() - 1;
	marcel_attr_t a = ma_test_attr_on_vp(last);
	ck_assert_int_eq(marcel_attr_setseed(&a, 1), 0);
	struct seen s;
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, &a, record, &s), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_int_eq(s.vp, (int)last);
	marcel_end();
}
END_TEST

/* Created but not started (dontsched): the join waits for the wake-up, it does not
 * start the seed behind the program's back. */
static any_t wakes(any_t arg)
{
	marcel_usleep(2000);
	ck_assert_int_eq(marcel_wake_up_created_thread((marcel_t)arg), 0);
	return NULL;
}

START_TEST(test_dontsched_waits)
{
	init_nvp("1", NULL);
	marcel_attr_t a = seed_attr();
	struct seen s;
	marcel_t t, w;
	ck_assert_int_eq(marcel_create_dontsched(&t, &a, record, &s), 0);
	ck_assert_int_eq(marcel_create(&w, NULL, wakes, t), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_ptr_eq(s.self, t);
	ck_assert(!on_my_stack(s.frame));
	ck_assert_int_eq(marcel_join(w, NULL), 0);
	marcel_end();
}
END_TEST

/* Recursive sum over [lo, hi) with two seeds per level, each level's pair in a bubble of
 * its own inside the parent's (the classic Marcel demo's shape). */
struct range {
	long lo, hi;
	marcel_bubble_t *parent;
};

static any_t sum(any_t arg)
{
	struct range *r = arg;
	if (r->hi - r->lo <= 4) {
		long s = 0;
		for (long i = r->lo; i < r->hi; i++)
			s += i;
		return I2P(s);
	}
	long mid = (r->lo + r->hi) / 2;
	marcel_bubble_t b;
	ck_assert_int_eq(marcel_bubble_init(&b), 0);
	/* Inserted in a woken bubble: woken with it. */
	ck_assert_int_eq(marcel_bubble_insertbubble(r->parent, &b), 0);
	marcel_attr_t a = seed_attr();
	ck_assert_int_eq(marcel_attr_setnaturalbubble(&a, &b), 0);
	struct range left = { r->lo, mid, &b }, right = { mid, r->hi, &b };
	marcel_t tl, tr;
	any_t sl, sr;
	ck_assert_int_eq(marcel_create(&tl, &a, sum, &left), 0);
	ck_assert_int_eq(marcel_create(&tr, &a, sum, &right), 0);
	ck_assert_int_eq(marcel_join(tr, &sr), 0);
	ck_assert_int_eq(marcel_join(tl, &sl), 0);
	ck_assert_int_eq(marcel_bubble_join(&b), 0);
	ck_assert_int_eq(marcel_bubble_destroy(&b), 0);
	return I2P(P2I(sl) + P2I(sr));
}

static void check_sum(long n)
{
	static marcel_bubble_t top;
	ck_assert_int_eq(marcel_bubble_init(&top), 0);
	ck_assert_int_eq(marcel_wake_up_bubble(&top), 0);
	struct range r = { 0, n, &top };
	marcel_attr_t a = seed_attr();
	marcel_t t;
	any_t s;
	ck_assert_int_eq(marcel_create(&t, &a, sum, &r), 0);
	ck_assert_int_eq(marcel_join(t, &s), 0);
	ck_assert_int_eq(P2I(s), n * (n - 1) / 2);
}

/* Thousands of nested seeds, on every VP, under every strategy. Under burst and steal
 * (always, on 16 VPs) and gang (1 run in 4), bubbles inserted into woken, burst bubbles
 * once left ready threads that no VP served, or workers spinning on a destroyed bubble:
 * a joiner running a seed inline was waited for by its bubble's gather (seed.c,
 * hosts_seed), a bubble placed after its parent closed became a unit inside a unit
 * (holder.c, ma_bubble_in_unit_locked), and a bubble picked from a queue was burst or
 * moved after its joiner destroyed it (ma_bubble_picked now holds a reference). */
START_TEST(test_nested_sum)
{
	static const char *const strategies[] = { "null", "burst", "spread", "cache", "steal", "gang", "memory",
						  "contention", "pa", "mintlp" };
	const char *sched = strategies[_i];
	ma_test_init_with(ma_test_topology, sched);
	check_sum(20000 / ma_test_scale_div());
	marcel_end();
}
END_TEST

static long depth_reached;

static any_t deep(any_t arg)
{
	long d = P2I(arg);
	char pad[2048];
	/* A frame the compiler must keep: each level eats stack. */
	memset(pad, (int)d, sizeof(pad));
	__asm__ volatile("" : : "r"(pad) : "memory");
	if (d == 0)
		return I2P(pad[0] == 0);
	marcel_attr_t a = seed_attr();
	marcel_t t;
	any_t r;
	ck_assert_int_eq(marcel_create(&t, &a, deep, I2P(d - 1)), 0);
	ck_assert_int_eq(marcel_join(t, &r), 0);
	if (d > __atomic_load_n(&depth_reached, __ATOMIC_RELAXED))
		__atomic_store_n(&depth_reached, d, __ATOMIC_RELAXED);
	return I2P(P2I(r) + (pad[sizeof(pad) - 1] == (char)d));
}

/* A chain deeper than one stack can hold inline (200 levels x 2 KiB on 128 KiB stacks):
 * once the joiner's stack runs low, seeds continue on stacks of their own. */
START_TEST(test_deep_chain)
{
	init_nvp("1", NULL);
	marcel_attr_t a = seed_attr();
	marcel_t t;
	any_t r;
	ck_assert_int_eq(marcel_create(&t, &a, deep, I2P(200)), 0);
	ck_assert_int_eq(marcel_join(t, &r), 0);
	ck_assert_int_eq(P2I(r), 201);
	marcel_end();
}
END_TEST

/* A seed counts in its bubble while it runs inline and leaves it when it ends: the
 * bubble can then be joined. */
static marcel_bubble_t counted;

static any_t count_self(any_t arg)
{
	long long n = -1;
	ck_assert_int_eq(marcel_bubble_stats_get(&counted, MARCEL_STATS_NB_THREADS, &n), 0);
	*(long long *)arg = n;
	return NULL;
}

START_TEST(test_inline_in_bubble)
{
	init_nvp("1", NULL);
	ck_assert_int_eq(marcel_bubble_init(&counted), 0);
	ck_assert_int_eq(marcel_wake_up_bubble(&counted), 0);
	marcel_attr_t a = seed_attr();
	ck_assert_int_eq(marcel_attr_setnaturalbubble(&a, &counted), 0);
	long long seen = -1;
	struct seen s;
	marcel_t t, u;
	ck_assert_int_eq(marcel_create(&t, &a, count_self, &seen), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_int_eq(seen, 1);
	ck_assert_int_eq(marcel_create(&u, &a, record, &s), 0);
	ck_assert_int_eq(marcel_join(u, NULL), 0);
	ck_assert(on_my_stack(s.frame));
	long long n = -1;
	ck_assert_int_eq(marcel_bubble_stats_get(&counted, MARCEL_STATS_NB_THREADS, &n), 0);
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(marcel_bubble_join(&counted), 0);
	ck_assert_int_eq(marcel_bubble_destroy(&counted), 0);
	marcel_end();
}
END_TEST

/* A closed bubble queued on a run queue whose seeds were all run by their joiners: its
 * cache is empty but it stays queued until a find_next meets it, which on one busy VP
 * may be never. Joined, it must still be destroyable at once (it was EBUSY). */
START_TEST(test_inline_emptied_bubble_destroyed)
{
	setenv("MARCEL_BUBBLE_SCHEDULER", _i ? "burst" : "null", 1);
	init_nvp("1", "0");
	unsetenv("MARCEL_BUBBLE_SCHEDULER");
	marcel_bubble_t b;
	ck_assert_int_eq(marcel_bubble_init(&b), 0);
	marcel_attr_t a = seed_attr();
	ck_assert_int_eq(marcel_attr_setnaturalbubble(&a, &b), 0);
	struct seen s[2];
	marcel_t t[2];
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(marcel_create(&t[i], &a, record, &s[i]), 0);
	ck_assert_int_eq(marcel_wake_up_bubble(&b), 0);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(marcel_join(t[i], NULL), 0);
		ck_assert(on_my_stack(s[i].frame));
	}
	ck_assert_int_eq(marcel_bubble_join(&b), 0);
	ck_assert_int_eq(marcel_bubble_destroy(&b), 0);
	/* The queue it sat on still works. */
	marcel_t u;
	struct seen su;
	ck_assert_int_eq(marcel_create(&u, NULL, record, &su), 0);
	ck_assert_int_eq(marcel_join(u, NULL), 0);
	ck_assert_ptr_eq(su.self, u);
	marcel_end();
}
END_TEST

/* Detached seeds (never joined) and seeds other VPs start first: ordinary threads. */
static atomic_int ran;

static any_t bump(any_t arg)
{
	atomic_fetch_add(&ran, (int)P2I(arg));
	return arg;
}

START_TEST(test_detached_and_started)
{
	ma_test_init();
	atomic_store(&ran, 0);
	marcel_attr_t a = seed_attr();
	for (int i = 0; i < 200; i++)
		ck_assert_int_eq(marcel_create(NULL, &a, bump, I2P(1)), 0);
	enum { N = 64 };
	marcel_t t[N];
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(marcel_create(&t[i], &a, bump, I2P(2)), 0);
	/* Let the other VPs take some. */
	for (int i = 0; i < 10; i++)
		marcel_yield();
	long total = 0;
	for (int i = 0; i < N; i++) {
		any_t r;
		ck_assert_int_eq(marcel_join(t[i], &r), 0);
		total += P2I(r);
	}
	ck_assert_int_eq(total, 2 * N);
	marcel_end();
	ck_assert_int_eq(atomic_load(&ran), 200 + 2 * N);
}
END_TEST

static void tc_inline(TCase *tc)
{
	tcase_add_test(tc, test_inline_identity);
	tcase_add_test(tc, test_plain_not_inline);
	tcase_add_test(tc, test_inline_exit_and_keys);
	tcase_add_test(tc, test_inline_blocks);
	tcase_add_test(tc, test_inline_preempted);
	tcase_add_test(tc, test_dontsched_waits);
	tcase_add_test(tc, test_deep_chain);
	tcase_add_test(tc, test_inline_in_bubble);
	tcase_add_loop_test(tc, test_inline_emptied_bubble_destroyed, 0, 2);
}

static void tc_ordinary(TCase *tc)
{
	tcase_add_test(tc, test_placed_not_inline);
	tcase_add_test(tc, test_detached_and_started);
	tcase_add_loop_test(tc, test_nested_sum, 0, 10);
}

int main(void)
{
	Suite *s = suite_create("seeds");
	ma_test_add_both(s, "inline", tc_inline, 60);
	ma_test_add_both(s, "ordinary", tc_ordinary, 120);
	return ma_test_run(s);
}
