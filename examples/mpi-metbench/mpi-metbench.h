/*
 * MetBench (Minimum Execution Time Benchmark) as the seeds describe it: an MPI program
 * whose ranks each compute a load per iteration, then all meet; so every iteration lasts
 * as long as the heaviest rank, and the lighter ones wait inside MPI. MetBenchVar
 * (--swap S) reverses the imbalance every S iterations. Plain MPI and C, no marcel: it is
 * the unmodified program that libmarcel-dlrb is preloaded into.
 *
 * A load is an amount of work, not of time: a number of repetitions of one fixed
 * computation (a chunk), fixed before the run from the load and a rate in chunks per
 * millisecond. A rank that gets more of the processor finishes its load sooner, which is
 * what a balancer acts on; a balancer that only waited out a clock could change nothing.
 *
 * What each rank computes (its values) depends on its rank and the iteration alone, and
 * what it receives on the values of the ranks that sent it: never on the loads, the
 * time unit, the rate or the timing. So the checksums say whether anything between the
 * program and its results (a preloaded library, a scheduler) changed what was computed
 * or delivered, whatever it did to the time.
 */
#ifndef MPI_METBENCH_H
#define MPI_METBENCH_H

#include <stdint.h>

#define MPB_PROG "mpi-metbench"
#define MPB_MAX_LOADS 4096

/* How the ranks meet at the end of an iteration. */
enum mpb_sync {
	MPB_BARRIER,    /* MPI_Barrier: MetBench's own */
	MPB_EXCHANGE,   /* MPI_Isend/MPI_Irecv with both ring neighbours, MPI_Waitall: BT-MZ's */
	MPB_ALLREDUCE,  /* MPI_Allreduce of the iteration's values (a sum) */
};

struct mpb_config {
	long loads[MPB_MAX_LOADS];  /* the --loads list, relative; rank r has loads[r % nloads] */
	long nloads;
	long unit_us;               /* microseconds of the heaviest load */
	long iters;
	long swap;                  /* reverse the loads every swap iterations; 0: never */
	enum mpb_sync sync;
	int irregular;              /* --no-iterations */
	uint64_t seed;              /* of --no-iterations' draws */
	long chunks_per_ms;         /* the rate; 0: rank 0 measures it */
	int check;                  /* verify every value received */
};

/* Fills @p c from the command line (usage in options.c); reads nothing of MPI, so it
 * runs before MPI_Init. Exits with status 0 after --help, and with status 2 after a bad
 * option, naming it, what it was given and what is accepted. */
void mpb_parse(struct mpb_config *c, int argc, char **argv);

/* The name of a sync kind, as --sync takes it. */
const char *mpb_sync_name(enum mpb_sync s);

/* The chunk: a fixed run of dependent floating-point steps from @p seed, about a
 * microsecond. Its result is a pure function of the seed (built without fused
 * multiply-add, so on every target). */
double mpb_chunk(double seed);

/* The value rank @p r computes at iteration (or step) @p t: the bits of the chunk's
 * result from a seed made of r and t alone. */
uint64_t mpb_value(long r, long t);

/* Computes rank @p r's value at @p t, repeating the chunk @p reps times in all (at least
 * once: the value is always computed) so that the work is reps chunks. */
uint64_t mpb_compute(long r, long t, long reps);

/* Measures the chunks one processor computes per millisecond: the best of several short
 * timings, as a timing that lost its processor midway only looks slower. */
long mpb_calibrate(void);

/* Rank @p r's load at iteration @p t, in the --loads list's units: in the reversed
 * periods of --swap, a load L becomes min + max - L (min and max over the ranks), so
 * heavy and light ranks exchange their loads, as metbench's --swap. */
long mpb_load(const struct mpb_config *c, long r, long t, long min_load, long max_load);

/* The chunks in @p us microseconds at @p chunks_per_ms. */
long mpb_reps(double us, long chunks_per_ms);

/* Folds @p v into the hash @p h: FNV-1a's step, a 64-bit word at a time (as metbench's). */
uint64_t mpb_fold(uint64_t h, uint64_t v);
#define MPB_FOLD_START 0xcbf29ce484222325ULL

/* Monotonic clock, in seconds. Not MPI_Wtime: a tool that follows the MPI calls would
 * see the timing calls among the program's own. */
double mpb_now(void);

/* A step of the splitmix64 generator: the same sequence on every rank from one seed. */
uint64_t mpb_next(uint64_t *state);

/* One rank's run: what it knows of the job, what it measured, what it computed. */
struct mpb_rank {
	int rank, nranks;
	double compute, mpi;   /* seconds computing and inside MPI calls */
	uint64_t computed;     /* hash of the values it computed, in order */
	uint64_t exchanged;    /* hash of the values it received (sums for allreduce), in order */
	long received;         /* values received (allreduce: results) */
	long checked, wrong;   /* of those, checked against a recomputation, and differing */
	int *scratch;          /* nranks ints: --no-iterations' draw of pairs */
};

/* The meeting at the end of iteration @p t, after rank @p me computed @p v: sends and
 * receives what --sync says, times it, folds what it received into me->exchanged and,
 * with --check, checks it. MPI's default error handler ends the job on an MPI error. */
void mpb_meet(const struct mpb_config *c, struct mpb_rank *me, long t, uint64_t v);

/* Step @p s of --no-iterations: computes a random length, then exchanges with random
 * peers, or with none. @p draws is the generator every rank steps alike. */
void mpb_irregular_step(const struct mpb_config *c, struct mpb_rank *me, long s, long chunks_per_ms,
			uint64_t *draws);

#endif
