/*
 * A small XML reader for the tests of marcel-render's pictures (its SVG, its XHTML pages):
 * it checks that a document is well-formed -- elements nested and closed, attributes
 * quoted and given once, entities known -- and keeps the element tree, with each
 * element's attributes and text (entities decoded, CDATA included), to look things up by
 * tag and class. Enough for what marcel-render writes, not a general parser: no DTD, no
 * namespaces. Failures fail the test (Check), saying why.
 */
#ifndef MA_XML_TEST_H
#define MA_XML_TEST_H

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

struct ma_xe {
	char *name;
	char **attr;                      /* name, value, ..., NULL */
	unsigned nattr;
	struct ma_xe *parent;
	struct ma_xe **kids;
	unsigned nkids;
	char *text;                       /* text directly inside, entities decoded */
	size_t ntext;
};

struct ma_xr {
	const char *p, *end;
	char err[160];
};

static inline int ma_xr_fail(struct ma_xr *r, const char *what)
{
	if (!r->err[0])
		snprintf(r->err, sizeof(r->err), "%s at byte ...%.30s", what, r->p);
	return -1;
}

static inline void ma_xe_add_text(struct ma_xe *e, const char *s, size_t n)
{
	e->text = realloc(e->text, e->ntext + n + 1);
	ck_assert_ptr_nonnull(e->text);
	memcpy(e->text + e->ntext, s, n);
	e->ntext += n;
	e->text[e->ntext] = 0;
}

static inline int ma_xr_starts(const struct ma_xr *r, const char *s)
{
	size_t n = strlen(s);
	return (size_t)(r->end - r->p) >= n && !memcmp(r->p, s, n);
}

/* Skips past the next occurrence of s. */
static inline int ma_xr_skip_past(struct ma_xr *r, const char *s)
{
	const char *q = memmem(r->p, (size_t)(r->end - r->p), s, strlen(s));
	if (!q)
		return ma_xr_fail(r, "unterminated markup");
	r->p = q + strlen(s);
	return 0;
}

/* An entity at r->p ('&'), decoded into out (UTF-8); returns its length. */
static inline int ma_xr_entity(struct ma_xr *r, char *out)
{
	static const char *const names[][2] = { { "&amp;", "&" }, { "&lt;", "<" }, { "&gt;", ">" },
						{ "&quot;", "\"" }, { "&apos;", "'" } };
	for (unsigned i = 0; i < 5; i++)
		if (ma_xr_starts(r, names[i][0])) {
			r->p += strlen(names[i][0]);
			strcpy(out, names[i][1]);
			return 1;
		}
	if (ma_xr_starts(r, "&#")) {
		char *end;
		unsigned long cp = r->p[2] == 'x' ? strtoul(r->p + 3, &end, 16) : strtoul(r->p + 2, &end, 10);
		if (*end != ';' || !cp || cp > 0x10ffff)
			return ma_xr_fail(r, "bad character reference");
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
	return ma_xr_fail(r, "unknown entity");
}

static inline int ma_xr_name(struct ma_xr *r, char **out)
{
	const char *s = r->p;
	while (r->p < r->end && (isalnum((unsigned char)*r->p) || strchr(":_-.", *r->p)))
		r->p++;
	if (r->p == s)
		return ma_xr_fail(r, "name expected");
	*out = strndup(s, (size_t)(r->p - s));
	return 0;
}

static inline void ma_xr_ws(struct ma_xr *r)
{
	while (r->p < r->end && isspace((unsigned char)*r->p))
		r->p++;
}

static inline int ma_xr_attrs(struct ma_xr *r, struct ma_xe *e)
{
	for (;;) {
		ma_xr_ws(r);
		if (r->p >= r->end)
			return ma_xr_fail(r, "unterminated tag");
		if (*r->p == '>' || *r->p == '/')
			return 0;
		char *name;
		if (ma_xr_name(r, &name))
			return -1;
		for (unsigned i = 0; i < e->nattr; i++)
			if (!strcmp(e->attr[2 * i], name))
				return ma_xr_fail(r, "attribute given twice");
		ma_xr_ws(r);
		if (r->p >= r->end || *r->p != '=')
			return ma_xr_fail(r, "'=' expected");
		r->p++;
		ma_xr_ws(r);
		if (r->p >= r->end || (*r->p != '"' && *r->p != '\''))
			return ma_xr_fail(r, "quoted value expected");
		char q = *r->p++;
		struct ma_xe val = { 0 };
		ma_xe_add_text(&val, "", 0);
		while (r->p < r->end && *r->p != q) {
			if (*r->p == '<')
				return ma_xr_fail(r, "'<' in an attribute value");
			char buf[8];
			int n = *r->p == '&' ? ma_xr_entity(r, buf) : (buf[0] = *r->p++, 1);
			if (n < 0)
				return -1;
			ma_xe_add_text(&val, buf, (size_t)n);
		}
		if (r->p >= r->end)
			return ma_xr_fail(r, "unterminated value");
		r->p++;
		e->attr = realloc(e->attr, (2 * e->nattr + 3) * sizeof(char *));
		e->attr[2 * e->nattr] = name;
		e->attr[2 * e->nattr + 1] = val.text;
		e->attr[2 * ++e->nattr] = NULL;
	}
}

/* Comments, processing instructions (and, before the root, a doctype). */
static inline int ma_xr_misc(struct ma_xr *r, int prolog)
{
	for (;;) {
		ma_xr_ws(r);
		if (ma_xr_starts(r, "<!--")) {
			if (ma_xr_skip_past(r, "-->"))
				return -1;
		} else if (ma_xr_starts(r, "<?")) {
			if (ma_xr_skip_past(r, "?>"))
				return -1;
		} else if (prolog && ma_xr_starts(r, "<!DOCTYPE")) {
			if (ma_xr_skip_past(r, ">"))
				return -1;
		} else {
			return 0;
		}
	}
}

static inline struct ma_xe *ma_xr_element(struct ma_xr *r, struct ma_xe *parent, int depth);

static inline int ma_xr_content(struct ma_xr *r, struct ma_xe *e, int depth)
{
	for (;;) {
		if (r->p >= r->end)
			return ma_xr_fail(r, "unterminated element");
		if (ma_xr_starts(r, "</")) {
			r->p += 2;
			char *name;
			if (ma_xr_name(r, &name))
				return -1;
			int same = !strcmp(name, e->name);
			free(name);
			ma_xr_ws(r);
			if (!same || r->p >= r->end || *r->p != '>')
				return ma_xr_fail(r, "mismatched end tag");
			r->p++;
			return 0;
		}
		if (ma_xr_starts(r, "<![CDATA[")) {
			r->p += 9;
			const char *s = r->p;
			if (ma_xr_skip_past(r, "]]>"))
				return -1;
			ma_xe_add_text(e, s, (size_t)(r->p - 3 - s));
		} else if (ma_xr_starts(r, "<!--")) {
			if (ma_xr_skip_past(r, "-->"))
				return -1;
		} else if (ma_xr_starts(r, "<?")) {
			if (ma_xr_skip_past(r, "?>"))
				return -1;
		} else if (*r->p == '<') {
			if (!ma_xr_element(r, e, depth + 1))
				return -1;
		} else if (*r->p == '&') {
			char buf[8];
			int n = ma_xr_entity(r, buf);
			if (n < 0)
				return -1;
			ma_xe_add_text(e, buf, (size_t)n);
		} else {
			const char *s = r->p;
			while (r->p < r->end && *r->p != '<' && *r->p != '&')
				r->p++;
			ma_xe_add_text(e, s, (size_t)(r->p - s));
		}
	}
}

static inline struct ma_xe *ma_xr_element(struct ma_xr *r, struct ma_xe *parent, int depth)
{
	if (depth > 200) {
		ma_xr_fail(r, "nested too deep");
		return NULL;
	}
	r->p++; /* '<' */
	struct ma_xe *e = calloc(1, sizeof(*e));
	ck_assert_ptr_nonnull(e);
	e->parent = parent;
	if (ma_xr_name(r, &e->name) || ma_xr_attrs(r, e))
		return NULL;
	if (parent) {
		parent->kids = realloc(parent->kids, (parent->nkids + 1) * sizeof(*parent->kids));
		parent->kids[parent->nkids++] = e;
	}
	if (*r->p == '/') {
		if (r->p + 1 >= r->end || r->p[1] != '>') {
			ma_xr_fail(r, "'/>' expected");
			return NULL;
		}
		r->p += 2;
		return e;
	}
	r->p++;
	return ma_xr_content(r, e, depth) ? NULL : e;
}

/* The document's root element; fails the test (with why) if text is not well-formed. */
static inline struct ma_xe *ma_xml_parse(const char *what, const char *text, size_t len)
{
	struct ma_xr r = { text, text + len, "" };
	struct ma_xe *root = NULL;
	if (!ma_xr_misc(&r, 1)) {
		if (r.p < r.end && *r.p == '<')
			root = ma_xr_element(&r, NULL, 0);
		else
			ma_xr_fail(&r, "no root element");
	}
	if (root && !ma_xr_misc(&r, 0) && r.p != r.end)
		root = NULL, ma_xr_fail(&r, "data after the root element");
	ck_assert_msg(root != NULL, "%s is not well-formed XML: %s", what, r.err);
	return root;
}

static inline const char *ma_xml_attr(const struct ma_xe *e, const char *name)
{
	for (unsigned i = 0; i < e->nattr; i++)
		if (!strcmp(e->attr[2 * i], name))
			return e->attr[2 * i + 1];
	return NULL;
}

/* Whether e's class attribute holds the word cls. */
static inline int ma_xml_class(const struct ma_xe *e, const char *cls)
{
	const char *c = ma_xml_attr(e, "class");
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

struct ma_xlist {
	struct ma_xe **e;
	unsigned n;
};

/* Every element below e (e included) of tag name (NULL: any) and class cls (NULL: any). */
static inline void ma_xml_all(struct ma_xe *e, const char *name, const char *cls, struct ma_xlist *out)
{
	if ((!name || !strcmp(e->name, name)) && (!cls || ma_xml_class(e, cls))) {
		out->e = realloc(out->e, (out->n + 1) * sizeof(*out->e));
		out->e[out->n++] = e;
	}
	for (unsigned i = 0; i < e->nkids; i++)
		ma_xml_all(e->kids[i], name, cls, out);
}

/* The nearest strict ancestor of class cls, or NULL. */
static inline const struct ma_xe *ma_xml_up(const struct ma_xe *e, const char *cls)
{
	for (e = e->parent; e; e = e->parent)
		if (ma_xml_class(e, cls))
			return e;
	return NULL;
}

/* The first child element of tag name (and class cls if not NULL). */
static inline const struct ma_xe *ma_xml_kid(const struct ma_xe *e, const char *name, const char *cls)
{
	for (unsigned i = 0; i < e->nkids; i++)
		if (!strcmp(e->kids[i]->name, name) && (!cls || ma_xml_class(e->kids[i], cls)))
			return e->kids[i];
	return NULL;
}

static inline const char *ma_xml_text(const struct ma_xe *e)
{
	return e && e->text ? e->text : "";
}

static inline void ma_xml_free(struct ma_xe *e)
{
	for (unsigned i = 0; i < e->nkids; i++)
		ma_xml_free(e->kids[i]);
	for (unsigned i = 0; i < 2 * e->nattr; i++)
		free(e->attr[i]);
	free(e->attr);
	free(e->kids);
	free(e->text);
	free(e->name);
	free(e);
}

#endif
