/*
 * gang: the bubbles of the root run one at a time, each for a time slice, so that the
 * threads of one bubble always run together and never beside another bubble's.
 *
 * A gang is an explicit bubble of the root (or of the root's implicit children bubbles:
 * a bubble woken by a thread that is in no explicit bubble). The current gang is burst on
 * the machine's queue, its sub-bubbles wherever they are met, so its threads spread over
 * every VP. The others wait closed and off the queues: their ready threads wait in them.
 * When the current gang's slice ends (its marcel_bubble_settimeslice() value, 10 ms
 * without one) and another gang waits, it is gathered: queued threads come back at once,
 * running ones at their next yield or preemption. Only once every one is back, which is
 * when the core submits it again, is the next gang (by bubble id, round robin) burst:
 * running threads therefore belong to one gang at any time. Threads in no gang run as
 * usual beside it.
 *
 * Slices are watched by a heartbeat: a private bubble that is never inserted, whose
 * regeneration timer (bubbles/regen.c) brings this strategy's tick hook back every
 * millisecond while there are gangs.
 */
#include <stdlib.h>
#include "common_steal.h"

#define MA_GANG_SLICE_US 10000
#define MA_GANG_TICK_US 1000

/* Protects the state below; taken with no other lock held, before bubble locks. Static
 * (zero: unlocked) and never re-initialised: a late heartbeat may hold it. */
static ma_spinlock_t ma_gang_lock;
static int ma_gang_on;                 /* selected: a late heartbeat or hook does nothing */
static struct ma_bubble *ma_gang_cur;  /* burst or being gathered; read by sched unlocked */
static uint64_t ma_gang_cur_uid;       /* to recognise it (its storage may be reused) */
static uint64_t ma_gang_since;         /* when it was burst */
static uint64_t ma_gang_last_uid;      /* the last one that ran: the next has a greater id */
static int ma_gang_closing;            /* we gathered it */
static struct ma_sl_clock ma_gang_clock;

static struct ma_bubble *ma_gang_current(void)
{
	return __atomic_load_n(&ma_gang_cur, __ATOMIC_ACQUIRE);
}

/* Whether b is a gang: explicit, and only implicit bubbles between it and the root. */
static int ma_gang_is(struct ma_bubble *b)
{
	if (b == ma_root_bubble || b->implicit)
		return 0;
	struct ma_bubble *p = ma_entity_parent(&b->e);
	while (p && p != ma_root_bubble && p->implicit)
		p = ma_entity_parent(&p->e);
	return p == ma_root_bubble;
}

/* The gang b belongs to (b itself, or its nearest ancestor that is one), or NULL. */
static struct ma_bubble *ma_gang_of(struct ma_bubble *b)
{
	for (struct ma_bubble *x = b; x; x = ma_entity_parent(&x->e))
		if (ma_gang_is(x))
			return x;
	return NULL;
}

/* ---- looking at the gangs ---- */

struct ma_gang_scan {
	struct ma_bubble *cur;   /* in: the current gang, to check it still is one */
	uint64_t cur_uid, after; /* in: its id; ids above this one come next */
	int cur_found;
	unsigned waiting;        /* gangs that wait with threads */
	unsigned woken;          /* woken gangs, the current one included */
	struct ma_bubble *next, *first; /* the next after `after`, and the smallest id */
	struct ma_bubble **all;  /* if not NULL: every gang (start/exit), up to max */
	unsigned nb_all, max_all;
};

static void ma_gang_look(struct ma_bubble *g, struct ma_gang_scan *sc)
{
	if (sc->all && sc->nb_all < sc->max_all)
		sc->all[sc->nb_all++] = g;
	sc->woken += g->woken;
	if (g == sc->cur && g->uid == sc->cur_uid) {
		sc->cur_found = 1;
		return;
	}
	if (!g->woken || !g->nb_members || atomic_load(&g->status) != MA_BUBBLE_CLOSED)
		return;
	sc->waiting++;
	if (g->uid > sc->after && (!sc->next || g->uid < sc->next->uid))
		sc->next = g;
	if (!sc->first || g->uid < sc->first->uid)
		sc->first = g;
}

/* x locked: its members, and those of the implicit bubbles below it. */
static void ma_gang_scan_rec(struct ma_bubble *x, struct ma_gang_scan *sc)
{
	for (struct ma_list *l = x->members.next; l != &x->members; l = l->next) {
		struct ma_entity *m = ma_container_of(l, struct ma_entity, member_node);
		if (m->type != MA_BUBBLE_ENTITY)
			continue;
		struct ma_bubble *sb = ma_bubble_of_entity(m);
		ma_spin_lock(&sb->hold.lock);
		if (sb->implicit)
			ma_gang_scan_rec(sb, sc);
		else
			ma_gang_look(sb, sc);
		ma_spin_unlock(&sb->hold.lock);
	}
}

static void ma_gang_scan(struct ma_gang_scan *sc)
{
	struct ma_bubble *r = ma_root_bubble;
	ma_spin_lock(&r->hold.lock);
	ma_gang_scan_rec(r, sc);
	ma_spin_unlock(&r->hold.lock);
}

/* ---- running them ---- */

/* If no gang runs, bursts the next one that waits. Called with no lock held. */
static void ma_gang_advance(void)
{
	ma_spin_lock(&ma_gang_lock);
	if (ma_gang_cur || !ma_gang_on) {
		ma_spin_unlock(&ma_gang_lock);
		return;
	}
	struct ma_gang_scan sc = { .after = ma_gang_last_uid };
	ma_gang_scan(&sc);
	struct ma_bubble *g = sc.next ? sc.next : sc.first;
	if (g) {
		ma_gang_cur_uid = g->uid;
		ma_gang_since = ma_clock_ns();
		ma_gang_closing = 0;
		__atomic_store_n(&ma_gang_cur, g, __ATOMIC_RELEASE);
	}
	ma_spin_unlock(&ma_gang_lock);
	if (!g)
		return;
	/* On the machine, burst before any VP could serve it closed. */
	if (!ma_sl_place_quiet(g, &ma_rt.rqs[0]))
		ma_bubble_burst(g, &ma_rt.rqs[0]);
	ma_sl_clock_arm(&ma_gang_clock);
}

/* Ends the current gang's slice when it is over and someone waits; forgets it if it is
 * no longer a gang (joined, moved); starts one if none runs. */
static void ma_gang_heartbeat(void)
{
	ma_spin_lock(&ma_gang_lock);
	if (!ma_gang_on) {
		ma_spin_unlock(&ma_gang_lock);
		return;
	}
	struct ma_gang_scan sc = { .cur = ma_gang_cur, .cur_uid = ma_gang_cur_uid, .after = ma_gang_last_uid };
	ma_gang_scan(&sc);
	struct ma_bubble *g = ma_gang_cur, *gather = NULL;
	if (g && !sc.cur_found) {
		__atomic_store_n(&ma_gang_cur, NULL, __ATOMIC_RELEASE);
		g = NULL;
	}
	if (g && !ma_gang_closing && sc.waiting) {
		unsigned long us = g->timeslice_us ? g->timeslice_us : MA_GANG_SLICE_US;
		if (ma_clock_ns() - ma_gang_since >= (uint64_t)us * 1000 &&
		    atomic_load(&g->status) == MA_BUBBLE_OPENED) {
			ma_gang_closing = 1;
			gather = g;
		}
	}
	/* Beating while any gang is woken, even an empty one: a gang woken before its
	 * members were inserted is submitted empty, and nothing submits it again when they
	 * come (their threads only fill its cache): only a beat runs it (doc/design.md,
	 * "gang: a gang woken empty never ran"). */
	int idle = !g && sc.waiting, busy = g || sc.waiting || sc.woken;
	ma_spin_unlock(&ma_gang_lock);
	/* Once all its threads are back, the core submits it: that starts the next. */
	if (gather)
		ma_bubble_gather(gather);
	if (idle)
		ma_gang_advance();
	if (busy)
		ma_sl_clock_arm(&ma_gang_clock);
}

/* ---- hooks ---- */

/* On its parent's queue, as without a strategy. */
static void ma_gang_place_plain(struct ma_bubble *b)
{
	struct ma_bubble *p = ma_entity_parent(&b->e);
	struct ma_holder *h = p ? __atomic_load_n(&p->e.sched_holder, __ATOMIC_ACQUIRE) : NULL;
	ma_bubble_place(b, h && h->type == MA_RUNQUEUE_HOLDER ? ma_rq_of_holder(h) : &ma_rt.rqs[0]);
}

static void ma_gang_submit(struct ma_bubble *b)
{
	/* Part of the running gang (or of no gang): as usual. */
	if (!ma_gang_is(b)) {
		ma_gang_place_plain(b);
		return;
	}
	ma_spin_lock(&ma_gang_lock);
	if (!ma_gang_on) {
		/* A late call while another strategy takes over: not left off the queues. */
		ma_spin_unlock(&ma_gang_lock);
		ma_gang_place_plain(b);
		return;
	}
	if (ma_gang_cur == b) {
		if (atomic_load(&b->status) != MA_BUBBLE_CLOSED) {
			ma_spin_unlock(&ma_gang_lock);
			return;
		}
		/* Its slice is over (or it was shaken): every thread is back. */
		ma_gang_last_uid = b->uid;
		__atomic_store_n(&ma_gang_cur, NULL, __ATOMIC_RELEASE);
	}
	ma_spin_unlock(&ma_gang_lock);
	/* Off the queues until its turn. */
	ma_sl_unplace_closed(b);
	ma_gang_advance();
	ma_sl_clock_arm(&ma_gang_clock);
}

/* Takes over gangs placed before: burst ones are gathered (they come back through
 * submit), closed ones leave the queues. */
static void ma_gang_start(void)
{
	/* Past 256 gangs, the others keep their placement until their next submit. */
	struct ma_bubble *all[256];
	struct ma_gang_scan sc = { .all = all, .max_all = 256 };
	ma_gang_scan(&sc);
	struct ma_bubble *cur = ma_gang_current();
	for (unsigned i = 0; i < sc.nb_all; i++) {
		struct ma_bubble *g = all[i];
		if (g == cur || !g->woken)
			continue;
		if (atomic_load(&g->status) == MA_BUBBLE_OPENED)
			ma_bubble_gather(g);
		else
			ma_sl_unplace_closed(g);
	}
	ma_gang_advance();
	ma_sl_clock_arm(&ma_gang_clock);
}

static void ma_gang_tick(struct ma_bubble *b)
{
	if (ma_sl_clock_is(&ma_gang_clock, b) || ma_gang_is(b))
		ma_gang_heartbeat();
	else if (b->timeslice_us)
		ma_bubble_regenerate(b);
}

static enum ma_pick ma_gang_sched(struct ma_worker *w, struct ma_runqueue *rq, struct ma_bubble *b,
				  struct ma_runqueue **to)
{
	(void)w;
	if (b == ma_gang_of(b) && b != ma_gang_current()) {
		/* A waiting gang is queued only while it is being taken off (a thread woke
		 * into it as it closed): never serve it; to the back of the queue. */
		*to = rq;
		return MA_PICK_MOVE;
	}
	return MA_PICK_BURST;
}

static int ma_gang_init(void)
{
	ma_spin_lock(&ma_gang_lock);
	__atomic_store_n(&ma_gang_cur, NULL, __ATOMIC_RELEASE);
	ma_gang_cur_uid = ma_gang_last_uid = ma_gang_since = 0;
	ma_gang_closing = 0;
	ma_gang_on = 1;
	ma_spin_unlock(&ma_gang_lock);
	return ma_sl_clock_init(&ma_gang_clock, MA_GANG_TICK_US);
}

static void ma_gang_exit(void)
{
	ma_sl_clock_stop(&ma_gang_clock);
	ma_spin_lock(&ma_gang_lock);
	ma_gang_on = 0;
	__atomic_store_n(&ma_gang_cur, NULL, __ATOMIC_RELEASE);
	ma_spin_unlock(&ma_gang_lock);
	/* Switched to another strategy: the gangs that waited are its now. At marcel_end
	 * (still us) nothing waits: every thread ended. */
	if (ma_strategy() == &ma_strategy_gang)
		return;
	struct ma_bubble *all[256];
	struct ma_gang_scan sc = { .all = all, .max_all = 256 };
	ma_gang_scan(&sc);
	for (unsigned i = 0; i < sc.nb_all; i++) {
		struct ma_bubble *g = all[i];
		struct ma_holder *h = __atomic_load_n(&g->e.sched_holder, __ATOMIC_ACQUIRE);
		if (g->woken && !h && atomic_load(&g->status) == MA_BUBBLE_CLOSED)
			ma_strategy_submit(g);
	}
}

const struct ma_strategy ma_strategy_gang = {
	.name = "gang",
	.description = "the bubbles of the root run one at a time (gangs), "
		       "each for a time slice (its own, 10 ms by default)",
	.init = ma_gang_init,
	.exit = ma_gang_exit,
	.start = ma_gang_start,
	.submit = ma_gang_submit,
	.tick = ma_gang_tick,
	.sched = ma_gang_sched,
};
