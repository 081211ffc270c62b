/*
 * gang: the bubbles of the root run one at a time, each for a time slice, so that the
 * threads of one bubble always run together and never beside another bubble's.
 *
 * A gang is an outer bubble (ma_vnode.outer): an explicit bubble of the root, or of the
 * root's implicit children bubbles (a bubble woken by a thread that is in no explicit
 * bubble). The current gang is burst on the machine's queue, its sub-bubbles wherever
 * they are met, so its threads spread over every VP. The others wait closed and off the
 * queues: their ready threads wait in them. When the current gang's slice ends (its
 * marcel_bubble_settimeslice() value, 10 ms without one) and another gang waits, it is
 * gathered: queued threads come back at once, running ones at their next yield or
 * preemption. Only once every one is back, which is when the core submits it again, is
 * the next gang (by bubble id, round robin) burst: running threads therefore belong to
 * one gang at any time. Threads in no gang run as usual beside it.
 *
 * It decides on views alone (bubbles/ma_view.h). The gangs are a view's outer bubbles,
 * asked for (MA_VIEW_OUTER, a walk of the root's members) only by the decisions that
 * need them; the current gang and its clock live in the private block, which the
 * serialised hooks write and decide_pick reads. A turn starting is a BURST on the
 * machine's queue, a slice ending a GATHER, a gang waiting its turn an UNPLACE. Slices are
 * watched by the strategy's heartbeat, every millisecond while some gang is woken. A
 * switch to another strategy hands the gangs left off the queues to it (the dispatcher's
 * rescue). Its decisions are unit-tested without the runtime
 * (tests/check_strategies.c).
 */
#include <stdatomic.h>
#include "ma_strategies.h"
#include "ma_view.h"

#define MA_GANG_SLICE_US 10000
#define MA_GANG_TICK_US 1000
/* The machine's item: queue number 0 in every view. */
#define MA_GANG_ITEM 0

struct ma_gang_priv {
	/* The current gang (burst, or being gathered): its id, 0 if none. The serialised
	 * hooks write it, decide_pick reads it on any VP. */
	_Atomic uint64_t cur;
	uint64_t since_ns;      /* when it was burst */
	uint64_t last;          /* the last gang whose turn ended: the next has a greater id */
	unsigned char closing;  /* its slice ended and we gathered it */
};

/* What the outer bubbles of a view say about the gangs. */
struct ma_gang_scan {
	const struct ma_vnode *cur;   /* the current gang, if it still is an outer bubble */
	const struct ma_vnode *next;  /* the waiting gang after `last`, else the smallest id */
	unsigned waiting;             /* gangs with members that wait their turn */
	unsigned woken;               /* woken gangs, the current one included */
};

static struct ma_gang_scan ma_gang_scan(const struct ma_view *v, const struct ma_gang_priv *p)
{
	struct ma_gang_scan sc = { 0 };
	uint64_t cur = atomic_load_explicit(&p->cur, memory_order_relaxed);
	const struct ma_vnode *after = NULL, *first = NULL;
	for (unsigned i = 0; i < v->nb_outer; i++) {
		const struct ma_vnode *g = v->outer[i];
		sc.woken += g->woken;
		if (cur && g->id == cur) {
			sc.cur = g;
			continue;
		}
		/* Its ready threads wait in it, closed. */
		if (!g->woken || !g->nb_members || g->status != MA_V_CLOSED)
			continue;
		sc.waiting++;
		if (g->id > p->last && (!after || g->id < after->id))
			after = g;
		if (!first || g->id < first->id)
			first = g;
	}
	sc.next = after ? after : first;
	return sc;
}

/* No gang runs: the next one that waits does. It is burst on the machine's queue in one
 * step (placed there first, not queued), before any VP could serve it closed. */
static void ma_gang_advance(const struct ma_view *v, struct ma_gang_priv *p, const struct ma_gang_scan *sc,
			    struct ma_dlist *out)
{
	const struct ma_vnode *g = sc->next;
	if (!g)
		return;
	p->since_ns = v->now_ns;
	p->closing = 0;
	atomic_store_explicit(&p->cur, g->id, memory_order_release);
	(void)ma_dlist_add(out, MA_D_BURST, g->id, MA_GANG_ITEM);
}

/* The heartbeat, on a view with the outer bubbles: ends the current gang's slice when it
 * is over and another waits, forgets it if it is no longer a gang (joined, moved), starts
 * one if none runs. */
static void ma_gang_beat(const struct ma_view *v, struct ma_gang_priv *p, struct ma_dlist *out)
{
	struct ma_gang_scan sc = ma_gang_scan(v, p);
	const struct ma_vnode *g = sc.cur;
	if (!g) {
		atomic_store_explicit(&p->cur, 0, memory_order_release);
		ma_gang_advance(v, p, &sc, out);
	} else if (g->status == MA_V_CLOSED && g->item < 0 && !p->closing) {
		/* Its turn came but it is closed and placed nowhere, and not because we gathered
		 * it: its burst was dropped (something else changed it between the decision
		 * and its execution). Again; a second burst of a burst gang is dropped. */
		(void)ma_dlist_add(out, MA_D_BURST, g->id, MA_GANG_ITEM);
	} else if (g->status == MA_V_OPENED && !p->closing && sc.waiting) {
		uint64_t us = g->timeslice_us ? g->timeslice_us : MA_GANG_SLICE_US;
		if (v->now_ns - p->since_ns >= us * 1000) {
			p->closing = 1;
			(void)ma_dlist_add(out, MA_D_GATHER, g->id, -1);
		}
	}
	/* Beating while any gang is woken, even an empty one: a gang woken before its members
	 * were inserted is submitted empty, and nothing submits it again when they come
	 * (their threads only fill its cache): only a beat runs it (doc/design.md, "gang: a
	 * gang woken empty never ran"). */
	out->beat = g || sc.waiting || sc.woken;
}

/* ---- hooks ---- */

static void ma_gang_submit(const struct ma_view *v, void *priv, struct ma_dlist *out)
{
	struct ma_gang_priv *p = priv;
	const struct ma_vnode *b = v->root;
	/* Part of the running gang (or of no gang): on its parent's queue, as without a
	 * strategy (the machine's for the root's). */
	if (!b->outer) {
		(void)ma_dlist_add(out, MA_D_PLACE, b->id, b->home >= 0 ? b->home : MA_GANG_ITEM);
		return;
	}
	/* Asked again for the gangs: what follows was decided in the first round. */
	if (!v->round) {
		if (atomic_load_explicit(&p->cur, memory_order_relaxed) == b->id) {
			/* Woken again while it runs. */
			if (b->status != MA_V_CLOSED)
				return;
			/* Its slice is over (or it was shaken): every thread is back. */
			p->last = b->id;
			atomic_store_explicit(&p->cur, 0, memory_order_release);
		}
		/* Off the queues until its turn. */
		(void)ma_dlist_add(out, MA_D_UNPLACE, b->id, -1);
	}
	if (!atomic_load_explicit(&p->cur, memory_order_relaxed)) {
		if (!(v->flags & MA_VIEW_HAS_OUTER)) {
			out->again = MA_VIEW_OUTER;
			return;
		}
		struct ma_gang_scan sc = ma_gang_scan(v, p);
		ma_gang_advance(v, p, &sc, out);
	}
	out->beat = 1;
}

/* Takes over gangs placed before: burst ones are gathered (they come back through
 * submit), closed ones leave the queues; then the first turn starts. */
static void ma_gang_start(const struct ma_view *v, void *priv, struct ma_dlist *out)
{
	struct ma_gang_priv *p = priv;
	if (!(v->flags & MA_VIEW_HAS_OUTER)) {
		out->again = MA_VIEW_OUTER;
		return;
	}
	uint64_t cur = atomic_load_explicit(&p->cur, memory_order_relaxed);
	for (unsigned i = 0; i < v->nb_outer; i++) {
		const struct ma_vnode *g = v->outer[i];
		if (g->id == cur || !g->woken)
			continue;
		if (g->status == MA_V_OPENED)
			(void)ma_dlist_add(out, MA_D_GATHER, g->id, -1);
		else if (g->status == MA_V_CLOSED)
			(void)ma_dlist_add(out, MA_D_UNPLACE, g->id, -1);
	}
	/* The gangs being gathered are not waiting yet: they come back through submit. */
	if (!cur) {
		struct ma_gang_scan sc = ma_gang_scan(v, p);
		ma_gang_advance(v, p, &sc, out);
	}
	out->beat = 1;
}

static void ma_gang_tick(const struct ma_view *v, void *priv, struct ma_dlist *out)
{
	const struct ma_vnode *b = v->root;
	/* A bubble of a gang with a time slice of its own regenerates as usual. */
	if (b && !b->outer) {
		if (b->timeslice_us)
			(void)ma_dlist_add(out, MA_D_GATHER, b->id, -1);
		return;
	}
	/* The heartbeat, or a gang's own slice. */
	if (!(v->flags & MA_VIEW_HAS_OUTER)) {
		out->again = MA_VIEW_OUTER;
		return;
	}
	ma_gang_beat(v, priv, out);
}

static struct ma_decision ma_gang_pick(const struct ma_pick_view *pv, const void *priv)
{
	const struct ma_gang_priv *p = priv;
	struct ma_decision d = { .kind = MA_D_BURST, .entity = pv->b.id, .item = pv->item };
	/* A waiting gang is queued only while it is being taken off (a thread woke into it as
	 * it closed): never served; to the back of the queue. */
	if (pv->b.outer && pv->b.id != atomic_load_explicit(&p->cur, memory_order_acquire))
		d.kind = MA_D_MOVE;
	return d;
}

const struct ma_strategy ma_strategy_gang = {
	.name = "gang",
	.description = "the bubbles of the root run one at a time (gangs), "
		       "each for a time slice (its own, 10 ms by default)",
	.priv_size = sizeof(struct ma_gang_priv),
	.decide_start = ma_gang_start,
	.decide_submit = ma_gang_submit,
	.decide_tick = ma_gang_tick,
	.decide_pick = ma_gang_pick,
	.heartbeat_us = MA_GANG_TICK_US,
	/* It reads no load; the gangs it asks for when it needs them. */
	.view_detail = MA_VIEW_SHAPE,
};
