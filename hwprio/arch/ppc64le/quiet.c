/*
 * The quiet wait on POWER: the yield hint, `or 27,27,27` (glibc's __ppc_yield), which the
 * Power ISA describes as "performance will probably be improved if shared resources
 * dedicated to the executing processor are released for use by other processors"; FreeBSD
 * spins on it too. Not the priority nops (`or 1,1,1` and back, Linux's spin_begin and
 * spin_end): the PPR is power-ppr's, which sets it at each switch to the VP's level, and a
 * wait that lowered and then restored it would undo that level until the next switch.
 * With both backends a waiting sibling keeps the PRI power-ppr gave it and yields as well.
 */
#include "../ma_quiet_arch.h"

#define MA_QUIET_SPINS 16 /* hints per burst */

static void ma_quiet_yield_burst(uint64_t left_ns)
{
	(void)left_ns;
	for (int i = 0; i < MA_QUIET_SPINS; i++)
		__asm__ volatile("or 27,27,27" ::: "memory");
}

uint64_t ma_quiet_arch_wait(uint64_t ns, enum ma_quiet_mech *used)
{
	*used = MA_QUIET_PPC_YIELD;
	return ma_quiet_loop(ns, ma_quiet_yield_burst);
}
