/*
 * The floating-point event of x86-64 processors (ma_metrics.h, ma_pmu_fp_event): perf has
 * no generic event for floating-point work, so the raw one is chosen by vendor.
 *
 * Intel: FP_ARITH_INST_RETIRED (event 0xC7), every scalar and packed form up to 256 bits
 * (umask 0x3F), in the SDM's event lists from Broadwell on; on an older Intel processor
 * the kernel accepts the code and counts what that code means there. AMD: Retired
 * SSE/AVX Operations (PMCx003, umask 0xFF), in the processor programming references of
 * family 17h on. Neither was run: the machine this was written on has no hardware
 * performance monitoring unit.
 */
#include <cpuid.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "../../ma_metrics.h"

#define MA_PMU_INTEL_FP_ARITH (0xC7u | (0x3Fu << 8))
#define MA_PMU_AMD_FP_RET_SSE_AVX (0x03u | (0xFFu << 8))

int ma_pmu_fp_event(uint64_t *config, char *why, size_t len)
{
	unsigned a, b, c, d;
	char vendor[13];
	if (!__get_cpuid(0, &a, &b, &c, &d)) {
		snprintf(why, len, "no CPUID leaf 0: the processor's vendor is unknown");
		return ENOENT;
	}
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &d, 4);
	memcpy(vendor + 8, &c, 4);
	vendor[12] = 0;
	if (!strcmp(vendor, "GenuineIntel")) {
		*config = MA_PMU_INTEL_FP_ARITH;
		return 0;
	}
	if (!strcmp(vendor, "AuthenticAMD") && __get_cpuid(1, &a, &b, &c, &d)) {
		unsigned family = (a >> 8) & 0xf;
		if (family == 0xf)
			family += (a >> 20) & 0xff;
		if (family >= 0x17) {
			*config = MA_PMU_AMD_FP_RET_SSE_AVX;
			return 0;
		}
	}
	snprintf(why, len, "no floating-point event is known for this %s processor", vendor);
	return ENOENT;
}
