/*
 * spread_decide_1024pu_4096thr: what one placement decision of the `spread` strategy costs
 * on a big machine, without running a thread. The decision is a pure function
 * (strategies/ma_distrib.h) of a topology and a view tree, so it is measured alone: the
 * synthetic 1024-PU machine "pack:4 numa:4 l3:4 core:16 pu:1" (1024 VPs, 1237 items with
 * the default fan-out bound of 8) and 64 bubbles of 64 threads each, decided from the
 * machine; microseconds per decision. Target: < 2 ms (bench/RESULTS.md).
 *
 * Peer: `roundrobin`, the naive placement of the same tree that knows nothing of loads or
 * levels: a walk handing each thread the next leaf in turn. It is the floor of any
 * placement (touching every node once); the ratio says how much spread's balancing costs
 * over it (ratio < 1: spread is slower, as expected).
 *
 * Each repetition times N decisions of each kind (alternating) and reports the mean; the
 * line gives the median of the repetitions. Results are checked: every thread on a leaf,
 * every leaf with its 4 threads.
 */
#include "common.h"
#include "ma_topology.h"
#include "ma_distrib.h"

#define SPEC "pack:4 numa:4 l3:4 core:16 pu:1"
#define NB_BUBBLES 64
#define THREADS_PER 64

static struct ma_dnode nodes[NB_BUBBLES * (THREADS_PER + 1)];
static struct ma_dnode *kids[NB_BUBBLES * THREADS_PER];
static struct ma_dnode *tops[NB_BUBBLES];

static void build_tree(void)
{
	unsigned n = 0, k = 0;
	for (unsigned b = 0; b < NB_BUBBLES; b++) {
		struct ma_dnode *x = &nodes[n++];
		*x = (struct ma_dnode){ .is_bubble = 1, .load = -1, .fixed_item = -1, .pref_node = -1 };
		x->children = &kids[k];
		for (unsigned t = 0; t < THREADS_PER; t++) {
			struct ma_dnode *y = &nodes[n++];
			*y = (struct ma_dnode){ .load = -1, .fixed_item = -1, .pref_node = -1 };
			kids[k++] = y;
		}
		x->nb_children = THREADS_PER;
		tops[b] = x;
	}
}

/* The peer: each thread to the next leaf, bubbles burst on the machine. */
static unsigned *leaves, nb_leaves;

static void roundrobin(void)
{
	unsigned next = 0;
	for (unsigned b = 0; b < NB_BUBBLES; b++) {
		struct ma_dnode *x = tops[b];
		x->burst = 1;
		x->item = 0;
		for (unsigned t = 0; t < x->nb_children; t++) {
			x->children[t]->item = (int)leaves[next];
			if (++next == nb_leaves)
				next = 0;
		}
	}
}

static void check(const struct ma_topo *topo, const char *who)
{
	unsigned *per = calloc(topo->nb_levels, sizeof(*per));
	if (!per)
		bench_fail("out of memory");
	for (unsigned b = 0; b < NB_BUBBLES; b++) {
		const struct ma_dnode *x = tops[b];
		for (unsigned t = 0; t < x->nb_children; t++) {
			/* A thread of a closed bubble runs where the bubble is. */
			int it = x->burst ? x->children[t]->item : x->item;
			if (it < 0 || (unsigned)it >= topo->nb_levels)
				bench_fail("%s: thread %u.%u not placed", who, b, t);
			per[it]++;
		}
	}
	for (unsigned i = 0; i < nb_leaves; i++)
		if (per[leaves[i]] != NB_BUBBLES * THREADS_PER / nb_leaves)
			bench_fail("%s: %s has %u threads, expected %u", who, topo->levels[leaves[i]].name,
				   per[leaves[i]], NB_BUBBLES * THREADS_PER / nb_leaves);
	free(per);
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	bench_parse(argc, argv, &o);
	struct ma_topo topo;
	struct ma_topo_options topt = { .spec = SPEC, .maxarity = 8 };
	char err[256];
	if (ma_topo_load(&topo, &topt, err, sizeof(err)))
		bench_fail("topology \"%s\": %s", SPEC, err);
	if (topo.nb_vps != 1024)
		bench_fail("topology \"%s\": %u VPs, expected 1024", SPEC, topo.nb_vps);
	leaves = malloc(topo.nb_levels * sizeof(*leaves));
	if (!leaves)
		bench_fail("out of memory");
	for (unsigned i = 0; i < topo.nb_levels; i++) {
		const struct ma_level *l = &topo.levels[i];
		unsigned below = 0;
		for (unsigned c = 0; c < l->arity; c++)
			below += l->children[c]->nb_vps != 0;
		if (l->nb_vps && !below)
			leaves[nb_leaves++] = i;
	}
	build_tree();

	long n = o.full ? 200 : 50;
	double *m = malloc((size_t)o.reps * sizeof(*m)), *p = malloc((size_t)o.reps * sizeof(*p));
	if (!m || !p)
		bench_fail("out of memory");
	for (int r = -1; r < o.reps; r++) { /* r == -1: warm-up */
		uint64_t t0 = bench_now_ns();
		for (long i = 0; i < n; i++)
			if (ma_distrib_decide(&topo, 0, tops, NB_BUBBLES, NULL, 0))
				bench_fail("ma_distrib_decide failed");
		uint64_t t1 = bench_now_ns();
		check(&topo, "spread");
		for (long i = 0; i < n; i++)
			roundrobin();
		uint64_t t2 = bench_now_ns();
		check(&topo, "roundrobin");
		if (r >= 0) {
			m[r] = (double)(t1 - t0) / 1e3 / (double)n;
			p[r] = (double)(t2 - t1) / 1e3 / (double)n;
		}
	}
	bench_line("spread_decide_1024pu_4096thr", "us", bench_stat_of(m, o.reps), "roundrobin",
		   bench_stat_of(p, o.reps),
		   "%d bubbles x %d threads on \"%s\" (%u items, %u leaves), %ld decisions per repetition; "
		   "peer: each thread to the next leaf",
		   NB_BUBBLES, THREADS_PER, SPEC, topo.nb_levels, nb_leaves, n);
	free(m);
	free(p);
	free(leaves);
	ma_topo_free(&topo);
	return 0;
}
