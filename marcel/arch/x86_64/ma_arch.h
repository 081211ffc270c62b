/* x86-64: context switch, fresh TLS reads, and small CPU helpers. */
#ifndef MA_ARCH_H
#define MA_ARCH_H

#include <stddef.h>
#include <stdint.h>

typedef struct ma_ctx {
	void *sp;
} ma_ctx_t;

/* Switches to `to`, saving the current context in `from`; returns the `arg` that the
 * context which later switches back to us passed. */
void *ma_ctx_switch(ma_ctx_t *from, const ma_ctx_t *to, void *arg);
void ma_ctx_trampoline(void);

/* Current MXCSR and x87 control word, packed the way the switch frame stores them. */
static inline uint64_t ma_arch_fpctl(void)
{
	uint32_t mxcsr;
	uint16_t fcw;
	__asm__ volatile("stmxcsr %0; fnstcw %1" : "=m"(mxcsr), "=m"(fcw));
	return (uint64_t)mxcsr | ((uint64_t)fcw << 32);
}

/*
 * Prepares a context that, when first switched to, calls entry(prev_arg, arg) on the
 * stack [stack_base, stack_base + stack_size) with the given FP control state (as
 * returned by ma_arch_fpctl). The frame must match context.S.
 */
static inline void ma_ctx_make(ma_ctx_t *ctx, void *stack_base, size_t stack_size, uint64_t fpctl,
			       void (*entry)(void *, void *), void *arg)
{
	uintptr_t top = ((uintptr_t)stack_base + stack_size) & ~(uintptr_t)15;
	uint64_t *f = (uint64_t *)top - 8;
	f[0] = fpctl;                          /* mxcsr | fcw << 32 */
	f[1] = 0;                              /* r15 */
	f[2] = 0;                              /* r14 */
	f[3] = (uint64_t)(uintptr_t)arg;       /* r13 */
	f[4] = (uint64_t)(uintptr_t)entry;     /* r12 */
	f[5] = 0;                              /* rbx */
	f[6] = 0;                              /* rbp */
	f[7] = (uint64_t)(uintptr_t)ma_ctx_trampoline;
	ctx->sp = f;
}

/*
 * Reads a TLS pointer afresh. The compiler treats the address of a __thread variable
 * as constant within a function, so after a context switch that resumed us on another
 * kernel thread a plain access could still use the old thread's slot.
 */
#define MA_TLS_READ(var, out)                                                      \
	__asm__ volatile("movq " #var "@gottpoff(%%rip), %0\n\tmovq %%fs:(%0), %0" \
			 : "=r"(out))

static inline void ma_cpu_relax(void)
{
	__builtin_ia32_pause();
}

static inline uint64_t ma_cycles(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

#endif
