/*
 * MARCEL_DEBUG's check of thread-local storage left behind (tls_check.c): a marcel
 * thread that leaves data in `__thread` variables and resumes on another kernel thread,
 * which has its own copy of them, is reported once per module.
 *
 * Off (MARCEL_DEBUG unset, or no module to watch), a switch pays nothing: it tests
 * ma_switch_watch, whose tls byte is set while threads are watched.
 */
#ifndef MA_TLS_CHECK_H
#define MA_TLS_CHECK_H

#include "ma_sched.h"

/* At marcel_init with MARCEL_DEBUG=1, on main's kernel thread, before the other kernel
 * threads start: finds the modules to watch. Best effort: on failure it says so on
 * stderr and the runtime runs unwatched. */
void ma_tls_check_start(void) MA_HIDDEN;
/* At marcel_end on main's kernel thread, once the others have ended (and on the error
 * paths of marcel_init after ma_tls_check_start). */
void ma_tls_check_stop(void) MA_HIDDEN;
/* carrier.c: a kernel thread carrying VPs ends (frees what it kept for the check). */
void ma_tls_check_thread_end(void) MA_HIDDEN;

void ma_tls_check_switch_slow(struct marcel_task *self, struct marcel_task *from) MA_HIDDEN;

/*
 * On the kernel thread where `from` ran until now, as soon as it is saved (before its
 * post-switch work), in the context that follows: `self` (NULL for a carrier's own
 * context). Charges the changes found since the previous call on this kernel thread to
 * `from`, and reports `self` if it resumes away from data it left.
 */
static inline void ma_tls_check_switch(struct marcel_task *self, struct marcel_task *from)
{
	if (ma_unlikely(atomic_load_explicit(&ma_switch_watch.tls, memory_order_relaxed)))
		ma_tls_check_switch_slow(self, from);
}

#endif
