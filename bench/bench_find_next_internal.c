/*
 * find_next alone, in cycles: the one benchmark that needs the runtime's internals, so it
 * links the static library (hidden symbols resolve inside one executable) and includes
 * marcel/ma_sched.h.
 *
 * Setting, as in the original Marcel measurement: a thread is ready on the worker's own
 * queue and every queue above it (up to the machine) is empty, so find_next peeks the
 * whole path, locks the worker's queue, re-checks and dequeues. Each sample is one call
 * bracketed by rdtscp; the timer's own cost (measured the same way) is subtracted. The
 * hierarchy is synthetic: "pack:2 core:2 pu:1" gives machine -> Package -> Core (+ the
 * VP's queue), i.e. 3 topology levels above the VP.
 *
 * Output: BENCH find_next_cycles_internal marcel_cycles=<median> peer=flat
 *         peer_cycles=<median on "core:1"> ratio=<flat/deep>
 *
 * It also prints the bare context switch (ma_ctx_switch ping-pong between two contexts,
 * no scheduler at all) as an INFO line: the floor under every yield, with no peer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>
#include "ma_sched.h"

#define SAMPLES 200001

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

static uint64_t measure(const char *topology, unsigned *path_len)
{
	static uint64_t samples[SAMPLES], overhead[SAMPLES];
	setenv("MARCEL_TOPOLOGY", topology, 1);
	setenv("MARCEL_NVP", "1", 1);
	if (marcel_init(NULL, NULL)) {
		fprintf(stderr, "bench_find_next_internal: marcel_init failed for \"%s\"\n", topology);
		exit(1);
	}
	struct ma_worker *w = ma_worker_self();
	*path_len = w->path_len;
	static struct marcel_task dummy;
	memset(&dummy, 0, sizeof(dummy));
	dummy.e.type = MA_TASK_ENTITY;
	atomic_init(&dummy.e.prio, MA_DEF_PRIO);
	dummy.e.sched_holder = &w->rq.hold;
	ma_list_init(&dummy.e.run_node);
	unsigned aux;
	for (size_t i = 0; i < SAMPLES; i++) {
		ma_spin_lock(&w->rq.hold.lock);
		ma_rq_enqueue_locked(&w->rq, &dummy.e);
		ma_spin_unlock(&w->rq.hold.lock);
		uint64_t t0 = __rdtscp(&aux);
		struct marcel_task *t = ma_find_next(w, MA_MAX_PRIO - 1);
		uint64_t t1 = __rdtscp(&aux);
		if (t != &dummy) {
			fprintf(stderr, "bench_find_next_internal: find_next returned %p, expected %p\n",
				(void *)t, (void *)&dummy);
			exit(1);
		}
		samples[i] = t1 - t0;
		t0 = __rdtscp(&aux);
		t1 = __rdtscp(&aux);
		overhead[i] = t1 - t0;
	}
	marcel_end();
	uint64_t m = median(samples, SAMPLES), o = median(overhead, SAMPLES);
	return m > o ? m - o : 0;
}

static ma_ctx_t raw_main, raw_other;

static void raw_entry(void *prev, void *arg)
{
	(void)prev;
	(void)arg;
	for (;;)
		ma_ctx_switch(&raw_other, &raw_main, NULL);
}

/* ns per switch, median of 11 runs of 2M round trips. */
static double raw_switch_ns(void)
{
	static char stack[64 * 1024] __attribute__((aligned(64)));
	enum { ROUNDS = 2000000, REPS = 11 };
	uint64_t per[REPS];
	ma_ctx_make(&raw_other, stack, sizeof(stack), ma_arch_fpctl(), raw_entry, NULL);
	ma_ctx_switch(&raw_main, &raw_other, NULL);
	for (int r = 0; r < REPS; r++) {
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int i = 0; i < ROUNDS; i++)
			ma_ctx_switch(&raw_main, &raw_other, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		per[r] = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)(t1.tv_nsec - t0.tv_nsec);
	}
	return (double)median(per, REPS) / (2.0 * ROUNDS);
}

int main(void)
{
	unsigned deep_len, flat_len;
	uint64_t deep = measure("pack:2 core:2 pu:1", &deep_len);
	uint64_t flat = measure("core:1", &flat_len);
	printf("BENCH find_next_cycles_internal marcel_cycles=%llu peer=flat peer_cycles=%llu ratio=%.2f"
	       "  # %u queues peeked (VP + 3 levels) vs %u; rdtscp overhead subtracted\n",
	       (unsigned long long)deep, (unsigned long long)flat, deep ? (double)flat / (double)deep : 0.0,
	       deep_len, flat_len);
	printf("INFO ctx_switch_raw ns=%.2f  # ma_ctx_switch between two contexts, no scheduler: the floor "
	       "under a yield\n", raw_switch_ns());
	return 0;
}
