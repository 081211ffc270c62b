/*
 * x86-64 (System V): the first code a new context runs. The switch itself is inline
 * (ma_ctx_switch in ma_arch.h).
 */
	.text

/*
 * First code a new context runs: ma_ctx_make leaves the entry function and its argument
 * at the stack pointer; popping them leaves it at the stack's 16-byte aligned top, so
 * that the entry function starts where a call from the top would (its frames lie where
 * they lay when the switch saved its registers on the stack, which the stack checks of
 * tests/check_overflow.c rely on). The value handed over by the switch (the previous
 * context's arg) arrives in rax. The entry function never returns.
 */
	.globl	ma_ctx_trampoline
	.hidden	ma_ctx_trampoline
	.type	ma_ctx_trampoline, @function
	.p2align 4
ma_ctx_trampoline:
	.cfi_startproc
	.cfi_undefined rip
	popq	%rcx
	popq	%rsi
	xorl	%ebp, %ebp
	movq	%rax, %rdi
	callq	*%rcx
	ud2
	.cfi_endproc
	.size	ma_ctx_trampoline, .-ma_ctx_trampoline

	.section .note.GNU-stack,"",@progbits
