/*
 * marcel-render's SVG of a snapshot (tools/marcel-render-svg.c), drawn from what a live
 * run of the library writes (marcel_sched_snapshot_json, of a program with nested
 * bubbles, a blocked thread and a name full of markup), from what marcel-sim writes
 * (--snapshot, on 16 and on 1024 PUs) and from a minimal snapshot.
 *
 * The SVG must be well-formed XML (xmllint when installed, and ma_xml_test.h's reader
 * always) with one box per VP showing its hwprio level, one chip per thread labelled with
 * its id in the box of the queue the snapshot places it on (running ones in their VP's
 * box), inside the outline of its own bubble, coloured by bubble; on 1024 PUs it stays a
 * size one can zoom through, and every thread is drawn or counted.
 */
#define _GNU_SOURCE
#include "ma_render_test.h"
#include "ma_xml_test.h"

#define TAG (UINT64_C(1) << 63)

/* ---- the snapshot, and the SVG against it ---- */

static struct tj_node *json_load(const char *path)
{
	size_t len;
	char *text = ma_rt_slurp(path, &len);
	struct tj_node *doc = calloc(1, sizeof(*doc));
	struct tj_parser ps;
	ck_assert_msg(tj_parse_doc(&ps, text, len, doc) == 0, "%s: %s", path, ps.err);
	free(text);
	return doc;
}

static uint64_t juid(const struct tj_node *obj)
{
	uint64_t v = 0;
	ck_assert(tj_u64(tj_get(obj, "uid"), &v) == 0);
	return v & ~TAG;
}

/* The chip of entity ent (there must be exactly one), or NULL if want is 0. */
static const struct ma_xe *chip_of(const struct ma_xlist *chips, unsigned ent)
{
	const struct ma_xe *found = NULL;
	char want[16];
	snprintf(want, sizeof(want), "%u", ent);
	for (unsigned i = 0; i < chips->n; i++)
		if (!strcmp(ma_xml_attr(chips->e[i], "data-entity"), want)) {
			ck_assert_msg(!found, "entity %u has two chips", ent);
			found = chips->e[i];
		}
	return found;
}

static const char *fill_of(const struct ma_xe *chip)
{
	const struct ma_xe *rect = ma_xml_kid(chip, "rect", NULL);
	ck_assert_ptr_nonnull(rect);
	return ma_xml_attr(rect, "fill");
}

struct svg_check {
	struct ma_xe *root;
	struct ma_xlist vps, chips, bubbles, more;
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
		const struct ma_xe *g = c->vps.e[i];
		unsigned vp = (unsigned)atoi(ma_xml_attr(g, "data-vp"));
		ck_assert_uint_lt(vp, c->nb_vps);
		ck_assert_msg(!seen[vp], "two boxes for VP%u", vp);
		seen[vp] = 1;
		char name[16];
		snprintf(name, sizeof(name), "VP%u", vp);
		const char *title = ma_xml_text(ma_xml_kid(g, "text", "qname"));
		ck_assert_msg(strlen(title) >= strlen(name) && !strcmp(title + strlen(title) - strlen(name), name) &&
				      (strlen(title) == strlen(name) || title[strlen(title) - strlen(name) - 1] == ' '),
			      "VP%u's box is titled '%s'", vp, title);
		const struct tj_node *q = &c->queues->items[atoi(ma_xml_attr(g, "data-queue"))];
		ck_assert_int_eq(ma_rt_jint(q, "vp"), vp);
		const struct ma_xe *hw = ma_xml_kid(g, "g", "hwprio");
		ck_assert_ptr_nonnull(hw);
		ck_assert_int_eq(atoi(ma_xml_attr(hw, "data-level")), ma_rt_jint(q, "hwprio_level"));
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
		const struct ma_xe *chip = chip_of(&c->chips, i);
		ck_assert_msg(chip != NULL, "thread entity %u has no chip", i);
		char uid[24];
		snprintf(uid, sizeof(uid), "%llu", (unsigned long long)juid(e));
		ck_assert_str_eq(ma_xml_attr(chip, "data-uid"), uid);
		ck_assert_str_eq(ma_xml_text(ma_xml_kid(chip, "text", NULL)), uid);
		const struct ma_xe *box = ma_xml_up(chip, "queue");
		ck_assert_ptr_nonnull(box);
		long long vp = ma_rt_jint(e, "running_vp"), q = ma_rt_jint(e, "queue");
		if (vp >= 0) {
			ck_assert_msg(ma_xml_class(box, "vp") && atoi(ma_xml_attr(box, "data-vp")) == vp, "thread %s runs on VP%lld", uid,
				      vp);
			ck_assert(ma_xml_class(chip, "running"));
		} else if (q >= 0) {
			ck_assert_msg(ma_xml_attr(box, "data-queue") && atoi(ma_xml_attr(box, "data-queue")) == q,
				      "thread %s is on queue %lld, drawn in %s", uid, q, ma_xml_attr(box, "data-queue"));
			ck_assert(!ma_xml_class(chip, "running"));
		} else {
			ck_assert_msg(ma_xml_class(box, "unplaced"), "thread %s is on no queue", uid);
		}
		long long parent = ma_rt_jint(e, "parent");
		const struct tj_node *p = &c->ents->items[parent];
		if (nest && ma_rt_jint(p, "parent") >= 0) {
			const struct ma_xe *b = ma_xml_up(chip, "bubble");
			ck_assert_msg(b && atoi(ma_xml_attr(b, "data-entity")) == parent, "thread %s is not in its bubble's outline", uid);
		}
	}
	return threads;
}

static void svg_load(struct svg_check *c, const char *svg, const char *snap)
{
	memset(c, 0, sizeof(*c));
	ma_rt_xmllint_ok(svg);
	size_t len;
	char *text = ma_rt_slurp(svg, &len);
	c->root = ma_xml_parse(svg, text, len);
	free(text);
	ck_assert_str_eq(c->root->name, "svg");
	c->width = atoi(ma_xml_attr(c->root, "width"));
	c->height = atoi(ma_xml_attr(c->root, "height"));
	ma_xml_all(c->root, "g", "vp", &c->vps);
	ma_xml_all(c->root, "g", "thread", &c->chips);
	ma_xml_all(c->root, "g", "bubble", &c->bubbles);
	ma_xml_all(c->root, "text", "more", &c->more);
	c->snap = json_load(snap);
	c->queues = ma_rt_jarr(c->snap, "queues");
	c->ents = ma_rt_jarr(c->snap, "entities");
	c->nb_vps = (unsigned)ma_rt_jint(c->snap, "vps");
}

static void svg_free(struct svg_check *c)
{
	ma_xml_free(c->root);
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
		if (atoll(ma_xml_attr(c->bubbles.e[i], "data-entity")) == b)
			return 1;
	return 0;
}

/* Draws the folder's snapshot name-snap.json into name.svg and loads both: one box per
 * VP, as the snapshot says. */
static void svg_draw(struct svg_check *c, const char *name)
{
	char snap[64], svg[64];
	snprintf(snap, sizeof(snap), "%s-snap.json", name);
	snprintf(svg, sizeof(svg), "%s.svg", name);
	ma_rt_render("snapshot", ma_rt_path(snap), ma_rt_path(svg));
	svg_load(c, ma_rt_path(svg), ma_rt_path(snap));
	check_vp_boxes(c);
}

/* ---- the pictures ---- */

START_TEST(live_run)
{
	ma_rt_live_run();
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
	struct svg_check c;
	svg_draw(&c, "live");
	ck_assert_uint_eq(c.nb_vps, 4);
	unsigned threads = check_chips(&c, 1);
	ck_assert_uint_ge(threads, MA_RT_GROUPS * MA_RT_PER + 3); /* with main */
	ck_assert_uint_eq(c.chips.n, threads);
	ck_assert_uint_eq(c.more.n, 0);
	/* Colours: bubble 1's threads one, bubble 2's and 3's another, the others grey. */
	const char *fill[3] = { NULL, NULL, NULL };
	static const char *const names[] = { "g1t0", "g1t1", "g1t2", "g2t0", "g2t1", "g2t2", "g3t0", "g3t1", MA_RT_ODD_NAME };
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
		if (!strcmp(tj_get(e, "kind")->str, "bubble") && ma_rt_jint(e, "id") > 0)
			ck_assert_msg(has_outline(&c, i), "bubble %lld has no outline", ma_rt_jint(e, "id"));
	}
	struct ma_xlist sw = { 0 };
	ma_xml_all(c.root, "rect", "swatch", &sw);
	ck_assert_uint_eq(sw.n, 2);
	free(sw.e);
	/* The odd name went through escaping whole. */
	const struct ma_xe *odd = chip_of(&c.chips, (unsigned)thread_named(c.ents, MA_RT_ODD_NAME));
	ck_assert_ptr_nonnull(strstr(ma_xml_text(ma_xml_kid(odd, "title", NULL)), "\"" MA_RT_ODD_NAME "\""));
	svg_free(&c);
}
END_TEST

/* marcel-sim's snapshots: 16 PUs; hwprio levels on POWER5, some raised. */
START_TEST(sim_snapshots)
{
	ma_rt_sim("sim", MA_RT_SIM16);
	struct svg_check c;
	svg_draw(&c, "sim");
	ck_assert_uint_eq(c.nb_vps, 16);
	ck_assert_uint_eq(check_chips(&c, 1), 16);
	ck_assert_uint_eq(c.chips.n, 16);
	svg_free(&c);

	ma_rt_sim("hw", MA_RT_SIM_HW);
	svg_draw(&c, "hw");
	check_chips(&c, 1);
	int raised = 0;
	for (unsigned i = 0; i < c.vps.n; i++)
		raised += atoi(ma_xml_attr(ma_xml_kid(c.vps.e[i], "g", "hwprio"), "data-level")) > 0;
	ck_assert_int_gt(raised, 0);
	svg_free(&c);
}
END_TEST

/* 1024 VPs, 4096 threads: the picture stays a size one can zoom through (compact boxes,
 * caps), and every thread is drawn or counted in its queue's "+N". */
START_TEST(sim_1024)
{
	ma_rt_sim("big", MA_RT_SIM1024);
	struct svg_check c;
	svg_draw(&c, "big");
	ck_assert_uint_eq(c.nb_vps, 1024);
	ck_assert_msg(c.width <= 8000 && c.height <= 8000, "%d x %d pixels", c.width, c.height);
	ck_assert_msg(c.width <= 4 * c.height && c.height <= 4 * c.width, "%d x %d pixels", c.width, c.height);
	long long counted = 0;
	for (unsigned i = 0; i < c.more.n; i++)
		counted += atoll(ma_xml_attr(c.more.e[i], "data-threads"));
	ck_assert_int_eq(counted + c.chips.n, 4096);
	for (unsigned i = 0; i < c.chips.n; i++) {
		int e = atoi(ma_xml_attr(c.chips.e[i], "data-entity"));
		char uid[24];
		snprintf(uid, sizeof(uid), "%llu", (unsigned long long)juid(&c.ents->items[e]));
		ck_assert_str_eq(ma_xml_text(ma_xml_kid(c.chips.e[i], "text", NULL)), uid);
	}
	svg_free(&c);
}
END_TEST

/* The minimal snapshot (whose broken variants check_render_command refuses) draws. */
START_TEST(minimal_snapshot)
{
	ma_rt_write_file(ma_rt_path("min-snap.json"), MA_RT_SNAP_MIN);
	struct svg_check c;
	svg_draw(&c, "min");
	ck_assert_uint_eq(check_chips(&c, 1), 1);
	svg_free(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("render_svg");
	TCase *tc = tcase_create("svg");
	/* Large traces and 1024-VP simulations, several times slower under the sanitizers. */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, live_run);
	tcase_add_test(tc, live_snapshot);
	tcase_add_test(tc, sim_snapshots);
	tcase_add_test(tc, sim_1024);
	tcase_add_test(tc, minimal_snapshot);
	suite_add_tcase(s, tc);
	return ma_rt_main("check_render_svg", s);
}
