/*
 * The Marcel-compatibility layer (marcel/compat.h, marcel/time.h, the Marcel-only parts of
 * marcel/sync.h, marcel/vpset.h and marcel/attr.h), tested the way old Marcel programs use
 * it: each test is a small program in that style (any_t bodies, marcel_create(NULL, ...),
 * marcel_printf, marcel_delay, vpsets, recursive mutexes, futexes, suspend/resume...), and
 * checks its results against the documented contract. Every tcase runs on this machine
 * and on the synthetic 32-PU topology (ma_test.h).
 *
 * Output of the printf family is captured by putting a temporary file under stdout/stderr
 * (dup2) and compared as text.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include "ma_test.h"

/* Programs written for Marcel test these at compile time. */
#ifndef MA__BUBBLES
#error "MA__BUBBLES must be defined"
#endif
#ifndef MA__LWPS
#error "MA__LWPS must be defined"
#endif
#ifndef MA__NUMA
#error "MA__NUMA must be defined"
#endif

#define I2P(i) ((any_t)(intptr_t)(i))
#define P2I(p) ((int)(intptr_t)(p))

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t ms_since(uint64_t t0)
{
	return (now_ns() - t0) / 1000000u;
}

/* Waits (sleeping, so other threads run) until *flag reaches at least v or timeout_ms
 * passes; returns whether it did. */
static int wait_for(atomic_int *flag, int v, unsigned timeout_ms)
{
	uint64_t t0 = now_ns();
	while (atomic_load(flag) < v) {
		if (ms_since(t0) > timeout_ms)
			return 0;
		marcel_usleep(1000);
	}
	return 1;
}


static void *in_pthread(void *(*fn)(void *), void *arg)
{
	pthread_t pt;
	void *ret;
	ck_assert_int_eq(pthread_create(&pt, NULL, fn, arg), 0);
	ck_assert_int_eq(pthread_join(pt, &ret), 0);
	return ret;
}

/* Puts a temporary file under fd (STDOUT_FILENO or STDERR_FILENO) until capture_end. */
struct capture {
	FILE *stream;
	int fd;
	FILE *tmp;
	int saved;
};

static void capture_begin(struct capture *c, FILE *stream)
{
	c->stream = stream;
	c->fd = fileno(stream);
	fflush(stream);
	c->tmp = tmpfile();
	ck_assert_ptr_nonnull(c->tmp);
	c->saved = dup(c->fd);
	ck_assert_int_ge(c->saved, 0);
	ck_assert_int_ge(dup2(fileno(c->tmp), c->fd), 0);
}

/* Returns what was written, malloc'd. */
static char *capture_end(struct capture *c)
{
	fflush(c->stream);
	dup2(c->saved, c->fd);
	close(c->saved);
	fseek(c->tmp, 0, SEEK_END);
	long len = ftell(c->tmp);
	ck_assert_int_ge(len, 0);
	rewind(c->tmp);
	char *buf = malloc((size_t)len + 1);
	ck_assert_ptr_nonnull(buf);
	size_t got = fread(buf, 1, (size_t)len, c->tmp);
	buf[got] = 0;
	fclose(c->tmp);
	return buf;
}

/* ============================================================ types, macros, create(NULL) */

static atomic_int hello_count;

/* Old Marcel code declares bodies with any_t and passes them as marcel_func_t. */
static any_t hello(any_t arg)
{
	char name[MARCEL_MAXNAMESIZE];
	marcel_getname(marcel_self(), name, sizeof(name));
	atomic_fetch_add(&hello_count, P2I(arg));
	return NULL;
}

START_TEST(test_types_and_features)
{
	/* any_t is void *, marcel_func_t takes and returns it. */
	any_t p = &p;
	void *q = p;
	ck_assert_ptr_eq(p, q);
	marcel_func_t f = hello;
	ck_assert_ptr_nonnull((void *)f);
	ck_assert_int_eq(MARCEL_MAXNAMESIZE, 32);
	ck_assert_int_eq(sizeof(any_t), sizeof(void *));
#if !defined(MA__BUBBLES) || !defined(MA__LWPS) || !defined(MA__NUMA)
	ck_abort_msg("feature macros missing");
#endif
	ck_assert_int_eq(MA__BUBBLES + MA__LWPS + MA__NUMA, 3);

	ma_test_init();
	atomic_store(&hello_count, 0);
	/* marcel_create(NULL, ...): nobody joins; marcel_end waits for all of them. */
	for (int i = 0; i < 50; i++)
		ck_assert_int_eq(marcel_create(NULL, NULL, f, I2P(1)), 0);
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setname(&a, "a name that is longer than MARCEL_MAXNAMESIZE bytes"), 0);
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(marcel_create(NULL, &a, hello, I2P(10)), 0);
	marcel_end();
	ck_assert_int_eq(atomic_load(&hello_count), 150);
}
END_TEST

/* Names are truncated to MARCEL_MAXNAMESIZE - 1 characters. */
START_TEST(test_maxnamesize)
{
	ma_test_init();
	char longname[100], buf[MARCEL_MAXNAMESIZE];
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	ck_assert_int_eq(marcel_setname(marcel_self(), longname), 0);
	ck_assert_int_eq(marcel_getname(marcel_self(), buf, sizeof(buf)), 0);
	ck_assert_uint_eq(strlen(buf), MARCEL_MAXNAMESIZE - 1);
	ck_assert_int_eq(marcel_setname(marcel_self(), "main"), 0);
	marcel_end();
}
END_TEST

/* ============================================================ output */

enum { OUT_THREADS = 8, OUT_LINES = 40 };

static any_t printer(any_t arg)
{
	int id = P2I(arg);
	for (int i = 0; i < OUT_LINES; i++) {
		/* Several conversions per call: one call must come out as one whole line. */
		switch (i % 3) {
		case 0:
			marcel_printf("thread %02d line %03d %s\n", id, i, "printf");
			break;
		case 1:
			marcel_fprintf(stdout, "thread %02d line %03d %s\n", id, i, "fprint");
			break;
		default: {
			char line[64];
			int n = marcel_snprintf(line, sizeof(line), "thread %02d line %03d %s", id, i, "puts..");
			if (n != 25)
				return I2P(1);
			marcel_puts(line);
		}
		}
		if (i % 7 == 0)
			marcel_yield();
	}
	marcel_fflush(stdout);
	return NULL;
}

static int vfp(FILE *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int vfp(FILE *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = marcel_vfprintf(s, fmt, ap);
	va_end(ap);
	return r;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

START_TEST(test_printf_family)
{
	ma_test_init();
	struct capture c;

	/* Return values and text of each call, from main. */
	capture_begin(&c, stdout);
	ck_assert_int_eq(marcel_printf("%s=%d;", "x", 42), 5);
	ck_assert_int_eq(marcel_fprintf(stdout, "[%5.2f]", 3.14159), 7);
	ck_assert_int_ge(marcel_puts("line"), 0);
	ck_assert_int_eq(vfp(stdout, "%c%c", 'o', 'k'), 2);
	ck_assert_int_eq(marcel_fflush(stdout), 0);
	char *out = capture_end(&c);
	ck_assert_str_eq(out, "x=42;[ 3.14]line\nok");
	free(out);

	capture_begin(&c, stderr);
	ck_assert_int_eq(marcel_fprintf(stderr, "err %u\n", 7u), 6);
	ck_assert_int_eq(marcel_fflush(stderr), 0);
	out = capture_end(&c);
	ck_assert_str_eq(out, "err 7\n");
	free(out);

	/* snprintf: truncation, return value of the untruncated length, NUL always. */
	char buf[8];
	memset(buf, '#', sizeof(buf));
	ck_assert_int_eq(marcel_snprintf(buf, sizeof(buf), "%d-%s", 12345, "abcdef"), 12);
	ck_assert_str_eq(buf, "12345-a");
	ck_assert_int_eq(marcel_snprintf(NULL, 0, "%s", "four"), 4);
	ck_assert_int_eq(marcel_snprintf(buf, 1, "%s", "four"), 4);
	ck_assert_str_eq(buf, "");

	/* Many threads printing at once: every line exactly once, none torn. */
	capture_begin(&c, stdout);
	marcel_t t[OUT_THREADS];
	for (int i = 0; i < OUT_THREADS; i++)
		ck_assert_int_eq(marcel_create(&t[i], NULL, printer, I2P(i)), 0);
	for (int i = 0; i < OUT_THREADS; i++) {
		any_t r;
		ck_assert_int_eq(marcel_join(t[i], &r), 0);
		ck_assert_ptr_null(r);
	}
	out = capture_end(&c);
	char *lines[OUT_THREADS * OUT_LINES + 1];
	int n = 0;
	for (char *save = NULL, *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		ck_assert_msg(n < OUT_THREADS * OUT_LINES, "too many lines");
		lines[n++] = l;
	}
	ck_assert_int_eq(n, OUT_THREADS * OUT_LINES);
	qsort(lines, (size_t)n, sizeof(lines[0]), cmp_str);
	for (int id = 0, k = 0; id < OUT_THREADS; id++)
		for (int i = 0; i < OUT_LINES; i++, k++) {
			char want[64];
			snprintf(want, sizeof(want), "thread %02d line %03d %s", id, i,
				 i % 3 == 0 ? "printf" : i % 3 == 1 ? "fprint" : "puts..");
			ck_assert_str_eq(lines[k], want);
		}
	free(out);

	/* The Marcel "hello" program: detached threads printing, marcel_end waits. */
	capture_begin(&c, stdout);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(marcel_create(NULL, NULL, printer, I2P(10 + i)), 0);
	marcel_end();
	out = capture_end(&c);
	n = 0;
	for (char *p = out; *p; p++)
		n += *p == '\n';
	ck_assert_int_eq(n, 4 * OUT_LINES);
	free(out);
}
END_TEST

/* ============================================================ sleeping */

static any_t delayer(any_t arg)
{
	marcel_delay((unsigned long)P2I(arg));
	return NULL;
}

static atomic_int ticks;
static atomic_int stop_ticking;

static any_t ticker(any_t arg)
{
	(void)arg;
	while (!atomic_load(&stop_ticking)) {
		atomic_fetch_add(&ticks, 1);
		marcel_yield();
	}
	return NULL;
}

START_TEST(test_delay_sleep)
{
	ma_test_init();
	uint64_t t0 = now_ns();
	marcel_delay(50);
	ck_assert_uint_ge(ms_since(t0), 50);
	t0 = now_ns();
	ck_assert_uint_eq(marcel_sleep(1), 0);
	ck_assert_uint_ge(ms_since(t0), 1000);
	marcel_delay(0);
	ck_assert_uint_eq(marcel_sleep(0), 0);

	/* Sleepers do not hold their worker: 64 threads sleeping 200 ms each, all on one VP,
	 * end together; a thread on the same VP keeps running meanwhile. */
	int vp = marcel_current_vp();
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setvpset(&a, MARCEL_VPSET_VP((unsigned)vp)), 0);
	atomic_store(&ticks, 0);
	atomic_store(&stop_ticking, 0);
	marcel_t tick;
	ck_assert_int_eq(marcel_create(&tick, &a, ticker, NULL), 0);
	marcel_t s[64];
	t0 = now_ns();
	for (int i = 0; i < 64; i++)
		ck_assert_int_eq(marcel_create(&s[i], &a, delayer, I2P(200)), 0);
	for (int i = 0; i < 64; i++)
		ck_assert_int_eq(marcel_join(s[i], NULL), 0);
	uint64_t took = ms_since(t0);
	ck_assert_uint_ge(took, 200);
	ck_assert_msg(took < 5000, "64 concurrent 200 ms sleeps took %llu ms", (unsigned long long)took);
	ck_assert_int_gt(atomic_load(&ticks), 0);
	atomic_store(&stop_ticking, 1);
	ck_assert_int_eq(marcel_join(tick, NULL), 0);

	/* nanosleep: POSIX errors. */
	struct timespec bad = { 0, 1000000000L }, neg = { -1, 0 }, ok = { 0, 1000000 };
	struct timespec rem = { 5, 5 };
	set_errno(0);
	ck_assert_int_eq(marcel_nanosleep(&bad, NULL), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	set_errno(0);
	ck_assert_int_eq(marcel_nanosleep(&neg, NULL), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	ck_assert_int_eq(marcel_nanosleep(&ok, &rem), 0);
	ck_assert_int_eq(rem.tv_sec, 0);
	ck_assert_int_eq(rem.tv_nsec, 0);
	marcel_end();
}
END_TEST

/* ============================================================ random */

enum { RAND_DRAWS = 2000 };

struct rnd {
	long v[RAND_DRAWS];
	int out_of_range;
};

static any_t draw(any_t arg)
{
	struct rnd *r = arg;
	for (int i = 0; i < RAND_DRAWS; i++) {
		r->v[i] = marcel_random();
		if (r->v[i] < 0 || r->v[i] > RAND_MAX)
			r->out_of_range++;
		if (i % 100 == 0)
			marcel_yield();
	}
	return NULL;
}

START_TEST(test_random)
{
	ma_test_init();
	enum { N = 4 };
	static struct rnd r[N];
	memset(r, 0, sizeof(r));
	marcel_t t[N];
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(marcel_create(&t[i], NULL, draw, &r[i]), 0);
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(marcel_join(t[i], NULL), 0);
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(r[i].out_of_range, 0);
		/* Spread over the range: both halves hit, not a constant. */
		int low = 0, distinct = 0;
		for (int k = 0; k < RAND_DRAWS; k++) {
			low += r[i].v[k] < RAND_MAX / 2;
			distinct += k > 0 && r[i].v[k] != r[i].v[k - 1];
		}
		ck_assert_msg(low > RAND_DRAWS / 4 && low < 3 * RAND_DRAWS / 4, "thread %d: %d of %d below half",
			      i, low, RAND_DRAWS);
		ck_assert_int_gt(distinct, RAND_DRAWS / 2);
		/* Private generators seeded per thread: no two threads draw the same sequence. */
		for (int j = 0; j < i; j++)
			ck_assert_msg(memcmp(r[i].v, r[j].v, 16 * sizeof(long)) != 0,
				      "threads %d and %d drew the same numbers", i, j);
	}
	/* main too. */
	for (int k = 0; k < 100; k++) {
		long v = marcel_random();
		ck_assert(v >= 0 && v <= RAND_MAX);
	}
	marcel_end();
}
END_TEST

/* ============================================================ VP sets */

START_TEST(test_vpset_ops)
{
	marcel_vpset_t s = MARCEL_VPSET_ZERO;
	ck_assert(marcel_vpset_iszero(&s));
	ck_assert_uint_eq(marcel_vpset_weight(&s), 0);
	ck_assert_int_eq(marcel_vpset_first(&s), -1);
	ck_assert_int_eq(marcel_vpset_last(&s), -1);
	for (unsigned v = 0; v < MARCEL_NBMAXVPS; v++)
		ck_assert(!marcel_vpset_isset(&s, v));

	marcel_vpset_set(&s, 3);
	marcel_vpset_set(&s, 64);
	marcel_vpset_set(&s, MARCEL_NBMAXVPS - 1);
	marcel_vpset_set(&s, MARCEL_NBMAXVPS); /* out of range: ignored */
	ck_assert(!marcel_vpset_iszero(&s));
	ck_assert_uint_eq(marcel_vpset_weight(&s), 3);
	ck_assert(marcel_vpset_isset(&s, 3));
	ck_assert(marcel_vpset_isset(&s, 64));
	ck_assert(!marcel_vpset_isset(&s, 63));
	ck_assert(!marcel_vpset_isset(&s, 65));
	ck_assert(!marcel_vpset_isset(&s, MARCEL_NBMAXVPS));
	ck_assert_int_eq(marcel_vpset_first(&s), 3);
	ck_assert_int_eq(marcel_vpset_last(&s), MARCEL_NBMAXVPS - 1);
	marcel_vpset_clr(&s, 3);
	marcel_vpset_clr(&s, 5);                /* not in it: nothing */
	marcel_vpset_clr(&s, MARCEL_NBMAXVPS);  /* out of range: ignored */
	ck_assert_uint_eq(marcel_vpset_weight(&s), 2);
	ck_assert_int_eq(marcel_vpset_first(&s), 64);

	marcel_vpset_t one = MARCEL_VPSET_VP(7);
	ck_assert_uint_eq(marcel_vpset_weight(&one), 1);
	ck_assert(marcel_vpset_isset(&one, 7));
	ck_assert_int_eq(marcel_vpset_first(&one), 7);
	ck_assert_int_eq(marcel_vpset_last(&one), 7);
	marcel_vpset_t none = MARCEL_VPSET_VP(MARCEL_NBMAXVPS);
	ck_assert(marcel_vpset_iszero(&none));

	marcel_vpset_t full = MARCEL_VPSET_FULL;
	ck_assert_uint_eq(marcel_vpset_weight(&full), MARCEL_NBMAXVPS);
	ck_assert_int_eq(marcel_vpset_first(&full), 0);
	ck_assert_int_eq(marcel_vpset_last(&full), MARCEL_NBMAXVPS - 1);
	marcel_vpset_clr(&full, 0);
	ck_assert_int_eq(marcel_vpset_first(&full), 1);

	/* Passed and copied by value. */
	marcel_vpset_t copy = one;
	marcel_vpset_set(&copy, 8);
	ck_assert(!marcel_vpset_isset(&one, 8));
	marcel_vpset_zero(&copy);
	ck_assert(marcel_vpset_iszero(&copy));
	marcel_vpset_fill(&copy);
	ck_assert_uint_eq(marcel_vpset_weight(&copy), MARCEL_NBMAXVPS);
}
END_TEST

struct applied {
	int bad_vp;
	int checks;
	int ret;
	marcel_vpset_t set; /* two VPs, for the second part */
	int lo, hi;         /* VPs of the smallest topology item holding them: [lo, hi) */
};

/* The VPs of the smallest topology item holding every VP of set, as [*lo, *hi): where
 * marcel_attr_setvpset and marcel_apply_vpset may run a thread restricted to set. */
static void covering_vps(const marcel_vpset_t *set, int *lo, int *hi)
{
	int first = marcel_vpset_first(set), last = marcel_vpset_last(set);
	ck_assert_int_ge(first, 0);
	if (first == last) {
		*lo = first;
		*hi = first + 1;
		return;
	}
	struct marcel_topo_item it;
	int id = marcel_topo_vp_item((unsigned)first);
	for (;;) {
		ck_assert_int_ge(id, 0);
		ck_assert_int_eq(marcel_topo_get_item((unsigned)id, &it), 0);
		if ((int)it.first_vp <= first && last < (int)(it.first_vp + it.nb_vps))
			break;
		id = it.parent;
	}
	*lo = (int)it.first_vp;
	*hi = (int)(it.first_vp + it.nb_vps);
}

/* Marcel style: a thread moves itself with marcel_apply_vpset and checks where it runs,
 * across yields and sleeps. */
static any_t apply_body(any_t arg)
{
	struct applied *ap = arg;
	unsigned n = marcel_nbvps();
	for (unsigned v = 0; v < n; v++) {
		marcel_vpset_t s = MARCEL_VPSET_VP(v);
		if ((ap->ret = marcel_apply_vpset(&s)))
			return NULL;
		for (int i = 0; i < 3; i++) {
			if (marcel_current_vp() != (int)v)
				ap->bad_vp++;
			ap->checks++;
			if (i == 1)
				marcel_usleep(100);
			else
				marcel_yield();
		}
	}
	/* Two VPs, widened to the smallest item holding both: it stays inside that. */
	if ((ap->ret = marcel_apply_vpset(&ap->set)))
		return NULL;
	for (int i = 0; i < 20; i++) {
		int vp = marcel_current_vp();
		if (vp < ap->lo || vp >= ap->hi)
			ap->bad_vp++;
		ap->checks++;
		if (i % 4 == 0)
			marcel_usleep(50);
		else
			marcel_yield();
	}
	return NULL;
}

/* apply_vpset with two VPs: the thread must keep to the smallest item holding them even
 * when those two are busy and every other VP is idle. */
static atomic_int hog_started, hog_stop;

static any_t hog(any_t arg)
{
	(void)arg;
	atomic_fetch_add(&hog_started, 1);
	uint64_t t0 = now_ns();
	while (!atomic_load(&hog_stop) && ms_since(t0) < 300)
		;
	return NULL;
}

static any_t apply_two_body(any_t arg)
{
	struct applied *ap = arg;
	if ((ap->ret = marcel_apply_vpset(&ap->set)))
		return NULL;
	for (int i = 0; i < 20; i++) {
		int vp = marcel_current_vp();
		if (vp < ap->lo || vp >= ap->hi)
			ap->bad_vp++;
		ap->checks++;
		marcel_usleep(2000);
	}
	return NULL;
}

static void *apply_from_pthread(void *arg)
{
	(void)arg;
	marcel_vpset_t s = MARCEL_VPSET_VP(0);
	return I2P(marcel_apply_vpset(&s));
}

START_TEST(test_apply_vpset)
{
	ma_test_init();
	unsigned n = marcel_nbvps();
	struct applied ap = { 0, 0, 0, MARCEL_VPSET_ZERO, 0, 0 };
	marcel_vpset_set(&ap.set, 0);
	marcel_vpset_set(&ap.set, n > 1 ? 1 : 0);
	covering_vps(&ap.set, &ap.lo, &ap.hi);
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, NULL, apply_body, &ap), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_int_eq(ap.ret, 0);
	ck_assert_int_eq(ap.checks, (int)(3 * n + 20));
	ck_assert_int_eq(ap.bad_vp, 0);

	if (n >= 3) {
		/* The two VPs busy, the others idle. */
		marcel_t h[2];
		atomic_store(&hog_started, 0);
		atomic_store(&hog_stop, 0);
		marcel_attr_t a0, a1;
		ck_assert_int_eq(marcel_attr_init(&a0), 0);
		ck_assert_int_eq(marcel_attr_init(&a1), 0);
		ck_assert_int_eq(marcel_attr_setvpset(&a0, MARCEL_VPSET_VP(0)), 0);
		ck_assert_int_eq(marcel_attr_setvpset(&a1, MARCEL_VPSET_VP(1)), 0);
		ck_assert_int_eq(marcel_create(&h[0], &a0, hog, NULL), 0);
		ck_assert_int_eq(marcel_create(&h[1], &a1, hog, NULL), 0);
		ck_assert(wait_for(&hog_started, 2, 10000));
		struct applied two = ap;
		two.bad_vp = two.checks = two.ret = 0;
		ck_assert_int_eq(marcel_create(&t, NULL, apply_two_body, &two), 0);
		ck_assert_int_eq(marcel_join(t, NULL), 0);
		atomic_store(&hog_stop, 1);
		ck_assert_int_eq(marcel_join(h[0], NULL), 0);
		ck_assert_int_eq(marcel_join(h[1], NULL), 0);
		ck_assert_int_eq(two.ret, 0);
		ck_assert_int_eq(two.checks, 20);
		ck_assert_msg(two.bad_vp == 0,
			      "after marcel_apply_vpset({0, 1}) the thread ran %d of 20 times outside VPs %d..%d",
			      two.bad_vp, two.lo, two.hi - 1);
	}

	/* main too: onto the last VP, then anywhere again. */
	marcel_vpset_t last = MARCEL_VPSET_VP(n - 1);
	ck_assert_int_eq(marcel_apply_vpset(&last), 0);
	ck_assert_int_eq(marcel_current_vp(), (int)n - 1);
	marcel_yield();
	marcel_usleep(100);
	ck_assert_int_eq(marcel_current_vp(), (int)n - 1);
	marcel_vpset_t full = MARCEL_VPSET_FULL;
	ck_assert_int_eq(marcel_apply_vpset(&full), 0);

	/* Errors. */
	marcel_vpset_t empty = MARCEL_VPSET_ZERO, beyond = MARCEL_VPSET_VP(n);
	ck_assert_int_eq(marcel_apply_vpset(NULL), EINVAL);
	ck_assert_int_eq(marcel_apply_vpset(&empty), EINVAL);
	if (n < MARCEL_NBMAXVPS)
		ck_assert_int_eq(marcel_apply_vpset(&beyond), EINVAL);
	ck_assert_int_eq(P2I(in_pthread(apply_from_pthread, NULL)), EPERM);
	marcel_end();
}
END_TEST

/* ============================================================ barriers */

struct bar_run {
	marcel_barrier_t *b;
	atomic_int *phase_arrivals; /* arrivals per round */
	int nthreads, rounds;
	atomic_int *serials;        /* serial-thread count per round */
	atomic_int early;           /* someone left a round before all arrived */
};

static any_t bar_body(any_t arg)
{
	struct bar_run *r = arg;
	for (int k = 0; k < r->rounds; k++) {
		atomic_fetch_add(&r->phase_arrivals[k], 1);
		int ret = marcel_barrier_wait(r->b);
		if (ret == MARCEL_BARRIER_SERIAL_THREAD)
			atomic_fetch_add(&r->serials[k], 1);
		else if (ret != 0)
			return I2P(ret);
		if (atomic_load(&r->phase_arrivals[k]) != r->nthreads)
			atomic_fetch_add(&r->early, 1);
	}
	return NULL;
}

static void run_barrier(int mode, int nthreads, int rounds)
{
	marcel_barrierattr_t ba;
	ck_assert_int_eq(marcel_barrierattr_init(&ba), 0);
	ck_assert_int_eq(marcel_barrierattr_setmode(&ba, mode), 0);
	marcel_barrier_t b;
	ck_assert_int_eq(marcel_barrier_init(&b, &ba, (unsigned)nthreads), 0);
	ck_assert_int_eq(marcel_barrierattr_destroy(&ba), 0);
	unsigned count = 0;
	ck_assert_int_eq(marcel_barrier_getcount(&b, &count), 0);
	ck_assert_uint_eq(count, (unsigned)nthreads);
	atomic_int *arr = calloc((size_t)rounds, sizeof(*arr));
	atomic_int *ser = calloc((size_t)rounds, sizeof(*ser));
	ck_assert(arr && ser);
	struct bar_run r = { .b = &b, .phase_arrivals = arr, .nthreads = nthreads, .rounds = rounds,
			     .serials = ser };
	atomic_init(&r.early, 0);
	marcel_t *t = calloc((size_t)nthreads, sizeof(*t));
	for (int i = 0; i < nthreads; i++)
		ck_assert_int_eq(marcel_create(&t[i], NULL, bar_body, &r), 0);
	for (int i = 0; i < nthreads; i++) {
		any_t ret;
		ck_assert_int_eq(marcel_join(t[i], &ret), 0);
		ck_assert_int_eq(P2I(ret), 0);
	}
	ck_assert_int_eq(atomic_load(&r.early), 0);
	for (int k = 0; k < rounds; k++) {
		ck_assert_int_eq(atomic_load(&arr[k]), nthreads);
		ck_assert_msg(atomic_load(&ser[k]) == 1, "mode %d round %d: %d serial threads", mode, k,
			      atomic_load(&ser[k]));
	}
	ck_assert_int_eq(marcel_barrier_destroy(&b), 0);
	free(arr);
	free(ser);
	free(t);
}

START_TEST(test_barrier_modes)
{
	marcel_barrierattr_t ba;
	int mode = -1, ps = -1;
	ck_assert_int_eq(marcel_barrierattr_init(NULL), EINVAL);
	ck_assert_int_eq(marcel_barrierattr_init(&ba), 0);
	ck_assert_int_eq(marcel_barrierattr_getmode(&ba, &mode), 0);
	ck_assert_int_eq(mode, MARCEL_BARRIER_SLEEP_MODE);
	ck_assert_int_eq(marcel_barrierattr_setmode(&ba, MARCEL_BARRIER_YIELD_MODE), 0);
	ck_assert_int_eq(marcel_barrierattr_getmode(&ba, &mode), 0);
	ck_assert_int_eq(mode, MARCEL_BARRIER_YIELD_MODE);
	ck_assert_int_eq(marcel_barrierattr_setmode(&ba, 42), EINVAL);
	ck_assert_int_eq(marcel_barrierattr_getmode(&ba, &mode), 0);
	ck_assert_int_eq(mode, MARCEL_BARRIER_YIELD_MODE);
	ck_assert_int_eq(marcel_barrierattr_setmode(&ba, MARCEL_BARRIER_SLEEP_MODE), 0);
	ck_assert_int_eq(marcel_barrierattr_getmode(&ba, NULL), EINVAL);
	ck_assert_int_eq(marcel_barrierattr_setpshared(&ba, MARCEL_PROCESS_PRIVATE), 0);
	ck_assert_int_eq(marcel_barrierattr_setpshared(&ba, MARCEL_PROCESS_SHARED), ENOTSUP);
	ck_assert_int_eq(marcel_barrierattr_setpshared(&ba, 7), EINVAL);
	ck_assert_int_eq(marcel_barrierattr_getpshared(&ba, &ps), 0);
	ck_assert_int_eq(ps, MARCEL_PROCESS_PRIVATE);
	ck_assert_int_eq(marcel_barrierattr_destroy(&ba), 0);
	ck_assert_int_eq(marcel_barrierattr_destroy(NULL), EINVAL);

	ma_test_init();
	unsigned n = marcel_nbvps();
	/* Fewer threads than VPs, then many more: yield mode must still let everyone in. */
	run_barrier(MARCEL_BARRIER_SLEEP_MODE, 3, 50);
	run_barrier(MARCEL_BARRIER_YIELD_MODE, 3, 50);
	run_barrier(MARCEL_BARRIER_SLEEP_MODE, (int)(2 * n + 3), 20);
	run_barrier(MARCEL_BARRIER_YIELD_MODE, (int)(2 * n + 3), 20);
	/* One thread: it is the serial thread of every round. */
	marcel_barrier_t b;
	ck_assert_int_eq(marcel_barrierattr_init(&ba), 0);
	ck_assert_int_eq(marcel_barrierattr_setmode(&ba, MARCEL_BARRIER_YIELD_MODE), 0);
	ck_assert_int_eq(marcel_barrier_init(&b, &ba, 1), 0);
	ck_assert_int_eq(marcel_barrier_wait(&b), MARCEL_BARRIER_SERIAL_THREAD);
	ck_assert_int_eq(marcel_barrier_wait(&b), MARCEL_BARRIER_SERIAL_THREAD);
	ck_assert_int_eq(marcel_barrier_destroy(&b), 0);
	ck_assert_int_eq(marcel_barrier_init(&b, &ba, 0), EINVAL);
	ck_assert_int_eq(marcel_barrierattr_destroy(&ba), 0);
	marcel_end();
}
END_TEST

/* ============================================================ condattr / mutexattr */

struct errcheck {
	marcel_mutex_t *m;
	int unlock_ret, trylock_ret;
};

static any_t foreign_unlock(any_t arg)
{
	struct errcheck *e = arg;
	e->unlock_ret = marcel_mutex_unlock(e->m);
	e->trylock_ret = marcel_mutex_trylock(e->m);
	return NULL;
}

START_TEST(test_cond_mutex_attr)
{
	marcel_condattr_t ca;
	clockid_t clk = (clockid_t)-1;
	int ps = -1;
	ck_assert_int_eq(marcel_condattr_init(NULL), EINVAL);
	ck_assert_int_eq(marcel_condattr_init(&ca), 0);
	ck_assert_int_eq(marcel_condattr_getclock(&ca, &clk), 0);
	ck_assert_int_eq(clk, CLOCK_REALTIME);
	ck_assert_int_eq(marcel_condattr_setclock(&ca, CLOCK_PROCESS_CPUTIME_ID), EINVAL);
	ck_assert_int_eq(marcel_condattr_setclock(&ca, CLOCK_MONOTONIC), 0);
	ck_assert_int_eq(marcel_condattr_getclock(&ca, &clk), 0);
	ck_assert_int_eq(clk, CLOCK_MONOTONIC);
	ck_assert_int_eq(marcel_condattr_getclock(&ca, NULL), EINVAL);
	ck_assert_int_eq(marcel_condattr_setpshared(&ca, MARCEL_PROCESS_SHARED), ENOTSUP);
	ck_assert_int_eq(marcel_condattr_setpshared(&ca, 3), EINVAL);
	ck_assert_int_eq(marcel_condattr_setpshared(&ca, MARCEL_PROCESS_PRIVATE), 0);
	ck_assert_int_eq(marcel_condattr_getpshared(&ca, &ps), 0);
	ck_assert_int_eq(ps, MARCEL_PROCESS_PRIVATE);

	marcel_mutexattr_t ma;
	int kind = -1;
	ck_assert_int_eq(marcel_mutexattr_init(NULL), EINVAL);
	ck_assert_int_eq(marcel_mutexattr_init(&ma), 0);
	ck_assert_int_eq(marcel_mutexattr_gettype(&ma, &kind), 0);
	ck_assert_int_eq(kind, MARCEL_MUTEX_DEFAULT);
	ck_assert_int_eq(marcel_mutexattr_settype(&ma, 99), EINVAL);
	ck_assert_int_eq(marcel_mutexattr_settype(&ma, MARCEL_MUTEX_ERRORCHECK), 0);
	ck_assert_int_eq(marcel_mutexattr_gettype(&ma, &kind), 0);
	ck_assert_int_eq(kind, MARCEL_MUTEX_ERRORCHECK);
	ck_assert_int_eq(marcel_mutexattr_gettype(&ma, NULL), EINVAL);
	ck_assert_int_eq(marcel_mutexattr_setpshared(&ma, MARCEL_PROCESS_SHARED), ENOTSUP);
	ck_assert_int_eq(marcel_mutexattr_setpshared(&ma, 3), EINVAL);
	ck_assert_int_eq(marcel_mutexattr_setpshared(&ma, MARCEL_PROCESS_PRIVATE), 0);
	ck_assert_int_eq(marcel_mutexattr_getpshared(&ma, &ps), 0);
	ck_assert_int_eq(ps, MARCEL_PROCESS_PRIVATE);

	ma_test_init();
	/* Cond on the monotonic clock: the deadline is read on that clock. */
	marcel_cond_t c;
	marcel_mutex_t m;
	ck_assert_int_eq(marcel_cond_init(&c, &ca), 0);
	ck_assert_int_eq(marcel_mutex_init(&m, NULL), 0);
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_nsec += 50 * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	uint64_t t0 = now_ns();
	ck_assert_int_eq(marcel_mutex_lock(&m), 0);
	int r;
	do
		r = marcel_cond_timedwait(&c, &m, &dl);
	while (r == 0);
	ck_assert_int_eq(r, ETIMEDOUT);
	uint64_t took = ms_since(t0);
	ck_assert_uint_ge(took, 49);
	/* A monotonic deadline read as CLOCK_REALTIME would be decades in the past. */
	ck_assert_msg(took < 5000, "timedwait took %llu ms", (unsigned long long)took);
	ck_assert_int_eq(marcel_mutex_unlock(&m), 0);
	ck_assert_int_eq(marcel_cond_destroy(&c), 0);
	ck_assert_int_eq(marcel_condattr_destroy(&ca), 0);

	/* Error-checking mutex from the attribute. */
	marcel_mutex_t em;
	ck_assert_int_eq(marcel_mutex_init(&em, &ma), 0);
	ck_assert_int_eq(marcel_mutex_lock(&em), 0);
	ck_assert_int_eq(marcel_mutex_lock(&em), EDEADLK);
	ck_assert_int_eq(marcel_mutex_trylock(&em), EBUSY);
	struct errcheck e = { &em, -1, -1 };
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, NULL, foreign_unlock, &e), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_int_eq(e.unlock_ret, EPERM);
	ck_assert_int_eq(e.trylock_ret, EBUSY);
	ck_assert_int_eq(marcel_mutex_destroy(&em), EBUSY);
	ck_assert_int_eq(marcel_mutex_unlock(&em), 0);
	ck_assert_int_eq(marcel_mutex_unlock(&em), EPERM);
	ck_assert_int_eq(marcel_mutex_destroy(&em), 0);

	/* Recursive kind through the plain mutex attributes. */
	ck_assert_int_eq(marcel_mutexattr_settype(&ma, MARCEL_MUTEX_RECURSIVE), 0);
	ck_assert_int_eq(marcel_mutex_init(&em, &ma), 0);
	ck_assert_int_eq(marcel_mutex_lock(&em), 0);
	ck_assert_int_eq(marcel_mutex_lock(&em), 0);
	ck_assert_int_eq(marcel_mutex_trylock(&em), 0);
	ck_assert_int_eq(marcel_mutex_unlock(&em), 0);
	ck_assert_int_eq(marcel_mutex_unlock(&em), 0);
	ck_assert_int_eq(marcel_mutex_unlock(&em), 0);
	ck_assert_int_eq(marcel_mutex_unlock(&em), EPERM);
	ck_assert_int_eq(marcel_mutex_destroy(&em), 0);
	ck_assert_int_eq(marcel_mutexattr_destroy(&ma), 0);
	ck_assert_int_eq(marcel_mutexattr_destroy(NULL), EINVAL);
	marcel_end();
}
END_TEST

/* ============================================================ recursive mutexes */

static marcel_recursivemutex_t static_rm = MARCEL_RECURSIVEMUTEX_INITIALIZER;

struct rm_run {
	marcel_recursivemutex_t *m;
	long counter;
	atomic_int inside;
	atomic_int overlap;
	int bad_depth;
	int iters;
};

/* Nested critical sections, Marcel style: the depth is the return value. */
static void rm_nested(struct rm_run *r, int depth)
{
	int d = marcel_recursivemutex_lock(r->m);
	if (d != depth)
		r->bad_depth++;
	if (depth == 1 && atomic_fetch_add(&r->inside, 1) != 0)
		atomic_fetch_add(&r->overlap, 1);
	/* An unprotected read-modify-write around the nested part: lost updates would show
	 * if another thread got in. */
	long c = depth == 1 ? r->counter : 0;
	if (depth < 3)
		rm_nested(r, depth + 1);
	else
		marcel_yield(); /* give others a chance to break in */
	if (depth == 1) {
		r->counter = c + 1;
		atomic_fetch_sub(&r->inside, 1);
	}
	if (marcel_recursivemutex_unlock(r->m) != depth - 1)
		r->bad_depth++;
}

static any_t rm_body(any_t arg)
{
	struct rm_run *r = arg;
	for (int i = 0; i < r->iters; i++)
		rm_nested(r, 1);
	return NULL;
}

struct rm_probe {
	marcel_recursivemutex_t *m;
	int trylock, unlock;
};

static any_t rm_other(any_t arg)
{
	struct rm_probe *p = arg;
	p->trylock = marcel_recursivemutex_trylock(p->m);
	p->unlock = marcel_recursivemutex_unlock(p->m);
	return NULL;
}

START_TEST(test_recursivemutex)
{
	ma_test_init();
	marcel_recursivemutexattr_t ra;
	ck_assert_int_eq(marcel_recursivemutexattr_init(&ra), 0);
	marcel_recursivemutex_t m;
	ck_assert_int_eq(marcel_recursivemutex_init(&m, &ra), 0);
	ck_assert_int_eq(marcel_recursivemutexattr_destroy(&ra), 0);

	ck_assert_int_eq(marcel_recursivemutex_lock(&m), 1);
	ck_assert_int_eq(marcel_recursivemutex_lock(&m), 2);
	ck_assert_int_eq(marcel_recursivemutex_trylock(&m), 3);
	struct rm_probe p = { &m, -100, -100 };
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, NULL, rm_other, &p), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_int_eq(p.trylock, 0);
	ck_assert_int_eq(p.unlock, -EPERM);
	ck_assert_int_eq(marcel_recursivemutex_unlock(&m), 2);
	ck_assert_int_eq(marcel_recursivemutex_unlock(&m), 1);
	ck_assert_int_eq(marcel_recursivemutex_unlock(&m), 0);
	ck_assert_int_eq(marcel_recursivemutex_unlock(&m), -EPERM);
	/* Free now: another thread gets it at depth 1. */
	ck_assert_int_eq(marcel_create(&t, NULL, rm_other, &p), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_int_eq(p.trylock, 1);
	ck_assert_int_eq(p.unlock, 0);

	/* Mutual exclusion between threads nesting three deep. */
	struct rm_run r = { .m = &m, .iters = 200 };
	atomic_init(&r.inside, 0);
	atomic_init(&r.overlap, 0);
	enum { N = 6 };
	marcel_t ts[N];
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(marcel_create(&ts[i], NULL, rm_body, &r), 0);
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(marcel_join(ts[i], NULL), 0);
	ck_assert_int_eq(r.bad_depth, 0);
	ck_assert_int_eq(atomic_load(&r.overlap), 0);
	ck_assert_int_eq(r.counter, N * r.iters);
	ck_assert_int_eq(marcel_recursivemutex_destroy(&m), 0);

	/* The static initialiser; NULL attributes. */
	ck_assert_int_eq(marcel_recursivemutex_lock(&static_rm), 1);
	ck_assert_int_eq(marcel_recursivemutex_lock(&static_rm), 2);
	ck_assert_int_eq(marcel_recursivemutex_unlock(&static_rm), 1);
	ck_assert_int_eq(marcel_recursivemutex_unlock(&static_rm), 0);
	ck_assert_int_eq(marcel_recursivemutex_init(&m, NULL), 0);
	ck_assert_int_eq(marcel_recursivemutex_lock(&m), 1);
	ck_assert_int_eq(marcel_recursivemutex_lock(&m), 2);
	ck_assert_int_eq(marcel_recursivemutex_destroy(&m), EBUSY);
	ck_assert_int_eq(marcel_recursivemutex_unlock(&m), 1);
	ck_assert_int_eq(marcel_recursivemutex_unlock(&m), 0);
	ck_assert_int_eq(marcel_recursivemutex_destroy(&m), 0);
	marcel_end();
}
END_TEST

/* ============================================================ sem_timed_P */

static marcel_sem_t tp_sem;
static atomic_int tp_got;

static any_t timed_taker(any_t arg)
{
	uint64_t t0 = now_ns();
	int r = marcel_sem_timed_P(&tp_sem, (unsigned long)P2I(arg));
	atomic_store(&tp_got, r ? 1 : -1);
	return I2P((int)ms_since(t0));
}

START_TEST(test_sem_timed_P)
{
	ma_test_init();
	ck_assert_int_eq(marcel_sem_init(&tp_sem, 0), 0);
	/* Nothing to take: times out after the delay, errno ETIMEDOUT. */
	uint64_t t0 = now_ns();
	set_errno(0);
	ck_assert_int_eq(marcel_sem_timed_P(&tp_sem, 50), 0);
	ck_assert_int_eq(get_errno(), ETIMEDOUT);
	ck_assert_uint_ge(ms_since(t0), 50);
	ck_assert_int_eq(marcel_sem_timed_P(&tp_sem, 0), 0);

	/* Available: taken at once. */
	marcel_sem_V(&tp_sem);
	marcel_sem_V(&tp_sem);
	t0 = now_ns();
	ck_assert_int_eq(marcel_sem_timed_P(&tp_sem, 10000), 1);
	ck_assert_int_eq(marcel_sem_timed_P(&tp_sem, 0), 1);
	ck_assert_uint_lt(ms_since(t0), 1000);
	ck_assert_int_eq(marcel_sem_try_P(&tp_sem), 0);

	/* A V from another thread ends a long wait early. */
	atomic_store(&tp_got, 0);
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, NULL, timed_taker, I2P(20000)), 0);
	marcel_delay(30);
	ck_assert_int_eq(atomic_load(&tp_got), 0);
	marcel_sem_V(&tp_sem);
	any_t took;
	ck_assert_int_eq(marcel_join(t, &took), 0);
	ck_assert_int_eq(atomic_load(&tp_got), 1);
	ck_assert_int_lt(P2I(took), 10000);
	/* And one that times out while main waits for it. */
	atomic_store(&tp_got, 0);
	ck_assert_int_eq(marcel_create(&t, NULL, timed_taker, I2P(40)), 0);
	ck_assert_int_eq(marcel_join(t, &took), 0);
	ck_assert_int_eq(atomic_load(&tp_got), -1);
	ck_assert_int_ge(P2I(took), 40);
	/* The timed-out waiter left nothing behind: a V is still available afterwards. */
	marcel_sem_V(&tp_sem);
	ck_assert_int_eq(marcel_sem_try_P(&tp_sem), 1);
	ck_assert_int_eq(marcel_sem_destroy(&tp_sem), 0);
	marcel_end();
}
END_TEST

/* ============================================================ futexes */

static marcel_futex_t fx = MARCEL_FUTEX_INITIALIZER;
static unsigned long fx_word;
static atomic_int fx_waiting, fx_passed;

/* The canonical use: wait while the word says "not yet". */
static any_t fx_waiter(any_t arg)
{
	(void)arg;
	atomic_fetch_add(&fx_waiting, 1);
	int bad = 0;
	while (!__atomic_load_n(&fx_word, __ATOMIC_ACQUIRE)) {
		int r = marcel_futex_wait(&fx, &fx_word, ~0UL, 0, MARCEL_FUTEX_NO_TIMEOUT);
		if (r != 0 && r != EWOULDBLOCK)
			bad = r;
	}
	atomic_fetch_add(&fx_passed, 1);
	return I2P(bad);
}

START_TEST(test_futex)
{
	ma_test_init();
	marcel_futex_t f = MARCEL_FUTEX_INITIALIZER;
	unsigned long word = 0x10;
	/* Value differs: returns at once. */
	ck_assert_int_eq(marcel_futex_wait(&f, &word, ~0UL, 0x11, MARCEL_FUTEX_NO_TIMEOUT), EWOULDBLOCK);
	ck_assert_int_eq(marcel_futex_wait(&f, &word, 0xf0, 0, MARCEL_FUTEX_NO_TIMEOUT), EWOULDBLOCK);
	/* Value matches under the mask: waits until the timeout. */
	uint64_t t0 = now_ns();
	ck_assert_int_eq(marcel_futex_wait(&f, &word, 0x0f, 0, 30000), ETIMEDOUT);
	ck_assert_uint_ge(ms_since(t0), 30);
	ck_assert_int_eq(marcel_futex_wait(&f, &word, ~0UL, 0x10, 20000), ETIMEDOUT);
	ck_assert_int_eq(marcel_futex_wait(NULL, &word, ~0UL, 0x10, 1), EINVAL);
	ck_assert_int_eq(marcel_futex_wait(&f, NULL, ~0UL, 0x10, 1), EINVAL);
	/* Nobody waits: nobody woken. */
	ck_assert_int_eq(marcel_futex_wake(&f, 10), 0);

	/* N waiters; wake them one at a time and count. */
	enum { N = 5 };
	fx_word = 0;
	atomic_store(&fx_waiting, 0);
	atomic_store(&fx_passed, 0);
	marcel_t t[N];
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(marcel_create(&t[i], NULL, fx_waiter, NULL), 0);
	ck_assert(wait_for(&fx_waiting, N, 10000));
	marcel_delay(50);
	ck_assert_int_eq(atomic_load(&fx_passed), 0);
	/* Spurious-safe: woken with the word unchanged, each waits again. */
	int woken = 0;
	t0 = now_ns();
	while (woken < N && ms_since(t0) < 10000) {
		int w = marcel_futex_wake(&fx, 1);
		ck_assert_int_le(w, 1);
		woken += w;
		marcel_usleep(1000);
	}
	ck_assert_int_eq(woken, N);
	ck_assert_int_eq(atomic_load(&fx_passed), 0);
	/* Now for real: set the word, wake everyone. */
	__atomic_store_n(&fx_word, 1, __ATOMIC_RELEASE);
	t0 = now_ns();
	while (atomic_load(&fx_passed) < N && ms_since(t0) < 10000) {
		marcel_futex_wake(&fx, INT_MAX);
		marcel_usleep(1000);
	}
	for (int i = 0; i < N; i++) {
		any_t r;
		ck_assert_int_eq(marcel_join(t[i], &r), 0);
		ck_assert_int_eq(P2I(r), 0);
	}
	ck_assert_int_eq(atomic_load(&fx_passed), N);
	marcel_end();
}
END_TEST

/* ============================================================ sched_param */

static char order[8];
static atomic_int order_pos;

static any_t mark_order(any_t arg)
{
	order[atomic_fetch_add(&order_pos, 1)] = (char)P2I(arg);
	return NULL;
}

static atomic_int ended_flag;

static any_t ends_quickly(any_t arg)
{
	atomic_store(&ended_flag, 1);
	return arg;
}

START_TEST(test_sched_param)
{
	ma_test_init();
	struct marcel_sched_param sp = { -1 };
	marcel_t self = marcel_self();
	ck_assert_int_eq(marcel_sched_getparam(self, &sp), 0);
	ck_assert_int_eq(sp.sched_priority, MA_DEF_PRIO);

	/* Out of range and NULL arguments. */
	struct marcel_sched_param bad = { -1 };
	ck_assert_int_eq(marcel_sched_setparam(self, &bad), EINVAL);
	bad.sched_priority = MA_MAX_PRIO;
	ck_assert_int_eq(marcel_sched_setparam(self, &bad), EINVAL);
	ck_assert_int_eq(marcel_sched_setparam(self, NULL), EINVAL);
	ck_assert_int_eq(marcel_sched_getparam(self, NULL), EINVAL);
	ck_assert_int_eq(marcel_sched_setparam(NULL, &sp), ESRCH);
	ck_assert_int_eq(marcel_sched_getparam(NULL, &sp), ESRCH);
	ck_assert_int_eq(marcel_sched_getparam(self, &sp), 0);
	ck_assert_int_eq(sp.sched_priority, MA_DEF_PRIO);

	/* The whole range is accepted, and read back. */
	for (int p = 0; p < MA_MAX_PRIO; p++) {
		struct marcel_sched_param q = { p };
		ck_assert_int_eq(marcel_sched_setparam(self, &q), 0);
		ck_assert_int_eq(marcel_sched_getparam(self, &q), 0);
		ck_assert_int_eq(q.sched_priority, p);
	}
	sp.sched_priority = MA_DEF_PRIO;
	ck_assert_int_eq(marcel_sched_setparam(self, &sp), 0);

	/* Effect: on one VP, a thread lowered to batch priority before it is queued runs
	 * after one at the default priority created later. */
	unsigned vp = (unsigned)marcel_current_vp();
	marcel_vpset_t here = MARCEL_VPSET_VP(vp);
	ck_assert_int_eq(marcel_apply_vpset(&here), 0);
	vp = (unsigned)marcel_current_vp();
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setvpset(&a, MARCEL_VPSET_VP(vp)), 0);
	memset(order, 0, sizeof(order));
	atomic_store(&order_pos, 0);
	marcel_t tb, td;
	ck_assert_int_eq(marcel_create_dontsched(&tb, &a, mark_order, I2P('B')), 0);
	struct marcel_sched_param batch = { MA_BATCH_PRIO };
	ck_assert_int_eq(marcel_sched_setparam(tb, &batch), 0);
	ck_assert_int_eq(marcel_sched_getparam(tb, &sp), 0);
	ck_assert_int_eq(sp.sched_priority, MA_BATCH_PRIO);
	ck_assert_int_eq(marcel_wake_up_created_thread(tb), 0);
	ck_assert_int_eq(marcel_create(&td, &a, mark_order, I2P('D')), 0);
	ck_assert_int_eq(marcel_join(td, NULL), 0);
	ck_assert_int_eq(marcel_join(tb, NULL), 0);
	ck_assert_str_eq(order, "DB");

	/* A thread that has ended (not yet joined) is ESRCH. */
	atomic_store(&ended_flag, 0);
	marcel_t te;
	ck_assert_int_eq(marcel_create(&te, NULL, ends_quickly, NULL), 0);
	ck_assert(wait_for(&ended_flag, 1, 10000));
	marcel_delay(20);
	ck_assert_int_eq(marcel_sched_getparam(te, &sp), ESRCH);
	ck_assert_int_eq(marcel_sched_setparam(te, &batch), ESRCH);
	ck_assert_int_eq(marcel_join(te, NULL), 0);
	marcel_end();
}
END_TEST

/* ============================================================ suspend / resume */

static atomic_int work_count;
static atomic_int stop_work;

static any_t worker_loop(any_t arg)
{
	(void)arg;
	while (!atomic_load(&stop_work)) {
		atomic_fetch_add(&work_count, 1);
		marcel_yield();
	}
	return NULL;
}

static atomic_int self_stage;

static any_t suspend_self(any_t arg)
{
	(void)arg;
	atomic_store(&self_stage, 1);
	int r = marcel_suspend(marcel_self());
	atomic_store(&self_stage, 2);
	return I2P(r);
}

static marcel_sem_t sr_sem;
static atomic_int sr_stage;

static any_t blocked_then_suspended(any_t arg)
{
	(void)arg;
	atomic_store(&sr_stage, 1);
	marcel_sem_P(&sr_sem);
	atomic_store(&sr_stage, 2);
	return NULL;
}

static void *suspend_from_pthread(void *arg)
{
	return I2P(marcel_suspend((marcel_t)arg));
}

START_TEST(test_suspend_resume)
{
	ma_test_init();
	/* A running thread (on another VP when there is one) stops making progress. */
	atomic_store(&work_count, 0);
	atomic_store(&stop_work, 0);
	marcel_t w;
	ck_assert_int_eq(marcel_create(&w, NULL, worker_loop, NULL), 0);
	ck_assert(wait_for(&work_count, 10, 10000));
	ck_assert_int_eq(marcel_suspend(w), 0);
	ck_assert_int_eq(marcel_suspend(w), 0); /* twice: still one resume */
	marcel_delay(30);
	int c1 = atomic_load(&work_count);
	marcel_delay(150);
	int c2 = atomic_load(&work_count);
	ck_assert_msg(c1 == c2, "suspended thread progressed from %d to %d", c1, c2);
	ck_assert_int_eq(marcel_resume(w), 0);
	ck_assert_msg(wait_for(&work_count, c2 + 10, 10000), "resumed thread does not progress");
	ck_assert_int_eq(marcel_resume(w), 0); /* not suspended: nothing */
	atomic_store(&stop_work, 1);
	ck_assert_int_eq(marcel_join(w, NULL), 0);

	/* Suspending oneself stops at once. */
	atomic_store(&self_stage, 0);
	marcel_t s;
	ck_assert_int_eq(marcel_create(&s, NULL, suspend_self, NULL), 0);
	ck_assert(wait_for(&self_stage, 1, 10000));
	marcel_delay(100);
	ck_assert_int_eq(atomic_load(&self_stage), 1);
	ck_assert_int_eq(marcel_resume(s), 0);
	any_t r;
	ck_assert_int_eq(marcel_join(s, &r), 0);
	ck_assert_int_eq(atomic_load(&self_stage), 2);
	ck_assert_int_eq(P2I(r), 0);

	/* A blocked thread that is suspended and then woken stays stopped until resumed. */
	ck_assert_int_eq(marcel_sem_init(&sr_sem, 0), 0);
	atomic_store(&sr_stage, 0);
	marcel_t b;
	ck_assert_int_eq(marcel_create(&b, NULL, blocked_then_suspended, NULL), 0);
	ck_assert(wait_for(&sr_stage, 1, 10000));
	marcel_delay(20);
	ck_assert_int_eq(marcel_suspend(b), 0);
	marcel_sem_V(&sr_sem);
	marcel_delay(100);
	ck_assert_int_eq(atomic_load(&sr_stage), 1);
	ck_assert_int_eq(marcel_resume(b), 0);
	ck_assert_int_eq(marcel_join(b, NULL), 0);
	ck_assert_int_eq(atomic_load(&sr_stage), 2);

	/* Errors. */
	ck_assert_int_eq(marcel_suspend(NULL), ESRCH);
	ck_assert_int_eq(marcel_resume(NULL), ESRCH);
	atomic_store(&ended_flag, 0);
	marcel_t e;
	ck_assert_int_eq(marcel_create(&e, NULL, ends_quickly, NULL), 0);
	ck_assert(wait_for(&ended_flag, 1, 10000));
	marcel_delay(20);
	ck_assert_int_eq(marcel_suspend(e), ESRCH);
	ck_assert_int_eq(marcel_resume(e), ESRCH);
	ck_assert_int_eq(marcel_join(e, NULL), 0);
	ck_assert_int_eq(P2I(in_pthread(suspend_from_pthread, marcel_self())), EPERM);
	marcel_end();
}
END_TEST

/* ============================================================ seed attribute, policies */

static any_t twice(any_t arg)
{
	return I2P(2 * P2I(arg));
}

static atomic_int seeds_ran;

static any_t seed_body(any_t arg)
{
	atomic_fetch_add(&seeds_ran, P2I(arg));
	return NULL;
}

START_TEST(test_seed_attr)
{
	marcel_attr_t a;
	int seed = -1;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_getseed(&a, &seed), 0);
	ck_assert_int_eq(seed, 0);
	ck_assert_int_eq(marcel_attr_setseed(&a, 1), 0);
	ck_assert_int_eq(marcel_attr_getseed(&a, &seed), 0);
	ck_assert_int_ne(seed, 0);
	ck_assert_int_eq(marcel_attr_getseed(&a, NULL), EINVAL);
	ck_assert_int_eq(marcel_attr_getseed(NULL, &seed), EINVAL);
	ck_assert_int_eq(marcel_attr_setseed(NULL, 1), EINVAL);
	marcel_attr_t junk;
	memset(&junk, 0, sizeof(junk));
	ck_assert_int_eq(marcel_attr_setseed(&junk, 1), EINVAL);

	ma_test_init();
	/* Joinable seeds return their result (tests/check_seeds has the rest)... */
	marcel_t t;
	any_t r;
	ck_assert_int_eq(marcel_create(&t, &a, twice, I2P(21)), 0);
	ck_assert_int_eq(marcel_join(t, &r), 0);
	ck_assert_int_eq(P2I(r), 42);
	/* ... and the usual Marcel way, fire and forget. */
	atomic_store(&seeds_ran, 0);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(marcel_create(NULL, &a, seed_body, I2P(1)), 0);
	ck_assert_int_eq(marcel_attr_setseed(&a, 0), 0);
	ck_assert_int_eq(marcel_attr_getseed(&a, &seed), 0);
	ck_assert_int_eq(seed, 0);
	marcel_end();
	ck_assert_int_eq(atomic_load(&seeds_ran), 100);
}
END_TEST

struct pol {
	int vp;
	int creator_vp;
};

static any_t where_am_i(any_t arg)
{
	struct pol *p = arg;
	p->vp = marcel_current_vp();
	return NULL;
}

START_TEST(test_schedpolicy)
{
	const int policies[] = { MARCEL_SCHED_SHARED, MARCEL_SCHED_OTHER, MARCEL_SCHED_AFFINITY,
				 MARCEL_SCHED_BALANCE };
	marcel_attr_t a;
	int pol = -1;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_getschedpolicy(&a, &pol), 0);
	ck_assert_int_eq(pol, MARCEL_SCHED_DEFAULT);
	ck_assert_int_eq(MARCEL_SCHED_DEFAULT, MARCEL_SCHED_SHARED);
	ck_assert_int_eq(marcel_attr_setschedpolicy(&a, 42), EINVAL);
	ck_assert_int_eq(marcel_attr_setschedpolicy(&a, -1), EINVAL);
	ck_assert_int_eq(marcel_attr_getschedpolicy(&a, &pol), 0);
	ck_assert_int_eq(pol, MARCEL_SCHED_DEFAULT);

	ma_test_init();
	int n = (int)marcel_nbvps();
	for (unsigned k = 0; k < sizeof(policies) / sizeof(policies[0]); k++) {
		ck_assert_int_eq(marcel_attr_setschedpolicy(&a, policies[k]), 0);
		ck_assert_int_eq(marcel_attr_getschedpolicy(&a, &pol), 0);
		ck_assert_int_eq(pol, policies[k]);
		struct pol p[8];
		marcel_t t[8];
		for (int i = 0; i < 8; i++) {
			p[i].vp = -1;
			p[i].creator_vp = marcel_current_vp();
			ck_assert_int_eq(marcel_create(&t[i], &a, where_am_i, &p[i]), 0);
		}
		for (int i = 0; i < 8; i++) {
			ck_assert_int_eq(marcel_join(t[i], NULL), 0);
			ck_assert_int_ge(p[i].vp, 0);
			ck_assert_int_lt(p[i].vp, n);
			if (policies[k] == MARCEL_SCHED_OTHER && n > 1)
				ck_assert_int_ne(p[i].vp, p[i].creator_vp);
		}
	}
	/* A vpset wins over the policy. */
	ck_assert_int_eq(marcel_attr_setschedpolicy(&a, MARCEL_SCHED_OTHER), 0);
	ck_assert_int_eq(marcel_attr_setvpset(&a, MARCEL_VPSET_VP((unsigned)n - 1)), 0);
	struct pol p = { -1, -1 };
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, &a, where_am_i, &p), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_int_eq(p.vp, n - 1);
	marcel_end();
}
END_TEST

/* ============================================================ ABI check */

START_TEST(test_abi)
{
	/* Before marcel_init too: programs call it first thing. */
	ck_assert_int_eq(marcel_ensure_abi_compatibility(MARCEL_HEADER_HASH), 0);
	ma_test_init();
	ck_assert_int_eq(marcel_ensure_abi_compatibility(MARCEL_HEADER_HASH), 0);
	unsigned long wrong = MARCEL_HEADER_HASH ^ 0x1000UL;
	struct capture c;
	capture_begin(&c, stderr);
	int r = marcel_ensure_abi_compatibility(wrong);
	char *err = capture_end(&c);
	ck_assert_int_eq(r, EINVAL);
	/* Both hashes are printed, in hexadecimal or decimal. */
	char hex_good[32], hex_bad[32], dec_good[32], dec_bad[32];
	snprintf(hex_good, sizeof(hex_good), "%lx", (unsigned long)MARCEL_HEADER_HASH);
	snprintf(hex_bad, sizeof(hex_bad), "%lx", wrong);
	snprintf(dec_good, sizeof(dec_good), "%lu", (unsigned long)MARCEL_HEADER_HASH);
	snprintf(dec_bad, sizeof(dec_bad), "%lu", wrong);
	ck_assert_msg((strcasestr(err, hex_good) && strcasestr(err, hex_bad)) ||
			      (strstr(err, dec_good) && strstr(err, dec_bad)),
		      "stderr does not show both hashes: '%s'", err);
	free(err);
	capture_begin(&c, stderr);
	r = marcel_ensure_abi_compatibility(0);
	free(capture_end(&c));
	ck_assert_int_eq(r, EINVAL);
	ck_assert(MARCEL_HEADER_HASH != 0);
	marcel_end();
}
END_TEST

/* ============================================================ disable / enable VPs */

#define VP_WORDS (MARCEL_NBMAXVPS / 64)

static _Atomic uint64_t vps_seen[VP_WORDS];
static atomic_int dis_stop;

static void note_vp(void)
{
	int vp = marcel_current_vp();
	if (vp >= 0)
		atomic_fetch_or(&vps_seen[vp / 64], (uint64_t)1 << (vp % 64));
}

static int seen(unsigned vp)
{
	return (atomic_load(&vps_seen[vp / 64]) >> (vp % 64)) & 1;
}

static void clear_seen(void)
{
	for (int i = 0; i < VP_WORDS; i++)
		atomic_store(&vps_seen[i], 0);
}

static any_t roam(any_t arg)
{
	int rounds = P2I(arg);
	for (int i = 0; i < rounds && !atomic_load(&dis_stop); i++) {
		note_vp();
		if (i % 8 == 7)
			marcel_usleep(200);
		else
			marcel_yield();
		note_vp();
	}
	return NULL;
}

static atomic_int all_started;

/* Finishes only if `n` of these run at the same time (each on its own worker). */
static any_t need_all(any_t arg)
{
	int n = P2I(arg);
	note_vp();
	atomic_fetch_add(&all_started, 1);
	uint64_t t0 = now_ns();
	while (atomic_load(&all_started) < n)
		if (ms_since(t0) > 20000)
			return I2P(1);
	return NULL;
}

START_TEST(test_disable_enable_vps)
{
	/* Cooperative: the n threads that finish together below need every VP only if a
	 * time slice cannot let two of them share one. */
	setenv("MARCEL_TIMESLICE", "0", 1);
	ma_test_init();
	unsetenv("MARCEL_TIMESLICE");
	unsigned n = marcel_nbvps();
	marcel_vpset_t all = MARCEL_VPSET_ZERO, empty = MARCEL_VPSET_ZERO, beyond = MARCEL_VPSET_VP(n);
	for (unsigned v = 0; v < n; v++)
		marcel_vpset_set(&all, v);
	/* Errors: NULL, nothing existing, every VP (directly or with MARCEL_VPSET_FULL). */
	ck_assert_int_eq(marcel_disable_vps(NULL), EINVAL);
	ck_assert_int_eq(marcel_enable_vps(NULL), EINVAL);
	if (n < MARCEL_NBMAXVPS)
		ck_assert_int_eq(marcel_disable_vps(&beyond), EINVAL);
	ck_assert_int_eq(marcel_disable_vps(&all), EINVAL);
	marcel_vpset_t full = MARCEL_VPSET_FULL;
	ck_assert_int_eq(marcel_disable_vps(&full), EINVAL);
	ck_assert_int_eq(marcel_disable_vps(&empty), EINVAL);
	if (n < 2) {
		marcel_end();
		return;
	}

	/* Disable every VP but the last one or two, including main's own VP 0. */
	marcel_vpset_t off = MARCEL_VPSET_ZERO;
	unsigned keep = n >= 4 ? 2 : 1;
	for (unsigned v = 0; v < n - keep; v++)
		marcel_vpset_set(&off, v);
	ck_assert_int_eq(marcel_disable_vps(&off), 0);
	/* main leaves its disabled VP at its next scheduling point. */
	marcel_yield();
	marcel_usleep(1000);
	clear_seen();
	atomic_store(&dis_stop, 0);
	enum { T = 24 };
	marcel_t t[T];
	for (int i = 0; i < T; i++)
		ck_assert_int_eq(marcel_create(&t[i], NULL, roam, I2P(100)), 0);
	for (int k = 0; k < 20; k++) {
		note_vp();
		marcel_usleep(500);
	}
	for (int i = 0; i < T; i++)
		ck_assert_int_eq(marcel_join(t[i], NULL), 0);
	note_vp();
	for (unsigned v = 0; v < n - keep; v++)
		ck_assert_msg(!seen(v), "a thread ran on disabled VP %u", v);
	int any = 0;
	for (unsigned v = n - keep; v < n; v++)
		any |= seen(v);
	ck_assert(any);
	/* Disabling the remaining ones too would leave none. */
	marcel_vpset_t rest = MARCEL_VPSET_ZERO;
	for (unsigned v = n - keep; v < n; v++)
		marcel_vpset_set(&rest, v);
	ck_assert_int_eq(marcel_disable_vps(&rest), EINVAL);

	/* Enabled again: used again. n threads that only finish together need every VP. */
	ck_assert_int_eq(marcel_enable_vps(&off), 0);
	clear_seen();
	atomic_store(&all_started, 0);
	int m = (int)n;
	marcel_t *u = calloc(n, sizeof(*u));
	for (int i = 0; i < m; i++)
		ck_assert_int_eq(marcel_create(&u[i], NULL, need_all, I2P(m)), 0);
	for (int i = 0; i < m; i++) {
		any_t r;
		ck_assert_int_eq(marcel_join(u[i], &r), 0);
		ck_assert_msg(P2I(r) == 0, "only %d of %d threads ran at once after enable",
			      atomic_load(&all_started), m);
	}
	free(u);
	for (unsigned v = 0; v < n; v++)
		ck_assert_msg(seen(v), "VP %u not used after marcel_enable_vps", v);
	/* Enabling what is enabled, or with the full set, is fine. */
	ck_assert_int_eq(marcel_enable_vps(&off), 0);
	ck_assert_int_eq(marcel_enable_vps(&full), 0);
	marcel_end();
}
END_TEST

/* A thread bound to one VP that is then disabled goes on on another VP. On the synthetic
 * machine (one VP per core) the queues above a VP's own, up to its NUMA node's, are seen
 * by that VP alone: the work of a disabled VP must go past them. */
START_TEST(test_disable_bound_vp)
{
	ma_test_init();
	unsigned n = marcel_nbvps();
	if (n < 2) {
		marcel_end();
		return;
	}
	marcel_vpset_t last = MARCEL_VPSET_VP(n - 1);
	ck_assert_int_eq(marcel_apply_vpset(&last), 0);
	ck_assert_int_eq(marcel_current_vp(), (int)n - 1);
	ck_assert_int_eq(marcel_disable_vps(&last), 0);
	ck_assert_int_ne(marcel_current_vp(), (int)n - 1);
	/* Its yields and sleeps keep it off the disabled VP. */
	for (int i = 0; i < 20; i++) {
		if (i % 4 == 3)
			marcel_usleep(100);
		else
			marcel_yield();
		ck_assert_int_ne(marcel_current_vp(), (int)n - 1);
	}
	ck_assert_int_eq(marcel_enable_vps(&last), 0);
	marcel_end();
}
END_TEST

/* ============================================================ registration */

static void tc_basics(TCase *tc)
{
	tcase_add_test(tc, test_types_and_features);
	tcase_add_test(tc, test_maxnamesize);
	tcase_add_test(tc, test_printf_family);
	tcase_add_test(tc, test_delay_sleep);
	tcase_add_test(tc, test_random);
	tcase_add_test(tc, test_abi);
}

static void tc_vps(TCase *tc)
{
	tcase_add_test(tc, test_vpset_ops);
	tcase_add_test(tc, test_apply_vpset);
	tcase_add_test(tc, test_disable_enable_vps);
	tcase_add_test(tc, test_disable_bound_vp);
	tcase_add_test(tc, test_schedpolicy);
}

static void tc_sync(TCase *tc)
{
	tcase_add_test(tc, test_barrier_modes);
	tcase_add_test(tc, test_cond_mutex_attr);
	tcase_add_test(tc, test_recursivemutex);
	tcase_add_test(tc, test_sem_timed_P);
	tcase_add_test(tc, test_futex);
}

static void tc_control(TCase *tc)
{
	tcase_add_test(tc, test_sched_param);
	tcase_add_test(tc, test_suspend_resume);
	tcase_add_test(tc, test_seed_attr);
}

int main(void)
{
	Suite *s = suite_create("compat");
	ma_test_add_both(s, "basics", tc_basics, 60);
	ma_test_add_both(s, "vps", tc_vps, 60);
	ma_test_add_both(s, "sync", tc_sync, 60);
	ma_test_add_both(s, "control", tc_control, 60);
	return ma_test_run(s);
}
