/*
 * AddressSanitizer fiber annotations and valgrind stack registration.
 *
 * ASan must be told about every stack switch or it reports false stack-buffer errors;
 * the hooks compile to nothing in normal builds, so the switch path stays the same.
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
#else
#define ma_asan_start_switch(fake_save, bottom, size) ((void)(fake_save), (void)(bottom), (void)(size))
#define ma_asan_finish_switch(fake, bottom_old, size_old) ((void)(fake), (void)(bottom_old), (void)(size_old))
#define ma_asan_unpoison(addr, size) ((void)(addr), (void)(size))
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
