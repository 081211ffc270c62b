/*
 * marcel-render's movie (tools/marcel-render-trace.c, marcel-render-page.c): the HTML
 * page replaying a trace, drawn from what a live run of the library writes (MARCEL_TRACE,
 * of a program with nested bubbles, a blocked thread and a name full of markup), from
 * what marcel-sim writes (--trace, on 16 and on 1024 PUs) and from a trace over the
 * page's caps.
 *
 * The page must be well-formed XML (xmllint when installed, and ma_xml_test.h's reader
 * always), refer to nothing outside it, and the data it embeds must hold every VP, the
 * slices of each VP in the trace's order with the trace's thread ids, every level change,
 * colours by bubble as the snapshot's (by thread, saying so, when the trace records no
 * membership); where node is installed, its player is run and must show at chosen
 * instants what the data says. Over the caps, it keeps the longest slices and the first
 * log lines, and says so.
 */
#define _GNU_SOURCE
#include "ma_render_test.h"
#include "ma_xml_test.h"

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
		const char *id = tj_arg(e, "id");
		ck_assert_ptr_nonnull(id);
		s->runs[s->nb_runs++] = (struct trace_run){ (unsigned)(vp1 - 1), strtoull(id, NULL, 10) };
	}
	if (!strcmp(e->ph, "i") && !strcmp(e->name, "hwprio")) {
		const char *vp = tj_arg(e, "vp");
		if (vp && atoi(vp) < 1024)
			s->hw_per_vp[atoi(vp)]++;
		s->hw++;
	}
	return 0;
}

static struct trace_scan *scan_trace(const char *path)
{
	size_t len;
	char *text = ma_rt_slurp(path, &len);
	struct trace_scan *s = calloc(1, sizeof(*s));
	struct tj_parser ps;
	ck_assert_msg(tj_parse(&ps, text, len, scan_event, s) == 0, "%s: %s", path, ps.err);
	free(text);
	return s;
}

struct page_check {
	struct ma_xe *root;
	struct tj_node *data;
	char *html;
	const struct tj_node *vps, *threads, *slices, *idle, *hw;
	long long span;
};

static const struct ma_xe *by_id(struct ma_xe *root, const char *id)
{
	struct ma_xlist all = { 0 };
	ma_xml_all(root, NULL, NULL, &all);
	const struct ma_xe *found = NULL;
	for (unsigned i = 0; i < all.n && !found; i++)
		if (ma_xml_attr(all.e[i], "id") && !strcmp(ma_xml_attr(all.e[i], "id"), id))
			found = all.e[i];
	free(all.e);
	return found;
}

static void page_load(struct page_check *p, const char *html)
{
	memset(p, 0, sizeof(*p));
	ma_rt_xmllint_ok(html);
	size_t len;
	p->html = ma_rt_slurp(html, &len);
	p->root = ma_xml_parse(html, p->html, len);
	ck_assert_str_eq(p->root->name, "html");
	/* Self-contained: no address but the namespace's, nothing loaded. */
	const char *ns = strstr(p->html, "://");
	ck_assert_msg(ns && !strstr(ns + 3, "://"), "the page refers to something outside it");
	ck_assert(!strstr(p->html, "src=") && !strstr(p->html, "href=") && !strstr(p->html, "url("));
	const struct ma_xe *d = by_id(p->root, "data");
	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(ma_xml_attr(d, "type"), "application/json");
	p->data = calloc(1, sizeof(*p->data));
	struct tj_parser ps;
	const char *t = ma_xml_text(d);
	ck_assert_msg(tj_parse_doc(&ps, t, strlen(t), p->data) == 0, "the page's data: %s", ps.err);
	p->vps = ma_rt_jarr(p->data, "vps");
	p->threads = ma_rt_jarr(p->data, "threads");
	p->slices = ma_rt_jarr(p->data, "slices");
	p->idle = ma_rt_jarr(p->data, "idle");
	p->hw = ma_rt_jarr(p->data, "hw");
	p->span = ma_rt_jint(p->data, "span");
	static const char *const controls[] = { "play", "slider", "timeline", "vps", "log" };
	for (unsigned i = 0; i < sizeof(controls) / sizeof(controls[0]); i++)
		ck_assert_msg(by_id(p->root, controls[i]) != NULL, "the page has no #%s", controls[i]);
}

static void page_free(struct page_check *p)
{
	ma_xml_free(p->root);
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
	ck_assert_int_eq(ma_rt_jint(counts, "trace_events"), (long long)s->events);
	ck_assert_int_eq(ma_rt_jint(counts, "slices"), (long long)s->nb_runs);
	ck_assert_int_eq(ma_rt_jint(counts, "slices_shown"), (long long)s->nb_runs);
	ck_assert_int_eq(ma_rt_jint(counts, "hwprio"), (long long)s->hw);
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
	if (!ma_rt_have("node")) {
		printf("%s: node not installed: the page's player was not run\n", ma_rt_prog);
		return;
	}
	for (int pos = 0; pos <= 10000; pos += 2500) {
		struct ma_rt_run r = ma_rt_run("node '%s/render-page.js' '%s' %d", MA_SRC_TESTS_DIR, html, pos);
		ck_assert_msg(r.status == 0, "the player failed: %s", r.err);
		struct tj_node out;
		struct tj_parser ps;
		ck_assert_msg(tj_parse_doc(&ps, r.out, strlen(r.out), &out) == 0, "player output: %s", ps.err);
		double t = tj_get(&out, "t")->num;
		const struct tj_node *vps = ma_rt_jarr(&out, "vps");
		ck_assert_uint_eq(vps->n, p->vps->n);
		for (unsigned v = 0; v < vps->n; v++) {
			char chip[32], level[32];
			expect_at(p, v, t, chip, level, sizeof(chip));
			ck_assert_msg(!strcmp(vps->items[v].items[0].str, chip), "at %.0f ns VP%u shows %s, the data says %s", t, v,
				      vps->items[v].items[0].str, chip);
			ck_assert_str_eq(vps->items[v].items[1].str, level);
		}
		tj_node_free(&out);
		ma_rt_run_free(&r);
	}
}

/* Draws the folder's trace name-trace.json into name.html, loads the page and reads the
 * trace: the page's data must be the trace's, and with player the player must show it.
 * Returns what the trace holds (movie_free frees it with the page). */
static struct trace_scan *movie_draw(struct page_check *p, const char *name, int player)
{
	char trace[64], html[64];
	snprintf(trace, sizeof(trace), "%s-trace.json", name);
	snprintf(html, sizeof(html), "%s.html", name);
	ma_rt_render("movie", ma_rt_path(trace), ma_rt_path(html));
	page_load(p, ma_rt_path(html));
	struct trace_scan *s = scan_trace(ma_rt_path(trace));
	check_page_data(p, s);
	if (player)
		check_player(p, ma_rt_path(html));
	return s;
}

static void movie_free(struct page_check *p, struct trace_scan *s)
{
	free(s->runs);
	free(s);
	page_free(p);
}

/* ---- the pages ---- */

START_TEST(live_run)
{
	ma_rt_live_run();
}
END_TEST

START_TEST(live_movie)
{
	struct page_check p;
	struct trace_scan *s = movie_draw(&p, "live", 1);
	ck_assert_uint_eq(s->nb_vps, 4);
	ck_assert_uint_gt(s->nb_runs, MA_RT_GROUPS * MA_RT_PER);
	/* Membership is in the trace: coloured by bubble, groups as in the snapshot. */
	ck_assert_str_eq(tj_get(p.data, "colour_by")->str, "bubble");
	long long group[3] = { -2, -2, -2 };
	int found = 0;
	for (unsigned i = 0; i < p.threads->n; i++) {
		const char *name = p.threads->items[i].items[1].str;
		long long g = item(&p.threads->items[i], 2);
		int k = !strcmp(name, MA_RT_ODD_NAME) ? 2 : name[0] == 'g' && name[2] == 't' ? (name[1] == '1' ? 0 : 1) : -1;
		if (k < 0)
			continue;
		found++;
		if (group[k] == -2)
			group[k] = g;
		ck_assert_msg(group[k] == g, "%s is in group %lld, not %lld", name, g, group[k]);
	}
	ck_assert_int_eq(found, MA_RT_GROUPS * MA_RT_PER + 3);
	ck_assert_int_ge(group[0], 0);
	ck_assert_int_ge(group[1], 0);
	ck_assert_int_ne(group[0], group[1]);
	ck_assert_int_eq(group[2], -1);
	/* The odd name is in the data, escaped in the page's text. */
	ck_assert_ptr_null(strstr(p.html, "odd<"));
	ck_assert_ptr_null(strstr(p.html, "odd\\u003c&"));
	ck_assert_ptr_nonnull(strstr(p.html, "odd\\u003c\\u0026\\\"'\\u003e]]\\u003e"));
	movie_free(&p, s);
}
END_TEST

/* marcel-sim's traces: 16 PUs, coloured by bubble; hwprio levels on POWER5, with no
 * membership in the trace: coloured by thread, and the page says so. */
START_TEST(sim_movies)
{
	ma_rt_sim("sim", MA_RT_SIM16);
	struct page_check p;
	struct trace_scan *s = movie_draw(&p, "sim", 1);
	ck_assert_uint_eq(s->nb_vps, 16);
	ck_assert_str_eq(tj_get(p.data, "colour_by")->str, "bubble");
	ck_assert_uint_eq(p.threads->n, 16);
	ck_assert_uint_ge(ma_rt_jarr(p.data, "groups")->n, 2);
	movie_free(&p, s);

	ma_rt_sim("hw", MA_RT_SIM_HW);
	s = movie_draw(&p, "hw", 1);
	ck_assert_uint_gt(s->hw, 0);
	ck_assert_str_eq(tj_get(p.data, "colour_by")->str, "thread");
	ck_assert_ptr_nonnull(strstr(ma_rt_jarr(p.data, "notes")->items[0].str, "coloured by thread"));
	ck_assert_ptr_nonnull(strstr(p.html, "<p class=\"note\">This trace records no bubble membership"));
	movie_free(&p, s);
}
END_TEST

/* 1024 VPs, 4096 threads: every VP and every slice in the page. */
START_TEST(sim_1024)
{
	ma_rt_sim("big", MA_RT_SIM1024);
	struct page_check p;
	struct trace_scan *s = movie_draw(&p, "big", 0);
	ck_assert_uint_eq(s->nb_vps, 1024);
	movie_free(&p, s);
}
END_TEST

/* Over the caps: 210 000 slices on one VP, 10 000 of them shorter than the others, and
 * 25 000 marks. The page keeps the 200 000 longer slices and the first 20 000 log lines,
 * and says so. */
START_TEST(large_trace)
{
	FILE *f = fopen(ma_rt_path("large.json"), "w");
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
	ma_rt_render("movie", ma_rt_path("large.json"), ma_rt_path("large.html"));
	struct page_check p;
	page_load(&p, ma_rt_path("large.html"));
	const struct tj_node *counts = tj_get(p.data, "counts");
	ck_assert_int_eq(ma_rt_jint(counts, "slices"), 210000);
	ck_assert_int_eq(ma_rt_jint(counts, "slices_shown"), 200000);
	ck_assert_int_eq(ma_rt_jint(counts, "events"), 25000);
	ck_assert_int_eq(ma_rt_jint(counts, "events_shown"), 20000);
	const struct tj_node *sl = &p.slices->items[0];
	ck_assert_uint_eq(sl->n, 3 * 200000);
	for (unsigned i = 0; i < sl->n; i += 3)
		ck_assert_int_eq(item(sl, i + 1) - item(sl, i), 5000); /* ns: the long ones only */
	ck_assert_uint_eq(ma_rt_jarr(p.data, "events")->n, 20000);
	ck_assert_ptr_nonnull(strstr(p.html, "Large trace: 200000 of 210000 thread slices"));
	ck_assert_ptr_nonnull(strstr(p.html, "first 20000 of 25000 events"));
	ck_assert_str_eq(tj_get(p.data, "colour_by")->str, "thread");
	page_free(&p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("render_movie");
	TCase *tc = tcase_create("movie");
	/* Large traces and 1024-VP simulations, several times slower under the sanitizers. */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, live_run);
	tcase_add_test(tc, live_movie);
	tcase_add_test(tc, sim_movies);
	tcase_add_test(tc, sim_1024);
	tcase_add_test(tc, large_trace);
	suite_add_tcase(s, tc);
	return ma_rt_main("check_render_movie", s);
}
