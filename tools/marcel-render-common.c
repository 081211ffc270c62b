/*
 * What marcel-render's two pictures share: text escaped for XML and for JSON inside a
 * script element, or cut to a number of characters; the colours, and the rule that gives
 * each thread its bubble's, which the snapshot's reader and the trace's both apply so
 * that a run's SVG and its movie colour alike.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "marcel-render.h"

/* ---- text ---- */

/* Length of the valid UTF-8 character at p in a NUL-terminated string, 0 if there is
 * none: the parser checks what it reads, but cuts strings to fit its buffers, possibly
 * inside a character. */
static unsigned mr_utf8(const unsigned char *p)
{
	return tj_utf8_len(p, SIZE_MAX, NULL);
}

#define MR_REPLACEMENT "\xef\xbf\xbd" /* U+FFFD */

/* Text for XML (SVG, XHTML): markup characters as entities; control characters XML does
 * not allow and invalid UTF-8 become U+FFFD. */
void mr_xml(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		unsigned n = mr_utf8(p);
		if (!n || (*p < 0x20 && *p != '\t' && *p != '\n')) {
			fputs(MR_REPLACEMENT, f);
			p++;
			continue;
		}
		switch (*p) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fwrite(p, 1, n, f);
		}
		p += n;
	}
}

/* A JSON string safe inside an HTML or XML script element: no '<', '>' or '&' (so
 * neither "</script" nor "]]>" can appear), no control characters, valid UTF-8. */
void mr_jstr(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		unsigned n = mr_utf8(p);
		if (!n)
			fputs(MR_REPLACEMENT, f), n = 1;
		else if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&')
			fprintf(f, "\\u%04x", *p);
		else
			fwrite(p, 1, n, f);
		p += n;
	}
	fputc('"', f);
}

/* Bytes of the first chars characters of s (cutting between characters). */
int mr_prefix(const char *s, int chars)
{
	const unsigned char *p = (const unsigned char *)s;
	int i = 0;
	while (p[i] && chars > 0) {
		unsigned n = mr_utf8(p + i);
		i += n ? (int)n : 1;
		chars--;
	}
	return i;
}

/* Display width of s in characters (UTF-8 continuation bytes do not count). */
int mr_chars(const char *s)
{
	int n = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		n += (*p & 0xc0) != 0x80;
	return n;
}

/* ---- colours ---- */

/* Twelve hues told apart easily (Tableau's), in a fixed order: group k gets entry k % 12
 * in the snapshot and in the movie alike. */
const char *const mr_palette[MR_NB_COLOURS] = {
	"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
	"#b07aa1", "#ff9da7", "#9c755f", "#86bcb6", "#d37295", "#8cd17d",
};

const char *mr_colour(int group)
{
	return group < 0 ? MR_NO_GROUP : mr_palette[(unsigned)group % MR_NB_COLOURS];
}

/* ---- colour groups ---- */

static int mr_key_cmp(const void *a, const void *b, void *arg)
{
	const uint64_t *key = arg;
	uint64_t x = key[*(const int *)a], y = key[*(const int *)b];
	return x < y ? -1 : x > y;
}

void mr_members_init(struct mr_members *mb, unsigned n, unsigned nb_threads, unsigned max_chain)
{
	memset(mb, 0, sizeof(*mb));
	mb->n = n;
	mb->nb_threads = nb_threads;
	mb->max_chain = max_chain;
	mb->up = mr_alloc(n * sizeof(int));
	mb->explicit_ = mr_alloc(n);
	mb->key = mr_alloc(n * sizeof(uint64_t));
	mb->threads = mr_alloc(nb_threads * sizeof(int));
}

void mr_colour_groups(struct mr_members *mb, int **groups, unsigned *nb_groups, unsigned *cap_groups)
{
	mb->below = mr_alloc(mb->n * sizeof(long));
	mb->group = mr_alloc(mb->n * sizeof(int));
	mb->in_bubbles = 0;
	for (unsigned k = 0; k < mb->nb_threads; k++) {
		int any = 0;
		unsigned steps = 0;
		for (int b = mb->up[mb->threads[k]]; b >= 0 && steps <= mb->max_chain; b = mb->up[b], steps++)
			if (mb->explicit_[b]) {
				mb->below[b]++;
				any = 1;
			}
		mb->in_bubbles += any;
	}
	int *bubble_group = mr_alloc(mb->n * sizeof(int)); /* first a flag: the bubble is a group */
	for (unsigned k = 0; k < mb->nb_threads; k++) {
		int t = mb->threads[k], pick = -1, innermost = -1;
		unsigned steps = 0;
		for (int b = mb->up[t]; b >= 0 && steps <= mb->max_chain; b = mb->up[b], steps++)
			if (mb->explicit_[b]) {
				if (innermost < 0)
					innermost = b;
				if (mb->below[b] < mb->in_bubbles)
					pick = b;
			}
		if (pick < 0)
			pick = innermost;
		if (pick >= 0 && !bubble_group[pick]) {
			bubble_group[pick] = 1;
			mr_add_int(groups, nb_groups, cap_groups, pick);
		}
		mb->group[t] = pick; /* a bubble for now */
	}
	if (*nb_groups)
		qsort_r(*groups, *nb_groups, sizeof(int), mr_key_cmp, mb->key);
	for (unsigned g = 0; g < *nb_groups; g++)
		bubble_group[(*groups)[g]] = (int)g;
	for (unsigned k = 0; k < mb->nb_threads; k++)
		if (mb->group[mb->threads[k]] >= 0)
			mb->group[mb->threads[k]] = bubble_group[mb->group[mb->threads[k]]];
	free(bubble_group);
}

void mr_members_free(struct mr_members *mb)
{
	free(mb->up);
	free(mb->explicit_);
	free(mb->key);
	free(mb->threads);
	free(mb->below);
	free(mb->group);
}
