/*
 * Call sequences that used to wait forever on valid input: a sleeper whose VP is taken by
 * a thread that never calls marcel, marcel_end with VP 0 disabled, and threads made with
 * marcel_create_dontsched in a bubble attached to a woken one (the Marcel idiom:
 * marcel_bubble_insertbubble(&marcel_root_bubble, b), then marcel_wake_up_bubble(b)).
 * Each test fails by timing out on the code before its fix.
 *
 * Also a program that goes on after a failed marcel_init, as programs written for PM2's
 * Marcel do (its marcel_init returned nothing): its waits must fail rather than wait for
 * threads that cannot exist.
 */
#include <errno.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include "ma_test.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- a sleeper whose VP is busy (item: timers of busy workers) ---- */

/* How late a sleeper may wake when its own VP is taken: the watcher's slack is 0.1 ms;
 * the rest is room for a loaded machine and the sanitizer builds. */
#define LATE_MS 40.0

enum { SLEEP_DELAY, SLEEP_USLEEP, SLEEP_NANOSLEEP, SLEEP_COND, SLEEP_SEM };

struct sleeper {
	int how;
	atomic_int vp;                    /* the VP it armed its timer on; -1 before */
	atomic_int stop;                  /* set once it is awake: the spinner ends */
	double slept_ms;
};

static marcel_mutex_t sleep_lock = MARCEL_MUTEX_INITIALIZER;
static marcel_cond_t sleep_cond = MARCEL_COND_INITIALIZER;

static any_t sleeper_fn(any_t arg)
{
	struct sleeper *s = arg;
	atomic_store(&s->vp, marcel_current_vp());
	double t0 = now_ms();
	switch (s->how) {
	case SLEEP_DELAY:
		marcel_delay(50);
		break;
	case SLEEP_USLEEP:
		marcel_usleep(50000);
		break;
	case SLEEP_NANOSLEEP: {
		struct timespec ts = { 0, 50000000L };
		ck_assert_int_eq(marcel_nanosleep(&ts, NULL), 0);
		break;
	}
	case SLEEP_COND: {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		marcel_mutex_lock(&sleep_lock);
		int e;
		while ((e = marcel_cond_timedwait(&sleep_cond, &sleep_lock, &ts)) == 0)
			;
		marcel_mutex_unlock(&sleep_lock);
		ck_assert_int_eq(e, ETIMEDOUT);
		break;
	}
	default: {
		marcel_sem_t sem;
		marcel_sem_init(&sem, 0);
		ck_assert_int_eq(marcel_sem_timed_P(&sem, 50), 0);
		break;
	}
	}
	s->slept_ms = now_ms() - t0;
	atomic_store(&s->stop, 1);
	return NULL;
}

/* Never calls marcel: only preemption could take its VP back. */
static any_t spinner_fn(any_t arg)
{
	struct sleeper *s = arg;
	while (!atomic_load_explicit(&s->stop, memory_order_relaxed))
		;
	return NULL;
}

/* Sleeps `how` for 50 ms in a thread whose VP is then taken by a spinner that never calls
 * marcel; every other VP has nothing to do and sleeps in the kernel (the sleep is far
 * longer than their 2 ms poll). Returns how long the sleep took. */
static double sleep_beside_spinner(int how)
{
	struct sleeper s = { .how = how };
	atomic_init(&s.vp, -1);
	atomic_init(&s.stop, 0);
	marcel_t st, sp;
	ck_assert_int_eq(marcel_create(&st, NULL, sleeper_fn, &s), 0);
	while (atomic_load(&s.vp) < 0)
		marcel_yield();
	marcel_attr_t a = ma_test_attr_on_vp((unsigned)atomic_load(&s.vp));
	ck_assert_int_eq(marcel_create(&sp, &a, spinner_fn, &s), 0);
	ck_assert_int_eq(marcel_join(st, NULL), 0);
	ck_assert_int_eq(marcel_join(sp, NULL), 0);
	return s.slept_ms;
}

START_TEST(test_sleeper_on_busy_vp)
{
	ma_test_init();
	ck_assert_uint_ge(marcel_nbvps(), 2);
	double ms = sleep_beside_spinner(_i);
	ck_assert_msg(ms >= 49.0 && ms < 50.0 + LATE_MS, "sleep %d of 50 ms beside a spinner took %.1f ms", _i, ms);
	marcel_end();
}
END_TEST

/* The same with every other VP asleep in the kernel long before: the sleeper's timer
 * becomes the earliest while the watcher sleeps with no deadline at all, and must be
 * kicked. */
START_TEST(test_sleeper_armed_late)
{
	ma_test_init();
	ck_assert_uint_ge(marcel_nbvps(), 2);
	for (int round = 0; round < 3; round++) {
		marcel_usleep(20000);
		double ms = sleep_beside_spinner(SLEEP_USLEEP);
		ck_assert_msg(ms < 50.0 + LATE_MS, "round %d: 50 ms took %.1f ms", round, ms);
	}
	marcel_end();
}
END_TEST

/* ---- marcel_end with VP 0 disabled ---- */

static any_t vp_fn(any_t arg)
{
	(void)arg;
	return (any_t)(long)marcel_current_vp();
}

START_TEST(test_end_with_vp0_disabled)
{
	ma_test_init();
	ck_assert_uint_ge(marcel_nbvps(), 2);
	marcel_vpset_t vp0 = MARCEL_VPSET_VP(0);
	ck_assert_int_eq(marcel_disable_vps(&vp0), 0);
	/* main left VP 0, and so does new work. */
	ck_assert_int_ne(marcel_current_vp(), 0);
	marcel_t t;
	any_t r;
	ck_assert_int_eq(marcel_create(&t, NULL, vp_fn, NULL), 0);
	ck_assert_int_eq(marcel_join(t, &r), 0);
	ck_assert_int_ne((long)r, 0);
	marcel_end();
	/* The runtime is usable again afterwards. */
	ma_test_init();
	ck_assert_int_eq(marcel_current_vp(), 0);
	marcel_end();
}
END_TEST

START_TEST(test_end_with_all_but_one_disabled)
{
	ma_test_init();
	unsigned n = marcel_nbvps();
	ck_assert_uint_ge(n, 2);
	/* Every VP but the last: main must still come home to VP 0 at the end. */
	marcel_vpset_t set = MARCEL_VPSET_ZERO;
	for (unsigned v = 0; v + 1 < n; v++)
		marcel_vpset_set(&set, v);
	ck_assert_int_eq(marcel_disable_vps(&set), 0);
	ck_assert_int_eq(marcel_current_vp(), (int)n - 1);
	marcel_end();
}
END_TEST

/* ---- dontsched threads in a bubble attached to a woken one ---- */

static const char *const strategies[] = { "null", "burst", "spread", "cache", "steal", "gang", "memory" };
#define NB_STRATEGIES (sizeof(strategies) / sizeof(strategies[0]))

static atomic_int ran;

static any_t count_fn(any_t arg)
{
	atomic_fetch_add(&ran, 1);
	return arg;
}

/* _i: strategy * 3 + how the threads get into b: 0 created in it (natural bubble), 1
 * created outside and inserted, 2 b attached to a woken sub-bubble of the root rather
 * than to the root. */
START_TEST(test_root_insert_then_wake)
{
	const char *sched = strategies[_i / 3];
	int how = _i % 3;
	ma_test_init_with(ma_test_topology, sched);
	atomic_store(&ran, 0);
	marcel_bubble_t outer, b;
	ck_assert_int_eq(marcel_bubble_init(&b), 0);
	if (how == 2) {
		ck_assert_int_eq(marcel_bubble_init(&outer), 0);
		ck_assert_int_eq(marcel_bubble_insertbubble(&marcel_root_bubble, &outer), 0);
		ck_assert_int_eq(marcel_wake_up_bubble(&outer), 0);
		ck_assert_int_eq(marcel_bubble_insertbubble(&outer, &b), 0);
	} else {
		ck_assert_int_eq(marcel_bubble_insertbubble(&marcel_root_bubble, &b), 0);
	}
	enum { N = 6 };
	marcel_t t[N];
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	if (how != 1)
		ck_assert_int_eq(marcel_attr_setnaturalbubble(&a, &b), 0);
	for (long i = 0; i < N; i++) {
		ck_assert_int_eq(marcel_create_dontsched(&t[i], &a, count_fn, (any_t)i), 0);
		if (how == 1)
			ck_assert_int_eq(marcel_bubble_inserttask(&b, t[i]), 0);
	}
	ck_assert_int_eq(marcel_wake_up_bubble(&b), 0);
	/* Waking again starts nothing twice. */
	ck_assert_int_eq(marcel_wake_up_bubble(&b), 0);
	for (long i = 0; i < N; i++) {
		any_t r;
		ck_assert_int_eq(marcel_join(t[i], &r), 0);
		ck_assert_int_eq((long)r, i);
	}
	ck_assert_int_eq(atomic_load(&ran), N);
	ck_assert_int_eq(marcel_bubble_join(&b), 0);
	marcel_end();
}
END_TEST

/* Threads created in a bubble whose parent has not been woken wait for the parent: a
 * second wake-up of the inner bubble does not start them early. */
START_TEST(test_rewake_waits_for_parent)
{
	ma_test_init();
	atomic_store(&ran, 0);
	marcel_bubble_t outer, b;
	ck_assert_int_eq(marcel_bubble_init(&outer), 0);
	ck_assert_int_eq(marcel_bubble_init(&b), 0);
	ck_assert_int_eq(marcel_bubble_insertbubble(&outer, &b), 0);
	ck_assert_int_eq(marcel_wake_up_bubble(&b), 0);
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setnaturalbubble(&a, &b), 0);
	marcel_t t;
	ck_assert_int_eq(marcel_create_dontsched(&t, &a, count_fn, NULL), 0);
	ck_assert_int_eq(marcel_wake_up_bubble(&b), 0);
	marcel_usleep(20000);
	ck_assert_int_eq(atomic_load(&ran), 0);
	ck_assert_int_eq(marcel_bubble_insertbubble(&marcel_root_bubble, &outer), 0);
	ck_assert_int_eq(marcel_wake_up_bubble(&outer), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_int_eq(atomic_load(&ran), 1);
	marcel_end();
}
END_TEST

/* ---- saying what a wait waits for ---- */

/* Reads what marcel_print_threads writes. */
static void print_threads_to(char *buf, size_t n)
{
	FILE *f = tmpfile();
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(marcel_print_threads(f), 0);
	rewind(f);
	size_t len = fread(buf, 1, n - 1, f);
	buf[len] = 0;
	fclose(f);
}

START_TEST(test_print_threads_names_unstarted)
{
	ma_test_init();
	ck_assert_int_eq(marcel_print_threads(NULL), EINVAL);
	marcel_bubble_t b;
	ck_assert_int_eq(marcel_bubble_init(&b), 0);
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setnaturalbubble(&a, &b), 0);
	ck_assert_int_eq(marcel_attr_setname(&a, "never-woken"), 0);
	marcel_t t;
	ck_assert_int_eq(marcel_create_dontsched(&t, &a, count_fn, NULL), 0);
	static char buf[8192];
	print_threads_to(buf, sizeof(buf));
	ck_assert_msg(strstr(buf, "'main': running"), "no main line in:\n%s", buf);
	const char *line = strstr(buf, "'never-woken': not started");
	ck_assert_msg(line && strstr(line, "starts when its bubble"), "no line for the thread in:\n%s", buf);
	ck_assert_int_eq(marcel_wake_up_bubble(&b), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	marcel_end();
	ck_assert_int_eq(marcel_print_threads(stderr), EPERM);
}
END_TEST

static marcel_bubble_t late_bubble;

static any_t wake_late(any_t arg)
{
	(void)arg;
	marcel_delay(50);
	ck_assert_int_eq(marcel_wake_up_bubble(&late_bubble), 0);
	return NULL;
}

/* MARCEL_DEBUG=1: a join on a thread nobody started yet says so. */
START_TEST(test_debug_join_names_unstarted)
{
	setenv("MARCEL_DEBUG", "1", 1);
	ma_test_init();
	unsetenv("MARCEL_DEBUG");
	ck_assert_int_eq(marcel_bubble_init(&late_bubble), 0);
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setnaturalbubble(&a, &late_bubble), 0);
	ck_assert_int_eq(marcel_attr_setname(&a, "late"), 0);
	marcel_t t, waker;
	ck_assert_int_eq(marcel_create_dontsched(&t, &a, count_fn, NULL), 0);
	ck_assert_int_eq(marcel_create(&waker, NULL, wake_late, NULL), 0);
	struct ma_test_capture cap;
	static char msg[4096];
	ma_test_capture_begin(&cap);
	int e = marcel_join(t, NULL);
	ma_test_capture_end(&cap, msg, sizeof(msg));
	ck_assert_int_eq(e, 0);
	ck_assert_msg(strstr(msg, "never started") && strstr(msg, "'late': not started"), "got: %s", msg);
	ck_assert_int_eq(marcel_join(waker, NULL), 0);
	marcel_end();
}
END_TEST

static marcel_sem_t stuck_sem;

/* A pool worker that polls for work that never comes. */
static any_t wake_late_forever(any_t arg)
{
	(void)arg;
	for (;;)
		marcel_usleep(1000);
	return NULL;
}

static any_t slow_count(any_t arg)
{
	marcel_delay(100);
	atomic_fetch_add(&ran, 1);
	return arg;
}

static any_t stuck_fn(any_t arg)
{
	(void)arg;
	marcel_sem_P(&stuck_sem);
	return NULL;
}

/* A kernel thread that is not a marcel thread: the only one that can free stuck_fn. */
static void *post_later(void *arg)
{
	usleep((useconds_t)(long)arg);
	marcel_sem_V(&stuck_sem);
	return NULL;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* marcel_end waits for a blocked thread without polling: the process uses a small part
 * of a processor while it waits (it polled every 20 us, keeping VP 0 busy). */
START_TEST(test_end_waits_without_polling)
{
	ma_test_init();
	marcel_sem_init(&stuck_sem, 0);
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setdetachstate(&a, MARCEL_CREATE_DETACHED), 0);
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, &a, stuck_fn, NULL), 0);
	marcel_usleep(10000);
	pthread_t k;
	ck_assert_int_eq(pthread_create(&k, NULL, post_later, (void *)400000L), 0);
	double c0 = cpu_s(), w0 = now_ms();
	marcel_end();
	double cpu = cpu_s() - c0, wall = (now_ms() - w0) / 1e3;
	pthread_join(k, NULL);
	ck_assert_msg(wall >= 0.3, "marcel_end returned after %.3f s, before the thread ended", wall);
	ck_assert_msg(cpu < 0.3 * wall, "marcel_end used %.3f s of CPU in %.3f s", cpu, wall);
}
END_TEST

/* MARCEL_DEBUG=1: after 1 s without a thread ending, marcel_end names what it waits for. */
START_TEST(test_end_names_what_it_waits_for)
{
	setenv("MARCEL_DEBUG", "1", 1);
	ma_test_init();
	unsetenv("MARCEL_DEBUG");
	marcel_sem_init(&stuck_sem, 0);
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setname(&a, "stuck-worker"), 0);
	ck_assert_int_eq(marcel_attr_setdetachstate(&a, MARCEL_CREATE_DETACHED), 0);
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, &a, stuck_fn, NULL), 0);
	pthread_t k;
	ck_assert_int_eq(pthread_create(&k, NULL, post_later, (void *)1800000L), 0);
	struct ma_test_capture cap;
	static char msg[4096];
	ma_test_capture_begin(&cap);
	marcel_end();
	ma_test_capture_end(&cap, msg, sizeof(msg));
	pthread_join(k, NULL);
	ck_assert_msg(strstr(msg, "marcel_end has waited 1 s for 1 thread") &&
			      strstr(msg, "'stuck-worker': blocked, detached"),
		      "got: %s", msg);
}
END_TEST

/* ---- POSIX lifetime: main's end does not wait for pthread_create's threads ---- */

static atomic_int computing;

/* Never calls marcel, never ends. */
static any_t compute_forever(any_t arg)
{
	(void)arg;
	atomic_store(&computing, 1);
	for (volatile unsigned long n = 0;; n++)
		;
	return NULL;
}

/* A pool never destroyed: one worker blocked for good, one polling with sleeps, one
 * computing; plus an ordinary marcel thread that marcel_end must still wait for. */
START_TEST(test_end_leaves_posix_threads)
{
	ma_test_init();
	marcel_sem_init(&stuck_sem, 0);
	atomic_store(&ran, 0);
	atomic_store(&computing, 0);
	marcel_t t[3], waited;
	ck_assert_int_eq(marcel_create_posix(&t[0], NULL, stuck_fn, NULL), 0);
	ck_assert_int_eq(marcel_create_posix(&t[1], NULL, wake_late_forever, NULL), 0);
	ck_assert_int_eq(marcel_create_posix(&t[2], NULL, compute_forever, NULL), 0);
	ck_assert_int_eq(marcel_detach(t[0]), 0);
	while (!atomic_load(&computing))
		marcel_yield();
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setdetachstate(&a, MARCEL_CREATE_DETACHED), 0);
	ck_assert_int_eq(marcel_create(&waited, &a, slow_count, NULL), 0);
	double w0 = now_ms();
	marcel_end();
	double wall = now_ms() - w0;
	/* The marcel thread ended before marcel_end returned; the POSIX ones did not. */
	ck_assert_int_eq(atomic_load(&ran), 1);
	ck_assert_msg(wall >= 90.0 && wall < 5000.0, "marcel_end took %.1f ms", wall);
	/* The runtime still runs them: a second marcel_init is refused, the process ends
	 * with them when the test returns. */
	int argc = 1;
	char *argv[] = { (char *)"test", NULL };
	ck_assert_int_eq(marcel_init(&argc, argv), EBUSY);
}
END_TEST

/* Without POSIX threads left, marcel_end takes everything down as before. */
START_TEST(test_end_after_posix_threads_ended)
{
	ma_test_init();
	atomic_store(&ran, 0);
	marcel_t t;
	ck_assert_int_eq(marcel_create_posix(&t, NULL, count_fn, NULL), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_int_eq(marcel_create_posix(&t, NULL, count_fn, NULL), 0);
	ck_assert_int_eq(marcel_detach(t), 0);
	/* Ended, not only past its count: a time slice may stop it in between, and a POSIX
	 * thread still alive rightly keeps the runtime up (test_end_leaves_posix_threads). */
	int nb;
	do {
		marcel_yield();
		ck_assert_int_eq(marcel_threadslist(0, NULL, &nb, DETACHED_ONLY), 0);
	} while (atomic_load(&ran) < 2 || nb > 1); /* main is listed as detached */
	marcel_end();
	ma_test_init();
	marcel_end();
}
END_TEST

/* ---- a program that goes on after a failed marcel_init ---- */

/* What every refused call's line says, once per failed marcel_init. */
#define NOT_RUNNING "the runtime is not running: marcel_init failed ("

static unsigned occurrences(const char *s, const char *what)
{
	unsigned n = 0;
	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

static unsigned lines(const char *s)
{
	return occurrences(s, "\n");
}

/* marcel_init with a bad MARCEL_NVP: it fails, says why in one line, leaves nothing. */
static void init_fails(void)
{
	static char msg[4096];
	setenv("MARCEL_NVP", "many", 1);
	int e = ma_test_init_captured(msg, sizeof(msg));
	unsetenv("MARCEL_NVP");
	ck_assert_int_eq(e, EINVAL);
	ck_assert_msg(lines(msg) == 1 && strstr(msg, "MARCEL_NVP='many'"), "marcel_init said: %s", msg);
	ck_assert_uint_eq(marcel_nbvps(), 0);
	ck_assert_ptr_null(marcel_self());
}

static marcel_barrier_t idiom_barrier;

static any_t barrier_fn(any_t arg)
{
	return (any_t)(marcel_barrier_wait(&idiom_barrier) + (long)arg);
}

/* What marcel-program.c does (a barrier for the threads it creates, a join of each),
 * with every wait the program could make instead: after the failed marcel_init, each
 * fails at once (the barrier waited for ever; the join read the handle a failed
 * marcel_create left unwritten), leaves its object as it found it, and the first of them
 * says why in the one line of its kind; what has no need to wait still works; and the
 * next marcel_init starts a runtime on which the same objects work. */
START_TEST(test_failed_init_idiom)
{
	init_fails();
	marcel_sem_t sem;
	marcel_mutex_t m;
	marcel_cond_t c;
	ck_assert_int_eq(marcel_barrier_init(&idiom_barrier, NULL, 2), 0);
	ck_assert_int_eq(marcel_sem_init(&sem, 0), 0);
	ck_assert_int_eq(marcel_mutex_init(&m, NULL), 0);
	ck_assert_int_eq(marcel_cond_init(&c, NULL), 0);

	static char msg[8192];
	struct ma_test_capture cap;
	/* Results asserted once stderr is back. */
	marcel_t unwritten = (marcel_t)&sem; /* any value: the call never wrote it */
	marcel_t t = unwritten;
	ma_test_capture_begin(&cap);
	int e_create = marcel_create(&t, NULL, count_fn, NULL);
	int e_barrier = marcel_barrier_wait(&idiom_barrier);
	set_errno(0);
	int r_wait = marcel_sem_wait(&sem), e_wait = get_errno();
	set_errno(0);
	marcel_sem_P(&sem);
	int e_p = get_errno();
	int e_lock = marcel_mutex_lock(&m);
	int e_cond = marcel_cond_wait(&c, &m);
	int e_unlock = marcel_mutex_unlock(&m);
	int e_join = marcel_join(t, NULL);
	int e_detach = marcel_detach(t);
	int e_wake = marcel_wake_up_created_thread(t);
	ma_test_capture_end(&cap, msg, sizeof(msg));

	ck_assert_int_eq(e_create, EPERM);
	ck_assert_ptr_eq(t, unwritten);
	ck_assert_int_eq(e_barrier, EPERM);
	/* The refused arrival was not counted: no round is in progress. */
	ck_assert_int_eq(marcel_barrier_destroy(&idiom_barrier), 0);
	ck_assert_int_eq(r_wait, -1);
	ck_assert_int_eq(e_wait, EPERM);
	ck_assert_int_eq(e_p, EPERM);
	int v = -1;
	ck_assert_int_eq(marcel_sem_getvalue(&sem, &v), 0);
	ck_assert_int_eq(v, 0);
	ck_assert_int_eq(e_lock, 0);
	ck_assert_int_eq(e_cond, EPERM);
	ck_assert_int_eq(e_unlock, 0); /* the refused wait kept the mutex */
	/* No thread exists, whatever the handle holds. */
	ck_assert_int_eq(e_join, ESRCH);
	ck_assert_int_eq(e_detach, ESRCH);
	ck_assert_int_eq(e_wake, ESRCH);
	ck_assert_msg(lines(msg) == 1 && occurrences(msg, NOT_RUNNING) == 1, "expected one line, got:\n%s", msg);
	ck_assert_msg(!strncmp(msg, "marcel: marcel_create: " NOT_RUNNING, strlen("marcel: marcel_create: " NOT_RUNNING)),
		      "the line does not name the first refused call: %s", msg);
	ck_assert_msg(strstr(msg, "MARCEL_* variable or --marcel-* argument was refused"),
		      "the line does not say what failed: %s", msg);

	/* Nothing more is said; what need not wait works; timed waits keep their deadline. */
	marcel_barrier_t one;
	ck_assert_int_eq(marcel_barrier_init(&one, NULL, 1), 0);
	struct timespec past = { 0, 0 };
	ma_test_capture_begin(&cap);
	int e_again = marcel_barrier_wait(&idiom_barrier);
	int e_join2 = marcel_join(t, NULL);
	int e_one = marcel_barrier_wait(&one);
	int e_post = marcel_sem_post(&sem);
	int e_take = marcel_sem_wait(&sem);
	set_errno(0);
	int r_timed = marcel_sem_timed_P(&sem, 1), e_timed = get_errno();
	int e_lock2 = marcel_mutex_lock(&m);
	int e_ctimed = marcel_cond_timedwait(&c, &m, &past);
	int e_unlock2 = marcel_mutex_unlock(&m);
	marcel_end(); /* nothing to stop */
	ma_test_capture_end(&cap, msg, sizeof(msg));
	ck_assert_int_eq(e_again, EPERM);
	ck_assert_int_eq(e_join2, ESRCH);
	ck_assert_int_eq(e_one, MARCEL_BARRIER_SERIAL_THREAD);
	ck_assert_int_eq(e_post, 0);
	ck_assert_int_eq(e_take, 0);
	ck_assert_int_eq(r_timed, 0);
	ck_assert_int_eq(e_timed, ETIMEDOUT);
	ck_assert_int_eq(e_lock2, 0);
	ck_assert_int_eq(e_ctimed, ETIMEDOUT);
	ck_assert_int_eq(e_unlock2, 0);
	ck_assert_msg(msg[0] == 0, "said again: %s", msg);

	/* The next marcel_init works, and so do the objects. */
	ma_test_init();
	ck_assert_int_eq(marcel_barrier_init(&idiom_barrier, NULL, 2), 0);
	ck_assert_int_eq(marcel_create(&t, NULL, barrier_fn, (any_t)10L), 0);
	int mine = marcel_barrier_wait(&idiom_barrier);
	any_t r;
	ck_assert_int_eq(marcel_join(t, &r), 0);
	/* One of the two got MARCEL_BARRIER_SERIAL_THREAD (-1), the other 0. */
	ck_assert_int_eq(mine + (long)r - 10, MARCEL_BARRIER_SERIAL_THREAD);
	ck_assert_int_eq(marcel_sem_getvalue(&sem, &v), 0);
	ck_assert_int_eq(v, 0);
	marcel_end();

	/* After a marcel_end, the runtime is not running either, but no marcel_init failed:
	 * the calls refused say nothing (their error is all there is to say). */
	ma_test_capture_begin(&cap);
	e_create = marcel_create(&t, NULL, count_fn, NULL);
	ma_test_capture_end(&cap, msg, sizeof(msg));
	ck_assert_int_eq(e_create, EPERM);
	ck_assert_msg(msg[0] == 0, "said: %s", msg);
}
END_TEST

/* Each failed marcel_init gets its own line, from the first call refused after it, and the
 * line says which start-up step failed; a barrier in yield mode (marcel-program.c's) is
 * refused as one in sleep mode. */
START_TEST(test_failed_init_each_failure_said)
{
	static char msg[8192];
	struct ma_test_capture cap;
	init_fails();
	marcel_t t = (marcel_t)&cap;
	ma_test_capture_begin(&cap);
	int e_join = marcel_join(t, NULL);
	int e_create = marcel_create(&t, NULL, count_fn, NULL);
	ma_test_capture_end(&cap, msg, sizeof(msg));
	ck_assert_int_eq(e_join, ESRCH);
	ck_assert_int_eq(e_create, EPERM);
	ck_assert_msg(lines(msg) == 1 && strstr(msg, "marcel: marcel_join: " NOT_RUNNING), "got:\n%s", msg);

	setenv("MARCEL_DEBUG", "1", 1);
	setenv("MARCEL_DEBUG_FAIL", "carriers", 1);
	int e = ma_test_init_captured(msg, sizeof(msg));
	unsetenv("MARCEL_DEBUG_FAIL");
	unsetenv("MARCEL_DEBUG");
	ck_assert_int_eq(e, ECANCELED);
	marcel_barrierattr_t a;
	ck_assert_int_eq(marcel_barrierattr_init(&a), 0);
	ck_assert_int_eq(marcel_barrierattr_setmode(&a, MARCEL_BARRIER_YIELD_MODE), 0);
	marcel_barrier_t b;
	ck_assert_int_eq(marcel_barrier_init(&b, &a, 3), 0);
	ma_test_capture_begin(&cap);
	int e_b1 = marcel_barrier_wait(&b);
	int e_b2 = marcel_barrier_wait(&b);
	ma_test_capture_end(&cap, msg, sizeof(msg));
	ck_assert_int_eq(e_b1, EPERM);
	ck_assert_int_eq(e_b2, EPERM);
	ck_assert_int_eq(marcel_barrier_destroy(&b), 0);
	ck_assert_msg(lines(msg) == 1 && strstr(msg, "marcel: marcel_barrier_wait: " NOT_RUNNING) &&
			      strstr(msg, "carriers failed on purpose"),
		      "got:\n%s", msg);

	ma_test_init();
	marcel_end();
}
END_TEST

/* tests/marcel-program.c, a Marcel program that never checks marcel_init, given a value
 * marcel_init refuses: it ends (it waited at its barrier for ever), with its failure
 * status, and the refused calls said why once. */
START_TEST(test_failed_init_marcel_program)
{
	int status;
	char *out = ma_test_run_capture("MARCEL_HWPRIO=bogus timeout 60 " MA_TESTS_DIR "/marcel-program 2>&1", &status);
	ck_assert_msg(WIFEXITED(status), "marcel-program did not exit (status %#x):\n%s", status, out);
	int code = WEXITSTATUS(status);
	ck_assert_msg(code != 0 && code != 124 && code != 127, "marcel-program exited with %d:\n%s", code, out);
	ck_assert_msg(strstr(out, "MARCEL_HWPRIO='bogus'"), "marcel_init did not say why:\n%s", out);
	ck_assert_msg(occurrences(out, NOT_RUNNING) == 1, "expected one line saying why calls fail:\n%s", out);
	free(out);
}
END_TEST

static void populate_failed_init(TCase *tc)
{
	tcase_add_test(tc, test_failed_init_idiom);
	tcase_add_test(tc, test_failed_init_each_failure_said);
	tcase_add_test(tc, test_failed_init_marcel_program);
}

static void populate_diag(TCase *tc)
{
	tcase_add_test(tc, test_print_threads_names_unstarted);
	tcase_add_test(tc, test_debug_join_names_unstarted);
	tcase_add_test(tc, test_end_waits_without_polling);
	tcase_add_test(tc, test_end_names_what_it_waits_for);
	tcase_add_test(tc, test_end_leaves_posix_threads);
	tcase_add_test(tc, test_end_after_posix_threads_ended);
}

static void populate_sleep(TCase *tc)
{
	tcase_add_loop_test(tc, test_sleeper_on_busy_vp, SLEEP_DELAY, SLEEP_SEM + 1);
	tcase_add_test(tc, test_sleeper_armed_late);
}

static void populate_end(TCase *tc)
{
	tcase_add_test(tc, test_end_with_vp0_disabled);
	tcase_add_test(tc, test_end_with_all_but_one_disabled);
}

static void populate_bubbles(TCase *tc)
{
	tcase_add_loop_test(tc, test_root_insert_then_wake, 0, (int)NB_STRATEGIES * 3);
	tcase_add_test(tc, test_rewake_waits_for_parent);
}

int main(void)
{
	Suite *s = suite_create("hangs");
	ma_test_add_both(s, "busy_vp_timers", populate_sleep, 60);
	ma_test_add_both(s, "end_disabled_vp", populate_end, 60);
	ma_test_add_both(s, "root_bubble_wake", populate_bubbles, 120);
	ma_test_add_both(s, "diagnostics", populate_diag, 60);
	/* No topology of its own to test: the runtime is not running. */
	ma_test_add_one(s, "failed_init", ma_test_setup_real, populate_failed_init, 90);
	return ma_test_run(s);
}
