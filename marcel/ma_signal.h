/*
 * Signals of marcel threads: per-thread masks, pending sets and delivery (signal.c), and
 * the process-directed signals marcel catches and hands to a thread (sigproc.c).
 *
 * A set is a 64-bit word, bit sig - 1 (Linux numbers signals 1 to 64). Delivery happens
 * in the thread itself, at the points listed in marcel/signal.h; scheduling code calls
 * ma_sig_check after a switch and ma_sig_due before blocking.
 */
#ifndef MA_SIGNAL_H
#define MA_SIGNAL_H

#include <signal.h>
#include "ma_preempt.h"

_Static_assert(NSIG - 1 <= 64, "signal sets are 64-bit words");
_Static_assert(NSIG == MARCEL_NSIG, "MARCEL_NSIG is not this system's NSIG");

#define MA_SIG_BIT(sig) ((uint64_t)1 << ((sig) - 1))
#define MA_SIG_ALL (NSIG - 1 == 64 ? ~(uint64_t)0 : MA_SIG_BIT(NSIG) - 1)
/* Never blocked, never caught. */
#define MA_SIG_UNBLOCKABLE (MA_SIG_BIT(SIGKILL) | MA_SIG_BIT(SIGSTOP))

/* A signal a program may send, block or handle: not the C library's own (32 and 33 in
 * glibc) nor marcel's preemption signal (ma_preempt.h). */
static inline int ma_sig_valid(int sig)
{
	return sig > 0 && sig < NSIG && !(sig > 31 && sig < SIGRTMIN) && sig != MA_PREEMPT_SIG;
}
/* Those, as a set, less SIGKILL and SIGSTOP. */
uint64_t ma_sig_usable(void) MA_HIDDEN;

/* Signals of the faulting instruction: the kernel runs their handler at once in the
 * faulting thread, the one running; marcel never catches them. */
static inline int ma_sig_synchronous(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGTRAP ||
	       sig == SIGSYS;
}

/* Process-directed signals caught and not yet taken by a thread (sigproc.c). */
extern _Atomic uint64_t ma_sig_proc_pending MA_HIDDEN;
/* Those some thread waits for in marcel_sigwait or marcel_sigsuspend now (signal.c):
 * only waiters take them, so that a thread passing by does not run a handler meant to
 * end a wait, or make a sigwait miss its signal. */
extern _Atomic uint64_t ma_sig_waited MA_HIDDEN;

/* ---- signal.c ---- */
/* Runs the handlers of the signals self may take now (its own pending ones, then the
 * process's), lowest number first; returns how many it took. */
int ma_sig_deliver(struct marcel_task *self) MA_HIDDEN;
/* The kernel's sigset as a word, and back. */
uint64_t ma_sig_bits(const sigset_t *set) MA_HIDDEN;
void ma_sig_set(sigset_t *set, uint64_t bits) MA_HIDDEN;
/* Tells t that a signal it does not block is pending for it: wakes it if it is blocked
 * (its wait goes on after the handler), asks its VP to switch it if it runs. */
void ma_sig_notify(struct marcel_task *t) MA_HIDDEN;
/* main's mask at marcel_init: the kernel mask it has. */
void ma_sig_init_main(struct marcel_task *m) MA_HIDDEN;

/* Whether self has a signal to take now. Sequentially consistent: a waiter's check after
 * publishing BLOCKED pairs with a sender's read of the state after setting the bit. */
static inline int ma_sig_due(struct marcel_task *self)
{
	uint64_t p = atomic_load(&self->sig_pending) |
		     (atomic_load(&ma_sig_proc_pending) & ~atomic_load_explicit(&ma_sig_waited, memory_order_relaxed));
	return ma_unlikely(p != 0) && !self->is_idle &&
	       (p & ~(atomic_load_explicit(&self->sig_mask, memory_order_relaxed) |
		      atomic_load_explicit(&self->sig_wait, memory_order_relaxed))) != 0;
}

/* After a switch, in the thread switched in: runs its due handlers. */
static inline void ma_sig_check(struct marcel_task *self)
{
	if (ma_unlikely((atomic_load_explicit(&self->sig_pending, memory_order_relaxed) |
			 atomic_load_explicit(&ma_sig_proc_pending, memory_order_relaxed)) != 0))
		ma_sig_deliver(self);
}

/* In a wait loop, self has just published BLOCKED and has a signal to take: takes the
 * block back and runs the handlers (1; the loop then blocks again), unless a wake-up came
 * first (0: block as usual, that wake-up requeues it at once). */
static inline int ma_sig_unblock(struct marcel_task *self)
{
	int s = MA_TASK_BLOCKED;
	if (!atomic_compare_exchange_strong(&self->state, &s, MA_TASK_RUNNING))
		return 0;
	ma_sig_deliver(self);
	atomic_store(&self->state, MA_TASK_BLOCKING);
	return 1;
}

/* ---- sigproc.c ---- */
/* The action marcel applies to sig: marcel_sigaction's if marcel catches sig, else the
 * kernel's. */
void ma_sig_action(int sig, struct sigaction *act) MA_HIDDEN;
/* Sets sig's action back to SIG_DFL (SA_RESETHAND), marcel's and the kernel's. */
void ma_sig_reset(int sig) MA_HIDDEN;
/* A marcel thread will wait for the signals of want (dfl: in sigwait, whatever their
 * action; else in sigsuspend, for a handler): makes sure the process-directed ones reach
 * marcel. Those the kernel would handle on a worker (the C library's handler, or with
 * dfl the default action) are caught, their action moving to marcel's table; those the
 * workers block in the kernel are taken from it by the helper. */
void ma_sig_want(uint64_t want, int dfl) MA_HIDDEN;
/* siginfo of process-directed sig, as caught. */
void ma_sig_proc_info(int sig, siginfo_t *info) MA_HIDDEN;
/* At marcel_end, once no user thread is left: stops the helper thread and gives the
 * signals marcel caught their handlers back in the kernel. */
void ma_sig_stop(void) MA_HIDDEN;
/* At marcel_init: the kernel mask the workers inherit. */
void ma_sig_start(const sigset_t *kernel_mask) MA_HIDDEN;

#endif
