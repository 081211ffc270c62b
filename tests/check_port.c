/*
 * The pthread porting path: <marcel/pthread.h> and examples/pthread_port.
 *
 *  - examples: the POSIX original and its marcel port print the same text and exit 0
 *    (the port runs on the fixture's topology, which it inherits through the
 *    environment), and both refuse a bad worker count with status 2 and a message;
 *  - mapping: pthread-style code written with the pthread_* and sem_* names, compiled
 *    through <marcel/pthread.h>, behaves as POSIX says and runs on marcel threads.
 *
 * This file includes <marcel/pthread.h> once before <semaphore.h> and once after, the
 * second inclusion being the one that maps sem_* (ma_test.h has already pulled in
 * <stdio.h>, <stdlib.h> and <marcel.h>, so the header also copes with system headers
 * that come first). Threads do not call ck_assert (Check's failure path is not meant
 * for other threads): they record failures with IN_THREAD_CHECK and the test body
 * asserts there were none.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include "ma_test.h"
#include <marcel/pthread.h>
#include <semaphore.h>
#include <marcel/pthread.h>

#ifndef MA_EXAMPLES_DIR
#error "MA_EXAMPLES_DIR (the build's examples directory) must be defined"
#endif

#define I2P(i) ((void *)(intptr_t)(i))
#define P2I(p) ((int)(intptr_t)(p))

/* ------------------------------------------------------------------ compile-time mapping */

#define SAME_TYPE(a, b) _Static_assert(__builtin_types_compatible_p(a, b), #a " is not " #b)
SAME_TYPE(pthread_t, marcel_t);
SAME_TYPE(pthread_attr_t, marcel_attr_t);
SAME_TYPE(pthread_mutex_t, marcel_mutex_t);
SAME_TYPE(pthread_mutexattr_t, marcel_mutexattr_t);
SAME_TYPE(pthread_cond_t, marcel_cond_t);
SAME_TYPE(pthread_condattr_t, marcel_condattr_t);
SAME_TYPE(pthread_barrier_t, marcel_barrier_t);
SAME_TYPE(pthread_barrierattr_t, marcel_barrierattr_t);
SAME_TYPE(pthread_rwlock_t, marcel_rwlock_t);
SAME_TYPE(pthread_rwlockattr_t, marcel_rwlockattr_t);
SAME_TYPE(pthread_spinlock_t, marcel_spinlock_t);
SAME_TYPE(pthread_once_t, marcel_once_t);
SAME_TYPE(pthread_key_t, marcel_key_t);
SAME_TYPE(sem_t, marcel_sem_t);
SAME_TYPE(__typeof__(&pthread_mutex_lock), __typeof__(&marcel_mutex_lock));
SAME_TYPE(__typeof__(&pthread_create), __typeof__(&marcel_create));
SAME_TYPE(__typeof__(&sem_wait), __typeof__(&marcel_sem_wait));

_Static_assert(PTHREAD_MUTEX_NORMAL == MARCEL_MUTEX_NORMAL, "mutex kind");
_Static_assert(PTHREAD_MUTEX_RECURSIVE == MARCEL_MUTEX_RECURSIVE, "mutex kind");
_Static_assert(PTHREAD_MUTEX_ERRORCHECK == MARCEL_MUTEX_ERRORCHECK, "mutex kind");
_Static_assert(PTHREAD_MUTEX_DEFAULT == MARCEL_MUTEX_DEFAULT, "mutex kind");
_Static_assert(PTHREAD_CREATE_DETACHED == MARCEL_CREATE_DETACHED, "detach state");
_Static_assert(PTHREAD_CREATE_JOINABLE == MARCEL_CREATE_JOINABLE, "detach state");
_Static_assert(PTHREAD_BARRIER_SERIAL_THREAD == MARCEL_BARRIER_SERIAL_THREAD, "barrier");
_Static_assert(PTHREAD_PROCESS_SHARED == MARCEL_PROCESS_SHARED, "pshared");
_Static_assert(PTHREAD_KEYS_MAX == MARCEL_KEYS_MAX, "keys");
_Static_assert(PTHREAD_STACK_MIN == MARCEL_STACK_MIN, "stack");
_Static_assert(SEM_VALUE_MAX == MARCEL_SEM_VALUE_MAX, "sem");
#ifndef MARCEL_PTHREAD_SEM_H
#error "including <marcel/pthread.h> again after <semaphore.h> did not map sem_*"
#endif

/* ------------------------------------------------------------------ helpers */

/* First failure seen in a thread: its line (0: none). */
static int thread_failed_line;
#define IN_THREAD_CHECK(cond)                                                              \
	do {                                                                               \
		if (!(cond)) {                                                             \
			int zero_ = 0;                                                     \
			__atomic_compare_exchange_n(&thread_failed_line, &zero_, __LINE__, 0, \
						    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);   \
		}                                                                          \
	} while (0)

static void thread_checks_reset(void)
{
	__atomic_store_n(&thread_failed_line, 0, __ATOMIC_SEQ_CST);
}

static void thread_checks_assert(void)
{
	int line = __atomic_load_n(&thread_failed_line, __ATOMIC_SEQ_CST);
	ck_assert_msg(line == 0, "a thread check failed at line %d", line);
}

/* A pthread-style thread must be a marcel thread on some VP. */
static int on_marcel_thread(void)
{
	return marcel_self() != NULL && pthread_equal(pthread_self(), marcel_self()) &&
	       marcel_current_vp() >= 0 && marcel_current_vp() < (int)marcel_nbvps();
}

static void start(void)
{
	ma_test_init();
	thread_checks_reset();
}

static void finish(void)
{
	thread_checks_assert();
	marcel_end();
}

static struct timespec deadline_in_ms(clockid_t clock, long ms)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

static long ms_since(clockid_t clock, const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(clock, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1000 + (t1.tv_nsec - t0->tv_nsec) / 1000000;
}

/* ------------------------------------------------------------------ examples */


/* Runs the original with @p args and the port with @p port_args; they must agree. */
static void compare_examples(const char *args, const char *port_args)
{
	const char *dir = MA_EXAMPLES_DIR "/pthread_port";
	char original[1024], ported[1024];
	snprintf(original, sizeof(original), "%s/original", dir);
	snprintf(ported, sizeof(ported), "%s/ported", dir);
	ck_assert_msg(access(original, X_OK) == 0 && access(ported, X_OK) == 0,
		      "%s/{original,ported} not built: run make in the build's examples directory", dir);

	char cmd[2100];
	int st_o, st_p;
	snprintf(cmd, sizeof(cmd), "%s %s", original, args);
	char *out_o = ma_test_run_capture(cmd, &st_o);
	snprintf(cmd, sizeof(cmd), "%s %s", ported, port_args);
	char *out_p = ma_test_run_capture(cmd, &st_p);

	ck_assert_msg(WIFEXITED(st_o) && WEXITSTATUS(st_o) == 0, "original %s: status %#x", args, st_o);
	ck_assert_msg(WIFEXITED(st_p) && WEXITSTATUS(st_p) == 0, "ported %s (topology %s): status %#x",
		      port_args, ma_test_topology ? ma_test_topology : "this machine", st_p);
	ck_assert_msg(strstr(out_o, "key destructors counted 64 tasks and 400000 samples") != NULL,
		      "original %s printed:\n%s", args, out_o);
	ck_assert_msg(strcmp(out_o, out_p) == 0, "outputs differ (args '%s')\n--- original\n%s--- ported\n%s",
		      port_args, out_o, out_p);
	free(out_o);
	free(out_p);
}

START_TEST(test_examples_same_output)
{
	/* The runtime is not started here: the port is a separate process. */
	compare_examples("", "");
	compare_examples("1", "1");
	compare_examples("16", "16");
	compare_examples("3", "--marcel-nvp 2 3");  /* marcel_init removes its own options */
}
END_TEST

/* Runs examples/pthread_port/@p prog with @p args: it must stop with status 2 and say on
 * stderr what was wrong, naming @p named (and the accepted range, when @p range), before
 * printing anything on stdout. */
static void expect_refused(const char *prog, const char *args, const char *named, int range)
{
	char cmd[2100], out_file[] = "/tmp/check_port-out-XXXXXX";
	int fd = mkstemp(out_file), st;
	ck_assert_msg(fd >= 0, "mkstemp: %s", strerror(errno));
	close(fd);
	/* stderr is what is captured; stdout goes to the file. */
	snprintf(cmd, sizeof(cmd), "%s/pthread_port/%s %s 2>&1 >%s", MA_EXAMPLES_DIR, prog, args, out_file);
	char *err = ma_test_run_capture(cmd, &st);
	FILE *f = fopen(out_file, "r");
	int out_empty = f != NULL && fgetc(f) == EOF;
	if (f)
		fclose(f);
	unlink(out_file);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2, "%s %s: status %#x, expected exit 2; stderr:\n%s",
		      prog, args, st, err);
	ck_assert_msg(strstr(err, named) != NULL, "%s %s: stderr does not name %s:\n%s", prog, args, named, err);
	ck_assert_msg(!range || strstr(err, "from 1 to 64") != NULL, "%s %s: stderr does not give the range:\n%s",
		      prog, args, err);
	ck_assert_msg(out_empty, "%s %s: printed on stdout although refused", prog, args);
	free(err);
}

START_TEST(test_examples_bad_arguments)
{
	const char *progs[] = { "original", "ported" };
	for (int i = 0; i < 2; i++) {
		expect_refused(progs[i], "abc", "workers 'abc'", 1);
		expect_refused(progs[i], "65", "workers '65'", 1);  /* no longer clamped to 64 */
		expect_refused(progs[i], "0", "workers '0'", 1);
		expect_refused(progs[i], "4x", "workers '4x'", 1);
		expect_refused(progs[i], "4 5", "'5'", 0);
	}
	/* marcel_init refuses its own options with EINVAL, which the port turns into 2. */
	expect_refused("ported", "--marcel-nvp abc", "--marcel-nvp", 0);

	int st;
	char *out = ma_test_run_capture(MA_EXAMPLES_DIR "/pthread_port/ported --help", &st);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "usage: ported [workers]") != NULL,
		      "ported --help: status %#x:\n%s", st, out);
	free(out);
}
END_TEST

/* ------------------------------------------------------------------ threads */

static int cleanup_ran;

static void cleanup_handler(void *arg)
{
	__atomic_add_fetch(&cleanup_ran, P2I(arg), __ATOMIC_SEQ_CST);
}

static void *thread_body(void *arg)
{
	IN_THREAD_CHECK(on_marcel_thread());
	IN_THREAD_CHECK(sched_yield() == 0);
	IN_THREAD_CHECK(pthread_yield() == 0);
	IN_THREAD_CHECK(on_marcel_thread());  /* still one after yielding */

	int old = -1;
	IN_THREAD_CHECK(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old) == 0);
	IN_THREAD_CHECK(old == PTHREAD_CANCEL_ENABLE);
	pthread_testcancel();

	pthread_cleanup_push(cleanup_handler, I2P(1));
	pthread_cleanup_push(cleanup_handler, I2P(100));
	pthread_cleanup_pop(0);
	pthread_cleanup_pop(1);

	if (P2I(arg) % 2)
		pthread_exit(I2P(P2I(arg) * 10));
	return I2P(P2I(arg) * 10);
}

static int detached_done;

static void *detached_body(void *arg)
{
	IN_THREAD_CHECK(on_marcel_thread());
	__atomic_add_fetch(&detached_done, 1, __ATOMIC_SEQ_CST);
	return arg;
}

static void *join_self(void *arg)
{
	IN_THREAD_CHECK(pthread_join(pthread_self(), NULL) == EDEADLK);
	char name[MARCEL_MAXNAMESIZE];
	IN_THREAD_CHECK(pthread_setname_np(pthread_self(), "porter") == 0);
	IN_THREAD_CHECK(pthread_getname_np(pthread_self(), name, sizeof(name)) == 0);
	IN_THREAD_CHECK(strcmp(name, "porter") == 0);
	return arg;
}

START_TEST(test_threads)
{
	start();
	ck_assert_ptr_nonnull(pthread_self());
	ck_assert(pthread_equal(pthread_self(), marcel_self()));
	ck_assert_int_eq(pthread_getconcurrency(), (int)marcel_nbvps());
	ck_assert_int_eq(pthread_setconcurrency(4), 0);

	pthread_attr_t attr;
	size_t size = 1;
	int state = -1, scope = -1;
	ck_assert_int_eq(pthread_attr_init(&attr), 0);
	ck_assert_int_eq(pthread_attr_setstacksize(&attr, 64 * 1024), 0);
	ck_assert_int_eq(pthread_attr_getstacksize(&attr, &size), 0);
	ck_assert_uint_eq(size, 64 * 1024);
	ck_assert_int_eq(pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN - 1), EINVAL);
	ck_assert_int_eq(pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_JOINABLE), 0);
	ck_assert_int_eq(pthread_attr_getdetachstate(&attr, &state), 0);
	ck_assert_int_eq(state, PTHREAD_CREATE_JOINABLE);
	ck_assert_int_eq(pthread_attr_setscope(&attr, PTHREAD_SCOPE_PROCESS), 0);
	ck_assert_int_eq(pthread_attr_setscope(&attr, PTHREAD_SCOPE_SYSTEM), ENOTSUP);
	ck_assert_int_eq(pthread_attr_getscope(&attr, &scope), 0);
	ck_assert_int_eq(scope, PTHREAD_SCOPE_PROCESS);

	enum { N = 16 };
	pthread_t t[N];
	__atomic_store_n(&cleanup_ran, 0, __ATOMIC_SEQ_CST);
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(pthread_create(&t[i], i % 2 ? &attr : NULL, thread_body, I2P(i)), 0);
	for (int i = 0; i < N; i++) {
		void *ret = NULL;
		ck_assert_int_eq(pthread_join(t[i], &ret), 0);
		ck_assert_int_eq(P2I(ret), i * 10);
	}
	ck_assert_int_eq(__atomic_load_n(&cleanup_ran, __ATOMIC_SEQ_CST), N);

	/* Detached by attribute and by pthread_detach. */
	pthread_t d;
	__atomic_store_n(&detached_done, 0, __ATOMIC_SEQ_CST);
	ck_assert_int_eq(pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED), 0);
	ck_assert_int_eq(pthread_create(&d, &attr, detached_body, NULL), 0);
	ck_assert_int_eq(pthread_create(&d, NULL, detached_body, NULL), 0);
	ck_assert_int_eq(pthread_detach(d), 0);
	ck_assert_int_eq(pthread_attr_destroy(&attr), 0);
	while (__atomic_load_n(&detached_done, __ATOMIC_SEQ_CST) < 2)
		sched_yield();

	pthread_t s;
	ck_assert_int_eq(pthread_create(&s, NULL, join_self, NULL), 0);
	ck_assert_int_eq(pthread_join(s, NULL), 0);
	finish();
}
END_TEST

/* ------------------------------------------------------------------ mutexes */

static pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;
enum { LOOPS = 5000, NTHREADS = 8 };

static void *count_with_mutex(void *arg)
{
	(void)arg;
	IN_THREAD_CHECK(on_marcel_thread());
	for (int i = 0; i < LOOPS; i++) {
		IN_THREAD_CHECK(pthread_mutex_lock(&counter_lock) == 0);
		long v = counter;
		if (i % 64 == 0)
			sched_yield();  /* hold the lock across a switch now and then */
		counter = v + 1;
		IN_THREAD_CHECK(pthread_mutex_unlock(&counter_lock) == 0);
	}
	return NULL;
}

static void *try_other(void *arg)
{
	pthread_mutex_t *m = arg;
	IN_THREAD_CHECK(pthread_mutex_trylock(m) == EBUSY);
	IN_THREAD_CHECK(pthread_mutex_unlock(m) == EPERM);
	struct timespec past = deadline_in_ms(CLOCK_REALTIME, -1000);
	IN_THREAD_CHECK(pthread_mutex_timedlock(m, &past) == ETIMEDOUT);
	return NULL;
}

static void run_in_thread(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, fn, arg), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
}

START_TEST(test_mutex)
{
	start();
	counter = 0;
	pthread_t t[NTHREADS];
	for (int i = 0; i < NTHREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, count_with_mutex, NULL), 0);
	for (int i = 0; i < NTHREADS; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	ck_assert_int_eq(counter, (long)NTHREADS * LOOPS);

	pthread_mutexattr_t ma;
	pthread_mutex_t m;
	int kind = -1;

	/* Error checking. */
	ck_assert_int_eq(pthread_mutexattr_init(&ma), 0);
	ck_assert_int_eq(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK), 0);
	ck_assert_int_eq(pthread_mutexattr_gettype(&ma, &kind), 0);
	ck_assert_int_eq(kind, PTHREAD_MUTEX_ERRORCHECK);
	ck_assert_int_eq(pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED), ENOTSUP);
	ck_assert_int_eq(pthread_mutex_init(&m, &ma), 0);
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	ck_assert_int_eq(pthread_mutex_lock(&m), EDEADLK);
	run_in_thread(try_other, &m);
	ck_assert_int_eq(pthread_mutex_destroy(&m), EBUSY);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&m), EPERM);
	ck_assert_int_eq(pthread_mutex_destroy(&m), 0);

	/* Recursive, by attribute and by static initialiser. */
	ck_assert_int_eq(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE), 0);
	ck_assert_int_eq(pthread_mutex_init(&m, &ma), 0);
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	ck_assert_int_eq(pthread_mutex_trylock(&m), 0);
	run_in_thread(try_other, &m);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&m), EPERM);
	ck_assert_int_eq(pthread_mutex_destroy(&m), 0);
	ck_assert_int_eq(pthread_mutexattr_destroy(&ma), 0);

	pthread_mutex_t r = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	ck_assert_int_eq(pthread_mutex_lock(&r), 0);
	ck_assert_int_eq(pthread_mutex_lock(&r), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&r), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&r), 0);
	finish();
}
END_TEST

/* ------------------------------------------------------------------ condition variables */

enum { ITEMS = 2000, SLOTS = 4 };
static struct {
	pthread_mutex_t lock;
	pthread_cond_t nonempty, nonfull;
	int buf[SLOTS];
	unsigned head, tail;
} bq = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, { 0 }, 0, 0 };

static void *producer(void *arg)
{
	int base = P2I(arg);
	for (int i = 0; i < ITEMS; i++) {
		pthread_mutex_lock(&bq.lock);
		while (bq.tail - bq.head == SLOTS)
			pthread_cond_wait(&bq.nonfull, &bq.lock);
		bq.buf[bq.tail++ % SLOTS] = base + i;
		pthread_cond_signal(&bq.nonempty);
		pthread_mutex_unlock(&bq.lock);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	long sum = 0;
	(void)arg;
	IN_THREAD_CHECK(on_marcel_thread());
	for (int i = 0; i < ITEMS; i++) {
		pthread_mutex_lock(&bq.lock);
		while (bq.tail == bq.head)
			pthread_cond_wait(&bq.nonempty, &bq.lock);
		sum += bq.buf[bq.head++ % SLOTS];
		pthread_cond_broadcast(&bq.nonfull);
		pthread_mutex_unlock(&bq.lock);
	}
	return (void *)sum;
}

START_TEST(test_cond)
{
	start();
	bq.head = bq.tail = 0;
	pthread_t p[2], c[2];
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(pthread_create(&c[i], NULL, consumer, NULL), 0);
		ck_assert_int_eq(pthread_create(&p[i], NULL, producer, I2P(i * ITEMS)), 0);
	}
	long total = 0;
	for (int i = 0; i < 2; i++) {
		void *ret;
		ck_assert_int_eq(pthread_join(p[i], NULL), 0);
		ck_assert_int_eq(pthread_join(c[i], &ret), 0);
		total += (long)ret;
	}
	/* Items 0 .. 2*ITEMS-1, each consumed once. */
	ck_assert_int_eq(total, (long)(2 * ITEMS) * (2 * ITEMS - 1) / 2);

	/* A monotonic-clock condition times out. */
	pthread_condattr_t ca;
	pthread_cond_t cv;
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	clockid_t clock = CLOCK_REALTIME;
	ck_assert_int_eq(pthread_condattr_init(&ca), 0);
	ck_assert_int_eq(pthread_condattr_setclock(&ca, CLOCK_MONOTONIC), 0);
	ck_assert_int_eq(pthread_condattr_getclock(&ca, &clock), 0);
	ck_assert_int_eq(clock, CLOCK_MONOTONIC);
	ck_assert_int_eq(pthread_cond_init(&cv, &ca), 0);
	ck_assert_int_eq(pthread_condattr_destroy(&ca), 0);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct timespec dl = deadline_in_ms(CLOCK_MONOTONIC, 30);
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	int err;
	while ((err = pthread_cond_timedwait(&cv, &m, &dl)) == 0)
		;  /* spurious wake-ups are allowed */
	ck_assert_int_eq(err, ETIMEDOUT);
	ck_assert_int_ge(ms_since(CLOCK_MONOTONIC, &t0), 29);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert_int_eq(pthread_cond_destroy(&cv), 0);
	finish();
}
END_TEST

/* ------------------------------------------------------------------ barriers */

enum { BTHREADS = 6, ROUNDS = 50 };
static pthread_barrier_t barrier;
static int arrived[ROUNDS], serials[ROUNDS];

static void *barrier_body(void *arg)
{
	(void)arg;
	IN_THREAD_CHECK(on_marcel_thread());
	for (int r = 0; r < ROUNDS; r++) {
		__atomic_add_fetch(&arrived[r], 1, __ATOMIC_SEQ_CST);
		int ret = pthread_barrier_wait(&barrier);
		IN_THREAD_CHECK(ret == 0 || ret == PTHREAD_BARRIER_SERIAL_THREAD);
		IN_THREAD_CHECK(__atomic_load_n(&arrived[r], __ATOMIC_SEQ_CST) == BTHREADS);
		if (ret == PTHREAD_BARRIER_SERIAL_THREAD)
			__atomic_add_fetch(&serials[r], 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

START_TEST(test_barrier)
{
	start();
	memset(arrived, 0, sizeof(arrived));
	memset(serials, 0, sizeof(serials));
	pthread_barrierattr_t ba;
	ck_assert_int_eq(pthread_barrierattr_init(&ba), 0);
	ck_assert_int_eq(pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED), ENOTSUP);
	ck_assert_int_eq(pthread_barrier_init(&barrier, &ba, BTHREADS), 0);
	ck_assert_int_eq(pthread_barrierattr_destroy(&ba), 0);
	pthread_t t[BTHREADS];
	for (int i = 0; i < BTHREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, barrier_body, NULL), 0);
	for (int i = 0; i < BTHREADS; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	for (int r = 0; r < ROUNDS; r++)
		ck_assert_msg(serials[r] == 1, "round %d: %d serial threads", r, serials[r]);
	ck_assert_int_eq(pthread_barrier_destroy(&barrier), 0);
	finish();
}
END_TEST

/* ------------------------------------------------------------------ rwlocks */

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static long copy_a, copy_b;   /* equal whenever nobody holds rw for writing */

static void *rw_body(void *arg)
{
	int writer = P2I(arg) % 4 == 0;
	for (int i = 0; i < 500; i++) {
		if (writer) {
			IN_THREAD_CHECK(pthread_rwlock_wrlock(&rw) == 0);
			copy_a++;
			sched_yield();
			copy_b++;
		} else {
			IN_THREAD_CHECK(pthread_rwlock_rdlock(&rw) == 0);
			IN_THREAD_CHECK(copy_a == copy_b);
			sched_yield();
			IN_THREAD_CHECK(copy_a == copy_b);
		}
		IN_THREAD_CHECK(pthread_rwlock_unlock(&rw) == 0);
	}
	return NULL;
}

static void *rw_try(void *arg)
{
	int writer_holds = P2I(arg);
	IN_THREAD_CHECK(pthread_rwlock_trywrlock(&rw) == EBUSY);
	IN_THREAD_CHECK(pthread_rwlock_tryrdlock(&rw) == (writer_holds ? EBUSY : 0));
	if (!writer_holds)
		IN_THREAD_CHECK(pthread_rwlock_unlock(&rw) == 0);
	struct timespec past = deadline_in_ms(CLOCK_REALTIME, -1000);
	IN_THREAD_CHECK(pthread_rwlock_timedwrlock(&rw, &past) == ETIMEDOUT);
	return NULL;
}

START_TEST(test_rwlock)
{
	start();
	copy_a = copy_b = 0;
	pthread_t t[NTHREADS];
	for (int i = 0; i < NTHREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, rw_body, I2P(i)), 0);
	for (int i = 0; i < NTHREADS; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	ck_assert_int_eq(copy_a, 2 * 500);
	ck_assert_int_eq(copy_b, copy_a);

	ck_assert_int_eq(pthread_rwlock_rdlock(&rw), 0);
	run_in_thread(rw_try, I2P(0));
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_wrlock(&rw), 0);
	run_in_thread(rw_try, I2P(1));
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);

	pthread_rwlockattr_t ra;
	pthread_rwlock_t l;
	ck_assert_int_eq(pthread_rwlockattr_init(&ra), 0);
	ck_assert_int_eq(pthread_rwlock_init(&l, &ra), 0);
	ck_assert_int_eq(pthread_rwlock_tryrdlock(&l), 0);
	ck_assert_int_eq(pthread_rwlock_unlock(&l), 0);
	ck_assert_int_eq(pthread_rwlock_destroy(&l), 0);
	ck_assert_int_eq(pthread_rwlockattr_destroy(&ra), 0);
	finish();
}
END_TEST

/* ------------------------------------------------------------------ spin locks, once */

static pthread_spinlock_t spin;
static long spin_counter;

static void *spin_body(void *arg)
{
	(void)arg;
	for (int i = 0; i < LOOPS; i++) {
		IN_THREAD_CHECK(pthread_spin_lock(&spin) == 0);
		spin_counter++;
		IN_THREAD_CHECK(pthread_spin_unlock(&spin) == 0);
	}
	return NULL;
}

static void *spin_try(void *arg)
{
	(void)arg;
	IN_THREAD_CHECK(pthread_spin_trylock(&spin) == EBUSY);
	return NULL;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int once_runs, once_ready;

static void once_init(void)
{
	__atomic_add_fetch(&once_runs, 1, __ATOMIC_SEQ_CST);
	sched_yield();  /* let the others arrive while it runs */
	__atomic_store_n(&once_ready, 1, __ATOMIC_SEQ_CST);
}

static void *once_body(void *arg)
{
	(void)arg;
	IN_THREAD_CHECK(pthread_once(&once, once_init) == 0);
	IN_THREAD_CHECK(__atomic_load_n(&once_ready, __ATOMIC_SEQ_CST) == 1);
	return NULL;
}

START_TEST(test_spin_once)
{
	start();
	spin_counter = 0;
	ck_assert_int_eq(pthread_spin_init(&spin, PTHREAD_PROCESS_SHARED), ENOTSUP);
	ck_assert_int_eq(pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE), 0);
	pthread_t t[NTHREADS];
	for (int i = 0; i < NTHREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, spin_body, NULL), 0);
	for (int i = 0; i < NTHREADS; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	ck_assert_int_eq(spin_counter, (long)NTHREADS * LOOPS);
	ck_assert_int_eq(pthread_spin_lock(&spin), 0);
	run_in_thread(spin_try, NULL);
	ck_assert_int_eq(pthread_spin_unlock(&spin), 0);
	ck_assert_int_eq(pthread_spin_destroy(&spin), 0);

	/* A fresh control word per run: the test runs twice in one process without fork. */
	once = (pthread_once_t)PTHREAD_ONCE_INIT;
	once_runs = once_ready = 0;
	enum { OT = 16 };
	pthread_t o[OT];
	for (int i = 0; i < OT; i++)
		ck_assert_int_eq(pthread_create(&o[i], NULL, once_body, NULL), 0);
	for (int i = 0; i < OT; i++)
		ck_assert_int_eq(pthread_join(o[i], NULL), 0);
	ck_assert_int_eq(once_runs, 1);
	ck_assert_int_eq(pthread_once(&once, once_init), 0);
	ck_assert_int_eq(once_runs, 1);
	finish();
}
END_TEST

/* ------------------------------------------------------------------ keys */

static pthread_key_t key;
static int destructor_calls;
static long destructor_sum;

static void key_destructor(void *value)
{
	int *v = value;
	IN_THREAD_CHECK(on_marcel_thread());  /* runs in the ending thread */
	__atomic_add_fetch(&destructor_calls, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&destructor_sum, *v, __ATOMIC_SEQ_CST);
	free(v);
}

static void *key_body(void *arg)
{
	int i = P2I(arg);
	IN_THREAD_CHECK(pthread_getspecific(key) == NULL);
	if (i == 0)
		return NULL;  /* no value: no destructor call */
	int *v = malloc(sizeof(*v));
	IN_THREAD_CHECK(v != NULL);
	*v = i;
	IN_THREAD_CHECK(pthread_setspecific(key, v) == 0);
	for (int k = 0; k < 10; k++) {
		sched_yield();  /* may move to another worker: the value follows the thread */
		IN_THREAD_CHECK(pthread_getspecific(key) == v);
	}
	return NULL;
}

START_TEST(test_keys)
{
	start();
	destructor_calls = 0;
	destructor_sum = 0;
	ck_assert_int_eq(pthread_key_create(&key, key_destructor), 0);
	int mine = 7;
	ck_assert_int_eq(pthread_setspecific(key, &mine), 0);
	enum { KT = 12 };
	pthread_t t[KT];
	for (int i = 0; i < KT; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, key_body, I2P(i)), 0);
	for (int i = 0; i < KT; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	ck_assert_int_eq(destructor_calls, KT - 1);
	ck_assert_int_eq(destructor_sum, (long)KT * (KT - 1) / 2);
	ck_assert_ptr_eq(pthread_getspecific(key), &mine);
	ck_assert_int_eq(pthread_setspecific(key, NULL), 0);
	ck_assert_int_eq(pthread_key_delete(key), 0);
	finish();
}
END_TEST

/* ------------------------------------------------------------------ semaphores */

static sem_t items;
enum { SEM_ITEMS = 1000 };

static void *sem_producer(void *arg)
{
	(void)arg;
	for (int i = 0; i < SEM_ITEMS; i++)
		IN_THREAD_CHECK(sem_post(&items) == 0);
	return NULL;
}

static void *sem_consumer(void *arg)
{
	(void)arg;
	IN_THREAD_CHECK(on_marcel_thread());
	for (int i = 0; i < SEM_ITEMS; i++)
		IN_THREAD_CHECK(sem_wait(&items) == 0);
	return NULL;
}

static sem_t gate;
static int gate_passed;

static void *gate_waiter(void *arg)
{
	(void)arg;
	IN_THREAD_CHECK(sem_wait(&gate) == 0);
	__atomic_store_n(&gate_passed, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* sem_destroy's result, and errno as it left it. A function of its own: its caller has
 * slept (marcel_usleep) and may resume on another kernel thread, while the compiler may
 * keep errno's address from before the sleep (glibc's __errno_location is const; the
 * README says so under "Blocking sections"). With that address the caller wrote and read
 * the errno of the kernel thread it had left, whose scheduling context was using it. */
static __attribute__((noinline)) int destroy_errno(sem_t *s, int *err)
{
	errno = 0;
	int r = sem_destroy(s);
	*err = errno;
	return r;
}

START_TEST(test_sem)
{
	start();
	int value = -1;
	ck_assert_int_eq(sem_init(&items, 0, 0), 0);
	pthread_t p[2], c[2];
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(pthread_create(&c[i], NULL, sem_consumer, NULL), 0);
		ck_assert_int_eq(pthread_create(&p[i], NULL, sem_producer, NULL), 0);
	}
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(pthread_join(p[i], NULL), 0);
		ck_assert_int_eq(pthread_join(c[i], NULL), 0);
	}
	ck_assert_int_eq(sem_getvalue(&items, &value), 0);
	ck_assert_int_eq(value, 0);

	/* POSIX error convention: -1 and errno. */
	errno = 0;
	ck_assert_int_eq(sem_trywait(&items), -1);
	ck_assert_int_eq(errno, EAGAIN);
	struct timespec past = deadline_in_ms(CLOCK_REALTIME, -1000);
	errno = 0;
	ck_assert_int_eq(sem_timedwait(&items, &past), -1);
	ck_assert_int_eq(errno, ETIMEDOUT);
	ck_assert_int_eq(sem_post(&items), 0);
	ck_assert_int_eq(sem_timedwait(&items, &past), 0);  /* a unit is there: no wait */
	ck_assert_int_eq(sem_destroy(&items), 0);
	errno = 0;
	ck_assert_int_eq(sem_init(&items, 1, 0), -1);
	ck_assert_int_eq(errno, ENOTSUP);

	/* sem_destroy with a waiter: -1 and EBUSY. The waiter runs on this VP, so it has
	 * blocked once this thread gets the VP back from its sleep (no preemption). */
	pthread_attr_t here;
	pthread_t w;
	gate_passed = 0;
	ck_assert_int_eq(sem_init(&gate, 0, 0), 0);
	ck_assert_int_eq(pthread_attr_init(&here), 0);
	ck_assert_int_eq(marcel_attr_setvpset(&here, MARCEL_VPSET_VP(marcel_current_vp())), 0);
	ck_assert_int_eq(pthread_create(&w, &here, gate_waiter, NULL), 0);
	marcel_usleep(20000);
	int err;
	ck_assert_int_eq(destroy_errno(&gate, &err), -1);
	ck_assert_int_eq(err, EBUSY);
	ck_assert_int_eq(__atomic_load_n(&gate_passed, __ATOMIC_SEQ_CST), 0);
	ck_assert_int_eq(sem_post(&gate), 0);
	ck_assert_int_eq(pthread_join(w, NULL), 0);
	ck_assert_int_eq(gate_passed, 1);
	ck_assert_int_eq(sem_destroy(&gate), 0);
	ck_assert_int_eq(pthread_attr_destroy(&here), 0);
	finish();
}
END_TEST

/* ------------------------------------------------------------------ suite */

static void add_examples(TCase *tc)
{
	tcase_add_test(tc, test_examples_same_output);
	tcase_add_test(tc, test_examples_bad_arguments);
}

static void add_mapping(TCase *tc)
{
	tcase_add_test(tc, test_threads);
	tcase_add_test(tc, test_mutex);
	tcase_add_test(tc, test_cond);
	tcase_add_test(tc, test_barrier);
	tcase_add_test(tc, test_rwlock);
	tcase_add_test(tc, test_spin_once);
	tcase_add_test(tc, test_keys);
	tcase_add_test(tc, test_sem);
}

int main(void)
{
	Suite *s = suite_create("port");
	ma_test_add_both(s, "examples", add_examples, 120);
	ma_test_add_both(s, "mapping", add_mapping, 120);
	return ma_test_run(s);
}
