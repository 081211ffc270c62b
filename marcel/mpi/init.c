/*
 * libmarcel-mpi (marcel/mpi.h): starting and stopping MPI, the thread level, and the
 * bracket around MPI calls. A client of libmarcel's public API only.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>
#include <marcel.h>
#include <marcel/mpi.h>

/* Set by marcel_mpi_init() when MPI provides MPI_THREAD_SERIALIZED only: every MPI call
 * then goes through mpi_mutex. Read atomically: threads created before
 * marcel_mpi_init() may read it on other workers. */
static atomic_int serialized;
/* Between a successful marcel_mpi_init() and marcel_mpi_finalize(); touched by those two
 * only, which the program calls from one thread. */
static int initialized;
/* Error-checking, so that entering twice or leaving without entering is reported rather
 * than deadlocking or unlocking another thread's section. */
static marcel_mutex_t mpi_mutex = MARCEL_ERRORCHECK_MUTEX_INITIALIZER;

const char *marcel_mpi_level_name(int level)
{
	switch (level) {
	case MPI_THREAD_SINGLE:
		return "MPI_THREAD_SINGLE";
	case MPI_THREAD_FUNNELED:
		return "MPI_THREAD_FUNNELED";
	case MPI_THREAD_SERIALIZED:
		return "MPI_THREAD_SERIALIZED";
	case MPI_THREAD_MULTIPLE:
		return "MPI_THREAD_MULTIPLE";
	default:
		return "unknown MPI thread level";
	}
}

/* "<caller>: <MPI function> failed: <MPI's reason>", on one line. */
static void say_mpi_error(const char *caller, const char *what, int code)
{
	char reason[MPI_MAX_ERROR_STRING];
	int len = 0;
	if (MPI_Error_string(code, reason, &len) != MPI_SUCCESS)
		snprintf(reason, sizeof(reason), "MPI error code %d", code);
	fprintf(stderr, "%s: %s failed: %s\n", caller, what, reason);
}

/* Tells what to do when MPI provides less than required (and, at worst, still finalises
 * it: the program is expected to exit). */
static void say_level_missing(int required, int got)
{
	const char *hint = got == MPI_THREAD_SERIALIZED
		? "ask for MPI_THREAD_SERIALIZED to work at that level"
		: "marcel threads need at least MPI_THREAD_SERIALIZED: use an MPI library built "
		  "with thread support";
	fprintf(stderr, "marcel_mpi_init: the MPI library provides %s, but %s was required; %s\n",
		marcel_mpi_level_name(got), marcel_mpi_level_name(required), hint);
}

/* Ranks of a node that were not bound to separate processors each have a VP per
 * processor: their workers then share the processors, which no runtime sees alone, and
 * polling while idle would take them from ranks with work (4 unbound ranks on 2
 * processors: mpi-conduction --size 512 took 0.58 s with 2 ms polls, 0.03 s now). Told
 * here, once every rank of the node has counted its VPs. Bound ranks see only their own
 * processors and keep the defaults. */
static void share_if_crowded(void)
{
	MPI_Comm node;
	int vps = (int)marcel_nbvps(), all = 0;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	/* The other ranks wait in the collective: it is made even if entering failed. */
	int entered = marcel_mpi_enter() == 0;
	int ok = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS;
	if (ok) {
		ok = MPI_Allreduce(&vps, &all, 1, MPI_INT, MPI_SUM, node) == MPI_SUCCESS;
		MPI_Comm_free(&node);
	}
	if (entered)
		marcel_mpi_leave();
	if (ok && cpus > 0 && all > cpus)
		marcel_set_processors_shared(1);
}

int marcel_mpi_init(int *argc, char ***argv, int required, int *provided)
{
	if (required != MPI_THREAD_SERIALIZED && required != MPI_THREAD_MULTIPLE) {
		fprintf(stderr, "marcel_mpi_init: required thread level %s (%d) is refused: marcel "
			"threads make their MPI calls from several kernel threads; use "
			"MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE\n",
			marcel_mpi_level_name(required), required);
		return EINVAL;
	}
	if (marcel_nbvps() == 0)
		return EPERM;
	int already = 0;
	if (MPI_Initialized(&already) != MPI_SUCCESS || already)
		return EBUSY;

	int got = MPI_THREAD_SINGLE;
	/* Open MPI takes its own locks in there; a time slice must not end inside. */
	marcel_thread_preemption_disable();
	int err = MPI_Init_thread(argc, argv, required, &got);
	marcel_thread_preemption_enable();
	if (err != MPI_SUCCESS) {
		say_mpi_error(__func__, "MPI_Init_thread", err);
		return EIO;
	}
	if (provided)
		*provided = got;
	if (got < required) {
		say_level_missing(required, got);
		MPI_Finalize();
		return ENOTSUP;
	}
	atomic_store_explicit(&serialized, got < MPI_THREAD_MULTIPLE, memory_order_release);
	initialized = 1;
	share_if_crowded();
	return 0;
}

int marcel_mpi_finalize(void)
{
	if (!initialized)
		return EPERM;
	marcel_mpi_enter();
	int err = MPI_Finalize();
	marcel_mpi_leave();
	initialized = 0;
	atomic_store_explicit(&serialized, 0, memory_order_release);
	if (err != MPI_SUCCESS) {
		say_mpi_error(__func__, "MPI_Finalize", err);
		return EIO;
	}
	return 0;
}

int marcel_mpi_enter(void)
{
	if (atomic_load_explicit(&serialized, memory_order_acquire)) {
		int err = marcel_mutex_lock(&mpi_mutex);
		if (err != 0)
			return err;
	}
	/* EPERM from a plain kernel thread, which nothing preempts anyway. */
	marcel_thread_preemption_disable();
	return 0;
}

int marcel_mpi_leave(void)
{
	if (atomic_load_explicit(&serialized, memory_order_acquire)) {
		int err = marcel_mutex_unlock(&mpi_mutex);
		if (err != 0)
			return err;
	}
	/* Last, so that a time slice that ran out inside is served without the mutex held. */
	int err = marcel_thread_preemption_enable();
	return err == EPERM ? 0 : err;
}
