/*
 * marcel-render's trace reader, for the movie: a trace (MARCEL_TRACE, marcel-sim --trace)
 * read in two passes -- the VPs' tracks, the time origin and the summary's checks
 * (nesting, time order), then each VP's slices, idle periods and hwprio levels, bubble
 * membership and the event log -- then the colour groups, the caps on what the page
 * embeds, and everything sorted the way the page looks it up.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "marcel-render.h"

/* ---- index by id (struct mr_map) ---- */

static unsigned mr_hash(uint64_t k, unsigned cap)
{
	k ^= k >> 29;
	k *= UINT64_C(0x9e3779b97f4a7c15);
	return (unsigned)(k >> 32) & (cap - 1);
}

static int mr_map_get(const struct mr_map *h, uint64_t k)
{
	if (!h->cap)
		return -1;
	for (unsigned i = mr_hash(k, h->cap);; i = (i + 1) & (h->cap - 1)) {
		if (!h->vals[i])
			return -1;
		if (h->keys[i] == k)
			return h->vals[i] - 1;
	}
}

static void mr_map_put(struct mr_map *h, uint64_t k, int v)
{
	if (2 * (h->n + 1) > h->cap) {
		struct mr_map g = { mr_alloc((h->cap ? 2 * h->cap : 64) * sizeof(uint64_t)), NULL, h->cap ? 2 * h->cap : 64, 0 };
		g.vals = mr_alloc(g.cap * sizeof(int));
		for (unsigned i = 0; i < h->cap; i++)
			if (h->vals[i])
				mr_map_put(&g, h->keys[i], h->vals[i] - 1);
		free(h->keys);
		free(h->vals);
		*h = g;
	}
	unsigned i = mr_hash(k, h->cap);
	while (h->vals[i])
		i = (i + 1) & (h->cap - 1);
	h->keys[i] = k;
	h->vals[i] = v + 1;
	h->n++;
}

/* ---- reading: two passes over the events ---- */

/* An integer argument (the trace writes them as JSON numbers); 0 if absent or not one. */
static int mr_arg_int(const struct tj_event *e, const char *key, long long *v)
{
	const char *a = tj_arg(e, key);
	char *end;
	if (!a || !*a)
		return 0;
	errno = 0;
	*v = strtoll(a, &end, 10);
	return !*end && !errno;
}

static int mr_arg_u64(const struct tj_event *e, const char *key, uint64_t *v)
{
	const char *a = tj_arg(e, key);
	char *end;
	if (!a || !*a || *a == '-')
		return 0;
	errno = 0;
	*v = strtoull(a, &end, 10);
	return !*end && !errno;
}

static struct mr_track *mr_track(struct mr_movie *m, long long pid, long long tid)
{
	/* The key is exact for the pids and tids of both writers (under 2^32); others that
	 * collide cost a search. */
	uint64_t key = (uint64_t)pid << 32 ^ (uint64_t)tid;
	int i = mr_map_get(&m->track_of, key);
	if (i >= 0 && m->tracks[i].pid == pid && m->tracks[i].tid == tid)
		return &m->tracks[i];
	for (unsigned k = 0; i >= 0 && k < m->nb_tracks; k++)
		if (m->tracks[k].pid == pid && m->tracks[k].tid == tid)
			return &m->tracks[k];
	if (i < 0)
		mr_map_put(&m->track_of, key, (int)m->nb_tracks);
	m->tracks = mr_grow(m->tracks, &m->nb_tracks, &m->cap_tracks, sizeof(*m->tracks));
	struct mr_track *t = &m->tracks[m->nb_tracks - 1];
	t->pid = pid;
	t->tid = tid;
	t->vp = -1;
	t->open = -1;
	return t;
}

/* Threads and bubbles are kept in first-seen order, found by id. */
static int mr_thread(struct mr_movie *m, uint64_t uid)
{
	int i = mr_map_get(&m->thr_of, uid);
	if (i >= 0)
		return i;
	mr_map_put(&m->thr_of, uid, (int)m->nb_thr);
	m->thr = mr_grow(m->thr, &m->nb_thr, &m->cap_thr, sizeof(*m->thr));
	struct mr_thr *t = &m->thr[m->nb_thr - 1];
	t->uid = uid;
	t->bubble = -1;
	t->group = -1;
	return (int)(m->nb_thr - 1);
}

static int mr_bubble(struct mr_movie *m, uint64_t uid)
{
	int i = mr_map_get(&m->bub_of, uid);
	if (i >= 0)
		return i;
	mr_map_put(&m->bub_of, uid, (int)m->nb_bub);
	m->bub = mr_grow(m->bub, &m->nb_bub, &m->cap_bub, sizeof(*m->bub));
	struct mr_bub *b = &m->bub[m->nb_bub - 1];
	b->uid = uid;
	b->parent = -1;
	return (int)(m->nb_bub - 1);
}

static char *mr_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(mr_alloc(n), s, n);
}

static void mr_set_name(struct mr_thr *t, const char *name, int replace)
{
	if (t->name && !replace)
		return;
	free(t->name);
	t->name = mr_strdup(name);
}

static long long mr_ns(const struct mr_movie *m, double ts)
{
	return llround((ts - m->t0) * 1000.0);
}

/* Pass 1: track names (VPn), the time origin, and the summary's checks. */
static int mr_pass1(const struct tj_event *e, void *ctx)
{
	struct mr_movie *m = ctx;
	tj_sum_event(e, &m->sum);
	if (!strcmp(e->ph, "M") && e->has_pid) {
		const char *name = tj_arg(e, "name");
		if (!strcmp(e->name, "process_name") && name && !m->process[0])
			tj_copy(m->process, sizeof(m->process), name);
		if (!strcmp(e->name, "thread_name") && e->has_tid && name) {
			unsigned vp;
			int len = -1;
			if (sscanf(name, "VP%u%n", &vp, &len) == 1 && len == (int)strlen(name) && name[2] >= '0' &&
			    name[2] <= '9' && vp < (1u << 20)) {
				struct mr_track *t = mr_track(m, e->pid, e->tid);
				for (unsigned i = 0; i < m->nb_tracks; i++)
					if (m->tracks[i].vp == (int)vp && &m->tracks[i] != t)
						mr_bad(m->file, "not a marcel trace: two tracks are named %s", name);
				t->vp = (int)vp;
				if (vp + 1 > m->nb_vps)
					m->nb_vps = vp + 1;
			}
		}
	} else if (e->has_ts && (!m->has_ts || e->ts < m->t0)) {
		m->t0 = e->ts;
		m->has_ts = 1;
	}
	return 0;
}

/* Appends to *a a slice of thread on vp (an idle period: thread -1), read in *n-th. */
static void mr_push_span(struct mr_slice **a, unsigned *n, unsigned *cap, long long start, long long end, int vp,
			 int thread)
{
	*a = mr_grow(*a, n, cap, sizeof(**a));
	(*a)[*n - 1] = (struct mr_slice){ start, end, vp, thread, 1, *n };
}

static void mr_add_slice(struct mr_movie *m, struct mr_track *t, long long end)
{
	mr_push_span(&m->slices, &m->nb_slices, &m->cap_slices, t->open_ts, end, t->vp, t->open);
	t->open = -1;
}

static void mr_end_idle(struct mr_movie *m, struct mr_track *t, long long end)
{
	mr_push_span(&m->idle, &m->nb_idle, &m->cap_idle, t->idle_ts, end, t->vp, -1);
	t->idle = 0;
}

/* One line of the page's event log. */
static void mr_log(struct mr_movie *m, long long ts, int vp, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void mr_log(struct mr_movie *m, long long ts, int vp, const char *fmt, ...)
{
	m->ev_total++;
	if (m->nb_ev >= MR_MAX_EVENTS)
		return;
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	m->ev = mr_grow(m->ev, &m->nb_ev, &m->cap_ev, sizeof(*m->ev));
	struct mr_point *p = &m->ev[m->nb_ev - 1];
	p->ts = ts;
	p->vp = vp;
	p->seq = m->nb_ev;
	p->text = mr_strdup(buf);
}

/* "thread N" / "bubble N", the trace's names for entities. */
static int mr_entity(const char *s, int *bubble, uint64_t *id)
{
	char *end;
	if (!s)
		return 0;
	if (!strncmp(s, "thread ", 7))
		*bubble = 0;
	else if (!strncmp(s, "bubble ", 7))
		*bubble = 1;
	else
		return 0;
	if (s[7] < '0' || s[7] > '9')
		return 0;
	errno = 0;
	*id = strtoull(s + 7, &end, 10);
	return !*end && !errno;
}

static void mr_membership(struct mr_movie *m, const struct tj_event *e, long long ts, int vp)
{
	uint64_t b, id;
	int is_bubble;
	if (!mr_arg_u64(e, "bubble", &b) || !mr_entity(tj_arg(e, "entity"), &is_bubble, &id))
		mr_bad(m->file, "not a marcel trace: a \"%s\" event at %.3f us without \"bubble\" and \"entity\"", e->name,
		       e->ts);
	int bi = mr_bubble(m, b);
	int inserted = !strcmp(e->name, "bubble insert");
	if (is_bubble) {
		int x = mr_bubble(m, id);
		if (inserted)
			m->bub[x].parent = bi;
	} else {
		int x = mr_thread(m, id);
		if (inserted) {
			m->thr[x].bubble = bi;
			m->bub[bi].explicit_ = 1;
		}
	}
	mr_log(m, ts, vp, "%s%llu %s bubble #%llu", is_bubble ? "bubble #" : "thread ", (unsigned long long)id,
	       inserted ? "into" : "out of", (unsigned long long)b);
}

/* Bubble events, moves and steals, as log lines ("bubble 3 burst on NUMANode1"). */
static void mr_other(struct mr_movie *m, const struct tj_event *e, long long ts, int vp)
{
	const char *bub = tj_arg(e, "bubble"), *ent = tj_arg(e, "entity"), *queue = tj_arg(e, "queue");
	const char *from = tj_arg(e, "from");
	uint64_t id;
	char who[48];
	int is_bubble;
	/* Bubbles are "#id" throughout the page, as in snapshots: their ids are not threads'. */
	if (ent && mr_entity(ent, &is_bubble, &id)) {
		snprintf(who, sizeof(who), "%s%llu", is_bubble ? "bubble #" : "thread ", (unsigned long long)id);
		ent = who;
	}
	if (!strcmp(e->name, "bubble wake") && mr_arg_u64(e, "bubble", &id))
		m->bub[mr_bubble(m, id)].explicit_ = 1;
	if (bub && !strncmp(e->name, "bubble ", 7))
		mr_log(m, ts, vp, "bubble #%.*s %s%s%.*s", mr_prefix(bub, 24), bub, e->name + 7, queue ? " on " : "",
		       queue ? mr_prefix(queue, 40) : 0, queue ? queue : "");
	else if (ent && queue)
		mr_log(m, ts, vp, "%.*s moved to %.*s", mr_prefix(ent, 40), ent, mr_prefix(queue, 40), queue);
	else if (ent && from)
		mr_log(m, ts, vp, "%.*s stolen from %.*s", mr_prefix(ent, 40), ent, mr_prefix(from, 40), from);
	else
		mr_log(m, ts, vp, "%.*s", mr_prefix(e->name, 80), e->name);
}

/* Instant events: idle periods, hwprio levels, membership, pauses; the rest is logged. */
static void mr_instant(struct mr_movie *m, struct mr_track *t, const struct tj_event *e, long long ts)
{
	int vp = t->vp;
	long long v;
	uint64_t id;
	if (!strcmp(e->name, "idle start")) {
		if (vp >= 0 && !t->idle) {
			t->idle = 1;
			t->idle_ts = ts;
		}
	} else if (!strcmp(e->name, "idle stop")) {
		if (vp >= 0 && t->idle)
			mr_end_idle(m, t, ts);
	} else if (!strcmp(e->name, "hwprio")) {
		long long level;
		if (!mr_arg_int(e, "vp", &v) || !mr_arg_int(e, "level", &level) || v < 0 || v >= m->nb_vps ||
		    level < -1000 || level > 1000)
			mr_bad(m->file, "not a marcel trace: a \"hwprio\" event at %.3f us without a VP's \"vp\" and \"level\"",
			       e->ts);
		m->hw_total++;
		if (m->nb_hw < MR_MAX_HW) {
			m->hw = mr_grow(m->hw, &m->nb_hw, &m->cap_hw, sizeof(*m->hw));
			struct mr_point *p = &m->hw[m->nb_hw - 1];
			*p = (struct mr_point){ ts, (int)v, (int)level, m->nb_hw, NULL };
		}
	} else if (!strcmp(e->name, "bubble insert") || !strcmp(e->name, "bubble remove")) {
		mr_membership(m, e, ts, vp);
	} else if (!strcmp(e->name, "trace off")) {
		m->pauses++;
		for (unsigned i = 0; i < m->nb_tracks; i++)
			if (m->tracks[i].idle)
				mr_end_idle(m, &m->tracks[i], ts);
		mr_log(m, ts, vp, "trace off (nothing recorded until trace on)");
	} else if (!strcmp(e->name, "thread new") || !strcmp(e->name, "thread end")) {
		const char *name = tj_arg(e, "thread");
		if (mr_arg_u64(e, "id", &id)) {
			int x = mr_thread(m, id);
			if (name && *name)
				mr_set_name(&m->thr[x], name, 1);
			mr_log(m, ts, vp, "%s %llu (%.*s)", e->name, (unsigned long long)id, name ? mr_prefix(name, 64) : 0,
			       name ? name : "");
		}
	} else {
		mr_other(m, e, ts, vp);
	}
}

/* Pass 2: slices, idle periods, levels, membership, the log. */
static int mr_pass2(const struct tj_event *e, void *ctx)
{
	struct mr_movie *m = ctx;
	if (!strcmp(e->ph, "M") || !e->has_ts)
		return 0;
	struct mr_track *t = mr_track(m, e->pid, e->tid);
	long long ts = mr_ns(m, e->ts);
	if (ts > m->t_end)
		m->t_end = ts;
	if (!strcmp(e->ph, "B")) {
		uint64_t id;
		if (!mr_arg_u64(e, "id", &id))
			mr_bad(m->file, "not a marcel trace: a slice at %.3f us without a thread \"id\" argument", e->ts);
		if (t->vp < 0)
			return 0;
		if (t->open >= 0)
			mr_add_slice(m, t, ts);
		t->open = mr_thread(m, id);
		t->open_ts = ts;
		if (e->name[0])
			mr_set_name(&m->thr[t->open], e->name, 0);
	} else if (!strcmp(e->ph, "E")) {
		if (t->vp >= 0 && t->open >= 0)
			mr_add_slice(m, t, ts);
	} else if (!strcmp(e->ph, "X")) {
		uint64_t id;
		if (t->vp >= 0 && mr_arg_u64(e, "id", &id))
			mr_push_span(&m->slices, &m->nb_slices, &m->cap_slices, ts, mr_ns(m, e->ts + e->dur), t->vp,
				     mr_thread(m, id));
	} else if (!strcmp(e->ph, "i") || !strcmp(e->ph, "I")) {
		if (strcmp(e->cat, "mark"))
			mr_instant(m, t, e, ts);
		else
			mr_log(m, ts, t->vp, "mark: %.*s", mr_prefix(e->name, 120), e->name);
	}
	return 0;
}

/* ---- after reading: colours, caps, order ---- */

/* Colours (mr_colour_groups), on the membership the trace records: a thread's bubble is
 * the last it was inserted into, a bubble's parent likewise, and a bubble is explicit when
 * it was woken or had threads inserted (implicit children bubbles and the root have
 * neither in a trace). Bubble b is node b, thread i node nb_bub + i. */
static void mr_movie_groups(struct mr_movie *m)
{
	struct mr_members mb;
	mr_members_init(&mb, m->nb_bub + m->nb_thr, m->nb_thr, m->nb_bub);
	for (unsigned b = 0; b < m->nb_bub; b++) {
		mb.up[b] = (int)m->bub[b].parent;
		mb.explicit_[b] = (char)m->bub[b].explicit_;
		mb.key[b] = m->bub[b].uid;
	}
	for (unsigned i = 0; i < m->nb_thr; i++) {
		mb.up[m->nb_bub + i] = (int)m->thr[i].bubble;
		mb.threads[i] = (int)(m->nb_bub + i);
	}
	mr_colour_groups(&mb, &m->groups, &m->nb_groups, &m->cap_groups);
	m->by_thread = mb.in_bubbles == 0;
	for (unsigned b = 0; b < m->nb_bub; b++)
		m->bub[b].nb_threads = mb.below[b];
	for (unsigned i = 0; i < m->nb_thr; i++)
		m->thr[i].group = m->by_thread ? (int)i : mb.group[m->nb_bub + i];
	mr_members_free(&mb);
}

static int mr_longer(const void *a, const void *b, void *arg)
{
	const struct mr_slice *s = arg;
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	long long dx = s[x].e - s[x].s, dy = s[y].e - s[y].s;
	if (dx != dy)
		return dx > dy ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* Over MR_MAX_SLICES, the shortest slices go (ties: the later ones). */
static void mr_decimate(struct mr_movie *m)
{
	if (m->nb_slices <= MR_MAX_SLICES)
		return;
	unsigned *order = mr_alloc(m->nb_slices * sizeof(unsigned));
	for (unsigned i = 0; i < m->nb_slices; i++)
		order[i] = i;
	qsort_r(order, m->nb_slices, sizeof(unsigned), mr_longer, m->slices);
	for (unsigned i = MR_MAX_SLICES; i < m->nb_slices; i++)
		m->slices[order[i]].keep = 0;
	m->slice_cut = m->slices[order[MR_MAX_SLICES - 1]].e - m->slices[order[MR_MAX_SLICES - 1]].s;
	free(order);
}

/* By VP, then time, then the order read in: (vp, t, seq) of x against y's. */
static int mr_by_vp_time(int xvp, long long xt, unsigned xseq, int yvp, long long yt, unsigned yseq)
{
	if (xvp != yvp)
		return xvp < yvp ? -1 : 1;
	if (xt != yt)
		return xt < yt ? -1 : 1;
	return xseq < yseq ? -1 : xseq > yseq;
}

/* Slices and idle periods: by VP, then start. */
static int mr_slice_cmp(const void *a, const void *b)
{
	const struct mr_slice *x = a, *y = b;
	return mr_by_vp_time(x->vp, x->s, x->seq, y->vp, y->s, y->seq);
}

/* Level changes: by VP, then time. */
static int mr_point_cmp(const void *a, const void *b)
{
	const struct mr_point *x = a, *y = b;
	return mr_by_vp_time(x->vp, x->ts, x->seq, y->vp, y->ts, y->seq);
}

/* Log lines: by time, whatever the VP. */
static int mr_log_cmp(const void *a, const void *b)
{
	const struct mr_point *x = a, *y = b;
	return mr_by_vp_time(0, x->ts, x->seq, 0, y->ts, y->seq);
}

/* qsort, which must not be given a null array even when it is empty. */
static void mr_sort(void *a, unsigned n, size_t sz, int (*cmp)(const void *, const void *))
{
	if (n)
		qsort(a, n, sz, cmp);
}

/* What the page looks up by time is sorted by time; per VP, ties keep the trace's order. */
static void mr_movie_sort(struct mr_movie *m)
{
	mr_sort(m->slices, m->nb_slices, sizeof(*m->slices), mr_slice_cmp);
	mr_sort(m->idle, m->nb_idle, sizeof(*m->idle), mr_slice_cmp);
	mr_sort(m->hw, m->nb_hw, sizeof(*m->hw), mr_point_cmp);
	mr_sort(m->ev, m->nb_ev, sizeof(*m->ev), mr_log_cmp);
}

void mr_movie_load(struct mr_movie *m, const char *file)
{
	memset(m, 0, sizeof(*m));
	m->file = file;
	size_t len;
	char *text = mr_read(file, &len);
	struct tj_parser ps;
	if (tj_parse(&ps, text, len, mr_pass1, m)) {
		/* Valid JSON that is not a trace, or not JSON at all? The plain grammar says. */
		struct tj_parser plain;
		memset(&plain, 0, sizeof(plain));
		plain.p = text;
		plain.end = text + len;
		tj_ws(&plain);
		int json = !tj_value(&plain, 1);
		tj_ws(&plain);
		if (!json || plain.p != plain.end)
			mr_bad(file, "not valid JSON: %s", ps.err);
		mr_bad(file, "not a marcel trace: %s%s", ps.err, strstr(text, "\"entities\"") ?
		       " (a snapshot? draw it with 'marcel-render snapshot')" : "");
	}
	tj_sum_finish(&m->sum);
	if (m->sum.nb_errors)
		mr_bad(file, "not a valid marcel trace: %s", m->sum.first_error);
	if (!m->nb_vps)
		mr_bad(file, "not a marcel trace: no track is named VP0, VP1... (MARCEL_TRACE and marcel-sim --trace "
			     "name one track per VP)");
	tj_parse(&ps, text, len, mr_pass2, m);
	free(text);
	for (unsigned i = 0; i < m->nb_tracks; i++) {
		struct mr_track *t = &m->tracks[i];
		if (t->vp >= 0 && t->open >= 0)
			mr_add_slice(m, t, m->t_end);
		if (t->vp >= 0 && t->idle)
			mr_end_idle(m, t, m->t_end);
	}
	mr_movie_groups(m);
	mr_decimate(m);
	mr_movie_sort(m);
}

void mr_movie_free(struct mr_movie *m)
{
	for (unsigned i = 0; i < m->nb_thr; i++)
		free(m->thr[i].name);
	for (unsigned i = 0; i < m->nb_ev; i++)
		free(m->ev[i].text);
	free(m->thr);
	free(m->bub);
	free(m->ev);
	free(m->hw);
	free(m->slices);
	free(m->idle);
	free(m->tracks);
	free(m->groups);
	struct mr_map *maps[] = { &m->track_of, &m->thr_of, &m->bub_of };
	for (unsigned i = 0; i < 3; i++) {
		free(maps[i]->keys);
		free(maps[i]->vals);
	}
	tj_sum_free(&m->sum);
}
