/* The pool of tests/pthread-auto-pool.c, used by tests/pthread-auto-main.c. */
#ifndef PTHREAD_AUTO_H
#define PTHREAD_AUTO_H

/* Starts n detached workers, never stopped. */
void pool_start(int n);
/* Queues job x (a worker adds it to the sum). */
void pool_submit(long x);
/* Waits until n jobs are done; returns their sum. */
long pool_wait_sum(long n);

#endif
