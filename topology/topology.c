/*
 * Loading a topology: option checks, where hwloc gets the machine from (this machine,
 * a synthetic description or an XML file), core kinds, then the level tree and the VP
 * map built by tree.c and vpmap.c.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ma_topo_internal.h"

/* Beyond this a VP count is a typo, not a machine. */
#define MA_MAX_VPS 4096

/* struct ma_topo has no field for the spec, so it rides along as an info of hwloc's root. */
#define MA_TOPO_INFO "MarcelTopology"

__attribute__((format(printf, 3, 4)))
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/*
 * hwloc wants PUs as the last synthetic level; "numa:4 core:4" is a natural way to ask
 * for 16 single-PU cores. Only an explicit type other than pu gets " pu:1": a bare
 * count ("2 2") lets hwloc guess the types itself. Attributes in parentheses may contain
 * spaces, so the last token is found outside them.
 */
static char *synthetic_with_pus(const char *spec)
{
	const char *tok = spec, *end;
	int paren = 0;
	size_t len = strlen(spec), typelen;
	char *out;

	for (const char *p = spec; *p; p++) {
		if (*p == '(')
			paren++;
		else if (*p == ')' && paren > 0)
			paren--;
		else if (!paren && isspace((unsigned char)*p) && p[1] && !isspace((unsigned char)p[1]))
			tok = p + 1;
	}
	while (isspace((unsigned char)*tok))
		tok++;
	for (end = tok; *end && *end != ':' && *end != '(' && !isspace((unsigned char)*end); end++)
		;
	typelen = (size_t)(end - tok);
	out = malloc(len + sizeof(" pu:1"));
	if (!out)
		return NULL;
	memcpy(out, spec, len + 1);
	if (*end == ':' && typelen && !isdigit((unsigned char)*tok)
	    && !(typelen >= 2 && strncasecmp(tok, "pu", 2) == 0))
		strcat(out, " pu:1");
	return out;
}

/* What the topology describes, as recorded by load_hwloc. */
const char *ma_topo_description(const struct ma_topo *t)
{
	const char *desc = NULL;

	if (t->hw)
		desc = hwloc_obj_get_info_by_name(hwloc_get_root_obj(t->hw), MA_TOPO_INFO);
	if (desc)
		return desc;
	return t->fake ? "hwloc environment override" : "this machine";
}

static int add_description(struct ma_topo *t, const char *backend, const char *what, int quoted)
{
	const char *fmt = quoted ? "%s \"%s\"" : "%s %s";
	size_t len = (size_t)snprintf(NULL, 0, fmt, backend, what) + 1;
	char *desc = malloc(len);
	int ret = 0;

	if (!desc)
		return ENOMEM;
	snprintf(desc, len, fmt, backend, what);
	if (hwloc_obj_add_info(hwloc_get_root_obj(t->hw), MA_TOPO_INFO, desc) < 0)
		ret = ENOMEM;
	free(desc);
	return ret;
}

/* Sets up and loads t->hw from the spec; records whether it describes this machine. */
/* A process started bound to part of the machine (mpirun --bind-to, taskset, a batch
 * system's cpuset) sees that part only: its VPs, one per core, then take its cores, not
 * those of the process beside it, which has its own VP 0 on the machine's first core. */
static void restrict_to_binding(struct ma_topo *t, hwloc_const_cpuset_t within)
{
	hwloc_bitmap_t bound = hwloc_bitmap_alloc();
	if (bound && within)
		hwloc_bitmap_and(bound, within, hwloc_topology_get_topology_cpuset(t->hw));
	else if (bound && hwloc_get_cpubind(t->hw, bound, HWLOC_CPUBIND_PROCESS))
		hwloc_bitmap_zero(bound);
	if (bound && !hwloc_bitmap_iszero(bound) &&
	    !hwloc_bitmap_isincluded(hwloc_topology_get_topology_cpuset(t->hw), bound))
		hwloc_topology_restrict(t->hw, bound, 0);
	hwloc_bitmap_free(bound);
}

static int load_hwloc(struct ma_topo *t, const char *spec, hwloc_const_cpuset_t within, char *err, size_t errlen)
{
	char *synth;
	int ret;

	if (hwloc_topology_init(&t->hw) < 0) {
		t->hw = NULL;
		seterr(err, errlen, "cannot initialize hwloc: %s", strerror(errno));
		return ENOMEM;
	}
	hwloc_topology_set_io_types_filter(t->hw, HWLOC_TYPE_FILTER_KEEP_NONE);

	if (spec && spec[0] == '@') {
		const char *path = spec + 1;
		FILE *f;

		if (!*path) {
			seterr(err, errlen, "\"@\" must be followed by the path of an hwloc XML file");
			return EINVAL;
		}
		/* hwloc reports a missing and a malformed file alike; tell them apart. */
		f = fopen(path, "r");
		if (!f) {
			seterr(err, errlen, "cannot read topology file %s: %s", path, strerror(errno));
			return ENOENT;
		}
		fclose(f);
		if (hwloc_topology_set_xml(t->hw, path) < 0 || hwloc_topology_load(t->hw) < 0) {
			seterr(err, errlen, "%s is not a valid hwloc XML topology", path);
			return EINVAL;
		}
		t->fake = 1;
		ret = add_description(t, "xml", path, 0);
		if (ret)
			seterr(err, errlen, "out of memory");
		return ret;
	}

	if (spec) {
		synth = synthetic_with_pus(spec);
		if (!synth) {
			seterr(err, errlen, "out of memory");
			return ENOMEM;
		}
		if (hwloc_topology_set_synthetic(t->hw, synth) < 0 || hwloc_topology_load(t->hw) < 0) {
			seterr(err, errlen,
			       "\"%s\": not a valid hwloc synthetic description"
			       " (expected e.g. \"pack:2 numa:2 core:4 pu:2\") or @file.xml", spec);
			free(synth);
			return EINVAL;
		}
		t->fake = 1;
		ret = add_description(t, "synthetic", synth, 1);
		free(synth);
		if (ret)
			seterr(err, errlen, "out of memory");
		return ret;
	}

	if (hwloc_topology_load(t->hw) < 0) {
		ret = errno ? errno : EINVAL;
		seterr(err, errlen, "hwloc cannot read this machine's topology: %s", strerror(ret));
		return ret;
	}
	/* HWLOC_XMLFILE or HWLOC_SYNTHETIC in the environment make hwloc describe another machine. */
	t->fake = !hwloc_topology_is_thissystem(t->hw);
	if (!t->fake)
		restrict_to_binding(t, within);
	return 0;
}

/* A short label for a kind: the attribute that tells kinds apart best, if hwloc has one. */
static void cpukind_name(char *name, size_t len, unsigned nr_infos, const struct hwloc_info_s *infos)
{
	static const char *const preferred[] = { "CoreType", "FrequencyMaxMHz" };

	name[0] = '\0';
	for (size_t p = 0; p < sizeof(preferred) / sizeof(preferred[0]); p++)
		for (unsigned i = 0; i < nr_infos; i++)
			if (strcmp(infos[i].name, preferred[p]) == 0) {
				snprintf(name, len, "%s=%s", infos[i].name, infos[i].value);
				return;
			}
	if (nr_infos)
		snprintf(name, len, "%s=%s", infos[0].name, infos[0].value);
}

static int load_cpukinds(struct ma_topo *t)
{
	int nr = hwloc_cpukinds_get_nr(t->hw, 0);

	if (nr <= 0)
		return 0;
	t->cpukinds = calloc((size_t)nr, sizeof(*t->cpukinds));
	if (!t->cpukinds)
		return ENOMEM;
	t->nb_cpukinds = (unsigned)nr;
	for (unsigned k = 0; k < t->nb_cpukinds; k++) {
		struct ma_cpukind *kind = &t->cpukinds[k];
		struct hwloc_info_s *infos = NULL;
		unsigned nr_infos = 0;

		kind->cpuset = hwloc_bitmap_alloc();
		if (!kind->cpuset)
			return ENOMEM;
		if (hwloc_cpukinds_get_info(t->hw, k, kind->cpuset, &kind->efficiency,
					    &nr_infos, &infos, 0) < 0)
			return errno ? errno : EINVAL;
		cpukind_name(kind->name, sizeof(kind->name), nr_infos, infos);
	}
	return 0;
}

static int count_objects(struct ma_topo *t)
{
	int pus = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_PU);
	int cores = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_CORE);
	int numa = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_NUMANODE);

	if (pus <= 0)
		return EINVAL;
	t->nb_pus = (unsigned)pus;
	/* Some descriptions (and some hosts) have no cores: each PU is then a core. */
	t->nb_cores = cores > 0 ? (unsigned)cores : t->nb_pus;
	t->nb_numa = numa > 0 ? (unsigned)numa : 0;
	return 0;
}

int ma_topo_load(struct ma_topo *t, const struct ma_topo_options *opt, char *err, size_t errlen)
{
	int ret;

	memset(t, 0, sizeof(*t));
	seterr(err, errlen, "%s", "");
	if (!opt) {
		seterr(err, errlen, "no topology options given");
		return EINVAL;
	}
	if (opt->maxarity < 2) {
		seterr(err, errlen, "maximum arity %u: must be at least 2", opt->maxarity);
		return EINVAL;
	}
	if (opt->nvp > MA_MAX_VPS) {
		seterr(err, errlen, "%u VPs: at most %u are supported", opt->nvp, MA_MAX_VPS);
		return EINVAL;
	}
	if (opt->spec && !opt->spec[0]) {
		seterr(err, errlen,
		       "empty topology description (expected e.g. \"pack:2 numa:2 core:4 pu:2\") or @file.xml");
		return EINVAL;
	}

	/* "DESCRIPTION; cpukinds=...; restrict=...": kinds and a subset of PUs given by hand
	 * (kinds.c); an empty description before the ';' is this machine. */
	size_t base_len;
	const char *kinds = ma_topo_kinds_part(opt->spec, &base_len);
	char *base = opt->spec && base_len ? strndup(opt->spec, base_len) : NULL;
	if (opt->spec && base_len && !base) {
		seterr(err, errlen, "out of memory");
		return ENOMEM;
	}
	while (base && base_len && base[base_len - 1] == ' ')
		base[--base_len] = '\0';
	ret = load_hwloc(t, base, opt->within, err, errlen);
	free(base);
	if (!ret) {
		ret = count_objects(t);
		if (ret)
			seterr(err, errlen, "the topology has no PU");
	}
	if (!ret && kinds) {
		int restricted;
		ret = ma_topo_apply_clauses(t, kinds, &restricted, err, errlen);
		if (!ret && restricted)
			ret = count_objects(t);
	}
	if (!ret) {
		ret = load_cpukinds(t);
		if (ret)
			seterr(err, errlen, "cannot read the core kinds: %s", strerror(ret));
	}
	if (!ret) {
		ret = ma_topo_build_levels(t, opt->maxarity);
		if (!ret)
			ret = ma_topo_map_vps(t, opt->nvp, opt->smt);
		if (ret)
			seterr(err, errlen, "%s", strerror(ret));
	}
	if (ret)
		ma_topo_free(t);
	return ret;
}

void ma_topo_free(struct ma_topo *t)
{
	for (unsigned i = 0; t->levels && i < t->nb_levels; i++) {
		hwloc_bitmap_free(t->levels[i].cpuset);
		free(t->levels[i].children);
	}
	free(t->levels);
	for (unsigned k = 0; t->cpukinds && k < t->nb_cpukinds; k++)
		hwloc_bitmap_free(t->cpukinds[k].cpuset);
	free(t->cpukinds);
	free(t->vps);
	if (t->hw)
		hwloc_topology_destroy(t->hw);
	memset(t, 0, sizeof(*t));
}
