/*
 * The 001 seed's workloads (Intel's MASA paper): SPEC CPU2000 programs side by side on
 * Hyper-Threaded packages, each a thread that computes alone-times of work with a
 * resource profile (the model's pair speeds, model.c) and shows the strategies the load
 * metrics of that profile (sim_profile_metric), as an application's hints would.
 *
 * contend:progs=INT,FP,INT,FP: one thread per program, in that order (Table 1: two
 * 164.gzip and two 177.mesa; Table 2: 164.gzip and 197.parser), each running its program
 * reps= times, or K times for one written P*K. The seed's times are averages over
 * programs that kept running beside each other: runs enough that the threads of a core
 * end together (INT*6 beside FP*7, INT*3 beside L2C*2) keep a lone thread's last minutes
 * from weighing in a thread's time per run (its end over its runs).
 * contend:shells=1|2: Table 8's test cases, four shells of programs run one after the
 * other. nohints: the threads show no metric (contention then is spread); pin=VP,...:
 * thread i bound to the i-th VP listed (the seed's placements by hand).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ma_workload.h"

/* Seconds alone on the seed's Xeon, from its HT-off rows (two programs in turns on one
 * processor: half the time each): 164.gzip 171.4 s (Table 1) and 172.5 s (Table 2), their
 * mean here; 177.mesa 134.25 s; 197.parser 246.15 s. */
static const double sim_alone[SIM_PROF_NB] = {
	[SIM_PROF_INT] = 171.95,
	[SIM_PROF_FP] = 134.25,
	[SIM_PROF_L2C] = 246.15,
};
static const char *const sim_prof_name[SIM_PROF_NB] = {
	[SIM_PROF_NONE] = "none", [SIM_PROF_INT] = "INT", [SIM_PROF_FP] = "FP", [SIM_PROF_L2C] = "L2C",
};

/*
 * What each profile shows, in events per 1000 instructions. The seed's per-process counts
 * (its Tables 3 and 4) were lost from its text: these are round figures of such programs,
 * chosen against the calibration of strategies/contention.c (FP-bound: 300 FP operations,
 * above its 250; cache-bound: 25 misses, above its 20; integer code: neither).
 */
unsigned sim_profile_metric(enum sim_profile p, float out[MA_VM_NB])
{
	switch (p) {
	case SIM_PROF_INT:
		out[MA_VM_FP] = 0;
		out[MA_VM_MISS] = 1;
		break;
	case SIM_PROF_FP:
		out[MA_VM_FP] = 300;
		out[MA_VM_MISS] = 2;
		break;
	case SIM_PROF_L2C:
		out[MA_VM_FP] = 0;
		out[MA_VM_MISS] = 25;
		break;
	default:
		return 0;
	}
	return (1u << MA_VM_FP) | (1u << MA_VM_MISS);
}

/*
 * Table 8's shells, each program's profile. The seed names the programs, not their
 * profiles: these are assumptions (CINT programs INT but 252.eon, a ray tracer, FP; the
 * memory-bound 181.mcf, 197.parser, 300.twolf and 179.art L2C; the other CFP programs FP).
 * Shell_FP repeats 177.mesa 7 times and Shell_L2C 197.parser 5 times at their own alone
 * times; the seed says they last as long as the other shells, whose programs are given
 * here the same alone time each, Shell_FP's length shared out (939.75 s).
 */
static const enum sim_profile sim_shell0[] = { SIM_PROF_INT, SIM_PROF_INT, SIM_PROF_INT,
					       SIM_PROF_FP,  SIM_PROF_INT, SIM_PROF_INT };
static const enum sim_profile sim_shell1[] = { SIM_PROF_INT, SIM_PROF_L2C, SIM_PROF_L2C,
					       SIM_PROF_INT, SIM_PROF_INT, SIM_PROF_L2C };
static const enum sim_profile sim_shell2[] = { SIM_PROF_FP, SIM_PROF_FP, SIM_PROF_FP, SIM_PROF_L2C,
					       SIM_PROF_FP, SIM_PROF_FP, SIM_PROF_FP };
#define SIM_SHELL_LEN (7 * 134.25)
/* The shell's fork and exec between two programs: the thread leaves its processor. */
#define SIM_SHELL_GAP_S 0.001

struct sim_step {
	enum sim_profile p;
	double work;
};

struct sim_contend {
	unsigned n;
	struct sim_step *steps;     /* thread t's: steps[first[t] .. first[t + 1]) */
	unsigned *first;
	int gaps;                   /* a shell's pause between programs */
};

static void sim_contend_free(struct sim_workload *w)
{
	struct sim_contend *c = w->data;
	if (c) {
		free(c->steps);
		free(c->first);
	}
	free(c);
}

/* A program, then (shells) the pause before the next; the end. */
static void sim_contend_next(const struct sim_workload *w, unsigned t, unsigned long n, struct sim_phase *p)
{
	const struct sim_contend *c = w->data;
	unsigned per = c->gaps ? 2 : 1, k = c->first[t] + (unsigned)(n / per);
	if (k >= c->first[t + 1]) {
		*p = (struct sim_phase){ .kind = SIM_END };
		return;
	}
	if (n % per)
		*p = (struct sim_phase){ .kind = SIM_SLEEP, .work = SIM_SHELL_GAP_S };
	else
		*p = (struct sim_phase){ .kind = SIM_COMPUTE, .work = c->steps[k].work, .profile = c->steps[k].p };
}

static int sim_prof_of(const char *s, size_t len)
{
	for (int p = SIM_PROF_INT; p < SIM_PROF_NB; p++)
		if (strlen(sim_prof_name[p]) == len && !strncmp(s, sim_prof_name[p], len))
			return p;
	return -1;
}

/* contend:progs=P[*K],...|shells=1|2[:reps=R][:unit=S][:nohints][:pin=VP,...] */
int sim_contend(struct sim_workload *w, char *args, unsigned nb_vps, char *err, size_t errlen)
{
	const char *progs = NULL, *pins = NULL;
	double reps = 1, unit = 1, shells = 0;
	int hints = 1;
	char *key, *val;
	while ((key = sim_next_kv(&args, &val))) {
		int e = 0;
		if (!strcmp(key, "progs") && val && *val)
			progs = val;
		else if (!strcmp(key, "shells"))
			e = sim_num(key, val, 1, 2, &shells, err, errlen);
		else if (!strcmp(key, "reps"))
			e = sim_num(key, val, 1, 1000, &reps, err, errlen);
		else if (!strcmp(key, "unit"))
			e = sim_num(key, val, 1e-9, 1e6, &unit, err, errlen);
		else if (!strcmp(key, "nohints") && !val)
			hints = 0;
		else if (!strcmp(key, "pin") && val)
			pins = val;
		else
			return sim_werr(err, errlen, "contend: '%s' is not one of progs=INT|FP|L2C,..., shells=1|2, reps=, "
					"unit=, nohints, pin=VP,...", key);
		if (e)
			return e;
	}
	if (!progs == !shells)
		return sim_werr(err, errlen, "contend: give progs=INT|FP|L2C,... (Tables 1 and 2) or shells=1|2 "
				"(Table 8), one of them");
	if (shells && shells != 1 && shells != 2)
		return sim_werr(err, errlen, "contend: shells=%g: expected 1 or 2 (Table 8's test cases)", shells);
	if ((double)(unsigned)reps != reps)
		return sim_werr(err, errlen, "contend: reps=%g: expected a whole number of runs", reps);
	struct sim_contend *c = calloc(1, sizeof(*c));
	w->data = c;
	w->free_data = sim_contend_free;
	if (!c)
		return ENOMEM;
	unsigned n = 0, total = 0;
	if (progs) {
		n = 1;
		for (const char *x = progs; *x; x++)
			n += *x == ',';
		if (n > 65536)
			return sim_werr(err, errlen, "contend: progs=: %u programs, at most 65536", n);
		total = n * (unsigned)reps;
	} else {
		n = 4;
		total = sizeof(sim_shell0) / sizeof(sim_shell0[0]) + sizeof(sim_shell1) / sizeof(sim_shell1[0]) +
			sizeof(sim_shell2) / sizeof(sim_shell2[0]) + 7;
	}
	c->n = n;
	c->steps = calloc(total, sizeof(*c->steps));
	c->first = calloc(n + 1, sizeof(*c->first));
	w->nb_threads = n;
	w->thread_bubble = calloc(n, sizeof(int));
	w->pin = calloc(n, sizeof(int));
	w->metric = calloc(n, sizeof(*w->metric));
	if (!c->steps || !c->first || !w->thread_bubble || !w->pin || !w->metric)
		return ENOMEM;
	unsigned k = 0;
	if (progs) {
		const char *x = progs;
		for (unsigned t = 0; t < n; t++) {
			size_t len = strcspn(x, ","), name = strcspn(x, ",*");
			int p = sim_prof_of(x, name);
			unsigned long times = (unsigned long)reps;
			if (name < len) {
				char *end;
				times = strtoul(x + name + 1, &end, 10);
				if (x[name + 1] < '0' || x[name + 1] > '9' || end != x + len || !times || times > 1000)
					p = -1;
			}
			if (p < 0)
				return sim_werr(err, errlen, "contend: progs=%s: program %u is not INT, FP nor L2C, with *K "
						"(1 to 1000 runs) or not", progs, t + 1);
			if (k + times > total) {
				struct sim_step *more = realloc(c->steps, (k + times) * sizeof(*more));
				if (!more)
					return ENOMEM;
				c->steps = more;
				total = k + (unsigned)times;
			}
			c->first[t] = k;
			for (unsigned r = 0; r < times; r++)
				c->steps[k++] = (struct sim_step){ (enum sim_profile)p, sim_alone[p] * unit };
			w->metric[t] = hints ? (enum sim_profile)p : SIM_PROF_NONE;
			x += len + (x[len] == ',');
		}
	} else {
		/* Test case 1: Shell_0, Shell_1, Shell_2 and Shell_L2C; 2: Shell_FP for the last. */
		const enum sim_profile *sh[3] = { sim_shell0, sim_shell1, sim_shell2 };
		unsigned len[3] = { sizeof(sim_shell0) / sizeof(sim_shell0[0]), sizeof(sim_shell1) / sizeof(sim_shell1[0]),
				    sizeof(sim_shell2) / sizeof(sim_shell2[0]) };
		for (unsigned t = 0; t < 3; t++) {
			c->first[t] = k;
			for (unsigned i = 0; i < len[t]; i++)
				c->steps[k++] = (struct sim_step){ sh[t][i], SIM_SHELL_LEN / len[t] * unit };
		}
		c->first[3] = k;
		enum sim_profile last = shells == 1 ? SIM_PROF_L2C : SIM_PROF_FP;
		for (unsigned i = 0; i < (shells == 1 ? 5u : 7u); i++)
			c->steps[k++] = (struct sim_step){ last, sim_alone[last] * unit };
		for (unsigned t = 0; t < 4; t++)
			w->metric[t] = hints ? c->steps[c->first[t]].p : SIM_PROF_NONE;
		c->gaps = 1;
	}
	c->first[n] = k;
	for (unsigned t = 0; t < n; t++)
		w->thread_bubble[t] = w->pin[t] = -1;
	if (pins && sim_pin_list("contend", pins, n, nb_vps, w->pin, err, errlen))
		return EINVAL;
	if (!hints) {
		free(w->metric);
		w->metric = NULL;
	}
	w->next = sim_contend_next;
	if (progs)
		snprintf(w->desc, sizeof(w->desc), "001 seed: programs %s, %u run%s each%s%s", progs, (unsigned)reps,
			 reps > 1 ? "s" : "", hints ? ", metrics shown" : "", pins ? ", pinned" : "");
	else
		snprintf(w->desc, sizeof(w->desc), "001 seed: Table 8's test case %u, four shells%s", (unsigned)shells,
			 hints ? ", metrics shown" : "");
	return 0;
}
