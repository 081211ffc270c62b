/*
 * The strategy in use and its dispatchers: bubbles/ and the core reach the current
 * strategy only through these functions, which hold the defaults of the hooks a strategy
 * leaves NULL, build the views its decision hooks read and carry their decisions out.
 * Which strategies exist is the registry's business (strategies/): it hands one to
 * ma_strategy_select or ma_strategy_switch, and nothing here names one.
 *
 * ma_strategy_cur points to a struct ma_strategy_use (the table and its private block),
 * written with a release store once the new strategy's priv_init and init are done and
 * read with an acquire load (ma_strategy_current()), so a hook never runs on a strategy
 * whose set-up has not finished. A change makes the new one current before the old one's
 * exit runs, so a hook of the old one that read ma_strategy_cur just before may still be
 * running: an exit must leave what such a late hook reads usable (spread swaps its
 * figures under their lock, for instance), and a private block is freed only once every
 * worker has stopped (ma_strategy_reclaim).
 *
 * The strategy lock (ma_strategy.h) serialises changes of strategy and the serialised
 * hooks; it is a spin lock, as the serialised hooks are reached from scheduling points
 * (a regeneration, a bubble closing when its last thread comes back), and taken again
 * without waiting by the kernel thread that holds it (code holding a spin lock never
 * switches threads, so per kernel thread is per holder).
 */
#include <errno.h>
#include <stdlib.h>
#include "ma_strategy.h"
#include "ma_view_build.h"

struct ma_strategy_use *_Atomic ma_strategy_cur;
atomic_int ma_sched_begun;
/* The handle last given to marcel_bubble_change_sched (a strategy or an instance), which
 * marcel_bubble_current_sched returns as Marcel did; NULL: the one chosen at init. */
static const void *_Atomic ma_strategy_handle_cur;

/* ---- the strategy lock ---- */

static ma_spinlock_t ma_strategy_lock;
/* The kernel thread holding it (the address of its ma_lock_token), NULL if none. */
static const void *_Atomic ma_strategy_lock_owner;
/* Times the owner took it; written by the owner only. */
static unsigned ma_strategy_lock_depth;
static __thread char ma_lock_token;

static void ma_strategy_lock_take(void)
{
	const void *me = &ma_lock_token;
	/* Only this kernel thread ever stores its own token: reading it back means we hold
	 * the lock. */
	if (atomic_load_explicit(&ma_strategy_lock_owner, memory_order_relaxed) == me) {
		ma_strategy_lock_depth++;
		return;
	}
	ma_spin_lock(&ma_strategy_lock);
	atomic_store_explicit(&ma_strategy_lock_owner, me, memory_order_relaxed);
	ma_strategy_lock_depth = 1;
}

static void ma_strategy_lock_give(void)
{
	if (--ma_strategy_lock_depth)
		return;
	atomic_store_explicit(&ma_strategy_lock_owner, NULL, memory_order_relaxed);
	ma_spin_unlock(&ma_strategy_lock);
}

/* ---- strategies in use, and no longer ---- */

/* Strategies switched away from or deselected, with their private blocks: freed once no
 * hook can read them (ma_strategy_reclaim). Under the strategy lock. */
static struct ma_strategy_use *ma_strategy_retired;

/* The decision hooks' pick views, one per VP (find_next's stack may be a thread's, with
 * little room left when it was preempted: a pick view is 1.7 KiB). Allocated the first
 * time a strategy with decide_pick is selected, before it is published; a VP's own is
 * only written by find_next on that VP, under the queue's lock it holds. */
struct ma_pick_slot {
	_Alignas(64) struct ma_pick_view pv;
};
static struct ma_pick_slot *ma_pick_slots;

static void ma_use_free(struct ma_strategy_use *u)
{
	free(u->priv);
	free(u);
}

/* s, with its zeroed private block, set up (priv_init, then init); the strategy lock
 * held. 0, or ENOMEM or the errno of priv_init or init (nothing left behind). */
static int ma_use_start(const struct ma_strategy *s, struct ma_strategy_use **out)
{
	if (s->decide_pick && !ma_pick_slots) {
		size_t size = ma_rt.nb_vps * sizeof(*ma_pick_slots);
		ma_pick_slots = aligned_alloc(_Alignof(struct ma_pick_slot), size ? size : sizeof(*ma_pick_slots));
		if (!ma_pick_slots)
			return ENOMEM;
	}
	struct ma_strategy_use *u = calloc(1, sizeof(*u));
	if (!u)
		return ENOMEM;
	u->s = s;
	u->private_levels = s->private_levels;
	if (s->priv_size && !(u->priv = calloc(1, s->priv_size))) {
		free(u);
		return ENOMEM;
	}
	int e = s->priv_init ? s->priv_init(u->priv) : 0;
	if (!e && s->init) {
		e = s->init();
		if (e && s->priv_exit)
			s->priv_exit(u->priv);
	}
	if (e) {
		ma_use_free(u);
		return e;
	}
	*out = u;
	return 0;
}

/* u is no longer in use (another is current, or none): its exit, its priv_exit, and it
 * waits among the retired; the strategy lock held. */
static void ma_use_stop(struct ma_strategy_use *u)
{
	if (u->s->exit)
		u->s->exit();
	if (u->s->priv_exit)
		u->s->priv_exit(u->priv);
	u->retired = ma_strategy_retired;
	ma_strategy_retired = u;
}

int ma_strategy_select(const struct ma_strategy *s)
{
	atomic_store(&ma_sched_begun, 0);
	atomic_store(&ma_strategy_handle_cur, NULL);
	struct ma_strategy_use *u;
	ma_strategy_lock_take();
	int e = ma_use_start(s, &u);
	if (!e)
		atomic_store_explicit(&ma_strategy_cur, u, memory_order_release);
	ma_strategy_lock_give();
	return e;
}

void ma_strategy_deselect(void)
{
	ma_strategy_lock_take();
	struct ma_strategy_use *u = atomic_load_explicit(&ma_strategy_cur, memory_order_relaxed);
	/* Its exit still sees it current (gang tells the end of the runtime from a switch
	 * so). */
	if (u)
		ma_use_stop(u);
	atomic_store(&ma_strategy_cur, NULL);
	atomic_store(&ma_strategy_handle_cur, NULL);
	ma_strategy_lock_give();
}

void ma_strategy_reclaim(void)
{
	ma_strategy_lock_take();
	struct ma_strategy_use *u = ma_strategy_retired;
	ma_strategy_retired = NULL;
	free(ma_pick_slots);
	ma_pick_slots = NULL;
	ma_strategy_lock_give();
	while (u) {
		struct ma_strategy_use *next = u->retired;
		ma_use_free(u);
		u = next;
	}
}

static void ma_strategy_begin_current(void);

int ma_strategy_switch(const struct ma_strategy *s, const void *handle, const void **old_handle)
{
	ma_strategy_lock_take();
	struct ma_strategy_use *old = atomic_load_explicit(&ma_strategy_cur, memory_order_relaxed);
	const void *oh = atomic_load(&ma_strategy_handle_cur);
	*old_handle = oh ? oh : old->s;
	if (old->s == s) {
		atomic_store(&ma_strategy_handle_cur, handle);
		ma_strategy_lock_give();
		return 0;
	}
	struct ma_strategy_use *u;
	int e = ma_use_start(s, &u);
	if (e) {
		ma_strategy_lock_give();
		return e;
	}
	atomic_store_explicit(&ma_strategy_cur, u, memory_order_release);
	atomic_store(&ma_strategy_handle_cur, handle);
	ma_use_stop(old);
	ma_strategy_lock_give();
	if (atomic_load(&ma_sched_begun))
		ma_strategy_begin_current();
	return 0;
}

const void *ma_strategy_handle(void)
{
	return atomic_load(&ma_strategy_handle_cur);
}

/* ---- carrying decisions out ---- */

static atomic_ulong ma_decide_lists, ma_decide_done, ma_decide_dropped, ma_decide_lost;

void ma_strategy_decide_stats(struct ma_decide_stats *out)
{
	out->lists = atomic_load_explicit(&ma_decide_lists, memory_order_relaxed);
	out->done = atomic_load_explicit(&ma_decide_done, memory_order_relaxed);
	out->dropped = atomic_load_explicit(&ma_decide_dropped, memory_order_relaxed);
	out->lost = atomic_load_explicit(&ma_decide_lost, memory_order_relaxed);
}

/* Room of the list a hook fills about view v: a list decides about each entity at most
 * twice (burst then place a member, unplace then place), plus what is about no entity
 * (wakes). The storage lives in the view. */
#define MA_DECIDE_SLACK 16u

static void ma_decide_list(struct ma_view *v, struct ma_dlist *l)
{
	unsigned cap = 2 * ma_view_nb_nodes(v) + MA_DECIDE_SLACK;
	ma_dlist_init(l, ma_view_alloc(v, cap * sizeof(*l->d)), cap);
}

/* Carries list l about view v out and counts it; returns the decisions carried out. */
static unsigned ma_decide_exec(struct ma_view *v, const struct ma_dlist *l)
{
	struct ma_dresult r = ma_decisions_execute(v, l);
	atomic_fetch_add_explicit(&ma_decide_lists, 1, memory_order_relaxed);
	if (r.done)
		atomic_fetch_add_explicit(&ma_decide_done, r.done, memory_order_relaxed);
	if (r.dropped)
		atomic_fetch_add_explicit(&ma_decide_dropped, r.dropped, memory_order_relaxed);
	if (l->lost)
		atomic_fetch_add_explicit(&ma_decide_lost, l->lost, memory_order_relaxed);
	return r.done;
}

/* The serialised decision hooks about a bubble or the tree. */
enum ma_serial_event { MA_EV_START, MA_EV_SUBMIT, MA_EV_SHAKE, MA_EV_TICK };
typedef void (*ma_serial_hook)(const struct ma_view *v, void *priv, struct ma_dlist *out);

static ma_serial_hook ma_serial_hook_of(const struct ma_strategy *s, enum ma_serial_event ev)
{
	switch (ev) {
	case MA_EV_START: return s->decide_start;
	case MA_EV_SUBMIT: return s->decide_submit;
	case MA_EV_SHAKE: return s->decide_shake;
	case MA_EV_TICK: return s->decide_tick;
	}
	return NULL;
}

/* What ma_decide_serial did. */
enum ma_decided {
	MA_DECIDED,      /* the hook ran and its list was carried out */
	MA_UNDECIDED,    /* no view (memory ran out): the caller applies the NULL default */
	MA_CHANGED,      /* the strategy in use changed meanwhile: the caller looks again */
};

/* Under the strategy lock, if the strategy in use still is `want` (the one the caller
 * read, without the lock): the view of event ev (bubble b's subtree, or the whole tree
 * for start), its hook, its list carried out. */
static enum ma_decided ma_decide_serial(const struct ma_strategy_use *want, enum ma_serial_event ev,
					struct ma_bubble *b)
{
	ma_strategy_lock_take();
	const struct ma_strategy_use *u = atomic_load_explicit(&ma_strategy_cur, memory_order_relaxed);
	if (u != want) {
		ma_strategy_lock_give();
		return MA_CHANGED;
	}
	ma_serial_hook hook = ma_serial_hook_of(u->s, ev);
	struct ma_view v;
	int e = ev == MA_EV_START ? ma_view_build_tree(&v, 0) : ma_view_build_subtree(&v, b, 0);
	if (!e) {
		struct ma_dlist l;
		ma_decide_list(&v, &l);
		hook(&v, u->priv, &l);
		ma_decide_exec(&v, &l);
		ma_view_release(&v);
	}
	ma_strategy_lock_give();
	return e ? MA_UNDECIDED : MA_DECIDED;
}

/* ---- the serialised events ---- */

/* The current strategy's start (after marcel_bubble_sched_begin, or a switch after it). */
static void ma_strategy_begin_current(void)
{
	for (;;) {
		const struct ma_strategy_use *u = ma_strategy_current();
		if (!u)
			return;
		if (u->s->start) {
			u->s->start();
			return;
		}
		/* NULL: nothing. */
		if (!u->s->decide_start || ma_decide_serial(u, MA_EV_START, NULL) != MA_CHANGED)
			return;
	}
}

int marcel_bubble_sched_begin(void)
{
	if (!ma_rt.running)
		return EPERM;
	atomic_store(&ma_sched_begun, 1);
	ma_strategy_begin_current();
	return 0;
}

void ma_strategy_submit(struct ma_bubble *b)
{
	if (b->fixed_item >= 0) {
		ma_bubble_place(b, &ma_rt.rqs[b->fixed_item]);
		return;
	}
	for (;;) {
		const struct ma_strategy_use *u = ma_strategy_current();
		if (u && u->s->submit) {
			u->s->submit(b);
			return;
		}
		if (!u || !u->s->decide_submit)
			break;
		enum ma_decided d = ma_decide_serial(u, MA_EV_SUBMIT, b);
		if (d == MA_DECIDED)
			return;
		if (d == MA_UNDECIDED)
			break;
	}
	/* No opinion: on its parent's queue, closed. */
	struct ma_bubble *p = ma_entity_parent(&b->e);
	struct ma_holder *h = p ? __atomic_load_n(&p->e.sched_holder, __ATOMIC_ACQUIRE) : NULL;
	ma_bubble_place(b, h && h->type == MA_RUNQUEUE_HOLDER ? ma_rq_of_holder(h) : &ma_rt.rqs[0]);
}

/* Regenerates woken bubble b (not the root) with the current strategy. */
static void ma_shake(struct ma_bubble *b)
{
	for (;;) {
		const struct ma_strategy_use *u = ma_strategy_current();
		if (u->s->shake) {
			u->s->shake(b);
			return;
		}
		if (!u->s->decide_shake)
			break;
		enum ma_decided d = ma_decide_serial(u, MA_EV_SHAKE, b);
		if (d == MA_DECIDED)
			return;
		if (d == MA_UNDECIDED)
			break;
	}
	if (atomic_load(&b->status) == MA_BUBBLE_OPENED)
		ma_bubble_gather(b);
	else if (atomic_load(&b->status) == MA_BUBBLE_CLOSED && ma_bubble_unit(b) == b)
		ma_strategy_submit(b);
}

int marcel_bubble_shake_bubble(marcel_bubble_t *pub)
{
	struct ma_bubble *b = ma_bubble_get(pub);
	if (!b || b == ma_root_bubble)
		return EINVAL;
	if (!ma_rt.running || !b->woken)
		return EPERM;
	ma_shake(b);
	return 0;
}

void marcel_bubble_shake(void)
{
	if (!ma_rt.running)
		return;
	struct ma_bubble *r = ma_root_bubble;
	/* Taken under the root's lock, each with a reference (an implicit bubble may be let
	 * go of meanwhile), and shaken without it: a shake locks the bubble and its holder. */
	ma_spin_lock(&r->hold.lock);
	unsigned n = 0, max = r->nb_members;
	struct ma_bubble **subs = malloc(sizeof(*subs) * (max ? max : 1));
	for (struct ma_list *l = r->members.next; subs && l != &r->members && n < max; l = l->next) {
		struct ma_entity *e = ma_container_of(l, struct ma_entity, member_node);
		if (e->type != MA_BUBBLE_ENTITY)
			continue;
		struct ma_bubble *b = ma_bubble_of_entity(e);
		if (!b->woken || ma_bubble_dead(b))
			continue;
		ma_bubble_ref(b);
		subs[n++] = b;
	}
	ma_spin_unlock(&r->hold.lock);
	for (unsigned i = 0; i < n; i++) {
		ma_shake(subs[i]);
		ma_bubble_unref(subs[i]);
	}
	free(subs);
}

int marcel_bubble_submit(marcel_bubble_t *pub)
{
	struct ma_bubble *b = ma_bubble_get(pub);
	if (!b || b == ma_root_bubble)
		return EINVAL;
	if (!ma_rt.running || !b->woken)
		return EPERM;
	if (atomic_load(&b->status) != MA_BUBBLE_CLOSED || ma_bubble_unit(b) != b)
		return EBUSY;
	ma_strategy_submit(b);
	return 0;
}

void ma_strategy_tick(struct ma_bubble *b)
{
	for (;;) {
		const struct ma_strategy_use *u = ma_strategy_current();
		/* None: the runtime is stopping, nothing is placed any more. */
		if (!u)
			return;
		if (u->s->tick) {
			u->s->tick(b);
			return;
		}
		if (!u->s->decide_tick)
			break;
		enum ma_decided d = ma_decide_serial(u, MA_EV_TICK, b);
		if (d == MA_DECIDED)
			return;
		if (d == MA_UNDECIDED)
			break;
	}
	ma_bubble_regen_due(b);
}

/* ---- the concurrent events ---- */

int ma_strategy_vp_idle(struct ma_worker *w)
{
	const struct ma_strategy_use *u = ma_strategy_current();
	if (!u)
		return 0;
	if (u->s->vp_is_idle)
		return u->s->vp_is_idle(w);
	/* NULL: nothing to make visible. */
	if (!u->s->decide_vp_idle)
		return 0;
	struct ma_view v;
	if (ma_view_build_vp(&v, w, 0))
		return 0;
	struct ma_dlist l;
	ma_decide_list(&v, &l);
	u->s->decide_vp_idle(&v, u->priv, &l);
	unsigned done = ma_decide_exec(&v, &l);
	ma_view_release(&v);
	return done != 0;
}

void ma_strategy_stray(struct ma_worker *w, struct marcel_task *t)
{
	const struct ma_strategy_use *u = ma_strategy_current();
	if (u && u->s->stray) {
		u->s->stray(w, t);
		return;
	}
	struct ma_view v;
	if (u && u->s->decide_stray && !ma_view_build_thread(&v, t, 0)) {
		struct ma_dlist l;
		ma_decide_list(&v, &l);
		u->s->decide_stray(&v, u->priv, &l);
		ma_decide_exec(&v, &l);
		ma_view_release(&v);
		return;
	}
	atomic_store_explicit(&t->stray, 0, memory_order_relaxed); /* another strategy's mark */
}

enum ma_pick ma_strategy_pick(const struct ma_strategy_use *u, const struct ma_worker *w, struct ma_runqueue *rq,
			      struct ma_bubble *b, struct ma_runqueue **to)
{
	/* Published before u (ma_use_start): there for every strategy with decide_pick. */
	struct ma_pick_view *pv = &ma_pick_slots[w->vp].pv;
	ma_pick_view_fill(pv, w, rq, b, 0);
	struct ma_decision d = u->s->decide_pick(pv, u->priv);
	if (d.entity != pv->b.id)
		return MA_PICK_SERVE;
	if (d.kind == MA_D_BURST && d.item == pv->item)
		return MA_PICK_BURST;
	if (d.kind == MA_D_MOVE && d.item != pv->item) {
		struct ma_runqueue *q = ma_view_queue(d.item);
		if (q) {
			*to = q;
			return MA_PICK_MOVE;
		}
	}
	return MA_PICK_SERVE;
}
