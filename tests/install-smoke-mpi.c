/* Built against an installed libmarcel-mpi, without mpicc:
 * `cc prog.c $(pkg-config --cflags --libs marcel-mpi)`, then run under mpirun. Each rank
 * sends its rank to the next one from a marcel thread and waits with marcel_mpi_waitall. */
#include <marcel.h>
#include <marcel/mpi.h>
#include <stdio.h>

static int rank, size;

static any_t ring(any_t arg)
{
	(void)arg;
	int out = rank, in = -1;
	MPI_Request r[2];
	marcel_mpi_enter();
	MPI_Irecv(&in, 1, MPI_INT, (rank + size - 1) % size, 0, MPI_COMM_WORLD, &r[0]);
	MPI_Isend(&out, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD, &r[1]);
	marcel_mpi_leave();
	if (marcel_mpi_waitall(2, r, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
		return (any_t)-1L;
	return (any_t)(long)in;
}

int main(int argc, char **argv)
{
	if (marcel_init(&argc, argv))
		return 1;
	int provided;
	if (marcel_mpi_init(&argc, &argv, MPI_THREAD_MULTIPLE, &provided))
		return 1;
	marcel_mpi_enter();
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	marcel_mpi_leave();
	marcel_t t;
	any_t got = NULL;
	int ok = !marcel_create(&t, NULL, ring, NULL) && !marcel_join(t, &got) &&
		 (long)got == (rank + size - 1) % size;
	if (!ok)
		fprintf(stderr, "install-smoke-mpi: rank %d received %ld\n", rank, (long)got);
	else if (rank == 0)
		printf("install-smoke-mpi: %d ranks, ring passed\n", size);
	marcel_mpi_finalize();
	marcel_end();
	return ok ? 0 : 1;
}
