/*
 * marcel-render's SVG of a snapshot: the run-queue tree as nested boxes, each a grid of
 * its children, with the threads as chips and the bubbles as outlines in the box of the
 * queue they are on, and a legend; from the model marcel-render-snapshot.c reads.
 *
 * Measured, then drawn, by the same functions: each function below lays out one thing at
 * (x, y) and returns its size; with f NULL it only measures. A box is measured before it
 * is drawn (its outline comes first), so a subtree at depth d is laid out about 2d times:
 * cheap, and one code path for both.
 *
 * Beyond MR_COMPACT_VPS VPs the boxes are compact: a queue shows its own bubbles as
 * labelled outlines and its threads as chips, without the nesting of outlines.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "marcel-render.h"

#define MR_FONT_W 6                     /* width of a 10px monospace character, rounded */
#define MR_TITLE_W 7                    /* the same, 11px bold (queue names) */
#define MR_PAD 4
#define MR_GAP 4
#define MR_CHIP_H 16
#define MR_LABEL_H 12
#define MR_TITLE_H 16
#define MR_ITEM_MINW 150
#define MR_MAX_LABEL 28                 /* characters of a bubble's name in its outline */
#define MR_MAX_PATH 8                   /* bubbles named in an outline's tooltip */

struct mr_size {
	int w, h;
};

static int mr_max(int a, int b)
{
	return a > b ? a : b;
}

static void mr_uid_text(char *buf, size_t n, uint64_t uid)
{
	snprintf(buf, n, "%llu", (unsigned long long)(uid & ~MR_TAG));
}

/* Black or white text, whichever reads better on colour c ("#rrggbb"). */
static const char *mr_ink(const char *c)
{
	unsigned r, g, b;
	if (sscanf(c, "#%2x%2x%2x", &r, &g, &b) != 3)
		return "#000";
	return 299 * r + 587 * g + 114 * b > 140000 ? "#000" : "#fff";
}

static const char *const mr_thread_states[] = { "born", "ready", "running", "blocked", "other" };

static struct mr_size mr_chip(const struct mr_snap *s, int t, FILE *f, int x, int y)
{
	const struct mr_ent *e = &s->e[t];
	char label[24];
	mr_uid_text(label, sizeof(label), e->uid);
	struct mr_size z = { 8 + MR_FONT_W * (int)strlen(label), MR_CHIP_H };
	if (!f)
		return z;
	const char *fill = mr_colour(e->group);
	int running = e->running_vp >= 0;
	/* Blocked and not yet started threads are faded: they are where they will run. */
	int waiting = e->state == 0 || e->state == 3;
	fprintf(f, "<g class=\"thread%s\" data-entity=\"%d\" data-uid=\"%s\" transform=\"translate(%d,%d)\"><title>",
		running ? " running" : waiting ? " waiting" : "", t, label, x, y);
	fprintf(f, "thread %s \"", label);
	mr_xml(f, e->name);
	fprintf(f, "\", %s", e->state >= 0 && e->state <= 4 ? mr_thread_states[e->state] : "?");
	if (running)
		fprintf(f, " on VP%d", e->running_vp);
	if (e->held_by >= 0) {
		fputs(", served by its closed bubble ", f);
		mr_xml(f, s->e[e->held_by].name);
	}
	if (e->group >= 0) {
		fputs(", colour of ", f);
		mr_xml(f, s->e[s->groups[e->group]].name);
	}
	fprintf(f, "</title><rect width=\"%d\" height=\"%d\" rx=\"3\" fill=\"%s\"%s/>"
		   "<text x=\"4\" y=\"12\" fill=\"%s\">%s</text></g>\n",
		z.w, z.h, fill, running ? " class=\"run\"" : "", mr_ink(fill), label);
	return z;
}

static void mr_bubble_label(const struct mr_snap *s, int b, char *buf, size_t n)
{
	const struct mr_ent *e = &s->e[b];
	static const char *const st[] = { "closed", "burst", "closing" };
	const char *state = e->state >= 0 && e->state <= 2 ? st[e->state] : "?";
	if (mr_chars(e->name) > MR_MAX_LABEL)
		snprintf(buf, n, "%.*s… %s", mr_prefix(e->name, MR_MAX_LABEL - 1), e->name, state);
	else
		snprintf(buf, n, "%s %s", e->name, state);
}

/* "root > bubble 1 > bubble 6": where bubble b sits (its last MR_MAX_PATH levels). */
static void mr_path(FILE *f, const struct mr_snap *s, int b)
{
	int chain[MR_MAX_PATH], n = 0, more = 0;
	for (int x = b; x >= 0; x = s->e[x].parent) {
		if (n == MR_MAX_PATH) {
			more = 1;
			break;
		}
		chain[n++] = x;
	}
	if (more)
		fputs("… &gt; ", f);
	while (n--) {
		mr_xml(f, s->e[chain[n]].name);
		if (n)
			fputs(" &gt; ", f);
	}
}

/* Opens a bubble's outline (w x h at x, y), with its label and its place in the tree as
 * tooltip: solid in its colour when explicit (thick when closed, dashed when closing),
 * dotted grey for an implicit children bubble. The caller closes the <g>. */
static void mr_outline(FILE *f, const struct mr_snap *s, int b, int x, int y, int w, int h, const char *label)
{
	const struct mr_ent *e = &s->e[b];
	const char *stroke = e->implicit ? "#888" : e->group >= 0 ? mr_colour(e->group) : "#555";
	char uid[24];
	mr_uid_text(uid, sizeof(uid), e->uid);
	fprintf(f, "<g class=\"bubble%s\" data-entity=\"%d\" data-uid=\"%s\" transform=\"translate(%d,%d)\">"
		   "<rect class=\"outline%s\" width=\"%d\" height=\"%d\" rx=\"6\" stroke=\"%s\"/>"
		   "<text class=\"blabel\" x=\"%d\" y=\"10\">",
		e->implicit ? " implicit" : "", b, uid, x, y,
		e->implicit ? " dotted" : e->state == 0 ? " closed" : e->state == 2 ? " closing" : "", w, h, stroke,
		MR_PAD);
	mr_xml(f, label);
	fputs("</text><title>", f);
	mr_path(f, s, b);
	fputs("</title>\n", f);
}

static struct mr_size mr_group(struct mr_snap *s, int b, int maxw, FILE *f, int x, int y);

/* The drawn members of bubble b, flowed left to right in rows no wider than maxw. */
static struct mr_size mr_members(struct mr_snap *s, int b, int maxw, FILE *f, int x, int y)
{
	int cx = 0, cy = 0, rowh = 0, w = 0;
	const struct mr_ent *e = &s->e[b];
	for (unsigned k = 0; k < e->nb_kids; k++) {
		int m = e->kids[k];
		if (s->e[m].shown != s->stamp)
			continue;
		struct mr_size z = s->e[m].bubble ? mr_group(s, m, maxw, NULL, 0, 0) : mr_chip(s, m, NULL, 0, 0);
		if (cx > 0 && cx + z.w > maxw) {
			cy += rowh + MR_GAP;
			cx = rowh = 0;
		}
		if (f) {
			if (s->e[m].bubble)
				mr_group(s, m, maxw, f, x + cx, y + cy);
			else
				mr_chip(s, m, f, x + cx, y + cy);
		}
		cx += z.w + MR_GAP;
		rowh = mr_max(rowh, z.h);
		w = mr_max(w, cx - MR_GAP);
	}
	return (struct mr_size){ w, cy + rowh };
}

/* A bubble's outline around its drawn members. */
static struct mr_size mr_group(struct mr_snap *s, int b, int maxw, FILE *f, int x, int y)
{
	char label[128];
	mr_bubble_label(s, b, label, sizeof(label));
	struct mr_size in = mr_members(s, b, maxw - 2 * MR_PAD, NULL, 0, 0);
	struct mr_size z = { mr_max(in.w, MR_FONT_W * mr_chars(label)) + 2 * MR_PAD,
			     MR_LABEL_H + in.h + MR_PAD + (in.h ? MR_PAD : 0) };
	if (f) {
		mr_outline(f, s, b, x, y, z.w, z.h, label);
		mr_members(s, b, maxw - 2 * MR_PAD, f, MR_PAD, MR_LABEL_H + MR_PAD);
		fputs("</g>\n", f);
	}
	return z;
}

/* A bubble as a labelled outline alone (compact boxes). */
static struct mr_size mr_pill(const struct mr_snap *s, int b, FILE *f, int x, int y)
{
	char label[128];
	mr_bubble_label(s, b, label, sizeof(label));
	struct mr_size z = { MR_FONT_W * mr_chars(label) + 2 * MR_PAD, MR_LABEL_H + MR_PAD };
	if (f) {
		mr_outline(f, s, b, x, y, z.w, z.h, label);
		fputs("</g>\n", f);
	}
	return z;
}

/* What a queue draws, and what it leaves out. */
struct mr_drawn {
	unsigned threads, bubbles;        /* drawn: the first ones of the queue's lists */
	unsigned more_threads, more_bubbles;
};

/* Marks what queue q draws with a fresh stamp: its first threads and bubbles (up to the
 * caps) and their ancestors below the root. The outlines of the bubbles that hold
 * everything drawn there but the innermost would repeat the same nesting in every box
 * (a VP's box would show the whole chain down from the machine's bubble): the drawing
 * starts at that innermost one (s->top, -1 for the root), and each outline's tooltip
 * gives its chain. */
static struct mr_drawn mr_mark(struct mr_snap *s, const struct mr_queue *q, unsigned cap)
{
	unsigned bcap = s->cap_item;
	struct mr_drawn d = { q->nb_threads < cap ? q->nb_threads : cap, q->nb_bubbles < bcap ? q->nb_bubbles : bcap, 0, 0 };
	d.more_threads = q->nb_threads - d.threads;
	d.more_bubbles = q->nb_bubbles - d.bubbles;
	unsigned items = d.threads + d.bubbles;
	s->stamp++;
	for (unsigned i = 0; i < items; i++) {
		int x = i < d.threads ? q->threads[i] : q->bubbles[i - d.threads];
		s->e[x].shown = s->stamp;
		for (int b = s->e[x].bubble ? x : s->e[x].parent; b >= 0 && b != s->root_e; b = s->e[b].parent) {
			struct mr_ent *e = &s->e[b];
			e->shown = s->stamp;
			if (e->counted != s->stamp) {
				e->counted = s->stamp;
				e->count = 0;
			}
			e->count++;
		}
	}
	s->top = -1;
	if (items) {
		int x = d.threads ? q->threads[0] : q->bubbles[0];
		for (int b = s->e[x].bubble ? x : s->e[x].parent; b >= 0 && b != s->root_e && s->top < 0; b = s->e[b].parent)
			if (s->e[b].count == items)
				s->top = b;
	}
	return d;
}

/* Flows the compact form: q's first bubbles as outlines, then its first threads. */
static struct mr_size mr_flat(struct mr_snap *s, const struct mr_queue *q, struct mr_drawn d, int maxw, FILE *f, int x,
			      int y)
{
	int cx = 0, cy = 0, rowh = 0, w = 0;
	for (unsigned i = 0; i < d.bubbles + d.threads; i++) {
		int b = i < d.bubbles;
		int e = b ? q->bubbles[i] : q->threads[i - d.bubbles];
		struct mr_size z = b ? mr_pill(s, e, NULL, 0, 0) : mr_chip(s, e, NULL, 0, 0);
		if (cx > 0 && cx + z.w > maxw) {
			cy += rowh + MR_GAP;
			cx = rowh = 0;
		}
		if (f && b)
			mr_pill(s, e, f, x + cx, y + cy);
		else if (f)
			mr_chip(s, e, f, x + cx, y + cy);
		cx += z.w + MR_GAP;
		rowh = mr_max(rowh, z.h);
		w = mr_max(w, cx - MR_GAP);
	}
	return (struct mr_size){ w, cy + rowh };
}

/* What a queue holds: outlines and chips, then "+N more" for what was not drawn. */
static struct mr_size mr_content(struct mr_snap *s, const struct mr_queue *q, unsigned cap, int maxw, FILE *f,
				 int x, int y)
{
	struct mr_drawn d = mr_mark(s, q, cap);
	struct mr_size z;
	if (s->compact)
		z = mr_flat(s, q, d, maxw, f, x, y);
	else if (s->top >= 0)
		z = mr_group(s, s->top, maxw, f, x, y);
	else
		z = mr_members(s, s->root_e, maxw, f, x, y);
	if (d.more_threads || d.more_bubbles) {
		char t[96];
		if (d.more_threads && d.more_bubbles)
			snprintf(t, sizeof(t), "+%u threads, +%u bubbles", d.more_threads, d.more_bubbles);
		else if (d.more_threads)
			snprintf(t, sizeof(t), "+%u thread%s", d.more_threads, d.more_threads > 1 ? "s" : "");
		else
			snprintf(t, sizeof(t), "+%u bubble%s", d.more_bubbles, d.more_bubbles > 1 ? "s" : "");
		if (f)
			fprintf(f, "<text class=\"more\" data-threads=\"%u\" data-bubbles=\"%u\" x=\"%d\" y=\"%d\">%s</text>\n",
				d.more_threads, d.more_bubbles, x, y + z.h + (z.h ? MR_GAP : 0) + 10, t);
		z.w = mr_max(z.w, MR_FONT_W * (int)strlen(t));
		z.h += MR_LABEL_H + (z.h ? MR_GAP : 0);
	}
	return z;
}

/* Columns for n cells of cw x ch: about as wide as 1.6 times high, preferring a divisor
 * of n (no ragged last row) when one is near. */
static int mr_columns(unsigned n, int cw, int ch)
{
	if (n <= 1)
		return 1;
	double target = sqrt(1.6 * n * ch / (double)cw), best = 1e9;
	int cols = 1;
	for (unsigned c = 1; c <= n; c++) {
		double cost = fabs(log(c / target)) + (n % c ? 0.4 : 0);
		if (cost < best - 1e-12) {
			best = cost;
			cols = (int)c;
		}
	}
	return cols;
}

static struct mr_size mr_queue(struct mr_snap *s, int qi, FILE *f, int x, int y, struct mr_size cell);

/* A queue's children in a grid of equal cells (each drawn at the cell's size). */
static struct mr_size mr_kids(struct mr_snap *s, const struct mr_queue *q, FILE *f, int x, int y)
{
	if (!q->nb_kids)
		return (struct mr_size){ 0, 0 };
	struct mr_size cell = { 0, 0 };
	for (unsigned k = 0; k < q->nb_kids; k++) {
		struct mr_size z = mr_queue(s, q->kids[k], NULL, 0, 0, (struct mr_size){ 0, 0 });
		cell.w = mr_max(cell.w, z.w);
		cell.h = mr_max(cell.h, z.h);
	}
	int cols = mr_columns(q->nb_kids, cell.w, cell.h);
	int rows = ((int)q->nb_kids + cols - 1) / cols;
	if (f)
		for (unsigned k = 0; k < q->nb_kids; k++)
			mr_queue(s, q->kids[k], f, x + (int)(k % (unsigned)cols) * (cell.w + MR_GAP),
				 y + (int)(k / (unsigned)cols) * (cell.h + MR_GAP), cell);
	return (struct mr_size){ cols * cell.w + (cols - 1) * MR_GAP, rows * cell.h + (rows - 1) * MR_GAP };
}

/* The VP's hardware-priority level as a badge; returns its width. */
static int mr_hw_badge(FILE *f, int level, int x, int y)
{
	char t[32];
	snprintf(t, sizeof(t), level ? "hw %+d" : "hw %d", level);
	int w = MR_FONT_W * (int)strlen(t) + 6;
	if (f)
		fprintf(f, "<g class=\"hwprio\" data-level=\"%d\" transform=\"translate(%d,%d)\"><rect width=\"%d\" height=\"13\" "
			   "rx=\"2\" fill=\"%s\"/><text x=\"3\" y=\"10\">%s</text></g>\n",
			level, x, y, w, level > 0 ? "#f4a6a6" : level < 0 ? "#a6c8f4" : "#eeeeee", t);
	return w;
}

/* A queue that holds nothing and has one child is drawn as that child, titled with both
 * names ("Core5 / VP5"; compact boxes show the last one, and the others in a tooltip): a
 * level of boxes less, nothing lost. Returns the queue drawn. */
static int mr_merge(const struct mr_snap *s, int qi, char *chain, size_t n)
{
	size_t len = 0;
	chain[0] = 0;
	for (;;) {
		const struct mr_queue *q = &s->q[qi];
		int merge = q->nb_kids == 1 && !q->nb_threads && !q->nb_bubbles;
		if (len < n)
			len += (size_t)snprintf(chain + len, n - len, "%s%s", q->name, merge ? " / " : "");
		if (!merge)
			return qi;
		qi = q->kids[0];
	}
}

/* One queue's box: its name (and a VP's hwprio level), what it holds, its children. */
static struct mr_size mr_queue(struct mr_snap *s, int qi, FILE *f, int x, int y, struct mr_size cell)
{
	char chain[256];
	qi = mr_merge(s, qi, chain, sizeof(chain));
	const struct mr_queue *q = &s->q[qi];
	const char *title = s->compact ? q->name : chain;
	int vp = q->vp >= 0;
	int titlew = MR_TITLE_W * mr_chars(title) + (vp ? MR_GAP + mr_hw_badge(NULL, q->hw, 0, 0) : 0);
	struct mr_size kids = mr_kids(s, q, NULL, 0, 0);
	int maxw = vp ? (int)s->vp_maxw : mr_max(kids.w, MR_ITEM_MINW);
	unsigned cap = vp ? s->cap_vp : s->cap_item;
	struct mr_size in = mr_content(s, q, cap, maxw, NULL, 0, 0);
	struct mr_size z = { mr_max(mr_max(titlew, in.w), kids.w) + 2 * MR_PAD,
			     MR_TITLE_H + in.h + (in.h ? MR_GAP : 0) + kids.h + (kids.h ? MR_GAP : 0) + MR_PAD };
	z.w = mr_max(z.w, cell.w);
	z.h = mr_max(z.h, cell.h);
	if (!f)
		return z;
	if (vp)
		fprintf(f, "<g class=\"queue vp\" data-queue=\"%d\" data-vp=\"%d\" transform=\"translate(%d,%d)\">", qi, q->vp,
			x, y);
	else
		fprintf(f, "<g class=\"queue\" data-queue=\"%d\" transform=\"translate(%d,%d)\">", qi, x, y);
	fprintf(f, "<rect class=\"%s\" width=\"%d\" height=\"%d\"/><text class=\"qname\" x=\"%d\" y=\"12\">",
		vp ? "vpbox" : "qbox", z.w, z.h, MR_PAD);
	mr_xml(f, title);
	if (title != chain) {
		fputs("<title>", f);
		mr_xml(f, chain);
		fputs("</title>", f);
	}
	fputs("</text>\n", f);
	if (vp)
		mr_hw_badge(f, q->hw, MR_PAD + MR_TITLE_W * mr_chars(title) + MR_GAP, 2);
	mr_content(s, q, cap, maxw, f, MR_PAD, MR_TITLE_H);
	mr_kids(s, q, f, MR_PAD, MR_TITLE_H + in.h + (in.h ? MR_GAP : 0));
	fputs("</g>\n", f);
	return z;
}

/* The box of threads on no queue (blocked, not started, ending). */
static struct mr_size mr_unplaced(struct mr_snap *s, int maxw, FILE *f, int x, int y)
{
	static const char title[] = "on no queue: blocked, not started or ending";
	struct mr_size in = mr_content(s, &s->unplaced, s->cap_item, maxw, NULL, 0, 0);
	struct mr_size z = { mr_max(MR_TITLE_W * (int)strlen(title), in.w) + 2 * MR_PAD, MR_TITLE_H + in.h + MR_PAD };
	if (f) {
		fprintf(f, "<g class=\"queue unplaced\" transform=\"translate(%d,%d)\"><rect class=\"qbox\" width=\"%d\" "
			   "height=\"%d\"/><text class=\"qname\" x=\"%d\" y=\"12\">%s</text>\n",
			x, y, z.w, z.h, MR_PAD, title);
		mr_content(s, &s->unplaced, s->cap_item, maxw, f, MR_PAD, MR_TITLE_H);
		fputs("</g>\n", f);
	}
	return z;
}

/* One legend entry: a swatch (fill, or an outline style) and its text. */
static struct mr_size mr_key(FILE *f, int x, int y, const char *swatch, const char *text)
{
	struct mr_size z = { 22 + MR_FONT_W * mr_chars(text), 14 };
	if (f) {
		fprintf(f, "<g class=\"key\" transform=\"translate(%d,%d)\">%s<text x=\"20\" y=\"11\">", x, y, swatch);
		mr_xml(f, text);
		fputs("</text></g>\n", f);
	}
	return z;
}

/* The legend's keys to the drawing's styles, after the groups': text, then swatch. The
 * faded thread's swatch, last, takes the first colour. */
static const char *const mr_style_keys[][2] = {
	{ "running (label: thread id)", "<rect class=\"run\" width=\"16\" height=\"12\" fill=\"#fff\"/>" },
	{ "bubble: thick closed, thin burst, dashed closing",
	  "<rect class=\"outline closed\" width=\"16\" height=\"12\" stroke=\"#555\"/>" },
	{ "implicit children bubble", "<rect class=\"outline dotted\" width=\"16\" height=\"12\" stroke=\"#888\"/>" },
	{ "the VP's hwprio level", "<rect width=\"16\" height=\"12\" fill=\"#f4a6a6\"/>" },
};
#define MR_NB_STYLE_KEYS ((unsigned)(sizeof(mr_style_keys) / sizeof(mr_style_keys[0])))
#define MR_LEGEND_MORE (3 + MR_NB_STYLE_KEYS) /* entries after the groups' */

/* Legend entry i (of the groups, then "and more", the ungrouped and the styles); 0 if
 * there is none such. */
static int mr_legend_entry(const struct mr_snap *s, unsigned i, char *text, size_t tn, char *sw, size_t sn)
{
	unsigned n = s->nb_groups < MR_LEGEND_GROUPS ? s->nb_groups : MR_LEGEND_GROUPS;
	sw[0] = 0;
	if (i < n) {
		const struct mr_ent *b = &s->e[s->groups[i]];
		snprintf(text, tn, "%.*s (#%llu, %ld thread%s)", mr_prefix(b->name, 60), b->name,
			 (unsigned long long)(b->uid & ~MR_TAG), b->nb_threads,
			 b->nb_threads > 1 ? "s" : "");
		snprintf(sw, sn, "<rect class=\"swatch\" data-group=\"%u\" width=\"16\" height=\"12\" fill=\"%s\"/>", i,
			 mr_colour((int)i));
		return 1;
	}
	unsigned k = i - n;
	if (k == 0) {
		snprintf(text, tn, "and %u more bubbles (colours repeat every %zu)", s->nb_groups - n, MR_NB_COLOURS);
		return s->nb_groups > n;
	}
	if (k == 1) {
		snprintf(text, tn, "in no bubble that tells threads apart (%ld)", s->ungrouped);
		snprintf(sw, sn, "<rect width=\"16\" height=\"12\" fill=\"%s\"/>", MR_NO_GROUP);
		return s->ungrouped > 0;
	}
	if (k - 2 < MR_NB_STYLE_KEYS) {
		snprintf(text, tn, "%s", mr_style_keys[k - 2][0]);
		snprintf(sw, sn, "%s", mr_style_keys[k - 2][1]);
		return 1;
	}
	if (k - 2 == MR_NB_STYLE_KEYS) {
		snprintf(text, tn, "faded: blocked or not started (where it will run)");
		snprintf(sw, sn, "<rect class=\"waiting\" width=\"16\" height=\"12\" fill=\"%s\"/>", mr_palette[0]);
		return 1;
	}
	return 0;
}

/* The legend, flowed in rows no wider than maxw. */
static struct mr_size mr_legend(const struct mr_snap *s, int maxw, FILE *f, int x, int y)
{
	char text[160], sw[256];
	int cx = 0, cy = 0, w = 0;
	unsigned n = s->nb_groups < MR_LEGEND_GROUPS ? s->nb_groups : MR_LEGEND_GROUPS;
	for (unsigned i = 0; i < n + MR_LEGEND_MORE; i++) {
		if (!mr_legend_entry(s, i, text, sizeof(text), sw, sizeof(sw)))
			continue;
		struct mr_size z = mr_key(NULL, 0, 0, sw, text);
		if (cx > 0 && cx + z.w > maxw) {
			cy += 18;
			cx = 0;
		}
		mr_key(f, x + cx, y + cy, sw, text);
		cx += z.w + 14;
		w = mr_max(w, cx - 14);
	}
	return (struct mr_size){ w, cy + 14 };
}

static const char mr_svg_style[] =
	"text{font-family:monospace;font-size:10px;fill:#000}"
	".qname{font-size:11px;font-weight:bold}"
	".qbox{fill:#fafafa;stroke:#999}"
	".vpbox{fill:#fff;stroke:#666}"
	".outline{fill:none;stroke-width:1.2}"
	".outline.closed{stroke-width:2.5}"
	".outline.closing{stroke-dasharray:5 3}"
	".outline.dotted{stroke-dasharray:1 2}"
	".blabel{font-size:9px;fill:#333}"
	".run{stroke:#000;stroke-width:2}"
	".more{fill:#555;font-style:italic}"
	".waiting{opacity:.45}"
	".title{font-size:13px;font-weight:bold}";

void mr_svg(struct mr_snap *s, FILE *f)
{
	s->compact = s->nb_vps > MR_COMPACT_VPS;
	s->cap_item = s->compact ? MR_CAP_ITEM_COMPACT : MR_CAP_ITEM;
	s->cap_vp = s->compact ? MR_CAP_VP_COMPACT : MR_CAP_VP;
	s->vp_maxw = s->compact ? 76 : 132;
	struct mr_size tree = mr_queue(s, s->root_q, NULL, 0, 0, (struct mr_size){ 0, 0 });
	int width = mr_max(tree.w, 900);
	struct mr_size legend = mr_legend(s, width, NULL, 0, 0);
	struct mr_size un = s->unplaced.nb_threads ? mr_unplaced(s, width - 2 * MR_PAD, NULL, 0, 0) : (struct mr_size){ 0, 0 };
	int top = 44 + legend.h + 10;
	int W = width + 20, H = top + tree.h + (un.h ? 10 + un.h : 0) + 10;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n"
		   "<style>%s</style>\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n"
		   "<text class=\"title\" x=\"10\" y=\"18\">marcel snapshot: ",
		W, H, W, H, mr_svg_style);
	mr_xml(f, s->file);
	fputs("</text>\n<text class=\"subtitle\" x=\"10\" y=\"34\">strategy ", f);
	mr_xml(f, s->strategy[0] ? s->strategy : "(none)");
	fprintf(f, ", %u VPs, %u queues, %u threads, %u entities; at most %u threads and %u bubbles drawn per queue "
		   "(%u threads per VP)%s</text>\n",
		s->nb_vps, s->nq, s->nb_threads, s->ne, s->cap_item, s->cap_item, s->cap_vp,
		s->compact ? "; compact: bubbles without their nesting" : "");
	fprintf(f, "<g class=\"legend\">\n");
	mr_legend(s, width, f, 10, 44);
	fputs("</g>\n", f);
	mr_queue(s, s->root_q, f, 10, top, (struct mr_size){ 0, 0 });
	if (un.h)
		mr_unplaced(s, width - 2 * MR_PAD, f, 10, top + tree.h + 10);
	fputs("</svg>\n", f);
}
