/*
 * bench/shapes.h's shapes in marcel: one VP (MARCEL_NVP=1 unless the environment says
 * otherwise), no time slices, the threads in the default queue of VP 0.
 */
#include <stdint.h>
#include <stdlib.h>
#include <marcel.h>
#include "shapes.h"

static long n_ops;

static any_t yielder(any_t arg)
{
	(void)arg;
	for (long i = 0; i < n_ops; i++)
		marcel_yield();
	return NULL;
}

static any_t empty(any_t arg)
{
	return arg;
}

struct handoff {
	marcel_mutex_t m;
	marcel_cond_t c[2];
	int turn;
};

static struct handoff h;
static int side_ids[2] = { 0, 1 };

static any_t side(any_t arg)
{
	int me = *(int *)arg, other = !me;
	SHAPE_CHECK(marcel_mutex_lock(&h.m));
	for (long i = 0; i < n_ops; i++) {
		while (h.turn != me)
			SHAPE_CHECK(marcel_cond_wait(&h.c[me], &h.m));
		h.turn = other;
		SHAPE_CHECK(marcel_cond_signal(&h.c[other]));
	}
	SHAPE_CHECK(marcel_mutex_unlock(&h.m));
	return NULL;
}

static marcel_sem_t sems[2];

static any_t sem_side(any_t arg)
{
	int me = *(int *)arg, other = !me;
	for (long i = 0; i < n_ops; i++) {
		if (me == 0) {
			SHAPE_CHECK(marcel_sem_post(&sems[other]));
			SHAPE_CHECK(marcel_sem_wait(&sems[me]));
		} else {
			SHAPE_CHECK(marcel_sem_wait(&sems[me]));
			SHAPE_CHECK(marcel_sem_post(&sems[other]));
		}
	}
	return NULL;
}

static marcel_barrier_t bar;

static any_t bar_side(any_t arg)
{
	(void)arg;
	for (long i = 0; i < n_ops; i++) {
		int e = marcel_barrier_wait(&bar);
		if (e && e != MARCEL_BARRIER_SERIAL_THREAD)
			shape_fail("marcel_barrier_wait", e);
	}
	return NULL;
}

/* One run of the shape: ns per operation. */
static double run(enum shape s, long n, marcel_t *all)
{
	marcel_t t[SHAPE_BARRIER_N];
	any_t r;
	n_ops = n;
	double t0 = shape_now_ns(), ops = (double)n;
	switch (s) {
	case SHAPE_YIELD:
		SHAPE_CHECK(marcel_create(&t[0], NULL, yielder, NULL));
		SHAPE_CHECK(marcel_create(&t[1], NULL, yielder, NULL));
		SHAPE_CHECK(marcel_join(t[0], NULL));
		SHAPE_CHECK(marcel_join(t[1], NULL));
		ops = 2.0 * (double)n;
		break;
	case SHAPE_CREATE1:
		for (long i = 0; i < n; i++) {
			SHAPE_CHECK(marcel_create(&t[0], NULL, empty, (any_t)(uintptr_t)i));
			SHAPE_CHECK(marcel_join(t[0], &r));
			if ((uintptr_t)r != (uintptr_t)i)
				shape_fail("a joined thread's result", -1);
		}
		break;
	case SHAPE_BATCH:
		for (long i = 0; i < n; i++)
			SHAPE_CHECK(marcel_create(&all[i], NULL, empty, NULL));
		for (long i = 0; i < n; i++)
			SHAPE_CHECK(marcel_join(all[i], NULL));
		break;
	case SHAPE_CONDHANDOFF:
	case SHAPE_SEM:
		h.turn = 0;
		SHAPE_CHECK(marcel_create(&t[1], NULL, s == SHAPE_SEM ? sem_side : side, &side_ids[1]));
		SHAPE_CHECK(marcel_create(&t[0], NULL, s == SHAPE_SEM ? sem_side : side, &side_ids[0]));
		SHAPE_CHECK(marcel_join(t[0], NULL));
		SHAPE_CHECK(marcel_join(t[1], NULL));
		ops = 2.0 * (double)n;
		break;
	case SHAPE_BARRIER:
		for (int k = 0; k < SHAPE_BARRIER_N; k++)
			SHAPE_CHECK(marcel_create(&t[k], NULL, bar_side, NULL));
		for (int k = 0; k < SHAPE_BARRIER_N; k++)
			SHAPE_CHECK(marcel_join(t[k], NULL));
		break;
	default:
		break;
	}
	return (shape_now_ns() - t0) / ops;
}

int main(int argc, char **argv)
{
	struct shape_opts o;
	shape_parse(argc, argv, &o);
	setenv("MARCEL_NVP", "1", 0);
	setenv("MARCEL_TIMESLICE", "0", 0);
	SHAPE_CHECK(marcel_init(NULL, NULL));
	SHAPE_CHECK(marcel_mutex_init(&h.m, NULL));
	SHAPE_CHECK(marcel_cond_init(&h.c[0], NULL));
	SHAPE_CHECK(marcel_cond_init(&h.c[1], NULL));
	SHAPE_CHECK(marcel_sem_init(&sems[0], 0));
	SHAPE_CHECK(marcel_sem_init(&sems[1], 0));
	SHAPE_CHECK(marcel_barrier_init(&bar, NULL, SHAPE_BARRIER_N));
	marcel_t *all = o.shape == SHAPE_BATCH ? malloc((size_t)o.n * sizeof(*all)) : NULL;
	if (o.shape == SHAPE_BATCH && !all)
		shape_fail("malloc", -1);
	for (int w = 0; w < o.warmup; w++)
		run(o.shape, o.n, all);
	double ns = run(o.shape, o.n, all);
	printf("%s ns=%.2f n=%ld\n", shape_names[o.shape], ns, o.n);
	free(all);
	marcel_end();
	return 0;
}
