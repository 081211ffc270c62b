/*
 * The MPI side of tests/check_mpi: check_mpi runs its own binary under mpirun with
 * "--helper MODE" (see ma_mpi_helper below), so that MPI starts in a process of its own,
 * launched as MPI programs are, and never in a Check child. Every check here is an
 * assertion: the first that fails prints what it saw and exits with status 1, which
 * mpirun passes on.
 *
 *   --helper waits multiple|serialized   marcel_mpi_wait* on one rank, 2 VPs
 *   --helper levels                      marcel_mpi_init's checks of the thread level
 *   --helper crowd shared|alone          whether marcel_mpi_init told the runtime that
 *                                        the node's ranks share its processors
 *   --helper iterations                  completed waits are hwprio's iterations
 *                                        (MARCEL_HWPRIO=none), one rank
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <marcel.h>
#include <marcel/mpi.h>
#include "ma_idle_probe.h"

int ma_mpi_helper(int argc, char **argv);  /* called by check_mpi's main */

#define REQUIRE(cond, ...)                                                              \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "mpi-helper:%d: %s: ", __LINE__, #cond);        \
			fprintf(stderr, __VA_ARGS__);                                   \
			fputc('\n', stderr);                                            \
			exit(1);                                                        \
		}                                                                       \
	} while (0)

/*
 * MPI's profiling interface lets a program stand in for an MPI function: this one asks
 * the real MPI_Init_thread (PMPI_) for the level, then, when MA_MPI_FAKE_PROVIDED is set,
 * reports that level as the one provided instead. libmarcel-mpi's call lands here, so
 * its check of an insufficient level runs for real, with Open MPI, which always provides
 * MPI_THREAD_MULTIPLE.
 */
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	int err = PMPI_Init_thread(argc, argv, required, provided);
	const char *fake = getenv("MA_MPI_FAKE_PROVIDED");
	if (err == MPI_SUCCESS && fake != NULL)
		*provided = atoi(fake);
	return err;
}

/* ---- waits ---- */

#define WAITERS 16            /* half bound to each VP */
#define PROGRESS 1000         /* yields each VP's runner makes while all waiters wait */
#define MANY 8                /* requests of the waitany / waitsome rounds */

struct waiter {
	int vp;                      /* where it is bound */
	int got[2];                  /* the two values it receives */
	int err, vp_before, vp_after, requests_null;
};

static struct waiter waiters[WAITERS];
static long progress[2];         /* yields made by the runner of each VP */
static int entered, finished, stop;

static void post(void *buf, int tag, int send, MPI_Request *req)
{
	REQUIRE(marcel_mpi_enter() == 0, "marcel_mpi_enter failed");
	int err = send ? MPI_Isend(buf, 1, MPI_INT, 0, tag, MPI_COMM_WORLD, req)
		       : MPI_Irecv(buf, 1, MPI_INT, 0, tag, MPI_COMM_WORLD, req);
	REQUIRE(err == MPI_SUCCESS, "%s to self, tag %d: MPI error %d", send ? "MPI_Isend" : "MPI_Irecv",
		tag, err);
	REQUIRE(marcel_mpi_leave() == 0, "marcel_mpi_leave failed");
}

/* Receives two messages from this rank, which main sends only once every waiter waits. */
static any_t waiter(any_t arg)
{
	struct waiter *w = arg;
	int i = (int)(w - waiters);
	MPI_Request req[2];
	post(&w->got[0], 2 * i, 0, &req[0]);
	post(&w->got[1], 2 * i + 1, 0, &req[1]);
	w->vp_before = marcel_current_vp();
	__atomic_add_fetch(&entered, 1, __ATOMIC_SEQ_CST);
	w->err = marcel_mpi_waitall(2, req, MPI_STATUSES_IGNORE);
	w->vp_after = marcel_current_vp();
	w->requests_null = req[0] == MPI_REQUEST_NULL && req[1] == MPI_REQUEST_NULL;
	__atomic_add_fetch(&finished, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* Counts its turns on its VP: it advances only if that VP's worker is free to run it. */
static any_t runner(any_t arg)
{
	long *count = arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		__atomic_add_fetch(count, 1, __ATOMIC_RELAXED);
		marcel_yield();
	}
	return NULL;
}

static marcel_t spawn_on(int vp, marcel_func_t f, any_t arg)
{
	marcel_attr_t a;
	marcel_t t;
	REQUIRE(marcel_attr_init(&a) == 0 && marcel_attr_setvpset(&a, MARCEL_VPSET_VP(vp)) == 0,
		"attributes for VP %d", vp);
	REQUIRE(marcel_create(&t, &a, f, arg) == 0, "marcel_create on VP %d", vp);
	marcel_attr_destroy(&a);
	return t;
}

/* Sleeps (which frees main's VP) until *count reaches target; if waiting blocked the
 * workers, this never returns and mpirun's time limit fails the test. */
static void await_count(const long *count, long target)
{
	while (__atomic_load_n(count, __ATOMIC_RELAXED) < target)
		marcel_usleep(500);
}

/* The point of the library: waiters on both VPs, and the runner of each VP keeps
 * running while they all wait. */
static void check_waiters_free_their_workers(void)
{
	marcel_t tw[WAITERS], tr[2];
	/* main watches from VP 0's own queue, in turn with the threads bound there: what is
	 * checked is that waiting frees the worker, not how the core shares VPs between
	 * their own queues and the machine's, where main would be otherwise. */
	marcel_vpset_t vp0 = MARCEL_VPSET_VP(0);
	REQUIRE(marcel_apply_vpset(&vp0) == 0, "binding main to VP 0");
	for (int v = 0; v < 2; v++)
		tr[v] = spawn_on(v, runner, &progress[v]);
	for (int i = 0; i < WAITERS; i++) {
		waiters[i].vp = i % 2;
		tw[i] = spawn_on(i % 2, waiter, &waiters[i]);
	}
	while (__atomic_load_n(&entered, __ATOMIC_SEQ_CST) < WAITERS)
		marcel_usleep(500);
	long from[2] = { __atomic_load_n(&progress[0], __ATOMIC_RELAXED),
			 __atomic_load_n(&progress[1], __ATOMIC_RELAXED) };
	for (int v = 0; v < 2; v++)
		await_count(&progress[v], from[v] + PROGRESS);
	REQUIRE(__atomic_load_n(&finished, __ATOMIC_SEQ_CST) == 0,
		"%d waiters returned before anything was sent", finished);
	printf("waiters: %d on 2 VPs waiting; runners on the same VPs made %ld and %ld turns meanwhile\n",
	       WAITERS, __atomic_load_n(&progress[0], __ATOMIC_RELAXED) - from[0],
	       __atomic_load_n(&progress[1], __ATOMIC_RELAXED) - from[1]);

	int values[2 * WAITERS];
	MPI_Request sends[2 * WAITERS];
	for (int tag = 0; tag < 2 * WAITERS; tag++) {
		values[tag] = 1000 + tag;
		post(&values[tag], tag, 1, &sends[tag]);
	}
	REQUIRE(marcel_mpi_waitall(2 * WAITERS, sends, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "sends");
	for (int i = 0; i < WAITERS; i++) {
		struct waiter *w = &waiters[i];
		REQUIRE(marcel_join(tw[i], NULL) == 0, "join waiter %d", i);
		REQUIRE(w->err == MPI_SUCCESS && w->requests_null, "waiter %d: error %d, requests %s", i,
			w->err, w->requests_null ? "freed" : "left active");
		REQUIRE(w->got[0] == 1000 + 2 * i && w->got[1] == 1001 + 2 * i, "waiter %d got %d, %d", i,
			w->got[0], w->got[1]);
		REQUIRE(w->vp_before == w->vp && w->vp_after == w->vp, "waiter %d bound to VP %d ran on %d, %d",
			i, w->vp, w->vp_before, w->vp_after);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int v = 0; v < 2; v++)
		REQUIRE(marcel_join(tr[v], NULL) == 0, "join runner %d", v);
}

/* Sends tags first..first+MANY-1 to this rank, last first, each waited with
 * marcel_mpi_wait() (with a status to fill, unlike the other waits here). */
static int sent[MANY];

static any_t sender(any_t arg)
{
	int first = (int)(long)arg;
	for (int i = MANY - 1; i >= 0; i--) {
		MPI_Request req;
		MPI_Status st;
		sent[i] = first + i;
		post(&sent[i], first + i, 1, &req);
		REQUIRE(marcel_mpi_wait(&req, &st) == MPI_SUCCESS && req == MPI_REQUEST_NULL, "send %d", i);
	}
	return NULL;
}

/* MANY receives completed through waitany (@p some = 0) or waitsome: each index comes
 * back once, with its status, then MPI_UNDEFINED once all requests are null. */
static void check_any_or_some(int some)
{
	int first = some ? 200 : 100, got[MANY], seen[MANY] = { 0 }, indices[MANY], n = 0;
	MPI_Request req[MANY];
	MPI_Status st[MANY];
	for (int i = 0; i < MANY; i++)
		post(&got[i], first + i, 0, &req[i]);
	marcel_t t;
	REQUIRE(marcel_create(&t, NULL, sender, (any_t)(long)first) == 0, "sender");
	for (;;) {
		int count = 1;  /* waitany completes one request at a time */
		if (some)
			REQUIRE(marcel_mpi_waitsome(MANY, req, &count, indices, st) == MPI_SUCCESS, "waitsome");
		else
			REQUIRE(marcel_mpi_waitany(MANY, req, &indices[0], &st[0]) == MPI_SUCCESS, "waitany");
		if (count == MPI_UNDEFINED || (!some && indices[0] == MPI_UNDEFINED))
			break;  /* no active request left */
		REQUIRE(count >= 1, "%s returned with nothing complete", some ? "waitsome" : "waitany");
		for (int c = 0; c < count; c++) {
			int i = indices[c];
			REQUIRE(i >= 0 && i < MANY && !seen[i], "index %d returned twice or out of range", i);
			REQUIRE(req[i] == MPI_REQUEST_NULL && st[c].MPI_TAG == first + i && st[c].MPI_SOURCE == 0 &&
				got[i] == first + i, "request %d: tag %d, source %d, value %d", i, st[c].MPI_TAG,
				st[c].MPI_SOURCE, got[i]);
			seen[i] = 1;
			n++;
		}
	}
	REQUIRE(n == MANY, "%s completed %d requests of %d", some ? "waitsome" : "waitany", n, MANY);
	REQUIRE(marcel_join(t, NULL) == 0, "join sender");
}

/* A plain kernel thread may wait too: it polls without a VP to give back. */
static void *kernel_thread_wait(void *arg)
{
	MPI_Request *req = arg;
	MPI_Status st;
	int err = marcel_mpi_wait(req, &st);
	return (void *)(long)(err == MPI_SUCCESS && *req == MPI_REQUEST_NULL && st.MPI_TAG == 300 ? 0 : 1);
}

static void check_kernel_thread(void)
{
	int in = 0, out = 300;
	MPI_Request rreq, sreq;
	pthread_t th;
	void *res;
	post(&in, 300, 0, &rreq);
	REQUIRE(pthread_create(&th, NULL, kernel_thread_wait, &rreq) == 0, "pthread_create");
	marcel_usleep(1000);  /* let it wait first; not needed for the check to hold */
	post(&out, 300, 1, &sreq);
	REQUIRE(marcel_mpi_wait(&sreq, MPI_STATUS_IGNORE) == MPI_SUCCESS, "send");
	REQUIRE(pthread_join(th, &res) == 0 && res == NULL && in == 300, "kernel thread's wait, got %d", in);
}

/* Arguments MPI_Wait* would reject, null requests, and the bracket's misuse. */
static void check_edges(int level)
{
	MPI_Request none[2] = { MPI_REQUEST_NULL, MPI_REQUEST_NULL };
	int index = 0, indices[2], count = 0;
	REQUIRE(marcel_mpi_wait(NULL, MPI_STATUS_IGNORE) == MPI_ERR_REQUEST, "wait(NULL)");
	REQUIRE(marcel_mpi_waitall(-1, none, MPI_STATUSES_IGNORE) == MPI_ERR_COUNT, "waitall(-1)");
	REQUIRE(marcel_mpi_waitall(0, NULL, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "waitall(0)");
	REQUIRE(marcel_mpi_waitall(2, NULL, MPI_STATUSES_IGNORE) == MPI_ERR_REQUEST, "waitall(2, NULL)");
	REQUIRE(marcel_mpi_waitany(2, none, NULL, MPI_STATUS_IGNORE) == MPI_ERR_ARG, "waitany(index NULL)");
	REQUIRE(marcel_mpi_waitsome(2, none, NULL, indices, MPI_STATUSES_IGNORE) == MPI_ERR_ARG, "waitsome");
	REQUIRE(marcel_mpi_wait(&none[0], MPI_STATUS_IGNORE) == MPI_SUCCESS, "wait(null request)");
	REQUIRE(marcel_mpi_waitall(2, none, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "waitall(null requests)");
	REQUIRE(marcel_mpi_waitany(2, none, &index, MPI_STATUS_IGNORE) == MPI_SUCCESS && index == MPI_UNDEFINED,
		"waitany(null requests): index %d", index);
	REQUIRE(marcel_mpi_waitsome(2, none, &count, indices, MPI_STATUSES_IGNORE) == MPI_SUCCESS &&
			count == MPI_UNDEFINED, "waitsome(null requests): outcount %d", count);
	if (level == MPI_THREAD_SERIALIZED) {
		REQUIRE(marcel_mpi_enter() == 0 && marcel_mpi_enter() == EDEADLK, "entering twice");
		REQUIRE(marcel_mpi_waitall(2, none, MPI_STATUSES_IGNORE) == MPI_ERR_OTHER, "waiting inside");
		REQUIRE(marcel_mpi_leave() == 0 && marcel_mpi_leave() == EPERM, "leaving twice");
	} else {
		REQUIRE(marcel_mpi_leave() == EINVAL, "leaving without entering");
	}
}

static void waits(int level)
{
	int got;
	REQUIRE(marcel_nbvps() >= 2, "%u VP: run with MARCEL_NVP=2", marcel_nbvps());
	REQUIRE(marcel_mpi_init(NULL, NULL, level, &got) == 0 && got >= level, "marcel_mpi_init: %d", got);
	check_waiters_free_their_workers();
	check_any_or_some(0);
	check_any_or_some(1);
	check_kernel_thread();
	check_edges(got);
	REQUIRE(marcel_mpi_finalize() == 0, "marcel_mpi_finalize");
	printf("mpi-helper: waits passed at %s\n", marcel_mpi_level_name(got));
}

/* ---- levels ---- */

/* marcel_mpi_init's refusals; the messages go to stderr, where check_mpi reads them. */
static int levels(int argc, char **argv)
{
	int got = -1;
	REQUIRE(marcel_mpi_init(&argc, &argv, MPI_THREAD_MULTIPLE, &got) == EPERM,
		"before marcel_init: not EPERM");
	REQUIRE(marcel_init(&argc, argv) == 0, "marcel_init");
	REQUIRE(marcel_mpi_init(&argc, &argv, MPI_THREAD_FUNNELED, &got) == EINVAL && got == -1,
		"MPI_THREAD_FUNNELED accepted");
	char fake[16];
	snprintf(fake, sizeof(fake), "%d", MPI_THREAD_SERIALIZED);
	setenv("MA_MPI_FAKE_PROVIDED", fake, 1);
	REQUIRE(marcel_mpi_init(&argc, &argv, MPI_THREAD_MULTIPLE, &got) == ENOTSUP &&
			got == MPI_THREAD_SERIALIZED, "insufficient level accepted (provided %d)", got);
	int finalized = 0;
	REQUIRE(MPI_Finalized(&finalized) == MPI_SUCCESS && finalized, "MPI left initialised");
	REQUIRE(marcel_mpi_init(&argc, &argv, MPI_THREAD_MULTIPLE, &got) == EBUSY, "second init");
	REQUIRE(marcel_mpi_finalize() == EPERM, "finalize without init");
	printf("mpi-helper: levels passed\n");
	marcel_end();
	return 0;
}

/* ---- a crowded node ---- */

/* marcel_mpi_init leaves the processors shared when the node's ranks have more VPs than
 * it has processors (several ranks, each with a VP per processor), not with one rank.
 * Seen by flipping the setting afterwards: the long poll burns many times the short. */
static void crowd(int shared)
{
	int provided;
	REQUIRE(marcel_mpi_init(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) == 0, "marcel_mpi_init failed");
	double as_left = ma_idle_probe_ms();
	REQUIRE(marcel_set_processors_shared(!shared) == 0, "marcel_set_processors_shared(%d)", !shared);
	double flipped = ma_idle_probe_ms();
	double brief = shared ? as_left : flipped, full = shared ? flipped : as_left;
	REQUIRE(full > 3 * brief, "idle CPU time %.1f ms as marcel_mpi_init left the runtime, %.1f ms after "
		"marcel_set_processors_shared(%d): expected the %s poll first", as_left, flipped, !shared,
		shared ? "short" : "long");
	REQUIRE(marcel_mpi_finalize() == 0, "marcel_mpi_finalize failed");
	printf("mpi-helper: crowd %s passed (%.1f ms of idle CPU as left, %.1f flipped)\n",
	       shared ? "shared" : "alone", as_left, flipped);
}

/* ---- iterations ---- */

#define ITERATIONS 6

/* A rank whose only iteration boundary is its wait: each iteration computes (sleeps 10
 * ms: the rounds are measured on a clock of a millisecond) then exchanges with itself and
 * waits. hwprio counts an iteration per completed wait. */
static void iterations(void)
{
	int provided;
	REQUIRE(marcel_mpi_init(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) == 0, "marcel_mpi_init failed");
	unsigned before, after;
	REQUIRE(marcel_hwprio_stats(&before, NULL) == 0, "hwprio is off (MARCEL_HWPRIO=none expected)");
	for (int i = 0; i < ITERATIONS; i++) {
		int out = i, in = -1;
		MPI_Request req[2];
		marcel_usleep(10000);
		marcel_mpi_enter();
		MPI_Irecv(&in, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, &req[0]);
		MPI_Isend(&out, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, &req[1]);
		marcel_mpi_leave();
		REQUIRE(marcel_mpi_waitall(2, req, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "waitall %d", i);
		REQUIRE(in == i, "received %d in iteration %d", in, i);
	}
	REQUIRE(marcel_hwprio_stats(&after, NULL) == 0, "hwprio stats");
	REQUIRE(after - before >= ITERATIONS - 1 && after - before <= ITERATIONS,
		"%u iterations counted for %d waits 10 ms apart", after - before, ITERATIONS);
	REQUIRE(marcel_mpi_finalize() == 0, "marcel_mpi_finalize failed");
	printf("mpi-helper: iterations passed (%u counted)\n", after - before);
}

int ma_mpi_helper(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "iterations") == 0) {
		if (marcel_init(&argc, argv) != 0)
			return 1;
		iterations();
		marcel_end();
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "levels") == 0)
		return levels(argc, argv);
	int multiple = argc == 3 && strcmp(argv[2], "multiple") == 0;
	if (argc == 3 && strcmp(argv[1], "waits") == 0 && (multiple || strcmp(argv[2], "serialized") == 0)) {
		if (marcel_init(&argc, argv) != 0)
			return 1;
		waits(multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED);
		marcel_end();
		return 0;
	}
	int shared = argc == 3 && strcmp(argv[2], "shared") == 0;
	if (argc == 3 && strcmp(argv[1], "crowd") == 0 && (shared || strcmp(argv[2], "alone") == 0)) {
		if (marcel_init(&argc, argv) != 0)
			return 1;
		crowd(shared);
		marcel_end();
		return 0;
	}
	fprintf(stderr, "mpi-helper: unknown mode; use: waits multiple|serialized, levels, iterations, or "
		"crowd shared|alone\n");
	return 2;
}
