/**
 * @file marcel/cancel.h
 * @brief Thread cancellation (deferred, as POSIX) and cleanup handlers.
 */
#ifndef MARCEL_CANCEL_H
#define MARCEL_CANCEL_H

#include <marcel/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup marcel_cancel Cancellation
 * marcel_cancel() asks a thread to end. The thread acts on the request only at a
 * *cancellation point*, and only while its cancellation is enabled: it then runs its
 * cleanup handlers (innermost first), then its key destructors, and ends with the result
 * ::MARCEL_CANCELED, as marcel_exit(::MARCEL_CANCELED) would. A joiner gets that result.
 *
 * The cancellation points are the calls POSIX makes points among those marcel provides:
 * marcel_join(), marcel_cond_wait(), marcel_cond_timedwait(), marcel_sem_wait(),
 * marcel_sem_timedwait(), marcel_usleep(), marcel_nanosleep(), marcel_clock_nanosleep(),
 * marcel_sleep(), marcel_delay(), the signal waits (marcel_sigwait(),
 * marcel_sigwaitinfo(), marcel_sigtimedwait(), marcel_sigsuspend(), marcel_pause()) and
 * marcel_testcancel(). Each acts on a request pending
 * when it is called, and on one that comes while it blocks: the thread is woken, takes
 * itself off what it waited on, and ends. A call whose wait ended for its own reason
 * (a signal, a unit of the semaphore, the joined thread's end) when the request came
 * completes normally and leaves the request pending for the next point, so no
 * wake-up is lost. marcel_cond_wait() and marcel_cond_timedwait() take the mutex back
 * before the handlers run, as POSIX requires: a handler typically unlocks it.
 *
 * Not points (nor are they in POSIX): mutex, read-write lock, spin lock and barrier
 * waits, Marcel's marcel_sem_P() and marcel_sem_timed_P(), marcel futexes, bubble calls.
 * The I/O calls of `marcel/blocking.h` are not points either, nor is a sleep inside a
 * blocking section (it sleeps in the kernel): the request waits for the next point after
 * the section.
 *
 * A thread canceled before it starts (created with marcel_create_dontsched() and not
 * woken yet, or still queued) ends as soon as it is started, without calling its
 * function; marcel_cancel() does not start it.
 *
 * The asynchronous type (::MARCEL_CANCEL_ASYNCHRONOUS) is accepted, but marcel does not
 * interrupt a running thread: it acts at the next cancellation point, or when
 * marcel_setcancelstate() or marcel_setcanceltype() makes the thread enabled and
 * asynchronous with a request pending.
 *
 * Cleanup handlers also run at marcel_exit() (as POSIX's pthread_exit()), innermost
 * first; they do not run when the thread's function returns (POSIX leaves returning
 * from inside a push/pop block undefined: in marcel the handlers still pushed are
 * dropped). While a thread runs its handlers and key destructors at its end, its
 * cancellation is disabled.
 *
 * Cancellation concerns marcel threads; a kernel thread that is not a marcel thread
 * may still use marcel_cleanup_push() and marcel_cleanup_pop() (pop runs the handler if
 * asked), and its other calls here return EPERM.
 * @{ */

/** The result of a canceled thread, as POSIX's `PTHREAD_CANCELED`. */
#define MARCEL_CANCELED ((any_t)-1)

/** Cancellation enabled (the state of every new thread). Same value as glibc's
 * `PTHREAD_CANCEL_ENABLE`. */
#define MARCEL_CANCEL_ENABLE 0
/** Cancellation disabled: requests stay pending until it is enabled again. */
#define MARCEL_CANCEL_DISABLE 1
/** Deferred type (the type of every new thread): requests are acted on at cancellation
 * points. Same value as glibc's `PTHREAD_CANCEL_DEFERRED`. */
#define MARCEL_CANCEL_DEFERRED 0
/** Asynchronous type: accepted, and acted on as described above (never by interrupting
 * the thread). */
#define MARCEL_CANCEL_ASYNCHRONOUS 1

/** A cleanup handler's record, on the stack of the block marcel_cleanup_push() opens.
 * Its fields are private. */
typedef struct marcel_cleanup_buffer {
	void (*__routine)(void *);          /**< @private */
	void *__arg;                        /**< @private */
	struct marcel_cleanup_buffer *__prev; /**< @private the next outer handler */
	marcel_t __owner;                   /**< @private the thread it is pushed on, or NULL */
} marcel_cleanup_buffer_t;

/**
 * Asks @p t to end (see the group's description): returns at once, without waiting for
 * it. A thread may cancel itself: it acts at its next cancellation point.
 * @return 0, also for a thread that has ended but is not joined yet (the request has no
 * effect: its joiner gets its own result); ESRCH if @p t is NULL, was joined, or was
 * detached and has ended.
 */
int marcel_cancel(marcel_t t);

/**
 * Enables (::MARCEL_CANCEL_ENABLE) or disables (::MARCEL_CANCEL_DISABLE) the caller's
 * cancellation. Not a cancellation point, except that a thread of the asynchronous type
 * that enables it with a request pending acts on it here.
 * @param state the new state.
 * @param oldstate receives the previous state; may be NULL.
 * @return 0; EINVAL for another value of @p state; EPERM if the caller is not a marcel
 * thread.
 */
int marcel_setcancelstate(int state, int *oldstate);

/**
 * Sets the caller's cancellation type: ::MARCEL_CANCEL_DEFERRED or
 * ::MARCEL_CANCEL_ASYNCHRONOUS. A thread that becomes asynchronous with a request pending
 * and its cancellation enabled acts on it here.
 * @param type the new type.
 * @param oldtype receives the previous type; may be NULL.
 * @return 0; EINVAL for another value of @p type; EPERM if the caller is not a marcel
 * thread.
 */
int marcel_setcanceltype(int type, int *oldtype);

/** A cancellation point and nothing else: the caller ends here if a request is pending
 * and its cancellation is enabled. Does nothing in a kernel thread that is not a marcel
 * thread. */
void marcel_testcancel(void);

/**
 * Pushes @p routine(@p arg) on the caller's cleanup handlers, recorded in @p buf. Called
 * by marcel_cleanup_push(); call it directly only with a matching
 * marcel_cleanup_pop_buffer() in the same block.
 * @return 0; EINVAL if @p buf or @p routine is NULL (nothing is pushed, and the matching
 * pop does nothing).
 */
int marcel_cleanup_push_buffer(marcel_cleanup_buffer_t *buf, void (*routine)(void *), void *arg);

/**
 * Pops the handler recorded in @p buf, which must be the caller's innermost one, and
 * runs it if @p execute is non-zero. Called by marcel_cleanup_pop().
 * @return 0; EINVAL if @p buf is NULL, or is not the innermost handler (nothing is popped
 * or run: a block was left without its pop, by a `return` or a `longjmp`).
 */
int marcel_cleanup_pop_buffer(marcel_cleanup_buffer_t *buf, int execute);

/** @cond MARCEL_CANCEL_PRIVATE */
/* Nested pushes shadow the outer block's buffer on purpose: no -Wshadow there. */
#if defined(__GNUC__) || defined(__clang__)
#define MARCEL_CANCEL_NOSHADOW_BEGIN_ _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wshadow\"")
#define MARCEL_CANCEL_NOSHADOW_END_ _Pragma("GCC diagnostic pop")
#else
#define MARCEL_CANCEL_NOSHADOW_BEGIN_
#define MARCEL_CANCEL_NOSHADOW_END_
#endif
/** @endcond */

/** Opens a block, closed by the matching marcel_cleanup_pop() in the same function and
 * at the same level, during which @p routine(@p arg) runs if the thread is canceled or
 * calls marcel_exit(). As Marcel's and POSIX's macros. */
#define marcel_cleanup_push(routine, arg)                                                   \
	do {                                                                                \
		MARCEL_CANCEL_NOSHADOW_BEGIN_                                               \
		marcel_cleanup_buffer_t marcel_cleanup_buf_;                                \
		MARCEL_CANCEL_NOSHADOW_END_                                                 \
		(void)marcel_cleanup_push_buffer(&marcel_cleanup_buf_, (routine), (arg))
/** Closes the block of marcel_cleanup_push(): pops its handler and runs it if
 * @p execute is non-zero. */
#define marcel_cleanup_pop(execute)                                                         \
		(void)marcel_cleanup_pop_buffer(&marcel_cleanup_buf_, (execute));           \
	} while (0)

/** @} */

#ifdef __cplusplus
}
#endif

#endif
