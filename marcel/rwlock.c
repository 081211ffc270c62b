/*
 * Read-write locks with writer preference: counters under a small lock, readers and
 * writers blocked on two sequence words. A writer that waits stops new readers, so a
 * steady stream of readers cannot starve writers; a thread that already reads may read
 * again (it would otherwise deadlock with the writer waiting for it).
 *
 * Each marcel thread records its read holds (a few per thread), so unlocking a lock one
 * does not hold gives EPERM and asking to write while reading gives EDEADLK instead of
 * a hang.
 */
#include <limits.h>
#include <sched.h>
#include "ma_sync.h"

static inline ma_spinlock_t *ma_rwl(marcel_rwlock_t *l)
{
	return (ma_spinlock_t *)&l->__lock;
}

int marcel_rwlockattr_init(marcel_rwlockattr_t *attr)
{
	if (!attr)
		return EINVAL;
	attr->__pshared = MARCEL_PROCESS_PRIVATE;
	attr->__magic = MA_SYNC_ATTR_MAGIC;
	return 0;
}

int marcel_rwlockattr_destroy(marcel_rwlockattr_t *attr)
{
	if (!attr || attr->__magic != MA_SYNC_ATTR_MAGIC)
		return EINVAL;
	attr->__magic = 0;
	return 0;
}

int marcel_rwlockattr_setpshared(marcel_rwlockattr_t *attr, int pshared)
{
	if (!attr || attr->__magic != MA_SYNC_ATTR_MAGIC)
		return EINVAL;
	return MA_CHECK_PSHARED(pshared);
}

int marcel_rwlockattr_getpshared(const marcel_rwlockattr_t *attr, int *pshared)
{
	if (!attr || attr->__magic != MA_SYNC_ATTR_MAGIC || !pshared)
		return EINVAL;
	*pshared = attr->__pshared;
	return 0;
}

int marcel_rwlock_init(marcel_rwlock_t *l, const marcel_rwlockattr_t *attr)
{
	if (!l || (attr && attr->__magic != MA_SYNC_ATTR_MAGIC))
		return EINVAL;
	ma_spin_init(ma_rwl(l));
	l->__readers = 0;
	l->__writer = NULL;
	l->__wwaiting = l->__rwaiting = 0;
	l->__rseq = l->__wseq = 0;
	return 0;
}

int marcel_rwlock_destroy(marcel_rwlock_t *l)
{
	if (!l)
		return EINVAL;
	ma_spin_lock(ma_rwl(l));
	int busy = l->__readers || l->__writer || l->__wwaiting || l->__rwaiting;
	ma_spin_unlock(ma_rwl(l));
	return busy ? EBUSY : 0;
}

/* ---- which read holds the calling thread has (marcel threads only) ---- */

#define MA_RD_HELD (sizeof(((struct marcel_task *)0)->rd_held) / sizeof(((struct marcel_task *)0)->rd_held[0]))

static unsigned ma_rd_count(struct marcel_task *t, marcel_rwlock_t *l)
{
	for (unsigned i = 0; t && i < MA_RD_HELD; i++)
		if (t->rd_held[i].lock == l)
			return t->rd_held[i].count;
	return 0;
}

static void ma_rd_add(struct marcel_task *t, marcel_rwlock_t *l)
{
	if (!t)
		return;
	unsigned free_slot = MA_RD_HELD;
	for (unsigned i = 0; i < MA_RD_HELD; i++) {
		if (t->rd_held[i].lock == l) {
			t->rd_held[i].count++;
			return;
		}
		if (!t->rd_held[i].lock && free_slot == MA_RD_HELD)
			free_slot = i;
	}
	if (free_slot == MA_RD_HELD) {
		t->rd_untracked++;
		return;
	}
	t->rd_held[free_slot].lock = l;
	t->rd_held[free_slot].count = 1;
}

/* Drops one read hold of l: 0, or EPERM if the caller provably holds none. */
static int ma_rd_drop(struct marcel_task *t, marcel_rwlock_t *l)
{
	if (!t)
		return 0;
	for (unsigned i = 0; i < MA_RD_HELD; i++)
		if (t->rd_held[i].lock == l) {
			if (!--t->rd_held[i].count)
				t->rd_held[i].lock = NULL;
			return 0;
		}
	if (t->rd_untracked) {
		t->rd_untracked--;
		return 0;
	}
	return EPERM;
}

/* The sequence words are read without the lock by the wait queue's check. */
static inline void ma_seq_bump(unsigned *seq)
{
	ma_write_once(seq, ma_read_once(seq) + 1);
}

/* Blocks on *seq (read under the lock as `seq_seen`) after dropping the lock. */
static int ma_rw_block(marcel_rwlock_t *l, unsigned *seq, unsigned seq_seen, uint64_t deadline)
{
	ma_spin_unlock(ma_rwl(l));
	int e = ma_fwait_u32(seq, seq_seen, deadline);
	ma_spin_lock(ma_rwl(l));
	return e;
}

static int ma_rw_rdlock(marcel_rwlock_t *l, uint64_t deadline, int try)
{
	if (!l)
		return EINVAL;
	void *self = ma_owner_self();
	struct marcel_task *me = marcel_self();
	int e = 0;
	ma_spin_lock(ma_rwl(l));
	if (l->__writer == self) {
		e = try ? EBUSY : EDEADLK;
		goto out;
	}
	/* A reader asking again goes ahead of waiting writers: making it wait for them
	 * would deadlock (they wait for it). */
	while (l->__writer || (l->__wwaiting && !ma_rd_count(me, l))) {
		if (try) {
			e = EBUSY;
			goto out;
		}
		l->__rwaiting++;
		e = ma_rw_block(l, &l->__rseq, ma_read_once(&l->__rseq), deadline);
		l->__rwaiting--;
		if (e == ETIMEDOUT && (l->__writer || l->__wwaiting))
			goto out;
		e = 0;
	}
	if (l->__readers == INT_MAX) {
		e = EAGAIN;
	} else {
		l->__readers++;
		ma_rd_add(me, l);
	}
out:
	ma_spin_unlock(ma_rwl(l));
	return e;
}

static int ma_rw_wrlock(marcel_rwlock_t *l, uint64_t deadline, int try)
{
	if (!l)
		return EINVAL;
	void *self = ma_owner_self();
	int e = 0;
	ma_spin_lock(ma_rwl(l));
	if (l->__writer == self || ma_rd_count(marcel_self(), l)) {
		/* Waiting for our own hold to go would never end. */
		e = try ? EBUSY : EDEADLK;
		goto out;
	}
	while (l->__writer || l->__readers) {
		if (try) {
			e = EBUSY;
			goto out;
		}
		l->__wwaiting++;
		e = ma_rw_block(l, &l->__wseq, ma_read_once(&l->__wseq), deadline);
		l->__wwaiting--;
		if (e == ETIMEDOUT && (l->__writer || l->__readers)) {
			/* Readers held back for us may go now. */
			if (!l->__wwaiting && !l->__writer && l->__rwaiting) {
				ma_seq_bump(&l->__rseq);
				ma_spin_unlock(ma_rwl(l));
				ma_fwake(&l->__rseq, ~0u);
				return ETIMEDOUT;
			}
			goto out;
		}
		e = 0;
	}
	l->__writer = self;
out:
	ma_spin_unlock(ma_rwl(l));
	return e;
}

int marcel_rwlock_rdlock(marcel_rwlock_t *l)
{
	return ma_rw_rdlock(l, MA_NO_DEADLINE, 0);
}

int marcel_rwlock_tryrdlock(marcel_rwlock_t *l)
{
	return ma_rw_rdlock(l, MA_NO_DEADLINE, 1);
}

int marcel_rwlock_timedrdlock(marcel_rwlock_t *l, const struct timespec *abstime)
{
	uint64_t deadline;
	if (!l || ma_deadline_from_abs(CLOCK_REALTIME, abstime, &deadline))
		return EINVAL;
	return ma_rw_rdlock(l, deadline, 0);
}

int marcel_rwlock_wrlock(marcel_rwlock_t *l)
{
	return ma_rw_wrlock(l, MA_NO_DEADLINE, 0);
}

int marcel_rwlock_trywrlock(marcel_rwlock_t *l)
{
	return ma_rw_wrlock(l, MA_NO_DEADLINE, 1);
}

int marcel_rwlock_timedwrlock(marcel_rwlock_t *l, const struct timespec *abstime)
{
	uint64_t deadline;
	if (!l || ma_deadline_from_abs(CLOCK_REALTIME, abstime, &deadline))
		return EINVAL;
	return ma_rw_wrlock(l, deadline, 0);
}

int marcel_rwlock_unlock(marcel_rwlock_t *l)
{
	if (!l)
		return EINVAL;
	void *wake = NULL;
	unsigned n = 0;
	ma_spin_lock(ma_rwl(l));
	if (l->__writer) {
		if (l->__writer != ma_owner_self()) {
			ma_spin_unlock(ma_rwl(l));
			return EPERM;
		}
		l->__writer = NULL;
	} else if (l->__readers) {
		if (ma_rd_drop(marcel_self(), l)) {
			ma_spin_unlock(ma_rwl(l));
			return EPERM;
		}
		l->__readers--;
	} else {
		ma_spin_unlock(ma_rwl(l));
		return EPERM;
	}
	if (!l->__writer && !l->__readers) {
		if (l->__wwaiting) {
			ma_seq_bump(&l->__wseq);
			wake = &l->__wseq;
			n = 1;
		} else if (l->__rwaiting) {
			ma_seq_bump(&l->__rseq);
			wake = &l->__rseq;
			n = ~0u;
		}
	}
	ma_spin_unlock(ma_rwl(l));
	if (wake)
		ma_fwake(wake, n);
	return 0;
}
