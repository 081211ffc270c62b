/* Standalone check of smt-quiet's wait on AArch64 (hwprio/arch/aarch64/quiet.c) under
 * qemu-user (tests/run-all runs it when aarch64-linux-gnu-gcc and qemu-aarch64 exist):
 * the mechanism follows the kernel's HWCAP_EVTSTRM (qemu-user has no event stream, so
 * YIELD+ISB here; a real kernel's WFE path is for arm64 hardware), 0 ns returns 0 at once,
 * and every wait, shorter and longer than an event-stream period, lasts at least what was
 * asked and no less than it reports. */
#include <stdint.h>
#include <stdio.h>
#include <sys/auxv.h>
#include <time.h>
#include "arch/ma_quiet_arch.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(void)
{
	enum ma_quiet_mech expected = getauxval(AT_HWCAP) & (1ul << 2) /* HWCAP_EVTSTRM */ ? MA_QUIET_WFE : MA_QUIET_YIELD_ISB;
	enum ma_quiet_mech m = MA_QUIET_SPIN;
	uint64_t w = ma_quiet_arch_wait(0, &m);
	if (w != 0 || m != expected) {
		printf("aarch64-pause: 0 ns waited %llu ns with %s, expected 0 with %s\n", (unsigned long long)w,
		       ma_quiet_mech_name(m), ma_quiet_mech_name(expected));
		return 1;
	}
	static const uint64_t asked[] = { 1, 1000, 50000, 400000, 2000000 };
	for (unsigned i = 0; i < sizeof(asked) / sizeof(asked[0]); i++) {
		m = MA_QUIET_SPIN;
		uint64_t before = mono_ns();
		w = ma_quiet_arch_wait(asked[i], &m);
		uint64_t after = mono_ns();
		if (w < asked[i] || after - before < w || m != expected) {
			printf("aarch64-pause: asked %llu ns: waited %llu with %s, %llu passed around the call\n",
			       (unsigned long long)asked[i], (unsigned long long)w, ma_quiet_mech_name(m),
			       (unsigned long long)(after - before));
			return 1;
		}
	}
	printf("aarch64 quiet wait: %s, 0 ns to 2 ms waited at least what was asked and what was reported\n",
	       ma_quiet_mech_name(expected));
	return 0;
}
