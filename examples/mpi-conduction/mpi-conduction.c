/*
 * Heat conduction across MPI ranks: examples/conduction's stencil with the first axis
 * split across the ranks (slab.h), and inside each rank one marcel thread per stripe of
 * its slab, grouped in bubbles as in conduction/marcel.c. The threads computing a slab's
 * edge rows exchange them with the neighbouring ranks before each iteration
 * (MPI_Isend/MPI_Irecv), and wait with marcel_mpi_waitall(): while they wait, their
 * worker runs the other stripes. At the end rank 0 gathers the grid and prints the
 * checksum that conduction/simple prints for the same options.
 *
 * Usage: mpirun -np R mpi-conduction [--thread-level multiple|serialized]
 *        [--size N|NxM|NxMxK] [--iters T] [--threads P] [--3d] [--imbalance]
 *        (P threads per rank; --imbalance moves the band over the whole grid)
 */
#include <marcel.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "slab.h"

/* Its name in messages: the program's, not "<stencil>/<variant>" as the others'. */
#define PROG "mpi-conduction"
#define THREADS_HELP \
	"threads of each rank, one stripe each (default: the processors\n" \
	"               online, at most the interior rows of the rank with the fewest)"

static struct slab slab;
static marcel_barrier_t barrier;

static void *stripe_thread(void *arg)
{
	int s = (int)(long)arg;
	int edges = slab_edges(&slab, s);
	for (long t = 0; t < slab.run.iters; t++) {
		if (edges)
			slab_exchange(&slab, edges, t);
		cond_step(&slab.run, s, t);
		int err = marcel_barrier_wait(&barrier);
		cond_check(&slab.run, err == MARCEL_BARRIER_SERIAL_THREAD ? 0 : err, "marcel_barrier_wait");
	}
	return NULL;
}

/* Bubbles follow the data: neighbouring stripes share rows, so pairs of stripes go in a
 * bubble, pairs of those in a bubble, and so on up to one bubble for the slab. Built
 * bottom-up, one level at a time; a level with an odd count carries its last bubble up
 * unchanged. */
static marcel_bubble_t *bubbles;
static int nbubbles;

static marcel_bubble_t *new_bubble(void)
{
	marcel_bubble_t *b = &bubbles[nbubbles++];
	cond_check(&slab.run, marcel_bubble_init(b), "marcel_bubble_init");
	return b;
}

static marcel_bubble_t *bubble_tree(marcel_t *tids, int n)
{
	/* (n + 1) / 2 leaves, and each merge of two makes one more: fewer than n + 1 in all. */
	bubbles = cond_calloc(&slab.run, (size_t)n + 1, sizeof(*bubbles));
	marcel_bubble_t **level = cond_calloc(&slab.run, (size_t)n, sizeof(*level));
	int width = 0;
	for (int s = 0; s < n; s += 2, width++) {
		level[width] = new_bubble();
		for (int i = s; i < n && i < s + 2; i++)
			cond_check(&slab.run, marcel_bubble_inserttask(level[width], tids[i]),
				   "marcel_bubble_inserttask");
	}
	while (width > 1) {
		int up = 0;
		for (int i = 0; i < width; i += 2, up++) {
			if (i + 1 == width) {
				level[up] = level[i];
				continue;
			}
			marcel_bubble_t *b = new_bubble();
			for (int j = i; j < i + 2; j++)
				cond_check(&slab.run, marcel_bubble_insertbubble(b, level[j]),
					   "marcel_bubble_insertbubble");
			level[up] = b;
		}
		width = up;
	}
	marcel_bubble_t *root = level[0];
	free(level);
	return root;
}

/* Threads start once the whole tree is woken: placed before they run. */
static void run_threads(void)
{
	int n = slab.run.nthreads;
	marcel_t *tids = cond_calloc(&slab.run, (size_t)n, sizeof(*tids));
	cond_check(&slab.run, marcel_barrier_init(&barrier, NULL, (unsigned)n), "marcel_barrier_init");
	for (int s = 0; s < n; s++)
		cond_check(&slab.run, marcel_create_dontsched(&tids[s], NULL, stripe_thread, (void *)(long)s),
			   "marcel_create_dontsched");
	cond_check(&slab.run, marcel_wake_up_bubble(bubble_tree(tids, n)), "marcel_wake_up_bubble");
	cond_check(&slab.run, marcel_bubble_sched_begin(), "marcel_bubble_sched_begin");
	for (int s = 0; s < n; s++)
		cond_check(&slab.run, marcel_join(tids[s], NULL), "marcel_join");
	for (int b = 0; b < nbubbles; b++)  /* children were made before their parents */
		cond_check(&slab.run, marcel_bubble_join(&bubbles[b]) ?: marcel_bubble_destroy(&bubbles[b]),
			   "marcel_bubble_join/destroy");
	marcel_barrier_destroy(&barrier);
	free(bubbles);
	free(tids);
}

/* The options this program adds to the stencil's, taken out of argv before
 * cond_parse_named() sees it. */
struct mpi_options {
	int level;          /* the MPI thread level to ask for */
	int threads_given;  /* --threads was given: too many is an error, not a default */
};

/* The stencil's usage (cond_parse_named) follows this. */
static void mpi_usage(FILE *f)
{
	fprintf(f,
		"%s: the stencil with its first axis split across MPI ranks, each rank's rows\n"
		"computed by marcel threads: mpirun -np R %s [--thread-level L] [options]\n"
		"  --thread-level L  MPI thread level to ask for: multiple (default) or serialized\n",
		PROG, PROG);
}

static _Noreturn void bad_mpi_option(const char *opt, const char *val)
{
	if (val)
		fprintf(stderr, "%s: option '%s': '%s' is not a thread level: multiple or serialized\n",
			PROG, opt, val);
	else
		fprintf(stderr, "%s: option '%s' needs a value: multiple or serialized\n", PROG, opt);
	mpi_usage(stderr);
	exit(2);
}

static struct mpi_options take_mpi_options(int *argc, char **argv)
{
	struct mpi_options o = { MPI_THREAD_MULTIPLE, 0 };
	int kept = 1;
	for (int i = 1; i < *argc; i++) {
		const char *opt = argv[i];
		if (strcmp(opt, "--thread-level") != 0) {
			if (strcmp(opt, "--help") == 0 || strcmp(opt, "-h") == 0)
				mpi_usage(stdout);  /* cond_parse_named() adds the stencil's and exits */
			o.threads_given |= strcmp(opt, "--threads") == 0;
			argv[kept++] = argv[i];
			continue;
		}
		if (i + 1 >= *argc)
			bad_mpi_option(opt, NULL);
		const char *val = argv[++i];
		if (strcmp(val, "multiple") == 0)
			o.level = MPI_THREAD_MULTIPLE;
		else if (strcmp(val, "serialized") == 0)
			o.level = MPI_THREAD_SERIALIZED;
		else
			bad_mpi_option(opt, val);
	}
	argv[kept] = NULL;
	*argc = kept;
	return o;
}

/* Every rank needs at least one interior row per thread. All ranks decide alike, from
 * the same options; rank 0 alone says why. Returns 0, or 2 for a usage error. */
static int fit_threads(struct cond_run *grid, const struct mpi_options *o, int rank, int nranks)
{
	long fewest = (grid->n - 2) / nranks;  /* rows of the rank with the fewest */
	if (fewest < 1) {
		if (rank == 0)
			fprintf(stderr, "%s: %d ranks, but --size gives the first axis only %ld interior "
				"points: use at most %ld ranks or a larger --size\n",
				grid->prog, nranks, grid->n - 2, grid->n - 2);
		return 2;
	}
	if (grid->nthreads <= fewest)
		return 0;
	if (!o->threads_given) {
		grid->nthreads = (int)fewest;
		return 0;
	}
	if (rank == 0)
		fprintf(stderr, "%s: option '--threads': %d threads per rank, but with %d ranks some "
			"rank has only %ld interior rows: use at most %ld\n",
			grid->prog, grid->nthreads, nranks, fewest, fewest);
	return 2;
}

/* Rank 0 prints the report; its header line names the ranks and the thread level. */
static void report(const struct slab *sl, int level, double seconds)
{
	char prog[128];
	snprintf(prog, sizeof(prog), "%s on %d rank%s, %s", sl->grid.prog, sl->nranks,
		 sl->nranks > 1 ? "s" : "", marcel_mpi_level_name(level));
	struct cond_run whole = sl->grid;
	whole.prog = prog;
	whole.buf[0] = whole.buf[1] = sl->whole;
	cond_report(&whole, seconds);
}

int main(int argc, char **argv)
{
	int err = marcel_init(&argc, argv);
	if (err != 0)  /* it said why; EINVAL: a bad --marcel-* option or MARCEL_* variable */
		return err == EINVAL ? 2 : 1;
	struct mpi_options o = take_mpi_options(&argc, argv);
	struct cond_run grid;
	cond_parse_named(&grid, argc, argv, PROG, THREADS_HELP);

	int provided, rank, nranks;
	if ((err = marcel_mpi_init(&argc, &argv, o.level, &provided)) != 0) {
		/* It printed why for EINVAL, ENOTSUP and EIO, not for these two. */
		if (err == EPERM)
			fprintf(stderr, "%s: marcel_mpi_init: %s: the marcel runtime is not running\n", PROG,
				strerror(err));
		else if (err == EBUSY)
			fprintf(stderr, "%s: marcel_mpi_init: %s: MPI was already initialised\n", PROG,
				strerror(err));
		marcel_end();
		return 1;
	}
	marcel_mpi_enter();
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	marcel_mpi_leave();
	int status = fit_threads(&grid, &o, rank, nranks);
	if (status == 0) {
		slab_create(&slab, &grid, rank, nranks);
		slab_scatter(&slab);
		double t0 = cond_now();
		run_threads();
		double seconds = cond_now() - t0, slowest = 0;
		slab_gather(&slab);
		/* The run takes as long as its slowest rank. */
		MPI_Request req;
		marcel_mpi_enter();
		err = MPI_Ireduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD, &req);
		marcel_mpi_leave();
		slab_check(&slab, err, "MPI_Ireduce");
		slab_check(&slab, marcel_mpi_wait(&req, MPI_STATUS_IGNORE), "marcel_mpi_wait");
		if (rank == 0)
			report(&slab, provided, slowest);
		slab_destroy(&slab);
	}
	cond_check(&grid, marcel_mpi_finalize(), "marcel_mpi_finalize");
	marcel_end();
	return status;
}
