/*
 * One rank carrying out its part of the node's decisions (act.c): bound to the PU of the
 * VP it was given (every thread of the process, as mpirun's own binding does), and its
 * level handed to hwprio's backends, which act on the rank's main thread. Everything is
 * put back at MPI_Finalize: the affinity the process started with, the backends' levels.
 */
#ifndef MA_DLRB_ACT_H
#define MA_DLRB_ACT_H

#include <sched.h> /* cpu_set_t: the including file defines _GNU_SOURCE first */
#include "ma_hw_topo.h"

#define MA_DLRB_MAX_BACKENDS 8

struct ma_dlrb_act {
	const struct ma_topo *t;
	int bind;               /* rebinding allowed: t is this machine's */
	cpu_set_t saved;        /* the affinity at the start */
	int saved_ok;
	int vp, level, top;     /* carried out now (-1: not placed) */
	unsigned moves;
	unsigned nb;
	struct {
		const struct ma_hw_backend *b;
		void *priv;
		int failed;     /* a failure was reported: left out since */
	} a[MA_DLRB_MAX_BACKENDS];
	int self;               /* some backend has apply_self, and a level is not 0 */
	struct ma_hw_env env;
	struct ma_hw_kind kinds[MA_HW_MAX_KINDS];
	int rank;               /* for messages */
};

/* Reads the affinity, starts the backends MARCEL_DLRB_HWPRIO names (value: auto, none or
 * a list; NULL: auto). 0, or -1 after printing why (a bad value: no backend, the rank
 * goes on balancing placement only). */
int ma_dlrb_act_start(struct ma_dlrb_act *a, const struct ma_topo *t, int bind, const char *value, int rank);
/* The VP whose PU is the only one the process may run on, else -1. */
int ma_dlrb_act_current_vp(const struct ma_dlrb_act *a);
/* Carries out: bound to vp's PU (if binding is allowed and vp changed), level (of a
 * domain whose highest is top) to each backend fitted into its reach. */
void ma_dlrb_act_set(struct ma_dlrb_act *a, int vp, int level, int top);
/* After each MPI call, for backends the kernel undoes behind the program's back. */
void ma_dlrb_act_self(struct ma_dlrb_act *a);
/* Levels and affinity back as they were; the backends stopped. */
void ma_dlrb_act_finish(struct ma_dlrb_act *a);

#endif
