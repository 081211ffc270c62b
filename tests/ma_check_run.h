/* The Check runner of the suites that link no runtime (hwprio's, the strategies'): runs s,
 * returns the exit status. tests/ma_test.h's ma_test_run is the same for the others. */
#ifndef MA_CHECK_RUN_H
#define MA_CHECK_RUN_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static inline int ma_check_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* A sysfs tree under root with n CPUs, per_core hardware threads per core (their
 * thread_siblings_list files), as smt-quiet's and power-ppr's probes read it. */
static inline void ma_check_fake_smt_sysfs(const char *root, int n, int per_core)
{
	char path[4096 + 80];
	ck_assert_uint_lt(strlen(root), 4096);
	for (int c = 0; c < n; c++) {
		ck_assert(snprintf(path, sizeof(path), "mkdir -p %s/devices/system/cpu/cpu%d/topology", root, c) < (int)sizeof(path));
		ck_assert_int_eq(system(path), 0);
		ck_assert(snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%d/topology/thread_siblings_list", root, c) <
			  (int)sizeof(path));
		FILE *f = fopen(path, "w");
		ck_assert_ptr_nonnull(f);
		int first = c / per_core * per_core;
		if (per_core > 1)
			fprintf(f, "%d-%d\n", first, first + per_core - 1);
		else
			fprintf(f, "%d\n", c);
		fclose(f);
	}
}

#endif
