/* Functions shared between the topology module's own files; not for marcel/. */
#ifndef MA_TOPO_INTERNAL_H
#define MA_TOPO_INTERNAL_H

#include "ma_topology.h"

/* tree.c: hwloc tree -> t->levels (merging, NUMA marking, arity groups, names). */
int ma_topo_build_levels(struct ma_topo *t, unsigned maxarity);
/* "NUMANode", "L3Cache", "Core"... for one kind bit. */
const char *ma_topo_kind_name(enum ma_level_kind kind);
/* vpmap.c: fills t->vps and each level's first_vp/nb_vps. */
int ma_topo_map_vps(struct ma_topo *t, unsigned nvp, int smt);
/* topology.c: "this machine", "synthetic \"...\"" or "xml path", for the summary line. */
const char *ma_topo_description(const struct ma_topo *t);

#endif
