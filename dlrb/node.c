/*
 * Balancing node by node (MARCEL_DLRB=balance). The ranks of a node (MPI_COMM_TYPE_SHARED)
 * share one segment, an MPI shared-memory window: each posts its iterations'
 * utilisations there, and the last rank to post an iteration every rank has posted runs
 * the controller (hwprio/dlrb_balance.c) on them and publishes the decision; each rank
 * carries out its part after its next MPI call returns (act.c). No rank ever waits for another here:
 * the segment is read and written with atomics, and a rank that finds another deciding
 * goes on (that one sees its figures).
 *
 * A figure measured while the previous decision was being carried out mixes two
 * placements: each post says which decision it ran under, and only figures of the
 * current one are decided on.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ma_dlrb.h"
#include "ma_dlrb_act.h"
#include "ma_dlrb_balance.h"

#define MA_DLRB_LOG 8192 /* the node's log of decisions, sent with the report */

/* Every field shared between the node's processes is atomic, and every access to it
 * sequentially consistent: the seqlocks below then need no fences (which
 * ThreadSanitizer does not model), and they are taken at most once a millisecond. */
struct ma_dlrb_post {
	_Atomic unsigned long seq; /* iterations posted; odd while being written */
	_Atomic double util;       /* the last one's utilisation */
	_Atomic unsigned gen;      /* the decision it ran under */
};

/* The node's segment (in the window of its local rank 0). */
struct ma_dlrb_shm {
	atomic_int deciding;  /* a rank is deciding */
	atomic_int pending;   /* a post came that the decider may not have seen */
	_Atomic unsigned gen; /* twice the decisions published; odd while one is written */
	unsigned n;
	unsigned long used[MA_DLRB_MAX_TASKS]; /* each rank's posts decided on */
	_Atomic int vp[MA_DLRB_MAX_TASKS], level[MA_DLRB_MAX_TASKS], top[MA_DLRB_MAX_TASKS];
	struct ma_dlrb_post post[MA_DLRB_MAX_TASKS];
	struct ma_dlrb_ctl ctl;
	unsigned log_len;
	char log[MA_DLRB_LOG];
};

struct ma_dlrb_node {
	MPI_Comm comm;
	int me, n;
	MPI_Win win;
	struct ma_dlrb_shm *shm;
	struct ma_topo topo;
	char topo_name[64];
	unsigned gen;    /* the decision this rank carried out last */
	unsigned it_gen; /* the one in force when its current iteration began */
	unsigned long posted;
	int skipped_first;
	double acc_compute, acc_total; /* iterations not posted yet */
	struct ma_dlrb_act act;
};

/* Appends to the node's log (the decider holds `deciding`); the last MA_DLRB_LOG_END
 * bytes are kept for the closing summary, which alone may use them (end). */
#define MA_DLRB_LOG_END 512
__attribute__((format(printf, 3, 4))) static void ma_dlrb_log_in(struct ma_dlrb_shm *s, int end, const char *fmt, ...)
{
	if (s->log_len >= (end ? MA_DLRB_LOG - 1 : MA_DLRB_LOG - MA_DLRB_LOG_END))
		return;
	va_list ap;
	va_start(ap, fmt);
	unsigned room = (end ? MA_DLRB_LOG : MA_DLRB_LOG - MA_DLRB_LOG_END) - s->log_len;
	int k = vsnprintf(s->log + s->log_len, room, fmt, ap);
	va_end(ap);
	if (k > 0)
		s->log_len += (unsigned)k < room ? (unsigned)k : room - 1;
}
#define ma_dlrb_log(s, ...) ma_dlrb_log_in(s, 0, __VA_ARGS__)

static void ma_dlrb_node_free(struct ma_dlrb_node *nd)
{
	if (nd->win != MPI_WIN_NULL) {
		PMPI_Win_unlock_all(nd->win);
		PMPI_Win_free(&nd->win);
	}
	if (nd->comm != MPI_COMM_NULL)
		PMPI_Comm_free(&nd->comm);
	if (nd->topo.nb_vps)
		ma_topo_free(&nd->topo);
	free(nd);
}

int ma_dlrb_node_start(struct ma_dlrb *d)
{
	struct ma_dlrb_node *nd = calloc(1, sizeof(*nd));
	if (!nd) {
		fprintf(stderr, "libmarcel-dlrb: rank %d: out of memory; observing only\n", d->rank);
		return -1;
	}
	nd->comm = MPI_COMM_NULL;
	nd->win = MPI_WIN_NULL;
	/* The node's ranks, in the order of MPI_COMM_WORLD. Every call below is collective
	 * on the node, so each rank makes them all, failing or not, and they agree at the
	 * end on whether balancing starts. */
	int ok = PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL, &nd->comm) ==
		 MPI_SUCCESS;
	/* MARCEL_DLRB_GROUP=K: the node's ranks balanced in groups of K consecutive ones, each
	 * over the CPUs its own ranks may run on (a node whose ranks are bound per socket;
	 * several "nodes" on one machine, to try the multi-node path). */
	const char *group = getenv("MARCEL_DLRB_GROUP");
	if (ok && group && *group) {
		char *end;
		long k = strtol(group, &end, 10);
		int me = 0;
		PMPI_Comm_rank(nd->comm, &me);
		if (*end || k < 1 || k > MA_DLRB_MAX_TASKS) {
			if (d->rank == 0)
				fprintf(stderr, "libmarcel-dlrb: MARCEL_DLRB_GROUP=%s: expected a number of ranks from 1 to "
						"%d; each node is balanced whole\n", group, MA_DLRB_MAX_TASKS);
		} else {
			MPI_Comm sub;
			ok = PMPI_Comm_split(nd->comm, me / (int)k, me, &sub) == MPI_SUCCESS;
			PMPI_Comm_free(&nd->comm);
			nd->comm = ok ? sub : MPI_COMM_NULL;
		}
	}
	if (!ok) {
		fprintf(stderr, "libmarcel-dlrb: rank %d: cannot find the ranks of its node; observing only\n", d->rank);
		free(nd);
		return -1;
	}
	PMPI_Comm_set_errhandler(nd->comm, MPI_ERRORS_RETURN);
	PMPI_Comm_rank(nd->comm, &nd->me);
	PMPI_Comm_size(nd->comm, &nd->n);
	/* The node's PUs: those any of its ranks may run on (mpirun's binding, or a batch
	 * system's cpuset), not only this rank's. */
	enum { WORDS = CPU_SETSIZE / (8 * sizeof(unsigned long)) };
	unsigned long mask[WORDS] = { 0 }, node_mask[WORDS] = { 0 };
	cpu_set_t cpus;
	int cpus_ok = sched_getaffinity(0, sizeof(cpus), &cpus) == 0;
	for (unsigned c = 0; cpus_ok && c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &cpus))
			mask[c / (8 * sizeof(unsigned long))] |= 1UL << (c % (8 * sizeof(unsigned long)));
	PMPI_Allreduce(mask, node_mask, WORDS, MPI_UNSIGNED_LONG, MPI_BOR, nd->comm);
	hwloc_bitmap_t within = hwloc_bitmap_alloc();
	for (unsigned c = 0; within && c < CPU_SETSIZE; c++)
		if (node_mask[c / (8 * sizeof(unsigned long))] & (1UL << (c % (8 * sizeof(unsigned long)))))
			hwloc_bitmap_set(within, c);
	char err[256] = "";
	const char *spec = getenv("MARCEL_TOPOLOGY");
	struct ma_topo_options opt = { .spec = spec && *spec ? spec : NULL, .maxarity = 8, .smt = 1,
				       .within = within && !hwloc_bitmap_iszero(within) ? within : NULL };
	int mine = within != NULL && ma_topo_load(&nd->topo, &opt, err, sizeof(err)) == 0;
	hwloc_bitmap_free(within);
	if (!mine)
		fprintf(stderr, "libmarcel-dlrb: rank %d: %s%s: %s; observing only\n", d->rank,
			opt.spec ? "MARCEL_TOPOLOGY=" : "this machine's topology", opt.spec ? opt.spec : "",
			err[0] ? err : "out of memory");
	else if (nd->n > MA_DLRB_MAX_TASKS) {
		if (nd->me == 0)
			fprintf(stderr, "libmarcel-dlrb: %d ranks on one node: at most %d are balanced; observing only\n",
				nd->n, MA_DLRB_MAX_TASKS);
		mine = 0;
	}
	snprintf(nd->topo_name, sizeof(nd->topo_name), "%s", opt.spec ? opt.spec : "this machine");
	/* Collective whatever happened above: a rank that skipped it would hang the others. */
	struct ma_dlrb_shm *base = NULL;
	if (PMPI_Win_allocate_shared(nd->me == 0 ? (MPI_Aint)sizeof(struct ma_dlrb_shm) : 0, 1, MPI_INFO_NULL, nd->comm,
				     &base, &nd->win) != MPI_SUCCESS)
		nd->win = MPI_WIN_NULL;
	if (nd->win != MPI_WIN_NULL) {
		MPI_Aint size;
		int unit, *model = NULL, flag = 0;
		/* Plain loads and stores (and atomics) on the window need the unified model. */
		PMPI_Win_get_attr(nd->win, MPI_WIN_MODEL, &model, &flag);
		if (PMPI_Win_shared_query(nd->win, 0, &size, &unit, &nd->shm) != MPI_SUCCESS ||
		    size < (MPI_Aint)sizeof(struct ma_dlrb_shm) || !flag || !model || *model != MPI_WIN_UNIFIED)
			nd->shm = NULL;
		PMPI_Win_lock_all(MPI_MODE_NOCHECK, nd->win);
	}
	int shm_ok = nd->shm != NULL;
	mine = mine && shm_ok;
	int all = 0;
	PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, nd->comm);
	if (!all) {
		if (mine)
			fprintf(stderr, "libmarcel-dlrb: rank %d: a rank of its node cannot balance; observing only\n",
				d->rank);
		else if (!shm_ok)
			fprintf(stderr, "libmarcel-dlrb: rank %d: no shared memory (unified MPI window) with its node's "
					"ranks; observing only\n",
				d->rank);
		ma_dlrb_node_free(nd);
		return -1;
	}
	/* Rebinding: on this machine, unless the program's ranks run several threads of
	 * computation (OpenMP), which one hardware thread each would squeeze. */
	const char *bind = getenv("MARCEL_DLRB_BIND"), *omp = getenv("OMP_NUM_THREADS");
	const char *why_not = nd->topo.fake ? "off (not this machine)" : NULL;
	if (!why_not && bind && !strcmp(bind, "off"))
		why_not = "off (MARCEL_DLRB_BIND=off)";
	else if (!why_not && bind && strcmp(bind, "on") && nd->me == 0)
		fprintf(stderr, "libmarcel-dlrb: MARCEL_DLRB_BIND=%s: expected on or off; binding stays on\n", bind);
	if (!why_not && (!bind || strcmp(bind, "on")) && omp && atoi(omp) > 1)
		why_not = "off (OMP_NUM_THREADS above 1: a rank's threads would share one hardware thread; "
			  "MARCEL_DLRB_BIND=on forces it)";
	struct ma_dlrb_shm *s = nd->shm;
	if (nd->me == 0) {
		memset(s, 0, sizeof(*s));
		ma_dlrb_ctl_init(&s->ctl);
		s->n = (unsigned)nd->n;
		ma_dlrb_log(s, "libmarcel-dlrb: node of rank %d: %d ranks on %s (%u hardware threads), binding %s; a "
			       "round is an iteration of every rank (iterations under %.0f ms together)\n",
			    d->rank, nd->n, nd->topo_name, nd->topo.nb_vps, why_not ? why_not : "on",
			    1e3 * MA_DLRB_POST_MIN);
	}
	PMPI_Barrier(nd->comm);
	/* The backends start per rank: each acts on its own process. On a node that is not
	 * this machine, none: its decisions are reported, not carried out. */
	ma_dlrb_act_start(&nd->act, &nd->topo, !why_not, nd->topo.fake ? "none" : getenv("MARCEL_DLRB_HWPRIO"),
			  d->rank);
	atomic_store(&s->vp[nd->me], nd->act.vp);
	PMPI_Barrier(nd->comm);
	d->node = nd;
	return 0;
}

/* Reads rank i's last post: 0 if it is being written. */
static int ma_dlrb_read_post(struct ma_dlrb_post *p, unsigned long *seq, double *util, unsigned *gen)
{
	unsigned long a = atomic_load(&p->seq);
	if (a & 1)
		return 0;
	*util = atomic_load(&p->util);
	*gen = atomic_load(&p->gen);
	*seq = a;
	return atomic_load(&p->seq) == a;
}

static void ma_dlrb_log_list(struct ma_dlrb_shm *s, const char *what, const int *x)
{
	ma_dlrb_log(s, " %s", what);
	for (unsigned i = 0; i < s->n; i++)
		ma_dlrb_log(s, " %u:%d", i, x[i]);
}

/* The caller holds `deciding`: decides if every rank posted an iteration run under the
 * current decision. */
static void ma_dlrb_decide(struct ma_dlrb_node *nd)
{
	struct ma_dlrb_shm *s = nd->shm;
	/* Only the decider writes gen: it is even here. */
	unsigned n = s->n, gen = atomic_load_explicit(&s->gen, memory_order_relaxed);
	double *util = malloc(n * sizeof(*util));
	unsigned long *seq = malloc(n * sizeof(*seq));
	int *was = malloc(n * sizeof(*was)), *vp = malloc(n * sizeof(*vp)), *level = malloc(n * sizeof(*level));
	if (!util || !seq || !was || !vp || !level)
		goto out;
	for (unsigned i = 0; i < n; i++) {
		unsigned g;
		if (!ma_dlrb_read_post(&s->post[i], &seq[i], &util[i], &g) || seq[i] <= s->used[i] || g != gen)
			goto out;
	}
	memcpy(s->used, seq, n * sizeof(*seq));
	/* Decided on copies, then published under a seqlock (gen odd while written): the
	 * ranks read vp[] and level[] meanwhile, and keep only a read that gen brackets. */
	for (unsigned i = 0; i < n; i++) {
		was[i] = vp[i] = atomic_load(&s->vp[i]);
		level[i] = atomic_load(&s->level[i]);
	}
	struct ma_dlrb_decision dc = ma_dlrb_step(&s->ctl, &nd->topo, util, n, vp, level, 0, MA_HW_LEVEL_MAX);
	if (!dc.placed && !dc.levels_changed && !dc.phase_change)
		goto out;
	if (dc.placed || dc.levels_changed) {
		atomic_store(&s->gen, gen + 1);
		for (unsigned i = 0; i < n; i++) {
			atomic_store(&s->vp[i], vp[i]);
			atomic_store(&s->level[i], level[i]);
			atomic_store(&s->top[i], ma_hw_domain_top(s->ctl.slot, n, i));
		}
		atomic_store(&s->gen, gen + 2);
	}
	ma_dlrb_log(s, "  round %u: utilisation%% (local rank:%%)", s->ctl.iterations);
	for (unsigned i = 0; i < n; i++)
		ma_dlrb_log(s, " %u:%.0f", i, 100 * util[i]);
	ma_dlrb_log(s, "\n   ");
	if (dc.phase_change)
		ma_dlrb_log(s, " phase change;");
	if (dc.placed) {
		ma_dlrb_log_list(s, "placed (local rank:VP, was", was);
		ma_dlrb_log(s, ") now");
		ma_dlrb_log_list(s, "", vp);
		ma_dlrb_log(s, ";");
	}
	if (dc.levels_changed)
		ma_dlrb_log_list(s, "levels (local rank:level)", level);
	ma_dlrb_log(s, "\n");
out:
	free(util);
	free(seq);
	free(was);
	free(vp);
	free(level);
}

void ma_dlrb_node_poll(struct ma_dlrb *d)
{
	struct ma_dlrb_node *nd = d->node;
	struct ma_dlrb_shm *s = nd->shm;
	/* Once per call while nothing changes: a relaxed load, then the seqlock's reads. */
	unsigned g = atomic_load_explicit(&s->gen, memory_order_relaxed);
	if (g != nd->gen && !(g & 1)) {
		g = atomic_load(&s->gen);
		int vp = atomic_load(&s->vp[nd->me]), level = atomic_load(&s->level[nd->me]),
		    top = atomic_load(&s->top[nd->me]);
		/* Written meanwhile: read again after a later call. */
		if (!(g & 1) && atomic_load(&s->gen) == g) {
			nd->gen = g;
			int was = nd->act.vp, lwas = nd->act.level;
			ma_dlrb_act_set(&nd->act, vp, level, top);
			if (d->trace)
				ma_dlrb_trace_decision(d, nd->act.vp != was ? nd->act.vp : -1, nd->act.level,
						       nd->act.level != lwas);
		}
	}
	if (nd->act.self)
		ma_dlrb_act_self(&nd->act);
}

void ma_dlrb_node_post(struct ma_dlrb *d, double compute, double total)
{
	struct ma_dlrb_node *nd = d->node;
	struct ma_dlrb_shm *s = nd->shm;
	struct ma_dlrb_post *p = &s->post[nd->me];
	/* The first iteration runs from MPI_Init: the program's set-up is in it. */
	if (!nd->skipped_first) {
		nd->skipped_first = 1;
		return;
	}
	/* Iterations shorter than MA_DLRB_POST_MIN are posted together: a decision per
	 * iteration of a few microseconds would cost more than the balance gains, and one
	 * such iteration is mostly noise. (Those that straddle a decision are dropped with
	 * the rest: the decider ignores the post.) */
	nd->acc_compute += compute;
	nd->acc_total += total;
	if (nd->acc_total < MA_DLRB_POST_MIN)
		return;
	double u = nd->acc_total > 0 ? nd->acc_compute / nd->acc_total : 0;
	nd->acc_compute = nd->acc_total = 0;
	atomic_store(&p->seq, 2 * nd->posted + 1);
	atomic_store(&p->util, u);
	atomic_store(&p->gen, nd->it_gen);
	nd->posted++;
	atomic_store(&p->seq, 2 * nd->posted);
	/* The last to post decides. One that finds another deciding leaves it to that one,
	 * which sees `pending` set when it is done and decides again: no round is left
	 * undecided because its last post came while an earlier round was being judged. */
	atomic_store(&s->pending, 1);
	while (!atomic_exchange_explicit(&s->deciding, 1, memory_order_acquire)) {
		atomic_store(&s->pending, 0);
		ma_dlrb_decide(nd);
		atomic_store_explicit(&s->deciding, 0, memory_order_release);
		if (!atomic_load(&s->pending))
			break;
	}
	ma_dlrb_node_poll(d);
	nd->it_gen = nd->gen;
}

void ma_dlrb_node_finish(struct ma_dlrb *d, char **log)
{
	struct ma_dlrb_node *nd = d->node;
	*log = NULL;
	if (!nd)
		return;
	d->node = NULL;
	d->r.vp_last = nd->act.vp;
	d->r.level_last = nd->act.level;
	d->r.moves = nd->act.moves;
	ma_dlrb_act_finish(&nd->act);
	/* Every rank is done deciding before the leader reads the log. */
	PMPI_Barrier(nd->comm);
	if (nd->me == 0) {
		struct ma_dlrb_shm *s = nd->shm;
		const struct ma_dlrb_ctl *c = &s->ctl;
		ma_dlrb_log_in(s, 1, "  %u decisions over %u rounds: placements that moved ranks %u, phase changes %u, "
			       "level changes %u%s\n",
			    atomic_load(&s->gen) / 2, c->iterations, c->placements, c->phase_changes, c->level_changes,
			    c->iterations ? "" : " (no round: no iteration that every rank of the node posted)");
		*log = strndup(s->log, s->log_len);
	}
	ma_dlrb_node_free(nd);
}
