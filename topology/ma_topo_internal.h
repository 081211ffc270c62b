/* Functions shared between the topology module's own files; not for marcel/. */
#ifndef MA_TOPO_INTERNAL_H
#define MA_TOPO_INTERNAL_H

#include "ma_topology.h"

/* tree.c: hwloc tree -> t->levels (merging, NUMA marking, arity groups, names). */
int ma_topo_build_levels(struct ma_topo *t, unsigned maxarity);
/* "NUMANode", "L3Cache", "Core"... for one kind bit. */
const char *ma_topo_kind_name(enum ma_level_kind kind);

/* kinds.c: the part of spec after ';' (NULL: none), the length before it in *base_len. */
const char *ma_topo_kinds_part(const char *spec, size_t *base_len);
/* Applies the clauses after ';' (cpukinds=, restrict=) to t->hw, loaded and counted:
 * 0, or EINVAL/ENOMEM with a line in err. *restricted: PUs were removed (count again). */
int ma_topo_apply_clauses(struct ma_topo *t, const char *part, int *restricted, char *err, size_t errlen);
/* vpmap.c: fills t->vps and each level's first_vp/nb_vps. */
int ma_topo_map_vps(struct ma_topo *t, unsigned nvp, int smt);
/* topology.c: "this machine", "synthetic \"...\"" or "xml path", for the summary line. */
const char *ma_topo_description(const struct ma_topo *t);

#endif
