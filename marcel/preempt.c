/*
 * Preemption: time slicing (MARCEL_TIMESLICE) and requests (bubble regeneration).
 *
 * Ticks. One ticker kernel thread, with every signal blocked and free to run on any
 * processor, wakes once per time slice and looks at each VP (ma_preempt_tick). A VP
 * whose thread has run for a slice (its start: the switch that brought it, known
 * exactly when it was a preemption, else the first tick that saw it), whose kernel
 * thread used CPU time since the previous tick, and that has something to give way to
 * (a thread as urgent ready for it, or a due timer), is sent MA_PREEMPT_SIG with tgkill,
 * aimed at the kernel thread that carries it now (w->carrier: VPs move between kernel
 * threads with blocking sections). Everything else costs the ticker two loads and a read
 * of the kernel thread's CPU clock, and costs the VP nothing: a program that yields or
 * blocks often, or runs one thread per VP, pays only the ticker's wake-ups.
 * Why a ticker: a POSIX timer aims at one kernel thread, while the VP it should
 * interrupt may have moved to another since it was armed; timers on a thread's CPU
 * clock follow the kernel thread but only fire at the kernel's tick (4 ms with HZ=250).
 * Why the CPU clock: a thread blocked in a system call outside a blocking section uses
 * none, and signalling it at every tick would make calls that never restart after a
 * handler (poll, select, nanosleep, sleep) fail with EINTR again and again.
 *
 * Safe points. The handler runs on the interrupted kernel thread (on its signal stack)
 * and never switches. It acts only if the VP's target is still the thread running there
 * and that thread is at a safe point (ma_preempt_unsafe): a user thread (not a scheduling
 * context), preemptible, preemption not disabled, running, not in a blocking section, on
 * an enabled VP of a runtime that is not stopping; its pc outside libc, the dynamic
 * loader, libmarcel, libgcc_s, the vDSO and any sanitizer runtime (whose locks, or our
 * own scheduler state, it might hold); not in a signal handler of the application (on
 * the signal stack, or with signals blocked that the kernel thread does not block
 * normally); and with room on its stack. Then it rewrites the signal's ucontext so that
 * the thread, on return from the handler, enters ma_preempt_trampoline (preempt.S),
 * which saves every register and the whole FP/vector state on the thread's own stack,
 * calls ma_preempt_yield in an ordinary context, where switching is fine, and returns to
 * the interrupted instruction. Otherwise the target stays pending and the next tick
 * tries again. A thread with preemption disabled is not signalled at all: it yields in
 * marcel_thread_preemption_enable if a preemption is pending for it.
 *
 * The pc rule only sees the innermost frame, so the locks of the C library a thread
 * holds (pthread mutexes, spin and read-write locks, stdio locks, a pthread_once or C++
 * static initialiser running) are counted apart (foreign_locks.c) and make the point
 * unsafe too. Other locks marcel does not know (a library's own futex locks), and code
 * that libc calls back while holding one of its own, must disable preemption (see
 * marcel_thread_preemption_disable).
 *
 * Sanitizers: AddressSanitizer and UBSan leave signal delivery alone, and the tests run
 * there. ThreadSanitizer runs handlers late, on a copy of the context, so nothing can be
 * redirected: a time slice is refused, and requests do nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include "ma_preempt.h"
#include "ma_sync.h"
#include "ma_sanitizer.h"
#include "ma_preempt_arch.h"

/* Stack that ma_preempt_yield and what it runs before the switch and after resuming
 * (finishing the previous thread's switch, waking a worker) may take on the preempted
 * thread's stack, beyond the trampoline's frame. */
#ifdef MA_ASAN
#define MA_PREEMPT_C_RESERVE (12 * 1024)
#else
#define MA_PREEMPT_C_RESERVE (4 * 1024)
#endif
/* Retry period of requests whose target is not at a safe point. */
#define MA_PREEMPT_RETRY_NS 200000u
#define MA_PREEMPT_MAX_RANGES 32

/* The signal number, read by the aarch64 trampoline. */
int ma_preempt_signo MA_HIDDEN;

/* Per VP. Static rather than allocated with the workers: a signal sent just before
 * marcel_end may be handled after it. */
struct ma_preempt_vp {
	/* The thread to switch out at its next safe point; NULL: none. */
	_Atomic(struct marcel_task *) target;
	/* The target comes from ma_preempt_request: retried even without ticks. */
	atomic_int requested;
	/* When a thread of this VP last entered ma_preempt_yield: the next thread's slice
	 * began then, not at the tick that first sees it. */
	_Atomic uint64_t preempted_at;
	/* Ticker's own. */
	struct marcel_task *seen;         /* current thread at the previous tick */
	unsigned long seen_switches;      /* and w->nr_switches (A, B, then A again differ) */
	uint64_t slice_start;             /* when seen began running, as far as we know */
	pid_t cpu_tid;                    /* kernel thread of the last CPU-time sample */
	uint64_t cpu_prev;                /* its CPU time at the previous tick */
	pid_t rq_tid;                     /* the same, for request retries */
	uint64_t rq_cpu;
} __attribute__((aligned(64)));

static struct ma_preempt_vp ma_pvp[MARCEL_NBMAXVPS];

/* Kernel threads carrying VPs, to aim signals (under ma_kt_lock). */
struct ma_preempt_kt {
	const struct ma_carrier *carrier;
	pid_t tid;
	struct ma_preempt_kt *next;
};

struct ma_range {
	uintptr_t lo, hi;
};

static struct {
	/* Process-wide, set once (ma_preempt_setup). */
	pthread_once_t once;
	const char *why_not;              /* NULL: preemption can work here */
	int why_errno;                    /* what marcel_init returns for a time slice then */
	int installed;                    /* our handler owns the signal */
	pid_t tgid;
	size_t stack_need;                /* below the interrupted sp, trampoline and C */
	struct ma_range unsafe[MA_PREEMPT_MAX_RANGES];
	unsigned nb_unsafe;

	/* Per runtime. */
	atomic_int live;                  /* between start and stop: the handler acts */
	uint64_t period_ns;               /* time slice; 0: cooperative */
	pthread_mutex_t lock;             /* starting and stopping the ticker */
	atomic_int ticker_started;
	pthread_t ticker;
	atomic_uint ticker_seq;           /* futex word: bumped to wake the ticker */
	atomic_int ticker_stop;
	atomic_int requests;              /* a request may be pending: the ticker retries */
	int main_was_blocked;             /* the application's main thread blocked the signal */
	struct ma_preempt_kt main_kt;

	ma_spinlock_t kt_lock;
	struct ma_preempt_kt *kts;
} ma_pt = { .once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER };

/* The signal mask a kernel thread carrying VPs normally has, to recognise user code
 * running inside a signal handler of the application (the handler's mask is added). */
static __thread uint64_t ma_tls_base_mask __attribute__((tls_model("initial-exec")));
static __thread int ma_tls_base_mask_set __attribute__((tls_model("initial-exec")));

static uint64_t ma_mask_bits(const sigset_t *s)
{
	/* The kernel's mask is one 64-bit word, the first of glibc's sigset_t (only that
	 * word of a ucontext's uc_sigmask is written by the kernel). */
	uint64_t b;
	memcpy(&b, s, sizeof(b));
	return b;
}

/* ---- process-wide setup ---- */

static int ma_name_is(const char *path, const char *prefix)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return !strncmp(base, prefix, strlen(prefix));
}

struct ma_phdr_scan {
	uintptr_t self, ldso, vdso;
	int self_is_program, libc_found, index;
};

static void ma_add_exec_segments(struct dl_phdr_info *info)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || ma_pt.nb_unsafe == MA_PREEMPT_MAX_RANGES)
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		ma_pt.unsafe[ma_pt.nb_unsafe++] = (struct ma_range){ lo, lo + ph->p_memsz };
	}
}

static int ma_phdr_contains(struct dl_phdr_info *info, uintptr_t addr)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && addr >= lo && addr < lo + ph->p_memsz)
			return 1;
	}
	return 0;
}

static int ma_phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct ma_phdr_scan *s = arg;
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	int first = s->index++ == 0;
	int unsafe = 0;
	if (ma_phdr_contains(info, s->self)) {
		/* The program itself: libmarcel was linked statically, and its code cannot be
		 * told apart from the program's. */
		s->self_is_program = first;
		unsafe = 1;
	} else if ((info->dlpi_addr && (info->dlpi_addr == s->ldso || info->dlpi_addr == s->vdso)) ||
		   ma_name_is(name, "linux-vdso") || ma_name_is(name, "linux-gate")) {
		unsafe = 1;
	} else if (ma_name_is(name, "libc.so") || ma_name_is(name, "libc-")) {
		s->libc_found = 1;
		unsafe = 1;
	} else if (ma_name_is(name, "ld-linux") || ma_name_is(name, "ld64.so") ||
		   ma_name_is(name, "libpthread") || ma_name_is(name, "libgcc_s") ||
		   ma_name_is(name, "libasan") || ma_name_is(name, "libtsan") ||
		   ma_name_is(name, "libubsan") || ma_name_is(name, "liblsan") ||
		   ma_name_is(name, "libhwasan") || ma_name_is(name, "libclang_rt.")) {
		unsafe = 1;
	}
	if (unsafe && !first)
		ma_add_exec_segments(info);
	return 0;
}

static void ma_preempt_handler(int sig, siginfo_t *si, void *ucv);

static void ma_preempt_setup(void)
{
	ma_preempt_signo = MA_PREEMPT_SIG;
	ma_pt.tgid = getpid();
#ifdef MA_TSAN
	/* TSan runs a handler later, at a point of its choosing, on a copy of the context:
	 * rewriting that copy cannot redirect the thread. */
	ma_pt.why_not = "preemption does not work under ThreadSanitizer, which defers signal handlers";
	ma_pt.why_errno = EINVAL;
	return;
#endif
	const char *why;
	if (!MA_ARCH_PREEMPT || ma_arch_preempt_init(&why)) {
		ma_pt.why_not = MA_ARCH_PREEMPT ? why : "this architecture does not support preemption (portable ucontext build)";
		ma_pt.why_errno = EINVAL;
		return;
	}
	struct ma_phdr_scan s = {
		.self = (uintptr_t)&ma_preempt_setup,
		.ldso = (uintptr_t)getauxval(AT_BASE),
		.vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR),
	};
	dl_iterate_phdr(ma_phdr_cb, &s);
	if (s.self_is_program || !s.libc_found) {
		ma_pt.why_not = "preemption needs libmarcel and libc as shared libraries (linked statically, "
				"their code cannot be told apart from the program's)";
		ma_pt.why_errno = EINVAL;
		return;
	}
	ma_pt.stack_need = ma_arch_preempt_stack_need() + MA_PREEMPT_C_RESERVE;

	struct sigaction sa, old;
	if (sigaction(ma_preempt_signo, NULL, &old) == 0 && (old.sa_flags & SA_SIGINFO ? old.sa_sigaction != NULL
			  : old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)) {
		ma_pt.why_not = "the application has a handler for SIGRTMIN+7, which marcel's preemption needs";
		ma_pt.why_errno = EBUSY;
		return;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = ma_preempt_handler;
	/* SA_RESTART: most system calls interrupted by a tick resume by themselves.
	 * SA_ONSTACK: the ucontext and the extended state would not fit on a small thread
	 * stack. The handler stays installed for good: a signal sent just before marcel_end
	 * may still arrive, and the default action would kill the process. */
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (sigaction(ma_preempt_signo, &sa, NULL)) {
		ma_pt.why_errno = errno;
		ma_pt.why_not = "the preemption signal handler cannot be installed";
		return;
	}
	ma_pt.installed = 1;
}

static int ma_preempt_available(void)
{
	pthread_once(&ma_pt.once, ma_preempt_setup);
	return ma_pt.installed;
}

/* ---- kernel threads ---- */

/* Unblocks the signal on the calling kernel thread and records its normal mask. */
static int ma_preempt_thread_setup(void)
{
	sigset_t s, cur;
	sigemptyset(&s);
	sigaddset(&s, ma_preempt_signo);
	int blocked = pthread_sigmask(SIG_UNBLOCK, &s, &cur) == 0 && sigismember(&cur, ma_preempt_signo) == 1;
	pthread_sigmask(SIG_SETMASK, NULL, &cur);
	ma_tls_base_mask = ma_mask_bits(&cur);
	ma_tls_base_mask_set = 1;
	return blocked;
}

static void ma_kt_add(struct ma_preempt_kt *k)
{
	ma_spin_lock(&ma_pt.kt_lock);
	k->next = ma_pt.kts;
	ma_pt.kts = k;
	ma_spin_unlock(&ma_pt.kt_lock);
}

static struct ma_preempt_kt *ma_kt_remove(const struct ma_carrier *c)
{
	struct ma_preempt_kt *k = NULL;
	ma_spin_lock(&ma_pt.kt_lock);
	for (struct ma_preempt_kt **p = &ma_pt.kts; *p; p = &(*p)->next)
		if ((*p)->carrier == c) {
			k = *p;
			*p = k->next;
			break;
		}
	ma_spin_unlock(&ma_pt.kt_lock);
	return k;
}

void ma_preempt_thread_start(const struct ma_carrier *c)
{
	if (!ma_preempt_available())
		return;
	ma_preempt_thread_setup();
	struct ma_preempt_kt *k = malloc(sizeof(*k));
	if (!k)
		return; /* never signalled: its VPs run cooperatively */
	k->carrier = c;
	k->tid = (pid_t)syscall(SYS_gettid);
	ma_kt_add(k);
}

void ma_preempt_thread_end(const struct ma_carrier *c)
{
	free(ma_kt_remove(c));
	ma_tls_base_mask_set = 0;
}

/* The kernel thread carrying w now, 0 if unknown (it could not be recorded). */
static pid_t ma_preempt_tid_of(struct ma_worker *w)
{
	const struct ma_carrier *c = ma_read_once(&w->carrier);
	pid_t tid = 0;
	ma_spin_lock(&ma_pt.kt_lock);
	for (struct ma_preempt_kt *k = ma_pt.kts; k; k = k->next)
		if (k->carrier == c) {
			tid = k->tid;
			break;
		}
	ma_spin_unlock(&ma_pt.kt_lock);
	return tid;
}

/* If w moved meanwhile, the signal finds another VP there (not its target: ignored) or
 * no VP at all. */
static void ma_preempt_send(pid_t tid)
{
	if (tid)
		syscall(SYS_tgkill, ma_pt.tgid, tid, ma_preempt_signo);
}

/* CPU time used by kernel thread tid (of this process), in ns; 0 if unreadable. */
static uint64_t ma_thread_cpu_ns(pid_t tid)
{
	/* The clock id glibc's pthread_getcpuclockid builds (per-thread, scheduler time). */
	clockid_t clk = (clockid_t)((~(unsigned)tid << 3) | 6);
	struct timespec ts;
	if (clock_gettime(clk, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the handler ---- */

static int ma_preempt_unsafe(struct ma_worker *w, struct marcel_task *t, const ucontext_t *uc)
{
	if (t->is_idle || !t->preemptible || t->in_section ||
	    atomic_load_explicit(&t->preempt_off, memory_order_relaxed) ||
	    atomic_load_explicit(&t->foreign_locks, memory_order_relaxed) ||
	    atomic_load_explicit(&t->state, memory_order_relaxed) != MA_TASK_RUNNING ||
	    atomic_load_explicit(&w->attn.disabled, memory_order_relaxed) ||
	    atomic_load_explicit(&ma_rt.stopping, memory_order_relaxed))
		return 1;
	uintptr_t pc = ma_arch_uc_pc(uc), sp = ma_arch_uc_sp(uc);
	for (unsigned i = 0; i < ma_pt.nb_unsafe; i++)
		if (pc >= ma_pt.unsafe[i].lo && pc < ma_pt.unsafe[i].hi)
			return 1;
	/* In a handler of the application's own: on the signal stack (shared by every
	 * thread of this kernel thread), or with its signal blocked, which would stay blocked
	 * on this kernel thread if the thread finished the handler elsewhere. */
	if ((uc->uc_stack.ss_flags & SS_ONSTACK) || !ma_tls_base_mask_set ||
	    ma_mask_bits(&uc->uc_sigmask) != ma_tls_base_mask)
		return 1;
	if (t->stack_base) {
		uintptr_t base = (uintptr_t)t->stack_base;
		return sp < base + ma_pt.stack_need || sp > base + t->stack_size;
	}
	/* main's stack, or a seed running on it (seed.c): the kernel thread's own. */
	return !t->is_main && !t->inline_run;
}

static void ma_preempt_handler(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	ucontext_t *uc = ucv;
	int saved_errno = errno;
	/* The aarch64 trampoline's way back, whatever the runtime's state. */
	if (ma_arch_preempt_resume(uc))
		goto out;
	if (!atomic_load_explicit(&ma_pt.live, memory_order_relaxed))
		goto out;
	/* A plain TLS read is fine: nothing switches inside a handler. */
	struct ma_worker *w = ma_tls_worker;
	if (!w)
		goto out;
	struct ma_preempt_vp *p = &ma_pvp[w->vp];
	struct marcel_task *t = atomic_load_explicit(&p->target, memory_order_relaxed);
	if (!t || t != ma_worker_current(w))
		goto out;
	if (ma_preempt_unsafe(w, t, uc) || !atomic_compare_exchange_strong(&p->target, &t, NULL))
		goto out;
	atomic_store_explicit(&p->requested, 0, memory_order_relaxed);
	ma_arch_preempt_redirect(uc);
out:
	errno = saved_errno;
}

void ma_preempt_yield(void)
{
	struct ma_worker *w = ma_worker_self();
	/* The interrupted code may be about to read errno: keep it, and put it back on
	 * whichever kernel thread resumes us. */
	int e = *w->errno_loc;
	atomic_store_explicit(&ma_pvp[w->vp].preempted_at, ma_clock_ns(), memory_order_relaxed);
	ma_yield_preempted();
	w = ma_worker_self();
	*w->errno_loc = e;
}

/* ---- the ticker ---- */

/*
 * Whether the kernel thread carrying w used at least min_cpu ns of CPU since the last
 * sample in (*tid, *cpu), which is updated. A VP is signalled only then: a thread blocked
 * in the kernel uses none and is left alone, so that calls which never restart after a
 * handler (poll, select, nanosleep, sleep...) do not keep failing with EINTR. Returns
 * the kernel thread to signal, 0 for none.
 */
static pid_t ma_preempt_ran(struct ma_worker *w, pid_t *tid, uint64_t *cpu, uint64_t min_cpu)
{
	pid_t now_tid = ma_preempt_tid_of(w);
	uint64_t now_cpu = now_tid ? ma_thread_cpu_ns(now_tid) : 0;
	int ran = now_tid && now_tid == *tid && now_cpu - *cpu >= min_cpu;
	*tid = now_tid;
	*cpu = now_cpu;
	return ran ? now_tid : 0;
}

/* Whether switching cur out would do anything: another thread at least as urgent is
 * ready for w, or one of w's timers is due (the yield fires it: a busy VP's sleepers
 * would otherwise wait for its next scheduling point). Read without locks: a hint. */
static int ma_preempt_worthwhile(struct ma_worker *w, struct marcel_task *cur, uint64_t now)
{
	int prio;
	/* Private bubbles (bubbles/private.c) may hold seeds nobody took: the yield
	 * publishes them, and they run as queued threads would. */
	return ma_read_once(&w->runnext) ||
	       atomic_load_explicit(&w->nb_private, memory_order_relaxed) ||
	       atomic_load_explicit(&w->timer_next, memory_order_relaxed) <= now ||
	       ma_peek_next(w, atomic_load_explicit(&cur->e.prio, memory_order_relaxed), &prio);
}

/* Returns whether some VP has a thread that others wait behind (slice over or not). */
static int ma_preempt_tick(uint64_t now, uint64_t prev_tick)
{
	int contended = 0;
	uint64_t period = ma_pt.period_ns;
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		struct ma_worker *w = &ma_rt.workers[v];
		struct ma_preempt_vp *p = &ma_pvp[v];
		struct marcel_task *cur = atomic_load_explicit(&w->current, memory_order_relaxed);
		unsigned long switches = atomic_load_explicit(&w->nr_switches, memory_order_relaxed);
		struct marcel_task *tg = atomic_load_explicit(&p->target, memory_order_relaxed);
		if (cur != p->seen || switches != p->seen_switches) {
			/* It switched: a fresh slice, which began at a preemption if one was
			 * served since the previous tick, else (not knowing better) now. A tick
			 * target that left by itself is served. */
			p->seen = cur;
			p->seen_switches = switches;
			if (tg && tg != cur && !atomic_load(&p->requested))
				atomic_compare_exchange_strong(&p->target, &tg, NULL);
			uint64_t pa = atomic_load_explicit(&p->preempted_at, memory_order_relaxed);
			p->slice_start = pa > prev_tick ? pa : now;
		}
		if (!cur || cur->is_idle) {
			p->cpu_tid = 0;
			continue;
		}
		pid_t tid = ma_preempt_ran(w, &p->cpu_tid, &p->cpu_prev, period / 8);
		if (!cur->preemptible || !ma_preempt_worthwhile(w, cur, now))
			continue;
		contended = 1;
		/* 1/8 of slack for a late tick, so that a slice is one period, not two. */
		if (now - p->slice_start < period - period / 8)
			continue;
		if (tg != cur)
			atomic_store(&p->target, cur);
		if (tid && !atomic_load_explicit(&cur->preempt_off, memory_order_relaxed))
			ma_preempt_send(tid);
		/* else marcel_thread_preemption_enable will find it pending */
	}
	return contended;
}

/* Re-sends pending requests; drops those whose thread left by itself. Returns whether
 * some are still pending. */
static int ma_preempt_retry_requests(void)
{
	int pending = 0;
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		struct ma_preempt_vp *p = &ma_pvp[v];
		if (!atomic_load(&p->requested))
			continue;
		struct ma_worker *w = &ma_rt.workers[v];
		struct marcel_task *tg = atomic_load(&p->target);
		if (!tg || tg != atomic_load_explicit(&w->current, memory_order_relaxed)) {
			if (atomic_exchange(&p->requested, 0) && tg)
				atomic_compare_exchange_strong(&p->target, &tg, NULL);
			continue;
		}
		pending = 1;
		pid_t tid = ma_preempt_ran(w, &p->rq_tid, &p->rq_cpu, MA_PREEMPT_RETRY_NS / 8);
		if (tid && !atomic_load_explicit(&tg->preempt_off, memory_order_relaxed))
			ma_preempt_send(tid);
	}
	return pending;
}

static void *ma_ticker_main(void *arg)
{
	(void)arg;
	/* It inherited the affinity of its creator, a worker bound to one processor: waking
	 * there every slice would take that worker's processor twice per tick. Any allowed
	 * processor will do (the kernel intersects the mask with the cpuset). */
	cpu_set_t all;
	CPU_ZERO(&all);
	for (int i = 0; i < CPU_SETSIZE; i++)
		CPU_SET(i, &all);
	sched_setaffinity(0, sizeof(all), &all);
	uint64_t period = ma_pt.period_ns;
	uint64_t prev_tick = ma_clock_ns();
	uint64_t next_tick = period ? prev_tick + period : MA_NO_DEADLINE;
	uint64_t next_retry = MA_NO_DEADLINE;
	unsigned quiet = 0;
	for (;;) {
		unsigned seq = atomic_load(&ma_pt.ticker_seq);
		if (atomic_load(&ma_pt.ticker_stop))
			break;
		uint64_t now = ma_clock_ns();
		if (now >= next_tick) {
			/* While no VP has a thread waiting behind another (one thread per VP is
			 * common), tick less often, down to every 4 periods: a wake-up costs
			 * the machine a few microseconds, much more under virtualisation. The
			 * first slice after such a spell may then last up to 4 periods. */
			quiet = ma_preempt_tick(now, prev_tick) ? 0 : quiet + 1;
			prev_tick = now;
			next_tick += period << (quiet < 2 ? quiet : 2);
			if (next_tick <= now)
				next_tick = now + period; /* fell behind (descheduled): no burst */
		}
		/* Cleared before the scan and set again by any request made meanwhile, so none
		 * is forgotten. */
		if (atomic_exchange(&ma_pt.requests, 0) || now >= next_retry) {
			next_retry = MA_NO_DEADLINE;
			if (ma_preempt_retry_requests()) {
				atomic_store(&ma_pt.requests, 1);
				next_retry = now + MA_PREEMPT_RETRY_NS;
			}
		}
		ma_futex_wait_until(&ma_pt.ticker_seq, seq, next_tick < next_retry ? next_tick : next_retry);
	}
	return NULL;
}

static void ma_ticker_wake(void)
{
	atomic_fetch_add(&ma_pt.ticker_seq, 1);
	ma_futex_wake(&ma_pt.ticker_seq, 1);
}

/* Under ma_pt.lock. The ticker blocks every signal: it must never run the handler, nor
 * take the application's signals. */
static int ma_ticker_start_locked(void)
{
	if (ma_pt.ticker_started)
		return 0;
	atomic_store(&ma_pt.ticker_stop, 0);
	int e = ma_service_thread_create(&ma_pt.ticker, 64 * 1024, ma_ticker_main, NULL);
	if (!e)
		ma_pt.ticker_started = 1;
	return e;
}

/* ---- runtime start, stop, requests ---- */

int ma_preempt_start(void)
{
	unsigned ts = ma_rt.opt.timeslice_us;
	memset(ma_pvp, 0, ma_rt.nb_vps * sizeof(ma_pvp[0]));
	atomic_store(&ma_pt.requests, 0);
	if (!ma_preempt_available() && !ma_rt.opt.timeslice_given)
		ts = 0; /* the default slice, where it cannot work: cooperative */
	ma_pt.period_ns = (uint64_t)ts * 1000;
	if (!ma_preempt_available()) {
		if (!ts)
			return 0; /* requests do nothing */
		fprintf(stderr, "marcel: MARCEL_TIMESLICE=%u: %s; use 0 (cooperative scheduling)\n", ts,
			ma_pt.why_not);
		return ma_pt.why_errno;
	}
	/* VP 0 runs on the thread that called marcel_init, which may have blocked the
	 * signal (programs that take signals in a thread of their own do). */
	ma_pt.main_was_blocked = ma_preempt_thread_setup();
	ma_pt.main_kt = (struct ma_preempt_kt){ .carrier = ma_carrier_self(), .tid = (pid_t)syscall(SYS_gettid) };
	ma_kt_add(&ma_pt.main_kt);
	atomic_store(&ma_pt.live, 1);
	if (ts) {
		pthread_mutex_lock(&ma_pt.lock);
		int e = ma_ticker_start_locked();
		pthread_mutex_unlock(&ma_pt.lock);
		if (e) {
			fprintf(stderr, "marcel: MARCEL_TIMESLICE=%u: cannot start the preemption thread: %s\n", ts,
				strerror(e));
			ma_preempt_stop();
			return e;
		}
	}
	return 0;
}

void ma_preempt_stop(void)
{
	if (!atomic_load(&ma_pt.live))
		return;
	atomic_store(&ma_pt.live, 0);
	pthread_mutex_lock(&ma_pt.lock);
	if (ma_pt.ticker_started) {
		atomic_store(&ma_pt.ticker_stop, 1);
		ma_ticker_wake();
		pthread_join(ma_pt.ticker, NULL);
		ma_pt.ticker_started = 0;
	}
	pthread_mutex_unlock(&ma_pt.lock);
	ma_kt_remove(ma_pt.main_kt.carrier);
	/* The rest concerns the kernel thread that called marcel_init; main may still run
	 * elsewhere (a blocking section moved it), and then leaving the signal unblocked
	 * there is harmless: the handler stays installed and ignores it. */
	if (ma_carrier_main_home()) {
		ma_tls_base_mask_set = 0;
		if (ma_pt.main_was_blocked) {
			sigset_t s;
			sigemptyset(&s);
			sigaddset(&s, ma_preempt_signo);
			pthread_sigmask(SIG_BLOCK, &s, NULL);
		}
	}
	for (unsigned v = 0; v < ma_rt.nb_vps; v++)
		atomic_store(&ma_pvp[v].target, NULL);
}

void ma_preempt_request(struct ma_worker *w)
{
	if (!atomic_load_explicit(&ma_pt.live, memory_order_relaxed))
		return;
	struct ma_preempt_vp *p = &ma_pvp[w->vp];
	/* Acquire, as cur's is_idle is read (current is stored with release). */
	struct marcel_task *cur = atomic_load_explicit(&w->current, memory_order_acquire);
	if (!cur || cur->is_idle)
		return;
	atomic_store(&p->target, cur);
	atomic_store(&p->requested, 1);
	atomic_store(&ma_pt.requests, 1);
	if (!ma_pt.ticker_started) {
		/* Cooperative mode: the retries need the ticker. */
		pthread_mutex_lock(&ma_pt.lock);
		int e = atomic_load(&ma_pt.live) ? ma_ticker_start_locked() : 0;
		pthread_mutex_unlock(&ma_pt.lock);
		if (e) {
			static atomic_int warned;
			if (!atomic_exchange(&warned, 1))
				fprintf(stderr, "marcel: warning: cannot start the preemption thread (%s): preemption "
						"requests are tried once\n",
					strerror(e));
		}
	}
	ma_ticker_wake();
	if (!atomic_load_explicit(&cur->preempt_off, memory_order_relaxed))
		ma_preempt_send(ma_preempt_tid_of(w));
}

/* ---- public API ---- */

static struct marcel_task *ma_preempt_self(void)
{
	struct ma_worker *w = ma_worker_self();
	return w ? ma_worker_current(w) : ma_tls_section_task;
}

int marcel_thread_preemption_disable(void)
{
	struct marcel_task *t = ma_preempt_self();
	if (!t)
		return EPERM;
	/* Only the thread writes its counter, and this function cannot be preempted: no
	 * read-modify-write needed, only ordering against the handler on this kernel thread. */
	int n = atomic_load_explicit(&t->preempt_off, memory_order_relaxed);
	atomic_store_explicit(&t->preempt_off, n + 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	return 0;
}

int marcel_thread_preemption_enable(void)
{
	struct marcel_task *t = ma_preempt_self();
	if (!t)
		return EPERM;
	int n = atomic_load_explicit(&t->preempt_off, memory_order_relaxed);
	if (n <= 0)
		return EINVAL;
	atomic_signal_fence(memory_order_seq_cst);
	atomic_store_explicit(&t->preempt_off, n - 1, memory_order_relaxed);
	if (n > 1 || !atomic_load_explicit(&ma_pt.live, memory_order_relaxed))
		return 0;
	/* A tick or a request that came while it was disabled: this is a safe point. */
	struct ma_worker *w = ma_worker_self();
	if (!w || !t->preemptible || atomic_load_explicit(&w->attn.disabled, memory_order_relaxed) ||
	    atomic_load_explicit(&ma_rt.stopping, memory_order_relaxed))
		return 0;
	struct ma_preempt_vp *p = &ma_pvp[w->vp];
	struct marcel_task *tg = t;
	if (atomic_load_explicit(&p->target, memory_order_relaxed) == t &&
	    atomic_compare_exchange_strong(&p->target, &tg, NULL)) {
		atomic_store(&p->requested, 0);
		ma_preempt_yield();
	}
	return 0;
}

int marcel_thread_is_preemptible(void)
{
	struct ma_worker *w = ma_worker_self();
	if (!w || !atomic_load_explicit(&ma_pt.live, memory_order_relaxed))
		return 0;
	struct marcel_task *t = ma_worker_current(w);
	return t->preemptible && !atomic_load_explicit(&t->preempt_off, memory_order_relaxed);
}
