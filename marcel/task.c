/*
 * Thread descriptors: allocated in chunks and recycled through per-worker free lists.
 * Descriptors are never returned to the system while the runtime runs, so a stale handle
 * can still be read safely (a second join finds MA_TASK_FREE and fails with ESRCH).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "ma_sched.h"

/* A worker's free descriptors: a list of up to MA_TASK_LIST that allocations pop and
 * frees push, and one spare list that was full. A free that fills the list moves it to
 * the spare (the previous spare, if any, goes to the shared pool); an allocation from an
 * empty list takes the spare back. Whole lists move, each knowing its oldest entry: a
 * burst of exits takes the shared pool's lock once per MA_TASK_LIST and walks nothing
 * (the walk to cut a list in two cost a burst of 100 000 about 2 cache misses a thread). */
#define MA_TASK_LIST 128

void ma_context_task_init(struct marcel_task *t, const char *name)
{
	memset(t, 0, sizeof(*t));
	t->magic = MA_TASK_MAGIC;
	t->e.type = MA_TASK_ENTITY;
	atomic_init(&t->e.prio, MA_IDLE_PRIO);
	ma_list_init(&t->e.run_node);
	t->is_idle = 1;
	atomic_init(&t->last_vp, -1);
	atomic_init(&t->state, MA_TASK_RUNNING);
	snprintf(t->name, sizeof(t->name), "%s", name);
}

/* t's first state, in zeroed memory. */
static void ma_task_reset(struct marcel_task *t)
{
	t->magic = MA_TASK_MAGIC;
	t->e.type = MA_TASK_ENTITY;
	ma_list_init(&t->e.run_node);
	atomic_init(&t->last_vp, -1);
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
	/* Mapped, not allocated: fresh pages are zero already, and zeroing them again cost a
	 * burst of creations as much as a tenth of each (bench/shapes.h's batch). */
	struct marcel_task *chunk = mmap(NULL, MA_TASK_CHUNK_BYTES, PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (chunk == MAP_FAILED)
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

/* Refills w's empty list from the shared pool and returns one more descriptor (or just
 * one, for a caller without a worker). */
static struct marcel_task *ma_task_refill(struct ma_worker *w)
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
		/* w's list is empty (the inline path found nothing). */
		for (unsigned i = 0; i < MA_TASK_CHUNK / 2 && ma_rt.tasks; i++) {
			struct marcel_task *x = ma_rt.tasks;
			ma_rt.tasks = x->pool_next;
			ma_rt.nb_tasks--;
			if (!w->tasks)
				w->tasks_tail = x;
			x->pool_next = w->tasks;
			w->tasks = x;
			w->nb_tasks++;
		}
	}
	ma_spin_unlock(&ma_rt.pool_lock);
	return t;
}

struct marcel_task *ma_task_alloc_slow(struct ma_worker *w)
{
	if (!w || !w->spare_tasks)
		return ma_task_refill(w);
	struct marcel_task *t = w->spare_tasks;
	w->tasks = t->pool_next;
	w->tasks_tail = w->spare_tail;
	w->nb_tasks = w->nb_spare_tasks - 1;
	w->spare_tasks = NULL;
	w->nb_spare_tasks = 0;
	return t;
}

/* Puts the list first..last of n descriptors into the shared pool. */
static void ma_task_give_shared(struct marcel_task *first, struct marcel_task *last, unsigned n)
{
	ma_spin_lock(&ma_rt.pool_lock);
	last->pool_next = ma_rt.tasks;
	ma_rt.tasks = first;
	ma_rt.nb_tasks += n;
	ma_spin_unlock(&ma_rt.pool_lock);
}

/* w's list just grew past MA_TASK_LIST: it becomes the spare. */
static __attribute__((noinline)) void ma_task_spill(struct ma_worker *w)
{
	if (w->spare_tasks)
		ma_task_give_shared(w->spare_tasks, w->spare_tail, w->nb_spare_tasks);
	w->spare_tasks = w->tasks;
	w->spare_tail = w->tasks_tail;
	w->nb_spare_tasks = w->nb_tasks;
	w->tasks = NULL;
	w->nb_tasks = 0;
}

/* Sets to 0 an atomic field that usually is 0 already. */
#define MA_ZERO_ATOMIC(f)                                                               \
	do {                                                                            \
		if (ma_unlikely(atomic_load_explicit(&(f), memory_order_relaxed) != 0)) \
			atomic_store_explicit(&(f), 0, memory_order_relaxed);           \
	} while (0)

/* Zeroes the descriptor's fresh block (ma_sched.h) in pieces of 64 bytes at most: GCC
 * expands a longer memset into `rep stos`, whose start costs more than the whole block
 * in plain stores (doc/design.md, "Stores and string instructions"). */
static inline void ma_task_zero_fresh(struct marcel_task *t)
{
	enum { FRESH = offsetof(struct marcel_task, fresh_end) - offsetof(struct marcel_task, fresh_begin) };
	char *p = t->fresh_begin;
	size_t n = FRESH;
	for (; n >= 64; n -= 64, p += 64)
		memset(p, 0, 64);
	memset(p, 0, n);
}

void ma_task_free(struct ma_worker *w, struct marcel_task *t)
{
	/* What a new thread relies on being zero; creation sets the rest. The plain fields
	 * are one block (ma_sched.h); the atomics, which other VPs may glance at in a
	 * recycled descriptor, are each tested before they are stored, most being zero
	 * already. */
	atomic_store_explicit(&t->state, MA_TASK_FREE, memory_order_release);
	ma_task_zero_fresh(t);
	if (ma_unlikely(ma_task_attention(t))) {
		MA_ZERO_ATOMIC(t->req.suspend_req);
		MA_ZERO_ATOMIC(t->req.move_req);
		MA_ZERO_ATOMIC(t->req.stray);
		MA_ZERO_ATOMIC(t->leave_req);
	}
	MA_ZERO_ATOMIC(t->parked);
	MA_ZERO_ATOMIC(t->preempt_off);
	MA_ZERO_ATOMIC(t->foreign_locks);
	MA_ZERO_ATOMIC(t->hosts_seed);
	MA_ZERO_ATOMIC(t->tree_exit);
	if (ma_read_once(&t->e.ready_holder))
		ma_write_once(&t->e.ready_holder, NULL);
	if (!w) {
		ma_task_give_shared(t, t, 1);
		return;
	}
	if (!w->tasks)
		w->tasks_tail = t;
	t->pool_next = w->tasks;
	w->tasks = t;
	if (ma_unlikely(++w->nb_tasks > MA_TASK_LIST))
		ma_task_spill(w);
}

void ma_task_pools_free(void)
{
	for (unsigned i = 0; i < ma_rt.nb_task_chunks; i++) {
		struct marcel_task *chunk = ma_rt.task_chunks[i];
		for (unsigned k = 0; k < MA_TASK_CHUNK; k++)
			ma_keys_free(&chunk[k]);
		munmap(chunk, MA_TASK_CHUNK_BYTES);
	}
	free(ma_rt.task_chunks);
	ma_rt.task_chunks = NULL;
	ma_rt.nb_task_chunks = ma_rt.max_task_chunks = 0;
	ma_rt.tasks = NULL;
	ma_rt.nb_tasks = 0;
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		ma_rt.workers[v].tasks = ma_rt.workers[v].spare_tasks = NULL;
		ma_rt.workers[v].nb_tasks = ma_rt.workers[v].nb_spare_tasks = 0;
	}
}
