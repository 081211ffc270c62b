/*
 * Blocking sections: a thread about to block in the kernel gives its VP to a spare
 * carrier (carrier.c) and keeps its kernel thread for the call; on leaving, it queues
 * itself to run on a VP again and its kernel thread becomes a spare. The C library calls
 * wrapped in sections are in io.c.
 */
#include "ma_sync.h"
#include "ma_hooks.h"

__thread struct marcel_task *ma_tls_section_task __attribute__((tls_model("initial-exec")));

int marcel_enter_blocking_section(void)
{
	struct ma_worker *w = ma_worker_self();
	if (!w || ma_worker_current(w)->is_idle)
		return EPERM;
	struct marcel_task *self = ma_worker_current(w);
	/* The VP goes on without us: our private bubbles must not stay its. */
	ma_private_publish_pending(w);
	/* Leave the VP first: from the moment the spare has it, this kernel thread must not
	 * act as its worker. On failure, take it back: nothing happened. */
	ma_tls_worker = NULL;
	ma_tls_section_task = self;
	self->in_section = 1;
	int e = ma_carrier_give_vp(w);
	if (e) {
		self->in_section = 0;
		ma_tls_section_task = NULL;
		ma_tls_worker = w;
		return e;
	}
	return 0;
}

int marcel_leave_blocking_section(void)
{
	struct marcel_task *self = ma_tls_section_task;
	if (!self || ma_worker_self())
		return EPERM;
	ma_tls_section_task = NULL;
	self->in_section = 0;
	/* The carrier queues us once our registers are saved; a worker resumes us. */
	self->post = MA_POST_REQUEUE;
	ma_switch_out(self, ma_carrier_context(ma_carrier_self()));
	return 0;
}
