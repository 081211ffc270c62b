/**
 * @file marcel/keys.h
 * @brief Thread-specific data: one value per thread and key, with a destructor run when
 * the thread ends.
 */
#ifndef MARCEL_KEYS_H
#define MARCEL_KEYS_H

#include <marcel/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup marcel_keys Thread-specific data
 * @{ */

/** A key. */
typedef unsigned marcel_key_t;

/** Number of keys that can exist at once. */
#define MARCEL_KEYS_MAX 256
/** Rounds of destructors run at thread exit while values remain (as POSIX's
 * `PTHREAD_DESTRUCTOR_ITERATIONS`). */
#define MARCEL_DESTRUCTOR_ITERATIONS 4

/** Creates a key whose value is NULL in every thread. When a thread ends with a non-NULL
 * value, the value is set to NULL and @p destructor (if not NULL) is called with it.
 * @return 0; EINVAL if @p key is NULL; EAGAIN if ::MARCEL_KEYS_MAX keys exist. */
int marcel_key_create(marcel_key_t *key, void (*destructor)(any_t));
/** Deletes @p key; no destructor runs. Values set under it are no longer visible, even
 * if the number is reused by a later marcel_key_create().
 * @return 0; EINVAL if @p key does not exist. */
int marcel_key_delete(marcel_key_t key);
/** Sets the caller's value for @p key.
 * @return 0; EINVAL if @p key does not exist; EPERM outside a marcel thread; ENOMEM. */
int marcel_setspecific(marcel_key_t key, const void *value);
/** Returns the caller's value for @p key (NULL if unset, the key does not exist, or the
 * caller is not a marcel thread). */
any_t marcel_getspecific(marcel_key_t key);

/** @} */

#ifdef __cplusplus
}
#endif

#endif
