/*
 * The C library calls that may block in the kernel, each run inside a blocking section
 * (blocking.c) so that the caller's VP goes on running other threads meanwhile. A
 * section costs two kernel-thread switches: calls told not to wait (a zero timeout,
 * WNOHANG) skip it.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <unistd.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <marcel/blocking.h>
#include <marcel/cancel.h>

/* Runs call inside a section when the caller is a marcel thread on a VP (elsewhere the
 * enter call fails and call runs as is). Leaving the section carries errno over to
 * whichever kernel thread resumes the caller; errno must not be touched here after
 * leaving: its address may have been computed before, on the kernel thread that made the
 * call. */
#define MA_IN_SECTION_NOPOINT(type, call)                              \
	do {                                                           \
		int entered = marcel_enter_blocking_section() == 0;    \
		type r = call;                                         \
		if (entered)                                           \
			marcel_leave_blocking_section();               \
		return r;                                              \
	} while (0)

/* The same for a POSIX cancellation point: a request already due when the call starts
 * ends the thread there. One that comes while the kernel waits is acted on at the
 * thread's next point: the call is not interrupted (nor, then, is data it received lost). */
#define MA_IN_SECTION(type, call)                                      \
	do {                                                           \
		marcel_testcancel();                                   \
		MA_IN_SECTION_NOPOINT(type, call);                     \
	} while (0)

static int ma_ts_zero(const struct timespec *ts)
{
	return ts && ts->tv_sec == 0 && ts->tv_nsec == 0;
}

ssize_t marcel_read(int fd, void *buf, size_t count)
{
	MA_IN_SECTION(ssize_t, read(fd, buf, count));
}

ssize_t marcel_write(int fd, const void *buf, size_t count)
{
	MA_IN_SECTION(ssize_t, write(fd, buf, count));
}

int marcel_close(int fd)
{
	MA_IN_SECTION(int, close(fd));
}

off_t marcel_lseek(int fd, off_t offset, int whence)
{
	MA_IN_SECTION_NOPOINT(off_t, lseek(fd, offset, whence)); /* not a POSIX cancellation point */
}

int marcel_fsync(int fd)
{
	MA_IN_SECTION(int, fsync(fd));
}

ssize_t marcel_readv(int fd, const struct iovec *iov, int iovcnt)
{
	MA_IN_SECTION(ssize_t, readv(fd, iov, iovcnt));
}

ssize_t marcel_writev(int fd, const struct iovec *iov, int iovcnt)
{
	MA_IN_SECTION(ssize_t, writev(fd, iov, iovcnt));
}

/* ---- waiting for file descriptors ---- */

int marcel_poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	if (timeout == 0)
		return poll(fds, nfds, 0);
	MA_IN_SECTION(int, poll(fds, nfds, timeout));
}

int marcel_ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout, const sigset_t *sigmask)
{
	if (ma_ts_zero(timeout))
		return ppoll(fds, nfds, timeout, sigmask);
	MA_IN_SECTION(int, ppoll(fds, nfds, timeout, sigmask));
}

int marcel_select(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds, struct timeval *timeout)
{
	if (timeout && timeout->tv_sec == 0 && timeout->tv_usec == 0)
		return select(nfds, readfds, writefds, exceptfds, timeout);
	MA_IN_SECTION(int, select(nfds, readfds, writefds, exceptfds, timeout));
}

int marcel_pselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
		   const struct timespec *timeout, const sigset_t *sigmask)
{
	if (ma_ts_zero(timeout))
		return pselect(nfds, readfds, writefds, exceptfds, timeout, sigmask);
	MA_IN_SECTION(int, pselect(nfds, readfds, writefds, exceptfds, timeout, sigmask));
}

/* ---- sockets ---- */

int marcel_accept(int fd, struct sockaddr *addr, socklen_t *addrlen)
{
	MA_IN_SECTION(int, accept(fd, addr, addrlen));
}

int marcel_accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags)
{
	MA_IN_SECTION(int, accept4(fd, addr, addrlen, flags));
}

int marcel_connect(int fd, const struct sockaddr *addr, socklen_t addrlen)
{
	MA_IN_SECTION(int, connect(fd, addr, addrlen));
}

ssize_t marcel_recv(int fd, void *buf, size_t len, int flags)
{
	MA_IN_SECTION(ssize_t, recv(fd, buf, len, flags));
}

ssize_t marcel_recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *addr, socklen_t *addrlen)
{
	MA_IN_SECTION(ssize_t, recvfrom(fd, buf, len, flags, addr, addrlen));
}

ssize_t marcel_recvmsg(int fd, struct msghdr *msg, int flags)
{
	MA_IN_SECTION(ssize_t, recvmsg(fd, msg, flags));
}

ssize_t marcel_send(int fd, const void *buf, size_t len, int flags)
{
	MA_IN_SECTION(ssize_t, send(fd, buf, len, flags));
}

ssize_t marcel_sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *addr,
		      socklen_t addrlen)
{
	MA_IN_SECTION(ssize_t, sendto(fd, buf, len, flags, addr, addrlen));
}

ssize_t marcel_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	MA_IN_SECTION(ssize_t, sendmsg(fd, msg, flags));
}

/* ---- signals (the kernel's waits; marcel's are in signal.c) and children ---- */

int marcel_blocking_pause(void)
{
	MA_IN_SECTION(int, pause());
}

int marcel_blocking_sigwait(const sigset_t *set, int *sig)
{
	MA_IN_SECTION(int, sigwait(set, sig));
}

int marcel_blocking_sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	MA_IN_SECTION(int, sigwaitinfo(set, info));
}

int marcel_blocking_sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *timeout)
{
	if (ma_ts_zero(timeout))
		return sigtimedwait(set, info, timeout);
	MA_IN_SECTION(int, sigtimedwait(set, info, timeout));
}

int marcel_blocking_sigsuspend(const sigset_t *mask)
{
	MA_IN_SECTION(int, sigsuspend(mask));
}

pid_t marcel_waitpid(pid_t pid, int *status, int options)
{
	if (options & WNOHANG)
		return waitpid(pid, status, options);
	MA_IN_SECTION(pid_t, waitpid(pid, status, options));
}

pid_t marcel_wait(int *status)
{
	MA_IN_SECTION(pid_t, wait(status));
}
