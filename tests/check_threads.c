/*
 * The thread API (marcel/thread.h, marcel/attr.h, marcel/topology.h) against its documented
 * contract: creation, join/detach and their error codes, attributes, per-thread state,
 * placement, priorities, yield_to, the topology view, and the runtime's start and stop.
 * Every tcase runs on this machine and on the synthetic 32-PU topology (ma_test.h).
 *
 * Tests that need a deterministic order run their threads on a single VP: a thread bound
 * to the VP its creator is running on cannot start before the creator blocks or yields
 * (there is no preemption), and nothing else can run it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fenv.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include "ma_test.h"

#define I2P(i) ((any_t)(intptr_t)(i))
#define P2I(p) ((int)(intptr_t)(p))

/* Runs fn in a plain kernel thread (not a marcel thread) and returns its result. */
static void *in_pthread(void *(*fn)(void *), void *arg)
{
	pthread_t pt;
	void *ret;
	ck_assert_int_eq(pthread_create(&pt, NULL, fn, arg), 0);
	ck_assert_int_eq(pthread_join(pt, &ret), 0);
	return ret;
}

/* ------------------------------------------------------------------ creation / join */

static any_t add_one(any_t arg)
{
	return I2P(P2I(arg) + 1);
}

static marcel_t seen_self;

static any_t record_self(any_t arg)
{
	seen_self = marcel_self();
	return arg;
}

START_TEST(test_create_join)
{
	ma_test_init();
	marcel_t t;
	any_t ret = NULL;
	ck_assert_int_eq(marcel_create(&t, NULL, add_one, I2P(41)), 0);
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(marcel_join(t, &ret), 0);
	ck_assert_int_eq(P2I(ret), 42);

	/* Status may be NULL; marcel_self inside is the handle. */
	ck_assert_int_eq(marcel_create(&t, NULL, record_self, I2P(7)), 0);
	marcel_t handle = t;
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_ptr_eq(seen_self, handle);

	/* Many at once, each result checked. */
	marcel_t ts[64];
	for (int i = 0; i < 64; i++)
		ck_assert_int_eq(marcel_create(&ts[i], NULL, add_one, I2P(i)), 0);
	for (int i = 0; i < 64; i++) {
		ck_assert_int_eq(marcel_join(ts[i], &ret), 0);
		ck_assert_int_eq(P2I(ret), i + 1);
	}
	marcel_end();
}
END_TEST

static atomic_int nopid_count;

static any_t nopid_body(any_t arg)
{
	for (int i = 0; i < 200; i++)
		marcel_yield();
	atomic_fetch_add(&nopid_count, P2I(arg));
	return NULL;
}

START_TEST(test_create_nopid)
{
	ma_test_init();
	atomic_store(&nopid_count, 0);
	for (int i = 0; i < 20; i++)
		ck_assert_int_eq(marcel_create(NULL, NULL, nopid_body, I2P(1)), 0);
	/* marcel_end waits for them: none may be lost. */
	marcel_end();
	ck_assert_int_eq(atomic_load(&nopid_count), 20);
}
END_TEST

static atomic_int dontsched_ran;

static any_t dontsched_body(any_t arg)
{
	atomic_store(&dontsched_ran, 1);
	return arg;
}

START_TEST(test_dontsched)
{
	ma_test_init();
	atomic_store(&dontsched_ran, 0);
	marcel_t t;
	ck_assert_int_eq(marcel_create_dontsched(&t, NULL, dontsched_body, I2P(5)), 0);
	for (int i = 0; i < 500; i++) {
		ck_assert_int_eq(marcel_yield(), 0);
		for (volatile int k = 0; k < 1000; k++)
			;
	}
	ck_assert_int_eq(atomic_load(&dontsched_ran), 0);
	ck_assert_int_eq(marcel_wake_up_created_thread(t), 0);
	ck_assert_int_eq(marcel_wake_up_created_thread(t), EINVAL);
	any_t ret;
	ck_assert_int_eq(marcel_join(t, &ret), 0);
	ck_assert_int_eq(P2I(ret), 5);
	ck_assert_int_eq(atomic_load(&dontsched_ran), 1);

	/* A thread made with marcel_create cannot be woken; NULL is ESRCH. */
	ck_assert_int_eq(marcel_create(&t, NULL, add_one, I2P(1)), 0);
	ck_assert_int_eq(marcel_wake_up_created_thread(t), EINVAL);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_int_eq(marcel_wake_up_created_thread(NULL), ESRCH);

	/* With attributes, on a given VP. */
	marcel_attr_t a = ma_test_attr_on_vp(marcel_nbvps() - 1);
	atomic_store(&dontsched_ran, 0);
	ck_assert_int_eq(marcel_create_dontsched(&t, &a, dontsched_body, I2P(6)), 0);
	for (int i = 0; i < 300; i++)
		marcel_yield();
	ck_assert_int_eq(atomic_load(&dontsched_ran), 0);
	ck_assert_int_eq(marcel_wake_up_created_thread(t), 0);
	ck_assert_int_eq(marcel_join(t, &ret), 0);
	ck_assert_int_eq(P2I(ret), 6);
	marcel_end();
}
END_TEST

static any_t nested_exit_inner(int v)
{
	marcel_exit(I2P(v));
}

static atomic_int after_exit;

static __attribute__((noinline)) int nested_exit_middle(int v)
{
	nested_exit_inner(v * 2);
	atomic_store(&after_exit, 1);
	return 0;
}

static any_t nested_exit_body(any_t arg)
{
	int r = nested_exit_middle(P2I(arg));
	atomic_store(&after_exit, 1);
	return I2P(r - 1);
}

START_TEST(test_exit_nested)
{
	ma_test_init();
	atomic_store(&after_exit, 0);
	marcel_t t;
	any_t ret;
	ck_assert_int_eq(marcel_create(&t, NULL, nested_exit_body, I2P(38)), 0);
	ck_assert_int_eq(marcel_join(t, &ret), 0);
	ck_assert_int_eq(P2I(ret), 76);
	ck_assert_int_eq(atomic_load(&after_exit), 0);
	marcel_end();
}
END_TEST

/* marcel_exit from main = marcel_end + exit(0): the detached threads still complete. */
static void main_exit_check(void)
{
	if (atomic_load(&nopid_count) != 3)
		_exit(3);
}

START_TEST(test_exit_main)
{
	const char *fork = getenv("CK_FORK");
	ma_test_init();
	atomic_store(&nopid_count, 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(marcel_create(NULL, NULL, nopid_body, I2P(1)), 0);
	if (fork && !strcmp(fork, "no")) {
		/* Without fork the exit would end the whole run. */
		marcel_end();
		ck_assert_int_eq(atomic_load(&nopid_count), 3);
		return;
	}
	/* Exits with 0 once the three are done; main_exit_check turns a lost one into 3. */
	atexit(main_exit_check);
	marcel_exit(NULL);
}
END_TEST

/* ------------------------------------------------------------------ error codes */

static atomic_int release;

static any_t wait_release(any_t arg)
{
	while (!atomic_load(&release))
		marcel_yield();
	return arg;
}

START_TEST(test_join_errors)
{
	ma_test_init();
	marcel_t t;
	/* Join self: main, then from a thread. */
	ck_assert_int_eq(marcel_join(marcel_self(), NULL), EDEADLK);
	ck_assert_int_eq(marcel_join(NULL, NULL), ESRCH);
	ck_assert_int_eq(marcel_detach(NULL), ESRCH);

	/* Join twice. */
	ck_assert_int_eq(marcel_create(&t, NULL, add_one, I2P(1)), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_int_eq(marcel_join(t, NULL), ESRCH);
	ck_assert_int_eq(marcel_detach(t), ESRCH);

	/* A detached thread (attribute) cannot be joined or detached again. */
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setdetachstate(&a, MARCEL_CREATE_DETACHED), 0);
	atomic_store(&release, 0);
	ck_assert_int_eq(marcel_create(&t, &a, wait_release, NULL), 0);
	ck_assert_int_eq(marcel_join(t, NULL), EINVAL);
	ck_assert_int_eq(marcel_detach(t), EINVAL);
	atomic_store(&release, 1);

	/* Detach, then join / detach again. */
	atomic_store(&release, 0);
	ck_assert_int_eq(marcel_create(&t, NULL, wait_release, NULL), 0);
	ck_assert_int_eq(marcel_detach(t), 0);
	ck_assert_int_eq(marcel_detach(t), EINVAL);
	ck_assert_int_eq(marcel_join(t, NULL), EINVAL);
	atomic_store(&release, 1);
	marcel_end();
}
END_TEST

static any_t join_self_body(any_t arg)
{
	(void)arg;
	return I2P(marcel_join(marcel_self(), NULL));
}

START_TEST(test_join_self_thread)
{
	ma_test_init();
	marcel_t t;
	any_t ret;
	ck_assert_int_eq(marcel_create(&t, NULL, join_self_body, NULL), 0);
	ck_assert_int_eq(marcel_join(t, &ret), 0);
	ck_assert_int_eq(P2I(ret), EDEADLK);
	marcel_end();
}
END_TEST

START_TEST(test_detach_after_end)
{
	ma_test_init();
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, NULL, add_one, I2P(1)), 0);
	/* yield_to reports ESRCH once the thread has ended (and before it is collected). */
	int r, rounds = 0;
	while ((r = marcel_yield_to(t)) != ESRCH) {
		ck_assert_msg(r == 0 || r == EAGAIN, "yield_to returned %d", r);
		ck_assert_int_lt(++rounds, 10000000);
	}
	ck_assert_int_eq(marcel_detach(t), 0);
	/* Reclaimed at once: the handle is gone. */
	ck_assert_int_eq(marcel_join(t, NULL), ESRCH);
	ck_assert_int_eq(marcel_detach(t), ESRCH);
	marcel_end();
}
END_TEST

START_TEST(test_create_errors)
{
	ma_test_init();
	marcel_t t = NULL;
	ck_assert_int_eq(marcel_create(&t, NULL, NULL, NULL), EINVAL);
	ck_assert_int_eq(marcel_create_dontsched(&t, NULL, NULL, NULL), EINVAL);

	marcel_attr_t garbage;
	memset(&garbage, 0xa5, sizeof(garbage));
	ck_assert_int_eq(marcel_create(&t, &garbage, add_one, NULL), EINVAL);
	memset(&garbage, 0, sizeof(garbage));
	ck_assert_int_eq(marcel_create(&t, &garbage, add_one, NULL), EINVAL);
	ck_assert_int_eq(marcel_create_dontsched(&t, &garbage, add_one, NULL), EINVAL);

	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_destroy(&a), 0);
	ck_assert_int_eq(marcel_create(&t, &a, add_one, NULL), EINVAL);

	/* A vpset naming only VPs that do not exist. */
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setvpset(&a, MARCEL_VPSET_VP(marcel_nbvps())), 0);
	ck_assert_int_eq(marcel_create(&t, &a, add_one, NULL), EINVAL);
	ck_assert_int_eq(marcel_create(NULL, &a, add_one, NULL), EINVAL);
	ck_assert_int_eq(marcel_attr_setvpset(&a, MARCEL_VPSET_VP(MARCEL_NBMAXVPS - 1)), 0);
	ck_assert_int_eq(marcel_create(&t, &a, add_one, NULL), EINVAL);
	/* One existing VP is enough. */
	marcel_vpset_t set = MARCEL_VPSET_VP(marcel_nbvps());
	marcel_vpset_set(&set, 0);
	ck_assert_int_eq(marcel_attr_setvpset(&a, set), 0);
	any_t ret;
	ck_assert_int_eq(marcel_create(&t, &a, add_one, I2P(2)), 0);
	ck_assert_int_eq(marcel_join(t, &ret), 0);
	ck_assert_int_eq(P2I(ret), 3);
	marcel_end();
}
END_TEST

struct outside {
	int yield, yield_to, vp, join_null, create;
	marcel_t self;
};

static void *outside_probe(void *arg)
{
	struct outside *o = arg;
	o->yield = marcel_yield();
	o->yield_to = marcel_yield_to(NULL);
	o->vp = marcel_current_vp();
	o->self = marcel_self();
	o->join_null = marcel_join(NULL, NULL);
	return o;
}

START_TEST(test_outside_runtime)
{
	/* Before marcel_init. */
	marcel_t t = NULL;
	ck_assert_int_eq(marcel_create(&t, NULL, add_one, NULL), EPERM);
	ck_assert_int_eq(marcel_create(NULL, NULL, add_one, NULL), EPERM);
	ck_assert_int_eq(marcel_create_dontsched(&t, NULL, add_one, NULL), EPERM);
	ck_assert_int_eq(marcel_yield(), EPERM);
	ck_assert_ptr_null(marcel_self());
	ck_assert_int_eq(marcel_current_vp(), -1);
	ck_assert_uint_eq(marcel_nbvps(), 0);
	ck_assert_int_eq(marcel_join(NULL, NULL), ESRCH);

	ma_test_init();
	/* A plain kernel thread while the runtime runs. */
	struct outside o;
	memset(&o, 0x55, sizeof(o));
	in_pthread(outside_probe, &o);
	ck_assert_int_eq(o.yield, EPERM);
	ck_assert_int_eq(o.yield_to, EPERM);
	ck_assert_int_eq(o.vp, -1);
	ck_assert_ptr_null(o.self);
	ck_assert_int_eq(o.join_null, ESRCH);
	marcel_end();

	/* After marcel_end, as before marcel_init. */
	ck_assert_int_eq(marcel_create(&t, NULL, add_one, NULL), EPERM);
	ck_assert_int_eq(marcel_yield(), EPERM);
	ck_assert_ptr_null(marcel_self());
	ck_assert_int_eq(marcel_current_vp(), -1);
	ck_assert_uint_eq(marcel_nbvps(), 0);
}
END_TEST

struct pjoin {
	marcel_t t;
	atomic_int started;
	int ret;
	any_t status;
};

static void *pthread_joiner(void *arg)
{
	struct pjoin *p = arg;
	atomic_store(&p->started, 1);
	p->ret = marcel_join(p->t, &p->status);
	return NULL;
}

START_TEST(test_join_from_pthread)
{
	ma_test_init();
	struct pjoin p = { .ret = -1 };
	atomic_store(&release, 0);
	ck_assert_int_eq(marcel_create(&p.t, NULL, wait_release, I2P(99)), 0);
	pthread_t pt;
	ck_assert_int_eq(pthread_create(&pt, NULL, pthread_joiner, &p), 0);
	while (!atomic_load(&p.started))
		marcel_yield();
	/* Let it block in the kernel before the thread ends. */
	usleep(20000);
	atomic_store(&release, 1);
	ck_assert_int_eq(pthread_join(pt, NULL), 0);
	ck_assert_int_eq(p.ret, 0);
	ck_assert_int_eq(P2I(p.status), 99);

	/* On a thread that has already ended. */
	struct pjoin q = { .ret = -1 };
	ck_assert_int_eq(marcel_create(&q.t, NULL, add_one, I2P(10)), 0);
	while (marcel_yield_to(q.t) != ESRCH)
		;
	in_pthread(pthread_joiner, &q);
	ck_assert_int_eq(q.ret, 0);
	ck_assert_int_eq(P2I(q.status), 11);
	marcel_end();
}
END_TEST

/* Second joiner: runs on main's VP, so only once main has blocked in its own join. */
struct second_join {
	marcel_t target;
	int join_ret, detach_ret;
};

static any_t second_joiner(any_t arg)
{
	struct second_join *s = arg;
	s->join_ret = marcel_join(s->target, NULL);
	s->detach_ret = marcel_detach(s->target);
	atomic_store(&release, 1);
	return NULL;
}

START_TEST(test_two_joiners)
{
	ma_test_init();
	atomic_store(&release, 0);
	struct second_join s = { .join_ret = -1, .detach_ret = -1 };
	marcel_attr_t a = ma_test_attr_on_vp(ma_test_here());
	marcel_t j2;
	any_t ret;
	ck_assert_int_eq(marcel_create(&s.target, &a, wait_release, I2P(17)), 0);
	ck_assert_int_eq(marcel_create(&j2, &a, second_joiner, &s), 0);
	/* No yield since the creations: neither has run; the target ends only after j2. */
	ck_assert_int_eq(marcel_join(s.target, &ret), 0);
	ck_assert_int_eq(P2I(ret), 17);
	ck_assert_int_eq(marcel_join(j2, NULL), 0);
	ck_assert_int_eq(s.join_ret, EINVAL);
	ck_assert_int_eq(s.detach_ret, EINVAL);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ attributes */

START_TEST(test_attr_defaults)
{
	/* Attributes work before marcel_init. */
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	size_t sz = 1;
	int v = -1;
	char name[MARCEL_MAXNAMESIZE];
	marcel_vpset_t set = MARCEL_VPSET_ZERO;
	ck_assert_int_eq(marcel_attr_getstacksize(&a, &sz), 0);
	ck_assert_uint_eq(sz, 0);
	ck_assert_int_eq(marcel_attr_getdetachstate(&a, &v), 0);
	ck_assert_int_eq(v, MARCEL_CREATE_JOINABLE);
	ck_assert_int_eq(marcel_attr_getprio(&a, &v), 0);
	ck_assert_int_eq(v, MA_DEF_PRIO);
	ck_assert_int_eq(marcel_attr_getschedpolicy(&a, &v), 0);
	ck_assert_int_eq(v, MARCEL_SCHED_DEFAULT);
	ck_assert_int_eq(v, MARCEL_SCHED_SHARED);
	ck_assert_int_eq(marcel_attr_getpreemptible(&a, &v), 0);
	ck_assert_int_ne(v, 0);
	ck_assert_int_eq(marcel_attr_getvpset(&a, &set), 0);
	for (unsigned vp = 0; vp < MARCEL_NBMAXVPS; vp++)
		ck_assert(marcel_vpset_isset(&set, vp));
	ck_assert_int_eq(marcel_attr_getname(&a, name, sizeof(name)), 0);
	ck_assert_str_eq(name, "user");

	ma_test_init();
	/* The same object serves several creations. */
	marcel_t t1, t2;
	any_t r1, r2;
	ck_assert_int_eq(marcel_create(&t1, &a, add_one, I2P(1)), 0);
	ck_assert_int_eq(marcel_create(&t2, &a, add_one, I2P(2)), 0);
	ck_assert_int_eq(marcel_join(t1, &r1), 0);
	ck_assert_int_eq(marcel_join(t2, &r2), 0);
	ck_assert_int_eq(P2I(r1) + P2I(r2), 5);
	ck_assert_int_eq(marcel_attr_destroy(&a), 0);
	marcel_end();
}
END_TEST

START_TEST(test_attr_stacksize)
{
	ma_test_init();
	marcel_attr_t a;
	size_t sz, page = (size_t)sysconf(_SC_PAGESIZE);
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setstacksize(&a, MARCEL_STACK_MIN), 0);
	ck_assert_int_eq(marcel_attr_getstacksize(&a, &sz), 0);
	ck_assert_uint_eq(sz, MARCEL_STACK_MIN);
	ck_assert_int_eq(marcel_attr_setstacksize(&a, MARCEL_STACK_MIN + 1), 0);
	ck_assert_int_eq(marcel_attr_getstacksize(&a, &sz), 0);
	ck_assert_uint_eq(sz, MARCEL_STACK_MIN + page);
	ck_assert_int_eq(marcel_attr_setstacksize(&a, 100000), 0);
	ck_assert_int_eq(marcel_attr_getstacksize(&a, &sz), 0);
	ck_assert_uint_eq(sz, (100000 + page - 1) / page * page);
	ck_assert_int_eq(marcel_attr_setstacksize(&a, MARCEL_STACK_MAX), 0);
	ck_assert_int_eq(marcel_attr_getstacksize(&a, &sz), 0);
	ck_assert_uint_eq(sz, MARCEL_STACK_MAX);
	/* Out of range: refused, value unchanged. */
	ck_assert_int_eq(marcel_attr_setstacksize(&a, 65536), 0);
	ck_assert_int_eq(marcel_attr_setstacksize(&a, MARCEL_STACK_MIN - 1), EINVAL);
	ck_assert_int_eq(marcel_attr_setstacksize(&a, 0), EINVAL);
	ck_assert_int_eq(marcel_attr_setstacksize(&a, MARCEL_STACK_MAX + 1), EINVAL);
	ck_assert_int_eq(marcel_attr_setstacksize(&a, (size_t)-1), EINVAL);
	ck_assert_int_eq(marcel_attr_getstacksize(&a, &sz), 0);
	ck_assert_uint_eq(sz, 65536);
	/* A thread with the smallest stack runs. */
	ck_assert_int_eq(marcel_attr_setstacksize(&a, MARCEL_STACK_MIN), 0);
	marcel_t t;
	any_t ret;
	ck_assert_int_eq(marcel_create(&t, &a, add_one, I2P(1)), 0);
	ck_assert_int_eq(marcel_join(t, &ret), 0);
	ck_assert_int_eq(P2I(ret), 2);
	marcel_end();
}
END_TEST

START_TEST(test_attr_setters)
{
	ma_test_init();
	marcel_attr_t a;
	int v;
	ck_assert_int_eq(marcel_attr_init(&a), 0);

	ck_assert_int_eq(marcel_attr_setdetachstate(&a, MARCEL_CREATE_DETACHED), 0);
	ck_assert_int_eq(marcel_attr_getdetachstate(&a, &v), 0);
	ck_assert_int_eq(v, MARCEL_CREATE_DETACHED);
	ck_assert_int_eq(marcel_attr_setdetachstate(&a, 2), EINVAL);
	ck_assert_int_eq(marcel_attr_setdetachstate(&a, -1), EINVAL);
	ck_assert_int_eq(marcel_attr_getdetachstate(&a, &v), 0);
	ck_assert_int_eq(v, MARCEL_CREATE_DETACHED);
	ck_assert_int_eq(marcel_attr_setdetachstate(&a, MARCEL_CREATE_JOINABLE), 0);
	ck_assert_int_eq(marcel_attr_getdetachstate(&a, &v), 0);
	ck_assert_int_eq(v, MARCEL_CREATE_JOINABLE);

	ck_assert_int_eq(marcel_attr_setprio(&a, 0), 0);
	ck_assert_int_eq(marcel_attr_getprio(&a, &v), 0);
	ck_assert_int_eq(v, 0);
	ck_assert_int_eq(marcel_attr_setprio(&a, MA_MAX_PRIO - 1), 0);
	ck_assert_int_eq(marcel_attr_getprio(&a, &v), 0);
	ck_assert_int_eq(v, MA_MAX_PRIO - 1);
	ck_assert_int_eq(marcel_attr_setprio(&a, MA_BATCH_PRIO), 0);
	ck_assert_int_eq(marcel_attr_setprio(&a, -1), EINVAL);
	ck_assert_int_eq(marcel_attr_setprio(&a, MA_MAX_PRIO), EINVAL);
	ck_assert_int_eq(marcel_attr_getprio(&a, &v), 0);
	ck_assert_int_eq(v, MA_BATCH_PRIO);

	for (int p = MARCEL_SCHED_SHARED; p <= MARCEL_SCHED_BALANCE; p++) {
		ck_assert_int_eq(marcel_attr_setschedpolicy(&a, p), 0);
		ck_assert_int_eq(marcel_attr_getschedpolicy(&a, &v), 0);
		ck_assert_int_eq(v, p);
	}
	ck_assert_int_eq(marcel_attr_setschedpolicy(&a, 4), EINVAL);
	ck_assert_int_eq(marcel_attr_setschedpolicy(&a, -1), EINVAL);
	ck_assert_int_eq(marcel_attr_getschedpolicy(&a, &v), 0);
	ck_assert_int_eq(v, MARCEL_SCHED_BALANCE);

	marcel_vpset_t set = MARCEL_VPSET_VP(3), got;
	marcel_vpset_set(&set, 7);
	ck_assert_int_eq(marcel_attr_setvpset(&a, set), 0);
	ck_assert_int_eq(marcel_attr_setvpset(&a, MARCEL_VPSET_ZERO), EINVAL);
	ck_assert_int_eq(marcel_attr_getvpset(&a, &got), 0);
	ck_assert_uint_eq(marcel_vpset_weight(&got), 2);
	ck_assert(marcel_vpset_isset(&got, 3) && marcel_vpset_isset(&got, 7));

	ck_assert_int_eq(marcel_attr_setpreemptible(&a, 0), 0);
	ck_assert_int_eq(marcel_attr_getpreemptible(&a, &v), 0);
	ck_assert_int_eq(v, 0);
	ck_assert_int_eq(marcel_attr_setpreemptible(&a, 5), 0);
	ck_assert_int_eq(marcel_attr_getpreemptible(&a, &v), 0);
	ck_assert_int_ne(v, 0);
	marcel_end();
}
END_TEST

START_TEST(test_attr_names)
{
	ma_test_init();
	marcel_attr_t a;
	char buf[MARCEL_MAXNAMESIZE + 8];
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setname(&a, "worker-7"), 0);
	ck_assert_int_eq(marcel_attr_getname(&a, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "worker-7");
	ck_assert_int_eq(marcel_attr_setname(&a, NULL), EINVAL);
	ck_assert_int_eq(marcel_attr_getname(&a, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "worker-7");
	/* Exactly fits / one byte short. */
	ck_assert_int_eq(marcel_attr_getname(&a, buf, 9), 0);
	ck_assert_str_eq(buf, "worker-7");
	memset(buf, 'z', sizeof(buf));
	ck_assert_int_eq(marcel_attr_getname(&a, buf, 8), ERANGE);
	ck_assert_int_eq(marcel_attr_getname(&a, buf, 0), ERANGE);
	ck_assert_int_eq(marcel_attr_getname(&a, NULL, 16), EINVAL);
	/* Truncation to MARCEL_MAXNAMESIZE - 1. */
	const char *longname = "a-thread-name-that-is-much-longer-than-the-limit";
	ck_assert_int_eq(marcel_attr_setname(&a, longname), 0);
	ck_assert_int_eq(marcel_attr_getname(&a, buf, sizeof(buf)), 0);
	ck_assert_uint_eq(strlen(buf), MARCEL_MAXNAMESIZE - 1);
	ck_assert_int_eq(strncmp(buf, longname, MARCEL_MAXNAMESIZE - 1), 0);
	ck_assert_int_eq(marcel_attr_getname(&a, buf, MARCEL_MAXNAMESIZE - 1), ERANGE);
	ck_assert_int_eq(marcel_attr_setname(&a, ""), 0);
	ck_assert_int_eq(marcel_attr_getname(&a, buf, 1), 0);
	ck_assert_str_eq(buf, "");
	marcel_end();
}
END_TEST

START_TEST(test_attr_invalid)
{
	ma_test_init();
	marcel_attr_t a, garbage;
	size_t sz;
	int v;
	char buf[64];
	marcel_vpset_t set;
	memset(&garbage, 0x5a, sizeof(garbage));
	ck_assert_int_eq(marcel_attr_init(NULL), EINVAL);
	ck_assert_int_eq(marcel_attr_destroy(NULL), EINVAL);
	ck_assert_int_eq(marcel_attr_destroy(&garbage), EINVAL);
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_destroy(&a), 0);
	ck_assert_int_eq(marcel_attr_destroy(&a), EINVAL);

	marcel_attr_t *bad[] = { NULL, &a, &garbage };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		marcel_attr_t *p = bad[i];
		ck_assert_int_eq(marcel_attr_setstacksize(p, 65536), EINVAL);
		ck_assert_int_eq(marcel_attr_getstacksize(p, &sz), EINVAL);
		ck_assert_int_eq(marcel_attr_setdetachstate(p, MARCEL_CREATE_DETACHED), EINVAL);
		ck_assert_int_eq(marcel_attr_getdetachstate(p, &v), EINVAL);
		ck_assert_int_eq(marcel_attr_setname(p, "x"), EINVAL);
		ck_assert_int_eq(marcel_attr_getname(p, buf, sizeof(buf)), EINVAL);
		ck_assert_int_eq(marcel_attr_setprio(p, MA_DEF_PRIO), EINVAL);
		ck_assert_int_eq(marcel_attr_getprio(p, &v), EINVAL);
		ck_assert_int_eq(marcel_attr_setschedpolicy(p, MARCEL_SCHED_OTHER), EINVAL);
		ck_assert_int_eq(marcel_attr_getschedpolicy(p, &v), EINVAL);
		ck_assert_int_eq(marcel_attr_setvpset(p, MARCEL_VPSET_VP(0)), EINVAL);
		ck_assert_int_eq(marcel_attr_getvpset(p, &set), EINVAL);
		ck_assert_int_eq(marcel_attr_setpreemptible(p, 0), EINVAL);
		ck_assert_int_eq(marcel_attr_getpreemptible(p, &v), EINVAL);
	}
	/* The destroyed object was not modified by the refused calls: re-init works. */
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_getstacksize(&a, NULL), EINVAL);
	ck_assert_int_eq(marcel_attr_getdetachstate(&a, NULL), EINVAL);
	ck_assert_int_eq(marcel_attr_getprio(&a, NULL), EINVAL);
	ck_assert_int_eq(marcel_attr_getschedpolicy(&a, NULL), EINVAL);
	ck_assert_int_eq(marcel_attr_getvpset(&a, NULL), EINVAL);
	ck_assert_int_eq(marcel_attr_getpreemptible(&a, NULL), EINVAL);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ behaviour */

static any_t name_body(any_t arg)
{
	char *out = arg;
	if (marcel_getname(marcel_self(), out, MARCEL_MAXNAMESIZE))
		strcpy(out, "<error>");
	return NULL;
}

START_TEST(test_names)
{
	ma_test_init();
	marcel_attr_t a;
	char got[MARCEL_MAXNAMESIZE];
	char buf[64];
	marcel_t t;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setname(&a, "crunch"), 0);
	ck_assert_int_eq(marcel_create(&t, &a, name_body, got), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_str_eq(got, "crunch");
	/* Default name. */
	ck_assert_int_eq(marcel_create(&t, NULL, name_body, got), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_str_eq(got, "user");

	/* marcel_setname / getname on a live thread. */
	atomic_store(&release, 0);
	ck_assert_int_eq(marcel_create(&t, NULL, wait_release, NULL), 0);
	ck_assert_int_eq(marcel_setname(t, "renamed"), 0);
	ck_assert_int_eq(marcel_getname(t, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "renamed");
	ck_assert_int_eq(marcel_getname(t, buf, 7), ERANGE);
	ck_assert_int_eq(marcel_getname(t, buf, 8), 0);
	ck_assert_int_eq(marcel_getname(t, NULL, 8), EINVAL);
	ck_assert_int_eq(marcel_setname(t, NULL), EINVAL);
	ck_assert_int_eq(marcel_getname(t, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "renamed");
	ck_assert_int_eq(marcel_setname(t, "0123456789012345678901234567890123456789"), 0);
	ck_assert_int_eq(marcel_getname(t, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "0123456789012345678901234567890");
	ck_assert_int_eq(marcel_setname(NULL, "x"), ESRCH);
	ck_assert_int_eq(marcel_getname(NULL, buf, sizeof(buf)), ESRCH);
	ck_assert_int_eq(marcel_setname(marcel_self(), "boss"), 0);
	ck_assert_int_eq(marcel_getname(marcel_self(), buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "boss");
	atomic_store(&release, 1);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	marcel_end();
}
END_TEST

static any_t self_pair(any_t arg)
{
	marcel_t *out = arg;
	out[0] = marcel_self();
	out[1] = marcel_self();
	return NULL;
}

START_TEST(test_equal_self)
{
	ma_test_init();
	marcel_t me = marcel_self(), t1, t2, in1[2], in2[2];
	ck_assert_ptr_nonnull(me);
	ck_assert(marcel_equal(me, marcel_self()));
	ck_assert_int_eq(marcel_create(&t1, NULL, self_pair, in1), 0);
	ck_assert_int_eq(marcel_create(&t2, NULL, self_pair, in2), 0);
	ck_assert(!marcel_equal(t1, t2));
	ck_assert(!marcel_equal(t1, me));
	ck_assert(marcel_equal(t1, t1));
	marcel_t h1 = t1, h2 = t2;
	ck_assert_int_eq(marcel_join(t1, NULL), 0);
	ck_assert_int_eq(marcel_join(t2, NULL), 0);
	ck_assert(marcel_equal(in1[0], h1) && marcel_equal(in1[1], h1));
	ck_assert(marcel_equal(in2[0], h2) && marcel_equal(in2[1], h2));
	marcel_end();
}
END_TEST

/* errno and FP control word: A and B alternate on one VP. */
static char order_log[16];
static atomic_int order_pos;
static int errno_seen[2], round_seen[2];

static void log_step(char c)
{
	int i = atomic_fetch_add(&order_pos, 1);
	if (i < (int)sizeof(order_log) - 1)
		order_log[i] = c;
}

static any_t errno_a(any_t arg)
{
	(void)arg;
	errno = 1234;
	log_step('A');
	marcel_yield();
	errno_seen[0] = errno;
	log_step('A');
	marcel_yield();
	return NULL;
}

static any_t errno_b(any_t arg)
{
	(void)arg;
	errno = 42;
	log_step('B');
	marcel_yield();
	errno_seen[1] = errno;
	log_step('B');
	return NULL;
}

START_TEST(test_errno_per_thread)
{
	ma_test_init();
	memset(order_log, 0, sizeof(order_log));
	atomic_store(&order_pos, 0);
	marcel_attr_t a = ma_test_attr_on_vp(ma_test_here());
	marcel_t ta, tb;
	errno = 7;
	ck_assert_int_eq(marcel_create(&ta, &a, errno_a, NULL), 0);
	ck_assert_int_eq(marcel_create(&tb, &a, errno_b, NULL), 0);
	ck_assert_int_eq(marcel_join(ta, NULL), 0);
	ck_assert_int_eq(marcel_join(tb, NULL), 0);
	ck_assert_str_eq(order_log, "ABAB");
	ck_assert_int_eq(errno_seen[0], 1234);
	ck_assert_int_eq(errno_seen[1], 42);
	ck_assert_int_eq(errno, 7);
	marcel_end();
}
END_TEST

static any_t round_a(any_t arg)
{
	(void)arg;
	fesetround(FE_UPWARD);
	log_step('A');
	marcel_yield();
	round_seen[0] = fegetround();
	log_step('A');
	marcel_yield();
	return NULL;
}

static any_t round_b(any_t arg)
{
	(void)arg;
	round_seen[1] = fegetround();
	log_step('B');
	marcel_yield();
	log_step('B');
	return NULL;
}

static any_t report_round(any_t arg)
{
	(void)arg;
	return I2P(fegetround());
}

static any_t downward_creator(any_t arg)
{
	(void)arg;
	fesetround(FE_DOWNWARD);
	marcel_t t;
	any_t r = I2P(-1);
	if (marcel_create(&t, NULL, report_round, NULL) == 0)
		marcel_join(t, &r);
	return r;
}

START_TEST(test_fpu_per_thread)
{
	ma_test_init();
	memset(order_log, 0, sizeof(order_log));
	atomic_store(&order_pos, 0);
	ck_assert_int_eq(fegetround(), FE_TONEAREST);
	marcel_attr_t a = ma_test_attr_on_vp(ma_test_here());
	marcel_t ta, tb;
	ck_assert_int_eq(marcel_create(&ta, &a, round_a, NULL), 0);
	ck_assert_int_eq(marcel_create(&tb, &a, round_b, NULL), 0);
	ck_assert_int_eq(marcel_join(ta, NULL), 0);
	ck_assert_int_eq(marcel_join(tb, NULL), 0);
	ck_assert_str_eq(order_log, "ABAB");
	ck_assert_int_eq(round_seen[0], FE_UPWARD);
	ck_assert_int_eq(round_seen[1], FE_TONEAREST);
	ck_assert_int_eq(fegetround(), FE_TONEAREST);

	/* Inherited from the creator, as with pthreads. */
	marcel_t t;
	any_t r;
	ck_assert_int_eq(marcel_create(&t, NULL, downward_creator, NULL), 0);
	ck_assert_int_eq(marcel_join(t, &r), 0);
	ck_assert_int_eq(P2I(r), FE_DOWNWARD);
	ck_assert_int_eq(fegetround(), FE_TONEAREST);
	ck_assert_int_eq(marcel_create(&t, NULL, report_round, NULL), 0);
	ck_assert_int_eq(marcel_join(t, &r), 0);
	ck_assert_int_eq(P2I(r), FE_TONEAREST);
	/* Main's own mode is inherited too. */
	fesetround(FE_TOWARDZERO);
	ck_assert_int_eq(marcel_create(&t, NULL, report_round, NULL), 0);
	ck_assert_int_eq(marcel_join(t, &r), 0);
	ck_assert_int_eq(P2I(r), FE_TOWARDZERO);
	ck_assert_int_eq(fegetround(), FE_TOWARDZERO);
	fesetround(FE_TONEAREST);
	marcel_end();
}
END_TEST

/* Values a thread keeps in registers across a switch come back: the switch declares every
 * register clobbered but the stack and frame pointers (arch/x86_64/ma_arch.h), so what
 * survives is what the compiler saved. Many integer and floating-point values stay live
 * across each yield, in two threads yielding to each other on one VP, and the result is
 * compared with the same computation run without yields. */
#define REG_ROUNDS 2000
static void reg_mix(unsigned long seed, int yield, unsigned long out[12], double dout[8])
{
	unsigned long a = seed, b = seed * 3, c = seed * 5, d = seed * 7, e = seed * 11, f = seed * 13;
	unsigned long g = seed * 17, h = seed * 19, i = seed * 23, j = seed * 29, k = seed * 31, l = seed * 37;
	double x0 = (double)seed, x1 = x0 / 3, x2 = x0 / 5, x3 = x0 / 7, x4 = x0 / 11, x5 = x0 / 13;
	double x6 = x0 / 17, x7 = x0 / 19;
	for (int r = 0; r < REG_ROUNDS; r++) {
		a = a * 6364136223846793005UL + b;
		b ^= a >> 7;
		c += b * d;
		d = (d << 3) ^ e;
		e += f ^ g;
		f = f * 31 + h;
		g ^= i + j;
		h += k * l;
		i = (i >> 1) + a;
		j ^= c;
		k += e;
		l = l * 7 + f;
		x0 = x0 * 0.5 + x1;
		x1 = x1 * 0.25 + x2 + (double)(a & 7);
		x2 = x2 * 0.125 + x3;
		x3 = x3 * 0.5 + x4;
		x4 = x4 * 0.5 + x5 - (double)(c & 3);
		x5 = x5 * 0.5 + x6;
		x6 = x6 * 0.5 + x7;
		x7 = x7 * 0.5 + x0;
		if (yield)
			marcel_yield();
	}
	unsigned long v[12] = { a, b, c, d, e, f, g, h, i, j, k, l };
	double dv[8] = { x0, x1, x2, x3, x4, x5, x6, x7 };
	memcpy(out, v, sizeof(v));
	memcpy(dout, dv, sizeof(dv));
}

struct reg_run {
	unsigned long seed;
	unsigned long out[12];
	double dout[8];
};

static any_t reg_thread(any_t arg)
{
	struct reg_run *r = arg;
	reg_mix(r->seed, 1, r->out, r->dout);
	return NULL;
}

START_TEST(test_registers_survive_switch)
{
	ma_test_init();
	marcel_attr_t a = ma_test_attr_on_vp(ma_test_here());
	struct reg_run runs[3] = { { .seed = 12345 }, { .seed = 67890 }, { .seed = 4242 } };
	marcel_t t[3];
	for (int k = 0; k < 3; k++)
		ck_assert_int_eq(marcel_create(&t[k], &a, reg_thread, &runs[k]), 0);
	for (int k = 0; k < 3; k++)
		ck_assert_int_eq(marcel_join(t[k], NULL), 0);
	for (int k = 0; k < 3; k++) {
		unsigned long want[12];
		double dwant[8];
		reg_mix(runs[k].seed, 0, want, dwant);
		for (int v = 0; v < 12; v++)
			ck_assert_msg(runs[k].out[v] == want[v], "thread %d, integer %d: %lx, expected %lx", k, v,
				      runs[k].out[v], want[v]);
		for (int v = 0; v < 8; v++)
			ck_assert_msg(runs[k].dout[v] == dwant[v], "thread %d, double %d: %a, expected %a", k, v,
				      runs[k].dout[v], dwant[v]);
	}
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ placement */

/* Yields `rounds` times; returns how often it was not on a VP of `allowed`. */
struct confine {
	marcel_vpset_t allowed;
	int rounds;
	int bad;
	int first_vp;
};

static any_t confine_body(any_t arg)
{
	struct confine *c = arg;
	c->first_vp = marcel_current_vp();
	for (int i = 0; i < c->rounds; i++) {
		int vp = marcel_current_vp();
		if (vp < 0 || !marcel_vpset_isset(&c->allowed, (unsigned)vp))
			c->bad++;
		marcel_yield();
	}
	int vp = marcel_current_vp();
	if (vp < 0 || !marcel_vpset_isset(&c->allowed, (unsigned)vp))
		c->bad++;
	return NULL;
}

START_TEST(test_vpset_single)
{
	ma_test_init();
	unsigned n = marcel_nbvps();
	struct confine c[2 * MARCEL_NBMAXVPS / 64];
	marcel_t t[2 * MARCEL_NBMAXVPS / 64];
	ck_assert_uint_le(n, MARCEL_NBMAXVPS / 64);
	/* Two threads per VP so that their yields really switch. */
	for (unsigned i = 0; i < 2 * n; i++) {
		unsigned vp = i % n;
		marcel_attr_t a = ma_test_attr_on_vp(vp);
		c[i] = (struct confine){ .allowed = MARCEL_VPSET_VP(vp), .rounds = 300 };
		ck_assert_int_eq(marcel_create(&t[i], &a, confine_body, &c[i]), 0);
	}
	for (unsigned i = 0; i < 2 * n; i++) {
		ck_assert_int_eq(marcel_join(t[i], NULL), 0);
		ck_assert_msg(c[i].bad == 0, "thread bound to VP%u ran %d times elsewhere", i % n, c[i].bad);
		ck_assert_int_eq(c[i].first_vp, (int)(i % n));
	}
	marcel_end();
}
END_TEST

START_TEST(test_vpset_numa)
{
	ma_test_init();
	unsigned n = marcel_nbvps();
	int numa_of[MARCEL_NBMAXVPS];
	int nodes[MARCEL_NBMAXVPS];
	unsigned nb_nodes = 0;
	for (unsigned vp = 0; vp < n; vp++) {
		numa_of[vp] = marcel_topo_vp_ancestor(vp, MARCEL_LEVEL_NUMA);
		ck_assert_int_ge(numa_of[vp], 0);
		unsigned k;
		for (k = 0; k < nb_nodes && nodes[k] != numa_of[vp]; k++)
			;
		if (k == nb_nodes)
			nodes[nb_nodes++] = numa_of[vp];
	}
	if (ma_test_topology)
		ck_assert_uint_eq(nb_nodes, 4);
	enum { PER_NODE = 6 };
	struct confine c[64 * PER_NODE];
	marcel_t t[64 * PER_NODE];
	ck_assert_uint_le(nb_nodes, 64);
	for (unsigned k = 0; k < nb_nodes; k++) {
		marcel_vpset_t set = MARCEL_VPSET_ZERO;
		for (unsigned vp = 0; vp < n; vp++)
			if (numa_of[vp] == nodes[k])
				marcel_vpset_set(&set, vp);
		if (ma_test_topology)
			ck_assert_uint_eq(marcel_vpset_weight(&set), 4);
		marcel_attr_t a;
		ck_assert_int_eq(marcel_attr_init(&a), 0);
		ck_assert_int_eq(marcel_attr_setvpset(&a, set), 0);
		for (unsigned j = 0; j < PER_NODE; j++) {
			struct confine *ci = &c[k * PER_NODE + j];
			*ci = (struct confine){ .allowed = set, .rounds = 300 };
			ck_assert_int_eq(marcel_create(&t[k * PER_NODE + j], &a, confine_body, ci), 0);
		}
	}
	for (unsigned i = 0; i < nb_nodes * PER_NODE; i++) {
		ck_assert_int_eq(marcel_join(t[i], NULL), 0);
		ck_assert_msg(c[i].bad == 0, "thread bound to NUMA item %d ran %d times outside it",
			      nodes[i / PER_NODE], c[i].bad);
	}
	marcel_end();
}
END_TEST

START_TEST(test_sched_other)
{
	ma_test_init();
	unsigned n = marcel_nbvps();
	if (n < 2) {
		marcel_end();
		return;
	}
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setschedpolicy(&a, MARCEL_SCHED_OTHER), 0);
	enum { N = 40 };
	struct confine c[N];
	marcel_t t[N];
	unsigned me = ma_test_here();
	/* No yield between ma_test_here() and the creations: the creator stays on VP `me`. */
	for (unsigned i = 0; i < N; i++) {
		c[i] = (struct confine){ .allowed = MARCEL_VPSET_FULL, .rounds = 50 };
		ck_assert_int_eq(marcel_create(&t[i], &a, confine_body, &c[i]), 0);
	}
	ck_assert_uint_eq(ma_test_here(), me);
	for (unsigned i = 0; i < N; i++) {
		ck_assert_int_eq(marcel_join(t[i], NULL), 0);
		ck_assert_int_ge(c[i].first_vp, 0);
		ck_assert_msg(c[i].first_vp != (int)me, "SCHED_OTHER thread %u ran on its creator's VP%u", i,
			      me);
	}
	marcel_end();
}
END_TEST

/* Records every VP it runs on; checks it never leaves its first one. */
static any_t stay_body(any_t arg)
{
	int *moved = arg;
	int first = marcel_current_vp();
	for (int i = 0; i < 100; i++) {
		marcel_yield();
		if (marcel_current_vp() != first)
			(*moved)++;
	}
	return I2P(first);
}

START_TEST(test_sched_other_stays)
{
	ma_test_init();
	unsigned n = marcel_nbvps();
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setschedpolicy(&a, MARCEL_SCHED_OTHER), 0);
	enum { N = 32 };
	int moved[N] = { 0 };
	marcel_t t[N];
	for (unsigned i = 0; i < N; i++)
		ck_assert_int_eq(marcel_create(&t[i], &a, stay_body, &moved[i]), 0);
	for (unsigned i = 0; i < N; i++) {
		any_t r;
		ck_assert_int_eq(marcel_join(t[i], &r), 0);
		ck_assert_int_lt(P2I(r), (int)n);
		ck_assert_msg(moved[i] == 0, "SCHED_OTHER thread %u left its VP %d times", i, moved[i]);
	}
	marcel_end();
}
END_TEST

START_TEST(test_sched_balance_affinity)
{
	ma_test_init();
	int policies[] = { MARCEL_SCHED_BALANCE, MARCEL_SCHED_AFFINITY, MARCEL_SCHED_SHARED };
	for (unsigned p = 0; p < 3; p++) {
		marcel_attr_t a;
		ck_assert_int_eq(marcel_attr_init(&a), 0);
		ck_assert_int_eq(marcel_attr_setschedpolicy(&a, policies[p]), 0);
		marcel_t t[48];
		for (int i = 0; i < 48; i++)
			ck_assert_int_eq(marcel_create(&t[i], &a, add_one, I2P(i * 3)), 0);
		for (int i = 0; i < 48; i++) {
			any_t r;
			ck_assert_int_eq(marcel_join(t[i], &r), 0);
			ck_assert_int_eq(P2I(r), i * 3 + 1);
		}
		/* Detached ones too. */
		atomic_store(&nopid_count, 0);
		ck_assert_int_eq(marcel_attr_setdetachstate(&a, MARCEL_CREATE_DETACHED), 0);
		for (int i = 0; i < 16; i++)
			ck_assert_int_eq(marcel_create(NULL, &a, nopid_body, I2P(1)), 0);
		while (atomic_load(&nopid_count) != 16)
			marcel_yield();
	}
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ priorities, yield_to */

static char prio_log[256];
static atomic_int prio_pos;

static any_t prio_body(any_t arg)
{
	char c = (char)P2I(arg);
	int rounds = c == 'D' ? 100 : 1;
	for (int i = 0; i < rounds; i++) {
		int k = atomic_fetch_add(&prio_pos, 1);
		if (k < (int)sizeof(prio_log) - 1)
			prio_log[k] = c;
		marcel_yield();
	}
	return NULL;
}

START_TEST(test_priorities)
{
	ma_test_init();
	memset(prio_log, 0, sizeof(prio_log));
	atomic_store(&prio_pos, 0);
	unsigned vp = ma_test_here();
	marcel_attr_t batch = ma_test_attr_on_vp(vp), def = ma_test_attr_on_vp(vp);
	ck_assert_int_eq(marcel_attr_setprio(&batch, MA_BATCH_PRIO), 0);
	marcel_t tb, td;
	/* The batch one is queued first, yet must wait for the default one. */
	ck_assert_int_eq(marcel_create(&tb, &batch, prio_body, I2P('B')), 0);
	ck_assert_int_eq(marcel_create(&td, &def, prio_body, I2P('D')), 0);
	ck_assert_int_eq(marcel_join(td, NULL), 0);
	ck_assert_int_eq(marcel_join(tb, NULL), 0);
	ck_assert_int_eq(atomic_load(&prio_pos), 101);
	for (int i = 0; i < 100; i++)
		ck_assert_msg(prio_log[i] == 'D', "step %d: %s", i, prio_log);
	ck_assert_int_eq(prio_log[100], 'B');

	/* Idle priority waits for batch. */
	memset(prio_log, 0, sizeof(prio_log));
	atomic_store(&prio_pos, 0);
	marcel_attr_t idle = ma_test_attr_on_vp(vp);
	ck_assert_int_eq(marcel_attr_setprio(&idle, MA_IDLE_PRIO), 0);
	ck_assert_int_eq(marcel_create(&tb, &idle, prio_body, I2P('I')), 0);
	ck_assert_int_eq(marcel_create(&td, &batch, prio_body, I2P('D')), 0);
	ck_assert_int_eq(marcel_join(td, NULL), 0);
	ck_assert_int_eq(marcel_join(tb, NULL), 0);
	for (int i = 0; i < 100; i++)
		ck_assert_msg(prio_log[i] == 'D', "step %d: %s", i, prio_log);
	ck_assert_int_eq(prio_log[100], 'I');
	marcel_end();
}
END_TEST

struct yt {
	atomic_int ran;
	atomic_int x_started;
	int ret_ready, flag_after, ret_blocked, ret_null, ret_self, ret_dead;
	marcel_t spinner;
};

static any_t yt_mark(any_t arg)
{
	struct yt *y = arg;
	atomic_store(&y->ran, 1);
	return NULL;
}

static any_t yt_blocker(any_t arg)
{
	struct yt *y = arg;
	marcel_t target = y->spinner;
	atomic_store(&y->x_started, 1);
	return I2P(marcel_join(target, NULL));
}

/* Runs on one VP: everything it creates there can only run while it yields or blocks. */
static any_t yt_controller(any_t arg)
{
	struct yt *y = arg;
	unsigned vp = (unsigned)marcel_current_vp();
	marcel_attr_t a;
	marcel_attr_init(&a);
	marcel_attr_setvpset(&a, MARCEL_VPSET_VP(vp));
	marcel_t t;
	marcel_create(&t, &a, yt_mark, y);
	y->ret_ready = marcel_yield_to(t);
	y->flag_after = atomic_load(&y->ran);
	marcel_join(t, NULL);

	y->ret_self = marcel_yield_to(marcel_self());
	y->ret_null = marcel_yield_to(NULL);

	/* A thread blocked in marcel_join. */
	marcel_t spinner, blocker;
	atomic_store(&release, 0);
	marcel_create(&spinner, &a, wait_release, NULL);
	y->spinner = spinner;
	marcel_create(&blocker, &a, yt_blocker, y);
	while (!atomic_load(&y->x_started))
		marcel_yield();
	/* Same VP: the blocker went straight from setting the flag into its join. */
	y->ret_blocked = marcel_yield_to(blocker);
	atomic_store(&release, 1);
	any_t r;
	marcel_join(blocker, &r);
	if (P2I(r) != 0)
		y->ret_blocked = -100;

	/* A thread that has ended but is not joined yet. */
	marcel_create(&t, &a, yt_mark, y);
	marcel_yield();
	marcel_yield();
	y->ret_dead = marcel_yield_to(t);
	marcel_join(t, NULL);
	return NULL;
}

START_TEST(test_yield_to)
{
	ma_test_init();
	struct yt y;
	memset(&y, 0, sizeof(y));
	y.ret_ready = y.ret_blocked = y.ret_null = y.ret_self = y.ret_dead = -1;
	marcel_attr_t a = ma_test_attr_on_vp(marcel_nbvps() - 1);
	marcel_t c;
	ck_assert_int_eq(marcel_create(&c, &a, yt_controller, &y), 0);
	ck_assert_int_eq(marcel_join(c, NULL), 0);
	ck_assert_int_eq(y.ret_ready, 0);
	ck_assert_int_eq(y.flag_after, 1);
	ck_assert_int_eq(y.ret_self, 0);
	ck_assert_int_eq(y.ret_null, ESRCH);
	ck_assert_int_eq(y.ret_blocked, EAGAIN);
	ck_assert_int_eq(y.ret_dead, ESRCH);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ VPs and topology */

static any_t current_vp_body(any_t arg)
{
	(void)arg;
	return I2P(marcel_current_vp());
}

START_TEST(test_nbvps)
{
	unsetenv("MARCEL_NVP");
	unsetenv("MARCEL_SMT");
	ma_test_init();
	unsigned n = marcel_nbvps();
	if (ma_test_topology) {
		ck_assert_uint_eq(n, 16);
	} else {
		/* One VP per core by default (2 on the 2-core test machine). */
		unsigned cores = 0;
		for (unsigned i = 0; i < marcel_topo_nbitems(); i++) {
			struct marcel_topo_item it;
			ck_assert_int_eq(marcel_topo_get_item(i, &it), 0);
			cores += !!(it.kinds & MARCEL_LEVEL_CORE);
		}
		ck_assert_uint_eq(n, cores);
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		ck_assert_int_le((long)n, cpus);
	}
	ck_assert_int_eq(ma_test_here(), 0); /* main starts on VP 0 */
	marcel_t t[64];
	for (int i = 0; i < 64; i++)
		ck_assert_int_eq(marcel_create(&t[i], NULL, current_vp_body, NULL), 0);
	for (int i = 0; i < 64; i++) {
		any_t r;
		ck_assert_int_eq(marcel_join(t[i], &r), 0);
		ck_assert_int_ge(P2I(r), 0);
		ck_assert_int_lt(P2I(r), (int)n);
	}
	ma_test_here();
	marcel_end();
}
END_TEST

START_TEST(test_topology_api)
{
	struct marcel_topo_item it;
	ck_assert_uint_eq(marcel_topo_nbitems(), 0);
	ck_assert_int_eq(marcel_topo_get_item(0, &it), EPERM);
	ck_assert_int_eq(marcel_topo_fprint(stderr), EPERM);
	ck_assert_int_eq(marcel_topo_vp_item(0), -1);
	ck_assert_int_eq(marcel_topo_is_fake(), 0);

	ma_test_init();
	unsigned nb = marcel_topo_nbitems(), n = marcel_nbvps();
	ck_assert_uint_gt(nb, 0);
	ck_assert_int_eq(marcel_topo_get_item(0, &it), 0);
	ck_assert_str_eq(it.name, "machine");
	ck_assert_int_eq(it.parent, -1);
	ck_assert_uint_eq(it.id, 0);
	ck_assert_uint_eq(it.depth, 0);
	ck_assert(it.kinds & MARCEL_LEVEL_MACHINE);
	ck_assert_uint_eq(it.first_vp, 0);
	ck_assert_uint_eq(it.nb_vps, n);
	for (unsigned i = 1; i < nb; i++) {
		ck_assert_int_eq(marcel_topo_get_item(i, &it), 0);
		ck_assert_uint_eq(it.id, i);
		ck_assert_int_ge(it.parent, 0);
		ck_assert_int_lt(it.parent, (int)i); /* pre-order */
		struct marcel_topo_item p;
		ck_assert_int_eq(marcel_topo_get_item((unsigned)it.parent, &p), 0);
		ck_assert_uint_eq(it.depth, p.depth + 1);
	}
	ck_assert_int_eq(marcel_topo_get_item(nb, &it), EINVAL);
	ck_assert_int_eq(marcel_topo_get_item(~0u, &it), EINVAL);
	ck_assert_int_eq(marcel_topo_get_item(0, NULL), EINVAL);
	ck_assert_int_eq(marcel_topo_vp_item(n), -1);
	ck_assert_int_eq(marcel_topo_vp_ancestor(n, MARCEL_LEVEL_NUMA), -1);
	ck_assert_int_eq(marcel_topo_fprint(NULL), EINVAL);

	int numa[MARCEL_NBMAXVPS];
	for (unsigned vp = 0; vp < n; vp++) {
		int id = marcel_topo_vp_item(vp);
		ck_assert_int_ge(id, 0);
		ck_assert_int_lt(id, (int)nb);
		ck_assert_int_eq(marcel_topo_get_item((unsigned)id, &it), 0);
		ck_assert_uint_le(it.first_vp, vp);
		ck_assert_uint_gt(it.first_vp + it.nb_vps, vp);
		ck_assert_int_eq(marcel_topo_vp_ancestor(vp, MARCEL_LEVEL_MACHINE), 0);
		numa[vp] = marcel_topo_vp_ancestor(vp, MARCEL_LEVEL_NUMA);
		ck_assert_int_ge(numa[vp], 0);
		ck_assert_int_eq(marcel_topo_get_item((unsigned)numa[vp], &it), 0);
		ck_assert(it.kinds & MARCEL_LEVEL_NUMA);
	}

	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(marcel_topo_fprint(f), 0);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(text, "VP0 ->"));
	ck_assert_ptr_nonnull(strstr(text, "machine"));

	if (ma_test_topology) {
		ck_assert_int_eq(marcel_topo_is_fake(), 1);
		ck_assert_uint_eq(n, 16);
		/* 4 NUMA nodes of 4 VPs each, VPs numbered along the tree. */
		for (unsigned vp = 0; vp < n; vp++) {
			ck_assert_int_eq(numa[vp], numa[vp - vp % 4]);
			if (vp % 4 == 0 && vp)
				ck_assert_int_ne(numa[vp], numa[vp - 4]);
		}
		for (unsigned k = 0; k < 4; k++) {
			ck_assert_int_eq(marcel_topo_get_item((unsigned)numa[4 * k], &it), 0);
			ck_assert_uint_eq(it.nb_vps, 4);
			ck_assert_uint_eq(it.first_vp, 4 * k);
			ck_assert_uint_eq(it.nb_pus, 8);
		}
		ck_assert_ptr_nonnull(strstr(text, "VP3 ->"));
		ck_assert_ptr_nonnull(strstr(text, "VP15 ->"));
		ck_assert_ptr_nonnull(strstr(text, "NUMANode1"));
	} else {
		ck_assert_int_eq(marcel_topo_is_fake(), 0);
	}
	free(text);
	marcel_end();
	ck_assert_uint_eq(marcel_topo_nbitems(), 0);
	ck_assert_int_eq(marcel_topo_get_item(0, &it), EPERM);
}
END_TEST

/* ------------------------------------------------------------------ runtime start/stop */

START_TEST(test_init_twice)
{
	ma_test_init();
	int argc = 1;
	char *argv[] = { (char *)"again", NULL };
	ck_assert_int_eq(marcel_init(&argc, argv), EBUSY);
	ck_assert_int_eq(marcel_init(NULL, NULL), EBUSY);
	/* Still fine. */
	marcel_t t;
	any_t r;
	ck_assert_int_eq(marcel_create(&t, NULL, add_one, I2P(1)), 0);
	ck_assert_int_eq(marcel_join(t, &r), 0);
	ck_assert_int_eq(P2I(r), 2);
	marcel_end();
}
END_TEST

START_TEST(test_reinit)
{
	for (int round = 0; round < 5; round++) {
		if (round % 2)
			ck_assert_int_eq(marcel_init(NULL, NULL), 0);
		else
			ma_test_init();
		ck_assert_uint_gt(marcel_nbvps(), 0);
		ck_assert_ptr_nonnull(marcel_self());
		marcel_t t[8];
		for (int i = 0; i < 8; i++)
			ck_assert_int_eq(marcel_create(&t[i], NULL, add_one, I2P(round * 10 + i)), 0);
		for (int i = 0; i < 8; i++) {
			any_t r;
			ck_assert_int_eq(marcel_join(t[i], &r), 0);
			ck_assert_int_eq(P2I(r), round * 10 + i + 1);
		}
		marcel_end();
		ck_assert_uint_eq(marcel_nbvps(), 0);
		ck_assert_ptr_null(marcel_self());
	}
}
END_TEST

static any_t end_from_thread(any_t arg)
{
	(void)arg;
	marcel_end();
	return I2P(123);
}

START_TEST(test_end_from_thread)
{
	ma_test_init();
	struct ma_test_capture cap;
	char out[1024];
	marcel_t t;
	any_t r = NULL;
	ma_test_capture_begin(&cap);
	int e = marcel_create(&t, NULL, end_from_thread, NULL);
	if (e == 0)
		e = marcel_join(t, &r);
	ma_test_capture_end(&cap, out, sizeof(out));
	ck_assert_int_eq(e, 0);
	ck_assert_int_eq(P2I(r), 123);
	ck_assert_msg(strstr(out, "marcel_end") != NULL, "no error message, stderr: '%s'", out);
	/* The runtime keeps working. */
	ck_assert_uint_gt(marcel_nbvps(), 0);
	ck_assert_int_eq(marcel_create(&t, NULL, add_one, I2P(8)), 0);
	ck_assert_int_eq(marcel_join(t, &r), 0);
	ck_assert_int_eq(P2I(r), 9);
	marcel_end();
	ck_assert_uint_eq(marcel_nbvps(), 0);
}
END_TEST

START_TEST(test_argv)
{
	char *argv[] = { (char *)"prog", (char *)"--marcel-nvp", (char *)"1", (char *)"x",
			 (char *)"--marcel-smt=0", NULL };
	int argc = 5;
	ck_assert_int_eq(marcel_init(&argc, argv), 0);
	ck_assert_int_eq(argc, 2);
	ck_assert_str_eq(argv[0], "prog");
	ck_assert_str_eq(argv[1], "x");
	ck_assert_ptr_null(argv[2]);
	ck_assert_uint_eq(marcel_nbvps(), 1);
	marcel_t t;
	any_t r;
	ck_assert_int_eq(marcel_create(&t, NULL, current_vp_body, NULL), 0);
	ck_assert_int_eq(marcel_join(t, &r), 0);
	ck_assert_int_eq(P2I(r), 0);
	marcel_end();

	/* Non-marcel arguments are left alone, including ones after marcel's. */
	char *argv2[] = { (char *)"prog", (char *)"-v", (char *)"--marcel-nvp=1", (char *)"--other",
			  (char *)"--marcel-stack-size", (char *)"64k", (char *)"last", NULL };
	argc = 7;
	ck_assert_int_eq(marcel_init(&argc, argv2), 0);
	ck_assert_int_eq(argc, 4);
	ck_assert_str_eq(argv2[1], "-v");
	ck_assert_str_eq(argv2[2], "--other");
	ck_assert_str_eq(argv2[3], "last");
	ck_assert_ptr_null(argv2[4]);
	ck_assert_uint_eq(marcel_nbvps(), 1);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ registration */

static void tc_create(TCase *tc)
{
	tcase_add_test(tc, test_create_join);
	tcase_add_test(tc, test_create_nopid);
	tcase_add_test(tc, test_dontsched);
	tcase_add_test(tc, test_exit_nested);
	tcase_add_exit_test(tc, test_exit_main, 0);
}

static void tc_errors(TCase *tc)
{
	tcase_add_test(tc, test_join_errors);
	tcase_add_test(tc, test_join_self_thread);
	tcase_add_test(tc, test_detach_after_end);
	tcase_add_test(tc, test_create_errors);
	tcase_add_test(tc, test_outside_runtime);
	tcase_add_test(tc, test_join_from_pthread);
	tcase_add_test(tc, test_two_joiners);
}

static void tc_attr(TCase *tc)
{
	tcase_add_test(tc, test_attr_defaults);
	tcase_add_test(tc, test_attr_stacksize);
	tcase_add_test(tc, test_attr_setters);
	tcase_add_test(tc, test_attr_names);
	tcase_add_test(tc, test_attr_invalid);
}

static void tc_behaviour(TCase *tc)
{
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_equal_self);
	tcase_add_test(tc, test_errno_per_thread);
	tcase_add_test(tc, test_fpu_per_thread);
	tcase_add_test(tc, test_registers_survive_switch);
	tcase_add_test(tc, test_priorities);
	tcase_add_test(tc, test_yield_to);
}

/* Threads with default attributes share the machine queue: idle workers must take them,
 * so all of them run at the same time. Each spins without yielding until every one has
 * started, which can only finish if each runs on its own worker; main waits without
 * yielding its worker either (join blocks it). */
static atomic_int shared_started;
static atomic_int shared_vps_seen;

static any_t spin_until_all_started(any_t arg)
{
	int n = P2I(arg);
	atomic_fetch_or(&shared_vps_seen, 1 << marcel_current_vp());
	atomic_fetch_add(&shared_started, 1);
	while (atomic_load(&shared_started) < n)
		;
	return NULL;
}

START_TEST(test_shared_runs_in_parallel)
{
	/* Cooperative: a time slice would let a spinner's VP take the next thread before
	 * an idle worker does (on 16 VPs over 2 processors, a slice passes first). */
	setenv("MARCEL_TIMESLICE", "0", 1);
	ma_test_init();
	unsetenv("MARCEL_TIMESLICE");
	int n = (int)marcel_nbvps();
	if (n > 16)
		n = 16;
	marcel_t t[16];
	atomic_store(&shared_started, 0);
	atomic_store(&shared_vps_seen, 0);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(marcel_create(&t[i], NULL, spin_until_all_started, I2P(n)), 0);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(marcel_join(t[i], NULL), 0);
	ck_assert_int_eq(atomic_load(&shared_started), n);
	ck_assert_int_eq(__builtin_popcount((unsigned)atomic_load(&shared_vps_seen)), n);
	marcel_end();
}
END_TEST

/* A thread of the machine's queue must not wait for ever behind threads that keep
 * yielding on their VPs' own queues (equal priorities prefer the nearest queue, but not
 * always: runqueue.c, ma_pick_next). Main sleeps (it is woken onto the machine's queue)
 * while two bound threads per VP yield in a loop until main stops them (alone, one
 * would find its queue empty at each yield). */
static atomic_int bound_stop;

static any_t yield_until_stopped(any_t arg)
{
	(void)arg;
	while (!atomic_load(&bound_stop))
		marcel_yield();
	return NULL;
}

START_TEST(test_shared_not_starved)
{
	ma_test_init();
	unsigned n = 2 * (marcel_nbvps() < 8 ? marcel_nbvps() : 8);
	marcel_t t[16];
	atomic_store(&bound_stop, 0);
	/* Main starts on VP 0's queue: on the machine's, it is nearest to no VP. */
	marcel_vpset_t all = MARCEL_VPSET_FULL;
	ck_assert_int_eq(marcel_apply_vpset(&all), 0);
	for (unsigned i = 0; i < n; i++) {
		marcel_attr_t a;
		ck_assert_int_eq(marcel_attr_init(&a), 0);
		ck_assert_int_eq(marcel_attr_setvpset(&a, MARCEL_VPSET_VP(i / 2)), 0);
		ck_assert_int_eq(marcel_create(&t[i], &a, yield_until_stopped, NULL), 0);
	}
	/* Each sleep ends with main queued behind the yielding threads (Check's time limit
	 * catches a starved main). */
	for (int k = 0; k < 20; k++)
		ck_assert_int_eq(marcel_usleep(500), 0);
	atomic_store(&bound_stop, 1);
	for (unsigned i = 0; i < n; i++)
		ck_assert_int_eq(marcel_join(t[i], NULL), 0);
	marcel_end();
}
END_TEST

static void tc_placement(TCase *tc)
{
	tcase_add_test(tc, test_shared_runs_in_parallel);
	tcase_add_test(tc, test_shared_not_starved);
	tcase_add_test(tc, test_vpset_single);
	tcase_add_test(tc, test_vpset_numa);
	tcase_add_test(tc, test_sched_other);
	tcase_add_test(tc, test_sched_other_stays);
	tcase_add_test(tc, test_sched_balance_affinity);
	tcase_add_test(tc, test_nbvps);
	tcase_add_test(tc, test_topology_api);
}

static void tc_runtime(TCase *tc)
{
	tcase_add_test(tc, test_init_twice);
	tcase_add_test(tc, test_reinit);
	tcase_add_test(tc, test_end_from_thread);
	tcase_add_test(tc, test_argv);
}

int main(void)
{
	Suite *s = suite_create("threads");
	ma_test_add_both(s, "create", tc_create, 60);
	ma_test_add_both(s, "errors", tc_errors, 60);
	ma_test_add_both(s, "attr", tc_attr, 60);
	ma_test_add_both(s, "behaviour", tc_behaviour, 60);
	ma_test_add_both(s, "placement", tc_placement, 60);
	ma_test_add_both(s, "runtime", tc_runtime, 60);
	return ma_test_run(s);
}
