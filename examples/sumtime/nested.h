/*
 * What the nested-parallelism examples share: sumtime (here) and nested-sort (which
 * includes this file as "../sumtime/nested.h"), and bench/bench_nested, which measures
 * their very code beside OpenMP tasks and TBB.
 *
 * - nested_fork2(): the step every level of their recursions takes: run two halves in two
 *   new threads and wait for both. With bubbles, each level's pair goes into a new
 *   bubble inside the parent's, so the bubble tree mirrors the recursion and a strategy
 *   can keep a subtree's threads (and the data they share) on one part of the machine.
 *   --two-bubbles gives the classic Marcel sumtime's layout instead: each child in a
 *   bubble of its own, both inside the parent's (twice the bubbles, the same tree shape).
 * - nested_init(): marcel_init(), and a strategy that suits nested bubbles when the user
 *   chose none.
 * - the command line the examples have in common (--seeds, --no-bubbles, --reps, numbers
 *   with a range, words from a list), with one usage text per program.
 */
#ifndef EXAMPLES_NESTED_H
#define EXAMPLES_NESTED_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <marcel.h>

/* The strategy the examples run under when the user names none. The runtime's default,
 * burst, bursts each level's bubble where a VP picks it and gathers the subtree back
 * whenever a VP idles; cache keeps each subtree where it started, which suits these
 * recursions better (nested-sort of 2*10^6 keys on 2 VPs: 0.125 s against 0.168 s). */
#define NESTED_DEFAULT_SCHED "cache"

/* marcel_init(), then NESTED_DEFAULT_SCHED unless MARCEL_BUBBLE_SCHEDULER or
 * --marcel-bubble-scheduler chose a strategy. Returns what marcel_init() returned. */
static inline int nested_init(int *argc, char **argv)
{
	int chosen = getenv("MARCEL_BUBBLE_SCHEDULER") != NULL;
	for (int i = 1; argc && argv && i < *argc; i++)
		chosen |= strncmp(argv[i], "--marcel-bubble-scheduler", 25) == 0;
	int err = marcel_init(argc, argv);
	if (!err && !chosen && !marcel_bubble_change_sched(marcel_lookup_bubble_scheduler(NESTED_DEFAULT_SCHED))) {
		fprintf(stderr, "nested_init: the runtime has no strategy called %s\n", NESTED_DEFAULT_SCHED);
		marcel_end();
		return ENOENT;
	}
	return err;
}

/* The plural ending for a count of @p n: "1 key", "2 keys". */
static inline const char *nested_s(unsigned long n)
{
	return n == 1 ? "" : "s";
}

/* The name of the strategy in use. */
static inline const char *nested_sched(void)
{
	return marcel_bubble_sched_name(marcel_bubble_current_sched());
}

/* How each level's pair of threads is grouped. */
enum nested_bubbles {
	NESTED_NO_BUBBLES,   /* none: the threads go where default attributes send them */
	NESTED_PAIR_BUBBLE,  /* one bubble holds the pair (the default) */
	NESTED_TWO_BUBBLES,  /* one bubble per child, as in the classic Marcel sumtime */
};

struct nested_how {
	int seeds;           /* the children are seeds (marcel_attr_setseed) */
	enum nested_bubbles bubbles;
	marcel_attr_t attr;  /* made once by nested_how_init(), copied at each level */
};

/* Returns 0 or the error of the marcel call that failed. */
static inline int nested_how_init(struct nested_how *h, int seeds, enum nested_bubbles bubbles)
{
	h->seeds = seeds;
	h->bubbles = bubbles;
	int err = marcel_attr_init(&h->attr);
	return err ? err : marcel_attr_setseed(&h->attr, seeds);
}

/*
 * Runs fn(a) and fn(b) in two new threads and waits for both. Their results go through
 * a and b (fn returns nothing useful), so a caller keeps a and b on its stack.
 * Returns 0, or the error of the first marcel call that failed (whatever was created has
 * then been joined).
 */
static inline int nested_fork2(const struct nested_how *h, marcel_func_t fn, any_t a, any_t b)
{
	marcel_attr_t attr = h->attr;
	marcel_bubble_t bubble[2];
	marcel_t t[2];
	int nb = h->bubbles == NESTED_TWO_BUBBLES ? 2 : h->bubbles == NESTED_PAIR_BUBBLE ? 1 : 0;
	int made = 0, created = 0, err = 0;
	/* Children are created in their bubble before it is woken: the strategy then places
	 * the unit knowing its size. Waking inserts a bubble into the bubble holding the
	 * caller, that is the parent level's. */
	for (; made < nb && !err; made++)
		err = marcel_bubble_init(&bubble[made]);
	if (err)
		made--;
	for (; created < 2 && !err; created++) {
		if (nb)
			err = marcel_attr_setnaturalbubble(&attr, &bubble[nb == 2 ? created : 0]);
		if (!err)
			err = marcel_create(&t[created], &attr, fn, created ? b : a);
		if (err)
			created--;
	}
	for (int i = 0; i < made; i++) {
		int e = marcel_wake_up_bubble(&bubble[i]);
		err = err ? err : e;
	}
	for (int i = 0; i < created; i++) {
		int e = marcel_join(t[i], NULL);
		err = err ? err : e;
	}
	/* The children joined their own levels' bubbles, which left these empty. */
	for (int i = 0; i < made; i++) {
		int e = marcel_bubble_join(&bubble[i]);
		err = err ? err : e;
		e = marcel_bubble_destroy(&bubble[i]);
		err = err ? err : e;
	}
	return err;
}

/* ---------------- command line ---------------- */

/* "prog: what: strerror(err)" and exit status 1 when err is not 0. */
static inline void nested_check(const char *prog, int err, const char *what)
{
	if (err) {
		fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(err));
		exit(1);
	}
}

/* An option taking a value: a number in [lo, hi], or, when words is not NULL, one of the
 * NULL-terminated words (*val receives its index). */
struct nested_opt {
	const char *name;
	long *val;
	long lo, hi;
	const char *const *words;
};

struct nested_cli {
	const char *prog;   /* names the program in messages */
	const char *usage;  /* printed by --help and after a bad option */
	const struct nested_opt *opts;  /* the program's own; ends with a NULL name */
	int seeds;          /* --seeds (the default) / --no-seeds */
	enum nested_bubbles bubbles; /* pair (the default), --two-bubbles, --no-bubbles */
	long reps;          /* --reps R: runs of the computation (default 1) */
};

static inline _Noreturn __attribute__((format(printf, 2, 3)))
void nested_bad_option(const struct nested_cli *c, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", c->prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s", c->usage);
	exit(2);
}

static inline void nested_parse_value(const struct nested_cli *c, const struct nested_opt *o,
				      const char *val)
{
	if (o->words) {
		char list[256] = "";
		for (long w = 0; o->words[w]; w++) {
			if (strcmp(val, o->words[w]) == 0) {
				*o->val = w;
				return;
			}
			size_t len = strlen(list);
			snprintf(list + len, sizeof(list) - len, "%s%s", w ? ", " : "", o->words[w]);
		}
		nested_bad_option(c, "option '%s': '%s' is not one of %s", o->name, val, list);
	}
	char *end;
	errno = 0;
	long v = val[0] >= '0' && val[0] <= '9' ? strtol(val, &end, 10) : -1;  /* no sign, no space */
	if (v < o->lo || v > o->hi || errno != 0 || *end != 0)
		nested_bad_option(c, "option '%s': '%s' is not a whole number from %ld to %ld", o->name,
				  val, o->lo, o->hi);
	*o->val = v;
}

/* Fills the options' values (left as they are when absent), c->seeds, c->bubbles and
 * c->reps. Exits with status 0 after --help, 2 after a bad option, naming it. Call it
 * after marcel_init(), which takes the --marcel-* options out of argv. */
static inline void nested_parse(struct nested_cli *c, int argc, char **argv)
{
	const struct nested_opt reps = { "--reps", &c->reps, 1, 1000, NULL };
	c->seeds = 1;
	c->bubbles = NESTED_PAIR_BUBBLE;
	c->reps = 1;
	for (int i = 1; i < argc; i++) {
		const char *opt = argv[i];
		if (strcmp(opt, "--help") == 0 || strcmp(opt, "-h") == 0) {
			fputs(c->usage, stdout);
			exit(0);
		}
		if (strcmp(opt, "--seeds") == 0 || strcmp(opt, "--no-seeds") == 0) {
			c->seeds = strcmp(opt, "--seeds") == 0;
			continue;
		}
		if (strcmp(opt, "--no-bubbles") == 0) {
			c->bubbles = NESTED_NO_BUBBLES;
			continue;
		}
		if (strcmp(opt, "--two-bubbles") == 0) {
			c->bubbles = NESTED_TWO_BUBBLES;
			continue;
		}
		const struct nested_opt *o = c->opts;
		while (o->name && strcmp(o->name, opt) != 0)
			o++;
		if (strcmp(opt, reps.name) == 0)
			o = &reps;
		else if (!o->name)
			nested_bad_option(c, "unknown option '%s'", opt);
		if (i + 1 >= argc)
			nested_bad_option(c, "option '%s' needs a value", opt);
		nested_parse_value(c, o, argv[++i]);
	}
}

/* The start of both examples: parses the command line (nested_parse()), makes h from it
 * and lets the strategy place each bubble woken from then on as it comes. Exits with a
 * message on error. */
static inline void nested_start(struct nested_cli *c, int argc, char **argv, struct nested_how *h)
{
	nested_parse(c, argc, argv);
	nested_check(c->prog, nested_how_init(h, c->seeds, c->bubbles), "marcel_attr_init");
	nested_check(c->prog, marcel_bubble_sched_begin(), "marcel_bubble_sched_begin");
}

/* calloc that exits with status 1 and a message when memory runs out. */
static inline void *nested_calloc(const char *prog, size_t n, size_t size)
{
	void *p = calloc(n, size);
	if (!p) {
		fprintf(stderr, "%s: out of memory for %zu x %zu bytes\n", prog, n, size);
		exit(1);
	}
	return p;
}

/* "seeds, a bubble per level", "threads, no bubbles"...: how h makes each level's pair. */
static inline const char *nested_how_name(const struct nested_how *h)
{
	static const char *const names[2][3] = {
		{ "threads, no bubbles", "threads, a bubble per level", "threads, two bubbles per level" },
		{ "seeds, no bubbles", "seeds, a bubble per level", "seeds, two bubbles per level" },
	};
	return names[h->seeds != 0][h->bubbles];
}

/* The end of both examples: releases h and stops the runtime. */
static inline void nested_end(const char *prog, struct nested_how *h)
{
	nested_check(prog, marcel_attr_destroy(&h->attr), "marcel_attr_destroy");
	marcel_end();
}

/* ---------------- timing ---------------- */

static inline double nested_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int nested_cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

/* Median of the n times in t (sorts t). */
static inline double nested_median(double *t, int n)
{
	qsort(t, (size_t)n, sizeof(*t), nested_cmp_double);
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

#endif
