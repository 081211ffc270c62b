/*
 * marcel_fork and marcel_atfork: the process calls, with POSIX's rule for the child of a
 * process running several threads (marcel/compat.h says why Marcel's richer child is not
 * offered).
 */
#include <pthread.h>
#include <unistd.h>
#include <marcel.h>

pid_t marcel_fork(void)
{
	return fork();
}

int marcel_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
	return pthread_atfork(prepare, parent, child);
}
