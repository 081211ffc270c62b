/*
 * bench/shapes.h's shapes in Argobots, as the issue measured them: one execution stream
 * (the primary), its main scheduler over one private FIFO pool, every ULT in that pool.
 * Built only when configure finds Argobots (ABT_PREFIX, or pkg-config argobots;
 * tools/get-argobots builds it from its source).
 */
#include <stdint.h>
#include <stdlib.h>
#include <abt.h>
#include "shapes.h"

static long n_ops;
static ABT_pool pool;

static void yielder(void *arg)
{
	(void)arg;
	for (long i = 0; i < n_ops; i++)
		ABT_thread_yield();
}

static void empty(void *arg)
{
	(void)arg;
}

struct handoff {
	ABT_mutex m;
	ABT_cond c[2];
	int turn;
};

static struct handoff h;
static int side_ids[2] = { 0, 1 };

static void side(void *arg)
{
	int me = *(int *)arg, other = !me;
	SHAPE_CHECK(ABT_mutex_lock(h.m));
	for (long i = 0; i < n_ops; i++) {
		while (h.turn != me)
			SHAPE_CHECK(ABT_cond_wait(h.c[me], h.m));
		h.turn = other;
		SHAPE_CHECK(ABT_cond_signal(h.c[other]));
	}
	SHAPE_CHECK(ABT_mutex_unlock(h.m));
}

/* A counting semaphore as an Argobots program would build one. */
struct abt_sem {
	ABT_mutex m;
	ABT_cond c;
	long count;
};

static struct abt_sem sems[2];

static void sem_post(struct abt_sem *s)
{
	SHAPE_CHECK(ABT_mutex_lock(s->m));
	s->count++;
	SHAPE_CHECK(ABT_cond_signal(s->c));
	SHAPE_CHECK(ABT_mutex_unlock(s->m));
}

static void sem_wait(struct abt_sem *s)
{
	SHAPE_CHECK(ABT_mutex_lock(s->m));
	while (!s->count)
		SHAPE_CHECK(ABT_cond_wait(s->c, s->m));
	s->count--;
	SHAPE_CHECK(ABT_mutex_unlock(s->m));
}

static void sem_side(void *arg)
{
	int me = *(int *)arg, other = !me;
	for (long i = 0; i < n_ops; i++) {
		if (me == 0) {
			sem_post(&sems[other]);
			sem_wait(&sems[me]);
		} else {
			sem_wait(&sems[me]);
			sem_post(&sems[other]);
		}
	}
}

static ABT_barrier bar;

static void bar_side(void *arg)
{
	(void)arg;
	for (long i = 0; i < n_ops; i++)
		SHAPE_CHECK(ABT_barrier_wait(bar));
}

/* Joins and frees t: the pair marcel_join is compared with. */
static void join(ABT_thread *t)
{
	SHAPE_CHECK(ABT_thread_free(t));
}

static double run(enum shape s, long n, ABT_thread *all)
{
	ABT_thread t[SHAPE_BARRIER_N];
	n_ops = n;
	double t0 = shape_now_ns(), ops = (double)n;
	switch (s) {
	case SHAPE_YIELD:
		SHAPE_CHECK(ABT_thread_create(pool, yielder, NULL, ABT_THREAD_ATTR_NULL, &t[0]));
		SHAPE_CHECK(ABT_thread_create(pool, yielder, NULL, ABT_THREAD_ATTR_NULL, &t[1]));
		join(&t[0]);
		join(&t[1]);
		ops = 2.0 * (double)n;
		break;
	case SHAPE_CREATE1:
		for (long i = 0; i < n; i++) {
			SHAPE_CHECK(ABT_thread_create(pool, empty, (void *)(uintptr_t)i, ABT_THREAD_ATTR_NULL, &t[0]));
			join(&t[0]);
		}
		break;
	case SHAPE_BATCH:
		for (long i = 0; i < n; i++)
			SHAPE_CHECK(ABT_thread_create(pool, empty, NULL, ABT_THREAD_ATTR_NULL, &all[i]));
		for (long i = 0; i < n; i++)
			join(&all[i]);
		break;
	case SHAPE_CONDHANDOFF:
	case SHAPE_SEM:
		h.turn = 0;
		SHAPE_CHECK(ABT_thread_create(pool, s == SHAPE_SEM ? sem_side : side, &side_ids[1], ABT_THREAD_ATTR_NULL,
					      &t[1]));
		SHAPE_CHECK(ABT_thread_create(pool, s == SHAPE_SEM ? sem_side : side, &side_ids[0], ABT_THREAD_ATTR_NULL,
					      &t[0]));
		join(&t[0]);
		join(&t[1]);
		ops = 2.0 * (double)n;
		break;
	case SHAPE_BARRIER:
		for (int k = 0; k < SHAPE_BARRIER_N; k++)
			SHAPE_CHECK(ABT_thread_create(pool, bar_side, NULL, ABT_THREAD_ATTR_NULL, &t[k]));
		for (int k = 0; k < SHAPE_BARRIER_N; k++)
			join(&t[k]);
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
	SHAPE_CHECK(ABT_init(0, NULL));
	ABT_xstream xs;
	SHAPE_CHECK(ABT_xstream_self(&xs));
	SHAPE_CHECK(ABT_pool_create_basic(ABT_POOL_FIFO, ABT_POOL_ACCESS_PRIV, ABT_TRUE, &pool));
	SHAPE_CHECK(ABT_xstream_set_main_sched_basic(xs, ABT_SCHED_DEFAULT, 1, &pool));
	SHAPE_CHECK(ABT_mutex_create(&h.m));
	SHAPE_CHECK(ABT_cond_create(&h.c[0]));
	SHAPE_CHECK(ABT_cond_create(&h.c[1]));
	SHAPE_CHECK(ABT_barrier_create(SHAPE_BARRIER_N, &bar));
	for (int i = 0; i < 2; i++) {
		SHAPE_CHECK(ABT_mutex_create(&sems[i].m));
		SHAPE_CHECK(ABT_cond_create(&sems[i].c));
	}
	ABT_thread *all = o.shape == SHAPE_BATCH ? malloc((size_t)o.n * sizeof(*all)) : NULL;
	if (o.shape == SHAPE_BATCH && !all)
		shape_fail("malloc", -1);
	for (int w = 0; w < o.warmup; w++)
		run(o.shape, o.n, all);
	double ns = run(o.shape, o.n, all);
	printf("%s ns=%.2f n=%ld\n", shape_names[o.shape], ns, o.n);
	free(all);
	ABT_cond_free(&h.c[0]);
	ABT_cond_free(&h.c[1]);
	ABT_mutex_free(&h.m);
	ABT_barrier_free(&bar);
	for (int i = 0; i < 2; i++) {
		ABT_cond_free(&sems[i].c);
		ABT_mutex_free(&sems[i].m);
	}
	SHAPE_CHECK(ABT_finalize());
	return 0;
}
