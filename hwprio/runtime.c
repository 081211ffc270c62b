/*
 * hwprio in the running library: the start and stop steps (marcel/startup.c), the
 * per-VP levels and their application, the public calls of <marcel/hwprio.h>.
 *
 * Levels reach the backends through the workers themselves: a backend's apply acts on the
 * calling kernel thread, and a VP moves between kernel threads (blocking sections). So
 * whoever sets a VP's level only records it and bumps the VP's generation; the worker,
 * at its next switch (the core's hwprio hook), applies what changed to the kernel thread
 * it runs on, and again whenever it finds itself on another kernel thread. A backend that
 * fails is reset (every thread it moved goes back) and dropped, with one line saying why.
 *
 * This file is the only one of hwprio/ compiled with the core's headers (like
 * strategies/registry.c): the backends and the policy know nothing of the runtime.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "ma_sched.h"
#include "ma_hooks.h"
#include "ma_trace.h"
#include "ma_hwprio.h"
#include "marcel/hwprio.h"
#include "marcel/thread.h"

#define MA_HW_MAX_ACTIVE 8

struct ma_hw_active {
	const struct ma_hw_backend *b;
	void *priv;
	int failed; /* reset and dropped: applies nothing more */
};

/* What a VP was asked for, and what its worker applied where. */
struct ma_hw_vp {
	_Atomic int level;          /* on the shared scale, as asked */
	_Atomic unsigned gen;       /* bumped with each change of level */
	unsigned applied_gen;       /* written by the VP's worker only */
	const void *applied_carrier; /* the kernel thread it applied on */
};

static struct {
	pthread_mutex_t lock;       /* applies against the reset at marcel_end and failures */
	int closing;                /* under lock: apply nothing more */
	unsigned n;
	struct ma_hw_active a[MA_HW_MAX_ACTIVE];
	struct ma_hw_env env;
	struct ma_hw_policy_params params;
	struct ma_hw_vp *vp;
	unsigned nb_vps;
	void (*apply_self[MA_HW_MAX_ACTIVE])(int level);
	unsigned nb_self;
} ma_hw = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void ma_hw_env_read(struct ma_hw_env *env)
{
	const char *s = getenv("MARCEL_HWPRIO_SYSFS"), *r = getenv("MARCEL_HWPRIO_RESCTRL");
	env->sysfs = s && *s ? s : "/sys";
	env->resctrl = r && *r ? r : "/sys/fs/resctrl";
}

/* The ancestor of VP v's leaf that has kind k, -1 if none. */
static int ma_hw_item_of(unsigned v, enum ma_level_kind k)
{
	for (const struct ma_level *l = ma_rt.topo.vps[v].leaf; l; l = l->parent)
		if (l->kinds & k)
			return (int)l->index;
	return -1;
}

static struct ma_hw_target ma_hw_target_self(unsigned v)
{
	const struct ma_level *leaf = ma_rt.topo.vps[v].leaf;
	return (struct ma_hw_target){
		.vp = v,
		.tid = (pid_t)syscall(SYS_gettid),
		.cpu = ma_rt.topo.fake ? -1 : (int)ma_rt.topo.vps[v].pu_os,
		.core = ma_hw_item_of(v, MA_LEVEL_CORE),
		.cache = ma_hw_item_of(v, MA_LEVEL_L3),
		.node = leaf ? leaf->numa : -1,
		.kind = leaf ? leaf->cpukind : -1,
	};
}

static int ma_hw_clamp(int level, const struct ma_hw_backend *b)
{
	return level < b->lo ? b->lo : level > b->hi ? b->hi : level;
}

/* Backend i failed on VP v: everything it changed goes back, and it is dropped. Called
 * with the lock held. */
static void ma_hw_drop_locked(unsigned i, unsigned v, const struct ma_hw_why *why)
{
	struct ma_hw_active *a = &ma_hw.a[i];
	fprintf(stderr, "marcel: hwprio: %s failed on VP%u: %s; it is turned off\n", a->b->name, v, why->s);
	a->failed = 1;
	struct ma_hw_why w = { "" };
	if (a->b->reset && a->b->reset(a->priv, &w))
		fprintf(stderr, "marcel: hwprio: %s: cannot undo its changes: %s\n", a->b->name, w.s);
}

/* The core's hook, after each switch of worker w while hwprio runs, in the context
 * switched to (the core loads the hook relaxed; the fence pairs with the release that
 * published it). */
static void ma_hw_switched(struct ma_worker *w)
{
	atomic_thread_fence(memory_order_acquire);
	struct ma_hw_vp *s = &ma_hw.vp[w->vp];
	unsigned gen = atomic_load_explicit(&s->gen, memory_order_acquire);
	int level = atomic_load_explicit(&s->level, memory_order_relaxed);
	for (unsigned i = 0; i < ma_hw.nb_self; i++)
		ma_hw.apply_self[i](level);
	if (gen == s->applied_gen && s->applied_carrier == (const void *)w->carrier)
		return;
	/* Not preempted from here to the end: the lock is not a marcel lock (a preempted
	 * holder would leave the next thread of this VP spinning on its own kernel thread),
	 * and the target is this kernel thread, which a migrated thread would leave. A busy
	 * lock (a failure being undone, marcel_end) means: again at the next switch. */
	marcel_thread_preemption_disable();
	if (!pthread_mutex_trylock(&ma_hw.lock)) {
		if (!ma_hw.closing) {
			struct ma_hw_target t = ma_hw_target_self(w->vp);
			for (unsigned i = 0; i < ma_hw.n; i++) {
				struct ma_hw_active *a = &ma_hw.a[i];
				struct ma_hw_why why = { "" };
				if (!a->failed && a->b->apply(a->priv, &t, ma_hw_clamp(level, a->b), &why))
					ma_hw_drop_locked(i, w->vp, &why);
			}
			MA_TRACE(MA_TR_HWPRIO, w->vp, (uint64_t)(int64_t)level, ma_hw.a[0].b->name);
		}
		pthread_mutex_unlock(&ma_hw.lock);
		s->applied_gen = gen;
		s->applied_carrier = w->carrier;
	}
	marcel_thread_preemption_enable();
}

/* Asks VP v for level: its worker applies it at its next switch. */
static void ma_hw_vp_set(unsigned v, int level)
{
	struct ma_hw_vp *s = &ma_hw.vp[v];
	if (atomic_load_explicit(&s->level, memory_order_relaxed) == level)
		return;
	atomic_store_explicit(&s->level, level, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->gen, 1, memory_order_release);
}

/* Stops and frees the first n started backends (their reset already done or not
 * needed). */
static void ma_hw_free(unsigned n)
{
	for (unsigned i = n; i--;) {
		if (ma_hw.a[i].b->stop)
			ma_hw.a[i].b->stop(ma_hw.a[i].priv);
		free(ma_hw.a[i].priv);
	}
	ma_hw.n = 0;
	ma_hw.nb_self = 0;
	free(ma_hw.vp);
	ma_hw.vp = NULL;
}

static void ma_hw_reset_all(void)
{
	for (unsigned i = ma_hw.n; i--;) {
		struct ma_hw_active *a = &ma_hw.a[i];
		struct ma_hw_why why = { "" };
		if (!a->failed && a->b->reset && a->b->reset(a->priv, &why))
			fprintf(stderr, "marcel: hwprio: %s: cannot undo its changes: %s\n", a->b->name, why.s);
	}
}

/* Starts backend b: 0, or an errno after saying why (named: it was asked for by name). */
static int ma_hw_start_one(const struct ma_hw_backend *b, int named)
{
	struct ma_hw_why why = { "" };
	enum ma_hw_presence p = b->probe(&ma_hw.env, &why);
	if (p != MA_HW_PRESENT) {
		if (!named)
			return 0;
		fprintf(stderr, "marcel: MARCEL_HWPRIO=%s: backend %s is %s: %s\n", ma_rt.opt.hwprio, b->name,
			ma_hw_presence_name(p), why.s);
		return p == MA_HW_NEEDS_PRIVILEGE ? EPERM : ENOTSUP;
	}
	struct ma_hw_active *a = &ma_hw.a[ma_hw.n];
	*a = (struct ma_hw_active){ .b = b, .priv = calloc(1, b->priv_size ? b->priv_size : 1) };
	if (!a->priv)
		return ENOMEM;
	int e = b->start ? b->start(a->priv, &ma_hw.env, &why) : 0;
	if (e) {
		free(a->priv);
		if (!named)
			return 0;
		fprintf(stderr, "marcel: MARCEL_HWPRIO=%s: backend %s cannot start: %s\n", ma_rt.opt.hwprio, b->name,
			why.s);
		return e;
	}
	if (b->apply_self)
		ma_hw.apply_self[ma_hw.nb_self++] = b->apply_self;
	ma_hw.n++;
	return 0;
}

int ma_hwprio_start(void)
{
	if (!ma_rt.opt.hwprio)
		return 0;
	struct ma_hw_choice c;
	struct ma_hw_why why;
	if (ma_hw_choice_parse(ma_rt.opt.hwprio, &c, &why)) {
		fprintf(stderr, "marcel: MARCEL_HWPRIO=%s: %s\n", ma_rt.opt.hwprio, why.s);
		return EINVAL;
	}
	enum ma_hw_policy_kind kind = MA_HWP_DLRB;
	if (ma_rt.opt.hwprio_policy && ma_hw_policy_find(ma_rt.opt.hwprio_policy, &kind)) {
		fprintf(stderr, "marcel: MARCEL_HWPRIO_POLICY=%s: expected %s\n", ma_rt.opt.hwprio_policy,
			ma_hwprio_policy_check(ma_rt.opt.hwprio_policy));
		return EINVAL;
	}
	ma_hw_policy_defaults(&ma_hw.params, kind);
	ma_hw_env_read(&ma_hw.env);
	ma_hw.nb_vps = ma_rt.nb_vps;
	ma_hw.vp = calloc(ma_rt.nb_vps, sizeof(*ma_hw.vp));
	if (!ma_hw.vp)
		return ENOMEM;
	ma_hw.closing = 0;
	int e = 0;
	if (c.automatic) {
		for (unsigned i = 0; i < ma_hw_nb_backends && !e && ma_hw.n < MA_HW_MAX_ACTIVE; i++)
			if (strcmp(ma_hw_backends[i]->name, "none"))
				e = ma_hw_start_one(ma_hw_backends[i], 0);
	} else {
		for (unsigned i = 0; i < c.n && !e; i++)
			e = ma_hw_start_one(c.named[i], 1);
	}
	if (e || !ma_hw.n) {
		ma_hw_reset_all();
		ma_hw_free(ma_hw.n);
		return e;
	}
	for (unsigned v = 0; v < ma_hw.nb_vps; v++)
		ma_hw.vp[v].applied_carrier = NULL;
	/* Published last: a worker that sees the hook sees everything above. */
	atomic_store_explicit(&ma_hw_switched_hook, ma_hw_switched, memory_order_release);
	return 0;
}

/* marcel_end, while the workers still run: no apply from here on, and every backend puts
 * back what it changed. */
void ma_hwprio_quiesce(void)
{
	if (!ma_hw.n)
		return;
	atomic_store_explicit(&ma_hw_switched_hook, NULL, memory_order_relaxed);
	/* The holder may be a thread of this VP (it never blocks holding the lock, and is not
	 * preempted, but may wait for this kernel thread): yield rather than block on it. */
	while (pthread_mutex_trylock(&ma_hw.lock))
		marcel_yield();
	ma_hw.closing = 1;
	pthread_mutex_unlock(&ma_hw.lock);
	ma_hw_reset_all();
}

/* marcel_end (or a failed marcel_init), once the carriers stopped: no worker can be inside
 * the hook any more. */
void ma_hwprio_stop(void)
{
	if (ma_hw.n || ma_hw.vp)
		ma_hw_free(ma_hw.n);
}

/* ---- <marcel/hwprio.h> ---- */

unsigned marcel_hwprio_backend_count(void)
{
	return ma_hw_nb_backends;
}

int marcel_hwprio_backend(unsigned i, struct marcel_hwprio_backend_info *info)
{
	if (!info || i >= ma_hw_nb_backends)
		return EINVAL;
	const struct ma_hw_backend *b = ma_hw_backends[i];
	struct ma_hw_env env;
	struct ma_hw_why why = { "" };
	ma_hw_env_read(&env);
	memset(info, 0, sizeof(*info));
	info->name = b->name;
	info->description = b->desc;
	info->presence = (enum marcel_hwprio_presence)b->probe(&env, &why);
	if (info->presence != MARCEL_HWPRIO_PRESENT)
		snprintf(info->reason, sizeof(info->reason), "%s", why.s);
	info->lo = b->lo;
	info->hi = b->hi;
	pthread_mutex_lock(&ma_hw.lock);
	for (unsigned k = 0; k < ma_hw.n; k++)
		info->active |= ma_hw.a[k].b == b && !ma_hw.a[k].failed && !ma_hw.closing;
	pthread_mutex_unlock(&ma_hw.lock);
	return 0;
}

int marcel_hwprio_vp_level(unsigned vp, int *level)
{
	if (!ma_rt.running)
		return ENOENT;
	if (!level || vp >= ma_rt.nb_vps)
		return EINVAL;
	*level = ma_hw.vp ? atomic_load_explicit(&ma_hw.vp[vp].level, memory_order_relaxed) : 0;
	return 0;
}

int marcel_hwprio_set_vp_level(unsigned vp, int level)
{
	if (!ma_rt.running)
		return ENOENT;
	if (vp >= ma_rt.nb_vps || level < MARCEL_HWPRIO_MIN || level > MARCEL_HWPRIO_MAX)
		return EINVAL;
	if (!ma_hw.vp)
		return ENOTSUP;
	ma_hw_vp_set(vp, level);
	return 0;
}
