/**
 * @file marcel/time.h
 * @brief Sleeping. A sleeping marcel thread does not hold its worker: each worker keeps
 * a timer heap and wakes the sleeper when it is due.
 *
 * Timers fire when their worker schedules (a thread blocks, yields or ends) or is idle;
 * an idle worker also fires timers that are overdue on busy workers. A worker that runs
 * one thread for a long time without any of these, while all others are busy too, can
 * delay its sleepers until then (cooperative scheduling).
 */
#ifndef MARCEL_TIME_H
#define MARCEL_TIME_H

#include <time.h>
#include <marcel/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup marcel_time Sleeping
 * @{ */

/** Sleeps for at least @p usec microseconds (0: just yields). @return 0. Outside a
 * marcel thread it sleeps in the kernel. Timers need no allocation, so this cannot fail. */
int marcel_usleep(unsigned long usec);
/** Sleeps for @p req, POSIX style: returns 0, or -1 with `errno` EINVAL when `tv_nsec`
 * is outside 0..999999999 or `tv_sec` is negative. Marcel threads are not interrupted
 * by signals, so @p rem (may be NULL) is set to zero. Outside a marcel thread on a VP,
 * the C library's nanosleep() (-1 with EINTR, and @p rem set, when a handled signal
 * interrupts it). */
int marcel_nanosleep(const struct timespec *req, struct timespec *rem);
/** Sleeps for @p ms milliseconds (Marcel). */
void marcel_delay(unsigned long ms);
/** Sleeps for @p sec seconds (Marcel). @return 0; outside a marcel thread on a VP,
 * what sleep(3) returns (the seconds left when a signal interrupted it). */
unsigned marcel_sleep(unsigned sec);
/** clock_nanosleep(2) for marcel threads: sleeps on @p clock (`CLOCK_REALTIME` or
 * `CLOCK_MONOTONIC`) until @p req, an absolute time when @p flags is `TIMER_ABSTIME`,
 * else an interval, without holding the worker. A `CLOCK_REALTIME` deadline is converted
 * to a monotonic one at the call (a later change of the wall clock does not move it).
 * For an interval, @p rem (may be NULL) is set to zero: marcel threads are not
 * interrupted by signals. Outside a marcel thread on a VP, the C library's
 * clock_nanosleep().
 * @return 0, or an error number (not -1, as POSIX says): EINVAL when @p flags is neither
 * 0 nor `TIMER_ABSTIME`, @p req is NULL, its `tv_nsec` is outside 0..999999999, its
 * `tv_sec` is negative, or @p clock is not a clock; ENOTSUP for another clock
 * (`CLOCK_BOOTTIME`, the CPU-time clocks), which worker timers cannot follow. */
int marcel_clock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem);

/** @} */

#ifdef __cplusplus
}
#endif

#endif
