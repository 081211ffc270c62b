/*
 * The floating-point event elsewhere than on x86-64 (ma_metrics.h, ma_pmu_fp_event): none
 * is known, so the floating-point metric comes from the application's hints alone; the
 * other metrics use perf's generic events.
 */
#include <errno.h>
#include <stdio.h>
#include "../../ma_metrics.h"

int ma_pmu_fp_event(uint64_t *config, char *why, size_t len)
{
	(void)config;
	snprintf(why, len, "no floating-point event is known for this processor's architecture");
	return ENOENT;
}
