/*
 * Process-directed signals (marcel/signal.h): the actions of marcel_sigaction, the
 * kernel handler that catches the signals marcel handles (ma_sig_catch), and the helper
 * kernel thread that hands each caught signal to a marcel thread.
 *
 * The catcher runs on whichever kernel thread the kernel picked, in a signal context
 * where almost nothing is allowed: it records the signal in ma_sig_proc_pending and
 * wakes the helper. The helper, a kernel thread blocking every signal, wakes a marcel
 * thread waiting for the signal, else tells one that does not block it (ma_sig_notify),
 * preferring one that runs; that thread takes the signal at its next point (signal.c).
 * Threads that unblock the signal, wait for it or start without blocking it take it
 * themselves, so a signal every thread blocks stays pending for the process.
 *
 * The helper sleeps in sigwaitinfo, for its wake-up (MA_PREEMPT_SIG, aimed at it alone)
 * and for the signals that the workers block in the kernel (blocked before marcel_init:
 * they inherited the mask) and that marcel threads want: those never reach a worker, so
 * the helper takes them from the kernel itself.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "ma_preempt.h"
#include "ma_signal.h"
#include "ma_sync.h"

/* Descriptors per chunk (task.c's MA_TASK_CHUNK). */
#define MA_SIG_CHUNK 64

_Atomic uint64_t ma_sig_proc_pending MA_HIDDEN;

/* Serialises the changes of actions, of the sets below and the helper's start and stop. */
static pthread_mutex_t ma_sig_lock = PTHREAD_MUTEX_INITIALIZER;
/* marcel's action for each signal whose kernel handler is ma_sig_catch. */
static struct sigaction ma_sig_table[NSIG];
/* The siginfo of each caught signal: written before its pending bit is set, read after
 * the bit is taken. Word by word, relaxed: a second signal of that number arriving
 * meanwhile (the catcher cannot take a lock) may tear it, as the kernel merges standard
 * signals anyway, but is no data race. */
#define MA_SIG_INFO_WORDS (sizeof(siginfo_t) / sizeof(uint64_t))
_Static_assert(sizeof(siginfo_t) % sizeof(uint64_t) == 0, "siginfo_t is copied in 64-bit words");
static _Atomic uint64_t ma_sig_info[NSIG][MA_SIG_INFO_WORDS]; /* stored by the handler */

static void ma_sig_info_store(int sig, const siginfo_t *si)
{
	uint64_t w[MA_SIG_INFO_WORDS];
	memcpy(w, si, sizeof(w));
	for (unsigned i = 0; i < MA_SIG_INFO_WORDS; i++)
		atomic_store_explicit(&ma_sig_info[sig][i], w[i], memory_order_relaxed);
}
static uint64_t ma_sig_kblocked;       /* blocked in the workers' kernel masks */
static uint64_t ma_sig_wanted;         /* waited for in marcel_sigwait once */
static uint64_t ma_sig_wanted_handled; /* handlers waited for in marcel_sigsuspend once */
static _Atomic uint64_t ma_sig_kwait;  /* taken from the kernel by the helper */
static uint64_t ma_sig_caught;         /* kernel handler set to ma_sig_catch */

static struct {
	pthread_t thread;
	int started;
	atomic_int stop;
	atomic_int tid;                 /* its kernel thread id, 0 until it runs */
} ma_sh;

static void ma_sig_kick(void)
{
	int tid = atomic_load(&ma_sh.tid);
	if (tid)
		syscall(SYS_tgkill, getpid(), tid, MA_PREEMPT_SIG);
}

static void ma_sig_catch(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	int saved = errno;
	ma_sig_info_store(sig, si);
	atomic_fetch_or(&ma_sig_proc_pending, MA_SIG_BIT(sig));
	ma_sig_kick();
	errno = saved;
}

static int ma_sig_is_catch(const struct sigaction *k)
{
	return (k->sa_flags & SA_SIGINFO) && k->sa_sigaction == ma_sig_catch;
}

void ma_sig_proc_info(int sig, siginfo_t *info)
{
	uint64_t w[MA_SIG_INFO_WORDS];
	for (unsigned i = 0; i < MA_SIG_INFO_WORDS; i++)
		w[i] = atomic_load_explicit(&ma_sig_info[sig][i], memory_order_relaxed);
	memcpy(info, w, sizeof(w));
}

/* The thread to give sig to: one waiting for it (*waiting set), else one running that
 * does not block it, else any that does not block it; NULL if every thread blocks it. */
static struct marcel_task *ma_sig_pick(int sig, int *waiting)
{
	uint64_t bit = MA_SIG_BIT(sig);
	struct marcel_task *best = NULL;
	int rank = 0;
	ma_spin_lock(&ma_rt.pool_lock);
	for (unsigned c = 0; c < ma_rt.nb_task_chunks && rank < 3; c++) {
		struct marcel_task *chunk = ma_rt.task_chunks[c];
		for (unsigned i = 0; i < MA_SIG_CHUNK && rank < 3; i++) {
			struct marcel_task *t = &chunk[i];
			int st = atomic_load_explicit(&t->state, memory_order_acquire);
			if (st == MA_TASK_FREE || st == MA_TASK_DEAD || st == MA_TASK_BORN || t->is_idle)
				continue;
			int r = (atomic_load(&t->sig_wait) & bit) ? 3
				: (atomic_load_explicit(&t->sig_mask, memory_order_relaxed) & bit) ? 0
				: st == MA_TASK_RUNNING ? 2 : 1;
			if (r > rank) {
				rank = r;
				best = t;
			}
		}
	}
	ma_spin_unlock(&ma_rt.pool_lock);
	*waiting = rank == 3;
	return best;
}

static void ma_sig_dispatch(void)
{
	uint64_t p = atomic_load(&ma_sig_proc_pending);
	while (p) {
		int sig = __builtin_ctzll(p) + 1, waiting;
		p &= p - 1;
		/* The descriptor stays readable (chunks live as long as the runtime); if its
		 * thread changed meanwhile, the wake-up is spurious and the signal waits for
		 * the next thread to take it. */
		struct marcel_task *t = ma_sig_pick(sig, &waiting);
		if (t && waiting)
			ma_fwake(&t->sig_pending, 1);
		else if (t)
			ma_sig_notify(t);
	}
}

static void *ma_sig_helper(void *arg)
{
	(void)arg;
	atomic_store(&ma_sh.tid, (int)syscall(SYS_gettid));
	while (!atomic_load(&ma_sh.stop)) {
		ma_sig_dispatch();
		sigset_t set;
		ma_sig_set(&set, atomic_load(&ma_sig_kwait));
		sigaddset(&set, MA_PREEMPT_SIG);
		siginfo_t si;
		int sig = sigwaitinfo(&set, &si);
		if (sig > 0 && sig != MA_PREEMPT_SIG) {
			ma_sig_info_store(sig, &si);
			atomic_fetch_or(&ma_sig_proc_pending, MA_SIG_BIT(sig));
		}
	}
	return NULL;
}

/* Under ma_sig_lock, in a running runtime. */
static void ma_sig_helper_start(void)
{
	if (ma_sh.started)
		return;
	atomic_store(&ma_sh.stop, 0);
	atomic_store(&ma_sh.tid, 0);
	int e = ma_service_thread_create(&ma_sh.thread, 0, ma_sig_helper, NULL);
	if (e) {
		fprintf(stderr, "marcel: cannot start the signal helper thread (%s): process-directed "
				"signals stay pending\n", strerror(e));
		return;
	}
	ma_sh.started = 1;
}

/* Makes the process-directed sig reach marcel; under ma_sig_lock. */
static void ma_sig_catch_install(int sig)
{
	uint64_t bit = MA_SIG_BIT(sig);
	if (ma_sig_kblocked & bit)
		atomic_fetch_or(&ma_sig_kwait, bit);
	if (!(ma_sig_caught & bit)) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = ma_sig_catch;
		/* Workers' system calls restart: the catcher only records the signal. */
		sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
		sigfillset(&sa.sa_mask);
		sigaction(sig, &sa, NULL);
		ma_sig_caught |= bit;
	}
	ma_sig_helper_start();
	ma_sig_kick();
}

void ma_sig_want(uint64_t want, int dfl)
{
	uint64_t *seen = dfl ? &ma_sig_wanted : &ma_sig_wanted_handled;
	if (!(want & ~ma_load_acquire(seen)))
		return;
	pthread_mutex_lock(&ma_sig_lock);
	for (uint64_t w = want & ~*seen; w; w &= w - 1) {
		int sig = __builtin_ctzll(w) + 1;
		uint64_t bit = MA_SIG_BIT(sig);
		struct sigaction k;
		sigaction(sig, NULL, &k);
		if (ma_sig_is_catch(&k) || ma_sig_synchronous(sig))
			continue;
		int is_dfl = !(k.sa_flags & SA_SIGINFO) && k.sa_handler == SIG_DFL;
		int is_ign = !(k.sa_flags & SA_SIGINFO) && k.sa_handler == SIG_IGN;
		if (is_ign || (is_dfl && !dfl)) {
			/* Ignored, or a default action a handler wait does not wake for: the kernel
			 * keeps it, or the helper takes it if the workers block it. */
			if (ma_sig_kblocked & bit) {
				atomic_fetch_or(&ma_sig_kwait, bit);
				ma_sig_helper_start();
				ma_sig_kick();
			}
			continue;
		}
		/* The kernel would run the C library's handler, or apply the default action, on a
		 * worker: marcel catches it and applies that action in a thread. */
		ma_sig_table[sig] = k;
		ma_sig_catch_install(sig);
	}
	ma_store_release(seen, *seen | want);
	pthread_mutex_unlock(&ma_sig_lock);
}

void ma_sig_action(int sig, struct sigaction *act)
{
	pthread_mutex_lock(&ma_sig_lock);
	sigaction(sig, NULL, act);
	if (ma_sig_is_catch(act))
		*act = ma_sig_table[sig];
	pthread_mutex_unlock(&ma_sig_lock);
}

/* Sets marcel's and the kernel's action for sig to k; under ma_sig_lock. */
static void ma_sig_install(int sig, const struct sigaction *k)
{
	uint64_t bit = MA_SIG_BIT(sig);
	int handler = (k->sa_flags & SA_SIGINFO) || (k->sa_handler != SIG_DFL && k->sa_handler != SIG_IGN);
	ma_sig_table[sig] = *k;
	if (handler || ((ma_sig_wanted & bit) && k->sa_handler == SIG_DFL)) {
		ma_sig_catch_install(sig);
		return;
	}
	sigaction(sig, k, NULL);
	ma_sig_caught &= ~bit;
}

void ma_sig_reset(int sig)
{
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	pthread_mutex_lock(&ma_sig_lock);
	ma_sig_install(sig, &dfl);
	pthread_mutex_unlock(&ma_sig_lock);
}

static void ma_sig_from_marcel(const struct marcel_sigaction *m, struct sigaction *k)
{
	memset(k, 0, sizeof(*k));
	k->sa_flags = m->marcel_sa_flags;
	if (m->marcel_sa_flags & SA_SIGINFO)
		k->sa_sigaction = m->marcel_sa_sigaction;
	else
		k->sa_handler = m->marcel_sa_handler;
	k->sa_mask = m->marcel_sa_mask;
}

static void ma_sig_to_marcel(const struct sigaction *k, struct marcel_sigaction *m)
{
	memset(m, 0, sizeof(*m));
	m->marcel_sa_flags = k->sa_flags;
	if (k->sa_flags & SA_SIGINFO)
		m->marcel_sa_sigaction = k->sa_sigaction;
	else
		m->marcel_sa_handler = k->sa_handler;
	m->marcel_sa_mask = k->sa_mask;
}

int marcel_sigaction(int sig, const struct marcel_sigaction *act, struct marcel_sigaction *oact)
{
	if (!ma_sig_valid(sig) || (act && (sig == SIGKILL || sig == SIGSTOP))) {
		errno = EINVAL;
		return -1;
	}
	struct sigaction k, old;
	if (act)
		ma_sig_from_marcel(act, &k);
	if (ma_sig_synchronous(sig) || !ma_rt.running) {
		if (sigaction(sig, act ? &k : NULL, &old))
			return -1;
	} else {
		pthread_mutex_lock(&ma_sig_lock);
		sigaction(sig, NULL, &old);
		if (ma_sig_is_catch(&old))
			old = ma_sig_table[sig];
		if (act)
			ma_sig_install(sig, &k);
		pthread_mutex_unlock(&ma_sig_lock);
	}
	if (oact)
		ma_sig_to_marcel(&old, oact);
	return 0;
}

marcel_sighandler_t marcel_signal(int sig, marcel_sighandler_t handler)
{
	struct marcel_sigaction act, old;
	memset(&act, 0, sizeof(act));
	act.marcel_sa_handler = handler;
	sigemptyset(&act.marcel_sa_mask);
	act.marcel_sa_flags = SA_RESTART;
	if (marcel_sigaction(sig, &act, &old))
		return SIG_ERR;
	if (!(old.marcel_sa_flags & SA_SIGINFO))
		return old.marcel_sa_handler;
	/* A handler installed with SA_SIGINFO: the same address, as the C library's. */
	marcel_sighandler_t h;
	memcpy(&h, &old.marcel_sa_sigaction, sizeof(h));
	return h;
}

int marcel_sigignore(int sig)
{
	return marcel_signal(sig, SIG_IGN) == SIG_ERR ? -1 : 0;
}

unsigned marcel_alarm(unsigned seconds)
{
	return alarm(seconds);
}

void ma_sig_start(const sigset_t *kernel_mask)
{
	pthread_mutex_lock(&ma_sig_lock);
	ma_sig_kblocked = ma_sig_bits(kernel_mask);
	pthread_mutex_unlock(&ma_sig_lock);
}

void ma_sig_stop(void)
{
	pthread_mutex_lock(&ma_sig_lock);
	if (ma_sh.started) {
		atomic_store(&ma_sh.stop, 1);
		ma_sig_kick();
		pthread_join(ma_sh.thread, NULL);
		ma_sh.started = 0;
		atomic_store(&ma_sh.tid, 0);
	}
	/* With no marcel thread left, the handlers run in the kernel as installed. */
	for (uint64_t c = ma_sig_caught; c; c &= c - 1) {
		int sig = __builtin_ctzll(c) + 1;
		struct sigaction k;
		sigaction(sig, NULL, &k);
		if (ma_sig_is_catch(&k))
			sigaction(sig, &ma_sig_table[sig], NULL);
	}
	ma_sig_caught = 0;
	ma_store_release(&ma_sig_wanted, 0);
	ma_store_release(&ma_sig_wanted_handled, 0);
	atomic_store(&ma_sig_kwait, 0);
	atomic_store(&ma_sig_proc_pending, 0);
	pthread_mutex_unlock(&ma_sig_lock);
}
