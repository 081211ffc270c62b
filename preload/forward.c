/* What the interposer needs from the dynamic loader: the C library's own functions for
 * the runtime's calls, and the start of marcel before main. */
#include "ma_preload.h"
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Read by libmarcel's constructor (marcel/init.c, ma_auto_init): defined, it starts the
 * runtime before any other constructor of the program runs, as the marcel-pthread
 * pkg-config module does for rebuilt programs. */
MA_PRELOAD_API const int marcel_pthread_auto = 1;

unsigned long ma_pl_created;

/* The executable segments of the libraries whose pthread calls are the runtime's. */
#define MA_PL_MAX_RANGES 8
static struct {
	uintptr_t lo, hi;
} ma_pl_ranges[MA_PL_MAX_RANGES];
static unsigned ma_pl_nranges;
static int ma_pl_ranges_state; /* 0, 1 while one thread fills them, 2 when ready */

struct ma_pl_scan {
	uintptr_t anchor;
};

static int ma_pl_scan_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	uintptr_t a = ((struct ma_pl_scan *)arg)->anchor;
	int found = 0;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && a >= lo && a < lo + ph->p_memsz)
			found = 1;
	}
	if (!found)
		return 0;
	for (unsigned i = 0; i < info->dlpi_phnum && ma_pl_nranges < MA_PL_MAX_RANGES; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			ma_pl_ranges[ma_pl_nranges].lo = info->dlpi_addr + ph->p_vaddr;
			ma_pl_ranges[ma_pl_nranges].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
			ma_pl_nranges++;
		}
	}
	return 1;
}

static void ma_pl_ranges_fill(void)
{
	/* One function of each library the runtime is made of; those not loaded are skipped. */
	static const char *const anchors[] = { "marcel_init", "hwloc_topology_init", "ffi_call" };
	for (unsigned i = 0; i < sizeof(anchors) / sizeof(anchors[0]); i++) {
		void *p = dlsym(RTLD_DEFAULT, anchors[i]);
		if (!p)
			continue;
		struct ma_pl_scan s = { (uintptr_t)p };
		dl_iterate_phdr(ma_pl_scan_cb, &s);
	}
}

int ma_pl_from_runtime(const void *ret)
{
	if (ma_pl_unlikely(__atomic_load_n(&ma_pl_ranges_state, __ATOMIC_ACQUIRE) != 2)) {
		int s = 0;
		if (__atomic_compare_exchange_n(&ma_pl_ranges_state, &s, 1, 0, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED)) {
			ma_pl_ranges_fill();
			__atomic_store_n(&ma_pl_ranges_state, 2, __ATOMIC_RELEASE);
		} else {
			/* Only during the first calls, which come from libmarcel's constructor. */
			while (__atomic_load_n(&ma_pl_ranges_state, __ATOMIC_ACQUIRE) != 2)
				syscall(SYS_sched_yield);
		}
	}
	uintptr_t a = (uintptr_t)ret;
	for (unsigned i = 0; i < ma_pl_nranges; i++)
		if (a >= ma_pl_ranges[i].lo && a < ma_pl_ranges[i].hi)
			return 1;
	return 0;
}

void *ma_pl_real(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);
	if (!f) {
		fprintf(stderr, "marcel-preload: %s: not found after libmarcel-preload.so (%s)\n", name,
			dlerror());
		abort();
	}
	return f;
}

/* One message per function: a table small enough for every unsupported call. */
#define MA_PL_MAX_WARNED 64
static const char *ma_pl_warned[MA_PL_MAX_WARNED];

int ma_pl_unsupported(const char *fn, const char *why, int err)
{
	for (unsigned i = 0; i < MA_PL_MAX_WARNED; i++) {
		const char *w = __atomic_load_n(&ma_pl_warned[i], __ATOMIC_ACQUIRE);
		if (w == fn)
			return err;
		if (!w) {
			const char *none = NULL;
			if (!__atomic_compare_exchange_n(&ma_pl_warned[i], &none, fn, 0, __ATOMIC_ACQ_REL,
							 __ATOMIC_ACQUIRE)) {
				if (none == fn)
					return err;
				continue;
			}
			break;
		}
	}
	fprintf(stderr, "marcel-preload: %s on marcel threads: %s; returning %s\n", fn, why, strerror(err));
	return err;
}

int ma_pl_pshared(int pshared, const char *fn)
{
	if (pshared == PTHREAD_PROCESS_SHARED)
		return ma_pl_unsupported(fn, "marcel objects are private to the process", ENOTSUP);
	return pshared == PTHREAD_PROCESS_PRIVATE ? 0 : EINVAL;
}

int ma_pl_deadline_on(clockid_t from, const struct timespec *abstime, clockid_t to, struct timespec *out)
{
	if (!abstime || abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L)
		return EINVAL;
	if (from == to) {
		*out = *abstime;
		return 0;
	}
	struct timespec now_from, now_to;
	if (clock_gettime(from, &now_from) || clock_gettime(to, &now_to))
		return EINVAL;
	long long ns = (long long)(abstime->tv_sec - now_from.tv_sec) * 1000000000LL +
		       (abstime->tv_nsec - now_from.tv_nsec);
	if (ns < 0)
		ns = 0;
	ns += now_to.tv_nsec;
	out->tv_sec = now_to.tv_sec + (time_t)(ns / 1000000000LL);
	out->tv_nsec = (long)(ns % 1000000000LL);
	return 0;
}

/* libgomp's threads become marcel threads, but its barriers and locks wait with futex
 * system calls of its own, each blocking a VP: with more OpenMP threads than VPs the
 * program hangs. Said before it happens. */
__attribute__((constructor)) static void ma_pl_check_openmp(void)
{
	if (!dlsym(RTLD_DEFAULT, "GOMP_parallel"))
		return;
	const char *n = getenv("OMP_NUM_THREADS");
	unsigned vps = marcel_nbvps();
	if (n && strtoul(n, NULL, 10) <= vps && !strchr(n, ','))
		return;
	fprintf(stderr, "marcel-preload: warning: this program uses OpenMP (libgomp), whose waits block "
			"marcel's VPs: with more OpenMP threads than VPs it hangs; set OMP_NUM_THREADS to at "
			"most %u (MARCEL_NVP) and no nested parallelism, or run it without libmarcel-preload.so\n",
		vps);
}

/* MARCEL_PRELOAD_REPORT=1: one line at exit, so that a test (or a curious user) sees that
 * the program's threads were marcel's. */
__attribute__((destructor)) static void ma_pl_report(void)
{
	const char *r = getenv("MARCEL_PRELOAD_REPORT");
	if (r && *r && strcmp(r, "0"))
		fprintf(stderr, "marcel-preload: %lu threads created as marcel threads on %u VPs\n",
			__atomic_load_n(&ma_pl_created, __ATOMIC_RELAXED), marcel_nbvps());
}
