/* The backends' view of a loaded topology (ma_hw_topo.h). */
#include <stdlib.h>
#include <string.h>
#include "ma_hw_topo.h"

void ma_hw_env_from_topo(struct ma_hw_env *env, struct ma_hw_kind *kinds, const struct ma_topo *t)
{
	const char *s = getenv("MARCEL_HWPRIO_SYSFS"), *r = getenv("MARCEL_HWPRIO_RESCTRL");
	*env = (struct ma_hw_env){ .sysfs = s && *s ? s : "/sys", .resctrl = r && *r ? r : "/sys/fs/resctrl" };
	if (!t)
		return;
	env->bound = !t->fake;
	unsigned n = t->nb_cpukinds < MA_HW_MAX_KINDS ? t->nb_cpukinds : MA_HW_MAX_KINDS;
	for (unsigned k = 0; k < n; k++) {
		struct ma_hw_kind *hk = &kinds[k];
		memset(hk, 0, sizeof(*hk));
		hk->efficiency = t->cpukinds[k].efficiency;
		unsigned bits = 8 * sizeof(hk->cpus[0]);
		int c;
		hwloc_bitmap_foreach_begin(c, t->cpukinds[k].cpuset)
			if (c < MA_HW_MAX_CPUS)
				hk->cpus[(unsigned)c / bits] |= 1UL << ((unsigned)c % bits);
		hwloc_bitmap_foreach_end();
	}
	env->nb_kinds = n;
	env->kinds = kinds;
}

int ma_hw_topo_item(const struct ma_topo *t, unsigned v, enum ma_level_kind k)
{
	for (const struct ma_level *l = t->vps[v].leaf; l; l = l->parent)
		if (l->kinds & k)
			return (int)l->index;
	return -1;
}

struct ma_hw_target ma_hw_target_of(const struct ma_topo *t, unsigned v, pid_t tid)
{
	const struct ma_level *leaf = t->vps[v].leaf;
	return (struct ma_hw_target){
		.vp = v,
		.tid = tid,
		.cpu = t->fake ? -1 : (int)t->vps[v].pu_os,
		.core = ma_hw_topo_item(t, v, MA_LEVEL_CORE),
		.cache = ma_hw_topo_item(t, v, MA_LEVEL_L3),
		.node = leaf ? leaf->numa : -1,
		.kind = leaf ? leaf->cpukind : -1,
	};
}
