/**
 * @file marcel/topology.h
 * @brief What the runtime sees of the machine: the level tree and the VP map.
 */
#ifndef MARCEL_TOPOLOGY_H
#define MARCEL_TOPOLOGY_H

#include <stdio.h>
#include <marcel/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup marcel_topology Topology
 * The runtime keeps one run queue per item of a tree that mirrors the machine (machine,
 * NUMA node, package, die, L3, L2, group, core, PU), with items whose processor sets are
 * identical merged into one. Items are numbered in pre-order (0 is the machine). These
 * functions read that tree; they are valid between marcel_init() and marcel_end() and
 * may be called from any thread.
 * @{ */

/** Kind bits of a topology item (an item may carry several after merging). */
enum marcel_level_kind {
	MARCEL_LEVEL_MACHINE = 1u << 0, /**< The whole machine. */
	MARCEL_LEVEL_NUMA = 1u << 1,    /**< A NUMA node. */
	MARCEL_LEVEL_PACKAGE = 1u << 2, /**< A processor package (socket). */
	MARCEL_LEVEL_DIE = 1u << 3,     /**< A die. */
	MARCEL_LEVEL_L3 = 1u << 4,      /**< An L3 cache. */
	MARCEL_LEVEL_L2 = 1u << 5,      /**< An L2 cache. */
	MARCEL_LEVEL_GROUP = 1u << 6,   /**< A group (from hwloc, or added to bound the fan-out). */
	MARCEL_LEVEL_CORE = 1u << 7,    /**< A core. */
	MARCEL_LEVEL_PU = 1u << 8,      /**< A processing unit (hardware thread). */
};

/** A copy of one topology item's description. */
struct marcel_topo_item {
	unsigned id;             /**< Pre-order number, 0 = machine. */
	unsigned depth;          /**< Distance from the machine item. */
	int parent;              /**< Parent's id, -1 for the machine. */
	unsigned arity;          /**< Number of children. */
	unsigned kind;           /**< The ::marcel_level_kind that names it. */
	unsigned kinds;          /**< Every ::marcel_level_kind merged into it. */
	char name[32];           /**< Its run queue's name: "machine", "NUMANode1", "Core5"... */
	unsigned first_pu;       /**< First PU (hwloc logical index). */
	unsigned nb_pus;         /**< Number of PUs. */
	unsigned first_vp;       /**< First VP served below it. */
	unsigned nb_vps;         /**< Number of VPs served below it (0: none). */
	int numa;                /**< NUMA node covering it, -1 if it spans several. */
	int cpukind;             /**< Core kind of all its PUs, -1 if mixed or unknown. */
};

/** Returns the number of topology items (0 if the runtime is not running). */
unsigned marcel_topo_nbitems(void);

/** Copies item @p id's description into @p out.
 * @return 0; EINVAL if @p out is NULL or @p id is out of range; EPERM if the runtime is
 * not running. */
int marcel_topo_get_item(unsigned id, struct marcel_topo_item *out);

/** Returns the id of the deepest item holding VP @p vp's PU (the parent of the VP's own
 * run queue), or -1 if @p vp is not a VP. */
int marcel_topo_vp_item(unsigned vp);

/** Returns the id of the ancestor of VP @p vp's item that carries @p kind (e.g.
 * ::MARCEL_LEVEL_NUMA to learn which NUMA node a VP belongs to), or -1 if there is none. */
int marcel_topo_vp_ancestor(unsigned vp, unsigned kind);

/** Returns the number of core kinds hwloc reported (0 on homogeneous or fake machines
 * without kind information). */
unsigned marcel_topo_nbcpukinds(void);

/** Returns non-zero if the topology came from `MARCEL_TOPOLOGY` (synthetic or XML), in
 * which case workers are not bound to processors. */
int marcel_topo_is_fake(void);

/** Prints the level tree with run-queue names, the VP to PU map and a summary line, as
 * the `marcel-topo` tool does.
 * @return 0; EINVAL if @p out is NULL; EPERM if the runtime is not running. */
int marcel_topo_fprint(FILE *out);

/** @} */

#ifdef __cplusplus
}
#endif

#endif
