/*
 * The PMPI wrappers: each MPI call the balancer follows is timed around the real one
 * (PMPI_*) and reported to state.c with its kind and peer. The program and its MPI
 * library see exactly the calls they would see without it: same arguments, same order,
 * same results (the wrappers add calls of their own only at MPI_Init and MPI_Finalize).
 * C bindings only: a Fortran program's calls go through Open MPI's Fortran layer, which
 * does not call these.
 */
#include "ma_dlrb.h"

#define MA_DLRB_CALL(kind, peer, comm, call)                                                      \
	do {                                                                                      \
		double t_ = ma_dlrb_enter();                                                      \
		int r_ = (call);                                                                  \
		ma_dlrb_call(t_, (kind), (peer), (comm));                                         \
		return r_;                                                                        \
	} while (0)

int MPI_Init(int *argc, char ***argv)
{
	int r = PMPI_Init(argc, argv);
	if (r == MPI_SUCCESS)
		ma_dlrb_start();
	return r;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	int r = PMPI_Init_thread(argc, argv, required, provided);
	if (r == MPI_SUCCESS)
		ma_dlrb_start();
	return r;
}

int MPI_Finalize(void)
{
	ma_dlrb_finish();
	return PMPI_Finalize();
}

int MPI_Send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
	MA_DLRB_CALL(MA_DC_SEND, dest, comm, PMPI_Send(buf, count, dt, dest, tag, comm));
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
	MA_DLRB_CALL(MA_DC_SEND, dest, comm, PMPI_Ssend(buf, count, dt, dest, tag, comm));
}

int MPI_Recv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm, MPI_Status *st)
{
	MA_DLRB_CALL(MA_DC_RECV, src, comm, PMPI_Recv(buf, count, dt, src, tag, comm, st));
}

int MPI_Isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
	MA_DLRB_CALL(MA_DC_ISEND, dest, comm, PMPI_Isend(buf, count, dt, dest, tag, comm, req));
}

int MPI_Irecv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm, MPI_Request *req)
{
	MA_DLRB_CALL(MA_DC_IRECV, src, comm, PMPI_Irecv(buf, count, dt, src, tag, comm, req));
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype sdt, int dest, int stag, void *rbuf, int rcount,
		 MPI_Datatype rdt, int src, int rtag, MPI_Comm comm, MPI_Status *st)
{
	MA_DLRB_CALL(MA_DC_SENDRECV, dest, comm,
		     PMPI_Sendrecv(sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, src, rtag, comm, st));
}

int MPI_Probe(int src, int tag, MPI_Comm comm, MPI_Status *st)
{
	MA_DLRB_CALL(MA_DC_PROBE, src, comm, PMPI_Probe(src, tag, comm, st));
}

int MPI_Wait(MPI_Request *req, MPI_Status *st)
{
	MA_DLRB_CALL(MA_DC_WAIT, -1, MPI_COMM_WORLD, PMPI_Wait(req, st));
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status sts[])
{
	MA_DLRB_CALL(MA_DC_WAITALL, -1, MPI_COMM_WORLD, PMPI_Waitall(n, reqs, sts));
}

int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *st)
{
	MA_DLRB_CALL(MA_DC_WAITANY, -1, MPI_COMM_WORLD, PMPI_Waitany(n, reqs, index, st));
}

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status sts[])
{
	MA_DLRB_CALL(MA_DC_WAITSOME, -1, MPI_COMM_WORLD, PMPI_Waitsome(n, reqs, outcount, indices, sts));
}

int MPI_Barrier(MPI_Comm comm)
{
	MA_DLRB_CALL(MA_DC_BARRIER, -1, comm, PMPI_Barrier(comm));
}

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
	MA_DLRB_CALL(MA_DC_BCAST, root, comm, PMPI_Bcast(buf, count, dt, root, comm));
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
	MA_DLRB_CALL(MA_DC_REDUCE, root, comm, PMPI_Reduce(sbuf, rbuf, count, dt, op, root, comm));
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
	MA_DLRB_CALL(MA_DC_ALLREDUCE, -1, comm, PMPI_Allreduce(sbuf, rbuf, count, dt, op, comm));
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount, MPI_Datatype rdt, int root,
	       MPI_Comm comm)
{
	MA_DLRB_CALL(MA_DC_GATHER, root, comm, PMPI_Gather(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm));
}

int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, const int rcounts[], const int displs[],
		MPI_Datatype rdt, int root, MPI_Comm comm)
{
	MA_DLRB_CALL(MA_DC_GATHERV, root, comm,
		     PMPI_Gatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, root, comm));
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount, MPI_Datatype rdt,
		  MPI_Comm comm)
{
	MA_DLRB_CALL(MA_DC_ALLGATHER, -1, comm, PMPI_Allgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm));
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, const int rcounts[],
		   const int displs[], MPI_Datatype rdt, MPI_Comm comm)
{
	MA_DLRB_CALL(MA_DC_ALLGATHERV, -1, comm,
		     PMPI_Allgatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm));
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount, MPI_Datatype rdt, int root,
		MPI_Comm comm)
{
	MA_DLRB_CALL(MA_DC_SCATTER, root, comm, PMPI_Scatter(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm));
}

int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype sdt, void *rbuf,
		 int rcount, MPI_Datatype rdt, int root, MPI_Comm comm)
{
	MA_DLRB_CALL(MA_DC_SCATTERV, root, comm,
		     PMPI_Scatterv(sbuf, scounts, displs, sdt, rbuf, rcount, rdt, root, comm));
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount, MPI_Datatype rdt,
		 MPI_Comm comm)
{
	MA_DLRB_CALL(MA_DC_ALLTOALL, -1, comm, PMPI_Alltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm));
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype sdt, void *rbuf,
		  const int rcounts[], const int rdispls[], MPI_Datatype rdt, MPI_Comm comm)
{
	MA_DLRB_CALL(MA_DC_ALLTOALLV, -1, comm,
		     PMPI_Alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm));
}
