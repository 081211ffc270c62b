/*
 * The machine model: how fast a thread computes on a VP, now. Three factors multiply
 * (doc/simulator.md gives each parameter and where its value comes from):
 *  - the core kind's speed;
 *  - the SMT siblings: alone on its core a thread runs at 1; with busy siblings it gets a
 *    share of the core (two x86 siblings computing with resource profiles: the 001 seed's
 *    measured speed of that pair). POWER5 splits decode slots by priority (seed 002: of every
 *    R = 2^(|dP|+1) cycles the higher context gets R-1), and a context's speed follows
 *    its share as smt_pair * (2 share)^e, e = smt_up above an even share and smt_down
 *    below: two parameters fitted on the seeds' static MetBench runs instead of a curve
 *    the seeds do not give. x86 SMT has no priority: siblings share evenly, and a lowered
 *    one (smt-quiet) is quiet a share of its time, during which the other runs alone;
 *  - memory: a fraction `mem` of the work is memory access, numa_factor times slower
 *    when the thread's memory (first touched) is on another NUMA node, and slower when
 *    more threads draw on that node's memory than its bandwidth serves (bandwidth.c).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ma_sim_int.h"

/* POWER5: the speed of a context whose priority is d above its sibling's. */
static double sim_power5(const struct sim_machine *m, int d)
{
	if (!d)
		return m->smt_pair;
	int a = d < 0 ? -d : d;
	double r = (double)(1u << (a + 1)), share = d > 0 ? (r - 1) / r : 1 / r;
	double sp = m->smt_pair * pow(2 * share, d > 0 ? m->smt_up : m->smt_down);
	return sp > 1 ? 1 : sp;
}

/* Whether VP u competes for its core now: it runs a thread, or it keeps its share while
 * waiting (smt_idle_release 0: a polling wait). */
static int sim_competes(const struct sim *s, unsigned u)
{
	return s->vp[u].cur || !s->m->smt_idle_release;
}

/* The share of time VP u's thread is quiet at its level (smt-quiet: lowered only). */
static double sim_quiet(const struct sim *s, unsigned u)
{
	int l = sim_hw_level_of(s, u);
	double q = l < 0 ? -l * s->m->quiet_share : 0;
	return q > 1 ? 1 : q;
}

/*
 * The speed of a thread computing with profile r beside one computing with c on the
 * other context of its core, relative to alone: the 001 seed's Table 1 and 2 (the second
 * of the two figures each cell holds, as the totals and the text have them), over the
 * times alone its HT-off rows give (two programs in turns on one processor take twice as
 * long: INT 171.4 s, FP 134.25 s, INT 172.5 s and L2C 246.15 s). INT beside INT is the mean
 * of the two tables' (0.541, 0.543). The seed ran no FP beside L2C: 0, the machine's
 * smt_pair.
 */
static const double sim_pair_speed[SIM_PROF_NB][SIM_PROF_NB] = {
	[SIM_PROF_INT] = { [SIM_PROF_INT] = 0.542, [SIM_PROF_FP] = 0.635, [SIM_PROF_L2C] = 0.593 },
	[SIM_PROF_FP] = { [SIM_PROF_INT] = 0.573, [SIM_PROF_FP] = 0.524 },
	[SIM_PROF_L2C] = { [SIM_PROF_INT] = 0.561, [SIM_PROF_L2C] = 0.535 },
};

/* The profile thread t computes with now (none between two phases: the engine sets the
 * speeds of its whole core again when it takes the next). */
static unsigned sim_profile_now(const struct sim_ent *t)
{
	return t->phase.kind == SIM_COMPUTE && t->remaining > 0 ? t->phase.profile : SIM_PROF_NONE;
}

/* The even pair's speed of VP v's thread beside VP u's: by their profiles where the seed
 * measured that pair, else `even`. */
static double sim_pair(const struct sim *s, unsigned v, unsigned u, double even)
{
	const struct sim_ent *a = s->vp[v].cur, *b = s->vp[u].cur;
	if (!a || !b)
		return even;
	unsigned pa = sim_profile_now(a), pb = sim_profile_now(b);
	double x = pa < SIM_PROF_NB && pb < SIM_PROF_NB ? sim_pair_speed[pa][pb] : 0;
	return x > 0 ? x : even;
}

static double sim_smt_factor(const struct sim *s, unsigned v)
{
	const struct sim_machine *m = s->m;
	unsigned others = 0, sib = v;
	for (unsigned u = s->topo.levels[s->vp[v].core].first_vp, e = u + s->topo.levels[s->vp[v].core].nb_vps;
	     u < e && u < s->nv; u++)
		if (u != v && s->vp[u].core == s->vp[v].core && sim_competes(s, u)) {
			others++;
			sib = u;
		}
	if (!others)
		return 1;
	if (m->smt_model == SIM_SMT_POWER5 && others == 1) {
		/* Decode slots speed the computation; a memory access waits as long whatever
		 * the priority (the thesis: memory-bound codes gain little from one), at the
		 * even pair's speed. */
		double cpu = sim_power5(m, sim_hw_level_of(s, v) - sim_hw_level_of(s, sib));
		double mem = s->vp[v].cur ? s->vp[v].cur->phase.mem : 0;
		return mem > 0 ? 1 / ((1 - mem) / cpu + mem / m->smt_pair) : cpu;
	}
	/* Even shares among k contexts: two get smt_pair each, more split the pair's
	 * throughput. */
	double even = m->smt_pair * 2 / (double)(others + 1);
	if (others == 1) {
		/* smt-quiet: while the sibling is quiet this one runs alone; while this one is
		 * quiet it does nothing. */
		double qs = sim_quiet(s, sib), qv = sim_quiet(s, v);
		return (1 - qv) * ((1 - qs) * sim_pair(s, v, sib, even) + qs * 1.0);
	}
	return even;
}

double sim_speed(const struct sim *s, const struct sim_ent *t, unsigned v)
{
	const struct sim_machine *m = s->m;
	double k = 1;
	int kind = s->vp[v].kind;
	if (kind >= 0 && (unsigned)kind < s->nb_kinds)
		k = s->kind_speed[kind];
	/* The memory part: numa_factor times slower from another node, and slower again
	 * when its node's bandwidth is shared by more streams than it serves. */
	double mem = 1, r = 1, x = sim_bw_slow(s, t->home_node);
	if (t->home_node >= 0 && s->vp[v].node >= 0 && t->home_node != s->vp[v].node)
		r = m->numa_factor;
	if (r != 1 || x != 1)
		mem = 1 / ((1 - t->phase.mem) + t->phase.mem * r * x);
	return k * sim_smt_factor(s, v) * mem;
}

int sim_kind_speeds(struct sim *s)
{
	unsigned n = s->topo.nb_cpukinds;
	s->kind_speed = calloc(n ? n : 1, sizeof(double));
	if (!s->kind_speed)
		return ENOMEM;
	s->nb_kinds = n;
	double fmax = 0;
	for (unsigned k = 0; k < n; k++) {
		struct hwloc_info_s *infos = NULL;
		unsigned nr = 0;
		int eff;
		s->kind_speed[k] = 0;
		if (hwloc_cpukinds_get_info(s->topo.hw, k, NULL, &eff, &nr, &infos, 0) < 0)
			continue;
		for (unsigned i = 0; i < nr; i++)
			if (!strcmp(infos[i].name, "FrequencyMaxMHz"))
				s->kind_speed[k] = strtod(infos[i].value, NULL);
		if (s->kind_speed[k] > fmax)
			fmax = s->kind_speed[k];
	}
	/* A kind without a frequency: nothing to compare, every kind runs at 1. */
	for (unsigned k = 0; k < n; k++)
		if (!(s->kind_speed[k] > 0))
			fmax = 0;
	for (unsigned k = 0; k < n; k++)
		s->kind_speed[k] = fmax > 0 ? s->kind_speed[k] / fmax : 1;
	return 0;
}

void sim_machine_defaults(struct sim_machine *m)
{
	*m = (struct sim_machine){
		.topology = "pack:1 core:2",
		.numa_factor = 3,
		.smt_pair = 0.65,
		.smt_model = SIM_SMT_SHARE,
		.smt_up = 1.37,
		.smt_down = 0.89,
		.smt_idle_release = 1,
		.quiet_share = 0.25,
		.migrate_s = 20e-6,
		.timeslice_s = 0.01,
		.wake_s = 5e-6,
		.hw_lo = -2,
		.hw_hi = 2,
	};
}

int sim_machine_preset(struct sim_machine *m, const char *name)
{
	if (!strcmp(name, "power5")) {
		/* The OpenPower 710 of seed 002: one POWER5, 2 cores of 2 contexts; HPCSched's
		 * priorities 4..6 are levels 0..2; smt_pair, smt_up and smt_down fitted on its
		 * MetBench table (doc/simulator.md). */
		m->topology = "core:2 pu:2";
		m->smt = 1;
		m->smt_model = SIM_SMT_POWER5;
		m->smt_pair = 0.463;
		m->smt_up = 1.37;
		m->smt_down = 0.89;
		m->smt_idle_release = 1;
		/* Linux 2.6.24's CFS: a woken rank competes with every process; fitted on
		 * SIESTA's baseline against Uniform (Table VI). */
		m->sched_latency_s = 580e-6;
		m->hw_lo = 0;
		m->hw_hi = 2;
		return 0;
	}
	if (!strcmp(name, "itanium16")) {
		/* The Bull NovaScale of seed 003: 4 NUMA blocks of 4 Itanium II. A block's
		 * memory serves 0.99 streams: fitted on the pinned conduction run (15.82x on
		 * 16), whose 4 threads per block are a quarter of their time in memory. */
		m->topology = "numa:4 core:4";
		m->smt = 0;
		m->numa_factor = 3;
		m->node_bw = 0.99;
		return 0;
	}
	if (!strcmp(name, "xeon-ht")) {
		/* The 001 seed's dual Xeon: 2 packages of one core with Hyper-Threading. Pairs
		 * of programs with profiles run at the seed's measured speeds (sim_pair_speed);
		 * other pairs at INT beside INT's. */
		m->topology = "pack:2 core:1 pu:2";
		m->smt = 1;
		m->smt_model = SIM_SMT_SHARE;
		m->smt_pair = 0.542;
		m->hw_lo = -2;
		m->hw_hi = 0;
		return 0;
	}
	if (!strcmp(name, "x86smt")) {
		/* A 4-core x86 with Hyper-Threading: no priorities, smt-quiet's levels. */
		m->topology = "pack:1 core:4 pu:2";
		m->smt = 1;
		m->smt_model = SIM_SMT_SHARE;
		m->smt_pair = 0.6;
		m->hw_lo = -2;
		m->hw_hi = 0;
		return 0;
	}
	return EINVAL;
}
