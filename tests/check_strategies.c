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
	ck_assert_ptr_null(s->priv_init);
	ck_assert_ptr_null(s->priv_exit);
	/* No old hook is left. */
	ck_assert_ptr_null(s->init);
	ck_assert_ptr_null(s->exit);
	ck_assert_ptr_null(s->start);
	ck_assert_ptr_null(s->submit);
	ck_assert_ptr_null(s->shake);
	ck_assert_ptr_null(s->vp_is_idle);
	ck_assert_ptr_null(s->stray);
	ck_assert_ptr_null(s->tick);
	ck_assert_ptr_null(s->sched);
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
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
