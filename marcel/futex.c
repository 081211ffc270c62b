/*
 * Wait queues keyed by address: the blocking mechanism of the primitives whose objects
 * have no room for their waiters (read-write locks, marcel_once, Marcel's futex API,
 * marcel_suspend, signal waits, the end of the runtime). Mutexes, conditions, semaphores
 * and barriers keep their waiters in the object instead (ma_waitq.h): no hash, no shared
 * bucket lock.
 *
 * Like the kernel's futex, a waiter checks the object's state under the lock of the
 * bucket its address hashes to, and queues itself there; a waker changes the state and
 * then dequeues waiters under the same lock. So primitives are plain atomic words plus
 * these two calls, objects need no constructor beyond zeroing, and marcel threads and
 * kernel threads wait on the same queues (a ULT blocks in the scheduler, a kernel
 * thread on the futex word of its ma_waiter).
 *
 * A queued node lives on the waiter's stack. Its state says who owns it:
 * QUEUED (in the bucket), WOKEN (a waker took it out and will set the waiter's `done`),
 * TIMEDOUT (the timer or the waiter itself took it out), CANCELED (the waiter took itself
 * out to act on a cancellation request, at a cancellation point: see ma_fwait_point).
 * Only the one that takes it out
 * of the list may wake it, and the waiter returns only after `done`, or after taking
 * itself out -- so no one touches a node after its owner returned.
 */
#include <limits.h>
#include <stdio.h>
#include "ma_sync.h"

#define MA_FBUCKETS 256

enum { MA_FN_QUEUED, MA_FN_WOKEN, MA_FN_TIMEDOUT, MA_FN_CANCELED };

struct ma_fnode {
	struct ma_list link;
	const void *key;
	int state;                        /* under the bucket lock */
	struct ma_fnode *next_wake;       /* waker's private list */
	struct ma_fbucket *bucket;
	struct ma_waiter w;
	struct ma_timer timer;
};

struct ma_fbucket {
	ma_spinlock_t lock;
	struct ma_list list;
	unsigned initialised;
} __attribute__((aligned(64)));

static struct ma_fbucket ma_fbuckets[MA_FBUCKETS];

static struct ma_fbucket *ma_fbucket_of(const void *key)
{
	uint64_t h = (uint64_t)(uintptr_t)key * 0x9e3779b97f4a7c15ull;
	struct ma_fbucket *b = &ma_fbuckets[h >> (64 - 8)];
	/* Zeroed storage is an unlocked lock; only the list head needs setting up, done
	 * under the lock the first time the bucket is used. */
	return b;
}

static void ma_fbucket_lock(struct ma_fbucket *b)
{
	ma_spin_lock(&b->lock);
	if (ma_unlikely(!b->initialised)) {
		ma_list_init(&b->list);
		b->initialised = 1;
	}
}

/* ---- time and identity helpers used by every primitive ---- */

int ma_deadline_from_abs(clockid_t clk, const struct timespec *abstime, uint64_t *deadline)
{
	if (!abstime || abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L)
		return EINVAL;
	if (abstime->tv_sec < 0) {
		*deadline = 0;
		return 0;
	}
	struct timespec now;
	clock_gettime(clk, &now);
	int64_t delta = ((int64_t)abstime->tv_sec - now.tv_sec) * 1000000000 +
			(abstime->tv_nsec - now.tv_nsec);
	uint64_t mono = ma_clock_ns();
	if (delta <= 0)
		*deadline = mono;
	else if ((uint64_t)delta >= MA_NO_DEADLINE - mono)
		*deadline = MA_NO_DEADLINE - 1;
	else
		*deadline = mono + (uint64_t)delta;
	return 0;
}

static __thread char ma_foreign_token;

void *ma_owner_foreign(void)
{
	if (ma_tls_section_task)
		return ma_tls_section_task;
	return (void *)((uintptr_t)&ma_foreign_token | 1);
}

static _Atomic(marcel_spin_notify_t) ma_spin_hook;

marcel_spin_notify_t marcel_spin_notify_set(marcel_spin_notify_t fn)
{
	return atomic_exchange(&ma_spin_hook, fn);
}

void ma_spin_notify(int spinning)
{
	struct marcel_task *self = ma_task_self();
	if (self)
		atomic_store_explicit(&self->spinning, (unsigned char)spinning, memory_order_relaxed);
	marcel_spin_notify_t fn = atomic_load_explicit(&ma_spin_hook, memory_order_relaxed);
	if (fn)
		fn(marcel_self(), spinning);
}

/* ---- waiting ---- */

int ma_waiter_wait_foreign_until(struct ma_waiter *wt, uint64_t deadline)
{
	while (!atomic_load_explicit(&wt->done, memory_order_acquire)) {
		if (ma_futex_wait_until(&wt->done, 0, deadline) == ETIMEDOUT &&
		    !atomic_load_explicit(&wt->done, memory_order_acquire))
			return ETIMEDOUT;
	}
	return 0;
}

/* Timer callback (under the owner's timer lock): take the node out if nobody woke it. */
static void ma_fnode_timeout(struct ma_timer *t)
{
	struct ma_fnode *n = ma_container_of(t, struct ma_fnode, timer);
	struct ma_fbucket *b = n->bucket;
	int claimed = 0;
	ma_spin_lock(&b->lock);
	if (n->state == MA_FN_QUEUED) {
		ma_list_del(&n->link);
		n->state = MA_FN_TIMEDOUT;
		claimed = 1;
	}
	ma_spin_unlock(&b->lock);
	if (claimed)
		ma_waiter_wake(&n->w);
}

/* The waiter of n, at a cancellation point, saw a request instead of a wake-up: takes n
 * out as a timeout would and returns ECANCELED; or, if a waker or the timer took it out
 * first, waits for that wake-up (on its way) and returns 0: the wait then ends for its
 * own reason, and the request waits for the next point (POSIX: a canceled waiter must not
 * consume a wake-up meant for another). */
static int ma_fnode_cancel(struct ma_fnode *n)
{
	struct ma_fbucket *b = n->bucket;
	ma_spin_lock(&b->lock);
	int mine = n->state == MA_FN_QUEUED;
	if (mine) {
		ma_list_del(&n->link);
		n->state = MA_FN_CANCELED;
	}
	ma_spin_unlock(&b->lock);
	if (mine)
		return ECANCELED;
	ma_waiter_wait(&n->w);
	return 0;
}

/* ma_fwait's body; point: at a cancellation point (a constant, folded away). */
static inline __attribute__((always_inline)) int
ma_fwait_in(const void *key, int (*blocking)(const void *arg), const void *arg, uint64_t deadline, int point)
{
	struct ma_fbucket *b = ma_fbucket_of(key);
	struct ma_fnode n;
	n.key = key;
	n.bucket = b;
	ma_fbucket_lock(b);
	if (!blocking(arg)) {
		ma_spin_unlock(&b->lock);
		return EAGAIN;
	}
	if (deadline != MA_NO_DEADLINE && ma_clock_ns() >= deadline) {
		ma_spin_unlock(&b->lock);
		return ETIMEDOUT;
	}
	/* Armed before it is visible; the bucket lock orders both for the waker. */
	ma_waiter_init(&n.w);
	n.state = MA_FN_QUEUED;
	ma_list_add_tail(&b->list, &n.link);
	ma_spin_unlock(&b->lock);

	if (deadline == MA_NO_DEADLINE) {
		if (!point) {
			ma_waiter_wait(&n.w);
			return 0;
		}
		return ma_likely(ma_waiter_wait_point(&n.w) == 0) ? 0 : ma_fnode_cancel(&n);
	}
	if (!n.w.task) {
		if (ma_waiter_wait_foreign_until(&n.w, deadline) == ETIMEDOUT) {
			ma_spin_lock(&b->lock);
			int mine = n.state == MA_FN_QUEUED;
			if (mine) {
				ma_list_del(&n.link);
				n.state = MA_FN_TIMEDOUT;
			}
			ma_spin_unlock(&b->lock);
			if (mine)
				return ETIMEDOUT;
			/* A waker took the node first: its wake-up is on its way. */
			ma_waiter_wait(&n.w);
		}
		return 0;
	}
	ma_timer_arm(ma_worker_self(), &n.timer, deadline, ma_fnode_timeout);
	int canceled = 0;
	if (!point)
		ma_waiter_wait(&n.w);
	else if (ma_unlikely(ma_waiter_wait_point(&n.w) != 0))
		canceled = ma_fnode_cancel(&n) != 0;
	/* Taken out by us, the callback finds the node not queued and leaves it. */
	ma_timer_cancel(&n.timer);
	if (canceled)
		return ECANCELED;
	/* Both wakers write state under the bucket lock before setting `done`, which we
	 * read with acquire: no lock needed to read it now. */
	return n.state == MA_FN_TIMEDOUT ? ETIMEDOUT : 0;
}

int ma_fwait(const void *key, int (*blocking)(const void *arg), const void *arg, uint64_t deadline)
{
	return ma_fwait_in(key, blocking, arg, deadline, 0);
}

int ma_fwait_point(const void *key, int (*blocking)(const void *arg), const void *arg, uint64_t deadline)
{
	return ma_fwait_in(key, blocking, arg, deadline, 1);
}

struct ma_u32_check {
	const unsigned *addr;
	unsigned val;
};

static int ma_u32_check(const void *arg)
{
	const struct ma_u32_check *c = arg;
	return ma_load_seq_cst(c->addr) == c->val;
}

/*
 * Spin, then block (the 004 seed's spin-then-notify): a marcel thread polls the word for
 * up to MARCEL_SPIN rounds before it queues, marked as spinning meanwhile, so that a
 * wake-up that comes soon costs no block and no switch, and a strategy counting the
 * program's parallelism does not count it. It polls only while its worker has nothing
 * else to run, so only the worker's idle time is spent (a hand-off between threads of one
 * VP blocks at once, as before). Returns whether the word changed (EAGAIN, as if it had
 * changed before the wait). MARCEL_SPIN's default is 0 on one VP and with more VPs than
 * processors.
 */
static int ma_u32_spin(const unsigned *addr, unsigned val)
{
	unsigned limit = ma_spin_limit();
	struct ma_worker *w;
	if (!limit || !(w = ma_worker_self()) || ma_worker_has_work(w))
		return 0;
	ma_spin_notify(1);
	unsigned i = 0;
	while (i < limit && ma_load_seq_cst(addr) == val && !(i % 16 == 15 && ma_worker_has_work(w))) {
		ma_cpu_relax();
		i++;
	}
	ma_spin_notify(0);
	return ma_load_seq_cst(addr) != val;
}

int ma_fwait_u32(const void *addr, unsigned val, uint64_t deadline)
{
	struct ma_u32_check c = { addr, val };
	return ma_fwait(addr, ma_u32_check, &c, deadline);
}

int ma_fwait_u32_point(const void *addr, unsigned val, uint64_t deadline)
{
	struct ma_u32_check c = { addr, val };
	return ma_fwait_point(addr, ma_u32_check, &c, deadline);
}

int ma_fwait_u32_spin(const void *addr, unsigned val, uint64_t deadline, int point)
{
	if (ma_u32_spin(addr, val))
		return EAGAIN;
	return point ? ma_fwait_u32_point(addr, val, deadline) : ma_fwait_u32(addr, val, deadline);
}

unsigned ma_fwake(const void *key, unsigned n)
{
	struct ma_fbucket *b = ma_fbucket_of(key);
	struct ma_fnode *first = NULL, **last = &first;
	unsigned count = 0;
	ma_fbucket_lock(b);
	ma_list_for_each_entry_safe(struct ma_fnode, f, &b->list, link) {
		if (count >= n)
			break;
		if (f->key != key)
			continue;
		ma_list_del(&f->link);
		f->state = MA_FN_WOKEN;
		f->next_wake = NULL;
		*last = f;
		last = &f->next_wake;
		count++;
	}
	ma_spin_unlock(&b->lock);
	/* Woken outside the lock: a woken thread may run at once on another worker. */
	while (first) {
		struct ma_fnode *f = first;
		first = f->next_wake; /* read before the wake: f may vanish after it */
		ma_waiter_wake(&f->w);
	}
	return count;
}

int ma_fwaiters(const void *key)
{
	struct ma_fbucket *b = ma_fbucket_of(key);
	int found = 0;
	ma_fbucket_lock(b);
	ma_list_for_each_entry(struct ma_fnode, x, &b->list, link)
		if ((found = x->key == key))
			break;
	ma_spin_unlock(&b->lock);
	return found;
}

int ma_wait_leavers(atomic_uint *waiters, const void *key)
{
	while (atomic_load(waiters)) {
		if (ma_fwaiters(key))
			return EBUSY;
		ma_poll_yield();
	}
	return 0;
}

/* ---- Marcel's futex API ---- */

struct ma_masked_check {
	const unsigned long *addr;
	unsigned long mask, val;
};

static int ma_masked_check(const void *arg)
{
	const struct ma_masked_check *c = arg;
	return (ma_load_seq_cst(c->addr) & c->mask) == c->val;
}

int marcel_futex_wait(marcel_futex_t *futex, unsigned long *addr, unsigned long mask,
		      unsigned long val, unsigned long timeout_us)
{
	if (!futex || !addr)
		return EINVAL;
	struct ma_masked_check c = { addr, mask, val };
	uint64_t deadline = MA_NO_DEADLINE;
	if (timeout_us != MARCEL_FUTEX_NO_TIMEOUT)
		deadline = ma_deadline_in(timeout_us > UINT64_MAX / 1000 ? UINT64_MAX / 1000 : timeout_us * 1000);
	int e = ma_fwait(futex, ma_masked_check, &c, deadline);
	return e == EAGAIN ? EWOULDBLOCK : e;
}

int marcel_futex_wake(marcel_futex_t *futex, unsigned nb)
{
	if (!futex)
		return 0;
	unsigned n = ma_fwake(futex, nb);
	return n > INT_MAX ? INT_MAX : (int)n;
}
