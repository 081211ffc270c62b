/*
 * <marcel/pthread.h> in a program built in strict ISO C with POSIX features only
 * (-std=c11 -D_POSIX_C_SOURCE=200809L, tests/Makefile.am): the header's inline wrappers
 * must use nothing the C library declares only in its GNU or XSI modes (usleep is one).
 * Its mapped sleeps then run as marcel's. Exit 0, or 1 with the failed check on stderr.
 */
#include <marcel/pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "ma_plain_check.h"

static void *sleeper(void *arg)
{
	struct timespec ts = { 0, 1000000 };
	CHECK(nanosleep(&ts, NULL) == 0);
	CHECK(clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL) == 0);
	CHECK(sleep(0) == 0);
	CHECK(usleep(1000) == 0); /* mapped, though strict POSIX has no usleep */
	return arg;
}

int main(int argc, char **argv)
{
	CHECK(marcel_init(&argc, argv) == 0);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, sleeper, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	struct pollfd none;
	CHECK(poll(&none, 0, 1) == 0);
	marcel_end();
	puts("strict C: ok");
	return 0;
}
