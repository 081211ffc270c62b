/*
 * marcel-render as a command (tools/marcel-render.c): bad inputs exit 2 with one line
 * naming the file and saying what is wrong, and leave the output as it was, nothing
 * beside it; a bad command line gets its usage; the same input gives the same bytes, to
 * a file or to standard output. Where Chromium and node are installed, the live run's
 * SVG and page are screenshot in the browser and the pictures measured (render-shot.js).
 */
#define _GNU_SOURCE
#include <sys/stat.h>
#include "ma_render_test.h"

START_TEST(live_run)
{
	ma_rt_live_run();
}
END_TEST

/* ---- bad input ---- */

/* marcel-render what in -o out: exit 2, one line on stderr naming in and saying why,
 * nothing on stdout, out as it was. */
static void refused(const char *what, const char *in, const char *why)
{
	const char *out = ma_rt_path("kept.out");
	ma_rt_write_file(out, "as it was\n");
	struct ma_rt_run r = ma_rt_run(MA_RT_RENDER " %s '%s' -o '%s'", what, in, out);
	ck_assert_msg(r.status == 2, "%s %s: status %d (%s)", what, in, r.status, r.err);
	ck_assert_str_eq(r.out, "");
	char *nl = strchr(r.err, '\n');
	ck_assert_msg(nl && !nl[1], "not one line: %s", r.err);
	ck_assert_msg(strstr(r.err, in) && strstr(r.err, why), "%s %s: '%s' does not say '%s'", what, in, r.err, why);
	char *kept = ma_rt_slurp(out, NULL);
	ck_assert_str_eq(kept, "as it was\n");
	free(kept);
	ma_rt_run_free(&r);
	/* Nothing left beside it either. */
	struct ma_rt_run ls = ma_rt_run("ls '%s' | grep -c '^kept.out.' || true", ma_rt_dir);
	ck_assert_str_eq(ls.out, "0\n");
	ma_rt_run_free(&ls);
}

/* A trace with VP0's track named, then the events more. */
#define TRACE_VP0(more) "{\"traceEvents\":[{\"ph\":\"M\",\"pid\":1,\"tid\":1,\"name\":\"thread_name\"," \
			"\"args\":{\"name\":\"VP0\"}}," more "]}"

/* What must be refused, as a file: the command, the file's text, what the line says. */
static const char *const bad_files[][3] = {
	{ "snapshot", "{\"queues\":[", "not valid JSON" },
	{ "movie", "{\"queues\":[", "not valid JSON" },
	{ "snapshot", "{\"a\":1,\"a\":2}", "given twice" },
	{ "snapshot", "[1,2]", "not a marcel snapshot" },
	{ "movie", "[1,2]", "not a marcel trace" },
	/* The minimal snapshot, broken. */
	{ "snapshot", MA_RT_SNAP("2", MA_RT_SNAP_Q1("0", "0"), MA_RT_SNAP_E1("thread", "0")), "VP 1 has no queue" },
	{ "snapshot", MA_RT_SNAP("1", MA_RT_SNAP_Q1("0", "7"), MA_RT_SNAP_E1("thread", "0")), "queue 1: \"parent\" is 7" },
	{ "snapshot", MA_RT_SNAP("1", MA_RT_SNAP_Q1("0", "1"), MA_RT_SNAP_E1("thread", "0")), "queue 1's parents loop" },
	{ "snapshot", MA_RT_SNAP("1", MA_RT_SNAP_Q1("0", "0"), MA_RT_SNAP_E1("fish", "0")), "\"kind\" is \"fish\"" },
	{ "snapshot", MA_RT_SNAP("1", MA_RT_SNAP_Q1("0", "0"), MA_RT_SNAP_E1("thread", "-1")),
	  "entities 0 and 1 both have no parent" },
	{ "snapshot", MA_RT_SNAP("1", MA_RT_SNAP_Q1("0", "0"), MA_RT_SNAP_E1("thread", "1")),
	  "entity 1's parent 1 is a thread" },
	{ "snapshot", MA_RT_SNAP("1", MA_RT_SNAP_Q1("\"0\"", "0"), MA_RT_SNAP_E1("thread", "0")),
	  "queue 1: \"vp\" is not a number" },
	/* Traces: none of marcel's tracks, slices that do not nest, a bad level event, a slice
	 * of no thread. */
	{ "movie", "{\"traceEvents\":[]}", "no track is named VP0" },
	{ "movie", TRACE_VP0("{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":1}"), "\"E\" without \"B\"" },
	{ "movie",
	  TRACE_VP0("{\"ph\":\"i\",\"s\":\"t\",\"pid\":1,\"tid\":1,\"ts\":1,\"name\":\"hwprio\","
		    "\"args\":{\"vp\":5,\"level\":1}}"),
	  "\"hwprio\" event" },
	{ "movie",
	  TRACE_VP0("{\"ph\":\"B\",\"pid\":1,\"tid\":1,\"ts\":1,\"name\":\"x\"},{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":2}"),
	  "without a thread \"id\"" },
};

START_TEST(bad_inputs)
{
	refused("snapshot", ma_rt_path("missing.json"), "cannot read");
	/* Each file given to the other command. */
	refused("snapshot", ma_rt_path("live-trace.json"), "a trace, not a snapshot");
	refused("movie", ma_rt_path("live-snap.json"), "not a marcel trace");
	/* The minimal snapshot draws (check_render_svg checks the picture): what its broken
	 * variants get is theirs. */
	const char *f = ma_rt_path("bad.json");
	ma_rt_write_file(f, MA_RT_SNAP_MIN);
	ma_rt_render("snapshot", f, ma_rt_path("min.svg"));
	for (unsigned i = 0; i < sizeof(bad_files) / sizeof(bad_files[0]); i++) {
		ma_rt_write_file(f, bad_files[i][1]);
		refused(bad_files[i][0], f, bad_files[i][2]);
	}
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
		struct ma_rt_run r = ma_rt_run(MA_RT_RENDER " %s", bad[i][0]);
		ck_assert_msg(r.status == 2, "'%s': status %d", bad[i][0], r.status);
		ck_assert_msg(strstr(r.err, bad[i][1]) && strstr(r.err, "usage:"), "'%s': %s", bad[i][0], r.err);
		ck_assert_str_eq(r.out, "");
		ma_rt_run_free(&r);
	}
	struct ma_rt_run r = ma_rt_run(MA_RT_RENDER " --help");
	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "usage:"));
	ck_assert_ptr_nonnull(strstr(r.out, "1024 VPs"));
	ma_rt_run_free(&r);
}
END_TEST

/* Same input, same bytes; standard output gets what -o would. */
START_TEST(deterministic)
{
	ma_rt_sim("sim", MA_RT_SIM16);
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
		ma_rt_render(cases[i][0], ma_rt_path(cases[i][1]), ma_rt_path(a));
		struct ma_rt_run r = ma_rt_run(MA_RT_RENDER " %s '%s' >'%s'", cases[i][0], ma_rt_path(cases[i][1]), ma_rt_path(b));
		ck_assert_int_eq(r.status, 0);
		ma_rt_run_free(&r);
		r = ma_rt_run("cmp '%s' '%s'", ma_rt_path(a), ma_rt_path(b));
		ck_assert_msg(r.status == 0, "%s of %s differs between runs", cases[i][0], cases[i][1]);
		ma_rt_run_free(&r);
	}
}
END_TEST

/* -o on something that is not a regular file (here /dev/null, a FIFO) is written in
 * place: renaming the picture over it would replace the device or the pipe itself. */
START_TEST(output_to_a_device)
{
	ma_rt_sim("sim", MA_RT_SIM16);
	struct ma_rt_run r = ma_rt_run(MA_RT_RENDER " snapshot '%s' -o /dev/null", ma_rt_path("sim-snap.json"));
	ck_assert_int_eq(r.status, 0);
	ma_rt_run_free(&r);
	struct stat st;
	ck_assert_int_eq(stat("/dev/null", &st), 0);
	ck_assert_msg(S_ISCHR(st.st_mode), "/dev/null is no longer a character device");
	const char *fifo = ma_rt_path("out.fifo");
	unlink(fifo);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	r = ma_rt_run("cat '%s' >'%s.read' & " MA_RT_RENDER " movie '%s' -o '%s'; st=$?; wait; exit $st", fifo,
		      fifo, ma_rt_path("sim-trace.json"), fifo);
	ck_assert_int_eq(r.status, 0);
	ma_rt_run_free(&r);
	ck_assert_int_eq(stat(fifo, &st), 0);
	ck_assert_msg(S_ISFIFO(st.st_mode), "the FIFO was replaced");
	char read_path[300];
	snprintf(read_path, sizeof(read_path), "%s.read", fifo);
	size_t len;
	char *page = ma_rt_slurp(read_path, &len);
	ck_assert_msg(len > 1000 && strstr(page, "</html>"), "the page did not come through the FIFO (%zu bytes)", len);
	free(page);
	unlink(fifo);
	unlink(read_path);
}
END_TEST

/* ---- a headless browser's screenshots, where one is installed ---- */

#define SHOT_W 1280
#define SHOT_H 1024

/* The browser's own file: a PNG whose header says SHOT_W x SHOT_H (render-shot.js reads
 * the pixels; this does not trust its reading for the size). */
static void check_png(const char *path)
{
	size_t len;
	unsigned char *png = (unsigned char *)ma_rt_slurp(path, &len);
	ck_assert_msg(len > 33 && !memcmp(png, "\x89PNG\r\n\x1a\n", 8) && !memcmp(png + 12, "IHDR", 4),
		      "%s is not a PNG picture (%zu bytes)", path, len);
	unsigned w = (unsigned)png[16] << 24 | png[17] << 16 | png[18] << 8 | png[19];
	unsigned h = (unsigned)png[20] << 24 | png[21] << 16 | png[22] << 8 | png[23];
	ck_assert_msg(w == SHOT_W && h == SHOT_H, "%s is %ux%u, not %ux%u", path, w, h, SHOT_W, SHOT_H);
	free(png);
}

/* The colours of the SVG's legend swatches (one per bubble), as "#rrggbb,#rrggbb...". */
static void swatch_colours(const char *svg, char *out, size_t n)
{
	char *text = ma_rt_slurp(svg, NULL);
	out[0] = 0;
	for (const char *p = text; (p = strstr(p, "class=\"swatch\"")); p++) {
		const char *fill = strstr(p, "fill=\"#");
		ck_assert_msg(fill && strlen(out) + 9 < n, "a swatch without its colour in %s", svg);
		snprintf(out + strlen(out), n - strlen(out), "%s%.7s", out[0] ? "," : "", fill + 6);
	}
	free(text);
	ck_assert_msg(out[0], "%s has no bubble swatch", svg);
}

/* The movie page's VPs and log as the browser shows them at slider position pos are what
 * the player on render-page.js's stand-in DOM shows there. */
static void same_as_stand_in(const struct tj_node *shot, const char *html, int pos)
{
	struct ma_rt_run r = ma_rt_run("node '%s/render-page.js' '%s' %d", MA_SRC_TESTS_DIR, html, pos);
	ck_assert_msg(r.status == 0, "render-page.js: %s", r.err);
	struct tj_node want;
	struct tj_parser ps;
	ck_assert_msg(tj_parse_doc(&ps, r.out, strlen(r.out), &want) == 0, "render-page.js's output: %s", ps.err);
	const struct tj_node *got_vps = ma_rt_jarr(shot, "vps"), *want_vps = ma_rt_jarr(&want, "vps");
	ck_assert_uint_eq(got_vps->n, want_vps->n);
	for (unsigned v = 0; v < got_vps->n; v++)
		for (unsigned k = 0; k < 2; k++)
			ck_assert_msg(!strcmp(got_vps->items[v].items[k].str, want_vps->items[v].items[k].str),
				      "at %d VP%u shows '%s' in the browser, '%s' on the stand-in", pos, v,
				      got_vps->items[v].items[k].str, want_vps->items[v].items[k].str);
	ck_assert_str_eq(tj_get(shot, "log")->str, tj_get(&want, "log")->str);
	tj_node_free(&want);
	ma_rt_run_free(&r);
}

/* The live run's snapshot and movie in Chromium (tools/deps installs it), driven by
 * render-shot.js: both pictures are PNGs of the window's size that show something; every
 * bubble's colour covers more than its legend swatch, so the threads are drawn in it;
 * after the movie's slider moves to the middle, the page differs from its first frame
 * (the cursor moved, at least), and it shows there what the stand-in DOM shows. */
START_TEST(browser_screenshot)
{
	static const char *const browsers[] = { "chromium", "chromium-browser", "google-chrome" };
	const char *b = NULL;
	for (unsigned i = 0; i < sizeof(browsers) / sizeof(browsers[0]) && !b; i++)
		if (ma_rt_have(browsers[i]))
			b = browsers[i];
	if (!b) {
		printf("%s: screenshots skipped: none of chromium, chromium-browser, google-chrome is installed "
		       "(tools/deps installs chromium)\n", ma_rt_prog);
		return;
	}
	if (!ma_rt_have("node")) {
		printf("%s: screenshots skipped: node, which drives %s, is not installed (tools/deps installs nodejs)\n",
		       ma_rt_prog, b);
		return;
	}
	const char *svg = ma_rt_path("live.svg"), *html = ma_rt_path("live.html");
	ma_rt_render("snapshot", ma_rt_path("live-snap.json"), svg);
	ma_rt_render("movie", ma_rt_path("live-trace.json"), html);
	char colours[256];
	swatch_colours(svg, colours, sizeof(colours));
	const char *png[] = { ma_rt_path("shot-svg.png"), ma_rt_path("shot-movie-0.png"), ma_rt_path("shot-movie-mid.png") };
	struct ma_rt_run r = ma_rt_run("timeout 120 node '%s/render-shot.js' %s '%s' %d %d --colours '%s' --page '%s' "
				       "--shot '%s' --page '%s' --shot '%s' --shot '%s' --at 5000",
				       MA_SRC_TESTS_DIR, b, ma_rt_path("profile"), SHOT_W, SHOT_H, colours, svg, png[0], html,
				       png[1], png[2]);
	ck_assert_msg(r.status == 0, "render-shot.js with %s: status %d: %s", b, r.status, r.err);
	struct tj_node out;
	struct tj_parser ps;
	ck_assert_msg(tj_parse_doc(&ps, r.out, strlen(r.out), &out) == 0, "render-shot.js's output: %s", ps.err);
	const struct tj_node *shots = ma_rt_jarr(&out, "shots");
	ck_assert_uint_eq(shots->n, 3);
	for (unsigned i = 0; i < 3; i++) {
		const struct tj_node *s = &shots->items[i];
		check_png(png[i]);
		ck_assert_int_eq(ma_rt_jint(s, "width"), SHOT_W);
		ck_assert_int_eq(ma_rt_jint(s, "height"), SHOT_H);
		/* Not a blank page: a title line alone inks a few thousand pixels. */
		ck_assert_msg(ma_rt_jint(s, "ink") > 10000, "%s: only %lld pixels differ from the background", png[i],
			      ma_rt_jint(s, "ink"));
	}
	const struct tj_node *cov = tj_get(&shots->items[0], "colours");
	ck_assert_ptr_nonnull(cov);
	/* The live run's two outer bubbles (g1 and g2, g3 inside g2). */
	ck_assert_msg(cov->n == 2, "%u bubble colours measured (%s), not 2", cov->n, colours);
	for (unsigned k = 0; k < cov->n; k++) {
		long long px = ma_rt_jint(cov, cov->keys[k]);
		ck_assert_msg(px > 16 * 12, "bubble colour %s covers %lld pixels of the snapshot: no more than its swatch",
			      cov->keys[k], px);
	}
	/* The cursor, 2 pixels wide over the 4 VPs' rows of 14, left its place and drew at the
	 * new one. */
	long long moved = ma_rt_jint(&shots->items[2], "changed");
	ck_assert_msg(moved >= 2 * 2 * 4 * 14, "the movie changed by %lld pixels when its slider moved", moved);
	same_as_stand_in(&shots->items[1], html, 0);
	same_as_stand_in(&shots->items[2], html, 5000);
	tj_node_free(&out);
	ma_rt_run_free(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("render_command");
	TCase *tc = tcase_create("command");
	/* Large traces and 1024-VP simulations, several times slower under the sanitizers. */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, live_run);
	tcase_add_test(tc, bad_inputs);
	tcase_add_test(tc, usage_errors);
	tcase_add_test(tc, deterministic);
	tcase_add_test(tc, output_to_a_device);
	tcase_add_test(tc, browser_screenshot);
	suite_add_tcase(s, tc);
	return ma_rt_main("check_render_command", s);
}
