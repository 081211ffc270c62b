/*
 * A thread pool in the style found in small libraries: detached workers poll a queue
 * under a mutex and sleep with usleep when it is empty; the submitter waits for the
 * results on a condition variable. No marcel in sight: the marcel-pthread flags make
 * this file use marcel's types too (a file that missed the include would otherwise mix
 * glibc's and marcel's).
 */
#include <pthread.h>
#include <unistd.h>
#include "pthread-auto.h"

#ifndef MARCEL_PTHREAD_H
#error "build with the marcel-pthread flags: -include marcel/pthread.h -DMARCEL_PTHREAD_AUTO=1"
#endif

enum { QMAX = 1024 };
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cond = PTHREAD_COND_INITIALIZER;
static long queue[QMAX];
static int head, tail;
static long done, sum;

static void *worker(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&lock);
		if (head == tail) {
			pthread_mutex_unlock(&lock);
			usleep(200);
			continue;
		}
		long x = queue[head++ % QMAX];
		pthread_mutex_unlock(&lock);
		pthread_mutex_lock(&lock);
		sum += x;
		done++;
		pthread_cond_broadcast(&done_cond);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

void pool_start(int n)
{
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	for (int i = 0; i < n; i++) {
		pthread_t t;
		pthread_create(&t, &a, worker, NULL);
	}
	pthread_attr_destroy(&a);
}

void pool_submit(long x)
{
	pthread_mutex_lock(&lock);
	queue[tail++ % QMAX] = x;
	pthread_mutex_unlock(&lock);
}

long pool_wait_sum(long n)
{
	pthread_mutex_lock(&lock);
	while (done < n)
		pthread_cond_wait(&done_cond, &lock);
	long s = sum;
	pthread_mutex_unlock(&lock);
	return s;
}
