/*
 * x86-64 (System V) user-level context switch.
 *
 * void *ma_ctx_switch(ma_ctx_t *from, const ma_ctx_t *to, void *arg)
 *
 * Saves only what the ABI makes callee-saved (rbx, rbp, r12-r15, the MXCSR and x87
 * control words), stores the stack pointer in from->sp, loads to->sp and returns `arg`
 * in the resumed context. Two choices make it fast:
 *  - the return goes through pop+jmp: a `ret` to an address the return-stack buffer did
 *    not predict mispredicts on every switch;
 *  - MXCSR/x87 are reloaded only when their *control* bits differ. ldmxcsr/fldcw are
 *    slow, and comparing whole MXCSR values would reload on every switch as soon as one
 *    thread has raised a sticky status flag (e.g. inexact). Status flags therefore are
 *    not per-thread state here (documented in marcel/thread.h).
 *
 * Frame on a suspended stack, from low to high addresses:
 *   [mxcsr:4 | fcw:2 | pad:2] r15 r14 r13 r12 rbx rbp retaddr
 */
	.text
	.globl	ma_ctx_switch
	.hidden	ma_ctx_switch
	.type	ma_ctx_switch, @function
	.p2align 5
ma_ctx_switch:
	.cfi_startproc
	pushq	%rbp
	pushq	%rbx
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	subq	$8, %rsp
	stmxcsr	(%rsp)
	fnstcw	4(%rsp)
	movl	(%rsp), %eax
	movzwl	4(%rsp), %ecx
	movq	%rsp, (%rdi)
	movq	(%rsi), %rsp
	/* MXCSR bits 0-5 are sticky status flags; everything above is control. */
	xorl	(%rsp), %eax
	testl	$0xffc0, %eax
	jnz	.Lload_mxcsr
.Lcheck_fcw:
	cmpw	4(%rsp), %cx
	jne	.Lload_fcw
.Lrestore:
	addq	$8, %rsp
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbx
	popq	%rbp
	popq	%r11
	movq	%rdx, %rax
	jmp	*%r11
.Lload_mxcsr:
	ldmxcsr	(%rsp)
	jmp	.Lcheck_fcw
.Lload_fcw:
	fldcw	4(%rsp)
	jmp	.Lrestore
	.cfi_endproc
	.size	ma_ctx_switch, .-ma_ctx_switch

/*
 * First code a new context runs: ma_ctx_make leaves the entry function in r12 and its
 * argument in r13; the value handed over by the switch (the previous context's arg)
 * arrives in rax. The entry function never returns.
 */
	.globl	ma_ctx_trampoline
	.hidden	ma_ctx_trampoline
	.type	ma_ctx_trampoline, @function
	.p2align 4
ma_ctx_trampoline:
	.cfi_startproc
	.cfi_undefined rip
	xorl	%ebp, %ebp
	movq	%rax, %rdi
	movq	%r13, %rsi
	callq	*%r12
	ud2
	.cfi_endproc
	.size	ma_ctx_trampoline, .-ma_ctx_trampoline

	.section .note.GNU-stack,"",@progbits
