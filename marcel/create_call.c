/*
 * Typed spawn (marcel/ffi.h): a thread that calls a function of any C signature through
 * libffi, built on marcel_create() alone.
 *
 * At creation everything the call needs -- the ffi_cif, copies of the struct ffi_types it
 * refers to, the argument values, a return buffer -- is packed into one heap block
 * (struct ma_call followed by its arrays). The new thread copies the block onto its own
 * stack, moves the block's internal pointers to the copy, frees the heap block, then
 * calls ffi_call(). Holding nothing on the heap during the call means that a function
 * ending its thread with marcel_exit() leaks nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <marcel.h>
#include <marcel/ffi.h>

/* Limits on struct descriptions, so that a malformed (say cyclic or unterminated) one
 * fails with EINVAL instead of looping. */
#define MA_CALL_MAXDEPTH 32
#define MA_CALL_MAXSTRUCTS 1024
#define MA_CALL_MAXELEMS 65536
#define MA_CALL_MAXALIGN 4096

/* The block's header. Pointers point inside the block except for non-struct ffi_types
 * (libffi's predefined ones, used by reference) and fn/ret. */
struct ma_call {
	size_t size;         /* whole block, in bytes */
	size_t align;        /* the block's alignment */
	void (*fn)(void);
	void *ret;           /* the caller's result buffer, or NULL */
	void *rbuf;          /* ffi_call()'s result buffer */
	void **argv;         /* cif.nargs pointers to the copied values */
	ffi_type *structs;   /* copied struct descriptions */
	size_t nstructs;
	ffi_type **elems;    /* their elements arrays, one after the other, NULL-terminated */
	size_t nelems;
	ffi_cif cif;         /* copy; rtype and arg_types point to the copies */
};

/* Sizes found by ma_call_measure(). */
struct ma_call_count {
	size_t nstructs;
	size_t nelems;
	size_t align;
};

static int ma_call_pow2(size_t x)
{
	return x && !(x & (x - 1));
}

static size_t ma_call_align_up(size_t off, size_t align)
{
	return (off + align - 1) & ~(align - 1);
}

/* Adds b to *a; non-zero on overflow. */
static int ma_call_add(size_t *a, size_t b)
{
	return __builtin_add_overflow(*a, b, a);
}

/* Checks type t and counts the struct descriptions to copy under it. */
static int ma_call_measure(const ffi_type *t, unsigned depth, struct ma_call_count *n)
{
	if (!t || !ma_call_pow2(t->alignment) || t->alignment > MA_CALL_MAXALIGN)
		return EINVAL;
	if (t->alignment > n->align)
		n->align = t->alignment;
	if (t->type != FFI_TYPE_STRUCT)
		return 0;
	if (depth >= MA_CALL_MAXDEPTH || !t->elements || !t->size ||
	    ++n->nstructs > MA_CALL_MAXSTRUCTS)
		return EINVAL;
	size_t k = 0;
	for (; t->elements[k]; k++) {
		if (n->nelems + k + 1 >= MA_CALL_MAXELEMS)
			return EINVAL;
		int rc = ma_call_measure(t->elements[k], depth + 1, n);
		if (rc)
			return rc;
	}
	n->nelems += k + 1;
	return 0;
}

/* Cursor over the block's struct and element arrays while copying types. */
struct ma_call_fill {
	ffi_type *structs;
	size_t nstructs;
	ffi_type **elems;
	size_t nelems;
};

/* Returns the type to use for t: t itself unless it is a struct, else a deep copy. */
static ffi_type *ma_call_copy_type(ffi_type *t, struct ma_call_fill *f)
{
	if (t->type != FFI_TYPE_STRUCT)
		return t;
	ffi_type *c = &f->structs[f->nstructs++];
	*c = *t;
	size_t k = 0;
	while (t->elements[k])
		k++;
	ffi_type **el = &f->elems[f->nelems];
	f->nelems += k + 1;
	c->elements = el;
	for (size_t i = 0; i < k; i++)
		el[i] = ma_call_copy_type(t->elements[i], f);
	el[k] = NULL;
	return c;
}

/* Pointer relocation from the heap block to its copy. */
struct ma_call_reloc {
	uintptr_t lo;
	size_t size;
	uintptr_t delta;
};

/* Moves the pointer stored at slot if it points inside the old block. */
static void ma_call_move(void *slot, const struct ma_call_reloc *r)
{
	uintptr_t p;
	memcpy(&p, slot, sizeof p);
	if (p - r->lo < r->size) {
		p += r->delta;
		memcpy(slot, &p, sizeof p);
	}
}

static void ma_call_relocate(struct ma_call *c, const struct ma_call_reloc *r)
{
	ma_call_move(&c->rbuf, r);
	ma_call_move(&c->argv, r);
	ma_call_move(&c->structs, r);
	ma_call_move(&c->elems, r);
	ma_call_move(&c->cif.rtype, r);
	ma_call_move(&c->cif.arg_types, r);
	for (unsigned i = 0; i < c->cif.nargs; i++) {
		ma_call_move(&c->argv[i], r);
		ma_call_move(&c->cif.arg_types[i], r);
	}
	for (size_t i = 0; i < c->nstructs; i++)
		ma_call_move(&c->structs[i].elements, r);
	for (size_t i = 0; i < c->nelems; i++)
		ma_call_move(&c->elems[i], r);
}

/* The integer result in rbuf, whose type is size bytes wide; libffi widens results
 * narrower than ffi_arg to a whole ffi_arg. The caller narrows it to the exact type. */
static uint64_t ma_call_integer(const void *rbuf, size_t size)
{
	if (size < sizeof(ffi_arg)) {
		ffi_arg a;
		memcpy(&a, rbuf, sizeof a);
		return a;
	}
	if (size == sizeof(uint32_t)) {
		uint32_t v;
		memcpy(&v, rbuf, sizeof v);
		return v;
	}
	uint64_t v;
	memcpy(&v, rbuf, sizeof v);
	return v;
}

/* Stores v (of a type of n bytes) at the caller's buffer, if any. */
static void ma_call_store(const struct ma_call *c, const void *v, size_t n)
{
	if (c->ret)
		memcpy(c->ret, v, n);
}

/* Delivers the result as documented in marcel/ffi.h and returns the thread's status. */
static any_t ma_call_deliver(const struct ma_call *c)
{
	const ffi_type *t = c->cif.rtype;

	if (t->type == FFI_TYPE_VOID)
		return NULL;
	/* Integers and pointers that fit in any_t are the status (and stored at ret). */
	int fits = t->size <= sizeof(any_t);
	switch (fits ? t->type : FFI_TYPE_STRUCT) {
	case FFI_TYPE_UINT8: {
		uint8_t v = (uint8_t)ma_call_integer(c->rbuf, sizeof v);
		ma_call_store(c, &v, sizeof v);
		return (any_t)(uintptr_t)v;
	}
	case FFI_TYPE_SINT8: {
		int8_t v = (int8_t)ma_call_integer(c->rbuf, sizeof v);
		ma_call_store(c, &v, sizeof v);
		return (any_t)(intptr_t)v;
	}
	case FFI_TYPE_UINT16: {
		uint16_t v = (uint16_t)ma_call_integer(c->rbuf, sizeof v);
		ma_call_store(c, &v, sizeof v);
		return (any_t)(uintptr_t)v;
	}
	case FFI_TYPE_SINT16: {
		int16_t v = (int16_t)ma_call_integer(c->rbuf, sizeof v);
		ma_call_store(c, &v, sizeof v);
		return (any_t)(intptr_t)v;
	}
	case FFI_TYPE_UINT32: {
		uint32_t v = (uint32_t)ma_call_integer(c->rbuf, sizeof v);
		ma_call_store(c, &v, sizeof v);
		return (any_t)(uintptr_t)v;
	}
	case FFI_TYPE_INT:
	case FFI_TYPE_SINT32: {
		int32_t v = (int32_t)ma_call_integer(c->rbuf, sizeof v);
		ma_call_store(c, &v, sizeof v);
		return (any_t)(intptr_t)v;
	}
	case FFI_TYPE_UINT64: {
		uint64_t v = ma_call_integer(c->rbuf, sizeof v);
		ma_call_store(c, &v, sizeof v);
		return (any_t)(uintptr_t)v;
	}
	case FFI_TYPE_SINT64: {
		int64_t v = (int64_t)ma_call_integer(c->rbuf, sizeof v);
		ma_call_store(c, &v, sizeof v);
		return (any_t)(intptr_t)v;
	}
	case FFI_TYPE_POINTER: {
		void *v;
		memcpy(&v, c->rbuf, sizeof v);
		ma_call_store(c, &v, sizeof v);
		return v;
	}
	default:
		/* Floating point, complex, struct, or an integer wider than any_t. */
		ma_call_store(c, c->rbuf, t->size);
		return c->ret;
	}
}

/* The new thread's body: moves the block onto this stack, frees it, makes the call. */
static any_t ma_call_start(any_t arg)
{
	struct ma_call *heap = arg;
	size_t size = heap->size, align = heap->align;
	unsigned char raw[size + align - 1];
	struct ma_call *c = (struct ma_call *)(void *)ma_call_align_up((uintptr_t)raw, align);
	struct ma_call_reloc r = { (uintptr_t)heap, size, (uintptr_t)c - (uintptr_t)heap };

	memcpy(c, heap, size);
	ma_call_relocate(c, &r);
	free(heap);
	ffi_call(&c->cif, c->fn, c->rbuf, c->argv);
	return ma_call_deliver(c);
}

int marcel_create_call(marcel_t *pid, const marcel_attr_t *attr, ffi_cif *cif,
		       void (*fn)(void), void **args, void *ret)
{
	if (!cif || !fn || cif->nargs > MARCEL_CALL_MAXARGS)
		return EINVAL;
	unsigned nargs = cif->nargs;
	if (nargs && (!args || !cif->arg_types))
		return EINVAL;

	/* Check the types and count what to copy. */
	struct ma_call_count n = { 0, 0, alignof(max_align_t) };
	int rc = ma_call_measure(cif->rtype, 0, &n);
	if (rc)
		return rc;
	for (unsigned i = 0; i < nargs; i++) {
		const ffi_type *t = cif->arg_types[i];
		if (!t || t->type == FFI_TYPE_VOID || !t->size || !args[i])
			return EINVAL;
		rc = ma_call_measure(t, 0, &n);
		if (rc)
			return rc;
	}

	/* Lay the block out: header, arg types, argv, structs, elements, result, values. */
	size_t off_types = ma_call_align_up(sizeof(struct ma_call), alignof(ffi_type *));
	size_t off_argv = off_types + nargs * sizeof(ffi_type *);
	size_t off_structs = ma_call_align_up(off_argv + nargs * sizeof(void *), alignof(ffi_type));
	size_t off_elems = ma_call_align_up(off_structs + n.nstructs * sizeof(ffi_type),
					    alignof(ffi_type *));
	size_t rsize = cif->rtype->size > sizeof(ffi_arg) ? cif->rtype->size : sizeof(ffi_arg);
	size_t ralign = cif->rtype->alignment > 16 ? cif->rtype->alignment : 16;
	size_t off_rbuf = ma_call_align_up(off_elems + n.nelems * sizeof(ffi_type *), ralign);
	size_t size = off_rbuf;
	if (ma_call_add(&size, ma_call_align_up(rsize, 16)))
		return ENOMEM;
	size_t off_val[MARCEL_CALL_MAXARGS];
	for (unsigned i = 0; i < nargs; i++) {
		const ffi_type *t = cif->arg_types[i];
		size = ma_call_align_up(size, t->alignment);
		off_val[i] = size;
		if (ma_call_add(&size, t->size))
			return ENOMEM;
	}
	size = ma_call_align_up(size, n.align);
	/* The new thread also needs the block on its stack: refuse absurd sizes here. */
	if (size > MARCEL_STACK_MAX)
		return ENOMEM;

	void *mem;
	if (posix_memalign(&mem, n.align, size))
		return ENOMEM;
	unsigned char *base = mem;
	struct ma_call *c = mem;
	memset(c, 0, off_rbuf);
	c->size = size;
	c->align = n.align;
	c->fn = fn;
	c->ret = ret;
	c->rbuf = base + off_rbuf;
	c->argv = (void **)(void *)(base + off_argv);
	c->structs = (ffi_type *)(void *)(base + off_structs);
	c->nstructs = n.nstructs;
	c->elems = (ffi_type **)(void *)(base + off_elems);
	c->nelems = n.nelems;

	struct ma_call_fill f = { c->structs, 0, c->elems, 0 };
	ffi_type **types = (ffi_type **)(void *)(base + off_types);
	c->cif = *cif;
	c->cif.rtype = ma_call_copy_type(cif->rtype, &f);
	c->cif.arg_types = nargs ? types : NULL;
	for (unsigned i = 0; i < nargs; i++) {
		types[i] = ma_call_copy_type(cif->arg_types[i], &f);
		c->argv[i] = base + off_val[i];
		memcpy(c->argv[i], args[i], cif->arg_types[i]->size);
	}

	rc = marcel_create(pid, attr, ma_call_start, c);
	if (rc)
		free(mem);
	return rc;
}

/* ------------------------------------------------------------------ signature strings */

#define MA_CALL_LETTERS "v c C s S i I l L q Q z Z f d D p"

/* The libffi type of a signed or unsigned integer of size bytes. */
static ffi_type *ma_call_int_type(size_t size, int is_signed)
{
	switch (size) {
	case 1: return is_signed ? &ffi_type_sint8 : &ffi_type_uint8;
	case 2: return is_signed ? &ffi_type_sint16 : &ffi_type_uint16;
	case 4: return is_signed ? &ffi_type_sint32 : &ffi_type_uint32;
	default: return is_signed ? &ffi_type_sint64 : &ffi_type_uint64;
	}
}

/* The type of a signature letter, or NULL if it is not one. */
static ffi_type *ma_call_letter(char l)
{
	switch (l) {
	case 'v': return &ffi_type_void;
	case 'c': return &ffi_type_schar;
	case 'C': return &ffi_type_uchar;
	case 's': return &ffi_type_sshort;
	case 'S': return &ffi_type_ushort;
	case 'i': return &ffi_type_sint;
	case 'I': return &ffi_type_uint;
	case 'l': return &ffi_type_slong;
	case 'L': return &ffi_type_ulong;
	case 'q': return ma_call_int_type(sizeof(long long), 1);
	case 'Q': return ma_call_int_type(sizeof(unsigned long long), 0);
	case 'z': return ma_call_int_type(sizeof(size_t), 0);
	case 'Z': return ma_call_int_type(sizeof(ptrdiff_t), 1);
	case 'f': return &ffi_type_float;
	case 'd': return &ffi_type_double;
	case 'D': return &ffi_type_longdouble;
	case 'p': return &ffi_type_pointer;
	default: return NULL;
	}
}

/* Prints the one-line complaint about a malformed signature. */
static void ma_call_complain(const char *sig, const char *fault, size_t pos)
{
	size_t len = strlen(sig);
	unsigned char ch = (unsigned char)sig[pos];
	char where[64] = "";
	if (pos < len) {
		if (ch >= 0x20 && ch < 0x7f)
			snprintf(where, sizeof where, ": '%c' at position %zu", ch, pos);
		else
			snprintf(where, sizeof where, ": byte 0x%02x at position %zu", ch, pos);
	}
	fprintf(stderr, "marcel_create_call_sig: bad signature \"%.64s%s\"%s %s; expected "
		"\"R:ARGS\", a result letter, ':' and one letter per argument, each of "
		MA_CALL_LETTERS " (v for a void result only)\n",
		sig, len > 64 ? "..." : "", where, fault);
}

/* Parses sig into its result and argument types. */
static int ma_call_parse(const char *sig, ffi_type **rtype, ffi_type **types, unsigned *nargs)
{
	if (!sig[0]) {
		ma_call_complain(sig, "is empty", 0);
		return EINVAL;
	}
	*rtype = ma_call_letter(sig[0]);
	if (!*rtype) {
		ma_call_complain(sig, "is not a type letter", 0);
		return EINVAL;
	}
	if (sig[1] != ':') {
		ma_call_complain(sig, sig[1] ? "should be ':'" : "lacks the ':' after the result", 1);
		return EINVAL;
	}
	unsigned n = 0;
	for (const char *p = sig + 2; *p; p++) {
		size_t pos = (size_t)(p - sig);
		ffi_type *t = ma_call_letter(*p);
		if (!t) {
			ma_call_complain(sig, "is not a type letter", pos);
			return EINVAL;
		}
		if (t == &ffi_type_void) {
			ma_call_complain(sig, "is void, which only a result may be", pos);
			return EINVAL;
		}
		if (n == MARCEL_CALL_MAXARGS) {
			char fault[64];
			snprintf(fault, sizeof fault, "is one argument more than the %d allowed",
				 MARCEL_CALL_MAXARGS);
			ma_call_complain(sig, fault, pos);
			return EINVAL;
		}
		types[n++] = t;
	}
	*nargs = n;
	return 0;
}

/* One argument read from the variadic list, in its declared type. */
union ma_call_value {
	signed char c;
	unsigned char C;
	short s;
	unsigned short S;
	int i;
	unsigned I;
	long l;
	unsigned long L;
	long long q;
	unsigned long long Q;
	size_t z;
	ptrdiff_t Z;
	float f;
	double d;
	long double D;
	void *p;
};

int marcel_create_call_vsig(marcel_t *pid, const marcel_attr_t *attr, const char *sig,
			    void (*fn)(void), void *ret, va_list ap)
{
	if (!sig || !fn)
		return EINVAL;
	ffi_type *rtype, *types[MARCEL_CALL_MAXARGS];
	unsigned nargs;
	int rc = ma_call_parse(sig, &rtype, types, &nargs);
	if (rc)
		return rc;

	union ma_call_value vals[MARCEL_CALL_MAXARGS];
	void *argv[MARCEL_CALL_MAXARGS];
	for (unsigned i = 0; i < nargs; i++) {
		union ma_call_value *v = &vals[i];
		switch (sig[2 + i]) {
		case 'c': v->c = (signed char)va_arg(ap, int); break;
		case 'C': v->C = (unsigned char)va_arg(ap, int); break;
		case 's': v->s = (short)va_arg(ap, int); break;
		case 'S': v->S = (unsigned short)va_arg(ap, int); break;
		case 'i': v->i = va_arg(ap, int); break;
		case 'I': v->I = va_arg(ap, unsigned); break;
		case 'l': v->l = va_arg(ap, long); break;
		case 'L': v->L = va_arg(ap, unsigned long); break;
		case 'q': v->q = va_arg(ap, long long); break;
		case 'Q': v->Q = va_arg(ap, unsigned long long); break;
		case 'z': v->z = va_arg(ap, size_t); break;
		case 'Z': v->Z = va_arg(ap, ptrdiff_t); break;
		case 'f': v->f = (float)va_arg(ap, double); break;
		case 'd': v->d = va_arg(ap, double); break;
		case 'D': v->D = va_arg(ap, long double); break;
		default: v->p = va_arg(ap, void *); break;
		}
		argv[i] = v;
	}

	ffi_cif cif;
	if (ffi_prep_cif(&cif, FFI_DEFAULT_ABI, nargs, rtype, types) != FFI_OK)
		return EINVAL;
	return marcel_create_call(pid, attr, &cif, fn, argv, ret);
}

int marcel_create_call_sig(marcel_t *pid, const marcel_attr_t *attr, const char *sig,
			   void (*fn)(void), void *ret, ...)
{
	va_list ap;
	va_start(ap, ret);
	int rc = marcel_create_call_vsig(pid, attr, sig, fn, ret, ap);
	va_end(ap);
	return rc;
}
