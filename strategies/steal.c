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
 *
 * It decides on views alone (bubbles/ma_view.h). An idle VP's candidates, in the order
 * above, are one chain of alternatives (MA_D_ELSE): the executor carries out the first it
 * can. A single thread's theft carries its guard (MA_D_GUARD): both sides are measured
 * again right before it, as a theft decided on figures the kernel kept waiting for
 * milliseconds separated bubbles for good (doc/design.md, "steal: strays go home"). The
 * starving times live in the private block, written by the heartbeat and read by the
 * idle VPs. Its decisions are unit-tested without the runtime (tests/check_strategies.c).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include "ma_strategies.h"
#include "ma_view.h"

#define MA_STEAL_TICK_US 1000
/* Strays look at their way home every this many yields. */
#define MA_STEAL_STRAY_EVERY 16
/* Queues whose starving time is kept (by queue number); work waiting on the others is
 * taken whole only. */
#define MA_STEAL_MAXQ 4096

struct ma_steal_priv {
	/* Per queue, since when the heartbeat has seen it hold work that none of its VPs is
	 * free to take (0: it has not). The heartbeat writes it, idle VPs read it. */
	_Atomic uint64_t starving[MA_STEAL_MAXQ];
};

/* Whether single threads may be taken from queue q: its work has waited since at least
 * the previous heartbeat. A transient (a thread between two VPs, a bubble moving) lasts
 * microseconds; a thread taken during one would separate it from its bubble for good. */
static int ma_steal_starved(const struct ma_view *v, const struct ma_steal_priv *p, int q)
{
	uint64_t since = q < MA_STEAL_MAXQ ? atomic_load_explicit(&p->starving[q], memory_order_relaxed) : 0;
	return since && v->now_ns - since >= MA_STEAL_TICK_US * 500u;
}

static void ma_steal_push(struct ma_dlist *out, struct ma_decision d)
{
	(void)ma_dlist_push(out, &d);
}

/* Whether some VP runs a thread: only then can work appear that nobody sees. */
static int ma_steal_anyone_busy(const struct ma_view *v)
{
	return v->items[0].sub_busy != 0;
}

/* ---- where a bubble goes, and whether it bursts ---- */

static void ma_steal_submit(const struct ma_view *v, void *priv, struct ma_dlist *out)
{
	(void)priv;
	const struct ma_vnode *b = v->root;
	int home = 0;
	if (b->last_item >= 0 && (unsigned)b->last_item < v->nb_items)
		home = b->last_item;
	else if (b->sched_level && v->self_vp >= 0)
		home = ma_topo_path_item(v->topo, (unsigned)v->self_vp, (unsigned)b->sched_level);
	(void)ma_dlist_add(out, MA_D_PLACE, b->id, home);
	/* b counts once in the queue's load; its other threads come on top: too many, and a
	 * VP elsewhere comes to take it whole. */
	const struct ma_vitem *q = &v->items[home];
	if ((long long)ma_vitem_load(q) + b->nb_threads > (long long)q->nb_vps)
		ma_steal_push(out, (struct ma_decision){ .kind = MA_D_WAKE, .item = home,
							 .flags = MA_D_OUTSIDE | MA_D_THEN });
	out->beat = 1;
}

static struct ma_decision ma_steal_pick(const struct ma_pick_view *pv, const void *priv)
{
	(void)priv;
	struct ma_decision d = { .kind = MA_D_SERVE, .entity = pv->b.id, .item = pv->item };
	/* On a VP's own queue it runs there anyway; closed, thieves can take it whole. */
	if (ma_pick_on_vp(pv))
		return d;
	if (!pv->has_load) {
		d.flags = MA_D_LOAD;
		return d;
	}
	const struct ma_pick_load *x = &pv->load;
	/* Busy: looked at again next time. */
	if (x->busy)
		return d;
	/* Only sub-bubbles: bursting exposes them, still closed, to thieves. */
	if (!x->direct) {
		d.kind = MA_D_BURST;
		return d;
	}
	long long n = x->threads, vps = x->nb_vps, queued = (long long)x->queued;
	long long others = (long long)x->running + queued - 1;
	/* Alone: burst if its threads fit beside what runs here, or if they could fit in no
	 * subtree of this size anyway (thieves then take them one by one). Otherwise stay
	 * closed, so that a thief can take it whole. */
	if (queued <= 1 && !x->sibling && (n + others <= vps || n > vps)) {
		d.kind = MA_D_BURST;
		return d;
	}
	if (n + others > vps)
		d.flags = MA_D_OUTSIDE;
	return d;
}

/* ---- idle VPs ---- */

/* What taking a thread whose bubble burst on `home` does, seen from a thief whose side is
 * `mine` stealing from subtree `victim`: HOMING brings it back beside its bubble's other
 * threads, BOUND separates it from them, LOOSE (main, a thread of no bubble, or of one
 * opened elsewhere) makes no difference. */
enum ma_steal_kin { MA_STEAL_HOMING, MA_STEAL_LOOSE, MA_STEAL_BOUND };

static enum ma_steal_kin ma_steal_kin_of(const struct ma_view *v, int home, int mine, int victim)
{
	if (home >= 0 && ma_view_within(v, home, mine))
		return MA_STEAL_HOMING;
	return home >= 0 && ma_view_within(v, home, victim) ? MA_STEAL_BOUND : MA_STEAL_LOOSE;
}

/* The figures a theft is weighed on: both sides, and their VPs. */
struct ma_steal_cmp {
	long long mine, mine_vps, victim, victim_vps;
};

/* Only from a victim with more threads than VPs (otherwise what waits there is about to
 * run there: a thread that just moved, a VP between two threads), and never so much that
 * we end above the victim per VP (it could take it back at once). */
static int ma_steal_accept(const struct ma_steal_cmp *c, long long x)
{
	return c->victim > c->victim_vps && (c->mine + x) * c->victim_vps <= (c->victim - x) * c->mine_vps;
}

/* Appends the next alternative of the list's chain (the first starts it). */
static void ma_steal_alt(struct ma_dlist *out, int *chained, struct ma_decision d)
{
	if (*chained)
		d.flags |= MA_D_ELSE;
	*chained = 1;
	ma_steal_push(out, d);
}

/* The candidates of subtree S for the VP whose side at that level is `mine`: whole
 * bubbles first (they keep their threads together on our side), then single threads,
 * first those whose bubble burst on our side (they go back to it), then those no bubble
 * misses, and only then one taken from beside its bubble's other threads. */
static void ma_steal_from(const struct ma_view *v, const struct ma_steal_priv *p, int mine, int S,
			  const struct ma_steal_cmp *c, struct ma_dlist *out, int *chained)
{
	int vpq = ma_view_vp_queue(v, (unsigned)v->self_vp);
	for (unsigned i = 0; i < v->nb_waiting; i++) {
		const struct ma_vnode *e = v->waiting[i];
		if (!e->is_bubble || !ma_view_within(v, e->queued_item, S))
			continue;
		long long x = e->nb_threads > e->nb_cached ? e->nb_threads : e->nb_cached;
		if (e->status != MA_V_CLOSED || e->fixed_item >= 0 || !e->nb_cached || !ma_steal_accept(c, x))
			continue;
		ma_steal_alt(out, chained, (struct ma_decision){ .kind = MA_D_STEAL, .entity = e->id, .item = mine,
								  .from_item = e->queued_item,
								  .flags = MA_D_OUTSIDE, .guard_from = S });
	}
	/* Each thread's theft measures both sides again just before (the guard): another
	 * thief may have brought work to our side, and the kernel may have kept this VP off
	 * its processor since the view (then its figures are stale by milliseconds). */
	for (int kin = MA_STEAL_HOMING; kin <= MA_STEAL_BOUND; kin++)
		for (unsigned i = 0; i < v->nb_waiting; i++) {
			const struct ma_vnode *e = v->waiting[i];
			if (e->is_bubble || e->pinned || e->suspended || !ma_view_within(v, e->queued_item, S) ||
			    !ma_steal_starved(v, p, e->queued_item) || (int)ma_steal_kin_of(v, e->home, mine, S) != kin)
				continue;
			/* Home beside its bubble's threads, if we look at that queue. */
			int dest = kin == MA_STEAL_HOMING && ma_view_within(v, vpq, e->home) ? e->home : vpq;
			unsigned mark = kin == MA_STEAL_BOUND ? MA_D_STRAY : kin == MA_STEAL_HOMING ? MA_D_UNSTRAY : 0;
			ma_steal_alt(out, chained, (struct ma_decision){ .kind = MA_D_STEAL, .entity = e->id, .item = dest,
									  .from_item = e->queued_item,
									  .flags = MA_D_GUARD | MA_D_OUTSIDE | mark,
									  .guard_from = S, .guard_to = mine });
		}
}

static void ma_steal_vp_idle(const struct ma_view *v, const void *priv, struct ma_dlist *out)
{
	const struct ma_steal_priv *p = priv;
	if (v->self_vp < 0)
		return;
	unsigned nq = v->nb_items + v->nb_vps;
	int chained = 0;
	for (int mine = ma_view_vp_queue(v, (unsigned)v->self_vp), A = v->items[mine].parent; A >= 0;
	     mine = A, A = v->items[A].parent) {
		struct ma_steal_cmp c = { .mine = (long long)ma_vitem_load_exact(&v->items[mine]),
					  .mine_vps = v->items[mine].nb_vps };
		/* The sibling subtrees, most loaded per VP first; none that is not above us. */
		unsigned char *tried = NULL;
		for (;;) {
			int best = -1;
			for (unsigned q = 0; q < nq; q++) {
				const struct ma_vitem *x = &v->items[q];
				if (x->parent != A || (int)q == mine || !x->nb_vps || (tried && tried[q]))
					continue;
				if (best < 0 || (long long)ma_vitem_load_exact(x) * v->items[best].nb_vps >
							(long long)ma_vitem_load_exact(&v->items[best]) * x->nb_vps)
					best = (int)q;
			}
			if (best < 0)
				break;
			if (!tried && !(tried = calloc(nq, 1)))
				break;
			tried[best] = 1;
			const struct ma_vitem *S = &v->items[best];
			c.victim = (long long)ma_vitem_load_exact(S);
			c.victim_vps = S->nb_vps;
			if (c.victim * c.mine_vps <= c.mine * c.victim_vps)
				break;
			/* Each theft, once done, wakes the next idle VP for what is left
			 * (MA_D_OUTSIDE). */
			ma_steal_from(v, p, mine, best, &c, out, &chained);
		}
		free(tried);
	}
	/* An idle VP keeps the heartbeat going while others work. */
	out->beat = ma_steal_anyone_busy(v);
}

/* A thread taken from beside its bubble's other threads (a BOUND theft) goes back to its
 * bubble's queue at a yield, once a VP is free there or that side would be no busier
 * per VP than the one it runs on is now: one thread of slack, so that two threads stolen
 * crosswise (each side full with the other's) swap back. Without this, a bubble whose
 * threads were spread while its side was overloaded stays spread once the load is gone,
 * and a theft made on stale figures (a VP the kernel kept off its processor) separates
 * it for good: nothing else moves a thread that always finds a VP. */
static void ma_steal_stray(const struct ma_view *v, const void *priv, struct ma_dlist *out)
{
	(void)priv;
	const struct ma_vnode *t = v->root;
	int home = t->home;
	/* Gathered into a bubble, its bubble closed or gone, or already on its side: no
	 * stray any more (a MOVE to where it is only clears the mark). */
	if (t->item < 0 || home < 0 || v->self_vp < 0 || ma_view_sees(v, home, (unsigned)v->self_vp)) {
		ma_steal_push(out, (struct ma_decision){ .kind = MA_D_MOVE, .entity = t->id, .item = t->item,
							 .flags = MA_D_UNSTRAY });
		return;
	}
	/* The two sides: the children, on our path and on home's, of the lowest queue of our
	 * path that home lies under (the machine's at worst). */
	int here = ma_view_vp_queue(v, (unsigned)v->self_vp), P = v->items[here].parent;
	while (P >= 0 && !ma_view_within(v, home, P)) {
		here = P;
		P = v->items[P].parent;
	}
	if (P < 0)
		return;
	int there = home;
	while (v->items[there].parent != P)
		there = v->items[there].parent;
	/* Moved meanwhile (the move takes it elsewhere at this yield anyway). */
	if (!ma_view_within(v, t->item, here))
		return;
	long long lh = (long long)ma_vitem_load(&v->items[here]), lt = (long long)ma_vitem_load(&v->items[there]);
	long long vh = v->items[here].nb_vps, vt = v->items[there].nb_vps;
	if (lt + 1 > vt && (lt + 1) * vh > lh * vt)
		return;
	ma_steal_push(out, (struct ma_decision){ .kind = MA_D_MOVE, .entity = t->id, .item = home,
						 .flags = MA_D_UNSTRAY });
}

/* ---- the heartbeat ---- */

/* Work queued where no VP is free: once it has waited a beat, wake a thief for it, the
 * nearest first (one wake-up per beat: the first that can be done). */
static void ma_steal_heartbeat(const struct ma_view *v, struct ma_steal_priv *p, struct ma_dlist *out)
{
	int chained = 0;
	for (unsigned q = 0; q < v->nb_items + v->nb_vps && q < MA_STEAL_MAXQ; q++) {
		const struct ma_vitem *x = &v->items[q];
		int starving = x->queued && x->nb_vps && !x->idle_vps;
		uint64_t since = atomic_load_explicit(&p->starving[q], memory_order_relaxed);
		if (!starving)
			since = 0;
		else if (!since)
			since = v->now_ns;
		else
			ma_steal_alt(out, &chained, (struct ma_decision){ .kind = MA_D_WAKE, .item = (int)q,
									  .flags = MA_D_OUTSIDE });
		atomic_store_explicit(&p->starving[q], since, memory_order_relaxed);
	}
	out->beat = ma_steal_anyone_busy(v);
}

static void ma_steal_tick(const struct ma_view *v, void *priv, struct ma_dlist *out)
{
	if (!v->root)
		ma_steal_heartbeat(v, priv, out);
	else
		(void)ma_dlist_add(out, MA_D_GATHER, v->root->id, -1);
}

const struct ma_strategy ma_strategy_steal = {
	.name = "steal",
	.description = "bubbles start closed where they are woken; "
		       "idle VPs steal whole bubbles from the nearest loaded subtree first",
	.priv_size = sizeof(struct ma_steal_priv),
	.decide_submit = ma_steal_submit,
	.decide_tick = ma_steal_tick,
	.decide_vp_idle = ma_steal_vp_idle,
	.decide_pick = ma_steal_pick,
	.decide_stray = ma_steal_stray,
	.private_levels = 1,
	.heartbeat_us = MA_STEAL_TICK_US,
	.stray_every = MA_STEAL_STRAY_EVERY,
};
