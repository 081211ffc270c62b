/* Built against an installed libmarcel-mpi, without mpicc:
 * `cc prog.c $(pkg-config --cflags --libs marcel-mpi)`, then run under mpirun on 2 or more
 * ranks. Each rank sends its rank to the next one from a marcel thread, waits with
 * marcel_mpi_waitall, and checks it received its predecessor's rank; every call's result
 * is checked too. Exit status 1, with the failed step on stderr, if anything is wrong. */
#include <marcel.h>
#include <marcel/mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int rank = -1, size;

static void expect(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "install-smoke-mpi: rank %d: %s\n", rank, what);
		exit(1);
	}
}

static any_t ring(any_t arg)
{
	(void)arg;
	int out = rank, in = -1;
	MPI_Request r[2];
	expect(marcel_mpi_enter() == 0, "marcel_mpi_enter failed");
	expect(MPI_Irecv(&in, 1, MPI_INT, (rank + size - 1) % size, 0, MPI_COMM_WORLD, &r[0]) == MPI_SUCCESS,
	       "MPI_Irecv failed");
	expect(MPI_Isend(&out, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD, &r[1]) == MPI_SUCCESS,
	       "MPI_Isend failed");
	expect(marcel_mpi_leave() == 0, "marcel_mpi_leave failed");
	expect(marcel_mpi_waitall(2, r, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "marcel_mpi_waitall failed");
	expect(r[0] == MPI_REQUEST_NULL && r[1] == MPI_REQUEST_NULL, "requests not completed by the wait");
	return (any_t)(long)in;
}

int main(int argc, char **argv)
{
	expect(marcel_init(&argc, argv) == 0, "marcel_init failed");
	int provided = -1;
	expect(marcel_mpi_init(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) == 0, "marcel_mpi_init failed");
	expect(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE not provided");
	expect(marcel_mpi_enter() == 0, "marcel_mpi_enter failed");
	expect(MPI_Comm_rank(MPI_COMM_WORLD, &rank) == MPI_SUCCESS &&
		       MPI_Comm_size(MPI_COMM_WORLD, &size) == MPI_SUCCESS,
	       "MPI_Comm_rank/size failed");
	expect(marcel_mpi_leave() == 0, "marcel_mpi_leave failed");
	expect(size >= 2, "run it on 2 ranks or more");
	marcel_t t;
	any_t got = NULL;
	expect(marcel_create(&t, NULL, ring, NULL) == 0 && marcel_join(t, &got) == 0, "marcel_create/join failed");
	if ((long)got != (rank + size - 1) % size) {
		fprintf(stderr, "install-smoke-mpi: rank %d received %ld, expected %d\n", rank, (long)got,
			(rank + size - 1) % size);
		return 1;
	}
	expect(marcel_mpi_finalize() == 0, "marcel_mpi_finalize failed");
	if (rank == 0)
		printf("install-smoke-mpi: %d ranks, ring passed\n", size);
	marcel_end();
	return 0;
}
