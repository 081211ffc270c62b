/*
 * MetBench's load (metbench.h): floating-point work whose result is reproducible to the
 * bit, so that a checksum proves it was done and done the same way whatever the schedule.
 * Built without fused multiply-add (examples/metbench/local.mk) for the same reason.
 */
#include <string.h>
#include <time.h>
#include "metbench.h"

double mb_work(long trips, double seed)
{
	/* A chain of dependent multiply-adds: the trips cannot overlap, so the time is
	 * proportional to the trip count (about 8 cycles each), not to memory. x tends to
	 * 1000; the sum keeps every trip in the result. */
	double x = seed, sum = 0.0;
	for (long n = 0; n < trips; n++) {
		x = x * 0.999 + 1.0;
		sum += x;
	}
	return sum;
}

double mb_seed(long w, long t)
{
	return (double)(w + 1) + (double)t * 0.001;
}

long mb_load(const struct mb_config *c, long w, long t)
{
	long load = c->loads[w];
	if (c->swap > 0 && (t / c->swap) % 2 == 1)
		load = c->min_load + c->max_load - load;
	return load;
}

uint64_t mb_fold(uint64_t h, double v)
{
	uint64_t bits;
	memcpy(&bits, &v, sizeof(bits));
	return (h ^ bits) * 0x100000001b3ULL;
}

double mb_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
