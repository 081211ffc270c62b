/*
 * Reading marcel's JSON files, shared by tools/marcel-trace-summary, tools/marcel-render
 * and their tests: a strict JSON parser (RFC 8259: the whole grammar, string escapes,
 * UTF-8, no trailing data) that hands each element of a trace's "traceEvents" to a
 * callback or keeps a whole document (a snapshot) as a tree, and the per-track summary
 * of a trace. Header-only so that the tests check exactly what the tools read.
 */
#ifndef MARCEL_TRACE_JSON_H
#define MARCEL_TRACE_JSON_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TJ_MAX_ARGS 8
#define TJ_MAX_DEPTH 64

/* One element of traceEvents, with the fields the trace format defines. Strings are
 * decoded and cut to fit; has_* say which members were present. */
struct tj_event {
	char ph[8], s[8], cat[64], name[256];
	int has_ph, has_s, has_name, has_pid, has_tid, has_ts, has_dur, has_args;
	long long pid, tid;
	double ts, dur;                   /* microseconds */
	unsigned nb_args;                 /* the first TJ_MAX_ARGS members of "args" */
	struct {
		char key[32];
		char val[256];            /* a string's value, a number's text, else "{...}" */
	} args[TJ_MAX_ARGS];
};

/* The value of e's argument key (of the first TJ_MAX_ARGS), NULL if it has none. */
static inline const char *tj_arg(const struct tj_event *e, const char *key)
{
	for (unsigned i = 0; i < e->nb_args; i++)
		if (!strcmp(e->args[i].key, key))
			return e->args[i].val;
	return NULL;
}

/* Returns nonzero to stop the parse (tj_parse then returns that value). */
typedef int (*tj_event_fn)(const struct tj_event *e, void *ctx);

struct tj_parser {
	const char *p, *end;
	tj_event_fn fn;
	void *ctx;
	int stop;
	char err[256];
	/* what the top-level object held */
	int has_trace_events;
	char display_time_unit[16];
	unsigned long nb_events;
};

static inline int tj_fail(struct tj_parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int tj_fail(struct tj_parser *ps, const char *fmt, ...)
{
	if (!ps->err[0]) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(ps->err, sizeof(ps->err), fmt, ap);
		va_end(ap);
	}
	return -1;
}

static inline void tj_ws(struct tj_parser *ps)
{
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static inline int tj_lit(struct tj_parser *ps, const char *lit)
{
	size_t n = strlen(lit);
	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, lit, n))
		return tj_fail(ps, "invalid literal");
	ps->p += n;
	return 0;
}

static inline void tj_append(char *out, size_t cap, size_t *len, const char *bytes, size_t n)
{
	if (!out)
		return;
	for (size_t i = 0; i < n && *len + 1 < cap; i++)
		out[(*len)++] = bytes[i];
	out[*len] = 0;
}

static inline int tj_hex4(struct tj_parser *ps, unsigned *v)
{
	if (ps->end - ps->p < 4)
		return tj_fail(ps, "truncated \\u escape");
	*v = 0;
	for (int i = 0; i < 4; i++) {
		char c = *ps->p++;
		unsigned d;
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return tj_fail(ps, "bad hex digit in \\u escape");
		*v = *v << 4 | d;
	}
	return 0;
}

/* tj_utf8_len's failure: 0, and why. */
static inline unsigned tj_utf8_fault(const char **why, const char *fault)
{
	if (why)
		*why = fault;
	return 0;
}

/* The length of the valid UTF-8 character at p, of which avail bytes may be read (a
 * NUL-terminated string may give SIZE_MAX: its NUL ends any character), or 0 if there is
 * none there (no overlongs, no surrogates, nothing above U+10FFFF). Then *why, if why is
 * not NULL, says what is wrong, or is NULL when p[0] starts no character at all. The
 * parser checks what it reads with it; the tools check again what they write, since
 * strings cut to fit (tj_append) may end inside a character. */
static inline unsigned tj_utf8_len(const unsigned char *p, size_t avail, const char **why)
{
	unsigned n, cp;
	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, cp = p[0] & 0x07;
	else
		return tj_utf8_fault(why, NULL);
	if (avail < n)
		return tj_utf8_fault(why, "truncated UTF-8 sequence");
	for (unsigned i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return tj_utf8_fault(why, "invalid UTF-8 sequence");
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return tj_utf8_fault(why, "invalid UTF-8 code point");
	return n;
}

/* A string at ps->p (the opening quote), decoded into out (cap bytes, NUL-terminated,
 * cut to fit; out may be NULL). */
static inline int tj_string(struct tj_parser *ps, char *out, size_t cap)
{
	size_t len = 0;
	if (out && cap)
		out[0] = 0;
	if (ps->p >= ps->end || *ps->p != '"')
		return tj_fail(ps, "expected a string");
	ps->p++;
	for (;;) {
		if (ps->p >= ps->end)
			return tj_fail(ps, "unterminated string");
		unsigned char c = (unsigned char)*ps->p;
		if (c == '"') {
			ps->p++;
			return 0;
		}
		if (c < 0x20)
			return tj_fail(ps, "control character in a string");
		if (c == '\\') {
			ps->p++;
			if (ps->p >= ps->end)
				return tj_fail(ps, "unterminated escape");
			char e = *ps->p++;
			char ch;
			switch (e) {
			case '"': ch = '"'; break;
			case '\\': ch = '\\'; break;
			case '/': ch = '/'; break;
			case 'b': ch = '\b'; break;
			case 'f': ch = '\f'; break;
			case 'n': ch = '\n'; break;
			case 'r': ch = '\r'; break;
			case 't': ch = '\t'; break;
			case 'u': {
				unsigned cp = 0;
				if (tj_hex4(ps, &cp))
					return -1;
				if (cp >= 0xdc00 && cp <= 0xdfff)
					return tj_fail(ps, "lone low surrogate");
				if (cp >= 0xd800 && cp <= 0xdbff) {
					unsigned lo = 0;
					if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u')
						return tj_fail(ps, "lone high surrogate");
					ps->p += 2;
					if (tj_hex4(ps, &lo))
						return -1;
					if (lo < 0xdc00 || lo > 0xdfff)
						return tj_fail(ps, "bad low surrogate");
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				}
				char u[4];
				size_t n;
				if (cp < 0x80) {
					u[0] = (char)cp, n = 1;
				} else if (cp < 0x800) {
					u[0] = (char)(0xc0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
				} else if (cp < 0x10000) {
					u[0] = (char)(0xe0 | cp >> 12), u[1] = (char)(0x80 | (cp >> 6 & 0x3f));
					u[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
				} else {
					u[0] = (char)(0xf0 | cp >> 18), u[1] = (char)(0x80 | (cp >> 12 & 0x3f));
					u[2] = (char)(0x80 | (cp >> 6 & 0x3f)), u[3] = (char)(0x80 | (cp & 0x3f)), n = 4;
				}
				tj_append(out, cap, &len, u, n);
				continue;
			}
			default:
				return tj_fail(ps, "bad escape \\%c", e);
			}
			tj_append(out, cap, &len, &ch, 1);
			continue;
		}
		/* Raw bytes: valid UTF-8 only. */
		const char *why;
		size_t n = tj_utf8_len((const unsigned char *)ps->p, (size_t)(ps->end - ps->p), &why);
		if (!n)
			return why ? tj_fail(ps, "%s", why) : tj_fail(ps, "invalid UTF-8 byte 0x%02x", c);
		tj_append(out, cap, &len, ps->p, n);
		ps->p += n;
	}
}

/* A number; its text goes to out (may be NULL), its value to *v (may be NULL). */
static inline int tj_number(struct tj_parser *ps, double *v, char *out, size_t cap)
{
	const char *s = ps->p;
	if (ps->p < ps->end && *ps->p == '-')
		ps->p++;
	if (ps->p >= ps->end)
		return tj_fail(ps, "truncated number");
	if (*ps->p == '0') {
		ps->p++;
	} else if (*ps->p >= '1' && *ps->p <= '9') {
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
			ps->p++;
	} else {
		return tj_fail(ps, "invalid number");
	}
	if (ps->p < ps->end && *ps->p == '.') {
		ps->p++;
		if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
			return tj_fail(ps, "digit expected after '.'");
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
			ps->p++;
	}
	if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
		ps->p++;
		if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
			ps->p++;
		if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
			return tj_fail(ps, "digit expected in exponent");
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
			ps->p++;
	}
	char tmp[64];
	size_t n = (size_t)(ps->p - s);
	if (n >= sizeof(tmp))
		n = sizeof(tmp) - 1;
	memcpy(tmp, s, n);
	tmp[n] = 0;
	if (v)
		*v = strtod(tmp, NULL);
	if (out && cap) {
		size_t len = 0;
		tj_append(out, cap, &len, tmp, n);
	}
	return 0;
}

static inline int tj_value(struct tj_parser *ps, int depth);

static inline int tj_object(struct tj_parser *ps, int depth,
		     int (*member)(struct tj_parser *ps, const char *key, void *arg, int depth), void *arg)
{
	if (depth > TJ_MAX_DEPTH)
		return tj_fail(ps, "nested too deep");
	ps->p++; /* '{' */
	tj_ws(ps);
	if (ps->p < ps->end && *ps->p == '}') {
		ps->p++;
		return 0;
	}
	for (;;) {
		char key[64];
		tj_ws(ps);
		if (tj_string(ps, key, sizeof(key)))
			return -1;
		tj_ws(ps);
		if (ps->p >= ps->end || *ps->p != ':')
			return tj_fail(ps, "':' expected");
		ps->p++;
		tj_ws(ps);
		if (member ? member(ps, key, arg, depth + 1) : tj_value(ps, depth + 1))
			return -1;
		tj_ws(ps);
		if (ps->p >= ps->end)
			return tj_fail(ps, "unterminated object");
		if (*ps->p == '}') {
			ps->p++;
			return 0;
		}
		if (*ps->p != ',')
			return tj_fail(ps, "',' or '}' expected");
		ps->p++;
	}
}

static inline int tj_array(struct tj_parser *ps, int depth, int (*elem)(struct tj_parser *ps, int depth))
{
	if (depth > TJ_MAX_DEPTH)
		return tj_fail(ps, "nested too deep");
	ps->p++; /* '[' */
	tj_ws(ps);
	if (ps->p < ps->end && *ps->p == ']') {
		ps->p++;
		return 0;
	}
	for (;;) {
		tj_ws(ps);
		if (elem ? elem(ps, depth + 1) : tj_value(ps, depth + 1))
			return -1;
		tj_ws(ps);
		if (ps->p >= ps->end)
			return tj_fail(ps, "unterminated array");
		if (*ps->p == ']') {
			ps->p++;
			return 0;
		}
		if (*ps->p != ',')
			return tj_fail(ps, "',' or ']' expected");
		ps->p++;
	}
}

static inline int tj_value(struct tj_parser *ps, int depth)
{
	if (ps->p >= ps->end)
		return tj_fail(ps, "value expected");
	switch (*ps->p) {
	case '{':
		return tj_object(ps, depth, NULL, NULL);
	case '[':
		return tj_array(ps, depth, NULL);
	case '"':
		return tj_string(ps, NULL, 0);
	case 't':
		return tj_lit(ps, "true");
	case 'f':
		return tj_lit(ps, "false");
	case 'n':
		return tj_lit(ps, "null");
	default:
		return tj_number(ps, NULL, NULL, 0);
	}
}

static inline int tj_arg_member(struct tj_parser *ps, const char *key, void *arg, int depth)
{
	struct tj_event *e = arg;
	if (e->nb_args >= TJ_MAX_ARGS)
		return tj_value(ps, depth);
	unsigned i = e->nb_args++;
	size_t kn = strlen(key) < sizeof(e->args[i].key) ? strlen(key) : sizeof(e->args[i].key) - 1;
	memcpy(e->args[i].key, key, kn);
	e->args[i].key[kn] = 0;
	if (ps->p < ps->end && *ps->p == '"')
		return tj_string(ps, e->args[i].val, sizeof(e->args[i].val));
	if (ps->p < ps->end && (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9')))
		return tj_number(ps, NULL, e->args[i].val, sizeof(e->args[i].val));
	snprintf(e->args[i].val, sizeof(e->args[i].val), "{...}");
	return tj_value(ps, depth);
}

static inline int tj_event_member(struct tj_parser *ps, const char *key, void *arg, int depth)
{
	struct tj_event *e = arg;
	struct {
		const char *key;
		char *buf;
		size_t cap;
		int *has;
	} strs[] = {
		{ "ph", e->ph, sizeof(e->ph), &e->has_ph },
		{ "s", e->s, sizeof(e->s), &e->has_s },
		{ "cat", e->cat, sizeof(e->cat), NULL },
		{ "name", e->name, sizeof(e->name), &e->has_name },
	};
	for (unsigned i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		if (!strcmp(key, strs[i].key)) {
			if (ps->p >= ps->end || *ps->p != '"')
				return tj_fail(ps, "event member \"%s\" is not a string", key);
			if (strs[i].has)
				*strs[i].has = 1;
			return tj_string(ps, strs[i].buf, strs[i].cap);
		}
	struct {
		const char *key;
		double *d;
		long long *ll;
		int *has;
	} nums[] = {
		{ "ts", &e->ts, NULL, &e->has_ts },
		{ "dur", &e->dur, NULL, &e->has_dur },
		{ "pid", NULL, &e->pid, &e->has_pid },
		{ "tid", NULL, &e->tid, &e->has_tid },
	};
	for (unsigned i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
		if (!strcmp(key, nums[i].key)) {
			if (ps->p >= ps->end || (*ps->p != '-' && (*ps->p < '0' || *ps->p > '9')))
				return tj_fail(ps, "event member \"%s\" is not a number", key);
			double v;
			if (tj_number(ps, &v, NULL, 0))
				return -1;
			*nums[i].has = 1;
			if (nums[i].d)
				*nums[i].d = v;
			else
				*nums[i].ll = (long long)v;
			return 0;
		}
	if (!strcmp(key, "args")) {
		if (ps->p >= ps->end || *ps->p != '{')
			return tj_fail(ps, "event member \"args\" is not an object");
		e->has_args = 1;
		return tj_object(ps, depth, tj_arg_member, e);
	}
	return tj_value(ps, depth);
}

static inline int tj_event_elem(struct tj_parser *ps, int depth)
{
	if (ps->stop)
		return tj_value(ps, depth);
	if (ps->p >= ps->end || *ps->p != '{')
		return tj_fail(ps, "traceEvents element %lu is not an object", ps->nb_events);
	struct tj_event e;
	memset(&e, 0, sizeof(e));
	if (tj_object(ps, depth, tj_event_member, &e))
		return -1;
	ps->nb_events++;
	if (ps->fn)
		ps->stop = ps->fn(&e, ps->ctx);
	return 0;
}

static inline int tj_top_member(struct tj_parser *ps, const char *key, void *arg, int depth)
{
	(void)arg;
	if (!strcmp(key, "traceEvents")) {
		if (ps->p >= ps->end || *ps->p != '[')
			return tj_fail(ps, "\"traceEvents\" is not an array");
		ps->has_trace_events = 1;
		return tj_array(ps, depth, tj_event_elem);
	}
	if (!strcmp(key, "displayTimeUnit")) {
		if (ps->p >= ps->end || *ps->p != '"')
			return tj_fail(ps, "\"displayTimeUnit\" is not a string");
		return tj_string(ps, ps->display_time_unit, sizeof(ps->display_time_unit));
	}
	return tj_value(ps, depth);
}

/* Parses a whole trace document: 0, the callback's nonzero value, or -1 with ps->err set
 * (which also reports the byte offset). */
static inline int tj_parse(struct tj_parser *ps, const char *text, size_t len, tj_event_fn fn, void *ctx)
{
	memset(ps, 0, sizeof(*ps));
	ps->p = text;
	ps->end = text + len;
	ps->fn = fn;
	ps->ctx = ctx;
	tj_ws(ps);
	int r;
	if (ps->p >= ps->end || *ps->p != '{')
		r = tj_fail(ps, "the document is not an object");
	else
		r = tj_object(ps, 1, tj_top_member, NULL);
	if (!r) {
		tj_ws(ps);
		if (ps->p != ps->end)
			r = tj_fail(ps, "data after the document");
		else if (!ps->has_trace_events)
			r = tj_fail(ps, "no \"traceEvents\" array");
	}
	if (r) {
		char where[64];
		snprintf(where, sizeof(where), " (at byte %ld)", (long)(ps->p - text));
		size_t n = strlen(ps->err);
		snprintf(ps->err + n, sizeof(ps->err) - n, "%s", where);
		return -1;
	}
	return ps->stop;
}

/* Reads a whole file into a NUL-terminated buffer (free it); NULL with errno set. */
static inline char *tj_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		size_t r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
		if (n + 1 < cap)
			break;
		char *nb = realloc(buf, cap * 2);
		if (!nb) {
			free(buf);
			buf = NULL;
			break;
		}
		buf = nb;
		cap *= 2;
	}
	int err = ferror(f);
	fclose(f);
	if (!buf)
		return NULL;
	if (err) {
		free(buf);
		return NULL;
	}
	buf[n] = 0;
	*len = n;
	return buf;
}

/* ---- whole documents (snapshots) ----
 *
 * The same grammar, kept as a tree: marcel-render reads snapshots with it. Objects keep
 * their members in file order (what makes output deterministic) and a key given twice
 * is an error, since which one a reader would take is not defined. */

enum tj_type { TJ_NULL, TJ_FALSE, TJ_TRUE, TJ_NUMBER, TJ_STRING, TJ_ARRAY, TJ_OBJECT };

struct tj_node {
	enum tj_type type;
	double num;                       /* TJ_NUMBER */
	char *str;                        /* TJ_STRING: decoded; TJ_NUMBER: its text */
	unsigned n;                       /* TJ_ARRAY, TJ_OBJECT: number of items */
	struct tj_node *items;            /* elements, or members' values */
	char **keys;                      /* TJ_OBJECT: members' keys */
};

static inline void tj_node_free(struct tj_node *v)
{
	for (unsigned i = 0; i < v->n; i++) {
		tj_node_free(&v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->str);
	memset(v, 0, sizeof(*v));
}

/* The decoded string at ps->p, in a buffer of its own: the raw text bounds its length. */
static inline char *tj_dom_string(struct tj_parser *ps)
{
	const char *q = ps->p + 1;
	while (q < ps->end && *q != '"')
		q += *q == '\\' ? 2 : 1;
	size_t cap = (size_t)(q - ps->p) + 1;
	char *s = malloc(cap);
	if (!s) {
		tj_fail(ps, "out of memory");
		return NULL;
	}
	if (tj_string(ps, s, cap)) {
		free(s);
		return NULL;
	}
	return s;
}

/* Room for one more item in v (its arrays grow by doubling). */
static inline struct tj_node *tj_dom_push(struct tj_parser *ps, struct tj_node *v, unsigned *cap)
{
	if (v->n == *cap) {
		unsigned ncap = *cap ? *cap * 2 : 4;
		struct tj_node *items = realloc(v->items, ncap * sizeof(*items));
		if (items)
			v->items = items;
		if (items && v->type == TJ_OBJECT) {
			char **keys = realloc(v->keys, ncap * sizeof(*keys));
			if (keys)
				v->keys = keys;
			else
				items = NULL;
		}
		if (!items) {
			tj_fail(ps, "out of memory");
			return NULL;
		}
		*cap = ncap;
	}
	struct tj_node *x = &v->items[v->n];
	memset(x, 0, sizeof(*x));
	if (v->keys)
		v->keys[v->n] = NULL;
	v->n++;
	return x;
}

static inline int tj_dom_value(struct tj_parser *ps, struct tj_node *v, int depth);

/* The members or elements of the object or array at ps->p into v (v->type set). */
static inline int tj_dom_items(struct tj_parser *ps, struct tj_node *v, int depth)
{
	char close = v->type == TJ_OBJECT ? '}' : ']';
	unsigned cap = 0;
	if (depth > TJ_MAX_DEPTH)
		return tj_fail(ps, "nested too deep");
	ps->p++;
	tj_ws(ps);
	if (ps->p < ps->end && *ps->p == close) {
		ps->p++;
		return 0;
	}
	for (;;) {
		tj_ws(ps);
		char *key = NULL;
		if (v->type == TJ_OBJECT) {
			if (ps->p >= ps->end || *ps->p != '"')
				return tj_fail(ps, "expected a string");
			if (!(key = tj_dom_string(ps)))
				return -1;
			for (unsigned i = 0; i < v->n; i++)
				if (!strcmp(v->keys[i], key)) {
					tj_fail(ps, "key \"%.64s\" given twice in an object", key);
					free(key);
					return -1;
				}
			tj_ws(ps);
			if (ps->p >= ps->end || *ps->p != ':') {
				free(key);
				return tj_fail(ps, "':' expected");
			}
			ps->p++;
			tj_ws(ps);
		}
		struct tj_node *x = tj_dom_push(ps, v, &cap);
		if (!x) {
			free(key);
			return -1;
		}
		if (key)
			v->keys[v->n - 1] = key;
		if (tj_dom_value(ps, x, depth + 1))
			return -1;
		tj_ws(ps);
		if (ps->p >= ps->end)
			return tj_fail(ps, v->type == TJ_OBJECT ? "unterminated object" : "unterminated array");
		if (*ps->p == close) {
			ps->p++;
			return 0;
		}
		if (*ps->p != ',')
			return tj_fail(ps, v->type == TJ_OBJECT ? "',' or '}' expected" : "',' or ']' expected");
		ps->p++;
	}
}

static inline int tj_dom_value(struct tj_parser *ps, struct tj_node *v, int depth)
{
	if (ps->p >= ps->end)
		return tj_fail(ps, "value expected");
	switch (*ps->p) {
	case '{':
		v->type = TJ_OBJECT;
		return tj_dom_items(ps, v, depth);
	case '[':
		v->type = TJ_ARRAY;
		return tj_dom_items(ps, v, depth);
	case '"':
		v->type = TJ_STRING;
		return (v->str = tj_dom_string(ps)) ? 0 : -1;
	case 't':
		v->type = TJ_TRUE;
		return tj_lit(ps, "true");
	case 'f':
		v->type = TJ_FALSE;
		return tj_lit(ps, "false");
	case 'n':
		v->type = TJ_NULL;
		return tj_lit(ps, "null");
	default: {
		char text[64];
		v->type = TJ_NUMBER;
		if (tj_number(ps, &v->num, text, sizeof(text)))
			return -1;
		if (!(v->str = strdup(text)))
			return tj_fail(ps, "out of memory");
		return 0;
	}
	}
}

/* Parses a whole JSON document into *root (tj_node_free it): 0, or -1 with ps->err set
 * (with the byte offset) and *root empty. */
static inline int tj_parse_doc(struct tj_parser *ps, const char *text, size_t len, struct tj_node *root)
{
	memset(ps, 0, sizeof(*ps));
	memset(root, 0, sizeof(*root));
	ps->p = text;
	ps->end = text + len;
	tj_ws(ps);
	int r = tj_dom_value(ps, root, 1);
	if (!r) {
		tj_ws(ps);
		if (ps->p != ps->end)
			r = tj_fail(ps, "data after the document");
	}
	if (r) {
		size_t n = strlen(ps->err);
		snprintf(ps->err + n, sizeof(ps->err) - n, " (at byte %ld)", (long)(ps->p - text));
		tj_node_free(root);
		return -1;
	}
	return 0;
}

/* The value of member key of object v, NULL if v is not an object or has no such member. */
static inline const struct tj_node *tj_get(const struct tj_node *v, const char *key)
{
	if (!v || v->type != TJ_OBJECT)
		return NULL;
	for (unsigned i = 0; i < v->n; i++)
		if (!strcmp(v->keys[i], key))
			return &v->items[i];
	return NULL;
}

/* A number written as an integer (no fraction, no exponent) within [lo, hi] into *out. */
static inline int tj_int(const struct tj_node *v, long long lo, long long hi, long long *out)
{
	if (!v || v->type != TJ_NUMBER || strpbrk(v->str, ".eE"))
		return -1;
	errno = 0;
	long long x = strtoll(v->str, NULL, 10);
	if (errno || x < lo || x > hi)
		return -1;
	*out = x;
	return 0;
}

/* The same for an unsigned 64-bit integer (ids with marcel's bubble tag, bit 63). */
static inline int tj_u64(const struct tj_node *v, uint64_t *out)
{
	if (!v || v->type != TJ_NUMBER || v->str[0] == '-' || strpbrk(v->str, ".eE"))
		return -1;
	errno = 0;
	unsigned long long x = strtoull(v->str, NULL, 10);
	if (errno)
		return -1;
	*out = x;
	return 0;
}

/* ---- per-track summary ---- */

/* strlcpy: cut to fit, always terminated. */
static inline void tj_copy(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, src, n);
	dst[n] = 0;
}

struct tj_track {
	long long pid, tid;
	char name[64];
	long long sort_index;
	unsigned long slices;             /* B or X */
	double busy_us;                   /* time inside outermost slices */
	double idle_us;                   /* between "idle start" and "idle stop" */
	unsigned depth;                   /* open B slices */
	double open_ts, idle_ts, last_ts, x_end;
	int idle_open, has_ts;
};

struct tj_count {
	char name[64];
	unsigned long n;
};

struct tj_summary {
	struct tj_track *tracks;
	unsigned nb_tracks;
	struct tj_count *counts;          /* instant events by name */
	unsigned nb_counts;
	unsigned long nb_events, nb_errors;
	double first_ts, last_ts;
	int has_ts;
	char first_error[256];
};

static inline void tj_sum_error(struct tj_summary *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void tj_sum_error(struct tj_summary *s, const char *fmt, ...)
{
	if (!s->nb_errors++) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(s->first_error, sizeof(s->first_error), fmt, ap);
		va_end(ap);
	}
}

static inline struct tj_track *tj_sum_track(struct tj_summary *s, long long pid, long long tid)
{
	for (unsigned i = 0; i < s->nb_tracks; i++)
		if (s->tracks[i].pid == pid && s->tracks[i].tid == tid)
			return &s->tracks[i];
	struct tj_track *t = realloc(s->tracks, (s->nb_tracks + 1) * sizeof(*t));
	if (!t)
		return NULL;
	s->tracks = t;
	t = &s->tracks[s->nb_tracks++];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	t->sort_index = tid;
	snprintf(t->name, sizeof(t->name), "tid %lld", tid);
	return t;
}

static inline void tj_sum_count(struct tj_summary *s, const char *name)
{
	for (unsigned i = 0; i < s->nb_counts; i++)
		if (!strcmp(s->counts[i].name, name)) {
			s->counts[i].n++;
			return;
		}
	struct tj_count *c = realloc(s->counts, (s->nb_counts + 1) * sizeof(*c));
	if (!c)
		return;
	s->counts = c;
	c = &s->counts[s->nb_counts++];
	tj_copy(c->name, sizeof(c->name), name);
	c->n = 1;
}

/* Event callback accumulating into a struct tj_summary (ctx). It also checks the rules
 * Perfetto's JSON importer relies on: B/E nest per track, X slices do not overlap, time
 * does not go back on a track, instants are thread-scoped. */
static inline int tj_sum_event(const struct tj_event *e, void *ctx)
{
	struct tj_summary *s = ctx;
	s->nb_events++;
	if (!e->has_ph) {
		tj_sum_error(s, "event %lu has no \"ph\"", s->nb_events);
		return 0;
	}
	if (!e->has_pid) {
		tj_sum_error(s, "event %lu has no \"pid\"", s->nb_events);
		return 0;
	}
	if (!strcmp(e->ph, "M")) {
		if (!strcmp(e->name, "process_name"))
			return 0;
		if (!e->has_tid) {
			tj_sum_error(s, "metadata event %lu (%s) has no \"tid\"", s->nb_events, e->name);
			return 0;
		}
		struct tj_track *t = tj_sum_track(s, e->pid, e->tid);
		if (!t)
			return 0;
		for (unsigned i = 0; i < e->nb_args; i++) {
			if (!strcmp(e->name, "thread_name") && !strcmp(e->args[i].key, "name"))
				tj_copy(t->name, sizeof(t->name), e->args[i].val);
			if (!strcmp(e->name, "thread_sort_index") && !strcmp(e->args[i].key, "sort_index"))
				t->sort_index = atoll(e->args[i].val);
		}
		return 0;
	}
	if (!e->has_tid || !e->has_ts) {
		tj_sum_error(s, "event %lu (%s) lacks \"tid\" or \"ts\"", s->nb_events, e->ph);
		return 0;
	}
	struct tj_track *t = tj_sum_track(s, e->pid, e->tid);
	if (!t)
		return 0;
	if (t->has_ts && e->ts < t->last_ts)
		tj_sum_error(s, "time goes back on track %s: %.3f after %.3f", t->name, e->ts, t->last_ts);
	t->has_ts = 1;
	t->last_ts = e->ts;
	if (!s->has_ts || e->ts < s->first_ts)
		s->first_ts = e->ts;
	if (!s->has_ts || e->ts > s->last_ts)
		s->last_ts = e->ts;
	s->has_ts = 1;
	if (!strcmp(e->ph, "B")) {
		if (!t->depth++) {
			t->open_ts = e->ts;
			t->slices++;
		}
	} else if (!strcmp(e->ph, "E")) {
		if (!t->depth)
			tj_sum_error(s, "\"E\" without \"B\" on track %s at %.3f", t->name, e->ts);
		else if (!--t->depth)
			t->busy_us += e->ts - t->open_ts;
	} else if (!strcmp(e->ph, "X")) {
		if (!e->has_dur || e->dur < 0)
			tj_sum_error(s, "\"X\" without a valid \"dur\" on track %s", t->name);
		else if (e->ts < t->x_end && e->ts + e->dur > t->x_end)
			tj_sum_error(s, "\"X\" slices overlap on track %s at %.3f", t->name, e->ts);
		else if (e->ts >= t->x_end) {
			t->slices++;
			if (!t->depth)
				t->busy_us += e->dur;
			t->x_end = e->ts + e->dur;
		}
		if (e->has_dur && e->ts + e->dur > s->last_ts)
			s->last_ts = e->ts + e->dur;
	} else if (!strcmp(e->ph, "i") || !strcmp(e->ph, "I")) {
		if (strcmp(e->s, "t"))
			tj_sum_error(s, "instant event %s is not thread-scoped (\"s\":\"%s\")", e->name, e->s);
		tj_sum_count(s, e->name);
		if (!strcmp(e->name, "idle start")) {
			/* One already open lost its stop to a pause: it ended at the pause. */
			if (!t->idle_open)
				t->idle_ts = e->ts;
			t->idle_open = 1;
		} else if (!strcmp(e->name, "idle stop") && t->idle_open) {
			t->idle_open = 0;
			t->idle_us += e->ts - t->idle_ts;
		} else if (!strcmp(e->name, "trace off")) {
			/* Nothing is known of the pause: count no idle time across it. */
			for (unsigned i = 0; i < s->nb_tracks; i++)
				if (s->tracks[i].idle_open) {
					s->tracks[i].idle_open = 0;
					s->tracks[i].idle_us += e->ts - s->tracks[i].idle_ts;
				}
		}
	} else {
		tj_sum_error(s, "unexpected phase \"%s\"", e->ph);
	}
	return 0;
}

/* After the last event: slices left open are errors; idle periods left open end with
 * the trace. Sorts the tracks as the trace asks. */
static inline void tj_sum_finish(struct tj_summary *s)
{
	for (unsigned i = 0; i < s->nb_tracks; i++) {
		struct tj_track *t = &s->tracks[i];
		if (t->depth)
			tj_sum_error(s, "%u slice(s) left open on track %s", t->depth, t->name);
		if (t->idle_open)
			t->idle_us += s->last_ts - t->idle_ts;
	}
	for (unsigned i = 1; i < s->nb_tracks; i++)
		for (unsigned j = i; j > 0 && s->tracks[j - 1].sort_index > s->tracks[j].sort_index; j--) {
			struct tj_track tmp = s->tracks[j];
			s->tracks[j] = s->tracks[j - 1];
			s->tracks[j - 1] = tmp;
		}
}

static inline const struct tj_track *tj_sum_find(const struct tj_summary *s, const char *name)
{
	for (unsigned i = 0; i < s->nb_tracks; i++)
		if (!strcmp(s->tracks[i].name, name))
			return &s->tracks[i];
	return NULL;
}

static inline unsigned long tj_sum_count_of(const struct tj_summary *s, const char *name)
{
	for (unsigned i = 0; i < s->nb_counts; i++)
		if (!strcmp(s->counts[i].name, name))
			return s->counts[i].n;
	return 0;
}

static inline void tj_sum_free(struct tj_summary *s)
{
	free(s->tracks);
	free(s->counts);
	memset(s, 0, sizeof(*s));
}

#endif
