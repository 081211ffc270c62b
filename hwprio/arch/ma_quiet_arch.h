/*
 * The quiet wait of smt-quiet's level -1 (hwprio/smt_quiet.c): the calling hardware
 * thread waits about a given time in its processor's spin-wait hint, with no system
 * call, so that it keeps its processor and goes on the moment the time is up, while its
 * SMT siblings get more of the core than from a thread that computes.
 * hwprio/arch/<arch>/quiet.c provides it; configure picks x86_64, aarch64, ppc64le or
 * generic (a plain spin) by the host, as it picks the PPR's file (ma_ppr_arch.h).
 */
#ifndef MA_QUIET_ARCH_H
#define MA_QUIET_ARCH_H

#include <stdint.h>
#include <time.h>

/* What a wait's bursts are made of on this processor. */
enum ma_quiet_mech {
	MA_QUIET_SPIN,      /* no hint: relaxed loads (generic builds) */
	MA_QUIET_PAUSE,     /* x86 PAUSE */
	MA_QUIET_TPAUSE,    /* x86 TPAUSE asking for C0.2 (WAITPKG) */
	MA_QUIET_YIELD_ISB, /* Arm YIELD then ISB */
	MA_QUIET_WFE,       /* Arm WFE woken by Linux's event stream; YIELD then ISB for the last
			       period of a wait */
	MA_QUIET_PPC_YIELD, /* POWER's yield hint, or 27,27,27 */
};

static inline const char *ma_quiet_mech_name(enum ma_quiet_mech m)
{
	switch (m) {
	case MA_QUIET_SPIN:
		return "spin";
	case MA_QUIET_PAUSE:
		return "pause";
	case MA_QUIET_TPAUSE:
		return "tpause C0.2";
	case MA_QUIET_YIELD_ISB:
		return "yield+isb";
	case MA_QUIET_WFE:
		return "wfe (event stream)";
	case MA_QUIET_PPC_YIELD:
		return "or 27,27,27";
	}
	return "?";
}

/* ---- provided by hwprio/arch/<arch>/quiet.c ---- */

/* Waits on the calling hardware thread, without entering the kernel to sleep, until ns
 * nanoseconds of CLOCK_MONOTONIC have passed since the call; returns the time that
 * passed from its first reading of the clock to its last (at least ns, a little more:
 * the wait ends at the first burst that ends past ns). *used says what the bursts are
 * made of here; it depends on the processor alone (found at the first call: the first
 * call may cost a CPUID or a getauxval), so ns = 0 returns 0 at once and says which
 * mechanism waits use. Signal handlers run in between and their time counts. */
uint64_t ma_quiet_arch_wait(uint64_t ns, enum ma_quiet_mech *used);

/* ---- for the arch files ---- */

static inline uint64_t ma_quiet_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The wait of the arch files whose bursts are short (well under a microsecond) or, for
 * Arm's WFE, shorter than left_ns, the time still to wait: bursts until ns have passed.
 * (x86-64's bursts wait for TSC deadlines and have a loop of their own.) The clock is read
 * between bursts only: through the vDSO it is a few tens of nanoseconds and no system
 * call. CLOCK_MONOTONIC never goes back, so t - start never wraps. */
static inline uint64_t ma_quiet_loop(uint64_t ns, void (*burst)(uint64_t left_ns))
{
	uint64_t start = ma_quiet_now(), t = start;
	while (t - start < ns) {
		burst(ns - (t - start));
		t = ma_quiet_now();
	}
	return t - start;
}

#endif
