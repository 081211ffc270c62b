/*
 * A rank's slab of the conduction grid (slab.h): how rows are shared, the initial
 * scatter, the halo exchange and the final gather. Every MPI call sits between
 * marcel_mpi_enter() and marcel_mpi_leave(), so the program works at
 * MPI_THREAD_SERIALIZED as well as at MPI_THREAD_MULTIPLE, and every wait is a marcel
 * one, so no worker ever blocks in MPI.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "slab.h"

/* Tags of halo rows by direction: a rank receives from the rank above what it sent
 * down, and the two directions never match each other. */
enum { TAG_DOWN = 1, TAG_UP = 2 };

void slab_check(const struct slab *sl, int code, const char *what)
{
	if (code == MPI_SUCCESS)
		return;
	char reason[MPI_MAX_ERROR_STRING];
	int len = 0;
	if (MPI_Error_string(code, reason, &len) != MPI_SUCCESS)
		snprintf(reason, sizeof(reason), "MPI error code %d", code);
	fprintf(stderr, "%s: %s: %s\n", sl->grid.prog, what, reason);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

void slab_interior(long n, int nranks, int rank, long *lo, long *hi)
{
	*lo = 1 + (n - 2) * rank / nranks;
	*hi = 1 + (n - 2) * (rank + 1) / nranks;
}

/* The rows rank @p rank sends in the scatter and the gather, as grid rows: its interior
 * rows, and the boundary row beside them on the first and last ranks. These partition
 * the grid, so each row travels once. */
static void owned_rows(const struct slab *sl, int rank, long *lo, long *hi)
{
	slab_interior(sl->grid.n, sl->nranks, rank, lo, hi);
	if (rank == 0)
		*lo = 0;
	if (rank == sl->nranks - 1)
		*hi = sl->grid.n;
}

static size_t row_cells(const struct cond_run *r)
{
	return (size_t)r->m * (size_t)r->k;
}

void slab_create(struct slab *sl, const struct cond_run *grid, int rank, int nranks)
{
	long lo, hi;
	memset(sl, 0, sizeof(*sl));
	sl->grid = *grid;
	sl->grid.buf[0] = sl->grid.buf[1] = NULL;
	sl->rank = rank;
	sl->nranks = nranks;
	sl->up = rank > 0 ? rank - 1 : MPI_PROC_NULL;
	sl->down = rank < nranks - 1 ? rank + 1 : MPI_PROC_NULL;
	slab_interior(grid->n, nranks, rank, &lo, &hi);
	sl->first = lo - 1;
	sl->run = *grid;
	sl->run.n = hi - lo + 2;
	/* --imbalance: the band moves over the whole grid, placed by grid row. */
	sl->run.row0 = sl->first;
	sl->run.grid_n = grid->n;
	/* Zeroed: the halos are read (by the copy into the second buffer) before the first
	 * exchange fills them. */
	for (int b = 0; b < 2; b++)
		sl->run.buf[b] = cond_calloc(grid, (size_t)sl->run.n * row_cells(grid), sizeof(double));
	if (rank == 0)
		sl->whole = cond_calloc(grid, (size_t)grid->n * row_cells(grid), sizeof(double));

	/* m x k < 2^31: the grid has at most 2^32 points and n >= 3 (cond_parse). */
	marcel_mpi_enter();
	int err = MPI_Type_contiguous((int)row_cells(grid), MPI_DOUBLE, &sl->row);
	if (err == MPI_SUCCESS)
		err = MPI_Type_commit(&sl->row);
	marcel_mpi_leave();
	slab_check(sl, err, "MPI_Type_contiguous");
}

void slab_destroy(struct slab *sl)
{
	marcel_mpi_enter();
	int err = MPI_Type_free(&sl->row);
	marcel_mpi_leave();
	slab_check(sl, err, "MPI_Type_free");
	cond_free(&sl->run);
	free(sl->whole);
	sl->whole = NULL;
}

/* Counts and displacements, in rows of the whole grid, of every rank's owned rows. */
static void partition(const struct slab *sl, int *counts, int *displs)
{
	for (int r = 0; r < sl->nranks; r++) {
		long lo, hi;
		owned_rows(sl, r, &lo, &hi);
		counts[r] = (int)(hi - lo);
		displs[r] = (int)lo;
	}
}

/* Where this rank's owned rows start in buffer @p b of its slab. */
static double *owned_start(const struct slab *sl, int b)
{
	long lo, hi;
	owned_rows(sl, sl->rank, &lo, &hi);
	return sl->run.buf[b] + (size_t)(lo - sl->first) * row_cells(&sl->run);
}

/* Runs a collective on the whole grid's partition, then waits for it. */
static void move_rows(struct slab *sl, int gather, int b)
{
	int *counts = NULL, *displs = NULL;
	long lo, hi;
	owned_rows(sl, sl->rank, &lo, &hi);
	if (sl->rank == 0) {
		counts = cond_calloc(&sl->grid, (size_t)sl->nranks, sizeof(int));
		displs = cond_calloc(&sl->grid, (size_t)sl->nranks, sizeof(int));
		partition(sl, counts, displs);
	}
	MPI_Request req;
	marcel_mpi_enter();
	int err = gather ? MPI_Igatherv(owned_start(sl, b), (int)(hi - lo), sl->row, sl->whole, counts,
					displs, sl->row, 0, MPI_COMM_WORLD, &req)
			 : MPI_Iscatterv(sl->whole, counts, displs, sl->row, owned_start(sl, b), (int)(hi - lo),
					 sl->row, 0, MPI_COMM_WORLD, &req);
	marcel_mpi_leave();
	slab_check(sl, err, gather ? "MPI_Igatherv" : "MPI_Iscatterv");
	slab_check(sl, marcel_mpi_wait(&req, MPI_STATUS_IGNORE), "marcel_mpi_wait");
	free(counts);
	free(displs);
}

void slab_scatter(struct slab *sl)
{
	if (sl->rank == 0) {
		/* The kernel's own initial values, as the single-process programs have them. */
		struct cond_run whole = sl->grid;
		whole.nthreads = 1;
		whole.buf[0] = whole.buf[1] = sl->whole;
		cond_init_stripe(&whole, 0);
	}
	move_rows(sl, 0, 0);
	/* Both buffers hold the boundary values, which no iteration writes. */
	memcpy(sl->run.buf[1], sl->run.buf[0], (size_t)sl->run.n * row_cells(&sl->run) * sizeof(double));
}

void slab_gather(struct slab *sl)
{
	move_rows(sl, 1, (int)(sl->grid.iters % 2));
}

int slab_edges(const struct slab *sl, int s)
{
	long lo, hi;
	cond_stripe_rows(&sl->run, s, &lo, &hi);
	return (lo <= 1 && 1 < hi ? SLAB_UP : 0) | (lo <= sl->run.n - 2 && sl->run.n - 2 < hi ? SLAB_DOWN : 0);
}

void slab_exchange(const struct slab *sl, int edges, long t)
{
	double *g = sl->run.buf[t % 2];
	size_t row = row_cells(&sl->run);
	long last = sl->run.n - 1;
	MPI_Request req[4];
	int nreq = 0, err = MPI_SUCCESS;
	/* MPI_PROC_NULL at the grid's ends: those requests complete at once, untouched. */
	marcel_mpi_enter();
	if (edges & SLAB_UP) {
		err = MPI_Irecv(g, 1, sl->row, sl->up, TAG_DOWN, MPI_COMM_WORLD, &req[nreq++]);
		if (err == MPI_SUCCESS)
			err = MPI_Isend(g + row, 1, sl->row, sl->up, TAG_UP, MPI_COMM_WORLD, &req[nreq++]);
	}
	if (err == MPI_SUCCESS && (edges & SLAB_DOWN)) {
		err = MPI_Irecv(g + last * row, 1, sl->row, sl->down, TAG_UP, MPI_COMM_WORLD, &req[nreq++]);
		if (err == MPI_SUCCESS)
			err = MPI_Isend(g + (last - 1) * row, 1, sl->row, sl->down, TAG_DOWN, MPI_COMM_WORLD,
					&req[nreq++]);
	}
	marcel_mpi_leave();
	slab_check(sl, err, "MPI_Isend/MPI_Irecv");
	slab_check(sl, marcel_mpi_waitall(nreq, req, MPI_STATUSES_IGNORE), "marcel_mpi_waitall");
}
