"use strict";
// stax web: one page over one run. State lives here; the server only answers queries.
// What the user looks at (window, thread, transforms, mode, zoom, selection, search) is
// kept in the page's URL, so a link opens the same view.

// Errors the page met, for tests and the console.
window.staxErrors = [];
addEventListener("error", (e) => window.staxErrors.push(String(e.message)));
addEventListener("unhandledrejection", (e) => window.staxErrors.push(String(e.reason)));

const token = document.querySelector('meta[name="stax-token"]').content;
const $ = (sel) => document.querySelector(sel);

// view is what the URL keeps; see readURL and writeURL for its parameters.
const view = {
  from: null, // the window, seconds from the run's start (numbers), or as written in the URL
  to: null,
  tid: 0,
  pid: 0,
  focus: "", // stack transforms, as the API takes them (ignore and hide: one expression each here)
  ignore: [],
  hide: [],
  collapse: [],
  fold: false,
  python: false, // only Python functions and the native leaf (the API's python)
  inverted: false,
  zoom: [], // the zoomed frame's path: keys (or, from a URL, function names), root's children first
  sel: null, // the selected frame's path, as zoom; null: none
  search: "",
  sort: "self",
  code: "", // the function in the code panel
  version: 0,
  diff: true, // colour by change (when the server has a base)
  mode: "cpu", // what the flame graph and top weigh: cpu (samples), off_cpu or wall (nanoseconds)
  colour: "", // "func": colour by function (colours.js)
  event: "", // the event every panel counts, of a run that sampled several; "": the first
  weigh: "", // a counter read with each sample (stax record --counters) the flame graph's widths and the top table's order weigh; "": samples
  weight: "", // a tracepoint's numeric field whose sums they weigh instead (the API's weight; samples.js); "": none
};

const state = {
  summary: null,
  early: null, // the answers askEarly asked for, by name: { key, promise }
  linkRun: "", // the run the URL names
  flame: null,
  timeline: null,
  top: null,
  threads: null,
  changes: null,
  keys: {}, // per view, the query of the answer held
  flameEls: [],
  flameCanvas: null,
  loadedOnce: false,
};

// Figures a test (or a curious user, from the console) can read.
const perf = (window.staxPerf = {
  firstFlameMs: null, // from navigation start to the first flame graph on screen
  flameRenderMs: [], // each flame graph render
  changes: [], // {what, ms, answerMs}: from a change of the view to its flame graph on screen, and to its answers
  lastBytes: {}, // bytes of the last answer per view
  updateBytes: [], // bytes fetched by each live update
  updates: 0,
  refreshes: 0, // view refreshes finished (flame graph and top drawn)
  settled: 0, // refreshes whose every panel has been drawn
});

// The flame graph's frames as drawn, for tests and the console: x, y, w, h are CSS pixels
// in the viewport.
window.staxFrames = () => {
  const box = state.flameCanvas ? state.flameCanvas.getBoundingClientRect() : { left: 0, top: 0 };
  return (state.flameEls || []).map((f) => ({
    func: f.n.func, image: f.n.image, kind: f.n.kind, total: f.n.total, self: f.n.self, match: f.match, ancestor: f.ancestor,
    selected: f.selected, depth: f.depth, change: f.change, weight: weightOf(f.n), counters: f.n.counters,
    x: box.left + f.x, y: box.top + f.depth * ROW, w: f.w, h: ROW - 1,
  }));
};

const fmtSec = (s) => (typeof s === "number" ? (Math.round(s * 1000) / 1000).toString() : String(s));
// One formatter, made once: toLocaleString makes one at each call, which a big run's
// tables and labels paid tens of milliseconds for.
const numberFormat = new Intl.NumberFormat("en-US");
const commas = (n) => numberFormat.format(Number(n));
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
// reQuote makes a name a regular expression matching it alone (Go's syntax, as JS's here).
const reQuote = (s) => "^" + s.replace(/[\\.+*?()|[\]{}^$]/g, "\\$&") + "$";
const pct = (n, of) => ((100 * n) / Math.max(of, 1)).toFixed(2) + "%";

async function api(path, params, signal) {
  const q = params instanceof URLSearchParams ? params : new URLSearchParams(params || {});
  const res = await fetch(`/api/${path}?${q}`, { headers: { "X-Stax-Token": token }, signal });
  const text = await res.text();
  perf.lastBytes[path] = text.length;
  let body = {};
  try {
    body = text ? JSON.parse(text) : {};
  } catch {
    throw new Error(`${path}: ${res.status} ${text.slice(0, 200)}`);
  }
  if (!res.ok) throw new Error(body.error || `${path}: ${res.status}`);
  body._bytes = text.length;
  return body;
}

// ---- the view's URL ----

function readURL() {
  const u = new URLSearchParams(location.search);
  const num = (k) => Number(u.get(k)) || 0;
  state.linkRun = u.get("run") || "";
  view.from = u.get("from");
  view.to = u.get("to");
  if (view.from === null && view.to !== null) view.from = "0";
  if (view.from !== null && view.to === null) view.to = "-0";
  view.tid = num("tid");
  view.pid = num("pid");
  view.focus = u.get("focus") || "";
  view.ignore = u.getAll("ignore").filter(Boolean);
  view.hide = u.getAll("hide").filter(Boolean);
  view.collapse = u.getAll("collapse_image").filter(Boolean);
  view.fold = u.get("fold_recursion") === "1";
  view.python = u.get("python") === "1";
  view.inverted = u.get("inverted") === "1";
  view.zoom = u.getAll("zoom");
  const sel = u.getAll("sel");
  view.sel = !u.has("sel") ? null : sel.length === 1 && sel[0] === "" ? [] : sel;
  view.search = u.get("search") || "";
  view.sort = u.get("sort") === "total" ? "total" : "self";
  view.code = u.get("code") || "";
  view.version = num("version");
  view.diff = u.get("diff") !== "0";
  view.mode = ["off_cpu", "wall"].includes(u.get("mode")) ? u.get("mode") : "cpu";
  view.colour = u.get("colour") === "func" ? "func" : "";
  view.event = u.get("event") || "";
  view.weigh = u.get("weigh") || "";
  view.weight = view.weigh ? "" : u.get("weight") || "";
  // The timeline's zoom (stackchart.js): what part of the run it and the stack chart show.
  const tlFrom = Number(u.get("tl_from")), tlTo = Number(u.get("tl_to"));
  const zoomed = u.has("tl_from") && u.has("tl_to") && tlFrom >= 0 && tlTo > tlFrom;
  tlZoom.from = zoomed ? tlFrom : null;
  tlZoom.to = zoomed ? tlTo : null;
}

// A path's elements in the URL are function names.
const urlPath = (p) => p.map((k) => k.split("\u0000")[0]);

function writeURL(push) {
  const u = new URLSearchParams();
  u.set("token", token);
  if (state.summary) u.set("run", state.summary.run);
  if (view.from !== null) {
    u.set("from", fmtSec(view.from));
    u.set("to", fmtSec(view.to));
  }
  if (view.tid) u.set("tid", view.tid);
  if (view.pid) u.set("pid", view.pid);
  if (view.focus) u.set("focus", view.focus);
  for (const v of view.ignore) u.append("ignore", v);
  for (const v of view.hide) u.append("hide", v);
  for (const v of view.collapse) u.append("collapse_image", v);
  if (view.fold) u.set("fold_recursion", "1");
  if (view.python) u.set("python", "1");
  if (view.inverted) u.set("inverted", "1");
  for (const k of urlPath(view.zoom)) u.append("zoom", k);
  if (view.sel) {
    if (view.sel.length === 0) u.set("sel", "");
    for (const k of urlPath(view.sel)) u.append("sel", k);
  }
  if (view.search) u.set("search", view.search);
  if (view.sort !== "self") u.set("sort", view.sort);
  if (view.code) u.set("code", view.code);
  if (view.version) u.set("version", view.version);
  if (!view.diff) u.set("diff", "0");
  if (view.mode !== "cpu") u.set("mode", view.mode);
  if (view.colour) u.set("colour", view.colour);
  if (view.event) u.set("event", view.event);
  if (view.weigh) u.set("weigh", view.weigh);
  if (view.weight) u.set("weight", view.weight);
  if (tlZoom.from !== null) {
    // To the microsecond: a zoom can be narrower than a millisecond.
    const us = (x) => String(Math.round(x * 1e6) / 1e6);
    u.set("tl_from", us(tlZoom.from));
    u.set("tl_to", us(tlZoom.to));
  }
  const url = `${location.pathname}?${u}`;
  if (url === location.pathname + location.search) return;
  if (push) history.pushState(null, "", url);
  else history.replaceState(null, "", url);
}

// combine joins expressions into one that matches what any of them does.
const combine = (list) => (list.length === 1 ? list[0] : list.map((e) => `(?:${e})`).join("|"));

// PARAMS is the one table of the API parameters the page sets from its view, named as
// the socket API's requests name them (api.TopRequest and the others): each gives its
// value for the query's options, or null to leave it out (an array: the parameter
// repeated).
const PARAMS = {
  from: (o) => (o.window && view.from !== null ? fmtSec(view.from) : null),
  to: (o) => (o.window && view.from !== null ? fmtSec(view.to) : null),
  tid: () => view.tid || null,
  pid: () => view.pid || null,
  focus: () => view.focus || null,
  ignore: () => (view.ignore.length ? combine(view.ignore) : null),
  hide: () => (view.hide.length ? combine(view.hide) : null),
  collapse_image: () => view.collapse,
  fold_recursion: () => (view.fold ? "1" : null),
  python: () => (view.python ? "1" : null),
  inverted: (o) => (o.inverted && view.inverted ? "1" : null),
  // Off-CPU and wall time are views of time, not samples (docs/off-cpu.md): every panel
  // asks in the view's mode.
  off_cpu: () => (view.mode === "off_cpu" ? "1" : null),
  wall: () => (view.mode === "wall" ? "1" : null),
  // The event counted (stax record -e A,B): every panel asks for the one chosen.
  event: () => view.event || null,
  // A tracepoint's field whose sums weigh the views that take it (flame and top; samples.js).
  weight: () => weightField() || null,
  // The panel's own, from its options: the timeline's size, the wakers' stacks.
  threads: (o) => o.threads ?? null,
  buckets: (o) => o.buckets ?? null,
  stacks: (o) => o.stacks ?? null,
};

// query is the API parameters of the view (PARAMS): with the window unless whole, the
// thread filter and the transforms, or only those named; then those of the panel asking,
// extra.
function query({ window = true, inverted = true, only = null, ...panel } = {}, extra = {}) {
  const q = new URLSearchParams();
  const o = { window, inverted, ...panel };
  for (const [name, get] of Object.entries(PARAMS)) {
    if (only && !only.includes(name)) continue;
    const v = get(o);
    if (Array.isArray(v)) for (const x of v) q.append(name, x);
    else if (v !== null && v !== undefined && v !== "") q.set(name, v);
  }
  for (const [name, v] of Object.entries(extra)) if (v !== null && v !== undefined && v !== "") q.set(name, v);
  return q;
}

// amount is a flame graph's weight as the mode counts it: samples, or milliseconds.
const amount = (v) => (view.mode === "cpu" ? commas(v) : `${commas(Math.round(v / 1e6))} ms`);
// amountUnit is amount with its unit always said: "12 samples", "12 ms", or weighed by a
// tracepoint's field, "12 count".
const amountUnit = (v) => (weightField() ? `${commas(v)} ${weightField()}` : view.mode === "cpu" ? `${commas(v)} ${v === 1 ? "sample" : "samples"}` : amount(v));

// ---- counters read with each sample (stax record --counters) ----

// counterNames are the counters the flame graph's answer carries on its nodes: none for a
// run recorded without --counters, in the off-CPU and wall modes, or for an event other
// than the first.
const counterNames = () => (state.flame && state.flame.counters) || [];

// weighIndex is the index, in the nodes' counters, of the counter the flame graph weighs;
// -1: samples (also where the answer lacks the counter the view names).
const weighIndex = () => (view.weigh ? counterNames().indexOf(view.weigh) : -1);

// weightOf is what a node weighs in the flame graph: its total, or what the counter j
// counted in the samples under it.
const weightOf = (n, j = weighIndex()) => (j < 0 ? n.total : (n.counters && n.counters[j]) || 0);

// ipcOf is the instructions per cycle of counters v (named names), as stax top prints it:
// "" where cycles and instructions are not both read, "-" where no cycle was counted.
function ipcOf(names, v) {
  const cyc = names.indexOf("cycles"), ins = names.indexOf("instructions");
  if (cyc < 0 || ins < 0 || !v) return "";
  return v[cyc] ? (v[ins] / v[cyc]).toFixed(2) : "-";
}

// counterLines says what each counter counted under a drawn frame, callees included, and
// in the frame itself where that is not zero (where the tree gives a self: see selfText),
// and the IPC of both where cycles and instructions were read.
function counterLines(f) {
  const names = counterNames();
  const n = f.n;
  if (!names.length || !n.counters) return [];
  const self = !view.inverted ? n.self_counters : f.path.length === 1 ? n.counters : null;
  const out = names.map((name, j) => `${name} ${commas(n.counters[j] || 0)}` + (self && self[j] ? ` (self ${commas(self[j])})` : ""));
  const ipc = ipcOf(names, n.counters);
  if (ipc) {
    const own = self ? ipcOf(names, self) : "";
    out.push(`IPC ${ipc}` + (own && own !== "-" ? ` (self ${own})` : ""));
  }
  return out;
}

// drawWeigh offers samples, each counter the view's answer carries and, in the CPU mode,
// each numeric field of the view's event where it is a tracepoint (samples.js), for the
// flame graph's widths and the top table's order; only where there is one of those. A
// field's value is "field:NAME". Beside the graph's and the table's headings, a tag says
// what they weigh.
function drawWeigh() {
  const names = counterNames();
  const fields = view.mode === "cpu" ? numericFields() : [];
  const label = $("#weigh-label");
  label.hidden = names.length === 0 && fields.length === 0;
  const what = weightField() ? `weighed by ${weightField()}` : weighIndex() >= 0 ? `weighed by ${view.weigh}` : "";
  for (const sel of ["#flame-weight", "#top-weight"]) {
    const tag = $(sel);
    if (tag.textContent !== what) tag.textContent = what;
    tag.hidden = !what;
    tag.title = weightField() ? `each function weighs the sum of ${weightField()} over its samples of ${eventName()} kept with their fields` : what ? `each function weighs what ${view.weigh} counted in its samples` : "";
  }
  if (label.hidden) return;
  const opts = ['<option value="">samples</option>', ...names.map((n) => `<option value="${esc(n)}">${esc(n)}</option>`)];
  if (fields.length) opts.push(`<optgroup label="${esc(eventName())}: sum of the field">${fields.map((f) => `<option value="field:${esc(f)}">${esc(f)}</option>`).join("")}</optgroup>`);
  const sel = $("#weigh");
  const html = opts.join("");
  if (sel.innerHTML !== html) sel.innerHTML = html;
  sel.value = weightField() ? `field:${weightField()}` : weighIndex() >= 0 ? view.weigh : "";
}

// setWeigh weighs the flame graph and sorts the top table by counter name, or by a
// tracepoint's field ("field:NAME"); "": samples.
function setWeigh(name) {
  const field = name.startsWith("field:") ? name.slice(6) : "";
  const counter = field ? "" : name;
  if (counter === view.weigh && field === view.weight) return;
  change("weigh", () => {
    view.weigh = counter;
    view.weight = field;
  });
}

// ---- status strip ----

function drawSummary(s) {
  state.summary = s;
  $("#run").textContent = `run ${s.run}` + (s.command && s.command.length ? ` · ${s.command.join(" ")}` : "");
  // The tab names the run, and what ran: several pages are told apart in the tab strip.
  const prog = s.command && s.command.length ? s.command[0].split("/").pop() + " · " : "";
  document.title = `${prog}run ${s.run}${s.live ? " (live)" : ""} · stax`;
  const st = $("#state");
  st.textContent = s.state;
  st.className = `state ${s.state}`;
  const item = (label, value, warn) => `<span class="${warn ? "warn" : ""}">${label} <b>${value}</b></span>`;
  $("#strip").innerHTML = [
    item("samples", `<span id="samples">${commas(s.samples)}</span>`),
    item("lost", commas(s.lost), s.lost > 0),
    item("elapsed", `${s.elapsed_sec.toFixed(1)} s`),
    item("threads", commas(s.threads)),
    item("JIT sources", `${commas(s.jit_sources)} (${commas(s.jit_functions)} functions)`),
    item("unnamed JIT samples", commas(s.jit_unnamed), s.jit_unnamed > 0),
    item("unknown samples", commas(s.unknown_samples), s.unknown_samples > 0),
    item("unresolved frames", commas(s.unresolved_frames), s.unresolved_frames > 0),
    // What would name the unknown samples, as stax status says it.
    s.unknown_samples > 0 && s.unknown_hint ? `<span class="fix" id="unknown-fix">${esc(s.unknown_hint)}</span>` : "",
  ].join("");
  drawEvents();
  const notice = $("#notice");
  if (state.linkRun && state.linkRun !== s.run) {
    notice.hidden = false;
    notice.textContent = `This link is for run ${state.linkRun}; this server shows run ${s.run}, and the view below is of run ${s.run}.`;
  }
}

// ---- events ----

// drawEvents offers the run's events, each with its samples, where it sampled several
// (stax record -e A,B): the one chosen is what every panel counts.
function drawEvents() {
  const evs = (state.summary && state.summary.events) || [];
  const label = $("#event-label");
  label.hidden = evs.length < 2 && !view.event;
  if (label.hidden) return;
  const opts = evs.map((e) => `<option value="${esc(e.name)}">${esc(e.name)} (${commas(e.samples)} ${e.samples === 1 ? "sample" : "samples"})</option>`);
  // A link may name an event this run did not sample: it stays chosen, and the panels say why they are empty.
  if (view.event && !evs.some((e) => e.name === view.event)) opts.push(`<option value="${esc(view.event)}">${esc(view.event)}</option>`);
  const sel = $("#event");
  const html = opts.join("");
  if (sel.innerHTML !== html) sel.innerHTML = html;
  sel.value = view.event || (evs[0] ? evs[0].name : "");
}

function setupEvents() {
  $("#event").addEventListener("change", (e) =>
    change("event", () => {
      const evs = (state.summary && state.summary.events) || [];
      // The first event is the default: a link names only another.
      view.event = evs.length && e.target.value === evs[0].name ? "" : e.target.value;
      // A field weighs the event that has it.
      if (view.weight && !numericFields().includes(view.weight)) view.weight = "";
      view.zoom = [];
      view.sel = null;
      state.top = null;
      loadThreads(); // the threads' counts are of the event too
    }),
  );
}

// eventText names the event a panel counts, as the CLI's headers do ("event page-faults
// (999 Hz: a sample per 239 on average)"): nothing for a run of the default event alone.
function eventText(ev) {
  if (!ev || (ev.of <= 1 && !ev.period && (ev.name === "cpu-clock" || ev.name === "cycles"))) return "";
  if (ev.period) return `event ${ev.name} (a sample every ${commas(ev.period)})`;
  const unit = ev.name === "cpu-clock" || ev.name === "task-clock" ? " ns" : "";
  return `event ${ev.name} (${ev.freq} Hz: a sample per ${commas(Math.round(ev.weight))}${unit} on average)`;
}

// setEventTag names, beside a panel's heading, the event of the answer it shows.
function setEventTag(sel, ev) {
  const el = $(sel);
  if (!el) return;
  const t = eventText(ev);
  if (el.textContent !== t) el.textContent = t;
  el.hidden = !t;
}

// ---- timeline ----

const TL = { label: 150, total: 40, row: 13, axis: 16, lane: 7, lanes: 4 };

function drawTimeline() {
  const tl = state.timeline;
  const el = $("#timeline");
  if (!tl) return;
  setEventTag("#timeline-event", tl.event);
  if (!tl.buckets) {
    el.innerHTML = `<p class="placeholder">${state.summary && state.summary.live ? "waiting for the first samples" : "no samples with times"}</p>`;
    state.tlGeom = null;
    return;
  }
  const W = Math.max(el.clientWidth, 300);
  const plotW = W - TL.label;
  // Off CPU and wall: each thread's state in each bucket (stax timeline --states), for the
  // threads with the most time running and off CPU.
  const st = view.mode !== "cpu" && state.states && !(state.states instanceof Error) ? state.states : null;
  state.tlStates = view.mode !== "cpu" ? state.states : null;
  const threads = st ? st.threads || [] : tl.threads || [];
  // The program's spans, in lanes under their thread (at most TL.lanes drawn).
  const spans = tl.spans || [];
  const lanes = {};
  for (const s of spans) lanes[s.tid] = Math.min(Math.max(lanes[s.tid] || 0, s.lane + 1), TL.lanes);
  const rowY = [];
  let yAt = TL.total;
  for (const t of threads) {
    rowY.push(yAt);
    yAt += TL.row + (lanes[t.tid] || 0) * TL.lane;
  }
  const H = yAt + TL.axis;
  const bw = plotW / tl.buckets;
  const span = tl.buckets * tl.bucket_sec;
  const xOf = (sec) => TL.label + ((sec - tl.start_sec) / span) * plotW;
  const maxTotal = Math.max(1, ...tl.total);
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">`];
  parts.push(`<text class="label" x="4" y="${TL.total - 4}">all threads</text>`);
  if (st && st.all) {
    // Off CPU and wall: every thread's time in each bucket, stacked by state (running at
    // the bottom), as tall as the bucket's sum against the fullest bucket's.
    const sums = st.all.map((b) => Object.values(b).reduce((a, v) => a + v, 0));
    const maxSum = Math.max(1, ...sums);
    st.all.forEach((b, i) => {
      const x1 = Math.max(xOf(st.start_sec + i * st.bucket_sec), TL.label);
      const x2 = Math.min(xOf(st.start_sec + (i + 1) * st.bucket_sec), W);
      if (x2 <= x1 || !sums[i]) return;
      let y = TL.total;
      for (const k of ["running", ...REASONS.filter((r) => r !== "on-cpu"), ...Object.keys(b).filter((r) => r !== "running" && !REASONS.includes(r))]) {
        if (!b[k]) continue;
        const h = (b[k] / maxSum) * (TL.total - 4);
        y -= h;
        const colour = k === "running" ? "on-cpu" : k;
        parts.push(`<rect class="all-state" data-state="${esc(k)}" data-i="${i}" x="${x1}" y="${y}" width="${Math.max(x2 - x1 - 0.5, 0.5)}" height="${h}" fill="var(--r-${esc(colour)}, var(--r-other))"><title>${esc(k)} · ${commas(Math.round(b[k] / 1e6))} ms</title></rect>`);
      }
    });
  } else {
    tl.total.forEach((c, i) => {
      if (!c) return;
      const h = (c / maxTotal) * (TL.total - 4);
      parts.push(`<rect x="${TL.label + i * bw}" y="${TL.total - h}" width="${Math.max(bw - 0.5, 0.5)}" height="${h}" fill="var(--bar)"/>`);
    });
  }
  threads.forEach((t, r) => {
    const y = rowY[r];
    const max = st ? 1 : Math.max(1, ...t.counts);
    parts.push(`<text class="label thread" data-tid="${t.tid}" data-pid="${t.pid}" x="4" y="${y + TL.row - 3}">${esc(t.name || "?")} ${t.tid}</text>`);
    if (st) {
      // The state with the most of each bucket, in its reason's colour, as opaque as the
      // bucket is full of the thread's time.
      const bucketNs = st.bucket_sec * 1e9;
      t.buckets.forEach((b, i) => {
        let top = "", most = 0, sum = 0;
        for (const k in b) {
          sum += b[k];
          if (b[k] > most) [top, most] = [k, b[k]];
        }
        if (!top) return;
        const x1 = Math.max(xOf(st.start_sec + i * st.bucket_sec), TL.label);
        const x2 = Math.min(xOf(st.start_sec + (i + 1) * st.bucket_sec), W);
        if (x2 <= x1) return;
        const colour = top === "running" ? "on-cpu" : top;
        parts.push(`<rect class="state" data-tid="${t.tid}" data-i="${i}" data-state="${top}" x="${x1}" y="${y + 1}" width="${Math.max(x2 - x1, 0.5)}" height="${TL.row - 2}" fill="var(--r-${colour}, var(--r-other))" fill-opacity="${(0.35 + (0.65 * Math.min(sum, bucketNs)) / bucketNs).toFixed(2)}"/>`);
      });
      return;
    }
    t.counts.forEach((c, i) => {
      if (!c) return;
      parts.push(`<rect x="${TL.label + i * bw}" y="${y + 1}" width="${Math.max(bw, 0.5)}" height="${TL.row - 2}" fill="var(--heat)" fill-opacity="${(0.15 + (0.85 * c) / max).toFixed(2)}"/>`);
    });
  });
  const rowOf = {};
  threads.forEach((t, r) => (rowOf[t.tid] = rowY[r]));
  for (const s of spans) {
    if (rowOf[s.tid] === undefined || s.lane >= TL.lanes) continue;
    const x1 = Math.max(xOf(s.start_sec), TL.label), x2 = Math.min(xOf(s.end_sec), W);
    const y = rowOf[s.tid] + TL.row + s.lane * TL.lane;
    parts.push(`<rect class="span" data-from="${s.start_sec}" data-to="${s.end_sec}" x="${x1}" y="${y}" width="${Math.max(x2 - x1, 1)}" height="${TL.lane - 1}" fill="var(--span)"><title>${esc(s.name)} · ${((s.end_sec - s.start_sec) * 1000).toFixed(3)} ms (click: this span's window)</title></rect>`);
  }
  for (const m of tl.markers || []) {
    const x = xOf(m.at_sec);
    parts.push(`<line class="marker" x1="${x}" x2="${x}" y1="0" y2="${H - TL.axis}" stroke="var(--marker)"><title>${esc(m.name)} · ${m.at_sec.toFixed(3)}s</title></line>`);
  }
  for (let k = 0; k <= 5; k++) {
    const x = TL.label + (k / 5) * plotW;
    const anchor = k === 0 ? "start" : k === 5 ? "end" : "middle";
    parts.push(`<text class="label" x="${x}" y="${H - 3}" text-anchor="${anchor}">${(tl.start_sec + (k / 5) * span).toFixed(2)}s</text>`);
  }
  parts.push("</svg>");
  el.innerHTML = parts.join("") + '<div class="brush base" hidden></div><div class="brush main" hidden></div>';
  state.tlGeom = { x0: TL.label, w: plotW, start: tl.start_sec, span };
  window.staxTimeline = state.tlGeom;
  drawBrush();
  markThreads();
  loadStackChart();
}

// markThreads marks the timeline's rows of the selected thread or process.
function markThreads() {
  for (const el of document.querySelectorAll("#timeline text.thread")) {
    el.classList.toggle("chosen", Number(el.dataset.tid) === view.tid || Number(el.dataset.pid) === view.pid);
  }
}

function secAt(x) {
  const g = state.tlGeom;
  const f = Math.min(Math.max((x - g.x0) / g.w, 0), 1);
  return g.start + f * g.span;
}

function placeBrush(b, sel) {
  const g = state.tlGeom;
  if (!b) return;
  if (!g || !sel || typeof sel.from !== "number" || typeof sel.to !== "number") {
    b.hidden = true;
    return;
  }
  const x1 = g.x0 + ((sel.from - g.start) / g.span) * g.w;
  const x2 = g.x0 + ((sel.to - g.start) / g.span) * g.w;
  b.hidden = false;
  b.style.left = `${Math.min(x1, x2)}px`;
  b.style.width = `${Math.max(Math.abs(x2 - x1), 1)}px`;
}

function drawBrush(from, to) {
  const sel = from !== undefined ? { from, to } : view.from !== null ? { from: view.from, to: view.to } : null;
  placeBrush($("#timeline .brush.main"), sel);
  const d = state.summary && state.summary.diff;
  placeBrush($("#timeline .brush.base"), d && d.same && d.window ? { from: d.window.from_sec, to: d.window.to_sec } : null);
  const shown = view.from === null ? "" : typeof view.from === "number" ? `window ${view.from.toFixed(2)}s – ${view.to.toFixed(2)}s` : `window ${view.from} – ${view.to}`;
  $("#selection").textContent = shown;
  $("#clear-selection").hidden = view.from === null;
}

function setupBrush() {
  const el = $("#timeline");
  let start = null;
  const x = (e) => e.clientX - el.getBoundingClientRect().left;
  el.addEventListener("mousedown", (e) => {
    if (!state.tlGeom || e.button !== 0) return;
    start = x(e);
    e.preventDefault();
  });
  window.addEventListener("mousemove", (e) => {
    if (start === null) return;
    drawBrush(secAt(start), secAt(x(e)));
  });
  window.addEventListener("mouseup", (e) => {
    if (start === null) return;
    const end = x(e);
    const a = Math.min(start, end), b = Math.max(start, end);
    start = null;
    if (b - a < 3) {
      // A click on a span sets the window to it.
      const s = e.target && e.target.closest ? e.target.closest("#timeline rect.span") : null;
      if (s) {
        change("window", () => {
          view.from = Number(s.dataset.from);
          view.to = Number(s.dataset.to);
        });
        return;
      }
      drawBrush();
      return;
    }
    change("window", () => {
      view.from = secAt(a);
      view.to = secAt(b);
    });
  });
  const whole = () => change("window", () => (view.from = view.to = null));
  el.addEventListener("dblclick", whole);
  // From the keyboard (the timeline takes the focus with Tab): ← → move the window by its
  // width (the first key picks a tenth of the run at its start or end), - and + widen and
  // narrow it around its middle, Escape clears it.
  el.addEventListener("keydown", (e) => {
    const g = state.tlGeom;
    if (!g) return;
    const end = g.start + g.span;
    const has = typeof view.from === "number" && typeof view.to === "number";
    let from = has ? view.from : null, to = has ? view.to : null;
    const w = has ? to - from : g.span / 10;
    switch (e.key) {
      case "ArrowLeft":
        [from, to] = has ? [Math.max(g.start, from - w), Math.max(g.start, from - w) + w] : [end - w, end];
        break;
      case "ArrowRight":
        [from, to] = has ? [Math.min(end, to + w) - w, Math.min(end, to + w)] : [g.start, g.start + w];
        break;
      case "-":
      case "+":
      case "=": {
        if (!has) return;
        const mid = (from + to) / 2, half = (e.key === "-" ? w : w / 4);
        [from, to] = [Math.max(g.start, mid - half), Math.min(end, mid + half)];
        break;
      }
      case "Escape":
        if (!has && view.from === null) return;
        e.preventDefault();
        whole();
        return;
      default:
        return;
    }
    e.preventDefault();
    if (to - from <= 0) return;
    change("window", () => {
      view.from = from;
      view.to = to;
    });
  });
  $("#clear-selection").addEventListener("click", whole);
}

// ---- flame graph ----

const ROW = 18;
const keyOf = (n) => `${n.func}\u0000${n.image}`;
// A path element names a node by key, or (from a URL) by function name alone.
const isNode = (n, k) => keyOf(n) === k || n.func === k;

// chainOf follows path from the root: the nodes found, root first.
function chainOf(path) {
  let n = state.flame && state.flame.root;
  const chain = n ? [n] : [];
  for (const key of path) {
    const next = (n.children || []).find((c) => isNode(c, key));
    if (!next) break;
    n = next;
    chain.push(n);
  }
  return chain;
}

// The flame graph is drawn on a canvas: a large run's graph has thousands of frames, and
// as elements their style, layout and paint took 150-250 ms a render in software-rendered
// Chromium; drawn, they take a few milliseconds. Frames keep their geometry (CSS pixels
// within the canvas) for hit testing, the tooltip and tests.
const LABEL_MIN_PX = 28;
// The reasons a thread is off CPU (and on-cpu, running, in wall views), as the API names
// them; each has a colour in the style sheet (--r-NAME).
const REASONS = ["on-cpu", "runnable", "lock", "cond", "sem", "sleep", "io-read", "io-write", "poll", "net-connect", "net-accept", "child", "other"];
// byReason says whether frames are coloured by their dominant reason: in the off-CPU and
// wall views, whose nodes carry one.
const byReason = () => view.mode !== "cpu" && !diffing();
let palette = null; // colours from the style sheet's variables, read again when the theme changes

function colours() {
  if (palette) return palette;
  const cs = getComputedStyle(document.documentElement);
  const v = (name) => cs.getPropertyValue(name).trim();
  palette = {
    user: v("--k-user"), jit: v("--k-jit"), python: v("--k-python"), kernel: v("--k-kernel"), unknown: v("--k-unknown"), root: v("--k-unknown"),
    match: v("--match"), matchText: v("--match-text"), text: v("--frame-text"), select: v("--select"),
    grow: rgb(v("--grow")), shrink: rgb(v("--shrink")), same: rgb(v("--same")),
    reason: Object.fromEntries(REASONS.map((r) => [r, v(`--r-${r}`)])),
  };
  return palette;
}

function rgb(hex) {
  const m = /^#?([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex);
  return m ? [parseInt(m[1], 16), parseInt(m[2], 16), parseInt(m[3], 16)] : [128, 128, 128];
}

// diffing says whether frames are coloured by their change against the base.
const diffing = () => !!(state.summary && state.summary.diff && view.diff && state.flame && state.flame.diff);

// changeColour is the colour of a change of d percentage points, out of the largest
// change drawn: the more it changed, the deeper the red (grew) or blue (shrank).
function changeColour(d, scale) {
  const p = colours();
  const t = Math.sqrt(Math.min(1, Math.abs(d) / scale));
  const to = d > 0 ? p.grow : p.shrink;
  const c = p.same.map((s, i) => Math.round(s + (to[i] - s) * t));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

// emptyText says why a view has no samples: a live run may not have any yet.
function emptyText() {
  const filtered = view.from !== null || view.tid || view.pid || view.focus || view.ignore.length;
  if (filtered) return "no samples in this view";
  return state.summary && state.summary.live ? "waiting for the first samples" : "no samples";
}

// drawFlameNote says above the graph what it leaves out: frames under the pruning
// threshold, frames narrower than a pixel (narrow: how many, and their share of the drawn
// width), and why a diff is not coloured.
function drawFlameNote(narrow) {
  const fl = state.flame;
  const notes = [];
  if (fl && fl.root && fl.root.total) {
    // Where a node's children and self add up to less than its total, pruned frames hold
    // the rest.
    let left = 0;
    const walk = (n) => {
      let kids = 0;
      for (const c of n.children || []) {
        kids += c.total;
        walk(c);
      }
      left += Math.max(0, n.total - n.self - kids);
    };
    walk(fl.root);
    if (left > 0) {
      notes.push(`pruned at ${PRUNE_PCT}%: frames under ${amountUnit(Math.ceil((fl.root.total * PRUNE_PCT) / 100))} are not drawn; they hold ${amountUnit(left)} (${pct(left, fl.root.total)})`);
    }
  }
  if (fl && fl.root && fl.counters_multiplexed !== undefined) {
    notes.push(`counters multiplexed by the kernel: they counted ${(fl.counters_multiplexed * 100).toFixed(1)}% of the time, and the samples were taken only then (ratios such as IPC hold)`);
  }
  if (narrow && narrow.frames > 0) {
    notes.push(`frames narrower than a pixel are not drawn: ${commas(narrow.frames)} with their callees, ${(narrow.frac * 100).toFixed(narrow.frac < 0.001 ? 3 : 1)}% of the width (zoom in to see them)`);
  }
  if (fl && fl.diff_error) notes.push(`not coloured by change: ${fl.diff_error}`);
  if (fl && fl.root && view.weight && view.mode === "cpu" && !weightField()) notes.push(`weighed by samples: event ${eventName()} has no numeric field ${view.weight}`);
  if (fl && fl.root && fl.weight) {
    const w = fl.weight;
    notes.push(`weighed by ${w.field} of ${eventName()}: each frame as wide as the sum of ${w.field} over its samples kept with their fields (${commas(w.sum)} over ${commas(w.samples)} ${w.samples === 1 ? "sample" : "samples"} in this view${w.dropped ? `; ${commas(w.dropped)} older ones let go are not counted` : ""}${w.skipped ? `; ${commas(w.skipped)} unreadable or negative, counted as 0` : ""})`);
  }
  if (fl && fl.root && view.weigh) {
    if (weighIndex() >= 0) {
      notes.push(`weighed by ${view.weigh}: each frame as wide as what ${view.weigh} counted in the samples under it; the frames are those of the samples' tree (pruned by samples)`);
    } else notes.push(`weighed by samples: this view has no counter ${view.weigh}`);
  }
  const el = $("#flame-note");
  const text = notes.join(" · ");
  if (el.textContent !== text) {
    el.textContent = text;
    el.title = text;
  }
}

function drawFlame() {
  const t0 = performance.now();
  const el = $("#flame");
  const root = state.flame && state.flame.root;
  drawWeigh();
  // The panels drawn from the flame graph's query (the call tree, the changes, the code)
  // count its event.
  const ev = state.flame && state.flame.event;
  for (const sel of ["#flame-event", "#calltree-event", "#diff-event", "#func-event"]) setEventTag(sel, ev);
  if (!root || !root.total) {
    afterPaint(firstGraphDrawn); // what the first load had to show is shown
    drawFlameNote();
    el.innerHTML = `<p class="placeholder">${emptyText()}</p>`;
    state.flameEls = [];
    state.flameCanvas = null;
    drawFrameInfo();
    return;
  }
  const chain = chainOf(view.zoom);
  const zoom = chain[chain.length - 1];
  const W = Math.max(el.clientWidth, 300);
  // Narrower than a pixel: not drawn (a sliver no label nor click can use; a big run has
  // tens of thousands), counted in the note.
  const minFrac = 1 / W;
  const narrow = { frames: 0, frac: 0 };
  drillZoom(chain, W); // a pruned graph: ask for the zoomed frame's subtree (subtree.js)
  const nodes = [];
  const add = (n, path, depth, x, w, ancestor) => nodes.push({ n, path, depth, x: x * W, w: w * W, ancestor, match: false, selected: false });
  const ancestorPath = [];
  chain.forEach((n, d) => {
    if (d > 0) ancestorPath.push(keyOf(n));
    if (d < chain.length - 1) add(n, ancestorPath.slice(), d, 0, 1, true);
  });
  let maxDepth = chain.length - 1;
  const j = weighIndex();
  const walk = (n, path, depth, x, w) => {
    add(n, path, depth, x, w, false);
    maxDepth = Math.max(maxDepth, depth);
    // Each child as wide as its share of the node's weight: samples, or what the counter
    // weighed counted under it.
    const nw = weightOf(n, j);
    let cx = x;
    for (const c of n.children || []) {
      const cw = nw > 0 ? (w * weightOf(c, j)) / nw : 0;
      if (cw >= minFrac) walk(c, path.concat(keyOf(c)), depth + 1, cx, cw);
      else if (cw > 0) {
        narrow.frames++;
        narrow.frac += cw;
      }
      cx += cw;
    }
  };
  walk(zoom, ancestorPath.slice(), chain.length - 1, 0, 1);
  drawFlameNote(narrow);
  // Changes, in percentage points of each run's samples.
  let scale = 1;
  if (diffing()) {
    for (const f of nodes) {
      if (f.n.base_pct !== undefined) {
        f.change = f.n.total_pct - f.n.base_pct;
        scale = Math.max(scale, Math.abs(f.change));
      }
    }
  }
  state.changeScale = scale;
  let canvas = state.flameCanvas;
  if (!canvas || canvas.parentNode !== el) {
    canvas = document.createElement("canvas");
    canvas.tabIndex = 0;
    canvas.setAttribute("aria-label", "flame graph: arrow keys move the selection, Enter zooms, Escape resets");
    el.replaceChildren(canvas);
    state.flameCanvas = canvas;
  }
  // The graph does not shrink while the view stays the same (zooming, selecting, live
  // updates): what is below it would move under the pointer.
  let H = (maxDepth + 1) * ROW + 2;
  if (state.flameFloor && state.flameFloor.key === state.keys.flame) H = Math.max(H, state.flameFloor.h);
  state.flameFloor = { key: state.keys.flame, h: H };
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(W * dpr);
  canvas.height = Math.round(H * dpr);
  canvas.style.width = `${W}px`;
  canvas.style.height = `${H}px`;
  state.flameEls = nodes;
  state.flameWidth = W;
  $("#reset-zoom").hidden = view.zoom.length === 0;
  markSelected();
  applySearch(); // marks matches and paints
  drawLegend();
  drawFrameInfo();
  // Timed to the frame after the next paint: layout and paint included.
  afterPaint(() => {
    perf.flameRenderMs.push(performance.now() - t0);
    if (perf.firstFlameMs === null) perf.firstFlameMs = performance.now();
    firstGraphDrawn();
  });
}

const afterPaint = (f) => requestAnimationFrame(() => setTimeout(f));

// firstGraph resolves once the first flame graph (or its placeholder) is on screen: the
// first load asks what no panel above the graph needs only then, as on two cores the
// server's work for it slowed the graph's.
let firstGraphDrawn;
const firstGraph = new Promise((done) => (firstGraphDrawn = done));

function markSelected() {
  let found = null;
  for (const f of state.flameEls) {
    f.selected = false;
    if (!found && view.sel && pathIs(f.path, view.sel)) found = f;
  }
  if (found) found.selected = true;
  state.selected = found;
}

// pathIs says whether a drawn frame's path (keys) is the path p (keys or names).
const pathIs = (keys, p) => keys.length === p.length && keys.every((k, i) => k === p[i] || k.split("\u0000")[0] === p[i]);

function paintFlame() {
  const canvas = state.flameCanvas;
  if (!canvas) return;
  const p = colours();
  const dpr = window.devicePixelRatio || 1;
  // A CPU-backed canvas: in software-rendered browsers a GPU-emulated one took several
  // times longer to reach the screen.
  const g = canvas.getContext("2d", { willReadFrequently: true });
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, canvas.width, canvas.height);
  g.font = '11px system-ui, -apple-system, "Segoe UI", sans-serif';
  g.textBaseline = "middle";
  const diff = diffing();
  const reasons = byReason();
  for (const f of state.flameEls) {
    const y = f.depth * ROW;
    g.globalAlpha = f.ancestor ? 0.55 : 1;
    g.fillStyle = f.match
      ? p.match
      : diff && f.change !== undefined
        ? changeColour(f.change, state.changeScale)
        : byFunction()
          ? funcColour(f.n)
          : (reasons && p.reason[f.n.reason]) || p[f.n.kind] || p.unknown;
    // Edges on whole device pixels, a one-pixel gap right and below: frames stay apart.
    const x0 = Math.round(f.x * dpr), x1 = Math.round((f.x + f.w) * dpr);
    const w = Math.max(x1 - x0 - 1, 1) / dpr;
    g.fillRect(x0 / dpr, y, w, ROW - 1);
    if (f.w > LABEL_MIN_PX) {
      g.fillStyle = f.match ? p.matchText : p.text;
      g.fillText(fitLabel(g, frameLabel(f.n), f.w - 6), f.x + 3, y + ROW / 2);
    }
  }
  g.globalAlpha = 1;
  const s = state.selected;
  if (s) {
    // The selection: a two-pixel frame inside the box.
    const x0 = Math.round(s.x * dpr) / dpr, x1 = Math.round((s.x + s.w) * dpr) / dpr;
    g.strokeStyle = p.select;
    g.lineWidth = 2;
    g.strokeRect(x0 + 1, s.depth * ROW + 1, Math.max(x1 - x0 - 3, 1), ROW - 3);
  }
}

const frameLabel = (n) => n.func + (n.inlined ? " (inlined)" : "");

// selfText says a drawn frame's self: in the inverted tree a frame of the first level is
// where its samples landed (its total is the function's self), and further down a
// caller's self would be the samples of which it is the outermost frame, not its own: none
// is said there.
const selfText = (f) => (!view.inverted ? ` · self ${amount(f.n.self)}` : f.path.length === 1 ? ` · self ${amount(f.n.total)}` : "");

// fitLabel cuts text to fit px, with an ellipsis.
function fitLabel(g, text, px) {
  if (g.measureText(text).width <= px) return text;
  let lo = 0, hi = text.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (g.measureText(text.slice(0, mid) + "…").width <= px) lo = mid;
    else hi = mid - 1;
  }
  return lo > 0 ? text.slice(0, lo) + "…" : "";
}

function drawLegend() {
  const item = (cls, label) => `<i class="${cls}"></i>${label}`;
  let parts;
  if (diffing()) parts = [item("k-grow", "grew"), item("k-same", "same"), item("k-shrink", "shrank")];
  else if (byReason()) {
    // The reasons of the frames drawn, in the table's order.
    const seen = new Set(state.flameEls.map((f) => f.n.reason));
    parts = REASONS.filter((r) => seen.has(r)).map((r) => `<span data-reason="${r}">${item(`r-${r}`, r)}</span>`);
  } else parts = [item("k-user", "native"), item("k-jit", "JIT"), item("k-kernel", "kernel"), item("k-unknown", "unknown")];
  // Python's colour and toggle only where the graph has Python functions (or the toggle is on).
  const py = view.python || state.flameEls.some((f) => f.n.kind === "python");
  if (py && !diffing() && !byReason()) parts.splice(2, 0, item("k-python", "Python"));
  $("#python-toggle").hidden = !py;
  if (view.search) parts.push(item("k-match", "match"));
  const html = parts.join(" ");
  if ($("#legend").innerHTML !== html) $("#legend").innerHTML = html;
}

// ---- search ----

// searchRegExp compiles the search as a JS regular expression; a leading (?i) (Go's
// syntax) becomes the i flag.
function searchRegExp(s) {
  let flags = "";
  if (s.startsWith("(?i)")) {
    s = s.slice(4);
    flags = "i";
  }
  return new RegExp(s, flags);
}

function applySearch() {
  let re = null, bad = "";
  if (view.search) {
    try {
      re = searchRegExp(view.search);
    } catch (err) {
      bad = err.message;
    }
  }
  let frames = 0;
  for (const item of state.flameEls || []) {
    item.match = !!re && re.test(item.n.func);
    if (item.match && !item.ancestor) frames++;
  }
  paintFlame();
  state.searchFrames = frames;
  if (bad) state.searchError = bad;
  else if (state.searchError && !view.search) state.searchError = "";
  drawSearchResult();
}

function drawSearchResult() {
  const el = $("#search-result");
  if (!view.search) {
    el.textContent = "";
    return;
  }
  if (state.searchError) {
    el.innerHTML = `<span class="error">${esc(state.searchError)}</span>`;
    return;
  }
  const c = state.searchCount;
  const frames = `${state.searchFrames} ${state.searchFrames === 1 ? "frame matches" : "frames match"}`;
  if (!c || c.search !== view.search || c.key !== filterKey()) {
    el.textContent = `${frames} · counting samples…`;
    return;
  }
  // In the time modes the counts are nanoseconds: said in milliseconds, as the graph's.
  const of = view.mode === "cpu" ? `${commas(c.matched)} of ${amountUnit(c.samples)}` : `${amount(c.matched)} of ${amount(c.samples)}`;
  el.textContent = `${frames} · ${of} (${pct(c.matched, c.samples)})`;
}

// Work the page does after drawing a view (a timer, then a request): counted, so that
// staxIdle says when it is all done.
let waiting = 0;
const searchTimer = { id: 0 };
const callsTimer = { id: 0 };

function cancel(timer) {
  if (timer.id) {
    clearTimeout(timer.id);
    timer.id = 0;
    waiting--;
  }
}

// soon runs f after ms, replacing what timer had waiting.
function soon(timer, ms, f) {
  cancel(timer);
  waiting++;
  timer.id = setTimeout(async () => {
    timer.id = 0; // run: no longer to cancel, still counted until done
    try {
      await f();
    } finally {
      waiting--;
    }
  }, ms);
}

// countMatches asks the server how many samples have a matching frame: the graph holds
// only the frames wide enough to draw.
function countMatches() {
  cancel(searchTimer);
  const search = view.search;
  if (!search) return;
  soon(searchTimer, 120, async () => {
    const key = filterKey();
    const q = query({ inverted: false }, { match: search, depth: 1, threshold_pct: 100 });
    try {
      const r = await api("flame", q);
      if (search !== view.search) return;
      state.searchError = "";
      state.searchCount = { search, key, matched: r.matched || 0, samples: r.samples };
    } catch (err) {
      if (search !== view.search) return;
      state.searchError = err.message;
    }
    drawSearchResult();
  });
}

// ---- frames: hit testing, selection, keyboard, menu ----

function frameAt(e) {
  const canvas = state.flameCanvas;
  if (!canvas || e.target !== canvas) return null;
  const box = canvas.getBoundingClientRect();
  const x = e.clientX - box.left, y = e.clientY - box.top;
  const depth = Math.floor(y / ROW);
  if (y - depth * ROW >= ROW - 1) return null; // the gap between rows
  for (const f of state.flameEls) {
    if (f.depth === depth && x >= f.x && x < f.x + f.w) return f;
  }
  return null;
}

// select makes a drawn frame the selection: outlined, described below the graph, with its
// callers and callees.
function select(f) {
  view.sel = f ? f.path.slice() : null;
  markSelected();
  paintFlame();
  if (f) {
    // A deep graph scrolls in its panel: the selection is kept in sight.
    const el = $("#flame"), y = f.depth * ROW;
    if (y < el.scrollTop) el.scrollTop = y;
    else if (y + ROW > el.scrollTop + el.clientHeight) el.scrollTop = y + ROW - el.clientHeight;
  }
  drawFrameInfo();
  writeURL(false);
  loadCalls();
}

function zoomTo(f) {
  view.zoom = f.path.slice();
  view.sel = f.path.slice();
  writeURL(true);
  drawFlame();
  loadCalls();
}

function resetZoom() {
  view.zoom = [];
  writeURL(true);
  drawFlame();
}

// step moves the selection: to the parent (up the graph), the widest child (down), or the
// previous or next sibling.
function step(key) {
  const els = state.flameEls;
  if (!els.length) return;
  let cur = state.selected;
  if (!cur) {
    cur = els.find((f) => !f.ancestor) || els[0];
    select(cur);
    return;
  }
  let next = null;
  const parentOf = (p) => p.slice(0, -1);
  const same = (a, b) => a.length === b.length && a.every((k, i) => k === b[i]);
  switch (key) {
    case "ArrowUp":
      if (cur.path.length > 0) next = els.find((f) => same(f.path, parentOf(cur.path)));
      break;
    case "ArrowDown": {
      const kids = els.filter((f) => f.depth === cur.depth + 1 && f.path.length === cur.path.length + 1 && same(parentOf(f.path), cur.path));
      next = kids.reduce((a, b) => (!a || b.w > a.w ? b : a), null);
      break;
    }
    case "ArrowLeft":
    case "ArrowRight": {
      const sibs = els.filter((f) => f.depth === cur.depth && cur.path.length > 0 && same(parentOf(f.path), parentOf(cur.path))).sort((a, b) => a.x - b.x);
      const i = sibs.indexOf(cur) + (key === "ArrowLeft" ? -1 : 1);
      next = sibs[i] || null;
      break;
    }
  }
  if (next) select(next);
}

function setupFlame() {
  const el = $("#flame");
  el.addEventListener("click", (e) => {
    const item = frameAt(e);
    if (!item) return;
    hideMenu();
    if (item.path.length === 0 || item.ancestor) {
      // The root, or a caller above the zoom: zoom out to it.
      view.zoom = item.path.slice();
      view.sel = item.path.slice();
      writeURL(true);
      drawFlame();
      loadCalls();
      return;
    }
    zoomTo(item);
  });
  el.addEventListener("contextmenu", (e) => {
    const item = frameAt(e);
    if (!item) return;
    e.preventDefault();
    select(item);
    showMenu(item, e.clientX, e.clientY);
  });
  el.addEventListener("keydown", (e) => {
    if (e.target !== state.flameCanvas) return;
    if (e.key.startsWith("Arrow")) {
      e.preventDefault();
      step(e.key);
    } else if (e.key === "Enter" && state.selected) {
      e.preventDefault();
      zoomTo(state.selected);
    } else if (e.key === "Escape") {
      e.preventDefault();
      hideMenu();
      resetZoom();
    } else if (e.key === "ContextMenu" && state.selected) {
      e.preventDefault();
      const b = state.flameCanvas.getBoundingClientRect();
      showMenu(state.selected, b.left + state.selected.x + 8, b.top + (state.selected.depth + 1) * ROW);
    }
  });
  const tip = $("#tooltip");
  el.addEventListener("mousemove", (e) => {
    const item = frameAt(e);
    el.classList.toggle("over-frame", !!item);
    if (!item) {
      tip.hidden = true;
      return;
    }
    const n = item.n;
    const root = state.flame.root;
    let change = "";
    if (item.change !== undefined) change = `<div>${n.base_pct.toFixed(2)}% in the base → ${n.total_pct.toFixed(2)}% (${item.change >= 0 ? "+" : ""}${item.change.toFixed(2)} points)</div>`;
    tip.innerHTML = `<div><b>${esc(n.func)}</b>${n.inlined ? " (inlined)" : ""}</div><div class="img">${esc(n.image || "")} · ${esc(n.kind)}</div>` +
      `<div>total ${amount(n.total)} (${pct(n.total, root.total)})${selfText(item)}${n.reason ? " · " + esc(n.reason) : ""}</div>${change}` +
      counterLines(item).map((l) => `<div class="counter">${esc(l)}</div>`).join("");
    tip.hidden = false;
    tip.style.left = `${Math.min(e.clientX + 12, window.innerWidth - tip.offsetWidth - 4)}px`;
    tip.style.top = `${e.clientY + 14}px`;
  });
  el.addEventListener("mouseleave", () => (tip.hidden = true));
  // The canvas is drawn at a width: draw again when the panel's width changes.
  new ResizeObserver(() => {
    if (state.flameCanvas && Math.max(el.clientWidth, 300) !== state.flameWidth) drawFlame();
  }).observe(el);
  $("#search").addEventListener("input", (e) => {
    view.search = e.target.value;
    state.searchError = "";
    writeURL(false);
    applySearch();
    drawLegend();
    countMatches();
  });
  $("#reset-zoom").addEventListener("click", resetZoom);
  $("#mode").addEventListener("change", (e) =>
    change("mode", () => {
      view.mode = e.target.value;
      view.zoom = [];
      view.sel = null;
      state.top = null;
    }),
  );
  $("#weigh").addEventListener("change", (e) => setWeigh(e.target.value));
  $("#inverted").addEventListener("change", (e) =>
    change("inverted", () => {
      view.inverted = e.target.checked;
      view.zoom = [];
      view.sel = null;
    }),
  );
  $("#python").addEventListener("change", (e) =>
    change("python", () => {
      view.python = e.target.checked;
      view.zoom = [];
      view.sel = null;
    }),
  );
  $("#thread").addEventListener("change", (e) =>
    change("thread", () => {
      const [kind, id] = e.target.value.split(":");
      view.tid = kind === "t" ? Number(id) : 0;
      view.pid = kind === "p" ? Number(id) : 0;
    }),
  );
  document.addEventListener("click", (e) => {
    if (!$("#frame-menu").contains(e.target)) hideMenu();
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape") hideMenu();
  });
}

// The actions of a frame, in its menu and below the graph.
const ACTIONS = [
  ["focus", "focus on it", "only the samples through it, rooted at it"],
  ["ignore", "ignore it", "drop the samples through it"],
  ["hide", "hide it", "remove it from stacks; its callees become its caller's"],
  ["collapse", "collapse its image", "one frame for each run of frames in its image"],
  ["fold", "fold recursion", "merge every function into its outermost call"],
  ["code", "show code", "its machine code with samples per instruction"],
];

function act(what, n) {
  hideMenu();
  if (what === "code") {
    showFunc(n.func + (n.inlined ? " (inlined)" : ""));
    return;
  }
  change(what, () => {
    const re = reQuote(n.func);
    switch (what) {
      case "focus":
        view.focus = re;
        break;
      case "ignore":
        if (!view.ignore.includes(re)) view.ignore.push(re);
        break;
      case "hide":
        if (!view.hide.includes(re)) view.hide.push(re);
        break;
      case "collapse":
        if (n.image && !view.collapse.includes(n.image)) view.collapse.push(n.image);
        break;
      case "fold":
        view.fold = true;
        break;
    }
    view.zoom = [];
    view.sel = null;
  });
}

function showMenu(f, x, y) {
  const m = $("#frame-menu");
  const n = f.n;
  m.innerHTML = `<div class="title">${esc(n.func)}</div>` +
    ACTIONS.filter(([a]) => (a !== "collapse" || n.image) && (n.kind !== "root" || a === "fold"))
      .map(([a, label, title]) => `<button data-act="${a}" title="${esc(title)}" role="menuitem">${label}</button>`).join("");
  m.hidden = false;
  m.style.left = `${Math.min(x, window.innerWidth - m.offsetWidth - 4)}px`;
  m.style.top = `${Math.min(y, window.innerHeight - m.offsetHeight - 4)}px`;
  m.onclick = (e) => {
    const b = e.target.closest("button");
    if (b) act(b.dataset.act, n);
  };
  // As a menu: ↑ ↓ (and Home, End) move between its items, Tab leaves, Escape closes it
  // and gives the focus back to the graph.
  m.onkeydown = (e) => {
    const items = [...m.querySelectorAll("button")];
    const i = items.indexOf(document.activeElement);
    const to = { ArrowDown: i + 1, ArrowUp: i - 1, Home: 0, End: items.length - 1 }[e.key];
    if (to !== undefined && items.length) {
      e.preventDefault();
      items[(to + items.length) % items.length].focus();
    } else if (e.key === "Escape" || e.key === "Tab") {
      e.preventDefault();
      hideMenu(true);
    }
  };
  const first = m.querySelector("button");
  if (first) first.focus();
}

// hideMenu closes the frame's menu; refocus gives the focus back to the graph (the menu
// had it).
function hideMenu(refocus) {
  const m = $("#frame-menu");
  if (m.hidden) return;
  const had = m.contains(document.activeElement);
  m.hidden = true;
  if ((refocus || had) && state.flameCanvas) state.flameCanvas.focus({ preventScroll: true });
}

function drawFrameInfo() {
  const f = state.selected;
  const info = $("#frame-info");
  if (!f) {
    info.innerHTML = '<span class="hint">click a frame to zoom; arrow keys move the selection, Enter zooms, Escape resets; right-click a frame for its menu</span>';
    return;
  }
  const n = f.n;
  const root = state.flame.root;
  if (n.kind === "root") {
    // What a total of time holds: off CPU is blocked and runnable time together.
    const t = state.flame.time;
    let split = "";
    if (t && view.mode === "off_cpu") split = `, of which runnable ${amount(t.runnable_ns)}`;
    if (t && view.mode === "wall") split = `: on CPU ${amount(t.on_cpu_ns || 0)}, off CPU ${amount(t.off_cpu_ns)}, of which runnable ${amount(t.runnable_ns)}`;
    const counted = counterLines(f).map((l) => ` · <span class="counter">${esc(l)}</span>`).join("");
    const all = weightField() ? `samples, weighed by ${weightField()}` : view.mode === "cpu" ? "samples" : view.mode === "wall" ? "time on and off CPU" : "time off CPU";
    info.innerHTML = `<b>all ${all}</b> · ${amount(n.total)}${split}${counted}`;
    return;
  }
  let change = "";
  if (f.change !== undefined) change = ` · ${n.base_pct.toFixed(2)}% → ${n.total_pct.toFixed(2)}% (${f.change >= 0 ? "+" : ""}${f.change.toFixed(2)} points)`;
  const counted = counterLines(f).map((l) => ` · <span class="counter">${esc(l)}</span>`).join("");
  info.innerHTML = `<b>${esc(frameLabel(n))}</b> · ${esc(n.image || "")} · total ${amount(n.total)} (${pct(n.total, root.total)})${selfText(f)}${n.reason ? " · " + esc(n.reason) : ""}${change}${counted}` +
    ACTIONS.filter(([a]) => a !== "collapse" || n.image).map(([a, label, title]) => `<button data-act="${a}" title="${esc(title)}"${a === "code" ? ' id="show-code"' : ""}>${label}</button>`).join("");
  info.onclick = (e) => {
    const b = e.target.closest("button");
    if (b) act(b.dataset.act, n);
  };
}

// ---- transforms ----

function drawTransforms() {
  const chips = [];
  const chip = (label, value, rm) => chips.push(`<span class="chip">${label}${value ? ` <code>${esc(value)}</code>` : ""}<button data-rm="${rm}" title="remove" aria-label="remove ${label}">×</button></span>`);
  if (view.focus) chip("focus", view.focus, "focus");
  view.ignore.forEach((v, i) => chip("ignore", v, `ignore:${i}`));
  view.hide.forEach((v, i) => chip("hide", v, `hide:${i}`));
  view.collapse.forEach((v, i) => chip("collapse image", v, `collapse:${i}`));
  if (view.fold) chip("fold recursion", "", "fold");
  const el = $("#transforms");
  el.hidden = chips.length === 0;
  el.innerHTML = chips.length ? `<span class="hint">transforms:</span>${chips.join("")}` : "";
}

function setupTransforms() {
  $("#transforms").addEventListener("click", (e) => {
    const b = e.target.closest("button[data-rm]");
    if (!b) return;
    const [what, i] = b.dataset.rm.split(":");
    change("remove " + what, () => {
      if (what === "focus") view.focus = "";
      else if (what === "fold") view.fold = false;
      else view[what].splice(Number(i), 1);
      view.zoom = [];
      view.sel = null;
    });
  });
}

// ---- threads ----

// threadWeight is what a thread counts in the mode: its samples, or its time off CPU
// (blocked and runnable), or on and off CPU, in nanoseconds as the graph's.
function threadWeight(r) {
  if (view.mode === "cpu") return r.samples;
  const o = r.off_cpu || {};
  const ms = (o.off_cpu_ms || 0) + (o.runnable_ms || 0) + (view.mode === "wall" ? o.on_cpu_ms || 0 : 0);
  return ms * 1e6;
}

function drawThreads() {
  const sel = $("#thread");
  const rows = (state.threads && state.threads.rows) || [];
  const procs = new Map();
  for (const r of rows) {
    let p = procs.get(r.pid);
    if (!p) procs.set(r.pid, (p = { pid: r.pid, name: "", samples: 0, threads: [] }));
    p.samples += threadWeight(r);
    p.threads.push(r);
    if (r.tid === r.pid || !p.name) p.name = r.name;
  }
  const opts = ['<option value="">all threads</option>'];
  const multi = procs.size > 1;
  for (const p of [...procs.values()].sort((a, b) => b.samples - a.samples)) {
    if (multi) opts.push(`<option value="p:${p.pid}">process ${p.pid} ${esc(p.name)} (${amount(p.samples)})</option>`);
    const threads = view.mode === "cpu" ? p.threads : p.threads.slice().sort((a, b) => threadWeight(b) - threadWeight(a));
    for (const t of threads) opts.push(`<option value="t:${t.tid}">${multi ? "\u00a0\u00a0" : ""}${esc(t.name || "?")} ${t.tid} (${amount(threadWeight(t))})</option>`);
  }
  const want = view.tid ? `t:${view.tid}` : view.pid ? `p:${view.pid}` : "";
  if (want && !opts.some((o) => o.includes(`value="${want}"`))) opts.push(`<option value="${want}">${view.tid ? "thread" : "process"} ${view.tid || view.pid}</option>`);
  const html = opts.join("");
  if (sel.innerHTML !== html) sel.innerHTML = html;
  sel.value = want;
}

// ---- top table ----

// The top table's rows, and how many rows it asks for when it sorts them itself.
const TOP_ROWS = 100, TOP_ALL = 1000000;

// topRowsShown are the top table's rows: the server's order, or, weighed by a counter,
// the functions that counted the most of it in their own samples.
function topRowsShown() {
  const top = state.top;
  let rows = (top && top.rows) || [];
  const j = view.weigh && top && top.counters ? top.counters.indexOf(view.weigh) : -1;
  if (j >= 0) rows = rows.slice().sort((a, b) => ((b.counters && b.counters[j]) || 0) - ((a.counters && a.counters[j]) || 0));
  return { rows: rows.slice(0, TOP_ROWS), j };
}

function drawTop() {
  const { rows, j } = topRowsShown();
  state.topRows = rows;
  setEventTag("#top-event", state.top && state.top.event);
  const cols = drawTopCounterHeads();
  const body = rows.map((r, i) =>
    `<tr data-i="${i}" tabindex="0" class="${r.func === view.code ? "chosen" : ""}"><td class="num">${r.self_pct.toFixed(2)}%<span class="amt">${amount(r.self)}</span></td><td class="num">${r.total_pct.toFixed(2)}%<span class="amt">${amount(r.total)}</span></td>` +
    cols.map((c) => `<td class="num counter">${c.value(r.counters || [])}</td>`).join("") +
    `<td class="k k-${esc(r.kind)}-text" title="${esc(r.func)}">${esc(r.func)}${r.inlined ? " (inlined)" : ""}</td><td title="${esc(r.image)}">${esc(r.image)}</td></tr>`);
  $("#top tbody").innerHTML = body.length ? body.join("") : `<tr><td colspan="${4 + cols.length}" class="placeholder">${emptyText()}</td></tr>`;
  for (const th of document.querySelectorAll("#top th[data-sort]")) th.classList.toggle("sorted", j < 0 && th.dataset.sort === view.sort);
  for (const th of document.querySelectorAll("#top th[data-weigh]")) th.classList.toggle("sorted", j >= 0 && th.dataset.weigh === view.weigh);
}

// topCounterColumns are the top table's columns of counters read with each sample (stax
// record --counters), as stax top prints them: what each function counted itself, and its
// IPC where cycles and instructions were both read. None where the answer has none (a
// window of the run drops them).
function topCounterColumns() {
  const names = (state.top && state.top.counters) || [];
  const cols = names.map((name, j) => ({ name, weigh: true, title: `${name}: counted in the function's own samples`, value: (v) => commas(v[j] || 0) }));
  const cyc = names.indexOf("cycles"), ins = names.indexOf("instructions");
  if (cyc >= 0 && ins >= 0) {
    cols.push({ name: "IPC", title: "instructions per cycle, in the function's own samples", value: (v) => (v[cyc] ? (v[ins] / v[cyc]).toFixed(2) : "-") });
  }
  return cols;
}

// drawTopCounterHeads puts the counters' heads between Total and Function; it returns
// the columns.
function drawTopCounterHeads() {
  const cols = topCounterColumns();
  const tr = $("#top thead tr");
  const want = cols.map((c) => c.name).join("\n");
  if (state.topCounterHeads !== want) {
    for (const th of tr.querySelectorAll("th.counter")) th.remove();
    const fn = tr.querySelector("th:not([data-sort])");
    for (const c of cols) {
      const th = document.createElement("th");
      th.className = "num counter";
      th.textContent = c.name;
      th.title = c.title;
      if (c.weigh) {
        // A counter's head sorts the table by it, and weighs the flame graph by it.
        th.classList.add("sortable");
        th.tabIndex = 0;
        th.dataset.weigh = c.name;
        th.title += "; click: sort by it and weigh the flame graph by it";
      }
      tr.insertBefore(th, fn);
    }
    state.topCounterHeads = want;
  }
  return cols;
}

// Rows that act on a click (the top table's, the callers', the changes') act on Enter or
// Space too: each takes the focus with Tab.
function setupRowKeys() {
  document.addEventListener("keydown", (e) => {
    const tr = e.target.closest && e.target.closest("tr[tabindex], th.sortable");
    if (!tr || (e.key !== "Enter" && e.key !== " ")) return;
    e.preventDefault();
    tr.click();
  });
}

function setupTop() {
  $("#top tbody").addEventListener("click", (e) => {
    const tr = e.target.closest("tr[data-i]");
    if (!tr) return;
    const r = state.topRows[tr.dataset.i];
    showFunc(r.func + (r.inlined ? " (inlined)" : ""));
  });
  for (const th of document.querySelectorAll("#top th[data-sort]")) {
    th.addEventListener("click", () => {
      if (view.weigh) {
        // Sorted by samples again: the flame graph weighs them again too.
        change("sort", () => {
          view.sort = th.dataset.sort;
          view.weigh = "";
        });
        return;
      }
      view.sort = th.dataset.sort;
      writeURL(false);
      refresh({ what: "sort" });
    });
  }
  $("#top thead").addEventListener("click", (e) => {
    const th = e.target.closest("th[data-weigh]");
    if (th) setWeigh(th.dataset.weigh);
  });
}

// ---- who woke the selected thread ----

// drawWakers shows stax wakers for the selected thread (all threads when none is): who
// woke it, how often, the time off CPU their wakeups ended, and from which stacks.
function drawWakers() {
  const w = state.wakers;
  $("#wakers-panel").hidden = false;
  const body = $("#wakers tbody");
  if (w instanceof Error) {
    $("#wakers-title").textContent = "";
    body.innerHTML = `<tr><td colspan="5" class="placeholder">${esc(w.message)}</td></tr>`;
    return;
  }
  const rows = (w && w.rows) || [];
  const who = w && w.tid ? `thread ${w.tid}` : "every thread";
  $("#wakers-title").textContent = `who woke ${who} (whole run; ${commas((w && w.woken) || 0)} waits matched to their wakeup)`;
  if (!rows.length) {
    body.innerHTML = `<tr><td colspan="5" class="placeholder">no wakeups of ${who} by the program's threads</td></tr>`;
    return;
  }
  const ms = (ns) => `${commas(Math.round(ns / 1e6))} ms`;
  body.innerHTML = rows
    .slice(0, 20)
    .map((r) => {
      // The program's functions that woke, as stax wakers shows them: past the kernel's
      // frames (the wakeup's own path, the same in every stack), leaf first; the whole
      // stack in the title.
      const stacks = (r.stacks || []).map((s) => {
        const k = s.kernel_frames || 0;
        let fns = (k < s.frames.length ? s.frames.slice(k) : s.frames).filter((f) => !/^\[woke \d+\]$/.test(f));
        if (fns.length > 8) fns = fns.slice(0, 8).concat("…");
        return `<div class="waker-stack" title="${esc(s.frames.join("\n"))}">${commas(s.count)}× ${ms(s.ns)}: ${esc(fns.join(" ← "))}</div>`;
      });
      return `<tr data-waker="${r.waker_tid}" data-wakee="${r.wakee_tid}"><td>${esc(r.wakee_name || "?")} ${r.wakee_tid}</td><td>${esc(r.waker_name || "?")} ${r.waker_tid}</td><td class="num">${commas(r.count)}</td><td class="num">${ms(r.ns)}</td><td>${stacks.join("")}</td></tr>`;
    })
    .join("");
}

// ---- callers and callees of the selected function ----

function loadCalls() {
  cancel(callsTimer);
  followSelection(); // the sandwich
  const f = state.selected;
  if (!f || f.n.kind === "root") {
    state.calls = null;
    drawCalls();
    return;
  }
  const n = f.n;
  // A live run's counts grow: the panel is asked again with each update of the graph.
  const key = `${keyOf(n)}\u0001${filterKey()}\u0001${state.liveGen || 0}`;
  if (state.calls && state.calls.key === key) return;
  // Keyboard steps come quickly: ask once the selection rests.
  soon(callsTimer, 80, async () => {
    const q = query({ inverted: false }, { fn: reQuote(n.func) });
    try {
      const [callers, callees] = await Promise.all([api("callers", q), api("callees", q)]);
      if (!state.selected || keyOf(state.selected.n) !== keyOf(n)) return;
      const pick = (a) => (a.functions || []).find((x) => x.func === n.func && x.image === n.image) || (a.functions || []).find((x) => x.func === n.func);
      state.calls = { key, n, callers: pick(callers), callees: pick(callees), event: callers.event };
      drawCalls();
    } catch (err) {
      $("#calls-title").innerHTML = `<span class="error">${esc(err.message)}</span>`;
    }
  });
}

function drawCalls() {
  // The panel is always there, at a fixed height: a selection fills it, and moves nothing.
  const c = state.calls;
  setEventTag("#calls-event", c && c.event);
  if (!c) {
    $("#calls-title").textContent = "Callers and callees";
    const hint = '<tr><td class="placeholder">select a frame in the flame graph</td></tr>';
    $("#callers tbody").innerHTML = hint;
    $("#callees tbody").innerHTML = hint;
    return;
  }
  const fn = c.callers || c.callees;
  $("#calls-title").innerHTML = `Callers and callees of <b>${esc(frameLabel(c.n))}</b>` + (fn ? ` <span class="hint">${amount(fn.total)}${view.mode === "cpu" ? " samples" : ""}, self ${amount(fn.self)}</span>` : "");
  const rows = (f, outer) => {
    if (!f) return '<tr><td class="placeholder">none</td></tr>';
    const out = f.rows.map((r) => `<tr data-func="${esc(r.func)}" tabindex="0"><td class="num">${amount(r.total)}</td><td class="num">${r.pct.toFixed(1)}%</td><td title="${esc(r.image)}">${esc(r.func)}${r.inlined ? " (inlined)" : ""}</td></tr>`);
    if (outer) out.push(`<tr><td class="num">${amount(outer)}</td><td class="num">${pct(outer, f.total).replace(/(\.\d)\d%$/, "$1%")}</td><td class="placeholder">(no caller)</td></tr>`);
    return out.length ? out.join("") : '<tr><td class="placeholder">none</td></tr>';
  };
  $("#callers tbody").innerHTML = rows(c.callers, c.callers && c.callers.outermost);
  $("#callees tbody").innerHTML = rows(c.callees, 0);
}

function setupCalls() {
  for (const id of ["#callers", "#callees"]) {
    $(id).addEventListener("click", (e) => {
      const tr = e.target.closest("tr[data-func]");
      if (!tr) return;
      // Highlight the function where it appears in the graph.
      const s = reQuote(tr.dataset.func);
      $("#search").value = s;
      view.search = s;
      writeURL(false);
      applySearch();
      drawLegend();
      countMatches();
    });
  }
}

// ---- diff ----

function drawChanges() {
  const d = state.summary && state.summary.diff;
  const panel = $("#diff-panel");
  panel.hidden = !d;
  if (!d) return;
  const win = d.window ? ` (${d.window.from_sec.toFixed(2)}s – ${d.window.to_sec.toFixed(2)}s)` : "";
  // The base's count is of its samples: in the time modes the shares are of time.
  const of = view.mode === "cpu" ? `${commas(d.samples)} samples; shares of each side's samples` : `shares of each side's ${view.mode === "wall" ? "time on and off CPU" : "time off CPU"}`;
  $("#diff-title").textContent = `against ${d.same ? "another window of this run" : "run " + d.base}${win}: ${of}`;
  // Ticked only while the graph is coloured by change.
  const box = $("#diff-colour");
  box.checked = view.diff && !(state.flame && state.flame.diff_error);
  box.disabled = !!(state.flame && state.flame.diff_error);
  const c = state.changes;
  if (!c) return;
  const rows = (c.rows || []).map((r) => {
    const cls = r.delta_pct > 0 ? "grew" : r.delta_pct < 0 ? "shrank" : "";
    return `<tr data-func="${esc(r.func)}" tabindex="0"><td class="num ${cls}">${r.delta_pct > 0 ? "▲ +" : r.delta_pct < 0 ? "▼ " : ""}${r.delta_pct.toFixed(2)}</td><td class="num">${r.base_pct.toFixed(2)}%</td>` +
      `<td class="num">${r.pct.toFixed(2)}%</td><td title="${esc(r.func)}">${esc(r.func)}${r.inlined ? " (inlined)" : ""}</td><td title="${esc(r.image)}">${esc(r.image)}</td></tr>`;
  });
  $("#changes tbody").innerHTML = rows.length ? rows.join("") : '<tr><td colspan="5" class="placeholder">no samples on either side</td></tr>';
}

function setupChanges() {
  $("#diff-colour").addEventListener("change", (e) => {
    view.diff = e.target.checked;
    writeURL(false);
    refresh({ what: "diff" });
  });
  $("#changes tbody").addEventListener("click", (e) => {
    const tr = e.target.closest("tr[data-func]");
    if (!tr) return;
    const s = reQuote(tr.dataset.func);
    $("#search").value = s;
    view.search = s;
    writeURL(false);
    applySearch();
    drawLegend();
    countMatches();
  });
}

// ---- code of one function ----

async function showFunc(name, version = 0) {
  view.code = name;
  view.version = version;
  writeURL(false);
  drawTop();
  await loadFunc();
  $("#func-panel").scrollIntoView({ block: "nearest" });
}

async function loadFunc() {
  if (!view.code) return;
  const pre = $("#annotate");
  $("#func-title").textContent = view.code;
  try {
    const q = query({ inverted: false }, { target: view.code, version: view.version || null });
    const a = await api("annotate", q);
    pre.className = "";
    pre.innerHTML = codeHTML(a);
    drawCodeTotals(a);
    const sel = $("#func-version");
    const versions = a.versions || [];
    sel.hidden = versions.length < 2;
    sel.innerHTML = versions.map((v) => `<option value="${v.index}" ${v.index === a.version ? "selected" : ""}>version ${v.index}: ${commas(v.samples)} samples (${v.percent.toFixed(1)}%)</option>`).join("");
  } catch (err) {
    pre.className = "error";
    pre.textContent = err.message;
    $("#func-counters").hidden = true;
  }
}

// codeHTML is the annotation's text as the code panel shows it. For a run read with
// counters (stax record --counters), a column per counter, and IPC where cycles and
// instructions were read, stands before the text's "│" on each instruction with samples:
// what was counted in its samples, each column as wide as its widest number.
function codeHTML(a) {
  const names = a.counters || [];
  const byAddr = new Map((a.counted || []).map((c) => [c.addr, c.counters]));
  const cols = names.map((name, j) => ({ name, title: `${name}: counted in the instruction's samples`, value: (v) => commas(v[j] || 0) }));
  if (ipcOf(names, [])) cols.push({ name: "IPC", title: "instructions per cycle, in the instruction's samples", value: (v) => ipcOf(names, v) });
  for (const c of cols) c.w = Math.max(c.name.length, ...[...byAddr.values()].map((v) => c.value(v).length));
  const blank = " ".repeat(cols.reduce((s, c) => s + c.w + 1, 0));
  // An instruction row: its address after the "│" (and the inlined mark, the label).
  const addrOf = (rest) => (/^│ [▶ ]?\s*(?:[^\s:]+:\s*)?(0x[0-9a-f]+):/.exec(rest) || [])[1];
  return a.text.split("\n").map((line) => {
    // Instruction rows start with their samples; source rows are indented text.
    const hot = /^\s*\d+\.\d+\s+[\d,]+\s/.test(line);
    const cls = hot ? "hot" : /│ \S.*:\d+/.test(line) ? "src" : "";
    let html = esc(line);
    const bar = line.indexOf("│");
    if (cols.length && bar >= 0) {
      const rest = line.slice(bar);
      const v = hot ? byAddr.get(addrOf(rest)) : undefined;
      let cells = blank;
      if (line.startsWith("  Percent")) cells = cols.map((c) => `<span class="ctr-head" title="${esc(c.title)}">${esc(c.name.padStart(c.w))}</span> `).join("");
      else if (v) cells = cols.map((c) => `<span class="counter" data-counter="${esc(c.name)}">${esc(c.value(v).padStart(c.w))}</span> `).join("");
      html = esc(line.slice(0, bar)) + cells + esc(rest);
    }
    return cls ? `<span class="${cls}">${html}</span>` : html;
  }).join("\n");
}

// drawCodeTotals says in the code panel's header what each counter counted in the code's
// samples, and their IPC.
function drawCodeTotals(a) {
  const el = $("#func-counters");
  const names = a.counters || [];
  const t = a.counter_totals || [];
  const parts = names.map((name, j) => `${name} ${commas(t[j] || 0)}`);
  const ipc = ipcOf(names, t);
  if (ipc) parts.push(`IPC ${ipc}`);
  el.textContent = parts.join(" · ");
  el.hidden = parts.length === 0;
}

// ---- refreshing ----

// filterKey names what every view is computed over: window, thread, transforms.
const filterKey = () => query({ inverted: false }).toString();

// change applies a change of the view (a function of view), keeps it in the URL and
// redraws; perf.changes times it to the flame graph on screen.
function change(what, apply) {
  // A selection's callers asked a moment ago would be of the view being left, and would
  // slow the new view's graph: the refresh asks them again if the selection stays.
  cancel(callsTimer);
  apply();
  writeURL(true);
  drawControls();
  drawBrush();
  refresh({ what, t0: performance.now() });
}

function drawControls() {
  markThreads();
  $("#inverted").checked = view.inverted;
  drawWeigh();
  $("#python").checked = view.python;
  $("#mode").value = view.mode;
  $("#search").value = view.search;
  drawThreads();
  drawTransforms();
  drawEvents();
}

let inflight = null; // the refresh under way: {ctl}
let pendingLive = false;
// Whether every panel shows the view (tests wait for it before they point at something).
window.staxIdle = () => !inflight && waiting === 0 && perf.settled > 0;

// askEarly asks for the flame graph and the timeline of the view as the page opens, beside
// the status, which refresh waits for: on a big run they take longest to answer. Where
// the status says the run has a base to compare with, the graph is asked again with it.
function askEarly() {
  state.early = {};
  for (const [name, q] of [
    ["flame", query({}, { threshold_pct: PRUNE_PCT })],
    ["timeline", timelineParams()],
  ]) {
    const promise = api(name, q);
    promise.catch(() => {}); // refresh sees the error, if it takes the answer
    state.early[name] = { key: q.toString(), promise };
  }
}

// takeEarly is the answer askEarly asked for name with q, once; null if it asked another.
function takeEarly(name, q) {
  const e = state.early && state.early[name];
  if (!e) return null;
  state.early[name] = null;
  return e.key === q.toString() ? e.promise : null;
}

// refresh fetches what the view shows and draws it: the flame graph and the top table
// first, then the rest (timeline, changes, callers, code, the search's count). Answers
// the view already holds are not asked again, except on a live update. A change of the
// view while a refresh is under way cancels it.
async function refresh({ live = false, what = "", t0 = 0 } = {}) {
  if (live && inflight) {
    pendingLive = true;
    return;
  }
  if (inflight) inflight.ctl.abort();
  const me = { ctl: new AbortController() };
  inflight = me;
  const signal = me.ctl.signal;
  const busy = setTimeout(() => ($("#busy").hidden = false), 150);
  const need = (name, q) => live || state.keys[name] !== q.toString();
  if (live) state.liveGen = (state.liveGen || 0) + 1; // the callers panel asks again too
  let bytes = 0;
  try {
    const fq = query({}, { threshold_pct: PRUNE_PCT });
    // The base is weighed in the view's mode too (the server builds its tree so).
    if (state.summary && state.summary.diff && view.diff) fq.set("diff", "1");
    // Sorted by a counter (the page sorts), the table is of every function: the server
    // sorts by samples only.
    const tq = query({ inverted: false }, { sort: view.sort, n: view.weigh ? TOP_ALL : TOP_ROWS });
    // The timeline shows the whole run, whatever the view: it is where a window is picked.
    // It comes with the first answers (its height then stays), and again on live updates.
    const tlq = timelineParams(); // the part of the run shown (stackchart.js)
    // The top table comes once the graph is drawn, on the first load as after a change: on
    // two cores its query would slow the graph's, and its panel is below the graph.
    // Off CPU and wall: the timeline shows the threads' states too.
    const states = view.mode !== "cpu";
    const [fl, tl, st] = await Promise.all([
      need("flame", fq) ? takeEarly("flame", fq) || api("flame", fq, signal) : state.flame,
      need("timeline", tlq) ? (takeEarly("timeline", tlq) || api("timeline", tlq, signal)).catch((err) => err) : state.timeline,
      states && need("states", tlq) ? api("thread_states", tlq, signal).catch((err) => err) : state.states,
    ]);
    if (signal.aborted) return;
    const answered = performance.now();
    if (fl !== state.flame) bytes += fl._bytes;
    state.flame = fl;
    state.keys.flame = fq.toString();
    let redraw = (states ? st : null) !== state.tlStates;
    if (states && st !== state.states) {
      state.states = st;
      state.keys.states = tlq.toString();
      if (!(st instanceof Error)) bytes += st._bytes;
    }
    if (tl !== state.timeline || !state.keys.timeline) {
      redraw = false;
      state.keys.timeline = tlq.toString();
      if (tl instanceof Error) {
        state.timeline = null;
        state.tlGeom = null;
        const waiting = state.summary && state.summary.live && !state.summary.samples;
        $("#timeline").innerHTML = waiting ? '<p class="placeholder">waiting for the first samples</p>' : `<p class="error">${esc(tl.message)}</p>`;
      } else {
        bytes += tl._bytes;
        state.timeline = tl;
        drawTimeline();
      }
    }
    if (redraw && state.timeline) drawTimeline();
    // The answer says the window in seconds: the brush and the URL take it.
    if (fl.window) {
      view.from = fl.window.from_sec;
      view.to = fl.window.to_sec;
    }
    drawBrush();
    writeURL(false);
    drawFlame();
    if (state.top) drawTop();
    perf.refreshes++;
    const drawn = performance.now();
    if (t0) afterPaint(() => perf.changes.push({ what, ms: performance.now() - t0, answerMs: answered - t0, drawnMs: drawn - t0 }));
    if (view.search) countMatches();
    // The rest is asked once the graph is on screen: on two cores the server's work for
    // the other panels slowed the graph's painting (a big run's first graph: 264 ms from
    // its answer to the screen, with the top table and the stack chart answered meanwhile).
    if (!live) {
      await new Promise((done) => afterPaint(done));
      if (signal.aborted) return;
    }
    loadCalls();
    refreshViews(live); // the stack chart, the sandwich, the call tree
    // The rest: none of it holds up the graph.
    if (need("top", tq)) {
      try {
        const top = await api("top", tq, signal);
        if (signal.aborted) return;
        bytes += top._bytes;
        state.top = top;
        drawTop();
      } catch (err) {
        if (signal.aborted) return;
        $("#top tbody").innerHTML = `<tr><td colspan="${$("#top thead tr").children.length}" class="error">${esc(err.message)}</td></tr>`;
      }
      state.keys.top = tq.toString();
    }
    if (state.summary && state.summary.diff) {
      const cq = query({ inverted: false });
      if (need("changes", cq)) {
        try {
          const c = await api("changes", cq, signal);
          if (signal.aborted) return;
          bytes += c._bytes;
          state.changes = c;
        } catch (err) {
          if (signal.aborted) return;
          state.changes = null;
          $("#changes tbody").innerHTML = `<tr><td colspan="5" class="error">${esc(err.message)}</td></tr>`;
        }
        state.keys.changes = cq.toString();
      }
      drawChanges();
    }
    // Who woke the threads: off CPU and wall views only, after the rest.
    if (view.mode === "cpu") $("#wakers-panel").hidden = true;
    else {
      const wq = query({ only: ["tid", "stacks"], stacks: 3 });
      if (need("wakers", wq)) {
        try {
          const wk = await api("wakers", wq, signal);
          if (signal.aborted) return;
          bytes += wk._bytes;
          state.wakers = wk;
        } catch (err) {
          if (signal.aborted) return;
          state.wakers = err;
        }
        state.keys.wakers = wq.toString();
      }
      drawWakers();
    }
    // A tracepoint's samples with their fields (samples.js).
    bytes += await loadSamples(need, signal);
    if (signal.aborted) return;
    if (view.code && (live || what)) await loadFunc();
    if (live) {
      perf.updates++;
      perf.updateBytes.push(bytes);
    }
    perf.settled++;
  } catch (err) {
    if (signal.aborted) return;
    $("#flame").innerHTML = `<p class="error">${esc(err.message)}</p>`;
    state.flameCanvas = null;
    state.flameEls = [];
  } finally {
    clearTimeout(busy);
    if (inflight === me) {
      inflight = null;
      $("#busy").hidden = true;
      if (pendingLive) {
        pendingLive = false;
        refresh({ live: true });
      }
    }
  }
}

async function loadThreads() {
  try {
    state.threads = await api("threads", query({ only: ["event"] }, { n: 200 }));
    drawThreads();
  } catch {
    // The selector keeps what it had.
  }
}

function follow() {
  const es = new EventSource(`/api/events?token=${encodeURIComponent(token)}`);
  let lastSamples = state.summary ? state.summary.samples : -1;
  let lastThreads = state.summary ? state.summary.threads : -1;
  es.addEventListener("status", (e) => {
    const s = JSON.parse(e.data);
    drawSummary(s);
    if (!s.live) {
      // The recording has ended: the server now answers from the stored run. Every view
      // is asked once more, for the final counts; nothing will change after.
      es.close();
      refresh({ live: true });
      loadThreads();
      return;
    }
    if (s.samples !== lastSamples) {
      lastSamples = s.samples;
      refresh({ live: true });
    }
    if (s.threads !== lastThreads) {
      lastThreads = s.threads;
      loadThreads();
    }
  });
}

async function main() {
  readURL();
  askEarly(); // before the page's set-up: the graph is what the first load waits for
  setupBrush();
  setupFlame();
  setupTransforms();
  setupTop();
  setupRowKeys();
  setupCalls();
  setupChanges();
  setupEvents();
  setupSamples();
  drawControls();
  $("#func-version").addEventListener("change", (e) => showFunc(view.code, Number(e.target.value)));
  window.addEventListener("resize", () => {
    drawTimeline();
    drawFlame();
  });
  window.addEventListener("popstate", () => {
    const event = view.event;
    readURL();
    if (view.event !== event) loadThreads();
    drawControls();
    refresh({ what: "history", t0: performance.now() });
  });
  // The theme follows the system's: colours are read again and the canvas repainted.
  matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => {
    palette = null;
    paintFlame();
  });
  try {
    drawSummary(await api("status"));
  } catch (err) {
    $("#strip").innerHTML = `<span class="error">${esc(err.message)}</span>`;
    return;
  }
  drawChanges();
  firstGraph.then(loadThreads); // the thread selector's list
  await refresh({});
  if (view.code) loadFunc();
  if (state.summary.live) follow();
}

main();
