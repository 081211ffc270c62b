/*
 * Tracing (MARCEL_TRACE): the file a run writes must be strict JSON that the Perfetto UI
 * loads -- one track per VP plus "outside", slices nested per track, time never going
 * back on a track -- and must hold every event recorded, however many; marcel_trace_off
 * and marcel_trace_on pause and resume it; a bad path fails marcel_init cleanly.
 *
 * White-box where the public API cannot reach: the writer is fed every kind of event
 * through ma_trace_emit (the scheduler's own event sites may not cover them all), so this
 * suite includes the core's private headers and links the library statically, as
 * check_wake does. Files are read back with tools/trace-json.h, the parser of
 * marcel-trace-summary, which is run too.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include "ma_test.h"
#include "ma_trace.h"
#include "trace-json.h"

#define ID(n) (UINT64_C(1000000000) + (n))
#define BUBBLE(n) (MA_TRACE_BUBBLE_TAG | (n))

/* Traces go to a directory of the runner's: a failed check ends a test's process at
 * once (without atexit handlers), so the runner removes what is left at the end. */
static char trace_dir[256];
static char trace_path[512];

/* A fresh file name for this test's trace, set as MARCEL_TRACE. */
static void trace_tmp(void)
{
	snprintf(trace_path, sizeof(trace_path), "%s/t.XXXXXX", trace_dir);
	int fd = mkstemp(trace_path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	setenv("MARCEL_TRACE", trace_path, 1);
}

static void trace_done(void)
{
	unlink(trace_path);
	unsetenv("MARCEL_TRACE");
}

static void trace_dir_create(void)
{
	const char *dir = getenv("TMPDIR");
	snprintf(trace_dir, sizeof(trace_dir), "%s/check_trace.XXXXXX", dir && *dir ? dir : "/tmp");
	if (!mkdtemp(trace_dir)) {
		perror("check_trace: mkdtemp");
		exit(EXIT_FAILURE);
	}
}

static void trace_dir_remove(void)
{
	DIR *d = opendir(trace_dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			char path[sizeof(trace_dir) + 256];
			snprintf(path, sizeof(path), "%s/%s", trace_dir, de->d_name);
			unlink(path);
		}
	closedir(d);
	rmdir(trace_dir);
}

static void init_on(const char *topology)
{
	setenv("MARCEL_TOPOLOGY", topology, 1);
	unsetenv("MARCEL_NVP");
	ck_assert_int_eq(marcel_init(NULL, NULL), 0);
}

/* Reads trace_path, checks it strictly and summarises it (tj_sum_free it). */
static void load_summary(struct tj_summary *s)
{
	size_t len;
	char *text = tj_read_file(trace_path, &len);
	ck_assert_msg(text != NULL, "cannot read %s: %s", trace_path, strerror(errno));
	struct tj_parser ps;
	memset(s, 0, sizeof(*s));
	int r = tj_parse(&ps, text, len, tj_sum_event, s);
	ck_assert_msg(r == 0, "%s is not valid: %s", trace_path, ps.err);
	ck_assert_str_eq(ps.display_time_unit, "ns");
	free(text);
	tj_sum_finish(s);
	ck_assert_msg(s->nb_errors == 0, "%s: %lu problem(s), the first: %s", trace_path, s->nb_errors,
		      s->first_error);
}

/* Every VP has a track named VPn, and "outside" follows them. */
static void check_tracks(const struct tj_summary *s, unsigned nbvps)
{
	ck_assert_uint_eq(s->nb_tracks, nbvps + 1);
	for (unsigned v = 0; v < nbvps; v++) {
		char name[16];
		snprintf(name, sizeof(name), "VP%u", v);
		ck_assert_msg(tj_sum_find(s, name) != NULL, "no track %s", name);
		ck_assert_str_eq(s->tracks[v].name, name);
	}
	ck_assert_str_eq(s->tracks[nbvps].name, "outside");
}

/* ---- every event in order ---- */

struct event_list {
	struct tj_event *ev;
	size_t n, cap;
};

static int collect(const struct tj_event *e, void *ctx)
{
	struct event_list *l = ctx;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 256;
		l->ev = realloc(l->ev, l->cap * sizeof(*l->ev));
		ck_assert_ptr_nonnull(l->ev);
	}
	l->ev[l->n++] = *e;
	return 0;
}

static void load_events(struct event_list *l)
{
	struct tj_summary s;
	load_summary(&s);
	tj_sum_free(&s);
	size_t len;
	char *text = tj_read_file(trace_path, &len);
	ck_assert_ptr_nonnull(text);
	struct tj_parser ps;
	memset(l, 0, sizeof(*l));
	ck_assert_int_eq(tj_parse(&ps, text, len, collect, l), 0);
	free(text);
}

static const char *arg(const struct tj_event *e, const char *key)
{
	for (unsigned i = 0; i < e->nb_args; i++)
		if (!strcmp(e->args[i].key, key))
			return e->args[i].val;
	return NULL;
}

static const char *id_str(uint64_t id)
{
	static char buf[8][24];
	static unsigned next;
	char *b = buf[next++ % 8];
	snprintf(b, sizeof(buf[0]), "%llu", (unsigned long long)id);
	return b;
}

/* Index of the first event with phase ph and name (and args id, if not NULL), or -1. */
static long find(const struct event_list *l, const char *ph, const char *name, const char *id)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct tj_event *e = &l->ev[i];
		if (!strcmp(e->ph, ph) && !strcmp(e->name, name) && (!id || (arg(e, "id") && !strcmp(arg(e, "id"), id))))
			return (long)i;
	}
	return -1;
}

/* The next event on track tid after index i, or -1. */
static long next_on(const struct event_list *l, long i, long long tid)
{
	for (size_t j = (size_t)i + 1; j < l->n; j++)
		if (l->ev[j].has_tid && l->ev[j].tid == tid && strcmp(l->ev[j].ph, "M"))
			return (long)j;
	return -1;
}

struct expect {
	const char *ph, *name;
	const char *k1, *v1, *k2, *v2, *k3, *v3;
};

static any_t mark_on_vp1(any_t arg_)
{
	(void)arg_;
	ck_assert_int_eq(marcel_current_vp(), 1);
	ck_assert_int_eq(marcel_trace_mark("on VP1"), 0);
	return NULL;
}

static void *outside_thread(void *arg_)
{
	(void)arg_;
	ma_trace_emit(MA_TR_THREAD_NEW, ID(100), 0, "from outside");
	ck_assert_int_eq(marcel_trace_mark("outside mark"), 0);
	return NULL;
}

static const char long_name[] = "a-thread-name-of-forty-characters-long!!";

START_TEST(writer_every_kind)
{
	trace_tmp();
	init_on("core:2");
	ck_assert_int_eq(marcel_current_vp(), 0);
	const char *quoted = "worker \"q\"\\";
	/* Ends main's own slice, if the scheduler opened one, so that VP0's track holds only
	 * ours from here. */
	ma_trace_emit(MA_TR_THREAD_STOP, 0, 0, "main");
	ma_trace_emit(MA_TR_THREAD_NEW, ID(1), 0, quoted);
	ma_trace_emit(MA_TR_THREAD_RUN, ID(1), 0, quoted);
	ma_trace_emit(MA_TR_THREAD_STOP, ID(1), 0, quoted);
	ma_trace_emit(MA_TR_THREAD_RUN, ID(2), 0, long_name);
	ma_trace_emit(MA_TR_THREAD_RUN, ID(3), 0, ""); /* no STOP for ID(2): closed here */
	ma_trace_emit(MA_TR_THREAD_STOP, ID(3), 0, "");
	ma_trace_emit(MA_TR_THREAD_STOP, ID(4), 0, "x"); /* nothing open: dropped */
	ma_trace_emit(MA_TR_THREAD_END, ID(1), 0, quoted);
	ma_trace_emit(MA_TR_IDLE_START, 0, 0, NULL);
	ma_trace_emit(MA_TR_IDLE_STOP, 0, 0, NULL);
	ma_trace_emit(MA_TR_BUBBLE_NEW, BUBBLE(5), 0, NULL);
	ma_trace_emit(MA_TR_BUBBLE_INSERT, BUBBLE(5), ID(1), NULL);
	ma_trace_emit(MA_TR_BUBBLE_INSERT, BUBBLE(5), BUBBLE(6), NULL);
	ma_trace_emit(MA_TR_BUBBLE_REMOVE, BUBBLE(5), ID(1), NULL);
	ma_trace_emit(MA_TR_BUBBLE_WAKE, BUBBLE(5), 0, NULL);
	ma_trace_emit(MA_TR_BUBBLE_BURST, BUBBLE(5), 7, "Core1");
	ma_trace_emit(MA_TR_BUBBLE_CLOSE, BUBBLE(5), 0, NULL);
	ma_trace_emit(MA_TR_BUBBLE_CLOSED, BUBBLE(5), 0, NULL);
	ma_trace_emit(MA_TR_BUBBLE_JOIN, BUBBLE(5), 0, NULL);
	ma_trace_emit(MA_TR_RQ_SWITCH, ID(1), 3, "Package0");
	ma_trace_emit(MA_TR_STEAL, BUBBLE(6), 2, "machine");
	ma_trace_emit(MA_TR_HWPRIO, 1, (uint64_t)-2, "sim");
	/* Control characters, a byte that is not UTF-8, a character cut at 31 bytes. */
	ck_assert_int_eq(marcel_trace_mark("tab\tnl\nctl\001del\177 bad\377 end"), 0);
	ck_assert_int_eq(marcel_trace_mark("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\303\251"), 0);
	ck_assert_int_eq(marcel_trace_mark("h\303\251llo \342\234\223"), 0);
	ma_trace_emit(MA_TR_THREAD_RUN, ID(5), 0, "left open");

	marcel_attr_t a = ma_test_attr_on_vp(1);
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, &a, mark_on_vp1, NULL), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	pthread_t pt;
	ck_assert_int_eq(pthread_create(&pt, NULL, outside_thread, NULL), 0);
	ck_assert_int_eq(pthread_join(pt, NULL), 0);
	marcel_end();

	struct event_list l;
	load_events(&l);
	/* Metadata: the process, then VP0, VP1 and outside as tids 1, 2, 3. */
	long i = find(&l, "M", "process_name", NULL);
	ck_assert_int_ge(i, 0);
	ck_assert_str_eq(arg(&l.ev[i], "name"), "marcel");
	const char *tracks[] = { "VP0", "VP1", "outside" };
	for (unsigned k = 0; k < 3; k++) {
		int found = 0;
		for (size_t j = 0; j < l.n; j++)
			if (!strcmp(l.ev[j].ph, "M") && !strcmp(l.ev[j].name, "thread_name") && l.ev[j].tid == k + 1) {
				ck_assert_str_eq(arg(&l.ev[j], "name"), tracks[k]);
				found = 1;
			}
		ck_assert_msg(found, "no thread_name for %s", tracks[k]);
	}

	char cut[32];
	memcpy(cut, long_name, 31);
	cut[31] = 0;
	char tid1[24];
	snprintf(tid1, sizeof(tid1), "thread %llu", (unsigned long long)ID(1));
	char t3[24];
	snprintf(t3, sizeof(t3), "thread %llu", (unsigned long long)ID(3));
	const struct expect seq[] = {
		{ "i", "thread new", "id", id_str(ID(1)), "thread", quoted, NULL, NULL },
		{ "B", quoted, "id", id_str(ID(1)), NULL, NULL, NULL, NULL },
		{ "E", "", NULL, NULL, NULL, NULL, NULL, NULL },
		{ "B", cut, "id", id_str(ID(2)), NULL, NULL, NULL, NULL },
		{ "E", "", NULL, NULL, NULL, NULL, NULL, NULL },
		{ "B", t3, "id", id_str(ID(3)), NULL, NULL, NULL, NULL },
		{ "E", "", NULL, NULL, NULL, NULL, NULL, NULL },
		{ "i", "thread end", "id", id_str(ID(1)), "thread", quoted, NULL, NULL },
		{ "i", "idle start", NULL, NULL, NULL, NULL, NULL, NULL },
		{ "i", "idle stop", NULL, NULL, NULL, NULL, NULL, NULL },
		{ "i", "bubble new", "bubble", "5", NULL, NULL, NULL, NULL },
		{ "i", "bubble insert", "bubble", "5", "entity", tid1, NULL, NULL },
		{ "i", "bubble insert", "bubble", "5", "entity", "bubble 6", NULL, NULL },
		{ "i", "bubble remove", "bubble", "5", "entity", tid1, NULL, NULL },
		{ "i", "bubble wake", "bubble", "5", NULL, NULL, NULL, NULL },
		{ "i", "bubble burst", "bubble", "5", "queue", "Core1", "queue_id", "7" },
		{ "i", "bubble close", "bubble", "5", NULL, NULL, NULL, NULL },
		{ "i", "bubble closed", "bubble", "5", NULL, NULL, NULL, NULL },
		{ "i", "bubble join", "bubble", "5", NULL, NULL, NULL, NULL },
		{ "i", "runqueue switch", "entity", tid1, "queue", "Package0", "queue_id", "3" },
		{ "i", "steal", "entity", "bubble 6", "from", "machine", "from_id", "2" },
		{ "i", "hwprio", "vp", "1", "level", "-2", "backend", "sim" },
		{ "i", "tab\tnl\nctl?del? bad? end", NULL, NULL, NULL, NULL, NULL, NULL },
		{ "i", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx?", NULL, NULL, NULL, NULL, NULL, NULL },
		{ "i", "h\303\251llo \342\234\223", NULL, NULL, NULL, NULL, NULL, NULL },
		{ "B", "left open", "id", id_str(ID(5)), NULL, NULL, NULL, NULL },
	};
	i = find(&l, "i", "thread new", id_str(ID(1)));
	ck_assert_int_ge(i, 0);
	ck_assert_int_eq(l.ev[i].tid, 1);
	for (size_t k = 0; k < sizeof(seq) / sizeof(seq[0]); k++) {
		ck_assert_msg(i >= 0, "VP0's track ends before event %zu (%s %s)", k, seq[k].ph, seq[k].name);
		const struct tj_event *e = &l.ev[i];
		ck_assert_msg(!strcmp(e->ph, seq[k].ph) && !strcmp(e->name, seq[k].name),
			      "event %zu on VP0: got %s '%s', expected %s '%s'", k, e->ph, e->name, seq[k].ph,
			      seq[k].name);
		if (!strcmp(e->ph, "i")) {
			ck_assert_str_eq(e->s, "t");
			ck_assert(e->cat[0] != 0);
		}
		const char *kv[3][2] = { { seq[k].k1, seq[k].v1 }, { seq[k].k2, seq[k].v2 }, { seq[k].k3, seq[k].v3 } };
		for (unsigned m = 0; m < 3; m++)
			if (kv[m][0]) {
				const char *v = arg(e, kv[m][0]);
				ck_assert_msg(v && !strcmp(v, kv[m][1]), "event %zu (%s): args.%s is '%s', expected '%s'",
					      k, e->name, kv[m][0], v ? v : "(none)", kv[m][1]);
			}
		i = next_on(&l, i, 1);
	}
	/* "left open" ends, at the scheduler's next switch on VP0 or with the trace. */
	while (i >= 0 && strcmp(l.ev[i].ph, "B") && strcmp(l.ev[i].ph, "E"))
		i = next_on(&l, i, 1);
	ck_assert_msg(i >= 0 && !strcmp(l.ev[i].ph, "E"), "the slice left open is not ended");
	/* Off VP0: the marcel thread's mark on VP1, the plain thread's events outside. */
	i = find(&l, "i", "on VP1", NULL);
	ck_assert_int_ge(i, 0);
	ck_assert_int_eq(l.ev[i].tid, 2);
	i = find(&l, "i", "thread new", id_str(ID(100)));
	ck_assert_int_ge(i, 0);
	ck_assert_int_eq(l.ev[i].tid, 3);
	ck_assert_str_eq(arg(&l.ev[i], "thread"), "from outside");
	i = find(&l, "i", "outside mark", NULL);
	ck_assert_int_ge(i, 0);
	ck_assert_int_eq(l.ev[i].tid, 3);
	free(l.ev);
	trace_done();
}
END_TEST

/* ---- a real run: tracks and idle events ---- */

static any_t nap_and_yield(any_t arg_)
{
	(void)arg_;
	for (int i = 0; i < 5; i++) {
		marcel_yield();
		marcel_usleep(200);
	}
	return NULL;
}

START_TEST(tracks_and_idle_events)
{
	trace_tmp();
	ma_test_init();
	unsigned nbvps = marcel_nbvps();
	marcel_t t[64];
	unsigned n = 2 * nbvps < 64 ? 2 * nbvps : 64;
	for (unsigned i = 0; i < n; i++)
		ck_assert_int_eq(marcel_create(&t[i], NULL, nap_and_yield, NULL), 0);
	for (unsigned i = 0; i < n; i++)
		ck_assert_int_eq(marcel_join(t[i], NULL), 0);
	marcel_usleep(1000); /* nothing left to run: VP0 idles */
	marcel_end();

	struct tj_summary s;
	load_summary(&s);
	check_tracks(&s, nbvps);
	/* Main napped with nothing else to run, so VP0 idled. */
	ck_assert_uint_ge(tj_sum_count_of(&s, "idle start"), 1);
	ck_assert_uint_ge(tj_sum_count_of(&s, "idle stop"), 1);
	ck_assert(s.tracks[0].idle_us > 0);
	tj_sum_free(&s);
	trace_done();
}
END_TEST

/* ---- pausing ---- */

START_TEST(off_and_on)
{
	trace_tmp();
	init_on("core:2");
	ck_assert_int_eq(__atomic_load_n(&ma_trace_active, __ATOMIC_RELAXED), 1);
	ck_assert_int_eq(marcel_trace_mark("A"), 0);
	ma_trace_emit(MA_TR_THREAD_RUN, ID(10), 0, "open at off");
	ck_assert_int_eq(marcel_trace_off(), 0);
	ck_assert_int_eq(__atomic_load_n(&ma_trace_active, __ATOMIC_RELAXED), 0);
	ck_assert_int_eq(marcel_trace_mark("B"), 0);
	MA_TRACE(MA_TR_THREAD_NEW, ID(11), 0, "skipped by the site");
	/* Recorded (a site that read the switch just before it changed), then dropped. */
	ma_trace_emit(MA_TR_THREAD_NEW, ID(12), 0, "late");
	ck_assert_int_eq(marcel_trace_off(), 0);
	ck_assert_int_eq(marcel_trace_on(), 0);
	ck_assert_int_eq(__atomic_load_n(&ma_trace_active, __ATOMIC_RELAXED), 1);
	ck_assert_int_eq(marcel_trace_on(), 0);
	ck_assert_int_eq(marcel_trace_mark("C"), 0);
	marcel_end();
	ck_assert_int_eq(marcel_trace_on(), ENOENT);
	ck_assert_int_eq(marcel_trace_mark("D"), ENOENT);

	struct event_list l;
	load_events(&l);
	ck_assert_int_ge(find(&l, "i", "A", NULL), 0);
	ck_assert_int_lt(find(&l, "i", "B", NULL), 0);
	ck_assert_int_ge(find(&l, "i", "C", NULL), 0);
	ck_assert_int_lt(find(&l, "i", "thread new", id_str(ID(11))), 0);
	ck_assert_int_lt(find(&l, "i", "thread new", id_str(ID(12))), 0);
	long off = find(&l, "i", "trace off", NULL), on = find(&l, "i", "trace on", NULL);
	ck_assert_int_ge(off, 0);
	ck_assert_int_gt(on, off);
	unsigned nb_off = 0, nb_on = 0;
	for (size_t j = 0; j < l.n; j++) {
		nb_off += !strcmp(l.ev[j].name, "trace off");
		nb_on += !strcmp(l.ev[j].name, "trace on");
		/* Nothing but the markers between the two. */
		if ((long)j > off && (long)j < on)
			ck_assert_msg(!strcmp(l.ev[j].ph, "E"), "'%s' recorded while paused", l.ev[j].name);
	}
	ck_assert_uint_eq(nb_off, 1);
	ck_assert_uint_eq(nb_on, 1);
	/* The slice open at the pause ends there. */
	long b = find(&l, "B", "open at off", NULL);
	ck_assert_int_ge(b, 0);
	long e = next_on(&l, b, 1);
	ck_assert_int_ge(e, 0);
	ck_assert_str_eq(l.ev[e].ph, "E");
	ck_assert(l.ev[e].ts == l.ev[off].ts);
	free(l.ev);
	trace_done();
}
END_TEST

START_TEST(off_before_init_starts_paused)
{
	/* Without a running trace, the switch is only remembered. */
	ck_assert_int_eq(marcel_trace_off(), ENOENT);
	trace_tmp();
	init_on("core:2");
	ck_assert_int_eq(__atomic_load_n(&ma_trace_active, __ATOMIC_RELAXED), 0);
	ck_assert_int_eq(marcel_trace_mark("before on"), 0);
	marcel_usleep(1000); /* idle periods that must not be recorded */
	ck_assert_int_eq(marcel_trace_on(), 0);
	ck_assert_int_eq(marcel_trace_mark("after on"), 0);
	marcel_end();

	struct event_list l;
	load_events(&l);
	long off = find(&l, "i", "trace off", NULL), on = find(&l, "i", "trace on", NULL);
	ck_assert_int_ge(off, 0);
	ck_assert_int_eq(l.ev[off].tid, 3); /* recorded by marcel_init: outside */
	ck_assert_int_gt(on, off);
	ck_assert_int_lt(find(&l, "i", "before on", NULL), 0);
	ck_assert_int_gt(find(&l, "i", "after on", NULL), on);
	for (size_t j = 0; j < l.n; j++)
		if (strcmp(l.ev[j].ph, "M") && (long)j != off)
			ck_assert_msg(l.ev[j].ts >= l.ev[on].ts, "'%s' recorded before marcel_trace_on", l.ev[j].name);
	free(l.ev);
	trace_done();
}
END_TEST

START_TEST(no_trace_configured)
{
	unsetenv("MARCEL_TRACE");
	ck_assert_int_eq(marcel_trace_on(), ENOENT);
	ck_assert_int_eq(marcel_trace_mark("x"), ENOENT);
	ck_assert_int_eq(marcel_trace_mark(NULL), EINVAL);
	ma_test_init();
	ck_assert_int_eq(__atomic_load_n(&ma_trace_active, __ATOMIC_RELAXED), 0);
	ck_assert_int_eq(marcel_trace_off(), ENOENT);
	ck_assert_int_eq(__atomic_load_n(&ma_trace_active, __ATOMIC_RELAXED), 0);
	ck_assert_int_eq(marcel_trace_on(), ENOENT);
	ck_assert_int_eq(marcel_trace_mark("x"), ENOENT);
	/* Harmless when called directly, too. */
	ma_trace_emit(MA_TR_MARK, 0, 0, "nowhere");
	marcel_end();
}
END_TEST

/* ---- a bad path ---- */

static int init_expect_failure(int argc, char **argv, int expected, const char *names)
{
	struct ma_test_capture c;
	char out[2048];
	ma_test_capture_begin(&c);
	int e = marcel_init(&argc, argv);
	ma_test_capture_end(&c, out, sizeof(out));
	ck_assert_int_eq(e, expected);
	ck_assert_msg(strstr(out, names) && strstr(out, "/nonexistent/dir/t.json") && strstr(out, strerror(expected)),
		      "unexpected message: %s", out);
	ck_assert_msg(strchr(out, '\n') == out + strlen(out) - 1, "not one line: %s", out);
	ck_assert_int_eq(marcel_trace_on(), ENOENT); /* nothing is being recorded */
	return e;
}

static any_t square(any_t x)
{
	return (any_t)((long)x * (long)x);
}

static void init_works(void)
{
	ma_test_init();
	marcel_t t;
	any_t r;
	ck_assert_int_eq(marcel_create(&t, NULL, square, (any_t)7L), 0);
	ck_assert_int_eq(marcel_join(t, &r), 0);
	ck_assert_int_eq((long)r, 49);
	marcel_end();
}

START_TEST(bad_path_fails_init)
{
	setenv("MARCEL_TRACE", "/nonexistent/dir/t.json", 1);
	init_expect_failure(1, (char *[]){ "test", NULL }, ENOENT, "MARCEL_TRACE");
	unsetenv("MARCEL_TRACE");
	init_works();
	init_expect_failure(3, (char *[]){ "test", "--marcel-trace", "/nonexistent/dir/t.json", NULL }, ENOENT,
			    "--marcel-trace");
	init_works();
	/* A directory. */
	setenv("MARCEL_TRACE", "/", 1);
	struct ma_test_capture c;
	char out[1024];
	ma_test_capture_begin(&c);
	int e = marcel_init(NULL, NULL);
	ma_test_capture_end(&c, out, sizeof(out));
	ck_assert_int_ne(e, 0);
	ck_assert_msg(strstr(out, "MARCEL_TRACE='/'"), "unexpected message: %s", out);
	/* And a good one after the failures. */
	trace_tmp();
	init_works();
	struct tj_summary s;
	load_summary(&s);
	ck_assert_uint_ge(s.nb_tracks, 2);
	tj_sum_free(&s);
	trace_done();
}
END_TEST

/* ---- volume: every event of a long run is there ---- */

#define STRESS_VPS 4
static long stress_pairs, stress_outside;

static any_t emit_pairs(any_t arg_)
{
	unsigned vp = (unsigned)(long)arg_;
	ck_assert_int_eq(marcel_current_vp(), (int)vp);
	for (long i = 0; i < stress_pairs; i++) {
		ma_trace_emit(MA_TR_THREAD_RUN, ID(1000 + vp), 0, "stress");
		ma_trace_emit(MA_TR_THREAD_STOP, ID(1000 + vp), 0, "stress");
	}
	return NULL;
}

static void *emit_outside(void *arg_)
{
	(void)arg_;
	for (long i = 0; i < stress_outside; i++)
		ma_trace_emit(MA_TR_THREAD_NEW, ID(2000), 0, "stress outside");
	return NULL;
}

START_TEST(many_events_complete)
{
	stress_pairs = 60000 / ma_test_scale_div();
	stress_outside = 20000 / ma_test_scale_div();
	trace_tmp();
	init_on("pack:2 core:2 pu:1");
	ck_assert_uint_eq(marcel_nbvps(), STRESS_VPS);
	struct ma_test_capture c;
	char out[2048];
	ma_test_capture_begin(&c);
	marcel_t t[STRESS_VPS];
	for (unsigned v = 0; v < STRESS_VPS; v++) {
		marcel_attr_t a = ma_test_attr_on_vp(v);
		ck_assert_int_eq(marcel_create(&t[v], &a, emit_pairs, (any_t)(long)v), 0);
	}
	pthread_t pt[2];
	for (unsigned k = 0; k < 2; k++)
		ck_assert_int_eq(pthread_create(&pt[k], NULL, emit_outside, NULL), 0);
	for (unsigned v = 0; v < STRESS_VPS; v++)
		ck_assert_int_eq(marcel_join(t[v], NULL), 0);
	for (unsigned k = 0; k < 2; k++)
		ck_assert_int_eq(pthread_join(pt[k], NULL), 0);
	marcel_end();
	ma_test_capture_end(&c, out, sizeof(out));
	ck_assert_msg(!strstr(out, "lost"), "events lost: %s", out);

	struct tj_summary s;
	load_summary(&s);
	check_tracks(&s, STRESS_VPS);
	/* The scheduler's own slices come on top of ours. */
	for (unsigned v = 0; v < STRESS_VPS; v++)
		ck_assert_msg(s.tracks[v].slices >= (unsigned long)stress_pairs, "VP%u: %lu slices, expected %ld", v,
			      s.tracks[v].slices, stress_pairs);
	ck_assert_uint_ge(tj_sum_count_of(&s, "thread new"), 2 * (unsigned long)stress_outside);
	tj_sum_free(&s);
	trace_done();
}
END_TEST

/* Threads pinned two per VP yield to each other; each counts the partner's progress it
 * sees across a yield, which proves the partner ran in between (a slice of its own). */
struct yielder {
	atomic_long count;
	long switches;
	struct yielder *partner;
	long rounds;
};

static any_t yield_loop(any_t arg_)
{
	struct yielder *y = arg_;
	long seen = atomic_load(&y->partner->count);
	for (long i = 0; i < y->rounds; i++) {
		atomic_fetch_add(&y->count, 1);
		marcel_yield();
		long now = atomic_load(&y->partner->count);
		y->switches += now != seen;
		seen = now;
	}
	return NULL;
}

START_TEST(many_yields_slices)
{
	trace_tmp();
	init_on("pack:2 core:2 pu:1");
	ck_assert_uint_eq(marcel_nbvps(), STRESS_VPS);
	static struct yielder y[2 * STRESS_VPS];
	marcel_t t[2 * STRESS_VPS];
	long rounds = 200000 / (2 * STRESS_VPS) / ma_test_scale_div();
	for (unsigned k = 0; k < 2 * STRESS_VPS; k++) {
		atomic_init(&y[k].count, 0);
		y[k].switches = 0;
		y[k].partner = &y[k ^ 1];
		y[k].rounds = rounds;
	}
	for (unsigned k = 0; k < 2 * STRESS_VPS; k++) {
		marcel_attr_t a = ma_test_attr_on_vp(k / 2);
		ck_assert_int_eq(marcel_create(&t[k], &a, yield_loop, &y[k]), 0);
	}
	long switches = 0;
	for (unsigned k = 0; k < 2 * STRESS_VPS; k++) {
		ck_assert_int_eq(marcel_join(t[k], NULL), 0);
		switches += y[k].switches;
	}
	marcel_end();

	struct tj_summary s;
	load_summary(&s);
	check_tracks(&s, STRESS_VPS);
	unsigned long slices = 0;
	for (unsigned v = 0; v < STRESS_VPS; v++)
		slices += s.tracks[v].slices;
	/* Until the scheduler records thread switches there are no slices to count. */
	if (slices)
		ck_assert_msg(slices >= (unsigned long)switches, "%lu slices for %ld observed switches", slices,
			      switches);
	else
		fprintf(stderr, "check_trace: no thread slices recorded (%ld switches): the scheduler does "
				"not trace switches yet\n", switches);
	tj_sum_free(&s);
	trace_done();
}
END_TEST

/* ---- the parser and the summary tool ---- */

START_TEST(parser_is_strict)
{
	static const char *const bad[] = {
		"", "[]", "{\"a\":1}", "{\"traceEvents\":[],}", "{\"traceEvents\":[1,]}", "{\"traceEvents\":[]} x",
		"{\"traceEvents\":[\"\001\"]}", "{\"traceEvents\":[\"\\ud800\"]}", "{\"traceEvents\":[\"\\udc00\"]}",
		"{\"traceEvents\":[01]}", "{\"traceEvents\":[1.]}", "{\"traceEvents\":[-]}", "{\"traceEvents\":[1e]}",
		"{\"traceEvents\":[\"\\q\"]}", "{\"traceEvents\":[\"\377\"]}", "{\"traceEvents\":[\"\300\200\"]}",
		"{\"traceEvents\":[\"\355\240\200\"]}", "{\"traceEvents\":[{\"ph\":1}]}", "{\"traceEvents\":[",
		"{\"traceEvents\":[tru]}", "{\"traceEvents\":{}}", "{traceEvents:[]}", "{\"traceEvents\":[{\"ts\":\"1\"}]}",
		"{\"traceEvents\":[\"a\" \"b\"]}", "{\"traceEvents\" []}",
	};
	for (unsigned k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		struct tj_parser ps;
		ck_assert_msg(tj_parse(&ps, bad[k], strlen(bad[k]), NULL, NULL) == -1, "accepted: %s", bad[k]);
		ck_assert(ps.err[0]);
	}
	const char *good = " {\"displayTimeUnit\":\"ns\",\"x\":[null,true,false,{\"y\":-0.5e-3}],\"traceEvents\":[\n"
			   "{\"ph\":\"i\",\"s\":\"t\",\"pid\":1,\"tid\":2,\"ts\":1.5E3,\"name\":\"\\u00e9\\ud83d\\ude00\\/\","
			   "\"args\":{\"k\":\"v\",\"n\":-12,\"o\":{}}}]} ";
	struct event_list l = { 0 };
	struct tj_parser ps;
	ck_assert_msg(tj_parse(&ps, good, strlen(good), collect, &l) == 0, "%s", ps.err);
	ck_assert_uint_eq(l.n, 1);
	ck_assert_str_eq(l.ev[0].name, "\303\251\360\237\230\200/");
	ck_assert(l.ev[0].ts == 1500.0);
	ck_assert_int_eq(l.ev[0].tid, 2);
	ck_assert_str_eq(arg(&l.ev[0], "k"), "v");
	ck_assert_str_eq(arg(&l.ev[0], "n"), "-12");
	ck_assert_str_eq(arg(&l.ev[0], "o"), "{...}");
	free(l.ev);
}
END_TEST

/* Runs marcel-trace-summary on path; its exit status, its stdout in out. */
static int run_summary(const char *path, char *out, size_t n)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "'%s/marcel-trace-summary' '%s' 2>&1", MA_TOOLS_DIR, path);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	size_t len = fread(out, 1, n - 1, p);
	out[len] = 0;
	int st = pclose(p);
	ck_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static void write_file(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(text, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

START_TEST(summary_tool)
{
	trace_tmp();
	init_on("core:2");
	ma_trace_emit(MA_TR_THREAD_RUN, ID(1), 0, "one");
	marcel_usleep(2000);
	ma_trace_emit(MA_TR_THREAD_STOP, ID(1), 0, "one");
	marcel_trace_mark("here");
	marcel_end();
	char out[8192];
	ck_assert_int_eq(run_summary(trace_path, out, sizeof(out)), 0);
	ck_assert_msg(strstr(out, "\nVP0 ") && strstr(out, "\nVP1 ") && strstr(out, "\noutside "), "%s", out);
	ck_assert_msg(strstr(out, "  here\n"), "%s", out);
	/* VP0's line: one slice at least (ours), busy for a part of the run. */
	const char *vp0 = strstr(out, "\nVP0 ");
	unsigned long slices;
	double busy;
	ck_assert_int_eq(sscanf(vp0, " VP0 %lu %lf%%", &slices, &busy), 2);
	ck_assert_uint_ge(slices, 1);
	ck_assert(busy > 0 && busy <= 100);

	/* Cut in the middle: not JSON. */
	size_t len;
	char *text = tj_read_file(trace_path, &len);
	ck_assert_ptr_nonnull(text);
	write_file(trace_path, text, len / 2);
	ck_assert_int_eq(run_summary(trace_path, out, sizeof(out)), 1);
	ck_assert_msg(strstr(out, "not a valid trace"), "%s", out);
	free(text);
	/* Valid JSON whose slice never ends: Perfetto would show it to the end of time. */
	const char *open = "{\"traceEvents\":[{\"ph\":\"B\",\"pid\":1,\"tid\":1,\"ts\":1,\"name\":\"x\"}]}";
	write_file(trace_path, open, strlen(open));
	ck_assert_int_eq(run_summary(trace_path, out, sizeof(out)), 1);
	ck_assert_msg(strstr(out, "left open"), "%s", out);
	trace_done();
}
END_TEST

static void populate_real(TCase *tc)
{
	tcase_add_test(tc, tracks_and_idle_events);
}

int main(void)
{
	Suite *s = suite_create("trace");
	TCase *tc = tcase_create("writer");
	tcase_add_test(tc, writer_every_kind);
	tcase_add_test(tc, off_and_on);
	tcase_add_test(tc, off_before_init_starts_paused);
	tcase_add_test(tc, no_trace_configured);
	tcase_add_test(tc, bad_path_fails_init);
	tcase_add_test(tc, parser_is_strict);
	tcase_add_test(tc, summary_tool);
	suite_add_tcase(s, tc);
	ma_test_add_both(s, "run", populate_real, 0);
	TCase *vol = tcase_create("volume");
	tcase_add_test(vol, many_events_complete);
	tcase_add_test(vol, many_yields_slices);
	suite_add_tcase(s, vol);
	trace_dir_create();
	int r = ma_test_run(s);
	trace_dir_remove();
	return r;
}
