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
 * figures under their lock, for instance), and a private block is freed only after a
 * grace period (below).
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

/* ---- strategies in use, and private blocks no longer in use ---- */

/* One use per table ever selected, kept until the runtime stops: a hook that read the
 * strategy in use just before a switch may still read its use (s, private_levels), so a
 * use is never freed while the runtime runs, and a table selected again gets its use back
 * (the uses are as many as the tables, not as the switches). Under the strategy lock. */
static struct ma_strategy_use *ma_strategy_uses;

/*
 * Grace periods for private blocks. A concurrent hook (decide_vp_idle, decide_pick,
 * decide_stray) reads priv without the strategy lock, so a block its strategy no longer
 * uses is freed only once every VP has left the concurrent hooks it was in when the block
 * was taken out of use. Each VP counts its entries and exits in its slot's hook_seq (odd
 * while inside); a retired block keeps a snapshot of every slot taken after the block
 * left its use, and goes once each VP was outside then, or has moved since. The entry is
 * a sequentially consistent read-modify-write before priv is read, and the retirement a
 * sequentially consistent store of NULL before the snapshot: of the two, one sees the
 * other, so a VP that read the old block was counted inside. Only strategies with a
 * private block pay the entry (a locked instruction), and only in their concurrent
 * decision hooks, none of which is on the yield or create path.
 */
struct ma_vp_slot {
	_Alignas(64) atomic_uint hook_seq;
};
static struct ma_vp_slot *ma_vp_slots;
static unsigned ma_nb_vp_slots;

struct ma_retired {
	struct ma_retired *_Atomic next;
	const struct ma_strategy *s;    /* its priv_exit runs when the block goes */
	void *priv;
	unsigned snap[];                /* hook_seq of each VP when the block was retired */
};
/* Under the strategy lock; read without it only to see whether it is empty. */
static struct ma_retired *_Atomic ma_strategy_retired;

/* The decision hooks' pick views, one per VP, each followed by the room of its children
 * items (find_next's stack may be a thread's, with little room left when it was
 * preempted). Allocated the first time a strategy with decide_pick is selected, before it
 * is published; a VP's own is only written by find_next on that VP, under the queue's
 * lock it holds. */
static char *ma_pick_slots;
static size_t ma_pick_stride;

static struct ma_pick_view *ma_pick_slot(unsigned vp)
{
	return (struct ma_pick_view *)(ma_pick_slots + vp * ma_pick_stride);
}

/* The per-VP slots, allocated at the first selection; the strategy lock held. */
static int ma_slots_ready(const struct ma_strategy *s)
{
	unsigned n = ma_rt.nb_vps ? ma_rt.nb_vps : 1;
	if (!ma_vp_slots) {
		ma_vp_slots = aligned_alloc(_Alignof(struct ma_vp_slot), n * sizeof(*ma_vp_slots));
		if (!ma_vp_slots)
			return ENOMEM;
		for (unsigned i = 0; i < n; i++)
			atomic_init(&ma_vp_slots[i].hook_seq, 0);
		ma_nb_vp_slots = n;
	}
	if (s->decide_pick && !ma_pick_slots) {
		unsigned kids = ma_pick_max_kids();
		size_t head = (sizeof(struct ma_pick_view) + _Alignof(struct ma_pick_kid) - 1) &
			      ~(_Alignof(struct ma_pick_kid) - 1);
		size_t stride = (head + kids * sizeof(struct ma_pick_kid) + 63) & ~(size_t)63;
		if (!(ma_pick_slots = aligned_alloc(64, n * stride)))
			return ENOMEM;
		ma_pick_stride = stride;
		for (unsigned i = 0; i < n; i++) {
			struct ma_pick_view *pv = ma_pick_slot(i);
			pv->kids = (struct ma_pick_kid *)((char *)pv + head);
			pv->max_kids = kids;
		}
	}
	return 0;
}

/* Entering a concurrent hook on VP vp of the strategy of use u: its private block, NULL
 * if it has one no longer (switched away from meanwhile: the hook is then not called).
 * ma_hook_leave(vp) after the hook, whatever this returned. */
static void *ma_hook_enter(const struct ma_strategy_use *u, unsigned vp)
{
	atomic_fetch_add_explicit(&ma_vp_slots[vp].hook_seq, 1, memory_order_seq_cst);
	return atomic_load_explicit(&u->priv, memory_order_acquire);
}

static void ma_hook_leave(unsigned vp)
{
	/* Release: what the hook read of the block comes before the retirer's acquire
	 * reading of the count, hence before the block is freed. */
	atomic_fetch_add_explicit(&ma_vp_slots[vp].hook_seq, 1, memory_order_release);
}

/* Frees the retired blocks no VP can still be reading (all of them if `all`: every worker
 * has stopped). The strategy lock held. */
static void ma_retired_sweep(int all)
{
	struct ma_retired *_Atomic *pp = &ma_strategy_retired;
	struct ma_retired *r;
	while ((r = atomic_load_explicit(pp, memory_order_relaxed))) {
		int gone = all;
		if (!gone) {
			gone = 1;
			for (unsigned i = 0; gone && i < ma_nb_vp_slots; i++)
				gone = !(r->snap[i] & 1) ||
				       atomic_load_explicit(&ma_vp_slots[i].hook_seq, memory_order_acquire) != r->snap[i];
		}
		if (!gone) {
			pp = &r->next;
			continue;
		}
		atomic_store_explicit(pp, atomic_load_explicit(&r->next, memory_order_relaxed), memory_order_relaxed);
		if (r->s->priv_exit)
			r->s->priv_exit(r->priv);
		free(r->priv);
		free(r);
	}
}

/* Takes u's block out of use (u is no longer the strategy in use) and retires it; the
 * strategy lock held. */
static void ma_priv_retire(struct ma_strategy_use *u)
{
	void *priv = atomic_load_explicit(&u->priv, memory_order_relaxed);
	if (!priv)
		return;
	atomic_store_explicit(&u->priv, NULL, memory_order_seq_cst);
	struct ma_retired *r = malloc(sizeof(*r) + ma_nb_vp_slots * sizeof(r->snap[0]));
	if (!r) {
		/* Nowhere to note it: the block is lost (never freed, its priv_exit never
		 * run) rather than freed under a late hook. */
		return;
	}
	r->s = u->s;
	r->priv = priv;
	for (unsigned i = 0; i < ma_nb_vp_slots; i++)
		r->snap[i] = atomic_load_explicit(&ma_vp_slots[i].hook_seq, memory_order_seq_cst);
	atomic_init(&r->next, atomic_load_explicit(&ma_strategy_retired, memory_order_relaxed));
	atomic_store_explicit(&ma_strategy_retired, r, memory_order_relaxed);
}

/* s in use, with a fresh zeroed private block, set up (priv_init, then init); the
 * strategy lock held. 0, or ENOMEM or the errno of priv_init or init (nothing left
 * behind but the use itself, kept for the next selection of s). */
static int ma_use_start(const struct ma_strategy *s, struct ma_strategy_use **out)
{
	int e = ma_slots_ready(s);
	if (!e && s->heartbeat_us)
		e = ma_heartbeat_prepare();
	if (e)
		return e;
	struct ma_strategy_use *u = ma_strategy_uses;
	while (u && u->s != s)
		u = u->next;
	if (!u) {
		if (!(u = calloc(1, sizeof(*u))))
			return ENOMEM;
		u->s = s;
		u->private_levels = s->private_levels;
		u->next = ma_strategy_uses;
		ma_strategy_uses = u;
	}
	void *priv = NULL;
	if (s->priv_size && !(priv = calloc(1, s->priv_size)))
		return ENOMEM;
	e = s->priv_init ? s->priv_init(priv) : 0;
	if (e) {
		free(priv);
		return e;
	}
	/* Before u is published (release), or, if u was retired from an earlier selection and
	 * a late hook still looks at it, seen with its acquire. */
	atomic_store_explicit(&u->priv, priv, memory_order_release);
	/* The old strategy's beat armed before this is cancelled; one it arms late meets s. */
	ma_heartbeat_start(s->heartbeat_us);
	*out = u;
	return 0;
}

/* u is no longer in use (another is current, or none): its block retires; the strategy
 * lock held. */
static void ma_use_stop(struct ma_strategy_use *u)
{
	ma_priv_retire(u);
	ma_retired_sweep(0);
}

int ma_strategy_select(const struct ma_strategy *s)
{
	atomic_store(&ma_sched_begun, 0);
	atomic_store(&ma_strategy_handle_cur, NULL);
	/* Before the strategy lock: adopting free threads takes the tree lock. */
	if (!s->free_threads)
		ma_tree_want();
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
	ma_heartbeat_forget();
	atomic_store(&ma_strategy_cur, NULL);
	atomic_store(&ma_strategy_handle_cur, NULL);
	ma_strategy_lock_give();
}

void ma_strategy_reclaim(void)
{
	ma_strategy_lock_take();
	ma_retired_sweep(1);
	struct ma_strategy_use *u = ma_strategy_uses;
	ma_strategy_uses = NULL;
	free(ma_pick_slots);
	ma_pick_slots = NULL;
	free(ma_vp_slots);
	ma_vp_slots = NULL;
	ma_nb_vp_slots = 0;
	ma_strategy_lock_give();
	while (u) {
		struct ma_strategy_use *next = u->next;
		/* Still set if the runtime stopped without a deselection (a failed start). */
		free(atomic_load_explicit(&u->priv, memory_order_relaxed));
		free(u);
		u = next;
	}
}

static void ma_strategy_begin_current(void);

/* Whether node n is a bubble the strategy in use left off the queues (UNPLACE: gang's
 * waiting gangs): woken, closed, placed nowhere, in an opened bubble. */
static int ma_unplaced(const struct ma_vnode *n)
{
	return n->is_bubble && n->woken && n->status == MA_V_CLOSED && n->item < 0 && n->parent &&
	       n->parent->status == MA_V_OPENED;
}

/* After a switch: the bubbles the old strategy took off the queues would wait for it for
 * ever; each is handed to the new one, as when it was woken. A bubble on its way to the
 * strategy at that instant may be handed over twice: it is then placed where the new
 * strategy decides the second time (a placement seen stale is dropped, one seen done is
 * a move), never lost. */
static void ma_strategy_rescue(void)
{
	struct ma_view v;
	if (ma_view_build_tree(&v, MA_VIEW_SHAPE))
		return;
	/* The tree may be as deep as the program's recursion: a stack of our own. */
	unsigned n = ma_view_nb_nodes(&v), top = 0;
	const struct ma_vnode **stack = v.root ? malloc(n * sizeof(*stack)) : NULL;
	struct ma_bubble **found = stack ? malloc(n * sizeof(*found)) : NULL;
	unsigned nb_found = 0;
	if (found)
		stack[top++] = v.root;
	while (top) {
		const struct ma_vnode *x = stack[--top];
		if (ma_unplaced(x)) {
			struct ma_vslot *sl = ma_view_slot(&v, x->id);
			if (sl) {
				/* Kept alive after the view is released, until submitted. */
				found[nb_found] = ma_bubble_of_entity(sl->e);
				ma_bubble_ref(found[nb_found++]);
			}
			continue;
		}
		for (unsigned i = 0; i < x->nb_children; i++)
			if (x->children[i]->is_bubble)
				stack[top++] = x->children[i];
	}
	ma_view_release(&v);
	for (unsigned i = 0; i < nb_found; i++) {
		ma_strategy_submit(found[i]);
		ma_bubble_unref(found[i]);
	}
	free(found);
	free(stack);
}

int ma_strategy_switch(const struct ma_strategy *s, const void *handle, const void **old_handle)
{
	if (!s->free_threads)
		ma_tree_want();
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
	ma_strategy_rescue();
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
	if (l->beat)
		ma_heartbeat_arm();
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

/*
 * If the strategy in use still is `want` (the one the caller read, without the lock):
 * the view of event ev (bubble b's subtree, none for the heartbeat's tick (b NULL), or
 * the whole tree for start), its hook under
 * the strategy lock, its list carried out; again if the hook asks.
 *
 * Only the hook needs the lock (it reads and writes priv): a submit builds its view
 * before taking it and carries its list out after letting it go, so that VPs waking
 * bubbles at once wait for each other only while a hook decides (the executor checks
 * every decision against what is there then, under the locks it takes). start holds it
 * throughout, its rounds and the resubmits its GATHERs cause included: those are nested
 * (ma_view.nested), and no other event may come between its rounds.
 */
static enum ma_decided ma_decide_serial(const struct ma_strategy_use *want, enum ma_serial_event ev,
					struct ma_bubble *b)
{
	int whole = ev == MA_EV_START;
	if (whole)
		ma_strategy_lock_take();
	unsigned flags = want->s->view_detail;
	int e = 0;
	/* The first view, and at most two more if the hook asks again. */
	for (unsigned round = 0; round < 3; round++) {
		struct ma_view v;
		e = whole ? ma_view_build_tree(&v, flags) : ma_view_build_subtree(&v, b, flags);
		if (e)
			break;
		if (!whole)
			ma_strategy_lock_take();
		const struct ma_strategy_use *u = atomic_load_explicit(&ma_strategy_cur, memory_order_relaxed);
		if (u != want) {
			ma_strategy_lock_give();
			ma_view_release(&v);
			return MA_CHANGED;
		}
		if (atomic_load_explicit(&ma_strategy_retired, memory_order_relaxed))
			ma_retired_sweep(0);
		v.round = (unsigned char)round;
		v.nested = ma_strategy_lock_depth > 1;
		struct ma_dlist l;
		ma_decide_list(&v, &l);
		ma_serial_hook_of(u->s, ev)(&v, atomic_load_explicit(&u->priv, memory_order_relaxed), &l);
		if (!whole)
			ma_strategy_lock_give();
		ma_decide_exec(&v, &l);
		ma_view_release(&v);
		if (!l.again)
			break;
		flags |= l.again & ~MA_VIEW_AGAIN;
	}
	if (whole)
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
		/* NULL: nothing. */
		if (!u->s->decide_start || ma_decide_serial(u, MA_EV_START, NULL) != MA_CHANGED)
			return;
	}
}

int marcel_bubble_sched_begin(void)
{
	if (!ma_rt.running)
		return EPERM;
	ma_tree_want();
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
	struct ma_holder *h = p ? ma_load_acquire(&p->e.sched_holder) : NULL;
	ma_bubble_place(b, h && h->type == MA_RUNQUEUE_HOLDER ? ma_rq_of_holder(h) : &ma_rt.rqs[0]);
}

/* Regenerates woken bubble b (not the root) with the current strategy. */
static void ma_shake(struct ma_bubble *b)
{
	for (;;) {
		const struct ma_strategy_use *u = ma_strategy_current();
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
	ma_list_for_each_entry(struct ma_entity, e, &r->members, member_node) {
		if (!subs || n == max)
			break;
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
	int beat = ma_heartbeat_is(b);
	for (;;) {
		const struct ma_strategy_use *u = ma_strategy_current();
		/* None: the runtime is stopping, nothing is placed any more. */
		if (!u)
			return;
		if (!u->s->decide_tick)
			break;
		enum ma_decided d = ma_decide_serial(u, MA_EV_TICK, beat ? NULL : b);
		if (d == MA_DECIDED)
			return;
		if (d == MA_UNDECIDED)
			break;
	}
	/* The heartbeat's bubble is never opened: nothing to regenerate. */
	if (!beat)
		ma_bubble_regen_due(b);
}

/* ---- the concurrent events ---- */

typedef void (*ma_concurrent_hook)(const struct ma_view *v, const void *priv, struct ma_dlist *out);

/* Concurrent hook `hook` of u on VP w, on the view of w's neighbourhood (t NULL) or of
 * thread t: the decisions carried out, -1 if it was not called (no view, or u's block
 * retired meanwhile). */
static int ma_decide_concurrent(const struct ma_strategy_use *u, struct ma_worker *w, struct marcel_task *t,
				ma_concurrent_hook hook)
{
	int done = -1;
	const void *priv = u->s->priv_size ? ma_hook_enter(u, w->vp) : NULL;
	struct ma_view v;
	if ((priv || !u->s->priv_size) && !(t ? ma_view_build_thread(&v, t, 0) : ma_view_build_vp(&v, w, 0))) {
		struct ma_dlist l;
		ma_decide_list(&v, &l);
		hook(&v, priv, &l);
		done = (int)ma_decide_exec(&v, &l);
		ma_view_release(&v);
	}
	if (u->s->priv_size)
		ma_hook_leave(w->vp);
	return done;
}

int ma_strategy_vp_idle(struct ma_worker *w)
{
	const struct ma_strategy_use *u = ma_strategy_current();
	if (!u)
		return 0;
	/* NULL: nothing to make visible. */
	if (!u->s->decide_vp_idle)
		return 0;
	return ma_decide_concurrent(u, w, NULL, u->s->decide_vp_idle) > 0;
}

void ma_strategy_stray(struct ma_worker *w, struct marcel_task *t)
{
	const struct ma_strategy_use *u = ma_strategy_current();
	if (u && u->s->decide_stray) {
		/* Only one yield in stray_every looks at the way home; the others cost a count. */
		if (u->s->stray_every > 1 && ++t->stray_yields % u->s->stray_every)
			return;
		if (ma_decide_concurrent(u, w, t, u->s->decide_stray) >= 0)
			return;
	}
	atomic_store_explicit(&t->req.stray, 0, memory_order_relaxed); /* another strategy's mark */
}

enum ma_pick ma_strategy_pick(const struct ma_strategy_use *u, const struct ma_worker *w, struct ma_runqueue *rq,
			      struct ma_bubble *b, struct ma_runqueue **to)
{
	/* Published before u (ma_use_start): there for every strategy with decide_pick. */
	struct ma_pick_view *pv = ma_pick_slot(w->vp);
	const void *priv = NULL;
	if (u->s->priv_size && !(priv = ma_hook_enter(u, w->vp))) {
		ma_hook_leave(w->vp);
		return MA_PICK_SERVE;
	}
	ma_pick_view_fill(pv, w, rq, b);
	struct ma_decision d = u->s->decide_pick(pv, priv);
	/* Asked for the children items or the load (or both): once. */
	if (d.flags & (MA_D_KIDS | MA_D_LOAD)) {
		if (d.flags & MA_D_KIDS)
			ma_pick_view_kids(pv, w, rq);
		if (d.flags & MA_D_LOAD)
			ma_pick_view_load(pv, rq, b);
		d = u->s->decide_pick(pv, priv);
	}
	if (u->s->priv_size)
		ma_hook_leave(w->vp);
	if (d.entity != pv->b.id || (d.flags & (MA_D_KIDS | MA_D_LOAD)))
		return MA_PICK_SERVE;
	/* Served here, and a VP elsewhere comes to take it whole: ma_wake_outside takes no
	 * lock (rq is held). */
	if (d.kind == MA_D_SERVE && (d.flags & MA_D_OUTSIDE)) {
		ma_wake_outside(rq);
		return MA_PICK_SERVE;
	}
	if (d.kind == MA_D_BURST && d.item == pv->item)
		return MA_PICK_BURST;
	if (d.kind == MA_D_MOVE) {
		struct ma_runqueue *q = ma_view_queue(d.item);
		if (q) {
			*to = q;
			return MA_PICK_MOVE;
		}
	}
	return MA_PICK_SERVE;
}
