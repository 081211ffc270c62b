/*
 * x86-64 side of preemption (marcel/preempt.c): reading and redirecting the signal's
 * ucontext for preempt.S, and sizing its extended-state save area. Included by preempt.c
 * only, after <ucontext.h> with _GNU_SOURCE (REG_RIP...).
 */
#ifndef MA_PREEMPT_ARCH_H
#define MA_PREEMPT_ARCH_H

#include <cpuid.h>
#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

#define MA_ARCH_PREEMPT 1

/* Gap between the interrupted rsp and the trampoline's entry rsp; preempt.S's `ret $136`
 * depends on it. */
#define MA_PREEMPT_FRAME 144

void ma_preempt_trampoline(void) __attribute__((visibility("hidden")));
extern uint64_t ma_preempt_xsave_mask __attribute__((visibility("hidden")));
extern uint64_t ma_preempt_xsave_size __attribute__((visibility("hidden")));
extern unsigned char ma_preempt_use_xsave __attribute__((visibility("hidden")));
extern unsigned char ma_preempt_use_avx __attribute__((visibility("hidden")));

/*
 * Chooses how the trampoline saves the extended state. xsave covers x87, SSE, AVX, MPX
 * and AVX-512 (XCR0 bits 0-7): registers compiled code may have live at any instruction.
 * Left out: PKRU (protection keys belong to the kernel thread, and restoring a stale
 * value after a migration would be wrong) and AMX tiles (enabled per process on request,
 * 8 KiB, and not used by code a time slice may interrupt without the program knowing).
 * The area size is the end of the furthest saved component (CPUID 0xD sub-leaves), so
 * it is what the standard format needs for this mask and no more.
 */
static inline int ma_arch_preempt_init(const char **why)
{
	unsigned a, b, c, d;
	*why = NULL;
	if (!__get_cpuid(1, &a, &b, &c, &d)) {
		*why = "CPUID leaf 1 is not available";
		return -1;
	}
	if ((c & bit_XSAVE) && (c & bit_OSXSAVE) && __get_cpuid_max(0, NULL) >= 0xd) {
		uint32_t lo, hi;
		__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
		uint64_t mask = ((uint64_t)hi << 32 | lo) & 0xff;
		uint64_t size = 576; /* legacy area + xsave header */
		for (unsigned i = 2; i < 8; i++)
			if (mask >> i & 1) {
				__cpuid_count(0xd, i, a, b, c, d);
				if ((uint64_t)b + a > size)
					size = (uint64_t)b + a;
			}
		ma_preempt_xsave_mask = mask;
		ma_preempt_xsave_size = (size + 63) & ~(uint64_t)63;
		ma_preempt_use_xsave = 1;
		ma_preempt_use_avx = (mask & 4) != 0;
	} else {
		ma_preempt_xsave_mask = 0;
		ma_preempt_xsave_size = 512;
		ma_preempt_use_xsave = 0;
		ma_preempt_use_avx = 0;
	}
	return 0;
}

/* Stack the trampoline takes below the interrupted rsp before it calls C: the frame,
 * rflags and 15 registers, the save area and its alignment. */
static inline size_t ma_arch_preempt_stack_need(void)
{
	return MA_PREEMPT_FRAME + 16 * 8 + (size_t)ma_preempt_xsave_size + 64 + 16;
}

static inline uintptr_t ma_arch_uc_pc(const ucontext_t *uc)
{
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
}

static inline uintptr_t ma_arch_uc_sp(const ucontext_t *uc)
{
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
}

/* Makes the interrupted thread enter the trampoline when the handler returns. The
 * caller checked that the stack has ma_arch_preempt_stack_need() bytes below rsp. */
static inline void ma_arch_preempt_redirect(ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	uint64_t *f = (uint64_t *)(uintptr_t)(g[REG_RSP] - MA_PREEMPT_FRAME);
	f[0] = (uint64_t)g[REG_RIP];
	g[REG_RSP] = (greg_t)(uintptr_t)f;
	g[REG_RIP] = (greg_t)(uintptr_t)ma_preempt_trampoline;
}

/* The trampoline returns by itself here: no second signal to serve. */
static inline int ma_arch_preempt_resume(ucontext_t *uc)
{
	(void)uc;
	return 0;
}

#endif
