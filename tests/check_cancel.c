/*
 * Cancellation (marcel/cancel.h): a thread canceled while blocked at each cancellation
 * point ends there with MARCEL_CANCELED after its cleanup handlers (innermost first) and
 * key destructors; what stays pending while cancellation is disabled; a thread canceled
 * before it starts; threads that ended; condition waits that take the mutex back before
 * the handlers; many waiters canceled at once; a cancel racing with a wake-up (the wake-up
 * is never lost); a cancel that reaches a thread blocked where it is not a point; every
 * documented error code; a request already pending when a condition wait starts; seeds
 * canceled while they run on their joiner's stack or before it runs them. Every tcase
 * runs on this machine and on the synthetic 32-PU topology (ma_test.h), and ends with
 * marcel_end(): the runtime is left usable.
 *
 * A thread is "blocked" in a call once it raised a flag just before it and SETTLE_US
 * passed. If it was not blocked yet, the request acts at the call's entry instead: the
 * outcome the tests check is the same, so they do not depend on timing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "ma_test.h"

#define I2P(i) ((any_t)(intptr_t)(i))
#define P2I(p) ((int)(intptr_t)(p))
#define SETTLE_US 50000
/* Waits that must not end by themselves during a test. */
#define LONG_S 20

/* Records of what handlers and threads did, in order. */
static atomic_int log_len;
static int log_buf[64];
static atomic_int ready, after_point, func_ran;

static void log_add(int v)
{
	int i = atomic_fetch_add(&log_len, 1);
	if (i < 64)
		log_buf[i] = v;
}

static void log_reset(void)
{
	atomic_store(&log_len, 0);
	atomic_store(&ready, 0);
	atomic_store(&after_point, 0);
	atomic_store(&func_ran, 0);
}

static void handler(void *arg)
{
	log_add(P2I(arg));
}

/* Waits until *p >= v (a marcel thread: yields meanwhile). */
static void await_ge(atomic_int *p, int v)
{
	for (int i = 0; atomic_load(p) < v; i++) {
		ck_assert_msg(i < 20000, "timed out waiting (%d < %d)", atomic_load(p), v);
		marcel_usleep(500);
	}
}

/* Lets a thread that raised `ready` get blocked in its next call. */
static void settle(int n)
{
	await_ge(&ready, n);
	marcel_usleep(SETTLE_US);
}

static any_t join_and_check(marcel_t t)
{
	any_t r = I2P(12345);
	ck_assert_int_eq(marcel_join(t, &r), 0);
	return r;
}

static struct timespec abs_in(long s)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += s;
	return ts;
}

/* ------------------------------------------------------------ each point */

static marcel_sem_t gate;   /* Marcel's P: not a point */
static marcel_sem_t psem;   /* sem_wait: a point */
static marcel_mutex_t mtx;
static marcel_cond_t cnd;
static atomic_int unlock_rc;

static any_t waits_gate(any_t arg)
{
	marcel_sem_P(&gate);
	return arg;
}

enum point { P_JOIN, P_COND, P_CONDT, P_SEM, P_SEMT, P_USLEEP, P_NANOSLEEP, P_SLEEP, P_DELAY,
	     P_CLOCKNS_REL, P_CLOCKNS_ABS, P_NPOINTS };

/* The handler of a condition waiter: the mutex must be held by the thread (unlock 0). */
static void cond_handler(void *arg)
{
	atomic_store(&unlock_rc, marcel_mutex_unlock(&mtx));
	log_add(P2I(arg));
}

static any_t blocked_at(any_t arg)
{
	enum point p = (enum point)P2I(arg);
	marcel_t other = NULL;
	if (p == P_JOIN)
		ck_assert_int_eq(marcel_create(&other, NULL, waits_gate, I2P(77)), 0);
	if (p == P_COND || p == P_CONDT) {
		marcel_mutex_lock(&mtx);
		marcel_cleanup_push(cond_handler, I2P(100 + p));
		atomic_fetch_add(&ready, 1);
		if (p == P_COND)
			marcel_cond_wait(&cnd, &mtx);
		else {
			struct timespec d = abs_in(LONG_S);
			marcel_cond_timedwait(&cnd, &mtx, &d);
		}
		atomic_store(&after_point, 1);
		marcel_cleanup_pop(1);
		return NULL;
	}
	marcel_cleanup_push(handler, I2P(100 + p));
	atomic_fetch_add(&ready, 1);
	struct timespec rel = { LONG_S, 0 }, abs = abs_in(LONG_S);
	switch (p) {
	case P_JOIN:
		/* other waits for the gate: this join blocks until canceled. */
		marcel_join(other, NULL);
		break;
	case P_SEM:
		marcel_sem_wait(&psem);
		break;
	case P_SEMT:
		marcel_sem_timedwait(&psem, &abs);
		break;
	case P_USLEEP:
		marcel_usleep(LONG_S * 1000000UL);
		break;
	case P_NANOSLEEP:
		marcel_nanosleep(&rel, NULL);
		break;
	case P_SLEEP:
		marcel_sleep(LONG_S);
		break;
	case P_DELAY:
		marcel_delay(LONG_S * 1000UL);
		break;
	case P_CLOCKNS_REL:
		marcel_clock_nanosleep(CLOCK_MONOTONIC, 0, &rel, NULL);
		break;
	case P_CLOCKNS_ABS:
		marcel_clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &abs, NULL);
		break;
	default:
		break;
	}
	atomic_store(&after_point, 1);
	marcel_cleanup_pop(0);
	return NULL;
}

/* The thread blocked in point p: canceled, it ends with MARCEL_CANCELED after its
 * handler, nothing after the point runs, and what it waited on is left as it was. */
static void cancel_blocked_at(enum point p)
{
	log_reset();
	atomic_store(&unlock_rc, -1);
	marcel_sem_init(&gate, 0);
	marcel_sem_init(&psem, 0);
	marcel_mutex_init(&mtx, NULL);
	marcel_cond_init(&cnd, NULL);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, NULL, blocked_at, I2P(p)), 0);
	settle(1);
	ck_assert_int_eq(marcel_cancel(t), 0);
	ck_assert_ptr_eq(join_and_check(t), MARCEL_CANCELED);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_msg(t1.tv_sec - t0.tv_sec < LONG_S / 2, "point %d: the wait was not cut short", p);
	ck_assert_int_eq(atomic_load(&after_point), 0);
	ck_assert_int_eq(atomic_load(&log_len), 1);
	ck_assert_int_eq(log_buf[0], 100 + p);
	if (p == P_COND || p == P_CONDT) {
		/* The handler found the mutex held by the canceled thread. */
		ck_assert_int_eq(atomic_load(&unlock_rc), 0);
		ck_assert_int_eq(marcel_mutex_trylock(&mtx), 0);
		ck_assert_int_eq(marcel_mutex_unlock(&mtx), 0);
		/* Off the condition's queue: destroy does not see a waiter. */
		ck_assert_int_eq(marcel_cond_destroy(&cnd), 0);
	}
	if (p == P_SEM || p == P_SEMT) {
		/* Off the queue, no unit taken: a post is there for the next taker. */
		ck_assert_int_eq(marcel_sem_destroy(&psem), 0);
		ck_assert_int_eq(marcel_sem_post(&psem), 0);
		ck_assert_int_eq(marcel_sem_trywait(&psem), 0);
	}
	/* P_JOIN: the thread it joined goes (marcel_end reclaims it, never joined). */
	marcel_sem_V(&gate);
}

static marcel_t join_target;

static any_t joiner_of_target(any_t arg)
{
	(void)arg;
	marcel_cleanup_push(handler, I2P(1));
	atomic_store(&ready, 1);
	marcel_join(join_target, NULL);
	atomic_store(&after_point, 1);
	marcel_cleanup_pop(0);
	return NULL;
}

START_TEST(test_each_point)
{
	ma_test_init();
	for (int p = 0; p < P_NPOINTS; p++)
		if (p != P_JOIN)
			cancel_blocked_at((enum point)p);
	marcel_end();
}
END_TEST

/* A joiner canceled while it waits: the thread it joined stays joinable, by another. */
START_TEST(test_join_point)
{
	ma_test_init();
	log_reset();
	marcel_sem_init(&gate, 0);
	ck_assert_int_eq(marcel_create(&join_target, NULL, waits_gate, I2P(77)), 0);
	marcel_t j;
	ck_assert_int_eq(marcel_create(&j, NULL, joiner_of_target, NULL), 0);
	settle(1);
	ck_assert_int_eq(marcel_cancel(j), 0);
	ck_assert_ptr_eq(join_and_check(j), MARCEL_CANCELED);
	ck_assert_int_eq(atomic_load(&after_point), 0);
	ck_assert_int_eq(atomic_load(&log_len), 1);
	marcel_sem_V(&gate);
	ck_assert_ptr_eq(join_and_check(join_target), I2P(77));
	/* And the general version (a join of a thread it made itself). */
	cancel_blocked_at(P_JOIN);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------ handlers */

static any_t nested_then_testcancel(any_t arg)
{
	(void)arg;
	marcel_cleanup_push(handler, I2P(1));
	marcel_cleanup_push(handler, I2P(2));
	/* pop(0) does not run, pop(1) does. */
	marcel_cleanup_push(handler, I2P(90));
	marcel_cleanup_pop(0);
	marcel_cleanup_push(handler, I2P(91));
	marcel_cleanup_pop(1);
	marcel_cleanup_push(handler, I2P(3));
	ck_assert_int_eq(marcel_cancel(marcel_self()), 0);
	log_add(50); /* a request is not acted on until a point */
	marcel_testcancel();
	atomic_store(&after_point, 1);
	marcel_cleanup_pop(0);
	marcel_cleanup_pop(0);
	marcel_cleanup_pop(0);
	return NULL;
}

static any_t exits_with_handlers(any_t arg)
{
	marcel_cleanup_push(handler, I2P(1));
	marcel_cleanup_push(handler, I2P(2));
	marcel_exit(arg);
	marcel_cleanup_pop(0);
	marcel_cleanup_pop(0);
	return NULL;
}

static any_t returns_normally(any_t arg)
{
	marcel_cleanup_push(handler, I2P(1));
	marcel_cleanup_pop(0);
	return arg;
}

static marcel_key_t key;

static void key_destructor(any_t v)
{
	log_add(P2I(v));
}

/* A handler may block at a point: the request does not act again in it. */
static void sleeping_handler(void *arg)
{
	marcel_usleep(1000);
	marcel_testcancel();
	log_add(P2I(arg));
}

static any_t with_key_and_sleeping_handler(any_t arg)
{
	(void)arg;
	ck_assert_int_eq(marcel_setspecific(key, I2P(7)), 0);
	marcel_cleanup_push(handler, I2P(1));
	marcel_cleanup_push(sleeping_handler, I2P(2));
	atomic_store(&ready, 1);
	marcel_usleep(LONG_S * 1000000UL);
	marcel_cleanup_pop(0);
	marcel_cleanup_pop(0);
	return NULL;
}

START_TEST(test_handlers)
{
	ma_test_init();
	marcel_t t;
	/* Innermost first, each with its argument; the ones popped are gone. */
	log_reset();
	ck_assert_int_eq(marcel_create(&t, NULL, nested_then_testcancel, NULL), 0);
	ck_assert_ptr_eq(join_and_check(t), MARCEL_CANCELED);
	ck_assert_int_eq(atomic_load(&after_point), 0);
	ck_assert_int_eq(atomic_load(&log_len), 5);
	int want[] = { 91, 50, 3, 2, 1 };
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(log_buf[i], want[i]);
	/* At marcel_exit, with its result. */
	log_reset();
	ck_assert_int_eq(marcel_create(&t, NULL, exits_with_handlers, I2P(42)), 0);
	ck_assert_ptr_eq(join_and_check(t), I2P(42));
	ck_assert_int_eq(atomic_load(&log_len), 2);
	ck_assert_int_eq(log_buf[0], 2);
	ck_assert_int_eq(log_buf[1], 1);
	/* Not at a normal return. */
	log_reset();
	ck_assert_int_eq(marcel_create(&t, NULL, returns_normally, I2P(5)), 0);
	ck_assert_ptr_eq(join_and_check(t), I2P(5));
	ck_assert_int_eq(atomic_load(&log_len), 0);
	/* Handlers before key destructors; a point inside a handler does not act again. */
	log_reset();
	ck_assert_int_eq(marcel_key_create(&key, key_destructor), 0);
	ck_assert_int_eq(marcel_create(&t, NULL, with_key_and_sleeping_handler, NULL), 0);
	settle(1);
	ck_assert_int_eq(marcel_cancel(t), 0);
	ck_assert_ptr_eq(join_and_check(t), MARCEL_CANCELED);
	ck_assert_int_eq(atomic_load(&log_len), 3);
	ck_assert_int_eq(log_buf[0], 2);
	ck_assert_int_eq(log_buf[1], 1);
	ck_assert_int_eq(log_buf[2], 7);
	ck_assert_int_eq(marcel_key_delete(key), 0);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------ state and type */

static any_t disabled_then_enabled(any_t arg)
{
	(void)arg;
	int old = -1;
	ck_assert_int_eq(marcel_setcancelstate(MARCEL_CANCEL_DISABLE, &old), 0);
	ck_assert_int_eq(old, MARCEL_CANCEL_ENABLE);
	atomic_store(&ready, 1);
	/* Canceled meanwhile: points do not act, sleeps run their full length. */
	while (!atomic_load(&func_ran))
		marcel_usleep(1000);
	marcel_testcancel();
	struct timespec d = abs_in(0);
	ck_assert_int_eq(marcel_sem_timedwait(&psem, &d), -1);
	log_add(1);
	ck_assert_int_eq(marcel_setcancelstate(MARCEL_CANCEL_ENABLE, &old), 0);
	ck_assert_int_eq(old, MARCEL_CANCEL_DISABLE);
	/* Enabled, deferred: still nothing until a point. */
	log_add(2);
	marcel_testcancel();
	atomic_store(&after_point, 1);
	return NULL;
}

static any_t async_type(any_t arg)
{
	(void)arg;
	int old = -1;
	ck_assert_int_eq(marcel_setcancelstate(MARCEL_CANCEL_DISABLE, NULL), 0);
	ck_assert_int_eq(marcel_cancel(marcel_self()), 0);
	ck_assert_int_eq(marcel_setcanceltype(MARCEL_CANCEL_ASYNCHRONOUS, &old), 0);
	ck_assert_int_eq(old, MARCEL_CANCEL_DEFERRED);
	log_add(1);
	/* Asynchronous and enabled with a request pending: acts right here. */
	marcel_setcancelstate(MARCEL_CANCEL_ENABLE, NULL);
	atomic_store(&after_point, 1);
	return NULL;
}

START_TEST(test_state_type)
{
	ma_test_init();
	marcel_t t;
	log_reset();
	marcel_sem_init(&psem, 0);
	ck_assert_int_eq(marcel_create(&t, NULL, disabled_then_enabled, NULL), 0);
	await_ge(&ready, 1);
	ck_assert_int_eq(marcel_cancel(t), 0);
	ck_assert_int_eq(marcel_cancel(t), 0); /* twice is once */
	marcel_usleep(SETTLE_US);
	atomic_store(&func_ran, 1);
	ck_assert_ptr_eq(join_and_check(t), MARCEL_CANCELED);
	ck_assert_int_eq(atomic_load(&log_len), 2);
	ck_assert_int_eq(atomic_load(&after_point), 0);

	log_reset();
	ck_assert_int_eq(marcel_create(&t, NULL, async_type, NULL), 0);
	ck_assert_ptr_eq(join_and_check(t), MARCEL_CANCELED);
	ck_assert_int_eq(atomic_load(&log_len), 1);
	ck_assert_int_eq(atomic_load(&after_point), 0);

	/* Bad values. */
	int old;
	ck_assert_int_eq(marcel_setcancelstate(2, &old), EINVAL);
	ck_assert_int_eq(marcel_setcancelstate(-1, NULL), EINVAL);
	ck_assert_int_eq(marcel_setcanceltype(2, &old), EINVAL);
	ck_assert_int_eq(marcel_setcanceltype(MARCEL_CANCEL_DEFERRED, &old), 0);
	ck_assert_int_eq(old, MARCEL_CANCEL_DEFERRED);
	ck_assert_int_eq(marcel_setcancelstate(MARCEL_CANCEL_ENABLE, &old), 0);
	ck_assert_int_eq(old, MARCEL_CANCEL_ENABLE);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------ lifetimes */

static any_t sets_func_ran(any_t arg)
{
	atomic_store(&func_ran, 1);
	return arg;
}

START_TEST(test_lifetimes)
{
	ma_test_init();
	marcel_t t;
	/* Canceled before it started: ends at its start, function never called. */
	log_reset();
	ck_assert_int_eq(marcel_create_dontsched(&t, NULL, sets_func_ran, I2P(3)), 0);
	ck_assert_int_eq(marcel_cancel(t), 0);
	ck_assert_int_eq(marcel_wake_up_created_thread(t), 0);
	ck_assert_ptr_eq(join_and_check(t), MARCEL_CANCELED);
	ck_assert_int_eq(atomic_load(&func_ran), 0);
	/* A descriptor reused after a cancel starts clean. */
	ck_assert_int_eq(marcel_create(&t, NULL, sets_func_ran, I2P(4)), 0);
	ck_assert_ptr_eq(join_and_check(t), I2P(4));
	ck_assert_int_eq(atomic_load(&func_ran), 1);
	/* Ended, not joined: 0, and the joiner gets its own result. Joined: ESRCH. */
	atomic_store(&func_ran, 0);
	ck_assert_int_eq(marcel_create(&t, NULL, sets_func_ran, I2P(6)), 0);
	await_ge(&func_ran, 1);
	marcel_usleep(SETTLE_US);
	ck_assert_int_eq(marcel_cancel(t), 0);
	ck_assert_ptr_eq(join_and_check(t), I2P(6));
	ck_assert_int_eq(marcel_cancel(t), ESRCH);
	ck_assert_int_eq(marcel_cancel(NULL), ESRCH);
	/* A detached thread canceled while blocked is reclaimed (marcel_end returns). */
	log_reset();
	marcel_attr_t a;
	marcel_attr_init(&a);
	marcel_attr_setdetachstate(&a, MARCEL_CREATE_DETACHED);
	ck_assert_int_eq(marcel_create(&t, &a, blocked_at, I2P(P_USLEEP)), 0);
	settle(1);
	ck_assert_int_eq(marcel_cancel(t), 0);
	await_ge(&log_len, 1);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------ pending on entry */

/* A request pending when a condition wait starts acts there, mutex held. */
static any_t cond_wait_canceled_on_entry(any_t arg)
{
	(void)arg;
	marcel_mutex_lock(&mtx);
	marcel_cleanup_push(cond_handler, I2P(5));
	ck_assert_int_eq(marcel_cancel(marcel_self()), 0);
	marcel_cond_wait(&cnd, &mtx);
	atomic_store(&after_point, 1);
	marcel_cleanup_pop(1);
	return NULL;
}

START_TEST(test_entry)
{
	ma_test_init();
	log_reset();
	atomic_store(&unlock_rc, -1);
	marcel_mutex_init(&mtx, NULL);
	marcel_cond_init(&cnd, NULL);
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, NULL, cond_wait_canceled_on_entry, NULL), 0);
	ck_assert_ptr_eq(join_and_check(t), MARCEL_CANCELED);
	ck_assert_int_eq(atomic_load(&after_point), 0);
	ck_assert_int_eq(atomic_load(&unlock_rc), 0);
	ck_assert_int_eq(atomic_load(&log_len), 1);
	ck_assert_int_eq(marcel_mutex_trylock(&mtx), 0);
	ck_assert_int_eq(marcel_mutex_unlock(&mtx), 0);
	ck_assert_int_eq(marcel_cond_destroy(&cnd), 0);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------ blocking sections */

/* The calls marcel runs in blocking sections that POSIX makes cancellation points: a
 * request already due when the call starts ends the thread there. Each call below would
 * wait for ever (nothing ever arrives on the pipe or socket; no signal comes). */
enum section_call { SC_READ, SC_POLL, SC_SELECT, SC_RECV, SC_ACCEPT, SC_PAUSE, SC_NB };

static int section_fds[2];

static any_t section_call_canceled(any_t arg)
{
	ck_assert_int_eq(marcel_cancel(marcel_self()), 0);
	char c;
	struct pollfd p = { .fd = section_fds[0], .events = POLLIN };
	fd_set rd;
	FD_ZERO(&rd);
	FD_SET(section_fds[0], &rd);
	switch ((enum section_call)P2I(arg)) {
	case SC_READ: marcel_read(section_fds[0], &c, 1); break;
	case SC_POLL: marcel_poll(&p, 1, -1); break;
	case SC_SELECT: marcel_select(section_fds[0] + 1, &rd, NULL, NULL, NULL); break;
	case SC_RECV: marcel_recv(section_fds[0], &c, 1, 0); break;
	case SC_ACCEPT: marcel_accept(section_fds[0], NULL, NULL); break;
	case SC_PAUSE: marcel_pause(); break;
	case SC_NB: break;
	}
	atomic_store(&after_point, 1);
	return NULL;
}

START_TEST(test_section_entry)
{
	ma_test_init();
	atomic_store(&after_point, 0);
	if (_i == SC_RECV || _i == SC_ACCEPT) {
		ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, section_fds), 0);
		if (_i == SC_ACCEPT) {
			close(section_fds[0]);
			close(section_fds[1]);
			section_fds[0] = socket(AF_UNIX, SOCK_STREAM, 0);
			struct sockaddr_un sa = { .sun_family = AF_UNIX };
			ck_assert_int_ge(section_fds[0], 0);
			/* An abstract address: nothing to clean up on the file system. */
			snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "marcel-cancel-%d", (int)getpid());
			ck_assert_int_eq(bind(section_fds[0], (struct sockaddr *)&sa, sizeof(sa)), 0);
			ck_assert_int_eq(listen(section_fds[0], 1), 0);
			section_fds[1] = -1;
		}
	} else {
		ck_assert_int_eq(pipe(section_fds), 0);
	}
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, NULL, section_call_canceled, I2P(_i)), 0);
	ck_assert_ptr_eq(join_and_check(t), MARCEL_CANCELED);
	ck_assert_int_eq(atomic_load(&after_point), 0);
	marcel_end();
	close(section_fds[0]);
	if (section_fds[1] >= 0)
		close(section_fds[1]);
}
END_TEST

/* ------------------------------------------------------------ seeds */

static marcel_t seed_child;

/* Creates a seed running blocked_at(P_USLEEP) (or sets_func_ran, canceled before its
 * start) and joins it: the seed runs on this thread's stack, as a function call (unless
 * an idle VP started it first). The early one is canceled before it is woken: once
 * queued, an idle VP may start it at once, and a cancel that comes after its start
 * finds no cancellation point in sets_func_ran, which then returns its argument. */
static any_t seed_parent(any_t arg)
{
	marcel_attr_t a;
	marcel_attr_init(&a);
	marcel_attr_setseed(&a, 1);
	if (P2I(arg)) {
		ck_assert_int_eq(marcel_create_dontsched(&seed_child, &a, sets_func_ran, I2P(P_USLEEP)), 0);
		ck_assert_int_eq(marcel_cancel(seed_child), 0);
		ck_assert_int_eq(marcel_wake_up_created_thread(seed_child), 0);
	} else {
		ck_assert_int_eq(marcel_create(&seed_child, &a, blocked_at, I2P(P_USLEEP)), 0);
	}
	atomic_fetch_add(&ready, 1);
	any_t r = NULL;
	ck_assert_int_eq(marcel_join(seed_child, &r), 0);
	return r;
}

START_TEST(test_seeds)
{
	ma_test_init();
	marcel_t p;
	/* Blocked at a point while it runs on its joiner's stack. */
	log_reset();
	ck_assert_int_eq(marcel_create(&p, NULL, seed_parent, I2P(0)), 0);
	settle(2);
	ck_assert_int_eq(marcel_cancel(seed_child), 0);
	ck_assert_ptr_eq(join_and_check(p), MARCEL_CANCELED);
	ck_assert_int_eq(atomic_load(&log_len), 1);
	ck_assert_int_eq(log_buf[0], 100 + P_USLEEP);
	ck_assert_int_eq(atomic_load(&after_point), 0);
	/* Canceled before its joiner runs it. */
	log_reset();
	ck_assert_int_eq(marcel_create(&p, NULL, seed_parent, I2P(1)), 0);
	ck_assert_ptr_eq(join_and_check(p), MARCEL_CANCELED);
	ck_assert_int_eq(atomic_load(&func_ran), 0);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------ many, races, non-points */

#define MANY 64

static any_t many_waiter(any_t arg)
{
	int i = P2I(arg);
	atomic_fetch_add(&ready, 1);
	switch (i % 4) {
	case 0:
		marcel_mutex_lock(&mtx);
		marcel_cleanup_push(cond_handler, I2P(1));
		marcel_cond_wait(&cnd, &mtx);
		marcel_cleanup_pop(1);
		break;
	case 1:
		marcel_cleanup_push(handler, I2P(1));
		marcel_sem_wait(&psem);
		marcel_cleanup_pop(0);
		break;
	case 2:
		marcel_cleanup_push(handler, I2P(1));
		marcel_usleep(LONG_S * 1000000UL);
		marcel_cleanup_pop(0);
		break;
	default: {
		marcel_cleanup_push(handler, I2P(1));
		struct timespec d = abs_in(LONG_S);
		marcel_sem_timedwait(&psem, &d);
		marcel_cleanup_pop(0);
	}
	}
	atomic_store(&after_point, 1);
	return NULL;
}

static atomic_int taken;

/* sem_wait against a post and a cancel that come together: either the unit is taken
 * (and the request then acts at the testcancel) or it stays in the semaphore. */
static any_t racing_taker(any_t arg)
{
	(void)arg;
	atomic_store(&ready, 1);
	marcel_sem_wait(&psem);
	atomic_fetch_add(&taken, 1);
	/* Not a point: waits for the request to be sent, then acts on it. */
	while (!atomic_load(&func_ran))
		marcel_yield();
	marcel_testcancel();
	return NULL;
}

static atomic_int mutex_got;

/* Blocked on a mutex (not a point) when canceled: it keeps waiting, gets the mutex, and
 * acts at the next point. */
static any_t mutex_waiter(any_t arg)
{
	(void)arg;
	atomic_store(&ready, 1);
	marcel_mutex_lock(&mtx);
	atomic_store(&mutex_got, 1);
	marcel_mutex_unlock(&mtx);
	marcel_testcancel();
	atomic_store(&after_point, 1);
	return NULL;
}

START_TEST(test_many)
{
	ma_test_init();
	log_reset();
	marcel_sem_init(&psem, 0);
	marcel_mutex_init(&mtx, NULL);
	marcel_cond_init(&cnd, NULL);
	marcel_t t[MANY];
	for (int i = 0; i < MANY; i++)
		ck_assert_int_eq(marcel_create(&t[i], NULL, many_waiter, I2P(i)), 0);
	settle(MANY);
	for (int i = 0; i < MANY; i++)
		ck_assert_int_eq(marcel_cancel(t[i]), 0);
	for (int i = 0; i < MANY; i++)
		ck_assert_ptr_eq(join_and_check(t[i]), MARCEL_CANCELED);
	ck_assert_int_eq(atomic_load(&log_len), MANY);
	ck_assert_int_eq(atomic_load(&after_point), 0);
	ck_assert_int_eq(marcel_cond_destroy(&cnd), 0);
	ck_assert_int_eq(marcel_sem_destroy(&psem), 0);

	/* Post and cancel together, many times: no unit lost or taken twice. */
	int rounds = 200 / (int)ma_test_scale_div();
	for (int r = 0; r < rounds; r++) {
		atomic_store(&taken, 0);
		marcel_t x;
		atomic_store(&ready, 0);
		atomic_store(&func_ran, 0);
		marcel_sem_init(&psem, 0);
		ck_assert_int_eq(marcel_create(&x, NULL, racing_taker, NULL), 0);
		await_ge(&ready, 1);
		if (r % 2)
			marcel_yield();
		ck_assert_int_eq(marcel_sem_post(&psem), 0);
		ck_assert_int_eq(marcel_cancel(x), 0);
		atomic_store(&func_ran, 1);
		ck_assert_ptr_eq(join_and_check(x), MARCEL_CANCELED);
		int v = -1;
		ck_assert_int_eq(marcel_sem_getvalue(&psem, &v), 0);
		/* The unit was taken, or it is still there: never both, never neither. */
		ck_assert_int_eq(v + atomic_load(&taken), 1);
		ck_assert_int_eq(marcel_sem_destroy(&psem), 0);
	}

	/* A cancel reaching a thread blocked on a mutex. */
	log_reset();
	atomic_store(&mutex_got, 0);
	marcel_t m;
	marcel_mutex_lock(&mtx);
	ck_assert_int_eq(marcel_create(&m, NULL, mutex_waiter, NULL), 0);
	settle(1);
	ck_assert_int_eq(marcel_cancel(m), 0);
	marcel_usleep(SETTLE_US);
	ck_assert_int_eq(atomic_load(&mutex_got), 0);
	marcel_mutex_unlock(&mtx);
	ck_assert_ptr_eq(join_and_check(m), MARCEL_CANCELED);
	ck_assert_int_eq(atomic_load(&mutex_got), 1);
	ck_assert_int_eq(atomic_load(&after_point), 0);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------ errors, kernel threads */

static atomic_int kernel_results[6];

static void *kernel_thread(void *arg)
{
	(void)arg;
	atomic_store(&kernel_results[0], marcel_setcancelstate(MARCEL_CANCEL_DISABLE, NULL));
	atomic_store(&kernel_results[1], marcel_setcanceltype(MARCEL_CANCEL_DEFERRED, NULL));
	marcel_testcancel();
	/* Handlers work in a kernel thread too: pop(1) runs, pop(0) does not. */
	marcel_cleanup_push(handler, I2P(8));
	marcel_cleanup_pop(1);
	marcel_cleanup_push(handler, I2P(9));
	marcel_cleanup_pop(0);
	return NULL;
}

START_TEST(test_errors)
{
	ma_test_init();
	log_reset();
	pthread_t k;
	ck_assert_int_eq(pthread_create(&k, NULL, kernel_thread, NULL), 0);
	ck_assert_int_eq(pthread_join(k, NULL), 0);
	ck_assert_int_eq(atomic_load(&kernel_results[0]), EPERM);
	ck_assert_int_eq(atomic_load(&kernel_results[1]), EPERM);
	ck_assert_int_eq(atomic_load(&log_len), 1);
	ck_assert_int_eq(log_buf[0], 8);
	/* The buffer functions' errors. */
	marcel_cleanup_buffer_t b1, b2;
	ck_assert_int_eq(marcel_cleanup_push_buffer(NULL, handler, NULL), EINVAL);
	ck_assert_int_eq(marcel_cleanup_push_buffer(&b1, NULL, NULL), EINVAL);
	ck_assert_int_eq(marcel_cleanup_pop_buffer(&b1, 1), EINVAL);
	ck_assert_int_eq(marcel_cleanup_pop_buffer(NULL, 1), EINVAL);
	ck_assert_int_eq(marcel_cleanup_push_buffer(&b1, handler, I2P(1)), 0);
	ck_assert_int_eq(marcel_cleanup_push_buffer(&b2, handler, I2P(2)), 0);
	ck_assert_int_eq(marcel_cleanup_pop_buffer(&b1, 1), EINVAL); /* not the innermost */
	ck_assert_int_eq(marcel_cleanup_pop_buffer(&b2, 0), 0);
	ck_assert_int_eq(marcel_cleanup_pop_buffer(&b1, 1), 0);
	ck_assert_int_eq(atomic_load(&log_len), 2);
	ck_assert_int_eq(log_buf[1], 1);
	marcel_end();
}
END_TEST

static void tc_points(TCase *tc)
{
	tcase_add_test(tc, test_each_point);
	tcase_add_test(tc, test_join_point);
	tcase_add_test(tc, test_entry);
	tcase_add_loop_test(tc, test_section_entry, 0, SC_NB);
}

static void tc_handlers(TCase *tc)
{
	tcase_add_test(tc, test_handlers);
	tcase_add_test(tc, test_state_type);
	tcase_add_test(tc, test_lifetimes);
	tcase_add_test(tc, test_seeds);
}

static void tc_many(TCase *tc)
{
	tcase_add_test(tc, test_many);
	tcase_add_test(tc, test_errors);
}

int main(void)
{
	Suite *s = suite_create("cancel");
	ma_test_add_both(s, "points", tc_points, 60);
	ma_test_add_both(s, "handlers", tc_handlers, 60);
	ma_test_add_both(s, "many", tc_many, 120);
	return ma_test_run(s);
}
