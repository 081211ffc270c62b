/*
 * Shared by the suites of marcel-render's pictures (check_render_svg, check_render_movie,
 * check_render_command): the folder the pictures go in, running the tool and marcel-sim,
 * the JSON they read, and the files they are drawn from -- a live run of the library
 * (nested bubbles, a blocked thread, a name full of markup), marcel-sim's runs, a
 * minimal snapshot. Each suite makes the files it draws, in its own folder. Include after
 * defining _GNU_SOURCE.
 */
#ifndef MA_RENDER_TEST_H
#define MA_RENDER_TEST_H

#include <limits.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "ma_test.h"
#include "trace-json.h"

static const char *ma_rt_prog;        /* the suite's program, in what it prints */
static char ma_rt_dir[256];           /* the pictures' folder */

/* ---- running things ---- */

/* ma_rt_dir/name, in storage that stays valid for the rest of the test: kept here, so
 * that the sanitizers' leak check sees it reachable. */
static char *ma_rt_paths[1024];
static unsigned ma_rt_nb_paths;

static inline const char *ma_rt_path(const char *name)
{
	char *b;
	ck_assert_int_ge(asprintf(&b, "%s/%s", ma_rt_dir, name), 0);
	ck_assert_msg(ma_rt_nb_paths < sizeof(ma_rt_paths) / sizeof(ma_rt_paths[0]), "more paths than kept");
	return ma_rt_paths[ma_rt_nb_paths++] = b;
}

static inline char *ma_rt_slurp(const char *path, size_t *len)
{
	size_t n;
	char *t = tj_read_file(path, &n);
	ck_assert_msg(t != NULL, "cannot read %s: %s", path, strerror(errno));
	if (len)
		*len = n;
	return t;
}

struct ma_rt_run {
	int status;                       /* exit status, -1 if it did not exit */
	char *out, *err;
};

/* Runs the shell command built from fmt, its stdout and stderr kept apart. */
static inline struct ma_rt_run ma_rt_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline struct ma_rt_run ma_rt_run(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	char out[300], err[300], full[5000];
	snprintf(out, sizeof(out), "%s/run.out", ma_rt_dir);
	snprintf(err, sizeof(err), "%s/run.err", ma_rt_dir);
	snprintf(full, sizeof(full), "{ %s; } >'%s' 2>'%s'", cmd, out, err);
	int st = system(full);
	struct ma_rt_run r = { WIFEXITED(st) ? WEXITSTATUS(st) : -1, ma_rt_slurp(out, NULL), ma_rt_slurp(err, NULL) };
	return r;
}

static inline void ma_rt_run_free(struct ma_rt_run *r)
{
	free(r->out);
	free(r->err);
}

#define MA_RT_RENDER "'" MA_TOOLS_DIR "/marcel-render'"

/* Renders in to out (snapshot or movie); the tool must succeed silently. */
static inline void ma_rt_render(const char *what, const char *in, const char *out)
{
	struct ma_rt_run r = ma_rt_run(MA_RT_RENDER " %s '%s' -o '%s'", what, in, out);
	ck_assert_msg(r.status == 0, "marcel-render %s %s: status %d: %s", what, in, r.status, r.err);
	ck_assert_str_eq(r.err, "");
	ck_assert_str_eq(r.out, "");
	ma_rt_run_free(&r);
}

static inline int ma_rt_have(const char *prog)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

/* xmllint, where installed (tools/deps installs it), agrees that path is well-formed. */
static inline void ma_rt_xmllint_ok(const char *path)
{
	if (!ma_rt_have("xmllint")) {
		printf("%s: xmllint not installed: only the built-in XML reader checked %s\n", ma_rt_prog, path);
		return;
	}
	struct ma_rt_run r = ma_rt_run("xmllint --noout '%s'", path);
	ck_assert_msg(r.status == 0, "xmllint rejects %s: %s", path, r.err);
	ma_rt_run_free(&r);
}

/* ---- JSON documents ---- */

static inline long long ma_rt_jint(const struct tj_node *obj, const char *key)
{
	long long v = 0;
	ck_assert_msg(tj_int(tj_get(obj, key), LLONG_MIN, LLONG_MAX, &v) == 0, "\"%s\" is not an integer", key);
	return v;
}

static inline const struct tj_node *ma_rt_jarr(const struct tj_node *obj, const char *key)
{
	const struct tj_node *v = tj_get(obj, key);
	ck_assert_msg(v && v->type == TJ_ARRAY, "\"%s\" is not an array", key);
	return v;
}

/* ---- the files the pictures are drawn from ---- */

static inline void ma_rt_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

/* A minimal snapshot (MA_RT_SNAP_MIN): a machine with one VP, a root bubble and one thread
 * running; MA_RT_SNAP gives its variants. */
#define MA_RT_SNAP_Q0 "{\"index\":0,\"name\":\"machine\",\"item\":0,\"vp\":-1,\"parent\":-1,\"depth\":0,\"kinds\":1," \
		"\"first_vp\":0,\"nb_vps\":1,\"running\":-1,\"hwprio_level\":0,\"queued\":[]}"
#define MA_RT_SNAP_Q1(vp, parent) "{\"index\":1,\"name\":\"VP0\",\"item\":0,\"vp\":" vp ",\"parent\":" parent \
		",\"depth\":1,\"kinds\":1,\"first_vp\":0,\"nb_vps\":1,\"running\":1,\"hwprio_level\":2,\"queued\":[]}"
#define MA_RT_SNAP_E0 "{\"index\":0,\"kind\":\"bubble\",\"uid\":9223372036854775808,\"id\":0,\"name\":\"root\"," \
		"\"implicit\":0,\"state\":1,\"parent\":-1,\"depth\":0,\"queue\":0,\"held_by\":-1,\"running_vp\":-1}"
#define MA_RT_SNAP_E1(kind, parent) "{\"index\":1,\"kind\":\"" kind "\",\"uid\":7,\"id\":-1,\"name\":\"t\"," \
		"\"implicit\":0,\"state\":2,\"parent\":" parent ",\"depth\":1,\"queue\":1,\"held_by\":-1,\"running_vp\":0}"
#define MA_RT_SNAP(vps, q1, e1) "{\"strategy\":\"null\",\"vps\":" vps ",\"queues\":[" MA_RT_SNAP_Q0 "," q1 "]," \
		"\"entities\":[" MA_RT_SNAP_E0 "," e1 "]}"
#define MA_RT_SNAP_MIN MA_RT_SNAP("1", MA_RT_SNAP_Q1("0", "0"), MA_RT_SNAP_E1("thread", "0"))

/* A live run: its threads' names (bubble k's g<k>t<i>) and the one full of markup. */
#define MA_RT_ODD_NAME "odd<&\"'>]]>"
#define MA_RT_GROUPS 2
#define MA_RT_PER 3

static int ma_rt_busy_stop;
static atomic_int ma_rt_busy_started;
static marcel_sem_t ma_rt_blocker;

/* Computes until ma_rt_busy_stop, yielding now and then (every few hundred microseconds:
 * a trace of some thousands of slices, not of millions). */
static inline any_t ma_rt_busy(any_t arg)
{
	(void)arg;
	atomic_fetch_add(&ma_rt_busy_started, 1);
	for (unsigned long n = 1; !__atomic_load_n(&ma_rt_busy_stop, __ATOMIC_RELAXED); n++)
		if (n % (1 << 18) == 0)
			marcel_yield();
	return NULL;
}

static inline any_t ma_rt_blocked(any_t arg)
{
	(void)arg;
	marcel_sem_P(&ma_rt_blocker);
	return NULL;
}

static inline marcel_t ma_rt_spawn(marcel_bubble_t *b, const char *name, marcel_func_t f)
{
	marcel_attr_t a;
	marcel_t t;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setname(&a, name), 0);
	ck_assert_int_eq(marcel_create_dontsched(&t, &a, f, NULL), 0);
	ck_assert_int_eq(marcel_bubble_inserttask(b, t), 0);
	return t;
}

/* Bubble 1: g1t0..2; bubble 2: g2t0..2 and bubble 3 inside it with g3t0..1; a thread
 * blocked on a semaphore, named MA_RT_ODD_NAME, in no explicit bubble. On "numa:2 core:2"
 * (4 VPs) under spread, MARCEL_TRACE set: writes live-snap.json and live-trace.json. The
 * body of each suite's first test. */
static inline void ma_rt_live_run(void)
{
	setenv("MARCEL_TRACE", ma_rt_path("live-trace.json"), 1);
	ma_test_init_with("numa:2 core:2", "spread");
	unsetenv("MARCEL_TRACE");
	marcel_bubble_t b[3];
	marcel_t t[MA_RT_GROUPS * MA_RT_PER + 2], odd;
	unsigned nt = 0;
	for (int k = 0; k < 3; k++) {
		ck_assert_int_eq(marcel_bubble_init(&b[k]), 0);
		ck_assert_int_eq(marcel_bubble_setid(&b[k], k + 1), 0);
	}
	for (int k = 0; k < MA_RT_GROUPS; k++)
		for (int i = 0; i < MA_RT_PER; i++) {
			char name[32];
			snprintf(name, sizeof(name), "g%dt%d", k + 1, i);
			t[nt++] = ma_rt_spawn(&b[k], name, ma_rt_busy);
		}
	t[nt++] = ma_rt_spawn(&b[2], "g3t0", ma_rt_busy);
	t[nt++] = ma_rt_spawn(&b[2], "g3t1", ma_rt_busy);
	ck_assert_int_eq(marcel_bubble_insertbubble(&b[1], &b[2]), 0);
	ck_assert_int_eq(marcel_sem_init(&ma_rt_blocker, 0), 0);
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setname(&a, MA_RT_ODD_NAME), 0);
	ck_assert_int_eq(marcel_create(&odd, &a, ma_rt_blocked, NULL), 0);
	ck_assert_int_eq(marcel_wake_up_bubble(&b[0]), 0);
	ck_assert_int_eq(marcel_wake_up_bubble(&b[1]), 0);
	ck_assert_int_eq(marcel_bubble_sched_begin(), 0);
	for (int i = 0; i < 2000 && atomic_load(&ma_rt_busy_started) < (int)nt; i++)
		marcel_usleep(1000);
	ck_assert_int_eq(atomic_load(&ma_rt_busy_started), (int)nt);
	marcel_usleep(20000);
	FILE *f = fopen(ma_rt_path("live-snap.json"), "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(marcel_sched_snapshot_json(f), 0);
	ck_assert_int_eq(fclose(f), 0);
	__atomic_store_n(&ma_rt_busy_stop, 1, __ATOMIC_RELAXED);
	marcel_sem_V(&ma_rt_blocker);
	for (unsigned i = 0; i < nt; i++)
		ck_assert_int_eq(marcel_join(t[i], NULL), 0);
	ck_assert_int_eq(marcel_join(odd, NULL), 0);
	for (int k = 2; k >= 0; k--) {
		ck_assert_int_eq(marcel_bubble_join(&b[k]), 0);
		ck_assert_int_eq(marcel_bubble_destroy(&b[k]), 0);
	}
	marcel_end();
	struct stat st;
	ck_assert_int_eq(stat(ma_rt_path("live-trace.json"), &st), 0);
	ck_assert_int_gt(st.st_size, 100);
}

/* marcel-sim's runs: 16 PUs; POWER5 priorities under the adaptive policy (levels raised
 * by 10 s); 1024 PUs and 4096 threads. */
#define MA_RT_SIM "'" MA_SIM_DIR "/marcel-sim'"
#define MA_RT_SIM16 "--machine itanium16 --workload stencil:threads=16:iters=5 --strategy cache"
#define MA_RT_SIM_HW "--machine power5 --workload metbench --hwprio adaptive --snapshot-at 10"
#define MA_RT_SIM1024 "--machine topology='pack:4 numa:4 l3:4 core:16' --workload stencil:threads=4096:iters=1 " \
		      "--strategy cache"

/* Runs marcel-sim with args: writes name-trace.json and name-snap.json. */
static inline void ma_rt_sim(const char *name, const char *args)
{
	char trace[64], snap[64];
	snprintf(trace, sizeof(trace), "%s-trace.json", name);
	snprintf(snap, sizeof(snap), "%s-snap.json", name);
	struct ma_rt_run r = ma_rt_run(MA_RT_SIM " %s --trace '%s' --snapshot '%s'", args, ma_rt_path(trace),
				       ma_rt_path(snap));
	ck_assert_msg(r.status == 0, "marcel-sim: %s", r.err);
	ma_rt_run_free(&r);
}

/* ---- the suite ---- */

/* Runs suite s (its tests in order: the later ones read what the earlier ones wrote) with
 * the pictures in a fresh folder, removed after; MA_RENDER_KEEP=1 keeps them, to look at
 * them. Returns main's status. */
static inline int ma_rt_main(const char *prog, Suite *s)
{
	ma_rt_prog = prog;
	snprintf(ma_rt_dir, sizeof(ma_rt_dir), "%s/%s.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", prog);
	if (!mkdtemp(ma_rt_dir)) {
		fprintf(stderr, "%s: mkdtemp: %s\n", prog, strerror(errno));
		return 1;
	}
	int r = ma_test_run(s);
	if (getenv("MA_RENDER_KEEP")) {
		printf("%s: the pictures are in %s\n", prog, ma_rt_dir);
		return r;
	}
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", ma_rt_dir);
	if (system(cmd))
		fprintf(stderr, "%s: could not remove %s\n", prog, ma_rt_dir);
	return r;
}

#endif
