/*
 * The spread/memory placement decision (strategies/ma_distrib.h) as a pure function: view
 * trees built by hand, synthetic topologies loaded with the topology module, no runtime
 * and no thread. The expected placements follow from the rules documented with
 * ma_distrib_decide (greedy by decreasing load, least load per VP, ties to the lowest
 * index, bursting only what does not fit).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ma_topology.h"
#include "ma_distrib.h"

static struct ma_topo topo;

static void load(const char *spec)
{
	char err[256];
	struct ma_topo_options opt = { .spec = spec, .maxarity = 8 };
	int ret = ma_topo_load(&topo, &opt, err, sizeof(err));
	ck_assert_msg(ret == 0, "loading \"%s\" failed: %s (%s)", spec, strerror(ret), err);
}

static void teardown(void)
{
	ma_topo_free(&topo);
}

/* ---- building view trees ---- */

struct forest {
	struct ma_dnode *nodes;
	struct ma_dnode **kids;
	unsigned nb, nb_kids, cap;
	struct ma_dnode *top[256];
	unsigned nb_top;
};

static void forest_init(struct forest *f, unsigned cap)
{
	memset(f, 0, sizeof(*f));
	f->cap = cap;
	f->nodes = calloc(cap, sizeof(*f->nodes));
	f->kids = calloc(cap, sizeof(*f->kids));
	ck_assert(f->nodes && f->kids);
}

static void forest_free(struct forest *f)
{
	free(f->nodes);
	free(f->kids);
}

static struct ma_dnode *mk(struct forest *f, int is_bubble)
{
	ck_assert_uint_lt(f->nb, f->cap);
	struct ma_dnode *x = &f->nodes[f->nb++];
	*x = (struct ma_dnode){ .is_bubble = is_bubble, .load = -1, .fixed_item = -1, .pref_node = -1 };
	return x;
}

/* A bubble whose children array has room for n members (filled with add()). */
static struct ma_dnode *mk_bubble(struct forest *f, unsigned n)
{
	struct ma_dnode *b = mk(f, 1);
	ck_assert_uint_le(f->nb_kids + n, f->cap);
	b->children = f->kids + f->nb_kids;
	f->nb_kids += n;
	return b;
}

static struct ma_dnode *add(struct ma_dnode *b, struct ma_dnode *x)
{
	b->children[b->nb_children++] = x;
	return x;
}

static struct ma_dnode *bubble_of_threads(struct forest *f, unsigned n)
{
	struct ma_dnode *b = mk_bubble(f, n);
	for (unsigned i = 0; i < n; i++)
		add(b, mk(f, 0));
	return b;
}

static struct ma_dnode *top(struct forest *f, struct ma_dnode *x)
{
	f->top[f->nb_top++] = x;
	return x;
}

static void decide(struct forest *f, const double *init, int memory)
{
	ck_assert_int_eq(ma_distrib_decide(&topo, 0, f->top, f->nb_top, init, memory), 0);
}

/* ---- reading the outcome ---- */

static const struct ma_level *item_named(const char *name)
{
	for (unsigned i = 0; i < topo.nb_levels; i++)
		if (!strcmp(topo.levels[i].name, name))
			return &topo.levels[i];
	ck_abort_msg("no item named %s", name);
	return NULL;
}

static int is_leaf(int item)
{
	const struct ma_level *l = &topo.levels[item];
	if (!l->nb_vps)
		return 0;
	for (unsigned i = 0; i < l->arity; i++)
		if (l->children[i]->nb_vps)
			return 0;
	return 1;
}

static int within(int item, const struct ma_level *anc)
{
	for (const struct ma_level *l = &topo.levels[item]; l; l = l->parent)
		if (l == anc)
			return 1;
	return 0;
}

/* Where each thread runs: its own item, or that of the closed bubble holding it. Adds
 * thread loads to per_item[] (the item itself, not its subtree) and checks every thread
 * got somewhere. */
static void tally(const struct ma_dnode *x, int unit, double *per_item)
{
	int at = unit >= 0 ? unit : x->item;
	if (!x->is_bubble) {
		ck_assert_msg(at >= 0 && (unsigned)at < topo.nb_levels, "a thread was not placed");
		per_item[at] += x->eff_load;
		return;
	}
	ck_assert_msg(at >= 0, "a bubble was not placed");
	for (unsigned i = 0; i < x->nb_children; i++)
		tally(x->children[i], unit >= 0 ? unit : x->burst ? -1 : at, per_item);
}

/* Load per item, subtrees summed. */
static double *subtree_loads(struct forest *f)
{
	double *per = calloc(topo.nb_levels, sizeof(*per));
	ck_assert_ptr_nonnull(per);
	for (unsigned i = 0; i < f->nb_top; i++)
		tally(f->top[i], -1, per);
	for (unsigned i = topo.nb_levels; i-- > 1;)
		per[topo.levels[i].parent->id] += per[i];
	return per;
}

/* The item a thread runs on (see tally). */
static int thread_item(const struct ma_dnode *t, const struct ma_dnode *closed_parent)
{
	return closed_parent ? closed_parent->item : t->item;
}

/* ---- tests ---- */

/* 4 bubbles x 4 threads, sched level NUMA: a node each, a core per thread. */
START_TEST(test_numa_level)
{
	load("numa:4 core:4 pu:1");
	struct forest f;
	forest_init(&f, 64);
	for (int i = 0; i < 4; i++)
		top(&f, bubble_of_threads(&f, 4))->sched_level = MA_LEVEL_NUMA;
	decide(&f, NULL, 0);
	int used[64] = { 0 };
	for (int i = 0; i < 4; i++) {
		struct ma_dnode *b = f.top[i];
		ck_assert_int_eq(b->burst, 1);
		const struct ma_level *n = &topo.levels[b->item];
		ck_assert_msg(n->kinds & MA_LEVEL_NUMA, "bubble %d burst on %s, not a NUMA node", i, n->name);
		/* Equal loads, ties to the lowest index, taken in order: bubble i on node i. */
		ck_assert_int_eq(n->numa, i);
		for (unsigned j = 0; j < b->nb_children; j++) {
			int it = b->children[j]->item;
			ck_assert_msg(is_leaf(it) && within(it, n), "thread %d.%u on %s", i, j, topo.levels[it].name);
			ck_assert_int_eq(used[it]++, 0);
		}
	}
	forest_free(&f);
}
END_TEST

/* Bubbles of 2, 2 and 4 threads on two packages of two cores: 4 on each package. */
START_TEST(test_balanced_by_load)
{
	load("pack:2 core:2 pu:2");
	struct forest f;
	forest_init(&f, 64);
	struct ma_dnode *a = top(&f, bubble_of_threads(&f, 2));
	struct ma_dnode *b = top(&f, bubble_of_threads(&f, 2));
	struct ma_dnode *c = top(&f, bubble_of_threads(&f, 4));
	decide(&f, NULL, 0);
	double *per = subtree_loads(&f);
	const struct ma_level *p0 = item_named("Package0"), *p1 = item_named("Package1");
	ck_assert_double_eq(per[p0->id], 4);
	ck_assert_double_eq(per[p1->id], 4);
	/* The biggest goes first to the first package and bursts there (one bubble, two
	 * cores); the two small ones fit the other package whole, one per core. */
	ck_assert_int_eq(c->burst, 1);
	ck_assert_int_eq(c->item, (int)p0->id);
	for (unsigned j = 0; j < 4; j++)
		ck_assert(is_leaf(c->children[j]->item) && within(c->children[j]->item, p0));
	ck_assert_int_eq(a->burst, 0);
	ck_assert_int_eq(b->burst, 0);
	ck_assert(is_leaf(a->item) && is_leaf(b->item) && a->item != b->item);
	ck_assert(within(a->item, p1) && within(b->item, p1));
	/* The two cores of package 0 get two threads each. */
	ck_assert_double_eq(per[item_named("Core0")->id], 2);
	ck_assert_double_eq(per[item_named("Core1")->id], 2);
	free(per);
	forest_free(&f);
}
END_TEST

/* Load hints replace thread counts, for bubbles and for threads. */
START_TEST(test_load_hints)
{
	load("pack:2 core:2 pu:1");
	struct forest f;
	forest_init(&f, 64);
	/* Thread counts 1, 2, 1 but loads 6, 2, 4: 6 alone, 2 + 4 together. */
	struct ma_dnode *a = top(&f, bubble_of_threads(&f, 1));
	struct ma_dnode *b = top(&f, bubble_of_threads(&f, 2));
	struct ma_dnode *c = top(&f, bubble_of_threads(&f, 1));
	a->load = 6;
	c->children[0]->load = 4;
	decide(&f, NULL, 0);
	double *per = subtree_loads(&f);
	const struct ma_level *p0 = item_named("Package0"), *p1 = item_named("Package1");
	ck_assert(within(thread_item(a->children[0], a->burst ? NULL : a), p0));
	ck_assert(within(b->item, p1));
	ck_assert(within(c->item, p1));
	ck_assert_double_eq(per[p0->id], 1);      /* a's thread itself weighs 1 */
	ck_assert_double_eq(per[p1->id], 2 + 4);
	free(per);
	forest_free(&f);

	/* One bubble, threads 3, 1, 1, 1 on two single-core packages: 3 | 1 + 1 + 1. */
	teardown();
	load("pack:2 core:1 pu:1");
	forest_init(&f, 64);
	struct ma_dnode *d = top(&f, bubble_of_threads(&f, 4));
	d->children[0]->load = 3;
	decide(&f, NULL, 0);
	ck_assert_int_eq(d->burst, 1);
	int heavy = d->children[0]->item;
	for (unsigned j = 1; j < 4; j++)
		ck_assert_int_ne(d->children[j]->item, heavy);
	forest_free(&f);
}
END_TEST

/* Fewer entities than children: bubbles burst until every child can get something. */
START_TEST(test_burst_when_few)
{
	load("core:4 pu:1");
	struct forest f;
	forest_init(&f, 64);
	struct ma_dnode *b = top(&f, bubble_of_threads(&f, 4));
	decide(&f, NULL, 0);
	ck_assert_int_eq(b->burst, 1);
	ck_assert_int_eq(b->item, 0);
	int used[16] = { 0 };
	for (unsigned j = 0; j < 4; j++) {
		ck_assert(is_leaf(b->children[j]->item));
		ck_assert_int_eq(used[b->children[j]->item]++, 0);
	}
	forest_free(&f);

	/* Nested: the outer bubble bursts on the machine, each inner one on its package. */
	teardown();
	load("pack:2 core:2 pu:1");
	forest_init(&f, 64);
	struct ma_dnode *o = top(&f, mk_bubble(&f, 2));
	struct ma_dnode *i0 = add(o, bubble_of_threads(&f, 2)), *i1 = add(o, bubble_of_threads(&f, 2));
	decide(&f, NULL, 0);
	ck_assert_int_eq(o->burst, 1);
	ck_assert_int_eq(o->item, 0);
	ck_assert_int_eq(i0->burst, 1);
	ck_assert_int_eq(i1->burst, 1);
	ck_assert_int_eq(i0->item, (int)item_named("Package0")->id);
	ck_assert_int_eq(i1->item, (int)item_named("Package1")->id);
	ck_assert_int_ne(i0->children[0]->item, i0->children[1]->item);
	ck_assert(is_leaf(i0->children[0]->item) && is_leaf(i1->children[1]->item));

	/* A bubble whose level is not reached stays whole even when there is room. */
	forest_free(&f);
	forest_init(&f, 64);
	struct ma_dnode *w = top(&f, bubble_of_threads(&f, 4));
	w->sched_level = MA_LEVEL_PACKAGE;
	decide(&f, NULL, 0);
	ck_assert_int_eq(w->burst, 1);
	ck_assert_int_eq(w->item, (int)item_named("Package0")->id);
	forest_free(&f);
}
END_TEST

/* A thread's level bounds how far down it goes. */
START_TEST(test_thread_level)
{
	load("numa:2 core:2 pu:1");
	struct forest f;
	forest_init(&f, 64);
	struct ma_dnode *b = top(&f, bubble_of_threads(&f, 4));
	b->children[0]->sched_level = MA_LEVEL_NUMA;
	b->children[1]->sched_level = MA_LEVEL_MACHINE;
	decide(&f, NULL, 0);
	ck_assert(topo.levels[b->children[0]->item].kinds & MA_LEVEL_NUMA);
	ck_assert_int_eq(b->children[1]->item, 0);
	ck_assert(is_leaf(b->children[2]->item));
	forest_free(&f);
}
END_TEST

/* What is already queued counts: a new bubble avoids the loaded node; fixed entities
 * stay and count where they are. */
START_TEST(test_initial_load_and_fixed)
{
	load("numa:4 core:4 pu:1");
	struct forest f;
	forest_init(&f, 64);
	double *init = calloc(topo.nb_levels, sizeof(*init));
	const struct ma_level *n0 = item_named("NUMANode0"), *n1 = item_named("NUMANode1");
	init[n0->id] = 100;
	struct ma_dnode *b = top(&f, bubble_of_threads(&f, 4));
	b->sched_level = MA_LEVEL_NUMA;
	/* Pinned on NUMANode1's first core: node 1 is loaded too. */
	struct ma_dnode *p = top(&f, mk(&f, 0));
	p->fixed_item = (int)n1->children[0]->id;
	p->load = 50;
	decide(&f, init, 0);
	ck_assert_int_eq(p->item, p->fixed_item);
	ck_assert_int_eq(b->item, (int)item_named("NUMANode2")->id);
	free(init);
	forest_free(&f);
}
END_TEST

/* Nested bubbles, depth 6, 4096 threads of uneven bubbles on 64 PUs: every thread on a
 * leaf, no item above its fair share by more than one thread per VP. */
static unsigned long long rng = 42;
static unsigned rnd(unsigned n)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)(rng >> 33) % n;
}

static struct ma_dnode *gen(struct forest *f, unsigned depth, unsigned threads)
{
	if (depth == 6 || threads < 4)
		return bubble_of_threads(f, threads);
	unsigned parts = 2 + rnd(3), extra = rnd(3);
	if (extra > threads - parts)
		extra = 0;
	struct ma_dnode *b = mk_bubble(f, parts + extra);
	for (unsigned i = 0; i < extra; i++)
		add(b, mk(f, 0));
	unsigned left = threads - extra;
	for (unsigned i = 0; i < parts; i++) {
		unsigned share = i == parts - 1 ? left : 1 + rnd(2 * left / (parts - i));
		if (share > left - (parts - 1 - i))
			share = left - (parts - 1 - i);
		add(b, gen(f, depth + 1, share));
		left -= share;
	}
	return b;
}

static unsigned count_threads(const struct ma_dnode *x)
{
	if (!x->is_bubble)
		return 1;
	unsigned n = 0;
	for (unsigned i = 0; i < x->nb_children; i++)
		n += count_threads(x->children[i]);
	return n;
}

static unsigned max_depth(const struct ma_dnode *x)
{
	unsigned d = 0;
	for (unsigned i = 0; i < x->nb_children; i++) {
		unsigned c = max_depth(x->children[i]);
		if (c > d)
			d = c;
	}
	return d + x->is_bubble;
}

static void check_leaves_and_balance(struct forest *f, unsigned threads)
{
	double *per = subtree_loads(f);
	unsigned vps = topo.levels[0].nb_vps;
	for (unsigned i = 0; i < topo.nb_levels; i++) {
		const struct ma_level *l = &topo.levels[i];
		double fair = (double)threads * l->nb_vps / vps;
		ck_assert_msg(per[i] <= fair + l->nb_vps, "%s: %g threads, fair share %g, %u VPs", l->name,
			      per[i], fair, l->nb_vps);
	}
	ck_assert_double_eq(per[0], threads);
	free(per);
}

/* Every thread on a leaf (threads in closed bubbles: the bubble on a leaf). */
static void check_on_leaves(const struct ma_dnode *x, int closed)
{
	if (!closed && x->item >= 0 && (!x->is_bubble || !x->burst))
		ck_assert_msg(is_leaf(x->item), "entity on %s, not a leaf", topo.levels[x->item].name);
	for (unsigned i = 0; i < x->nb_children; i++)
		check_on_leaves(x->children[i], closed || (x->is_bubble && !x->burst));
}

START_TEST(test_nested_4096)
{
	load("pack:2 numa:2 l3:2 core:8 pu:1");
	ck_assert_uint_eq(topo.levels[0].nb_vps, 64);
	struct forest f;
	forest_init(&f, 16384);
	rng = 42;
	unsigned left = 4096;
	while (left) {
		unsigned n = left < 1024 ? left : 256 + rnd(768);
		top(&f, gen(&f, 1, n));
		left -= n;
	}
	unsigned threads = 0, depth = 0;
	for (unsigned i = 0; i < f.nb_top; i++) {
		threads += count_threads(f.top[i]);
		if (max_depth(f.top[i]) > depth)
			depth = max_depth(f.top[i]);
	}
	ck_assert_uint_eq(threads, 4096);
	ck_assert_uint_eq(depth, 6);
	decide(&f, NULL, 0);
	for (unsigned i = 0; i < f.nb_top; i++)
		check_on_leaves(f.top[i], 0);
	check_leaves_and_balance(&f, threads);

	/* Same input, same output. */
	int *first = malloc(f.nb * sizeof(int));
	for (unsigned i = 0; i < f.nb; i++)
		first[i] = f.nodes[i].item * 2 + f.nodes[i].burst;
	decide(&f, NULL, 0);
	for (unsigned i = 0; i < f.nb; i++)
		ck_assert_int_eq(first[i], f.nodes[i].item * 2 + f.nodes[i].burst);
	free(first);
	forest_free(&f);
}
END_TEST

/* The bench's case: 64 bubbles x 64 threads on 1024 PUs. */
START_TEST(test_1024pu)
{
	load("pack:4 numa:4 l3:4 core:16 pu:1");
	ck_assert_uint_eq(topo.levels[0].nb_vps, 1024);
	struct forest f;
	forest_init(&f, 64 * 65);
	for (int i = 0; i < 64; i++)
		top(&f, bubble_of_threads(&f, 64));
	decide(&f, NULL, 0);
	for (unsigned i = 0; i < f.nb_top; i++)
		check_on_leaves(f.top[i], 0);
	check_leaves_and_balance(&f, 4096);
	/* Each bubble fits one L3 (64 PUs) and stays within it. */
	for (int i = 0; i < 64; i++) {
		const struct ma_dnode *b = f.top[i];
		ck_assert_int_eq(b->burst, 1);
		const struct ma_level *l3 = &topo.levels[b->item];
		while (!(l3->kinds & MA_LEVEL_L3))
			l3 = l3->parent;
		for (unsigned j = 0; j < b->nb_children; j++)
			ck_assert(within(b->children[j]->item, l3));
	}
	forest_free(&f);
}
END_TEST

/* memory: bubbles go to the node of their memory; the others are balanced around them. */
START_TEST(test_memory)
{
	load("numa:4 core:4 pu:1");
	struct forest f;
	forest_init(&f, 64);
	for (int i = 0; i < 4; i++)
		top(&f, bubble_of_threads(&f, 4))->pref_node = 3 - i;
	struct ma_dnode *x = top(&f, bubble_of_threads(&f, 4)), *y = top(&f, bubble_of_threads(&f, 4));
	decide(&f, NULL, 1);
	for (int i = 0; i < 4; i++) {
		char name[32];
		snprintf(name, sizeof(name), "NUMANode%d", 3 - i);
		const struct ma_level *n = item_named(name);
		const struct ma_dnode *b = f.top[i];
		ck_assert_msg(within(b->item, n), "bubble with memory on node %d went to %s", 3 - i,
			      topo.levels[b->item].name);
		for (unsigned j = 0; j < b->nb_children; j++)
			ck_assert(within(thread_item(b->children[j], b->burst ? NULL : b), n));
	}
	/* 24 threads, 6 per node: x and y burst to fill the nodes evenly. */
	double *per = subtree_loads(&f);
	for (int k = 0; k < 4; k++) {
		char name[32];
		snprintf(name, sizeof(name), "NUMANode%d", k);
		ck_assert_double_eq(per[item_named(name)->id], 6);
	}
	ck_assert(x->burst && y->burst);
	free(per);

	/* Without the memory rule the preference is ignored: the first bubble takes node 0. */
	decide(&f, NULL, 0);
	ck_assert(within(f.top[0]->item, item_named("NUMANode0")));
	forest_free(&f);

	/* A node the machine lacks, or memory on the node we are already on: plain spread. */
	teardown();
	load("pack:2 core:2 pu:1");
	forest_init(&f, 64);
	top(&f, bubble_of_threads(&f, 2))->pref_node = 0;
	top(&f, bubble_of_threads(&f, 2))->pref_node = 7;
	decide(&f, NULL, 1);
	ck_assert(within(f.top[0]->item, item_named("Package0")));
	ck_assert(within(f.top[1]->item, item_named("Package1")));
	forest_free(&f);
}
END_TEST

/* Degenerate inputs. */
START_TEST(test_edges)
{
	load("core:2 pu:1");
	struct forest f;
	forest_init(&f, 16);
	ck_assert_int_eq(ma_distrib_decide(&topo, 0, f.top, 0, NULL, 0), 0);
	ck_assert_int_eq(ma_distrib_decide(&topo, topo.nb_levels, f.top, 0, NULL, 0), EINVAL);
	/* An empty bubble and a lone thread. */
	struct ma_dnode *e = top(&f, mk_bubble(&f, 0));
	struct ma_dnode *t = top(&f, mk(&f, 0));
	decide(&f, NULL, 0);
	ck_assert(is_leaf(e->item) && is_leaf(t->item));
	ck_assert_int_eq(e->burst, 0);
	/* Decided from a leaf: stays there. */
	ck_assert_int_eq(ma_distrib_decide(&topo, 1, f.top, f.nb_top, NULL, 0), 0);
	ck_assert_int_eq(t->item, 1);
	forest_free(&f);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("distrib");
	TCase *tc = tcase_create("decide");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, test_numa_level);
	tcase_add_test(tc, test_balanced_by_load);
	tcase_add_test(tc, test_load_hints);
	tcase_add_test(tc, test_burst_when_few);
	tcase_add_test(tc, test_thread_level);
	tcase_add_test(tc, test_initial_load_and_fixed);
	tcase_add_test(tc, test_nested_4096);
	tcase_add_test(tc, test_1024pu);
	tcase_add_test(tc, test_memory);
	tcase_add_test(tc, test_edges);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
