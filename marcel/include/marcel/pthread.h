/**
 * @file marcel/pthread.h
 * @brief Porting pthread programs: maps the `pthread_*` names onto marcel.
 *
 * A program written for POSIX threads runs on marcel's user-level threads after two
 * changes (see `doc/porting.md`):
 *
 *  1. include `<marcel/pthread.h>` instead of `<pthread.h>` (in every file that uses
 *     threads);
 *  2. bracket `main` with `marcel_init(&argc, argv)` and `marcel_end()`.
 *
 * Or with no source edit at all: build every file with the flags of the `marcel-pthread`
 * pkg-config module (`pkg-config --cflags --libs marcel-pthread`). They force this header
 * into every file (`-include marcel/pthread.h`, so no file can miss it and mix the C
 * library's types with marcel's) and define `MARCEL_PTHREAD_AUTO`, with which the runtime
 * starts before `main` (configured by the `MARCEL_*` variables); a `marcel_init` the
 * program makes anyway then succeeds without starting anything, and `marcel_end` need not
 * be called.
 *
 * Threads made by `pthread_create` have the lifetime of POSIX threads
 * (marcel_create_posix()): `marcel_end` does not wait for them, as a process does not wait
 * for its threads when `main` returns; `pthread_exit` from `main` does wait for them.
 *
 * How it works: this header first includes the system `<pthread.h>` (and `<signal.h>`,
 * `<sched.h>`, `<limits.h>`, `<time.h>`, `<unistd.h>`, `<poll.h>`, `<sys/select.h>`,
 * `<sys/socket.h>`, `<sys/wait.h>`; in C++ also `<mutex>`, `<condition_variable>`,
 * `<thread>`, `<shared_mutex>`), so the C library's declarations, and the C++ library's
 * inline code built on the pthread types, are out of the way even when another header
 * pulled them in already or comes later, then defines every mapped
 * `pthread_*` name, type and constant as a macro naming its marcel equivalent
 * (`pthread_mutex_t` becomes ::marcel_mutex_t, `pthread_mutex_lock` becomes
 * marcel_mutex_lock(), `PTHREAD_MUTEX_INITIALIZER` becomes ::MARCEL_MUTEX_INITIALIZER).
 * Where the meaning differs slightly, the name maps to a small `static inline` wrapper
 * (`marcel_pthread_*`). Return values are those of POSIX: an error code for `pthread_*`,
 * -1 and `errno` for `sem_*` and `sched_yield`.
 *
 * Semaphores (`sem_*`) are mapped when `<semaphore.h>` was included before this header.
 * Including this header again after `<semaphore.h>` also works.
 *
 * Signals are per marcel thread (@ref marcel_pthread_signals): `pthread_kill`,
 * `pthread_sigmask`, `sigprocmask`, `sigpending` and the signal waits (`sigwait`,
 * `sigwaitinfo`, `sigtimedwait`, `sigsuspend`, `pause`) are marcel's.
 *
 * What is **not** mapped:
 *  - `pthread_sigqueue` (no queued value: a build error, see @ref marcel_pthread_unmapped)
 *    and `pthread_attr_setsigmask_np` (set the mask around `pthread_create` instead).
 *  - asynchronous cancellation: `pthread_cancel` is deferred only (marcel_cancel()); a
 *    thread acts on it at its next cancellation point that marcel provides (join,
 *    condition and semaphore waits, sleeps, `pthread_testcancel`, and the start of
 *    `read`, `poll` and the other calls run in blocking sections), not while such a call
 *    waits in the kernel.
 *  - `sigaction`, `signal`, `raise`: the C library's. Handlers so installed run at once
 *    on the kernel thread the signal reaches (some worker), as SIGINT or SIGCHLD handlers
 *    expect; `pthread_kill` runs them in its target thread, and a signal a thread awaits
 *    in `sigsuspend` or `pause` is taken over by marcel and handled in that thread. A
 *    thread computing without calling marcel takes its signals at its next preemption
 *    point or marcel call.
 *  - process-shared objects: `PTHREAD_PROCESS_SHARED` gives ENOTSUP; `sem_open` and
 *    `sem_close` are build errors.
 *  - kernel scheduling: `pthread_setschedparam`, `pthread_setaffinity_np`, the
 *    `pthread_attr_setsched*` and `setinheritsched` attributes, and the `sched_*`
 *    calls other than `sched_yield` (which yields the user-level thread). Use marcel's
 *    priorities (marcel_attr_setprio()) and VP sets (marcel_attr_setvpset()) instead.
 *  - robust and priority-protocol mutexes, `pthread_*_clock*` waits, guard size and
 *    user-provided stacks: build errors.
 *  - thread-local storage: `__thread` / `_Thread_local` variables belong to the kernel
 *    thread, not to the user-level thread, and a thread may move to another kernel
 *    thread at any blocking point or blocking section. Use keys (`pthread_key_create`)
 *    instead. `errno` is per user-level thread. With `MARCEL_DEBUG=1`, a thread that
 *    leaves data in such variables and moves is reported on stderr.
 *  - `pthread_atfork` and `fork` without an immediate `exec`.
 *  - C++ threads (`std::thread`, `std::mutex`, `std::condition_variable`): they stay
 *    kernel-level. The header may come before or after the standard C++ headers: in C++
 *    it parses the ones that use the pthread types first (see the comment at its top).
 *
 * Any other `pthread_*` function keeps its C library meaning; the ones that take a
 * mapped type then draw an incompatible-pointer diagnostic, which is the cue to port
 * that call by hand.
 *
 * Calls that block in the kernel would block every thread of the worker. The sleeps
 * (`sleep`, `usleep`, `nanosleep`, `clock_nanosleep`) are mapped onto marcel's timers,
 * the calls that exist to wait (`poll`, `ppoll`, `select`, `pselect`, `accept`,
 * `accept4`, `waitpid`) onto blocking sections (@ref marcel_pthread_blocking), and the
 * signal waits onto marcel waits (@ref marcel_pthread_signals). `read`, `write`,
 * `recv`, `send`, `connect`, `wait` are not: use marcel_read(), marcel_recv()... where
 * they may wait. A busy-wait loop should call `sched_yield()` or sleep: time slicing
 * (10 ms by default, where preemption works) ends such a wait only after a slice, and
 * with `MARCEL_TIMESLICE=0` or where preemption does not work it would never let the
 * thread it waits for run.
 */
#ifndef MARCEL_PTHREAD_H
#define MARCEL_PTHREAD_H

/* The C library's declarations first: later inclusions of these are no-ops, so the
 * macros below never rewrite a system declaration. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <limits.h>
#include <errno.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <marcel.h>

#ifdef __cplusplus
/* The C++ library builds std::mutex, std::condition_variable, std::thread, std::call_once,
 * std::shared_mutex and the reference counts of <ios> (libstdc++'s gthread layer,
 * libc++'s threading support) from the C library's pthread types and calls, in inline
 * code of its headers. Parsed after the macros below, that code would take marcel's types,
 * of another size, while the compiled library keeps the C library's: the program then
 * crashes or hangs with no diagnostic. Parsed now, it is immune: their include guards
 * make the program's own inclusions of them no-ops, whatever the order. */
#if __cplusplus >= 201103L
#include <condition_variable>
#include <mutex>
#include <thread>
#if __cplusplus >= 201402L
#include <shared_mutex>
#endif
#else
#include <ios>
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup marcel_pthread Porting pthread programs
 * `<marcel/pthread.h>` maps each name of this group to the marcel function, type or
 * constant it names; see @ref marcel/pthread.h for what is not mapped.
 * @{ */

/** @defgroup marcel_pthread_types Types
 * Every pthread object type is the marcel type of the same object, so the sizes and
 * static initialisers are marcel's.
 * @{ */
#define pthread_t marcel_t                           /**< ::marcel_t */
#define pthread_attr_t marcel_attr_t                 /**< ::marcel_attr_t */
#define pthread_mutex_t marcel_mutex_t               /**< ::marcel_mutex_t */
#define pthread_mutexattr_t marcel_mutexattr_t       /**< ::marcel_mutexattr_t */
#define pthread_cond_t marcel_cond_t                 /**< ::marcel_cond_t */
#define pthread_condattr_t marcel_condattr_t         /**< ::marcel_condattr_t */
#define pthread_barrier_t marcel_barrier_t           /**< ::marcel_barrier_t */
#define pthread_barrierattr_t marcel_barrierattr_t   /**< ::marcel_barrierattr_t */
#define pthread_rwlock_t marcel_rwlock_t             /**< ::marcel_rwlock_t */
#define pthread_rwlockattr_t marcel_rwlockattr_t     /**< ::marcel_rwlockattr_t */
#define pthread_spinlock_t marcel_spinlock_t         /**< ::marcel_spinlock_t */
#define pthread_once_t marcel_once_t                 /**< ::marcel_once_t */
#define pthread_key_t marcel_key_t                   /**< ::marcel_key_t */
/** @} */

/** @defgroup marcel_pthread_consts Constants and static initialisers
 * @{ */
#undef PTHREAD_CREATE_JOINABLE
#undef PTHREAD_CREATE_DETACHED
#undef PTHREAD_MUTEX_NORMAL
#undef PTHREAD_MUTEX_RECURSIVE
#undef PTHREAD_MUTEX_ERRORCHECK
#undef PTHREAD_MUTEX_DEFAULT
#undef PTHREAD_MUTEX_TIMED_NP
#undef PTHREAD_MUTEX_FAST_NP
#undef PTHREAD_MUTEX_RECURSIVE_NP
#undef PTHREAD_MUTEX_ERRORCHECK_NP
#undef PTHREAD_PROCESS_PRIVATE
#undef PTHREAD_PROCESS_SHARED
#undef PTHREAD_BARRIER_SERIAL_THREAD
#undef PTHREAD_MUTEX_INITIALIZER
#undef PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP
#undef PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP
#undef PTHREAD_COND_INITIALIZER
#undef PTHREAD_RWLOCK_INITIALIZER
#undef PTHREAD_ONCE_INIT
#undef PTHREAD_KEYS_MAX
#undef PTHREAD_DESTRUCTOR_ITERATIONS
#undef PTHREAD_STACK_MIN

#define PTHREAD_CREATE_JOINABLE MARCEL_CREATE_JOINABLE   /**< ::MARCEL_CREATE_JOINABLE */
#define PTHREAD_CREATE_DETACHED MARCEL_CREATE_DETACHED   /**< ::MARCEL_CREATE_DETACHED */
#define PTHREAD_MUTEX_NORMAL MARCEL_MUTEX_NORMAL         /**< ::MARCEL_MUTEX_NORMAL (relocking gives EDEADLK instead of hanging) */
#define PTHREAD_MUTEX_RECURSIVE MARCEL_MUTEX_RECURSIVE   /**< ::MARCEL_MUTEX_RECURSIVE */
#define PTHREAD_MUTEX_ERRORCHECK MARCEL_MUTEX_ERRORCHECK /**< ::MARCEL_MUTEX_ERRORCHECK */
#define PTHREAD_MUTEX_DEFAULT MARCEL_MUTEX_DEFAULT       /**< ::MARCEL_MUTEX_DEFAULT */
#define PTHREAD_MUTEX_TIMED_NP MARCEL_MUTEX_NORMAL       /**< GNU name of ::MARCEL_MUTEX_NORMAL */
#define PTHREAD_MUTEX_FAST_NP MARCEL_MUTEX_NORMAL        /**< GNU name of ::MARCEL_MUTEX_NORMAL */
#define PTHREAD_MUTEX_RECURSIVE_NP MARCEL_MUTEX_RECURSIVE   /**< GNU name of ::MARCEL_MUTEX_RECURSIVE */
#define PTHREAD_MUTEX_ERRORCHECK_NP MARCEL_MUTEX_ERRORCHECK /**< GNU name of ::MARCEL_MUTEX_ERRORCHECK */
#define PTHREAD_PROCESS_PRIVATE MARCEL_PROCESS_PRIVATE   /**< ::MARCEL_PROCESS_PRIVATE */
#define PTHREAD_PROCESS_SHARED MARCEL_PROCESS_SHARED     /**< ::MARCEL_PROCESS_SHARED (refused with ENOTSUP) */
#define PTHREAD_BARRIER_SERIAL_THREAD MARCEL_BARRIER_SERIAL_THREAD /**< ::MARCEL_BARRIER_SERIAL_THREAD */
#define PTHREAD_MUTEX_INITIALIZER MARCEL_MUTEX_INITIALIZER /**< ::MARCEL_MUTEX_INITIALIZER */
#define PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP MARCEL_RECURSIVE_MUTEX_INITIALIZER   /**< ::MARCEL_RECURSIVE_MUTEX_INITIALIZER */
#define PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP MARCEL_ERRORCHECK_MUTEX_INITIALIZER /**< ::MARCEL_ERRORCHECK_MUTEX_INITIALIZER */
#define PTHREAD_COND_INITIALIZER MARCEL_COND_INITIALIZER   /**< ::MARCEL_COND_INITIALIZER */
#define PTHREAD_RWLOCK_INITIALIZER MARCEL_RWLOCK_INITIALIZER /**< ::MARCEL_RWLOCK_INITIALIZER */
#define PTHREAD_ONCE_INIT MARCEL_ONCE_INIT                 /**< ::MARCEL_ONCE_INIT */
#define PTHREAD_KEYS_MAX MARCEL_KEYS_MAX                   /**< ::MARCEL_KEYS_MAX */
#define PTHREAD_DESTRUCTOR_ITERATIONS MARCEL_DESTRUCTOR_ITERATIONS /**< ::MARCEL_DESTRUCTOR_ITERATIONS */
#define PTHREAD_STACK_MIN MARCEL_STACK_MIN                 /**< ::MARCEL_STACK_MIN */
/** @} */

/** @defgroup marcel_pthread_wrappers Wrappers
 * The calls whose marcel counterpart differs in a detail get these wrappers; the macros
 * of the other groups name them.
 * @{ */

/** `sched_yield()`: yields the calling user-level thread (marcel_yield()); outside a
 * marcel thread, yields the kernel thread. @return 0. */
static inline int marcel_pthread_sched_yield(void)
{
	if (marcel_self() == NULL)
		return sched_yield();
	marcel_yield();
	return 0;
}

/** `pthread_attr_setscope()`: marcel threads are user-level threads, which POSIX calls
 * process scope. @return 0 for `PTHREAD_SCOPE_PROCESS`; ENOTSUP for
 * `PTHREAD_SCOPE_SYSTEM`; EINVAL otherwise or if @p attr is NULL. */
static inline int marcel_pthread_attr_setscope(marcel_attr_t *attr, int scope)
{
	if (attr == NULL)
		return EINVAL;
	if (scope == PTHREAD_SCOPE_PROCESS)
		return 0;
	return scope == PTHREAD_SCOPE_SYSTEM ? ENOTSUP : EINVAL;
}

/** `pthread_attr_getscope()`: always `PTHREAD_SCOPE_PROCESS`.
 * @return 0; EINVAL for NULL arguments. */
static inline int marcel_pthread_attr_getscope(const marcel_attr_t *attr, int *scope)
{
	if (attr == NULL || scope == NULL)
		return EINVAL;
	*scope = PTHREAD_SCOPE_PROCESS;
	return 0;
}

/** `pthread_setconcurrency()`: a hint that marcel does not need (the number of workers
 * is fixed by `MARCEL_NVP` at marcel_init()). @return 0; EINVAL if @p level is negative. */
static inline int marcel_pthread_setconcurrency(int level)
{
	return level < 0 ? EINVAL : 0;
}

/** `pthread_getconcurrency()`: the number of workers, marcel_nbvps(). */
static inline int marcel_pthread_getconcurrency(void)
{
	return (int)marcel_nbvps();
}

/** `pthread_yield()` (GNU): marcel_yield(). @return 0. */
static inline int marcel_pthread_yield(void)
{
	marcel_yield();
	return 0;
}

/** @} */

/** @defgroup marcel_pthread_blocking Sleeping and blocking calls
 * A call that blocks in the kernel would block every thread of the caller's worker.
 * The sleeps become marcel sleeps (the thread waits on a timer of its worker, which runs
 * other threads meanwhile); the calls that exist to wait run inside a blocking section
 * (marcel_enter_blocking_section(): the worker goes on with a spare kernel thread).
 * These are function-like macros, so only calls are rewritten, not `&sleep` or a
 * declaration; a program whose own functions or members have one of these names
 * (`obj.poll()`, `acceptor.accept()`) can `#undef` that name after the include.
 *
 * Outside a marcel thread (before marcel_init(), in a kernel thread of the program's own,
 * or inside a blocking section) each call is the C library's, with its signals and EINTR.
 * A marcel thread on a VP is not interrupted by signals: its sleeps return 0 and set
 * `rem` to zero.
 *
 * Not mapped, since they rarely wait and are common member names: `read`, `write`,
 * `readv`, `writev`, `recv`, `recvfrom`, `recvmsg`, `send`, `sendto`, `sendmsg`,
 * `connect`, `wait`; call marcel_read(), marcel_recv()... (`<marcel/blocking.h>`) where
 * they may wait (a pipe, a socket).
 * @{ */

/** `usleep()`, through marcel_nanosleep() (`usleep` itself is not declared in strict
 * POSIX modes): in a marcel thread on a VP it returns 0, and any @p usec is accepted, as
 * glibc does (POSIX.1-2001 allowed EINVAL from 1000000 on; later editions dropped the
 * call). Elsewhere the kernel sleeps, -1 with EINTR when a handled signal interrupts it. */
static inline int marcel_pthread_usleep(unsigned long usec)
{
	struct timespec ts = { (time_t)(usec / 1000000u), (long)(usec % 1000000u) * 1000 };
	return marcel_nanosleep(&ts, NULL);
}

#define sleep(sec) marcel_sleep(sec)                 /**< marcel_sleep(): 0 (the C library's sleep() outside a marcel thread) */
#define usleep(usec) marcel_pthread_usleep(usec)     /**< marcel_pthread_usleep() */
#define nanosleep(req, rem) marcel_nanosleep(req, rem) /**< marcel_nanosleep(): 0, or -1 and EINVAL for a malformed @p req */
#define clock_nanosleep(clock, flags, req, rem) marcel_clock_nanosleep(clock, flags, req, rem) /**< marcel_clock_nanosleep() */
#define poll(fds, nfds, timeout) marcel_poll(fds, nfds, timeout) /**< marcel_poll() */
#define ppoll(fds, nfds, timeout, sigmask) marcel_ppoll(fds, nfds, timeout, sigmask) /**< marcel_ppoll() */
#define select(nfds, r, w, e, timeout) marcel_select(nfds, r, w, e, timeout) /**< marcel_select() */
#define pselect(nfds, r, w, e, timeout, sigmask) marcel_pselect(nfds, r, w, e, timeout, sigmask) /**< marcel_pselect() */
#define accept(fd, addr, addrlen) marcel_accept(fd, addr, addrlen) /**< marcel_accept() */
#define accept4(fd, addr, addrlen, flags) marcel_accept4(fd, addr, addrlen, flags) /**< marcel_accept4() */
#define waitpid(pid, status, options) marcel_waitpid(pid, status, options) /**< marcel_waitpid() */
/** @} */

/** @defgroup marcel_pthread_signals Signals
 * Signal masks, `pthread_kill` and the signal waits are per marcel thread
 * (marcel/signal.h): a thread's mask is its own, inherited from its creator;
 * `pthread_kill` runs the handler in the target thread; the waits wait as marcel threads
 * and are woken by `pthread_kill` and by process-directed signals, which marcel then
 * catches and hands to the waiting thread. Outside a marcel thread each is the C
 * library's call.
 *
 * `sigaction`, `signal` and `raise` stay the C library's: a handler so installed runs at
 * once, on the kernel thread the signal reaches (the worker running some marcel thread),
 * as a SIGINT or SIGCHLD handler expects; `pthread_kill` runs it in the target thread,
 * and a signal a thread waits for in `sigsuspend` or `pause` is taken over by marcel so
 * that its handler runs in that thread. `raise` signals the calling kernel thread, hence
 * the calling marcel thread, at once (the thread's marcel mask is not consulted: use
 * `pthread_kill(pthread_self(), sig)` for that). The kernel's waits remain as
 * marcel_blocking_sigwait() and its siblings.
 * @{ */

/** `sigprocmask()`: marcel_sigmask() (the calling thread's mask, as glibc's in a threaded
 * process), with its -1 and `errno` convention. */
static inline int marcel_pthread_sigprocmask(int how, const sigset_t *set, sigset_t *oset)
{
	int e = marcel_sigmask(how, set, oset);
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

#define pthread_kill(thread, sig) marcel_kill(thread, sig)   /**< marcel_kill(): the handler runs in @p thread */
#define pthread_sigmask(how, set, oset) marcel_sigmask(how, set, oset) /**< marcel_sigmask(): the calling marcel thread's mask */
#define sigprocmask(how, set, oset) marcel_pthread_sigprocmask(how, set, oset) /**< marcel_pthread_sigprocmask() */
#define sigpending(set) marcel_sigpending(set)       /**< marcel_sigpending() */
#define sigwait(set, sig) marcel_sigwait(set, sig)   /**< marcel_sigwait(): a marcel wait */
#define sigwaitinfo(set, info) marcel_sigwaitinfo(set, info) /**< marcel_sigwaitinfo(): a marcel wait */
#define sigtimedwait(set, info, timeout) marcel_sigtimedwait(set, info, timeout) /**< marcel_sigtimedwait(): a marcel wait */
#define sigsuspend(mask) marcel_sigsuspend(mask)     /**< marcel_sigsuspend(): a marcel wait, EINTR once a handler ran in the caller */
#define pause() marcel_pause()                       /**< marcel_pause(): marcel_sigsuspend() with the caller's mask */
/** @} */

/** @defgroup marcel_pthread_threads Threads and their attributes
 * @{ */
#define pthread_create marcel_create_posix         /**< marcel_create_posix(): a marcel thread that marcel_end() does not wait for */
#define pthread_join marcel_join                   /**< marcel_join() */
#define pthread_detach marcel_detach               /**< marcel_detach() */
#define pthread_exit marcel_exit                   /**< marcel_exit(); from `main` it ends the program after the other threads, as marcel_end() */
#define pthread_self marcel_self                   /**< marcel_self() (NULL outside a marcel thread) */
#define pthread_equal marcel_equal                 /**< marcel_equal() */
#define pthread_setname_np marcel_setname          /**< marcel_setname() (names up to ::MARCEL_MAXNAMESIZE - 1 characters) */
#define pthread_getname_np marcel_getname          /**< marcel_getname() */
#define pthread_setconcurrency marcel_pthread_setconcurrency /**< marcel_pthread_setconcurrency() */
#define pthread_getconcurrency marcel_pthread_getconcurrency /**< marcel_pthread_getconcurrency() */
#define pthread_cancel marcel_cancel                 /**< marcel_cancel() (deferred) */
#define pthread_setcancelstate marcel_setcancelstate /**< marcel_setcancelstate() */
#define pthread_setcanceltype marcel_setcanceltype   /**< marcel_setcanceltype() */
#define pthread_testcancel marcel_testcancel         /**< marcel_testcancel() */
#undef PTHREAD_CANCELED
#define PTHREAD_CANCELED MARCEL_CANCELED             /**< ::MARCEL_CANCELED, `(void *)-1` as glibc's */
/** @cond MARCEL_PTHREAD_PRIVATE */
/* PTHREAD_CANCEL_ENABLE and the others stay the C library's: marcel's have their values. */
#define MARCEL_PTHREAD_CANCEL_VALUES_                                                      \
	(PTHREAD_CANCEL_ENABLE == MARCEL_CANCEL_ENABLE && PTHREAD_CANCEL_DISABLE == MARCEL_CANCEL_DISABLE && \
	 PTHREAD_CANCEL_DEFERRED == MARCEL_CANCEL_DEFERRED &&                                \
	 PTHREAD_CANCEL_ASYNCHRONOUS == MARCEL_CANCEL_ASYNCHRONOUS)
#if defined(__cplusplus) && __cplusplus >= 201103L
static_assert(MARCEL_PTHREAD_CANCEL_VALUES_, "PTHREAD_CANCEL_* differ from MARCEL_CANCEL_*");
#elif !defined(__cplusplus)
_Static_assert(MARCEL_PTHREAD_CANCEL_VALUES_, "PTHREAD_CANCEL_* differ from MARCEL_CANCEL_*");
#endif
/** @endcond */
#define pthread_yield marcel_pthread_yield         /**< marcel_pthread_yield() */
#define sched_yield marcel_pthread_sched_yield     /**< marcel_pthread_sched_yield() */
#define pthread_attr_init marcel_attr_init         /**< marcel_attr_init() */
#define pthread_attr_destroy marcel_attr_destroy   /**< marcel_attr_destroy() */
#define pthread_attr_setdetachstate marcel_attr_setdetachstate /**< marcel_attr_setdetachstate() */
#define pthread_attr_getdetachstate marcel_attr_getdetachstate /**< marcel_attr_getdetachstate() */
#define pthread_attr_setstacksize marcel_attr_setstacksize /**< marcel_attr_setstacksize() (::MARCEL_STACK_MIN .. ::MARCEL_STACK_MAX) */
#define pthread_attr_getstacksize marcel_attr_getstacksize /**< marcel_attr_getstacksize() (0 until a size is set: the runtime default, `MARCEL_STACK_SIZE`) */
#define pthread_attr_setscope marcel_pthread_attr_setscope /**< marcel_pthread_attr_setscope() */
#define pthread_attr_getscope marcel_pthread_attr_getscope /**< marcel_pthread_attr_getscope() */

#undef pthread_cleanup_push
#undef pthread_cleanup_pop
#undef pthread_cleanup_push_defer_np
#undef pthread_cleanup_pop_restore_np
#define pthread_cleanup_push(routine, arg) marcel_cleanup_push(routine, arg) /**< marcel_cleanup_push() */
#define pthread_cleanup_pop(execute) marcel_cleanup_pop(execute)              /**< marcel_cleanup_pop() */
#define pthread_cleanup_push_defer_np(routine, arg) marcel_cleanup_push(routine, arg) /**< marcel_cleanup_push() */
#define pthread_cleanup_pop_restore_np(execute) marcel_cleanup_pop(execute)   /**< marcel_cleanup_pop() */
/** @} */

/** @defgroup marcel_pthread_mutex Mutexes
 * @{ */
#define pthread_mutexattr_init marcel_mutexattr_init       /**< marcel_mutexattr_init() */
#define pthread_mutexattr_destroy marcel_mutexattr_destroy /**< marcel_mutexattr_destroy() */
#define pthread_mutexattr_settype marcel_mutexattr_settype /**< marcel_mutexattr_settype() */
#define pthread_mutexattr_gettype marcel_mutexattr_gettype /**< marcel_mutexattr_gettype() */
#define pthread_mutexattr_setpshared marcel_mutexattr_setpshared /**< marcel_mutexattr_setpshared() */
#define pthread_mutexattr_getpshared marcel_mutexattr_getpshared /**< marcel_mutexattr_getpshared() */
#define pthread_mutex_init marcel_mutex_init               /**< marcel_mutex_init() */
#define pthread_mutex_destroy marcel_mutex_destroy         /**< marcel_mutex_destroy() */
#define pthread_mutex_lock marcel_mutex_lock               /**< marcel_mutex_lock() */
#define pthread_mutex_trylock marcel_mutex_trylock         /**< marcel_mutex_trylock() */
#define pthread_mutex_timedlock marcel_mutex_timedlock     /**< marcel_mutex_timedlock() */
#define pthread_mutex_unlock marcel_mutex_unlock           /**< marcel_mutex_unlock() */
/** @} */

/** @defgroup marcel_pthread_cond Condition variables
 * @{ */
#define pthread_condattr_init marcel_condattr_init         /**< marcel_condattr_init() */
#define pthread_condattr_destroy marcel_condattr_destroy   /**< marcel_condattr_destroy() */
#define pthread_condattr_setclock marcel_condattr_setclock /**< marcel_condattr_setclock() (CLOCK_REALTIME or CLOCK_MONOTONIC) */
#define pthread_condattr_getclock marcel_condattr_getclock /**< marcel_condattr_getclock() */
#define pthread_condattr_setpshared marcel_condattr_setpshared /**< marcel_condattr_setpshared() */
#define pthread_condattr_getpshared marcel_condattr_getpshared /**< marcel_condattr_getpshared() */
#define pthread_cond_init marcel_cond_init                 /**< marcel_cond_init() */
#define pthread_cond_destroy marcel_cond_destroy           /**< marcel_cond_destroy() */
#define pthread_cond_wait marcel_cond_wait                 /**< marcel_cond_wait() */
#define pthread_cond_timedwait marcel_cond_timedwait       /**< marcel_cond_timedwait() */
#define pthread_cond_signal marcel_cond_signal             /**< marcel_cond_signal() */
#define pthread_cond_broadcast marcel_cond_broadcast       /**< marcel_cond_broadcast() */
/** @} */

/** @defgroup marcel_pthread_barrier Barriers
 * @{ */
#define pthread_barrierattr_init marcel_barrierattr_init       /**< marcel_barrierattr_init() */
#define pthread_barrierattr_destroy marcel_barrierattr_destroy /**< marcel_barrierattr_destroy() */
#define pthread_barrierattr_setpshared marcel_barrierattr_setpshared /**< marcel_barrierattr_setpshared() */
#define pthread_barrierattr_getpshared marcel_barrierattr_getpshared /**< marcel_barrierattr_getpshared() */
#define pthread_barrier_init marcel_barrier_init               /**< marcel_barrier_init() */
#define pthread_barrier_destroy marcel_barrier_destroy         /**< marcel_barrier_destroy() */
#define pthread_barrier_wait marcel_barrier_wait               /**< marcel_barrier_wait() */
/** @} */

/** @defgroup marcel_pthread_rwlock Read-write locks
 * marcel's read-write locks prefer writers; the GNU reader-preference kinds are not
 * mapped.
 * @{ */
#define pthread_rwlockattr_init marcel_rwlockattr_init       /**< marcel_rwlockattr_init() */
#define pthread_rwlockattr_destroy marcel_rwlockattr_destroy /**< marcel_rwlockattr_destroy() */
#define pthread_rwlockattr_setpshared marcel_rwlockattr_setpshared /**< marcel_rwlockattr_setpshared() */
#define pthread_rwlockattr_getpshared marcel_rwlockattr_getpshared /**< marcel_rwlockattr_getpshared() */
#define pthread_rwlock_init marcel_rwlock_init               /**< marcel_rwlock_init() */
#define pthread_rwlock_destroy marcel_rwlock_destroy         /**< marcel_rwlock_destroy() */
#define pthread_rwlock_rdlock marcel_rwlock_rdlock           /**< marcel_rwlock_rdlock() */
#define pthread_rwlock_tryrdlock marcel_rwlock_tryrdlock     /**< marcel_rwlock_tryrdlock() */
#define pthread_rwlock_timedrdlock marcel_rwlock_timedrdlock /**< marcel_rwlock_timedrdlock() */
#define pthread_rwlock_wrlock marcel_rwlock_wrlock           /**< marcel_rwlock_wrlock() */
#define pthread_rwlock_trywrlock marcel_rwlock_trywrlock     /**< marcel_rwlock_trywrlock() */
#define pthread_rwlock_timedwrlock marcel_rwlock_timedwrlock /**< marcel_rwlock_timedwrlock() */
#define pthread_rwlock_unlock marcel_rwlock_unlock           /**< marcel_rwlock_unlock() */
/** @} */

/** @defgroup marcel_pthread_spin Spin locks, one-time initialisation, keys
 * @{ */
#define pthread_spin_init marcel_spin_init         /**< marcel_spin_init() */
#define pthread_spin_destroy marcel_spin_destroy   /**< marcel_spin_destroy() */
#define pthread_spin_lock marcel_spin_lock         /**< marcel_spin_lock() */
#define pthread_spin_trylock marcel_spin_trylock   /**< marcel_spin_trylock() */
#define pthread_spin_unlock marcel_spin_unlock     /**< marcel_spin_unlock() */
#define pthread_once marcel_once                   /**< marcel_once() */
#define pthread_key_create marcel_key_create       /**< marcel_key_create() (destructors run when a marcel thread ends) */
#define pthread_key_delete marcel_key_delete       /**< marcel_key_delete() */
#define pthread_setspecific marcel_setspecific     /**< marcel_setspecific() */
#define pthread_getspecific marcel_getspecific     /**< marcel_getspecific() */
/** @} */

/** @cond MARCEL_PTHREAD_PRIVATE */
#if defined(__GNUC__) || defined(__clang__)
#define MARCEL_PTHREAD_UNMAPPED_ATTR_(name)                                                \
	__attribute__((error(#name " is not mapped by <marcel/pthread.h> (see doc/porting.md)")))
#else
#define MARCEL_PTHREAD_UNMAPPED_ATTR_(name)
#endif
/* Never defined: a call that survives is a build error (the attribute) or, with other
 * compilers, a link error naming the function. */
#define MARCEL_PTHREAD_UNMAPPED_(name) \
	int marcel_pthread_unmapped_##name(void) MARCEL_PTHREAD_UNMAPPED_ATTR_(name)
MARCEL_PTHREAD_UNMAPPED_(pthread_sigqueue);
MARCEL_PTHREAD_UNMAPPED_(pthread_setschedparam);
MARCEL_PTHREAD_UNMAPPED_(pthread_getschedparam);
MARCEL_PTHREAD_UNMAPPED_(pthread_setschedprio);
MARCEL_PTHREAD_UNMAPPED_(pthread_setaffinity_np);
MARCEL_PTHREAD_UNMAPPED_(pthread_getaffinity_np);
MARCEL_PTHREAD_UNMAPPED_(pthread_getcpuclockid);
MARCEL_PTHREAD_UNMAPPED_(pthread_getattr_np);
MARCEL_PTHREAD_UNMAPPED_(pthread_getattr_default_np);
MARCEL_PTHREAD_UNMAPPED_(pthread_setattr_default_np);
MARCEL_PTHREAD_UNMAPPED_(pthread_attr_setsigmask_np);
MARCEL_PTHREAD_UNMAPPED_(pthread_attr_getsigmask_np);
MARCEL_PTHREAD_UNMAPPED_(pthread_tryjoin_np);
MARCEL_PTHREAD_UNMAPPED_(pthread_timedjoin_np);
MARCEL_PTHREAD_UNMAPPED_(pthread_clockjoin_np);
MARCEL_PTHREAD_UNMAPPED_(pthread_attr_setguardsize);
MARCEL_PTHREAD_UNMAPPED_(pthread_attr_getguardsize);
MARCEL_PTHREAD_UNMAPPED_(pthread_attr_setstack);
MARCEL_PTHREAD_UNMAPPED_(pthread_attr_getstack);
MARCEL_PTHREAD_UNMAPPED_(pthread_attr_setstackaddr);
MARCEL_PTHREAD_UNMAPPED_(pthread_attr_getstackaddr);
MARCEL_PTHREAD_UNMAPPED_(pthread_attr_setschedparam);
MARCEL_PTHREAD_UNMAPPED_(pthread_attr_getschedparam);
MARCEL_PTHREAD_UNMAPPED_(pthread_attr_setschedpolicy);
MARCEL_PTHREAD_UNMAPPED_(pthread_attr_getschedpolicy);
MARCEL_PTHREAD_UNMAPPED_(pthread_attr_setinheritsched);
MARCEL_PTHREAD_UNMAPPED_(pthread_attr_getinheritsched);
MARCEL_PTHREAD_UNMAPPED_(pthread_attr_setaffinity_np);
MARCEL_PTHREAD_UNMAPPED_(pthread_attr_getaffinity_np);
MARCEL_PTHREAD_UNMAPPED_(pthread_mutexattr_setprotocol);
MARCEL_PTHREAD_UNMAPPED_(pthread_mutexattr_getprotocol);
MARCEL_PTHREAD_UNMAPPED_(pthread_mutexattr_setprioceiling);
MARCEL_PTHREAD_UNMAPPED_(pthread_mutexattr_getprioceiling);
MARCEL_PTHREAD_UNMAPPED_(pthread_mutexattr_setrobust);
MARCEL_PTHREAD_UNMAPPED_(pthread_mutexattr_getrobust);
MARCEL_PTHREAD_UNMAPPED_(pthread_mutex_consistent);
MARCEL_PTHREAD_UNMAPPED_(pthread_mutex_consistent_np);
MARCEL_PTHREAD_UNMAPPED_(pthread_mutexattr_setrobust_np);
MARCEL_PTHREAD_UNMAPPED_(pthread_mutexattr_getrobust_np);
MARCEL_PTHREAD_UNMAPPED_(pthread_mutex_setprioceiling);
MARCEL_PTHREAD_UNMAPPED_(pthread_mutex_getprioceiling);
MARCEL_PTHREAD_UNMAPPED_(pthread_mutex_clocklock);
MARCEL_PTHREAD_UNMAPPED_(pthread_cond_clockwait);
MARCEL_PTHREAD_UNMAPPED_(pthread_rwlock_clockrdlock);
MARCEL_PTHREAD_UNMAPPED_(pthread_rwlock_clockwrlock);
MARCEL_PTHREAD_UNMAPPED_(pthread_rwlockattr_setkind_np);
MARCEL_PTHREAD_UNMAPPED_(pthread_rwlockattr_getkind_np);
/** @endcond */

/** @defgroup marcel_pthread_unmapped Calls that are build errors
 * These have no marcel meaning; each expands to a call of a function that is never
 * defined and carries GCC's `error` attribute, so the compiler stops with
 * "`pthread_sigqueue` is not mapped by <marcel/pthread.h>" instead of letting the C
 * library act on a marcel object. Port such a call by hand (see `doc/porting.md`).
 * @{ */
#define pthread_sigqueue(...) marcel_pthread_unmapped_pthread_sigqueue()       /**< no queued value: use pthread_kill() */
#define pthread_setschedparam(...) marcel_pthread_unmapped_pthread_setschedparam() /**< use marcel_sched_setparam() */
#define pthread_getschedparam(...) marcel_pthread_unmapped_pthread_getschedparam() /**< use marcel_sched_getparam() */
#define pthread_setschedprio(...) marcel_pthread_unmapped_pthread_setschedprio()   /**< use marcel_sched_setparam() */
#define pthread_setaffinity_np(...) marcel_pthread_unmapped_pthread_setaffinity_np() /**< use marcel_apply_vpset() */
#define pthread_getaffinity_np(...) marcel_pthread_unmapped_pthread_getaffinity_np() /**< no equivalent */
#define pthread_getcpuclockid(...) marcel_pthread_unmapped_pthread_getcpuclockid()   /**< no per-ULT CPU clock */
#define pthread_getattr_np(...) marcel_pthread_unmapped_pthread_getattr_np()         /**< no equivalent */
#define pthread_getattr_default_np(...) marcel_pthread_unmapped_pthread_getattr_default_np() /**< defaults come from the `MARCEL_*` settings */
#define pthread_setattr_default_np(...) marcel_pthread_unmapped_pthread_setattr_default_np() /**< defaults come from the `MARCEL_*` settings */
#define pthread_attr_setsigmask_np(...) marcel_pthread_unmapped_pthread_attr_setsigmask_np() /**< a thread inherits its creator's mask: set it around pthread_create() */
#define pthread_attr_getsigmask_np(...) marcel_pthread_unmapped_pthread_attr_getsigmask_np() /**< a thread inherits its creator's mask: set it around pthread_create() */
#define pthread_tryjoin_np(...) marcel_pthread_unmapped_pthread_tryjoin_np()         /**< no equivalent */
#define pthread_timedjoin_np(...) marcel_pthread_unmapped_pthread_timedjoin_np()     /**< no equivalent */
#define pthread_clockjoin_np(...) marcel_pthread_unmapped_pthread_clockjoin_np()     /**< no equivalent */
#define pthread_attr_setguardsize(...) marcel_pthread_unmapped_pthread_attr_setguardsize() /**< marcel stacks always have one guard page */
#define pthread_attr_getguardsize(...) marcel_pthread_unmapped_pthread_attr_getguardsize() /**< marcel stacks always have one guard page */
#define pthread_attr_setstack(...) marcel_pthread_unmapped_pthread_attr_setstack()         /**< marcel allocates the stacks */
#define pthread_attr_getstack(...) marcel_pthread_unmapped_pthread_attr_getstack()         /**< marcel allocates the stacks */
#define pthread_attr_setstackaddr(...) marcel_pthread_unmapped_pthread_attr_setstackaddr() /**< marcel allocates the stacks */
#define pthread_attr_getstackaddr(...) marcel_pthread_unmapped_pthread_attr_getstackaddr() /**< marcel allocates the stacks */
#define pthread_attr_setschedparam(...) marcel_pthread_unmapped_pthread_attr_setschedparam() /**< use marcel_attr_setprio() */
#define pthread_attr_getschedparam(...) marcel_pthread_unmapped_pthread_attr_getschedparam() /**< use marcel_attr_getprio() */
#define pthread_attr_setschedpolicy(...) marcel_pthread_unmapped_pthread_attr_setschedpolicy() /**< kernel policies do not apply */
#define pthread_attr_getschedpolicy(...) marcel_pthread_unmapped_pthread_attr_getschedpolicy() /**< kernel policies do not apply */
#define pthread_attr_setinheritsched(...) marcel_pthread_unmapped_pthread_attr_setinheritsched() /**< kernel policies do not apply */
#define pthread_attr_getinheritsched(...) marcel_pthread_unmapped_pthread_attr_getinheritsched() /**< kernel policies do not apply */
#define pthread_attr_setaffinity_np(...) marcel_pthread_unmapped_pthread_attr_setaffinity_np() /**< use marcel_attr_setvpset() */
#define pthread_attr_getaffinity_np(...) marcel_pthread_unmapped_pthread_attr_getaffinity_np() /**< use marcel_attr_getvpset() */
#define pthread_mutexattr_setprotocol(...) marcel_pthread_unmapped_pthread_mutexattr_setprotocol() /**< no priority protocols */
#define pthread_mutexattr_getprotocol(...) marcel_pthread_unmapped_pthread_mutexattr_getprotocol() /**< no priority protocols */
#define pthread_mutexattr_setprioceiling(...) marcel_pthread_unmapped_pthread_mutexattr_setprioceiling() /**< no priority protocols */
#define pthread_mutexattr_getprioceiling(...) marcel_pthread_unmapped_pthread_mutexattr_getprioceiling() /**< no priority protocols */
#define pthread_mutexattr_setrobust(...) marcel_pthread_unmapped_pthread_mutexattr_setrobust() /**< no robust mutexes */
#define pthread_mutexattr_getrobust(...) marcel_pthread_unmapped_pthread_mutexattr_getrobust() /**< no robust mutexes */
#define pthread_mutex_consistent(...) marcel_pthread_unmapped_pthread_mutex_consistent()       /**< no robust mutexes */
#define pthread_mutex_consistent_np(...) marcel_pthread_unmapped_pthread_mutex_consistent_np() /**< no robust mutexes */
#define pthread_mutexattr_setrobust_np(...) marcel_pthread_unmapped_pthread_mutexattr_setrobust_np() /**< no robust mutexes */
#define pthread_mutexattr_getrobust_np(...) marcel_pthread_unmapped_pthread_mutexattr_getrobust_np() /**< no robust mutexes */
#define pthread_mutex_setprioceiling(...) marcel_pthread_unmapped_pthread_mutex_setprioceiling() /**< no priority protocols */
#define pthread_mutex_getprioceiling(...) marcel_pthread_unmapped_pthread_mutex_getprioceiling() /**< no priority protocols */
#define pthread_mutex_clocklock(...) marcel_pthread_unmapped_pthread_mutex_clocklock()   /**< use pthread_mutex_timedlock() */
#define pthread_cond_clockwait(...) marcel_pthread_unmapped_pthread_cond_clockwait()     /**< use pthread_condattr_setclock() and pthread_cond_timedwait() */
#define pthread_rwlock_clockrdlock(...) marcel_pthread_unmapped_pthread_rwlock_clockrdlock() /**< use pthread_rwlock_timedrdlock() */
#define pthread_rwlock_clockwrlock(...) marcel_pthread_unmapped_pthread_rwlock_clockwrlock() /**< use pthread_rwlock_timedwrlock() */
#define pthread_rwlockattr_setkind_np(...) marcel_pthread_unmapped_pthread_rwlockattr_setkind_np() /**< marcel's rwlocks prefer writers */
#define pthread_rwlockattr_getkind_np(...) marcel_pthread_unmapped_pthread_rwlockattr_getkind_np() /**< marcel's rwlocks prefer writers */
/** @} */

/** @defgroup marcel_pthread_sem Semaphores
 * Mapped when `<semaphore.h>` is included before `<marcel/pthread.h>` (or
 * `<marcel/pthread.h>` is included again after it; the macro `MARCEL_PTHREAD_SEM_H`
 * is then defined). Like POSIX, these return 0, or -1 and set `errno`.
 *
 * | POSIX | marcel |
 * |---|---|
 * | `sem_t`, `SEM_VALUE_MAX` | ::marcel_sem_t, ::MARCEL_SEM_VALUE_MAX |
 * | `sem_init` | marcel_sem_posix_init() (`pshared` non-zero gives ENOTSUP) |
 * | `sem_destroy` | marcel_pthread_sem_destroy() |
 * | `sem_wait`, `sem_trywait`, `sem_timedwait` | marcel_sem_wait(), marcel_sem_trywait(), marcel_sem_timedwait() |
 * | `sem_post`, `sem_getvalue` | marcel_sem_post(), marcel_sem_getvalue() |
 * | `sem_open`, `sem_close` | build errors: named semaphores are process-shared |
 * | `sem_clockwait` | build error: use `sem_timedwait` |
 *
 * `sem_unlink` keeps its C library meaning.
 * @{ */

/** `sem_destroy()`: marcel_sem_destroy() with the POSIX convention.
 * @return 0, or -1 with `errno` EBUSY (threads are blocked on @p s) or EINVAL. */
static inline int marcel_pthread_sem_destroy(marcel_sem_t *s)
{
	int err = marcel_sem_destroy(s);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

/** @} */

/** @} */

#ifdef MARCEL_PTHREAD_AUTO
/** Defined (weak, so in every file that includes this header) when `MARCEL_PTHREAD_AUTO`
 * is: libmarcel then starts the runtime before `main`. */
__attribute__((weak)) extern const int marcel_pthread_auto;
__attribute__((weak)) const int marcel_pthread_auto = 1;
#endif

#ifdef __cplusplus
}
#endif

#endif /* MARCEL_PTHREAD_H */

/* Semaphores: mapped once <semaphore.h> has been seen, on this inclusion or a later one. */
#if defined(_SEMAPHORE_H) && !defined(MARCEL_PTHREAD_SEM_H)
/* Documented by the marcel_pthread_sem group above: doxygen does not see this block. */
#define MARCEL_PTHREAD_SEM_H 1

#ifdef __cplusplus
extern "C" {
#endif

MARCEL_PTHREAD_UNMAPPED_(sem_open);
MARCEL_PTHREAD_UNMAPPED_(sem_close);
MARCEL_PTHREAD_UNMAPPED_(sem_clockwait);

#undef SEM_VALUE_MAX
#define sem_t marcel_sem_t                        /* ::marcel_sem_t */
#define SEM_VALUE_MAX MARCEL_SEM_VALUE_MAX        /* ::MARCEL_SEM_VALUE_MAX */
#define sem_init marcel_sem_posix_init            /* marcel_sem_posix_init() (`pshared` non-zero gives ENOTSUP) */
#define sem_destroy marcel_pthread_sem_destroy    /* marcel_pthread_sem_destroy() */
#define sem_wait marcel_sem_wait                  /* marcel_sem_wait() */
#define sem_trywait marcel_sem_trywait            /* marcel_sem_trywait() */
#define sem_timedwait marcel_sem_timedwait        /* marcel_sem_timedwait() */
#define sem_post marcel_sem_post                  /* marcel_sem_post() */
#define sem_getvalue marcel_sem_getvalue          /* marcel_sem_getvalue() */
#define sem_open(...) marcel_pthread_unmapped_sem_open()   /* build error: named semaphores are process-shared */
#define sem_close(...) marcel_pthread_unmapped_sem_close() /* build error: named semaphores are process-shared */
#define sem_clockwait(...) marcel_pthread_unmapped_sem_clockwait() /* build error: use sem_timedwait() */

#ifdef __cplusplus
}
#endif

#endif /* semaphores */
