/*
 * libmarcel-dlrb's period detector (dlrb/period.c) on streams of calls made by hand:
 * periods found after the confirmation and no sooner, iterations counted once per
 * period and ended just after the period's last synchronising call, phase changes,
 * streams without structure, the longest period looked for.
 */
#include <check.h>
#include <stdlib.h>
#include "ma_check_run.h"
#include "ma_dlrb_period.h"

static struct ma_period p;

/* A call: kind k (sync if k >= 7), peer offset o. */
static uint32_t sym(unsigned k, unsigned o)
{
	return ma_period_symbol(k, k >= 7, o);
}

/* Pushes `reps` repetitions of the sequence seq[0..n); counts the events. */
static void feed(const uint32_t *seq, unsigned n, unsigned reps, unsigned *found, unsigned *iters, unsigned *lost)
{
	for (unsigned r = 0; r < reps; r++)
		for (unsigned i = 0; i < n; i++) {
			enum ma_period_event e = ma_period_push(&p, seq[i]);
			*found += e == MA_PERIOD_FOUND;
			*lost += e == MA_PERIOD_LOST;
			*iters += e == MA_PERIOD_ITERATION || (e == MA_PERIOD_FOUND && p.pos == 0);
		}
}

/* compute; allreduce; irecv from the left; isend to the right; waitall (MetBench with an
 * exchange): a period of 4, anchored after the waitall. */
START_TEST(period_of_four)
{
	ma_period_init(&p);
	const uint32_t seq[] = { sym(8, 0xffffff), sym(2, 3), sym(1, 1), sym(7, 0xffffff) };
	unsigned found = 0, iters = 0, lost = 0;
	feed(seq, 4, 2, &found, &iters, &lost);
	ck_assert_uint_eq(found, 0); /* 8 calls: two periods, not yet three */
	feed(seq, 4, 1, &found, &iters, &lost);
	ck_assert_uint_eq(found, 1);
	ck_assert_uint_eq(p.period, 4);
	/* Found on the waitall: that call ends an iteration. */
	ck_assert_uint_eq(p.pos, 0);
	ck_assert_uint_eq(iters, 1);
	feed(seq, 4, 10, &found, &iters, &lost);
	ck_assert_uint_eq(iters, 11);
	ck_assert_uint_eq(lost, 0);
	/* Each iteration ends on the waitall, not elsewhere. */
	for (unsigned i = 0; i < 3; i++)
		ck_assert_int_eq(ma_period_push(&p, seq[i]), MA_PERIOD_NONE);
	ck_assert_int_eq(ma_period_push(&p, seq[3]), MA_PERIOD_ITERATION);
}
END_TEST

/* A barrier alone per iteration: period 1, believed after MA_PERIOD_MIN_RUN calls. */
START_TEST(period_of_one)
{
	ma_period_init(&p);
	const uint32_t seq[] = { sym(11, 0xffffff) };
	unsigned found = 0, iters = 0, lost = 0;
	feed(seq, 1, MA_PERIOD_MIN_RUN, &found, &iters, &lost);
	ck_assert_uint_eq(found, 0);
	feed(seq, 1, 1, &found, &iters, &lost);
	ck_assert_uint_eq(found, 1);
	ck_assert_uint_eq(p.period, 1);
	feed(seq, 1, 5, &found, &iters, &lost);
	ck_assert_uint_eq(iters, 6);
}
END_TEST

/* A phase change: a period of 3, then one of 5; lost once, found again. */
START_TEST(phase_change)
{
	ma_period_init(&p);
	const uint32_t a[] = { sym(1, 1), sym(2, 7), sym(8, 0xffffff) };
	const uint32_t b[] = { sym(1, 2), sym(1, 3), sym(2, 6), sym(2, 5), sym(9, 0xffffff) };
	unsigned found = 0, iters = 0, lost = 0;
	feed(a, 3, 10, &found, &iters, &lost);
	ck_assert_uint_eq(found, 1);
	ck_assert_uint_eq(p.period, 3);
	feed(b, 5, 10, &found, &iters, &lost);
	ck_assert_uint_eq(lost, 1);
	ck_assert_uint_eq(found, 2);
	ck_assert_uint_eq(p.period, 5);
	ck_assert_uint_eq(p.found, 2);
}
END_TEST

/* Calls with no structure (random kinds and peers): no period in 100000 calls. */
START_TEST(no_structure)
{
	ma_period_init(&p);
	unsigned found = 0, iters = 0, lost = 0;
	srand(7);
	for (unsigned i = 0; i < 100000; i++) {
		uint32_t s = sym(1 + (unsigned)rand() % 4, (unsigned)rand() % 4);
		feed(&s, 1, 1, &found, &iters, &lost);
	}
	ck_assert_uint_eq(found, 0);
	ck_assert_uint_eq(iters, 0);
}
END_TEST

/* The longest period looked for is found; a longer one is not. */
START_TEST(longest_period)
{
	static uint32_t seq[MA_PERIOD_MAX + 10];
	for (unsigned len = MA_PERIOD_MAX; len <= MA_PERIOD_MAX + 10; len += 10) {
		ma_period_init(&p);
		for (unsigned i = 0; i < len; i++)
			seq[i] = sym(1 + i % 5, i);
		unsigned found = 0, iters = 0, lost = 0;
		feed(seq, len, MA_PERIOD_CONFIRM + 1, &found, &iters, &lost);
		ck_assert_uint_eq(found, len <= MA_PERIOD_MAX);
		if (len <= MA_PERIOD_MAX)
			ck_assert_uint_eq(p.period, len);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dlrb_period");
	TCase *tc = tcase_create("period");
	tcase_add_test(tc, period_of_four);
	tcase_add_test(tc, period_of_one);
	tcase_add_test(tc, phase_change);
	tcase_add_test(tc, no_structure);
	tcase_add_test(tc, longest_period);
	suite_add_tcase(s, tc);
	return ma_check_run(s);
}
