/*
 * The blocking calls <marcel/pthread.h> maps: sleeps onto marcel timers, the calls that
 * exist to wait (poll, select, accept, waitpid) onto blocking sections, the signal waits
 * onto marcel waits (check_signal tests those through marcel's names).
 *
 *  - one VP: a pthread-style pool whose workers poll a flag with usleep (or nanosleep,
 *    clock_nanosleep) must let the main thread run and set it; a thread waiting in poll,
 *    select, accept, sigwait, pause or waitpid must let the main thread run and wake it. With
 *    the C library's calls the waiting thread holds the only worker: each of these hangs
 *    until Check's time limit;
 *  - the return values and errors of every mapped call, POSIX's, including outside a
 *    marcel thread (inside a blocking section), where the C library's calls are used.
 *
 * Threads do not call ck_assert: they record failures with IN_THREAD_CHECK and the test
 * body asserts there were none.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <time.h>
#include "ma_test.h"
#include <marcel/pthread.h>

#define I2P(i) ((void *)(intptr_t)(i))
#define P2I(p) ((int)(intptr_t)(p))

/* The mapping itself: calls are rewritten, the names stay the C library's. */
#define SAME_TYPE(a, b) _Static_assert(__builtin_types_compatible_p(a, b), #a " is not " #b)
SAME_TYPE(__typeof__(nanosleep(NULL, NULL)), int);
SAME_TYPE(__typeof__(sleep(0)), unsigned);
SAME_TYPE(__typeof__(&nanosleep), int (*)(const struct timespec *, struct timespec *));

/* ------------------------------------------------------------------ helpers */

static int thread_failed_line;
#define IN_THREAD_CHECK(cond)                                                              \
	do {                                                                               \
		if (!(cond)) {                                                             \
			int zero_ = 0;                                                     \
			__atomic_compare_exchange_n(&thread_failed_line, &zero_, __LINE__, 0, \
						    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);   \
		}                                                                          \
	} while (0)

/* Starts the runtime on one VP, where a thread that holds its worker stops every other. */
static void start_one_vp(void)
{
	__atomic_store_n(&thread_failed_line, 0, __ATOMIC_SEQ_CST);
	setenv("MARCEL_NVP", "1", 1);
	ma_test_init();
	unsetenv("MARCEL_NVP");
	ck_assert_int_eq(marcel_nbvps(), 1);
}

static void finish(void)
{
	int line = __atomic_load_n(&thread_failed_line, __ATOMIC_SEQ_CST);
	ck_assert_msg(line == 0, "a thread check failed at line %d", line);
	marcel_end();
}


static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t ms_since(uint64_t t0)
{
	return (now_ns(CLOCK_MONOTONIC) - t0) / 1000000u;
}

static struct timespec ts_of(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	return ts;
}

/* ------------------------------------------------------------------ pool on one VP */

#define POOL 4
static int pool_stop;
static long pool_polls[POOL];
static pthread_barrier_t pool_started;

/* Polls the flag as a thread pool does, each worker with another of the sleeps. */
static void *pool_worker(void *arg)
{
	int i = P2I(arg);
	pthread_barrier_wait(&pool_started);
	while (!__atomic_load_n(&pool_stop, __ATOMIC_ACQUIRE)) {
		struct timespec ts = { 0, 500000 }, rem;
		switch (i) {
		case 0:
			IN_THREAD_CHECK(usleep(500) == 0);
			break;
		case 1:
			IN_THREAD_CHECK(nanosleep(&ts, &rem) == 0);
			break;
		case 2:
			IN_THREAD_CHECK(clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL) == 0);
			break;
		default: {
			struct timespec abs = ts_of(now_ns(CLOCK_REALTIME) + 500000);
			IN_THREAD_CHECK(clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &abs, NULL) == 0);
		}
		}
		pool_polls[i]++;
	}
	return NULL;
}

START_TEST(test_pool_polls_with_usleep_on_one_vp)
{
	start_one_vp();
	pool_stop = 0;
	ck_assert_int_eq(pthread_barrier_init(&pool_started, NULL, POOL + 1), 0);
	pthread_t t[POOL];
	for (int i = 0; i < POOL; i++) {
		pool_polls[i] = 0;
		ck_assert_int_eq(pthread_create(&t[i], NULL, pool_worker, I2P(i)), 0);
	}
	/* Every worker is polling once this returns: from here on, the main thread runs only
	 * if their sleeps give the worker away. */
	pthread_barrier_wait(&pool_started);
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	ck_assert_int_eq(usleep(20000), 0);
	__atomic_store_n(&pool_stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < POOL; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	uint64_t took = ms_since(t0);
	ck_assert_msg(took < 5000, "stopping a polling pool took %llu ms", (unsigned long long)took);
	for (int i = 0; i < POOL; i++)
		ck_assert_msg(pool_polls[i] > 0, "worker %d never polled", i);
	ck_assert_int_eq(pthread_barrier_destroy(&pool_started), 0);
	finish();
}
END_TEST

/* ------------------------------------------------------------------ sleeps: POSIX results */

START_TEST(test_sleep_results)
{
	start_one_vp();
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	ck_assert_uint_eq(sleep(0), 0);
	ck_assert_int_eq(usleep(0), 0);
	ck_assert_int_eq(usleep(3000), 0);
	ck_assert_uint_ge(ms_since(t0), 3);
	/* glibc accepts a second or more (POSIX.1-2001 allowed EINVAL); so do we. */
	t0 = now_ns(CLOCK_MONOTONIC);
	ck_assert_int_eq(usleep(1000000), 0);
	ck_assert_uint_ge(ms_since(t0), 1000);

	/* nanosleep: -1 and errno for a malformed request, rem untouched then; 0 and rem
	 * zeroed (nothing interrupts a marcel thread) otherwise. */
	struct timespec bad = { 0, 1000000000L }, neg = { -1, 0 }, negns = { 0, -1 };
	struct timespec ok = { 0, 2000000 }, rem = { 5, 5 };
	set_errno(0);
	ck_assert_int_eq(nanosleep(&bad, &rem), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	ck_assert_int_eq(rem.tv_sec, 5);
	set_errno(0);
	ck_assert_int_eq(nanosleep(&neg, NULL), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	set_errno(0);
	ck_assert_int_eq(nanosleep(&negns, NULL), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	t0 = now_ns(CLOCK_MONOTONIC);
	ck_assert_int_eq(nanosleep(&ok, &rem), 0);
	ck_assert_uint_ge(ms_since(t0), 2);
	ck_assert_int_eq(rem.tv_sec, 0);
	ck_assert_int_eq(rem.tv_nsec, 0);
	ck_assert_int_eq(nanosleep(&ok, NULL), 0);

	/* clock_nanosleep: an error number, never -1, and errno untouched. */
	set_errno(0);
	ck_assert_int_eq(clock_nanosleep(CLOCK_MONOTONIC, 0x10, &ok, NULL), EINVAL);
	ck_assert_int_eq(clock_nanosleep(CLOCK_MONOTONIC, 0, &bad, NULL), EINVAL);
	ck_assert_int_eq(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &negns, NULL), EINVAL);
	ck_assert_int_eq(clock_nanosleep(CLOCK_REALTIME, 0, &neg, NULL), EINVAL);
	ck_assert_int_eq(clock_nanosleep(CLOCK_MONOTONIC, 0, NULL, NULL), EINVAL);
	ck_assert_int_eq(clock_nanosleep((clockid_t)12345, 0, &ok, NULL), EINVAL);
	ck_assert_int_eq(clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &ok, NULL), ENOTSUP);
	ck_assert_int_eq(clock_nanosleep(CLOCK_BOOTTIME, 0, &ok, NULL), ENOTSUP);
	ck_assert_int_eq(get_errno(), 0);

	/* Intervals, on both clocks; rem zeroed. */
	rem.tv_sec = rem.tv_nsec = 5;
	t0 = now_ns(CLOCK_MONOTONIC);
	ck_assert_int_eq(clock_nanosleep(CLOCK_MONOTONIC, 0, &ok, &rem), 0);
	ck_assert_uint_ge(ms_since(t0), 2);
	ck_assert_int_eq(rem.tv_sec, 0);
	ck_assert_int_eq(rem.tv_nsec, 0);
	t0 = now_ns(CLOCK_MONOTONIC);
	ck_assert_int_eq(clock_nanosleep(CLOCK_REALTIME, 0, &ok, NULL), 0);
	ck_assert_uint_ge(ms_since(t0), 2);

	/* Absolute deadlines: the clock has passed them on return, rem is not touched; one in
	 * the past returns at once. */
	for (int k = 0; k < 2; k++) {
		clockid_t clock = k ? CLOCK_REALTIME : CLOCK_MONOTONIC;
		uint64_t deadline = now_ns(clock) + 5000000;
		struct timespec abs = ts_of(deadline);
		rem.tv_sec = rem.tv_nsec = 5;
		ck_assert_int_eq(clock_nanosleep(clock, TIMER_ABSTIME, &abs, &rem), 0);
		ck_assert_uint_ge(now_ns(clock), deadline);
		ck_assert_int_eq(rem.tv_sec, 5);
		struct timespec past = ts_of(now_ns(clock) - 1000000000u);
		t0 = now_ns(CLOCK_MONOTONIC);
		ck_assert_int_eq(clock_nanosleep(clock, TIMER_ABSTIME, &past, NULL), 0);
		ck_assert_uint_lt(ms_since(t0), 500);
	}
	struct timespec epoch = { 0, 0 };
	ck_assert_int_eq(clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &epoch, NULL), 0);

	/* Inside a blocking section the caller has a kernel thread of its own: these are the
	 * C library's calls, with their own errors. */
	ck_assert_int_eq(marcel_enter_blocking_section(), 0);
	int e1 = nanosleep(&bad, NULL) == -1 ? get_errno() : 0;
	int e2 = clock_nanosleep(CLOCK_MONOTONIC, 0, &bad, NULL);
	rem.tv_sec = rem.tv_nsec = 5;
	int r3 = nanosleep(&ok, &rem);
	int r4 = usleep(1000);
	unsigned r5 = sleep(0);
	int r6 = clock_nanosleep(CLOCK_MONOTONIC, 0, &ok, NULL);
	ck_assert_int_eq(marcel_leave_blocking_section(), 0);
	ck_assert_int_eq(e1, EINVAL);
	ck_assert_int_eq(e2, EINVAL);
	ck_assert_int_eq(r3, 0);
	ck_assert_int_eq(rem.tv_sec, 0);
	ck_assert_int_eq(r6, 0);
	ck_assert_int_eq(r4, 0);
	ck_assert_uint_eq(r5, 0);
	finish();
}
END_TEST

/* ------------------------------------------------------------------ waiting calls on one VP */

static int wait_pipe[2];

static void *poll_waiter(void *arg)
{
	(void)arg;
	struct pollfd p = { .fd = wait_pipe[0], .events = POLLIN };
	int r = poll(&p, 1, -1);
	IN_THREAD_CHECK(r == 1 && (p.revents & POLLIN));
	char c;
	IN_THREAD_CHECK(read(wait_pipe[0], &c, 1) == 1 && c == 'p');
	return NULL;
}

static void *select_waiter(void *arg)
{
	(void)arg;
	fd_set r;
	FD_ZERO(&r);
	FD_SET(wait_pipe[0], &r);
	int n = select(wait_pipe[0] + 1, &r, NULL, NULL, NULL);
	IN_THREAD_CHECK(n == 1 && FD_ISSET(wait_pipe[0], &r));
	char c;
	IN_THREAD_CHECK(read(wait_pipe[0], &c, 1) == 1 && c == 's');
	return NULL;
}

/* Runs waiter on the only VP, then writes c into the pipe from this thread: possible only
 * if the waiter gave the worker away. */
static void wake_through_pipe(void *(*waiter)(void *), char c)
{
	ck_assert_int_eq(pipe(wait_pipe), 0);
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, waiter, NULL), 0);
	/* A marcel sleep, whatever the mapping: the waiter runs meanwhile and enters its call. */
	ck_assert_int_eq(marcel_usleep(10000), 0);
	ck_assert_int_eq(write(wait_pipe[1], &c, 1), 1);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	close(wait_pipe[0]);
	close(wait_pipe[1]);
}

START_TEST(test_poll_select)
{
	start_one_vp();
	wake_through_pipe(poll_waiter, 'p');
	wake_through_pipe(select_waiter, 's');

	/* Zero timeouts (no section) and errors are the C library's. */
	ck_assert_int_eq(pipe(wait_pipe), 0);
	struct pollfd p = { .fd = wait_pipe[0], .events = POLLIN };
	ck_assert_int_eq(poll(&p, 1, 0), 0);
	ck_assert_int_eq(poll(&p, 1, 5), 0);
	struct timespec zero = { 0, 0 }, ms = { 0, 1000000 };
	ck_assert_int_eq(ppoll(&p, 1, &zero, NULL), 0);
	ck_assert_int_eq(ppoll(&p, 1, &ms, NULL), 0);
	fd_set r;
	FD_ZERO(&r);
	FD_SET(wait_pipe[0], &r);
	struct timeval tv = { 0, 0 };
	ck_assert_int_eq(select(wait_pipe[0] + 1, &r, NULL, NULL, &tv), 0);
	FD_SET(wait_pipe[0], &r);
	ck_assert_int_eq(pselect(wait_pipe[0] + 1, &r, NULL, NULL, &ms, NULL), 0);
	ck_assert_int_eq(write(wait_pipe[1], "x", 1), 1);
	ck_assert_int_eq(poll(&p, 1, 1000), 1);
	ck_assert_int_eq(ppoll(&p, 1, NULL, NULL), 1);
	FD_SET(wait_pipe[0], &r);
	ck_assert_int_eq(pselect(wait_pipe[0] + 1, &r, NULL, NULL, NULL, NULL), 1);
	set_errno(0);
	ck_assert_int_eq(select(-1, NULL, NULL, NULL, NULL), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	set_errno(0);
	struct timespec badts = { 0, -1 };
	ck_assert_int_eq(ppoll(&p, 1, &badts, NULL), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	close(wait_pipe[0]);
	close(wait_pipe[1]);
	finish();
}
END_TEST

static int listen_fd;

static void *acceptor(void *arg)
{
	(void)arg;
	int fd = accept(listen_fd, NULL, NULL);
	IN_THREAD_CHECK(fd >= 0);
	char c = 0;
	IN_THREAD_CHECK(marcel_recv(fd, &c, 1, 0) == 1 && c == 'a');
	IN_THREAD_CHECK(marcel_send(fd, "b", 1, 0) == 1);
	close(fd);
	return NULL;
}

START_TEST(test_accept)
{
	start_one_vp();
	listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(listen_fd, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	ck_assert_int_eq(bind(listen_fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(listen_fd, 4), 0);
	ck_assert_int_eq(getsockname(listen_fd, (struct sockaddr *)&a, &len), 0);

	/* The acceptor waits first; connecting needs the worker it would hold. */
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, acceptor, NULL), 0);
	ck_assert_int_eq(marcel_usleep(10000), 0);
	int c = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(c, 0);
	ck_assert_int_eq(marcel_connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(marcel_send(c, "a", 1, 0), 1);
	char got = 0;
	ck_assert_int_eq(marcel_recv(c, &got, 1, 0), 1);
	ck_assert_int_eq(got, 'b');
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	close(c);

	/* accept4 with its flags; errors are the C library's. */
	c = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_eq(marcel_connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
	int s = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
	ck_assert_int_ge(s, 0);
	ck_assert_int_ne(fcntl(s, F_GETFD) & FD_CLOEXEC, 0);
	close(s);
	close(c);
	set_errno(0);
	ck_assert_int_eq(accept(-1, NULL, NULL), -1);
	ck_assert_int_eq(get_errno(), EBADF);
	set_errno(0);
	ck_assert_int_eq(accept4(listen_fd, NULL, NULL, -1), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	close(listen_fd);
	finish();
}
END_TEST

static sigset_t usr1;

static void *signal_waiter(void *arg)
{
	(void)arg;
	int sig = 0;
	IN_THREAD_CHECK(sigwait(&usr1, &sig) == 0 && sig == SIGUSR1);
	return NULL;
}

static volatile sig_atomic_t usr2_seen;
static void on_usr2(int sig)
{
	(void)sig;
	usr2_seen = 1;
}

START_TEST(test_signal_waits)
{
	/* The old recipe: the signals blocked in every kernel thread before marcel_init (the
	 * workers inherit the mask, main's marcel mask starts from it); marcel's helper
	 * thread takes them from the kernel for the marcel threads waiting for them. */
	sigset_t old, both;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	both = usr1;
	sigaddset(&both, SIGUSR2);
	ck_assert_int_eq(pthread_sigmask(SIG_BLOCK, &both, &old), 0);
	struct sigaction sa = { .sa_handler = on_usr2 }, old_sa;
	ck_assert_int_eq(sigaction(SIGUSR2, &sa, &old_sa), 0);
	start_one_vp();

	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, signal_waiter, NULL), 0);
	ck_assert_int_eq(marcel_usleep(10000), 0);
	ck_assert_int_eq(kill(getpid(), SIGUSR1), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);

	/* sigwaitinfo and sigtimedwait: a pending signal is taken, a zero timeout gives
	 * EAGAIN, a malformed one EINVAL. */
	siginfo_t info;
	ck_assert_int_eq(kill(getpid(), SIGUSR1), 0);
	ck_assert_int_eq(sigwaitinfo(&usr1, &info), SIGUSR1);
	ck_assert_int_eq(info.si_signo, SIGUSR1);
	struct timespec zero = { 0, 0 }, ms = { 0, 1000000 }, bad = { 0, -1 };
	set_errno(0);
	ck_assert_int_eq(sigtimedwait(&usr1, &info, &zero), -1);
	ck_assert_int_eq(get_errno(), EAGAIN);
	set_errno(0);
	ck_assert_int_eq(sigtimedwait(&usr1, &info, &ms), -1);
	ck_assert_int_eq(get_errno(), EAGAIN);
	set_errno(0);
	ck_assert_int_eq(sigtimedwait(&usr1, &info, &bad), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	ck_assert_int_eq(kill(getpid(), SIGUSR1), 0);
	struct timespec long_wait = { 60, 0 };
	ck_assert_int_eq(sigtimedwait(&usr1, &info, &long_wait), SIGUSR1);

	/* sigsuspend unblocks SIGUSR2 in the calling thread: the signal, sent before and
	 * pending in the kernel, is taken over by marcel and its handler (the C library's)
	 * runs in that thread; the call returns -1 with EINTR. */
	sigset_t all_but_usr2;
	sigfillset(&all_but_usr2);
	sigdelset(&all_but_usr2, SIGUSR2);
	usr2_seen = 0;
	ck_assert_int_eq(kill(getpid(), SIGUSR2), 0);
	set_errno(0);
	ck_assert_int_eq(sigsuspend(&all_but_usr2), -1);
	ck_assert_int_eq(get_errno(), EINTR);
	ck_assert_int_eq(usr2_seen, 1);
	finish();
	ck_assert_int_eq(sigaction(SIGUSR2, &old_sa, NULL), 0);
	ck_assert_int_eq(pthread_sigmask(SIG_SETMASK, &old, NULL), 0);
}
END_TEST

/* pause returns once a handler ran in the calling thread: the signal (aimed at the kernel
 * thread that ran the waiter, the only worker) is taken over by marcel once the waiter
 * pauses; one that comes before only runs the handler, on the worker. So the main
 * thread sends it again and again. */
static pid_t pauser_tid;
static int pauser_done;
static volatile sig_atomic_t usr2_count;
static void count_usr2(int sig)
{
	(void)sig;
	usr2_count++;
}

static void *pauser(void *arg)
{
	(void)arg;
	__atomic_store_n(&pauser_tid, gettid(), __ATOMIC_SEQ_CST);
	int r = pause();
	int e = get_errno();
	IN_THREAD_CHECK(r == -1 && e == EINTR);
	__atomic_store_n(&pauser_done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

START_TEST(test_pause)
{
	struct sigaction sa = { .sa_handler = count_usr2, .sa_flags = SA_RESTART }, old_sa;
	ck_assert_int_eq(sigaction(SIGUSR2, &sa, &old_sa), 0);
	start_one_vp();
	pauser_tid = 0;
	pauser_done = 0;
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, pauser, NULL), 0);
	while (!__atomic_load_n(&pauser_tid, __ATOMIC_SEQ_CST))
		ck_assert_int_eq(marcel_usleep(1000), 0);
	while (!__atomic_load_n(&pauser_done, __ATOMIC_SEQ_CST)) {
		/* ESRCH: that kernel thread has just gone (the waiter is done meanwhile). */
		int r = tgkill(getpid(), pauser_tid, SIGUSR2);
		ck_assert(r == 0 || get_errno() == ESRCH);
		ck_assert_int_eq(marcel_usleep(5000), 0);
	}
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_gt(usr2_count, 0);
	finish();
	ck_assert_int_eq(sigaction(SIGUSR2, &old_sa, NULL), 0);
}
END_TEST

static pid_t child;
static int child_gate[2];

static void *child_waiter(void *arg)
{
	(void)arg;
	int status = 0;
	IN_THREAD_CHECK(waitpid(child, &status, 0) == child);
	IN_THREAD_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 7);
	return NULL;
}

START_TEST(test_waitpid)
{
	start_one_vp();
	ck_assert_int_eq(pipe(child_gate), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		/* The child has no workers: the C library's calls only. */
		char c;
		_exit((read)(child_gate[0], &c, 1) == 1 ? 7 : 1);
	}
	int status;
	ck_assert_int_eq(waitpid(child, &status, WNOHANG), 0);
	/* The waiter waits first; the child ends only once this thread, on the same worker,
	 * has written to it. */
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, child_waiter, NULL), 0);
	ck_assert_int_eq(marcel_usleep(10000), 0);
	ck_assert_int_eq(write(child_gate[1], "g", 1), 1);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	close(child_gate[0]);
	close(child_gate[1]);
	set_errno(0);
	ck_assert_int_eq(waitpid(child, &status, 0), -1);
	ck_assert_int_eq(get_errno(), ECHILD);
	finish();
}
END_TEST

/* The unmapped wrappers, as a program calls them where it may wait. */
START_TEST(test_io_wrappers)
{
	start_one_vp();
	int sv[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	char buf[8] = { 0 };
	struct iovec iov = { .iov_base = buf, .iov_len = 3 };
	ck_assert_int_eq(marcel_writev(sv[0], &(struct iovec){ .iov_base = "abc", .iov_len = 3 }, 1), 3);
	ck_assert_int_eq(marcel_readv(sv[1], &iov, 1), 3);
	ck_assert_str_eq(buf, "abc");
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	ck_assert_int_eq(marcel_sendmsg(sv[1], &m, 0), 3);
	memset(buf, 0, sizeof(buf));
	ck_assert_int_eq(marcel_recvmsg(sv[0], &m, 0), 3);
	ck_assert_str_eq(buf, "abc");
	ck_assert_int_eq(marcel_sendto(sv[0], "de", 2, 0, NULL, 0), 2);
	ck_assert_int_eq(marcel_recvfrom(sv[1], buf, 2, 0, NULL, NULL), 2);
	set_errno(0);
	ck_assert_int_eq(marcel_recv(-1, buf, 1, 0), -1);
	ck_assert_int_eq(get_errno(), EBADF);
	close(sv[0]);
	close(sv[1]);
	finish();
}
END_TEST

/* ------------------------------------------------------------------ suite */

static void add_sleeps(TCase *tc)
{
	tcase_add_test(tc, test_pool_polls_with_usleep_on_one_vp);
	tcase_add_test(tc, test_sleep_results);
}

static void add_waits(TCase *tc)
{
	tcase_add_test(tc, test_poll_select);
	tcase_add_test(tc, test_accept);
	tcase_add_test(tc, test_signal_waits);
	tcase_add_test(tc, test_pause);
	tcase_add_test(tc, test_waitpid);
	tcase_add_test(tc, test_io_wrappers);
}

int main(void)
{
	Suite *s = suite_create("port_block");
	/* A hang (a call holding the only worker) ends at this limit. */
	ma_test_add_both(s, "sleeps", add_sleeps, 30);
	ma_test_add_both(s, "waits", add_waits, 30);
	return ma_test_run(s);
}
