/*
 * Marcel's names and forms of the bubble calls that marcel spells differently: the
 * initial bubble of a thread attribute (marcel_attr_setinitbubble), and the statistics
 * calls (marcel/compat_names.h), which return a pointer to a `long` holding the value.
 * Public API over public API: only <marcel.h> is needed.
 *
 * The statistics' values live in a block owned by the calling thread (a marcel key), so
 * that another thread's call cannot overwrite them between the call and the
 * read, even if the caller is preempted there and resumes on another worker.
 */
#include <errno.h>
#include <stdlib.h>
#include <marcel.h>

struct ma_stats_block {
	long v[MEMNODE + 1 + MARCEL_STATS_MAX_NODES]; /* LAST_VP, LOAD, then MEMNODE's array */
	struct ma_stats_block *next_all;              /* every block ever made */
	struct ma_stats_block *next_free;
};

/* Blocks are recycled, never freed: they stay reachable from ma_stats_all (a block of the
 * main thread, whose keys are not destroyed at marcel_end, is then no leak either). */
static struct ma_stats_block *ma_stats_all, *ma_stats_free;
static marcel_mutex_t ma_stats_lock = MARCEL_MUTEX_INITIALIZER;
static marcel_key_t ma_stats_key;
static int ma_stats_key_err;
static marcel_once_t ma_stats_once = MARCEL_ONCE_INIT;
/* Kernel threads that are not marcel threads have no keys: one block each. */
static __thread struct ma_stats_block ma_stats_foreign;

static void ma_stats_block_put(any_t p)
{
	struct ma_stats_block *b = p;
	marcel_mutex_lock(&ma_stats_lock);
	b->next_free = ma_stats_free;
	ma_stats_free = b;
	marcel_mutex_unlock(&ma_stats_lock);
}

static void ma_stats_key_make(void)
{
	ma_stats_key_err = marcel_key_create(&ma_stats_key, ma_stats_block_put);
}

/* The caller's block, NULL (errno ENOMEM) if none could be made. */
static struct ma_stats_block *ma_stats_block(void)
{
	if (!marcel_self())
		return &ma_stats_foreign;
	marcel_once(&ma_stats_once, ma_stats_key_make);
	if (ma_stats_key_err) {
		errno = ENOMEM;
		return NULL;
	}
	struct ma_stats_block *b = marcel_getspecific(ma_stats_key);
	if (b)
		return b;
	marcel_mutex_lock(&ma_stats_lock);
	b = ma_stats_free;
	if (b)
		ma_stats_free = b->next_free;
	else if ((b = calloc(1, sizeof(*b)))) {
		b->next_all = ma_stats_all;
		ma_stats_all = b;
	}
	marcel_mutex_unlock(&ma_stats_lock);
	if (!b || marcel_setspecific(ma_stats_key, b)) {
		if (b)
			ma_stats_block_put(b);
		errno = ENOMEM;
		return NULL;
	}
	return b;
}

static long *ma_stats_fail(int e)
{
	errno = e;
	return NULL;
}

/* Fills out's slot for type from bubble b's memory per node. */
static void ma_stats_memnode(marcel_bubble_t *b, long *out)
{
	unsigned nodes = marcel_nbnodes();
	for (unsigned n = 0; n < MARCEL_STATS_MAX_NODES; n++) {
		size_t bytes = 0;
		if (b && n < nodes)
			(void)marcel_bubble_memory_on_node(b, n, &bytes);
		out[n] = (long)bytes;
	}
}

long *marcel_task_stats_ptr(marcel_t t, marcel_stats_type_t type)
{
	if (type != LAST_VP && type != LOAD && type != MEMNODE)
		return ma_stats_fail(EINVAL);
	if (!t && !(t = marcel_self()))
		return ma_stats_fail(EINVAL);
	struct ma_stats_block *blk = ma_stats_block();
	if (!blk)
		return NULL;
	long *out = &blk->v[type];
	long long v;
	int e = 0;
	switch (type) {
	case LAST_VP:
		e = marcel_task_stats_get(t, MARCEL_STATS_LAST_VP, &v);
		*out = (long)v;
		break;
	case LOAD:
		e = marcel_task_stats_get(t, MARCEL_STATS_LOAD, &v);
		*out = (long)v;
		break;
	case MEMNODE:
		/* Same liveness check as the other statistics. */
		e = marcel_task_stats_get(t, MARCEL_STATS_MEMORY, &v);
		if (!e)
			ma_stats_memnode(marcel_bubble_holding_task(t), out);
		break;
	}
	return e ? ma_stats_fail(e) : out;
}

long *marcel_bubble_stats_ptr(marcel_bubble_t *b, marcel_stats_type_t type)
{
	if (type != LAST_VP && type != LOAD && type != MEMNODE)
		return ma_stats_fail(EINVAL);
	long long v;
	/* Checks b (NULL, uninitialised) once for every type. */
	int e = marcel_bubble_stats_get(b, type == LOAD ? MARCEL_STATS_LOAD : MARCEL_STATS_LAST_VP, &v);
	if (e)
		return ma_stats_fail(e);
	struct ma_stats_block *blk = ma_stats_block();
	if (!blk)
		return NULL;
	long *out = &blk->v[type];
	if (type == MEMNODE)
		ma_stats_memnode(b, out);
	else
		*out = (long)v;
	return out;
}

int marcel_task_stats_put(marcel_t t, marcel_stats_type_t type, long value)
{
	if (type != LOAD || (!t && !(t = marcel_self())))
		return EINVAL;
	return marcel_task_stats_set(t, MARCEL_STATS_LOAD, value);
}

int marcel_task_stats_adjust(marcel_t t, marcel_stats_type_t type, long delta)
{
	if (type != LOAD || (!t && !(t = marcel_self())))
		return EINVAL;
	long long v;
	int e = marcel_task_stats_get(t, MARCEL_STATS_LOAD, &v);
	return e ? e : marcel_task_stats_set(t, MARCEL_STATS_LOAD, v + delta);
}

int marcel_attr_setinitbubble(marcel_attr_t *attr, struct marcel_bubble *b)
{
	return marcel_attr_setnaturalbubble(attr, b);
}

int marcel_attr_getinitbubble(const marcel_attr_t *attr, struct marcel_bubble **b)
{
	return marcel_attr_getnaturalbubble(attr, b);
}
