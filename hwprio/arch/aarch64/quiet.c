/*
 * The quiet wait on AArch64: WFE where Linux runs the timer's event stream, YIELD then
 * ISB otherwise and for the last period of a wait.
 *
 * YIELD is the architecture's hint that the thread only spins and that a multithreaded
 * core may give its resources to its other threads: what smt-quiet asks, on the SMT cores
 * that act on it. The many Arm cores without SMT run it as a NOP, as Rust, Go and the JDK
 * found; ISB, which lets no instruction after it be fetched until it completes, holds the
 * thread back for tens of cycles on every core (Rust's spin-loop hint is an ISB for that
 * reason), so each YIELD is followed by one.
 *
 * WFE stops the hardware thread in the processor until an event. With the event stream
 * (HWCAP_EVTSTRM) Linux's architected timer sends one every 100 us or so: a power of two
 * of counter ticks near 100 us, so at most MA_QUIET_EVT_PERIOD_NS. Linux's own __delay
 * (arch/arm64/lib/delay.c) runs WFE while a whole period is left and spins for the rest,
 * as this does. WFE at EL0 does not trap to Linux (it sets SCTLR_EL1.nTWE); under KVM it
 * may trap to the hypervisor, which then runs something else until the event, with no
 * system call of this program either way. Without the event stream a WFE could last until
 * the next interrupt, so it is not used.
 */
#include <stdatomic.h>
#include <sys/auxv.h>
#include "../ma_quiet_arch.h"

#define MA_QUIET_HWCAP_EVTSTRM (1ul << 2) /* Linux's HWCAP_EVTSTRM, in AT_HWCAP */
#define MA_QUIET_EVT_PERIOD_NS 150000
#define MA_QUIET_SPINS 16                 /* YIELD+ISB pairs per burst */

static void ma_quiet_spin_burst(uint64_t left_ns)
{
	(void)left_ns;
	for (int i = 0; i < MA_QUIET_SPINS; i++)
		__asm__ volatile("yield\n\tisb" ::: "memory");
}

static void ma_quiet_wfe_burst(uint64_t left_ns)
{
	/* An event comes within a period: only a wait that has more left may sleep for it. */
	if (left_ns > MA_QUIET_EVT_PERIOD_NS)
		__asm__ volatile("wfe" ::: "memory");
	else
		ma_quiet_spin_burst(left_ns);
}

/* -1: not looked at yet; else whether the event stream runs. Every thread that finds -1
 * asks getauxval and stores the same answer. */
static _Atomic int ma_quiet_evtstrm = -1;

uint64_t ma_quiet_arch_wait(uint64_t ns, enum ma_quiet_mech *used)
{
	int evtstrm = atomic_load_explicit(&ma_quiet_evtstrm, memory_order_relaxed);
	if (evtstrm < 0) {
		evtstrm = (getauxval(AT_HWCAP) & MA_QUIET_HWCAP_EVTSTRM) != 0;
		atomic_store_explicit(&ma_quiet_evtstrm, evtstrm, memory_order_relaxed);
	}
	*used = evtstrm ? MA_QUIET_WFE : MA_QUIET_YIELD_ISB;
	return ma_quiet_loop(ns, evtstrm ? ma_quiet_wfe_burst : ma_quiet_spin_burst);
}
