/*
 * One MPI rank's share of a conduction grid (conduction.h): a slab of consecutive rows of
 * the first axis, with one halo row on each side that holds the neighbouring rank's edge
 * row.
 *
 * The interior rows 1..n-2 are split evenly across the ranks. A rank's slab runs from the
 * row before its first interior row to the row after its last one, so the kernel, given a
 * struct cond_run whose n is the slab's row count, computes exactly the rank's interior
 * rows (it never computes a first or a last row). On rank 0 that first row is the grid's
 * boundary row 0, on the last rank the last row is row n-1: fixed values, never exchanged.
 * Stripes are the kernel's stripes of the slab (cond_stripe_rows() on the slab's run).
 */
#ifndef SLAB_H
#define SLAB_H

#include <marcel/mpi.h>
#include "../conduction/conduction.h"

struct slab {
	struct cond_run run;   /* the slab: run.n rows (halos included), both buffers */
	struct cond_run grid;  /* the whole grid as parsed; rank 0 alone gets a buffer */
	double *whole;         /* rank 0: the whole grid (one buffer), else NULL */
	int rank, nranks;
	int up, down;          /* neighbouring ranks, MPI_PROC_NULL at the grid's ends */
	long first;            /* the grid row of slab row 0 */
	MPI_Datatype row;      /* one row: m x k doubles */
};

/* Rank r's interior rows on a grid of n rows shared by R ranks: [*lo, *hi). */
void slab_interior(long n, int nranks, int rank, long *lo, long *hi);

/* Describes this rank's slab of @p grid (sizes, iterations and thread count from the
 * command line) and allocates it, and on rank 0 the whole grid. The caller has checked
 * that every rank gets at least grid->nthreads interior rows. */
void slab_create(struct slab *sl, const struct cond_run *grid, int rank, int nranks);
void slab_destroy(struct slab *sl);

/* Rank 0 sets the whole grid's initial values (the kernel's) and sends each rank its
 * rows; every rank fills both buffers with them. */
void slab_scatter(struct slab *sl);

/* Which halo exchanges stripe @p s makes: those whose edge row it computes. */
#define SLAB_UP 1    /* row 1 goes to the rank above, row 0 comes from it */
#define SLAB_DOWN 2  /* row n-2 goes to the rank below, row n-1 comes from it */
int slab_edges(const struct slab *sl, int s);

/* Exchanges the @p edges halos of buffer t % 2 (what iteration @p t reads) and waits for
 * them, letting the worker run other stripes meanwhile. */
void slab_exchange(const struct slab *sl, int edges, long t);

/* Sends each rank's rows of the final buffer to rank 0, into sl->whole. */
void slab_gather(struct slab *sl);

/* Exits through MPI_Abort after "prog: what: MPI's reason" when @p code is not
 * MPI_SUCCESS. */
void slab_check(const struct slab *sl, int code, const char *what);

#endif
