/*
 * What the synchronisation primitives are built from: deadlines, per-worker timers,
 * wait queues keyed by address (marcel's futex), the identity of lock owners, and the
 * spin-before-block policy.
 */
#ifndef MA_SYNC_H
#define MA_SYNC_H

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>
#include "ma_sched.h"

/* ---- deadlines: CLOCK_MONOTONIC nanoseconds ---- */

#define MA_NO_DEADLINE UINT64_MAX

static inline uint64_t ma_clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Now, on the clock CPU time is charged with (cpuclock.c): the helper's word, or the
 * clock itself while switches are rare. */
static inline uint64_t ma_cpu_clock_now(void)
{
	uint64_t c = atomic_load_explicit(&ma_cpu_clock, memory_order_relaxed);
	return ma_likely(c != MA_CPU_CLOCK_PRECISE) ? c : ma_clock_ns();
}

/* The CPU clock's time since w->run_start, which becomes now; w is the caller's worker,
 * whose reads of the clock itself are counted (cpuclock.c). The coarse word may be behind
 * a start read from the clock itself: back from precise reads it lags by up to a period,
 * or by more if the kernel kept the helper off the processors between its read of the
 * clock and its store. The clock itself then settles it. */
static inline uint64_t ma_cpu_clock_lap(struct ma_worker *w)
{
	uint64_t now = atomic_load_explicit(&ma_cpu_clock, memory_order_relaxed), s = w->run_start;
	if (ma_unlikely(now == MA_CPU_CLOCK_PRECISE))
		now = ma_cpu_clock_precise(w);
	if (ma_unlikely(now < s)) {
		now = ma_clock_ns();
		if (now < s)
			return 0;
	}
	w->run_start = now;
	return now - s;
}

/* Charges t, which w (the caller's worker) ran since w->run_start, with that time (the
 * worker's clock moves on). */
static inline void ma_cpu_charge(struct ma_worker *w, struct marcel_task *t)
{
	/* Frequent switches come within one period of the coarse clock: the lap is 0 and
	 * nothing changes (a precise clock never equals a start). */
	if (ma_likely(atomic_load_explicit(&ma_cpu_clock, memory_order_relaxed) == w->run_start))
		return;
	uint64_t ran = ma_cpu_clock_lap(w);
	atomic_store_explicit(&t->e.cpu_ns, atomic_load_explicit(&t->e.cpu_ns, memory_order_relaxed) + ran,
			      memory_order_relaxed);
}

static inline uint64_t ma_deadline_in(uint64_t ns)
{
	uint64_t now = ma_clock_ns();
	return ns >= MA_NO_DEADLINE - now ? MA_NO_DEADLINE - 1 : now + ns;
}

/* Converts an absolute POSIX timeout on clock clk into a monotonic deadline. A
 * CLOCK_REALTIME deadline is converted once, at the call: a later jump of the wall clock
 * does not move it. Returns EINVAL for a NULL or malformed timespec. */
int ma_deadline_from_abs(clockid_t clk, const struct timespec *abstime, uint64_t *deadline) MA_HIDDEN;

/* ---- timers (timer.c) ---- */

struct ma_timer {
	uint64_t deadline;
	/* Pairing-heap links: prev is the parent for a first child, else the left sibling. */
	struct ma_timer *child, *next, *prev;
	struct ma_worker *owner;          /* whose heap it was armed on */
	int armed;                        /* on the heap (under the owner's lock) */
	/* Called under the owner's timer lock once the deadline passed; the timer is already
	 * off the heap. It must not arm or cancel timers. */
	void (*fire)(struct ma_timer *t);
};

/* Arms t on the calling worker's heap. */
void ma_timer_arm(struct ma_worker *w, struct ma_timer *t, uint64_t deadline,
		  void (*fire)(struct ma_timer *)) MA_HIDDEN;
/* Disarms t (armed before) if it has not fired; once it returns, t's callback is not
 * running and will not run. */
void ma_timer_cancel(struct ma_timer *t) MA_HIDDEN;
/* Fires w's due timers. */
void ma_timers_run(struct ma_worker *w, uint64_t now) MA_HIDDEN;
/* Fires any worker's overdue timers (called by idle workers for busy ones). */
void ma_timers_steal(uint64_t now) MA_HIDDEN;
/* The sleeping idle worker that watches every worker's timers (timer.c): take the role
 * (1 if taken), publish when it will wake (returned), give the role back. */
int ma_timer_watch_take(struct ma_worker *w) MA_HIDDEN;
uint64_t ma_timer_watch_publish(void) MA_HIDDEN;
void ma_timer_watch_release(struct ma_worker *w) MA_HIDDEN;

/* Cheap check on scheduling paths: nothing to do unless this worker has timers. */
static inline void ma_timers_poll(struct ma_worker *w)
{
	uint64_t next = atomic_load_explicit(&w->timer_next, memory_order_relaxed);
	if (ma_unlikely(next != MA_NO_DEADLINE)) {
		uint64_t now = ma_clock_ns();
		if (now >= next)
			ma_timers_run(w, now);
	}
}

/* ---- wait queues keyed by address (futex.c) ---- */

/* Blocks the caller on key while blocking(arg) holds -- evaluated under the key's queue
 * lock, so a waker that changes the state and then calls ma_fwake cannot be missed.
 * Returns 0 when woken by ma_fwake, EAGAIN if blocking(arg) was false, ETIMEDOUT.
 * A wake-up may be late: an ma_fwake issued for an earlier state (its caller changed the
 * state, then was delayed) may wake a thread that started waiting after the change.
 * Callers re-check their state, or issue the wake-up under a lock that new waiters
 * must take first (barriers). */
int ma_fwait(const void *key, int (*blocking)(const void *arg), const void *arg,
	     uint64_t deadline) MA_HIDDEN;
/* ma_fwait at a cancellation point (cancel.c): also returns ECANCELED when a
 * cancellation request became due while it waited; it has then taken itself off the
 * queue and the caller acts on the request (ma_cancel_act) once it has undone the rest
 * of its wait. A wake-up that came first wins: the request then waits for the next point. */
int ma_fwait_point(const void *key, int (*blocking)(const void *arg), const void *arg,
		   uint64_t deadline) MA_HIDDEN;
/* ma_fwait on a 32-bit word: blocks while *addr == val. */
int ma_fwait_u32(const void *addr, unsigned val, uint64_t deadline) MA_HIDDEN;
/* The same at a cancellation point (see ma_fwait_point). */
int ma_fwait_u32_point(const void *addr, unsigned val, uint64_t deadline) MA_HIDDEN;
/* Spin, then block: polls *addr for MARCEL_SPIN rounds first (marked as spinning), then
 * waits as ma_fwait_u32 (point: ma_fwait_u32_point). EAGAIN if it changed while polling.
 * For the waits whose waker is another running thread: conditions, semaphores, barriers. */
int ma_fwait_u32_spin(const void *addr, unsigned val, uint64_t deadline, int point) MA_HIDDEN;
/* Wakes up to n waiters of key, oldest first; returns how many. */
unsigned ma_fwake(const void *key, unsigned n) MA_HIDDEN;
/* Whether a thread is blocked on key. */
int ma_fwaiters(const void *key) MA_HIDDEN;

/* Waits for wt like ma_waiter_wait, but a kernel thread that is not a marcel thread gives
 * up at deadline: returns ETIMEDOUT then (the waker may still come: see futex.c). */
int ma_waiter_wait_foreign_until(struct ma_waiter *wt, uint64_t deadline) MA_HIDDEN;

/* ---- owners ---- */

/* The calling thread's identity as a lock owner: its descriptor; for a kernel thread that
 * is not a marcel thread, a per-thread token with the low bit set (never a descriptor). */
void *ma_owner_foreign(void) MA_HIDDEN;

static inline void *ma_owner_self(void)
{
	struct ma_worker *w = ma_worker_self();
	return ma_likely(w != NULL) ? (void *)ma_worker_current(w) : ma_owner_foreign();
}

/* ---- waiting policy ---- */

/* How many rounds a thread polls a busy primitive before blocking (MARCEL_SPIN, or a
 * default that is 0 on a single VP or with more VPs than processors). */
static inline unsigned ma_spin_limit(void)
{
	return ma_read_once(&ma_rt.spin_limit);
}

/* Whether spinning for owner can pay off: it runs right now on another worker. */
static inline int ma_owner_running(const void *owner)
{
	if (!owner || ((uintptr_t)owner & 1))
		return owner != NULL; /* a kernel thread: assume it runs */
	const struct marcel_task *t = owner;
	return atomic_load_explicit(&t->state, memory_order_relaxed) == MA_TASK_RUNNING;
}

void ma_spin_notify(int spinning) MA_HIDDEN;

/* Whether worker w has something else to run: its runnext slot, or a queue of its path.
 * A waiter that polls then only delays it, and maybe its own waker on the same VP. */
static inline int ma_worker_has_work(const struct ma_worker *w)
{
	int prio;
	return w->runnext || ma_peek_next(w, MA_MAX_PRIO - 1, &prio);
}

/* ---- mutexes (mutex.c): the word, and the fast paths conditions inline ---- */

/* A mutex's word is a wait queue (ma_waitq.h) carrying this flag while it is held: 0 is
 * free with nobody waiting, MA_MUTEX_HELD held with nobody waiting. */
#define MA_MUTEX_HELD ((uint64_t)8)

static inline _Atomic uint64_t *ma_mword(marcel_mutex_t *m)
{
	return (_Atomic uint64_t *)&m->__state;
}

/* ma_mutex_trytake's case of a word w that holds waiters: takes m if it is free. */
int ma_mutex_trytake_queued(marcel_mutex_t *m, uint64_t w) MA_HIDDEN;

/* Takes m if it is free: 1 if taken (the caller then records itself as owner). */
static inline int ma_mutex_trytake(marcel_mutex_t *m)
{
	uint64_t w = 0;
	if (ma_likely(atomic_compare_exchange_strong_explicit(ma_mword(m), &w, MA_MUTEX_HELD, memory_order_acquire,
							       memory_order_relaxed)))
		return 1;
	return !(w & MA_MUTEX_HELD) && ma_mutex_trytake_queued(m, w);
}

/* The wait of an owner-to-be that found m held: spins, then blocks until it takes it
 * (records self as owner, depth 1) or deadline passes (ETIMEDOUT). */
int ma_mutex_acquire_slow(marcel_mutex_t *m, void *self, uint64_t deadline) MA_HIDDEN;
/* ma_mutex_release's case of a word w with waiters: frees m and wakes the oldest. */
void ma_mutex_release_queued(marcel_mutex_t *m, uint64_t w) MA_HIDDEN;

/* Frees m, held by the caller (its depth is the caller's to keep). */
static inline void ma_mutex_release(marcel_mutex_t *m)
{
	ma_write_once(&m->__owner, NULL);
	uint64_t w = MA_MUTEX_HELD;
	if (ma_unlikely(!atomic_compare_exchange_strong_explicit(ma_mword(m), &w, 0, memory_order_release,
								  memory_order_relaxed)))
		ma_mutex_release_queued(m, w);
}

/* For condition variables: frees m, held by the caller whatever its recursion depth, and
 * returns that depth; then takes it back for self (its owner identity) at that depth. */
static inline unsigned ma_mutex_release_all(marcel_mutex_t *m)
{
	unsigned depth = m->__count;
	ma_mutex_release(m);
	return depth;
}

static inline void ma_mutex_reacquire(marcel_mutex_t *m, void *self, unsigned depth)
{
	if (ma_unlikely(!ma_mutex_trytake(m)))
		ma_mutex_acquire_slow(m, self, MA_NO_DEADLINE);
	ma_write_once(&m->__owner, self);
	m->__count = depth;
}

/* One round of a polling wait: lets the VP's other threads run, or gives the processor
 * away when the caller is not a marcel thread. */
static inline void ma_poll_yield(void)
{
	if (marcel_yield() == EPERM)
		sched_yield();
}

/* For destroying an object whose waiters are counted in *waiters and queue on key: waits
 * for waiters already woken but still leaving; EBUSY if one is still queued (or about to
 * queue). */
int ma_wait_leavers(atomic_uint *waiters, const void *key) MA_HIDDEN;

/* Checks the usual object arguments. */
#define MA_CHECK_PSHARED(v) ((v) == MARCEL_PROCESS_PRIVATE ? 0 : (v) == MARCEL_PROCESS_SHARED ? ENOTSUP : EINVAL)
#define MA_SYNC_ATTR_MAGIC 0x4d534154u /* "MSAT" */

#endif
