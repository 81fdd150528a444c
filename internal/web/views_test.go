package web

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/stax-profiler/stax/internal/testutil/browser"
)

// drillRun: main calls hub for 2% of the run's 10,000 samples, through 100 leaves of 2
// samples each (0.02%: the page's graph, pruned at 0.1%, has none of them), and filler
// for the rest.
func drillRun() (ws []work) {
	for i := range 100 {
		ws = append(ws, work{101, []string{"main", "hub", fmt.Sprintf("leaf_%02d", i)}, 2})
	}
	return append(ws, work{102, []string{"main", "filler"}, 9800})
}

// Zooming into a frame whose children the pruned graph lacks asks the server for its
// subtree: every leaf under hub is drawn (pixels on the canvas), with its samples; a link
// that zooms into a frame the pruned graph does not hold opens on it.
func TestZoomDrillsPrunedGraph(t *testing.T) {
	bctx := browser.Require(t)
	s := serve(t, namedRun("drill", drillRun()...), "")
	ctx := open(t, bctx, s, "")
	for _, f := range graph(t, ctx) {
		if strings.HasPrefix(f.Func, "leaf_") {
			t.Fatalf("the pruned graph draws %s: the test's run is not pruned", f.Func)
		}
	}
	if err := browser.ClickFrame(ctx, func(f browser.Frame) bool { return f.Func == "hub" }); err != nil {
		t.Fatal(err)
	}
	var leaves []browser.Frame
	until(t, ctx, "hub's 100 leaves drawn", func() (bool, string) {
		leaves = leaves[:0]
		for _, f := range graph(t, ctx) {
			if strings.HasPrefix(f.Func, "leaf_") && f.Drawn > 0 {
				leaves = append(leaves, f)
			}
		}
		return len(leaves) == 100, fmt.Sprintf("%d leaves", len(leaves))
	})
	full := eval[float64](t, ctx, `document.querySelector("#flame canvas").getBoundingClientRect().width`)
	for _, f := range leaves {
		if f.Total != 2 {
			t.Errorf("%s drawn with %v samples, want 2", f.Func, f.Total)
		}
		// Each has 1% of hub, which spans the graph.
		if f.Drawn < 0.005*full || f.Drawn > 0.015*full+2 {
			t.Errorf("%s drawn %.1f px wide of %.0f", f.Func, f.Drawn, full)
		}
	}
	idle(t, ctx)
	until(t, ctx, "the subtree counted", func() (bool, string) {
		n := eval[int](t, ctx, `(window.staxPerf.subtrees || []).length`)
		return n == 1, fmt.Sprintf("%d subtrees asked", n)
	})
	// A link into a leaf the pruned graph lacks.
	ctx = open(t, bctx, s, "&zoom=main&zoom=hub&zoom=leaf_42")
	until(t, ctx, "leaf_42 spans the graph", func() (bool, string) {
		for _, f := range graph(t, ctx) {
			if f.Func == "leaf_42" {
				return f.Drawn >= 0.98*full, fmt.Sprintf("leaf_42 %.0f px", f.Drawn)
			}
		}
		return false, "no leaf_42"
	})
	noErrors(t, ctx)
}

// Zooming into a frame of nearly the whole view widens what the pruned graph left out
// under it by too little to draw (frames under 0.1% of the view stay under 1.5 pixels): the
// page asks the server nothing, draws the frame's subtree it holds, and the note still
// says what the pruning left out.
func TestZoomIntoAWideFrameAsksNothing(t *testing.T) {
	bctx := browser.Require(t)
	ws := []work{{102, []string{"main", "other"}, 500}}
	for i := range 190 {
		// 5 samples of 10,000 each (0.05%): pruned; together 95% of the run, under big.
		ws = append(ws, work{101, []string{"main", "big", fmt.Sprintf("tiny_%03d", i)}, 5})
	}
	ws = append(ws, work{101, []string{"main", "big", "wide"}, 8550})
	s := serve(t, namedRun("wide", ws...), "")
	ctx := open(t, bctx, s, "")
	if err := browser.ClickFrame(ctx, func(f browser.Frame) bool { return f.Func == "big" }); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "big spans the graph", func() (bool, string) {
		for _, f := range graph(t, ctx) {
			if f.Func == "wide" {
				return f.Drawn > 0.85*eval[float64](t, ctx, `document.querySelector("#flame canvas").getBoundingClientRect().width`), fmt.Sprintf("wide %.0f px", f.Drawn)
			}
		}
		return false, "no wide"
	})
	idle(t, ctx)
	if n := eval[int](t, ctx, `(window.staxPerf.subtrees || []).length`); n != 0 {
		t.Errorf("zoomed into a frame of 95%% of the view, the page asked the server for %d subtrees", n)
	}
	if got := text(ctx, "#flame-note"); !strings.HasPrefix(got, "pruned at 0.1%") {
		t.Errorf("the note: %q", got)
	}
	noErrors(t, ctx)
}

// chartBox is a box of the stack chart as the page drew it.
type chartBox struct {
	Func     string  `json:"func"`
	Kind     string  `json:"kind"`
	Depth    int     `json:"depth"`
	Samples  int     `json:"samples"`
	StartSec float64 `json:"start_sec"`
	EndSec   float64 `json:"end_sec"`
	X        float64 `json:"x"`
	Y        float64 `json:"y"`
	W        float64 `json:"w"`
	H        float64 `json:"h"`
}

func chartBoxes(t *testing.T, ctx context.Context) []chartBox {
	t.Helper()
	var boxes []chartBox
	if err := json.Unmarshal(eval[json.RawMessage](t, ctx, `window.staxStackChart()`), &boxes); err != nil {
		t.Fatal(err)
	}
	return boxes
}

func chartBoxOf(boxes []chartBox, fn string) (chartBox, bool) {
	for _, b := range boxes {
		if b.Func == fn {
			return b, true
		}
	}
	return chartBox{}, false
}

// canvasPixel is the colour painted at a point of the viewport, on the canvas there
// ("rgb(r,g,b)"), and whether a canvas is what the point hits.
const canvasPixelJS = `((x, y) => {
	const c = document.elementFromPoint(x, y);
	if (!c || c.tagName !== "CANVAS") return "not a canvas: " + (c ? c.tagName + "#" + c.id + "." + c.className : "nothing");
	const box = c.getBoundingClientRect(), dpr = c.width / box.width;
	const d = c.getContext("2d").getImageData(Math.floor((x - box.left) * dpr), Math.floor((y - box.top) * dpr), 1, 1).data;
	return c.parentNode.id + " rgb(" + d[0] + "," + d[1] + "," + d[2] + ")";
})`

func canvasPixel(t *testing.T, ctx context.Context, x, y float64) string {
	t.Helper()
	return eval[string](t, ctx, fmt.Sprintf("%s(%f, %f)", canvasPixelJS, x, y))
}

// scrollTo brings an element to the middle of the viewport.
func scrollTo(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	eval[bool](t, ctx, fmt.Sprintf(`(document.querySelector(%q).scrollIntoView({block: "center"}), true)`, sel))
}

// The stack chart: the busiest thread's stacks over time, on the timeline's axis, in the
// kinds' colours; the wheel zooms the timeline and the chart together around the pointer,
// shift and the wheel pan them; the thread selector picks the chart's thread.
func TestStackChart(t *testing.T) {
	bctx := browser.Require(t)
	run := namedRun("chart",
		work{101, []string{"main", "path_a"}, 100},
		work{101, []string{"main", "path_b"}, 300},
		work{102, []string{"main", "path_c"}, 50})
	s := serve(t, run, "")
	ctx := open(t, bctx, s, "")
	scrollTo(t, ctx, "#stackchart-panel")
	var boxes []chartBox
	until(t, ctx, "alpha's chart", func() (bool, string) {
		boxes = chartBoxes(t, ctx)
		_, a := chartBoxOf(boxes, "path_a")
		_, b := chartBoxOf(boxes, "path_b")
		return a && b, fmt.Sprint(boxes)
	})
	want := map[string][3]float64{"main": {0, 0, 0.4}, "path_a": {1, 0, 0.1}, "path_b": {1, 0.1, 0.4}}
	for fn, w := range want {
		b, _ := chartBoxOf(boxes, fn)
		if b.Depth != int(w[0]) || b.StartSec < w[1]-0.001 || b.StartSec > w[1]+0.001 || b.EndSec < w[2]-0.001 || b.EndSec > w[2]+0.002 {
			t.Errorf("%s: depth %d, %.4fs to %.4fs; want depth %v, %vs to %vs", fn, b.Depth, b.StartSec, b.EndSec, w[0], w[1], w[2])
		}
	}
	if _, ok := chartBoxOf(boxes, "path_c"); ok {
		t.Errorf("alpha's chart has beta's path_c")
	}
	user := eval[string](t, ctx, cssColourJS+`("--k-user")`)
	a, _ := chartBoxOf(boxes, "path_a")
	b, _ := chartBoxOf(boxes, "path_b")
	for _, x := range []chartBox{a, b} {
		if got := canvasPixel(t, ctx, x.X+x.W/2, x.Y+x.H/2); got != "stackchart "+user {
			t.Errorf("%s's centre: %s, want stackchart %s", x.Func, got, user)
		}
	}
	// On the timeline's axis: path_b starts where the timeline has 0.1 s.
	axisX := func(sec float64) float64 {
		return eval[float64](t, ctx, fmt.Sprintf(`(() => { const g = window.staxTimeline, b = document.querySelector("#timeline").getBoundingClientRect(); return b.left + g.x0 + (%f - g.start) / g.span * g.w; })()`, sec))
	}
	if x := axisX(0.1); b.X < x-1.5 || b.X > x+1.5 {
		t.Errorf("path_b starts at x=%.1f, the timeline's 0.1 s at %.1f", b.X, x)
	}
	// Zoom in around path_b's start: it stays under the pointer, and main, which held the
	// thread from 0 to 0.4 s, spans the chart.
	at := b.X
	wheel := func(deltaX, deltaY float64, shift bool) {
		eval[bool](t, ctx, fmt.Sprintf(`(() => { const el = document.querySelector("#timeline svg"), r = el.getBoundingClientRect();
			return el.dispatchEvent(new WheelEvent("wheel", {deltaX: %f, deltaY: %f, shiftKey: %v, clientX: %f, clientY: r.top + r.height / 2, bubbles: true, cancelable: true})); })()`, deltaX, deltaY, shift, at))
	}
	for range 4 {
		wheel(0, -100, false)
	}
	span := 0.0
	until(t, ctx, "the timeline and the chart zoomed", func() (bool, string) {
		span = eval[float64](t, ctx, `window.staxTimeline.span`)
		boxes = chartBoxes(t, ctx)
		m, _ := chartBoxOf(boxes, "main")
		nb, ok := chartBoxOf(boxes, "path_b")
		plot := eval[float64](t, ctx, `window.staxTimeline.w`)
		return span < 0.3 && ok && nb.X > at-3 && nb.X < at+3 && m.W > 0.98*plot && !eval[bool](t, ctx, `document.querySelector("#tl-zoom-reset").hidden`),
			fmt.Sprintf("span %.3f, main %.0f of %.0f px, path_b from %.1f (pointer %.1f)", span, m.W, plot, nb.X, at)
	})
	if got := text(ctx, "#tl-range"); !strings.HasPrefix(got, "showing ") {
		t.Errorf("the zoom's range: %q", got)
	}
	// Pan right with shift and the wheel: the same span, later.
	start := eval[float64](t, ctx, `window.staxTimeline.start`)
	wheel(0, 200, true)
	until(t, ctx, "the timeline and the chart panned", func() (bool, string) {
		st, sp := eval[float64](t, ctx, `window.staxTimeline.start`), eval[float64](t, ctx, `window.staxTimeline.span`)
		nb, _ := chartBoxOf(chartBoxes(t, ctx), "path_b")
		return st > start && sp > span*0.9 && sp < span*1.1 && nb.X < at-3, fmt.Sprintf("start %.3f (was %.3f), span %.3f, path_b from %.1f", st, start, sp, nb.X)
	})
	// The zoom is in the URL: the link opens the same part of the run.
	var link *url.URL
	until(t, ctx, "the zoom in the URL", func() (bool, string) {
		link = pageURL(t, ctx)
		from, _ := strconv.ParseFloat(link.Query().Get("tl_from"), 64)
		to, _ := strconv.ParseFloat(link.Query().Get("tl_to"), 64)
		zf, zt := eval[float64](t, ctx, `tlZoom.from`), eval[float64](t, ctx, `tlZoom.to`)
		return math.Abs(from-zf) < 1e-5 && math.Abs(to-zt) < 1e-5 && to > from, link.RawQuery
	})
	shownText := text(ctx, "#tl-range")
	ctx2 := open(t, bctx, s, "&tl_from="+link.Query().Get("tl_from")+"&tl_to="+link.Query().Get("tl_to"))
	until(t, ctx2, "the link's zoom", func() (bool, string) {
		got := text(ctx2, "#tl-range")
		return got == shownText, got
	})
	// Back to the whole run, then beta's chart.
	if err := chromedp.Do(ctx, chromedp.Click("#tl-zoom-reset")); err != nil {
		t.Fatal(err)
	}
	if q := pageURL(t, ctx).Query(); q.Has("tl_from") || q.Has("tl_to") {
		t.Errorf("the whole run's URL keeps a zoom: %s", q.Encode())
	}
	choose(t, ctx, "#thread", "t:102")
	until(t, ctx, "beta's chart", func() (bool, string) {
		boxes = chartBoxes(t, ctx)
		_, c := chartBoxOf(boxes, "path_c")
		_, a := chartBoxOf(boxes, "path_a")
		return c && !a && strings.HasPrefix(text(ctx, "#stackchart-title"), "beta 102"), text(ctx, "#stackchart-title")
	})
	noErrors(t, ctx)
}

// sandwichFrame is a frame of the sandwich as drawn.
type sandwichFrame struct {
	Side  string  `json:"side"`
	Func  string  `json:"func"`
	Total float64 `json:"total"`
	Depth int     `json:"depth"`
	X     float64 `json:"x"`
	Y     float64 `json:"y"`
	W     float64 `json:"w"`
	H     float64 `json:"h"`
}

func sandwich(t *testing.T, ctx context.Context) []sandwichFrame {
	t.Helper()
	var fs []sandwichFrame
	if err := json.Unmarshal(eval[json.RawMessage](t, ctx, `window.staxSandwich()`), &fs); err != nil {
		t.Fatal(err)
	}
	return fs
}

func describe(fs []sandwichFrame, side string) string {
	var parts []string
	for _, f := range fs {
		if f.Side == side {
			parts = append(parts, fmt.Sprintf("%d:%s=%.0f", f.Depth, f.Func, f.Total))
		}
	}
	return strings.Join(parts, " ")
}

// The sandwich of the selected function: its callers drawn above it, its callees below,
// merged over every stack through it; a frame clicked in it becomes its function.
// Colour by function paints each function its own colour in its kind's hue, the same on
// another load.
func TestSandwich(t *testing.T) {
	bctx := browser.Require(t)
	s := serve(t, callersRun(), "")
	ctx := open(t, bctx, s, "")
	if err := browser.ClickFrame(ctx, func(f browser.Frame) bool { return f.Func == "hot_leaf" }); err != nil {
		t.Fatal(err)
	}
	var fs []sandwichFrame
	// hot_leaf: 400 samples, 300 from path_b and 100 from path_a, all from main; it calls nothing.
	until(t, ctx, "hot_leaf's sandwich", func() (bool, string) {
		fs = sandwich(t, ctx)
		got := describe(fs, "callers") + " | " + describe(fs, "callees")
		return got == "0:hot_leaf=400 1:path_b=300 2:main=300 1:path_a=100 2:main=100 | 0:hot_leaf=400", got
	})
	if got := text(ctx, "#sandwich-title"); !strings.Contains(got, "Sandwich of hot_leaf") || !strings.Contains(got, "total 400, self 400") {
		t.Errorf("title %q", got)
	}
	scrollTo(t, ctx, "#sandwich-panel")
	fs = sandwich(t, ctx)
	user := eval[string](t, ctx, cssColourJS+`("--k-user")`)
	var leaf, pathB sandwichFrame
	for _, f := range fs {
		switch {
		case f.Side == "callers" && f.Func == "hot_leaf":
			leaf = f
		case f.Side == "callers" && f.Func == "path_b":
			pathB = f
		}
	}
	if pathB.Y >= leaf.Y || pathB.W < 0.74*leaf.W || pathB.W > 0.76*leaf.W+1 {
		t.Errorf("path_b drawn at y=%.0f, %.0f px wide; hot_leaf at y=%.0f, %.0f px: want path_b above, 3/4 as wide", pathB.Y, pathB.W, leaf.Y, leaf.W)
	}
	for _, f := range []sandwichFrame{leaf, pathB} {
		if got := canvasPixel(t, ctx, f.X+f.W/2, f.Y+f.H/2); got != "sandwich-callers "+user {
			t.Errorf("%s's centre: %s, want sandwich-callers %s", f.Func, got, user)
		}
	}
	// Click path_b: its sandwich.
	if err := chromedp.Do(ctx, chromedp.MouseClickXY(pathB.X+pathB.W/2, pathB.Y+pathB.H/2)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "path_b's sandwich", func() (bool, string) {
		fs = sandwich(t, ctx)
		got := describe(fs, "callers") + " | " + describe(fs, "callees")
		return got == "0:path_b=360 1:main=360 | 0:path_b=360 1:hot_leaf=300 1:inflate=60 2:inflate_fast=60", got
	})
	// Colour by function.
	mainAt := func() string {
		for _, f := range graph(t, ctx) {
			if f.Func == "main" {
				return eval[string](t, ctx, frameColourJS+`("main")`)
			}
		}
		return ""
	}
	scrollTo(t, ctx, "#flame-panel")
	if err := chromedp.Do(ctx, chromedp.Click("#reset-zoom")); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the zoom reset", func() (bool, string) { return mainAt() != "", "main is not drawn" })
	if got := mainAt(); got != user {
		t.Fatalf("main painted %s before colouring by function, want %s", got, user)
	}
	scrollTo(t, ctx, "#flame-panel")
	if err := chromedp.Do(ctx, chromedp.Click("#colour-func")); err != nil {
		t.Fatal(err)
	}
	var byFunc map[string]string
	until(t, ctx, "frames coloured by function", func() (bool, string) {
		byFunc = map[string]string{}
		for _, fn := range []string{"main", "path_a", "path_b", "hot_leaf"} {
			byFunc[fn] = eval[string](t, ctx, frameColourJS+"("+fmt.Sprintf("%q", fn)+")")
		}
		return byFunc["main"] != user, fmt.Sprint(byFunc)
	})
	seen := map[string]string{}
	for fn, c := range byFunc {
		if other, dup := seen[c]; dup {
			t.Errorf("%s and %s both painted %s", fn, other, c)
		}
		seen[c] = fn
		if !sameHue(t, c, user, 16) {
			t.Errorf("%s painted %s: not in native code's hue (%s)", fn, c, user)
		}
	}
	if got := pageURL(t, ctx).Query().Get("colour"); got != "func" {
		t.Errorf("the URL says colour=%q", got)
	}
	// Another load of the link: the same colours.
	ctx = open(t, bctx, s, "&colour=func")
	for fn, c := range byFunc {
		if got := eval[string](t, ctx, frameColourJS+"("+fmt.Sprintf("%q", fn)+")"); got != c {
			t.Errorf("%s painted %s on another load, %s before", fn, got, c)
		}
	}
	noErrors(t, ctx)
}

// sameHue says whether two colours ("rgb(r,g,b)") have hues within deg degrees.
func sameHue(t *testing.T, a, b string, deg float64) bool {
	t.Helper()
	hue := func(c string) float64 {
		var r, g, b float64
		if _, err := fmt.Sscanf(c, "rgb(%g,%g,%g)", &r, &g, &b); err != nil {
			t.Fatalf("colour %q: %v", c, err)
		}
		hi, lo := max(r, g, b), min(r, g, b)
		if hi == lo {
			return 0
		}
		d := hi - lo
		var h float64
		switch hi {
		case r:
			h = (g - b) / d
		case g:
			h = (b-r)/d + 2
		default:
			h = (r-g)/d + 4
		}
		h *= 60
		if h < 0 {
			h += 360
		}
		return h
	}
	d := hue(a) - hue(b)
	if d < 0 {
		d = -d
	}
	return min(d, 360-d) <= deg
}

// ctRow is a row of the call tree as laid out.
const ctRowsJS = `[...document.querySelectorAll("#calltree tbody tr")].map((tr) => {
	const r = tr.getBoundingClientRect(), hit = document.elementFromPoint(r.left + r.width * 0.6, r.top + r.height / 2);
	return [...tr.cells].map((c) => c.innerText.trim()).join("|") + (r.height > 0 && hit && tr.contains(hit) ? "" : " (hidden)");
})`

func callTree(t *testing.T, ctx context.Context) string {
	t.Helper()
	scrollTo(t, ctx, "#calltree-panel")
	return strings.Join(eval[[]string](t, ctx, ctRowsJS), "\n")
}

// The call tree: the flame graph's tree as rows that expand, opened on its heaviest path,
// with total and self in samples (milliseconds off CPU); expanding a frame whose children
// the pruned graph lacks asks for them.
func TestCallTree(t *testing.T) {
	bctx := browser.Require(t)
	s := serve(t, callersRun(), "")
	ctx := open(t, bctx, s, "")
	want := strings.Join([]string{
		"500 100.00%|40|▾main",
		"360 72.00%|0|▾path_b",
		"300 60.00%|300|hot_leaf",
		"60 12.00%|0|▸inflate",
		"100 20.00%|0|▸path_a",
	}, "\n")
	until(t, ctx, "the call tree", func() (bool, string) {
		got := callTree(t, ctx)
		return got == want, got
	})
	// Expand path_a with its twisty.
	eval[bool](t, ctx, `(() => { const tr = [...document.querySelectorAll("#calltree tbody tr")].find((tr) => tr.innerText.includes("path_a")); tr.querySelector(".tw").click(); return true; })()`)
	until(t, ctx, "path_a expanded", func() (bool, string) {
		got := callTree(t, ctx)
		return strings.HasSuffix(got, "100 20.00%|0|▾path_a\n100 20.00%|100|hot_leaf"), got
	})
	// From the keyboard: ← closes it again.
	eval[bool](t, ctx, `(() => { const tr = [...document.querySelectorAll("#calltree tbody tr")].find((tr) => tr.innerText.includes("path_a")); tr.focus(); return document.activeElement === tr; })()`)
	if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.ArrowLeft)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "path_a closed from the keyboard", func() (bool, string) {
		got := callTree(t, ctx)
		return strings.HasSuffix(got, "100 20.00%|0|▸path_a"), got
	})

	// Off CPU: milliseconds.
	s = serve(t, offCPURun(), "")
	ctx = open(t, bctx, s, "&mode=off_cpu")
	until(t, ctx, "the off-CPU call tree", func() (bool, string) {
		got := callTree(t, ctx)
		return strings.HasPrefix(got, "1,000 ms 100.00%|0 ms|▾main\n700 ms 70.00%|0 ms|▾path_b\n700 ms 70.00%|700 ms|pthread_mutex_lock") && strings.Contains(text(ctx, "#calltree-panel"), "ms"), got
	})

	// A pruned graph: expanding hub asks for its 100 leaves.
	s = serve(t, namedRun("drill", drillRun()...), "")
	ctx = open(t, bctx, s, "")
	until(t, ctx, "hub's row", func() (bool, string) {
		got := callTree(t, ctx)
		return strings.Contains(got, "|▸hub"), got
	})
	eval[bool](t, ctx, `(() => { const tr = [...document.querySelectorAll("#calltree tbody tr")].find((tr) => tr.innerText.includes("hub")); tr.querySelector(".tw").click(); return true; })()`)
	until(t, ctx, "hub's leaves listed", func() (bool, string) {
		got := callTree(t, ctx)
		return strings.Count(got, "2 0.02%|2|leaf_") == 100, fmt.Sprintf("%d leaves", strings.Count(got, "|leaf_"))
	})
	noErrors(t, ctx)
}
