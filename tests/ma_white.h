/*
 * Helpers of the white-box tests, which include the core's private headers (ma_sched.h)
 * and link the library statically.
 */
#ifndef MA_WHITE_H
#define MA_WHITE_H

#include <check.h>
#include <stdlib.h>
#include <time.h>
#include "ma_sched.h"

/* Starts the runtime on `topology` (NULL: this machine) with MARCEL_SMT=smt and
 * MARCEL_NVP=nvp (NULL: the default), the caller on VP0. */
static inline void ma_white_start(const char *topology, const char *smt, const char *nvp)
{
	if (topology)
		setenv("MARCEL_TOPOLOGY", topology, 1);
	else
		unsetenv("MARCEL_TOPOLOGY");
	setenv("MARCEL_SMT", smt, 1);
	if (nvp)
		setenv("MARCEL_NVP", nvp, 1);
	else
		unsetenv("MARCEL_NVP");
	ck_assert_int_eq(marcel_init(NULL, NULL), 0);
	ck_assert_int_eq(marcel_current_vp(), 0);
}

/* Waits until every VP but ours (VP0) sleeps. Idle workers poll a while, then sleep;
 * plenty is allowed for a loaded machine. */
static inline void ma_white_wait_sleeping(void)
{
	unsigned n = marcel_nbvps();
	for (int tries = 0; tries < 5000; tries++) {
		unsigned sleeping = 0;
		for (unsigned v = 1; v < n; v++)
			sleeping += atomic_load(&ma_rt.workers[v].state) == MA_WORKER_SLEEPING;
		if (sleeping == n - 1)
			return;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	ck_abort_msg("VP1..VP%u did not all go to sleep within 5 s", n - 1);
}

#endif
