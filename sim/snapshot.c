/*
 * A snapshot of the simulated scheduler, in the JSON of marcel_sched_snapshot_write_json
 * (marcel/include/marcel/snapshot.h): queues in topology pre-order then the VPs' own,
 * entities in bubble-tree pre-order from the root. Whatever draws or reads the library's
 * snapshots reads these alike. Topology names contain no character JSON escapes. Also
 * when it is taken: at a given time, at the end of the first iteration, or (a run
 * without iterations) where the most threads are alive, which sim_run finds by watching.
 */
#include <errno.h>
#include <stdlib.h>
#include "ma_sim_int.h"

/* Entity indexes in pre-order: the root 0, then each bubble before its members. */
static void sim_snap_number(struct sim_ent *e, int *next, int *index_of_thread, int *index_of_bubble)
{
	int me = (*next)++;
	if (e->is_bubble) {
		if (e->index >= 0)
			index_of_bubble[e->index] = me;
		for (unsigned i = 0; i < e->nb_kids; i++)
			sim_snap_number(e->kids[i], next, index_of_thread, index_of_bubble);
	} else {
		index_of_thread[e->index] = me;
	}
}

static int sim_snap_index(const struct sim_ent *e, const int *it, const int *ib)
{
	if (!e)
		return -1;
	if (!e->is_bubble)
		return it[e->index];
	return e->index >= 0 ? ib[e->index] : 0;
}

static void sim_snap_entity(struct sim *s, FILE *out, struct sim_ent *e, int depth, const int *it, const int *ib,
			    int *first)
{
	int idx = sim_snap_index(e, it, ib);
	int parent = e == &s->root ? -1 : sim_snap_index(e->parent, it, ib);
	int state, queue, held_by = -1, running_vp = -1;
	long long threads = 0, ready = 0, running = 0, cpu = 0;
	if (e->is_bubble) {
		state = e->opened;
		queue = e->queue >= 0 ? e->queue : e->item;
		for (unsigned t = 0; t < s->w->nb_threads; t++) {
			const struct sim_ent *x = &s->thread[t];
			int within = 0;
			for (const struct sim_ent *b = x->parent; b && !within; b = b->parent)
				within = b == e;
			if (!within || x->state == SIM_T_DONE)
				continue;
			threads++;
			ready += x->state == SIM_T_READY;
			running += x->state == SIM_T_RUNNING;
			cpu += (long long)(x->cpu * 1e9);
		}
	} else {
		static const int states[] = { [SIM_T_READY] = 1, [SIM_T_RUNNING] = 2, [SIM_T_BLOCKED] = 3,
					      [SIM_T_DONE] = 4 };
		state = states[e->state];
		struct sim_ent *u = e->item < 0 ? sim_unit_of(e) : NULL;
		queue = e->item >= 0 ? e->item : u ? (u->queue >= 0 ? u->queue : u->item) : -1;
		if (u && e->in_cache)
			held_by = sim_snap_index(u, it, ib);
		running_vp = e->state == SIM_T_RUNNING ? e->vp : -1;
		threads = e->state != SIM_T_DONE;
		ready = e->state == SIM_T_READY;
		running = e->state == SIM_T_RUNNING;
		cpu = (long long)(e->cpu * 1e9);
	}
	char name[32];
	if (e == &s->root)
		snprintf(name, sizeof(name), "root");
	else
		snprintf(name, sizeof(name), "%s %llu", e->is_bubble ? "bubble" : "thread",
			 (unsigned long long)(e->id & ~SIM_BUBBLE_TAG));
	fprintf(out,
		"%s\n{\"index\":%d,\"kind\":\"%s\",\"uid\":%llu,\"id\":-1,\"name\":\"%s\",\"implicit\":0,\"state\":%d,"
		"\"parent\":%d,\"depth\":%d,\"queue\":%d,\"held_by\":%d,\"running_vp\":%d,\"prio\":%d,\"sched_level\":0,"
		"\"load\":%lld,\"nb_threads\":%lld,\"nb_ready\":%lld,\"nb_running\":%lld,\"cpu_ns\":%lld,\"last_vp\":%d,"
		"\"last_level\":%d,\"memory\":0}",
		*first ? "" : ",", idx, e->is_bubble ? "bubble" : "thread", (unsigned long long)e->id, name, state, parent,
		depth, queue, held_by, running_vp, e->prio, threads, threads, ready, running, cpu,
		e->is_bubble ? -1 : e->last_vp, e->last_item);
	*first = 0;
	if (e->is_bubble)
		for (unsigned i = 0; i < e->nb_kids; i++)
			sim_snap_entity(s, out, e->kids[i], depth + 1, it, ib, first);
}

int sim_snapshot_write(struct sim *s, FILE *out)
{
	int *it = calloc(s->w->nb_threads ? s->w->nb_threads : 1, sizeof(int));
	int *ib = calloc(s->w->nb_bubbles ? s->w->nb_bubbles : 1, sizeof(int));
	if (!it || !ib) {
		free(it);
		free(ib);
		return ENOMEM;
	}
	int next = 0;
	sim_snap_number(&s->root, &next, it, ib);
	fprintf(out, "{\"strategy\":\"%s\",\"vps\":%u,\"queues\":[", s->s->name, s->nv);
	for (unsigned q = 0; q < s->nq; q++) {
		int vp = q >= s->nl ? (int)(q - s->nl) : -1;
		const struct ma_level *l = vp >= 0 ? s->topo.vps[vp].leaf : &s->topo.levels[q];
		char name[40];
		if (vp >= 0)
			snprintf(name, sizeof(name), "VP%d", vp);
		else
			snprintf(name, sizeof(name), "%s", l->name);
		int running = vp >= 0 && s->vp[vp].cur ? it[s->vp[vp].cur->index] : -1;
		fprintf(out,
			"%s\n{\"index\":%u,\"name\":\"%s\",\"item\":%u,\"vp\":%d,\"parent\":%d,\"depth\":%u,\"kinds\":%u,"
			"\"first_vp\":%u,\"nb_vps\":%u,\"running\":%d,\"hwprio_level\":%d,\"queued\":[",
			q ? "," : "", q, name, l->id, vp, sim_parent_queue(s, (int)q),
			vp >= 0 ? l->depth + 1 : l->depth, l->kinds, vp >= 0 ? (unsigned)vp : l->first_vp,
			vp >= 0 ? 1u : l->nb_vps, running, vp >= 0 ? sim_hw_level_of(s, (unsigned)vp) : 0);
		int k = 0;
		for (const struct sim_ent *e = s->q[q].head; e; e = e->next)
			fprintf(out, "%s%d", k++ ? "," : "", sim_snap_index(e, it, ib));
		fprintf(out, "]}");
	}
	fprintf(out, "],\"entities\":[");
	int first = 1;
	sim_snap_entity(s, out, &s->root, 0, it, ib, &first);
	fprintf(out, "]}\n");
	free(it);
	free(ib);
	return ferror(out) ? EIO : 0;
}

void sim_snapshot(struct sim *s, enum sim_snapshot_when when, double until)
{
	s->snapshot_done = 1;
	s->snap_when = when;
	s->snap_t = s->now;
	s->snap_until = until;
	s->snap_live = s->alive - s->unspawned;
	if (sim_snapshot_write(s, s->c->snapshot))
		sim_fail(s, "the snapshot could not be written");
}

void sim_snapshot_watch(struct sim *s, double next)
{
	if (s->c->snapshot_at >= 0) {
		if (next > s->c->snapshot_at)
			sim_snapshot(s, SIM_SNAP_AT, next);
		return;
	}
	/* Strictly more: of instants with as many, the first. */
	unsigned live = s->alive - s->unspawned;
	if (live > s->peak_live) {
		s->peak_live = live;
		s->peak_t = s->now;
	}
}
