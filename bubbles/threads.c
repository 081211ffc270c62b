/*
 * What the bubble layer says about a thread in the core's thread list (marcel/report.c,
 * the describe hook): its bubble, and why a thread never started has not.
 */
#include <stdio.h>
#include "ma_bubble.h"
#include "ma_trace.h"

void ma_bubble_describe(FILE *out, struct marcel_task *t)
{
	int st = atomic_load_explicit(&t->state, memory_order_relaxed);
	/* For a diagnostic: the thread may move to another bubble meanwhile; a bubble never
	 * goes away under its members. */
	struct ma_bubble *b = ma_entity_parent(&t->e);
	int woken = 0;
	if (b) {
		ma_spin_lock(&b->hold.lock);
		woken = b->woken;
		ma_spin_unlock(&b->hold.lock);
	}
	if (st == MA_TASK_BORN) {
		if (!b || b == ma_root_bubble)
			fprintf(out, "; made with marcel_create_dontsched and in no bubble: insert it into "
				     "a woken bubble to start it");
		else if (!woken)
			fprintf(out, "; starts when its bubble %llu is woken (marcel_wake_up_bubble)",
				(unsigned long long)(b->uid & ~MA_TRACE_BUBBLE_TAG));
		else
			fprintf(out, "; its bubble %llu is woken but one above it is not",
				(unsigned long long)(b->uid & ~MA_TRACE_BUBBLE_TAG));
	} else if (b && b != ma_root_bubble && !b->implicit) {
		fprintf(out, ", in bubble %llu", (unsigned long long)(b->uid & ~MA_TRACE_BUBBLE_TAG));
	}
}
