/*
 * AArch64 (AAPCS64) user-level context switch; same contract as the x86-64 one.
 *
 * void *ma_ctx_switch(ma_ctx_t *from, const ma_ctx_t *to, void *arg)
 *
 * Saves x19-x28, fp, lr, d8-d15 and FPCR; FPCR is written back only when it differs
 * (msr fpcr is slow and FPSR, the status register, is not per-thread state). Returns
 * with `br` rather than `ret` so the return-address predictor is not desynchronised.
 *
 * Frame (176 bytes, from sp): x19..x28, x29, x30, d8..d15, fpcr, pad
 */
	.text
	.globl	ma_ctx_switch
	.hidden	ma_ctx_switch
	.type	ma_ctx_switch, %function
	.p2align 5
ma_ctx_switch:
	.cfi_startproc
	sub	sp, sp, #176
	stp	x19, x20, [sp, #0]
	stp	x21, x22, [sp, #16]
	stp	x23, x24, [sp, #32]
	stp	x25, x26, [sp, #48]
	stp	x27, x28, [sp, #64]
	stp	x29, x30, [sp, #80]
	stp	d8, d9, [sp, #96]
	stp	d10, d11, [sp, #112]
	stp	d12, d13, [sp, #128]
	stp	d14, d15, [sp, #144]
	mrs	x9, fpcr
	str	x9, [sp, #160]
	mov	x10, sp
	str	x10, [x0]
	ldr	x10, [x1]
	mov	sp, x10
	ldr	x10, [sp, #160]
	cmp	x9, x10
	b.eq	1f
	msr	fpcr, x10
1:	ldp	x19, x20, [sp, #0]
	ldp	x21, x22, [sp, #16]
	ldp	x23, x24, [sp, #32]
	ldp	x25, x26, [sp, #48]
	ldp	x27, x28, [sp, #64]
	ldp	x29, x30, [sp, #80]
	ldp	d8, d9, [sp, #96]
	ldp	d10, d11, [sp, #112]
	ldp	d12, d13, [sp, #128]
	ldp	d14, d15, [sp, #144]
	add	sp, sp, #176
	mov	x0, x2
	br	x30
	.cfi_endproc
	.size	ma_ctx_switch, .-ma_ctx_switch

/* New contexts start here: entry in x19, its argument in x20, the switch's arg in x0. */
	.globl	ma_ctx_trampoline
	.hidden	ma_ctx_trampoline
	.type	ma_ctx_trampoline, %function
	.p2align 4
ma_ctx_trampoline:
	.cfi_startproc
	.cfi_undefined x30
	mov	x29, #0
	mov	x1, x20
	blr	x19
	brk	#0
	.cfi_endproc
	.size	ma_ctx_trampoline, .-ma_ctx_trampoline

	.section .note.GNU-stack,"",%progbits
