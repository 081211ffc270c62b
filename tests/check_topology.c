/*
 * Unit tests of the topology module (hwloc -> level tree + VP map), through
 * ma_topology.h only. Synthetic and XML topologies make the expected trees exact
 * whatever machine runs the tests; the real machine is only checked for consistency.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ma_topology.h"

#define SPEC_PNL "pack:2 numa:2 l3:1 core:4 pu:2"

static struct ma_topo topo;
static char err[256];

static void load(const char *spec, unsigned maxarity, unsigned nvp, int smt)
{
	struct ma_topo_options opt = { .spec = spec, .maxarity = maxarity, .nvp = nvp, .smt = smt };
	int ret = ma_topo_load(&topo, &opt, err, sizeof(err));

	ck_assert_msg(ret == 0, "loading \"%s\" failed: %s (%s)", spec ? spec : "(this machine)",
		      strerror(ret), err);
}

static void teardown(void)
{
	ma_topo_free(&topo);
}

static const struct ma_level *find(const char *name)
{
	for (unsigned i = 0; i < topo.nb_levels; i++)
		if (strcmp(topo.levels[i].name, name) == 0)
			return &topo.levels[i];
	ck_abort_msg("no item named %s", name);
	return NULL;
}

static unsigned count_named(enum ma_level_kind kind)
{
	unsigned n = 0;

	for (unsigned i = 0; i < topo.nb_levels; i++)
		n += topo.levels[i].kind == kind;
	return n;
}

static unsigned count_carrying(enum ma_level_kind kind)
{
	unsigned n = 0;

	for (unsigned i = 0; i < topo.nb_levels; i++)
		n += !!(topo.levels[i].kinds & kind);
	return n;
}

static unsigned subtree_size(const struct ma_level *l)
{
	unsigned n = 1;

	for (unsigned i = 0; i < l->arity; i++)
		n += subtree_size(l->children[i]);
	return n;
}

static int is_below(const struct ma_level *l, const struct ma_level *ancestor)
{
	for (; l; l = l->parent)
		if (l == ancestor)
			return 1;
	return 0;
}

/* What must hold for any loaded topology, whatever the spec. */
static void check_invariants(unsigned maxarity)
{
	unsigned max_depth = 0, pus = 0;

	ck_assert_uint_ge(topo.nb_levels, 1);
	ck_assert_str_eq(topo.levels[0].name, "machine");
	ck_assert(topo.levels[0].kinds & MA_LEVEL_MACHINE);
	ck_assert_int_eq(topo.levels[0].kind, MA_LEVEL_MACHINE);
	ck_assert_ptr_null(topo.levels[0].parent);
	ck_assert_uint_eq(topo.levels[0].first_pu, 0);
	ck_assert_uint_eq(topo.levels[0].nb_pus, topo.nb_pus);
	ck_assert_uint_eq(topo.levels[0].nb_vps, topo.nb_vps);
	ck_assert_uint_eq(subtree_size(&topo.levels[0]), topo.nb_levels);

	for (unsigned i = 0; i < topo.nb_levels; i++) {
		const struct ma_level *l = &topo.levels[i];
		unsigned next_id = i + 1, next_pu = l->first_pu;

		ck_assert_uint_eq(l->id, i);
		ck_assert(l->kinds & l->kind);
		ck_assert_uint_le(l->arity, maxarity);
		ck_assert_uint_eq((unsigned)hwloc_bitmap_weight(l->cpuset), l->nb_pus);
		if (l->depth > max_depth)
			max_depth = l->depth;
		if (i) {
			ck_assert_ptr_nonnull(l->parent);
			ck_assert_uint_lt(l->parent->id, l->id);
			ck_assert_uint_eq(l->depth, l->parent->depth + 1);
			ck_assert_int_eq(l->kind == MA_LEVEL_MACHINE, 0);
		}
		/* Pre-order: children follow their parent, each after the previous child's subtree. */
		for (unsigned c = 0; c < l->arity; c++) {
			const struct ma_level *child = l->children[c];

			ck_assert_ptr_eq(child->parent, l);
			ck_assert_uint_eq(child->id, next_id);
			ck_assert_uint_eq(child->first_pu, next_pu);
			next_id += subtree_size(child);
			next_pu += child->nb_pus;
			ck_assert_msg(!(l->arity == 1 && hwloc_bitmap_isequal(child->cpuset, l->cpuset)),
				      "%s has a single child %s with the same PUs: not merged", l->name, child->name);
		}
		if (l->arity)
			ck_assert_uint_eq(next_pu, l->first_pu + l->nb_pus);
		if (l->kinds & MA_LEVEL_PU) {
			ck_assert_uint_eq(l->arity, 0);
			ck_assert_uint_eq(l->nb_pus, 1);
			pus++;
		}
		for (unsigned j = 0; j < i; j++)
			ck_assert_str_ne(topo.levels[j].name, l->name);
	}
	ck_assert_uint_eq(max_depth, topo.max_depth);
	ck_assert_uint_eq(pus, topo.nb_pus);

	for (unsigned vp = 0; vp < topo.nb_vps; vp++) {
		const struct ma_vp_map *map = &topo.vps[vp];

		ck_assert(map->leaf->kinds & MA_LEVEL_PU);
		ck_assert_uint_eq(map->leaf->first_pu, map->pu);
		ck_assert_uint_eq(map->pu_os, hwloc_get_obj_by_type(topo.hw, HWLOC_OBJ_PU, map->pu)->os_index);
	}
	/* first_vp/nb_vps are the smallest and the count of the VPs whose leaf is below. */
	for (unsigned i = 0; i < topo.nb_levels; i++) {
		const struct ma_level *l = &topo.levels[i];
		unsigned count = 0, first = ~0u;

		for (unsigned vp = 0; vp < topo.nb_vps; vp++)
			if (is_below(topo.vps[vp].leaf, l)) {
				count++;
				if (first == ~0u)
					first = vp;
			}
		ck_assert_uint_eq(l->nb_vps, count);
		if (count)
			ck_assert_uint_eq(l->first_vp, first);
	}
}

/* ---- pack:2 numa:2 l3:1 core:4 pu:2 ---- */

START_TEST(test_pnl_tree)
{
	const struct ma_level *numa1, *core5, *pu11;

	load(SPEC_PNL, 8, 0, 0);
	check_invariants(8);
	ck_assert_int_eq(topo.fake, 1);
	ck_assert_uint_eq(topo.nb_pus, 32);
	ck_assert_uint_eq(topo.nb_cores, 16);
	ck_assert_uint_eq(topo.nb_numa, 4);
	ck_assert_uint_eq(topo.nb_cpukinds, 0);
	/* machine, 2 packages, 4 NUMA nodes merged with their L3, 16 cores, 32 PUs */
	ck_assert_uint_eq(topo.nb_levels, 55);
	ck_assert_uint_eq(topo.max_depth, 4);
	ck_assert_uint_eq(count_named(MA_LEVEL_PACKAGE), 2);
	ck_assert_uint_eq(count_named(MA_LEVEL_NUMA), 4);
	ck_assert_uint_eq(count_named(MA_LEVEL_L3), 0);
	ck_assert_uint_eq(count_carrying(MA_LEVEL_L3), 4);
	ck_assert_uint_eq(count_named(MA_LEVEL_CORE), 16);
	ck_assert_uint_eq(count_named(MA_LEVEL_PU), 32);

	numa1 = find("NUMANode1");
	ck_assert_uint_eq(numa1->kinds, MA_LEVEL_NUMA | MA_LEVEL_L3);
	ck_assert_uint_eq(numa1->index, 1);
	ck_assert_uint_eq(numa1->depth, 2);
	ck_assert_str_eq(numa1->parent->name, "Package0");
	ck_assert_uint_eq(numa1->arity, 4);
	ck_assert_uint_eq(numa1->first_pu, 8);
	ck_assert_uint_eq(numa1->nb_pus, 8);
	ck_assert_int_eq(numa1->numa, 1);

	core5 = find("Core5");
	ck_assert_uint_eq(core5->kinds, MA_LEVEL_CORE);
	ck_assert_ptr_eq(core5->parent, numa1);
	ck_assert_uint_eq(core5->depth, 3);
	ck_assert_uint_eq(core5->first_pu, 10);
	ck_assert_uint_eq(core5->nb_pus, 2);
	ck_assert_int_eq(core5->numa, 1);
	ck_assert_int_eq(core5->cpukind, -1);

	pu11 = find("PU11");
	ck_assert_ptr_eq(pu11->parent, core5);
	ck_assert_ptr_eq(core5->children[1], pu11);
	ck_assert_uint_eq(pu11->depth, 4);
	ck_assert_uint_eq(pu11->first_pu, 11);

	/* Pre-order: Package0, NUMANode0, Core0, PU0, PU1, Core1 ... */
	ck_assert_str_eq(topo.levels[1].name, "Package0");
	ck_assert_str_eq(topo.levels[2].name, "NUMANode0");
	ck_assert_str_eq(topo.levels[3].name, "Core0");
	ck_assert_str_eq(topo.levels[4].name, "PU0");
	ck_assert_str_eq(topo.levels[6].name, "Core1");
	ck_assert_str_eq(topo.levels[28].name, "Package1");

	ck_assert_int_eq(topo.levels[0].numa, -1);
	ck_assert_int_eq(find("Package1")->numa, -1);
	ck_assert_int_eq(find("PU31")->numa, 3);
}
END_TEST

START_TEST(test_pnl_vps_default)
{
	load(SPEC_PNL, 8, 0, 0);
	check_invariants(8);
	ck_assert_uint_eq(topo.nb_vps, 16);
	for (unsigned vp = 0; vp < 16; vp++) {
		char core[16];

		snprintf(core, sizeof(core), "Core%u", vp);
		ck_assert_uint_eq(topo.vps[vp].pu, 2 * vp);
		ck_assert_uint_eq(topo.vps[vp].pu_os, 2 * vp);
		ck_assert_ptr_eq(topo.vps[vp].leaf->parent, find(core));
		ck_assert_uint_eq(find(core)->first_vp, vp);
		ck_assert_uint_eq(find(core)->nb_vps, 1);
	}
	ck_assert_uint_eq(find("NUMANode1")->first_vp, 4);
	ck_assert_uint_eq(find("NUMANode1")->nb_vps, 4);
	ck_assert_uint_eq(find("Package1")->first_vp, 8);
	ck_assert_uint_eq(find("Package1")->nb_vps, 8);
	/* The second PU of a core gets no VP without smt. */
	ck_assert_uint_eq(find("PU11")->nb_vps, 0);
	ck_assert_uint_eq(find("PU10")->nb_vps, 1);
}
END_TEST

START_TEST(test_pnl_vps_smt)
{
	load(SPEC_PNL, 8, 0, 1);
	check_invariants(8);
	ck_assert_uint_eq(topo.nb_vps, 32);
	for (unsigned vp = 0; vp < 32; vp++) {
		ck_assert_uint_eq(topo.vps[vp].pu, vp);
		ck_assert_uint_eq(topo.vps[vp].leaf->first_pu, vp);
	}
	ck_assert_str_eq(topo.vps[11].leaf->name, "PU11");
	ck_assert_uint_eq(find("Core5")->first_vp, 10);
	ck_assert_uint_eq(find("Core5")->nb_vps, 2);
	ck_assert_uint_eq(find("NUMANode3")->first_vp, 24);
	ck_assert_uint_eq(find("NUMANode3")->nb_vps, 8);
}
END_TEST

START_TEST(test_pnl_vps_three)
{
	load(SPEC_PNL, 8, 3, 0);
	check_invariants(8);
	ck_assert_uint_eq(topo.nb_vps, 3);
	ck_assert_uint_eq(topo.vps[2].pu, 4);
	ck_assert_str_eq(topo.vps[2].leaf->parent->name, "Core2");
	ck_assert_uint_eq(find("NUMANode0")->nb_vps, 3);
	ck_assert_uint_eq(find("NUMANode1")->nb_vps, 0);
	ck_assert_uint_eq(find("Package1")->nb_vps, 0);
	ck_assert_uint_eq(find("Core3")->nb_vps, 0);
	ck_assert_uint_eq(topo.levels[0].nb_vps, 3);
}
END_TEST

START_TEST(test_pnl_vps_wrap)
{
	load(SPEC_PNL, 8, 40, 0);
	check_invariants(8);
	ck_assert_uint_eq(topo.nb_vps, 40);
	/* VP n serves core n mod 16. */
	ck_assert_uint_eq(topo.vps[16].pu, 0);
	ck_assert_uint_eq(topo.vps[17].pu, 2);
	ck_assert_uint_eq(topo.vps[39].pu, 14);
	ck_assert_ptr_eq(topo.vps[39].leaf, topo.vps[7].leaf);
	/* Cores 0-7 get three VPs, cores 8-15 two; first_vp is the smallest. */
	ck_assert_uint_eq(find("Core0")->first_vp, 0);
	ck_assert_uint_eq(find("Core0")->nb_vps, 3);
	ck_assert_uint_eq(find("Core8")->first_vp, 8);
	ck_assert_uint_eq(find("Core8")->nb_vps, 2);
	ck_assert_uint_eq(find("Package0")->nb_vps, 24);
	ck_assert_uint_eq(find("Package1")->nb_vps, 16);
	ck_assert_uint_eq(topo.levels[0].nb_vps, 40);
}
END_TEST

START_TEST(test_distance)
{
	const struct ma_level *core0, *core1, *core4, *pu0, *pu31;

	load(SPEC_PNL, 8, 0, 0);
	core0 = find("Core0");
	core1 = find("Core1");
	core4 = find("Core4");
	pu0 = find("PU0");
	pu31 = find("PU31");
	ck_assert_uint_eq(ma_topo_distance(core0, core0), 0);
	ck_assert_uint_eq(ma_topo_distance(core0, pu0), 1);
	ck_assert_uint_eq(ma_topo_distance(pu0, core0), 1);
	ck_assert_uint_eq(ma_topo_distance(core0, core1), 2);
	ck_assert_uint_eq(ma_topo_distance(core0, core4), 4);
	ck_assert_uint_eq(ma_topo_distance(pu0, pu31), 8);
	ck_assert_uint_eq(ma_topo_distance(&topo.levels[0], pu31), 4);
	ck_assert_uint_eq(ma_topo_distance(find("NUMANode1"), pu0), 4);
}
END_TEST

START_TEST(test_print)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	load(SPEC_PNL, 8, 0, 0);
	out = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(out);
	ma_topo_print(&topo, out);
	fclose(out);
	ck_assert_msg(strncmp(buf, "machine  [PUs 0-31, VPs 0-15]\n", 30) == 0, "got: %.40s", buf);
	ck_assert_ptr_nonnull(strstr(buf, "\n  Package1  [PUs 16-31, VPs 8-15]\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\n    NUMANode1 (L3Cache)  [PUs 8-15, VPs 4-7]\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\n      Core5  [PUs 10-11, VP 5]\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\n        PU11  [PU 11, no VP]\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\nVP map:\n"));
	ck_assert_ptr_nonnull(strstr(buf, "VP3 -> PU6 (os 6) under Core3\n"));
	ck_assert_ptr_nonnull(strstr(buf, "55 levels, 32 PUs, 16 cores, 4 NUMA nodes, 16 VPs, topology: synthetic \""
				      SPEC_PNL "\"\n"));
	ck_assert_ptr_null(strstr(buf, " kind "));
	free(buf);
}
END_TEST

START_TEST(test_print_wrap)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	load(SPEC_PNL, 8, 40, 0);
	out = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(out);
	ma_topo_print(&topo, out);
	fclose(out);
	/* Once VPs wrap, an item's VPs are listed, not shown as a false range. */
	ck_assert_ptr_nonnull(strstr(buf, "Core0  [PUs 0-1, VPs 0,16,32]"));
	ck_assert_ptr_nonnull(strstr(buf, "NUMANode0 (L3Cache)  [PUs 0-7, VPs 0-3,16-19,32-35]"));
	ck_assert_ptr_nonnull(strstr(buf, "VP39 -> PU14 (os 14) under Core7\n"));
	free(buf);
}
END_TEST

/* ---- other synthetic shapes ---- */

START_TEST(test_pack_numa)
{
	load("pack:2 numa:2 core:4 pu:2", 8, 0, 0);
	check_invariants(8);
	ck_assert_uint_eq(topo.nb_pus, 32);
	ck_assert_uint_eq(topo.nb_cores, 16);
	ck_assert_uint_eq(topo.nb_numa, 4);
	ck_assert_uint_eq(count_named(MA_LEVEL_NUMA), 4);
	ck_assert_uint_eq(count_named(MA_LEVEL_PACKAGE), 2);
	/* hwloc puts each NUMA node under a Group of the same PUs: they merge. */
	ck_assert_uint_eq(count_named(MA_LEVEL_GROUP), 0);
	ck_assert_ptr_eq(find("NUMANode2")->parent, find("Package1"));
	ck_assert_uint_eq(find("NUMANode2")->first_pu, 16);
	ck_assert_uint_eq(topo.nb_vps, 16);
}
END_TEST

START_TEST(test_numa_core)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	load("numa:4 core:4", 8, 0, 0);
	check_invariants(8);
	ck_assert_uint_eq(topo.nb_pus, 16);
	ck_assert_uint_eq(topo.nb_cores, 16);
	ck_assert_uint_eq(topo.nb_numa, 4);
	ck_assert_uint_eq(count_named(MA_LEVEL_NUMA), 4);
	ck_assert_uint_eq(count_named(MA_LEVEL_CORE), 16);
	ck_assert_uint_eq(count_named(MA_LEVEL_PU), 0);
	ck_assert_uint_eq(topo.nb_levels, 21);
	ck_assert_uint_eq(topo.levels[0].arity, 4);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_uint_eq(topo.levels[0].children[i]->arity, 4);
	ck_assert_uint_eq(find("Core7")->kinds, MA_LEVEL_CORE | MA_LEVEL_PU);
	ck_assert_ptr_eq(topo.vps[7].leaf, find("Core7"));
	ck_assert_int_eq(find("Core7")->numa, 1);

	out = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(out);
	ma_topo_print(&topo, out);
	fclose(out);
	ck_assert_ptr_nonnull(strstr(buf, "topology: synthetic \"numa:4 core:4 pu:1\""));
	ck_assert_ptr_nonnull(strstr(buf, "VP6 -> PU6 (os 6) under Core6\n"));
	free(buf);
}
END_TEST

START_TEST(test_pu_spellings)
{
	/* An explicit pu level, in any case, must not get a second one. */
	load("pack:2 core:2 PU:2", 8, 0, 0);
	ck_assert_uint_eq(topo.nb_pus, 8);
	ck_assert_uint_eq(topo.nb_cores, 4);
	ma_topo_free(&topo);
	/* Bare counts: hwloc guesses the types, and the last one is PUs (no cores here). */
	load("2 2", 8, 0, 0);
	check_invariants(8);
	ck_assert_uint_eq(topo.nb_pus, 4);
	ck_assert_uint_eq(topo.nb_cores, 4);
	ck_assert_uint_eq(topo.nb_vps, 4);
}
END_TEST

/* Children of every group of a level differ by at most one; all cores at one depth. */
static void check_flat_cores(unsigned maxarity, unsigned groups)
{
	unsigned core_depth = find("Core0")->depth;

	check_invariants(maxarity);
	ck_assert_uint_eq(count_named(MA_LEVEL_CORE), 64);
	ck_assert_uint_eq(count_named(MA_LEVEL_GROUP), groups);
	for (unsigned i = 0; i < topo.nb_levels; i++) {
		const struct ma_level *l = &topo.levels[i];
		unsigned lo = ~0u, hi = 0;

		if (l->kind == MA_LEVEL_CORE)
			ck_assert_uint_eq(l->depth, core_depth);
		if (l->kind == MA_LEVEL_GROUP)
			ck_assert_uint_ge(l->arity, 2);
		for (unsigned c = 0; c < l->arity; c++) {
			if (l->children[c]->arity < lo)
				lo = l->children[c]->arity;
			if (l->children[c]->arity > hi)
				hi = l->children[c]->arity;
		}
		if (l->arity)
			ck_assert_uint_le(hi - lo, 1);
	}
}

START_TEST(test_flat_arity8)
{
	load("core:64", 8, 0, 0);
	check_flat_cores(8, 8);
	ck_assert_uint_eq(topo.levels[0].arity, 8);
	for (unsigned g = 0; g < 8; g++) {
		const struct ma_level *grp = topo.levels[0].children[g];
		char name[16];

		snprintf(name, sizeof(name), "Group%u", g);
		ck_assert_str_eq(grp->name, name);
		ck_assert_int_eq(grp->kind, MA_LEVEL_GROUP);
		ck_assert_uint_eq(grp->arity, 8);
		ck_assert_uint_eq(grp->first_pu, 8 * g);
		ck_assert_uint_eq(grp->first_vp, 8 * g);
		ck_assert_uint_eq(grp->nb_vps, 8);
	}
	ck_assert_uint_eq(topo.nb_vps, 64);
	ck_assert_uint_eq(ma_topo_distance(find("Core0"), find("Core8")), 4);
}
END_TEST

START_TEST(test_flat_arity3)
{
	load("core:64", 3, 0, 0);
	/* 64 cores -> 22 groups -> 8 groups -> 3 groups below the machine. */
	check_flat_cores(3, 33);
	ck_assert_uint_eq(topo.levels[0].arity, 3);
	ck_assert_uint_eq(find("Core0")->depth, 4);
	ck_assert_uint_eq(topo.max_depth, 4);
}
END_TEST

START_TEST(test_arity2_no_single_child_group)
{
	load("core:5", 2, 0, 0);
	/* [[[0 1] [2 3]] 4]: a chunk of one core is not wrapped in a group of its own. */
	check_invariants(2);
	ck_assert_uint_eq(count_named(MA_LEVEL_GROUP), 3);
	ck_assert_uint_eq(topo.levels[0].arity, 2);
	ck_assert_ptr_eq(find("Core4")->parent, &topo.levels[0]);
	ck_assert_uint_eq(find("Core0")->depth, 3);
}
END_TEST

START_TEST(test_single_core)
{
	load("pack:1 core:1 pu:1", 8, 0, 0);
	check_invariants(8);
	ck_assert_uint_eq(topo.nb_levels, 1);
	ck_assert_uint_eq(topo.max_depth, 0);
	ck_assert_uint_eq(topo.levels[0].kinds, MA_LEVEL_MACHINE | MA_LEVEL_NUMA | MA_LEVEL_PACKAGE
			  | MA_LEVEL_CORE | MA_LEVEL_PU);
	ck_assert_str_eq(topo.levels[0].name, "machine");
	ck_assert_uint_eq(topo.levels[0].arity, 0);
	ck_assert_int_eq(topo.levels[0].numa, 0);
	ck_assert_uint_eq(topo.nb_vps, 1);
	ck_assert_ptr_eq(topo.vps[0].leaf, &topo.levels[0]);
	ck_assert_uint_eq(ma_topo_distance(&topo.levels[0], topo.vps[0].leaf), 0);
}
END_TEST

/* ---- errors ---- */

static void load_fails(const char *spec, unsigned maxarity, unsigned nvp, int expected, const char *needle)
{
	struct ma_topo_options opt = { .spec = spec, .maxarity = maxarity, .nvp = nvp };
	struct ma_topo zero;
	int ret;

	memset(&zero, 0, sizeof(zero));
	memset(&topo, 0xa5, sizeof(topo));
	err[0] = '\0';
	ret = ma_topo_load(&topo, &opt, err, sizeof(err));
	ck_assert_msg(ret == expected, "\"%s\": got %d (%s), expected %d", spec ? spec : "(null)",
		      ret, err, expected);
	ck_assert_msg(err[0] != '\0', "\"%s\": no error message", spec);
	ck_assert_msg(strstr(err, needle), "\"%s\": message \"%s\" lacks \"%s\"", spec, err, needle);
	ck_assert_msg(memcmp(&topo, &zero, sizeof(topo)) == 0, "\"%s\": struct not zeroed", spec);
}

START_TEST(test_bad_specs)
{
	load_fails("", 8, 0, EINVAL, "empty");
	load_fails("bogus:3", 8, 0, EINVAL, "not a valid hwloc synthetic description");
	load_fails("core:0", 8, 0, EINVAL, "pack:2 numa:2 core:4 pu:2");
	load_fails("@/nonexistent.xml", 8, 0, ENOENT, "/nonexistent.xml");
	load_fails("@", 8, 0, EINVAL, "XML");
}
END_TEST

START_TEST(test_bad_xml)
{
	char path[] = "/tmp/check_topology_XXXXXX";
	int fd = mkstemp(path);
	char spec[64];

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "<topology>junk", 14), 14);
	close(fd);
	snprintf(spec, sizeof(spec), "@%s", path);
	load_fails(spec, 8, 0, EINVAL, "not a valid hwloc XML");
	unlink(path);
}
END_TEST

START_TEST(test_bad_options)
{
	load_fails("core:4", 1, 0, EINVAL, "at least 2");
	load_fails("core:4", 0, 0, EINVAL, "at least 2");
	load_fails("core:4", 8, 4097, EINVAL, "4096");
	/* The limit itself is fine, and VPs wrap over the 4 cores. */
	load("core:4", 8, 4096, 0);
	ck_assert_uint_eq(topo.nb_vps, 4096);
	ck_assert_uint_eq(topo.vps[4095].pu, 3);
}
END_TEST

START_TEST(test_free_zeroed)
{
	struct ma_topo zero;

	memset(&topo, 0, sizeof(topo));
	memset(&zero, 0, sizeof(zero));
	ma_topo_free(&topo);
	ma_topo_free(&topo);
	ck_assert_int_eq(memcmp(&topo, &zero, sizeof(topo)), 0);
	load("core:2", 8, 0, 0);
	ma_topo_free(&topo);
	ck_assert_int_eq(memcmp(&topo, &zero, sizeof(topo)), 0);
}
END_TEST

/* ---- this machine ---- */

START_TEST(test_real_machine)
{
	hwloc_bitmap_t before, now;
	const struct ma_level *leaf;

	load(NULL, 8, 0, 0);
	check_invariants(8);
	ck_assert_int_eq(topo.fake, 0);
	ck_assert_uint_ge(topo.nb_pus, 1);
	ck_assert_uint_ge(topo.nb_cores, 1);
	ck_assert_uint_le(topo.nb_cores, topo.nb_pus);
	ck_assert_uint_eq(topo.nb_vps, topo.nb_cores);
	ck_assert_int_eq(ma_topo_bind_self(&topo, topo.nb_vps), EINVAL);

	/* Binding really moves the thread there; put it back for the other tests. */
	before = hwloc_bitmap_alloc();
	now = hwloc_bitmap_alloc();
	ck_assert_int_eq(hwloc_get_cpubind(topo.hw, before, HWLOC_CPUBIND_THREAD), 0);
	ck_assert_int_eq(ma_topo_bind_self(&topo, 0), 0);
	ck_assert_int_eq(hwloc_get_cpubind(topo.hw, now, HWLOC_CPUBIND_THREAD), 0);
	leaf = topo.vps[0].leaf;
	ck_assert(hwloc_bitmap_isequal(now, leaf->cpuset));
	ck_assert_int_eq(hwloc_set_cpubind(topo.hw, before, HWLOC_CPUBIND_THREAD), 0);
	hwloc_bitmap_free(before);
	hwloc_bitmap_free(now);
}
END_TEST

START_TEST(test_fake_never_binds)
{
	hwloc_topology_t real;
	hwloc_bitmap_t before, now;

	ck_assert_int_eq(hwloc_topology_init(&real), 0);
	ck_assert_int_eq(hwloc_topology_load(real), 0);
	before = hwloc_bitmap_alloc();
	now = hwloc_bitmap_alloc();
	ck_assert_int_eq(hwloc_get_cpubind(real, before, HWLOC_CPUBIND_THREAD), 0);
	load("pack:2 core:2 pu:2", 8, 0, 0);
	ck_assert_int_eq(ma_topo_bind_self(&topo, 3), 0);
	ck_assert_int_eq(hwloc_get_cpubind(real, now, HWLOC_CPUBIND_THREAD), 0);
	ck_assert(hwloc_bitmap_isequal(before, now));
	hwloc_bitmap_free(before);
	hwloc_bitmap_free(now);
	hwloc_topology_destroy(real);
}
END_TEST

/* ---- core kinds through XML ---- */

/* Writes a 2-package machine whose packages are two core kinds, registered in reverse order. */
static void write_kinds_xml(const char *path)
{
	hwloc_topology_t hw;
	hwloc_bitmap_t small = hwloc_bitmap_alloc(), big = hwloc_bitmap_alloc();
	struct hwloc_info_s atom = { (char *)"CoreType", (char *)"IntelAtom" };
	struct hwloc_info_s core = { (char *)"CoreType", (char *)"IntelCore" };

	ck_assert_int_eq(hwloc_topology_init(&hw), 0);
	ck_assert_int_eq(hwloc_topology_set_synthetic(hw, "pack:2 core:4 pu:2"), 0);
	ck_assert_int_eq(hwloc_topology_load(hw), 0);
	hwloc_bitmap_set_range(small, 0, 7);
	hwloc_bitmap_set_range(big, 8, 15);
	ck_assert_int_eq(hwloc_cpukinds_register(hw, big, 20, 1, &core, 0), 0);
	ck_assert_int_eq(hwloc_cpukinds_register(hw, small, 10, 1, &atom, 0), 0);
	ck_assert_int_eq(hwloc_topology_export_xml(hw, path, 0), 0);
	hwloc_bitmap_free(small);
	hwloc_bitmap_free(big);
	hwloc_topology_destroy(hw);
}

START_TEST(test_cpukinds_xml)
{
	char path[] = "/tmp/check_topology_XXXXXX";
	char spec[64], expected[96];
	int fd = mkstemp(path);
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	ck_assert_int_ge(fd, 0);
	close(fd);
	write_kinds_xml(path);
	snprintf(spec, sizeof(spec), "@%s", path);
	load(spec, 8, 0, 0);
	unlink(path);
	check_invariants(8);
	ck_assert_int_eq(topo.fake, 1);
	ck_assert_uint_eq(topo.nb_pus, 16);
	ck_assert_uint_eq(topo.nb_cores, 8);

	/* hwloc ranks kinds by efficiency: the lower one comes first. */
	ck_assert_uint_eq(topo.nb_cpukinds, 2);
	ck_assert_int_eq(topo.cpukinds[0].efficiency, 0);
	ck_assert_str_eq(topo.cpukinds[0].name, "CoreType=IntelAtom");
	ck_assert_int_eq(hwloc_bitmap_first(topo.cpukinds[0].cpuset), 0);
	ck_assert_int_eq(hwloc_bitmap_weight(topo.cpukinds[0].cpuset), 8);
	ck_assert_int_eq(topo.cpukinds[1].efficiency, 1);
	ck_assert_str_eq(topo.cpukinds[1].name, "CoreType=IntelCore");
	ck_assert_int_eq(hwloc_bitmap_first(topo.cpukinds[1].cpuset), 8);

	ck_assert_int_eq(topo.levels[0].cpukind, -1);
	ck_assert_int_eq(find("Package0")->cpukind, 0);
	ck_assert_int_eq(find("Package1")->cpukind, 1);
	ck_assert_int_eq(find("Core5")->cpukind, 1);
	ck_assert_int_eq(find("PU3")->cpukind, 0);

	out = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(out);
	ma_topo_print(&topo, out);
	fclose(out);
	ck_assert_ptr_nonnull(strstr(buf, "Package1  [PUs 8-15, VPs 4-7]  kind 1 eff 1 CoreType=IntelCore\n"));
	ck_assert_ptr_nonnull(strstr(buf, "Package0  [PUs 0-7, VPs 0-3]  kind 0 eff 0 CoreType=IntelAtom\n"));
	snprintf(expected, sizeof(expected), "topology: xml %s\n", path);
	ck_assert_ptr_nonnull(strstr(buf, expected));
	free(buf);
}
END_TEST

/* Kinds given by hand after the description: the 004 seed's 4 fast + 12 slow, one fast
 * core per package; their frequencies as hwloc's FrequencyMaxMHz. */
START_TEST(test_cpukinds_spec)
{
	load("pack:4 core:4; cpukinds=1-3,5-7,9-11,13-15@1150/0,4,8,12@2300", 8, 0, 0);
	check_invariants(8);
	ck_assert_uint_eq(topo.nb_cpukinds, 2);
	ck_assert_int_eq(topo.cpukinds[0].efficiency, 0);
	ck_assert_str_eq(topo.cpukinds[0].name, "FrequencyMaxMHz=1150");
	ck_assert_int_eq(hwloc_bitmap_weight(topo.cpukinds[0].cpuset), 12);
	ck_assert_int_eq(topo.cpukinds[1].efficiency, 1);
	ck_assert_str_eq(topo.cpukinds[1].name, "FrequencyMaxMHz=2300");
	ck_assert_int_eq(hwloc_bitmap_weight(topo.cpukinds[1].cpuset), 4);
	ck_assert_int_eq(find("Core0")->cpukind, 1);
	ck_assert_int_eq(find("Core4")->cpukind, 1);
	ck_assert_int_eq(find("Core5")->cpukind, 0);
	ck_assert_int_eq(find("Package1")->cpukind, -1);
	ck_assert_int_eq(topo.fake, 1);
	ma_topo_free(&topo);
	/* Without frequencies; spaces around the parts. */
	load("core:2 pu:2 ;  cpukinds=2-3/0-1 ", 8, 0, 1);
	ck_assert_uint_eq(topo.nb_cpukinds, 2);
	ck_assert_str_eq(topo.cpukinds[1].name, "");
	ck_assert_int_eq(find("Core0")->cpukind, 1);
	ck_assert_int_eq(find("Core1")->cpukind, 0);
}
END_TEST

/* The 004 seed's 1FC-12SC: the fast core alone on its chip (restrict= removes the other
 * three), numbered as in the description. */
START_TEST(test_restrict_spec)
{
	load("pack:4 core:4; restrict=0,4-15; cpukinds=4-15@1150/0@2300", 8, 0, 0);
	check_invariants(8);
	ck_assert_uint_eq(topo.nb_pus, 13);
	ck_assert_uint_eq(topo.nb_cores, 13);
	ck_assert_uint_eq(topo.nb_vps, 13);
	ck_assert_uint_eq(topo.nb_cpukinds, 2);
	ck_assert_int_eq(find("Package0")->cpukind, 1);
	ck_assert_uint_eq(find("Package0")->nb_pus, 1);
	ck_assert_int_eq(find("Package1")->cpukind, 0);
	ck_assert_uint_eq(find("Package1")->nb_pus, 4);
	ck_assert_int_eq(topo.vps[0].leaf->cpukind, 1);
	ck_assert_int_eq(topo.vps[1].leaf->cpukind, 0);
}
END_TEST

START_TEST(test_cpukinds_spec_errors)
{
	load_fails("pack:4 core:4; restrict=0,4-15; cpukinds=1-15/0", 8, 0, EINVAL, "PU 1 is not kept by restrict=");
	load_fails("pack:4 core:4; restrict=0,4-15; cpukinds=4-14/0", 8, 0, EINVAL, "PU 15 is in no kind");
	load_fails("core:4; restrict=", 8, 0, EINVAL, "restrict: no PU");
	load_fails("core:4; restrict=1,1", 8, 0, EINVAL, "PU 1 is listed twice");
	load_fails("core:4; restrict=7", 8, 0, EINVAL, "PUs 0 to 3");
	load_fails("core:4; cpukinds=0/1-3; cpukinds=0-3", 8, 0, EINVAL, "each once");
	load_fails("core:4; cpukinds=0-2", 8, 0, EINVAL, "PU 3 is in no kind");
	load_fails("core:4; cpukinds=0-3/3", 8, 0, EINVAL, "PU 3 is in two kinds");
	load_fails("core:4; cpukinds=0-9", 8, 0, EINVAL, "PUs 0 to 3");
	load_fails("core:4; cpukinds=0-1/x", 8, 0, EINVAL, "\"x\": expected PU numbers");
	load_fails("core:4; cpukinds=0-1/", 8, 0, EINVAL, "an empty kind");
	load_fails("core:4; cpukinds=3-1", 8, 0, EINVAL, "LOW-HIGH");
	load_fails("core:4; cpukinds=0-3@fast", 8, 0, EINVAL, "frequency in MHz");
	load_fails("core:4; speed=2", 8, 0, EINVAL, "only \"cpukinds=");
	load_fails("core:4;", 8, 0, EINVAL, "only \"cpukinds=");
	load_fails("bogus:3; cpukinds=0", 8, 0, EINVAL, "not a valid hwloc synthetic description");
}
END_TEST

static Suite *topology_suite(void)
{
	Suite *s = suite_create("topology");
	TCase *tc;

	tc = tcase_create("synthetic");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, test_pnl_tree);
	tcase_add_test(tc, test_pnl_vps_default);
	tcase_add_test(tc, test_pnl_vps_smt);
	tcase_add_test(tc, test_pnl_vps_three);
	tcase_add_test(tc, test_pnl_vps_wrap);
	tcase_add_test(tc, test_distance);
	tcase_add_test(tc, test_print);
	tcase_add_test(tc, test_print_wrap);
	tcase_add_test(tc, test_pack_numa);
	tcase_add_test(tc, test_numa_core);
	tcase_add_test(tc, test_pu_spellings);
	tcase_add_test(tc, test_single_core);
	suite_add_tcase(s, tc);

	tc = tcase_create("arity");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, test_flat_arity8);
	tcase_add_test(tc, test_flat_arity3);
	tcase_add_test(tc, test_arity2_no_single_child_group);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, test_bad_specs);
	tcase_add_test(tc, test_bad_xml);
	tcase_add_test(tc, test_bad_options);
	tcase_add_test(tc, test_free_zeroed);
	suite_add_tcase(s, tc);

	tc = tcase_create("machine");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, test_real_machine);
	tcase_add_test(tc, test_fake_never_binds);
	tcase_add_test(tc, test_cpukinds_xml);
	tcase_add_test(tc, test_cpukinds_spec);
	tcase_add_test(tc, test_restrict_spec);
	tcase_add_test(tc, test_cpukinds_spec_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(topology_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
