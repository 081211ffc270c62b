/*
 * MetBench over MPI (mpi-metbench.h): each iteration every rank computes its load, then
 * the ranks meet (--sync), for --iters iterations; or, with --no-iterations, steps of
 * random length and random peers. At the end rank 0 gathers and prints, per rank, the
 * time spent computing and inside MPI and the hashes of the values computed and received,
 * then the run's checksum (a hash of those hashes in rank order).
 *
 * The rate and the report travel point-to-point, not by MPI_Bcast and MPI_Gather: the
 * only collective calls a tool following the MPI calls sees are those of the pattern,
 * and --no-iterations makes none.
 *
 * Usage: mpirun -np N mpi-metbench [--loads L0,L1,...] [--unit US] [--iters K] [--swap S]
 *        [--sync barrier|exchange|allreduce] [--no-iterations [--seed X]]
 *        [--chunks-per-ms R] [--check]   (options.c)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <mpi.h>
#include "mpi-metbench.h"

enum { TAG_RATE = 10, TAG_TIMES = 11, TAG_HASHES = 12 };

/* The --loads list holds 4096 longs: static, not on the stack. */
static struct mpb_config cfg;

/* The rate, measured by rank 0 unless --chunks-per-ms gave it, so that every rank turns
 * microseconds into the same work. */
static long share_rate(const struct mpb_rank *me)
{
	long rate = cfg.chunks_per_ms;
	if (rate > 0)
		return rate;
	if (me->rank == 0) {
		rate = mpb_calibrate();
		for (int q = 1; q < me->nranks; q++)
			MPI_Send(&rate, 1, MPI_LONG, q, TAG_RATE, MPI_COMM_WORLD);
	} else {
		MPI_Recv(&rate, 1, MPI_LONG, 0, TAG_RATE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
	return rate;
}

static void print_header(const struct mpb_rank *me, long rate, long min_load, long max_load)
{
	const char *how = cfg.chunks_per_ms > 0 ? "given" : "measured on rank 0";
	printf(MPB_PROG ": %d rank%s, ", me->nranks, me->nranks > 1 ? "s" : "");
	if (cfg.irregular) {
		printf("no iterations: %ld steps of 0 to %ld us (%ld chunks/ms, %s), random peers, seed %" PRIu64
		       "\n", cfg.iters, cfg.unit_us, rate, how, cfg.seed);
		return;
	}
	printf("loads ");
	for (long i = 0; i < cfg.nloads; i++)
		printf("%s%ld", i ? "," : "", cfg.loads[i]);
	printf(" (min %ld, max %ld), the heaviest %ld us = %ld chunks (%ld chunks/ms, %s), %ld iterations, sync %s",
	       min_load, max_load, cfg.unit_us, max_load > 0 ? mpb_reps((double)cfg.unit_us, rate) : 0, rate, how,
	       cfg.iters, mpb_sync_name(cfg.sync));
	if (cfg.swap > 0)
		printf(", loads reversed every %ld", cfg.swap);
	printf("\n");
}

static void run_iterations(struct mpb_rank *me, long rate, long min_load, long max_load)
{
	for (long t = 0; t < cfg.iters; t++) {
		long load = mpb_load(&cfg, me->rank, t, min_load, max_load);
		long reps = max_load > 0 ? mpb_reps((double)load / (double)max_load * (double)cfg.unit_us, rate) : 0;
		double t0 = mpb_now();
		uint64_t v = mpb_compute(me->rank, t, reps);
		me->compute += mpb_now() - t0;
		me->computed = mpb_fold(me->computed, v);
		mpb_meet(&cfg, me, t, v);
	}
}

static void run_steps(struct mpb_rank *me, long rate)
{
	me->scratch = malloc((size_t)me->nranks * sizeof(*me->scratch));
	if (me->scratch == NULL) {
		fprintf(stderr, MPB_PROG ": rank %d: out of memory for %d ranks' draws\n", me->rank, me->nranks);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	uint64_t draws = cfg.seed;
	for (long s = 0; s < cfg.iters; s++)
		mpb_irregular_step(&cfg, me, s, rate, &draws);
	free(me->scratch);
	me->scratch = NULL;
}

/* Rank 0 receives every rank's record, in rank order, and prints it. Returns the count
 * of values that differed from what was sent, over all ranks (rank 0), or this rank's. */
static long report(const struct mpb_rank *me, double loop, long min_load, long max_load)
{
	double times[3] = { me->compute, me->mpi, loop };
	uint64_t hashes[5] = { me->computed, me->exchanged, (uint64_t)me->received, (uint64_t)me->checked,
			       (uint64_t)me->wrong };
	if (me->rank != 0) {
		MPI_Send(times, 3, MPI_DOUBLE, 0, TAG_TIMES, MPI_COMM_WORLD);
		MPI_Send(hashes, 5, MPI_UINT64_T, 0, TAG_HASHES, MPI_COMM_WORLD);
		return me->wrong;
	}
	uint64_t checksum = MPB_FOLD_START, received = 0, checked = 0, wrong = 0;
	double slowest = 0, max_compute = 0, sum_compute = 0;
	for (int q = 0; q < me->nranks; q++) {
		if (q > 0) {
			MPI_Recv(times, 3, MPI_DOUBLE, q, TAG_TIMES, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Recv(hashes, 5, MPI_UINT64_T, q, TAG_HASHES, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		}
		printf("rank %d: ", q);
		if (!cfg.irregular)
			printf("load %ld, ", mpb_load(&cfg, q, 0, min_load, max_load));
		printf("compute %.6f s, mpi %.6f s, computed %016" PRIx64 ", exchanged %016" PRIx64 "\n", times[0],
		       times[1], hashes[0], hashes[1]);
		checksum = mpb_fold(mpb_fold(checksum, hashes[0]), hashes[1]);
		received += hashes[2];
		checked += hashes[3];
		wrong += hashes[4];
		slowest = times[2] > slowest ? times[2] : slowest;
		max_compute = times[0] > max_compute ? times[0] : max_compute;
		sum_compute += times[0];
	}
	printf("time %.6f s (the slowest rank's), ", slowest);
	if (sum_compute > 0)
		printf("imbalance %.2f (max compute / mean compute)\n", max_compute * me->nranks / sum_compute);
	else
		printf("imbalance - (nothing computed)\n");
	if (cfg.check && wrong == 0)
		printf("check: %" PRIu64 " values received, %" PRIu64 " checked, all as sent\n", received, checked);
	else if (cfg.check)
		printf("check: %" PRIu64 " of %" PRIu64 " values received differ from what was sent\n", wrong,
		       received);
	printf("checksum %016" PRIx64 "\n", checksum);
	return (long)wrong;
}

int main(int argc, char **argv)
{
	mpb_parse(&cfg, argc, argv);
	MPI_Init(&argc, &argv);
	struct mpb_rank me = { .computed = MPB_FOLD_START, .exchanged = MPB_FOLD_START };
	MPI_Comm_rank(MPI_COMM_WORLD, &me.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &me.nranks);
	if (!cfg.irregular && cfg.nloads > me.nranks) {
		/* Every rank refuses alike; rank 0 says why. */
		if (me.rank == 0)
			fprintf(stderr, MPB_PROG ": option '--loads': %ld loads for %d rank%s: give at most one per "
				"rank (a shorter list repeats)\n", cfg.nloads, me.nranks, me.nranks > 1 ? "s" : "");
		MPI_Finalize();
		return 2;
	}
	/* The list is no longer than the ranks, so each entry is some rank's load: the
	 * list's extremes are the ranks'. */
	long min_load = cfg.loads[0], max_load = cfg.loads[0];
	for (long i = 1; i < cfg.nloads; i++) {
		min_load = cfg.loads[i] < min_load ? cfg.loads[i] : min_load;
		max_load = cfg.loads[i] > max_load ? cfg.loads[i] : max_load;
	}
	long rate = share_rate(&me);
	if (me.rank == 0) {
		print_header(&me, rate, min_load, max_load);
		fflush(stdout);
	}

	double start = mpb_now();
	if (cfg.irregular)
		run_steps(&me, rate);
	else
		run_iterations(&me, rate, min_load, max_load);
	long wrong = report(&me, mpb_now() - start, min_load, max_load);
	MPI_Finalize();
	return wrong > 0 ? 1 : 0;
}
