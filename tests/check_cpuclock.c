/*
 * The clock CPU time is charged with (marcel/cpuclock.c), white-box: which of its two
 * modes it is in does not show through the API, only in the cost of a switch. While
 * switches are rare each one reads the clock itself (the word says MA_CPU_CLOCK_PRECISE);
 * a worker that then reads it MA_CPU_CLOCK_FEW times within a period makes the word a
 * coarse clock again at once, without waiting for the helper's next look, which comes up
 * to 20 ms later (bench/RESULTS.md: a nested recursion ran at half speed meanwhile).
 *
 * The reads are made by calling ma_cpu_clock_precise() for a worker of the test's own
 * (the switch path calls it for its VP the same way): every number of reads is exact,
 * however slow the build.
 */
#include <time.h>
#include "ma_sched.h"
#include "ma_sync.h"
#include "ma_test.h"

static void pause_ns(long ns)
{
	struct timespec ts = { ns / 1000000000, ns % 1000000000 };
	while (nanosleep(&ts, &ts) != 0)
		;
}

static uint64_t word(void)
{
	return atomic_load(&ma_cpu_clock);
}

/* Starts the runtime (one VP) and waits until the helper has seen switches are rare:
 * nothing runs meanwhile but this thread, asleep in the kernel. */
static void start_quiet(void)
{
	setenv("MARCEL_NVP", "1", 1);
	ck_assert_int_eq(marcel_init(NULL, NULL), 0);
	unsetenv("MARCEL_NVP");
	for (int tries = 0; tries < 5000 && word() != MA_CPU_CLOCK_PRECISE; tries++)
		pause_ns(1000000);
	ck_assert_msg(word() == MA_CPU_CLOCK_PRECISE, "the CPU clock is still coarse after 5 s without switches");
}

static struct ma_worker fake;

/* Reads until the word is coarse (at most a million); returns how many, with the time
 * they took and what the last one returned. */
static unsigned read_until_coarse(uint64_t *took, uint64_t *last)
{
	uint64_t before = ma_clock_ns();
	unsigned reads = 0;
	while (word() == MA_CPU_CLOCK_PRECISE && reads < 1000000) {
		*last = ma_cpu_clock_precise(&fake);
		reads++;
	}
	*took = ma_clock_ns() - before;
	ck_assert_uint_ge(*last, before);
	return reads;
}

/* MA_CPU_CLOCK_FEW reads in a row: the read that makes the count sets the word itself,
 * to what it read. The helper is stopped for this part: woken on an idle processor, it
 * would store a value of its own within microseconds, hiding whether the read did. */
START_TEST(frequent_reads_bring_the_word_back)
{
	start_quiet();
	memset(&fake, 0, sizeof(fake));
	ma_cpu_clock_stop();
	ck_assert(word() == MA_CPU_CLOCK_PRECISE);
	uint64_t took, last = 0;
	unsigned reads = read_until_coarse(&took, &last);
	ck_assert_msg(word() != MA_CPU_CLOCK_PRECISE, "still precise after %u reads", reads);
	ck_assert_uint_ge(reads, MA_CPU_CLOCK_FEW);
	/* All within one period, the count never started afresh (a preemption of the
	 * process may make it, and then more reads). */
	if (took < MA_CPU_CLOCK_PERIOD_NS)
		ck_assert_uint_eq(reads, MA_CPU_CLOCK_FEW);
	ck_assert_uint_eq(word(), last);

	/* With the helper: once woken by such a request it finds nothing switches and makes
	 * the word precise again (within its next look, 20 ms; 5 s for a loaded machine). */
	ck_assert_int_eq(ma_cpu_clock_start(), 0);
	for (int tries = 0; tries < 5000 && word() != MA_CPU_CLOCK_PRECISE; tries++)
		pause_ns(1000000);
	ck_assert(word() == MA_CPU_CLOCK_PRECISE);
	memset(&fake, 0, sizeof(fake));
	reads = read_until_coarse(&took, &last);
	ck_assert_msg(word() != MA_CPU_CLOCK_PRECISE, "still precise after %u reads", reads);
	for (int tries = 0; tries < 5000 && word() != MA_CPU_CLOCK_PRECISE; tries++)
		pause_ns(1000000);
	ck_assert_msg(word() == MA_CPU_CLOCK_PRECISE, "coarse 5 s after the reads stopped");
	marcel_end();
}
END_TEST

/* Reads further apart than a period / MA_CPU_CLOCK_FEW, as rare switches make them, leave
 * it precise: each period sees only one. */
START_TEST(rare_reads_leave_it_precise)
{
	start_quiet();
	memset(&fake, 0, sizeof(fake));
	for (unsigned i = 0; i < 2 * MA_CPU_CLOCK_FEW; i++) {
		ma_cpu_clock_precise(&fake);
		ck_assert_msg(word() == MA_CPU_CLOCK_PRECISE, "coarse after %u reads a period apart", i + 1);
		pause_ns(MA_CPU_CLOCK_PERIOD_NS + 100000);
	}
	marcel_end();
}
END_TEST

/* Two workers' reads count apart: each makes fewer than MA_CPU_CLOCK_FEW per period, so
 * neither brings the word back, though together they make more. */
START_TEST(reads_count_per_worker)
{
	start_quiet();
	static struct ma_worker other;
	memset(&fake, 0, sizeof(fake));
	memset(&other, 0, sizeof(other));
	for (int round = 0; round < 20; round++) {
		for (unsigned i = 0; i + 1 < MA_CPU_CLOCK_FEW; i++) {
			ma_cpu_clock_precise(&fake);
			ma_cpu_clock_precise(&other);
		}
		ck_assert_msg(word() == MA_CPU_CLOCK_PRECISE, "coarse after round %d", round);
		pause_ns(MA_CPU_CLOCK_PERIOD_NS + 100000);
	}
	marcel_end();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cpuclock");
	TCase *tc = tcase_create("modes");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, frequent_reads_bring_the_word_back);
	tcase_add_test(tc, rare_reads_leave_it_precise);
	tcase_add_test(tc, reads_count_per_worker);
	suite_add_tcase(s, tc);
	return ma_test_run(s);
}
