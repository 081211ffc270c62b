/*
 * Blocking sections and the I/O wrappers: a thread blocked in the kernel inside a section
 * must not stop the other threads of its VP, and must come back as a normal marcel thread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "ma_test.h"

static int pipefd[2];
static atomic_int progress;
static atomic_int reader_blocked;

static any_t reader_section(any_t arg)
{
	(void)arg;
	char c = 0;
	ck_assert_int_eq(marcel_enter_blocking_section(), 0);
	/* Off the VP, but still this marcel thread. */
	ck_assert_ptr_nonnull(marcel_self());
	ck_assert_int_eq(marcel_current_vp(), -1);
	atomic_store(&reader_blocked, 1);
	ssize_t r = read(pipefd[0], &c, 1);
	ck_assert_int_eq(marcel_leave_blocking_section(), 0);
	ck_assert_int_eq(r, 1);
	ck_assert_int_ge(marcel_current_vp(), 0);
	return (any_t)(long)c;
}

static any_t counter(any_t arg)
{
	(void)arg;
	/* Runs on the reader's VP while the reader is blocked in read(): proof that the VP
	 * was handed over. Then it unblocks the reader itself. */
	while (!atomic_load(&reader_blocked))
		marcel_yield();
	for (int i = 0; i < 1000; i++) {
		atomic_fetch_add(&progress, 1);
		marcel_yield();
	}
	char c = 'x';
	ck_assert_int_eq(write(pipefd[1], &c, 1), 1);
	return NULL;
}

static void one_vp_env(void)
{
	setenv("MARCEL_NVP", "1", 1);
}

START_TEST(section_frees_the_vp)
{
	one_vp_env();
	ma_test_init();
	unsetenv("MARCEL_NVP");
	ck_assert_int_eq(marcel_nbvps(), 1);
	ck_assert_int_eq(pipe(pipefd), 0);
	atomic_store(&progress, 0);
	atomic_store(&reader_blocked, 0);
	marcel_t r, c;
	ck_assert_int_eq(marcel_create(&r, NULL, reader_section, NULL), 0);
	ck_assert_int_eq(marcel_create(&c, NULL, counter, NULL), 0);
	any_t got;
	ck_assert_int_eq(marcel_join(c, NULL), 0);
	ck_assert_int_eq(marcel_join(r, &got), 0);
	ck_assert_int_eq((long)got, 'x');
	ck_assert_int_eq(atomic_load(&progress), 1000);
	close(pipefd[0]);
	close(pipefd[1]);
	marcel_end();
}
END_TEST

static any_t reader_wrapper(any_t arg)
{
	(void)arg;
	char buf[4];
	atomic_store(&reader_blocked, 1);
	ssize_t r = marcel_read(pipefd[0], buf, sizeof(buf));
	return (any_t)r;
}

START_TEST(read_wrapper_frees_the_vp)
{
	one_vp_env();
	ma_test_init();
	unsetenv("MARCEL_NVP");
	ck_assert_int_eq(pipe(pipefd), 0);
	atomic_store(&progress, 0);
	atomic_store(&reader_blocked, 0);
	marcel_t r, c;
	ck_assert_int_eq(marcel_create(&r, NULL, reader_wrapper, NULL), 0);
	ck_assert_int_eq(marcel_create(&c, NULL, counter, NULL), 0);
	any_t got;
	ck_assert_int_eq(marcel_join(c, NULL), 0);
	ck_assert_int_eq(marcel_join(r, &got), 0);
	ck_assert_int_eq((long)got, 1);
	ck_assert_int_eq(atomic_load(&progress), 1000);
	ck_assert_int_eq(marcel_close(pipefd[0]), 0);
	ck_assert_int_eq(marcel_close(pipefd[1]), 0);
	marcel_end();
}
END_TEST

/* errno is read in a fresh function after each call: the caller may resume on another
 * kernel thread, and a compiler may keep errno's address across a call (glibc declares
 * __errno_location const), which would read the old kernel thread's errno. */
static __attribute__((noinline)) int errno_after_read(int fd)
{
	ck_assert_int_eq(marcel_read(fd, NULL, 1), -1);
	return errno;
}

static __attribute__((noinline)) int errno_after_write(int fd)
{
	ck_assert_int_eq(marcel_write(fd, "x", 1), -1);
	return errno;
}

static __attribute__((noinline)) int errno_after_close(int fd)
{
	ck_assert_int_eq(marcel_close(fd), -1);
	return errno;
}

static __attribute__((noinline)) int errno_after_lseek(int fd)
{
	ck_assert_int_eq(marcel_lseek(fd, 0, SEEK_SET), -1);
	return errno;
}

static __attribute__((noinline)) int errno_after_fsync(int fd)
{
	ck_assert_int_eq(marcel_fsync(fd), -1);
	return errno;
}

START_TEST(wrappers_keep_errno)
{
	ma_test_init();
	for (int i = 0; i < 50; i++) {
		ck_assert_int_eq(errno_after_read(-1), EBADF);
		ck_assert_int_eq(errno_after_write(-1), EBADF);
		ck_assert_int_eq(errno_after_close(-1), EBADF);
		ck_assert_int_eq(errno_after_lseek(-1), EBADF);
		ck_assert_int_eq(errno_after_fsync(-1), EBADF);
	}
	char path[] = "/tmp/marcel-blockingXXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	unlink(path);
	ck_assert_int_eq(marcel_write(fd, "hello", 5), 5);
	ck_assert_int_eq(marcel_fsync(fd), 0);
	ck_assert_int_eq(marcel_lseek(fd, 1, SEEK_SET), 1);
	char buf[8] = { 0 };
	ck_assert_int_eq(marcel_read(fd, buf, sizeof(buf)), 4);
	ck_assert_str_eq(buf, "ello");
	ck_assert_int_eq(marcel_close(fd), 0);
	marcel_end();
}
END_TEST

START_TEST(misuse_gives_eperm)
{
	ma_test_init();
	ck_assert_int_eq(marcel_leave_blocking_section(), EPERM);
	ck_assert_int_eq(marcel_enter_blocking_section(), 0);
	ck_assert_int_eq(marcel_enter_blocking_section(), EPERM); /* sections do not nest */
	ck_assert_int_eq(marcel_leave_blocking_section(), 0);
	ck_assert_int_eq(marcel_leave_blocking_section(), EPERM);
	marcel_end();
}
END_TEST

static void *plain_pthread(void *arg)
{
	(void)arg;
	return (void *)(long)marcel_enter_blocking_section();
}

START_TEST(foreign_thread_gets_eperm)
{
	ma_test_init();
	pthread_t p;
	void *r;
	ck_assert_int_eq(pthread_create(&p, NULL, plain_pthread, NULL), 0);
	ck_assert_int_eq(pthread_join(p, &r), 0);
	ck_assert_int_eq((long)r, EPERM);
	marcel_end();
}
END_TEST

#define NSLEEPERS 24
static int sleeper_pipes[NSLEEPERS][2];

static any_t section_sleeper(any_t arg)
{
	long i = (long)arg;
	char c;
	ssize_t r = marcel_read(sleeper_pipes[i][0], &c, 1);
	ck_assert_int_eq(r, 1);
	return (any_t)(long)c;
}

/* More threads blocked in the kernel at once than there are VPs: spare carriers are
 * created on demand, and once the calls return everyone finishes. */
START_TEST(many_sections_at_once)
{
	ma_test_init();
	marcel_t t[NSLEEPERS];
	for (long i = 0; i < NSLEEPERS; i++) {
		ck_assert_int_eq(pipe(sleeper_pipes[i]), 0);
		ck_assert_int_eq(marcel_create(&t[i], NULL, section_sleeper, (any_t)i), 0);
	}
	marcel_usleep(20000);
	for (long i = 0; i < NSLEEPERS; i++) {
		char c = (char)('a' + i);
		ck_assert_int_eq(write(sleeper_pipes[i][1], &c, 1), 1);
	}
	for (long i = 0; i < NSLEEPERS; i++) {
		any_t got;
		ck_assert_int_eq(marcel_join(t[i], &got), 0);
		ck_assert_int_eq((long)got, 'a' + i);
		close(sleeper_pipes[i][0]);
		close(sleeper_pipes[i][1]);
	}
	marcel_end();
}
END_TEST

static any_t repeat_sections(any_t arg)
{
	(void)arg;
	for (int i = 0; i < 200; i++) {
		ck_assert_int_eq(marcel_enter_blocking_section(), 0);
		ck_assert_int_eq(marcel_leave_blocking_section(), 0);
		marcel_yield();
	}
	return NULL;
}

/* Carriers are recycled: many short sections from many threads. */
START_TEST(sections_are_cheap_to_repeat)
{
	ma_test_init();
	marcel_t t[8];
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(marcel_create(&t[i], NULL, repeat_sections, NULL), 0);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(marcel_join(t[i], NULL), 0);
	marcel_end();
}
END_TEST

/* main itself blocks in a section; marcel_end must still return on the process's main
 * kernel thread, so what runs after it sees its own thread-local state. */
START_TEST(main_section_returns_home)
{
	ma_test_init();
	pid_t tid = (pid_t)syscall(SYS_gettid);
	for (int i = 0; i < 10; i++) {
		ck_assert_int_eq(marcel_enter_blocking_section(), 0);
		usleep(1000);
		ck_assert_int_eq(marcel_leave_blocking_section(), 0);
	}
	marcel_end();
	ck_assert_int_eq((pid_t)syscall(SYS_gettid), tid);
	/* And the runtime starts again from here. */
	ma_test_init();
	marcel_end();
}
END_TEST

static void populate(TCase *tc)
{
	tcase_add_test(tc, section_frees_the_vp);
	tcase_add_test(tc, read_wrapper_frees_the_vp);
	tcase_add_test(tc, wrappers_keep_errno);
	tcase_add_test(tc, misuse_gives_eperm);
	tcase_add_test(tc, foreign_thread_gets_eperm);
	tcase_add_test(tc, many_sections_at_once);
	tcase_add_test(tc, sections_are_cheap_to_repeat);
	tcase_add_test(tc, main_section_returns_home);
}

int main(void)
{
	Suite *s = suite_create("blocking");
	ma_test_add_both(s, "blocking", populate, 60);
	return ma_test_run(s);
}
