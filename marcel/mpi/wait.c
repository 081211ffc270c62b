/*
 * libmarcel-mpi (marcel/mpi.h): MPI_Wait* for marcel threads. One loop polls the
 * matching MPI_Test* and lets the worker run other threads between polls; the four
 * waits differ only in which test they call. A completed wait is a round for hwprio's
 * iterations (marcel_hwprio_wait_round), named by the program's call site: a code whose
 * ranks exchange and wait once per iteration has its iterations found without a barrier.
 */
#include <errno.h>
#include <sched.h>
#include <marcel.h>
#include <marcel/mpi.h>

enum wait_kind { WAIT_ONE, WAIT_ALL, WAIT_ANY, WAIT_SOME };

/* A wait's arguments, as the caller passed them. */
struct wait {
	enum wait_kind kind;
	int count;
	MPI_Request *requests;
	MPI_Status *statuses;  /* one status for WAIT_ONE and WAIT_ANY */
	int *index;            /* WAIT_ANY: the index; WAIT_SOME: the outcount */
	int *indices;          /* WAIT_SOME */
	const void *site;      /* where the program called the wait */
};

/* One poll; *done tells whether the wait is over. */
static int test(const struct wait *w, int *done)
{
	switch (w->kind) {
	case WAIT_ONE:
		return MPI_Test(w->requests, done, w->statuses);
	case WAIT_ALL:
		return MPI_Testall(w->count, w->requests, done, w->statuses);
	case WAIT_ANY:
		return MPI_Testany(w->count, w->requests, w->index, done, w->statuses);
	case WAIT_SOME:
		break;
	}
	int err = MPI_Testsome(w->count, w->requests, w->index, w->indices, w->statuses);
	*done = err != MPI_SUCCESS || *w->index != 0;  /* MPI_UNDEFINED: nothing left active */
	return err;
}

/* Lets other threads have the processor between two polls: a yield while the answer may
 * be close, then sleeps growing up to MARCEL_MPI_MAX_SLEEP_US (see marcel/mpi.h). */
static void pause_between_polls(unsigned polls, unsigned long *sleep_us)
{
	if (polls < MARCEL_MPI_SPIN_POLLS) {
		if (marcel_yield() == EPERM)
			sched_yield();  /* a plain kernel thread */
		return;
	}
	marcel_usleep(*sleep_us);
	if (*sleep_us < MARCEL_MPI_MAX_SLEEP_US)
		*sleep_us *= 2;
}

static int wait_polling(const struct wait *w)
{
	unsigned long sleep_us = 1;
	for (unsigned polls = 0;; polls++) {
		int done = 0;
		if (marcel_mpi_enter() != 0)
			return MPI_ERR_OTHER;  /* called inside the caller's own marcel_mpi_enter() */
		int err = test(w, &done);
		marcel_mpi_leave();
		if (err != MPI_SUCCESS || done) {
			if (err == MPI_SUCCESS)
				marcel_hwprio_wait_round(w->site); /* ENOTSUP: hwprio is off */
			return err;
		}
		pause_between_polls(polls, &sleep_us);
	}
}

int marcel_mpi_wait(MPI_Request *request, MPI_Status *status)
{
	if (request == NULL)
		return MPI_ERR_REQUEST;
	return wait_polling(&(struct wait){ .kind = WAIT_ONE, .count = 1, .requests = request,
					    .statuses = status, .site = __builtin_return_address(0) });
}

int marcel_mpi_waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
	if (count < 0)
		return MPI_ERR_COUNT;
	if (count == 0)
		return MPI_SUCCESS;
	if (requests == NULL)
		return MPI_ERR_REQUEST;
	return wait_polling(&(struct wait){ .kind = WAIT_ALL, .count = count, .requests = requests,
					    .statuses = statuses, .site = __builtin_return_address(0) });
}

int marcel_mpi_waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
	if (count < 0)
		return MPI_ERR_COUNT;
	if (index == NULL)
		return MPI_ERR_ARG;
	if (requests == NULL && count != 0)
		return MPI_ERR_REQUEST;
	return wait_polling(&(struct wait){ .kind = WAIT_ANY, .count = count, .requests = requests,
					    .statuses = status, .index = index,
					    .site = __builtin_return_address(0) });
}

int marcel_mpi_waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
			MPI_Status statuses[])
{
	if (incount < 0)
		return MPI_ERR_COUNT;
	if (outcount == NULL || indices == NULL)
		return MPI_ERR_ARG;
	if (requests == NULL && incount != 0)
		return MPI_ERR_REQUEST;
	return wait_polling(&(struct wait){ .kind = WAIT_SOME, .count = incount, .requests = requests,
					    .statuses = statuses, .index = outcount, .indices = indices,
					    .site = __builtin_return_address(0) });
}
