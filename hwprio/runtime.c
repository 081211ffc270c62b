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
 * The policy runs once per iteration of the program: a round of the barrier that
 * completed first (marcel_barrier_wait, pthread_barrier_wait through <marcel/pthread.h>,
 * marcel_bubble_barrier), or, once the program calls marcel_hwprio_iteration, those calls
 * only. Rounds less than MA_HW_MIN_ITER_NS apart are one iteration. What a VP did in it is
 * measured by the same hook: the time its worker spent in its idle context is the time
 * its threads waited; the rest, they ran.
 *
 * The policy judges bubbles, not workers: at each iteration a view of the bubble tree
 * (bubbles/ma_view.h, as the strategies read it) says which thread ran the most on each
 * VP since the last one (by their CPU time) and which bubbles hold it; ma_hw_units says
 * which of them tells the VP apart from those it shares a core with, and the samples of
 * VPs judged as one bubble are pooled. Levels a program set on bubbles by hand
 * (marcel_bubble_set_hwprio) override the policy on the VPs running their threads.
 *
 * This file is the only one of hwprio/ compiled with the core's headers (like
 * strategies/registry.c): the backends and the policy know nothing of the runtime.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "ma_sched.h"
#include "ma_hooks.h"
#include "ma_trace.h"
#include "ma_sync.h"
#include "ma_view_build.h"
#include "ma_hwprio.h"
#include "ma_hw_topo.h"
#include "marcel/hwprio.h"
#include "marcel/thread.h"

#define MA_HW_MAX_ACTIVE 8
/* Shorter rounds are merged: a policy step (and the applies it causes) per round of a
 * fine-grained barrier would cost more than it balances. */
#define MA_HW_MIN_ITER_NS 1000000

struct ma_hw_active {
	const struct ma_hw_backend *b;
	void *priv;
	_Atomic int failed; /* reset and dropped: applies nothing more */
};

/* What a VP was asked for, and what its worker applied where. */
struct ma_hw_vp {
	_Atomic int level;          /* on the shared scale, as asked */
	_Atomic int want[MA_HW_MAX_ACTIVE]; /* level fitted to each active backend's reach */
	_Atomic unsigned gen;       /* bumped with each change of level */
	unsigned applied_gen;       /* written by the VP's worker only */
	const void *applied_carrier; /* the kernel thread it applied on */
	/* Idle accounting, written by the VP's worker at its switches, read by the policy. */
	_Atomic uint64_t idle_ns;   /* time in the idle context, up to `since` */
	_Atomic uint64_t since;     /* the last switch */
	_Atomic int in_idle;        /* the idle context runs since then */
	/* The policy's, at the last iteration boundary. */
	uint64_t last_idle;
	uint64_t pinned_by;         /* the bubble whose level it has by hand, 0: none */
};

/* A thread's CPU time at the last iteration boundary (sorted by id). */
struct ma_hw_seen {
	uint64_t id, cpu_ns;
};

#define MA_HW_MAX_PINS 64

static struct {
	pthread_mutex_t lock;       /* applies against the reset at marcel_end and failures */
	int closing;                /* under lock: apply nothing more */
	unsigned n;
	struct ma_hw_active a[MA_HW_MAX_ACTIVE];
	struct ma_hw_env env;
	struct ma_hw_kind kinds[MA_HW_MAX_KINDS]; /* env's */
	struct ma_hw_policy_params params;
	struct ma_hw_vp *vp;
	unsigned nb_vps;
	/* The policy (under policy_lock, taken by whoever completes an iteration). */
	pthread_mutex_t policy_lock;
	struct ma_hw_policy_state st;
	struct ma_hw_sample *samples;
	int *fit;
	const void *iter_key;       /* the barrier whose rounds are the iterations */
	int iter_weak;              /* iter_key is a wait's (marcel_hwprio_wait_round): a
				       barrier's rounds replace it */
	int explicit_iter;          /* marcel_hwprio_iteration was called: only its calls */
	struct ma_hw_sample *pooled;
	struct ma_hw_path *path;    /* per VP, at the last boundary */
	uint64_t *unit;
	struct ma_hw_seen *seen;    /* threads' CPU time at the last boundary */
	size_t nb_seen;
	struct ma_hw_pin pins[MA_HW_MAX_PINS];
	unsigned nb_pins;
	uint64_t iter_start;
	_Atomic unsigned iterations;
	_Atomic unsigned changes;   /* iterations whose decision changed a level */
} ma_hw = { .lock = PTHREAD_MUTEX_INITIALIZER, .policy_lock = PTHREAD_MUTEX_INITIALIZER };

/* The roots, and the running runtime's core kinds (into kinds[MA_HW_MAX_KINDS]). */
static void ma_hw_env_read(struct ma_hw_env *env, struct ma_hw_kind *kinds)
{
	/* No topology loaded: no kinds known. */
	ma_hw_env_from_topo(env, kinds, ma_rt.running || ma_hw.vp ? &ma_rt.topo : NULL);
}

static int ma_hw_item_of(unsigned v, enum ma_level_kind k)
{
	return ma_hw_topo_item(&ma_rt.topo, v, k);
}

static struct ma_hw_target ma_hw_target_self(unsigned v)
{
	return ma_hw_target_of(&ma_rt.topo, v, (pid_t)syscall(SYS_gettid));
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
	atomic_store_explicit(&a->failed, 1, memory_order_relaxed);
	struct ma_hw_why w = { "" };
	if (a->b->reset && a->b->reset(a->priv, &w))
		fprintf(stderr, "marcel: hwprio: %s: cannot undo its changes: %s\n", a->b->name, w.s);
}

static void ma_hw_apply_pending(struct ma_worker *w);

/* The core's hook, after each switch of worker w while hwprio runs, in the context
 * switched to (the core loads the hook relaxed; the fence pairs with the release that
 * published it). */
static void ma_hw_switched(struct ma_worker *w)
{
	atomic_thread_fence(memory_order_acquire);
	struct ma_hw_vp *s = &ma_hw.vp[w->vp];
	uint64_t now = ma_cpu_clock_now();
	if (atomic_load_explicit(&s->in_idle, memory_order_relaxed)) {
		uint64_t since = atomic_load_explicit(&s->since, memory_order_relaxed);
		if (now > since)
			atomic_store_explicit(&s->idle_ns, atomic_load_explicit(&s->idle_ns, memory_order_relaxed) + (now - since),
					      memory_order_relaxed);
	}
	atomic_store_explicit(&s->since, now, memory_order_relaxed);
	atomic_store_explicit(&s->in_idle, ma_worker_current(w)->is_idle, memory_order_relaxed);
	/* No lock: a dropped backend's flag may be seen late, and one more priority hint
	 * after its reset is harmless (the kernel resets the PPR at the next system call). */
	for (unsigned i = 0; i < ma_hw.n; i++)
		if (ma_hw.a[i].b->apply_self && !atomic_load_explicit(&ma_hw.a[i].failed, memory_order_relaxed))
			ma_hw.a[i].b->apply_self(ma_hw.a[i].priv, w->vp, atomic_load_explicit(&s->want[i], memory_order_relaxed));
	ma_hw_apply_pending(w);
}

/* Applies VP w->vp's level on w's kernel thread if the policy changed it since w last
 * did, or w runs on another kernel thread now. Only from code running on w, with
 * preemption disabled or at a switch (the target is this kernel thread). */
static void ma_hw_apply_pending(struct ma_worker *w)
{
	struct ma_hw_vp *s = &ma_hw.vp[w->vp];
	unsigned gen = atomic_load_explicit(&s->gen, memory_order_acquire);
	int level = atomic_load_explicit(&s->level, memory_order_relaxed);
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
				int l = atomic_load_explicit(&s->want[i], memory_order_relaxed);
				if (!atomic_load_explicit(&a->failed, memory_order_relaxed) && a->b->apply(a->priv, &t, l, &why))
					ma_hw_drop_locked(i, w->vp, &why);
			}
			atomic_store_explicit(&w->hw_level, level, memory_order_relaxed);
			MA_TRACE(MA_TR_HWPRIO, w->vp, (uint64_t)(int64_t)level, ma_hw.a[0].b->name);
		}
		pthread_mutex_unlock(&ma_hw.lock);
		s->applied_gen = gen;
		s->applied_carrier = w->carrier;
	}
	marcel_thread_preemption_enable();
}

/* Asks VP v for level, want[i] for backend i: its worker applies them at its next
 * switch, or at once if it is the one deciding (ma_hw_round). */
static int ma_hw_vp_set(unsigned v, int level, const int *want)
{
	struct ma_hw_vp *s = &ma_hw.vp[v];
	int same = atomic_load_explicit(&s->level, memory_order_relaxed) == level;
	for (unsigned i = 0; i < ma_hw.n; i++) {
		same &= atomic_load_explicit(&s->want[i], memory_order_relaxed) == want[i];
		atomic_store_explicit(&s->want[i], want[i], memory_order_relaxed);
	}
	if (same)
		return 0;
	atomic_store_explicit(&s->level, level, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->gen, 1, memory_order_release);
	return 1;
}

/* The policy's lock, from a thread that must have it (not the iteration's trylock): its
 * holder may be a thread of the caller's VP, so yield rather than block the VP on it. */
static void ma_hw_policy_lock(void)
{
	while (pthread_mutex_trylock(&ma_hw.policy_lock))
		if (marcel_yield() == EPERM)
			sched_yield(); /* a kernel thread of the program's own */
}

static int ma_hw_seen_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct ma_hw_seen *)a)->id, y = ((const struct ma_hw_seen *)b)->id;
	return x < y ? -1 : x > y;
}

/* A thread's CPU time at the last boundary (0: not seen then). */
static uint64_t ma_hw_seen_cpu(uint64_t id)
{
	struct ma_hw_seen key = { .id = id };
	const struct ma_hw_seen *f = ma_hw.nb_seen ? bsearch(&key, ma_hw.seen, ma_hw.nb_seen, sizeof(key), ma_hw_seen_cmp) : NULL;
	return f ? f->cpu_ns : 0;
}

/* Thread node n's path (ma_hw_path): the explicit bubbles above it in the view, the
 * view's root (the root bubble) left out. */
static void ma_hw_path_of(const struct ma_vnode *n, struct ma_hw_path *p)
{
	unsigned total = 0;
	for (const struct ma_vnode *b = n->parent; b && b->parent; b = b->parent)
		total += !b->implicit;
	unsigned kept = total < MA_HW_UNIT_DEPTH - 1 ? total : MA_HW_UNIT_DEPTH - 1;
	/* k counts from the innermost; the outermost `kept` go first in the path. */
	unsigned k = 0;
	for (const struct ma_vnode *b = n->parent; b && b->parent; b = b->parent) {
		if (b->implicit)
			continue;
		if (total - 1 - k < kept)
			p->id[total - 1 - k] = b->id;
		k++;
	}
	p->len = kept;
	p->id[p->len++] = n->id;
}

/* Fills ma_hw.path: per VP, the thread that ran the most on it since the last boundary
 * (by CPU time; a thread first seen counts all of its own), and its bubbles. At a
 * `boundary`, a VP that ran nothing gets an empty path, and the threads' CPU times become
 * the reference of the next; between two (a level set by hand) only VPs with no path yet
 * get one: what ran most in the last iteration says more than the moments since (main
 * setting a level while the others wait at the barrier). Under policy_lock. A view that
 * cannot be built (memory) leaves the paths as they were. */
static void ma_hw_paths(int boundary)
{
	struct ma_view view;
	if (ma_view_build_tree(&view, MA_VIEW_SHAPE))
		return;
	uint64_t now = ma_cpu_clock_now();
	size_t cap = ma_view_nb_nodes(&view);
	const struct ma_vnode **stack = malloc((cap ? cap : 1) * sizeof(*stack));
	const struct ma_vnode **best = calloc(ma_hw.nb_vps, sizeof(*best));
	uint64_t *best_ns = calloc(ma_hw.nb_vps, sizeof(*best_ns));
	struct ma_hw_seen *seen = boundary ? malloc((cap ? cap : 1) * sizeof(*seen)) : NULL;
	size_t nb_seen = 0, top = 0;
	if (!stack || !best || !best_ns || (boundary && !seen) || !view.root)
		goto out;
	/* Every node is pushed once (a tree): cap bounds the stack. */
	stack[top++] = view.root;
	while (top) {
		const struct ma_vnode *n = stack[--top];
		if (n->is_bubble) {
			for (unsigned c = 0; c < n->nb_children && top < cap; c++)
				stack[top++] = n->children[c];
			continue;
		}

		if (n->last_vp < 0 || (unsigned)n->last_vp >= ma_hw.nb_vps)
			continue;
		/* A running thread is charged its CPU time at its next switch: add what it ran
		 * since its worker's last one (the caller's own at least, which is running). */
		uint64_t cpu = n->cpu_ns;
		if (n->state == MA_V_RUNNING) {
			uint64_t since = atomic_load_explicit(&ma_hw.vp[n->last_vp].since, memory_order_relaxed);
			cpu += now > since ? now - since : 0;
		}
		if (seen)
			seen[nb_seen++] = (struct ma_hw_seen){ .id = n->id, .cpu_ns = cpu };
		uint64_t before = ma_hw_seen_cpu(n->id), d = cpu > before ? cpu - before : 0;
		if (d > best_ns[n->last_vp]) {
			best_ns[n->last_vp] = d;
			best[n->last_vp] = n;
		}
	}
	for (unsigned v = 0; v < ma_hw.nb_vps; v++)
		if (boundary || !ma_hw.path[v].len) {
			ma_hw.path[v].len = 0;
			if (best[v])
				ma_hw_path_of(best[v], &ma_hw.path[v]);
		}
	if (seen) {
		qsort(seen, nb_seen, sizeof(*seen), ma_hw_seen_cmp);
		free(ma_hw.seen);
		ma_hw.seen = seen;
		ma_hw.nb_seen = nb_seen;
		seen = NULL;
	}
out:
	free(seen);
	free(best_ns);
	free(best);
	free(stack);
	ma_view_release(&view);
}

/* Gives every VP its level: its bubble's by hand if one of the bubbles it ran has one,
 * else the policy's (back to 0 when a pin stops applying), fitted to each backend. 1 if
 * some VP's level changed. Under policy_lock. */
static int ma_hw_publish(void)
{
	for (unsigned v = 0; v < ma_hw.nb_vps; v++) {
		int p = ma_hw_pin_of(&ma_hw.path[v], ma_hw.pins, ma_hw.nb_pins);
		if (p >= 0) {
			ma_hw.st.slot[v].level = ma_hw.pins[p].level;
			ma_hw.vp[v].pinned_by = ma_hw.pins[p].id;
		} else if (ma_hw.vp[v].pinned_by) {
			ma_hw.st.slot[v].level = 0;
			ma_hw.vp[v].pinned_by = 0;
		}
	}
	for (unsigned i = 0; i < ma_hw.n; i++)
		ma_hw_levels_fit(ma_hw.st.slot, ma_hw.nb_vps, ma_hw.a[i].b->lo, ma_hw.a[i].b->hi,
				 ma_hw.fit + (size_t)i * ma_hw.nb_vps);
	int changed = 0, want[MA_HW_MAX_ACTIVE];
	for (unsigned v = 0; v < ma_hw.nb_vps; v++) {
		for (unsigned i = 0; i < ma_hw.n; i++)
			want[i] = ma_hw.fit[(size_t)i * ma_hw.nb_vps + v];
		changed |= ma_hw_vp_set(v, ma_hw.st.slot[v].level, want);
	}
	return changed;
}

/* Idle time of VP v up to now. */
static uint64_t ma_hw_idle_of(struct ma_hw_vp *s, uint64_t now)
{
	uint64_t idle = atomic_load_explicit(&s->idle_ns, memory_order_relaxed);
	uint64_t since = atomic_load_explicit(&s->since, memory_order_relaxed);
	if (atomic_load_explicit(&s->in_idle, memory_order_relaxed) && now > since)
		idle += now - since;
	return idle;
}

/* One round of a synchronisation the program repeats every iteration ended: a barrier's
 * (weak 0) or a wait's (weak 1: marcel_hwprio_wait_round); key NULL: the program's
 * marcel_hwprio_iteration. */
static void ma_hw_round(const void *key, int weak)
{
	if (pthread_mutex_trylock(&ma_hw.policy_lock))
		return; /* another round being decided right now: this one merges into the next */
	if (!key)
		ma_hw.explicit_iter = 1;
	else if (ma_hw.explicit_iter || (ma_hw.iter_key && ma_hw.iter_key != key && !(ma_hw.iter_weak && !weak)))
		goto out;
	ma_hw.iter_key = key;
	ma_hw.iter_weak = weak;
	uint64_t now = ma_cpu_clock_now();
	if (now - ma_hw.iter_start < MA_HW_MIN_ITER_NS)
		goto out;
	uint64_t wall = now - ma_hw.iter_start;
	for (unsigned v = 0; v < ma_hw.nb_vps; v++) {
		struct ma_hw_vp *s = &ma_hw.vp[v];
		uint64_t idle = ma_hw_idle_of(s, now), d = idle - s->last_idle;
		if (d > wall)
			d = wall;
		s->last_idle = idle;
		ma_hw.samples[v] = (struct ma_hw_sample){ .run = (double)(wall - d), .wait = (double)d };
	}
	ma_hw.iter_start = now;
	atomic_fetch_add_explicit(&ma_hw.iterations, 1, memory_order_relaxed);
	ma_hw_paths(1);
	ma_hw_units(ma_hw.path, ma_hw.st.slot, ma_hw.nb_vps, ma_hw.unit);
	ma_hw_samples_pool(ma_hw.samples, ma_hw.unit, ma_hw.nb_vps, ma_hw.pooled);
	ma_hw_policy_step(&ma_hw.params, &ma_hw.st, ma_hw.pooled);
	int changed = ma_hw_publish();
	if (changed)
		atomic_fetch_add_explicit(&ma_hw.changes, 1, memory_order_relaxed);
	pthread_mutex_unlock(&ma_hw.policy_lock);
	/* The caller's VP may not switch for a long time: the rank that ends a barrier's
	 * round does not block there, and with a thread per VP nothing else runs. It
	 * applies its own level now; the others apply theirs when they resume. */
	if (changed && !marcel_thread_preemption_disable()) {
		struct ma_worker *w = ma_worker_self();
		if (w)
			ma_hw_apply_pending(w);
		marcel_thread_preemption_enable();
	}
	return;
out:
	pthread_mutex_unlock(&ma_hw.policy_lock);
}

/* The core's iteration hook: a barrier's round ended. */
static void ma_hw_iteration(const void *key)
{
	ma_hw_round(key, 0);
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
	free(ma_hw.vp);
	ma_hw.vp = NULL;
	free(ma_hw.st.slot);
	free(ma_hw.samples);
	free(ma_hw.fit);
	free(ma_hw.pooled);
	free(ma_hw.path);
	free(ma_hw.unit);
	free(ma_hw.seen);
	ma_hw.st = (struct ma_hw_policy_state){ 0 };
	ma_hw.samples = ma_hw.pooled = NULL;
	ma_hw.fit = NULL;
	ma_hw.path = NULL;
	ma_hw.unit = NULL;
	ma_hw.seen = NULL;
	ma_hw.nb_seen = 0;
	ma_hw.nb_pins = 0;
}

static void ma_hw_reset_all(void)
{
	for (unsigned i = ma_hw.n; i--;) {
		struct ma_hw_active *a = &ma_hw.a[i];
		struct ma_hw_why why = { "" };
		if (!atomic_load_explicit(&a->failed, memory_order_relaxed) && a->b->reset && a->b->reset(a->priv, &why))
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
	ma_hw_env_read(&ma_hw.env, ma_hw.kinds);
	ma_hw.nb_vps = ma_rt.nb_vps;
	ma_hw.vp = calloc(ma_rt.nb_vps, sizeof(*ma_hw.vp));
	ma_hw.st = (struct ma_hw_policy_state){ .n = ma_rt.nb_vps, .slot = calloc(ma_rt.nb_vps, sizeof(struct ma_hw_slot)) };
	ma_hw.samples = calloc(ma_rt.nb_vps, sizeof(*ma_hw.samples));
	ma_hw.fit = calloc((size_t)ma_rt.nb_vps * MA_HW_MAX_ACTIVE, sizeof(int));
	ma_hw.pooled = calloc(ma_rt.nb_vps, sizeof(*ma_hw.pooled));
	ma_hw.path = calloc(ma_rt.nb_vps, sizeof(*ma_hw.path));
	ma_hw.unit = calloc(ma_rt.nb_vps, sizeof(*ma_hw.unit));
	if (!ma_hw.vp || !ma_hw.st.slot || !ma_hw.samples || !ma_hw.fit || !ma_hw.pooled || !ma_hw.path || !ma_hw.unit) {
		ma_hw_free(0);
		return ENOMEM;
	}
	/* The policy's domains: the VPs that share a core compete for its resources. A VP
	 * with no core above it (a synthetic topology without cores) is its own domain. */
	for (unsigned v = 0; v < ma_hw.nb_vps; v++) {
		int core = ma_hw_item_of(v, MA_LEVEL_CORE);
		ma_hw.st.slot[v].domain = core >= 0 ? core : -1 - (int)v;
	}
	/* It judges threads by their bubbles: every thread must be in the tree (free.c). */
	ma_tree_want();
	ma_hw.iter_key = NULL;
	ma_hw.iter_weak = 0;
	ma_hw.explicit_iter = 0;
	ma_hw.iter_start = ma_cpu_clock_now();
	atomic_store_explicit(&ma_hw.iterations, 0, memory_order_relaxed);
	atomic_store_explicit(&ma_hw.changes, 0, memory_order_relaxed);
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
	uint64_t now = ma_cpu_clock_now();
	for (unsigned v = 0; v < ma_hw.nb_vps; v++) {
		ma_hw.vp[v].applied_carrier = NULL;
		atomic_init(&ma_hw.vp[v].since, now);
		atomic_init(&ma_hw.vp[v].in_idle, v != 0); /* VP 0 runs main; the others wait */
	}
	/* Published last: a worker that sees the hook sees everything above. */
	ma_hook_hw_switched_set(ma_hw_switched);
	atomic_store_explicit(&ma_hw_iteration_hook, ma_hw_iteration, memory_order_release);
	return 0;
}

/* marcel_end, while the workers still run: no apply from here on, and every backend puts
 * back what it changed. */
void ma_hwprio_quiesce(void)
{
	if (!ma_hw.n)
		return;
	ma_hook_hw_switched_set(NULL);
	atomic_store_explicit(&ma_hw_iteration_hook, NULL, memory_order_relaxed);
	/* A step under way finishes before the backends are reset. */
	while (pthread_mutex_trylock(&ma_hw.policy_lock))
		marcel_yield();
	pthread_mutex_unlock(&ma_hw.policy_lock);
	/* The holder may be a thread of this VP (it never blocks holding the lock, and is not
	 * preempted, but may wait for this kernel thread): yield rather than block on it. */
	while (pthread_mutex_trylock(&ma_hw.lock))
		marcel_yield();
	ma_hw.closing = 1;
	pthread_mutex_unlock(&ma_hw.lock);
	ma_hw_reset_all();
	for (unsigned v = 0; v < ma_rt.nb_vps; v++)
		atomic_store_explicit(&ma_rt.workers[v].hw_level, 0, memory_order_relaxed);
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
	struct ma_hw_kind kinds[MA_HW_MAX_KINDS];
	struct ma_hw_why why = { "" };
	ma_hw_env_read(&env, kinds);
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
		info->active |= ma_hw.a[k].b == b && !atomic_load_explicit(&ma_hw.a[k].failed, memory_order_relaxed) && !ma_hw.closing;
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
	int want[MA_HW_MAX_ACTIVE];
	for (unsigned i = 0; i < ma_hw.n; i++)
		want[i] = ma_hw_clamp(level, ma_hw.a[i].b);
	ma_hw_policy_lock();
	ma_hw.st.slot[vp].level = level;
	ma_hw_vp_set(vp, level, want);
	pthread_mutex_unlock(&ma_hw.policy_lock);
	return 0;
}

int marcel_hwprio_iteration(void)
{
	if (!ma_rt.running)
		return ENOENT;
	if (!ma_hw.vp)
		return ENOTSUP;
	ma_hw_iteration(NULL);
	return 0;
}

int marcel_hwprio_wait_round(const void *key)
{
	if (!ma_rt.running)
		return ENOENT;
	if (!key)
		return EINVAL;
	if (!ma_hw.vp)
		return ENOTSUP;
	ma_hw_round(key, 1);
	return 0;
}

/* The pin of bubble id, -1: none. Under policy_lock. */
static int ma_hw_pin_find(uint64_t id)
{
	for (unsigned p = 0; p < ma_hw.nb_pins; p++)
		if (ma_hw.pins[p].id == id)
			return (int)p;
	return -1;
}

/* The checks the three bubble calls share: 0 and *id, or their error. */
static int ma_hw_bubble_id(marcel_bubble_t *pub, uint64_t *id)
{
	if (!ma_rt.running)
		return ENOENT;
	struct ma_bubble *b = pub ? ma_bubble_get(pub) : NULL;
	if (!b)
		return EINVAL;
	if (!ma_hw.vp)
		return ENOTSUP;
	*id = b->uid;
	return 0;
}

int marcel_bubble_set_hwprio(marcel_bubble_t *pub, int level)
{
	uint64_t id;
	int e = ma_hw_bubble_id(pub, &id);
	if (e)
		return e;
	if (level < MARCEL_HWPRIO_MIN || level > MARCEL_HWPRIO_MAX)
		return EINVAL;
	ma_hw_policy_lock();
	int p = ma_hw_pin_find(id);
	if (p < 0 && ma_hw.nb_pins == MA_HW_MAX_PINS) {
		pthread_mutex_unlock(&ma_hw.policy_lock);
		return ENOSPC;
	}
	if (p < 0)
		p = (int)ma_hw.nb_pins++;
	ma_hw.pins[p] = (struct ma_hw_pin){ .id = id, .level = level };
	/* Now, on the VPs that ran its threads since the last iteration. */
	ma_hw_paths(0);
	ma_hw_publish();
	pthread_mutex_unlock(&ma_hw.policy_lock);
	return 0;
}

int marcel_bubble_get_hwprio(marcel_bubble_t *pub, int *level)
{
	uint64_t id;
	int e = ma_hw_bubble_id(pub, &id);
	if (e || !level)
		return e ?: EINVAL;
	ma_hw_policy_lock();
	int p = ma_hw_pin_find(id);
	if (p >= 0)
		*level = ma_hw.pins[p].level;
	pthread_mutex_unlock(&ma_hw.policy_lock);
	return p >= 0 ? 0 : ESRCH;
}

int marcel_bubble_unset_hwprio(marcel_bubble_t *pub)
{
	uint64_t id;
	int e = ma_hw_bubble_id(pub, &id);
	if (e)
		return e;
	ma_hw_policy_lock();
	int p = ma_hw_pin_find(id);
	if (p >= 0) {
		ma_hw.pins[p] = ma_hw.pins[--ma_hw.nb_pins];
		/* Its VPs go back to 0 at once, and to the policy from the next iteration. */
		ma_hw_publish();
	}
	pthread_mutex_unlock(&ma_hw.policy_lock);
	return p >= 0 ? 0 : ESRCH;
}

int marcel_hwprio_stats(unsigned *iterations, unsigned *changes)
{
	if (!ma_rt.running)
		return ENOENT;
	if (!ma_hw.vp)
		return ENOTSUP;
	if (iterations)
		*iterations = atomic_load_explicit(&ma_hw.iterations, memory_order_relaxed);
	if (changes)
		*changes = atomic_load_explicit(&ma_hw.changes, memory_order_relaxed);
	return 0;
}
