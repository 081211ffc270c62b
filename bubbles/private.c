/*
 * Private bubbles: the levels of a fork-join recursion kept off the shared bubble tree
 * until another VP wants some of their work.
 *
 * A level of such a recursion (examples/sumtime, examples/nested-sort) initialises a
 * bubble, creates a few seeds in it, wakes it, joins the seeds and the bubble, and
 * destroys it; most of the time its own VP runs those seeds (seed.c) and no other VP ever
 * looks at the bubble. Done in the shared tree, that cost a level 29 locked instructions
 * (doc/design.md, "Private bubbles"). So a bubble initialised by a thread running on
 * worker w starts private to w (b->unit.private_w): only code running on w touches it, with
 * plain loads and stores. It holds seeds created there; woken there, it is only marked
 * (its seeds run when their joiner takes them, ma_private_claim); joined and destroyed
 * there, it never was in the tree.
 *
 * Who runs on w: the thread w runs and the joiners whose stacks it runs on (seed.c), one
 * chain. Before any of them switches out (yield, block, preemption, a blocking section)
 * or ends, w publishes all its private bubbles, so that a bubble private to w belongs to
 * the chain w runs now. Publishing makes a bubble what it would have been had it always
 * been public: unwoken, or woken into the bubble of the thread that woke it, its seeds
 * that were taken running (ma_wake_pass_locked gives them their holder) and the others
 * started.
 *
 * Anybody else who wants a private bubble gets it: a marcel call naming it on another VP
 * (ma_bubble_get) sets w->publish_all_req and waits for the publication; an idle VP asks
 * every VP that keeps some (ma_private_hunt, w->publish_req) and is handed the oldest
 * unstarted seed (ma_private_give), as a work-stealing thief would. w's fast paths check
 * both requests. An asker also requests a preemption of w (at once for a bubble, after
 * MA_PRIVATE_PATIENCE_NS for work), which brings a thread computing in a loop to a safe
 * point where it yields, and yielding publishes. Where preemption is unavailable
 * (ThreadSanitizer builds), a thread that neither calls marcel nor ends keeps its private
 * bubbles until it does. A VP that idles is also fed at any VP's next private wake-up
 * (ma_rt.nb_idle), which covers one that went to sleep before anything was private.
 *
 * Strategies opt in (ma_strategy.private_levels): a private bubble stays on the VP that
 * woke it, which is what cache does with such a bubble but not what spread or burst do.
 * While a trace is being written, bubbles are woken publicly.
 */
#include <sched.h>
#include <string.h>
#include "ma_strategy.h"
#include "ma_preempt.h"
#include "ma_trace.h"

/* Whether bubbles made or woken now may stay private. */
static int ma_private_ok(void)
{
	const struct ma_strategy_use *u = ma_strategy_current();
	return u && u->private_levels && !ma_tracing();
}

static unsigned ma_nb_private(const struct ma_worker *w)
{
	return atomic_load_explicit(&w->nb_private, memory_order_relaxed);
}

int ma_bubble_private_init(struct ma_worker *w, struct ma_bubble *b)
{
	if (!w || ma_worker_current(w)->is_idle || !ma_private_ok())
		return 0;
	unsigned n = ma_nb_private(w);
	if (n == MA_PRIVATE_MAX)
		return 0;
	w->privates[n] = b;
	b->private_rt = ma_runtime_gen;
	atomic_store_explicit(&b->unit.private_w, w, memory_order_relaxed);
	ma_worker_set_nb_private(w, n + 1);
	return 1;
}

/* b (private) is no longer privately woken: its waker no longer answers for it. */
static void ma_private_unwake(struct ma_bubble *b)
{
	if (b->unit.private_woken)
		b->private_waker->nb_private_woken--;
	b->unit.private_woken = 0;
	b->private_waker = NULL;
}

void ma_private_forget(struct ma_worker *w, struct ma_bubble *b)
{
	unsigned n = ma_nb_private(w);
	/* Usually the newest: levels end in the order they began. */
	for (unsigned i = n; i-- > 0;) {
		if (w->privates[i] == b) {
			if (i != n - 1)
				memmove(&w->privates[i], &w->privates[i + 1], (n - 1 - i) * sizeof(w->privates[0]));
			ma_worker_set_nb_private(w, n - 1);
			/* Listed, so its waker is one of ours. */
			ma_private_unwake(b);
			break;
		}
	}
	atomic_store_explicit(&b->unit.private_w, NULL, memory_order_release);
}

void ma_bubble_private_reinit(struct ma_bubble *b)
{
	struct ma_worker *o = atomic_load_explicit(&b->unit.private_w, memory_order_acquire);
	/* The storage may hold anything around an old magic number (check_bubbles, run
	 * without fork, had a return address for o): only a worker of this runtime that made
	 * b private lists it. The generation rules out an image from an earlier runtime,
	 * whose workers array this one's may reuse. */
	uintptr_t off = (uintptr_t)o - (uintptr_t)ma_rt.workers;
	if (!o || b->private_rt != ma_runtime_gen || off >= ma_rt.nb_vps * sizeof(*o) || off % sizeof(*o))
		return;
	if (o == ma_worker_self())
		ma_private_forget(o, b);
	else
		ma_bubble_unprivate(b);
}

/* Whether b is still a bubble private to w: storage let go of without a destroy (the
 * application must not, bubble.h) and holding something else now is not ours to touch. */
static int ma_private_mine(const struct ma_worker *w, struct ma_bubble *b)
{
	return ma_read_once(&b->magic) == MA_BUBBLE_MAGIC &&
	       atomic_load_explicit(&b->unit.private_w, memory_order_relaxed) == w;
}

/* b, private to w (the caller's VP), becomes public. */
static void ma_private_publish(struct ma_worker *w, struct ma_bubble *b)
{
	if (!ma_private_mine(w, b))
		return;
	/* Its VP alone saw it so far: the rest of its set-up (bubble.c). */
	ma_bubble_complete(b);
	if (b->unit.private_woken) {
		struct marcel_task *waker = b->private_waker;
		ma_private_unwake(b);
		/* Still private meanwhile: another VP that wants it waits for the end. */
		ma_bubble_wake_as(b, waker);
	}
	atomic_store_explicit(&b->unit.private_w, NULL, memory_order_release);
}

/* Publishes the k oldest private bubbles of w, the caller's VP. Oldest first: a bubble
 * woken by a seed of an older one goes into that one, public by then. */
static void ma_private_publish_first(struct ma_worker *w, unsigned k)
{
	unsigned n = ma_nb_private(w);
	/* Taken off the list first: nothing the wake-ups run may publish them twice. */
	struct ma_bubble *going[MA_PRIVATE_MAX];
	memcpy(going, w->privates, k * sizeof(going[0]));
	memmove(w->privates, w->privates + k, (n - k) * sizeof(w->privates[0]));
	ma_worker_set_nb_private(w, n - k);
	for (unsigned i = 0; i < k; i++)
		ma_private_publish(w, going[i]);
}

/* Whether VP o waits for work (from its hunt until it stops idling). */
static int ma_vp_waits(const struct ma_worker *o)
{
	return atomic_load_explicit(&o->hungry, memory_order_relaxed) &&
	       !atomic_load_explicit(&o->attn.disabled, memory_order_relaxed);
}

/* Claims the right to hand VP `to` work: it waits, and nobody fed it yet. */
static int ma_private_may_feed(struct ma_worker *to)
{
	return ma_vp_waits(to) && !atomic_load_explicit(&to->fed, memory_order_relaxed) &&
	       !atomic_exchange(&to->fed, 1);
}

/* Hands idle VP `to` the oldest unstarted seed of w (the caller's VP), as a thief takes
 * the top of a work-stealing deque: the private bubbles up to its own are published, its
 * siblings start where the wake-up puts them, and it starts on to's queue (which wakes
 * that VP) once the strategy has placed its bubble, which would otherwise bring it back
 * to its siblings' VP. 0 if no private bubble of w has one. */
static int ma_private_give(struct ma_worker *w, struct ma_worker *to)
{
	unsigned n = ma_nb_private(w);
	for (unsigned k = 0; k < n; k++) {
		struct ma_bubble *b = w->privates[k];
		if (!ma_private_mine(w, b) || !b->unit.private_woken || !b->unit.nb_born)
			continue;
		struct marcel_task *t = NULL;
		ma_list_for_each_entry(struct ma_entity, e, &b->members, member_node) {
			struct marcel_task *m = ma_task_of_entity(e);
			if (atomic_load_explicit(&m->state, memory_order_relaxed) == MA_TASK_BORN) {
				t = m;
				break;
			}
		}
		if (!t)
			continue;
		t->private_handed = 1;
		ma_private_publish_first(w, k + 1);
		ma_spin_lock(&b->hold.lock);
		int here = ma_entity_parent(&t->e) == b && atomic_load(&t->state) == MA_TASK_BORN;
		t->private_handed = 0;
		if (here)
			ma_bubble_start_in_locked(b, t, &to->rq.hold);
		ma_spin_unlock(&b->hold.lock);
		if (here)
			ma_entity_enqueue(&t->e);
		return 1;
	}
	return 0;
}

/* Serves the VP that asked w (the caller's VP) for work, if one did. */
static void ma_private_serve(struct ma_worker *w)
{
	if (!atomic_load_explicit(&w->publish_req, memory_order_relaxed))
		return;
	int req = atomic_exchange_explicit(&w->publish_req, 0, memory_order_relaxed);
	if (req <= 0 || (unsigned)req > ma_rt.nb_vps)
		return;
	struct ma_worker *to = &ma_rt.workers[req - 1];
	/* Found work meanwhile, or fed by another VP: once is enough. */
	if (!ma_private_may_feed(to))
		return;
	if (ma_private_give(w, to))
		return;
	atomic_store_explicit(&to->fed, 0, memory_order_relaxed);
	/* Nothing unstarted now: served when there is, if it still waits. */
	int none = 0;
	atomic_compare_exchange_strong_explicit(&w->publish_req, &none, req, memory_order_relaxed,
						memory_order_relaxed);
}

/* Hands work to an idle VP nobody fed yet, if there is one. */
static void ma_private_feed_idle(struct ma_worker *w)
{
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		struct ma_worker *o = &ma_rt.workers[v];
		if (o == w || !ma_private_may_feed(o))
			continue;
		if (!ma_private_give(w, o))
			atomic_store_explicit(&o->fed, 0, memory_order_relaxed);
		return;
	}
}

void ma_private_publish_all(struct ma_worker *w)
{
	atomic_store_explicit(&w->publish_all_req, 0, memory_order_relaxed);
	/* A VP that asked gets the oldest seed; the rest go where their bubbles' do. */
	ma_private_serve(w);
	unsigned n = ma_nb_private(w);
	if (n)
		ma_private_publish_first(w, n);
}

/* What w (the caller's VP) was asked for. */
__attribute__((noinline)) static void ma_private_attend(struct ma_worker *w)
{
	if (atomic_load_explicit(&w->publish_all_req, memory_order_relaxed))
		ma_private_publish_all(w);
	else
		ma_private_serve(w);
}

void ma_bubble_unprivate(struct ma_bubble *b)
{
	struct ma_worker *o = atomic_load_explicit(&b->unit.private_w, memory_order_acquire);
	if (!o)
		return;
	struct ma_worker *w = ma_worker_self();
	/* Running on o, we are its chain: nothing of it runs anywhere else. */
	if (o == w) {
		ma_private_publish_all(w);
		return;
	}
	/* A preemption brings a thread that does not call marcel to a safe point, where it
	 * yields, which publishes. */
	if (!atomic_load_explicit(&o->publish_all_req, memory_order_relaxed) && !atomic_exchange(&o->publish_all_req, 1))
		ma_preempt_request(o);
	struct marcel_task *self = w ? ma_worker_current(w) : NULL;
	unsigned rounds = 0;
	for (unsigned n = 1; atomic_load_explicit(&b->unit.private_w, memory_order_acquire); n++) {
		if (self && !self->is_idle)
			marcel_yield();
		else
			ma_spin_backoff(&rounds);
		/* A request lands on the thread o runs when it is sent: o may have switched
		 * to a seed on the same stack meanwhile (seed.c), which the handler ignores. */
		if (n % 1024 == 0)
			ma_preempt_request(o);
	}
}

static int ma_private_hunt(struct ma_worker *w)
{
	int me = (int)w->vp + 1, asked = 0;
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		struct ma_worker *o = &ma_rt.workers[v];
		int none = 0;
		if (o == w || !ma_nb_private(o))
			continue;
		/* Still pending from an earlier hunt: asked all the same (the preemption that
		 * went with it may have been lost, see ma_bubble_unprivate). */
		if (atomic_load_explicit(&o->publish_req, memory_order_relaxed) == me ||
		    (!atomic_load_explicit(&o->publish_req, memory_order_relaxed) &&
		     atomic_compare_exchange_strong(&o->publish_req, &none, me)))
			asked = 1;
	}
	return asked;
}

/* How long an idle VP gives the VPs it asked to serve it at their next marcel call before
 * it has them preempted: a preempted thread yields, and yielding publishes all its VP's
 * private bubbles, which a fine-grained recursion then runs the slow way. */
#define MA_PRIVATE_PATIENCE_NS 20000u

/* Whether VP o still owes w (VP number + 1: me) an answer. A request outlives the private
 * bubbles it was for (ma_private_serve keeps it for later ones): with none left, there is
 * nothing to wait for, and w sleeps until a private wake-up feeds it. */
static int ma_private_owes(const struct ma_worker *o, int me)
{
	return atomic_load_explicit(&o->publish_req, memory_order_relaxed) == me && ma_nb_private(o);
}

static void ma_private_hurry(struct ma_worker *w)
{
	int me = (int)w->vp + 1, prio;
	/* More VPs than processors: the one to serve us may need this processor, and a
	 * round that gives it away may last a scheduler time slice. */
	int oversubscribed = ma_read_once(&ma_rt.oversubscribed);
	uint64_t until = ma_clock_ns() + MA_PRIVATE_PATIENCE_NS;
	for (unsigned rounds = 1;; rounds++) {
		/* Work placed here meanwhile comes first: the wait is for work, not for them. */
		if (atomic_load_explicit(&w->fed, memory_order_relaxed) || w->runnext ||
		    ma_peek_next(w, MA_MAX_PRIO - 1, &prio))
			return;
		int pending = 0;
		for (unsigned v = 0; v < ma_rt.nb_vps && !pending; v++)
			pending = ma_private_owes(&ma_rt.workers[v], me);
		if (!pending)
			return;
		if ((oversubscribed || rounds % 64 == 0) && ma_clock_ns() >= until)
			break;
		if (oversubscribed)
			sched_yield();
		else
			ma_cpu_relax();
	}
	for (unsigned v = 0; v < ma_rt.nb_vps; v++)
		if (ma_private_owes(&ma_rt.workers[v], me))
			ma_preempt_request(&ma_rt.workers[v]);
}

/* ---- fast paths (b private to w, the caller's VP) ---- */

int ma_private_wake(struct ma_worker *w, struct ma_bubble *b)
{
	/* Woken again: the public path starts what was created in it since. */
	if (b->unit.private_woken)
		return -1;
	if (ma_unlikely(ma_worker_current(w)->is_idle || !ma_private_ok())) {
		ma_private_publish_all(w);
		return -1;
	}
	b->unit.private_woken = 1;
	b->private_waker = ma_worker_current(w);
	ma_worker_current(w)->nb_private_woken++;
	/* A VP waiting for work gets the oldest seeds, maybe these. */
	if (ma_unlikely(ma_private_asked(w)))
		ma_private_attend(w);
	if (ma_unlikely(atomic_load_explicit(&ma_rt.nb_idle, memory_order_relaxed)))
		ma_private_feed_idle(w);
	return 0;
}

/* After a request was served, whether b is still private to w. */
static inline __attribute__((always_inline)) int ma_private_still(struct ma_worker *w, struct ma_bubble *b)
{
	if (ma_likely(!ma_private_asked(w)))
		return 1;
	ma_private_attend(w);
	return atomic_load_explicit(&b->unit.private_w, memory_order_relaxed) == w;
}

int ma_private_join(struct ma_worker *w, struct ma_bubble *b)
{
	if (!ma_private_still(w, b))
		return 0;
	/* Its seeds were run by their joiners: as a public join of an empty bubble, it is
	 * left unwoken and out of every bubble, which it always was. */
	if (ma_likely(!atomic_load_explicit(&b->nb_threads_sub, memory_order_relaxed))) {
		ma_private_unwake(b);
		return 1;
	}
	ma_private_publish_all(w);
	return 0;
}

int ma_private_adopt(struct ma_worker *w, struct ma_bubble *b, struct marcel_task *t, int explicit_member)
{
	if (!ma_private_still(w, b))
		return 0;
	/* Only seeds whose place is their bubble's: their joiner may run them. */
	if (ma_likely(t->seed && !t->placed)) {
		ma_private_add_seed(b, t, explicit_member);
		return 1;
	}
	ma_private_publish_all(w);
	return 0;
}

int ma_private_claim(struct ma_worker *w, struct marcel_task *t)
{
	struct ma_bubble *b = ma_entity_parent(&t->e);
	if (!b || atomic_load_explicit(&b->unit.private_w, memory_order_relaxed) != w || !b->unit.private_woken ||
	    !ma_private_still(w, b) || atomic_load_explicit(&t->state, memory_order_relaxed) != MA_TASK_BORN)
		return 0;
	ma_unit_take_seed(&b->unit, t);
	return 1;
}

void ma_private_vp_hungry(struct ma_worker *w)
{
	if (ma_private_hunt(w))
		ma_private_hurry(w);
}

void ma_private_before_public(struct ma_worker *w, struct marcel_task *self)
{
	struct ma_bubble *p = self ? ma_entity_parent(&self->e) : NULL;
	if (p && atomic_load_explicit(&p->unit.private_w, memory_order_relaxed) == w)
		ma_private_publish_all(w);
}
