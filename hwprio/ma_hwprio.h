/*
 * hwprio: backends that bias a shared processor resource toward some workers, and the
 * policy that says which (doc/architecture.md §6, doc/design.md "hwprio").
 *
 * Everything here is plain data and functions over it: no header of the runtime. A
 * backend touches the operating system (sysfs, resctrl, a system call, a priority
 * instruction) and nothing of marcel; the policy is a pure function from what each worker
 * did in an iteration to levels. The runtime part (hwprio/runtime.c) measures the
 * iterations, calls the policy and hands the backends their targets.
 *
 * Levels share one scale: -2..+2, 0 meaning "as the worker was before hwprio touched it".
 * A backend maps the scale to its mechanism and says which part of it it can reach
 * (lo..hi): POWER's user-mode priorities reach -2..+1, a clamp or a cache group the
 * whole scale.
 */
#ifndef MA_HWPRIO_H
#define MA_HWPRIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MA_HW_LEVEL_MIN (-2)
#define MA_HW_LEVEL_MAX 2

/* A reason in words, for the one line a failure prints. */
struct ma_hw_why {
	char s[256];
};

/* Fills why like printf; returns e (an errno value), so that `return ma_hw_fail(...)`
 * reads as one statement. */
int ma_hw_fail(struct ma_hw_why *why, int e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

enum ma_hw_presence {
	MA_HW_PRESENT,
	MA_HW_ABSENT,          /* the mechanism is not on this machine or kernel */
	MA_HW_NEEDS_PRIVILEGE, /* there, but this process may not use it */
};

/* A kind of core (hwloc cpukinds: hybrid x86, big.LITTLE). */
#define MA_HW_MAX_CPUS 1024
struct ma_hw_kind {
	int efficiency;      /* hwloc's rank: 0 the most energy-efficient, higher faster */
	unsigned long cpus[MA_HW_MAX_CPUS / (8 * sizeof(unsigned long))]; /* OS indexes */
};

/* Where the backends find the system's files. The roots are overridable
 * (MARCEL_HWPRIO_SYSFS, MARCEL_HWPRIO_RESCTRL) so that tests run on fake trees. The
 * machine's core kinds come from the runtime's topology (none without a running
 * runtime); `bound` says whether workers are bound to their PUs (not on a synthetic or
 * XML topology, whose CPUs are not this machine's). */
struct ma_hw_env {
	const char *sysfs;   /* "/sys" */
	const char *resctrl; /* "/sys/fs/resctrl" */
	unsigned nb_kinds;
	const struct ma_hw_kind *kinds;
	int bound;
};

/* One worker's kernel thread, as a backend acts on it. */
struct ma_hw_target {
	unsigned vp;
	pid_t tid;
	int cpu;   /* OS index of the PU it is bound to, -1: not bound to one */
	int core;  /* OS index of its core (SMT siblings share it), -1: unknown */
	int cache; /* id of its last-level cache (a resctrl domain), -1: unknown */
	int node;  /* its NUMA node (a memory-bandwidth domain), -1: unknown */
	int kind;  /* its core kind (hwloc cpukinds, 0: the most efficient), -1: one kind */
};

/* A backend. probe, start, reset and stop run at marcel_init and marcel_end, on the
 * thread that calls them. apply runs on the target's own kernel thread (t->tid is the
 * caller's), at a safe point of its VP: a VP moves between kernel threads (blocking
 * sections), so each kernel thread that takes a VP applies the VP's level to itself, and
 * no backend races with a VP changing threads. Calls of one backend never overlap in
 * time for one target; for different targets they may (a backend's shared state needs
 * its own lock). NULL start, reset, stop, apply_self: nothing to do. */
struct ma_hw_backend {
	const char *name;
	const char *desc;          /* one line, for `marcel-topo` and errors */
	int lo, hi;                /* the part of the level scale it reaches */
	size_t priv_size;          /* its state, zeroed, owned by the runtime */
	/* Is the mechanism there, and may this process use it? Reads; what it must write to
	 * find out (a priority set and read back) it sets back before returning, on the
	 * calling thread only. */
	enum ma_hw_presence (*probe)(const struct ma_hw_env *env, struct ma_hw_why *why);
	/* Prepares (creates groups, reads each thing it will change): 0 or an errno. */
	int (*start)(void *priv, const struct ma_hw_env *env, struct ma_hw_why *why);
	/* Sets t, the calling kernel thread, to level (lo..hi; 0: as before start): 0 or an
	 * errno with why filled; a failure leaves t as it was. */
	int (*apply)(void *priv, const struct ma_hw_target *t, int level, struct ma_hw_why *why);
	/* Called by the worker of VP vp after each of its switches, with its level, on its
	 * own kernel thread and with no lock: for a mechanism the kernel undoes behind the
	 * program's back (POWER's PPR, reset at every system call), or one that acts on the
	 * worker's time itself (smt-quiet). At level 0 it must cost a few instructions. */
	void (*apply_self)(void *priv, unsigned vp, int level);
	/* Everything it changed back as start found it (from the thread calling marcel_end or
	 * a failing marcel_init; the targets may have ended): 0 or an errno. */
	int (*reset)(void *priv, struct ma_hw_why *why);
	void (*stop)(void *priv);
};

/* The backends built in, in the order `auto` tries them (hwprio/registry.c). */
extern const struct ma_hw_backend *const ma_hw_backends[];
extern const unsigned ma_hw_nb_backends;

const struct ma_hw_backend *ma_hw_backend_find(const char *name);
const char *ma_hw_presence_name(enum ma_hw_presence p);

/* The value of MARCEL_HWPRIO, parsed: `auto` (every backend present, nothing if none
 * is), `none` (the policy runs and its levels are traced, nothing changes) or a
 * comma-separated list of backend names, each once. Unset: hwprio is off. */
struct ma_hw_choice {
	int automatic;                        /* `auto` */
	unsigned n;                           /* named backends */
	const struct ma_hw_backend *named[8];
};

/* 0, or -1 with why naming the bad part and what is accepted. */
int ma_hw_choice_parse(const char *value, struct ma_hw_choice *c, struct ma_hw_why *why);
/* "auto, none, or a comma-separated list of: a b ..." */
const char *ma_hw_accepted(void);
/* marcel_init's checks of MARCEL_HWPRIO and MARCEL_HWPRIO_POLICY: NULL if value is
 * accepted, else what is accepted and what is wrong with it. */
const char *ma_hwprio_check(const char *value);
const char *ma_hwprio_policy_check(const char *value);

/* The runtime part's steps (hwprio/runtime.c, run by marcel/startup.c): start returns 0
 * or an errno after saying why on stderr. */
int ma_hwprio_start(void);
void ma_hwprio_quiesce(void);
void ma_hwprio_stop(void);

/* ---- the policy: pure ---- */

enum ma_hw_policy_kind {
	MA_HWP_DLRB,     /* the thesis' balancer: per core, act on the gap between workers */
	MA_HWP_UNIFORM,  /* HPCSched Uniform: utilisation over the whole run, in bands */
	MA_HWP_ADAPTIVE, /* HPCSched Adaptive: mostly the last iteration's utilisation */
};

struct ma_hw_policy_params {
	enum ma_hw_policy_kind kind;
	double threshold;  /* DLRB: act when a domain's utilisations differ by more (0.20) */
	double busy;       /* DLRB: a worker this busy counts in the phase pattern (0.95) */
	double high_util;  /* HPCSched: a worker at least this busy is high (0.85) */
	double low_util;   /* HPCSched: at most this busy is low (0.65) */
	double g, l;       /* Adaptive: weights of the whole run and of the last iteration */
	int lo, hi;        /* the levels it may give (0..2: the seeds' priorities 4..6) */
	int max_gap;       /* most levels apart within a domain (2) */
};

/* The seeds' values (doc/design.md "hwprio" gives where each comes from). */
void ma_hw_policy_defaults(struct ma_hw_policy_params *p, enum ma_hw_policy_kind kind);
const char *ma_hw_policy_name(enum ma_hw_policy_kind k);
int ma_hw_policy_find(const char *name, enum ma_hw_policy_kind *k);

/* One worker in one iteration: the time it ran the program's threads and the time they
 * waited (at the iteration's barrier, in MPI waits, idle). */
struct ma_hw_sample {
	double run, wait;
};

/* What the policy keeps between iterations, per worker. */
struct ma_hw_slot {
	int domain;       /* workers that share the resource (an SMT core) share a domain */
	int level;        /* the level it has now */
	double run_total, time_total;
	unsigned char busy; /* busy (DLRB's `busy`) in the last iteration measured... */
	int busy_level;     /* ...this many levels above the lowest of its domain */
};

struct ma_hw_policy_state {
	unsigned n;
	struct ma_hw_slot *slot;
	unsigned iterations;
	unsigned char quiet;      /* the next iteration runs unprioritised (after a phase change) */
	unsigned char suspect;    /* the last iteration looked like a phase change */
	unsigned char pattern_ok; /* slot[].busy holds a pattern */
};

enum {
	MA_HWP_CHANGED = 1,       /* some level changed */
	MA_HWP_PHASE = 2,         /* a phase change was seen: levels back to 0 for an iteration */
};

/* One iteration: s[i] is what worker i did; updates st->slot[].level. Returns
 * MA_HWP_* flags. */
int ma_hw_policy_step(const struct ma_hw_policy_params *p, struct ma_hw_policy_state *st,
		      const struct ma_hw_sample *s);

/* Fits levels into a backend's reach lo..hi keeping each domain's differences (the
 * raised ones stay raised by lowering the others where a backend can only lower). */
void ma_hw_levels_fit(const struct ma_hw_slot *slot, unsigned n, int lo, int hi, int *out);
/* The same for one level of a domain whose highest level is top. */
int ma_hw_level_fit(int level, int top, int lo, int hi);
/* The highest level of slot i's domain. */
int ma_hw_domain_top(const struct ma_hw_slot *slot, unsigned n, unsigned i);

/* ---- the unit: bubbles, or threads ---- */

/* What worker i ran in an iteration, as a path of ids (marcel's thread ids and bubble
 * uids, which never collide): the explicit bubbles holding the thread that ran the most
 * on it, outermost first, then that thread; len 0: it ran nothing. A path deeper than
 * MA_HW_UNIT_DEPTH keeps its outermost bubbles and the thread (the bubbles in between
 * are left out). */
#define MA_HW_UNIT_DEPTH 16
struct ma_hw_path {
	unsigned len;
	uint64_t id[MA_HW_UNIT_DEPTH];
};

/* Which unit each worker is judged as (0: its own, it ran nothing). Workers that share a
 * domain compare what tells them apart: the entry of each one's path just below the
 * deepest part all of the domain's paths share. Two threads of one bubble on a core are
 * compared as threads; threads of two bubbles, as those bubbles. A worker alone in its
 * domain (or alone to have run something) is its outermost entry. */
void ma_hw_units(const struct ma_hw_path *path, const struct ma_hw_slot *slot, unsigned n, uint64_t *unit);

/* Pools the samples of the workers judged as one unit (the same nonzero unit[i]): each
 * gets the unit's utilisation (their run and wait summed), scaled to its own time, so
 * the policy raises or lowers a bubble's workers together, by how busy the bubble is. */
void ma_hw_samples_pool(const struct ma_hw_sample *s, const uint64_t *unit, unsigned n, struct ma_hw_sample *out);

/* A level a program set on a bubble by hand (marcel_bubble_set_hwprio). */
struct ma_hw_pin {
	uint64_t id;
	int level;
};
/* The pin that applies to a worker that ran path: the innermost bubble of the path that
 * has one. Its index in pin, or -1. */
int ma_hw_pin_of(const struct ma_hw_path *path, const struct ma_hw_pin *pin, unsigned nb_pins);

#endif
