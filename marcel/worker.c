/*
 * Workers: one kernel thread per VP, its idle policy, how new work wakes one up, and the
 * per-worker brackets of lock-free load estimates (ma_estimate_begin/end).
 *
 * Idle protocol. An idle worker first polls its path of queues (SPINNING, counted in
 * nr_spinning of every queue on its path) for ma_rt.idle_spin_us, then goes SLEEPING: it
 * counts itself in nr_sleeping of every queue on its path, then checks each queue's
 * bitmap *under that queue's lock*, and only then sleeps on its futex. An enqueuer reads
 * the counters under the same lock after queuing. So for any queue, either the sleeper's
 * check comes after the enqueue (it sees the work) or the enqueuer comes after the check
 * (it sees the sleeper) -- no fence on the enqueue path, no lost wake-up. A spinner that
 * is counted will either take the work or do the same check before sleeping.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "ma_sync.h"
#include "ma_trace.h"

__thread struct ma_worker *ma_tls_worker __attribute__((tls_model("initial-exec")));

#ifdef MA_NEED_TLS_GETTER
/* Out of line so that every call computes the TLS address afresh (see MA_TLS_READ). */
__attribute__((noinline)) void *ma_tls_worker_get(void)
{
	void *w = ma_tls_worker;
	__asm__ volatile("" : "+r"(w) : : "memory");
	return w;
}
#endif

/* How long a spinning worker leaves new work on a shared queue to its producer's worker:
 * a thread that creates and then joins (or blocks) runs the child itself, on its own
 * cache, instead of the idle worker pulling it across cores. Far below any useful
 * thread's lifetime, so parallel work is not held back in practice. */
#define MA_STEAL_GRACE_NS 2000u

static uint64_t ma_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void ma_path_add(struct ma_worker *w, size_t counter_offset, int delta)
{
	for (unsigned i = 0; i < w->path_len; i++)
		atomic_fetch_add((atomic_int *)((char *)w->path[i] + counter_offset), delta);
}

/* What a spinning worker saw on a queue of its path that other workers also serve. */
struct ma_seen {
	uint64_t since;                   /* when it first saw the work there now; 0: none */
	unsigned long taken;              /* the queue's nr_taken then */
	unsigned ready;                   /* and its nr_ready then */
};

/* Queues of a path tracked one by one (deeper ones are taken without grace). */
#define MA_SEEN_MAX 32

/* Work a spinning worker may take now: anything on a queue only it serves; on a shared
 * queue, only work that has been waiting for MA_STEAL_GRACE_NS. Each queue is judged by
 * its own work: the grace runs from when its present work appeared, and starts again
 * once everything that was there then has been taken -- a producer that keeps creating
 * and joining its own children keeps the queue busy, not its children waiting. */
static int ma_spin_sees_work(const struct ma_worker *w, struct ma_seen *seen, int shared)
{
	/* runnext: a timer this worker fired while polling woke one of its threads. */
	if (w->runnext || atomic_load_explicit(&w->rq.bitmap, memory_order_relaxed))
		return 1;
	uint64_t now = 0;
	for (unsigned i = 0; shared && i < w->path_len; i++) {
		struct ma_runqueue *rq = w->path[i];
		if (!atomic_load_explicit(&rq->bitmap, memory_order_relaxed)) {
			if (i < MA_SEEN_MAX)
				seen[i].since = 0;
			continue;
		}
		if (rq->nb_vps <= 1 || i >= MA_SEEN_MAX)
			return 1;
		unsigned long taken = ma_read_once(&rq->nr_taken);
		if (!now)
			now = ma_now_ns();
		struct ma_seen *s = &seen[i];
		if (!s->since || taken - s->taken >= s->ready) {
			unsigned ready = ma_read_once(&rq->nr_ready);
			s->since = now;
			s->taken = taken;
			s->ready = ready ? ready : 1;
			continue;
		}
		if (now - s->since >= MA_STEAL_GRACE_NS)
			return 1;
	}
	return 0;
}

/* Pause instructions between two polls of a spinning worker: about MA_POLL_NS, measured
 * once (a pause takes from a few to 150 cycles depending on the processor). Polling back
 * to back would take the queues' cache lines away from the workers that fill them at
 * every round: a producer then pays a transfer on each enqueue. */
#define MA_POLL_NS 128u
#define MA_SHARED_EVERY 4u

static unsigned ma_poll_pauses(void)
{
	static atomic_uint pauses;
	unsigned n = atomic_load_explicit(&pauses, memory_order_relaxed);
	if (ma_likely(n))
		return n;
	uint64_t t0 = ma_now_ns();
	for (unsigned i = 0; i < 256; i++)
		ma_cpu_relax();
	uint64_t per = (ma_now_ns() - t0) / 256;
	n = per ? (unsigned)(MA_POLL_NS / per) : 64;
	n = n < 1 ? 1 : n > 64 ? 64 : n;
	atomic_store_explicit(&pauses, n, memory_order_relaxed);
	return n;
}

static int ma_path_has_work_locked(const struct ma_worker *w)
{
	int found = 0;
	for (unsigned i = 0; i < w->path_len && !found; i++) {
		struct ma_runqueue *rq = w->path[i];
		ma_spin_lock(&rq->hold.lock);
		found = atomic_load_explicit(&rq->bitmap, memory_order_relaxed) != 0;
		ma_spin_unlock(&rq->hold.lock);
	}
	return found;
}

/* A sleeping worker runs again: BUSY, and what ma_wake_idle_worker counted for it
 * undone. */
static void ma_idle_awake(struct ma_worker *w)
{
	if (atomic_exchange(&w->state, MA_WORKER_BUSY) == MA_WORKER_CALLED)
		ma_path_add(w, offsetof(struct ma_runqueue, nr_spinning), -1);
}

/* Sleeps in the kernel until called (state no longer SLEEPING), kicked, or a timer is
 * due: its own ones, and everybody's if it is the watcher (timer.c), which it then fires
 * here and sleeps again. seq: wake_seq read before the worker said it sleeps. */
static void ma_idle_sleep(struct ma_worker *w, unsigned seq)
{
	int watching = 0;
	while (atomic_load(&w->state) == MA_WORKER_SLEEPING && !atomic_load(&ma_rt.stopping)) {
		/* Only this worker arms timers on its heap, and it is here: its own deadline
		 * cannot move earlier while it sleeps. */
		uint64_t until = atomic_load(&w->timer_next);
		if (watching || (watching = ma_timer_watch_take(w))) {
			uint64_t d = ma_timer_watch_publish();
			if (d < until)
				until = d;
		}
		if (ma_futex_wait_until(&w->wake_seq, seq, until) != ETIMEDOUT) {
			seq = atomic_load(&w->wake_seq);
			continue;
		}
		uint64_t now = ma_now_ns();
		/* Its own timers are fired by the idle loop, on the way to running their
		 * threads. */
		if (atomic_load(&w->timer_next) <= now)
			break;
		if (watching) {
			/* A thread woken here that only this VP may run lands in runnext; one
			 * queued on this worker's path calls it (the state changes). */
			ma_timers_steal(now);
			if (w->runnext)
				break;
		}
	}
	if (watching)
		ma_timer_watch_release(w);
}

/* A disabled worker may have been counted as looking at its queues (spinning, or called
 * by ma_wake_idle_worker) when work came: the enqueuer then woke nobody, and this worker
 * will not take it. Now that it no longer counts, it looks at each queue under its lock,
 * like a worker going to sleep: an enqueue after that sees the counts without it and
 * wakes someone itself; work queued before it is seen here and handed on. */
static void ma_idle_pass_on(struct ma_worker *w)
{
	for (unsigned i = 0; i < w->path_len; i++) {
		struct ma_runqueue *rq = w->path[i];
		ma_spin_lock(&rq->hold.lock);
		int work = atomic_load_explicit(&rq->bitmap, memory_order_relaxed) != 0;
		ma_spin_unlock(&rq->hold.lock);
		if (work)
			ma_wake_idle_worker(rq);
	}
}

static void ma_idle_poll_then_sleep(struct ma_worker *w)
{
	if (ma_unlikely(atomic_load(&w->attn.disabled))) {
		ma_idle_pass_on(w);
		/* Nothing to poll for: wait for marcel_enable_vps (or a timer of its own). */
		unsigned seq = atomic_load(&w->wake_seq);
		atomic_store(&w->state, MA_WORKER_SLEEPING);
		if (atomic_load(&w->attn.disabled) && !atomic_load(&ma_rt.stopping))
			ma_futex_wait_until(&w->wake_seq, seq, atomic_load(&w->timer_next));
		ma_idle_awake(w);
		return;
	}
	atomic_store(&w->state, MA_WORKER_SPINNING);
	ma_path_add(w, offsetof(struct ma_runqueue, nr_spinning), 1);
	uint64_t deadline = ma_now_ns() / 1000 + ma_read_once(&ma_rt.idle_spin_us);
	/* More workers than processors: polling would steal the processor from the worker
	 * that has the work, so give it away at each round. */
	int oversubscribed = ma_read_once(&ma_rt.oversubscribed);
	unsigned rounds = 0, pauses = 1, max_pauses = ma_poll_pauses();
	int found = 0;
	struct ma_seen seen[MA_SEEN_MAX];
	for (unsigned i = 0; i < MA_SEEN_MAX; i++)
		seen[i].since = 0;
	/* Shared queues are polled one round in MA_SHARED_EVERY: their work is left to its
	 * producer for a while anyway, and every poll of a line that producer writes makes
	 * its next locked access to it a transfer between cores. */
	while (!(found = ma_spin_sees_work(w, seen, oversubscribed || rounds % MA_SHARED_EVERY == 0)) &&
	       !atomic_load(&ma_rt.stopping)) {
		if (oversubscribed) {
			sched_yield();
		} else {
			/* From back to back up to MA_POLL_NS apart: a worker that has just run out
			 * of work is the likeliest to get some at once. */
			for (unsigned k = 0; k < pauses; k++)
				ma_cpu_relax();
			if (pauses < max_pauses)
				pauses = pauses * 2 < max_pauses ? pauses * 2 : max_pauses;
		}
		if ((++rounds & 7) == 0) {
			uint64_t now = ma_now_ns();
			/* Sleepers of busy workers too: their owner may not schedule for a while. */
			ma_timers_steal(now);
			if (now / 1000 >= deadline)
				break;
		}
	}
	ma_path_add(w, offsetof(struct ma_runqueue, nr_spinning), -1);
	/* A timer fired by the last polling round may have filled runnext. */
	if (found || w->runnext || atomic_load(&ma_rt.stopping)) {
		atomic_store(&w->state, MA_WORKER_BUSY);
		return;
	}

	unsigned seq = atomic_load(&w->wake_seq);
	atomic_store(&w->state, MA_WORKER_SLEEPING);
	ma_path_add(w, offsetof(struct ma_runqueue, nr_sleeping), 1);
	if (!ma_path_has_work_locked(w))
		ma_idle_sleep(w, seq);
	ma_path_add(w, offsetof(struct ma_runqueue, nr_sleeping), -1);
	ma_idle_awake(w);
}

void ma_idle_wait(struct ma_worker *w)
{
	/* The whole wait, spinning or sleeping, is one idle period on the VP's track. */
	MA_TRACE(MA_TR_IDLE_START, 0, 0, NULL);
	ma_idle_poll_then_sleep(w);
	MA_TRACE(MA_TR_IDLE_STOP, 0, 0, NULL);
}

void ma_worker_kick(struct ma_worker *w)
{
	atomic_fetch_add(&w->wake_seq, 1);
	ma_futex_wake(&w->wake_seq, 1);
}

void ma_rq_vp_range(const struct ma_runqueue *rq, unsigned *lo, unsigned *hi)
{
	*lo = rq->vp >= 0 ? (unsigned)rq->vp : rq->first_vp;
	*hi = rq->vp >= 0 ? *lo + 1 : rq->first_vp + rq->nb_vps;
	if (*hi > ma_rt.nb_vps)
		*hi = ma_rt.nb_vps;
}

/* Whether another VP on the same core is busy (then the core's resources are shared).
 * The core's VPs are those whose path holds its queue: with more VPs than cores they are
 * not consecutive. */
static int ma_sibling_busy(const struct ma_worker *w)
{
	const struct ma_level *core = w->rq.level;
	while (core && !(core->kinds & MA_LEVEL_CORE))
		core = core->parent;
	if (!core)
		return 0;
	const struct ma_runqueue *crq = &ma_rt.rqs[core->id];
	unsigned lo, hi;
	ma_rq_vp_range(crq, &lo, &hi);
	for (unsigned v = lo; v < hi; v++) {
		const struct ma_worker *o = &ma_rt.workers[v];
		if (v != w->vp && ma_path_index(o, crq) >= 0 &&
		    atomic_load_explicit(&o->state, memory_order_relaxed) == MA_WORKER_BUSY)
			return 1;
	}
	return 0;
}

struct ma_worker *ma_wake_choose(const struct ma_runqueue *rq, const struct ma_worker *self)
{
	struct ma_worker *best = NULL;
	unsigned best_score = ~0u, lo, hi;
	ma_rq_vp_range(rq, &lo, &hi);
	/* Among sleeping workers that can see rq: prefer a whole idle core, then the one
	 * nearest to the queue in the tree, then the one nearest to the producer (caches it
	 * shares with the new work). */
	for (unsigned v = lo; v < hi; v++) {
		struct ma_worker *o = &ma_rt.workers[v];
		if (atomic_load_explicit(&o->state, memory_order_relaxed) != MA_WORKER_SLEEPING ||
		    atomic_load_explicit(&o->attn.disabled, memory_order_relaxed))
			continue;
		int index = ma_path_index(o, rq);
		if (index < 0)
			continue;
		unsigned score = (unsigned)ma_sibling_busy(o) * 65536u + (unsigned)index * 256u +
				 (self ? ma_topo_distance(self->rq.level, o->rq.level) : 0);
		if (score < best_score) {
			best_score = score;
			best = o;
		}
	}
	return best;
}

/* Wakes sleeping worker o, claimed (SLEEPING -> CALLED) by the caller. Until it runs
 * again (ma_idle_awake) it counts as spinning on its path: it will look at these queues,
 * so the enqueues meanwhile need not wake anyone -- a futex wake-up takes microseconds to
 * land, and a producer of fine-grained threads would otherwise call here at each one. */
static void ma_call_worker(struct ma_worker *o)
{
	ma_path_add(o, offsetof(struct ma_runqueue, nr_spinning), 1);
	ma_worker_kick(o);
}

void ma_wake_idle_worker(struct ma_runqueue *rq)
{
	struct ma_worker *best = ma_wake_choose(rq, ma_worker_self());
	if (best) {
		int s = MA_WORKER_SLEEPING;
		if (atomic_compare_exchange_strong(&best->state, &s, MA_WORKER_CALLED)) {
			ma_call_worker(best);
			return;
		}
	}
	/* Lost a race (or the best one just woke): take any sleeper left. */
	unsigned lo, hi;
	ma_rq_vp_range(rq, &lo, &hi);
	for (unsigned v = lo; v < hi; v++) {
		struct ma_worker *o = &ma_rt.workers[v];
		int s = MA_WORKER_SLEEPING;
		if (ma_path_index(o, rq) >= 0 && !atomic_load_explicit(&o->attn.disabled, memory_order_relaxed) &&
		    atomic_compare_exchange_strong(&o->state, &s, MA_WORKER_CALLED)) {
			ma_call_worker(o);
			return;
		}
	}
}

int ma_service_thread_create(pthread_t *t, size_t stack_size, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_t a;
	pthread_attr_init(&a);
	if (stack_size)
		pthread_attr_setstacksize(&a, stack_size);
	int e = pthread_create(t, &a, fn, arg);
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return e;
}

struct ma_worker *ma_estimate_begin(void)
{
	struct ma_worker *w = ma_worker_self();
	if (!w)
		ma_spin_lock(&ma_rt.est_lock);
	atomic_fetch_add(w ? &w->est_seq : &ma_rt.est_seq, 1);
	return w;
}

void ma_estimate_end(struct ma_worker *w)
{
	atomic_fetch_add_explicit(w ? &w->est_seq : &ma_rt.est_seq, 1, memory_order_release);
	if (!w)
		ma_spin_unlock(&ma_rt.est_lock);
}

/* Waits until a reader inside an estimate has left it (it may start another: those no
 * longer see what the caller unlinked). */
static __attribute__((noinline)) void ma_estimate_wait(atomic_uint *seq)
{
	unsigned s = atomic_load(seq), rounds = 0;
	while ((s & 1) && atomic_load_explicit(seq, memory_order_acquire) == s)
		ma_spin_backoff(&rounds);
}

void ma_estimates_quiesce(void)
{
	/* Every bubble destroy comes here: the test inline, the wait (rare) out of line. */
	for (unsigned v = 0; v < ma_rt.nb_vps; v++)
		if (ma_unlikely(atomic_load(&ma_rt.workers[v].est_seq) & 1))
			ma_estimate_wait(&ma_rt.workers[v].est_seq);
	if (ma_unlikely(atomic_load(&ma_rt.est_seq) & 1))
		ma_estimate_wait(&ma_rt.est_seq);
}
