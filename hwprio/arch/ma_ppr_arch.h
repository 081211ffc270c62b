/*
 * POWER's Program Priority Register (PPR) for the power-ppr backend (hwprio/power_ppr.c):
 * the relation between hwprio's levels and PRI values, what each processor family
 * provides (hwprio/arch/<arch>/ppr.c: configure picks ppc64le on POWER, generic
 * elsewhere), and the backend's pure steps that tests call directly.
 *
 * PRI is the PPR's bits 11:13 in POWER's big-endian numbering, so (PPR >> 50) & 7. User
 * mode changes it with priority nops (`or Rx,Rx,Rx`): PRI 2, 3 and 4 always, 1 from ISA
 * 2.07 (POWER8) on; a value it may not set leaves PRI as it was, with no trap.
 */
#ifndef MA_PPR_ARCH_H
#define MA_PPR_ARCH_H

#include <stdint.h>
#include "ma_hwprio.h"

#define MA_PPR_PRI_SHIFT 50
#define MA_PPR_PRI_MASK (UINT64_C(7) << MA_PPR_PRI_SHIFT)

static inline int ma_ppr_pri(uint64_t ppr)
{
	return (int)((ppr & MA_PPR_PRI_MASK) >> MA_PPR_PRI_SHIFT);
}

/* Level 0 is PRI 3 (medium-low), what Linux gives user threads and puts back at every
 * system call's exit; each level is one PRI step, so -2..+2 is PRI 1..5. User mode
 * reaches PRI 1..4 only: +2 (PRI 5, medium-high) is privileged. */
static inline int ma_ppr_pri_of_level(int level)
{
	return 3 + level;
}

/* PRI 0 (thread off), 6 and 7 (high, very high) are outside the scale. */
#define MA_PPR_NO_LEVEL (-100)
static inline int ma_ppr_level_of_pri(int pri)
{
	return pri >= 1 && pri <= 5 ? pri - 3 : MA_PPR_NO_LEVEL;
}

/* ---- provided by hwprio/arch/<arch>/ppr.c ---- */

/* NULL where this processor has a PPR that user mode may read, else why not, in words. */
const char *ma_ppr_arch_missing(void);
/* The calling thread's PPR (SPR 896; PPR32, SPR 898, is left alone: qemu before 9.1
 * traps on it). Only where ma_ppr_arch_missing() says NULL. */
uint64_t ma_ppr_arch_read(void);
/* The priority nop of pri 2, 3 or 4 on the calling thread; for 1, the nop of 2 and then
 * the nop of 1, so that where very low is refused the thread ends at low (level -2 acts
 * as -1) rather than where it was. Any other value: nothing. A few instructions: the
 * workers call it at each of their switches. */
void ma_ppr_arch_hint(int pri);
/* Whether user mode may set PRI 1 (very low) on this processor: sets it on the calling
 * thread, reads it back, and puts back the PRI it found (when user mode can set that). */
int ma_ppr_arch_very_low(void);

/* ---- power_ppr.c's steps, for tests/check_hwprio_ppr.c ---- */

/* Two threads spin on cpu[0] and cpu[1], at equal levels and then at +1 and -1 (about
 * 100 ms): gain is how much faster the raised one went, cpu[0]'s. 0, or an errno with
 * why filled (a thread that cannot be created or bound). */
int ma_hw_ppr_calibrate(const int cpu[2], double *gain, struct ma_hw_why *why);
/* The calibration's verdict on gain, the raised thread's speed-up on cpu[0] against
 * its sibling cpu[1]: 0 if the priorities are worth using, else ENOTSUP with why. */
int ma_hw_ppr_judge(double gain, const int cpu[2], struct ma_hw_why *why);

#endif
