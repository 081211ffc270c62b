/*
 * The quiet wait where marcel knows no spin-wait hint for the processor: a plain spin of
 * relaxed loads between readings of the clock. It keeps the hardware thread busy, so it
 * quiets nothing; it is there so that smt-quiet's level -1 keeps its timing (and its
 * accounting) on every processor.
 */
#include <stdatomic.h>
#include "../ma_quiet_arch.h"

#define MA_QUIET_SPINS 16 /* loads per burst */

static _Atomic int ma_quiet_nothing;

static void ma_quiet_spin_burst(uint64_t left_ns)
{
	(void)left_ns;
	for (int i = 0; i < MA_QUIET_SPINS; i++)
		(void)atomic_load_explicit(&ma_quiet_nothing, memory_order_relaxed);
}

uint64_t ma_quiet_arch_wait(uint64_t ns, enum ma_quiet_mech *used)
{
	*used = MA_QUIET_SPIN;
	return ma_quiet_loop(ns, ma_quiet_spin_burst);
}
