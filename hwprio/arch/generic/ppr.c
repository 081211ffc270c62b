/* The PPR where there is none: every processor but POWER. power-ppr's probe says why it
 * is absent, and power_ppr.c stops at that answer before reading or setting anything;
 * the other functions exist for the link and change nothing. */
#include "../ma_ppr_arch.h"

/* MA_HW_HOST_CPU: configure's host cpu (hwprio/Makefile.am), the processor this build
 * is for. */
const char *ma_ppr_arch_missing(void)
{
	return "not a POWER processor: this build is for " MA_HW_HOST_CPU;
}

uint64_t ma_ppr_arch_read(void)
{
	return 0;
}

void ma_ppr_arch_hint(int pri)
{
	(void)pri;
}

int ma_ppr_arch_very_low(void)
{
	return 0;
}
