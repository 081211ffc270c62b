/*
 * libmarcel-mpi and examples/mpi-conduction, under mpirun on this machine:
 * - the MPI stencil prints, on 1, 2 and 4 ranks (4 oversubscribed on 2 cores), with
 *   several thread counts, both thread levels and several strategies, the checksum that
 *   conduction/simple prints for the same options;
 * - marcel_mpi_wait* do not hold the worker: ULTs waiting on 2 VPs while a ULT on each
 *   of those VPs keeps running (tests/mpi-helper.c, this binary run under mpirun);
 * - marcel_mpi_init refuses an insufficient thread level with a message naming both;
 * - bad options exit with status 2, naming the option.
 *
 * Every mpirun has a time limit (timeout), so a hang fails the test instead of CI. The
 * options given to mpirun, and why, are in MPIRUN_OPTS. Running as root needs
 * --allow-run-as-root. Without mpirun the suite is skipped (status 77), saying so.
 */
#define _GNU_SOURCE
#include <sys/wait.h>
#include "ma_test.h"

#ifndef MA_EXAMPLES_DIR
#error "MA_EXAMPLES_DIR (the build's examples directory) must be defined"
#endif
#ifndef MA_MPIRUN
#error "MA_MPIRUN (mpirun's path, empty if none) must be defined"
#endif
#ifndef MA_CHECK_MPI
#error "MA_CHECK_MPI (this program's path in the build tree) must be defined"
#endif

int ma_mpi_helper(int argc, char **argv);  /* tests/mpi-helper.c */

#define SIMPLE MA_EXAMPLES_DIR "/conduction/simple"
#define STENCIL MA_EXAMPLES_DIR "/mpi-conduction/mpi-conduction"
/* --oversubscribe: 4 ranks on 2 cores. --bind-to none: every rank may use every core (the
 * helper wants 2 VPs in one rank); marcel binds its workers itself. btl self,vader and
 * pml ob1: shared memory only, the one network there is; it also skips probing for
 * others, which takes time and may warn. */
#define MPIRUN_OPTS "--allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader --mca pml ob1"
/* Seconds before timeout kills a run (then 5 more before SIGKILL). Generous: sanitizer
 * builds are slow, and a 2-core machine shared with other jobs may be slower still. */
#define LIMIT "120"
#define SMALL "--size 96 --iters 50"
#define SMALL3D "--3d --size 24x20x16 --iters 20"

#ifdef MA_TEST_TSAN
/*
 * ThreadSanitizer cannot see Open MPI's synchronisation (the library is not instrumented).
 * At MPI_THREAD_MULTIPLE, a message to a thread often lands in its buffer during another
 * thread's MPI_Test (whichever polls first makes the progress): TSan sees that memcpy,
 * then the owner reading its buffer after its own MPI_Test reported completion, with
 * nothing in between that it knows orders them, and reports a race. At
 * MPI_THREAD_SERIALIZED, libmarcel-mpi's mutex (instrumented marcel code) orders every
 * MPI call. So this build runs everything at that level, and skips the runs that test
 * MPI_THREAD_MULTIPLE itself, saying so.
 */
#define LEVEL " --thread-level serialized"
#else
#define LEVEL ""
#endif

/* The end of a long output (sanitizer reports...): Check's messages have a size limit. */
static const char *tail(const char *out)
{
	size_t len = strlen(out);
	return len > 3000 ? out + len - 3000 : out;
}

/* Runs cmd with stderr merged; returns its output and wait status. */
static char *run(const char *cmd, int *status)
{
	char full[4096];
	snprintf(full, sizeof(full), "%s 2>&1", cmd);
	return ma_test_run_capture(full, status);
}

/* Runs `mpirun -np NP [mpirun args] prog args` under the time limit. */
static char *mpirun(int np, const char *mpi_args, const char *prog, const char *args, int *status)
{
	char cmd[3072];
	/* No standard input: mpirun forwards it to rank 0, and CI has none to give. */
	snprintf(cmd, sizeof(cmd), "timeout -k 5 " LIMIT " " MA_MPIRUN " " MPIRUN_OPTS " -np %d %s %s %s%s </dev/null",
		 np, mpi_args, prog, args, strcmp(prog, STENCIL) == 0 ? LEVEL : "");
	char *out = run(cmd, status);
	ck_assert_msg(!WIFEXITED(*status) || WEXITSTATUS(*status) != 124,
		      "%s: no result within " LIMIT " s (a wait that blocks its worker hangs):\n%s", cmd, tail(out));
	return out;
}

/* The 16 hex digits after "checksum " in out; fails the test without them. */
static void parse_checksum(const char *what, const char *out, char sum[17])
{
	const char *line = strstr(out, "checksum ");
	ck_assert_msg(line != NULL && strspn(line + 9, "0123456789abcdef") == 16, "%s printed no checksum:\n%s",
		      what, tail(out));
	memcpy(sum, line + 9, 16);
	sum[16] = 0;
}

/* conduction/simple's checksum for args: the single-process reference. */
static void reference(const char *args, char sum[17])
{
	char cmd[1024];
	int st;
	ck_assert_msg(access(SIMPLE, X_OK) == 0 && access(STENCIL, X_OK) == 0,
		      "examples not built: run make in the build's examples directory");
	snprintf(cmd, sizeof(cmd), SIMPLE " %s", args);
	char *out = run(cmd, &st);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %#x:\n%s", cmd, st, tail(out));
	parse_checksum(cmd, out, sum);
	free(out);
}

/* mpi-conduction on np ranks must print want, and say how many ranks it ran on. */
static void check_run(const char *want, int np, const char *mpi_args, const char *args, char *out, int st)
{
	char got[17], ranks[32];
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "-np %d %s %s: status %#x:\n%s", np, mpi_args, args,
		      st, tail(out));
	parse_checksum(args, out, got);
	ck_assert_msg(strcmp(got, want) == 0, "-np %d %s %s: checksum %s, conduction/simple's is %s:\n%s", np,
		      mpi_args, args, got, want, tail(out));
	snprintf(ranks, sizeof(ranks), " on %d rank%s", np, np > 1 ? "s" : "");
	ck_assert_msg(strstr(out, ranks) != NULL, "-np %d: the header does not say '%s':\n%s", np, ranks, tail(out));
	free(out);
}

static void expect(const char *want, int np, const char *mpi_args, const char *args)
{
	int st;
	char *out = mpirun(np, mpi_args, STENCIL, args, &st);
	check_run(want, np, mpi_args, args, out, st);
}

START_TEST(test_ranks_2d)
{
	char ref[17];
	reference(SMALL " --threads 4", ref);
	expect(ref, 1, "", SMALL " --threads 4");
	expect(ref, 2, "", SMALL " --threads 3");
	expect(ref, 2, "", SMALL " --threads 47");  /* one interior row per thread */
	expect(ref, 4, "", SMALL " --threads 5");
	expect(ref, 3, "", SMALL);                  /* default thread count, uneven rows */
	expect(ref, 2, "", "--thread-level serialized " SMALL " --threads 4");
	expect(ref, 4, "", SMALL " --thread-level serialized --threads 2");
}
END_TEST

START_TEST(test_ranks_3d)
{
	char ref[17];
	reference(SMALL3D " --threads 4", ref);
	expect(ref, 2, "", SMALL3D " --threads 3");
	expect(ref, 4, "", SMALL3D " --threads 2");
}
END_TEST

/* --imbalance: the costly band is placed by grid row, so it crosses the ranks' slabs as
 * it moves, and the result is conduction/simple's. */
START_TEST(test_imbalance)
{
	char ref[17];
	reference(SMALL " --imbalance --threads 4", ref);
	expect(ref, 2, "", SMALL " --imbalance --threads 3");
	expect(ref, 3, "-x MARCEL_BUBBLE_SCHEDULER=steal", SMALL " --imbalance --threads 5");
	reference(SMALL3D " --imbalance --threads 4", ref);
	expect(ref, 2, "", SMALL3D " --imbalance --threads 2");
}
END_TEST

START_TEST(test_strategies)
{
	static const char *const strategies[] = { "burst", "spread", "cache", "steal" };
	char ref[17], env[256];
	reference(SMALL " --threads 4", ref);
	for (unsigned s = 0; s < sizeof(strategies) / sizeof(strategies[0]); s++) {
		/* -x: mpirun passes the variable to every rank, on every node. */
		snprintf(env, sizeof(env), "-x MARCEL_BUBBLE_SCHEDULER=%s", strategies[s]);
		expect(ref, 2, env, SMALL " --threads 6");
	}
#ifndef MA_TEST_TSAN  /* which defers the signal that time slicing needs */
	/* Time slicing: threads preempted anywhere but inside MPI (marcel_mpi_enter()). Builds
	 * without preemption (the portable ucontext one) must refuse it in one clear line. */
	int st;
	char *out = mpirun(2, "-x MARCEL_TIMESLICE=200", STENCIL, SMALL " --threads 6", &st);
	if (strstr(out, "does not support preemption") != NULL) {
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) != 0 && strstr(out, "MARCEL_TIMESLICE=200") != NULL,
			      "refusal without naming the variable or failing:\n%s", tail(out));
		free(out);
	} else {
		check_run(ref, 2, "-x MARCEL_TIMESLICE=200", SMALL " --threads 6", out, st);
	}
#endif
	/* Several levels of bubbles: 8 workers per rank on a synthetic 4-NUMA-node machine. */
	expect(ref, 2, "-x MARCEL_BUBBLE_SCHEDULER=spread -x MARCEL_TOPOLOGY='numa:4 core:2' -x MARCEL_NVP=8",
	       SMALL " --threads 8");
}
END_TEST

/* tests/mpi-helper.c's waits on one rank with 2 workers, at one thread level. */
static void helper_waits(const char *level)
{
	int st;
	char args[64];
	snprintf(args, sizeof(args), "--helper waits %s", level);
	char *out = mpirun(1, "-x MARCEL_NVP=2", MA_CHECK_MPI, args, &st);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "mpi-helper: waits passed") != NULL,
		      "helper waits %s: status %#x:\n%s", level, st, tail(out));
	ck_assert_msg(strstr(out, "runners on the same VPs made") != NULL, "no progress report:\n%s", tail(out));
	free(out);
}

#ifndef MA_TEST_TSAN
START_TEST(test_waits_multiple)
{
	helper_waits("multiple");
}
END_TEST
#endif

START_TEST(test_waits_serialized)
{
	helper_waits("serialized");
}
END_TEST

/* Ranks that are not bound (MPIRUN_OPTS) each have a VP per processor: two of them
 * crowd the node, and marcel_mpi_init says so to each runtime; one alone does not. */
static void helper_crowd(int np, const char *expect)
{
	int st;
	char args[64], want[64];
	snprintf(args, sizeof(args), "--helper crowd %s", expect);
	snprintf(want, sizeof(want), "mpi-helper: crowd %s passed", expect);
	char *out = mpirun(np, "", MA_CHECK_MPI, args, &st);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, want) != NULL,
		      "helper crowd %s on %d ranks: status %#x:\n%s", expect, np, st, tail(out));
	free(out);
}

/* libmarcel-mpi's completed waits end hwprio's iterations in a rank with no barrier. */
START_TEST(test_wait_iterations)
{
	int st;
	char *out = mpirun(1, "-x MARCEL_HWPRIO=none", MA_CHECK_MPI, "--helper iterations", &st);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "mpi-helper: iterations passed") != NULL,
		      "helper iterations: status %#x:\n%s", st, tail(out));
	free(out);
}
END_TEST

START_TEST(test_crowded_node)
{
	helper_crowd(2, "shared");
	helper_crowd(1, "alone");
}
END_TEST

START_TEST(test_thread_levels)
{
	int st;
	char *out = mpirun(1, "", MA_CHECK_MPI, "--helper levels", &st);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "mpi-helper: levels passed") != NULL,
		      "helper levels: status %#x:\n%s", st, tail(out));
	/* Each refusal said which level was wrong and what is accepted. */
	ck_assert_msg(strstr(out, "required thread level MPI_THREAD_FUNNELED (") != NULL &&
			      strstr(out, "use MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE") != NULL,
		      "no clear message for MPI_THREAD_FUNNELED:\n%s", tail(out));
	ck_assert_msg(strstr(out, "provides MPI_THREAD_SERIALIZED, but MPI_THREAD_MULTIPLE was required") != NULL,
		      "no clear message for the insufficient level:\n%s", tail(out));
	free(out);
}
END_TEST

/* A command line mpi-conduction must refuse: status 2 and a message naming @p named. */
static void expect_usage_error(int np, const char *args, const char *named)
{
	int st;
	char *out, cmd[1024];
	if (np == 0) {  /* the options are read before MPI starts: no mpirun needed */
		snprintf(cmd, sizeof(cmd), STENCIL " %s", args);
		out = run(cmd, &st);
	} else {
		out = mpirun(np, "", STENCIL, args, &st);
	}
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2, "-np %d %s: status %#x, expected exit 2:\n%s", np,
		      args, st, tail(out));
	ck_assert_msg(strstr(out, named) != NULL, "-np %d %s: the message does not name %s:\n%s", np, args, named,
		      out);
	free(out);
}

START_TEST(test_bad_options)
{
	expect_usage_error(0, "--bogus", "'--bogus'");
	expect_usage_error(0, "--thread-level funneled", "'--thread-level': 'funneled'");
	expect_usage_error(0, "--size 96 --thread-level", "'--thread-level' needs a value");
	expect_usage_error(0, "--threads 0", "'--threads'");
	expect_usage_error(0, "--size 2", "'--size'");
	expect_usage_error(0, "--marcel-nvp zero", "--marcel-nvp");  /* marcel_init's EINVAL */
	/* Known only once the rank count is: every rank refuses, rank 0 says why. */
	expect_usage_error(4, "--size 5", "4 ranks, but --size gives the first axis only 3 interior points");
	expect_usage_error(2, "--size 10 --threads 5", "option '--threads': 5 threads per rank");

	int st;
	char *out = run(STENCIL " --help", &st);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "--thread-level") != NULL &&
			      strstr(out, "usage: mpi-conduction") != NULL, "--help: status %#x:\n%s", st, tail(out));
	/* One --threads entry, which says it counts the threads of each rank. */
	const char *threads = strstr(out, "  --threads ");
	ck_assert_msg(threads != NULL && strstr(threads + 1, "  --threads ") == NULL &&
			      strstr(threads, "of each rank") != NULL, "--help: --threads not described once:\n%s", out);
	free(out);
}
END_TEST

#if defined(__SANITIZE_ADDRESS__)
/*
 * LeakSanitizer and Open MPI 4.1: MPI_Finalize leaves thousands of Open MPI's own
 * allocations unfreed (in libmpi, libopen-pal, libopen-rte, and in the PMIx component's
 * thread, which runs a libevent loop), and most of them were made by components that
 * are unloaded by then, whose frames have no name. With full stacks (the fast unwinder
 * stops at Open MPI's frames, built without frame pointers), each of those leaks has a
 * frame in one of the libraries below; leaks of our code (marcel, the example, the
 * helper) have none and are still reported. The runs under mpirun get these settings
 * through the environment; the file lives as long as the suite.
 */
static const char lsan_suppressions[] =
	"leak:libmpi.so\nleak:libopen-pal.so\nleak:libopen-rte.so\nleak:libpmix.so\nleak:libevent\n";

static char *suppress_open_mpi_leaks(void)
{
	char *path = strdup("/tmp/check_mpi-lsan-XXXXXX");
	int fd = path ? mkstemp(path) : -1;
	if (fd < 0 || write(fd, lsan_suppressions, sizeof(lsan_suppressions) - 1) < 0 || close(fd) != 0) {
		perror("check_mpi: writing the LeakSanitizer suppressions");
		exit(1);
	}
	char opts[1024];
	const char *asan = getenv("ASAN_OPTIONS"), *lsan = getenv("LSAN_OPTIONS");
	snprintf(opts, sizeof(opts), "%s%sfast_unwind_on_malloc=0", asan ? asan : "", asan ? ":" : "");
	setenv("ASAN_OPTIONS", opts, 1);
	snprintf(opts, sizeof(opts), "%s%ssuppressions=%s", lsan ? lsan : "", lsan ? ":" : "", path);
	setenv("LSAN_OPTIONS", opts, 1);
	return path;
}
#else
static char *suppress_open_mpi_leaks(void)
{
	return NULL;
}
#endif

static void clean_environment(void)
{
	unsetenv("MARCEL_TOPOLOGY");
	unsetenv("MARCEL_BUBBLE_SCHEDULER");
	unsetenv("MARCEL_NVP");
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "--helper") == 0)
		return ma_mpi_helper(argc - 1, argv + 1);
	if (MA_MPIRUN[0] == 0) {
		printf("check_mpi: configure found MPI but no mpirun: skipped\n");
		return 77;
	}
	Suite *s = suite_create("mpi");
	TCase *tc = tcase_create("mpirun");
	tcase_add_checked_fixture(tc, clean_environment, NULL);
	tcase_add_test(tc, test_ranks_2d);
	tcase_add_test(tc, test_ranks_3d);
	tcase_add_test(tc, test_imbalance);
	tcase_add_test(tc, test_crowded_node);
	tcase_add_test(tc, test_wait_iterations);
	tcase_add_test(tc, test_strategies);
#ifdef MA_TEST_TSAN
	printf("check_mpi: ThreadSanitizer build: every run at MPI_THREAD_SERIALIZED, "
	       "test_waits_multiple skipped (see LEVEL in check_mpi.c)\n");
#else
	tcase_add_test(tc, test_waits_multiple);
#endif
	tcase_add_test(tc, test_waits_serialized);
	tcase_add_test(tc, test_thread_levels);
	tcase_add_test(tc, test_bad_options);
	tcase_set_timeout(tc, 300);
	suite_add_tcase(s, tc);
	char *suppressions = suppress_open_mpi_leaks();
	int status = ma_test_run(s);
	if (suppressions)
		unlink(suppressions);
	free(suppressions);
	return status;
}
