"use strict";
// The stack chart, and the timeline's zoom and pan, which it shares.
//
// The stack chart is one thread's stacks over time (/api/stack_chart): time across, on the
// timeline's axis (a box is under the timeline's bucket of its time), depth down, one box
// per stretch of time a function stayed on the stack; time off CPU (in the off-CPU and
// wall modes) in its reason's colour. The thread is the one selected, else the busiest
// one of the timeline. The wheel zooms both around the pointer (shift, or a sideways
// wheel, pans); dragging the chart pans; the timeline's buttons zoom in, out, to the
// window, and back to the whole run. Each zoom asks the server again, at the chart's width
// in pixels: a box narrower than a pixel is left out (the header counts them), so a long
// run costs what the screen shows, and zooming in shows more.
//
// Loaded before app.js: its functions use app.js's when called, never at load.

// tlZoom is the part of the run the timeline and the stack chart show, in seconds from the
// run's start; null: all of it.
const tlZoom = { from: null, to: null };
const SC = { row: 16, minLabel: 28, minSpan: 0.0005 };
const sc = { answer: null, key: "", boxes: [], canvas: null, error: "" };
const stackTimer = { id: 0 };
const zoomTimer = { id: 0 };

// timelineParams is the timeline's query: 200 buckets over the part of the run shown.
function timelineParams() {
  const q = query({ only: ["threads", "buckets", "event"], threads: 16, buckets: 200 });
  if (tlZoom.from !== null) {
    q.set("from", fmtSec(tlZoom.from));
    q.set("to", fmtSec(tlZoom.to));
  }
  return q;
}

// runSpan is the whole run, in seconds from its start: as long as the whole timeline, or
// as the run has lasted.
const runSpan = () => Math.max((state.summary && state.summary.elapsed_sec) || 0, sc.fullEnd || 0, SC.minSpan);

// shown is the part of the run shown: the zoom, else the whole timeline.
function shown() {
  if (tlZoom.from !== null) return { from: tlZoom.from, to: tlZoom.to };
  const g = state.tlGeom;
  return g ? { from: g.start, to: g.start + g.span } : { from: 0, to: runSpan() };
}

// setZoom shows from..to (null: the whole run), then asks for the timeline and the chart.
function setZoom(from, to) {
  const end = runSpan();
  if (from !== null) {
    let span = Math.max(to - from, SC.minSpan);
    if (span >= end) from = to = null;
    else {
      from = Math.min(Math.max(from, 0), end - span);
      to = from + span;
    }
  }
  tlZoom.from = from;
  tlZoom.to = to;
  writeURL(false);
  drawZoomControls();
  // Wheel events come in bursts: ask once they rest.
  soon(zoomTimer, 60, () => refresh({ what: "timeline zoom", t0: performance.now() }));
}

// zoomBy scales the part shown by f (below 1: in) around at (seconds).
function zoomBy(f, at) {
  const s = shown();
  if (at === undefined) at = (s.from + s.to) / 2;
  setZoom(at - (at - s.from) * f, at + (s.to - at) * f);
}

function panBy(sec) {
  const s = shown();
  if (tlZoom.from === null) return;
  setZoom(s.from + sec, s.to + sec);
}

function drawZoomControls() {
  const zoomed = tlZoom.from !== null;
  $("#tl-zoom-reset").hidden = !zoomed;
  $("#tl-zoom-window").hidden = view.from === null || typeof view.from !== "number";
  $("#tl-range").textContent = zoomed ? `showing ${tlZoom.from.toFixed(3)}s – ${tlZoom.to.toFixed(3)}s` : "";
}

// secAtX is the time at a viewport x over the timeline's axis.
function secAtX(clientX) {
  const g = state.tlGeom;
  const box = $("#timeline").getBoundingClientRect();
  return g.start + ((clientX - box.left - g.x0) / g.w) * g.span;
}

// wheel zooms (or pans, with shift or a sideways wheel) the timeline and the chart.
function wheel(e) {
  if (!state.tlGeom) return;
  e.preventDefault();
  const s = shown();
  if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
    const d = e.shiftKey && !e.deltaX ? e.deltaY : e.deltaX;
    panBy((d / state.tlGeom.w) * (s.to - s.from));
    return;
  }
  zoomBy(e.deltaY > 0 ? 1.25 : 0.8, secAtX(e.clientX));
}

// ---- the chart ----

// chartThread is the thread the chart shows: the one selected, else the busiest of the
// selected process, else of the run (as the timeline counts them).
function chartThread() {
  if (view.tid) return view.tid;
  const ths = (state.timeline && state.timeline.threads) || [];
  const t = view.pid ? ths.find((x) => x.pid === view.pid) : ths[0];
  return t ? t.tid : 0;
}

// loadStackChart asks for the chart of the view (thread, part shown, mode, transforms)
// unless it holds it; live: ask again.
function loadStackChart(live) {
  const g = state.tlGeom;
  const el = $("#stackchart");
  if (!g || !el) return;
  if (tlZoom.from === null) sc.fullEnd = g.start + g.span;
  drawZoomControls();
  const tid = chartThread();
  if (!tid) {
    sc.answer = null;
    sc.key = "";
    el.innerHTML = `<p class="placeholder">${emptyText()}</p>`;
    return;
  }
  const q = query({ window: false, inverted: false }, { tid, from: fmtSec(g.start), to: fmtSec(g.start + g.span), width: Math.max(Math.round(g.w), 1) });
  const key = q.toString();
  if (!live && key === sc.key) return;
  sc.key = key;
  soon(stackTimer, 0, async () => {
    try {
      const a = await api("stack_chart", q);
      if (sc.key !== key) return;
      sc.answer = a;
      sc.error = "";
    } catch (err) {
      if (sc.key !== key) return;
      sc.answer = null;
      sc.error = err.message;
    }
    drawStackChart();
  });
}

function drawStackChart() {
  const el = $("#stackchart");
  const a = sc.answer;
  const g = state.tlGeom;
  if (sc.error) {
    el.innerHTML = `<p class="error">${esc(sc.error)}</p>`;
    sc.canvas = null;
    sc.boxes = [];
    $("#stackchart-title").textContent = "";
    return;
  }
  if (!a || !g) return;
  setEventTag("#stackchart-event", a.event);
  const unit = view.mode === "cpu" ? "" : `, off CPU ${commas(Math.round(a.off_ns / 1e6))} ms`;
  const hidden = a.hidden ? ` · ${commas(a.hidden)} boxes under a pixel's ${fmtDur(a.min_ns)} not drawn (zoom in)` : "";
  $("#stackchart-title").textContent = `${a.name || "?"} ${a.tid}: ${commas(a.samples)} samples${unit}${hidden}${a.truncated ? " · too many boxes: the chart stops early" : ""}`;
  if (!a.boxes.length) {
    el.innerHTML = `<p class="placeholder">no samples of thread ${a.tid} here</p>`;
    sc.canvas = null;
    sc.boxes = [];
    return;
  }
  const W = Math.max($("#timeline").clientWidth, 300);
  let depth = 0;
  for (const b of a.boxes) depth = Math.max(depth, b.d);
  const H = (depth + 1) * SC.row + 1;
  let canvas = sc.canvas;
  if (!canvas || canvas.parentNode !== el) {
    canvas = document.createElement("canvas");
    canvas.setAttribute("aria-label", "stack chart: wheel zooms, drag pans");
    el.replaceChildren(canvas);
    sc.canvas = canvas;
  }
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(W * dpr);
  canvas.height = Math.round(H * dpr);
  canvas.style.width = `${W}px`;
  canvas.style.height = `${H}px`;
  // On the timeline's axis: its plot's left edge and width, its start and span.
  const xOf = (ns) => g.x0 + ((a.start_sec + ns / 1e9 - g.start) / g.span) * g.w;
  sc.boxes = [];
  for (const b of a.boxes) {
    const x1 = Math.max(xOf(b.s), g.x0), x2 = Math.min(xOf(b.e), g.x0 + g.w);
    if (x2 - x1 < 0.5) continue;
    const f = a.frames[b.f];
    sc.boxes.push({ b, f, x: x1, w: x2 - x1, y: b.d * SC.row });
  }
  paintStackChart();
}

const fmtDur = (ns) => (ns >= 1e9 ? `${(ns / 1e9).toFixed(2)} s` : ns >= 1e6 ? `${(ns / 1e6).toFixed(ns >= 1e8 ? 0 : 1)} ms` : `${(ns / 1e3).toFixed(0)} µs`);

function paintStackChart() {
  const canvas = sc.canvas;
  if (!canvas) return;
  const p = colours();
  const dpr = window.devicePixelRatio || 1;
  const g = canvas.getContext("2d", { willReadFrequently: true });
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, canvas.width, canvas.height);
  g.font = '11px system-ui, -apple-system, "Segoe UI", sans-serif';
  g.textBaseline = "middle";
  let re = null;
  try {
    re = view.search ? searchRegExp(view.search) : null;
  } catch {
    re = null;
  }
  const a = sc.answer;
  g.fillStyle = getComputedStyle(document.documentElement).getPropertyValue("--muted").trim() || "#888";
  g.fillText(fitLabel(g, `${a.name || "?"} ${a.tid}`, state.tlGeom.x0 - 8), 4, SC.row / 2);
  for (const s of sc.boxes) {
    s.match = !!re && re.test(s.f.func);
    g.fillStyle = s.match
      ? p.match
      : byFunction()
        ? funcColour(s.f)
        : !s.b.n && s.b.r
          ? p.reason[s.b.r] || p.reason.other
          : p[s.f.kind] || p.unknown;
    const x0 = Math.round(s.x * dpr), x1 = Math.round((s.x + s.w) * dpr);
    g.fillRect(x0 / dpr, s.y, Math.max(x1 - x0 - (s.w > 2 ? 1 : 0), 1) / dpr, SC.row - 1);
    if (s.w > SC.minLabel) {
      g.fillStyle = s.match ? p.matchText : p.text;
      g.fillText(fitLabel(g, s.f.func + (s.f.inlined ? " (inlined)" : ""), s.w - 6), s.x + 3, s.y + SC.row / 2);
    }
  }
}

// The chart's boxes as drawn, for tests and the console: x, y, w, h are CSS pixels in the
// viewport.
window.staxStackChart = () => {
  if (!sc.canvas) return [];
  const box = sc.canvas.getBoundingClientRect();
  return sc.boxes.map((s) => ({
    func: s.f.func, image: s.f.image, kind: s.f.kind, depth: s.b.d, samples: s.b.n || 0, off_ns: s.b.off || 0, reason: s.b.r || "",
    start_sec: sc.answer.start_sec + s.b.s / 1e9, end_sec: sc.answer.start_sec + s.b.e / 1e9,
    x: box.left + s.x, y: box.top + s.y, w: s.w, h: SC.row - 1,
  }));
};

function boxAt(e) {
  if (!sc.canvas || e.target !== sc.canvas) return null;
  const r = sc.canvas.getBoundingClientRect();
  const x = e.clientX - r.left, y = e.clientY - r.top;
  const d = Math.floor(y / SC.row);
  for (const s of sc.boxes) if (s.b.d === d && x >= s.x && x < s.x + s.w) return s;
  return null;
}

function setupStackChart() {
  const el = $("#stackchart");
  const tl = $("#timeline");
  tl.addEventListener("wheel", wheel, { passive: false });
  el.addEventListener("wheel", wheel, { passive: false });
  $("#tl-zoom-in").addEventListener("click", () => zoomBy(0.5));
  $("#tl-zoom-out").addEventListener("click", () => zoomBy(2));
  $("#tl-zoom-reset").addEventListener("click", () => setZoom(null, null));
  $("#tl-zoom-window").addEventListener("click", () => {
    if (typeof view.from === "number") setZoom(view.from, view.to);
  });
  // Dragging the chart pans it (and the timeline).
  let drag = null;
  el.addEventListener("mousedown", (e) => {
    if (e.button !== 0 || !state.tlGeom) return;
    drag = { x: e.clientX, moved: false };
    e.preventDefault();
  });
  window.addEventListener("mousemove", (e) => {
    if (!drag) return;
    const dx = e.clientX - drag.x;
    if (Math.abs(dx) < 3 && !drag.moved) return;
    drag.moved = true;
    drag.x = e.clientX;
    const s = shown();
    panBy((-dx / state.tlGeom.w) * (s.to - s.from));
  });
  window.addEventListener("mouseup", (e) => {
    if (!drag) return;
    const moved = drag.moved;
    drag = null;
    if (moved) return;
    // A click: the function's sandwich.
    const s = boxAt(e);
    if (s) showSandwich({ func: s.f.func, image: s.f.image, kind: s.f.kind, inlined: s.f.inlined });
  });
  const tip = $("#tooltip");
  el.addEventListener("mousemove", (e) => {
    const s = boxAt(e);
    if (!s) {
      tip.hidden = true;
      return;
    }
    const b = s.b;
    const off = b.off ? ` · off CPU ${fmtDur(b.off)}${b.r ? " (" + esc(b.r) + ")" : ""}` : "";
    tip.innerHTML = `<div><b>${esc(s.f.func)}</b>${s.f.inlined ? " (inlined)" : ""}</div><div class="img">${esc(s.f.image || "")} · ${esc(s.f.kind)}</div>` +
      `<div>${fmtDur(b.e - b.s)} from ${(sc.answer.start_sec + b.s / 1e9).toFixed(4)}s · ${commas(b.n || 0)} samples${off}</div>`;
    tip.hidden = false;
    tip.style.left = `${Math.min(e.clientX + 12, window.innerWidth - tip.offsetWidth - 4)}px`;
    tip.style.top = `${e.clientY + 14}px`;
  });
  el.addEventListener("mouseleave", () => (tip.hidden = true));
  drawZoomControls();
}
addEventListener("DOMContentLoaded", setupStackChart);
