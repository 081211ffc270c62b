/*
 * contention: threads that lean on the same resource of an SMT core (its floating-point
 * units, its caches, its load and store ports) are kept off the same core, after the 001
 * seed (Intel's Micro-Architectural Scheduling Assist, MASA): two integer and two
 * floating-point programs on two Hyper-Threaded packages ran 12% faster paired
 * (INT,FP)(INT,FP) than (INT,INT)(FP,FP).
 *
 * Each thread's load metrics (ma_vnode.metric, MA_VIEW_METRICS: the hardware counters'
 * measure, else the application's hint, marcel/metrics.c) are normalised by a reference
 * per metric, the rate at which one thread alone keeps that resource busy (MASA's
 * "execution resource limit", measured at its load calibration): the calibration, in
 * ma_ct_cal below. A core's load on a metric is the sum over the threads on its VPs.
 *
 * - Placement (decide_start, decide_submit): the bubbles of the decision are burst where
 *   they stand, whatever their scheduling level (threads are placed one by one; a bubble
 *   fixed on an item stays there whole), and their threads go to the VPs' own queues,
 *   heaviest first (the weighted sum of their normalised metrics), each to a core with
 *   the fewest threads per VP (whole idle cores before idle siblings, as the kernel
 *   already did for MASA), among those to the one whose threads it contends with least
 *   (the sum over metrics of weight x its load x the core's), then beside its bubble's
 *   other threads, then the lowest. So the heaviest user of a resource is paired with
 *   the lightest. A submit counts what the VPs already run; it does not see the others'
 *   metrics (its view is the bubble's subtree): the heartbeat evens that out.
 * - Rebalancing (decide_tick, the heartbeat, on a view of the whole tree): metric by
 *   metric in the calibrated priority, when some core's load exceeds the resource's
 *   limit and the imbalance between the most and the least loaded cores, MASA's
 *   (max - min) / 2 taken as a share of their mean, reaches 25%, the swap of a thread of
 *   the one with a thread of the other (or the move to a free VP) that evens them most
 *   is made, if it evens them by MA_CT_MIN_GAIN at least and leaves every other
 *   resource of both cores under its limit or no worse than it was (MASA's projected-
 *   load check). A swapped thread is not moved again for MA_CT_HOLD_BEATS beats: with
 *   the strict gain, that is what keeps two metrics from passing threads back and forth.
 *
 * With no thread carrying a metric, or no core with SMT siblings below the decision, it
 * is spread (strategies/ma_spread.h): same hooks, same decisions, plus the heartbeat,
 * which beats while threads live so that metrics given later are acted on. Everything is
 * decided on views (tests/check_contention.c feeds them made by hand).
 */
#include <stdlib.h>
#include <string.h>
#include "ma_spread.h"

/* The heartbeat. MASA sampled every 5 s (at most every second) for SPEC runs of minutes;
 * a marcel program's phases are shorter. */
#define MA_CT_BEAT_US 100000ul
/* MASA's threshold ("an ad hoc value obtained by experiments"). */
#define MA_CT_THRESHOLD 0.25
/* A swap must narrow the gap between the two cores by this much (in normalised load, a
 * tenth of one thread at its resource's limit): no swap for noise. */
#define MA_CT_MIN_GAIN 0.1
/* Beats a swapped thread stays where the swap put it. */
#define MA_CT_HOLD_BEATS 10u
/* Swapped threads remembered; past that, the oldest hold is forgotten. */
#define MA_CT_MAX_HELD 64

/*
 * The calibration. ref: the reference rate (events per 1000 instructions) a metric is
 * divided by, a thread that keeps the resource busy alone: one floating-point operation
 * in four instructions, 20 cache misses and 400 data reads per 1000 instructions (round
 * figures of FP-, miss- and memory-bound codes; the seed's own counts were lost from its
 * text). weight: the cost of sharing that resource per unit of normalised load; the seed's
 * calibration found an L2 miss 1.03 times as costly as an FP micro-op. Its prototype used
 * those two metrics only: memory operations weigh half, an assumption. The priority in
 * which the rebalancing looks at them follows the weights (misses before FP, as the seed
 * ordered them).
 */
static const struct {
	double ref, weight;
} ma_ct_cal[MA_VM_NB] = {
	[MA_VM_FP] = { 250, 1.0 },
	[MA_VM_MISS] = { 20, 1.03 },
	[MA_VM_MEMOP] = { 400, 0.5 },
};
static const unsigned ma_ct_order[MA_VM_NB] = { MA_VM_MISS, MA_VM_FP, MA_VM_MEMOP };

struct ma_ct_priv {
	struct ma_spread_priv spread;   /* spread's own block, for its decisions; its
					   `starting` also marks contention's gathering start */
	struct {
		uint64_t id, until_ns;
	} held[MA_CT_MAX_HELD];         /* threads swapped lately, and until when they stay */
	unsigned next_held;
};

/* ---- threads and their metrics ---- */

/* t's normalised metrics (0 for one not known). */
static void ma_ct_x(const struct ma_vnode *t, double x[MA_VM_NB])
{
	for (unsigned m = 0; m < MA_VM_NB; m++)
		x[m] = (t->metrics & (1u << m)) ? t->metric[m] / ma_ct_cal[m].ref : 0;
}

static double ma_ct_weighted(const double x[MA_VM_NB])
{
	double s = 0;
	for (unsigned m = 0; m < MA_VM_NB; m++)
		s += ma_ct_cal[m].weight * x[m];
	return s;
}

/* The cost of t (metrics x) beside threads whose loads sum to `load`. */
static double ma_ct_cost(const double x[MA_VM_NB], const double load[MA_VM_NB])
{
	double s = 0;
	for (unsigned m = 0; m < MA_VM_NB; m++)
		s += ma_ct_cal[m].weight * x[m] * load[m];
	return s;
}

/* A walk of the subtrees of tops[0..n), in pre-order, with its own stack (decisions may
 * be made on a preempted thread's stack, and trees nest deep): each node goes to visit,
 * whose non-zero return skips its members. 0, or -1 if memory ran out. */
static int ma_ct_walk(const struct ma_vnode *const *tops, unsigned n,
		      int (*visit)(const struct ma_vnode *x, void *arg), void *arg)
{
	unsigned cap = n > 64 ? n : 64, k = 0;
	const struct ma_vnode **st = malloc(cap * sizeof(*st));
	if (!st)
		return -1;
	for (unsigned i = n; i-- > 0;)
		st[k++] = tops[i];
	while (k) {
		const struct ma_vnode *x = st[--k];
		if (visit(x, arg) || !x->is_bubble)
			continue;
		if (k + x->nb_children > cap) {
			unsigned more = 2 * (k + x->nb_children);
			const struct ma_vnode **s = realloc(st, more * sizeof(*st));
			if (!s) {
				free(st);
				return -1;
			}
			st = s;
			cap = more;
		}
		for (unsigned i = x->nb_children; i-- > 0;)
			st[k++] = x->children[i];
	}
	free(st);
	return 0;
}

static int ma_ct_visit_metrics(const struct ma_vnode *x, void *arg)
{
	if (!x->is_bubble && x->metrics && ma_spread_wants(x))
		*(int *)arg = 1;
	return 0;
}

/* Whether a thread of the subtrees of tops[0..n) carries a metric. */
static int ma_ct_any_metrics(const struct ma_vnode *const *tops, unsigned n)
{
	int any = 0;
	if (ma_ct_walk(tops, n, ma_ct_visit_metrics, &any))
		return 0;
	return any;
}

/* ---- cores ---- */

/* The VPs below queue P, by core (the SMT domain: the item of kind core on their path). */
struct ma_ct_cores {
	unsigned nb;              /* cores */
	unsigned *vp;             /* the VPs, core after core, in VP order within each */
	unsigned *first, *count;  /* per core: its VPs in vp[] */
	unsigned *occ;            /* per VP (as in vp[]): threads there */
	unsigned *used;           /* per core: threads there */
	int *core_of;             /* per queue (items, then VPs' own): its core, -1 */
	int *pack;                /* per core: the item above it (where bubble mates count) */
	double *load;             /* per core: MA_VM_NB sums of normalised metrics */
	unsigned char smt;        /* some core has two VPs or more */
};

static void ma_ct_cores_free(struct ma_ct_cores *c)
{
	free(c->vp);
	free(c->core_of);
	free(c->load);
	memset(c, 0, sizeof(*c));
}

/* The cores below queue P. 0, or -1 if memory ran out. */
static int ma_ct_cores_make(struct ma_ct_cores *c, const struct ma_view *v, int P)
{
	memset(c, 0, sizeof(*c));
	unsigned nv = v->nb_vps, nq = v->nb_items + nv;
	c->vp = calloc(5 * (size_t)nv + 1, sizeof(unsigned));
	c->core_of = malloc((nq + nv) * sizeof(int));
	c->load = calloc((size_t)nv * MA_VM_NB + 1, sizeof(double));
	if (!c->vp || !c->core_of || !c->load) {
		ma_ct_cores_free(c);
		return -1;
	}
	c->first = c->vp + nv;
	c->count = c->first + nv;
	c->occ = c->count + nv;
	c->used = c->occ + nv;
	c->pack = c->core_of + nq;
	for (unsigned q = 0; q < nq; q++)
		c->core_of[q] = -1;
	for (unsigned vp = 0; vp < nv; vp++) {
		if (!ma_view_sees(v, P, vp))
			continue;
		int core = ma_topo_path_item(v->topo, vp, MA_LEVEL_CORE);
		if (c->core_of[core] < 0) {
			c->core_of[core] = (int)c->nb;
			c->pack[c->nb] = v->items[core].parent >= 0 ? v->items[core].parent : core;
			c->nb++;
		}
		c->count[c->core_of[core]]++;
	}
	for (unsigned k = 1; k < c->nb; k++)
		c->first[k] = c->first[k - 1] + c->count[k - 1];
	for (unsigned vp = 0; vp < nv; vp++) {
		if (!ma_view_sees(v, P, vp))
			continue;
		unsigned k = (unsigned)c->core_of[ma_topo_path_item(v->topo, vp, MA_LEVEL_CORE)];
		c->vp[c->first[k] + c->used[k]++] = vp;
		c->core_of[ma_view_vp_queue(v, vp)] = (int)k;
	}
	for (unsigned k = 0; k < c->nb; k++) {
		c->smt |= c->count[k] > 1;
		c->used[k] = 0;
	}
	return 0;
}

/* ---- placement ---- */

/* Threads VP vp has now, as the counters tell: those of its own queue, or of its leaf if
 * no other VP serves that, and the one it runs if it belongs higher up. */
static unsigned ma_ct_vp_load(const struct ma_view *v, unsigned vp)
{
	int q = ma_view_vp_queue(v, vp), leaf = v->items[q].parent;
	const struct ma_vitem *x = leaf >= 0 && v->items[leaf].nb_vps == 1 ? &v->items[leaf] : &v->items[q];
	unsigned long n = ma_vitem_load(x);
	if (!n && v->items[q].busy)
		n = 1;
	return (unsigned)n;
}

struct ma_ct_place {
	const struct ma_view *v;
	int P;                        /* the queue the decision is about */
	struct ma_dlist *out;
	const struct ma_vnode **threads;
	unsigned nb, cap;
	int failed;
};

/* Bubbles burst on P top down (a closed woken one that may move), threads collected. */
static int ma_ct_visit_place(const struct ma_vnode *x, void *arg)
{
	struct ma_ct_place *p = arg;
	if (!x->is_bubble) {
		if (!ma_spread_wants(x) || x->pinned || x->fixed_item >= 0)
			return 0;
		if (p->nb == p->cap) {
			unsigned cap = p->cap ? 2 * p->cap : 64;
			const struct ma_vnode **t = realloc(p->threads, cap * sizeof(*t));
			if (!t) {
				p->failed = 1;
				return 0;
			}
			p->threads = t;
			p->cap = cap;
		}
		p->threads[p->nb++] = x;
		return 0;
	}
	/* A fixed bubble stays where it is pinned, whole; one never woken is not scheduled. */
	if (x->fixed_item >= 0 || !x->woken)
		return 1;
	if (x->status == MA_V_CLOSED)
		(void)ma_dlist_add(p->out, MA_D_BURST, x->id, p->P);
	return 0;
}

struct ma_ct_entry {
	const struct ma_vnode *t;
	double x[MA_VM_NB];
	double weight;
	unsigned order;
};

static int ma_ct_heavier(const void *a, const void *b)
{
	const struct ma_ct_entry *x = a, *y = b;
	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Threads of entry i's bubble already given to a core below `pack`. */
static unsigned ma_ct_mates(const struct ma_ct_cores *c, const struct ma_ct_entry *e, const int *given,
			    unsigned i, int pack)
{
	unsigned n = 0;
	for (unsigned j = 0; j < i; j++)
		if (e[j].t->parent == e[i].t->parent && c->pack[given[j]] == pack)
			n++;
	return n;
}

/* Whether core k suits entry i better than core `best` (-1: none yet): fewer threads per
 * VP (whole idle cores first), then less contention, then more of its bubble's threads
 * beside it; the lower core on a tie. */
static int ma_ct_better(const struct ma_ct_cores *c, const struct ma_ct_entry *e, const int *given, unsigned i,
			unsigned k, int best)
{
	if (best < 0)
		return 1;
	unsigned b = (unsigned)best;
	unsigned long fk = (unsigned long)c->used[k] * c->count[b], fb = (unsigned long)c->used[b] * c->count[k];
	if (fk != fb)
		return fk < fb;
	double ck = ma_ct_cost(e[i].x, &c->load[k * MA_VM_NB]), cb = ma_ct_cost(e[i].x, &c->load[b * MA_VM_NB]);
	if (ck < cb - 1e-12 || ck > cb + 1e-12)
		return ck < cb;
	return ma_ct_mates(c, e, given, i, c->pack[k]) > ma_ct_mates(c, e, given, i, c->pack[b]);
}

/*
 * Places the threads of the subtrees tops[0..n) below queue P: the bubbles burst on P,
 * then each thread moved to a VP's own queue. `counted`: the VPs' current loads count as
 * occupied (a submit: what is there stays; a start: everything is being placed). 0, or
 * -1 when it cannot decide (memory; no SMT core below P): nothing was appended then.
 */
static int ma_ct_place(const struct ma_view *v, int P, const struct ma_vnode *const *tops, unsigned n, int counted,
		       struct ma_dlist *out)
{
	struct ma_ct_cores c;
	if (ma_ct_cores_make(&c, v, P))
		return -1;
	if (!c.smt || !c.nb) {
		ma_ct_cores_free(&c);
		return -1;
	}
	unsigned mark = out->n;
	struct ma_ct_place p = { .v = v, .P = P, .out = out };
	if (ma_ct_walk(tops, n, ma_ct_visit_place, &p) || p.failed) {
		free(p.threads);
		ma_ct_cores_free(&c);
		out->n = mark;
		return -1;
	}
	struct ma_ct_entry *e = malloc((p.nb ? p.nb : 1) * (sizeof(*e) + sizeof(int)));
	if (!e) {
		free(p.threads);
		ma_ct_cores_free(&c);
		out->n = mark;
		return -1;
	}
	int *given = (int *)(void *)(e + p.nb);
	for (unsigned i = 0; i < p.nb; i++) {
		e[i].t = p.threads[i];
		ma_ct_x(e[i].t, e[i].x);
		e[i].weight = ma_ct_weighted(e[i].x);
		e[i].order = i;
	}
	qsort(e, p.nb, sizeof(*e), ma_ct_heavier);
	if (counted)
		for (unsigned k = 0; k < c.nb; k++)
			for (unsigned i = 0; i < c.count[k]; i++) {
				unsigned o = ma_ct_vp_load(v, c.vp[c.first[k] + i]);
				c.occ[c.first[k] + i] = o;
				c.used[k] += o;
			}
	for (unsigned i = 0; i < p.nb; i++) {
		int best = -1;
		for (unsigned k = 0; k < c.nb; k++)
			if (ma_ct_better(&c, e, given, i, k, best))
				best = (int)k;
		unsigned k = (unsigned)best, at = c.first[k];
		for (unsigned j = 1; j < c.count[k]; j++)
			if (c.occ[c.first[k] + j] < c.occ[at])
				at = c.first[k] + j;
		given[i] = best;
		c.used[k]++;
		c.occ[at]++;
		for (unsigned m = 0; m < MA_VM_NB; m++)
			c.load[k * MA_VM_NB + m] += e[i].x[m];
		int q = ma_view_vp_queue(v, c.vp[at]);
		if (e[i].t->item != q)
			(void)ma_dlist_add(out, MA_D_MOVE, e[i].t->id, q);
	}
	free(e);
	free(p.threads);
	ma_ct_cores_free(&c);
	return 0;
}

/* ---- the hooks ---- */

static void ma_ct_priv_exit(void *priv)
{
	struct ma_ct_priv *p = priv;
	ma_spread_priv_exit(&p->spread);
}

static void ma_ct_start(const struct ma_view *v, void *priv, struct ma_dlist *out)
{
	struct ma_ct_priv *p = priv;
	const struct ma_vnode *r = v->root;
	if (!r)
		return;
	/* The heartbeat watches for metrics from now on, whoever decides. */
	out->beat = 1;
	if (!ma_ct_any_metrics(&r, 1)) {
		ma_spread_decide_start(v, &p->spread, out, 0);
		return;
	}
	/* As spread: the root's opened members are gathered first, and those that close at
	 * once wait on the machine's queue (the nested submits) until the next round. */
	if (ma_spread_gather_round(v, &p->spread, out))
		return;
	p->spread.valid = 0;
	unsigned n;
	const struct ma_vnode **tops = ma_spread_tops(r, &n);
	if (!tops)
		return; /* out of memory: everything stays where it was, still scheduled */
	if (ma_ct_place(v, 0, tops, n, 0, out))
		ma_spread_decide_start(v, &p->spread, out, 0);
	free(tops);
}

static void ma_ct_submit(const struct ma_view *v, void *priv, struct ma_dlist *out)
{
	struct ma_ct_priv *p = priv;
	const struct ma_vnode *b = v->root;
	if (!b)
		return;
	out->beat = 1;
	if (!ma_ct_any_metrics(&b, 1)) {
		ma_spread_decide_submit(v, &p->spread, out, 0);
		return;
	}
	int pq = b->home >= 0 ? b->home : 0;
	if (!v->nested)
		p->spread.starting = 0;
	/* Before sched_begin, while start gathers, or below a VP's own queue: where its
	 * parent is, as spread. */
	if (!v->begun || p->spread.starting || pq >= (int)v->nb_items) {
		(void)ma_dlist_add(out, MA_D_PLACE, b->id, pq);
		return;
	}
	if (ma_ct_place(v, pq, &b, 1, 1, out)) {
		ma_spread_decide_submit(v, &p->spread, out, 0);
		return;
	}
	p->spread.valid = 0;
}

/* ---- rebalancing ---- */

static int ma_ct_held(const struct ma_ct_priv *p, uint64_t id, uint64_t now)
{
	for (unsigned i = 0; i < MA_CT_MAX_HELD; i++)
		if (p->held[i].id == id && p->held[i].until_ns > now)
			return 1;
	return 0;
}

static void ma_ct_hold(struct ma_ct_priv *p, uint64_t id, uint64_t until)
{
	p->held[p->next_held].id = id;
	p->held[p->next_held].until_ns = until;
	p->next_held = (p->next_held + 1) % MA_CT_MAX_HELD;
}

/* A thread the rebalancing may move: started, not ended, on a queue one VP serves (a
 * VP's own, where the placement puts threads, or a leaf item, where spread does). */
struct ma_ct_on {
	const struct ma_vnode *t;
	double x[MA_VM_NB];
	unsigned vp;
	int core;
};

struct ma_ct_collect {
	const struct ma_view *v;
	const struct ma_ct_cores *c;
	struct ma_ct_on *on;
	unsigned nb, cap;
	unsigned nb_alive;        /* threads started and not ended, wherever they are */
	int any, failed;
};

static int ma_ct_visit_on(const struct ma_vnode *x, void *arg)
{
	struct ma_ct_collect *k = arg;
	if (x->is_bubble || !ma_spread_wants(x))
		return 0;
	k->nb_alive++;
	k->any |= x->metrics != 0;
	if (x->item < 0 || x->pinned || x->fixed_item >= 0)
		return 0;
	/* Its VP: that of its VP's own queue, or of an item only one VP serves (where spread
	 * puts threads). */
	const struct ma_view *v = k->v;
	unsigned vp;
	if (x->item >= (int)v->nb_items)
		vp = (unsigned)(x->item - (int)v->nb_items);
	else if (v->items[x->item].nb_vps == 1)
		vp = v->items[x->item].first_vp;
	else
		return 0;
	int core = vp < v->nb_vps ? k->c->core_of[ma_view_vp_queue(v, vp)] : -1;
	if (core < 0)
		return 0;
	if (k->nb == k->cap) {
		unsigned cap = k->cap ? 2 * k->cap : 64;
		struct ma_ct_on *o = realloc(k->on, cap * sizeof(*o));
		if (!o) {
			k->failed = 1;
			return 0;
		}
		k->on = o;
		k->cap = cap;
	}
	struct ma_ct_on *o = &k->on[k->nb++];
	o->t = x;
	ma_ct_x(x, o->x);
	o->vp = vp;
	o->core = core;
	return 0;
}

/* Whether moving loads (a on core A, b on core B; b NULL: a moves alone) keeps every
 * metric of both cores under its limit (1, normalised) or no worse than the worse of the
 * two was (MASA's projected-load check). */
static int ma_ct_projected_ok(const double *LA, const double *LB, const double *xa, const double *xb)
{
	for (unsigned m = 0; m < MA_VM_NB; m++) {
		double d = xa[m] - (xb ? xb[m] : 0);
		double na = LA[m] - d, nb = LB[m] + d, before = LA[m] > LB[m] ? LA[m] : LB[m];
		double worst = na > nb ? na : nb, bound = before > 1 ? before : 1;
		if (worst > bound + 1e-9)
			return 0;
	}
	return 1;
}

static void ma_ct_rebalance(const struct ma_view *v, struct ma_ct_priv *p, struct ma_dlist *out)
{
	const struct ma_vnode *r = v->root;
	struct ma_ct_cores c;
	if (!r || ma_ct_cores_make(&c, v, 0))
		return;
	struct ma_ct_collect k = { .v = v, .c = &c };
	if (ma_ct_walk(&r, 1, ma_ct_visit_on, &k) || k.failed) {
		free(k.on);
		ma_ct_cores_free(&c);
		return;
	}
	/* The heartbeat goes on while threads run (their metrics may come at any time); a
	 * bubble woken later starts it again. */
	out->beat = (unsigned char)(k.nb_alive != 0);
	double *L = c.load;
	for (unsigned i = 0; i < k.nb; i++)
		for (unsigned m = 0; m < MA_VM_NB; m++)
			L[k.on[i].core * MA_VM_NB + m] += k.on[i].x[m];
	/* VPs with a thread of their own. */
	unsigned char *busy = calloc(v->nb_vps ? v->nb_vps : 1, 1);
	if (!busy || !k.any || !c.smt) {
		free(busy);
		free(k.on);
		ma_ct_cores_free(&c);
		return;
	}
	/* A VP is free to move a thread to if nothing runs or waits there either. */
	for (unsigned vp = 0; vp < v->nb_vps; vp++)
		busy[vp] = ma_ct_vp_load(v, vp) != 0;
	for (unsigned i = 0; i < k.nb; i++)
		busy[k.on[i].vp] = 1;
	uint64_t until = v->now_ns + MA_CT_HOLD_BEATS * MA_CT_BEAT_US * 1000ull;
	for (unsigned oi = 0; oi < MA_VM_NB; oi++) {
		unsigned m = ma_ct_order[oi];
		int hi = -1, lo = -1;
		for (unsigned x = 0; x < c.nb; x++) {
			if (c.count[x] < 2)
				continue;
			if (hi < 0 || L[x * MA_VM_NB + m] > L[(unsigned)hi * MA_VM_NB + m])
				hi = (int)x;
			if (lo < 0 || L[x * MA_VM_NB + m] < L[(unsigned)lo * MA_VM_NB + m])
				lo = (int)x;
		}
		if (hi < 0 || hi == lo)
			continue;
		double *LH = &L[(unsigned)hi * MA_VM_NB], *LL = &L[(unsigned)lo * MA_VM_NB];
		/* No interference on this resource, or no imbalance worth a swap. */
		if (LH[m] <= 1 || LH[m] - LL[m] < MA_CT_THRESHOLD * (LH[m] + LL[m]))
			continue;
		double gap = LH[m] - LL[m], best_gap = gap - MA_CT_MIN_GAIN;
		int ba = -1, bb = -1;
		unsigned free_vp = 0;
		int has_free = 0;
		for (unsigned i = 0; i < c.count[(unsigned)lo]; i++)
			if (!busy[c.vp[c.first[lo] + i]]) {
				free_vp = c.vp[c.first[lo] + i];
				has_free = 1;
				break;
			}
		for (unsigned a = 0; a < k.nb; a++) {
			if (k.on[a].core != hi || ma_ct_held(p, k.on[a].t->id, v->now_ns))
				continue;
			/* b == k.nb: the move of a alone, to a free VP of the other core. */
			for (unsigned b = 0; b <= k.nb; b++) {
				const double *xb = NULL;
				if (b < k.nb) {
					if (k.on[b].core != lo || ma_ct_held(p, k.on[b].t->id, v->now_ns))
						continue;
					xb = k.on[b].x;
				} else if (!has_free) {
					continue;
				}
				double d = k.on[a].x[m] - (xb ? xb[m] : 0);
				double ng = (LH[m] - d) - (LL[m] + d);
				if (ng < 0)
					ng = -ng;
				if (ng >= best_gap - 1e-12 || !ma_ct_projected_ok(LH, LL, k.on[a].x, xb))
					continue;
				best_gap = ng;
				ba = (int)a;
				bb = (int)b;
			}
		}
		if (ba < 0)
			continue;
		struct ma_ct_on *A = &k.on[ba];
		unsigned avp = A->vp, bvp = bb < (int)k.nb ? k.on[bb].vp : free_vp;
		(void)ma_dlist_add(out, MA_D_MOVE, A->t->id, ma_view_vp_queue(v, bvp));
		ma_ct_hold(p, A->t->id, until);
		for (unsigned x = 0; x < MA_VM_NB; x++) {
			LH[x] -= A->x[x];
			LL[x] += A->x[x];
		}
		A->vp = bvp;
		A->core = lo;
		if (bb < (int)k.nb) {
			struct ma_ct_on *B = &k.on[bb];
			(void)ma_dlist_add(out, MA_D_MOVE, B->t->id, ma_view_vp_queue(v, avp));
			ma_ct_hold(p, B->t->id, until);
			for (unsigned x = 0; x < MA_VM_NB; x++) {
				LH[x] += B->x[x];
				LL[x] -= B->x[x];
			}
			B->vp = avp;
			B->core = hi;
		} else {
			busy[avp] = 0;
			busy[bvp] = 1;
		}
	}
	free(busy);
	free(k.on);
	ma_ct_cores_free(&c);
}

static void ma_ct_tick(const struct ma_view *v, void *priv, struct ma_dlist *out)
{
	/* A bubble's own regeneration period ran out: gathered, it is placed again. */
	if (v->root && v->root->is_bubble && v->root->timeslice_us) {
		(void)ma_dlist_add(out, MA_D_GATHER, v->root->id, -1);
		return;
	}
	ma_ct_rebalance(v, priv, out);
}

const struct ma_strategy ma_strategy_contention = {
	.name = "contention",
	.description = "SMT siblings get threads of complementary load metrics (FP, cache misses, memory "
		       "operations); spread without metrics",
	/* The counters (for submit's occupancy), the threads' metrics, and the whole tree at
	 * the heartbeat. */
	.view_detail = MA_VIEW_METRICS | MA_VIEW_TREE,
	.heartbeat_us = MA_CT_BEAT_US,
	.priv_size = sizeof(struct ma_ct_priv),
	.priv_exit = ma_ct_priv_exit,
	.decide_start = ma_ct_start,
	.decide_submit = ma_ct_submit,
	.decide_tick = ma_ct_tick,
};
