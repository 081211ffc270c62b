/*
 * Numerical integration and sampling with threads. original.c is the POSIX threads
 * program; ported.c is the same program after the porting diff of doc/porting.md.
 *
 * Phase 1: a work queue (mutex + condition variables) hands out slices of [0, 1]; the
 *          workers integrate 4 / (1 + x^2) over them with the midpoint rule.
 * Barrier: one worker (PTHREAD_BARRIER_SERIAL_THREAD) adds up the slices, in order.
 * Phase 2: each worker draws its share of pseudo-random points in the unit square,
 *          counts those under 1 / (1 + x^2) and bins their x into a shared histogram.
 * Barrier: the serial worker turns the count into a second estimate of pi.
 * Per-thread counters live under a key (created once with pthread_once); its
 * destructor adds them to the totals when each worker ends.
 *
 * The output does not depend on the number of workers or on which worker took what.
 * Usage: original|ported [workers] (1..64, default 4)
 */
#include <pthread.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORKERS 64
#define NTASKS 64                /* slices of [0, 1] */
#define STEPS_PER_TASK 100000    /* midpoint-rule steps per slice */
#define NSAMPLES 400000          /* points drawn in phase 2, over all workers */
#define NBINS 10
#define QUEUE_SIZE 8             /* tasks the queue holds at once */

/* Phase 1: the work queue. */
struct task {
	int id;
	double lo, hi;
};
static struct {
	pthread_mutex_t lock;
	pthread_cond_t nonempty;   /* a task was queued or the queue was closed */
	pthread_cond_t nonfull;    /* a task was taken */
	struct task ring[QUEUE_SIZE];
	unsigned head, tail;       /* tasks queued: tail - head */
	int closed;
} queue = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
	    { { 0, 0, 0 } }, 0, 0, 0 };

static void queue_put(struct task t)
{
	pthread_mutex_lock(&queue.lock);
	while (queue.tail - queue.head == QUEUE_SIZE)
		pthread_cond_wait(&queue.nonfull, &queue.lock);
	queue.ring[queue.tail++ % QUEUE_SIZE] = t;
	pthread_cond_signal(&queue.nonempty);
	pthread_mutex_unlock(&queue.lock);
}

static void queue_close(void)
{
	pthread_mutex_lock(&queue.lock);
	queue.closed = 1;
	pthread_cond_broadcast(&queue.nonempty);
	pthread_mutex_unlock(&queue.lock);
}

/* Returns 0 once the queue is closed and empty. */
static int queue_get(struct task *t)
{
	int got = 0;
	pthread_mutex_lock(&queue.lock);
	while (queue.tail == queue.head && !queue.closed)
		pthread_cond_wait(&queue.nonempty, &queue.lock);
	if (queue.tail != queue.head) {
		*t = queue.ring[queue.head++ % QUEUE_SIZE];
		pthread_cond_signal(&queue.nonfull);
		got = 1;
	}
	pthread_mutex_unlock(&queue.lock);
	return got;
}

/* Per-thread counters, under a key; the destructor folds them into the totals. */
struct counters {
	long tasks, samples;
};
static pthread_key_t counters_key;
static pthread_once_t counters_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t totals_lock = PTHREAD_MUTEX_INITIALIZER;
static struct counters totals;

static void counters_fold(void *value)
{
	struct counters *c = value;
	pthread_mutex_lock(&totals_lock);
	totals.tasks += c->tasks;
	totals.samples += c->samples;
	pthread_mutex_unlock(&totals_lock);
	free(c);
}

static void counters_make_key(void)
{
	if (pthread_key_create(&counters_key, counters_fold) != 0)
		abort();
}

static struct counters *my_counters(void)
{
	pthread_once(&counters_once, counters_make_key);
	struct counters *c = pthread_getspecific(counters_key);
	if (c == NULL) {
		c = calloc(1, sizeof(*c));
		if (c == NULL || pthread_setspecific(counters_key, c) != 0)
			abort();
	}
	return c;
}

/* Shared results. */
static int nworkers = 4;
static pthread_barrier_t phase_barrier;
static double partial[NTASKS];         /* phase 1, one slot per task */
static double pi_quadrature, pi_sampling;
static pthread_mutex_t histogram_lock = PTHREAD_MUTEX_INITIALIZER;
static long histogram[NBINS], under;   /* phase 2 */

static double f(double x)
{
	return 1.0 / (1.0 + x * x);
}

/* The i-th pseudo-random number in [0, 1) (splitmix64): the same whoever draws it. */
static double uniform(uint64_t i)
{
	uint64_t z = (i + 1) * 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return (double)(z >> 11) / 9007199254740992.0;
}

static void *worker(void *arg)
{
	long rank = (long)arg;
	struct counters *mine = my_counters();
	struct task t;

	while (queue_get(&t)) {
		double h = (t.hi - t.lo) / STEPS_PER_TASK, sum = 0;
		for (int s = 0; s < STEPS_PER_TASK; s++)
			sum += f(t.lo + (s + 0.5) * h);
		partial[t.id] = 4 * sum * h;
		mine->tasks++;
	}

	if (pthread_barrier_wait(&phase_barrier) == PTHREAD_BARRIER_SERIAL_THREAD) {
		double sum = 0;
		for (int i = 0; i < NTASKS; i++)   /* in order: the same sum every run */
			sum += partial[i];
		pi_quadrature = sum;
	}

	long local[NBINS] = { 0 }, local_under = 0;
	long first = NSAMPLES * rank / nworkers, last = NSAMPLES * (rank + 1) / nworkers;
	for (long i = first; i < last; i++) {
		double x = uniform(2 * (uint64_t)i), y = uniform(2 * (uint64_t)i + 1);
		if (y <= f(x)) {
			local_under++;
			local[(int)(x * NBINS)]++;
		}
		mine->samples++;
	}
	pthread_mutex_lock(&histogram_lock);
	for (int b = 0; b < NBINS; b++)
		histogram[b] += local[b];
	under += local_under;
	pthread_mutex_unlock(&histogram_lock);

	if (pthread_barrier_wait(&phase_barrier) == PTHREAD_BARRIER_SERIAL_THREAD)
		pi_sampling = 4.0 * (double)under / NSAMPLES;
	return NULL;
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f, "usage: %s [workers]\n"
		   "  workers  threads sharing the work, a whole number from 1 to %d (default %d)\n",
		prog, MAX_WORKERS, nworkers);
}

/* Reads the worker count, if given. Exits with status 0 after --help and 2 (a usage
 * error) after a bad argument, naming it. */
static void parse_args(int argc, char **argv)
{
	const char *prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		usage(stdout, prog);
		exit(0);
	}
	if (argc > 2) {
		fprintf(stderr, "%s: unexpected argument '%s': only a worker count is accepted\n", prog, argv[2]);
		usage(stderr, prog);
		exit(2);
	}
	if (argc == 2) {
		char *end;
		errno = 0;
		long n = strtol(argv[1], &end, 10);
		/* A digit first: strtol alone would take "", " 4" or "-0". */
		if (argv[1][0] < '0' || argv[1][0] > '9' || *end != 0 || errno != 0 || n < 1 || n > MAX_WORKERS) {
			fprintf(stderr, "%s: workers '%s': expected a whole number from 1 to %d\n", prog, argv[1],
				MAX_WORKERS);
			usage(stderr, prog);
			exit(2);
		}
		nworkers = (int)n;
	}
}

int main(int argc, char **argv)
{
	pthread_t threads[MAX_WORKERS];
	pthread_attr_t attr;

	parse_args(argc, argv);

	pthread_barrier_init(&phase_barrier, NULL, nworkers);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_JOINABLE);
	for (long i = 0; i < nworkers; i++)
		if (pthread_create(&threads[i], &attr, worker, (void *)i) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			abort();
		}
	pthread_attr_destroy(&attr);

	for (int i = 0; i < NTASKS; i++)
		queue_put((struct task){ i, (double)i / NTASKS, (double)(i + 1) / NTASKS });
	queue_close();

	for (int i = 0; i < nworkers; i++)
		pthread_join(threads[i], NULL);
	pthread_barrier_destroy(&phase_barrier);

	printf("workers: %d, tasks: %d of %d steps, samples: %d\n", nworkers, NTASKS, STEPS_PER_TASK,
	       NSAMPLES);
	printf("pi by quadrature: %.12f\n", pi_quadrature);
	printf("pi by sampling:   %.12f (%ld points under the curve)\n", pi_sampling, under);
	printf("x of the points under the curve:\n");
	for (int b = 0; b < NBINS; b++) {
		printf("  [%.1f, %.1f) %6ld ", (double)b / NBINS, (double)(b + 1) / NBINS, histogram[b]);
		for (long n = 0; n < histogram[b] * 50 / (NSAMPLES / NBINS); n++)
			putchar('#');
		putchar('\n');
	}
	printf("key destructors counted %ld tasks and %ld samples\n", totals.tasks, totals.samples);
	return 0;
}
