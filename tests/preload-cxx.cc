// An ordinary C++ program (std::thread, std::mutex, std::condition_variable,
// std::call_once, recursive, shared and timed mutexes; no marcel header, built with plain `c++ -pthread`), run by
// preload-run.sh under LD_PRELOAD=libmarcel-preload.so: libstdc++ builds these on the
// pthread calls, which become marcel's. Prints "preload-cxx: ok" or exits non-zero.
#include <dlfcn.h>
#include <pthread.h>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#define CHECK(c)                                                                             \
	do {                                                                                 \
		if (!(c)) {                                                                  \
			std::fprintf(stderr, "preload-cxx: line %d: check failed: %s\n", __LINE__, #c); \
			std::exit(1);                                                        \
		}                                                                            \
	} while (0)

int main()
{
	auto marcel_self = reinterpret_cast<void *(*)()>(dlsym(RTLD_DEFAULT, "marcel_self"));
	CHECK(marcel_self != nullptr);

	// A token passed around 32 threads, each waiting for its turn on one condition.
	const int n = 32, rounds = 100;
	std::mutex m;
	std::condition_variable cv;
	int turn = 0;
	std::atomic<int> on_marcel{ 0 };
	std::vector<std::thread> ts;
	for (int i = 0; i < n; i++)
		ts.emplace_back([&, i] {
			if (marcel_self() == reinterpret_cast<void *>(pthread_self()))
				on_marcel++;
			for (int r = 0; r < rounds; r++) {
				std::unique_lock<std::mutex> l(m);
				cv.wait(l, [&] { return turn % n == i; });
				turn++;
				cv.notify_all();
			}
		});
	for (auto &t : ts)
		t.join();
	CHECK(turn == n * rounds);
	CHECK(on_marcel == n);

	// wait_for times out (pthread_cond_clockwait on the steady clock).
	{
		std::unique_lock<std::mutex> l(m);
		auto t0 = std::chrono::steady_clock::now();
		CHECK(cv.wait_for(l, std::chrono::milliseconds(20)) == std::cv_status::timeout);
		CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(20));
	}

	// call_once from many threads, sleep_for, this_thread::yield.
	std::once_flag once;
	std::atomic<int> calls{ 0 };
	std::vector<std::thread> us;
	for (int i = 0; i < 16; i++)
		us.emplace_back([&] {
			std::call_once(once, [&] { calls++; });
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
			std::this_thread::yield();
		});
	for (auto &t : us)
		t.join();
	CHECK(calls == 1);
	// recursive_mutex (glibc's recursive static initialiser, converted at first use),
	// shared_mutex (rwlock), timed_mutex (clocklock) from several threads.
	std::recursive_mutex rm;
	std::shared_mutex sm;
	std::timed_mutex tm;
	long counter = 0, readers_saw = 0;
	std::vector<std::thread> vs;
	for (int i = 0; i < 8; i++)
		vs.emplace_back([&] {
			for (int k = 0; k < 200; k++) {
				{
					std::lock_guard<std::recursive_mutex> a(rm);
					std::lock_guard<std::recursive_mutex> b(rm);
					counter++;
				}
				{
					std::shared_lock<std::shared_mutex> r(sm);
					if (counter > 0)
						__atomic_fetch_add(&readers_saw, 1, __ATOMIC_RELAXED);
				}
				std::unique_lock<std::timed_mutex> t(tm, std::chrono::seconds(10));
				CHECK(t.owns_lock());
				std::this_thread::yield();
			}
		});
	for (auto &t : vs)
		t.join();
	CHECK(counter == 8 * 200);
	CHECK(readers_saw == 8 * 200);
	{
		std::unique_lock<std::timed_mutex> held(tm);
		std::thread other([&] { CHECK(!tm.try_lock_for(std::chrono::milliseconds(10))); });
		other.join();
	}
	std::printf("preload-cxx: %d std::threads on marcel: ok\n", n + 16 + 9);
	return 0;
}
