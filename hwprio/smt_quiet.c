/*
 * smt-quiet: the lever x86 and ARM SMT cores offer. They have no priority between their
 * hardware threads, but one that does nothing leaves the core's decode slots, execution
 * units and caches to its siblings. So a lowered worker (level < 0: the runtime lowers
 * the siblings of the worker a policy raises, this backend reaching -2..0) goes quiet
 * after each of its switches, for a share of the time it ran since the one before: at -1
 * a third of it (quiet a quarter of the time), at -2 as long (quiet half of the time).
 * Its siblings then have the core to themselves for that share.
 *
 * The two levels are quiet in two ways, the lighter one at -1. There the worker waits on
 * its own hardware thread in the processor's spin-wait hint (hwprio/arch/<arch>/quiet.c:
 * TPAUSE in C0.2 or PAUSE on x86, WFE or YIELD+ISB on Arm): no system call, nothing the
 * kernel may give its hardware thread to, and the worker goes on the moment the time is
 * up; but the waiting thread keeps its share of the core's partitioned resources and runs
 * the hint's loop. At -2 it parks its kernel thread (nanosleep): Linux idles the hardware
 * thread, and by Intel's SDM (vol. 3A, "HLT instruction") the resources a halted logical
 * processor used go to its siblings, the most this backend can free; the price is a
 * wake-up through the kernel, and the kernel may run another program's thread there
 * meanwhile.
 *
 * Quieting slows the lowered worker's own threads: the policy lowers only a worker less
 * busy than its siblings (with slack before the barrier), and one that becomes the
 * bottleneck shows it at the next iteration, when the policy gives back. Each wait or park
 * is at most MA_HW_SQ_MAX_QUIET_NS, so a lowered worker still answers within a
 * millisecond. The time quiet is what the backend's clock saw pass during the wait or the
 * park, accounted per VP.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include "ma_hwprio.h"
#include "ma_smt.h"
#include "ma_smt_quiet.h"
#include "arch/ma_quiet_arch.h"

#define MA_HW_SQ_MAX_VPS 1024
#define MA_HW_SQ_MAX_QUIET_NS 1000000

struct ma_hw_sq_vp {
	uint64_t last;              /* end of the last wait or park, or of the last switch at
				       level < 0; 0: unknown (the level was 0) */
	_Atomic uint64_t quiet_ns;  /* written by the VP's worker only */
};

struct ma_hw_sq {
	uint64_t (*clock)(void);    /* monotonic ns (a test gives its own, with a park and a
				       wait on its time line) */
	void (*park)(uint64_t ns);  /* level -2 */
	uint64_t (*wait)(uint64_t ns, enum ma_quiet_mech *used); /* level -1 */
	struct ma_hw_sq_vp vp[MA_HW_SQ_MAX_VPS];
};

uint64_t ma_hw_sq_quiet_for(uint64_t ran_ns, int level)
{
	uint64_t q = level <= -2 ? ran_ns : level == -1 ? ran_ns / 3 : 0;
	return q > MA_HW_SQ_MAX_QUIET_NS ? MA_HW_SQ_MAX_QUIET_NS : q;
}

static uint64_t ma_hw_sq_clock(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void ma_hw_sq_park(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u) };
	/* A signal (marcel's preemption ticker) ends the park early: quiet less, never more. */
	nanosleep(&ts, NULL);
}

void ma_hw_sq_set_clock(void *priv, uint64_t (*clock)(void), void (*park)(uint64_t ns),
			uint64_t (*wait)(uint64_t ns, enum ma_quiet_mech *used))
{
	struct ma_hw_sq *q = priv;
	q->clock = clock;
	q->park = park;
	q->wait = wait;
}

uint64_t ma_hw_sq_quiet_ns(const void *priv, unsigned vp)
{
	const struct ma_hw_sq *q = priv;
	return vp < MA_HW_SQ_MAX_VPS ? atomic_load_explicit(&q->vp[vp].quiet_ns, memory_order_relaxed) : 0;
}

/* Present where some core has two hardware threads (sysfs says which). */
static enum ma_hw_presence ma_hw_sq_probe(const struct ma_hw_env *env, struct ma_hw_why *why)
{
	int cpu[2];
	int e = ma_hw_smt_siblings(env->sysfs, cpu, why);
	if (e == ENODEV)
		ma_hw_fail(why, e, "no SMT: every core of %s/devices/system/cpu has one hardware thread, so no worker "
			   "shares a core to be quieted for", env->sysfs);
	return e ? MA_HW_ABSENT : MA_HW_PRESENT;
}

static int ma_hw_sq_start(void *priv, const struct ma_hw_env *env, struct ma_hw_why *why)
{
	(void)env;
	(void)why;
	ma_hw_sq_set_clock(priv, ma_hw_sq_clock, ma_hw_sq_park, ma_quiet_arch_wait);
	/* The wait finds its mechanism at its first call (a CPUID, which a hypervisor
	 * traps): here rather than in a worker's switch. */
	enum ma_quiet_mech m;
	ma_quiet_arch_wait(0, &m);
	return 0;
}

/* The level is carried out by apply_self, at the worker's switches. */
static int ma_hw_sq_apply(void *priv, const struct ma_hw_target *t, int level, struct ma_hw_why *why)
{
	(void)priv;
	if (level < -2 || level > 0)
		return ma_hw_fail(why, EINVAL, "level %d is outside smt-quiet's reach: -2..0 (it only quiets)", level);
	if (t->vp >= MA_HW_SQ_MAX_VPS)
		return ma_hw_fail(why, EINVAL, "VP %u: smt-quiet keeps the time of VPs below %d", t->vp, MA_HW_SQ_MAX_VPS);
	return 0;
}

static void ma_hw_sq_apply_self(void *priv, unsigned vp, int level)
{
	struct ma_hw_sq *q = priv;
	if (level >= 0 || vp >= MA_HW_SQ_MAX_VPS) {
		if (vp < MA_HW_SQ_MAX_VPS)
			q->vp[vp].last = 0;
		return;
	}
	struct ma_hw_sq_vp *s = &q->vp[vp];
	uint64_t now = q->clock();
	uint64_t quiet = s->last && now > s->last ? ma_hw_sq_quiet_for(now - s->last, level) : 0;
	if (quiet) {
		enum ma_quiet_mech m;
		if (level <= -2)
			q->park(quiet);
		else
			q->wait(quiet, &m);
		uint64_t after = q->clock();
		atomic_store_explicit(&s->quiet_ns,
				      atomic_load_explicit(&s->quiet_ns, memory_order_relaxed) + (after > now ? after - now : 0),
				      memory_order_relaxed);
		now = after;
	}
	s->last = now;
}

const struct ma_hw_backend ma_hw_smt_quiet = {
	.name = "smt-quiet",
	.desc = "SMT siblings of the raised workers go quiet a share of their time: at -1 in spin-wait "
		"hints (pause or tpause; yield+isb or wfe), at -2 parked (x86, ARM)",
	.lo = -2,
	.hi = 0,
	.priv_size = sizeof(struct ma_hw_sq),
	.probe = ma_hw_sq_probe,
	.start = ma_hw_sq_start,
	.apply = ma_hw_sq_apply,
	.apply_self = ma_hw_sq_apply_self,
};
