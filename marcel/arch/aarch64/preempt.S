/*
 * AArch64 preemption trampoline (see marcel/preempt.c and ma_preempt_arch.h).
 *
 * The signal handler makes the interrupted thread return into ma_preempt_trampoline
 * with sp = (interrupted sp - 128) & ~15, minus 16 bytes holding the interrupted pc and
 * sp; every other register is as it was. The trampoline saves x0-x30, NZCV, FPSR, FPCR
 * and q0-q31 below that, and calls ma_preempt_yield (which may switch to other threads
 * and resume on another kernel thread).
 *
 * Getting back is the hard part: AArch64 has no branch that takes its target from
 * memory, so returning to the interrupted pc with all 31 registers restored needs help.
 * The trampoline sends MA_PREEMPT_SIG to its own kernel thread; the handler sees the
 * signal arrive at ma_preempt_resume_pc and loads the saved registers into the ucontext,
 * and the kernel's sigreturn restores them all at once (with the signal mask and the
 * signal stack of the kernel thread the thread now runs on).
 *
 * Frame (from sp): x0..x30 (0-247), nzcv (248), fpsr (256), fpcr (264), q0..q31 (272-783),
 * then interrupted pc (784) and sp (792). Must match ma_preempt_arch.h.
 */
	.text
	.globl	ma_preempt_trampoline
	.hidden	ma_preempt_trampoline
	.type	ma_preempt_trampoline, %function
	.p2align 4
ma_preempt_trampoline:
	.cfi_startproc
	.cfi_signal_frame
	/* The interrupted frame is described by the saved pc/sp, which DWARF cannot express
	 * simply: end backtraces here. */
	.cfi_undefined x30
	sub	sp, sp, #784
	stp	x0, x1, [sp, #0]
	stp	x2, x3, [sp, #16]
	stp	x4, x5, [sp, #32]
	stp	x6, x7, [sp, #48]
	stp	x8, x9, [sp, #64]
	stp	x10, x11, [sp, #80]
	stp	x12, x13, [sp, #96]
	stp	x14, x15, [sp, #112]
	stp	x16, x17, [sp, #128]
	stp	x18, x19, [sp, #144]
	stp	x20, x21, [sp, #160]
	stp	x22, x23, [sp, #176]
	stp	x24, x25, [sp, #192]
	stp	x26, x27, [sp, #208]
	stp	x28, x29, [sp, #224]
	str	x30, [sp, #240]
	mrs	x0, nzcv
	mrs	x1, fpsr
	mrs	x2, fpcr
	str	x0, [sp, #248]
	stp	x1, x2, [sp, #256]
	stp	q0, q1, [sp, #272]
	stp	q2, q3, [sp, #304]
	stp	q4, q5, [sp, #336]
	stp	q6, q7, [sp, #368]
	stp	q8, q9, [sp, #400]
	stp	q10, q11, [sp, #432]
	stp	q12, q13, [sp, #464]
	stp	q14, q15, [sp, #496]
	stp	q16, q17, [sp, #528]
	stp	q18, q19, [sp, #560]
	stp	q20, q21, [sp, #592]
	stp	q22, q23, [sp, #624]
	stp	q24, q25, [sp, #656]
	stp	q26, q27, [sp, #688]
	stp	q28, q29, [sp, #720]
	stp	q30, q31, [sp, #752]
	mov	x29, #0
	bl	ma_preempt_yield
	/* tgkill(getpid(), gettid(), ma_preempt_signo), by hand: the signal must arrive
	 * right after this svc, with sp still at the frame. */
	mov	x8, #172		/* getpid */
	svc	#0
	mov	x19, x0
	mov	x8, #178		/* gettid */
	svc	#0
	mov	x1, x0
	mov	x0, x19
	adrp	x2, ma_preempt_signo
	ldr	w2, [x2, :lo12:ma_preempt_signo]
	mov	x8, #131		/* tgkill */
	svc	#0
	.globl	ma_preempt_resume_pc
	.hidden	ma_preempt_resume_pc
ma_preempt_resume_pc:
	/* Only reached if the signal could not be delivered (blocked on this kernel
	 * thread): the interrupted context cannot be restored. */
	brk	#0x3e8
	.cfi_endproc
	.size	ma_preempt_trampoline, .-ma_preempt_trampoline

	.section .note.GNU-stack,"",%progbits
