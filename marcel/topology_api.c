/* Public read-only view of the topology the runtime loaded. */
#include <errno.h>
#include <string.h>
#include "ma_sched.h"

unsigned marcel_topo_nbitems(void)
{
	return ma_rt.running ? ma_rt.topo.nb_levels : 0;
}

int marcel_topo_get_item(unsigned id, struct marcel_topo_item *out)
{
	if (!ma_rt.running)
		return EPERM;
	if (!out || id >= ma_rt.topo.nb_levels)
		return EINVAL;
	const struct ma_level *l = &ma_rt.topo.levels[id];
	memset(out, 0, sizeof(*out));
	out->id = l->id;
	out->depth = l->depth;
	out->parent = l->parent ? (int)l->parent->id : -1;
	out->arity = l->arity;
	out->kind = l->kind;
	out->kinds = l->kinds;
	snprintf(out->name, sizeof(out->name), "%s", l->name);
	out->first_pu = l->first_pu;
	out->nb_pus = l->nb_pus;
	out->first_vp = l->first_vp;
	out->nb_vps = l->nb_vps;
	out->numa = l->numa;
	out->cpukind = l->cpukind;
	return 0;
}

int marcel_topo_vp_item(unsigned vp)
{
	if (!ma_rt.running || vp >= ma_rt.nb_vps)
		return -1;
	return (int)ma_rt.topo.vps[vp].leaf->id;
}

int marcel_topo_vp_ancestor(unsigned vp, unsigned kind)
{
	if (!ma_rt.running || vp >= ma_rt.nb_vps)
		return -1;
	for (const struct ma_level *l = ma_rt.topo.vps[vp].leaf; l; l = l->parent)
		if (l->kinds & kind)
			return (int)l->id;
	return -1;
}

unsigned marcel_topo_nbcpukinds(void)
{
	return ma_rt.running ? ma_rt.topo.nb_cpukinds : 0;
}

int marcel_topo_is_fake(void)
{
	return ma_rt.running && ma_rt.topo.fake;
}

int marcel_topo_fprint(FILE *out)
{
	if (!ma_rt.running)
		return EPERM;
	if (!out)
		return EINVAL;
	ma_topo_print(&ma_rt.topo, out);
	return 0;
}
