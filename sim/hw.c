/*
 * hwprio in the simulator: the same steps as hwprio/runtime.c, on simulated time. An
 * iteration ends with each round of the first barrier that completes; per VP, its run is
 * the iteration's time minus the time it sat idle, and its path is the thread that ran
 * the most on it and that thread's bubbles. Then the library's pure functions decide:
 * ma_hw_units, ma_hw_samples_pool, ma_hw_policy_step, ma_hw_levels_fit. The levels take
 * effect at once (the model has no switch to wait for).
 *
 * With static levels (the seeds' hand-set priorities), a VP has the level of the thread
 * it runs, and no policy runs; so with libmarcel-dlrb's balancer (balance.c), which
 * decides per thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "ma_sim_int.h"

int sim_hw_level_of(const struct sim *s, unsigned v)
{
	if (s->c->hw == SIM_HW_STATIC) {
		const struct sim_ent *t = s->vp[v].cur;
		return t && s->c->static_level ? s->c->static_level[t->index] : 0;
	}
	if (s->c->hw == SIM_HW_BALANCE) {
		const struct sim_ent *t = s->vp[v].cur;
		return t && s->dlevel ? s->dlevel[t->index] : 0;
	}
	return s->vp[v].level;
}

int sim_hw_start(struct sim *s)
{
	if (s->c->hw == SIM_HW_BALANCE)
		return sim_balance_start(s);
	if (s->c->hw != SIM_HW_POLICY)
		return 0;
	unsigned n = s->nv;
	ma_hw_policy_defaults(&s->params, s->c->policy);
	s->st = (struct ma_hw_policy_state){ .n = n, .slot = calloc(n, sizeof(struct ma_hw_slot)) };
	s->samples = calloc(n, sizeof(*s->samples));
	s->pooled = calloc(n, sizeof(*s->pooled));
	s->path = calloc(n, sizeof(*s->path));
	s->unit = calloc(n, sizeof(*s->unit));
	s->fit = calloc(n, sizeof(*s->fit));
	s->cpu_mark = calloc(s->w->nb_threads ? s->w->nb_threads : 1, sizeof(*s->cpu_mark));
	if (!s->st.slot || !s->samples || !s->pooled || !s->path || !s->unit || !s->fit || !s->cpu_mark)
		return ENOMEM;
	for (unsigned v = 0; v < n; v++)
		s->st.slot[v].domain = s->vp[v].core;
	return 0;
}

void sim_hw_stop(struct sim *s)
{
	sim_balance_stop(s);
	free(s->st.slot);
	free(s->samples);
	free(s->pooled);
	free(s->path);
	free(s->unit);
	free(s->fit);
	free(s->cpu_mark);
}

/* VP v's path: the thread that ran the most on it since the last iteration. */
static void sim_hw_path(struct sim *s, unsigned v, const struct sim_ent *best)
{
	struct ma_hw_path *p = &s->path[v];
	p->len = 0;
	if (!best)
		return;
	unsigned total = 0;
	for (const struct sim_ent *b = best->parent; b && b != &s->root; b = b->parent)
		total++;
	unsigned kept = total < MA_HW_UNIT_DEPTH - 1 ? total : MA_HW_UNIT_DEPTH - 1, k = 0;
	for (const struct sim_ent *b = best->parent; b && b != &s->root; b = b->parent, k++)
		if (total - 1 - k < kept)
			p->id[total - 1 - k] = b->id;
	p->len = kept;
	p->id[p->len++] = best->id;
}

void sim_hw_iteration(struct sim *s)
{
	s->iterations++;
	if (s->c->snapshot && !s->snapshot_done && s->c->snapshot_at < 0)
		sim_snapshot(s, SIM_SNAP_ITERATION, s->now);
	if (s->c->hw == SIM_HW_BALANCE)
		sim_balance_iteration(s);
	if (s->c->hw != SIM_HW_POLICY)
		return;
	double wall = s->now - s->iter_start;
	s->iter_start = s->now;
	if (wall <= 0)
		return;
	const struct sim_ent **best = calloc(s->nv, sizeof(*best));
	double *best_cpu = calloc(s->nv, sizeof(*best_cpu));
	if (!best || !best_cpu) {
		free(best);
		free(best_cpu);
		sim_fail(s, "out of memory in an iteration");
		return;
	}
	for (unsigned t = 0; t < s->w->nb_threads; t++) {
		const struct sim_ent *e = &s->thread[t];
		double cpu = e->cpu + (e->state == SIM_T_RUNNING ? s->now - e->ready_at : 0);
		double d = cpu - s->cpu_mark[t];
		s->cpu_mark[t] = cpu;
		int v = e->state == SIM_T_RUNNING ? e->vp : e->last_vp;
		if (v >= 0 && d > best_cpu[v]) {
			best_cpu[v] = d;
			best[v] = e;
		}
	}
	for (unsigned v = 0; v < s->nv; v++) {
		struct sim_vp *p = &s->vp[v];
		double idle = p->idle_total + (p->idle_since >= 0 ? s->now - p->idle_since : 0);
		double d = idle - p->idle_mark;
		p->idle_mark = idle;
		if (d > wall)
			d = wall;
		s->samples[v] = (struct ma_hw_sample){ .run = wall - d, .wait = d };
		sim_hw_path(s, v, best[v]);
	}
	free(best);
	free(best_cpu);
	ma_hw_units(s->path, s->st.slot, s->nv, s->unit);
	ma_hw_samples_pool(s->samples, s->unit, s->nv, s->pooled);
	ma_hw_policy_step(&s->params, &s->st, s->pooled);
	ma_hw_levels_fit(s->st.slot, s->nv, s->m->hw_lo, s->m->hw_hi, s->fit);
	int changed = 0;
	for (unsigned v = 0; v < s->nv; v++)
		if (s->vp[v].level != s->fit[v]) {
			s->vp[v].level = s->fit[v];
			changed = 1;
			sim_trace_event(s, "i", v, "hwprio", (uint64_t)(int64_t)s->fit[v]);
		}
	if (!changed)
		return;
	s->hw_changes++;
	/* New levels, new speeds on every core. */
	for (unsigned v = 0; v < s->nv; v++)
		if (s->vp[v].core >= 0 && (v == 0 || s->vp[v].core != s->vp[v - 1].core))
			sim_core_rates(s, s->vp[v].core);
}
