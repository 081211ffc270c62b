/*
 * What the asymmetry-aware strategies read of threads: the master-thread hint
 * (marcel_task_setmaster, main's by default) and spin-then-notify (a waiter of a
 * condition, semaphore or barrier polls for MARCEL_SPIN rounds before it blocks, counted
 * as spinning meanwhile: MARCEL_STATS_NB_SPINNING).
 */
#include <errno.h>
#include <stdatomic.h>
#include "ma_test.h"

/* In marcel: the caller's VP serves others meanwhile (the waiter may share it). */
static void sleep_ms(unsigned ms)
{
	marcel_usleep(ms * 1000ul);
}

static any_t idle_thread(any_t arg)
{
	(void)arg;
	return NULL;
}

START_TEST(master_hint)
{
	ma_test_init();
	int m = -1;
	ck_assert_int_eq(marcel_task_getmaster(marcel_self(), &m), 0);
	ck_assert_int_eq(m, 1);
	marcel_bubble_t b;
	ck_assert_int_eq(marcel_bubble_init(&b), 0);
	marcel_attr_t a;
	marcel_attr_init(&a);
	ck_assert_int_eq(marcel_attr_setinitbubble(&a, &b), 0);
	marcel_t t[2];
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(marcel_create(&t[i], &a, idle_thread, NULL), 0);
	ck_assert_int_eq(marcel_task_getmaster(t[0], &m), 0);
	ck_assert_int_eq(m, 0);
	ck_assert_int_eq(marcel_task_setmaster(t[0], 1), 0);
	ck_assert_int_eq(marcel_task_getmaster(t[0], &m), 0);
	ck_assert_int_eq(m, 1);
	long long v = -1;
	ck_assert_int_eq(marcel_bubble_stats_get(&b, MARCEL_STATS_MASTER, &v), 0);
	ck_assert_int_eq(v, 1);
	ck_assert_int_eq(marcel_task_stats_get(t[1], MARCEL_STATS_MASTER, &v), 0);
	ck_assert_int_eq(v, 0);
	/* Bad input, and nothing changed. */
	ck_assert_int_eq(marcel_task_setmaster(t[0], 2), EINVAL);
	ck_assert_int_eq(marcel_task_getmaster(t[0], NULL), EINVAL);
	ck_assert_int_eq(marcel_task_getmaster(t[0], &m), 0);
	ck_assert_int_eq(m, 1);
	ck_assert_int_eq(marcel_task_stats_get(t[0], MARCEL_STATS_MEMOP_RATE + 1, &v), EINVAL);
	ck_assert_int_eq(marcel_wake_up_bubble(&b), 0);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(marcel_join(t[i], NULL), 0);
	ck_assert_int_eq(marcel_task_setmaster(marcel_self(), 0), 0);
	ck_assert_int_eq(marcel_task_getmaster(marcel_self(), &m), 0);
	ck_assert_int_eq(m, 0);
	marcel_bubble_destroy(&b);
	marcel_end();
}
END_TEST

/* A waiter on 2 VPs with MARCEL_SPIN at its maximum polls before it blocks: the spin hook
 * (marcel_spin_notify_set) runs in it when it starts and stops, and sees the thread
 * counted as spinning (and running) in between. */
enum { SEM, COND, BARRIER };
static int kind;
static marcel_sem_t sem;
static marcel_mutex_t mtx = MARCEL_MUTEX_INITIALIZER;
static marcel_cond_t cond = MARCEL_COND_INITIALIZER;
static marcel_barrier_t bar;
static atomic_int go, entered, done, spin_starts, spin_stops, seen_spinning, seen_running, seen_after;

static void spin_hook(marcel_t self, int spinning)
{
	long long v = -1, r = -1;
	marcel_task_stats_get(self, MARCEL_STATS_NB_SPINNING, &v);
	marcel_task_stats_get(self, MARCEL_STATS_NB_RUNNING, &r);
	if (spinning) {
		atomic_store(&seen_spinning, (int)v);
		atomic_store(&seen_running, (int)r);
		atomic_fetch_add(&spin_starts, 1);
	} else {
		atomic_store(&seen_after, (int)v);
		atomic_fetch_add(&spin_stops, 1);
	}
}

static any_t waiter(any_t arg)
{
	(void)arg;
	atomic_store(&entered, 1);
	if (kind == SEM) {
		marcel_sem_P(&sem);
	} else if (kind == COND) {
		marcel_mutex_lock(&mtx);
		while (!atomic_load(&go))
			marcel_cond_wait(&cond, &mtx);
		marcel_mutex_unlock(&mtx);
	} else {
		marcel_barrier_wait(&bar);
	}
	atomic_store(&done, 1);
	return NULL;
}

/* Whether t waits blocked: neither running nor queued. */
static int blocked(marcel_t t)
{
	long long running = -1, ready = -1;
	ck_assert_int_eq(marcel_task_stats_get(t, MARCEL_STATS_NB_RUNNING, &running), 0);
	ck_assert_int_eq(marcel_task_stats_get(t, MARCEL_STATS_NB_READY, &ready), 0);
	return running == 0 && ready == 0;
}

/* A waiter polls only while its worker has nothing else to run (a thread the timer just
 * woke, queued on a level VP 1 shares, is enough to make it block at once). So a round
 * in which it blocked without polling is released and tried again; polling must show
 * within a few rounds, and every round must end. */
START_TEST(spin_then_notify)
{
	setenv("MARCEL_NVP", "2", 1);
	setenv("MARCEL_SPIN", "1000000", 1);
	ma_test_init();
	unsetenv("MARCEL_NVP");
	unsetenv("MARCEL_SPIN");
	ck_assert_ptr_null(marcel_spin_notify_set(spin_hook));
	for (kind = SEM; kind <= BARRIER; kind++) {
		int round, spun = 0;
		for (round = 0; round < 50 && !spun; round++) {
			atomic_store(&go, 0);
			atomic_store(&entered, 0);
			atomic_store(&done, 0);
			atomic_store(&spin_starts, 0);
			atomic_store(&spin_stops, 0);
			atomic_store(&seen_spinning, -1);
			atomic_store(&seen_after, -1);
			marcel_sem_init(&sem, 0);
			marcel_barrier_init(&bar, NULL, 2);
			marcel_attr_t a = ma_test_attr_on_vp(1);
			marcel_t t;
			ck_assert_int_eq(marcel_create(&t, &a, waiter, NULL), 0);
			while (!atomic_load(&spin_starts) && !(atomic_load(&entered) && blocked(t)))
				sleep_ms(1);
			spun = atomic_load(&spin_starts) != 0;
			if (kind == SEM) {
				marcel_sem_V(&sem);
			} else if (kind == COND) {
				marcel_mutex_lock(&mtx);
				atomic_store(&go, 1);
				marcel_cond_signal(&cond);
				marcel_mutex_unlock(&mtx);
			} else {
				marcel_barrier_wait(&bar);
			}
			ck_assert_int_eq(marcel_join(t, NULL), 0);
			ck_assert_int_eq(atomic_load(&done), 1);
			ck_assert_int_eq(atomic_load(&spin_starts), atomic_load(&spin_stops));
			if (spun) {
				ck_assert_msg(atomic_load(&seen_spinning) == 1 && atomic_load(&seen_running) == 1,
					      "kind %d: while spinning, counted %d spinning and %d running", kind,
					      atomic_load(&seen_spinning), atomic_load(&seen_running));
				ck_assert_int_eq(atomic_load(&seen_after), 0);
			}
			marcel_barrier_destroy(&bar);
			marcel_sem_destroy(&sem);
		}
		ck_assert_msg(spun, "kind %d: the waiter never polled in %d rounds", kind, round);
	}
	marcel_spin_notify_set(NULL);
	marcel_end();
}
END_TEST

/* With the default (MARCEL_SPIN auto: 0 on one VP), a waiter blocks at once: never seen
 * spinning, and the wait still ends. */
START_TEST(no_spin_on_one_vp)
{
	setenv("MARCEL_NVP", "1", 1);
	ma_test_init();
	unsetenv("MARCEL_NVP");
	kind = SEM;
	atomic_store(&done, 0);
	atomic_store(&spin_starts, 0);
	ck_assert_ptr_null(marcel_spin_notify_set(spin_hook));
	marcel_sem_init(&sem, 0);
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, NULL, waiter, NULL), 0);
	marcel_yield();
	long long v = -1;
	ck_assert_int_eq(marcel_task_stats_get(t, MARCEL_STATS_NB_SPINNING, &v), 0);
	ck_assert_int_eq(v, 0);
	marcel_sem_V(&sem);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_int_eq(atomic_load(&done), 1);
	ck_assert_int_eq(atomic_load(&spin_starts), 0);
	marcel_spin_notify_set(NULL);
	marcel_sem_destroy(&sem);
	marcel_end();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hints");
	TCase *tc = tcase_create("hints");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, master_hint);
	tcase_add_test(tc, spin_then_notify);
	tcase_add_test(tc, no_spin_on_one_vp);
	suite_add_tcase(s, tc);
	return ma_test_run(s);
}
