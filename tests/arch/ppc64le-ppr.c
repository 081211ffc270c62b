/* Standalone check of hwprio's power-ppr on ppc64le under qemu-user (tests/run-all runs it
 * when powerpc64le-linux-gnu-gcc and qemu-ppc64le exist), built with
 * hwprio/arch/ppc64le/ppr.c and hwprio/power_ppr.c: each priority nop sets its PRI and
 * keeps the PPR's other bits, very low is reported as refused (qemu-user ignores
 * `or 31,31,31`), the level mapping covers the whole scale, and the backend's probe,
 * apply and apply_self read back what they set. Not the calibration: qemu does not
 * model a core's sharing.
 *
 * What qemu-user 7.2 does differently from Linux on POWER: the PPR starts at 0 (PRI 0,
 * not 3), system calls leave it alone, any value may be written with mtspr (this test
 * writes other bits that way, to see that the nops keep them), and SPR 898 traps. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ma_hwprio.h"
#include "arch/ma_ppr_arch.h"

extern const struct ma_hw_backend ma_hw_power_ppr;

/* hwprio/registry.c's, which this program does not link (it would bring every backend). */
int ma_hw_fail(struct ma_hw_why *why, int e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why->s, sizeof(why->s), fmt, ap);
	va_end(ap);
	return e;
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("ppc64le-ppr: ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
	exit(1);
}

/* Bits of the PPR outside PRI, written once: every step must leave them as they are. */
static const uint64_t other = UINT64_C(0x0123456789abcdef) & ~MA_PPR_PRI_MASK;

static void write_ppr(uint64_t v)
{
	__asm__ volatile("mtspr 896, %0" ::"r"(v) : "memory");
}

/* PRI reads pri and the other bits are still `other`. */
static void expect_pri(int pri, const char *after)
{
	uint64_t v = ma_ppr_arch_read();
	if (ma_ppr_pri(v) != pri)
		fail("after %s: PRI %d read, %d expected (PPR %#018llx)", after, ma_ppr_pri(v), pri, (unsigned long long)v);
	if ((v & ~MA_PPR_PRI_MASK) != other)
		fail("after %s: the PPR's other bits changed: %#018llx, %#018llx expected", after,
		     (unsigned long long)(v & ~MA_PPR_PRI_MASK), (unsigned long long)other);
}

static void check_hints(void)
{
	const char *missing = ma_ppr_arch_missing();
	if (missing)
		fail("ma_ppr_arch_missing() says '%s' on ppc64le", missing);
	write_ppr(other | UINT64_C(3) << MA_PPR_PRI_SHIFT);
	expect_pri(3, "mtspr 896");
	/* Each PRI from each other one. */
	static const int seq[] = { 2, 3, 4, 2, 4, 3, 3 };
	for (unsigned i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		char what[64];
		snprintf(what, sizeof(what), "ma_ppr_arch_hint(%d), step %u", seq[i], i);
		ma_ppr_arch_hint(seq[i]);
		expect_pri(seq[i], what);
	}
	/* Values the nops do not set leave PRI alone. */
	ma_ppr_arch_hint(0);
	ma_ppr_arch_hint(5);
	ma_ppr_arch_hint(7);
	expect_pri(3, "ma_ppr_arch_hint(0, 5 and 7)");
}

static void check_very_low(void)
{
	for (int pri = 2; pri <= 4; pri++) {
		ma_ppr_arch_hint(pri);
		if (ma_ppr_arch_very_low())
			fail("ma_ppr_arch_very_low() says PRI 1 is honoured, but qemu-user ignores `or 31,31,31`");
		expect_pri(pri, "ma_ppr_arch_very_low() (the PRI found put back)");
	}
	/* Where very low is refused, PRI 1's hint still ends at low. */
	ma_ppr_arch_hint(4);
	ma_ppr_arch_hint(1);
	expect_pri(2, "ma_ppr_arch_hint(1) from PRI 4, very low refused");
}

static void check_mapping(void)
{
	for (int level = MA_HW_LEVEL_MIN; level <= MA_HW_LEVEL_MAX; level++) {
		int pri = ma_ppr_pri_of_level(level);
		if (pri != level + 3)
			fail("level %d maps to PRI %d, %d expected", level, pri, level + 3);
		if (ma_ppr_level_of_pri(pri) != level)
			fail("PRI %d maps back to level %d, %d expected", pri, ma_ppr_level_of_pri(pri), level);
	}
	static const int outside[] = { 0, 6, 7 };
	for (unsigned i = 0; i < 3; i++)
		if (ma_ppr_level_of_pri(outside[i]) != MA_PPR_NO_LEVEL)
			fail("PRI %d maps to level %d, but it is outside the scale", outside[i],
			     ma_ppr_level_of_pri(outside[i]));
}

static void check_backend(void)
{
	const struct ma_hw_backend *b = &ma_hw_power_ppr;
	if (strcmp(b->name, "power-ppr") || b->lo != -2 || b->hi != 1 || !b->apply_self)
		fail("the table: name '%s', reach %d..%d, apply_self %s", b->name, b->lo, b->hi,
		     b->apply_self ? "set" : "missing");
	const struct ma_hw_env env = { .sysfs = "/sys", .resctrl = "/sys/fs/resctrl" };
	struct ma_hw_why why = { "" };
	for (int pri = 2; pri <= 4; pri++) {
		ma_ppr_arch_hint(pri);
		enum ma_hw_presence p = b->probe(&env, &why);
		if (p != MA_HW_PRESENT)
			fail("probe says %s: %s", p == MA_HW_ABSENT ? "absent" : "needs privilege", why.s);
		expect_pri(pri, "probe (the PRI found put back)");
	}
	/* What start finds under qemu-user: very low refused (check_very_low). */
	void *priv = calloc(1, b->priv_size);
	if (!priv)
		fail("out of memory");
	static const int levels[] = { 1, -1, 0, 1, -2, 0, -2, -1 };
	for (unsigned i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		char what[64];
		int l = levels[i];
		int e = b->apply(priv, NULL, l, &why);
		if (e)
			fail("apply(level %d) fails: %s (%s)", l, strerror(e), why.s);
		snprintf(what, sizeof(what), "apply(level %d)", l);
		expect_pri(l == -2 ? 2 : ma_ppr_pri_of_level(l), what);
	}
	ma_ppr_arch_hint(3);
	static const int bad[] = { 2, -3, 99 };
	for (unsigned i = 0; i < 3; i++) {
		why.s[0] = 0;
		int e = b->apply(priv, NULL, bad[i], &why);
		if (e != EINVAL || !strstr(why.s, "-2..+1"))
			fail("apply(level %d): %s '%s', EINVAL naming -2..+1 expected", bad[i], strerror(e), why.s);
		expect_pri(3, "a refused apply");
	}
	/* A refusal by the hardware: the state a POWER8's start leaves (very low honoured,
	 * power_ppr.c's one int) on a processor that refuses very low, as qemu does. */
	if (b->priv_size != sizeof(int))
		fail("power_ppr.c's state is no longer one int (very_low): update this test");
	*(int *)priv = 1;
	ma_ppr_arch_hint(4);
	why.s[0] = 0;
	int e = b->apply(priv, NULL, -2, &why);
	if (e != EPERM || !strstr(why.s, "level -2") || !strstr(why.s, "PRI 2"))
		fail("apply(level -2) refused by the processor: %s '%s', EPERM naming level -2 and PRI 2 expected",
		     strerror(e), why.s);
	expect_pri(4, "an apply the processor refused (the PRI found put back)");
	*(int *)priv = 0;
	/* The workers' re-apply: +2 is out of reach and sets +1. */
	static const int self[][2] = { { -2, 2 }, { 2, 4 }, { -1, 2 }, { 0, 3 }, { 1, 4 } };
	for (unsigned i = 0; i < 5; i++) {
		char what[64];
		b->apply_self(NULL, 0, self[i][0]);
		snprintf(what, sizeof(what), "apply_self(%d)", self[i][0]);
		expect_pri(self[i][1], what);
	}
	free(priv);
}

int main(void)
{
	check_hints();
	check_very_low();
	check_mapping();
	check_backend();
	printf("ppc64le PPR: PRI 2, 3, 4 set and read back with the other bits kept; very low reported refused; "
	       "levels -2..+2 are PRI 1..5; probe, apply and apply_self read back what they set\n");
	return 0;
}
