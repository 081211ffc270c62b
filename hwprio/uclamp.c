/*
 * uclamp: Linux's per-thread utilisation clamps (sched_setattr with
 * SCHED_FLAG_UTIL_CLAMP_MIN|MAX, kernel 5.3 and later with CONFIG_UCLAMP_TASK). The
 * scheduler takes a thread's utilisation as at least util_min and at most util_max when it
 * places the thread on a CPU and, with the schedutil governor, when it picks the CPU's
 * frequency: a raised worker runs on a big core at a high frequency, a lowered one on a
 * little core, slowly. The clamps belong to the thread, so a worker sets its own.
 *
 * Levels (each sets both clamps; `min0`/`max0` are the thread's clamps before its first
 * apply, and no level moves a clamp the other way than its sign says):
 *   +2  util_min max(min0, 1024)          util_max max(max0, util_min)
 *   +1  util_min max(min0, 512)           util_max max(max0, util_min)
 *    0  min0, max0: the thread as it was
 *   -1  util_max min(max0, 512)           util_min min(min0, util_max)
 *   -2  util_max min(max0, 128)           util_min min(min0, util_max)
 *
 * Writing back a clamp as the kernel's default (util_min 0 of a non-real-time thread,
 * util_max 1024) uses -1, "back to the default", rather than the number: the kernel keeps
 * whether a thread's clamp was asked for (an RT thread's util_min follows
 * sched_util_clamp_min_rt_default only while it was not), and sched_getattr does not say.
 * A thread never clamped (nearly all) is then left exactly as it was.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "ma_hwprio.h"

/* The kernel's struct sched_attr as of 5.3 (include/uapi/linux/sched/types.h), under our
 * own name: glibc declares one from 2.41 on. */
struct ma_hw_sched_attr {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime;
	uint64_t sched_deadline;
	uint64_t sched_period;
	uint32_t sched_util_min;
	uint32_t sched_util_max;
};

#define MA_HW_UC_SIZE 56 /* SCHED_ATTR_SIZE_VER1: the first with the clamps */
_Static_assert(sizeof(struct ma_hw_sched_attr) == MA_HW_UC_SIZE, "struct sched_attr of Linux 5.3 is 56 bytes");

/* include/uapi/linux/sched.h */
#define MA_HW_UC_KEEP_ALL 0x18 /* KEEP_POLICY | KEEP_PARAMS: policy, nice, RT priority stay */
#define MA_HW_UC_CLAMP 0x60    /* UTIL_CLAMP_MIN | UTIL_CLAMP_MAX */
#define MA_HW_UC_SCALE 1024u   /* SCHED_CAPACITY_SCALE: a CPU's whole capacity */
#define MA_HW_UC_DEFAULT UINT32_MAX /* -1: the clamp back to the kernel's default */

#define MA_HW_UC_SCHED_FIFO 1
#define MA_HW_UC_SCHED_RR 2
#define MA_HW_UC_SCHED_DEADLINE 6

/* A thread apply changed: its clamps as they were. */
struct ma_hw_uc_saved {
	pid_t tid;
	uint32_t policy; /* its policy then, which says what -1 gives back */
	uint32_t min, max;
};

struct ma_hw_uc {
	pthread_mutex_t lock; /* the table, against applies on other targets and reset */
	struct ma_hw_uc_saved *saved;
	unsigned n, cap;
};

static long ma_hw_uc_get(pid_t tid, struct ma_hw_sched_attr *a)
{
	memset(a, 0, sizeof(*a));
	return syscall(SYS_sched_getattr, tid, a, (unsigned)sizeof(*a), 0u);
}

/* Sets tid's clamps, leaving its policy and parameters: 0 or an errno. */
static int ma_hw_uc_set(pid_t tid, uint32_t policy, uint32_t min, uint32_t max)
{
	int rt = policy == MA_HW_UC_SCHED_FIFO || policy == MA_HW_UC_SCHED_RR;
	struct ma_hw_sched_attr a = {
		.size = MA_HW_UC_SIZE,
		.sched_flags = MA_HW_UC_KEEP_ALL | MA_HW_UC_CLAMP,
		.sched_util_min = min == 0 && !rt ? MA_HW_UC_DEFAULT : min,
		.sched_util_max = max == MA_HW_UC_SCALE ? MA_HW_UC_DEFAULT : max,
	};
	return syscall(SYS_sched_setattr, tid, &a, 0u) ? errno : 0;
}

/* What an EPERM from sched_setattr means here: with KEEP_ALL no limit of the caller's
 * own thread is crossed, so it is a deadline thread or a security module. */
static const char *ma_hw_uc_eperm(uint32_t policy)
{
	return policy == MA_HW_UC_SCHED_DEADLINE
		       ? "the thread runs SCHED_DEADLINE: any sched_setattr on it needs CAP_SYS_NICE"
		       : "a security module (LSM) or seccomp filter refuses sched_setattr without CAP_SYS_NICE";
}

/* Reads the calling thread's clamps and writes them back unchanged: the only way to learn
 * whether the kernel clamps (no file says so without /proc/config.gz). */
static enum ma_hw_presence ma_hw_uc_probe(const struct ma_hw_env *env, struct ma_hw_why *why)
{
	(void)env;
	struct ma_hw_sched_attr a;
	if (ma_hw_uc_get(0, &a)) {
		int e = errno;
		ma_hw_fail(why, e, "sched_getattr: %s%s", strerror(e),
			   e == ENOSYS ? " (Linux before 3.14, or a seccomp filter)" : "");
		return e == EPERM ? MA_HW_NEEDS_PRIVILEGE : MA_HW_ABSENT;
	}
	/* A kernel before 5.3 fills only its own 48 bytes and says so in size. */
	if (a.size < MA_HW_UC_SIZE) {
		ma_hw_fail(why, ENOTSUP, "the kernel's struct sched_attr is %u bytes, without the clamps (Linux before 5.3)",
			   a.size);
		return MA_HW_ABSENT;
	}
	int e = ma_hw_uc_set(0, a.sched_policy, a.sched_util_min, a.sched_util_max);
	switch (e) {
	case 0:
		return MA_HW_PRESENT;
	case EOPNOTSUPP:
		ma_hw_fail(why, e, "the kernel has no utilisation clamping: CONFIG_UCLAMP_TASK is off");
		return MA_HW_ABSENT;
	case EPERM:
		ma_hw_fail(why, e, "sched_setattr: %s: %s", strerror(e), ma_hw_uc_eperm(a.sched_policy));
		return MA_HW_NEEDS_PRIVILEGE;
	case ENOSYS:
		ma_hw_fail(why, e, "no sched_setattr system call (Linux before 3.14, or a seccomp filter)");
		return MA_HW_ABSENT;
	default:
		ma_hw_fail(why, e, "sched_setattr of the clamps on this thread fails: %s", strerror(e));
		return MA_HW_ABSENT;
	}
}

static int ma_hw_uc_start(void *priv, const struct ma_hw_env *env, struct ma_hw_why *why)
{
	struct ma_hw_uc *u = priv;
	(void)env;
	int e = pthread_mutex_init(&u->lock, NULL);
	return e ? ma_hw_fail(why, e, "cannot create a lock: %s", strerror(e)) : 0;
}

static uint32_t ma_hw_uc_max(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

static uint32_t ma_hw_uc_min(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* The clamps of level from the thread's original ones (the table in the file's head). */
static void ma_hw_uc_of_level(const struct ma_hw_uc_saved *s, int level, uint32_t *min, uint32_t *max)
{
	static const uint32_t raise[] = { 0, 512, MA_HW_UC_SCALE }, lower[] = { 0, 512, 128 };
	*min = s->min;
	*max = s->max;
	if (level > 0) {
		*min = ma_hw_uc_max(s->min, raise[level]);
		*max = ma_hw_uc_max(s->max, *min);
	} else if (level < 0) {
		*max = ma_hw_uc_min(s->max, lower[-level]);
		*min = ma_hw_uc_min(s->min, *max);
	}
}

static struct ma_hw_uc_saved *ma_hw_uc_find(struct ma_hw_uc *u, pid_t tid)
{
	for (unsigned i = 0; i < u->n; i++)
		if (u->saved[i].tid == tid)
			return &u->saved[i];
	return NULL;
}

static int ma_hw_uc_apply_locked(struct ma_hw_uc *u, pid_t tid, int level, struct ma_hw_why *why)
{
	struct ma_hw_uc_saved *s = ma_hw_uc_find(u, tid), fresh;
	if (!s) {
		if (!level)
			return 0; /* never changed: it is as it was */
		/* Room first, so that nothing fails once the thread is changed. */
		if (u->n == u->cap) {
			unsigned cap = u->cap ? 2 * u->cap : 8;
			struct ma_hw_uc_saved *v = realloc(u->saved, cap * sizeof(*v));
			if (!v)
				return ma_hw_fail(why, ENOMEM, "thread %d, level %+d: no memory to remember its clamps", (int)tid, level);
			u->saved = v;
			u->cap = cap;
		}
		struct ma_hw_sched_attr a;
		if (ma_hw_uc_get(tid, &a)) {
			int e = errno;
			if (e == ESRCH)
				return ma_hw_fail(why, e, "thread %d, level %+d: the thread is gone", (int)tid, level);
			return ma_hw_fail(why, e, "thread %d, level %+d: sched_getattr: %s", (int)tid, level, strerror(e));
		}
		if (a.size < MA_HW_UC_SIZE)
			return ma_hw_fail(why, ENOTSUP,
					  "thread %d, level %+d: the kernel's struct sched_attr has no clamps (Linux before 5.3)",
					  (int)tid, level);
		fresh = (struct ma_hw_uc_saved){ .tid = tid, .policy = a.sched_policy, .min = a.sched_util_min,
						 .max = a.sched_util_max };
		s = &fresh;
	}
	uint32_t min, max;
	ma_hw_uc_of_level(s, level, &min, &max);
	int e = ma_hw_uc_set(tid, s->policy, min, max);
	if (e == ESRCH)
		return ma_hw_fail(why, e, "thread %d, level %+d: the thread is gone", (int)tid, level);
	if (e) {
		char hint[160] = "";
		if (e == EOPNOTSUPP)
			snprintf(hint, sizeof(hint), " (the kernel has no utilisation clamping: CONFIG_UCLAMP_TASK is off)");
		else if (e == EPERM)
			snprintf(hint, sizeof(hint), " (%s)", ma_hw_uc_eperm(s->policy));
		return ma_hw_fail(why, e, "thread %d, level %+d (util_min %u, util_max %u): sched_setattr: %s%s", (int)tid,
				  level, min, max, strerror(e), hint);
	}
	if (s == &fresh)
		u->saved[u->n++] = fresh;
	return 0;
}

static int ma_hw_uc_apply(void *priv, const struct ma_hw_target *t, int level, struct ma_hw_why *why)
{
	struct ma_hw_uc *u = priv;
	if (level < MA_HW_LEVEL_MIN || level > MA_HW_LEVEL_MAX)
		return ma_hw_fail(why, EINVAL, "level %d is not a uclamp level: it sets levels %d..+%d", level, MA_HW_LEVEL_MIN,
				  MA_HW_LEVEL_MAX);
	/* The table holds real tids: reset runs on another thread, where 0 would be itself. */
	pid_t tid = t->tid ? t->tid : (pid_t)syscall(SYS_gettid);
	pthread_mutex_lock(&u->lock);
	int e = ma_hw_uc_apply_locked(u, tid, level, why);
	pthread_mutex_unlock(&u->lock);
	return e;
}

/* Each thread changed back to its clamps; a thread that ended is no error. Only threads
 * of this process are touched (tgkill with no signal tells): a tid that ended may be
 * another process's now. Threads that could not be put back stay in the table. */
static int ma_hw_uc_reset(void *priv, struct ma_hw_why *why)
{
	struct ma_hw_uc *u = priv;
	int first = 0;
	unsigned kept = 0;
	pid_t self = getpid();
	pthread_mutex_lock(&u->lock);
	for (unsigned i = 0; i < u->n; i++) {
		const struct ma_hw_uc_saved *s = &u->saved[i];
		if (syscall(SYS_tgkill, self, s->tid, 0) && errno == ESRCH)
			continue;
		int e = ma_hw_uc_set(s->tid, s->policy, s->min, s->max);
		if (!e || e == ESRCH)
			continue;
		if (!first)
			first = ma_hw_fail(why, e, "thread %d back to util_min %u, util_max %u: sched_setattr: %s", (int)s->tid,
					   s->min, s->max, strerror(e));
		u->saved[kept++] = *s;
	}
	u->n = kept;
	pthread_mutex_unlock(&u->lock);
	return first;
}

static void ma_hw_uc_stop(void *priv)
{
	struct ma_hw_uc *u = priv;
	free(u->saved);
	pthread_mutex_destroy(&u->lock);
}

const struct ma_hw_backend ma_hw_uclamp = {
	.name = "uclamp",
	.desc = "Linux per-thread utilisation clamps (sched_setattr util_min/util_max, steering CPU choice and frequency)",
	.lo = MA_HW_LEVEL_MIN,
	.hi = MA_HW_LEVEL_MAX,
	.priv_size = sizeof(struct ma_hw_uc),
	.probe = ma_hw_uc_probe,
	.start = ma_hw_uc_start,
	.apply = ma_hw_uc_apply,
	.reset = ma_hw_uc_reset,
	.stop = ma_hw_uc_stop,
};
