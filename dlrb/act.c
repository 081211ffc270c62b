/*
 * A rank carrying out the balancer's decisions (ma_dlrb_act.h). Each failure is said once,
 * on standard error, naming the rank and what failed; the program goes on without that
 * part (a backend that failed is left out, a rebinding that failed is not retried until
 * the next decision).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "ma_dlrb_act.h"

static pid_t ma_dlrb_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* Starts backend b: 1 if it runs, 0 if not (said why if it was named). */
static int ma_dlrb_act_one(struct ma_dlrb_act *a, const struct ma_hw_backend *b, int named)
{
	struct ma_hw_why why = { "" };
	enum ma_hw_presence p = b->probe(&a->env, &why);
	if (p != MA_HW_PRESENT) {
		if (named && a->rank == 0)
			fprintf(stderr, "libmarcel-dlrb: MARCEL_DLRB_HWPRIO: backend %s is %s: %s; left out\n", b->name,
				ma_hw_presence_name(p), why.s);
		return 0;
	}
	/* cpukind raises a thread by binding it to the fast cores: it would undo the
	 * balancer's placement, and the balancer's rebinding would undo it. */
	if (!strcmp(b->name, "cpukind")) {
		if (named && a->rank == 0)
			fprintf(stderr, "libmarcel-dlrb: MARCEL_DLRB_HWPRIO: backend cpukind binds threads itself, which "
					"the balancer's placement does: left out\n");
		return 0;
	}
	if (a->nb == MA_DLRB_MAX_BACKENDS) {
		if (named && a->rank == 0)
			fprintf(stderr, "libmarcel-dlrb: MARCEL_DLRB_HWPRIO: at most %d backends; %s left out\n",
				MA_DLRB_MAX_BACKENDS, b->name);
		return 0;
	}
	void *priv = calloc(1, b->priv_size ? b->priv_size : 1);
	int e = priv ? (b->start ? b->start(priv, &a->env, &why) : 0) : ENOMEM;
	if (e) {
		if (named)
			fprintf(stderr, "libmarcel-dlrb: rank %d: MARCEL_DLRB_HWPRIO: backend %s cannot start: %s\n",
				a->rank, b->name, priv ? why.s : strerror(e));
		free(priv);
		return 0;
	}
	a->a[a->nb].b = b;
	a->a[a->nb].priv = priv;
	a->a[a->nb].failed = 0;
	a->nb++;
	return 1;
}

int ma_dlrb_act_start(struct ma_dlrb_act *a, const struct ma_topo *t, int bind, const char *value, int rank)
{
	memset(a, 0, sizeof(*a));
	a->t = t;
	a->bind = bind;
	a->rank = rank;
	a->saved_ok = sched_getaffinity(0, sizeof(a->saved), &a->saved) == 0;
	a->vp = ma_dlrb_act_current_vp(a);
	ma_hw_env_from_topo(&a->env, a->kinds, t);
	/* A backend's target is bound only where the balancer binds. */
	a->env.bound = bind;
	struct ma_hw_choice c;
	struct ma_hw_why why;
	if (ma_hw_choice_parse(value ? value : "auto", &c, &why)) {
		if (rank == 0)
			fprintf(stderr, "libmarcel-dlrb: MARCEL_DLRB_HWPRIO=%s: %s; accepted: %s. Levels are decided and "
					"reported, not applied\n", value, why.s, ma_hw_accepted());
		return -1;
	}
	if (c.automatic) {
		for (unsigned i = 0; i < ma_hw_nb_backends; i++)
			if (strcmp(ma_hw_backends[i]->name, "none"))
				ma_dlrb_act_one(a, ma_hw_backends[i], 0);
	} else {
		for (unsigned i = 0; i < c.n; i++)
			ma_dlrb_act_one(a, c.named[i], 1);
	}
	return 0;
}

int ma_dlrb_act_current_vp(const struct ma_dlrb_act *a)
{
	if (!a->bind || !a->saved_ok || CPU_COUNT(&a->saved) != 1)
		return -1;
	for (unsigned v = 0; v < a->t->nb_vps; v++)
		if (CPU_ISSET(a->t->vps[v].pu_os, &a->saved))
			return (int)v;
	return -1;
}

/* Every thread of the process to mask: the MPI library's own threads move with the rank,
 * as under mpirun's binding. 0, or the first errno (the main thread's counts most). */
static int ma_dlrb_bind_all(const cpu_set_t *mask)
{
	int e = sched_setaffinity(0, sizeof(*mask), mask) ? errno : 0;
	DIR *dir = opendir("/proc/self/task");
	if (!dir)
		return e;
	pid_t self = ma_dlrb_gettid();
	for (struct dirent *de; (de = readdir(dir));) {
		pid_t tid = (pid_t)atoi(de->d_name);
		/* A thread that ended meanwhile is not an error. */
		if (tid > 0 && tid != self && sched_setaffinity(tid, sizeof(*mask), mask) && errno != ESRCH && !e)
			e = errno;
	}
	closedir(dir);
	return e;
}

/* The target the backends act on: this thread, at VP vp (-1: unplaced). */
static struct ma_hw_target ma_dlrb_act_target(const struct ma_dlrb_act *a, int vp)
{
	struct ma_hw_target tg = vp >= 0 ? ma_hw_target_of(a->t, (unsigned)vp, ma_dlrb_gettid())
					 : (struct ma_hw_target){ .tid = ma_dlrb_gettid(), .cpu = -1, .core = -1,
								  .cache = -1, .node = -1, .kind = -1 };
	if (!a->bind)
		tg.cpu = -1;
	return tg;
}

/* Each backend to level (of a domain whose highest is top) at target tg. */
static void ma_dlrb_act_levels(struct ma_dlrb_act *a, const struct ma_hw_target *tg, int level, int top)
{
	a->self = 0;
	for (unsigned i = 0; i < a->nb; i++) {
		const struct ma_hw_backend *b = a->a[i].b;
		if (a->a[i].failed)
			continue;
		int l = ma_hw_level_fit(level, top, b->lo, b->hi);
		struct ma_hw_why why = { "" };
		if (b->apply(a->a[i].priv, tg, l, &why)) {
			fprintf(stderr, "libmarcel-dlrb: rank %d: backend %s cannot set level %d: %s; left out from now on\n",
				a->rank, b->name, l, why.s);
			a->a[i].failed = 1;
			continue;
		}
		a->self |= b->apply_self && l != 0;
	}
}

void ma_dlrb_act_set(struct ma_dlrb_act *a, int vp, int level, int top)
{
	int moved = 0;
	if (vp >= 0 && (unsigned)vp < a->t->nb_vps && vp != a->vp) {
		int e = 0;
		if (a->bind) {
			cpu_set_t m;
			CPU_ZERO(&m);
			CPU_SET(a->t->vps[vp].pu_os, &m);
			e = ma_dlrb_bind_all(&m);
			if (e)
				fprintf(stderr, "libmarcel-dlrb: rank %d: cannot bind to CPU %u: %s; it stays where it was\n",
					a->rank, a->t->vps[vp].pu_os, strerror(e));
			else
				a->moves++;
		}
		if (!e) {
			/* What a backend set for the old place (a CPU's frequency, a cache group
			 * of its domain) goes back: the place may get another rank. */
			if (a->bind && (a->level || a->top)) {
				struct ma_hw_target old = ma_dlrb_act_target(a, a->vp);
				ma_dlrb_act_levels(a, &old, 0, 0);
			}
			a->vp = vp;
			moved = a->bind;
		}
	}
	if (!moved && level == a->level && top == a->top)
		return;
	a->level = level;
	a->top = top;
	struct ma_hw_target tg = ma_dlrb_act_target(a, a->vp);
	ma_dlrb_act_levels(a, &tg, level, top);
}

void ma_dlrb_act_self(struct ma_dlrb_act *a)
{
	for (unsigned i = 0; i < a->nb; i++)
		if (a->a[i].b->apply_self && !a->a[i].failed)
			a->a[i].b->apply_self(a->a[i].priv, a->vp >= 0 ? (unsigned)a->vp : 0,
					      ma_hw_level_fit(a->level, a->top, a->a[i].b->lo, a->a[i].b->hi));
}

void ma_dlrb_act_finish(struct ma_dlrb_act *a)
{
	for (unsigned i = 0; i < a->nb; i++) {
		const struct ma_hw_backend *b = a->a[i].b;
		struct ma_hw_why why = { "" };
		if (b->reset && b->reset(a->a[i].priv, &why))
			fprintf(stderr, "libmarcel-dlrb: rank %d: backend %s cannot undo its changes: %s\n", a->rank,
				b->name, why.s);
		if (b->stop)
			b->stop(a->a[i].priv);
		free(a->a[i].priv);
	}
	a->nb = 0;
	a->self = 0;
	if (a->moves && a->saved_ok)
		ma_dlrb_bind_all(&a->saved);
}
