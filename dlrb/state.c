/*
 * One rank's accounting (ma_dlrb.h): the time between MPI calls is computation, inside
 * them MPI; the call stream goes to the period detector, and each iteration it finds
 * (or, while it finds none, each collective over MPI_COMM_WORLD) closes a utilisation:
 * computation over the iteration's time.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ma_dlrb.h"

struct ma_dlrb ma_dlrb;

double ma_dlrb_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int ma_dlrb_start(void)
{
	struct ma_dlrb *d = &ma_dlrb;
	memset(d, 0, sizeof(*d));
	const char *mode = getenv("MARCEL_DLRB");
	int bad = 0;
	d->mode = MA_DLRB_BALANCE;
	if (mode && !strcmp(mode, "off"))
		d->mode = MA_DLRB_OFF;
	else if (mode && !strcmp(mode, "observe"))
		d->mode = MA_DLRB_OBSERVE;
	else if (mode && *mode && strcmp(mode, "balance")) {
		d->mode = MA_DLRB_OFF;
		bad = 1;
	}
	const char *rep = getenv("MARCEL_DLRB_REPORT");
	snprintf(d->report, sizeof(d->report), "%s", rep ? rep : "");
	PMPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
	PMPI_Comm_size(MPI_COMM_WORLD, &d->size);
	/* Every rank runs in the mode of the most careful one: the modes make different
	 * collective calls at MPI_Init and MPI_Finalize, so ranks that disagreed (an MPMD
	 * launch, a wrapper per rank) would hang each other. */
	int m[2] = { (int)d->mode, -(int)d->mode }, r[2];
	PMPI_Allreduce(m, r, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (bad && d->rank == 0)
		fprintf(stderr, "libmarcel-dlrb: MARCEL_DLRB=%s: expected balance, observe or off; the program runs "
				"without the balancer\n", mode);
	else if (bad)
		fprintf(stderr, "libmarcel-dlrb: rank %d: MARCEL_DLRB=%s: expected balance, observe or off; the "
				"program runs without the balancer\n", d->rank, mode);
	else if (r[0] != -r[1] && d->rank == 0)
		fprintf(stderr, "libmarcel-dlrb: MARCEL_DLRB differs between ranks; every rank runs as %s\n",
			r[0] == MA_DLRB_OFF ? "off" : r[0] == MA_DLRB_OBSERVE ? "observe" : "balance");
	d->mode = (enum ma_dlrb_mode)r[0];
	if (d->mode == MA_DLRB_OFF)
		return bad ? -1 : 0;
	ma_period_init(&d->period);
	d->r.cpu_first = sched_getcpu();
	d->r.vp_last = -1;
	/* Collective on the node: every rank of it runs this (the mode is the same for all;
	 * a rank whose node cannot balance observes). */
	if (d->mode == MA_DLRB_BALANCE && ma_dlrb_node_start(d))
		d->mode = MA_DLRB_OBSERVE;
	ma_dlrb_trace_start(d);
	d->active = 1;
	d->last_leave = ma_dlrb_now();
	return 0;
}

/* An iteration ended: its utilisation kept. */
static void ma_dlrb_iteration(struct ma_dlrb *d)
{
	double total = d->it_compute + d->it_mpi;
	double u = total > 0 ? d->it_compute / total : 0;
	if (d->util_n < MA_DLRB_KEEP)
		d->util_head[d->util_n] = u;
	d->util[d->util_n % MA_DLRB_KEEP] = u;
	d->util_n++;
	if (d->trace)
		ma_dlrb_trace_iteration(d, u);
	double compute = d->it_compute;
	d->it_compute = d->it_mpi = 0;
	if (d->node)
		ma_dlrb_node_post(d, compute, total);
}

static int ma_dlrb_sync(enum ma_dlrb_call k)
{
	return k >= MA_DC_WAIT;
}

void ma_dlrb_call(double t, enum ma_dlrb_call kind, int peer, MPI_Comm comm)
{
	struct ma_dlrb *d = &ma_dlrb;
	if (!d->active)
		return;
	double now = ma_dlrb_now();
	double c = t - d->last_leave, m = now - t;
	d->last_leave = now;
	d->r.compute += c;
	d->r.mpi += m;
	d->it_compute += c;
	d->it_mpi += m;
	d->r.calls++;
	if (d->trace)
		ma_dlrb_trace_call(d, t, now, kind);
	/* The peer as an offset from the caller in comm: the same exchange in every
	 * iteration gives the same symbol whatever the rank. */
	unsigned off = 0xffffffu;
	if (peer >= 0) {
		int me = 0, n = 1;
		PMPI_Comm_rank(comm, &me);
		PMPI_Comm_size(comm, &n);
		off = (unsigned)((peer - me + n) % n);
	}
	enum ma_period_event e = ma_period_push(&d->period, ma_period_symbol(kind, ma_dlrb_sync(kind), off));
	if (e == MA_PERIOD_FOUND)
		d->r.period = d->period.period;
	if ((e == MA_PERIOD_ITERATION) || (e == MA_PERIOD_FOUND && d->period.pos == 0)) {
		d->r.iterations++;
		ma_dlrb_iteration(d);
	} else if (e == MA_PERIOD_NONE && !d->period.period && kind >= MA_DC_BARRIER && comm == MPI_COMM_WORLD) {
		/* No period known: a collective over every rank ends an iteration. */
		d->r.fallback++;
		ma_dlrb_iteration(d);
	}
	if (d->node)
		ma_dlrb_node_poll(d);
}
