/*
 * Placement on asymmetric machines, shared by pa and mintlp (ma_amp.h says the policy).
 * A beat scans the tree once: the applications and their parallelism, the runnable
 * threads as candidates with the priority the policy gives them; sorts the candidates;
 * gives the fast VPs to the first ones, keeping each holder where it is when it stays;
 * moves the others off the fast VPs' queues.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "ma_amp.h"

#define MA_AMP_NONE UINT_MAX /* never on a fast core */

struct ma_amp_app {
	uint64_t id;
	unsigned tlp;                   /* threads ready or running, not spinning */
	unsigned threads;               /* threads alive */
};

struct ma_amp_cand {
	const struct ma_vnode *n;
	unsigned app;
	unsigned prio;                  /* lower first; MA_AMP_NONE: never on a fast core */
	unsigned rank;                  /* among equal priorities: 0 a holder with time left,
					   1 a thread waiting, 2 a holder whose time is up */
	int holds;                      /* the fast VP (index in fast[]) it holds, -1 */
	unsigned char runnable;         /* ready or running, not spinning, not pinned */
	int to;                         /* the fast VP (index) given this beat, -1 */
};

struct ma_amp_scan {
	const struct ma_view *v;
	struct ma_amp_priv *p;
	enum ma_amp_policy pol;
	unsigned char *is_fast;         /* per VP */
	unsigned fast[MA_AMP_MAX_FAST]; /* the fast VPs, in VP order */
	unsigned nb_fast;
	struct ma_amp_app *apps;
	unsigned nb_apps, cap_apps;
	struct ma_amp_cand *c;          /* every thread on a queue or running, runnable or not */
	unsigned nb, cap;
	int failed;
};

/* A VP's place among the kinds: hwloc's efficiency, or the kind's rank if hwloc could
 * not rank them (it lists kinds from the least to the most performant); -1 unknown. */
static int ma_amp_vp_rank(const struct ma_topo *t, unsigned vp)
{
	int k = t->vps[vp].leaf->cpukind;
	if (k < 0 || (unsigned)k >= t->nb_cpukinds)
		return -1;
	return t->cpukinds[k].efficiency >= 0 ? t->cpukinds[k].efficiency : k;
}

/* The fast VPs: those of the most performant kind, if the VPs have more than one. */
static void ma_amp_fast_vps(struct ma_amp_scan *s)
{
	const struct ma_view *v = s->v;
	int lo = INT_MAX, hi = INT_MIN;
	for (unsigned vp = 0; vp < v->nb_vps; vp++) {
		int r = ma_amp_vp_rank(v->topo, vp);
		lo = r < lo ? r : lo;
		hi = r > hi ? r : hi;
	}
	s->nb_fast = 0;
	for (unsigned vp = 0; vp < v->nb_vps; vp++) {
		s->is_fast[vp] = lo < hi && ma_amp_vp_rank(v->topo, vp) == hi && s->nb_fast < MA_AMP_MAX_FAST;
		if (s->is_fast[vp])
			s->fast[s->nb_fast++] = vp;
	}
}

/* The queue a thread leaving the fast cores goes to: its memory domain (the machine's
 * child holding VP vp), unless that domain has only fast VPs or is the VP's own leaf on
 * a flat machine: then the machine's. */
static int ma_amp_domain(const struct ma_amp_scan *s, unsigned vp)
{
	const struct ma_level *l = s->v->topo->vps[vp].leaf;
	if (!l->parent)
		return 0;
	while (l->parent->parent)
		l = l->parent;
	if (l->nb_vps < 2)
		return 0;
	for (unsigned u = l->first_vp; u < l->first_vp + l->nb_vps && u < s->v->nb_vps; u++)
		if (!s->is_fast[u])
			return (int)l->id;
	return 0;
}

/* Where n last ran, -1 if never (or not a VP of this view). */
static int ma_amp_last_vp(const struct ma_amp_scan *s, const struct ma_vnode *n)
{
	return n->last_vp >= 0 && (unsigned)n->last_vp < s->v->nb_vps ? n->last_vp : -1;
}

static int ma_amp_grow(void **a, unsigned *cap, size_t size)
{
	unsigned c = *cap ? 2 * *cap : 64;
	void *x = realloc(*a, c * size);
	if (!x)
		return -1;
	*a = x;
	*cap = c;
	return 0;
}

/* The threads of n's subtree as candidates of application `app` (-1: each thread under
 * the root is one of its own; a bubble under the root starts one). */
static void ma_amp_walk(struct ma_amp_scan *s, const struct ma_vnode *n, int app, int top)
{
	if (s->failed)
		return;
	if (n->is_bubble) {
		if (!top && app < 0) {
			if (s->nb_apps == s->cap_apps &&
			    ma_amp_grow((void **)&s->apps, &s->cap_apps, sizeof(*s->apps))) {
				s->failed = 1;
				return;
			}
			s->apps[s->nb_apps] = (struct ma_amp_app){ .id = n->id };
			app = (int)s->nb_apps++;
		}
		for (unsigned i = 0; i < n->nb_children; i++)
			ma_amp_walk(s, n->children[i], app, 0);
		return;
	}
	if (n->state == MA_V_BORN || n->state == MA_V_DEAD)
		return;
	if (app < 0) {
		if (s->nb_apps == s->cap_apps && ma_amp_grow((void **)&s->apps, &s->cap_apps, sizeof(*s->apps))) {
			s->failed = 1;
			return;
		}
		s->apps[s->nb_apps] = (struct ma_amp_app){ .id = n->id };
		app = (int)s->nb_apps++;
	}
	struct ma_amp_app *a = &s->apps[app];
	a->threads++;
	int runnable = (n->state == MA_V_READY || n->state == MA_V_RUNNING) && !n->spinning;
	a->tlp += runnable;
	if (s->nb == s->cap && ma_amp_grow((void **)&s->c, &s->cap, sizeof(*s->c))) {
		s->failed = 1;
		return;
	}
	int movable = runnable && n->fixed_item < 0;
	s->c[s->nb++] = (struct ma_amp_cand){ .n = n, .app = (unsigned)app, .prio = movable ? 0 : MA_AMP_NONE,
					      .runnable = (unsigned char)movable, .holds = -1, .to = -1 };
}

/* pa's serial-phase bookkeeping: when application `id` began its serial phase (now if it
 * just did). Entries of applications no longer serial are dropped by ma_amp_serial_keep. */
static unsigned ma_amp_serial_since(struct ma_amp_priv *p, uint64_t id)
{
	for (unsigned i = 0; i < p->nb_serial; i++)
		if (p->serial[i].app == id)
			return p->serial[i].since;
	if (p->nb_serial < MA_AMP_MAX_APPS)
		p->serial[p->nb_serial++] = (typeof(p->serial[0])){ .app = id, .since = p->beat };
	return p->beat;
}

static void ma_amp_serial_keep(struct ma_amp_scan *s)
{
	struct ma_amp_priv *p = s->p;
	unsigned k = 0;
	for (unsigned i = 0; i < p->nb_serial; i++) {
		int still = 0;
		for (unsigned a = 0; a < s->nb_apps && !still; a++)
			still = s->apps[a].id == p->serial[i].app && s->apps[a].threads > 1 && s->apps[a].tlp == 1;
		if (still)
			p->serial[k++] = p->serial[i];
	}
	p->nb_serial = k;
}

/*
 * The priorities. pa: a serial phase's thread (an application of several threads with
 * one runnable) first, for MA_AMP_BOOST_BEATS; then the master threads of applications
 * whose TLP is at most hp_threshold (fast VPs + 1); then those applications' other
 * threads; the others never. A master of a highly parallel application gets no fast
 * core in a parallel phase (the seed's PA-RTX gives it one whenever it runs): its fellows
 * on slow cores set the pace at the next barrier, and the core is worth more to a
 * program of low parallelism (tools/sim-amp: 17% slower on 1FC-3SC otherwise). Its
 * serial phases are seen as such, spinning waiters not counted.
 * mintlp: every application by its TLP, the lowest first.
 */
static void ma_amp_prioritise(struct ma_amp_scan *s)
{
	unsigned hp_threshold = s->nb_fast + 1;
	for (unsigned i = 0; i < s->nb; i++) {
		struct ma_amp_cand *c = &s->c[i];
		if (c->prio == MA_AMP_NONE)
			continue;
		const struct ma_amp_app *a = &s->apps[c->app];
		if (s->pol == MA_AMP_MINTLP) {
			c->prio = a->tlp;
			continue;
		}
		if (a->threads > 1 && a->tlp == 1 &&
		    s->p->beat - ma_amp_serial_since(s->p, a->id) < MA_AMP_BOOST_BEATS)
			c->prio = 0;
		else if (a->tlp <= hp_threshold)
			c->prio = c->n->master ? 1 : 2;
		else
			c->prio = MA_AMP_NONE;
	}
	if (s->pol == MA_AMP_PA)
		ma_amp_serial_keep(s);
}

/* Who holds a fast VP now: the thread given it, still scheduled on its queue. */
static void ma_amp_holders(struct ma_amp_scan *s)
{
	for (unsigned f = 0; f < s->nb_fast; f++) {
		uint64_t id = s->p->holder[f].id;
		int q = ma_view_vp_queue(s->v, s->fast[f]);
		for (unsigned i = 0; id && i < s->nb; i++)
			if (s->c[i].n->id == id && s->c[i].n->item == q) {
				s->c[i].holds = (int)f;
				int up = s->pol == MA_AMP_PA && s->p->beat - s->p->holder[f].since >= MA_AMP_BOOST_BEATS;
				s->c[i].rank = up ? 2 : 0;
			}
	}
	for (unsigned i = 0; i < s->nb; i++)
		if (s->c[i].holds < 0)
			s->c[i].rank = 1;
}

static int ma_amp_cmp(const void *x, const void *y)
{
	const struct ma_amp_cand *a = x, *b = y;
	if (a->prio != b->prio)
		return a->prio < b->prio ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	return a->n->id < b->n->id ? -1 : a->n->id > b->n->id;
}

/* The free fast VP nearest to where c last ran: in its memory domain if that has one.
 * Across domains a move costs the thread its caches (the seed measured up to 18% lost to
 * migrations on 1FC-12SC, where the fast core is alone on its chip); a thread crosses at
 * most once per turn (MA_AMP_BOOST_BEATS) each way, against a turn's worth of a core
 * twice as fast. */
static int ma_amp_pick_vp(const struct ma_amp_scan *s, const struct ma_amp_cand *c, const unsigned char *taken)
{
	const struct ma_topo *t = s->v->topo;
	int from = ma_amp_last_vp(s, c->n);
	int best = -1;
	unsigned best_d = UINT_MAX;
	for (unsigned f = 0; f < s->nb_fast; f++) {
		if (taken[f])
			continue;
		unsigned d = from >= 0 ? ma_topo_distance(t->vps[from].leaf, t->vps[s->fast[f]].leaf) : 0;
		if (d < best_d) {
			best_d = d;
			best = (int)f;
		}
	}
	return best;
}

/* The slow VP a thread not given a fast one runs on: where it is if that is a slow VP's
 * queue, else the least loaded slow VP of its memory domain (of the whole machine if its
 * domain has none). load[]: threads given each VP so far. */
static int ma_amp_slow_vp(const struct ma_amp_scan *s, const struct ma_amp_cand *c, const unsigned *load)
{
	const struct ma_view *v = s->v;
	int q = c->n->item;
	if (q >= (int)v->nb_items && q < (int)(v->nb_items + v->nb_vps) && !s->is_fast[q - (int)v->nb_items])
		return q - (int)v->nb_items;
	unsigned first = 0, n = v->nb_vps;
	int last = ma_amp_last_vp(s, c->n);
	if (last >= 0) {
		int d = ma_amp_domain(s, (unsigned)last);
		if (d > 0) {
			first = v->topo->levels[d].first_vp;
			n = v->topo->levels[d].nb_vps;
		}
	}
	int best = -1;
	for (unsigned u = first; u < first + n && u < v->nb_vps; u++)
		if (!s->is_fast[u] && (best < 0 || load[u] < load[best]))
			best = (int)u;
	return best;
}

/*
 * The fast VPs given out, then the decisions. The chosen go to their fast VP's queue. A
 * fast VP left without a candidate takes the best runnable thread left (a fast core never
 * idles while work waits: the seed's PA gives them to highly parallel applications
 * then). Every other thread, runnable or not, goes to a slow VP's own queue: left on a shared queue, it would be taken by a fast VP between two
 * of the chosen one's time slices (find_next lets a farther queue win one tie in
 * eight), and the chosen one would have the fast core only part of the time. The slow
 * VPs are balanced by the threads they hold, at each beat.
 */
static void ma_amp_assign(struct ma_amp_scan *s, struct ma_dlist *out)
{
	unsigned char taken[MA_AMP_MAX_FAST] = { 0 };
	unsigned given = 0;
	/* The holders that keep their VP come first in their priority: they are met before
	 * any waiting candidate of the same priority that could take it. */
	for (unsigned i = 0; i < s->nb && given < s->nb_fast; i++) {
		struct ma_amp_cand *c = &s->c[i];
		if (c->prio == MA_AMP_NONE)
			break;
		int f = c->holds >= 0 && !taken[c->holds] ? c->holds : ma_amp_pick_vp(s, c, taken);
		if (f < 0)
			continue;
		/* A holder pushed out by a better candidate frees its VP only if that one
		 * takes it: it may still get another. */
		if (c->holds >= 0 && f != c->holds)
			continue;
		c->to = f;
		taken[f] = 1;
		given++;
	}
	/* Fast VPs nobody was chosen for: their holders keep them, even blocked for a while
	 * (a thread of a highly parallel application waits at each barrier: moving it at
	 * every beat would only churn), for a turn at most; then the best runnable threads
	 * left. */
	for (int pass = 0; pass < 2; pass++)
		for (unsigned i = 0; i < s->nb && given < s->nb_fast; i++) {
			struct ma_amp_cand *c = &s->c[i];
			if (c->to >= 0 || c->n->fixed_item >= 0)
				continue;
			int f;
			if (!pass) {
				f = c->holds;
				if (f < 0 || taken[f] || s->p->beat - s->p->holder[f].since >= MA_AMP_BOOST_BEATS)
					continue;
			} else {
				if (!c->runnable)
					continue;
				f = ma_amp_pick_vp(s, c, taken);
				if (f < 0)
					continue;
			}
			c->to = f;
			taken[f] = 1;
			given++;
		}
	uint64_t old[MA_AMP_MAX_FAST];
	for (unsigned f = 0; f < s->nb_fast; f++) {
		old[f] = s->p->holder[f].id;
		s->p->holder[f].id = 0;
	}
	unsigned *load = calloc(s->v->nb_vps ? s->v->nb_vps : 1, sizeof(*load));
	if (!load)
		return;
	/* Threads already on a slow VP's queue stay: counted first, blocked ones too (they
	 * come back there). */
	for (unsigned i = 0; i < s->nb; i++) {
		int q = s->c[i].n->item - (int)s->v->nb_items;
		if (s->c[i].to < 0 && s->c[i].n->fixed_item < 0 && q >= 0 && (unsigned)q < s->v->nb_vps && !s->is_fast[q])
			load[q]++;
	}
	for (unsigned i = 0; i < s->nb; i++) {
		const struct ma_amp_cand *c = &s->c[i];
		if (c->to >= 0) {
			unsigned f = (unsigned)c->to;
			int q = ma_view_vp_queue(s->v, s->fast[f]);
			if (c->n->item != q)
				(void)ma_dlist_add(out, MA_D_MOVE, c->n->id, q);
			if (old[f] != c->n->id || c->holds != (int)f)
				s->p->holder[f].since = s->p->beat;
			s->p->holder[f].id = c->n->id;
			continue;
		}
		if (c->n->fixed_item >= 0)
			continue;
		/* Blocked ones too: each thread has a slow VP to come back to, and the slow VPs
		 * are balanced by the threads they hold, not by those that run at this beat. */
		int u = ma_amp_slow_vp(s, c, load);
		if (u < 0 || c->n->item == ma_view_vp_queue(s->v, (unsigned)u))
			continue;
		(void)ma_dlist_add(out, MA_D_MOVE, c->n->id, ma_view_vp_queue(s->v, (unsigned)u));
		load[u]++;
	}
	free(load);
}

static void ma_amp_decide(const struct ma_view *v, struct ma_amp_priv *p, struct ma_dlist *out,
			  enum ma_amp_policy pol)
{
	if (!v->root)
		return;
	struct ma_amp_scan s = { .v = v, .p = p, .pol = pol };
	s.is_fast = calloc(v->nb_vps ? v->nb_vps : 1, 1);
	if (!s.is_fast)
		return;
	ma_amp_fast_vps(&s);
	if (s.nb_fast) {
		ma_amp_walk(&s, v->root, -1, 1);
		if (!s.failed) {
			ma_amp_prioritise(&s);
			ma_amp_holders(&s);
			qsort(s.c, s.nb, sizeof(*s.c), ma_amp_cmp);
			ma_amp_assign(&s, out);
		}
		out->beat = 1;
	}
	free(s.c);
	free(s.apps);
	free(s.is_fast);
}

/* Every bubble of n's subtree burst on q, parents first (a member is burst where its
 * parent was). */
static void ma_amp_burst_all(const struct ma_vnode *n, int q, struct ma_dlist *out)
{
	if (!n->is_bubble)
		return;
	if (n->status == MA_V_CLOSED && n->fixed_item < 0)
		(void)ma_dlist_add(out, MA_D_BURST, n->id, q);
	for (unsigned i = 0; i < n->nb_children; i++)
		ma_amp_burst_all(n->children[i], q, out);
}

void ma_amp_submit(const struct ma_view *v, struct ma_dlist *out)
{
	if (!v->root)
		return;
	ma_amp_burst_all(v->root, v->root->home >= 0 ? v->root->home : 0, out);
	out->beat = 1;
}

void ma_amp_start(const struct ma_view *v, struct ma_amp_priv *p, struct ma_dlist *out, enum ma_amp_policy pol)
{
	if (!v->root)
		return;
	for (unsigned i = 0; i < v->root->nb_children; i++)
		ma_amp_burst_all(v->root->children[i], 0, out);
	ma_amp_decide(v, p, out, pol);
	out->beat = 1;
}

void ma_amp_tick(const struct ma_view *v, struct ma_amp_priv *p, struct ma_dlist *out, enum ma_amp_policy pol)
{
	p->beat++;
	ma_amp_decide(v, p, out, pol);
}
