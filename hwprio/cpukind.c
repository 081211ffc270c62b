/*
 * cpukind: on a machine with several kinds of cores (hybrid x86, big.LITTLE; hwloc's
 * cpukinds), the raised workers run on the fastest kind and the lowered ones on the most
 * efficient. A level rebinds the calling kernel thread: above 0 to every CPU of the
 * fastest kind, below 0 to every CPU of the most efficient one (the kernel picks the CPU
 * within), 0 back to the CPUs it was bound to before (its own PU, marcel_init's binding).
 * Binding to the kind rather than to one CPU of it lets two raised workers share the fast
 * cores with the kernel balancing them, and needs no pairing of workers to swap.
 *
 * It needs the machine's own topology: on a synthetic or XML one the workers are not
 * bound and the kinds' CPUs are not this machine's, so the probe says absent.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include "ma_hwprio.h"
#include "ma_cpukind.h"

#define MA_HW_CK_MAX_THREADS 1024

struct ma_hw_ck_saved {
	pid_t tid;
	cpu_set_t before;
	int level;
};

struct ma_hw_ck {
	pthread_mutex_t lock;
	int inited;
	cpu_set_t fast, slow;
	int (*setaffinity)(pid_t tid, size_t size, const cpu_set_t *set);
	int (*getaffinity)(pid_t tid, size_t size, cpu_set_t *set);
	unsigned n;
	struct ma_hw_ck_saved saved[MA_HW_CK_MAX_THREADS];
};

static void ma_hw_ck_set_of(const struct ma_hw_kind *k, cpu_set_t *set)
{
	CPU_ZERO(set);
	for (unsigned c = 0; c < MA_HW_MAX_CPUS && c < CPU_SETSIZE; c++)
		if (k->cpus[c / (8 * sizeof(unsigned long))] >> (c % (8 * sizeof(unsigned long))) & 1)
			CPU_SET(c, set);
}

/* The fastest and the most efficient kinds: -1 if there are fewer than two. */
void ma_hw_ck_pick(const struct ma_hw_env *env, int *fast, int *slow)
{
	*fast = *slow = -1;
	for (unsigned k = 0; k < env->nb_kinds; k++) {
		if (*fast < 0 || env->kinds[k].efficiency > env->kinds[*fast].efficiency)
			*fast = (int)k;
		if (*slow < 0 || env->kinds[k].efficiency < env->kinds[*slow].efficiency)
			*slow = (int)k;
	}
	if (*fast == *slow)
		*fast = *slow = -1;
}

static enum ma_hw_presence ma_hw_ck_probe(const struct ma_hw_env *env, struct ma_hw_why *why)
{
	int fast, slow;
	ma_hw_ck_pick(env, &fast, &slow);
	if (env->nb_kinds < 2 || fast < 0) {
		ma_hw_fail(why, ENODEV, "%s", env->nb_kinds ? "every core is of one kind (hwloc cpukinds)"
							       : "no core kinds known: one kind of core (or the runtime is not running)");
		return MA_HW_ABSENT;
	}
	if (!env->bound) {
		ma_hw_fail(why, ENODEV, "the topology is synthetic or XML: its core kinds are not this machine's CPUs, "
				       "and the workers are not bound");
		return MA_HW_ABSENT;
	}
	return MA_HW_PRESENT;
}

void ma_hw_ck_set_calls(void *priv, int (*set)(pid_t, size_t, const cpu_set_t *), int (*get)(pid_t, size_t, cpu_set_t *))
{
	struct ma_hw_ck *c = priv;
	c->setaffinity = set;
	c->getaffinity = get;
}

int ma_hw_ck_prepare(void *priv, const struct ma_hw_env *env, struct ma_hw_why *why)
{
	struct ma_hw_ck *c = priv;
	int fast, slow;
	ma_hw_ck_pick(env, &fast, &slow);
	if (fast < 0)
		return ma_hw_fail(why, ENODEV, "fewer than two kinds of cores");
	ma_hw_ck_set_of(&env->kinds[fast], &c->fast);
	ma_hw_ck_set_of(&env->kinds[slow], &c->slow);
	if (!c->inited) {
		pthread_mutex_init(&c->lock, NULL);
		c->inited = 1;
	}
	if (!c->setaffinity)
		ma_hw_ck_set_calls(c, sched_setaffinity, sched_getaffinity);
	return 0;
}

static int ma_hw_ck_start(void *priv, const struct ma_hw_env *env, struct ma_hw_why *why)
{
	if (ma_hw_ck_probe(env, why) != MA_HW_PRESENT)
		return ENODEV;
	return ma_hw_ck_prepare(priv, env, why);
}

static struct ma_hw_ck_saved *ma_hw_ck_find(struct ma_hw_ck *c, pid_t tid)
{
	for (unsigned i = 0; i < c->n; i++)
		if (c->saved[i].tid == tid)
			return &c->saved[i];
	return NULL;
}

static int ma_hw_ck_apply(void *priv, const struct ma_hw_target *t, int level, struct ma_hw_why *why)
{
	struct ma_hw_ck *c = priv;
	if (level < MA_HW_LEVEL_MIN || level > MA_HW_LEVEL_MAX)
		return ma_hw_fail(why, EINVAL, "level %d is outside cpukind's reach: -2..2", level);
	pthread_mutex_lock(&c->lock);
	struct ma_hw_ck_saved *s = ma_hw_ck_find(c, t->tid);
	int e = 0;
	if (!s && level) {
		if (c->n == MA_HW_CK_MAX_THREADS) {
			e = ma_hw_fail(why, ENOSPC, "more than %d kernel threads moved", MA_HW_CK_MAX_THREADS);
			goto out;
		}
		s = &c->saved[c->n];
		s->tid = t->tid;
		s->level = 0;
		if (c->getaffinity(t->tid, sizeof(s->before), &s->before)) {
			e = ma_hw_fail(why, errno, "thread %d: cannot read its CPUs: %s", (int)t->tid, strerror(errno));
			goto out;
		}
		c->n++;
	}
	if (!s || s->level == level)
		goto out; /* never moved and asked for 0, or already there */
	const cpu_set_t *to = level > 0 ? &c->fast : level < 0 ? &c->slow : &s->before;
	if (c->setaffinity(t->tid, sizeof(*to), to)) {
		e = errno;
		ma_hw_fail(why, e, "thread %d (VP %u), level %+d: cannot bind it to the %s cores: %s", (int)t->tid, t->vp, level,
			   level > 0 ? "fastest" : level < 0 ? "most efficient" : "its own", strerror(e));
		goto out;
	}
	s->level = level;
out:
	pthread_mutex_unlock(&c->lock);
	return e;
}

/* Every thread it moved back to its CPUs; one that ended is not an error. */
static int ma_hw_ck_reset(void *priv, struct ma_hw_why *why)
{
	struct ma_hw_ck *c = priv;
	if (!c->inited)
		return 0;
	int e = 0;
	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < c->n; i++) {
		struct ma_hw_ck_saved *s = &c->saved[i];
		if (s->level && c->setaffinity(s->tid, sizeof(s->before), &s->before) && errno != ESRCH && !e)
			e = ma_hw_fail(why, errno, "thread %d back to its CPUs: %s", (int)s->tid, strerror(errno));
		s->level = 0;
	}
	c->n = 0;
	pthread_mutex_unlock(&c->lock);
	return e;
}

static void ma_hw_ck_stop(void *priv)
{
	struct ma_hw_ck *c = priv;
	if (c->inited)
		pthread_mutex_destroy(&c->lock);
}

const struct ma_hw_backend ma_hw_cpukind = {
	.name = "cpukind",
	.desc = "raised workers on the fastest kind of cores, lowered ones on the most efficient",
	.lo = MA_HW_LEVEL_MIN,
	.hi = MA_HW_LEVEL_MAX,
	.priv_size = sizeof(struct ma_hw_ck),
	.probe = ma_hw_ck_probe,
	.start = ma_hw_ck_start,
	.apply = ma_hw_ck_apply,
	.reset = ma_hw_ck_reset,
	.stop = ma_hw_ck_stop,
};
