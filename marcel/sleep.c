/*
 * Sleeping: a marcel thread arms a timer on its worker's heap and blocks; the worker
 * fires it when due (timer.c) and runs other threads meanwhile. A kernel thread that is
 * not a marcel thread (or a marcel thread inside a blocking section, which has a kernel
 * thread of its own) just sleeps in the kernel; the POSIX-named calls then are the C
 * library's, signals and EINTR included, since such a thread can be interrupted.
 */
#include <limits.h>
#include <unistd.h>
#include "ma_sync.h"

struct ma_sleeper {
	struct ma_timer timer;
	struct ma_waiter w;
};

static void ma_sleep_fire(struct ma_timer *t)
{
	ma_waiter_wake(&ma_container_of(t, struct ma_sleeper, timer)->w);
}

static void ma_sleep_until(uint64_t deadline)
{
	struct ma_worker *w = ma_worker_self();
	if (!w) {
		struct timespec ts = { (time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u) };
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		return;
	}
	/* Every sleep is a cancellation point (cancel.c). */
	ma_cancel_point(ma_worker_current(w));
	struct ma_sleeper s;
	ma_waiter_init(&s.w);
	/* The timer lock's atomic exchange publishes the armed waiter (see ma_sched.h). */
	ma_timer_arm(w, &s.timer, deadline, ma_sleep_fire);
	/* The callback reads everything it needs before setting `done` and the heap no
	 * longer links the timer: once woken, nothing refers to s. */
	if (ma_unlikely(ma_waiter_wait_point(&s.w) != 0)) {
		/* Canceled: once the timer is disarmed its callback is not running and never
		 * will (if it fired already, its wake-up found us running: harmless). */
		ma_timer_cancel(&s.timer);
		ma_cancel_act(s.w.task);
	}
}

static void ma_sleep_ns(uint64_t ns)
{
	if (!ns) {
		ma_cancel_point(ma_task_self());
		marcel_yield();
		return;
	}
	ma_sleep_until(ma_deadline_in(ns));
}

/* A valid relative timespec in nanoseconds; beyond some 290 years, as good as forever. */
static uint64_t ma_timespec_ns(const struct timespec *ts)
{
	uint64_t sec = (uint64_t)ts->tv_sec;
	return sec >= UINT64_MAX / 1000000000u / 2 ? UINT64_MAX / 2 : sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

int marcel_usleep(unsigned long usec)
{
	ma_sleep_ns(usec > UINT64_MAX / 1000 ? UINT64_MAX / 1000 : (uint64_t)usec * 1000);
	return 0;
}

int marcel_nanosleep(const struct timespec *req, struct timespec *rem)
{
	if (!ma_worker_self()) {
		/* The C library's, for its EINTR; rem zeroed on success as for marcel threads. */
		int r = nanosleep(req, rem);
		if (r == 0 && rem)
			rem->tv_sec = rem->tv_nsec = 0;
		return r;
	}
	if (!req || req->tv_nsec < 0 || req->tv_nsec >= 1000000000L || req->tv_sec < 0) {
		errno = EINVAL;
		return -1;
	}
	ma_sleep_ns(ma_timespec_ns(req));
	if (rem)
		rem->tv_sec = rem->tv_nsec = 0;
	return 0;
}

void marcel_delay(unsigned long ms)
{
	ma_sleep_ns(ms > UINT64_MAX / 1000000 ? UINT64_MAX / 1000000 : (uint64_t)ms * 1000000);
}

unsigned marcel_sleep(unsigned sec)
{
	if (!ma_worker_self())
		return sleep(sec);
	ma_sleep_ns((uint64_t)sec * 1000000000u);
	return 0;
}

int marcel_clock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem)
{
	if (!ma_worker_self()) {
		int r = clock_nanosleep(clock, flags, req, rem);
		if (r == 0 && rem && !(flags & TIMER_ABSTIME))
			rem->tv_sec = rem->tv_nsec = 0;
		return r;
	}
	if ((flags & ~TIMER_ABSTIME) || !req || req->tv_sec < 0 || req->tv_nsec < 0 ||
	    req->tv_nsec >= 1000000000L)
		return EINVAL;
	if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC) {
		/* A clock the kernel knows (a CPU-time clock, CLOCK_BOOTTIME...) is one the
		 * worker's timers, which run on CLOCK_MONOTONIC, cannot follow. Asking the
		 * kernel must not leave errno changed: this call reports by its result. */
		int saved = errno;
		int known = clock_getres(clock, NULL) == 0;
		errno = saved;
		return known ? ENOTSUP : EINVAL;
	}
	if (!(flags & TIMER_ABSTIME)) {
		ma_sleep_ns(ma_timespec_ns(req));
		if (rem)
			rem->tv_sec = rem->tv_nsec = 0;
		return 0;
	}
	uint64_t deadline;
	int err = ma_deadline_from_abs(clock, req, &deadline);
	if (err)
		return err;
	ma_sleep_until(deadline);
	return 0;
}
