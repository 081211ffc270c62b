/*
 * power-ppr: POWER's SMT thread priorities. The hardware threads of a POWER core share
 * its decode slots by the PRI field of each one's Program Priority Register; user mode
 * sets PRI 2..4 (1 from POWER8 on) with priority nops, on its own thread only. The
 * instructions are in hwprio/arch/<arch>/ppr.c (ma_ppr_arch.h); this file is the same
 * on every processor.
 *
 * Linux puts PRI back to 3 at the exit of every system call, so a level set by apply
 * lasts until the worker's next system call: apply_self sets it again at each switch.
 * The backend has no process-wide state to undo (no reset): a worker goes back to level
 * 0 through apply, and any thread to PRI 3 at its next system call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ma_hwprio.h"
#include "arch/ma_ppr_arch.h"
#include "ma_smt.h"

/* Below this speed-up of the raised thread the priorities are not worth their cost. */
#define MA_HW_PPR_MIN_GAIN 1.1
/* Each of the calibration's two phases; the whole start stays near 100 ms. */
#define MA_HW_PPR_PHASE_MS 40
/* How long the calibration threads may take to run on their CPUs. */
#define MA_HW_PPR_READY_MS 100
/* The highest level user mode reaches: +1, PRI 4 (medium); PRI 5 is privileged. */
#define MA_HW_PPR_HI 1

struct ma_hw_ppr {
	/* Set by start, read only afterwards (applies on different targets need no lock):
	 * user mode may set PRI 1 here, so level -2 reads back as PRI 1, else as PRI 2. */
	int very_low;
};

static enum ma_hw_presence ma_hw_ppr_probe(const struct ma_hw_env *env, struct ma_hw_why *why)
{
	(void)env;
	const char *missing = ma_ppr_arch_missing();
	if (missing) {
		ma_hw_fail(why, 0, "%s", missing);
		return MA_HW_ABSENT;
	}
	/* Medium (4) is a PRI every POWER lets user mode set. The PRI found is put back by
	 * its own nop: a Linux user thread is always at one user mode can set (1..4). */
	int before = ma_ppr_pri(ma_ppr_arch_read());
	ma_ppr_arch_hint(4);
	int got = ma_ppr_pri(ma_ppr_arch_read());
	ma_ppr_arch_hint(before);
	if (got != 4) {
		ma_hw_fail(why, 0, "the PPR reads PRI %d after `or 2,2,2` (medium, PRI 4): this processor ignores the priority hints",
			   got);
		return MA_HW_ABSENT;
	}
	return MA_HW_PRESENT;
}

/* ---- the calibration ---- */

enum { MA_HW_PPR_EQUAL, MA_HW_PPR_SKEWED, MA_HW_PPR_STOP };

/* One of the two threads that spin on a core's siblings. */
struct ma_hw_ppr_spinner {
	_Atomic int *phase;
	int cpu;
	int pri[2];             /* its PRI in each phase */
	_Atomic uint64_t turns; /* of its loop so far: its progress */
	_Atomic int err;        /* it could not bind itself to cpu: an errno */
	pthread_t th;
};

static void *ma_hw_ppr_spin(void *arg)
{
	struct ma_hw_ppr_spinner *s = arg;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(s->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		atomic_store(&s->err, errno);
		return NULL;
	}
	/* No system call from here to the end of the loop, so the PRI it sets holds. */
	uint64_t n = 0;
	int seen = -1;
	for (;;) {
		int p = atomic_load_explicit(s->phase, memory_order_relaxed);
		if (p != seen) {
			if (p == MA_HW_PPR_STOP)
				return NULL;
			ma_ppr_arch_hint(s->pri[p]);
			seen = p;
		}
		atomic_store_explicit(&s->turns, ++n, memory_order_relaxed);
	}
}

static double ma_hw_ppr_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void ma_hw_ppr_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	nanosleep(&ts, NULL); /* a signal cuts it short: the rates use the time measured */
}

/* The spinners' rates (turns per second) over the next ms milliseconds. */
static void ma_hw_ppr_rates(struct ma_hw_ppr_spinner *s, int ms, double rate[2])
{
	uint64_t c0[2];
	double t0 = ma_hw_ppr_now();
	for (int i = 0; i < 2; i++)
		c0[i] = atomic_load_explicit(&s[i].turns, memory_order_relaxed);
	ma_hw_ppr_sleep_ms(ms);
	double t1 = ma_hw_ppr_now();
	for (int i = 0; i < 2; i++)
		rate[i] = (double)(atomic_load_explicit(&s[i].turns, memory_order_relaxed) - c0[i]) / (t1 - t0);
}

int ma_hw_ppr_calibrate(const int cpu[2], double *gain, struct ma_hw_why *why)
{
	_Atomic int phase = MA_HW_PPR_EQUAL;
	struct ma_hw_ppr_spinner s[2] = {
		{ .phase = &phase, .cpu = cpu[0], .pri = { ma_ppr_pri_of_level(0), ma_ppr_pri_of_level(1) } },
		{ .phase = &phase, .cpu = cpu[1], .pri = { ma_ppr_pri_of_level(0), ma_ppr_pri_of_level(-1) } },
	};
	unsigned started = 0;
	int e = 0;
	for (; started < 2; started++) {
		e = pthread_create(&s[started].th, NULL, ma_hw_ppr_spin, &s[started]);
		if (e) {
			ma_hw_fail(why, e, "cannot create a calibration thread: %s", strerror(e));
			goto out;
		}
	}
	for (int ms = 0;; ms++) {
		unsigned ready = 0;
		for (int i = 0; i < 2; i++) {
			int err = atomic_load(&s[i].err);
			if (err) {
				e = ma_hw_fail(why, err, "cannot bind a calibration thread to CPU %d: %s", s[i].cpu, strerror(err));
				goto out;
			}
			ready += atomic_load_explicit(&s[i].turns, memory_order_relaxed) != 0;
		}
		if (ready == 2)
			break;
		if (ms == MA_HW_PPR_READY_MS) {
			e = ma_hw_fail(why, ETIMEDOUT, "the calibration threads did not run on CPUs %d and %d within %d ms",
				       cpu[0], cpu[1], MA_HW_PPR_READY_MS);
			goto out;
		}
		ma_hw_ppr_sleep_ms(1);
	}
	double equal[2], skewed[2];
	ma_hw_ppr_rates(s, MA_HW_PPR_PHASE_MS, equal);
	atomic_store_explicit(&phase, MA_HW_PPR_SKEWED, memory_order_relaxed);
	ma_hw_ppr_sleep_ms(1); /* both see the new phase */
	ma_hw_ppr_rates(s, MA_HW_PPR_PHASE_MS, skewed);
	*gain = equal[0] > 0 ? skewed[0] / equal[0] : 0;
out:
	atomic_store_explicit(&phase, MA_HW_PPR_STOP, memory_order_relaxed);
	for (unsigned i = 0; i < started; i++)
		pthread_join(s[i].th, NULL);
	return e;
}

int ma_hw_ppr_judge(double gain, const int cpu[2], struct ma_hw_why *why)
{
	if (gain >= MA_HW_PPR_MIN_GAIN)
		return 0;
	return ma_hw_fail(why, ENOTSUP,
			  "measured gain %.2fx < %.1fx: the priorities do not change the split of this core (SMT siblings CPU %d and CPU %d)",
			  gain, MA_HW_PPR_MIN_GAIN, cpu[0], cpu[1]);
}

/* Whether the priorities are usable and worth it here, measured: POWER8 and later
 * differ from the POWER5 the policy's seeds measured, and a hypervisor may share the
 * core with other partitions. */
static int ma_hw_ppr_start(void *priv, const struct ma_hw_env *env, struct ma_hw_why *why)
{
	struct ma_hw_ppr *p = priv;
	if (ma_hw_ppr_probe(env, why) != MA_HW_PRESENT)
		return ENOTSUP;
	p->very_low = ma_ppr_arch_very_low();
	int cpu[2];
	double gain = 0;
	int e = ma_hw_smt_siblings(env->sysfs, cpu, why);
	if (!e)
		e = ma_hw_ppr_calibrate(cpu, &gain, why);
	if (!e)
		e = ma_hw_ppr_judge(gain, cpu, why);
	return e;
}

static int ma_hw_ppr_apply(void *priv, const struct ma_hw_target *t, int level, struct ma_hw_why *why)
{
	const struct ma_hw_ppr *p = priv;
	(void)t; /* the calling thread: the nops act on no other */
	const char *missing = ma_ppr_arch_missing();
	if (missing)
		return ma_hw_fail(why, ENOTSUP, "%s", missing);
	if (level < MA_HW_LEVEL_MIN || level > MA_HW_PPR_HI)
		return ma_hw_fail(why, EINVAL, "level %d is out of reach: user mode sets levels -2..+1 (PRI 1..4)", level);
	int pri = ma_ppr_pri_of_level(level);
	int want = pri == 1 && !p->very_low ? 2 : pri;
	int before = ma_ppr_pri(ma_ppr_arch_read());
	ma_ppr_arch_hint(pri);
	int got = ma_ppr_pri(ma_ppr_arch_read());
	if (got != want) {
		ma_ppr_arch_hint(before);
		return ma_hw_fail(why, EPERM, "level %d: the PPR reads PRI %d after setting PRI %d: the processor refused it",
				  level, got, want);
	}
	return 0;
}

/* At each switch of a worker: its level again, after any system call put PRI back to 3.
 * The runtime hands the level unclamped; +2 is out of reach and sets +1. */
static void ma_hw_ppr_apply_self(void *priv, unsigned vp, int level)
{
	(void)priv;
	(void)vp;
	ma_ppr_arch_hint(ma_ppr_pri_of_level(level > MA_HW_PPR_HI ? MA_HW_PPR_HI : level));
}

/* lo is -2 even where very low is refused (before POWER8): there -2 sets PRI 2 as -1
 * does, keeping the scale's order. No reset nor stop: nothing process-wide to undo. */
const struct ma_hw_backend ma_hw_power_ppr = {
	.name = "power-ppr",
	.desc = "POWER SMT thread priority (the PPR's PRI, set by priority nops)",
	.lo = MA_HW_LEVEL_MIN,
	.hi = MA_HW_PPR_HI,
	.priv_size = sizeof(struct ma_hw_ppr),
	.probe = ma_hw_ppr_probe,
	.start = ma_hw_ppr_start,
	.apply = ma_hw_ppr_apply,
	.apply_self = ma_hw_ppr_apply_self,
};
