/*
 * Statistics per entity, synthesized over a bubble's subtree when asked. Threads carry
 * their own counters (CPU cycles, last VP, last queue); bubbles add what their ended
 * threads consumed and the memory attached to them (memory.c).
 */
#include <errno.h>
#include <time.h>
#include "ma_bubble.h"
#include "ma_metrics.h"

_Static_assert(MARCEL_STATS_MISS_RATE - MARCEL_STATS_FP_RATE == MA_METRIC_MISS &&
		       MARCEL_STATS_MEMOP_RATE - MARCEL_STATS_FP_RATE == MA_METRIC_MEMOP,
	       "the public load metrics in the core's order");

/* The metric a statistic names, or -1. */
static int ma_stats_metric(int which)
{
	return which >= MARCEL_STATS_FP_RATE && which <= MARCEL_STATS_MEMOP_RATE ? which - MARCEL_STATS_FP_RATE : -1;
}

/* Metric m summed over the live threads of b's subtree that have one (b locked by the
 * caller chain); *any: whether one had. */
static void ma_bubble_metric_rec(struct ma_bubble *b, unsigned m, long long *sum, int *any)
{
	ma_list_for_each_entry(struct ma_entity, e, &b->members, member_node) {
		if (e->type == MA_TASK_ENTITY) {
			struct marcel_task *t = ma_task_of_entity(e);
			int st = atomic_load_explicit(&t->state, memory_order_relaxed);
			float x[MA_METRIC_NB];
			if (st == MA_TASK_DEAD || st == MA_TASK_FREE || !(ma_metrics_of(t, x) & (1u << m)))
				continue;
			*sum += (long long)x[m];
			*any = 1;
		} else {
			struct ma_bubble *c = ma_bubble_of_entity(e);
			ma_spin_lock(&c->hold.lock);
			ma_bubble_metric_rec(c, m, sum, any);
			ma_spin_unlock(&c->hold.lock);
		}
	}
}

static void ma_task_stats(struct marcel_task *t, struct ma_stats *s)
{
	s->load += ma_entity_hint_or(&t->e, 1);
	s->nb_threads++;
	int st = atomic_load_explicit(&t->state, memory_order_relaxed);
	s->nb_ready += st == MA_TASK_READY;
	s->nb_running += st == MA_TASK_RUNNING;
	s->cpu_ns += (long long)ma_task_cpu_ns(t);
	s->masters += atomic_load_explicit(&t->master, memory_order_relaxed);
	s->nb_spinning += st == MA_TASK_RUNNING && atomic_load_explicit(&t->spinning, memory_order_relaxed);
}

/* b locked by the caller chain. */
static void ma_bubble_stats_rec(struct ma_bubble *b, struct ma_stats *s, size_t *node_bytes, int *vp_votes)
{
	struct ma_stats sub = { 0 };
	/* Ended threads' time is credited to their own bubble only. */
	sub.cpu_ns = (long long)atomic_load_explicit(&b->cpu_ended_ns, memory_order_relaxed);
	for (struct ma_memrange *r = b->ranges; r; r = r->next) {
		sub.memory += (long long)r->len;
		if (node_bytes)
			for (unsigned n = 0; n < r->node_bytes_len && n < ma_rt.topo.nb_numa; n++)
				node_bytes[n] += r->node_bytes[n];
	}
	ma_list_for_each_entry(struct ma_entity, m, &b->members, member_node) {
		if (m->type == MA_TASK_ENTITY) {
			struct marcel_task *t = ma_task_of_entity(m);
			ma_task_stats(t, &sub);
			int lv = atomic_load_explicit(&t->last_vp, memory_order_relaxed);
			if (vp_votes && lv >= 0 && (unsigned)lv < ma_rt.nb_vps)
				vp_votes[lv]++;
		} else {
			struct ma_bubble *c = ma_bubble_of_entity(m);
			ma_spin_lock(&c->hold.lock);
			ma_bubble_stats_rec(c, &sub, node_bytes, vp_votes);
			ma_spin_unlock(&c->hold.lock);
		}
	}
	s->cpu_ns += sub.cpu_ns;
	s->load += ma_entity_hint_or(&b->e, sub.load);
	s->nb_threads += sub.nb_threads;
	s->nb_ready += sub.nb_ready;
	s->nb_running += sub.nb_running;
	s->memory += sub.memory;
	s->masters += sub.masters;
	s->nb_spinning += sub.nb_spinning;
}

void ma_entity_stats(struct ma_entity *e, struct ma_stats *s, size_t *node_bytes)
{
	*s = (struct ma_stats){ .last_vp = -1, .last_level = ma_read_once(&e->last_level) };
	if (e->type == MA_TASK_ENTITY) {
		struct marcel_task *t = ma_task_of_entity(e);
		ma_task_stats(t, s);
		s->last_vp = atomic_load_explicit(&t->last_vp, memory_order_relaxed);
		return;
	}
	struct ma_bubble *b = ma_bubble_of_entity(e);
	int votes[MARCEL_NBMAXVPS] = { 0 };
	ma_spin_lock(&b->hold.lock);
	ma_bubble_stats_rec(b, s, node_bytes, votes);
	ma_spin_unlock(&b->hold.lock);
	int best = 0;
	for (unsigned v = 0; v < ma_rt.nb_vps; v++)
		if (votes[v] > best) {
			best = votes[v];
			s->last_vp = (int)v;
		}
}

long long ma_entity_load(struct ma_entity *e)
{
	long long h = ma_entity_hint_or(e, -1);
	if (h >= 0)
		return h;
	if (e->type == MA_TASK_ENTITY)
		return 1;
	struct ma_stats s;
	ma_entity_stats(e, &s, NULL);
	return s.load;
}

static int ma_stats_value(const struct ma_stats *s, int which, long long *v)
{
	switch (which) {
	case MARCEL_STATS_LOAD: *v = s->load; return 0;
	case MARCEL_STATS_NB_THREADS: *v = s->nb_threads; return 0;
	case MARCEL_STATS_NB_READY: *v = s->nb_ready; return 0;
	case MARCEL_STATS_NB_RUNNING: *v = s->nb_running; return 0;
	case MARCEL_STATS_CPU_TIME: *v = s->cpu_ns; return 0;
	case MARCEL_STATS_LAST_VP: *v = s->last_vp; return 0;
	case MARCEL_STATS_LAST_LEVEL: *v = s->last_level; return 0;
	case MARCEL_STATS_MEMORY: *v = s->memory; return 0;
	case MARCEL_STATS_MASTER: *v = s->masters; return 0;
	case MARCEL_STATS_NB_SPINNING: *v = s->nb_spinning; return 0;
	default: return EINVAL;
	}
}

static int ma_task_alive_stats(marcel_t t)
{
	if (!t || !ma_task_valid(t))
		return 0;
	int s = atomic_load(&t->state);
	return s != MA_TASK_FREE && s != MA_TASK_DEAD;
}

int marcel_task_stats_get(marcel_t t, int which, long long *value)
{
	if (!value || which < MARCEL_STATS_LOAD || which > MARCEL_STATS_MEMOP_RATE)
		return EINVAL;
	if (!ma_task_alive_stats(t))
		return ESRCH;
	int m = ma_stats_metric(which);
	if (m >= 0) {
		*value = ma_metric_get(t, (unsigned)m);
		return 0;
	}
	struct ma_stats s;
	ma_entity_stats(&t->e, &s, NULL);
	return ma_stats_value(&s, which, value);
}

int marcel_task_stats_set(marcel_t t, int which, long long value)
{
	int m = ma_stats_metric(which);
	if (which != MARCEL_STATS_LOAD && (m < 0 || value > MA_METRIC_MAX))
		return EINVAL;
	if (!ma_task_alive_stats(t))
		return ESRCH;
	if (m >= 0)
		return ma_metric_hint(t, (unsigned)m, value);
	atomic_store_explicit(&t->e.load_hint, value < 0 ? -1 : value, memory_order_relaxed);
	return 0;
}

int marcel_task_setmaster(marcel_t t, int master)
{
	if (master != 0 && master != 1)
		return EINVAL;
	if (!ma_task_alive_stats(t))
		return ESRCH;
	atomic_store_explicit(&t->master, (unsigned char)master, memory_order_relaxed);
	return 0;
}

int marcel_task_getmaster(marcel_t t, int *master)
{
	if (!master)
		return EINVAL;
	if (!ma_task_alive_stats(t))
		return ESRCH;
	*master = atomic_load_explicit(&t->master, memory_order_relaxed);
	return 0;
}

int marcel_bubble_stats_get(marcel_bubble_t *pub, int which, long long *value)
{
	struct ma_bubble *b = ma_bubble_get(pub);
	if (!b || !value || which < MARCEL_STATS_LOAD || which > MARCEL_STATS_MEMOP_RATE)
		return EINVAL;
	int m = ma_stats_metric(which);
	if (m >= 0) {
		long long sum = 0;
		int any = 0;
		(void)ma_metrics_refresh(0);
		ma_spin_lock(&b->hold.lock);
		ma_bubble_metric_rec(b, (unsigned)m, &sum, &any);
		ma_spin_unlock(&b->hold.lock);
		*value = any ? sum : -1;
		return 0;
	}
	struct ma_stats s;
	ma_entity_stats(&b->e, &s, NULL);
	return ma_stats_value(&s, which, value);
}

int marcel_bubble_stats_set(marcel_bubble_t *pub, int which, long long value)
{
	struct ma_bubble *b = ma_bubble_get(pub);
	if (!b || which != MARCEL_STATS_LOAD)
		return EINVAL;
	atomic_store_explicit(&b->e.load_hint, value < 0 ? -1 : value, memory_order_relaxed);
	return 0;
}
