/*
 * The strategy registry: lookup by name, selection at init and at run time, and the
 * public entry points that hand bubbles to the current strategy.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include "ma_strategy.h"

static const struct ma_strategy *const ma_strategies[] = {
	&ma_strategy_null, &ma_strategy_burst, &ma_strategy_spread, &ma_strategy_cache,
	&ma_strategy_steal, &ma_strategy_gang, &ma_strategy_memory,
};
#define MA_NB_STRATEGIES (sizeof(ma_strategies) / sizeof(ma_strategies[0]))

const struct ma_strategy *_Atomic ma_strategy_cur;
atomic_int ma_sched_begun;
/* Serialises changes of strategy (their init and exit hooks). */
static pthread_mutex_t ma_strategy_change_lock = PTHREAD_MUTEX_INITIALIZER;

const struct ma_strategy *ma_strategy_lookup(const char *name)
{
	if (!name)
		return NULL;
	for (unsigned i = 0; i < MA_NB_STRATEGIES; i++)
		if (!strcmp(ma_strategies[i]->name, name) ||
		    (ma_strategies[i]->alias && !strcmp(ma_strategies[i]->alias, name)))
			return ma_strategies[i];
	return NULL;
}

static int ma_is_strategy(const struct ma_strategy *s)
{
	for (unsigned i = 0; i < MA_NB_STRATEGIES; i++)
		if (ma_strategies[i] == s)
			return 1;
	return 0;
}

int marcel_bubble_list_schedulers(FILE *out)
{
	if (!out)
		return EINVAL;
	for (unsigned i = 0; i < MA_NB_STRATEGIES; i++) {
		const struct ma_strategy *s = ma_strategies[i];
		char names[64];
		snprintf(names, sizeof(names), "%s%s%s%s", s->name, s->alias ? " (" : "", s->alias ? s->alias : "",
			 s->alias ? ")" : "");
		fprintf(out, "%-18s %s%s\n", names, s->description, s == &ma_strategy_burst ? " [default]" : "");
	}
	return 0;
}

int ma_strategy_name_ok(const char *name)
{
	return ma_strategy_lookup(name) != NULL;
}

const char *ma_strategy_names(void)
{
	static char buf[256];
	if (!buf[0]) {
		size_t n = (size_t)snprintf(buf, sizeof(buf), "one of:");
		for (unsigned i = 0; i < MA_NB_STRATEGIES && n < sizeof(buf); i++) {
			const struct ma_strategy *s = ma_strategies[i];
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, " %s%s%s", s->name, s->alias ? " " : "",
					      s->alias ? s->alias : "");
		}
		if (n < sizeof(buf))
			snprintf(buf + n, sizeof(buf) - n, " (or 'list', which prints them and exits)");
	}
	return buf;
}

int ma_strategies_start(void)
{
	const char *name = ma_rt.opt.bubble_sched;
	if (name && !strcmp(name, "list")) {
		printf("marcel bubble schedulers (MARCEL_BUBBLE_SCHEDULER / --marcel-bubble-scheduler):\n");
		marcel_bubble_list_schedulers(stdout);
		fflush(stdout);
		exit(0);
	}
	const struct ma_strategy *s = name ? ma_strategy_lookup(name) : &ma_strategy_burst;
	if (!s) {
		fprintf(stderr, "marcel: MARCEL_BUBBLE_SCHEDULER='%s': unknown bubble scheduler; expected one of:", name);
		for (unsigned i = 0; i < MA_NB_STRATEGIES; i++)
			fprintf(stderr, " %s%s%s", ma_strategies[i]->name, ma_strategies[i]->alias ? " " : "",
				ma_strategies[i]->alias ? ma_strategies[i]->alias : "");
		fprintf(stderr, " (or 'list')\n");
		return EINVAL;
	}
	atomic_store(&ma_sched_begun, 0);
	if (s->init) {
		int e = s->init();
		if (e) {
			fprintf(stderr, "marcel: bubble scheduler '%s' cannot start: %s\n", s->name, strerror(e));
			return e;
		}
	}
	atomic_store(&ma_strategy_cur, s);
	return 0;
}

void ma_strategies_stop(void)
{
	const struct ma_strategy *s = ma_strategy();
	if (s && s->exit)
		s->exit();
	atomic_store(&ma_strategy_cur, NULL);
}

void ma_strategy_submit(struct ma_bubble *b)
{
	if (b->fixed_item >= 0) {
		ma_bubble_place(b, &ma_rt.rqs[b->fixed_item]);
		return;
	}
	const struct ma_strategy *s = ma_strategy();
	if (s && s->submit) {
		s->submit(b);
		return;
	}
	/* No opinion: on its parent's queue, closed. */
	struct ma_bubble *p = ma_entity_parent(&b->e);
	struct ma_holder *h = p ? __atomic_load_n(&p->e.sched_holder, __ATOMIC_ACQUIRE) : NULL;
	ma_bubble_place(b, h && h->type == MA_RUNQUEUE_HOLDER ? ma_rq_of_holder(h) : &ma_rt.rqs[0]);
}

/* ---- public API ---- */

const marcel_bubble_sched_t *marcel_lookup_bubble_scheduler(const char *name)
{
	return ma_strategy_lookup(name);
}

const marcel_bubble_sched_t *marcel_bubble_current_sched(void)
{
	return ma_rt.running ? ma_strategy() : NULL;
}

const char *marcel_bubble_sched_name(const marcel_bubble_sched_t *s)
{
	return s ? s->name : NULL;
}

const char *marcel_bubble_sched_description(const marcel_bubble_sched_t *s)
{
	return s ? s->description : NULL;
}

const marcel_bubble_sched_t *marcel_bubble_sched_nth(unsigned i)
{
	return i < MA_NB_STRATEGIES ? ma_strategies[i] : NULL;
}

const marcel_bubble_sched_t *marcel_bubble_change_sched(const marcel_bubble_sched_t *s)
{
	if (!s || !ma_is_strategy(s) || !ma_rt.running)
		return NULL;
	pthread_mutex_lock(&ma_strategy_change_lock);
	const struct ma_strategy *old = ma_strategy();
	if (old == s) {
		pthread_mutex_unlock(&ma_strategy_change_lock);
		return old;
	}
	if (s->init && s->init()) {
		pthread_mutex_unlock(&ma_strategy_change_lock);
		return NULL;
	}
	atomic_store(&ma_strategy_cur, s);
	if (old->exit)
		old->exit();
	pthread_mutex_unlock(&ma_strategy_change_lock);
	if (atomic_load(&ma_sched_begun) && s->start)
		s->start();
	return old;
}

int marcel_bubble_sched_begin(void)
{
	if (!ma_rt.running)
		return EPERM;
	atomic_store(&ma_sched_begun, 1);
	const struct ma_strategy *s = ma_strategy();
	if (s->start)
		s->start();
	return 0;
}

int marcel_bubble_shake(marcel_bubble_t *pub)
{
	struct ma_bubble *b = ma_bubble_get(pub);
	if (!b || b == ma_root_bubble)
		return EINVAL;
	if (!ma_rt.running || !b->woken)
		return EPERM;
	const struct ma_strategy *s = ma_strategy();
	if (s->shake) {
		s->shake(b);
		return 0;
	}
	if (atomic_load(&b->status) == MA_BUBBLE_OPENED)
		ma_bubble_gather(b);
	else if (atomic_load(&b->status) == MA_BUBBLE_CLOSED && ma_bubble_unit(b) == b)
		ma_strategy_submit(b);
	return 0;
}

int marcel_bubble_submit(marcel_bubble_t *pub)
{
	struct ma_bubble *b = ma_bubble_get(pub);
	if (!b || b == ma_root_bubble)
		return EINVAL;
	if (!ma_rt.running || !b->woken)
		return EPERM;
	if (atomic_load(&b->status) != MA_BUBBLE_CLOSED || ma_bubble_unit(b) != b)
		return EBUSY;
	ma_strategy_submit(b);
	return 0;
}

int ma_strategy_vp_idle(struct ma_worker *w)
{
	const struct ma_strategy *s = ma_strategy();
	return s && s->vp_is_idle ? s->vp_is_idle(w) : 0;
}

void ma_strategy_stray(struct ma_worker *w, struct marcel_task *t)
{
	const struct ma_strategy *s = ma_strategy();
	if (s && s->stray)
		s->stray(w, t);
	else
		atomic_store_explicit(&t->stray, 0, memory_order_relaxed); /* another strategy's mark */
}
