/*
 * The typed spawn (marcel/ffi.h) against its documented contract: every signature letter
 * as argument and result, mixed and long argument lists, struct and variadic callees
 * through a libffi cif, arguments copied at creation, the result delivery rules
 * (status vs. ret buffer, exact-size stores), detached threads, attributes, marcel_exit()
 * inside the callee, errors that create nothing, many calls on every VP, and the case
 * this exists for: BLAS-like kernels whose arguments are not packed in a struct.
 * Every tcase runs on this machine and on the synthetic 32-PU topology (ma_test.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>
#include <marcel/ffi.h>
#include "ma_test.h"

#define I2P(i) ((any_t)(intptr_t)(i))
#define P2I(p) ((intptr_t)(p))

static int valgrind(void)
{
	return getenv("MA_TEST_VALGRIND") != NULL;
}

/* Creates a call from a signature (through the va_list entry point), joins it and
 * returns its status. */
static any_t call_join(const char *sig, void (*fn)(void), void *ret, ...)
{
	va_list ap;
	marcel_t t = NULL;
	va_start(ap, ret);
	int rc = marcel_create_call_vsig(&t, NULL, sig, fn, ret, ap);
	va_end(ap);
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(t);
	any_t status = (any_t)0xdeadbeef;
	ck_assert_int_eq(marcel_join(t, &status), 0);
	return status;
}

/* Checks that the bytes of buf from `from` on still hold the 0xee poison. */
static void assert_untouched(const unsigned char *buf, size_t from, size_t size)
{
	for (size_t i = from; i < size; i++)
		ck_assert_msg(buf[i] == 0xee, "byte %zu of the result buffer was written", i);
}

/* ------------------------------------------------------------------ every letter */

static signed char id_c(signed char x) { return x; }
static unsigned char id_C(unsigned char x) { return x; }
static short id_s(short x) { return x; }
static unsigned short id_S(unsigned short x) { return x; }
static int id_i(int x) { return x; }
static unsigned id_I(unsigned x) { return x; }
static long id_l(long x) { return x; }
static unsigned long id_L(unsigned long x) { return x; }
static long long id_q(long long x) { return x; }
static unsigned long long id_Q(unsigned long long x) { return x; }
static size_t id_z(size_t x) { return x; }
static ptrdiff_t id_Z(ptrdiff_t x) { return x; }
static float id_f(float x) { return x; }
static double id_d(double x) { return x; }
static long double id_D(long double x) { return x; }
static void *id_p(void *x) { return x; }

START_TEST(test_sig_integers)
{
	ma_test_init();
	unsigned char buf[32];

	/* Signed results are sign-extended into the status, unsigned ones zero-extended;
	 * ret receives exactly the type's bytes. */
	memset(buf, 0xee, sizeof buf);
	ck_assert_int_eq(P2I(call_join("c:c", FFI_FN(id_c), buf, -5)), -5);
	ck_assert_int_eq((signed char)buf[0], -5);
	assert_untouched(buf, 1, sizeof buf);

	memset(buf, 0xee, sizeof buf);
	ck_assert_uint_eq((uintptr_t)call_join("C:C", FFI_FN(id_C), buf, 250), 250);
	ck_assert_uint_eq(buf[0], 250);
	assert_untouched(buf, 1, sizeof buf);

	memset(buf, 0xee, sizeof buf);
	ck_assert_int_eq(P2I(call_join("s:s", FFI_FN(id_s), buf, -300)), -300);
	short s;
	memcpy(&s, buf, sizeof s);
	ck_assert_int_eq(s, -300);
	assert_untouched(buf, sizeof(short), sizeof buf);

	memset(buf, 0xee, sizeof buf);
	ck_assert_uint_eq((uintptr_t)call_join("S:S", FFI_FN(id_S), buf, 65000), 65000);
	unsigned short us;
	memcpy(&us, buf, sizeof us);
	ck_assert_uint_eq(us, 65000);
	assert_untouched(buf, sizeof(short), sizeof buf);

	memset(buf, 0xee, sizeof buf);
	ck_assert_int_eq(P2I(call_join("i:i", FFI_FN(id_i), buf, INT_MIN)), INT_MIN);
	int i;
	memcpy(&i, buf, sizeof i);
	ck_assert_int_eq(i, INT_MIN);
	assert_untouched(buf, sizeof(int), sizeof buf);

	memset(buf, 0xee, sizeof buf);
	ck_assert_uint_eq((uintptr_t)call_join("I:I", FFI_FN(id_I), buf, 4000000000u), 4000000000u);
	unsigned u;
	memcpy(&u, buf, sizeof u);
	ck_assert_uint_eq(u, 4000000000u);
	assert_untouched(buf, sizeof(unsigned), sizeof buf);

	/* Without a buffer: the status alone. */
	ck_assert_int_eq(P2I(call_join("l:l", FFI_FN(id_l), NULL, LONG_MIN)), LONG_MIN);
	ck_assert_uint_eq((uintptr_t)call_join("L:L", FFI_FN(id_L), NULL, ULONG_MAX), (uintptr_t)ULONG_MAX);
	ck_assert_int_eq(P2I(call_join("z:z", FFI_FN(id_z), NULL, SIZE_MAX)), (intptr_t)SIZE_MAX);
	ck_assert_int_eq(P2I(call_join("Z:Z", FFI_FN(id_Z), NULL, PTRDIFF_MIN)), PTRDIFF_MIN);
	int target;
	ck_assert_ptr_eq(call_join("p:p", FFI_FN(id_p), NULL, (void *)&target), &target);
	ck_assert_ptr_null(call_join("p:p", FFI_FN(id_p), NULL, NULL));

	/* long long: the status when it fits in a pointer, always the buffer. */
	long long q = 0;
	any_t st = call_join("q:q", FFI_FN(id_q), &q, LLONG_MIN + 1);
	ck_assert(q == LLONG_MIN + 1);
	if (sizeof(long long) <= sizeof(any_t))
		ck_assert(P2I(st) == LLONG_MIN + 1);
	else
		ck_assert_ptr_eq(st, &q);
	unsigned long long uq = 0;
	st = call_join("Q:Q", FFI_FN(id_Q), &uq, ULLONG_MAX);
	ck_assert(uq == ULLONG_MAX);
	if (sizeof(long long) <= sizeof(any_t))
		ck_assert((uintptr_t)st == (uintptr_t)ULLONG_MAX);
	marcel_end();
}
END_TEST

START_TEST(test_sig_floats)
{
	ma_test_init();
	unsigned char buf[64];

	/* Floating results go to ret; the status is ret. f arguments are given as double. */
	memset(buf, 0xee, sizeof buf);
	ck_assert_ptr_eq(call_join("f:f", FFI_FN(id_f), buf, 0.1), buf);
	float f;
	memcpy(&f, buf, sizeof f);
	ck_assert(f == 0.1f);
	assert_untouched(buf, sizeof(float), sizeof buf);

	memset(buf, 0xee, sizeof buf);
	ck_assert_ptr_eq(call_join("d:d", FFI_FN(id_d), buf, 0.1), buf);
	double d;
	memcpy(&d, buf, sizeof d);
	ck_assert(d == 0.1);
	assert_untouched(buf, sizeof(double), sizeof buf);

	long double third = 1.0L / 3;
	memset(buf, 0xee, sizeof buf);
	ck_assert_ptr_eq(call_join("D:D", FFI_FN(id_D), buf, third), buf);
	long double ld;
	memcpy(&ld, buf, sizeof ld);
	ck_assert(ld == third);
	assert_untouched(buf, sizeof(long double), sizeof buf);

	/* No buffer: the value is dropped and the status is NULL. */
	ck_assert_ptr_null(call_join("d:d", FFI_FN(id_d), NULL, 2.5));
	ck_assert_ptr_null(call_join("D:D", FFI_FN(id_D), NULL, third));
	marcel_end();
}
END_TEST

/* Records every argument it receives, returns a checksum. */
static struct {
	signed char c; unsigned char C; short s; unsigned short S; int i; unsigned I;
	long l; unsigned long L; long long q; unsigned long long Q; size_t z; ptrdiff_t Z;
	float f; double d; long double D; void *p;
} seen;

static double mixed(signed char c, unsigned char C, short s, unsigned short S, int i,
		    unsigned I, long l, unsigned long L, long long q, unsigned long long Q,
		    size_t z, ptrdiff_t Z, float f, double d, long double D, void *p)
{
	seen.c = c; seen.C = C; seen.s = s; seen.S = S; seen.i = i; seen.I = I;
	seen.l = l; seen.L = L; seen.q = q; seen.Q = Q; seen.z = z; seen.Z = Z;
	seen.f = f; seen.d = d; seen.D = D; seen.p = p;
	return (double)c + C + s + S + i + f + d;
}

START_TEST(test_sig_mixed)
{
	ma_test_init();
	memset(&seen, 0, sizeof seen);
	double r = 0;
	int obj;
	any_t st = call_join("d:cCsSiIlLqQzZfdDp", FFI_FN(mixed), &r,
			     -7, 200, -1234, 54321, -100000, 3000000000u, -5L, 7UL,
			     -9LL, 11ULL, (size_t)13, (ptrdiff_t)-15, 0.25, 0.5, 0.75L, (void *)&obj);
	ck_assert_ptr_eq(st, &r);
	ck_assert(r == -7.0 + 200 - 1234 + 54321 - 100000 + 0.25 + 0.5);
	ck_assert_int_eq(seen.c, -7);
	ck_assert_uint_eq(seen.C, 200);
	ck_assert_int_eq(seen.s, -1234);
	ck_assert_uint_eq(seen.S, 54321);
	ck_assert_int_eq(seen.i, -100000);
	ck_assert_uint_eq(seen.I, 3000000000u);
	ck_assert_int_eq(seen.l, -5);
	ck_assert_uint_eq(seen.L, 7);
	ck_assert(seen.q == -9);
	ck_assert(seen.Q == 11);
	ck_assert_uint_eq(seen.z, 13);
	ck_assert_int_eq(seen.Z, -15);
	ck_assert(seen.f == 0.25f);
	ck_assert(seen.d == 0.5);
	ck_assert(seen.D == 0.75L);
	ck_assert_ptr_eq(seen.p, &obj);
	marcel_end();
}
END_TEST

static atomic_int no_arg_calls;

static int no_args(void)
{
	atomic_fetch_add(&no_arg_calls, 1);
	return 42;
}

static void no_args_void(void)
{
	atomic_fetch_add(&no_arg_calls, 1);
}

START_TEST(test_zero_args)
{
	ma_test_init();
	atomic_store(&no_arg_calls, 0);
	ck_assert_int_eq(P2I(call_join("i:", FFI_FN(no_args), NULL)), 42);

	/* void: status NULL, ret left alone. */
	unsigned char buf[16];
	memset(buf, 0xee, sizeof buf);
	ck_assert_ptr_null(call_join("v:", FFI_FN(no_args_void), buf));
	assert_untouched(buf, 0, sizeof buf);

	/* Through a cif, with args NULL. */
	ffi_cif cif;
	ck_assert_int_eq(ffi_prep_cif(&cif, FFI_DEFAULT_ABI, 0, &ffi_type_sint, NULL), FFI_OK);
	marcel_t t;
	any_t st;
	ck_assert_int_eq(marcel_create_call(&t, NULL, &cif, FFI_FN(no_args), NULL, NULL), 0);
	ck_assert_int_eq(marcel_join(t, &st), 0);
	ck_assert_int_eq(P2I(st), 42);
	ck_assert_int_eq(atomic_load(&no_arg_calls), 3);
	marcel_end();
}
END_TEST

/* 32 arguments, ints and doubles alternating: far more than fit in registers. */
static double many32(int a0, double a1, int a2, double a3, int a4, double a5, int a6, double a7,
		     int a8, double a9, int a10, double a11, int a12, double a13, int a14, double a15,
		     int a16, double a17, int a18, double a19, int a20, double a21, int a22, double a23,
		     int a24, double a25, int a26, double a27, int a28, double a29, int a30, double a31)
{
	/* Weighted by position, so that a shifted or swapped argument shows. */
	double v[32] = { a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15,
			 a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29,
			 a30, a31 };
	double s = 0;
	for (int k = 0; k < 32; k++)
		s += (k + 1) * v[k];
	return s;
}

static double many32_expected(void)
{
	double s = 0;
	for (int k = 0; k < 32; k++)
		s += (k + 1) * (k % 2 ? k + 0.5 : (double)k);
	return s;
}

START_TEST(test_many_args)
{
	ma_test_init();
	double r = 0;
	call_join("d:idididididididididididididididid", FFI_FN(many32), &r,
		  0, 1.5, 2, 3.5, 4, 5.5, 6, 7.5, 8, 9.5, 10, 11.5, 12, 13.5, 14, 15.5,
		  16, 17.5, 18, 19.5, 20, 21.5, 22, 23.5, 24, 25.5, 26, 27.5, 28, 29.5, 30, 31.5);
	ck_assert(r == many32_expected());

	/* The same through a cif. */
	ffi_type *types[MARCEL_CALL_MAXARGS];
	int ints[16];
	double dbls[16];
	void *args[MARCEL_CALL_MAXARGS];
	for (int k = 0; k < 32; k++) {
		if (k % 2) {
			types[k] = &ffi_type_double;
			dbls[k / 2] = k + 0.5;
			args[k] = &dbls[k / 2];
		} else {
			types[k] = &ffi_type_sint;
			ints[k / 2] = k;
			args[k] = &ints[k / 2];
		}
	}
	ffi_cif cif;
	ck_assert_int_eq(ffi_prep_cif(&cif, FFI_DEFAULT_ABI, 32, &ffi_type_double, types), FFI_OK);
	marcel_t t;
	any_t st;
	r = 0;
	ck_assert_int_eq(marcel_create_call(&t, NULL, &cif, FFI_FN(many32), args, &r), 0);
	ck_assert_int_eq(marcel_join(t, &st), 0);
	ck_assert_ptr_eq(st, &r);
	ck_assert(r == many32_expected());
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ through a cif */

struct pt {
	double x;
	int n;
	char tag;
};

struct res {
	double sum;
	long cnt;
};

static struct res combine(struct pt a, struct pt b, int k)
{
	struct res r = { (a.x + b.x) * k, (long)a.n + b.n + a.tag + b.tag };
	return r;
}

struct big {
	double v[8];
};

/* Returned through memory by every ABI. */
static struct big scale(struct big b, double f)
{
	for (int k = 0; k < 8; k++)
		b.v[k] *= f;
	return b;
}

struct pair {
	int a;
	int b;
};

struct outer {
	struct pair p;
	float f;
};

static struct pair swap_nested(struct outer o)
{
	struct pair r = { o.p.b, o.p.a + (int)o.f };
	return r;
}

/* A heap-allocated struct description, freed (and poisoned) by type_free. */
static ffi_type *type_new(int nelem, ...)
{
	ffi_type *t = calloc(1, sizeof *t);
	ffi_type **el = calloc((size_t)nelem + 1, sizeof *el);
	ck_assert(t && el);
	va_list ap;
	va_start(ap, nelem);
	for (int k = 0; k < nelem; k++)
		el[k] = va_arg(ap, ffi_type *);
	va_end(ap);
	t->type = FFI_TYPE_STRUCT;
	t->elements = el;
	return t;
}

static void type_free(ffi_type *t)
{
	size_t n = 0;
	while (t->elements[n])
		n++;
	memset(t->elements, 0xa5, (n + 1) * sizeof *t->elements);
	free(t->elements);
	memset(t, 0xa5, sizeof *t);
	free(t);
}

START_TEST(test_cif_structs)
{
	ma_test_init();
	marcel_t t;
	any_t st;

	/* Structs by value in and out; the descriptions are freed right after creation. */
	ffi_type *pt_type = type_new(3, &ffi_type_double, &ffi_type_sint, &ffi_type_schar);
	ffi_type *res_type = type_new(2, &ffi_type_double, &ffi_type_slong);
	ffi_type *types[3] = { pt_type, pt_type, &ffi_type_sint };
	ffi_cif *cif = malloc(sizeof *cif);
	ck_assert_int_eq(ffi_prep_cif(cif, FFI_DEFAULT_ABI, 3, res_type, types), FFI_OK);
	ck_assert_uint_eq(pt_type->size, sizeof(struct pt));
	struct pt a = { 1.25, 10, 'a' }, b = { 2.5, 20, 'b' };
	int k = 4;
	void *args[3] = { &a, &b, &k };
	unsigned char buf[sizeof(struct res) + 16];
	memset(buf, 0xee, sizeof buf);
	ck_assert_int_eq(marcel_create_call(&t, NULL, cif, FFI_FN(combine), args, buf), 0);
	memset(cif, 0xa5, sizeof *cif);
	free(cif);
	type_free(pt_type);
	type_free(res_type);
	ck_assert_int_eq(marcel_join(t, &st), 0);
	ck_assert_ptr_eq(st, buf);
	struct res r;
	memcpy(&r, buf, sizeof r);
	ck_assert(r.sum == 15.0);
	ck_assert_int_eq(r.cnt, 30 + 'a' + 'b');
	assert_untouched(buf, sizeof(struct res), sizeof buf);

	/* A struct returned through memory. */
	ffi_type *big_type = type_new(8, &ffi_type_double, &ffi_type_double, &ffi_type_double,
				      &ffi_type_double, &ffi_type_double, &ffi_type_double,
				      &ffi_type_double, &ffi_type_double);
	ffi_type *btypes[2] = { big_type, &ffi_type_double };
	ffi_cif bcif;
	ck_assert_int_eq(ffi_prep_cif(&bcif, FFI_DEFAULT_ABI, 2, big_type, btypes), FFI_OK);
	struct big in, out;
	for (int i = 0; i < 8; i++)
		in.v[i] = i;
	double f = 3.0;
	void *bargs[2] = { &in, &f };
	ck_assert_int_eq(marcel_create_call(&t, NULL, &bcif, FFI_FN(scale), bargs, &out), 0);
	type_free(big_type);
	ck_assert_int_eq(marcel_join(t, &st), 0);
	ck_assert_ptr_eq(st, &out);
	for (int i = 0; i < 8; i++)
		ck_assert(out.v[i] == 3.0 * i);

	/* A nested struct argument, and a small struct result (the status is ret). */
	ffi_type *pair_type = type_new(2, &ffi_type_sint, &ffi_type_sint);
	ffi_type *outer_type = type_new(2, pair_type, &ffi_type_float);
	ffi_type *otypes[1] = { outer_type };
	ffi_cif ocif;
	ck_assert_int_eq(ffi_prep_cif(&ocif, FFI_DEFAULT_ABI, 1, pair_type, otypes), FFI_OK);
	struct outer o = { { 3, 4 }, 5.0f };
	void *oargs[1] = { &o };
	struct pair pr = { 0, 0 };
	ck_assert_int_eq(marcel_create_call(&t, NULL, &ocif, FFI_FN(swap_nested), oargs, &pr), 0);
	type_free(outer_type);
	type_free(pair_type);
	ck_assert_int_eq(marcel_join(t, &st), 0);
	ck_assert_ptr_eq(st, &pr);
	ck_assert_int_eq(pr.a, 4);
	ck_assert_int_eq(pr.b, 8);
	marcel_end();
}
END_TEST

/* 16 KiB by value: the copy lives on the new thread's (default, 128 KiB) stack. */
struct huge {
	double v[2048];
};

static double huge_sum(struct huge h, int stride)
{
	double s = 0;
	for (int k = 0; k < 2048; k += stride)
		s += h.v[k];
	return s;
}

START_TEST(test_cif_huge_struct)
{
	ma_test_init();
	ffi_type **el = malloc(2049 * sizeof *el);
	for (int k = 0; k < 2048; k++)
		el[k] = &ffi_type_double;
	el[2048] = NULL;
	ffi_type huge_type = { 0, 0, FFI_TYPE_STRUCT, el };
	ffi_type *types[2] = { &huge_type, &ffi_type_sint };
	ffi_cif cif;
	ck_assert_int_eq(ffi_prep_cif(&cif, FFI_DEFAULT_ABI, 2, &ffi_type_double, types), FFI_OK);
	struct huge *h = malloc(sizeof *h);
	for (int k = 0; k < 2048; k++)
		h->v[k] = k;
	int stride = 1;
	void *args[2] = { h, &stride };
	double r = 0;
	marcel_t t;
	ck_assert_int_eq(marcel_create_call(&t, NULL, &cif, FFI_FN(huge_sum), args, &r), 0);
	memset(h, 0, sizeof *h);
	free(h);
	free(el);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert(r == 2047.0 * 2048 / 2);
	marcel_end();
}
END_TEST

/* Variadic callees need ffi_prep_cif_var; the copy keeps what it prepared. */
static double vdsum(int n, ...)
{
	va_list ap;
	double s = 0;
	va_start(ap, n);
	for (int k = 0; k < n; k++)
		s += va_arg(ap, double);
	va_end(ap);
	return s;
}

static long vlsum(int n, ...)
{
	va_list ap;
	long s = 0;
	va_start(ap, n);
	for (int k = 0; k < n; k++)
		s += va_arg(ap, long);
	va_end(ap);
	return s;
}

START_TEST(test_cif_variadic)
{
	ma_test_init();
	ffi_type *types[10] = { &ffi_type_sint };
	void *args[10];
	int n = 9;
	double d[9];
	long l[9];
	args[0] = &n;
	for (int k = 0; k < 9; k++) {
		types[k + 1] = &ffi_type_double;
		d[k] = k + 0.5;
		args[k + 1] = &d[k];
	}
	ffi_cif cif;
	ck_assert_int_eq(ffi_prep_cif_var(&cif, FFI_DEFAULT_ABI, 1, 10, &ffi_type_double, types), FFI_OK);
	double r = 0;
	marcel_t t;
	ck_assert_int_eq(marcel_create_call(&t, NULL, &cif, FFI_FN(vdsum), args, &r), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_msg(r == 40.5, "got %g", r);

	for (int k = 0; k < 9; k++) {
		types[k + 1] = &ffi_type_slong;
		l[k] = -(long)k;
		args[k + 1] = &l[k];
	}
	ck_assert_int_eq(ffi_prep_cif_var(&cif, FFI_DEFAULT_ABI, 1, 10, &ffi_type_slong, types), FFI_OK);
	any_t st;
	ck_assert_int_eq(marcel_create_call(&t, NULL, &cif, FFI_FN(vlsum), args, NULL), 0);
	ck_assert_int_eq(marcel_join(t, &st), 0);
	ck_assert_int_eq(P2I(st), -36);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ copied at creation */

static struct {
	int n;
	double a;
	struct pt p;
	int ran;
} copied_seen;

static double record_copied(int n, double a, struct pt p)
{
	copied_seen.n = n;
	copied_seen.a = a;
	copied_seen.p = p;
	copied_seen.ran = 1;
	return a * n;
}

START_TEST(test_args_copied)
{
	ma_test_init();
	memset(&copied_seen, 0, sizeof copied_seen);
	/* Bound to the creator's VP, the thread cannot start before the creator blocks:
	 * everything below is destroyed before the callee runs. */
	marcel_attr_t a = ma_test_attr_on_vp(ma_test_here());
	ffi_type *pt_type = type_new(3, &ffi_type_double, &ffi_type_sint, &ffi_type_schar);
	ffi_type **types = malloc(3 * sizeof *types);
	types[0] = &ffi_type_sint;
	types[1] = &ffi_type_double;
	types[2] = pt_type;
	ffi_cif *cif = malloc(sizeof *cif);
	ck_assert_int_eq(ffi_prep_cif(cif, FFI_DEFAULT_ABI, 3, &ffi_type_double, types), FFI_OK);
	int *n = malloc(sizeof *n);
	double *x = malloc(sizeof *x);
	struct pt *p = malloc(sizeof *p);
	void **args = malloc(3 * sizeof *args);
	*n = 6;
	*x = 0.5;
	p->x = 9.75;
	p->n = -3;
	p->tag = 'z';
	args[0] = n;
	args[1] = x;
	args[2] = p;
	double r = 0;
	marcel_t t;
	ck_assert_int_eq(marcel_create_call(&t, &a, cif, FFI_FN(record_copied), args, &r), 0);
	ck_assert_int_eq(copied_seen.ran, 0);
	*n = 1000;
	*x = -1;
	memset(p, 0xa5, sizeof *p);
	memset(args, 0xa5, 3 * sizeof *args);
	memset(types, 0xa5, 3 * sizeof *types);
	memset(cif, 0xa5, sizeof *cif);
	free(n);
	free(x);
	free(p);
	free(args);
	free(types);
	free(cif);
	type_free(pt_type);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_int_eq(copied_seen.ran, 1);
	ck_assert_int_eq(copied_seen.n, 6);
	ck_assert(copied_seen.a == 0.5);
	ck_assert(copied_seen.p.x == 9.75);
	ck_assert_int_eq(copied_seen.p.n, -3);
	ck_assert_int_eq(copied_seen.p.tag, 'z');
	ck_assert(r == 3.0);

	/* The usual loop: one variable, reused for every creation. */
	marcel_t ts[50];
	for (int i = 0; i < 50; i++) {
		void *one[1] = { &i };
		ffi_cif c1;
		ffi_type *t1[1] = { &ffi_type_sint };
		ck_assert_int_eq(ffi_prep_cif(&c1, FFI_DEFAULT_ABI, 1, &ffi_type_sint, t1), FFI_OK);
		ck_assert_int_eq(marcel_create_call(&ts[i], &a, &c1, FFI_FN(id_i), one, NULL), 0);
	}
	for (int i = 0; i < 50; i++) {
		any_t st;
		ck_assert_int_eq(marcel_join(ts[i], &st), 0);
		ck_assert_int_eq(P2I(st), i);
	}

	/* The signature string too. */
	char sig[] = "i:i";
	ck_assert_int_eq(marcel_create_call_sig(&t, &a, sig, FFI_FN(id_i), NULL, 77), 0);
	strcpy(sig, "x");
	any_t st;
	ck_assert_int_eq(marcel_join(t, &st), 0);
	ck_assert_int_eq(P2I(st), 77);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ threads */

static atomic_long detached_sum;

static void add_detached(long v, double w, double *out)
{
	for (int k = 0; k < 20; k++)
		marcel_yield();
	atomic_fetch_add(&detached_sum, v);
	*out = w * 2;
}

static float half(float x)
{
	for (int k = 0; k < 20; k++)
		marcel_yield();
	return x / 2;
}

START_TEST(test_detached)
{
	ma_test_init();
	atomic_store(&detached_sum, 0);
	double outs[40];
	float rets[40];
	marcel_attr_t det;
	ck_assert_int_eq(marcel_attr_init(&det), 0);
	ck_assert_int_eq(marcel_attr_setdetachstate(&det, MARCEL_CREATE_DETACHED), 0);
	for (int i = 0; i < 20; i++) {
		/* pid NULL: no handle. */
		ck_assert_int_eq(marcel_create_call_sig(NULL, NULL, "v:ldp", FFI_FN(add_detached), NULL,
							(long)i, (double)i, &outs[i]), 0);
		/* A detached attribute; the float result still lands in ret. */
		marcel_t t;
		ck_assert_int_eq(marcel_create_call_sig(&t, &det, "f:f", FFI_FN(half), &rets[i],
							(double)i), 0);
		/* The same through a cif. */
		ffi_cif cif;
		ffi_type *types[3] = { &ffi_type_slong, &ffi_type_double, &ffi_type_pointer };
		ck_assert_int_eq(ffi_prep_cif(&cif, FFI_DEFAULT_ABI, 3, &ffi_type_void, types), FFI_OK);
		long v = 1000;
		double w = i + 100;
		double *o = &outs[20 + i];
		void *args[3] = { &v, &w, &o };
		ck_assert_int_eq(marcel_create_call(NULL, NULL, &cif, FFI_FN(add_detached), args, NULL), 0);
		ck_assert_int_eq(marcel_create_call_sig(NULL, &det, "f:f", FFI_FN(half), &rets[20 + i],
							(double)(i + 20)), 0);
	}
	/* marcel_end waits for them all. */
	marcel_end();
	ck_assert_int_eq(atomic_load(&detached_sum), 190 + 20 * 1000);
	for (int i = 0; i < 20; i++) {
		ck_assert(outs[i] == 2.0 * i);
		ck_assert(outs[20 + i] == 2.0 * (i + 100));
	}
	for (int i = 0; i < 40; i++)
		ck_assert(rets[i] == i / 2.0f);
}
END_TEST

static char attr_names[MARCEL_NBMAXVPS][16];

/* Returns the VP it runs on after checking its name. */
static int where_am_i(const char *expect_name)
{
	char name[MARCEL_MAXNAMESIZE];
	if (marcel_getname(marcel_self(), name, sizeof name) || strcmp(name, expect_name))
		return -100;
	return marcel_current_vp();
}

START_TEST(test_attrs)
{
	ma_test_init();
	unsigned nb = marcel_nbvps();
	marcel_t *ts = calloc(nb, sizeof *ts);
	for (unsigned v = 0; v < nb; v++) {
		marcel_attr_t a = ma_test_attr_on_vp(v);
		char name[16];
		snprintf(name, sizeof name, "kern%u", v);
		ck_assert_int_eq(marcel_attr_setname(&a, name), 0);
		/* The pointer is copied, not the string it points to: keep the string alive. */
		strcpy(attr_names[v], name);
		ck_assert_int_eq(marcel_create_call_sig(&ts[v], &a, "i:p", FFI_FN(where_am_i), NULL,
							(void *)attr_names[v]), 0);
	}
	for (unsigned v = 0; v < nb; v++) {
		any_t st;
		ck_assert_int_eq(marcel_join(ts[v], &st), 0);
		ck_assert_int_eq(P2I(st), (intptr_t)v);
	}
	free(ts);
	marcel_end();
}
END_TEST

static int quitter(int v)
{
	marcel_exit(I2P(v * 2));
}

START_TEST(test_exit_inside)
{
	ma_test_init();
	/* marcel_exit() inside the callee: its argument is the status, ret is not written,
	 * and nothing leaks (check-valgrind runs this suite). */
	int buf = 0x5a5a;
	marcel_t t;
	ck_assert_int_eq(marcel_create_call_sig(&t, NULL, "i:i", FFI_FN(quitter), &buf, 21), 0);
	any_t st;
	ck_assert_int_eq(marcel_join(t, &st), 0);
	ck_assert_int_eq(P2I(st), 42);
	ck_assert_int_eq(buf, 0x5a5a);
	ck_assert_int_eq(marcel_create_call_sig(NULL, NULL, "i:i", FFI_FN(quitter), NULL, 1), 0);
	marcel_end();
}
END_TEST

/* Each driver, on its own VP, fires calls at every VP and checks their results. */
static long mad(long a, long b, int c)
{
	marcel_yield();
	return a * b + c;
}

static double dmad(double a, float b, short c)
{
	return a * b + c;
}

static int driver(unsigned vp, int rounds)
{
	unsigned nb = marcel_nbvps();
	int bad = 0;
	if (marcel_current_vp() != (int)vp)
		bad++;
	for (int r = 0; r < rounds; r++) {
		enum { BATCH = 16 };
		marcel_t ts[BATCH], td[BATCH];
		double dr[BATCH];
		for (int k = 0; k < BATCH; k++) {
			marcel_attr_t a;
			marcel_attr_init(&a);
			marcel_attr_setvpset(&a, MARCEL_VPSET_VP((vp + (unsigned)k) % nb));
			if (marcel_create_call_sig(&ts[k], &a, "l:lli", FFI_FN(mad), NULL,
						   (long)vp, (long)r, k))
				return 1000;
			if (marcel_create_call_sig(&td[k], k % 2 ? &a : NULL, "d:dfs", FFI_FN(dmad),
						   &dr[k], 0.5, (double)r, k))
				return 1000;
		}
		for (int k = 0; k < BATCH; k++) {
			any_t st, sd;
			if (marcel_join(ts[k], &st) || P2I(st) != (long)vp * r + k)
				bad++;
			if (marcel_join(td[k], &sd) || sd != &dr[k] || dr[k] != 0.5 * r + k)
				bad++;
		}
	}
	return bad;
}

START_TEST(test_concurrent)
{
	ma_test_init();
	unsigned nb = marcel_nbvps();
	int rounds = valgrind() ? 2 : 20;
	marcel_t *ts = calloc(nb, sizeof *ts);
	for (unsigned v = 0; v < nb; v++) {
		marcel_attr_t a = ma_test_attr_on_vp(v);
		ck_assert_int_eq(marcel_create_call_sig(&ts[v], &a, "i:Ii", FFI_FN(driver), NULL,
							v, rounds), 0);
	}
	for (unsigned v = 0; v < nb; v++) {
		any_t st;
		ck_assert_int_eq(marcel_join(ts[v], &st), 0);
		ck_assert_msg(P2I(st) == 0, "driver on VP %u: %ld bad results", v, (long)P2I(st));
	}
	free(ts);
	marcel_end();
}
END_TEST

/* Calls that create calls: fib(n) spawns fib(n-1) and computes fib(n-2) itself. */
static long fib(int n)
{
	if (n < 2)
		return n;
	marcel_t t;
	if (marcel_create_call_sig(&t, NULL, "l:i", FFI_FN(fib), NULL, n - 1))
		return -1000000;
	long b = fib(n - 2);
	any_t a;
	if (marcel_join(t, &a))
		return -1000000;
	return (long)P2I(a) + b;
}

START_TEST(test_nested)
{
	ma_test_init();
	ck_assert_int_eq(P2I(call_join("l:i", FFI_FN(fib), NULL, 13)), 233);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ errors */

static atomic_int should_not_run;

static int never(int x)
{
	atomic_fetch_add(&should_not_run, 1);
	return x;
}

/* Expects marcel_create_call_sig to reject sig with EINVAL and one stderr line that
 * names it. */
static void expect_bad_sig(const char *sig)
{
	struct ma_test_capture c;
	char out[1024];
	marcel_t t = (marcel_t)0x1;
	ma_test_capture_begin(&c);
	int rc = marcel_create_call_sig(&t, NULL, sig, FFI_FN(never), NULL, 1, 2, 3);
	ma_test_capture_end(&c, out, sizeof out);
	ck_assert_msg(rc == EINVAL, "signature \"%s\": got %d instead of EINVAL", sig, rc);
	char quoted[128];
	snprintf(quoted, sizeof quoted, "\"%.20s", sig);
	ck_assert_msg(strstr(out, quoted) != NULL, "message does not name \"%s\": %s", sig, out);
	ck_assert_msg(strstr(out, "expected") && strstr(out, "v c C s S i I l L q Q z Z f d D p"),
		      "message does not list the letters: %s", out);
	const char *nl = strchr(out, '\n');
	ck_assert_msg(nl && nl[1] == 0, "not one line: %s", out);
}

START_TEST(test_errors)
{
	ma_test_init();
	atomic_store(&should_not_run, 0);
	marcel_t t = NULL;
	ffi_type *types[MARCEL_CALL_MAXARGS + 1];
	int vals[MARCEL_CALL_MAXARGS + 1];
	void *args[MARCEL_CALL_MAXARGS + 1];
	for (int k = 0; k <= MARCEL_CALL_MAXARGS; k++) {
		types[k] = &ffi_type_sint;
		vals[k] = k;
		args[k] = &vals[k];
	}
	ffi_cif cif;
	ck_assert_int_eq(ffi_prep_cif(&cif, FFI_DEFAULT_ABI, 1, &ffi_type_sint, types), FFI_OK);

	/* NULL cif, function, signature. */
	ck_assert_int_eq(marcel_create_call(&t, NULL, NULL, FFI_FN(never), args, NULL), EINVAL);
	ck_assert_int_eq(marcel_create_call(&t, NULL, &cif, NULL, args, NULL), EINVAL);
	ck_assert_int_eq(marcel_create_call_sig(&t, NULL, NULL, FFI_FN(never), NULL, 1), EINVAL);
	ck_assert_int_eq(marcel_create_call_sig(&t, NULL, "i:i", NULL, NULL, 1), EINVAL);

	/* Arguments missing. */
	ck_assert_int_eq(marcel_create_call(&t, NULL, &cif, FFI_FN(never), NULL, NULL), EINVAL);
	void *holes[1] = { NULL };
	ck_assert_int_eq(marcel_create_call(&t, NULL, &cif, FFI_FN(never), holes, NULL), EINVAL);

	/* Too many arguments, both ways. */
	ffi_cif big;
	ck_assert_int_eq(ffi_prep_cif(&big, FFI_DEFAULT_ABI, MARCEL_CALL_MAXARGS + 1,
				      &ffi_type_sint, types), FFI_OK);
	ck_assert_int_eq(marcel_create_call(&t, NULL, &big, FFI_FN(never), args, NULL), EINVAL);
	char sig[MARCEL_CALL_MAXARGS + 4] = "i:";
	memset(sig + 2, 'i', MARCEL_CALL_MAXARGS + 1);
	expect_bad_sig(sig);

	/* Malformed signatures. */
	const char *bad[] = { "", "i", "ii", "i;i", "x:i", "i:ix", "i:v", "d:i d", ":i",
			      "i:i:", "\x01:i", "vv:" };
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
		expect_bad_sig(bad[k]);

	/* Malformed cifs: no result type, a cyclic or badly aligned struct. */
	ffi_cif broken = cif;
	broken.rtype = NULL;
	ck_assert_int_eq(marcel_create_call(&t, NULL, &broken, FFI_FN(never), args, NULL), EINVAL);
	ffi_type *el[3] = { &ffi_type_sint, &ffi_type_sint, NULL };
	ffi_type st = { 0, 0, FFI_TYPE_STRUCT, el };
	ffi_type *stypes[1] = { &st };
	ck_assert_int_eq(ffi_prep_cif(&broken, FFI_DEFAULT_ABI, 1, &ffi_type_sint, stypes), FFI_OK);
	struct pair pv = { 1, 2 };
	void *sargs[1] = { &pv };
	el[1] = &st;
	ck_assert_int_eq(marcel_create_call(&t, NULL, &broken, FFI_FN(never), sargs, NULL), EINVAL);
	el[1] = &ffi_type_sint;
	st.alignment = 3;
	ck_assert_int_eq(marcel_create_call(&t, NULL, &broken, FFI_FN(never), sargs, NULL), EINVAL);
	st.alignment = 4;
	st.elements = NULL;
	ck_assert_int_eq(marcel_create_call(&t, NULL, &broken, FFI_FN(never), sargs, NULL), EINVAL);

	/* Errors of marcel_create: bad attributes. */
	marcel_attr_t garbage;
	memset(&garbage, 0, sizeof garbage);
	ck_assert_int_eq(marcel_create_call(&t, &garbage, &cif, FFI_FN(never), args, NULL), EINVAL);
	ck_assert_int_eq(marcel_create_call_sig(&t, &garbage, "i:i", FFI_FN(never), NULL, 1), EINVAL);
	marcel_attr_t nowhere;
	ck_assert_int_eq(marcel_attr_init(&nowhere), 0);
	ck_assert_int_eq(marcel_attr_setvpset(&nowhere, MARCEL_VPSET_VP(marcel_nbvps())), 0);
	ck_assert_int_eq(marcel_create_call(NULL, &nowhere, &cif, FFI_FN(never), args, NULL), EINVAL);

	/* None of those ran anything. */
	marcel_end();
	ck_assert_int_eq(atomic_load(&should_not_run), 0);

	/* Outside the runtime: marcel_create's EPERM, and nothing allocated stays. */
	ck_assert_int_eq(marcel_create_call(&t, NULL, &cif, FFI_FN(never), args, NULL), EPERM);
	ck_assert_int_eq(marcel_create_call_sig(NULL, NULL, "i:i", FFI_FN(never), NULL, 1), EPERM);
	ck_assert_int_eq(atomic_load(&should_not_run), 0);
}
END_TEST

/* ------------------------------------------------------------------ kernels */

/* The kind of kernel this exists for: BLAS-style, arguments not packed in a struct. */
static void daxpy(int n, double a, const double *x, double *y)
{
	for (int i = 0; i < n; i++)
		y[i] += a * x[i];
}

static double ddot(int n, const double *x, const double *y)
{
	double s = 0;
	for (int i = 0; i < n; i++)
		s += x[i] * y[i];
	return s;
}

START_TEST(test_kernels)
{
	ma_test_init();
	const int n = valgrind() ? 4096 : 1 << 18;
	unsigned nb = marcel_nbvps();
	int chunks = 4 * (int)nb;
	double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
	for (int i = 0; i < n; i++) {
		x[i] = i % 17 - 8;
		y[i] = i % 5;
	}
	marcel_t *ts = calloc((size_t)chunks, sizeof *ts);
	double *part = calloc((size_t)chunks, sizeof *part);
	const double a = 0.5;

	/* y += a x, one chunk per thread, spread over the VPs. */
	for (int c = 0; c < chunks; c++) {
		int lo = (int)((long)n * c / chunks), hi = (int)((long)n * (c + 1) / chunks);
		marcel_attr_t at = ma_test_attr_on_vp((unsigned)c % nb);
		ck_assert_int_eq(marcel_create_call_sig(&ts[c], &at, "v:idpp", FFI_FN(daxpy), NULL,
							hi - lo, a, (void *)(x + lo), (void *)(y + lo)), 0);
	}
	for (int c = 0; c < chunks; c++) {
		any_t st = (any_t)1;
		ck_assert_int_eq(marcel_join(ts[c], &st), 0);
		ck_assert_ptr_null(st);
	}
	for (int i = 0; i < n; i++)
		ck_assert(y[i] == i % 5 + a * (i % 17 - 8));

	/* dot(x, y): partial sums through ret, combined in chunk order. */
	for (int c = 0; c < chunks; c++) {
		int lo = (int)((long)n * c / chunks), hi = (int)((long)n * (c + 1) / chunks);
		marcel_attr_t at = ma_test_attr_on_vp((unsigned)(chunks - 1 - c) % nb);
		ck_assert_int_eq(marcel_create_call_sig(&ts[c], &at, "d:ipp", FFI_FN(ddot), &part[c],
							hi - lo, (void *)(x + lo), (void *)(y + lo)), 0);
	}
	double dot = 0, ref = 0;
	for (int c = 0; c < chunks; c++) {
		any_t st;
		ck_assert_int_eq(marcel_join(ts[c], &st), 0);
		ck_assert_ptr_eq(st, &part[c]);
		dot += part[c];
		int lo = (int)((long)n * c / chunks), hi = (int)((long)n * (c + 1) / chunks);
		ref += ddot(hi - lo, x + lo, y + lo);
	}
	ck_assert(dot == ref);
	free(x);
	free(y);
	free(ts);
	free(part);
	marcel_end();
}
END_TEST

/* ------------------------------------------------------------------ registration */

static void tc_sig(TCase *tc)
{
	tcase_add_test(tc, test_sig_integers);
	tcase_add_test(tc, test_sig_floats);
	tcase_add_test(tc, test_sig_mixed);
	tcase_add_test(tc, test_zero_args);
	tcase_add_test(tc, test_many_args);
}

static void tc_cif(TCase *tc)
{
	tcase_add_test(tc, test_cif_structs);
	tcase_add_test(tc, test_cif_huge_struct);
	tcase_add_test(tc, test_cif_variadic);
	tcase_add_test(tc, test_args_copied);
}

static void tc_threads(TCase *tc)
{
	tcase_add_test(tc, test_detached);
	tcase_add_test(tc, test_attrs);
	tcase_add_test(tc, test_exit_inside);
	tcase_add_test(tc, test_concurrent);
	tcase_add_test(tc, test_nested);
}

static void tc_errors(TCase *tc)
{
	tcase_add_test(tc, test_errors);
}

static void tc_kernels(TCase *tc)
{
	tcase_add_test(tc, test_kernels);
}

int main(void)
{
	Suite *s = suite_create("ffi");
	ma_test_add_both(s, "sig", tc_sig, 60);
	ma_test_add_both(s, "cif", tc_cif, 60);
	ma_test_add_both(s, "threads", tc_threads, 120);
	ma_test_add_both(s, "errors", tc_errors, 60);
	ma_test_add_both(s, "kernels", tc_kernels, 120);
	return ma_test_run(s);
}
