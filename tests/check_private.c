/*
 * Private bubbles (bubbles/private.c): under a strategy that allows them, a bubble stays
 * private to the VP that made it while only that VP's threads use it. Whatever the
 * application does, it must see what it would have seen with public bubbles: seeds run
 * and are counted in their bubble, a bubble woken privately shows up in its waker's bubble
 * as soon as anybody looks, other VPs can use it, seeds that block or are left behind are
 * not lost, and idle VPs get work.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include "ma_test.h"
#include "ma_bubble.h"

/* Check's assertions take a pthread mutex (fork mode reports each location): a marcel
 * thread preempted while holding it, which an idle VP asking for work may cause
 * (bubbles/private.c), would block the next one asserting on its kernel thread. Every
 * assertion here runs with preemption disabled, as marcel_thread_preemption_disable
 * documents for locks marcel does not know (outside the runtime, it fails harmlessly). */
#define NP(assertion)                                                              \
	do {                                                                       \
		int np_off = marcel_thread_preemption_disable() == 0;              \
		assertion;                                                         \
		if (np_off)                                                        \
			marcel_thread_preemption_enable();                         \
	} while (0)

#define I2P(i) ((any_t)(intptr_t)(i))
#define P2I(p) ((intptr_t)(p))
/* More than a VP keeps track of (MA_PRIVATE_MAX, ma_sched.h). */
#define MA_TEST_PRIVATE_MAX 48

static void init(const char *nvp, const char *sched)
{
	setenv("MARCEL_NVP", nvp, 1);
	ma_test_init_with(ma_test_topology, sched);
	unsetenv("MARCEL_NVP");
}

static marcel_attr_t seed_in(marcel_bubble_t *b)
{
	marcel_attr_t a;
	NP(ck_assert_int_eq(marcel_attr_init(&a), 0));
	NP(ck_assert_int_eq(marcel_attr_setseed(&a, 1), 0));
	NP(ck_assert_int_eq(marcel_attr_setnaturalbubble(&a, b), 0));
	return a;
}

/* What a seed saw. */
struct seen {
	marcel_t self;
	marcel_bubble_t *holder;
	int vp;
};

static any_t record(any_t arg)
{
	struct seen *s = arg;
	s->self = marcel_self();
	s->holder = marcel_bubble_holding_task(s->self);
	s->vp = marcel_current_vp();
	return I2P(5);
}

/* Starts a level: b initialised, n seeds fn(&s[i]) created in it (t[i]), b woken. */
static void level_start(marcel_bubble_t *b, unsigned n, marcel_func_t fn, struct seen *s, marcel_t *t)
{
	NP(ck_assert_int_eq(marcel_bubble_init(b), 0));
	marcel_attr_t a = seed_in(b);
	for (unsigned i = 0; i < n; i++)
		NP(ck_assert_int_eq(marcel_create(&t[i], &a, fn, &s[i]), 0));
	NP(ck_assert_int_eq(marcel_wake_up_bubble(b), 0));
}

/* Ends a level whose seeds were joined. */
static void level_end(marcel_bubble_t *b)
{
	NP(ck_assert_int_eq(marcel_bubble_join(b), 0));
	NP(ck_assert_int_eq(marcel_bubble_destroy(b), 0));
}

/* A level as a recursion makes it: the seeds belong to the bubble, the bubble to its
 * waker's, the usual calls give the usual answers. */
START_TEST(test_level)
{
	const char *sched[] = { "cache", "steal", "burst" };
	init(_i ? "2" : "1", sched[_i % 3]);
	marcel_bubble_t b;
	struct seen s[2];
	marcel_t t[2];
	level_start(&b, 2, record, s, t);
	NP(ck_assert_int_eq(marcel_wake_up_bubble(&b), 0));
	NP(ck_assert_int_eq(marcel_bubble_destroy(&b), EBUSY));
	for (int i = 0; i < 2; i++) {
		any_t r;
		NP(ck_assert_int_eq(marcel_join(t[i], &r), 0));
		NP(ck_assert_int_eq(P2I(r), 5));
		NP(ck_assert_ptr_eq(s[i].self, t[i]));
		NP(ck_assert_ptr_eq(s[i].holder, &b));
	}
	level_end(&b);
	marcel_end();
}
END_TEST

/* Looking at a privately woken bubble finds it where a public wake-up puts it: in the
 * waker's bubble, holding its seeds, which then run as any started thread. */
START_TEST(test_seen_woken)
{
	init("2", "cache");
	marcel_bubble_t *mine = marcel_bubble_holding_task(marcel_self());
	marcel_bubble_t b;
	struct seen s[3];
	marcel_t t[3];
	level_start(&b, 3, record, s, t);
	/* Taken by its joiner while private: running when the bubble goes public. */
	NP(ck_assert_int_eq(marcel_join(t[0], NULL), 0));
	NP(ck_assert_ptr_eq(marcel_bubble_holding_bubble(&b), mine));
	long long n = -1;
	NP(ck_assert_int_eq(marcel_bubble_stats_get(&b, MARCEL_STATS_NB_THREADS, &n), 0));
	NP(ck_assert_int_ge(n, 0));
	NP(ck_assert_int_le(n, 2));
	for (int i = 1; i < 3; i++)
		NP(ck_assert_int_eq(marcel_join(t[i], NULL), 0));
	for (int i = 0; i < 3; i++)
		NP(ck_assert_ptr_eq(s[i].holder, &b));
	NP(ck_assert_int_eq(marcel_bubble_join(&b), 0));
	NP(ck_assert_ptr_eq(marcel_bubble_holding_bubble(&b), NULL));
	NP(ck_assert_int_eq(marcel_bubble_destroy(&b), 0));
	marcel_end();
}
END_TEST

/* A seed of a private bubble that yields, sleeps and blocks: its bubble goes public
 * when it switches out, and it comes back to finish where it was. */
static marcel_mutex_t mtx;

static any_t blocker(any_t arg)
{
	struct seen *s = arg;
	for (int i = 0; i < 5; i++)
		marcel_yield();
	marcel_usleep(200);
	marcel_mutex_lock(&mtx);
	marcel_mutex_unlock(&mtx);
	return record(s);
}

static any_t holder(any_t arg)
{
	atomic_int *go = arg;
	marcel_mutex_lock(&mtx);
	atomic_store(go, 1);
	marcel_usleep(2000);
	marcel_mutex_unlock(&mtx);
	return NULL;
}

START_TEST(test_seed_switches_out)
{
	init(_i ? "2" : "1", "cache");
	NP(ck_assert_int_eq(marcel_mutex_init(&mtx, NULL), 0));
	atomic_int go = 0;
	marcel_t h;
	NP(ck_assert_int_eq(marcel_create(&h, NULL, holder, &go), 0));
	while (!atomic_load(&go))
		marcel_yield();
	marcel_bubble_t b;
	struct seen s[2];
	marcel_t t[2];
	level_start(&b, 2, blocker, s, t);
	for (int i = 0; i < 2; i++) {
		NP(ck_assert_int_eq(marcel_join(t[i], NULL), 0));
		NP(ck_assert_ptr_eq(s[i].holder, &b));
	}
	level_end(&b);
	NP(ck_assert_int_eq(marcel_join(h, NULL), 0));
	marcel_end();
}
END_TEST

/* Bubbles left behind, privately woken with seeds nobody joins: by a seed that returns
 * (they go into its bubble) and by a thread that ends (into its). Their seeds run. */
static atomic_int ran;
static marcel_bubble_t left[2];

static any_t bump(any_t arg)
{
	atomic_fetch_add(&ran, (int)P2I(arg));
	return NULL;
}

static any_t leave_behind(any_t arg)
{
	marcel_bubble_t *l = arg;
	NP(ck_assert_int_eq(marcel_bubble_init(l), 0));
	marcel_attr_t a = seed_in(l);
	for (int i = 0; i < 4; i++)
		NP(ck_assert_int_eq(marcel_create(NULL, &a, bump, I2P(1)), 0));
	NP(ck_assert_int_eq(marcel_wake_up_bubble(l), 0));
	return NULL;
}

START_TEST(test_left_behind)
{
	init(_i ? "2" : "1", "cache");
	atomic_store(&ran, 0);
	marcel_bubble_t b;
	NP(ck_assert_int_eq(marcel_bubble_init(&b), 0));
	marcel_attr_t a = seed_in(&b);
	marcel_t t, u;
	NP(ck_assert_int_eq(marcel_create(&t, &a, leave_behind, &left[0]), 0));
	NP(ck_assert_int_eq(marcel_wake_up_bubble(&b), 0));
	NP(ck_assert_int_eq(marcel_join(t, NULL), 0));
	NP(ck_assert_ptr_eq(marcel_bubble_holding_bubble(&left[0]), &b));
	level_end(&left[0]);
	level_end(&b);
	NP(ck_assert_int_eq(atomic_load(&ran), 4));
	/* An ordinary thread. */
	NP(ck_assert_int_eq(marcel_create(&u, NULL, leave_behind, &left[1]), 0));
	NP(ck_assert_int_eq(marcel_join(u, NULL), 0));
	level_end(&left[1]);
	NP(ck_assert_int_eq(atomic_load(&ran), 8));
	marcel_end();
}
END_TEST

/* Another VP uses a bubble private to ours: it creates a seed in it, and joins it once
 * woken, while we run its other seeds. */
struct other {
	marcel_bubble_t *b;
	marcel_t seed;
	struct seen s;
	int join_it;
	int err;
};

static any_t from_other_vp(any_t arg)
{
	struct other *o = arg;
	if (!o->join_it) {
		marcel_attr_t a = seed_in(o->b);
		o->err = marcel_create(&o->seed, &a, record, &o->s);
	} else {
		o->err = marcel_bubble_join(o->b);
	}
	return NULL;
}

START_TEST(test_other_vp)
{
	init("2", "cache");
	marcel_bubble_t b;
	NP(ck_assert_int_eq(marcel_bubble_init(&b), 0));
	marcel_attr_t a = seed_in(&b);
	struct seen s;
	marcel_t t, x;
	NP(ck_assert_int_eq(marcel_create(&t, &a, record, &s), 0));
	marcel_attr_t on1 = ma_test_attr_on_vp(1);
	struct other o = { .b = &b };
	NP(ck_assert_int_eq(marcel_create(&x, &on1, from_other_vp, &o), 0));
	NP(ck_assert_int_eq(marcel_join(x, NULL), 0));
	NP(ck_assert_int_eq(o.err, 0));
	NP(ck_assert_int_eq(marcel_wake_up_bubble(&b), 0));
	NP(ck_assert_int_eq(marcel_join(o.seed, NULL), 0));
	NP(ck_assert_ptr_eq(o.s.holder, &b));
	NP(ck_assert_int_eq(marcel_join(t, NULL), 0));
	level_end(&b);
	/* Joined from VP 1 while we run its seed. */
	marcel_bubble_t c;
	NP(ck_assert_int_eq(marcel_bubble_init(&c), 0));
	a = seed_in(&c);
	NP(ck_assert_int_eq(marcel_create(&t, &a, record, &s), 0));
	NP(ck_assert_int_eq(marcel_wake_up_bubble(&c), 0));
	struct other j = { .b = &c, .join_it = 1 };
	NP(ck_assert_int_eq(marcel_create(&x, &on1, from_other_vp, &j), 0));
	NP(ck_assert_int_eq(marcel_join(t, NULL), 0));
	NP(ck_assert_int_eq(marcel_join(x, NULL), 0));
	NP(ck_assert_int_eq(j.err, 0));
	NP(ck_assert_ptr_eq(s.holder, &c));
	NP(ck_assert_int_eq(marcel_bubble_destroy(&c), 0));
	marcel_end();
}
END_TEST

/* Runs one seed in b, freshly initialised, and checks it ran in b. */
static void one_seed_level(marcel_bubble_t *b)
{
	marcel_attr_t a = seed_in(b);
	struct seen s;
	marcel_t t;
	NP(ck_assert_int_eq(marcel_create(&t, &a, record, &s), 0));
	NP(ck_assert_int_eq(marcel_wake_up_bubble(b), 0));
	NP(ck_assert_int_eq(marcel_join(t, NULL), 0));
	NP(ck_assert_ptr_eq(s.holder, b));
}

/* A private bubble initialised again without a destroy: its VP forgets the old one. */
START_TEST(test_init_again)
{
	init("1", "cache");
	marcel_bubble_t b;
	for (int i = 0; i < 2 * MA_TEST_PRIVATE_MAX; i++)
		NP(ck_assert_int_eq(marcel_bubble_init(&b), 0));
	/* Each initialisation replaced the previous one in the VP's table, which would
	 * otherwise be full; either way the level below works. */
	one_seed_level(&b);
	marcel_yield();
	level_end(&b);
	marcel_end();
}
END_TEST

/* marcel_bubble_init on storage that still holds the magic number with garbage around it
 * (an old bubble's bytes partly overwritten by other frames, as check_bubbles run without
 * fork met): nothing it points to is followed, and the bubble set up there works. */
START_TEST(test_init_on_garbage)
{
	init("2", "cache");
	static marcel_bubble_t b;
	memset(&b, 0xa5, sizeof(b));
	((struct ma_bubble *)(void *)&b)->magic = MA_BUBBLE_MAGIC;
	NP(ck_assert_int_eq(marcel_bubble_init(&b), 0));
	one_seed_level(&b);
	level_end(&b);
	marcel_end();
}
END_TEST

/* A private bubble is set up only in part (bubble.c, ma_bubble_setup_hot); the rest
 * comes when it is published. On storage full of garbage, a bubble made private, given
 * a seed, then published by a call that needs it public (marcel_bubble_setid) has every
 * field of the second part at its default, and then works as a public bubble with a time
 * slice (its regeneration). */
START_TEST(test_published_on_garbage)
{
	init("2", "steal");
	static marcel_bubble_t pub;
	memset(&pub, 0xa5, sizeof(pub));
	struct ma_bubble *b = (struct ma_bubble *)(void *)&pub;
	/* An idle VP asking for work preempts this one, and yielding publishes: without
	 * preemption, nothing can publish it between its init and the check. */
	int off = marcel_thread_preemption_disable() == 0;
	NP(ck_assert_int_eq(marcel_bubble_init(&pub), 0));
	NP(ck_assert_ptr_nonnull(atomic_load(&b->unit.private_w)));
	if (off)
		marcel_thread_preemption_enable();
	marcel_attr_t a = seed_in(&pub);
	struct seen s;
	marcel_t t;
	NP(ck_assert_int_eq(marcel_create(&t, &a, record, &s), 0));
	NP(ck_assert_int_eq(marcel_bubble_setid(&pub, 7), 0));
	NP(ck_assert_ptr_null(atomic_load(&b->unit.private_w)));
	NP(ck_assert_int_eq(marcel_bubble_getid(&pub), 7));
	NP(ck_assert_ptr_eq(b->cache.next, &b->cache));
	NP(ck_assert_ptr_eq(b->cache.prev, &b->cache));
	NP(ck_assert_uint_eq(b->nb_cached, 0));
	NP(ck_assert_int_eq(b->queued, 0));
	NP(ck_assert_ptr_null(b->joiner));
	NP(ck_assert_int_eq(b->fixed_item, -1));
	NP(ck_assert_uint_eq(b->timeslice_us, 0));
	NP(ck_assert_int_eq(atomic_load(&b->regen_armed), 0));
	NP(ck_assert_uint_eq(atomic_load(&b->refs), 0));
	NP(ck_assert_uint_eq(atomic_load(&b->nb_out), 0));
	/* Its seed is still its member, created while the bubble was private or after an
	 * idle VP had it published. */
	NP(ck_assert_uint_eq(b->nb_members, 1));
	NP(ck_assert_int_eq(marcel_bubble_settimeslice(&pub, 1000), 0));
	NP(ck_assert_int_eq(marcel_wake_up_bubble(&pub), 0));
	NP(ck_assert_int_eq(marcel_join(t, NULL), 0));
	NP(ck_assert_ptr_eq(s.holder, &pub));
	level_end(&pub);
	marcel_end();
}
END_TEST

/* A recursion whose leaves compute for a while: the idle VP asks for work and gets
 * some, whichever strategy keeps the levels private. */
struct job {
	int depth;
	long sum;
	int vps;        /* bit v: a leaf ran on VP v */
};

static any_t rec(any_t arg)
{
	struct job *j = arg;
	if (!j->depth) {
		volatile long x = 0;
		for (long i = 0; i < 200000; i++)
			x += i & 1;
		j->sum = 1;
		j->vps = 1 << marcel_current_vp();
		return NULL;
	}
	struct job kid[2] = { { .depth = j->depth - 1 }, { .depth = j->depth - 1 } };
	marcel_bubble_t b;
	NP(ck_assert_int_eq(marcel_bubble_init(&b), 0));
	marcel_attr_t a = seed_in(&b);
	marcel_t t[2];
	for (int i = 0; i < 2; i++)
		NP(ck_assert_int_eq(marcel_create(&t[i], &a, rec, &kid[i]), 0));
	NP(ck_assert_int_eq(marcel_wake_up_bubble(&b), 0));
	for (int i = 0; i < 2; i++)
		NP(ck_assert_int_eq(marcel_join(t[i], NULL), 0));
	level_end(&b);
	j->sum = kid[0].sum + kid[1].sum;
	j->vps = kid[0].vps | kid[1].vps;
	return NULL;
}

START_TEST(test_idle_vp_gets_work)
{
	init("2", _i ? "steal" : "cache");
	struct job j = { .depth = 7 };
	rec(&j);
	NP(ck_assert_int_eq(j.sum, 128));
	/* Which VPs ran leaves depends on when the other VP's kernel thread gets a
	 * processor: test_busy_vp_asked checks the hand-over itself. */
	NP(ck_assert_int_ne(j.vps, 0));
	marcel_end();
}
END_TEST

/* A seed computing without calling marcel while its sibling waits in its private bubble:
 * the VP that becomes idle asks for work, a preemption request brings the computing
 * seed to a safe point, and the sibling is handed to the idle VP, which sets the flag the
 * first one waits for. Where this build cannot preempt (ThreadSanitizer), the first seed
 * gives up after a while and only the results are checked. */
static atomic_int go, flag, occupied;

/* Keeps VP 1 busy (yielding, as a cooperative thread must while it waits) until the
 * computing seed runs: the level is then woken privately, and VP 1 idles after. */
static any_t occupy_vp1(any_t arg)
{
	(void)arg;
	atomic_store(&occupied, 1);
	while (!atomic_load(&go))
		marcel_yield();
	return NULL;
}

static any_t spin_for_flag(any_t arg)
{
	struct seen *s = arg;
	atomic_store(&go, 1);
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	s->vp = 0;
	while (!atomic_load(&flag)) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 5) {
			s->vp = -1; /* gave up */
			break;
		}
	}
	return NULL;
}

static any_t set_flag(any_t arg)
{
	record(arg);
	atomic_store(&flag, 1);
	return NULL;
}

/* Starts the runtime under cache with nvp VPs and time slice `slice`; 1 if it runs so,
 * 0 if this build cannot preempt (then it runs cooperative when `fallback` is set, and
 * not at all otherwise). */
static int init_sliced(const char *nvp, const char *slice, int fallback)
{
	setenv("MARCEL_NVP", nvp, 1);
	setenv("MARCEL_TIMESLICE", slice, 1);
	setenv("MARCEL_BUBBLE_SCHEDULER", "cache", 1);
	if (ma_test_topology)
		setenv("MARCEL_TOPOLOGY", ma_test_topology, 1);
	char msg[512];
	int e = ma_test_init_captured(msg, sizeof(msg));
	int sliced = !(e == EINVAL && strstr(msg, "preemption"));
	unsetenv("MARCEL_TIMESLICE");
	if (!sliced && fallback)
		e = ma_test_init_captured(msg, sizeof(msg));
	unsetenv("MARCEL_NVP");
	unsetenv("MARCEL_BUBBLE_SCHEDULER");
	unsetenv("MARCEL_TOPOLOGY");
	if (sliced || fallback)
		NP(ck_assert_msg(e == 0, "marcel_init: %d: %s", e, msg));
	return sliced;
}

START_TEST(test_busy_vp_asked)
{
	/* A time slice longer than the test, only to learn whether this build preempts. */
	int preempts = init_sliced("2", "10000000", 1);
	atomic_store(&go, 0);
	atomic_store(&flag, 0);
	atomic_store(&occupied, 0);
	marcel_attr_t on1 = ma_test_attr_on_vp(1);
	marcel_t x;
	NP(ck_assert_int_eq(marcel_create(&x, &on1, occupy_vp1, NULL), 0));
	while (!atomic_load(&occupied))
		marcel_yield();
	marcel_bubble_t b;
	NP(ck_assert_int_eq(marcel_bubble_init(&b), 0));
	marcel_attr_t a = seed_in(&b);
	struct seen s[2];
	marcel_t t[2];
	NP(ck_assert_int_eq(marcel_create(&t[0], &a, spin_for_flag, &s[0]), 0));
	NP(ck_assert_int_eq(marcel_create(&t[1], &a, set_flag, &s[1]), 0));
	NP(ck_assert_int_eq(marcel_wake_up_bubble(&b), 0));
	for (int i = 0; i < 2; i++)
		NP(ck_assert_int_eq(marcel_join(t[i], NULL), 0));
	NP(ck_assert_int_eq(atomic_load(&flag), 1));
	NP(ck_assert_ptr_eq(s[1].holder, &b));
	if (preempts) {
		NP(ck_assert_msg(s[0].vp == 0, "the computing seed waited 5 s for its sibling"));
		NP(ck_assert_int_eq(s[1].vp, 1));
	}
	level_end(&b);
	NP(ck_assert_int_eq(marcel_join(x, NULL), 0));
	marcel_end();
}
END_TEST

/* Many levels at once on more VPs than processors, whose seeds yield, sleep, take a
 * mutex, leave detached seeds in their level, look at their level from outside (which
 * publishes it) and get handed from VP to VP: every leaf must be counted once, and
 * every detached seed must run before its level's join returns. */
static marcel_mutex_t smtx;
static atomic_int detached_ran;

struct sjob {
	int depth;
	unsigned seed;
	long leaves;
};

static unsigned nkids(unsigned r)
{
	return r % 3 == 0 ? 3 : 2;
}

/* What the recursion below must find, computed without threads. */
static long expect_leaves(int depth, unsigned seed)
{
	unsigned r = seed * 2654435761u + 12345u;
	if (!depth)
		return 1;
	long n = 0;
	for (unsigned i = 0; i < nkids(r); i++)
		n += expect_leaves(depth - 1, r * 31u + i);
	return n;
}

static any_t count_detached(any_t arg)
{
	(void)arg;
	atomic_fetch_add(&detached_ran, 1);
	return NULL;
}

static any_t srec(any_t arg)
{
	struct sjob *j = arg;
	unsigned r = j->seed * 2654435761u + 12345u;
	if (r % 7 == 0)
		marcel_yield();
	if (r % 11 == 0)
		marcel_usleep(5);
	if (r % 13 == 0) {
		marcel_mutex_lock(&smtx);
		marcel_mutex_unlock(&smtx);
	}
	if (!j->depth) {
		j->leaves = 1;
		return NULL;
	}
	struct sjob kid[3];
	marcel_t t[3];
	unsigned n = nkids(r);
	marcel_bubble_t b;
	NP(ck_assert_int_eq(marcel_bubble_init(&b), 0));
	marcel_attr_t a = seed_in(&b);
	for (unsigned i = 0; i < n; i++) {
		kid[i] = (struct sjob){ .depth = j->depth - 1, .seed = r * 31u + i };
		NP(ck_assert_int_eq(marcel_create(&t[i], &a, srec, &kid[i]), 0));
	}
	if (r % 17 == 0)
		NP(ck_assert_int_eq(marcel_create(NULL, &a, count_detached, NULL), 0));
	NP(ck_assert_int_eq(marcel_wake_up_bubble(&b), 0));
	if (r % 19 == 0)
		NP(ck_assert_ptr_eq(marcel_bubble_holding_bubble(&b), marcel_bubble_holding_task(marcel_self())));
	j->leaves = 0;
	for (unsigned i = 0; i < n; i++) {
		NP(ck_assert_int_eq(marcel_join(t[i], NULL), 0));
		j->leaves += kid[i].leaves;
	}
	level_end(&b);
	return NULL;
}

static long expect_detached(int depth, unsigned seed)
{
	unsigned r = seed * 2654435761u + 12345u;
	if (!depth)
		return 0;
	long n = r % 17 == 0;
	for (unsigned i = 0; i < nkids(r); i++)
		n += expect_detached(depth - 1, r * 31u + i);
	return n;
}

START_TEST(test_stress)
{
	init("4", _i % 2 ? "steal" : "cache");
	NP(ck_assert_int_eq(marcel_mutex_init(&smtx, NULL), 0));
	for (unsigned k = 0; k < 4; k++) {
		atomic_store(&detached_ran, 0);
		struct sjob j = { .depth = 8, .seed = k + 10u * (unsigned)_i };
		srec(&j);
		NP(ck_assert_int_eq(j.leaves, expect_leaves(j.depth, j.seed)));
		NP(ck_assert_int_eq(atomic_load(&detached_ran), expect_detached(j.depth, j.seed)));
	}
	marcel_end();
}
END_TEST

/* A seed that wakes a bubble its joiner made, then returns: a public wake-up would have
 * put that bubble into the seed's; it must be there, and its seed must run, even once
 * the ended seed's descriptor serves another thread. */
static marcel_bubble_t dw[3];
static marcel_t dw_leaf;

static any_t nothing(any_t arg)
{
	return arg;
}

static any_t wake_joiners(any_t arg)
{
	(void)arg;
	marcel_attr_t a = seed_in(&dw[1]);
	NP(ck_assert_int_eq(marcel_create(&dw_leaf, &a, nothing, NULL), 0));
	NP(ck_assert_int_eq(marcel_wake_up_bubble(&dw[1]), 0));
	return NULL;
}

START_TEST(test_seed_wakes_older)
{
	init("1", _i ? "steal" : "cache");
	for (int i = 0; i < 2; i++)
		NP(ck_assert_int_eq(marcel_bubble_init(&dw[i]), 0));
	marcel_attr_t a = seed_in(&dw[0]);
	marcel_t s, x;
	NP(ck_assert_int_eq(marcel_create(&s, &a, wake_joiners, NULL), 0));
	NP(ck_assert_int_eq(marcel_wake_up_bubble(&dw[0]), 0));
	NP(ck_assert_int_eq(marcel_join(s, NULL), 0));
	/* Likely the same descriptor as s, now a seed of an unwoken private bubble. */
	NP(ck_assert_int_eq(marcel_bubble_init(&dw[2]), 0));
	marcel_attr_t a2 = seed_in(&dw[2]);
	NP(ck_assert_int_eq(marcel_create(&x, &a2, nothing, NULL), 0));
	NP(ck_assert_ptr_eq(marcel_bubble_holding_bubble(&dw[1]), &dw[0]));
	NP(ck_assert_int_eq(marcel_join(dw_leaf, NULL), 0));
	NP(ck_assert_int_eq(marcel_wake_up_bubble(&dw[2]), 0));
	NP(ck_assert_int_eq(marcel_join(x, NULL), 0));
	for (int i = 1; i < 3; i++)
		level_end(&dw[i]);
	level_end(&dw[0]);
	marcel_end();
}
END_TEST

/* A seed of a private bubble creates threads without a bubble: they go into its children
 * bubble, inside the private one, and end on another VP, counting down from there, while
 * the seed adds and ends seeds of the private bubble. The bubble's count must come back
 * to 0. */
static marcel_bubble_t cr;

static atomic_int yielder_stop, yielder_started;
static marcel_attr_t cr_pin; /* detached, on VP 1 */

static any_t yield_until_stop(any_t arg)
{
	atomic_store(&yielder_started, 1);
	while (!atomic_load(&yielder_stop))
		marcel_yield();
	return arg;
}

static any_t mixed_creates(any_t arg)
{
	(void)arg;
	marcel_attr_t pin = cr_pin;
	marcel_attr_t a = seed_in(&cr);
	for (int i = 0; i < 2000; i++) {
		NP(ck_assert_int_eq(marcel_create(NULL, &pin, nothing, NULL), 0));
		marcel_t t;
		NP(ck_assert_int_eq(marcel_create(&t, &a, nothing, NULL), 0));
		NP(ck_assert_int_eq(marcel_join(t, NULL), 0));
	}
	return NULL;
}

START_TEST(test_children_of_private_seed)
{
	init("2", _i ? "steal" : "cache");
	/* VP 1 busy, yielding: the level stays private, and the threads go there. */
	marcel_attr_t on1 = ma_test_attr_on_vp(1);
	cr_pin = on1;
	NP(ck_assert_int_eq(marcel_attr_setdetachstate(&cr_pin, MARCEL_CREATE_DETACHED), 0));
	marcel_t y;
	atomic_store(&yielder_stop, 0);
	NP(ck_assert_int_eq(marcel_create(&y, &on1, yield_until_stop, NULL), 0));
	while (!atomic_load(&yielder_started))
		marcel_yield();
	NP(ck_assert_int_eq(marcel_bubble_init(&cr), 0));
	marcel_attr_t a = seed_in(&cr);
	marcel_t s;
	NP(ck_assert_int_eq(marcel_create(&s, &a, mixed_creates, NULL), 0));
	NP(ck_assert_int_eq(marcel_wake_up_bubble(&cr), 0));
	/* Run inline here, while VP 1 ends the threads it creates. */
	NP(ck_assert_int_eq(marcel_join(s, NULL), 0));
	atomic_store(&yielder_stop, 1);
	NP(ck_assert_int_eq(marcel_join(y, NULL), 0));
	level_end(&cr);
	marcel_end();
}
END_TEST

/* One VP with a time slice: a thread spinning in its own code while the seed it woke
 * waits in a private bubble is preempted, and the seed runs (it would, queued). */
static atomic_int seed_ran;

START_TEST(test_time_slice_runs_private_seed)
{
	if (!init_sliced("1", "5000", 0))
		return; /* this build cannot preempt: nothing to test */
	atomic_store(&seed_ran, 0);
	marcel_bubble_t b;
	NP(ck_assert_int_eq(marcel_bubble_init(&b), 0));
	marcel_attr_t a = seed_in(&b);
	marcel_t t;
	NP(ck_assert_int_eq(marcel_create(&t, &a, ma_test_set_flag, &seed_ran), 0));
	NP(ck_assert_int_eq(marcel_wake_up_bubble(&b), 0));
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &now);
	while (!atomic_load(&seed_ran) && now.tv_sec - t0.tv_sec < 5);
	NP(ck_assert_msg(atomic_load(&seed_ran), "the seed did not run in 5 s of time slices"));
	NP(ck_assert_int_eq(marcel_join(t, NULL), 0));
	level_end(&b);
	marcel_end();
}
END_TEST

static void tc_private(TCase *tc)
{
	tcase_add_loop_test(tc, test_level, 0, 6);
	tcase_add_test(tc, test_seen_woken);
	tcase_add_loop_test(tc, test_seed_switches_out, 0, 2);
	tcase_add_loop_test(tc, test_left_behind, 0, 2);
	tcase_add_test(tc, test_other_vp);
	tcase_add_test(tc, test_init_again);
	tcase_add_test(tc, test_init_on_garbage);
	tcase_add_test(tc, test_published_on_garbage);
	tcase_add_loop_test(tc, test_idle_vp_gets_work, 0, 2);
	tcase_add_test(tc, test_busy_vp_asked);
	tcase_add_loop_test(tc, test_stress, 0, 4);
	tcase_add_loop_test(tc, test_seed_wakes_older, 0, 2);
	tcase_add_loop_test(tc, test_children_of_private_seed, 0, 2);
	tcase_add_test(tc, test_time_slice_runs_private_seed);
}

int main(void)
{
	Suite *s = suite_create("private");
	ma_test_add_both(s, "private", tc_private, 120);
	return ma_test_run(s);
}
