/*
 * The M:N core's data model: entities and holders, run queues, tasks, workers, and the
 * runtime's global state.
 *
 * An entity is a thread or a bubble; a holder is a run queue or a bubble. Run queues
 * only ever see entities, so bubbles can be queued without changing this layer.
 */
#ifndef MA_SCHED_H
#define MA_SCHED_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <marcel.h>
#include "ma_arch.h"
#include "ma_list.h"
#include "ma_lock.h"
#include "ma_topology.h"

#define MA_HIDDEN __attribute__((visibility("hidden")))
#define ma_likely(x) __builtin_expect(!!(x), 1)
#define ma_unlikely(x) __builtin_expect(!!(x), 0)
#define MA_XSTR(x) #x
#define MA_STR(x) MA_XSTR(x)

/* ---- entities and holders ---- */

enum ma_entity_type { MA_TASK_ENTITY, MA_BUBBLE_ENTITY };
enum ma_holder_type { MA_RUNQUEUE_HOLDER, MA_BUBBLE_HOLDER };

struct ma_holder {
	enum ma_holder_type type;
	ma_spinlock_t lock;
	/* For a run queue that only one worker looks at, that worker's VP + 1; 0 for every
	 * other holder, so that a zeroed one is none. Set at start (init.c), then constant. */
	unsigned sole_vp1;
};

/* A holder that is not a run queue is a unit of the layer above (a closed bubble); this
 * is the part of it the core's fast paths read without calling up. A unit may be private
 * to one worker: only the threads running on that worker touch it, without locks, until
 * it is published (the layer above does that, through the publish hook, before those
 * threads let their processor go); the seeds it holds then wait unstarted, and their
 * joiner takes them (ma_seed_join) with no lock either. */
struct ma_unit {
	struct ma_holder hold;
	/* The worker it is private to, NULL once public. Set when it is made, cleared
	 * (release) by that worker only. */
	struct ma_worker *_Atomic private_w;
	unsigned char private_woken;      /* woken while private (its seeds may be claimed) */
	unsigned nb_born;                 /* members created but not started (a wake-up or
					     their joiner starts them); under hold.lock once
					     public */
};

struct ma_entity {
	enum ma_entity_type type;
	_Atomic int prio;                 /* set by the application at any time */
	struct ma_holder *natural_holder; /* the bubble the application put it in; NULL: none yet */
	struct ma_holder *sched_holder;   /* where it goes when it becomes ready */
	struct ma_holder *ready_holder;   /* where it is queued now; NULL when not queued.
					     Written under that holder's lock. */
	struct ma_list run_node;          /* link in ready_holder's priority list */
	int queued_prio;                  /* the list run_node is in (prio may change meanwhile) */
	_Atomic int sched_level;          /* a marcel_level_kind, 0: the strategy decides */
	/* Membership of natural_holder (bubbles/): under that bubble's lock. */
	struct ma_list member_node;
	unsigned char explicit_member;    /* inserted by the application (not an implicit bubble) */
	_Atomic long long load_hint;      /* MARCEL_STATS_LOAD; < 0: unset */
	_Atomic unsigned long long cpu_ns; /* consumed (threads; bubbles: unused), cpuclock.c */
	int last_level;                   /* item id of the queue it was last taken from, -1 */
};

/* ---- run queues ---- */

/* The path summary (summary.c): a worker's first MA_SUMMARY_LEVELS path positions, one
 * byte each, read as one word; a queue seen by more than MA_SUMMARY_VPS workers is not
 * summarised (its workers scan their paths' bitmaps, as without a summary). */
#define MA_SUMMARY_LEVELS 8
#define MA_SUMMARY_VPS 8

struct ma_runqueue {
	struct ma_holder hold;
	/* Bit p set <=> queue[p] is non-empty. Written under the lock, read without it by
	 * find_next, which then locks the winner and checks again. */
	_Atomic uint64_t bitmap;
	unsigned nr_ready;                /* under the lock */
	/* Entities taken off so far (under the lock): a spinning worker tells new work from
	 * work that has waited by it (worker.c). */
	unsigned long nr_taken;
	/* Idle workers that can see this queue; read by enqueuers under the lock to decide
	 * whether someone must be woken (see worker.c for the protocol). */
	atomic_int nr_spinning;
	atomic_int nr_sleeping;
	/* Bubbles a strategy decided to move here and has not placed yet: counted as load by
	 * the next decisions (strategies/common.c). */
	atomic_int nr_incoming;
	struct ma_runqueue *father;
	const struct ma_level *level;     /* topology item; for a VP's queue, the VP's leaf */
	int vp;                           /* VP number for a VP's own queue, else -1 */
	unsigned first_vp, nb_vps;        /* workers whose find_next looks at this queue */
	char name[32];
	/* The summary bytes of the workers that show it (summary.c). */
	unsigned char nb_summary;
	unsigned char *summary_at[MA_SUMMARY_VPS];
	struct ma_list queue[MA_MAX_PRIO];
} __attribute__((aligned(64)));

static inline struct ma_runqueue *ma_rq_of_holder(struct ma_holder *h)
{
	return ma_container_of(h, struct ma_runqueue, hold);
}

/* ---- tasks ---- */

enum ma_task_state {
	MA_TASK_FREE,      /* descriptor in a pool */
	MA_TASK_BORN,      /* created with marcel_create_dontsched, not woken */
	MA_TASK_READY,     /* queued */
	MA_TASK_RUNNING,
	MA_TASK_BLOCKING,  /* about to block: a wake-up now cancels the block */
	MA_TASK_BLOCKED,
	MA_TASK_DEAD,      /* ended, not yet joined (or being reclaimed) */
	MA_TASK_SUSPENDED, /* parked by marcel_suspend until marcel_resume */
};

/* What the context we switch to does with the one we leave, once its registers are saved. */
enum ma_post {
	MA_POST_NONE,      /* already queued (yield's swap), or a carrier/idle context: just
			      release on_cpu */
	MA_POST_BLOCK,     /* blocked: release on_cpu, then queue it if a wake-up came
			      meanwhile (wake_pending) */
	MA_POST_REQUEUE,   /* yielded: queue it on its sched holder */
	MA_POST_EXIT,      /* ended: recycle its stack, publish its death */
	MA_POST_HANDOFF,   /* main going home to its own kernel thread (carrier.c) */
};

/* Low bits of marcel_task.link; the rest is the joiner's struct ma_waiter pointer. One
 * atomic word lets exit, join and detach agree on who frees the descriptor. */
#define MA_LINK_DETACHED ((uintptr_t)1)
#define MA_LINK_DEAD ((uintptr_t)2)
#define MA_LINK_FLAGS ((uintptr_t)3)

#define MA_TASK_MAGIC 0x4d54534bu /* "MTSK" */
#define MA_ATTR_MAGIC 0x4d415454u /* "MATT": set by marcel_attr_init */

struct ma_waiter;
struct ma_timer;
struct ma_specific;
struct ma_carrier;
struct ma_seed_run;
struct ma_bubble;

/* Aligned on a cache line: descriptors are carved from shared chunks and move between
 * the VPs' pools, and at 464 bytes the end of one shared a line with the head of the next
 * (the entity, which other VPs read), so two VPs running neighbours wrote each other's
 * lines. */
struct marcel_task {
	struct ma_entity e;               /* first: a task is an entity */
	ma_ctx_t ctx;
	/* Set while the task's registers are not yet saved after it left a worker; whoever
	 * picks it waits for this to clear before switching to it. */
	atomic_int on_cpu;
	/* Woken while on_cpu was still set: whoever clears on_cpu queues it (sched.c). */
	atomic_int wake_pending;
	atomic_int state;
	/*
	 * The requests a yield must act on, in one aligned 8-byte word so that the yield
	 * tests them with one load (ma_task_attention): each field keeps its own writers and
	 * protocol. suspend_req is a whole int: marcel_suspend waits on it as a futex word.
	 */
	struct {
		/* A strategy moved it while it ran: its next yield requeues it even if
		 * nothing else is ready, so the move takes effect. */
		atomic_uchar move_req;
		/* A strategy took it away from its bubble's other threads (strategies/
		 * steal.c): at its yields the strategy's stray hook may send it back
		 * (stray_yields counts them). */
		atomic_uchar stray;
		unsigned char pad_[2];
		atomic_int suspend_req;   /* marcel_suspend asked */
	} __attribute__((aligned(8))) req;
	/* Its bubble is being regenerated: the holder of the unit that asked it back (a
	 * gather waits for it), NULL if none. At the next preemption point (or yield) the
	 * thread leaves its worker even if nothing else is ready (ma_yield_preempted). The
	 * request and its unit are one word: whoever takes the request (an exchange to
	 * NULL) has the unit it was for, and a new gather may ask again as soon as it is
	 * taken. */
	struct ma_holder *_Atomic leave_req;
	/* Cancellation (cancel.c): MA_CANCEL_* bits. REQ is set by marcel_cancel from any
	 * thread, the others by the thread itself; all with read-modify-writes. Reset at
	 * creation. */
	atomic_uint cancel;
	/* Set by the thread itself while it waits at a cancellation point
	 * (ma_waiter_wait_point): only then does marcel_cancel wake it. 0 outside. */
	atomic_int at_point;
	/* Signals (signal.c), bit sig - 1. sig_mask is written by the thread only; senders
	 * set sig_pending bits and the thread takes them, both with read-modify-writes;
	 * sig_wait: the signals that wake it from marcel_sigwait or marcel_sigsuspend, 0
	 * outside. Set at creation. */
	_Atomic uint64_t sig_mask, sig_pending, sig_wait;
	enum ma_post post;
	marcel_func_t func;
	any_t arg;
	any_t retval;
	/*
	 * The plain fields a new thread relies on being 0, zeroed as one block when the
	 * descriptor is freed (ma_task_free): a few stores instead of a test per field. Each
	 * is written by the thread itself, by its creator before it starts or under its
	 * bubble's lock, and read by nobody else once the thread has ended and left its
	 * worker (which ma_task_free's callers wait for).
	 */
	char fresh_begin[0];
	/* The innermost cleanup handler (cancel.c), written by the thread only. Left stale
	 * by a function that returned inside a push/pop block. */
	struct marcel_cleanup_buffer *cleanup;
	void *stack_base;                 /* lowest usable byte; NULL until first run */
	struct ma_bubble *children_bubble; /* implicit bubble of the threads it created */
	/* AddressSanitizer fiber bookkeeping (unused in normal builds). */
	void *asan_fake_stack;
	const void *asan_bottom;
	size_t asan_size;
	/* Read-write locks this thread holds for reading (rwlock.c); past MA_RD_HELD, holds
	 * are not tracked and their misuse is not diagnosed. */
	struct { void *lock; unsigned count; } rd_held[4];
	unsigned rd_untracked;
	/* Private bubbles it woke that are still private (bubbles/private.c): published
	 * before it ends, since publishing wakes them into its bubble. */
	unsigned nb_private_woken;
	unsigned stray_yields;            /* its own count of stray yields (see stray below) */
	unsigned char posix;              /* marcel_create_posix: marcel_end does not wait for it */
	/* Taken from a private bubble by its joiner (bubbles/private.c): its sched_holder is
	 * set when that bubble is published. */
	unsigned char private_claimed;
	/* Being handed to an idle VP (bubbles/private.c): the wake-up publishing its bubble
	 * leaves it to the hand-over. Written under that bubble's lock. */
	unsigned char private_handed;
	unsigned char canary;             /* slab stack: check the canary below it (stack.c) */
	unsigned char in_section;         /* in a blocking section (blocking.c) */
	char fresh_end[0];
	size_t stack_size;                /* requested size; the stack is bound at first run */
	uint64_t fpctl;                   /* FP control state inherited from the creator */
	int saved_errno;
	_Atomic uintptr_t link;           /* joiner's waiter | MA_LINK_* */
	unsigned magic;
	unsigned char is_main, is_idle, preemptible, dontsched;
	unsigned char seed;               /* marcel_attr_setseed: its joiner may run it (seed.c) */
	struct ma_seed_run *inline_run;   /* running on its joiner's stack (seed.c), else NULL */
	_Atomic int last_vp;              /* written by the VP that runs it, without a lock */
	char name[MARCEL_MAXNAMESIZE];
	struct ma_specific *specific;     /* thread-specific values; kept with the descriptor */
	atomic_int parked;                /* parked by marcel_suspend (runqueue.c) */
	uint64_t id;                      /* unique for the process's lifetime (trace, snapshot) */
	/* marcel_thread_preemption_disable nesting; written by the thread itself, read by the
	 * preemption handler on the same kernel thread. */
	atomic_int preempt_off;
	/* Locks of the C library (or C++ statics being initialised) it holds: not at a safe
	 * point while not zero. Written by the thread itself (foreign_locks.c). */
	atomic_int foreign_locks;
	/* A seed runs on its stack (seed.c): it waits for that seed as if blocked, and a
	 * gather of its bubble must not wait for it (holder.c, ma_gather_out). */
	atomic_int hosts_seed;
	/* Set (sequentially consistent) by the exit of a thread outside the bubble tree
	 * (bubbles/free.c), before it checks whether the tree is wanted. */
	atomic_uchar tree_exit;
	/* What the asymmetry-aware strategies read in views: a master thread (marcel_task_
	 * setmaster; main's is set at start), and whether it polls a busy primitive now
	 * (ma_spin_notify: runnable to the machine, waiting to the program). Written by
	 * anyone (master) or the thread itself (spinning), read without a lock. */
	atomic_uchar master;
	atomic_uchar spinning;
	/* Load metrics (metrics.c), per enum ma_metric, in events per 1000 instructions, each
	 * stored plus one (0: none, so that a zeroed descriptor has none): the application's
	 * hint (written by anyone), and the counters' measure, which holds only while
	 * metric_of is this thread's id plus one (the sampler may write into a descriptor
	 * being recycled: the id tells). metric_count: the decayed counts the measure comes
	 * from (instructions first), the sampler's alone, under its lock. */
	_Atomic int32_t metric_hint[3];
	_Atomic int32_t metric_rate[3];
	_Atomic uint64_t metric_of;
	uint64_t metric_count[4];
	unsigned char pinned;             /* placed by a VP set: strategies leave it there */
	unsigned char placed;             /* its attributes chose its first queue (VP set or
					     policy): it starts there, not in its bubble */
	unsigned long long rand_state;    /* marcel_random */
	struct marcel_task *pool_next;
	/* ThreadSanitizer fiber of this context (unused in normal builds; ma_sanitizer.h). */
	void *tsan_fiber;
	/* MARCEL_DEBUG's thread-local storage check (tls_check.c), written on the kernel
	 * thread running or just left by the thread: the modules whose `__thread` variables
	 * it left changed (bits), the kernel thread it left them on, the modules already
	 * reported. Meaningful only while tls_owner is the thread's id: a reused descriptor
	 * is not reset, so that creation pays nothing for it. */
	uint64_t tls_owner;
	unsigned long tls_kt;
	uint32_t tls_left, tls_warned;
} __attribute__((aligned(64)));

/* Someone waiting for an event: a marcel task (blocks in the scheduler) or a kernel thread
 * that is not a marcel thread (blocks on the futex word). */
struct ma_waiter {
	struct marcel_task *task;
	atomic_uint done;                 /* set by the waker as its last touch of the waiter */
} __attribute__((aligned(8)));

/* ---- workers ---- */

/* CALLED: woken by ma_wake_idle_worker, which counted it in nr_spinning of its path until
 * it runs again (worker.c); WAKING: woken by anyone else. */
enum ma_worker_state { MA_WORKER_BUSY, MA_WORKER_SPINNING, MA_WORKER_SLEEPING, MA_WORKER_WAKING, MA_WORKER_CALLED };

struct ma_stack;

/* Private bubbles a worker tracks at most; past that, bubbles are public from the start. */
#define MA_PRIVATE_MAX 48

struct ma_worker {
	unsigned vp;
	/* Written by this VP only; the owner reads it relaxed, others with acquire (they read
	 * the thread it points to). */
	struct marcel_task *_Atomic current;
	/*
	 * What a scheduling point must look at beyond picking the next thread: read as one
	 * word on every yield and block (ma_worker_attention), a byte per reason so that each
	 * keeps its own writers. Kept on the first cache line.
	 */
	struct {
		atomic_uchar disabled;    /* marcel_disable_vps (any thread) */
		/* nb_private is not 0 (this worker only, with nb_private: bubbles/private.c) */
		atomic_uchar privates;
		/* timer_next is a deadline (this worker, under timer_lock: timer.c) */
		atomic_uchar timers;
		unsigned char pad_;
	} __attribute__((aligned(4))) attn;
	_Atomic uint64_t timer_next;      /* earliest timer deadline, UINT64_MAX if none */
	/* A thread that only this VP may run, woken, made or yielded here: it runs next,
	 * without a trip through the queue's lock (ma_make_ready, ma_runnext_fits). Written
	 * only by code running on this VP (relaxed stores: others read it for estimates,
	 * ma_worker_nr_ready). */
	struct marcel_task *runnext;
	struct ma_runqueue **path;        /* own queue first, machine last */
	/* The queue of w's path it last took a thread from (written by w only, NULL at
	 * first): a thread still scheduled there when w switches to it is still w's to
	 * run (ma_still_ours), the common case, checked with one comparison. */
	const struct ma_holder *took_from;
	uint64_t run_start;               /* ma_cpu_clock when current started running */
	_Atomic unsigned long nr_switches; /* switches so far (the preemption ticker sees them) */
	_Atomic unsigned long nr_seed_runs; /* seeds run inline so far (the CPU clock sees them) */
	/* Reads of the clock itself while the CPU clock is precise, since precise_since
	 * (cpuclock.c: frequent ones bring the coarse word back at once). */
	uint64_t precise_since;
	unsigned precise_reads;
	uint64_t id_next, id_end;         /* ids this worker hands out (ma_new_id) */
	unsigned far_ties;                /* picks where a farther queue tied (ma_pick_next) */
	/* The thread the idle context took off a queue and is switching to: from the take
	 * to the store of current it is neither queued nor running, and load estimates
	 * (the views' counters, bubbles/view.c) would see one thread fewer meanwhile. */
	struct marcel_task *_Atomic picked; /* written by this VP only */
	/* The hardware-priority level hwprio last applied on this VP (hwprio/runtime.c, from
	 * the VP's own hook; 0 when off), for snapshots. */
	_Atomic int hw_level;
	unsigned path_len;
	atomic_int state;                 /* enum ma_worker_state */
	atomic_uint wake_seq;             /* futex word idle workers sleep on */
	unsigned rr_next;                 /* MARCEL_SCHED_OTHER round robin */
	/* Threads created from / ended on this worker. Written by the worker only; marcel_end
	 * sums them (ended first, then created) to learn when no user thread is left. */
	_Atomic unsigned long nb_created, nb_exited;
	int *errno_loc;                   /* this kernel thread's errno */
	struct marcel_task idle;          /* the worker's scheduling context */
	void *idle_stack;                 /* the scheduling context's own stack: any kernel
					     thread may run it (carrier.c) */
	size_t idle_stack_size;
	unsigned idle_stack_vg;           /* valgrind's id for it */
	/* Per-worker pools: touched only by the worker they belong to. */
	struct ma_stack *stacks;
	unsigned nb_stacks;
	/* Free descriptors (task.c): the list allocations pop, its oldest entry, and a full
	 * spare list with its oldest, so that whole lists move to and from the shared pool
	 * without a walk. */
	struct marcel_task *tasks, *tasks_tail, *spare_tasks, *spare_tail;
	unsigned nb_tasks, nb_spare_tasks;
	/* Timers of threads that slept or waited with a timeout on this worker (timer.c). */
	ma_spinlock_t timer_lock;
	struct ma_timer *timer_root;
	struct ma_carrier *carrier;       /* the kernel thread running this VP now */
	/* Odd while this worker reads other workers' running threads without locks
	 * (ma_estimate_begin); bubble storage is reused only after such reads end. On a line
	 * of its own: every bubble destroy reads every worker's (ma_estimates_quiesce), and
	 * the lines above are written at every create, exit and switch. */
	atomic_uint est_seq __attribute__((aligned(64)));
	/* Byte i: path[i]'s best priority plus one, 0 if it is empty; each byte written
	 * under its queue's lock only, by whichever worker changes that queue (summary.c).
	 * When summary_full (every queue of the path is summarised), find_next and yield read
	 * it as one word instead of the path's bitmaps. A hint, like the bitmaps: the queue's
	 * lock tells. On a line of its own: other workers write it, and the first line is
	 * written by this worker at every switch. */
	unsigned char summary[MA_SUMMARY_LEVELS] __attribute__((aligned(64)));
	unsigned char summary_full;
	/* Private bubbles (bubbles/private.c) of the threads running here, oldest first:
	 * written by this worker only; other workers read nb_private to find work to ask
	 * for, which they do by setting publish_req or publish_all_req. */
	atomic_int publish_req __attribute__((aligned(64))); /* VP number + 1 of an idle VP */
	atomic_int publish_all_req;       /* another VP waits for one of them */
	atomic_int fed;                   /* idle, and handed work it has not reached yet */
	atomic_int hungry;                /* in its idle loop, past the strategy's look for work */
	_Atomic unsigned nb_private;
	struct ma_bubble *privates[MA_PRIVATE_MAX];
	struct ma_runqueue rq;            /* the VP's own queue */
} __attribute__((aligned(64)));

/* ---- global state ---- */

/* cpuclock.c: the coarse clock CPU time is charged with (ns, set every millisecond by a
 * helper thread while switches are frequent; MA_CPU_CLOCK_PRECISE while they are rare:
 * then read ma_clock_ns()). Read it with ma_cpu_clock_now() (ma_sync.h). */
extern _Atomic uint64_t ma_cpu_clock MA_HIDDEN;
#define MA_CPU_CLOCK_PRECISE UINT64_MAX
/* One update per millisecond while switches are frequent: finer than the kernel's tick. */
#define MA_CPU_CLOCK_PERIOD_NS 1000000u
/* Below this many switches per period the clock is read at each one (about 20 ns on a
 * VM: 0.2% of a processor at the threshold). */
#define MA_CPU_CLOCK_FEW 100u
int ma_cpu_clock_start(void) MA_HIDDEN;
/* The clock itself, read by w (the caller's worker) while the word is precise; the
 * MA_CPU_CLOCK_FEW-th read within a period makes the word coarse again at once. */
uint64_t ma_cpu_clock_precise(struct ma_worker *w) MA_HIDDEN;
void ma_cpu_clock_stop(void) MA_HIDDEN;

/* How the option parser checks a name it cannot know (the bubble scheduler's, which the
 * strategies' registry knows): whether it is accepted, and the accepted ones in words
 * for the error message. */
/* Checks of option values that only the layers above the core know (startup.c fills
 * them): each returns NULL if value is accepted, else a sentence saying what is wrong with
 * it and what is accepted. NULL check: any value, checked when the layer starts. */
struct ma_option_checks {
	const char *(*sched)(const char *value);         /* MARCEL_BUBBLE_SCHEDULER */
	const char *(*hwprio)(const char *value);        /* MARCEL_HWPRIO */
	const char *(*hwprio_policy)(const char *value); /* MARCEL_HWPRIO_POLICY */
};

struct ma_options {
	const char *topology;             /* NULL: this machine */
	const char *topology_src;         /* the variable or flag it came from, for errors */
	unsigned nvp;                     /* 0: default */
	int smt;
	unsigned maxarity;
	size_t stack_size;
	long spin;                        /* MARCEL_SPIN; -1: automatic */
	long idle_spin_us;                /* MARCEL_IDLE_SPIN; -1: automatic */
	const char *bubble_sched;         /* MARCEL_BUBBLE_SCHEDULER; NULL: the default */
	const char *hwprio;               /* MARCEL_HWPRIO; NULL: hwprio is off */
	const char *hwprio_policy;        /* MARCEL_HWPRIO_POLICY; NULL: the default */
	const struct ma_option_checks *checks;
	unsigned timeslice_us;            /* MARCEL_TIMESLICE; 0: cooperative */
	int timeslice_given;              /* set by the user: refused where it cannot work */
	const char *trace;                /* MARCEL_TRACE: trace file; NULL: no trace */
	int debug;                        /* MARCEL_DEBUG: say what waits may never end, and
					     which threads leave __thread data behind */
	int metrics;                      /* MARCEL_METRICS: enum ma_metrics_mode (ma_metrics.h) */
	char topology_buf[4096];
	char bubble_sched_buf[64];
	char hwprio_buf[256];
	char hwprio_policy_buf[32];
	char trace_buf[4096];
};

struct ma_runtime {
	int running;
	struct ma_options opt;
	struct ma_topo topo;
	unsigned nb_vps;
	struct ma_worker *workers;
	struct ma_runqueue *rqs;          /* one per topology item, indexed by ma_level.id */
	struct marcel_task *main_task;
	pthread_t main_kthread;
	char *main_stack_lo;              /* lowest byte of main's stack (seed.c), NULL: unknown */
	size_t page_size;
	/* VPs may outnumber the processors running them (a synthetic or XML topology, or
	 * more VPs than cores, or than PUs with MARCEL_SMT): a worker that polls may then
	 * hold the processor of one that has work, so polls are short and give the
	 * processor away. Also set while other processes share the processors
	 * (marcel_set_processors_shared: MPI ranks of a node that are not bound). Written
	 * with the two below by ma_polling_set, read relaxed. */
	int oversubscribed;
	unsigned idle_spin_us;            /* how long an idle worker polls before sleeping */
	unsigned spin_limit;              /* rounds a waiter polls before blocking */
	atomic_ulong foreign_created;     /* threads created by kernel threads that are not workers */
	_Atomic uint64_t next_id;         /* thread and bubble ids */
	atomic_int stopping;
	/* VPs disabled by marcel_disable_vps: while any is, queues check who serves them. */
	atomic_uint nb_disabled;
	/* Workers in their idle wait: while one is, bubbles are woken at once rather than kept
	 * private (bubbles/private.c). */
	atomic_uint nb_idle;
	/* The one idle worker asleep in the kernel that also watches every other worker's
	 * timers (timer.c), -1 if none, and the time it will wake to fire them. */
	atomic_int timer_watcher;
	_Atomic uint64_t timer_watch;
	/* Raised by the layer above (a timer callback cannot take holder locks): its tick
	 * hook is due at the next scheduling point that runs timers. */
	atomic_int hook_work;
	/* marcel_end waits for the last threads: each one ending bumps end_seq and wakes it. */
	atomic_int end_waiting;
	atomic_uint end_seq;
	/* Threads of marcel_create_posix not ended: counted in after nb_created and out
	 * before nb_exited, so that created - exited - posix_live never misses a thread
	 * marcel_end must wait for. */
	atomic_long posix_live;
	/* Started before main by <marcel/pthread.h>'s automatic mode, and whether the
	 * program's own marcel_init has been taken as its start since (init.c). */
	int auto_started, auto_claimed;
	/* ma_estimate_begin for callers that are not workers: one at a time. */
	ma_spinlock_t est_lock;
	atomic_uint est_seq;
	/* Pools shared by everyone: overflow of the per-worker ones, and callers that are not
	 * marcel threads. */
	ma_spinlock_t pool_lock;
	struct ma_stack *stacks;
	unsigned nb_stacks;
	struct marcel_task *tasks;
	unsigned nb_tasks;
	void **task_chunks;               /* every descriptor chunk ever allocated, of MA_TASK_CHUNK */
	unsigned nb_task_chunks, max_task_chunks;
};

extern struct ma_runtime ma_rt MA_HIDDEN;
/* How many runtimes this process started (marcel_init): a bubble's storage can outlive
 * the runtime it was set up in, and its pointers into that runtime with it. */
extern unsigned ma_runtime_gen MA_HIDDEN;
/* The thread in a blocking section on this kernel thread (blocking.c), if any. */
extern __thread struct marcel_task *ma_tls_section_task MA_HIDDEN __attribute__((tls_model("initial-exec")));
extern __thread struct ma_worker *ma_tls_worker MA_HIDDEN __attribute__((tls_model("initial-exec")));

/* Set while the last marcel_init failed and none succeeded since (startup.c), hence only
 * while the runtime is not running: no marcel thread exists then, so a wait without a
 * deadline that would block can only be ended by another kernel thread, and a program
 * that ignored the failure would hang in it. Such waits return EPERM instead. */
extern atomic_int ma_init_failed MA_HIDDEN;
static inline int ma_after_failed_init(void)
{
	return ma_unlikely(atomic_load_explicit(&ma_init_failed, memory_order_relaxed) != 0);
}
/* Returns err, the error of `call` (a public function's name) refused because the runtime
 * is not running. After a failed marcel_init, the first call refused says so on stderr,
 * in one line naming itself and that failure (startup.c). */
int ma_not_running(const char *call, int err) MA_HIDDEN;

/* marcel_end (startup.c); with `all`, waiting for the threads of marcel_create_posix too
 * (main's marcel_exit, as pthread_exit in main). */
void ma_end(int all) MA_HIDDEN;
/* The core's start and stop steps of init.c, run in order by startup.c with the others: each
 * start returns 0 or an errno value with its own part undone; each stop is safe after a
 * failed or partial start. */
int ma_topology_start(void) MA_HIDDEN;
void ma_topology_stop(void) MA_HIDDEN;
int ma_runtime_start(void) MA_HIDDEN;
void ma_runtime_stop(void) MA_HIDDEN;
int ma_cpu_clock_step_start(void) MA_HIDDEN;
/* marcel_end's wait, called by main on worker w: publishes w's private work, starts the
 * threads never started, and waits until every user thread has ended (but those of
 * marcel_create_posix, unless `all`). 1 if the runtime may now be taken down, 0 if POSIX
 * threads are left (the process ends with them, when main returns). */
int ma_end_wait(struct ma_worker *w, int all) MA_HIDDEN;
/* marcel_end, once main is alone: brings main back to VP 0 and to the kernel thread that
 * called marcel_init, and tells the other VPs' kernel threads to stop. */
void ma_main_home(void) MA_HIDDEN;
/* A thread ended while marcel_end waits (init.c). */
void ma_end_notify(void) MA_HIDDEN;
static inline void ma_end_note_exit(void)
{
	if (ma_unlikely(atomic_load_explicit(&ma_rt.end_waiting, memory_order_relaxed)))
		ma_end_notify();
}
/* t, of marcel_create_posix, is ending (before nb_exited counts it). */
static inline void ma_posix_note_exit(const struct marcel_task *t)
{
	if (ma_unlikely(t->posix))
		atomic_fetch_sub(&ma_rt.posix_live, 1);
}

/* worker.c: starts a kernel thread of the runtime's own (preemption ticker, CPU clock,
 * signal helper) with every signal blocked: the application's handlers, the process's
 * signals and the preemption signal belong to the threads that run marcel threads.
 * stack_size 0: the default. Returns pthread_create's result. */
int ma_service_thread_create(pthread_t *t, size_t stack_size, void *(*fn)(void *), void *arg) MA_HIDDEN;

/* The worker running the caller, read afresh (see MA_TLS_READ); NULL outside workers. */
static inline struct ma_worker *ma_worker_self(void)
{
	struct ma_worker *w;
	MA_TLS_READ(ma_tls_worker, w);
	return w;
}

/* The thread running on w, read by code running on w: only w writes it, so a relaxed
 * load (a plain mov) sees the last store. Other VPs read it with acquire. */
static inline struct marcel_task *ma_worker_current(const struct ma_worker *w)
{
	return atomic_load_explicit(&w->current, memory_order_relaxed);
}

/* The application's load hint of e (MARCEL_STATS_LOAD), or none if it set none: read once,
 * since the application may change it meanwhile. */
static inline long long ma_entity_hint_or(const struct ma_entity *e, long long none)
{
	long long h = atomic_load_explicit(&e->load_hint, memory_order_relaxed);
	return h >= 0 ? h : none;
}

static inline struct marcel_task *ma_task_self(void)
{
	struct ma_worker *w = ma_worker_self();
	return w ? ma_worker_current(w) : NULL;
}

/* Position of rq in w's path (0: w's own queue), or -1 if w does not look at rq. The
 * path is w's own queue, then its leaf's queue and the leaf's ancestors' (init.c): a
 * level's queue can only be at one place in it, given by its depth. */
static inline int ma_path_index(const struct ma_worker *w, const struct ma_runqueue *rq)
{
	if (rq == w->path[0])
		return 0;
	if (rq->vp >= 0)
		return -1; /* another VP's own queue */
	unsigned leaf_depth = w->path_len - 2, depth = rq->level->depth;
	if (depth > leaf_depth)
		return -1;
	unsigned i = 1 + leaf_depth - depth;
	return w->path[i] == rq ? (int)i : -1;
}

/* The word of w's reasons to look beyond the next thread (its attn bytes): 0 on the
 * common path. Read by code running on w. */
static inline uint32_t ma_worker_attention(const struct ma_worker *w)
{
	typedef uint32_t __attribute__((may_alias)) word;
	return __atomic_load_n((const word *)&w->attn, __ATOMIC_RELAXED);
}

/* The word of t's requests (its req fields) or'ed with its leave request: 0 on the
 * common path. */
static inline uint64_t ma_task_attention(const struct marcel_task *t)
{
	typedef uint64_t __attribute__((may_alias)) word;
	return __atomic_load_n((const word *)&t->req, __ATOMIC_RELAXED) |
	       (uintptr_t)atomic_load_explicit(&t->leave_req, memory_order_relaxed);
}

/*
 * What every switch must also do while some part of the runtime watches switches: a byte
 * per watcher, each written by that watcher only, read as one word after every switch
 * (ma_after_switch), 0 when nobody watches.
 */
struct ma_switch_watch {
	atomic_uchar tls;                 /* MARCEL_DEBUG's TLS check runs (tls_check.c) */
	atomic_uchar hw;                  /* hwprio's switch hook is set (ma_hooks.h) */
	unsigned char pad_[2];
} __attribute__((aligned(4)));
extern struct ma_switch_watch ma_switch_watch MA_HIDDEN;

static inline uint32_t ma_switch_watched(void)
{
	typedef uint32_t __attribute__((may_alias)) word;
	return __atomic_load_n((const word *)&ma_switch_watch, __ATOMIC_RELAXED);
}

/* w's count of private bubbles (bubbles/private.c), by w itself, and its attn byte. */
static inline void ma_worker_set_nb_private(struct ma_worker *w, unsigned n)
{
	atomic_store_explicit(&w->nb_private, n, memory_order_relaxed);
	atomic_store_explicit(&w->attn.privates, n != 0, memory_order_relaxed);
}

static inline struct marcel_task *ma_task_of_entity(struct ma_entity *e)
{
	return ma_container_of(e, struct marcel_task, e);
}

/* The unit h is (h not a run queue). */
static inline struct ma_unit *ma_unit_of_holder(struct ma_holder *h)
{
	return ma_container_of(h, struct ma_unit, hold);
}

/* Whether h (an entity's natural holder, NULL: none) is a unit private to w. */
static inline int ma_holder_private_to(const struct ma_holder *h, const struct ma_worker *w)
{
	return h && atomic_load_explicit(&ma_container_of(h, const struct ma_unit, hold)->private_w,
					 memory_order_relaxed) == w;
}

/* Whether w was asked to publish its private work (by an idle VP, or all of it): the
 * private fast paths' one check. */
static inline __attribute__((always_inline)) int ma_private_asked(const struct ma_worker *w)
{
	return atomic_load_explicit(&w->publish_req, memory_order_relaxed) ||
	       atomic_load_explicit(&w->publish_all_req, memory_order_relaxed);
}

/* BORN seed t of unit u, private to the caller's VP, is taken by its joiner. */
static inline void ma_unit_take_seed(struct ma_unit *u, struct marcel_task *t)
{
	u->nb_born--;
	t->private_claimed = 1;
}

/* ---- runqueue.c ---- */
void ma_rq_init(struct ma_runqueue *rq, const char *name, const struct ma_level *level, int vp,
		struct ma_runqueue *father) MA_HIDDEN;
/* Queues ready entity e (a thread, or a closed placed bubble) on its sched holder: a run
 * queue (waking an idle worker that can see it if needed), or another holder through
 * its holder.add hook (ma_hooks.h). */
void ma_entity_enqueue(struct ma_entity *e) MA_HIDDEN;
/* Takes ready thread e off the holder it is queued in, as find_next would to run it; 0
 * if it is not queued (on its way to a processor, or running), or if its holder serves
 * nothing now (a closed bubble being gathered). */
int ma_entity_claim_ready(struct ma_entity *e) MA_HIDDEN;
/* Makes thread e, being placed afresh, go to holder h: queued there at once if it was
 * queued, else when it is next ready (a running thread is asked to move: move_req).
 * Bubbles are placed with ma_bubble_place, which traces them as bubbles. */
void ma_entity_move_to_holder(struct ma_entity *e, struct ma_holder *h) MA_HIDDEN;
/* Queues e on rq if rq is still e's sched holder (checked under the lock): 0 if not.
 * While VPs are disabled, a queue only disabled VPs look at sends it to the nearest
 * queue above that an enabled one looks at (ma_rq_served). */
int ma_rq_enqueue(struct ma_runqueue *rq, struct ma_entity *e) MA_HIDDEN;
/* Whether an enabled VP looks at rq. */
int ma_rq_served(const struct ma_runqueue *rq) MA_HIDDEN;
/* Where what is queued on rq runs: rq, or while VPs are disabled, the nearest queue from
 * rq up that an enabled VP looks at. */
static inline const struct ma_runqueue *ma_rq_target(const struct ma_runqueue *rq)
{
	if (ma_unlikely(atomic_load_explicit(&ma_rt.nb_disabled, memory_order_relaxed)))
		while (rq->father && !ma_rq_served(rq))
			rq = rq->father;
	return rq;
}
/* Registers every queue's summary bytes in the workers that show them (summary.c);
 * called once the workers' paths are built. */
void ma_summary_init(void) MA_HIDDEN;
/* Shows rq's bitmap, changed from old to bm, in the summaries of the workers that see it
 * (summary.c), if its best priority changed; under rq's lock. */
static inline void ma_rq_summary_set(struct ma_runqueue *rq, uint64_t old, uint64_t bm)
{
	unsigned char v = bm ? (unsigned char)(__builtin_ctzll(bm) + 1) : 0;
	unsigned n = rq->nb_summary;
	if (v == (old ? __builtin_ctzll(old) + 1 : 0) || !n)
		return;
	/* Most queues are seen by one worker (its own, and every queue with one VP). */
	__atomic_store_n(rq->summary_at[0], v, __ATOMIC_RELAXED);
	for (unsigned k = 1; k < n; k++)
		__atomic_store_n(rq->summary_at[k], v, __ATOMIC_RELAXED);
}

/* Under rq's lock: e queued at the tail of its priority's list (enqueue), or taken off
 * (dequeue). Inline: every creation, wake-up and pick does one. */
static inline void ma_rq_enqueue_locked(struct ma_runqueue *rq, struct ma_entity *e)
{
	/* prio may be changed by marcel_sched_setparam at any time: read it once, and
	 * remember which list the entity went to. */
	int p = atomic_load_explicit(&e->prio, memory_order_relaxed);
	e->queued_prio = p;
	ma_list_add_tail(&rq->queue[p], &e->run_node);
	uint64_t old = atomic_load_explicit(&rq->bitmap, memory_order_relaxed), bm = old | (1ULL << p);
	atomic_store_explicit(&rq->bitmap, bm, memory_order_relaxed);
	ma_rq_summary_set(rq, old, bm);
	ma_write_once(&rq->nr_ready, rq->nr_ready + 1);
	ma_write_once(&e->ready_holder, &rq->hold);
}

static inline void ma_rq_dequeue_locked(struct ma_runqueue *rq, struct ma_entity *e)
{
	ma_list_del(&e->run_node);
	if (ma_list_empty(&rq->queue[e->queued_prio])) {
		uint64_t old = atomic_load_explicit(&rq->bitmap, memory_order_relaxed);
		uint64_t bm = old & ~(1ULL << e->queued_prio);
		atomic_store_explicit(&rq->bitmap, bm, memory_order_relaxed);
		ma_rq_summary_set(rq, old, bm);
	}
	ma_write_once(&rq->nr_ready, rq->nr_ready - 1);
	ma_write_once(&rq->nr_taken, rq->nr_taken + 1);
	ma_write_once(&e->ready_holder, NULL);
}

/* find_next: the most urgent ready task w may run, with priority <= worst_prio, dequeued,
 * looking first in rq (a queue ma_pick_next just chose) if not NULL; NULL if none. */
struct marcel_task *ma_find_next_in(struct ma_worker *w, int worst_prio, struct ma_runqueue *rq) MA_HIDDEN;
static inline struct marcel_task *ma_find_next(struct ma_worker *w, int worst_prio)
{
	return ma_find_next_in(w, worst_prio, NULL);
}
/* For a task just taken to run: if marcel_suspend asked, parks it and returns 1. The
 * test is inline: it is all a switch pays when no suspension was asked. */
int ma_park_suspended(struct marcel_task *t) MA_HIDDEN;
static inline int ma_park_if_suspended(struct marcel_task *t)
{
	return ma_unlikely(atomic_load_explicit(&t->req.suspend_req, memory_order_relaxed) != 0) && ma_park_suspended(t);
}

/* The queue holding the best candidate with priority <= worst_prio on w's path, or NULL;
 * *far: the farthest other queue whose best candidate is as urgent, or NULL. Lock-free:
 * a hint that the caller checks under the queue's lock. */
static inline struct ma_runqueue *ma_scan_path(const struct ma_worker *w, int worst_prio, int *prio,
					       struct ma_runqueue **far)
{
	struct ma_runqueue *best = NULL, *tie = NULL, *const *path = w->path;
	int best_prio = worst_prio + 1;
	if (ma_likely(w->summary_full)) {
		typedef uint64_t __attribute__((may_alias)) word;
		uint64_t s = __atomic_load_n((const word *)w->summary, __ATOMIC_RELAXED);
		/* Byte i at bits 8i..8i+7, whatever the byte order (a constant test). */
		if (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
			s = __builtin_bswap64(s);
		*far = NULL;
		*prio = best_prio;
		if (!s)
			return NULL;
		unsigned i = (unsigned)__builtin_ctzll(s) >> 3;
		uint64_t from_i = s >> (8 * i);
		if (ma_likely(!(from_i >> 8))) {
			/* One queue of the path holds work: the common case. */
			int p = (int)(from_i & 0xff) - 1;
			if (p > worst_prio)
				return NULL;
			*prio = p;
			return path[i];
		}
		/* Nearest first, strict '<': equal priorities prefer the closest queue. */
		for (; i < MA_SUMMARY_LEVELS; i++) {
			int p = (int)((s >> (8 * i)) & 0xff) - 1;
			if (p < 0)
				continue;
			if (p < best_prio) {
				best_prio = p;
				best = path[i];
				tie = NULL;
			} else if (p == best_prio && best) {
				tie = path[i];
			}
		}
	} else {
		unsigned n = w->path_len;
		for (unsigned i = 0; i < n; i++) {
			struct ma_runqueue *rq = path[i];
			uint64_t bm = atomic_load_explicit(&rq->bitmap, memory_order_relaxed);
			if (bm) {
				int p = __builtin_ctzll(bm);
				if (p < best_prio) {
					best_prio = p;
					best = rq;
					tie = NULL;
				} else if (p == best_prio && best) {
					tie = rq;
				}
			}
		}
	}
	*far = tie;
	*prio = best_prio;
	return best;
}

/* Lock-free peek: the queue holding the best candidate with priority <= worst_prio,
 * or NULL. Inline: it is most of find_next and of yield. */
static inline struct ma_runqueue *ma_peek_next(const struct ma_worker *w, int worst_prio, int *prio)
{
	struct ma_runqueue *far;
	return ma_scan_path(w, worst_prio, prio, &far);
}

/* Every how many picks a farther queue that ties with the nearest one wins. */
#define MA_FAR_EVERY 8

/* ma_peek_next for worker w choosing what to run next (only w calls it). Equal
 * priorities prefer the nearest queue, except every MA_FAR_EVERY-th time a farther one
 * ties, when the farthest of those wins: threads yielding on a VP's (or a node's) queue
 * would otherwise starve, for ever, a thread of the same priority waiting on a queue it
 * shares with other VPs (a thread woken on the machine's queue while every VP's nearer
 * queues hold busy threads). */
static inline struct ma_runqueue *ma_pick_next(struct ma_worker *w, int worst_prio, int *prio)
{
	struct ma_runqueue *far, *best = ma_scan_path(w, worst_prio, prio, &far);
	if (ma_unlikely(far != NULL) && ++w->far_ties >= MA_FAR_EVERY) {
		w->far_ties = 0;
		best = far;
	}
	return best;
}

/* Whether holder h is a run queue that only worker w looks at. */
static inline int ma_holder_only_for(const struct ma_holder *h, const struct ma_worker *w)
{
	return h->sole_vp1 == w->vp + 1;
}

/* Whether a thread of priority prio, ready for holder h, may wait in w's runnext slot
 * instead (only w calls them, and only w fills its slot). The slot is then the queue's
 * tail, in the order threads would have been taken:
 * - h is a queue that is w's alone, so no other worker would have taken the thread
 *   from it;
 * - nothing is queued on w's path at prio or better, so nothing would have run before it;
 * - no worker is idle: a thread in the slot is invisible to other VPs and to the
 *   strategies, and one looking for work must see it (a worker going idle after this
 *   check sees it at w's next switch, which queues it or runs it).
 * ma_runnext_may is all but the second condition. A yield's thread and a new thread wait
 * there: a ping-pong of two threads of one VP then takes no queue lock. Woken threads go
 * there on other terms (ma_make_ready). */
static inline int ma_runnext_may(const struct ma_worker *w, const struct ma_holder *h)
{
	return !w->runnext && ma_holder_only_for(h, w) &&
	       !atomic_load_explicit(&w->attn.disabled, memory_order_relaxed) &&
	       !atomic_load_explicit(&ma_rt.nb_idle, memory_order_relaxed);
}

static inline int ma_runnext_fits(const struct ma_worker *w, const struct ma_holder *h, int prio)
{
	int qprio;
	return ma_runnext_may(w, h) && !ma_peek_next(w, prio, &qprio);
}

/* Takes t out of w's runnext slot if it is there (only w calls it): t is then the
 * caller's to run, as a thread claimed from a queue (ma_entity_claim_ready). */
static inline int ma_runnext_claim(struct ma_worker *w, const struct marcel_task *t)
{
	if (w->runnext != t)
		return 0;
	ma_write_once(&w->runnext, NULL);
	return 1;
}

/* Threads waiting for worker o alone: those on its own queue and the one in its runnext
 * slot. Read without a lock by anyone: an estimate. */
static inline unsigned ma_worker_nr_ready(const struct ma_worker *o)
{
	return ma_read_once(&o->rq.nr_ready) + (ma_read_once(&o->runnext) != NULL);
}

/* A new thread that the layer above has just made READY, its holder set, on its
 * creator's worker w (NULL for a kernel thread): into w's runnext slot if it fits there,
 * else queued. A create+join on one VP then takes no queue lock. */
static inline void ma_task_ready_new(struct ma_worker *w, struct marcel_task *t)
{
	if (w && ma_runnext_fits(w, ma_read_once(&t->e.sched_holder),
				 atomic_load_explicit(&t->e.prio, memory_order_relaxed))) {
		ma_write_once(&w->runnext, t);
		return;
	}
	ma_entity_enqueue(&t->e);
}

/* ---- sched.c ---- */
/* Called by the preemption trampoline in the interrupted thread's own context: requeues
 * the thread (forcibly if leave_req is set), as marcel_yield. */
void ma_yield_preempted(void) MA_HIDDEN;
void ma_switch_to(struct ma_worker *w, struct marcel_task *prev, struct marcel_task *next) MA_HIDDEN;
void ma_schedule_blocked(struct ma_worker *w, struct marcel_task *prev) MA_HIDDEN;
void ma_task_entry(void *prev, void *task) MA_HIDDEN;
void ma_wake_task(struct marcel_task *t) MA_HIDDEN;
/* Arms a waiter for the calling thread. The caller must then publish it with an atomic
 * read-modify-write (CAS, exchange, fetch_or: a full barrier), and its waker must find it
 * through that same variable; that is what orders the arming without a fence. */
static inline void ma_waiter_init(struct ma_waiter *wt)
{
	wt->task = ma_task_self();
	atomic_init(&wt->done, 0);
	if (wt->task)
		atomic_store_explicit(&wt->task->state, MA_TASK_BLOCKING, memory_order_relaxed);
}
/* Blocks until ma_waiter_wake has been called on wt (at once if it already was). A waiter
 * is one-shot: initialise it again for the next wait. */
void ma_waiter_wait(struct ma_waiter *wt) MA_HIDDEN;

/* ---- cancel.c ---- */
#define MA_CANCEL_REQ 1u       /* marcel_cancel asked */
#define MA_CANCEL_DISABLED 2u  /* MARCEL_CANCEL_DISABLE: requests wait */
#define MA_CANCEL_ASYNC 4u     /* MARCEL_CANCEL_ASYNCHRONOUS (acted on as deferred) */
#define MA_CANCEL_ENDING 8u    /* running its cleanup handlers or key destructors at its end */
/* Whether t, the caller, must act on a cancellation request now. Sequentially
 * consistent: ma_waiter_wait_point's check after publishing BLOCKED pairs with
 * marcel_cancel's read of the state after setting REQ. */
static inline int ma_cancel_due(struct marcel_task *t)
{
	return (atomic_load(&t->cancel) & (MA_CANCEL_REQ | MA_CANCEL_DISABLED | MA_CANCEL_ENDING)) == MA_CANCEL_REQ;
}
/* Acts on the caller's request: cleanup handlers, key destructors, end with result
 * MARCEL_CANCELED. The caller has undone every registration of its wait. */
_Noreturn void ma_cancel_act(struct marcel_task *self) MA_HIDDEN;
/* A cancellation point's entry check: self (the caller, or NULL if it is not a marcel
 * thread on a VP) ends here if a request is due. */
static inline void ma_cancel_point(struct marcel_task *self)
{
	if (ma_unlikely(self != NULL && ma_cancel_due(self)))
		ma_cancel_act(self);
}
/* ma_waiter_wait at a cancellation point: returns 0 once woken, or ECANCELED (wt not
 * woken, the caller RUNNING) if a cancellation request became due first. The caller
 * then takes its waiter out of wherever it published it, or, if a waker got there
 * first, waits for that wake-up with ma_waiter_wait and completes normally. */
int ma_waiter_wait_point(struct ma_waiter *wt) MA_HIDDEN;
/* Runs the caller's cleanup handlers, innermost first (marcel_exit). */
void ma_cleanup_run(struct marcel_task *self) MA_HIDDEN;
void ma_waiter_wake(struct ma_waiter *wt) MA_HIDDEN;
/* Wakes wt on behalf of a task about to leave worker w: if the waiter is a blocked task
 * that w may run, claims it and returns it for a direct switch instead of queuing it. */
struct marcel_task *ma_waiter_wake_handoff(struct ma_worker *w, struct ma_waiter *wt) MA_HIDDEN;
void ma_idle_loop(void *prev, void *worker) MA_HIDDEN;
/* What every thread does when it ends, as itself (marcel_exit, an inline seed's end): key
 * destructors, leaving its bubble, the trace; then it is DEAD. */
void ma_task_finish(struct marcel_task *t, any_t retval) MA_HIDDEN;
/* Whether w may still run t, which it took off a queue or a cache and has not switched to
 * yet: a strategy may have moved it meanwhile. */
int ma_task_still_ours(const struct ma_worker *w, const struct marcel_task *t) MA_HIDDEN;

/* ---- estimates (worker.c) ----
 * Strategies estimate loads by reading, without locks, which thread each worker runs and
 * where that thread's bubble is scheduled. A thread read that way may just have ended and
 * its bubble have been destroyed: its storage may not be reused (nor freed) while such a
 * read is under way. Readers bracket it with ma_estimate_begin/end; destroying or freeing
 * a bubble first waits with ma_estimates_quiesce for the reads in progress. */
struct ma_worker *ma_estimate_begin(void) MA_HIDDEN;
void ma_estimate_end(struct ma_worker *w) MA_HIDDEN;
void ma_estimates_quiesce(void) MA_HIDDEN;

/* ---- seed.c ---- */
/* marcel_join's fast path for seed t: if it has not started yet, takes it off its queue
 * and runs it on the calling thread's stack, to its end. wt is the caller's waiter,
 * already published in t's link. 1 if t ran (it is dead, wt need not be waited for), 0
 * if the caller must wait for it as for any thread. */
int ma_seed_join(struct marcel_task *t, struct ma_waiter *wt) MA_HIDDEN;
/* marcel_exit in a seed running on its joiner's stack: back to ma_seed_join. */
_Noreturn void ma_seed_exit(struct marcel_task *t, any_t retval) MA_HIDDEN;
/* Records the main thread's stack bounds (marcel_init). */
void ma_seed_note_main_stack(void) MA_HIDDEN;

/* Leaves the current kernel thread's VP: saves self and switches to `to`, a carrier's own
 * context (blocking sections, marcel_end). Returns once a worker runs self again. */
void ma_switch_out(struct marcel_task *self, struct marcel_task *to) MA_HIDDEN;
/* From a carrier's own context `self`: runs `next` (a VP's idle context or a task) and
 * returns the context that later switches back to the carrier, now saved. */
struct marcel_task *ma_carrier_switch(struct marcel_task *self, struct marcel_task *next) MA_HIDDEN;

/* ---- carrier.c ---- */
/* Starts the kernel threads of VPs 1.. and gives every VP's idle context a stack. */
int ma_carriers_start(void) MA_HIDDEN;
/* Tells every VP but 0 and every spare carrier to stop (main's carrier excepted). */
void ma_carriers_begin_stop(void) MA_HIDDEN;
/* Stops every carrier but the main thread's and joins them. */
void ma_carriers_stop(void) MA_HIDDEN;
void ma_carriers_free(void) MA_HIDDEN;
/* Hands VP w to a spare carrier (created if none): EAGAIN if none could be made. */
int ma_carrier_give_vp(struct ma_worker *w) MA_HIDDEN;
struct ma_carrier *ma_carrier_self(void) MA_HIDDEN;
struct marcel_task *ma_carrier_context(struct ma_carrier *c) MA_HIDDEN;
/* Whether the caller runs on the process's main kernel thread. */
int ma_carrier_main_home(void) MA_HIDDEN;

/* ---- worker.c ---- */
void ma_worker_kick(struct ma_worker *w) MA_HIDDEN;
void ma_wake_idle_worker(struct ma_runqueue *rq) MA_HIDDEN;
/* VPs [*lo, *hi) may see rq (ma_path_index tells which really do). */
void ma_rq_vp_range(const struct ma_runqueue *rq, unsigned *lo, unsigned *hi) MA_HIDDEN;
/* The sleeping worker ma_wake_idle_worker would wake for work on rq produced by self
 * (NULL: not a worker), or NULL if none can see rq. Reads states without claiming. */
struct ma_worker *ma_wake_choose(const struct ma_runqueue *rq, const struct ma_worker *self) MA_HIDDEN;
void ma_idle_wait(struct ma_worker *w) MA_HIDDEN;

/* ---- thread.c ---- */
/* A new thread or bubble id (unique for the process's lifetime); w: the caller's worker,
 * NULL if none. */
uint64_t ma_new_id_slow(struct ma_worker *w) MA_HIDDEN;
static inline uint64_t ma_new_id(struct ma_worker *w)
{
	if (ma_likely(w && w->id_next != w->id_end))
		return w->id_next++;
	return ma_new_id_slow(w);
}
/* The queue of the smallest item covering every VP of set, or NULL if it names no VP. */
struct ma_runqueue *ma_rq_for_set(const marcel_vpset_t *set) MA_HIDDEN;

/* ---- stack.c ---- */
/* Whether a slab stack's thread stayed within its stack (stack.c). */
int ma_stack_canary_ok(const struct marcel_task *t) MA_HIDDEN;
void ma_stack_canary_failed(struct marcel_task *t) MA_HIDDEN __attribute__((noreturn));
int ma_stack_bind(struct ma_worker *w, struct marcel_task *t) MA_HIDDEN;
void ma_stack_release(struct ma_worker *w, struct marcel_task *t) MA_HIDDEN;
void ma_stack_pools_free(void) MA_HIDDEN;
/* Signal stacks are per kernel thread; main_thread: the application's own, whose
 * previous signal stack is restored at teardown. */
int ma_altstack_setup(void **slot, int main_thread) MA_HIDDEN;
void ma_altstack_teardown(void **slot, int main_thread) MA_HIDDEN;
int ma_overflow_handler_install(void) MA_HIDDEN;
void ma_overflow_handler_remove(void) MA_HIDDEN;
void *ma_stack_map(size_t size, size_t *mapped) MA_HIDDEN;
void ma_stack_unmap(void *base, size_t size) MA_HIDDEN;

/* ---- task.c ---- */
/* Descriptors per chunk: chunks are never freed while the runtime runs, so walking them
 * (ma_threads_walk) finds every descriptor. */
#define MA_TASK_CHUNK 64
#define MA_TASK_CHUNK_BYTES (MA_TASK_CHUNK * sizeof(struct marcel_task))
struct marcel_task *ma_task_alloc_slow(struct ma_worker *w) MA_HIDDEN;
/* A descriptor from w's list (w: the caller's worker, NULL if none), NULL if memory ran
 * out. Inline: every creation takes one. */
static inline struct marcel_task *ma_task_alloc(struct ma_worker *w)
{
	struct marcel_task *t;
	if (ma_likely(w && w->tasks)) {
		t = w->tasks;
		w->tasks = t->pool_next;
		w->nb_tasks--;
	} else {
		t = ma_task_alloc_slow(w);
		if (!t)
			return NULL;
	}
	t->pool_next = NULL;
	return t;
}
void ma_task_free(struct ma_worker *w, struct marcel_task *t) MA_HIDDEN;
void ma_task_pools_free(void) MA_HIDDEN;
/* Whether t is a live thread's descriptor. Inline: every call naming a thread asks. None
 * is while the runtime is not running (running stays set until marcel_end has stopped
 * everything): a handle then is stale or was never written (a Marcel program going on
 * after a failed marcel_init), and is not read. */
static inline int ma_task_valid(const struct marcel_task *t)
{
	return ma_rt.running && t && t->magic == MA_TASK_MAGIC &&
	       atomic_load_explicit(&t->state, memory_order_acquire) != MA_TASK_FREE;
}
/* A scheduling context (a VP's idle loop, a carrier's own context): a task that is never
 * queued and needs no stack binding. */
void ma_context_task_init(struct marcel_task *t, const char *name) MA_HIDDEN;

/* ---- report.c ---- */
/* One line on t for people: state, and (describe hook) its unit and why it has not
 * started. */
void ma_print_thread(FILE *out, struct marcel_task *t) MA_HIDDEN;
/* marcel_end's report of the threads it has waited for `seconds` (only if none runs or
 * is ready, unless `always`): 1 if it printed. */
int ma_end_report_stuck(unsigned seconds, int always) MA_HIDDEN;

/* ---- threadslist.c ---- */
/* fn on every live descriptor (idle contexts excepted); returns how many. fn runs under
 * the descriptor pool's lock, so it must not create or free a thread. */
unsigned ma_threads_walk(void (*fn)(struct marcel_task *t, void *arg), void *arg) MA_HIDDEN;

/* ---- keys.c ---- */
/* Runs t's key destructors (t is exiting) and clears its values. */
void ma_keys_exit(struct marcel_task *t) MA_HIDDEN;
void ma_keys_free(struct marcel_task *t) MA_HIDDEN;

/* ---- attr.c ---- */
/* Copies a MARCEL_MAXNAMESIZE name into buf (n bytes): 0, or ERANGE if it does not fit. */
int ma_copy_name(char *buf, size_t n, const char *name) MA_HIDDEN;

/* ---- options.c ---- */
/* Parses the MARCEL_* variables, then argv's --marcel-* arguments (taken out of argv).
 * checks are the upper layers' checks of their options (startup.c gives them). */
int ma_options_parse(struct ma_options *o, int *argc, char **argv, const struct ma_option_checks *checks) MA_HIDDEN;

#endif
