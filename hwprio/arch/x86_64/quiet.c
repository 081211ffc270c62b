/*
 * The quiet wait on x86-64: TPAUSE where the processor has it, PAUSE otherwise.
 *
 * TPAUSE (WAITPKG: CPUID.(EAX=7,ECX=0):ECX bit 5) waits in an optimized state until the
 * TSC reaches a deadline; it runs at any privilege level with nothing for the kernel to
 * enable, and a hypervisor that keeps it from its guest hides the bit. Of its two states
 * Intel's SDM says that C0.2 "improves performance of the other SMT thread(s) on the same
 * core" and wakes up more slowly than C0.1: the wait is for the siblings, so C0.2 is
 * asked. Linux may have turned C0.2 off (/sys/devices/system/cpu/umwait_control/
 * enable_c02: the processor then takes C0.1) and caps each TPAUSE (umwait_control/
 * max_time, 100000 TSC ticks by default); a TPAUSE that ends early only means one more.
 *
 * PAUSE is the SDM's spin-wait hint: it holds the thread's next instruction back (about
 * 140 cycles from Skylake on, about 10 before, by Intel's optimization manual) and the
 * sibling has the core's issue slots meanwhile.
 *
 * Both wait for a TSC deadline, and a program is not told the TSC's rate: the wait learns
 * it as it goes. Its first burst is MA_QUIET_FIRST_TICKS long; each next one lasts three
 * quarters of what is left, by the ticks per nanosecond seen since the start (the TSC is
 * invariant on every processor that has TPAUSE), so that a long wait is a few long
 * TPAUSEs rather than many short ones, each with its wake-up. Three quarters, because the
 * rate seen over the first short bursts may be some ten per cent off: a burst that ends
 * early costs a shorter one after it, one that ends late overshoots the wait.
 */
#include <cpuid.h>
#include <stdatomic.h>
#include <x86intrin.h>
#include "../ma_quiet_arch.h"

#define MA_QUIET_CPUID_WAITPKG (1u << 5) /* leaf 7, subleaf 0, ECX */
#define MA_QUIET_TPAUSE_C02 0u           /* TPAUSE's ECX: bit 0 clear asks for C0.2 */
/* About a quarter of a microsecond to one at the TSC rates of today (1 to 4 GHz). */
#define MA_QUIET_FIRST_TICKS 1024
/* At most a quarter of a millisecond to one per burst, should the rate learnt be off. */
#define MA_QUIET_MAX_TICKS (1u << 20)

static void ma_quiet_pause_until(uint64_t deadline)
{
	/* Four PAUSEs per TSC read: the read is some twenty micro-ops of work. */
	do {
		_mm_pause();
		_mm_pause();
		_mm_pause();
		_mm_pause();
	} while ((int64_t)(__rdtsc() - deadline) < 0);
}

__attribute__((target("waitpkg"))) static void ma_quiet_tpause_until(uint64_t deadline)
{
	_tpause(MA_QUIET_TPAUSE_C02, deadline);
}

/* -1: not looked at yet; else whether the processor has TPAUSE. Every thread that finds
 * -1 asks CPUID and stores the same answer. */
static _Atomic int ma_quiet_has_tpause = -1;

static int ma_quiet_tpause_here(void)
{
	int has = atomic_load_explicit(&ma_quiet_has_tpause, memory_order_relaxed);
	if (has < 0) {
		unsigned a, b, c, d;
		has = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c & MA_QUIET_CPUID_WAITPKG);
		atomic_store_explicit(&ma_quiet_has_tpause, has, memory_order_relaxed);
	}
	return has;
}

uint64_t ma_quiet_arch_wait(uint64_t ns, enum ma_quiet_mech *used)
{
	int tpause = ma_quiet_tpause_here();
	void (*until)(uint64_t) = tpause ? ma_quiet_tpause_until : ma_quiet_pause_until;
	*used = tpause ? MA_QUIET_TPAUSE : MA_QUIET_PAUSE;
	uint64_t start = ma_quiet_now(), tsc0 = __rdtsc(), t = start, ticks = MA_QUIET_FIRST_TICKS;
	while (t - start < ns) {
		until(__rdtsc() + ticks);
		t = ma_quiet_now();
		uint64_t done = t - start;
		if (done && done < ns) {
			double next = (double)(__rdtsc() - tsc0) / (double)done * (double)(ns - done) * 0.75;
			ticks = next < 1 ? 1 : next > MA_QUIET_MAX_TICKS ? MA_QUIET_MAX_TICKS : (uint64_t)next;
		}
	}
	return t - start;
}
