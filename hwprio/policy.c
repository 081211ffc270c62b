/*
 * The balancing policy: from what each worker did in an iteration to a level per worker.
 * Pure: no clock, no thread, no system call; the runtime, the tests and a simulator call
 * the same functions.
 *
 * The seeds' rules (doc/design.md "hwprio" says where each comes from, and which parts
 * the texts leave open and how they are read here):
 *  - utilisation U = run / (run + wait) per worker and iteration;
 *  - workers that share the resource form a domain (the hardware threads of a core for
 *    SMT priorities); only differences inside a domain matter;
 *  - DLRB: when the busiest and the least busy worker of a domain differ by more than
 *    the threshold (20 points), raise the busiest one step, two above twice the
 *    threshold; at the top, lower the other instead. A change of the set of workers busy
 *    over 95% is a phase change: every level goes back to 0 for one iteration, which is
 *    then measured undistorted;
 *  - HPCSched: a worker is high at HIGH_UTIL or more, low at LOW_UTIL or less; in a
 *    domain that has both, the high ones go up a step (the low ones down at the top);
 *    Uniform judges U over the whole run, Adaptive G * U(whole run before) + L * U(last
 *    iteration);
 *  - never more than max_gap levels apart within a domain, never outside lo..hi.
 */
#include <string.h>
#include "ma_hwprio.h"

void ma_hw_policy_defaults(struct ma_hw_policy_params *p, enum ma_hw_policy_kind kind)
{
	*p = (struct ma_hw_policy_params){
		.kind = kind,
		.threshold = 0.20,
		.busy = 0.95,
		.high_util = 0.85,
		.low_util = 0.65,
		.g = 0.1,
		.l = 0.9,
		.lo = 0,
		.hi = 2,
		.max_gap = 2,
	};
}

static const char *const ma_hwp_names[] = {
	[MA_HWP_DLRB] = "dlrb",
	[MA_HWP_UNIFORM] = "uniform",
	[MA_HWP_ADAPTIVE] = "adaptive",
};

const char *ma_hw_policy_name(enum ma_hw_policy_kind k)
{
	return (unsigned)k < sizeof(ma_hwp_names) / sizeof(ma_hwp_names[0]) ? ma_hwp_names[k] : "?";
}

int ma_hw_policy_find(const char *name, enum ma_hw_policy_kind *k)
{
	for (unsigned i = 0; i < sizeof(ma_hwp_names) / sizeof(ma_hwp_names[0]); i++)
		if (!strcmp(name, ma_hwp_names[i])) {
			*k = (enum ma_hw_policy_kind)i;
			return 0;
		}
	return -1;
}

/* The lowest and highest level in slot i's domain. */
static void ma_hw_domain_range(const struct ma_hw_slot *slot, unsigned n, unsigned i, int *mn, int *mx)
{
	*mn = *mx = slot[i].level;
	for (unsigned j = 0; j < n; j++)
		if (slot[j].domain == slot[i].domain) {
			if (slot[j].level < *mn)
				*mn = slot[j].level;
			if (slot[j].level > *mx)
				*mx = slot[j].level;
		}
}

/* How far slot i is above the lowest of its domain. */
static int ma_hw_advantage(const struct ma_hw_policy_state *st, unsigned i)
{
	int mn, mx;
	ma_hw_domain_range(st->slot, st->n, i, &mn, &mx);
	return st->slot[i].level - mn;
}

/* Raises slot i a level if lo..hi and the domain's max_gap allow it: 1 if it did. */
static int ma_hw_raise(const struct ma_hw_policy_params *p, struct ma_hw_policy_state *st, unsigned i)
{
	int mn, mx, l = st->slot[i].level + 1;
	ma_hw_domain_range(st->slot, st->n, i, &mn, &mx);
	if (l > p->hi || (l > mx ? l : mx) - mn > p->max_gap)
		return 0;
	st->slot[i].level = l;
	return 1;
}

static int ma_hw_lower(const struct ma_hw_policy_params *p, struct ma_hw_policy_state *st, unsigned i)
{
	int mn, mx, l = st->slot[i].level - 1;
	ma_hw_domain_range(st->slot, st->n, i, &mn, &mx);
	if (l < p->lo || mx - (l < mn ? l : mn) > p->max_gap)
		return 0;
	st->slot[i].level = l;
	return 1;
}

/* One step in favour of slot up against slot down, same domain: up raised if it may be,
 * else down lowered. 1 if a level changed. */
static int ma_hw_favour(const struct ma_hw_policy_params *p, struct ma_hw_policy_state *st, unsigned up,
			unsigned down)
{
	return ma_hw_raise(p, st, up) || ma_hw_lower(p, st, down);
}

static int ma_hw_decide_dlrb(const struct ma_hw_policy_params *p, struct ma_hw_policy_state *st, const double *u,
			     unsigned char *done)
{
	int changed = 0;
	for (unsigned i = 0; i < st->n; i++) {
		if (done[i] || u[i] < 0)
			continue;
		/* The busiest and the least busy of i's domain (first found on ties: the
		 * decision does not depend on the order of equal workers' levels). */
		unsigned hi = i, lo = i;
		for (unsigned j = i; j < st->n; j++)
			if (st->slot[j].domain == st->slot[i].domain && u[j] >= 0) {
				done[j] = 1;
				if (u[j] > u[hi])
					hi = j;
				if (u[j] < u[lo])
					lo = j;
			}
		double gap = u[hi] - u[lo];
		if (hi == lo || gap <= p->threshold)
			continue;
		int steps = gap > 2 * p->threshold ? 2 : 1;
		for (int k = 0; k < steps; k++)
			changed |= ma_hw_favour(p, st, hi, lo);
	}
	return changed;
}

static int ma_hw_decide_bands(const struct ma_hw_policy_params *p, struct ma_hw_policy_state *st, const double *u,
			      unsigned char *done)
{
	int changed = 0;
	for (unsigned i = 0; i < st->n; i++) {
		if (done[i] || u[i] < 0)
			continue;
		/* A domain acts only if it has a high and a low worker: then each high one goes
		 * up a level and each low one down, both at once (the heavy and the light
		 * trade places in two iterations). A domain with no low worker is balanced
		 * enough and holds, which is what keeps the levels from flip-flopping. */
		int any_high = 0, any_low = 0;
		for (unsigned j = i; j < st->n; j++)
			if (st->slot[j].domain == st->slot[i].domain && u[j] >= 0) {
				done[j] = 1;
				any_high |= u[j] >= p->high_util;
				any_low |= u[j] <= p->low_util;
			}
		if (!any_high || !any_low)
			continue;
		for (unsigned j = i; j < st->n; j++)
			if (st->slot[j].domain == st->slot[i].domain && u[j] >= p->high_util)
				changed |= ma_hw_raise(p, st, j);
		for (unsigned j = i; j < st->n; j++)
			if (st->slot[j].domain == st->slot[i].domain && u[j] >= 0 && u[j] <= p->low_util)
				changed |= ma_hw_lower(p, st, j);
	}
	return changed;
}

static int ma_hw_levels_reset(struct ma_hw_policy_state *st)
{
	int changed = 0;
	for (unsigned i = 0; i < st->n; i++) {
		changed |= st->slot[i].level != 0;
		st->slot[i].level = 0;
	}
	return changed;
}

int ma_hw_policy_step(const struct ma_hw_policy_params *p, struct ma_hw_policy_state *st,
		      const struct ma_hw_sample *s)
{
	double u[st->n > 0 ? st->n : 1];
	unsigned char busy[st->n > 0 ? st->n : 1], done[st->n > 0 ? st->n : 1];
	int pattern_changed = 0;
	for (unsigned i = 0; i < st->n; i++) {
		struct ma_hw_slot *sl = &st->slot[i];
		double t = s[i].run + s[i].wait;
		double last = t > 0 ? s[i].run / t : -1;
		double whole_before = sl->time_total > 0 ? sl->run_total / sl->time_total : last;
		sl->run_total += s[i].run;
		sl->time_total += t;
		switch (p->kind) {
		case MA_HWP_DLRB:
			u[i] = last;
			break;
		case MA_HWP_UNIFORM:
			u[i] = sl->time_total > 0 ? sl->run_total / sl->time_total : -1;
			break;
		case MA_HWP_ADAPTIVE:
			u[i] = last < 0 ? -1 : p->g * whole_before + p->l * last;
			break;
		}
		busy[i] = last >= p->busy;
		/* A worker that was a bottleneck and no longer is, by more than the threshold
		 * (less is measurement noise, as for the gap), though its advantage in its
		 * domain did not grow meanwhile: its load changed, not its share of the core.
		 * (Workers becoming busy are what raising the others does.) */
		pattern_changed |= st->pattern_ok && sl->busy && last >= 0 && last < p->busy - p->threshold &&
				   ma_hw_advantage(st, i) <= sl->busy_level;
		done[i] = 0;
	}
	st->iterations++;
	int was_quiet = st->quiet;
	st->quiet = 0;
	/* DLRB: a phase change sends every level back to 0 for one iteration, measured
	 * undistorted; the quiet iteration itself is not compared with the one before. A
	 * change seen once is only suspected: the levels hold and the old pattern stays for
	 * the next iteration to confirm it. One iteration where the kernel kept a worker off
	 * its processor must not cost the balance (on a shared machine that is common). */
	pattern_changed &= p->kind == MA_HWP_DLRB && !was_quiet;
	if (pattern_changed && !st->suspect) {
		st->suspect = 1;
		return 0;
	}
	st->suspect = 0;
	if (pattern_changed) {
		for (unsigned i = 0; i < st->n; i++) {
			st->slot[i].busy = busy[i];
			st->slot[i].busy_level = 0;
		}
		st->quiet = 1;
		return (ma_hw_levels_reset(st) ? MA_HWP_CHANGED : 0) | MA_HWP_PHASE;
	}
	for (unsigned i = 0; i < st->n; i++) {
		st->slot[i].busy = busy[i];
		st->slot[i].busy_level = ma_hw_advantage(st, i);
	}
	st->pattern_ok = 1;
	int changed = p->kind == MA_HWP_DLRB ? ma_hw_decide_dlrb(p, st, u, done) : ma_hw_decide_bands(p, st, u, done);
	return changed ? MA_HWP_CHANGED : 0;
}

int ma_hw_level_fit(int level, int top, int lo, int hi)
{
	/* Shift the whole domain so that its top fits; what still falls below lo is clamped
	 * (the backend cannot tell those levels apart). */
	int l = level + (top > hi ? hi - top : 0);
	return l < lo ? lo : l > hi ? hi : l;
}

void ma_hw_levels_fit(const struct ma_hw_slot *slot, unsigned n, int lo, int hi, int *out)
{
	for (unsigned i = 0; i < n; i++) {
		int mn, mx;
		ma_hw_domain_range(slot, n, i, &mn, &mx);
		out[i] = ma_hw_level_fit(slot[i].level, mx, lo, hi);
	}
}

int ma_hw_domain_top(const struct ma_hw_slot *slot, unsigned n, unsigned i)
{
	int mn, mx;
	ma_hw_domain_range(slot, n, i, &mn, &mx);
	return mx;
}

void ma_hw_units(const struct ma_hw_path *path, const struct ma_hw_slot *slot, unsigned n, uint64_t *unit)
{
	for (unsigned i = 0; i < n; i++) {
		if (!path[i].len) {
			unit[i] = 0;
			continue;
		}
		/* The part of the path every other worker of i's domain that ran something
		 * shares with i's; alone, none. */
		unsigned common = path[i].len, others = 0;
		for (unsigned j = 0; j < n; j++) {
			if (j == i || slot[j].domain != slot[i].domain || !path[j].len)
				continue;
			others++;
			unsigned c = 0;
			while (c < common && c < path[j].len && path[j].id[c] == path[i].id[c])
				c++;
			common = c;
		}
		if (!others)
			common = 0;
		/* A path that is all shared (a thread on two workers of one domain, over the
		 * iteration): its thread. */
		unit[i] = path[i].id[common < path[i].len ? common : path[i].len - 1];
	}
}

void ma_hw_samples_pool(const struct ma_hw_sample *s, const uint64_t *unit, unsigned n, struct ma_hw_sample *out)
{
	for (unsigned i = 0; i < n; i++) {
		double run = s[i].run, t = s[i].run + s[i].wait;
		if (unit[i]) {
			run = t = 0;
			for (unsigned j = 0; j < n; j++)
				if (unit[j] == unit[i]) {
					run += s[j].run;
					t += s[j].run + s[j].wait;
				}
		}
		double own = s[i].run + s[i].wait, u = t > 0 ? run / t : 0;
		out[i] = (struct ma_hw_sample){ .run = u * own, .wait = (1 - u) * own };
	}
}

int ma_hw_pin_of(const struct ma_hw_path *path, const struct ma_hw_pin *pin, unsigned nb_pins)
{
	for (unsigned k = path->len; k--;)
		for (unsigned p = 0; p < nb_pins; p++)
			if (pin[p].id == path->id[k])
				return (int)p;
	return -1;
}
