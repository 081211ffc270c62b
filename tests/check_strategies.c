/*
 * The strategies' decisions, without the runtime: views made by hand (ma_view_test.h)
 * over synthetic machines of 64 and 1024 PUs are fed to a table's decision hooks, and the
 * decisions it returns are checked (kind, entity, item, flags). No thread runs and
 * libmarcel is not linked: the program takes the strategies' objects its tables need and
 * the topology library (tests/Makefile.am), so a strategy that reached into the runtime
 * would not link here.
 */
#include <check.h>
#include <stdlib.h>
#include "ma_strategies.h"
#include "ma_view_test.h"

/* The two machines every strategy is decided on: 64 PUs, one VP per core, and 1024 PUs,
 * one VP per PU (four per core). */
static const struct machine {
	const char *spec;
	int smt;
	unsigned pus, vps, numa;
} machines[] = {
	{ "pack:2 numa:2 core:16 pu:1", 0, 64, 64, 4 },
	{ "pack:4 numa:4 core:16 pu:4", 1, 1024, 1024, 16 },
};
#define NB_MACHINES (int)(sizeof(machines) / sizeof(machines[0]))

/* Bubble ids carry the runtime's tag; the executor maps ids back, the strategy only
 * copies them. */
#define BUBBLE(n) ((UINT64_C(1) << 63) | (n))

/* ---- the harness ---- */

/* The machines as views: queues, VPs per item, the sums the builder makes. */
START_TEST(harness_machines)
{
	const struct machine *m = &machines[_i];
	struct ma_vt t;
	ma_vt_load(&t, m->spec, m->smt);
	ck_assert_uint_eq(t.v.nb_vps, m->vps);
	ck_assert_uint_eq(t.topo.nb_pus, m->pus);
	ck_assert_uint_eq(t.topo.nb_numa, m->numa);
	/* One entity queued on every VP's own queue, a thread running on every other VP,
	 * and 5 bubbles waiting on the machine's queue. */
	for (unsigned vp = 0; vp < m->vps; vp++) {
		ma_vt_queue(&t, ma_vt_vpq(&t, vp), 1, vp % 2);
		ma_vt_vp_state(&t, vp, vp % 2, !(vp % 2));
	}
	ma_vt_queue(&t, 0, 5, 0);
	ma_vt_finish(&t, NULL);
	const struct ma_vitem *top = &t.v.items[0];
	ck_assert_uint_eq(top->nb_vps, m->vps);
	ck_assert_uint_eq(top->idle_vps, m->vps / 2);
	ck_assert_uint_eq(top->sub_queued, m->vps + 5);
	ck_assert_uint_eq(top->sub_running, m->vps / 2);
	ck_assert_uint_eq(ma_vitem_load(top), m->vps + 5 + m->vps / 2);
	ck_assert_uint_eq(ma_vitem_work(top), m->vps + 5 + m->vps / 2);
	/* Each NUMA node: its share of the VPs, and of what is queued and runs below it. */
	for (unsigned i = 0; i < m->numa; i++) {
		int q = ma_vt_item(&t, MA_LEVEL_NUMA, i);
		ck_assert_int_ge(q, 1);
		const struct ma_vitem *x = &t.v.items[q];
		unsigned share = m->vps / m->numa;
		ck_assert_uint_eq(x->nb_vps, share);
		ck_assert_uint_eq(x->sub_queued, share);
		ck_assert_uint_eq(x->sub_running, share / 2);
		ck_assert(ma_view_sees(&t.v, q, x->first_vp));
		ck_assert(!ma_view_sees(&t.v, q, (x->first_vp + share) % m->vps));
	}
	ck_assert_int_eq(ma_vt_item(&t, MA_LEVEL_NUMA, m->numa), -1);
	ma_vt_free(&t);
}
END_TEST

/* A tree: the bubbles' totals synthesized from their members, children in member order. */
START_TEST(harness_tree)
{
	struct ma_vt t;
	ma_vt_load(&t, machines[0].spec, 0);
	struct ma_vnode *b = ma_vt_bubble(&t, NULL, BUBBLE(1));
	struct ma_vnode *t0 = ma_vt_thread(&t, b, 10);
	struct ma_vnode *s = ma_vt_bubble(&t, b, BUBBLE(2));
	struct ma_vnode *t1 = ma_vt_thread(&t, s, 11);
	struct ma_vnode *t2 = ma_vt_thread(&t, s, 12);
	struct ma_vnode *t3 = ma_vt_thread(&t, b, 13);
	t1->load_hint = t1->load = 4;
	t2->state = MA_V_RUNNING;
	t2->nb_ready = 0;
	t2->nb_running = 1;
	t2->last_vp = 3;
	t3->last_vp = 5;
	ma_vt_finish(&t, b);
	ck_assert_ptr_eq(t.v.root, b);
	ck_assert_uint_eq(b->nb_children, 3);
	ck_assert_ptr_eq(b->children[0], t0);
	ck_assert_ptr_eq(b->children[1], s);
	ck_assert_ptr_eq(b->children[2], t3);
	ck_assert_uint_eq(s->nb_children, 2);
	ck_assert_ptr_eq(s->children[0], t1);
	ck_assert_ptr_eq(s->children[1], t2);
	ck_assert_uint_eq(t0->nb_children, 0);
	ck_assert_uint_eq(b->nb_threads, 4);
	ck_assert_uint_eq(b->nb_ready, 3);
	ck_assert_uint_eq(b->nb_running, 1);
	ck_assert_uint_eq(b->nb_members, 3);
	ck_assert(s->load == 5 && b->load == 7);
	ck_assert_int_eq(s->last_vp, 3);
	ck_assert_int_eq(b->last_vp, MA_V_SEVERAL);
	/* A hint replaces the members' sum. */
	s->load_hint = 2;
	ma_vt_finish(&t, b);
	ck_assert(s->load == 2 && b->load == 4);
	ck_assert_uint_eq(b->nb_children, 3);
	ma_vt_free(&t);
}
END_TEST

/* ---- null ---- */

/* What null's table says of itself: it decides where a bubble goes, nothing else. */
START_TEST(null_table)
{
	const struct ma_strategy *s = &ma_strategy_null;
	ck_assert_str_eq(s->name, "null");
	ck_assert_ptr_nonnull(s->description);
	ck_assert_ptr_null(s->alias);
	ck_assert_ptr_nonnull(s->decide_submit);
	/* find_next serves what it meets; the other events keep their defaults. */
	ck_assert_ptr_null(s->decide_pick);
	ck_assert_ptr_null(s->decide_start);
	ck_assert_ptr_null(s->decide_shake);
	ck_assert_ptr_null(s->decide_tick);
	ck_assert_ptr_null(s->decide_vp_idle);
	ck_assert_ptr_null(s->decide_stray);
	ck_assert_uint_eq(s->priv_size, 0);
	ck_assert_uint_eq(s->view_detail, MA_VIEW_SHAPE);
	ck_assert_ptr_null(s->priv_init);
	ck_assert_ptr_null(s->priv_exit);
	ck_assert_uint_eq(s->default_timeslice_us, 0);
	ck_assert_uint_eq(s->private_levels, 0);
}
END_TEST

/* Calls null's decide_submit on t's view; returns the list. */
static struct ma_dlist *null_submit(struct ma_vt *t, struct ma_vt_list *x, unsigned cap)
{
	struct ma_dlist *l = ma_vt_list(x, cap);
	ma_strategy_null.decide_submit(&t->v, NULL, l);
	return l;
}

static void expect_machine(const struct ma_dlist *l, uint64_t id)
{
	ck_assert_uint_eq(l->n, 1);
	ck_assert_uint_eq(l->lost, 0);
	ck_assert_int_eq(l->d[0].kind, MA_D_PLACE);
	ck_assert(l->d[0].entity == id);
	ck_assert_int_eq(l->d[0].item, 0);
	/* Queued there (served as soon as a VP looks), not held back. */
	ck_assert_uint_eq(l->d[0].flags, 0);
}

/* A bubble just woken, whatever the loads: on the machine's queue, closed and queued,
 * one decision about it alone. */
START_TEST(null_submit_woken)
{
	const struct machine *m = &machines[_i];
	struct ma_vt t;
	ma_vt_load(&t, m->spec, m->smt);
	struct ma_vnode *b = ma_vt_bubble(&t, NULL, BUBBLE(7));
	for (unsigned i = 0; i < 3; i++)
		ma_vt_thread(&t, b, 100 + i);
	/* The machine is busy and its queue long; NUMA node 1 is idle. */
	int idle = ma_vt_item(&t, MA_LEVEL_NUMA, 1);
	for (unsigned vp = 0; vp < m->vps; vp++) {
		int in = ma_view_sees(&t.v, idle, vp);
		ma_vt_queue(&t, ma_vt_vpq(&t, vp), 0, !in);
		ma_vt_vp_state(&t, vp, !in, in);
	}
	ma_vt_queue(&t, 0, 50, 0);
	ma_vt_finish(&t, b);
	ck_assert_uint_eq(t.v.items[idle].idle_vps, m->vps / m->numa);
	struct ma_vt_list x;
	expect_machine(null_submit(&t, &x, 16), b->id);
	ma_vt_free(&t);
}
END_TEST

/* A bubble whose parent is opened on a NUMA node (the parent is not in a submit's view),
 * or that was placed on a VP's queue and is handed over again (a shake of a closed unit):
 * still the machine's queue. */
START_TEST(null_submit_placed)
{
	const struct machine *m = &machines[_i];
	struct ma_vt t;
	ma_vt_load(&t, m->spec, m->smt);
	struct ma_vnode *b = ma_vt_bubble(&t, NULL, BUBBLE(8));
	ma_vt_thread(&t, b, 200);
	ma_vt_finish(&t, b);
	struct ma_vt_list x;
	expect_machine(null_submit(&t, &x, 16), b->id);

	int q = ma_vt_vpq(&t, m->vps - 1);
	b->item = b->queued_item = b->last_item = q;
	b->nb_cached = 1;
	ma_vt_queue(&t, q, 1, 0);
	ma_vt_finish(&t, b);
	expect_machine(null_submit(&t, &x, 16), b->id);
	ma_vt_free(&t);
}
END_TEST

/* A wide tree: one decision, about the bubble handed over; its members stay inside it
 * (nothing is burst, nothing placed apart). */
START_TEST(null_submit_wide)
{
	const struct machine *m = &machines[_i];
	struct ma_vt t;
	ma_vt_load(&t, m->spec, m->smt);
	struct ma_vnode *b = ma_vt_bubble(&t, NULL, BUBBLE(9));
	uint64_t id = 1000;
	for (unsigned i = 0; i < 64; i++) {
		struct ma_vnode *s = ma_vt_bubble(&t, b, BUBBLE(100 + i));
		for (unsigned j = 0; j < 16; j++)
			ma_vt_thread(&t, s, id++);
	}
	ma_vt_finish(&t, b);
	ck_assert_uint_eq(b->nb_threads, 64 * 16);
	struct ma_vt_list x;
	expect_machine(null_submit(&t, &x, MA_VT_LIST_MAX), b->id);
	ma_vt_free(&t);
}
END_TEST

/* A full list refuses the decision and counts it: nothing is written past its storage. */
START_TEST(null_submit_full)
{
	struct ma_vt t;
	ma_vt_load(&t, machines[0].spec, 0);
	struct ma_vnode *b = ma_vt_bubble(&t, NULL, BUBBLE(10));
	ma_vt_finish(&t, b);
	struct ma_vt_list x;
	x.d[0].kind = MA_D_WAKE;
	struct ma_dlist *l = null_submit(&t, &x, 0);
	ck_assert_uint_eq(l->n, 0);
	ck_assert_uint_eq(l->lost, 1);
	ck_assert_int_eq(x.d[0].kind, MA_D_WAKE);
	ma_vt_free(&t);
}
END_TEST

/* ---- burst ---- */

START_TEST(burst_table)
{
	const struct ma_strategy *s = &ma_strategy_burst;
	ck_assert_str_eq(s->name, "burst");
	ck_assert_str_eq(s->alias, "explode");
	ck_assert_ptr_nonnull(s->decide_pick);
	ck_assert_uint_eq(s->default_timeslice_us, 20000);
	ck_assert_uint_eq(s->priv_size, 0);
	ck_assert_ptr_null(s->decide_submit);
	ck_assert_ptr_null(s->decide_tick);
	ck_assert_ptr_null(s->decide_vp_idle);
}
END_TEST

/* What find_next does with burst's answer (strategy.c's protocol): asks once more with
 * the children items if told to; *asked says whether it did. */
static struct ma_decision burst_pick(const struct ma_vt *t, struct ma_pick_view *pv, int *asked)
{
	struct ma_decision d = ma_strategy_burst.decide_pick(pv, NULL);
	*asked = 0;
	if (d.flags & MA_D_KIDS) {
		ck_assert(!pv->has_kids);
		ma_vt_pick_kids(t, pv);
		d = ma_strategy_burst.decide_pick(pv, NULL);
		*asked = 1;
		ck_assert_uint_eq(d.flags & MA_D_KIDS, 0);
	}
	ck_assert(d.entity == pv->b.id);
	return d;
}

/* A bubble of `threads` cached threads (or counting `counted` threads, blocked ones
 * included) at `level` (0: none), alone in t's tree. */
static struct ma_vnode *burst_bubble(struct ma_vt *t, unsigned threads, unsigned counted, int level)
{
	struct ma_vnode *b = ma_vt_bubble(t, NULL, BUBBLE(9));
	for (unsigned i = 0; i < threads; i++)
		ma_vt_thread(t, b, 200 + i);
	ma_vt_finish(t, b);
	b->status = MA_V_CLOSED;
	b->nb_cached = threads;
	b->counted = counted != 0;
	b->nb_threads = counted;
	b->sched_level = level;
	return b;
}

/* The item of VP vp's path at depth `depth`. */
static int path_at(const struct ma_vt *t, unsigned vp, unsigned depth)
{
	int q = ma_vt_vpq(t, vp);
	while (q >= 0 && t->it[q].depth != depth)
		q = t->it[q].parent;
	ck_assert_int_ge(q, 0);
	return q;
}

/* The deepest item of vp's path with at least n VPs. */
static int path_with(const struct ma_vt *t, unsigned vp, unsigned n)
{
	for (int q = (int)t->topo.vps[vp].leaf->id; q >= 0; q = t->it[q].parent)
		if (t->it[q].nb_vps >= n)
			return q;
	return 0;
}

/* On a VP's own queue a bubble is served, whatever it is. */
START_TEST(burst_serves_on_vp_queue)
{
	const struct machine *m = &machines[_i];
	struct ma_vt t;
	ma_vt_load(&t, m->spec, m->smt);
	unsigned vp = m->vps - 1;
	struct ma_vnode *b = burst_bubble(&t, 64, 0, MA_LEVEL_MACHINE);
	struct ma_vt_pick p;
	int asked;
	struct ma_decision d = burst_pick(&t, ma_vt_pick(&t, &p, b, ma_vt_vpq(&t, vp), vp), &asked);
	ck_assert_int_eq(d.kind, MA_D_SERVE);
	ck_assert_int_eq(asked, 0);
	ma_vt_free(&t);
}
END_TEST

/* Without a level, a bubble goes down, one level at a time, toward the deepest item of
 * the VP's path with as many VPs as it has threads, and bursts there; the children
 * items are asked for only to go down. */
START_TEST(burst_level_from_threads)
{
	const struct machine *m = &machines[_i];
	unsigned vp = m->vps / 2 + 3;
	for (unsigned threads = 1; threads <= m->vps * 2; threads *= 4) {
		struct ma_vt t;
		ma_vt_load(&t, m->spec, m->smt);
		ma_vt_sum(&t);
		struct ma_vnode *b = burst_bubble(&t, threads, 0, 0);
		int target = path_with(&t, vp, threads);
		/* Met on each item of the VP's path, machine first. */
		for (unsigned depth = 0; depth <= t.topo.vps[vp].leaf->depth; depth++) {
			int q = path_at(&t, vp, depth);
			struct ma_vt_pick p;
			int asked;
			struct ma_decision d = burst_pick(&t, ma_vt_pick(&t, &p, b, q, vp), &asked);
			if (depth >= t.it[target].depth) {
				ck_assert_msg(d.kind == MA_D_BURST && d.item == q && !asked,
					      "%u threads met at depth %u: burst there (target depth %u)", threads,
					      depth, t.it[target].depth);
			} else {
				/* An empty machine: every child ties, the VP's own wins. */
				ck_assert_int_eq(d.kind, MA_D_MOVE);
				ck_assert_int_eq(asked, 1);
				ck_assert_int_eq(d.item, path_at(&t, vp, depth + 1));
			}
		}
		ma_vt_free(&t);
	}
}
END_TEST

/* A counted bubble is as big as all its threads, blocked ones included: one ready
 * thread of 16 does not pull it down to a core. */
START_TEST(burst_counted_bubble)
{
	const struct machine *m = &machines[_i];
	struct ma_vt t;
	ma_vt_load(&t, m->spec, m->smt);
	ma_vt_sum(&t);
	unsigned vp = 5;
	struct ma_vnode *b = burst_bubble(&t, 1, 16, 0);
	int target = path_with(&t, vp, 16);
	ck_assert_uint_ge(t.it[target].nb_vps, 16);
	struct ma_vt_pick p;
	int asked;
	struct ma_decision d = burst_pick(&t, ma_vt_pick(&t, &p, b, target, vp), &asked);
	ck_assert_int_eq(d.kind, MA_D_BURST);
	ck_assert_int_eq(d.item, target);
	/* The same bubble counting nothing: one thread goes down to the VP's leaf. */
	b->counted = 0;
	b->nb_threads = 0;
	d = burst_pick(&t, ma_vt_pick(&t, &p, b, target, vp), &asked);
	ck_assert_int_eq(d.kind, MA_D_MOVE);
	ck_assert_int_eq(asked, 1);
	ck_assert(ma_view_within(&t.v, d.item, target) && d.item != target);
	ma_vt_free(&t);
}
END_TEST

/* The bubble's own level wins over its size: NUMA nodes for a bubble of 1000 threads;
 * a level the machine lacks is the machine (or the leaf for a core or a PU). */
START_TEST(burst_sched_level)
{
	const struct machine *m = &machines[_i];
	struct ma_vt t;
	ma_vt_load(&t, m->spec, m->smt);
	ma_vt_sum(&t);
	unsigned vp = m->vps - 2;
	struct ma_vnode *b = burst_bubble(&t, 1000, 0, MA_LEVEL_NUMA);
	int numa = ma_topo_path_item(&t.topo, vp, MA_LEVEL_NUMA);
	ck_assert(t.topo.levels[numa].kinds & MA_LEVEL_NUMA);
	ck_assert(ma_view_sees(&t.v, numa, vp));
	struct ma_vt_pick p;
	int asked;
	struct ma_decision d = burst_pick(&t, ma_vt_pick(&t, &p, b, numa, vp), &asked);
	ck_assert(d.kind == MA_D_BURST && d.item == numa);
	/* Met deeper than its level (moved there by another strategy): bursts where it is. */
	int leaf = (int)t.topo.vps[vp].leaf->id;
	d = burst_pick(&t, ma_vt_pick(&t, &p, b, leaf, vp), &asked);
	ck_assert(d.kind == MA_D_BURST && d.item == leaf && !asked);
	/* Met on the machine: goes down. */
	d = burst_pick(&t, ma_vt_pick(&t, &p, b, 0, vp), &asked);
	ck_assert_int_eq(d.kind, MA_D_MOVE);
	ck_assert(ma_view_within(&t.v, numa, d.item));
	/* Cores: the leaf on a machine whose leaves are PUs. */
	b->sched_level = MA_LEVEL_CORE;
	ck_assert_int_eq(ma_topo_path_item(&t.topo, vp, MA_LEVEL_CORE),
			 m->smt ? t.it[leaf].parent : leaf);
	/* A kind the machine lacks: the machine, so it bursts there. */
	b->sched_level = MA_LEVEL_L3;
	ck_assert_int_eq(ma_topo_path_item(&t.topo, vp, MA_LEVEL_L3), 0);
	d = burst_pick(&t, ma_vt_pick(&t, &p, b, 0, vp), &asked);
	ck_assert(d.kind == MA_D_BURST && d.item == 0 && !asked);
	ma_vt_free(&t);
}
END_TEST

/* Down toward the child with the least work per VP, whichever side the VP is on; on a
 * tie, the VP's own. */
START_TEST(burst_lightest_child)
{
	const struct machine *m = &machines[_i];
	struct ma_vt t;
	ma_vt_load(&t, m->spec, m->smt);
	unsigned vp = 1;                      /* in package 0 */
	int p0 = ma_vt_item(&t, MA_LEVEL_PACKAGE, 0), p1 = ma_vt_item(&t, MA_LEVEL_PACKAGE, 1);
	ck_assert(ma_view_sees(&t.v, p0, vp) && !ma_view_sees(&t.v, p1, vp));
	/* Package 1: its VPs idle, two entities queued; every other VP busy. */
	for (unsigned v = 0; v < m->vps; v++)
		ma_vt_vp_state(&t, v, !ma_view_sees(&t.v, p1, v), ma_view_sees(&t.v, p1, v));
	ma_vt_queue(&t, p1, 2, 0);
	struct ma_vnode *b = burst_bubble(&t, 2, 0, 0);
	struct ma_vt_pick p;
	int asked;
	struct ma_decision d = burst_pick(&t, ma_vt_pick(&t, &p, b, 0, vp), &asked);
	ck_assert_int_eq(d.kind, MA_D_MOVE);
	ck_assert_int_eq(d.item, p1);
	ck_assert_uint_eq(p.pv.nb_kids, t.topo.levels[0].arity);
	/* Package 1 as loaded per VP as package 0: a tie, the VP's own. */
	ma_vt_queue(&t, p1, t.it[p0].nb_vps, 0);
	ma_vt_finish(&t, b);
	ck_assert_uint_eq(ma_vitem_work(&t.it[p0]), ma_vitem_work(&t.it[p1]));
	d = burst_pick(&t, ma_vt_pick(&t, &p, b, 0, vp), &asked);
	ck_assert_int_eq(d.item, p0);
	/* One more on package 0's queue: package 1 (the first of the lightest, none the
	 * VP's own). */
	ma_vt_queue(&t, p0, 1, 0);
	ma_vt_finish(&t, b);
	d = burst_pick(&t, ma_vt_pick(&t, &p, b, 0, vp), &asked);
	ck_assert_int_eq(d.item, p1);
	/* Children without VPs are not candidates: with none left, it bursts where it is. */
	struct ma_pick_view *pv = ma_vt_pick(&t, &p, b, 0, vp);
	pv->has_kids = 1;
	pv->nb_kids = 0;
	d = ma_strategy_burst.decide_pick(pv, NULL);
	ck_assert(d.kind == MA_D_BURST && d.item == 0 && !(d.flags & MA_D_KIDS));
	ma_vt_free(&t);
}
END_TEST

/* ---- spread and memory ---- */

#include "ma_spread.h"

START_TEST(spread_tables)
{
	const struct ma_strategy *t[] = { &ma_strategy_spread, &ma_strategy_memory };
	for (unsigned i = 0; i < 2; i++) {
		const struct ma_strategy *s = t[i];
		ck_assert_ptr_nonnull(s->decide_start);
		ck_assert_ptr_nonnull(s->decide_submit);
		ck_assert_uint_eq(s->priv_size, sizeof(struct ma_spread_priv));
		ck_assert_ptr_nonnull(s->priv_exit);
		ck_assert_ptr_null(s->decide_pick);
		ck_assert_ptr_null(s->decide_tick);
	}
	ck_assert_str_eq(ma_strategy_spread.name, "spread");
	ck_assert_uint_eq(ma_strategy_spread.view_detail, MA_VIEW_SHAPE);
	ck_assert_str_eq(ma_strategy_memory.name, "memory");
	ck_assert_uint_eq(ma_strategy_memory.view_detail, MA_VIEW_MEMORY | MA_VIEW_SHAPE);
}
END_TEST

/* A tree: the root bubble opened on the machine, with bubble B (`threads` threads, an
 * item-less closed bubble being submitted) below `parent_item` (an opened bubble P on
 * that queue, or the root itself if -1). */
struct sp_tree {
	struct ma_vt t;
	struct ma_vnode *root, *p, *b;
	struct ma_spread_priv priv;
	double *placed;               /* what the builder's walk would have found */
	unsigned visits;
};

static void sp_make(struct sp_tree *x, const struct machine *m, unsigned threads, int parent_item)
{
	memset(&x->priv, 0, sizeof(x->priv));
	ma_vt_load(&x->t, m->spec, m->smt);
	x->root = ma_vt_bubble(&x->t, NULL, BUBBLE(1));
	x->root->status = MA_V_OPENED;
	x->root->item = 0;
	x->p = x->root;
	if (parent_item >= 0) {
		x->p = ma_vt_bubble(&x->t, x->root, BUBBLE(2));
		x->p->status = MA_V_OPENED;
		x->p->item = parent_item;
	}
	x->b = ma_vt_bubble(&x->t, x->p, BUBBLE(3));
	for (unsigned i = 0; i < threads; i++)
		ma_vt_thread(&x->t, x->b, 1000 + i);
	x->b->home = parent_item;
	x->t.v.begun = 1;
	x->placed = calloc(x->t.topo.nb_levels, sizeof(*x->placed));
	ck_assert_ptr_nonnull(x->placed);
	x->visits = 1;
}

/* Finishes the tree; the view is B's subtree, with x->placed if `placed`. */
static void sp_view(struct sp_tree *x, int placed)
{
	ma_vt_finish(&x->t, x->root);
	x->t.v.root = x->b;
	x->t.v.placed = placed ? x->placed : NULL;
	x->t.v.placed_visits = x->visits;
	x->t.v.placed_cpu_ns = 1000000;
	x->t.v.flags = placed ? MA_VIEW_HAS_PLACED : 0;
}

static struct ma_dlist *sp_submit(struct sp_tree *x, struct ma_vt_list *l, int memory)
{
	struct ma_dlist *out = ma_vt_list(l, 4096);
	ma_spread_decide_submit(&x->t.v, &x->priv, out, memory);
	return out;
}

static void sp_free(struct sp_tree *x)
{
	ma_spread_priv_exit(&x->priv);
	free(x->placed);
	ma_vt_free(&x->t);
}

/* The item of queue q's leaf side: q itself, or a VP queue's leaf. */
static int sp_leaf(const struct ma_vt *t, int q)
{
	return q >= (int)t->v.nb_items ? t->it[q].parent : q;
}

/* Before marcel_bubble_sched_begin, and below a VP's own queue or an item with one VP:
 * no figures asked, one PLACE. */
START_TEST(spread_submit_simple)
{
	const struct machine *m = &machines[_i];
	struct sp_tree x;
	struct ma_vt_list l;
	/* Not begun: where its parent is (the machine's for the root). */
	sp_make(&x, m, 4, -1);
	x.t.v.begun = 0;
	sp_view(&x, 0);
	struct ma_dlist *out = sp_submit(&x, &l, 0);
	ck_assert_uint_eq(out->n, 1);
	ck_assert_uint_eq(out->again, 0);
	ck_assert(out->d[0].kind == MA_D_PLACE && out->d[0].entity == x.b->id && out->d[0].item == 0);
	unsigned vp = m->vps - 1;
	int vq = ma_vt_vpq(&x.t, vp), leaf = (int)x.t.topo.vps[vp].leaf->id;
	sp_free(&x);
	/* Parent opened on a VP's own queue: there. */
	sp_make(&x, m, 4, vq);
	sp_view(&x, 0);
	out = sp_submit(&x, &l, 0);
	ck_assert_uint_eq(out->n, 1);
	ck_assert(out->d[0].kind == MA_D_PLACE && out->d[0].item == vq);
	sp_free(&x);
	/* Parent opened on the VP's leaf (one VP): down to the leaf, whole. */
	sp_make(&x, m, 4, leaf);
	ck_assert_uint_eq(x.t.topo.levels[leaf].nb_vps, 1);
	sp_view(&x, 0);
	out = sp_submit(&x, &l, 0);
	ck_assert_uint_eq(out->n, 1);
	ck_assert(out->d[0].kind == MA_D_PLACE && out->d[0].item == leaf);
	ck_assert_uint_eq(out->again, 0);
	sp_free(&x);
}
END_TEST

/* Below the machine: without figures, they are asked for; with them, the bubble
 * bursts on the machine (one entity for two children or more) and its threads go to
 * distinct leaves, evenly over the machine's children; the BURST comes first. */
START_TEST(spread_submit_spreads)
{
	const struct machine *m = &machines[_i];
	struct sp_tree x;
	struct ma_vt_list l;
	sp_make(&x, m, 8, -1);
	unsigned kids = x.t.topo.levels[0].arity;
	sp_view(&x, 0);
	struct ma_dlist *out = sp_submit(&x, &l, 0);
	ck_assert_uint_eq(out->n, 0);
	ck_assert_uint_eq(out->again, MA_VIEW_PLACED);
	sp_view(&x, 1);
	out = sp_submit(&x, &l, 0);
	ck_assert_uint_eq(out->again, 0);
	ck_assert_uint_eq(out->n, 9);
	ck_assert(out->d[0].kind == MA_D_BURST && out->d[0].entity == x.b->id && out->d[0].item == 0);
	unsigned per_kid[16] = { 0 };
	for (unsigned i = 1; i < out->n; i++) {
		const struct ma_decision *d = &out->d[i];
		ck_assert_int_eq(d->kind, MA_D_MOVE);
		ck_assert(d->entity >= 1000 && d->entity < 1008);
		/* A leaf with a VP, and no two threads on one. */
		ck_assert_uint_eq(x.t.topo.levels[d->item].arity, 0);
		for (unsigned j = 1; j < i; j++)
			ck_assert_int_ne(out->d[j].item, d->item);
		for (unsigned k = 0; k < kids; k++)
			if (ma_view_within(&x.t.v, d->item, (int)x.t.topo.levels[0].children[k]->id))
				per_kid[k]++;
	}
	for (unsigned k = 0; k < kids; k++)
		ck_assert_uint_eq(per_kid[k], 8 / kids);
	/* A small tree: its figures are not kept. */
	ck_assert_int_eq(x.priv.valid, 0);
	sp_free(&x);
}
END_TEST

/* What is already placed counts: with the machine's first child loaded (a closed bubble
 * placed there and a thread scheduled on one of its VPs, as the walk sums them), the
 * threads go elsewhere. */
START_TEST(spread_submit_placed)
{
	const struct machine *m = &machines[_i];
	struct sp_tree x;
	struct ma_vt_list l;
	sp_make(&x, m, 2, -1);
	int c0 = (int)x.t.topo.levels[0].children[0]->id;
	x.placed[c0] = 1000;
	x.placed[x.t.topo.vps[x.t.topo.levels[c0].first_vp].leaf->id] = 1;
	sp_view(&x, 1);
	struct ma_dlist *out = sp_submit(&x, &l, 0);
	ck_assert_uint_ge(out->n, 1);
	for (unsigned i = 0; i < out->n; i++)
		ck_assert_msg(!ma_view_within(&x.t.v, out->d[i].item, c0) || out->d[i].item == 0,
			      "decision %u goes to the loaded child", i);
	sp_free(&x);
}
END_TEST

/* A tree of 64 bubbles or more: its figures are kept, a later submit within 16 times
 * the view's cost uses them without asking, and adds what it placed; past that, it asks
 * again. */
START_TEST(spread_submit_kept)
{
	const struct machine *m = &machines[_i];
	struct sp_tree x;
	struct ma_vt_list l;
	sp_make(&x, m, 1, -1);
	x.visits = 70;
	sp_view(&x, 1);
	x.t.v.now_ns = 5000000000ull;
	struct ma_dlist *out = sp_submit(&x, &l, 0);
	ck_assert_int_eq(x.priv.valid, 1);
	ck_assert(x.priv.own && x.priv.nb == x.t.v.nb_items);
	ck_assert(x.priv.at_ns == 5000000000ull && x.priv.cost_ns == 1000000);
	/* One entity for several children: B bursts on the machine, its thread goes down.
	 * Nothing was placed: where the thread went is what was added. */
	ck_assert_uint_eq(out->n, 2);
	ck_assert(out->d[0].kind == MA_D_BURST && out->d[1].kind == MA_D_MOVE);
	int to = out->d[1].item;
	ck_assert(x.priv.own[sp_leaf(&x.t, to)] == 1);
	/* Within 16 ms: the kept figures, no question. */
	sp_view(&x, 0);
	x.t.v.now_ns = 5000000000ull + 16 * 1000000ull;
	out = sp_submit(&x, &l, 0);
	ck_assert_uint_eq(out->again, 0);
	ck_assert_uint_eq(out->n, 2);
	/* Already counted where it went: the thread goes elsewhere now. */
	ck_assert_int_ne(out->d[1].item, to);
	ck_assert(x.priv.own[sp_leaf(&x.t, out->d[1].item)] == 1);
	/* Later: the tree again. */
	x.t.v.now_ns += 1;
	out = sp_submit(&x, &l, 0);
	ck_assert_uint_eq(out->n, 0);
	ck_assert_uint_eq(out->again, MA_VIEW_PLACED);
	sp_free(&x);
}
END_TEST

/* memory: a bubble with its memory on a NUMA node goes there whole, whatever the load;
 * spread, or a view without the preferred nodes, ignores it. */
START_TEST(memory_submit)
{
	const struct machine *m = &machines[_i];
	struct sp_tree x;
	struct ma_vt_list l;
	sp_make(&x, m, 2, -1);
	int node = ma_vt_item(&x.t, MA_LEVEL_NUMA, m->numa - 1);
	x.b->pref_node = (int)(m->numa - 1);
	sp_view(&x, 1);
	x.t.v.flags |= MA_VIEW_HAS_MEMORY;
	struct ma_dlist *out = sp_submit(&x, &l, 1);
	ck_assert_uint_ge(out->n, 1);
	for (unsigned i = 0; i < out->n; i++)
		ck_assert_msg(ma_view_within(&x.t.v, out->d[i].item, node), "decision %u off the node", i);
	/* spread: it bursts on the machine (2 threads, 2 or more children). */
	out = sp_submit(&x, &l, 0);
	ck_assert(out->d[0].kind == MA_D_BURST && out->d[0].item == 0);
	sp_free(&x);
}
END_TEST

/* start: the root's opened members are gathered first and the hook asked again; a
 * bubble handed back meanwhile (nested) waits on its parent's queue; then the closed
 * woken members and the started threads are distributed from the machine. */
START_TEST(spread_start)
{
	const struct machine *m = &machines[_i];
	struct ma_vt t;
	struct ma_spread_priv p = { 0 };
	struct ma_vt_list l;
	ma_vt_load(&t, m->spec, m->smt);
	struct ma_vnode *r = ma_vt_bubble(&t, NULL, BUBBLE(1));
	r->status = MA_V_OPENED;
	r->item = 0;
	struct ma_vnode *open = ma_vt_bubble(&t, r, BUBBLE(2));
	open->status = MA_V_OPENED;
	open->item = 0;
	struct ma_vnode *closed = ma_vt_bubble(&t, r, BUBBLE(3));
	for (unsigned i = 0; i < 4; i++)
		ma_vt_thread(&t, closed, 100 + i);
	struct ma_vnode *unwoken = ma_vt_bubble(&t, r, BUBBLE(4));
	unwoken->woken = 0;
	ma_vt_thread(&t, unwoken, 200);
	struct ma_vnode *main_t = ma_vt_thread(&t, r, 1);
	main_t->is_main = 1;
	struct ma_vnode *born = ma_vt_thread(&t, r, 300);
	born->state = MA_V_BORN;
	struct ma_vnode *loose = ma_vt_thread(&t, r, 400);
	loose->item = 0;
	ma_vt_finish(&t, r);
	t.v.begun = 1;
	struct ma_dlist *out = ma_vt_list(&l, 4096);
	ma_spread_decide_start(&t.v, &p, out, 0);
	ck_assert_uint_eq(out->n, 1);
	ck_assert(out->d[0].kind == MA_D_GATHER && out->d[0].entity == open->id);
	ck_assert_uint_eq(out->again, MA_VIEW_AGAIN);
	ck_assert_int_eq(p.starting, 1);
	/* The gathered bubble closes at once and is handed back, nested: its parent's. */
	struct ma_vt sub;
	ma_vt_load(&sub, m->spec, m->smt);
	struct ma_vnode *g = ma_vt_bubble(&sub, NULL, open->id);
	ma_vt_thread(&sub, g, 500);
	ma_vt_finish(&sub, g);
	sub.v.begun = 1;
	sub.v.nested = 1;
	out = ma_vt_list(&l, 4096);
	ma_spread_decide_submit(&sub.v, &p, out, 0);
	ck_assert_uint_eq(out->n, 1);
	ck_assert(out->d[0].kind == MA_D_PLACE && out->d[0].item == 0);
	ma_vt_free(&sub);
	/* Round 1: distributed. */
	open->status = MA_V_CLOSED;
	open->item = 0;
	ma_vt_finish(&t, r);
	t.v.round = 1;
	out = ma_vt_list(&l, 4096);
	ma_spread_decide_start(&t.v, &p, out, 0);
	ck_assert_uint_eq(out->again, 0);
	ck_assert_int_eq(p.starting, 0);
	int seen_closed = 0, seen_loose = 0;
	for (unsigned i = 0; i < out->n; i++) {
		uint64_t id = out->d[i].entity;
		ck_assert(id != unwoken->id && id != main_t->id && id != born->id && id != 200);
		seen_closed |= id == closed->id;
		seen_loose |= id == loose->id;
	}
	ck_assert(seen_closed && seen_loose);
	ck_assert_int_eq(p.valid, 0);
	ma_spread_priv_exit(&p);
	ma_vt_free(&t);
}
END_TEST

/* A submit of its own (not nested) means no start is under way: a flag left by a start
 * that never came back (its view could not be built) is cleared. */
START_TEST(spread_stale_start)
{
	const struct machine *m = &machines[_i];
	struct sp_tree x;
	struct ma_vt_list l;
	sp_make(&x, m, 8, -1);
	x.priv.starting = 1;
	sp_view(&x, 1);
	struct ma_dlist *out = sp_submit(&x, &l, 0);
	ck_assert_int_eq(x.priv.starting, 0);
	ck_assert_uint_eq(out->n, 9);
	sp_free(&x);
}
END_TEST

/* ---- cache ---- */

START_TEST(cache_table)
{
	const struct ma_strategy *s = &ma_strategy_cache;
	ck_assert_str_eq(s->name, "cache");
	ck_assert_str_eq(s->alias, "affinity");
	ck_assert_ptr_nonnull(s->decide_start);
	ck_assert_ptr_nonnull(s->decide_submit);
	ck_assert_ptr_null(s->decide_pick);
	ck_assert_uint_eq(s->view_detail, MA_VIEW_READY);
	ck_assert_uint_eq(s->private_levels, 1);
}
END_TEST

/* A bubble B of threads that last ran on VPs vps[0..n) (-1: never ran), woken below the
 * root (opened on the machine); VP `self` decides. */
static struct ma_vnode *cache_tree(struct ma_vt *t, const struct machine *m, const int *vps, unsigned n)
{
	ma_vt_load(t, m->spec, m->smt);
	struct ma_vnode *r = ma_vt_bubble(t, NULL, BUBBLE(1));
	r->status = MA_V_OPENED;
	r->item = 0;
	struct ma_vnode *b = ma_vt_bubble(t, r, BUBBLE(2));
	for (unsigned i = 0; i < n; i++)
		ma_vt_thread(t, b, 100 + i)->last_vp = vps[i];
	return b;
}

static struct ma_dlist *cache_submit(struct ma_vt *t, struct ma_vnode *root, struct ma_vnode *b,
				     struct ma_vt_list *l, int self)
{
	ma_vt_finish(t, root);
	t->v.root = b;
	t->v.self_vp = self;
	t->v.flags = MA_VIEW_HAS_READY;
	struct ma_dlist *out = ma_vt_list(l, 4096);
	ma_strategy_cache.decide_submit(&t->v, NULL, out);
	return out;
}

/* One thread that last ran on a VP: the bubble goes whole to that VP's own queue. */
START_TEST(cache_back_to_its_vp)
{
	const struct machine *m = &machines[_i];
	struct ma_vt t;
	struct ma_vt_list l;
	int vp = (int)m->vps - 3;
	struct ma_vnode *b = cache_tree(&t, m, &vp, 1);
	struct ma_dlist *out = cache_submit(&t, (struct ma_vnode *)(uintptr_t)b->parent, b, &l, 0);
	ck_assert_uint_eq(out->n, 1);
	ck_assert(out->d[0].kind == MA_D_PLACE && out->d[0].entity == b->id);
	ck_assert_int_eq(out->d[0].item, ma_vt_vpq(&t, (unsigned)vp));
	ma_vt_free(&t);
}
END_TEST

/* Four threads that ran on four VPs: no child of their cover takes the bubble whole, so it
 * bursts there and each thread goes back to its own VP; the BURST comes first. */
START_TEST(cache_burst_to_last_vps)
{
	const struct machine *m = &machines[_i];
	struct ma_vt t;
	struct ma_vt_list l;
	int vps[4] = { 8, 9, 10, 11 };
	struct ma_vnode *b = cache_tree(&t, m, vps, 4);
	struct ma_dlist *out = cache_submit(&t, (struct ma_vnode *)(uintptr_t)b->parent, b, &l, 0);
	ck_assert_uint_eq(out->n, 5);
	ck_assert(out->d[0].kind == MA_D_BURST && out->d[0].entity == b->id);
	/* Burst on an item that holds the four VPs. */
	for (unsigned i = 0; i < 4; i++)
		ck_assert(ma_view_sees(&t.v, out->d[0].item, (unsigned)vps[i]));
	for (unsigned i = 1; i < 5; i++) {
		ck_assert_int_eq(out->d[i].kind, MA_D_MOVE);
		ck_assert(out->d[i].entity == 100 + (i - 1));
		ck_assert_int_eq(out->d[i].item, ma_vt_vpq(&t, (unsigned)vps[i - 1]));
	}
	ma_vt_free(&t);
}
END_TEST

/* Its VP overloaded, a thread that ran there goes to the lightest VP near it instead (the
 * smallest item around that can take it). */
START_TEST(cache_widens_when_full)
{
	const struct machine *m = &machines[_i];
	struct ma_vt t;
	struct ma_vt_list l;
	int vp = 4;
	struct ma_vnode *b = cache_tree(&t, m, &vp, 1);
	/* Its VP runs a thread and has 3 more queued. */
	ma_vt_queue(&t, ma_vt_vpq(&t, 4), 3, 1);
	struct ma_dlist *out = cache_submit(&t, (struct ma_vnode *)(uintptr_t)b->parent, b, &l, 0);
	ck_assert_uint_eq(out->n, 1);
	ck_assert_int_eq(out->d[0].kind, MA_D_PLACE);
	int q = out->d[0].item;
	ck_assert_int_ne(q, ma_vt_vpq(&t, 4));
	ck_assert_int_ge(q, (int)t.v.nb_items);
	/* A neighbour: below the smallest item around VP 4 with room for one more. */
	int around = ma_vt_vpq(&t, 4);
	while (ma_vitem_load_exact(&t.it[around]) + 1 > t.it[around].nb_vps)
		around = t.it[around].parent;
	ck_assert_int_ge(around, 0);
	ck_assert(ma_view_within(&t.v, q, around));
	ma_vt_free(&t);
}
END_TEST

/* Threads that never ran: balanced from the parent's queue, ties toward the waker; with
 * the waker's side loaded, the other side. Two threads fit no VP whole: the bubble goes
 * down whole while it fits, then bursts and its threads take a VP each. */
START_TEST(cache_never_ran)
{
	const struct machine *m = &machines[_i];
	struct ma_vt t;
	struct ma_vt_list l;
	int none[2] = { -1, -1 };
	unsigned self = m->vps - 1;
	struct ma_vnode *b = cache_tree(&t, m, none, 2);
	int p0 = (int)t.topo.levels[0].children[0]->id;
	int plast = (int)t.topo.levels[0].children[t.topo.levels[0].arity - 1]->id;
	struct ma_dlist *out = cache_submit(&t, (struct ma_vnode *)(uintptr_t)b->parent, b, &l, (int)self);
	ck_assert_uint_eq(out->n, 3);
	ck_assert(out->d[0].kind == MA_D_BURST && out->d[0].entity == b->id);
	ck_assert(ma_view_sees(&t.v, out->d[0].item, self));
	for (unsigned i = 0; i < 3; i++)
		ck_assert(ma_view_within(&t.v, out->d[i].item, plast));
	ck_assert(out->d[1].kind == MA_D_MOVE && out->d[2].kind == MA_D_MOVE);
	ck_assert_int_ge(out->d[1].item, (int)t.v.nb_items);
	ck_assert_int_ne(out->d[1].item, out->d[2].item);
	/* The waker's package full of work: the first package. */
	for (unsigned v = 0; v < m->vps; v++)
		if (ma_view_sees(&t.v, plast, v))
			ma_vt_queue(&t, ma_vt_vpq(&t, v), 0, 1);
	out = cache_submit(&t, (struct ma_vnode *)(uintptr_t)b->parent, b, &l, (int)self);
	ck_assert_uint_eq(out->n, 3);
	for (unsigned i = 0; i < 3; i++)
		ck_assert(ma_view_within(&t.v, out->d[i].item, p0));
	ma_vt_free(&t);
}
END_TEST

/* start: every closed woken bubble of the root at once, each back where its threads ran;
 * opened, unwoken and fixed ones left alone. */
START_TEST(cache_start)
{
	const struct machine *m = &machines[_i];
	struct ma_vt t;
	struct ma_vt_list l;
	ma_vt_load(&t, m->spec, m->smt);
	struct ma_vnode *r = ma_vt_bubble(&t, NULL, BUBBLE(1));
	r->status = MA_V_OPENED;
	r->item = 0;
	unsigned a = 2, z = m->vps - 2;
	struct ma_vnode *ba = ma_vt_bubble(&t, r, BUBBLE(2));
	ma_vt_thread(&t, ba, 100)->last_vp = (int)a;
	struct ma_vnode *bz = ma_vt_bubble(&t, r, BUBBLE(3));
	ma_vt_thread(&t, bz, 200)->last_vp = (int)z;
	struct ma_vnode *op = ma_vt_bubble(&t, r, BUBBLE(4));
	op->status = MA_V_OPENED;
	ma_vt_thread(&t, op, 300);
	struct ma_vnode *un = ma_vt_bubble(&t, r, BUBBLE(5));
	un->woken = 0;
	ma_vt_thread(&t, un, 400);
	struct ma_vnode *fx = ma_vt_bubble(&t, r, BUBBLE(6));
	fx->fixed_item = 0;
	ma_vt_thread(&t, fx, 500);
	ma_vt_finish(&t, r);
	t.v.flags = MA_VIEW_HAS_READY;
	struct ma_dlist *out = ma_vt_list(&l, 4096);
	ma_strategy_cache.decide_start(&t.v, NULL, out);
	ck_assert_uint_eq(out->n, 2);
	ck_assert(out->d[0].kind == MA_D_PLACE && out->d[0].entity == ba->id &&
		  out->d[0].item == ma_vt_vpq(&t, a));
	ck_assert(out->d[1].kind == MA_D_PLACE && out->d[1].entity == bz->id &&
		  out->d[1].item == ma_vt_vpq(&t, z));
	ma_vt_free(&t);
}
END_TEST

/* A bubble nested deeper than a recursion could go, its one thread on a VP: the plan and
 * its walks keep their own stacks. */
START_TEST(cache_deep)
{
	const struct machine *m = &machines[0];
	struct ma_vt t;
	struct ma_vt_list l;
	ma_vt_load(&t, m->spec, m->smt);
	struct ma_vnode *r = ma_vt_bubble(&t, NULL, BUBBLE(1));
	r->status = MA_V_OPENED;
	r->item = 0;
	struct ma_vnode *b = ma_vt_bubble(&t, r, BUBBLE(2)), *x = b;
	for (unsigned d = 0; d < 2000; d++)
		x = ma_vt_bubble(&t, x, BUBBLE(10 + d));
	ma_vt_thread(&t, x, 100)->last_vp = 7;
	struct ma_dlist *out = cache_submit(&t, r, b, &l, 0);
	ck_assert_uint_eq(out->n, 1);
	ck_assert(out->d[0].kind == MA_D_PLACE && out->d[0].item == ma_vt_vpq(&t, 7));
	ma_vt_free(&t);
}
END_TEST

/* ---- gang ---- */

START_TEST(gang_table)
{
	const struct ma_strategy *s = &ma_strategy_gang;
	ck_assert_str_eq(s->name, "gang");
	ck_assert_ptr_nonnull(s->description);
	ck_assert_ptr_nonnull(s->decide_start);
	ck_assert_ptr_nonnull(s->decide_submit);
	ck_assert_ptr_nonnull(s->decide_tick);
	ck_assert_ptr_nonnull(s->decide_pick);
	/* A shake gathers (the default): the gang comes back through submit. */
	ck_assert_ptr_null(s->decide_shake);
	ck_assert_ptr_null(s->decide_vp_idle);
	ck_assert_ptr_null(s->decide_stray);
	ck_assert_uint_gt(s->priv_size, 0);
	ck_assert_uint_eq(s->heartbeat_us, 1000);
	/* It reads no load; it asks for the gangs when it needs them. */
	ck_assert_uint_eq(s->view_detail, MA_VIEW_SHAPE);
}
END_TEST

#define GANGS 3
#define MS 1000000ull

/* A machine, the root bubble (opened on the machine's queue) and GANGS gangs of two ready
 * threads, closed and placed nowhere (as between their wake-up and their submit), an
 * implicit bubble of the root with a gang of its own, and the gangs' private block. */
struct gangs {
	struct ma_vt t;
	struct ma_vnode *root, *g[GANGS + 1], *implicit, *inner;
	const struct ma_vnode *outer[GANGS + 1];
	void *priv;
	struct ma_vt_list x;
};

static void gangs_make(struct gangs *x)
{
	ma_vt_load(&x->t, machines[0].spec, machines[0].smt);
	x->root = ma_vt_bubble(&x->t, NULL, BUBBLE(1));
	x->root->status = MA_V_OPENED;
	x->root->item = 0;
	for (unsigned i = 0; i < GANGS; i++) {
		x->g[i] = ma_vt_bubble(&x->t, x->root, BUBBLE(10 * (i + 1)));
		x->g[i]->outer = 1;
		ma_vt_thread(&x->t, x->g[i], 100 + 2 * i);
		ma_vt_thread(&x->t, x->g[i], 101 + 2 * i);
	}
	/* The root's implicit bubble (a thread in no explicit bubble woke it) holds the last
	 * gang: a gang too. */
	x->implicit = ma_vt_bubble(&x->t, x->root, BUBBLE(5));
	x->implicit->implicit = 1;
	x->implicit->status = MA_V_OPENED;
	x->implicit->item = 0;
	x->g[GANGS] = ma_vt_bubble(&x->t, x->implicit, BUBBLE(40));
	x->g[GANGS]->outer = 1;
	ma_vt_thread(&x->t, x->g[GANGS], 200);
	/* A bubble inside the first gang: no gang. */
	x->inner = ma_vt_bubble(&x->t, x->g[0], BUBBLE(11));
	ma_vt_thread(&x->t, x->inner, 300);
	ma_vt_finish(&x->t, x->root);
	for (unsigned i = 0; i <= GANGS; i++)
		x->outer[i] = x->g[i];
	x->priv = calloc(1, ma_strategy_gang.priv_size);
	ck_assert_ptr_nonnull(x->priv);
	x->t.v.now_ns = 1000 * MS;
}

static void gangs_free(struct gangs *x)
{
	free(x->priv);
	ma_vt_free(&x->t);
}

/* The view a hook of gang gets about `root` (NULL: the heartbeat), in round `round`, with
 * the gangs if `outer`. */
static void gangs_view(struct gangs *x, const struct ma_vnode *root, unsigned round, int outer)
{
	x->t.v.root = root;
	x->t.v.round = (unsigned char)round;
	x->t.v.flags = MA_VIEW_SHAPE | (outer ? MA_VIEW_HAS_OUTER : 0);
	x->t.v.outer = outer ? x->outer : NULL;
	x->t.v.nb_outer = outer ? GANGS + 1 : 0;
}

typedef void (*gang_hook)(const struct ma_view *v, void *priv, struct ma_dlist *out);

/* The hook on `root` as the dispatcher calls it: once, then again with the gangs if it
 * asks for them (the same round's list is carried out before, here: returned in *first). */
static struct ma_dlist *gangs_call(struct gangs *x, gang_hook hook, const struct ma_vnode *root, unsigned *first)
{
	struct ma_dlist *l = ma_vt_list(&x->x, 64);
	gangs_view(x, root, 0, 0);
	hook(&x->t.v, x->priv, l);
	*first = l->n;
	if (l->again) {
		ck_assert_uint_eq(l->again, MA_VIEW_OUTER);
		unsigned n = l->n;
		l->again = 0;
		gangs_view(x, root, 1, 1);
		hook(&x->t.v, x->priv, l);
		/* Asked once is enough. */
		ck_assert_uint_eq(l->again, 0);
		ck_assert_uint_ge(l->n, n);
	}
	return l;
}

static void expect(const struct ma_dlist *l, unsigned i, enum ma_dkind kind, const struct ma_vnode *n, int item)
{
	ck_assert_uint_gt(l->n, i);
	ck_assert_int_eq(l->d[i].kind, kind);
	ck_assert(l->d[i].entity == n->id);
	if (kind != MA_D_GATHER && kind != MA_D_UNPLACE)
		ck_assert_int_eq(l->d[i].item, item);
	ck_assert_uint_eq(l->d[i].flags, 0);
}

/* What find_next is told about gang g met on queue q. */
static struct ma_decision gangs_pick(struct gangs *x, const struct ma_vnode *g, int q)
{
	struct ma_vt_pick p;
	return ma_strategy_gang.decide_pick(ma_vt_pick(&x->t, &p, g, q, 0), x->priv);
}

/* The heartbeat at `now_ms` (the gangs' clock starts at 1000 ms). */
static struct ma_dlist *gangs_beat(struct gangs *x, uint64_t now_ms)
{
	unsigned first;
	x->t.v.now_ns = now_ms * MS;
	struct ma_dlist *l = gangs_call(x, ma_strategy_gang.decide_tick, NULL, &first);
	/* Without the gangs, a beat decides nothing. */
	ck_assert_uint_eq(first, 0);
	return l;
}

/* The gang's turn ended: gathered, every thread back, closed and submitted. */
static struct ma_dlist *gangs_back(struct gangs *x, struct ma_vnode *g)
{
	g->status = MA_V_CLOSED;
	unsigned first;
	struct ma_dlist *l = gangs_call(x, ma_strategy_gang.decide_submit, g, &first);
	ck_assert_uint_eq(first, 1);
	expect(l, 0, MA_D_UNPLACE, g, -1);
	g->item = -1;
	return l;
}

/* Burst by the last decision: opened on the machine. */
static void gangs_burst(struct gangs *x, struct ma_vnode *g)
{
	(void)x;
	g->status = MA_V_OPENED;
	g->item = 0;
}

/* Turns: the first gang submitted waits off the queues and, none running, the smallest
 * id is burst on the machine; the others wait; the slice ends only when another waits;
 * the next by id follows, round robin; find_next never serves a waiting gang. */
START_TEST(gang_turns)
{
	struct gangs x;
	gangs_make(&x);
	unsigned first;
	/* The second gang is woken first: off the queues, then the first by id runs. */
	struct ma_dlist *l = gangs_call(&x, ma_strategy_gang.decide_submit, x.g[1], &first);
	ck_assert_uint_eq(first, 1);
	ck_assert_uint_eq(l->n, 2);
	expect(l, 0, MA_D_UNPLACE, x.g[1], -1);
	expect(l, 1, MA_D_BURST, x.g[0], 0);
	ck_assert_int_eq(l->beat, 1);
	gangs_burst(&x, x.g[0]);
	/* The others, woken now, wait: no gang list needed. */
	for (unsigned i = 2; i <= GANGS; i++) {
		l = gangs_call(&x, ma_strategy_gang.decide_submit, x.g[i], &first);
		ck_assert_uint_eq(l->n, 1);
		expect(l, 0, MA_D_UNPLACE, x.g[i], -1);
		ck_assert_int_eq(l->beat, 1);
	}
	/* find_next bursts the current gang and sends a waiting one to the back of its
	 * queue; a bubble that is no gang is burst. */
	struct ma_decision d = gangs_pick(&x, x.g[0], 0);
	ck_assert(d.kind == MA_D_BURST && d.entity == x.g[0]->id && d.item == 0);
	d = gangs_pick(&x, x.g[2], 7);
	ck_assert(d.kind == MA_D_MOVE && d.entity == x.g[2]->id && d.item == 7);
	d = gangs_pick(&x, x.inner, 3);
	ck_assert(d.kind == MA_D_BURST && d.entity == x.inner->id && d.item == 3);
	/* Its slice: 10 ms from its burst (at 1000 ms). */
	l = gangs_beat(&x, 1009);
	ck_assert_uint_eq(l->n, 0);
	ck_assert_int_eq(l->beat, 1);
	/* Every cycle visits every gang by id, then starts again from the smallest. */
	uint64_t now = 1010;
	for (unsigned turn = 0; turn < 2 * (GANGS + 1); turn++) {
		struct ma_vnode *cur = x.g[turn % (GANGS + 1)], *next = x.g[(turn + 1) % (GANGS + 1)];
		l = gangs_beat(&x, now);
		ck_assert_uint_eq(l->n, 1);
		expect(l, 0, MA_D_GATHER, cur, -1);
		ck_assert_int_eq(l->beat, 1);
		/* Gathered once: its threads come back in their time. */
		cur->status = MA_V_CLOSING;
		l = gangs_beat(&x, now + 5);
		ck_assert_uint_eq(l->n, 0);
		ck_assert_int_eq(l->beat, 1);
		l = gangs_back(&x, cur);
		ck_assert_uint_eq(l->n, 2);
		expect(l, 1, MA_D_BURST, next, 0);
		ck_assert_int_eq(l->beat, 1);
		gangs_burst(&x, next);
		x.t.v.now_ns = (now + 6) * MS;
		now += 6 + 10;
	}
	gangs_free(&x);
}
END_TEST

/* A gang alone runs on: its slice ends only for another that waits. Its own slice
 * (marcel_bubble_settimeslice) replaces the 10 ms. */
START_TEST(gang_slices)
{
	struct gangs x;
	gangs_make(&x);
	for (unsigned i = 1; i <= GANGS; i++)
		x.g[i]->woken = 0;
	unsigned first;
	struct ma_dlist *l = gangs_call(&x, ma_strategy_gang.decide_submit, x.g[0], &first);
	ck_assert_uint_eq(l->n, 2);
	expect(l, 1, MA_D_BURST, x.g[0], 0);
	gangs_burst(&x, x.g[0]);
	l = gangs_beat(&x, 5000);
	ck_assert_uint_eq(l->n, 0);
	ck_assert_int_eq(l->beat, 1);
	/* A second gang with a slice of 2 ms: it waits for the first's 10 ms, then runs
	 * 2 ms. */
	x.g[1]->woken = 1;
	x.g[1]->timeslice_us = 2000;
	l = gangs_call(&x, ma_strategy_gang.decide_submit, x.g[1], &first);
	ck_assert_uint_eq(l->n, 1);
	l = gangs_beat(&x, 5001);
	expect(l, 0, MA_D_GATHER, x.g[0], -1);
	l = gangs_back(&x, x.g[0]);
	expect(l, 1, MA_D_BURST, x.g[1], 0);
	gangs_burst(&x, x.g[1]);
	l = gangs_beat(&x, 5002);
	ck_assert_uint_eq(l->n, 0);
	l = gangs_beat(&x, 5003);
	expect(l, 0, MA_D_GATHER, x.g[1], -1);
	/* The gangs end, are joined and destroyed: nothing woken, the heartbeat stops. */
	l = gangs_back(&x, x.g[1]);
	expect(l, 1, MA_D_BURST, x.g[0], 0);
	gangs_burst(&x, x.g[0]);
	x.g[1]->woken = 0;
	x.outer[0] = x.g[1];
	l = gangs_beat(&x, 5010);
	ck_assert_uint_eq(l->n, 0);
	ck_assert_int_eq(l->beat, 0);
	gangs_free(&x);
}
END_TEST

/* A gang woken before its members were inserted is submitted empty: it does not run
 * then, but the heartbeat goes on while it is woken, and bursts it once it has members
 * (doc/design.md, "gang: a gang woken empty never ran"). */
START_TEST(gang_filled_after_waking)
{
	struct gangs x;
	gangs_make(&x);
	for (unsigned i = 1; i <= GANGS; i++)
		x.g[i]->woken = 0;
	x.g[0]->nb_members = 0;
	unsigned first;
	struct ma_dlist *l = gangs_call(&x, ma_strategy_gang.decide_submit, x.g[0], &first);
	ck_assert_uint_eq(l->n, 1);
	expect(l, 0, MA_D_UNPLACE, x.g[0], -1);
	ck_assert_int_eq(l->beat, 1);
	l = gangs_beat(&x, 1001);
	ck_assert_uint_eq(l->n, 0);
	ck_assert_int_eq(l->beat, 1);
	x.g[0]->nb_members = 2;
	l = gangs_beat(&x, 1002);
	ck_assert_uint_eq(l->n, 1);
	expect(l, 0, MA_D_BURST, x.g[0], 0);
	ck_assert_int_eq(l->beat, 1);
	gangs_free(&x);
}
END_TEST

/* The current gang is no gang any more (joined and destroyed, or moved into another
 * bubble): forgotten, and the next runs. Its burst dropped by the executor (it changed
 * between the decision and its execution): burst again at the next beat. */
START_TEST(gang_current_lost)
{
	struct gangs x;
	gangs_make(&x);
	unsigned first;
	struct ma_dlist *l = gangs_call(&x, ma_strategy_gang.decide_submit, x.g[0], &first);
	expect(l, 1, MA_D_BURST, x.g[0], 0);
	/* Not carried out: still closed, placed nowhere. */
	x.g[0]->item = -1;
	l = gangs_beat(&x, 1001);
	ck_assert_uint_eq(l->n, 1);
	expect(l, 0, MA_D_BURST, x.g[0], 0);
	gangs_burst(&x, x.g[0]);
	/* Gone from the gangs: the next by id. */
	x.outer[0] = x.g[1];
	l = gangs_beat(&x, 1002);
	ck_assert_uint_eq(l->n, 1);
	expect(l, 0, MA_D_BURST, x.g[1], 0);
	ck_assert_int_eq(l->beat, 1);
	gangs_free(&x);
}
END_TEST

/* Bubbles of no gang: submitted where their parent is opened (the machine's queue for
 * the root's); their own slice regenerates them; without one, a tick does nothing. */
START_TEST(gang_plain_bubbles)
{
	struct gangs x;
	gangs_make(&x);
	unsigned first;
	x.inner->home = 9;
	struct ma_dlist *l = gangs_call(&x, ma_strategy_gang.decide_submit, x.inner, &first);
	ck_assert_uint_eq(l->n, 1);
	expect(l, 0, MA_D_PLACE, x.inner, 9);
	ck_assert_int_eq(l->beat, 0);
	x.inner->home = -1;
	l = gangs_call(&x, ma_strategy_gang.decide_submit, x.inner, &first);
	expect(l, 0, MA_D_PLACE, x.inner, 0);
	l = gangs_call(&x, ma_strategy_gang.decide_tick, x.inner, &first);
	ck_assert_uint_eq(l->n, 0);
	x.inner->timeslice_us = 500;
	l = gangs_call(&x, ma_strategy_gang.decide_tick, x.inner, &first);
	ck_assert_uint_eq(l->n, 1);
	expect(l, 0, MA_D_GATHER, x.inner, -1);
	/* A gang's own slice ticks as the heartbeat does. */
	x.g[0]->timeslice_us = 500;
	l = gangs_call(&x, ma_strategy_gang.decide_tick, x.g[0], &first);
	ck_assert_uint_eq(first, 0);
	expect(l, 0, MA_D_BURST, x.g[0], 0);
	ck_assert_int_eq(l->beat, 1);
	gangs_free(&x);
}
END_TEST

/* Taking over (marcel_bubble_sched_begin, or a switch after it): gangs burst by another
 * strategy are gathered, closed ones leave the queues, gangs never woken are left
 * alone, and the first closed one by id runs. */
START_TEST(gang_start)
{
	struct gangs x;
	gangs_make(&x);
	x.g[0]->status = MA_V_OPENED;
	x.g[0]->item = 0;
	x.g[1]->item = 3;
	x.g[2]->woken = 0;
	unsigned first;
	struct ma_dlist *l = gangs_call(&x, ma_strategy_gang.decide_start, x.root, &first);
	ck_assert_uint_eq(first, 0);
	ck_assert_uint_eq(l->n, 4);
	expect(l, 0, MA_D_GATHER, x.g[0], -1);
	expect(l, 1, MA_D_UNPLACE, x.g[1], -1);
	expect(l, 2, MA_D_UNPLACE, x.g[3], -1);
	expect(l, 3, MA_D_BURST, x.g[1], 0);
	ck_assert_int_eq(l->beat, 1);
	gangs_free(&x);
}
END_TEST

/* ---- steal ---- */

START_TEST(steal_table)
{
	const struct ma_strategy *s = &ma_strategy_steal;
	ck_assert_str_eq(s->name, "steal");
	ck_assert_ptr_nonnull(s->decide_submit);
	ck_assert_ptr_nonnull(s->decide_tick);
	ck_assert_ptr_nonnull(s->decide_vp_idle);
	ck_assert_ptr_nonnull(s->decide_pick);
	ck_assert_ptr_nonnull(s->decide_stray);
	ck_assert_ptr_null(s->decide_start);
	ck_assert_ptr_null(s->decide_shake);
	ck_assert_uint_gt(s->priv_size, 0);
	ck_assert_uint_eq(s->heartbeat_us, 1000);
	ck_assert_uint_eq(s->stray_every, 16);
	ck_assert_uint_eq(s->private_levels, 1);
	/* It weighs loads: views with the queues' counters. */
	ck_assert_uint_eq(s->view_detail, 0);
}
END_TEST

static const struct ma_decision *dec(const struct ma_dlist *l, unsigned i)
{
	ck_assert_uint_gt(l->n, i);
	return &l->d[i];
}

/* A woken bubble goes where it last burst, else under its waker at its sched level, else
 * on the machine; too many threads for that place wakes a VP elsewhere, once placed. */
START_TEST(steal_submit)
{
	const struct machine *m = &machines[_i];
	struct ma_vt t;
	ma_vt_load(&t, m->spec, m->smt);
	struct ma_vnode *b = ma_vt_bubble(&t, NULL, BUBBLE(2));
	ma_vt_thread(&t, b, 100);
	ma_vt_finish(&t, b);
	t.v.self_vp = (int)m->vps - 1;
	struct ma_vt_list x;
	struct ma_dlist *l = ma_vt_list(&x, 16);
	ma_strategy_steal.decide_submit(&t.v, NULL, l);
	ck_assert_uint_eq(l->n, 1);
	ck_assert(dec(l, 0)->kind == MA_D_PLACE && dec(l, 0)->entity == b->id && dec(l, 0)->item == 0);
	ck_assert_int_eq(l->beat, 1);
	/* Its sched level, seen from the waker: the NUMA node of the last VP. */
	b->sched_level = MA_LEVEL_NUMA;
	int numa = ma_vt_item(&t, MA_LEVEL_NUMA, m->numa - 1);
	l = ma_vt_list(&x, 16);
	ma_strategy_steal.decide_submit(&t.v, NULL, l);
	ck_assert_int_eq(dec(l, 0)->item, numa);
	/* Back from a regeneration: where it burst. */
	b->last_item = ma_vt_item(&t, MA_LEVEL_CORE, 3);
	l = ma_vt_list(&x, 16);
	ma_strategy_steal.decide_submit(&t.v, NULL, l);
	ck_assert_uint_eq(l->n, 1);
	ck_assert_int_eq(dec(l, 0)->item, b->last_item);
	/* That core's VPs busy with threads of their own: one more thread is too many. */
	for (unsigned k = 0; k < (m->smt ? 4u : 1u); k++) {
		unsigned vp = (m->smt ? 12 : 3) + k;
		ma_vt_queue(&t, ma_vt_vpq(&t, vp), 0, 1);
		ma_vt_vp_state(&t, vp, 1, 0);
	}
	ma_vt_finish(&t, b);
	l = ma_vt_list(&x, 16);
	ma_strategy_steal.decide_submit(&t.v, NULL, l);
	ck_assert_uint_eq(l->n, 2);
	ck_assert(dec(l, 1)->kind == MA_D_WAKE && dec(l, 1)->item == b->last_item &&
		  dec(l, 1)->flags == (MA_D_OUTSIDE | MA_D_THEN));
	ma_vt_free(&t);
}
END_TEST

/* What find_next is told about a bubble on queue q, asked again with the load `x`. */
static struct ma_decision steal_pick(struct ma_vt *t, const struct ma_vnode *b, int q, const struct ma_pick_load *x)
{
	struct ma_vt_pick p;
	struct ma_pick_view *pv = ma_vt_pick(t, &p, b, q, 0);
	struct ma_decision d = ma_strategy_steal.decide_pick(pv, NULL);
	if (!(d.flags & MA_D_LOAD))
		return d;
	ck_assert(d.entity == b->id);
	pv->has_load = 1;
	pv->load = *x;
	d = ma_strategy_steal.decide_pick(pv, NULL);
	ck_assert_uint_eq(d.flags & (MA_D_LOAD | MA_D_KIDS), 0);
	ck_assert(d.entity == b->id && d.item == q);
	return d;
}

/* A bubble met closed: served on a VP's own queue; burst when it holds only sub-bubbles,
 * or is alone there and fits (or fits nowhere of that size); otherwise served, and a VP
 * elsewhere woken when that subtree is overloaded. */
START_TEST(steal_pick_rules)
{
	const struct machine *m = &machines[_i];
	struct ma_vt t;
	ma_vt_load(&t, m->spec, m->smt);
	struct ma_vnode *b = ma_vt_bubble(&t, NULL, BUBBLE(2));
	ma_vt_finish(&t, b);
	struct ma_vt_pick p;
	struct ma_decision d = ma_strategy_steal.decide_pick(ma_vt_pick(&t, &p, b, ma_vt_vpq(&t, 0), 0), NULL);
	ck_assert(d.kind == MA_D_SERVE && d.flags == 0);
	int numa = ma_vt_item(&t, MA_LEVEL_NUMA, 0);
	unsigned vps = m->vps / m->numa;
	struct ma_pick_load x = { .nb_vps = vps, .queued = 1, .threads = 4, .direct = 1 };
	ck_assert_int_eq(steal_pick(&t, b, numa, &x).kind, MA_D_BURST);
	/* Too many beside what runs there: served closed, and a thief called. */
	x.running = vps;
	d = steal_pick(&t, b, numa, &x);
	ck_assert(d.kind == MA_D_SERVE && d.flags == MA_D_OUTSIDE);
	/* More threads than any subtree of that size holds: burst anyway. */
	x.threads = vps + 1;
	ck_assert_int_eq(steal_pick(&t, b, numa, &x).kind, MA_D_BURST);
	/* Not alone: served (stealable whole), no thief when it all fits. */
	x = (struct ma_pick_load){ .nb_vps = vps, .queued = 2, .threads = 2, .direct = 1 };
	d = steal_pick(&t, b, numa, &x);
	ck_assert(d.kind == MA_D_SERVE && d.flags == 0);
	x.queued = 1;
	x.sibling = 1;
	ck_assert_int_eq(steal_pick(&t, b, numa, &x).kind, MA_D_SERVE);
	/* Only sub-bubbles: burst; its lock busy: served. */
	x = (struct ma_pick_load){ .nb_vps = vps, .queued = 5 };
	ck_assert_int_eq(steal_pick(&t, b, numa, &x).kind, MA_D_BURST);
	x.busy = 1;
	ck_assert_int_eq(steal_pick(&t, b, numa, &x).kind, MA_D_SERVE);
	ma_vt_free(&t);
}
END_TEST

/* VP 0 idle, its neighbour's core loaded: on its queue a closed bubble of two threads and
 * three threads (their bubbles opened on VP 0's core, on the neighbour's, and none), and
 * the neighbour's VP busy. */
struct thieves {
	struct ma_vt t;
	int mine, S, Sq;
	struct ma_vnode *b, *homing, *loose, *bound;
	const struct ma_vnode *waiting[4];
	void *priv;
	struct ma_vt_list x;
};

static void thieves_make(struct thieves *th)
{
	struct ma_vt *t = &th->t;
	ma_vt_load(t, machines[0].spec, machines[0].smt);
	th->mine = ma_vt_item(t, MA_LEVEL_CORE, 0);
	th->S = th->Sq = ma_vt_item(t, MA_LEVEL_CORE, 1);
	th->b = ma_vt_bubble(t, NULL, BUBBLE(2));
	th->b->nb_threads = th->b->nb_cached = 2;
	th->homing = ma_vt_thread(t, NULL, 100);
	th->homing->home = th->mine;
	th->loose = ma_vt_thread(t, NULL, 101);
	th->bound = ma_vt_thread(t, NULL, 102);
	th->bound->home = th->S;
	struct ma_vnode *w[4] = { th->b, th->loose, th->bound, th->homing };
	for (int i = 0; i < 4; i++) {
		w[i]->queued_item = w[i]->item = th->Sq;
		th->waiting[i] = w[i];
	}
	ma_vt_queue(t, th->Sq, 4, 0);
	t->it[th->Sq].ready = 2 + 3;
	ma_vt_queue(t, ma_vt_vpq(t, 1), 0, 1);
	ma_vt_vp_state(t, 1, 1, 0);
	ma_vt_vp_state(t, 0, 0, 1);
	ma_vt_finish(t, NULL);
	t->v.self_vp = 0;
	t->v.waiting = th->waiting;
	t->v.nb_waiting = 4;
	t->v.now_ns = 1000 * MS;
	th->priv = calloc(1, ma_strategy_steal.priv_size);
	ck_assert_ptr_nonnull(th->priv);
}

static struct ma_dlist *thieves_idle(struct thieves *th)
{
	struct ma_dlist *l = ma_vt_list(&th->x, 64);
	ma_strategy_steal.decide_vp_idle(&th->t.v, th->priv, l);
	return l;
}

static struct ma_dlist *thieves_beat(struct thieves *th, uint64_t now_ms)
{
	th->t.v.now_ns = now_ms * MS;
	th->t.v.root = NULL;
	struct ma_dlist *l = ma_vt_list(&th->x, 64);
	ma_strategy_steal.decide_tick(&th->t.v, th->priv, l);
	return l;
}

static void expect_steal(const struct ma_decision *d, const struct ma_vnode *e, int to, int from, unsigned flags,
			 int guard_to)
{
	ck_assert_int_eq(d->kind, MA_D_STEAL);
	ck_assert(d->entity == e->id);
	ck_assert_int_eq(d->item, to);
	ck_assert_int_eq(d->from_item, from);
	ck_assert_uint_eq(d->flags, flags);
	ck_assert_int_eq(d->guard_from, from);
	if (flags & MA_D_GUARD)
		ck_assert_int_eq(d->guard_to, guard_to);
}

/* Whole bubbles first, at once; single threads only once their queue has waited a beat,
 * each with its guard: homing ones first (to where their bubble is opened, on the thief's
 * side), then loose ones, last those taken from beside their bubble (marked stray); one
 * chain of alternatives, each theft waking the next thief if work is left. */
START_TEST(steal_idle_order)
{
	struct thieves th;
	thieves_make(&th);
	struct ma_dlist *l = thieves_idle(&th);
	ck_assert_uint_eq(l->n, 1);
	expect_steal(dec(l, 0), th.b, th.mine, th.Sq, MA_D_OUTSIDE, 0);
	ck_assert_int_eq(l->beat, 1);
	/* The heartbeat: the first beat notes the queue starving (its VP busy, nobody idle
	 * there), the next wakes a thief for it. */
	l = thieves_beat(&th, 1000);
	ck_assert_uint_eq(l->n, 0);
	ck_assert_int_eq(l->beat, 1);
	l = thieves_beat(&th, 1001);
	ck_assert_uint_eq(l->n, 1);
	ck_assert(dec(l, 0)->kind == MA_D_WAKE && dec(l, 0)->item == th.Sq && dec(l, 0)->flags == MA_D_OUTSIDE);
	l = thieves_idle(&th);
	ck_assert_uint_eq(l->n, 4);
	expect_steal(dec(l, 0), th.b, th.mine, th.Sq, MA_D_OUTSIDE, 0);
	unsigned g = MA_D_GUARD | MA_D_OUTSIDE | MA_D_ELSE;
	expect_steal(dec(l, 1), th.homing, th.mine, th.Sq, g | MA_D_UNSTRAY, th.mine);
	expect_steal(dec(l, 2), th.loose, ma_vt_vpq(&th.t, 0), th.Sq, g, th.mine);
	expect_steal(dec(l, 3), th.bound, ma_vt_vpq(&th.t, 0), th.Sq, g | MA_D_STRAY, th.mine);
	free(th.priv);
	ma_vt_free(&th.t);
}
END_TEST

/* Nothing from a side no busier per VP than ours; a bubble too big to leave us below the
 * victim stays (its threads are still candidates, each weighed by its guard when it is
 * tried). */
START_TEST(steal_idle_restraint)
{
	struct thieves th;
	thieves_make(&th);
	thieves_beat(&th, 1000);
	thieves_beat(&th, 1002);
	/* Our side as busy: nothing. */
	ma_vt_queue(&th.t, ma_vt_vpq(&th.t, 0), 0, 6);
	ma_vt_finish(&th.t, NULL);
	th.t.v.root = NULL;
	struct ma_dlist *l = thieves_idle(&th);
	ck_assert_uint_eq(l->n, 0);
	/* A bubble of five beside three threads: taking it would leave us above the victim. */
	ma_vt_queue(&th.t, ma_vt_vpq(&th.t, 0), 0, 0);
	th.b->nb_threads = th.b->nb_cached = 5;
	th.t.it[th.Sq].ready = 5 + 3;
	ma_vt_finish(&th.t, NULL);
	th.t.v.root = NULL;
	l = thieves_idle(&th);
	ck_assert_uint_eq(l->n, 3);
	expect_steal(dec(l, 0), th.homing, th.mine, th.Sq, MA_D_GUARD | MA_D_OUTSIDE | MA_D_UNSTRAY, th.mine);
	ck_assert(dec(l, 1)->entity == th.loose->id && dec(l, 2)->entity == th.bound->id);
	free(th.priv);
	ma_vt_free(&th.t);
}
END_TEST

/* A stray at a yield: on its side again, or no longer on a queue, it only loses its mark;
 * its bubble's side with room: it goes home; without: it stays. */
START_TEST(steal_stray_home)
{
	struct ma_vt t;
	ma_vt_load(&t, machines[0].spec, machines[0].smt);
	int home = ma_vt_item(&t, MA_LEVEL_CORE, 1), here = ma_vt_vpq(&t, 0);
	struct ma_vnode *s = ma_vt_thread(&t, NULL, 100);
	s->state = MA_V_RUNNING;
	s->item = here;
	s->home = home;
	ma_vt_queue(&t, here, 0, 1);
	ma_vt_queue(&t, ma_vt_vpq(&t, 1), 0, 1);
	ma_vt_finish(&t, s);
	t.v.self_vp = 0;
	struct ma_vt_list x;
	struct ma_dlist *l = ma_vt_list(&x, 8);
	/* Its home's core holds one thread on one VP: full. */
	ma_strategy_steal.decide_stray(&t.v, NULL, l);
	ck_assert_uint_eq(l->n, 0);
	/* Empty: home. */
	ma_vt_queue(&t, ma_vt_vpq(&t, 1), 0, 0);
	ma_vt_finish(&t, s);
	t.v.self_vp = 0;
	ma_strategy_steal.decide_stray(&t.v, NULL, l);
	ck_assert_uint_eq(l->n, 1);
	ck_assert(dec(l, 0)->kind == MA_D_MOVE && dec(l, 0)->item == home && dec(l, 0)->flags == MA_D_UNSTRAY);
	/* Its bubble opened on our side: the mark goes, it stays. */
	s->home = ma_vt_item(&t, MA_LEVEL_CORE, 0);
	l = ma_vt_list(&x, 8);
	ma_strategy_steal.decide_stray(&t.v, NULL, l);
	ck_assert(dec(l, 0)->kind == MA_D_MOVE && dec(l, 0)->item == here && dec(l, 0)->flags == MA_D_UNSTRAY);
	/* Gathered into its bubble: no queue, only the mark goes. */
	s->home = home;
	s->item = -1;
	l = ma_vt_list(&x, 8);
	ma_strategy_steal.decide_stray(&t.v, NULL, l);
	ck_assert(dec(l, 0)->kind == MA_D_MOVE && dec(l, 0)->item == -1 && dec(l, 0)->flags == MA_D_UNSTRAY);
	ma_vt_free(&t);
}
END_TEST

/* A bubble's own period: gathered; the heartbeat with nobody busy stops. */
START_TEST(steal_tick)
{
	struct ma_vt t;
	ma_vt_load(&t, machines[0].spec, machines[0].smt);
	struct ma_vnode *b = ma_vt_bubble(&t, NULL, BUBBLE(2));
	b->status = MA_V_OPENED;
	ma_vt_finish(&t, b);
	void *priv = calloc(1, ma_strategy_steal.priv_size);
	ck_assert_ptr_nonnull(priv);
	struct ma_vt_list x;
	struct ma_dlist *l = ma_vt_list(&x, 8);
	ma_strategy_steal.decide_tick(&t.v, priv, l);
	ck_assert_uint_eq(l->n, 1);
	ck_assert(dec(l, 0)->kind == MA_D_GATHER && dec(l, 0)->entity == b->id);
	t.v.root = NULL;
	l = ma_vt_list(&x, 8);
	ma_strategy_steal.decide_tick(&t.v, priv, l);
	ck_assert_uint_eq(l->n, 0);
	ck_assert_int_eq(l->beat, 0);
	free(priv);
	ma_vt_free(&t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("strategies");
	TCase *h = tcase_create("harness");
	tcase_add_loop_test(h, harness_machines, 0, NB_MACHINES);
	tcase_add_test(h, harness_tree);
	suite_add_tcase(s, h);
	TCase *n = tcase_create("null");
	tcase_add_test(n, null_table);
	tcase_add_loop_test(n, null_submit_woken, 0, NB_MACHINES);
	tcase_add_loop_test(n, null_submit_placed, 0, NB_MACHINES);
	tcase_add_loop_test(n, null_submit_wide, 0, NB_MACHINES);
	tcase_add_test(n, null_submit_full);
	suite_add_tcase(s, n);
	TCase *bu = tcase_create("burst");
	tcase_add_test(bu, burst_table);
	tcase_add_loop_test(bu, burst_serves_on_vp_queue, 0, NB_MACHINES);
	tcase_add_loop_test(bu, burst_level_from_threads, 0, NB_MACHINES);
	tcase_add_loop_test(bu, burst_counted_bubble, 0, NB_MACHINES);
	tcase_add_loop_test(bu, burst_sched_level, 0, NB_MACHINES);
	tcase_add_loop_test(bu, burst_lightest_child, 0, NB_MACHINES);
	suite_add_tcase(s, bu);
	TCase *sp = tcase_create("spread");
	tcase_add_test(sp, spread_tables);
	tcase_add_loop_test(sp, spread_submit_simple, 0, NB_MACHINES);
	tcase_add_loop_test(sp, spread_submit_spreads, 0, NB_MACHINES);
	tcase_add_loop_test(sp, spread_submit_placed, 0, NB_MACHINES);
	tcase_add_loop_test(sp, spread_submit_kept, 0, NB_MACHINES);
	tcase_add_loop_test(sp, memory_submit, 0, NB_MACHINES);
	tcase_add_loop_test(sp, spread_start, 0, NB_MACHINES);
	tcase_add_loop_test(sp, spread_stale_start, 0, NB_MACHINES);
	suite_add_tcase(s, sp);
	TCase *ca = tcase_create("cache");
	tcase_add_test(ca, cache_table);
	tcase_add_loop_test(ca, cache_back_to_its_vp, 0, NB_MACHINES);
	tcase_add_loop_test(ca, cache_burst_to_last_vps, 0, NB_MACHINES);
	tcase_add_loop_test(ca, cache_widens_when_full, 0, NB_MACHINES);
	tcase_add_loop_test(ca, cache_never_ran, 0, NB_MACHINES);
	tcase_add_loop_test(ca, cache_start, 0, NB_MACHINES);
	tcase_add_test(ca, cache_deep);
	suite_add_tcase(s, ca);
	TCase *ga = tcase_create("gang");
	tcase_add_test(ga, gang_table);
	tcase_add_test(ga, gang_turns);
	tcase_add_test(ga, gang_slices);
	tcase_add_test(ga, gang_filled_after_waking);
	tcase_add_test(ga, gang_current_lost);
	tcase_add_test(ga, gang_plain_bubbles);
	tcase_add_test(ga, gang_start);
	suite_add_tcase(s, ga);
	TCase *st = tcase_create("steal");
	tcase_add_test(st, steal_table);
	tcase_add_loop_test(st, steal_submit, 0, NB_MACHINES);
	tcase_add_loop_test(st, steal_pick_rules, 0, NB_MACHINES);
	tcase_add_test(st, steal_idle_order);
	tcase_add_test(st, steal_idle_restraint);
	tcase_add_test(st, steal_stray_home);
	tcase_add_test(st, steal_tick);
	suite_add_tcase(s, st);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
