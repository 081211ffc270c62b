/*
 * Portable fallback (configure --with-context=ucontext, or CPUs without our assembly):
 * swapcontext. Much slower (it saves the signal mask with a system call) but correct.
 */
#ifndef MA_ARCH_H
#define MA_ARCH_H

#include <fenv.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <ucontext.h>

typedef struct ma_ctx {
	ucontext_t uc;
	void (*entry)(void *, void *);
	void *arg;
	int fpround;              /* rounding mode the new context starts with */
} ma_ctx_t;

void *ma_ctx_switch(ma_ctx_t *from, const ma_ctx_t *to, void *arg);
void ma_ctx_make(ma_ctx_t *ctx, void *stack_base, size_t stack_size, uint64_t fpctl,
		 void (*entry)(void *, void *), void *arg);

/* swapcontext carries the floating-point environment across switches; what a new
 * thread inherits from its creator is the rounding mode, applied when it starts (its
 * context is made later, at first run, from whatever thread is running then). */
static inline uint64_t ma_arch_fpctl(void)
{
	return (uint64_t)(unsigned)fegetround();
}

void *ma_tls_worker_get(void);
#define MA_TLS_READ(var, out) ((out) = ma_tls_worker_get())
#define MA_NEED_TLS_GETTER 1

static inline void ma_cpu_relax(void)
{
	__asm__ volatile("" ::: "memory");
}

static inline uint64_t ma_cycles(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ma_owner_inc (ma_atomic.h): a relaxed load and store. */
#define ma_arch_owner_inc(p) ma_owner_inc_relaxed(p)

#endif
