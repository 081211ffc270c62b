/*
 * pa and mintlp (strategies/pa.c, mintlp.c, amp.c) on views made by hand: the 004 seed's
 * machines (1 fast + 12 slow cores, the fast one alone on its chip; 4 fast + 12 slow, one
 * fast per chip; 1 fast + 3 slow), with applications of every class. Asserts who gets the
 * fast cores, when a serial phase's boost ends, the turns between low-parallelism
 * applications, that spinning waiters do not count, that masters are kept fast, that
 * memory domains are respected, and that nothing ping-pongs.
 */
#include <check.h>
#include <stdlib.h>
#include "ma_check_run.h"
#include "ma_view_test.h"
#include "ma_strategies.h"
#include "ma_amp.h"

#define FC1_SC12 "pack:4 core:4; restrict=0,4-15; cpukinds=4-15@1150/0@2300"
#define FC4_SC12 "pack:4 core:4; cpukinds=1-3,5-7,9-11,13-15@1150/0,4,8,12@2300"
#define FC1_SC3 "pack:1 core:4; cpukinds=1-3@1150/0@2300"

struct fixture {
	struct ma_vt t;
	struct ma_vnode *root;
	struct ma_amp_priv *priv;
	struct ma_vt_list list;
	uint64_t next_id;
};

static void setup(struct fixture *f, const char *topo)
{
	ma_vt_load(&f->t, topo, 0);
	f->root = ma_vt_bubble(&f->t, NULL, UINT64_C(1) << 63);
	f->root->status = MA_V_OPENED;
	f->root->item = 0;
	f->priv = calloc(1, sizeof(*f->priv));
	ck_assert_ptr_nonnull(f->priv);
	f->next_id = 1;
}

static void teardown(struct fixture *f)
{
	free(f->priv);
	ma_vt_free(&f->t);
}

/* A thread of `parent` in state st, scheduled on the machine's queue, last run on vp
 * (-1: never). */
static struct ma_vnode *thread(struct fixture *f, struct ma_vnode *parent, unsigned char st, int vp)
{
	struct ma_vnode *n = ma_vt_thread(&f->t, parent, f->next_id++);
	n->state = st;
	n->nb_ready = st == MA_V_READY;
	n->nb_running = st == MA_V_RUNNING;
	n->nb_threads = 1;
	n->item = 0;
	n->last_vp = vp;
	return n;
}

/* An application: a burst bubble of the root with `running` threads running (on VPs
 * first_vp, first_vp + 1, ..., wrapping), `blocked` blocked. Its first thread is returned. */
static struct ma_vnode *app(struct fixture *f, unsigned running, unsigned blocked, int first_vp)
{
	struct ma_vnode *b = ma_vt_bubble(&f->t, f->root, UINT64_C(1) << 63 | f->next_id++);
	b->status = MA_V_OPENED;
	b->item = 0;
	struct ma_vnode *first = NULL;
	for (unsigned i = 0; i < running + blocked; i++) {
		struct ma_vnode *n = thread(f, b, i < running ? MA_V_RUNNING : MA_V_BLOCKED,
					    first_vp >= 0 ? (first_vp + (int)i) % (int)f->t.v.nb_vps : -1);
		if (!first)
			first = n;
	}
	return first;
}

/* One beat of `s`; returns the list. */
static const struct ma_dlist *beat(struct fixture *f, const struct ma_strategy *s)
{
	ma_vt_finish(&f->t, f->root);
	struct ma_dlist *l = ma_vt_list(&f->list, MA_VT_LIST_MAX);
	s->decide_tick(&f->t.v, f->priv, l);
	return l;
}

/* The queue the list moves thread n to, -1 if it does not move it. */
static int moved_to(const struct ma_dlist *l, const struct ma_vnode *n)
{
	int q = -1;
	for (unsigned i = 0; i < l->n; i++)
		if (l->d[i].kind == MA_D_MOVE && l->d[i].entity == n->id)
			q = l->d[i].item;
	return q;
}

/* Whether queue q is a fast VP's (the most performant kind's). */
static int is_fast_q(const struct fixture *f, int q)
{
	int vp = q - (int)f->t.v.nb_items;
	if (vp < 0 || vp >= (int)f->t.v.nb_vps)
		return 0;
	const struct ma_topo *t = &f->t.topo;
	int k = t->vps[vp].leaf->cpukind;
	return k == (int)t->nb_cpukinds - 1;
}

/* The queue of a slow VP, -1 if q is not one. */
static int slow_vp_of(const struct fixture *f, int q)
{
	int vp = q - (int)f->t.v.nb_items;
	return vp >= 0 && vp < (int)f->t.v.nb_vps && !is_fast_q(f, q) ? vp : -1;
}

static unsigned fast_moves(const struct fixture *f, const struct ma_dlist *l)
{
	unsigned k = 0;
	for (unsigned i = 0; i < l->n; i++)
		k += l->d[i].kind == MA_D_MOVE && is_fast_q(f, l->d[i].item);
	return k;
}

static unsigned moves(const struct ma_dlist *l)
{
	unsigned k = 0;
	for (unsigned i = 0; i < l->n; i++)
		k += l->d[i].kind == MA_D_MOVE;
	return k;
}

/* Carries the list's moves out on the view, as the executor would. */
static void apply(struct fixture *f, const struct ma_dlist *l)
{
	for (unsigned i = 0; i < l->n; i++)
		for (unsigned k = 0; k < f->t.nb_nodes; k++)
			if (l->d[i].kind == MA_D_MOVE && f->t.nodes[k]->id == l->d[i].entity)
				f->t.nodes[k]->item = l->d[i].item;
}

static int fastq(struct fixture *f, unsigned vp)
{
	return ma_vt_vpq(&f->t, vp);
}

/* The memory domain of VP vp here: its package's queue. */
static int domain(struct fixture *f, unsigned vp)
{
	return ma_topo_path_item(&f->t.topo, vp, MA_LEVEL_PACKAGE);
}

/* A machine of one kind: pa and mintlp burst the bubbles and decide nothing else. */
START_TEST(one_kind_nothing_to_decide)
{
	struct fixture f;
	setup(&f, "pack:2 core:4");
	struct ma_vnode *b = ma_vt_bubble(&f.t, f.root, UINT64_C(1) << 63 | 99);
	struct ma_vnode *inner = ma_vt_bubble(&f.t, b, UINT64_C(1) << 63 | 98);
	thread(&f, inner, MA_V_READY, -1);
	ma_vt_finish(&f.t, f.root);
	struct ma_dlist *l = ma_vt_list(&f.list, MA_VT_LIST_MAX);
	ma_strategy_pa.decide_start(&f.t.v, f.priv, l);
	ck_assert_uint_eq(l->n, 2);
	ck_assert(l->d[0].kind == MA_D_BURST && l->d[0].entity == b->id && l->d[0].item == 0);
	ck_assert(l->d[1].kind == MA_D_BURST && l->d[1].entity == inner->id && l->d[1].item == 0);
	const struct ma_dlist *t = beat(&f, &ma_strategy_mintlp);
	ck_assert_uint_eq(t->n, 0);
	ck_assert(!t->beat);
	teardown(&f);
}
END_TEST

/* 1FC-12SC: a parallel application in a serial phase (1 of 12 threads runnable) takes the
 * fast core before a single-threaded program; a highly parallel one never does. After the
 * boost (100 beats) the serial phase is an ordinary low-parallelism application and the
 * single-threaded program, waiting longest, gets its turn. */
START_TEST(pa_serial_phase_first)
{
	struct fixture f;
	setup(&f, FC1_SC12);
	ck_assert_uint_eq(f.t.v.nb_vps, 13);
	struct ma_vnode *serial = app(&f, 1, 11, 5);
	struct ma_vnode *st = thread(&f, f.root, MA_V_RUNNING, 2);
	struct ma_vnode *hp = app(&f, 10, 0, 3);
	const struct ma_dlist *l = beat(&f, &ma_strategy_pa);
	ck_assert_int_eq(moved_to(l, serial), fastq(&f, 0));
	ck_assert_uint_eq(fast_moves(&f, l), 1);
	/* Every other thread, blocked ones too, gets a slow VP of its own domain: the fast
	 * core is left to the serial phase. */
	ck_assert_int_ge(slow_vp_of(&f, moved_to(l, st)), 1);
	ck_assert_int_ge(slow_vp_of(&f, moved_to(l, hp)), 1);
	ck_assert_uint_eq(moves(l), 1 + 11 + 1 + 10);
	ck_assert(l->beat);
	apply(&f, l);
	/* Stable while the phase lasts. */
	for (unsigned b = 1; b < MA_AMP_BOOST_BEATS; b++)
		ck_assert_uint_eq(moves(beat(&f, &ma_strategy_pa)), 0);
	/* Boost over: the single-threaded program (MP, waiting) takes it, across memory
	 * domains (the fast core is alone on its chip); the serial thread goes back to its
	 * domain (the package of VP 5, where it ran before). */
	l = beat(&f, &ma_strategy_pa);
	ck_assert_int_eq(moved_to(l, st), fastq(&f, 0));
	int back = slow_vp_of(&f, moved_to(l, serial));
	ck_assert_int_ge(back, 0);
	ck_assert_int_eq(domain(&f, (unsigned)back), domain(&f, 5));
	ck_assert_uint_eq(moves(l), 2);
	teardown(&f);
}
END_TEST

/* 4FC-12SC, one fast core per chip: each thread gets the fast core of its own chip (VP 5
 * and VP 9 last ran on chips 1 and 2: VPs 4 and 8), not the first fast one. */
START_TEST(pa_nearest_fast_core)
{
	struct fixture f;
	setup(&f, FC4_SC12);
	struct ma_vnode *mp = app(&f, 1, 0, 5);
	struct ma_vnode *other = app(&f, 1, 0, 9);
	const struct ma_dlist *l = beat(&f, &ma_strategy_pa);
	ck_assert_int_eq(moved_to(l, mp), fastq(&f, 4));
	ck_assert_int_eq(moved_to(l, other), fastq(&f, 8));
	ck_assert_uint_eq(moves(l), 2);
	teardown(&f);
}
END_TEST

/* A master thread (main's by default) goes before the other threads of low-parallelism
 * applications; a master of a highly parallel application in a parallel phase gets no
 * fast core (its fellows on slow cores set the pace). */
START_TEST(pa_master_first)
{
	struct fixture f;
	setup(&f, FC4_SC12);
	/* hp_threshold is 5: a (5 runnable) and b (3) are of low parallelism, 8 candidates for
	 * 4 fast cores; a's master is its last thread. */
	struct ma_vnode *a = app(&f, 5, 0, 1);
	struct ma_vnode *b = app(&f, 3, 0, 6);
	struct ma_vnode *master = NULL;
	for (unsigned k = 0; k < f.t.nb_nodes; k++)
		if (!f.t.nodes[k]->is_bubble && f.t.nodes[k]->parent == a->parent)
			master = f.t.nodes[k];
	master->master = 1;
	master->nb_masters = 1;
	const struct ma_dlist *l = beat(&f, &ma_strategy_pa);
	int q = moved_to(l, master);
	ck_assert_msg(q == fastq(&f, 0) || q == fastq(&f, 4) || q == fastq(&f, 8) || q == fastq(&f, 12),
		      "the master went to queue %d", q);
	/* Then the others in thread order: a's four, none of b's. */
	ck_assert(!is_fast_q(&f, moved_to(l, b)));
	ck_assert_uint_eq(fast_moves(&f, l), 4);
	apply(&f, l);
	/* When it blocks, candidates wait: it leaves for a slow VP of its domain. */
	master->state = MA_V_BLOCKED;
	master->nb_running = 0;
	l = beat(&f, &ma_strategy_pa);
	int back = slow_vp_of(&f, moved_to(l, master));
	ck_assert_int_ge(back, 0);
	ck_assert_int_eq(domain(&f, (unsigned)back), domain(&f, (unsigned)master->last_vp));
	teardown(&f);
	/* A highly parallel application alone: its master is no candidate. The fast cores
	 * are not left idle: they take the first runnable threads, in thread order, the
	 * nearest to where each ran (its master, which last ran on VP 0, among them only as
	 * the first thread). */
	setup(&f, FC4_SC12);
	struct ma_vnode *hp = app(&f, 16, 0, 0);
	struct ma_vnode *last = f.t.nodes[f.t.nb_nodes - 1];
	last->master = 1;
	last->nb_masters = 1;
	l = beat(&f, &ma_strategy_pa);
	ck_assert_uint_eq(fast_moves(&f, l), 4);
	ck_assert(!is_fast_q(&f, moved_to(l, last)));
	ck_assert(is_fast_q(&f, moved_to(l, hp)));
	teardown(&f);
}
END_TEST

/* A fast core with no candidate is not left idle: a highly parallel application's
 * thread takes it, and keeps it while it waits at barriers, for a turn at most. */
START_TEST(pa_fill_kept_for_a_turn)
{
	struct fixture f;
	setup(&f, FC1_SC3);
	struct ma_vnode *hp = app(&f, 6, 0, 0);
	const struct ma_dlist *l = beat(&f, &ma_strategy_pa);
	ck_assert_int_eq(moved_to(l, hp), fastq(&f, 0));
	ck_assert_uint_eq(fast_moves(&f, l), 1);
	apply(&f, l);
	hp->state = MA_V_BLOCKED;
	hp->nb_running = 0;
	for (unsigned k = 0; k + 1 < MA_AMP_BOOST_BEATS; k++) {
		l = beat(&f, &ma_strategy_pa);
		ck_assert_uint_eq(moves(l), 0);
	}
	l = beat(&f, &ma_strategy_pa);
	ck_assert_int_ge(slow_vp_of(&f, moved_to(l, hp)), 1);
	ck_assert_uint_eq(fast_moves(&f, l), 1);
	teardown(&f);
}
END_TEST

/* Spin-then-notify: threads that spin in a wait do not count. An application whose other
 * threads all spin is in a serial phase; its spinning threads get no fast core. */
START_TEST(pa_spinners_do_not_count)
{
	struct fixture f;
	setup(&f, FC1_SC3);
	struct ma_vnode *a = app(&f, 4, 0, 0);
	struct ma_vnode *worker = NULL;
	for (unsigned k = 0; k < f.t.nb_nodes; k++) {
		struct ma_vnode *n = f.t.nodes[k];
		if (!n->is_bubble && n != a) {
			n->spinning = 1;
			n->nb_spinning = 1;
			worker = n;
		}
	}
	a->last_vp = 2;
	const struct ma_dlist *l = beat(&f, &ma_strategy_pa);
	ck_assert_int_eq(moved_to(l, a), fastq(&f, 0));
	ck_assert(!is_fast_q(&f, moved_to(l, worker)));
	ck_assert_uint_eq(fast_moves(&f, l), 1);
	/* mintlp sees the same parallelism. */
	teardown(&f);
	setup(&f, FC1_SC3);
	struct ma_vnode *b = app(&f, 3, 0, 1);
	struct ma_vnode *c = app(&f, 2, 0, 1);
	for (unsigned k = 0; k < f.t.nb_nodes; k++)
		if (!f.t.nodes[k]->is_bubble && f.t.nodes[k] != b && f.t.nodes[k]->parent == b->parent) {
			f.t.nodes[k]->spinning = 1;
			f.t.nodes[k]->nb_spinning = 1;
		}
	l = beat(&f, &ma_strategy_mintlp);
	/* b's two others spin: b has 1 runnable thread, c has 2. */
	ck_assert_int_eq(moved_to(l, b), fastq(&f, 0));
	ck_assert(!is_fast_q(&f, moved_to(l, c)));
	teardown(&f);
}
END_TEST

/* Two single-threaded programs and one fast core (1FC-3SC): pa gives it in turns of 100
 * beats, one swap per turn and nothing in between; mintlp keeps the first there. */
START_TEST(turns_and_no_ping_pong)
{
	struct fixture f;
	setup(&f, FC1_SC3);
	struct ma_vnode *p1 = thread(&f, f.root, MA_V_RUNNING, 1);
	struct ma_vnode *p2 = thread(&f, f.root, MA_V_RUNNING, 2);
	unsigned swaps = 0;
	const struct ma_vnode *holder = NULL;
	for (unsigned b = 0; b < 3 * MA_AMP_BOOST_BEATS + 1; b++) {
		const struct ma_dlist *l = beat(&f, &ma_strategy_pa);
		int q1 = moved_to(l, p1), q2 = moved_to(l, p2);
		if (q1 == fastq(&f, 0) || q2 == fastq(&f, 0)) {
			const struct ma_vnode *now = q1 == fastq(&f, 0) ? p1 : p2;
			ck_assert_ptr_ne(now, holder);
			holder = now;
			swaps++;
			ck_assert_msg(b % MA_AMP_BOOST_BEATS == 0, "a swap at beat %u", b);
		} else {
			ck_assert_msg(moves(l) == 0, "%u moves at beat %u", moves(l), b);
		}
		apply(&f, l);
		/* The one left off runs on a slow core. */
		struct ma_vnode *off = holder == p1 ? p2 : p1;
		off->last_vp = 1 + (int)(b % 3);
	}
	ck_assert_uint_eq(swaps, 4);
	teardown(&f);
	setup(&f, FC1_SC3);
	p1 = thread(&f, f.root, MA_V_RUNNING, 1);
	p2 = thread(&f, f.root, MA_V_RUNNING, 2);
	const struct ma_dlist *l = beat(&f, &ma_strategy_mintlp);
	ck_assert_int_eq(moved_to(l, p1), fastq(&f, 0));
	apply(&f, l);
	for (unsigned b = 0; b < 3 * MA_AMP_BOOST_BEATS; b++)
		ck_assert_uint_eq(moves(beat(&f, &ma_strategy_mintlp)), 0);
	teardown(&f);
}
END_TEST

/* mintlp on 4FC-12SC: the fast cores go to the applications of lowest TLP first (1, then
 * 2, then one thread of the 8), whatever the serial phases and masters. */
START_TEST(mintlp_lowest_first)
{
	struct fixture f;
	setup(&f, FC4_SC12);
	struct ma_vnode *wide = app(&f, 8, 0, 4);
	struct ma_vnode *two = app(&f, 2, 0, 1);
	struct ma_vnode *one = thread(&f, f.root, MA_V_RUNNING, 13);
	const struct ma_dlist *l = beat(&f, &ma_strategy_mintlp);
	ck_assert_int_eq(moved_to(l, one), fastq(&f, 12));
	ck_assert(moved_to(l, two) == fastq(&f, 0) || moved_to(l, two) == fastq(&f, 4));
	unsigned fast_moves = 0, wide_fast = 0;
	for (unsigned i = 0; i < l->n; i++) {
		int q = l->d[i].item;
		int fast = l->d[i].kind == MA_D_MOVE && (q == fastq(&f, 0) || q == fastq(&f, 4) || q == fastq(&f, 8) ||
							q == fastq(&f, 12));
		fast_moves += fast;
		if (fast && l->d[i].entity >= wide->id && l->d[i].entity < wide->id + 8)
			wide_fast++;
	}
	ck_assert_uint_eq(fast_moves, 4);
	ck_assert_uint_eq(wide_fast, 1);
	teardown(&f);
}
END_TEST

/* Pinned threads stay; a thread never started is no candidate; blocked holders leave. */
START_TEST(pinned_and_born_left_alone)
{
	struct fixture f;
	setup(&f, FC1_SC3);
	struct ma_vnode *pinned = thread(&f, f.root, MA_V_RUNNING, 1);
	pinned->fixed_item = ma_vt_vpq(&f.t, 1);
	pinned->item = pinned->fixed_item;
	struct ma_vnode *born = thread(&f, f.root, MA_V_BORN, -1);
	born->nb_threads = 0;
	const struct ma_dlist *l = beat(&f, &ma_strategy_pa);
	ck_assert_uint_eq(moves(l), 0);
	teardown(&f);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pa");
	TCase *tc = tcase_create("pa");
	tcase_add_test(tc, one_kind_nothing_to_decide);
	tcase_add_test(tc, pa_serial_phase_first);
	tcase_add_test(tc, pa_nearest_fast_core);
	tcase_add_test(tc, pa_master_first);
	tcase_add_test(tc, pa_fill_kept_for_a_turn);
	tcase_add_test(tc, pa_spinners_do_not_count);
	tcase_add_test(tc, turns_and_no_ping_pong);
	tcase_add_test(tc, mintlp_lowest_first);
	tcase_add_test(tc, pinned_and_born_left_alone);
	suite_add_tcase(s, tc);
	return ma_check_run(s);
}
