/*
 * A pthread program as programs from elsewhere are written, ported with no source edit:
 * built with the flags of the marcel-pthread pkg-config module (<marcel/pthread.h>
 * forced into every file, the runtime started before main), it never calls marcel. A
 * pool of detached workers that poll their queue with usleep is never shut down, and
 * main returns with them still there, as a POSIX process may.
 *
 * Prints "pthread-auto: N jobs, sum S, on marcel" and exits 0 when the results are right
 * and every thread ran as a marcel thread; tests/run-all and make check run it.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "pthread-auto.h"

#ifndef MARCEL_PTHREAD_H
#error "build with the marcel-pthread flags: -include marcel/pthread.h -DMARCEL_PTHREAD_AUTO=1"
#endif

static void *square(void *arg)
{
	long x = (long)arg;
	/* The test's own check, not something a ported program would do. */
	if (!marcel_self())
		abort();
	return (void *)(x * x);
}

int main(void)
{
	if (!marcel_self()) {
		fprintf(stderr, "pthread-auto: main is not a marcel thread\n");
		return 1;
	}
	pool_start(4);
	enum { N = 200 };
	for (long i = 1; i <= N; i++)
		pool_submit(i);
	pthread_t t[8];
	for (long i = 0; i < 8; i++)
		if (pthread_create(&t[i], NULL, square, (void *)i)) {
			fprintf(stderr, "pthread-auto: pthread_create failed\n");
			return 1;
		}
	long squares = 0;
	for (int i = 0; i < 8; i++) {
		void *r;
		pthread_join(t[i], &r);
		squares += (long)r;
	}
	long sum = pool_wait_sum(N);
	if (sum != (long)N * (N + 1) / 2 || squares != 140) {
		fprintf(stderr, "pthread-auto: wrong results (sum %ld, squares %ld)\n", sum, squares);
		return 1;
	}
	printf("pthread-auto: %d jobs, sum %ld, on marcel\n", N, sum);
	/* The pool's workers are still polling: main returns, the process ends. */
	return 0;
}
