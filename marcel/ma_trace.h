/*
 * Tracing: one event stream written as Chrome/Perfetto trace JSON when MARCEL_TRACE is
 * set (trace.c). Event sites cost one predictable branch on ma_trace_active when tracing
 * is off.
 */
#ifndef MA_TRACE_H
#define MA_TRACE_H

#include <stdint.h>
#include "ma_sched.h"

enum ma_trace_kind {
	/* threads: a = thread id, b = 0, name = thread name */
	MA_TR_THREAD_NEW,
	MA_TR_THREAD_RUN,      /* begins a slice on the calling VP's track */
	MA_TR_THREAD_STOP,     /* ends it */
	MA_TR_THREAD_END,
	/* the calling VP: a = b = 0, name = NULL */
	MA_TR_IDLE_START,
	MA_TR_IDLE_STOP,
	/* bubbles: a = bubble id; b = the other party (see each), name = NULL or a queue name */
	MA_TR_BUBBLE_NEW,      /* b = 0 */
	MA_TR_BUBBLE_INSERT,   /* b = id of the inserted entity (thread id or bubble id) */
	MA_TR_BUBBLE_REMOVE,   /* b = id of the removed entity */
	MA_TR_BUBBLE_WAKE,     /* b = 0 */
	MA_TR_BUBBLE_BURST,    /* b = topology item id of the queue, name = queue name */
	MA_TR_BUBBLE_CLOSE,    /* regeneration started (CLOSING) */
	MA_TR_BUBBLE_CLOSED,   /* every thread is back */
	MA_TR_BUBBLE_JOIN,
	/* an entity moved: a = entity id, b = target queue's item id, name = queue name */
	MA_TR_RQ_SWITCH,
	/* a = bubble id or thread id, b = source queue item id, name = source queue name */
	MA_TR_STEAL,
	/* a = VP, b = new level (two's complement), name = backend name */
	MA_TR_HWPRIO,
	/* marcel_trace_mark: a = b = 0, name = the label */
	MA_TR_MARK,
	/* marcel_trace_on / marcel_trace_off: a = b = 0, name = NULL. The converter drops
	 * what lies between an OFF and the next ON, and closes open slices at an OFF. */
	MA_TR_TRACE_ON,
	MA_TR_TRACE_OFF,
	MA_TR_NB_KINDS
};

/* Bubble ids and thread ids share one number space in the trace: bubble ids are tagged. */
#define MA_TRACE_BUBBLE_TAG (UINT64_C(1) << 63)

/* Nonzero while events are recorded. Written under trace.c's lock with atomic stores and
 * read by the event sites with a relaxed atomic load, which is a plain load on every
 * target we build for (and keeps ThreadSanitizer informed). */
extern int ma_trace_active MA_HIDDEN;

/* Records one event, stamped with CLOCK_MONOTONIC and the calling VP (or "outside"). Call
 * it through MA_TRACE; it records even when ma_trace_active was just cleared, and does
 * nothing when no trace is being written. name is copied (31 bytes at most). It raises
 * the current task's preempt_off while it writes (a preempted writer could resume on
 * another VP); it is not async-signal-safe. */
void ma_trace_emit(enum ma_trace_kind k, uint64_t a, uint64_t b, const char *name) MA_HIDDEN;

/* For a site that emits several events under one test: if (ma_unlikely(ma_tracing())). */
static inline int ma_tracing(void)
{
	return ma_read_once(&ma_trace_active);
}

#define MA_TRACE(k, a, b, name)                                                             \
	do {                                                                                \
		if (ma_unlikely(ma_tracing()))                                              \
			ma_trace_emit((k), (uint64_t)(a), (uint64_t)(b), (name));           \
	} while (0)

/* Opens the file (ma_rt.opt.trace) at marcel_init, once the topology is loaded (it sizes
 * the per-VP buffers from ma_rt.topo.nb_vps): 0 or an errno value, with a message naming
 * the file printed; on failure nothing is left to undo. */
int ma_trace_start(void) MA_HIDDEN;
/* Converts everything recorded into the JSON file and frees the buffers, at marcel_end
 * once no worker runs (or when marcel_init fails after ma_trace_start). Does nothing if
 * no trace is being written. */
void ma_trace_stop(void) MA_HIDDEN;

/* The length of the valid UTF-8 character at s (n bytes left), 0 if there is none there
 * (a byte of a character cut in two, an overlong or surrogate form): what the JSON
 * writers (the trace's, the snapshot's) replace with '?', since JSON must be UTF-8. */
static inline unsigned ma_utf8_len(const unsigned char *s, size_t n)
{
	unsigned len;
	uint32_t c;
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, c = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (unsigned i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) || (len == 4 && (c < 0x10000 || c > 0x10ffff)))
		return 0;
	return len;
}

#endif
