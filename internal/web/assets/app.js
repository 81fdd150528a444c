"use strict";
// stax web: one page over one run. State lives here; the server only answers queries.

const token = document.querySelector('meta[name="stax-token"]').content;
const $ = (sel) => document.querySelector(sel);

const state = {
  summary: null,
  selection: null, // {from, to}: seconds from the run's start; null: the whole run
  zoomPath: [], // keys of the frames from the root down to the zoomed frame
  chosen: null, // the frame last clicked, offered for "show code"
  sort: "self",
  search: "",
  func: null, // the function shown in the code panel
  version: 0,
  flame: null,
  timeline: null,
  top: null,
  refreshing: false,
  pending: false,
};

// Figures a test (or a curious user, from the console) can read.
const perf = (window.staxPerf = {
  firstFlameMs: null, // from navigation start to the first flame graph on screen
  flameRenderMs: [], // each flame graph render
  lastBytes: {}, // bytes of the last answer per view
  updateBytes: [], // bytes fetched by each live update
  updates: 0,
});

// The flame graph's frames as drawn, for tests and the console: x, y, w, h are CSS pixels
// in the viewport.
window.staxFrames = () => {
  const box = state.flameCanvas ? state.flameCanvas.getBoundingClientRect() : { left: 0, top: 0 };
  return (state.flameEls || []).map((f) => ({
    func: f.n.func, image: f.n.image, kind: f.n.kind, total: f.n.total, match: f.match, ancestor: f.ancestor,
    x: box.left + f.x, y: box.top + f.depth * ROW, w: f.w, h: ROW - 1,
  }));
};

const fmtSec = (s) => (Math.round(s * 1000) / 1000).toString();
const commas = (n) => Number(n).toLocaleString("en-US");
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

async function api(view, params = {}, scoped = true) {
  const q = new URLSearchParams(params);
  if (scoped && state.selection) {
    q.set("from", fmtSec(state.selection.from));
    q.set("to", fmtSec(state.selection.to));
  }
  const res = await fetch(`/api/${view}?${q}`, { headers: { "X-Stax-Token": token } });
  const text = await res.text();
  perf.lastBytes[view] = text.length;
  let body = {};
  try {
    body = text ? JSON.parse(text) : {};
  } catch {
    throw new Error(`${view}: ${res.status} ${text.slice(0, 200)}`);
  }
  if (!res.ok) throw new Error(body.error || `${view}: ${res.status}`);
  body._bytes = text.length;
  return body;
}

// ---- status strip ----

function drawSummary(s) {
  state.summary = s;
  $("#run").textContent = `run ${s.run}` + (s.command && s.command.length ? ` · ${s.command.join(" ")}` : "");
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
  ].join("");
}

// ---- timeline ----

const TL = { label: 150, total: 40, row: 13, axis: 16 };

function drawTimeline() {
  const tl = state.timeline;
  const el = $("#timeline");
  if (!tl || !tl.buckets) {
    el.innerHTML = '<p class="placeholder">no samples with times yet</p>';
    return;
  }
  const W = Math.max(el.clientWidth, 300);
  const plotW = W - TL.label;
  const threads = tl.threads || [];
  const H = TL.total + threads.length * TL.row + TL.axis;
  const bw = plotW / tl.buckets;
  const maxTotal = Math.max(1, ...tl.total);
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">`];
  parts.push(`<text class="label" x="4" y="${TL.total - 4}">all threads</text>`);
  tl.total.forEach((c, i) => {
    if (!c) return;
    const h = (c / maxTotal) * (TL.total - 4);
    parts.push(`<rect x="${TL.label + i * bw}" y="${TL.total - h}" width="${Math.max(bw - 0.5, 0.5)}" height="${h}" fill="#286ee6"/>`);
  });
  threads.forEach((t, r) => {
    const y = TL.total + r * TL.row;
    const max = Math.max(1, ...t.counts);
    parts.push(`<text class="label" x="4" y="${y + TL.row - 3}">${esc(t.name || "?")} ${t.tid}</text>`);
    t.counts.forEach((c, i) => {
      if (!c) return;
      parts.push(`<rect x="${TL.label + i * bw}" y="${y + 1}" width="${Math.max(bw, 0.5)}" height="${TL.row - 2}" fill="#e8663d" fill-opacity="${(0.15 + (0.85 * c) / max).toFixed(2)}"/>`);
    });
  });
  const span = tl.buckets * tl.bucket_sec;
  for (let k = 0; k <= 5; k++) {
    const x = TL.label + (k / 5) * plotW;
    const anchor = k === 0 ? "start" : k === 5 ? "end" : "middle";
    parts.push(`<text class="label" x="${x}" y="${H - 3}" text-anchor="${anchor}">${(tl.start_sec + (k / 5) * span).toFixed(2)}s</text>`);
  }
  parts.push("</svg>");
  el.innerHTML = parts.join("") + '<div class="brush" hidden></div>';
  state.tlGeom = { x0: TL.label, w: plotW, start: tl.start_sec, span };
  window.staxTimeline = state.tlGeom;
  drawBrush();
}

function secAt(x) {
  const g = state.tlGeom;
  const f = Math.min(Math.max((x - g.x0) / g.w, 0), 1);
  return g.start + f * g.span;
}

function drawBrush(from, to) {
  const b = $("#timeline .brush");
  const g = state.tlGeom;
  if (!b || !g) return;
  const sel = from !== undefined ? { from, to } : state.selection;
  if (!sel) {
    b.hidden = true;
  } else {
    const x1 = g.x0 + ((sel.from - g.start) / g.span) * g.w;
    const x2 = g.x0 + ((sel.to - g.start) / g.span) * g.w;
    b.hidden = false;
    b.style.left = `${Math.min(x1, x2)}px`;
    b.style.width = `${Math.max(Math.abs(x2 - x1), 1)}px`;
  }
  $("#selection").textContent = state.selection ? `window ${state.selection.from.toFixed(2)}s – ${state.selection.to.toFixed(2)}s` : "";
  $("#clear-selection").hidden = !state.selection;
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
      drawBrush();
      return;
    }
    select({ from: secAt(a), to: secAt(b) });
  });
  el.addEventListener("dblclick", () => select(null));
  $("#clear-selection").addEventListener("click", () => select(null));
}

function select(sel) {
  state.selection = sel;
  drawBrush();
  refresh(false);
}

// ---- flame graph ----

const ROW = 18;
const keyOf = (n) => `${n.func}\u0000${n.image}`;

function zoomNode() {
  let n = state.flame && state.flame.root;
  const chain = n ? [n] : [];
  for (const key of state.zoomPath) {
    const next = (n.children || []).find((c) => keyOf(c) === key);
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
const KIND_COLOR = { user: "#f2a65a", jit: "#6cc070", kernel: "#7aa7e0", unknown: "#bbb", root: "#bbb" };
const MATCH_COLOR = "#d4009a";
const LABEL_MIN_PX = 28;

function drawFlame() {
  const t0 = performance.now();
  const el = $("#flame");
  const root = state.flame && state.flame.root;
  if (!root || !root.total) {
    el.innerHTML = '<p class="placeholder">no samples in this window</p>';
    state.flameEls = [];
    state.flameCanvas = null;
    return;
  }
  const chain = zoomNode();
  const zoom = chain[chain.length - 1];
  const W = Math.max(el.clientWidth, 300);
  const minFrac = 0.5 / W; // narrower than half a pixel: not drawn
  const nodes = [];
  const add = (n, path, depth, x, w, ancestor) => nodes.push({ n, path, depth, x: x * W, w: w * W, ancestor, match: false });
  const ancestorPath = [];
  chain.forEach((n, d) => {
    if (d > 0) ancestorPath.push(keyOf(n));
    if (d < chain.length - 1) add(n, ancestorPath.slice(), d, 0, 1, true);
  });
  let maxDepth = chain.length - 1;
  const walk = (n, path, depth, x, w) => {
    add(n, path, depth, x, w, false);
    maxDepth = Math.max(maxDepth, depth);
    let cx = x;
    for (const c of n.children || []) {
      const cw = (w * c.total) / n.total;
      if (cw >= minFrac) walk(c, path.concat(keyOf(c)), depth + 1, cx, cw);
      cx += cw;
    }
  };
  walk(zoom, ancestorPath.slice(), chain.length - 1, 0, 1);
  let canvas = state.flameCanvas;
  if (!canvas || canvas.parentNode !== el) {
    canvas = document.createElement("canvas");
    el.replaceChildren(canvas);
    state.flameCanvas = canvas;
  }
  const H = (maxDepth + 1) * ROW + 2;
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(W * dpr);
  canvas.height = Math.round(H * dpr);
  canvas.style.width = `${W}px`;
  canvas.style.height = `${H}px`;
  state.flameEls = nodes;
  state.flameWidth = W;
  $("#reset-zoom").hidden = state.zoomPath.length === 0;
  applySearch(); // marks matches and paints
  // Timed to the frame after the next paint: layout and paint included.
  requestAnimationFrame(() =>
    setTimeout(() => {
      perf.flameRenderMs.push(performance.now() - t0);
      if (perf.firstFlameMs === null) perf.firstFlameMs = performance.now();
    }),
  );
}

function paintFlame() {
  const canvas = state.flameCanvas;
  if (!canvas) return;
  const dpr = window.devicePixelRatio || 1;
  // A CPU-backed canvas: in software-rendered browsers a GPU-emulated one took several
  // times longer to reach the screen.
  const g = canvas.getContext("2d", { willReadFrequently: true });
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, canvas.width, canvas.height);
  g.font = '11px system-ui, -apple-system, "Segoe UI", sans-serif';
  g.textBaseline = "middle";
  for (const f of state.flameEls) {
    const y = f.depth * ROW;
    g.globalAlpha = f.ancestor ? 0.55 : 1;
    g.fillStyle = f.match ? MATCH_COLOR : KIND_COLOR[f.n.kind] || KIND_COLOR.unknown;
    // Edges on whole device pixels, a one-pixel gap right and below: frames stay apart.
    const x0 = Math.round(f.x * dpr), x1 = Math.round((f.x + f.w) * dpr);
    g.fillRect(x0 / dpr, y, Math.max(x1 - x0 - 1, 1) / dpr, ROW - 1);
    if (f.w > LABEL_MIN_PX) {
      g.fillStyle = f.match ? "#fff" : "#222";
      g.fillText(fitLabel(g, frameLabel(f.n), f.w - 6), f.x + 3, y + ROW / 2);
    }
  }
  g.globalAlpha = 1;
}

const frameLabel = (n) => n.func + (n.inlined ? " (inlined)" : "");

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

function applySearch() {
  const q = state.search.toLowerCase();
  let frames = 0;
  let samples = 0;
  const counted = [];
  for (const item of state.flameEls || []) {
    const hit = q !== "" && item.n.func.toLowerCase().includes(q);
    item.match = hit;
    if (hit) {
      frames++;
      // Count samples once: skip matches below another match.
      if (!counted.some((p) => item.path.length > p.length && p.every((k, j) => item.path[j] === k))) {
        samples += item.n.total;
        counted.push(item.path);
      }
    }
  }
  paintFlame();
  const root = state.flame && state.flame.root;
  $("#search-result").textContent = q && root ? `${frames} ${frames === 1 ? "frame matches" : "frames match"} · ${((100 * samples) / Math.max(root.total, 1)).toFixed(1)}% of samples` : "";
}

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

function setupFlame() {
  const el = $("#flame");
  el.addEventListener("click", (e) => {
    const item = frameAt(e);
    if (!item) return;
    state.zoomPath = item.path;
    state.chosen = item.n;
    drawFlame();
    drawFrameInfo();
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
    tip.innerHTML = `<div><b>${esc(n.func)}</b>${n.inlined ? " (inlined)" : ""}</div><div class="img">${esc(n.image || "")} · ${esc(n.kind)}</div>` +
      `<div>total ${commas(n.total)} (${((100 * n.total) / root.total).toFixed(2)}%) · self ${commas(n.self)}</div>`;
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
    state.search = e.target.value;
    applySearch();
  });
  $("#reset-zoom").addEventListener("click", () => {
    state.zoomPath = [];
    drawFlame();
  });
}

function drawFrameInfo() {
  const n = state.chosen;
  const info = $("#frame-info");
  if (!n || n.kind === "root") {
    info.textContent = "";
    return;
  }
  info.innerHTML = `<b>${esc(n.func)}</b> · ${esc(n.image || "")} · total ${commas(n.total)} · self ${commas(n.self)} <button id="show-code">show code</button>`;
  $("#show-code").addEventListener("click", () => showFunc(n.func));
}

// ---- top table ----

function drawTop() {
  const rows = (state.top && state.top.rows) || [];
  const body = rows.map((r, i) =>
    `<tr data-i="${i}" class="${r.func === state.func ? "chosen" : ""}"><td class="num">${r.self_pct.toFixed(2)}%</td><td class="num">${r.total_pct.toFixed(2)}%</td>` +
    `<td class="k k-${esc(r.kind)}-text" title="${esc(r.func)}">${esc(r.func)}${r.inlined ? " (inlined)" : ""}</td><td title="${esc(r.image)}">${esc(r.image)}</td></tr>`);
  $("#top tbody").innerHTML = body.join("");
  for (const th of document.querySelectorAll("#top th[data-sort]")) th.classList.toggle("sorted", th.dataset.sort === state.sort);
}

function setupTop() {
  $("#top tbody").addEventListener("click", (e) => {
    const tr = e.target.closest("tr");
    if (!tr) return;
    const r = state.top.rows[tr.dataset.i];
    showFunc(r.func + (r.inlined ? " (inlined)" : ""));
  });
  for (const th of document.querySelectorAll("#top th[data-sort]")) {
    th.addEventListener("click", async () => {
      state.sort = th.dataset.sort;
      await loadTop();
    });
  }
}

async function loadTop() {
  try {
    state.top = await api("top", { sort: state.sort, n: 100 });
    drawTop();
  } catch (err) {
    $("#top tbody").innerHTML = `<tr><td colspan="4" class="error">${esc(err.message)}</td></tr>`;
  }
}

// ---- code of one function ----

async function showFunc(name, version = 0) {
  state.func = name;
  state.version = version;
  drawTop();
  await loadFunc();
  $("#func-panel").scrollIntoView({ block: "nearest" });
}

async function loadFunc() {
  if (!state.func) return;
  const pre = $("#annotate");
  $("#func-title").textContent = state.func;
  try {
    const params = { target: state.func };
    if (state.version) params.version = state.version;
    const a = await api("annotate", params);
    pre.className = "";
    pre.innerHTML = a.text.split("\n").map((line) => {
      // Instruction rows start with their samples; source rows are indented text.
      const cls = /^\s*\d+\.\d+\s+[\d,]+\s/.test(line) ? "hot" : /│ \S.*:\d+/.test(line) ? "src" : "";
      return cls ? `<span class="${cls}">${esc(line)}</span>` : esc(line);
    }).join("\n");
    const sel = $("#func-version");
    const versions = a.versions || [];
    sel.hidden = versions.length < 2;
    sel.innerHTML = versions.map((v) => `<option value="${v.index}" ${v.index === a.version ? "selected" : ""}>version ${v.index}: ${commas(v.samples)} samples (${v.percent.toFixed(1)}%)</option>`).join("");
  } catch (err) {
    pre.className = "error";
    pre.textContent = err.message;
  }
}

// ---- refreshing ----

async function refresh(live) {
  if (state.refreshing) {
    state.pending = true;
    return;
  }
  state.refreshing = true;
  try {
    const [tl, fl, top] = await Promise.all([
      live || !state.timeline ? api("timeline", {}, false) : Promise.resolve(state.timeline),
      api("flame"),
      api("top", { sort: state.sort, n: 100 }),
    ]);
    if (live) {
      perf.updates++;
      perf.updateBytes.push((tl._bytes || 0) + fl._bytes + top._bytes);
    }
    state.timeline = tl;
    state.flame = fl;
    state.top = top;
    drawTimeline();
    drawFlame();
    drawTop();
    if (state.func) await loadFunc();
  } catch (err) {
    $("#flame").innerHTML = `<p class="error">${esc(err.message)}</p>`;
  } finally {
    state.refreshing = false;
    if (state.pending) {
      state.pending = false;
      refresh(true);
    }
  }
}

function follow() {
  const es = new EventSource(`/api/events?token=${encodeURIComponent(token)}`);
  let lastSamples = state.summary ? state.summary.samples : -1;
  es.addEventListener("status", (e) => {
    const s = JSON.parse(e.data);
    drawSummary(s);
    if (s.samples !== lastSamples) {
      lastSamples = s.samples;
      refresh(true);
    }
    if (!s.live) es.close();
  });
}

async function main() {
  setupBrush();
  setupFlame();
  setupTop();
  $("#func-version").addEventListener("change", (e) => showFunc(state.func, Number(e.target.value)));
  window.addEventListener("resize", () => {
    drawTimeline();
    drawFlame();
  });
  try {
    drawSummary(await api("status", {}, false));
  } catch (err) {
    $("#strip").innerHTML = `<span class="error">${esc(err.message)}</span>`;
    return;
  }
  await refresh(false);
  if (state.summary.live) follow();
}

main();
