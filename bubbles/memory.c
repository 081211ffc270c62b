/*
 * Memory attached to entities, per NUMA node, and allocation on a node.
 *
 * Where attached bytes live: memory from marcel_malloc_on_node() is counted on the node it
 * was allocated for (on a fake topology that is the only way to know); other ranges are
 * located with hwloc (hwloc_get_area_memlocation), split evenly over the nodes it reports
 * when there are several. The location is taken once, at attach time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "ma_bubble.h"

/* Ranges allocated by marcel_malloc_on_node, so attach knows their node. */
struct ma_nodealloc {
	struct ma_nodealloc *next;
	char *addr;
	size_t len;
	unsigned node;
};
static ma_spinlock_t ma_nodealloc_lock;
static struct ma_nodealloc *ma_nodeallocs;

unsigned marcel_nbnodes(void)
{
	if (!ma_rt.running)
		return 0;
	return ma_rt.topo.nb_numa ? ma_rt.topo.nb_numa : 1;
}

static hwloc_obj_t ma_numa_obj(unsigned node)
{
	return hwloc_get_obj_by_type(ma_rt.topo.hw, HWLOC_OBJ_NUMANODE, node);
}

void *marcel_malloc_on_node(size_t size, unsigned node)
{
	if (!ma_rt.running || !size || node >= marcel_nbnodes()) {
		errno = EINVAL;
		return NULL;
	}
	struct ma_nodealloc *a = malloc(sizeof(*a));
	if (!a) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = NULL;
	hwloc_obj_t obj = ma_numa_obj(node);
	if (!ma_rt.topo.fake && obj)
		p = hwloc_alloc_membind(ma_rt.topo.hw, size, obj->nodeset, HWLOC_MEMBIND_BIND,
					HWLOC_MEMBIND_BYNODESET);
	if (!p)
		/* Binding unsupported (or a fake machine): plain pages, still accounted there. */
		p = hwloc_alloc(ma_rt.topo.hw, size);
	if (!p) {
		free(a);
		errno = ENOMEM;
		return NULL;
	}
	a->addr = p;
	a->len = size;
	a->node = node;
	ma_spin_lock(&ma_nodealloc_lock);
	a->next = ma_nodeallocs;
	ma_nodeallocs = a;
	ma_spin_unlock(&ma_nodealloc_lock);
	return p;
}

void marcel_free_on_node(void *ptr, size_t size)
{
	if (!ptr)
		return;
	ma_spin_lock(&ma_nodealloc_lock);
	for (struct ma_nodealloc **p = &ma_nodeallocs; *p; p = &(*p)->next)
		if ((*p)->addr == ptr) {
			struct ma_nodealloc *a = *p;
			*p = a->next;
			free(a);
			break;
		}
	ma_spin_unlock(&ma_nodealloc_lock);
	if (ma_rt.running)
		hwloc_free(ma_rt.topo.hw, ptr, size);
}

/* Bytes of [addr, addr+len) per node, into out (nb entries). */
static void ma_locate(char *addr, size_t len, size_t *out, unsigned nb)
{
	size_t left = len;
	ma_spin_lock(&ma_nodealloc_lock);
	for (struct ma_nodealloc *a = ma_nodeallocs; a; a = a->next) {
		char *lo = addr > a->addr ? addr : a->addr;
		char *hi = addr + len < a->addr + a->len ? addr + len : a->addr + a->len;
		if (lo < hi && a->node < nb) {
			out[a->node] += (size_t)(hi - lo);
			left -= (size_t)(hi - lo);
		}
	}
	ma_spin_unlock(&ma_nodealloc_lock);
	if (!left)
		return;
	hwloc_bitmap_t set = hwloc_bitmap_alloc();
	unsigned n = 0;
	if (set && !ma_rt.topo.fake &&
	    !hwloc_get_area_memlocation(ma_rt.topo.hw, addr, len, set, HWLOC_MEMBIND_BYNODESET))
		n = (unsigned)hwloc_bitmap_weight(set);
	if (n) {
		unsigned i = 0;
		hwloc_obj_t obj = NULL;
		while ((obj = hwloc_get_next_obj_by_type(ma_rt.topo.hw, HWLOC_OBJ_NUMANODE, obj)))
			if (hwloc_bitmap_isincluded(obj->nodeset, set) && obj->logical_index < nb) {
				out[obj->logical_index] += left / n + (i++ < left % n);
			}
	} else {
		/* Unknown (not touched yet, or a fake machine): the first node, as the kernel
		 * would place it on a single-node machine. */
		out[0] += left;
	}
	hwloc_bitmap_free(set);
}

static int ma_attach(struct ma_bubble *b, struct ma_entity *e, void *addr, size_t len)
{
	(void)e;
	unsigned nb = marcel_nbnodes();
	struct ma_memrange *r = calloc(1, sizeof(*r) + nb * sizeof(size_t));
	if (!r)
		return ENOMEM;
	r->addr = addr;
	r->len = len;
	r->node_bytes_len = nb;
	ma_locate(addr, len, r->node_bytes, nb);
	ma_spin_lock(&b->hold.lock);
	r->next = b->ranges;
	b->ranges = r;
	ma_spin_unlock(&b->hold.lock);
	return 0;
}

int marcel_bubble_attach_memory(marcel_bubble_t *pub, void *addr, size_t len)
{
	struct ma_bubble *b = ma_bubble_get(pub);
	if (!b || !addr || !len)
		return EINVAL;
	if (!ma_rt.running)
		return EPERM;
	return ma_attach(b, &b->e, addr, len);
}

int marcel_bubble_detach_memory(marcel_bubble_t *pub, void *addr, size_t len)
{
	struct ma_bubble *b = ma_bubble_get(pub);
	if (!b || !addr)
		return EINVAL;
	struct ma_memrange *found = NULL;
	ma_spin_lock(&b->hold.lock);
	for (struct ma_memrange **p = &b->ranges; *p; p = &(*p)->next)
		if ((*p)->addr == addr && (*p)->len == len) {
			found = *p;
			*p = found->next;
			break;
		}
	ma_spin_unlock(&b->hold.lock);
	if (!found)
		return EINVAL;
	free(found);
	return 0;
}

int marcel_task_attach_memory(marcel_t t, void *addr, size_t len)
{
	if (!t || !ma_task_valid(t) || !addr || !len)
		return EINVAL;
	if (!ma_rt.running)
		return EPERM;
	/* A thread's memory is its bubble's: strategies move bubbles. */
	struct ma_bubble *b = ma_entity_parent(&t->e);
	if (!b)
		return ESRCH;
	return ma_attach(b, &t->e, addr, len);
}

int marcel_bubble_memory_on_node(marcel_bubble_t *pub, unsigned node, size_t *bytes)
{
	struct ma_bubble *b = ma_bubble_get(pub);
	if (!b || !bytes || node >= marcel_nbnodes())
		return EINVAL;
	size_t per[MARCEL_NBMAXVPS] = { 0 };
	struct ma_stats s;
	ma_entity_stats(&b->e, &s, per);
	*bytes = per[node];
	return 0;
}

int ma_entity_preferred_node(struct ma_entity *e)
{
	if (e->type != MA_BUBBLE_ENTITY)
		return -1;
	size_t per[MARCEL_NBMAXVPS] = { 0 };
	struct ma_stats s;
	ma_entity_stats(e, &s, per);
	int best = -1;
	size_t most = 0;
	for (unsigned n = 0; n < marcel_nbnodes(); n++)
		if (per[n] > most) {
			most = per[n];
			best = (int)n;
		}
	return best;
}

void ma_bubble_memory_free(struct ma_bubble *b)
{
	while (b->ranges) {
		struct ma_memrange *r = b->ranges;
		b->ranges = r->next;
		free(r);
	}
}
