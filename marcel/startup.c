/*
 * The composition root: marcel_init and marcel_end run the start and stop steps of every
 * layer from one table, in one order. This file sits above the core's layer (as Linux's
 * init/main.c sits above kernel/sched/): it is the only file of marcel/ that names
 * functions of bubbles/ and strategies/, and only their start and stop functions and the
 * strategy-name check of the options, declared here rather than through their headers.
 * tools/check-layers holds it to that. An explicit table rather than constructors or
 * linker sections: a program linked with the static libmarcel.a pulls in only the
 * objects it references, and a layer registered by a side effect would silently be left
 * out.
 *
 * marcel_init runs each step's start in table order. A start that fails has undone its
 * own part and said why on stderr (or, for the steps marked `say`, the loop says it); the
 * steps already started are then unwound exactly as marcel_end unwinds them: every
 * quiesce part in reverse order, then every stop part in reverse order. marcel_end runs
 * the quiesce parts while main is alone but the workers still run (from there on nothing
 * may switch main out: signals, preemption, the strategy's hooks), brings main back to VP
 * 0 and to the kernel thread that called marcel_init, then runs the stop parts.
 *
 * A marcel_init that fails also notes why (ma_init_failure_note). Programs written for
 * PM2's Marcel, whose marcel_init returned nothing, go on as if it had worked: until a
 * marcel_init succeeds, the calls that need the runtime fail, the first of them saying so
 * in one line that cites the failure, and waits that no thread could end return at once
 * (ma_sched.h, ma_after_failed_init) instead of hanging.
 *
 * With MARCEL_DEBUG set, MARCEL_DEBUG_FAIL=<step> makes that step's start fail (ECANCELED)
 * without running it, so that every failure path can be tested.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ma_sched.h"
#include "ma_trace.h"
#include "ma_preempt.h"
#include "ma_signal.h"
#include "ma_tls_check.h"

/* The upper layers' steps (bubbles/bubble.c, strategies/registry.c). Declared here, not
 * through their headers: the core includes no upper header. */
int ma_bubbles_start(void) MA_HIDDEN;
void ma_bubbles_stop(void) MA_HIDDEN;
int ma_strategies_start(void) MA_HIDDEN;
void ma_strategies_stop(void) MA_HIDDEN;
int ma_strategy_name_ok(const char *name) MA_HIDDEN;
const char *ma_strategy_names(void) MA_HIDDEN;
int ma_hwprio_start(void) MA_HIDDEN;
void ma_hwprio_quiesce(void) MA_HIDDEN;
void ma_hwprio_stop(void) MA_HIDDEN;
const char *ma_hwprio_check(const char *value) MA_HIDDEN;
const char *ma_hwprio_policy_check(const char *value) MA_HIDDEN;

struct ma_step {
	const char *name;        /* for MARCEL_DEBUG_FAIL and messages */
	int (*start)(void);      /* 0, or an errno value with its own part undone */
	void (*quiesce)(void);   /* marcel_end, while main is alone and the workers run */
	void (*stop)(void);      /* marcel_end, once main is home on VP 0 */
	unsigned char say;       /* the loop says why start failed (the step does not) */
};

/* See ma_sched.h. Set by every failure of marcel_init, cleared by the step that marks the
 * runtime running (a later step that fails sets it again). Outside ma_rt, which
 * marcel_init clears. */
atomic_int ma_init_failed;

/* What the calls refused after a failed marcel_init say about it. */
static struct {
	ma_spinlock_t lock;               /* why and said: a refused call may race a new init */
	char why[160];                    /* what failed, for "marcel_init failed (...)" */
	int said;                         /* a refused call said so since that failure */
} ma_init_failure;

static void __attribute__((format(printf, 1, 2))) ma_init_failure_note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ma_spin_lock(&ma_init_failure.lock);
	vsnprintf(ma_init_failure.why, sizeof(ma_init_failure.why), fmt, ap);
	ma_init_failure.said = 0;
	ma_spin_unlock(&ma_init_failure.lock);
	va_end(ap);
	atomic_store_explicit(&ma_init_failed, 1, memory_order_release);
}

int ma_not_running(const char *call, int err)
{
	if (!atomic_load_explicit(&ma_init_failed, memory_order_acquire))
		return err;
	char why[sizeof(ma_init_failure.why)];
	ma_spin_lock(&ma_init_failure.lock);
	int say = !ma_init_failure.said;
	ma_init_failure.said = 1;
	memcpy(why, ma_init_failure.why, sizeof(why));
	ma_spin_unlock(&ma_init_failure.lock);
	/* Once per failure, not per call: a program that ignored it may call in a loop. */
	if (say)
		fprintf(stderr, "marcel: %s: the runtime is not running: marcel_init failed (%s); what needs the "
				"runtime fails until a marcel_init succeeds\n",
			call, why);
	return err;
}

static int ma_running_start(void)
{
	atomic_store_explicit(&ma_init_failed, 0, memory_order_relaxed);
	ma_rt.running = 1;
	return 0;
}

static int ma_tls_check_step(void)
{
	/* Before the other kernel threads start: they read what it finds. */
	if (ma_rt.opt.debug)
		ma_tls_check_start();
	return 0;
}

static const struct ma_step ma_steps[] = {
	{ "topology", ma_topology_start, NULL, ma_topology_stop, 0 },
	/* Before anything runs, so that the trace sees the whole run; after everything stops,
	 * so that every per-VP buffer is final. */
	{ "trace", ma_trace_start, NULL, ma_trace_stop, 0 },
	{ "runtime", ma_runtime_start, NULL, ma_runtime_stop, 1 },
	{ "overflow-handler", ma_overflow_handler_install, NULL, ma_overflow_handler_remove, 1 },
	{ "cpu-clock", ma_cpu_clock_step_start, NULL, ma_cpu_clock_stop, 1 },
	{ "bubbles", ma_bubbles_start, NULL, ma_bubbles_stop, 1 },
	/* Says why itself (an unknown MARCEL_BUBBLE_SCHEDULER lists the valid ones). Its stop
	 * is a quiesce part: a strategy's hooks may move main. */
	{ "strategies", ma_strategies_start, ma_strategies_stop, NULL, 0 },
	{ "running", ma_running_start, NULL, NULL, 0 },
	{ "tls-check", ma_tls_check_step, NULL, ma_tls_check_stop, 0 },
	/* Says why itself (a backend named in MARCEL_HWPRIO that cannot be used). Before the
	 * carriers: its hook is in place before any worker but VP 0's switches, and its stop
	 * part frees what the hook reads only once the workers have stopped. Its quiesce part
	 * (every backend puts back what it changed) runs after preemption's. */
	{ "hwprio", ma_hwprio_start, ma_hwprio_quiesce, ma_hwprio_stop, 0 },
	{ "carriers", ma_carriers_start, NULL, ma_carriers_stop, 1 },
	/* Says why itself (a time slice where preemption cannot work). */
	{ "preemption", ma_preempt_start, ma_preempt_stop, NULL, 0 },
	/* Started on first use (signal.c); given back to the kernel before main goes home. */
	{ "signals", NULL, ma_sig_stop, NULL, 0 },
};
#define MA_NB_STEPS (sizeof(ma_steps) / sizeof(ma_steps[0]))

/* The steps [0, n) were started: undo them. */
static void ma_steps_quiesce(unsigned n)
{
	while (n--)
		if (ma_steps[n].quiesce)
			ma_steps[n].quiesce();
}

static void ma_steps_stop(unsigned n)
{
	while (n--)
		if (ma_steps[n].stop)
			ma_steps[n].stop();
}

/* The step MARCEL_DEBUG_FAIL names (only read with MARCEL_DEBUG set), MA_NB_STEPS if
 * none; -1 (said why) if it names no step. */
static int ma_debug_fail_step(void)
{
	const char *v = ma_rt.opt.debug ? getenv("MARCEL_DEBUG_FAIL") : NULL;
	if (!v || !*v)
		return MA_NB_STEPS;
	for (unsigned i = 0; i < MA_NB_STEPS; i++)
		if (!strcmp(v, ma_steps[i].name))
			return (int)i;
	fprintf(stderr, "marcel: MARCEL_DEBUG_FAIL='%s': not a start-up step; one of:", v);
	for (unsigned i = 0; i < MA_NB_STEPS; i++)
		fprintf(stderr, " %s", ma_steps[i].name);
	fputc('\n', stderr);
	return -1;
}

static const char *ma_sched_check(const char *value)
{
	return ma_strategy_name_ok(value) ? NULL : ma_strategy_names();
}

static const struct ma_option_checks ma_checks = { ma_sched_check, ma_hwprio_check, ma_hwprio_policy_check };

/* The program's own marcel_init once the runtime started before main (ma_auto_init):
 * the call it was written to make succeeds; its --marcel-* arguments come too late to
 * apply, so they are taken out of argv (as always) and said to be ignored. */
static int ma_init_claim(int *argc, char **argv)
{
	ma_rt.auto_claimed = 1;
	int before = argc ? *argc : 0;
	struct ma_options *late = malloc(sizeof(*late));
	if (!late)
		return ENOMEM;
	int e = ma_options_parse(late, argc, argv, &ma_checks);
	free(late);
	if (!e && argc && *argc != before)
		fprintf(stderr, "marcel: the runtime started before main (<marcel/pthread.h> with "
				"MARCEL_PTHREAD_AUTO): --marcel-* arguments are ignored; set the MARCEL_* "
				"variables instead\n");
	return e;
}

int marcel_init(int *argc, char **argv)
{
	if (ma_rt.running) {
		if (ma_rt.auto_started && !ma_rt.auto_claimed && ma_task_self() == ma_rt.main_task)
			return ma_init_claim(argc, argv);
		return EBUSY;
	}
	memset(&ma_rt, 0, sizeof(ma_rt));
	ma_runtime_gen++;
	ma_rt.page_size = (size_t)sysconf(_SC_PAGESIZE);
	int e = ma_options_parse(&ma_rt.opt, argc, argv, &ma_checks);
	int fail = e ? -1 : ma_debug_fail_step();
	if (fail < 0) {
		memset(&ma_rt, 0, sizeof(ma_rt));
		if (e)
			ma_init_failure_note("a MARCEL_* variable or --marcel-* argument was refused: see the "
					     "line above");
		else
			ma_init_failure_note("MARCEL_DEBUG_FAIL names no start-up step");
		return e ? e : EINVAL;
	}
	unsigned n;
	for (n = 0; n < MA_NB_STEPS; n++) {
		const struct ma_step *s = &ma_steps[n];
		if (n == (unsigned)fail) {
			e = ECANCELED;
			fprintf(stderr, "marcel: MARCEL_DEBUG_FAIL=%s: this step fails on purpose\n", s->name);
		} else if (s->start && (e = s->start()) && s->say) {
			fprintf(stderr, "marcel: cannot start the runtime (%s): %s\n", s->name, strerror(e));
		}
		if (e)
			break;
	}
	if (!e)
		return 0;
	ma_steps_quiesce(n);
	ma_steps_stop(n);
	memset(&ma_rt, 0, sizeof(ma_rt));
	if (n == (unsigned)fail)
		ma_init_failure_note("its step %s failed on purpose: MARCEL_DEBUG_FAIL", ma_steps[n].name);
	else
		ma_init_failure_note("its step %s failed: %s", ma_steps[n].name, strerror(e));
	return e;
}

void ma_end(int all)
{
	if (!ma_rt.running)
		return;
	struct ma_worker *w = ma_worker_self();
	if (!w || ma_worker_current(w) != ma_rt.main_task) {
		fprintf(stderr, "marcel: marcel_end must be called by the thread that called marcel_init; "
				"ignored\n");
		return;
	}
	if (!ma_end_wait(w, all))
		return; /* POSIX threads left: the process ends with them, when main returns. */
	ma_steps_quiesce(MA_NB_STEPS);
	ma_main_home();
	ma_steps_stop(MA_NB_STEPS);
	memset(&ma_rt, 0, sizeof(ma_rt));
}

void marcel_end(void)
{
	ma_end(0);
}

/* Defined (weak, in every file) by <marcel/pthread.h> when MARCEL_PTHREAD_AUTO is set, as
 * the marcel-pthread pkg-config module does: the runtime then starts before main, so a
 * program that never calls marcel_init, or a file that made threads before it did, still
 * runs on marcel. */
extern const int marcel_pthread_auto __attribute__((weak));

__attribute__((constructor)) static void ma_auto_init(void)
{
	if (!&marcel_pthread_auto || ma_rt.running)
		return;
	int e = marcel_init(NULL, NULL);
	if (e) {
		/* What was wrong is on stderr already (a bad MARCEL_* variable, say). */
		fprintf(stderr, "marcel: cannot start the runtime before main: %s\n", strerror(e));
		exit(2);
	}
	ma_rt.auto_started = 1;
}
