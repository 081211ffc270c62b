/*
 * marcel-render's snapshot reader: a snapshot (marcel_sched_snapshot_json, marcel-sim
 * --snapshot) checked whole -- indexes in range, one root queue and one root bubble, no
 * parent loops, each VP one queue -- and turned into the model marcel-render-svg.c draws:
 * the queue and bubble trees, where each entity is drawn, and the colour groups.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include "marcel-render.h"

/* Member key of array element i of what ("queue", "entity") as an integer in [lo, hi]. */
static long long mr_num(const struct mr_snap *s, const struct tj_node *obj, const char *what, unsigned i,
			const char *key, long long lo, long long hi)
{
	const struct tj_node *v = tj_get(obj, key);
	long long x;
	if (!v)
		mr_bad(s->file, "not a marcel snapshot: %s %u has no \"%s\"", what, i, key);
	if (v->type != TJ_NUMBER)
		mr_bad(s->file, "not a marcel snapshot: %s %u: \"%s\" is not a number", what, i, key);
	if (tj_int(v, lo, hi, &x))
		mr_bad(s->file, "not a marcel snapshot: %s %u: \"%s\" is %s, expected an integer from %lld to %lld", what,
		       i, key, v->str, lo, hi);
	return x;
}

static const char *mr_text(const struct mr_snap *s, const struct tj_node *obj, const char *what, unsigned i,
			   const char *key)
{
	const struct tj_node *v = tj_get(obj, key);
	if (!v || v->type != TJ_STRING)
		mr_bad(s->file, "not a marcel snapshot: %s %u: \"%s\" %s", what, i, key, v ? "is not a string" : "is missing");
	return v->str;
}

static const struct tj_node *mr_array(const struct mr_snap *s, const struct tj_node *obj, const char *key)
{
	const struct tj_node *v = tj_get(obj, key);
	if (!v || v->type != TJ_ARRAY) {
		if (tj_get(obj, "traceEvents"))
			mr_bad(s->file, "a trace, not a snapshot: draw it with '%s movie'", mr_prog);
		mr_bad(s->file, "not a marcel snapshot: %s \"%s\" array (a snapshot is what "
				"marcel_sched_snapshot_json or marcel-sim --snapshot writes)",
		       v ? "\"" : "no", key);
	}
	return v;
}

static void mr_snap_queues(struct mr_snap *s, const struct tj_node *qs)
{
	s->nq = qs->n;
	s->q = mr_alloc(s->nq * sizeof(*s->q));
	s->vp_queue = mr_alloc(s->nb_vps * sizeof(int));
	for (unsigned v = 0; v < s->nb_vps; v++)
		s->vp_queue[v] = -1;
	s->root_q = -1;
	for (unsigned i = 0; i < s->nq; i++) {
		const struct tj_node *o = &qs->items[i];
		struct mr_queue *q = &s->q[i];
		if (o->type != TJ_OBJECT)
			mr_bad(s->file, "not a marcel snapshot: queue %u is not an object", i);
		mr_num(s, o, "queue", i, "index", i, i);
		q->name = mr_text(s, o, "queue", i, "name");
		q->vp = (int)mr_num(s, o, "queue", i, "vp", -1, (long long)s->nb_vps - 1);
		q->parent = (int)mr_num(s, o, "queue", i, "parent", -1, (long long)s->nq - 1);
		q->running = (int)mr_num(s, o, "queue", i, "running", -1, (long long)s->ne - 1);
		q->hw = (int)mr_num(s, o, "queue", i, "hwprio_level", -1000, 1000);
		const struct tj_node *queued = tj_get(o, "queued");
		if (!queued || queued->type != TJ_ARRAY)
			mr_bad(s->file, "not a marcel snapshot: queue %u: \"queued\" is not an array", i);
		for (unsigned k = 0; k < queued->n; k++) {
			long long x;
			if (tj_int(&queued->items[k], 0, (long long)s->ne - 1, &x))
				mr_bad(s->file, "not a marcel snapshot: queue %u: \"queued\" holds %s, not an entity index",
				       i, queued->items[k].type == TJ_NUMBER ? queued->items[k].str : "a non-number");
		}
		if (q->vp >= 0) {
			if (s->vp_queue[q->vp] >= 0)
				mr_bad(s->file, "not a marcel snapshot: queues %d and %u are both VP %d's", s->vp_queue[q->vp],
				       i, q->vp);
			s->vp_queue[q->vp] = (int)i;
		}
		if (q->parent < 0) {
			if (s->root_q >= 0)
				mr_bad(s->file, "not a marcel snapshot: queues %d and %u both have no parent", s->root_q, i);
			s->root_q = (int)i;
		}
	}
	if (s->root_q < 0)
		mr_bad(s->file, "not a marcel snapshot: no queue without a parent (the machine's)");
	for (unsigned v = 0; v < s->nb_vps; v++)
		if (s->vp_queue[v] < 0)
			mr_bad(s->file, "not a marcel snapshot: \"vps\" is %u but VP %u has no queue", s->nb_vps, v);
	for (unsigned i = 0; i < s->nq; i++) {
		unsigned steps = 0;
		for (int x = (int)i; x >= 0 && steps <= s->nq; x = s->q[x].parent)
			steps++;
		if (steps > s->nq)
			mr_bad(s->file, "not a marcel snapshot: queue %u's parents loop", i);
		if (s->q[i].parent >= 0) {
			struct mr_queue *p = &s->q[s->q[i].parent];
			mr_add_int(&p->kids, &p->nb_kids, &p->cap_kids, (int)i);
		}
	}
}

static void mr_snap_entities(struct mr_snap *s, const struct tj_node *es)
{
	s->e = mr_alloc(s->ne * sizeof(*s->e));
	s->root_e = -1;
	for (unsigned i = 0; i < s->ne; i++) {
		const struct tj_node *o = &es->items[i];
		struct mr_ent *e = &s->e[i];
		if (o->type != TJ_OBJECT)
			mr_bad(s->file, "not a marcel snapshot: entity %u is not an object", i);
		mr_num(s, o, "entity", i, "index", i, i);
		const char *kind = mr_text(s, o, "entity", i, "kind");
		if (strcmp(kind, "thread") && strcmp(kind, "bubble"))
			mr_bad(s->file, "not a marcel snapshot: entity %u: \"kind\" is \"%.40s\", expected \"thread\" or "
					"\"bubble\"", i, kind);
		e->bubble = kind[0] == 'b';
		if (tj_u64(tj_get(o, "uid"), &e->uid))
			mr_bad(s->file, "not a marcel snapshot: entity %u: \"uid\" is not an unsigned integer", i);
		e->name = mr_text(s, o, "entity", i, "name");
		e->implicit = (int)mr_num(s, o, "entity", i, "implicit", 0, 1);
		e->state = (int)mr_num(s, o, "entity", i, "state", -1000, 1000);
		e->parent = (int)mr_num(s, o, "entity", i, "parent", -1, (long long)s->ne - 1);
		e->queue = (int)mr_num(s, o, "entity", i, "queue", -1, (long long)s->nq - 1);
		e->held_by = (int)mr_num(s, o, "entity", i, "held_by", -1, (long long)s->ne - 1);
		e->running_vp = (int)mr_num(s, o, "entity", i, "running_vp", -1, (long long)s->nb_vps - 1);
		e->group = -1;
		if (e->parent < 0) {
			if (s->root_e >= 0)
				mr_bad(s->file, "not a marcel snapshot: entities %d and %u both have no parent", s->root_e, i);
			s->root_e = (int)i;
		}
	}
	if (s->root_e < 0 || !s->e[s->root_e].bubble)
		mr_bad(s->file, "not a marcel snapshot: no root bubble (an entity of kind \"bubble\" without a parent)");
	for (unsigned i = 0; i < s->ne; i++) {
		struct mr_ent *e = &s->e[i];
		if (e->parent >= 0 && !s->e[e->parent].bubble)
			mr_bad(s->file, "not a marcel snapshot: entity %u's parent %d is a thread", i, e->parent);
		unsigned steps = 0;
		for (int x = (int)i; x >= 0 && steps <= s->ne; x = s->e[x].parent)
			steps++;
		if (steps > s->ne)
			mr_bad(s->file, "not a marcel snapshot: entity %u's parents loop", i);
		if (e->parent >= 0) {
			struct mr_ent *p = &s->e[e->parent];
			mr_add_int(&p->kids, &p->nb_kids, &p->cap_kids, (int)i);
		}
	}
	for (unsigned i = 0; i < s->nq; i++)
		if (s->q[i].running >= 0 && s->e[s->q[i].running].bubble)
			mr_bad(s->file, "not a marcel snapshot: queue %u runs entity %d, a bubble", i, s->q[i].running);
}

/* Where each entity is drawn: threads on their queue (the VP's when running: marcel sets
 * it so), or in the unplaced box; bubbles on their own queue, besides around members. */
static void mr_snap_place(struct mr_snap *s)
{
	for (unsigned i = 0; i < s->ne; i++) {
		struct mr_ent *e = &s->e[i];
		int qi = e->queue;
		if (!e->bubble && e->running_vp >= 0)
			qi = s->vp_queue[e->running_vp];
		struct mr_queue *q = qi >= 0 ? &s->q[qi] : &s->unplaced;
		if (!e->bubble) {
			s->nb_threads++;
			mr_add_int(&q->threads, &q->nb_threads, &q->cap_threads, (int)i);
		} else if (qi >= 0 && (int)i != s->root_e) {
			mr_add_int(&q->bubbles, &q->nb_bubbles, &q->cap_bubbles, (int)i);
		}
	}
}

/* An explicit bubble: not the root, not an implicit children bubble. */
static int mr_explicit(const struct mr_snap *s, int b)
{
	return b >= 0 && b != s->root_e && !s->e[b].implicit;
}

/* Colours (mr_colour_groups), with the entities as nodes (their parents do not loop:
 * mr_snap_entities checked); then a bubble's outline takes the colour of its first thread
 * (in pre-order). */
static void mr_snap_groups(struct mr_snap *s)
{
	struct mr_members mb;
	mr_members_init(&mb, s->ne, s->nb_threads, s->ne);
	for (unsigned i = 0, k = 0; i < s->ne; i++) {
		mb.up[i] = s->e[i].parent;
		mb.explicit_[i] = (char)mr_explicit(s, (int)i);
		mb.key[i] = s->e[i].uid & ~MR_TAG;
		if (!s->e[i].bubble)
			mb.threads[k++] = (int)i;
	}
	mr_colour_groups(&mb, &s->groups, &s->nb_groups, &s->cap_groups);
	for (unsigned i = 0; i < s->ne; i++) {
		if (s->e[i].bubble)
			s->e[i].nb_threads = mb.below[i];
		else if ((s->e[i].group = mb.group[i]) < 0)
			s->ungrouped++;
	}
	mr_members_free(&mb);
	char *coloured = mr_alloc(s->ne);
	for (unsigned i = 0; i < s->ne; i++)
		if (!s->e[i].bubble)
			for (int b = s->e[i].parent; b >= 0 && !coloured[b]; b = s->e[b].parent) {
				coloured[b] = 1;
				s->e[b].group = s->e[i].group;
			}
	free(coloured);
}

void mr_snap_load(struct mr_snap *s, const char *file)
{
	memset(s, 0, sizeof(*s));
	s->file = file;
	size_t len;
	char *text = mr_read(file, &len);
	struct tj_parser ps;
	if (tj_parse_doc(&ps, text, len, &s->doc))
		mr_bad(file, "not valid JSON: %s", ps.err);
	free(text);
	if (s->doc.type != TJ_OBJECT)
		mr_bad(file, "not a marcel snapshot: the document is not an object");
	const struct tj_node *qs = mr_array(s, &s->doc, "queues"), *es = mr_array(s, &s->doc, "entities");
	const struct tj_node *st = tj_get(&s->doc, "strategy");
	if (!st || st->type != TJ_STRING)
		mr_bad(file, "not a marcel snapshot: \"strategy\" %s", st ? "is not a string" : "is missing");
	s->strategy = st->str;
	long long vps;
	if (tj_int(tj_get(&s->doc, "vps"), 1, 1 << 20, &vps))
		mr_bad(file, "not a marcel snapshot: \"vps\" is not a number of VPs (1 or more)");
	s->nb_vps = (unsigned)vps;
	s->ne = es->n;
	mr_snap_queues(s, qs);
	mr_snap_entities(s, es);
	mr_snap_place(s);
	mr_snap_groups(s);
}

void mr_snap_free(struct mr_snap *s)
{
	for (unsigned i = 0; i < s->nq; i++) {
		free(s->q[i].kids);
		free(s->q[i].threads);
		free(s->q[i].bubbles);
	}
	for (unsigned i = 0; i < s->ne; i++)
		free(s->e[i].kids);
	free(s->unplaced.threads);
	free(s->q);
	free(s->e);
	free(s->vp_queue);
	free(s->groups);
	tj_node_free(&s->doc);
}
