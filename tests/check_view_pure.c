/*
 * bubbles/ma_view.h alone: what a strategy compiled outside the runtime sees. This file is
 * built with the include paths of bubbles/ and topology/ only (tests/Makefile.am), and
 * linked with the topology library only, so a runtime header reached from ma_view.h
 * breaks its build. Views are filled by hand over synthetic topologies, as a strategy's
 * unit test or the simulator will.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ma_view.h"

#if defined(MA_SCHED_H) || defined(MA_BUBBLE_H) || defined(MARCEL_H)
#error "ma_view.h must not include the runtime"
#endif

static struct ma_topo topo;

static void load(const char *spec)
{
	char err[256];
	struct ma_topo_options opt = { .spec = spec, .maxarity = 8 };
	int ret = ma_topo_load(&topo, &opt, err, sizeof(err));
	ck_assert_msg(ret == 0, "loading \"%s\" failed: %s (%s)", spec, strerror(ret), err);
}

/* A view of topo's queues with nothing queued or running, the way a test of a strategy
 * starts one. */
struct hand {
	struct ma_view v;
	struct ma_vitem *it;
};

static void hand_make(struct hand *h)
{
	unsigned nl = topo.nb_levels, nv = topo.nb_vps;
	h->it = calloc(nl + nv, sizeof(*h->it));
	ck_assert_ptr_nonnull(h->it);
	for (unsigned q = 0; q < nl; q++) {
		const struct ma_level *l = &topo.levels[q];
		h->it[q] = (struct ma_vitem){ .vp = -1, .parent = l->parent ? (int)l->parent->id : -1,
					      .depth = l->depth, .first_vp = l->first_vp, .nb_vps = l->nb_vps };
	}
	for (unsigned v = 0; v < nv; v++)
		h->it[nl + v] = (struct ma_vitem){ .vp = (int)v, .parent = (int)topo.vps[v].leaf->id,
						   .depth = topo.vps[v].leaf->depth + 1, .first_vp = v, .nb_vps = 1 };
	h->v = (struct ma_view){ .topo = &topo, .nb_items = nl, .nb_vps = nv, .items = h->it, .vps = h->it + nl,
				 .self_vp = -1 };
}

static void hand_free(struct hand *h)
{
	free(h->it);
	ma_topo_free(&topo);
}

/* Queue numbers, paths and nesting, against the topology's own tree. */
START_TEST(queues_and_paths)
{
	load("pack:2 numa:2 core:4 pu:2");
	struct hand h;
	hand_make(&h);
	const struct ma_view *v = &h.v;
	ck_assert_uint_eq(v->nb_vps, 16);
	for (unsigned vp = 0; vp < v->nb_vps; vp++) {
		int q = ma_view_vp_queue(v, vp);
		ck_assert_int_eq(q, (int)(v->nb_items + vp));
		ck_assert_ptr_eq(&v->items[q], &v->vps[vp]);
		for (unsigned l = 0; l < v->nb_items; l++) {
			/* VP vp looks at item l iff its PU lies in l's range. */
			const struct ma_level *lv = &topo.levels[l];
			unsigned pu = topo.vps[vp].pu;
			int in = pu >= lv->first_pu && pu < lv->first_pu + lv->nb_pus;
			ck_assert_int_eq(ma_view_sees(v, (int)l, vp), in);
			ck_assert_int_eq(ma_view_within(v, q, (int)l), in);
		}
		/* A VP looks at its own queue only among the VPs' queues. */
		for (unsigned o = 0; o < v->nb_vps; o++)
			ck_assert_int_eq(ma_view_sees(v, q, o), o == vp);
	}
	ck_assert(ma_view_within(v, 0, 0));
	ck_assert(!ma_view_sees(v, 0, v->nb_vps));
	hand_free(&h);
}
END_TEST

/* The three measures strategies balance by, on counters filled by hand. */
START_TEST(measures)
{
	struct ma_vitem q = { .queued = 2, .incoming = 1, .ready = 5, .running = 3, .busy = 1,
			      .sub_queued = 10, .sub_ready = 14, .sub_running = 6, .sub_busy = 4 };
	ck_assert_uint_eq(ma_vitem_load(&q), 16);
	ck_assert_uint_eq(ma_vitem_load_exact(&q), 20);
	ck_assert_uint_eq(ma_vitem_work(&q), 14);
}
END_TEST

/* A decision list never grows past its storage: what does not fit is refused and
 * counted, and nothing beyond the storage is written. */
START_TEST(dlist_overflow)
{
	struct ma_decision storage[4];
	memset(storage, 0xa5, sizeof(storage));
	struct ma_dlist l;
	ma_dlist_init(&l, storage, 3);
	for (unsigned i = 0; i < 5; i++) {
		struct ma_decision d = { .kind = MA_D_PLACE, .entity = i, .item = (int)i };
		ck_assert_int_eq(ma_dlist_push(&l, &d), i < 3 ? 0 : ENOSPC);
	}
	ck_assert_uint_eq(l.n, 3);
	ck_assert_uint_eq(l.lost, 2);
	for (unsigned i = 0; i < 3; i++) {
		ck_assert_int_eq(l.d[i].kind, MA_D_PLACE);
		ck_assert_uint_eq(l.d[i].entity, i);
		ck_assert_int_eq(l.d[i].item, (int)i);
	}
	unsigned char canary[sizeof(storage[3])];
	memset(canary, 0xa5, sizeof(canary));
	ck_assert_int_eq(memcmp(&storage[3], canary, sizeof(canary)), 0);
	/* No storage: everything is refused. */
	ma_dlist_init(&l, NULL, 8);
	struct ma_decision d = { .kind = MA_D_WAKE, .item = 0 };
	ck_assert_int_eq(ma_dlist_push(&l, &d), ENOSPC);
	ck_assert_uint_eq(l.cap, 0);
	ck_assert_uint_eq(l.lost, 1);
}
END_TEST

/* A decision written against the view alone: the least loaded child of an item per VP
 * (what burst and cache ask), read from nodes and items filled by hand. */
static int lightest_child(const struct ma_view *v, int item)
{
	int best = -1;
	for (unsigned q = 0; q < v->nb_items + v->nb_vps; q++) {
		const struct ma_vitem *x = &v->items[q];
		if (x->parent != item || x->vp >= 0 || !x->nb_vps)
			continue;
		if (best < 0 || ma_vitem_load(x) * v->items[best].nb_vps < ma_vitem_load(&v->items[best]) * x->nb_vps)
			best = (int)q;
	}
	return best;
}

START_TEST(decide_on_a_hand_made_view)
{
	load("pack:2 core:2");
	struct hand h;
	hand_make(&h);
	/* Package 0 runs three threads on its two VPs, package 1 one. */
	int p0 = -1, p1 = -1;
	for (unsigned q = 0; q < h.v.nb_items; q++)
		if (h.it[q].parent == 0)
			*(p0 < 0 ? &p0 : &p1) = (int)q;
	ck_assert_int_ge(p1, 0);
	h.it[p0].sub_running = 3;
	h.it[p1].sub_running = 1;
	struct ma_vnode b = { .id = 42, .is_bubble = 1, .status = MA_V_CLOSED, .item = 0, .fixed_item = -1,
			      .load = 2, .load_hint = -1, .nb_threads = 2 };
	h.v.root = &b;
	struct ma_decision storage[2];
	struct ma_dlist l;
	ma_dlist_init(&l, storage, 2);
	struct ma_decision d = { .kind = MA_D_PLACE, .entity = h.v.root->id, .item = lightest_child(&h.v, 0) };
	ck_assert_int_eq(ma_dlist_push(&l, &d), 0);
	ck_assert_int_eq(l.d[0].item, p1);
	ck_assert(l.d[0].entity == 42);
	hand_free(&h);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("view_pure");
	TCase *tc = tcase_create("view_pure");
	tcase_add_test(tc, queues_and_paths);
	tcase_add_test(tc, measures);
	tcase_add_test(tc, dlist_overflow);
	tcase_add_test(tc, decide_on_a_hand_made_view);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
