/*
 * Signals of marcel threads (marcel/signal.h): each thread's mask and pending set,
 * marcel_kill, delivery in the thread's own context, and the signal waits done as marcel
 * waits. Process-directed signals reach ma_sig_proc_pending through sigproc.c.
 *
 * Delivery never interrupts a thread asynchronously: the thread runs its handlers itself,
 * after a switch (ma_sig_check in sched.c), before it blocks and when a wake-up cancels
 * its block (ma_sig_due in the wait loops), at its start, and in the calls of this file.
 * A sender makes sure such a point comes (ma_sig_notify): a blocked thread is woken
 * and, its wait not being over, blocks again once the handler returned; a running one is
 * asked to switch by a preemption request.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <marcel/blocking.h>
#include "ma_preempt.h"
#include "ma_signal.h"
#include "ma_sync.h"

uint64_t ma_sig_bits(const sigset_t *set)
{
	uint64_t b = 0;
	for (int s = 1; s < NSIG; s++)
		if (sigismember(set, s) == 1)
			b |= MA_SIG_BIT(s);
	return b;
}

void ma_sig_set(sigset_t *set, uint64_t bits)
{
	sigemptyset(set);
	for (int s = 1; s < NSIG; s++)
		if (bits & MA_SIG_BIT(s))
			sigaddset(set, s);
}

uint64_t ma_sig_usable(void)
{
	uint64_t b = 0;
	for (int s = 1; s < NSIG; s++)
		if (ma_sig_valid(s))
			b |= MA_SIG_BIT(s);
	return b & ~MA_SIG_UNBLOCKABLE;
}

/* errno of the caller's kernel thread, set after the caller may have moved to another
 * worker: not inlined, so no errno address computed before a switch is reused. */
static __attribute__((noinline)) int ma_sig_fail(int e)
{
	errno = e;
	return -1;
}

static void ma_sig_tkill_info(int sig, siginfo_t *info)
{
	memset(info, 0, sizeof(*info));
	info->si_signo = sig;
	info->si_code = SI_TKILL;
	info->si_pid = getpid();
	info->si_uid = getuid();
}

/* The calling marcel thread, also inside a blocking section (where it has no worker:
 * its mask changes, its handlers wait until it leaves the section). */
static struct marcel_task *ma_sig_self(void)
{
	struct marcel_task *t = ma_task_self();
	return t ? t : ma_tls_section_task;
}

void ma_sig_init_main(struct marcel_task *m)
{
	sigset_t k;
	pthread_sigmask(SIG_BLOCK, NULL, &k);
	atomic_store(&m->sig_mask, ma_sig_bits(&k) & ~MA_SIG_UNBLOCKABLE);
	atomic_store(&m->sig_pending, 0);
	atomic_store(&m->sig_wait, 0);
	ma_sig_start(&k);
}

/* The default action of sig for the process: the kernel's, applied by sending sig to
 * this kernel thread with SIG_DFL in place; most signals end the process there. */
static int ma_sig_default(int sig)
{
	if (sig == SIGCHLD || sig == SIGCONT || sig == SIGURG || sig == SIGWINCH)
		return 0;
	struct sigaction dfl, old;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigset_t one, oldmask;
	sigemptyset(&one);
	sigaddset(&one, sig);
	sigaction(sig, &dfl, &old);
	pthread_sigmask(SIG_UNBLOCK, &one, &oldmask);
	pthread_kill(pthread_self(), sig);
	/* Still here: a stop signal, and the process was continued since. */
	pthread_sigmask(SIG_SETMASK, &oldmask, NULL);
	sigaction(sig, &old, NULL);
	return 1;
}

/* Runs sig's action in self; 1 if it was not to ignore it. */
static int ma_sig_run(struct marcel_task *self, int sig, siginfo_t *info)
{
	struct sigaction act;
	ma_sig_action(sig, &act);
	if (!(act.sa_flags & SA_SIGINFO) && act.sa_handler == SIG_IGN)
		return 0;
	if (!(act.sa_flags & SA_SIGINFO) && act.sa_handler == SIG_DFL)
		return ma_sig_default(sig);
	uint64_t old = atomic_load_explicit(&self->sig_mask, memory_order_relaxed);
	uint64_t during = old | ma_sig_bits(&act.sa_mask) | (act.sa_flags & SA_NODEFER ? 0 : MA_SIG_BIT(sig));
	atomic_store(&self->sig_mask, during & ~MA_SIG_UNBLOCKABLE);
	if (act.sa_flags & SA_RESETHAND)
		ma_sig_reset(sig);
	/* The handler may switch: errno is the one of whichever worker runs us after it. */
	int saved = *ma_worker_self()->errno_loc;
	if (act.sa_flags & SA_SIGINFO)
		act.sa_sigaction(sig, info, NULL);
	else
		act.sa_handler(sig);
	*ma_worker_self()->errno_loc = saved;
	atomic_store(&self->sig_mask, old);
	return 1;
}

/* Takes the lowest signal of bits pending in *set; 0 if none is left there. */
static int ma_sig_claim(_Atomic uint64_t *set, uint64_t bits)
{
	for (;;) {
		uint64_t p = atomic_load(set) & bits;
		if (!p)
			return 0;
		int sig = __builtin_ctzll(p) + 1;
		if (atomic_fetch_and(set, ~MA_SIG_BIT(sig)) & MA_SIG_BIT(sig))
			return sig;
	}
}

_Atomic uint64_t ma_sig_waited MA_HIDDEN;
/* How many threads wait for each signal; ma_sig_waited follows, under the lock. */
static ma_spinlock_t ma_sig_waited_lock;
static unsigned ma_sig_nwaiting[NSIG];

static void ma_sig_waiting(uint64_t want, int delta)
{
	ma_spin_lock(&ma_sig_waited_lock);
	uint64_t m = atomic_load_explicit(&ma_sig_waited, memory_order_relaxed);
	for (uint64_t w = want; w; w &= w - 1) {
		int sig = __builtin_ctzll(w) + 1;
		ma_sig_nwaiting[sig] += (unsigned)delta;
		if (ma_sig_nwaiting[sig])
			m |= MA_SIG_BIT(sig);
		else
			m &= ~MA_SIG_BIT(sig);
	}
	atomic_store(&ma_sig_waited, m);
	ma_spin_unlock(&ma_sig_waited_lock);
}

/* One signal of want pending for self (its own first, then the process's, those that
 * others wait for excepted unless waiting), taken with its siginfo; 0 if none. */
static int ma_sig_take(struct marcel_task *self, uint64_t want, int waiting, siginfo_t *info)
{
	int sig = ma_sig_claim(&self->sig_pending, want);
	if (sig) {
		ma_sig_tkill_info(sig, info);
		return sig;
	}
	if (!waiting)
		want &= ~atomic_load(&ma_sig_waited);
	sig = ma_sig_claim(&ma_sig_proc_pending, want);
	if (sig)
		ma_sig_proc_info(sig, info);
	return sig;
}

static int ma_sig_deliver_in(struct marcel_task *self, int waiting)
{
	/* Scheduling contexts run no handlers; a thread inside a blocking section has no VP
	 * (it takes its signals when it leaves). */
	if (self->is_idle || ma_worker_self() == NULL)
		return 0;
	int ran = 0;
	for (;;) {
		uint64_t may = ~(atomic_load_explicit(&self->sig_mask, memory_order_relaxed) |
				 atomic_load_explicit(&self->sig_wait, memory_order_relaxed));
		siginfo_t info;
		int sig = ma_sig_take(self, may, waiting, &info);
		if (!sig)
			return ran;
		ran += ma_sig_run(self, sig, &info);
	}
}

int ma_sig_deliver(struct marcel_task *self)
{
	return ma_sig_deliver_in(self, 0);
}

/* ma_sig_deliver for a thread in marcel_sigsuspend: it may take the signals it waits for. */
static int ma_sig_deliver_waiting(struct marcel_task *self)
{
	return ma_sig_deliver_in(self, 1);
}

void ma_sig_notify(struct marcel_task *t)
{
	int s = atomic_load(&t->state);
	if (s == MA_TASK_BLOCKED || s == MA_TASK_BLOCKING) {
		ma_wake_task(t);
		return;
	}
	if (s != MA_TASK_RUNNING)
		return; /* ready: it takes its signals when it is switched in */
	int vp = atomic_load_explicit(&t->last_vp, memory_order_relaxed);
	if (vp >= 0 && (unsigned)vp < ma_rt.nb_vps &&
	    atomic_load_explicit(&ma_rt.workers[vp].current, memory_order_relaxed) == t)
		ma_preempt_request(&ma_rt.workers[vp]);
}

int marcel_kill(marcel_t t, int sig)
{
	if (sig != 0 && !ma_sig_valid(sig))
		return EINVAL;
	if (!ma_rt.running || !ma_task_valid(t) || t->is_idle || atomic_load(&t->state) == MA_TASK_DEAD ||
	    (atomic_load(&t->link) & MA_LINK_DEAD))
		return ESRCH;
	if (sig == 0)
		return 0;
	if (sig == SIGKILL || sig == SIGSTOP)
		return kill(getpid(), sig) ? errno : 0;
	uint64_t bit = MA_SIG_BIT(sig);
	/* Sequentially consistent, against the waits' checks after they publish themselves
	 * (sig_wait, the BLOCKED state). */
	atomic_fetch_or(&t->sig_pending, bit);
	if (atomic_load(&t->sig_wait) & bit) {
		ma_fwake(&t->sig_pending, 1);
		return 0;
	}
	if (atomic_load_explicit(&t->sig_mask, memory_order_relaxed) & bit)
		return 0; /* pending until t unblocks it */
	if (t == ma_sig_self())
		ma_sig_deliver(t);
	else
		ma_sig_notify(t);
	return 0;
}

int marcel_raise(int sig)
{
	struct marcel_task *self = ma_sig_self();
	if (!self)
		return raise(sig);
	int e = marcel_kill(self, sig);
	return e ? ma_sig_fail(e) : 0;
}

int marcel_sigmask(int how, const marcel_sigset_t *set, marcel_sigset_t *oset)
{
	struct marcel_task *self = ma_sig_self();
	if (!self)
		return pthread_sigmask(how, set, oset);
	uint64_t old = atomic_load_explicit(&self->sig_mask, memory_order_relaxed), m = old;
	if (set) {
		uint64_t b = ma_sig_bits(set);
		switch (how) {
		case SIG_BLOCK: m |= b; break;
		case SIG_UNBLOCK: m &= ~b; break;
		case SIG_SETMASK: m = b; break;
		default: return EINVAL;
		}
	}
	if (oset)
		ma_sig_set(oset, old);
	if (set) {
		atomic_store(&self->sig_mask, m & ~MA_SIG_UNBLOCKABLE);
		ma_sig_check(self);
	}
	return 0;
}

int marcel_sigpending(marcel_sigset_t *set)
{
	if (!set)
		return ma_sig_fail(EINVAL);
	struct marcel_task *self = ma_sig_self();
	if (!self)
		return sigpending(set);
	uint64_t p = atomic_load(&self->sig_pending) | atomic_load(&ma_sig_proc_pending);
	ma_sig_set(set, p & atomic_load_explicit(&self->sig_mask, memory_order_relaxed));
	return 0;
}

static int ma_sig_one(int how, int sig)
{
	if (!ma_sig_valid(sig))
		return ma_sig_fail(EINVAL);
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, sig);
	return marcel_sigmask(how, &one, NULL) ? ma_sig_fail(EINVAL) : 0;
}

int marcel_sighold(int sig)
{
	return ma_sig_one(SIG_BLOCK, sig);
}

int marcel_sigrelse(int sig)
{
	return ma_sig_one(SIG_UNBLOCK, sig);
}

/* ---- waits ---- */

struct ma_sig_waitarg {
	struct marcel_task *self;
	uint64_t want;
};

static int ma_sig_wait_blocking(const void *arg)
{
	const struct ma_sig_waitarg *a = arg;
	return !((atomic_load(&a->self->sig_pending) | atomic_load(&ma_sig_proc_pending)) & a->want);
}

/* Blocks self until a signal of a->want is pending for it or the process, or until
 * deadline: 0 when one may be, ETIMEDOUT. A cancellation point: acts on a request. */
static int ma_sig_block(struct ma_sig_waitarg *a, uint64_t deadline)
{
	/* Published before the check under the queue's lock: a sender setting a bit then
	 * reading sig_wait either is seen by that check or wakes us. */
	atomic_store(&a->self->sig_wait, a->want);
	int e = ma_fwait_point(&a->self->sig_pending, ma_sig_wait_blocking, a, deadline);
	atomic_store(&a->self->sig_wait, 0);
	if (e == ECANCELED) {
		ma_sig_waiting(a->want, -1);
		ma_cancel_act(a->self);
	}
	return e == ETIMEDOUT ? ETIMEDOUT : 0;
}

/* sigtimedwait for a marcel thread: the signal taken, or 0 at deadline. */
static int ma_sig_timedwait(struct marcel_task *self, uint64_t want, siginfo_t *info, uint64_t deadline)
{
	ma_cancel_point(self);
	ma_sig_want(want, 1);
	struct ma_sig_waitarg a = { self, want };
	ma_sig_waiting(want, 1);
	int sig;
	for (;;) {
		sig = ma_sig_take(self, want, 1, info);
		if (sig)
			break;
		if (ma_sig_block(&a, deadline) == ETIMEDOUT) {
			sig = ma_sig_take(self, want, 1, info);
			break;
		}
	}
	ma_sig_waiting(want, -1);
	return sig;
}

/* The signals of set a marcel thread may wait for; 0 if none. */
static uint64_t ma_sig_waitable(const sigset_t *set)
{
	return ma_sig_bits(set) & ma_sig_usable();
}

int marcel_sigwait(const marcel_sigset_t *set, int *sig)
{
	if (!set || !sig)
		return EINVAL;
	struct marcel_task *self = ma_task_self();
	if (!self)
		return marcel_blocking_sigwait(set, sig);
	uint64_t want = ma_sig_waitable(set);
	if (!want)
		return EINVAL;
	siginfo_t info;
	*sig = ma_sig_timedwait(self, want, &info, MA_NO_DEADLINE);
	return 0;
}

int marcel_sigtimedwait(const marcel_sigset_t *set, siginfo_t *info, const struct timespec *timeout)
{
	if (!set)
		return ma_sig_fail(EINVAL);
	struct marcel_task *self = ma_task_self();
	if (!self)
		return marcel_blocking_sigtimedwait(set, info, timeout);
	if (timeout && (timeout->tv_sec < 0 || timeout->tv_nsec < 0 || timeout->tv_nsec >= 1000000000))
		return ma_sig_fail(EINVAL);
	uint64_t want = ma_sig_waitable(set);
	if (!want)
		return ma_sig_fail(EINVAL);
	uint64_t deadline = MA_NO_DEADLINE;
	if (timeout)
		deadline = ma_deadline_in((uint64_t)timeout->tv_sec * 1000000000u + (uint64_t)timeout->tv_nsec);
	siginfo_t local;
	int sig = ma_sig_timedwait(self, want, info ? info : &local, deadline);
	return sig ? sig : ma_sig_fail(EAGAIN);
}

int marcel_sigwaitinfo(const marcel_sigset_t *set, siginfo_t *info)
{
	if (!set)
		return ma_sig_fail(EINVAL);
	if (!ma_task_self())
		return marcel_blocking_sigwaitinfo(set, info);
	return marcel_sigtimedwait(set, info, NULL);
}

int marcel_sigsuspend(const marcel_sigset_t *mask)
{
	if (!mask)
		return ma_sig_fail(EINVAL);
	struct marcel_task *self = ma_task_self();
	if (!self)
		return marcel_blocking_sigsuspend(mask);
	ma_cancel_point(self);
	uint64_t old = atomic_load_explicit(&self->sig_mask, memory_order_relaxed);
	uint64_t during = ma_sig_bits(mask) & ~MA_SIG_UNBLOCKABLE;
	ma_sig_want(ma_sig_usable() & ~during, 0);
	atomic_store(&self->sig_mask, during);
	struct ma_sig_waitarg a = { self, ma_sig_usable() & ~during };
	ma_sig_waiting(a.want, 1);
	/* Until a handler ran: ignored signals and spurious wake-ups do not end it. */
	while (ma_sig_deliver_waiting(self) == 0)
		ma_sig_block(&a, MA_NO_DEADLINE);
	ma_sig_waiting(a.want, -1);
	atomic_store(&self->sig_mask, old);
	/* The mask restored may unblock what the one of the wait blocked. */
	ma_sig_check(self);
	return ma_sig_fail(EINTR);
}

int marcel_pause(void)
{
	sigset_t cur;
	if (!ma_task_self())
		return marcel_blocking_pause();
	marcel_sigmask(SIG_BLOCK, NULL, &cur);
	return marcel_sigsuspend(&cur);
}
