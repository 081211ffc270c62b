/*
 * MARCEL_DLRB_TRACE=FILE: a trace in MARCEL_TRACE's format (Chrome's JSON trace events,
 * which Perfetto and tools/marcel-trace-summary read). A track per rank:
 * a slice per MPI call followed (named after the call: the gaps between them are the
 * rank's computation), an instant at each iteration's end with its utilisation, and one
 * for each decision the rank carried out (rebound, level). Each rank keeps its first
 * MA_DLRB_TRACE_MAX events in memory; rank 0 gathers them at MPI_Finalize and writes the
 * file. Times are microseconds since rank 0's MPI_Init (CLOCK_MONOTONIC is one clock for
 * the node; ranks of other nodes are shifted by their clocks' difference).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ma_dlrb.h"

#define MA_DLRB_TRACE_MAX 16384

enum ma_dt_kind { MA_DT_CALL, MA_DT_ITERATION, MA_DT_BIND, MA_DT_LEVEL };

struct ma_dt_event {
	double t0, t1;
	unsigned char kind;
	unsigned char call;  /* MA_DT_CALL: enum ma_dlrb_call */
	int a;               /* MA_DT_BIND: VP; MA_DT_LEVEL: level */
	double u;            /* MA_DT_ITERATION: utilisation */
};

struct ma_dlrb_trace {
	char path[4096];
	double origin;       /* rank 0's MPI_Init, on this rank's clock */
	unsigned n;
	unsigned long dropped;
	struct ma_dt_event ev[];
};

static const char *const ma_dt_call_names[MA_DC_NB] = {
	[MA_DC_SEND] = "MPI_Send", [MA_DC_RECV] = "MPI_Recv", [MA_DC_ISEND] = "MPI_Isend",
	[MA_DC_IRECV] = "MPI_Irecv", [MA_DC_SENDRECV] = "MPI_Sendrecv", [MA_DC_PROBE] = "MPI_Probe",
	[MA_DC_WAIT] = "MPI_Wait", [MA_DC_WAITALL] = "MPI_Waitall", [MA_DC_WAITANY] = "MPI_Waitany",
	[MA_DC_WAITSOME] = "MPI_Waitsome", [MA_DC_BARRIER] = "MPI_Barrier", [MA_DC_BCAST] = "MPI_Bcast",
	[MA_DC_REDUCE] = "MPI_Reduce", [MA_DC_ALLREDUCE] = "MPI_Allreduce", [MA_DC_GATHER] = "MPI_Gather",
	[MA_DC_ALLGATHER] = "MPI_Allgather", [MA_DC_SCATTER] = "MPI_Scatter", [MA_DC_ALLTOALL] = "MPI_Alltoall",
	[MA_DC_ALLTOALLV] = "MPI_Alltoallv", [MA_DC_GATHERV] = "MPI_Gatherv", [MA_DC_SCATTERV] = "MPI_Scatterv",
	[MA_DC_ALLGATHERV] = "MPI_Allgatherv",
};

void ma_dlrb_trace_start(struct ma_dlrb *d)
{
	const char *path = getenv("MARCEL_DLRB_TRACE");
	/* Collective: every rank learns rank 0's start, traced or not (the variable is the
	 * same on every rank under mpirun -x; a rank without it sends nothing). */
	double t0 = ma_dlrb_now();
	PMPI_Bcast(&t0, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	if (!path || !*path)
		return;
	if (strlen(path) >= sizeof(d->trace->path)) {
		if (d->rank == 0)
			fprintf(stderr, "libmarcel-dlrb: MARCEL_DLRB_TRACE: a path of %zu characters: at most %zu; no trace\n",
				strlen(path), sizeof(d->trace->path) - 1);
		return;
	}
	d->trace = malloc(sizeof(*d->trace) + MA_DLRB_TRACE_MAX * sizeof(struct ma_dt_event));
	if (!d->trace) {
		fprintf(stderr, "libmarcel-dlrb: rank %d: out of memory for MARCEL_DLRB_TRACE; no trace of it\n", d->rank);
		return;
	}
	snprintf(d->trace->path, sizeof(d->trace->path), "%s", path);
	/* Same node as rank 0: the same monotonic clock, so the shift is 0 there. */
	d->trace->origin = t0;
	d->trace->n = 0;
	d->trace->dropped = 0;
}

static struct ma_dt_event *ma_dt_new(struct ma_dlrb *d)
{
	struct ma_dlrb_trace *tr = d->trace;
	if (tr->n == MA_DLRB_TRACE_MAX) {
		tr->dropped++;
		return NULL;
	}
	return &tr->ev[tr->n++];
}

void ma_dlrb_trace_call(struct ma_dlrb *d, double t0, double t1, enum ma_dlrb_call kind)
{
	struct ma_dt_event *e = ma_dt_new(d);
	if (e)
		*e = (struct ma_dt_event){ .t0 = t0, .t1 = t1, .kind = MA_DT_CALL, .call = (unsigned char)kind };
}

void ma_dlrb_trace_iteration(struct ma_dlrb *d, double u)
{
	struct ma_dt_event *e = ma_dt_new(d);
	if (e)
		*e = (struct ma_dt_event){ .t0 = ma_dlrb_now(), .kind = MA_DT_ITERATION, .u = u };
}

void ma_dlrb_trace_decision(struct ma_dlrb *d, int bound_vp, int level, int level_changed)
{
	double now = ma_dlrb_now();
	struct ma_dt_event *e;
	if (bound_vp >= 0 && (e = ma_dt_new(d)))
		*e = (struct ma_dt_event){ .t0 = now, .kind = MA_DT_BIND, .a = bound_vp };
	if (level_changed && (e = ma_dt_new(d)))
		*e = (struct ma_dt_event){ .t0 = now, .kind = MA_DT_LEVEL, .a = level };
}

/* Appends to a growing buffer; 0, or -1 out of memory. */
struct ma_dt_buf {
	char *s;
	size_t len, cap;
};

__attribute__((format(printf, 2, 3))) static int ma_dt_put(struct ma_dt_buf *b, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int k = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (k < 0)
			return -1;
		if (b->s && b->len + (size_t)k < b->cap) {
			b->len += (size_t)k;
			return 0;
		}
		size_t cap = b->cap ? 2 * b->cap : 1 << 16;
		while (cap < b->len + (size_t)k + 1)
			cap *= 2;
		char *s = realloc(b->s, cap);
		if (!s)
			return -1;
		b->s = s;
		b->cap = cap;
	}
}

/* This rank's events as JSON elements, each followed by ",\n". */
static int ma_dt_serialise(const struct ma_dlrb *d, struct ma_dt_buf *b)
{
	const struct ma_dlrb_trace *tr = d->trace;
	int pid = 0, tid = d->rank + 1, e = 0;
	if (d->rank == 0)
		e |= ma_dt_put(b, "{\"ph\":\"M\",\"pid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"MPI ranks\"}},\n");
	e |= ma_dt_put(b, "{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":\"rank %d\"}},\n",
		       pid, tid, d->rank);
	e |= ma_dt_put(b,
		       "{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%d}},\n",
		       pid, tid, d->rank);
	for (unsigned i = 0; i < tr->n && !e; i++) {
		const struct ma_dt_event *x = &tr->ev[i];
		double ts = 1e6 * (x->t0 - tr->origin);
		switch (x->kind) {
		case MA_DT_CALL:
			e |= ma_dt_put(b, "{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"cat\":\"mpi\","
					  "\"name\":\"%s\"},\n",
				       pid, tid, ts, 1e6 * (x->t1 - x->t0),
				       x->call < MA_DC_NB && ma_dt_call_names[x->call] ? ma_dt_call_names[x->call] : "MPI");
			break;
		case MA_DT_ITERATION:
			e |= ma_dt_put(b, "{\"ph\":\"i\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"s\":\"t\",\"cat\":\"dlrb\","
					  "\"name\":\"iteration\",\"args\":{\"utilisation\":%.4f}},\n",
				       pid, tid, ts, x->u);
			break;
		case MA_DT_BIND:
			e |= ma_dt_put(b, "{\"ph\":\"i\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"s\":\"t\",\"cat\":\"dlrb\","
					  "\"name\":\"rebound\",\"args\":{\"vp\":%d}},\n",
				       pid, tid, ts, x->a);
			break;
		default:
			e |= ma_dt_put(b, "{\"ph\":\"i\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"s\":\"t\",\"cat\":\"dlrb\","
					  "\"name\":\"level\",\"args\":{\"level\":%d}},\n",
				       pid, tid, ts, x->a);
			break;
		}
	}
	return e;
}

void ma_dlrb_trace_finish(struct ma_dlrb *d)
{
	/* Collective: whether rank 0 traces decides whether anyone sends. */
	int on = d->trace != NULL;
	PMPI_Bcast(&on, 1, MPI_INT, 0, MPI_COMM_WORLD);
	struct ma_dt_buf b = { 0 };
	int len = 0;
	if (on && d->trace) {
		if (ma_dt_serialise(d, &b) || b.len > (size_t)1 << 30) {
			fprintf(stderr, "libmarcel-dlrb: rank %d: out of memory for its trace; left out\n", d->rank);
			b.len = 0;
		}
		len = (int)b.len;
	}
	int *counts = NULL, *displs = NULL;
	char *all = NULL;
	long long total = 0;
	if (on && d->rank == 0) {
		counts = calloc((size_t)d->size, sizeof(*counts));
		displs = calloc((size_t)d->size, sizeof(*displs));
	}
	if (on)
		PMPI_Gather(&len, 1, MPI_INT, counts, counts ? 1 : 0, MPI_INT, 0, MPI_COMM_WORLD);
	if (counts && displs) {
		for (int i = 0; i < d->size; i++) {
			displs[i] = (int)total;
			total += counts[i];
		}
		all = total < (long long)1 << 31 ? malloc((size_t)total + 1) : NULL;
	}
	/* Rank 0 says whether it can take them; if not, no one sends. */
	int ok = on && (d->rank != 0 || all);
	if (on)
		PMPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (ok)
		PMPI_Gatherv(b.s ? b.s : "", len, MPI_CHAR, all, counts, displs, MPI_CHAR, 0, MPI_COMM_WORLD);
	if (d->rank == 0 && on) {
		FILE *f = ok ? fopen(d->trace->path, "w") : NULL;
		if (!ok)
			fprintf(stderr, "libmarcel-dlrb: MARCEL_DLRB_TRACE=%s: out of memory for %lld bytes; no trace\n",
				d->trace->path, total);
		else if (!f)
			fprintf(stderr, "libmarcel-dlrb: MARCEL_DLRB_TRACE=%s: %s; no trace\n", d->trace->path,
				strerror(errno));
		else {
			/* The last element has no comma after it. */
			while (total > 0 && (all[total - 1] == '\n' || all[total - 1] == ','))
				total--;
			fprintf(f, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n%.*s\n]}\n", (int)total, all);
			if (fclose(f))
				fprintf(stderr, "libmarcel-dlrb: MARCEL_DLRB_TRACE=%s: %s\n", d->trace->path, strerror(errno));
		}
	}
	if (d->trace && d->trace->dropped)
		fprintf(stderr, "libmarcel-dlrb: rank %d: its trace holds its first %d events; %lu more left out\n",
			d->rank, MA_DLRB_TRACE_MAX, d->trace->dropped);
	free(b.s);
	free(all);
	free(counts);
	free(displs);
	free(d->trace);
	d->trace = NULL;
}
