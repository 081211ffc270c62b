/*
 * Thread-local storage under marcel: `__thread` variables belong to kernel threads, and
 * MARCEL_DEBUG=1 reports a marcel thread that leaves data in them and resumes on another
 * kernel thread (marcel/tls_check.c). Threads are moved deterministically: to another
 * VP with marcel_apply_vpset, or through a blocking section, after which the thread
 * always resumes on another kernel thread (its own one becomes a spare).
 */
#include "ma_test.h"
#include <locale.h>
#include <pthread.h>

static __thread long tls_value;

/* Through calls the compiler cannot see into: in one function it may keep the address
 * of a thread-local variable (or pthread_self, declared const) from before a call that
 * moved the thread. */
static __attribute__((noinline)) long tls_get(void)
{
	__asm__ volatile("" ::: "memory");
	return tls_value;
}

static __attribute__((noinline)) void tls_set(long v)
{
	__asm__ volatile("" ::: "memory");
	tls_value = v;
}

static __attribute__((noinline)) pthread_t kernel_thread(void)
{
	__asm__ volatile("" ::: "memory");
	return pthread_self();
}

/* The warning's fixed part, and the line saying the rest of a module's are not shown. */
#define TLS_SAYS "left data in __thread variables of "
#define TLS_MORE "further threads leaving __thread variables of "

static int count(const char *text, const char *what)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* Starts the runtime with MARCEL_DEBUG as given, on 2 VPs at least on this machine. */
static void init_debug(int debug)
{
	if (debug)
		setenv("MARCEL_DEBUG", "1", 1);
	if (!ma_test_topology)
		setenv("MARCEL_NVP", "2", 1);
	ma_test_init();
	unsetenv("MARCEL_DEBUG");
	unsetenv("MARCEL_NVP");
	ck_assert_uint_ge(marcel_nbvps(), 2);
}

/* What a moved thread saw. */
struct moved {
	long write;                       /* leave tls_value at this before moving; 0: untouched */
	int restore;                      /* set it, then put it back before moving */
	int libc;                         /* use errno, strerror, malloc, stdio, locales instead */
	int section;                      /* move through a blocking section, not to VP 1 */
	int moves;                        /* VP moves (VP 1, then VP 0 again...) */
	int vp_after;
	int kernel_thread_changed;
	long value_after;
};

static void use_libc(void)
{
	errno = ENOENT;
	char buf[64];
	snprintf(buf, sizeof(buf), "%s %d", strerror(EINVAL), getpid());
	void *p = malloc(100);
	ck_assert_ptr_nonnull(p);
	free(p);
	/* The worker's locale: marcel leaves it to the C library, which keeps it per kernel
	 * thread. */
	locale_t l = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	ck_assert_ptr_nonnull(l);
	uselocale(l);
	uselocale(LC_GLOBAL_LOCALE);
	freelocale(l);
	errno = EAGAIN;
}

static any_t move_body(any_t arg)
{
	struct moved *m = arg;
	pthread_t before = kernel_thread();
	if (m->write)
		tls_set(m->write);
	if (m->restore)
		tls_set(42);
	if (m->restore)
		tls_set(0);
	if (m->libc)
		use_libc();
	if (m->section) {
		ck_assert_int_eq(marcel_enter_blocking_section(), 0);
		ck_assert_int_eq(marcel_leave_blocking_section(), 0);
	}
	for (int i = 0; i < m->moves; i++) {
		marcel_vpset_t s = MARCEL_VPSET_VP((unsigned)(i + 1) % 2);
		ck_assert_int_eq(marcel_apply_vpset(&s), 0);
		if (i == 0) {
			m->kernel_thread_changed = !pthread_equal(before, kernel_thread());
			m->value_after = tls_get();
		}
	}
	if (m->section) {
		m->kernel_thread_changed = !pthread_equal(before, kernel_thread());
		m->value_after = tls_get();
	}
	m->vp_after = marcel_current_vp();
	return NULL;
}

/* Runs move_body as thread `name` on VP 0 with what it writes on stderr in out. */
static void run_moved(struct moved *m, const char *name, char *out, size_t n)
{
	marcel_attr_t a = ma_test_attr_on_vp(0);
	ck_assert_int_eq(marcel_attr_setname(&a, name), 0);
	struct ma_test_capture cap;
	ma_test_capture_begin(&cap);
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, &a, move_body, m), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ma_test_capture_end(&cap, out, n);
	/* The scene the test is about did happen: another kernel thread, another copy. */
	ck_assert_msg(m->kernel_thread_changed, "the thread did not change kernel threads");
	ck_assert_int_eq(m->value_after, 0);
}

static char out[16384];

/* A thread that leaves a value in a `__thread` variable and moves to another VP is
 * reported once, by name and with the module's name, however often it moves after. */
START_TEST(test_moved_writer_reported)
{
	init_debug(1);
	struct moved m = { .write = 42, .moves = 3 };
	run_moved(&m, "tls-writer", out, sizeof(out));
	ck_assert_int_eq(m.vp_after, 1);
	ck_assert_msg(count(out, TLS_SAYS) == 1, "expected one report, got:\n%s", out);
	ck_assert_msg(strstr(out, "'tls-writer' " TLS_SAYS), "the thread is not named in:\n%s", out);
	ck_assert_msg(strstr(out, "check_tls and now runs on another kernel thread"), "the program is not named in:\n%s",
		      out);
	ck_assert_msg(strstr(out, "pthread_key_create"), "no advice in:\n%s", out);
	marcel_end();
}
END_TEST

/* A blocking section moves the thread to another kernel thread even on one VP. */
START_TEST(test_section_writer_reported)
{
	setenv("MARCEL_DEBUG", "1", 1);
	setenv("MARCEL_NVP", "1", 1);
	ma_test_init();
	unsetenv("MARCEL_DEBUG");
	unsetenv("MARCEL_NVP");
	struct moved m = { .write = 42, .section = 1 };
	run_moved(&m, "tls-section", out, sizeof(out));
	ck_assert_int_eq(m.vp_after, 0);
	ck_assert_msg(count(out, TLS_SAYS) == 1 && strstr(out, "'tls-section' " TLS_SAYS), "got:\n%s", out);
	marcel_end();
}
END_TEST

/* Waits on the semaphore with its value left in tls_value: it never moves (VP 0 only,
 * no blocking section), so it is never reported. */
static marcel_sem_t hold;

static any_t stay_writer(any_t arg)
{
	(void)arg;
	tls_set(7);
	marcel_sem_P(&hold);
	ck_assert_int_eq(tls_get(), 7);
	return NULL;
}

/* A thread that never writes a `__thread` variable moves without a report, while
 * another leaves its value on the kernel thread it left. */
START_TEST(test_untouched_quiet)
{
	init_debug(1);
	marcel_sem_init(&hold, 0);
	marcel_attr_t a = ma_test_attr_on_vp(0);
	marcel_t w;
	ck_assert_int_eq(marcel_create(&w, &a, stay_writer, NULL), 0);
	struct moved m = { .moves = 3 };
	run_moved(&m, "tls-quiet", out, sizeof(out));
	marcel_sem_V(&hold);
	ck_assert_int_eq(marcel_join(w, NULL), 0);
	ck_assert_msg(!strstr(out, "__thread"), "unexpected report:\n%s", out);
	marcel_end();
}
END_TEST

/* Runs move_body with m under MARCEL_DEBUG as given, and checks that nothing is reported. */
static void expect_quiet(struct moved m, const char *name, int debug)
{
	init_debug(debug);
	run_moved(&m, name, out, sizeof(out));
	ck_assert_msg(!strstr(out, "__thread"), "unexpected report:\n%s", out);
	marcel_end();
}

/* errno, the C library's buffers, malloc's caches and the thread's locale are
 * per-kernel-thread state of the C library: no report. */
START_TEST(test_libc_quiet)
{
	expect_quiet((struct moved){ .libc = 1, .moves = 2 }, "tls-libc", 1);
}
END_TEST

/* Set and put back within one run: nothing was left behind. */
START_TEST(test_restored_quiet)
{
	expect_quiet((struct moved){ .restore = 1, .moves = 2 }, "tls-restored", 1);
}
END_TEST

/* Without MARCEL_DEBUG, nothing is watched. */
START_TEST(test_debug_off_quiet)
{
	expect_quiet((struct moved){ .write = 42, .moves = 2 }, "tls-nodebug", 0);
}
END_TEST

/* Many threads leaving the same module's variables: the first few are reported, then
 * one line says the others are not. */
START_TEST(test_reports_bounded)
{
	init_debug(1);
	enum { N = 12 };
	struct moved m[N];
	marcel_t t[N];
	struct ma_test_capture cap;
	ma_test_capture_begin(&cap);
	for (int i = 0; i < N; i++) {
		/* Each its own value: writing what the previous one left changes nothing. */
		m[i] = (struct moved){ .write = 100 + i, .moves = 1 };
		marcel_attr_t a = ma_test_attr_on_vp(0);
		ck_assert_int_eq(marcel_create(&t[i], &a, move_body, &m[i]), 0);
	}
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(marcel_join(t[i], NULL), 0);
	ma_test_capture_end(&cap, out, sizeof(out));
	ck_assert_msg(count(out, TLS_SAYS) == 8, "expected 8 reports, got:\n%s", out);
	ck_assert_msg(count(out, TLS_MORE) == 1, "expected the line about the others, got:\n%s", out);
	marcel_end();
}
END_TEST

static void populate(TCase *tc)
{
	tcase_add_test(tc, test_moved_writer_reported);
	tcase_add_test(tc, test_section_writer_reported);
	tcase_add_test(tc, test_untouched_quiet);
	tcase_add_test(tc, test_libc_quiet);
	tcase_add_test(tc, test_restored_quiet);
	tcase_add_test(tc, test_debug_off_quiet);
	tcase_add_test(tc, test_reports_bounded);
}

int main(void)
{
	Suite *s = suite_create("tls");
	ma_test_add_both(s, "tls", populate, 60);
	return ma_test_run(s);
}
