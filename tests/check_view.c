/*
 * Views and decisions on the running runtime (bubbles/view.c, bubbles/decide.c). White-box:
 * the builders and the executor are internal (linked statically, as check_wake), and
 * placement is checked on the runtime's own fields (sched and ready holders).
 *
 * Every test runs under the null strategy and without time slices, so nothing but the
 * test moves an entity: null never moves nor bursts what a VP meets, and a thread keeps
 * its VP until it yields. Tests that need entities to stay queued first occupy every VP
 * but main's with a "hog" thread pinned to it, which sleeps in the C library (not in
 * marcel: its VP stays taken); main itself never yields until the checks are done.
 */
#include <limits.h>
#include <time.h>
#include "ma_test.h"
#include "ma_view_build.h"
#include "ma_registry.h"

/* ---- setting up ---- */

static void start(void)
{
	setenv("MARCEL_TIMESLICE", "0", 1);
	ma_test_init_with(ma_test_topology, "null");
	unsetenv("MARCEL_TIMESLICE");
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static atomic_int hog_stop, hog_running;
static marcel_t hogs[MARCEL_NBMAXVPS];
static unsigned nb_hogs, main_vp;

static any_t hog(any_t arg)
{
	atomic_fetch_add(&hog_running, 1);
	while (!atomic_load(&hog_stop))
		sleep_ms(1);
	return arg;
}

/* Occupies every VP but main's; main stays where it is (it does not yield). */
static void hogs_start(void)
{
	main_vp = ma_test_here();
	nb_hogs = 0;
	atomic_store(&hog_stop, 0);
	atomic_store(&hog_running, 0);
	for (unsigned v = 0; v < marcel_nbvps(); v++) {
		if (v == main_vp)
			continue;
		marcel_attr_t a = ma_test_attr_on_vp(v);
		ck_assert_int_eq(marcel_create(&hogs[nb_hogs++], &a, hog, NULL), 0);
	}
	for (int tries = 0; atomic_load(&hog_running) < (int)nb_hogs; tries++) {
		ck_assert_msg(tries < 10000, "the hogs did not all start within 10 s");
		sleep_ms(1);
	}
	ck_assert_int_eq(marcel_current_vp(), (int)main_vp);
}

static void hogs_stop(void)
{
	atomic_store(&hog_stop, 1);
	for (unsigned i = 0; i < nb_hogs; i++)
		ck_assert_int_eq(marcel_join(hogs[i], NULL), 0);
}

/* Waits until every VP but main's sleeps. */
static void wait_sleepers(void)
{
	main_vp = ma_test_here();
	for (int tries = 0;; tries++) {
		unsigned sleeping = 0;
		for (unsigned v = 0; v < ma_rt.nb_vps; v++)
			sleeping += v != main_vp && atomic_load(&ma_rt.workers[v].state) == MA_WORKER_SLEEPING;
		if (sleeping == ma_rt.nb_vps - 1)
			return;
		ck_assert_msg(tries < 10000, "the other VPs did not all go to sleep within 10 s");
		sleep_ms(1);
	}
}

static any_t quit(any_t arg)
{
	return arg;
}

/* b holds t[0], t[1] and sub-bubble s, which holds t[2]; the threads are created not
 * started, and start when b is woken. */
struct tree {
	marcel_bubble_t b, s;
	marcel_t t[3];
	struct ma_bubble *bb, *sb;
};

static void tree_make(struct tree *x)
{
	ck_assert_int_eq(marcel_bubble_init(&x->b), 0);
	ck_assert_int_eq(marcel_bubble_init(&x->s), 0);
	ck_assert_int_eq(marcel_bubble_insertbubble(&x->b, &x->s), 0);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(marcel_create_dontsched(&x->t[i], NULL, quit, NULL), 0);
		ck_assert_int_eq(marcel_bubble_inserttask(i < 2 ? &x->b : &x->s, x->t[i]), 0);
	}
	x->bb = ma_bubble_of(&x->b);
	x->sb = ma_bubble_of(&x->s);
}

/* Once the VPs are free again: lets the threads run and end, and takes the tree down. */
static void tree_end(struct tree *x)
{
	ck_assert_int_eq(marcel_wake_up_bubble(&x->b), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(marcel_join(x->t[i], NULL), 0);
	ck_assert_int_eq(marcel_bubble_join(&x->s), 0);
	ck_assert_int_eq(marcel_bubble_join(&x->b), 0);
	ck_assert_int_eq(marcel_bubble_destroy(&x->s), 0);
	ck_assert_int_eq(marcel_bubble_destroy(&x->b), 0);
}

/* ---- helpers ---- */

/* Children item queues of rq that have VPs, in index order (returns the count). */
static unsigned rq_children(const struct ma_runqueue *rq, struct ma_runqueue **out, unsigned max)
{
	if (rq->vp >= 0)
		return 0;
	unsigned n = 0;
	for (unsigned i = 0; i < rq->level->arity && n < max; i++) {
		const struct ma_level *c = rq->level->children[i];
		if (c->nb_vps)
			out[n++] = &ma_rt.rqs[c->id];
	}
	return n;
}

static struct ma_runqueue *Q(int q)
{
	struct ma_runqueue *rq = ma_view_queue(q);
	ck_assert_ptr_nonnull(rq);
	return rq;
}

static struct ma_holder *H(int q)
{
	return &Q(q)->hold;
}

static int vpq(unsigned vp)
{
	return (int)(ma_rt.topo.nb_levels + vp);
}

/* The leaf item of VP vp (where its own queue hangs). */
static int leaf_of(unsigned vp)
{
	return (int)ma_rt.workers[vp].rq.level->id;
}

/* A VP other than main's (there is one: the tests that need it are skipped otherwise). */
static unsigned other_vp(void)
{
	return main_vp == 0 ? 1 : 0;
}

static struct ma_holder *sched_of(marcel_t t)
{
	return __atomic_load_n(&t->e.sched_holder, __ATOMIC_ACQUIRE);
}

static struct ma_holder *ready_of(marcel_t t)
{
	return __atomic_load_n(&t->e.ready_holder, __ATOMIC_ACQUIRE);
}

static struct ma_holder *bsched_of(struct ma_bubble *b)
{
	return __atomic_load_n(&b->e.sched_holder, __ATOMIC_ACQUIRE);
}

static struct ma_holder *bready_of(struct ma_bubble *b)
{
	return __atomic_load_n(&b->e.ready_holder, __ATOMIC_ACQUIRE);
}

static const struct ma_vnode *node_of(const struct ma_view *v, uint64_t id)
{
	const struct ma_vslot *s = ma_view_slot(v, id);
	ck_assert_ptr_nonnull(s);
	return &s->n;
}

/* Runs a list of n decisions on view v; checks how many were done. */
static void run(struct ma_view *v, const struct ma_decision *d, unsigned n, unsigned done)
{
	struct ma_decision storage[16];
	struct ma_dlist l;
	ma_dlist_init(&l, storage, 16);
	for (unsigned i = 0; i < n; i++)
		ck_assert_int_eq(ma_dlist_push(&l, &d[i]), 0);
	struct ma_dresult r = ma_decisions_execute(v, &l);
	ck_assert_uint_eq(r.done, done);
	ck_assert_uint_eq(r.dropped, n - done);
}

static void run1(struct ma_view *v, struct ma_decision d, unsigned done)
{
	run(v, &d, 1, done);
}

static void subtree(struct ma_view *v, struct ma_bubble *b, unsigned flags)
{
	ck_assert_int_eq(ma_view_build_subtree(v, b, flags), 0);
	ck_assert_ptr_nonnull(v->root);
}

/* ---- the tree part ---- */

/* What is placed (MA_VIEW_PLACED): a closed bubble placed on the machine counts its
 * threads, or its hint; a thread scheduled on a queue counts on that queue's item (a VP's
 * own on its leaf); the view's own bubble is left out. */
START_TEST(placed_view)
{
	start();
	/* No VP free to serve x's threads (they would end, and count no more). */
	hogs_start();
	struct tree x, y;
	tree_make(&x);
	tree_make(&y);
	/* What is there without x: the hogs, each on its VP's leaf. */
	struct ma_view v;
	subtree(&v, y.bb, MA_VIEW_PLACED);
	ck_assert_uint_eq(v.flags & MA_VIEW_HAS_PLACED, MA_VIEW_HAS_PLACED);
	ck_assert_ptr_nonnull(v.placed);
	double *base = calloc(v.nb_items, sizeof(*base));
	ck_assert_ptr_nonnull(base);
	memcpy(base, v.placed, v.nb_items * sizeof(*base));
	double hogs_load = 0;
	for (unsigned q = 0; q < v.nb_items; q++)
		hogs_load += base[q];
	ck_assert(hogs_load == nb_hogs);
	ma_view_release(&v);
	ck_assert_int_eq(marcel_wake_up_bubble(&x.b), 0);
	ck_assert_ptr_eq(bsched_of(x.bb), H(0));
	subtree(&v, y.bb, MA_VIEW_PLACED);
	ck_assert(v.root->id == y.bb->uid);
	ck_assert(v.placed[0] == base[0] + 3);
	for (unsigned q = 1; q < v.nb_items; q++)
		ck_assert_msg(v.placed[q] == base[q], "item %u: %g, was %g", q, v.placed[q], base[q]);
	ck_assert_uint_ge(v.placed_visits, 1);
	ma_view_release(&v);
	/* Its hint stands for its members; y, woken too, counts unless it is the view's. */
	ck_assert_int_eq(marcel_bubble_stats_set(&x.b, MARCEL_STATS_LOAD, 7), 0);
	ck_assert_int_eq(marcel_wake_up_bubble(&y.b), 0);
	subtree(&v, y.bb, MA_VIEW_PLACED);
	ck_assert(v.placed[0] == base[0] + 7);
	ma_view_release(&v);
	subtree(&v, x.bb, MA_VIEW_PLACED);
	ck_assert(v.placed[0] == base[0] + 3);
	ma_view_release(&v);
	free(base);
	/* Without asking: none. */
	subtree(&v, x.bb, 0);
	ck_assert_ptr_null(v.placed);
	ck_assert_uint_eq(v.flags & MA_VIEW_HAS_PLACED, 0);
	ma_view_release(&v);
	hogs_stop();
	tree_end(&y);
	tree_end(&x);
	marcel_end();
}
END_TEST

/* MA_VIEW_SHAPE: the same items, shape only, every counter zero. */
START_TEST(items_shape)
{
	start();
	hogs_start();
	struct ma_view full, shape;
	ck_assert_int_eq(ma_view_build_items(&full, 0), 0);
	ck_assert_int_eq(ma_view_build_items(&shape, MA_VIEW_SHAPE), 0);
	ck_assert_uint_eq(shape.flags & MA_VIEW_SHAPE, MA_VIEW_SHAPE);
	ck_assert_uint_eq(full.flags & MA_VIEW_SHAPE, 0);
	unsigned long busy = 0;
	for (unsigned q = 0; q < full.nb_items + full.nb_vps; q++) {
		const struct ma_vitem *a = &full.items[q], *b = &shape.items[q];
		ck_assert_int_eq(a->vp, b->vp);
		ck_assert_int_eq(a->parent, b->parent);
		ck_assert_uint_eq(a->depth, b->depth);
		ck_assert_uint_eq(a->first_vp, b->first_vp);
		ck_assert_uint_eq(a->nb_vps, b->nb_vps);
		ck_assert_uint_eq(b->queued + b->incoming + b->ready + b->running + b->busy + b->idle_vps, 0);
		ck_assert_uint_eq(b->sub_queued + b->sub_ready + b->sub_running + b->sub_busy, 0);
		busy += a->busy;
	}
	/* The full one did read something: the hogs and main run. */
	ck_assert_uint_ge(busy, 1);
	ma_view_release(&full);
	ma_view_release(&shape);
	hogs_stop();
	marcel_end();
}
END_TEST

/* A bubble private to our own VP (cache keeps a recursion's levels private until another
 * VP wants work) is looked into: its VP publishes it and submits it while it is still
 * private, and the strategy decides about its members. */
START_TEST(private_view)
{
	setenv("MARCEL_TIMESLICE", "0", 1);
	ma_test_init_with(ma_test_topology, "cache");
	unsetenv("MARCEL_TIMESLICE");
	marcel_bubble_t b;
	ck_assert_int_eq(marcel_bubble_init(&b), 0);
	struct ma_bubble *bb = ma_bubble_of(&b);
	ck_assert_ptr_eq(atomic_load(&bb->unit.private_w), ma_worker_self());
	/* Seeds in it: they keep it private until they are joined. */
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setseed(&a, 1), 0);
	ck_assert_int_eq(marcel_attr_setnaturalbubble(&a, &b), 0);
	marcel_t t[2];
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(marcel_create(&t[i], &a, quit, NULL), 0);
	ck_assert_ptr_eq(atomic_load(&bb->unit.private_w), ma_worker_self());
	struct ma_view v;
	subtree(&v, bb, 0);
	ck_assert_uint_eq(v.root->nb_children, 2);
	ck_assert(v.root->children[0]->id == t[0]->id && v.root->children[1]->id == t[1]->id);
	ma_view_release(&v);
	ck_assert_int_eq(marcel_wake_up_bubble(&b), 0);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(marcel_join(t[i], NULL), 0);
	ck_assert_int_eq(marcel_bubble_join(&b), 0);
	ck_assert_int_eq(marcel_bubble_destroy(&b), 0);
	marcel_end();
}
END_TEST

/* v's outer bubbles are exactly those of `want`, each once, each marked. */
static void expect_outer(const struct ma_view *v, const uint64_t *want, unsigned n)
{
	ck_assert(v->flags & MA_VIEW_HAS_OUTER);
	ck_assert_uint_eq(v->nb_outer, n);
	for (unsigned i = 0; i < n; i++) {
		unsigned seen = 0;
		for (unsigned k = 0; k < v->nb_outer; k++) {
			ck_assert(v->outer[k]->is_bubble && v->outer[k]->outer);
			seen += v->outer[k]->id == want[i];
		}
		ck_assert_uint_eq(seen, 1);
	}
}

/* The node of id `id` below n (n included), NULL if none. */
static const struct ma_vnode *find_node(const struct ma_vnode *n, uint64_t id)
{
	if (n->id == id)
		return n;
	for (unsigned i = 0; i < n->nb_children; i++) {
		const struct ma_vnode *x = find_node(n->children[i], id);
		if (x)
			return x;
	}
	return NULL;
}

static any_t wake_it(any_t b)
{
	return marcel_wake_up_bubble(b) ? b : NULL;
}

/* The outer bubbles (MA_VIEW_OUTER): explicit bubbles of the root, directly or through
 * the root's implicit bubbles (main's children bubble holds a bubble main wakes); a
 * bubble inside one is none. Each is one node of the view, whichever subtree the view is
 * about; the heartbeat's view (no tree) has them too. */
START_TEST(outer_view)
{
	start();
	/* Main creates threads: its implicit children bubble, in the root. */
	hogs_start();
	marcel_bubble_t a;
	ck_assert_int_eq(marcel_bubble_init(&a), 0);
	ck_assert_int_eq(marcel_bubble_insertbubble(&marcel_root_bubble, &a), 0);
	struct tree x;
	tree_make(&x);
	/* Woken by a thread of main's children bubble: it goes there. */
	marcel_t w;
	ck_assert_int_eq(marcel_create(&w, NULL, wake_it, &x.b), 0);
	any_t r;
	ck_assert_int_eq(marcel_join(w, &r), 0);
	ck_assert_ptr_null(r);
	struct ma_bubble *ab = ma_bubble_of(&a);
	const uint64_t want[2] = { ab->uid, x.bb->uid };
	struct ma_view v;
	ck_assert_int_eq(ma_view_build_subtree(&v, NULL, MA_VIEW_OUTER), 0);
	ck_assert_ptr_null(v.root);
	expect_outer(&v, want, 2);
	ma_view_release(&v);
	/* Without the detail, no list; the nodes are marked all the same. */
	ck_assert_int_eq(ma_view_build_tree(&v, 0), 0);
	ck_assert_uint_eq(v.nb_outer, 0);
	ck_assert(!(v.flags & MA_VIEW_HAS_OUTER));
	const struct ma_vnode *nb = find_node(v.root, x.bb->uid), *ns = find_node(v.root, x.sb->uid);
	const struct ma_vnode *na = find_node(v.root, ab->uid);
	ck_assert(nb && ns && na);
	ck_assert(nb->outer && na->outer && !ns->outer && !v.root->outer);
	ck_assert(nb->parent->implicit && nb->parent->parent == v.root);
	ck_assert_ptr_eq(na->parent, v.root);
	ma_view_release(&v);
	ck_assert_int_eq(ma_view_build_tree(&v, MA_VIEW_OUTER), 0);
	expect_outer(&v, want, 2);
	ma_view_release(&v);
	/* About an outer bubble: its own node is in the list. */
	subtree(&v, x.bb, MA_VIEW_OUTER);
	ck_assert(v.root->outer);
	expect_outer(&v, want, 2);
	unsigned own = 0;
	for (unsigned k = 0; k < v.nb_outer; k++)
		own += v.outer[k] == v.root;
	ck_assert_uint_eq(own, 1);
	ma_view_release(&v);
	/* About a bubble inside one: none itself. */
	subtree(&v, x.sb, MA_VIEW_OUTER);
	ck_assert(!v.root->outer);
	expect_outer(&v, want, 2);
	ma_view_release(&v);
	hogs_stop();
	tree_end(&x);
	ck_assert_int_eq(marcel_bubble_removebubble(&marcel_root_bubble, &a), 0);
	ck_assert_int_eq(marcel_bubble_destroy(&a), 0);
	marcel_end();
}
END_TEST

/* A chain of bubbles nested deeper than any stack budget would allow a recursive walk,
 * viewed from a thread with the smallest stack: the walk keeps its own stack. */
#define DEEP 3000
static marcel_bubble_t deep[DEEP];

static void *view_deep(void *arg)
{
	(void)arg;
	struct ma_view v;
	subtree(&v, ma_bubble_of(&deep[0]), 0);
	const struct ma_vnode *n = v.root;
	for (unsigned d = 0; d < DEEP; d++) {
		ck_assert(n->is_bubble && n->id == ma_bubble_of(&deep[d])->uid);
		ck_assert_uint_eq(n->nb_members, 1);
		ck_assert_uint_eq(n->nb_children, 1);
		/* The thread's load, summed all the way up. */
		ck_assert(n->load == 1);
		n = n->children[0];
		ck_assert_ptr_eq(n->parent->children[0], n);
	}
	ck_assert(!n->is_bubble && n->nb_children == 0);
	ck_assert_uint_eq(ma_view_nb_nodes(&v), DEEP + 1);
	ma_view_release(&v);
	return NULL;
}

START_TEST(tree_deep)
{
	start();
	for (unsigned d = 0; d < DEEP; d++) {
		ck_assert_int_eq(marcel_bubble_init(&deep[d]), 0);
		if (d)
			ck_assert_int_eq(marcel_bubble_insertbubble(&deep[d - 1], &deep[d]), 0);
	}
	marcel_t t, viewer;
	ck_assert_int_eq(marcel_create_dontsched(&t, NULL, quit, NULL), 0);
	ck_assert_int_eq(marcel_bubble_inserttask(&deep[DEEP - 1], t), 0);
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setstacksize(&a, MARCEL_STACK_MIN), 0);
	ck_assert_int_eq(marcel_create(&viewer, &a, view_deep, NULL), 0);
	ck_assert_int_eq(marcel_join(viewer, NULL), 0);
	ck_assert_int_eq(marcel_wake_up_bubble(&deep[0]), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	for (unsigned d = DEEP; d-- > 0;) {
		ck_assert_int_eq(marcel_bubble_join(&deep[d]), 0);
		ck_assert_int_eq(marcel_bubble_destroy(&deep[d]), 0);
	}
	marcel_end();
}
END_TEST

/* A bubble never woken: its shape, its threads not started, its loads, the references the
 * view holds, and the way back from ids. */
START_TEST(tree_unwoken)
{
	start();
	struct tree x;
	tree_make(&x);
	ck_assert_int_eq(marcel_task_stats_set(x.t[0], MARCEL_STATS_LOAD, 5), 0);
	unsigned refs_b = atomic_load(&x.bb->refs), refs_s = atomic_load(&x.sb->refs);
	struct ma_view v;
	subtree(&v, x.bb, 0);
	ck_assert_uint_eq(atomic_load(&x.bb->refs), refs_b + 1);
	ck_assert_uint_eq(atomic_load(&x.sb->refs), refs_s + 1);
	ck_assert_int_eq(v.self_vp, marcel_current_vp());
	ck_assert_uint_eq(v.nb_items, ma_rt.topo.nb_levels);
	ck_assert_uint_eq(v.nb_vps, marcel_nbvps());
	ck_assert_ptr_eq(v.vps, v.items + v.nb_items);
	ck_assert_ptr_null(v.waiting);
	ck_assert_uint_eq(v.flags, 0);

	const struct ma_vnode *r = v.root;
	ck_assert(r->id == x.bb->uid);
	ck_assert(r->is_bubble && !r->woken && r->status == MA_V_CLOSED && r->counted && !r->implicit);
	ck_assert_ptr_null(r->parent);
	ck_assert_int_eq(r->item, -1);
	ck_assert_int_eq(r->queued_item, -1);
	ck_assert_int_eq(r->fixed_item, -1);
	ck_assert_uint_eq(r->nb_members, 3);
	ck_assert_uint_eq(r->nb_children, 3);
	/* Members in member order: the sub-bubble (inserted first), then the two threads. */
	const struct ma_vnode *s = r->children[0], *t0 = r->children[1], *t1 = r->children[2];
	ck_assert(t0->id == x.t[0]->id && t1->id == x.t[1]->id && s->id == x.sb->uid);
	ck_assert(!t0->is_bubble && t0->state == MA_V_BORN && !t0->is_main && !t0->pinned);
	ck_assert_ptr_eq(t0->parent, r);
	ck_assert_ptr_eq(s->parent, r);
	ck_assert_int_eq(t0->item, -1);
	ck_assert_int_eq(t0->last_vp, -1);
	ck_assert_uint_eq(t0->nb_threads, 0);
	ck_assert(t0->load == 5 && t0->load_hint == 5);
	ck_assert(t1->load == 1 && t1->load_hint < 0);
	ck_assert(s->is_bubble && s->status == MA_V_CLOSED);
	ck_assert_uint_eq(s->nb_children, 1);
	ck_assert(s->children[0]->id == x.t[2]->id);
	ck_assert_ptr_eq(s->children[0]->parent, s);
	ck_assert(s->load == 1);
	/* The load statistic counts every member (ma_entity_load); threads count once
	 * started. */
	ck_assert(r->load == 7);
	ck_assert_uint_eq(r->nb_threads, 0);
	ck_assert_int_eq(r->last_vp, -1);
	long long stat;
	ck_assert_int_eq(marcel_bubble_stats_get(&x.b, MARCEL_STATS_LOAD, &stat), 0);
	ck_assert(r->load == (double)stat);

	/* Back from ids. */
	ck_assert_ptr_eq(ma_view_slot(&v, x.t[1]->id)->e, &x.t[1]->e);
	ck_assert_ptr_eq(ma_view_slot(&v, x.sb->uid)->e, &x.sb->e);
	ck_assert_ptr_eq(ma_view_slot(&v, x.sb->uid)->in, x.bb);
	ck_assert_ptr_null(ma_view_slot(&v, ma_root_bubble->uid));
	/* Never woken, it is not scheduled: its wake-up submits it. */
	struct ma_decision d[] = {
		{ .kind = MA_D_PLACE, .entity = x.bb->uid, .item = 0 },
		{ .kind = MA_D_BURST, .entity = x.bb->uid, .item = 0 },
	};
	run(&v, d, 2, 0);
	ck_assert_ptr_null(bsched_of(x.bb));
	ck_assert_int_eq(atomic_load(&x.bb->status), MA_BUBBLE_CLOSED);

	ma_view_release(&v);
	ck_assert_ptr_null(v.rt);
	ck_assert_uint_eq(atomic_load(&x.bb->refs), refs_b);
	ck_assert_uint_eq(atomic_load(&x.sb->refs), refs_s);
	ma_view_release(&v); /* harmless */
	tree_end(&x);
	marcel_end();
}
END_TEST

/* A woken bubble, closed on the machine's queue with its three threads in its cache, and
 * the counters of the queues with every VP busy. */
START_TEST(tree_woken_items)
{
	start();
	hogs_start();
	struct tree x;
	tree_make(&x);
	ck_assert_int_eq(marcel_wake_up_bubble(&x.b), 0);
	struct ma_view v;
	subtree(&v, x.bb, MA_VIEW_READY);
	const struct ma_vnode *r = v.root;
	ck_assert(r->woken && r->status == MA_V_CLOSED);
	ck_assert_int_eq(r->item, 0);
	ck_assert_int_eq(r->queued_item, 0);
	ck_assert_uint_eq(r->nb_cached, 3);
	ck_assert_uint_eq(r->nb_threads, 3);
	ck_assert_uint_eq(r->nb_ready, 3);
	ck_assert_uint_eq(r->nb_running, 0);
	for (int i = 0; i < 3; i++) {
		const struct ma_vnode *t = node_of(&v, x.t[i]->id);
		ck_assert_int_eq(t->state, MA_V_READY);
		ck_assert(t->in_cache);
		ck_assert_int_eq(t->item, -1);
		ck_assert_int_eq(t->queued_item, -1);
		ck_assert_int_eq(t->home, -1);
		ck_assert_uint_eq(t->nb_threads, 1);
	}
	const struct ma_vnode *s = node_of(&v, x.sb->uid);
	ck_assert(s->woken && s->status == MA_V_CLOSED);
	ck_assert_int_eq(s->item, -1);
	ck_assert_ptr_eq(node_of(&v, x.t[2]->id)->parent, s);

	/* Queues: b waits on the machine's (three threads ready in it); main runs and belongs
	 * there; each hog runs and belongs to its VP's queue. */
	unsigned n = v.nb_vps;
	ck_assert(v.flags & MA_VIEW_HAS_READY);
	const struct ma_vitem *m = &v.items[0];
	ck_assert_int_eq(m->vp, -1);
	ck_assert_int_eq(m->parent, -1);
	ck_assert_uint_eq(m->nb_vps, n);
	ck_assert_uint_eq(m->idle_vps, 0);
	ck_assert_uint_eq(m->queued, 1);
	ck_assert_uint_eq(m->ready, 3);
	ck_assert_uint_eq(m->running, 1);
	ck_assert_uint_eq(m->sub_running, n);
	ck_assert_uint_eq(m->sub_busy, n);
	ck_assert_uint_eq(ma_vitem_load(m), 1 + n);
	ck_assert_uint_eq(ma_vitem_load_exact(m), 3 + n);
	ck_assert_uint_eq(ma_vitem_work(m), 1 + n);
	for (unsigned vp = 0; vp < n; vp++) {
		const struct ma_vitem *q = &v.vps[vp];
		ck_assert_int_eq(q->vp, (int)vp);
		ck_assert_int_eq(q->parent, leaf_of(vp));
		ck_assert_uint_eq(q->depth, v.items[q->parent].depth + 1);
		ck_assert_uint_eq(q->nb_vps, 1);
		ck_assert_uint_eq(q->busy, 1);
		ck_assert_uint_eq(q->running, vp != main_vp);
		ck_assert_uint_eq(q->queued, 0);
		ck_assert(ma_view_sees(&v, 0, vp));
		ck_assert(ma_view_within(&v, ma_view_vp_queue(&v, vp), 0));
	}
	/* Items: what the topology says, VPs by the paths that go through them. */
	for (unsigned q = 0; q < v.nb_items; q++) {
		const struct ma_level *l = &ma_rt.topo.levels[q];
		ck_assert_uint_eq(v.items[q].nb_vps, l->nb_vps);
		ck_assert_uint_eq(v.items[q].depth, l->depth);
		for (unsigned vp = 0; vp < n; vp++)
			ck_assert_int_eq(ma_view_sees(&v, (int)q, vp), ma_path_index(&ma_rt.workers[vp], &ma_rt.rqs[q]) >= 0);
		if (l->nb_vps)
			ck_assert_uint_eq(v.items[q].sub_running, l->nb_vps - (ma_view_sees(&v, (int)q, main_vp) ? 1 : 0) +
									  (q == 0));
	}
	ma_view_release(&v);

	/* The whole tree: the root, opened on the machine, holds main and b. */
	ck_assert_int_eq(ma_view_build_tree(&v, 0), 0);
	r = v.root;
	ck_assert(r->id == ma_root_bubble->uid && r->status == MA_V_OPENED && r->woken);
	ck_assert_int_eq(r->item, 0);
	const struct ma_vnode *b = node_of(&v, x.bb->uid), *mainn = NULL;
	ck_assert_ptr_eq(b->parent, r);
	for (unsigned i = 0; i < r->nb_children; i++)
		if (r->children[i]->is_main)
			mainn = r->children[i];
	ck_assert_ptr_nonnull(mainn);
	ck_assert_int_eq(mainn->state, MA_V_RUNNING);
	ck_assert_int_eq(mainn->item, 0);
	/* Each hog, pinned: fixed on its VP's queue. */
	for (unsigned i = 0; i < nb_hogs; i++) {
		const struct ma_vnode *h = node_of(&v, hogs[i]->id);
		ck_assert(h->pinned);
		ck_assert_int_eq(h->state, MA_V_RUNNING);
		ck_assert_int_eq(h->fixed_item, h->item);
		ck_assert_int_ge(h->item, (int)v.nb_items);
	}
	ma_view_release(&v);
	hogs_stop();
	tree_end(&x);
	marcel_end();
}
END_TEST

/* Idle VPs are counted on every queue they look at; the caller's is busy. */
START_TEST(items_idle)
{
	start();
	if (marcel_nbvps() < 2) {
		marcel_end();
		return;
	}
	wait_sleepers();
	struct ma_view v;
	ck_assert_int_eq(ma_view_build_items(&v, 0), 0);
	ck_assert_ptr_null(v.root);
	unsigned n = v.nb_vps;
	ck_assert_uint_eq(v.items[0].idle_vps, n - 1);
	ck_assert_uint_eq(v.items[0].sub_busy, 1);
	ck_assert_uint_eq(v.items[0].running, 1);
	for (unsigned vp = 0; vp < n; vp++) {
		ck_assert_uint_eq(v.vps[vp].idle_vps, vp != main_vp);
		ck_assert_uint_eq(v.vps[vp].busy, vp == main_vp);
	}
	for (unsigned q = 0; q < v.nb_items; q++)
		if (v.items[q].nb_vps)
			ck_assert_uint_eq(v.items[q].idle_vps, v.items[q].nb_vps - ma_view_sees(&v, (int)q, main_vp));
	ma_view_release(&v);
	marcel_end();
}
END_TEST

/* ---- executing ---- */

/* One list, top down: burst b on main's leaf item, then move one of its threads to
 * another VP's own queue and place its sub-bubble on that VP's leaf. */
START_TEST(burst_move_place)
{
	start();
	if (marcel_nbvps() < 2) {
		marcel_end();
		return;
	}
	hogs_start();
	struct tree x;
	tree_make(&x);
	ck_assert_int_eq(marcel_wake_up_bubble(&x.b), 0);
	int X = leaf_of(main_vp), Y = leaf_of(other_vp()), Z = vpq(other_vp());
	struct ma_view v;
	subtree(&v, x.bb, 0);
	struct ma_decision d[] = {
		{ .kind = MA_D_BURST, .entity = x.bb->uid, .item = X },
		{ .kind = MA_D_MOVE, .entity = x.t[0]->id, .item = Z },
		{ .kind = MA_D_PLACE, .entity = x.sb->uid, .item = Y },
	};
	run(&v, d, 3, 3);
	ma_view_release(&v);
	ck_assert_int_eq(atomic_load(&x.bb->status), MA_BUBBLE_OPENED);
	ck_assert_ptr_eq(bsched_of(x.bb), H(X));
	ck_assert_int_eq(__atomic_load_n(&x.bb->e.last_level, __ATOMIC_RELAXED), X);
	ck_assert_ptr_eq(sched_of(x.t[0]), H(Z));
	ck_assert_ptr_eq(ready_of(x.t[0]), H(Z));
	ck_assert_ptr_eq(sched_of(x.t[1]), H(X));
	ck_assert_ptr_eq(ready_of(x.t[1]), H(X));
	ck_assert_int_eq(atomic_load(&x.sb->status), MA_BUBBLE_CLOSED);
	ck_assert_ptr_eq(bsched_of(x.sb), H(Y));
	ck_assert_ptr_eq(bready_of(x.sb), H(Y));
	ck_assert_ptr_eq(sched_of(x.t[2]), &x.sb->hold);
	ck_assert_ptr_eq(ready_of(x.t[2]), &x.sb->hold);

	/* The snapshot, which numbers queues the same way, agrees. */
	struct marcel_snapshot *snap = marcel_sched_snapshot();
	ck_assert_ptr_nonnull(snap);
	ck_assert_int_eq(snap->entities[marcel_snapshot_find_thread(snap, x.t[0])].queue, Z);
	ck_assert_int_eq(snap->entities[marcel_snapshot_find_thread(snap, x.t[1])].queue, X);
	ck_assert_int_eq(snap->entities[marcel_snapshot_find_bubble(snap, &x.s)].queue, Y);
	marcel_sched_snapshot_free(snap);

	/* A fresh view sees it all; a placed closed bubble moves, a thread moves to where it
	 * is (nothing but its mark changes). */
	subtree(&v, x.bb, 0);
	ck_assert_int_eq(v.root->status, MA_V_OPENED);
	ck_assert_int_eq(node_of(&v, x.t[0]->id)->queued_item, Z);
	ck_assert_int_eq(node_of(&v, x.t[0]->id)->home, X);
	ck_assert_int_eq(node_of(&v, x.sb->uid)->item, Y);
	atomic_store(&x.t[1]->req.stray, 1);
	struct ma_decision d2[] = {
		{ .kind = MA_D_MOVE, .entity = x.sb->uid, .item = X },
		{ .kind = MA_D_MOVE, .entity = x.t[1]->id, .item = X, .flags = MA_D_UNSTRAY },
	};
	run(&v, d2, 2, 2);
	ma_view_release(&v);
	ck_assert_ptr_eq(bsched_of(x.sb), H(X));
	ck_assert_ptr_eq(bready_of(x.sb), H(X));
	ck_assert_ptr_eq(ready_of(x.t[1]), H(X));
	ck_assert_int_eq(atomic_load(&x.t[1]->req.stray), 0);
	hogs_stop();
	tree_end(&x);
	marcel_end();
}
END_TEST

/* GATHER: every thread was queued, so the bubble closes at once and, resubmitted, null
 * places it on the machine's queue, its cache full again. */
START_TEST(gather)
{
	start();
	hogs_start();
	struct tree x;
	tree_make(&x);
	ck_assert_int_eq(marcel_wake_up_bubble(&x.b), 0);
	int X = leaf_of(main_vp);
	struct ma_view v;
	subtree(&v, x.bb, 0);
	run1(&v, (struct ma_decision){ .kind = MA_D_BURST, .entity = x.bb->uid, .item = X }, 1);
	ma_view_release(&v);
	subtree(&v, x.bb, 0);
	struct ma_decision d[] = {
		{ .kind = MA_D_GATHER, .entity = x.bb->uid },
		/* Nothing more about a gathered bubble in the same list. */
		{ .kind = MA_D_PLACE, .entity = x.bb->uid, .item = X },
	};
	run(&v, d, 2, 1);
	ck_assert_int_eq(atomic_load(&x.bb->status), MA_BUBBLE_CLOSED);
	ck_assert_ptr_eq(bsched_of(x.bb), H(0));
	ck_assert_ptr_eq(bready_of(x.bb), H(0));
	ck_assert_uint_eq(x.bb->nb_cached, 3);
	for (int i = 0; i < 3; i++) {
		ck_assert_ptr_eq(sched_of(x.t[i]), &x.bb->hold);
		ck_assert_ptr_eq(ready_of(x.t[i]), &x.bb->hold);
	}
	ck_assert_int_eq(atomic_load(&x.sb->status), MA_BUBBLE_CLOSED);
	ck_assert_ptr_null(bsched_of(x.sb));
	/* The old view saw it opened: gathering it again is stale. */
	run1(&v, (struct ma_decision){ .kind = MA_D_GATHER, .entity = x.bb->uid }, 0);
	ma_view_release(&v);
	hogs_stop();
	tree_end(&x);
	marcel_end();
}
END_TEST

/* UNPLACE, then PLACE without queuing, then PLACE. */
START_TEST(unplace_place_quiet)
{
	start();
	hogs_start();
	struct tree x;
	tree_make(&x);
	ck_assert_int_eq(marcel_wake_up_bubble(&x.b), 0);
	unsigned before = __atomic_load_n(&ma_rt.rqs[0].nr_ready, __ATOMIC_RELAXED);
	int Y = leaf_of(marcel_nbvps() > 1 ? other_vp() : main_vp);
	struct ma_view v;
	subtree(&v, x.bb, 0);
	run1(&v, (struct ma_decision){ .kind = MA_D_UNPLACE, .entity = x.bb->uid }, 1);
	/* The same view places it again: the executor expects what the list did so far. */
	run1(&v, (struct ma_decision){ .kind = MA_D_PLACE, .entity = x.bb->uid, .item = Y, .flags = MA_D_NOQUEUE },
	     1);
	ma_view_release(&v);
	ck_assert_uint_eq(__atomic_load_n(&ma_rt.rqs[0].nr_ready, __ATOMIC_RELAXED), before - 1);
	ck_assert_ptr_eq(bsched_of(x.bb), H(Y));
	ck_assert_ptr_null(bready_of(x.bb));
	ck_assert_int_eq(x.bb->queued, 0);
	ck_assert_uint_eq(x.bb->nb_cached, 3);
	subtree(&v, x.bb, 0);
	ck_assert_int_eq(v.root->item, Y);
	ck_assert_int_eq(v.root->queued_item, -1);
	run1(&v, (struct ma_decision){ .kind = MA_D_PLACE, .entity = x.bb->uid, .item = Y }, 1);
	ma_view_release(&v);
	ck_assert_ptr_eq(bready_of(x.bb), H(Y));
	ck_assert_int_eq(x.bb->queued, 1);
	hogs_stop();
	tree_end(&x);
	marcel_end();
}
END_TEST

/* Decisions about entities that changed since the view was built are dropped whole, and
 * so are those about nothing the view knows. */
START_TEST(stale)
{
	start();
	if (marcel_nbvps() < 2) {
		marcel_end();
		return;
	}
	hogs_start();
	struct tree x;
	tree_make(&x);
	ck_assert_int_eq(marcel_wake_up_bubble(&x.b), 0);
	int X = leaf_of(main_vp), Y = leaf_of(other_vp()), Z = vpq(other_vp());
	struct ma_view v;
	subtree(&v, x.bb, 0);
	/* Somebody else moves b. */
	ma_bubble_place(x.bb, Q(Y));
	struct ma_decision d[] = {
		{ .kind = MA_D_PLACE, .entity = x.bb->uid, .item = X },
		{ .kind = MA_D_BURST, .entity = x.bb->uid, .item = X },
		{ .kind = MA_D_UNPLACE, .entity = x.bb->uid },
		{ .kind = MA_D_MOVE, .entity = x.bb->uid, .item = X },
		{ .kind = MA_D_PLACE, .entity = 12345, .item = X },              /* unknown */
		{ .kind = MA_D_PLACE, .entity = x.sb->uid, .item = 1 << 20 },    /* no such queue */
		{ .kind = MA_D_SERVE, .entity = x.bb->uid, .item = X },          /* pick only */
		{ .kind = MA_D_MOVE, .entity = x.t[0]->id, .item = X },          /* in a closed unit */
		/* s is part of b's closed unit: placing or bursting it would make a unit in a
		 * unit (it stays absorbed). */
		{ .kind = MA_D_PLACE, .entity = x.sb->uid, .item = X },
		{ .kind = MA_D_BURST, .entity = x.sb->uid, .item = X },
	};
	run(&v, d, 10, 0);
	ma_view_release(&v);
	ck_assert_ptr_eq(bsched_of(x.bb), H(Y));
	ck_assert_ptr_eq(bready_of(x.bb), H(Y));
	ck_assert_int_eq(atomic_load(&x.bb->status), MA_BUBBLE_CLOSED);
	ck_assert_ptr_null(bsched_of(x.sb));
	ck_assert_int_eq(atomic_load(&x.sb->status), MA_BUBBLE_CLOSED);
	ck_assert_ptr_eq(sched_of(x.t[2]), &x.bb->hold);
	ck_assert_uint_eq(x.bb->nb_cached, 3);

	/* Burst; a thread moved by somebody else after the view is not moved again. */
	ma_bubble_burst(x.bb, Q(Y));
	subtree(&v, x.bb, 0);
	ck_assert_int_eq(ma_entity_move(&x.t[0]->e, Q(Z)), 0);
	struct ma_decision d2[] = {
		{ .kind = MA_D_MOVE, .entity = x.t[0]->id, .item = X },
		{ .kind = MA_D_STEAL, .entity = x.t[0]->id, .from_item = Y, .item = X },
		/* Seen on Y, asked from X: malformed. */
		{ .kind = MA_D_STEAL, .entity = x.t[1]->id, .from_item = X, .item = Z },
		/* Not opened. */
		{ .kind = MA_D_GATHER, .entity = x.sb->uid },
	};
	run(&v, d2, 4, 0);
	ck_assert_ptr_eq(sched_of(x.t[0]), H(Z));
	ck_assert_ptr_eq(ready_of(x.t[0]), H(Z));
	ck_assert_ptr_eq(ready_of(x.t[1]), H(Y));
	ma_view_release(&v);

	/* A view made by hand has no way back to the runtime. */
	struct ma_view hand;
	memset(&hand, 0, sizeof(hand));
	run1(&hand, (struct ma_decision){ .kind = MA_D_PLACE, .entity = x.sb->uid, .item = X }, 0);
	ck_assert_ptr_eq(bsched_of(x.sb), H(Y));
	hogs_stop();
	tree_end(&x);
	marcel_end();
}
END_TEST

/* STEAL between two VPs' own queues, with and without its guard, which measures both
 * sides again: a thread, then a whole bubble. */
START_TEST(steal)
{
	start();
	if (marcel_nbvps() < 2) {
		marcel_end();
		return;
	}
	hogs_start();
	struct tree x;
	tree_make(&x);
	ck_assert_int_eq(marcel_wake_up_bubble(&x.b), 0);
	const struct ma_worker *self = ma_worker_self();
	int A = vpq(other_vp()), B = vpq(main_vp);
	struct ma_view v;
	subtree(&v, x.bb, 0);
	struct ma_decision setup[] = {
		{ .kind = MA_D_BURST, .entity = x.bb->uid, .item = A },
		{ .kind = MA_D_PLACE, .entity = x.sb->uid, .item = 0 },
	};
	run(&v, setup, 2, 2);
	ma_view_release(&v);
	/* A: its hog runs, t0 and t1 wait; B: main runs (the caller, left out). */
	ck_assert_uint_eq(ma_view_load_now(A, self), 3);
	ck_assert_uint_eq(ma_view_load_now(B, self), 0);

	subtree(&v, x.bb, 0);
	ck_assert_int_eq(node_of(&v, x.t[0]->id)->queued_item, A);
	/* One thread: (3 - 1) * 1 - (0 + 1) * 1 = 1. */
	struct ma_decision st = { .kind = MA_D_STEAL, .entity = x.t[0]->id, .from_item = A, .item = B,
				  .flags = MA_D_GUARD | MA_D_STRAY, .guard_from = A, .guard_to = B, .min_gap = 2 };
	run1(&v, st, 0);
	ck_assert_ptr_eq(ready_of(x.t[0]), H(A));
	ck_assert_int_eq(atomic_load(&x.t[0]->req.stray), 0);
	st.min_gap = 1;
	run1(&v, st, 1);
	ck_assert_ptr_eq(sched_of(x.t[0]), H(B));
	ck_assert_ptr_eq(ready_of(x.t[0]), H(B));
	ck_assert_int_eq(atomic_load(&x.t[0]->req.stray), 1);
	/* Taken already, as far as this view knows. */
	run1(&v, st, 0);
	/* A victim with no more threads than VPs gives nothing, whatever the gap. */
	struct ma_decision st1 = { .kind = MA_D_STEAL, .entity = x.t[1]->id, .from_item = A, .item = B,
				   .flags = MA_D_GUARD, .guard_from = B, .guard_to = A, .min_gap = LONG_MIN };
	ck_assert_uint_eq(ma_view_load_now(B, self), 1);
	run1(&v, st1, 0);
	ck_assert_ptr_eq(ready_of(x.t[1]), H(A));
	/* Without a guard. */
	atomic_store(&x.t[1]->req.stray, 1);
	st1.flags = MA_D_UNSTRAY;
	run1(&v, st1, 1);
	ck_assert_ptr_eq(ready_of(x.t[1]), H(B));
	ck_assert_int_eq(atomic_load(&x.t[1]->req.stray), 0);
	ma_view_release(&v);

	/* The sub-bubble, closed on the machine's queue with t2 in its cache, to A: the
	 * machine (every VP, main left out, plus what waits) gives it only if A ends no
	 * busier per VP than the machine by min_gap. */
	subtree(&v, x.bb, 0);
	ck_assert_int_eq(node_of(&v, x.sb->uid)->queued_item, 0);
	long long L0 = (long long)ma_view_load_now(0, self), LA = (long long)ma_view_load_now(A, self);
	long long V0 = marcel_nbvps(), xs = 1;
	ck_assert_int_eq(L0, V0 - 1 + 3);
	ck_assert_int_eq(LA, 1);
	long gap = (long)((L0 - xs) * 1 - (LA + xs) * V0);
	struct ma_decision sb = { .kind = MA_D_STEAL, .entity = x.sb->uid, .from_item = 0, .item = A,
				  .flags = MA_D_GUARD, .guard_from = 0, .guard_to = A, .min_gap = gap + 1 };
	run1(&v, sb, 0);
	ck_assert_ptr_eq(bready_of(x.sb), H(0));
	sb.min_gap = gap;
	run1(&v, sb, 1);
	ck_assert_ptr_eq(bsched_of(x.sb), H(A));
	ck_assert_ptr_eq(bready_of(x.sb), H(A));
	ck_assert_int_eq(x.sb->queued, 1);
	ck_assert_ptr_eq(ready_of(x.t[2]), &x.sb->hold);
	ma_view_release(&v);
	hogs_stop();
	tree_end(&x);
	marcel_end();
}
END_TEST

/* An idle VP's neighbourhood: what waits where it does not look, in queue order. */
START_TEST(vp_view)
{
	start();
	if (marcel_nbvps() < 2) {
		marcel_end();
		return;
	}
	hogs_start();
	struct tree x;
	tree_make(&x);
	ck_assert_int_eq(marcel_wake_up_bubble(&x.b), 0);
	int A = vpq(other_vp()), B = vpq(main_vp);
	struct ma_view v;
	subtree(&v, x.bb, 0);
	struct ma_decision setup[] = {
		{ .kind = MA_D_BURST, .entity = x.bb->uid, .item = A },
		{ .kind = MA_D_PLACE, .entity = x.sb->uid, .item = 0 },
	};
	run(&v, setup, 2, 2);
	ma_view_release(&v);
	unsigned refs = atomic_load(&x.sb->refs);

	ck_assert_int_eq(ma_view_build_vp(&v, ma_worker_self(), 0), 0);
	ck_assert_ptr_null(v.root);
	ck_assert(v.flags & MA_VIEW_HAS_READY);
	/* The sub-bubble waits on the machine's queue, on main's path: not in the list. */
	ck_assert_uint_eq(v.nb_waiting, 2);
	ck_assert_uint_eq(atomic_load(&x.sb->refs), refs);
	for (int i = 0; i < 2; i++) {
		const struct ma_vnode *t = v.waiting[i];
		ck_assert(t->id == x.t[i]->id);
		ck_assert_ptr_null(t->parent);
		ck_assert_uint_eq(t->nb_children, 0);
		ck_assert_int_eq(t->state, MA_V_READY);
		ck_assert_int_eq(t->queued_item, A);
		ck_assert_int_eq(t->item, A);
		ck_assert_int_eq(t->home, A);
	}
	ck_assert_uint_eq(v.items[A].ready, 2);
	ck_assert_uint_eq(v.items[0].ready, 1);
	ck_assert_uint_eq(ma_vitem_load_exact(&v.items[A]), 3);
	/* Taken from this view: seen on a queue, proven alive by that queue's lock. */
	struct ma_decision d[] = {
		{ .kind = MA_D_STEAL, .entity = x.t[0]->id, .from_item = A, .item = B },
		{ .kind = MA_D_MOVE, .entity = x.t[1]->id, .item = 0 },
	};
	run(&v, d, 2, 2);
	ma_view_release(&v);
	ck_assert_ptr_eq(ready_of(x.t[0]), H(B));
	ck_assert_ptr_eq(ready_of(x.t[1]), H(0));

	/* A closed bubble waiting off the path is listed, referenced. */
	subtree(&v, x.bb, 0);
	run1(&v, (struct ma_decision){ .kind = MA_D_MOVE, .entity = x.sb->uid, .item = A }, 1);
	ma_view_release(&v);
	ck_assert_int_eq(ma_view_build_vp(&v, ma_worker_self(), 0), 0);
	ck_assert_uint_eq(v.nb_waiting, 1);
	ck_assert(v.waiting[0]->id == x.sb->uid && v.waiting[0]->is_bubble);
	ck_assert_uint_eq(v.waiting[0]->nb_cached, 1);
	ck_assert_uint_eq(v.waiting[0]->nb_threads, 1);
	ck_assert_uint_eq(atomic_load(&x.sb->refs), refs + 1);
	ma_view_release(&v);
	ck_assert_uint_eq(atomic_load(&x.sb->refs), refs);
	hogs_stop();
	tree_end(&x);
	marcel_end();
}
END_TEST

/* find_next's question about a bubble, under the queue's lock, and its children's work
 * as burst measures it today. */
START_TEST(pick_view)
{
	start();
	hogs_start();
	struct tree x;
	tree_make(&x);
	ck_assert_int_eq(marcel_wake_up_bubble(&x.b), 0);
	struct ma_worker *w = ma_worker_self();
	struct ma_runqueue *rq = Q(0);
	struct ma_pick_kid room[MARCEL_NBMAXVPS];
	struct ma_pick_view pv = { .kids = room, .max_kids = ma_pick_max_kids() };
	ck_assert_uint_ge(pv.max_kids, 1);
	ma_spin_lock(&rq->hold.lock);
	ma_pick_view_fill(&pv, w, rq, x.bb);
	ck_assert_uint_eq(pv.has_kids, 0);
	ck_assert_uint_eq(pv.nb_kids, 0);
	ma_pick_view_kids(&pv, w, rq);
	ma_spin_unlock(&rq->hold.lock);
	ck_assert_uint_eq(pv.has_kids, 1);
	ck_assert_ptr_eq(pv.kids, room);
	ck_assert_ptr_eq(pv.topo, &ma_rt.topo);
	ck_assert_int_eq(pv.item, 0);
	ck_assert_int_eq(pv.self_vp, (int)main_vp);
	ck_assert(pv.b.id == x.bb->uid && pv.b.is_bubble && pv.b.status == MA_V_CLOSED);
	ck_assert_uint_eq(pv.b.nb_cached, 3);
	ck_assert_uint_eq(pv.b.nb_threads, 3);
	ck_assert_int_eq(pv.b.fixed_item, -1);
	ck_assert(pv.b.load == 3);
	struct ma_runqueue *kids[MARCEL_NBMAXVPS];
	unsigned n = rq_children(rq, kids, MARCEL_NBMAXVPS);
	ck_assert_uint_eq(pv.nb_kids, n);
	for (unsigned i = 0; i < n; i++) {
		ck_assert_int_eq(pv.kids[i].item, (int)kids[i]->level->id);
		ck_assert_uint_eq(pv.kids[i].nb_vps, kids[i]->level->nb_vps);
		ck_assert_uint_eq(pv.kids[i].work, ma_rq_subtree_load(kids[i]));
		ck_assert_int_eq(pv.kids[i].mine, ma_path_index(w, kids[i]) >= 0);
	}
	/* Filled again: no kids until asked; on a VP's queue, none. */
	ma_spin_lock(&rq->hold.lock);
	ma_pick_view_fill(&pv, w, rq, x.bb);
	ma_spin_unlock(&rq->hold.lock);
	ck_assert_uint_eq(pv.has_kids, 0);
	ck_assert_uint_eq(pv.nb_kids, 0);
	ma_pick_view_fill(&pv, w, &w->rq, x.bb);
	ma_pick_view_kids(&pv, w, &w->rq);
	ck_assert_uint_eq(pv.has_kids, 1);
	ck_assert_uint_eq(pv.nb_kids, 0);
	ck_assert_int_eq(pv.item, vpq(main_vp));
	hogs_stop();
	tree_end(&x);
	marcel_end();
}
END_TEST

/* The load around a bubble find_next met (MA_D_LOAD): its threads, whether it holds any
 * itself, the queue's subtree; a bubble whose lock is held is not looked into. */
START_TEST(pick_load)
{
	start();
	hogs_start();
	struct tree x;
	tree_make(&x);
	ck_assert_int_eq(marcel_wake_up_bubble(&x.b), 0);
	struct ma_worker *w = ma_worker_self();
	struct ma_runqueue *rq = Q(0);
	struct ma_pick_kid room[MARCEL_NBMAXVPS];
	struct ma_pick_view pv = { .kids = room, .max_kids = ma_pick_max_kids() };
	ma_spin_lock(&rq->hold.lock);
	ma_pick_view_fill(&pv, w, rq, x.bb);
	ck_assert_uint_eq(pv.has_load, 0);
	ma_pick_view_load(&pv, rq, x.bb);
	ma_spin_unlock(&rq->hold.lock);
	ck_assert_uint_eq(pv.has_load, 1);
	ck_assert_uint_eq(pv.load.nb_vps, marcel_nbvps());
	ck_assert_uint_eq(pv.load.direct, 1);
	ck_assert_uint_eq(pv.load.threads, 3);
	ck_assert_uint_eq(pv.load.busy, 0);
	ck_assert_uint_eq(pv.load.sibling, 0);
	/* Itself, queued there. */
	ck_assert_uint_ge(pv.load.queued, 1);
	/* Main at least runs, and belongs to no bubble of x. */
	ck_assert_uint_ge(pv.load.running, 1);
	ck_assert_uint_le(pv.load.running, marcel_nbvps());
	/* Its sub-bubble holds no thread itself: threads not counted. */
	ma_spin_lock(&x.bb->hold.lock);
	ma_spin_lock(&rq->hold.lock);
	ma_pick_view_fill(&pv, w, rq, x.bb);
	ma_pick_view_load(&pv, rq, x.bb);
	ma_spin_unlock(&rq->hold.lock);
	ma_spin_unlock(&x.bb->hold.lock);
	ck_assert(pv.load.busy && !pv.load.direct && !pv.load.threads);
	hogs_stop();
	tree_end(&x);
	marcel_end();
}
END_TEST

/* Chains: MA_D_ELSE is carried out only if the decision before it was not (an
 * alternative skipped after one done counts as done), MA_D_THEN only if it was. A stray
 * hook's MOVE to no queue only clears its own thread's mark. */
START_TEST(chains)
{
	start();
	if (marcel_nbvps() < 2) {
		marcel_end();
		return;
	}
	hogs_start();
	struct tree x;
	tree_make(&x);
	ck_assert_int_eq(marcel_wake_up_bubble(&x.b), 0);
	int X = leaf_of(main_vp), Y = leaf_of(other_vp());
	struct ma_view v;
	subtree(&v, x.bb, 0);
	/* Burst on main's leaf, its sub-bubble closed there. */
	run1(&v, (struct ma_decision){ .kind = MA_D_BURST, .entity = x.bb->uid, .item = X }, 1);
	struct ma_decision d[] = {
		{ .kind = MA_D_MOVE, .entity = x.sb->uid, .item = 1 << 20 },              /* dropped */
		{ .kind = MA_D_MOVE, .entity = x.sb->uid, .item = Y, .flags = MA_D_ELSE },  /* done */
		{ .kind = MA_D_MOVE, .entity = x.sb->uid, .item = X, .flags = MA_D_ELSE },  /* skipped */
		{ .kind = MA_D_MOVE, .entity = x.sb->uid, .item = 0, .flags = MA_D_THEN },  /* done */
		{ .kind = MA_D_MOVE, .entity = 12345, .item = X },                         /* dropped */
		{ .kind = MA_D_MOVE, .entity = x.sb->uid, .item = Y, .flags = MA_D_THEN },  /* skipped */
		{ .kind = MA_D_MOVE, .entity = x.sb->uid, .item = X, .flags = MA_D_ELSE },  /* done */
	};
	struct ma_decision storage[16];
	struct ma_dlist l;
	ma_dlist_init(&l, storage, 16);
	for (unsigned i = 0; i < sizeof(d) / sizeof(d[0]); i++)
		ck_assert_int_eq(ma_dlist_push(&l, &d[i]), 0);
	struct ma_dresult r = ma_decisions_execute(&v, &l);
	ck_assert_uint_eq(r.done, 3);
	ck_assert_uint_eq(r.dropped, 2);
	ck_assert_uint_eq(r.skipped, 2);
	ck_assert_ptr_eq(bsched_of(x.sb), H(X));
	/* A thread of the view other than the caller: refused. */
	atomic_store(&x.t[0]->req.stray, 1);
	run1(&v, (struct ma_decision){ .kind = MA_D_MOVE, .entity = x.t[0]->id, .item = -1, .flags = MA_D_UNSTRAY }, 0);
	ck_assert_int_eq(atomic_load(&x.t[0]->req.stray), 1);
	atomic_store(&x.t[0]->req.stray, 0);
	ma_view_release(&v);
	/* The caller's own. */
	struct marcel_task *self = ma_task_self();
	ck_assert_int_eq(ma_view_build_thread(&v, self, 0), 0);
	atomic_store(&self->req.stray, 1);
	run1(&v, (struct ma_decision){ .kind = MA_D_MOVE, .entity = self->id, .item = -1, .flags = MA_D_UNSTRAY }, 1);
	ck_assert_int_eq(atomic_load(&self->req.stray), 0);
	ma_view_release(&v);
	hogs_stop();
	tree_end(&x);
	marcel_end();
}
END_TEST

/* WAKE: done when a VP sleeps that can take the work, dropped when none does. */
START_TEST(wake)
{
	start();
	if (marcel_nbvps() < 2) {
		marcel_end();
		return;
	}
	hogs_start();
	struct ma_view v;
	ck_assert_int_eq(ma_view_build_items(&v, 0), 0);
	struct ma_decision d[] = {
		{ .kind = MA_D_WAKE, .item = 0 },
		{ .kind = MA_D_WAKE, .item = vpq(main_vp), .flags = MA_D_OUTSIDE },
	};
	run(&v, d, 2, 0);
	hogs_stop();
	wait_sleepers();
	/* Another VP, not main's, for work on main's own queue. */
	run1(&v, (struct ma_decision){ .kind = MA_D_WAKE, .item = vpq(main_vp), .flags = MA_D_OUTSIDE }, 1);
	wait_sleepers();
	run1(&v, (struct ma_decision){ .kind = MA_D_WAKE, .item = 0 }, 1);
	ma_view_release(&v);
	marcel_end();
}
END_TEST

/* Memory detail: the preferred node of bubbles with memory below them. */
START_TEST(memory)
{
	start();
	struct tree x;
	tree_make(&x);
	static char buf[1 << 16];
	ck_assert_int_eq(marcel_bubble_attach_memory(&x.s, buf, sizeof(buf)), 0);
	struct ma_view v;
	subtree(&v, x.bb, 0);
	ck_assert_int_eq(v.root->pref_node, -1);
	ck_assert_int_eq(node_of(&v, x.sb->uid)->pref_node, -1);
	ma_view_release(&v);
	subtree(&v, x.bb, MA_VIEW_MEMORY);
	ck_assert(v.flags & MA_VIEW_HAS_MEMORY);
	ck_assert_int_eq(node_of(&v, x.sb->uid)->pref_node, ma_entity_preferred_node(&x.sb->e));
	ck_assert_int_eq(v.root->pref_node, ma_entity_preferred_node(&x.bb->e));
	ck_assert_int_eq(node_of(&v, x.t[0]->id)->pref_node, -1);
	ma_view_release(&v);
	ck_assert_int_eq(marcel_bubble_detach_memory(&x.s, buf, sizeof(buf)), 0);
	tree_end(&x);
	marcel_end();
}
END_TEST

/* A thread's own view (a stray hook's): the thread alone, with its home. */
static atomic_int tv_home, tv_nodes;
static atomic_ullong tv_id;

static any_t own_view(any_t arg)
{
	struct ma_view v;
	marcel_t self = marcel_self();
	if (ma_view_build_thread(&v, self, 0) == 0) {
		atomic_store(&tv_home, v.root->home);
		atomic_store(&tv_id, v.root->id);
		atomic_store(&tv_nodes, (int)ma_view_nb_nodes(&v));
		ma_view_release(&v);
	}
	return arg;
}

START_TEST(thread_view)
{
	start();
	marcel_t self = marcel_self();
	struct ma_view v;
	ck_assert_int_eq(ma_view_build_thread(&v, self, 0), 0);
	const struct ma_vnode *r = v.root;
	ck_assert(r->id == self->id && !r->is_bubble && r->is_main);
	ck_assert_ptr_null(r->parent);
	ck_assert_uint_eq(r->nb_children, 0);
	ck_assert_int_eq(r->state, MA_V_RUNNING);
	ck_assert_int_eq(r->item, 0);
	ck_assert_int_eq(r->home, -1);
	ck_assert_int_eq(v.self_vp, marcel_current_vp());
	ck_assert_uint_eq(v.nb_items, ma_rt.topo.nb_levels);
	ck_assert_uint_eq(ma_view_nb_nodes(&v), 1);
	ck_assert_ptr_nonnull(ma_view_alloc(&v, 100));
	ma_view_release(&v);
	ck_assert_uint_eq(ma_view_nb_nodes(&v), 0);
	ck_assert_ptr_null(ma_view_alloc(&v, 100));

	/* A thread of a bubble opened on main's leaf: that is its home. */
	struct tree x;
	tree_make(&x);
	ck_assert_int_eq(marcel_wake_up_bubble(&x.b), 0);
	int X = leaf_of(ma_test_here());
	subtree(&v, x.bb, 0);
	run1(&v, (struct ma_decision){ .kind = MA_D_BURST, .entity = x.bb->uid, .item = X }, 1);
	ma_view_release(&v);
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setnaturalbubble(&a, &x.b), 0);
	atomic_store(&tv_home, -5);
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, &a, own_view, NULL), 0);
	uint64_t tid = t->id;
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert(atomic_load(&tv_id) == tid);
	ck_assert_int_eq(atomic_load(&tv_nodes), 1);
	ck_assert_int_eq(atomic_load(&tv_home), X);
	tree_end(&x);
	marcel_end();
}
END_TEST

/* ---- the dispatchers, with a table of decision hooks ---- */

/* A strategy that decides through decision hooks only, as each test asks, and records
 * what its hooks saw: the serialised ones in its private block, the concurrent ones
 * (which may not write it) in the globals below. */
#define TMAGIC 0x7e57u
struct tpriv {
	unsigned magic;           /* TMAGIC between priv_init and priv_exit */
	int target;               /* submit and shake: PLACE the bubble there */
	unsigned extra;           /* submit: pushes that many decisions more (about nothing) */
	uint64_t watch;           /* the bubble whose submits are counted */
	unsigned submits, shakes, starts, ticks;
	unsigned nodes, cap;      /* the last watched submit's view: nodes, list capacity */
	uint64_t start_root;
	unsigned beat_want;       /* submit asks for a beat, the heartbeat for more until
				     it beat that many times (beats) */
};
static struct tpriv *tp;          /* the block priv_init was given */
static int tinits, texits, tinit_err;
static struct ma_decision pick_answer;
static atomic_int picks, pick_kids;
static atomic_ullong pick_seen;
static atomic_int idles, idle_self;
static uint64_t idle_take;        /* vp_idle: STEAL it to the VP's own queue if waiting */
static atomic_int strays;
static atomic_uint beats;         /* heartbeat ticks (a view without root) */
static atomic_ullong stray_seen;

static unsigned count_nodes(const struct ma_vnode *n)
{
	unsigned c = 1;
	for (unsigned i = 0; i < n->nb_children; i++)
		c += count_nodes(n->children[i]);
	return c;
}

static int t_init(void *priv)
{
	struct tpriv *p = priv;
	if (tinit_err)
		return tinit_err;
	/* Zeroed by the dispatcher. */
	if (p->magic || p->submits)
		return EFAULT;
	p->magic = TMAGIC;
	tp = p;
	tinits++;
	return 0;
}

static void t_exit(void *priv)
{
	((struct tpriv *)priv)->magic = 0xdead;
	texits++;
}

static void push(struct ma_dlist *out, struct ma_decision d)
{
	(void)ma_dlist_push(out, &d);
}

static void t_submit(const struct ma_view *v, void *priv, struct ma_dlist *out)
{
	struct tpriv *p = priv;
	if (v->root->id == p->watch) {
		p->submits++;
		p->nodes = count_nodes(v->root);
		p->cap = out->cap;
	}
	push(out, (struct ma_decision){ .kind = MA_D_PLACE, .entity = v->root->id, .item = p->target });
	out->beat = p->beat_want > 0;
	for (unsigned i = 0; i < p->extra; i++)
		push(out, (struct ma_decision){ .kind = MA_D_GATHER, .entity = 12345 });
}

static void t_shake(const struct ma_view *v, void *priv, struct ma_dlist *out)
{
	struct tpriv *p = priv;
	p->shakes++;
	push(out, (struct ma_decision){ .kind = MA_D_PLACE, .entity = v->root->id, .item = p->target });
}

static void t_start(const struct ma_view *v, void *priv, struct ma_dlist *out)
{
	struct tpriv *p = priv;
	(void)out;
	p->starts++;
	p->start_root = v->root->id;
}

static void t_tick(const struct ma_view *v, void *priv, struct ma_dlist *out)
{
	struct tpriv *p = priv;
	if (!v->root) {
		out->beat = atomic_fetch_add(&beats, 1) + 1 < p->beat_want;
		return;
	}
	p->ticks++;
	push(out, (struct ma_decision){ .kind = MA_D_GATHER, .entity = v->root->id });
}

/* Holding a concurrent hook (dispatch_grace): t_vp_idle waits while idle_hold is set,
 * with idle_inside set and the block it got in idle_priv. */
static atomic_int idle_hold, idle_inside;
static const struct tpriv *_Atomic idle_priv;

static void t_vp_idle(const struct ma_view *v, const void *priv, struct ma_dlist *out)
{
	if (atomic_load(&idle_hold)) {
		atomic_store(&idle_priv, priv);
		atomic_store(&idle_inside, 1);
		while (atomic_load(&idle_hold))
			ma_cpu_relax();
		atomic_store(&idle_inside, 0);
		return;
	}
	atomic_fetch_add(&idles, 1);
	atomic_store(&idle_self, v->self_vp);
	for (unsigned i = 0; i < v->nb_waiting; i++)
		if (v->waiting[i]->id == idle_take)
			push(out, (struct ma_decision){ .kind = MA_D_STEAL, .entity = idle_take,
							.from_item = v->waiting[i]->queued_item,
							.item = ma_view_vp_queue(v, (unsigned)v->self_vp) });
}

/* Asked again with the children items (pick_answer carries MA_D_KIDS): answers this. */
static struct ma_decision pick_second;
static atomic_int pick_has_kids;

static struct ma_decision t_pick(const struct ma_pick_view *pv, const void *priv)
{
	(void)priv;
	atomic_fetch_add(&picks, 1);
	atomic_store(&pick_seen, pv->b.id);
	atomic_store(&pick_kids, (int)pv->nb_kids);
	atomic_store(&pick_has_kids, pv->has_kids);
	return pv->has_kids ? pick_second : pick_answer;
}

static void t_stray(const struct ma_view *v, const void *priv, struct ma_dlist *out)
{
	(void)priv;
	atomic_fetch_add(&strays, 1);
	atomic_store(&stray_seen, v->root->id);
	/* Clear the mark: a move to where it is. */
	push(out, (struct ma_decision){ .kind = MA_D_MOVE, .entity = v->root->id, .item = v->root->item,
					.flags = MA_D_UNSTRAY });
}

static const struct ma_strategy tstrat = {
	.name = "test",
	.description = "check_view's decision hooks",
	.priv_size = sizeof(struct tpriv),
	.priv_init = t_init,
	.priv_exit = t_exit,
	.decide_start = t_start,
	.decide_submit = t_submit,
	.decide_shake = t_shake,
	.decide_tick = t_tick,
	.decide_vp_idle = t_vp_idle,
	.decide_pick = t_pick,
	.decide_stray = t_stray,
	.heartbeat_us = 2000,
};

static void use_test(void)
{
	const void *old;
	ck_assert_int_eq(ma_strategy_switch(&tstrat, &tstrat, &old), 0);
	ck_assert_ptr_eq(ma_strategy(), &tstrat);
	ck_assert_ptr_nonnull(tp);
	ck_assert_ptr_eq(ma_strategy_current()->priv, tp);
	ck_assert_uint_eq(tp->magic, TMAGIC);
}

static void use_null(void)
{
	const void *old;
	ck_assert_int_eq(ma_strategy_switch(ma_strategy_lookup("null"), NULL, &old), 0);
}

static struct ma_decide_stats stats_now(void)
{
	struct ma_decide_stats s;
	ma_strategy_decide_stats(&s);
	return s;
}

/* Submit: the subtree's view, the decision carried out, counted; a list that overflows
 * counts what it lost. */
START_TEST(dispatch_submit)
{
	start();
	hogs_start();
	int Y = leaf_of(marcel_nbvps() > 1 ? other_vp() : main_vp);
	use_test();
	struct tree x;
	tree_make(&x);
	tp->watch = x.bb->uid;
	tp->target = Y;
	struct ma_decide_stats a = stats_now();
	ck_assert_int_eq(marcel_wake_up_bubble(&x.b), 0);
	struct ma_decide_stats b = stats_now();
	ck_assert_uint_eq(tp->submits, 1);
	ck_assert_uint_eq(tp->nodes, 5);
	ck_assert_uint_eq(tp->cap, 2 * 5 + 16);
	ck_assert_ptr_eq(bsched_of(x.bb), H(Y));
	ck_assert_ptr_eq(bready_of(x.bb), H(Y));
	ck_assert_uint_eq(x.bb->nb_cached, 3);
	ck_assert_uint_ge(b.lists - a.lists, 1);
	ck_assert_uint_ge(b.done - a.done, 1);
	ck_assert_uint_eq(b.lost, a.lost);

	/* Again, with 100 decisions more than the one that places it: 26 fit, the first
	 * (carried out) and 25 about nothing (dropped); 75 are lost, and counted. */
	tp->target = 0;
	tp->extra = 100;
	ck_assert_int_eq(marcel_bubble_submit(&x.b), 0);
	struct ma_decide_stats c = stats_now();
	ck_assert_uint_eq(tp->submits, 2);
	ck_assert_ptr_eq(bsched_of(x.bb), H(0));
	ck_assert_ptr_eq(bready_of(x.bb), H(0));
	ck_assert_uint_eq(c.lists - b.lists, 1);
	ck_assert_uint_eq(c.done - b.done, 1);
	ck_assert_uint_eq(c.dropped - b.dropped, 25);
	ck_assert_uint_eq(c.lost - b.lost, 75);
	tp->extra = 0;
	use_null();
	hogs_stop();
	tree_end(&x);
	marcel_end();
}
END_TEST

/* Tick: a GATHER whose bubble closes at once hands it back to submit while the tick's
 * list is carried out, under the strategy lock the tick holds: taken again, not waited
 * for. Shake and start get their views too. */
START_TEST(dispatch_tick_shake_start)
{
	start();
	hogs_start();
	int X = leaf_of(main_vp), Y = leaf_of(marcel_nbvps() > 1 ? other_vp() : main_vp);
	use_test();
	ck_assert_int_eq(marcel_bubble_sched_begin(), 0);
	ck_assert_uint_eq(tp->starts, 1);
	ck_assert(tp->start_root == ma_root_bubble->uid);
	struct tree x;
	tree_make(&x);
	tp->watch = x.bb->uid;
	tp->target = 0;
	ck_assert_int_eq(marcel_wake_up_bubble(&x.b), 0);
	ck_assert_uint_eq(tp->submits, 1);
	struct ma_view v;
	subtree(&v, x.bb, 0);
	run1(&v, (struct ma_decision){ .kind = MA_D_BURST, .entity = x.bb->uid, .item = X }, 1);
	ma_view_release(&v);
	ck_assert_int_eq(atomic_load(&x.bb->status), MA_BUBBLE_OPENED);
	ma_bubble_ref(x.bb);
	ma_strategy_tick(x.bb);
	ma_bubble_unref(x.bb);
	ck_assert_uint_eq(tp->ticks, 1);
	ck_assert_uint_eq(tp->submits, 2);
	ck_assert_int_eq(atomic_load(&x.bb->status), MA_BUBBLE_CLOSED);
	ck_assert_ptr_eq(bsched_of(x.bb), H(0));
	ck_assert_uint_eq(x.bb->nb_cached, 3);

	tp->target = Y;
	ck_assert_int_eq(marcel_bubble_shake_bubble(&x.b), 0);
	ck_assert_uint_eq(tp->shakes, 1);
	ck_assert_ptr_eq(bsched_of(x.bb), H(Y));
	ck_assert_ptr_eq(bready_of(x.bb), H(Y));
	use_null();
	hogs_stop();
	tree_end(&x);
	marcel_end();
}
END_TEST

/* The heartbeat: a list's `beat` brings decide_tick back once, on a view without root, as
 * long as the ticks ask again; none comes after they stop asking. */
START_TEST(dispatch_heartbeat)
{
	start();
	use_test();
	tp->target = 0;
	tp->beat_want = 5;
	atomic_store(&beats, 0);
	struct tree x;
	tree_make(&x);
	ck_assert_int_eq(marcel_wake_up_bubble(&x.b), 0);
	for (int tries = 0; atomic_load(&beats) < 5; tries++) {
		ck_assert_msg(tries < 5000, "5 beats of 2 ms did not come within 5 s");
		marcel_usleep(1000);
	}
	marcel_usleep(20000);
	ck_assert_uint_eq(atomic_load(&beats), 5);
	use_null();
	tree_end(&x);
	marcel_end();
}
END_TEST

static enum ma_pick pick_with(struct ma_runqueue *rq, struct ma_bubble *b, struct ma_decision d,
			      struct ma_runqueue **to)
{
	pick_answer = d;
	*to = NULL;
	ma_spin_lock(&rq->hold.lock);
	enum ma_pick r = ma_strategy_pick(ma_strategy_current(), ma_worker_self(), rq, b, to);
	ma_spin_unlock(&rq->hold.lock);
	return r;
}

/* Pick: the decision as find_next acts on it; what is not a serve, a burst here or a
 * move (elsewhere, or to the back of this queue) is a serve. */
START_TEST(dispatch_pick)
{
	start();
	hogs_start();
	int X = leaf_of(main_vp), Y = marcel_nbvps() > 1 ? leaf_of(other_vp()) : vpq(main_vp);
	use_test();
	struct tree x;
	tree_make(&x);
	tp->target = 0;
	ck_assert_int_eq(marcel_wake_up_bubble(&x.b), 0);
	struct ma_runqueue *rq = Q(0), *to;
	uint64_t id = x.bb->uid;
	ck_assert_int_eq(pick_with(rq, x.bb, (struct ma_decision){ .kind = MA_D_SERVE, .entity = id }, &to),
			 MA_PICK_SERVE);
	ck_assert_int_eq(atomic_load(&picks), 1);
	ck_assert(atomic_load(&pick_seen) == id);
	ck_assert_int_eq(atomic_load(&pick_kids), 0);
	ck_assert_int_eq(pick_with(rq, x.bb, (struct ma_decision){ .kind = MA_D_BURST, .entity = id, .item = 0 }, &to),
			 MA_PICK_BURST);
	ck_assert_int_eq(pick_with(rq, x.bb, (struct ma_decision){ .kind = MA_D_MOVE, .entity = id, .item = Y }, &to),
			 MA_PICK_MOVE);
	ck_assert_ptr_eq(to, Q(Y));
	/* Where it is: to the back of this queue. */
	ck_assert_int_eq(pick_with(rq, x.bb, (struct ma_decision){ .kind = MA_D_MOVE, .entity = id, .item = 0 }, &to),
			 MA_PICK_MOVE);
	ck_assert_ptr_eq(to, rq);
	struct ma_decision serves[] = {
		{ .kind = MA_D_BURST, .entity = id, .item = X },        /* elsewhere */
		{ .kind = MA_D_MOVE, .entity = id, .item = 1 << 20 },   /* no such queue */
		{ .kind = MA_D_MOVE, .entity = id + 1, .item = Y },     /* another entity */
		{ .kind = MA_D_PLACE, .entity = id, .item = Y },        /* not a pick's */
	};
	for (unsigned i = 0; i < sizeof(serves) / sizeof(serves[0]); i++) {
		ck_assert_int_eq(pick_with(rq, x.bb, serves[i], &to), MA_PICK_SERVE);
		ck_assert_ptr_null(to);
	}
	/* Asked again with the children items, once. */
	struct ma_runqueue *kq[MARCEL_NBMAXVPS];
	unsigned nk = rq_children(rq, kq, MARCEL_NBMAXVPS);
	int before = atomic_load(&picks);
	pick_second = (struct ma_decision){ .kind = MA_D_MOVE, .entity = id, .item = Y };
	ck_assert_int_eq(pick_with(rq, x.bb, (struct ma_decision){ .kind = MA_D_BURST, .entity = id, .flags = MA_D_KIDS },
				   &to), MA_PICK_MOVE);
	ck_assert_ptr_eq(to, Q(Y));
	ck_assert_int_eq(atomic_load(&picks), before + 2);
	ck_assert_int_eq(atomic_load(&pick_has_kids), 1);
	ck_assert_int_eq(atomic_load(&pick_kids), (int)nk);
	/* Asking twice is a serve. */
	pick_second.flags = MA_D_KIDS;
	ck_assert_int_eq(pick_with(rq, x.bb, (struct ma_decision){ .kind = MA_D_BURST, .entity = id, .flags = MA_D_KIDS },
				   &to), MA_PICK_SERVE);
	ck_assert_int_eq(atomic_load(&picks), before + 4);
	pick_second = (struct ma_decision){ 0 };
	/* The whole of find_next's bubble branch: moved, then burst there. */
	pick_answer = (struct ma_decision){ .kind = MA_D_MOVE, .entity = id, .item = Y };
	ma_spin_lock(&rq->hold.lock);
	ck_assert_ptr_null(ma_bubble_picked(ma_worker_self(), rq, &x.bb->e));
	ck_assert_ptr_eq(bsched_of(x.bb), H(Y));
	ck_assert_ptr_eq(bready_of(x.bb), H(Y));
	ck_assert_int_eq(atomic_load(&x.bb->status), MA_BUBBLE_CLOSED);
	pick_answer = (struct ma_decision){ .kind = MA_D_BURST, .entity = id, .item = Y };
	ma_spin_lock(&Q(Y)->hold.lock);
	ck_assert_ptr_null(ma_bubble_picked(ma_worker_self(), Q(Y), &x.bb->e));
	ck_assert_int_eq(atomic_load(&x.bb->status), MA_BUBBLE_OPENED);
	ck_assert_ptr_eq(bsched_of(x.bb), H(Y));
	ck_assert_ptr_eq(sched_of(x.t[0]), H(Y));
	use_null();
	hogs_stop();
	tree_end(&x);
	marcel_end();
}
END_TEST

/* vp_idle: the neighbourhood's view, and 1 only when a decision was carried out; stray:
 * the thread's own view, its mark cleared by the decision (and by the default). */
START_TEST(dispatch_vp_idle_stray)
{
	start();
	if (marcel_nbvps() < 2) {
		marcel_end();
		return;
	}
	hogs_start();
	struct tree x;
	tree_make(&x);
	ck_assert_int_eq(marcel_wake_up_bubble(&x.b), 0);
	int A = vpq(other_vp()), B = vpq(main_vp);
	struct ma_view v;
	subtree(&v, x.bb, 0);
	run1(&v, (struct ma_decision){ .kind = MA_D_BURST, .entity = x.bb->uid, .item = A }, 1);
	ma_view_release(&v);
	use_test();
	struct ma_worker *w = ma_worker_self();
	idle_take = x.t[0]->id;
	ck_assert_int_eq(ma_strategy_vp_idle(w), 1);
	ck_assert_int_eq(atomic_load(&idles), 1);
	ck_assert_int_eq(atomic_load(&idle_self), (int)main_vp);
	ck_assert_ptr_eq(ready_of(x.t[0]), H(B));
	ck_assert_ptr_eq(ready_of(x.t[1]), H(A));
	/* Nothing taken: 0. */
	idle_take = 0;
	ck_assert_int_eq(ma_strategy_vp_idle(w), 0);
	ck_assert_int_eq(atomic_load(&idles), 2);

	marcel_t self = marcel_self();
	atomic_store(&self->req.stray, 1);
	struct ma_decide_stats a = stats_now();
	ma_strategy_stray(w, self);
	struct ma_decide_stats b = stats_now();
	ck_assert_int_eq(atomic_load(&strays), 1);
	ck_assert(atomic_load(&stray_seen) == self->id);
	ck_assert_int_eq(atomic_load(&self->req.stray), 0);
	ck_assert_uint_eq(b.done - a.done, 1);
	use_null();
	atomic_store(&self->req.stray, 1);
	ma_strategy_stray(w, self);
	ck_assert_int_eq(atomic_load(&self->req.stray), 0);
	ck_assert_int_eq(atomic_load(&strays), 1);
	hogs_stop();
	tree_end(&x);
	marcel_end();
}
END_TEST

/* null decides through its decision hook: a woken bubble, and one whose parent is
 * opened on another item, go on the machine's queue. */
START_TEST(null_decides)
{
	start();
	hogs_start();
	ck_assert_ptr_nonnull(ma_strategy()->decide_submit);
	struct tree x;
	tree_make(&x);
	struct ma_decide_stats a = stats_now();
	ck_assert_int_eq(marcel_wake_up_bubble(&x.b), 0);
	struct ma_decide_stats b = stats_now();
	ck_assert_uint_ge(b.lists - a.lists, 1);
	ck_assert_uint_ge(b.done - a.done, 1);
	ck_assert_uint_eq(b.lost, a.lost);
	ck_assert_ptr_eq(bsched_of(x.bb), H(0));
	ck_assert_ptr_eq(bready_of(x.bb), H(0));
	int X = leaf_of(main_vp);
	struct ma_view v;
	subtree(&v, x.bb, 0);
	run1(&v, (struct ma_decision){ .kind = MA_D_BURST, .entity = x.bb->uid, .item = X }, 1);
	ma_view_release(&v);
	ck_assert_ptr_eq(bsched_of(x.sb), H(X));
	ck_assert_int_eq(marcel_bubble_submit(&x.s), 0);
	ck_assert_ptr_eq(bsched_of(x.sb), H(0));
	ck_assert_ptr_eq(bready_of(x.sb), H(0));
	hogs_stop();
	tree_end(&x);
	marcel_end();
}
END_TEST

/* Private blocks: zeroed, set up before the strategy is current, a new one at each
 * selection, freed (priv_exit first) once no concurrent hook is in, and a failed
 * priv_init changes nothing. */
START_TEST(dispatch_switch)
{
	start();
	const void *old;
	tinit_err = EINVAL;
	ck_assert_int_eq(ma_strategy_switch(&tstrat, &tstrat, &old), EINVAL);
	ck_assert_str_eq(ma_strategy()->name, "null");
	ck_assert_int_eq(tinits, 0);
	tinit_err = 0;
	use_test();
	ck_assert_int_eq(tinits, 1);
	struct tpriv *first = tp;
	/* The same strategy again: nothing set up again. */
	ck_assert_int_eq(ma_strategy_switch(&tstrat, &tstrat, &old), 0);
	ck_assert_ptr_eq(tp, first);
	ck_assert_ptr_eq(old, &tstrat);
	ck_assert_int_eq(tinits, 1);
	/* Switched away from: freed at once unless an idle VP was in its decide_vp_idle
	 * right then (then at a later sweep). */
	use_null();
	ck_assert_int_le(texits, 1);
	/* Back again: a new block. */
	use_test();
	ck_assert_int_eq(tinits, 2);
	ck_assert_uint_eq(tp->magic, TMAGIC);
	/* marcel_end deselects it and frees both. */
	marcel_end();
	ck_assert_int_eq(texits, 2);
}
END_TEST

/* Switches (each one sweeps the retired blocks) until n blocks were let go of. */
static void sweep_until(int n)
{
	const void *old;
	for (int i = 0; texits < n; i++) {
		ck_assert_msg(i < 5000, "%d blocks of %d let go of in 5 s", texits, n);
		ck_assert_int_eq(ma_strategy_switch(ma_strategy_lookup("burst"), NULL, &old), 0);
		use_null();
		sleep_ms(1);
	}
	ck_assert_int_eq(texits, n);
}

static void *idle_in_hook(void *arg)
{
	(void)arg;
	ma_strategy_vp_idle(ma_worker_self());
	return NULL;
}

static void wait_flag(atomic_int *f, int want)
{
	for (int i = 0; atomic_load(f) != want; i++) {
		ck_assert_msg(i < 5000, "the held hook did not %s in 5 s", want ? "enter" : "leave");
		sleep_ms(1);
	}
}

/* A VP still inside a concurrent hook of a strategy switched away from keeps its block
 * alive and set up (no priv_exit) until it leaves; a later switch then frees it. The VP
 * held is the one the thread runs on, or any idle VP that enters decide_vp_idle first
 * (all of them stay inside while idle_hold is set). */
START_TEST(dispatch_grace)
{
	start();
	if (marcel_nbvps() < 2) {
		marcel_end();
		return;
	}
	use_test();
	struct tpriv *first = tp;
	atomic_store(&idle_hold, 1);
	marcel_attr_t a = ma_test_attr_on_vp(other_vp());
	marcel_t th;
	ck_assert_int_eq(marcel_create(&th, &a, idle_in_hook, NULL), 0);
	wait_flag(&idle_inside, 1);
	ck_assert_ptr_eq(atomic_load(&idle_priv), first);
	use_null();
	/* Another switch sweeps too: still held, and so is the block retired meanwhile (a
	 * grace period waits for the VPs, whatever block they hold). */
	use_test();
	use_null();
	ck_assert_int_eq(tinits, 2);
	ck_assert_int_eq(texits, 0);
	ck_assert_uint_eq(first->magic, TMAGIC);
	atomic_store(&idle_hold, 0);
	wait_flag(&idle_inside, 0);
	ck_assert_int_eq(marcel_join(th, NULL), 0);
	/* Left: a later sweep (a switch) frees both. */
	sweep_until(2);
	ck_assert_int_eq(tinits, 2);
	marcel_end();
	ck_assert_int_eq(texits, 2);
}
END_TEST

static void populate(TCase *tc)
{
	tcase_add_test(tc, tree_unwoken);
	tcase_add_test(tc, tree_deep);
	tcase_add_test(tc, private_view);
	tcase_add_test(tc, outer_view);
	tcase_add_test(tc, items_shape);
	tcase_add_test(tc, placed_view);
	tcase_add_test(tc, tree_woken_items);
	tcase_add_test(tc, items_idle);
	tcase_add_test(tc, burst_move_place);
	tcase_add_test(tc, gather);
	tcase_add_test(tc, unplace_place_quiet);
	tcase_add_test(tc, stale);
	tcase_add_test(tc, steal);
	tcase_add_test(tc, vp_view);
	tcase_add_test(tc, pick_view);
	tcase_add_test(tc, wake);
	tcase_add_test(tc, memory);
	tcase_add_test(tc, thread_view);
	tcase_add_test(tc, dispatch_submit);
	tcase_add_test(tc, dispatch_tick_shake_start);
	tcase_add_test(tc, dispatch_heartbeat);
	tcase_add_test(tc, pick_load);
	tcase_add_test(tc, chains);
	tcase_add_test(tc, dispatch_pick);
	tcase_add_test(tc, dispatch_vp_idle_stray);
	tcase_add_test(tc, dispatch_switch);
	tcase_add_test(tc, dispatch_grace);
	tcase_add_test(tc, null_decides);
}

int main(void)
{
	Suite *s = suite_create("view");
	ma_test_add_both(s, "view", populate, 60);
	return ma_test_run(s);
}
