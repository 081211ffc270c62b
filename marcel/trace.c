/*
 * Tracing (MARCEL_TRACE): records events in binary while the program runs and writes
 * them as one Chrome/Perfetto JSON trace at marcel_end.
 *
 * Recording. Each VP has a buffer of fixed-size records that only the code running on
 * that VP writes: a VP is run by one kernel thread at a time and handing it over
 * synchronises, so an event costs a clock read and a 64-byte store, with no atomic
 * read-modify-write and no shared cache line. Code off the VPs (plain kernel threads,
 * threads in blocking sections) shares one more buffer under a mutex. A full buffer is
 * written as one fixed-size slot of a spill file, at an offset reserved with one atomic
 * add, records first and the slot's header last: a slot whose write failed has no valid
 * header, is skipped at conversion and its events are counted as lost. Memory is one
 * buffer per VP plus one, whatever the length of the run.
 *
 * Conversion. Every slot and every buffer is a run sorted by time: a stream has one
 * writer at a time reading a monotonic clock, and the shared buffer stamps under its
 * mutex. A k-way merge of the runs, read through a mapping of the spill, writes the JSON
 * in time order, so the B/E slices of a VP's track nest by construction: a slice still
 * open when the next one begins, when recording pauses or when the trace ends is closed
 * there. Nothing but the merge heap is allocated, and the spill is unlinked as soon as
 * it is created.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "ma_trace.h"

#define MA_TR_NAME 32
/* Records per buffer: 256 KiB per VP, one spill write every 4096 events. */
#define MA_TR_CAP 4096u
#define MA_TR_OUTSIDE UINT32_MAX
#define MA_TR_SLOT_MAGIC UINT64_C(0x4d4152434c545243) /* "MARCLTRC" */

struct ma_trace_rec {
	uint64_t ts;                      /* ns since ma_trace_start */
	uint64_t a, b;
	uint32_t stream;                  /* VP, or MA_TR_OUTSIDE */
	uint16_t kind;
	uint16_t spare;
	char name[MA_TR_NAME];
};
_Static_assert(sizeof(struct ma_trace_rec) == 64, "one record per cache line");

#define MA_TR_SLOT_BYTES ((off_t)(MA_TR_CAP + 1) * (off_t)sizeof(struct ma_trace_rec))

struct ma_trace_buf {
	struct ma_trace_rec *rec;
	unsigned n;
	uint32_t stream;
} __attribute__((aligned(64)));

int ma_trace_active;

static struct {
	int recording;                    /* between start and stop; under ma_tr_lock */
	int user_off;                     /* marcel_trace_off's switch: survives marcel_end */
	unsigned nb_vps;
	uint64_t t0;
	struct ma_trace_buf *vps;
	struct ma_trace_buf out;          /* off-VP events, under ma_tr_lock */
	int out_fd, spill_fd;
	_Atomic uint64_t nb_slots;
	_Atomic uint64_t lost;
	atomic_int spill_err;
	char path[sizeof(((struct ma_options *)0)->trace_buf)];
	const char *src;                  /* MARCEL_TRACE or --marcel-trace, for messages */
} ma_tr = { .out_fd = -1, .spill_fd = -1 };

/* Guards recording, user_off, ma_trace_active's writes and the shared buffer. */
static pthread_mutex_t ma_tr_lock = PTHREAD_MUTEX_INITIALIZER;

static inline uint64_t ma_tr_clock(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int ma_tr_pwrite(int fd, const void *p, size_t len, off_t off)
{
	while (len) {
		ssize_t r = pwrite(fd, p, len, off);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (r == 0)
			return ENOSPC;
		p = (const char *)p + r;
		len -= (size_t)r;
		off += r;
	}
	return 0;
}

static void ma_tr_spill(struct ma_trace_buf *buf)
{
	/* A trace must not change the traced program's errno. */
	int saved_errno = errno;
	uint64_t slot = atomic_fetch_add_explicit(&ma_tr.nb_slots, 1, memory_order_relaxed);
	off_t off = (off_t)slot * MA_TR_SLOT_BYTES;
	struct ma_trace_rec h = { .ts = MA_TR_SLOT_MAGIC, .a = buf->n, .stream = buf->stream };
	int e = ma_tr_pwrite(ma_tr.spill_fd, buf->rec, buf->n * sizeof(*buf->rec), off + (off_t)sizeof(h));
	if (!e)
		e = ma_tr_pwrite(ma_tr.spill_fd, &h, sizeof(h), off);
	if (e) {
		atomic_fetch_add_explicit(&ma_tr.lost, buf->n, memory_order_relaxed);
		int none = 0;
		atomic_compare_exchange_strong(&ma_tr.spill_err, &none, e);
	}
	buf->n = 0;
	errno = saved_errno;
}

static inline void ma_tr_put(struct ma_trace_buf *buf, uint64_t ts, enum ma_trace_kind k, uint64_t a,
			     uint64_t b, const char *name)
{
	struct ma_trace_rec *r = &buf->rec[buf->n];
	r->ts = ts;
	r->a = a;
	r->b = b;
	r->stream = buf->stream;
	r->kind = (uint16_t)k;
	size_t len = name ? strnlen(name, MA_TR_NAME - 1) : 0;
	memcpy(r->name, name ? name : "", len);
	r->name[len] = 0;
	if (ma_unlikely(++buf->n == MA_TR_CAP))
		ma_tr_spill(buf);
}

/* The shared buffer; the caller holds ma_tr_lock. Stamped under the lock so that the
 * buffer stays sorted by time. */
static void ma_tr_put_outside(enum ma_trace_kind k, uint64_t a, uint64_t b, const char *name)
{
	if (ma_tr.recording)
		ma_tr_put(&ma_tr.out, ma_tr_clock() - ma_tr.t0, k, a, b, name);
}

/* A thread preempted in the middle of a record could resume on another VP and finish
 * writing into a buffer that VP's new owner is filling, or be switched out holding
 * ma_tr_lock while the next thread of its VP blocks the kernel thread on it. Raising the
 * current task's preempt_off keeps the preemption handler away; only the thread itself
 * writes it (during a switch, w->current may be the thread being switched to, which
 * nothing else runs yet). */
static inline struct marcel_task *ma_tr_nopreempt(void)
{
	struct ma_worker *w = ma_worker_self();
	struct marcel_task *cur = w ? ma_worker_current(w) : NULL;
	if (cur) {
		atomic_store_explicit(&cur->preempt_off,
				      atomic_load_explicit(&cur->preempt_off, memory_order_relaxed) + 1,
				      memory_order_relaxed);
		atomic_signal_fence(memory_order_seq_cst);
	}
	return cur;
}

static inline void ma_tr_preempt_ok(struct marcel_task *cur)
{
	if (cur) {
		atomic_signal_fence(memory_order_seq_cst);
		atomic_store_explicit(&cur->preempt_off,
				      atomic_load_explicit(&cur->preempt_off, memory_order_relaxed) - 1,
				      memory_order_relaxed);
	}
}

/* Records on the caller's VP (preemption held off); 0 if the caller is not on one. Read
 * the worker only now: a preemption just before may have moved the caller. */
static inline int ma_tr_put_vp(enum ma_trace_kind k, uint64_t a, uint64_t b, const char *name)
{
	struct ma_worker *w = ma_worker_self();
	if (!w || w->vp >= ma_tr.nb_vps || !ma_tr.vps)
		return 0;
	ma_tr_put(&ma_tr.vps[w->vp], ma_tr_clock() - ma_tr.t0, k, a, b, name);
	return 1;
}

void ma_trace_emit(enum ma_trace_kind k, uint64_t a, uint64_t b, const char *name)
{
	struct marcel_task *cur = ma_tr_nopreempt();
	int done = ma_tr_put_vp(k, a, b, name);
	ma_tr_preempt_ok(cur);
	if (done)
		return;
	pthread_mutex_lock(&ma_tr_lock);
	ma_tr_put_outside(k, a, b, name);
	pthread_mutex_unlock(&ma_tr_lock);
}

/* Records a marker on the caller's track; the caller holds ma_tr_lock with preemption
 * off. */
static void ma_tr_emit_locked(enum ma_trace_kind k, const char *name)
{
	if (!ma_tr_put_vp(k, 0, 0, name))
		ma_tr_put_outside(k, 0, 0, name);
}

/* ---- public switch ---- */

int marcel_trace_on(void)
{
	struct marcel_task *cur = ma_tr_nopreempt();
	pthread_mutex_lock(&ma_tr_lock);
	int was_off = ma_tr.user_off;
	ma_tr.user_off = 0;
	int rec = ma_tr.recording;
	if (rec && was_off) {
		ma_write_once(&ma_trace_active, 1);
		ma_tr_emit_locked(MA_TR_TRACE_ON, NULL);
	}
	pthread_mutex_unlock(&ma_tr_lock);
	ma_tr_preempt_ok(cur);
	return rec ? 0 : ENOENT;
}

int marcel_trace_off(void)
{
	struct marcel_task *cur = ma_tr_nopreempt();
	pthread_mutex_lock(&ma_tr_lock);
	int was_off = ma_tr.user_off;
	ma_tr.user_off = 1;
	int rec = ma_tr.recording;
	if (rec && !was_off) {
		/* The marker first: what follows it in time is dropped at conversion, including
		 * events of VPs that have not seen the switch yet. */
		ma_tr_emit_locked(MA_TR_TRACE_OFF, NULL);
		ma_write_once(&ma_trace_active, 0);
	}
	pthread_mutex_unlock(&ma_tr_lock);
	ma_tr_preempt_ok(cur);
	return rec ? 0 : ENOENT;
}

int marcel_trace_mark(const char *label)
{
	if (!label)
		return EINVAL;
	struct marcel_task *cur = ma_tr_nopreempt();
	pthread_mutex_lock(&ma_tr_lock);
	int rec = ma_tr.recording;
	if (rec && !ma_tr.user_off)
		ma_tr_emit_locked(MA_TR_MARK, label);
	pthread_mutex_unlock(&ma_tr_lock);
	ma_tr_preempt_ok(cur);
	return rec ? 0 : ENOENT;
}

/* ---- start ---- */

static void ma_tr_free(void)
{
	if (ma_tr.vps) {
		for (unsigned v = 0; v < ma_tr.nb_vps; v++)
			free(ma_tr.vps[v].rec);
		free(ma_tr.vps);
		ma_tr.vps = NULL;
	}
	free(ma_tr.out.rec);
	ma_tr.out.rec = NULL;
	ma_tr.out.n = 0;
	if (ma_tr.out_fd >= 0)
		close(ma_tr.out_fd);
	if (ma_tr.spill_fd >= 0)
		close(ma_tr.spill_fd);
	ma_tr.out_fd = ma_tr.spill_fd = -1;
	ma_tr.nb_vps = 0;
}

/* An unlinked temporary file beside the trace (same file system, known to be writable),
 * or in $TMPDIR or /tmp when that directory takes no new file (/dev/stdout). */
static int ma_tr_spill_open(const char *path)
{
	const char *tmpdir = getenv("TMPDIR");
	const char *dirs[] = { NULL, tmpdir && *tmpdir ? tmpdir : "/tmp", "/tmp" };
	int e = 0;
	for (unsigned i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char *name;
		int n = dirs[i] ? asprintf(&name, "%s/.marcel-trace.XXXXXX", dirs[i])
				: asprintf(&name, "%s.spill.XXXXXX", path);
		if (n < 0)
			return ENOMEM;
		int fd = mkostemp(name, O_CLOEXEC);
		if (fd >= 0) {
			unlink(name);
			free(name);
			return ma_tr.spill_fd = fd, 0;
		}
		e = errno;
		free(name);
	}
	return e;
}

int ma_trace_start(void)
{
	const char *path = ma_rt.opt.trace;
	if (!path)
		return 0;
	const char *env = getenv("MARCEL_TRACE");
	ma_tr.src = env && !strcmp(env, path) ? "MARCEL_TRACE" : "--marcel-trace";
	snprintf(ma_tr.path, sizeof(ma_tr.path), "%s", path);
	const char *what = "cannot create the trace file";
	int e = 0;
	ma_tr.out_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (ma_tr.out_fd < 0) {
		e = errno;
	} else if ((e = ma_tr_spill_open(path))) {
		what = "cannot create the trace's temporary file";
	} else {
		what = "cannot allocate the trace buffers";
		ma_tr.nb_vps = ma_rt.topo.nb_vps;
		ma_tr.vps = aligned_alloc(64, ma_tr.nb_vps * sizeof(*ma_tr.vps));
		ma_tr.out.rec = calloc(MA_TR_CAP, sizeof(struct ma_trace_rec));
		e = ma_tr.vps && ma_tr.out.rec ? 0 : ENOMEM;
		if (ma_tr.vps) {
			memset(ma_tr.vps, 0, ma_tr.nb_vps * sizeof(*ma_tr.vps));
			for (unsigned v = 0; v < ma_tr.nb_vps; v++) {
				ma_tr.vps[v].stream = v;
				if (!(ma_tr.vps[v].rec = calloc(MA_TR_CAP, sizeof(struct ma_trace_rec))))
					e = ENOMEM;
			}
		}
	}
	if (e) {
		fprintf(stderr, "marcel: %s='%s': %s: %s\n", ma_tr.src, path, what, strerror(e));
		ma_tr_free();
		return e;
	}
	ma_tr.out.stream = MA_TR_OUTSIDE;
	atomic_store(&ma_tr.nb_slots, 0);
	atomic_store(&ma_tr.lost, 0);
	atomic_store(&ma_tr.spill_err, 0);
	ma_tr.t0 = ma_tr_clock();
	pthread_mutex_lock(&ma_tr_lock);
	ma_tr.recording = 1;
	if (ma_tr.user_off)
		ma_tr_put_outside(MA_TR_TRACE_OFF, 0, 0, NULL);
	else
		ma_write_once(&ma_trace_active, 1);
	pthread_mutex_unlock(&ma_tr_lock);
	return 0;
}

/* ---- conversion ---- */

/* Buffered output to the trace file; the first error sticks. */
struct ma_tr_out {
	int fd, err;
	uint64_t pid;
	size_t n;
	char buf[1 << 16];
};

static void ma_tr_flush(struct ma_tr_out *o)
{
	if (!o->err && o->n) {
		size_t done = 0;
		while (done < o->n) {
			ssize_t r = write(o->fd, o->buf + done, o->n - done);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				o->err = r < 0 ? errno : ENOSPC;
				break;
			}
			done += (size_t)r;
		}
	}
	o->n = 0;
}

/* Room for n more bytes (n <= the buffer's size). */
static inline void ma_tr_room(struct ma_tr_out *o, size_t n)
{
	if (ma_unlikely(o->n + n > sizeof(o->buf)))
		ma_tr_flush(o);
}

static inline void ma_tr_putn(struct ma_tr_out *o, const char *s, size_t len)
{
	ma_tr_room(o, len);
	memcpy(o->buf + o->n, s, len);
	o->n += len;
}

/* Inline so that the length of a literal is known at compile time: the conversion writes
 * millions of them. */
static inline void ma_tr_puts(struct ma_tr_out *o, const char *s)
{
	ma_tr_putn(o, s, strlen(s));
}

static inline void ma_tr_putc(struct ma_tr_out *o, char c)
{
	ma_tr_room(o, 1);
	o->buf[o->n++] = c;
}

static void ma_tr_putu(struct ma_tr_out *o, uint64_t x)
{
	char tmp[24];
	int i = sizeof(tmp);
	do {
		tmp[--i] = (char)('0' + x % 10);
		x /= 10;
	} while (x);
	ma_tr_putn(o, tmp + i, sizeof(tmp) - (size_t)i);
}

static void ma_tr_puti(struct ma_tr_out *o, int64_t x)
{
	if (x < 0) {
		ma_tr_putc(o, '-');
		ma_tr_putu(o, -(uint64_t)x);
	} else {
		ma_tr_putu(o, (uint64_t)x);
	}
}


/* A JSON string. Names are the program's bytes, cut at 31: what is not valid UTF-8
 * (often a character cut in two) becomes '?', since JSON must be UTF-8. Other control
 * characters than \t and \n become '?' too rather than \u escapes, which some versions
 * of Perfetto's JSON tokenizer reject. */
static void ma_tr_putstr(struct ma_tr_out *o, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);
	ma_tr_putc(o, '"');
	while (n) {
		unsigned c = *p;
		if (c == '"' || c == '\\') {
			ma_tr_putc(o, '\\');
			ma_tr_putc(o, (char)c);
		} else if (c == '\t' || c == '\n') {
			ma_tr_puts(o, c == '\t' ? "\\t" : "\\n");
		} else if (c < 0x20 || c == 0x7f) {
			ma_tr_putc(o, '?');
		} else {
			unsigned len = ma_utf8_len(p, n);
			if (!len) {
				ma_tr_putc(o, '?');
			} else {
				for (unsigned i = 0; i < len; i++)
					ma_tr_putc(o, (char)p[i]);
				p += len - 1;
				n -= len - 1;
			}
		}
		p++;
		n--;
	}
	ma_tr_putc(o, '"');
}

/* `,\n{"ph":"<ph>","pid":P,"tid":T,"ts":<µs>` -- the caller adds the rest and the '}'.
 * ts is in microseconds with the nanoseconds as decimals, as the format wants. */
static void ma_tr_head(struct ma_tr_out *o, char ph, unsigned tid, uint64_t ts)
{
	char pre[] = ",\n{\"ph\":\"?\",\"pid\":";
	pre[9] = ph; /* the '?' */
	ma_tr_putn(o, pre, sizeof(pre) - 1);
	ma_tr_putu(o, o->pid);
	ma_tr_puts(o, ",\"tid\":");
	ma_tr_putu(o, tid);
	ma_tr_puts(o, ",\"ts\":");
	ma_tr_putu(o, ts / 1000);
	char frac[4] = { '.', (char)('0' + ts / 100 % 10), (char)('0' + ts / 10 % 10), (char)('0' + ts % 10) };
	ma_tr_putn(o, frac, sizeof(frac));
}

static void ma_tr_entity(struct ma_tr_out *o, const char *key, uint64_t id)
{
	ma_tr_puts(o, key);
	ma_tr_puts(o, id & MA_TRACE_BUBBLE_TAG ? "\"bubble " : "\"thread ");
	ma_tr_putu(o, id & ~MA_TRACE_BUBBLE_TAG);
	ma_tr_putc(o, '"');
}

static const char *const ma_tr_names[MA_TR_NB_KINDS] = {
	[MA_TR_THREAD_NEW] = "thread new",       [MA_TR_THREAD_END] = "thread end",
	[MA_TR_IDLE_START] = "idle start",       [MA_TR_IDLE_STOP] = "idle stop",
	[MA_TR_BUBBLE_NEW] = "bubble new",       [MA_TR_BUBBLE_INSERT] = "bubble insert",
	[MA_TR_BUBBLE_REMOVE] = "bubble remove", [MA_TR_BUBBLE_WAKE] = "bubble wake",
	[MA_TR_BUBBLE_BURST] = "bubble burst",   [MA_TR_BUBBLE_CLOSE] = "bubble close",
	[MA_TR_BUBBLE_CLOSED] = "bubble closed", [MA_TR_BUBBLE_JOIN] = "bubble join",
	[MA_TR_RQ_SWITCH] = "runqueue switch",   [MA_TR_STEAL] = "steal",
	[MA_TR_HWPRIO] = "hwprio",               [MA_TR_TRACE_ON] = "trace on",
	[MA_TR_TRACE_OFF] = "trace off",
};

static const char *ma_tr_cat(enum ma_trace_kind k)
{
	switch (k) {
	case MA_TR_THREAD_NEW:
	case MA_TR_THREAD_RUN:
	case MA_TR_THREAD_STOP:
	case MA_TR_THREAD_END:
		return "thread";
	case MA_TR_IDLE_START:
	case MA_TR_IDLE_STOP:
		return "idle";
	case MA_TR_RQ_SWITCH:
	case MA_TR_STEAL:
		return "runqueue";
	case MA_TR_HWPRIO:
		return "hwprio";
	case MA_TR_MARK:
		return "mark";
	case MA_TR_TRACE_ON:
	case MA_TR_TRACE_OFF:
		return "trace";
	default:
		return "bubble";
	}
}

/* An instant event on the record's track, with its arguments. */
static void ma_tr_instant(struct ma_tr_out *o, const struct ma_trace_rec *r, unsigned tid, uint64_t ts)
{
	enum ma_trace_kind k = r->kind;
	ma_tr_head(o, 'i', tid, ts);
	ma_tr_puts(o, ",\"s\":\"t\",\"cat\":\"");
	ma_tr_puts(o, ma_tr_cat(k));
	ma_tr_puts(o, "\",\"name\":");
	ma_tr_putstr(o, k == MA_TR_MARK ? r->name : ma_tr_names[k]);
	ma_tr_puts(o, ",\"args\":{");
	switch (k) {
	case MA_TR_THREAD_NEW:
	case MA_TR_THREAD_END:
		ma_tr_puts(o, "\"id\":");
		ma_tr_putu(o, r->a);
		ma_tr_puts(o, ",\"thread\":");
		ma_tr_putstr(o, r->name);
		break;
	case MA_TR_BUBBLE_INSERT:
	case MA_TR_BUBBLE_REMOVE:
		ma_tr_puts(o, "\"bubble\":");
		ma_tr_putu(o, r->a & ~MA_TRACE_BUBBLE_TAG);
		ma_tr_entity(o, ",\"entity\":", r->b);
		break;
	case MA_TR_BUBBLE_BURST:
		ma_tr_puts(o, "\"bubble\":");
		ma_tr_putu(o, r->a & ~MA_TRACE_BUBBLE_TAG);
		ma_tr_puts(o, ",\"queue\":");
		ma_tr_putstr(o, r->name);
		ma_tr_puts(o, ",\"queue_id\":");
		ma_tr_putu(o, r->b);
		break;
	case MA_TR_BUBBLE_NEW:
	case MA_TR_BUBBLE_WAKE:
	case MA_TR_BUBBLE_CLOSE:
	case MA_TR_BUBBLE_CLOSED:
	case MA_TR_BUBBLE_JOIN:
		ma_tr_puts(o, "\"bubble\":");
		ma_tr_putu(o, r->a & ~MA_TRACE_BUBBLE_TAG);
		break;
	case MA_TR_RQ_SWITCH:
		ma_tr_entity(o, "\"entity\":", r->a);
		ma_tr_puts(o, ",\"queue\":");
		ma_tr_putstr(o, r->name);
		ma_tr_puts(o, ",\"queue_id\":");
		ma_tr_putu(o, r->b);
		break;
	case MA_TR_STEAL:
		ma_tr_entity(o, "\"entity\":", r->a);
		ma_tr_puts(o, ",\"from\":");
		ma_tr_putstr(o, r->name);
		ma_tr_puts(o, ",\"from_id\":");
		ma_tr_putu(o, r->b);
		break;
	case MA_TR_HWPRIO:
		ma_tr_puts(o, "\"vp\":");
		ma_tr_putu(o, r->a);
		ma_tr_puts(o, ",\"level\":");
		ma_tr_puti(o, (int64_t)r->b);
		ma_tr_puts(o, ",\"backend\":");
		ma_tr_putstr(o, r->name);
		break;
	default:
		break;
	}
	ma_tr_puts(o, "}}");
}

static void ma_tr_begin(struct ma_tr_out *o, const struct ma_trace_rec *r, unsigned tid, uint64_t ts)
{
	ma_tr_head(o, 'B', tid, ts);
	ma_tr_puts(o, ",\"cat\":\"thread\",\"name\":");
	if (r->name[0]) {
		ma_tr_putstr(o, r->name);
	} else {
		ma_tr_puts(o, "\"thread ");
		ma_tr_putu(o, r->a);
		ma_tr_putc(o, '"');
	}
	ma_tr_puts(o, ",\"args\":{\"id\":");
	ma_tr_putu(o, r->a);
	ma_tr_puts(o, "}}");
}

static void ma_tr_end(struct ma_tr_out *o, unsigned tid, uint64_t ts)
{
	ma_tr_head(o, 'E', tid, ts);
	ma_tr_putc(o, '}');
}

static void ma_tr_meta(struct ma_tr_out *o, const char *what, unsigned tid, const char *key, const char *str,
		       uint64_t num)
{
	ma_tr_puts(o, ",\n{\"ph\":\"M\",\"pid\":");
	ma_tr_putu(o, o->pid);
	if (tid) {
		ma_tr_puts(o, ",\"tid\":");
		ma_tr_putu(o, tid);
	}
	ma_tr_puts(o, ",\"name\":\"");
	ma_tr_puts(o, what);
	ma_tr_puts(o, "\",\"args\":{\"");
	ma_tr_puts(o, key);
	ma_tr_puts(o, "\":");
	if (str)
		ma_tr_putstr(o, str);
	else
		ma_tr_putu(o, num);
	ma_tr_puts(o, "}}");
}

struct ma_tr_run {
	const struct ma_trace_rec *cur, *end;
};

/* Heap order: earlier first; on equal times, the lower run, which keeps each stream's
 * order (a stream's slots are reserved in its order and its buffer comes last). */
static int ma_tr_before(const struct ma_tr_run *runs, unsigned x, unsigned y)
{
	return runs[x].cur->ts < runs[y].cur->ts || (runs[x].cur->ts == runs[y].cur->ts && x < y);
}

static void ma_tr_sift(const struct ma_tr_run *runs, unsigned *heap, unsigned n, unsigned i)
{
	for (;;) {
		unsigned l = 2 * i + 1, m = i;
		if (l < n && ma_tr_before(runs, heap[l], heap[m]))
			m = l;
		if (l + 1 < n && ma_tr_before(runs, heap[l + 1], heap[m]))
			m = l + 1;
		if (m == i)
			return;
		unsigned t = heap[i];
		heap[i] = heap[m];
		heap[m] = t;
		i = m;
	}
}

struct ma_tr_track {
	uint64_t last_ts;
	int open;
};

/* Writes the whole trace; 0 or an errno value. */
static int ma_tr_convert(uint64_t t_end)
{
	unsigned nb_tracks = ma_tr.nb_vps + 1;
	uint64_t nb_slots = atomic_load(&ma_tr.nb_slots);
	struct stat st;
	if (fstat(ma_tr.spill_fd, &st))
		return errno;
	/* Slots past the end of the file were never written (a failed write). */
	if ((uint64_t)st.st_size / (uint64_t)MA_TR_SLOT_BYTES < nb_slots)
		nb_slots = (uint64_t)st.st_size / (uint64_t)MA_TR_SLOT_BYTES;
	const struct ma_trace_rec *map = NULL;
	size_t map_len = (size_t)nb_slots * (size_t)MA_TR_SLOT_BYTES;
	if (map_len) {
		void *m = mmap(NULL, map_len, PROT_READ, MAP_PRIVATE, ma_tr.spill_fd, 0);
		if (m == MAP_FAILED)
			return errno;
		map = m;
	}
	size_t max_runs = (size_t)nb_slots + nb_tracks;
	struct ma_tr_run *runs = malloc(max_runs * sizeof(*runs));
	unsigned *heap = malloc(max_runs * sizeof(*heap));
	struct ma_tr_track *tracks = calloc(nb_tracks, sizeof(*tracks));
	struct ma_tr_out *o = malloc(sizeof(*o));
	int e = 0;
	if (!runs || !heap || !tracks || !o) {
		e = ENOMEM;
		goto out;
	}
	unsigned nb_runs = 0;
	for (uint64_t s = 0; s < nb_slots; s++) {
		const struct ma_trace_rec *h = map + s * (MA_TR_CAP + 1);
		if (h->ts != MA_TR_SLOT_MAGIC || h->a > MA_TR_CAP || !h->a)
			continue; /* counted as lost when its write failed */
		runs[nb_runs++] = (struct ma_tr_run){ h + 1, h + 1 + h->a };
	}
	for (unsigned v = 0; v < ma_tr.nb_vps; v++)
		if (ma_tr.vps[v].n)
			runs[nb_runs++] = (struct ma_tr_run){ ma_tr.vps[v].rec, ma_tr.vps[v].rec + ma_tr.vps[v].n };
	if (ma_tr.out.n)
		runs[nb_runs++] = (struct ma_tr_run){ ma_tr.out.rec, ma_tr.out.rec + ma_tr.out.n };
	for (unsigned i = 0; i < nb_runs; i++)
		heap[i] = i;
	for (unsigned i = nb_runs / 2; i-- > 0;)
		ma_tr_sift(runs, heap, nb_runs, i);

	o->fd = ma_tr.out_fd;
	o->pid = (uint64_t)getpid();
	o->err = 0;
	o->n = 0;
	ma_tr_puts(o, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
	ma_tr_puts(o, "{\"ph\":\"M\",\"pid\":");
	ma_tr_putu(o, o->pid);
	ma_tr_puts(o, ",\"name\":\"process_name\",\"args\":{\"name\":\"marcel\"}}");
	for (unsigned t = 0; t < nb_tracks; t++) {
		char name[32];
		if (t < ma_tr.nb_vps)
			snprintf(name, sizeof(name), "VP%u", t);
		else
			snprintf(name, sizeof(name), "outside");
		ma_tr_meta(o, "thread_name", t + 1, "name", name, 0);
		ma_tr_meta(o, "thread_sort_index", t + 1, "sort_index", NULL, t);
	}

	int paused = 0;
	while (nb_runs) {
		struct ma_tr_run *run = &runs[heap[0]];
		const struct ma_trace_rec *r = run->cur;
		unsigned track = r->stream == MA_TR_OUTSIDE ? ma_tr.nb_vps : r->stream;
		if (track > ma_tr.nb_vps)
			track = ma_tr.nb_vps;
		unsigned tid = track + 1;
		/* Tracks must not go back in time (a clock read then a late store could). */
		uint64_t ts = r->ts > tracks[track].last_ts ? r->ts : tracks[track].last_ts;
		enum ma_trace_kind k = r->kind < MA_TR_NB_KINDS ? (enum ma_trace_kind)r->kind : MA_TR_NB_KINDS;
		if (k == MA_TR_TRACE_OFF && !paused) {
			/* Close every slice here, on every track, so that nothing spans the pause. */
			for (unsigned t = 0; t < nb_tracks; t++)
				if (tracks[t].open) {
					uint64_t te = ts > tracks[t].last_ts ? ts : tracks[t].last_ts;
					ma_tr_end(o, t + 1, te);
					tracks[t].open = 0;
					tracks[t].last_ts = te;
				}
			ma_tr_instant(o, r, tid, ts);
			tracks[track].last_ts = ts;
			paused = 1;
		} else if (k == MA_TR_TRACE_ON && paused) {
			ma_tr_instant(o, r, tid, ts);
			tracks[track].last_ts = ts;
			paused = 0;
		} else if (!paused && k < MA_TR_NB_KINDS && k != MA_TR_TRACE_ON && k != MA_TR_TRACE_OFF) {
			if (k == MA_TR_THREAD_RUN) {
				if (tracks[track].open)
					ma_tr_end(o, tid, ts); /* no STOP recorded for the last one */
				ma_tr_begin(o, r, tid, ts);
				tracks[track].open = 1;
			} else if (k == MA_TR_THREAD_STOP) {
				/* Without an open slice (it began while paused) there is nothing to end. */
				if (tracks[track].open)
					ma_tr_end(o, tid, ts);
				tracks[track].open = 0;
			} else {
				ma_tr_instant(o, r, tid, ts);
			}
			tracks[track].last_ts = ts;
		}
		if (++run->cur == run->end)
			heap[0] = heap[--nb_runs];
		ma_tr_sift(runs, heap, nb_runs, 0);
	}
	for (unsigned t = 0; t < nb_tracks; t++)
		if (tracks[t].open)
			ma_tr_end(o, t + 1, t_end > tracks[t].last_ts ? t_end : tracks[t].last_ts);
	ma_tr_puts(o, "\n]}\n");
	ma_tr_flush(o);
	e = o->err;
out:
	free(o);
	free(tracks);
	free(heap);
	free(runs);
	if (map)
		munmap((void *)map, map_len);
	return e;
}

void ma_trace_stop(void)
{
	pthread_mutex_lock(&ma_tr_lock);
	int rec = ma_tr.recording;
	ma_tr.recording = 0;
	ma_write_once(&ma_trace_active, 0);
	pthread_mutex_unlock(&ma_tr_lock);
	if (!rec)
		return;
	uint64_t t_end = ma_tr_clock() - ma_tr.t0;
	int e = ma_tr_convert(t_end);
	if (!e && close(ma_tr.out_fd))
		e = errno;
	ma_tr.out_fd = -1;
	if (e)
		fprintf(stderr, "marcel: %s='%s': cannot write the trace: %s\n", ma_tr.src, ma_tr.path, strerror(e));
	uint64_t lost = atomic_load(&ma_tr.lost);
	if (lost)
		fprintf(stderr, "marcel: %s='%s': %" PRIu64 " events lost (temporary file: %s)\n", ma_tr.src,
			ma_tr.path, lost, strerror(atomic_load(&ma_tr.spill_err)));
	ma_tr_free();
}
