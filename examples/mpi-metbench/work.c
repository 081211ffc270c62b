/*
 * mpi-metbench's work (mpi-metbench.h): the chunk, the values built from it, the rate
 * that turns microseconds into chunks, and the hash and generator the ranks share.
 * Built without fused multiply-add (local.mk): a value must be the same on every target.
 */
#include <math.h>
#include <string.h>
#include <time.h>
#include "mpi-metbench.h"

/* Dependent multiply-adds: the trips cannot overlap, so a chunk's time is about 8 cycles
 * a trip (a microsecond or less), whatever the memory does. */
#define CHUNK_TRIPS 256

double mpb_chunk(double seed)
{
	double x = seed, sum = 0.0;
	for (int n = 0; n < CHUNK_TRIPS; n++) {
		x = x * 0.999 + 1.0;
		sum += x;
	}
	return sum;
}

static double seed_of(long r, long t)
{
	return (double)(r + 1) + (double)t * 0.001;
}

static uint64_t bits(double v)
{
	uint64_t b;
	memcpy(&b, &v, sizeof(b));
	return b;
}

uint64_t mpb_value(long r, long t)
{
	return bits(mpb_chunk(seed_of(r, t)));
}

uint64_t mpb_compute(long r, long t, long reps)
{
	/* Each repetition reads the seed anew and stores its result where the compiler must
	 * put it: it can neither keep one result for all nor drop the unused ones. */
	volatile double seed = seed_of(r, t), result;
	result = mpb_chunk(seed);
	for (long k = 1; k < reps; k++)
		result = mpb_chunk(seed);
	return bits(result);
}

double mpb_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

long mpb_calibrate(void)
{
	/* 25 timings of 200 chunks (a few hundred microseconds each, well inside a time
	 * slice): on a shared processor most of them run whole. */
	enum { TIMINGS = 25, CHUNKS = 200 };
	double best = -1;
	for (int i = 0; i < TIMINGS; i++) {
		double t0 = mpb_now();
		(void)mpb_compute(0, i, CHUNKS);
		double dt = mpb_now() - t0;
		if (dt > 0 && (best < 0 || dt < best))
			best = dt;
	}
	if (best <= 0)  /* a clock too coarse to see 200 chunks: as fast as it can tell */
		return 1000000000L;
	double rate = CHUNKS / (best * 1e3);
	return rate < 1 ? 1 : rate > 1e9 ? 1000000000L : (long)llround(rate);
}

long mpb_load(const struct mpb_config *c, long r, long t, long min_load, long max_load)
{
	long load = c->loads[r % c->nloads];
	if (c->swap > 0 && (t / c->swap) % 2 == 1)
		load = min_load + max_load - load;
	return load;
}

long mpb_reps(double us, long chunks_per_ms)
{
	return (long)llround(us * (double)chunks_per_ms / 1e3);
}

uint64_t mpb_fold(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ULL;
}

uint64_t mpb_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}
