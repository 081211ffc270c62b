/*
 * Runtime options: MARCEL_* environment variables and --marcel-* arguments. A bad value
 * makes marcel_init fail (EINVAL, ENOENT for a missing topology file) with exactly one
 * line on stderr naming the variable, the value and what is accepted, and leaves nothing
 * behind: a correct marcel_init in the same process then succeeds. Good values take effect.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "ma_test.h"
#include "ma_idle_probe.h"

extern char **environ;

#define I2P(i) ((any_t)(intptr_t)(i))
#define P2I(p) ((int)(intptr_t)(p))

/* Every test starts from an environment without MARCEL_* variables (make check-valgrind
 * sets MA_TEST_VALGRIND, and a developer's shell may set others). */
static void clean_env(void)
{
	for (;;) {
		char **e;
		for (e = environ; e && *e; e++)
			if (!strncmp(*e, "MARCEL_", 7))
				break;
		if (!e || !*e)
			return;
		char name[256];
		size_t len = strcspn(*e, "=");
		ck_assert_uint_lt(len, sizeof(name));
		memcpy(name, *e, len);
		name[len] = 0;
		unsetenv(name);
	}
}

static char err_out[4096];

/* marcel_init with stderr captured into err_out. */
static int init_capture(int *argc, char **argv)
{
	fflush(stderr);
	FILE *tmp = tmpfile();
	ck_assert_ptr_nonnull(tmp);
	int saved = dup(STDERR_FILENO);
	ck_assert_int_ge(saved, 0);
	ck_assert_int_ge(dup2(fileno(tmp), STDERR_FILENO), 0);
	int r = marcel_init(argc, argv);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(tmp);
	size_t len = fread(err_out, 1, sizeof(err_out) - 1, tmp);
	err_out[len] = 0;
	fclose(tmp);
	return r;
}

static unsigned count_lines(const char *s)
{
	unsigned n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* Checks the one-line report: it names `name` and `value` and contains `accepted`. */
static void check_report(const char *name, const char *value, const char *accepted)
{
	ck_assert_msg(count_lines(err_out) == 1 && err_out[strlen(err_out) - 1] == '\n',
		      "expected exactly one line on stderr for %s='%s', got: '%s'", name, value, err_out);
	ck_assert_msg(strstr(err_out, name) != NULL, "%s not named in: %s", name, err_out);
	if (*value)
		ck_assert_msg(strstr(err_out, value) != NULL, "value '%s' not shown in: %s", value, err_out);
	else
		ck_assert_msg(strstr(err_out, "''") != NULL || strstr(err_out, "\"\"") != NULL,
			      "empty value not shown in: %s", err_out);
	ck_assert_msg(strstr(err_out, accepted) != NULL, "accepted values ('%s') not in: %s", accepted,
		      err_out);
}

/* After a failure, nothing is left running and a plain init works. */
static void check_clean_after_failure(void)
{
	ck_assert_uint_eq(marcel_nbvps(), 0);
	ck_assert_ptr_null(marcel_self());
	ck_assert_uint_eq(marcel_topo_nbitems(), 0);
	clean_env();
	int r = init_capture(NULL, NULL);
	ck_assert_msg(r == 0, "marcel_init after a failed one: %d (%s)", r, err_out);
	ck_assert_str_eq(err_out, "");
	ck_assert_uint_gt(marcel_nbvps(), 0);
	marcel_end();
}

static void expect_env_error(const char *name, const char *value, int err, const char *accepted)
{
	clean_env();
	setenv(name, value, 1);
	int r = init_capture(NULL, NULL);
	ck_assert_msg(r == err, "%s='%s': marcel_init returned %d, expected %d (stderr: %s)", name, value,
		      r, err, err_out);
	check_report(name, value, accepted);
	check_clean_after_failure();
}

#define ACC_NVP "from 1 to 1024"
#define ACC_SMT "0 (one worker per core) or 1"
#define ACC_TOPO "pack:2 numa:2 core:4 pu:2"
#define ACC_ARITY "from 2 to 1024"
#define ACC_STACK "16k to 1G"

START_TEST(test_env_nvp)
{
	const char *bad[] = { "abc", "0", "-1", "1025", "1.5", "", "2x", "99999999999999999999" };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		expect_env_error("MARCEL_NVP", bad[i], EINVAL, ACC_NVP);
}
END_TEST

START_TEST(test_env_smt)
{
	const char *bad[] = { "2", "yes", "", "-1", "01x" };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		expect_env_error("MARCEL_SMT", bad[i], EINVAL, ACC_SMT);
}
END_TEST

START_TEST(test_env_topology)
{
	expect_env_error("MARCEL_TOPOLOGY", "bogus:3", EINVAL, ACC_TOPO);
	expect_env_error("MARCEL_TOPOLOGY", "", EINVAL, ACC_TOPO);
	expect_env_error("MARCEL_TOPOLOGY", "core:0", EINVAL, ACC_TOPO);
	/* A missing file is ENOENT; the line names the file. */
	expect_env_error("MARCEL_TOPOLOGY", "@/nonexistent.xml", ENOENT, "/nonexistent.xml");
}
END_TEST

START_TEST(test_env_topology_bad_xml)
{
	char dir[] = "/tmp/marcel-opt-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/bad.xml", dir);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("<?xml version=\"1.0\"?>\n<topology><object type=\"Nonsense\">\n", f);
	fclose(f);
	char spec[160];
	snprintf(spec, sizeof(spec), "@%s", path);
	/* hwloc may print its own diagnostics for a malformed file; only the code matters here. */
	clean_env();
	setenv("MARCEL_TOPOLOGY", spec, 1);
	int r = init_capture(NULL, NULL);
	ck_assert_int_eq(r, EINVAL);
	ck_assert_ptr_nonnull(strstr(err_out, "MARCEL_TOPOLOGY"));
	ck_assert_ptr_nonnull(strstr(err_out, path));
	unlink(path);
	rmdir(dir);
	check_clean_after_failure();
}
END_TEST

START_TEST(test_env_maxarity)
{
	const char *bad[] = { "1", "x", "0", "", "-2", "1025" };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		expect_env_error("MARCEL_MAXARITY", bad[i], EINVAL, ACC_ARITY);
}
END_TEST

START_TEST(test_env_stack_size)
{
	const char *bad[] = { "1k", "2G", "12q", "-5", "", "16383", "k", "64kk", "1025M" };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		expect_env_error("MARCEL_STACK_SIZE", bad[i], EINVAL, ACC_STACK);
}
END_TEST

#define ACC_SPIN "from 0 (block at once) to 1000000, or 'auto'"

START_TEST(test_env_spin)
{
	const char *bad[] = { "-1", "abc", "1000001", "", "10x", "Auto" };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		expect_env_error("MARCEL_SPIN", bad[i], EINVAL, ACC_SPIN);
}
END_TEST

#define ACC_IDLE_SPIN "microseconds an idle worker polls before sleeping, from 0 to 1000000, or 'auto'"

START_TEST(test_env_idle_spin)
{
	const char *bad[] = { "-1", "abc", "1000001", "", "2ms", "Auto", " 5" };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		expect_env_error("MARCEL_IDLE_SPIN", bad[i], EINVAL, ACC_IDLE_SPIN);
}
END_TEST

static void expect_argv_error(char **argv, int argc, const char *flag, const char *value,
			      const char *accepted)
{
	clean_env();
	int r = init_capture(&argc, argv);
	ck_assert_msg(r == EINVAL, "%s %s: marcel_init returned %d (stderr: %s)", flag, value, r, err_out);
	check_report(flag, value, accepted);
	check_clean_after_failure();
}

START_TEST(test_argv_errors)
{
	char *a1[] = { (char *)"prog", (char *)"--marcel-nvp", (char *)"abc", NULL };
	expect_argv_error(a1, 3, "--marcel-nvp", "abc", ACC_NVP);
	char *a2[] = { (char *)"prog", (char *)"--marcel-nvp=0", NULL };
	expect_argv_error(a2, 2, "--marcel-nvp", "0", ACC_NVP);
	char *a3[] = { (char *)"prog", (char *)"x", (char *)"--marcel-smt", (char *)"2", NULL };
	expect_argv_error(a3, 4, "--marcel-smt", "2", ACC_SMT);
	char *a4[] = { (char *)"prog", (char *)"--marcel-stack-size", (char *)"1k", NULL };
	expect_argv_error(a4, 3, "--marcel-stack-size", "1k", ACC_STACK);
	char *a5[] = { (char *)"prog", (char *)"--marcel-topology", (char *)"bogus:3", NULL };
	expect_argv_error(a5, 3, "--marcel-topology", "bogus:3", ACC_TOPO);
	char *a6[] = { (char *)"prog", (char *)"--marcel-maxarity=1", NULL };
	expect_argv_error(a6, 2, "--marcel-maxarity", "1", ACC_ARITY);

	/* A flag without its value. */
	char *a7[] = { (char *)"prog", (char *)"--marcel-nvp", NULL };
	int argc = 2;
	clean_env();
	ck_assert_int_eq(init_capture(&argc, a7), EINVAL);
	ck_assert_uint_eq(count_lines(err_out), 1);
	ck_assert_ptr_nonnull(strstr(err_out, "--marcel-nvp"));
	ck_assert_ptr_nonnull(strstr(err_out, ACC_NVP));
	check_clean_after_failure();

	/* An unknown flag: the line lists the accepted ones. */
	char *a8[] = { (char *)"prog", (char *)"--marcel-unknown", (char *)"3", NULL };
	argc = 3;
	clean_env();
	ck_assert_int_eq(init_capture(&argc, a8), EINVAL);
	ck_assert_uint_eq(count_lines(err_out), 1);
	ck_assert_ptr_nonnull(strstr(err_out, "--marcel-unknown"));
	const char *flags[] = { "--marcel-nvp", "--marcel-smt", "--marcel-topology", "--marcel-maxarity",
				"--marcel-stack-size" };
	for (unsigned i = 0; i < sizeof(flags) / sizeof(*flags); i++)
		ck_assert_msg(strstr(err_out, flags[i]) != NULL, "%s not listed in: %s", flags[i], err_out);
	check_clean_after_failure();
}
END_TEST

START_TEST(test_unknown_env_warns)
{
	clean_env();
	setenv("MARCEL_FOO", "1", 1);
	ck_assert_int_eq(init_capture(NULL, NULL), 0);
	ck_assert_uint_gt(marcel_nbvps(), 0);
	marcel_end();
	ck_assert_uint_eq(count_lines(err_out), 1);
	ck_assert_ptr_nonnull(strstr(err_out, "MARCEL_FOO"));
	ck_assert_ptr_nonnull(strstr(err_out, "warning"));
	clean_env();
}
END_TEST

/* ------------------------------------------------------------------ good values */

static unsigned init_with(const char *topology, const char *name, const char *value)
{
	clean_env();
	if (topology)
		setenv("MARCEL_TOPOLOGY", topology, 1);
	if (name)
		setenv(name, value, 1);
	int r = init_capture(NULL, NULL);
	ck_assert_msg(r == 0, "%s=%s on %s: marcel_init returned %d (%s)", name, value,
		      topology ? topology : "this machine", r, err_out);
	ck_assert_msg(err_out[0] == 0, "unexpected stderr: %s", err_out);
	return marcel_nbvps();
}

static any_t vp_of(any_t arg)
{
	(void)arg;
	return I2P(marcel_current_vp());
}

/* Every VP runs threads bound to it. */
static void check_vps_run(unsigned n)
{
	for (unsigned vp = 0; vp < n; vp++) {
		marcel_attr_t a;
		marcel_t t;
		any_t r;
		ck_assert_int_eq(marcel_attr_init(&a), 0);
		ck_assert_int_eq(marcel_attr_setvpset(&a, MARCEL_VPSET_VP(vp)), 0);
		ck_assert_int_eq(marcel_create(&t, &a, vp_of, NULL), 0);
		ck_assert_int_eq(marcel_join(t, &r), 0);
		ck_assert_int_eq(P2I(r), (int)vp);
	}
}

START_TEST(test_good_nvp)
{
	ck_assert_uint_eq(init_with(NULL, "MARCEL_NVP", "1"), 1);
	check_vps_run(1);
	marcel_end();
	ck_assert_uint_eq(init_with("numa:4 core:4", "MARCEL_NVP", "3"), 3);
	check_vps_run(3);
	marcel_end();
	ck_assert_uint_eq(init_with("numa:4 core:4", NULL, NULL), 16);
	marcel_end();
	/* Arguments win over the environment. */
	clean_env();
	setenv("MARCEL_NVP", "2", 1);
	setenv("MARCEL_TOPOLOGY", "numa:4 core:4", 1);
	char *argv[] = { (char *)"prog", (char *)"--marcel-nvp", (char *)"5", NULL };
	int argc = 3;
	ck_assert_int_eq(init_capture(&argc, argv), 0);
	ck_assert_int_eq(argc, 1);
	ck_assert_uint_eq(marcel_nbvps(), 5);
	marcel_end();
	clean_env();
}
END_TEST

START_TEST(test_good_smt)
{
	ck_assert_uint_eq(init_with("pack:2 core:2 pu:2", "MARCEL_SMT", "1"), 8);
	check_vps_run(8);
	marcel_end();
	ck_assert_uint_eq(init_with("pack:2 core:2 pu:2", "MARCEL_SMT", "0"), 4);
	marcel_end();
	ck_assert_uint_eq(init_with("pack:2 core:2 pu:2", NULL, NULL), 4);
	marcel_end();
	clean_env();
}
END_TEST

/* Recurses in 1 KiB frames down to 0 and returns depth; the volatile array keeps each
 * frame on the stack and the addition after the call prevents a tail call. */
static __attribute__((noinline)) int use_stack(int depth)
{
	volatile char frame[1024];
	frame[0] = (char)depth;
	frame[sizeof(frame) - 1] = (char)depth;
	if (depth <= 0)
		return 0;
	int r = use_stack(depth - 1);
	return r + (frame[0] == (char)depth && frame[sizeof(frame) - 1] == (char)depth);
}

static any_t stack_user(any_t arg)
{
	int depth = P2I(arg);
	return I2P(use_stack(depth));
}

static void check_stack(const char *value, size_t bytes)
{
	ck_assert_uint_gt(init_with(NULL, "MARCEL_STACK_SIZE", value), 0);
	/* About 80% of the stack, in frames of a little over 1 KiB. */
	int depth = (int)(bytes * 8 / 10 / 1100);
	marcel_t t;
	any_t r;
	ck_assert_int_eq(marcel_create(&t, NULL, stack_user, I2P(depth)), 0);
	ck_assert_int_eq(marcel_join(t, &r), 0);
	ck_assert_int_eq(P2I(r), depth);
	marcel_end();
}

START_TEST(test_good_stack_size)
{
	check_stack("64k", 64 * 1024);
	check_stack("1M", 1024 * 1024);
	check_stack("65536", 64 * 1024);
	check_stack("16k", 16 * 1024);
	check_stack("2MB", 2 * 1024 * 1024);
	clean_env();
}
END_TEST

START_TEST(test_good_topology_xml)
{
	if (system("command -v lstopo-no-graphics >/dev/null 2>&1") != 0) {
		printf("check_options: lstopo-no-graphics not found; MARCEL_TOPOLOGY=@file.xml not tested\n");
		return;
	}
	char dir[] = "/tmp/marcel-opt-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char path[128], cmd[512], spec[160];
	snprintf(path, sizeof(path), "%s/topo.xml", dir);
	snprintf(cmd, sizeof(cmd), "lstopo-no-graphics -i 'pack:2 core:2 pu:1' --of xml %s 2>/dev/null", path);
	/* Run it without our MARCEL_* and HWLOC_* variables in the way. */
	clean_env();
	ck_assert_int_eq(system(cmd), 0);
	snprintf(spec, sizeof(spec), "@%s", path);
	ck_assert_uint_eq(init_with(spec, NULL, NULL), 4);
	ck_assert_int_eq(marcel_topo_is_fake(), 1);
	check_vps_run(4);
	marcel_end();
	/* The argument form. */
	char *argv[] = { (char *)"prog", (char *)"--marcel-topology", spec, NULL };
	int argc = 3;
	ck_assert_int_eq(init_capture(&argc, argv), 0);
	ck_assert_int_eq(argc, 1);
	ck_assert_uint_eq(marcel_nbvps(), 4);
	marcel_end();
	unlink(path);
	rmdir(dir);
}
END_TEST

/* Each good value of variable name starts the runtime; flag with flag_value does too, and
 * is removed from argv. */
static void expect_good(const char *name, const char *const *good, unsigned n, const char *flag,
			const char *flag_value)
{
	for (unsigned i = 0; i < n; i++) {
		ck_assert_uint_gt(init_with(NULL, name, good[i]), 0);
		marcel_end();
	}
	clean_env();
	char *argv[] = { (char *)"prog", (char *)flag, (char *)flag_value, (char *)"x", NULL };
	int argc = 4;
	ck_assert_int_eq(init_capture(&argc, argv), 0);
	ck_assert_int_eq(argc, 2);
	ck_assert_str_eq(argv[1], "x");
	marcel_end();
	clean_env();
}

START_TEST(test_good_spin)
{
	const char *good[] = { "0", "auto", "500", "1000000" };
	expect_good("MARCEL_SPIN", good, sizeof(good) / sizeof(*good), "--marcel-spin", "7");
}
END_TEST

/* ma_idle_probe_ms() under MARCEL_IDLE_SPIN=value (unset when NULL), on topology (this
 * machine when NULL) with nvp VPs (the default when 0). */
static double idle_cpu_with(const char *value, const char *topology, unsigned nvp)
{
	clean_env();
	char n[16];
	snprintf(n, sizeof(n), "%u", nvp);
	if (value)
		setenv("MARCEL_IDLE_SPIN", value, 1);
	if (topology)
		setenv("MARCEL_TOPOLOGY", topology, 1);
	if (nvp)
		setenv("MARCEL_NVP", n, 1);
	ck_assert_int_eq(init_capture(NULL, NULL), 0);
	double ms = ma_idle_probe_ms();
	marcel_end();
	clean_env();
	return ms;
}

/* The long poll burns many times what the short one does (on the 2-core VM: 160 ms
 * against 4-8), whatever the load or the sanitizer, which slow the short probe's
 * wake-ups and cut the pollers' share of the processors alike: runs are compared with
 * each other, not with fixed figures. Not under valgrind, which runs one thread at a
 * time. */
#define POLL_FACTOR 3.0
/* Idle CPU time is what the idle workers got of the processors: other processes running
 * meanwhile (a loaded CI machine) take it from the polling ones and blur a ratio. A
 * measurement is taken again, up to this many times, before it counts as a failure; a
 * setting that does not take effect fails every time. */
#define MEASURE_ATTEMPTS 3

START_TEST(test_good_idle_spin)
{
	const char *good[] = { "0", "auto", "50", "1000000" };
	expect_good("MARCEL_IDLE_SPIN", good, sizeof(good) / sizeof(*good), "--marcel-idle-spin", "0");
	if (getenv("MA_TEST_VALGRIND"))
		return;
	/* It takes effect: workers that sleep at once burn nothing; workers that poll for a
	 * second never sleep through the 200 ms. */
	double sleeping = 0, polling = 0;
	for (int attempt = 0; attempt < MEASURE_ATTEMPTS; attempt++) {
		sleeping = idle_cpu_with("0", NULL, 0);
		polling = idle_cpu_with("1000000", NULL, 0);
		if (polling > 50 && polling > POLL_FACTOR * sleeping)
			break;
	}
	ck_assert_msg(polling > 50 && polling > POLL_FACTOR * sleeping, "idle CPU time while main slept "
		      "200 ms: %.1f ms with MARCEL_IDLE_SPIN=0, %.1f ms with 1000000", sleeping, polling);
}
END_TEST

/* auto: the long poll when every VP has a processor of its own, the short one where VPs
 * share processors: a synthetic topology, more VPs than units (cores), or after
 * marcel_set_processors_shared(1); a value given stays. */
START_TEST(test_idle_spin_auto)
{
	if (getenv("MA_TEST_VALGRIND"))
		return;
	clean_env();
	ck_assert_int_eq(init_capture(NULL, NULL), 0);
	unsigned units = marcel_nbvps();  /* by default, one VP per core */
	marcel_end();
	double own = 0, fake = 0, wrapped = 0;
	for (int attempt = 0; attempt < MEASURE_ATTEMPTS; attempt++) {
		own = idle_cpu_with(NULL, NULL, 0);
		fake = idle_cpu_with(NULL, "core:2", 2);
		wrapped = idle_cpu_with(NULL, NULL, 2 * units);
		if (own > POLL_FACTOR * fake && own > POLL_FACTOR * wrapped)
			break;
	}
	ck_assert_msg(own > POLL_FACTOR * fake && own > POLL_FACTOR * wrapped,
		      "auto: %.1f ms of idle CPU with a VP per core, %.1f on a synthetic topology, %.1f "
		      "with %u VPs on %u cores (expected the first many times the others)", own, fake,
		      wrapped, 2 * units, units);

	/* Shared, then not: each worker follows from its next idle period. */
	double shared = 0, unshared = 0;
	for (int attempt = 0; attempt < MEASURE_ATTEMPTS; attempt++) {
		clean_env();
		ck_assert_int_eq(init_capture(NULL, NULL), 0);
		ck_assert_int_eq(marcel_set_processors_shared(1), 0);
		shared = ma_idle_probe_ms();
		ck_assert_int_eq(marcel_set_processors_shared(0), 0);
		unshared = ma_idle_probe_ms();
		marcel_end();
		if (unshared > POLL_FACTOR * shared)
			break;
	}
	ck_assert_msg(unshared > POLL_FACTOR * shared, "idle CPU time: %.1f ms shared, %.1f ms no longer "
		      "shared", shared, unshared);
	/* A value given in MARCEL_IDLE_SPIN is kept when the processors are shared. */
	double kept = 0;
	for (int attempt = 0; attempt < MEASURE_ATTEMPTS; attempt++) {
		clean_env();
		setenv("MARCEL_IDLE_SPIN", "2000", 1);
		ck_assert_int_eq(init_capture(NULL, NULL), 0);
		ck_assert_int_eq(marcel_set_processors_shared(1), 0);
		kept = ma_idle_probe_ms();
		marcel_end();
		clean_env();
		if (kept > POLL_FACTOR * shared)
			break;
	}
	ck_assert_msg(kept > POLL_FACTOR * shared, "MARCEL_IDLE_SPIN=2000, shared: %.1f ms of idle CPU (auto, "
		      "shared: %.1f)", kept, shared);
}
END_TEST

START_TEST(test_processors_shared_args)
{
	clean_env();
	ck_assert_int_eq(marcel_set_processors_shared(1), EPERM);  /* not running */
	ck_assert_int_eq(init_capture(NULL, NULL), 0);
	ck_assert_int_eq(marcel_set_processors_shared(2), EINVAL);
	ck_assert_int_eq(marcel_set_processors_shared(-1), EINVAL);
	ck_assert_int_eq(marcel_set_processors_shared(0), 0);
	marcel_end();
	ck_assert_int_eq(marcel_set_processors_shared(0), EPERM);
}
END_TEST

START_TEST(test_good_maxarity)
{
	ck_assert_uint_eq(init_with("core:8", "MARCEL_MAXARITY", "2"), 8);
	unsigned groups = 0, nb = marcel_topo_nbitems();
	for (unsigned i = 0; i < nb; i++) {
		struct marcel_topo_item it;
		ck_assert_int_eq(marcel_topo_get_item(i, &it), 0);
		ck_assert_msg(it.arity <= 2, "item %s has %u children", it.name, it.arity);
		groups += !!(it.kinds & MARCEL_LEVEL_GROUP);
	}
	ck_assert_uint_gt(groups, 0);
	check_vps_run(8);
	marcel_end();

	/* The default bounds the fan-out at 8: "core:8" needs no group. */
	ck_assert_uint_eq(init_with("core:8", NULL, NULL), 8);
	nb = marcel_topo_nbitems();
	groups = 0;
	for (unsigned i = 0; i < nb; i++) {
		struct marcel_topo_item it;
		ck_assert_int_eq(marcel_topo_get_item(i, &it), 0);
		groups += !!(it.kinds & MARCEL_LEVEL_GROUP);
	}
	ck_assert_uint_eq(groups, 0);
	marcel_end();
	clean_env();
}
END_TEST


static void *return_arg(void *arg)
{
	return arg;
}

/* MARCEL_DEBUG_FAIL makes one start-up step of marcel_init fail (startup.c). Every step
 * in turn, as the error for a wrong name lists them (so a step added to the table is
 * tested here without a change): marcel_init returns ECANCELED and says which step,
 * nothing is left running (and, under AddressSanitizer, nothing leaks), and the next
 * marcel_init starts a runtime that runs a thread. */
START_TEST(test_debug_fail_each_step)
{
	setenv("MARCEL_DEBUG", "1", 1);
	setenv("MARCEL_DEBUG_FAIL", "no-such-step", 1);
	ck_assert_int_eq(init_capture(NULL, NULL), EINVAL);
	check_report("MARCEL_DEBUG_FAIL", "no-such-step", "one of:");
	char steps[sizeof(err_out)];
	strcpy(steps, strstr(err_out, "one of:") + strlen("one of:"));
	unsigned n = 0;
	for (char *save, *name = strtok_r(steps, " \n", &save); name; name = strtok_r(NULL, " \n", &save), n++) {
		setenv("MARCEL_DEBUG", "1", 1);
		setenv("MARCEL_DEBUG_FAIL", name, 1);
		int r = init_capture(NULL, NULL);
		ck_assert_msg(r == ECANCELED, "MARCEL_DEBUG_FAIL=%s: marcel_init returned %d (stderr: %s)", name, r,
			      err_out);
		char said[128];
		snprintf(said, sizeof(said), "MARCEL_DEBUG_FAIL=%s:", name);
		ck_assert_msg(strstr(err_out, said) != NULL, "the failing step is not named: %s", err_out);
		ck_assert_uint_eq(marcel_nbvps(), 0);
		ck_assert_ptr_null(marcel_self());
		ck_assert_uint_eq(marcel_topo_nbitems(), 0);
		unsetenv("MARCEL_DEBUG_FAIL");
		r = init_capture(NULL, NULL);
		ck_assert_msg(r == 0, "marcel_init after MARCEL_DEBUG_FAIL=%s: %d (%s)", name, r, err_out);
		marcel_t t;
		void *ret = NULL;
		ck_assert_int_eq(marcel_create(&t, NULL, return_arg, &n), 0);
		ck_assert_int_eq(marcel_join(t, &ret), 0);
		ck_assert_ptr_eq(ret, &n);
		marcel_end();
	}
	/* topology, trace, runtime, ..., carriers, preemption, signals: a list that lost its
	 * steps would make this test pass vacuously. */
	ck_assert_uint_ge(n, 10);
	/* Without MARCEL_DEBUG it is not read, and not warned about either. */
	clean_env();
	setenv("MARCEL_DEBUG_FAIL", "carriers", 1);
	ck_assert_int_eq(init_capture(NULL, NULL), 0);
	ck_assert_str_eq(err_out, "");
	marcel_end();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("options");
	TCase *tc = tcase_create("bad");
	tcase_add_checked_fixture(tc, clean_env, clean_env);
	tcase_add_test(tc, test_env_nvp);
	tcase_add_test(tc, test_env_smt);
	tcase_add_test(tc, test_env_topology);
	tcase_add_test(tc, test_env_topology_bad_xml);
	tcase_add_test(tc, test_env_maxarity);
	tcase_add_test(tc, test_env_stack_size);
	tcase_add_test(tc, test_env_spin);
	tcase_add_test(tc, test_env_idle_spin);
	tcase_add_test(tc, test_argv_errors);
	tcase_add_test(tc, test_unknown_env_warns);
	tcase_add_test(tc, test_debug_fail_each_step);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);

	tc = tcase_create("good");
	tcase_add_checked_fixture(tc, clean_env, clean_env);
	tcase_add_test(tc, test_good_nvp);
	tcase_add_test(tc, test_good_smt);
	tcase_add_test(tc, test_good_stack_size);
	tcase_add_test(tc, test_good_topology_xml);
	tcase_add_test(tc, test_good_maxarity);
	tcase_add_test(tc, test_good_spin);
	tcase_add_test(tc, test_good_idle_spin);
	tcase_add_test(tc, test_idle_spin_auto);
	tcase_add_test(tc, test_processors_shared_args);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return ma_test_run(s);
}
