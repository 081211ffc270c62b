/*
 * The resctrl backends: resctrl-cat biases the last-level cache (cache allocation, CAT),
 * resctrl-mba the memory bandwidth (MBA), through Linux's resctrl file system
 * (Documentation/filesystems/resctrl.rst; doc/design.md "hwprio" has the table).
 *
 * start makes two control groups, marcel-hwprio-<pid>-mid with half the resource and
 * marcel-hwprio-<pid>-low with a quarter of it, on every domain the default group's
 * schemata names. A level moves the calling thread: -1 into mid, -2 into low, 0 back into
 * the group it was in before its first move (the control group whose tasks listed it
 * then; the default group if none did). These backends only lower: the default group
 * usually has the whole resource already, so a group "with more" would change nothing,
 * and the runtime lowers the others where a policy raises one (ma_hw_levels_fit). reset moves back every thread it
 * moved and removes the groups; the kernel moves any thread still in them (one a moved
 * thread created) to the default group.
 *
 * A thread is in one control group at a time, so the two backends exclude each other:
 * both would move the same threads, each undoing the other. They use the same group
 * names, and the second to start finds them taken and says so.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ma_hwprio.h"
#include "ma_resctrl.h"

/* What the backends read of their resource. */
struct ma_hw_rc_conf {
	unsigned ndom;
	unsigned dom[MA_HW_RC_MAX_DOMAINS];
	unsigned long val[MA_HW_RC_MAX_DOMAINS]; /* the default group's */
	unsigned closids;                      /* the smallest num_closids... */
	char closids_res[32];                  /* ...of this resource */
	unsigned long cbm;                     /* cat: the whole cache */
	unsigned min_cbm_bits;
	unsigned min_bw, gran;                 /* mba: in percent */
};

/* What differs between the two backends. */
struct ma_hw_rc_kind {
	const char *name;
	const char *res;     /* its info directory and its schemata line */
	int base;            /* of its schemata values */
	const char *lacks;   /* why info/<res> may be missing */
	int (*read)(const char *root, struct ma_hw_rc_conf *c, struct ma_hw_why *why);
	unsigned long (*value)(const struct ma_hw_rc_conf *c, int mid);
};

/* A thread it moved. */
struct ma_hw_rc_moved {
	pid_t tid;
	int at;       /* -2: in low, -1: in mid, 0: back where it was */
	char *origin; /* the control group it was in; NULL: the default group */
};

struct ma_hw_rc {
	pthread_mutex_t lock; /* the rest: applies for several threads overlap */
	int inited;           /* the lock is */
	int started;          /* the groups exist */
	const struct ma_hw_rc_kind *kind;
	char root[PATH_MAX];
	char group[2][64];    /* [0] low (level -2), [1] mid (-1): group[level + 2] */
	struct ma_hw_rc_moved *moved;
	unsigned n, cap;
};

/* ---- what each resource reads and writes ---- */

static unsigned ma_hw_rc_bits(unsigned long m)
{
	return (unsigned)__builtin_popcountl(m);
}

static int ma_hw_rc_cat_read(const char *root, struct ma_hw_rc_conf *c, struct ma_hw_why *why)
{
	int e = ma_hw_rc_read_hex(root, "info/L3/cbm_mask", &c->cbm, why);
	if (!e && (!c->cbm || (c->cbm & (c->cbm + 1))))
		return ma_hw_fail(why, EINVAL, "%s/info/L3/cbm_mask holds '%lx': expected ones from bit 0", root, c->cbm);
	if (!e)
		e = ma_hw_rc_read_uint(root, "info/L3/min_cbm_bits", &c->min_cbm_bits, why);
	if (!e && c->min_cbm_bits > ma_hw_rc_bits(c->cbm))
		return ma_hw_fail(why, EINVAL, "%s/info/L3/min_cbm_bits holds '%u': more than the %u bits of cbm_mask %lx",
				  root, c->min_cbm_bits, ma_hw_rc_bits(c->cbm), c->cbm);
	return e;
}

/* Mid: the lowest half of the ways; low: the lowest quarter; contiguous (Intel refuses
 * sparse masks), and at least min_cbm_bits. */
static unsigned long ma_hw_rc_cat_value(const struct ma_hw_rc_conf *c, int mid)
{
	unsigned ways = ma_hw_rc_bits(c->cbm), n = mid ? ways / 2 : ways / 4;
	if (n < c->min_cbm_bits)
		n = c->min_cbm_bits;
	if (n < 1)
		n = 1;
	return n >= ways ? c->cbm : (1UL << n) - 1;
}

/* Also refuses a default group whose values are not percentages (the domains are read
 * first). */
static int ma_hw_rc_mba_read(const char *root, struct ma_hw_rc_conf *c, struct ma_hw_why *why)
{
	for (unsigned i = 0; i < c->ndom; i++)
		if (c->val[i] > 100)
			return ma_hw_fail(why, EINVAL,
					  "%s/schemata gives MB %u=%lu, not a percentage: mounted with -o mba_MBps, or the "
					  "CPU's own unit (AMD); resctrl-mba writes percentages",
					  root, c->dom[i], c->val[i]);
	int e = ma_hw_rc_read_uint(root, "info/MB/min_bandwidth", &c->min_bw, why);
	if (!e && c->min_bw > 100)
		return ma_hw_fail(why, EINVAL, "%s/info/MB/min_bandwidth holds '%u': expected a percentage", root, c->min_bw);
	if (!e)
		e = ma_hw_rc_read_uint(root, "info/MB/bandwidth_gran", &c->gran, why);
	if (!e && (!c->gran || c->gran > 100))
		return ma_hw_fail(why, EINVAL, "%s/info/MB/bandwidth_gran holds '%u': expected a step of 1 to 100 percent",
				  root, c->gran);
	return e;
}

/* Mid: half of it; low: a quarter; rounded up to the step as the kernel rounds, at
 * least the minimum. */
static unsigned long ma_hw_rc_mba_value(const struct ma_hw_rc_conf *c, int mid)
{
	unsigned share = mid ? 50 : 25;
	unsigned v = (share + c->gran - 1) / c->gran * c->gran;
	if (v < c->min_bw)
		v = c->min_bw;
	return v > 100 ? 100 : v;
}

static const struct ma_hw_rc_kind ma_hw_rc_cat = {
	.name = "resctrl-cat",
	.res = "L3",
	.base = 16,
	.lacks = "no L3 cache allocation on this CPU or kernel (CPU flag cat_l3)",
	.read = ma_hw_rc_cat_read,
	.value = ma_hw_rc_cat_value,
};

static const struct ma_hw_rc_kind ma_hw_rc_mba = {
	.name = "resctrl-mba",
	.res = "MB",
	.base = 10,
	.lacks = "no memory bandwidth allocation on this CPU or kernel (CPU flag mba)",
	.read = ma_hw_rc_mba_read,
	.value = ma_hw_rc_mba_value,
};

/* ---- probe and start ---- */

static int ma_hw_rc_exists(const char *root, const char *rel)
{
	char path[PATH_MAX];
	struct ma_hw_why why;
	struct stat st;
	if (ma_hw_path(path, sizeof(path), root, rel, &why))
		return -ENAMETOOLONG;
	return stat(path, &st) ? -errno : 1;
}

/* Everything k's probe and start read: 0 or an errno (EACCES: readable by root only). */
static int ma_hw_rc_conf_read(const struct ma_hw_rc_kind *k, const char *root, struct ma_hw_rc_conf *c,
			      struct ma_hw_why *why)
{
	memset(c, 0, sizeof(*c));
	int r = ma_hw_rc_exists(root, "info");
	if (r == -ENOENT || r == -ENOTDIR)
		return ma_hw_fail(why, ENOENT,
				  "%s/info is missing: resctrl is not mounted there (mount -t resctrl resctrl %s), or this "
				  "CPU or kernel lacks RDT",
				  root, root);
	if (r < 0)
		return ma_hw_fail(why, -r, "cannot read %s/info: %s", root, strerror(-r));
	char rel[32];
	snprintf(rel, sizeof(rel), "info/%s", k->res);
	if ((r = ma_hw_rc_exists(root, rel)) < 0) {
		snprintf(rel, sizeof(rel), "info/%sDATA", k->res);
		if (ma_hw_rc_exists(root, rel) == 1)
			return ma_hw_fail(why, ENOENT,
					  "%s/info/%s is missing: resctrl is mounted with -o cdp (%sCODE, %sDATA); %s "
					  "writes plain %s masks: remount without cdp",
					  root, k->res, k->res, k->res, k->name, k->res);
		return ma_hw_fail(why, ENOENT, "%s/info/%s is missing: %s", root, k->res, k->lacks);
	}
	/* On the heap: probe may run on a marcel thread's small stack. */
	const size_t size = 16384;
	char *text = malloc(size), schemata[PATH_MAX];
	if (!text)
		return ma_hw_fail(why, ENOMEM, "no memory to read %s/schemata", root);
	int e = ma_hw_read(root, "schemata", text, size, why);
	if (!e) {
		snprintf(schemata, sizeof(schemata), "%s/schemata", root);
		e = ma_hw_rc_domains(text, k->res, k->base, c->dom, c->val, MA_HW_RC_MAX_DOMAINS, &c->ndom, schemata, why);
		if (e == ENOENT)
			ma_hw_fail(why, e, "%s has no %s line: the kernel does not allocate it", schemata, k->res);
	}
	free(text);
	if (!e)
		e = k->read(root, c, why);
	if (!e)
		e = ma_hw_rc_num_closids(root, &c->closids, c->closids_res, sizeof(c->closids_res), why);
	return e;
}

static enum ma_hw_presence ma_hw_rc_probe(const struct ma_hw_rc_kind *k, const struct ma_hw_env *env,
					  struct ma_hw_why *why)
{
	struct ma_hw_rc_conf c;
	int e = ma_hw_rc_conf_read(k, env->resctrl, &c, why);
	if (e)
		return e == EACCES || e == EPERM ? MA_HW_NEEDS_PRIVILEGE : MA_HW_ABSENT;
	/* Groups are made in the root, and threads go back through its tasks. */
	static const char *const writes[] = { "", "tasks" };
	for (unsigned i = 0; i < 2; i++) {
		char path[PATH_MAX];
		if ((e = ma_hw_path(path, sizeof(path), env->resctrl, writes[i], why)))
			return MA_HW_ABSENT;
		if (faccessat(AT_FDCWD, path, W_OK, AT_EACCESS)) {
			e = errno;
			ma_hw_fail(why, e, "%s is not writable by this process (uid %u): %s; %s needs root", path,
				   (unsigned)geteuid(), strerror(e), k->name);
			return e == EACCES || e == EPERM ? MA_HW_NEEDS_PRIVILEGE : MA_HW_ABSENT;
		}
	}
	return MA_HW_PRESENT;
}

/* The group's schemata line for k: `res:id=value;...` over every domain, and the final
 * newline the kernel requires. */
static int ma_hw_rc_line(const struct ma_hw_rc_kind *k, const struct ma_hw_rc_conf *c, int mid, char *buf,
			 size_t size)
{
	unsigned long v = k->value(c, mid);
	size_t o = (size_t)snprintf(buf, size, "%s:", k->res);
	for (unsigned i = 0; i < c->ndom && o < size; i++)
		o += (size_t)snprintf(buf + o, size - o, k->base == 16 ? "%s%u=%lx" : "%s%u=%lu", i ? ";" : "", c->dom[i], v);
	if (o + 1 >= size)
		return E2BIG;
	buf[o++] = '\n';
	buf[o] = 0;
	return 0;
}

/* Removes group g (gone already: done): 0 or an errno with why filled. */
static int ma_hw_rc_rmdir(const struct ma_hw_rc *rc, unsigned g, struct ma_hw_why *why)
{
	char path[PATH_MAX];
	int e = ma_hw_path(path, sizeof(path), rc->root, rc->group[g], why);
	if (!e && rmdir(path) && errno != ENOENT)
		e = ma_hw_fail(why, errno, "cannot remove %s: %s", path, strerror(errno));
	return e;
}

static int ma_hw_rc_start(const struct ma_hw_rc_kind *k, void *priv, const struct ma_hw_env *env,
			  struct ma_hw_why *why)
{
	struct ma_hw_rc *rc = priv;
	struct ma_hw_rc_conf c;
	unsigned groups;
	int e = ma_hw_rc_conf_read(k, env->resctrl, &c, why);
	if (!e)
		e = ma_hw_rc_count_groups(env->resctrl, &groups, why);
	if (e)
		return e;
	/* CLOSID 0 is the default group's. */
	if ((long)c.closids - 1 - (long)groups < 2)
		return ma_hw_fail(why, ENOSPC,
				  "no free CLOSID: info/%s/num_closids is %u, the default group and %u other groups take "
				  "%u; %s needs 2",
				  c.closids_res, c.closids, groups, groups + 1, k->name);
	if (strlen(env->resctrl) >= sizeof(rc->root))
		return ma_hw_fail(why, ENAMETOOLONG, "%s: path too long", env->resctrl);
	strcpy(rc->root, env->resctrl);
	rc->kind = k;
	snprintf(rc->group[0], sizeof(rc->group[0]), "marcel-hwprio-%d-low", (int)getpid());
	snprintf(rc->group[1], sizeof(rc->group[1]), "marcel-hwprio-%d-mid", (int)getpid());
	char path[PATH_MAX], status[256], line[8192], rel[96];
	unsigned made = 0;
	for (; made < 2; made++) {
		if ((e = ma_hw_path(path, sizeof(path), rc->root, rc->group[1 - made], why)))
			goto undo;
		if (!mkdir(path, 0755))
			continue;
		e = errno;
		ma_hw_rc_last_status(rc->root, status, sizeof(status));
		if (e == ENOSPC)
			ma_hw_fail(why, e, "no free CLOSID: mkdir %s: %s", path, status);
		else if (e == EEXIST)
			ma_hw_fail(why, e,
				   "%s exists: resctrl-cat and resctrl-mba exclude each other (a thread is in one group), "
				   "or a process with this pid left it (rmdir it)",
				   path);
		else
			ma_hw_fail(why, e, "mkdir %s: %s (info/last_cmd_status: %s)", path, strerror(e), status);
		goto undo;
	}
	for (unsigned g = 0; g < 2; g++) {
		if ((e = ma_hw_rc_line(k, &c, (int)g, line, sizeof(line)))) {
			ma_hw_fail(why, e, "%u domains: the %s line does not fit %zu bytes", c.ndom, k->res, sizeof(line));
			goto undo;
		}
		snprintf(rel, sizeof(rel), "%s/schemata", rc->group[g]);
		/* As `echo line > schemata`: the kernel ignores the truncation and changes only the
		 * resource named; a copy of the tree (tests) then holds exactly the line. */
		if ((e = ma_hw_write(rc->root, rel, line, O_TRUNC))) {
			ma_hw_rc_last_status(rc->root, status, sizeof(status));
			ma_hw_fail(why, e, "%s/%s refused its %s line: %s (info/last_cmd_status: %s)", rc->root, rel, k->res,
				   strerror(e), status);
			goto undo;
		}
	}
	pthread_mutex_init(&rc->lock, NULL);
	rc->inited = 1;
	rc->started = 1;
	return 0;
undo:
	while (made--) {
		struct ma_hw_why w;
		ma_hw_rc_rmdir(rc, 1 - made, &w);
	}
	return e;
}

/* ---- moving threads ---- */

/* Moves tid into group ("": the default group): 0 or an errno with why filled. */
static int ma_hw_rc_move(const struct ma_hw_rc *rc, pid_t tid, const char *group, struct ma_hw_why *why)
{
	char rel[NAME_MAX + 8], buf[24], status[160];
	snprintf(rel, sizeof(rel), "%s%stasks", group, *group ? "/" : "");
	snprintf(buf, sizeof(buf), "%d\n", (int)tid);
	/* One thread per write: older kernels parse one number only. The kernel ignores the
	 * offset; appending makes a copy of the tree (tests) list every thread written, as
	 * the kernel's file lists the group's threads. */
	int e = ma_hw_write(rc->root, rel, buf, O_APPEND);
	if (!e)
		return 0;
	if (e == ESRCH)
		return ma_hw_fail(why, e, "thread %d is gone", (int)tid);
	if (e == EPERM || e == EACCES)
		return ma_hw_fail(why, e,
				  "moving thread %d into %s/%s was refused (%s): resctrl needs root, or the thread's own "
				  "user",
				  (int)tid, rc->root, rel, strerror(e));
	ma_hw_rc_last_status(rc->root, status, sizeof(status));
	return ma_hw_fail(why, e, "cannot move thread %d into %s/%s: %s (info/last_cmd_status: %s)", (int)tid, rc->root,
			  rel, strerror(e), status);
}

/* Back where it was before its first move, or to the default group if that group was
 * removed meanwhile (the kernel sent that group's threads there too). */
static int ma_hw_rc_move_back(const struct ma_hw_rc *rc, const struct ma_hw_rc_moved *m, struct ma_hw_why *why)
{
	int e = ma_hw_rc_move(rc, m->tid, m->origin ? m->origin : "", why);
	if (e == ENOENT && m->origin)
		e = ma_hw_rc_move(rc, m->tid, "", why);
	return e;
}

static struct ma_hw_rc_moved *ma_hw_rc_find(struct ma_hw_rc *rc, pid_t tid)
{
	for (unsigned i = 0; i < rc->n; i++)
		if (rc->moved[i].tid == tid)
			return &rc->moved[i];
	return NULL;
}

/* A new record for tid, filled only once the move succeeded. */
static int ma_hw_rc_first_move(struct ma_hw_rc *rc, pid_t tid, int at, struct ma_hw_why *why)
{
	if (rc->n == rc->cap) {
		unsigned cap = rc->cap ? 2 * rc->cap : 16;
		struct ma_hw_rc_moved *m = realloc(rc->moved, cap * sizeof(*m));
		if (!m)
			return ma_hw_fail(why, ENOMEM, "no memory to remember %u threads", cap);
		rc->moved = m;
		rc->cap = cap;
	}
	char origin[NAME_MAX + 1];
	const char *skip[] = { rc->group[0], rc->group[1] };
	int e = ma_hw_rc_group_of(rc->root, tid, skip, 2, origin, sizeof(origin), why);
	char *copy = NULL;
	if (!e && origin[0] && !(copy = strdup(origin)))
		e = ma_hw_fail(why, ENOMEM, "no memory to remember thread %d's group", (int)tid);
	if (!e)
		e = ma_hw_rc_move(rc, tid, rc->group[at + 2], why);
	if (e) {
		free(copy);
		return e;
	}
	rc->moved[rc->n++] = (struct ma_hw_rc_moved){ .tid = tid, .at = at, .origin = copy };
	return 0;
}

static int ma_hw_rc_apply(void *priv, const struct ma_hw_target *t, int level, struct ma_hw_why *why)
{
	struct ma_hw_rc *rc = priv;
	if (level < -2 || level > 0)
		return ma_hw_fail(why, EINVAL, "level %d is outside %s's reach: -2..0", level,
				  rc->kind ? rc->kind->name : "resctrl");
	if (!rc->inited)
		return ma_hw_fail(why, ECANCELED, "resctrl: apply before start");
	int at = level, e = 0;
	pthread_mutex_lock(&rc->lock);
	struct ma_hw_rc_moved *m = ma_hw_rc_find(rc, t->tid);
	if (!rc->started)
		e = ma_hw_fail(why, ECANCELED, "%s was reset: its groups are gone", rc->kind->name);
	else if (!m)
		e = at ? ma_hw_rc_first_move(rc, t->tid, at, why) : 0;
	else if (m->at != at) {
		e = at ? ma_hw_rc_move(rc, t->tid, rc->group[at + 2], why) : ma_hw_rc_move_back(rc, m, why);
		if (!e)
			m->at = at;
	}
	pthread_mutex_unlock(&rc->lock);
	return e;
}

static int ma_hw_rc_reset(void *priv, struct ma_hw_why *why)
{
	struct ma_hw_rc *rc = priv;
	int err = 0;
	if (!rc->inited)
		return 0;
	pthread_mutex_lock(&rc->lock);
	for (unsigned i = 0; i < rc->n; i++) {
		struct ma_hw_rc_moved *m = &rc->moved[i];
		char rel[96];
		snprintf(rel, sizeof(rel), "%s/tasks", rc->group[m->at + 2]);
		/* Only a thread its group still lists: one that ended may have left its number to
		 * a thread of another program. (If the list cannot be read, move it anyway.) */
		if (rc->started && m->at && ma_hw_rc_tasks_has(rc->root, rel, m->tid)) {
			struct ma_hw_why w;
			int e = ma_hw_rc_move_back(rc, m, &w);
			if (e && e != ESRCH && !err) {
				err = e;
				*why = w;
			}
		}
		free(m->origin);
	}
	rc->n = 0;
	for (unsigned g = 0; rc->started && g < 2; g++) {
		struct ma_hw_why w;
		int e = ma_hw_rc_rmdir(rc, g, &w);
		if (e && !err) {
			err = e;
			*why = w;
		}
	}
	rc->started = 0;
	pthread_mutex_unlock(&rc->lock);
	return err;
}

/* Groups left behind would keep two CLOSIDs of the whole machine: if reset did not run
 * (or failed half-way), it is tried once more, silently. */
static void ma_hw_rc_stop(void *priv)
{
	struct ma_hw_rc *rc = priv;
	if (!rc->inited)
		return;
	struct ma_hw_why why;
	ma_hw_rc_reset(rc, &why);
	free(rc->moved);
	rc->moved = NULL;
	rc->cap = 0;
	pthread_mutex_destroy(&rc->lock);
	rc->inited = 0;
}

/* ---- the two backends ---- */

static enum ma_hw_presence ma_hw_rc_cat_probe(const struct ma_hw_env *env, struct ma_hw_why *why)
{
	return ma_hw_rc_probe(&ma_hw_rc_cat, env, why);
}

static int ma_hw_rc_cat_start(void *priv, const struct ma_hw_env *env, struct ma_hw_why *why)
{
	return ma_hw_rc_start(&ma_hw_rc_cat, priv, env, why);
}

static enum ma_hw_presence ma_hw_rc_mba_probe(const struct ma_hw_env *env, struct ma_hw_why *why)
{
	return ma_hw_rc_probe(&ma_hw_rc_mba, env, why);
}

static int ma_hw_rc_mba_start(void *priv, const struct ma_hw_env *env, struct ma_hw_why *why)
{
	return ma_hw_rc_start(&ma_hw_rc_mba, priv, env, why);
}

/* lo..hi: the two reduced groups and the thread's own (doc/design.md "hwprio"). */
const struct ma_hw_backend ma_hw_resctrl_cat = {
	.name = "resctrl-cat",
	.desc = "Linux resctrl: last-level cache ways (CAT), half or a quarter of them for lowered threads",
	.lo = -2,
	.hi = 0,
	.priv_size = sizeof(struct ma_hw_rc),
	.probe = ma_hw_rc_cat_probe,
	.start = ma_hw_rc_cat_start,
	.apply = ma_hw_rc_apply,
	.reset = ma_hw_rc_reset,
	.stop = ma_hw_rc_stop,
};

const struct ma_hw_backend ma_hw_resctrl_mba = {
	.name = "resctrl-mba",
	.desc = "Linux resctrl: memory bandwidth (MBA), half or a quarter of it for lowered threads",
	.lo = -2,
	.hi = 0,
	.priv_size = sizeof(struct ma_hw_rc),
	.probe = ma_hw_rc_mba_probe,
	.start = ma_hw_rc_mba_start,
	.apply = ma_hw_rc_apply,
	.reset = ma_hw_rc_reset,
	.stop = ma_hw_rc_stop,
};
