/*
 * A test that hangs on purpose, for tests/hang-report.sh: it joins a thread that nothing
 * will ever start. Check must report it as timed out, and ma_test.h's watchdog must print
 * the threads first, naming the one never started and what would start it.
 */
#include "ma_test.h"

static any_t nothing(any_t arg)
{
	return arg;
}

START_TEST(test_join_never_started)
{
	ma_test_init();
	marcel_bubble_t b;
	ck_assert_int_eq(marcel_bubble_init(&b), 0);
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setnaturalbubble(&a, &b), 0);
	ck_assert_int_eq(marcel_attr_setname(&a, "never-started"), 0);
	marcel_t t;
	ck_assert_int_eq(marcel_create_dontsched(&t, &a, nothing, NULL), 0);
	marcel_join(t, NULL);
}
END_TEST

static void populate(TCase *tc)
{
	tcase_add_test(tc, test_join_never_started);
}

int main(void)
{
	Suite *s = suite_create("hang");
	ma_test_add_one(s, "hang", ma_test_setup_real, populate, 3);
	return ma_test_run(s);
}
