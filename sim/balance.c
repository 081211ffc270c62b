/*
 * libmarcel-dlrb's balancer in the simulator (--hwprio balance): at each iteration's end,
 * each thread (an MPI rank, bound to a VP as mpirun binds it) has the utilisation the
 * library measures, its computing time over the iteration's; the same controller
 * (ma_dlrb_step, hwprio/dlrb_balance.c) places the ranks and gives them levels, and the
 * simulator carries it out as the library does: a rebound rank moves at its time slice's
 * end, a VP has the level of the rank it runs. Meant for pinned workloads (`pin`), as
 * ranks are bound: an unpinned thread is nowhere to the controller (its own domain, no
 * level) until a placement pins it, for good.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "ma_sim_int.h"

int sim_balance_start(struct sim *s)
{
	unsigned n = s->w->nb_threads;
	if (n > MA_DLRB_MAX_TASKS) {
		sim_fail(s, "--hwprio balance: %u threads; the balancer takes at most %d ranks per node", n,
			 MA_DLRB_MAX_TASKS);
		return EINVAL;
	}
	s->dctl = malloc(sizeof(*s->dctl));
	s->dutil = calloc(n ? n : 1, sizeof(*s->dutil));
	s->dvp = calloc(n ? n : 1, sizeof(*s->dvp));
	s->dlevel = calloc(n ? n : 1, sizeof(*s->dlevel));
	s->cpu_mark = calloc(n ? n : 1, sizeof(*s->cpu_mark));
	if (!s->dctl || !s->dutil || !s->dvp || !s->dlevel || !s->cpu_mark)
		return ENOMEM;
	ma_dlrb_ctl_init(s->dctl);
	return 0;
}

void sim_balance_stop(struct sim *s)
{
	free(s->dctl);
	free(s->dutil);
	free(s->dvp);
	free(s->dlevel);
}

void sim_balance_iteration(struct sim *s)
{
	double wall = s->now - s->iter_start;
	s->iter_start = s->now;
	unsigned n = s->w->nb_threads;
	if (wall <= 0)
		return;
	for (unsigned t = 0; t < n; t++) {
		struct sim_ent *e = &s->thread[t];
		double cpu = e->cpu + (e->state == SIM_T_RUNNING ? s->now - e->ready_at : 0);
		double d = cpu - s->cpu_mark[t];
		s->cpu_mark[t] = cpu;
		s->dutil[t] = e->state == SIM_T_DONE && d <= 0 ? -1 : d / wall > 1 ? 1 : d / wall;
		s->dvp[t] = e->fixed_item >= 0 ? e->fixed_item - (int)s->nl : -1;
	}
	struct ma_dlrb_decision dc =
		ma_dlrb_step(s->dctl, &s->topo, s->dutil, n, s->dvp, s->dlevel, s->m->hw_lo, s->m->hw_hi);
	if (dc.placed)
		for (unsigned t = 0; t < n; t++) {
			struct sim_ent *e = &s->thread[t];
			if (s->dvp[t] >= 0 && e->fixed_item != (int)s->nl + s->dvp[t]) {
				sim_pin_move(s, e, (unsigned)s->dvp[t]);
				sim_trace_event(s, "i", (unsigned)s->dvp[t], "dlrb-move", e->id);
			}
		}
	if (!dc.levels_changed)
		return;
	s->hw_changes++;
	for (unsigned v = 0; v < s->nv; v++)
		if (s->vp[v].core >= 0 && (v == 0 || s->vp[v].core != s->vp[v - 1].core))
			sim_core_rates(s, s->vp[v].core);
}
