/* x86-64: context switch, fresh TLS reads, and small CPU helpers. */
#ifndef MA_ARCH_H
#define MA_ARCH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ma_ctx {
	void *sp;
} ma_ctx_t;

void ma_ctx_trampoline(void);

/* The caller-saved vector and mask registers beyond SSE's, when the compiler may use them. */
#ifdef __AVX512F__
#define MA_CTX_CLOBBER_AVX512                                                               \
	, "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24",  \
	"xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "k1", "k2", "k3",    \
	"k4", "k5", "k6", "k7"
#else
#define MA_CTX_CLOBBER_AVX512
#endif

/*
 * Switches to `to`, saving the current context in `from`; returns the `arg` that the
 * context which later switches back to us passed.
 *
 * Inline, with every register but rsp and rbp declared clobbered: the compiler keeps
 * across the switch only what the calling function needs, saved once in that function's
 * frame. An out-of-line switch saved the six callee-saved registers a second time, the
 * caller having saved them already to keep its own values (a dozen pushes and pops, the
 * call and its argument moves: about 15 instructions per switch). rbp is saved here
 * because a frame-pointer build cannot declare it clobbered.
 *
 * Frame on a suspended stack, from low to high addresses (ma_ctx_make builds the same):
 *   [mxcsr:4 | fcw:2 | pad:2] rbp resume-address
 * below the 128-byte red zone of the suspended function, which it may still use: a
 * function that calls nothing else may keep data there, and it would not know that this
 * statement pushes.
 *
 * The resume goes through pop+jmp: a `ret` to an address the return-stack buffer did not
 * predict mispredicts on every switch. MXCSR and the x87 control word are reloaded only
 * when their control bits differ: ldmxcsr and fldcw are slow, and comparing whole MXCSR
 * values would reload on every switch once a thread has raised a sticky status flag. The
 * status flags are therefore not per-thread state (marcel/thread.h).
 */
static inline __attribute__((always_inline)) void *ma_ctx_switch(ma_ctx_t *from, const ma_ctx_t *to, void *arg)
{
	void *from_sp = &from->sp;
	const void *to_sp = &to->sp;
	__asm__ volatile(
		"leaq -128(%%rsp), %%rsp\n\t"
		"leaq 1f(%%rip), %%rcx\n\t"
		"pushq %%rcx\n\t"
		"pushq %%rbp\n\t"
		"subq $8, %%rsp\n\t"
		"stmxcsr (%%rsp)\n\t"
		"fnstcw 4(%%rsp)\n\t"
		"movl (%%rsp), %%ecx\n\t"
		"movzwl 4(%%rsp), %%edx\n\t"
		"movq %%rsp, (%%rdi)\n\t"
		"movq (%%rsi), %%rsp\n\t"
		/* MXCSR bits 0-5 are sticky status flags; everything above is control. */
		"xorl (%%rsp), %%ecx\n\t"
		"testl $0xffc0, %%ecx\n\t"
		"jnz 2f\n"
		"3:\n\t"
		"cmpw 4(%%rsp), %%dx\n\t"
		"jne 4f\n"
		"5:\n\t"
		"addq $8, %%rsp\n\t"
		"popq %%rbp\n\t"
		"popq %%rcx\n\t"
		"jmp *%%rcx\n"
		"2:\n\t"
		"ldmxcsr (%%rsp)\n\t"
		"jmp 3b\n"
		"4:\n\t"
		"fldcw 4(%%rsp)\n\t"
		"jmp 5b\n"
		"1:\n\t"
		"leaq 128(%%rsp), %%rsp"
		: "+a"(arg), "+D"(from_sp), "+S"(to_sp)
		:
		: "rbx", "rcx", "rdx", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "xmm0",
		  "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
		  "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "st", "st(1)", "st(2)", "st(3)",
		  "st(4)", "st(5)", "st(6)", "st(7)", "cc", "memory" MA_CTX_CLOBBER_AVX512);
	return arg;
}

/* ma_owner_inc (ma_atomic.h): one add to memory. Its store is a single aligned 8-byte
 * write, which readers see whole; without a lock prefix, as nobody else writes p. A
 * relaxed load and store would be three instructions. */
static inline void ma_arch_owner_inc(_Atomic unsigned long *p)
{
	__asm__ volatile("incq %0" : "+m"(*(unsigned long *)p));
}

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
 * returned by ma_arch_fpctl): the switch's frame resuming into ma_ctx_trampoline, then
 * entry and arg, which the trampoline pops (context.S).
 */
static inline void ma_ctx_make(ma_ctx_t *ctx, void *stack_base, size_t stack_size, uint64_t fpctl,
			       void (*entry)(void *, void *), void *arg)
{
	uintptr_t top = ((uintptr_t)stack_base + stack_size) & ~(uintptr_t)15;
	uint64_t *f = (uint64_t *)top - 5;
	f[0] = fpctl;                          /* mxcsr | fcw << 32 */
	f[1] = 0;                              /* rbp */
	f[2] = (uint64_t)(uintptr_t)ma_ctx_trampoline;
	f[3] = (uint64_t)(uintptr_t)entry;
	f[4] = (uint64_t)(uintptr_t)arg;
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
