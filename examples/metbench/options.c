/*
 * MetBench's command line (metbench.h). Every bad value stops the program with status 2
 * and a message naming the option, the value and what is accepted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "metbench.h"

#define MAX_WORKERS 1024
#define MAX_LOAD 1000000L

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " MB_PROG " [--workers N] [--loads L1,L2,...] [--unit TRIPS] [--iters T]\n"
		"                [--swap K] [--bubble] [--bind] [--quiet|--summary]\n"
		"  --workers  worker threads besides the master (default 4, at most %d)\n"
		"  --loads    each worker's load per iteration, in units (0 to %ld); a shorter list\n"
		"             than the workers repeats (default 1,4: workers 1, 3... four times\n"
		"             heavier than workers 0, 2...)\n"
		"  --unit     loop trips per unit (default 250000, about 1 ms at 2 GHz)\n"
		"  --iters    iterations (default 20)\n"
		"  --swap     every K iterations, each load L becomes min+max-L: heavy and light\n"
		"             workers exchange loads (MetBenchVar); 0, the default, never\n"
		"  --bubble   put all the workers in one bubble\n"
		"  --bind     worker w runs on VP w+1 (modulo the VPs; the master has VP 0), as\n"
		"             MetBench's ranks are bound to processors\n"
		"  --quiet, --summary  only the totals, not a line per iteration\n",
		MAX_WORKERS, MAX_LOAD);
}

static _Noreturn __attribute__((format(printf, 1, 2)))
void bad_option(const char *fmt, ...)
{
	va_list ap;
	fputs(MB_PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	usage(stderr);
	exit(2);
}

/* Reads a decimal number in [lo, hi] at s, up to *end; 0 on success. Signs, spaces and
 * exponents are refused (strtol would take the first two). */
static int number(const char *s, long lo, long hi, long *out, char **end)
{
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	long v = strtol(s, end, 10);
	if (errno != 0 || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* The options that take one number. */
static const struct numeric {
	const char *name, *what;
	long lo, hi;
	size_t field;  /* offset of the long in struct mb_config */
} numerics[] = {
	{ "--workers", "a worker count (1 to 1024)", 1, MAX_WORKERS, offsetof(struct mb_config, workers) },
	{ "--unit", "a trip count (1 to 10^12)", 1, 1000000000000L, offsetof(struct mb_config, unit) },
	{ "--iters", "an iteration count (1 to 10^7)", 1, 10000000L, offsetof(struct mb_config, iters) },
	{ "--swap", "a period in iterations (0 to 10^9)", 0, 1000000000L, offsetof(struct mb_config, swap) },
};

/* Parses "L1,L2,..." into list (at most MAX_WORKERS values); returns how many. */
static long parse_loads(const char *val, long *list)
{
	long n = 0;
	char *end;
	for (const char *s = val;; s = end + 1) {
		if (n == MAX_WORKERS || number(s, 0, MAX_LOAD, &list[n], &end) != 0 || (*end != ',' && *end != 0))
			bad_option("option '--loads': '%s' is not a comma-separated list of at most %d loads, "
				   "each from 0 to %ld units", val, MAX_WORKERS, MAX_LOAD);
		n++;
		if (*end == 0)
			return n;
	}
}

void mb_parse(struct mb_config *c, int argc, char **argv)
{
	static long given[MAX_WORKERS] = { 1, 4 };
	long ngiven = 2;
	int loads_given = 0;  /* the default list is cut to the workers, a given one must fit */
	memset(c, 0, sizeof(*c));
	c->workers = 4;
	c->unit = 250000;
	c->iters = 20;

	for (int i = 1; i < argc; i++) {
		const char *opt = argv[i];
		if (strcmp(opt, "--help") == 0 || strcmp(opt, "-h") == 0) {
			usage(stdout);
			exit(0);
		}
		if (strcmp(opt, "--bubble") == 0) {
			c->bubble = 1;
			continue;
		}
		if (strcmp(opt, "--bind") == 0) {
			c->bind = 1;
			continue;
		}
		if (strcmp(opt, "--quiet") == 0 || strcmp(opt, "--summary") == 0) {
			c->quiet = 1;
			continue;
		}
		const struct numeric *num = NULL;
		for (size_t k = 0; k < sizeof(numerics) / sizeof(numerics[0]); k++)
			if (strcmp(opt, numerics[k].name) == 0)
				num = &numerics[k];
		if (num == NULL && strcmp(opt, "--loads") != 0)
			bad_option("unknown option '%s'", opt);
		if (i + 1 >= argc)
			bad_option("option '%s' needs a value", opt);
		const char *val = argv[++i];
		char *end;
		if (num == NULL) {
			ngiven = parse_loads(val, given);
			loads_given = 1;
			continue;
		}
		long *dst = (long *)((char *)c + num->field);
		if (number(val, num->lo, num->hi, dst, &end) != 0 || *end != 0)
			bad_option("option '%s': '%s' is not %s", opt, val, num->what);
	}

	if (ngiven > c->workers && !loads_given)
		ngiven = c->workers;
	if (ngiven > c->workers)
		bad_option("option '--loads': %ld loads for %ld worker%s (see --workers)", ngiven, c->workers,
			   c->workers == 1 ? "" : "s");
	c->loads = malloc((size_t)c->workers * sizeof(*c->loads));
	if (c->loads == NULL) {
		fprintf(stderr, MB_PROG ": out of memory\n");
		exit(1);
	}
	c->min_load = c->max_load = given[0];
	for (long w = 0; w < c->workers; w++) {
		c->loads[w] = given[w % ngiven];
		c->min_load = c->loads[w] < c->min_load ? c->loads[w] : c->min_load;
		c->max_load = c->loads[w] > c->max_load ? c->loads[w] : c->max_load;
	}
}
