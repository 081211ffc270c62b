/*
 * What the backends are told of the machine, from a loaded topology: the core kinds of
 * their environment, and a VP as a target. Shared by hwprio's runtime part (marcel's
 * workers) and libmarcel-dlrb (an MPI rank's process), which load their topologies each.
 */
#ifndef MA_HW_TOPO_H
#define MA_HW_TOPO_H

#include <sys/types.h>
#include "ma_hwprio.h"
#include "ma_topology.h"

#define MA_HW_MAX_KINDS 8

/* The roots (MARCEL_HWPRIO_SYSFS, MARCEL_HWPRIO_RESCTRL, else the system's), and, with a
 * topology t, its core kinds (into kinds[MA_HW_MAX_KINDS]) and whether threads are bound
 * to their PUs (not on a synthetic or XML topology). t NULL: no kinds, not bound. */
void ma_hw_env_from_topo(struct ma_hw_env *env, struct ma_hw_kind *kinds, const struct ma_topo *t);

/* The ancestor of VP v's leaf that has kind k: its logical index, -1 if none. */
int ma_hw_topo_item(const struct ma_topo *t, unsigned v, enum ma_level_kind k);

/* VP v of t as a backend's target, run by kernel thread tid. */
struct ma_hw_target ma_hw_target_of(const struct ma_topo *t, unsigned v, pid_t tid);

#endif
