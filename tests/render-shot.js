// Takes screenshots of marcel-render's pictures in a headless Chromium driven through its
// DevTools protocol on a pipe (--remote-debugging-pipe: no port, no package beyond node),
// and says what each shows, for check_render_command to assert on. For every --page, the
// page is loaded at WIDTHxHEIGHT; each --shot after it saves a PNG, first moving the
// movie page's time slider to --at POS (0..10000) as a person's drag does (a value, then
// an "input" event). Each PNG is then read back and measured here (node has zlib, C here
// does not): its size, how many pixels differ from the top-left one (the background),
// how many have each of the --colours, how many differ from the page's first shot; for
// the movie page, what its VP chips and log say. Prints one JSON document:
//   {"shots":[{"png":F,"width":W,"height":H,"ink":N,"changed":N,"colours":{"#rrggbb":N},
//              "vps":[[chip,level]...],"log":text}...]}
// Usage: node render-shot.js BROWSER PROFILE_DIR WIDTH HEIGHT [--colours #rrggbb,...]
//             (--page FILE (--shot OUT.png [--at POS])...)...
'use strict';
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const { spawn } = require('child_process');

function fail(msg) {
	process.stderr.write('render-shot.js: ' + msg + '\n');
	process.exit(1);
}

// ---- the command line ----
const [browser, profile, width, height] = process.argv.slice(2, 6);
const W = Number(width), H = Number(height);
if (!browser || !profile || !(W > 0) || !(H > 0))
	fail('usage: node render-shot.js BROWSER PROFILE_DIR WIDTH HEIGHT [--colours C,...] (--page FILE (--shot OUT.png [--at POS])...)...');
const pages = [];
let colours = [];
for (let a = process.argv.slice(6); a.length; a = a.slice(2)) {
	const [opt, val] = a;
	if (val === undefined)
		fail(opt + ' needs a value');
	if (opt === '--colours')
		colours = val.split(',');
	else if (opt === '--page')
		pages.push({ file: path.resolve(val), shots: [] });
	else if (opt === '--shot' && pages.length)
		pages[pages.length - 1].shots.push({ png: val, at: null });
	else if (opt === '--at' && pages.length && pages[pages.length - 1].shots.length)
		pages[pages.length - 1].shots.slice(-1)[0].at = Number(val);
	else
		fail('unexpected ' + opt);
}

// ---- PNG: the 8-bit RGB or RGBA, non-interlaced pictures a browser writes ----
function paeth(a, b, c) {
	const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
	return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

// Returns { width, height, rgb: Buffer of width*height*3 }.
function readPng(file) {
	const b = fs.readFileSync(file);
	if (b.length < 33 || b.toString('latin1', 0, 8) !== '\x89PNG\r\n\x1a\n')
		fail(file + ': not a PNG');
	let w = 0, h = 0, bpp = 0;
	const idat = [];
	for (let o = 8; o + 8 <= b.length;) {
		const len = b.readUInt32BE(o), type = b.toString('latin1', o + 4, o + 8), d = b.subarray(o + 8, o + 8 + len);
		if (type === 'IHDR') {
			w = d.readUInt32BE(0);
			h = d.readUInt32BE(4);
			if (d[8] !== 8 || (d[9] !== 2 && d[9] !== 6) || d[12] !== 0)
				fail(file + ': depth ' + d[8] + ', colour type ' + d[9] + ', interlace ' + d[12] + ': not 8-bit RGB(A)');
			bpp = d[9] === 6 ? 4 : 3;
		} else if (type === 'IDAT') {
			idat.push(d);
		} else if (type === 'IEND') {
			break;
		}
		o += 12 + len;
	}
	const raw = zlib.inflateSync(Buffer.concat(idat)), stride = w * bpp;
	if (!bpp || raw.length !== h * (stride + 1))
		fail(file + ': ' + raw.length + ' bytes of pixels for ' + w + 'x' + h);
	const px = Buffer.alloc(h * stride), rgb = Buffer.alloc(w * h * 3);
	for (let y = 0; y < h; y++) {
		const f = raw[y * (stride + 1)], src = y * (stride + 1) + 1, row = y * stride;
		for (let x = 0; x < stride; x++) {
			const a = x >= bpp ? px[row + x - bpp] : 0, up = y ? px[row - stride + x] : 0;
			const c = x >= bpp && y ? px[row - stride + x - bpp] : 0;
			const pred = f === 0 ? 0 : f === 1 ? a : f === 2 ? up : f === 3 ? (a + up) >> 1 : f === 4 ? paeth(a, up, c) : -1;
			if (pred < 0)
				fail(file + ': filter ' + f + ' on row ' + y);
			px[row + x] = (raw[src + x] + pred) & 255;
		}
	}
	for (let i = 0; i < w * h; i++)
		px.copy(rgb, i * 3, i * bpp, i * bpp + 3);
	return { width: w, height: h, rgb: rgb };
}

function hex(rgb, i) {
	return '#' + rgb.subarray(i, i + 3).toString('hex');
}

function measure(pic, first) {
	const n = pic.width * pic.height, bg = hex(pic.rgb, 0), count = {};
	let ink = 0, changed = 0;
	for (const c of colours)
		count[c] = 0;
	for (let i = 0; i < n * 3; i += 3) {
		const c = hex(pic.rgb, i);
		if (c !== bg)
			ink++;
		if (c in count)
			count[c]++;
		if (first && first.rgb.compare(pic.rgb, i, i + 3, i, i + 3))
			changed++;
	}
	return { width: pic.width, height: pic.height, ink: ink, changed: changed, colours: count };
}

// ---- the browser, through the DevTools protocol: JSON messages ended by a NUL ----
const chrome = spawn(browser, ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
	'--disable-background-networking', '--disable-component-update', '--disable-sync', '--hide-scrollbars',
	'--user-data-dir=' + profile, '--window-size=' + W + ',' + H, '--remote-debugging-pipe', 'about:blank'],
{ stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
let said = '';
chrome.stderr.on('data', (d) => { said = (said + d).slice(-4000); });
chrome.on('exit', (code, sig) => {
	if (!done)
		fail(browser + ' ended (' + (sig || code) + ') before the shots were taken; it said:\n' + said);
});
chrome.on('error', (e) => fail(browser + ': ' + e.message));
let done = false, nextId = 1, inbox = '';
const waiting = new Map(), events = [];
const out = chrome.stdio[3], inp = chrome.stdio[4];
inp.on('data', (d) => {
	inbox += d;
	for (let z; (z = inbox.indexOf('\0')) >= 0; inbox = inbox.slice(z + 1)) {
		const m = JSON.parse(inbox.slice(0, z));
		const w = waiting.get(m.id);
		if (w) {
			waiting.delete(m.id);
			m.error ? w.reject(new Error(w.method + ': ' + m.error.message)) : w.resolve(m.result);
		} else if (m.method) {
			for (const e of events.filter((e) => e.method === m.method && e.session === m.sessionId))
				e.resolve(m.params);
		}
	}
});
function send(method, params, session) {
	const id = nextId++;
	out.write(JSON.stringify({ id: id, method: method, params: params || {}, sessionId: session }) + '\0');
	return new Promise((resolve, reject) => waiting.set(id, { method: method, resolve: resolve, reject: reject }));
}
function next(method, session) {
	return new Promise((resolve) => {
		const e = { method: method, session: session, resolve: (p) => { events.splice(events.indexOf(e), 1); resolve(p); } };
		events.push(e);
	});
}

// What the movie page shows: per VP its chip and level, and the log.
const SHOWN = '(function () { var v = document.getElementById("vps"), l = document.getElementById("log");' +
	'  return JSON.stringify(v ? { vps: Array.from(v.children).map(function (c) {' +
	'    return [c.children[1].textContent, c.children[2].textContent]; }), log: l.textContent } : {}); })()';

async function shoot() {
	const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
	const { sessionId: s } = await send('Target.attachToTarget', { targetId: targetId, flatten: true });
	await send('Page.enable', {}, s);
	await send('Emulation.setDeviceMetricsOverride', { width: W, height: H, deviceScaleFactor: 1, mobile: false }, s);
	const shots = [];
	for (const p of pages) {
		const loaded = next('Page.loadEventFired', s);
		const nav = await send('Page.navigate', { url: 'file://' + p.file }, s);
		if (nav.errorText)
			fail(p.file + ': ' + nav.errorText);
		await loaded;
		let first = null;
		for (const sh of p.shots) {
			if (sh.at !== null) {
				const moved = await send('Runtime.evaluate', { returnByValue: true, expression:
					'(function () { var s = document.getElementById("slider"); if (!s) return false;' +
					' s.value = "' + sh.at + '"; s.dispatchEvent(new Event("input")); return true; })()' }, s);
				if (!moved.result.value)
					fail(p.file + ': no time slider to move');
			}
			const shown = JSON.parse((await send('Runtime.evaluate', { expression: SHOWN, returnByValue: true }, s)).result.value);
			const png = await send('Page.captureScreenshot', { format: 'png' }, s);
			fs.writeFileSync(sh.png, Buffer.from(png.data, 'base64'));
			const pic = readPng(sh.png);
			shots.push(Object.assign({ png: sh.png }, measure(pic, first), shown));
			first = first || pic;
		}
	}
	return shots;
}

const timer = setTimeout(() => fail('no answer from ' + browser + ' in 60 s; it said:\n' + said), 60000);
shoot().then((shots) => {
	done = true;
	clearTimeout(timer);
	process.stdout.write(JSON.stringify({ shots: shots }) + '\n');
	send('Browser.close').catch(() => {});
	const kill = setTimeout(() => chrome.kill('SIGKILL'), 5000);
	chrome.on('exit', () => clearTimeout(kill));
}, (e) => fail(e.message + '; ' + browser + ' said:\n' + said));
