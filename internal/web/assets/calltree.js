"use strict";
// The call tree table: the flame graph's tree (the same view: inverted, mode, window,
// thread, transforms) as rows that expand, with each frame's total and self, in samples
// in the CPU mode and in milliseconds in the off-CPU and wall modes. It opens on the
// heaviest path; expanding a frame whose children the page's pruned graph lacks asks the
// server for its subtree (subtree.js). A row's function is the sandwich's when clicked.
//
// Loaded before app.js: its functions use app.js's when called, never at load.

const CT = { openDepth: 6, maxRows: 2000, indent: 14 };
const ct = { key: null, open: new Set(), rows: [] }; // key: the flame query the rows are of

// refreshViews is what app.js's refresh runs once the flame graph and the top table are
// drawn: the views of this file and the others beside app.js.
function refreshViews(live) {
  drawCallTree();
  loadStackChart(live);
  if (live && sw.fn) showSandwich(sw.fn, true);
  else if (sw.fn && sw.key && !sw.key.endsWith(`\u0001${filterKey()}`)) showSandwich(sw.fn);
}

const pathKey = (path) => path.join("\u0001");

// drawCallTreeHeads puts a head per counter read with each sample (stax record
// --counters) between Self and Function: each row then says what the counter counted in
// the samples under its frame (its self in the cell's title). It returns the names.
function drawCallTreeHeads() {
  const names = counterNames();
  const tr = $("#calltree thead tr");
  const want = names.join("\n");
  if (ct.heads !== want) {
    for (const th of tr.querySelectorAll("th.counter")) th.remove();
    const fn = tr.lastElementChild;
    for (const name of names) {
      const th = document.createElement("th");
      th.className = "num counter";
      th.textContent = name;
      th.title = `${name}: counted in the samples under the frame, its callees' included`;
      tr.insertBefore(th, fn);
    }
    ct.heads = want;
  }
  return names;
}

function drawCallTree() {
  const body = $("#calltree tbody");
  const flame = state.flame;
  const root = flame && flame.root;
  $("#calltree-unit").textContent = weightField() ? `${weightField()}: its sum over the samples` : view.mode === "cpu" ? "samples" : "ms";
  const names = drawCallTreeHeads();
  const span = 3 + names.length;
  const counterCells = (n) =>
    names.map((name, j) => {
      const self = n && !view.inverted && n.self_counters && n.self_counters[j] ? ` title="${esc(name)}: self ${commas(n.self_counters[j])}"` : "";
      return `<td class="num counter"${self}>${n && n.counters ? commas(n.counters[j] || 0) : ""}</td>`;
    }).join("");
  if (!root || !root.total) {
    body.innerHTML = `<tr><td colspan="${span}" class="placeholder">${emptyText()}</td></tr>`;
    ct.rows = [];
    return;
  }
  if (ct.key !== state.keys.flame) {
    // Another view: open on its heaviest path.
    ct.key = state.keys.flame;
    ct.open = new Set([""]);
    let n = root, path = [];
    for (let d = 0; d < CT.openDepth && (n.children || []).length; d++) {
      n = n.children[0];
      path = path.concat(keyOf(n));
      ct.open.add(pathKey(path));
    }
  }
  const rows = [];
  const total = root.total;
  const walk = (n, path, depth) => {
    if (rows.length >= CT.maxRows) return;
    const open = ct.open.has(pathKey(path));
    const kids = n.children || [];
    rows.push({ n, path, depth, open, leaf: kids.length === 0 && prunedUnder(n) === 0 });
    if (!open) return;
    for (const c of kids) walk(c, path.concat(keyOf(c)), depth + 1);
    const rest = prunedUnder(n);
    if (rest > 0) rows.push({ rest, depth: depth + 1, path });
  };
  for (const c of root.children || []) walk(c, [keyOf(c)], 0);
  if (root.self) rows.unshift({ rest: root.self, depth: 0, path: [], self: true });
  ct.rows = rows;
  const sel = view.sel ? pathKey(urlPath(view.sel)) : null;
  body.innerHTML = rows
    .map((r, i) => {
      if (r.rest !== undefined) {
        const what = r.self ? "with no frame" : `in frames under ${r.path.length && cutOf(nodeAt(r.path)) < (PRUNE_PCT / 100) * total ? "the subtree's threshold" : PRUNE_PCT + "% of the view"}`;
        return `<tr class="rest"><td class="num">${amount(r.rest)}</td><td class="num"></td>${counterCells(null)}<td data-depth="${r.depth}" class="placeholder">${r.self ? "" : "… "}${what}</td></tr>`;
      }
      const n = r.n;
      const twisty = r.leaf ? '<span class="tw"></span>' : `<span class="tw">${r.open ? "▾" : "▸"}</span>`;
      const chosen = sel !== null && pathKey(urlPath(r.path)) === sel ? " chosen" : "";
      return `<tr data-i="${i}" class="ct-row${chosen}" tabindex="-1" role="treeitem" aria-level="${r.depth + 1}"${r.leaf ? "" : ` aria-expanded="${r.open}"`}>` +
        `<td class="num">${amount(n.total)} <span class="pct">${pct(n.total, total)}</span></td><td class="num">${amount(n.self)}</td>${counterCells(n)}` +
        `<td data-depth="${r.depth}" title="${esc(n.image || "")}">${twisty}<span class="k k-${esc(n.kind)}-text">${esc(frameLabel(n))}</span></td></tr>`;
    })
    .join("");
  // The page's policy refuses style attributes in markup; the indent is set through the DOM.
  for (const td of body.querySelectorAll("td[data-depth]")) td.style.paddingLeft = `${6 + Number(td.dataset.depth) * CT.indent}px`;
  const first = body.querySelector("tr[data-i]");
  if (first) first.tabIndex = 0; // Tab reaches the table; the arrows move within it
  if (rows.length >= CT.maxRows) body.insertAdjacentHTML("beforeend", `<tr><td colspan="${span}" class="placeholder">the first ${commas(CT.maxRows)} rows; collapse some to see others</td></tr>`);
}

// nodeAt is the node of the flame graph held at path (keys).
function nodeAt(path) {
  let n = state.flame.root;
  for (const k of path) {
    n = (n.children || []).find((c) => keyOf(c) === k);
    if (!n) return state.flame.root;
  }
  return n;
}

// toggle opens or closes row r; opening a frame whose children were pruned asks for them.
function toggle(r, open) {
  const k = pathKey(r.path);
  if (open === undefined) open = !ct.open.has(k);
  if (open) ct.open.add(k);
  else ct.open.delete(k);
  if (open && prunedUnder(r.n) > 0 && r.n._cut === undefined) fetchSubtree(r.path, 1000, () => drawCallTree());
  drawCallTree();
  const tr = $(`#calltree tr[data-i="${ct.rows.findIndex((x) => x.n === r.n)}"]`);
  if (tr) tr.focus();
}

function setupCallTree() {
  const body = $("#calltree tbody");
  body.addEventListener("click", (e) => {
    const tr = e.target.closest("tr[data-i]");
    if (!tr) return;
    const r = ct.rows[Number(tr.dataset.i)];
    if (e.target.closest(".tw")) toggle(r);
    else {
      showSandwich(r.n);
      tr.focus();
    }
  });
  body.addEventListener("dblclick", (e) => {
    const tr = e.target.closest("tr[data-i]");
    if (tr) toggle(ct.rows[Number(tr.dataset.i)]);
  });
  body.addEventListener("keydown", (e) => {
    const tr = e.target.closest("tr[data-i]");
    if (!tr) return;
    const i = Number(tr.dataset.i);
    const r = ct.rows[i];
    const go = (j) => {
      const next = $(`#calltree tr[data-i="${j}"]`);
      if (next) next.focus();
    };
    switch (e.key) {
      case "ArrowDown":
        go(ct.rows.findIndex((x, j) => j > i && x.n));
        break;
      case "ArrowUp":
        for (let j = i - 1; j >= 0; j--) if (ct.rows[j].n) return go(j), e.preventDefault();
        break;
      case "ArrowRight":
        if (!r.leaf && !r.open) toggle(r, true);
        break;
      case "ArrowLeft":
        if (r.open) toggle(r, false);
        break;
      case "Enter":
        showSandwich(r.n);
        break;
      default:
        return;
    }
    e.preventDefault();
  });
  body.addEventListener("focusin", (e) => {
    const tr = e.target.closest("tr[data-i]");
    for (const x of body.querySelectorAll("tr[tabindex='0']")) x.tabIndex = -1;
    if (tr) tr.tabIndex = 0;
  });
}
addEventListener("DOMContentLoaded", setupCallTree);
