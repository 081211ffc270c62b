/*
 * CHECK for the plain test programs (not Check suites): on failure, the expression and
 * its place on stderr, and exit status 1, which the test harness reports as a failure.
 */
#ifndef MA_PLAIN_CHECK_H
#define MA_PLAIN_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                        \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			exit(1);                                                           \
		}                                                                          \
	} while (0)

#endif
