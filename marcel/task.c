/*
 * Thread descriptors: allocated in chunks and recycled through per-worker free lists.
 * Descriptors are never returned to the system while the runtime runs, so a stale handle
 * can still be read safely (a second join finds MA_TASK_FREE and fails with ESRCH).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ma_sched.h"

#define MA_TASK_CHUNK 64
#define MA_TASK_POOL_MAX 256 /* per worker; the excess goes to the shared pool */

void ma_context_task_init(struct marcel_task *t, const char *name)
{
	memset(t, 0, sizeof(*t));
	t->magic = MA_TASK_MAGIC;
	t->e.type = MA_TASK_ENTITY;
	t->e.prio = MA_IDLE_PRIO;
	ma_list_init(&t->e.run_node);
	t->is_idle = 1;
	t->last_vp = -1;
	atomic_init(&t->state, MA_TASK_RUNNING);
	snprintf(t->name, sizeof(t->name), "%s", name);
}

static void ma_task_reset(struct marcel_task *t)
{
	memset(t, 0, sizeof(*t));
	t->magic = MA_TASK_MAGIC;
	t->e.type = MA_TASK_ENTITY;
	ma_list_init(&t->e.run_node);
	t->last_vp = -1;
}

/* Called with the pool lock held. */
static int ma_task_chunk_new(void)
{
	if (ma_rt.nb_task_chunks == ma_rt.max_task_chunks) {
		unsigned n = ma_rt.max_task_chunks ? 2 * ma_rt.max_task_chunks : 64;
		void **c = realloc(ma_rt.task_chunks, n * sizeof(*c));
		if (!c)
			return -1;
		ma_rt.task_chunks = c;
		ma_rt.max_task_chunks = n;
	}
	struct marcel_task *chunk = aligned_alloc(64, MA_TASK_CHUNK * sizeof(*chunk));
	if (!chunk)
		return -1;
	ma_rt.task_chunks[ma_rt.nb_task_chunks++] = chunk;
	for (unsigned i = 0; i < MA_TASK_CHUNK; i++) {
		ma_task_reset(&chunk[i]);
		chunk[i].pool_next = ma_rt.tasks;
		ma_rt.tasks = &chunk[i];
	}
	ma_rt.nb_tasks += MA_TASK_CHUNK;
	return 0;
}

/* Refills w's list (or returns one descriptor for a caller without a worker). */
struct marcel_task *ma_task_alloc_slow(struct ma_worker *w)
{
	ma_spin_lock(&ma_rt.pool_lock);
	if (!ma_rt.tasks && ma_task_chunk_new()) {
		ma_spin_unlock(&ma_rt.pool_lock);
		return NULL;
	}
	struct marcel_task *t = ma_rt.tasks;
	ma_rt.tasks = t->pool_next;
	ma_rt.nb_tasks--;
	if (w) {
		for (unsigned i = 0; i < MA_TASK_CHUNK / 2 && ma_rt.tasks; i++) {
			struct marcel_task *x = ma_rt.tasks;
			ma_rt.tasks = x->pool_next;
			ma_rt.nb_tasks--;
			x->pool_next = w->tasks;
			w->tasks = x;
			w->nb_tasks++;
		}
	}
	ma_spin_unlock(&ma_rt.pool_lock);
	return t;
}

void ma_task_free(struct ma_worker *w, struct marcel_task *t)
{
	/* Only the fields a new thread relies on being zero; creation sets the others. */
	atomic_store_explicit(&t->state, MA_TASK_FREE, memory_order_release);
	t->stack_base = NULL;
	t->asan_fake_stack = NULL;
	t->asan_bottom = NULL;
	t->asan_size = 0;
	__atomic_store_n(&t->e.ready_holder, NULL, __ATOMIC_RELAXED);
	atomic_store_explicit(&t->suspend_req, 0, memory_order_relaxed);
	atomic_store_explicit(&t->parked, 0, memory_order_relaxed);
	t->in_section = 0;
	t->canary = 0;
	atomic_store_explicit(&t->preempt_off, 0, memory_order_relaxed);
	atomic_store_explicit(&t->leave_req, 0, memory_order_relaxed);
	atomic_store_explicit(&t->hosts_seed, 0, memory_order_relaxed);
	atomic_store_explicit(&t->move_req, 0, memory_order_relaxed);
	atomic_store_explicit(&t->stray, 0, memory_order_relaxed);
	t->stray_yields = 0;
	memset(t->rd_held, 0, sizeof(t->rd_held));
	t->rd_untracked = 0;
	if (ma_likely(w && w->nb_tasks < MA_TASK_POOL_MAX)) {
		t->pool_next = w->tasks;
		w->tasks = t;
		w->nb_tasks++;
		return;
	}
	ma_spin_lock(&ma_rt.pool_lock);
	t->pool_next = ma_rt.tasks;
	ma_rt.tasks = t;
	ma_rt.nb_tasks++;
	ma_spin_unlock(&ma_rt.pool_lock);
}

void ma_task_pools_free(void)
{
	for (unsigned i = 0; i < ma_rt.nb_task_chunks; i++) {
		struct marcel_task *chunk = ma_rt.task_chunks[i];
		for (unsigned k = 0; k < MA_TASK_CHUNK; k++)
			ma_keys_free(&chunk[k]);
		free(chunk);
	}
	free(ma_rt.task_chunks);
	ma_rt.task_chunks = NULL;
	ma_rt.nb_task_chunks = ma_rt.max_task_chunks = 0;
	ma_rt.tasks = NULL;
	ma_rt.nb_tasks = 0;
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		ma_rt.workers[v].tasks = NULL;
		ma_rt.workers[v].nb_tasks = 0;
	}
}
