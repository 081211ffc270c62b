/*
 * Thread-specific data. Keys carry a sequence number, odd while the key exists; each
 * thread's slot remembers the sequence it was written under, so a deleted key's values
 * vanish at once, even if the key number is reused, without visiting every thread.
 *
 * A thread's slots are allocated on its first marcel_setspecific and stay with the
 * descriptor when it is recycled (cleared at exit), so threads that reuse descriptors
 * pay for the allocation once.
 */
#include <stdlib.h>
#include <string.h>
#include "ma_sync.h"

struct ma_specific {
	struct {
		void *value;
		unsigned seq;
	} slot[MARCEL_KEYS_MAX];
};

static struct {
	atomic_uint seq;
	void (*_Atomic destructor)(any_t);
} ma_keys[MARCEL_KEYS_MAX];

int marcel_key_create(marcel_key_t *key, void (*destructor)(any_t))
{
	if (!key)
		return EINVAL;
	for (unsigned k = 0; k < MARCEL_KEYS_MAX; k++) {
		unsigned s = atomic_load(&ma_keys[k].seq);
		if (s & 1)
			continue;
		/* The destructor is stored first: a thread exiting right after the claim reads
		 * it through the sequence number. */
		atomic_store(&ma_keys[k].destructor, destructor);
		if (atomic_compare_exchange_strong(&ma_keys[k].seq, &s, s + 1)) {
			*key = k;
			return 0;
		}
	}
	return EAGAIN;
}

int marcel_key_delete(marcel_key_t key)
{
	if (key >= MARCEL_KEYS_MAX)
		return EINVAL;
	unsigned s = atomic_load(&ma_keys[key].seq);
	if (!(s & 1) || !atomic_compare_exchange_strong(&ma_keys[key].seq, &s, s + 1))
		return EINVAL;
	return 0;
}

int marcel_setspecific(marcel_key_t key, const void *value)
{
	if (key >= MARCEL_KEYS_MAX)
		return EINVAL;
	unsigned s = atomic_load_explicit(&ma_keys[key].seq, memory_order_acquire);
	if (!(s & 1))
		return EINVAL;
	struct marcel_task *t = marcel_self();
	if (!t)
		return EPERM;
	if (ma_unlikely(!t->specific)) {
		t->specific = calloc(1, sizeof(*t->specific));
		if (!t->specific)
			return ENOMEM;
	}
	t->specific->slot[key].value = (void *)value;
	t->specific->slot[key].seq = s;
	return 0;
}

any_t marcel_getspecific(marcel_key_t key)
{
	if (key >= MARCEL_KEYS_MAX)
		return NULL;
	struct marcel_task *t = marcel_self();
	if (!t || !t->specific)
		return NULL;
	if (t->specific->slot[key].seq != atomic_load_explicit(&ma_keys[key].seq, memory_order_relaxed))
		return NULL;
	return t->specific->slot[key].value;
}

void ma_keys_exit(struct marcel_task *t)
{
	struct ma_specific *sp = t->specific;
	if (!sp)
		return;
	for (int round = 0; round < MARCEL_DESTRUCTOR_ITERATIONS; round++) {
		int again = 0;
		for (unsigned k = 0; k < MARCEL_KEYS_MAX; k++) {
			void *v = sp->slot[k].value;
			if (!v || sp->slot[k].seq != atomic_load(&ma_keys[k].seq))
				continue;
			void (*d)(any_t) = atomic_load(&ma_keys[k].destructor);
			sp->slot[k].value = NULL;
			if (d) {
				d(v);
				again = 1;
			}
		}
		if (!again)
			break;
	}
	/* Values left after the last round are dropped, as POSIX allows. */
	memset(sp, 0, sizeof(*sp));
}

void ma_keys_free(struct marcel_task *t)
{
	free(t->specific);
	t->specific = NULL;
}
