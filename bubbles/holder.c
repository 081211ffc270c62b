/*
 * Where entities are scheduled inside bubbles: a closed bubble's cache (the holder
 * operations the core calls through marcel/ma_hooks.h when an entity is held by a
 * bubble), what find_next does with a bubble, and the placement primitives (place,
 * burst, gather, move) that strategies are built from. Queueing on run queues is the
 * core's (marcel/runqueue.c). Lock order and states: ma_bubble.h.
 */
#include "ma_strategy.h"
#include "ma_trace.h"
#include "ma_preempt.h"

/* ---- queuing ---- */

/* Puts ready thread e in b's cache (b locked). */
static void ma_cache_put(struct ma_bubble *b, struct ma_entity *e)
{
	ma_list_add_tail(&b->cache, &e->run_node);
	ma_cached_add(b, 1);
	ma_write_once(&e->ready_holder, &b->hold);
}

/* Adds ready thread e to closed bubble b's cache (b locked); queues b on its run queue if
 * it was not and b is CLOSED and placed. -1 if e's sched holder is no longer b (nothing
 * done), else 1 if e came back to b closing and must be counted (ma_cache_counted_back),
 * 0 if not. */
static int ma_cache_add_locked(struct ma_bubble *b, struct ma_entity *e)
{
	if (ma_read_once(&e->sched_holder) != &b->hold)
		return -1;
	if (ma_unlikely(atomic_load_explicit(&b->status, memory_order_relaxed) == MA_BUBBLE_OPENED)) {
		/* Burst while we were on our way: its members live on its queue now. */
		ma_store_release(&e->sched_holder, b->e.sched_holder);
		return -1;
	}
	ma_cache_put(b, e);
	struct ma_holder *h = b->e.sched_holder;
	if (!b->queued && h && h->type == MA_RUNQUEUE_HOLDER &&
	    atomic_load_explicit(&b->status, memory_order_relaxed) == MA_BUBBLE_CLOSED) {
		b->queued = 1;
		/* b's sched holder cannot change while we hold b: this succeeds. */
		ma_rq_enqueue(ma_rq_of_holder(h), &b->e);
	}
	struct ma_holder *asked = &b->hold;
	if (e->type != MA_TASK_ENTITY || atomic_load_explicit(&b->status, memory_order_relaxed) != MA_BUBBLE_CLOSING ||
	    !atomic_compare_exchange_strong(&ma_task_of_entity(e)->leave_req, &asked, NULL))
		return 0;
	/* The reference e held while it was out (ma_gather_out) is now ours: once unlocked,
	 * e may run and end, and b be joined, before we count e back (see ma_bubble_ref). */
	return 1;
}

/* n threads that came back to closing b (b unlocked, and referenced once for each, the
 * references they held while out) are no longer out. */
static void ma_cache_counted_back(struct ma_bubble *b, unsigned n)
{
	if (!n)
		return;
	if (atomic_fetch_sub(&b->nb_out, n) == n)
		ma_bubble_check_closed(b);
	for (unsigned i = 0; i < n; i++)
		ma_bubble_unref(b);
}

/* Adds ready thread e to closed bubble b's cache (ma_cache_add_locked). 0 if e's sched
 * holder is no longer b. */
static int ma_bubble_cache_add(struct ma_bubble *b, struct ma_entity *e)
{
	ma_spin_lock(&b->hold.lock);
	int r = ma_cache_add_locked(b, e);
	ma_spin_unlock(&b->hold.lock);
	if (r < 0)
		return 0;
	ma_cache_counted_back(b, (unsigned)r);
	return 1;
}

/* Takes thread e out of b's cache (b locked). */
static void ma_cache_del(struct ma_bubble *b, struct ma_entity *e)
{
	ma_list_del(&e->run_node);
	ma_cached_add(b, -1);
	ma_write_once(&e->ready_holder, NULL);
}

/* ---- the core's holder operations for closed bubbles (marcel/ma_hooks.h) ---- */

int ma_bubble_holder_add(struct ma_holder *h, struct ma_entity *e)
{
	return ma_bubble_cache_add(ma_bubble_of_holder(h), e);
}

int ma_bubble_holder_take_locked(struct ma_holder *h, struct ma_entity *e, int claim)
{
	struct ma_bubble *b = ma_bubble_of_holder(h);
	/* As ma_bubble_picked: a unit being gathered serves nothing. An emptied cache leaves
	 * the bubble queued; find_next takes it off when it meets it. */
	if (claim && atomic_load(&b->status) == MA_BUBBLE_CLOSING)
		return 0;
	ma_cache_del(b, e);
	return 1;
}

struct ma_holder *ma_bubble_holder_serving(const struct ma_holder *h)
{
	/* One being gathered (CLOSING) or taken off the queues (a gang whose turn ended) runs
	 * nothing; its gather does not wait for a thread that was only on its way to a
	 * processor (ma_gather_out). */
	const struct ma_bubble *b = ma_container_of(h, struct ma_bubble, hold);
	struct ma_holder *up = ma_load_acquire(&b->e.sched_holder);
	if (!up || atomic_load_explicit(&b->status, memory_order_relaxed) == MA_BUBBLE_CLOSING)
		return NULL;
	return up;
}

/* Units a thread was counted back to while locks were held: checked once they are not. */
struct ma_backs {
	struct ma_bubble *u[8];
	unsigned n;
};

/* Thread entity c, asked back by a gather, reached a queue or a cache without passing
 * through a switch or ma_bubble_cache_add (a burst, a resettle, a detach, another gather
 * moved it): it is back. A unit this empties is remembered in bk; with no room left, c
 * stays asked back and is counted at its next switch. */
static void ma_back_quiet(struct ma_entity *c, struct ma_backs *bk)
{
	if (c->type != MA_TASK_ENTITY || bk->n == 8)
		return;
	struct marcel_task *t = ma_task_of_entity(c);
	struct ma_holder *h = atomic_load_explicit(&t->leave_req, memory_order_relaxed) ? atomic_exchange(&t->leave_req, NULL)
											 : NULL;
	if (!h)
		return;
	/* t's reference (ma_gather_out) keeps u until ma_backs_check or below. */
	struct ma_bubble *u = ma_bubble_of_holder(h);
	if (atomic_fetch_sub(&u->nb_out, 1) == 1)
		bk->u[bk->n++] = u;
	else
		ma_bubble_unref(u);
}

static void ma_backs_check(struct ma_backs *bk)
{
	for (unsigned i = 0; i < bk->n; i++) {
		ma_bubble_check_closed(bk->u[i]);
		ma_bubble_unref(bk->u[i]);
	}
}

void ma_tasks_enqueue(struct marcel_task *const *ts, unsigned n)
{
	for (unsigned i = 0; i < n;) {
		struct ma_holder *h = ma_load_acquire(&ts[i]->e.sched_holder);
		if (h->type != MA_BUBBLE_HOLDER || i + 1 == n) {
			ma_entity_enqueue(&ts[i++]->e);
			continue;
		}
		/* A run of threads bound for the same cache: the threads of a recursion's level,
		 * started together by a wake-up. Those whose holder changed meanwhile go one by
		 * one. */
		struct ma_bubble *b = ma_bubble_of_holder(h);
		struct marcel_task *missed[MA_ENQUEUE_BATCH];
		unsigned nmissed = 0, back = 0;
		ma_spin_lock(&b->hold.lock);
		do {
			int r = ma_cache_add_locked(b, &ts[i]->e);
			if (r < 0)
				missed[nmissed++] = ts[i];
			else
				back += (unsigned)r;
			i++;
		} while (i < n && nmissed < MA_ENQUEUE_BATCH &&
			 ma_load_acquire(&ts[i]->e.sched_holder) == h);
		ma_spin_unlock(&b->hold.lock);
		ma_cache_counted_back(b, back);
		for (unsigned k = 0; k < nmissed; k++)
			ma_entity_enqueue(&missed[k]->e);
	}
}

/* Takes b off rq's list if it is queued there (b locked; takes rq). */
static void ma_bubble_unqueue(struct ma_bubble *b)
{
	struct ma_holder *h = b->e.sched_holder;
	if (b->queued && h && h->type == MA_RUNQUEUE_HOLDER) {
		struct ma_runqueue *rq = ma_rq_of_holder(h);
		ma_spin_lock(&rq->hold.lock);
		if (b->e.ready_holder == &rq->hold)
			ma_rq_dequeue_locked(rq, &b->e);
		ma_spin_unlock(&rq->hold.lock);
	}
	b->queued = 0;
}

/* Changes placed bubble b's sched holder (b locked), under the old queue's lock too. */
static void ma_bubble_set_holder(struct ma_bubble *b, struct ma_holder *nh)
{
	struct ma_holder *old = b->e.sched_holder;
	if (old && old->type == MA_RUNQUEUE_HOLDER) {
		ma_spin_lock(&old->lock);
		ma_store_release(&b->e.sched_holder, nh);
		ma_spin_unlock(&old->lock);
	} else {
		ma_store_release(&b->e.sched_holder, nh);
	}
}

/* ---- where members go ---- */

struct ma_holder *ma_bubble_holder_for_member(struct ma_bubble *b)
{
	struct ma_bubble *below = b;
	for (struct ma_bubble *x = b; x; x = ma_entity_parent(&x->e)) {
		if (atomic_load_explicit(&x->status, memory_order_acquire) == MA_BUBBLE_OPENED) {
			if (x == b) {
				struct ma_holder *h = ma_load_acquire(&x->e.sched_holder);
				return h ? h : &ma_rt.rqs[0].hold;
			}
			return &below->hold;
		}
		below = x;
	}
	return &below->hold;
}

struct ma_bubble *ma_bubble_unit(struct ma_bubble *b)
{
	struct ma_holder *h = ma_bubble_holder_for_member(b);
	if (h->type == MA_BUBBLE_HOLDER)
		return ma_bubble_of_holder(h);
	return b;
}

void ma_bubble_start_locked(struct ma_bubble *b, struct marcel_task *t, struct ma_runqueue *rq)
{
	struct ma_holder *h;
	if (t->placed) /* created on the queue its attributes chose: it starts there */
		h = rq ? &rq->hold : ma_read_once(&t->e.sched_holder);
	else if (!b->woken)
		h = &ma_rt.rqs[0].hold;
	else {
		h = ma_bubble_holder_for_member(b);
		if (rq && h->type == MA_RUNQUEUE_HOLDER)
			h = &rq->hold;
	}
	ma_bubble_start_in_locked(b, t, h);
}

void ma_bubble_start_in_locked(struct ma_bubble *b, struct marcel_task *t, struct ma_holder *h)
{
	ma_store_release(&t->e.sched_holder, h);
	b->unit.nb_born--;
	atomic_store_explicit(&t->state, MA_TASK_READY, memory_order_relaxed);
}

int ma_bubble_start_task(struct ma_bubble *b, struct marcel_task *t, struct ma_runqueue *rq, int force)
{
	ma_spin_lock(&b->hold.lock);
	if (atomic_load(&t->state) != MA_TASK_BORN) {
		ma_spin_unlock(&b->hold.lock);
		return EINVAL;
	}
	if (!b->woken && !force) {
		ma_spin_unlock(&b->hold.lock);
		return 0; /* starts with its bubble */
	}
	ma_bubble_start_locked(b, t, rq);
	ma_spin_unlock(&b->hold.lock);
	ma_entity_enqueue(&t->e);
	return 0;
}

/* Starts the BORN threads of x's subtree that wait for their bubble. Takes each bubble's
 * lock itself, parent first; the caller holds the tree lock, so membership stays put. */
static void ma_start_born_rec(struct ma_bubble *x)
{
	/* Made ready in batches under the lock, queued outside it: one pass over the members
	 * per batch rather than per thread. A started thread may end and leave the list as
	 * soon as it is queued, so no position in the list is kept across the unlock. */
	enum { BATCH = 256 };
	struct marcel_task *ready[BATCH];
	for (;;) {
		unsigned n = 0;
		ma_spin_lock(&x->hold.lock);
		if (x->woken && !x->implicit)
			ma_list_for_each_entry(struct ma_entity, m, &x->members, member_node) {
				if (!x->unit.nb_born || n == BATCH)
					break;
				if (m->type == MA_TASK_ENTITY &&
				    atomic_load(&ma_task_of_entity(m)->state) == MA_TASK_BORN) {
					ma_bubble_start_locked(x, ma_task_of_entity(m), NULL);
					ready[n++] = ma_task_of_entity(m);
				}
			}
		ma_spin_unlock(&x->hold.lock);
		for (unsigned i = 0; i < n; i++)
			ma_entity_enqueue(&ready[i]->e);
		if (n < BATCH)
			break;
	}
	ma_spin_lock(&x->hold.lock);
	ma_list_for_each_entry(struct ma_entity, m, &x->members, member_node) {
		if (m->type == MA_BUBBLE_ENTITY) {
			ma_spin_unlock(&x->hold.lock);
			ma_start_born_rec(ma_bubble_of_entity(m));
			ma_spin_lock(&x->hold.lock);
		}
	}
	ma_spin_unlock(&x->hold.lock);
}

void ma_start_born(struct ma_bubble *b)
{
	ma_start_born_rec(b);
}

void ma_bubble_start_born(struct ma_bubble *b)
{
	ma_tree_lock();
	ma_start_born_rec(b);
	ma_tree_unlock();
}

/* ---- moving threads ---- */

int ma_entity_move(struct ma_entity *e, struct ma_runqueue *rq)
{
	if (e->type == MA_BUBBLE_ENTITY) {
		struct ma_bubble *b = ma_bubble_of_entity(e);
		struct ma_holder *h = ma_load_acquire(&b->e.sched_holder);
		if (b->fixed_item >= 0 || !h || h->type != MA_RUNQUEUE_HOLDER ||
		    atomic_load(&b->status) != MA_BUBBLE_CLOSED)
			return EBUSY;
		ma_bubble_place(b, rq);
		return 0;
	}
	struct marcel_task *t = ma_task_of_entity(e);
	struct ma_holder *h = ma_load_acquire(&e->sched_holder);
	if (t->pinned || h->type != MA_RUNQUEUE_HOLDER)
		return EBUSY;
	ma_entity_move_to_holder(e, &rq->hold);
	return 0;
}

/* ---- placing, bursting, gathering ---- */

int ma_bubble_in_unit_locked(struct ma_bubble *b)
{
	/* A gather closes a bubble before it walks (and locks) its members, and a parent
	 * opens only by a burst, which needs it placed, hence not inside a unit: with b
	 * locked, a parent that is not opened means b belongs to the unit above it (or is
	 * about to). A stale decision that placed b anyway would make it a unit of its own
	 * inside a closed one, whose threads the gather has already taken. */
	struct ma_bubble *p = ma_entity_parent(&b->e);
	return p && atomic_load(&p->status) != MA_BUBBLE_OPENED;
}

/* b (locked) is still what a decision saw of it. */
static int ma_seen_ok(const struct ma_bubble *b, const struct ma_seen *s)
{
	return !ma_bubble_dead(b) && b->uid == s->uid && atomic_load(&b->status) == s->status &&
	       b->e.sched_holder == s->sched && b->fixed_item == s->fixed_item;
}

/* ma_bubble_place, and with `s` ma_bubble_place_seen: 1 if b was placed. */
static int ma_place(struct ma_bubble *b, struct ma_runqueue *rq, int quiet, const struct ma_seen *s)
{
	ma_spin_lock(&b->hold.lock);
	if (s && !ma_seen_ok(b, s)) {
		ma_spin_unlock(&b->hold.lock);
		return 0;
	}
	while (ma_bubble_in_unit_locked(b) && atomic_load(&b->status) == MA_BUBBLE_CLOSED && !ma_bubble_dead(b)) {
		/* Its parent closed since the strategy decided: it joins the parent's unit. A
		 * decision (s) is not carried out then, whatever absorbing finds. */
		ma_spin_unlock(&b->hold.lock);
		if (ma_bubble_absorb(b) || s)
			return 0;
		ma_spin_lock(&b->hold.lock);
	}
	if (atomic_load(&b->status) == MA_BUBBLE_OPENED || ma_bubble_dead(b)) {
		ma_spin_unlock(&b->hold.lock);
		return 0;
	}
	ma_bubble_unqueue(b);
	ma_bubble_set_holder(b, &rq->hold);
	if (!quiet && !ma_list_empty(&b->cache) && atomic_load(&b->status) == MA_BUBBLE_CLOSED) {
		b->queued = 1;
		ma_rq_enqueue(rq, &b->e);
	}
	ma_spin_unlock(&b->hold.lock);
	MA_TRACE(MA_TR_RQ_SWITCH, b->uid, rq->level->id, rq->name);
	return 1;
}

void ma_bubble_place(struct ma_bubble *b, struct ma_runqueue *rq)
{
	(void)ma_place(b, rq, 0, NULL);
}

int ma_bubble_place_seen(struct ma_bubble *b, struct ma_runqueue *rq, int quiet, const struct ma_seen *s)
{
	return ma_place(b, rq, quiet, s);
}

void ma_bubble_unplace(struct ma_bubble *b)
{
	ma_spin_lock(&b->hold.lock);
	ma_bubble_unqueue(b);
	ma_bubble_set_holder(b, NULL);
	ma_spin_unlock(&b->hold.lock);
}

int ma_bubble_unplace_seen(struct ma_bubble *b, const struct ma_seen *s)
{
	ma_spin_lock(&b->hold.lock);
	int ok = ma_seen_ok(b, s) && atomic_load(&b->status) == MA_BUBBLE_CLOSED;
	if (ok) {
		ma_bubble_unqueue(b);
		ma_bubble_set_holder(b, NULL);
	}
	ma_spin_unlock(&b->hold.lock);
	return ok;
}

/* For every thread of x's subtree scheduled on `from`, schedule it on `to` instead
 * (holders are locked along the walk: `from` and x and the bubbles above x). */
static void ma_retarget_rec(struct ma_bubble *x, struct ma_holder *from, struct ma_holder *to)
{
	ma_list_for_each_entry(struct ma_entity, m, &x->members, member_node) {
		if (m->type == MA_TASK_ENTITY) {
			if (m->sched_holder == from)
				ma_store_release(&m->sched_holder, to);
		} else {
			struct ma_bubble *s = ma_bubble_of_entity(m);
			ma_spin_lock(&s->hold.lock);
			ma_retarget_rec(s, from, to);
			ma_spin_unlock(&s->hold.lock);
		}
	}
}

/* The member of b whose subtree holds entity e (e itself if it is a direct member), NULL
 * if e is not in b's subtree any more. */
static struct ma_entity *ma_member_containing(struct ma_bubble *b, struct ma_entity *e)
{
	for (;;) {
		struct ma_bubble *p = ma_entity_parent(e);
		if (p == b)
			return e;
		if (!p)
			return NULL;
		e = &p->e;
	}
}

void ma_bubble_burst(struct ma_bubble *b, struct ma_runqueue *rq)
{
	(void)ma_bubble_burst_seen(b, rq, NULL);
}

int ma_bubble_burst_seen(struct ma_bubble *b, struct ma_runqueue *rq, const struct ma_seen *seen)
{
	ma_spin_lock(&b->hold.lock);
	int moved = 0;
	if (seen) {
		if (!ma_seen_ok(b, seen) || atomic_load(&b->status) != MA_BUBBLE_CLOSED) {
			ma_spin_unlock(&b->hold.lock);
			return 0;
		}
		if (ma_bubble_in_unit_locked(b)) {
			/* As ma_bubble_place: its parent closed since the decision. */
			ma_spin_unlock(&b->hold.lock);
			(void)ma_bubble_absorb(b);
			return 0;
		}
		/* Placed on rq without being queued: no VP can serve it before it bursts. */
		if (b->e.sched_holder != &rq->hold) {
			ma_bubble_unqueue(b);
			ma_bubble_set_holder(b, &rq->hold);
			moved = 1;
		}
	}
	if (atomic_load(&b->status) != MA_BUBBLE_CLOSED || b->e.sched_holder != &rq->hold || ma_bubble_dead(b)) {
		ma_spin_unlock(&b->hold.lock);
		return 0;
	}
	/* Off the queue and not yet spread on it, its threads would count nowhere in the
	 * loads that stealing strategies read (a kernel preemption can stretch that to
	 * milliseconds, and a thief would then take work from a side short of none): they
	 * count as incoming until all are queued. */
	int incoming = (int)b->nb_cached;
	atomic_fetch_add_explicit(&rq->nr_incoming, incoming, memory_order_relaxed);
	ma_bubble_unqueue(b);
	struct ma_backs bk;
	bk.n = 0;
	atomic_store(&b->status, MA_BUBBLE_OPENED);
	b->burst_ns = ma_clock_ns();
	ma_write_once(&b->e.last_level, (int)rq->level->id);
	/* Threads waiting in the cache go where their member goes; keep their order. */
	struct ma_list cached;
	ma_list_init(&cached);
	if (!ma_list_empty(&b->cache)) {
		cached.next = b->cache.next;
		cached.prev = b->cache.prev;
		cached.next->prev = &cached;
		cached.prev->next = &cached;
		ma_list_init(&b->cache);
		ma_write_once(&b->nb_cached, 0);
	}
	/* Members become units: threads on rq, sub-bubbles closed units placed on rq. A
	 * sub-bubble is placed only once its cache is complete (below): placed, it is
	 * queued by the first of its threads that gets ready, and a VP may burst it at once;
	 * the threads still to come from b's cache would then land, still targeting what
	 * that burst retargeted them to, in the cache of an opened bubble that nobody serves
	 * (doc/design.md, "A burst placed sub-bubbles before their caches were complete").
	 * Until then a thread getting ready in it joins its cache without queuing it. */
	ma_list_for_each_entry(struct ma_entity, m, &b->members, member_node) {
		if (m->type == MA_TASK_ENTITY) {
			if (m->sched_holder == &b->hold)
				ma_store_release(&m->sched_holder, &rq->hold);
			continue;
		}
		struct ma_bubble *s = ma_bubble_of_entity(m);
		ma_spin_lock(&s->hold.lock);
		if (atomic_load(&s->status) != MA_BUBBLE_OPENED)
			ma_retarget_rec(s, &b->hold, &s->hold);
		ma_spin_unlock(&s->hold.lock);
	}
	while (!ma_list_empty(&cached)) {
		struct ma_entity *c = ma_container_of(cached.next, struct ma_entity, run_node);
		ma_list_del(&c->run_node);
		ma_write_once(&c->ready_holder, NULL);
		struct ma_entity *m = ma_member_containing(b, c);
		if (!m) {
			/* Its bubble left b while it waited in b's cache (moved out as a unit of its
			 * own): it runs where b bursts until its bubble's next gather or placement
			 * takes it back, rather than going to a cache nobody serves. */
			ma_store_release(&c->sched_holder, &rq->hold);
			m = c;
		}
		ma_back_quiet(c, &bk);
		if (m == c) {
			ma_rq_enqueue(rq, c);
			continue;
		}
		struct ma_bubble *s = ma_bubble_of_entity(m);
		ma_spin_lock(&s->hold.lock);
		ma_cache_put(s, c);
		ma_spin_unlock(&s->hold.lock);
	}
	/* Placed and queued only now that their caches are complete (see above). */
	ma_list_for_each_entry(struct ma_entity, m, &b->members, member_node) {
		if (m->type != MA_BUBBLE_ENTITY)
			continue;
		struct ma_bubble *s = ma_bubble_of_entity(m);
		ma_spin_lock(&s->hold.lock);
		if (atomic_load(&s->status) != MA_BUBBLE_OPENED)
			ma_store_release(&s->e.sched_holder, &rq->hold);
		if (!s->queued && !ma_list_empty(&s->cache) && atomic_load(&s->status) == MA_BUBBLE_CLOSED && s->e.sched_holder == &rq->hold) {
			s->queued = 1;
			ma_rq_enqueue(rq, &s->e);
		}
		ma_spin_unlock(&s->hold.lock);
	}
	atomic_fetch_sub_explicit(&rq->nr_incoming, incoming, memory_order_relaxed);
	struct ma_worker *w = ma_worker_self();
	ma_spin_unlock(&b->hold.lock);
	ma_backs_check(&bk);
	if (moved)
		MA_TRACE(MA_TR_RQ_SWITCH, b->uid, rq->level->id, rq->name);
	MA_TRACE(MA_TR_BUBBLE_BURST, b->uid, rq->level->id, rq->name);
	if (w)
		ma_bubble_regen_arm(w, b);
	return 1;
}

/* Marks thread t (of a bubble being gathered into u) as having to come back. */
static void ma_gather_out(struct ma_bubble *u, struct marcel_task *t)
{
	/* A READY one not on its queue is on its way to a processor (taken by a worker) or
	 * to a queue: waited for too, so that no thread of u runs once u is closed. The
	 * switch sends it back to u (sched.c, ma_still_ours) and every way into a cache
	 * counts it back (ma_back_quiet). */
	int s = atomic_load(&t->state);
	if ((s != MA_TASK_RUNNING && s != MA_TASK_READY && s != MA_TASK_BLOCKING) || atomic_load(&t->hosts_seed))
		return;
	/* Already asked back by an earlier gather (of a unit its bubble has left since):
	 * that unit counts it and is told when it is back; asking again would overwrite
	 * its request and that unit would wait for it for ever. u does not wait for it: it
	 * comes back to u's cache anyway (its sched holder is u now). */
	if (atomic_load(&t->leave_req))
		return;
	atomic_fetch_add(&u->nb_out, 1);
	/* Held until t is counted back, wherever that is: t may meanwhile end and empty u,
	 * and an implicit bubble emptied is let go of (ma_bubble_free_now). */
	ma_bubble_ref(u);
	atomic_store(&t->leave_req, &u->hold);
	/* It may have blocked, ended or started hosting a seed since: then it is already
	 * back (or gone). A joiner hosting a seed does not come back before the seed ends,
	 * and the seed may be waiting for threads of u: counted as blocked (seed.c). */
	s = atomic_load(&t->state);
	if ((s != MA_TASK_RUNNING && s != MA_TASK_READY && s != MA_TASK_BLOCKING) || atomic_load(&t->hosts_seed)) {
		struct ma_holder *mine = &u->hold;
		if (atomic_compare_exchange_strong(&t->leave_req, &mine, NULL)) {
			atomic_fetch_sub(&u->nb_out, 1);
			ma_bubble_unref(u); /* not the last: the gather holds one */
		}
		return;
	}
	int vp = atomic_load_explicit(&t->last_vp, memory_order_relaxed);
	if (s == MA_TASK_RUNNING && vp >= 0 && (unsigned)vp < ma_rt.nb_vps)
		ma_preempt_request(&ma_rt.workers[vp]);
}

/* Pulls every thread of x's subtree into u's cache (u and x and the bubbles between are
 * locked). */
static void ma_gather_rec(struct ma_bubble *u, struct ma_bubble *x, struct ma_backs *bk)
{
	ma_list_for_each_entry(struct ma_entity, m, &x->members, member_node) {
		if (m->type == MA_BUBBLE_ENTITY) {
			struct ma_bubble *s = ma_bubble_of_entity(m);
			ma_spin_lock(&s->hold.lock);
			ma_bubble_unqueue(s);
			ma_bubble_set_holder(s, NULL);
			atomic_store(&s->status, MA_BUBBLE_CLOSED);
			ma_gather_rec(u, s, bk);
			ma_spin_unlock(&s->hold.lock);
			continue;
		}
		struct marcel_task *t = ma_task_of_entity(m);
		if (t->pinned || atomic_load(&t->state) == MA_TASK_BORN)
			continue;
		for (;;) {
			struct ma_holder *h = ma_load_acquire(&m->sched_holder);
			if (h == &u->hold)
				break;
			int queued = 0;
			if (h->type == MA_BUBBLE_HOLDER) {
				/* A unit inside u's subtree: locked by this walk. */
				struct ma_bubble *hb = ma_bubble_of_holder(h);
				if (m->ready_holder == h) {
					ma_cache_del(hb, m);
					queued = 1;
				}
				ma_store_release(&m->sched_holder, &u->hold);
			} else {
				struct ma_runqueue *rq = ma_rq_of_holder(h);
				ma_spin_lock(&rq->hold.lock);
				if (ma_read_once(&m->sched_holder) != h) {
					ma_spin_unlock(&rq->hold.lock);
					continue;
				}
				if (m->ready_holder == h) {
					ma_rq_dequeue_locked(rq, m);
					queued = 1;
				}
				ma_store_release(&m->sched_holder, &u->hold);
				ma_spin_unlock(&rq->hold.lock);
			}
			if (queued) {
				ma_back_quiet(m, bk);
				ma_cache_put(u, m);
			} else {
				ma_gather_out(u, t);
			}
			break;
		}
	}
}

/* ma_bubble_gather, and with `s` ma_bubble_gather_seen: *done says whether b was
 * gathered. */
static unsigned ma_gather(struct ma_bubble *b, const struct ma_seen *s, int *done)
{
	*done = 0;
	ma_spin_lock(&b->hold.lock);
	if ((s && !ma_seen_ok(b, s)) || atomic_load(&b->status) != MA_BUBBLE_OPENED || b == ma_root_bubble ||
	    ma_bubble_dead(b)) {
		ma_spin_unlock(&b->hold.lock);
		return 0;
	}
	*done = 1;
	atomic_store(&b->status, MA_BUBBLE_CLOSING);
	/* Threads that come back before the walk ends must not close it early. */
	atomic_fetch_add(&b->nb_out, 1);
	ma_bubble_ref(b); /* see ma_bubble_ref */
	MA_TRACE(MA_TR_BUBBLE_CLOSE, b->uid, 0, NULL);
	struct ma_backs bk;
	bk.n = 0;
	ma_gather_rec(b, b, &bk);
	ma_spin_unlock(&b->hold.lock);
	ma_backs_check(&bk);
	unsigned out = atomic_fetch_sub(&b->nb_out, 1) - 1;
	if (!out)
		ma_bubble_check_closed(b);
	ma_bubble_unref(b);
	return out;
}

unsigned ma_bubble_gather(struct ma_bubble *b)
{
	int done;
	return ma_gather(b, NULL, &done);
}

int ma_bubble_gather_seen(struct ma_bubble *b, const struct ma_seen *s)
{
	int done;
	(void)ma_gather(b, s, &done);
	return done;
}

void ma_unit_back(struct ma_holder *h)
{
	/* The thread's reference, taken when it was asked back (ma_gather_out), keeps u
	 * until here: u may have been let go of meanwhile, if the thread emptied it. */
	struct ma_bubble *u = ma_bubble_of_holder(h);
	if (atomic_fetch_sub(&u->nb_out, 1) == 1)
		ma_bubble_check_closed(u);
	ma_bubble_unref(u);
}

void ma_bubble_check_closed(struct ma_bubble *b)
{
	ma_spin_lock(&b->hold.lock);
	int closed = atomic_load(&b->status) == MA_BUBBLE_CLOSING && !atomic_load(&b->nb_out);
	if (closed)
		atomic_store(&b->status, MA_BUBBLE_CLOSED);
	/* Let go of while it closed (its last thread ended): nothing to place. */
	int dead = ma_bubble_dead(b);
	ma_spin_unlock(&b->hold.lock);
	if (!closed || dead)
		return;
	MA_TRACE(MA_TR_BUBBLE_CLOSED, b->uid, 0, NULL);
	ma_bubble_resettle(b);
}

int ma_bubble_absorb(struct ma_bubble *b)
{
	for (;;) {
		struct ma_bubble *p = ma_entity_parent(&b->e);
		if (!p)
			return 0;
		ma_spin_lock(&p->hold.lock);
		struct ma_holder *h = ma_bubble_holder_for_member(p);
		ma_spin_unlock(&p->hold.lock);
		if (h->type == MA_RUNQUEUE_HOLDER)
			return 0;
		/* Its parent is part of a closed unit: b's threads join that unit. */
		struct ma_bubble *u = ma_bubble_of_holder(h);
		struct ma_backs bk;
		bk.n = 0;
		ma_spin_lock(&u->hold.lock);
		ma_spin_lock(&b->hold.lock);
		/* u may have burst, or been gathered into a unit above it, since we looked:
		 * with u locked, neither can happen now, so check that u is still the unit. */
		p = ma_entity_parent(&b->e);
		if (!p || ma_bubble_holder_for_member(p) != &u->hold) {
			ma_spin_unlock(&b->hold.lock);
			ma_spin_unlock(&u->hold.lock);
			continue;
		}
		if (atomic_load(&b->status) == MA_BUBBLE_CLOSED) {
			ma_bubble_unqueue(b);
			ma_bubble_set_holder(b, NULL);
			ma_retarget_rec(b, &b->hold, &u->hold);
			int was_empty = ma_list_empty(&u->cache);
			while (!ma_list_empty(&b->cache)) {
				struct ma_entity *c = ma_container_of(b->cache.next, struct ma_entity, run_node);
				ma_cache_del(b, c);
				ma_back_quiet(c, &bk);
				ma_cache_put(u, c);
			}
			struct ma_holder *uh = u->e.sched_holder;
			if (was_empty && !ma_list_empty(&u->cache) && !u->queued && uh &&
			    uh->type == MA_RUNQUEUE_HOLDER && atomic_load(&u->status) == MA_BUBBLE_CLOSED) {
				u->queued = 1;
				ma_rq_enqueue(ma_rq_of_holder(uh), &u->e);
			}
		}
		ma_spin_unlock(&b->hold.lock);
		ma_spin_unlock(&u->hold.lock);
		ma_backs_check(&bk);
		return 1;
	}
}

void ma_bubble_resettle(struct ma_bubble *b)
{
	if (!ma_bubble_absorb(b))
		ma_strategy_submit(b);
}

void ma_bubble_detach_from_unit(struct ma_bubble *b)
{
	struct ma_bubble *p = ma_entity_parent(&b->e);
	if (!p || !b->woken)
		return;
	ma_spin_lock(&p->hold.lock);
	struct ma_holder *h = ma_bubble_holder_for_member(p);
	ma_spin_unlock(&p->hold.lock);
	if (h->type != MA_BUBBLE_HOLDER)
		return;
	struct ma_bubble *u = ma_bubble_of_holder(h);
	struct ma_backs bk;
	bk.n = 0;
	ma_spin_lock(&u->hold.lock);
	ma_spin_lock(&b->hold.lock);
	/* Still inside a closed unit (u may have burst meanwhile: then b is a unit of its
	 * own already, and nothing targets u any more). */
	if (atomic_load(&b->status) == MA_BUBBLE_CLOSED && !b->e.sched_holder) {
		ma_retarget_rec(b, &u->hold, &b->hold);
		ma_list_for_each_entry_safe(struct ma_entity, c, &u->cache, run_node) {
			struct ma_bubble *cp = ma_entity_parent(c);
			if (!cp || !ma_bubble_is_within(cp, b))
				continue;
			ma_cache_del(u, c);
			ma_back_quiet(c, &bk);
			ma_cache_put(b, c);
		}
	}
	ma_spin_unlock(&b->hold.lock);
	ma_spin_unlock(&u->hold.lock);
	ma_backs_check(&bk);
}

/* ---- find_next meets a bubble ---- */

struct marcel_task *ma_bubble_picked(struct ma_worker *w, struct ma_runqueue *rq, struct ma_entity *e)
{
	struct ma_bubble *b = ma_bubble_of_entity(e);
	const struct ma_strategy_use *u = ma_strategy_current();
	const struct ma_strategy *s = u ? u->s : NULL;
	struct ma_runqueue *to = NULL;
	enum ma_pick what = MA_PICK_SERVE;
	if (b->fixed_item >= 0)
		what = MA_PICK_BURST;
	else if (s && s->decide_pick)
		what = ma_strategy_pick(u, w, rq, b, &to);
	if (what == MA_PICK_SERVE) {
		if (!ma_spin_trylock(&b->hold.lock)) {
			ma_spin_unlock(&rq->hold.lock);
			ma_cpu_relax();
			return NULL;
		}
		struct marcel_task *t = NULL;
		/* A unit being gathered is not served (the switch would send the thread back). */
		if (!ma_list_empty(&b->cache) && atomic_load(&b->status) != MA_BUBBLE_CLOSING) {
			struct ma_entity *c = ma_container_of(b->cache.next, struct ma_entity, run_node);
			ma_cache_del(b, c);
			ma_write_once(&c->last_level, (int)rq->level->id);
			t = ma_task_of_entity(c);
		}
		ma_rq_dequeue_locked(rq, &b->e);
		if (t && !ma_list_empty(&b->cache))
			ma_rq_enqueue_locked(rq, &b->e); /* round robin among the queue's units */
		else
			b->queued = 0; /* closing: queued again once closed (resettle, place) */
		int more = rq->vp < 0 && atomic_load_explicit(&rq->bitmap, memory_order_relaxed) &&
			   !atomic_load_explicit(&rq->nr_spinning, memory_order_relaxed) &&
			   atomic_load_explicit(&rq->nr_sleeping, memory_order_relaxed);
		ma_spin_unlock(&b->hold.lock);
		ma_spin_unlock(&rq->hold.lock);
		if (more)
			ma_wake_idle_worker(rq);
		return t;
	}
	/* Decisions about rq's children are taken under rq's lock: the next one must see
	 * this move before it is done. */
	if (what == MA_PICK_MOVE && to)
		atomic_fetch_add_explicit(&to->nr_incoming, 1, memory_order_relaxed);
	/* Queued, b cannot be destroyed yet (a destroy needs it unplaced, which takes rq's
	 * lock); once rq is unlocked its last thread may end and its joiner destroy it and
	 * reuse the storage (a bubble on a stack) while we burst or move it: the reference
	 * makes marcel_bubble_destroy wait (doc/design.md, "Bubbles and holders"). */
	ma_bubble_ref(b);
	ma_spin_unlock(&rq->hold.lock);
	if (what == MA_PICK_BURST)
		ma_bubble_burst(b, rq);
	else if (what == MA_PICK_MOVE && to) {
		ma_entity_move(&b->e, to);
		atomic_fetch_sub_explicit(&to->nr_incoming, 1, memory_order_relaxed);
	}
	ma_bubble_unref(b);
	return NULL;
}
