/*
 * MARCEL_DEBUG's check of thread-local storage left behind. `__thread` variables belong
 * to kernel threads: a marcel thread that leaves data in them and resumes on another
 * kernel thread (after a yield, a block, a blocking section, a preemption) sees that
 * kernel thread's copy. This finds the common case and says which thread and module.
 *
 * How. Every context that resumes on a kernel thread hashes the watched TLS blocks of
 * that kernel thread (ma_tls_check_switch). A hash that differs from the one taken at
 * the previous resumption there means the context that ran in between -- one marcel
 * thread, the only one running there meanwhile -- left them changed when it stopped:
 * it is charged with those modules and that kernel thread. Changed and changed back
 * within one run is not charged: nothing was left behind. When a charged thread resumes
 * on another kernel thread, it is reported, once per module.
 *
 * What is watched: the modules with static TLS (the program and the libraries loaded
 * with it, and those loaded later with initial-exec TLS), except the C runtime, the
 * dynamic loader, libgcc_s, the sanitizer runtimes and libmarcel itself, whose
 * per-kernel-thread state (errno, locale, malloc's caches, marcel's own) changes at
 * every call and is kernel-thread state by design. A static TLS block sits at the same
 * distance from the thread pointer in every kernel thread, so its address anywhere is
 * that of one of marcel's own initial-exec variables there plus a constant. The modules
 * are found by a short-lived kernel thread: dynamic TLS (dlopen's general-dynamic
 * model) is allocated at first use in each thread, so a fresh thread has the static
 * blocks only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include "ma_tls_check.h"

/* Modules watched at most (the bits of tls_left); the others are not. */
#define MA_TLS_MAX_MODULES 32
/* Threads reported per module; a pool of threads sharing one variable says it once. */
#define MA_TLS_WARN_MAX 8

struct ma_tls_module {
	ptrdiff_t offset;                 /* of its block from ma_tls_worker's address */
	size_t size;
	char *name;
	atomic_uint reported;             /* threads reported so far */
};

static struct {
	unsigned n;
	unsigned skipped;                 /* modules past MA_TLS_MAX_MODULES */
	int program_has_marcel;           /* libmarcel linked into the program */
	struct ma_tls_module m[MA_TLS_MAX_MODULES];
	atomic_ulong kts;                 /* kernel threads seen: their serial numbers */
} ma_tls;


/* What a kernel thread keeps: the hash of each watched block at the last resumption. */
struct ma_tls_kt {
	unsigned gen;                     /* ma_runtime_gen it was taken in */
	unsigned long serial;             /* names this kernel thread in tls_kt; never 0 */
	uint64_t hash[MA_TLS_MAX_MODULES];
};

static __thread struct ma_tls_kt *ma_tls_kt __attribute__((tls_model("initial-exec")));

/* ---- finding the modules ---- */

static int ma_tls_name_is(const char *path, const char *prefix)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return !strncmp(base, prefix, strlen(prefix));
}

/* The C runtime, the dynamic loader and the sanitizer runtimes. */
static int ma_tls_runtime_module(const char *name)
{
	static const char *const runtime[] = {
		"libc.so", "libc-", "ld-linux", "ld64.so", "ld.so", "libpthread", "libdl", "librt",
		"libm.so", "libm-", "libgcc_s", "libasan", "libtsan", "libubsan", "liblsan",
		"libhwasan", "libclang_rt.",
	};
	for (size_t i = 0; i < sizeof(runtime) / sizeof(*runtime); i++)
		if (ma_tls_name_is(name, runtime[i]))
			return 1;
	return 0;
}

static int ma_tls_scan_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *anchor = arg;
	if (size < offsetof(struct dl_phdr_info, dlpi_tls_data) + sizeof(info->dlpi_tls_data) ||
	    !info->dlpi_tls_modid || !info->dlpi_tls_data)
		return 0;
	size_t memsz = 0;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_TLS)
			memsz = info->dlpi_phdr[i].p_memsz;
	const char *block = info->dlpi_tls_data;
	const char *name = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : program_invocation_name;
	/* libmarcel's own block holds the anchor (the program's, if it was linked in). */
	if (memsz && anchor >= block && anchor < block + memsz) {
		ma_tls.program_has_marcel = name == program_invocation_name;
		return 0;
	}
	if (!memsz || ma_tls_runtime_module(name))
		return 0;
	if (ma_tls.n == MA_TLS_MAX_MODULES) {
		ma_tls.skipped++;
		return 0;
	}
	char *copy = strdup(name);
	if (!copy)
		return 0;
	struct ma_tls_module *m = &ma_tls.m[ma_tls.n++];
	m->offset = block - anchor;
	m->size = memsz;
	m->name = copy;
	atomic_init(&m->reported, 0);
	return 0;
}

static void *ma_tls_scan(void *arg)
{
	(void)arg;
	dl_iterate_phdr(ma_tls_scan_module, (void *)&ma_tls_worker);
	return NULL;
}

void ma_tls_check_start(void)
{
	ma_tls.n = ma_tls.skipped = 0;
	ma_tls.program_has_marcel = 0;
	pthread_t th;
	int e = pthread_create(&th, NULL, ma_tls_scan, NULL);
	if (e) {
		fprintf(stderr, "marcel: warning: MARCEL_DEBUG: thread-local storage is not watched: "
				"no kernel thread to find the modules: %s\n", strerror(e));
		return;
	}
	pthread_join(th, NULL);
	if (ma_tls.program_has_marcel)
		fprintf(stderr, "marcel: warning: MARCEL_DEBUG: libmarcel is linked statically into the "
				"program, whose own __thread variables are then not watched\n");
	if (ma_tls.skipped)
		fprintf(stderr, "marcel: warning: MARCEL_DEBUG: the thread-local storage of %u modules "
				"past the first %u is not watched\n", ma_tls.skipped, MA_TLS_MAX_MODULES);
	/* Nothing to watch (the common case of a program without `__thread`): switches
	 * stay as fast as without MARCEL_DEBUG. */
	atomic_store_explicit(&ma_switch_watch.tls, ma_tls.n > 0, memory_order_relaxed);
}

static void ma_tls_kt_free(void)
{
	free(ma_tls_kt);
	ma_tls_kt = NULL;
}

void ma_tls_check_stop(void)
{
	atomic_store_explicit(&ma_switch_watch.tls, 0, memory_order_relaxed);
	for (unsigned i = 0; i < ma_tls.n; i++)
		free(ma_tls.m[i].name);
	ma_tls.n = 0;
	ma_tls_kt_free();
}

void ma_tls_check_thread_end(void)
{
	ma_tls_kt_free();
}

/* ---- at every switch ---- */

/* Not a hash for adversaries: any change of a single word always changes it (every
 * step is a bijection of the state), and it reads each byte once. Uninstrumented: the
 * program's own races on its variables are the program's to report, not this read's. */
__attribute__((no_sanitize("address", "thread")))
static uint64_t ma_tls_hash(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i = 0;
	for (; i + sizeof(uint64_t) <= n; i += sizeof(uint64_t)) {
		uint64_t w;
		memcpy(&w, p + i, sizeof(w));
		h = (h ^ w) * 0x100000001b3ull;
	}
	for (; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* Bits of the modules whose block changed since the last call on this kernel thread. */
static uint32_t ma_tls_changes(struct ma_tls_kt *k, int first)
{
	/* Read here, in a function that does not switch: the address is this kernel
	 * thread's. */
	const unsigned char *anchor = (const unsigned char *)&ma_tls_worker;
	uint32_t changed = 0;
	for (unsigned i = 0; i < ma_tls.n; i++) {
		uint64_t h = ma_tls_hash(anchor + ma_tls.m[i].offset, ma_tls.m[i].size);
		if (!first && h != k->hash[i])
			changed |= 1u << i;
		k->hash[i] = h;
	}
	return changed;
}

/* This kernel thread's record, made at its first resumption of this runtime. */
static struct ma_tls_kt *ma_tls_kt_get(int *first)
{
	struct ma_tls_kt *k = ma_tls_kt;
	*first = 0;
	if (k && k->gen == ma_runtime_gen)
		return k;
	if (!k && !(k = ma_tls_kt = malloc(sizeof(*k))))
		return NULL;
	k->gen = ma_runtime_gen;
	k->serial = atomic_fetch_add_explicit(&ma_tls.kts, 1, memory_order_relaxed) + 1;
	*first = 1;
	return k;
}

static size_t ma_tls_utoa(char *buf, uint64_t v)
{
	char tmp[24];
	size_t n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while (v /= 10);
	for (size_t i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	return n;
}

/* One line, in one write and with little stack: a preempted thread resumes here on
 * what is left of its stack below the interrupted frame (preempt.c). */
static void ma_tls_say(const struct marcel_task *t, const char *module, int last)
{
	char id[24];
	size_t idlen = ma_tls_utoa(id, t->id);
#define MA_IOV(s, n) { (void *)(s), (n) }
#define MA_IOS(s) MA_IOV(s, strlen(s))
	struct iovec v[] = {
		MA_IOS("marcel: warning: thread "), MA_IOV(id, idlen), MA_IOS(" '"), MA_IOS(t->name),
		MA_IOS("' left data in __thread variables of "), MA_IOS(module),
		MA_IOS(" and now runs on another kernel thread, which has its own copy of them "
		       "(thread-local storage belongs to kernel threads, not to marcel threads): keep "
		       "such data in keys (pthread_key_create, marcel_key_create) or pass it to the "
		       "thread; see the pitfalls of doc/porting.md\n"),
		MA_IOS(last ? "marcel: warning: further threads leaving __thread variables of " : ""),
		MA_IOS(last ? module : ""), MA_IOS(last ? " are not reported\n" : ""),
	};
#undef MA_IOS
#undef MA_IOV
	ssize_t r = writev(STDERR_FILENO, v, sizeof(v) / sizeof(*v));
	(void)r;
}

static void ma_tls_report(struct marcel_task *t, uint32_t fresh)
{
	t->tls_warned |= fresh;
	for (unsigned i = 0; i < ma_tls.n; i++) {
		if (!(fresh & (1u << i)))
			continue;
		unsigned n = atomic_fetch_add_explicit(&ma_tls.m[i].reported, 1, memory_order_relaxed);
		if (n < MA_TLS_WARN_MAX)
			ma_tls_say(t, ma_tls.m[i].name, n == MA_TLS_WARN_MAX - 1);
	}
}

void ma_tls_check_switch_slow(struct marcel_task *self, struct marcel_task *from)
{
	int first;
	struct ma_tls_kt *k = ma_tls_kt_get(&first);
	if (!k)
		return;
	uint32_t changed = ma_tls_changes(k, first);
	/* An ending thread leaves nothing it could come back to. */
	if (changed && from && !from->is_idle && from->post != MA_POST_EXIT) {
		if (from->tls_owner != from->id) {
			from->tls_owner = from->id;
			from->tls_left = from->tls_warned = 0;
		}
		from->tls_left |= changed;
		from->tls_kt = k->serial;
	}
	if (self && !self->is_idle && self->tls_owner == self->id && self->tls_left && self->tls_kt != k->serial) {
		uint32_t fresh = self->tls_left & ~self->tls_warned;
		if (fresh)
			ma_tls_report(self, fresh);
	}
}
