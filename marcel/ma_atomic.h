/*
 * Shared fields: one rule, and the helpers of its second case.
 *
 *  - A field that threads read and write without a lock ordering them is _Atomic, and
 *    each access is a C11 call. A plain access to it compiles, as a sequentially
 *    consistent one: write the order out (atomic_load_explicit, ...) wherever less is
 *    enough, and use the short form (atomic_load(&x)) only where the protocol needs
 *    sequential consistency (the wake-up handshakes do): on x86 a store so written is an
 *    xchg. A field only its owner writes (a VP's current thread, its counters) is
 *    _Atomic too, read relaxed by the owner.
 *  - A plain field written under a lock and read without it (an estimate, or a value the
 *    reader checks again under the lock) is read with ma_read_once or ma_load_acquire,
 *    and written, under its lock, with ma_write_once or ma_store_release, so that neither
 *    the compiler nor ThreadSanitizer sees a plain access racing with another. The order
 *    is what the reader relies on: relaxed for a value only looked at, acquire (with a
 *    release store) when it reads what the value points to.
 *  - No __atomic_* builtin outside this header.
 *
 * The helpers take a pointer and are the builtins themselves: converting a call changes
 * no instruction.
 */
#ifndef MA_ATOMIC_H
#define MA_ATOMIC_H

#include <stdatomic.h>

#define ma_read_once(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define ma_write_once(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define ma_load_acquire(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define ma_store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
/* A word a futex compares with what the kernel sees (futex.c): ordered against every other
 * access, as the kernel's own check is. */
#define ma_load_seq_cst(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
/* Claims a plain word once (MARCEL_BUBBLE_INITIALIZER's magic, set up by whoever moves it
 * from *expected): 1 if this caller did, else *expected is what it holds. */
#define ma_cas_acquire(p, expected, desired) \
	__atomic_compare_exchange_n((p), (expected), (desired), 0, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)

/* Adds one to an _Atomic unsigned long that only its owner writes (others read it
 * relaxed): not a locked add. Each architecture's ma_arch.h says how: a relaxed load and
 * store (ma_owner_inc_relaxed), or one add to memory where that is a single store. */
#define ma_owner_inc(p) ma_arch_owner_inc(p)
#define ma_owner_inc_relaxed(p) \
	atomic_store_explicit((p), atomic_load_explicit((p), memory_order_relaxed) + 1, memory_order_relaxed)

#endif
