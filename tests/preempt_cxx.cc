/*
 * Time slices and the C++ runtime's locks: on one VP with a 1 ms slice, a marcel thread
 * that holds a std::mutex, or runs the constructor of a function-local static, or a
 * std::call_once function, is not switched out until it is done (the other thread's
 * counter does not move meanwhile), while the other thread asks for the same thing.
 * Switched out there, the other thread would wait in the kernel (futex) and the only VP
 * with it: the program would hang. marcel counts these locks (marcel/foreign_locks.c).
 *
 * A plain program (exit 0; 1 with the failed check on stderr; 77 where this build cannot
 * preempt), with an alarm so that a hang fails.
 */
#include <marcel.h>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <unistd.h>

#include "ma_plain_check.h"

static volatile long holder_count, other_count;
static long iters;

/* Spins without calls; returns how often the other thread's counter moved meanwhile:
 * only a preemption lets it run. */
static __attribute__((noinline)) long spin_watch(long n)
{
	long last = other_count, changes = 0;
	for (long i = 0; i < n; i++) {
		holder_count = holder_count + 1;
		long o = other_count;
		if (o != last) {
			changes++;
			last = o;
		}
	}
	return changes;
}

static long iters_for_ms(long ms)
{
	long n = 1 << 20;
	for (;;) {
		auto t0 = std::chrono::steady_clock::now();
		spin_watch(n);
		double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
		if (s >= 0.02)
			return (long)(n * (ms / 1000.0) / s) + 1;
		n *= 2;
	}
}

enum kind { MUTEX, STATIC, CALL_ONCE, NB_KINDS };
static const char *const names[NB_KINDS] = { "std::mutex", "function-local static", "std::call_once" };

static kind current;
static std::mutex mtx;
static std::once_flag once;
static std::atomic<int> holding, done;
static long changes_held, changes_free;

struct slow {
	slow()
	{
		holding = 1;
		changes_held = spin_watch(iters);
	}
	int value = 42;
};

static int get_static()
{
	static slow s;
	return s.value;
}

static void held_part()
{
	holding = 1;
	changes_held = spin_watch(iters);
}

static void take(bool holder)
{
	switch (current) {
	case MUTEX: {
		std::lock_guard<std::mutex> g(mtx);
		if (holder)
			held_part();
		break;
	}
	case STATIC:
		CHECK(get_static() == 42);
		break;
	case CALL_ONCE:
		std::call_once(once, held_part);
		break;
	case NB_KINDS:
		break;
	}
}

static any_t holder_main(any_t)
{
	take(true);
	changes_free = spin_watch(iters);
	done = 1;
	return nullptr;
}

static any_t other_main(any_t)
{
	while (!done) {
		other_count = other_count + 1;
		if (holding)
			take(false);
	}
	return nullptr;
}

int main(int argc, char **argv)
{
	alarm(120);
	setenv("MARCEL_NVP", "1", 1);
	setenv("MARCEL_TIMESLICE", "1000", 1);
	int e = marcel_init(&argc, argv);
	if (e == EINVAL) {
		std::puts("no preemption in this build: skipped");
		return 77;
	}
	CHECK(e == 0);
	iters = iters_for_ms(30);
	for (int k = 0; k < NB_KINDS; k++) {
		current = (kind)k;
		holding = 0;
		done = 0;
		marcel_t h, o;
		CHECK(marcel_create(&h, nullptr, holder_main, nullptr) == 0);
		CHECK(marcel_create(&o, nullptr, other_main, nullptr) == 0);
		CHECK(marcel_join(h, nullptr) == 0);
		CHECK(marcel_join(o, nullptr) == 0);
		if (changes_held != 0 || changes_free == 0) {
			std::fprintf(stderr, "%s: switched out %ld times while held, %ld times once free\n", names[k],
				     changes_held, changes_free);
			return 1;
		}
	}
	marcel_end();
	return 0;
}
