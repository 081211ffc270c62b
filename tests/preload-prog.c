/* An ordinary pthread program (no marcel header, built with plain `cc -pthread`), run by
 * preload-run.sh under LD_PRELOAD=libmarcel-preload.so. Each mode checks its results
 * and prints "preload-prog MODE: ok" or exits non-zero naming what was wrong. Whether its
 * threads are marcel threads it asks libmarcel directly (dlsym: nothing of marcel is
 * linked in). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ma_plain_check.h"
#define CHECK0(call)                                                                  \
	do {                                                                          \
		int e_ = (call);                                                      \
		if (e_) {                                                             \
			fprintf(stderr, "preload-prog: %s:%d: %s: %s\n", __FILE__, __LINE__, #call, strerror(e_)); \
			exit(1);                                                      \
		}                                                                     \
	} while (0)

static void *(*marcel_self_fn)(void);
static unsigned (*marcel_nbvps_fn)(void);

/* ---- handoff: a token passed around a ring of more threads than VPs ---- */

#define RING 64
#define ROUNDS 50
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ring_cond = PTHREAD_COND_INITIALIZER;
static int ring_turn, ring_done;
static long ring_tids[RING];
static int ring_marcel[RING];

static void *ring_thread(void *arg)
{
	int me = (int)(long)arg;
	ring_tids[me] = syscall(SYS_gettid);
	ring_marcel[me] = marcel_self_fn() == (void *)pthread_self();
	for (int r = 0; r < ROUNDS; r++) {
		CHECK0(pthread_mutex_lock(&ring_lock));
		while (ring_turn % RING != me)
			CHECK0(pthread_cond_wait(&ring_cond, &ring_lock));
		ring_turn++;
		ring_done++;
		CHECK0(pthread_cond_broadcast(&ring_cond));
		CHECK0(pthread_mutex_unlock(&ring_lock));
	}
	return NULL;
}

static void mode_handoff(void)
{
	pthread_t t[RING];
	for (long i = 0; i < RING; i++)
		CHECK0(pthread_create(&t[i], NULL, ring_thread, (void *)i));
	for (int i = 0; i < RING; i++)
		CHECK0(pthread_join(t[i], NULL));
	CHECK(ring_done == RING * ROUNDS);
	/* Kernel threads would be 64 distinct ones; marcel runs them on its VPs' workers. */
	int distinct = 0;
	for (int i = 0; i < RING; i++) {
		CHECK(ring_marcel[i]);
		int seen = 0;
		for (int j = 0; j < i; j++)
			seen |= ring_tids[j] == ring_tids[i];
		distinct += !seen;
	}
	CHECK(distinct <= (int)marcel_nbvps_fn());
	printf("preload-prog handoff: %d threads on %d kernel threads (%u VPs): ok\n", RING, distinct,
	       marcel_nbvps_fn());
}

/* ---- prodcons: semaphores and a mutex, a bounded buffer ---- */

#define SLOTS 4
#define ITEMS 20000
static sem_t pc_full, pc_empty;
static pthread_mutex_t pc_lock = PTHREAD_MUTEX_INITIALIZER;
static long pc_buf[SLOTS];
static int pc_in, pc_out;

static void *producer(void *arg)
{
	(void)arg;
	for (long i = 1; i <= ITEMS; i++) {
		CHECK(sem_wait(&pc_empty) == 0);
		pthread_mutex_lock(&pc_lock);
		pc_buf[pc_in++ % SLOTS] = i;
		pthread_mutex_unlock(&pc_lock);
		CHECK(sem_post(&pc_full) == 0);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	long sum = 0;
	(void)arg;
	for (long i = 1; i <= ITEMS; i++) {
		CHECK(sem_wait(&pc_full) == 0);
		pthread_mutex_lock(&pc_lock);
		long v = pc_buf[pc_out++ % SLOTS];
		pthread_mutex_unlock(&pc_lock);
		CHECK(v == i);
		sum += v;
		CHECK(sem_post(&pc_empty) == 0);
	}
	return (void *)sum;
}

static void mode_prodcons(void)
{
	CHECK(sem_init(&pc_full, 0, 0) == 0);
	CHECK(sem_init(&pc_empty, 0, SLOTS) == 0);
	pthread_t p, c;
	void *sum;
	CHECK0(pthread_create(&c, NULL, consumer, NULL));
	CHECK0(pthread_create(&p, NULL, producer, NULL));
	CHECK0(pthread_join(p, NULL));
	CHECK0(pthread_join(c, &sum));
	CHECK((long)sum == (long)ITEMS * (ITEMS + 1) / 2);
	CHECK(sem_destroy(&pc_full) == 0 && sem_destroy(&pc_empty) == 0);
	printf("preload-prog prodcons: %d items: ok\n", ITEMS);
}

/* ---- pool: detached workers that sleep between polls and are never stopped ---- */

#define WORKERS 8
#define JOBS 200
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_done = PTHREAD_COND_INITIALIZER;
static int pool_next, pool_finished;
static long pool_sum;

static void *pool_worker(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&pool_lock);
		int job = pool_next < JOBS ? ++pool_next : 0;
		pthread_mutex_unlock(&pool_lock);
		if (!job) {
			usleep(1000); /* nothing to do: poll again later, forever */
			continue;
		}
		struct timespec ts = { 0, 100000 };
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&pool_lock);
		pool_sum += job;
		if (++pool_finished == JOBS)
			pthread_cond_signal(&pool_done);
		pthread_mutex_unlock(&pool_lock);
	}
	return NULL;
}

static void mode_pool(void)
{
	pthread_attr_t a;
	CHECK0(pthread_attr_init(&a));
	CHECK0(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED));
	CHECK0(pthread_attr_setstacksize(&a, 256 * 1024));
	for (int i = 0; i < WORKERS; i++) {
		pthread_t t;
		CHECK0(pthread_create(&t, &a, pool_worker, NULL));
	}
	CHECK0(pthread_attr_destroy(&a));
	pthread_mutex_lock(&pool_lock);
	while (pool_finished < JOBS)
		pthread_cond_wait(&pool_done, &pool_lock);
	pthread_mutex_unlock(&pool_lock);
	CHECK(pool_sum == (long)JOBS * (JOBS + 1) / 2);
	printf("preload-prog pool: %d jobs, sum %ld: ok\n", JOBS, pool_sum);
	/* main returns with the workers still polling: the process must end now. */
}

/* ---- many: 10000 threads alive at once, all waiting at one barrier ---- */

#define MANY 10000
static pthread_barrier_t many_bar;
static long many_count;

static void *many_thread(void *arg)
{
	(void)arg;
	__atomic_fetch_add(&many_count, 1, __ATOMIC_RELAXED);
	pthread_barrier_wait(&many_bar);
	return NULL;
}

static void mode_many(void)
{
	static pthread_t t[MANY];
	pthread_attr_t a;
	CHECK0(pthread_attr_init(&a));
	CHECK0(pthread_attr_setstacksize(&a, 64 * 1024));
	CHECK0(pthread_barrier_init(&many_bar, NULL, MANY + 1));
	for (int i = 0; i < MANY; i++)
		CHECK0(pthread_create(&t[i], &a, many_thread, NULL));
	pthread_barrier_wait(&many_bar);
	CHECK(many_count == MANY);
	for (int i = 0; i < MANY; i++)
		CHECK0(pthread_join(t[i], NULL));
	CHECK0(pthread_barrier_destroy(&many_bar));
	printf("preload-prog many: %d threads alive at once: ok\n", MANY);
}

/* ---- sync: the other objects, error cases, errno and keys per thread ---- */

static pthread_mutex_t rec = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t chk = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t spin;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t key;
static int once_runs, dtor_runs;
static long spin_count;

static void once_fn(void)
{
	once_runs++;
}

static void dtor(void *v)
{
	CHECK(v != NULL);
	__atomic_fetch_add(&dtor_runs, 1, __ATOMIC_RELAXED);
}

/* errno through functions of their own: glibc declares __errno_location() const, so
 * within one function the compiler may keep the address of the kernel thread that ran
 * it before a switch (doc/porting.md, thread-local storage). */
__attribute__((noinline)) static void errno_set(int v)
{
	errno = v;
}

__attribute__((noinline)) static int errno_get(void)
{
	return errno;
}

static void *sync_thread(void *arg)
{
	long me = (long)arg;
	CHECK0(pthread_once(&once, once_fn));
	CHECK0(pthread_setspecific(key, (void *)(me + 1)));
	for (int i = 0; i < 1000; i++) {
		/* errno belongs to the thread across switches. */
		errno_set((int)me + 1);
		sched_yield();
		CHECK(errno_get() == (int)me + 1);
		CHECK0(pthread_spin_lock(&spin));
		spin_count++;
		CHECK0(pthread_spin_unlock(&spin));
		CHECK0(pthread_rwlock_rdlock(&rw));
		CHECK0(pthread_rwlock_unlock(&rw));
	}
	CHECK(pthread_getspecific(key) == (void *)(me + 1));
	CHECK(pthread_mutex_unlock(&chk) == EPERM); /* held by main */
	return NULL;
}


static void cleanup_unlock(void *m)
{
	pthread_mutex_unlock(m);
}

static void *wait_cancelable(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&ring_lock);
	pthread_cleanup_push(cleanup_unlock, &ring_lock);
	for (;;)
		pthread_cond_wait(&ring_cond, &ring_lock);
	pthread_cleanup_pop(1);
	return NULL;
}

static void *getattr_thread(void *arg)
{
	pthread_attr_t a;
	(void)arg;
	return (void *)(long)pthread_getattr_np(pthread_self(), &a);
}

static void mode_sync(void)
{
	CHECK0(pthread_mutex_lock(&rec));
	CHECK0(pthread_mutex_lock(&rec)); /* recursive, from the static initialiser */
	CHECK0(pthread_mutex_unlock(&rec));
	CHECK0(pthread_mutex_unlock(&rec));
	CHECK0(pthread_mutex_lock(&chk));
	CHECK(pthread_mutex_lock(&chk) == EDEADLK);

	pthread_mutexattr_t ma;
	pthread_mutex_t m;
	CHECK0(pthread_mutexattr_init(&ma));
	CHECK(pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED) == ENOTSUP);
	CHECK(pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST) == ENOTSUP);
	CHECK0(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK));
	CHECK0(pthread_mutex_init(&m, &ma));
	CHECK0(pthread_mutex_lock(&m));
	CHECK(pthread_mutex_trylock(&m) == EBUSY);
	CHECK0(pthread_mutex_unlock(&m));
	CHECK0(pthread_mutex_destroy(&m));
	CHECK0(pthread_mutexattr_destroy(&ma));

	/* A timed wait on CLOCK_MONOTONIC that times out. */
	pthread_condattr_t ca;
	pthread_cond_t c;
	struct timespec t0, t1, dl;
	CHECK0(pthread_condattr_init(&ca));
	CHECK0(pthread_condattr_setclock(&ca, CLOCK_MONOTONIC));
	CHECK0(pthread_cond_init(&c, &ca));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	dl = t0;
	dl.tv_nsec += 20000000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	CHECK0(pthread_mutex_lock(&rec));
	CHECK(pthread_cond_timedwait(&c, &rec, &dl) == ETIMEDOUT);
	CHECK0(pthread_mutex_unlock(&rec));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(t1.tv_sec > dl.tv_sec || (t1.tv_sec == dl.tv_sec && t1.tv_nsec >= dl.tv_nsec));
	CHECK0(pthread_cond_destroy(&c));
	CHECK0(pthread_condattr_destroy(&ca));

	CHECK0(pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE));
	CHECK0(pthread_key_create(&key, dtor));
	pthread_t t[16];
	for (long i = 0; i < 16; i++)
		CHECK0(pthread_create(&t[i], NULL, sync_thread, (void *)i));
	for (int i = 0; i < 16; i++)
		CHECK0(pthread_join(t[i], NULL));
	CHECK(once_runs == 1);
	CHECK(spin_count == 16 * 1000);
	CHECK(dtor_runs == 16);
	CHECK0(pthread_key_delete(key));
	CHECK0(pthread_spin_destroy(&spin));
	CHECK0(pthread_mutex_unlock(&chk));

	CHECK0(pthread_rwlock_wrlock(&rw));
	CHECK(pthread_rwlock_tryrdlock(&rw) == EBUSY);
	CHECK0(pthread_rwlock_unlock(&rw));

	/* Deferred cancellation of a thread blocked in a condition wait. */
	pthread_t w;
	void *ret;
	CHECK0(pthread_create(&w, NULL, wait_cancelable, NULL));
	usleep(10000);
	CHECK0(pthread_cancel(w));
	CHECK0(pthread_join(w, &ret));
	CHECK(ret == PTHREAD_CANCELED);
	/* The cancelled thread's cleanup handler did not run (doc/porting.md): the mutex is
	 * still locked, by a thread that is gone. */
	CHECK(pthread_mutex_trylock(&ring_lock) == EBUSY);

	/* Unsupported calls fail, and say so, rather than act on a marcel thread. */
	CHECK(pthread_kill(pthread_self(), SIGUSR1) == ENOTSUP);
	CHECK(pthread_kill(pthread_self(), 0) == 0);
	/* main's stack is the process's, which the C library knows; other threads' are not
	 * published. */
	pthread_attr_t ga;
	void *addr;
	size_t size;
	int local;
	CHECK0(pthread_getattr_np(pthread_self(), &ga));
	CHECK0(pthread_attr_getstack(&ga, &addr, &size));
	CHECK((char *)&local >= (char *)addr && (char *)&local < (char *)addr + size);
	CHECK0(pthread_attr_destroy(&ga));
	CHECK0(pthread_create(&w, NULL, getattr_thread, NULL));
	CHECK0(pthread_join(w, &ret));
	CHECK(ret == (void *)(long)ENOTSUP);
	printf("preload-prog sync: ok\n");
}

/* ---- mainexit: pthread_exit from main waits for the other threads ---- */

static void *late_thread(void *arg)
{
	(void)arg;
	usleep(50000);
	printf("preload-prog mainexit: the last thread ended after main's pthread_exit: ok\n");
	fflush(stdout);
	return NULL;
}

static void mode_mainexit(void)
{
	pthread_t t;
	CHECK0(pthread_create(&t, NULL, late_thread, NULL));
	CHECK0(pthread_detach(t));
	pthread_exit(NULL);
}

int main(int argc, char **argv)
{
	marcel_self_fn = (void *(*)(void))dlsym(RTLD_DEFAULT, "marcel_self");
	marcel_nbvps_fn = (unsigned (*)(void))dlsym(RTLD_DEFAULT, "marcel_nbvps");
	if (!marcel_self_fn || !marcel_nbvps_fn) {
		fprintf(stderr, "preload-prog: libmarcel is not loaded (run it with LD_PRELOAD=libmarcel-preload.so)\n");
		return 1;
	}
	CHECK(marcel_self_fn() == (void *)pthread_self()); /* main too is a marcel thread */
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "handoff"))
		mode_handoff();
	else if (!strcmp(mode, "prodcons"))
		mode_prodcons();
	else if (!strcmp(mode, "pool"))
		mode_pool();
	else if (!strcmp(mode, "many"))
		mode_many();
	else if (!strcmp(mode, "sync"))
		mode_sync();
	else if (!strcmp(mode, "mainexit"))
		mode_mainexit();
	else {
		fprintf(stderr, "preload-prog: mode '%s': expected handoff, prodcons, pool, many, sync or mainexit\n", mode);
		return 2;
	}
	return 0;
}
