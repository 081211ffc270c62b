/*
 * The pages `marcel-render movie` writes, from what marcel-render-trace.c read: the
 * document (title, notes and legend, readable without the script), the data it embeds
 * (<script id="data" type="application/json">: vps, threads, groups, palette, and per VP
 * the slices [start, end, thread...], idle periods [start, end...] and hwprio levels
 * [time, level...], times in ns from the trace's first event; events [[time, vp,
 * text]...]), and the player that reads it: its CSS and script. Nothing is fetched: the
 * page works offline, from a file.
 *
 * The player's strings go into the page as they are: they must not contain "</" nor "]]>"
 * (the script sits in a CDATA section so that the page is well-formed XML), and the CSS
 * no '<' or '&'.
 */
#include <stdio.h>
#include "marcel-render.h"

/* ---- the player ---- */

static const char mr_page_css[] =
	"body{font-family:sans-serif;margin:12px;color:#222}"
	"h1{font-size:18px;margin:0 0 4px}"
	".note{font-size:12px;color:#555;margin:2px 0;max-width:70em}"
	"#summary{margin:2px 0;font-size:13px}"
	"#legend{margin:6px 0;font-size:12px}"
	".key{display:inline-block;margin-right:14px}"
	".sw{display:inline-block;width:14px;height:10px;margin-right:4px;vertical-align:middle;border:1px solid #999}"
	".sw.idle{background:#e6e6e6}"
	"#controls{margin:8px 0;display:flex;align-items:center;gap:10px}"
	"#slider{flex:1}"
	"#time{font-family:monospace;min-width:120px}"
	"#vps{display:grid;grid-template-columns:repeat(auto-fill,minmax(130px,1fr));gap:4px;margin:8px 0}"
	"#vps.small{grid-template-columns:repeat(auto-fill,minmax(70px,1fr));gap:2px}"
	".vp{border:1px solid #bbb;border-radius:4px;padding:2px 3px;font-family:monospace;font-size:11px;"
	"display:flex;gap:4px;align-items:center;overflow:hidden}"
	".vp .name{font-weight:bold;min-width:34px}"
	".chip{padding:0 4px;border-radius:3px;min-width:22px;text-align:center;background:#fff}"
	".chip.idle{color:#999;background:#e6e6e6}"
	".hw{margin-left:auto;padding:0 3px;border-radius:2px;background:#eee}"
	".hw.up{background:#f4a6a6}"
	".hw.down{background:#a6c8f4}"
	"canvas{border:1px solid #ccc;display:block;max-width:100%;cursor:crosshair}"
	"#log{font-family:monospace;font-size:11px;white-space:pre;margin-top:8px;color:#333}";

static const char mr_page_js[] =
	"(function () {\n"
	"'use strict';\n"
	"var D = JSON.parse(document.getElementById('data').textContent);\n"
	"var NV = D.vps.length, span = Math.max(D.span, 1), STEPS = 10000, PLAY_MS = 20000;\n"
	"function colourOf(ti) {\n"
	"  var g = D.threads[ti][2];\n"
	"  return g < 0 ? D.none : D.palette[g % D.palette.length];\n"
	"}\n"
	"function ink(c) {\n"
	"  var r = parseInt(c.substr(1, 2), 16), g = parseInt(c.substr(3, 2), 16), b = parseInt(c.substr(5, 2), 16);\n"
	"  return 299 * r + 587 * g + 114 * b > 140000 ? '#000' : '#fff';\n"
	"}\n"
	"/* The last entry (of k numbers each) starting at or before t, -1 if none. */\n"
	"function lastAt(a, k, t) {\n"
	"  var lo = 0, hi = a.length / k - 1, r = -1;\n"
	"  while (lo <= hi) {\n"
	"    var mid = (lo + hi) >> 1;\n"
	"    if (a[mid * k] <= t) { r = mid; lo = mid + 1; } else { hi = mid - 1; }\n"
	"  }\n"
	"  return r;\n"
	"}\n"
	"function fmt(ns) {\n"
	"  if (span >= 1e9) return (ns / 1e9).toFixed(3) + ' s';\n"
	"  if (span >= 1e6) return (ns / 1e6).toFixed(3) + ' ms';\n"
	"  return (ns / 1e3).toFixed(3) + ' us';\n"
	"}\n"
	"function levelText(l) { return 'hw ' + (l > 0 ? '+' + l : l); }\n"
	"/* What VP v does at t: the thread it runs (index, -1), idle or not, its level. */\n"
	"function stateAt(v, t) {\n"
	"  var s = D.slices[v], i = lastAt(s, 3, t), run = -1;\n"
	"  if (i >= 0 && t < s[i * 3 + 1]) run = s[i * 3 + 2];\n"
	"  var id = D.idle[v], j = lastAt(id, 2, t);\n"
	"  var h = D.hw[v], k = lastAt(h, 2, t);\n"
	"  return { run: run, idle: j >= 0 && t < id[j * 2 + 1], level: k >= 0 ? h[k * 2 + 1] : 0 };\n"
	"}\n"
	"var grid = document.getElementById('vps'), cells = [];\n"
	"if (NV > 64) grid.className = 'small';\n"
	"for (var v = 0; v < NV; v++) {\n"
	"  var c = document.createElement('div'), n = document.createElement('span');\n"
	"  var chip = document.createElement('span'), hw = document.createElement('span');\n"
	"  c.className = 'vp'; n.className = 'name'; chip.className = 'chip'; hw.className = 'hw';\n"
	"  n.textContent = D.vps[v];\n"
	"  c.appendChild(n); c.appendChild(chip); c.appendChild(hw); grid.appendChild(c);\n"
	"  cells.push({ chip: chip, hw: hw, key: null });\n"
	"}\n"
	"var cv = document.getElementById('timeline'), ctx = cv.getContext('2d');\n"
	"var W = Math.max(600, Math.min(1600, (document.body.clientWidth || 1200) - 4));\n"
	"var rowh = Math.max(1, Math.min(14, Math.floor(480 / NV))), AXIS = 16, H = NV * rowh + AXIS;\n"
	"cv.width = W; cv.height = H;\n"
	"function xOf(ns) { return ns / span * W; }\n"
	"/* The timeline without the cursor, drawn once. */\n"
	"var bg = document.createElement('canvas');\n"
	"bg.width = W; bg.height = H;\n"
	"(function () {\n"
	"  var b = bg.getContext('2d'), gap = rowh > 3 ? 1 : 0;\n"
	"  b.fillStyle = '#fff'; b.fillRect(0, 0, W, H);\n"
	"  for (var v = 0; v < NV; v++) {\n"
	"    var y = v * rowh, a = D.idle[v], i;\n"
	"    b.fillStyle = '#e6e6e6';\n"
	"    for (i = 0; i < a.length; i += 2) b.fillRect(xOf(a[i]), y, Math.max(1, xOf(a[i + 1]) - xOf(a[i])), rowh - gap);\n"
	"    a = D.slices[v];\n"
	"    for (i = 0; i < a.length; i += 3) {\n"
	"      b.fillStyle = colourOf(a[i + 2]);\n"
	"      b.fillRect(xOf(a[i]), y, Math.max(1, xOf(a[i + 1]) - xOf(a[i])), rowh - gap);\n"
	"    }\n"
	"    a = D.hw[v];\n"
	"    if (rowh >= 6) for (i = 0; i < a.length; i += 2) {\n"
	"      var end = i + 2 < a.length ? a[i + 2] : span;\n"
	"      if (a[i + 1] === 0) continue;\n"
	"      b.fillStyle = a[i + 1] > 0 ? '#d62728' : '#1f77b4';\n"
	"      b.fillRect(xOf(a[i]), y + rowh - gap - 2, Math.max(1, xOf(end) - xOf(a[i])), 2);\n"
	"    }\n"
	"  }\n"
	"  b.fillStyle = '#333'; b.font = '10px monospace';\n"
	"  for (var k = 0; k <= 4; k++) {\n"
	"    var x = k * (W - 1) / 4;\n"
	"    b.fillRect(x, NV * rowh, 1, 4);\n"
	"    b.textAlign = k === 0 ? 'left' : k === 4 ? 'right' : 'center';\n"
	"    b.fillText(fmt(k * span / 4), x, NV * rowh + 13);\n"
	"  }\n"
	"})();\n"
	"var slider = document.getElementById('slider'), timeEl = document.getElementById('time');\n"
	"var logEl = document.getElementById('log'), btn = document.getElementById('play');\n"
	"var speedEl = document.getElementById('speed'), t = 0, playing = false, last = 0;\n"
	"function update() {\n"
	"  for (var v = 0; v < NV; v++) {\n"
	"    var s = stateAt(v, t), c = cells[v], key = s.run + '/' + s.idle + '/' + s.level;\n"
	"    if (c.key === key) continue;\n"
	"    c.key = key;\n"
	"    if (s.run >= 0) {\n"
	"      var th = D.threads[s.run], col = colourOf(s.run);\n"
	"      c.chip.textContent = String(th[0]); c.chip.className = 'chip';\n"
	"      c.chip.style.background = col; c.chip.style.color = ink(col);\n"
	"      c.chip.title = 'thread ' + th[0] + ': ' + th[1];\n"
	"    } else {\n"
	"      c.chip.textContent = s.idle ? 'idle' : '-'; c.chip.className = s.idle ? 'chip idle' : 'chip';\n"
	"      c.chip.style.background = ''; c.chip.style.color = ''; c.chip.title = '';\n"
	"    }\n"
	"    c.hw.textContent = levelText(s.level);\n"
	"    c.hw.className = s.level > 0 ? 'hw up' : s.level < 0 ? 'hw down' : 'hw';\n"
	"  }\n"
	"  timeEl.textContent = fmt(t) + ' / ' + fmt(span);\n"
	"  slider.value = String(Math.round(t / span * STEPS));\n"
	"  /* The log: the last twelve events at or before t. */\n"
	"  var e = -1, lo = 0, hi = D.events.length - 1, lines = [];\n"
	"  while (lo <= hi) {\n"
	"    var mid = (lo + hi) >> 1;\n"
	"    if (D.events[mid][0] <= t) { e = mid; lo = mid + 1; } else { hi = mid - 1; }\n"
	"  }\n"
	"  for (var i = Math.max(0, e - 11); i <= e; i++) {\n"
	"    var ev = D.events[i];\n"
	"    lines.push(fmt(ev[0]) + '  ' + (ev[1] >= 0 ? D.vps[ev[1]] : 'outside') + '  ' + ev[2]);\n"
	"  }\n"
	"  logEl.textContent = lines.length ? lines.join('\\n') : '(no scheduler event yet)';\n"
	"  ctx.drawImage(bg, 0, 0);\n"
	"  ctx.fillStyle = '#000'; ctx.fillRect(Math.min(W - 2, xOf(t)), 0, 2, NV * rowh);\n"
	"}\n"
	"function frame(now) {\n"
	"  if (!playing) return;\n"
	"  t += (now - last) / PLAY_MS * span * Number(speedEl.value);\n"
	"  last = now;\n"
	"  if (t >= span) { t = span; playing = false; btn.textContent = 'Play'; }\n"
	"  update();\n"
	"  if (playing) requestAnimationFrame(frame);\n"
	"}\n"
	"function toggle() {\n"
	"  playing = !playing;\n"
	"  btn.textContent = playing ? 'Pause' : 'Play';\n"
	"  if (playing) {\n"
	"    if (t >= span) t = 0;\n"
	"    last = performance.now();\n"
	"    requestAnimationFrame(frame);\n"
	"  }\n"
	"}\n"
	"btn.addEventListener('click', toggle);\n"
	"slider.addEventListener('input', function () { t = Number(slider.value) / STEPS * span; update(); });\n"
	"function seek(ev) {\n"
	"  var r = cv.getBoundingClientRect();\n"
	"  t = Math.max(0, Math.min(span, (ev.clientX - r.left) / r.width * span));\n"
	"  update();\n"
	"}\n"
	"var dragging = false;\n"
	"cv.addEventListener('mousedown', function (ev) { dragging = true; seek(ev); });\n"
	"window.addEventListener('mouseup', function () { dragging = false; });\n"
	"cv.addEventListener('mousemove', function (ev) { if (dragging) seek(ev); });\n"
	"document.addEventListener('keydown', function (ev) {\n"
	"  if (ev.key === ' ' && ev.target === document.body) { ev.preventDefault(); toggle(); }\n"
	"});\n"
	"update();\n"
	"})();\n";

/* ---- the document and its data ---- */

/* Per VP, the flattened list of slices (start, end, thread) or idle periods (start, end);
 * the arrays are sorted by VP, then time. */
static void mr_json_spans(FILE *f, const struct mr_movie *m, const struct mr_slice *a, unsigned n, int with_thread)
{
	unsigned i = 0;
	fputc('[', f);
	for (unsigned v = 0; v < m->nb_vps; v++) {
		fputs(v ? ",[" : "[", f);
		for (int first = 1; i < n && a[i].vp == (int)v; i++) {
			if (!a[i].keep)
				continue;
			fprintf(f, "%s%lld,%lld", first ? "" : ",", a[i].s, a[i].e);
			if (with_thread)
				fprintf(f, ",%d", a[i].thread);
			first = 0;
		}
		fputc(']', f);
	}
	fputc(']', f);
}

/* Per VP, the level changes (time, level). */
static void mr_json_levels(FILE *f, const struct mr_movie *m)
{
	unsigned i = 0;
	fputc('[', f);
	for (unsigned v = 0; v < m->nb_vps; v++) {
		fputs(v ? ",[" : "[", f);
		for (int first = 1; i < m->nb_hw && m->hw[i].vp == (int)v; i++, first = 0)
			fprintf(f, "%s%lld,%d", first ? "" : ",", m->hw[i].ts, m->hw[i].value);
		fputc(']', f);
	}
	fputc(']', f);
}

/* The notes the page shows above the player (also written into the data). */
static unsigned mr_notes(const struct mr_movie *m, char notes[][320])
{
	unsigned n = 0;
	if (m->by_thread)
		snprintf(notes[n++], 320, "This trace records no bubble membership (no \"bubble insert\" of a thread): "
					  "threads are coloured by thread, not by bubble.");
	else
		snprintf(notes[n++], 320, "Threads are coloured by their outermost explicit bubble (not counting one that holds "
					  "every thread in bubbles), from the trace's \"bubble insert\" events: a thread's "
					  "bubble is the last it was inserted into.");
	unsigned long kept = m->nb_slices < MR_MAX_SLICES ? m->nb_slices : MR_MAX_SLICES;
	if (kept < m->nb_slices)
		snprintf(notes[n++], 320, "Large trace: %lu of %u thread slices are shown; the %lu shorter than %lld ns were "
					  "left out (gaps in the timeline, not idle time).",
			 kept, m->nb_slices, m->nb_slices - kept, m->slice_cut);
	if (m->ev_total > m->nb_ev)
		snprintf(notes[n++], 320, "The event log holds the first %u of %lu events.", m->nb_ev, m->ev_total);
	if (m->hw_total > m->nb_hw)
		snprintf(notes[n++], 320, "Only the first %u of %lu hwprio level changes are shown.", m->nb_hw, m->hw_total);
	if (m->pauses)
		snprintf(notes[n++], 320, "Recording was paused %lu time(s) (marcel_trace_off): nothing is known of those "
					  "periods.", m->pauses);
	return n;
}

static void mr_page_data(FILE *f, const struct mr_movie *m, char notes[][320], unsigned nb_notes)
{
	fputs("{\"file\":", f);
	mr_jstr(f, m->file);
	fputs(",\"process\":", f);
	mr_jstr(f, m->process);
	fprintf(f, ",\"span\":%lld,\"colour_by\":\"%s\",\"palette\":[", m->t_end, m->by_thread ? "thread" : "bubble");
	for (unsigned i = 0; i < MR_NB_COLOURS; i++)
		fprintf(f, "%s\"%s\"", i ? "," : "", mr_palette[i]);
	fprintf(f, "],\"none\":\"%s\",\n\"vps\":[", MR_NO_GROUP);
	for (unsigned v = 0; v < m->nb_vps; v++)
		fprintf(f, "%s\"VP%u\"", v ? "," : "", v);
	fputs("],\n\"threads\":[", f);
	for (unsigned i = 0; i < m->nb_thr; i++) {
		char name[48];
		snprintf(name, sizeof(name), "thread %llu", (unsigned long long)m->thr[i].uid);
		fprintf(f, "%s[%llu,", i ? "," : "", (unsigned long long)m->thr[i].uid);
		mr_jstr(f, m->thr[i].name ? m->thr[i].name : name);
		fprintf(f, ",%d]", m->thr[i].group);
	}
	fputs("],\n\"groups\":[", f);
	for (unsigned g = 0; g < m->nb_groups; g++) {
		const struct mr_bub *b = &m->bub[m->groups[g]];
		fprintf(f, "%s[\"bubble #%llu\",%ld]", g ? "," : "", (unsigned long long)(b->uid & ~MR_TAG), b->nb_threads);
	}
	fputs("],\n\"slices\":", f);
	mr_json_spans(f, m, m->slices, m->nb_slices, 1);
	fputs(",\n\"idle\":", f);
	mr_json_spans(f, m, m->idle, m->nb_idle, 0);
	fputs(",\n\"hw\":", f);
	mr_json_levels(f, m);
	fputs(",\n\"events\":[", f);
	for (unsigned i = 0; i < m->nb_ev; i++) {
		fprintf(f, "%s[%lld,%d,", i ? ",\n" : "", m->ev[i].ts, m->ev[i].vp);
		mr_jstr(f, m->ev[i].text);
		fputc(']', f);
	}
	fputs("],\n\"notes\":[", f);
	for (unsigned i = 0; i < nb_notes; i++) {
		fputs(i ? "," : "", f);
		mr_jstr(f, notes[i]);
	}
	unsigned long kept = m->nb_slices < MR_MAX_SLICES ? m->nb_slices : MR_MAX_SLICES;
	fprintf(f, "],\n\"counts\":{\"trace_events\":%lu,\"slices\":%u,\"slices_shown\":%lu,\"idle\":%u,\"hwprio\":%lu,"
		   "\"hwprio_shown\":%u,\"events\":%lu,\"events_shown\":%u}}",
		m->sum.nb_events, m->nb_slices, kept, m->nb_idle, m->hw_total, m->nb_hw, m->ev_total, m->nb_ev);
}

/* The page's static part: title, notes and legend, so they read without the script. */
static void mr_page_head(FILE *f, const struct mr_movie *m, char notes[][320], unsigned nb_notes)
{
	fputs("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
	      "<title>marcel movie: ", f);
	mr_xml(f, m->file);
	fprintf(f, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>marcel movie: ", mr_page_css);
	mr_xml(f, m->file);
	fputs("</h1>\n<p id=\"summary\">", f);
	mr_xml(f, m->process[0] ? m->process : "(unnamed process)");
	fprintf(f, ": %u VPs, %u threads, %lu trace events over %.3f ms</p>\n", m->nb_vps, m->nb_thr, m->sum.nb_events,
		m->t_end / 1e6);
	for (unsigned i = 0; i < nb_notes; i++) {
		fputs("<p class=\"note\">", f);
		mr_xml(f, notes[i]);
		fputs("</p>\n", f);
	}
	fputs("<div id=\"legend\">", f);
	for (unsigned g = 0; g < m->nb_groups && g < MR_LEGEND_GROUPS; g++) {
		const struct mr_bub *b = &m->bub[m->groups[g]];
		fprintf(f, "<span class=\"key\"><span class=\"sw\" style=\"background:%s\"></span>bubble #%llu (%ld thread%s)</span>",
			mr_colour((int)g), (unsigned long long)(b->uid & ~MR_TAG), b->nb_threads, b->nb_threads > 1 ? "s" : "");
	}
	if (m->nb_groups > MR_LEGEND_GROUPS)
		fprintf(f, "<span class=\"key\">and %u more bubbles (colours repeat every %zu)</span>",
			m->nb_groups - MR_LEGEND_GROUPS, MR_NB_COLOURS);
	if (!m->by_thread)
		fprintf(f, "<span class=\"key\"><span class=\"sw\" style=\"background:%s\"></span>in no bubble that tells threads "
			   "apart</span>", MR_NO_GROUP);
	fputs("<span class=\"key\"><span class=\"sw idle\"></span>idle</span></div>\n", f);
	fputs("<div id=\"controls\"><button id=\"play\" type=\"button\">Play</button>"
	      "<input id=\"slider\" type=\"range\" min=\"0\" max=\"10000\" step=\"1\" value=\"0\"/>"
	      "<span id=\"time\"></span><label>speed <select id=\"speed\"><option value=\"0.25\">0.25x</option>"
	      "<option value=\"1\" selected=\"selected\">1x</option><option value=\"4\">4x</option>"
	      "<option value=\"16\">16x</option></select></label></div>\n"
	      "<div id=\"vps\"></div>\n<canvas id=\"timeline\" width=\"1200\" height=\"100\"></canvas>\n"
	      "<div id=\"log\"></div>\n<noscript><p class=\"note\">The player needs JavaScript.</p></noscript>\n", f);
}

void mr_page(FILE *f, const struct mr_movie *m)
{
	char notes[8][320];
	unsigned nb_notes = mr_notes(m, notes);
	mr_page_head(f, m, notes, nb_notes);
	fputs("<script type=\"application/json\" id=\"data\">", f);
	mr_page_data(f, m, notes, nb_notes);
	/* The script as CDATA behind comments: the page is well-formed XML too (xmllint
	 * checks it so), and HTML parsers see two comment lines. */
	fprintf(f, "</script>\n<script>//<![CDATA[\n%s//]]></script>\n</body>\n</html>\n", mr_page_js);
}
