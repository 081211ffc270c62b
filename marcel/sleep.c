/*
 * Sleeping: a marcel thread arms a timer on its worker's heap and blocks; the worker
 * fires it when due (timer.c) and runs other threads meanwhile. A kernel thread that is
 * not a marcel thread just sleeps in the kernel.
 */
#include <limits.h>
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
	struct ma_sleeper s;
	ma_waiter_init(&s.w);
	/* The timer lock's atomic exchange publishes the armed waiter (see ma_sched.h). */
	ma_timer_arm(w, &s.timer, deadline, ma_sleep_fire);
	/* The callback reads everything it needs before setting `done` and the heap no
	 * longer links the timer: once woken, nothing refers to s. */
	ma_waiter_wait(&s.w);
}

static void ma_sleep_ns(uint64_t ns)
{
	if (!ns) {
		marcel_yield();
		return;
	}
	ma_sleep_until(ma_deadline_in(ns));
}

int marcel_usleep(unsigned long usec)
{
	ma_sleep_ns(usec > UINT64_MAX / 1000 ? UINT64_MAX / 1000 : (uint64_t)usec * 1000);
	return 0;
}

int marcel_nanosleep(const struct timespec *req, struct timespec *rem)
{
	if (!req || req->tv_nsec < 0 || req->tv_nsec >= 1000000000L || req->tv_sec < 0) {
		errno = EINVAL;
		return -1;
	}
	uint64_t sec = (uint64_t)req->tv_sec;
	ma_sleep_ns(sec >= UINT64_MAX / 1000000000u / 2 ? UINT64_MAX / 2
						       : sec * 1000000000u + (uint64_t)req->tv_nsec);
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
	ma_sleep_ns((uint64_t)sec * 1000000000u);
	return 0;
}
