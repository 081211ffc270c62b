/*
 * Heat conduction with POSIX threads, one per stripe (conduction.h). simple.c is the
 * pthread program, whose threads the kernel places and moves as it likes; marcel.c is the
 * same program ported to marcel, whose bubbles tell marcel which stripes share data
 * (MARCEL_BUBBLE_SCHEDULER places them; the diff is in doc/porting.md). fixed.c pins
 * simple.c's threads by hand, openmp.c is the reference.
 * Usage: simple|marcel [--size N|NxM|NxMxK] [--iters T] [--threads P] [--3d] [--imbalance]
 */
#include <marcel/pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "conduction.h"

#define VARIANT "marcel"

static struct cond_run run;
static pthread_barrier_t barrier;
static marcel_bubble_t *bubbles;  /* the tree's, at most one per thread, parents first */
static int nbubbles;

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

/* Neighbouring stripes share edge rows: two or three go in a bubble, two neighbouring
 * bubbles in a bubble, and so on up to the grid. The tree follows the data, not a machine:
 * the strategy maps it onto the machine it runs on. */
static marcel_bubble_t *group(pthread_t *tids, int lo, int hi)
{
	marcel_bubble_t *b = &bubbles[nbubbles++];
	int mid = (lo + hi) / 2, leaf = hi - lo <= 3;
	COND_CHECK(&run, marcel_bubble_init(b));
	for (int s = lo; s < hi && leaf; s++)
		COND_CHECK(&run, marcel_bubble_inserttask(b, tids[s]));
	for (int half = 0; half < 2 && !leaf; half++)
		COND_CHECK(&run, marcel_bubble_insertbubble(b, group(tids, half ? mid : lo, half ? hi : mid)));
	return b;
}

/* Threads start once the whole tree is woken: placed before they first touch the grid. */
static void start_threads(pthread_t *tids)
{
	for (int s = 0; s < run.nthreads; s++)
		COND_CHECK(&run, marcel_create_dontsched(&tids[s], NULL, stripe_thread, (void *)(long)s));
	bubbles = cond_calloc(&run, run.nthreads, sizeof(*bubbles));
	COND_CHECK(&run, marcel_wake_up_bubble(group(tids, 0, run.nthreads)));
	COND_CHECK(&run, marcel_bubble_sched_begin());
}

int main(int argc, char **argv)
{
	int err = marcel_init(&argc, argv);
	if (err != 0)  /* it said why; EINVAL: a bad --marcel-* option or MARCEL_* variable */
		return err == EINVAL ? 2 : 1;
	cond_parse(&run, argc, argv, VARIANT);
	cond_alloc(&run);
	pthread_t *tids = cond_calloc(&run, run.nthreads, sizeof(*tids));
	COND_CHECK(&run, pthread_barrier_init(&barrier, NULL, run.nthreads));

	double t0 = cond_now();
	start_threads(tids);
	for (int s = 0; s < run.nthreads; s++)
		COND_CHECK(&run, pthread_join(tids[s], NULL));
	double seconds = cond_now() - t0;
	for (int b = nbubbles - 1; b >= 0; b--)  /* inner bubbles first: only empty ones go */
		COND_CHECK(&run, marcel_bubble_join(&bubbles[b]) ?: marcel_bubble_destroy(&bubbles[b]));

	cond_report(&run, seconds);
	pthread_barrier_destroy(&barrier);
	free(tids);
	free(bubbles);
	cond_free(&run);
	marcel_end();
	return 0;
}
