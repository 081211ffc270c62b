/*
 * Per-thread load metrics (metrics.c): how much of the resources that SMT siblings share
 * a thread uses, in events per 1000 instructions retired (the 001 seed's load metrics),
 * for the strategies that pair threads by them (strategies/contention.c).
 *
 * A metric is known from the hardware counters (perf_event_open), where the kernel gives
 * them and MARCEL_METRICS lets them be used, else from the application's hint
 * (marcel_task_stats_set), else not at all. The counters count per kernel thread; a
 * sampler, run when a view asks for metrics or a program reads one, reads them at most
 * every MA_METRICS_PERIOD_NS and charges a VP's counts to the thread it ran if it ran
 * nothing else since the previous sample. The switches pay nothing for it, counters on
 * or off.
 */
#ifndef MA_METRICS_H
#define MA_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include "ma_sched.h"

/* The order of MARCEL_STATS_FP_RATE and the next two (marcel/bubble.h), and of the view's
 * enum ma_vmetric (bubbles/ma_view.h). */
enum ma_metric {
	MA_METRIC_FP,             /* floating-point operations */
	MA_METRIC_MISS,           /* cache misses (the last level's, as the kernel counts them) */
	MA_METRIC_MEMOP,          /* memory operations: level-1 data reads */
	MA_METRIC_NB
};

/* The largest rate a hint may give (events per 1000 instructions). */
#define MA_METRIC_MAX 1000000

/* MARCEL_METRICS. */
enum ma_metrics_mode {
	MA_METRICS_AUTO,          /* the counters while a strategy reads metrics, else hints */
	MA_METRICS_OFF,           /* views carry no metric (hints are still read back) */
	MA_METRICS_HINTS,         /* the application's hints alone */
	MA_METRICS_PERF,          /* the counters from the first read of a metric on; where the
				     kernel refuses them, a line says why and hints are used */
};

/* Where the counters stand in this runtime. */
enum ma_perf_state {
	MA_PERF_UNTRIED,          /* not asked for yet */
	MA_PERF_ON,               /* counting */
	MA_PERF_FAILED,           /* refused (ma_metrics_perf_state says why): hints only */
};

/* Samples at most this often: a sample reads every kernel thread's counters. */
#define MA_METRICS_PERIOD_NS 10000000ull

/* The rate of metric m (enum ma_metric) of t now: measured, else hinted, else -1. */
long long ma_metric_get(struct marcel_task *t, unsigned m) MA_HIDDEN;
/* Sets t's hint for metric m (v < 0: none): 0, or EINVAL for v above MA_METRIC_MAX
 * (nothing changed). */
int ma_metric_hint(struct marcel_task *t, unsigned m, long long v) MA_HIDDEN;

/* Before reading metrics: samples the counters if they are in use, opening them first if
 * the mode wants them (for_strategy: a strategy's view asks; MARCEL_METRICS=auto opens
 * them only then). Never blocks (a sample under way elsewhere is not waited for).
 * Returns 0 under MARCEL_METRICS=off (no metric is to be shown), else 1. */
int ma_metrics_refresh(int for_strategy) MA_HIDDEN;
/* t's known metrics into out[] (events per 1000 instructions): a bit per metric known.
 * Read without a lock: t may be a descriptor being recycled (then nothing or its new
 * thread's hints). */
unsigned ma_metrics_of(const struct marcel_task *t, float out[MA_METRIC_NB]) MA_HIDDEN;
/* The counters' state; with MA_PERF_FAILED, why (one sentence) into why[len]. */
enum ma_perf_state ma_metrics_perf_state(char *why, size_t len) MA_HIDDEN;
/* When the runtime stops (bubbles/view.c, with the views' leftovers): the counters are
 * closed and the state forgotten, for the next marcel_init. */
void ma_metrics_stop(void) MA_HIDDEN;

/* arch/<cpu>/pmu.c: the raw event that counts floating-point operations on this
 * processor, for perf_event_open (PERF_TYPE_RAW): 0 and its config, or ENOENT with why[]
 * saying why none is known. No generic event exists for it. */
int ma_pmu_fp_event(uint64_t *config, char *why, size_t len) MA_HIDDEN;

#endif
