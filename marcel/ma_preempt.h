/*
 * Preemption (preempt.c, marcel/arch/<cpu>/preempt.S): a timer signal for busy workers
 * (MARCEL_TIMESLICE) and on-demand requests (bubble regeneration). The handler never
 * switches: at a safe point it redirects the interrupted thread into a trampoline that
 * saves every register and calls ma_yield_preempted() in an ordinary context.
 *
 * The signal is MA_PREEMPT_SIG = SIGRTMIN + 7, sent with tgkill to the kernel threads
 * that carry VPs only; marcel keeps its handler installed from the first marcel_init
 * on, unless the application already had one for that signal (then time slicing is
 * refused and requests do nothing).
 */
#ifndef MA_PREEMPT_H
#define MA_PREEMPT_H

#include "ma_sched.h"

#define MA_PREEMPT_SIG (SIGRTMIN + 7)

/* At marcel_init, after the workers started: installs the handler (once per process)
 * and, if MARCEL_TIMESLICE is set, starts the ticks. 0 or an errno value (message
 * printed): EINVAL when a time slice is asked where preemption cannot work (generic
 * build, ThreadSanitizer, libmarcel linked statically), EBUSY when the application owns
 * the signal. */
int ma_preempt_start(void) MA_HIDDEN;
/* At marcel_end, once every user thread has ended and before the workers stop. */
void ma_preempt_stop(void) MA_HIDDEN;

/* Asks VP w to switch the thread it runs now out at that thread's next safe point, even
 * in cooperative mode. Callable from any thread, w included, with spin locks held. Does
 * nothing if w runs no thread (its idle context), or where preemption is unavailable
 * (ThreadSanitizer, the portable build, a static libmarcel). The request stands until
 * the thread is switched out (by the handler, or at its marcel_thread_preemption_enable)
 * or leaves w by itself; while its point is unsafe it is retried every 200 us (sooner
 * with a shorter time slice). A thread created not preemptible is never switched out.
 * In cooperative mode the first request starts the kernel thread that retries
 * (pthread_create, once per runtime). */
void ma_preempt_request(struct ma_worker *w) MA_HIDDEN;

/* carrier.c, on the kernel thread itself: every kernel thread that carries VPs calls the
 * first when it starts (unblocks the signal, records its thread id) and the second when
 * it ends. The process's main thread is handled by ma_preempt_start/stop. */
void ma_preempt_thread_start(const struct ma_carrier *c) MA_HIDDEN;
void ma_preempt_thread_end(const struct ma_carrier *c) MA_HIDDEN;

/* Called by the trampoline (preempt.S) in the preempted thread's own context. */
void ma_preempt_yield(void) MA_HIDDEN;

#endif
