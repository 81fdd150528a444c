"use strict";
// Colour by function: each function its own colour, the same on every load and in every
// view (a hash of its name), in its kind's hue (native orange, JIT green, kernel blue) so
// the kinds stay apart. An option (colour=func in the URL); the flame graph, the stack
// chart and the sandwich take it.

const funcColourCache = new Map();

// hash32 is FNV-1a of s.
function hash32(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

// hslOf turns #rrggbb into [h, s, l] (degrees, percent, percent).
function hslOf(hex) {
  const m = /^#?([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex || "");
  if (!m) return [0, 0, 70];
  const [r, g, b] = [m[1], m[2], m[3]].map((x) => parseInt(x, 16) / 255);
  const hi = Math.max(r, g, b), lo = Math.min(r, g, b), l = (hi + lo) / 2;
  if (hi === lo) return [0, 0, l * 100];
  const d = hi - lo;
  const s = l > 0.5 ? d / (2 - hi - lo) : d / (hi + lo);
  let h = hi === r ? (g - b) / d + (g < b ? 6 : 0) : hi === g ? (b - r) / d + 2 : (r - g) / d + 4;
  return [h * 60, s * 100, l * 100];
}

// funcColour is node n's colour by function: its kind's colour (from the style sheet),
// turned up to 14 degrees either way and lighter or darker by up to 9 points by the hash
// of its name.
function funcColour(n) {
  const p = colours();
  const base = p[n.kind] || p.unknown;
  const key = `${base}\u0000${n.func}`; // a theme's colours make other hues
  let c = funcColourCache.get(key);
  if (c) return c;
  const [h, s, l] = hslOf(base);
  const x = hash32(n.func);
  const dh = ((x & 0xff) / 255 - 0.5) * 28;
  const dl = (((x >>> 8) & 0xff) / 255 - 0.5) * 18;
  c = `hsl(${(h + dh + 360) % 360} ${s}% ${Math.min(Math.max(l + dl, 20), 85)}%)`;
  funcColourCache.set(key, c);
  return c;
}

// byFunction says whether frames are coloured by function.
const byFunction = () => view.colour === "func";

function setupColours() {
  const box = $("#colour-func");
  box.checked = byFunction();
  box.addEventListener("change", () => {
    view.colour = box.checked ? "func" : "";
    writeURL(false);
    paintFlame();
    drawLegend();
    if (typeof paintStackChart === "function") paintStackChart();
    if (typeof paintSandwich === "function") paintSandwich();
  });
}
addEventListener("DOMContentLoaded", setupColours);
