/*
 * steal: bubbles start closed where they are woken, and idle VPs steal work, whole
 * bubbles first, from the nearest subtree that has more than they do.
 *
 * A woken bubble goes to the queue of the item its waker runs under at the bubble's
 * sched_level (the machine's queue without one; where it last burst when it comes back
 * from a regeneration). A VP that picks a closed bubble bursts it there if it only holds
 * sub-bubbles (they stay closed, so still stealable whole), or if it is the only unit
 * waiting in that subtree and its threads fit beside what runs there (or fit in no
 * subtree of that size at all); otherwise it serves it closed and, if that subtree is
 * overloaded, wakes a VP elsewhere to come and take it whole.
 *
 * An idle VP walks up its path: at each level, the sibling subtrees whose load per VP is
 * above its own side's, most loaded first; from one that has more threads than VPs it
 * takes a queued closed bubble (to its own side's queue at that level), failing that a
 * queued thread (to its own queue): first one whose bubble burst on the thief's side (it
 * goes back there), then one whose bubble is not on the victim's side (main, for one),
 * last one taken from beside its bubble's other threads. That one is a stray: at its
 * yields it goes back to its bubble's queue as soon as there is room there, so that a
 * bubble lent out while its side was overloaded is whole again once the load is gone
 * (ma_steal_stray). It takes nothing that would leave its side above the
 * victim: that is what keeps two half-loaded subtrees from passing a bubble back and
 * forth. Loads count threads where they belong (their queue), not where they happen to
 * run: a thread on its way to another subtree is not stolen back.
 *
 * Idle VPs sleep, and work queued where every VP is busy wakes none of them: a heartbeat
 * (every millisecond while any VP runs a thread) wakes one idle VP, the nearest, for a
 * place where work has waited since the previous beat; a VP that stole wakes the next,
 * while there is more to take. Single threads are only taken from such places: bubbles
 * move as soon as they wait, threads once they have waited a beat.
 */
#include <stdlib.h>
#include "common_steal.h"
#include "ma_trace.h"

/* Children of one item the idle walk looks at (wider items are rare; the rest wait). */
#define MA_STEAL_MAXKIDS 256

#define MA_STEAL_TICK_US 1000

/* Per queue (items, then VPs), since when the heartbeat has seen it hold work that none
 * of its VPs is free to take (0: it has not). Static: a late hook may still read it. */
#define MA_STEAL_MAXQ 4096
static _Atomic uint64_t ma_steal_starving[MA_STEAL_MAXQ];

static unsigned ma_steal_qindex(const struct ma_runqueue *q)
{
	return q->vp >= 0 ? ma_rt.topo.nb_levels + (unsigned)q->vp : q->level->id;
}

/* Whether single threads may be taken from q: its work has waited since at least the
 * previous heartbeat. A transient (a thread between two VPs, a bubble moving) lasts
 * microseconds; a thread taken during one would separate it from its bubble for good. */
static int ma_steal_starved(const struct ma_runqueue *q)
{
	unsigned i = ma_steal_qindex(q);
	uint64_t since = i < MA_STEAL_MAXQ ? atomic_load_explicit(&ma_steal_starving[i], memory_order_relaxed) : 0;
	return since && ma_clock_ns() - since >= MA_STEAL_TICK_US * 500u;
}

static struct ma_runqueue *ma_steal_home(struct ma_bubble *b)
{
	int last = __atomic_load_n(&b->e.last_level, __ATOMIC_RELAXED);
	if (last >= 0 && (unsigned)last < ma_rt.topo.nb_levels)
		return &ma_rt.rqs[last];
	int level = __atomic_load_n(&b->e.sched_level, __ATOMIC_RELAXED);
	struct ma_worker *w = ma_worker_self();
	if (w && level)
		return ma_strategy_level_rq(w, level);
	return &ma_rt.rqs[0];
}

static void ma_steal_submit(struct ma_bubble *b)
{
	/* Read before it is placed: once queued, a VP may burst it at once. */
	struct ma_runqueue *rq = ma_steal_home(b);
	ma_spin_lock(&b->hold.lock);
	long long n = ma_bubble_threads_locked(b);
	ma_spin_unlock(&b->hold.lock);
	ma_bubble_place(b, rq);
	/* b counts once in the queue's load; its other threads come on top. */
	if ((long long)ma_sl_load(rq, NULL) + n - 1 > (long long)ma_sl_nb_vps(rq))
		ma_wake_outside(rq);
	ma_heartbeat_arm();
}

/* Whether a closed sibling of b is placed in rq's subtree. A placed bubble is off the
 * queues while all its threads run or are being switched to, so the queues alone would
 * let two bubbles woken together burst on one node before a thief can take either. The
 * parent is met out of order (we hold rq): only try-locked; busy, it counts as a yes. */
static int ma_steal_sibling_here(struct ma_bubble *b, struct ma_runqueue *rq)
{
	struct ma_bubble *p = ma_entity_parent(&b->e);
	if (!p || p == ma_root_bubble)
		return 0;
	if (!ma_spin_trylock(&p->hold.lock))
		return 1;
	int found = 0;
	for (struct ma_list *l = p->members.next; l != &p->members && !found; l = l->next) {
		struct ma_entity *m = ma_container_of(l, struct ma_entity, member_node);
		if (m == &b->e || m->type != MA_BUBBLE_ENTITY)
			continue;
		struct ma_bubble *sb = ma_bubble_of_entity(m);
		struct ma_holder *h = __atomic_load_n(&sb->e.sched_holder, __ATOMIC_ACQUIRE);
		found = h && h->type == MA_RUNQUEUE_HOLDER && atomic_load(&sb->status) == MA_BUBBLE_CLOSED &&
			ma_sl_within(ma_rq_of_holder(h), rq);
	}
	ma_spin_unlock(&p->hold.lock);
	return found;
}

static enum ma_pick ma_steal_sched(struct ma_worker *w, struct ma_runqueue *rq, struct ma_bubble *b,
				   struct ma_runqueue **to)
{
	(void)w, (void)to;
	/* On a VP's own queue it runs there anyway; closed, thieves can take it whole. */
	if (rq->vp >= 0)
		return MA_PICK_SERVE;
	/* Read only: the bubble is met out of order, so only try-locked. */
	if (!ma_spin_trylock(&b->hold.lock))
		return MA_PICK_SERVE;
	int threads = 0;
	for (struct ma_list *l = b->members.next; l != &b->members && !threads; l = l->next)
		threads = ma_container_of(l, struct ma_entity, member_node)->type == MA_TASK_ENTITY;
	long long n = threads ? ma_bubble_threads_locked(b) : 0;
	ma_spin_unlock(&b->hold.lock);
	/* Only sub-bubbles: bursting exposes them, still closed, to thieves. */
	if (!threads)
		return MA_PICK_BURST;
	long long vps = ma_sl_nb_vps(rq), queued = (long long)ma_sl_queued(rq);
	long long others = (long long)ma_sl_running(rq, NULL, b) + queued - 1;
	/* Alone: burst if its threads fit beside what runs here, or if they could fit in
	 * no subtree of this size anyway (thieves then take them one by one). Otherwise
	 * stay closed, so that a thief can take it whole. */
	if (queued <= 1 && !ma_steal_sibling_here(b, rq) && (n + others <= vps || n > vps))
		return MA_PICK_BURST;
	if (n + others > vps)
		ma_wake_outside(rq);
	return MA_PICK_SERVE;
}

/* ---- idle VPs ---- */

/* Whether some VP runs a thread: only then can work appear that nobody sees. */
static int ma_steal_anyone_busy(void)
{
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		const struct marcel_task *cur = __atomic_load_n(&ma_rt.workers[v].current, __ATOMIC_RELAXED);
		if (cur && cur != &ma_rt.workers[v].idle)
			return 1;
	}
	return 0;
}

/* An idle VP that found nothing keeps the heartbeat going while others work. */
static void ma_steal_clock_maybe(void)
{
	if (ma_steal_anyone_busy())
		ma_heartbeat_arm();
}

struct ma_steal_cmp {
	long long mine, mine_vps, victim, victim_vps;
};

/* Only from a victim with more threads than VPs (otherwise what waits there is about to
 * run there: a thread that just moved, a VP between two threads), and never so much that
 * we end above the victim per VP (it could take it back at once). */
static int ma_steal_accept(unsigned threads, unsigned visible, void *arg)
{
	const struct ma_steal_cmp *c = arg;
	(void)visible;
	long long x = threads;
	return c->victim > c->victim_vps && (c->mine + x) * c->victim_vps <= (c->victim - x) * c->mine_vps;
}

/* Tries to take work from subtree S for worker w, whose side at that level is `mine`. */
static int ma_steal_from(struct ma_worker *w, struct ma_runqueue *mine, struct ma_runqueue *S,
			 struct ma_steal_cmp *c)
{
	unsigned max = ma_rt.topo.nb_levels + ma_rt.nb_vps;
	struct ma_runqueue **qs = malloc(max * sizeof(*qs));
	if (!qs)
		return 0;
	unsigned n = ma_sl_queues(S, qs, max);
	int got = 0;
	/* Whole bubbles first: they keep their threads together on our side. */
	for (unsigned i = 0; i < n && !got; i++)
		got = ma_sl_take_bubble(qs[i], mine, ma_steal_accept, c);
	/* Then single threads: first those whose bubble burst on our side (they go back to
	 * it), then those no bubble misses, and only then one taken from beside its bubble's
	 * other threads. Each try measures both sides again just before: another thief may
	 * have brought work to our side, and the kernel may have kept this VP off its
	 * processor since the walk (then its figures are stale by milliseconds). */
	for (int kin = MA_SL_HOMING; kin <= MA_SL_BOUND && !got; kin++)
		for (unsigned i = 0; i < n && !got; i++) {
			if (!__atomic_load_n(&qs[i]->nr_ready, __ATOMIC_RELAXED) || !ma_steal_starved(qs[i]))
				continue;
			c->mine = (long long)ma_sl_load_exact(mine, w);
			c->victim = (long long)ma_sl_load_exact(S, w);
			got = ma_sl_take_thread(qs[i], &w->rq, mine, S, (enum ma_sl_kin)kin, ma_steal_accept, c);
		}
	free(qs);
	return got;
}

static int ma_steal_vp_idle(struct ma_worker *w)
{
	struct ma_runqueue *kids[MA_STEAL_MAXKIDS];
	for (unsigned i = 1; i < w->path_len; i++) {
		struct ma_runqueue *A = w->path[i], *mine = w->path[i - 1];
		unsigned n = ma_sl_kids(A, kids, MA_STEAL_MAXKIDS);
		struct ma_steal_cmp c = { .mine = (long long)ma_sl_load_exact(mine, w),
					  .mine_vps = ma_sl_nb_vps(mine) };
		long long loads[MA_STEAL_MAXKIDS];
		for (unsigned k = 0; k < n; k++)
			loads[k] = kids[k] == mine ? -1 : (long long)ma_sl_load_exact(kids[k], w);
		/* Most loaded sibling first (per VP); stop at those not above us. */
		for (;;) {
			int best = -1;
			for (unsigned k = 0; k < n; k++)
				if (loads[k] >= 0 &&
				    (best < 0 || loads[k] * (long long)ma_sl_nb_vps(kids[best]) >
							 loads[best] * (long long)ma_sl_nb_vps(kids[k])))
					best = (int)k;
			if (best < 0)
				break;
			struct ma_runqueue *S = kids[best];
			c.victim = loads[best];
			c.victim_vps = ma_sl_nb_vps(S);
			loads[best] = -1;
			if (c.victim * c.mine_vps <= c.mine * c.victim_vps)
				break;
			if (ma_steal_from(w, mine, S, &c)) {
				/* Chain: the next idle VP comes for what is left. */
				if (ma_sl_load(S, NULL) > ma_sl_nb_vps(S))
					ma_wake_outside(S);
				return 1;
			}
		}
	}
	ma_steal_clock_maybe();
	return 0;
}

/* Strays look at their way home every this many yields. */
#define MA_STEAL_STRAY_EVERY 16

/* A thread taken from beside its bubble's other threads (a BOUND steal) goes back to its
 * bubble's queue at a yield, once a VP is free there or that side would be no busier
 * per VP than the one it runs on is now: one thread of slack, so that two threads stolen
 * crosswise (each side full with the other's) swap back. Without this, a bubble whose
 * threads were spread while its side was overloaded stays spread once the load is gone,
 * and a theft made on stale figures (a VP the kernel kept off its processor) separates
 * it for good: nothing else moves a thread that always finds a VP. */
static void ma_steal_stray(struct ma_worker *w, struct marcel_task *t)
{
	if (++t->stray_yields % MA_STEAL_STRAY_EVERY)
		return;
	struct ma_holder *h = __atomic_load_n(&t->e.sched_holder, __ATOMIC_ACQUIRE);
	struct ma_runqueue *home = ma_sl_bubble_home(&t->e);
	/* Gathered into a bubble, its bubble closed or gone, or already on its side. */
	if (!h || h->type != MA_RUNQUEUE_HOLDER || !home || ma_path_index(w, home) >= 0) {
		atomic_store_explicit(&t->stray, 0, memory_order_relaxed);
		return;
	}
	/* The two sides: the children, on our path and on home's, of the lowest queue of our
	 * path that home lies under (the machine's at worst). */
	unsigned i = 1;
	while (i < w->path_len && !ma_sl_within(home, w->path[i]))
		i++;
	if (i >= w->path_len)
		return;
	struct ma_runqueue *here = w->path[i - 1], *there = home;
	while (there->father && there->father != w->path[i])
		there = there->father;
	/* Moved meanwhile (the move takes it elsewhere at this yield anyway). */
	if (!ma_sl_within(ma_rq_of_holder(h), here))
		return;
	long long lh = (long long)ma_sl_load(here, NULL), lt = (long long)ma_sl_load(there, NULL);
	long long vh = ma_sl_nb_vps(here), vt = ma_sl_nb_vps(there);
	if (lt + 1 > vt && (lt + 1) * vh > lh * vt)
		return;
	atomic_store_explicit(&t->stray, 0, memory_order_relaxed);
	ma_entity_move_to_holder(&t->e, &home->hold);
}

static void ma_steal_heartbeat(void)
{
	/* Work queued where no VP is free: once it has waited a tick, wake a thief for it,
	 * nearest first. */
	uint64_t now = ma_clock_ns();
	int kicked = 0;
	for (unsigned i = 0; i < ma_rt.topo.nb_levels + ma_rt.nb_vps && i < MA_STEAL_MAXQ; i++) {
		struct ma_runqueue *q = i < ma_rt.topo.nb_levels ? &ma_rt.rqs[i]
							       : &ma_rt.workers[i - ma_rt.topo.nb_levels].rq;
		int starving = __atomic_load_n(&q->nr_ready, __ATOMIC_RELAXED) && ma_sl_nb_vps(q) && !ma_sl_has_idle(q);
		uint64_t since = atomic_load_explicit(&ma_steal_starving[i], memory_order_relaxed);
		if (!starving)
			since = 0;
		else if (!since)
			since = now;
		else if (!kicked)
			kicked = ma_wake_outside(q);
		atomic_store_explicit(&ma_steal_starving[i], since, memory_order_relaxed);
	}
	if (ma_steal_anyone_busy())
		ma_heartbeat_arm();
}

static void ma_steal_tick(struct ma_bubble *b)
{
	if (ma_heartbeat_is(b))
		ma_steal_heartbeat();
	else
		ma_bubble_regenerate(b);
}

static int ma_steal_init(void)
{
	for (unsigned i = 0; i < MA_STEAL_MAXQ; i++)
		atomic_store_explicit(&ma_steal_starving[i], 0, memory_order_relaxed);
	return 0;
}

const struct ma_strategy ma_strategy_steal = {
	.name = "steal",
	.description = "bubbles start closed where they are woken; "
		       "idle VPs steal whole bubbles from the nearest loaded subtree first",
	.init = ma_steal_init,
	.submit = ma_steal_submit,
	.tick = ma_steal_tick,
	.vp_is_idle = ma_steal_vp_idle,
	.stray = ma_steal_stray,
	.sched = ma_steal_sched,
	.private_levels = 1,
	.heartbeat_us = MA_STEAL_TICK_US,
};
