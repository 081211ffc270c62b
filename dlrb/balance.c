/*
 * DLRB's decisions for one node (ma_dlrb_balance.h). The load balancer reproduces both of
 * the thesis's worked examples (tests/check_dlrb_balance.c): utilisations 15, 23, 50 and
 * 99 on two cores of two threads give {99, 15} and {50, 23}; MetBench's master (0) and
 * workers 25, 99, 25, 99 give {99 | 25, 0} and {99 | 25}.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ma_dlrb_balance.h"

/* The tasks being split, sorted by utilisation, heaviest first (ties: lower index). */
struct ma_dp {
	const struct ma_topo *t;
	const double *util;
	const int *current;
	int *out;
};

static int ma_dp_heavier(const void *x, const void *y, void *arg)
{
	const double *util = arg;
	unsigned a = *(const unsigned *)x, b = *(const unsigned *)y;
	if (util[a] != util[b])
		return util[a] > util[b] ? -1 : 1;
	return a < b ? -1 : a > b;
}

/* Whether VP v lies under item l. */
static int ma_dp_under(const struct ma_level *l, int v)
{
	return v >= 0 && (unsigned)v >= l->first_vp && (unsigned)v < l->first_vp + l->nb_vps;
}

/* Splits the tasks task[0..n) (sorted, heaviest first) of item l among its children, then
 * recurses. */
static int ma_dp_split(struct ma_dp *p, const struct ma_level *l, unsigned *task, unsigned n)
{
	if (!n)
		return 0;
	if (!l->arity) {
		/* A leaf: its VPs in turn, the heaviest first. */
		for (unsigned i = 0; i < n; i++)
			p->out[task[i]] = (int)(l->first_vp + (l->nb_vps ? i % l->nb_vps : 0));
		return 0;
	}
	unsigned k = l->arity, vps = 0;
	for (unsigned c = 0; c < k; c++)
		vps += l->children[c]->nb_vps;
	unsigned *cap = calloc(k, sizeof(*cap)), *cnt = calloc(k, sizeof(*cnt)), *group = malloc(n * sizeof(*group));
	unsigned *to = calloc(k, sizeof(*to)), *sub = malloc(n * sizeof(*sub));
	double *sum = calloc(k, sizeof(*sum)), *share = calloc(k, sizeof(*share));
	int e = cap && cnt && group && to && sub && sum && share ? 0 : ENOMEM;
	/* The blind split: tasks in proportion to the children's hardware threads, each
	 * child at least the floor of its share and at most the ceiling. */
	for (unsigned c = 0; !e && c < k && vps; c++) {
		share[c] = (double)n * l->children[c]->nb_vps / vps;
		cap[c] = (unsigned)share[c] + (share[c] > (unsigned)share[c]);
	}
	/* The heaviest first, each to the lightest child with room; once the tasks left are
	 * just enough for the children still below their floor, to those only. */
	for (unsigned i = 0; !e && i < n; i++) {
		unsigned deficit = 0;
		for (unsigned c = 0; c < k; c++)
			deficit += cnt[c] < (unsigned)share[c] ? (unsigned)share[c] - cnt[c] : 0;
		int short_only = n - i <= deficit;
		unsigned best = k;
		for (unsigned c = 0; c < k; c++)
			if (cnt[c] < cap[c] && (!short_only || cnt[c] < (unsigned)share[c]) &&
			    (best == k || sum[c] < sum[best]))
				best = c;
		if (best == k) {
			e = EINVAL; /* no hardware thread below: cannot happen with vps > 0 */
			break;
		}
		group[i] = best;
		cnt[best]++;
		sum[best] += p->util[task[i]];
	}
	/* Children of one size are interchangeable: each group goes where most of its tasks
	 * run now, so that few move (greedy over the pairs with the most tasks in common). */
	for (unsigned c = 0; c < k; c++)
		to[c] = k;
	unsigned char *done = e ? NULL : calloc(k, 1);
	if (!e && !done)
		e = ENOMEM;
	for (unsigned round = 0; !e && round < k; round++) {
		unsigned bg = k, bc = k, best = 0;
		for (unsigned g = 0; g < k; g++) {
			if (to[g] < k)
				continue;
			for (unsigned c = 0; c < k; c++) {
				if (done[c] || l->children[c]->nb_vps != l->children[g]->nb_vps)
					continue;
				unsigned common = 0;
				for (unsigned i = 0; p->current && i < n; i++)
					common += group[i] == g && ma_dp_under(l->children[c], p->current[task[i]]);
				if (bg == k || common > best) {
					bg = g;
					bc = c;
					best = common;
				}
			}
		}
		if (bg == k)
			break;
		to[bg] = bc;
		done[bc] = 1;
	}
	free(done);
	for (unsigned c = 0; !e && c < k; c++) {
		unsigned m = 0;
		for (unsigned i = 0; i < n; i++)
			if (group[i] == c)
				sub[m++] = task[i];
		e = ma_dp_split(p, l->children[to[c] < k ? to[c] : c], sub, m);
	}
	free(cap);
	free(cnt);
	free(group);
	free(to);
	free(sub);
	free(sum);
	free(share);
	return e;
}

int ma_dlrb_place(const struct ma_topo *t, const double *util, unsigned n, const int *current, int *out)
{
	if (n > MA_DLRB_MAX_TASKS)
		return EINVAL;
	unsigned *task = malloc((n ? n : 1) * sizeof(*task));
	if (!task)
		return ENOMEM;
	for (unsigned i = 0; i < n; i++)
		task[i] = i;
	qsort_r(task, n, sizeof(*task), ma_dp_heavier, (void *)(uintptr_t)util);
	struct ma_dp p = { .t = t, .util = util, .current = current, .out = out };
	int e = ma_dp_split(&p, &t->levels[0], task, n);
	free(task);
	return e;
}

/* The item of VP v's core (its leaf if none is marked a core). */
static const struct ma_level *ma_dlrb_core(const struct ma_topo *t, unsigned v)
{
	for (const struct ma_level *x = t->vps[v].leaf; x; x = x->parent)
		if (x->kinds & MA_LEVEL_CORE)
			return x;
	return t->vps[v].leaf;
}

unsigned ma_dlrb_levels(const struct ma_topo *t, const double *vp_util, int *level, int lo, int hi)
{
	unsigned changed = 0;
	for (unsigned a = 0; a < t->nb_vps; a++) {
		const struct ma_level *core = ma_dlrb_core(t, a);
		/* The cores of exactly two hardware threads, each met once at its first. */
		unsigned b = t->nb_vps, count = 0;
		int first = 1;
		for (unsigned v = 0; v < t->nb_vps; v++)
			if (ma_dlrb_core(t, v) == core) {
				count++;
				if (v < a)
					first = 0;
				else if (v > a)
					b = v;
			}
		if (!first || count != 2 || b == t->nb_vps)
			continue;
		double d = vp_util[a] - vp_util[b];
		if (d <= MA_DLRB_THRESHOLD && -d <= MA_DLRB_THRESHOLD)
			continue;
		unsigned up = d > 0 ? a : b, down = d > 0 ? b : a;
		unsigned steps = (d > 0 ? d : -d) > 2 * MA_DLRB_THRESHOLD ? 2 : 1;
		for (unsigned s = 0; s < steps; s++) {
			if (level[up] < hi) {
				level[up]++;
				changed++;
			} else if (level[down] > lo) {
				level[down]--;
				changed++;
			}
		}
	}
	return changed;
}

/* A phase change: a task that was above MA_DLRB_HIGH in the previous iteration fell below
 * 75%. Light tasks that a priority made busier are not one (the thesis's bitmap, read
 * literally, would take them for one at every iteration after the first levels). */
static int ma_dlrb_phase_changed(const struct ma_dlrb_ctl *c, const double *util, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (c->high[i] && util[i] < 0.75)
			return 1;
	return 0;
}

struct ma_dlrb_decision ma_dlrb_step(struct ma_dlrb_ctl *c, const struct ma_topo *t, const double *util, unsigned n,
				     int *vp, int *level, int lo, int hi)
{
	struct ma_dlrb_decision d = { 0 };
	if (n > MA_DLRB_MAX_TASKS)
		return d;
	c->iterations++;
	int place = c->iterations == 1;
	if (!place && ma_dlrb_phase_changed(c, util, n)) {
		place = 1;
		c->phase_changes++;
	}
	for (unsigned i = 0; i < n; i++)
		c->high[i] = util[i] > MA_DLRB_HIGH;
	int zero = lo > 0 ? lo : hi < 0 ? hi : 0;
	if (place) {
		/* Placed anew; the next iteration measures the placement, without levels. */
		if (ma_dlrb_place(t, util, n, vp, vp) == 0) {
			d.placed = 1;
			c->placements++;
		}
		for (unsigned i = 0; i < n; i++)
			if (level[i] != zero) {
				level[i] = zero;
				d.levels_changed = 1;
			}
		c->unprioritised = 1;
		return d;
	}
	c->unprioritised = 0;
	/* The levels are the hardware threads': per VP, then back to its tasks. */
	double *vu = calloc(t->nb_vps ? t->nb_vps : 1, sizeof(*vu));
	int *vl = calloc(t->nb_vps ? t->nb_vps : 1, sizeof(*vl));
	if (!vu || !vl) {
		free(vu);
		free(vl);
		return d;
	}
	for (unsigned v = 0; v < t->nb_vps; v++)
		vl[v] = zero;
	for (unsigned i = 0; i < n; i++)
		if (vp[i] >= 0 && (unsigned)vp[i] < t->nb_vps) {
			vu[vp[i]] += util[i];
			vl[vp[i]] = level[i];
		}
	if (ma_dlrb_levels(t, vu, vl, lo, hi)) {
		d.levels_changed = 1;
		for (unsigned i = 0; i < n; i++)
			if (vp[i] >= 0 && (unsigned)vp[i] < t->nb_vps)
				level[i] = vl[vp[i]];
	}
	free(vu);
	free(vl);
	return d;
}
