// Runs the player of a page written by `marcel-render movie` under node, on a stand-in
// for the few DOM calls it makes, moves its slider to POS (0..10000) and prints what the
// page then shows, as JSON: {"t": ns, "vps": [[chip, level], ...], "log": text}.
// check_render_movie compares that with what the embedded data says (when node is installed).
// Usage: node render-page.js PAGE.html POS
'use strict';
const fs = require('fs');
const html = fs.readFileSync(process.argv[2], 'utf8');
const data = html.match(/<script type="application\/json" id="data">([\s\S]*?)<\/script>/);
const code = html.match(/<script>\/\/<!\[CDATA\[\n([\s\S]*?)\/\/\]\]><\/script>/);
if (!data || !code) {
	console.error('render-page.js: no data or no player in ' + process.argv[2]);
	process.exit(1);
}
const noop = () => {};
const ctx2d = new Proxy({}, { get: (o, k) => (k in o ? o[k] : noop), set: (o, k, v) => ((o[k] = v), true) });
function element(tag) {
	return {
		tagName: tag, children: [], style: {}, className: '', textContent: '', title: '', value: '0', listeners: {},
		appendChild(c) { this.children.push(c); return c; },
		addEventListener(type, f) { (this.listeners[type] = this.listeners[type] || []).push(f); },
		getContext() { return ctx2d; },
		getBoundingClientRect() { return { left: 0, width: this.width || 1200 }; },
	};
}
const ids = {
	data: Object.assign(element('script'), { textContent: data[1] }),
	vps: element('div'), timeline: element('canvas'), slider: element('input'), time: element('span'),
	log: element('div'), play: element('button'), speed: Object.assign(element('select'), { value: '1' }),
};
global.document = {
	getElementById: (id) => ids[id], createElement: element, addEventListener: noop,
	body: Object.assign(element('body'), { clientWidth: 1200 }),
};
global.window = { addEventListener: noop };
global.performance = { now: () => 0 };
global.requestAnimationFrame = noop;
new Function(code[1])();
ids.slider.value = process.argv[3];
for (const f of ids.slider.listeners.input || []) f();
const D = JSON.parse(data[1]);
const vps = ids.vps.children.map((c) => [c.children[1].textContent, c.children[2].textContent]);
const t = Number(process.argv[3]) / 10000 * Math.max(D.span, 1);
process.stdout.write(JSON.stringify({ t: t, vps: vps, log: ids.log.textContent }) + '\n');
