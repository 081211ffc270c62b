/*
 * AArch64 side of preemption (marcel/preempt.c): redirecting the signal's ucontext into
 * preempt.S, and loading the trampoline's saved registers back into the ucontext of the
 * signal it sends itself to return (see preempt.S for why). Included by preempt.c only,
 * after <ucontext.h> and <signal.h> with _GNU_SOURCE.
 *
 * Not preserved: SVE/SME state beyond the 128-bit V registers (standard AArch64 code has
 * none; the kernel discards it at every system call anyway).
 */
#ifndef MA_PREEMPT_ARCH_H
#define MA_PREEMPT_ARCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <signal.h>
#include <ucontext.h>
#include <asm/sigcontext.h>

#define MA_ARCH_PREEMPT 1

/* preempt.S's frame, in 64-bit words. */
#define MA_PREEMPT_W_NZCV 31
#define MA_PREEMPT_W_FPSR 32
#define MA_PREEMPT_W_FPCR 33
#define MA_PREEMPT_W_Q0 34
#define MA_PREEMPT_W_PC 98
#define MA_PREEMPT_W_SP 99
/* AAPCS64 on Linux has no red zone below sp; skipping 128 bytes anyway costs nothing
 * and covers code written for ABIs that have one. */
#define MA_PREEMPT_REDZONE 128

void ma_preempt_trampoline(void) __attribute__((visibility("hidden")));
extern const char ma_preempt_resume_pc[] __attribute__((visibility("hidden")));

static inline int ma_arch_preempt_init(const char **why)
{
	*why = NULL;
	return 0;
}

/* Frame and alignment below the interrupted sp before the call into C. */
static inline size_t ma_arch_preempt_stack_need(void)
{
	return MA_PREEMPT_REDZONE + 16 + 16 + (MA_PREEMPT_W_SP + 1) * 8;
}

static inline uintptr_t ma_arch_uc_pc(const ucontext_t *uc)
{
	return (uintptr_t)uc->uc_mcontext.pc;
}

static inline uintptr_t ma_arch_uc_sp(const ucontext_t *uc)
{
	return (uintptr_t)uc->uc_mcontext.sp;
}

static inline void ma_arch_preempt_redirect(ucontext_t *uc)
{
	mcontext_t *m = &uc->uc_mcontext;
	uint64_t *f = (uint64_t *)(uintptr_t)(((m->sp - MA_PREEMPT_REDZONE) & ~(uint64_t)15) - 16);
	f[0] = m->pc;
	f[1] = m->sp;
	m->sp = (uint64_t)(uintptr_t)f;
	m->pc = (uint64_t)(uintptr_t)ma_preempt_trampoline;
}

/* The records of the signal frame's __reserved area, following an extra_context. */
static inline struct _aarch64_ctx *ma_arch_uc_next(struct _aarch64_ctx *h)
{
	if (h->magic == EXTRA_MAGIC)
		return (struct _aarch64_ctx *)(uintptr_t)((struct extra_context *)h)->datap;
	return (struct _aarch64_ctx *)((char *)h + h->size);
}

/*
 * If the signal is the trampoline asking to go back (it arrives right after its svc),
 * loads the saved registers into uc so that sigreturn restores them all, and returns 1.
 * V registers go into the FPSIMD record, and into the low 128 bits of the Z registers
 * when the frame carries SVE registers (the kernel, or qemu, then restores from those).
 */
static inline int ma_arch_preempt_resume(ucontext_t *uc)
{
	mcontext_t *m = &uc->uc_mcontext;
	if (m->pc != (uint64_t)(uintptr_t)ma_preempt_resume_pc)
		return 0;
	const uint64_t *f = (const uint64_t *)(uintptr_t)m->sp;
	for (int i = 0; i < 31; i++)
		m->regs[i] = f[i];
	m->pstate = (m->pstate & ~(uint64_t)0xf0000000u) | (f[MA_PREEMPT_W_NZCV] & 0xf0000000u);
	m->pc = f[MA_PREEMPT_W_PC];
	m->sp = f[MA_PREEMPT_W_SP];
	const char *q = (const char *)(f + MA_PREEMPT_W_Q0);
	for (struct _aarch64_ctx *h = (struct _aarch64_ctx *)m->__reserved; h->magic; h = ma_arch_uc_next(h)) {
		if (h->magic == FPSIMD_MAGIC) {
			struct fpsimd_context *fp = (struct fpsimd_context *)h;
			fp->fpsr = (uint32_t)f[MA_PREEMPT_W_FPSR];
			fp->fpcr = (uint32_t)f[MA_PREEMPT_W_FPCR];
			memcpy(fp->vregs, q, sizeof(fp->vregs));
		} else if (h->magic == SVE_MAGIC && h->size > sizeof(struct sve_context)) {
			struct sve_context *sve = (struct sve_context *)h;
			unsigned vq = sve_vq_from_vl(sve->vl);
			for (unsigned n = 0; n < 32; n++) {
				char *z = (char *)sve + SVE_SIG_ZREG_OFFSET(vq, n);
				memset(z, 0, SVE_SIG_ZREG_SIZE(vq));
				memcpy(z, q + 16 * n, 16);
			}
		}
	}
	return 1;
}

#endif
