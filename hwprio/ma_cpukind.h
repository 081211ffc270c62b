/* cpukind's parts the tests drive (hwprio/cpukind.c); needs _GNU_SOURCE for cpu_set_t. */
#ifndef MA_CPUKIND_H
#define MA_CPUKIND_H

#include <sched.h>
#include "ma_hwprio.h"

/* The fastest and the most efficient of env's kinds (-1 and -1 with fewer than two). */
void ma_hw_ck_pick(const struct ma_hw_env *env, int *fast, int *slow);
/* start without the probe's check that workers are bound (tests on an XML topology). */
int ma_hw_ck_prepare(void *priv, const struct ma_hw_env *env, struct ma_hw_why *why);
/* Replaces the affinity calls (tests). */
void ma_hw_ck_set_calls(void *priv, int (*set)(pid_t, size_t, const cpu_set_t *),
			int (*get)(pid_t, size_t, cpu_set_t *));

#endif
