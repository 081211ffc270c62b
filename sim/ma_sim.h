/*
 * marcel-sim: a discrete-event model of a machine running marcel, driven by the library's
 * own decision code. The strategies (strategies/, through their ops tables) and hwprio's
 * policy (hwprio/policy.c) are linked as they are into libmarcel and called on views
 * this simulator builds from its own state (bubbles/ma_view.h); what they decide is
 * carried out on simulated run queues. Nothing here reaches the runtime: the simulator
 * links the topology, the strategies and hwprio's pure objects, and the C library.
 *
 * Time is in seconds; work in seconds of one hardware thread running alone at speed 1 on
 * its local memory. A thread's speed at an instant is the machine model's (model.c):
 * its core kind, its SMT siblings and their hwprio levels, where its memory is.
 *
 * doc/simulator.md says what is modelled, every parameter, and how it was calibrated.
 */
#ifndef MA_SIM_H
#define MA_SIM_H

#include <stdint.h>
#include <stdio.h>
#include "ma_view.h"
#include "ma_strategy_ops.h"
#include "ma_hwprio.h"

/* ---- the machine model (model.c) ---- */

enum sim_smt_model {
	SIM_SMT_SHARE,   /* siblings split the core evenly; a lowered one waits quiet (x86) */
	SIM_SMT_POWER5,  /* decode slots split by priority: R = 2^(|dP|+1) (seed 002) */
};

/* Every parameter of the machine, named as in doc/simulator.md. */
struct sim_machine {
	const char *topology;       /* hwloc synthetic description, or @file.xml */
	int smt;                    /* one VP per PU (else per core) */
	double numa_factor;         /* time of a remote memory access / a local one */
	double node_bw;             /* memory streams a NUMA node serves at full speed (a thread
				       in its memory part is one); 0: no limit (bandwidth.c) */
	double smt_pair;            /* speed of each of two busy siblings at equal level,
				       relative to one running alone */
	enum sim_smt_model smt_model;
	double smt_up, smt_down;    /* POWER5: speed = smt_pair * (2 share)^exp, above and
				       below an even share, at most 1 */
	int smt_idle_release;       /* a sibling with nothing to run leaves the core whole
				       (else it keeps its decode share, as a polling wait) */
	double quiet_share;         /* smt-quiet: share of the time a lowered sibling is quiet
				       per level below 0 (0.25: -1 quiet a quarter, -2 a half) */
	double migrate_s;           /* cost of a move to another core (cache refill), per hop
				       of the topology tree between the two */
	double timeslice_s;         /* a VP's round robin among threads of its path */
	double wake_s;              /* an idle VP notices new work within this (uniformly) */
	double sched_latency_s;     /* the OS's scheduler latency: a thread released from a
				       barrier or an exchange resumes this much later, in every
				       run but under hwprio's policy (the seed's SCHED_HPC) */
	int hw_lo, hw_hi;           /* the levels the hwprio backend reaches */
};

void sim_machine_defaults(struct sim_machine *m);
/* Sets m up as a preset: power5 (seed 002's machine), itanium16 (seed 003's), x86smt,
 * xeon-ht (seed 001's). 0, or EINVAL for another name. */
int sim_machine_preset(struct sim_machine *m, const char *name);

/* ---- the workload ---- */

enum sim_phase_kind {
	SIM_COMPUTE,     /* work (seconds alone), mem: fraction of it spent on memory */
	SIM_BARRIER,     /* wait until every thread of barrier `id` arrived */
	SIM_SLEEP,       /* wait `work` seconds, off every processor */
	SIM_SPAWN,       /* thread `id`, dormant until now, becomes ready */
	SIM_JOIN,        /* wait until thread `id` has ended */
	SIM_EXCHANGE,    /* post to the neighbours, then wait until each has posted as many
			    times (a halo exchange: MPI isend/irecv then waitall) */
	SIM_END,
};

/* What a computation leans on among the resources SMT siblings share, after the 001
 * seed's three programs: the model's speed of two such siblings (model.c) and the load
 * metrics a thread shows the strategies (sim_profile_metric). */
enum sim_profile {
	SIM_PROF_NONE,   /* none said: siblings share as smt_pair has it */
	SIM_PROF_INT,    /* integer-bound (the seed's 164.gzip) */
	SIM_PROF_FP,     /* floating-point-bound (177.mesa) */
	SIM_PROF_L2C,    /* cache-miss-bound (197.parser) */
	SIM_PROF_NB
};

struct sim_phase {
	enum sim_phase_kind kind;
	double work, mem;
	int id;
	enum sim_profile profile;   /* SIM_COMPUTE: its resource profile */
};

/* The load metrics (enum ma_vmetric, events per 1000 instructions) a thread computing with
 * profile p shows: a bit per metric known, values into out[]. workload-contend.c. */
unsigned sim_profile_metric(enum sim_profile p, float out[MA_VM_NB]);

struct sim_workload;
/* The next phase of thread t at its step n (n counts from 0). */
typedef void (*sim_next_fn)(const struct sim_workload *w, unsigned t, unsigned long n, struct sim_phase *p);

/* A bubble of the workload: its parent (-1: the root bubble) and its members. */
struct sim_wbubble {
	int parent;
};

struct sim_workload {
	const char *name;
	unsigned nb_threads;
	unsigned nb_bubbles;
	int *thread_bubble;         /* per thread, its bubble, -1: none (the root) */
	struct sim_wbubble *bubbles; /* parents before members */
	int *pin;                   /* per thread, the VP it is bound to, -1: none */
	unsigned nb_barriers;
	unsigned *barrier_count;    /* threads each barrier waits for */
	unsigned char *dormant;     /* per thread, 1: it starts when another spawns it; NULL: none */
	unsigned char *master;      /* per thread, 1: a master thread (marcel_task_setmaster:
				       an application's main thread); NULL: none */
	/* Per thread, the profile whose load metrics it shows the strategies (views with
	 * MA_VIEW_METRICS), as an application's hint or the counters would, SIM_PROF_NONE:
	 * none; NULL: no thread shows any. While it computes a phase with a profile, that
	 * phase's metrics are shown instead (programs that change, as the seed's shells). */
	enum sim_profile *metric;
	/* Thread t's neighbours for SIM_EXCHANGE, at most max of them in out: their number.
	 * NULL if the workload exchanges nothing. The relation must be symmetric. */
	unsigned (*neighbours)(const struct sim_workload *w, unsigned t, unsigned *out, unsigned max);
	sim_next_fn next;
	void *data;                 /* the generator's */
	void (*free_data)(struct sim_workload *w); /* frees data, NULL: free() does */
	char desc[160];
};

/* Builds workload `spec` ("metbench:4:loads=1,4", "stencil:16", ...; workload.c lists
 * them) for a machine of nb_vps VPs. 0, or EINVAL with a line in err naming the bad part. */
int sim_workload_make(struct sim_workload *w, const char *spec, unsigned nb_vps, char *err, size_t errlen);
void sim_workload_free(struct sim_workload *w);
/* The replay workload (replay.c): trace `path` (MARCEL_TRACE's format) as programs, its
 * computation times `scale`, `mem` of it memory. 0, or an errno with a line in err. */
int sim_replay_make(struct sim_workload *w, const char *path, double scale, double mem, char *err, size_t errlen);
void sim_replay_free(struct sim_workload *w);
/* The 001 seed's workloads (workload-contend.c), from the keys after "contend:" (args,
 * changed in place): 0, or an errno with a line in err. */
int sim_contend(struct sim_workload *w, char *args, unsigned nb_vps, char *err, size_t errlen);
/* "name: description" of each workload, one per line. */
void sim_workload_list(FILE *out);

/* ---- a run ---- */

enum sim_hw_mode {
	SIM_HW_OFF,       /* no levels */
	SIM_HW_STATIC,    /* levels given by hand, per thread (the seeds' static priorities) */
	SIM_HW_POLICY,    /* hwprio's policy, as MARCEL_HWPRIO_POLICY */
	SIM_HW_BALANCE,   /* libmarcel-dlrb: threads (ranks) placed, and levels per thread */
};

struct sim_config {
	struct sim_machine machine;
	const char *strategy;       /* a marcel strategy's name */
	enum sim_hw_mode hw;
	enum ma_hw_policy_kind policy;
	const int *static_level;    /* SIM_HW_STATIC: per thread */
	uint64_t seed;
	FILE *trace;                /* a MARCEL_TRACE-format JSON of the run, or NULL */
	FILE *snapshot;             /* a snapshot in marcel_sched_snapshot_json's format, or NULL */
	/* When: this time (s), or < 0 at the end of the first iteration. A run where no
	 * iteration ends is simulated twice, the second time (without trace) to take it at
	 * the end of the first instant when the most threads were alive (spawned, not ended). */
	double snapshot_at;
};

/* Which moment a run's snapshot shows. */
enum sim_snapshot_when {
	SIM_SNAP_NONE,              /* none written: no snapshot asked, or snapshot_at is at or
				     * after the run's last event (the file is left empty) */
	SIM_SNAP_AT,                /* snapshot_at */
	SIM_SNAP_ITERATION,         /* the end of the first iteration */
	SIM_SNAP_PEAK,              /* no iteration ended: the most threads alive */
};

struct sim_thread_result {
	double run, wait;           /* time computing, time waiting (barriers, queues) */
	double latency;             /* of wait: released, held by the scheduler latency */
	double end;                 /* when it ended */
	unsigned migrations;
	int last_vp;
};

struct sim_result {
	double makespan;
	unsigned iterations;        /* rounds of barrier 0 */
	unsigned hw_changes;        /* iterations after which a level changed */
	unsigned long events;
	unsigned nb_threads, nb_vps;
	struct sim_thread_result *thread;
	int *vp_level;              /* each VP's level at the end */
	char strategy[32];
	enum sim_snapshot_when snapshot;
	/* Its state: from the last event before it, at snapshot_t, to the next, at
	 * snapshot_until (--snapshot-at any time between takes the same). An iteration's
	 * end is within an instant: both are its time. */
	double snapshot_t, snapshot_until;
	unsigned snapshot_live;     /* threads spawned and not ended in it */
};

/* Runs workload w on configuration c: 0, or an errno with a line in err. */
int sim_run(const struct sim_config *c, const struct sim_workload *w, struct sim_result *r, char *err, size_t errlen);
void sim_result_free(struct sim_result *r);
/* The geometric mean of the applications' completion times (an application: a bubble of
 * the root with its subtree, or a thread outside every bubble), the 004 seed's measure;
 * their number in *nb_apps. */
double sim_apps_gmean(const struct sim_workload *w, const struct sim_result *r, unsigned *nb_apps);

/* The strategy tables linked in (strategies/ma_strategy_list.h): NULL if none is named so. */
const struct ma_strategy *sim_strategy_find(const char *name);
void sim_strategy_list(FILE *out);

#endif
