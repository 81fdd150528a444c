package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/server"
	"github.com/stax-profiler/stax/internal/spans"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil/browser"
)

// work is n samples of one thread with one stack, root first. A function is named
// "name", or "image:name" for a function of another image than the program's.
type work struct {
	tid   uint32
	stack []string
	n     int
}

// names resolves the addresses namedRun made up for each function.
type names struct{ funcs []agg.Frame }

func (n names) Resolve(_ uint32, _ uint64, chain []uint64, out []agg.Site) ([]agg.Site, int, uint64, int) {
	for _, a := range chain[1:] {
		out = append(out, agg.Site{Frame: n.funcs[a>>8], Addr: a})
	}
	return out, 0, chain[1], 0
}
func (names) Version() uint64 { return 1 }

// namedRun is a finished run of the given work, in order: one sample a millisecond from
// 1 s. Threads 101 and 102 of process 100 are named alpha and beta.
func namedRun(id string, ws ...work) *store.Run {
	cws := make([]countedWork, len(ws))
	for i, w := range ws {
		cws[i] = countedWork{work: w}
	}
	return countedRun(id, cws...)
}

// countedWork is work whose samples are of the run's event number event (stax record -e
// A,B), each read with counters (stax record --counters; nil: none).
type countedWork struct {
	work
	event    uint32
	counters []uint64
	off      uint64 // the leaf's address past its function's first byte
}

// countedRun is namedRun of work of several events, or read with counters.
func countedRun(id string, ws ...countedWork) *store.Run {
	r := agg.NewRun()
	var nm names
	index := map[string]uint64{}
	addr := func(fn string) uint64 {
		if a, ok := index[fn]; ok {
			return a
		}
		image, name, ok := strings.Cut(fn, ":")
		if !ok {
			image, name = "/usr/bin/prog", fn
		}
		a := uint64(len(nm.funcs)) << 8
		nm.funcs = append(nm.funcs, agg.Frame{Func: name, Image: image, Kind: agg.KindUser})
		index[fn] = a
		return a
	}
	at := uint64(1e9)
	total := 0
	for _, w := range ws {
		chain := []uint64{^uint64(511)} // PERF_CONTEXT_USER
		for i := len(w.stack) - 1; i >= 0; i-- {
			a := addr(w.stack[i])
			if i == len(w.stack)-1 {
				a += w.off
			}
			chain = append(chain, a)
		}
		for range w.n {
			r.AddCountedSample(w.event, 100, w.tid, 0, at, 0, chain, w.counters)
			at += 1e6
			total++
		}
	}
	r.Resolve(nm)
	p := r.Profile([]agg.ThreadInfo{{Tid: 100, Pid: 100, Name: "prog"}, {Tid: 101, Pid: 100, Name: "alpha"}, {Tid: 102, Pid: 100, Name: "beta"}})
	return &store.Run{Meta: store.Meta{ID: id, Samples: uint64(total), Finished: true, StartNs: 1e9}, Profile: *p}
}

// callersRun: hot_leaf does one part of its work under path_a (thread alpha) and three
// under path_b (thread beta), and main some of its own; libz's inflate runs under path_b.
func callersRun() *store.Run {
	return namedRun("callers",
		work{101, []string{"main", "path_a", "hot_leaf"}, 100},
		work{102, []string{"main", "path_b", "hot_leaf"}, 300},
		work{102, []string{"main", "path_b", "libz.so.1:inflate", "libz.so.1:inflate_fast"}, 60},
		work{101, []string{"main"}, 40},
	)
}

// open navigates to the page at s's URL plus extra parameters and waits for its first
// flame graph.
func open(t *testing.T, bctx context.Context, s *Server, extra string) context.Context {
	t.Helper()
	ctx := browser.Within(t, bctx, 2*time.Minute)
	if err := chromedp.Do(ctx, chromedp.Navigate(s.URL()+extra)); err != nil {
		t.Fatal(err)
	}
	if _, err := browser.WaitFrames(ctx, func(browser.Frame) bool { return true }); err != nil {
		t.Fatalf("the page drew no flame graph: %v\n%s", err, text(ctx, "body"))
	}
	idle(t, ctx)
	return ctx
}

// idle waits until every panel shows the view: panels drawn later move the graph.
func idle(t *testing.T, ctx context.Context) {
	t.Helper()
	until(t, ctx, "the page settles", func() (bool, string) {
		return eval[bool](t, ctx, `window.staxIdle()`), "busy"
	})
}

// text is the text of the first element matching sel.
func text(ctx context.Context, sel string) string {
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {}).innerText || ""`, sel)))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return s
}

// eval runs js in the page.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// until polls cond (which reports what it saw) until it holds or a minute passes.
func until(t *testing.T, ctx context.Context, what string, cond func() (bool, string)) {
	t.Helper()
	last := ""
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(50 * time.Millisecond) {
		ok, seen := cond()
		if ok {
			return
		}
		last = seen
	}
	t.Fatalf("%s: never; last saw %s", what, last)
}

// graph is the drawn flame graph: the drawn frames below the root (not the dimmed
// callers of a zoom), as "depth func total" lines in drawing order.
func graph(t *testing.T, ctx context.Context) []browser.Frame {
	t.Helper()
	frames, err := browser.Frames(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []browser.Frame
	for _, f := range frames {
		if f.Drawn > 0 && !f.Ancestor {
			out = append(out, f)
		}
	}
	return out
}

// rootChildren describes the frames one row below the graph's top: "func=total" each,
// left to right.
func rootChildren(t *testing.T, ctx context.Context) string {
	t.Helper()
	frames := graph(t, ctx)
	if len(frames) == 0 {
		return ""
	}
	top := frames[0].Y
	var parts []string
	for _, f := range frames {
		if f.Y > top && f.Y-top < f.H+2 {
			parts = append(parts, fmt.Sprintf("%s=%.0f", f.Func, f.Total))
		}
	}
	return strings.Join(parts, " ")
}

// childrenOf describes a flame node's children as rootChildren does.
func childrenOf(n *api.FlameNode) string {
	var parts []string
	for _, c := range n.Children {
		parts = append(parts, fmt.Sprintf("%s=%d", c.Func, c.Total))
	}
	return strings.Join(parts, " ")
}

// noErrors fails the test if the page met a script error.
func noErrors(t *testing.T, ctx context.Context) {
	t.Helper()
	var errs []string
	b := eval[json.RawMessage](t, ctx, `window.staxErrors`)
	json.Unmarshal(b, &errs)
	if len(errs) > 0 {
		t.Errorf("the page met errors: %q", errs)
	}
}

// choose picks value in the select element sel, as a user would.
func choose(t *testing.T, ctx context.Context, sel, value string) {
	t.Helper()
	eval[bool](t, ctx, fmt.Sprintf(`(() => { const s = document.querySelector(%q); s.value = %q; s.dispatchEvent(new Event("change")); return s.value === %q; })()`, sel, value, value))
}

// pageURL is the page's address as it stands.
func pageURL(t *testing.T, ctx context.Context) *url.URL {
	t.Helper()
	u, err := url.Parse(eval[string](t, ctx, `location.href`))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// flameOf is the flame graph the server answers for o, as the page asks it (no depth
// limit, pruned at 0.1%).
func flameOf(t *testing.T, run *store.Run, o query.FlameOptions) *api.FlameNode {
	t.Helper()
	o.ThresholdPct = 0.1
	res, err := query.Flame(run, o)
	if err != nil {
		t.Fatal(err)
	}
	return res.Root
}

// The thread selector: picking beta draws beta's samples alone, in the flame graph and
// the top table, and the URL says so.
func TestThreadSelector(t *testing.T) {
	bctx := browser.Require(t)
	run := callersRun()
	s := serve(t, run, "")
	ctx := open(t, bctx, s, "")
	opts := text(ctx, "#thread")
	if !strings.Contains(opts, "alpha 101 (140)") || !strings.Contains(opts, "beta 102 (360)") {
		t.Errorf("the thread selector offers %q", opts)
	}
	choose(t, ctx, "#thread", "t:102")
	want := flameOf(t, run, query.FlameOptions{Tid: 102})
	until(t, ctx, "beta's graph drawn", func() (bool, string) {
		got := rootChildren(t, ctx)
		return got == childrenOf(want) && !strings.Contains(text(ctx, "#top"), "path_a"), got
	})
	if got := pageURL(t, ctx).Query().Get("tid"); got != "102" {
		t.Errorf("the URL says tid=%q", got)
	}
	main := want.Children[0]
	for _, f := range graph(t, ctx) {
		if f.Func == "path_a" {
			t.Errorf("beta's graph draws path_a")
		}
		if f.Func == "path_b" && f.Total != float64(main.Children[0].Total) {
			t.Errorf("path_b drawn with %v samples, want %d", f.Total, main.Children[0].Total)
		}
	}
	choose(t, ctx, "#thread", "")
	until(t, ctx, "every thread drawn again", func() (bool, string) {
		got := rootChildren(t, ctx)
		return got == "main=500", got
	})
	noErrors(t, ctx)
}

// Search takes a regular expression: it highlights the frames whose function matches,
// and counts the samples under them, exactly, whatever the graph has room to draw.
func TestSearchCountsSamples(t *testing.T) {
	bctx := browser.Require(t)
	run := callersRun()
	s := serve(t, run, "")
	ctx := open(t, bctx, s, "")
	if err := chromedp.Do(ctx, chromedp.SendKeys(`#search`, "^path_[ab]$|inflate$")); err != nil {
		t.Fatal(err)
	}
	// path_a 100 + path_b 360 (inflate is under path_b): 460 of 500.
	until(t, ctx, "the count of matching samples", func() (bool, string) {
		got := text(ctx, "#search-result")
		return strings.Contains(got, "460 of 500 samples (92.00%)"), got
	})
	matched := map[string]bool{}
	for _, f := range graph(t, ctx) {
		if f.Match {
			matched[f.Func] = true
		}
	}
	if len(matched) != 3 || !matched["path_a"] || !matched["path_b"] || !matched["inflate"] {
		t.Errorf("highlighted %v, want path_a, path_b and inflate", matched)
	}
	if got := text(ctx, "#search-result"); !strings.HasPrefix(got, "3 frames match") {
		t.Errorf("search result %q", got)
	}
	if got := pageURL(t, ctx).Query().Get("search"); got != "^path_[ab]$|inflate$" {
		t.Errorf("the URL keeps search=%q", got)
	}
	// With a window: the count follows it.
	eval[bool](t, ctx, `(() => { document.querySelector("#search").value = "hot"; document.querySelector("#search").dispatchEvent(new Event("input")); return true; })()`)
	until(t, ctx, "the count of hot_leaf's samples", func() (bool, string) {
		got := text(ctx, "#search-result")
		return strings.Contains(got, "400 of 500 samples (80.00%)"), got
	})
	eval[bool](t, ctx, `(() => { document.querySelector("#search").value = "a("; document.querySelector("#search").dispatchEvent(new Event("input")); return true; })()`)
	until(t, ctx, "a bad expression said so", func() (bool, string) {
		got := text(ctx, "#search-result")
		return strings.Contains(strings.ToLower(got), "invalid regular expression"), got
	})
	noErrors(t, ctx)
}

// selected is the selected frame as drawn, and the pixel of its outline (one pixel in from
// its top left corner, where the fill would be without it).
func selected(t *testing.T, ctx context.Context) (browser.Frame, []int) {
	t.Helper()
	for _, f := range graph(t, ctx) {
		if f.Selected {
			return f, pixel(t, ctx, f.X+1.5, f.Y+1.5)
		}
	}
	return browser.Frame{}, nil
}

// pixel reads the flame graph's canvas at a point of the viewport: r, g, b, a.
func pixel(t *testing.T, ctx context.Context, x, y float64) []int {
	t.Helper()
	return eval[[]int](t, ctx, fmt.Sprintf(`(() => {
		const c = document.querySelector("#flame canvas"), b = c.getBoundingClientRect(), dpr = c.width / b.width;
		return Array.from(c.getContext("2d").getImageData(Math.floor((%f - b.left) * dpr), Math.floor((%f - b.top) * dpr), 1, 1).data);
	})()`, x, y))
}

// cssColour is a colour variable of the page's style sheet as r, g, b.
func cssColour(t *testing.T, ctx context.Context, name string) []int {
	t.Helper()
	return eval[[]int](t, ctx, fmt.Sprintf(`(() => {
		const v = getComputedStyle(document.documentElement).getPropertyValue(%q).trim();
		const m = /^#(..)(..)(..)$/.exec(v);
		return m ? [parseInt(m[1], 16), parseInt(m[2], 16), parseInt(m[3], 16)] : [];
	})()`, name))
}

func near(a, b []int) bool {
	if len(a) < 3 || len(b) < 3 {
		return false
	}
	for i := range 3 {
		if d := a[i] - b[i]; d > 3 || d < -3 {
			return false
		}
	}
	return true
}

// Keyboard: the arrows move the selection between a frame's parent, its widest child and
// its siblings; the selection is outlined and described; Enter zooms; Escape resets.
func TestFlameKeyboard(t *testing.T) {
	bctx := browser.Require(t)
	s := serve(t, callersRun(), "")
	ctx := open(t, bctx, s, "")
	eval[bool](t, ctx, `(document.querySelector("#flame canvas").focus(), document.activeElement.tagName === "CANVAS")`)
	full := eval[float64](t, ctx, `document.querySelector("#flame").getBoundingClientRect().width`)
	outline := cssColour(t, ctx, "--select")
	for i, c := range []struct {
		key, want string
		zoomed    bool // the selection spans the graph
	}{
		{kb.ArrowDown, "all", true}, // the first key selects the top frame
		{kb.ArrowDown, "main", true},
		{kb.ArrowDown, "path_b", false}, // the widest child
		{kb.ArrowRight, "path_a", false},
		{kb.ArrowRight, "path_a", false}, // no sibling further right
		{kb.ArrowLeft, "path_b", false},
		{kb.ArrowDown, "hot_leaf", false},
		{kb.ArrowRight, "inflate", false},
		{kb.ArrowUp, "path_b", false},
		{kb.Enter, "path_b", true},
		{kb.ArrowDown, "hot_leaf", false},
		{kb.Escape, "hot_leaf", false}, // the zoom is reset, the selection stays
	} {
		if err := chromedp.Do(ctx, chromedp.KeyEvent(c.key)); err != nil {
			t.Fatal(err)
		}
		var f browser.Frame
		var px []int
		until(t, ctx, fmt.Sprintf("step %d selects %s", i, c.want), func() (bool, string) {
			f, px = selected(t, ctx)
			return f.Func == c.want, f.Func
		})
		if !near(px, outline) {
			t.Errorf("step %d: %s is not outlined: pixel %v, outline %v", i, c.want, px, outline)
		}
		if spans := f.Drawn >= 0.98*full; spans != c.zoomed {
			t.Errorf("step %d: %s spans %.0f of %.0f px", i, c.want, f.Drawn, full)
		}
		if c.want != "all" && !strings.HasPrefix(text(ctx, "#frame-info"), c.want+" ·") {
			t.Errorf("step %d: the frame's line says %q", i, text(ctx, "#frame-info"))
		}
	}
	if sel := pageURL(t, ctx).Query()["sel"]; strings.Join(sel, ">") != "main>path_b>hot_leaf" {
		t.Errorf("the URL keeps the selection as %q", sel)
	}
	noErrors(t, ctx)
}

// The theme follows the system's: with prefers-color-scheme dark the page and the flame
// graph's frames take the dark colours, and back.
func TestThemeFollowsSystem(t *testing.T) {
	bctx := browser.Require(t)
	s := serve(t, callersRun(), "")
	ctx := open(t, bctx, s, "")
	mainPixel := func() []int {
		for _, f := range graph(t, ctx) {
			if f.Func == "main" {
				return pixel(t, ctx, f.X+f.W/2, f.Y+1.5)
			}
		}
		t.Fatal("main is not drawn")
		return nil
	}
	for _, c := range []struct {
		scheme string
		frame  []int // native code's colour in that scheme
		dark   bool
	}{{"dark", []int{0xd9, 0x8b, 0x44}, true}, {"light", []int{0xf2, 0xa6, 0x5a}, false}} {
		if err := browser.ColorScheme(ctx, c.scheme); err != nil {
			t.Fatal(err)
		}
		until(t, ctx, c.scheme+" frames", func() (bool, string) {
			px := mainPixel()
			return near(px, c.frame), fmt.Sprint(px)
		})
		bg := eval[[]int](t, ctx, `getComputedStyle(document.body).backgroundColor.match(/\d+/g).map(Number)`)
		if isDark := bg[0]+bg[1]+bg[2] < 3*80; isDark != c.dark {
			t.Errorf("%s: the page's background is rgb%v", c.scheme, bg)
		}
	}
	noErrors(t, ctx)
}

// The inverted toggle draws the tree bottom-up, as the API's inverted flame; it is kept
// in the URL.
func TestInvertedToggle(t *testing.T) {
	bctx := browser.Require(t)
	run := callersRun()
	s := serve(t, run, "")
	ctx := open(t, bctx, s, "")
	if err := chromedp.Do(ctx, chromedp.Click("#inverted")); err != nil {
		t.Fatal(err)
	}
	want := flameOf(t, run, query.FlameOptions{Inverted: true})
	until(t, ctx, "the inverted graph", func() (bool, string) {
		got := rootChildren(t, ctx)
		return got == childrenOf(want), got
	})
	if got := pageURL(t, ctx).Query().Get("inverted"); got != "1" {
		t.Errorf("the URL says inverted=%q", got)
	}
	// hot_leaf's callers below it.
	var below []string
	for _, f := range graph(t, ctx) {
		if f.Depth == 2 {
			below = append(below, fmt.Sprintf("%s=%.0f", f.Func, f.Total))
		}
	}
	if got, w := strings.Join(below, " "), childrenOf(want.Children[0])+" "+childrenOf(want.Children[1])+" "+childrenOf(want.Children[2]); !strings.HasPrefix(w, got) || got == "" {
		t.Errorf("second row %q, want %q", got, w)
	}
	noErrors(t, ctx)
}

// The callers and callees of the selected function, as the API counts them.
func TestCallersPanel(t *testing.T) {
	bctx := browser.Require(t)
	run := callersRun()
	s := serve(t, run, "")
	ctx := open(t, bctx, s, "")
	idle(t, ctx)
	// Where the top table is on the page: selecting a frame, zooming into it and
	// filling the panel must not move it (a row clicked as it moves is missed).
	const topAt = `Math.round(document.querySelector("#top-panel").getBoundingClientRect().top + window.scrollY)`
	before := eval[float64](t, ctx, topAt)
	if err := browser.ClickFrame(ctx, func(f browser.Frame) bool { return f.Func == "path_b" }); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "path_b's callers and callees", func() (bool, string) {
		got := text(ctx, "#calls-panel")
		return strings.Contains(got, "Callers and callees of path_b"), got
	})
	idle(t, ctx)
	if after := eval[float64](t, ctx, topAt); after != before {
		t.Errorf("the top table moved from y=%v to y=%v when a frame was selected", before, after)
	}
	callers, callees := text(ctx, "#callers"), text(ctx, "#callees")
	// path_b: 360 samples, all from main; 300 into hot_leaf, 60 into inflate.
	for _, c := range []struct{ got, want string }{
		{callers, "360\t100.0%\tmain"},
		{callees, "300\t83.3%\thot_leaf"},
		{callees, "60\t16.7%\tinflate"},
	} {
		if !strings.Contains(c.got, c.want) {
			t.Errorf("the panel lacks %q:\n%s", c.want, c.got)
		}
	}
	// A row highlights its function in the graph.
	if err := chromedp.Do(ctx, chromedp.Click(`#callees tr[data-func="hot_leaf"]`)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "hot_leaf highlighted", func() (bool, string) {
		for _, f := range graph(t, ctx) {
			if f.Match {
				return f.Func == "hot_leaf", f.Func
			}
		}
		return false, "no match"
	})
	noErrors(t, ctx)
}

// menu right-clicks the drawn frame of fn and picks the action of its menu.
func menu(t *testing.T, ctx context.Context, fn, action string) {
	t.Helper()
	idle(t, ctx)
	var f browser.Frame
	until(t, ctx, fn+" drawn", func() (bool, string) {
		for _, g := range graph(t, ctx) {
			if g.Func == fn {
				f = g
				return true, ""
			}
		}
		return false, rootChildren(t, ctx)
	})
	if err := chromedp.Do(ctx, chromedp.MouseClickXY(f.X+f.W/2, f.Y+f.H/2, chromedp.ButtonRight)); err != nil {
		t.Fatal(err)
	}
	if got := text(ctx, "#frame-menu"); !strings.Contains(got, action) {
		t.Fatalf("%s's menu offers %q, not %q", fn, got, action)
	}
	if err := chromedp.Do(ctx, chromedp.Click(fmt.Sprintf(`//div[@id="frame-menu"]/button[text()=%q]`, action))); err != nil {
		t.Fatal(err)
	}
}

// drawnAs waits until the graph's top rows are those of want.
func drawnAs(t *testing.T, ctx context.Context, what string, want *api.FlameNode) {
	t.Helper()
	until(t, ctx, what, func() (bool, string) {
		got := rootChildren(t, ctx)
		return got == childrenOf(want) && secondRow(t, ctx) == grandChildren(want), got + " / " + secondRow(t, ctx)
	})
}

// secondRow describes the frames two rows below the graph's top, as rootChildren.
func secondRow(t *testing.T, ctx context.Context) string {
	var parts []string
	for _, f := range graph(t, ctx) {
		if f.Depth == 2 {
			parts = append(parts, fmt.Sprintf("%s=%.0f", f.Func, f.Total))
		}
	}
	return strings.Join(parts, " ")
}

func grandChildren(n *api.FlameNode) string {
	var parts []string
	for _, c := range n.Children {
		if s := childrenOf(c); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " ")
}

// A frame's menu applies the stack transforms through the API: the graph is the one the
// API answers with the same parameters; the transforms are listed, kept in the URL, and
// each can be removed.
func TestFrameMenuTransforms(t *testing.T) {
	bctx := browser.Require(t)
	run := namedRun("transforms",
		work{101, []string{"main", "path_a", "hot_leaf"}, 100},
		work{102, []string{"main", "path_b", "hot_leaf"}, 300},
		work{102, []string{"main", "path_b", "libz.so.1:inflate", "libz.so.1:inflate_fast"}, 60},
		work{101, []string{"main", "walk", "step", "walk", "step", "walk", "leafy"}, 80},
	)
	s := serve(t, run, "")
	ctx := open(t, bctx, s, "")
	tr := api.Transform{}
	for i, c := range []struct {
		fn, action string
		apply      func()
		chips      string
	}{
		{"path_b", "hide it", func() { tr.Hide = "^path_b$" }, "hide ^path_b$"},
		{"inflate", "collapse its image", func() { tr.CollapseImage = []string{"libz.so.1"} }, "collapse image libz.so.1"},
		{"walk", "fold recursion", func() { tr.FoldRecursion = true }, "fold recursion"},
		{"path_a", "ignore it", func() { tr.Ignore = "^path_a$" }, "ignore ^path_a$"},
		{"hot_leaf", "focus on it", func() { tr.Focus = "^hot_leaf$" }, "focus ^hot_leaf$"},
	} {
		menu(t, ctx, c.fn, c.action)
		c.apply()
		drawnAs(t, ctx, fmt.Sprintf("step %d: %s", i, c.action), flameOf(t, run, query.FlameOptions{Transform: tr}))
		if got := text(ctx, "#transforms"); !strings.Contains(got, c.chips) {
			t.Errorf("step %d: the transforms listed: %q, want %q among them", i, got, c.chips)
		}
	}
	q := pageURL(t, ctx).Query()
	var got api.Transform
	if err := api.DecodeParams(q, &got); err != nil || fmt.Sprint(got) != fmt.Sprint(tr) {
		t.Errorf("the URL keeps %+v, want %+v", got, tr)
	}
	// Removed, one by one: focus, then hide.
	for _, rm := range []struct {
		label string
		apply func()
	}{{"focus", func() { tr.Focus = "" }}, {"hide", func() { tr.Hide = "" }}} {
		if err := chromedp.Do(ctx, chromedp.Click(fmt.Sprintf(`#transforms button[aria-label="remove %s"]`, rm.label))); err != nil {
			t.Fatal(err)
		}
		rm.apply()
		drawnAs(t, ctx, "after removing "+rm.label, flameOf(t, run, query.FlameOptions{Transform: tr}))
	}
	if got := text(ctx, "#transforms"); strings.Contains(got, "focus") || strings.Contains(got, "hide") {
		t.Errorf("removed transforms still listed: %q", got)
	}
	noErrors(t, ctx)
}

// A link opens the view it was made of: window, thread, transforms, mode, zoom and
// selection from the URL give the graph the API answers for the same parameters.
func TestURLOpensTheView(t *testing.T) {
	bctx := browser.Require(t)
	run := callersRun()
	s := serve(t, run, "")
	tr := api.Transform{Hide: "^path_a$", CollapseImage: []string{"libz.so.1"}}
	q := url.Values{"run": {"callers"}, "from": {"0.05"}, "to": {"0.45"}, "tid": {"102"}, "zoom": {"main"}, "sel": {"main", "path_b"}}
	tr.AddParams(q)
	ctx := open(t, bctx, s, "&"+q.Encode())
	want := flameOf(t, run, query.FlameOptions{Tid: 102, Window: query.Window{From: "0.05", To: "0.45"}, Transform: tr})
	// Zoomed on main: its children are the graph's second row.
	until(t, ctx, "the view of the link", func() (bool, string) {
		got := secondRow(t, ctx)
		return got == childrenOf(want.Children[0]), got
	})
	if f, _ := selected(t, ctx); f.Func != "path_b" {
		t.Errorf("the selection is %q, want path_b", f.Func)
	}
	if got := text(ctx, "#selection"); !strings.Contains(got, "0.05s – 0.45s") {
		t.Errorf("the window shown: %q", got)
	}
	if got := eval[string](t, ctx, `document.querySelector("#thread").value`); got != "t:102" {
		t.Errorf("the thread selector shows %q", got)
	}
	if got := text(ctx, "#transforms"); !strings.Contains(got, "hide ^path_a$") || !strings.Contains(got, "collapse image libz.so.1") {
		t.Errorf("the transforms listed: %q", got)
	}
	// The page keeps the link as it was given.
	got := pageURL(t, ctx).Query()
	for k, v := range q {
		if strings.Join(got[k], ",") != strings.Join(v, ",") {
			t.Errorf("the URL's %s is %q, want %q", k, got[k], v)
		}
	}
	// A link to another run says so.
	ctx = open(t, bctx, s, "&run=other")
	if got := text(ctx, "#notice"); !strings.Contains(got, "This link is for run other") {
		t.Errorf("a link to another run: notice %q", got)
	}
	noErrors(t, ctx)
}

// gated holds every query but status until it is opened.
type gated struct {
	Source
	open chan struct{}
}

func (g gated) Get(ctx context.Context, path string, q url.Values) ([]byte, int) {
	if path != "/v1/status" {
		select {
		case <-g.open:
		case <-ctx.Done():
			return nil, 503
		}
	}
	return g.Source.Get(ctx, path, q)
}

// liveRec is a recording whose run can be swapped while the page watches it.
type liveRec struct {
	mu  sync.Mutex
	run *store.Run
}

func (l *liveRec) get() *store.Run       { l.mu.Lock(); defer l.mu.Unlock(); return l.run }
func (l *liveRec) set(r *store.Run)      { l.mu.Lock(); l.run = r; l.mu.Unlock() }
func (l *liveRec) ID() string            { return l.get().Meta.ID }
func (l *liveRec) Snapshot() *store.Run  { return l.get() }
func (l *liveRec) Stop()                 {}
func (l *liveRec) Done() <-chan struct{} { return nil }
func (l *liveRec) Status() api.Status {
	st := api.StatusOf(l.get())
	st.Live, st.State = true, api.StateLive
	return st
}
func (l *liveRec) Wait(ctx context.Context, _ api.WaitCondition) api.Wait {
	<-ctx.Done()
	return api.Wait{}
}

// While a live page waits for its data it says it is loading, and while the run has no
// samples yet it says it waits for them: never "no samples" before there could be any.
func TestLivePageSaysItIsLoading(t *testing.T) {
	bctx := browser.Require(t)
	full := callersRun()
	empty := &store.Run{Meta: store.Meta{ID: "callers", StartNs: 1e9}}
	rec := &liveRec{run: empty}
	g := gated{HandlerSource{Handler: server.Handler(rec, true)}, make(chan struct{})}
	s, err := Listen(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(s.Close)
	ctx := browser.Within(t, bctx, 2*time.Minute)
	if err := chromedp.Do(ctx, chromedp.Navigate(s.URL())); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the run's status shown", func() (bool, string) {
		got := text(ctx, "#strip")
		return strings.Contains(got, "samples 0"), got
	})
	page := text(ctx, "main")
	if !strings.Contains(text(ctx, "#flame"), "loading") || strings.Contains(page, "no samples") {
		t.Errorf("before its data came the page said:\n%s", page)
	}
	close(g.open)
	until(t, ctx, "the page waits for samples", func() (bool, string) {
		got := text(ctx, "#flame")
		return strings.Contains(got, "waiting for the first samples"), got
	})
	if page := text(ctx, "main"); strings.Contains(page, "no samples") {
		t.Errorf("a live run without samples yet:\n%s", page)
	}
	rec.set(full)
	until(t, ctx, "the samples drawn", func() (bool, string) {
		got := rootChildren(t, ctx)
		return got == "main=500", got
	})
	noErrors(t, ctx)
}

// Two windows of one run: the flame graph is coloured by each frame's change of share
// from the base window, and the table lists the functions whose share changed most.
func TestDiffOfTwoWindows(t *testing.T) {
	bctx := browser.Require(t)
	// work_b's work doubles after 1 s: 25% of the first second's samples, 40% after.
	var ws []work
	for range 10 {
		ws = append(ws, work{101, []string{"main", "work_a"}, 50}, work{101, []string{"main", "work_b"}, 25}, work{101, []string{"main", "work_c"}, 25})
	}
	for range 10 {
		ws = append(ws, work{101, []string{"main", "work_a"}, 50}, work{101, []string{"main", "work_b"}, 50}, work{101, []string{"main", "work_c"}, 25})
	}
	run := namedRun("windows", ws...)
	s, err := Listen(HandlerSource{server.Handler(server.Stored(run), false), true}, Options{
		Base: &Base{Run: run, Window: query.Window{From: "0", To: "1"}, Same: true},
		View: url.Values{"from": {"1"}, "to": {"2.25"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(s.Close)
	ctx := open(t, bctx, s, "")
	changes := map[string]float64{}
	until(t, ctx, "frames coloured by change", func() (bool, string) {
		for _, f := range graph(t, ctx) {
			if f.Change != nil {
				changes[f.Func] = *f.Change
			}
		}
		return len(changes) == 5, fmt.Sprint(changes)
	})
	for fn, want := range map[string]float64{"main": 0, "work_a": -10, "work_b": 15, "work_c": -5} {
		if d := changes[fn] - want; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s changed %+.2f points, want %+.0f", fn, changes[fn], want)
		}
	}
	grow, shrink, same := cssColour(t, ctx, "--grow"), cssColour(t, ctx, "--shrink"), cssColour(t, ctx, "--same")
	for _, f := range graph(t, ctx) {
		px := pixel(t, ctx, f.X+f.W/2, f.Y+1.5)
		switch f.Func {
		case "work_b": // the largest change: the full colour
			if !near(px, grow) {
				t.Errorf("work_b, which grew most, is drawn %v, not %v", px, grow)
			}
		case "work_a", "work_c":
			if !(px[2] > px[0]+20) || near(px, same) {
				t.Errorf("%s, which shrank, is drawn %v (shrink %v)", f.Func, px, shrink)
			}
		case "main":
			if !near(px, same) {
				t.Errorf("main, unchanged, is drawn %v, not %v", px, same)
			}
		}
	}
	until(t, ctx, "the table of changes", func() (bool, string) {
		got := text(ctx, "#changes tbody")
		return strings.HasPrefix(got, "▲ +15.00\t25.00%\t40.00%\twork_b"), got
	})
	if got := text(ctx, "#changes tbody"); !strings.Contains(got, "▼ -10.00\t50.00%\t40.00%\twork_a") {
		t.Errorf("the table lacks work_a's change:\n%s", got)
	}
	if got := text(ctx, "#diff-title"); !strings.Contains(got, "another window of this run (0.00s – 1.00s)") {
		t.Errorf("the diff's title: %q", got)
	}
	// Unticked: the kinds' colours again.
	if err := chromedp.Do(ctx, chromedp.Click("#diff-colour")); err != nil {
		t.Fatal(err)
	}
	user := cssColour(t, ctx, "--k-user")
	until(t, ctx, "kind colours", func() (bool, string) {
		for _, f := range graph(t, ctx) {
			if f.Func == "work_b" {
				px := pixel(t, ctx, f.X+f.W/2, f.Y+1.5)
				return near(px, user), fmt.Sprint(px)
			}
		}
		return false, "work_b not drawn"
	})
	noErrors(t, ctx)
}

// The program's spans are lanes under their thread, a span inside another in the lane
// below; markers are lines; a click on a span sets the window to it.
func TestTimelineSpanLanes(t *testing.T) {
	bctx := browser.Require(t)
	run := callersRun()
	run.Spans = spans.ListOf([]spans.Span{
		{Name: "work", Pid: 100, Tid: 101, Start: 1.0e9, End: 1.1e9},
		{Name: "inner", Pid: 100, Tid: 101, Start: 1.02e9, End: 1.05e9, Depth: 1},
		{Name: "tick", Pid: 100, Tid: 101, Start: 1.2e9, End: 1.2e9},
	})
	s := serve(t, run, "")
	ctx := open(t, bctx, s, "")
	until(t, ctx, "the spans drawn", func() (bool, string) {
		got := eval[string](t, ctx, `[...document.querySelectorAll("#timeline rect.span, #timeline line.marker")].map((e) => e.textContent.split(" ")[0] + "@" + (e.getAttribute("y") || "line")).join(" ")`)
		return strings.HasPrefix(got, "work@") && strings.Contains(got, " inner@") && strings.HasSuffix(got, " tick@line"), got
	})
	ys := eval[[]float64](t, ctx, `[...document.querySelectorAll("#timeline rect.span")].map((e) => Number(e.getAttribute("y")))`)
	if len(ys) != 2 || ys[1] <= ys[0] {
		t.Errorf("span lanes at y %v: want inner below work", ys)
	}
	if err := chromedp.Do(ctx, chromedp.Click(`#timeline rect.span`)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the window set to the span", func() (bool, string) {
		q := pageURL(t, ctx).Query()
		return q.Get("from") == "0" && q.Get("to") == "0.1", q.Encode()
	})
	noErrors(t, ctx)
}

// statusAfterFlame answers the status only once the flame graph has been asked for, and
// counts the queries of each path.
type statusAfterFlame struct {
	Source
	flameAsked chan struct{}
	once       sync.Once
	mu         sync.Mutex
	asked      map[string]int
}

func (s *statusAfterFlame) Get(ctx context.Context, path string, q url.Values) ([]byte, int) {
	s.mu.Lock()
	s.asked[path]++
	s.mu.Unlock()
	switch path {
	case "/v1/flame":
		s.once.Do(func() { close(s.flameAsked) })
	case "/v1/status":
		select {
		case <-s.flameAsked:
		case <-time.After(30 * time.Second): // the page waits for the status to ask: it fails below
		case <-ctx.Done():
		}
	}
	return s.Source.Get(ctx, path, q)
}

// The page asks for the flame graph and the timeline as it opens, beside the status rather
// than after it (on a big run each takes a few hundred milliseconds to answer), and asks
// each once.
func TestFirstLoadAsksGraphWithStatus(t *testing.T) {
	bctx := browser.Require(t)
	src := &statusAfterFlame{Source: HandlerSource{Handler: server.Handler(server.Stored(callersRun()), false)},
		flameAsked: make(chan struct{}), asked: map[string]int{}}
	s, err := Listen(src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(s.Close)
	start := time.Now()
	ctx := open(t, bctx, s, "")
	if got := rootChildren(t, ctx); got != "main=500" {
		t.Errorf("the graph drawn: %s", got)
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if elapsed := time.Since(start); elapsed > 25*time.Second {
		t.Errorf("the page took %v: it waited for the status before asking for the graph", elapsed)
	}
	for _, path := range []string{"/v1/flame", "/v1/timeline", "/v1/status"} {
		if src.asked[path] != 1 {
			t.Errorf("the page asked %s %d times on opening, want once: %v", path, src.asked[path], src.asked)
		}
	}
	noErrors(t, ctx)
}
