/* AArch64: context switch, fresh TLS reads, and small CPU helpers. */
#ifndef MA_ARCH_H
#define MA_ARCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct ma_ctx {
	void *sp;
} ma_ctx_t;

void *ma_ctx_switch(ma_ctx_t *from, const ma_ctx_t *to, void *arg);
void ma_ctx_trampoline(void);

static inline uint64_t ma_arch_fpctl(void)
{
	uint64_t fpcr;
	__asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
	return fpcr;
}

/* See the x86-64 version; the frame must match context.S. */
static inline void ma_ctx_make(ma_ctx_t *ctx, void *stack_base, size_t stack_size, uint64_t fpctl,
			       void (*entry)(void *, void *), void *arg)
{
	uintptr_t top = ((uintptr_t)stack_base + stack_size) & ~(uintptr_t)15;
	uint64_t *f = (uint64_t *)top - 22;
	memset(f, 0, 22 * sizeof(*f));
	f[0] = (uint64_t)(uintptr_t)entry;     /* x19 */
	f[1] = (uint64_t)(uintptr_t)arg;       /* x20 */
	f[11] = (uint64_t)(uintptr_t)ma_ctx_trampoline; /* x30 */
	f[20] = fpctl;
	ctx->sp = f;
}

/* No portable way to force a fresh TLS address from inline asm here: go through a
 * function the compiler cannot inline or reason about (worker.c). */
void *ma_tls_worker_get(void);
#define MA_TLS_READ(var, out) ((out) = ma_tls_worker_get())
#define MA_NEED_TLS_GETTER 1

static inline void ma_cpu_relax(void)
{
	__asm__ volatile("yield" ::: "memory");
}

static inline uint64_t ma_cycles(void)
{
	uint64_t v;
	__asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v));
	return v;
}

/* ma_owner_inc (ma_atomic.h): a relaxed load and store. */
#define ma_arch_owner_inc(p) ma_owner_inc_relaxed(p)

#endif
