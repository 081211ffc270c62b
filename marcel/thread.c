/* The thread API: creation and placement, join/detach, names, identity. */
#include <errno.h>
#include <string.h>
#include "ma_hooks.h"
#include "ma_trace.h"

static struct ma_runqueue *ma_vp_rq(unsigned vp)
{
	return &ma_rt.workers[vp].rq;
}

/* The queue of the smallest item covering every VP of the set (the VP's own queue for a
 * single VP), or NULL if the set names no existing VP. */
static struct ma_runqueue *ma_rq_for_vpset(const marcel_attr_t *attr)
{
	const marcel_vpset_t *set = &attr->vpset;
	int first = attr->vpset_first, last = attr->vpset_last;
	if (first < 0 || (unsigned)first >= ma_rt.nb_vps)
		return NULL;
	if ((unsigned)last >= ma_rt.nb_vps)
		last = (int)ma_rt.nb_vps - 1;
	if (first == last)
		return ma_vp_rq((unsigned)first);
	/* Walk up from the first VP until an item also holds every other VP of the set. */
	const struct ma_level *l = ma_rt.topo.vps[first].leaf;
	for (; l->parent; l = l->parent) {
		int all = 1;
		for (int vp = first + 1; vp <= last && all; vp++)
			if (marcel_vpset_isset(set, (unsigned)vp) &&
			    !hwloc_bitmap_isset(l->cpuset, ma_rt.topo.vps[vp].pu_os))
				all = 0;
		if (all)
			break;
	}
	return &ma_rt.rqs[l->id];
}

struct ma_runqueue *ma_rq_for_set(const marcel_vpset_t *set)
{
	marcel_attr_t a;
	a.vpset = *set;
	a.vpset_first = marcel_vpset_first(set);
	a.vpset_last = marcel_vpset_last(set);
	return ma_rq_for_vpset(&a);
}

static int ma_vp_is_idle(unsigned vp)
{
	struct ma_worker *o = &ma_rt.workers[vp];
	return atomic_load_explicit(&o->state, memory_order_relaxed) != MA_WORKER_BUSY &&
	       !atomic_load_explicit(&o->rq.bitmap, memory_order_relaxed);
}

static struct ma_runqueue *ma_rq_for_policy(struct ma_worker *w, int policy)
{
	unsigned n = ma_rt.nb_vps, cur = w ? w->vp : 0;
	switch (policy) {
	case MARCEL_SCHED_OTHER:
		if (w)
			return ma_vp_rq((cur + 1 + w->rr_next++ % (n > 1 ? n - 1 : 1)) % n);
		return ma_vp_rq(0);
	case MARCEL_SCHED_AFFINITY:
		if (!ma_vp_is_idle(cur))
			for (unsigned i = 1; i < n; i++)
				if (ma_vp_is_idle((cur + i) % n))
					return ma_vp_rq((cur + i) % n);
		return ma_vp_rq(cur);
	case MARCEL_SCHED_BALANCE: {
		unsigned best = cur, best_load = ~0u;
		for (unsigned i = 0; i < n; i++) {
			unsigned vp = (cur + i) % n;
			struct ma_worker *o = &ma_rt.workers[vp];
			/* An estimate read without the queue's lock. */
			unsigned load = ma_worker_nr_ready(o) +
					(atomic_load_explicit(&o->state, memory_order_relaxed) == MA_WORKER_BUSY);
			if (load < best_load) {
				best_load = load;
				best = vp;
			}
		}
		return ma_vp_rq(best);
	}
	default:
		return &ma_rt.rqs[0];
	}
}

/* A thread or bubble id: unique, for traces and snapshots. Workers take them from the
 * shared counter in blocks, so that creating a thread (or a bubble) touches no line
 * another VP writes. */
uint64_t ma_new_id_slow(struct ma_worker *w)
{
	enum { BLOCK = 1024 };
	if (!w)
		return atomic_fetch_add_explicit(&ma_rt.next_id, 1, memory_order_relaxed) + 1;
	w->id_next = atomic_fetch_add_explicit(&ma_rt.next_id, BLOCK, memory_order_relaxed) + 1;
	w->id_end = w->id_next + BLOCK;
	return w->id_next++;
}

struct ma_free_gate ma_free_gate;

enum { MA_CREATE_DONTSCHED = 1, MA_CREATE_POSIX = 2 };

/* Inline in each entry point, and twice in marcel_create: with no attributes, the most
 * frequent call, every test of them folds away. */
static inline __attribute__((always_inline)) int ma_create(marcel_t *pid, const marcel_attr_t *attr,
							  marcel_func_t func, any_t arg, int how)
{
	int dontsched = how & MA_CREATE_DONTSCHED;
	if (ma_unlikely(!ma_rt.running))
		return ma_not_running(how & MA_CREATE_POSIX ? "marcel_create_posix"
				      : dontsched	     ? "marcel_create_dontsched"
							     : "marcel_create",
				      EPERM);
	if (ma_unlikely(!func))
		return EINVAL;
	if (attr && attr->magic != MA_ATTR_MAGIC)
		return EINVAL;
	struct ma_worker *w = ma_worker_self();
	/* The thread's own placement, if its attributes ask for one; otherwise its bubble's. */
	struct ma_runqueue *rq = NULL;
	if (attr && attr->has_vpset) {
		rq = ma_rq_for_vpset(attr);
		if (!rq)
			return EINVAL;
	} else if (attr && attr->schedpolicy != MARCEL_SCHED_SHARED)
		rq = ma_rq_for_policy(w, attr->schedpolicy);

	struct marcel_task *t = ma_task_alloc(w);
	if (ma_unlikely(!t))
		return EAGAIN;
	t->id = ma_new_id(w);
	atomic_init(&t->e.prio, attr ? attr->prio : MA_DEF_PRIO);
	/* A recycled descriptor may still be glanced at by a strategy or a snapshot. */
	ma_write_once(&t->e.sched_holder, &(rq ? rq : &ma_rt.rqs[0])->hold);
	atomic_init(&t->e.sched_level, 0);
	atomic_init(&t->e.load_hint, -1);
	atomic_init(&t->master, 0);
	atomic_init(&t->spinning, 0);
	/* No hint, and the counters' measure of a descriptor's former thread is not its. */
	for (unsigned m = 0; m < sizeof(t->metric_hint) / sizeof(t->metric_hint[0]); m++)
		atomic_init(&t->metric_hint[m], 0);
	atomic_store_explicit(&t->metric_of, 0, memory_order_relaxed);
	ma_write_once(&t->e.last_level, -1);
	atomic_store_explicit(&t->e.cpu_ns, 0, memory_order_relaxed);
	t->pinned = attr && attr->has_vpset;
	t->placed = rq != NULL;
	/* children_bubble, nb_private_woken, private_claimed and private_handed are 0 in a
	 * free descriptor (task.c). */
	atomic_store_explicit(&t->last_vp, -1, memory_order_relaxed);
	t->func = func;
	t->arg = arg;
	t->retval = NULL;
	/* Here rather than at free: a late marcel_cancel through a stale handle must not
	 * reach the next thread given this descriptor. */
	atomic_store_explicit(&t->cancel, 0, memory_order_relaxed);
	/* POSIX: the creator's signal mask, no signal pending (sig_wait is 0 outside waits). */
	struct marcel_task *creator = w ? ma_worker_current(w) : NULL;
	atomic_store_explicit(&t->sig_mask,
			      creator && !creator->is_idle ? atomic_load_explicit(&creator->sig_mask, memory_order_relaxed) : 0,
			      memory_order_relaxed);
	atomic_store_explicit(&t->sig_pending, 0, memory_order_relaxed);
	t->stack_size = attr && attr->stacksize ? attr->stacksize : ma_rt.opt.stack_size;
	t->fpctl = ma_arch_fpctl();
	t->preemptible = attr ? (unsigned char)attr->preemptible : 1;
	t->dontsched = (unsigned char)dontsched;
	t->seed = attr ? (unsigned char)attr->seed : 0;
	/* No handle wanted means nobody will join: reclaim it when it ends. */
	int detached = !pid || (attr && attr->detachstate == MARCEL_CREATE_DETACHED);
	atomic_store_explicit(&t->link, detached ? MA_LINK_DETACHED : 0, memory_order_relaxed);
	if (attr)
		memcpy(t->name, attr->name, sizeof(t->name));
	else
		memcpy(t->name, "user", 5);
	/* posix, cancel and cleanup are 0 in a free descriptor (task.c). */
	if (ma_unlikely(how & MA_CREATE_POSIX))
		t->posix = 1;
	/* Traced here rather than in ma_task_born: a call there would cost every spawn the
	 * registers it needs around it. A thread refused by the layer above ends at once. */
	MA_TRACE(MA_TR_THREAD_NEW, t->id, 0, t->name);
	/* Free (ma_hooks.h): no call up. */
	struct ma_holder *home = rq ? &rq->hold : ma_read_once(&ma_free_gate.home);
	if (ma_likely(home && !dontsched && !(attr && attr->natural_bubble) &&
		      !atomic_load_explicit(&ma_free_gate.closed, memory_order_relaxed))) {
		ma_free_task_publish(w, t, pid, home);
		return 0;
	}
	/* The layer above makes it visible (ma_task_born) once it accepts it. */
	int e = ma_hook_task_new(w, t, pid, attr, rq, !dontsched);
	if (ma_unlikely(e)) {
		MA_TRACE(MA_TR_THREAD_END, t->id, 0, t->name);
		ma_task_free(w, t);
		return e;
	}
	return 0;
}

int marcel_create(marcel_t *pid, const marcel_attr_t *attr, marcel_func_t func, any_t arg)
{
	if (!attr)
		return ma_create(pid, NULL, func, arg, 0);
	return ma_create(pid, attr, func, arg, 0);
}

int marcel_create_dontsched(marcel_t *pid, const marcel_attr_t *attr, marcel_func_t func, any_t arg)
{
	return ma_create(pid, attr, func, arg, MA_CREATE_DONTSCHED);
}

int marcel_create_posix(marcel_t *pid, const marcel_attr_t *attr, marcel_func_t func, any_t arg)
{
	return ma_create(pid, attr, func, arg, MA_CREATE_POSIX);
}

int marcel_wake_up_created_thread(marcel_t t)
{
	if (!ma_task_valid(t))
		return ma_rt.running ? ESRCH : ma_not_running("marcel_wake_up_created_thread", ESRCH);
	if (!t->dontsched)
		return EINVAL;
	return ma_hook_task_start(t, 0);
}

/* An ended thread's worker may still be switching away from it: wait before recycling. */
static void ma_wait_off_cpu(struct marcel_task *t)
{
	unsigned rounds = 0;
	while (atomic_load_explicit(&t->on_cpu, memory_order_acquire))
		ma_spin_backoff(&rounds);
}

/* The joiner wt of t was canceled while it waited: takes wt out of t's link and acts on
 * the request; or, if t ended first (its exit has our waiter and wakes it), waits for
 * that wake-up and lets the join complete (the request stays pending). */
static void ma_join_canceled(struct marcel_task *t, struct ma_waiter *wt)
{
	/* While we are its joiner nobody else changes the link but its exit (DEAD). */
	uintptr_t v = (uintptr_t)wt;
	if (atomic_compare_exchange_strong(&t->link, &v, 0))
		ma_cancel_act(wt->task);
	ma_waiter_wait(wt);
}

int marcel_join(marcel_t t, any_t *status)
{
	/* Outside a running runtime no thread exists, and t may be anything: the handle a
	 * failed marcel_create never wrote, or one whose descriptor marcel_end freed
	 * (ma_task_valid reads it only while the runtime runs). */
	if (!ma_task_valid(t))
		return ma_rt.running ? ESRCH : ma_not_running("marcel_join", ESRCH);
	struct marcel_task *self = ma_task_self();
	if (t == self)
		return EDEADLK;
	/* A cancellation point (POSIX): a request pending on entry acts before anything. */
	ma_cancel_point(self);
	struct ma_waiter wt;
	ma_waiter_init(&wt);
	uintptr_t v = atomic_load(&t->link);
	for (;;) {
		if (v & MA_LINK_DETACHED)
			return EINVAL;
		if (v & ~MA_LINK_FLAGS)
			return EINVAL; /* someone else is joining it */
		if (v & MA_LINK_DEAD)
			break;
		if (atomic_compare_exchange_weak(&t->link, &v, v | (uintptr_t)&wt)) {
			if (ma_unlikely(ma_rt.opt.debug) && !t->seed &&
			    atomic_load(&t->state) == MA_TASK_BORN) {
				fprintf(stderr, "marcel: marcel_join waits for a thread that was never "
						"started:\n");
				ma_print_thread(stderr, t);
			}
			/* A seed nobody started yet runs here, on our stack (seed.c). */
			if (!(t->seed && ma_seed_join(t, &wt)) && ma_unlikely(ma_waiter_wait_point(&wt) == ECANCELED))
				ma_join_canceled(t, &wt);
			break;
		}
	}
	ma_wait_off_cpu(t);
	if (status)
		*status = t->retval;
	ma_task_free(ma_worker_self(), t);
	return 0;
}

int marcel_detach(marcel_t t)
{
	if (!ma_task_valid(t))
		return ma_rt.running ? ESRCH : ma_not_running("marcel_detach", ESRCH);
	uintptr_t v = atomic_load(&t->link);
	for (;;) {
		if (v & (MA_LINK_DETACHED | ~MA_LINK_FLAGS))
			return EINVAL;
		if (v & MA_LINK_DEAD) {
			/* It already ended: we are the ones to reclaim it, once its worker has
			 * finished switching away from it. */
			ma_wait_off_cpu(t);
			ma_task_free(ma_worker_self(), t);
			return 0;
		}
		if (atomic_compare_exchange_weak(&t->link, &v, v | MA_LINK_DETACHED))
			return 0;
	}
}

marcel_t marcel_self(void)
{
	struct ma_worker *w = ma_worker_self();
	/* Off any VP, the caller may still be a marcel thread inside a blocking section. */
	return ma_likely(w != NULL) ? ma_worker_current(w) : ma_tls_section_task;
}

int marcel_equal(marcel_t a, marcel_t b)
{
	return a == b;
}

int marcel_setname(marcel_t t, const char *name)
{
	if (!t)
		return ESRCH;
	if (!name)
		return EINVAL;
	snprintf(t->name, sizeof(t->name), "%s", name);
	return 0;
}

int marcel_getname(marcel_t t, char *buf, size_t n)
{
	if (!t)
		return ESRCH;
	if (!buf)
		return EINVAL;
	return ma_copy_name(buf, n, t->name);
}

int marcel_current_vp(void)
{
	struct ma_worker *w = ma_worker_self();
	return w ? (int)w->vp : -1;
}

unsigned marcel_nbvps(void)
{
	return ma_rt.running ? ma_rt.nb_vps : 0;
}
