/*
 * smt-quiet's decisions, on a time line the test keeps: how long a lowered worker goes
 * quiet for the time it ran, which way each level is quiet (the wait at -1, the park at
 * -2), the share of its time quiet, what is accounted per VP on a core of two hardware
 * threads (one raised, one lowered), and the probe on fake sysfs trees. No thread runs.
 * Then the real quiet wait of this processor (hwprio/arch/<arch>/quiet.c): it waits at
 * least what it was asked and what it reports, with the mechanism the processor's own
 * answer calls for (CPUID's WAITPKG bit on x86-64), and the backend's real clock, wait
 * and park account at least what they were asked.
 */
#include <check.h>
#include "ma_check_run.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "ma_hwprio.h"
#include "ma_smt_quiet.h"
#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#endif

extern const struct ma_hw_backend ma_hw_smt_quiet;

static uint64_t now_ns, parked_ns, waited_ns;
static unsigned parks, waits;

static uint64_t fake_clock(void)
{
	return now_ns;
}

static void fake_park(uint64_t ns)
{
	parked_ns += ns;
	parks++;
	now_ns += ns;
}

static uint64_t fake_wait(uint64_t ns, enum ma_quiet_mech *used)
{
	*used = MA_QUIET_SPIN;
	waited_ns += ns;
	waits++;
	now_ns += ns;
	return ns;
}

static void *started(void)
{
	void *priv = calloc(1, ma_hw_smt_quiet.priv_size);
	ck_assert_ptr_nonnull(priv);
	struct ma_hw_env env = { .sysfs = "/nonexistent", .resctrl = "/nonexistent" };
	struct ma_hw_why why;
	ck_assert_int_eq(ma_hw_smt_quiet.start(priv, &env, &why), 0);
	ma_hw_sq_set_clock(priv, fake_clock, fake_park, fake_wait);
	now_ns = 1000000000;
	parked_ns = waited_ns = 0;
	parks = waits = 0;
	return priv;
}

START_TEST(quiet_share_per_level)
{
	ck_assert_uint_eq(ma_hw_sq_quiet_for(300000, 0), 0);
	ck_assert_uint_eq(ma_hw_sq_quiet_for(300000, -1), 100000);
	ck_assert_uint_eq(ma_hw_sq_quiet_for(300000, -2), 300000);
	/* At most a millisecond at once. */
	ck_assert_uint_eq(ma_hw_sq_quiet_for(5000000, -2), 1000000);
	ck_assert_uint_eq(ma_hw_sq_quiet_for(6000000, -1), 1000000);
}
END_TEST

/* A core of two hardware threads, VP 0 raised (0 after fitting), VP 1 lowered: each runs
 * 200 us between switches for 1000 switches; VP 1 is quiet half its time at -2, parked, a
 * quarter at -1, in the wait, VP 0 never. */
START_TEST(accounted_on_a_core_of_two)
{
	static const struct {
		int level;
		uint64_t parked, waited;
	} cases[] = { { -2, 999 * 200000ull, 0 }, { -1, 0, 999 * 66666ull }, { 0, 0, 0 } };
	for (unsigned k = 0; k < 3; k++) {
		void *priv = started();
		for (int i = 0; i < 1000; i++) {
			now_ns += 200000;
			ma_hw_smt_quiet.apply_self(priv, 0, 0);
			ma_hw_smt_quiet.apply_self(priv, 1, cases[k].level);
		}
		ck_assert_uint_eq(ma_hw_sq_quiet_ns(priv, 0), 0);
		ck_assert_uint_eq(ma_hw_sq_quiet_ns(priv, 1), cases[k].parked + cases[k].waited);
		ck_assert_uint_eq(parked_ns, cases[k].parked);
		ck_assert_uint_eq(waited_ns, cases[k].waited);
		ck_assert_uint_eq(parks, cases[k].parked ? 999 : 0);
		ck_assert_uint_eq(waits, cases[k].waited ? 999 : 0);
		free(priv);
	}
}
END_TEST

/* The level is the share of the worker's time quiet: one VP alone on the time line,
 * running 300 us between switches, is quiet a quarter of it at -1 and half at -2; a VP
 * that changes level changes the way at its next switch; runs past 3 ms hit the cap. */
START_TEST(share_quiet_per_level)
{
	static const struct {
		int level;
		uint64_t num, den;
	} cases[] = { { -1, 1, 4 }, { -2, 1, 2 } };
	for (unsigned k = 0; k < 2; k++) {
		void *priv = started();
		ma_hw_smt_quiet.apply_self(priv, 2, cases[k].level);
		uint64_t from = now_ns;
		for (int i = 0; i < 100; i++) {
			now_ns += 300000;
			ma_hw_smt_quiet.apply_self(priv, 2, cases[k].level);
		}
		uint64_t quiet = ma_hw_sq_quiet_ns(priv, 2);
		ck_assert_uint_eq(quiet * cases[k].den, (now_ns - from) * cases[k].num);
		free(priv);
	}
	void *priv = started();
	ma_hw_smt_quiet.apply_self(priv, 2, -1);
	now_ns += 300000;
	ma_hw_smt_quiet.apply_self(priv, 2, -2); /* the level now: park the whole run */
	ck_assert_uint_eq(parks, 1);
	ck_assert_uint_eq(parked_ns, 300000);
	ck_assert_uint_eq(waits, 0);
	now_ns += 300000;
	ma_hw_smt_quiet.apply_self(priv, 2, -1);
	ck_assert_uint_eq(waits, 1);
	ck_assert_uint_eq(waited_ns, 100000);
	now_ns += 6000000;
	ma_hw_smt_quiet.apply_self(priv, 2, -1);
	ck_assert_uint_eq(waited_ns, 100000 + 1000000);
	ck_assert_uint_eq(ma_hw_sq_quiet_ns(priv, 2), 300000 + 100000 + 1000000);
	free(priv);
}
END_TEST

/* Back at 0, the time before does not count: the next park is for what ran since. */
START_TEST(level_zero_forgets)
{
	void *priv = started();
	ma_hw_smt_quiet.apply_self(priv, 3, -2);
	now_ns += 100000;
	ma_hw_smt_quiet.apply_self(priv, 3, 0);
	now_ns += 900000;
	ma_hw_smt_quiet.apply_self(priv, 3, -2); /* starts counting again: no park */
	ck_assert_uint_eq(parked_ns, 0);
	now_ns += 50000;
	ma_hw_smt_quiet.apply_self(priv, 3, -2);
	ck_assert_uint_eq(parked_ns, 50000);
	ck_assert_uint_eq(ma_hw_sq_quiet_ns(priv, 3), 50000);
	/* VPs past the table's end: nothing done, nothing broken. */
	ma_hw_smt_quiet.apply_self(priv, 100000, -2);
	free(priv);
}
END_TEST

START_TEST(apply_checks_its_reach)
{
	void *priv = started();
	struct ma_hw_why why;
	struct ma_hw_target t = { .vp = 1, .tid = 0, .cpu = -1, .core = 0, .cache = -1, .node = -1, .kind = -1 };
	ck_assert_int_eq(ma_hw_smt_quiet.apply(priv, &t, -2, &why), 0);
	ck_assert_int_eq(ma_hw_smt_quiet.apply(priv, &t, 0, &why), 0);
	ck_assert_int_eq(ma_hw_smt_quiet.apply(priv, &t, 1, &why), EINVAL);
	ck_assert_msg(strstr(why.s, "level 1") && strstr(why.s, "-2..0"), "%s", why.s);
	ck_assert_int_eq(ma_hw_smt_quiet.lo, -2);
	ck_assert_int_eq(ma_hw_smt_quiet.hi, 0);
	free(priv);
}
END_TEST

START_TEST(probe_needs_smt)
{
	char root[] = "/tmp/check-smtquiet-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(root));
	char smt[600], nosmt[600], cmd[700];
	snprintf(smt, sizeof(smt), "%s/smt", root);
	snprintf(nosmt, sizeof(nosmt), "%s/nosmt", root);
	ma_check_fake_smt_sysfs(smt, 4, 2);
	ma_check_fake_smt_sysfs(nosmt, 4, 1);
	struct ma_hw_why why = { "" };
	struct ma_hw_env env = { .sysfs = smt, .resctrl = "/nonexistent" };
	ck_assert_int_eq(ma_hw_smt_quiet.probe(&env, &why), MA_HW_PRESENT);
	env.sysfs = nosmt;
	ck_assert_int_eq(ma_hw_smt_quiet.probe(&env, &why), MA_HW_ABSENT);
	ck_assert_msg(strstr(why.s, "no SMT"), "%s", why.s);
	env.sysfs = "/nonexistent/sys";
	ck_assert_int_eq(ma_hw_smt_quiet.probe(&env, &why), MA_HW_ABSENT);
	ck_assert_msg(why.s[0], "no reason given");
	/* This machine: whatever it says, with a reason when absent. */
	env.sysfs = "/sys";
	enum ma_hw_presence p = ma_hw_smt_quiet.probe(&env, &why);
	printf("smt-quiet on this machine: %s%s%s\n", ma_hw_presence_name(p), p ? ": " : "", p ? why.s : "");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static uint64_t mono_ns(void)
{
	struct timespec ts;
	ck_assert_int_eq(clock_gettime(CLOCK_MONOTONIC, &ts), 0);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The mechanism the wait must use on this processor, found apart from hwprio's code; -1
 * where the build's choice is all there is to compare with (a generic build). */
static int expected_mechanism(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c >> 5 & 1) ? MA_QUIET_TPAUSE : MA_QUIET_PAUSE;
#elif defined(__aarch64__)
	return getauxval(AT_HWCAP) & (1ul << 2) ? MA_QUIET_WFE : MA_QUIET_YIELD_ISB; /* HWCAP_EVTSTRM */
#elif defined(__powerpc64__) && defined(__LITTLE_ENDIAN__)
	return MA_QUIET_PPC_YIELD;
#else
	return -1;
#endif
}

/* This processor's wait: at once for 0; for the rest at least what was asked, and no more
 * than the time that passed around the call; always the same mechanism, the one the
 * processor calls for. The 300 us wait is longer than an Arm event-stream period. */
START_TEST(real_quiet_wait)
{
	enum ma_quiet_mech first = (enum ma_quiet_mech)-1, m = (enum ma_quiet_mech)-1;
	ck_assert_uint_eq(ma_quiet_arch_wait(0, &first), 0);
	int expected = expected_mechanism();
	printf("quiet wait on this machine: %s\n", ma_quiet_mech_name(first));
	if (expected >= 0)
		ck_assert_msg((int)first == expected, "the wait uses %s, the processor calls for %s",
			      ma_quiet_mech_name(first), ma_quiet_mech_name((enum ma_quiet_mech)expected));
	else
		ck_assert_int_eq(first, MA_QUIET_SPIN);
	static const uint64_t asked[] = { 1, 500, 20000, 300000, 1000000 };
	for (unsigned i = 0; i < sizeof(asked) / sizeof(asked[0]); i++) {
		uint64_t before = mono_ns();
		uint64_t waited = ma_quiet_arch_wait(asked[i], &m);
		uint64_t after = mono_ns();
		ck_assert_msg(waited >= asked[i], "asked %llu ns, waited %llu", (unsigned long long)asked[i],
			      (unsigned long long)waited);
		ck_assert_msg(after - before >= waited, "reports %llu ns, %llu passed around the call",
			      (unsigned long long)waited, (unsigned long long)(after - before));
		ck_assert_int_eq(m, first);
	}
}
END_TEST

/* The backend as started, with its own clock, wait and park: a VP that ran at least
 * 300 us is quiet at least a third of that at -1 and all of it at -2. */
START_TEST(real_backend_quiet)
{
	static const struct {
		int level;
		uint64_t at_least;
	} cases[] = { { -1, 100000 }, { -2, 300000 } };
	for (unsigned k = 0; k < 2; k++) {
		void *priv = calloc(1, ma_hw_smt_quiet.priv_size);
		ck_assert_ptr_nonnull(priv);
		struct ma_hw_env env = { .sysfs = "/nonexistent", .resctrl = "/nonexistent" };
		struct ma_hw_why why;
		ck_assert_int_eq(ma_hw_smt_quiet.start(priv, &env, &why), 0);
		ma_hw_smt_quiet.apply_self(priv, 5, cases[k].level);
		uint64_t from = mono_ns();
		while (mono_ns() - from < 300000)
			;
		ma_hw_smt_quiet.apply_self(priv, 5, cases[k].level);
		ck_assert_msg(ma_hw_sq_quiet_ns(priv, 5) >= cases[k].at_least, "level %d: quiet %llu ns after 300 us",
			      cases[k].level, (unsigned long long)ma_hw_sq_quiet_ns(priv, 5));
		free(priv);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hwprio smt-quiet");
	TCase *tc = tcase_create("smt-quiet");
	tcase_add_test(tc, quiet_share_per_level);
	tcase_add_test(tc, accounted_on_a_core_of_two);
	tcase_add_test(tc, share_quiet_per_level);
	tcase_add_test(tc, level_zero_forgets);
	tcase_add_test(tc, apply_checks_its_reach);
	tcase_add_test(tc, probe_needs_smt);
	tcase_add_test(tc, real_quiet_wait);
	tcase_add_test(tc, real_backend_quiet);
	suite_add_tcase(s, tc);
	return ma_check_run(s);
}
