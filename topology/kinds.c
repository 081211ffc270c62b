/*
 * Core kinds given by hand: the "; cpukinds=" part of a topology description. Synthetic
 * descriptions have no kinds, and this machine may have one kind where a test or an
 * emulation wants two. The kinds are registered with hwloc (hwloc_cpukinds_register), so
 * everything after the load reads them as it reads the kinds hwloc finds on a hybrid
 * machine or in an XML file.
 *
 *   "pack:4 core:4; cpukinds=1-3,5-7,9-11,13-15@1150/0,4,8,12@2300"
 *
 * Kinds are separated by '/', from the least to the most performant (hwloc's efficiency
 * rank 0, 1, ...). Each is a list of PU logical indexes and ranges, with an optional
 * "@MHZ" that becomes its FrequencyMaxMHz info. Every PU belongs to exactly one kind.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ma_topo_internal.h"

#define MA_KINDS_KEY "cpukinds="
#define MA_KINDS_MAX 8

__attribute__((format(printf, 3, 4)))
static int kinds_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return EINVAL;
}

const char *ma_topo_kinds_part(const char *spec, size_t *base_len)
{
	const char *semi = spec ? strchr(spec, ';') : NULL;

	*base_len = spec ? (semi ? (size_t)(semi - spec) : strlen(spec)) : 0;
	return semi ? semi + 1 : NULL;
}

/* One kind's PU list "a-b,c,...[@MHZ]" up to `end`: the PUs' OS cpuset into set (with the
 * PUs already taken checked in taken), its frequency into *mhz (0: none). */
static int parse_kind(hwloc_topology_t hw, const char *s, const char *end, unsigned nb_pus, hwloc_bitmap_t set,
		      hwloc_bitmap_t taken, unsigned long *mhz, char *err, size_t errlen)
{
	const char *at = memchr(s, '@', (size_t)(end - s)), *p = s, *list_end = at ? at : end;

	*mhz = 0;
	if (at) {
		char *e;
		*mhz = strtoul(at + 1, &e, 10);
		if (e == at + 1 || e != end || !*mhz || *mhz > 100000)
			return kinds_err(err, errlen, "cpukinds: \"%.*s\": expected a frequency in MHz after '@' "
				"(e.g. @2300)", (int)(end - s), s);
	}
	if (p == list_end)
		return kinds_err(err, errlen, "cpukinds: an empty kind (expected PU lists separated by '/', "
			"e.g. \"cpukinds=1-3/0\")");
	while (p < list_end) {
		char *e;
		unsigned long lo = strtoul(p, &e, 10), hi = lo;
		if (e == p)
			return kinds_err(err, errlen, "cpukinds: \"%.*s\": expected PU numbers and ranges "
				"(e.g. 0-3,8)", (int)(list_end - s), s);
		p = e;
		if (p < list_end && *p == '-') {
			hi = strtoul(p + 1, &e, 10);
			if (e == p + 1 || hi < lo)
				return kinds_err(err, errlen, "cpukinds: \"%.*s\": a range must be LOW-HIGH",
					(int)(list_end - s), s);
			p = e;
		}
		if (p < list_end && *p != ',')
			return kinds_err(err, errlen, "cpukinds: \"%.*s\": expected PU numbers and ranges "
				"(e.g. 0-3,8)", (int)(list_end - s), s);
		if (p < list_end)
			p++;
		if (hi >= nb_pus)
			return kinds_err(err, errlen, "cpukinds: PU %lu: the topology has PUs 0 to %u", hi,
				nb_pus - 1);
		for (unsigned long i = lo; i <= hi; i++) {
			hwloc_obj_t pu = hwloc_get_obj_by_type(hw, HWLOC_OBJ_PU, (unsigned)i);
			if (!pu)
				return kinds_err(err, errlen, "cpukinds: PU %lu not found", i);
			if (hwloc_bitmap_isset(taken, pu->os_index))
				return kinds_err(err, errlen, "cpukinds: PU %lu is in two kinds", i);
			hwloc_bitmap_set(taken, pu->os_index);
			hwloc_bitmap_set(set, pu->os_index);
		}
	}
	return 0;
}

int ma_topo_register_kinds(struct ma_topo *t, const char *part, char *err, size_t errlen)
{
	while (*part == ' ')
		part++;
	if (strncmp(part, MA_KINDS_KEY, strlen(MA_KINDS_KEY)))
		return kinds_err(err, errlen, "\"%s\": after ';' only \"cpukinds=PUS[@MHZ]/PUS[@MHZ]...\" is "
			"accepted (kinds from the least to the most performant)", part);
	const char *s = part + strlen(MA_KINDS_KEY);
	size_t len = strlen(s);
	while (len && s[len - 1] == ' ')
		len--;
	hwloc_bitmap_t sets[MA_KINDS_MAX], taken = hwloc_bitmap_alloc();
	unsigned long mhz[MA_KINDS_MAX];
	unsigned n = 0;
	int ret = taken ? 0 : ENOMEM;
	for (const char *p = s, *end; !ret && p <= s + len; p = end + 1) {
		end = memchr(p, '/', (size_t)(s + len - p));
		if (!end)
			end = s + len;
		if (n == MA_KINDS_MAX) {
			ret = kinds_err(err, errlen, "cpukinds: at most %d kinds", MA_KINDS_MAX);
			break;
		}
		sets[n] = hwloc_bitmap_alloc();
		if (!sets[n]) {
			ret = ENOMEM;
			break;
		}
		ret = parse_kind(t->hw, p, end, t->nb_pus, sets[n], taken, &mhz[n], err, errlen);
		n++;
	}
	if (!ret && hwloc_bitmap_weight(taken) != (int)t->nb_pus) {
		hwloc_obj_t pu = NULL;
		while ((pu = hwloc_get_next_obj_by_type(t->hw, HWLOC_OBJ_PU, pu)) && hwloc_bitmap_isset(taken, pu->os_index))
			;
		ret = kinds_err(err, errlen, "cpukinds: PU %u is in no kind (list every PU once)",
			pu ? pu->logical_index : 0);
	}
	for (unsigned k = 0; !ret && k < n; k++) {
		char value[32];
		struct hwloc_info_s info = { .name = (char *)"FrequencyMaxMHz", .value = value };
		snprintf(value, sizeof(value), "%lu", mhz[k]);
		/* hwloc copies the cpuset and the infos. */
		if (hwloc_cpukinds_register(t->hw, sets[k], (int)k, mhz[k] ? 1 : 0, mhz[k] ? &info : NULL, 0) < 0)
			ret = kinds_err(err, errlen, "cpukinds: hwloc refused kind %u: %s", k, strerror(errno));
	}
	for (unsigned k = 0; k < n; k++)
		hwloc_bitmap_free(sets[k]);
	hwloc_bitmap_free(taken);
	if (ret == ENOMEM)
		kinds_err(err, errlen, "out of memory");
	return ret;
}
