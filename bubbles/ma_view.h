/*
 * What a strategy may know (the view) and what it may ask for (decisions).
 *
 * A view is plain data: counters of the run queues, and copies of the bubble tree's
 * entities. It holds no pointer into the runtime a strategy could follow (the builder's
 * side, `rt`, is opaque), so a strategy compiled against this header alone can be run in
 * a unit test or the simulator on a view filled by hand over a synthetic topology. The
 * builders (view.c) and the executor (decide.c) are declared in ma_view_build.h; this
 * header includes nothing of the runtime but the topology.
 *
 * Queue numbers. Every run queue has one: topology items by id (0: the machine, pre-order
 * as in ma_topology.h), then VP n's own queue at nb_items + n, the numbering of
 * struct marcel_snapshot's queues. A VP's own queue lies below its leaf item.
 */
#ifndef MA_VIEW_H
#define MA_VIEW_H

#include <errno.h>
#include <stdint.h>
#include "ma_topology.h"

/* ---- the items part: one entry per run queue ---- */

/*
 * Counters are read without locks (each one is a snapshot of one word, the whole is not
 * one instant). The sub_* fields sum the queue itself, the item queues below it and the
 * VP queues of the VPs below it; items without VPs are left out of the sums (no VP takes
 * what waits there).
 */
struct ma_vitem {
	int vp;                   /* a VP's own queue: that VP; an item's queue: -1 */
	int parent;               /* queue number of the queue above, -1 for the machine */
	unsigned depth;           /* the item's depth; a VP's queue: its leaf's depth + 1 */
	unsigned first_vp;        /* the smallest VP that looks at it */
	unsigned nb_vps;          /* VPs that look at it (whose path goes through it) */
	unsigned idle_vps;        /* of those, enabled ones that are idle (polling or asleep) */
	unsigned queued;          /* entities queued on this queue alone (a closed bubble: one) */
	unsigned incoming;        /* entities decided for it and not queued yet (nr_incoming) */
	unsigned ready;           /* threads queued on it: a closed bubble counts its cached
				     threads (at least one). Only in views built with that
				     detail (ma_view.flags & MA_VIEW_HAS_READY), else = queued */
	unsigned running;         /* threads running now that belong here: scheduled on this
				     queue or in a closed unit placed on it, wherever they run;
				     a VP's queue also counts its VP's thread that belongs to no
				     queue. The caller's own VP included */
	unsigned busy;            /* a VP's queue: 1 if its VP runs a thread, else 0 */
	unsigned long sub_queued; /* sum of queued + incoming */
	unsigned long sub_ready;  /* sum of ready + incoming */
	unsigned long sub_running;
	unsigned long sub_busy;   /* VPs below it running a thread */
};

/* Threads of q's subtree: queued (a closed bubble counts one) or incoming, plus running
 * (the measure steal and cache balance). */
static inline unsigned long ma_vitem_load(const struct ma_vitem *q)
{
	return q->sub_queued + q->sub_running;
}

/* The same with each queued closed bubble counted as its ready threads (steal's idle walk);
 * equal to ma_vitem_load in a view built without that detail. */
static inline unsigned long ma_vitem_load_exact(const struct ma_vitem *q)
{
	return q->sub_ready + q->sub_running;
}

/* Work visible below q: entities queued or incoming plus busy VPs (the measure burst
 * pulls bubbles down by; ma_rq_subtree_load). */
static inline unsigned long ma_vitem_work(const struct ma_vitem *q)
{
	return q->sub_queued + q->sub_busy;
}

/* ---- the tree part: one node per entity ---- */

enum ma_vstatus { MA_V_CLOSED = 0, MA_V_OPENED = 1, MA_V_CLOSING = 2 };
enum ma_vstate {
	MA_V_BORN,                /* created, not started */
	MA_V_READY,               /* queued, or on its way to a queue or a processor */
	MA_V_RUNNING,
	MA_V_BLOCKED,             /* blocking, blocked or suspended */
	MA_V_DEAD,                /* ended (a member not yet taken out of its bubble) */
};
/* ma_vnode.last_vp of a bubble whose threads last ran on different VPs. */
#define MA_V_SEVERAL (-2)

/* A thread's load metrics (ma_vnode.metric), in events per 1000 instructions retired:
 * the resources SMT siblings share (the 001 seed's load metrics). The order of
 * MARCEL_STATS_FP_RATE and the next two, and of the core's enum ma_metric. */
enum ma_vmetric {
	MA_VM_FP,                 /* floating-point operations */
	MA_VM_MISS,               /* cache misses */
	MA_VM_MEMOP,              /* memory operations (level-1 data reads) */
	MA_VM_NB
};

struct ma_vnode {
	uint64_t id;              /* the entity's unique id (thread id, or bubble id with
				     MA_TRACE_BUBBLE_TAG): decisions name it, the executor maps
				     it back and checks it */
	const struct ma_vnode *parent; /* the bubble it was seen in; NULL for the view's root
					  and for entities seen on a queue */
	unsigned char is_bubble;
	unsigned char status;     /* bubbles: enum ma_vstatus */
	unsigned char state;      /* threads: enum ma_vstate */
	unsigned char woken;      /* bubbles: woken (a bubble never woken is not scheduled) */
	unsigned char implicit;   /* bubbles: a thread's implicit children bubble */
	unsigned char is_main;    /* threads: the program's main thread */
	unsigned char pinned;     /* threads: placed by a VP set, never moved */
	unsigned char stray;      /* threads: taken away from its bubble's side by a theft */
	unsigned char suspended;  /* threads: marcel_suspend asked (not to be stolen) */
	unsigned char counted;    /* bubbles: keeps its subtree's thread count (for joins) */
	unsigned char in_cache;   /* threads: waiting in a closed bubble's cache */
	unsigned char master;     /* threads: a master thread (marcel_task_setmaster; main's) */
	unsigned char spinning;   /* threads: running, but polling a busy primitive before it
				     blocks (spin-then-notify): waiting, to the program */
	unsigned char outer;      /* bubbles: one of the root's bubbles as the program sees
				     them: explicit, with only implicit bubbles (or none)
				     between it and the root bubble (gang runs these in turn) */
	int prio;
	int item;                 /* queue its scheduling holder is, -1: none (held in a closed
				     unit, a bubble not placed, a thread not started) */
	int queued_item;          /* queue it waits in now, -1: not on a queue's list (running,
				     blocked, in a bubble's cache, or a bubble not queued) */
	int home;                 /* threads, and the bubble a subtree view is about (its
				     root): queue its parent bubble is opened on, -1 (main,
				     the root's members, a parent not opened) */
	int last_item;            /* item it was last taken from (a bubble: last burst on), -1 */
	int last_vp;              /* thread: VP it last ran on, -1: never; bubble: the VP all
				     its threads that ran last ran on, -1: none ran,
				     MA_V_SEVERAL: not all the same */
	int sched_level;          /* a ma_level_kind bit, 0: none */
	int fixed_item;           /* not movable: a pinned thread's queue, a scheduleonlevel
				     bubble's item; -1: movable */
	int pref_node;            /* NUMA node holding most of its memory, -1: none (or not
				     asked: only views built with memory detail ask) */
	double load_hint;         /* the application's load hint, < 0: unset */
	double load;              /* the load statistic: the hint if set, else 1 for a thread
				     and the sum of its members' for a bubble (ma_entity_load;
				     a pick view, which walks nothing: its threads as known) */
	unsigned nb_threads;      /* threads started and not ended: 1 for such a thread; a
				     bubble seen in a tree counts its subtree's, one seen on a
				     queue or by find_next gives its join count if it keeps
				     one (counted; it includes threads not started), else 0 */
	unsigned nb_ready, nb_running; /* threads of its subtree in those states (tree views) */
	unsigned nb_spinning;     /* of the running ones, those spinning (tree views) */
	unsigned nb_masters;      /* master threads of its subtree (tree views) */
	unsigned nb_cached;       /* bubbles: threads waiting in its cache */
	unsigned nb_members;      /* bubbles: direct members (children of a tree view) */
	unsigned long timeslice_us; /* bubbles: its regeneration period, 0: none set */
	uint64_t cpu_ns;          /* CPU time of its subtree, ended threads included */
	unsigned nb_children;     /* tree views: its members, in member order */
	const struct ma_vnode *const *children;
	/* Threads, in views built with MA_VIEW_METRICS: bit m set when metric[m] is known
	 * (the counters' measure, else the application's hint); 0 everywhere else, so that
	 * a node filled without them has none. */
	unsigned char metrics;
	float metric[MA_VM_NB];   /* per enum ma_vmetric, events per 1000 instructions */
};

/* Detail a view is built with, on top of the counters: what a strategy asks for
 * (ma_strategy.view_detail, ma_dlist.again) and what the view says it has (ma_view.flags).
 * Each costs locks or a walk. */
#define MA_VIEW_READY 1u      /* ma_vitem.ready: every queue with entities is locked in
				 turn and its lists read (closed bubbles count their cache) */
#define MA_VIEW_MEMORY 2u     /* ma_vnode.pref_node of bubbles with memory attached below
				 them (their statistics are synthesized, after the walk) */
#define MA_VIEW_PLACED 4u     /* ma_view.placed: the load already placed on each item, by
				 a walk of the opened part of the whole tree (its bubbles
				 locked in turn), the subtree of the view's root left out */
#define MA_VIEW_SHAPE 8u      /* less, not more: the items' shape alone (parent, depth,
				 VPs); every counter stays zero, for a table that reads no
				 load (no read of every queue and VP per view) */
#define MA_VIEW_OUTER 16u     /* ma_view.outer: every outer bubble of the tree (ma_vnode.
				 outer), found by a walk of the root bubble's members and of
				 its implicit bubbles (each locked while its parent is) */
#define MA_VIEW_TREE 32u      /* a view about no bubble (the heartbeat's) gets the whole
				 tree as v->root anyway, as decide_start's: a walk of every
				 bubble, each locked in turn (pa and mintlp classify every
				 application at each beat) */
#define MA_VIEW_METRICS 64u   /* ma_vnode.metrics and metric of threads (marcel/metrics.c):
				 the hardware counters are sampled first where they are in
				 use (MARCEL_METRICS), a read of each worker's */
#define MA_VIEW_HAS_READY MA_VIEW_READY
#define MA_VIEW_HAS_MEMORY MA_VIEW_MEMORY
#define MA_VIEW_HAS_PLACED MA_VIEW_PLACED
#define MA_VIEW_HAS_OUTER MA_VIEW_OUTER
#define MA_VIEW_HAS_METRICS MA_VIEW_METRICS

struct ma_view_rt;

struct ma_view {
	const struct ma_topo *topo;
	unsigned nb_items;            /* topo->nb_levels */
	unsigned nb_vps;
	unsigned flags;               /* MA_VIEW_HAS_* */
	const struct ma_vitem *items; /* nb_items + nb_vps entries, by queue number */
	const struct ma_vitem *vps;   /* items + nb_items: the VPs' own queues */
	const struct ma_vnode *root;  /* the subtree the decision is about; NULL: none (the
				     strategy's heartbeat, a VP's neighbourhood) */
	/* With MA_VIEW_HAS_PLACED, per item (nb_items entries): the load statistic of every
	 * unit scheduled there (on the item's queue or one of its VPs'): threads started and
	 * not ended but main, their hint or 1; closed bubbles, their load; found below the
	 * opened bubbles from the root bubble down, leaving the view's root out. With the
	 * bubbles the walk locked, and the CPU time it took (what such a view costs). */
	const double *placed;
	unsigned placed_visits;
	uint64_t placed_cpu_ns;
	unsigned char begun;          /* marcel_bubble_sched_begin was called */
	/* Serialised hooks: the hook was asked again this many times for one event
	 * (ma_dlist.again), and whether it runs while a list of the same strategy is carried
	 * out (a GATHER whose bubble closed at once hands it back, say). */
	unsigned char round, nested;
	/* With MA_VIEW_HAS_OUTER: every outer bubble of the tree, in the order of a walk of
	 * the root's members, each a node of this view (the root's own subtree's are its
	 * nodes; the others have parent NULL, no children, nb_threads 0, and nb_members
	 * read). */
	const struct ma_vnode *const *outer;
	unsigned nb_outer;
	/* Entities waiting on the queues of the VP's neighbourhood (ma_view_build_vp), most
	 * urgent first queue by queue, each with parent NULL and no children. */
	const struct ma_vnode *const *waiting;
	unsigned nb_waiting;
	int self_vp;                  /* the VP asking, -1: none */
	uint64_t now_ns;              /* CLOCK_MONOTONIC when it was built */
	struct ma_view_rt *rt;        /* the builder's, opaque; NULL in a view made by hand */
};

/* Fills the sub_* sums, nb_vps and idle_vps of items it[0..nl) from every queue's own
 * counters (queued, incoming, ready, running, busy; a VP queue's idle_vps): VP queues
 * (it[nl..nl+nv), nb_vps 1) into their leaf, then items bottom up (pre-order numbers:
 * children after their parent), items without VPs left out of their parent's. The one
 * rule for every builder of views: the runtime's, the tests' and the simulator's. */
static inline void ma_view_items_sum(struct ma_vitem *it, unsigned nl, unsigned nv)
{
	for (unsigned q = 0; q < nl; q++)
		it[q].nb_vps = it[q].idle_vps = 0;
	for (unsigned q = 0; q < nl + nv; q++) {
		it[q].sub_queued = (unsigned long)it[q].queued + it[q].incoming;
		it[q].sub_ready = (unsigned long)it[q].ready + it[q].incoming;
		it[q].sub_running = it[q].running;
		it[q].sub_busy = it[q].busy;
	}
	for (unsigned q = nl + nv; q-- > 1;) {
		if (q >= nl)
			it[q].nb_vps = 1;
		else if (!it[q].nb_vps)
			continue;
		struct ma_vitem *to = &it[it[q].parent], *x = &it[q];
		to->nb_vps += x->nb_vps;
		to->idle_vps += x->idle_vps;
		to->sub_queued += x->sub_queued;
		to->sub_ready += x->sub_ready;
		to->sub_running += x->sub_running;
		to->sub_busy += x->sub_busy;
	}
}

/* Synthesizes the totals of bubble node n over its children, recursively, as the
 * builders do (ma_view_bubble): threads by state, CPU time, the load statistic (its hint
 * if set, else the members' sum), the VP its threads last ran on (MA_V_SEVERAL if they
 * differ). For views assembled node by node: the tests' and the simulator's. */
static inline void ma_vnode_synth(struct ma_vnode *n)
{
	if (!n->is_bubble)
		return;
	double load = 0;
	int vp = -1;
	n->nb_threads = n->nb_ready = n->nb_running = n->nb_spinning = n->nb_masters = 0;
	n->nb_members = n->nb_children;
	for (unsigned i = 0; i < n->nb_children; i++) {
		struct ma_vnode *c = (struct ma_vnode *)(uintptr_t)n->children[i];
		ma_vnode_synth(c);
		n->nb_threads += c->nb_threads;
		n->nb_ready += c->nb_ready;
		n->nb_running += c->nb_running;
		n->nb_spinning += c->nb_spinning;
		n->nb_masters += c->nb_masters;
		n->cpu_ns += c->cpu_ns;
		load += c->load;
		if (c->last_vp != -1)
			vp = vp == -1 || vp == c->last_vp ? c->last_vp : MA_V_SEVERAL;
	}
	n->last_vp = vp;
	n->load = n->load_hint >= 0 ? n->load_hint : load;
}

/* Queue number of VP vp's own queue. */
static inline int ma_view_vp_queue(const struct ma_view *v, unsigned vp)
{
	return (int)(v->nb_items + vp);
}

/* Whether queue q is anc or lies below it. */
static inline int ma_view_within(const struct ma_view *v, int q, int anc)
{
	for (; q >= 0; q = v->items[q].parent)
		if (q == anc)
			return 1;
	return 0;
}

/* Whether VP vp looks at queue q (q is on its path). */
static inline int ma_view_sees(const struct ma_view *v, int q, unsigned vp)
{
	return vp < v->nb_vps && ma_view_within(v, ma_view_vp_queue(v, vp), q);
}

/* find_next met a closed bubble at the head of a queue: what the pick hook may know. It is
 * filled under that queue's lock with a handful of loads, no allocation and no walk of
 * the bubble tree. The children items cost a read of every VP below each of them, so
 * they are filled in only when the hook asks for them (MA_D_KIDS). */
struct ma_pick_kid {
	int item;                     /* a child item of the queue that has VPs */
	unsigned nb_vps;
	unsigned long work;           /* ma_vitem_work's measure of its subtree */
	unsigned char mine;           /* on the asking VP's path */
};
/* The load around a bubble find_next met, once asked for (MA_D_LOAD): what a strategy that
 * keeps bubbles closed for thieves weighs before bursting one. */
struct ma_pick_load {
	unsigned nb_vps;              /* VPs that look at the queue */
	unsigned long queued;         /* entities queued or incoming in the queue's subtree (the
					 bubble itself included: a closed bubble counts one) */
	unsigned long running;        /* threads running that belong to that subtree (as
					 ma_vitem.running counts them), the bubble's own left out */
	unsigned threads;             /* the bubble's threads, alive and started (as
					 ma_vnode.nb_threads; a counted bubble: its count) */
	unsigned char direct;         /* it holds threads itself, not only sub-bubbles */
	unsigned char sibling;        /* a closed sibling of it (same parent) is placed in that
					 subtree, or its parent could not be looked at now */
	unsigned char busy;           /* the bubble itself could not be looked at now (its lock
					 was held): threads and direct are 0 */
};

struct ma_pick_view {
	const struct ma_topo *topo;
	struct ma_vnode b;            /* the bubble (no parent, no children) */
	int item;                     /* the queue it was met on */
	int self_vp;
	/* The queue's children items with VPs, in index order, once asked for: has_kids is
	 * then 1 (nb_kids is 0 on a VP's queue, or a leaf item). kids has room for max_kids,
	 * as many as the widest item of the topology has children with VPs. */
	unsigned char has_kids;
	unsigned nb_kids, max_kids;
	struct ma_pick_kid *kids;
	/* Once asked for (MA_D_LOAD): has_load is 1 and load filled in. */
	unsigned char has_load;
	struct ma_pick_load load;
};

/* Whether queue q of pick view pv is a VP's own queue (not an item's). */
static inline int ma_pick_on_vp(const struct ma_pick_view *pv)
{
	return pv->item >= (int)pv->topo->nb_levels;
}

/* The item of VP vp's path (its leaf first, the machine last) whose kinds include `kind`
 * (enum ma_level_kind, or several); none: the leaf for a core or a PU (a VP's leaf holds
 * its PU), else the machine. As a queue number. */
static inline int ma_topo_path_item(const struct ma_topo *t, unsigned vp, unsigned kind)
{
	const struct ma_level *l = t->vps[vp].leaf;
	for (const struct ma_level *x = l; x; x = x->parent)
		if (x->kinds & kind)
			return (int)x->id;
	return kind == MA_LEVEL_CORE || kind == MA_LEVEL_PU ? (int)l->id : 0;
}

/* ---- decisions ---- */

enum ma_dkind {
	MA_D_SERVE,    /* run a thread of the closed bubble met, here (pick only) */
	MA_D_BURST,    /* burst the closed bubble on `item` (placed there first if needed) */
	MA_D_MOVE,     /* move the entity (a placed closed bubble, or a thread scheduled on
			  a queue) to `item` (pick: `item` may be where it waits, to the back
			  of that queue: the others queued there go first). A thread's MOVE to
			  no queue (-1) with MA_D_UNSTRAY, about the thread deciding (a stray
			  hook's, not on a queue): only its mark is cleared */
	MA_D_PLACE,    /* place a closed bubble on `item`; MA_D_NOQUEUE: do not queue it */
	MA_D_STEAL,    /* take the entity waiting on `from_item` to `item`, if still there */
	MA_D_GATHER,   /* regenerate an opened bubble (gather; resubmitted once closed) */
	MA_D_UNPLACE,  /* take a closed bubble off the queues (gang: not its turn) */
	MA_D_WAKE,     /* wake an idle VP that looks at `item` (MA_D_OUTSIDE: that does not,
			  the nearest first, to come and take `item`'s work) */
};
/* A pick's SERVE with MA_D_OUTSIDE also wakes a VP outside the queue met (as a WAKE with
 * that flag), to come and take what waits there. */

#define MA_D_NOQUEUE 1u   /* PLACE: scheduled there, not queued (burst before served) */
#define MA_D_STRAY 2u     /* STEAL, MOVE of a thread: mark it stray */
#define MA_D_UNSTRAY 4u   /* STEAL, MOVE of a thread: clear the mark */
#define MA_D_GUARD 8u     /* STEAL: check the guard below with fresh loads */
#define MA_D_OUTSIDE 16u  /* WAKE: a VP that does not look at `item`; STEAL: once done, if
			     guard_from's subtree still has more threads than VPs, wake a VP
			     that does not look at it (the next thief comes for the rest) */
#define MA_D_KIDS 32u     /* pick: no answer yet; ask again with the children items */
#define MA_D_LOAD 64u     /* pick: no answer yet; ask again with the load (ma_pick_load) */
#define MA_D_ELSE 128u    /* carried out only if the decision before it was not: a chain
			     of alternatives, the first that can be done is (one skipped
			     because an earlier one was done counts as done) */
#define MA_D_THEN 256u    /* carried out only if the decision before it was */

struct ma_decision {
	enum ma_dkind kind;
	uint64_t entity;      /* ma_vnode.id (WAKE: unused) */
	int item;             /* target queue */
	int from_item;        /* STEAL: the queue the entity waits on */
	unsigned flags;       /* MA_D_* */
	/* STEAL with MA_D_GUARD: carried out only if, with loads of guard_from's and
	 * guard_to's subtrees measured again right before (ma_vitem_load_exact's measure,
	 * the asking VP's own thread left out) and x the entity's threads counted under its
	 * lock, the victim has more threads than VPs and the thief ends no busier per VP
	 * than the victim by min_gap:
	 *   L(from) > V(from)  and  (L(from) - x) * V(to) - (L(to) + x) * V(from) >= min_gap. */
	int guard_from, guard_to;
	long min_gap;
};

/* A decision list: append-only, storage owned by whoever made it (no allocation). */
struct ma_dlist {
	struct ma_decision *d;
	unsigned n, cap;
	unsigned lost;        /* pushes refused for want of room */
	/* Set by a serialised hook: once this list is carried out, call the hook again on a
	 * new view with this detail added (MA_VIEW_HAS_*; MA_VIEW_AGAIN alone: no more
	 * detail). The dispatcher asks again twice at most. */
	unsigned again;
	/* Set by any hook: call decide_tick on the strategy's heartbeat (a view without
	 * root) ma_strategy.heartbeat_us from now. Once: a heartbeat tick that wants more
	 * sets it again. Setting it while a beat is due changes nothing. */
	unsigned char beat;
};
#define MA_VIEW_AGAIN (1u << 31)

static inline void ma_dlist_init(struct ma_dlist *l, struct ma_decision *storage, unsigned cap)
{
	l->d = storage;
	l->n = 0;
	l->again = 0;
	l->beat = 0;
	l->cap = storage ? cap : 0;
	l->lost = 0;
}

/* Appends d: 0, or ENOSPC if the list is full (d is not added, `lost` counts it: a
 * strategy that ignores the result still leaves a trace of what it could not say). */
static inline int ma_dlist_push(struct ma_dlist *l, const struct ma_decision *d)
{
	if (l->n >= l->cap) {
		l->lost++;
		return ENOSPC;
	}
	l->d[l->n++] = *d;
	return 0;
}

/* Appends the decision of `kind` about `entity` to `item`, nothing else set: 0, or
 * ENOSPC (counted in `lost`, as ma_dlist_push). */
static inline int ma_dlist_add(struct ma_dlist *l, enum ma_dkind kind, uint64_t entity, int item)
{
	struct ma_decision d = { .kind = kind, .entity = entity, .item = item };
	return ma_dlist_push(l, &d);
}

#endif
