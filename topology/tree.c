/*
 * hwloc tree -> ma_topo.levels: keep the scheduler-relevant objects, merge chains of
 * identical cpusets, mark NUMA nodes, bound the arity, then flatten in pre-order.
 *
 * The tree is first built out of temporary nodes because the number of items is only
 * known once merging and arity grouping are done, and levels[] must be allocated once
 * (items point at each other).
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ma_topo_internal.h"

struct node {
	unsigned kinds;
	hwloc_bitmap_t cpuset;   /* owned until handed over to the level */
	struct node **children;
	unsigned arity;
};

struct objvec {
	hwloc_obj_t *v;
	unsigned n, cap;
};

/* Name precedence: the first kind of this list that an item carries names it. */
static const struct {
	enum ma_level_kind kind;
	const char *name;
} kind_names[] = {
	{ MA_LEVEL_MACHINE, "Machine" },
	{ MA_LEVEL_NUMA, "NUMANode" },
	{ MA_LEVEL_PACKAGE, "Package" },
	{ MA_LEVEL_DIE, "Die" },
	{ MA_LEVEL_CORE, "Core" },
	{ MA_LEVEL_L3, "L3Cache" },
	{ MA_LEVEL_L2, "L2Cache" },
	{ MA_LEVEL_GROUP, "Group" },
	{ MA_LEVEL_PU, "PU" },
};
#define NB_KIND_NAMES (sizeof(kind_names) / sizeof(kind_names[0]))

/* Names are hwloc's type names, so that items read like lstopo output. */
const char *ma_topo_kind_name(enum ma_level_kind kind)
{
	for (size_t k = 0; k < NB_KIND_NAMES; k++)
		if (kind_names[k].kind == kind)
			return kind_names[k].name;
	return "?";
}

/* 0 for the types we do not keep (L1, instruction caches, L4/L5, memory-side ...). */
static unsigned kind_of(hwloc_obj_type_t type)
{
	switch (type) {
	case HWLOC_OBJ_MACHINE: return MA_LEVEL_MACHINE;
	case HWLOC_OBJ_PACKAGE: return MA_LEVEL_PACKAGE;
	case HWLOC_OBJ_DIE: return MA_LEVEL_DIE;
	case HWLOC_OBJ_L3CACHE: return MA_LEVEL_L3;
	case HWLOC_OBJ_L2CACHE: return MA_LEVEL_L2;
	case HWLOC_OBJ_GROUP: return MA_LEVEL_GROUP;
	case HWLOC_OBJ_CORE: return MA_LEVEL_CORE;
	case HWLOC_OBJ_PU: return MA_LEVEL_PU;
	default: return 0;
	}
}

static int objvec_push(struct objvec *vec, hwloc_obj_t obj)
{
	if (vec->n == vec->cap) {
		unsigned cap = vec->cap ? 2 * vec->cap : 8;
		hwloc_obj_t *v = realloc(vec->v, cap * sizeof(*v));
		if (!v)
			return ENOMEM;
		vec->v = v;
		vec->cap = cap;
	}
	vec->v[vec->n++] = obj;
	return 0;
}

/*
 * The kept objects right below obj, in logical order, looking through the objects we
 * skip. Objects without PUs (possible once hwloc removed disallowed ones) would give
 * items nothing can run on.
 */
static int collect_kept(hwloc_obj_t obj, struct objvec *vec)
{
	for (unsigned i = 0; i < obj->arity; i++) {
		hwloc_obj_t child = obj->children[i];
		int err;

		if (!child->cpuset || hwloc_bitmap_iszero(child->cpuset))
			continue;
		if (kind_of(child->type))
			err = objvec_push(vec, child);
		else
			err = collect_kept(child, vec);
		if (err)
			return err;
	}
	return 0;
}

static void node_free(struct node *n)
{
	if (!n)
		return;
	for (unsigned i = 0; i < n->arity; i++)
		node_free(n->children[i]);
	free(n->children);
	hwloc_bitmap_free(n->cpuset);
	free(n);
}

static struct node *node_new(unsigned kinds, hwloc_const_bitmap_t cpuset)
{
	struct node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->kinds = kinds;
	n->cpuset = hwloc_bitmap_dup(cpuset);
	if (!n->cpuset) {
		free(n);
		return NULL;
	}
	return n;
}

static struct node *node_build(hwloc_obj_t obj)
{
	struct objvec kept = { 0 };
	struct node *n = node_new(kind_of(obj->type), obj->cpuset);

	if (!n)
		return NULL;
	if (collect_kept(obj, &kept))
		goto fail;
	/* A lone child covering the same PUs would be a run queue with the same scope. */
	while (kept.n == 1 && hwloc_bitmap_isequal(kept.v[0]->cpuset, obj->cpuset)) {
		obj = kept.v[0];
		n->kinds |= kind_of(obj->type);
		kept.n = 0;
		if (collect_kept(obj, &kept))
			goto fail;
	}
	if (kept.n) {
		n->children = calloc(kept.n, sizeof(*n->children));
		if (!n->children)
			goto fail;
		for (unsigned i = 0; i < kept.n; i++) {
			n->children[i] = node_build(kept.v[i]);
			if (!n->children[i])
				goto fail;
			n->arity++;
		}
	}
	free(kept.v);
	return n;

fail:
	free(kept.v);
	node_free(n);
	return NULL;
}

/*
 * Marks the item whose cpuset is exactly the NUMA node's. hwloc 2 attaches a NUMA node
 * to an object with the same cpuset (it inserts a Group when none exists), so a search
 * from the root finds it; a CPU-less node, or one whose cpuset matches no item, marks
 * nothing (items still get their `numa` by inclusion).
 */
static void mark_numa(struct node *n, hwloc_const_bitmap_t numa_set)
{
	while (n) {
		struct node *next = NULL;

		if (hwloc_bitmap_isequal(n->cpuset, numa_set)) {
			n->kinds |= MA_LEVEL_NUMA;
			return;
		}
		for (unsigned i = 0; i < n->arity && !next; i++)
			if (hwloc_bitmap_isincluded(numa_set, n->children[i]->cpuset))
				next = n->children[i];
		n = next;
	}
}

/*
 * Wraps the children of n into groups of at most maxarity, bottom-up (a level of groups,
 * then groups of groups...) so that every child stays at the same depth. Chunks are
 * contiguous and balanced; a chunk of one child is left unwrapped because a group with a
 * single child would duplicate that child's run queue (only happens with maxarity 2).
 */
static int bound_arity(struct node *n, unsigned maxarity)
{
	while (n->arity > maxarity) {
		unsigned nb = (n->arity + maxarity - 1) / maxarity;
		unsigned base = n->arity / nb, extra = n->arity % nb;
		struct node **groups = calloc(nb, sizeof(*groups));
		unsigned next = 0;

		if (!groups)
			return ENOMEM;
		for (unsigned g = 0; g < nb; g++) {
			unsigned size = base + (g < extra);
			struct node *grp;
			int ok;

			if (size == 1) {
				groups[g] = n->children[next++];
				continue;
			}
			grp = node_new(MA_LEVEL_GROUP, n->children[next]->cpuset);
			groups[g] = grp;
			if (grp)
				grp->children = calloc(size, sizeof(*grp->children));
			ok = grp && grp->children;
			for (unsigned k = 0; ok && k < size; k++) {
				struct node *child = n->children[next++];

				grp->children[grp->arity++] = child;
				ok = hwloc_bitmap_or(grp->cpuset, grp->cpuset, child->cpuset) == 0;
			}
			if (!ok) {
				/* n->children still lists every child: free only the new shells. */
				for (unsigned k = 0; k <= g; k++)
					if (groups[k] && base + (k < extra) > 1) {
						groups[k]->arity = 0;
						node_free(groups[k]);
					}
				free(groups);
				return ENOMEM;
			}
		}
		free(n->children);
		n->children = groups;
		n->arity = nb;
	}
	for (unsigned i = 0; i < n->arity; i++) {
		int err = bound_arity(n->children[i], maxarity);

		if (err)
			return err;
	}
	return 0;
}

static unsigned node_count(const struct node *n)
{
	unsigned count = 1;

	for (unsigned i = 0; i < n->arity; i++)
		count += node_count(n->children[i]);
	return count;
}

static unsigned pu_logical(hwloc_topology_t hw, int os_index)
{
	hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(hw, (unsigned)os_index);

	assert(pu);
	return pu->logical_index;
}

/* The containing NUMA node with the fewest PUs, so that nested memory tiers pick the nearest. */
static int item_numa(hwloc_topology_t hw, hwloc_const_bitmap_t cpuset)
{
	hwloc_obj_t numa = NULL, best = NULL;

	while ((numa = hwloc_get_next_obj_by_type(hw, HWLOC_OBJ_NUMANODE, numa)))
		if (numa->cpuset && !hwloc_bitmap_iszero(numa->cpuset)
		    && hwloc_bitmap_isincluded(cpuset, numa->cpuset)
		    && (!best || hwloc_bitmap_weight(numa->cpuset) < hwloc_bitmap_weight(best->cpuset)))
			best = numa;
	return best ? (int)best->logical_index : -1;
}

static int item_cpukind(const struct ma_topo *t, hwloc_const_bitmap_t cpuset)
{
	for (unsigned k = 0; k < t->nb_cpukinds; k++)
		if (hwloc_bitmap_isincluded(cpuset, t->cpukinds[k].cpuset))
			return (int)k;
	return -1;
}

struct flatten {
	struct ma_topo *t;
	unsigned next_id;
	unsigned counters[NB_KIND_NAMES];
};

/* Pre-order copy of n into levels[]; takes n's cpuset. */
static int flatten(struct flatten *f, struct node *n, struct ma_level *parent)
{
	struct ma_topo *t = f->t;
	struct ma_level *l = &t->levels[f->next_id];
	unsigned k;

	l->id = f->next_id++;
	l->depth = parent ? parent->depth + 1 : 0;
	l->parent = parent;
	l->kinds = n->kinds;
	l->cpuset = n->cpuset;
	n->cpuset = NULL;
	if (l->depth > t->max_depth)
		t->max_depth = l->depth;

	for (k = 0; k < NB_KIND_NAMES - 1 && !(n->kinds & kind_names[k].kind); k++)
		;
	l->kind = kind_names[k].kind;
	l->index = f->counters[k]++;
	if (l->kind == MA_LEVEL_MACHINE)
		snprintf(l->name, sizeof(l->name), "machine");
	else
		snprintf(l->name, sizeof(l->name), "%s%u", kind_names[k].name, l->index);

	l->first_pu = pu_logical(t->hw, hwloc_bitmap_first(l->cpuset));
	l->nb_pus = (unsigned)hwloc_bitmap_weight(l->cpuset);
	/* hwloc numbers PUs in tree order, so any subtree (and any group of siblings) is a range. */
	assert(pu_logical(t->hw, hwloc_bitmap_last(l->cpuset)) == l->first_pu + l->nb_pus - 1);
	l->numa = item_numa(t->hw, l->cpuset);
	l->cpukind = item_cpukind(t, l->cpuset);

	if (n->arity) {
		l->children = calloc(n->arity, sizeof(*l->children));
		if (!l->children)
			return ENOMEM;
	}
	for (unsigned i = 0; i < n->arity; i++) {
		int err;

		l->children[l->arity++] = &t->levels[f->next_id];
		err = flatten(f, n->children[i], l);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Fills t->levels, nb_levels and max_depth from t->hw (and item cpukinds from
 * t->cpukinds, which must be loaded first). On failure what was allocated stays in t
 * for ma_topo_free.
 */
int ma_topo_build_levels(struct ma_topo *t, unsigned maxarity)
{
	struct flatten f = { .t = t };
	hwloc_obj_t numa = NULL;
	struct node *root;
	int err;

	root = node_build(hwloc_get_root_obj(t->hw));
	if (!root)
		return ENOMEM;
	while ((numa = hwloc_get_next_obj_by_type(t->hw, HWLOC_OBJ_NUMANODE, numa)))
		if (numa->cpuset && !hwloc_bitmap_iszero(numa->cpuset))
			mark_numa(root, numa->cpuset);
	err = bound_arity(root, maxarity);
	if (!err) {
		unsigned count = node_count(root);

		t->levels = calloc(count, sizeof(*t->levels));
		if (!t->levels)
			err = ENOMEM;
		else {
			t->nb_levels = count;
			err = flatten(&f, root, NULL);
		}
	}
	node_free(root);
	return err;
}
