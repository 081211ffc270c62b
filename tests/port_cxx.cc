/*
 * <marcel/pthread.h> in C++, included before the standard headers that use the pthread
 * types. libstdc++ builds std::mutex, std::condition_variable, std::thread and the
 * stream reference counts from them in inline header code: had that code been parsed
 * after the header's macros, it would use marcel's types (of another size) while
 * libstdc++.so uses the C library's, and this program would hang in the first
 * condition-variable wait or crash. Built twice, by g++ and by clang++ (tests/Makefile.am).
 *
 * Not a Check suite: a plain program (exit 0, or 1 with the failed check on stderr),
 * with an alarm, so that a hang fails instead of stalling `make check`.
 */
#include <marcel/pthread.h>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#ifdef MA_NO_CLANGXX
int main()
{
	std::puts("clang++ not found: skipped");
	return 77;
}
#else

/* glibc's sizes: the standard types must be the C library's, not marcel's. */
#ifdef __SIZEOF_PTHREAD_MUTEX_T
static_assert(sizeof(std::mutex) == __SIZEOF_PTHREAD_MUTEX_T,
	      "std::mutex was built from marcel's mutex type");
#endif
#ifdef __SIZEOF_PTHREAD_COND_T
static_assert(sizeof(std::condition_variable) == __SIZEOF_PTHREAD_COND_T,
	      "std::condition_variable was built from marcel's condition type");
#endif
/* ...while the pthread names are marcel's. */
static_assert(sizeof(pthread_mutex_t) == sizeof(marcel_mutex_t), "pthread_mutex_t is not mapped");

#include "ma_plain_check.h"

static std::mutex counter_lock;
static long counter;

/* A marcel thread (pthread_create is mapped) using a kernel-level std::mutex for short
 * critical sections, as the porting guide allows. */
static void *count(void *arg)
{
	for (int i = 0; i < 1000; i++) {
		std::lock_guard<std::mutex> g(counter_lock);
		counter++;
	}
	return arg;
}

/* `char *const argv[]`, as some programs declare it: marcel_init takes it too. */
int main(int argc, char *const argv[])
{
	alarm(120);
	CHECK(marcel_init(&argc, argv) == 0);
	CHECK(pthread_self() != nullptr);

	/* Streams: their reference counts and locale use the gthread layer. */
	char path[] = "/tmp/marcel-port-cxx-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	{
		std::ofstream out(path);
		out << "line one\n" << 42 << '\n';
		CHECK(out.good());
	}
	{
		std::ifstream in(path);
		std::string word;
		int n = 0;
		in >> word;
		CHECK(word == "line");
		in >> word >> n;
		CHECK(word == "one" && n == 42);
	}
	unlink(path);

	/* A condition variable between this marcel thread and a kernel thread, both ways. */
	std::mutex m;
	std::condition_variable cv;
	int stage = 0;
	std::thread kernel([&] {
		std::unique_lock<std::mutex> l(m);
		stage = 1;
		cv.notify_all();
		cv.wait(l, [&] { return stage == 2; });
		stage = 3;
		cv.notify_all();
	});
	{
		std::unique_lock<std::mutex> l(m);
		cv.wait(l, [&] { return stage == 1; });
		stage = 2;
		cv.notify_all();
		cv.wait(l, [&] { return stage == 3; });
	}
	kernel.join();

	std::once_flag once;
	int once_runs = 0;
	for (int i = 0; i < 3; i++)
		std::call_once(once, [&] { once_runs++; });
	CHECK(once_runs == 1);

	std::shared_mutex rw;
	{
		std::shared_lock<std::shared_mutex> r1(rw);
		CHECK(rw.try_lock_shared());
		rw.unlock_shared();
		CHECK(!rw.try_lock());
	}
	CHECK(rw.try_lock());
	rw.unlock();

	/* marcel threads through the mapped names, sharing a std::mutex. */
	pthread_t t[4];
	for (auto &th : t)
		CHECK(pthread_create(&th, nullptr, count, nullptr) == 0);
	for (auto &th : t)
		CHECK(pthread_join(th, nullptr) == 0);
	CHECK(counter == 4000);

	/* The mapped sleep is marcel's, in C++ too. */
	CHECK(usleep(1000) == 0);

	marcel_end();
	std::puts("C++ include order: ok");
	return 0;
}
#endif
