/*
 * Signals of marcel threads (marcel/signal.h): masks are per thread and inherited at
 * creation; marcel_kill runs the handler in the target's context (marcel_self() in the
 * handler is the target), waking a blocked target whose wait then goes on; a masked
 * signal stays pending and is delivered when the thread unblocks it; marcel_sigwait is a
 * marcel wait woken by marcel_kill, with more threads than VPs and on one VP;
 * marcel_sigtimedwait times out with EAGAIN; marcel_sigsuspend returns EINTR after the
 * handler ran; a process-directed kill(getpid(), sig) reaches the marcel thread that
 * waits for it, or the one that does not block it; every documented error.
 *
 * Every tcase runs on this machine and on the synthetic 32-PU topology (ma_test.h), and
 * ends with marcel_end(). Threads record failures with MA_THREAD_CHECK and the test body
 * asserts there were none. Nothing depends on timing: waits end on events, and Check's
 * limit catches a hang.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>
#include "ma_test.h"

#define I2P(i) ((any_t)(intptr_t)(i))
#define P2I(p) ((int)(intptr_t)(p))

static marcel_sigset_t set_of(int sig)
{
	marcel_sigset_t s;
	marcel_sigemptyset(&s);
	if (sig)
		marcel_sigaddset(&s, sig);
	return s;
}

static int blocks(int sig)
{
	marcel_sigset_t cur;
	if (marcel_sigmask(SIG_BLOCK, NULL, &cur) != 0)
		return -1;
	return marcel_sigismember(&cur, sig);
}

/* What handlers saw. */
static marcel_t handler_self;
static int handler_count;
static marcel_sem_t handled;

static void on_signal(int sig)
{
	(void)sig;
	__atomic_store_n(&handler_self, marcel_self(), __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&handler_count, 1, __ATOMIC_SEQ_CST);
	marcel_sem_V(&handled);
}

static void install(int sig, void (*h)(int))
{
	struct marcel_sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.marcel_sa_handler = h;
	marcel_sigemptyset(&sa.marcel_sa_mask);
	ck_assert_int_eq(marcel_sigaction(sig, &sa, NULL), 0);
}

static void reset_handlers(void)
{
	handler_self = NULL;
	__atomic_store_n(&handler_count, 0, __ATOMIC_SEQ_CST);
	marcel_sem_init(&handled, 0);
}

/* ------------------------------------------------------------------ masks */

static marcel_sem_t turn_a, turn_b;

static any_t mask_a(any_t arg)
{
	(void)arg;
	marcel_sigset_t u1 = set_of(SIGUSR1);
	MA_THREAD_CHECK(marcel_sigmask(SIG_BLOCK, &u1, NULL) == 0);
	marcel_sem_V(&turn_b);
	marcel_sem_P(&turn_a);
	/* B unblocked SIGUSR2 and blocked nothing: A's mask did not move. */
	MA_THREAD_CHECK(blocks(SIGUSR1) == 1 && blocks(SIGUSR2) == 0);
	return NULL;
}

static any_t inherit_child(any_t arg)
{
	(void)arg;
	marcel_sigset_t pending;
	MA_THREAD_CHECK(marcel_sigpending(&pending) == 0 && marcel_sigisemptyset(&pending));
	return I2P(blocks(SIGUSR2));
}

static any_t mask_b(any_t arg)
{
	(void)arg;
	marcel_sem_P(&turn_b);
	MA_THREAD_CHECK(blocks(SIGUSR1) == 0);
	marcel_sigset_t u2 = set_of(SIGUSR2);
	MA_THREAD_CHECK(marcel_sigmask(SIG_BLOCK, &u2, NULL) == 0);
	/* A child inherits this thread's mask, with nothing pending. */
	marcel_t c;
	any_t r;
	MA_THREAD_CHECK(marcel_create(&c, NULL, inherit_child, NULL) == 0);
	MA_THREAD_CHECK(marcel_join(c, &r) == 0 && P2I(r) == 1);
	MA_THREAD_CHECK(marcel_sigmask(SIG_UNBLOCK, &u2, NULL) == 0);
	marcel_sem_V(&turn_a);
	return NULL;
}

START_TEST(test_masks_independent)
{
	/* Both threads on VP 0: they share one kernel thread, not a mask. */
	ma_test_start_checked(0);
	marcel_sem_init(&turn_a, 0);
	marcel_sem_init(&turn_b, 0);
	marcel_attr_t on0 = ma_test_attr_on_vp(0);
	marcel_t a, b;
	ck_assert_int_eq(marcel_create(&a, &on0, mask_a, NULL), 0);
	ck_assert_int_eq(marcel_create(&b, &on0, mask_b, NULL), 0);
	ck_assert_int_eq(marcel_join(a, NULL), 0);
	ck_assert_int_eq(marcel_join(b, NULL), 0);
	ck_assert_int_eq(blocks(SIGUSR1), 0);
	/* SIGKILL and SIGSTOP are never blocked; oset alone reads. */
	marcel_sigset_t all, cur;
	marcel_sigfillset(&all);
	ck_assert_int_eq(marcel_sigmask(SIG_SETMASK, &all, &cur), 0);
	ck_assert_int_eq(marcel_sigismember(&cur, SIGUSR1), 0);
	ck_assert_int_eq(marcel_sigmask(SIG_SETMASK, NULL, &all), 0);
	ck_assert_int_eq(marcel_sigismember(&all, SIGKILL), 0);
	ck_assert_int_eq(marcel_sigismember(&all, SIGSTOP), 0);
	ck_assert_int_eq(marcel_sigismember(&all, SIGUSR1), 1);
	ck_assert_int_eq(marcel_sigmask(SIG_SETMASK, &cur, NULL), 0);
	/* Inside a blocking section the mask is still the thread's, not its kernel thread's. */
	marcel_sigset_t u2 = set_of(SIGUSR2);
	ck_assert_int_eq(marcel_enter_blocking_section(), 0);
	int e = marcel_sigmask(SIG_BLOCK, &u2, NULL);
	sigset_t kernel;
	pthread_sigmask(SIG_BLOCK, NULL, &kernel);
	ck_assert_int_eq(marcel_leave_blocking_section(), 0);
	ck_assert_int_eq(e, 0);
	ck_assert_int_eq(sigismember(&kernel, SIGUSR2), 0);
	ck_assert_int_eq(blocks(SIGUSR2), 1);
	ck_assert_int_eq(marcel_sigmask(SIG_UNBLOCK, &u2, NULL), 0);
	ma_test_end_checked();
}
END_TEST

/* ------------------------------------------------------------------ marcel_kill */

static marcel_sem_t target_go, target_ready;
static int target_done;
/* How long the main thread lets a thread that said it is about to block reach its wait:
 * if it has not yet, the signal is taken as it blocks, with the same outcome. */
#define SETTLE_US 20000

static any_t waiting_target(any_t arg)
{
	(void)arg;
	marcel_sem_V(&target_ready);
	/* Blocked here when the signal comes: the handler runs, then the wait goes on. */
	marcel_sem_P(&target_go);
	__atomic_store_n(&target_done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static int yielder_stop;
static any_t yielding_target(any_t arg)
{
	(void)arg;
	while (!__atomic_load_n(&yielder_stop, __ATOMIC_SEQ_CST))
		marcel_yield();
	return NULL;
}

static void kill_blocked_target(int one_vp)
{
	ma_test_start_checked(one_vp);
	reset_handlers();
	install(SIGUSR1, on_signal);
	marcel_sem_init(&target_go, 0);
	marcel_sem_init(&target_ready, 0);
	target_done = 0;
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, NULL, waiting_target, NULL), 0);
	marcel_sem_P(&target_ready);
	ck_assert_int_eq(marcel_usleep(SETTLE_US), 0);
	ck_assert_int_eq(marcel_kill(t, SIGUSR1), 0);
	marcel_sem_P(&handled);
	ck_assert_ptr_eq(__atomic_load_n(&handler_self, __ATOMIC_SEQ_CST), t);
	ck_assert_int_eq(__atomic_load_n(&handler_count, __ATOMIC_SEQ_CST), 1);
	/* The handler did not end the target's wait. */
	ck_assert_int_eq(__atomic_load_n(&target_done, __ATOMIC_SEQ_CST), 0);
	marcel_sem_V(&target_go);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_int_eq(target_done, 1);

	/* A target that only yields (runs, is queued, runs again). */
	yielder_stop = 0;
	ck_assert_int_eq(marcel_create(&t, NULL, yielding_target, NULL), 0);
	ck_assert_int_eq(marcel_kill(t, SIGUSR1), 0);
	marcel_sem_P(&handled);
	ck_assert_ptr_eq(__atomic_load_n(&handler_self, __ATOMIC_SEQ_CST), t);
	__atomic_store_n(&yielder_stop, 1, __ATOMIC_SEQ_CST);
	ck_assert_int_eq(marcel_join(t, NULL), 0);

	/* To itself: the handler has run when marcel_kill or marcel_raise returns. */
	ck_assert_int_eq(marcel_kill(marcel_self(), SIGUSR1), 0);
	ck_assert_int_eq(__atomic_load_n(&handler_count, __ATOMIC_SEQ_CST), 3);
	ck_assert_ptr_eq(handler_self, marcel_self());
	ck_assert_int_eq(marcel_raise(SIGUSR1), 0);
	ck_assert_int_eq(__atomic_load_n(&handler_count, __ATOMIC_SEQ_CST), 4);
	ck_assert_ptr_eq(marcel_signal(SIGUSR1, SIG_DFL), on_signal);
	ma_test_end_checked();
}

START_TEST(test_kill_in_target)
{
	kill_blocked_target(0);
}
END_TEST

START_TEST(test_kill_in_target_one_vp)
{
	kill_blocked_target(1);
}
END_TEST

static marcel_sem_t masked_go;

static any_t masked_target(any_t arg)
{
	(void)arg;
	marcel_sem_P(&masked_go);
	/* Sent while blocked: pending, its handler not run. */
	marcel_sigset_t p;
	MA_THREAD_CHECK(marcel_sigpending(&p) == 0 && marcel_sigismember(&p, SIGUSR1) == 1);
	MA_THREAD_CHECK(__atomic_load_n(&handler_count, __ATOMIC_SEQ_CST) == 0);
	marcel_sigset_t u1 = set_of(SIGUSR1);
	MA_THREAD_CHECK(marcel_sigmask(SIG_UNBLOCK, &u1, NULL) == 0);
	/* Delivered before marcel_sigmask returned, here. */
	MA_THREAD_CHECK(__atomic_load_n(&handler_count, __ATOMIC_SEQ_CST) == 1);
	MA_THREAD_CHECK(handler_self == marcel_self());
	MA_THREAD_CHECK(marcel_sigpending(&p) == 0 && marcel_sigismember(&p, SIGUSR1) == 0);
	return NULL;
}

START_TEST(test_masked_then_unmasked)
{
	ma_test_start_checked(0);
	reset_handlers();
	install(SIGUSR1, on_signal);
	marcel_sem_init(&masked_go, 0);
	/* Created blocking SIGUSR1 (inherited), then this thread unblocks it again. */
	marcel_sigset_t u1 = set_of(SIGUSR1);
	ck_assert_int_eq(marcel_sigmask(SIG_BLOCK, &u1, NULL), 0);
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, NULL, masked_target, NULL), 0);
	ck_assert_int_eq(marcel_sigmask(SIG_UNBLOCK, &u1, NULL), 0);
	ck_assert_int_eq(marcel_kill(t, SIGUSR1), 0);
	ck_assert_int_eq(marcel_kill(t, SIGUSR1), 0); /* merged with the first, as POSIX */
	marcel_sem_V(&masked_go);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_int_eq(handler_count, 1);
	/* To itself, masked: pending until unmasked. */
	ck_assert_int_eq(marcel_sigmask(SIG_BLOCK, &u1, NULL), 0);
	ck_assert_int_eq(marcel_raise(SIGUSR1), 0);
	ck_assert_int_eq(handler_count, 1);
	ck_assert_int_eq(marcel_sigmask(SIG_UNBLOCK, &u1, NULL), 0);
	ck_assert_int_eq(handler_count, 2);
	marcel_signal(SIGUSR1, SIG_DFL);
	ma_test_end_checked();
}
END_TEST

/* ------------------------------------------------------------------ sigwait */

#define NPAIRS 12
static marcel_t waiters[NPAIRS];
static marcel_sem_t waiters_made, first_taken[NPAIRS];

/* Waiter i takes SIGUSR1 or SIGUSR2 from sender i, then SIGUSR1 with its siginfo. */
static any_t sig_waiter(any_t arg)
{
	int i = P2I(arg), first = i % 2 ? SIGUSR2 : SIGUSR1;
	marcel_sigset_t set = set_of(first);
	int sig = 0;
	MA_THREAD_CHECK(marcel_sigwait(&set, &sig) == 0 && sig == first);
	marcel_sem_V(&first_taken[i]);
	set = set_of(SIGUSR1);
	siginfo_t info;
	int s = marcel_sigwaitinfo(&set, &info);
	MA_THREAD_CHECK(s == SIGUSR1 && info.si_signo == SIGUSR1 && info.si_code == SI_TKILL);
	return NULL;
}

static any_t sig_sender(any_t arg)
{
	int i = P2I(arg);
	marcel_sem_P(&waiters_made);
	marcel_sem_V(&waiters_made);
	MA_THREAD_CHECK(marcel_kill(waiters[i], i % 2 ? SIGUSR2 : SIGUSR1) == 0);
	/* Two SIGUSR1 pending at once would merge into one. */
	marcel_sem_P(&first_taken[i]);
	MA_THREAD_CHECK(marcel_kill(waiters[i], SIGUSR1) == 0);
	return NULL;
}

static void sigwait_pairs(int one_vp)
{
	ma_test_start_checked(one_vp);
	/* Blocked in main, hence in every thread it creates, as POSIX programs do. */
	marcel_sigset_t both = set_of(SIGUSR1);
	marcel_sigaddset(&both, SIGUSR2);
	ck_assert_int_eq(marcel_sigmask(SIG_BLOCK, &both, NULL), 0);
	marcel_sem_init(&waiters_made, 0);
	for (int i = 0; i < NPAIRS; i++)
		marcel_sem_init(&first_taken[i], 0);
	marcel_t senders[NPAIRS];
	/* Senders first: some send before their waiter waits (the signal stays pending). */
	for (int i = 0; i < NPAIRS; i++)
		ck_assert_int_eq(marcel_create(&senders[i], NULL, sig_sender, I2P(i)), 0);
	for (int i = 0; i < NPAIRS; i++)
		ck_assert_int_eq(marcel_create(&waiters[i], NULL, sig_waiter, I2P(i)), 0);
	marcel_sem_V(&waiters_made);
	for (int i = 0; i < NPAIRS; i++) {
		ck_assert_int_eq(marcel_join(senders[i], NULL), 0);
		ck_assert_int_eq(marcel_join(waiters[i], NULL), 0);
	}
	ck_assert_int_eq(marcel_sigmask(SIG_UNBLOCK, &both, NULL), 0);
	ma_test_end_checked();
}

START_TEST(test_sigwait)
{
	sigwait_pairs(0);
}
END_TEST

START_TEST(test_sigwait_one_vp)
{
	sigwait_pairs(1);
}
END_TEST

START_TEST(test_sigtimedwait)
{
	ma_test_start_checked(0);
	marcel_sigset_t u1 = set_of(SIGUSR1);
	ck_assert_int_eq(marcel_sigmask(SIG_BLOCK, &u1, NULL), 0);
	siginfo_t info;
	struct timespec zero = { 0, 0 }, ms20 = { 0, 20000000 }, bad = { 0, 1000000000 }, neg = { -1, 0 };
	set_errno(0);
	ck_assert_int_eq(marcel_sigtimedwait(&u1, &info, &zero), -1);
	ck_assert_int_eq(get_errno(), EAGAIN);
	set_errno(0);
	ck_assert_int_eq(marcel_sigtimedwait(&u1, &info, &ms20), -1);
	ck_assert_int_eq(get_errno(), EAGAIN);
	set_errno(0);
	ck_assert_int_eq(marcel_sigtimedwait(&u1, NULL, &bad), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	set_errno(0);
	ck_assert_int_eq(marcel_sigtimedwait(&u1, NULL, &neg), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	/* Pending already: taken at once, even with a zero timeout. */
	ck_assert_int_eq(marcel_raise(SIGUSR1), 0);
	ck_assert_int_eq(marcel_sigtimedwait(&u1, &info, &zero), SIGUSR1);
	ck_assert_int_eq(info.si_signo, SIGUSR1);
	ck_assert_int_eq(marcel_sigmask(SIG_UNBLOCK, &u1, NULL), 0);
	ma_test_end_checked();
}
END_TEST

/* ------------------------------------------------------------------ sigsuspend */

static marcel_sem_t suspender_in;

static any_t suspender(any_t arg)
{
	(void)arg;
	marcel_sigset_t none = set_of(0);
	marcel_sem_V(&suspender_in);
	int r = marcel_sigsuspend(&none);
	int e = get_errno();
	MA_THREAD_CHECK(r == -1 && e == EINTR);
	MA_THREAD_CHECK(handler_self == marcel_self());
	/* Its own mask is back. */
	MA_THREAD_CHECK(blocks(SIGUSR1) == 1);
	return NULL;
}

START_TEST(test_sigsuspend)
{
	ma_test_start_checked(0);
	reset_handlers();
	install(SIGUSR1, on_signal);
	marcel_sem_init(&suspender_in, 0);
	marcel_sigset_t u1 = set_of(SIGUSR1);
	ck_assert_int_eq(marcel_sigmask(SIG_BLOCK, &u1, NULL), 0);
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, NULL, suspender, NULL), 0);
	marcel_sem_P(&suspender_in);
	/* Before or during its sigsuspend: blocked, then delivered by the call's mask. */
	ck_assert_int_eq(marcel_kill(t, SIGUSR1), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_int_eq(handler_count, 1);
	ck_assert_int_eq(marcel_sigmask(SIG_UNBLOCK, &u1, NULL), 0);
	marcel_signal(SIGUSR1, SIG_DFL);
	ma_test_end_checked();
}
END_TEST

/* ------------------------------------------------------------------ process-directed */

static any_t proc_waiter(any_t arg)
{
	(void)arg;
	marcel_sigset_t u2 = set_of(SIGUSR2);
	int sig = 0;
	marcel_sem_V(&target_ready);
	MA_THREAD_CHECK(marcel_sigwait(&u2, &sig) == 0 && sig == SIGUSR2);
	return NULL;
}

static marcel_sem_t handler_target_go;

static any_t proc_handler_target(any_t arg)
{
	(void)arg;
	marcel_sigset_t u1 = set_of(SIGUSR1);
	MA_THREAD_CHECK(marcel_sigmask(SIG_UNBLOCK, &u1, NULL) == 0);
	marcel_sem_V(&target_ready);
	marcel_sem_P(&handler_target_go);
	return NULL;
}

#ifdef MA_TEST_TSAN
#define UNDER_TSAN 1
#else
#define UNDER_TSAN 0
#endif

START_TEST(test_process_directed)
{
	/* ThreadSanitizer runs a signal handler only once its kernel thread enters its
	 * runtime again: marcel's catcher, on an idle worker asleep in the kernel, would wait
	 * for that worker's next wake-up (doc/design.md, Known problems). There the signals
	 * are blocked in the kernel before marcel_init instead (the old recipe: the workers
	 * inherit the mask), and marcel's helper takes them from the kernel. */
	sigset_t kernel_set, kernel_old;
	sigemptyset(&kernel_set);
	sigaddset(&kernel_set, SIGUSR1);
	sigaddset(&kernel_set, SIGUSR2);
	if (UNDER_TSAN)
		ck_assert_int_eq(pthread_sigmask(SIG_BLOCK, &kernel_set, &kernel_old), 0);
	ma_test_start_checked(0);
	/* Every marcel thread blocks both signals except the one meant to take SIGUSR1. */
	marcel_sigset_t both = set_of(SIGUSR1);
	marcel_sigaddset(&both, SIGUSR2);
	ck_assert_int_eq(marcel_sigmask(SIG_BLOCK, &both, NULL), 0);

	/* A zero-timeout wait first makes marcel catch SIGUSR2 (its action is the default,
	 * which the kernel would apply at once on a worker). */
	marcel_sigset_t u2 = set_of(SIGUSR2);
	struct timespec zero = { 0, 0 };
	ck_assert_int_eq(marcel_sigtimedwait(&u2, NULL, &zero), -1);
	marcel_t t;
	/* Each thread is blocked in its wait when the signal comes (else it takes it when
	 * it gets there: the same outcome), so marcel's helper must find and wake it. */
	marcel_sem_init(&target_ready, 0);
	ck_assert_int_eq(marcel_create(&t, NULL, proc_waiter, NULL), 0);
	marcel_sem_P(&target_ready);
	ck_assert_int_eq(marcel_usleep(SETTLE_US), 0);
	ck_assert_int_eq(kill(getpid(), SIGUSR2), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);

	/* A handler installed with marcel_sigaction runs in the one thread that does not
	 * block the signal. */
	reset_handlers();
	install(SIGUSR1, on_signal);
	marcel_sem_init(&handler_target_go, 0);
	ck_assert_int_eq(marcel_create(&t, NULL, proc_handler_target, NULL), 0);
	marcel_sem_P(&target_ready);
	ck_assert_int_eq(marcel_usleep(SETTLE_US), 0);
	ck_assert_int_eq(kill(getpid(), SIGUSR1), 0);
	marcel_sem_P(&handled);
	ck_assert_ptr_eq(__atomic_load_n(&handler_self, __ATOMIC_SEQ_CST), t);
	marcel_sem_V(&handler_target_go);
	ck_assert_int_eq(marcel_join(t, NULL), 0);

	/* Every thread blocks it: pending for the process until one waits for it. */
	ck_assert_int_eq(kill(getpid(), SIGUSR1), 0);
	marcel_sigset_t u1 = set_of(SIGUSR1);
	siginfo_t info;
	ck_assert_int_eq(marcel_sigwaitinfo(&u1, &info), SIGUSR1);
	ck_assert_int_eq(info.si_code, SI_USER);
	ck_assert_int_eq(info.si_pid, getpid());
	ck_assert_int_eq(handler_count, 1);
	marcel_signal(SIGUSR1, SIG_DFL);
	ck_assert_int_eq(marcel_sigmask(SIG_UNBLOCK, &both, NULL), 0);
	ma_test_end_checked();
	if (UNDER_TSAN)
		ck_assert_int_eq(pthread_sigmask(SIG_SETMASK, &kernel_old, NULL), 0);
}
END_TEST

/* ------------------------------------------------------------------ actions */

static int info_code, info_signo, mask_had_usr2, mask_had_self;

static void on_info(int sig, siginfo_t *info, void *uc)
{
	(void)uc;
	info_signo = info->si_signo;
	info_code = info->si_code;
	/* The action's sa_mask and the signal itself are blocked while it runs. */
	mask_had_usr2 = blocks(SIGUSR2);
	mask_had_self = blocks(sig);
	__atomic_fetch_add(&handler_count, 1, __ATOMIC_SEQ_CST);
}

START_TEST(test_actions)
{
	ma_test_start_checked(0);
	reset_handlers();
	struct marcel_sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.marcel_sa_sigaction = on_info;
	sa.marcel_sa_flags = SA_SIGINFO | SA_RESETHAND;
	sa.marcel_sa_mask = set_of(SIGUSR2);
	ck_assert_int_eq(marcel_sigaction(SIGUSR1, &sa, &old), 0);
	ck_assert_int_eq(marcel_raise(SIGUSR1), 0);
	ck_assert_int_eq(handler_count, 1);
	ck_assert_int_eq(info_signo, SIGUSR1);
	ck_assert_int_eq(info_code, SI_TKILL);
	ck_assert_int_eq(mask_had_usr2, 1);
	ck_assert_int_eq(mask_had_self, 1);
	/* Restored after the handler; SA_RESETHAND put SIG_DFL back. */
	ck_assert_int_eq(blocks(SIGUSR2), 0);
	ck_assert_int_eq(blocks(SIGUSR1), 0);
	ck_assert_int_eq(marcel_sigaction(SIGUSR1, NULL, &sa), 0);
	ck_assert(!(sa.marcel_sa_flags & SA_SIGINFO) && sa.marcel_sa_handler == SIG_DFL);
	/* A handler of the C library's sigaction is what marcel_kill runs when marcel has
	 * none, in the target thread. */
	struct sigaction k, kold;
	memset(&k, 0, sizeof(k));
	k.sa_handler = on_signal;
	sigemptyset(&k.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR2, &k, &kold), 0);
	ck_assert_int_eq(marcel_sigaction(SIGUSR2, NULL, &sa), 0);
	ck_assert_ptr_eq(sa.marcel_sa_handler, on_signal);
	marcel_t t;
	marcel_sem_init(&target_go, 0);
	marcel_sem_init(&target_ready, 0);
	target_done = 0;
	ck_assert_int_eq(marcel_create(&t, NULL, waiting_target, NULL), 0);
	ck_assert_int_eq(marcel_kill(t, SIGUSR2), 0);
	marcel_sem_P(&handled);
	ck_assert_ptr_eq(__atomic_load_n(&handler_self, __ATOMIC_SEQ_CST), t);
	marcel_sem_V(&target_go);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_int_eq(sigaction(SIGUSR2, &kold, NULL), 0);
	ma_test_end_checked();
}
END_TEST

/* ------------------------------------------------------------------ errors */

static any_t quick(any_t arg)
{
	return arg;
}

START_TEST(test_errors)
{
	ma_test_start_checked(0);
	marcel_t self = marcel_self();
	ck_assert_int_eq(marcel_kill(self, 0), 0);
	ck_assert_int_eq(marcel_kill(self, -1), EINVAL);
	ck_assert_int_eq(marcel_kill(self, MARCEL_NSIG), EINVAL);
	ck_assert_int_eq(marcel_kill(self, SIGRTMIN + 7), EINVAL);
	ck_assert_int_eq(marcel_kill(NULL, 0), ESRCH);
	ck_assert_int_eq(marcel_kill(NULL, SIGUSR1), ESRCH);
	/* Ended, not joined yet. */
	marcel_t t;
	marcel_sem_t gate;
	marcel_sem_init(&gate, 0);
	ck_assert_int_eq(marcel_create(&t, NULL, quick, NULL), 0);
	while (marcel_kill(t, 0) == 0)
		marcel_yield();
	ck_assert_int_eq(marcel_kill(t, SIGUSR1), ESRCH);
	ck_assert_int_eq(marcel_join(t, NULL), 0);

	ck_assert_int_eq(marcel_sigmask(42, &(marcel_sigset_t){ 0 }, NULL), EINVAL);
	set_errno(0);
	ck_assert_int_eq(marcel_sigpending(NULL), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	struct marcel_sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.marcel_sa_handler = SIG_IGN;
	int bad[] = { 0, -3, MARCEL_NSIG, SIGKILL, SIGSTOP, SIGRTMIN + 7 };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		set_errno(0);
		ck_assert_int_eq(marcel_sigaction(bad[i], &sa, NULL), -1);
		ck_assert_int_eq(get_errno(), EINVAL);
	}
	/* Reading SIGKILL's action is fine. */
	ck_assert_int_eq(marcel_sigaction(SIGKILL, NULL, &sa), 0);
	set_errno(0);
	ck_assert_ptr_eq(marcel_signal(0, SIG_IGN), SIG_ERR);
	ck_assert_int_eq(get_errno(), EINVAL);
	marcel_sigset_t empty = set_of(0);
	int sig;
	ck_assert_int_eq(marcel_sigwait(&empty, &sig), EINVAL);
	ck_assert_int_eq(marcel_sigwait(NULL, &sig), EINVAL);
	set_errno(0);
	ck_assert_int_eq(marcel_sigwaitinfo(&empty, NULL), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	set_errno(0);
	ck_assert_int_eq(marcel_sigsuspend(NULL), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	set_errno(0);
	ck_assert_int_eq(marcel_sighold(0), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	/* An ignored signal is discarded. */
	ck_assert_int_eq(marcel_sigignore(SIGUSR2), 0);
	ck_assert_int_eq(marcel_raise(SIGUSR2), 0);
	ck_assert_int_eq(marcel_sighold(SIGUSR2), 0);
	ck_assert_int_eq(blocks(SIGUSR2), 1);
	ck_assert_int_eq(marcel_sigrelse(SIGUSR2), 0);
	ck_assert_int_eq(blocks(SIGUSR2), 0);
	ck_assert_ptr_eq(marcel_signal(SIGUSR2, SIG_DFL), SIG_IGN);
	ma_test_end_checked();
	/* Outside a marcel thread, the C library's calls. */
	marcel_sigset_t cur;
	ck_assert_int_eq(marcel_sigmask(SIG_BLOCK, NULL, &cur), 0);
	ck_assert_int_eq(marcel_kill(self, SIGUSR1), ESRCH);
}
END_TEST

static void tc_masks(TCase *tc)
{
	tcase_add_test(tc, test_masks_independent);
	tcase_add_test(tc, test_kill_in_target);
	tcase_add_test(tc, test_kill_in_target_one_vp);
	tcase_add_test(tc, test_masked_then_unmasked);
	tcase_add_test(tc, test_actions);
}

static void tc_waits(TCase *tc)
{
	tcase_add_test(tc, test_sigwait);
	tcase_add_test(tc, test_sigwait_one_vp);
	tcase_add_test(tc, test_sigtimedwait);
	tcase_add_test(tc, test_sigsuspend);
	tcase_add_test(tc, test_process_directed);
	tcase_add_test(tc, test_errors);
}

int main(void)
{
	Suite *s = suite_create("signal");
	ma_test_add_both(s, "masks", tc_masks, 60);
	ma_test_add_both(s, "waits", tc_waits, 60);
	return ma_test_run(s);
}
