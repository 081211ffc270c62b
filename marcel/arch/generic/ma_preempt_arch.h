/*
 * Portable build (ucontext switch): no preemption. Redirecting an interrupted thread
 * needs a trampoline that saves every register of the CPU, which only the assembly
 * ports have; MARCEL_TIMESLICE > 0 is refused at marcel_init.
 */
#ifndef MA_PREEMPT_ARCH_H
#define MA_PREEMPT_ARCH_H

#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

#define MA_ARCH_PREEMPT 0

static inline int ma_arch_preempt_init(const char **why)
{
	*why = "the portable (ucontext) build has no preemption trampoline";
	return -1;
}

static inline size_t ma_arch_preempt_stack_need(void)
{
	return 0;
}

static inline uintptr_t ma_arch_uc_pc(const ucontext_t *uc)
{
	(void)uc;
	return 0;
}

static inline uintptr_t ma_arch_uc_sp(const ucontext_t *uc)
{
	(void)uc;
	return 0;
}

static inline void ma_arch_preempt_redirect(ucontext_t *uc)
{
	(void)uc;
}

static inline int ma_arch_preempt_resume(ucontext_t *uc)
{
	(void)uc;
	return 0;
}

#endif
