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
 * by signals, so @p rem (may be NULL) is set to zero. */
int marcel_nanosleep(const struct timespec *req, struct timespec *rem);
/** Sleeps for @p ms milliseconds (Marcel). */
void marcel_delay(unsigned long ms);
/** Sleeps for @p sec seconds (Marcel). @return 0. */
unsigned marcel_sleep(unsigned sec);

/** @} */

#ifdef __cplusplus
}
#endif

#endif
