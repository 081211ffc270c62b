/* Standalone check of marcel/arch/aarch64/preempt.S and ma_preempt_arch.h under
 * qemu-user (like aarch64-switch.c): a helper thread signals the main thread every
 * 100 us; the handler redirects it into the trampoline whenever it is inside the work
 * functions below, and the trampoline calls a ma_preempt_yield that clobbers every
 * caller-saved general register, q0-q31 (all 128 bits), NZCV, FPSR and FPCR. The work
 * functions keep values in general, FP and vector registers and flags live across long
 * stretches; their results must equal those of a run without signals.
 *
 * Run it on the default qemu CPU (which has SVE: the kernel frame then carries the
 * vector registers in an SVE record) and on one without SVE (FPSIMD record):
 * aarch64-linux-gnu-gcc -O2 -static -pthread -Imarcel/arch/aarch64 \
 *     tests/arch/aarch64-preempt.c marcel/arch/aarch64/preempt.S -o p && \
 *     qemu-aarch64 p && qemu-aarch64 -cpu cortex-a72 p */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "ma_preempt_arch.h"

int ma_preempt_signo;
void ma_preempt_yield(void);
static atomic_long yields, resumes, signals;
static volatile int stop;
static pid_t main_tid;

/* Everything the trampoline must restore, scrambled as a switch to other threads would. */
__attribute__((noinline)) void ma_preempt_yield(void)
{
	atomic_fetch_add(&yields, 1);
	uint64_t fpcr = 3u << 22; /* round toward zero */
	__asm__ volatile("msr fpcr, %0\n\t"
			 "msr fpsr, %1\n\t"
			 "msr nzcv, %2\n\t"
			 "movi v0.16b, #0x55\n\tmovi v1.16b, #0x55\n\tmovi v2.16b, #0x55\n\tmovi v3.16b, #0x55\n\t"
			 "movi v4.16b, #0x55\n\tmovi v5.16b, #0x55\n\tmovi v6.16b, #0x55\n\tmovi v7.16b, #0x55\n\t"
			 "movi v8.16b, #0x55\n\tmovi v9.16b, #0x55\n\tmovi v10.16b, #0x55\n\tmovi v11.16b, #0x55\n\t"
			 "movi v12.16b, #0x55\n\tmovi v13.16b, #0x55\n\tmovi v14.16b, #0x55\n\tmovi v15.16b, #0x55\n\t"
			 "movi v16.16b, #0x55\n\tmovi v17.16b, #0x55\n\tmovi v18.16b, #0x55\n\tmovi v19.16b, #0x55\n\t"
			 "movi v20.16b, #0x55\n\tmovi v21.16b, #0x55\n\tmovi v22.16b, #0x55\n\tmovi v23.16b, #0x55\n\t"
			 "movi v24.16b, #0x55\n\tmovi v25.16b, #0x55\n\tmovi v26.16b, #0x55\n\tmovi v27.16b, #0x55\n\t"
			 "movi v28.16b, #0x55\n\tmovi v29.16b, #0x55\n\tmovi v30.16b, #0x55\n\tmovi v31.16b, #0x55\n\t"
			 "mov x0, #0x5555\n\tmov x1, #0x5555\n\tmov x2, #0x5555\n\tmov x3, #0x5555\n\t"
			 "mov x4, #0x5555\n\tmov x5, #0x5555\n\tmov x6, #0x5555\n\tmov x7, #0x5555\n\t"
			 "mov x8, #0x5555\n\tmov x9, #0x5555\n\tmov x10, #0x5555\n\tmov x11, #0x5555\n\t"
			 "mov x12, #0x5555\n\tmov x13, #0x5555\n\tmov x14, #0x5555\n\tmov x15, #0x5555\n\t"
			 "mov x16, #0x5555\n\tmov x17, #0x5555\n\t"
			 :
			 : "r"(fpcr), "r"((uint64_t)0x8000009f), "r"((uint64_t)0x60000000) /* Z and C */
			 : "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14",
			   "x15", "x16", "x17", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11",
			   "v12", "v13", "v14", "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24",
			   "v25", "v26", "v27", "v28", "v29", "v30", "v31", "cc", "memory");
}

/* The work: in a section of its own, so the handler knows where it may redirect. */
#define WORK __attribute__((noipa, section("ma_work")))
extern const char __start_ma_work[], __stop_ma_work[];

static inline uint64_t xorshift(uint64_t x)
{
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

typedef double v2d __attribute__((vector_size(16)));

WORK static double work_fp(uint64_t seed, long n)
{
	double a0 = 1, a1 = 2, a2 = 3, a3 = 4, a4 = 5, a5 = 6, a6 = 7, a7 = 8;
	v2d v = { 1, 2 }, w = { 3, 4 }, k = { 0.999, 0.998 };
	uint64_t x = seed;
	for (long i = 0; i < n; i++) {
		x = xorshift(x);
		double d = (double)(x >> 11) * 0x1p-53;
		a0 = a0 * 0.999 + d;
		a1 = a1 * 0.998 + a0;
		a2 = a2 * 0.997 + a1 * d;
		a3 = a3 * 0.996 + a2;
		a4 = a4 * 0.995 + a3 * d;
		a5 = a5 * 0.994 + a4;
		a6 = a6 * 0.993 + a5 * d;
		a7 = a7 * 0.992 + a6;
		v2d dv = { d, d * 0.5 };
		v = v * k + dv;
		w = w * k + v * dv;
	}
	return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + v[0] + v[1] + w[0] + w[1] + (double)(x & 0xffff);
}

/* NZCV live across 256 instructions that leave the flags alone. The branches among them
 * matter under qemu-user, which delivers signals only where a translated block ends. */
WORK static long work_flags(long n)
{
	long bad = 0;
	uint64_t x = 0;
	for (long i = 0; i < n; i++) {
		uint64_t c, z;
		__asm__ volatile("cmp %[i], #1\n\t" /* C set iff i >= 1, Z iff i == 1 */
				 ".rept 128\n\tadd %[x], %[x], #1\n\tb .+4\n\t.endr\n\t"
				 "cset %[c], hs\n\t"
				 "cset %[z], eq"
				 : [c] "=r"(c), [z] "=r"(z), [x] "+r"(x)
				 : [i] "r"(i & 1 ? (uint64_t)i : 0)
				 : "cc");
		if (c != ((i & 1) != 0) || z != (i == 1))
			bad++;
	}
	return bad;
}

WORK static double work_rounding(long n)
{
	double s = 0;
	volatile double third = 1.0 / 3.0;
	for (long i = 0; i < n; i++)
		s += third * (double)(i & 7);
	return s;
}

static void handler(int sig, siginfo_t *si, void *ucv)
{
	(void)sig, (void)si;
	ucontext_t *uc = ucv;
	atomic_fetch_add(&signals, 1);
	if (ma_arch_preempt_resume(uc)) {
		atomic_fetch_add(&resumes, 1);
		return;
	}
	uintptr_t pc = ma_arch_uc_pc(uc);
	if (pc >= (uintptr_t)__start_ma_work && pc < (uintptr_t)__stop_ma_work)
		ma_arch_preempt_redirect(uc);
}

static void *ticker(void *arg)
{
	(void)arg;
	struct timespec ts = { 0, 100000 };
	while (!stop) {
		syscall(SYS_tgkill, getpid(), main_tid, ma_preempt_signo);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void set_fpcr(uint64_t fpcr)
{
	__asm__ volatile("msr fpcr, %0" ::"r"(fpcr));
}

/* The rounding part runs toward +inf: the trampoline must give FPCR back. */
static double rounding_up(long n)
{
	set_fpcr(1u << 22);
	double r = work_rounding(n);
	set_fpcr(0);
	return r;
}

int main(void)
{
	ma_preempt_signo = SIGRTMIN + 7;
	main_tid = (pid_t)syscall(SYS_gettid);
	long n = 2000000;
	double ref_fp = work_fp(42, n), ref_round = rounding_up(n);
	long ref_flags = work_flags(n / 8);
	if (ref_flags) {
		printf("flags test broken without signals (%ld)\n", ref_flags);
		return 1;
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(ma_preempt_signo, &sa, NULL);
	pthread_t t;
	pthread_create(&t, NULL, ticker, NULL);
	while (!atomic_load(&signals))
		;
	long y0 = atomic_load(&yields);
	double got_fp = work_fp(42, n);
	long y1 = atomic_load(&yields);
	double got_round = rounding_up(n);
	long y2 = atomic_load(&yields);
	long got_flags = work_flags(n / 8);
	long y3 = atomic_load(&yields);
	stop = 1;
	pthread_join(t, NULL);

	long y = atomic_load(&yields), r = atomic_load(&resumes);
	printf("aarch64 preemption: %ld redirections, %ld resumed; fp %s (%ld), rounding %s (%ld), flags %s (%ld)\n", y,
	       r, got_fp == ref_fp ? "ok" : "CLOBBERED", y1 - y0, got_round == ref_round ? "ok" : "CLOBBERED", y2 - y1,
	       got_flags ? "CLOBBERED" : "ok", y3 - y2);
	/* main keeps its results in callee-saved d8-d15: lost registers can zero both. */
	if (ref_fp < 1.0) {
		printf("floating-point registers of the caller lost (%g)\n", ref_fp);
		return 1;
	}
	/* Every part was interrupted often enough to matter. */
	if (y1 - y0 < 20 || y2 - y1 < 20 || y3 - y2 < 20 || y != r || got_fp != ref_fp || got_round != ref_round ||
	    got_flags)
		return 1;
	return 0;
}
