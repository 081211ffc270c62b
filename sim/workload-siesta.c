/*
 * SIESTA as the 002 seed ran it (its section V-D, Table VI): MPI ranks of uneven loads
 * whose iterations are many short phases, each ending in messages with every other rank.
 * The seed says what makes it sensitive to the OS: a rank sleeps while it waits for a
 * message and must be woken when it arrives, and under the standard scheduler that takes
 * time (the machine model's sched_latency). Its figure of the phases was lost in the text
 * extraction; so the exchange here is the simplest shape in which a wake-up lands on the
 * slowest rank's path: a rendezvous. Each phase, a rank computes its share, sends to every
 * other rank, then waits for each of them to answer. A rank that finished early sleeps in
 * the first step until the last rank's data come, and answers when it wakes; the last
 * rank sleeps in the second step until the answers come. Under the baseline each phase
 * thus holds two wake-ups on its critical path, where an all-to-all exchange of the
 * last rank's data alone would hold none.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ma_workload.h"

struct sim_siesta {
	unsigned ranks;
	unsigned long phases;       /* in all: iterations times phases per iteration */
	double *work;               /* per rank, per phase */
	double mem;
};

static void sim_siesta_free(struct sim_workload *w)
{
	struct sim_siesta *x = w->data;
	if (x)
		free(x->work);
	free(x);
}

/* Every other rank. */
static unsigned sim_siesta_neighbours(const struct sim_workload *w, unsigned t, unsigned *out, unsigned max)
{
	const struct sim_siesta *x = w->data;
	unsigned n = 0;
	for (unsigned r = 0; r < x->ranks && n < max; r++)
		if (r != t)
			out[n++] = r;
	return n;
}

/* Per phase: compute, send to all (the data), then wait for all (their answers). */
static void sim_siesta_next(const struct sim_workload *w, unsigned t, unsigned long n, struct sim_phase *p)
{
	const struct sim_siesta *x = w->data;
	if (n / 3 >= x->phases) {
		*p = (struct sim_phase){ .kind = SIM_END };
		return;
	}
	if (n % 3)
		*p = (struct sim_phase){ .kind = SIM_EXCHANGE };
	else
		*p = (struct sim_phase){ .kind = SIM_COMPUTE, .work = x->work[t], .mem = x->mem };
}

/*
 * siesta:ranks=R:loads=L,...:unit=S:iters=T:phases=K:mem=M[:pin|:pin=VP,...]
 *
 * R ranks; rank i computes L_i * S seconds (alone) per iteration, in K phases of equal
 * work; T iterations. The defaults are the calibration's (doc/simulator.md): loads and
 * unit fitted on Table VI's baseline on the power5 machine (the computation shares of
 * P2..P4, 52.79, 28.45 and 19.99%, and its 81.49 s), and all of the work memory access,
 * which under POWER5 priorities no level speeds or slows: the seed's heuristics moved no
 * rank's share by more than 3 points.
 */
int sim_siesta(struct sim_workload *w, char *args, unsigned nb_vps, char *err, size_t errlen)
{
	double ranks = 4, unit = 1.0618, iters = 50, phases = 100, mem = 1;
	const char *loads = NULL, *pins = NULL;
	int pin = 0;
	char *key, *val;
	while ((key = sim_next_kv(&args, &val))) {
		int e = 0;
		if (!strcmp(key, "ranks"))
			e = sim_num(key, val, 2, 4096, &ranks, err, errlen);
		else if (!strcmp(key, "unit"))
			e = sim_num(key, val, 1e-9, 1e6, &unit, err, errlen);
		else if (!strcmp(key, "iters"))
			e = sim_num(key, val, 1, 1e6, &iters, err, errlen);
		else if (!strcmp(key, "phases"))
			e = sim_num(key, val, 1, 1e6, &phases, err, errlen);
		else if (!strcmp(key, "mem"))
			e = sim_num(key, val, 0, 1, &mem, err, errlen);
		else if (!strcmp(key, "loads") && val)
			loads = val;
		else if (!strcmp(key, "pin") && !val)
			pin = 1;
		else if (!strcmp(key, "pin") && val)
			pins = val;
		else
			return sim_werr(err, errlen, "siesta: '%s' is not one of ranks=, loads=, unit=, iters=, phases=, mem=, "
					"pin, pin=VP,VP,...", key);
		if (e)
			return e;
	}
	unsigned R = (unsigned)ranks;
	if (iters * phases > 1e8)
		return sim_werr(err, errlen, "siesta: iters=%g, phases=%g: more than 10^8 phases", iters, phases);
	struct sim_siesta *x = calloc(1, sizeof(*x));
	w->data = x;
	w->free_data = sim_siesta_free;
	if (!x || !(x->work = calloc(R, sizeof(double))))
		return ENOMEM;
	x->ranks = R;
	x->phases = (unsigned long)iters * (unsigned long)phases;
	x->mem = mem;
	/* Table VI's ranks, fitted; more ranks repeat them. */
	static const double fitted[] = { 1, 0.385, 0.2816, 0.1517 };
	for (unsigned r = 0; r < R; r++)
		x->work[r] = fitted[r % 4] * unit;
	if (loads && sim_loads_list("siesta", loads, R, unit, x->work, err, errlen))
		return EINVAL;
	for (unsigned r = 0; r < R; r++)
		x->work[r] /= phases;
	w->nb_threads = R;
	w->thread_bubble = calloc(R, sizeof(int));
	w->pin = calloc(R, sizeof(int));
	if (!w->thread_bubble || !w->pin)
		return ENOMEM;
	for (unsigned r = 0; r < R; r++) {
		w->thread_bubble[r] = -1;
		w->pin[r] = pin ? (int)(r % nb_vps) : -1;
	}
	if (pins && sim_pin_list("siesta", pins, R, nb_vps, w->pin, err, errlen))
		return EINVAL;
	w->neighbours = sim_siesta_neighbours;
	w->next = sim_siesta_next;
	snprintf(w->desc, sizeof(w->desc), "SIESTA: %u ranks, %lu iterations of %lu phases, a rendezvous with every "
		 "other rank after each%s", R, (unsigned long)iters, (unsigned long)phases, pin || pins ? ", pinned" : "");
	return 0;
}
