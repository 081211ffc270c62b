/**
 * @file marcel/thread.h
 * @brief Runtime start/stop and user-level threads.
 */
#ifndef MARCEL_THREAD_H
#define MARCEL_THREAD_H

#include <stdio.h>
#include <marcel/types.h>
#include <marcel/attr.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup marcel_runtime Runtime
 * @{ */

/**
 * Starts the runtime: reads the `MARCEL_*` environment variables and the `--marcel-*`
 * arguments (which it removes from @p argv, adjusting @p *argc), loads the topology,
 * starts one worker kernel thread per VP and turns the caller into a user-level thread
 * running on VP 0. Arguments override environment variables.
 *
 * Call it once, from the process's main thread, before any other marcel call except the
 * attribute functions. @p argc and @p argv may be NULL (only the environment is read).
 *
 * @return 0 on success. On a bad variable or argument, prints one line to stderr naming
 * it, the value and what is accepted, and returns EINVAL; EBUSY if the runtime is already
 * running; ENOENT for a missing topology file; ENOMEM/EAGAIN if memory or kernel threads
 * ran out. On error nothing is left running and marcel_init() may be called again.
 *
 * A program that goes on after a failure anyway (PM2's Marcel's marcel_init() returned
 * nothing, so Marcel programs never check it) is told, not left to hang: until a
 * marcel_init() succeeds, the calls that need the runtime fail (EPERM for most, see each),
 * marcel_join() fails (ESRCH: no thread exists), and so do the waits without a deadline
 * that would block (marcel_barrier_wait(), marcel_cond_wait(), marcel_sem_wait(),
 * marcel_sem_P(): EPERM): no marcel thread exists that could end them. The first of those waits and thread calls
 * refused after each failure prints one line to stderr naming itself and what failed
 * (later ones print nothing, so a program retrying in a loop is not flooded). Calls that
 * need not wait (a free mutex, a semaphore with units, the last arrival at a barrier) and
 * timed waits work as before, and marcel_end() does nothing.
 */
int marcel_init(int *argc, char **argv);

/**
 * Waits for every remaining user thread to end, stops the workers and frees everything
 * the runtime allocated. Must be called by the thread that called marcel_init(); from
 * another thread it prints an error and returns without doing anything. Threads never
 * joined are reclaimed. After it returns, marcel_init() may be called again.
 *
 * Threads made with marcel_create_posix() (`pthread_create` in `<marcel/pthread.h>`)
 * are not waited for, as a POSIX process does not wait for its threads when `main`
 * returns: once every other thread has ended, marcel_end() returns with them still
 * there, and leaves the runtime running, so that `main` returns and the process ends
 * with them (then marcel_init() gives EBUSY, and `MARCEL_TRACE` is not written).
 * marcel_exit() from main waits for them too, as pthread_exit() does.
 *
 * The wait blocks: it uses no processor. Threads made with marcel_create_dontsched()
 * and never started are started (and said so on stderr). If no thread ends for 10 s and
 * none of those left is running or ready, the remaining ones are listed on stderr
 * (see marcel_print_threads(); after 1 s, whatever their state, with `MARCEL_DEBUG=1`).
 */
void marcel_end(void);

/** @} */

/** @defgroup marcel_threads Threads
 * Thread handles (::marcel_t) are valid from creation until the thread is joined, or for
 * a detached thread until it ends. Unless stated otherwise these functions must be
 * called from a marcel thread (between marcel_init() and marcel_end()).
 *
 * Per-thread state saved across switches: the callee-saved registers, `errno`, and the
 * SSE/x87 control words (rounding, exception masks). Sticky floating-point status flags
 * are not per thread.
 *
 * `errno` caveat: a thread may resume on another kernel thread after any call that can
 * block or yield (it moved to another VP, or its VP moved after a blocking section).
 * marcel carries `errno` over, but glibc declares `__errno_location()` const, so an
 * optimising compiler may keep the address of `errno` from before such a call and read
 * the previous kernel thread's `errno` after it. Read `errno` right after the failing
 * call in a function that did not touch `errno` before it (or prefer marcel's return
 * codes, which never go through `errno`). Thread-local variables (`__thread`) are per
 * kernel thread for the same reason; `MARCEL_DEBUG=1` reports a thread that leaves data
 * in them and resumes on another kernel thread.
 * @{ */

/**
 * Creates a thread running @p func(@p arg) and makes it ready.
 * @param pid receives the handle; may be NULL, in which case the thread is detached (no
 *        handle, nothing to join: it is reclaimed when it ends).
 * @param attr attributes, or NULL for the defaults.
 * @param func the thread's body.
 * @param arg passed to @p func.
 * @return 0; EINVAL if @p func is NULL, @p attr is not initialised or its vpset names no
 * existing VP; EPERM if the runtime is not running (after a failed marcel_init(), see
 * there); EAGAIN if memory ran out. On error @p *pid is not written.
 */
int marcel_create(marcel_t *pid, const marcel_attr_t *attr, marcel_func_t func, any_t arg);

/** Like marcel_create() but leaves the thread unscheduled until
 * marcel_wake_up_created_thread() (used to build bubble trees before they run).
 * @return as marcel_create(). */
int marcel_create_dontsched(marcel_t *pid, const marcel_attr_t *attr, marcel_func_t func, any_t arg);

/** Like marcel_create() for a thread with the lifetime of a POSIX thread: marcel_end()
 * does not wait for it (see there). `<marcel/pthread.h>` maps `pthread_create` to it.
 * @return as marcel_create(). */
int marcel_create_posix(marcel_t *pid, const marcel_attr_t *attr, marcel_func_t func, any_t arg);

/** Makes a thread created with marcel_create_dontsched() ready.
 * @return 0; ESRCH if @p t is NULL or no longer exists; EINVAL if it was not created
 * with marcel_create_dontsched() or was already woken. ESRCH too while the runtime is
 * not running: no thread exists then (see marcel_init()). */
int marcel_wake_up_created_thread(marcel_t t);

/**
 * Waits for @p t to end and collects its result. A cancellation point
 * (marcel/cancel.h): a caller canceled while it waits leaves @p t joinable.
 * @param t the thread to wait for.
 * @param status receives the thread's result (its return value or marcel_exit()
 *        argument, ::MARCEL_CANCELED if it was canceled); may be NULL.
 * @return 0; EDEADLK if @p t is the caller; EINVAL if @p t is detached or another thread
 * is already joining it; ESRCH if @p t is NULL or was already joined, and at once while
 * the runtime is not running: no thread exists then, whatever @p t holds (after a failed
 * marcel_init(), the handle an unchecked marcel_create() never wrote; see marcel_init()).
 * May also be called from a kernel thread that is not a marcel thread: it then blocks in
 * the kernel.
 */
int marcel_join(marcel_t t, any_t *status);

/** Detaches @p t: it will be reclaimed when it ends and cannot be joined.
 * @return 0; EINVAL if @p t is already detached or being joined; ESRCH if @p t is NULL
 * or was already joined, and while the runtime is not running: no thread exists then
 * (see marcel_init()). */
int marcel_detach(marcel_t t);

/** Ends the calling thread with result @p retval, after running its cleanup handlers
 * (marcel_cleanup_push(), innermost first) and then its key destructors. From the main
 * thread it behaves like marcel_end() followed by `exit(0)` (after the handlers), as
 * pthread_exit() does in main. */
void marcel_exit(any_t retval) __attribute__((noreturn));

/** Returns the calling thread, or NULL when called from a kernel thread that is not a
 * marcel thread. */
marcel_t marcel_self(void);

/** Returns non-zero if @p a and @p b are the same thread. */
int marcel_equal(marcel_t a, marcel_t b);

/** Lets another ready thread of the same or a more urgent priority run, if any; the
 * caller goes to the back of its run queue. Cheap when nothing else is ready.
 * @return 0; EPERM if the caller is not a marcel thread. */
int marcel_yield(void);

/**
 * Switches directly to @p t if it is ready and allowed to run on the caller's VP.
 * @return 0 if the switch happened (or @p t is the caller); EAGAIN if @p t is running,
 * blocked or bound elsewhere, in which case the caller yields normally; ESRCH if @p t is
 * NULL or has ended; EPERM if the caller is not a marcel thread.
 */
int marcel_yield_to(marcel_t t);

/** Renames @p t (truncated to ::MARCEL_MAXNAMESIZE - 1 characters).
 * @return 0, or ESRCH/EINVAL for a NULL thread/name. */
int marcel_setname(marcel_t t, const char *name);

/** Copies @p t's name into @p buf (at most @p n bytes, NUL-terminated).
 * @return 0; ESRCH if @p t is NULL; EINVAL if @p buf is NULL; ERANGE if @p n is too small. */
int marcel_getname(marcel_t t, char *buf, size_t n);

/** Returns the number of the VP (worker) running the caller, or -1 when called from a
 * kernel thread that is not a marcel thread. */
int marcel_current_vp(void);

/** Returns the number of VPs (workers), or 0 if the runtime is not running. */
unsigned marcel_nbvps(void);

/**
 * Tells the runtime whether other busy processes share its processors, which it cannot
 * see: several MPI ranks of one node that are not bound to separate cores, several marcel
 * programs at once, a container limited by a CPU quota rather than a CPU set.
 *
 * Shared (1), an idle worker polls for 50 µs and gives its processor away at each round
 * before it sleeps, and a thread waiting for a held mutex does not poll: what the runtime
 * does on its own when it has more VPs than processors. Not shared (0, the state after
 * marcel_init()), an idle worker polls for 2 ms when every VP has a processor of its own,
 * which saves barrier-bound programs the wake-up of a sleeping worker. `MARCEL_IDLE_SPIN`
 * and `MARCEL_SPIN`, when set, keep their values either way. marcel_mpi_init() calls this
 * with 1 when the ranks of the node have more VPs in all than the node has processors.
 *
 * Any thread may call it at any time; each worker applies it from its next idle period.
 * @return 0; EINVAL if @p shared is neither 0 nor 1; EPERM if the runtime is not running.
 */
int marcel_set_processors_shared(int shared);

/**
 * Keeps time slicing (`MARCEL_TIMESLICE`) and the runtime's own preemption (bubble
 * regeneration, and an idle VP asking for the seeds of a private bubble under the `cache`
 * and `steal` strategies) from switching the calling thread out until the matching
 * marcel_thread_preemption_enable(). Calls nest, and cost two memory accesses. The
 * thread still leaves its VP whenever it yields, blocks or enters a blocking section.
 *
 * With time slicing on (the default where preemption works), or when the runtime
 * preempts on its own, a thread may be switched out at almost any instruction of its
 * own code; never inside libc, the dynamic loader, libgcc_s or marcel, and never while it
 * holds a lock of the C library (pthread mutexes, spin and read-write locks, stream
 * locks, a `pthread_once` routine or C++ static initialiser running: marcel counts them,
 * including C++'s `std::mutex` and those of libraries not built against
 * `<marcel/pthread.h>`). Bracket with this call any code that holds a lock marcel cannot
 * see: one a library built directly on futexes, a semaphore used as a lock, or a lock of
 * libc's held while libc calls the program back (stdio cookie functions,
 * `dl_iterate_phdr` callbacks). A thread switched out while holding one makes any other
 * marcel thread of its kernel thread that then waits for that lock block the kernel
 * thread, possibly for good. marcel's own primitives need no bracketing.
 *
 * A preempted thread may resume on another VP and kernel thread: the `errno` caveat
 * above then holds at every instruction, as it does for any address of a `__thread`
 * variable that the compiler keeps in a register. Disabling preemption keeps the thread
 * where it is as long as it neither yields nor blocks.
 * @return 0; EPERM if the caller is not a marcel thread.
 */
int marcel_thread_preemption_disable(void);

/**
 * Undoes one marcel_thread_preemption_disable(). When the last one is undone and a time
 * slice ran out (or a preemption was requested) meanwhile, the thread yields here.
 * @return 0; EINVAL without a matching marcel_thread_preemption_disable(); EPERM if the
 * caller is not a marcel thread.
 */
int marcel_thread_preemption_enable(void);

/**
 * Whether the calling thread may be switched out by preemption at this point: it runs on
 * a VP, was created preemptible (marcel_attr_setpreemptible()), has not disabled
 * preemption, and preemption works in this process. It does not say whether time slicing
 * is on (`MARCEL_TIMESLICE`): the runtime may also preempt on its own (bubble
 * regeneration). C library locks the thread holds (which also hold preemption off) do
 * not count here.
 * @return 1 or 0; 0 from a kernel thread that is not a marcel thread, and from a thread
 * inside a blocking section.
 */
int marcel_thread_is_preemptible(void);

/**
 * Prints one line per thread to @p out, for a person looking at a program that waits:
 * its id, name and state (not started, ready, running, blocked, suspended, ended but not
 * joined), whether it is detached, its bubble, and for a thread never started what would
 * start it. Any thread may call it; the list is a snapshot taken without stopping the
 * others. With `MARCEL_DEBUG=1`, marcel_join() prints the line of a thread it waits for
 * that was never started, and marcel_end() lists the threads it still waits for after 1 s
 * without one ending (10 s, and only when none of them is running or ready, without it).
 * @return 0; EINVAL if @p out is NULL; EPERM if the runtime is not running.
 */
int marcel_print_threads(FILE *out);

/** @} */

#ifdef __cplusplus
}

/** marcel_init() for C++ programs whose `main` takes `char *const argv[]`. The array
 * `main` receives is writable whatever its declaration says, so marcel_init() takes its
 * `--marcel-*` arguments out of it as usual. */
inline int marcel_init(int *argc, char *const *argv)
{
	return marcel_init(argc, const_cast<char **>(argv));
}
#endif

#endif
