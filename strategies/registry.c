/*
 * The strategy registry: the list of the strategies, lookup by name, selection at init
 * and at run time by name, handle or Marcel class (bubbles/strategy.c does the switch),
 * and Marcel's view of the strategies as classes with instances.
 *
 * A new strategy is a file of its own with a table of decision hooks (it includes
 * ma_strategies.h and ma_view.h, nothing of the runtime) and its line in
 * ma_strategy_list.h, from which its declaration, its place in the list and its Marcel
 * class are made; doc/design.md, "Strategies", says what its hooks are given and may do,
 * and which tests it needs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "ma_registry.h"

static const struct ma_strategy *const ma_strategies[] = {
#define MA_STRATEGY(x) &ma_strategy_##x,
#include "ma_strategy_list.h"
#undef MA_STRATEGY
};
#define MA_NB_STRATEGIES (sizeof(ma_strategies) / sizeof(ma_strategies[0]))

/* ---- Marcel's classes and instances ---- */

/* What marcel_bubble_sched_instantiate writes into the program's memory. */
struct ma_sched_instance {
	unsigned magic;
	const struct ma_strategy *strategy;
	const marcel_bubble_sched_class_t *klass;
};
#define MA_SCHED_INSTANCE_MAGIC 0x4d42534bu /* "MBSK" */

static int ma_instance_init(marcel_bubble_sched_t *pub, const struct ma_strategy *s,
			    const marcel_bubble_sched_class_t *klass)
{
	if (!pub)
		return EINVAL;
	struct ma_sched_instance *in = (struct ma_sched_instance *)(void *)pub;
	*in = (struct ma_sched_instance){ MA_SCHED_INSTANCE_MAGIC, s, klass };
	return 0;
}

/* One class per strategy, in ma_strategies' order; each needs its own instantiate, the
 * only thing that tells it which strategy it stands for. A class the public header does
 * not declare (a strategy added since) is reached by name
 * (marcel_lookup_bubble_scheduler_class). */
#define MA_STRATEGY(x)                                                                         \
	static int ma_instantiate_##x(marcel_bubble_sched_t *pub);                             \
	extern const marcel_bubble_sched_class_t marcel_bubble_##x##_sched_class;              \
	const marcel_bubble_sched_class_t marcel_bubble_##x##_sched_class = {                  \
		#x, sizeof(struct ma_sched_instance), ma_instantiate_##x };                     \
	static int ma_instantiate_##x(marcel_bubble_sched_t *pub)                              \
	{                                                                                      \
		return ma_instance_init(pub, &ma_strategy_##x, &marcel_bubble_##x##_sched_class); \
	}
#include "ma_strategy_list.h"
#undef MA_STRATEGY

static const marcel_bubble_sched_class_t *const ma_classes[] = {
#define MA_STRATEGY(x) &marcel_bubble_##x##_sched_class,
#include "ma_strategy_list.h"
#undef MA_STRATEGY
};
_Static_assert(sizeof(ma_classes) / sizeof(ma_classes[0]) == MA_NB_STRATEGIES, "one class per strategy");

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

static int ma_strategy_index(const struct ma_strategy *s)
{
	for (unsigned i = 0; i < MA_NB_STRATEGIES; i++)
		if (ma_strategies[i] == s)
			return (int)i;
	return -1;
}

/* The strategy a public handle stands for: a strategy itself, or an instance of one.
 * NULL for anything else. */
static const struct ma_strategy *ma_strategy_of_handle(const marcel_bubble_sched_t *h)
{
	if (!h)
		return NULL;
	if (ma_strategy_index(h) >= 0)
		return h;
	const struct ma_sched_instance *in = (const struct ma_sched_instance *)(const void *)h;
	if (in->magic == MA_SCHED_INSTANCE_MAGIC && ma_strategy_index(in->strategy) >= 0)
		return in->strategy;
	return NULL;
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
	int e = ma_strategy_select(s);
	if (e)
		fprintf(stderr, "marcel: bubble scheduler '%s' cannot start: %s\n", s->name, strerror(e));
	return e;
}

void ma_strategies_stop(void)
{
	ma_strategy_deselect();
}

/* ---- public API ---- */

const marcel_bubble_sched_t *marcel_lookup_bubble_scheduler(const char *name)
{
	return ma_strategy_lookup(name);
}

/* The handles are opaque to the program, which cannot write through them: giving them
 * out without const (as Marcel's prototypes did) changes nothing. */
static marcel_bubble_sched_t *ma_handle_out(const void *h)
{
	return (marcel_bubble_sched_t *)(uintptr_t)h;
}

marcel_bubble_sched_t *marcel_bubble_current_sched(void)
{
	if (!ma_rt.running)
		return NULL;
	const void *h = ma_strategy_handle();
	return ma_handle_out(h ? h : ma_strategy());
}

const char *marcel_bubble_sched_name(const marcel_bubble_sched_t *h)
{
	const struct ma_strategy *s = ma_strategy_of_handle(h);
	return s ? s->name : NULL;
}

const char *marcel_bubble_sched_description(const marcel_bubble_sched_t *h)
{
	const struct ma_strategy *s = ma_strategy_of_handle(h);
	return s ? s->description : NULL;
}

const marcel_bubble_sched_t *marcel_bubble_sched_nth(unsigned i)
{
	return i < MA_NB_STRATEGIES ? ma_strategies[i] : NULL;
}

marcel_bubble_sched_t *marcel_bubble_change_sched(const marcel_bubble_sched_t *h)
{
	const struct ma_strategy *s = ma_strategy_of_handle(h);
	const void *old_handle;
	if (!s || !ma_rt.running || ma_strategy_switch(s, h, &old_handle))
		return NULL;
	return ma_handle_out(old_handle);
}

/* ---- public API: classes (Marcel) ---- */

const marcel_bubble_sched_class_t *marcel_lookup_bubble_scheduler_class(const char *name)
{
	int i = ma_strategy_index(ma_strategy_lookup(name));
	return i >= 0 ? ma_classes[i] : NULL;
}

size_t marcel_bubble_sched_instance_size(const marcel_bubble_sched_class_t *klass)
{
	return klass ? klass->instance_size : 0;
}

const char *marcel_bubble_sched_class_name(const marcel_bubble_sched_class_t *klass)
{
	return klass ? klass->name : NULL;
}

const marcel_bubble_sched_class_t *marcel_bubble_sched_class(const marcel_bubble_sched_t *h)
{
	int i = ma_strategy_index(ma_strategy_of_handle(h));
	return i >= 0 ? ma_classes[i] : NULL;
}

int marcel_bubble_sched_instantiate(const marcel_bubble_sched_class_t *klass, marcel_bubble_sched_t *instance)
{
	for (unsigned i = 0; i < MA_NB_STRATEGIES; i++)
		if (ma_classes[i] == klass)
			return klass->instantiate(instance);
	return EINVAL;
}
