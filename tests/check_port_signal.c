/*
 * A pthread program's signals through <marcel/pthread.h>: the POSIX recipe (block the
 * signal in main with pthread_sigmask, one thread takes it with sigwait, others send it
 * with pthread_kill), and a handler installed with the C library's sigaction that
 * pthread_kill runs in its target thread (pthread_self() there is the target), whose
 * condition wait goes on after the handler. On this machine, on one VP and on the
 * synthetic 32-PU topology.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <semaphore.h>
#include "ma_test.h"
#include <marcel/pthread.h>

#define I2P(i) ((void *)(intptr_t)(i))
#define NSIGNALS 20

/* ---- the POSIX recipe: one thread takes the signals others send ---- */

static sigset_t usr1;
static sem_t acked;
static pthread_t taker;

static void *signal_taker(void *arg)
{
	(void)arg;
	for (int i = 0; i < NSIGNALS; i++) {
		int sig = 0;
		MA_THREAD_CHECK(sigwait(&usr1, &sig) == 0 && sig == SIGUSR1);
		sem_post(&acked);
	}
	return NULL;
}

static void *sender(void *arg)
{
	(void)arg;
	MA_THREAD_CHECK(pthread_kill(taker, SIGUSR1) == 0);
	return NULL;
}

static void recipe(int one_vp)
{
	ma_test_start_checked(one_vp);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	/* Blocked in main, so in every thread created after: nobody's handler takes it. */
	ck_assert_int_eq(pthread_sigmask(SIG_BLOCK, &usr1, NULL), 0);
	ck_assert_int_eq(sem_init(&acked, 0, 0), 0);
	ck_assert_int_eq(pthread_create(&taker, NULL, signal_taker, NULL), 0);
	for (int i = 0; i < NSIGNALS; i++) {
		/* One at a time: two pending at once would merge, as POSIX signals do. */
		pthread_t s;
		ck_assert_int_eq(pthread_create(&s, NULL, sender, I2P(i)), 0);
		ck_assert_int_eq(pthread_join(s, NULL), 0);
		ck_assert_int_eq(sem_wait(&acked), 0);
	}
	ck_assert_int_eq(pthread_join(taker, NULL), 0);
	/* pthread_kill's own errors. */
	ck_assert_int_eq(pthread_kill(pthread_self(), 0), 0);
	ck_assert_int_eq(pthread_kill(pthread_self(), -1), EINVAL);
	ck_assert_int_eq(pthread_sigmask(SIG_UNBLOCK, &usr1, NULL), 0);
	sem_destroy(&acked);
	ma_test_end_checked();
}

START_TEST(test_recipe)
{
	recipe(0);
}
END_TEST

START_TEST(test_recipe_one_vp)
{
	recipe(1);
}
END_TEST

/* ---- a handler of the C library's sigaction, run by pthread_kill in its target ---- */

static pthread_t handler_self;
static sem_t handled;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int go, waiting, woke;

static void on_usr2(int sig)
{
	(void)sig;
	__atomic_store_n(&handler_self, pthread_self(), __ATOMIC_SEQ_CST);
	sem_post(&handled); /* async-signal-safe, as POSIX requires of a handler */
}

static void *cond_waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&m);
	waiting = 1;
	pthread_cond_signal(&c);
	while (!go)
		pthread_cond_wait(&c, &m);
	woke = 1;
	pthread_mutex_unlock(&m);
	return NULL;
}

static void handler_in_target(int one_vp)
{
	ma_test_start_checked(one_vp);
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr2;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR2, &sa, &old), 0);
	ck_assert_int_eq(sem_init(&handled, 0, 0), 0);
	go = waiting = woke = 0;
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, cond_waiter, NULL), 0);
	pthread_mutex_lock(&m);
	while (!waiting)
		pthread_cond_wait(&c, &m);
	pthread_mutex_unlock(&m);
	ck_assert_int_eq(pthread_kill(t, SIGUSR2), 0);
	ck_assert_int_eq(sem_wait(&handled), 0);
	ck_assert(pthread_equal(__atomic_load_n(&handler_self, __ATOMIC_SEQ_CST), t));
	/* Its wait went on after the handler. */
	pthread_mutex_lock(&m);
	ck_assert_int_eq(woke, 0);
	go = 1;
	pthread_cond_signal(&c);
	pthread_mutex_unlock(&m);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(woke, 1);
	ck_assert_int_eq(sigaction(SIGUSR2, &old, NULL), 0);
	sem_destroy(&handled);
	ma_test_end_checked();
}

START_TEST(test_handler_in_target)
{
	handler_in_target(0);
}
END_TEST

START_TEST(test_handler_in_target_one_vp)
{
	handler_in_target(1);
}
END_TEST

static void add_all(TCase *tc)
{
	tcase_add_test(tc, test_recipe);
	tcase_add_test(tc, test_recipe_one_vp);
	tcase_add_test(tc, test_handler_in_target);
	tcase_add_test(tc, test_handler_in_target_one_vp);
}

int main(void)
{
	Suite *s = suite_create("port_signal");
	ma_test_add_both(s, "signals", add_all, 60);
	return ma_test_run(s);
}
