/*
 * The core's steps of marcel_init and marcel_end (marcel/startup.c runs them in order):
 * the topology and the polling settings, the run-queue tree, the workers and main's
 * descriptor, the CPU clock's first charge; and what marcel_end waits for before it takes
 * the runtime down (every user thread ended, those never started run first).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ma_sync.h"
#include "ma_hooks.h"
#include "ma_trace.h"
#include "ma_signal.h"

/* How long an idle worker polls before it sleeps (MARCEL_IDLE_SPIN=auto). A sleeping
 * worker costs its waker a futex wake and itself the wake-up of its processor, which a
 * hypervisor may have handed to someone else meanwhile: on the 2-vCPU VM, advection's
 * barrier waits of 0.7-2.5 ms made it 1.8% slower with 50 us of polling than with 2 ms,
 * and 2 ms matched OpenMP, whose libgomp polls about as long by default (bench/RESULTS.md).
 * With more VPs than processors polling takes the processor from a worker with work, so
 * it stays short there (and yields at each round, see worker.c). */
#define MA_IDLE_SPIN_US 2000
#define MA_IDLE_SPIN_SHARED_US 50

struct ma_runtime ma_rt;
unsigned ma_runtime_gen;

static cpu_set_t ma_main_affinity;
static int ma_main_affinity_saved;

static void ma_idle_task_init(struct ma_worker *w)
{
	struct marcel_task *t = &w->idle;
	char name[MARCEL_MAXNAMESIZE];
	snprintf(name, sizeof(name), "idle VP%u", w->vp);
	ma_context_task_init(t, name);
	t->e.sched_holder = &w->rq.hold;
	atomic_init(&t->last_vp, (int)w->vp);
}

/* Frees what ma_runtime_start built; safe on a partially built runtime. */
void ma_runtime_stop(void)
{
	/* First: what follows may take C library locks, whose wrappers (foreign_locks.c)
	 * read the current thread through it. */
	ma_tls_worker = NULL;
	if (ma_rt.workers) {
		ma_stack_pools_free();
		ma_task_pools_free();
		ma_carriers_free();
		for (unsigned v = 0; v < ma_rt.nb_vps; v++)
			free(ma_rt.workers[v].path);
		free(ma_rt.workers);
	}
	ma_rt.workers = NULL;
	free(ma_rt.rqs);
	ma_rt.rqs = NULL;
	if (ma_main_affinity_saved) {
		sched_setaffinity(0, sizeof(ma_main_affinity), &ma_main_affinity);
		ma_main_affinity_saved = 0;
	}
}

static int ma_build_queues(void)
{
	struct ma_topo *topo = &ma_rt.topo;
	ma_rt.rqs = aligned_alloc(64, topo->nb_levels * sizeof(*ma_rt.rqs));
	ma_rt.workers = aligned_alloc(64, ma_rt.nb_vps * sizeof(*ma_rt.workers));
	if (!ma_rt.rqs || !ma_rt.workers)
		return ENOMEM;
	memset(ma_rt.workers, 0, ma_rt.nb_vps * sizeof(*ma_rt.workers));
	for (unsigned i = 0; i < topo->nb_levels; i++) {
		const struct ma_level *l = &topo->levels[i];
		ma_rq_init(&ma_rt.rqs[i], l->name, l, -1, l->parent ? &ma_rt.rqs[l->parent->id] : NULL);
		ma_rt.rqs[i].first_vp = ~0u;
	}
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		struct ma_worker *w = &ma_rt.workers[v];
		const struct ma_level *leaf = topo->vps[v].leaf;
		char name[32];
		snprintf(name, sizeof(name), "VP%u", v);
		w->vp = v;
		ma_rq_init(&w->rq, name, leaf, (int)v, &ma_rt.rqs[leaf->id]);
		w->rq.first_vp = v;
		w->rq.nb_vps = 1;
		w->rq.hold.sole_vp1 = v + 1;
		w->path_len = leaf->depth + 2;
		w->path = malloc(w->path_len * sizeof(*w->path));
		if (!w->path)
			return ENOMEM;
		w->path[0] = &w->rq;
		unsigned k = 1;
		for (const struct ma_level *l = leaf; l; l = l->parent) {
			struct ma_runqueue *rq = &ma_rt.rqs[l->id];
			w->path[k++] = rq;
			/* Range of VPs that look at rq; the wake-up scan checks membership, so
			 * wrapped VP maps (more VPs than cores) stay correct. */
			if (rq->first_vp == ~0u)
				rq->first_vp = v;
			rq->nb_vps = v - rq->first_vp + 1;
		}
		atomic_init(&w->state, MA_WORKER_BUSY);
		atomic_init(&w->timer_next, UINT64_MAX);
		ma_spin_init(&w->timer_lock);
		ma_idle_task_init(w);
	}
	for (unsigned i = 0; i < topo->nb_levels; i++) {
		struct ma_runqueue *rq = &ma_rt.rqs[i];
		if (rq->first_vp == ~0u)
			rq->first_vp = 0;
		else if (rq->nb_vps == 1)
			rq->hold.sole_vp1 = rq->first_vp + 1;
	}
	ma_summary_init();
	return 0;
}

static int ma_setup_main(void)
{
	struct ma_worker *w0 = &ma_rt.workers[0];
	struct marcel_task *m = ma_task_alloc(NULL);
	if (!m)
		return ENOMEM;
	m->is_main = 1;
	atomic_init(&m->master, 1); /* the default master thread (marcel_task_setmaster) */
	atomic_init(&m->e.prio, MA_DEF_PRIO);
	m->e.sched_holder = &ma_rt.rqs[0].hold;
	/* main is nobody's to join or reclaim: marcel_end takes care of it. */
	atomic_init(&m->link, MA_LINK_DETACHED);
	atomic_init(&m->state, MA_TASK_RUNNING);
	atomic_init(&m->on_cpu, 1);
	m->preemptible = 1;
	atomic_init(&m->last_vp, 0);
	strcpy(m->name, "main");
	ma_rt.main_task = m;
	ma_sig_init_main(m);
	ma_seed_note_main_stack();

	atomic_init(&w0->current, m);
	w0->errno_loc = &errno;
	ma_tls_worker = w0;

	if (!ma_rt.topo.fake && !sched_getaffinity(0, sizeof(ma_main_affinity), &ma_main_affinity))
		ma_main_affinity_saved = 1;
	int e = ma_topo_bind_self(&ma_rt.topo, 0);
	if (e)
		fprintf(stderr, "marcel: warning: cannot bind VP0 to PU%u: %s\n", ma_rt.topo.vps[0].pu_os,
			strerror(e));
	return 0;
}

/* How idle workers and waiters poll, given whether other processes share the processors:
 * MARCEL_IDLE_SPIN and MARCEL_SPIN when set, else what the processors allow. Workers read
 * the three fields at each idle period or wait. */
static void ma_polling_set(int shared)
{
	static ma_spinlock_t lock;
	/* Past one VP per unit, VPs wrap around and share processors (vpmap.c). */
	int over = shared || ma_rt.topo.fake || ma_rt.nb_vps > ma_rt.topo.nb_units;
	unsigned idle = ma_rt.opt.idle_spin_us >= 0 ? (unsigned)ma_rt.opt.idle_spin_us
		      : over ? MA_IDLE_SPIN_SHARED_US : MA_IDLE_SPIN_US;
	/* Polling a lock pays only if its holder runs on another processor at the same time. */
	unsigned spin = ma_rt.opt.spin >= 0 ? (unsigned)ma_rt.opt.spin : ma_rt.nb_vps > 1 && !over ? 100 : 0;
	/* Two callers at once leave one's setting, not a mix of both. */
	ma_spin_lock(&lock);
	ma_write_once(&ma_rt.oversubscribed, over);
	ma_write_once(&ma_rt.idle_spin_us, idle);
	ma_write_once(&ma_rt.spin_limit, spin);
	ma_spin_unlock(&lock);
}

int marcel_set_processors_shared(int shared)
{
	if (shared != 0 && shared != 1)
		return EINVAL;
	if (!ma_rt.running)
		return EPERM;
	ma_polling_set(shared);
	return 0;
}

int ma_topology_start(void)
{
	struct ma_topo_options to = {
		.spec = ma_rt.opt.topology,
		.maxarity = ma_rt.opt.maxarity,
		.nvp = ma_rt.opt.nvp,
		.smt = ma_rt.opt.smt,
	};
	char err[512];
	int e = ma_topo_load(&ma_rt.topo, &to, err, sizeof(err));
	if (e) {
		if (ma_rt.opt.topology)
			fprintf(stderr, "marcel: %s='%s': %s\n", ma_rt.opt.topology_src, ma_rt.opt.topology, err);
		else
			fprintf(stderr, "marcel: cannot load this machine's topology: %s\n", err);
		return e;
	}
	ma_rt.nb_vps = ma_rt.topo.nb_vps;
	atomic_init(&ma_rt.timer_watcher, -1);
	atomic_init(&ma_rt.timer_watch, MA_NO_DEADLINE);
	ma_polling_set(0);
	return 0;
}

void ma_topology_stop(void)
{
	ma_topo_free(&ma_rt.topo);
}

int ma_runtime_start(void)
{
	int e = ma_build_queues();
	if (!e)
		e = ma_setup_main();
	if (e) {
		ma_runtime_stop();
		return e;
	}
	/* main runs from here on without a switch: its slice on VP0 starts now. */
	MA_TRACE(MA_TR_THREAD_RUN, ma_rt.main_task->id, 0, ma_rt.main_task->name);
	return 0;
}

int ma_cpu_clock_step_start(void)
{
	int e = ma_cpu_clock_start();
	if (e)
		return e;
	/* main's first run is charged from now. */
	ma_rt.workers[0].run_start = ma_cpu_clock_now();
	return 0;
}

/* User threads created and not ended. Ended counts are read before created ones: a
 * thread ends only after it was created, so the difference never misses a live thread
 * (only live threads and main, which is here, create threads). */
static unsigned long ma_live_threads(void)
{
	unsigned long ended = 0, created = 0;
	for (unsigned v = 0; v < ma_rt.nb_vps; v++)
		ended += atomic_load_explicit(&ma_rt.workers[v].nb_exited, memory_order_acquire);
	created = atomic_load(&ma_rt.foreign_created);
	for (unsigned v = 0; v < ma_rt.nb_vps; v++)
		created += atomic_load_explicit(&ma_rt.workers[v].nb_created, memory_order_acquire);
	return created - ended;
}

/* Threads made with marcel_create_dontsched and never woken would make marcel_end wait
 * forever: run them, and say so. */
static void ma_start_unwoken(struct marcel_task *t, void *arg)
{
	/* A unit private to a VP whose threads still run is theirs to publish; the next pass
	 * sees it public. */
	if (atomic_load(&t->state) == MA_TASK_BORN && ma_hook_task_start(t, 1) == 0)
		++*(unsigned *)arg;
}

static void ma_wake_unwoken(void)
{
	unsigned n = 0;
	ma_threads_walk(ma_start_unwoken, &n);
	if (n)
		fprintf(stderr, "marcel: marcel_end: %u thread(s) were never started (created with "
				"marcel_create_dontsched, or in bubbles never woken); running them now\n", n);
}

void ma_end_notify(void)
{
	atomic_fetch_add(&ma_rt.end_seq, 1);
	ma_fwake(&ma_rt.end_seq, 1);
}

/* How long marcel_end sleeps between two looks when no thread ends: it is woken by each
 * ending, but an ending that raced with the start of the wait (the exit path has no
 * fence, on purpose) is only seen then. */
#define MA_END_RECHECK_NS 50000000u

/* Waits, blocked, until every user thread has ended (but those of marcel_create_posix,
 * unless `all`). Threads never started are started (and said so); if nothing moves for a
 * while, the threads waited for are listed. */
static void ma_end_wait_threads(int all)
{
	atomic_store(&ma_rt.end_waiting, 1);
	uint64_t period = (ma_rt.opt.debug ? 1u : 10u) * 1000000000ull;
	uint64_t since = ma_clock_ns();
	unsigned long last = ~0ul;
	int reported = 0;
	for (;;) {
		unsigned seq = atomic_load(&ma_rt.end_seq);
		/* In this order: see ma_rt.posix_live. */
		unsigned long live = ma_live_threads();
		if (!all)
			live -= (unsigned long)atomic_load(&ma_rt.posix_live);
		if (!live)
			break;
		uint64_t now = ma_clock_ns();
		if (live != last) {
			last = live;
			since = now;
		} else if (!reported && now - since >= period) {
			reported = ma_end_report_stuck((unsigned)(period / 1000000000u), ma_rt.opt.debug);
			since = now;
		}
		if (ma_fwait_u32(&ma_rt.end_seq, seq, now + MA_END_RECHECK_NS) == ETIMEDOUT)
			/* Threads left in bubbles other VPs published since. */
			ma_wake_unwoken();
	}
	atomic_store(&ma_rt.end_waiting, 0);
}

int ma_end_wait(struct ma_worker *w, int all)
{
	ma_private_publish_pending(w);
	ma_wake_unwoken();
	ma_end_wait_threads(all);
	return all || atomic_load(&ma_rt.posix_live) == 0;
}

void ma_main_home(void)
{
	struct marcel_task *m = ma_rt.main_task;
	struct ma_worker *w;
	/* Go back to VP 0: it is the kernel thread that called marcel_init (enabled again
	 * if marcel_disable_vps took it away: it would never run main). */
	marcel_vpset_t vp0 = MARCEL_VPSET_VP(0);
	marcel_enable_vps(&vp0);
	ma_store_release(&m->e.sched_holder, &ma_rt.workers[0].rq.hold);
	while ((w = ma_worker_self()) != &ma_rt.workers[0]) {
		m->post = MA_POST_REQUEUE;
		ma_schedule_blocked(w, m);
	}

	/* And to the kernel thread that called marcel_init, if a blocking section moved it:
	 * that one may be running another VP, so stop the others first. */
	ma_carriers_begin_stop();
	if (!ma_carrier_main_home()) {
		m->post = MA_POST_HANDOFF;
		ma_switch_out(m, ma_carrier_context(ma_carrier_self()));
	}
}
