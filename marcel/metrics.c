/*
 * Per-thread load metrics (ma_metrics.h): the application's hints, and the hardware
 * counters' measure where the kernel gives them.
 *
 * Counting. perf_event_open counts per kernel thread, and a marcel thread moves between
 * kernel threads: the counts are charged to marcel threads by the VP that ran them. Each
 * kernel thread of the process (/proc/self/task) gets a group of counters (instructions
 * leading; cache misses, level-1 data reads, and the processor's floating-point event when
 * arch/<cpu>/pmu.c knows one), user space only, which perf_event_paranoid 2 allows for a
 * process's own threads. A kernel thread bound to a VP's processor counts for that VP:
 * the workers and the spare carriers that take their VPs in blocking sections bind
 * themselves there, so this needs a real topology (a synthetic or XML one binds nothing).
 *
 * Attribution. A sample (at most every MA_METRICS_PERIOD_NS, when a view asks for metrics
 * or a program reads one) reads every group and sums each VP's counts since the previous
 * sample. The counts of a VP that switched nothing in between (its switch counters did
 * not move from before the previous sample's reads to after this one's) belong to the
 * one thread it ran all along; those of a VP that switched are dropped: a thread that
 * never runs a whole sample period without a switch is never measured, and its hint
 * stands. This costs the switches nothing, whether the counters are in use or not; a
 * finer attribution would read the counters at every switch, about a system call each.
 * A thread's measure decays by half at each sample that measures it, so that a new phase
 * of the program shows within a few periods.
 *
 * The counters were never run here: the machine this was written on has no hardware
 * performance monitoring unit (no /sys/bus/event_source/devices/cpu), so every open fails
 * and the hints are used (tests/check_contention.c checks that failure).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "ma_metrics.h"
#include "ma_sync.h"

_Static_assert(sizeof(((struct marcel_task *)0)->metric_hint) / sizeof(int32_t) == MA_METRIC_NB,
	       "a hint per metric");
_Static_assert(sizeof(((struct marcel_task *)0)->metric_count) / sizeof(uint64_t) == MA_METRIC_NB + 1,
	       "instructions and a count per metric");

/* The counters of a group, in the order of their values in a group read: instructions,
 * then the metrics that could be opened. */
#define MA_PMU_NB (MA_METRIC_NB + 1)
#define MA_PMU_INST MA_METRIC_NB

/* A window of fewer instructions says nothing about a rate. */
#define MA_METRICS_MIN_INST 100000ull

/* A kernel thread of the process and its group. */
struct ma_pmu_kt {
	pid_t tid;
	int fd[MA_PMU_NB];        /* the group: its leader first; fd[0] -1: no group */
	int vp;                   /* the VP whose processor it is bound to, -1: none */
	uint64_t last[MA_PMU_NB]; /* its counts at the previous sample */
	unsigned seen;            /* the scan that last listed it */
};

/* What the previous sample saw of a VP, and this one's scratch. */
struct ma_pmu_vp {
	unsigned long before;     /* this sample: switches before its reads */
	const struct marcel_task *now; /* this sample: the thread it ran before its reads */
	unsigned long switches;   /* switches and inline seeds, after its reads */
	const struct marcel_task *cur;
	uint64_t cur_id;
	int steady;               /* no switch during that sample's reads */
	uint64_t delta[MA_PMU_NB];
};

static struct {
	pthread_mutex_t lock;     /* one sample at a time; samplers never wait for it */
	_Atomic int state;        /* enum ma_perf_state */
	char why[256];
	int said;                 /* MARCEL_METRICS=perf: the failure was said */
	/* What each group holds: for counter slot s (enum ma_metric, then instructions), its
	 * place in a group read, -1 if it could not be opened. */
	int slot[MA_PMU_NB];
	unsigned nb_slots;
	uint64_t fp_config;
	int have_fp;
	struct ma_pmu_kt *kt;
	unsigned nb_kt, cap_kt, scan;
	struct ma_pmu_vp *vp;
	unsigned nb_vps;
	_Atomic uint64_t last_ns;
} ma_mx = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* ---- hints and reads ---- */

int ma_metric_hint(struct marcel_task *t, unsigned m, long long v)
{
	if (m >= MA_METRIC_NB || v > MA_METRIC_MAX)
		return EINVAL;
	atomic_store_explicit(&t->metric_hint[m], v < 0 ? 0 : (int32_t)v + 1, memory_order_relaxed);
	return 0;
}

unsigned ma_metrics_of(const struct marcel_task *t, float out[MA_METRIC_NB])
{
	unsigned mask = 0;
	int measured = atomic_load_explicit(&t->metric_of, memory_order_acquire) == t->id + 1;
	for (unsigned m = 0; m < MA_METRIC_NB; m++) {
		int32_t r = measured ? atomic_load_explicit(&t->metric_rate[m], memory_order_relaxed) : 0;
		if (!r)
			r = atomic_load_explicit(&t->metric_hint[m], memory_order_relaxed);
		if (r) {
			out[m] = (float)(r - 1);
			mask |= 1u << m;
		}
	}
	return mask;
}

long long ma_metric_get(struct marcel_task *t, unsigned m)
{
	if (m >= MA_METRIC_NB)
		return -1;
	(void)ma_metrics_refresh(0);
	float x[MA_METRIC_NB];
	return (ma_metrics_of(t, x) & (1u << m)) ? (long long)x[m] : -1;
}

enum ma_perf_state ma_metrics_perf_state(char *why, size_t len)
{
	int s = atomic_load(&ma_mx.state);
	if (why && len) {
		why[0] = 0;
		if (s == MA_PERF_FAILED && !pthread_mutex_lock(&ma_mx.lock)) {
			snprintf(why, len, "%s", ma_mx.why);
			pthread_mutex_unlock(&ma_mx.lock);
		}
	}
	return (enum ma_perf_state)s;
}

/* ---- the counters ---- */

static int ma_pmu_open(pid_t tid, int group, uint32_t type, uint64_t config)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = type;
	a.config = config;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.read_format = PERF_FORMAT_GROUP;
	return (int)syscall(SYS_perf_event_open, &a, tid, -1, group, PERF_FLAG_FD_CLOEXEC);
}

/* The event behind counter slot s. */
static int ma_pmu_event(unsigned s, uint32_t *type, uint64_t *config)
{
	switch (s) {
	case MA_PMU_INST:
		*type = PERF_TYPE_HARDWARE;
		*config = PERF_COUNT_HW_INSTRUCTIONS;
		return 1;
	case MA_METRIC_MISS:
		*type = PERF_TYPE_HARDWARE;
		*config = PERF_COUNT_HW_CACHE_MISSES;
		return 1;
	case MA_METRIC_MEMOP:
		*type = PERF_TYPE_HW_CACHE;
		*config = PERF_COUNT_HW_CACHE_L1D | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
			  (PERF_COUNT_HW_CACHE_RESULT_ACCESS << 16);
		return 1;
	case MA_METRIC_FP:
		*type = PERF_TYPE_RAW;
		*config = ma_mx.fp_config;
		return ma_mx.have_fp;
	default:
		return 0;
	}
}

/* Opens tid's group with the slots found at the probe into fd[] (ma_mx.nb_slots of them);
 * fd[0] is -1 if it could not be opened. */
static void ma_pmu_group(pid_t tid, int *fd)
{
	uint32_t type;
	uint64_t config;
	for (unsigned i = 0; i < MA_PMU_NB; i++)
		fd[i] = -1;
	ma_pmu_event(MA_PMU_INST, &type, &config);
	fd[0] = ma_pmu_open(tid, -1, type, config);
	if (fd[0] < 0)
		return;
	for (unsigned s = 0; s < MA_METRIC_NB; s++) {
		if (ma_mx.slot[s] < 0 || !ma_pmu_event(s, &type, &config))
			continue;
		int x = ma_pmu_open(tid, fd[0], type, config);
		/* The member's fd keeps its event: it is closed with the leader's. */
		fd[ma_mx.slot[s]] = x;
		if (x < 0) {
			/* Its counters would not line up with the others': no group at all. */
			for (unsigned i = 0; i < MA_PMU_NB; i++)
				if (fd[i] >= 0)
					close(fd[i]);
			fd[0] = -1;
			return;
		}
	}
}

static void ma_pmu_close(const int *fd)
{
	for (unsigned i = MA_PMU_NB; i-- > 0;)
		if (fd[i] >= 0)
			close(fd[i]);
}

/* The VP bound to tid's processor, -1 if it is bound to several or none. */
static int ma_pmu_vp_of(pid_t tid)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	if (sched_getaffinity(tid, sizeof(set), &set) || CPU_COUNT(&set) != 1)
		return -1;
	for (unsigned v = 0; v < ma_rt.nb_vps; v++)
		if (CPU_ISSET(ma_rt.topo.vps[v].pu_os, &set))
			return (int)v;
	return -1;
}

static void ma_pmu_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void ma_pmu_fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ma_mx.why, sizeof(ma_mx.why), fmt, ap);
	va_end(ap);
	atomic_store(&ma_mx.state, MA_PERF_FAILED);
	if (ma_rt.opt.metrics == MA_METRICS_PERF && !ma_mx.said) {
		ma_mx.said = 1;
		fprintf(stderr, "marcel: MARCEL_METRICS=perf: %s; the application's hints are used instead\n", ma_mx.why);
	}
}

/* Reads the first line of a small file into buf; 0 or -1. */
static int ma_read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	int ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* The first use: which events open here, on the caller's own kernel thread. Lock held. */
static void ma_pmu_probe(void)
{
	uint32_t type;
	uint64_t config;
	ma_pmu_event(MA_PMU_INST, &type, &config);
	int lead = ma_pmu_open(0, -1, type, config);
	if (lead < 0) {
		int e = errno;
		char paranoid[32] = "";
		if (access("/sys/bus/event_source/devices/cpu", F_OK))
			ma_pmu_fail("perf_event_open (instructions): %s; this machine shows no hardware performance "
				    "monitoring unit (no /sys/bus/event_source/devices/cpu)", strerror(e));
		else if ((e == EACCES || e == EPERM) &&
			 !ma_read_line("/proc/sys/kernel/perf_event_paranoid", paranoid, sizeof(paranoid)))
			ma_pmu_fail("perf_event_open (instructions): %s; kernel.perf_event_paranoid is %s (2 or less "
				    "lets a process count its own threads)", strerror(e), paranoid);
		else
			ma_pmu_fail("perf_event_open (instructions): %s", strerror(e));
		return;
	}
	if (ma_rt.topo.fake) {
		close(lead);
		ma_pmu_fail("the workers are not bound on a synthetic or XML topology (MARCEL_TOPOLOGY): their counts "
			    "cannot be told apart by VP");
		return;
	}
	char why[160];
	ma_mx.have_fp = !ma_pmu_fp_event(&ma_mx.fp_config, why, sizeof(why));
	/* Each metric's event on its own, in the group: one the processor lacks is left out. */
	ma_mx.nb_slots = 1;
	ma_mx.slot[MA_PMU_INST] = 0;
	for (unsigned s = 0; s < MA_METRIC_NB; s++) {
		ma_mx.slot[s] = -1;
		if (!ma_pmu_event(s, &type, &config))
			continue;
		int fd = ma_pmu_open(0, lead, type, config);
		if (fd >= 0) {
			close(fd);
			ma_mx.slot[s] = (int)ma_mx.nb_slots++;
		}
	}
	close(lead);
	ma_mx.vp = calloc(ma_rt.nb_vps, sizeof(*ma_mx.vp));
	if (!ma_mx.vp) {
		ma_pmu_fail("out of memory");
		return;
	}
	ma_mx.nb_vps = ma_rt.nb_vps;
	atomic_store(&ma_mx.state, MA_PERF_ON);
}

/* Lists the process's kernel threads: new ones get their group, gone ones lose it, each
 * one's VP is read again (a carrier binds itself when it takes a VP). Lock held. */
static void ma_pmu_scan(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return;
	ma_mx.scan++;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long tid = strtol(e->d_name, &end, 10);
		if (*end || tid <= 0)
			continue;
		unsigned i = 0;
		while (i < ma_mx.nb_kt && ma_mx.kt[i].tid != (pid_t)tid)
			i++;
		if (i == ma_mx.nb_kt) {
			if (ma_mx.nb_kt == ma_mx.cap_kt) {
				unsigned cap = ma_mx.cap_kt ? 2 * ma_mx.cap_kt : 16;
				struct ma_pmu_kt *k = realloc(ma_mx.kt, cap * sizeof(*k));
				if (!k)
					continue;
				ma_mx.kt = k;
				ma_mx.cap_kt = cap;
			}
			struct ma_pmu_kt *k = &ma_mx.kt[ma_mx.nb_kt++];
			*k = (struct ma_pmu_kt){ .tid = (pid_t)tid };
			ma_pmu_group(k->tid, k->fd);
		}
		ma_mx.kt[i].seen = ma_mx.scan;
		ma_mx.kt[i].vp = ma_pmu_vp_of((pid_t)tid);
	}
	closedir(d);
	for (unsigned i = 0; i < ma_mx.nb_kt;)
		if (ma_mx.kt[i].seen != ma_mx.scan) {
			ma_pmu_close(ma_mx.kt[i].fd);
			ma_mx.kt[i] = ma_mx.kt[--ma_mx.nb_kt];
		} else {
			i++;
		}
}

/* A VP's switches so far (inline seeds change its thread too). */
static unsigned long ma_pmu_switches(const struct ma_worker *w)
{
	return atomic_load_explicit(&w->nr_switches, memory_order_acquire) +
	       atomic_load_explicit(&w->nr_seed_runs, memory_order_acquire);
}

/* Charges a window's counts d to t, which ran it alone. Lock held. */
static void ma_pmu_charge(struct marcel_task *t, uint64_t id, const uint64_t *d)
{
	if (atomic_load_explicit(&t->metric_of, memory_order_relaxed) != id + 1) {
		memset(t->metric_count, 0, sizeof(t->metric_count));
		for (unsigned m = 0; m < MA_METRIC_NB; m++)
			atomic_store_explicit(&t->metric_rate[m], 0, memory_order_relaxed);
	}
	t->metric_count[0] = t->metric_count[0] / 2 + d[MA_PMU_INST];
	for (unsigned m = 0; m < MA_METRIC_NB; m++) {
		t->metric_count[m + 1] = t->metric_count[m + 1] / 2 + d[m];
		if (ma_mx.slot[m] < 0 || !t->metric_count[0])
			continue;
		uint64_t r = t->metric_count[m + 1] * 1000 / t->metric_count[0];
		atomic_store_explicit(&t->metric_rate[m], (int32_t)(r > MA_METRIC_MAX ? MA_METRIC_MAX : r) + 1,
				      memory_order_relaxed);
	}
	atomic_store_explicit(&t->metric_of, id + 1, memory_order_release);
}

/* One sample. Lock held, counters on. */
static void ma_pmu_sample(void)
{
	unsigned nv = ma_mx.nb_vps;
	for (unsigned v = 0; v < nv; v++) {
		struct ma_worker *w = &ma_rt.workers[v];
		struct ma_pmu_vp *p = &ma_mx.vp[v];
		p->before = ma_pmu_switches(w);
		p->now = atomic_load_explicit(&w->current, memory_order_acquire);
		memset(p->delta, 0, sizeof(p->delta));
	}
	ma_pmu_scan();
	for (unsigned i = 0; i < ma_mx.nb_kt; i++) {
		struct ma_pmu_kt *k = &ma_mx.kt[i];
		uint64_t buf[1 + MA_PMU_NB];
		if (k->fd[0] < 0 || read(k->fd[0], buf, sizeof(buf)) < (ssize_t)((1 + ma_mx.nb_slots) * sizeof(uint64_t)))
			continue;
		int whole = k->last[MA_PMU_INST] != 0;
		for (unsigned s = 0; s < MA_PMU_NB; s++) {
			if (ma_mx.slot[s] < 0)
				continue;
			uint64_t now = buf[1 + ma_mx.slot[s]];
			/* A new group counts from its opening: its first window is not whole. */
			if (whole && k->vp >= 0 && (unsigned)k->vp < nv)
				ma_mx.vp[k->vp].delta[s] += now - k->last[s];
			k->last[s] = now;
		}
	}
	for (unsigned v = 0; v < nv; v++) {
		struct ma_pmu_vp *p = &ma_mx.vp[v];
		unsigned long after = ma_pmu_switches(&ma_rt.workers[v]);
		const struct marcel_task *t = p->now;
		int steady = after == p->before;
		/* The same thread from before the previous sample's reads to after these. */
		if (steady && p->steady && p->switches == p->before && t && t == p->cur && !t->is_idle &&
		    t->id == p->cur_id && p->delta[MA_PMU_INST] >= MA_METRICS_MIN_INST)
			ma_pmu_charge((struct marcel_task *)(uintptr_t)t, p->cur_id, p->delta);
		p->switches = after;
		p->steady = steady;
		p->cur = t;
		p->cur_id = t ? t->id : 0;
	}
}

int ma_metrics_refresh(int for_strategy)
{
	int mode = ma_rt.opt.metrics;
	if (mode == MA_METRICS_OFF)
		return 0;
	if (mode == MA_METRICS_HINTS || (mode == MA_METRICS_AUTO && !for_strategy) || !ma_rt.running)
		return 1;
	int s = atomic_load_explicit(&ma_mx.state, memory_order_relaxed);
	if (s == MA_PERF_FAILED)
		return 1;
	uint64_t now = ma_clock_ns(), last = atomic_load_explicit(&ma_mx.last_ns, memory_order_relaxed);
	if (s == MA_PERF_ON && now - last < MA_METRICS_PERIOD_NS)
		return 1;
	if (pthread_mutex_trylock(&ma_mx.lock))
		return 1;
	if (atomic_load(&ma_mx.state) == MA_PERF_UNTRIED)
		ma_pmu_probe();
	if (atomic_load(&ma_mx.state) == MA_PERF_ON) {
		ma_pmu_sample();
		atomic_store_explicit(&ma_mx.last_ns, now, memory_order_relaxed);
	}
	pthread_mutex_unlock(&ma_mx.lock);
	return 1;
}

void ma_metrics_stop(void)
{
	pthread_mutex_lock(&ma_mx.lock);
	for (unsigned i = 0; i < ma_mx.nb_kt; i++)
		ma_pmu_close(ma_mx.kt[i].fd);
	free(ma_mx.kt);
	free(ma_mx.vp);
	ma_mx.kt = NULL;
	ma_mx.vp = NULL;
	ma_mx.nb_kt = ma_mx.cap_kt = ma_mx.nb_vps = 0;
	ma_mx.why[0] = 0;
	ma_mx.said = 0;
	atomic_store(&ma_mx.last_ns, 0);
	atomic_store(&ma_mx.state, MA_PERF_UNTRIED);
	pthread_mutex_unlock(&ma_mx.lock);
}
