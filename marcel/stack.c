/*
 * Thread stacks: mmap'd with a guard page below, pooled so the mmap+mprotect (about 5 us)
 * is paid once, and bound to a thread only when it first runs, so threads that are
 * created but not yet started cost a descriptor and no address-space mapping.
 *
 * A small header sits at the top of every stack mapping and stays there while the stack
 * is in use; the thread descriptor lives elsewhere, so an overflow hits the guard page
 * before it can reach any runtime data.
 */
#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "ma_sched.h"
#include "ma_sanitizer.h"

#define MA_STACK_POOL_MAX 64     /* per worker */
/* Shared pool: the first MA_STACK_SHARED_WARM stacks keep their memory; up to
 * MA_STACK_SHARED_MAX more keep only their mapping (their pages are given back), so a
 * burst of threads does not pay mmap+mprotect+munmap per thread the next time. */
#define MA_STACK_SHARED_WARM 1024
#define MA_STACK_SHARED_MAX 65536
#define MA_ALTSTACK_SIZE (64 * 1024)

struct ma_stack {
	struct ma_stack *next;
	size_t size;                 /* usable size, header included */
	unsigned vg_id;
	int guarded;                 /* a guard page below; else part of a slab */
	char pad[32];
	/* Last word of the stack's area: the word just below the stack above it in a slab
	 * (see ma_stack_canary_ok). */
	uint64_t canary;
} __attribute__((aligned(64)));
_Static_assert(offsetof(struct ma_stack, canary) + sizeof(uint64_t) == sizeof(struct ma_stack),
	       "the canary must be the last word of a stack's area");

#define MA_SLAB_CANARY 0x6d617263656c2121ull
#define MA_SLAB_STACKS 64

/* Guarded stacks cost two mappings each (the guard splits the area), and the kernel caps
 * a process's mappings (vm.max_map_count, 65530 by default), which malloc and the
 * program need too. Past a budget of a quarter of that cap, stacks come from slabs: 64
 * stacks of a size back to back, above a guard page and a canary page (3 mappings). There an overflow
 * runs into the top of the stack below, whose header ends with a canary word; the
 * switch path checks it whenever a slab thread leaves its worker. That catches the
 * overflow after the fact, but reads only a page the stack below touches anyway (the
 * canary at a stack's own bottom would cost a page per thread). */
static atomic_long ma_guarded_stacks;
static _Atomic long ma_guarded_budget = -1;

struct ma_slab {
	struct ma_slab *next;
	void *map;
	size_t len;
};
static struct ma_slab *ma_slabs;       /* under ma_rt.pool_lock */

static long ma_stack_guard_budget(void)
{
	/* Read once per process; racing first readers compute the same value. */
	long budget = atomic_load_explicit(&ma_guarded_budget, memory_order_relaxed);
	if (budget < 0) {
		long max = 65530;
		FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
		if (f) {
			if (fscanf(f, "%ld", &max) != 1 || max < 1024)
				max = 65530;
			fclose(f);
		}
		budget = max / 4;
		atomic_store_explicit(&ma_guarded_budget, budget, memory_order_relaxed);
	}
	return budget;
}

void *ma_stack_map(size_t size, size_t *mapped)
{
	size_t len = size + ma_rt.page_size;
	void *map = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	if (map == MAP_FAILED)
		return NULL;
	if (mprotect(map, ma_rt.page_size, PROT_NONE)) {
		munmap(map, len);
		return NULL;
	}
	*mapped = len;
	/* The shadow of a fresh mapping may still hold the poison of stack frames of an
	 * earlier one at that address (a thread that ended deep in calls, a canceled one). */
	ma_asan_unpoison((char *)map + ma_rt.page_size, size);
	return (char *)map + ma_rt.page_size;
}

void ma_stack_unmap(void *base, size_t size)
{
	munmap((char *)base - ma_rt.page_size, size + ma_rt.page_size);
}

static struct ma_stack *ma_stack_header(void *base, size_t size)
{
	return (struct ma_stack *)((char *)base + size) - 1;
}

static void *ma_stack_base(struct ma_stack *s)
{
	return (char *)(s + 1) - s->size;
}

static void ma_stack_release_to_pool(struct ma_stack *s);

/* Gives a pooled stack's memory back to the system, all but the page of its header. */
static void ma_stack_cool(struct ma_stack *s)
{
	size_t keep = ((sizeof(*s) + ma_rt.page_size - 1) / ma_rt.page_size) * ma_rt.page_size;
	madvise(ma_stack_base(s), s->size - keep, MADV_DONTNEED);
}

static void ma_stack_destroy(struct ma_stack *s)
{
	if (s->guarded) {
		ma_valgrind_stack_deregister(s->vg_id);
		atomic_fetch_sub(&ma_guarded_stacks, 1);
		ma_stack_unmap(ma_stack_base(s), s->size);
		return;
	}
	/* Slab stacks stay mapped (unmapping one would split the slab): give their memory
	 * back and keep them in the shared pool. */
	ma_stack_cool(s);
	ma_stack_release_to_pool(s);
}

/* Maps a slab of stacks of `size` and returns one; the others go to the shared pool. */
static struct ma_stack *ma_slab_new(size_t size)
{
	struct ma_slab *slab = malloc(sizeof(*slab));
	if (!slab)
		return NULL;
	/* Below the stacks: a guard page (a runaway recursion ends there), then the page
	 * whose last word is the lowest stack's canary. */
	slab->len = 2 * ma_rt.page_size + (size_t)MA_SLAB_STACKS * size;
	slab->map = mmap(NULL, slab->len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	if (slab->map == MAP_FAILED) {
		free(slab);
		return NULL;
	}
	if (mprotect(slab->map, ma_rt.page_size, PROT_NONE)) {
		munmap(slab->map, slab->len);
		free(slab);
		return NULL;
	}
	char *first = (char *)slab->map + 2 * ma_rt.page_size;
	((uint64_t *)first)[-1] = MA_SLAB_CANARY;
	struct ma_stack *mine = NULL;
	ma_spin_lock(&ma_rt.pool_lock);
	slab->next = ma_slabs;
	ma_slabs = slab;
	for (unsigned i = 0; i < MA_SLAB_STACKS; i++) {
		char *base = first + (size_t)i * size;
		struct ma_stack *st = ma_stack_header(base, size);
		st->size = size;
		st->guarded = 0;
		st->canary = MA_SLAB_CANARY;
		st->vg_id = ma_valgrind_stack_register(base, base + size);
		if (!mine) {
			mine = st;
			continue;
		}
		st->next = ma_rt.stacks;
		ma_rt.stacks = st;
		ma_write_once(&ma_rt.nb_stacks, ma_rt.nb_stacks + 1);
	}
	ma_spin_unlock(&ma_rt.pool_lock);
	return mine;
}

static struct ma_stack *ma_stack_new(size_t size)
{
	if (atomic_fetch_add(&ma_guarded_stacks, 1) >= ma_stack_guard_budget()) {
		atomic_fetch_sub(&ma_guarded_stacks, 1);
		return ma_slab_new(size);
	}
	size_t mapped;
	void *base = ma_stack_map(size, &mapped);
	if (!base) {
		atomic_fetch_sub(&ma_guarded_stacks, 1);
		/* Out of mappings sooner than expected: a slab needs one for 64 stacks. */
		return errno == ENOMEM ? ma_slab_new(size) : NULL;
	}
	struct ma_stack *s = ma_stack_header(base, size);
	s->size = size;
	s->guarded = 1;
	s->canary = MA_SLAB_CANARY;
	s->vg_id = ma_valgrind_stack_register(base, (char *)base + size);
	return s;
}

static struct ma_stack *ma_stack_take_shared(size_t size)
{
	ma_spin_lock(&ma_rt.pool_lock);
	struct ma_stack **pp = &ma_rt.stacks, *s = NULL;
	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->size == size) {
			s = *pp;
			*pp = s->next;
			ma_write_once(&ma_rt.nb_stacks, ma_rt.nb_stacks - 1);
			break;
		}
	ma_spin_unlock(&ma_rt.pool_lock);
	return s;
}

int ma_stack_bind(struct ma_worker *w, struct marcel_task *t)
{
	struct ma_stack *s = NULL;
	if (w->stacks && w->stacks->size == t->stack_size) {
		s = w->stacks;
		w->stacks = s->next;
		w->nb_stacks--;
	} else {
		s = ma_stack_take_shared(t->stack_size);
		if (!s)
			s = ma_stack_new(t->stack_size);
		if (!s) {
			static atomic_int warned;
			if (!atomic_exchange(&warned, 1))
				fprintf(stderr,
					"marcel: cannot map a %zu-byte stack for thread '%s' (%s); it waits until "
					"memory is available\n",
					t->stack_size, t->name, strerror(errno));
			return ENOMEM;
		}
	}
	void *base = ma_stack_base(s);
	size_t usable = s->size - sizeof(*s);
	ma_asan_unpoison(base, usable);
	t->canary = !s->guarded;
	t->stack_base = base;
	t->asan_bottom = base;
	t->asan_size = usable;
	ma_tsan_fiber_create(t);
	ma_ctx_make(&t->ctx, base, usable, t->fpctl, ma_task_entry, t);
	return 0;
}

void ma_stack_release(struct ma_worker *w, struct marcel_task *t)
{
	if (!t->stack_base)
		return;
	struct ma_stack *s = ma_stack_header(t->stack_base, t->stack_size);
	t->stack_base = NULL;
	ma_tsan_fiber_destroy(t);
	if (ma_likely(w->nb_stacks < MA_STACK_POOL_MAX)) {
		s->next = w->stacks;
		w->stacks = s;
		w->nb_stacks++;
		return;
	}
	unsigned pooled = ma_read_once(&ma_rt.nb_stacks);
	if (pooled >= MA_STACK_SHARED_MAX) {
		ma_stack_destroy(s);
		return;
	}
	if (pooled >= MA_STACK_SHARED_WARM)
		ma_stack_cool(s);
	ma_stack_release_to_pool(s);
}

static void ma_stack_release_to_pool(struct ma_stack *s)
{
	ma_spin_lock(&ma_rt.pool_lock);
	s->next = ma_rt.stacks;
	ma_rt.stacks = s;
	ma_write_once(&ma_rt.nb_stacks, ma_rt.nb_stacks + 1);
	ma_spin_unlock(&ma_rt.pool_lock);
}

static void ma_stack_list_free(struct ma_stack *s)
{
	while (s) {
		struct ma_stack *n = s->next;
		if (s->guarded)
			ma_stack_destroy(s);
		else
			ma_valgrind_stack_deregister(s->vg_id);
		s = n;
	}
}

void ma_stack_pools_free(void)
{
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		ma_stack_list_free(ma_rt.workers[v].stacks);
		ma_rt.workers[v].stacks = NULL;
		ma_rt.workers[v].nb_stacks = 0;
	}
	ma_stack_list_free(ma_rt.stacks);
	ma_rt.stacks = NULL;
	ma_rt.nb_stacks = 0;
	/* Every stack is back in a pool now: the slabs go whole. */
	while (ma_slabs) {
		struct ma_slab *slab = ma_slabs;
		ma_slabs = slab->next;
		munmap(slab->map, slab->len);
		free(slab);
	}
}

/* ---- overflow detection ---- */

static struct sigaction ma_old_segv, ma_old_bus;
static stack_t ma_old_altstack;

static size_t ma_append(char *buf, size_t pos, size_t cap, const char *s)
{
	while (*s && pos + 1 < cap)
		buf[pos++] = *s++;
	return pos;
}

static size_t ma_append_num(char *buf, size_t pos, size_t cap, size_t v)
{
	char digits[24];
	int n = 0;
	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n && pos + 1 < cap)
		buf[pos++] = digits[--n];
	return pos;
}

int ma_stack_canary_ok(const struct marcel_task *t)
{
	return ((const uint64_t *)t->stack_base)[-1] == MA_SLAB_CANARY;
}

/* The overflow message, with async-signal-safe calls only; then abort. */
static __attribute__((noreturn)) void ma_overflow_report(const struct marcel_task *t)
{
	char msg[256];
	size_t n = ma_append(msg, 0, sizeof(msg), "marcel: stack overflow in thread '");
	n = ma_append(msg, n, sizeof(msg), t->name);
	n = ma_append(msg, n, sizeof(msg), "' (");
	n = ma_append_num(msg, n, sizeof(msg), t->stack_size);
	n = ma_append(msg, n, sizeof(msg), " bytes); raise MARCEL_STACK_SIZE or marcel_attr_setstacksize\n");
	ssize_t r = write(STDERR_FILENO, msg, n);
	(void)r;
	abort();
}

void ma_stack_canary_failed(struct marcel_task *t)
{
	ma_overflow_report(t);
}

static void ma_segv_handler(int sig, siginfo_t *si, void *uc)
{
	/* A plain TLS read is fine here: no switch can happen inside the handler. */
	struct ma_worker *w = ma_tls_worker;
	struct marcel_task *t = w ? ma_worker_current(w) : ma_tls_section_task;
	char *addr = si->si_addr;
	if (t && t->stack_base && addr < (char *)t->stack_base &&
	    addr >= (char *)t->stack_base - ma_rt.page_size)
		ma_overflow_report(t);
	/* A slab thread that ran through the stacks below it to the slab's guard page (every
	 * other page of the slab is accessible, so a fault in that range is the guard). */
	if (t && t->canary && t->stack_base && addr < (char *)t->stack_base &&
	    (size_t)((char *)t->stack_base - addr) <= (size_t)MA_SLAB_STACKS * t->stack_size + 2 * ma_rt.page_size)
		ma_overflow_report(t);
	/* Not ours: hand it to whoever handled it before us, or let it kill the process the
	 * usual way when the faulting instruction runs again. */
	struct sigaction *old = sig == SIGSEGV ? &ma_old_segv : &ma_old_bus;
	if ((old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
		old->sa_sigaction(sig, si, uc);
		return;
	}
	if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
		old->sa_handler(sig);
		return;
	}
	signal(sig, SIG_DFL);
}

int ma_overflow_handler_install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = ma_segv_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, &ma_old_segv) || sigaction(SIGBUS, &sa, &ma_old_bus))
		return errno;
	return 0;
}

void ma_overflow_handler_remove(void)
{
	sigaction(SIGSEGV, &ma_old_segv, NULL);
	sigaction(SIGBUS, &ma_old_bus, NULL);
}

int ma_altstack_setup(void **slot, int main_thread)
{
	void *p = mmap(NULL, MA_ALTSTACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return errno;
	stack_t ss = { .ss_sp = p, .ss_size = MA_ALTSTACK_SIZE, .ss_flags = 0 };
	if (sigaltstack(&ss, main_thread ? &ma_old_altstack : NULL)) {
		int e = errno;
		munmap(p, MA_ALTSTACK_SIZE);
		return e;
	}
	*slot = p;
	return 0;
}

void ma_altstack_teardown(void **slot, int main_thread)
{
	if (!*slot)
		return;
	if (main_thread) {
		/* VP 0 is the application's own thread: give it back its previous signal stack. */
		if (ma_old_altstack.ss_flags & SS_DISABLE) {
			stack_t off = { .ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE };
			sigaltstack(&off, NULL);
		} else
			sigaltstack(&ma_old_altstack, NULL);
	} else {
		stack_t off = { .ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE };
		sigaltstack(&off, NULL);
	}
	munmap(*slot, MA_ALTSTACK_SIZE);
	*slot = NULL;
}
