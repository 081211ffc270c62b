/* SMT siblings from sysfs (ma_smt.h): which CPUs share a core, for the backends that act
 * on a core's hardware threads (power-ppr's calibration, smt-quiet's probe). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ma_smt.h"

/* The first two CPUs of a sysfs CPU list ("0-3", "0,8", "5"): how many it names, at most
 * 2, or -1 if s is not such a list of CPUs below CPU_SETSIZE. */
static int ma_hw_smt_list_pair(const char *s, int out[2])
{
	int n = 0;
	for (;;) {
		char *end;
		if (*s < '0' || *s > '9')
			return -1;
		long a = strtol(s, &end, 10), b = a;
		s = end;
		if (*s == '-') {
			s++;
			if (*s < '0' || *s > '9')
				return -1;
			b = strtol(s, &end, 10);
			s = end;
		}
		if (b < a || b >= CPU_SETSIZE)
			return -1;
		for (long c = a; c <= b && n < 2; c++)
			out[n++] = (int)c;
		if (!*s)
			return n;
		if (*s++ != ',')
			return -1;
	}
}

int ma_hw_smt_siblings(const char *sysfs, int cpu[2], struct ma_hw_why *why)
{
	unsigned nb_read = 0;
	/* Not only the CPUs this thread may run on: marcel_init has bound it to one. */
	for (int n = 0; n < CPU_SETSIZE; n++) {
		char path[PATH_MAX], buf[256];
		if (snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%d/topology/thread_siblings_list", sysfs, n) >=
		    (int)sizeof(path))
			return ma_hw_fail(why, ENAMETOOLONG, "MARCEL_HWPRIO_SYSFS=%s: a path longer than %d characters", sysfs,
					  PATH_MAX);
		FILE *f = fopen(path, "r");
		if (!f)
			continue; /* no such CPU, or offline */
		size_t len = fread(buf, 1, sizeof(buf) - 1, f);
		int e = ferror(f) ? errno : 0;
		fclose(f);
		if (e)
			return ma_hw_fail(why, e, "cannot read %s: %s", path, strerror(e));
		buf[len] = 0;
		buf[strcspn(buf, "\n")] = 0;
		nb_read++;
		int k = ma_hw_smt_list_pair(buf, cpu);
		if (k < 0)
			return ma_hw_fail(why, EINVAL, "%s reads '%.60s': expected a list of CPUs below %d such as 0-3 or 0,8",
					  path, buf, CPU_SETSIZE);
		if (k == 2)
			return 0;
	}
	if (!nb_read)
		return ma_hw_fail(why, ENOENT, "no %s/devices/system/cpu/cpuN/topology/thread_siblings_list: cannot find SMT siblings",
				  sysfs);
	return ma_hw_fail(why, ENODEV, "no SMT siblings to share a core (each of the %u CPUs of %s/devices/system/cpu is alone on its core)",
			  nb_read, sysfs);
}
