/*
 * Human-readable dump of a loaded topology, for marcel-topo and for users checking what
 * MARCEL_TOPOLOGY / MARCEL_NVP gave them.
 */
#include <stdio.h>

#include "ma_topo_internal.h"

/* The kinds merged into the item besides the one naming it: "(Package, L3Cache)". */
static void print_merged(const struct ma_level *l, FILE *out)
{
	const char *sep = " (";

	for (unsigned kind = 1; kind <= MA_LEVEL_PU; kind <<= 1)
		if ((l->kinds & kind) && kind != l->kind) {
			fprintf(out, "%s%s", sep, ma_topo_kind_name(kind));
			sep = ", ";
		}
	if (sep[0] == ',')
		fputc(')', out);
}

static int vp_under(const struct ma_topo *t, unsigned vp, const struct ma_level *l)
{
	unsigned pu = t->vps[vp].pu;

	return pu >= l->first_pu && pu < l->first_pu + l->nb_pus;
}

/* The VPs below l as ranges; once VPs wrap around they are not one range ("VPs 1,17,33"). */
static void print_vps(const struct ma_topo *t, const struct ma_level *l, FILE *out)
{
	const char *sep = "";

	if (!l->nb_vps) {
		fputs("no VP", out);
		return;
	}
	fputs(l->nb_vps == 1 ? "VP " : "VPs ", out);
	for (unsigned vp = 0; vp < t->nb_vps; vp++) {
		unsigned last = vp;

		if (!vp_under(t, vp, l))
			continue;
		while (last + 1 < t->nb_vps && vp_under(t, last + 1, l))
			last++;
		if (last == vp)
			fprintf(out, "%s%u", sep, vp);
		else
			fprintf(out, "%s%u-%u", sep, vp, last);
		sep = ",";
		vp = last;
	}
}

static void print_item(const struct ma_topo *t, const struct ma_level *l, FILE *out)
{
	fprintf(out, "%*s%s", (int)(2 * l->depth), "", l->name);
	print_merged(l, out);
	if (l->nb_pus == 1)
		fprintf(out, "  [PU %u, ", l->first_pu);
	else
		fprintf(out, "  [PUs %u-%u, ", l->first_pu, l->first_pu + l->nb_pus - 1);
	print_vps(t, l, out);
	fputc(']', out);
	/* Only where a uniform subtree starts: repeating it on every descendant is noise. */
	if (t->nb_cpukinds > 1 && l->cpukind >= 0 && (!l->parent || l->parent->cpukind != l->cpukind)) {
		const struct ma_cpukind *kind = &t->cpukinds[l->cpukind];

		fprintf(out, "  kind %d eff %d%s%s", l->cpukind, kind->efficiency,
			kind->name[0] ? " " : "", kind->name);
	}
	fputc('\n', out);
}

/* The nearest item naming the VP's core, which is what a reader looks for. */
static const struct ma_level *vp_core(const struct ma_level *leaf)
{
	for (const struct ma_level *l = leaf; l; l = l->parent)
		if (l->kinds & MA_LEVEL_CORE)
			return l;
	return leaf;
}

void ma_topo_print(const struct ma_topo *t, FILE *out)
{
	for (unsigned i = 0; i < t->nb_levels; i++)
		print_item(t, &t->levels[i], out);

	fputs("VP map:\n", out);
	for (unsigned vp = 0; vp < t->nb_vps; vp++) {
		const struct ma_vp_map *map = &t->vps[vp];

		fprintf(out, "  VP%u -> PU%u (os %u) under %s\n", vp, map->pu, map->pu_os,
			vp_core(map->leaf)->name);
	}

	fprintf(out, "%u levels, %u PUs, %u cores, %u NUMA nodes, %u VPs, topology: %s\n",
		t->nb_levels, t->nb_pus, t->nb_cores, t->nb_numa, t->nb_vps, ma_topo_description(t));
}
