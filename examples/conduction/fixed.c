/*
 * Heat conduction with POSIX threads, one per stripe (conduction.h): simple.c with each
 * thread pinned by hand with hwloc. The stripes are dealt out in blocks: with P threads
 * on U processing units (PUs), thread i runs on PU i * U / P, so neighbouring stripes run
 * on the same or neighbouring PUs (hwloc numbers PUs in topology order) and stay there,
 * near the rows they touched first. This is what marcel's bubbles are measured against:
 * the best static placement, written for one machine.
 * Usage: fixed [--size N|NxM|NxMxK] [--iters T] [--threads P] [--3d] [--imbalance]
 */
#include <pthread.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <hwloc.h>
#include "conduction.h"

#define VARIANT "fixed"

static hwloc_topology_t topology;
static int npus;

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
	hwloc_obj_t pu = hwloc_get_obj_by_type(topology, HWLOC_OBJ_PU, (unsigned)((long)s * npus / run.nthreads));
	/* Before the first touch, so that the stripe's pages land on this PU's node. */
	if (pu == NULL || hwloc_set_cpubind(topology, pu->cpuset, HWLOC_CPUBIND_THREAD) != 0)
		cond_check(&run, pu == NULL ? ENOENT : errno ? errno : EINVAL,
			   "binding a thread with hwloc_set_cpubind");
	cond_init_stripe(&run, s);
	/* Neighbours read this stripe's edge rows from the first iteration on. */
	barrier_wait();
	for (long t = 0; t < run.iters; t++) {
		cond_step(&run, s, t);
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
	if (hwloc_topology_init(&topology) != 0 || hwloc_topology_load(topology) != 0)
		cond_check(&run, errno ? errno : EINVAL, "loading the hwloc topology");
	npus = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_PU);
	if (npus <= 0)
		cond_check(&run, ENODEV, "hwloc found no processing unit");
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
	hwloc_topology_destroy(topology);
	return 0;
}
