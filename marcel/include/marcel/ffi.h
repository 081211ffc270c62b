/**
 * @file marcel/ffi.h
 * @brief Typed spawn: threads that call a function of any C signature, through libffi.
 *
 * Not included by marcel.h: include it explicitly (it includes libffi's `<ffi.h>`, so
 * compile with `pkg-config --cflags libffi`).
 */
#ifndef MARCEL_FFI_H
#define MARCEL_FFI_H

#include <stdarg.h>
#include <ffi.h>
#include <marcel/types.h>
#include <marcel/attr.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup marcel_call Typed spawn (libffi)
 * Creates a thread that calls a function of any C signature, so that a kernel whose
 * arguments are not packed in a struct runs as a thread unchanged:
 * @code
 * void daxpy(int n, double a, const double *x, double *y);
 * double ddot(int n, const double *x, const double *y);
 *
 * marcel_t t1, t2;
 * double dot;
 * marcel_create_call_sig(&t1, NULL, "v:idpp", FFI_FN(daxpy), NULL, n, 2.0, x, y);
 * marcel_create_call_sig(&t2, NULL, "d:ipp", FFI_FN(ddot), &dot, n, x, x);
 * marcel_join(t1, NULL);
 * marcel_join(t2, NULL);   // dot now holds ddot's result
 * @endcode
 *
 * **Arguments are copied at creation.** The argument values, the array pointing to them,
 * the signature string and the `ffi_cif` may all be modified or freed as soon as the
 * creating call returns. The new thread copies them onto its own stack before the call
 * and frees the heap copy, so nothing is left to free when it ends, even if @p fn ends
 * it with marcel_exit(). Its stack must therefore hold about twice the arguments' total
 * size (the copy plus libffi's own argument area): the default stack is ample unless
 * aggregates of many kilobytes are passed by value (see marcel_attr_setstacksize()).
 *
 * **Result.** When @p fn returns, its value is delivered as follows:
 * - `void`: nothing is written; the thread's status is NULL.
 * - an integer type or a pointer no wider than ::any_t (every integer type on 64-bit
 *   machines): the status is the value converted to ::any_t, signed types through
 *   `intptr_t` (sign-extended: a returned `-1` of type `short` reads back as
 *   `(intptr_t)status == -1`), unsigned types and pointers through `uintptr_t`
 *   (zero-extended). If @p ret is not NULL the value is also stored at @p ret, as its
 *   own C type (a `short` writes 2 bytes).
 * - anything else (`float`, `double`, `long double`, complex types, structs, and 64-bit
 *   integers on 32-bit machines): the value is stored at @p ret as its own C type, and
 *   the status is @p ret. If @p ret is NULL the value is discarded and the status is NULL.
 *
 * The store to @p ret happens in the new thread just before it ends, so it is visible
 * once marcel_join() has returned; @p ret must stay valid until then. For a detached
 * thread, synchronise by other means before reading @p ret. If @p fn ends its thread
 * with marcel_exit(), nothing is stored and the status is marcel_exit()'s argument.
 *
 * **Function pointers** are passed as `void (*)(void)`: cast with libffi's `FFI_FN()`.
 *
 * These functions must be called from a marcel thread (like marcel_create()), on any VP,
 * by any number of threads at once. A call that fails has created no thread, run
 * nothing, and allocated nothing that remains.
 * @{ */

/** Largest number of arguments the called function may take. */
#define MARCEL_CALL_MAXARGS 32

/**
 * Creates a thread that calls @p fn with the arguments @p args described by @p cif, and
 * makes it ready.
 *
 * @param pid receives the handle, as for marcel_create(); NULL creates a detached thread.
 * @param attr attributes (stack size, detach state, name, priority, vpset...), or NULL
 *        for the defaults.
 * @param cif @p fn's signature, prepared by `ffi_prep_cif()` or `ffi_prep_cif_var()`.
 *        It is read only during this call: the `ffi_cif` and the struct `ffi_type`
 *        descriptions it refers to (type `FFI_TYPE_STRUCT`, with their `elements`
 *        arrays, nested ones included) are copied. Other `ffi_type` objects are used by
 *        reference and must live until the thread ends; libffi's predefined types
 *        (`ffi_type_sint`, `ffi_type_double`, `ffi_type_pointer`, ...) live for the
 *        whole process.
 * @param fn the function to call, cast with `FFI_FN()`.
 * @param args `cif->nargs` pointers, the i-th pointing to the i-th argument's value
 *        (as for `ffi_call()`); may be NULL when `cif->nargs` is 0. The values are
 *        copied during this call.
 * @param ret where the result is stored, or NULL; see @ref marcel_call for when it is
 *        written and what the thread's status is. It must hold a value of type
 *        `cif->rtype` (no `ffi_arg` widening: a `char` result needs 1 byte).
 * @return 0 on success; EINVAL if @p cif or @p fn is NULL, `cif->rtype` is NULL, the
 *         function takes more than ::MARCEL_CALL_MAXARGS arguments, @p args or one of
 *         its entries is NULL while an argument needs it, an argument type is NULL or
 *         void, or a struct type is malformed (no elements, a zero size, an alignment
 *         that is not a power of two, nesting deeper than 32 levels or more than 1024
 *         struct descriptions in all); ENOMEM if the copy could not be allocated;
 *         otherwise any error of marcel_create() (EINVAL for a bad @p attr, EPERM if
 *         the runtime is not running, EAGAIN if memory ran out).
 */
int marcel_create_call(marcel_t *pid, const marcel_attr_t *attr, ffi_cif *cif,
		       void (*fn)(void), void **args, void *ret);

/**
 * Creates a thread that calls @p fn with variadic arguments described by a compact
 * signature string, and makes it ready.
 *
 * @p sig is `"R:ARGS"`: one letter for the result type, a colon, then one letter per
 * argument (none for a function taking no argument, as in `"v:"`). The letters:
 *
 * | letter | C type | pass in `...` as |
 * |---|---|---|
 * | `v` | `void` (result only) | - |
 * | `c` / `C` | `signed char` / `unsigned char` | `int` (promoted) |
 * | `s` / `S` | `short` / `unsigned short` | `int` (promoted) |
 * | `i` / `I` | `int` / `unsigned int` | the same |
 * | `l` / `L` | `long` / `unsigned long` | the same |
 * | `q` / `Q` | `long long` / `unsigned long long` | the same |
 * | `z` / `Z` | `size_t` / `ptrdiff_t` (also `ssize_t`) | the same |
 * | `f` | `float` | `double` (promoted; converted back to `float`) |
 * | `d` | `double` | the same |
 * | `D` | `long double` | the same |
 * | `p` | any data or function pointer | `void *` (cast others) |
 *
 * The function is called with the standard calling convention (`FFI_DEFAULT_ABI`) and a
 * fixed argument list; for variadic callees or struct arguments use
 * marcel_create_call(). Each value in `...` must have exactly the type in the third
 * column: as with printf(), a mismatch (an `int` for `l`, an `int` literal for `d`) is
 * undefined behaviour the compiler cannot see.
 *
 * @param pid receives the handle, as for marcel_create(); NULL creates a detached thread.
 * @param attr attributes, or NULL for the defaults.
 * @param sig the signature; read only during this call.
 * @param fn the function to call, cast with `FFI_FN()`.
 * @param ret where the result is stored, or NULL: as for marcel_create_call(), it must
 *        hold a value of the result's C type. Integer and pointer results are also the
 *        thread's status, so NULL is the usual value for them; `f`, `d` and `D` results
 *        need it.
 * @param ... the arguments, one per argument letter, as in the table.
 * @return 0 on success; EINVAL if @p sig or @p fn is NULL, or @p sig is malformed (also
 *         printing one line to stderr that names the signature, the fault and the
 *         accepted letters), or declares more than ::MARCEL_CALL_MAXARGS arguments;
 *         otherwise as marcel_create_call().
 */
int marcel_create_call_sig(marcel_t *pid, const marcel_attr_t *attr, const char *sig,
			   void (*fn)(void), void *ret, ...);

/**
 * marcel_create_call_sig() taking its arguments as a `va_list`, for wrappers that are
 * themselves variadic. @p ap is consumed as by vprintf(): the caller calls `va_end()`
 * afterwards and must not use @p ap again.
 * @return as marcel_create_call_sig().
 */
int marcel_create_call_vsig(marcel_t *pid, const marcel_attr_t *attr, const char *sig,
			    void (*fn)(void), void *ret, va_list ap);

/** @} */

#ifdef __cplusplus
}
#endif

#endif
