/*
 * Semaphores: one word holding either the count or the queue of blocked threads
 * (ma_waitq.h), never both -- a post finding waiters hands its unit to the oldest one
 * instead of counting it, and a wait queues itself only while the count is 0. Every
 * change is one compare-and-swap on that word, so no wake-up is lost, and on one VP a
 * post-and-wait hand-off costs one atomic operation on each side besides the switch.
 */
#include "ma_waitq.h"

/* One unit in the word's count (the bits above MA_WQ_BITS). */
#define MA_SEM_UNIT (MA_WQ_BITS + 1)
_Static_assert(MA_SEM_UNIT == 16, "MARCEL_SEM_INITIALIZER counts in units of 16");

static inline _Atomic uint64_t *ma_sq(marcel_sem_t *s)
{
	return (_Atomic uint64_t *)&s->__state;
}

/* The units in word w: 0 unless it is a count (0 itself is no unit and no waiter). */
static inline uint64_t ma_sem_units(uint64_t w)
{
	return (w & MA_WQ_COUNT) ? w / MA_SEM_UNIT : 0;
}

/* Whether w is a count (of 0 or more units), not a queue. */
static inline int ma_sem_counts(uint64_t w)
{
	return !w || (w & MA_WQ_COUNT);
}

static inline uint64_t ma_sem_word(uint64_t units)
{
	return units ? units * MA_SEM_UNIT | MA_WQ_COUNT : 0;
}

/* Takes a unit from *w's count if it has one: 1 if taken, 0 if none (*w is the word's
 * value either way). */
static inline int ma_sem_take_unit(marcel_sem_t *s, uint64_t *w)
{
	while (ma_sem_units(*w))
		if (atomic_compare_exchange_weak_explicit(ma_sq(s), w, ma_sem_word(ma_sem_units(*w) - 1),
							  memory_order_acquire, memory_order_relaxed))
			return 1;
	return 0;
}

static int ma_sem_trytake(marcel_sem_t *s)
{
	uint64_t w = atomic_load_explicit(ma_sq(s), memory_order_relaxed);
	return ma_sem_take_unit(s, &w);
}

/* point: at a cancellation point (sem_wait, sem_timedwait; not Marcel's P): a request
 * acts on entry, or while it waits, without taking a unit. call: the public function,
 * named if it is refused (EPERM: a wait no thread could end, ma_after_failed_init). */
static inline __attribute__((always_inline)) int ma_sem_take_in(marcel_sem_t *s, uint64_t deadline, int point,
								 const char *call)
{
	struct marcel_task *self = ma_task_self();
	if (point)
		ma_cancel_point(self);
	uint64_t w = atomic_load_explicit(ma_sq(s), memory_order_relaxed);
	if (ma_likely(ma_sem_take_unit(s, &w)))
		return 0;
	if (deadline == MA_NO_DEADLINE && ma_after_failed_init())
		return ma_not_running(call, EPERM);
	struct ma_wq_node n;
	ma_wq_node_init(&n, self);
	for (;;) {
		if (ma_sem_counts(w)) {
			if (ma_sem_take_unit(s, &w)) {
				if (self)
					atomic_store_explicit(&self->state, MA_TASK_RUNNING, memory_order_relaxed);
				return 0;
			}
			/* No unit: queue as the only waiter -- if the word is still the empty count.
			 * A take that lost a race reloads w, which may have become a queue since:
			 * a compare-and-swap from that queue would replace its waiters by us, and
			 * they would wait for ever. */
			if (!ma_sem_counts(w))
				continue;
			if (atomic_compare_exchange_strong(ma_sq(s), &w, (uint64_t)(uintptr_t)&n))
				break;
		} else if (ma_wq_try_push(ma_sq(s), &w, &n)) {
			break;
		}
	}
	/* Woken means handed a unit (ma_sem_give). */
	int e = ma_wq_wait(ma_sq(s), &n, deadline, point);
	if (point && ma_unlikely(e == ECANCELED))
		ma_cancel_act(self);
	return e;
}

static int ma_sem_take(marcel_sem_t *s, uint64_t deadline, const char *call)
{
	return ma_sem_take_in(s, deadline, 0, call);
}

static int ma_sem_take_point(marcel_sem_t *s, uint64_t deadline, const char *call)
{
	return ma_sem_take_in(s, deadline, 1, call);
}

static int ma_sem_give(marcel_sem_t *s)
{
	uint64_t w = atomic_load_explicit(ma_sq(s), memory_order_relaxed);
	for (;;) {
		if (ma_sem_counts(w)) {
			uint64_t u = ma_sem_units(w);
			if (u == MARCEL_SEM_VALUE_MAX)
				return EOVERFLOW;
			if (atomic_compare_exchange_weak_explicit(ma_sq(s), &w, ma_sem_word(u + 1), memory_order_release,
								  memory_order_relaxed))
				return 0;
			continue;
		}
		/* Waiters: the oldest gets the unit; this was our last touch of s. */
		struct ma_wq_node *n = ma_wq_try_pop(ma_sq(s), &w);
		if (n) {
			ma_waiter_wake(&n->w);
			return 0;
		}
	}
}

int marcel_sem_init(marcel_sem_t *s, int initial)
{
	if (!s || initial < 0)
		return EINVAL;
	s->__state = ma_sem_word((uint64_t)initial);
	return 0;
}

int marcel_sem_destroy(marcel_sem_t *s)
{
	if (!s)
		return EINVAL;
	/* Woken waiters never read s again (ma_waitq.h): only the queue matters. */
	return ma_sem_counts(atomic_load(ma_sq(s))) ? 0 : EBUSY;
}

void marcel_sem_P(marcel_sem_t *s)
{
	/* Marcel's P returns nothing: errno is all it can tell. */
	if (ma_unlikely(ma_sem_take(s, MA_NO_DEADLINE, "marcel_sem_P")))
		errno = EPERM;
}

void marcel_sem_V(marcel_sem_t *s)
{
	ma_sem_give(s);
}

int marcel_sem_try_P(marcel_sem_t *s)
{
	return s && ma_sem_trytake(s);
}

int marcel_sem_timed_P(marcel_sem_t *s, unsigned long timeout_ms)
{
	if (!s) {
		errno = EINVAL;
		return 0;
	}
	uint64_t ns = timeout_ms > UINT64_MAX / 1000000 ? UINT64_MAX / 1000000 : (uint64_t)timeout_ms * 1000000;
	if (ma_sem_take(s, ma_deadline_in(ns), "marcel_sem_timed_P")) {
		errno = ETIMEDOUT;
		return 0;
	}
	return 1;
}

static int ma_fail(int e)
{
	errno = e;
	return -1;
}

int marcel_sem_posix_init(marcel_sem_t *s, int pshared, unsigned value)
{
	if (!s || value > MARCEL_SEM_VALUE_MAX)
		return ma_fail(EINVAL);
	if (pshared)
		return ma_fail(ENOTSUP);
	marcel_sem_init(s, (int)value);
	return 0;
}

int marcel_sem_wait(marcel_sem_t *s)
{
	if (!s)
		return ma_fail(EINVAL);
	int e = ma_sem_take_point(s, MA_NO_DEADLINE, "marcel_sem_wait");
	return e ? ma_fail(e) : 0;
}

int marcel_sem_trywait(marcel_sem_t *s)
{
	if (!s)
		return ma_fail(EINVAL);
	return ma_sem_trytake(s) ? 0 : ma_fail(EAGAIN);
}

int marcel_sem_timedwait(marcel_sem_t *s, const struct timespec *abstime)
{
	if (!s)
		return ma_fail(EINVAL);
	ma_cancel_point(ma_task_self());
	if (ma_sem_trytake(s))
		return 0;
	uint64_t deadline;
	if (ma_deadline_from_abs(CLOCK_REALTIME, abstime, &deadline))
		return ma_fail(EINVAL);
	return ma_sem_take_point(s, deadline, "marcel_sem_timedwait") ? ma_fail(ETIMEDOUT) : 0;
}

int marcel_sem_post(marcel_sem_t *s)
{
	if (!s)
		return ma_fail(EINVAL);
	int e = ma_sem_give(s);
	return e ? ma_fail(e) : 0;
}

int marcel_sem_getvalue(marcel_sem_t *s, int *value)
{
	if (!s || !value)
		return ma_fail(EINVAL);
	*value = (int)ma_sem_units(atomic_load(ma_sq(s)));
	return 0;
}
