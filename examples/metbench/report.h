/*
 * The report of an iterative run whose workers meet at a barrier every iteration, as
 * MetBench prints it: per iteration, its duration and each worker's compute and wait
 * fractions, with MARCEL_HWPRIO set every VP's hardware-priority level; at the end, each
 * worker's totals and, with hwprio, its compute fraction over the first two iterations
 * (before hwprio has decided anything) and over the last half, the imbalance and
 * hwprio's statistics. metbench and conduction/marcel (whose workers are its stripes)
 * print through it, so that their reports read alike.
 *
 * It only formats what the caller measured: one thread calls it, outside the workers'
 * loop, between marcel_init and marcel_end.
 */
#ifndef MB_REPORT_H
#define MB_REPORT_H

/* One worker in one iteration. */
struct mb_sample {
	long load;       /* printed before its fractions: its work, in the program's units */
	double compute;  /* seconds computing */
	double wait;     /* seconds from the end of its computation to the end of the iteration */
};

/* Totals over the iterations accounted so far. */
struct mb_report {
	const char *noun;        /* a worker's name in the summary ("worker", "stripe") */
	long workers;
	long iters;              /* iterations the run has: the last half starts at iters / 2 */
	int lines;               /* print a line per iteration */
	int hwprio;              /* MARCEL_HWPRIO is on */
	double time;             /* the iterations' durations, summed */
	double *compute;         /* per worker, seconds */
	double *wait;            /* per worker, seconds */
	double *early;           /* per worker, compute fraction summed over the first two */
	double *late;            /* per worker, compute fraction summed over the last half */
	double early_n, late_n;  /* iterations summed in early and late */
};

/* Prepares @p rep for @p workers workers called @p noun and @p iters iterations, with a
 * line per iteration if @p lines. Exits with status 1 after a message naming @p prog if
 * memory runs out. */
void mb_report_init(struct mb_report *rep, const char *prog, const char *noun, long workers, long iters,
		    int lines);

void mb_report_free(struct mb_report *rep);

/* Stores every VP's level now in @p levels (marcel_nbvps() of them; 0 while hwprio is
 * off). A relaxed load per VP: cheap enough for a worker's loop. */
void mb_report_levels(signed char *levels);

/* Accounts for iteration @p t, which lasted @p span seconds: @p s holds a sample per
 * worker, @p levels the VPs' levels to print with it (marcel_nbvps() of them; not read
 * while hwprio is off). Prints its line if asked to. */
void mb_report_iteration(struct mb_report *rep, long t, double span, const struct mb_sample *s,
			 const signed char *levels);

/* Prints a line per worker, the imbalance (max compute / mean compute) and, with hwprio,
 * the iterations it measured and the changes it made. The program's own lines (its
 * checksum, its time) are its own to print. */
void mb_report_summary(const struct mb_report *rep);

#endif
