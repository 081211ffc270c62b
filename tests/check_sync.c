/*
 * The synchronisation API (marcel/sync.h, marcel/keys.h, marcel/time.h) against its
 * documented contract: mutexes of every kind, condition variables on both clocks, both
 * semaphore interfaces, barriers, read-write locks, spin locks, marcel_once, thread-specific
 * data, sleeping and futexes, with every documented error code, and the same objects shared
 * between marcel threads and plain kernel threads. Every tcase runs on this machine and on
 * the synthetic 32-PU topology (ma_test.h).
 *
 * Waits that must succeed use long deadlines (LONG_MS) so that a bug fails the test instead
 * of hanging it; the few untimed waits (marcel_sem_P, marcel_barrier_wait, ...) rely on
 * Check's timeout. Timeouts that must expire use SHORT_MS and are checked only from below
 * (the deadline was reached), never from above.
 *
 * A few tests need a thread to be blocked inside a primitive before they go on (destroy
 * returning EBUSY, futex_wake counting its sleepers). When the API offers a way to see it
 * (the mutex a condition waiter releases, tryrdlock refused behind a waiting writer) they
 * use it; otherwise the waiter raises a flag just before the call and the test lets it
 * settle for SETTLE_US, which is ample for a call that blocks at once.
 *
 * Nothing here depends on the state a previous test left, so the suite also runs with
 * CK_FORK=no: every key is deleted, every environment variable restored.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include "ma_test.h"

#define I2P(i) ((any_t)(intptr_t)(i))
#define P2I(p) ((int)(intptr_t)(p))

/* Deadline of waits that must succeed: only reached when the library is broken. */
#define LONG_MS 10000
/* Timeouts that must expire. */
#define SHORT_MS 30
/* Time given to a thread that raised its flag to get blocked in the call that follows. */
#define SETTLE_US 100000

/* Check reports every passing assertion to the runner (a locked write to a file shared
 * by all threads): loops and polls assert through these, which only speak up on failure. */
#define quiet_assert(expr, ...)                  \
	do {                                     \
		if (!(expr))                     \
			ck_abort_msg(__VA_ARGS__); \
	} while (0)
#define quiet_eq(x, y)                                                                       \
	do {                                                                                 \
		long quiet_x_ = (long)(x), quiet_y_ = (long)(y);                             \
		if (quiet_x_ != quiet_y_)                                                    \
			ck_abort_msg("%s == %ld, expected %ld", #x, quiet_x_, quiet_y_);    \
	} while (0)

/* ------------------------------------------------------------------ helpers */

static struct timespec now(clockid_t clk)
{
	struct timespec t;
	quiet_eq(clock_gettime(clk, &t), 0);
	return t;
}

static struct timespec after_ms(clockid_t clk, long ms)
{
	struct timespec t = now(clk);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

/* An absolute CLOCK_REALTIME deadline @ms from now (negative: in the past). */
static struct timespec deadline(long ms)
{
	if (ms >= 0)
		return after_ms(CLOCK_REALTIME, ms);
	struct timespec t = now(CLOCK_REALTIME);
	t.tv_sec -= (-ms + 999) / 1000;
	return t;
}

/* Whether clock clk has reached d. */
static int reached(clockid_t clk, const struct timespec *d)
{
	struct timespec t = now(clk);
	return t.tv_sec > d->tv_sec || (t.tv_sec == d->tv_sec && t.tv_nsec >= d->tv_nsec);
}

static long long us_since(const struct timespec *t0)
{
	struct timespec t = now(CLOCK_MONOTONIC);
	return (t.tv_sec - t0->tv_sec) * 1000000LL + (t.tv_nsec - t0->tv_nsec) / 1000;
}

/* Whether LONG_MS have passed since t0 (CLOCK_MONOTONIC). */
static int expired(const struct timespec *t0)
{
	return us_since(t0) >= LONG_MS * 1000LL;
}

/* Lets others run: a marcel yield in a marcel thread, a kernel yield elsewhere. */
static void pause_briefly(void)
{
	if (marcel_self())
		marcel_yield();
	else
		sched_yield();
}

/* Waits until *p >= v; fails the test after LONG_MS. Works in any kind of thread. */
static void await_ge(atomic_int *p, int v, const char *what)
{
	struct timespec t0 = now(CLOCK_MONOTONIC);
	while (atomic_load(p) < v) {
		quiet_assert(!expired(&t0), "timed out waiting for %s (%d < %d)", what,
			     atomic_load(p), v);
		pause_briefly();
	}
}

/* Returns holding m once *count >= n (count protected by m); fails after LONG_MS. */
static void lock_when(marcel_mutex_t *m, const int *count, int n)
{
	struct timespec t0 = now(CLOCK_MONOTONIC);
	for (;;) {
		quiet_eq(marcel_mutex_lock(m), 0);
		if (*count >= n)
			return;
		quiet_eq(marcel_mutex_unlock(m), 0);
		quiet_assert(!expired(&t0), "timed out: %d of %d waiters", *count, n);
		pause_briefly();
	}
}

/* Loop sizes shrink under valgrind (check-valgrind sets MA_TEST_VALGRIND). */
static int scaled(int n)
{
	long div = (getenv("MA_TEST_VALGRIND") ? 10 : 1) * ma_test_scale_div();
	return (int)((n + div - 1) / div);
}

static void settle(void)
{
	ck_assert_int_eq(marcel_usleep(SETTLE_US), 0);
}

static marcel_t spawn(marcel_func_t f, any_t arg)
{
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, NULL, f, arg), 0);
	return t;
}

static marcel_t spawn_on(unsigned vp, marcel_func_t f, any_t arg)
{
	marcel_attr_t a = ma_test_attr_on_vp(vp);
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, &a, f, arg), 0);
	return t;
}

static any_t join(marcel_t t)
{
	any_t r = I2P(-12345);
	ck_assert_int_eq(marcel_join(t, &r), 0);
	return r;
}

/* A plain kernel thread (not a marcel thread). The marcel thread that collects it polls
 * instead of blocking its worker in pthread_join, since the kernel thread may be waiting
 * for marcel threads of that worker. */
struct pt {
	pthread_t id;
	void *(*fn)(void *);
	void *arg;
	void *ret;
	atomic_int done;
};

static void *pt_body(void *p)
{
	struct pt *x = p;
	ck_assert_ptr_null(marcel_self());
	x->ret = x->fn(x->arg);
	atomic_store(&x->done, 1);
	return NULL;
}

static void pt_start(struct pt *x, void *(*fn)(void *), void *arg)
{
	x->fn = fn;
	x->arg = arg;
	x->ret = NULL;
	atomic_store(&x->done, 0);
	ck_assert_int_eq(pthread_create(&x->id, NULL, pt_body, x), 0);
}

static void *pt_finish(struct pt *x)
{
	await_ge(&x->done, 1, "a kernel thread");
	ck_assert_int_eq(pthread_join(x->id, NULL), 0);
	return x->ret;
}

/* One operation run by another marcel thread, whose result is returned. "Try" operations
 * that succeed release what they took, so the object is left as it was. */
enum {
	OP_MUTEX_TRYLOCK,
	OP_MUTEX_UNLOCK,
	OP_MUTEX_LOCK_UNLOCK,
	OP_MUTEX_TIMEDLOCK_SHORT,
	OP_RMUTEX_TRYLOCK,
	OP_RMUTEX_UNLOCK,
	OP_RMUTEX_LOCK_UNLOCK,
	OP_RW_TRYRD,
	OP_RW_TRYWR,
	OP_RW_TIMEDRD_SHORT,
	OP_RW_TIMEDWR_SHORT,
	OP_RW_UNLOCK,
	OP_SPIN_TRYLOCK,
	OP_SPIN_UNLOCK,
	OP_COND_WAIT,
	OP_COND_TIMEDWAIT,
};

/* Returned by a timed operation that gave ETIMEDOUT before its deadline. */
#define EARLY (-1000)

struct op {
	int op;
	void *obj;
	void *obj2;
};

static int do_op(int op, void *obj, void *obj2)
{
	int r;
	struct timespec d;
	switch (op) {
	case OP_MUTEX_TRYLOCK:
		r = marcel_mutex_trylock(obj);
		if (r == 0)
			ck_assert_int_eq(marcel_mutex_unlock(obj), 0);
		return r;
	case OP_MUTEX_UNLOCK:
		return marcel_mutex_unlock(obj);
	case OP_MUTEX_LOCK_UNLOCK:
		r = marcel_mutex_lock(obj);
		if (r == 0)
			r = marcel_mutex_unlock(obj);
		return r;
	case OP_MUTEX_TIMEDLOCK_SHORT:
		d = deadline(SHORT_MS);
		r = marcel_mutex_timedlock(obj, &d);
		if (r == 0)
			ck_assert_int_eq(marcel_mutex_unlock(obj), 0);
		if (r == ETIMEDOUT && !reached(CLOCK_REALTIME, &d))
			return EARLY;
		return r;
	case OP_RMUTEX_TRYLOCK:
		r = marcel_recursivemutex_trylock(obj);
		if (r > 0)
			ck_assert_int_eq(marcel_recursivemutex_unlock(obj), r - 1);
		return r;
	case OP_RMUTEX_UNLOCK:
		return marcel_recursivemutex_unlock(obj);
	case OP_RMUTEX_LOCK_UNLOCK:
		r = marcel_recursivemutex_lock(obj);
		if (r > 0)
			ck_assert_int_eq(marcel_recursivemutex_unlock(obj), r - 1);
		return r;
	case OP_RW_TRYRD:
	case OP_RW_TRYWR:
		r = op == OP_RW_TRYRD ? marcel_rwlock_tryrdlock(obj) : marcel_rwlock_trywrlock(obj);
		if (r == 0)
			ck_assert_int_eq(marcel_rwlock_unlock(obj), 0);
		return r;
	case OP_RW_TIMEDRD_SHORT:
	case OP_RW_TIMEDWR_SHORT:
		d = deadline(SHORT_MS);
		r = op == OP_RW_TIMEDRD_SHORT ? marcel_rwlock_timedrdlock(obj, &d)
					      : marcel_rwlock_timedwrlock(obj, &d);
		if (r == 0)
			ck_assert_int_eq(marcel_rwlock_unlock(obj), 0);
		if (r == ETIMEDOUT && !reached(CLOCK_REALTIME, &d))
			return EARLY;
		return r;
	case OP_RW_UNLOCK:
		return marcel_rwlock_unlock(obj);
	case OP_SPIN_TRYLOCK:
		r = marcel_spin_trylock(obj);
		if (r == 0)
			ck_assert_int_eq(marcel_spin_unlock(obj), 0);
		return r;
	case OP_SPIN_UNLOCK:
		return marcel_spin_unlock(obj);
	case OP_COND_WAIT:
		return marcel_cond_wait(obj, obj2);
	case OP_COND_TIMEDWAIT:
		d = deadline(LONG_MS);
		return marcel_cond_timedwait(obj, obj2, &d);
	}
	ck_abort_msg("bad op %d", op);
	return -1;
}

static any_t op_body(any_t p)
{
	struct op *o = p;
	return I2P(do_op(o->op, o->obj, o->obj2));
}

/* Runs one operation in another marcel thread and returns its result. */
static int in_ult(int op, void *obj, void *obj2)
{
	struct op o = { op, obj, obj2 };
	return P2I(join(spawn(op_body, &o)));
}

/* A marcel thread holding a lock until told to release it. */
enum { HOLD_MUTEX, HOLD_RD, HOLD_WR, HOLD_SPIN };

struct holder {
	int kind;
	void *obj;
	atomic_int held;
	atomic_int release;
	marcel_t t;
};

static any_t hold_body(any_t p)
{
	struct holder *h = p;
	switch (h->kind) {
	case HOLD_MUTEX: ck_assert_int_eq(marcel_mutex_lock(h->obj), 0); break;
	case HOLD_RD: ck_assert_int_eq(marcel_rwlock_rdlock(h->obj), 0); break;
	case HOLD_WR: ck_assert_int_eq(marcel_rwlock_wrlock(h->obj), 0); break;
	case HOLD_SPIN: ck_assert_int_eq(marcel_spin_lock(h->obj), 0); break;
	}
	atomic_store(&h->held, 1);
	await_ge(&h->release, 1, "release");
	switch (h->kind) {
	case HOLD_MUTEX: ck_assert_int_eq(marcel_mutex_unlock(h->obj), 0); break;
	case HOLD_RD:
	case HOLD_WR: ck_assert_int_eq(marcel_rwlock_unlock(h->obj), 0); break;
	case HOLD_SPIN: ck_assert_int_eq(marcel_spin_unlock(h->obj), 0); break;
	}
	return NULL;
}

static void hold_start(struct holder *h, int kind, void *obj)
{
	h->kind = kind;
	h->obj = obj;
	atomic_store(&h->held, 0);
	atomic_store(&h->release, 0);
	h->t = spawn(hold_body, h);
	await_ge(&h->held, 1, "the holder to take its lock");
}

static void hold_release(struct holder *h)
{
	atomic_store(&h->release, 1);
}

static void hold_stop(struct holder *h)
{
	hold_release(h);
	join(h->t);
}

/* ------------------------------------------------------------------ mutexes */

START_TEST(test_mutexattr)
{
	ma_test_init();
	marcel_mutexattr_t a, zero;
	marcel_mutex_t m;
	int v = -1;
	memset(&zero, 0, sizeof(zero));

	ck_assert_int_eq(marcel_mutexattr_init(NULL), EINVAL);
	ck_assert_int_eq(marcel_mutexattr_init(&a), 0);
	ck_assert_int_eq(marcel_mutexattr_gettype(&a, &v), 0);
	ck_assert_int_eq(v, MARCEL_MUTEX_DEFAULT);
	ck_assert_int_eq(MARCEL_MUTEX_DEFAULT, MARCEL_MUTEX_NORMAL);
	ck_assert_int_eq(marcel_mutexattr_getpshared(&a, &v), 0);
	ck_assert_int_eq(v, MARCEL_PROCESS_PRIVATE);

	int kinds[] = { MARCEL_MUTEX_RECURSIVE, MARCEL_MUTEX_NORMAL, MARCEL_MUTEX_ERRORCHECK };
	for (unsigned i = 0; i < 3; i++) {
		ck_assert_int_eq(marcel_mutexattr_settype(&a, kinds[i]), 0);
		ck_assert_int_eq(marcel_mutexattr_gettype(&a, &v), 0);
		ck_assert_int_eq(v, kinds[i]);
	}
	ck_assert_int_eq(marcel_mutexattr_settype(&a, 3), EINVAL);
	ck_assert_int_eq(marcel_mutexattr_settype(&a, -1), EINVAL);
	ck_assert_int_eq(marcel_mutexattr_gettype(&a, &v), 0);
	ck_assert_int_eq(v, MARCEL_MUTEX_ERRORCHECK); /* refused values change nothing */
	ck_assert_int_eq(marcel_mutexattr_settype(NULL, MARCEL_MUTEX_NORMAL), EINVAL);
	ck_assert_int_eq(marcel_mutexattr_settype(&zero, MARCEL_MUTEX_NORMAL), EINVAL);
	ck_assert_int_eq(marcel_mutexattr_gettype(NULL, &v), EINVAL);
	ck_assert_int_eq(marcel_mutexattr_gettype(&a, NULL), EINVAL);

	ck_assert_int_eq(marcel_mutexattr_setpshared(&a, MARCEL_PROCESS_SHARED), ENOTSUP);
	ck_assert_int_eq(marcel_mutexattr_setpshared(&a, 2), EINVAL);
	ck_assert_int_eq(marcel_mutexattr_setpshared(&a, -1), EINVAL);
	ck_assert_int_eq(marcel_mutexattr_setpshared(&a, MARCEL_PROCESS_PRIVATE), 0);
	ck_assert_int_eq(marcel_mutexattr_setpshared(NULL, MARCEL_PROCESS_PRIVATE), EINVAL);
	ck_assert_int_eq(marcel_mutexattr_getpshared(&a, &v), 0);
	ck_assert_int_eq(v, MARCEL_PROCESS_PRIVATE);
	ck_assert_int_eq(marcel_mutexattr_getpshared(NULL, &v), EINVAL);
	ck_assert_int_eq(marcel_mutexattr_getpshared(&a, NULL), EINVAL);

	/* An attribute object never initialised is refused. */
	ck_assert_int_eq(marcel_mutexattr_destroy(&zero), EINVAL);
	ck_assert_int_eq(marcel_mutexattr_destroy(NULL), EINVAL);
	ck_assert_int_eq(marcel_mutex_init(&m, &zero), EINVAL);
	ck_assert_int_eq(marcel_mutex_init(NULL, &a), EINVAL);

	/* The attribute gives the kind: error-checking here. */
	ck_assert_int_eq(marcel_mutex_init(&m, &a), 0);
	ck_assert_int_eq(marcel_mutex_lock(&m), 0);
	ck_assert_int_eq(marcel_mutex_lock(&m), EDEADLK);
	ck_assert_int_eq(marcel_mutex_unlock(&m), 0);
	ck_assert_int_eq(marcel_mutex_destroy(&m), 0);

	ck_assert_int_eq(marcel_mutexattr_destroy(&a), 0);
	/* Once destroyed it is no longer initialised. */
	ck_assert_int_eq(marcel_mutexattr_destroy(&a), EINVAL);
	ck_assert_int_eq(marcel_mutex_init(&m, &a), EINVAL);
	marcel_end();
}
END_TEST

/* Goes through everything a mutex of kind `kind`, free on entry, must do; destroys it. */
static void check_mutex_kind(marcel_mutex_t *m, int kind)
{
	struct timespec d = deadline(LONG_MS);
	ck_assert_int_eq(marcel_mutex_trylock(m), 0);
	if (kind == MARCEL_MUTEX_RECURSIVE) {
		ck_assert_int_eq(marcel_mutex_lock(m), 0);
		ck_assert_int_eq(marcel_mutex_trylock(m), 0);
		ck_assert_int_eq(marcel_mutex_timedlock(m, &d), 0);
		/* depth 4: others can neither take nor release it */
		ck_assert_int_eq(in_ult(OP_MUTEX_TRYLOCK, m, NULL), EBUSY);
		ck_assert_int_eq(in_ult(OP_MUTEX_UNLOCK, m, NULL), EPERM);
		ck_assert_int_eq(in_ult(OP_MUTEX_TIMEDLOCK_SHORT, m, NULL), ETIMEDOUT);
		ck_assert_int_eq(marcel_mutex_destroy(m), EBUSY);
		for (int i = 0; i < 3; i++) {
			ck_assert_int_eq(marcel_mutex_unlock(m), 0);
			ck_assert_int_eq(in_ult(OP_MUTEX_TRYLOCK, m, NULL), EBUSY);
		}
		ck_assert_int_eq(marcel_mutex_unlock(m), 0);
	} else {
		ck_assert_int_eq(marcel_mutex_lock(m), EDEADLK);
		ck_assert_int_eq(marcel_mutex_trylock(m), EBUSY);
		ck_assert_int_eq(marcel_mutex_timedlock(m, &d), EDEADLK);
		ck_assert_int_eq(in_ult(OP_MUTEX_TRYLOCK, m, NULL), EBUSY);
		ck_assert_int_eq(in_ult(OP_MUTEX_UNLOCK, m, NULL), EPERM);
		ck_assert_int_eq(in_ult(OP_MUTEX_TIMEDLOCK_SHORT, m, NULL), ETIMEDOUT);
		ck_assert_int_eq(marcel_mutex_destroy(m), EBUSY);
		ck_assert_int_eq(marcel_mutex_unlock(m), 0);
	}
	/* Free now: the caller can no longer unlock it, everybody can take it. */
	ck_assert_int_eq(marcel_mutex_unlock(m), EPERM);
	ck_assert_int_eq(in_ult(OP_MUTEX_UNLOCK, m, NULL), EPERM);
	ck_assert_int_eq(in_ult(OP_MUTEX_LOCK_UNLOCK, m, NULL), 0);
	ck_assert_int_eq(in_ult(OP_MUTEX_TRYLOCK, m, NULL), 0);
	/* Still usable after the refused destroy. */
	ck_assert_int_eq(marcel_mutex_lock(m), 0);
	ck_assert_int_eq(marcel_mutex_unlock(m), 0);
	ck_assert_int_eq(marcel_mutex_destroy(m), 0);
}

START_TEST(test_mutex_kinds)
{
	ma_test_init();
	marcel_mutex_t m;
	marcel_mutexattr_t a;

	ck_assert_int_eq(marcel_mutex_init(&m, NULL), 0);
	check_mutex_kind(&m, MARCEL_MUTEX_DEFAULT);

	int kinds[] = { MARCEL_MUTEX_NORMAL, MARCEL_MUTEX_RECURSIVE, MARCEL_MUTEX_ERRORCHECK };
	for (unsigned i = 0; i < 3; i++) {
		ck_assert_int_eq(marcel_mutexattr_init(&a), 0);
		ck_assert_int_eq(marcel_mutexattr_settype(&a, kinds[i]), 0);
		ck_assert_int_eq(marcel_mutex_init(&m, &a), 0);
		ck_assert_int_eq(marcel_mutexattr_destroy(&a), 0); /* the mutex does not need it */
		check_mutex_kind(&m, kinds[i]);
	}

	ck_assert_int_eq(marcel_mutex_init(NULL, NULL), EINVAL);
	ck_assert_int_eq(marcel_mutex_lock(NULL), EINVAL);
	ck_assert_int_eq(marcel_mutex_unlock(NULL), EINVAL);
	ck_assert_int_eq(marcel_mutex_destroy(NULL), EINVAL);
	marcel_end();
}
END_TEST

START_TEST(test_mutex_static)
{
	ma_test_init();
	marcel_mutex_t n = MARCEL_MUTEX_INITIALIZER;
	marcel_mutex_t r = MARCEL_RECURSIVE_MUTEX_INITIALIZER;
	marcel_mutex_t e = MARCEL_ERRORCHECK_MUTEX_INITIALIZER;
	check_mutex_kind(&n, MARCEL_MUTEX_NORMAL);
	check_mutex_kind(&r, MARCEL_MUTEX_RECURSIVE);
	check_mutex_kind(&e, MARCEL_MUTEX_ERRORCHECK);
	marcel_end();
}
END_TEST

START_TEST(test_mutex_timedlock)
{
	ma_test_init();
	marcel_mutex_t m = MARCEL_MUTEX_INITIALIZER;
	struct holder h;
	struct timespec d;

	/* A deadline already passed still takes a free mutex. */
	d = deadline(-1000);
	ck_assert_int_eq(marcel_mutex_timedlock(&m, &d), 0);
	ck_assert_int_eq(marcel_mutex_unlock(&m), 0);

	hold_start(&h, HOLD_MUTEX, &m);
	ck_assert_int_eq(marcel_mutex_trylock(&m), EBUSY);
	d = deadline(SHORT_MS);
	ck_assert_int_eq(marcel_mutex_timedlock(&m, &d), ETIMEDOUT);
	ck_assert(reached(CLOCK_REALTIME, &d));
	d = deadline(-1000);
	ck_assert_int_eq(marcel_mutex_timedlock(&m, &d), ETIMEDOUT);

	/* Bad deadlines. */
	d = deadline(LONG_MS);
	d.tv_nsec = 1000000000L;
	ck_assert_int_eq(marcel_mutex_timedlock(&m, &d), EINVAL);
	d.tv_nsec = -1;
	ck_assert_int_eq(marcel_mutex_timedlock(&m, &d), EINVAL);
	ck_assert_int_eq(marcel_mutex_timedlock(&m, NULL), EINVAL);

	/* A long deadline waits for the holder to let go. */
	hold_release(&h);
	d = deadline(LONG_MS);
	ck_assert_int_eq(marcel_mutex_timedlock(&m, &d), 0);
	ck_assert_int_eq(in_ult(OP_MUTEX_TRYLOCK, &m, NULL), EBUSY);
	ck_assert_int_eq(marcel_mutex_unlock(&m), 0);
	join(h.t);

	/* Blocking lock, woken by the holder's unlock. */
	hold_start(&h, HOLD_MUTEX, &m);
	hold_release(&h);
	ck_assert_int_eq(marcel_mutex_lock(&m), 0);
	ck_assert_int_eq(marcel_mutex_unlock(&m), 0);
	join(h.t);
	ck_assert_int_eq(marcel_mutex_destroy(&m), 0);
	marcel_end();
}
END_TEST

/* Mutual exclusion: many threads on every VP increment a plain counter, reading it,
 * yielding now and then inside the critical section, and writing it back. */
struct excl {
	marcel_mutex_t m;
	long counter;
	atomic_int inside;
	atomic_int violations;
	int iters;
};

static void excl_round(struct excl *e, int mode, int i)
{
	struct timespec d;
	int r;
	switch (mode) {
	case 0:
		quiet_eq(marcel_mutex_lock(&e->m), 0);
		break;
	case 1: {
		struct timespec t0 = now(CLOCK_MONOTONIC);
		while ((r = marcel_mutex_trylock(&e->m)) == EBUSY) {
			quiet_assert(!expired(&t0), "trylock kept failing");
			pause_briefly();
		}
		quiet_eq(r, 0);
		break;
	}
	default:
		d = deadline(LONG_MS);
		quiet_eq(marcel_mutex_timedlock(&e->m, &d), 0);
	}
	if (atomic_fetch_add(&e->inside, 1) != 0)
		atomic_fetch_add(&e->violations, 1);
	long c = e->counter;
	if (i % 16 == 0)
		pause_briefly();
	e->counter = c + 1;
	atomic_fetch_sub(&e->inside, 1);
	quiet_eq(marcel_mutex_unlock(&e->m), 0);
}

static struct excl *excl_shared;

static any_t excl_body(any_t arg)
{
	for (int i = 0; i < excl_shared->iters; i++)
		excl_round(excl_shared, P2I(arg) % 3, i);
	return NULL;
}

START_TEST(test_mutex_exclusion)
{
	ma_test_init();
	static struct excl e = { .m = MARCEL_MUTEX_INITIALIZER };
	e.counter = 0;
	atomic_store(&e.inside, 0);
	atomic_store(&e.violations, 0);
	e.iters = scaled(400);
	excl_shared = &e;
	unsigned nvp = marcel_nbvps();
	int per_vp = 4, n = (int)nvp * per_vp;
	marcel_t *t = calloc((size_t)n, sizeof(*t));
	ck_assert_ptr_nonnull(t);
	for (int i = 0; i < n; i++)
		t[i] = spawn_on((unsigned)i % nvp, excl_body, I2P(i));
	for (int i = 0; i < n; i++)
		join(t[i]);
	free(t);
	ck_assert_int_eq(atomic_load(&e.violations), 0);
	ck_assert_int_eq(e.counter, (long)n * e.iters);
	ck_assert_int_eq(marcel_mutex_destroy(&e.m), 0);
	marcel_end();
}
END_TEST

START_TEST(test_recursivemutex)
{
	ma_test_init();
	marcel_recursivemutexattr_t a;
	marcel_recursivemutex_t m;

	ck_assert_int_eq(marcel_recursivemutexattr_init(&a), 0);
	/* Recursive whatever kind the attribute names. */
	ck_assert_int_eq(marcel_mutexattr_settype(&a, MARCEL_MUTEX_NORMAL), 0);
	ck_assert_int_eq(marcel_recursivemutex_init(&m, &a), 0);
	ck_assert_int_eq(marcel_recursivemutexattr_destroy(&a), 0);

	ck_assert_int_eq(marcel_recursivemutex_lock(&m), 1);
	ck_assert_int_eq(marcel_recursivemutex_lock(&m), 2);
	ck_assert_int_eq(marcel_recursivemutex_trylock(&m), 3);
	ck_assert_int_eq(in_ult(OP_RMUTEX_TRYLOCK, &m, NULL), 0);
	ck_assert_int_eq(in_ult(OP_RMUTEX_UNLOCK, &m, NULL), -EPERM);
	ck_assert_int_eq(marcel_recursivemutex_destroy(&m), EBUSY);
	ck_assert_int_eq(marcel_recursivemutex_unlock(&m), 2);
	ck_assert_int_eq(marcel_recursivemutex_unlock(&m), 1);
	ck_assert_int_eq(in_ult(OP_RMUTEX_TRYLOCK, &m, NULL), 0);
	ck_assert_int_eq(marcel_recursivemutex_unlock(&m), 0);
	ck_assert_int_eq(marcel_recursivemutex_unlock(&m), -EPERM);
	/* Free: another thread gets depth 1, and it stays usable after the refused destroy. */
	ck_assert_int_eq(in_ult(OP_RMUTEX_TRYLOCK, &m, NULL), 1);
	ck_assert_int_eq(in_ult(OP_RMUTEX_LOCK_UNLOCK, &m, NULL), 1);
	ck_assert_int_eq(marcel_recursivemutex_lock(&m), 1);
	ck_assert_int_eq(marcel_recursivemutex_unlock(&m), 0);
	ck_assert_int_eq(marcel_recursivemutex_destroy(&m), 0);

	ck_assert_int_eq(marcel_recursivemutex_init(&m, NULL), 0);
	ck_assert_int_eq(marcel_recursivemutex_trylock(&m), 1);
	ck_assert_int_eq(marcel_recursivemutex_lock(&m), 2);
	ck_assert_int_eq(marcel_recursivemutex_unlock(&m), 1);
	ck_assert_int_eq(marcel_recursivemutex_unlock(&m), 0);
	ck_assert_int_eq(marcel_recursivemutex_destroy(&m), 0);

	marcel_recursivemutex_t s = MARCEL_RECURSIVEMUTEX_INITIALIZER;
	ck_assert_int_eq(marcel_recursivemutex_lock(&s), 1);
	ck_assert_int_eq(marcel_recursivemutex_lock(&s), 2);
	ck_assert_int_eq(marcel_recursivemutex_unlock(&s), 1);
	ck_assert_int_eq(marcel_recursivemutex_unlock(&s), 0);

	ck_assert_int_eq(marcel_recursivemutex_lock(NULL), -EINVAL);
	ck_assert_int_eq(marcel_recursivemutexattr_init(NULL), EINVAL);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ condition variables */

START_TEST(test_condattr)
{
	ma_test_init();
	marcel_condattr_t a, zero;
	marcel_cond_t c;
	clockid_t clk = (clockid_t)-1;
	int v = -1;
	memset(&zero, 0, sizeof(zero));

	ck_assert_int_eq(marcel_condattr_init(NULL), EINVAL);
	ck_assert_int_eq(marcel_condattr_init(&a), 0);
	ck_assert_int_eq(marcel_condattr_getclock(&a, &clk), 0);
	ck_assert_int_eq(clk, CLOCK_REALTIME);
	ck_assert_int_eq(marcel_condattr_setclock(&a, CLOCK_MONOTONIC), 0);
	ck_assert_int_eq(marcel_condattr_getclock(&a, &clk), 0);
	ck_assert_int_eq(clk, CLOCK_MONOTONIC);
	ck_assert_int_eq(marcel_condattr_setclock(&a, CLOCK_PROCESS_CPUTIME_ID), EINVAL);
	ck_assert_int_eq(marcel_condattr_setclock(&a, CLOCK_THREAD_CPUTIME_ID), EINVAL);
	ck_assert_int_eq(marcel_condattr_setclock(&a, CLOCK_MONOTONIC_RAW), EINVAL);
	ck_assert_int_eq(marcel_condattr_setclock(&a, (clockid_t)12345), EINVAL);
	ck_assert_int_eq(marcel_condattr_getclock(&a, &clk), 0);
	ck_assert_int_eq(clk, CLOCK_MONOTONIC);
	ck_assert_int_eq(marcel_condattr_setclock(&a, CLOCK_REALTIME), 0);
	ck_assert_int_eq(marcel_condattr_getclock(&a, &clk), 0);
	ck_assert_int_eq(clk, CLOCK_REALTIME);
	ck_assert_int_eq(marcel_condattr_getclock(NULL, &clk), EINVAL);
	ck_assert_int_eq(marcel_condattr_getclock(&a, NULL), EINVAL);

	ck_assert_int_eq(marcel_condattr_getpshared(&a, &v), 0);
	ck_assert_int_eq(v, MARCEL_PROCESS_PRIVATE);
	ck_assert_int_eq(marcel_condattr_setpshared(&a, MARCEL_PROCESS_SHARED), ENOTSUP);
	ck_assert_int_eq(marcel_condattr_setpshared(&a, 7), EINVAL);
	ck_assert_int_eq(marcel_condattr_setpshared(&a, MARCEL_PROCESS_PRIVATE), 0);
	ck_assert_int_eq(marcel_condattr_getpshared(&a, &v), 0);
	ck_assert_int_eq(v, MARCEL_PROCESS_PRIVATE);
	ck_assert_int_eq(marcel_condattr_getpshared(NULL, &v), EINVAL);
	ck_assert_int_eq(marcel_condattr_getpshared(&a, NULL), EINVAL);

	ck_assert_int_eq(marcel_condattr_destroy(&zero), EINVAL);
	ck_assert_int_eq(marcel_condattr_destroy(NULL), EINVAL);
	ck_assert_int_eq(marcel_cond_init(&c, &zero), EINVAL);
	ck_assert_int_eq(marcel_cond_init(NULL, &a), EINVAL);
	ck_assert_int_eq(marcel_cond_init(&c, &a), 0);
	ck_assert_int_eq(marcel_cond_destroy(&c), 0);
	ck_assert_int_eq(marcel_cond_init(&c, NULL), 0);
	ck_assert_int_eq(marcel_cond_destroy(&c), 0);
	ck_assert_int_eq(marcel_condattr_destroy(&a), 0);
	ck_assert_int_eq(marcel_condattr_destroy(&a), EINVAL);
	marcel_end();
}
END_TEST

struct cv {
	marcel_mutex_t m;
	marcel_cond_t c;
	int waiting; /* under m */
	int tokens;  /* under m */
	int go;      /* under m */
	atomic_int woken;
};

static void cv_init(struct cv *v)
{
	memset(v, 0, sizeof(*v));
	ck_assert_int_eq(marcel_mutex_init(&v->m, NULL), 0);
	ck_assert_int_eq(marcel_cond_init(&v->c, NULL), 0);
}

/* Waits for a token (one per signal). */
static void *cv_token_waiter(void *p)
{
	struct cv *v = p;
	struct timespec d = deadline(LONG_MS);
	ck_assert_int_eq(marcel_mutex_lock(&v->m), 0);
	v->waiting++;
	while (v->tokens == 0)
		ck_assert_int_eq(marcel_cond_timedwait(&v->c, &v->m, &d), 0);
	v->tokens--;
	ck_assert_int_eq(marcel_mutex_unlock(&v->m), 0);
	atomic_fetch_add(&v->woken, 1);
	return NULL;
}

/* Waits for go (one broadcast). Untimed wait in marcel threads, timed in kernel threads. */
static void *cv_go_waiter(void *p)
{
	struct cv *v = p;
	struct timespec d = deadline(LONG_MS);
	ck_assert_int_eq(marcel_mutex_lock(&v->m), 0);
	v->waiting++;
	while (!v->go) {
		if (marcel_self())
			ck_assert_int_eq(marcel_cond_wait(&v->c, &v->m), 0);
		else
			ck_assert_int_eq(marcel_cond_timedwait(&v->c, &v->m, &d), 0);
	}
	ck_assert_int_eq(marcel_mutex_unlock(&v->m), 0);
	atomic_fetch_add(&v->woken, 1);
	return NULL;
}

START_TEST(test_cond_signal_broadcast)
{
	ma_test_init();
	struct cv v;
	enum { N = 6 };
	marcel_t t[N];

	/* Signalling nobody is harmless. */
	cv_init(&v);
	ck_assert_int_eq(marcel_cond_signal(&v.c), 0);
	ck_assert_int_eq(marcel_cond_broadcast(&v.c), 0);

	/* N blocked waiters, N signals, one at a time: each wakes somebody. */
	for (int i = 0; i < N; i++)
		t[i] = spawn((marcel_func_t)cv_token_waiter, &v);
	for (int i = 0; i < N; i++) {
		lock_when(&v.m, &v.waiting, N);
		v.tokens++;
		ck_assert_int_eq(marcel_cond_signal(&v.c), 0);
		ck_assert_int_eq(marcel_mutex_unlock(&v.m), 0);
		await_ge(&v.woken, i + 1, "a signalled waiter");
	}
	for (int i = 0; i < N; i++)
		join(t[i]);
	ck_assert_int_eq(v.tokens, 0);
	ck_assert_int_eq(marcel_cond_destroy(&v.c), 0);
	ck_assert_int_eq(marcel_mutex_destroy(&v.m), 0);

	/* N blocked waiters, one broadcast wakes them all. */
	cv_init(&v);
	for (int i = 0; i < N; i++)
		t[i] = spawn_on((unsigned)i % marcel_nbvps(), (marcel_func_t)cv_go_waiter, &v);
	lock_when(&v.m, &v.waiting, N); /* all of them are blocked in the wait now */
	v.go = 1;
	ck_assert_int_eq(marcel_cond_broadcast(&v.c), 0);
	ck_assert_int_eq(marcel_mutex_unlock(&v.m), 0);
	for (int i = 0; i < N; i++)
		join(t[i]);
	ck_assert_int_eq(atomic_load(&v.woken), N);
	ck_assert_int_eq(marcel_cond_destroy(&v.c), 0);
	ck_assert_int_eq(marcel_mutex_destroy(&v.m), 0);

	/* Static initialisers. */
	static struct cv s = { .m = MARCEL_MUTEX_INITIALIZER, .c = MARCEL_COND_INITIALIZER };
	s.waiting = s.go = 0;
	atomic_store(&s.woken, 0);
	t[0] = spawn((marcel_func_t)cv_go_waiter, &s);
	lock_when(&s.m, &s.waiting, 1);
	s.go = 1;
	ck_assert_int_eq(marcel_cond_signal(&s.c), 0);
	ck_assert_int_eq(marcel_mutex_unlock(&s.m), 0);
	join(t[0]);
	ck_assert_int_eq(atomic_load(&s.woken), 1);

	ck_assert_int_eq(marcel_cond_signal(NULL), EINVAL);
	ck_assert_int_eq(marcel_cond_broadcast(NULL), EINVAL);
	ck_assert_int_eq(marcel_cond_init(NULL, NULL), EINVAL);
	marcel_end();
}
END_TEST

START_TEST(test_cond_timedwait_realtime)
{
	ma_test_init();
	marcel_mutex_t m = MARCEL_MUTEX_INITIALIZER;
	marcel_cond_t c = MARCEL_COND_INITIALIZER;
	struct timespec d;

	ck_assert_int_eq(marcel_mutex_lock(&m), 0);
	d = deadline(SHORT_MS);
	ck_assert_int_eq(marcel_cond_timedwait(&c, &m, &d), ETIMEDOUT);
	ck_assert(reached(CLOCK_REALTIME, &d));
	/* The mutex is held again. */
	ck_assert_int_eq(in_ult(OP_MUTEX_TRYLOCK, &m, NULL), EBUSY);
	d = deadline(-1000);
	ck_assert_int_eq(marcel_cond_timedwait(&c, &m, &d), ETIMEDOUT);
	ck_assert_int_eq(in_ult(OP_MUTEX_TRYLOCK, &m, NULL), EBUSY);

	d = deadline(LONG_MS);
	d.tv_nsec = 1000000000L;
	ck_assert_int_eq(marcel_cond_timedwait(&c, &m, &d), EINVAL);
	d.tv_nsec = -1;
	ck_assert_int_eq(marcel_cond_timedwait(&c, &m, &d), EINVAL);
	ck_assert_int_eq(marcel_cond_timedwait(&c, &m, NULL), EINVAL);
	ck_assert_int_eq(marcel_mutex_unlock(&m), 0);
	ck_assert_int_eq(marcel_cond_destroy(&c), 0);
	marcel_end();
}
END_TEST

struct mono {
	marcel_mutex_t m;
	marcel_cond_t c;
	int waiting, go;
};

static any_t mono_waiter(any_t p)
{
	struct mono *v = p;
	struct timespec d = after_ms(CLOCK_MONOTONIC, LONG_MS);
	ck_assert_int_eq(marcel_mutex_lock(&v->m), 0);
	v->waiting = 1;
	while (!v->go)
		ck_assert_int_eq(marcel_cond_timedwait(&v->c, &v->m, &d), 0);
	ck_assert_int_eq(marcel_mutex_unlock(&v->m), 0);
	return NULL;
}

START_TEST(test_cond_timedwait_monotonic)
{
	ma_test_init();
	struct mono v = { .m = MARCEL_MUTEX_INITIALIZER };
	marcel_condattr_t a;
	struct timespec d;

	ck_assert_int_eq(marcel_condattr_init(&a), 0);
	ck_assert_int_eq(marcel_condattr_setclock(&a, CLOCK_MONOTONIC), 0);
	ck_assert_int_eq(marcel_cond_init(&v.c, &a), 0);
	ck_assert_int_eq(marcel_condattr_destroy(&a), 0);

	/* The deadline is read on the monotonic clock (read on the realtime clock it would be
	 * decades in the past and time out at once). */
	ck_assert_int_eq(marcel_mutex_lock(&v.m), 0);
	d = after_ms(CLOCK_MONOTONIC, SHORT_MS);
	ck_assert_int_eq(marcel_cond_timedwait(&v.c, &v.m, &d), ETIMEDOUT);
	ck_assert(reached(CLOCK_MONOTONIC, &d));
	ck_assert_int_eq(in_ult(OP_MUTEX_TRYLOCK, &v.m, NULL), EBUSY);
	d.tv_nsec = 1000000000L;
	ck_assert_int_eq(marcel_cond_timedwait(&v.c, &v.m, &d), EINVAL);
	ck_assert_int_eq(marcel_mutex_unlock(&v.m), 0);

	/* A signal before the deadline. */
	marcel_t t = spawn(mono_waiter, &v);
	lock_when(&v.m, &v.waiting, 1);
	v.go = 1;
	ck_assert_int_eq(marcel_cond_signal(&v.c), 0);
	ck_assert_int_eq(marcel_mutex_unlock(&v.m), 0);
	join(t);
	ck_assert_int_eq(marcel_cond_destroy(&v.c), 0);
	marcel_end();
}
END_TEST

START_TEST(test_cond_errors)
{
	ma_test_init();
	marcel_mutex_t m = MARCEL_MUTEX_INITIALIZER;
	marcel_cond_t c = MARCEL_COND_INITIALIZER;
	struct timespec d = deadline(LONG_MS);
	struct holder h;

	/* Waiting without holding the mutex. */
	ck_assert_int_eq(marcel_cond_timedwait(&c, &m, &d), EPERM);
	ck_assert_int_eq(marcel_cond_wait(&c, &m), EPERM);
	/* ... while another thread holds it. */
	hold_start(&h, HOLD_MUTEX, &m);
	ck_assert_int_eq(marcel_cond_timedwait(&c, &m, &d), EPERM);
	ck_assert_int_eq(marcel_cond_wait(&c, &m), EPERM);
	hold_stop(&h);
	/* ... in another thread while this one holds it. */
	ck_assert_int_eq(marcel_mutex_lock(&m), 0);
	ck_assert_int_eq(in_ult(OP_COND_TIMEDWAIT, &c, &m), EPERM);
	ck_assert_int_eq(in_ult(OP_COND_WAIT, &c, &m), EPERM);
	ck_assert_int_eq(marcel_mutex_unlock(&m), 0);

	ck_assert_int_eq(marcel_cond_wait(NULL, &m), EINVAL);
	ck_assert_int_eq(marcel_cond_wait(&c, NULL), EINVAL);
	ck_assert_int_eq(marcel_cond_timedwait(NULL, &m, &d), EINVAL);
	ck_assert_int_eq(marcel_cond_timedwait(&c, NULL, &d), EINVAL);
	ck_assert_int_eq(marcel_cond_destroy(&c), 0);
	ck_assert_int_eq(marcel_mutex_destroy(&m), 0);
	marcel_end();
}
END_TEST

START_TEST(test_cond_destroy_busy)
{
	ma_test_init();
	struct cv v;
	cv_init(&v);
	marcel_t t = spawn((marcel_func_t)cv_go_waiter, &v);
	/* Holding m with waiting == 1: the waiter released m inside the wait, it is blocked. */
	lock_when(&v.m, &v.waiting, 1);
	ck_assert_int_eq(marcel_cond_destroy(&v.c), EBUSY);
	ck_assert_int_eq(marcel_cond_destroy(&v.c), EBUSY);
	/* Still usable: the signal reaches the waiter. */
	v.go = 1;
	ck_assert_int_eq(marcel_cond_signal(&v.c), 0);
	ck_assert_int_eq(marcel_mutex_unlock(&v.m), 0);
	join(t);
	ck_assert_int_eq(atomic_load(&v.woken), 1);
	/* And for timed waits too. */
	ck_assert_int_eq(marcel_mutex_lock(&v.m), 0);
	struct timespec d = deadline(SHORT_MS);
	ck_assert_int_eq(marcel_cond_timedwait(&v.c, &v.m, &d), ETIMEDOUT);
	ck_assert_int_eq(marcel_mutex_unlock(&v.m), 0);
	ck_assert_int_eq(marcel_cond_destroy(&v.c), 0);
	ck_assert_int_eq(marcel_mutex_destroy(&v.m), 0);
	marcel_end();
}
END_TEST

/* POSIX's example: destroying a condition right after broadcasting it is fine, since
 * no thread is blocked on it any more (destroy waits for those on their way out). */
START_TEST(test_cond_destroy_after_broadcast)
{
	ma_test_init();
	enum { N = 4 };
	struct cv v;
	marcel_t t[N];
	cv_init(&v);
	for (int i = 0; i < N; i++)
		t[i] = spawn((marcel_func_t)cv_go_waiter, &v);
	lock_when(&v.m, &v.waiting, N);
	v.go = 1;
	ck_assert_int_eq(marcel_cond_broadcast(&v.c), 0);
	ck_assert_int_eq(marcel_mutex_unlock(&v.m), 0);
	ck_assert_int_eq(marcel_cond_destroy(&v.c), 0);
	for (int i = 0; i < N; i++)
		join(t[i]);
	ck_assert_int_eq(atomic_load(&v.woken), N);
	ck_assert_int_eq(marcel_mutex_destroy(&v.m), 0);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ semaphores */

struct semw {
	marcel_sem_t *s;
	atomic_int waiting;
	atomic_int got;
};

static any_t sem_timed_P_body(any_t p)
{
	struct semw *w = p;
	atomic_fetch_add(&w->waiting, 1);
	int r = marcel_sem_timed_P(w->s, LONG_MS);
	atomic_fetch_add(&w->got, r);
	return I2P(r);
}

static any_t sem_P_body(any_t p)
{
	struct semw *w = p;
	atomic_fetch_add(&w->waiting, 1);
	marcel_sem_P(w->s);
	atomic_fetch_add(&w->got, 1);
	return I2P(1);
}

static any_t sem_wait_body(any_t p)
{
	struct semw *w = p;
	atomic_fetch_add(&w->waiting, 1);
	int r = marcel_sem_wait(w->s);
	if (r == 0)
		atomic_fetch_add(&w->got, 1);
	return I2P(r);
}

static any_t sem_timedwait_body(any_t p)
{
	struct semw *w = p;
	struct timespec d = deadline(LONG_MS);
	atomic_fetch_add(&w->waiting, 1);
	int r = marcel_sem_timedwait(w->s, &d);
	if (r == 0)
		atomic_fetch_add(&w->got, 1);
	return I2P(r);
}

struct sem_prod {
	marcel_sem_t *s;
	int n;
};

static any_t sem_V_body(any_t p)
{
	struct sem_prod *x = p;
	for (int i = 0; i < x->n; i++) {
		marcel_sem_V(x->s);
		if (i % 8 == 0)
			marcel_yield();
	}
	return NULL;
}

START_TEST(test_sem_PV)
{
	ma_test_init();
	marcel_sem_t s;
	struct timespec t0;

	ck_assert_int_eq(marcel_sem_init(NULL, 0), EINVAL);
	ck_assert_int_eq(marcel_sem_init(&s, -1), EINVAL);
	ck_assert_int_eq(marcel_sem_init(&s, 2), 0);
	ck_assert_int_eq(marcel_sem_try_P(&s), 1);
	ck_assert_int_eq(marcel_sem_try_P(&s), 1);
	ck_assert_int_eq(marcel_sem_try_P(&s), 0);
	marcel_sem_V(&s);
	ck_assert_int_eq(marcel_sem_try_P(&s), 1);
	marcel_sem_V(&s);
	marcel_sem_P(&s); /* available: no wait */
	ck_assert_int_eq(marcel_sem_try_P(&s), 0);

	set_errno(0);
	t0 = now(CLOCK_MONOTONIC);
	ck_assert_int_eq(marcel_sem_timed_P(&s, SHORT_MS), 0);
	ck_assert_int_eq(get_errno(), ETIMEDOUT);
	ck_assert_int_ge(us_since(&t0), SHORT_MS * 1000LL);
	marcel_sem_V(&s);
	ck_assert_int_eq(marcel_sem_timed_P(&s, SHORT_MS), 1);

	/* Blocked P and timed_P, each woken by a V. */
	struct semw w = { .s = &s };
	marcel_t a = spawn(sem_P_body, &w), b = spawn(sem_timed_P_body, &w);
	await_ge(&w.waiting, 2, "two waiters");
	marcel_sem_V(&s);
	marcel_sem_V(&s);
	ck_assert_int_eq(P2I(join(a)), 1);
	ck_assert_int_eq(P2I(join(b)), 1);
	ck_assert_int_eq(marcel_sem_try_P(&s), 0);

	/* Counting: every unit given by many producers is taken exactly once. */
	enum { NP = 8 };
	const int PER = scaled(150);
	struct sem_prod prod = { &s, PER };
	marcel_t p[NP];
	for (int i = 0; i < NP; i++)
		p[i] = spawn_on((unsigned)i % marcel_nbvps(), sem_V_body, &prod);
	for (int i = 0; i < NP * PER; i++)
		quiet_eq(marcel_sem_timed_P(&s, LONG_MS), 1);
	for (int i = 0; i < NP; i++)
		join(p[i]);
	ck_assert_int_eq(marcel_sem_try_P(&s), 0);
	ck_assert_int_eq(marcel_sem_destroy(&s), 0);

	marcel_sem_t st = MARCEL_SEM_INITIALIZER(3);
	ck_assert_int_eq(marcel_sem_try_P(&st), 1);
	ck_assert_int_eq(marcel_sem_try_P(&st), 1);
	ck_assert_int_eq(marcel_sem_try_P(&st), 1);
	ck_assert_int_eq(marcel_sem_try_P(&st), 0);
	ck_assert_int_eq(marcel_sem_destroy(&st), 0);
	marcel_end();
}
END_TEST

START_TEST(test_sem_posix)
{
	ma_test_init();
	marcel_sem_t s;
	struct timespec d;
	int v = -1;

	set_errno(0);
	ck_assert_int_eq(marcel_sem_posix_init(&s, 1, 0), -1);
	ck_assert_int_eq(get_errno(), ENOTSUP);
	set_errno(0);
	ck_assert_int_eq(marcel_sem_posix_init(&s, 0, (unsigned)MARCEL_SEM_VALUE_MAX + 1u), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	set_errno(0);
	ck_assert_int_eq(marcel_sem_posix_init(NULL, 0, 0), -1);
	ck_assert_int_eq(get_errno(), EINVAL);

	ck_assert_int_eq(marcel_sem_posix_init(&s, 0, 1), 0);
	ck_assert_int_eq(marcel_sem_getvalue(&s, &v), 0);
	ck_assert_int_eq(v, 1);
	ck_assert_int_eq(marcel_sem_trywait(&s), 0);
	ck_assert_int_eq(marcel_sem_getvalue(&s, &v), 0);
	ck_assert_int_eq(v, 0);
	set_errno(0);
	ck_assert_int_eq(marcel_sem_trywait(&s), -1);
	ck_assert_int_eq(get_errno(), EAGAIN);

	set_errno(0);
	d = deadline(SHORT_MS);
	ck_assert_int_eq(marcel_sem_timedwait(&s, &d), -1);
	ck_assert_int_eq(get_errno(), ETIMEDOUT);
	ck_assert(reached(CLOCK_REALTIME, &d));
	set_errno(0);
	d = deadline(-1000);
	ck_assert_int_eq(marcel_sem_timedwait(&s, &d), -1);
	ck_assert_int_eq(get_errno(), ETIMEDOUT);
	d = deadline(LONG_MS);
	d.tv_nsec = 1000000000L;
	set_errno(0);
	ck_assert_int_eq(marcel_sem_timedwait(&s, &d), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	d.tv_nsec = -1;
	set_errno(0);
	ck_assert_int_eq(marcel_sem_timedwait(&s, &d), -1);
	ck_assert_int_eq(get_errno(), EINVAL);

	ck_assert_int_eq(marcel_sem_post(&s), 0);
	ck_assert_int_eq(marcel_sem_getvalue(&s, &v), 0);
	ck_assert_int_eq(v, 1);
	d = deadline(-1000); /* passed, but a unit is there: taken */
	ck_assert_int_eq(marcel_sem_timedwait(&s, &d), 0);
	ck_assert_int_eq(marcel_sem_post(&s), 0);
	ck_assert_int_eq(marcel_sem_wait(&s), 0);
	ck_assert_int_eq(marcel_sem_getvalue(&s, &v), 0);
	ck_assert_int_eq(v, 0);

	/* The P/V interface works on the same object. */
	marcel_sem_V(&s);
	ck_assert_int_eq(marcel_sem_trywait(&s), 0);
	ck_assert_int_eq(marcel_sem_post(&s), 0);
	ck_assert_int_eq(marcel_sem_try_P(&s), 1);

	/* Waiters in wait and timedwait, woken by posts. */
	struct semw w = { .s = &s };
	marcel_t a = spawn(sem_wait_body, &w), b = spawn(sem_timedwait_body, &w);
	await_ge(&w.waiting, 2, "two waiters");
	ck_assert_int_eq(marcel_sem_post(&s), 0);
	ck_assert_int_eq(marcel_sem_post(&s), 0);
	ck_assert_int_eq(P2I(join(a)), 0);
	ck_assert_int_eq(P2I(join(b)), 0);
	ck_assert_int_eq(marcel_sem_getvalue(&s, &v), 0);
	ck_assert_int_eq(v, 0);
	ck_assert_int_eq(marcel_sem_destroy(&s), 0);

	/* At the maximum. */
	ck_assert_int_eq(marcel_sem_posix_init(&s, 0, MARCEL_SEM_VALUE_MAX), 0);
	set_errno(0);
	ck_assert_int_eq(marcel_sem_post(&s), -1);
	ck_assert_int_eq(get_errno(), EOVERFLOW);
	ck_assert_int_eq(marcel_sem_getvalue(&s, &v), 0);
	ck_assert_int_eq(v, MARCEL_SEM_VALUE_MAX);
	ck_assert_int_eq(marcel_sem_trywait(&s), 0);
	ck_assert_int_eq(marcel_sem_post(&s), 0);
	ck_assert_int_eq(marcel_sem_destroy(&s), 0);

	/* NULL is a bad semaphore. */
	set_errno(0);
	ck_assert_int_eq(marcel_sem_wait(NULL), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	set_errno(0);
	ck_assert_int_eq(marcel_sem_trywait(NULL), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	set_errno(0);
	ck_assert_int_eq(marcel_sem_post(NULL), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	set_errno(0);
	ck_assert_int_eq(marcel_sem_getvalue(NULL, &v), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	marcel_end();
}
END_TEST

START_TEST(test_sem_destroy_busy)
{
	ma_test_init();
	marcel_sem_t s;
	int v = -1;
	ck_assert_int_eq(marcel_sem_init(&s, 0), 0);
	ck_assert_int_eq(marcel_sem_destroy(&s), 0); /* nobody waits */
	ck_assert_int_eq(marcel_sem_init(&s, 0), 0);

	struct semw w = { .s = &s };
	marcel_t a = spawn(sem_timed_P_body, &w), b = spawn(sem_wait_body, &w);
	await_ge(&w.waiting, 2, "two waiters");
	settle();
	ck_assert_int_eq(marcel_sem_getvalue(&s, &v), 0);
	ck_assert_int_eq(v, 0);
	ck_assert_int_eq(marcel_sem_destroy(&s), EBUSY);
	/* Still usable. */
	marcel_sem_V(&s);
	ck_assert_int_eq(marcel_sem_post(&s), 0);
	ck_assert_int_eq(P2I(join(a)), 1);
	ck_assert_int_eq(P2I(join(b)), 0);
	ck_assert_int_eq(atomic_load(&w.got), 2);
	ck_assert_int_eq(marcel_sem_try_P(&s), 0);
	ck_assert_int_eq(marcel_sem_destroy(&s), 0);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ barriers */

START_TEST(test_barrierattr)
{
	ma_test_init();
	marcel_barrierattr_t a, zero;
	marcel_barrier_t b;
	int v = -1;
	memset(&zero, 0, sizeof(zero));

	ck_assert_int_eq(marcel_barrierattr_init(NULL), EINVAL);
	ck_assert_int_eq(marcel_barrierattr_init(&a), 0);
	ck_assert_int_eq(marcel_barrierattr_getmode(&a, &v), 0);
	ck_assert_int_eq(v, MARCEL_BARRIER_SLEEP_MODE);
	ck_assert_int_eq(marcel_barrierattr_setmode(&a, MARCEL_BARRIER_YIELD_MODE), 0);
	ck_assert_int_eq(marcel_barrierattr_getmode(&a, &v), 0);
	ck_assert_int_eq(v, MARCEL_BARRIER_YIELD_MODE);
	ck_assert_int_eq(marcel_barrierattr_setmode(&a, 2), EINVAL);
	ck_assert_int_eq(marcel_barrierattr_setmode(&a, -1), EINVAL);
	ck_assert_int_eq(marcel_barrierattr_getmode(&a, &v), 0);
	ck_assert_int_eq(v, MARCEL_BARRIER_YIELD_MODE);
	ck_assert_int_eq(marcel_barrierattr_setmode(NULL, MARCEL_BARRIER_SLEEP_MODE), EINVAL);
	ck_assert_int_eq(marcel_barrierattr_getmode(NULL, &v), EINVAL);
	ck_assert_int_eq(marcel_barrierattr_getmode(&a, NULL), EINVAL);

	ck_assert_int_eq(marcel_barrierattr_getpshared(&a, &v), 0);
	ck_assert_int_eq(v, MARCEL_PROCESS_PRIVATE);
	ck_assert_int_eq(marcel_barrierattr_setpshared(&a, MARCEL_PROCESS_SHARED), ENOTSUP);
	ck_assert_int_eq(marcel_barrierattr_setpshared(&a, 5), EINVAL);
	ck_assert_int_eq(marcel_barrierattr_setpshared(&a, MARCEL_PROCESS_PRIVATE), 0);
	ck_assert_int_eq(marcel_barrierattr_getpshared(&a, &v), 0);
	ck_assert_int_eq(v, MARCEL_PROCESS_PRIVATE);
	ck_assert_int_eq(marcel_barrierattr_getpshared(NULL, &v), EINVAL);
	ck_assert_int_eq(marcel_barrierattr_getpshared(&a, NULL), EINVAL);

	ck_assert_int_eq(marcel_barrierattr_destroy(&zero), EINVAL);
	ck_assert_int_eq(marcel_barrierattr_destroy(NULL), EINVAL);
	ck_assert_int_eq(marcel_barrier_init(&b, &zero, 2), EINVAL);
	ck_assert_int_eq(marcel_barrier_init(&b, &a, 1), 0);
	ck_assert_int_eq(marcel_barrier_wait(&b), MARCEL_BARRIER_SERIAL_THREAD);
	ck_assert_int_eq(marcel_barrier_destroy(&b), 0);
	ck_assert_int_eq(marcel_barrierattr_destroy(&a), 0);
	ck_assert_int_eq(marcel_barrierattr_destroy(&a), EINVAL);
	marcel_end();
}
END_TEST

#define BAR_MAX_ROUNDS 1000

struct bar {
	marcel_barrier_t b;
	int n, rounds;
	atomic_int arrived[BAR_MAX_ROUNDS];
	atomic_int serial[BAR_MAX_ROUNDS];
	atomic_int bad;
	atomic_int finished;
};

/* Every round: all n arrive before anyone leaves, one of them gets SERIAL_THREAD. */
static void *bar_body(void *p)
{
	struct bar *x = p;
	for (int r = 0; r < x->rounds; r++) {
		atomic_fetch_add(&x->arrived[r], 1);
		int ret = marcel_barrier_wait(&x->b);
		if (ret == MARCEL_BARRIER_SERIAL_THREAD)
			atomic_fetch_add(&x->serial[r], 1);
		else if (ret != 0)
			atomic_fetch_add(&x->bad, 1);
		/* Left the round: everybody must have arrived in it (else the rounds are out of
		 * step and the test would hang: stop here). */
		int in = atomic_load(&x->arrived[r]);
		quiet_assert(in >= x->n, "round %d: left with %d of %d arrived", r, in, x->n);
	}
	atomic_fetch_add(&x->finished, 1);
	return NULL;
}

static struct bar *bar_new(int mode, int n, int rounds)
{
	struct bar *x = calloc(1, sizeof(*x));
	marcel_barrierattr_t a;
	ck_assert_ptr_nonnull(x);
	ck_assert_int_le(rounds, BAR_MAX_ROUNDS);
	x->n = n;
	x->rounds = rounds;
	ck_assert_int_eq(marcel_barrierattr_init(&a), 0);
	ck_assert_int_eq(marcel_barrierattr_setmode(&a, mode), 0);
	ck_assert_int_eq(marcel_barrier_init(&x->b, &a, (unsigned)n), 0);
	ck_assert_int_eq(marcel_barrierattr_destroy(&a), 0);
	return x;
}

static void bar_check(struct bar *x)
{
	ck_assert_int_eq(atomic_load(&x->bad), 0);
	for (int r = 0; r < x->rounds; r++) {
		ck_assert_int_eq(atomic_load(&x->arrived[r]), x->n);
		ck_assert_msg(atomic_load(&x->serial[r]) == 1, "round %d: %d serial threads", r,
			      atomic_load(&x->serial[r]));
	}
	ck_assert_int_eq(marcel_barrier_destroy(&x->b), 0);
	free(x);
}

static void bar_run(int mode, int n, int rounds)
{
	struct bar *x = bar_new(mode, n, rounds);
	marcel_t *t = calloc((size_t)n, sizeof(*t));
	ck_assert_ptr_nonnull(t);
	for (int i = 0; i < n; i++)
		t[i] = spawn_on((unsigned)i % marcel_nbvps(), (marcel_func_t)bar_body, x);
	await_ge(&x->finished, n, "all threads through all rounds");
	for (int i = 0; i < n; i++)
		join(t[i]);
	free(t);
	bar_check(x);
}

START_TEST(test_barrier_rounds)
{
	ma_test_init();
	/* Many rounds: a wake-up that reaches the next round shows up within a few hundred.
	 * Fewer on the synthetic topology, whose 16 workers share this machine's cores. */
	int rounds = scaled(ma_test_topology ? BAR_MAX_ROUNDS / 10 : BAR_MAX_ROUNDS);
	bar_run(MARCEL_BARRIER_SLEEP_MODE, 8, rounds);
	bar_run(MARCEL_BARRIER_SLEEP_MODE, 2, rounds);
	bar_run(MARCEL_BARRIER_SLEEP_MODE, 1, 10);
	/* More threads than VPs on the real machine: some wait on the VP of others. */
	bar_run(MARCEL_BARRIER_SLEEP_MODE, 24, 10);
	marcel_end();
}
END_TEST

START_TEST(test_barrier_yield_mode)
{
	ma_test_init();
	/* Waiters keep their workers busy: few rounds where workers outnumber cores. */
	int f = ma_test_topology ? 4 : 1;
	bar_run(MARCEL_BARRIER_YIELD_MODE, 4, scaled(32 / f));
	bar_run(MARCEL_BARRIER_YIELD_MODE, 12, scaled(8 / f));
	marcel_end();
}
END_TEST

struct bar_one {
	marcel_barrier_t *b;
	atomic_int arriving;
};

static any_t bar_one_body(any_t p)
{
	struct bar_one *x = p;
	atomic_fetch_add(&x->arriving, 1);
	return I2P(marcel_barrier_wait(x->b));
}

START_TEST(test_barrier_count)
{
	ma_test_init();
	marcel_barrier_t b;
	unsigned c = 0;

	ck_assert_int_eq(marcel_barrier_init(&b, NULL, 0), EINVAL);
	ck_assert_int_eq(marcel_barrier_init(NULL, NULL, 2), EINVAL);
	ck_assert_int_eq(marcel_barrier_init(&b, NULL, 2), 0);
	ck_assert_int_eq(marcel_barrier_destroy(&b), 0); /* idle */
	ck_assert_int_eq(marcel_barrier_init(&b, NULL, 2), 0);
	ck_assert_int_eq(marcel_barrier_getcount(&b, &c), 0);
	ck_assert_uint_eq(c, 2);
	ck_assert_int_eq(marcel_barrier_setcount(&b, 0), EINVAL);
	ck_assert_int_eq(marcel_barrier_setcount(&b, 3), 0);
	ck_assert_int_eq(marcel_barrier_getcount(&b, &c), 0);
	ck_assert_uint_eq(c, 3);
	ck_assert_int_eq(marcel_barrier_addcount(&b, 2), 0);
	ck_assert_int_eq(marcel_barrier_getcount(&b, &c), 0);
	ck_assert_uint_eq(c, 5);
	ck_assert_int_eq(marcel_barrier_addcount(&b, -4), 0);
	ck_assert_int_eq(marcel_barrier_getcount(&b, &c), 0);
	ck_assert_uint_eq(c, 1);
	ck_assert_int_eq(marcel_barrier_addcount(&b, -1), EINVAL);
	ck_assert_int_eq(marcel_barrier_getcount(&b, &c), 0);
	ck_assert_uint_eq(c, 1);
	ck_assert_int_eq(marcel_barrier_getcount(&b, NULL), EINVAL);
	ck_assert_int_eq(marcel_barrier_getcount(NULL, &c), EINVAL);
	ck_assert_int_eq(marcel_barrier_wait(NULL), EINVAL);
	/* A count of 1: every wait is a round of its own. */
	ck_assert_int_eq(marcel_barrier_wait(&b), MARCEL_BARRIER_SERIAL_THREAD);
	ck_assert_int_eq(marcel_barrier_wait(&b), MARCEL_BARRIER_SERIAL_THREAD);

	/* Mid-round: one of 3 arrived. The count cannot drop to 1, but 2 applies to this
	 * round, which this thread then completes. */
	ck_assert_int_eq(marcel_barrier_setcount(&b, 3), 0);
	struct bar_one x = { .b = &b };
	marcel_t t = spawn(bar_one_body, &x);
	await_ge(&x.arriving, 1, "the first arrival");
	settle();
	ck_assert_int_eq(marcel_barrier_setcount(&b, 1), EINVAL);
	ck_assert_int_eq(marcel_barrier_addcount(&b, -2), EINVAL);
	ck_assert_int_eq(marcel_barrier_destroy(&b), EBUSY);
	ck_assert_int_eq(marcel_barrier_setcount(&b, 2), 0);
	int mine = marcel_barrier_wait(&b), theirs = P2I(join(t));
	ck_assert_msg((mine == MARCEL_BARRIER_SERIAL_THREAD && theirs == 0) ||
			      (mine == 0 && theirs == MARCEL_BARRIER_SERIAL_THREAD),
		      "results %d and %d", mine, theirs);
	ck_assert_int_eq(marcel_barrier_getcount(&b, &c), 0);
	ck_assert_uint_eq(c, 2);

	/* Destroy mid-round again: refused, and the round still completes. */
	atomic_store(&x.arriving, 0);
	t = spawn(bar_one_body, &x);
	await_ge(&x.arriving, 1, "the first arrival");
	settle();
	ck_assert_int_eq(marcel_barrier_destroy(&b), EBUSY);
	mine = marcel_barrier_wait(&b);
	theirs = P2I(join(t));
	ck_assert_int_eq(mine + theirs, MARCEL_BARRIER_SERIAL_THREAD);
	ck_assert(mine == 0 || theirs == 0);
	ck_assert_int_eq(marcel_barrier_destroy(&b), 0);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ read-write locks */

START_TEST(test_rwlockattr)
{
	ma_test_init();
	marcel_rwlockattr_t a, zero;
	marcel_rwlock_t l;
	int v = -1;
	memset(&zero, 0, sizeof(zero));

	ck_assert_int_eq(marcel_rwlockattr_init(NULL), EINVAL);
	ck_assert_int_eq(marcel_rwlockattr_init(&a), 0);
	ck_assert_int_eq(marcel_rwlockattr_getpshared(&a, &v), 0);
	ck_assert_int_eq(v, MARCEL_PROCESS_PRIVATE);
	ck_assert_int_eq(marcel_rwlockattr_setpshared(&a, MARCEL_PROCESS_SHARED), ENOTSUP);
	ck_assert_int_eq(marcel_rwlockattr_setpshared(&a, 3), EINVAL);
	ck_assert_int_eq(marcel_rwlockattr_setpshared(&a, MARCEL_PROCESS_PRIVATE), 0);
	ck_assert_int_eq(marcel_rwlockattr_getpshared(&a, &v), 0);
	ck_assert_int_eq(v, MARCEL_PROCESS_PRIVATE);
	ck_assert_int_eq(marcel_rwlockattr_getpshared(NULL, &v), EINVAL);
	ck_assert_int_eq(marcel_rwlockattr_getpshared(&a, NULL), EINVAL);
	ck_assert_int_eq(marcel_rwlockattr_destroy(&zero), EINVAL);
	ck_assert_int_eq(marcel_rwlockattr_destroy(NULL), EINVAL);
	ck_assert_int_eq(marcel_rwlock_init(&l, &zero), EINVAL);
	ck_assert_int_eq(marcel_rwlock_init(NULL, &a), EINVAL);
	ck_assert_int_eq(marcel_rwlock_init(&l, &a), 0);
	ck_assert_int_eq(marcel_rwlock_wrlock(&l), 0);
	ck_assert_int_eq(marcel_rwlock_unlock(&l), 0);
	ck_assert_int_eq(marcel_rwlock_destroy(&l), 0);
	ck_assert_int_eq(marcel_rwlock_init(&l, NULL), 0);
	ck_assert_int_eq(marcel_rwlock_destroy(&l), 0);
	ck_assert_int_eq(marcel_rwlockattr_destroy(&a), 0);
	ck_assert_int_eq(marcel_rwlockattr_destroy(&a), EINVAL);
	marcel_end();
}
END_TEST

START_TEST(test_rwlock_errors)
{
	ma_test_init();
	marcel_rwlock_t l = MARCEL_RWLOCK_INITIALIZER;
	struct timespec d = deadline(LONG_MS);

	ck_assert_int_eq(marcel_rwlock_unlock(&l), EPERM);

	/* Held for writing by this thread. */
	ck_assert_int_eq(marcel_rwlock_wrlock(&l), 0);
	ck_assert_int_eq(marcel_rwlock_wrlock(&l), EDEADLK);
	ck_assert_int_eq(marcel_rwlock_timedwrlock(&l, &d), EDEADLK);
	ck_assert_int_eq(marcel_rwlock_rdlock(&l), EDEADLK);
	ck_assert_int_eq(marcel_rwlock_timedrdlock(&l, &d), EDEADLK);
	ck_assert_int_eq(in_ult(OP_RW_TRYRD, &l, NULL), EBUSY);
	ck_assert_int_eq(in_ult(OP_RW_TRYWR, &l, NULL), EBUSY);
	ck_assert_int_eq(in_ult(OP_RW_TIMEDRD_SHORT, &l, NULL), ETIMEDOUT);
	ck_assert_int_eq(in_ult(OP_RW_TIMEDWR_SHORT, &l, NULL), ETIMEDOUT);
	ck_assert_int_eq(in_ult(OP_RW_UNLOCK, &l, NULL), EPERM);
	ck_assert_int_eq(marcel_rwlock_destroy(&l), EBUSY);
	ck_assert_int_eq(marcel_rwlock_unlock(&l), 0);
	ck_assert_int_eq(marcel_rwlock_unlock(&l), EPERM);

	/* Held for reading by this thread: other readers welcome, writers not. */
	ck_assert_int_eq(marcel_rwlock_rdlock(&l), 0);
	ck_assert_int_eq(in_ult(OP_RW_TRYRD, &l, NULL), 0);
	ck_assert_int_eq(in_ult(OP_RW_TIMEDRD_SHORT, &l, NULL), 0);
	ck_assert_int_eq(in_ult(OP_RW_TRYWR, &l, NULL), EBUSY);
	ck_assert_int_eq(in_ult(OP_RW_TIMEDWR_SHORT, &l, NULL), ETIMEDOUT);
	ck_assert_int_eq(marcel_rwlock_trywrlock(&l), EBUSY);
	/* Asking to write while reading (the hold is recorded). */
	ck_assert_int_eq(marcel_rwlock_wrlock(&l), EDEADLK);
	ck_assert_int_eq(marcel_rwlock_timedwrlock(&l, &d), EDEADLK);
	ck_assert_int_eq(marcel_rwlock_destroy(&l), EBUSY);
	/* Read-locking again (no writer waits) nests. */
	ck_assert_int_eq(marcel_rwlock_tryrdlock(&l), 0);
	ck_assert_int_eq(marcel_rwlock_unlock(&l), 0);
	ck_assert_int_eq(in_ult(OP_RW_TRYWR, &l, NULL), EBUSY);
	ck_assert_int_eq(marcel_rwlock_unlock(&l), 0);
	ck_assert_int_eq(marcel_rwlock_unlock(&l), EPERM);

	/* Free, and still usable after the refused destroys. */
	ck_assert_int_eq(in_ult(OP_RW_TRYWR, &l, NULL), 0);
	ck_assert_int_eq(marcel_rwlock_trywrlock(&l), 0);
	ck_assert_int_eq(marcel_rwlock_unlock(&l), 0);
	ck_assert_int_eq(marcel_rwlock_destroy(&l), 0);
	ck_assert_int_eq(marcel_rwlock_init(NULL, NULL), EINVAL);
	marcel_end();
}
END_TEST

/* The try variants document only EBUSY, also when the caller is the writer. */
START_TEST(test_rwlock_try_by_writer)
{
	ma_test_init();
	marcel_rwlock_t l = MARCEL_RWLOCK_INITIALIZER;
	ck_assert_int_eq(marcel_rwlock_wrlock(&l), 0);
	ck_assert_int_eq(marcel_rwlock_trywrlock(&l), EBUSY);
	ck_assert_int_eq(marcel_rwlock_tryrdlock(&l), EBUSY);
	ck_assert_int_eq(marcel_rwlock_unlock(&l), 0);
	ck_assert_int_eq(marcel_rwlock_destroy(&l), 0);
	marcel_end();
}
END_TEST

/* unlock: "EPERM if it holds none", also while other threads hold it for reading. */
START_TEST(test_rwlock_unlock_not_reader)
{
	ma_test_init();
	marcel_rwlock_t l = MARCEL_RWLOCK_INITIALIZER;
	ck_assert_int_eq(marcel_rwlock_rdlock(&l), 0);
	ck_assert_int_eq(in_ult(OP_RW_UNLOCK, &l, NULL), EPERM);
	/* This thread's hold is still there. */
	ck_assert_int_eq(in_ult(OP_RW_TRYWR, &l, NULL), EBUSY);
	ck_assert_int_eq(marcel_rwlock_unlock(&l), 0);
	ck_assert_int_eq(in_ult(OP_RW_TRYWR, &l, NULL), 0);
	ck_assert_int_eq(marcel_rwlock_destroy(&l), 0);
	marcel_end();
}
END_TEST

START_TEST(test_rwlock_timed)
{
	ma_test_init();
	marcel_rwlock_t l;
	struct holder h;
	struct timespec d;
	ck_assert_int_eq(marcel_rwlock_init(&l, NULL), 0);

	/* Passed deadlines still take a free lock. */
	d = deadline(-1000);
	ck_assert_int_eq(marcel_rwlock_timedwrlock(&l, &d), 0);
	ck_assert_int_eq(marcel_rwlock_unlock(&l), 0);
	ck_assert_int_eq(marcel_rwlock_timedrdlock(&l, &d), 0);
	ck_assert_int_eq(marcel_rwlock_unlock(&l), 0);

	hold_start(&h, HOLD_WR, &l);
	d = deadline(SHORT_MS);
	ck_assert_int_eq(marcel_rwlock_timedrdlock(&l, &d), ETIMEDOUT);
	ck_assert(reached(CLOCK_REALTIME, &d));
	d = deadline(SHORT_MS);
	ck_assert_int_eq(marcel_rwlock_timedwrlock(&l, &d), ETIMEDOUT);
	ck_assert(reached(CLOCK_REALTIME, &d));
	d = deadline(-1000);
	ck_assert_int_eq(marcel_rwlock_timedwrlock(&l, &d), ETIMEDOUT);
	ck_assert_int_eq(marcel_rwlock_timedrdlock(&l, &d), ETIMEDOUT);
	d = deadline(LONG_MS);
	d.tv_nsec = 1000000000L;
	ck_assert_int_eq(marcel_rwlock_timedrdlock(&l, &d), EINVAL);
	ck_assert_int_eq(marcel_rwlock_timedwrlock(&l, &d), EINVAL);
	d.tv_nsec = -1;
	ck_assert_int_eq(marcel_rwlock_timedrdlock(&l, &d), EINVAL);
	ck_assert_int_eq(marcel_rwlock_timedwrlock(&l, &d), EINVAL);
	ck_assert_int_eq(marcel_rwlock_timedrdlock(&l, NULL), EINVAL);
	ck_assert_int_eq(marcel_rwlock_timedwrlock(&l, NULL), EINVAL);
	/* Waits until the writer lets go. */
	hold_release(&h);
	d = deadline(LONG_MS);
	ck_assert_int_eq(marcel_rwlock_timedwrlock(&l, &d), 0);
	ck_assert_int_eq(marcel_rwlock_unlock(&l), 0);
	join(h.t);

	hold_start(&h, HOLD_WR, &l);
	hold_release(&h);
	d = deadline(LONG_MS);
	ck_assert_int_eq(marcel_rwlock_timedrdlock(&l, &d), 0);
	ck_assert_int_eq(marcel_rwlock_unlock(&l), 0);
	join(h.t);

	/* Blocking versions. */
	hold_start(&h, HOLD_RD, &l);
	hold_release(&h);
	ck_assert_int_eq(marcel_rwlock_wrlock(&l), 0);
	ck_assert_int_eq(marcel_rwlock_unlock(&l), 0);
	join(h.t);
	ck_assert_int_eq(marcel_rwlock_destroy(&l), 0);
	marcel_end();
}
END_TEST

struct overlap {
	marcel_rwlock_t l;
	int n;
	atomic_int inside;
};

static any_t overlap_reader(any_t p)
{
	struct overlap *o = p;
	struct timespec d = deadline(LONG_MS);
	ck_assert_int_eq(marcel_rwlock_timedrdlock(&o->l, &d), 0);
	atomic_fetch_add(&o->inside, 1);
	/* Only possible if all readers hold the lock together. */
	await_ge(&o->inside, o->n, "all readers inside together");
	ck_assert_int_eq(marcel_rwlock_unlock(&o->l), 0);
	return NULL;
}

START_TEST(test_rwlock_readers_overlap)
{
	ma_test_init();
	struct overlap o = { .l = MARCEL_RWLOCK_INITIALIZER, .n = 5 };
	marcel_t t[5];
	for (int i = 0; i < o.n; i++)
		t[i] = spawn_on((unsigned)i % marcel_nbvps(), overlap_reader, &o);
	for (int i = 0; i < o.n; i++)
		join(t[i]);
	ck_assert_int_eq(atomic_load(&o.inside), o.n);
	ck_assert_int_eq(marcel_rwlock_destroy(&o.l), 0);
	marcel_end();
}
END_TEST

struct rwmix {
	marcel_rwlock_t l;
	long value;
	atomic_int readers_in, writers_in, bad;
	int iters;
};

static any_t rwmix_writer(any_t p)
{
	struct rwmix *x = p;
	for (int i = 0; i < x->iters; i++) {
		if (i % 2) {
			struct timespec d = deadline(LONG_MS);
			quiet_eq(marcel_rwlock_timedwrlock(&x->l, &d), 0);
		} else {
			quiet_eq(marcel_rwlock_wrlock(&x->l), 0);
		}
		if (atomic_fetch_add(&x->writers_in, 1) != 0 || atomic_load(&x->readers_in) != 0)
			atomic_fetch_add(&x->bad, 1);
		long v = x->value;
		if (i % 4 == 0)
			marcel_yield();
		x->value = v + 1;
		atomic_fetch_sub(&x->writers_in, 1);
		quiet_eq(marcel_rwlock_unlock(&x->l), 0);
		marcel_yield();
	}
	return NULL;
}

static any_t rwmix_reader(any_t p)
{
	struct rwmix *x = p;
	for (int i = 0; i < x->iters; i++) {
		if (i % 2) {
			struct timespec d = deadline(LONG_MS);
			quiet_eq(marcel_rwlock_timedrdlock(&x->l, &d), 0);
		} else {
			quiet_eq(marcel_rwlock_rdlock(&x->l), 0);
		}
		atomic_fetch_add(&x->readers_in, 1);
		long v = x->value;
		if (atomic_load(&x->writers_in) != 0)
			atomic_fetch_add(&x->bad, 1);
		if (i % 4 == 0)
			marcel_yield();
		if (x->value != v)
			atomic_fetch_add(&x->bad, 1);
		atomic_fetch_sub(&x->readers_in, 1);
		quiet_eq(marcel_rwlock_unlock(&x->l), 0);
	}
	return NULL;
}

START_TEST(test_rwlock_writer_exclusion)
{
	ma_test_init();
	enum { W = 3, R = 5 };
	static struct rwmix x = { .l = MARCEL_RWLOCK_INITIALIZER };
	x.value = 0;
	x.iters = scaled(200);
	atomic_store(&x.bad, 0);
	marcel_t t[W + R];
	unsigned nvp = marcel_nbvps();
	for (int i = 0; i < W + R; i++)
		t[i] = spawn_on((unsigned)i % nvp, i < W ? rwmix_writer : rwmix_reader, &x);
	for (int i = 0; i < W + R; i++)
		join(t[i]);
	ck_assert_int_eq(atomic_load(&x.bad), 0);
	ck_assert_int_eq(x.value, (long)W * x.iters);
	ck_assert_int_eq(marcel_rwlock_destroy(&x.l), 0);
	marcel_end();
}
END_TEST

struct wpref {
	marcel_rwlock_t *l;
	atomic_int got;
	atomic_int release;
};

static any_t wpref_writer(any_t p)
{
	struct wpref *w = p;
	struct timespec d = deadline(LONG_MS);
	int r = marcel_rwlock_timedwrlock(w->l, &d);
	atomic_store(&w->got, 1);
	await_ge(&w->release, 1, "release");
	if (r == 0)
		ck_assert_int_eq(marcel_rwlock_unlock(w->l), 0);
	return I2P(r);
}

START_TEST(test_rwlock_writer_preference)
{
	ma_test_init();
	marcel_rwlock_t l = MARCEL_RWLOCK_INITIALIZER;
	struct holder reader;
	struct wpref w = { .l = &l };
	struct timespec t0, d;
	int r;

	hold_start(&reader, HOLD_RD, &l);
	ck_assert_int_eq(in_ult(OP_RW_TRYRD, &l, NULL), 0); /* no writer yet: readers share */
	marcel_t wt = spawn(wpref_writer, &w);
	/* Once the writer waits, new readers are refused. */
	t0 = now(CLOCK_MONOTONIC);
	while ((r = marcel_rwlock_tryrdlock(&l)) == 0) {
		quiet_eq(marcel_rwlock_unlock(&l), 0);
		quiet_assert(!expired(&t0), "a waiting writer never blocked readers");
		marcel_yield();
	}
	ck_assert_int_eq(r, EBUSY);
	ck_assert_int_eq(atomic_load(&w.got), 0);
	d = deadline(SHORT_MS);
	ck_assert_int_eq(marcel_rwlock_timedrdlock(&l, &d), ETIMEDOUT);
	ck_assert(reached(CLOCK_REALTIME, &d));
	ck_assert_int_eq(in_ult(OP_RW_TRYRD, &l, NULL), EBUSY);
	ck_assert_int_eq(in_ult(OP_RW_TIMEDRD_SHORT, &l, NULL), ETIMEDOUT);
	ck_assert_int_eq(marcel_rwlock_destroy(&l), EBUSY);
	ck_assert_int_eq(atomic_load(&w.got), 0);

	/* The reader leaves: the writer gets it. */
	hold_stop(&reader);
	await_ge(&w.got, 1, "the writer");
	ck_assert_int_eq(marcel_rwlock_tryrdlock(&l), EBUSY);
	ck_assert_int_eq(marcel_rwlock_trywrlock(&l), EBUSY);
	atomic_store(&w.release, 1);
	ck_assert_int_eq(P2I(join(wt)), 0);

	ck_assert_int_eq(marcel_rwlock_tryrdlock(&l), 0);
	ck_assert_int_eq(marcel_rwlock_unlock(&l), 0);
	ck_assert_int_eq(marcel_rwlock_destroy(&l), 0);
	marcel_end();
}
END_TEST

/* A thread that already reads may read again although a writer waits; others may not. */
START_TEST(test_rwlock_reader_reenters)
{
	ma_test_init();
	marcel_rwlock_t l = MARCEL_RWLOCK_INITIALIZER;
	struct wpref w = { .l = &l };
	struct timespec t0 = now(CLOCK_MONOTONIC), d;
	int r;

	ck_assert_int_eq(marcel_rwlock_rdlock(&l), 0);
	marcel_t wt = spawn(wpref_writer, &w);
	while ((r = in_ult(OP_RW_TRYRD, &l, NULL)) == 0) {
		quiet_assert(!expired(&t0), "a waiting writer never blocked readers");
		marcel_yield();
	}
	ck_assert_int_eq(r, EBUSY);
	ck_assert_int_eq(marcel_rwlock_tryrdlock(&l), 0);
	d = deadline(SHORT_MS);
	ck_assert_int_eq(marcel_rwlock_timedrdlock(&l, &d), 0);
	ck_assert_int_eq(marcel_rwlock_rdlock(&l), 0);
	ck_assert_int_eq(marcel_rwlock_wrlock(&l), EDEADLK);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(marcel_rwlock_unlock(&l), 0);
	/* One hold left: the writer still waits. */
	ck_assert_int_eq(in_ult(OP_RW_TRYRD, &l, NULL), EBUSY);
	ck_assert_int_eq(atomic_load(&w.got), 0);
	ck_assert_int_eq(marcel_rwlock_unlock(&l), 0);
	await_ge(&w.got, 1, "the writer");
	ck_assert_int_eq(marcel_rwlock_unlock(&l), EPERM);
	atomic_store(&w.release, 1);
	ck_assert_int_eq(P2I(join(wt)), 0);
	ck_assert_int_eq(marcel_rwlock_destroy(&l), 0);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ spin locks */

START_TEST(test_spin)
{
	ma_test_init();
	marcel_spinlock_t l;

	ck_assert_int_eq(marcel_spin_init(NULL, MARCEL_PROCESS_PRIVATE), EINVAL);
	ck_assert_int_eq(marcel_spin_init(&l, MARCEL_PROCESS_SHARED), ENOTSUP);
	ck_assert_int_eq(marcel_spin_init(&l, 7), EINVAL);
	ck_assert_int_eq(marcel_spin_init(&l, MARCEL_PROCESS_PRIVATE), 0);

	ck_assert_int_eq(marcel_spin_unlock(&l), EPERM);
	ck_assert_int_eq(marcel_spin_lock(&l), 0);
	ck_assert_int_eq(marcel_spin_lock(&l), EDEADLK);
	ck_assert_int_eq(marcel_spin_trylock(&l), EBUSY);
	ck_assert_int_eq(in_ult(OP_SPIN_TRYLOCK, &l, NULL), EBUSY);
	ck_assert_int_eq(in_ult(OP_SPIN_UNLOCK, &l, NULL), EPERM);
	ck_assert_int_eq(marcel_spin_destroy(&l), EBUSY);
	ck_assert_int_eq(marcel_spin_unlock(&l), 0);
	ck_assert_int_eq(marcel_spin_unlock(&l), EPERM);
	ck_assert_int_eq(in_ult(OP_SPIN_TRYLOCK, &l, NULL), 0);
	ck_assert_int_eq(marcel_spin_trylock(&l), 0);
	ck_assert_int_eq(marcel_spin_unlock(&l), 0);
	ck_assert_int_eq(marcel_spin_destroy(&l), 0);

	marcel_spinlock_t s = MARCEL_SPINLOCK_INITIALIZER;
	ck_assert_int_eq(marcel_spin_lock(&s), 0);
	ck_assert_int_eq(in_ult(OP_SPIN_TRYLOCK, &s, NULL), EBUSY);
	ck_assert_int_eq(marcel_spin_unlock(&s), 0);
	ck_assert_int_eq(marcel_spin_destroy(&s), 0);
	marcel_end();
}
END_TEST

struct spinx {
	marcel_spinlock_t l;
	long counter;
	atomic_int inside, bad;
	int iters;
};

static any_t spinx_body(any_t p)
{
	struct spinx *x = p;
	for (int i = 0; i < x->iters; i++) {
		if (i % 2) {
			struct timespec t0 = now(CLOCK_MONOTONIC);
			int r;
			while ((r = marcel_spin_trylock(&x->l)) == EBUSY) {
				quiet_assert(!expired(&t0), "trylock kept failing");
				marcel_yield();
			}
			quiet_eq(r, 0);
		} else {
			quiet_eq(marcel_spin_lock(&x->l), 0);
		}
		if (atomic_fetch_add(&x->inside, 1) != 0)
			atomic_fetch_add(&x->bad, 1);
		long c = x->counter;
		/* A holder that yields: waiters on its VP must yield too for it to come back. */
		if (i % 32 == 0)
			marcel_yield();
		x->counter = c + 1;
		atomic_fetch_sub(&x->inside, 1);
		quiet_eq(marcel_spin_unlock(&x->l), 0);
	}
	return NULL;
}

START_TEST(test_spin_exclusion)
{
	ma_test_init();
	static struct spinx x = { .l = MARCEL_SPINLOCK_INITIALIZER };
	x.counter = 0;
	x.iters = scaled(500);
	atomic_store(&x.bad, 0);
	unsigned nvp = marcel_nbvps();
	int n = (int)nvp * 3;
	marcel_t *t = calloc((size_t)n, sizeof(*t));
	ck_assert_ptr_nonnull(t);
	for (int i = 0; i < n; i++)
		t[i] = spawn_on((unsigned)i % nvp, spinx_body, &x);
	for (int i = 0; i < n; i++)
		join(t[i]);
	free(t);
	ck_assert_int_eq(atomic_load(&x.bad), 0);
	ck_assert_int_eq(x.counter, (long)n * x.iters);
	ck_assert_int_eq(marcel_spin_destroy(&x.l), 0);
	marcel_end();
}
END_TEST

struct spin_same {
	marcel_spinlock_t l;
	atomic_int trying;
};

static any_t spin_same_body(any_t p)
{
	struct spin_same *x = p;
	atomic_store(&x->trying, 1);
	int r = marcel_spin_lock(&x->l);
	if (r == 0)
		ck_assert_int_eq(marcel_spin_unlock(&x->l), 0);
	return I2P(r);
}

/* The holder and a waiter share one VP: the waiter must yield for the holder to run and
 * unlock (without that, this test hangs). */
START_TEST(test_spin_same_vp)
{
	ma_test_init();
	struct spin_same x = { .l = MARCEL_SPINLOCK_INITIALIZER };
	ck_assert_int_eq(marcel_spin_lock(&x.l), 0);
	marcel_t t = spawn_on(ma_test_here(), spin_same_body, &x);
	await_ge(&x.trying, 1, "the waiter to spin"); /* yields to it */
	for (int i = 0; i < 10; i++)
		marcel_yield();
	ck_assert_int_eq(marcel_spin_unlock(&x.l), 0);
	ck_assert_int_eq(P2I(join(t)), 0);
	ck_assert_int_eq(marcel_spin_destroy(&x.l), 0);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ once */

static marcel_once_t once_ctl;
static atomic_int once_runs, once_done, once_bad;

static void once_init(void)
{
	atomic_fetch_add(&once_runs, 1);
	/* Long enough for the other callers to arrive while it runs. */
	if (marcel_self())
		marcel_usleep(20000);
	else
		usleep(20000);
	atomic_store(&once_done, 1);
}

static void *once_caller(void *p)
{
	(void)p;
	if (marcel_once(&once_ctl, once_init) != 0)
		atomic_fetch_add(&once_bad, 1);
	/* Returned: the initialisation is complete. */
	if (atomic_load(&once_done) != 1)
		atomic_fetch_add(&once_bad, 1);
	return NULL;
}

static void once_never(void)
{
	atomic_fetch_add(&once_bad, 100);
}

START_TEST(test_once)
{
	ma_test_init();
	enum { N = 40 };
	once_ctl = (marcel_once_t)MARCEL_ONCE_INIT;
	atomic_store(&once_runs, 0);
	atomic_store(&once_done, 0);
	atomic_store(&once_bad, 0);
	marcel_t t[N];
	struct pt k;
	unsigned nvp = marcel_nbvps();
	for (int i = 0; i < N; i++)
		t[i] = spawn_on((unsigned)i % nvp, (marcel_func_t)once_caller, NULL);
	pt_start(&k, once_caller, NULL); /* a kernel thread among them */
	once_caller(NULL);
	for (int i = 0; i < N; i++)
		join(t[i]);
	pt_finish(&k);
	ck_assert_int_eq(atomic_load(&once_runs), 1);
	ck_assert_int_eq(atomic_load(&once_bad), 0);

	/* Done: later calls return at once without running anything. */
	ck_assert_int_eq(marcel_once(&once_ctl, once_never), 0);
	ck_assert_int_eq(atomic_load(&once_bad), 0);
	ck_assert_int_eq(marcel_once(NULL, once_init), EINVAL);
	marcel_once_t other = MARCEL_ONCE_INIT;
	ck_assert_int_eq(marcel_once(&other, NULL), EINVAL);
	ck_assert_int_eq(atomic_load(&once_runs), 1);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ keys */

static marcel_key_t dtor_key;
static atomic_int dtor_calls, dtor_bad;
static void *_Atomic dtor_last;

static void dtor_record(any_t v)
{
	/* The value is already NULL when the destructor runs. */
	if (marcel_getspecific(dtor_key) != NULL)
		atomic_fetch_add(&dtor_bad, 1);
	/* The value first: a waiter for the count (a detached thread's destructor, run on
	 * another VP) then reads it (CI saw the older value under TSan). */
	atomic_store(&dtor_last, v);
	atomic_fetch_add(&dtor_calls, 1);
}

static void dtor_reset(void)
{
	atomic_store(&dtor_calls, 0);
	atomic_store(&dtor_bad, 0);
	atomic_store(&dtor_last, NULL);
}

static int key_x, key_y, key_z;

static any_t key_set_y(any_t p)
{
	(void)p;
	ck_assert_ptr_null(marcel_getspecific(dtor_key)); /* not the creator's value */
	ck_assert_int_eq(marcel_setspecific(dtor_key, &key_y), 0);
	ck_assert_ptr_eq(marcel_getspecific(dtor_key), &key_y);
	return NULL;
}

static any_t key_set_nothing(any_t p)
{
	(void)p;
	ck_assert_ptr_null(marcel_getspecific(dtor_key));
	return NULL;
}

static any_t key_set_then_clear(any_t p)
{
	(void)p;
	ck_assert_int_eq(marcel_setspecific(dtor_key, &key_y), 0);
	ck_assert_int_eq(marcel_setspecific(dtor_key, NULL), 0);
	ck_assert_ptr_null(marcel_getspecific(dtor_key));
	return NULL;
}

static any_t key_set_z_exit(any_t p)
{
	(void)p;
	ck_assert_int_eq(marcel_setspecific(dtor_key, &key_z), 0);
	marcel_exit(NULL);
}

START_TEST(test_key_destructor)
{
	ma_test_init();
	dtor_reset();
	ck_assert_int_eq(marcel_key_create(NULL, dtor_record), EINVAL);
	ck_assert_int_eq(marcel_key_create(&dtor_key, dtor_record), 0);
	ck_assert_ptr_null(marcel_getspecific(dtor_key));
	ck_assert_int_eq(marcel_setspecific(dtor_key, &key_x), 0);
	ck_assert_ptr_eq(marcel_getspecific(dtor_key), &key_x);

	join(spawn(key_set_y, NULL));
	ck_assert_int_eq(atomic_load(&dtor_calls), 1);
	ck_assert_ptr_eq(atomic_load(&dtor_last), &key_y);
	ck_assert_ptr_eq(marcel_getspecific(dtor_key), &key_x); /* untouched */

	join(spawn(key_set_nothing, NULL));
	join(spawn(key_set_then_clear, NULL));
	ck_assert_int_eq(atomic_load(&dtor_calls), 1); /* NULL values: no call */

	join(spawn(key_set_z_exit, NULL));
	ck_assert_int_eq(atomic_load(&dtor_calls), 2);
	ck_assert_ptr_eq(atomic_load(&dtor_last), &key_z);

	/* Detached threads too. */
	ck_assert_int_eq(marcel_create(NULL, NULL, key_set_y, NULL), 0);
	await_ge(&dtor_calls, 3, "the detached thread's destructor");
	ck_assert_ptr_eq(atomic_load(&dtor_last), &key_y);
	ck_assert_int_eq(atomic_load(&dtor_bad), 0);

	ck_assert_int_eq(marcel_setspecific(dtor_key, NULL), 0);
	ck_assert_int_eq(marcel_key_delete(dtor_key), 0);
	marcel_end();
}
END_TEST

static marcel_key_t pt_key1, pt_key2;

static any_t key_per_thread(any_t p)
{
	int i = P2I(p);
	ck_assert_ptr_null(marcel_getspecific(pt_key1));
	quiet_eq(marcel_setspecific(pt_key1, I2P(i + 1)), 0);
	quiet_eq(marcel_setspecific(pt_key2, I2P(i + 1000)), 0);
	for (int k = 0; k < 20; k++) {
		marcel_yield();
		quiet_eq(P2I(marcel_getspecific(pt_key1)), i + 1);
		quiet_eq(P2I(marcel_getspecific(pt_key2)), i + 1000);
	}
	return NULL;
}

START_TEST(test_key_per_thread)
{
	ma_test_init();
	enum { N = 24 };
	marcel_t t[N];
	ck_assert_int_eq(marcel_key_create(&pt_key1, NULL), 0);
	ck_assert_int_eq(marcel_key_create(&pt_key2, NULL), 0);
	ck_assert_uint_ne(pt_key1, pt_key2);
	ck_assert_int_eq(marcel_setspecific(pt_key1, I2P(-1)), 0);
	for (int i = 0; i < N; i++)
		t[i] = spawn_on((unsigned)i % marcel_nbvps(), key_per_thread, I2P(i));
	for (int i = 0; i < N; i++)
		join(t[i]);
	ck_assert_int_eq(P2I(marcel_getspecific(pt_key1)), -1);
	ck_assert_ptr_null(marcel_getspecific(pt_key2));
	ck_assert_int_eq(marcel_key_delete(pt_key1), 0);
	ck_assert_int_eq(marcel_key_delete(pt_key2), 0);
	marcel_end();
}
END_TEST

struct keydel {
	marcel_key_t k, k2;
	atomic_int set, go;
};

static any_t keydel_body(any_t p)
{
	struct keydel *x = p;
	ck_assert_int_eq(marcel_setspecific(x->k, &key_y), 0);
	atomic_store(&x->set, 1);
	await_ge(&x->go, 1, "go");
	/* The key was deleted meanwhile and (maybe the same number) created again. */
	ck_assert_ptr_null(marcel_getspecific(x->k));
	ck_assert_ptr_null(marcel_getspecific(x->k2));
	return NULL;
}

START_TEST(test_key_delete)
{
	ma_test_init();
	struct keydel x;
	dtor_reset();
	atomic_store(&x.set, 0);
	atomic_store(&x.go, 0);
	ck_assert_int_eq(marcel_key_create(&x.k, dtor_record), 0);
	dtor_key = x.k;
	ck_assert_int_eq(marcel_setspecific(x.k, &key_x), 0);
	marcel_t t = spawn(keydel_body, &x);
	await_ge(&x.set, 1, "the thread's value");

	ck_assert_int_eq(marcel_key_delete(x.k), 0);
	ck_assert_ptr_null(marcel_getspecific(x.k));
	ck_assert_int_eq(marcel_setspecific(x.k, &key_x), EINVAL);
	ck_assert_int_eq(marcel_key_delete(x.k), EINVAL);
	ck_assert_int_eq(marcel_key_create(&x.k2, dtor_record), 0);
	dtor_key = x.k2;
	ck_assert_ptr_null(marcel_getspecific(x.k2));
	atomic_store(&x.go, 1);
	join(t);
	/* No destructor for the deleted key's value, and the new key had none. */
	ck_assert_int_eq(atomic_load(&dtor_calls), 0);
	ck_assert_int_eq(marcel_key_delete(x.k2), 0);
	marcel_end();
}
END_TEST

START_TEST(test_key_limits)
{
	ma_test_init();
	static marcel_key_t keys[MARCEL_KEYS_MAX + 1];
	marcel_key_t k;
	int n = 0, r = 0;
	while (n <= MARCEL_KEYS_MAX && (r = marcel_key_create(&keys[n], NULL)) == 0)
		n++;
	ck_assert_int_eq(r, EAGAIN);
	ck_assert_int_eq(n, MARCEL_KEYS_MAX);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			ck_assert_uint_ne(keys[i], keys[j]);
	ck_assert_int_eq(marcel_key_create(&k, NULL), EAGAIN);

	/* Free one: its number (the only one free) comes back without the old value. */
	ck_assert_int_eq(marcel_setspecific(keys[7], &key_x), 0);
	ck_assert_int_eq(marcel_key_delete(keys[7]), 0);
	ck_assert_int_eq(marcel_key_create(&k, NULL), 0);
	ck_assert_ptr_null(marcel_getspecific(k));
	ck_assert_int_eq(marcel_key_create(&keys[MARCEL_KEYS_MAX], NULL), EAGAIN);
	keys[7] = k;

	for (int i = 0; i < n; i++)
		ck_assert_int_eq(marcel_key_delete(keys[i]), 0);
	ck_assert_int_eq(marcel_key_create(&k, NULL), 0);
	ck_assert_int_eq(marcel_key_delete(k), 0);
	marcel_end();
}
END_TEST

static void *key_in_pthread(void *p)
{
	marcel_key_t k = *(marcel_key_t *)p;
	ck_assert_int_eq(marcel_setspecific(k, &key_x), EPERM);
	ck_assert_ptr_null(marcel_getspecific(k));
	return NULL;
}

START_TEST(test_key_errors)
{
	ma_test_init();
	marcel_key_t k;
	ck_assert_int_eq(marcel_setspecific(MARCEL_KEYS_MAX, &key_x), EINVAL);
	ck_assert_int_eq(marcel_setspecific(12345, &key_x), EINVAL);
	ck_assert_ptr_null(marcel_getspecific(MARCEL_KEYS_MAX));
	ck_assert_ptr_null(marcel_getspecific(12345));
	ck_assert_int_eq(marcel_key_delete(MARCEL_KEYS_MAX), EINVAL);
	ck_assert_int_eq(marcel_key_delete(12345), EINVAL);

	ck_assert_int_eq(marcel_key_create(&k, NULL), 0);
	struct pt x;
	pt_start(&x, key_in_pthread, &k);
	pt_finish(&x);
	ck_assert_int_eq(marcel_key_delete(k), 0);
	ck_assert_int_eq(marcel_setspecific(k, &key_x), EINVAL);
	ck_assert_ptr_null(marcel_getspecific(k));
	ck_assert_int_eq(marcel_key_delete(k), EINVAL);
	marcel_end();
}
END_TEST

/* Destructors that set values again get up to MARCEL_DESTRUCTOR_ITERATIONS rounds. */
static marcel_key_t iter_key, iter_key2;
static atomic_int iter_calls, iter_calls2, iter_limit;

static void iter_dtor(any_t v)
{
	int n = atomic_fetch_add(&iter_calls, 1) + 1;
	if (n < atomic_load(&iter_limit))
		ck_assert_int_eq(marcel_setspecific(iter_key, v), 0);
}

static void iter_dtor2(any_t v)
{
	ck_assert_ptr_eq(v, &key_z);
	atomic_fetch_add(&iter_calls2, 1);
}

/* key 1's destructor gives key 2 a value, whose destructor must run in a later round. */
static void iter_dtor_chain(any_t v)
{
	(void)v;
	atomic_fetch_add(&iter_calls, 1);
	ck_assert_int_eq(marcel_setspecific(iter_key2, &key_z), 0);
}

static any_t iter_body(any_t p)
{
	(void)p;
	ck_assert_int_eq(marcel_setspecific(iter_key, &key_x), 0);
	return NULL;
}

START_TEST(test_key_destructor_iterations)
{
	ma_test_init();
	ck_assert_int_eq(marcel_key_create(&iter_key, iter_dtor), 0);

	atomic_store(&iter_calls, 0);
	atomic_store(&iter_limit, 1000); /* always sets it again */
	join(spawn(iter_body, NULL));
	ck_assert_int_eq(atomic_load(&iter_calls), MARCEL_DESTRUCTOR_ITERATIONS);

	atomic_store(&iter_calls, 0);
	atomic_store(&iter_limit, 2); /* sets it again once */
	join(spawn(iter_body, NULL));
	ck_assert_int_eq(atomic_load(&iter_calls), 2);
	ck_assert_int_eq(marcel_key_delete(iter_key), 0);

	ck_assert_int_eq(marcel_key_create(&iter_key, iter_dtor_chain), 0);
	ck_assert_int_eq(marcel_key_create(&iter_key2, iter_dtor2), 0);
	atomic_store(&iter_calls, 0);
	atomic_store(&iter_calls2, 0);
	join(spawn(iter_body, NULL));
	ck_assert_int_eq(atomic_load(&iter_calls), 1);
	ck_assert_int_eq(atomic_load(&iter_calls2), 1);
	ck_assert_int_eq(marcel_key_delete(iter_key), 0);
	ck_assert_int_eq(marcel_key_delete(iter_key2), 0);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ sleeping */

static void *sleep_checks(void *p)
{
	(void)p;
	struct timespec t0, req, rem;

	t0 = now(CLOCK_MONOTONIC);
	ck_assert_int_eq(marcel_usleep(20000), 0);
	ck_assert_int_ge(us_since(&t0), 20000);
	ck_assert_int_eq(marcel_usleep(0), 0);

	t0 = now(CLOCK_MONOTONIC);
	marcel_delay(20);
	ck_assert_int_ge(us_since(&t0), 20000);

	ck_assert_uint_eq(marcel_sleep(0), 0);

	req.tv_sec = 0;
	req.tv_nsec = 20000000L;
	rem.tv_sec = 5;
	rem.tv_nsec = 5;
	t0 = now(CLOCK_MONOTONIC);
	ck_assert_int_eq(marcel_nanosleep(&req, &rem), 0);
	ck_assert_int_ge(us_since(&t0), 20000);
	ck_assert_int_eq(rem.tv_sec, 0);
	ck_assert_int_eq(rem.tv_nsec, 0);
	req.tv_nsec = 1000000L;
	ck_assert_int_eq(marcel_nanosleep(&req, NULL), 0);

	req.tv_nsec = 1000000000L;
	set_errno(0);
	ck_assert_int_eq(marcel_nanosleep(&req, &rem), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	req.tv_nsec = -1;
	set_errno(0);
	ck_assert_int_eq(marcel_nanosleep(&req, NULL), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	req.tv_sec = -1;
	req.tv_nsec = 0;
	set_errno(0);
	ck_assert_int_eq(marcel_nanosleep(&req, NULL), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	return NULL;
}

START_TEST(test_sleep)
{
	ma_test_init();
	sleep_checks(NULL);
	/* In another thread, on another VP. */
	join(spawn_on(marcel_nbvps() - 1, (marcel_func_t)sleep_checks, NULL));
	/* Outside marcel threads (sleeps in the kernel). */
	struct pt k;
	pt_start(&k, sleep_checks, NULL);
	pt_finish(&k);
	marcel_end();
}
END_TEST

struct sleeper {
	atomic_long counter;
	atomic_int stop;
	long before, after;
	long long slept_us;
};

static any_t counting_body(any_t p)
{
	struct sleeper *s = p;
	struct timespec t0 = now(CLOCK_MONOTONIC);
	while (!atomic_load(&s->stop)) {
		atomic_fetch_add(&s->counter, 1);
		marcel_yield();
		quiet_assert(!expired(&t0), "the sleeper never woke");
	}
	return NULL;
}

static any_t sleeping_body(any_t p)
{
	struct sleeper *s = p;
	struct timespec t0 = now(CLOCK_MONOTONIC);
	s->before = atomic_load(&s->counter);
	ck_assert_int_eq(marcel_usleep(50000), 0);
	s->after = atomic_load(&s->counter);
	s->slept_us = us_since(&t0);
	atomic_store(&s->stop, 1);
	return NULL;
}

/* One VP: while one thread sleeps, another thread of the same VP keeps running. */
START_TEST(test_sleep_frees_worker)
{
	const char *old = getenv("MARCEL_NVP");
	char *saved = old ? strdup(old) : NULL;
	setenv("MARCEL_NVP", "1", 1);
	ma_test_init();
	if (saved) {
		setenv("MARCEL_NVP", saved, 1);
		free(saved);
	} else {
		unsetenv("MARCEL_NVP");
	}
	ck_assert_uint_eq(marcel_nbvps(), 1);
	struct sleeper s = { 0 };
	marcel_t c = spawn(counting_body, &s);
	marcel_t z = spawn(sleeping_body, &s);
	join(z);
	join(c);
	ck_assert_int_ge(s.slept_us, 50000);
	/* Had the sleeper kept the only worker, the other thread could not have run. */
	ck_assert_msg(s.after - s.before >= 1, "the other thread did not run during the sleep");
	marcel_end();
}
END_TEST

static atomic_int many_woken, many_early;

static any_t many_sleeper(any_t p)
{
	unsigned long us = 30000 + (unsigned long)(P2I(p) % 10) * 1000;
	struct timespec t0 = now(CLOCK_MONOTONIC);
	quiet_eq(marcel_usleep(us), 0);
	if (us_since(&t0) < (long long)us)
		atomic_fetch_add(&many_early, 1);
	atomic_fetch_add(&many_woken, 1);
	return NULL;
}

START_TEST(test_sleep_many)
{
	ma_test_init();
	const int N = scaled(1000);
	marcel_t *t = calloc((size_t)N, sizeof(*t));
	ck_assert_ptr_nonnull(t);
	atomic_store(&many_woken, 0);
	atomic_store(&many_early, 0);
	for (int i = 0; i < N; i++)
		t[i] = spawn(many_sleeper, I2P(i));
	for (int i = 0; i < N; i++)
		join(t[i]);
	free(t);
	ck_assert_int_eq(atomic_load(&many_woken), N);
	ck_assert_int_eq(atomic_load(&many_early), 0);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ futexes */

struct fw {
	marcel_futex_t *f;
	unsigned long *word;
	unsigned long val;
	unsigned long timeout_us;
	atomic_int waiting;
};

static void *futex_waiter(void *p)
{
	struct fw *w = p;
	atomic_fetch_add(&w->waiting, 1);
	return I2P(marcel_futex_wait(w->f, w->word, ~0UL, w->val, w->timeout_us));
}

START_TEST(test_futex)
{
	ma_test_init();
	marcel_futex_t f = MARCEL_FUTEX_INITIALIZER;
	unsigned long word = 5;
	struct timespec t0;

	ck_assert_int_eq(marcel_futex_wait(&f, &word, ~0UL, 4, 1000000), EWOULDBLOCK);
	word = 0x15;
	ck_assert_int_eq(marcel_futex_wait(&f, &word, 0x0f, 0x06, 1000000), EWOULDBLOCK);
	ck_assert_int_eq(marcel_futex_wait(&f, &word, 0xf0, 0x00, 1000000), EWOULDBLOCK);
	t0 = now(CLOCK_MONOTONIC);
	ck_assert_int_eq(marcel_futex_wait(&f, &word, 0x0f, 0x05, SHORT_MS * 1000UL), ETIMEDOUT);
	ck_assert_int_ge(us_since(&t0), SHORT_MS * 1000LL);
	t0 = now(CLOCK_MONOTONIC);
	ck_assert_int_eq(marcel_futex_wait(&f, &word, 0xf0, 0x10, SHORT_MS * 1000UL), ETIMEDOUT);
	ck_assert_int_ge(us_since(&t0), SHORT_MS * 1000LL);
	ck_assert_int_eq(marcel_futex_wait(NULL, &word, ~0UL, 0x15, 1000), EINVAL);
	ck_assert_int_eq(marcel_futex_wait(&f, NULL, ~0UL, 0x15, 1000), EINVAL);

	ck_assert_int_eq(marcel_futex_wake(&f, 1), 0); /* nobody waits */

	/* Three waiters; wakes count them. */
	enum { N = 3 };
	struct fw w = { .f = &f, .word = &word, .val = 0x15, .timeout_us = LONG_MS * 1000UL };
	marcel_t t[N];
	for (int i = 0; i < N; i++)
		t[i] = spawn_on((unsigned)i % marcel_nbvps(), (marcel_func_t)futex_waiter, &w);
	await_ge(&w.waiting, N, "the futex waiters");
	settle();
	ck_assert_int_eq(marcel_futex_wake(&f, 2), 2);
	ck_assert_int_eq(marcel_futex_wake(&f, 5), 1);
	ck_assert_int_eq(marcel_futex_wake(&f, 5), 0);
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(P2I(join(t[i])), 0);

	/* Without a timeout. */
	struct fw w2 = { .f = &f, .word = &word, .val = 0x15 };
	w2.timeout_us = MARCEL_FUTEX_NO_TIMEOUT;
	t[0] = spawn((marcel_func_t)futex_waiter, &w2);
	await_ge(&w2.waiting, 1, "the futex waiter");
	settle();
	ck_assert_int_eq(marcel_futex_wake(&f, 1), 1);
	ck_assert_int_eq(P2I(join(t[0])), 0);

	/* A waiter on another futex is not woken. */
	marcel_futex_t g = MARCEL_FUTEX_INITIALIZER;
	struct fw w3 = { .f = &g, .word = &word, .val = 0x15, .timeout_us = LONG_MS * 1000UL };
	t[0] = spawn((marcel_func_t)futex_waiter, &w3);
	await_ge(&w3.waiting, 1, "the futex waiter");
	settle();
	ck_assert_int_eq(marcel_futex_wake(&f, 1), 0);
	ck_assert_int_eq(marcel_futex_wake(&g, 1), 1);
	ck_assert_int_eq(P2I(join(t[0])), 0);
	marcel_end();
}
END_TEST

/* Two threads hand a turn back and forth: a wake-up lost between the value check and
 * the sleep shows as a timeout. */
struct pingpong {
	marcel_futex_t f;
	unsigned long word;
	int rounds;
};

struct pp_arg {
	struct pingpong *x;
	unsigned long side;
};

static any_t pp_body(any_t p)
{
	struct pp_arg *a = p;
	struct pingpong *x = a->x;
	for (int r = 0; r < x->rounds; r++) {
		unsigned long v;
		while ((v = __atomic_load_n(&x->word, __ATOMIC_SEQ_CST)) % 2 != a->side) {
			int ret = marcel_futex_wait(&x->f, &x->word, ~0UL, v, LONG_MS * 1000UL);
			quiet_assert(ret == 0 || ret == EWOULDBLOCK, "round %d: %d", r, ret);
		}
		__atomic_fetch_add(&x->word, 1, __ATOMIC_SEQ_CST);
		marcel_futex_wake(&x->f, 1);
	}
	return NULL;
}

START_TEST(test_futex_pingpong)
{
	ma_test_init();
	struct pingpong x = { MARCEL_FUTEX_INITIALIZER, 0, scaled(1000) };
	struct pp_arg a0 = { &x, 0 }, a1 = { &x, 1 };
	marcel_t t0 = spawn_on(0, pp_body, &a0);
	marcel_t t1 = spawn_on(marcel_nbvps() - 1, pp_body, &a1);
	join(t0);
	join(t1);
	ck_assert_uint_eq(x.word, 2UL * x.rounds);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ kernel threads */

static struct excl *mixed_excl;

static void *mixed_excl_pthread(void *p)
{
	for (int i = 0; i < mixed_excl->iters; i++)
		excl_round(mixed_excl, P2I(p) % 3, i);
	return NULL;
}

struct ptlock {
	marcel_mutex_t *m;
	atomic_int trying, got, release;
};

/* A kernel thread that checks it cannot touch the mutex main holds, then blocks on it. */
static void *ptlock_waiter(void *p)
{
	struct ptlock *x = p;
	ck_assert_int_eq(marcel_mutex_trylock(x->m), EBUSY);
	ck_assert_int_eq(marcel_mutex_unlock(x->m), EPERM);
	struct timespec d = deadline(LONG_MS);
	atomic_store(&x->trying, 1);
	int r = marcel_mutex_timedlock(x->m, &d);
	atomic_store(&x->got, 1);
	if (r == 0)
		ck_assert_int_eq(marcel_mutex_unlock(x->m), 0);
	return I2P(r);
}

/* A kernel thread holding the mutex until told. */
static void *ptlock_holder(void *p)
{
	struct ptlock *x = p;
	ck_assert_int_eq(marcel_mutex_lock(x->m), 0);
	ck_assert_int_eq(marcel_mutex_lock(x->m), EDEADLK);
	atomic_store(&x->got, 1);
	await_ge(&x->release, 1, "release");
	ck_assert_int_eq(marcel_mutex_unlock(x->m), 0);
	return NULL;
}

START_TEST(test_mixed_mutex)
{
	ma_test_init();
	marcel_mutex_t m = MARCEL_MUTEX_INITIALIZER;
	struct pt k[2];

	/* A kernel thread blocks on a mutex a marcel thread holds. */
	struct ptlock x = { .m = &m };
	ck_assert_int_eq(marcel_mutex_lock(&m), 0);
	pt_start(&k[0], ptlock_waiter, &x);
	await_ge(&x.trying, 1, "the kernel thread");
	settle();
	ck_assert_int_eq(atomic_load(&x.got), 0);
	ck_assert_int_eq(marcel_mutex_unlock(&m), 0);
	ck_assert_int_eq(P2I(pt_finish(&k[0])), 0);

	/* A marcel thread blocks on a mutex a kernel thread holds. */
	struct ptlock y = { .m = &m };
	pt_start(&k[0], ptlock_holder, &y);
	await_ge(&y.got, 1, "the kernel thread");
	ck_assert_int_eq(marcel_mutex_trylock(&m), EBUSY);
	ck_assert_int_eq(marcel_mutex_unlock(&m), EPERM);
	ck_assert_int_eq(in_ult(OP_MUTEX_TIMEDLOCK_SHORT, &m, NULL), ETIMEDOUT);
	atomic_store(&y.release, 1);
	struct timespec d = deadline(LONG_MS);
	ck_assert_int_eq(marcel_mutex_timedlock(&m, &d), 0);
	ck_assert_int_eq(marcel_mutex_unlock(&m), 0);
	pt_finish(&k[0]);

	/* Mutual exclusion between both kinds of threads. */
	static struct excl e = { .m = MARCEL_MUTEX_INITIALIZER };
	e.counter = 0;
	e.iters = scaled(300);
	atomic_store(&e.violations, 0);
	excl_shared = mixed_excl = &e;
	unsigned nvp = marcel_nbvps();
	enum { NU = 6 };
	marcel_t t[NU];
	for (int i = 0; i < NU; i++)
		t[i] = spawn_on((unsigned)i % nvp, excl_body, I2P(i));
	for (int i = 0; i < 2; i++)
		pt_start(&k[i], mixed_excl_pthread, I2P(i));
	for (int i = 0; i < NU; i++)
		join(t[i]);
	for (int i = 0; i < 2; i++)
		pt_finish(&k[i]);
	ck_assert_int_eq(atomic_load(&e.violations), 0);
	ck_assert_int_eq(e.counter, (long)(NU + 2) * e.iters);
	marcel_end();
}
END_TEST

static void *pt_signal_go(void *p)
{
	struct cv *v = p;
	lock_when(&v->m, &v->waiting, 1);
	v->go = 1;
	ck_assert_int_eq(marcel_cond_signal(&v->c), 0);
	ck_assert_int_eq(marcel_mutex_unlock(&v->m), 0);
	return NULL;
}

START_TEST(test_mixed_cond)
{
	ma_test_init();
	struct cv v;
	struct pt k[2];
	enum { NU = 3 };
	marcel_t t[NU];

	/* Marcel threads and kernel threads wait together; one broadcast wakes all. */
	cv_init(&v);
	for (int i = 0; i < NU; i++)
		t[i] = spawn((marcel_func_t)cv_go_waiter, &v);
	for (int i = 0; i < 2; i++)
		pt_start(&k[i], cv_go_waiter, &v);
	lock_when(&v.m, &v.waiting, NU + 2);
	v.go = 1;
	ck_assert_int_eq(marcel_cond_broadcast(&v.c), 0);
	ck_assert_int_eq(marcel_mutex_unlock(&v.m), 0);
	for (int i = 0; i < NU; i++)
		join(t[i]);
	for (int i = 0; i < 2; i++)
		pt_finish(&k[i]);
	ck_assert_int_eq(atomic_load(&v.woken), NU + 2);
	ck_assert_int_eq(marcel_cond_destroy(&v.c), 0);

	/* Signals, one at a time, reach kernel and marcel waiters alike. */
	cv_init(&v);
	t[0] = spawn((marcel_func_t)cv_token_waiter, &v);
	pt_start(&k[0], cv_token_waiter, &v);
	for (int i = 0; i < 2; i++) {
		lock_when(&v.m, &v.waiting, 2);
		v.tokens++;
		ck_assert_int_eq(marcel_cond_signal(&v.c), 0);
		ck_assert_int_eq(marcel_mutex_unlock(&v.m), 0);
		await_ge(&v.woken, i + 1, "a signalled waiter");
	}
	join(t[0]);
	pt_finish(&k[0]);
	ck_assert_int_eq(marcel_cond_destroy(&v.c), 0);

	/* A marcel thread waits for a kernel thread's signal. */
	cv_init(&v);
	t[0] = spawn((marcel_func_t)cv_go_waiter, &v);
	pt_start(&k[0], pt_signal_go, &v);
	join(t[0]);
	pt_finish(&k[0]);
	ck_assert_int_eq(atomic_load(&v.woken), 1);
	ck_assert_int_eq(marcel_cond_destroy(&v.c), 0);
	marcel_end();
}
END_TEST

static void *pt_sem_V_twice(void *p)
{
	marcel_sem_t *s = p;
	usleep(20000);
	marcel_sem_V(s);
	ck_assert_int_eq(marcel_sem_post(s), 0);
	return NULL;
}

static void *pt_sem_timeouts(void *p)
{
	marcel_sem_t *s = p;
	set_errno(0);
	struct timespec t0 = now(CLOCK_MONOTONIC);
	ck_assert_int_eq(marcel_sem_timed_P(s, SHORT_MS), 0);
	ck_assert_int_eq(get_errno(), ETIMEDOUT);
	ck_assert_int_ge(us_since(&t0), SHORT_MS * 1000LL);
	struct timespec d = deadline(SHORT_MS);
	set_errno(0);
	ck_assert_int_eq(marcel_sem_timedwait(s, &d), -1);
	ck_assert_int_eq(get_errno(), ETIMEDOUT);
	ck_assert(reached(CLOCK_REALTIME, &d));
	return NULL;
}

START_TEST(test_mixed_sem)
{
	ma_test_init();
	marcel_sem_t s;
	struct pt k[2];
	ck_assert_int_eq(marcel_sem_init(&s, 0), 0);

	/* Kernel threads wait; a marcel thread posts. */
	struct semw w = { .s = &s };
	pt_start(&k[0], (void *(*)(void *))sem_timed_P_body, &w);
	pt_start(&k[1], (void *(*)(void *))sem_timedwait_body, &w);
	await_ge(&w.waiting, 2, "the kernel threads");
	settle();
	marcel_sem_V(&s);
	ck_assert_int_eq(marcel_sem_post(&s), 0);
	ck_assert_int_eq(P2I(pt_finish(&k[0])), 1);
	ck_assert_int_eq(P2I(pt_finish(&k[1])), 0);
	ck_assert_int_eq(marcel_sem_try_P(&s), 0);

	/* Marcel threads wait; a kernel thread posts. */
	struct semw w2 = { .s = &s };
	marcel_t a = spawn(sem_timed_P_body, &w2), b = spawn(sem_wait_body, &w2);
	pt_start(&k[0], pt_sem_V_twice, &s);
	ck_assert_int_eq(P2I(join(a)), 1);
	ck_assert_int_eq(P2I(join(b)), 0);
	pt_finish(&k[0]);
	ck_assert_int_eq(marcel_sem_try_P(&s), 0);

	/* A kernel thread times out like anybody. */
	pt_start(&k[0], pt_sem_timeouts, &s);
	pt_finish(&k[0]);
	ck_assert_int_eq(marcel_sem_destroy(&s), 0);
	marcel_end();
}
END_TEST

START_TEST(test_mixed_barrier)
{
	ma_test_init();
	enum { NU = 3, NK = 2 };
	struct bar *x = bar_new(MARCEL_BARRIER_SLEEP_MODE, NU + NK, scaled(200));
	marcel_t t[NU];
	struct pt k[NK];
	for (int i = 0; i < NU; i++)
		t[i] = spawn_on((unsigned)i % marcel_nbvps(), (marcel_func_t)bar_body, x);
	for (int i = 0; i < NK; i++)
		pt_start(&k[i], bar_body, x);
	await_ge(&x->finished, NU + NK, "all threads through all rounds");
	for (int i = 0; i < NU; i++)
		join(t[i]);
	for (int i = 0; i < NK; i++)
		pt_finish(&k[i]);
	bar_check(x);
	marcel_end();
}
END_TEST

static void *pt_futex_wake_later(void *p)
{
	struct fw *w = p;
	await_ge(&w->waiting, 1, "the marcel waiter");
	usleep(SETTLE_US);
	return I2P(marcel_futex_wake(w->f, 1));
}

START_TEST(test_mixed_futex)
{
	ma_test_init();
	marcel_futex_t f = MARCEL_FUTEX_INITIALIZER;
	unsigned long word = 7;
	struct pt k;

	/* A kernel thread sleeps on the futex; a marcel thread wakes it. */
	struct fw w = { .f = &f, .word = &word, .val = 7, .timeout_us = LONG_MS * 1000UL };
	pt_start(&k, futex_waiter, &w);
	await_ge(&w.waiting, 1, "the kernel thread");
	settle();
	ck_assert_int_eq(marcel_futex_wake(&f, 1), 1);
	ck_assert_int_eq(P2I(pt_finish(&k)), 0);

	/* The other way round. */
	struct fw w2 = { .f = &f, .word = &word, .val = 7, .timeout_us = LONG_MS * 1000UL };
	pt_start(&k, pt_futex_wake_later, &w2);
	ck_assert_int_eq(P2I(futex_waiter(&w2)), 0);
	ck_assert_int_eq(P2I(pt_finish(&k)), 1);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ wait queues */

/* A condition's and a semaphore's waiters queue in the object itself (marcel/ma_waitq.h):
 * a lone waiter in one word, more in a list. Signals and posts take the oldest waiter
 * (marcel's order; POSIX leaves it open), so the order in which waiters wake tells
 * whether the list is right; and a waiter that leaves on its own -- timed out, canceled,
 * a kernel thread timing out -- anywhere in the list must take out itself and nobody
 * else. */

enum { QW_N = 5 };
enum { QW_WAIT, QW_SHORT, QW_CANCEL, QW_KERNEL_SHORT };

struct qw {
	int use_sem;
	marcel_mutex_t m;
	marcel_cond_t c;
	marcel_sem_t s;
	int tokens;            /* under m */
	int arrived;           /* under m */
	atomic_int left;       /* timed out */
	atomic_int nwoke;
	int woke[QW_N + 1];    /* ids, in the order they woke */
	int kind[QW_N + 1];    /* the last one comes once the others that leave have left */
};

struct qw_arg {
	struct qw *q;
	int id;
};

static void qw_unlock(void *m)
{
	marcel_mutex_unlock(m);
}

/* Records that waiter id woke: one at a time (the test wakes the next one once it sees
 * this one), its id stored before the count that publishes it. */
static void qw_woke(struct qw *q, int id)
{
	int j = atomic_load(&q->nwoke);
	q->woke[j] = id;
	atomic_store(&q->nwoke, j + 1);
}

/* One waiter of the queue: returns 0 once woken, ETIMEDOUT if it left. */
static void *qw_waiter(void *p)
{
	struct qw_arg *a = p;
	struct qw *q = a->q;
	int kind = q->kind[a->id], r = 0;
	struct timespec d = deadline(kind == QW_SHORT || kind == QW_KERNEL_SHORT ? SHORT_MS : LONG_MS);
	if (q->use_sem) {
		/* Announced before it queues: the test waits until it is blocked. */
		ck_assert_int_eq(marcel_mutex_lock(&q->m), 0);
		q->arrived++;
		ck_assert_int_eq(marcel_mutex_unlock(&q->m), 0);
		if (kind == QW_WAIT || kind == QW_CANCEL)
			r = marcel_sem_wait(&q->s) ? errno : 0;
		else
			r = marcel_sem_timedwait(&q->s, &d) ? errno : 0;
		ck_assert_msg(r == 0 || (r == ETIMEDOUT && kind != QW_WAIT), "waiter %d: %d", a->id, r);
		ck_assert_msg(kind != QW_CANCEL, "waiter %d was not canceled", a->id);
		if (r == 0)
			qw_woke(q, a->id);
	} else {
		ck_assert_int_eq(marcel_mutex_lock(&q->m), 0);
		q->arrived++;
		marcel_cleanup_push(qw_unlock, &q->m);
		while (!q->tokens && !r)
			r = kind == QW_WAIT || kind == QW_CANCEL ? marcel_cond_wait(&q->c, &q->m)
								 : marcel_cond_timedwait(&q->c, &q->m, &d);
		marcel_cleanup_pop(0);
		ck_assert_msg(kind != QW_CANCEL, "waiter %d was not canceled", a->id);
		ck_assert_msg(r == 0 || (r == ETIMEDOUT && kind != QW_WAIT), "waiter %d: %d", a->id, r);
		if (r == 0) {
			q->tokens--;
			qw_woke(q, a->id);
		}
		ck_assert_int_eq(marcel_mutex_unlock(&q->m), 0);
	}
	if (r)
		atomic_fetch_add(&q->left, 1);
	return I2P(r);
}

/* Whether marcel thread t is blocked (neither running nor ready). */
static int qw_blocked(marcel_t t)
{
	long long running = -1, ready = -1;
	ck_assert_int_eq(marcel_task_stats_get(t, MARCEL_STATS_NB_RUNNING, &running), 0);
	ck_assert_int_eq(marcel_task_stats_get(t, MARCEL_STATS_NB_READY, &ready), 0);
	return running == 0 && ready == 0;
}

/* Starts waiter i and returns once it is queued: a condition's waiter queues before it
 * releases m; a semaphore's is seen blocked (a kernel thread is given time). */
static void qw_start(struct qw *q, struct qw_arg *args, marcel_t *t, struct pt *k, int i)
{
	args[i] = (struct qw_arg){ q, i };
	if (q->kind[i] == QW_KERNEL_SHORT)
		pt_start(&k[i], qw_waiter, &args[i]);
	else
		t[i] = spawn((marcel_func_t)qw_waiter, &args[i]);
	lock_when(&q->m, &q->arrived, i + 1);
	ck_assert_int_eq(marcel_mutex_unlock(&q->m), 0);
	if (!q->use_sem)
		return;
	if (q->kind[i] == QW_KERNEL_SHORT) {
		settle();
		return;
	}
	struct timespec t0 = now(CLOCK_MONOTONIC);
	while (!qw_blocked(t[i])) {
		ck_assert(!expired(&t0));
		pause_briefly();
	}
}

/* Queues QW_N waiters of the given kinds, oldest first, lets those that leave leave,
 * queues one more, then wakes those left one at a time and checks they wake oldest
 * first. */
static void qw_run(int use_sem, const int kind[QW_N])
{
	struct qw q;
	memset(&q, 0, sizeof(q));
	q.use_sem = use_sem;
	memcpy(q.kind, kind, QW_N * sizeof(*kind));
	q.kind[QW_N] = QW_WAIT;
	ck_assert_int_eq(marcel_mutex_init(&q.m, NULL), 0);
	ck_assert_int_eq(marcel_cond_init(&q.c, NULL), 0);
	ck_assert_int_eq(marcel_sem_init(&q.s, 0), 0);
	struct qw_arg args[QW_N + 1];
	marcel_t t[QW_N + 1];
	struct pt k[QW_N + 1];
	int leaving = 0, staying = 0;
	for (int i = 0; i < QW_N; i++) {
		qw_start(&q, args, t, k, i);
		leaving += kind[i] == QW_SHORT || kind[i] == QW_KERNEL_SHORT;
	}
	int v = -1;
	ck_assert_int_eq(marcel_sem_getvalue(&q.s, &v), 0);
	ck_assert_int_eq(v, 0);
	ck_assert_int_eq(marcel_sem_destroy(&q.s), use_sem ? EBUSY : 0);
	ck_assert_int_eq(marcel_cond_destroy(&q.c), use_sem ? 0 : EBUSY);
	await_ge(&q.left, leaving, "the waiters that time out");
	for (int i = 0; i < QW_N; i++) {
		if (kind[i] == QW_CANCEL) {
			ck_assert_int_eq(marcel_cancel(t[i]), 0);
			ck_assert_ptr_eq(join(t[i]), MARCEL_CANCELED);
		}
	}
	/* A late one queues behind what is left (the list's tail after the leaving). */
	qw_start(&q, args, t, k, QW_N);
	/* The others, oldest first. */
	int expect[QW_N + 1];
	for (int i = 0; i <= QW_N; i++)
		if (q.kind[i] == QW_WAIT)
			expect[staying++] = i;
	for (int j = 0; j < staying; j++) {
		if (use_sem) {
			ck_assert_int_eq(marcel_sem_post(&q.s), 0);
		} else {
			ck_assert_int_eq(marcel_mutex_lock(&q.m), 0);
			q.tokens++;
			ck_assert_int_eq(marcel_cond_signal(&q.c), 0);
			ck_assert_int_eq(marcel_mutex_unlock(&q.m), 0);
		}
		await_ge(&q.nwoke, j + 1, "the oldest waiter");
		ck_assert_int_eq(q.woke[j], expect[j]);
	}
	for (int i = 0; i <= QW_N; i++) {
		if (q.kind[i] == QW_WAIT || q.kind[i] == QW_SHORT)
			ck_assert_int_eq(P2I(join(t[i])), q.kind[i] == QW_WAIT ? 0 : ETIMEDOUT);
		else if (q.kind[i] == QW_KERNEL_SHORT)
			ck_assert_int_eq(P2I(pt_finish(&k[i])), ETIMEDOUT);
	}
	ck_assert_int_eq(atomic_load(&q.nwoke), staying);
	/* Empty again: one more waiter takes the lone-waiter path. */
	ck_assert_int_eq(marcel_sem_destroy(&q.s), 0);
	ck_assert_int_eq(marcel_cond_destroy(&q.c), 0);
	ck_assert_int_eq(marcel_mutex_destroy(&q.m), 0);
}

static const int qw_cases[][QW_N] = {
	{ QW_WAIT, QW_WAIT, QW_WAIT, QW_WAIT, QW_WAIT },
	{ QW_SHORT, QW_WAIT, QW_WAIT, QW_WAIT, QW_WAIT },   /* the first leaves */
	{ QW_WAIT, QW_WAIT, QW_SHORT, QW_WAIT, QW_WAIT },   /* one in the middle */
	{ QW_WAIT, QW_WAIT, QW_WAIT, QW_WAIT, QW_SHORT },   /* the last */
	{ QW_SHORT, QW_SHORT, QW_SHORT, QW_SHORT, QW_WAIT },
	{ QW_WAIT, QW_CANCEL, QW_WAIT, QW_CANCEL, QW_WAIT }, /* canceled inside the list */
	{ QW_CANCEL, QW_WAIT, QW_WAIT, QW_WAIT, QW_CANCEL },
	{ QW_WAIT, QW_KERNEL_SHORT, QW_WAIT, QW_SHORT, QW_WAIT }, /* a kernel thread leaves */
};

static void qw_run_cases(int use_sem)
{
	ma_test_init();
	for (unsigned i = 0; i < sizeof(qw_cases) / sizeof(qw_cases[0]); i++)
		qw_run(use_sem, qw_cases[i]);
	marcel_end();
}

START_TEST(test_waitq_cond_order)
{
	qw_run_cases(0);
}
END_TEST

START_TEST(test_waitq_sem_order)
{
	qw_run_cases(1);
}
END_TEST

/* A lone waiter, canceled or timed out: it takes itself out of the object's word, and
 * the next one queues as a lone waiter again. */
START_TEST(test_waitq_lone_leaves)
{
	ma_test_init();
	static const int kinds[] = { QW_CANCEL, QW_SHORT, QW_KERNEL_SHORT, QW_WAIT };
	for (int use_sem = 0; use_sem < 2; use_sem++) {
		for (unsigned i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
			int kind[QW_N] = { kinds[i], QW_WAIT, QW_WAIT, QW_WAIT, QW_WAIT };
			/* Only the first waiter matters here: the others come after it left. */
			qw_run(use_sem, kind);
		}
	}
	marcel_end();
}
END_TEST

/* A mutex's waiters queue in its word too: with the mutex held, waiters of every kind
 * pile up; those that time out leave from wherever they are; the unlock then hands the
 * mutex down the queue, oldest first (each one's unlock wakes the next, and nobody else
 * competes). */
struct qwm_arg {
	marcel_mutex_t *m;
	atomic_int *nwoke, *left;
	int *woke;
	int id, kind;
};

static void *qwm_waiter(void *p)
{
	struct qwm_arg *a = p;
	int r;
	if (a->kind == QW_WAIT) {
		r = marcel_mutex_lock(a->m);
	} else {
		struct timespec d = deadline(SHORT_MS);
		r = marcel_mutex_timedlock(a->m, &d);
	}
	if (r) {
		ck_assert_int_eq(r, ETIMEDOUT);
		atomic_fetch_add(a->left, 1);
		return I2P(r);
	}
	int j = atomic_load(a->nwoke);
	a->woke[j] = a->id;
	atomic_store(a->nwoke, j + 1);
	ck_assert_int_eq(marcel_mutex_unlock(a->m), 0);
	return NULL;
}

static void qwm_run(const int kind[QW_N])
{
	marcel_mutex_t m;
	ck_assert_int_eq(marcel_mutex_init(&m, NULL), 0);
	atomic_int nwoke = 0, left = 0;
	int woke[QW_N + 1], expect[QW_N + 1], n = 0, leaving = 0;
	struct qwm_arg args[QW_N + 1];
	marcel_t t[QW_N + 1];
	struct pt k[QW_N + 1];
	ck_assert_int_eq(marcel_mutex_lock(&m), 0);
	for (int i = 0; i <= QW_N; i++) {
		int kd = i < QW_N ? kind[i] : QW_WAIT;
		args[i] = (struct qwm_arg){ &m, &nwoke, &left, woke, i, kd };
		if (i == QW_N)
			/* The late one queues behind what is left after the leaving. */
			await_ge(&left, leaving, "the waiters that time out");
		if (kd == QW_KERNEL_SHORT) {
			pt_start(&k[i], qwm_waiter, &args[i]);
			settle();
		} else {
			t[i] = spawn((marcel_func_t)qwm_waiter, &args[i]);
			struct timespec t0 = now(CLOCK_MONOTONIC);
			while (!qw_blocked(t[i])) {
				ck_assert(!expired(&t0));
				pause_briefly();
			}
		}
		leaving += kd != QW_WAIT;
		if (kd == QW_WAIT)
			expect[n++] = i;
	}
	ck_assert_int_eq(marcel_mutex_destroy(&m), EBUSY);
	ck_assert_int_eq(marcel_mutex_unlock(&m), 0);
	await_ge(&nwoke, n, "the waiters, in turn");
	for (int j = 0; j < n; j++)
		ck_assert_int_eq(woke[j], expect[j]);
	for (int i = 0; i <= QW_N; i++) {
		if (i < QW_N && kind[i] == QW_KERNEL_SHORT)
			ck_assert_int_eq(P2I(pt_finish(&k[i])), ETIMEDOUT);
		else
			ck_assert_int_eq(P2I(join(t[i])), i < QW_N && kind[i] == QW_SHORT ? ETIMEDOUT : 0);
	}
	ck_assert_int_eq(marcel_mutex_destroy(&m), 0);
}

START_TEST(test_waitq_mutex_order)
{
	/* One VP: a waiter seen neither running nor ready is then queued on the mutex. On
	 * several, it may be seen between arming its wait and queuing (its state is
	 * BLOCKING there, which the statistics count as neither); main's unlock then lets it
	 * take the mutex ahead of the older waiters, as a mutex may. */
	setenv("MARCEL_NVP", "1", 1);
	ma_test_init();
	unsetenv("MARCEL_NVP");
	for (unsigned i = 0; i < sizeof(qw_cases) / sizeof(qw_cases[0]); i++) {
		int kind[QW_N];
		/* A mutex wait is not a cancellation point: those wait to the end. */
		for (int j = 0; j < QW_N; j++)
			kind[j] = qw_cases[i][j] == QW_CANCEL ? QW_WAIT : qw_cases[i][j];
		qwm_run(kind);
	}
	marcel_end();
}
END_TEST

struct qw_free {
	marcel_mutex_t m;
	marcel_cond_t *c;
	marcel_sem_t *s;
	int arrived; /* under m */
	int go;      /* under m */
	/* The semaphore's waiter is running its marcel_sem_wait: once it is also seen
	 * blocked, it is queued (seen blocked alone, it may not have started yet). */
	atomic_int sem_waiting;
};

static any_t qw_free_cond_waiter(any_t p)
{
	struct qw_free *f = p;
	ck_assert_int_eq(marcel_mutex_lock(&f->m), 0);
	f->arrived = 1;
	while (!f->go)
		ck_assert_int_eq(marcel_cond_wait(f->c, &f->m), 0);
	ck_assert_int_eq(marcel_mutex_unlock(&f->m), 0);
	return NULL;
}

static any_t qw_free_sem_waiter(any_t p)
{
	struct qw_free *f = p;
	atomic_store(&f->sem_waiting, 1);
	ck_assert_int_eq(marcel_sem_wait(f->s), 0);
	return NULL;
}

/* A woken waiter does not read its object again: signalled (posted), the object is
 * destroyed, scribbled over and freed before the waiter even runs (AddressSanitizer
 * builds see any late touch). */
START_TEST(test_waitq_free_after_wake)
{
	ma_test_init();
	for (unsigned vp = 0; vp < (marcel_nbvps() > 1 ? 2u : 1u); vp++) {
		struct qw_free f;
		memset(&f, 0, sizeof(f));
		ck_assert_int_eq(marcel_mutex_init(&f.m, NULL), 0);
		f.c = malloc(sizeof(*f.c));
		ck_assert_ptr_nonnull(f.c);
		ck_assert_int_eq(marcel_cond_init(f.c, NULL), 0);
		marcel_t t = spawn_on(vp, qw_free_cond_waiter, &f);
		lock_when(&f.m, &f.arrived, 1);
		f.go = 1;
		ck_assert_int_eq(marcel_cond_signal(f.c), 0);
		ck_assert_int_eq(marcel_cond_destroy(f.c), 0);
		memset(f.c, 0xa5, sizeof(*f.c));
		free(f.c);
		ck_assert_int_eq(marcel_mutex_unlock(&f.m), 0);
		join(t);

		f.s = malloc(sizeof(*f.s));
		ck_assert_ptr_nonnull(f.s);
		ck_assert_int_eq(marcel_sem_init(f.s, 0), 0);
		atomic_store(&f.sem_waiting, 0);
		t = spawn_on(vp, qw_free_sem_waiter, &f);
		struct timespec t0 = now(CLOCK_MONOTONIC);
		while (!atomic_load(&f.sem_waiting) || !qw_blocked(t)) {
			ck_assert(!expired(&t0));
			pause_briefly();
		}
		ck_assert_int_eq(marcel_sem_destroy(f.s), EBUSY);
		ck_assert_int_eq(marcel_sem_post(f.s), 0);
		ck_assert_int_eq(marcel_sem_destroy(f.s), 0);
		memset(f.s, 0xa5, sizeof(*f.s));
		free(f.s);
		join(t);
		ck_assert_int_eq(marcel_mutex_destroy(&f.m), 0);
	}
	marcel_end();
}
END_TEST

/* Hand-offs between two VPs, and between a marcel thread and a kernel thread: every
 * signal and post crosses to a waiter that runs elsewhere. */
struct qw_pp {
	marcel_sem_t s[2];
	marcel_mutex_t m;
	marcel_cond_t c[2];
	int turn; /* under m */
	int rounds;
};

static void *qw_pp_side(void *p, int me)
{
	struct qw_pp *x = p;
	for (int i = 0; i < x->rounds; i++) {
		if (me == 0)
			ck_assert_int_eq(marcel_sem_post(&x->s[1]), 0);
		ck_assert_int_eq(marcel_sem_wait(&x->s[me]), 0);
		if (me == 1)
			ck_assert_int_eq(marcel_sem_post(&x->s[0]), 0);
	}
	ck_assert_int_eq(marcel_mutex_lock(&x->m), 0);
	for (int i = 0; i < x->rounds; i++) {
		while (x->turn != me)
			ck_assert_int_eq(marcel_cond_wait(&x->c[me], &x->m), 0);
		x->turn = !me;
		ck_assert_int_eq(marcel_cond_signal(&x->c[!me]), 0);
	}
	ck_assert_int_eq(marcel_mutex_unlock(&x->m), 0);
	return NULL;
}

static void *qw_pp_0(void *p)
{
	return qw_pp_side(p, 0);
}

static void *qw_pp_1(void *p)
{
	return qw_pp_side(p, 1);
}

START_TEST(test_waitq_cross)
{
	ma_test_init();
	struct qw_pp x;
	memset(&x, 0, sizeof(x));
	x.rounds = scaled(500);
	for (int mode = 0; mode < 2; mode++) {
		for (int i = 0; i < 2; i++) {
			ck_assert_int_eq(marcel_sem_init(&x.s[i], 0), 0);
			ck_assert_int_eq(marcel_cond_init(&x.c[i], NULL), 0);
		}
		ck_assert_int_eq(marcel_mutex_init(&x.m, NULL), 0);
		x.turn = 0;
		marcel_t a = spawn_on(0, (marcel_func_t)qw_pp_0, &x);
		if (mode == 0) {
			/* VP 1 if there is one, else both on VP 0. */
			join(spawn_on(marcel_nbvps() > 1 ? 1 : 0, (marcel_func_t)qw_pp_1, &x));
		} else {
			struct pt k;
			pt_start(&k, qw_pp_1, &x);
			pt_finish(&k);
		}
		join(a);
		for (int i = 0; i < 2; i++) {
			ck_assert_int_eq(marcel_sem_destroy(&x.s[i]), 0);
			ck_assert_int_eq(marcel_cond_destroy(&x.c[i]), 0);
		}
		ck_assert_int_eq(marcel_mutex_destroy(&x.m), 0);
	}
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ registration */

static void tc_mutex(TCase *tc)
{
	tcase_add_test(tc, test_mutexattr);
	tcase_add_test(tc, test_mutex_kinds);
	tcase_add_test(tc, test_mutex_static);
	tcase_add_test(tc, test_mutex_timedlock);
	tcase_add_test(tc, test_mutex_exclusion);
	tcase_add_test(tc, test_recursivemutex);
}

static void tc_cond(TCase *tc)
{
	tcase_add_test(tc, test_condattr);
	tcase_add_test(tc, test_cond_signal_broadcast);
	tcase_add_test(tc, test_cond_timedwait_realtime);
	tcase_add_test(tc, test_cond_timedwait_monotonic);
	tcase_add_test(tc, test_cond_errors);
	tcase_add_test(tc, test_cond_destroy_busy);
	tcase_add_test(tc, test_cond_destroy_after_broadcast);
}

static void tc_sem(TCase *tc)
{
	tcase_add_test(tc, test_sem_PV);
	tcase_add_test(tc, test_sem_posix);
	tcase_add_test(tc, test_sem_destroy_busy);
}

static void tc_barrier(TCase *tc)
{
	tcase_add_test(tc, test_barrierattr);
	tcase_add_test(tc, test_barrier_rounds);
	tcase_add_test(tc, test_barrier_yield_mode);
	tcase_add_test(tc, test_barrier_count);
}

static void tc_rwlock(TCase *tc)
{
	tcase_add_test(tc, test_rwlockattr);
	tcase_add_test(tc, test_rwlock_errors);
	tcase_add_test(tc, test_rwlock_timed);
	tcase_add_test(tc, test_rwlock_readers_overlap);
	tcase_add_test(tc, test_rwlock_writer_exclusion);
	tcase_add_test(tc, test_rwlock_writer_preference);
	tcase_add_test(tc, test_rwlock_reader_reenters);
	tcase_add_test(tc, test_rwlock_try_by_writer);
	tcase_add_test(tc, test_rwlock_unlock_not_reader);
}

static void tc_spin_once(TCase *tc)
{
	tcase_add_test(tc, test_spin);
	tcase_add_test(tc, test_spin_exclusion);
	tcase_add_test(tc, test_spin_same_vp);
	tcase_add_test(tc, test_once);
}

static void tc_keys(TCase *tc)
{
	tcase_add_test(tc, test_key_destructor);
	tcase_add_test(tc, test_key_per_thread);
	tcase_add_test(tc, test_key_delete);
	tcase_add_test(tc, test_key_limits);
	tcase_add_test(tc, test_key_errors);
	tcase_add_test(tc, test_key_destructor_iterations);
}

static void tc_sleep(TCase *tc)
{
	tcase_add_test(tc, test_sleep);
	tcase_add_test(tc, test_sleep_frees_worker);
	tcase_add_test(tc, test_sleep_many);
}

static void tc_futex(TCase *tc)
{
	tcase_add_test(tc, test_futex);
	tcase_add_test(tc, test_futex_pingpong);
}

static void tc_waitq(TCase *tc)
{
	tcase_add_test(tc, test_waitq_cond_order);
	tcase_add_test(tc, test_waitq_sem_order);
	tcase_add_test(tc, test_waitq_lone_leaves);
	tcase_add_test(tc, test_waitq_mutex_order);
	tcase_add_test(tc, test_waitq_free_after_wake);
	tcase_add_test(tc, test_waitq_cross);
}

static void tc_mixed(TCase *tc)
{
	tcase_add_test(tc, test_mixed_mutex);
	tcase_add_test(tc, test_mixed_cond);
	tcase_add_test(tc, test_mixed_sem);
	tcase_add_test(tc, test_mixed_barrier);
	tcase_add_test(tc, test_mixed_futex);
}

int main(void)
{
	Suite *s = suite_create("sync");
	ma_test_add_both(s, "mutex", tc_mutex, 30);
	ma_test_add_both(s, "cond", tc_cond, 30);
	ma_test_add_both(s, "sem", tc_sem, 30);
	ma_test_add_both(s, "barrier", tc_barrier, 30);
	ma_test_add_both(s, "rwlock", tc_rwlock, 30);
	ma_test_add_both(s, "spin_once", tc_spin_once, 30);
	ma_test_add_both(s, "keys", tc_keys, 30);
	ma_test_add_both(s, "sleep", tc_sleep, 30);
	ma_test_add_both(s, "futex", tc_futex, 30);
	ma_test_add_both(s, "mixed", tc_mixed, 30);
	ma_test_add_both(s, "waitq", tc_waitq, 60);
	return ma_test_run(s);
}
