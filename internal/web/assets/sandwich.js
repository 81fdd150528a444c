"use strict";
// The sandwich (speedscope's): a function's callers above it and its callees below it,
// each merged over every stack through the function (flame's callers_of= and callees_of=,
// stacks cut at the function's outermost appearance, as a focus cuts them), in the view
// (window, thread, mode, transforms). The function is the flame graph's selection, or a
// box clicked in the stack chart; a frame clicked in the sandwich becomes its function.
//
// Loaded before app.js: its functions use app.js's when called, never at load.

const SW = { row: 18 };
const sw = { fn: null, key: "", callers: null, callees: null, els: { callers: [], callees: [] }, error: "" };
const sandwichTimer = { id: 0 };

// followSelection makes the flame graph's selection the sandwich's function.
function followSelection() {
  const f = state.selected;
  if (f && f.n.kind !== "root") showSandwich(f.n);
}

// showSandwich asks for fn's callers and callees in the view, unless it holds them; live:
// ask again.
function showSandwich(fn, live) {
  if (!fn) return;
  const key = `${fn.func}\u0000${fn.image}\u0001${filterKey()}`;
  if (!live && key === sw.key) return;
  sw.key = key;
  sw.fn = fn;
  $("#sandwich-title").innerHTML = `Sandwich of <b>${esc(frameLabel(fn))}</b> <span class="hint">loading…</span>`;
  soon(sandwichTimer, 80, async () => {
    const side = (name) => {
      const q = query({ inverted: false });
      q.set(name, reQuote(fn.func));
      return api("flame", q);
    };
    try {
      const [up, down] = await Promise.all([side("callers_of"), side("callees_of")]);
      if (sw.key !== key) return;
      sw.callers = up;
      sw.callees = down;
      sw.error = "";
    } catch (err) {
      if (sw.key !== key) return;
      sw.error = err.message;
    }
    drawSandwich();
  });
}

// top is the function's node of a side's tree: the root's one child, or, when the name
// matched functions of several images, the root itself, named after it.
function sideTop(a) {
  const r = a && a.root;
  if (!r || !r.total) return null;
  if ((r.children || []).length === 1) return r.children[0];
  return Object.assign({}, r, { func: sw.fn.func, image: sw.fn.image || "", kind: sw.fn.kind || "unknown" });
}

function drawSandwich() {
  const panel = $("#sandwich-panel");
  if (sw.error) {
    $("#sandwich-title").innerHTML = `<span class="error">${esc(sw.error)}</span>`;
    return;
  }
  setEventTag("#sandwich-event", sw.callers && sw.callers.event);
  const up = sideTop(sw.callers), down = sideTop(sw.callees);
  if (!up || !down) {
    $("#sandwich-title").innerHTML = `Sandwich of <b>${esc(frameLabel(sw.fn))}</b> <span class="hint">no samples through it in this view</span>`;
    for (const s of ["callers", "callees"]) layoutSide(s, null);
    return;
  }
  $("#sandwich-title").innerHTML = `Sandwich of <b>${esc(frameLabel(sw.fn))}</b> <span class="hint">total ${amount(down.total)}, self ${amount(down.self)}; callers above, callees below</span>`;
  layoutSide("callers", up);
  layoutSide("callees", down);
  panel.dataset.fn = sw.fn.func;
  paintSandwich();
}

// layoutSide places a side's frames: the function spans the width; callers are drawn
// upwards from it (it is the bottom row), callees downwards (the top row).
function layoutSide(side, top) {
  const el = $(`#sandwich-${side}`);
  const els = (sw.els[side] = []);
  if (!top) {
    el.innerHTML = "";
    return;
  }
  const W = Math.max(el.clientWidth, 300);
  const minFrac = 0.5 / W;
  let maxDepth = 0;
  const walk = (n, depth, x, w) => {
    els.push({ n, depth, x: x * W, w: w * W });
    maxDepth = Math.max(maxDepth, depth);
    let cx = x;
    for (const c of n.children || []) {
      const cw = (w * c.total) / n.total;
      if (cw >= minFrac) walk(c, depth + 1, cx, cw);
      cx += cw;
    }
  };
  walk(top, 0, 0, 1);
  const rows = maxDepth + 1;
  for (const f of els) f.y = (side === "callers" ? rows - 1 - f.depth : f.depth) * SW.row;
  let canvas = el.querySelector("canvas");
  if (!canvas) {
    canvas = document.createElement("canvas");
    el.replaceChildren(canvas);
  }
  const H = rows * SW.row + 1;
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(W * dpr);
  canvas.height = Math.round(H * dpr);
  canvas.style.width = `${W}px`;
  canvas.style.height = `${H}px`;
  canvas.dataset.side = side;
  if (side === "callers") el.scrollTop = el.scrollHeight; // the function, at the bottom
}

function paintSandwich() {
  const p = colours();
  const dpr = window.devicePixelRatio || 1;
  const reasons = view.mode !== "cpu";
  for (const side of ["callers", "callees"]) {
    const canvas = $(`#sandwich-${side} canvas`);
    if (!canvas) continue;
    const g = canvas.getContext("2d", { willReadFrequently: true });
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, canvas.width, canvas.height);
    g.font = '11px system-ui, -apple-system, "Segoe UI", sans-serif';
    g.textBaseline = "middle";
    for (const f of sw.els[side]) {
      g.fillStyle = byFunction() ? funcColour(f.n) : (reasons && p.reason[f.n.reason]) || p[f.n.kind] || p.unknown;
      const x0 = Math.round(f.x * dpr), x1 = Math.round((f.x + f.w) * dpr);
      g.fillRect(x0 / dpr, f.y, Math.max(x1 - x0 - 1, 1) / dpr, SW.row - 1);
      if (f.w > LABEL_MIN_PX) {
        g.fillStyle = p.text;
        g.fillText(fitLabel(g, frameLabel(f.n), f.w - 6), f.x + 3, f.y + SW.row / 2);
      }
    }
  }
}

// The sandwich's frames as drawn, for tests and the console: side, and x, y, w, h in CSS
// pixels of the viewport.
window.staxSandwich = () => {
  const out = [];
  for (const side of ["callers", "callees"]) {
    const canvas = $(`#sandwich-${side} canvas`);
    if (!canvas) continue;
    const box = canvas.getBoundingClientRect();
    for (const f of sw.els[side]) out.push({ side, func: f.n.func, kind: f.n.kind, total: f.n.total, self: f.n.self, depth: f.depth, x: box.left + f.x, y: box.top + f.y, w: f.w, h: SW.row - 1 });
  }
  return out;
};

function sandwichFrameAt(e) {
  const canvas = e.target;
  if (!canvas || canvas.tagName !== "CANVAS" || !canvas.dataset.side) return null;
  const r = canvas.getBoundingClientRect();
  const x = e.clientX - r.left, y = e.clientY - r.top;
  for (const f of sw.els[canvas.dataset.side]) if (y >= f.y && y < f.y + SW.row - 1 && x >= f.x && x < f.x + f.w) return f;
  return null;
}

function setupSandwich() {
  const el = $("#sandwich-panel");
  el.addEventListener("click", (e) => {
    const f = sandwichFrameAt(e);
    if (f && f.depth > 0) showSandwich(f.n);
  });
  const tip = $("#tooltip");
  el.addEventListener("mousemove", (e) => {
    const f = sandwichFrameAt(e);
    if (!f) {
      tip.hidden = true;
      return;
    }
    const n = f.n;
    tip.innerHTML = `<div><b>${esc(n.func)}</b>${n.inlined ? " (inlined)" : ""}</div><div class="img">${esc(n.image || "")} · ${esc(n.kind)}</div>` +
      `<div>total ${amount(n.total)} · self ${amount(n.self)}${n.reason ? " · " + esc(n.reason) : ""}</div>`;
    tip.hidden = false;
    tip.style.left = `${Math.min(e.clientX + 12, window.innerWidth - tip.offsetWidth - 4)}px`;
    tip.style.top = `${e.clientY + 14}px`;
  });
  el.addEventListener("mouseleave", () => (tip.hidden = true));
  new ResizeObserver(() => {
    if (sw.callers && !sw.error) drawSandwich();
  }).observe($("#sandwich-callees"));
}
addEventListener("DOMContentLoaded", setupSandwich);
