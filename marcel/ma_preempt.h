/*
 * Preemption (preempt.c, marcel/arch/<cpu>/preempt.S): a timer signal per busy worker
 * (MARCEL_TIMESLICE) and on-demand requests (bubble regeneration). The handler never
 * switches: at a safe point it redirects the interrupted thread into a trampoline that
 * saves every register and calls ma_yield_preempted() in an ordinary context.
 */
#ifndef MA_PREEMPT_H
#define MA_PREEMPT_H

#include "ma_sched.h"

/* At marcel_init, after the workers started: installs the handler and, if
 * MARCEL_TIMESLICE is set, the ticks. 0 or an errno value (message printed). */
int ma_preempt_start(void) MA_HIDDEN;
/* At marcel_end, before the workers stop. */
void ma_preempt_stop(void) MA_HIDDEN;

/* Asks VP w to switch its current thread out at its next safe point, even in cooperative
 * mode. Callable from any thread; does nothing if w runs nothing preemptible (the request
 * is retried at w's next tick or request). */
void ma_preempt_request(struct ma_worker *w) MA_HIDDEN;

#endif
