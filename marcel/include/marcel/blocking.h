/**
 * @file marcel/blocking.h
 * @brief Blocking system calls: let other threads of the VP run while one waits in the
 * kernel.
 *
 * A thread about to make a call that may block in the kernel (read() on a pipe or a
 * socket, accept(), a library's blocking MPI wait) brackets it with
 * marcel_enter_blocking_section() and marcel_leave_blocking_section(). On entry, the
 * caller's VP is handed to a spare kernel thread (created on demand, then cached), which
 * goes on scheduling the VP's other threads; the caller keeps its kernel thread for the
 * blocking call. On leaving, the caller becomes a ready marcel thread again and runs
 * when a worker picks it.
 *
 * Inside a section the caller is not on any VP: marcel_self() still returns it and the
 * synchronisation primitives still work (they block in the kernel), but
 * marcel_current_vp() returns -1 and thread creation counts as coming from outside.
 *
 * The marcel_* versions of the C library calls below run the call inside a section when
 * the caller is a marcel thread on a VP, and call it directly otherwise; they return what
 * the C library returns and leave the same `errno`. A section costs two kernel-thread
 * switches, so calls that cannot block (a zero timeout) skip it. `<marcel/pthread.h>`
 * maps the names of the calls that exist to wait (poll(), select(), accept(),
 * waitpid()); the signal waits map to marcel's own (`marcel/signal.h`), and the kernel's
 * stay here as marcel_blocking_sigwait() and its siblings. The others (read(), write(),
 * recv(), send(), connect()...) are quick
 * on files and most sockets, and are common member names, so a program calls the
 * marcel_* version where it may wait (see `doc/porting.md`).
 */
#ifndef MARCEL_BLOCKING_H
#define MARCEL_BLOCKING_H

#include <poll.h>
#include <signal.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <marcel/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup marcel_blocking Blocking sections and I/O
 * @{ */

/** Hands the caller's VP to a spare kernel thread. Sections do not nest.
 * @return 0; EPERM if the caller is not a marcel thread running on a VP (or already in
 * a section); EAGAIN if no kernel thread could be created, in which case the caller
 * keeps its VP (the call still works, it just blocks the VP). */
int marcel_enter_blocking_section(void);
/** Ends the section: the caller queues itself to run on a VP again and its kernel
 * thread becomes a spare. @return 0; EPERM if the caller is not in a section. */
int marcel_leave_blocking_section(void);

/** read(2) inside a blocking section. Same return value and `errno`. */
ssize_t marcel_read(int fd, void *buf, size_t count);
/** write(2) inside a blocking section. Same return value and `errno`. */
ssize_t marcel_write(int fd, const void *buf, size_t count);
/** close(2) inside a blocking section. Same return value and `errno`. */
int marcel_close(int fd);
/** lseek(2) inside a blocking section. Same return value and `errno`. */
off_t marcel_lseek(int fd, off_t offset, int whence);
/** fsync(2) inside a blocking section. Same return value and `errno`. */
int marcel_fsync(int fd);
/** readv(2) inside a blocking section. Same return value and `errno`. */
ssize_t marcel_readv(int fd, const struct iovec *iov, int iovcnt);
/** writev(2) inside a blocking section. Same return value and `errno`. */
ssize_t marcel_writev(int fd, const struct iovec *iov, int iovcnt);

/** poll(2) inside a blocking section (none when @p timeout is 0). Same return value
 * and `errno`. */
int marcel_poll(struct pollfd *fds, nfds_t nfds, int timeout);
/** ppoll(2) inside a blocking section (none when @p timeout is zero). Same return
 * value and `errno`; @p sigmask applies to the kernel thread making the call. */
int marcel_ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout,
		 const sigset_t *sigmask);
/** select(2) inside a blocking section (none when @p timeout is zero). Same return
 * value, `errno` and update of @p timeout. */
int marcel_select(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
		  struct timeval *timeout);
/** pselect(2) inside a blocking section (none when @p timeout is zero). Same return
 * value and `errno`. */
int marcel_pselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
		   const struct timespec *timeout, const sigset_t *sigmask);

/** accept(2) inside a blocking section. Same return value and `errno`. */
int marcel_accept(int fd, struct sockaddr *addr, socklen_t *addrlen);
/** accept4(2) (Linux) inside a blocking section. Same return value and `errno`. */
int marcel_accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags);
/** connect(2) inside a blocking section. Same return value and `errno`. */
int marcel_connect(int fd, const struct sockaddr *addr, socklen_t addrlen);
/** recv(2) inside a blocking section. Same return value and `errno`. */
ssize_t marcel_recv(int fd, void *buf, size_t len, int flags);
/** recvfrom(2) inside a blocking section. Same return value and `errno`. */
ssize_t marcel_recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *addr,
			socklen_t *addrlen);
/** recvmsg(2) inside a blocking section. Same return value and `errno`. */
ssize_t marcel_recvmsg(int fd, struct msghdr *msg, int flags);
/** send(2) inside a blocking section. Same return value and `errno`. */
ssize_t marcel_send(int fd, const void *buf, size_t len, int flags);
/** sendto(2) inside a blocking section. Same return value and `errno`. */
ssize_t marcel_sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *addr,
		      socklen_t addrlen);
/** sendmsg(2) inside a blocking section. Same return value and `errno`. */
ssize_t marcel_sendmsg(int fd, const struct msghdr *msg, int flags);

/** pause(2) inside a blocking section, as the kernel has it: -1 with `errno` EINTR once
 * a handled signal is delivered *to the kernel thread making the call* (signals go to
 * any kernel thread that does not block them, workers included). marcel_pause()
 * (`marcel/signal.h`) waits as a marcel thread instead. */
int marcel_blocking_pause(void);
/** sigwait(3) inside a blocking section: the kernel's wait, for signals sent to the
 * process or to this kernel thread, not those of marcel_kill(). The signals in @p set
 * must be blocked in every kernel thread, workers included: block them before
 * marcel_init(), whose workers inherit the mask. Same return value (an error number).
 * marcel_sigwait() (`marcel/signal.h`) waits as a marcel thread instead. */
int marcel_blocking_sigwait(const sigset_t *set, int *sig);
/** sigwaitinfo(2) inside a blocking section (see marcel_blocking_sigwait()). Same return
 * value and `errno`. */
int marcel_blocking_sigwaitinfo(const sigset_t *set, siginfo_t *info);
/** sigtimedwait(2) inside a blocking section (none when @p timeout is zero; see
 * marcel_blocking_sigwait()). Same return value and `errno`. */
int marcel_blocking_sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *timeout);
/** sigsuspend(2) inside a blocking section; @p mask replaces the mask of the kernel
 * thread making the call (see marcel_blocking_pause() for where signals go). -1 and
 * `errno`. */
int marcel_blocking_sigsuspend(const sigset_t *mask);
/** waitpid(2) inside a blocking section (none with `WNOHANG`). Same return value and
 * `errno`. */
pid_t marcel_waitpid(pid_t pid, int *status, int options);
/** wait(2) inside a blocking section. Same return value and `errno`. */
pid_t marcel_wait(int *status);

/** @} */

#ifdef __cplusplus
}
#endif

#endif
