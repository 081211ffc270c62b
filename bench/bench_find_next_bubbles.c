/*
 * find_next_cycles_bubbles: find_next alone, in cycles, when what it finds is a closed
 * bubble at the top of a 3-level tree. Like bench_find_next_internal.c it needs the
 * runtime's internals (ma_find_next, the worker's path, ma_entity_enqueue), so it links
 * the static library and includes marcel/ma_sched.h; it uses nothing of bubbles/.
 *
 * Setting: one VP on "pack:2 core:2 pu:1", so VP0 looks at 4 queues (its own, Core0,
 * Package0, machine: 3 topology levels above the VP's queue). A real thread T, created
 * with marcel_create_dontsched in a bubble B, is ready in B's thread cache and B sits
 * closed on the machine's queue; the queues below are empty. One sample is one
 * ma_find_next() call bracketed by rdtscp: it peeks the 4 bitmaps, locks the machine's
 * queue, meets B, asks the strategy, try-locks B, takes T from B's cache, takes B off the
 * queue (its cache is empty then) and returns T. T is not run: it is queued again
 * (ma_entity_enqueue, which puts B back on the machine's queue) outside the bracket, and
 * the next sample starts. The strategy is `null`: the one whose steady state is exactly
 * this (bubbles stay closed on the machine's queue and are served from there); under
 * burst a closed bubble above its level is moved or burst, never served. Its decision is
 * a plain return, so the figure is the mechanism: what a bubble adds to find_next.
 *
 * Peer `nobubble`: the same with a thread F made without a bubble, queued directly on
 * the machine's queue (same position, same peek path).
 *
 * Each repetition takes S samples of each (bubble first, then the peer) and reports the
 * median of each minus the median of an empty rdtscp pair (the timer's own cost); the
 * line gives the median over repetitions. Checked: every call returns the expected
 * thread, the bubble is on the machine's queue, and at the end both threads run once.
 */
#include "common.h"
#include <x86intrin.h>
#include "ma_sched.h"

#define TOPO "pack:2 core:2 pu:1"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t median_u64(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

static any_t body(any_t p)
{
	(*(int *)p)++;
	return (any_t)0x600d;
}

/* Median cycles of n find_next calls that must each return t, which is queued again
 * before each; the rdtscp pair's own median cost is subtracted. */
static double sample(struct ma_worker *w, struct marcel_task *t, uint64_t *s, uint64_t *ovh, size_t n)
{
	unsigned aux;
	for (size_t i = 0; i < n; i++) {
		ma_entity_enqueue(&t->e);
		uint64_t t0 = __rdtscp(&aux);
		struct marcel_task *got = ma_find_next(w, MA_MAX_PRIO - 1);
		uint64_t t1 = __rdtscp(&aux);
		if (got != t)
			bench_fail("find_next returned %p, expected %p", (void *)got, (void *)t);
		s[i] = t1 - t0;
		t0 = __rdtscp(&aux);
		t1 = __rdtscp(&aux);
		ovh[i] = t1 - t0;
	}
	uint64_t m = median_u64(s, n), o = median_u64(ovh, n);
	return m > o ? (double)(m - o) : 0.0;
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	bench_parse(argc, argv, &o);
	const size_t n = o.full ? 200001 : 50001;
	uint64_t *s = malloc(n * sizeof(*s)), *ovh = malloc(n * sizeof(*ovh));
	double *bub = calloc((size_t)o.reps, sizeof(double)), *flat = calloc((size_t)o.reps, sizeof(double));
	if (!s || !ovh || !bub || !flat)
		bench_fail("out of memory");

	/* Time slicing off whatever the environment says: the main thread holds a ready
	 * thread in hand between two calls, and a preemption would run it. */
	char a0[] = "bench_find_next_bubbles", a1[] = "--marcel-topology", a2[] = TOPO, a3[] = "--marcel-nvp",
	     a4[] = "1", a5[] = "--marcel-bubble-scheduler", a6[] = "null", a7[] = "--marcel-timeslice", a8[] = "0";
	char *mv[] = { a0, a1, a2, a3, a4, a5, a6, a7, a8, NULL };
	int mc = 9;
	BENCH_CHECK(marcel_init(&mc, mv));
	if (mc != 1)
		bench_fail("marcel_init left %d arguments", mc);
	const char *sched = marcel_bubble_sched_name(marcel_bubble_current_sched());
	struct ma_worker *w = ma_worker_self();
	if (marcel_nbvps() != 1 || !marcel_topo_is_fake() || !sched || strcmp(sched, "null") || !w ||
	    w->path_len != 4)
		bench_fail("runtime: %u VPs, fake=%d, strategy %s, path of %u queues (expected 1, 1, null, 4)",
			   marcel_nbvps(), marcel_topo_is_fake(), sched ? sched : "none", w ? w->path_len : 0);
	struct ma_runqueue *top = w->path[w->path_len - 1];
	if (top->level->depth != 0)
		bench_fail("the last queue of the path is %s, not the machine's", top->name);

	/* The bubble's thread: waking B starts it into B's cache and places B on the machine. */
	marcel_bubble_t b;
	BENCH_CHECK(marcel_bubble_init(&b));
	marcel_attr_t at;
	BENCH_CHECK(marcel_attr_init(&at));
	BENCH_CHECK(marcel_attr_setnaturalbubble(&at, &b));
	int ran_t = 0, ran_f = 0;
	marcel_t t, f;
	BENCH_CHECK(marcel_create_dontsched(&t, &at, body, &ran_t));
	BENCH_CHECK(marcel_wake_up_bubble(&b));
	marcel_entity_t *be = marcel_bubble_entity(&b);
	if (marcel_bubble_status(&b) != MARCEL_BUBBLE_CLOSED || be->sched_holder != &top->hold ||
	    be->ready_holder != &top->hold)
		bench_fail("the woken bubble is not closed and queued on the machine's queue");
	/* Taken out at once: only the entity being measured is ever queued. */
	if (ma_find_next(w, MA_MAX_PRIO - 1) != t)
		bench_fail("the bubble's thread was not found");

	/* The peer's thread: no bubble named, so it goes to the machine's queue. */
	BENCH_CHECK(marcel_create_dontsched(&f, NULL, body, &ran_f));
	BENCH_CHECK(marcel_wake_up_created_thread(f));
	if (f->e.sched_holder != &top->hold || f->e.ready_holder != &top->hold)
		bench_fail("the peer's thread is not on the machine's queue");
	if (ma_find_next(w, MA_MAX_PRIO - 1) != f)
		bench_fail("the peer's thread was not found");

	sample(w, t, s, ovh, n / 10);
	sample(w, f, s, ovh, n / 10);
	for (int r = 0; r < o.reps; r++) {
		bub[r] = sample(w, t, s, ovh, n);
		flat[r] = sample(w, f, s, ovh, n);
	}
	if (be->ready_holder || t->e.sched_holder == &top->hold)
		bench_fail("the bubble was burst or its thread left it");

	/* Both threads must still be able to run: queue them and wait for them. */
	ma_entity_enqueue(&t->e);
	ma_entity_enqueue(&f->e);
	any_t rt, rf;
	BENCH_CHECK(marcel_join(t, &rt));
	BENCH_CHECK(marcel_join(f, &rf));
	if ((uintptr_t)rt != 0x600d || (uintptr_t)rf != 0x600d || ran_t != 1 || ran_f != 1)
		bench_fail("the threads ran %d and %d times (expected once each)", ran_t, ran_f);
	BENCH_CHECK(marcel_bubble_join(&b));
	BENCH_CHECK(marcel_bubble_destroy(&b));
	BENCH_CHECK(marcel_attr_destroy(&at));
	marcel_end();

	struct bench_stat sb = bench_stat_of(bub, o.reps), sf = bench_stat_of(flat, o.reps);
	bench_line("find_next_cycles_bubbles", "cycles", sb, "nobubble", sf,
		   "rdtscp cycles per ma_find_next (alone, no switch; timer cost subtracted), 1 VP on "
		   "\"%s\" (4 queues peeked); marcel = a thread served from the cache of a closed bubble "
		   "on the machine's queue (strategy null); nobubble = the thread queued on the machine's "
		   "queue itself; bubble - nobubble = %.1f cycles; median of %zu calls x %d reps",
		   TOPO, sb.med - sf.med, n, o.reps);
	free(s);
	free(ovh);
	free(bub);
	free(flat);
	return 0;
}
