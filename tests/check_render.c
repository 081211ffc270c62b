/*
 * marcel-render (tools/marcel-render.c): the pictures drawn from what a live run of the
 * library writes (a snapshot by marcel_sched_snapshot_json and a MARCEL_TRACE trace, of
 * a program with nested bubbles, a blocked thread and a name full of markup) and from
 * what marcel-sim writes (--snapshot, --trace, on 16 and on 1024 PUs).
 *
 * The SVG must be well-formed XML (xmllint when installed, and the small reader below
 * always) with one box per VP showing its hwprio level, one chip per thread labelled
 * with its id in the box of the queue the snapshot places it on (running ones in their
 * VP's box), inside the outline of its own bubble, coloured by bubble. The HTML page
 * must be well-formed too, and the data it embeds must hold every VP, the slices of
 * each VP in the trace's order with the trace's thread ids, every level change; where
 * node is installed, its player is run and must show at chosen instants what the data
 * says. Bad inputs exit 2 with one line naming the file and leave the output alone; the
 * same input gives the same bytes. A headless browser, where one is installed, takes a
 * screenshot of both.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "ma_test.h"
#include "trace-json.h"

#define TAG (UINT64_C(1) << 63)

static char dir[256];

/* ---- a small XML reader: well-formedness and the element tree ---- */

struct xe {
	char *name;
	char **attr;                      /* name, value, ..., NULL */
	unsigned nattr;
	struct xe *parent;
	struct xe **kids;
	unsigned nkids;
	char *text;                       /* text directly inside, entities decoded */
	size_t ntext;
};

struct xr {
	const char *p, *end;
	char err[160];
};

static int xr_fail(struct xr *r, const char *what)
{
	if (!r->err[0])
		snprintf(r->err, sizeof(r->err), "%s at byte ...%.30s", what, r->p);
	return -1;
}

static void xe_add_text(struct xe *e, const char *s, size_t n)
{
	e->text = realloc(e->text, e->ntext + n + 1);
	ck_assert_ptr_nonnull(e->text);
	memcpy(e->text + e->ntext, s, n);
	e->ntext += n;
	e->text[e->ntext] = 0;
}

static int xr_starts(const struct xr *r, const char *s)
{
	size_t n = strlen(s);
	return (size_t)(r->end - r->p) >= n && !memcmp(r->p, s, n);
}

/* Skips past the next occurrence of s. */
static int xr_skip_past(struct xr *r, const char *s)
{
	const char *q = memmem(r->p, (size_t)(r->end - r->p), s, strlen(s));
	if (!q)
		return xr_fail(r, "unterminated markup");
	r->p = q + strlen(s);
	return 0;
}

/* An entity at r->p ('&'), decoded into out (UTF-8); returns its length. */
static int xr_entity(struct xr *r, char *out)
{
	static const char *const names[][2] = { { "&amp;", "&" }, { "&lt;", "<" }, { "&gt;", ">" },
						{ "&quot;", "\"" }, { "&apos;", "'" } };
	for (unsigned i = 0; i < 5; i++)
		if (xr_starts(r, names[i][0])) {
			r->p += strlen(names[i][0]);
			strcpy(out, names[i][1]);
			return 1;
		}
	if (xr_starts(r, "&#")) {
		char *end;
		unsigned long cp = r->p[2] == 'x' ? strtoul(r->p + 3, &end, 16) : strtoul(r->p + 2, &end, 10);
		if (*end != ';' || !cp || cp > 0x10ffff)
			return xr_fail(r, "bad character reference");
		r->p = end + 1;
		if (cp < 0x80) {
			out[0] = (char)cp;
			return 1;
		}
		if (cp < 0x800) {
			out[0] = (char)(0xc0 | cp >> 6), out[1] = (char)(0x80 | (cp & 0x3f));
			return 2;
		}
		if (cp < 0x10000) {
			out[0] = (char)(0xe0 | cp >> 12), out[1] = (char)(0x80 | (cp >> 6 & 0x3f)), out[2] = (char)(0x80 | (cp & 0x3f));
			return 3;
		}
		out[0] = (char)(0xf0 | cp >> 18), out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
		out[2] = (char)(0x80 | (cp >> 6 & 0x3f)), out[3] = (char)(0x80 | (cp & 0x3f));
		return 4;
	}
	return xr_fail(r, "unknown entity");
}

static int xr_name(struct xr *r, char **out)
{
	const char *s = r->p;
	while (r->p < r->end && (isalnum((unsigned char)*r->p) || strchr(":_-.", *r->p)))
		r->p++;
	if (r->p == s)
		return xr_fail(r, "name expected");
	*out = strndup(s, (size_t)(r->p - s));
	return 0;
}

static void xr_ws(struct xr *r)
{
	while (r->p < r->end && isspace((unsigned char)*r->p))
		r->p++;
}

static int xr_attrs(struct xr *r, struct xe *e)
{
	for (;;) {
		xr_ws(r);
		if (r->p >= r->end)
			return xr_fail(r, "unterminated tag");
		if (*r->p == '>' || *r->p == '/')
			return 0;
		char *name;
		if (xr_name(r, &name))
			return -1;
		for (unsigned i = 0; i < e->nattr; i++)
			if (!strcmp(e->attr[2 * i], name))
				return xr_fail(r, "attribute given twice");
		xr_ws(r);
		if (r->p >= r->end || *r->p != '=')
			return xr_fail(r, "'=' expected");
		r->p++;
		xr_ws(r);
		if (r->p >= r->end || (*r->p != '"' && *r->p != '\''))
			return xr_fail(r, "quoted value expected");
		char q = *r->p++;
		struct xe val = { 0 };
		xe_add_text(&val, "", 0);
		while (r->p < r->end && *r->p != q) {
			if (*r->p == '<')
				return xr_fail(r, "'<' in an attribute value");
			char buf[8];
			int n = *r->p == '&' ? xr_entity(r, buf) : (buf[0] = *r->p++, 1);
			if (n < 0)
				return -1;
			xe_add_text(&val, buf, (size_t)n);
		}
		if (r->p >= r->end)
			return xr_fail(r, "unterminated value");
		r->p++;
		e->attr = realloc(e->attr, (2 * e->nattr + 3) * sizeof(char *));
		e->attr[2 * e->nattr] = name;
		e->attr[2 * e->nattr + 1] = val.text;
		e->attr[2 * ++e->nattr] = NULL;
	}
}

/* Comments, processing instructions (and, before the root, a doctype). */
static int xr_misc(struct xr *r, int prolog)
{
	for (;;) {
		xr_ws(r);
		if (xr_starts(r, "<!--")) {
			if (xr_skip_past(r, "-->"))
				return -1;
		} else if (xr_starts(r, "<?")) {
			if (xr_skip_past(r, "?>"))
				return -1;
		} else if (prolog && xr_starts(r, "<!DOCTYPE")) {
			if (xr_skip_past(r, ">"))
				return -1;
		} else {
			return 0;
		}
	}
}

static struct xe *xr_element(struct xr *r, struct xe *parent, int depth);

static int xr_content(struct xr *r, struct xe *e, int depth)
{
	for (;;) {
		if (r->p >= r->end)
			return xr_fail(r, "unterminated element");
		if (xr_starts(r, "</")) {
			r->p += 2;
			char *name;
			if (xr_name(r, &name))
				return -1;
			int same = !strcmp(name, e->name);
			free(name);
			xr_ws(r);
			if (!same || r->p >= r->end || *r->p != '>')
				return xr_fail(r, "mismatched end tag");
			r->p++;
			return 0;
		}
		if (xr_starts(r, "<![CDATA[")) {
			r->p += 9;
			const char *s = r->p;
			if (xr_skip_past(r, "]]>"))
				return -1;
			xe_add_text(e, s, (size_t)(r->p - 3 - s));
		} else if (xr_starts(r, "<!--")) {
			if (xr_skip_past(r, "-->"))
				return -1;
		} else if (xr_starts(r, "<?")) {
			if (xr_skip_past(r, "?>"))
				return -1;
		} else if (*r->p == '<') {
			if (!xr_element(r, e, depth + 1))
				return -1;
		} else if (*r->p == '&') {
			char buf[8];
			int n = xr_entity(r, buf);
			if (n < 0)
				return -1;
			xe_add_text(e, buf, (size_t)n);
		} else {
			const char *s = r->p;
			while (r->p < r->end && *r->p != '<' && *r->p != '&')
				r->p++;
			xe_add_text(e, s, (size_t)(r->p - s));
		}
	}
}

static struct xe *xr_element(struct xr *r, struct xe *parent, int depth)
{
	if (depth > 200) {
		xr_fail(r, "nested too deep");
		return NULL;
	}
	r->p++; /* '<' */
	struct xe *e = calloc(1, sizeof(*e));
	ck_assert_ptr_nonnull(e);
	e->parent = parent;
	if (xr_name(r, &e->name) || xr_attrs(r, e))
		return NULL;
	if (parent) {
		parent->kids = realloc(parent->kids, (parent->nkids + 1) * sizeof(*parent->kids));
		parent->kids[parent->nkids++] = e;
	}
	if (*r->p == '/') {
		if (r->p + 1 >= r->end || r->p[1] != '>') {
			xr_fail(r, "'/>' expected");
			return NULL;
		}
		r->p += 2;
		return e;
	}
	r->p++;
	return xr_content(r, e, depth) ? NULL : e;
}

/* The document's root element; fails the test (with why) if text is not well-formed. */
static struct xe *xml_parse(const char *what, const char *text, size_t len)
{
	struct xr r = { text, text + len, "" };
	struct xe *root = NULL;
	if (!xr_misc(&r, 1)) {
		if (r.p < r.end && *r.p == '<')
			root = xr_element(&r, NULL, 0);
		else
			xr_fail(&r, "no root element");
	}
	if (root && !xr_misc(&r, 0) && r.p != r.end)
		root = NULL, xr_fail(&r, "data after the root element");
	ck_assert_msg(root != NULL, "%s is not well-formed XML: %s", what, r.err);
	return root;
}

static const char *xml_attr(const struct xe *e, const char *name)
{
	for (unsigned i = 0; i < e->nattr; i++)
		if (!strcmp(e->attr[2 * i], name))
			return e->attr[2 * i + 1];
	return NULL;
}

/* Whether e's class attribute holds the word cls. */
static int xml_class(const struct xe *e, const char *cls)
{
	const char *c = xml_attr(e, "class");
	size_t n = strlen(cls);
	for (const char *p = c; p && *p;) {
		while (*p == ' ')
			p++;
		if (!strncmp(p, cls, n) && (p[n] == ' ' || !p[n]))
			return 1;
		p = strchr(p, ' ');
	}
	return 0;
}

struct xlist {
	struct xe **e;
	unsigned n;
};

/* Every element below e (e included) of tag name (NULL: any) and class cls (NULL: any). */
static void xml_all(struct xe *e, const char *name, const char *cls, struct xlist *out)
{
	if ((!name || !strcmp(e->name, name)) && (!cls || xml_class(e, cls))) {
		out->e = realloc(out->e, (out->n + 1) * sizeof(*out->e));
		out->e[out->n++] = e;
	}
	for (unsigned i = 0; i < e->nkids; i++)
		xml_all(e->kids[i], name, cls, out);
}

/* The nearest strict ancestor of class cls, or NULL. */
static const struct xe *xml_up(const struct xe *e, const char *cls)
{
	for (e = e->parent; e; e = e->parent)
		if (xml_class(e, cls))
			return e;
	return NULL;
}

/* The first child element of tag name (and class cls if not NULL). */
static const struct xe *xml_kid(const struct xe *e, const char *name, const char *cls)
{
	for (unsigned i = 0; i < e->nkids; i++)
		if (!strcmp(e->kids[i]->name, name) && (!cls || xml_class(e->kids[i], cls)))
			return e->kids[i];
	return NULL;
}

static const char *xml_text(const struct xe *e)
{
	return e && e->text ? e->text : "";
}

static void xml_free(struct xe *e)
{
	for (unsigned i = 0; i < e->nkids; i++)
		xml_free(e->kids[i]);
	for (unsigned i = 0; i < 2 * e->nattr; i++)
		free(e->attr[i]);
	free(e->attr);
	free(e->kids);
	free(e->text);
	free(e->name);
	free(e);
}

/* ---- running things ---- */

/* dir/name, in storage that stays valid for the rest of the test. */
static const char *path_in(const char *name)
{
	char *b;
	ck_assert_int_ge(asprintf(&b, "%s/%s", dir, name), 0);
	return b;
}

static char *slurp(const char *path, size_t *len)
{
	size_t n;
	char *t = tj_read_file(path, &n);
	ck_assert_msg(t != NULL, "cannot read %s: %s", path, strerror(errno));
	if (len)
		*len = n;
	return t;
}

struct run {
	int status;                       /* exit status, -1 if it did not exit */
	char *out, *err;
};

/* Runs the shell command built from fmt, its stdout and stderr kept apart. */
static struct run run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static struct run run(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	char out[300], err[300], full[5000];
	snprintf(out, sizeof(out), "%s/run.out", dir);
	snprintf(err, sizeof(err), "%s/run.err", dir);
	snprintf(full, sizeof(full), "{ %s; } >'%s' 2>'%s'", cmd, out, err);
	int st = system(full);
	struct run r = { WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp(out, NULL), slurp(err, NULL) };
	return r;
}

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

#define RENDER "'" MA_TOOLS_DIR "/marcel-render'"

/* Renders in to out (snapshot or movie); the tool must succeed silently. */
static void render(const char *what, const char *in, const char *out)
{
	struct run r = run(RENDER " %s '%s' -o '%s'", what, in, out);
	ck_assert_msg(r.status == 0, "marcel-render %s %s: status %d: %s", what, in, r.status, r.err);
	ck_assert_str_eq(r.err, "");
	ck_assert_str_eq(r.out, "");
	run_free(&r);
}

static int have(const char *prog)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

/* xmllint, where installed (tools/deps installs it), agrees that path is well-formed. */
static void xmllint_ok(const char *path)
{
	if (!have("xmllint")) {
		printf("check_render: xmllint not installed: only the built-in XML reader checked %s\n", path);
		return;
	}
	struct run r = run("xmllint --noout '%s'", path);
	ck_assert_msg(r.status == 0, "xmllint rejects %s: %s", path, r.err);
	run_free(&r);
}

/* ---- JSON documents ---- */

static struct tj_node *json_load(const char *path)
{
	size_t len;
	char *text = slurp(path, &len);
	struct tj_node *doc = calloc(1, sizeof(*doc));
	struct tj_parser ps;
	ck_assert_msg(tj_parse_doc(&ps, text, len, doc) == 0, "%s: %s", path, ps.err);
	free(text);
	return doc;
}

static long long jint(const struct tj_node *obj, const char *key)
{
	long long v = 0;
	ck_assert_msg(tj_int(tj_get(obj, key), LLONG_MIN, LLONG_MAX, &v) == 0, "\"%s\" is not an integer", key);
	return v;
}

static uint64_t juid(const struct tj_node *obj)
{
	uint64_t v = 0;
	ck_assert(tj_u64(tj_get(obj, "uid"), &v) == 0);
	return v & ~TAG;
}

static const struct tj_node *jarr(const struct tj_node *obj, const char *key)
{
	const struct tj_node *v = tj_get(obj, key);
	ck_assert_msg(v && v->type == TJ_ARRAY, "\"%s\" is not an array", key);
	return v;
}

/* ---- the SVG against its snapshot ---- */

/* The chip of entity ent (there must be exactly one), or NULL if want is 0. */
static const struct xe *chip_of(const struct xlist *chips, unsigned ent)
{
	const struct xe *found = NULL;
	char want[16];
	snprintf(want, sizeof(want), "%u", ent);
	for (unsigned i = 0; i < chips->n; i++)
		if (!strcmp(xml_attr(chips->e[i], "data-entity"), want)) {
			ck_assert_msg(!found, "entity %u has two chips", ent);
			found = chips->e[i];
		}
	return found;
}

static const char *fill_of(const struct xe *chip)
{
	const struct xe *rect = xml_kid(chip, "rect", NULL);
	ck_assert_ptr_nonnull(rect);
	return xml_attr(rect, "fill");
}

struct svg_check {
	struct xe *root;
	struct xlist vps, chips, bubbles, more;
	struct tj_node *snap;
	const struct tj_node *queues, *ents;
	unsigned nb_vps;
	int width, height;
};

/* One box per VP, titled with its name, with its level: as the snapshot says. */
static void check_vp_boxes(struct svg_check *c)
{
	ck_assert_uint_eq(c->vps.n, c->nb_vps);
	char *seen = calloc(c->nb_vps, 1);
	for (unsigned i = 0; i < c->vps.n; i++) {
		const struct xe *g = c->vps.e[i];
		unsigned vp = (unsigned)atoi(xml_attr(g, "data-vp"));
		ck_assert_uint_lt(vp, c->nb_vps);
		ck_assert_msg(!seen[vp], "two boxes for VP%u", vp);
		seen[vp] = 1;
		char name[16];
		snprintf(name, sizeof(name), "VP%u", vp);
		const char *title = xml_text(xml_kid(g, "text", "qname"));
		ck_assert_msg(strlen(title) >= strlen(name) && !strcmp(title + strlen(title) - strlen(name), name) &&
				      (strlen(title) == strlen(name) || title[strlen(title) - strlen(name) - 1] == ' '),
			      "VP%u's box is titled '%s'", vp, title);
		const struct tj_node *q = &c->queues->items[atoi(xml_attr(g, "data-queue"))];
		ck_assert_int_eq(jint(q, "vp"), vp);
		const struct xe *hw = xml_kid(g, "g", "hwprio");
		ck_assert_ptr_nonnull(hw);
		ck_assert_int_eq(atoi(xml_attr(hw, "data-level")), jint(q, "hwprio_level"));
	}
	free(seen);
}

/* Every thread: one chip, labelled with its id, in its queue's box (running: its VP's),
 * inside its own bubble's outline when nest. Returns the number of chips checked. */
static unsigned check_chips(struct svg_check *c, int nest)
{
	unsigned threads = 0;
	for (unsigned i = 0; i < c->ents->n; i++) {
		const struct tj_node *e = &c->ents->items[i];
		if (strcmp(tj_get(e, "kind")->str, "thread"))
			continue;
		threads++;
		const struct xe *chip = chip_of(&c->chips, i);
		ck_assert_msg(chip != NULL, "thread entity %u has no chip", i);
		char uid[24];
		snprintf(uid, sizeof(uid), "%llu", (unsigned long long)juid(e));
		ck_assert_str_eq(xml_attr(chip, "data-uid"), uid);
		ck_assert_str_eq(xml_text(xml_kid(chip, "text", NULL)), uid);
		const struct xe *box = xml_up(chip, "queue");
		ck_assert_ptr_nonnull(box);
		long long vp = jint(e, "running_vp"), q = jint(e, "queue");
		if (vp >= 0) {
			ck_assert_msg(xml_class(box, "vp") && atoi(xml_attr(box, "data-vp")) == vp, "thread %s runs on VP%lld", uid,
				      vp);
			ck_assert(xml_class(chip, "running"));
		} else if (q >= 0) {
			ck_assert_msg(xml_attr(box, "data-queue") && atoi(xml_attr(box, "data-queue")) == q,
				      "thread %s is on queue %lld, drawn in %s", uid, q, xml_attr(box, "data-queue"));
			ck_assert(!xml_class(chip, "running"));
		} else {
			ck_assert_msg(xml_class(box, "unplaced"), "thread %s is on no queue", uid);
		}
		long long parent = jint(e, "parent");
		const struct tj_node *p = &c->ents->items[parent];
		if (nest && jint(p, "parent") >= 0) {
			const struct xe *b = xml_up(chip, "bubble");
			ck_assert_msg(b && atoi(xml_attr(b, "data-entity")) == parent, "thread %s is not in its bubble's outline", uid);
		}
	}
	return threads;
}

static void svg_load(struct svg_check *c, const char *svg, const char *snap)
{
	memset(c, 0, sizeof(*c));
	xmllint_ok(svg);
	size_t len;
	char *text = slurp(svg, &len);
	c->root = xml_parse(svg, text, len);
	free(text);
	ck_assert_str_eq(c->root->name, "svg");
	c->width = atoi(xml_attr(c->root, "width"));
	c->height = atoi(xml_attr(c->root, "height"));
	xml_all(c->root, "g", "vp", &c->vps);
	xml_all(c->root, "g", "thread", &c->chips);
	xml_all(c->root, "g", "bubble", &c->bubbles);
	xml_all(c->root, "text", "more", &c->more);
	c->snap = json_load(snap);
	c->queues = jarr(c->snap, "queues");
	c->ents = jarr(c->snap, "entities");
	c->nb_vps = (unsigned)jint(c->snap, "vps");
}

static void svg_free(struct svg_check *c)
{
	xml_free(c->root);
	free(c->vps.e);
	free(c->chips.e);
	free(c->bubbles.e);
	free(c->more.e);
	tj_node_free(c->snap);
	free(c->snap);
}

/* Bubble entity b has an outline. */
static int has_outline(const struct svg_check *c, long long b)
{
	for (unsigned i = 0; i < c->bubbles.n; i++)
		if (atoll(xml_attr(c->bubbles.e[i], "data-entity")) == b)
			return 1;
	return 0;
}

/* ---- the page against its trace ---- */

struct trace_run {
	unsigned vp;
	uint64_t id;
};

struct trace_scan {
	unsigned long events;
	unsigned nb_vps;
	long long vp_of[4096];            /* track tid -> VP + 1, 0 if not a VP's */
	unsigned long hw_per_vp[1024];
	struct trace_run *runs;
	size_t nb_runs, cap_runs;
	unsigned long hw;
};

static int scan_event(const struct tj_event *e, void *ctx)
{
	struct trace_scan *s = ctx;
	s->events++;
	if (!strcmp(e->ph, "M")) {
		unsigned vp;
		int n = -1;
		const char *name = e->nb_args ? e->args[0].val : "";
		if (!strcmp(e->name, "thread_name") && sscanf(name, "VP%u%n", &vp, &n) == 1 && n == (int)strlen(name)) {
			ck_assert_int_lt(e->tid, 4096);
			s->vp_of[e->tid] = vp + 1;
			if (vp + 1 > s->nb_vps)
				s->nb_vps = vp + 1;
		}
		return 0;
	}
	long long vp1 = e->has_tid && e->tid >= 0 && e->tid < 4096 ? s->vp_of[e->tid] : 0;
	if (!strcmp(e->ph, "B") && vp1) {
		if (s->nb_runs == s->cap_runs) {
			s->cap_runs = s->cap_runs ? 2 * s->cap_runs : 1024;
			s->runs = realloc(s->runs, s->cap_runs * sizeof(*s->runs));
		}
		const char *id = NULL;
		for (unsigned i = 0; i < e->nb_args; i++)
			if (!strcmp(e->args[i].key, "id"))
				id = e->args[i].val;
		ck_assert_ptr_nonnull(id);
		s->runs[s->nb_runs++] = (struct trace_run){ (unsigned)(vp1 - 1), strtoull(id, NULL, 10) };
	}
	if (!strcmp(e->ph, "i") && !strcmp(e->name, "hwprio")) {
		for (unsigned i = 0; i < e->nb_args; i++)
			if (!strcmp(e->args[i].key, "vp") && atoi(e->args[i].val) < 1024)
				s->hw_per_vp[atoi(e->args[i].val)]++;
		s->hw++;
	}
	return 0;
}

static struct trace_scan *scan_trace(const char *path)
{
	size_t len;
	char *text = slurp(path, &len);
	struct trace_scan *s = calloc(1, sizeof(*s));
	struct tj_parser ps;
	ck_assert_msg(tj_parse(&ps, text, len, scan_event, s) == 0, "%s: %s", path, ps.err);
	free(text);
	return s;
}

struct page_check {
	struct xe *root;
	struct tj_node *data;
	char *html;
	const struct tj_node *vps, *threads, *slices, *idle, *hw;
	long long span;
};

static const struct xe *by_id(struct xe *root, const char *id)
{
	struct xlist all = { 0 };
	xml_all(root, NULL, NULL, &all);
	const struct xe *found = NULL;
	for (unsigned i = 0; i < all.n && !found; i++)
		if (xml_attr(all.e[i], "id") && !strcmp(xml_attr(all.e[i], "id"), id))
			found = all.e[i];
	free(all.e);
	return found;
}

static void page_load(struct page_check *p, const char *html)
{
	memset(p, 0, sizeof(*p));
	xmllint_ok(html);
	size_t len;
	p->html = slurp(html, &len);
	p->root = xml_parse(html, p->html, len);
	ck_assert_str_eq(p->root->name, "html");
	/* Self-contained: no address but the namespace's, nothing loaded. */
	const char *ns = strstr(p->html, "://");
	ck_assert_msg(ns && !strstr(ns + 3, "://"), "the page refers to something outside it");
	ck_assert(!strstr(p->html, "src=") && !strstr(p->html, "href=") && !strstr(p->html, "url("));
	const struct xe *d = by_id(p->root, "data");
	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(xml_attr(d, "type"), "application/json");
	p->data = calloc(1, sizeof(*p->data));
	struct tj_parser ps;
	const char *t = xml_text(d);
	ck_assert_msg(tj_parse_doc(&ps, t, strlen(t), p->data) == 0, "the page's data: %s", ps.err);
	p->vps = jarr(p->data, "vps");
	p->threads = jarr(p->data, "threads");
	p->slices = jarr(p->data, "slices");
	p->idle = jarr(p->data, "idle");
	p->hw = jarr(p->data, "hw");
	p->span = jint(p->data, "span");
	static const char *const controls[] = { "play", "slider", "timeline", "vps", "log" };
	for (unsigned i = 0; i < sizeof(controls) / sizeof(controls[0]); i++)
		ck_assert_msg(by_id(p->root, controls[i]) != NULL, "the page has no #%s", controls[i]);
}

static void page_free(struct page_check *p)
{
	xml_free(p->root);
	tj_node_free(p->data);
	free(p->data);
	free(p->html);
}

static long long item(const struct tj_node *arr, unsigned i)
{
	long long v = 0;
	ck_assert(tj_int(&arr->items[i], LLONG_MIN, LLONG_MAX, &v) == 0);
	return v;
}

/* Every VP; each VP's slices are the trace's, in its order, with its thread ids; every
 * level change is there; the counts are the trace's. */
static void check_page_data(const struct page_check *p, const struct trace_scan *s)
{
	ck_assert_uint_eq(p->vps->n, s->nb_vps);
	for (unsigned v = 0; v < s->nb_vps; v++) {
		char name[16];
		snprintf(name, sizeof(name), "VP%u", v);
		ck_assert_str_eq(p->vps->items[v].str, name);
	}
	const struct tj_node *counts = tj_get(p->data, "counts");
	ck_assert_int_eq(jint(counts, "trace_events"), (long long)s->events);
	ck_assert_int_eq(jint(counts, "slices"), (long long)s->nb_runs);
	ck_assert_int_eq(jint(counts, "slices_shown"), (long long)s->nb_runs);
	ck_assert_int_eq(jint(counts, "hwprio"), (long long)s->hw);
	ck_assert_uint_eq(p->slices->n, s->nb_vps);
	size_t total = 0;
	for (unsigned v = 0; v < s->nb_vps; v++) {
		const struct tj_node *sl = &p->slices->items[v];
		ck_assert_uint_eq(sl->n % 3, 0);
		size_t k = 0;
		for (size_t r = 0; r < s->nb_runs; r++) {
			if (s->runs[r].vp != v)
				continue;
			ck_assert_msg(3 * k + 2 < sl->n, "VP%u: fewer slices in the page than in the trace", v);
			long long start = item(sl, (unsigned)(3 * k)), end = item(sl, (unsigned)(3 * k + 1));
			long long ti = item(sl, (unsigned)(3 * k + 2));
			ck_assert(start >= 0 && start <= end && end <= p->span);
			ck_assert(ti >= 0 && (size_t)ti < p->threads->n);
			ck_assert_int_eq(item(&p->threads->items[ti], 0), (long long)s->runs[r].id);
			k++;
		}
		ck_assert_uint_eq(3 * k, sl->n);
		total += k;
		ck_assert_uint_eq(p->hw->items[v].n, 2 * s->hw_per_vp[v]);
		ck_assert_uint_eq(p->idle->items[v].n % 2, 0);
	}
	ck_assert_uint_eq(total, s->nb_runs);
}

/* What the page's data says VP v shows at t: its chip's text and its level's. */
static void expect_at(const struct page_check *p, unsigned v, double t, char *chip, char *level, size_t n)
{
	const struct tj_node *sl = &p->slices->items[v], *id = &p->idle->items[v], *hw = &p->hw->items[v];
	snprintf(chip, n, "-");
	for (unsigned i = 0; i + 2 < sl->n; i += 3)
		if (item(sl, i) <= t && t < item(sl, i + 1))
			snprintf(chip, n, "%lld", item(&p->threads->items[item(sl, i + 2)], 0));
	if (!strcmp(chip, "-"))
		for (unsigned i = 0; i + 1 < id->n; i += 2)
			if (item(id, i) <= t && t < item(id, i + 1))
				snprintf(chip, n, "idle");
	long long l = 0;
	for (unsigned i = 0; i + 1 < hw->n; i += 2)
		if (item(hw, i) <= t)
			l = item(hw, i + 1);
	snprintf(level, n, l > 0 ? "hw +%lld" : "hw %lld", l);
}

/* With node installed: the player, run on a stand-in DOM (render-page.js), shows at
 * several slider positions what the data says. */
static void check_player(const struct page_check *p, const char *html)
{
	if (!have("node")) {
		printf("check_render: node not installed: the page's player was not run\n");
		return;
	}
	for (int pos = 0; pos <= 10000; pos += 2500) {
		struct run r = run("node '%s/render-page.js' '%s' %d", MA_SRC_TESTS_DIR, html, pos);
		ck_assert_msg(r.status == 0, "the player failed: %s", r.err);
		struct tj_node out;
		struct tj_parser ps;
		ck_assert_msg(tj_parse_doc(&ps, r.out, strlen(r.out), &out) == 0, "player output: %s", ps.err);
		double t = tj_get(&out, "t")->num;
		const struct tj_node *vps = jarr(&out, "vps");
		ck_assert_uint_eq(vps->n, p->vps->n);
		for (unsigned v = 0; v < vps->n; v++) {
			char chip[32], level[32];
			expect_at(p, v, t, chip, level, sizeof(chip));
			ck_assert_msg(!strcmp(vps->items[v].items[0].str, chip), "at %.0f ns VP%u shows %s, the data says %s", t, v,
				      vps->items[v].items[0].str, chip);
			ck_assert_str_eq(vps->items[v].items[1].str, level);
		}
		tj_node_free(&out);
		run_free(&r);
	}
}

/* ---- a live run: nested bubbles, a blocked thread, a name full of markup ---- */

#define ODD_NAME "odd<&\"'>]]>"
#define GROUPS 2
#define PER 3

static int busy_stop;
static atomic_int busy_started;
static marcel_sem_t blocker;

/* Computes until busy_stop, yielding now and then (every few hundred microseconds: a
 * trace of some thousands of slices, not of millions). */
static any_t busy(any_t arg)
{
	(void)arg;
	atomic_fetch_add(&busy_started, 1);
	for (unsigned long n = 1; !__atomic_load_n(&busy_stop, __ATOMIC_RELAXED); n++)
		if (n % (1 << 18) == 0)
			marcel_yield();
	return NULL;
}

static any_t blocked(any_t arg)
{
	(void)arg;
	marcel_sem_P(&blocker);
	return NULL;
}

static marcel_t spawn(marcel_bubble_t *b, const char *name, marcel_func_t f)
{
	marcel_attr_t a;
	marcel_t t;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setname(&a, name), 0);
	ck_assert_int_eq(marcel_create_dontsched(&t, &a, f, NULL), 0);
	ck_assert_int_eq(marcel_bubble_inserttask(b, t), 0);
	return t;
}

/* Bubble 1: g1t0..2; bubble 2: g2t0..2 and bubble 3 inside it with g3t0..1; a thread
 * blocked on a semaphore, named ODD_NAME, in no explicit bubble. On "numa:2 core:2" (4
 * VPs) under spread, MARCEL_TRACE set: writes live-snap.json and live-trace.json. */
START_TEST(live_run)
{
	setenv("MARCEL_TRACE", path_in("live-trace.json"), 1);
	ma_test_init_with("numa:2 core:2", "spread");
	unsetenv("MARCEL_TRACE");
	marcel_bubble_t b[3];
	marcel_t t[GROUPS * PER + 2], odd;
	unsigned nt = 0;
	for (int k = 0; k < 3; k++) {
		ck_assert_int_eq(marcel_bubble_init(&b[k]), 0);
		ck_assert_int_eq(marcel_bubble_setid(&b[k], k + 1), 0);
	}
	for (int k = 0; k < GROUPS; k++)
		for (int i = 0; i < PER; i++) {
			char name[16];
			snprintf(name, sizeof(name), "g%dt%d", k + 1, i);
			t[nt++] = spawn(&b[k], name, busy);
		}
	t[nt++] = spawn(&b[2], "g3t0", busy);
	t[nt++] = spawn(&b[2], "g3t1", busy);
	ck_assert_int_eq(marcel_bubble_insertbubble(&b[1], &b[2]), 0);
	ck_assert_int_eq(marcel_sem_init(&blocker, 0), 0);
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setname(&a, ODD_NAME), 0);
	ck_assert_int_eq(marcel_create(&odd, &a, blocked, NULL), 0);
	ck_assert_int_eq(marcel_wake_up_bubble(&b[0]), 0);
	ck_assert_int_eq(marcel_wake_up_bubble(&b[1]), 0);
	ck_assert_int_eq(marcel_bubble_sched_begin(), 0);
	for (int i = 0; i < 2000 && atomic_load(&busy_started) < (int)nt; i++)
		marcel_usleep(1000);
	ck_assert_int_eq(atomic_load(&busy_started), (int)nt);
	marcel_usleep(20000);
	FILE *f = fopen(path_in("live-snap.json"), "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(marcel_sched_snapshot_json(f), 0);
	ck_assert_int_eq(fclose(f), 0);
	__atomic_store_n(&busy_stop, 1, __ATOMIC_RELAXED);
	marcel_sem_V(&blocker);
	for (unsigned i = 0; i < nt; i++)
		ck_assert_int_eq(marcel_join(t[i], NULL), 0);
	ck_assert_int_eq(marcel_join(odd, NULL), 0);
	for (int k = 2; k >= 0; k--) {
		ck_assert_int_eq(marcel_bubble_join(&b[k]), 0);
		ck_assert_int_eq(marcel_bubble_destroy(&b[k]), 0);
	}
	marcel_end();
	struct stat st;
	ck_assert_int_eq(stat(path_in("live-trace.json"), &st), 0);
	ck_assert_int_gt(st.st_size, 100);
}
END_TEST

/* Entity index of the thread named name in a snapshot, -1 if none. */
static int thread_named(const struct tj_node *ents, const char *name)
{
	for (unsigned i = 0; i < ents->n; i++)
		if (!strcmp(tj_get(&ents->items[i], "kind")->str, "thread") && !strcmp(tj_get(&ents->items[i], "name")->str, name))
			return (int)i;
	return -1;
}

START_TEST(live_snapshot)
{
	render("snapshot", path_in("live-snap.json"), path_in("live.svg"));
	struct svg_check c;
	svg_load(&c, path_in("live.svg"), path_in("live-snap.json"));
	ck_assert_uint_eq(c.nb_vps, 4);
	check_vp_boxes(&c);
	unsigned threads = check_chips(&c, 1);
	ck_assert_uint_ge(threads, GROUPS * PER + 3); /* with main */
	ck_assert_uint_eq(c.chips.n, threads);
	ck_assert_uint_eq(c.more.n, 0);
	/* Colours: bubble 1's threads one, bubble 2's and 3's another, the others grey. */
	const char *fill[3] = { NULL, NULL, NULL };
	static const char *const names[] = { "g1t0", "g1t1", "g1t2", "g2t0", "g2t1", "g2t2", "g3t0", "g3t1", ODD_NAME };
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int e = thread_named(c.ents, names[i]);
		ck_assert_msg(e >= 0, "no thread %s in the snapshot", names[i]);
		const char *f = fill_of(chip_of(&c.chips, (unsigned)e));
		unsigned g = names[i][1] == '1' ? 0 : names[i][0] == 'g' ? 1 : 2;
		if (!fill[g])
			fill[g] = f;
		ck_assert_msg(!strcmp(fill[g], f), "%s is %s, not %s like its group", names[i], f, fill[g]);
	}
	ck_assert_str_ne(fill[0], fill[1]);
	ck_assert_str_eq(fill[2], "#d9d9d9");
	ck_assert_str_ne(fill[0], "#d9d9d9");
	ck_assert_str_ne(fill[1], "#d9d9d9");
	/* The explicit bubbles have outlines; the legend names the two groups. */
	for (unsigned i = 0; i < c.ents->n; i++) {
		const struct tj_node *e = &c.ents->items[i];
		if (!strcmp(tj_get(e, "kind")->str, "bubble") && jint(e, "id") > 0)
			ck_assert_msg(has_outline(&c, i), "bubble %lld has no outline", jint(e, "id"));
	}
	struct xlist sw = { 0 };
	xml_all(c.root, "rect", "swatch", &sw);
	ck_assert_uint_eq(sw.n, 2);
	free(sw.e);
	/* The odd name went through escaping whole. */
	const struct xe *odd = chip_of(&c.chips, (unsigned)thread_named(c.ents, ODD_NAME));
	ck_assert_ptr_nonnull(strstr(xml_text(xml_kid(odd, "title", NULL)), "\"" ODD_NAME "\""));
	svg_free(&c);
}
END_TEST

START_TEST(live_movie)
{
	render("movie", path_in("live-trace.json"), path_in("live.html"));
	struct page_check p;
	page_load(&p, path_in("live.html"));
	struct trace_scan *s = scan_trace(path_in("live-trace.json"));
	ck_assert_uint_eq(s->nb_vps, 4);
	ck_assert_uint_gt(s->nb_runs, GROUPS * PER);
	check_page_data(&p, s);
	check_player(&p, path_in("live.html"));
	/* Membership is in the trace: coloured by bubble, groups as in the snapshot. */
	ck_assert_str_eq(tj_get(p.data, "colour_by")->str, "bubble");
	long long group[3] = { -2, -2, -2 };
	int found = 0;
	for (unsigned i = 0; i < p.threads->n; i++) {
		const char *name = p.threads->items[i].items[1].str;
		long long g = item(&p.threads->items[i], 2);
		int k = !strcmp(name, ODD_NAME) ? 2 : name[0] == 'g' && name[2] == 't' ? (name[1] == '1' ? 0 : 1) : -1;
		if (k < 0)
			continue;
		found++;
		if (group[k] == -2)
			group[k] = g;
		ck_assert_msg(group[k] == g, "%s is in group %lld, not %lld", name, g, group[k]);
	}
	ck_assert_int_eq(found, GROUPS * PER + 3);
	ck_assert_int_ge(group[0], 0);
	ck_assert_int_ge(group[1], 0);
	ck_assert_int_ne(group[0], group[1]);
	ck_assert_int_eq(group[2], -1);
	/* The odd name is in the data, escaped in the page's text. */
	ck_assert_ptr_null(strstr(p.html, "odd<"));
	ck_assert_ptr_null(strstr(p.html, "odd\\u003c&"));
	ck_assert_ptr_nonnull(strstr(p.html, "odd\\u003c\\u0026\\\"'\\u003e]]\\u003e"));
	free(s->runs);
	free(s);
	page_free(&p);
}
END_TEST

/* ---- marcel-sim's files ---- */

#define SIM "'" MA_SIM_DIR "/marcel-sim'"

START_TEST(sim_pictures)
{
	struct run r = run(SIM " --machine itanium16 --workload stencil:threads=16:iters=5 --strategy cache "
			       "--trace '%s' --snapshot '%s'",
			   path_in("sim-trace.json"), path_in("sim-snap.json"));
	ck_assert_msg(r.status == 0, "marcel-sim: %s", r.err);
	run_free(&r);
	render("snapshot", path_in("sim-snap.json"), path_in("sim.svg"));
	struct svg_check c;
	svg_load(&c, path_in("sim.svg"), path_in("sim-snap.json"));
	ck_assert_uint_eq(c.nb_vps, 16);
	check_vp_boxes(&c);
	ck_assert_uint_eq(check_chips(&c, 1), 16);
	ck_assert_uint_eq(c.chips.n, 16);
	svg_free(&c);

	render("movie", path_in("sim-trace.json"), path_in("sim.html"));
	struct page_check p;
	page_load(&p, path_in("sim.html"));
	struct trace_scan *s = scan_trace(path_in("sim-trace.json"));
	ck_assert_uint_eq(s->nb_vps, 16);
	check_page_data(&p, s);
	check_player(&p, path_in("sim.html"));
	ck_assert_str_eq(tj_get(p.data, "colour_by")->str, "bubble");
	ck_assert_uint_eq(p.threads->n, 16);
	ck_assert_uint_ge(jarr(p.data, "groups")->n, 2);
	free(s->runs);
	free(s);
	page_free(&p);

	/* hwprio levels: POWER5 priorities under the adaptive policy, levels raised by 10 s. */
	r = run(SIM " --machine power5 --workload metbench --hwprio adaptive --trace '%s' --snapshot '%s' "
		    "--snapshot-at 10",
		path_in("hw-trace.json"), path_in("hw-snap.json"));
	ck_assert_msg(r.status == 0, "marcel-sim: %s", r.err);
	run_free(&r);
	render("snapshot", path_in("hw-snap.json"), path_in("hw.svg"));
	svg_load(&c, path_in("hw.svg"), path_in("hw-snap.json"));
	check_vp_boxes(&c);
	check_chips(&c, 1);
	int raised = 0;
	for (unsigned i = 0; i < c.vps.n; i++)
		raised += atoi(xml_attr(xml_kid(c.vps.e[i], "g", "hwprio"), "data-level")) > 0;
	ck_assert_int_gt(raised, 0);
	svg_free(&c);
	render("movie", path_in("hw-trace.json"), path_in("hw.html"));
	page_load(&p, path_in("hw.html"));
	s = scan_trace(path_in("hw-trace.json"));
	ck_assert_uint_gt(s->hw, 0);
	check_page_data(&p, s);
	check_player(&p, path_in("hw.html"));
	ck_assert_str_eq(tj_get(p.data, "colour_by")->str, "thread");
	ck_assert_ptr_nonnull(strstr(jarr(p.data, "notes")->items[0].str, "coloured by thread"));
	ck_assert_ptr_nonnull(strstr(p.html, "<p class=\"note\">This trace records no bubble membership"));
	free(s->runs);
	free(s);
	page_free(&p);
}
END_TEST

/* 1024 VPs, 4096 threads: the picture stays a size one can zoom through (compact boxes,
 * caps), and every thread is drawn or counted in its queue's "+N". */
START_TEST(sim_1024)
{
	struct run r = run(SIM " --machine topology='pack:4 numa:4 l3:4 core:16' --workload stencil:threads=4096:iters=1 "
			       "--strategy cache --trace '%s' --snapshot '%s'",
			   path_in("big-trace.json"), path_in("big-snap.json"));
	ck_assert_msg(r.status == 0, "marcel-sim: %s", r.err);
	run_free(&r);
	render("snapshot", path_in("big-snap.json"), path_in("big.svg"));
	struct svg_check c;
	svg_load(&c, path_in("big.svg"), path_in("big-snap.json"));
	ck_assert_uint_eq(c.nb_vps, 1024);
	check_vp_boxes(&c);
	ck_assert_msg(c.width <= 8000 && c.height <= 8000, "%d x %d pixels", c.width, c.height);
	ck_assert_msg(c.width <= 4 * c.height && c.height <= 4 * c.width, "%d x %d pixels", c.width, c.height);
	long long counted = 0;
	for (unsigned i = 0; i < c.more.n; i++)
		counted += atoll(xml_attr(c.more.e[i], "data-threads"));
	ck_assert_int_eq(counted + c.chips.n, 4096);
	for (unsigned i = 0; i < c.chips.n; i++) {
		int e = atoi(xml_attr(c.chips.e[i], "data-entity"));
		char uid[24];
		snprintf(uid, sizeof(uid), "%llu", (unsigned long long)juid(&c.ents->items[e]));
		ck_assert_str_eq(xml_text(xml_kid(c.chips.e[i], "text", NULL)), uid);
	}
	svg_free(&c);

	render("movie", path_in("big-trace.json"), path_in("big.html"));
	struct page_check p;
	page_load(&p, path_in("big.html"));
	struct trace_scan *s = scan_trace(path_in("big-trace.json"));
	ck_assert_uint_eq(s->nb_vps, 1024);
	check_page_data(&p, s);
	free(s->runs);
	free(s);
	page_free(&p);
}
END_TEST

/* Over the caps: 210 000 slices on one VP, 10 000 of them shorter than the others, and
 * 25 000 marks. The page keeps the 200 000 longer slices and the first 20 000 log lines,
 * and says so. */
START_TEST(large_trace)
{
	FILE *f = fopen(path_in("large.json"), "w");
	ck_assert_ptr_nonnull(f);
	fputs("{\"traceEvents\":[{\"ph\":\"M\",\"pid\":1,\"tid\":1,\"name\":\"thread_name\",\"args\":{\"name\":\"VP0\"}}", f);
	long long ts = 0;
	for (int i = 0; i < 210000; i++) {
		int d = i % 21 == 20 ? 1 : 5; /* every 21st is short */
		fprintf(f, ",\n{\"ph\":\"B\",\"pid\":1,\"tid\":1,\"ts\":%lld,\"name\":\"w\",\"args\":{\"id\":%d}}", ts, i % 3);
		fprintf(f, ",\n{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":%lld}", ts + d);
		if (i < 25000)
			fprintf(f, ",\n{\"ph\":\"i\",\"s\":\"t\",\"pid\":1,\"tid\":1,\"ts\":%lld,\"cat\":\"mark\",\"name\":\"m%d\"}",
				ts + d, i);
		ts += d + 1;
	}
	fputs("\n]}\n", f);
	ck_assert_int_eq(fclose(f), 0);
	render("movie", path_in("large.json"), path_in("large.html"));
	struct page_check p;
	page_load(&p, path_in("large.html"));
	const struct tj_node *counts = tj_get(p.data, "counts");
	ck_assert_int_eq(jint(counts, "slices"), 210000);
	ck_assert_int_eq(jint(counts, "slices_shown"), 200000);
	ck_assert_int_eq(jint(counts, "events"), 25000);
	ck_assert_int_eq(jint(counts, "events_shown"), 20000);
	const struct tj_node *sl = &p.slices->items[0];
	ck_assert_uint_eq(sl->n, 3 * 200000);
	for (unsigned i = 0; i < sl->n; i += 3)
		ck_assert_int_eq(item(sl, i + 1) - item(sl, i), 5000); /* ns: the long ones only */
	ck_assert_uint_eq(jarr(p.data, "events")->n, 20000);
	ck_assert_ptr_nonnull(strstr(p.html, "Large trace: 200000 of 210000 thread slices"));
	ck_assert_ptr_nonnull(strstr(p.html, "first 20000 of 25000 events"));
	ck_assert_str_eq(tj_get(p.data, "colour_by")->str, "thread");
	page_free(&p);
}
END_TEST

/* ---- bad input ---- */

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

/* marcel-render what in -o out: exit 2, one line on stderr naming in and saying why,
 * nothing on stdout, out as it was. */
static void refused(const char *what, const char *in, const char *why)
{
	const char *out = path_in("kept.out");
	write_file(out, "as it was\n");
	struct run r = run(RENDER " %s '%s' -o '%s'", what, in, out);
	ck_assert_msg(r.status == 2, "%s %s: status %d (%s)", what, in, r.status, r.err);
	ck_assert_str_eq(r.out, "");
	char *nl = strchr(r.err, '\n');
	ck_assert_msg(nl && !nl[1], "not one line: %s", r.err);
	ck_assert_msg(strstr(r.err, in) && strstr(r.err, why), "%s %s: '%s' does not say '%s'", what, in, r.err, why);
	char *kept = slurp(out, NULL);
	ck_assert_str_eq(kept, "as it was\n");
	free(kept);
	run_free(&r);
	/* Nothing left beside it either. */
	struct run ls = run("ls '%s' | grep -c '^kept.out.' || true", dir);
	ck_assert_str_eq(ls.out, "0\n");
	run_free(&ls);
}

/* A minimal snapshot: a machine with one VP, a root bubble and one thread running. */
#define SNAP_Q0 "{\"index\":0,\"name\":\"machine\",\"item\":0,\"vp\":-1,\"parent\":-1,\"depth\":0,\"kinds\":1," \
		"\"first_vp\":0,\"nb_vps\":1,\"running\":-1,\"hwprio_level\":0,\"queued\":[]}"
#define SNAP_Q1(vp, parent) "{\"index\":1,\"name\":\"VP0\",\"item\":0,\"vp\":" vp ",\"parent\":" parent \
		",\"depth\":1,\"kinds\":1,\"first_vp\":0,\"nb_vps\":1,\"running\":1,\"hwprio_level\":2,\"queued\":[]}"
#define SNAP_E0 "{\"index\":0,\"kind\":\"bubble\",\"uid\":9223372036854775808,\"id\":0,\"name\":\"root\"," \
		"\"implicit\":0,\"state\":1,\"parent\":-1,\"depth\":0,\"queue\":0,\"held_by\":-1,\"running_vp\":-1}"
#define SNAP_E1(kind, parent) "{\"index\":1,\"kind\":\"" kind "\",\"uid\":7,\"id\":-1,\"name\":\"t\",\"implicit\":0," \
		"\"state\":2,\"parent\":" parent ",\"depth\":1,\"queue\":1,\"held_by\":-1,\"running_vp\":0}"
#define SNAP(vps, q1, e1) "{\"strategy\":\"null\",\"vps\":" vps ",\"queues\":[" SNAP_Q0 "," q1 "],\"entities\":[" \
		SNAP_E0 "," e1 "]}"

START_TEST(bad_inputs)
{
	const char *f = path_in("bad.json");
	refused("snapshot", path_in("missing.json"), "cannot read");
	write_file(f, "{\"queues\":[");
	refused("snapshot", f, "not valid JSON");
	refused("movie", f, "not valid JSON");
	write_file(f, "{\"a\":1,\"a\":2}");
	refused("snapshot", f, "given twice");
	write_file(f, "[1,2]");
	refused("snapshot", f, "not a marcel snapshot");
	refused("movie", f, "not a marcel trace");
	/* Each file given to the other command. */
	refused("snapshot", path_in("live-trace.json"), "a trace, not a snapshot");
	refused("movie", path_in("live-snap.json"), "not a marcel trace");
	/* The minimal snapshot draws; each broken variant says what is wrong. */
	write_file(f, SNAP("1", SNAP_Q1("0", "0"), SNAP_E1("thread", "0")));
	render("snapshot", f, path_in("min.svg"));
	struct svg_check c;
	svg_load(&c, path_in("min.svg"), f);
	check_vp_boxes(&c);
	ck_assert_uint_eq(check_chips(&c, 1), 1);
	svg_free(&c);
	write_file(f, SNAP("2", SNAP_Q1("0", "0"), SNAP_E1("thread", "0")));
	refused("snapshot", f, "VP 1 has no queue");
	write_file(f, SNAP("1", SNAP_Q1("0", "7"), SNAP_E1("thread", "0")));
	refused("snapshot", f, "queue 1: \"parent\" is 7");
	write_file(f, SNAP("1", SNAP_Q1("0", "1"), SNAP_E1("thread", "0")));
	refused("snapshot", f, "queue 1's parents loop");
	write_file(f, SNAP("1", SNAP_Q1("0", "0"), SNAP_E1("fish", "0")));
	refused("snapshot", f, "\"kind\" is \"fish\"");
	write_file(f, SNAP("1", SNAP_Q1("0", "0"), SNAP_E1("thread", "-1")));
	refused("snapshot", f, "entities 0 and 1 both have no parent");
	write_file(f, SNAP("1", SNAP_Q1("0", "0"), SNAP_E1("thread", "1")));
	refused("snapshot", f, "entity 1's parent 1 is a thread");
	write_file(f, SNAP("1", SNAP_Q1("\"0\"", "0"), SNAP_E1("thread", "0")));
	refused("snapshot", f, "queue 1: \"vp\" is not a number");
	/* Traces: none of marcel's tracks, slices that do not nest, a bad level event. */
	write_file(f, "{\"traceEvents\":[]}");
	refused("movie", f, "no track is named VP0");
	write_file(f, "{\"traceEvents\":[{\"ph\":\"M\",\"pid\":1,\"tid\":1,\"name\":\"thread_name\",\"args\":{\"name\":\"VP0\"}},"
		      "{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":1}]}");
	refused("movie", f, "\"E\" without \"B\"");
	write_file(f, "{\"traceEvents\":[{\"ph\":\"M\",\"pid\":1,\"tid\":1,\"name\":\"thread_name\",\"args\":{\"name\":\"VP0\"}},"
		      "{\"ph\":\"i\",\"s\":\"t\",\"pid\":1,\"tid\":1,\"ts\":1,\"name\":\"hwprio\",\"args\":{\"vp\":5,\"level\":1}}]}");
	refused("movie", f, "\"hwprio\" event");
	write_file(f, "{\"traceEvents\":[{\"ph\":\"M\",\"pid\":1,\"tid\":1,\"name\":\"thread_name\",\"args\":{\"name\":\"VP0\"}},"
		      "{\"ph\":\"B\",\"pid\":1,\"tid\":1,\"ts\":1,\"name\":\"x\"},{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":2}]}");
	refused("movie", f, "without a thread \"id\"");
}
END_TEST

START_TEST(usage_errors)
{
	static const char *const bad[][2] = {
		{ "", "no command" },
		{ "frobnicate x.json", "unknown command 'frobnicate'" },
		{ "snapshot", "no input file" },
		{ "movie a.json b.json", "unexpected argument 'b.json'" },
		{ "snapshot a.json -o", "-o needs a file name" },
		{ "snapshot a.json -o x -o y", "-o given twice" },
		{ "snapshot --frob a.json", "unexpected argument '--frob'" },
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct run r = run(RENDER " %s", bad[i][0]);
		ck_assert_msg(r.status == 2, "'%s': status %d", bad[i][0], r.status);
		ck_assert_msg(strstr(r.err, bad[i][1]) && strstr(r.err, "usage:"), "'%s': %s", bad[i][0], r.err);
		ck_assert_str_eq(r.out, "");
		run_free(&r);
	}
	struct run r = run(RENDER " --help");
	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "usage:"));
	ck_assert_ptr_nonnull(strstr(r.out, "1024 VPs"));
	run_free(&r);
}
END_TEST

/* Same input, same bytes; standard output gets what -o would. */
START_TEST(deterministic)
{
	static const char *const cases[][3] = {
		{ "snapshot", "live-snap.json", "svg" },
		{ "movie", "live-trace.json", "html" },
		{ "snapshot", "sim-snap.json", "svg" },
		{ "movie", "sim-trace.json", "html" },
	};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char a[64], b[64];
		snprintf(a, sizeof(a), "det-a.%s", cases[i][2]);
		snprintf(b, sizeof(b), "det-b.%s", cases[i][2]);
		render(cases[i][0], path_in(cases[i][1]), path_in(a));
		struct run r = run(RENDER " %s '%s' >'%s'", cases[i][0], path_in(cases[i][1]), path_in(b));
		ck_assert_int_eq(r.status, 0);
		run_free(&r);
		r = run("cmp '%s' '%s'", path_in(a), path_in(b));
		ck_assert_msg(r.status == 0, "%s of %s differs between runs", cases[i][0], cases[i][1]);
		run_free(&r);
	}
}
END_TEST

/* ---- a headless browser's screenshot, where one is installed ---- */

static void check_png(const char *path)
{
	size_t len;
	char *png = slurp(path, &len);
	ck_assert_msg(len > 1000 && !memcmp(png, "\x89PNG\r\n\x1a\n", 8), "%s is not a PNG picture (%zu bytes)", path, len);
	free(png);
}

START_TEST(browser_screenshot)
{
	static const char *const browsers[] = { "chromium", "chromium-headless-shell", "google-chrome", "firefox-esr",
						"firefox" };
	const char *b = NULL;
	for (unsigned i = 0; i < sizeof(browsers) / sizeof(browsers[0]) && !b; i++)
		if (have(browsers[i]))
			b = browsers[i];
	if (!b) {
		printf("check_render: skipped: no browser (chromium, chromium-headless-shell, google-chrome, firefox-esr)\n");
		return;
	}
	static const char *const pages[][2] = { { "live.svg", "shot-svg.png" }, { "live.html", "shot-html.png" } };
	for (unsigned i = 0; i < 2; i++) {
		const char *in = path_in(pages[i][0]), *png = path_in(pages[i][1]);
		struct run r = strstr(b, "firefox")
				       ? run("timeout 120 %s --headless --screenshot '%s' 'file://%s'", b, png, in)
				       : run("timeout 120 %s --headless --no-sandbox --disable-gpu --window-size=1280,1024 "
					     "--screenshot='%s' 'file://%s'", b, png, in);
		ck_assert_msg(r.status == 0, "%s: %s", b, r.err);
		run_free(&r);
		check_png(png);
	}
}
END_TEST

int main(void)
{
	snprintf(dir, sizeof(dir), "%s/check_render.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir)) {
		perror("check_render: mkdtemp");
		return 1;
	}
	Suite *s = suite_create("render");
	/* In this order: the later tests read what the earlier ones wrote. */
	TCase *tc = tcase_create("pictures");
	tcase_add_test(tc, live_run);
	tcase_add_test(tc, live_snapshot);
	tcase_add_test(tc, live_movie);
	tcase_add_test(tc, sim_pictures);
	tcase_add_test(tc, sim_1024);
	tcase_add_test(tc, large_trace);
	tcase_add_test(tc, bad_inputs);
	tcase_add_test(tc, usage_errors);
	tcase_add_test(tc, deterministic);
	tcase_add_test(tc, browser_screenshot);
	suite_add_tcase(s, tc);
	int r = ma_test_run(s);
	/* MA_RENDER_KEEP=1 keeps the pictures, to look at them. */
	if (getenv("MA_RENDER_KEEP")) {
		printf("check_render: the pictures are in %s\n", dir);
		return r;
	}
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "check_render: could not remove %s\n", dir);
	return r;
}
