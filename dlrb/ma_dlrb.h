/*
 * libmarcel-dlrb: what one rank knows of itself (state.c), fed by the PMPI wrappers
 * (pmpi.c) and reported at MPI_Finalize (report.c); the node's ranks sharing their
 * figures and the decisions taken on them (node.c), and this rank carrying out its part
 * (act.c: binding, hwprio's backends). The library is a plain MPI client: no marcel
 * runtime in it; it uses the topology module, hwprio's policy and backends, and the
 * balancer's pure decisions (hwprio/dlrb_balance.c).
 */
#ifndef MA_DLRB_H
#define MA_DLRB_H

#include <mpi.h>
#include <stdint.h>
#include "ma_dlrb_period.h"

/* The calls followed, as symbol kinds. Synchronising ones are where ranks meet. */
enum ma_dlrb_call {
	MA_DC_SEND = 1, MA_DC_RECV, MA_DC_ISEND, MA_DC_IRECV, MA_DC_SENDRECV, MA_DC_PROBE,
	MA_DC_WAIT, MA_DC_WAITALL, MA_DC_WAITANY, MA_DC_WAITSOME,
	MA_DC_BARRIER, MA_DC_BCAST, MA_DC_REDUCE, MA_DC_ALLREDUCE, MA_DC_GATHER, MA_DC_ALLGATHER,
	MA_DC_SCATTER, MA_DC_ALLTOALL, MA_DC_ALLTOALLV, MA_DC_GATHERV, MA_DC_SCATTERV, MA_DC_ALLGATHERV,
	MA_DC_NB,
};

#define MA_DLRB_KEEP 64 /* iterations whose figures are kept (the report's last ones) */
#define MA_DLRB_STABLE 3 /* iterations a rank must show for the program to count as iterative */

enum ma_dlrb_mode { MA_DLRB_OFF, MA_DLRB_OBSERVE, MA_DLRB_BALANCE };

struct ma_dlrb_rank {
	double compute, mpi;         /* totals, seconds */
	unsigned long calls;
	unsigned long iterations;    /* found from the call stream */
	unsigned long fallback;      /* ended by a collective on MPI_COMM_WORLD while no period was known */
	unsigned long periods_found; /* 1 + phase changes */
	unsigned period;             /* calls per iteration of the last period found, 0: none */
	double util_first, util_last; /* mean utilisation of the first and the last iterations kept */
	unsigned n_first, n_last;
	/* Balancing (MARCEL_DLRB=balance): */
	int cpu_first, cpu_last;     /* the CPU it ran on at MPI_Init and at MPI_Finalize */
	int vp_last, level_last;     /* where the balancer put it last (-1: never placed) and its level */
	unsigned moves;              /* rebindings */
	unsigned log_len;            /* node leader: bytes of the node's log sent with the report */
};

struct ma_dlrb {
	enum ma_dlrb_mode mode;
	int rank, size;
	int active;                  /* between MPI_Init and MPI_Finalize, mode not off */
	double last_leave;           /* when the previous MPI call returned */
	double it_compute, it_mpi;   /* since the last iteration's end */
	struct ma_period period;
	struct ma_dlrb_rank r;
	double util[MA_DLRB_KEEP];   /* the last iterations' utilisations, a ring */
	double util_head[MA_DLRB_KEEP]; /* the first ones */
	unsigned long util_n;
	char report[4096];           /* MARCEL_DLRB_REPORT: "" stderr, "off", or a path */
	struct ma_dlrb_node *node;   /* balancing: the node's shared figures (node.c) */
	struct ma_dlrb_trace *trace; /* MARCEL_DLRB_TRACE (trace.c) */
};

extern struct ma_dlrb ma_dlrb;

double ma_dlrb_now(void);
/* MPI_Init*: reads the environment; 0, or -1 after printing why (the program goes on
 * without the balancer). */
int ma_dlrb_start(void);
/* A call began at t; it ended now (its kind, its peer in comm, whether it synchronises). */
void ma_dlrb_call(double t, enum ma_dlrb_call kind, int peer, MPI_Comm comm);
/* MPI_Finalize, before the real one: gathers and prints the report. */
void ma_dlrb_finish(void);

/* ---- balancing (node.c, act.c) ---- */

struct ma_dlrb_node;
/* MPI_Init, MARCEL_DLRB=balance: the node's communicator, its shared segment, the
 * topology and the backends. 0, or -1 after printing why (the rank goes on observing). */
int ma_dlrb_node_start(struct ma_dlrb *d);
/* An iteration of this rank ended, compute seconds of total: posted to the node (short
 * iterations gathered until MA_DLRB_POST_MIN seconds); the last of the node's ranks to
 * post decides. */
#define MA_DLRB_POST_MIN 1e-3
void ma_dlrb_node_post(struct ma_dlrb *d, double compute, double total);
/* After each MPI call: carries out a decision taken since the last one. */
void ma_dlrb_node_poll(struct ma_dlrb *d);
/* MPI_Finalize: fills this rank's part of the report (and, on a node's leader, the node's
 * log, returned in *log, malloc'ed), undoes the binding and the levels, frees. */
void ma_dlrb_node_finish(struct ma_dlrb *d, char **log);

/* ---- MARCEL_DLRB_TRACE (trace.c) ---- */

struct ma_dlrb_trace;
/* MPI_Init: collective (every rank calls it). */
void ma_dlrb_trace_start(struct ma_dlrb *d);
/* Recorded while d->trace is set: */
void ma_dlrb_trace_call(struct ma_dlrb *d, double t0, double t1, enum ma_dlrb_call kind);
void ma_dlrb_trace_iteration(struct ma_dlrb *d, double u);
/* A decision carried out: rebound to bound_vp (-1: not moved), its level (if changed). */
void ma_dlrb_trace_decision(struct ma_dlrb *d, int bound_vp, int level, int level_changed);
/* MPI_Finalize: collective; rank 0 writes the file. */
void ma_dlrb_trace_finish(struct ma_dlrb *d);

/* The time a call starts: the compute since the previous one is counted. */
static inline double ma_dlrb_enter(void)
{
	return ma_dlrb.active ? ma_dlrb_now() : 0;
}

#endif
