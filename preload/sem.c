/* Semaphores: a marcel semaphore in the first bytes of the sem_t; named ones are
 * marcel's (private to the process, see marcel_sem_open). The calls keep the POSIX
 * convention: 0, or -1 with errno. */
#include "ma_preload.h"
#include <fcntl.h>
#include <semaphore.h>
#include <stdarg.h>
#include <string.h>

_Static_assert(sizeof(marcel_sem_t) <= sizeof(sem_t), "a marcel semaphore fits in sem_t");

#define MA_PL_SEM(s) ((marcel_sem_t *)(s))

MA_PRELOAD_API int sem_init(sem_t *s, int pshared, unsigned value)
{
	if (pshared) {
		errno = ma_pl_unsupported("sem_init(pshared)", "marcel objects are private to the process", ENOTSUP);
		return -1;
	}
	if (s)
		memset(s, 0, sizeof(*s));
	return marcel_sem_posix_init(MA_PL_SEM(s), 0, value);
}

MA_PRELOAD_API int sem_destroy(sem_t *s)
{
	int e = marcel_sem_destroy(MA_PL_SEM(s));
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

MA_PRELOAD_API int sem_wait(sem_t *s)
{
	return marcel_sem_wait(MA_PL_SEM(s));
}

MA_PRELOAD_API int sem_trywait(sem_t *s)
{
	return marcel_sem_trywait(MA_PL_SEM(s));
}

MA_PRELOAD_API int sem_timedwait(sem_t *s, const struct timespec *abstime)
{
	return marcel_sem_timedwait(MA_PL_SEM(s), abstime);
}

MA_PRELOAD_API int sem_clockwait(sem_t *s, clockid_t clock, const struct timespec *abstime)
{
	struct timespec rt;
	int e = ma_pl_deadline_on(clock, abstime, CLOCK_REALTIME, &rt);
	if (e) {
		errno = e;
		return -1;
	}
	return marcel_sem_timedwait(MA_PL_SEM(s), &rt);
}

MA_PRELOAD_API int sem_post(sem_t *s)
{
	return marcel_sem_post(MA_PL_SEM(s));
}

MA_PRELOAD_API int sem_getvalue(sem_t *s, int *value)
{
	return marcel_sem_getvalue(MA_PL_SEM(s), value);
}

MA_PRELOAD_API sem_t *sem_open(const char *name, int oflag, ...)
{
	marcel_sem_t *s;
	if (oflag & O_CREAT) {
		va_list ap;
		va_start(ap, oflag);
		mode_t mode = va_arg(ap, mode_t);
		unsigned value = va_arg(ap, unsigned);
		va_end(ap);
		s = marcel_sem_open(name, oflag, mode, value);
	} else {
		s = marcel_sem_open(name, oflag);
	}
	return s ? (sem_t *)s : SEM_FAILED;
}

MA_PRELOAD_API int sem_close(sem_t *s)
{
	return marcel_sem_close(MA_PL_SEM(s));
}

MA_PRELOAD_API int sem_unlink(const char *name)
{
	return marcel_sem_unlink(name);
}
