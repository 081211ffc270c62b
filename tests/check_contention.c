/*
 * The contention strategy (strategies/contention.c) and the load metrics it reads
 * (marcel/metrics.c).
 *
 * Decisions: views made by hand (ma_view_test.h) over SMT machines, `core:2 pu:2` and
 * `pack:2 core:2 pu:2` with a VP per PU, with metrics injected into the thread nodes; the
 * hooks' decisions are checked (who is paired with whom, idle cores first, the 25%
 * threshold on both sides, no ping-pong over repeated heartbeats, spread's decisions
 * without metrics).
 *
 * The runtime (white-box, linked statically as check_view: the view builder is internal):
 * hints given with marcel_task_stats_set reach the views; MARCEL_METRICS=perf fails into
 * the hints where the kernel gives no counter (this machine); a program with a bubble run
 * under contention on MARCEL_TOPOLOGY="core:2 pu:2" places its threads as the hints ask.
 */
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <time.h>
#include "ma_test.h"
#include "ma_view_test.h"
#include "ma_view_build.h"
#include "ma_strategies.h"
#include "ma_spread.h"
#include "ma_metrics.h"

#define BUBBLE(n) ((UINT64_C(1) << 63) | (n))
#define BEAT_NS (ma_strategy_contention.heartbeat_us * 1000ull)

/* The calibration's references (strategies/contention.c): one thread alone at a
 * resource's limit. */
#define FP_REF 250.0
#define MISS_REF 20.0

/* ---- the decision harness ---- */

/* Gives thread n metric m at `rate`. */
static void set_metric(struct ma_vnode *n, unsigned m, double rate)
{
	n->metrics |= (unsigned char)(1u << m);
	n->metric[m] = (float)rate;
}

/* A root bubble opened on the machine and a closed woken bubble B below it holding
 * `n` threads (ids 100, 101, ...); FP rates from fp[] (< 0: no metric). */
struct tree {
	struct ma_vt t;
	struct ma_vnode *root, *b, *th[16];
	unsigned n;
	void *priv;
};

static void tree_make(struct tree *x, const char *spec, unsigned n, const double *fp)
{
	memset(x, 0, sizeof(*x));
	ma_vt_load(&x->t, spec, 1);
	x->root = ma_vt_bubble(&x->t, NULL, BUBBLE(1));
	x->root->status = MA_V_OPENED;
	x->root->item = 0;
	x->b = ma_vt_bubble(&x->t, x->root, BUBBLE(2));
	x->n = n;
	for (unsigned i = 0; i < n; i++) {
		x->th[i] = ma_vt_thread(&x->t, x->b, 100 + i);
		if (fp && fp[i] >= 0)
			set_metric(x->th[i], MA_VM_FP, fp[i]);
	}
	x->priv = calloc(1, ma_strategy_contention.priv_size);
	ck_assert_ptr_nonnull(x->priv);
	ma_vt_finish(&x->t, x->root);
	x->t.v.begun = 1;
}

static void tree_free(struct tree *x)
{
	ma_strategy_contention.priv_exit(x->priv);
	free(x->priv);
	ma_vt_free(&x->t);
}

static struct ma_dlist *ct_start(struct tree *x, struct ma_vt_list *l)
{
	struct ma_dlist *out = ma_vt_list(l, 4096);
	x->t.v.root = x->root;
	x->t.v.round = 1;
	ma_strategy_contention.decide_start(&x->t.v, x->priv, out);
	return out;
}

/* The VP a list moves thread `id` to, -1 if it does not move it. */
static int moved_to(const struct tree *x, const struct ma_dlist *l, uint64_t id)
{
	int vp = -1;
	for (unsigned i = 0; i < l->n; i++)
		if (l->d[i].kind == MA_D_MOVE && l->d[i].entity == id) {
			ck_assert_int_ge(l->d[i].item, (int)x->t.v.nb_items);
			vp = l->d[i].item - (int)x->t.v.nb_items;
		}
	return vp;
}

/* The core item VP vp belongs to. */
static int core_of(const struct tree *x, int vp)
{
	return ma_topo_path_item(&x->t.topo, (unsigned)vp, MA_LEVEL_CORE);
}

/* Carries the MOVEs of list l out on the view: each moved thread's queue. */
static void apply(struct tree *x, const struct ma_dlist *l)
{
	for (unsigned i = 0; i < l->n; i++) {
		if (l->d[i].kind != MA_D_MOVE)
			continue;
		for (unsigned k = 0; k < x->n; k++)
			if (x->th[k]->id == l->d[i].entity)
				x->th[k]->item = l->d[i].item;
	}
}

/* ---- the table ---- */

START_TEST(table)
{
	const struct ma_strategy *s = &ma_strategy_contention;
	ck_assert_str_eq(s->name, "contention");
	ck_assert_ptr_nonnull(s->description);
	ck_assert_ptr_nonnull(s->decide_start);
	ck_assert_ptr_nonnull(s->decide_submit);
	ck_assert_ptr_nonnull(s->decide_tick);
	ck_assert_ptr_nonnull(s->priv_exit);
	ck_assert_ptr_null(s->decide_pick);
	ck_assert_ptr_null(s->decide_vp_idle);
	/* It reads the threads' metrics, and the whole tree at its heartbeat. */
	ck_assert_uint_eq(s->view_detail & (MA_VIEW_METRICS | MA_VIEW_TREE), MA_VIEW_METRICS | MA_VIEW_TREE);
	ck_assert_uint_gt(s->heartbeat_us, 0);
	ck_assert_uint_ge(s->priv_size, sizeof(struct ma_spread_priv));
}
END_TEST

/* ---- pairing ---- */

/* core:2 pu:2, four threads, two FP-heavy: whatever their order, each core gets one of
 * the two FP threads and one of the others (the seed's (INT,FP)(INT,FP)), on four VPs. */
START_TEST(pairs_int_fp)
{
	static const double orders[][4] = {
		{ 0, 300, 0, 300 }, { 0, 0, 300, 300 }, { 300, 300, 0, 0 }, { 300, 0, 300, 0 },
	};
	const double *fp = orders[_i];
	struct tree x;
	struct ma_vt_list l;
	tree_make(&x, "core:2 pu:2", 4, fp);
	ck_assert_uint_eq(x.t.v.nb_vps, 4);
	struct ma_dlist *out = ct_start(&x, &l);
	ck_assert_uint_eq(out->lost, 0);
	/* B bursts first, where its parent is. */
	ck_assert(out->d[0].kind == MA_D_BURST && out->d[0].entity == x.b->id && out->d[0].item == 0);
	int vp[4], seen[4] = { 0 };
	for (unsigned i = 0; i < 4; i++) {
		vp[i] = moved_to(&x, out, x.th[i]->id);
		ck_assert_int_ge(vp[i], 0);
		ck_assert_int_eq(seen[vp[i]]++, 0);
	}
	int fp_core[2], k = 0;
	for (unsigned i = 0; i < 4; i++)
		if (fp[i] > 0)
			fp_core[k++] = core_of(&x, vp[i]);
	ck_assert_int_ne(fp_core[0], fp_core[1]);
	/* The heartbeat goes on: metrics to watch. */
	ck_assert_int_eq(out->beat, 1);
	tree_free(&x);
}
END_TEST

/* pack:2 core:2 pu:2 (four cores of two VPs), eight threads of graded FP use: the
 * heaviest goes with the lightest, the second with the seventh..., so that every core
 * carries the same FP load. */
START_TEST(pairs_heaviest_with_lightest)
{
	static const double fp[8] = { 150, 400, 50, 300, 250, 100, 350, 200 };
	struct tree x;
	struct ma_vt_list l;
	tree_make(&x, "pack:2 core:2 pu:2", 8, fp);
	ck_assert_uint_eq(x.t.v.nb_vps, 8);
	struct ma_dlist *out = ct_start(&x, &l);
	double load[64] = { 0 };
	int partner_of_400 = -1, core400 = -1;
	for (unsigned i = 0; i < 8; i++) {
		int vp = moved_to(&x, out, x.th[i]->id);
		ck_assert_int_ge(vp, 0);
		load[core_of(&x, vp)] += fp[i];
		if (fp[i] == 400)
			core400 = core_of(&x, vp);
	}
	for (unsigned i = 0; i < 8; i++)
		if (fp[i] != 400 && core_of(&x, moved_to(&x, out, x.th[i]->id)) == core400)
			partner_of_400 = (int)fp[i];
	ck_assert_int_eq(partner_of_400, 50);
	unsigned cores = 0;
	for (unsigned q = 0; q < 64; q++)
		if (load[q] > 0) {
			cores++;
			ck_assert_msg(fabs(load[q] - 450) < 1e-6, "core %u carries %g FP, not 450", q, load[q]);
		}
	ck_assert_uint_eq(cores, 4);
	tree_free(&x);
}
END_TEST

/* Several metrics, in the calibrated priority: two cache-miss-heavy threads, two FP-heavy
 * ones and four without metrics on four cores: no core gets two threads heavy on the same
 * resource. */
START_TEST(pairs_per_metric)
{
	struct tree x;
	struct ma_vt_list l;
	tree_make(&x, "pack:2 core:2 pu:2", 8, NULL);
	set_metric(x.th[1], MA_VM_MISS, 25);
	set_metric(x.th[2], MA_VM_MISS, 25);
	set_metric(x.th[5], MA_VM_FP, 300);
	set_metric(x.th[6], MA_VM_FP, 300);
	struct ma_dlist *out = ct_start(&x, &l);
	int miss[64] = { 0 }, fpc[64] = { 0 }, all[64] = { 0 };
	for (unsigned i = 0; i < 8; i++) {
		int c = core_of(&x, moved_to(&x, out, x.th[i]->id));
		all[c]++;
		miss[c] += i == 1 || i == 2;
		fpc[c] += i == 5 || i == 6;
	}
	for (unsigned c = 0; c < 64; c++) {
		ck_assert_int_le(miss[c], 1);
		ck_assert_int_le(fpc[c], 1);
		ck_assert_int_le(all[c], 2);
	}
	tree_free(&x);
}
END_TEST

/* Whole idle cores before idle siblings: two threads on core:2 pu:2, three on pack:2
 * core:2 pu:2, each on a core of its own, whatever their metrics. */
START_TEST(idle_cores_first)
{
	struct tree x;
	struct ma_vt_list l;
	static const double two[2] = { 300, 0 };
	tree_make(&x, "core:2 pu:2", 2, two);
	struct ma_dlist *out = ct_start(&x, &l);
	ck_assert_int_ne(core_of(&x, moved_to(&x, out, 100)), core_of(&x, moved_to(&x, out, 101)));
	tree_free(&x);
	static const double three[3] = { 300, 300, 300 };
	tree_make(&x, "pack:2 core:2 pu:2", 3, three);
	out = ct_start(&x, &l);
	int c0 = core_of(&x, moved_to(&x, out, 100)), c1 = core_of(&x, moved_to(&x, out, 101)),
	    c2 = core_of(&x, moved_to(&x, out, 102));
	ck_assert(c0 != c1 && c1 != c2 && c0 != c2);
	tree_free(&x);
}
END_TEST

/* A submit below the machine, with VP 0 busy (a thread of another bubble runs there): its
 * single thread goes to the other core, not to VP 1 beside the busy one; with both cores
 * half busy, an FP thread goes beside the thread that uses no FP... as far as the view
 * tells: a submit sees the counters, not the others' metrics, so it only counts them. */
START_TEST(submit_idle_core)
{
	struct tree x;
	struct ma_vt_list l;
	static const double one[1] = { 300 };
	tree_make(&x, "core:2 pu:2", 1, one);
	x.b->home = 0;
	ma_vt_queue(&x.t, ma_vt_vpq(&x.t, 0), 0, 1);
	ma_vt_vp_state(&x.t, 0, 1, 0);
	ma_vt_finish(&x.t, x.root);
	x.t.v.root = x.b;
	struct ma_dlist *out = ma_vt_list(&l, 64);
	ma_strategy_contention.decide_submit(&x.t.v, x.priv, out);
	ck_assert(out->d[0].kind == MA_D_BURST && out->d[0].entity == x.b->id && out->d[0].item == 0);
	int vp = moved_to(&x, out, 100);
	ck_assert_int_ge(vp, 0);
	ck_assert_int_ne(core_of(&x, vp), core_of(&x, 0));
	ck_assert_int_eq(out->beat, 1);
	/* Before marcel_bubble_sched_begin: where its parent is, closed (as spread). */
	x.t.v.begun = 0;
	out = ma_vt_list(&l, 64);
	ma_strategy_contention.decide_submit(&x.t.v, x.priv, out);
	ck_assert_uint_eq(out->n, 1);
	ck_assert(out->d[0].kind == MA_D_PLACE && out->d[0].item == 0);
	tree_free(&x);
}
END_TEST

/* ---- without metrics: spread ---- */

/* Two lists say the same. */
static void same_list(const struct ma_dlist *a, const struct ma_dlist *b)
{
	ck_assert_uint_eq(a->n, b->n);
	ck_assert_uint_eq(a->again, b->again);
	for (unsigned i = 0; i < a->n; i++) {
		ck_assert_int_eq(a->d[i].kind, b->d[i].kind);
		ck_assert(a->d[i].entity == b->d[i].entity);
		ck_assert_int_eq(a->d[i].item, b->d[i].item);
		ck_assert_uint_eq(a->d[i].flags, b->d[i].flags);
	}
}

/* No thread with a metric: start and submit decide exactly as spread's hooks; on a
 * machine without SMT siblings, metrics or not, too (nothing to pair). */
START_TEST(spread_without_metrics)
{
	static const char *const specs[] = { "core:2 pu:2", "pack:2 core:2 pu:2", "pack:2 core:4" };
	static const double fp[6] = { 300, 0, 300, 0, 300, 0 };
	for (unsigned s = 0; s < 3; s++)
		for (int with = 0; with < 2; with++) {
			if (with && s < 2)
				continue;
			struct tree x;
			struct ma_vt_list l1, l2;
			tree_make(&x, specs[s], 6, with ? fp : NULL);
			struct ma_spread_priv sp = { 0 };
			struct ma_dlist *a = ct_start(&x, &l1);
			struct ma_dlist *b = ma_vt_list(&l2, 4096);
			ma_spread_decide_start(&x.t.v, &sp, b, 0);
			same_list(a, b);
			/* Plus its heartbeat, which watches for metrics to come. */
			ck_assert_int_eq(a->beat, 1);
			/* A submit: with and without the placed figures. */
			x.b->home = 0;
			ma_vt_finish(&x.t, x.root);
			x.t.v.root = x.b;
			double *placed = calloc(x.t.v.nb_items, sizeof(double));
			ck_assert_ptr_nonnull(placed);
			for (int fig = 0; fig < 2; fig++) {
				x.t.v.placed = fig ? placed : NULL;
				x.t.v.placed_visits = 1;
				x.t.v.flags = fig ? MA_VIEW_HAS_PLACED : 0;
				a = ma_vt_list(&l1, 4096);
				ma_strategy_contention.decide_submit(&x.t.v, x.priv, a);
				b = ma_vt_list(&l2, 4096);
				ma_spread_decide_submit(&x.t.v, &sp, b, 0);
				same_list(a, b);
				ck_assert_uint_eq(a->again, fig ? 0 : MA_VIEW_PLACED);
			}
			free(placed);
			ma_spread_priv_exit(&sp);
			tree_free(&x);
		}
}
END_TEST

/* ---- rebalancing at the heartbeat ---- */

/* The heartbeat's view: the whole tree, every thread running on the VP queue vp[i]. */
static void on_vps(struct tree *x, const int *vp)
{
	for (unsigned i = 0; i < x->n; i++) {
		x->th[i]->item = ma_vt_vpq(&x->t, (unsigned)vp[i]);
		x->th[i]->state = MA_V_RUNNING;
		x->th[i]->nb_ready = 0;
		x->th[i]->nb_running = 1;
	}
	/* B burst on the machine. */
	x->b->status = MA_V_OPENED;
	x->b->item = 0;
	ma_vt_finish(&x->t, x->root);
}

static struct ma_dlist *ct_tick(struct tree *x, struct ma_vt_list *l, uint64_t now)
{
	struct ma_dlist *out = ma_vt_list(l, 4096);
	x->t.v.root = x->root;
	x->t.v.now_ns = now;
	ma_strategy_contention.decide_tick(&x->t.v, x->priv, out);
	return out;
}

/* The FP load of the core holding VP vp, from the nodes' places. */
static double core_fp(const struct tree *x, int core)
{
	double s = 0;
	for (unsigned i = 0; i < x->n; i++)
		if (core_of(x, x->th[i]->item - (int)x->t.v.nb_items) == core && (x->th[i]->metrics & (1u << MA_VM_FP)))
			s += x->th[i]->metric[MA_VM_FP] / FP_REF;
	return s;
}

/* The seed's bad placement (INT,INT)(FP,FP): one swap makes it (INT,FP)(INT,FP), and the
 * next beats change nothing. */
START_TEST(swap_bad_pairing)
{
	static const double fp[4] = { 0, 0, 300, 300 };
	static const int vp[4] = { 0, 1, 2, 3 };
	struct tree x;
	struct ma_vt_list l;
	tree_make(&x, "core:2 pu:2", 4, fp);
	on_vps(&x, vp);
	struct ma_dlist *out = ct_tick(&x, &l, 1000000000ull);
	ck_assert_uint_eq(out->n, 2);
	ck_assert(out->d[0].kind == MA_D_MOVE && out->d[1].kind == MA_D_MOVE);
	ck_assert_int_eq(out->beat, 1);
	apply(&x, out);
	int c0 = core_of(&x, 0), c1 = core_of(&x, 2);
	ck_assert(fabs(core_fp(&x, c0) - 1.2) < 1e-6 && fabs(core_fp(&x, c1) - 1.2) < 1e-6);
	for (unsigned k = 1; k <= 30; k++) {
		out = ct_tick(&x, &l, 1000000000ull + k * BEAT_NS);
		ck_assert_uint_eq(out->n, 0);
	}
	tree_free(&x);
}
END_TEST

/* MASA's 25% on both sides: core 0 holds FP loads a and 0.8 (normalised), core 1 two of
 * 0.5. At a = 0.8 the imbalance (max - min) / (max + min) is 0.6 / 2.6 = 23%: nothing,
 * although a swap would even them; at a = 1.0 it is 0.8 / 2.8 = 29%: a swap. */
START_TEST(threshold_both_sides)
{
	for (int above = 0; above < 2; above++) {
		double a = above ? 1.0 : 0.8;
		double fp[4] = { a * FP_REF, 0.8 * FP_REF, 0.5 * FP_REF, 0.5 * FP_REF };
		static const int vp[4] = { 0, 1, 2, 3 };
		struct tree x;
		struct ma_vt_list l;
		tree_make(&x, "core:2 pu:2", 4, fp);
		on_vps(&x, vp);
		double before = fabs(core_fp(&x, core_of(&x, 0)) - core_fp(&x, core_of(&x, 2)));
		struct ma_dlist *out = ct_tick(&x, &l, 1000000000ull);
		ck_assert_uint_eq(out->n, above ? 2 : 0);
		apply(&x, out);
		double after = fabs(core_fp(&x, core_of(&x, 0)) - core_fp(&x, core_of(&x, 2)));
		if (above)
			ck_assert_msg(after < before - 0.1, "the swap left a gap of %g (was %g)", after, before);
		tree_free(&x);
	}
	/* Below the resource's limit (no core above one thread's worth): no interference, no
	 * swap, however uneven. */
	static const double low[4] = { 0.5 * FP_REF, 0.4 * FP_REF, 0, 0 };
	static const int vp[4] = { 0, 1, 2, 3 };
	struct tree x;
	struct ma_vt_list l;
	tree_make(&x, "core:2 pu:2", 4, low);
	on_vps(&x, vp);
	ck_assert_uint_eq(ct_tick(&x, &l, 1000000000ull)->n, 0);
	tree_free(&x);
}
END_TEST

/* Two metrics that pull apart: misses first (the calibrated priority). Cache-miss-heavy
 * threads on one core, FP-heavy ones on the other: one swap evens both; then, beat
 * after beat, nothing moves, and no thread ever moved twice. */
START_TEST(no_ping_pong)
{
	struct tree x;
	struct ma_vt_list l;
	tree_make(&x, "pack:2 core:2 pu:2", 8, NULL);
	/* Cores 0 and 1: two FP threads each; cores 2 and 3: two miss-heavy ones each. */
	for (unsigned i = 0; i < 4; i++)
		set_metric(x.th[i], MA_VM_FP, 300);
	for (unsigned i = 4; i < 8; i++)
		set_metric(x.th[i], MA_VM_MISS, 25);
	static const int vp[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	on_vps(&x, vp);
	unsigned moves[8] = { 0 };
	int last[8];
	for (unsigned i = 0; i < 8; i++)
		last[i] = x.th[i]->item;
	for (unsigned k = 0; k < 60; k++) {
		struct ma_dlist *out = ct_tick(&x, &l, 1000000000ull + k * BEAT_NS);
		/* Misses first (the calibrated priority): the first swap moves a miss-heavy
		 * thread onto an FP core, then the FP imbalance left is evened. */
		if (!k) {
			ck_assert_uint_eq(out->n, 4);
			ck_assert(out->d[0].entity >= 104 && out->d[0].entity < 108);
			ck_assert(out->d[1].entity >= 100 && out->d[1].entity < 104);
		}
		apply(&x, out);
		for (unsigned i = 0; i < 8; i++)
			if (x.th[i]->item != last[i]) {
				moves[i]++;
				last[i] = x.th[i]->item;
			}
	}
	for (unsigned i = 0; i < 8; i++)
		ck_assert_msg(moves[i] <= 1, "thread %u moved %u times", i, moves[i]);
	/* In the end no core has two threads heavy on the same resource. */
	int fpc[64] = { 0 }, miss[64] = { 0 };
	for (unsigned i = 0; i < 8; i++) {
		int c = core_of(&x, x.th[i]->item - (int)x.t.v.nb_items);
		fpc[c] += i < 4;
		miss[c] += i >= 4;
	}
	for (unsigned c = 0; c < 64; c++)
		ck_assert(fpc[c] <= 1 && miss[c] <= 1);
	tree_free(&x);
}
END_TEST

/* strategies/contention.c's hold: beats a swapped thread stays where the swap put it. */
#define HOLD_BEATS 10u

/* A swapped thread stays put for the hold. The seed's bad pairing is swapped at t0; the
 * threads are then put back by hand (as a program pinning them would) at each beat: the
 * held pair is left alone, the other pair is swapped instead, then nothing can move until
 * the first hold ends, when the first pair may move again. */
START_TEST(hold_after_swap)
{
	static const double fp[4] = { 0, 0, 300, 300 };
	static const int vp[4] = { 0, 1, 2, 3 };
	struct tree x;
	struct ma_vt_list l;
	tree_make(&x, "core:2 pu:2", 4, fp);
	on_vps(&x, vp);
	uint64_t t0 = 1000000000ull;
	struct ma_dlist *out = ct_tick(&x, &l, t0);
	ck_assert_uint_eq(out->n, 2);
	uint64_t first[2] = { out->d[0].entity, out->d[1].entity };
	on_vps(&x, vp);
	out = ct_tick(&x, &l, t0 + BEAT_NS);
	ck_assert_uint_eq(out->n, 2);
	for (unsigned i = 0; i < 2; i++)
		ck_assert(out->d[i].entity != first[0] && out->d[i].entity != first[1]);
	for (unsigned k = 2; k < HOLD_BEATS; k++) {
		on_vps(&x, vp);
		ck_assert_uint_eq(ct_tick(&x, &l, t0 + k * BEAT_NS)->n, 0);
	}
	on_vps(&x, vp);
	out = ct_tick(&x, &l, t0 + HOLD_BEATS * BEAT_NS);
	ck_assert_uint_eq(out->n, 2);
	ck_assert(out->d[0].entity == first[0] && out->d[1].entity == first[1]);
	tree_free(&x);
}
END_TEST

/* ---- the runtime: hints, the counters, a program ---- */

/* Starts the runtime on `topology` (NULL: this machine), a VP per PU if smt, with
 * strategy `sched` and MARCEL_METRICS=`metrics` (NULL: unset), cooperatively. */
static void rt_start(const char *topology, int smt, const char *sched, const char *metrics)
{
	if (metrics)
		setenv("MARCEL_METRICS", metrics, 1);
	if (smt)
		setenv("MARCEL_SMT", "1", 1);
	setenv("MARCEL_TIMESLICE", "0", 1);
	ma_test_init_with(topology, sched);
	unsetenv("MARCEL_TIMESLICE");
	unsetenv("MARCEL_SMT");
	unsetenv("MARCEL_METRICS");
}

/* stderr into a file while `on`, its text read back by stderr_end (at most n bytes). */
static int saved_stderr = -1;
static char stderr_path[64];

static void stderr_begin(void)
{
	fflush(stderr);
	snprintf(stderr_path, sizeof(stderr_path), "/tmp/check_contention.%d.err", (int)getpid());
	int fd = open(stderr_path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	ck_assert_int_ge(fd, 0);
	saved_stderr = dup(2);
	ck_assert_int_ge(saved_stderr, 0);
	ck_assert_int_eq(dup2(fd, 2), 2);
	close(fd);
}

static void stderr_end(char *out, size_t n)
{
	fflush(stderr);
	ck_assert_int_eq(dup2(saved_stderr, 2), 2);
	close(saved_stderr);
	FILE *f = fopen(stderr_path, "r");
	ck_assert_ptr_nonnull(f);
	size_t got = fread(out, 1, n - 1, f);
	out[got] = 0;
	fclose(f);
	unlink(stderr_path);
}

static unsigned count_lines(const char *text, const char *with)
{
	unsigned n = 0;
	for (const char *p = strstr(text, with); p; p = strstr(p + 1, with))
		n++;
	return n;
}

static any_t idle_thread(any_t arg)
{
	return arg;
}

/* The node the view builder makes of thread t, with or without MA_VIEW_METRICS: its
 * metrics' bits, values into x. */
static unsigned view_metrics(marcel_t t, unsigned flags, float *x, unsigned *vflags)
{
	struct ma_view v;
	ck_assert_int_eq(ma_view_build_thread(&v, t, flags), 0);
	ck_assert_ptr_nonnull(v.root);
	unsigned bits = v.root->metrics;
	memcpy(x, v.root->metric, sizeof(v.root->metric));
	*vflags = v.flags;
	ma_view_release(&v);
	return bits;
}

/* Hints go in and come back, are refused out of range (leaving the old value), reach
 * the views that ask for metrics (and only those), and sum over a bubble. */
START_TEST(hints)
{
	rt_start(MA_TEST_SYNTH32, 1, "null", NULL);
	marcel_t t, u;
	ck_assert_int_eq(marcel_create_dontsched(&t, NULL, idle_thread, NULL), 0);
	ck_assert_int_eq(marcel_create_dontsched(&u, NULL, idle_thread, NULL), 0);
	long long x;
	for (int m = MARCEL_STATS_FP_RATE; m <= MARCEL_STATS_MEMOP_RATE; m++) {
		ck_assert_int_eq(marcel_task_stats_get(t, m, &x), 0);
		ck_assert_int_eq(x, -1);
	}
	ck_assert_int_eq(marcel_task_stats_set(t, MARCEL_STATS_FP_RATE, 300), 0);
	ck_assert_int_eq(marcel_task_stats_set(t, MARCEL_STATS_MISS_RATE, 0), 0);
	ck_assert_int_eq(marcel_task_stats_get(t, MARCEL_STATS_FP_RATE, &x), 0);
	ck_assert_int_eq(x, 300);
	ck_assert_int_eq(marcel_task_stats_get(t, MARCEL_STATS_MISS_RATE, &x), 0);
	ck_assert_int_eq(x, 0);
	ck_assert_int_eq(marcel_task_stats_get(t, MARCEL_STATS_MEMOP_RATE, &x), 0);
	ck_assert_int_eq(x, -1);
	/* Out of range, or not writable: refused, nothing changed. */
	ck_assert_int_eq(marcel_task_stats_set(t, MARCEL_STATS_FP_RATE, 1000001), EINVAL);
	ck_assert_int_eq(marcel_task_stats_set(t, MARCEL_STATS_MEMOP_RATE + 1, 5), EINVAL);
	ck_assert_int_eq(marcel_task_stats_set(t, MARCEL_STATS_NB_THREADS, 5), EINVAL);
	ck_assert_int_eq(marcel_task_stats_get(t, MARCEL_STATS_MEMOP_RATE + 1, &x), EINVAL);
	ck_assert_int_eq(marcel_task_stats_get(t, MARCEL_STATS_FP_RATE, &x), 0);
	ck_assert_int_eq(x, 300);
	ck_assert_int_eq(marcel_task_stats_set(t, MARCEL_STATS_MEMOP_RATE, 1000000), 0);
	/* The view: with MA_VIEW_METRICS only. */
	float m[MA_VM_NB];
	unsigned vflags;
	unsigned bits = view_metrics(t, MA_VIEW_METRICS, m, &vflags);
	ck_assert_uint_eq(bits, (1u << MA_VM_FP) | (1u << MA_VM_MISS) | (1u << MA_VM_MEMOP));
	ck_assert(m[MA_VM_FP] == 300 && m[MA_VM_MISS] == 0 && m[MA_VM_MEMOP] == 1000000);
	ck_assert(vflags & MA_VIEW_HAS_METRICS);
	ck_assert_uint_eq(view_metrics(t, 0, m, &vflags), 0);
	ck_assert(!(vflags & MA_VIEW_HAS_METRICS));
	/* Unset. */
	ck_assert_int_eq(marcel_task_stats_set(t, MARCEL_STATS_MEMOP_RATE, -1), 0);
	ck_assert_int_eq(marcel_task_stats_get(t, MARCEL_STATS_MEMOP_RATE, &x), 0);
	ck_assert_int_eq(x, -1);
	ck_assert_uint_eq(view_metrics(t, MA_VIEW_METRICS, m, &vflags), (1u << MA_VM_FP) | (1u << MA_VM_MISS));
	/* A bubble: the sum over its threads that have one; -1 when none has; not writable. */
	marcel_bubble_t b;
	memset(&b, 0, sizeof(b)); /* storage never used for a bubble (marcel_bubble_init reads it) */
	ck_assert_int_eq(marcel_bubble_init(&b), 0);
	ck_assert_int_eq(marcel_bubble_inserttask(&b, t), 0);
	ck_assert_int_eq(marcel_bubble_inserttask(&b, u), 0);
	ck_assert_int_eq(marcel_task_stats_set(u, MARCEL_STATS_FP_RATE, 200), 0);
	ck_assert_int_eq(marcel_bubble_stats_get(&b, MARCEL_STATS_FP_RATE, &x), 0);
	ck_assert_int_eq(x, 500);
	ck_assert_int_eq(marcel_bubble_stats_get(&b, MARCEL_STATS_MEMOP_RATE, &x), 0);
	ck_assert_int_eq(x, -1);
	ck_assert_int_eq(marcel_bubble_stats_set(&b, MARCEL_STATS_FP_RATE, 10), EINVAL);
	ck_assert_int_eq(marcel_bubble_stats_get(&b, MARCEL_STATS_FP_RATE, &x), 0);
	ck_assert_int_eq(x, 500);
	/* An ended thread has none to set. */
	ck_assert_int_eq(marcel_wake_up_bubble(&b), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_int_eq(marcel_join(u, NULL), 0);
	ck_assert_int_eq(marcel_task_stats_set(t, MARCEL_STATS_FP_RATE, 1), ESRCH);
	ck_assert_int_eq(marcel_bubble_join(&b), 0);
	ck_assert_int_eq(marcel_bubble_destroy(&b), 0);
	marcel_end();
}
END_TEST

/* MARCEL_METRICS: off shows no metric to strategies (the hints are still read back); a
 * value not accepted stops marcel_init with a line naming it. */
START_TEST(mode_option)
{
	rt_start(MA_TEST_SYNTH32, 0, "contention", "off");
	marcel_t t;
	ck_assert_int_eq(marcel_create_dontsched(&t, NULL, idle_thread, NULL), 0);
	ck_assert_int_eq(marcel_task_stats_set(t, MARCEL_STATS_FP_RATE, 42), 0);
	long long x;
	ck_assert_int_eq(marcel_task_stats_get(t, MARCEL_STATS_FP_RATE, &x), 0);
	ck_assert_int_eq(x, 42);
	float m[MA_VM_NB];
	unsigned vflags;
	ck_assert_uint_eq(view_metrics(t, MA_VIEW_METRICS, m, &vflags), 0);
	ck_assert(!(vflags & MA_VIEW_HAS_METRICS));
	ck_assert_int_eq(ma_metrics_perf_state(NULL, 0), MA_PERF_UNTRIED);
	ck_assert_int_eq(marcel_wake_up_created_thread(t), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	marcel_end();

	char err[1024];
	setenv("MARCEL_METRICS", "sometimes", 1);
	stderr_begin();
	int argc = 1;
	char *argv[] = { (char *)"test", NULL };
	int e = marcel_init(&argc, argv);
	stderr_end(err, sizeof(err));
	unsetenv("MARCEL_METRICS");
	ck_assert_int_eq(e, EINVAL);
	ck_assert_msg(strstr(err, "MARCEL_METRICS='sometimes'") && strstr(err, "auto") && strstr(err, "perf"),
		      "the refusal says: %s", err);
}
END_TEST

/* The counters. Asked for (perf), they are opened at the first read of a metric; where
 * the kernel gives none (this machine has no hardware PMU) or the topology is synthetic
 * (workers not bound), that fails into the hints: one line says why, once, and hints
 * still come back and reach the views. Under auto they are opened only for a strategy's
 * view that asks for metrics, silently; a new runtime tries again. */
START_TEST(perf_fails_cleanly)
{
	int no_pmu = access("/sys/bus/event_source/devices/cpu", F_OK) != 0;
	for (int synth = 0; synth < 2; synth++) {
		char err[2048], why[256];
		stderr_begin();
		rt_start(synth ? MA_TEST_SYNTH32 : NULL, 0, "null", "perf");
		ck_assert_int_eq(ma_metrics_perf_state(NULL, 0), MA_PERF_UNTRIED);
		marcel_t t;
		ck_assert_int_eq(marcel_create_dontsched(&t, NULL, idle_thread, NULL), 0);
		ck_assert_int_eq(marcel_task_stats_set(t, MARCEL_STATS_MISS_RATE, 7), 0);
		long long x = 0;
		for (int k = 0; k < 3; k++) {
			ck_assert_int_eq(marcel_task_stats_get(t, MARCEL_STATS_MISS_RATE, &x), 0);
			ck_assert_int_eq(x, 7); /* not running: never measured, the hint stands */
		}
		float m[MA_VM_NB];
		unsigned vflags;
		ck_assert_uint_eq(view_metrics(t, MA_VIEW_METRICS, m, &vflags), 1u << MA_VM_MISS);
		ck_assert(m[MA_VM_MISS] == 7);
		enum ma_perf_state st = ma_metrics_perf_state(why, sizeof(why));
		ck_assert_int_eq(marcel_wake_up_created_thread(t), 0);
		ck_assert_int_eq(marcel_join(t, NULL), 0);
		marcel_end();
		stderr_end(err, sizeof(err));
		if (synth || no_pmu) {
			ck_assert_int_eq(st, MA_PERF_FAILED);
			ck_assert_msg(strstr(why, no_pmu ? "no hardware performance monitoring unit" : "not bound"),
				      "why: %s", why);
			ck_assert_uint_eq(count_lines(err, "MARCEL_METRICS=perf:"), 1);
			ck_assert_msg(strstr(err, why) && strstr(err, "hints are used"), "said: %s", err);
		} else {
			/* A machine that counts (or whose kernel refuses for another reason). */
			ck_assert(st == MA_PERF_ON || st == MA_PERF_FAILED);
			ck_assert_uint_eq(count_lines(err, "MARCEL_METRICS=perf:"), st == MA_PERF_FAILED);
		}
	}
	/* auto: a read by the program opens nothing; a view for a strategy tries, silently. */
	char err[2048];
	stderr_begin();
	rt_start(MA_TEST_SYNTH32, 0, "contention", NULL);
	marcel_t t;
	ck_assert_int_eq(marcel_create_dontsched(&t, NULL, idle_thread, NULL), 0);
	long long x;
	ck_assert_int_eq(marcel_task_stats_get(t, MARCEL_STATS_FP_RATE, &x), 0);
	ck_assert_int_eq(ma_metrics_perf_state(NULL, 0), MA_PERF_UNTRIED);
	float m[MA_VM_NB];
	unsigned vflags;
	(void)view_metrics(t, MA_VIEW_METRICS, m, &vflags);
	ck_assert_int_eq(ma_metrics_perf_state(NULL, 0), MA_PERF_FAILED);
	ck_assert_int_eq(marcel_wake_up_created_thread(t), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	marcel_end();
	stderr_end(err, sizeof(err));
	ck_assert_msg(!strstr(err, "MARCEL_METRICS"), "auto said: %s", err);
	/* The next runtime starts untried. */
	rt_start(MA_TEST_SYNTH32, 0, "null", NULL);
	ck_assert_int_eq(ma_metrics_perf_state(NULL, 0), MA_PERF_UNTRIED);
	marcel_end();
}
END_TEST

/* ---- a program under contention ---- */

#define PROG_THREADS 4
static atomic_int prog_stop;
static atomic_long prog_spins;

static any_t prog_busy(any_t arg)
{
	(void)arg;
	while (!atomic_load_explicit(&prog_stop, memory_order_relaxed)) {
		for (volatile int i = 0; i < 200; i++)
			;
		atomic_fetch_add_explicit(&prog_spins, 1, memory_order_relaxed);
		marcel_yield();
	}
	return NULL;
}

static marcel_bubble_t prog_bubble;
static marcel_t prog_t[PROG_THREADS];

/* A bubble of four busy threads, with FP hints fp[i] (< 0: none), woken and placed. */
static void prog_begin(const long long *fp)
{
	atomic_store(&prog_stop, 0);
	atomic_store(&prog_spins, 0);
	ck_assert_int_eq(marcel_bubble_init(&prog_bubble), 0);
	ck_assert_int_eq(marcel_bubble_setprio(&prog_bubble, MA_BATCH_PRIO), 0);
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setnaturalbubble(&a, &prog_bubble), 0);
	ck_assert_int_eq(marcel_attr_setprio(&a, MA_BATCH_PRIO), 0);
	for (unsigned i = 0; i < PROG_THREADS; i++) {
		ck_assert_int_eq(marcel_create(&prog_t[i], &a, prog_busy, NULL), 0);
		if (fp && fp[i] >= 0)
			ck_assert_int_eq(marcel_task_stats_set(prog_t[i], MARCEL_STATS_FP_RATE, fp[i]), 0);
	}
	ck_assert_int_eq(marcel_attr_destroy(&a), 0);
	ck_assert_int_eq(marcel_wake_up_bubble(&prog_bubble), 0);
	ck_assert_int_eq(marcel_bubble_sched_begin(), 0);
}

static void prog_end(void)
{
	atomic_store(&prog_stop, 1);
	for (unsigned i = 0; i < PROG_THREADS; i++)
		ck_assert_int_eq(marcel_join(prog_t[i], NULL), 0);
	ck_assert_int_eq(marcel_bubble_join(&prog_bubble), 0);
	ck_assert_int_eq(marcel_bubble_destroy(&prog_bubble), 0);
	ck_assert_int_gt(atomic_load(&prog_spins), 0);
}

/* Each thread's VP in a snapshot, if it is on a VP's own queue and runs there (or waits):
 * 1, else 0 with why. */
static int prog_vps(int *vp, char *why, size_t n)
{
	struct marcel_snapshot *s = marcel_sched_snapshot();
	ck_assert_ptr_nonnull(s);
	int ok = 1;
	for (unsigned i = 0; i < PROG_THREADS && ok; i++) {
		int e = marcel_snapshot_find_thread(s, prog_t[i]);
		ck_assert_int_ge(e, 0);
		const struct marcel_snapshot_entity *x = &s->entities[e];
		/* Its queue's VP (a VP's own, or a PU's): spread places on PUs, contention on VPs. */
		vp[i] = x->queue >= 0 ? s->queues[x->queue].vp : -1;
		if (vp[i] < 0 && x->queue >= 0 && s->queues[x->queue].nb_vps == 1)
			vp[i] = (int)s->queues[x->queue].first_vp;
		if (vp[i] < 0 || (x->running_vp >= 0 && x->running_vp != vp[i])) {
			snprintf(why, n, "thread %u: queue %s, running on VP %d", i,
				 x->queue >= 0 ? s->queues[x->queue].name : "(none)", x->running_vp);
			ok = 0;
		}
	}
	marcel_sched_snapshot_free(s);
	return ok;
}

typedef int (*prog_check)(const int *vp, const long long *fp, char *why, size_t n);

/* Waits (up to 20 s) for placements passing `ok`, then requires 5 more a few ms apart. */
static void prog_expect(prog_check ok, const long long *fp)
{
	char why[256] = "no snapshot";
	int streak = 0, vp[PROG_THREADS];
	for (int tries = 0; tries < 20000 && streak < 6; tries++) {
		int good = prog_vps(vp, why, sizeof(why)) && ok(vp, fp, why, sizeof(why));
		if (good)
			streak++;
		else
			ck_assert_msg(streak == 0, "placement held %d snapshot(s), then broke: %s", streak, why);
		marcel_usleep(good ? 3000 : 1000);
	}
	ck_assert_msg(streak == 6, "placement never reached: %s", why);
}

/* Four distinct VPs. */
static int prog_apart(const int *vp, const long long *fp, char *why, size_t n)
{
	(void)fp;
	for (unsigned i = 0; i < PROG_THREADS; i++)
		for (unsigned j = 0; j < i; j++)
			if (vp[i] == vp[j]) {
				snprintf(why, n, "threads %u and %u share VP %d", j, i, vp[i]);
				return 0;
			}
	return 1;
}

/* Four distinct VPs, and the FP-heavy threads on different cores (VPs 0-1: core 0, 2-3:
 * core 1 on core:2 pu:2 with a VP per PU). */
static int prog_paired(const int *vp, const long long *fp, char *why, size_t n)
{
	if (!prog_apart(vp, fp, why, n))
		return 0;
	for (unsigned i = 0; i < PROG_THREADS; i++)
		for (unsigned j = 0; j < i; j++)
			if (fp[i] > 0 && fp[j] > 0 && vp[i] / 2 == vp[j] / 2) {
				snprintf(why, n, "FP threads %u and %u share core %d (VPs %d, %d)", j, i, vp[i] / 2, vp[j],
					 vp[i]);
				return 0;
			}
	return 1;
}

/* MARCEL_BUBBLE_SCHEDULER=contention on core:2 pu:2, a VP per PU. With the FP hints in
 * the order spread pairs badly (INT,FP,INT,FP: spread puts threads 0 and 2 on one core),
 * the FP threads land on different cores; without hints it places as spread, a thread per
 * VP; hints given while the threads run are acted on at the heartbeat: the two threads
 * that share a core turn FP-heavy, and one of them is swapped away. */
START_TEST(program)
{
	rt_start("core:2 pu:2", 1, "contention", NULL);
	ck_assert_uint_eq(marcel_nbvps(), 4);
	ck_assert_str_eq(marcel_bubble_sched_name(marcel_bubble_current_sched()), "contention");
	static const long long fp[PROG_THREADS] = { 0, 300, 0, 300 };
	prog_begin(fp);
	prog_expect(prog_paired, fp);
	prog_end();
	marcel_end();

	rt_start("core:2 pu:2", 1, "contention", NULL);
	prog_begin(NULL);
	prog_expect(prog_apart, NULL);
	/* Turn the two threads of one core FP-heavy. */
	int vp[PROG_THREADS];
	char why[256];
	ck_assert(prog_vps(vp, why, sizeof(why)));
	long long later[PROG_THREADS] = { 0, 0, 0, 0 };
	for (unsigned i = 0; i < PROG_THREADS; i++)
		if (vp[i] / 2 == 0)
			later[i] = 300;
	for (unsigned i = 0; i < PROG_THREADS; i++)
		ck_assert_int_eq(marcel_task_stats_set(prog_t[i], MARCEL_STATS_FP_RATE, later[i]), 0);
	prog_expect(prog_paired, later);
	prog_end();
	marcel_end();
}
END_TEST

/* Listed and looked up like every strategy. */
START_TEST(listed)
{
	int found = 0;
	for (unsigned i = 0; marcel_bubble_sched_nth(i); i++)
		found |= !strcmp(marcel_bubble_sched_name(marcel_bubble_sched_nth(i)), "contention");
	ck_assert(found);
	ck_assert_ptr_nonnull(marcel_lookup_bubble_scheduler("contention"));
	char out[8192];
	FILE *f = tmpfile();
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(marcel_bubble_list_schedulers(f), 0);
	rewind(f);
	size_t got = fread(out, 1, sizeof(out) - 1, f);
	out[got] = 0;
	fclose(f);
	ck_assert_msg(strstr(out, "\ncontention "), "list: %s", out);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("contention");
	TCase *d = tcase_create("decisions");
	tcase_add_test(d, table);
	tcase_add_loop_test(d, pairs_int_fp, 0, 4);
	tcase_add_test(d, pairs_heaviest_with_lightest);
	tcase_add_test(d, pairs_per_metric);
	tcase_add_test(d, idle_cores_first);
	tcase_add_test(d, submit_idle_core);
	tcase_add_test(d, spread_without_metrics);
	tcase_add_test(d, swap_bad_pairing);
	tcase_add_test(d, threshold_both_sides);
	tcase_add_test(d, no_ping_pong);
	tcase_add_test(d, hold_after_swap);
	suite_add_tcase(s, d);
	TCase *r = tcase_create("runtime");
	tcase_set_timeout(r, 120);
	tcase_add_test(r, hints);
	tcase_add_test(r, mode_option);
	tcase_add_test(r, perf_fails_cleanly);
	tcase_add_test(r, program);
	tcase_add_test(r, listed);
	suite_add_tcase(s, r);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
