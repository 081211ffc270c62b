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
 */
#ifndef MARCEL_BLOCKING_H
#define MARCEL_BLOCKING_H

#include <sys/types.h>
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

/** @} */

#ifdef __cplusplus
}
#endif

#endif
