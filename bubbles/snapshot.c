/*
 * marcel_sched_snapshot: the bubble tree (walked once, parent locks held while children
 * are read, statistics summed bottom-up on the way back) and the run queues (each read
 * under its own lock), tied together by entity indexes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "ma_strategy.h"
#include "ma_trace.h"
#include <marcel/snapshot.h>

struct ma_snap {
	struct marcel_snapshot *s;
	unsigned cap;
	/* Entity pointer -> index, open addressing. */
	const void **keys;
	int *vals;
	unsigned hcap;
	int failed;
};

static unsigned ma_hash(const void *p, unsigned cap)
{
	uintptr_t x = (uintptr_t)p;
	x ^= x >> 17;
	x *= 0x9e3779b97f4a7c15ull;
	return (unsigned)(x >> 20) & (cap - 1);
}

static int ma_snap_lookup(const struct ma_snap *c, const void *p)
{
	if (!c->hcap || !p)
		return -1;
	for (unsigned h = ma_hash(p, c->hcap);; h = (h + 1) & (c->hcap - 1)) {
		if (!c->keys[h])
			return -1;
		if (c->keys[h] == p)
			return c->vals[h];
	}
}

static int ma_snap_rehash(struct ma_snap *c, unsigned ncap)
{
	const void **keys = calloc(ncap, sizeof(*keys));
	int *vals = calloc(ncap, sizeof(*vals));
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -1;
	}
	for (unsigned i = 0; i < c->hcap; i++)
		if (c->keys[i]) {
			unsigned h = ma_hash(c->keys[i], ncap);
			while (keys[h])
				h = (h + 1) & (ncap - 1);
			keys[h] = c->keys[i];
			vals[h] = c->vals[i];
		}
	free(c->keys);
	free(c->vals);
	c->keys = keys;
	c->vals = vals;
	c->hcap = ncap;
	return 0;
}

/* A new entity record for p; NULL if memory ran out (the snapshot then fails). */
static struct marcel_snapshot_entity *ma_snap_add(struct ma_snap *c, const void *p, int *idx)
{
	struct marcel_snapshot *s = c->s;
	if (c->failed)
		return NULL;
	if (s->nb_entities == c->cap) {
		unsigned ncap = c->cap ? c->cap * 2 : 256;
		void *n = realloc(s->entities, ncap * sizeof(*s->entities));
		if (!n) {
			c->failed = 1;
			return NULL;
		}
		s->entities = n;
		c->cap = ncap;
	}
	if ((s->nb_entities + 1) * 2 > c->hcap && ma_snap_rehash(c, c->hcap ? c->hcap * 2 : 512)) {
		c->failed = 1;
		return NULL;
	}
	*idx = (int)s->nb_entities++;
	unsigned h = ma_hash(p, c->hcap);
	while (c->keys[h])
		h = (h + 1) & (c->hcap - 1);
	c->keys[h] = p;
	c->vals[h] = *idx;
	struct marcel_snapshot_entity *r = &s->entities[*idx];
	memset(r, 0, sizeof(*r));
	r->id = -1;
	r->queue = r->held_by = r->running_vp = r->last_vp = r->last_level = -1;
	return r;
}

/* Queue index of a run-queue holder. */
static int ma_snap_queue_of(struct ma_holder *h)
{
	if (!h || h->type != MA_RUNQUEUE_HOLDER)
		return -1;
	struct ma_runqueue *rq = ma_rq_of_holder(h);
	return rq->vp >= 0 ? (int)(ma_rt.topo.nb_levels + (unsigned)rq->vp) : (int)rq->level->id;
}

static int ma_snap_thread_state(int st)
{
	switch (st) {
	case MA_TASK_BORN: return MARCEL_SNAPSHOT_BORN;
	case MA_TASK_READY: return MARCEL_SNAPSHOT_READY;
	case MA_TASK_RUNNING: return MARCEL_SNAPSHOT_RUNNING;
	case MA_TASK_BLOCKING:
	case MA_TASK_BLOCKED: return MARCEL_SNAPSHOT_BLOCKED;
	default: return MARCEL_SNAPSHOT_OTHER;
	}
}

static void ma_snap_thread(struct ma_snap *c, struct marcel_task *t, int parent, int depth)
{
	int idx;
	struct marcel_snapshot_entity *r = ma_snap_add(c, t, &idx);
	if (!r)
		return;
	r->kind = MARCEL_SNAPSHOT_THREAD;
	r->uid = t->id;
	r->thread = t;
	memcpy(r->name, t->name, sizeof(r->name));
	r->name[sizeof(r->name) - 1] = 0;
	int st = atomic_load_explicit(&t->state, memory_order_relaxed);
	r->state = ma_snap_thread_state(st);
	r->parent = parent;
	r->depth = depth;
	r->prio = atomic_load_explicit(&t->e.prio, memory_order_relaxed);
	r->sched_level = atomic_load_explicit(&t->e.sched_level, memory_order_relaxed);
	r->load = ma_entity_hint_or(&t->e, 1);
	r->nb_threads = 1;
	r->nb_ready = st == MA_TASK_READY;
	r->nb_running = st == MA_TASK_RUNNING;
	r->cpu_ns = (long long)ma_task_cpu_ns(t);
	r->last_vp = atomic_load_explicit(&t->last_vp, memory_order_relaxed);
	r->last_level = ma_read_once(&t->e.last_level);
	struct ma_holder *h = ma_load_acquire(&t->e.sched_holder);
	if (h && h->type == MA_BUBBLE_HOLDER) {
		/* Its closed unit is an ancestor, already recorded (pre-order). */
		const void *u = ma_bubble_of_holder(h);
		for (int p = parent; p >= 0; p = c->s->entities[p].parent)
			if (ma_snap_lookup(c, u) == p) {
				r->held_by = p;
				break;
			}
	} else {
		r->queue = ma_snap_queue_of(h);
	}
}

/* Records b and its subtree (b locked), then sums the subtree's statistics into b. */
static int ma_snap_bubble(struct ma_snap *c, struct ma_bubble *b, int parent, int depth)
{
	int idx;
	struct marcel_snapshot_entity *r = ma_snap_add(c, b, &idx);
	if (!r)
		return -1;
	r->kind = MARCEL_SNAPSHOT_BUBBLE;
	r->uid = b->uid;
	r->id = b->id;
	r->bubble = b->implicit ? NULL : ma_bubble_pub(b);
	if (b == ma_root_bubble)
		snprintf(r->name, sizeof(r->name), "root");
	else if (b->implicit)
		snprintf(r->name, sizeof(r->name), "children of %.18s", b->owner ? b->owner->name : "(ended)");
	else if (b->id >= 0)
		snprintf(r->name, sizeof(r->name), "bubble %d", b->id);
	else
		snprintf(r->name, sizeof(r->name), "bubble #%" PRIu64, b->uid & ~MA_TRACE_BUBBLE_TAG);
	r->implicit = b->implicit;
	r->state = atomic_load(&b->status);
	r->parent = parent;
	r->depth = depth;
	r->prio = atomic_load_explicit(&b->e.prio, memory_order_relaxed);
	r->sched_level = atomic_load_explicit(&b->e.sched_level, memory_order_relaxed);
	r->last_level = ma_read_once(&b->e.last_level);
	r->queue = ma_snap_queue_of(b->e.sched_holder);
	long long load = 0, thr = 0, ready = 0, running = 0, memory = 0;
	long long cpu = (long long)atomic_load_explicit(&b->cpu_ended_ns, memory_order_relaxed);
	for (struct ma_memrange *m = b->ranges; m; m = m->next)
		memory += (long long)m->len;
	int votes_best = 0;
	int *votes = calloc(ma_rt.nb_vps, sizeof(int));
	ma_list_for_each_entry(struct ma_entity, m, &b->members, member_node) {
		unsigned child = c->s->nb_entities;
		if (m->type == MA_TASK_ENTITY) {
			ma_snap_thread(c, ma_task_of_entity(m), idx, depth + 1);
		} else {
			struct ma_bubble *sb = ma_bubble_of_entity(m);
			ma_spin_lock(&sb->hold.lock);
			ma_snap_bubble(c, sb, idx, depth + 1);
			ma_spin_unlock(&sb->hold.lock);
		}
		if (c->failed)
			break;
		struct marcel_snapshot_entity *ce = &c->s->entities[child];
		load += ce->load;
		thr += ce->nb_threads;
		ready += ce->nb_ready;
		running += ce->nb_running;
		cpu += ce->cpu_ns;
		memory += ce->memory;
		if (votes && ce->kind == MARCEL_SNAPSHOT_THREAD && ce->last_vp >= 0 && (unsigned)ce->last_vp < ma_rt.nb_vps)
			votes[ce->last_vp]++;
	}
	if (c->failed) {
		free(votes);
		return -1;
	}
	r = &c->s->entities[idx]; /* the array may have moved */
	r->load = ma_entity_hint_or(&b->e, load);
	r->nb_threads = thr;
	r->nb_ready = ready;
	r->nb_running = running;
	r->cpu_ns = cpu;
	r->memory = memory;
	if (votes) {
		for (unsigned v = 0; v < ma_rt.nb_vps; v++)
			if (votes[v] > votes_best) {
				votes_best = votes[v];
				r->last_vp = (int)v;
			}
		free(votes);
	}
	return idx;
}

static int ma_snap_queue(struct ma_snap *c, unsigned qi, struct ma_runqueue *rq)
{
	struct marcel_snapshot_queue *q = &c->s->queues[qi];
	snprintf(q->name, sizeof(q->name), "%s", rq->name);
	q->item = (int)rq->level->id;
	q->vp = rq->vp;
	q->parent = rq->vp >= 0 ? (int)rq->level->id : (rq->father ? (int)rq->father->level->id : -1);
	q->depth = rq->level->depth + (rq->vp >= 0);
	q->kinds = rq->level->kinds;
	q->first_vp = rq->first_vp;
	q->nb_vps = rq->nb_vps;
	q->running = -1;
	ma_spin_lock(&rq->hold.lock);
	unsigned n = rq->nr_ready;
	q->queued = n ? malloc(n * sizeof(int)) : NULL;
	if (n && !q->queued) {
		ma_spin_unlock(&rq->hold.lock);
		return -1;
	}
	for (int p = 0; p < MA_MAX_PRIO && q->nb_queued < n; p++)
		ma_list_for_each_entry(struct ma_entity, x, &rq->queue[p], run_node) {
			if (q->nb_queued == n)
				break;
			int e = ma_snap_lookup(c, x);
			if (e >= 0)
				q->queued[q->nb_queued++] = e;
		}
	ma_spin_unlock(&rq->hold.lock);
	if (rq->vp >= 0) {
		struct marcel_task *cur = atomic_load_explicit(&ma_rt.workers[rq->vp].current, memory_order_acquire);
		if (cur && !cur->is_idle)
			q->running = ma_snap_lookup(c, cur);
		if (q->running >= 0)
			c->s->entities[q->running].running_vp = rq->vp;
		q->hwprio_level = atomic_load_explicit(&ma_rt.workers[rq->vp].hw_level, memory_order_relaxed);
	}
	return 0;
}

struct marcel_snapshot *marcel_sched_snapshot(void)
{
	if (!ma_rt.running) {
		errno = EPERM;
		return NULL;
	}
	/* The picture shows every thread in the tree. */
	ma_tree_want();
	struct ma_snap c = { 0 };
	struct marcel_snapshot *s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	c.s = s;
	const struct ma_strategy *st = ma_strategy();
	snprintf(s->strategy, sizeof(s->strategy), "%s", st ? st->name : "");
	s->nb_vps = ma_rt.nb_vps;
	/* The tree lock keeps bubbles from being freed or moved while we walk them. */
	ma_tree_lock();
	ma_spin_lock(&ma_root_bubble->hold.lock);
	ma_snap_bubble(&c, ma_root_bubble, -1, 0);
	ma_spin_unlock(&ma_root_bubble->hold.lock);
	ma_tree_unlock();
	if (!c.failed) {
		s->nb_queues = ma_rt.topo.nb_levels + ma_rt.nb_vps;
		s->queues = calloc(s->nb_queues, sizeof(*s->queues));
		if (!s->queues)
			c.failed = 1;
		for (unsigned i = 0; !c.failed && i < ma_rt.topo.nb_levels; i++)
			c.failed = ma_snap_queue(&c, i, &ma_rt.rqs[i]) != 0;
		for (unsigned v = 0; !c.failed && v < ma_rt.nb_vps; v++)
			c.failed = ma_snap_queue(&c, ma_rt.topo.nb_levels + v, &ma_rt.workers[v].rq) != 0;
	}
	/* A thread held by a closed bubble is scheduled where that bubble is. */
	for (unsigned i = 0; !c.failed && i < s->nb_entities; i++) {
		struct marcel_snapshot_entity *e = &s->entities[i];
		if (e->held_by >= 0 && e->queue < 0)
			e->queue = s->entities[e->held_by].queue;
		if (e->running_vp >= 0)
			e->queue = (int)(ma_rt.topo.nb_levels + (unsigned)e->running_vp);
	}
	free(c.keys);
	free(c.vals);
	if (c.failed) {
		marcel_sched_snapshot_free(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

void marcel_sched_snapshot_free(struct marcel_snapshot *s)
{
	if (!s)
		return;
	for (unsigned i = 0; s->queues && i < s->nb_queues; i++)
		free(s->queues[i].queued);
	free(s->queues);
	free(s->entities);
	free(s);
}

int marcel_snapshot_find_thread(const struct marcel_snapshot *s, marcel_t t)
{
	if (!s || !t)
		return -1;
	for (unsigned i = 0; i < s->nb_entities; i++)
		if (s->entities[i].kind == MARCEL_SNAPSHOT_THREAD && s->entities[i].thread == t)
			return (int)i;
	return -1;
}

int marcel_snapshot_find_bubble(const struct marcel_snapshot *s, marcel_bubble_t *b)
{
	if (!s || !b)
		return -1;
	for (unsigned i = 0; i < s->nb_entities; i++)
		if (s->entities[i].kind == MARCEL_SNAPSHOT_BUBBLE && s->entities[i].bubble == b)
			return (int)i;
	return -1;
}

int marcel_snapshot_thread_vp(const struct marcel_snapshot *s, int entity)
{
	if (!s || entity < 0 || (unsigned)entity >= s->nb_entities)
		return -1;
	const struct marcel_snapshot_entity *e = &s->entities[entity];
	if (e->running_vp >= 0)
		return e->running_vp;
	if (e->queue < 0 || (unsigned)e->queue >= s->nb_queues)
		return -1;
	const struct marcel_snapshot_queue *q = &s->queues[e->queue];
	if (q->vp >= 0)
		return q->vp;
	return q->nb_vps == 1 ? (int)q->first_vp : -1;
}

int marcel_snapshot_queue_within(const struct marcel_snapshot *s, int q, int anc)
{
	if (!s || q < 0 || anc < 0 || (unsigned)q >= s->nb_queues || (unsigned)anc >= s->nb_queues)
		return 0;
	for (int x = q; x >= 0; x = s->queues[x].parent)
		if (x == anc)
			return 1;
	return 0;
}

/* ---- JSON ---- */

/* A JSON string. Names are the program's bytes, cut to their field's size: what is not
 * valid UTF-8 (often a character cut in two) becomes '?', as in the trace, since a JSON
 * document must be UTF-8 and strict readers refuse it otherwise. */
static void ma_json_str(FILE *out, const char *str)
{
	fputc('"', out);
	const unsigned char *p = (const unsigned char *)str;
	size_t n = strlen(str);
	while (n) {
		unsigned len = 1;
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(out, "\\u%04x", *p);
		else if (!(len = ma_utf8_len(p, n)))
			len = 1, fputc('?', out);
		else
			fwrite(p, 1, len, out);
		p += len;
		n -= len;
	}
	fputc('"', out);
}

int marcel_sched_snapshot_write_json(const struct marcel_snapshot *s, FILE *out)
{
	if (!s || !out)
		return EINVAL;
	fprintf(out, "{\"strategy\":");
	ma_json_str(out, s->strategy);
	fprintf(out, ",\"vps\":%u,\"queues\":[", s->nb_vps);
	for (unsigned i = 0; i < s->nb_queues; i++) {
		const struct marcel_snapshot_queue *q = &s->queues[i];
		fprintf(out, "%s\n{\"index\":%u,\"name\":", i ? "," : "", i);
		ma_json_str(out, q->name);
		fprintf(out, ",\"item\":%d,\"vp\":%d,\"parent\":%d,\"depth\":%u,\"kinds\":%u,\"first_vp\":%u,"
			     "\"nb_vps\":%u,\"running\":%d,\"hwprio_level\":%d,\"queued\":[",
			q->item, q->vp, q->parent, q->depth, q->kinds, q->first_vp, q->nb_vps, q->running,
			q->hwprio_level);
		for (unsigned k = 0; k < q->nb_queued; k++)
			fprintf(out, "%s%d", k ? "," : "", q->queued[k]);
		fprintf(out, "]}");
	}
	fprintf(out, "],\"entities\":[");
	for (unsigned i = 0; i < s->nb_entities; i++) {
		const struct marcel_snapshot_entity *e = &s->entities[i];
		fprintf(out, "%s\n{\"index\":%u,\"kind\":\"%s\",\"uid\":%" PRIu64 ",\"id\":%d,\"name\":", i ? "," : "", i,
			e->kind == MARCEL_SNAPSHOT_THREAD ? "thread" : "bubble", e->uid, e->id);
		ma_json_str(out, e->name);
		fprintf(out, ",\"implicit\":%d,\"state\":%d,\"parent\":%d,\"depth\":%d,\"queue\":%d,\"held_by\":%d,"
			     "\"running_vp\":%d,\"prio\":%d,\"sched_level\":%d,\"load\":%lld,\"nb_threads\":%lld,"
			     "\"nb_ready\":%lld,\"nb_running\":%lld,\"cpu_ns\":%lld,\"last_vp\":%d,\"last_level\":%d,"
			     "\"memory\":%lld}",
			e->implicit, e->state, e->parent, e->depth, e->queue, e->held_by, e->running_vp, e->prio,
			e->sched_level, e->load, e->nb_threads, e->nb_ready, e->nb_running, e->cpu_ns, e->last_vp,
			e->last_level, e->memory);
	}
	fprintf(out, "]}\n");
	return ferror(out) ? EIO : 0;
}

int marcel_sched_snapshot_json(FILE *out)
{
	if (!out)
		return EINVAL;
	struct marcel_snapshot *s = marcel_sched_snapshot();
	if (!s)
		return errno;
	int e = marcel_sched_snapshot_write_json(s, out);
	marcel_sched_snapshot_free(s);
	return e;
}
