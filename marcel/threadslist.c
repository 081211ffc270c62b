/*
 * marcel_threadslist: Marcel's list of the threads alive. Descriptors live in chunks that
 * are never freed while the runtime runs (task.c), so walking every chunk finds every
 * thread, with no list to maintain on the spawn path.
 */
#include <errno.h>
#include "ma_sched.h"

#define MA_THREADSLIST_FILTERS                                                            \
	(MIGRATABLE_ONLY | NOT_MIGRATABLE_ONLY | DETACHED_ONLY | NOT_DETACHED_ONLY |      \
	 BLOCKED_ONLY | NOT_BLOCKED_ONLY | READY_ONLY | NOT_READY_ONLY)

/* Whether t is alive and passes every filter of which. */
static int ma_threadslist_match(struct marcel_task *t, int which)
{
	int st = atomic_load_explicit(&t->state, memory_order_acquire);
	if (st == MA_TASK_FREE || st == MA_TASK_DEAD || t->is_idle)
		return 0;
	if (atomic_load_explicit(&t->link, memory_order_relaxed) & MA_LINK_DEAD)
		return 0;
	int parked = atomic_load_explicit(&t->parked, memory_order_relaxed);
	int blocked = st == MA_TASK_BLOCKING || st == MA_TASK_BLOCKED || st == MA_TASK_SUSPENDED || parked;
	int ready = !blocked && (st == MA_TASK_READY || st == MA_TASK_RUNNING);
	int detached = (atomic_load_explicit(&t->link, memory_order_relaxed) & MA_LINK_DETACHED) != 0;
	int migratable = !t->pinned;
	return !((which & MIGRATABLE_ONLY) && !migratable) && !((which & NOT_MIGRATABLE_ONLY) && migratable) &&
	       !((which & DETACHED_ONLY) && !detached) && !((which & NOT_DETACHED_ONLY) && detached) &&
	       !((which & BLOCKED_ONLY) && !blocked) && !((which & NOT_BLOCKED_ONLY) && blocked) &&
	       !((which & READY_ONLY) && !ready) && !((which & NOT_READY_ONLY) && ready);
}

unsigned ma_threads_walk(void (*fn)(struct marcel_task *t, void *arg), void *arg)
{
	unsigned n = 0;
	/* Held so that no chunk is added (and the array moved) while we walk it. */
	ma_spin_lock(&ma_rt.pool_lock);
	for (unsigned c = 0; c < ma_rt.nb_task_chunks; c++) {
		struct marcel_task *chunk = ma_rt.task_chunks[c];
		for (unsigned i = 0; i < MA_TASK_CHUNK; i++) {
			struct marcel_task *t = &chunk[i];
			if (atomic_load_explicit(&t->state, memory_order_relaxed) == MA_TASK_FREE || t->is_idle)
				continue;
			fn(t, arg);
			n++;
		}
	}
	ma_spin_unlock(&ma_rt.pool_lock);
	return n;
}

struct ma_threadslist_out {
	marcel_t *pids;
	int max, n, which;
};

static void ma_threadslist_one(struct marcel_task *t, void *arg)
{
	struct ma_threadslist_out *o = arg;
	if (!ma_threadslist_match(t, o->which))
		return;
	if (o->n < o->max)
		o->pids[o->n] = t;
	o->n++;
}

int marcel_threadslist(int max, marcel_t *pids, int *nb, int which)
{
	if (!nb || max < 0 || (!pids && max > 0) || (which & ~MA_THREADSLIST_FILTERS))
		return EINVAL;
	if (!ma_rt.running)
		return EPERM;
	struct ma_threadslist_out o = { pids, max, 0, which };
	ma_threads_walk(ma_threadslist_one, &o);
	*nb = o.n;
	return 0;
}
