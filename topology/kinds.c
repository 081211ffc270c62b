/*
 * What a topology description may add after ';': core kinds given by hand, and a subset of
 * its PUs. Synthetic descriptions have no kinds, and this machine may have one kind where
 * a test or an emulation wants two; nor can a synthetic description have packages of
 * unequal sizes (the 004 seed's fast core alone on its chip). Both go through hwloc
 * (hwloc_cpukinds_register, hwloc_topology_restrict), so everything after the load reads
 * them as it reads a hybrid machine or an XML file.
 *
 *   "pack:4 core:4; cpukinds=1-3,5-7,9-11,13-15@1150/0,4,8,12@2300"
 *   "pack:4 core:4; restrict=0,4-15; cpukinds=4-15@1150/0@2300"
 *
 * cpukinds: kinds separated by '/', from the least to the most performant (hwloc's
 * efficiency rank 0, 1, ...), each a list of PU logical indexes and ranges with an
 * optional "@MHZ" (its FrequencyMaxMHz info); every PU kept belongs to exactly one kind.
 * restrict: the PUs kept, the others removed with their cores and caches if emptied.
 * PU numbers are the description's, before any restriction.
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
		      hwloc_bitmap_t taken, hwloc_const_bitmap_t kept, unsigned long *mhz, char *err, size_t errlen)
{
	const char *at = mhz ? memchr(s, '@', (size_t)(end - s)) : NULL, *p = s, *list_end = at ? at : end;
	const char *what = mhz ? "cpukinds" : "restrict";

	if (mhz)
		*mhz = 0;
	if (at) {
		char *e;
		*mhz = strtoul(at + 1, &e, 10);
		if (e == at + 1 || e != end || !*mhz || *mhz > 100000)
			return kinds_err(err, errlen, "cpukinds: \"%.*s\": expected a frequency in MHz after '@' "
				"(e.g. @2300)", (int)(end - s), s);
	}
	if (p == list_end)
		return mhz ? kinds_err(err, errlen, "cpukinds: an empty kind (expected PU lists separated by '/', "
				       "e.g. \"cpukinds=1-3/0\")")
			   : kinds_err(err, errlen, "restrict: no PU (expected a list such as 0,4-15)");
	while (p < list_end) {
		char *e;
		unsigned long lo = strtoul(p, &e, 10), hi = lo;
		if (e == p)
			return kinds_err(err, errlen, "%s: \"%.*s\": expected PU numbers and ranges "
				"(e.g. 0-3,8)", what, (int)(list_end - s), s);
		p = e;
		if (p < list_end && *p == '-') {
			hi = strtoul(p + 1, &e, 10);
			if (e == p + 1 || hi < lo)
				return kinds_err(err, errlen, "%s: \"%.*s\": a range must be LOW-HIGH", what,
					(int)(list_end - s), s);
			p = e;
		}
		if (p < list_end && *p != ',')
			return kinds_err(err, errlen, "%s: \"%.*s\": expected PU numbers and ranges "
				"(e.g. 0-3,8)", what, (int)(list_end - s), s);
		if (p < list_end)
			p++;
		if (hi >= nb_pus)
			return kinds_err(err, errlen, "%s: PU %lu: the topology has PUs 0 to %u", what, hi,
				nb_pus - 1);
		for (unsigned long i = lo; i <= hi; i++) {
			hwloc_obj_t pu = hwloc_get_obj_by_type(hw, HWLOC_OBJ_PU, (unsigned)i);
			if (!pu)
				return kinds_err(err, errlen, "%s: PU %lu not found", what, i);
			if (kept && !hwloc_bitmap_isset(kept, pu->os_index))
				return kinds_err(err, errlen, "cpukinds: PU %lu is not kept by restrict=", i);
			if (hwloc_bitmap_isset(taken, pu->os_index))
				return kinds_err(err, errlen, mhz ? "cpukinds: PU %lu is in two kinds"
								  : "restrict: PU %lu is listed twice", i);
			hwloc_bitmap_set(taken, pu->os_index);
			hwloc_bitmap_set(set, pu->os_index);
		}
	}
	return 0;
}

/* "cpukinds=..." of length len (s after the key): registered, covering the PUs kept. */
static int register_kinds(struct ma_topo *t, const char *s, size_t len, hwloc_const_bitmap_t kept, char *err,
			  size_t errlen)
{
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
		ret = parse_kind(t->hw, p, end, t->nb_pus, sets[n], taken, kept, &mhz[n], err, errlen);
		n++;
	}
	if (!ret && hwloc_bitmap_weight(taken) != (kept ? hwloc_bitmap_weight(kept) : (int)t->nb_pus)) {
		hwloc_obj_t pu = NULL;
		while ((pu = hwloc_get_next_obj_by_type(t->hw, HWLOC_OBJ_PU, pu)) &&
		       (hwloc_bitmap_isset(taken, pu->os_index) || (kept && !hwloc_bitmap_isset(kept, pu->os_index))))
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

/* One clause, without its spaces: its key's length if it is `key`, else 0. */
static size_t clause_is(const char *c, size_t len, const char *key)
{
	size_t k = strlen(key);
	return len >= k && !strncmp(c, key, k) ? k : 0;
}

int ma_topo_apply_clauses(struct ma_topo *t, const char *part, int *restricted, char *err, size_t errlen)
{
	const char *kinds = NULL, *keep = NULL;
	size_t kinds_len = 0, keep_len = 0;
	*restricted = 0;
	for (const char *c = part, *end; c; c = *end ? end + 1 : NULL) {
		end = strchr(c, ';');
		if (!end)
			end = c + strlen(c);
		while (c < end && *c == ' ')
			c++;
		size_t len = (size_t)(end - c), k;
		while (len && c[len - 1] == ' ')
			len--;
		if ((k = clause_is(c, len, MA_KINDS_KEY)) && !kinds) {
			kinds = c + k;
			kinds_len = len - k;
		} else if ((k = clause_is(c, len, "restrict=")) && !keep) {
			keep = c + k;
			keep_len = len - k;
		} else {
			return kinds_err(err, errlen, "\"%.*s\": after ';' only \"cpukinds=PUS[@MHZ]/PUS[@MHZ]...\" "
				"(kinds from the least to the most performant) and \"restrict=PUS\" are accepted, each "
				"once", (int)len, c);
		}
	}
	hwloc_bitmap_t kept = NULL, seen = NULL;
	int ret = 0;
	if (keep) {
		kept = hwloc_bitmap_alloc();
		seen = hwloc_bitmap_alloc();
		ret = kept && seen ? parse_kind(t->hw, keep, keep + keep_len, t->nb_pus, kept, seen, NULL, NULL, err, errlen)
				   : ENOMEM;
	}
	if (!ret && kinds)
		ret = register_kinds(t, kinds, kinds_len, kept, err, errlen);
	if (!ret && kept && hwloc_topology_restrict(t->hw, kept, 0) < 0)
		ret = kinds_err(err, errlen, "restrict: hwloc refused it: %s", strerror(errno));
	*restricted = !ret && kept;
	hwloc_bitmap_free(kept);
	hwloc_bitmap_free(seen);
	if (ret == ENOMEM)
		kinds_err(err, errlen, "out of memory");
	return ret;
}
