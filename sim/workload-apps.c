/*
 * Workloads with more structure than one barrier per iteration: BT-MZ (zones of uneven
 * sizes dealt to ranks that exchange halos with their neighbours only), nested spawn
 * trees (sumtime), and mixes of applications with serial phases (the 004 seed's
 * multi-application workloads). Each generates its threads' phases on demand, as
 * workload.c's do.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ma_workload.h"

/* ---- BT-MZ ---- */

struct sim_btmz {
	unsigned ranks, threads;    /* threads per rank */
	unsigned long iters;
	double mem;
	double *work;               /* per rank, per iteration */
	unsigned *nb_nbr;           /* per rank, its neighbours */
	unsigned *nbr;              /* ranks x ranks */
};

static void sim_btmz_free(struct sim_workload *w)
{
	struct sim_btmz *z = w->data;
	if (z) {
		free(z->work);
		free(z->nb_nbr);
		free(z->nbr);
	}
	free(z);
}

/* A rank's master (its first thread) exchanges with its neighbours' masters. */
static unsigned sim_btmz_neighbours(const struct sim_workload *w, unsigned t, unsigned *out, unsigned max)
{
	const struct sim_btmz *z = w->data;
	if (t % z->threads)
		return 0;
	unsigned r = t / z->threads, n = 0;
	for (unsigned i = 0; i < z->nb_nbr[r] && n < max; i++)
		out[n++] = z->nbr[r * z->ranks + i] * z->threads;
	return n;
}

/*
 * Per iteration, a rank's threads compute their share of its zones; with one thread, the
 * rank then exchanges. With several, they meet at the rank's barrier (the end of an
 * OpenMP loop), the master exchanges, and they meet again.
 */
static void sim_btmz_next(const struct sim_workload *w, unsigned t, unsigned long n, struct sim_phase *p)
{
	const struct sim_btmz *z = w->data;
	unsigned per = z->threads > 1 ? 4 : 2, r = t / z->threads;
	unsigned long it = n / per;
	if (it >= z->iters) {
		*p = (struct sim_phase){ .kind = SIM_END };
		return;
	}
	switch (n % per) {
	case 0:
		*p = (struct sim_phase){ .kind = SIM_COMPUTE, .work = z->work[r] / z->threads, .mem = z->mem };
		return;
	case 1:
		*p = per == 2 ? (struct sim_phase){ .kind = SIM_EXCHANGE }
			      : (struct sim_phase){ .kind = SIM_BARRIER, .id = (int)r };
		return;
	case 2:
		*p = t % z->threads ? (struct sim_phase){ .kind = SIM_COMPUTE } : (struct sim_phase){ .kind = SIM_EXCHANGE };
		return;
	default:
		*p = (struct sim_phase){ .kind = SIM_BARRIER, .id = (int)r };
	}
}

/* Adds rank b to rank a's neighbours once. */
static void sim_btmz_link(struct sim_btmz *z, unsigned a, unsigned b)
{
	if (a == b)
		return;
	for (unsigned i = 0; i < z->nb_nbr[a]; i++)
		if (z->nbr[a * z->ranks + i] == b)
			return;
	z->nbr[a * z->ranks + z->nb_nbr[a]++] = b;
}

/*
 * btmz:ranks=R:zones=X:ratio=Q:iters=T:unit=S:threads=N:assign=block|greedy:mem=M[:pin|:pin=..]
 *
 * NPB's BT-MZ: an X by X grid of zones whose widths grow geometrically along each axis,
 * so that the largest zone is Q times the smallest (about 20 in NPB); a zone's work is
 * its area. `block` deals the zones to the ranks in row-major blocks (rows of zones for
 * 4 ranks of 4x4: the imbalance of the 002 seed's run); `greedy` gives each zone, the
 * largest first, to the least loaded rank (NPB's own mapping). Zones exchange halos with
 * their four neighbours on the periodic grid, so a rank waits only for the ranks that
 * own zones beside its own.
 */
int sim_btmz(struct sim_workload *w, char *args, unsigned nb_vps, char *err, size_t errlen)
{
	double ranks = 4, zones = 4, ratio = 20, iters = 200, unit = 1, threads = 1, mem = 0;
	int greedy = 0, pin = 0;
	const char *pins = NULL;
	char *key, *val;
	while ((key = sim_next_kv(&args, &val))) {
		int e = 0;
		if (!strcmp(key, "ranks"))
			e = sim_num(key, val, 1, 4096, &ranks, err, errlen);
		else if (!strcmp(key, "zones"))
			e = sim_num(key, val, 1, 256, &zones, err, errlen);
		else if (!strcmp(key, "ratio"))
			e = sim_num(key, val, 1, 1e6, &ratio, err, errlen);
		else if (!strcmp(key, "iters"))
			e = sim_num(key, val, 1, 1e7, &iters, err, errlen);
		else if (!strcmp(key, "unit"))
			e = sim_num(key, val, 1e-9, 1e6, &unit, err, errlen);
		else if (!strcmp(key, "threads"))
			e = sim_num(key, val, 1, 1024, &threads, err, errlen);
		else if (!strcmp(key, "mem"))
			e = sim_num(key, val, 0, 1, &mem, err, errlen);
		else if (!strcmp(key, "assign") && val && (!strcmp(val, "block") || !strcmp(val, "greedy")))
			greedy = !strcmp(val, "greedy");
		else if (!strcmp(key, "pin") && !val)
			pin = 1;
		else if (!strcmp(key, "pin") && val)
			pins = val;
		else
			return sim_werr(err, errlen, "btmz: '%s%s%s' is not one of ranks=, zones=, ratio=, iters=, unit=, "
					"threads=, mem=, assign=block|greedy, pin, pin=VP,VP,...", key, val ? "=" : "",
					val ? val : "");
		if (e)
			return e;
	}
	unsigned R = (unsigned)ranks, X = (unsigned)zones, T = (unsigned)threads, Z = X * X;
	if (R > Z)
		return sim_werr(err, errlen, "btmz: ranks=%u: more ranks than the %u zones (zones=%u gives %u by %u)", R, Z,
				X, X, X);
	struct sim_btmz *z = calloc(1, sizeof(*z));
	w->data = z;
	w->free_data = sim_btmz_free;
	if (!z)
		return ENOMEM;
	z->ranks = R;
	z->threads = T;
	z->iters = (unsigned long)iters;
	z->mem = mem;
	z->work = calloc(R, sizeof(double));
	z->nb_nbr = calloc(R, sizeof(unsigned));
	z->nbr = calloc((size_t)R * R, sizeof(unsigned));
	unsigned *owner = calloc(Z, sizeof(unsigned));
	double *size = calloc(Z, sizeof(double)), *width = calloc(X, sizeof(double));
	w->nb_threads = R * T;
	w->thread_bubble = calloc(w->nb_threads, sizeof(int));
	w->pin = calloc(w->nb_threads, sizeof(int));
	w->nb_bubbles = T > 1 ? R : 0;
	w->bubbles = calloc(R, sizeof(*w->bubbles));
	w->nb_barriers = R;
	w->barrier_count = calloc(R, sizeof(unsigned));
	int e = 0;
	if (!z->work || !z->nb_nbr || !z->nbr || !owner || !size || !width || !w->thread_bubble || !w->pin ||
	    !w->bubbles || !w->barrier_count)
		e = ENOMEM;
	/* Widths r^i along each axis, r^(X-1) = sqrt(Q): the corner zones differ by Q. */
	double step = X > 1 ? pow(ratio, 0.5 / (X - 1)) : 1, total = 0;
	for (unsigned i = 0; !e && i < X; i++)
		width[i] = pow(step, i);
	for (unsigned j = 0; !e && j < X; j++)
		for (unsigned i = 0; i < X; i++)
			total += size[j * X + i] = width[i] * width[j];
	for (unsigned k = 0; !e && k < Z; k++) {
		unsigned best = 0;
		if (greedy) {
			/* the largest zone left; the last one on ties keeps the corner first */
			unsigned big = Z;
			for (unsigned y = 0; y < Z; y++)
				if (size[y] > 0 && (big == Z || size[y] >= size[big]))
					big = y;
			for (unsigned r = 1; r < R; r++)
				if (z->work[r] < z->work[best])
					best = r;
			owner[big] = best;
			z->work[best] += size[big];
			size[big] = -size[big]; /* taken */
		} else {
			best = (unsigned)((unsigned long)k * R / Z);
			owner[k] = best;
			z->work[best] += size[k];
		}
	}
	for (unsigned r = 0; !e && r < R; r++)
		z->work[r] *= unit / total;
	for (unsigned k = 0; !e && k < Z; k++) {
		unsigned i = k % X, j = k / X;
		sim_btmz_link(z, owner[k], owner[j * X + (i + 1) % X]);
		sim_btmz_link(z, owner[k], owner[j * X + (i + X - 1) % X]);
		sim_btmz_link(z, owner[k], owner[((j + 1) % X) * X + i]);
		sim_btmz_link(z, owner[k], owner[((j + X - 1) % X) * X + i]);
	}
	free(owner);
	free(size);
	free(width);
	if (e)
		return e;
	for (unsigned t = 0; t < w->nb_threads; t++) {
		w->thread_bubble[t] = T > 1 ? (int)(t / T) : -1;
		w->pin[t] = pin ? (int)(t % nb_vps) : -1;
	}
	for (unsigned r = 0; r < R; r++) {
		w->bubbles[r].parent = -1;
		w->barrier_count[r] = T;
	}
	if (pins && sim_pin_list("btmz", pins, w->nb_threads, nb_vps, w->pin, err, errlen))
		return EINVAL;
	w->neighbours = sim_btmz_neighbours;
	w->next = sim_btmz_next;
	double lo = z->work[0], hi = z->work[0];
	for (unsigned r = 1; r < R; r++) {
		lo = z->work[r] < lo ? z->work[r] : lo;
		hi = z->work[r] > hi ? z->work[r] : hi;
	}
	snprintf(w->desc, sizeof(w->desc), "BT-MZ: %u by %u zones (%g:1) on %u ranks of %u thread%s, %s, %lu "
		 "iterations; the heaviest rank %.2f times the lightest", X, X, ratio, R, T, T > 1 ? "s" : "",
		 greedy ? "greedy" : "blocks", z->iters, lo > 0 ? hi / lo : 0);
	return 0;
}

/* ---- sumtime: a spawn tree ---- */

static void sim_data_free(struct sim_workload *w)
{
	free(w->data);
}

struct sim_tree {
	unsigned inner;             /* threads 0..inner-1 spawn two children each */
	double leaf, node, mem;
};

/* An inner thread: half its own work, spawns its two children, joins them, the other
 * half (the sum). A leaf: its range's sum. Children of t are 2t+1 and 2t+2. */
static void sim_tree_next(const struct sim_workload *w, unsigned t, unsigned long n, struct sim_phase *p)
{
	const struct sim_tree *g = w->data;
	if (t >= g->inner) {
		*p = n ? (struct sim_phase){ .kind = SIM_END }
		       : (struct sim_phase){ .kind = SIM_COMPUTE, .work = g->leaf, .mem = g->mem };
		return;
	}
	static const enum sim_phase_kind prog[] = { SIM_COMPUTE, SIM_SPAWN, SIM_SPAWN, SIM_JOIN, SIM_JOIN, SIM_COMPUTE };
	if (n >= sizeof(prog) / sizeof(prog[0])) {
		*p = (struct sim_phase){ .kind = SIM_END };
		return;
	}
	*p = (struct sim_phase){ .kind = prog[n], .work = g->node / 2, .mem = g->mem,
				 .id = (int)(2 * t + 1 + (n == 2 || n == 4)) };
}

/* sumtime:depth=D:leaf=S:node=S:mem=M[:flat] -- examples/sumtime: each level's pair of
 * threads in a new bubble inside its parent's (flat: no bubbles). */
int sim_sumtime(struct sim_workload *w, char *args, char *err, size_t errlen)
{
	double depth = 5, leaf = 1e-3, node = 2e-6, mem = 0;
	int flat = 0;
	char *key, *val;
	while ((key = sim_next_kv(&args, &val))) {
		int e = 0;
		if (!strcmp(key, "depth"))
			e = sim_num(key, val, 0, 18, &depth, err, errlen);
		else if (!strcmp(key, "leaf"))
			e = sim_num(key, val, 0, 1e6, &leaf, err, errlen);
		else if (!strcmp(key, "node"))
			e = sim_num(key, val, 0, 1e6, &node, err, errlen);
		else if (!strcmp(key, "mem"))
			e = sim_num(key, val, 0, 1, &mem, err, errlen);
		else if (!strcmp(key, "flat") && !val)
			flat = 1;
		else
			return sim_werr(err, errlen, "sumtime: '%s' is not one of depth=, leaf=, node=, mem=, flat", key);
		if (e)
			return e;
	}
	struct sim_tree *g = calloc(1, sizeof(*g));
	w->data = g;
	w->free_data = sim_data_free;
	if (!g)
		return ENOMEM;
	unsigned n = (2u << (unsigned)depth) - 1;
	g->inner = n / 2;
	g->leaf = leaf;
	g->node = node;
	g->mem = mem;
	w->nb_threads = n;
	w->nb_bubbles = flat ? 0 : g->inner;
	w->thread_bubble = calloc(n, sizeof(int));
	w->pin = calloc(n, sizeof(int));
	w->dormant = calloc(n, 1);
	w->bubbles = calloc(g->inner ? g->inner : 1, sizeof(*w->bubbles));
	if (!w->thread_bubble || !w->pin || !w->dormant || !w->bubbles)
		return ENOMEM;
	/* Bubble i holds thread i's children; it sits in the bubble that holds thread i. */
	for (unsigned b = 0; b < w->nb_bubbles; b++)
		w->bubbles[b].parent = b ? (int)((b - 1) / 2) : -1;
	for (unsigned t = 0; t < n; t++) {
		w->pin[t] = -1;
		w->dormant[t] = t > 0;
		w->thread_bubble[t] = flat || !t ? -1 : (int)((t - 1) / 2);
	}
	w->next = sim_tree_next;
	snprintf(w->desc, sizeof(w->desc), "sumtime: a spawn tree of depth %u (%u threads, %u leaves of %g s)%s",
		 (unsigned)depth, n, n - g->inner, leaf, flat ? ", no bubbles" : ", a bubble per pair");
	return 0;
}

/* ---- mixes of applications ---- */

struct sim_app {
	unsigned threads, first;    /* its threads: first..first+threads-1 */
	double serial, parallel;    /* per iteration: the master's alone, then all of them */
	unsigned long iters;
};

struct sim_mixdata {
	unsigned nb_apps;
	struct sim_app *app;
	unsigned *app_of;           /* per thread */
	double mem;
};

static void sim_mix_free(struct sim_workload *w)
{
	struct sim_mixdata *x = w->data;
	if (x) {
		free(x->app);
		free(x->app_of);
	}
	free(x);
}

/* Per iteration: the serial phase (the master computes, the others wait at the app's
 * barrier, blocked), then the parallel phase split evenly, then the barrier again. */
static void sim_mix_next(const struct sim_workload *w, unsigned t, unsigned long n, struct sim_phase *p)
{
	const struct sim_mixdata *x = w->data;
	unsigned a = x->app_of[t];
	const struct sim_app *app = &x->app[a];
	if (n / 4 >= app->iters) {
		*p = (struct sim_phase){ .kind = SIM_END };
		return;
	}
	int master = t == app->first, alone = app->threads == 1;
	switch (n % 4) {
	case 0:
		*p = (struct sim_phase){ .kind = SIM_COMPUTE, .work = master ? app->serial : 0, .mem = x->mem };
		return;
	case 2:
		*p = (struct sim_phase){ .kind = SIM_COMPUTE, .work = app->parallel / app->threads, .mem = x->mem };
		return;
	default:
		*p = alone ? (struct sim_phase){ .kind = SIM_COMPUTE }
			   : (struct sim_phase){ .kind = SIM_BARRIER, .id = (int)a };
	}
}

/*
 * mix:apps=N/S/P/K,N/S/P/K,...:mem=M -- applications side by side, each in a bubble of
 * its own: N threads, K iterations of a serial phase of S seconds (its master alone)
 * and a parallel phase of P seconds of work split over the N threads. 1/0/P/1 is a
 * single-threaded program; N/S/P/K with S > 0 a parallel program with serial phases.
 */
int sim_mix(struct sim_workload *w, char *args, char *err, size_t errlen)
{
	const char *apps = NULL;
	double mem = 0;
	char *key, *val;
	while ((key = sim_next_kv(&args, &val))) {
		int e = 0;
		if (!strcmp(key, "apps") && val && *val)
			apps = val;
		else if (!strcmp(key, "mem"))
			e = sim_num(key, val, 0, 1, &mem, err, errlen);
		else
			return sim_werr(err, errlen, "mix: '%s' is not one of apps=N/S/P/K,..., mem=", key);
		if (e)
			return e;
	}
	if (!apps)
		return sim_werr(err, errlen, "mix: apps=N/S/P/K,... is missing (threads/serial s/parallel s/iterations "
				"of each application)");
	unsigned nb = 1;
	for (const char *c = apps; *c; c++)
		nb += *c == ',';
	struct sim_mixdata *x = calloc(1, sizeof(*x));
	w->data = x;
	w->free_data = sim_mix_free;
	if (!x || !(x->app = calloc(nb, sizeof(*x->app))))
		return ENOMEM;
	x->nb_apps = nb;
	x->mem = mem;
	const char *c = apps;
	unsigned total = 0;
	for (unsigned a = 0; a < nb; a++) {
		double v[4];
		for (unsigned f = 0; f < 4; f++) {
			char *end;
			v[f] = strtod(c, &end);
			char want = f < 3 ? '/' : (a + 1 < nb ? ',' : 0);
			if (end == c || *end != want || !(v[f] >= 0) || (f != 1 && f != 2 && v[f] < 1) || v[f] > 1e7)
				return sim_werr(err, errlen, "mix: apps=%s: application %u: expected N/S/P/K (threads >= 1, "
						"serial and parallel seconds >= 0, iterations >= 1)", apps, a + 1);
			c = end + 1;
		}
		if (v[0] > 4096 || total + (unsigned)v[0] > 65536)
			return sim_werr(err, errlen, "mix: apps=%s: application %u: at most 4096 threads each, 65536 "
					"in all", apps, a + 1);
		x->app[a] = (struct sim_app){ .threads = (unsigned)v[0], .first = total, .serial = v[1],
					      .parallel = v[2], .iters = (unsigned long)v[3] };
		total += (unsigned)v[0];
	}
	w->nb_threads = total;
	w->nb_bubbles = nb;
	w->nb_barriers = nb;
	w->thread_bubble = calloc(total, sizeof(int));
	w->pin = calloc(total, sizeof(int));
	w->bubbles = calloc(nb, sizeof(*w->bubbles));
	w->barrier_count = calloc(nb, sizeof(unsigned));
	x->app_of = calloc(total, sizeof(unsigned));
	w->master = calloc(total, 1);
	if (!w->thread_bubble || !w->pin || !w->bubbles || !w->barrier_count || !x->app_of || !w->master)
		return ENOMEM;
	for (unsigned a = 0; a < nb; a++) {
		w->bubbles[a].parent = -1;
		w->barrier_count[a] = x->app[a].threads;
		w->master[x->app[a].first] = 1; /* each application's main thread */
		for (unsigned t = x->app[a].first; t < x->app[a].first + x->app[a].threads; t++) {
			x->app_of[t] = a;
			w->thread_bubble[t] = (int)a;
			w->pin[t] = -1;
		}
	}
	w->next = sim_mix_next;
	snprintf(w->desc, sizeof(w->desc), "mix: %u applications, %u threads, each application a bubble", nb, total);
	return 0;
}
