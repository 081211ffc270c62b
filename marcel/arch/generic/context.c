/* ucontext fallback for the context switch. */
#include <stdlib.h>
#include "ma_arch.h"

/* swapcontext resumes the target on the kernel thread that called it, so a per-kernel-
 * thread slot can carry the argument and the target across. */
static __thread void *ma_switch_arg;
static __thread const ma_ctx_t *ma_switch_target;

__attribute__((noinline)) static void *ma_read_arg(void)
{
	void *a = ma_switch_arg;
	__asm__ volatile("" ::: "memory");
	return a;
}

static void ma_ctx_start(void)
{
	const ma_ctx_t *self = ma_switch_target;
	fesetround(self->fpround);
	self->entry(ma_read_arg(), self->arg);
	abort();
}

void ma_ctx_make(ma_ctx_t *ctx, void *stack_base, size_t stack_size, uint64_t fpctl,
		 void (*entry)(void *, void *), void *arg)
{
	getcontext(&ctx->uc);
	ctx->fpround = (int)fpctl;
	ctx->uc.uc_stack.ss_sp = stack_base;
	ctx->uc.uc_stack.ss_size = stack_size;
	ctx->uc.uc_link = NULL;
	ctx->entry = entry;
	ctx->arg = arg;
	makecontext(&ctx->uc, ma_ctx_start, 0);
}

void *ma_ctx_switch(ma_ctx_t *from, const ma_ctx_t *to, void *arg)
{
	ma_switch_arg = arg;
	ma_switch_target = to;
	swapcontext(&from->uc, &to->uc);
	return ma_read_arg();
}
