/**
 * @file marcel/signal.h
 * @brief Signals per marcel thread: masks, pending sets, marcel_kill(), handlers run in
 * the target thread's context, and signal waits that wait as marcel threads.
 *
 * Each marcel thread has its own signal mask, inherited from its creator (a thread made
 * by a kernel thread that is not a marcel thread starts with an empty mask; main's is the
 * kernel mask it had at marcel_init()), and its own set of pending signals, empty at
 * creation. marcel_kill() marks a signal pending on a thread; unless the thread blocks
 * it, the handler runs **in that thread's context** (on its stack, marcel_self() being
 * it) at the thread's next point where marcel has control:
 *  - at once, when a thread signals itself (marcel_raise()) or unblocks a pending signal
 *    (marcel_sigmask());
 *  - when it is switched in (after a yield, a preemption, or any wait);
 *  - a thread blocked in a marcel wait (mutex, condition, semaphore, join, sleep...) is
 *    woken to run the handler, then goes back to its wait: every wait restarts, as with
 *    `SA_RESTART`, whatever the flags (sleeps keep their deadline, nothing returns
 *    EINTR except marcel_sigsuspend() and marcel_pause());
 *  - a thread running on another VP is asked to switch at its next safe point (the
 *    preemption request of time slicing); where preemption is unavailable (the portable
 *    build, ThreadSanitizer, a static libmarcel) and the thread computes without calling
 *    marcel, the handler waits for its next yield or wait.
 *
 * The handler is the one marcel_sigaction() or marcel_signal() installed or, for a
 * signal marcel has no handler for, the process's (the C library's `sigaction`): a
 * program's own handlers therefore run in the target thread when the signal comes from
 * marcel_kill(). `SIG_IGN` discards the signal; `SIG_DFL` applies the default action to
 * the process (most signals end it), as a kernel signal would. During the handler the
 * thread's mask also blocks the action's `sa_mask` and the signal itself (unless
 * `SA_NODEFER`); `SA_RESETHAND` and `SA_SIGINFO` are honoured, the other flags ignored.
 *
 * **Process-directed signals** (`kill(getpid(), sig)`, a terminal's Ctrl-C, `alarm`) go
 * to a kernel thread, i.e. to some worker. For a signal that has a marcel handler, or
 * that a marcel thread waits for in marcel_sigwait() and the like, marcel catches it in
 * whichever worker receives it and hands it to one marcel thread: a thread waiting for it
 * first, else one that does not block it (woken or asked to switch as above); if every
 * thread blocks it, it stays pending for the process until a thread unblocks it, waits
 * for it, or is created without blocking it. Signals blocked in every kernel thread
 * before marcel_init() (the old recipe: workers inherit the mask) are taken from the
 * kernel by a helper thread once a marcel thread waits for them or installs a handler.
 * Signals with a handler installed by the C library's `sigaction` keep running that
 * handler at once on the worker that receives them.
 *
 * **Synchronous signals** (`SIGSEGV`, `SIGBUS`, `SIGFPE`, `SIGILL`, `SIGTRAP`, `SIGSYS`)
 * belong to the faulting instruction, hence to the marcel thread running it:
 * marcel_sigaction() passes them to the kernel, whose handler runs at once in that
 * thread. `SIGKILL` and `SIGSTOP` cannot be caught or blocked: marcel_kill() sends them
 * to the process. `SIGRTMIN + 7` belongs to marcel's preemption: EINVAL.
 *
 * Outside a marcel thread (before marcel_init(), in a kernel thread of the program's own)
 * these calls are the C library's (marcel_sigmask() is `pthread_sigmask`, marcel_sigwait()
 * is `sigwait`...). Inside a blocking section a thread's mask and pending set are still
 * its own, its handlers wait until it leaves the section, and the waits are the kernel's.
 * The kernel's own waits stay available in `marcel/blocking.h`:
 * marcel_blocking_sigwait() and its siblings.
 */
#ifndef MARCEL_SIGNAL_H
#define MARCEL_SIGNAL_H

#include <signal.h>
#include <time.h>
#include <marcel/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup marcel_signal Signals
 * Per-thread signal masks and delivery, Marcel's signal family (see @ref marcel/signal.h
 * for the model). Error conventions follow POSIX: marcel_kill(), marcel_sigmask() and
 * marcel_sigwait() return an error number; the others return -1 and set `errno`.
 * @{ */

/** A signal set: the C library's `sigset_t`, so that POSIX sets and calls mix freely
 * with marcel's. */
typedef sigset_t marcel_sigset_t;

/** One more than the largest signal number (Linux's `NSIG`; a constant, usable where
 * strict POSIX modes hide `NSIG`). */
#define MARCEL_NSIG 65

/** A handler of marcel_signal(). */
typedef void (*marcel_sighandler_t)(int);

/** Marcel's form of `struct sigaction`, taken by marcel_sigaction(). */
struct marcel_sigaction {
	/** Handler, `SIG_DFL` or `SIG_IGN` (without `SA_SIGINFO` in the flags). */
	void (*marcel_sa_handler)(int);
	/** Signals blocked in the thread while the handler runs (besides the signal). */
	marcel_sigset_t marcel_sa_mask;
	/** `SA_SIGINFO`, `SA_RESETHAND`, `SA_NODEFER`; others are accepted and ignored. */
	int marcel_sa_flags;
	/** Handler taking a `siginfo_t` (with `SA_SIGINFO`); its third argument is NULL. */
	void (*marcel_sa_sigaction)(int, siginfo_t *, void *);
};

/** Sends @p sig to thread @p thread (`pthread_kill`): marks it pending there; the
 * handler runs in @p thread's context as described in @ref marcel/signal.h.
 * @p sig 0 only checks that the thread exists. `SIGKILL` and `SIGSTOP` go to the process.
 * @return 0; EINVAL for a signal number out of range or reserved (`SIGRTMIN + 7`);
 * ESRCH if @p thread is not a live marcel thread (ended, or NULL). */
int marcel_kill(marcel_t thread, int sig);
/** marcel_kill(marcel_self(), @p sig): the handler has run when it returns, unless the
 * caller blocks @p sig. Outside a marcel thread, the C library's `raise`.
 * @return 0, or -1 with `errno` EINVAL. */
int marcel_raise(int sig);
/** The calling thread's mask (`pthread_sigmask`): @p how is `SIG_BLOCK`, `SIG_UNBLOCK` or
 * `SIG_SETMASK`; @p set may be NULL (only reads); @p oset, if not NULL, receives the
 * previous mask. `SIGKILL` and `SIGSTOP` are never blocked. Pending signals that become
 * unblocked are delivered before it returns.
 * @return 0; EINVAL for a bad @p how. */
int marcel_sigmask(int how, const marcel_sigset_t *set, marcel_sigset_t *oset);
/** The signals pending for the caller (its own or the process's) that it blocks.
 * @return 0, or -1 with `errno` EINVAL for a NULL @p set. */
int marcel_sigpending(marcel_sigset_t *set);
/** Installs @p act (if not NULL) as the action for @p sig, for marcel_kill() and for
 * process-directed signals, and returns the previous one in @p oact (if not NULL).
 * Installing a handler makes marcel catch @p sig for the whole process.
 * @return 0, or -1 with `errno` EINVAL (bad or reserved @p sig, an action for `SIGKILL`
 * or `SIGSTOP`). */
#if defined(__cplusplus) && defined(__GNUC__)
/* Marcel's name, like POSIX's sigaction, is both a struct and a function: g++'s -Wshadow
 * would call the function a shadow of the struct's constructor. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#endif
int marcel_sigaction(int sig, const struct marcel_sigaction *act, struct marcel_sigaction *oact);
#if defined(__cplusplus) && defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
/** marcel_sigaction() with BSD semantics (`SA_RESTART`, handler kept), as glibc's
 * `signal`. @return the previous handler, or `SIG_ERR` with `errno` EINVAL. */
marcel_sighandler_t marcel_signal(int sig, marcel_sighandler_t handler);
/** The process's `alarm`: `SIGALRM` comes process-directed after @p seconds and goes to
 * a marcel thread as such signals do. @return the seconds left of the previous alarm. */
unsigned marcel_alarm(unsigned seconds);
/** Blocks @p sig in the calling thread. @return 0, or -1 and `errno` EINVAL. */
int marcel_sighold(int sig);
/** Unblocks @p sig in the calling thread. @return 0, or -1 and `errno` EINVAL. */
int marcel_sigrelse(int sig);
/** Sets @p sig's action to `SIG_IGN`. @return 0, or -1 and `errno` EINVAL. */
int marcel_sigignore(int sig);

/** Waits as a marcel thread (its worker runs others) until one of @p set is pending for
 * the caller or the process, takes it and stores it in @p sig (`sigwait`). The signals
 * should be blocked in the caller (else a handler may take them first). A cancellation
 * point. Handlers of other signals run meanwhile and the wait goes on.
 * @return 0; EINVAL for an empty set or NULL arguments. */
int marcel_sigwait(const marcel_sigset_t *set, int *sig);
/** marcel_sigwait() with its `siginfo_t` (`sigwaitinfo`; @p info may be NULL): from
 * marcel_kill(), `si_code` is `SI_TKILL`; from the process, what the kernel gave.
 * @return the signal number, or -1 with `errno` EINVAL. */
int marcel_sigwaitinfo(const marcel_sigset_t *set, siginfo_t *info);
/** marcel_sigwaitinfo() for at most @p timeout (NULL: no limit; zero: only looks).
 * @return the signal number, or -1 with `errno` EAGAIN (timed out) or EINVAL (also for
 * a malformed @p timeout). */
int marcel_sigtimedwait(const marcel_sigset_t *set, siginfo_t *info, const struct timespec *timeout);
/** Replaces the caller's mask by @p mask until a signal it does not block is delivered
 * (its handler runs), then restores the mask (`sigsuspend`). Ignored signals do not end
 * it. @return -1 with `errno` EINTR (or EINVAL for a NULL @p mask). */
int marcel_sigsuspend(const marcel_sigset_t *mask);
/** marcel_sigsuspend() with the caller's own mask (`pause`). @return -1, `errno` EINTR. */
int marcel_pause(void);

/** Empties @p set. @return 0. */
static inline int marcel_sigemptyset(marcel_sigset_t *set)
{
	return sigemptyset(set);
}
/** Fills @p set with every signal. @return 0. */
static inline int marcel_sigfillset(marcel_sigset_t *set)
{
	return sigfillset(set);
}
/** Adds @p sig to @p set. @return 0, or -1 with `errno` EINVAL. */
static inline int marcel_sigaddset(marcel_sigset_t *set, int sig)
{
	return sigaddset(set, sig);
}
/** Removes @p sig from @p set. @return 0, or -1 with `errno` EINVAL. */
static inline int marcel_sigdelset(marcel_sigset_t *set, int sig)
{
	return sigdelset(set, sig);
}
/** @return 1 if @p sig is in @p set, 0 if not, -1 (`errno` EINVAL) for a bad @p sig. */
static inline int marcel_sigismember(const marcel_sigset_t *set, int sig)
{
	return sigismember(set, sig);
}
/** @cond MARCEL_SIGNAL_PRIVATE */
/* The set operations below, signal by signal (sigset_t is opaque): op 0 = not left,
 * 1 = and, 2 = or, 3 = left and not right. */
static inline int marcel_sigset_combine_(marcel_sigset_t *dest, const marcel_sigset_t *left,
					 const marcel_sigset_t *right, int op)
{
	marcel_sigset_t r;
	sigemptyset(&r);
	for (int s = 1; s < MARCEL_NSIG; s++) {
		int l = sigismember(left, s) == 1, rt = right && sigismember(right, s) == 1;
		if (op == 0 ? sigismember(left, s) == 0 : op == 1 ? l && rt : op == 2 ? l || rt : l && !rt)
			sigaddset(&r, s);
	}
	*dest = r;
	return 0;
}
/** @endcond */
/** @p dest = every signal not in @p set. @return 0. */
static inline int marcel_signotset(marcel_sigset_t *dest, const marcel_sigset_t *set)
{
	return marcel_sigset_combine_(dest, set, NULL, 0);
}
/** @p dest = @p left ∩ @p right. @return 0. */
static inline int marcel_sigandset(marcel_sigset_t *dest, const marcel_sigset_t *left,
				   const marcel_sigset_t *right)
{
	return marcel_sigset_combine_(dest, left, right, 1);
}
/** @p dest = @p left ∪ @p right. @return 0. */
static inline int marcel_sigorset(marcel_sigset_t *dest, const marcel_sigset_t *left,
				  const marcel_sigset_t *right)
{
	return marcel_sigset_combine_(dest, left, right, 2);
}
/** @p dest = @p left minus @p right. @return 0. */
static inline int marcel_signandset(marcel_sigset_t *dest, const marcel_sigset_t *left,
				    const marcel_sigset_t *right)
{
	return marcel_sigset_combine_(dest, left, right, 3);
}
/** @return 1 if @p set holds no signal, else 0. */
static inline int marcel_sigisemptyset(const marcel_sigset_t *set)
{
	for (int s = 1; s < MARCEL_NSIG; s++)
		if (sigismember(set, s) == 1)
			return 0;
	return 1;
}
/** @return 1 if @p set holds every signal, else 0. */
static inline int marcel_sigisfullset(const marcel_sigset_t *set)
{
	for (int s = 1; s < MARCEL_NSIG; s++)
		if (sigismember(set, s) != 1)
			return 0;
	return 1;
}
/** @return 1 if @p left and @p right hold the same signals, else 0. */
static inline int marcel_sigequalset(const marcel_sigset_t *left, const marcel_sigset_t *right)
{
	for (int s = 1; s < MARCEL_NSIG; s++)
		if (sigismember(left, s) != sigismember(right, s))
			return 0;
	return 1;
}
/** @return 1 if @p sig is in @p left ∪ @p right, else 0. */
static inline int marcel_sigorismember(const marcel_sigset_t *left, const marcel_sigset_t *right, int sig)
{
	return sigismember(left, sig) == 1 || sigismember(right, sig) == 1;
}
/** @return 1 if @p sig is in @p left and not in @p right, else 0. */
static inline int marcel_signandismember(const marcel_sigset_t *left, const marcel_sigset_t *right, int sig)
{
	return sigismember(left, sig) == 1 && sigismember(right, sig) != 1;
}
/** @return 1 if every signal of @p left is in @p right, else 0. */
static inline int marcel_signandisempty(const marcel_sigset_t *left, const marcel_sigset_t *right)
{
	for (int s = 1; s < MARCEL_NSIG; s++)
		if (sigismember(left, s) == 1 && sigismember(right, s) != 1)
			return 0;
	return 1;
}

/** @} */

#ifdef __cplusplus
}
#endif

#endif
