/* Sleeping and waiting: in a marcel thread they wait on marcel's timers or in a blocking
 * section (the worker runs other threads meanwhile); elsewhere, and for the runtime's own
 * calls, they are the C library's. */
#include "ma_preload.h"
#include <poll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

/* In an exported function only (see MA_PL_FROM_RUNTIME). */
#define MA_PL_OWN_CALL() (MA_PL_FROM_RUNTIME() || !marcel_self())

MA_PRELOAD_API unsigned sleep(unsigned sec)
{
	if (MA_PL_OWN_CALL())
		return MA_PL_REAL(sleep)(sec);
	return marcel_sleep(sec);
}

MA_PRELOAD_API int usleep(useconds_t usec)
{
	if (MA_PL_OWN_CALL())
		return MA_PL_REAL(usleep)(usec);
	struct timespec ts = { (time_t)(usec / 1000000u), (long)(usec % 1000000u) * 1000 };
	return marcel_nanosleep(&ts, NULL);
}

MA_PRELOAD_API int nanosleep(const struct timespec *req, struct timespec *rem)
{
	if (MA_PL_OWN_CALL())
		return MA_PL_REAL(nanosleep)(req, rem);
	return marcel_nanosleep(req, rem);
}

MA_PRELOAD_API int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem)
{
	if (MA_PL_OWN_CALL())
		return MA_PL_REAL(clock_nanosleep)(clock, flags, req, rem);
	return marcel_clock_nanosleep(clock, flags, req, rem);
}

MA_PRELOAD_API int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	if (MA_PL_OWN_CALL())
		return MA_PL_REAL(poll)(fds, n, timeout);
	return marcel_poll(fds, n, timeout);
}

MA_PRELOAD_API int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *timeout)
{
	if (MA_PL_OWN_CALL())
		return MA_PL_REAL(select)(n, r, w, e, timeout);
	return marcel_select(n, r, w, e, timeout);
}
