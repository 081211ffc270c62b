/*
 * mpi-metbench's command line (mpi-metbench.h). Every bad value stops the program with
 * status 2 and a message naming the option, the value and what is accepted. Read before
 * MPI_Init, so every rank reads the same and refuses alike (each says why: there is no
 * rank number yet), and a bad command line needs no mpirun to be refused.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpi-metbench.h"

#define MAX_LOAD 1000000L

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mpirun -np N " MPB_PROG " [--loads L0,L1,...] [--unit US] [--iters K] [--swap S]\n"
		"                  [--sync barrier|exchange|allreduce] [--chunks-per-ms R] [--check]\n"
		"       mpirun -np N " MPB_PROG " --no-iterations [--seed X] [--unit US] [--iters K] ...\n"
		"  --loads  each rank's load, relative (0 to %ld); the list repeats over the ranks\n"
		"           and may not be longer than they are (default 1,4: odd ranks four times\n"
		"           heavier than even ones)\n"
		"  --unit   microseconds of the heaviest load per iteration (1 to 10^8, default 1000)\n"
		"  --iters  iterations, or steps with --no-iterations (1 to 10^8, default 100)\n"
		"  --swap   every S iterations each load L becomes min+max-L: heavy and light ranks\n"
		"           exchange loads (MetBenchVar); 0, the default, never\n"
		"  --sync   how the ranks meet after computing: barrier (MPI_Barrier, the default),\n"
		"           exchange (MPI_Isend/MPI_Irecv with both ring neighbours, MPI_Waitall)\n"
		"           or allreduce (MPI_Allreduce of the values)\n"
		"  --no-iterations  no periodic structure: each step every rank computes a random\n"
		"           length (0 to --unit us), then ranks exchange with random peers, or not;\n"
		"           no collective call at all\n"
		"  --seed   the draws of --no-iterations (0 to 2^63-1, default 1)\n"
		"  --chunks-per-ms  the rate that turns microseconds into work (1 to 10^9); by\n"
		"           default rank 0 measures it. Give it to repeat the same work exactly\n"
		"  --check  check every value received against the sender's, recomputed\n",
		MAX_LOAD);
}

static _Noreturn __attribute__((format(printf, 1, 2)))
void bad_option(const char *fmt, ...)
{
	va_list ap;
	fputs(MPB_PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	usage(stderr);
	exit(2);
}

/* Reads a decimal number in [lo, hi] at s, up to *end; 0 on success. Signs, spaces and
 * exponents are refused (strtoll would take the first two). */
static int number(const char *s, long long lo, long long hi, long long *out, char **end)
{
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	long long v = strtoll(s, end, 10);
	if (errno != 0 || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* The options that take one number. */
static const struct numeric {
	const char *name, *what;
	long long lo, hi;
	size_t field;  /* offset of the long in struct mpb_config */
} numerics[] = {
	{ "--unit", "a time in microseconds (1 to 10^8)", 1, 100000000LL, offsetof(struct mpb_config, unit_us) },
	{ "--iters", "an iteration count (1 to 10^8)", 1, 100000000LL, offsetof(struct mpb_config, iters) },
	{ "--swap", "a period in iterations (0 to 10^9)", 0, 1000000000LL, offsetof(struct mpb_config, swap) },
	{ "--chunks-per-ms", "a rate in chunks per millisecond (1 to 10^9)", 1, 1000000000LL,
	  offsetof(struct mpb_config, chunks_per_ms) },
};

/* Parses "L0,L1,..." into c->loads. */
static void parse_loads(struct mpb_config *c, const char *val)
{
	long n = 0;
	char *end;
	for (const char *s = val;; s = end + 1) {
		long long v;
		if (n == MPB_MAX_LOADS || number(s, 0, MAX_LOAD, &v, &end) != 0 || (*end != ',' && *end != 0))
			bad_option("option '--loads': '%s' is not a comma-separated list of at most %d loads, "
				   "each from 0 to %ld", val, MPB_MAX_LOADS, MAX_LOAD);
		c->loads[n++] = (long)v;
		if (*end == 0)
			break;
	}
	c->nloads = n;
}

static enum mpb_sync parse_sync(const char *val)
{
	for (enum mpb_sync s = MPB_BARRIER; s <= MPB_ALLREDUCE; s++)
		if (strcmp(val, mpb_sync_name(s)) == 0)
			return s;
	bad_option("option '--sync': '%s' is not a way to meet: barrier, exchange or allreduce", val);
}

const char *mpb_sync_name(enum mpb_sync s)
{
	static const char *const names[] = { "barrier", "exchange", "allreduce" };
	return names[s];
}

void mpb_parse(struct mpb_config *c, int argc, char **argv)
{
	/* Options that mean nothing without iterations, and --seed, which means nothing with
	 * them: the first one given, to name in the refusal. */
	const char *periodic = NULL, *seed = NULL;
	memset(c, 0, sizeof(*c));
	c->loads[0] = 1;
	c->loads[1] = 4;
	c->nloads = 2;
	c->unit_us = 1000;
	c->iters = 100;
	c->sync = MPB_BARRIER;
	c->seed = 1;

	for (int i = 1; i < argc; i++) {
		const char *opt = argv[i];
		if (strcmp(opt, "--help") == 0 || strcmp(opt, "-h") == 0) {
			usage(stdout);
			exit(0);
		}
		if (strcmp(opt, "--no-iterations") == 0) {
			c->irregular = 1;
			continue;
		}
		if (strcmp(opt, "--check") == 0) {
			c->check = 1;
			continue;
		}
		const struct numeric *num = NULL;
		for (size_t k = 0; k < sizeof(numerics) / sizeof(numerics[0]); k++)
			if (strcmp(opt, numerics[k].name) == 0)
				num = &numerics[k];
		if (num == NULL && strcmp(opt, "--loads") != 0 && strcmp(opt, "--sync") != 0 &&
		    strcmp(opt, "--seed") != 0)
			bad_option("unknown option '%s'", opt);
		if (i + 1 >= argc)
			bad_option("option '%s' needs a value", opt);
		const char *val = argv[++i];
		char *end;
		long long v;
		if (strcmp(opt, "--loads") == 0 || strcmp(opt, "--sync") == 0 || strcmp(opt, "--swap") == 0)
			periodic = periodic ? periodic : opt;
		if (strcmp(opt, "--loads") == 0) {
			parse_loads(c, val);
		} else if (strcmp(opt, "--sync") == 0) {
			c->sync = parse_sync(val);
		} else if (strcmp(opt, "--seed") == 0) {
			if (number(val, 0, INT64_MAX, &v, &end) != 0 || *end != 0)
				bad_option("option '--seed': '%s' is not a seed (0 to 2^63-1)", val);
			c->seed = (uint64_t)v;
			seed = opt;
		} else {
			if (number(val, num->lo, num->hi, &v, &end) != 0 || *end != 0)
				bad_option("option '%s': '%s' is not %s", opt, val, num->what);
			*(long *)((char *)c + num->field) = (long)v;
		}
	}
	if (c->irregular && periodic != NULL)
		bad_option("option '%s' describes iterations, and --no-iterations has none: give one or the other",
			   periodic);
	if (!c->irregular && seed != NULL)
		bad_option("option '--seed' seeds --no-iterations' draws: give it with --no-iterations");
}
