/*
 * cpufreq on fake sysfs trees: what the probe says of missing, garbled, refused and
 * complete trees; the files apply writes for each level, by the energy-performance
 * preference and by the frequency window; policies shared by several CPUs; what reset puts
 * back; every failure's message and what it leaves. And the probe of this machine's /sys,
 * printed (nothing is written there).
 *
 * A tree is laid out as the kernel's: devices/system/cpu/cpufreq/policy<P>/ holds the
 * files, and each cpu<N>/cpufreq is a link to its policy. Unlike sysfs, a plain file takes
 * any text: a failed write is made here by putting a directory where the file was.
 */
#define _GNU_SOURCE
#include <check.h>
#include "ma_check_run.h"
#include <errno.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "ma_hwprio.h"

extern const struct ma_hw_backend ma_hw_cpufreq;

#define EPP_PREFS "default performance balance_performance balance_power power"

/* ---- trees ---- */

static char base[256]; /* every tree of the run is made in it (main removes it) */
static char root[512];

static void tree_new(void)
{
	snprintf(root, sizeof(root), "%s/tree.XXXXXX", base);
	ck_assert_msg(mkdtemp(root) != NULL, "mkdtemp %s: %s", root, strerror(errno));
	/* As sysfs: anyone reads, the owner writes. */
	ck_assert_int_eq(chmod(root, 0755), 0);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void tree_drop(void)
{
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void base_drop(void)
{
	nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Every directory of root/rel down to its last part, as sysfs's: 0755. */
static void mkdirs(const char *rel)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			mkdir(path, 0755);
			*p = '/';
		}
	mkdir(path, 0755);
}

static void put(const char *rel, const char *text)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	FILE *f = fopen(path, "w");
	ck_assert_msg(f != NULL, "cannot make %s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
	chmod(path, 0644);
}

/* The text of root/rel, its newline dropped. */
static const char *get(const char *rel)
{
	static char buf[256];
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	FILE *f = fopen(path, "r");
	ck_assert_msg(f != NULL, "cannot read %s: %s", path, strerror(errno));
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return buf;
}

static const char *pol_file(int policy, const char *file)
{
	static char rel[128];
	snprintf(rel, sizeof(rel), "devices/system/cpu/cpufreq/policy%d/%s", policy, file);
	return rel;
}

/* Policy p driving the CPUs of related (as the kernel prints them), each linked to it. */
static void policy_new(int p, const char *related, const int *cpus, unsigned nb_cpus)
{
	char rel[128];
	snprintf(rel, sizeof(rel), "devices/system/cpu/cpufreq/policy%d", p);
	mkdirs(rel);
	put(pol_file(p, "related_cpus"), related);
	for (unsigned i = 0; i < nb_cpus; i++) {
		char cpu[PATH_MAX], target[64];
		snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d", cpus[i]);
		mkdirs(rel);
		snprintf(cpu, sizeof(cpu), "%s/%s/cpufreq", root, rel);
		snprintf(target, sizeof(target), "../cpufreq/policy%d", p);
		ck_assert_int_eq(symlink(target, cpu), 0);
	}
}

/* The frequency files of policy p: hardware 800..3000 MHz, the window 1000..2800. */
static void range_files(int p)
{
	put(pol_file(p, "cpuinfo_min_freq"), "800000\n");
	put(pol_file(p, "cpuinfo_max_freq"), "3000000\n");
	put(pol_file(p, "scaling_min_freq"), "1000000\n");
	put(pol_file(p, "scaling_max_freq"), "2800000\n");
}

static void epp_files(int p, const char *prefs, const char *pref)
{
	put(pol_file(p, "energy_performance_available_preferences"), prefs);
	put(pol_file(p, "energy_performance_preference"), pref);
}

/* ---- the backend ---- */

static struct ma_hw_env env;
static void *priv;
static struct ma_hw_why why;

static void backend_start(void)
{
	env = (struct ma_hw_env){ .sysfs = root, .resctrl = "/nonexistent" };
	priv = calloc(1, ma_hw_cpufreq.priv_size);
	ck_assert_ptr_nonnull(priv);
	ck_assert_int_eq(ma_hw_cpufreq.start(priv, &env, &why), 0);
}

static void backend_stop(void)
{
	ma_hw_cpufreq.stop(priv);
	free(priv);
	priv = NULL;
}

static int apply(int cpu, int level)
{
	struct ma_hw_target t = { .vp = (unsigned)(cpu < 0 ? 3 : cpu), .tid = 0, .cpu = cpu, .core = -1, .cache = -1,
				  .node = -1, .kind = -1 };
	why.s[0] = 0;
	return ma_hw_cpufreq.apply(priv, &t, level, &why);
}

#define ASSERT_WHY(text) ck_assert_msg(strstr(why.s, (text)) != NULL, "expected '%s' in: %s", (text), why.s)

static void assert_window(int p, const char *min, const char *max)
{
	ck_assert_str_eq(get(pol_file(p, "scaling_min_freq")), min);
	ck_assert_str_eq(get(pol_file(p, "scaling_max_freq")), max);
}

/* ---- probe ---- */

START_TEST(probe_missing_directory_is_absent)
{
	tree_new();
	mkdirs("devices/system/cpu/cpu0");
	env = (struct ma_hw_env){ .sysfs = root, .resctrl = "/nonexistent" };
	ck_assert_int_eq(ma_hw_cpufreq.probe(&env, &why), MA_HW_ABSENT);
	char dir[PATH_MAX + 64];
	snprintf(dir, sizeof(dir), "no %s/devices/system/cpu/cpu0/cpufreq", root);
	ASSERT_WHY(dir);
	ASSERT_WHY("no cpufreq driver");
	tree_drop();
}
END_TEST

START_TEST(probe_present_both_ways)
{
	tree_new();
	policy_new(0, "0\n", (int[]){ 0 }, 1);
	range_files(0);
	env = (struct ma_hw_env){ .sysfs = root, .resctrl = "/nonexistent" };
	ck_assert_int_eq(ma_hw_cpufreq.probe(&env, &why), MA_HW_PRESENT);
	epp_files(0, EPP_PREFS "\n", "balance_performance\n");
	ck_assert_int_eq(ma_hw_cpufreq.probe(&env, &why), MA_HW_PRESENT);
	tree_drop();
}
END_TEST

START_TEST(probe_garbage_names_the_file)
{
	tree_new();
	policy_new(0, "0\n", (int[]){ 0 }, 1);
	range_files(0);
	put(pol_file(0, "cpuinfo_max_freq"), "fast\n");
	env = (struct ma_hw_env){ .sysfs = root, .resctrl = "/nonexistent" };
	ck_assert_int_eq(ma_hw_cpufreq.probe(&env, &why), MA_HW_ABSENT);
	ASSERT_WHY("cpu0/cpufreq/cpuinfo_max_freq reads 'fast': expected a frequency in kHz");
	tree_drop();
}
END_TEST

/* Root may write anything: a child that is nobody sees the files as a user does. */
START_TEST(probe_unwritable_needs_privilege)
{
	if (geteuid() != 0) {
		printf("check_hwprio_cpufreq: skipping probe_unwritable_needs_privilege: it needs root to become nobody\n");
		return;
	}
	tree_new();
	policy_new(0, "0\n", (int[]){ 0 }, 1);
	range_files(0);
	int fd[2];
	ck_assert_int_eq(pipe(fd), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		close(fd[0]);
		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(100);
		struct ma_hw_env e = { .sysfs = root, .resctrl = "/nonexistent" };
		struct ma_hw_why w = { "" };
		enum ma_hw_presence p = ma_hw_cpufreq.probe(&e, &w);
		/* An apply as nobody fails too, and leaves the files. */
		void *c = calloc(1, ma_hw_cpufreq.priv_size);
		struct ma_hw_why aw = { "" };
		struct ma_hw_target t = { .vp = 0, .cpu = 0, .core = -1, .cache = -1, .node = -1, .kind = -1 };
		int ae = c && !ma_hw_cpufreq.start(c, &e, &aw) ? ma_hw_cpufreq.apply(c, &t, 2, &aw) : -1;
		dprintf(fd[1], "%d %d\n%s\n%s\n", (int)p, ae, w.s, aw.s);
		_exit(0);
	}
	close(fd[1]);
	char out[1024] = "";
	size_t n = 0;
	ssize_t r;
	while (n < sizeof(out) - 1 && (r = read(fd[0], out + n, sizeof(out) - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = 0;
	close(fd[0]);
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child could not become nobody (status %d)", status);
	int p = -1, ae = -1;
	ck_assert_int_eq(sscanf(out, "%d %d", &p, &ae), 2);
	ck_assert_int_eq(p, MA_HW_NEEDS_PRIVILEGE);
	ck_assert_msg(strstr(out, "cannot write") && strstr(out, "cpu0/cpufreq/scaling_min_freq") &&
			      strstr(out, "Permission denied"),
		      "probe's and apply's reasons: %s", out);
	ck_assert_int_eq(ae, EACCES);
	assert_window(0, "1000000", "2800000");
	tree_drop();
}
END_TEST

START_TEST(probe_this_machine)
{
	struct ma_hw_env e = { .sysfs = "/sys", .resctrl = "/sys/fs/resctrl" };
	enum ma_hw_presence p = ma_hw_cpufreq.probe(&e, &why);
	printf("check_hwprio_cpufreq: this machine: %s%s%s\n", ma_hw_presence_name(p), p == MA_HW_PRESENT ? "" : ": ",
	       p == MA_HW_PRESENT ? "" : why.s);
	ck_assert(p == MA_HW_PRESENT || p == MA_HW_ABSENT || p == MA_HW_NEEDS_PRIVILEGE);
	if (p != MA_HW_PRESENT)
		ck_assert_msg(strstr(why.s, "/sys/devices/system/cpu/cpu0/cpufreq") != NULL, "why: %s", why.s);
}
END_TEST

/* ---- apply and reset ---- */

START_TEST(epp_levels_and_reset)
{
	tree_new();
	policy_new(0, "0\n", (int[]){ 0 }, 1);
	range_files(0);
	epp_files(0, EPP_PREFS "\n", "balance_performance\n");
	backend_start();
	static const char *const want[] = { "power", "balance_power", "balance_performance", "balance_performance",
					    "performance" };
	for (int l = -2; l <= 2; l++) {
		ck_assert_msg(apply(0, l) == 0, "level %d: %s", l, why.s);
		ck_assert_str_eq(get(pol_file(0, "energy_performance_preference")), want[l + 2]);
	}
	/* The frequency window is not touched when the preference is there. */
	assert_window(0, "1000000", "2800000");
	ck_assert_int_eq(ma_hw_cpufreq.reset(priv, &why), 0);
	ck_assert_str_eq(get(pol_file(0, "energy_performance_preference")), "balance_performance");
	backend_stop();
	tree_drop();
}
END_TEST

/* Level 0 writes back what was there, whatever it was (here not one of the levels'). */
START_TEST(epp_zero_is_as_found)
{
	tree_new();
	policy_new(0, "0\n", (int[]){ 0 }, 1);
	range_files(0);
	epp_files(0, EPP_PREFS "\n", "default\n");
	backend_start();
	ck_assert_int_eq(apply(0, 0), 0);
	ck_assert_str_eq(get(pol_file(0, "energy_performance_preference")), "default");
	ck_assert_int_eq(apply(0, -2), 0);
	ck_assert_str_eq(get(pol_file(0, "energy_performance_preference")), "power");
	ck_assert_int_eq(apply(0, 0), 0);
	ck_assert_str_eq(get(pol_file(0, "energy_performance_preference")), "default");
	backend_stop();
	tree_drop();
}
END_TEST

START_TEST(range_levels_and_reset)
{
	tree_new();
	policy_new(0, "0\n", (int[]){ 0 }, 1);
	range_files(0);
	backend_start();
	/* The hardware's 800..3000 MHz in steps, inside the window 1000..2800 found. */
	static const char *const want[5][2] = {
		{ "1000000", "1000000" }, /* -2: max at the window's min */
		{ "1000000", "1900000" }, /* -1: max at 1/2 of the hardware's range */
		{ "1000000", "2800000" }, /* 0 */
		{ "2450000", "2800000" }, /* +1: min at 3/4 */
		{ "2800000", "2800000" }, /* +2: min at the window's max */
	};
	static const int order[] = { 2, -2, 1, -1, 0, -2, 2, 0, 1 };
	for (unsigned i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		int l = order[i];
		ck_assert_msg(apply(0, l) == 0, "level %d: %s", l, why.s);
		assert_window(0, want[l + 2][0], want[l + 2][1]);
	}
	ck_assert_int_eq(ma_hw_cpufreq.reset(priv, &why), 0);
	assert_window(0, "1000000", "2800000");
	backend_stop();
	tree_drop();
}
END_TEST

/* A preference list without the values used: the window, as on acpi-cpufreq. */
START_TEST(incomplete_preferences_use_the_window)
{
	tree_new();
	policy_new(0, "0\n", (int[]){ 0 }, 1);
	range_files(0);
	epp_files(0, "default performance\n", "default\n");
	backend_start();
	ck_assert_int_eq(apply(0, 2), 0);
	assert_window(0, "2800000", "2800000");
	ck_assert_str_eq(get(pol_file(0, "energy_performance_preference")), "default");
	ck_assert_int_eq(ma_hw_cpufreq.reset(priv, &why), 0);
	assert_window(0, "1000000", "2800000");
	backend_stop();
	tree_drop();
}
END_TEST

/* Under the performance governor the preference is refused (EBUSY): the window. */
START_TEST(performance_governor_uses_the_window)
{
	tree_new();
	policy_new(0, "0\n", (int[]){ 0 }, 1);
	range_files(0);
	epp_files(0, EPP_PREFS "\n", "performance\n");
	put(pol_file(0, "scaling_governor"), "performance\n");
	backend_start();
	ck_assert_int_eq(apply(0, -1), 0);
	assert_window(0, "1000000", "1900000");
	ck_assert_str_eq(get(pol_file(0, "energy_performance_preference")), "performance");
	ck_assert_int_eq(ma_hw_cpufreq.reset(priv, &why), 0);
	assert_window(0, "1000000", "2800000");
	/* Another governor: the preference. */
	put(pol_file(0, "scaling_governor"), "powersave\n");
	ck_assert_int_eq(apply(0, -1), 0);
	assert_window(0, "1000000", "2800000");
	ck_assert_str_eq(get(pol_file(0, "energy_performance_preference")), "balance_power");
	backend_stop();
	tree_drop();
}
END_TEST

/* Policy 0 drives CPUs 0 and 1, policy 2 CPUs 2 and 3 (CPU 3 never asks): each is set to
 * the highest level its CPUs ask, one that asked nothing counting as 0. */
START_TEST(shared_policy_takes_the_highest)
{
	tree_new();
	policy_new(0, "0 1\n", (int[]){ 0, 1 }, 2);
	policy_new(2, "2-3\n", (int[]){ 2, 3 }, 2);
	for (int p = 0; p <= 2; p += 2) {
		range_files(p);
		epp_files(p, EPP_PREFS "\n", "default\n");
	}
	backend_start();
	char p0[128], p2[128];
	snprintf(p0, sizeof(p0), "%s", pol_file(0, "energy_performance_preference"));
	snprintf(p2, sizeof(p2), "%s", pol_file(2, "energy_performance_preference"));
	static const struct {
		int cpu, level;
		const char *policy0;
	} steps[] = {
		{ 0, 2, "performance" },
		{ 1, -1, "performance" },   /* CPU 0 still asks +2 */
		{ 0, -2, "balance_power" }, /* the highest: CPU 1's -1 */
		{ 1, -2, "power" },
		{ 0, 0, "default" },
		{ 0, 1, "balance_performance" },
	};
	for (unsigned i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		ck_assert_msg(apply(steps[i].cpu, steps[i].level) == 0, "CPU %d level %d: %s", steps[i].cpu,
			      steps[i].level, why.s);
		ck_assert_msg(!strcmp(get(p0), steps[i].policy0), "step %u: policy0 reads %s, expected %s", i, get(p0),
			      steps[i].policy0);
	}
	ck_assert_int_eq(apply(2, -2), 0);
	ck_assert_str_eq(get(p2), "default"); /* CPU 3 is not slowed down */
	ck_assert_int_eq(apply(2, 1), 0);
	ck_assert_str_eq(get(p2), "balance_performance");
	ck_assert_int_eq(apply(2, 2), 0);
	ck_assert_str_eq(get(p2), "performance");
	ck_assert_int_eq(ma_hw_cpufreq.reset(priv, &why), 0);
	ck_assert_str_eq(get(p0), "default");
	ck_assert_str_eq(get(p2), "default");
	/* After reset what the CPUs asked is forgotten (CPU 0's +1 would keep policy 0 at
	 * balance_performance): both must ask again to lower it. */
	ck_assert_int_eq(apply(1, -2), 0);
	ck_assert_str_eq(get(p0), "default");
	ck_assert_int_eq(apply(0, -2), 0);
	ck_assert_str_eq(get(p0), "power");
	backend_stop();
	tree_drop();
}
END_TEST

START_TEST(related_cpus_must_agree)
{
	tree_new();
	policy_new(0, "0 1\n", (int[]){ 0 }, 1);
	policy_new(1, "1\n", (int[]){ 1 }, 1);
	range_files(0);
	range_files(1);
	backend_start();
	ck_assert_int_eq(apply(1, 1), 0);
	ck_assert_int_eq(apply(0, 1), EINVAL);
	ASSERT_WHY("cpu0/cpufreq/related_cpus reads '0 1', which overlaps the policy of CPU 1");
	assert_window(0, "1000000", "2800000");
	backend_stop();
	tree_drop();
}
END_TEST

START_TEST(garbage_names_the_file_and_changes_nothing)
{
	tree_new();
	policy_new(0, "0\n", (int[]){ 0 }, 1);
	policy_new(1, "one\n", (int[]){ 1 }, 1);
	range_files(0);
	range_files(1);
	put(pol_file(0, "scaling_min_freq"), "1.2 GHz\n");
	backend_start();
	ck_assert_int_eq(apply(0, 2), EINVAL);
	ASSERT_WHY("VP 0 on CPU 0, level +2: ");
	ASSERT_WHY("cpu0/cpufreq/scaling_min_freq reads '1.2 GHz': expected a frequency in kHz");
	ck_assert_str_eq(get(pol_file(0, "scaling_min_freq")), "1.2 GHz");
	ck_assert_str_eq(get(pol_file(0, "scaling_max_freq")), "2800000");
	ck_assert_int_eq(apply(1, -1), EINVAL);
	ASSERT_WHY("cpu1/cpufreq/related_cpus reads 'one': expected CPU numbers");
	assert_window(1, "1000000", "2800000");
	backend_stop();
	tree_drop();
}
END_TEST

/* The second of two writes fails: the first is undone. */
START_TEST(failed_write_leaves_the_window)
{
	tree_new();
	policy_new(0, "0\n", (int[]){ 0 }, 1);
	range_files(0);
	backend_start();
	ck_assert_int_eq(apply(0, 2), 0);
	assert_window(0, "2800000", "2800000");
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", root, pol_file(0, "scaling_max_freq"));
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	/* +2 to -1: the window comes down, its bottom first (1000), then its top (1900). */
	ck_assert_int_eq(apply(0, -1), EISDIR);
	ASSERT_WHY("cannot write '1900000' to ");
	ASSERT_WHY("cpu0/cpufreq/scaling_max_freq: Is a directory");
	ck_assert_str_eq(get(pol_file(0, "scaling_min_freq")), "2800000");
	/* Still +2, whose way back to 0 writes the bottom alone. */
	ck_assert_int_eq(ma_hw_cpufreq.reset(priv, &why), 0);
	ck_assert_str_eq(get(pol_file(0, "scaling_min_freq")), "1000000");
	backend_stop();
	tree_drop();
}
END_TEST

/* reset says what it could not put back, and tries again the next time. */
START_TEST(failed_reset_is_kept)
{
	tree_new();
	policy_new(0, "0\n", (int[]){ 0 }, 1);
	range_files(0);
	backend_start();
	ck_assert_int_eq(apply(0, 2), 0);
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", root, pol_file(0, "scaling_min_freq"));
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	ck_assert_int_eq(ma_hw_cpufreq.reset(priv, &why), EISDIR);
	ASSERT_WHY("CPU 0's cpufreq policy back as it was: cannot write '1000000' to ");
	ck_assert_int_eq(rmdir(path), 0);
	put(pol_file(0, "scaling_min_freq"), "2800000\n");
	ck_assert_int_eq(ma_hw_cpufreq.reset(priv, &why), 0);
	assert_window(0, "1000000", "2800000");
	backend_stop();
	tree_drop();
}
END_TEST

START_TEST(bad_targets_and_levels)
{
	tree_new();
	policy_new(0, "0\n", (int[]){ 0 }, 1);
	range_files(0);
	backend_start();
	ck_assert_int_eq(apply(-1, 1), EINVAL);
	ASSERT_WHY("VP 3 is not bound to one CPU");
	ASSERT_WHY("not a synthetic MARCEL_TOPOLOGY");
	ck_assert_int_eq(apply(0, 3), EINVAL);
	ASSERT_WHY("level 3 is not a cpufreq level: it sets levels -2..+2");
	ck_assert_int_eq(apply(0, -3), EINVAL);
	ASSERT_WHY("level -3");
	/* A CPU without cpufreq. */
	ck_assert_int_eq(apply(5, 1), ENOENT);
	ASSERT_WHY("cpu5/cpufreq/related_cpus: No such file or directory");
	/* Level 0 on a CPU never set touches nothing: no error even there. */
	ck_assert_int_eq(apply(5, 0), 0);
	assert_window(0, "1000000", "2800000");
	backend_stop();
	tree_drop();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("hwprio cpufreq");
	TCase *tc = tcase_create("probe");
	tcase_add_test(tc, probe_missing_directory_is_absent);
	tcase_add_test(tc, probe_present_both_ways);
	tcase_add_test(tc, probe_garbage_names_the_file);
	tcase_add_test(tc, probe_unwritable_needs_privilege);
	tcase_add_test(tc, probe_this_machine);
	suite_add_tcase(s, tc);
	tc = tcase_create("apply");
	tcase_add_test(tc, epp_levels_and_reset);
	tcase_add_test(tc, epp_zero_is_as_found);
	tcase_add_test(tc, range_levels_and_reset);
	tcase_add_test(tc, incomplete_preferences_use_the_window);
	tcase_add_test(tc, performance_governor_uses_the_window);
	tcase_add_test(tc, shared_policy_takes_the_highest);
	tcase_add_test(tc, related_cpus_must_agree);
	tcase_add_test(tc, garbage_names_the_file_and_changes_nothing);
	tcase_add_test(tc, failed_write_leaves_the_window);
	tcase_add_test(tc, failed_reset_is_kept);
	tcase_add_test(tc, bad_targets_and_levels);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	snprintf(base, sizeof(base), "%s/check_hwprio_cpufreq.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(base) || chmod(base, 0755)) {
		fprintf(stderr, "check_hwprio_cpufreq: cannot make a directory %s: %s\n", base, strerror(errno));
		return 1;
	}
	int status = ma_check_run(suite());
	base_drop();
	return status;
}
