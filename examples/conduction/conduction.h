/*
 * A stencil on a grid, shared by the four variants of examples/conduction (and, with
 * another kernel, of examples/advection):
 * simple.c (plain pthreads), fixed.c (pthreads pinned with hwloc), marcel.c (simple.c
 * ported to marcel, with bubbles) and openmp.c. The variants differ only in how they run
 * the stripes; the arithmetic is the kernel's, the same for all, so their checksums are
 * bit-identical.
 *
 * The grid is N x M (2D, 5-point stencil) or N x M x K (--3d, 7-point stencil), with
 * fixed boundary values. It is split along its first axis into one stripe of rows (of
 * planes in 3D) per thread. Iteration t reads buffer t % 2 and writes the other, so a
 * barrier between iterations is the only synchronisation, and each cell's new value
 * depends on the previous iteration alone: the result does not depend on how many
 * stripes there are or on who computes them.
 */
#ifndef CONDUCTION_H
#define CONDUCTION_H

struct cond_run {
	const char *prog;  /* names the program in messages */
	int dims;          /* 2 or 3 */
	long n, m, k;      /* points along each axis (k = 1 in 2D) */
	long iters;
	int nthreads;      /* = number of stripes */
	int imbalance;     /* --imbalance: a moving band of rows costs HOT_COST times more */
	long row0;         /* the whole grid's row of row 0 here (an MPI rank's slab), else 0 */
	long grid_n;       /* rows of the whole grid, 0: n (the band moves over the whole grid) */
	int report;        /* --report: a line per iteration (programs with a reporter only) */
	/* When the stripes are timed (cond_alloc asked the reporter), stripe s's readings:
	 * times[s][0].end the end of its initialisation, times[s][t + 1] its iteration t.
	 * Else NULL. */
	struct cond_times **times;
	double *buf[2];
};

/* Monotonic clock readings around one stripe's work, in seconds (cond_now). Each stripe
 * writes only its own array, which starts on a cache line and ends on one. */
struct cond_times {
	double start, end;
};

/* The stencil's name ("conduction", "advection"), defined by its kernel: programs are
 * named "<stencil>/<variant>" in their messages. */
extern const char cond_stencil[];

/* Fills @p r from the command line (see usage in common.c) for the program variant
 * @p variant ("simple", "marcel"...). Exits with status 0 after --help and 2 after a bad
 * option, saying which. */
void cond_parse(struct cond_run *r, int argc, char **argv, const char *variant);

/* cond_parse() for a program named @p prog in its messages (kept, not copied), whose
 * --threads the usage describes as @p threads_help (NULL: one thread per stripe, by
 * default one per processor online). */
void cond_parse_named(struct cond_run *r, int argc, char **argv, const char *prog,
		      const char *threads_help);

/* Allocates both buffers without touching them: each stripe's thread touches its own rows
 * first (cond_init_stripe), so on a NUMA machine they live near that thread. Then, if the
 * program has a reporter and it wants the stripes timed, their times (16 bytes per
 * stripe and iteration). */
void cond_alloc(struct cond_run *r);
void cond_free(struct cond_run *r);

/* Stripe @p s owns rows [*lo, *hi) of the first axis, boundaries included. */
void cond_stripe_rows(const struct cond_run *r, int s, long *lo, long *hi);

/* Sets the initial values (cond_initial) of stripe @p s's rows in both buffers. */
void cond_init_stripe(const struct cond_run *r, int s);

/* --imbalance: whether row @p i (of this run: row0 + i of the whole grid) is in the
 * costly band at iteration @p t. The band, an eighth of the grid wide, moves from the
 * first interior row to the last once during the run; each kernel decides what makes its
 * rows costlier. */
int cond_hot_row(const struct cond_run *r, long i, long t);

/* How many of the rows stripe @p s computes are in the band at iteration @p t (0 without
 * --imbalance). */
long cond_hot_rows(const struct cond_run *r, int s, long t);

/* The kernel (conduction/kernel.c or advection/kernel.c). */
/* The initial value of cell (i, j, l) (l = 0 in 2D); boundary cells keep it. */
double cond_initial(const struct cond_run *r, long i, long j, long l);

/* Computes iteration @p t on stripe @p s. */
void cond_step(const struct cond_run *r, int s, long t);

/* What the variants call: cond_step(), between two clock readings (r->times) when the
 * stripes are timed; then, on stripe 0, the reporter's per-iteration sample. simple.c
 * calls it too, although it never reports: marcel.c stays simple.c plus the port, the
 * diff doc/porting.md shows. */
void cond_stripe_step(const struct cond_run *r, int s, long t);

/* What a program's runtime adds to the report. conduction/marcel links
 * conduction/marcel_report.c, whose reporter times the stripes with MARCEL_HWPRIO set or
 * --report and prints their fractions and hwprio's levels; the other programs link none. */
struct cond_reporter {
	/* cond_alloc, after cond_parse: whether to time the stripes. Only then are the other
	 * hooks called. */
	int (*start)(const struct cond_run *r);
	/* Stripe 0, as its computation of iteration @p t ends: no lock, no allocation. */
	void (*iteration)(const struct cond_run *r, long t);
	/* cond_report, after the run, between its first line and the checksum. */
	void (*print)(const struct cond_run *r);
	/* cond_free: frees what start allocated. */
	void (*stop)(void);
};

/* This program's reporter, or NULL: common.c's definition is weak, and a program that
 * links a reporter replaces it. */
const struct cond_reporter *cond_reporter(void);

/* Prints the size, the checksum of the final grid (a fixed-order reduction of its bit
 * patterns) and @p seconds; when the stripes were timed, the reporter's report between
 * the size and the checksum. */
void cond_report(const struct cond_run *r, double seconds);

/* Monotonic clock, in seconds. */
double cond_now(void);

/* calloc that exits with a message on failure. */
void *cond_calloc(const struct cond_run *r, size_t n, size_t size);

/* Exits with status 1 after "prog: what: strerror(err)" when err is not 0. */
void cond_check(const struct cond_run *r, int err, const char *what);

/* cond_check() of a call returning an error code, named in the message as written, so
 * that a check fits on the line of its call: COND_CHECK(&run, pthread_join(t, NULL)). */
#define COND_CHECK(r, call) cond_check((r), (call), #call)

#endif
