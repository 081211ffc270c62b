/*
 * marcel-sim: what marcel's strategies and hwprio policy would do on a machine one does
 * not have, and what it would buy. Usage: marcel-sim --help.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ma_sim.h"

#define SIM_MAX_RUNS 32

static void usage(FILE *out)
{
	fprintf(out,
		"usage: marcel-sim [options]\n"
		"  --machine NAME|KEY=VALUE[,KEY=VALUE...]  a preset (power5, itanium16, x86smt, xeon-ht) then\n"
		"                 parameters: topology=SPEC smt=0|1 numa_factor=X node_bw=X smt_pair=X\n"
		"                 smt_model=share|power5 smt_up=X smt_down=X smt_idle=release|keep\n"
		"                 quiet_share=X migrate_us=X timeslice_ms=X wake_us=X sched_latency_us=X\n"
		"                 hw_lo=L hw_hi=L\n"
		"                 (repeat the option to add to it; doc/simulator.md explains each)\n"
		"  --topology SPEC   the machine's topology (as MARCEL_TOPOLOGY: commas allowed, and\n"
		"                    \"; cpukinds=PUS@MHZ/PUS@MHZ\" for core kinds, slowest first)\n"
		"  --workload SPEC   NAME[:KEY=VALUE...]; --list shows the workloads and keys\n"
		"  --strategy A[,B]  marcel strategies to compare (default: null)\n"
		"  --hwprio P[,Q]    off, dlrb, uniform, adaptive, static=L/L/... (a level per\n"
		"                    thread), or balance (libmarcel-dlrb: each thread a rank, placed\n"
		"                    and given levels); several to compare (default: off)\n"
		"  --seed N          the run's seed (default 1)\n"
		"  --trace FILE      the first run's trace, in MARCEL_TRACE's format\n"
		"  --snapshot FILE   the first run's scheduler state, in marcel_sched_snapshot_json's\n"
		"                    format, at the end of its first iteration or at --snapshot-at S;\n"
		"                    without iterations, when the most threads are alive (it says so)\n"
		"  --threads         per-thread figures for every run\n"
		"  --list            the workloads and strategies\n");
}

static int set_param(struct sim_machine *m, char *kv)
{
	char *val = strchr(kv, '=');
	if (!val) {
		if (!sim_machine_preset(m, kv))
			return 0;
		fprintf(stderr, "marcel-sim: --machine %s: not a preset (power5, itanium16, x86smt, xeon-ht) nor KEY=VALUE\n", kv);
		return -1;
	}
	*val++ = 0;
	char *end;
	double x = strtod(val, &end);
	int num = *val && !*end;
	if (!strcmp(kv, "topology")) {
		m->topology = val;
		return 0;
	}
	if (!strcmp(kv, "smt_model") && (!strcmp(val, "share") || !strcmp(val, "power5"))) {
		m->smt_model = !strcmp(val, "share") ? SIM_SMT_SHARE : SIM_SMT_POWER5;
		return 0;
	}
	if (!strcmp(kv, "smt_idle") && (!strcmp(val, "release") || !strcmp(val, "keep"))) {
		m->smt_idle_release = !strcmp(val, "release");
		return 0;
	}
	struct {
		const char *key;
		double *dst;
		double lo, hi, scale;
	} nums[] = {
		{ "numa_factor", &m->numa_factor, 1, 100, 1 },   { "node_bw", &m->node_bw, 0, 1e6, 1 },
		{ "smt_pair", &m->smt_pair, 0.01, 1, 1 },
		{ "smt_up", &m->smt_up, 0, 10, 1 },              { "smt_down", &m->smt_down, 0, 10, 1 },
		{ "quiet_share", &m->quiet_share, 0, 0.5, 1 },   { "migrate_us", &m->migrate_s, 0, 1e6, 1e-6 },
		{ "timeslice_ms", &m->timeslice_s, 0.001, 1e4, 1e-3 },  { "wake_us", &m->wake_s, 0, 1e6, 1e-6 },
		{ "sched_latency_us", &m->sched_latency_s, 0, 1e6, 1e-6 },
	};
	for (unsigned i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
		if (!strcmp(kv, nums[i].key)) {
			if (!num || x < nums[i].lo || x > nums[i].hi) {
				fprintf(stderr, "marcel-sim: --machine %s=%s: expected a number from %g to %g\n", kv, val,
					nums[i].lo, nums[i].hi);
				return -1;
			}
			*nums[i].dst = x * nums[i].scale;
			return 0;
		}
	if ((!strcmp(kv, "smt") && num && (x == 0 || x == 1))) {
		m->smt = (int)x;
		return 0;
	}
	if ((!strcmp(kv, "hw_lo") || !strcmp(kv, "hw_hi")) && num && x >= -2 && x <= 2 && x == (int)x) {
		*(!strcmp(kv, "hw_lo") ? &m->hw_lo : &m->hw_hi) = (int)x;
		return 0;
	}
	fprintf(stderr, "marcel-sim: --machine %s=%s: unknown parameter or bad value (marcel-sim --help lists them)\n",
		kv, val);
	return -1;
}

struct hw_choice {
	enum sim_hw_mode mode;
	enum ma_hw_policy_kind policy;
	int *levels;
	char name[64];
};

static int parse_hw(char *spec, struct hw_choice *c, unsigned nb_threads)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", spec);
	if (!strcmp(spec, "off"))
		return 0;
	if (!strncmp(spec, "static=", 7)) {
		c->mode = SIM_HW_STATIC;
		c->levels = calloc(nb_threads ? nb_threads : 1, sizeof(int));
		if (!c->levels)
			return -1;
		char *p = spec + 7;
		for (unsigned t = 0; t < nb_threads; t++) {
			char *end;
			long l = strtol(p, &end, 10);
			if (end == p || l < -2 || l > 2 || (*end && *end != '/')) {
				fprintf(stderr, "marcel-sim: --hwprio %s: expected %u levels from -2 to 2 separated by '/'\n",
					spec, nb_threads);
				return -1;
			}
			c->levels[t] = (int)l;
			p = *end ? end + 1 : end;
		}
		return 0;
	}
	if (!strcmp(spec, "balance")) {
		c->mode = SIM_HW_BALANCE;
		return 0;
	}
	c->mode = SIM_HW_POLICY;
	if (ma_hw_policy_find(spec, &c->policy)) {
		fprintf(stderr, "marcel-sim: --hwprio %s: expected off, dlrb, uniform, adaptive, balance or static=L/L/...\n",
			spec);
		return -1;
	}
	return 0;
}

/* What main allocates, freed at exit whichever way it returns (a bad option returns 2
 * from anywhere; the leak checker of the sanitizer builds runs after this). */
static struct {
	char *strings[64];
	unsigned nb_strings;
	struct sim_workload *w;
	struct hw_choice *hws;
	unsigned nh;
} owned;

static void owned_free(void)
{
	for (unsigned i = 0; i < owned.nb_strings; i++)
		free(owned.strings[i]);
	for (unsigned j = 0; owned.hws && j < owned.nh; j++)
		free(owned.hws[j].levels);
	if (owned.w)
		sim_workload_free(owned.w);
}

/* A copy of s kept until exit: --machine's topology= and the lists point into them. */
static char *kept(const char *s)
{
	char *c = strdup(s);
	if (!c || owned.nb_strings == sizeof(owned.strings) / sizeof(owned.strings[0])) {
		fprintf(stderr, "marcel-sim: out of memory, or more than 60 options\n");
		free(c);
		exit(2);
	}
	return owned.strings[owned.nb_strings++] = c;
}

/* A short decimal that reads back within [from, to), or exactly as from: the time to
 * give --snapshot-at for a state that holds from one event to the next. */
static void seconds(char *buf, size_t len, double from, double to)
{
	double mid = from + (to - from) / 2;
	for (int digits = 1; digits <= 17; digits++) {
		snprintf(buf, len, "%.*g", digits, mid);
		double x = strtod(buf, NULL);
		if (x >= from && x < to)
			return;
	}
	snprintf(buf, len, "%.17g", from);
}

/* Closes the snapshot file f (path) after the first run; r: its result, NULL if it failed
 * (its error said). A user never gets an empty file with status 0: a snapshot that was
 * not taken removes the file with a line saying why, and one taken where no iteration
 * ends says when. 0, or 1 after a line on stderr. */
static int snapshot_close(FILE *f, const char *path, const char *at, const char *workload, const struct sim_result *r)
{
	struct stat st;
	/* Only a file made here is removed, never a device or pipe given as FILE. */
	int regular = !fstat(fileno(f), &st) && S_ISREG(st.st_mode);
	long written = regular ? ftell(f) : 1;
	if (fclose(f)) {
		fprintf(stderr, "marcel-sim: --snapshot %s: %s\n", path, strerror(errno));
		if (regular)
			unlink(path);
		return 1;
	}
	if (!r) {
		if (regular && written <= 0)
			unlink(path);
		return 1;
	}
	char t[32];
	switch (r->snapshot) {
	case SIM_SNAP_NONE:
		if (regular)
			unlink(path);
		if (at)
			fprintf(stderr, "marcel-sim: --snapshot-at %s: workload %s ends at %g s, before it: no snapshot "
					"in %s (give an earlier time)\n", at, workload, r->makespan, path);
		else
			fprintf(stderr, "marcel-sim: --snapshot %s: workload %s has no instant with a thread alive: "
					"no snapshot\n", path, workload);
		return 1;
	case SIM_SNAP_PEAK:
		seconds(t, sizeof(t), r->snapshot_t, r->snapshot_until);
		fprintf(stderr, "marcel-sim: --snapshot %s: workload %s has no iterations: the snapshot is at %s s, when "
				"the most threads were alive (%u of %u; --snapshot-at %s takes the same)\n",
			path, workload, t, r->snapshot_live, r->nb_threads, t);
		return 0;
	default:
		return 0;
	}
}

int main(int argc, char **argv)
{
	atexit(owned_free);
	struct sim_machine m;
	sim_machine_defaults(&m);
	const char *workload = "metbench", *strategies = "null", *hw = "off", *trace = NULL, *snapshot = NULL;
	const char *topology = NULL;
	double snapshot_at = -1;
	const char *snapshot_at_arg = NULL;
	unsigned long long seed = 1;
	int per_thread = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int has = i + 1 < argc;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(a, "--list")) {
			printf("workloads:\n");
			sim_workload_list(stdout);
			printf("strategies:\n");
			sim_strategy_list(stdout);
			return 0;
		}
		if (!strcmp(a, "--threads")) {
			per_thread = 1;
			continue;
		}
		if (!has) {
			fprintf(stderr, "marcel-sim: %s: needs a value, or is not an option (marcel-sim --help)\n", a);
			return 2;
		}
		const char *v = argv[++i];
		if (!strcmp(a, "--machine")) {
			char *copy = kept(v), *save = NULL;
			for (char *kv = strtok_r(copy, ",", &save); kv; kv = strtok_r(NULL, ",", &save))
				if (set_param(&m, kv))
					return 2;
		} else if (!strcmp(a, "--topology")) {
			topology = v;
		} else if (!strcmp(a, "--workload")) {
			workload = v;
		} else if (!strcmp(a, "--strategy")) {
			strategies = v;
		} else if (!strcmp(a, "--hwprio")) {
			hw = v;
		} else if (!strcmp(a, "--trace")) {
			trace = v;
		} else if (!strcmp(a, "--snapshot")) {
			snapshot = v;
		} else if (!strcmp(a, "--snapshot-at")) {
			char *end;
			snapshot_at = strtod(v, &end);
			if (!*v || *end || !(snapshot_at >= 0)) {
				fprintf(stderr, "marcel-sim: --snapshot-at %s: expected a time in seconds, 0 or more\n", v);
				return 2;
			}
			snapshot_at_arg = v;
		} else if (!strcmp(a, "--seed")) {
			char *end;
			seed = strtoull(v, &end, 10);
			if (*v < '0' || *v > '9' || *end) {
				fprintf(stderr, "marcel-sim: --seed %s: expected a non-negative integer\n", v);
				return 2;
			}
		} else {
			fprintf(stderr, "marcel-sim: %s: unknown option (marcel-sim --help)\n", a);
			return 2;
		}
	}
	if (snapshot_at_arg && !snapshot) {
		fprintf(stderr, "marcel-sim: --snapshot-at %s: needs --snapshot FILE (where to write it)\n", snapshot_at_arg);
		return 2;
	}
	/* --topology wins over a preset's, wherever it was given. */
	if (topology)
		m.topology = topology;
	/* The workload is made for the machine's VPs: load the topology once to count them. */
	static struct sim_workload w; /* freed at exit (owned) */
	char err[300];
	struct sim_config probe = { .machine = m, .strategy = "null" };
	struct sim_workload none;
	unsigned nb_vps = 0;
	if (!sim_workload_make(&none, "metbench:ranks=1:iters=1:unit=0.000001", 1, err, sizeof(err))) {
		struct sim_result r;
		if (sim_run(&probe, &none, &r, err, sizeof(err))) {
			fprintf(stderr, "marcel-sim: %s\n", err);
			sim_workload_free(&none);
			return 2;
		}
		nb_vps = r.nb_vps;
		sim_result_free(&r);
		sim_workload_free(&none);
	}
	if (sim_workload_make(&w, workload, nb_vps ? nb_vps : 1, err, sizeof(err))) {
		fprintf(stderr, "marcel-sim: --workload %s: %s\n", workload, err);
		return 2;
	}
	owned.w = &w;
	char *slist = kept(strategies), *hlist = kept(hw), *save;
	const char *snames[SIM_MAX_RUNS];
	static struct hw_choice hws[SIM_MAX_RUNS];
	owned.hws = hws;
	unsigned ns = 0, nh = 0;
	for (char *x = strtok_r(slist, ",", &save); x && ns < SIM_MAX_RUNS; x = strtok_r(NULL, ",", &save)) {
		if (!sim_strategy_find(x)) {
			fprintf(stderr, "marcel-sim: --strategy %s: not one of marcel's:\n", x);
			sim_strategy_list(stderr);
			return 2;
		}
		snames[ns++] = x;
	}
	for (char *x = strtok_r(hlist, ",", &save); x && nh < SIM_MAX_RUNS; x = strtok_r(NULL, ",", &save)) {
		owned.nh = nh + 1;
		if (parse_hw(x, &hws[nh++], w.nb_threads))
			return 2;
	}
	printf("# %s on %s (%u VPs%s)\n", w.desc, m.topology, nb_vps, m.smt ? ", one per PU" : "");
	printf("%-10s %-12s %12s %8s %10s %8s %12s\n", "strategy", "hwprio", "makespan_s", "vs_first", "hw_changes",
	       "events", "apps_gmean_s");
	double first = 0;
	int status = 0;
	for (unsigned i = 0; i < ns; i++)
		for (unsigned j = 0; j < nh; j++) {
			struct sim_config c = { .machine = m, .strategy = snames[i], .hw = hws[j].mode,
						.policy = hws[j].policy, .static_level = hws[j].levels, .seed = seed };
			FILE *tf = NULL, *sf = NULL;
			if (trace && !i && !j) {
				tf = fopen(trace, "w");
				if (!tf) {
					fprintf(stderr, "marcel-sim: --trace %s: %s\n", trace, strerror(errno));
					return 2;
				}
				c.trace = tf;
			}
			if (snapshot && !i && !j) {
				sf = fopen(snapshot, "w");
				if (!sf) {
					fprintf(stderr, "marcel-sim: --snapshot %s: %s\n", snapshot, strerror(errno));
					if (tf)
						fclose(tf);
					return 2;
				}
				c.snapshot = sf;
				c.snapshot_at = snapshot_at;
			}
			struct sim_result r;
			int e = sim_run(&c, &w, &r, err, sizeof(err));
			if (tf)
				fclose(tf);
			if (e)
				fprintf(stderr, "marcel-sim: %s: %s\n", snames[i], err);
			if (sf && snapshot_close(sf, snapshot, snapshot_at_arg, workload, e ? NULL : &r))
				status = 1;
			if (e) {
				status = 1;
				continue;
			}
			if (!first)
				first = r.makespan;
			unsigned apps;
			double gm = sim_apps_gmean(&w, &r, &apps);
			printf("%-10s %-12s %12.4f %8.4f %10u %8lu", r.strategy, hws[j].name, r.makespan,
			       first > 0 ? r.makespan / first : 1.0, r.hw_changes, r.events);
			/* The 004 seed's measure, where there are applications side by side. */
			if (apps > 1)
				printf(" %12.4f\n", gm);
			else
				printf(" %12s\n", "-");
			if (per_thread)
				for (unsigned t = 0; t < r.nb_threads; t++) {
					double tot = r.thread[t].run + r.thread[t].wait;
					printf("  thread %u: run %.4f s (%.2f%% of its time), wait %.4f s (%.4f s of it "
					       "scheduler latency), ends at %.4f s, %u migrations, last VP %d\n",
					       t, r.thread[t].run, tot > 0 ? 100 * r.thread[t].run / tot : 0, r.thread[t].wait,
					       r.thread[t].latency, r.thread[t].end, r.thread[t].migrations, r.thread[t].last_vp);
				}
			sim_result_free(&r);
		}
	return status;
}
