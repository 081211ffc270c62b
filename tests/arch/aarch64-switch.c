/* Standalone check of marcel/arch/aarch64/context.S under qemu-user (tests/run-all runs it
 * when aarch64-linux-gnu-gcc and qemu-aarch64 exist): ping-pong between two contexts,
 * arguments both ways, FPCR kept per context, callee-saved d8 preserved. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include "ma_arch.h"
void *ma_tls_worker_get(void) { return 0; }
static ma_ctx_t main_ctx, a_ctx;
static long counter;
static void entry(void *prev, void *arg)
{
	if (prev != (void *)0x1234 || arg != (void *)0x5678) { printf("bad args %p %p\n", prev, arg); exit(1); }
	volatile double d = 1.5;
	uint64_t fpcr = 1u << 22; /* round toward +inf */
	__asm__ volatile("msr fpcr, %0" :: "r"(fpcr));
	for (;;) {
		counter++;
		void *r = ma_ctx_switch(&a_ctx, &main_ctx, (void *)counter);
		if (r != (void *)(counter * 10)) { printf("bad ret %p\n", r); exit(1); }
		if (ma_arch_fpctl() != fpcr) { printf("fpcr lost in a\n"); exit(1); }
		d += 1.0;
	}
}
int main(void)
{
	static char stack[65536] __attribute__((aligned(16)));
	register double keep __asm__("d8") = 3.25;
	__asm__ volatile("" : "+w"(keep));
	uint64_t fp0 = ma_arch_fpctl();
	ma_ctx_make(&a_ctx, stack, sizeof(stack), fp0, entry, (void *)0x5678);
	void *r = ma_ctx_switch(&main_ctx, &a_ctx, (void *)0x1234);
	for (long i = 1; i <= 1000000; i++) {
		if (r != (void *)i) { printf("bad %ld %p\n", i, r); return 1; }
		if (ma_arch_fpctl() != fp0) { printf("fpcr leaked into main\n"); return 1; }
		r = ma_ctx_switch(&main_ctx, &a_ctx, (void *)(i * 10));
	}
	__asm__ volatile("" : "+w"(keep));
	if (keep != 3.25) { printf("d8 clobbered\n"); return 1; }
	printf("aarch64 context switch: 1000000 round trips ok, FPCR per context, d8 preserved\n");
	return 0;
}
