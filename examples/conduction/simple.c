/*
 * Heat conduction with POSIX threads, one per stripe (conduction.h). simple.c is the
 * pthread program, whose threads the kernel places and moves as it likes; marcel.c is the
 * same program ported to marcel, whose bubbles tell marcel which stripes share data
 * (MARCEL_BUBBLE_SCHEDULER places them; the diff is in doc/porting.md). fixed.c pins
 * simple.c's threads by hand, openmp.c is the reference.
 * Usage: simple|marcel [--size N|NxM|NxMxK] [--iters T] [--threads P] [--3d] [--imbalance]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "conduction.h"

#define VARIANT "simple"

static struct cond_run run;
static pthread_barrier_t barrier;

static void barrier_wait(void)
{
	int err = pthread_barrier_wait(&barrier);
	cond_check(&run, err == PTHREAD_BARRIER_SERIAL_THREAD ? 0 : err, "pthread_barrier_wait");
}

static void *stripe_thread(void *arg)
{
	int s = (int)(long)arg;
	cond_init_stripe(&run, s);
	/* Neighbours read this stripe's edge rows from the first iteration on. */
	barrier_wait();
	for (long t = 0; t < run.iters; t++) {
		cond_stripe_step(&run, s, t);
		barrier_wait();
	}
	return NULL;
}

static void start_threads(pthread_t *tids)
{
	for (int s = 0; s < run.nthreads; s++)
		COND_CHECK(&run, pthread_create(&tids[s], NULL, stripe_thread, (void *)(long)s));
}

int main(int argc, char **argv)
{
	cond_parse(&run, argc, argv, VARIANT);
	cond_alloc(&run);
	pthread_t *tids = cond_calloc(&run, run.nthreads, sizeof(*tids));
	COND_CHECK(&run, pthread_barrier_init(&barrier, NULL, run.nthreads));

	double t0 = cond_now();
	start_threads(tids);
	for (int s = 0; s < run.nthreads; s++)
		COND_CHECK(&run, pthread_join(tids[s], NULL));
	double seconds = cond_now() - t0;

	cond_report(&run, seconds);
	pthread_barrier_destroy(&barrier);
	free(tids);
	cond_free(&run);
	return 0;
}
