/*
 * Heat conduction with OpenMP, the reference: the same stripes as simple.c (one per
 * thread, conduction.h), computed by a parallel for over stripes whose implicit barrier
 * ends each iteration. schedule(static, 1) gives stripe s to thread s at every
 * iteration, so a stripe stays with the thread that touched it first. Run it with
 *   OMP_PROC_BIND=close OMP_PLACES=cores conduction/openmp ...
 * so that the threads are pinned, neighbouring ones on neighbouring cores (the OpenMP
 * counterpart of fixed.c).
 * Usage: openmp [--size N|NxM|NxMxK] [--iters T] [--threads P] [--3d] [--imbalance]
 */
#include <stdio.h>
#include <stdlib.h>
#include "conduction.h"

#define VARIANT "openmp"

int main(int argc, char **argv)
{
	struct cond_run run;
	cond_parse(&run, argc, argv, VARIANT);
	cond_alloc(&run);
	const int nstripes = run.nthreads;

	double t0 = cond_now();
	/* One team for the whole run: a parallel region per iteration would cost a fork and
	 * a join each time. If the runtime gives fewer threads (OMP_THREAD_LIMIT), some do
	 * several stripes; the stripes, hence the arithmetic, do not change. */
#pragma omp parallel num_threads(nstripes) default(none) shared(run, nstripes)
	{
#pragma omp for schedule(static, 1)
		for (int s = 0; s < nstripes; s++)
			cond_init_stripe(&run, s);
		for (long t = 0; t < run.iters; t++) {
#pragma omp for schedule(static, 1)
			for (int s = 0; s < nstripes; s++)
				cond_step(&run, s, t);
		}
	}
	double seconds = cond_now() - t0;

	cond_report(&run, seconds);
	cond_free(&run);
	return 0;
}
