/*
 * Internal topology interface: hwloc -> a tree of levels, one run queue per item.
 *
 * The tree keeps only the levels a scheduler cares about (machine, NUMA node, package,
 * die, L3, L2, group, core, PU) and merges items whose cpusets are identical, so a
 * single-core L2 and its core are one item. Items are stored in pre-order (a parent
 * always comes before its children), which gives every item a stable id that the
 * marcel core uses to index its run-queue array.
 *
 * This module knows nothing about threads or run queues: it only describes the machine
 * and maps VPs (workers) onto it.
 */
#ifndef MA_TOPOLOGY_H
#define MA_TOPOLOGY_H

#include <stddef.h>
#include <stdio.h>
#include <hwloc.h>

/* Kinds an item may carry; merged items carry several (e.g. L2|CORE|PU). */
enum ma_level_kind {
	MA_LEVEL_MACHINE = 1u << 0,
	MA_LEVEL_NUMA = 1u << 1,
	MA_LEVEL_PACKAGE = 1u << 2,
	MA_LEVEL_DIE = 1u << 3,
	MA_LEVEL_L3 = 1u << 4,
	MA_LEVEL_L2 = 1u << 5,
	MA_LEVEL_GROUP = 1u << 6, /* hwloc group, or one we add to bound the arity */
	MA_LEVEL_CORE = 1u << 7,
	MA_LEVEL_PU = 1u << 8,
};

struct ma_level {
	unsigned id;              /* index in ma_topo.levels, pre-order */
	unsigned depth;           /* 0 = machine */
	enum ma_level_kind kind;  /* the kind that names the item */
	unsigned kinds;           /* every kind merged into it */
	unsigned index;           /* logical index among items named with the same kind */
	char name[32];            /* "machine", "NUMANode1", "L3Cache0", "Core5", "PU11", "Group2" */
	struct ma_level *parent;  /* NULL for the machine */
	struct ma_level **children;
	unsigned arity;
	hwloc_bitmap_t cpuset;    /* owned */
	unsigned first_pu, nb_pus; /* range of PU logical indexes (hwloc order is contiguous) */
	int numa;                 /* logical index of the NUMA node covering the item, -1 if several */
	int cpukind;              /* index in ma_topo.cpukinds if all PUs share one kind, else -1 */
	unsigned first_vp, nb_vps; /* VPs served below this item: smallest and count (a contiguous
				      range unless there are more VPs than cores); nb_vps may be 0 */
};

struct ma_cpukind {
	int efficiency;           /* hwloc's ranking, higher = faster; -1 if hwloc does not know */
	char name[64];            /* "CoreType=IntelCore", "FrequencyMaxMHz=..." or "" */
	hwloc_bitmap_t cpuset;    /* owned */
};

/* One worker: VP n serves core n (PU n with smt), wrapping if there are more VPs. */
struct ma_vp_map {
	struct ma_level *leaf;    /* deepest item holding the VP's PU (its run queue's parent) */
	unsigned pu;              /* logical PU index the VP is bound to */
	unsigned pu_os;           /* OS index of that PU (for binding) */
};

struct ma_topo_options {
	const char *spec;         /* NULL: this machine; "@file.xml"; or a hwloc synthetic string */
	unsigned maxarity;        /* >= 2; levels wider than this get intermediate groups */
	unsigned nvp;             /* 0: one per core (per PU with smt) */
	int smt;                  /* one VP per PU instead of per core */
	hwloc_const_cpuset_t within; /* this machine: its PUs (OS indexes) to use; NULL: those the
				      process is bound to (all if it is not) */
};

struct ma_topo {
	hwloc_topology_t hw;
	int fake;                 /* synthetic or XML: never bind */
	unsigned nb_levels;
	struct ma_level *levels;  /* levels[0] is the machine */
	unsigned max_depth;       /* deepest item's depth */
	unsigned nb_pus, nb_cores, nb_numa;
	unsigned nb_cpukinds;
	struct ma_cpukind *cpukinds;
	unsigned nb_vps;
	unsigned nb_units;        /* what VPs are spread over: cores, or PUs with smt */
	struct ma_vp_map *vps;
};

/*
 * Loads the topology and maps the VPs. On failure returns an errno value, writes a
 * one-line reason (without a leading program or variable name) into err and leaves
 * *t zeroed: EINVAL for a malformed spec or option, ENOENT for a missing XML file,
 * ENOMEM.
 */
int ma_topo_load(struct ma_topo *t, const struct ma_topo_options *opt, char *err, size_t errlen);
void ma_topo_free(struct ma_topo *t);

/* Binds the calling kernel thread to the VP's PU; does nothing on a fake topology. */
int ma_topo_bind_self(const struct ma_topo *t, unsigned vp);

/* Distance between two items: number of edges from each to their nearest common ancestor. */
unsigned ma_topo_distance(const struct ma_level *a, const struct ma_level *b);

/* Prints the tree (one item per line, indented, with kinds, PUs, VPs) and the VP map. */
void ma_topo_print(const struct ma_topo *t, FILE *out);

#endif
