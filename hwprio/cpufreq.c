/*
 * cpufreq: the frequency of the CPU a worker is bound to, through Linux's cpufreq files
 * (<sysfs>/devices/system/cpu/cpu<N>/cpufreq/, root's). Two ways, chosen per policy:
 *
 * - the energy-performance preference (intel_pstate and amd-pstate in their active modes),
 *   when energy_performance_available_preferences lists the four values used and the
 *   governor is not "performance":
 *   +2 performance, +1 balance_performance, -1 balance_power, -2 power;
 * - otherwise the policy's frequency window, scaling_min_freq..scaling_max_freq, moved
 *   inside the one it had (min0..max0), the steps being taken on the hardware's range
 *   cpuinfo_min_freq..cpuinfo_max_freq (lo..hi):
 *   +2 min = max0; +1 min = lo + 3/4 (hi - lo); -1 max = lo + 1/2 (hi - lo); -2 max = min0,
 *   each bound kept within min0..max0, so no level goes beyond what the administrator set.
 * Level 0 writes back what was there before the first change.
 *
 * A cpufreq policy may drive several CPUs (related_cpus: a cluster, or CPUs whose
 * frequency the firmware coordinates), and writing through one CPU sets them all. Each
 * CPU asks for a level; the policy is set to the highest level any of its CPUs asks,
 * a CPU that asked nothing counting as 0. So a shared policy is raised as soon as one of
 * its workers is raised and lowered only when all its CPUs ask for less, as the hardware
 * resolves a shared frequency domain (the fastest request wins), and a CPU outside marcel
 * is never slowed down. Refusing different levels within a policy would not do: the
 * workers apply their levels one at a time, so a change of every CPU of a policy passes
 * through mixed levels.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ma_hwprio.h"
#include "ma_hw_file.h"

enum ma_hw_cf_mode {
	MA_HW_CF_EPP = 1, /* energy_performance_preference */
	MA_HW_CF_RANGE,   /* scaling_min_freq and scaling_max_freq */
};

/* The preferences of levels -2..+2 (0: the one found). */
static const char *const ma_hw_cf_epp_of[] = { "power", "balance_power", NULL, "balance_performance", "performance" };

/* A policy the backend has set: everything to put it back. */
struct ma_hw_cf_policy {
	cpu_set_t cpus;       /* related_cpus */
	int cpu;              /* the CPU whose directory reads and writes it */
	enum ma_hw_cf_mode mode;
	int level;            /* what its files say now */
	char epp[64];         /* EPP: the preference found */
	unsigned long min, max;       /* range: scaling_min_freq, scaling_max_freq found (kHz) */
	unsigned long hw_min, hw_max; /* range: cpuinfo_min_freq, cpuinfo_max_freq */
};

struct ma_hw_cf {
	pthread_mutex_t lock; /* all below: applies on different CPUs meet in a shared policy */
	char sysfs[PATH_MAX];
	signed char asked[CPU_SETSIZE]; /* the level each CPU asked last (0: none) */
	struct ma_hw_cf_policy *pol;
	unsigned n, cap;
};

/* ---- the files ---- */

/* cpu's cpufreq file, relative to the sysfs root, into buf: 0 or ENAMETOOLONG. */
static int ma_hw_cf_rel(char *buf, size_t size, const char *sysfs, int cpu, const char *file, struct ma_hw_why *why)
{
	int n = snprintf(buf, size, "devices/system/cpu/cpu%d/cpufreq%s%s", cpu, *file ? "/" : "", file);
	if (n < 0 || (size_t)n >= size)
		return ma_hw_fail(why, ENAMETOOLONG, "%s/devices/system/cpu/cpu%d/cpufreq/%s: path too long", sysfs, cpu, file);
	return 0;
}

/* The text of cpu's file, its last newline dropped: 0 or an errno (ENOENT when the file
 * is not there, with why filled all the same). */
/* The same, absolute. */
static int ma_hw_cf_path(char *buf, size_t size, const char *sysfs, int cpu, const char *file, struct ma_hw_why *why)
{
	char rel[PATH_MAX];
	int e = ma_hw_cf_rel(rel, sizeof(rel), sysfs, cpu, file, why);
	return e ? e : ma_hw_path(buf, size, sysfs, rel, why);
}

static int ma_hw_cf_read(const char *sysfs, int cpu, const char *file, char *buf, size_t size, struct ma_hw_why *why)
{
	char rel[PATH_MAX];
	int e = ma_hw_cf_rel(rel, sizeof(rel), sysfs, cpu, file, why);
	return e ? e : ma_hw_read(sysfs, rel, buf, size, why);
}

static int ma_hw_cf_write(const char *sysfs, int cpu, const char *file, const char *text, struct ma_hw_why *why)
{
	char rel[PATH_MAX], line[80];
	int e = ma_hw_cf_rel(rel, sizeof(rel), sysfs, cpu, file, why);
	if (e)
		return e;
	snprintf(line, sizeof(line), "%s\n", text);
	/* O_TRUNC: sysfs ignores it, a plain file (a test's tree) needs it. */
	e = ma_hw_write(sysfs, rel, line, O_TRUNC);
	if (!e)
		return 0;
	const char *hint = e == EBUSY && !strcmp(file, "energy_performance_preference")
				   ? " (intel_pstate and amd-pstate take no preference but performance under the performance governor)"
				   : e == EACCES ? " (cpufreq's files are root's)" : "";
	return ma_hw_fail(why, e, "cannot write '%s' to %s/%s: %s%s", text, sysfs, rel, strerror(e), hint);
}

/* A frequency file: kHz, a whole number. */
static int ma_hw_cf_read_khz(const char *sysfs, int cpu, const char *file, unsigned long *khz, struct ma_hw_why *why)
{
	char buf[64], q[48];
	int e = ma_hw_cf_read(sysfs, cpu, file, buf, sizeof(buf), why);
	if (e)
		return e;
	char *s = buf + strspn(buf, " \t"), *end = s;
	unsigned long v = 0;
	if (isdigit((unsigned char)*s)) {
		errno = 0;
		v = strtoul(s, &end, 10);
		if (errno)
			end = s;
	}
	if (end == s || end[strspn(end, " \t\n")]) {
		char path[PATH_MAX];
		ma_hw_cf_path(path, sizeof(path), sysfs, cpu, file, why);
		return ma_hw_fail(why, EINVAL, "%s reads '%s': expected a frequency in kHz (a whole number)", path,
				  ma_hw_quote(buf, q, sizeof(q)));
	}
	*khz = v;
	return 0;
}

/* A list of CPUs as cpufreq prints it ("0 1 2 3"), or as the rest of sysfs does ("0-3,8"). */
static int ma_hw_cf_cpus(const char *s, cpu_set_t *set)
{
	CPU_ZERO(set);
	for (;;) {
		while (*s == ' ' || *s == ',' || *s == '\t')
			s++;
		if (!*s)
			return CPU_COUNT(set) ? 0 : -1;
		char *end;
		if (!isdigit((unsigned char)*s))
			return -1;
		long a = strtol(s, &end, 10), b = a;
		s = end;
		if (*s == '-') {
			if (!isdigit((unsigned char)*++s))
				return -1;
			b = strtol(s, &end, 10);
			s = end;
		}
		if (b < a || b >= CPU_SETSIZE)
			return -1;
		for (long c = a; c <= b; c++)
			CPU_SET((int)c, set);
	}
}

/* Whether cpu's policy takes the preferences: its list names the four used, the file is
 * there, and the governor is not "performance" (intel_pstate and amd-pstate refuse every
 * preference but performance under it, with EBUSY; the window still lowers the top). */
static int ma_hw_cf_mode_of(const char *sysfs, int cpu, enum ma_hw_cf_mode *mode, struct ma_hw_why *why)
{
	char buf[512];
	int e = ma_hw_cf_read(sysfs, cpu, "energy_performance_available_preferences", buf, sizeof(buf), why);
	*mode = MA_HW_CF_RANGE;
	if (e == ENOENT)
		return 0;
	if (e)
		return e;
	unsigned found = 0;
	for (char *save, *w = strtok_r(buf, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save))
		for (unsigned l = 0; l < 5; l++)
			if (ma_hw_cf_epp_of[l] && !strcmp(w, ma_hw_cf_epp_of[l]))
				found |= 1u << l;
	char path[PATH_MAX];
	if ((e = ma_hw_cf_path(path, sizeof(path), sysfs, cpu, "energy_performance_preference", why)))
		return e;
	if (found != 0x1b || access(path, F_OK))
		return 0;
	e = ma_hw_cf_read(sysfs, cpu, "scaling_governor", buf, sizeof(buf), why);
	if (e && e != ENOENT)
		return e;
	if (e || strcmp(buf, "performance"))
		*mode = MA_HW_CF_EPP;
	return 0;
}

/* The files of the range way, as they are: the policy's window and the hardware's. */
static int ma_hw_cf_read_range(const char *sysfs, int cpu, struct ma_hw_cf_policy *p, struct ma_hw_why *why)
{
	int e;
	if ((e = ma_hw_cf_read_khz(sysfs, cpu, "cpuinfo_min_freq", &p->hw_min, why)) ||
	    (e = ma_hw_cf_read_khz(sysfs, cpu, "cpuinfo_max_freq", &p->hw_max, why)) ||
	    (e = ma_hw_cf_read_khz(sysfs, cpu, "scaling_min_freq", &p->min, why)) ||
	    (e = ma_hw_cf_read_khz(sysfs, cpu, "scaling_max_freq", &p->max, why)))
		return e;
	char path[PATH_MAX];
	ma_hw_cf_path(path, sizeof(path), sysfs, cpu, "", why);
	if (p->hw_min > p->hw_max)
		return ma_hw_fail(why, EINVAL, "%s: cpuinfo_min_freq %lu is above cpuinfo_max_freq %lu", path, p->hw_min,
				  p->hw_max);
	if (p->min > p->max)
		return ma_hw_fail(why, EINVAL, "%s: scaling_min_freq %lu is above scaling_max_freq %lu", path, p->min, p->max);
	return 0;
}

/* ---- probe ---- */

static enum ma_hw_presence ma_hw_cf_probe(const struct ma_hw_env *env, struct ma_hw_why *why)
{
	char dir[PATH_MAX];
	struct stat st;
	if (ma_hw_cf_path(dir, sizeof(dir), env->sysfs, 0, "", why))
		return MA_HW_ABSENT;
	int e = stat(dir, &st) ? errno : !S_ISDIR(st.st_mode) ? ENOTDIR : 0;
	if (e) {
		if (e == ENOENT || e == ENOTDIR) {
			ma_hw_fail(why, e, "no %s: no cpufreq driver runs CPU 0 (usual in a virtual machine)", dir);
			return MA_HW_ABSENT;
		}
		ma_hw_fail(why, e, "cannot reach %s: %s", dir, strerror(e));
		return e == EACCES ? MA_HW_NEEDS_PRIVILEGE : MA_HW_ABSENT;
	}
	enum ma_hw_cf_mode mode;
	struct ma_hw_cf_policy p;
	if (ma_hw_cf_mode_of(env->sysfs, 0, &mode, why) ||
	    (mode == MA_HW_CF_RANGE && ma_hw_cf_read_range(env->sysfs, 0, &p, why)))
		return MA_HW_ABSENT;
	const char *written[2] = { mode == MA_HW_CF_EPP ? "energy_performance_preference" : "scaling_min_freq",
				   mode == MA_HW_CF_EPP ? NULL : "scaling_max_freq" };
	for (unsigned i = 0; i < 2 && written[i]; i++) {
		char path[PATH_MAX];
		if (ma_hw_cf_path(path, sizeof(path), env->sysfs, 0, written[i], why))
			return MA_HW_ABSENT;
		if (access(path, W_OK)) {
			e = errno;
			ma_hw_fail(why, e, "cannot write %s: %s (cpufreq's files are root's)", path, strerror(e));
			return e == ENOENT ? MA_HW_ABSENT : MA_HW_NEEDS_PRIVILEGE;
		}
	}
	return MA_HW_PRESENT;
}

/* ---- levels ---- */

static unsigned long ma_hw_cf_within(unsigned long v, unsigned long lo, unsigned long hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* The window of level (the table in the file's head). */
static void ma_hw_cf_window(const struct ma_hw_cf_policy *p, int level, unsigned long *min, unsigned long *max)
{
	unsigned long span = p->hw_max - p->hw_min;
	*min = p->min;
	*max = p->max;
	switch (level) {
	case 2:
		*min = p->max;
		break;
	case 1:
		*min = ma_hw_cf_within(p->hw_min + span / 4 * 3 + span % 4 * 3 / 4, p->min, p->max);
		break;
	case -1:
		*max = ma_hw_cf_within(p->hw_min + span / 2, p->min, p->max);
		break;
	case -2:
		*max = p->min;
		break;
	}
}

static int ma_hw_cf_write_khz(const char *sysfs, int cpu, const char *file, unsigned long khz, struct ma_hw_why *why)
{
	char text[32];
	snprintf(text, sizeof(text), "%lu", khz);
	return ma_hw_cf_write(sysfs, cpu, file, text, why);
}

/* Sets p's files to level: 0 or an errno, the files as they were. */
static int ma_hw_cf_set(const char *sysfs, struct ma_hw_cf_policy *p, int level, struct ma_hw_why *why)
{
	if (p->mode == MA_HW_CF_EPP)
		return ma_hw_cf_write(sysfs, p->cpu, "energy_performance_preference",
				      level ? ma_hw_cf_epp_of[level + 2] : p->epp, why);
	unsigned long min0, max0, min1, max1;
	ma_hw_cf_window(p, p->level, &min0, &max0);
	ma_hw_cf_window(p, level, &min1, &max1);
	/* The window stays a window after each write: raising the top goes first, lowering it
	 * last (min1 <= max1 < max0 in that case). */
	static const char *const file[2] = { "scaling_min_freq", "scaling_max_freq" };
	unsigned long from[2] = { min0, max0 }, to[2] = { min1, max1 };
	int first = max1 >= max0 ? 1 : 0;
	int e = to[first] != from[first] ? ma_hw_cf_write_khz(sysfs, p->cpu, file[first], to[first], why) : 0;
	if (e)
		return e;
	e = to[!first] != from[!first] ? ma_hw_cf_write_khz(sysfs, p->cpu, file[!first], to[!first], why) : 0;
	if (e && to[first] != from[first]) {
		struct ma_hw_why undo;
		if (ma_hw_cf_write_khz(sysfs, p->cpu, file[first], from[first], &undo)) {
			size_t len = strlen(why->s);
			snprintf(why->s + len, sizeof(why->s) - len, "; and %s stays at %lu kHz: %s", file[first], to[first],
				 undo.s);
		}
	}
	return e;
}

/* ---- the backend ---- */

static int ma_hw_cf_start(void *priv, const struct ma_hw_env *env, struct ma_hw_why *why)
{
	struct ma_hw_cf *c = priv;
	if (strlen(env->sysfs) >= sizeof(c->sysfs))
		return ma_hw_fail(why, ENAMETOOLONG, "MARCEL_HWPRIO_SYSFS: a path longer than %zu characters", sizeof(c->sysfs) - 1);
	strcpy(c->sysfs, env->sysfs);
	int e = pthread_mutex_init(&c->lock, NULL);
	return e ? ma_hw_fail(why, e, "cannot create a lock: %s", strerror(e)) : 0;
}

static struct ma_hw_cf_policy *ma_hw_cf_find(struct ma_hw_cf *c, int cpu)
{
	for (unsigned i = 0; i < c->n; i++)
		if (CPU_ISSET(cpu, &c->pol[i].cpus))
			return &c->pol[i];
	return NULL;
}

/* cpu's policy as it is now, to be set. */
static int ma_hw_cf_policy_read(struct ma_hw_cf *c, int cpu, struct ma_hw_cf_policy *p, struct ma_hw_why *why)
{
	char buf[4096], q[48];
	memset(p, 0, sizeof(*p));
	p->cpu = cpu;
	int e = ma_hw_cf_read(c->sysfs, cpu, "related_cpus", buf, sizeof(buf), why);
	if (e)
		return e;
	char path[PATH_MAX];
	ma_hw_cf_path(path, sizeof(path), c->sysfs, cpu, "related_cpus", why);
	if (ma_hw_cf_cpus(buf, &p->cpus))
		return ma_hw_fail(why, EINVAL, "%s reads '%s': expected CPU numbers below %d such as '0 1 2 3'", path,
				  ma_hw_quote(buf, q, sizeof(q)), CPU_SETSIZE);
	if (!CPU_ISSET(cpu, &p->cpus))
		return ma_hw_fail(why, EINVAL, "%s reads '%s', without CPU %d itself", path, ma_hw_quote(buf, q, sizeof(q)),
				  cpu);
	for (unsigned i = 0; i < c->n; i++) {
		cpu_set_t both;
		CPU_AND(&both, &p->cpus, &c->pol[i].cpus);
		if (CPU_COUNT(&both))
			return ma_hw_fail(why, EINVAL, "%s reads '%s', which overlaps the policy of CPU %d without being it", path,
					  ma_hw_quote(buf, q, sizeof(q)), c->pol[i].cpu);
	}
	if ((e = ma_hw_cf_mode_of(c->sysfs, cpu, &p->mode, why)))
		return e;
	if (p->mode == MA_HW_CF_RANGE)
		return ma_hw_cf_read_range(c->sysfs, cpu, p, why);
	if ((e = ma_hw_cf_read(c->sysfs, cpu, "energy_performance_preference", buf, sizeof(buf), why)))
		return e;
	/* Written back as read: one word. */
	char *w = buf + strspn(buf, " \t"), *end = w + strcspn(w, " \t\n");
	if (end == w || end[strspn(end, " \t\n")] || (size_t)(end - w) >= sizeof(p->epp)) {
		ma_hw_cf_path(path, sizeof(path), c->sysfs, cpu, "energy_performance_preference", why);
		return ma_hw_fail(why, EINVAL, "%s reads '%s': expected one preference such as balance_performance", path,
				  ma_hw_quote(buf, q, sizeof(q)));
	}
	memcpy(p->epp, w, (size_t)(end - w));
	return 0;
}

/* The level cpu's policy gets: the highest its CPUs ask. */
static int ma_hw_cf_level_of(const struct ma_hw_cf *c, const struct ma_hw_cf_policy *p)
{
	int level = MA_HW_LEVEL_MIN - 1;
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &p->cpus) && c->asked[i] > level)
			level = c->asked[i];
	return level;
}

static int ma_hw_cf_apply_locked(struct ma_hw_cf *c, int cpu, int level, struct ma_hw_why *why)
{
	struct ma_hw_cf_policy *p = ma_hw_cf_find(c, cpu), fresh;
	if (!p) {
		/* A policy the backend never set asks 0 of every CPU of it, and is at 0. */
		if (!level)
			return 0;
		if (c->n == c->cap) {
			unsigned cap = c->cap ? 2 * c->cap : 8;
			struct ma_hw_cf_policy *v = realloc(c->pol, cap * sizeof(*v));
			if (!v)
				return ma_hw_fail(why, ENOMEM, "CPU %d: no memory to remember its cpufreq policy", cpu);
			c->pol = v;
			c->cap = cap;
		}
		int e = ma_hw_cf_policy_read(c, cpu, &fresh, why);
		if (e)
			return e;
		p = &fresh;
	}
	int old = c->asked[cpu];
	c->asked[cpu] = (signed char)level;
	int to = ma_hw_cf_level_of(c, p);
	if (to != p->level) {
		int e = ma_hw_cf_set(c->sysfs, p, to, why);
		if (e) {
			c->asked[cpu] = (signed char)old;
			return e;
		}
		p->level = to;
	}
	if (p == &fresh)
		c->pol[c->n++] = fresh;
	return 0;
}

static int ma_hw_cf_apply(void *priv, const struct ma_hw_target *t, int level, struct ma_hw_why *why)
{
	struct ma_hw_cf *c = priv;
	if (level < MA_HW_LEVEL_MIN || level > MA_HW_LEVEL_MAX)
		return ma_hw_fail(why, EINVAL, "level %d is not a cpufreq level: it sets levels %d..+%d", level,
				  MA_HW_LEVEL_MIN, MA_HW_LEVEL_MAX);
	if (t->cpu < 0)
		return ma_hw_fail(why, EINVAL,
				  "VP %u is not bound to one CPU: cpufreq sets the frequency of a worker's CPU, so it needs the "
				  "topology of this machine (not a synthetic MARCEL_TOPOLOGY)",
				  t->vp);
	if (t->cpu >= CPU_SETSIZE)
		return ma_hw_fail(why, EINVAL, "VP %u: CPU %d is beyond the %d CPUs cpufreq handles", t->vp, t->cpu,
				  CPU_SETSIZE);
	pthread_mutex_lock(&c->lock);
	int e = ma_hw_cf_apply_locked(c, t->cpu, level, why);
	pthread_mutex_unlock(&c->lock);
	if (e) {
		/* Which VP, in front of what went wrong. */
		char s[sizeof(why->s)];
		snprintf(s, sizeof(s), "%s", why->s);
		ma_hw_fail(why, e, "VP %u on CPU %d, level %+d: %s", t->vp, t->cpu, level, s);
	}
	return e;
}

/* Every policy set back as it was found. Policies that could not be stay remembered,
 * at the level their files have. */
static int ma_hw_cf_reset(void *priv, struct ma_hw_why *why)
{
	struct ma_hw_cf *c = priv;
	int first = 0;
	unsigned kept = 0;
	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < c->n; i++) {
		struct ma_hw_cf_policy *p = &c->pol[i];
		struct ma_hw_why w;
		int e = p->level ? ma_hw_cf_set(c->sysfs, p, 0, &w) : 0;
		if (!e)
			continue;
		if (!first)
			first = ma_hw_fail(why, e, "CPU %d's cpufreq policy back as it was: %s", p->cpu, w.s);
		c->pol[kept++] = *p;
	}
	c->n = kept;
	memset(c->asked, 0, sizeof(c->asked));
	pthread_mutex_unlock(&c->lock);
	return first;
}

static void ma_hw_cf_stop(void *priv)
{
	struct ma_hw_cf *c = priv;
	free(c->pol);
	pthread_mutex_destroy(&c->lock);
}

const struct ma_hw_backend ma_hw_cpufreq = {
	.name = "cpufreq",
	.desc = "Linux cpufreq of each worker's CPU (energy-performance preference, else the min/max frequency window)",
	.lo = MA_HW_LEVEL_MIN,
	.hi = MA_HW_LEVEL_MAX,
	.priv_size = sizeof(struct ma_hw_cf),
	.probe = ma_hw_cf_probe,
	.start = ma_hw_cf_start,
	.apply = ma_hw_cf_apply,
	.reset = ma_hw_cf_reset,
	.stop = ma_hw_cf_stop,
};
