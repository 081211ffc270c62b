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

void ma_dlrb_ctl_init(struct ma_dlrb_ctl *c)
{
	memset(c, 0, sizeof(*c));
	ma_hw_policy_defaults(&c->params, MA_HWP_DLRB);
}

/* The policy afresh for n tasks placed at vp[]: the tasks of one core share a domain
 * (a task nowhere known is a domain of its own), every level 0. */
static void ma_dlrb_policy_reset(struct ma_dlrb_ctl *c, const struct ma_topo *t, const int *vp, unsigned n)
{
	memset(&c->st, 0, sizeof(c->st));
	memset(c->slot, 0, n * sizeof(c->slot[0]));
	c->st.n = n;
	for (unsigned i = 0; i < n; i++)
		c->slot[i].domain = vp[i] >= 0 && (unsigned)vp[i] < t->nb_vps ? (int)ma_dlrb_core(t, (unsigned)vp[i])->id
									    : -1 - (int)i;
}

/* Whether the measured utilisations differ by more than the threshold. */
static int ma_dlrb_imbalanced(const double *util, unsigned n)
{
	double mn = 2, mx = -1;
	for (unsigned i = 0; i < n; i++)
		if (util[i] >= 0) {
			mn = util[i] < mn ? util[i] : mn;
			mx = util[i] > mx ? util[i] : mx;
		}
	return mx - mn > MA_DLRB_THRESHOLD;
}

/* Places the tasks anew if they are imbalanced: 1 if some task moved (then the policy
 * starts afresh, and the next iteration, without levels, measures the placement). */
static int ma_dlrb_replace(struct ma_dlrb_ctl *c, const struct ma_topo *t, const double *util, unsigned n, int *vp)
{
	if (!ma_dlrb_imbalanced(util, n))
		return 0;
	int *to = malloc((n ? n : 1) * sizeof(*to)), moved = 0;
	if (to && ma_dlrb_place(t, util, n, vp, to) == 0)
		for (unsigned i = 0; i < n; i++)
			if (to[i] != vp[i]) {
				vp[i] = to[i];
				moved = 1;
			}
	free(to);
	if (!moved)
		return 0;
	c->placements++;
	ma_dlrb_policy_reset(c, t, vp, n);
	c->st.slot = c->slot;
	/* The policy keeps the busy pattern the placement was made on: a task placed as a
	 * bottleneck that is not one in the next rounds (a round the kernel disturbed) is a
	 * phase change to it, and the tasks are placed again. */
	for (unsigned i = 0; i < n; i++)
		c->slot[i].busy = util[i] >= c->params.busy;
	c->st.pattern_ok = 1;
	c->unprioritised = 1;
	return 1;
}

struct ma_dlrb_decision ma_dlrb_step(struct ma_dlrb_ctl *c, const struct ma_topo *t, const double *util, unsigned n,
				     int *vp, int *level, int lo, int hi)
{
	struct ma_dlrb_decision d = { 0 };
	if (n > MA_DLRB_MAX_TASKS)
		return d;
	if (n != c->st.n || !c->iterations)
		ma_dlrb_policy_reset(c, t, vp, n);
	c->st.slot = c->slot; /* see struct ma_dlrb_ctl: no pointer kept between calls */
	c->iterations++;
	c->unprioritised = 0;
	/* The first placement waits for a second iteration to confirm the imbalance: one
	 * where the kernel kept a task off its processor must not move the node. */
	int imbalanced = ma_dlrb_imbalanced(util, n);
	if (c->iterations == 1)
		c->imbalanced_first = (unsigned char)imbalanced;
	else if (c->iterations == 2 && imbalanced && c->imbalanced_first)
		d.placed = ma_dlrb_replace(c, t, util, n, vp);
	/* Unless tasks moved, this iteration measured the placement in force: the policy
	 * judges it (a placement that moved nothing costs no iteration). */
	if (!d.placed) {
		/* An unmeasured task idles as far as the policy knows: run 0, wait 0. */
		struct ma_hw_sample s[n ? n : 1];
		for (unsigned i = 0; i < n; i++)
			s[i] = util[i] >= 0 ? (struct ma_hw_sample){ util[i], 1 - util[i] } : (struct ma_hw_sample){ 0, 0 };
		if (ma_hw_policy_step(&c->params, &c->st, s) & MA_HWP_PHASE) {
			c->phase_changes++;
			d.phase_change = 1;
			/* The policy's levels are 0 for the next iteration, measured as it is. */
			c->unprioritised = 1;
			d.placed = ma_dlrb_replace(c, t, util, n, vp);
		}
	}
	int fit[n ? n : 1];
	ma_hw_levels_fit(c->slot, n, lo, hi, fit);
	for (unsigned i = 0; i < n; i++)
		if (level[i] != fit[i]) {
			level[i] = fit[i];
			d.levels_changed = 1;
		}
	c->level_changes += d.levels_changed;
	return d;
}
