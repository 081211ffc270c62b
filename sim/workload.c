/*
 * The workload models: a thread's program is generated phase by phase (no table of every
 * phase is kept, so 4096 threads of 100 iterations cost nothing to describe). A spec is
 * `NAME[:KEY=VALUE]...`; sim_workload_list prints each with its keys.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ma_workload.h"

/* What every generator here keeps. */
struct sim_gen {
	unsigned long iters;
	double *work;               /* per thread, per iteration (metbench: its load) */
	double mem;                 /* fraction of the work that is memory access */
	unsigned long swap;         /* metbench: loads reversed every `swap` iterations */
	unsigned n;
	/* stencil imbalance: a band of rows an eighth of the grid wide costs HOT_COST times
	 * more and moves from the first row to the last over the run (examples/conduction's
	 * --imbalance) */
	int imbalance;
	double rows, row_cost;
};

#define SIM_HOT_COST 8 /* examples/conduction/kernel.c's */

/* Work of stripe t at iteration it under the moving band. */
static double sim_band_work(const struct sim_gen *g, unsigned t, unsigned long it)
{
	double lo = g->rows * t / g->n, hi = g->rows * (t + 1) / g->n;
	double width = g->rows / 8, span = g->rows - width;
	double b0 = g->iters > 1 ? span * (double)it / (double)(g->iters - 1) : 0, b1 = b0 + width;
	double hot = (hi < b1 ? hi : b1) - (lo > b0 ? lo : b0);
	if (hot < 0)
		hot = 0;
	return g->row_cost * ((hi - lo) + (SIM_HOT_COST - 1) * hot);
}

int sim_werr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return EINVAL;
}

/* Iterative codes: compute, then barrier 0, `iters` times. */
static void sim_iterative_next(const struct sim_workload *w, unsigned t, unsigned long n, struct sim_phase *p)
{
	const struct sim_gen *g = w->data;
	unsigned long it = n / 2;
	if (it >= g->iters) {
		*p = (struct sim_phase){ .kind = SIM_END };
		return;
	}
	if (n % 2) {
		*p = (struct sim_phase){ .kind = SIM_BARRIER, .id = 0 };
		return;
	}
	unsigned who = t;
	/* MetBenchVar: every `swap` iterations the loads are reversed (rank i gets rank
	 * n-1-i's), which swaps the heavy and the light rank of each pair. */
	if (g->swap && (it / g->swap) % 2)
		who = g->n - 1 - t;
	double work = g->imbalance ? sim_band_work(g, who, it) : g->work[who];
	*p = (struct sim_phase){ .kind = SIM_COMPUTE, .work = work, .mem = g->mem };
}

char *sim_next_kv(char **cursor, char **val)
{
	char *p = *cursor;
	if (!p || !*p)
		return NULL;
	char *end = strchr(p, ':');
	if (end)
		*end++ = 0;
	*cursor = end;
	char *eq = strchr(p, '=');
	*val = NULL;
	if (eq) {
		*eq = 0;
		*val = eq + 1;
	}
	return p;
}

int sim_num(const char *key, const char *val, double lo, double hi, double *out, char *err, size_t errlen)
{
	char *end;
	double x = val ? strtod(val, &end) : 0;
	if (!val || !*val || *end || !(x >= lo && x <= hi))
		return sim_werr(err, errlen, "%s=%s: expected a number from %g to %g", key, val ? val : "", lo, hi);
	*out = x;
	return 0;
}

/* n numbers from 0 up to hi (integers if integer) separated by commas, from list (the
 * value of key) into out[]: 0, or EINVAL naming `what`; `kind` says what is expected,
 * `noun` what they are counted as ("numbers", "VPs"). */
static int sim_list(const char *what, const char *key, const char *list, unsigned n, double hi, int integer,
		    const char *kind, const char *noun, double *out, char *err, size_t errlen)
{
	const char *p = list;
	for (unsigned t = 0; t < n; t++) {
		char *end;
		double x = strtod(p, &end);
		if (end == p || !(x >= 0 && x <= hi) || (integer && x != (double)(long)x) || (*end && *end != ','))
			return sim_werr(err, errlen, "%s: %s=%s: expected %u %s separated by commas", what, key, list, n,
					kind);
		out[t] = x;
		p = *end ? end + 1 : end;
		if (!*end && t + 1 < n)
			return sim_werr(err, errlen, "%s: %s=%s: %u %s for %u ranks", what, key, list, t + 1, noun, n);
	}
	if (*p)
		return sim_werr(err, errlen, "%s: %s=%s: more %s than the %u ranks", what, key, list, noun, n);
	return 0;
}

int sim_loads_list(const char *what, const char *list, unsigned n, double unit, double *out, char *err, size_t errlen)
{
	int e = sim_list(what, "loads", list, n, HUGE_VAL, 0, "non-negative numbers", "numbers", out, err, errlen);
	for (unsigned t = 0; !e && t < n; t++)
		out[t] *= unit;
	return e;
}

int sim_pin_list(const char *what, const char *list, unsigned n, unsigned nb_vps, int *pin, char *err, size_t errlen)
{
	double *x = calloc(n ? n : 1, sizeof(double));
	char kind[48];
	if (!x)
		return sim_werr(err, errlen, "%s: pin=%s: out of memory", what, list);
	snprintf(kind, sizeof(kind), "VP numbers below %u", nb_vps);
	int e = sim_list(what, "pin", list, n, nb_vps - 1.0, 1, kind, "VPs", x, err, errlen);
	for (unsigned t = 0; !e && t < n; t++)
		pin[t] = (int)x[t];
	free(x);
	return e;
}

static int sim_alloc_common(struct sim_workload *w, unsigned n, unsigned nb_bubbles)
{
	w->nb_threads = n;
	w->nb_bubbles = nb_bubbles;
	w->thread_bubble = calloc(n ? n : 1, sizeof(int));
	w->bubbles = calloc(nb_bubbles ? nb_bubbles : 1, sizeof(*w->bubbles));
	w->pin = calloc(n ? n : 1, sizeof(int));
	w->nb_barriers = 1;
	w->barrier_count = calloc(1, sizeof(unsigned));
	struct sim_gen *g = calloc(1, sizeof(*g));
	w->data = g;
	if (!w->thread_bubble || !w->bubbles || !w->pin || !w->barrier_count || !g)
		return ENOMEM;
	g->work = calloc(n ? n : 1, sizeof(double));
	if (!g->work)
		return ENOMEM;
	g->n = n;
	w->barrier_count[0] = n;
	for (unsigned t = 0; t < n; t++)
		w->thread_bubble[t] = w->pin[t] = -1;
	w->next = sim_iterative_next;
	return 0;
}

/* metbench:ranks=N:loads=L,L,...:unit=S:iters=T[:swap=K][:bubble][:pin] */
static int sim_metbench(struct sim_workload *w, char *args, unsigned nb_vps, char *err, size_t errlen, int var)
{
	double ranks = 4, unit = 1, iters = var ? 45 : 10, swap = var ? 15 : 0, mem = 0;
	char *loads = NULL, *pins = NULL, *key, *val;
	int bubble = 0, pin = 0;
	while ((key = sim_next_kv(&args, &val))) {
		int e = 0;
		if (!strcmp(key, "ranks"))
			e = sim_num(key, val, 1, 65536, &ranks, err, errlen);
		else if (!strcmp(key, "unit"))
			e = sim_num(key, val, 1e-9, 1e6, &unit, err, errlen);
		else if (!strcmp(key, "iters"))
			e = sim_num(key, val, 1, 1e7, &iters, err, errlen);
		else if (!strcmp(key, "swap"))
			e = sim_num(key, val, 0, 1e7, &swap, err, errlen);
		else if (!strcmp(key, "mem"))
			e = sim_num(key, val, 0, 1, &mem, err, errlen);
		else if (!strcmp(key, "loads") && val)
			loads = val;
		else if (!strcmp(key, "bubble") && !val)
			bubble = 1;
		else if (!strcmp(key, "pin") && !val)
			pin = 1;
		else if (!strcmp(key, "pin") && val)
			pins = val;
		else
			return sim_werr(err, errlen, "metbench: '%s' is not one of ranks=, loads=, unit=, iters=, swap=, mem=, "
					"bubble, pin, pin=VP,VP,...", key);
		if (e)
			return e;
	}
	unsigned n = (unsigned)ranks;
	if (sim_alloc_common(w, n, bubble ? 1 : 0))
		return ENOMEM;
	struct sim_gen *g = w->data;
	g->iters = (unsigned long)iters;
	g->swap = (unsigned long)swap;
	g->mem = mem;
	/* Default loads: MetBench's, a light rank (a quarter) beside each heavy one. */
	for (unsigned t = 0; t < n; t++)
		g->work[t] = (t % 2 ? 1.0 : 0.25) * unit;
	if (loads && sim_loads_list("metbench", loads, n, unit, g->work, err, errlen))
		return EINVAL;
	for (unsigned t = 0; t < n; t++) {
		w->thread_bubble[t] = bubble ? 0 : -1;
		w->pin[t] = pin ? (int)(t % nb_vps) : -1;
	}
	/* pin=VP,VP,...: rank i on the i-th VP listed (the seeds' pairings). */
	if (pins && sim_pin_list("metbench", pins, n, nb_vps, w->pin, err, errlen))
		return EINVAL;
	if (bubble)
		w->bubbles[0].parent = -1;
	snprintf(w->desc, sizeof(w->desc), "%s: %u ranks, %lu iterations%s%s%s", var ? "MetBenchVar" : "MetBench", n,
		 g->iters, g->swap ? ", loads swapped periodically" : "", bubble ? ", one bubble" : "",
		 pin || pins ? ", pinned" : "");
	return 0;
}

/* The conduction port's bubble tree (examples/conduction/marcel.c): stripes [lo, hi) in
 * one bubble if three or fewer, else two halves in one. Returns the bubble's index. */
static int sim_stencil_group(struct sim_workload *w, unsigned lo, unsigned hi, int parent)
{
	int b = (int)w->nb_bubbles++;
	w->bubbles[b].parent = parent;
	if (hi - lo <= 3) {
		for (unsigned s = lo; s < hi; s++)
			w->thread_bubble[s] = b;
		return b;
	}
	unsigned mid = (lo + hi) / 2;
	sim_stencil_group(w, lo, mid, b);
	sim_stencil_group(w, mid, hi, b);
	return b;
}

/* stencil:threads=N:iters=T:work=S:mem=M[:flat|:pin] -- conduction and advection: one
 * stripe per thread, a barrier per iteration, the memory first touched by the stripe's
 * thread; bubbles after the data (as conduction/marcel.c) unless flat or pinned. */
static int sim_stencil(struct sim_workload *w, char *args, unsigned nb_vps, char *err, size_t errlen)
{
	double threads = nb_vps, iters = 100, work = 1, mem = 0.3, rows = 1024;
	int flat = 0, pin = 0, imbalance = 0;
	char *key, *val;
	while ((key = sim_next_kv(&args, &val))) {
		int e = 0;
		if (!strcmp(key, "threads"))
			e = sim_num(key, val, 1, 1 << 20, &threads, err, errlen);
		else if (!strcmp(key, "iters"))
			e = sim_num(key, val, 1, 1e7, &iters, err, errlen);
		else if (!strcmp(key, "work"))
			e = sim_num(key, val, 1e-9, 1e9, &work, err, errlen);
		else if (!strcmp(key, "mem"))
			e = sim_num(key, val, 0, 1, &mem, err, errlen);
		else if (!strcmp(key, "rows"))
			e = sim_num(key, val, 1, 1e9, &rows, err, errlen);
		else if (!strcmp(key, "flat") && !val)
			flat = 1;
		else if (!strcmp(key, "pin") && !val)
			pin = 1;
		else if (!strcmp(key, "imbalance") && !val)
			imbalance = 1;
		else
			return sim_werr(err, errlen, "stencil: '%s' is not one of threads=, iters=, work=, mem=, rows=, flat, "
					"pin, imbalance", key);
		if (e)
			return e;
	}
	unsigned n = (unsigned)threads;
	/* At most 2n - 1 bubbles in the tree of halves. */
	if (sim_alloc_common(w, n, 2 * n))
		return ENOMEM;
	w->nb_bubbles = 0;
	struct sim_gen *g = w->data;
	g->iters = (unsigned long)iters;
	g->mem = mem;
	/* `work` is the whole grid's per iteration, split evenly among the stripes. */
	g->imbalance = imbalance;
	g->rows = rows;
	g->row_cost = work / rows;
	/* Fixed deals the stripes out in blocks, as examples/conduction/fixed.c does: stripe i
	 * on VP i * VPs / stripes, neighbours together. */
	for (unsigned t = 0; t < n; t++) {
		g->work[t] = work / n;
		w->pin[t] = pin ? (int)((unsigned long)t * nb_vps / n) : -1;
	}
	if (!flat && !pin)
		sim_stencil_group(w, 0, n, -1);
	snprintf(w->desc, sizeof(w->desc), "stencil: %u stripes, %lu iterations, %g s of work per iteration%s, %s", n,
		 g->iters, work, imbalance ? " and a moving costly band" : "",
		 pin ? "pinned (Fixed)" : flat ? "no bubbles (Simple)" : "bubbles after the data");
	return 0;
}

/* replay:file=PATH[:scale=X][:mem=M] */
static int sim_replay(struct sim_workload *w, char *args, char *err, size_t errlen)
{
	double scale = 1, mem = 0;
	const char *file = NULL;
	char *key, *val;
	while ((key = sim_next_kv(&args, &val))) {
		int e = 0;
		if (!strcmp(key, "file") && val && *val)
			file = val;
		else if (!strcmp(key, "scale"))
			e = sim_num(key, val, 1e-6, 1e6, &scale, err, errlen);
		else if (!strcmp(key, "mem"))
			e = sim_num(key, val, 0, 1, &mem, err, errlen);
		else
			return sim_werr(err, errlen, "replay: '%s' is not one of file=, scale=, mem=", key);
		if (e)
			return e;
	}
	if (!file)
		return sim_werr(err, errlen, "replay: file=PATH is missing (a MARCEL_TRACE file)");
	return sim_replay_make(w, file, scale, mem, err, errlen);
}

static const struct {
	const char *name, *help;
} sim_workloads[] = {
	{ "metbench", "ranks=N loads=L,.. unit=S iters=T swap=K mem=M bubble pin|pin=VP,..: per-rank loads, a barrier per iteration" },
	{ "metbenchvar", "as metbench, the heavy and light ranks swapped every swap=K (15) iterations, 45 iterations" },
	{ "stencil", "threads=N iters=T work=S mem=M rows=R flat|pin imbalance: conduction/advection stripes, bubbles after the data" },
	{ "btmz", "ranks=R zones=X ratio=Q iters=T unit=S threads=N assign=block|greedy mem=M pin|pin=VP,..: NPB BT-MZ, "
		  "uneven zones, halo exchanges with neighbour ranks" },
	{ "sumtime", "depth=D leaf=S node=S mem=M flat: a spawn tree, each pair of children in a bubble in its parent's" },
	{ "mix", "apps=N/S/P/K,... mem=M: applications in bubbles, each K iterations of a serial phase S and a parallel "
		 "one P" },
	{ "replay", "file=TRACE scale=X mem=M: a MARCEL_TRACE file's threads, their slices as computation, gaps as waits" },
	{ "siesta", "ranks=R loads=L,.. unit=S iters=T phases=K mem=M pin|pin=VP,..: the 002 seed's SIESTA, many short "
		    "phases per iteration, each ending in a rendezvous with every other rank" },
	{ "contend", "progs=INT|FP|L2C[*K],... reps=R | shells=1|2, unit=S nohints pin=VP,..: the 001 seed's SPEC programs "
		     "on SMT siblings, with their load metrics" },
};

void sim_workload_list(FILE *out)
{
	for (unsigned i = 0; i < sizeof(sim_workloads) / sizeof(sim_workloads[0]); i++)
		fprintf(out, "%-12s %s\n", sim_workloads[i].name, sim_workloads[i].help);
}

int sim_workload_make(struct sim_workload *w, const char *spec, unsigned nb_vps, char *err, size_t errlen)
{
	memset(w, 0, sizeof(*w));
	char *copy = strdup(spec ? spec : "");
	if (!copy)
		return ENOMEM;
	char *args = strchr(copy, ':');
	if (args)
		*args++ = 0;
	int e;
	unsigned which = 0, nb = sizeof(sim_workloads) / sizeof(sim_workloads[0]);
	while (which < nb && strcmp(copy, sim_workloads[which].name))
		which++;
	if (which == nb)
		e = sim_werr(err, errlen, "workload '%s' is not one of: metbench, metbenchvar, stencil, btmz, sumtime, "
			     "mix, replay, siesta, contend", copy);
	else if (!strcmp(copy, "metbench") || !strcmp(copy, "metbenchvar"))
		e = sim_metbench(w, args, nb_vps, err, errlen, !strcmp(copy, "metbenchvar"));
	else if (!strcmp(copy, "stencil"))
		e = sim_stencil(w, args, nb_vps, err, errlen);
	else if (!strcmp(copy, "btmz"))
		e = sim_btmz(w, args, nb_vps, err, errlen);
	else if (!strcmp(copy, "sumtime"))
		e = sim_sumtime(w, args, err, errlen);
	else if (!strcmp(copy, "mix"))
		e = sim_mix(w, args, err, errlen);
	else if (!strcmp(copy, "siesta"))
		e = sim_siesta(w, args, nb_vps, err, errlen);
	else if (!strcmp(copy, "contend"))
		e = sim_contend(w, args, nb_vps, err, errlen);
	else
		e = sim_replay(w, args, err, errlen);
	if (!e && which < nb && !w->name)
		w->name = sim_workloads[which].name;
	free(copy);
	if (e)
		sim_workload_free(w);
	return e;
}

void sim_workload_free(struct sim_workload *w)
{
	if (w->free_data) {
		w->free_data(w);
	} else {
		struct sim_gen *g = w->data;
		if (g)
			free(g->work);
		free(g);
	}
	free(w->thread_bubble);
	free(w->bubbles);
	free(w->pin);
	free(w->barrier_count);
	free(w->dormant);
	free(w->master);
	free(w->metric);
	memset(w, 0, sizeof(*w));
}

double sim_apps_gmean(const struct sim_workload *w, const struct sim_result *r, unsigned *nb_apps)
{
	/* Per top bubble, its last thread's end; a thread outside every bubble alone. */
	double *end = calloc(w->nb_bubbles ? w->nb_bubbles : 1, sizeof(double)), logs = 0;
	unsigned n = 0;
	for (unsigned t = 0; end && t < w->nb_threads && t < r->nb_threads; t++) {
		int b = w->thread_bubble[t];
		if (b < 0) {
			logs += log(r->thread[t].end > 0 ? r->thread[t].end : 1e-12);
			n++;
			continue;
		}
		while (w->bubbles[b].parent >= 0)
			b = w->bubbles[b].parent;
		if (r->thread[t].end > end[b])
			end[b] = r->thread[t].end;
	}
	for (unsigned b = 0; end && b < w->nb_bubbles; b++)
		if (w->bubbles[b].parent < 0 && end[b] > 0) {
			logs += log(end[b]);
			n++;
		}
	free(end);
	*nb_apps = n;
	return n ? exp(logs / n) : 0;
}
