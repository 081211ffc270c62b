/*
 * The thread list for people: marcel_print_threads(), and what a wait that may never end
 * says about the threads it waits for. What keeps a thread from starting is usually its
 * bubble: the layer above adds that to each line (the describe hook).
 */
#include <errno.h>
#include <stdio.h>
#include "ma_hooks.h"

static const char *ma_state_name(int st)
{
	switch (st) {
	case MA_TASK_BORN:
		return "not started";
	case MA_TASK_READY:
		return "ready";
	case MA_TASK_RUNNING:
		return "running";
	case MA_TASK_BLOCKING:
	case MA_TASK_BLOCKED:
		return "blocked";
	case MA_TASK_DEAD:
		return "ended, not joined";
	case MA_TASK_SUSPENDED:
		return "suspended";
	default:
		return "?";
	}
}

void ma_print_thread(FILE *out, struct marcel_task *t)
{
	int st = atomic_load_explicit(&t->state, memory_order_relaxed);
	fprintf(out, "  thread %llu '%s': %s", (unsigned long long)t->id, t->name, ma_state_name(st));
	if (st == MA_TASK_RUNNING)
		fprintf(out, " (VP%d)", atomic_load_explicit(&t->last_vp, memory_order_relaxed));
	if (atomic_load_explicit(&t->link, memory_order_relaxed) & MA_LINK_DETACHED)
		fprintf(out, ", detached");
	ma_hook_describe(out, t);
	fputc('\n', out);
}

static void ma_print_one(struct marcel_task *t, void *arg)
{
	ma_print_thread(arg, t);
}

int marcel_print_threads(FILE *out)
{
	if (!out)
		return EINVAL;
	if (!ma_rt.running)
		return EPERM;
	fprintf(out, "marcel: threads (%u VPs):\n", ma_rt.nb_vps);
	ma_threads_walk(ma_print_one, out);
	fflush(out);
	return 0;
}

struct ma_progress {
	unsigned live, moving;
};

static void ma_count_moving(struct marcel_task *t, void *arg)
{
	struct ma_progress *p = arg;
	int st = atomic_load_explicit(&t->state, memory_order_relaxed);
	if (t->is_main || st == MA_TASK_DEAD)
		return;
	p->live++;
	p->moving += st == MA_TASK_READY || st == MA_TASK_RUNNING;
}

static void ma_print_waited(struct marcel_task *t, void *arg)
{
	int st = atomic_load_explicit(&t->state, memory_order_relaxed);
	if (!t->is_main && st != MA_TASK_DEAD)
		ma_print_thread(arg, t);
}

int ma_end_report_stuck(unsigned seconds, int always)
{
	struct ma_progress p = { 0, 0 };
	ma_threads_walk(ma_count_moving, &p);
	/* Threads that run or are queued will end in their own time. */
	if (!p.live || (p.moving && !always))
		return 0;
	fprintf(stderr,
		"marcel: marcel_end has waited %u s for %u thread(s), %u of them ready or running; "
		"it returns once they have all ended:\n",
		seconds, p.live, p.moving);
	ma_threads_walk(ma_print_waited, stderr);
	return 1;
}
