/*
 * How mpi-metbench's ranks meet (mpi-metbench.h): the three ends of an iteration, and the
 * steps of --no-iterations, which have no structure to repeat. Each MPI call is timed
 * with the program's own clock, never MPI_Wtime (see mpb_now).
 */
#include <inttypes.h>
#include <stdio.h>
#include <mpi.h>
#include "mpi-metbench.h"

/* Fixed tags, not the iteration: messages between two ranks with one tag arrive in the
 * order they were sent, so each iteration gets its own. Two tags, as with 2 ranks both
 * neighbours are the same rank. */
enum { TAG_RIGHTWARD = 1, TAG_LEFTWARD = 2, TAG_STEP = 3 };

/* Reports differences up to this many per rank; the count says the rest. */
#define MAX_REPORTED 5

/* The sum, modulo 2^64, of every rank's value at t: what MPI_Allreduce must give.
 * Integers, so the order MPI adds them in does not matter. */
static uint64_t sum_of_values(int nranks, long t)
{
	uint64_t sum = 0;
	for (int q = 0; q < nranks; q++)
		sum += mpb_value(q, t);
	return sum;
}

/* Takes a value received at t from rank @p from (-1: an allreduce's result): folds it
 * and, with --check, compares it with what was sent, recomputed. The recomputation is
 * timed as neither computation nor MPI. */
static void take(const struct mpb_config *c, struct mpb_rank *me, long t, uint64_t got, int from)
{
	me->exchanged = mpb_fold(me->exchanged, got);
	me->received++;
	if (!c->check)
		return;
	uint64_t want = from >= 0 ? mpb_value(from, t) : sum_of_values(me->nranks, t);
	me->checked++;
	if (got == want)
		return;
	if (++me->wrong <= MAX_REPORTED) {
		const char *when = c->irregular ? "step" : "iteration";
		if (from >= 0)
			fprintf(stderr, MPB_PROG ": rank %d, %s %ld: received %016" PRIx64 " from rank %d, which "
				"computed %016" PRIx64 "\n", me->rank, when, t, got, from, want);
		else
			fprintf(stderr, MPB_PROG ": rank %d, %s %ld: MPI_Allreduce gave %016" PRIx64 ", the ranks' "
				"values sum to %016" PRIx64 "\n", me->rank, when, t, got, want);
	}
}

void mpb_meet(const struct mpb_config *c, struct mpb_rank *me, long t, uint64_t v)
{
	int n = me->nranks, left = (me->rank + n - 1) % n, right = (me->rank + 1) % n;
	uint64_t from_left = 0, from_right = 0, sum = 0;
	MPI_Request req[4];
	double t0 = mpb_now();
	switch (c->sync) {
	case MPB_BARRIER:
		MPI_Barrier(MPI_COMM_WORLD);
		me->mpi += mpb_now() - t0;
		return;
	case MPB_EXCHANGE:
		MPI_Irecv(&from_left, 1, MPI_UINT64_T, left, TAG_RIGHTWARD, MPI_COMM_WORLD, &req[0]);
		MPI_Irecv(&from_right, 1, MPI_UINT64_T, right, TAG_LEFTWARD, MPI_COMM_WORLD, &req[1]);
		MPI_Isend(&v, 1, MPI_UINT64_T, right, TAG_RIGHTWARD, MPI_COMM_WORLD, &req[2]);
		MPI_Isend(&v, 1, MPI_UINT64_T, left, TAG_LEFTWARD, MPI_COMM_WORLD, &req[3]);
		MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
		me->mpi += mpb_now() - t0;
		take(c, me, t, from_left, left);
		take(c, me, t, from_right, right);
		return;
	case MPB_ALLREDUCE:
		MPI_Allreduce(&v, &sum, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
		me->mpi += mpb_now() - t0;
		take(c, me, t, sum, -1);
		return;
	}
}

/* What a step of --no-iterations does after computing. */
enum step_kind { STEP_ALONE, STEP_PAIRS, STEP_SHIFT, STEP_KINDS };

void mpb_irregular_step(const struct mpb_config *c, struct mpb_rank *me, long s, long chunks_per_ms,
			uint64_t *draws)
{
	/* Every rank draws every rank's numbers, so that all agree on who talks to whom. */
	int n = me->nranks;
	long us = 0;
	for (int q = 0; q < n; q++) {
		long len = (long)(mpb_next(draws) % (uint64_t)(c->unit_us + 1));
		if (q == me->rank)
			us = len;
	}
	enum step_kind kind = (enum step_kind)(mpb_next(draws) % STEP_KINDS);

	double t0 = mpb_now();
	uint64_t v = mpb_compute(me->rank, s, mpb_reps((double)us, chunks_per_ms));
	me->compute += mpb_now() - t0;
	me->computed = mpb_fold(me->computed, v);

	uint64_t got = 0;
	int peer = -1;
	if (n < 2)
		return;
	if (kind == STEP_PAIRS) {
		/* A random pairing: a shuffle (Fisher-Yates), read two by two; with an odd count
		 * the last rank of it sits out. */
		int *perm = me->scratch, at = 0;
		for (int q = 0; q < n; q++)
			perm[q] = q;
		for (int q = n - 1; q > 0; q--) {
			int k = (int)(mpb_next(draws) % (uint64_t)(q + 1)), tmp = perm[q];
			perm[q] = perm[k];
			perm[k] = tmp;
		}
		while (perm[at] != me->rank)
			at++;
		if ((at ^ 1) >= n)
			return;
		peer = perm[at ^ 1];
		t0 = mpb_now();
		MPI_Sendrecv(&v, 1, MPI_UINT64_T, peer, TAG_STEP, &got, 1, MPI_UINT64_T, peer, TAG_STEP,
			     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		me->mpi += mpb_now() - t0;
	} else if (kind == STEP_SHIFT) {
		/* Every rank sends k ranks on and receives from k ranks back, k drawn. */
		int k = 1 + (int)(mpb_next(draws) % (uint64_t)(n - 1));
		MPI_Request req[2];
		peer = (me->rank + n - k) % n;
		t0 = mpb_now();
		MPI_Irecv(&got, 1, MPI_UINT64_T, peer, TAG_STEP, MPI_COMM_WORLD, &req[0]);
		MPI_Isend(&v, 1, MPI_UINT64_T, (me->rank + k) % n, TAG_STEP, MPI_COMM_WORLD, &req[1]);
		MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
		me->mpi += mpb_now() - t0;
	} else {
		return;
	}
	take(c, me, s, got, peer);
}
