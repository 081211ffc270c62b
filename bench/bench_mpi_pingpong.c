/*
 * A ping-pong between ranks 0 and 1 (plain MPI, no marcel), for bench/dlrb-overhead: the
 * round trip of a small message, median over repetitions. Run once as is and once with
 * libmarcel-dlrb preloaded, in the same invocation of the script: the difference over the
 * 4 calls of a round trip is the balancer's cost per call.
 *
 * Usage: bench_mpi_pingpong [--iters N] [--reps R]   (2 ranks)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, size, iters = 20000, reps = 11;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else {
			if (!rank)
				fprintf(stderr, "usage: %s [--iters N] [--reps R]\n", argv[0]);
			MPI_Finalize();
			return 2;
		}
	}
	if (size != 2 || iters < 1 || reps < 1 || reps > 101) {
		if (!rank)
			fprintf(stderr, "bench_mpi_pingpong: needs 2 ranks, --iters >= 1, --reps 1..101\n");
		MPI_Finalize();
		return 2;
	}
	double rt[101], x = 0;
	for (int r = -1; r < reps; r++) { /* r = -1: the warm-up */
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = MPI_Wtime();
		for (int i = 0; i < iters; i++) {
			if (!rank) {
				MPI_Send(&x, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
				MPI_Recv(&x, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			} else {
				MPI_Recv(&x, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				x += 1;
				MPI_Send(&x, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
			}
		}
		if (r >= 0)
			rt[r] = (MPI_Wtime() - t0) / iters;
	}
	if (!rank) {
		qsort(rt, (size_t)reps, sizeof(rt[0]), cmp);
		printf("roundtrip_ns %.1f min %.1f max %.1f value %.0f\n", rt[reps / 2] * 1e9, rt[0] * 1e9,
		       rt[reps - 1] * 1e9, x);
	}
	MPI_Finalize();
	return 0;
}
