/* The PPR on POWER (64-bit little-endian Linux): read with mfspr, set with the priority
 * nops. Everything acts on the calling thread alone. */
#include <sys/auxv.h>
#include "../ma_ppr_arch.h"

const char *ma_ppr_arch_missing(void)
{
	/* Linux gives the PPR to POWER7 (ISA 2.06) and later (CPU_FTR_HAS_PPR); before, an
	 * mfspr of 896 is not architected and would trap. */
	if (!(getauxval(AT_HWCAP) & PPC_FEATURE_ARCH_2_06))
		return "this POWER processor predates ISA 2.06 (POWER7): no PPR to read";
	return NULL;
}

uint64_t ma_ppr_arch_read(void)
{
	uint64_t v;
	__asm__ volatile("mfspr %0, 896" : "=r"(v));
	return v;
}

/* The nops rewrite r1, r2 or r6 with its own value: no register changes, and "memory"
 * keeps the compiler from moving loads and stores across a priority change. */
void ma_ppr_arch_hint(int pri)
{
	switch (pri) {
	case 1:
		__asm__ volatile("or 1,1,1\n\tor 31,31,31" ::: "memory");
		break;
	case 2:
		__asm__ volatile("or 1,1,1" ::: "memory");
		break;
	case 3:
		__asm__ volatile("or 6,6,6" ::: "memory");
		break;
	case 4:
		__asm__ volatile("or 2,2,2" ::: "memory");
		break;
	}
}

int ma_ppr_arch_very_low(void)
{
	int before = ma_ppr_pri(ma_ppr_arch_read());
	/* From low, so that a PRI of 1 found already set does not pass for an answer. */
	ma_ppr_arch_hint(1);
	int honoured = ma_ppr_pri(ma_ppr_arch_read()) == 1;
	ma_ppr_arch_hint(before);
	return honoured;
}
