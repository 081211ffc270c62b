/*
 * x86-64 preemption trampoline (see marcel/preempt.c).
 *
 * The signal handler never switches: at a safe point it makes the interrupted thread
 * return from the handler into ma_preempt_trampoline instead of its own code, with
 *   rsp = interrupted rsp - MA_PREEMPT_FRAME (144), and [rsp] = the interrupted rip,
 * every other register as it was. 144 = the 128-byte red zone the interrupted function
 * may still use, the return address and one spare word; the gap is constant so that the
 * final `ret $136` puts rsp back exactly, without a scratch register.
 *
 * The trampoline saves the flags, every general register and the whole extended state
 * (xsave with the mask and size worked out from CPUID leaf 0xD at start, or fxsave),
 * empties the x87 stack and the upper vector halves so the C code it calls starts from
 * an ABI-clean state, calls ma_preempt_yield (which may switch to other threads and
 * resume on another kernel thread), then restores everything and returns to the
 * interrupted instruction.
 *
 * Frame, from the 64-byte aligned rsp upwards: extended state, (pad), r15 ... rax, rflags,
 * then the interrupted rip at rbp + 128, spare word, red zone.
 */
	.text
	.globl	ma_preempt_trampoline
	.hidden	ma_preempt_trampoline
	.type	ma_preempt_trampoline, @function
	.p2align 4
ma_preempt_trampoline:
	.cfi_startproc
	/* Not entered by a call: unwinders must not look up rip - 1. */
	.cfi_signal_frame
	.cfi_def_cfa rsp, 144
	.cfi_offset rip, -144
	pushfq
	.cfi_adjust_cfa_offset 8
	pushq	%rax
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset rax, 0
	pushq	%rcx
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset rcx, 0
	pushq	%rdx
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset rdx, 0
	pushq	%rsi
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset rsi, 0
	pushq	%rdi
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset rdi, 0
	pushq	%r8
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r8, 0
	pushq	%r9
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r9, 0
	pushq	%r10
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r10, 0
	pushq	%r11
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r11, 0
	pushq	%rbx
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset rbx, 0
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset rbp, 0
	pushq	%r12
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r12, 0
	pushq	%r13
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r13, 0
	pushq	%r14
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r14, 0
	pushq	%r15
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r15, 0
	movq	%rsp, %rbp
	.cfi_def_cfa_register rbp
	subq	ma_preempt_xsave_size(%rip), %rsp
	andq	$-64, %rsp
	cmpb	$0, ma_preempt_use_xsave(%rip)
	je	.Lfxsave
	/* xsave writes only XSTATE_BV of the header; xrstor faults unless the rest
	 * (XCOMP_BV and the reserved bytes) is zero. */
	xorl	%eax, %eax
	movq	%rax, 512(%rsp)
	movq	%rax, 520(%rsp)
	movq	%rax, 528(%rsp)
	movq	%rax, 536(%rsp)
	movq	%rax, 544(%rsp)
	movq	%rax, 552(%rsp)
	movq	%rax, 560(%rsp)
	movq	%rax, 568(%rsp)
	movl	ma_preempt_xsave_mask(%rip), %eax
	movl	ma_preempt_xsave_mask+4(%rip), %edx
	xsave64	(%rsp)
	cmpb	$0, ma_preempt_use_avx(%rip)
	je	.Lclean
	/* Dirty upper halves would make every SSE instruction of the C code slow. */
	vzeroupper
	jmp	.Lclean
.Lfxsave:
	fxsave64 (%rsp)
.Lclean:
	/* The interrupted code may have been in the middle of x87 work: the C code expects
	 * an empty x87 stack. Keep the control word (rounding, masks: per-thread state). */
	subq	$16, %rsp
	fnstcw	(%rsp)
	fninit
	fldcw	(%rsp)
	addq	$16, %rsp
	cld
	call	ma_preempt_yield
	cmpb	$0, ma_preempt_use_xsave(%rip)
	je	.Lfxrstor
	movl	ma_preempt_xsave_mask(%rip), %eax
	movl	ma_preempt_xsave_mask+4(%rip), %edx
	xrstor64 (%rsp)
	jmp	.Lrestore
.Lfxrstor:
	fxrstor64 (%rsp)
.Lrestore:
	movq	%rbp, %rsp
	.cfi_def_cfa_register rsp
	popq	%r15
	.cfi_adjust_cfa_offset -8
	.cfi_restore r15
	popq	%r14
	.cfi_adjust_cfa_offset -8
	.cfi_restore r14
	popq	%r13
	.cfi_adjust_cfa_offset -8
	.cfi_restore r13
	popq	%r12
	.cfi_adjust_cfa_offset -8
	.cfi_restore r12
	popq	%rbp
	.cfi_adjust_cfa_offset -8
	.cfi_restore rbp
	popq	%rbx
	.cfi_adjust_cfa_offset -8
	.cfi_restore rbx
	popq	%r11
	.cfi_adjust_cfa_offset -8
	.cfi_restore r11
	popq	%r10
	.cfi_adjust_cfa_offset -8
	.cfi_restore r10
	popq	%r9
	.cfi_adjust_cfa_offset -8
	.cfi_restore r9
	popq	%r8
	.cfi_adjust_cfa_offset -8
	.cfi_restore r8
	popq	%rdi
	.cfi_adjust_cfa_offset -8
	.cfi_restore rdi
	popq	%rsi
	.cfi_adjust_cfa_offset -8
	.cfi_restore rsi
	popq	%rdx
	.cfi_adjust_cfa_offset -8
	.cfi_restore rdx
	popq	%rcx
	.cfi_adjust_cfa_offset -8
	.cfi_restore rcx
	popq	%rax
	.cfi_adjust_cfa_offset -8
	.cfi_restore rax
	popfq
	.cfi_adjust_cfa_offset -8
	/* Pops the interrupted rip, then skips the spare word and the red zone. */
	ret	$136
	.cfi_endproc
	.size	ma_preempt_trampoline, .-ma_preempt_trampoline

/* Set once by ma_arch_preempt_init (ma_preempt_arch.h), read by every preemption. */
	.bss
	.p2align 3
	.globl	ma_preempt_xsave_mask
	.hidden	ma_preempt_xsave_mask
	.type	ma_preempt_xsave_mask, @object
	.size	ma_preempt_xsave_mask, 8
ma_preempt_xsave_mask:
	.zero	8
	.globl	ma_preempt_xsave_size
	.hidden	ma_preempt_xsave_size
	.type	ma_preempt_xsave_size, @object
	.size	ma_preempt_xsave_size, 8
ma_preempt_xsave_size:
	.zero	8
	.globl	ma_preempt_use_xsave
	.hidden	ma_preempt_use_xsave
	.type	ma_preempt_use_xsave, @object
	.size	ma_preempt_use_xsave, 1
ma_preempt_use_xsave:
	.zero	1
	.globl	ma_preempt_use_avx
	.hidden	ma_preempt_use_avx
	.type	ma_preempt_use_avx, @object
	.size	ma_preempt_use_avx, 1
ma_preempt_use_avx:
	.zero	1

	.section .note.GNU-stack,"",@progbits
