/*
 * The strategy in use and its dispatchers: bubbles/ and the core reach the current
 * strategy only through these functions, which hold the defaults of the hooks a strategy
 * leaves NULL. Which strategies exist is the registry's business (strategies/): it hands
 * one to ma_strategy_select or ma_strategy_switch, and nothing here names one.
 *
 * ma_strategy_cur is written with a release store once the new strategy's init is done
 * and read with an acquire load (ma_strategy()), so a hook never runs on a strategy whose
 * init has not finished. A change makes the new one current before the old one's exit
 * runs, so a hook of the old one that read ma_strategy() just before may still be
 * running: an exit must leave what such a late hook reads usable (spread swaps its
 * figures under their lock, for instance).
 */
#include <errno.h>
#include <stdlib.h>
#include <pthread.h>
#include "ma_strategy.h"

const struct ma_strategy *_Atomic ma_strategy_cur;
atomic_int ma_sched_begun;
/* Serialises changes of strategy (their init and exit hooks). */
static pthread_mutex_t ma_strategy_change_lock = PTHREAD_MUTEX_INITIALIZER;
/* The handle last given to marcel_bubble_change_sched (a strategy or an instance), which
 * marcel_bubble_current_sched returns as Marcel did; NULL: the one chosen at init. */
static const void *_Atomic ma_strategy_handle_cur;

int ma_strategy_select(const struct ma_strategy *s)
{
	atomic_store(&ma_sched_begun, 0);
	atomic_store(&ma_strategy_handle_cur, NULL);
	if (s->init) {
		int e = s->init();
		if (e)
			return e;
	}
	atomic_store(&ma_strategy_cur, s);
	return 0;
}

void ma_strategy_deselect(void)
{
	const struct ma_strategy *s = ma_strategy();
	if (s && s->exit)
		s->exit();
	atomic_store(&ma_strategy_cur, NULL);
	atomic_store(&ma_strategy_handle_cur, NULL);
}

int ma_strategy_switch(const struct ma_strategy *s, const void *handle, const void **old_handle)
{
	pthread_mutex_lock(&ma_strategy_change_lock);
	const struct ma_strategy *old = ma_strategy();
	const void *oh = atomic_load(&ma_strategy_handle_cur);
	*old_handle = oh ? oh : old;
	if (old == s) {
		atomic_store(&ma_strategy_handle_cur, handle);
		pthread_mutex_unlock(&ma_strategy_change_lock);
		return 0;
	}
	if (s->init) {
		int e = s->init();
		if (e) {
			pthread_mutex_unlock(&ma_strategy_change_lock);
			return e;
		}
	}
	atomic_store(&ma_strategy_cur, s);
	atomic_store(&ma_strategy_handle_cur, handle);
	if (old->exit)
		old->exit();
	pthread_mutex_unlock(&ma_strategy_change_lock);
	if (atomic_load(&ma_sched_begun) && s->start)
		s->start();
	return 0;
}

const void *ma_strategy_handle(void)
{
	return atomic_load(&ma_strategy_handle_cur);
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

/* Regenerates woken bubble b (not the root) with the current strategy. */
static void ma_shake(struct ma_bubble *b)
{
	const struct ma_strategy *s = ma_strategy();
	if (s->shake) {
		s->shake(b);
		return;
	}
	if (atomic_load(&b->status) == MA_BUBBLE_OPENED)
		ma_bubble_gather(b);
	else if (atomic_load(&b->status) == MA_BUBBLE_CLOSED && ma_bubble_unit(b) == b)
		ma_strategy_submit(b);
}

int marcel_bubble_shake_bubble(marcel_bubble_t *pub)
{
	struct ma_bubble *b = ma_bubble_get(pub);
	if (!b || b == ma_root_bubble)
		return EINVAL;
	if (!ma_rt.running || !b->woken)
		return EPERM;
	ma_shake(b);
	return 0;
}

void marcel_bubble_shake(void)
{
	if (!ma_rt.running)
		return;
	struct ma_bubble *r = ma_root_bubble;
	/* Taken under the root's lock, each with a reference (an implicit bubble may be let
	 * go of meanwhile), and shaken without it: a shake locks the bubble and its holder. */
	ma_spin_lock(&r->hold.lock);
	unsigned n = 0, max = r->nb_members;
	struct ma_bubble **subs = malloc(sizeof(*subs) * (max ? max : 1));
	for (struct ma_list *l = r->members.next; subs && l != &r->members && n < max; l = l->next) {
		struct ma_entity *e = ma_container_of(l, struct ma_entity, member_node);
		if (e->type != MA_BUBBLE_ENTITY)
			continue;
		struct ma_bubble *b = ma_bubble_of_entity(e);
		if (!b->woken || ma_bubble_dead(b))
			continue;
		ma_bubble_ref(b);
		subs[n++] = b;
	}
	ma_spin_unlock(&r->hold.lock);
	for (unsigned i = 0; i < n; i++) {
		ma_shake(subs[i]);
		ma_bubble_unref(subs[i]);
	}
	free(subs);
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

