/*
 * AddressSanitizer and ThreadSanitizer fiber annotations and valgrind stack registration.
 *
 * ASan must be told about every stack switch or it reports false stack-buffer errors;
 * TSan must be told which fiber (context) runs, or it sees one kernel thread's accesses
 * from many contexts and reports nonsense. The hooks compile to nothing in normal builds,
 * so the switch path stays the same.
 */
#ifndef MA_SANITIZER_H
#define MA_SANITIZER_H

#include "config.h"
#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__)
#define MA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MA_ASAN 1
#endif
#endif

#ifdef MA_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define ma_asan_start_switch(fake_save, bottom, size) \
	__sanitizer_start_switch_fiber(fake_save, bottom, size)
#define ma_asan_finish_switch(fake, bottom_old, size_old) \
	__sanitizer_finish_switch_fiber(fake, bottom_old, size_old)
#define ma_asan_unpoison(addr, size) __asan_unpoison_memory_region(addr, size)
/* A seed run inline (seed.c) runs on its joiner's stack: that stack's bounds are its own
 * until it ends. Normal builds never read them, and a spawn saves the stores. */
#define ma_asan_seed_borrow(t, host) ((t)->asan_bottom = (host)->asan_bottom, (t)->asan_size = (host)->asan_size)
#define ma_asan_seed_return(t) ((t)->asan_bottom = NULL, (t)->asan_size = 0)
#else
#define ma_asan_seed_borrow(t, host) ((void)(t), (void)(host))
#define ma_asan_seed_return(t) ((void)(t))
#define ma_asan_start_switch(fake_save, bottom, size) ((void)(fake_save), (void)(bottom), (void)(size))
#define ma_asan_finish_switch(fake, bottom_old, size_old) ((void)(fake), (void)(bottom_old), (void)(size_old))
#define ma_asan_unpoison(addr, size) ((void)(addr), (void)(size))
#endif

#if defined(__SANITIZE_THREAD__)
#define MA_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MA_TSAN 1
#endif
#endif

/*
 * TSan fibers, one per struct marcel_task that gets switched to:
 * - a user thread's is created when its stack is bound (ma_stack_bind) and destroyed when
 *   the stack is released, which is never done while running on it (an exiting thread's
 *   stack is released by the context it switched to);
 * - a worker's idle context and the main carrier's own context get one when they are made
 *   and lose it at teardown (ma_carriers_free);
 * - contexts that run on a kernel thread's own stack (the main task, a pthread-created
 *   carrier's `self`) use that thread's own TSan state, taken lazily before the first
 *   switch away from them; it is never destroyed.
 * ma_tsan_switch is called right before every ma_ctx_switch, and synchronizes (flag 0):
 * the switch is a happens-before edge from the context left to the one entered.
 */
#ifdef MA_TSAN
#include <sanitizer/tsan_interface.h>
#define ma_tsan_fiber_create(t) ((t)->tsan_fiber = __tsan_create_fiber(0))
#define ma_tsan_fiber_destroy(t)                        \
	do {                                            \
		if ((t)->tsan_fiber) {                  \
			__tsan_destroy_fiber((t)->tsan_fiber); \
			(t)->tsan_fiber = NULL;         \
		}                                       \
	} while (0)
#define ma_tsan_switch(prev, next)                                      \
	do {                                                            \
		if (!(prev)->tsan_fiber)                                \
			(prev)->tsan_fiber = __tsan_get_current_fiber(); \
		__tsan_switch_to_fiber((next)->tsan_fiber, 0);          \
	} while (0)
/* A seed run inline takes its joiner's fiber (lazily, in ma_tsan_switch) until it ends,
 * and has none of its own after. */
#define ma_tsan_seed_borrow(t) ((t)->tsan_fiber = NULL)
#define ma_tsan_seed_return(t) ((t)->tsan_fiber = NULL)
#else
#define ma_tsan_seed_borrow(t) ((void)(t))
#define ma_tsan_seed_return(t) ((void)(t))
#define ma_tsan_fiber_create(t) ((void)(t))
#define ma_tsan_fiber_destroy(t) ((void)(t))
#define ma_tsan_switch(prev, next) ((void)(prev), (void)(next))
#endif

/*
 * marcel_exit() in a seed run inline (seed.c) unwinds to the frame of its joiner.
 * Normal builds use the compiler's setjmp, which stores three words (the compiler keeps
 * the other registers in that frame), where sigsetjmp stores and mangles eight registers
 * on every seed run: about 35 instructions of a spawn's 1,000. The sanitizers intercept
 * only the libc pair, which they need: ASan to unpoison the frames jumped over, TSan to
 * unwind its shadow stack.
 */
#if defined(MA_ASAN) || defined(MA_TSAN)
#include <setjmp.h>
typedef sigjmp_buf ma_unwind_buf;
#define ma_unwind_set(buf) sigsetjmp(buf, 0)
#define ma_unwind_to(buf) siglongjmp(buf, 1)
#else
typedef void *ma_unwind_buf[5];
#define ma_unwind_set(buf) __builtin_setjmp(buf)
#define ma_unwind_to(buf) __builtin_longjmp(buf, 1)
#endif

#ifdef HAVE_VALGRIND_H
#include <valgrind/valgrind.h>
#define ma_valgrind_stack_register(lo, hi) VALGRIND_STACK_REGISTER(lo, hi)
#define ma_valgrind_stack_deregister(id) VALGRIND_STACK_DEREGISTER(id)
#else
#define ma_valgrind_stack_register(lo, hi) ((void)(lo), (void)(hi), 0u)
#define ma_valgrind_stack_deregister(id) ((void)(id))
#endif

#endif
