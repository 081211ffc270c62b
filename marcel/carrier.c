/*
 * Carriers: the kernel threads that run VPs.
 *
 * A VP (worker) is not tied to one kernel thread. Its scheduling context (the idle
 * loop) has a stack of its own, so any kernel thread can run it. That is what blocking
 * sections need: the thread about to block in the kernel keeps its kernel thread, and
 * the VP moves to a spare one (blocking.c).
 *
 * Each carrier has a context of its own (`self`: its native stack; for the process's
 * main thread, a small stack of its own, since main's native stack belongs to the main
 * marcel thread). A carrier without a VP waits in that context for a command: run a VP,
 * run a given task (marcel_end bringing main home), or exit. Carriers are created on
 * demand and cached until marcel_end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ma_sched.h"
#include "ma_sanitizer.h"
#include "ma_preempt.h"
#include "ma_tls_check.h"

#define MA_CARRIER_STACK_SIZE ((size_t)64 * 1024)

enum ma_carrier_cmd { MA_CMD_NONE, MA_CMD_RUN_VP, MA_CMD_RUN_TASK, MA_CMD_EXIT };

struct ma_carrier {
	struct marcel_task self;          /* the carrier's own context; first, for the cast */
	pthread_t th;
	int is_main;                      /* the process's main thread */
	int started;                      /* has a kernel thread to join */
	atomic_uint cmd_seq;              /* futex word: bumped when a command is posted */
	atomic_int cmd;                   /* pending command, taken by the carrier */
	struct ma_worker *vp;
	struct marcel_task *task;
	struct ma_carrier *next_spare, *next_all;
	void *altstack;
	void *own_stack;                  /* main carrier only */
	unsigned own_stack_vg;
};

__thread struct ma_carrier *ma_tls_carrier;

static ma_spinlock_t ma_carrier_lock;
static struct ma_carrier *ma_spares, *ma_carriers, *ma_main_carrier;

static void ma_carrier_post(struct ma_carrier *c, int cmd)
{
	atomic_store(&c->cmd, cmd);
	atomic_fetch_add(&c->cmd_seq, 1);
	ma_futex_wake(&c->cmd_seq, 1);
}

/* Takes the next command; MA_CMD_EXIT once the runtime stops, except for the main
 * carrier, which marcel_end may still need to bring main home. */
static int ma_carrier_wait(struct ma_carrier *c)
{
	for (;;) {
		unsigned seq = atomic_load(&c->cmd_seq);
		int cmd = atomic_exchange(&c->cmd, MA_CMD_NONE);
		if (cmd != MA_CMD_NONE)
			return cmd;
		if (!c->is_main && atomic_load(&ma_rt.stopping))
			return MA_CMD_EXIT;
		/* A post after the exchange moves seq: the wait returns at once. */
		ma_futex_wait(&c->cmd_seq, seq);
	}
}

static void ma_carrier_init_self(struct ma_carrier *c)
{
	ma_context_task_init(&c->self, "carrier");
	atomic_init(&c->self.on_cpu, 1);
}

/* Runs w's scheduling context on this kernel thread until something switches back to
 * the carrier; returns that something. */
static struct marcel_task *ma_carrier_run_vp(struct ma_carrier *c, struct ma_worker *w)
{
	ma_tls_worker = w;
	w->errno_loc = &errno;
	w->carrier = c;
	if (!ma_rt.topo.fake) {
		int e = ma_topo_bind_self(&ma_rt.topo, w->vp);
		if (e)
			fprintf(stderr, "marcel: warning: cannot bind VP%u to PU%u: %s\n", w->vp,
				ma_rt.topo.vps[w->vp].pu_os, strerror(e));
	}
	atomic_store_explicit(&w->current, &w->idle, memory_order_relaxed);
	atomic_store_explicit(&w->idle.state, MA_TASK_RUNNING, memory_order_relaxed);
	c->self.post = MA_POST_NONE;
	return ma_carrier_switch(&c->self, &w->idle);
}

/* Runs task t (main coming home at marcel_end) as VP w's current thread. */
static struct marcel_task *ma_carrier_run_task(struct ma_carrier *c, struct marcel_task *t,
					       struct ma_worker *w)
{
	ma_tls_worker = w;
	w->errno_loc = &errno;
	w->carrier = c;
	atomic_store_explicit(&w->current, t, memory_order_relaxed);
	atomic_store_explicit(&t->last_vp, (int)w->vp, memory_order_relaxed);
	atomic_store_explicit(&t->state, MA_TASK_RUNNING, memory_order_relaxed);
	c->self.post = MA_POST_NONE;
	return ma_carrier_switch(&c->self, t);
}

/* Finishes for `from`, which just switched back to this carrier and is now saved. */
static void ma_carrier_finish(struct marcel_task *from)
{
	ma_tls_check_switch(NULL, from);
	ma_tls_worker = NULL;
	if (from->post == MA_POST_REQUEUE) {
		/* A thread leaving a blocking section: it may run anywhere it is allowed. */
		atomic_store_explicit(&from->on_cpu, 0, memory_order_release);
		atomic_store_explicit(&from->state, MA_TASK_READY, memory_order_relaxed);
		ma_entity_enqueue(&from->e);
		return;
	}
	atomic_store_explicit(&from->on_cpu, 0, memory_order_release);
	if (from->post == MA_POST_HANDOFF && ma_main_carrier) {
		/* The main carrier waits among the spares (or is about to): take it out and
		 * command it under the lock, which its own enlisting also takes. */
		ma_spin_lock(&ma_carrier_lock);
		for (struct ma_carrier **p = &ma_spares; *p; p = &(*p)->next_spare)
			if (*p == ma_main_carrier) {
				*p = ma_main_carrier->next_spare;
				break;
			}
		/* Not ->vp: the main carrier may still be running another VP, which it took
		 * with that field, and only the command orders what it reads next. */
		ma_main_carrier->task = from;
		ma_carrier_post(ma_main_carrier, MA_CMD_RUN_TASK);
		ma_spin_unlock(&ma_carrier_lock);
	}
}

/* The carrier's life: do what `from` (if any) left to do, then take commands. */
static void ma_carrier_loop(struct ma_carrier *c, struct marcel_task *from)
{
	for (;;) {
		if (from) {
			ma_carrier_finish(from);
			if (from->is_idle && atomic_load(&ma_rt.stopping) && !c->is_main)
				return; /* its VP stopped */
			from = NULL;
			/* Enlist as a spare unless a command already came (main coming home):
			 * that command is posted under the same lock. */
			ma_spin_lock(&ma_carrier_lock);
			if (atomic_load(&c->cmd) == MA_CMD_NONE && !atomic_load(&ma_rt.stopping)) {
				c->next_spare = ma_spares;
				ma_spares = c;
			}
			ma_spin_unlock(&ma_carrier_lock);
		}
		switch (ma_carrier_wait(c)) {
		case MA_CMD_RUN_VP:
			from = ma_carrier_run_vp(c, c->vp);
			break;
		case MA_CMD_RUN_TASK:
			/* Only main coming home posts it, and main comes home to VP 0. */
			from = ma_carrier_run_task(c, c->task, &ma_rt.workers[0]);
			break;
		default:
			return;
		}
	}
}

static void *ma_carrier_thread(void *arg)
{
	struct ma_carrier *c = arg;
	ma_tls_carrier = c;
	if (ma_altstack_setup(&c->altstack, 0))
		fprintf(stderr, "marcel: warning: no signal stack for a worker kernel thread: stack "
				"overflows there will not be reported\n");
	/* After the signal stack: the preemption handler runs on it. */
	ma_preempt_thread_start(c);
	ma_carrier_loop(c, NULL);
	ma_preempt_thread_end(c);
	ma_tls_check_thread_end();
	ma_altstack_teardown(&c->altstack, 0);
	ma_tls_carrier = NULL;
	ma_tls_worker = NULL;
	return NULL;
}

/* Entry of the main carrier's own context, the first time something switches to it. */
static void ma_main_carrier_entry(void *from, void *arg)
{
	struct ma_carrier *c = arg;
	ma_asan_finish_switch(NULL, &((struct marcel_task *)from)->asan_bottom,
			      &((struct marcel_task *)from)->asan_size);
	ma_carrier_loop(c, from);
	/* The main carrier is never told to exit: marcel_end abandons its context. */
	abort();
}

/* A zeroed carrier. Its descriptor is cache-line aligned (ma_sched.h), which calloc's
 * alignment is not. */
static struct ma_carrier *ma_carrier_alloc(void)
{
	struct ma_carrier *c = aligned_alloc(_Alignof(struct ma_carrier), sizeof(*c));
	if (c)
		memset(c, 0, sizeof(*c));
	return c;
}

/* A new carrier whose kernel thread starts with command cmd for worker w. */
static struct ma_carrier *ma_carrier_spawn(struct ma_worker *w)
{
	struct ma_carrier *c = ma_carrier_alloc();
	if (!c)
		return NULL;
	ma_carrier_init_self(c);
	c->vp = w;
	atomic_init(&c->cmd, MA_CMD_RUN_VP);
	pthread_attr_t a;
	pthread_attr_init(&a);
	/* Carriers run idle loops and blocking calls only: user threads have their own stacks. */
	pthread_attr_setstacksize(&a, 256 * 1024);
	int e = pthread_create(&c->th, &a, ma_carrier_thread, c);
	pthread_attr_destroy(&a);
	if (e) {
		free(c);
		errno = e;
		return NULL;
	}
	c->started = 1;
	ma_spin_lock(&ma_carrier_lock);
	c->next_all = ma_carriers;
	ma_carriers = c;
	ma_spin_unlock(&ma_carrier_lock);
	return c;
}

int ma_carrier_give_vp(struct ma_worker *w)
{
	ma_spin_lock(&ma_carrier_lock);
	struct ma_carrier *c = ma_spares;
	if (c)
		ma_spares = c->next_spare;
	ma_spin_unlock(&ma_carrier_lock);
	if (c) {
		c->vp = w;
		ma_carrier_post(c, MA_CMD_RUN_VP);
		return 0;
	}
	return ma_carrier_spawn(w) ? 0 : EAGAIN;
}

struct ma_carrier *ma_carrier_self(void)
{
	return ma_tls_carrier;
}

struct marcel_task *ma_carrier_context(struct ma_carrier *c)
{
	return &c->self;
}

static void ma_idle_entry(void *from, void *arg)
{
	struct ma_worker *w = arg;
	ma_idle_loop(from, w);
	/* The runtime is stopping: give the kernel thread back to its carrier, which ends. */
	w->idle.post = MA_POST_NONE;
	ma_switch_out(&w->idle, &ma_tls_carrier->self);
	abort();
}

int ma_carriers_start(void)
{
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		struct ma_worker *w = &ma_rt.workers[v];
		size_t mapped;
		w->idle_stack = ma_stack_map(MA_CARRIER_STACK_SIZE, &mapped);
		if (!w->idle_stack)
			return ENOMEM;
		w->idle_stack_size = MA_CARRIER_STACK_SIZE;
		w->idle_stack_vg = ma_valgrind_stack_register(w->idle_stack,
							      (char *)w->idle_stack + MA_CARRIER_STACK_SIZE);
		w->idle.asan_bottom = w->idle_stack;
		w->idle.asan_size = MA_CARRIER_STACK_SIZE;
		w->idle.stack_base = w->idle_stack;
		ma_tsan_fiber_create(&w->idle);
		atomic_store(&w->idle.on_cpu, 0);
		ma_ctx_make(&w->idle.ctx, w->idle_stack, MA_CARRIER_STACK_SIZE, ma_arch_fpctl(),
			    ma_idle_entry, w);
	}

	/* The main thread's carrier: it runs VP 0 now; its own context is only needed once
	 * main's kernel thread must wait as a spare. */
	struct ma_carrier *c = ma_carrier_alloc();
	if (!c)
		return ENOMEM;
	ma_carrier_init_self(c);
	c->is_main = 1;
	size_t mapped;
	c->own_stack = ma_stack_map(MA_CARRIER_STACK_SIZE, &mapped);
	if (!c->own_stack) {
		free(c);
		return ENOMEM;
	}
	c->own_stack_vg = ma_valgrind_stack_register(c->own_stack, (char *)c->own_stack + MA_CARRIER_STACK_SIZE);
	c->self.asan_bottom = c->own_stack;
	c->self.asan_size = MA_CARRIER_STACK_SIZE;
	c->self.stack_base = c->own_stack;
	ma_tsan_fiber_create(&c->self);
	atomic_store(&c->self.on_cpu, 0);
	ma_ctx_make(&c->self.ctx, c->own_stack, MA_CARRIER_STACK_SIZE, ma_arch_fpctl(), ma_main_carrier_entry, c);
	ma_main_carrier = c;
	ma_tls_carrier = c;
	ma_rt.workers[0].carrier = c;
	if (ma_altstack_setup(&c->altstack, 1))
		fprintf(stderr, "marcel: warning: no signal stack for VP0: stack overflows will not be "
				"reported\n");

	for (unsigned v = 1; v < ma_rt.nb_vps; v++)
		if (!ma_carrier_spawn(&ma_rt.workers[v])) {
			int e = errno;
			fprintf(stderr, "marcel: cannot start the kernel thread of VP%u: %s\n", v, strerror(e));
			ma_carriers_stop();
			return e;
		}
	return 0;
}

int ma_carrier_main_home(void)
{
	return ma_tls_carrier == ma_main_carrier;
}

void ma_carriers_begin_stop(void)
{
	atomic_store(&ma_rt.stopping, 1);
	for (unsigned v = 1; v < ma_rt.nb_vps; v++) {
		struct ma_worker *w = &ma_rt.workers[v];
		atomic_store(&w->state, MA_WORKER_WAKING);
		ma_worker_kick(w);
	}
	/* Spares (and carriers about to become spares) see `stopping` once woken. */
	ma_spin_lock(&ma_carrier_lock);
	for (struct ma_carrier *c = ma_carriers; c; c = c->next_all)
		ma_carrier_post(c, MA_CMD_EXIT);
	ma_spares = NULL;
	ma_spin_unlock(&ma_carrier_lock);
}

void ma_carriers_stop(void)
{
	ma_carriers_begin_stop();
	ma_spin_lock(&ma_carrier_lock);
	struct ma_carrier *all = ma_carriers;
	ma_carriers = NULL;
	ma_spin_unlock(&ma_carrier_lock);
	while (all) {
		struct ma_carrier *c = all;
		all = c->next_all;
		if (c->started)
			pthread_join(c->th, NULL);
		free(c);
	}
}

void ma_carriers_free(void)
{
	for (unsigned v = 0; ma_rt.workers && v < ma_rt.nb_vps; v++) {
		struct ma_worker *w = &ma_rt.workers[v];
		if (w->idle_stack) {
			ma_valgrind_stack_deregister(w->idle_stack_vg);
			ma_stack_unmap(w->idle_stack, w->idle_stack_size);
			w->idle_stack = NULL;
			ma_tsan_fiber_destroy(&w->idle);
		}
	}
	struct ma_carrier *c = ma_main_carrier;
	if (c) {
		ma_altstack_teardown(&c->altstack, 1);
		ma_valgrind_stack_deregister(c->own_stack_vg);
		ma_stack_unmap(c->own_stack, MA_CARRIER_STACK_SIZE);
		ma_tsan_fiber_destroy(&c->self);
		free(c);
		ma_main_carrier = NULL;
	}
	ma_tls_carrier = NULL;
}
