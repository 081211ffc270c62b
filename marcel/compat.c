/*
 * The rest of the everyday Marcel API: output, per-thread random numbers, suspend and
 * resume, scheduling parameters, clock, memory, number of processors, the ABI check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "ma_sync.h"

/* ---- output: stdio already locks each stream per call ---- */

int marcel_vfprintf(FILE *stream, const char *format, va_list ap)
{
	return vfprintf(stream, format, ap);
}

int marcel_printf(const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	int r = vfprintf(stdout, format, ap);
	va_end(ap);
	return r;
}

int marcel_fprintf(FILE *stream, const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	int r = vfprintf(stream, format, ap);
	va_end(ap);
	return r;
}

int marcel_snprintf(char *buf, size_t size, const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	int r = vsnprintf(buf, size, format, ap);
	va_end(ap);
	return r;
}

int marcel_puts(const char *s)
{
	return puts(s);
}

int marcel_fflush(FILE *stream)
{
	return fflush(stream);
}

/* ---- random numbers: splitmix64, one state per thread ---- */

long marcel_random(void)
{
	static _Atomic unsigned long long foreign_state = 0x853c49e6748fea9bull;
	struct marcel_task *t = marcel_self();
	unsigned long long z;
	if (t) {
		if (ma_unlikely(!t->rand_state))
			t->rand_state = (unsigned long long)(uintptr_t)t * 0x9e3779b97f4a7c15ull ^ ma_clock_ns();
		z = (t->rand_state += 0x9e3779b97f4a7c15ull);
	} else {
		z = atomic_fetch_add(&foreign_state, 0x9e3779b97f4a7c15ull) + 0x9e3779b97f4a7c15ull;
	}
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (long)(z % ((unsigned long long)RAND_MAX + 1));
}

/* ---- suspend / resume ---- */

static int ma_task_alive(marcel_t t)
{
	return ma_task_valid(t) && !(atomic_load(&t->link) & MA_LINK_DEAD);
}

int marcel_suspend(marcel_t t)
{
	if (!ma_task_alive(t))
		return ESRCH;
	struct marcel_task *self = marcel_self();
	if (!self)
		return EPERM;
	atomic_store(&t->req.suspend_req, 1);
	if (t == self) {
		/* Blocks until marcel_resume clears the request (it wakes this address). */
		while (atomic_load(&t->req.suspend_req))
			ma_fwait_u32(&t->req.suspend_req, 1, MA_NO_DEADLINE);
		return 0;
	}
	/* Others stop when a worker next picks them from a queue (runqueue.c), or at their
	 * next yield if they are running. */
	return 0;
}

int marcel_resume(marcel_t t)
{
	if (!ma_task_alive(t))
		return ESRCH;
	if (!atomic_exchange(&t->req.suspend_req, 0))
		return 0;
	ma_fwake(&t->req.suspend_req, ~0u);
	if (atomic_exchange(&t->parked, 0)) {
		atomic_store(&t->state, MA_TASK_READY);
		ma_entity_enqueue(&t->e);
	}
	return 0;
}

/* ---- scheduling parameters ---- */

int marcel_sched_setparam(marcel_t t, const struct marcel_sched_param *param)
{
	if (!param || param->sched_priority < 0 || param->sched_priority >= MA_MAX_PRIO)
		return EINVAL;
	if (!ma_task_alive(t))
		return ESRCH;
	/* Read when the thread is next queued; a queued one keeps its place until then. */
	atomic_store_explicit(&t->e.prio, param->sched_priority, memory_order_relaxed);
	return 0;
}

int marcel_sched_getparam(marcel_t t, struct marcel_sched_param *param)
{
	if (!param)
		return EINVAL;
	if (!ma_task_alive(t))
		return ESRCH;
	param->sched_priority = atomic_load_explicit(&t->e.prio, memory_order_relaxed);
	return 0;
}

/* ---- clock, memory, processors ---- */

/* marcel_clock's origin. Taken when the library is loaded rather than at marcel_init, so
 * that the clock also runs before it and never goes back across marcel_end/marcel_init. */
static uint64_t ma_clock_origin_ns;

__attribute__((constructor)) static void ma_clock_origin(void)
{
	ma_clock_origin_ns = ma_clock_ns();
}

unsigned long marcel_clock(void)
{
	return (unsigned long)((ma_clock_ns() - ma_clock_origin_ns) / 1000000u);
}

/* The C library's allocator is thread-safe and any thread may free what another
 * allocated, which is all Marcel's promised. */
void *marcel_malloc(size_t size)
{
	return malloc(size);
}

void *marcel_calloc(size_t nmemb, size_t size)
{
	return calloc(nmemb, size);
}

void *marcel_realloc(void *ptr, size_t size)
{
	return realloc(ptr, size);
}

void marcel_free(void *ptr)
{
	free(ptr);
}

unsigned marcel_get_nbprocessors(void)
{
	struct marcel_topo_item machine;
	if (ma_rt.running && marcel_topo_get_item(0, &machine) == 0 && machine.nb_pus)
		return machine.nb_pus;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

/* ---- ABI ---- */

int marcel_ensure_abi_compatibility(unsigned long header_hash)
{
	if (header_hash == MARCEL_HEADER_HASH)
		return 0;
	fprintf(stderr, "marcel: the program was compiled against other marcel headers (hash %#lx) "
			"than this library (hash %#lx): rebuild it\n", header_hash, (unsigned long)MARCEL_HEADER_HASH);
	return EINVAL;
}
