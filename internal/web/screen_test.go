package web

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/server"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil/browser"
)

// The tests here check what is on the screen: an element's computed style and box, what
// the point at its centre shows, the canvas's pixels, the tab's title, the browser's own
// log. An element can be in the DOM with the right attributes and still not be seen.

// visibleJS says whether the element el (an expression) is seen: displayed, with a box,
// and the topmost element at its centre (or inside what is).
const visibleJS = `((el) => {
	if (!el) return "no element";
	const cs = getComputedStyle(el);
	if (cs.display === "none" || cs.visibility === "hidden" || Number(cs.opacity) === 0) return "hidden by style: display " + cs.display + ", visibility " + cs.visibility;
	const b = el.getBoundingClientRect();
	if (b.width <= 0 || b.height <= 0) return "no box: " + b.width + "x" + b.height;
	el.scrollIntoView({ block: "center", inline: "center" });
	const c = el.getBoundingClientRect();
	// What the pointer passes through (the timeline's brush) is seen where it lies.
	if (cs.pointerEvents === "none") return c.right > 0 && c.bottom > 0 && c.left < innerWidth && c.top < innerHeight ? "" : "out of the window";
	const at = document.elementFromPoint(c.left + c.width / 2, c.top + c.height / 2);
	if (at !== el && !el.contains(at) && !(at && at.contains(el) && el instanceof SVGElement && at.tagName === "svg")) return "covered by " + (at ? at.tagName + "#" + at.id + "." + at.getAttribute("class") : "nothing");
	return "";
})`

// seen fails the test unless the element sel is seen (visibleJS).
func seen(t *testing.T, ctx context.Context, what, sel string) {
	t.Helper()
	until(t, ctx, what+" on screen", func() (bool, string) {
		why := eval[string](t, ctx, visibleJS+"(document.querySelector("+strconv.Quote(sel)+"))")
		return why == "", why
	})
}

// 1. The off-CPU timeline's state rows are on screen (the header badge's rule for an
// empty .state once hid every one of them).
func TestTimelineStateRowsSeen(t *testing.T) {
	bctx := browser.Require(t)
	run := offCPURun()
	run.OffCPUIntervals = []agg.Interval{{Tid: 102, Stack: 0, Start: 1.0e9, End: 1.1e9}, {Tid: 101, Stack: 1, Start: 1.15e9, End: 1.45e9}}
	s := serve(t, run, "")
	ctx := open(t, bctx, s, "&mode=off_cpu&sel=")
	for _, st := range []string{"lock", "sleep", "running"} {
		sel := fmt.Sprintf(`#timeline rect.state[data-state=%q]`, st)
		seen(t, ctx, "a "+st+" bucket", sel)
		// Painted in its colour: what is at its centre is the rect, filled with the reason's.
		colour := "on-cpu"
		if st != "running" {
			colour = st
		}
		if got := eval[string](t, ctx, `getComputedStyle(document.querySelector(`+strconv.Quote(sel)+`)).fill`); got != eval[string](t, ctx, `(() => { const d = document.createElement("div"); d.style.color = "var(--r-`+colour+`)"; document.body.append(d); const c = getComputedStyle(d).color; d.remove(); return c; })()`) {
			t.Errorf("a %s bucket is filled %s", st, got)
		}
		// The row of all threads shows the mode's time too, stacked by state in the same
		// colours, not the CPU samples alone.
		all := fmt.Sprintf(`#timeline rect.all-state[data-state=%q]`, st)
		seen(t, ctx, "a "+st+" bucket of all threads", all)
		if got, want := eval[string](t, ctx, `getComputedStyle(document.querySelector(`+strconv.Quote(all)+`)).fill`), eval[string](t, ctx, `getComputedStyle(document.querySelector(`+strconv.Quote(sel)+`)).fill`); got != want {
			t.Errorf("a %s bucket of all threads is filled %s, the thread's %s", st, got, want)
		}
	}
	noErrors(t, ctx)
}

// 2. The page says when the graph is pruned, at what threshold and what the pruned frames
// hold, in the mode's unit.
func TestFlameSaysItIsPruned(t *testing.T) {
	bctx := browser.Require(t)
	ws := []work{{101, []string{"main", "big"}, 2000}}
	for i := range 30 {
		ws = append(ws, work{101, []string{"main", fmt.Sprintf("tiny_%02d", i)}, 1})
	}
	s := serve(t, namedRun("pruned", ws...), "")
	ctx := open(t, bctx, s, "")
	seen(t, ctx, "the note", "#flame-note")
	// 2,030 samples: 0.1% is 2.03, so each tiny function (1 sample) is left out.
	if got, want := text(ctx, "#flame-note"), "pruned at 0.1%: frames under 3 samples are not drawn; they hold 30 samples (1.48%)"; got != want {
		t.Errorf("the note says %q, want %q", got, want)
	}
	// A run that nothing was pruned of says nothing, and its graph is where a pruned one's
	// is: the note's line does not come and go (live updates would move the graph).
	at := boxOf(t, ctx, "#flame").Top - boxOf(t, ctx, "#flame-panel").Top
	s2 := serve(t, callersRun(), "")
	ctx = open(t, bctx, s2, "")
	if got := text(ctx, "#flame-note"); got != "" {
		t.Errorf("an unpruned graph's note: %q", got)
	}
	if got := boxOf(t, ctx, "#flame").Top - boxOf(t, ctx, "#flame-panel").Top; got != at {
		t.Errorf("the graph is %v px into its panel without a note, %v px with one", got, at)
	}
	noErrors(t, ctx)
}

// windowsOffCPURun has time off CPU in two windows: in the first 200 ms beta waits 100 ms
// for the lock and alpha sleeps 50 ms; from 200 ms, beta waits 50 ms and alpha sleeps
// 150 ms. The lock's share of the time off CPU falls from 66.67% to 25%.
func windowsOffCPURun() *store.Run {
	run := offCPURun()
	run.OffCPUIntervals = []agg.Interval{
		{Tid: 102, Stack: 0, Start: 1.0e9, End: 1.1e9}, {Tid: 101, Stack: 1, Start: 1.1e9, End: 1.15e9},
		{Tid: 102, Stack: 0, Start: 1.2e9, End: 1.25e9}, {Tid: 101, Stack: 1, Start: 1.3e9, End: 1.45e9},
	}
	return run
}

// 4. A diff in the off-CPU mode compares time off CPU on both sides, and colours the graph
// by change while its box is ticked.
func TestDiffOffCPU(t *testing.T) {
	bctx := browser.Require(t)
	run := windowsOffCPURun()
	s, err := Listen(HandlerSource{server.Handler(server.Stored(run), false), true}, Options{
		Base: &Base{Run: run, Window: query.Window{From: "0", To: "0.2"}, Same: true},
		View: url.Values{"from": {"0.2"}, "to": {"0.5"}, "mode": {"off_cpu"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(s.Close)
	ctx := open(t, bctx, s, "")
	until(t, ctx, "the off-CPU changes", func() (bool, string) {
		got := text(ctx, "#changes tbody")
		return strings.Contains(got, "▲ +41.67\t33.33%\t75.00%\tnanosleep") && strings.Contains(got, "▼ -41.67\t66.67%\t25.00%\tpthread_mutex_lock"), got
	})
	if got := text(ctx, "#changes tbody"); strings.Contains(got, "hot_leaf") || strings.Contains(got, "schedule") {
		t.Errorf("the off-CPU table lists CPU functions:\n%s", got)
	}
	if !eval[bool](t, ctx, `document.querySelector("#diff-colour").checked`) {
		t.Errorf("the colour-by-change box is not ticked")
	}
	if got := text(ctx, "#diff-title"); !strings.HasSuffix(got, "shares of each side's time off CPU") {
		t.Errorf("the diff's title: %q", got)
	}
	grow := cssColour(t, ctx, "--grow")
	until(t, ctx, "nanosleep in the colour of growth", func() (bool, string) {
		for _, f := range graph(t, ctx) {
			if f.Func == "nanosleep" {
				px := pixel(t, ctx, f.X+f.W/2, f.Y+1.5)
				return near(px, grow), fmt.Sprint(px, " want ", grow)
			}
		}
		return false, "nanosleep not drawn"
	})
	// Unticked: the reasons' colours, and the box says so.
	if err := chromedp.Do(ctx, chromedp.Click("#diff-colour")); err != nil {
		t.Fatal(err)
	}
	sleep := eval[string](t, ctx, cssColourJS+`("--r-sleep")`)
	until(t, ctx, "nanosleep in the colour of sleep", func() (bool, string) {
		got := eval[string](t, ctx, frameColourJS+`("nanosleep")`)
		return got == sleep, got
	})
	if eval[bool](t, ctx, `document.querySelector("#diff-colour").checked`) {
		t.Errorf("the box is ticked while the graph is coloured by reason")
	}
	noErrors(t, ctx)
}

// 6. While live, the callers panel follows the run as the graph does.
func TestCallersFollowLiveRun(t *testing.T) {
	bctx := browser.Require(t)
	rec := &liveRec{run: namedRun("callers", work{102, []string{"main", "path_b", "hot_leaf"}, 100})}
	s, err := Listen(HandlerSource{Handler: server.Handler(rec, true)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(s.Close)
	ctx := open(t, bctx, s, "&sel=main&sel=path_b")
	until(t, ctx, "path_b's callers", func() (bool, string) {
		got := text(ctx, "#calls-panel")
		return strings.Contains(got, "Callers and callees of path_b 100 samples") && strings.Contains(text(ctx, "#callers"), "100\t100.0%\tmain"), got
	})
	rec.set(callersRun())
	until(t, ctx, "the graph follows", func() (bool, string) {
		got := rootChildren(t, ctx)
		return got == "main=500", got
	})
	until(t, ctx, "the callers follow", func() (bool, string) {
		got := text(ctx, "#calls-panel")
		return strings.Contains(got, "Callers and callees of path_b 360 samples") && strings.Contains(text(ctx, "#callers"), "360\t100.0%\tmain"), got
	})
	noErrors(t, ctx)
}

// 7. The wakers' "From" shows the program's functions that woke, past the kernel's frames
// of the wakeup, and they are on screen, not cut off.
func TestWakersFromShowsTheProgram(t *testing.T) {
	bctx := browser.Require(t)
	run := wakersRun()
	p := run.WakersNs
	// Ten kernel frames between the wakeup and release_lock.
	var kstack []uint32
	for i := range 10 {
		p.Frames = append(p.Frames, agg.Frame{Func: fmt.Sprintf("kernel_fn_%d", i), Image: "[kernel.kallsyms]", Kind: agg.KindKernel})
		p.Locations = append(p.Locations, agg.Location{Lines: []agg.Line{{Func: uint32(len(p.Frames) - 1)}}})
		kstack = append(kstack, uint32(len(p.Locations)-1))
	}
	p.Stacks[0] = append(append([]uint32{0}, kstack...), 1, 2)
	p.ExpandStacks()
	n := *run.WakersN
	n.Frames, n.Locations, n.Stacks = p.Frames, p.Locations, p.Stacks
	n.ExpandStacks()
	run.WakersN = &n
	s := serve(t, run, "")
	ctx := open(t, bctx, s, "&mode=off_cpu&tid=102&sel=")
	until(t, ctx, "beta's waker's stack", func() (bool, string) {
		got := text(ctx, "#wakers tbody .waker-stack")
		return strings.HasPrefix(got, "3× 700 ms: release_lock ← main"), got
	})
	// release_lock's text lies inside the cell's visible box.
	why := eval[string](t, ctx, `(() => {
		const cell = document.querySelector("#wakers tbody .waker-stack");
		const node = cell.firstChild, i = node.textContent.indexOf("release_lock");
		if (i < 0) return "no release_lock";
		const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + "release_lock".length);
		const t = r.getBoundingClientRect(), c = cell.getBoundingClientRect();
		return t.width > 0 && t.left >= c.left && t.right <= c.right + 0.5 ? "" : "text at " + t.left + "-" + t.right + ", cell " + c.left + "-" + c.right;
	})()`)
	if why != "" {
		t.Errorf("release_lock is not on screen: %s", why)
	}
	noErrors(t, ctx)
}

// 8. In the off-CPU mode the search counts time, in milliseconds.
func TestSearchCountOffCPU(t *testing.T) {
	bctx := browser.Require(t)
	s := serve(t, offCPURun(), "")
	ctx := open(t, bctx, s, "&mode=off_cpu&search=pthread_mutex")
	until(t, ctx, "the count of the search", func() (bool, string) {
		got := text(ctx, "#search-result")
		return got == "1 frame matches · 700 ms of 1,000 ms (70.00%)", got
	})
	noErrors(t, ctx)
}

// setWidth makes the browser's window w CSS pixels wide.
func setWidth(t *testing.T, ctx context.Context, w int64) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, 800)); err != nil {
		t.Fatal(err)
	}
}

// box is an element's box on the page.
type box struct{ Left, Top, Right, Bottom, Width, Height float64 }

func boxOf(t *testing.T, ctx context.Context, sel string) box {
	t.Helper()
	return eval[box](t, ctx, `(() => { const b = document.querySelector(`+strconv.Quote(sel)+`).getBoundingClientRect(); return {left: b.left + scrollX, top: b.top + scrollY, right: b.right + scrollX, bottom: b.bottom + scrollY, width: b.width, height: b.height}; })()`)
}

// 9. Below 1000 px the panels side by side stack, and a long name keeps its room; wider,
// they stay side by side.
func TestNarrowLayoutStacks(t *testing.T) {
	bctx := browser.Require(t)
	const long = "a_function_with_a_rather_long_name_that_is_read_whole"
	s := serve(t, namedRun("narrow",
		work{101, []string{"main", "path_a", long}, 300},
		work{102, []string{"main", "path_b", "hot_leaf"}, 100},
	), "")
	ctx := open(t, bctx, s, "&sel=main&sel=path_a")
	until(t, ctx, "the callers", func() (bool, string) {
		got := text(ctx, "#callees")
		return strings.Contains(got, long), got
	})
	for _, w := range []int64{800, 999, 1280} {
		setWidth(t, ctx, w)
		var top, code, callers, callees box
		until(t, ctx, fmt.Sprintf("the layout at %d px", w), func() (bool, string) {
			top, code = boxOf(t, ctx, "#top-panel"), boxOf(t, ctx, "#func-panel")
			callers, callees = boxOf(t, ctx, "#callers"), boxOf(t, ctx, "#callees")
			stacked := code.Top >= top.Bottom && callees.Top >= callers.Bottom
			side := code.Left >= top.Right && callees.Left >= callers.Right
			return (w < 1000 && stacked) || (w >= 1000 && side), fmt.Sprintf("top %+v code %+v callers %+v callees %+v", top, code, callers, callees)
		})
		if w < 1000 {
			// No panel runs off the page, and the long name is whole in both tables.
			if sw := eval[float64](t, ctx, `document.documentElement.scrollWidth`); sw > float64(w)+1 {
				t.Errorf("at %d px the page is %v px wide", w, sw)
			}
			for _, sel := range []string{"#top tbody", "#callees tbody"} {
				cut := eval[string](t, ctx, `[...document.querySelectorAll(`+strconv.Quote(sel+" td")+`)].filter((td) => td.textContent === `+strconv.Quote(long)+`).map((td) => td.scrollWidth > td.clientWidth ? "cut: " + td.clientWidth + " of " + td.scrollWidth : "whole").join() || "missing"`)
				if cut != "whole" {
					t.Errorf("at %d px the long name in %s: %s", w, sel, cut)
				}
			}
		}
	}
	noErrors(t, ctx)
}

// 10. Keyboard: the frame's menu moves with the arrows and Escape gives the focus back to
// the graph; a row of the top table opens its code with Enter; the timeline picks a
// window with the arrows and clears it with Escape.
func TestKeyboardMenuTablesTimeline(t *testing.T) {
	bctx := browser.Require(t)
	s := serve(t, callersRun(), "")
	ctx := open(t, bctx, s, "&sel=main&sel=path_b")
	active := func() string {
		return eval[string](t, ctx, `(() => { const a = document.activeElement; return a.tagName + (a.id ? "#" + a.id : "") + (a.dataset && a.dataset.act ? "[" + a.dataset.act + "]" : ""); })()`)
	}
	eval[bool](t, ctx, `(document.querySelector("#flame canvas").focus(), true)`)
	if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.ContextMenu)); err != nil {
		t.Fatal(err)
	}
	seen(t, ctx, "the frame's menu", "#frame-menu")
	for _, c := range []struct{ key, want string }{
		{"", "BUTTON[focus]"}, {kb.ArrowDown, "BUTTON[ignore]"}, {kb.ArrowDown, "BUTTON[hide]"}, {kb.ArrowUp, "BUTTON[ignore]"},
		{kb.End, "BUTTON[code]"}, {kb.ArrowDown, "BUTTON[focus]"}, {kb.Escape, "CANVAS"},
	} {
		if c.key != "" {
			if err := chromedp.Do(ctx, chromedp.KeyEvent(c.key)); err != nil {
				t.Fatal(err)
			}
		}
		until(t, ctx, "the focus on "+c.want, func() (bool, string) {
			got := active()
			return got == c.want, got
		})
	}
	if eval[string](t, ctx, visibleJS+`(document.querySelector("#frame-menu"))`) == "" {
		t.Errorf("the menu is still on screen after Escape")
	}
	// The top table: a row takes the focus and opens its code with Enter.
	eval[bool](t, ctx, `(document.querySelector("#top tbody tr[data-i]").focus(), true)`)
	if got := active(); got != "TR" {
		t.Fatalf("a row of the top table does not take the focus: %s", got)
	}
	first := eval[string](t, ctx, `document.activeElement.querySelector("td[title]").title`)
	if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the row's code", func() (bool, string) {
		got := text(ctx, "#func-title")
		return got == first, got
	})
	// The timeline.
	eval[bool](t, ctx, `(document.querySelector("#timeline").focus(), true)`)
	if got := active(); got != "DIV#timeline" {
		t.Fatalf("the timeline does not take the focus: %s", got)
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.ArrowRight)); err != nil {
		t.Fatal(err)
	}
	var first1, first2 float64
	until(t, ctx, "a window at the run's start", func() (bool, string) {
		q := pageURL(t, ctx).Query()
		first1, _ = strconv.ParseFloat(q.Get("from"), 64)
		first2, _ = strconv.ParseFloat(q.Get("to"), 64)
		return q.Has("from") && first1 == 0 && first2 > 0 && first2 < 0.1, q.Encode()
	})
	seen(t, ctx, "the window's brush", "#timeline .brush.main")
	if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.ArrowRight)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the window moved by its width", func() (bool, string) {
		q := pageURL(t, ctx).Query()
		from, _ := strconv.ParseFloat(q.Get("from"), 64)
		to, _ := strconv.ParseFloat(q.Get("to"), 64)
		return math.Abs(from-first2) < 0.002 && math.Abs(to-2*first2) < 0.002, q.Encode()
	})
	if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Escape)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the whole run", func() (bool, string) {
		q := pageURL(t, ctx).Query()
		return !q.Has("from"), q.Encode()
	})
	noErrors(t, ctx)
}

// browserLog gathers what the browser's console and log say, and the answers of the
// page's requests with an error status.
type browserLog struct {
	mu    sync.Mutex
	lines []string
}

func (b *browserLog) add(s string) { b.mu.Lock(); b.lines = append(b.lines, s); b.mu.Unlock() }
func (b *browserLog) all() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.lines...)
}

func listen(t *testing.T, ctx context.Context) *browserLog {
	b := &browserLog{}
	err := chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *log.EventEntryAdded:
			b.add(fmt.Sprintf("log %s: %s %s", e.Entry.Level, e.Entry.Text, e.Entry.URL))
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
				b.add(fmt.Sprintf("console %s", e.Type))
			}
		case *network.EventResponseReceived:
			if e.Response.Status >= 400 || strings.Contains(e.Response.URL, "favicon") {
				b.add(fmt.Sprintf("answer %d: %s", int(e.Response.Status), e.Response.URL))
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	err = chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, log.Enable, cdp.Empty{})
		return err
	}))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// 10. A page load leaves the console clean: the browser's request for the page's icon is
// answered (it asked for /favicon.ico without the token, and was refused with 403), and
// the tab names the run.
func TestConsoleCleanAndTitle(t *testing.T) {
	bctx := browser.Require(t)
	s := serve(t, callersRun(), "")
	ctx := browser.Within(t, bctx, 2*time.Minute)
	bl := listen(t, ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate(s.URL())); err != nil {
		t.Fatal(err)
	}
	idle(t, ctx)
	// The browser asks for the icon on its own, after the page's load: wait for its answer.
	until(t, ctx, "the icon's answer", func() (bool, string) {
		for _, l := range bl.all() {
			if strings.Contains(l, "favicon") && strings.HasPrefix(l, "answer ") {
				return true, ""
			}
		}
		return false, strings.Join(bl.all(), "; ")
	})
	for _, l := range bl.all() {
		if strings.Contains(l, "favicon") && !strings.HasPrefix(l, "answer 200") || strings.HasPrefix(l, "log error") || strings.HasPrefix(l, "console") {
			t.Errorf("the browser logged: %s", l)
		}
	}
	if got := eval[string](t, ctx, `document.title`); !strings.Contains(got, "run callers") {
		t.Errorf("the tab is titled %q", got)
	}
	noErrors(t, ctx)
}

// Answers are compressed: the browser received fewer bytes than it decoded.
func TestAnswersGzipped(t *testing.T) {
	bctx := browser.Require(t)
	s := serve(t, smallRun(), "")
	ctx := open(t, bctx, s, "")
	var got []struct {
		Name    string  `json:"name"`
		Encoded float64 `json:"encoded"`
		Decoded float64 `json:"decoded"`
	}
	b := eval[json.RawMessage](t, ctx, `performance.getEntriesByType("resource").concat(performance.getEntriesByType("navigation")).map((e) => ({name: new URL(e.name).pathname, encoded: e.encodedBodySize, decoded: e.decodedBodySize}))`)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	seenPaths := map[string]bool{}
	for _, e := range got {
		switch e.Name {
		case "/", "/app.js", "/app.css", "/api/flame", "/api/top", "/api/timeline":
			seenPaths[e.Name] = true
			if !(e.Encoded > 0 && e.Encoded < e.Decoded*0.8) {
				t.Errorf("%s came as %v bytes for %v", e.Name, e.Encoded, e.Decoded)
			}
		}
	}
	if len(seenPaths) != 6 {
		t.Errorf("the page's requests: %+v", got)
	}
	noErrors(t, ctx)
}

// Also: the inverted graph's first row is where samples landed: the hottest function's
// self is its total, not 0.
func TestInvertedSelf(t *testing.T) {
	bctx := browser.Require(t)
	s := serve(t, callersRun(), "")
	ctx := open(t, bctx, s, "&inverted=1&sel=hot_leaf")
	until(t, ctx, "hot_leaf's self", func() (bool, string) {
		got := text(ctx, "#frame-info")
		return strings.HasPrefix(got, "hot_leaf · /usr/bin/prog · total 400 (80.00%) · self 400"), got
	})
	noErrors(t, ctx)
}

// Also: the thread selector counts in the mode's unit.
func TestThreadSelectorCountsTheMode(t *testing.T) {
	bctx := browser.Require(t)
	s := serve(t, offCPURun(), "")
	ctx := open(t, bctx, s, "&mode=off_cpu&sel=")
	until(t, ctx, "the threads' time off CPU", func() (bool, string) {
		got := text(ctx, "#thread")
		return strings.Contains(got, "beta 102 (700 ms)") && strings.Contains(got, "alpha 101 (300 ms)"), got
	})
	choose(t, ctx, "#mode", "cpu")
	until(t, ctx, "the threads' samples", func() (bool, string) {
		got := text(ctx, "#thread")
		return strings.Contains(got, "alpha 101 (140)") && strings.Contains(got, "beta 102 (360)"), got
	})
	noErrors(t, ctx)
}

// Also: a deep graph scrolls inside the flame panel, the panels below stay in reach, and
// its deepest frame can be scrolled to.
func TestDeepGraphScrolls(t *testing.T) {
	bctx := browser.Require(t)
	stack := []string{"main"}
	for i := range 120 {
		stack = append(stack, fmt.Sprintf("level_%03d", i))
	}
	s := serve(t, namedRun("deep", work{101, stack, 200}, work{101, []string{"main", "other"}, 100}), "")
	ctx := open(t, bctx, s, "")
	vh := eval[float64](t, ctx, `innerHeight`)
	fl := boxOf(t, ctx, "#flame")
	if fl.Height > 0.75*vh {
		t.Errorf("the graph takes %.0f px of a %.0f px window", fl.Height, vh)
	}
	if top := boxOf(t, ctx, "#calls-panel"); top.Top > 1.2*vh {
		t.Errorf("the callers panel starts at %.0f px, past the first screen and a fifth", top.Top)
	}
	// Scrolled to its bottom, the deepest frame is seen, inside the panel.
	eval[bool](t, ctx, `(() => { const f = document.querySelector("#flame"); f.scrollTop = f.scrollHeight; return true; })()`)
	until(t, ctx, "the deepest frame seen", func() (bool, string) {
		var deep browser.Frame
		for _, f := range graph(t, ctx) {
			if f.Func == "level_119" {
				deep = f
			}
		}
		if deep.Func == "" {
			return false, "level_119 not drawn"
		}
		why := eval[string](t, ctx, fmt.Sprintf(`(() => {
			document.querySelector("#flame").scrollIntoView({ block: "end" });
			const d = window.staxFrames().find((f) => f.func === "level_119");
			const f = document.querySelector("#flame").getBoundingClientRect(), x = d.x + d.w / 2 + 0*%f, y = d.y + d.h / 2 + 0*%f;
			if (y < f.top || y > f.bottom) return "at y " + y + ", outside the panel " + f.top + "-" + f.bottom;
			const at = document.elementFromPoint(x, y);
			return at && at.tagName === "CANVAS" ? "" : "covered by " + (at && at.tagName);
		})()`, deep.X+deep.W/2, deep.Y+deep.H/2))
		return why == "", why
	})
	noErrors(t, ctx)
}

// contrast is the WCAG contrast ratio of two colours.
func contrast(a, b []int) float64 {
	lum := func(c []int) float64 {
		l := 0.0
		for i, w := range []float64{0.2126, 0.7152, 0.0722} {
			v := float64(c[i]) / 255
			if v <= 0.04045 {
				v /= 12.92
			} else {
				v = math.Pow((v+0.055)/1.055, 2.4)
			}
			l += w * v
		}
		return l
	}
	x, y := lum(a), lum(b)
	if x < y {
		x, y = y, x
	}
	return (x + 0.05) / (y + 0.05)
}

// Also: the frames' labels read on every reason's colour, at 4.5:1 at least, in both
// themes: the frames painted, and every reason the legend may name.
func TestReasonColoursContrast(t *testing.T) {
	bctx := browser.Require(t)
	s := serve(t, offCPURun(), "")
	ctx := open(t, bctx, s, "&mode=wall")
	for _, scheme := range []string{"light", "dark"} {
		if err := browser.ColorScheme(ctx, scheme); err != nil {
			t.Fatal(err)
		}
		label := cssColour(t, ctx, "--frame-text")
		until(t, ctx, scheme+" frames painted", func() (bool, string) {
			for _, f := range graph(t, ctx) {
				if f.Func == "hot_leaf" {
					return near(pixel(t, ctx, f.X+f.W/2, f.Y+1.5), cssColour(t, ctx, "--r-on-cpu")), "not yet"
				}
			}
			return false, "no hot_leaf"
		})
		for _, f := range graph(t, ctx) {
			px := pixel(t, ctx, f.X+f.W/2, f.Y+1.5)
			if c := contrast(px, label); c < 4.5 {
				t.Errorf("%s: %s is painted %v, %.2f:1 against its label %v", scheme, f.Func, px, c, label)
			}
		}
		for _, r := range []string{"on-cpu", "runnable", "lock", "cond", "sem", "sleep", "io-read", "io-write", "poll", "net-connect", "net-accept", "child", "other"} {
			fill := cssColour(t, ctx, "--r-"+r)
			if c := contrast(fill, label); c < 4.5 {
				t.Errorf("%s: reason %s's colour %v is %.2f:1 against the labels %v", scheme, r, fill, c, label)
			}
		}
	}
	noErrors(t, ctx)
}

// Also: the strip's unknown samples come with the fix stax status gives, on screen.
func TestUnknownSamplesSayTheFix(t *testing.T) {
	bctx := browser.Require(t)
	s := serve(t, namedRun("unsym",
		work{101, []string{"main", "liblzma.so.5:liblzma.so.5+0x1234"}, 300},
		work{101, []string{"main", "hot_leaf"}, 100},
	), "")
	ctx := open(t, bctx, s, "")
	seen(t, ctx, "the fix", "#unknown-fix")
	if got, want := text(ctx, "#unknown-fix"), "liblzma.so.5: 300 samples in code without symbols; install its debug symbols (Debian: its -dbgsym package) or set DEBUGINFOD_URLS"; got != want {
		t.Errorf("the strip says %q, want %q", got, want)
	}
	noErrors(t, ctx)
}

// 4. A base that recorded no time off CPU cannot be diffed in the off-CPU mode: the graph
// keeps the reasons' colours, the note above it says why, and the box is not ticked.
func TestDiffOffCPUBaseWithoutTime(t *testing.T) {
	bctx := browser.Require(t)
	s, err := Listen(HandlerSource{server.Handler(server.Stored(offCPURun()), false), true}, Options{
		Base: &Base{Run: callersRun()},
		View: url.Values{"mode": {"off_cpu"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(s.Close)
	ctx := open(t, bctx, s, "")
	seen(t, ctx, "the note", "#flame-note")
	if got := text(ctx, "#flame-note"); !strings.HasPrefix(got, "not coloured by change: the base: ") {
		t.Errorf("the note says %q", got)
	}
	lock := eval[string](t, ctx, cssColourJS+`("--r-lock")`)
	until(t, ctx, "pthread_mutex_lock in the colour of lock", func() (bool, string) {
		got := eval[string](t, ctx, frameColourJS+`("pthread_mutex_lock")`)
		return got == lock, got
	})
	if eval[bool](t, ctx, `document.querySelector("#diff-colour").checked`) {
		t.Errorf("the box is ticked while the graph cannot be coloured by change")
	}
	noErrors(t, ctx)
}

// Frames narrower than a pixel are not drawn, and the note says how many and what share of
// the width they take; wide enough, they are drawn and the note says nothing of them.
func TestFlameSaysWhatIsNarrowerThanAPixel(t *testing.T) {
	bctx := browser.Require(t)
	ws := []work{{101, []string{"main", "big"}, 10000}}
	for i := range 5 {
		// 14 samples of 10,070: 0.139%, kept by the page's pruning at 0.1%; under a pixel
		// of a graph narrower than 720 px.
		ws = append(ws, work{101, []string{"main", fmt.Sprintf("narrow_%d", i), "leaf"}, 14})
	}
	s := serve(t, namedRun("narrow", ws...), "")
	ctx := open(t, bctx, s, "")
	drawnNarrow := func() int {
		return eval[int](t, ctx, `window.staxFrames().filter((f) => f.func.startsWith("narrow_")).length`)
	}
	if n := drawnNarrow(); n != 5 {
		t.Fatalf("at %v px, %d of the 5 narrow frames drawn", boxOf(t, ctx, "#flame canvas").Width, n)
	}
	if got := text(ctx, "#flame-note"); strings.Contains(got, "pixel") {
		t.Errorf("at %v px the note says %q", boxOf(t, ctx, "#flame canvas").Width, got)
	}
	setWidth(t, ctx, 500)
	want := "frames narrower than a pixel are not drawn: 5 with their callees, 0.7% of the width (zoom in to see them)"
	until(t, ctx, "the note on narrow frames", func() (bool, string) {
		got := text(ctx, "#flame-note")
		return got == want, got
	})
	seen(t, ctx, "the note", "#flame-note")
	if w := boxOf(t, ctx, "#flame canvas").Width; w*14/10070 >= 1 {
		t.Fatalf("the graph is %v px wide: the narrow frames are a pixel wide", w)
	}
	if n := drawnNarrow(); n != 0 {
		t.Errorf("%d narrow frames drawn under a pixel", n)
	}
	noErrors(t, ctx)
}
