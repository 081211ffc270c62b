/**
 * @file marcel/mpi.h
 * @brief MPI from marcel threads: waiting for a request without holding the worker.
 *
 * Not included by marcel.h, and in its own library: include it explicitly and link with
 * `-lmarcel-mpi -lmarcel` plus the MPI library (`pkg-config --cflags --libs mpi-c` for
 * Open MPI). It includes `<mpi.h>`. libmarcel-mpi is built only when configure found MPI.
 *
 * **Why.** `MPI_Wait()` blocks the kernel thread that calls it. Called from a marcel
 * thread, it would block that thread's worker, and with it every other marcel thread
 * queued on that VP, for as long as the message takes. marcel_mpi_wait() and its
 * siblings poll instead: they call the matching `MPI_Test*()` function and, while the
 * request is not complete, let the worker run other threads between two polls. A
 * thread waiting for a halo exchange thus leaves its processor to the threads that
 * compute.
 *
 * **Polling.** A wait first polls, yielding (marcel_yield()) between polls, up to
 * ::MARCEL_MPI_SPIN_POLLS times: cheap when other threads are ready, and the answer
 * comes within a few microseconds when the message is already on its way. After that it
 * sleeps (marcel_usleep()) between polls, 1 µs first and twice as long each time up to
 * ::MARCEL_MPI_MAX_SLEEP_US, so that a worker with nothing else to do neither burns its
 * processor (which, oversubscribed, may be the one the peer rank needs) nor waits long
 * once the message arrives. The sleeper is off the run queues: its VP runs the others.
 * Each poll also makes MPI progress (Open MPI progresses in `MPI_Test*()`), which is
 * what moves a large message along when no MPI progress thread does.
 *
 * **Thread level.** A marcel thread moves between workers, that is between kernel
 * threads, whenever it blocks or yields; several threads on several VPs may make MPI
 * calls at the same time. MPI therefore sees a multi-threaded program, and this library
 * accepts two levels:
 * - `MPI_THREAD_MULTIPLE` (recommended; Open MPI 4 provides it): every thread calls MPI
 *   when it likes, and waiting threads poll concurrently.
 * - `MPI_THREAD_SERIALIZED`: the library serialises every MPI call it makes with one
 *   marcel mutex, and the program brackets its own MPI calls with marcel_mpi_enter() and
 *   marcel_mpi_leave(), which take the same mutex. Correct with any MPI library, at the
 *   cost of one thread in MPI at a time.
 * `MPI_THREAD_FUNNELED` and `MPI_THREAD_SINGLE` are refused: even a program whose MPI
 * calls all come from one marcel thread makes them from several kernel threads.
 *
 * **Preemption.** With time slicing on (`MARCEL_TIMESLICE`, 10 ms by default), a thread
 * may be switched out inside the MPI library while that library holds one of its own
 * locks that are not pthread locks (see
 * marcel_thread_preemption_disable()). The functions here never are; bracket the
 * program's own MPI calls with marcel_mpi_enter() and marcel_mpi_leave(), which also
 * keep preemption off, at either level.
 *
 * **ThreadSanitizer.** Open MPI is not instrumented, so TSan cannot see how it orders a
 * message's arrival before the completion that a test reports. At
 * `MPI_THREAD_MULTIPLE`, a buffer that one thread's poll filled and that its owner reads
 * after its own wait returned then looks like a race. At `MPI_THREAD_SERIALIZED` the
 * library's mutex orders every MPI call where TSan sees it: use that level in TSan builds.
 *
 * **Errors.** marcel_mpi_init(), marcel_mpi_finalize(), marcel_mpi_enter() and
 * marcel_mpi_leave() return POSIX error codes, as the rest of marcel. The wait functions
 * stand in for `MPI_Wait*()` and return what those return: `MPI_SUCCESS` or an MPI error
 * code (seen only when the communicator's error handler returns errors rather than
 * aborting). A wait called between marcel_mpi_enter() and marcel_mpi_leave() at
 * `MPI_THREAD_SERIALIZED` would wait for itself: it returns `MPI_ERR_OTHER` at once.
 *
 * A typical program:
 * @code
 * marcel_init(&argc, argv);
 * int provided;
 * if (marcel_mpi_init(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != 0)
 *         return 1;                         // it said which level was missing
 * // ... in any marcel thread:
 * MPI_Request req[2];
 * marcel_mpi_enter();
 * MPI_Irecv(in, n, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &req[0]);
 * MPI_Isend(out, n, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &req[1]);
 * marcel_mpi_leave();
 * marcel_mpi_waitall(2, req, MPI_STATUSES_IGNORE);  // other threads run meanwhile
 * // ... at the end, once no thread uses MPI any more:
 * marcel_mpi_finalize();
 * marcel_end();
 * @endcode
 */
#ifndef MARCEL_MPI_H
#define MARCEL_MPI_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup marcel_mpi MPI waits that do not hold the worker
 * @{ */

/** Polls a wait makes, yielding between them, before it starts sleeping between polls. */
#define MARCEL_MPI_SPIN_POLLS 64

/** Longest sleep between two polls of a wait, in microseconds: about the most a wait adds
 * to a message's latency once the waiting worker has had nothing else to run for a while
 * (a little more in practice: a worker fires timers when it schedules or idles). */
#define MARCEL_MPI_MAX_SLEEP_US 64

/**
 * Initialises MPI with `MPI_Init_thread()` for use from marcel threads, and checks the
 * thread level it provides.
 *
 * Call it after marcel_init() (which removes the `--marcel-*` options from the command
 * line) and before any other MPI call, from one thread. Every rank of the job must call
 * it: the ranks of each node add up their VPs (a collective on the node's ranks), and when
 * they have more than the node has processors, as when ranks are not bound to separate
 * cores, each tells its runtime so (marcel_set_processors_shared()), so that idle
 * workers do not keep processors that other ranks need.
 *
 * @param argc as for `MPI_Init_thread()`; may be NULL, with @p argv.
 * @param argv as for `MPI_Init_thread()`; may be NULL, with @p argc.
 * @param required `MPI_THREAD_MULTIPLE` or `MPI_THREAD_SERIALIZED` (see the thread
 *        levels above).
 * @param provided receives the level MPI provides (may be NULL). When it is above
 *        @p required, the library works at the level provided.
 * @return 0 on success. Otherwise MPI is not initialised (or no longer is) and the
 *         program may just exit:
 *         - EINVAL: @p required is not one of the two levels; one line on stderr names
 *           the level given and those accepted.
 *         - ENOTSUP: MPI provides less than @p required; one line on stderr names both
 *           levels. MPI was initialised, then finalised again.
 *         - EPERM: the marcel runtime is not running (call marcel_init() first).
 *         - EBUSY: MPI was already initialised (by this function or by the program).
 *         - EIO: `MPI_Init_thread()` failed; one line on stderr gives MPI's reason.
 */
int marcel_mpi_init(int *argc, char ***argv, int required, int *provided);

/**
 * Finalises MPI (`MPI_Finalize()`). Call it once every thread is done with MPI, and
 * before marcel_end().
 * @return 0; EPERM if MPI was not initialised by marcel_mpi_init() or was already
 *         finalised; EIO if `MPI_Finalize()` failed (one line on stderr says why).
 */
int marcel_mpi_finalize(void);

/**
 * Starts a series of MPI calls the program makes itself (`MPI_Isend()`,
 * `MPI_Irecv()`, collectives...): keeps preemption from switching the caller out inside
 * MPI and, at `MPI_THREAD_SERIALIZED`, waits until no other thread is in MPI. Do not
 * block inside (no `MPI_Wait()`, no marcel wait: leave first), and do not nest.
 * Works from plain kernel threads too (they are not preempted; they may still have to
 * wait for the mutex).
 * @return 0; EDEADLK if the caller already entered (`MPI_THREAD_SERIALIZED` only: at
 *         `MPI_THREAD_MULTIPLE` entering twice only needs leaving twice).
 */
int marcel_mpi_enter(void);

/**
 * Ends what marcel_mpi_enter() started: lets another thread into MPI and allows
 * preemption again.
 * @return 0; EPERM if the caller had not entered (`MPI_THREAD_SERIALIZED`); EINVAL if
 *         it had not entered (`MPI_THREAD_MULTIPLE`, marcel threads only).
 */
int marcel_mpi_leave(void);

/**
 * `MPI_Wait()` for marcel threads: returns once @p request is complete, running other
 * threads on the caller's VP meanwhile (see the polling above). As `MPI_Wait()`, sets
 * @p *request to `MPI_REQUEST_NULL` (for a non-persistent request) and fills @p status.
 * From a kernel thread that is not a marcel thread, it polls the same way, sleeping in
 * the kernel.
 * @param request the request; a null request completes at once.
 * @param status receives the status, or `MPI_STATUS_IGNORE`.
 * @return `MPI_SUCCESS`; `MPI_ERR_REQUEST` if @p request is NULL; or the error code of
 *         `MPI_Test()`.
 */
int marcel_mpi_wait(MPI_Request *request, MPI_Status *status);

/**
 * `MPI_Waitall()` for marcel threads: returns once all @p count requests are complete,
 * polling with `MPI_Testall()`.
 * @param count the number of requests (0: returns at once).
 * @param requests the requests; null ones count as complete.
 * @param statuses receives @p count statuses, or `MPI_STATUSES_IGNORE`.
 * @return `MPI_SUCCESS`; `MPI_ERR_COUNT` if @p count is negative; `MPI_ERR_REQUEST` if
 *         @p requests is NULL while @p count is not 0; or the error code of
 *         `MPI_Testall()` (`MPI_ERR_IN_STATUS`: see each status).
 */
int marcel_mpi_waitall(int count, MPI_Request requests[], MPI_Status statuses[]);

/**
 * `MPI_Waitany()` for marcel threads: returns once one of the @p count requests is
 * complete, polling with `MPI_Testany()`.
 * @param count the number of requests.
 * @param requests the requests.
 * @param index receives the index of the completed request, or `MPI_UNDEFINED` when
 *        all requests are null (then the call returns at once).
 * @param status receives that request's status, or `MPI_STATUS_IGNORE`.
 * @return `MPI_SUCCESS`; `MPI_ERR_COUNT` if @p count is negative; `MPI_ERR_ARG` if
 *         @p index is NULL; `MPI_ERR_REQUEST` if @p requests is NULL while @p count is
 *         not 0; or the error code of `MPI_Testany()`.
 */
int marcel_mpi_waitany(int count, MPI_Request requests[], int *index, MPI_Status *status);

/**
 * `MPI_Waitsome()` for marcel threads: returns once at least one of the @p incount
 * requests is complete, with all those that are, polling with `MPI_Testsome()`.
 * @param incount the number of requests.
 * @param requests the requests.
 * @param outcount receives how many completed, or `MPI_UNDEFINED` when all requests are
 *        null (then the call returns at once).
 * @param indices receives the completed requests' indices (room for @p incount).
 * @param statuses receives their statuses (room for @p incount), or
 *        `MPI_STATUSES_IGNORE`.
 * @return `MPI_SUCCESS`; `MPI_ERR_COUNT` if @p incount is negative; `MPI_ERR_ARG` if
 *         @p outcount or @p indices is NULL; `MPI_ERR_REQUEST` if @p requests is NULL
 *         while @p incount is not 0; or the error code of `MPI_Testsome()`.
 */
int marcel_mpi_waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
			MPI_Status statuses[]);

/**
 * The name of an MPI thread level, for messages: "MPI_THREAD_MULTIPLE" for
 * `MPI_THREAD_MULTIPLE`, and so on; "unknown MPI thread level" for any other value.
 */
const char *marcel_mpi_level_name(int level);

/** @} */

#ifdef __cplusplus
}
#endif

#endif
