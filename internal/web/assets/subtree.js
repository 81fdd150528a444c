"use strict";
// Drilling into a pruned flame graph. The page's graph leaves out the frames with less than
// PRUNE_PCT of the view (a big run has hundreds of thousands of stacks): zoomed into a
// frame, what it left out would be wide enough to see. The page then asks the server for
// the frame's subtree (flame's under= parameter), pruned at a pixel of the frame (the graph
// draws no frame narrower), and grafts it into the graph it holds; the call tree's rows do the same when expanded.
//
// Loaded before app.js: its functions use app.js's (state, view, query, api, soon, drawFlame)
// when called, never at load.

// PRUNE_PCT is the threshold the page's flame graph is pruned at: web.go's flame default.
const PRUNE_PCT = 0.1;
// MAX_GRAFTS bounds the subtrees kept grafted into a graph: past it the oldest is taken out
// again (its frame gets back the children the pruned graph had), so a long session of
// zooms holds a few subtrees, not all of them.
const MAX_GRAFTS = 6;

// prunedUnder is the weight left out under node n: its total less its self and its
// children's totals.
function prunedUnder(n) {
  let kept = n.self || 0;
  for (const c of n.children || []) kept += c.total;
  return Math.max(n.total - kept, 0);
}

// cutOf is the weight below which a child of n may have been left out: the main graph's
// threshold, or that of the subtree n was grafted from.
const cutOf = (n) => (n._cut !== undefined ? n._cut : (PRUNE_PCT / 100) * state.flame.root.total);

// subtreeIncomplete says whether zoom, drawn W pixels wide, lacks frames the run has that
// the zoom widens to GROWN_PX or more: some node drawn under it lost children to the
// pruning that may be that wide now. Below, the zoom barely widened what the graph left out
// (zoomed into a frame of 90% of the view, the frames under 0.1% become 1.3 pixels at most,
// from 1.2): asking would cost the server the whole tree again, for slivers the note above
// the graph counts.
const GROWN_PX = 1.5;
function subtreeIncomplete(zoom, W) {
  const minW = (GROWN_PX / W) * zoom.total;
  const drawn = (1 / W) * zoom.total;
  const todo = [zoom];
  while (todo.length) {
    const n = todo.pop();
    if (cutOf(n) > minW && prunedUnder(n) >= drawn) return true;
    for (const c of n.children || []) if (c.total >= drawn) todo.push(c);
  }
  return false;
}

// drillZoom asks for the zoomed frame's subtree when the graph lacks some of it, or when the
// zoom (from a URL) goes deeper than the graph holds; drawFlame calls it with the chain of
// nodes it found along view.zoom, and draws again when the subtree is in.
function drillZoom(chain, W) {
  const flame = state.flame;
  if (!flame || !flame.root || view.zoom.length === 0) return;
  const deeper = chain.length - 1 < view.zoom.length;
  if (!deeper && !subtreeIncomplete(chain[chain.length - 1], W)) return;
  fetchSubtree(view.zoom.slice(), W, () => drawFlame());
}

// fetchSubtree asks for the subtree under path (keys or names, root's children first) of
// the graph held, pruned at a pixel of W, grafts it in and calls then. Each path is
// asked once per graph.
function fetchSubtree(path, W, then) {
  const flame = state.flame;
  const names = urlPath(path);
  const key = names.join("\u0001");
  flame._asked = flame._asked || new Set();
  if (flame._asked.has(key)) return;
  flame._asked.add(key);
  const t0 = performance.now();
  // Asked at once, not from a timer: the request is on its way while the click's drawing
  // goes on (a timer waited for all of it: the first zoom of a big run's page, whose panels
  // were drawn for the first time, asked 300-500 ms after the click). Counted as a timer's
  // work (app.js's waiting) until drawn.
  waiting++;
  (async () => {
    try {
      await askSubtree(flame, names, key, path, W, t0, then);
    } finally {
      waiting--;
    }
  })();
}

// askSubtree asks for the subtree of fetchSubtree, grafts it and calls then.
async function askSubtree(flame, names, key, path, W, t0, then) {
  const thr = Math.min(PRUNE_PCT, 100 / Math.max(W, 300));
  const q = query({}, { threshold_pct: thr });
  if (state.summary && state.summary.diff && view.diff && view.mode === "cpu") q.set("diff", "1");
  for (const n of names) q.append("under", n);
  let a;
  try {
    a = await api("flame", q);
  } catch (err) {
    if (state.flame === flame) flame._asked.delete(key);
    window.staxErrors.push(`subtree of ${names.join(" > ")}: ${err.message}`);
    return;
  }
  if (state.flame !== flame) return; // the view changed meanwhile
  const answered = performance.now();
  const node = graft(flame.root, a.root, path, thr, key);
  then();
  afterPaint(() => {
    (perf.subtrees = perf.subtrees || []).push({ path: names, at: performance.now(), ms: performance.now() - t0, answerMs: answered - t0, bytes: a._bytes, found: !!node });
  });
}

// graft puts the subtree answered (ans, a tree holding only the path and the subtree) into
// the graph held (root) along path, and returns the node at its end (null: not found).
function graft(root, ans, path, thr, key) {
  const grafts = (state.flame._grafts = state.flame._grafts || []);
  while (grafts.length >= MAX_GRAFTS) {
    const g = grafts.shift();
    g.node.children = g.children;
    delete g.node._cut;
    state.flame._asked.delete(g.key);
  }
  let s = root, a = ans;
  for (const k of path) {
    const ac = (a.children || []).find((c) => isNode(c, k));
    if (!ac) return null;
    let sc = (s.children || []).find((c) => keyOf(c) === keyOf(ac));
    if (!sc) {
      // Pruned from the graph: the answer's node (it holds the subtree's samples) takes its place.
      s.children = (s.children || []).concat(ac).sort((x, y) => y.total - x.total);
      sc = ac;
    }
    s = sc;
    a = ac;
  }
  grafts.push({ key, node: s, children: s.children });
  s.children = a.children || [];
  const cut = (thr / 100) * s.total;
  const todo = [s];
  while (todo.length) {
    const n = todo.pop();
    n._cut = cut;
    for (const c of n.children || []) todo.push(c);
  }
  return s;
}
