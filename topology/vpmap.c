/*
 * VPs on the level tree: which PU each VP serves, which VPs each item covers, binding a
 * worker to its PU, and the tree distance strategies use to prefer nearby items.
 */
#include <errno.h>
#include <stdlib.h>

#include "ma_topo_internal.h"

/* The logical index of the first PU of the unit'th core, or of the unit'th PU. */
static unsigned unit_first_pu(const struct ma_topo *t, unsigned unit, int per_pu)
{
	hwloc_obj_t core, pu;

	if (per_pu)
		return unit;
	core = hwloc_get_obj_by_type(t->hw, HWLOC_OBJ_CORE, unit);
	pu = hwloc_get_next_obj_inside_cpuset_by_type(t->hw, core->cpuset, HWLOC_OBJ_PU, NULL);
	return pu->logical_index;
}

/*
 * VP n serves unit n mod units (cores, or PUs with smt) in logical order, so that a VP
 * number tells where it runs. Each item gets the VPs below it as first_vp/nb_vps; that is
 * a range as long as there are no more VPs than units. With more, VPs wrap around and
 * first_vp is only the smallest VP below the item and nb_vps their count.
 */
int ma_topo_map_vps(struct ma_topo *t, unsigned nvp, int smt)
{
	int per_pu = smt || hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_CORE) <= 0;
	unsigned units = per_pu ? t->nb_pus : t->nb_cores;
	struct ma_level **pu_leaf;

	if (!nvp)
		nvp = units;
	pu_leaf = calloc(t->nb_pus, sizeof(*pu_leaf));
	t->vps = calloc(nvp, sizeof(*t->vps));
	if (!pu_leaf || !t->vps) {
		free(pu_leaf);
		return ENOMEM;
	}
	t->nb_vps = nvp;
	t->nb_units = units;

	/* PUs never have children, so an item carrying a PU is the deepest one holding it. */
	for (unsigned i = 0; i < t->nb_levels; i++)
		if (t->levels[i].kinds & MA_LEVEL_PU)
			pu_leaf[t->levels[i].first_pu] = &t->levels[i];

	for (unsigned vp = 0; vp < nvp; vp++) {
		struct ma_vp_map *map = &t->vps[vp];

		map->pu = unit_first_pu(t, vp % units, per_pu);
		map->pu_os = hwloc_get_obj_by_type(t->hw, HWLOC_OBJ_PU, map->pu)->os_index;
		map->leaf = pu_leaf[map->pu];
		/* Ascending vp: the first one reaching an item is its smallest. */
		for (struct ma_level *l = map->leaf; l; l = l->parent) {
			if (!l->nb_vps)
				l->first_vp = vp;
			l->nb_vps++;
		}
	}
	free(pu_leaf);
	return 0;
}

int ma_topo_bind_self(const struct ma_topo *t, unsigned vp)
{
	hwloc_obj_t pu;

	if (t->fake)
		return 0;
	if (vp >= t->nb_vps)
		return EINVAL;
	pu = hwloc_get_obj_by_type(t->hw, HWLOC_OBJ_PU, t->vps[vp].pu);
	if (!pu)
		return EINVAL;
	if (hwloc_set_cpubind(t->hw, pu->cpuset, HWLOC_CPUBIND_THREAD) < 0)
		return errno ? errno : EINVAL;
	return 0;
}

unsigned ma_topo_distance(const struct ma_level *a, const struct ma_level *b)
{
	unsigned dist = 0;

	while (a->depth > b->depth) {
		a = a->parent;
		dist++;
	}
	while (b->depth > a->depth) {
		b = b->parent;
		dist++;
	}
	while (a != b) {
		a = a->parent;
		b = b->parent;
		dist += 2;
	}
	return dist;
}
