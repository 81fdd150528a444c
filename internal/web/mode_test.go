package web

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil/browser"
	"github.com/stax-profiler/stax/internal/views"
)

// TestModeOffCPU: the page's mode shows the flame graph of time off CPU (from the URL, as
// the API weighs it, in milliseconds), and back to CPU samples from its selector.
func TestModeOffCPU(t *testing.T) {
	bctx := browser.Require(t)
	run := callersRun()
	frames := []agg.Frame{{Func: "main", Image: "app", Kind: agg.KindUser}, {Func: "path_b", Image: "app", Kind: agg.KindUser},
		{Func: "pthread_mutex_lock", Image: "libc.so.6", Kind: agg.KindUser}, {Func: "nanosleep", Image: "libc.so.6", Kind: agg.KindUser}}
	loc := func(f uint32) agg.Location { return agg.Location{Lines: []agg.Line{{Func: f}}} }
	off := &agg.Profile{Frames: frames, Locations: []agg.Location{loc(0), loc(1), loc(2), loc(3)},
		Stacks:  [][]uint32{{2, 1, 0}, {3, 0}},
		Entries: []agg.Entry{{Tid: 102, Pid: 100, Stack: 0, Count: 700e6, LeafFunc: -1}, {Tid: 101, Pid: 100, Stack: 1, Count: 300e6, LeafFunc: -1}},
		Threads: run.Profile.Threads}
	off.ExpandStacks()
	run.OffCPU = off
	s := serve(t, run, "")
	ctx := open(t, bctx, s, "&mode=off_cpu&sel=")
	want := flameOf(t, run, query.FlameOptions{OffCPU: true})
	until(t, ctx, "the off-CPU graph", func() (bool, string) {
		got := rootChildren(t, ctx)
		return got == childrenOf(want), got
	})
	until(t, ctx, "the time off CPU in milliseconds, with its runnable part", func() (bool, string) {
		info := text(ctx, "#frame-info")
		return strings.Contains(info, "all time off CPU · 1,000 ms, of which runnable 0 ms"), info
	})
	// The top table says the time, in the mode's unit, beside each share.
	until(t, ctx, "the lock's row in milliseconds", func() (bool, string) {
		row := topRow(ctx, "pthread_mutex_lock")
		return strings.HasPrefix(row, "70.00% 700 ms 70.00% 700 ms pthread_mutex_lock"), row
	})
	// Back to CPU samples.
	eval[bool](t, ctx, `(() => { const m = document.querySelector("#mode"); m.value = "cpu"; m.dispatchEvent(new Event("change")); return true; })()`)
	cpu := flameOf(t, run, query.FlameOptions{})
	until(t, ctx, "the CPU graph", func() (bool, string) {
		got := rootChildren(t, ctx)
		return got == childrenOf(cpu), got
	})
	until(t, ctx, "hot_leaf's row in samples", func() (bool, string) {
		row := topRow(ctx, "hot_leaf")
		return strings.HasPrefix(row, "80.00% 400 80.00% 400 hot_leaf"), row
	})
	if got := pageURL(t, ctx).Query().Get("mode"); got != "" {
		t.Errorf("the URL says mode=%q for CPU samples", got)
	}
	noErrors(t, ctx)
}

// offCPURun is callersRun with time off CPU: thread beta waits 700 ms for a lock under
// path_b, alpha sleeps 300 ms under main.
func offCPURun() *store.Run {
	run := callersRun()
	frames := []agg.Frame{{Func: "main", Image: "app", Kind: agg.KindUser}, {Func: "path_b", Image: "app", Kind: agg.KindUser},
		{Func: "pthread_mutex_lock", Image: "libc.so.6", Kind: agg.KindUser}, {Func: "nanosleep", Image: "libc.so.6", Kind: agg.KindUser}}
	loc := func(f uint32) agg.Location { return agg.Location{Lines: []agg.Line{{Func: f}}} }
	off := &agg.Profile{Frames: frames, Locations: []agg.Location{loc(0), loc(1), loc(2), loc(3)},
		Stacks:  [][]uint32{{2, 1, 0}, {3, 0}},
		Entries: []agg.Entry{{Tid: 102, Pid: 100, Stack: 0, Count: 700e6, LeafFunc: -1}, {Tid: 101, Pid: 100, Stack: 1, Count: 300e6, LeafFunc: -1}},
		Threads: run.Profile.Threads}
	off.ExpandStacks()
	run.OffCPU = off
	run.Meta.Freq = 1000
	return run
}

// frameColour is the colour painted inside the drawn frame of fn ("rgb(r,g,b)").
const frameColourJS = `((fn) => {
	const f = window.staxFrames().find((f) => f.func === fn && !f.ancestor);
	const c = document.querySelector("#flame canvas");
	if (!f || !c) return "";
	const box = c.getBoundingClientRect(), dpr = c.width / box.width;
	const d = c.getContext("2d").getImageData(Math.round((f.x - box.left + 2) * dpr), Math.round((f.y - box.top + 2) * dpr), 1, 1).data;
	return "rgb(" + d[0] + "," + d[1] + "," + d[2] + ")";
})`

// cssColour is the style sheet's colour of a variable, as the canvas paints it.
const cssColourJS = `((name) => {
	const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
	const g = document.createElement("canvas").getContext("2d", { willReadFrequently: true });
	g.fillStyle = v; g.fillRect(0, 0, 1, 1);
	const d = g.getImageData(0, 0, 1, 1).data;
	return "rgb(" + d[0] + "," + d[1] + "," + d[2] + ")";
})`

// TestModeReasonColours: in the off-CPU and wall modes each frame is painted in the
// colour of its dominant reason, and the legend names the reasons drawn; the CPU mode
// keeps the colours of the frames' kinds.
func TestModeReasonColours(t *testing.T) {
	bctx := browser.Require(t)
	s := serve(t, offCPURun(), "")
	ctx := open(t, bctx, s, "&mode=off_cpu&sel=")
	colour := func(fn string) string { return eval[string](t, ctx, frameColourJS+"("+strconv.Quote(fn)+")") }
	css := func(name string) string { return eval[string](t, ctx, cssColourJS+"("+strconv.Quote(name)+")") }
	for _, c := range []struct{ fn, reason string }{{"pthread_mutex_lock", "lock"}, {"path_b", "lock"}, {"nanosleep", "sleep"}} {
		want := css("--r-" + c.reason)
		until(t, ctx, c.fn+" in the colour of "+c.reason, func() (bool, string) {
			got := colour(c.fn)
			return got == want, got + ", want " + want
		})
	}
	until(t, ctx, "the legend of reasons", func() (bool, string) {
		got := eval[string](t, ctx, `[...document.querySelectorAll("#legend [data-reason]")].map((e) => e.dataset.reason).join(" ")`)
		return got == "lock sleep", got
	})

	// Wall: the CPU samples' frames are on-cpu.
	eval[bool](t, ctx, `(() => { const m = document.querySelector("#mode"); m.value = "wall"; m.dispatchEvent(new Event("change")); return true; })()`)
	wantOn := css("--r-on-cpu")
	until(t, ctx, "hot_leaf in the colour of on-cpu", func() (bool, string) {
		got := colour("hot_leaf")
		return got == wantOn, got + ", want " + wantOn
	})
	until(t, ctx, "the wall legend", func() (bool, string) {
		got := eval[string](t, ctx, `[...document.querySelectorAll("#legend [data-reason]")].map((e) => e.dataset.reason).join(" ")`)
		return got == "on-cpu lock sleep", got
	})

	// CPU: the kinds' colours, and their legend.
	eval[bool](t, ctx, `(() => { const m = document.querySelector("#mode"); m.value = "cpu"; m.dispatchEvent(new Event("change")); return true; })()`)
	wantUser := css("--k-user")
	until(t, ctx, "hot_leaf in the colour of native code", func() (bool, string) {
		got := colour("hot_leaf")
		return got == wantUser, got + ", want " + wantUser
	})
	if n := eval[int](t, ctx, `document.querySelectorAll("#legend [data-reason]").length`); n != 0 {
		t.Errorf("the CPU legend names %d reasons", n)
	}
	noErrors(t, ctx)
}

// wakersRun is offCPURun with wakers: alpha (101) woke beta (102) 3 times from
// release_lock under main, ending 700 ms of its waits; main (100) woke alpha once.
func wakersRun() *store.Run {
	run := offCPURun()
	p := &agg.Profile{
		Frames: []agg.Frame{{Func: agg.WakeeFunc(102), Image: agg.ImageSched, Kind: agg.KindUnknown}, {Func: "release_lock", Image: "app", Kind: agg.KindUser},
			{Func: "main", Image: "app", Kind: agg.KindUser}, {Func: agg.WakeeFunc(101), Image: agg.ImageSched, Kind: agg.KindUnknown}, {Func: "start_worker", Image: "app", Kind: agg.KindUser}},
		Locations: []agg.Location{{Lines: []agg.Line{{Func: 0}}}, {Addr: 0x401020, Lines: []agg.Line{{Func: 1}}}, {Addr: 0x401000, Lines: []agg.Line{{Func: 2}}},
			{Lines: []agg.Line{{Func: 3}}}, {Addr: 0x401040, Lines: []agg.Line{{Func: 4}}}},
		Stacks:  [][]uint32{{0, 1, 2}, {3, 4, 2}},
		Entries: []agg.Entry{{Tid: 101, Pid: 100, Stack: 0, Count: 700e6, LeafFunc: -1}, {Tid: 100, Pid: 100, Stack: 1, Count: 5e6, LeafFunc: -1}},
		Threads: run.Profile.Threads,
	}
	p.ExpandStacks()
	n := *p
	n.Entries = []agg.Entry{{Tid: 101, Pid: 100, Stack: 0, Count: 3, LeafFunc: -1}, {Tid: 100, Pid: 100, Stack: 1, Count: 1, LeafFunc: -1}}
	run.WakersNs, run.WakersN = p, &n
	return run
}

// TestWakersPanel: in the off-CPU mode the page shows who woke the selected thread (as
// stax wakers --tid does): the waker, its wakeups, the time they ended and its stack; all
// threads' wakers with no thread selected; nothing in the CPU mode.
func TestWakersPanel(t *testing.T) {
	bctx := browser.Require(t)
	s := serve(t, wakersRun(), "")
	ctx := open(t, bctx, s, "&mode=off_cpu&tid=102&sel=")
	rows := func() string {
		return eval[string](t, ctx, `document.querySelector("#wakers-panel").hidden ? "(hidden)" : [...document.querySelectorAll("#wakers tbody tr")].map((r) => r.innerText.replace(/\s+/g, " ").trim()).join(" | ")`)
	}
	until(t, ctx, "beta's wakers", func() (bool, string) {
		got := rows()
		return got == "beta 102 alpha 101 3 700 ms 3× 700 ms: release_lock ← main", got
	})
	// All threads.
	eval[bool](t, ctx, `(() => { const m = document.querySelector("#thread"); m.value = ""; m.dispatchEvent(new Event("change")); return true; })()`)
	until(t, ctx, "every thread's wakers", func() (bool, string) {
		got := rows()
		return got == "beta 102 alpha 101 3 700 ms 3× 700 ms: release_lock ← main | alpha 101 prog 100 1 5 ms 1× 5 ms: start_worker ← main", got
	})
	eval[bool](t, ctx, `(() => { const m = document.querySelector("#mode"); m.value = "cpu"; m.dispatchEvent(new Event("change")); return true; })()`)
	until(t, ctx, "no wakers in the CPU mode", func() (bool, string) {
		got := rows()
		return got == "(hidden)", got
	})
	noErrors(t, ctx)
}

// TestWakersPanelNone: a run without wakers says why in the panel.
func TestWakersPanelNone(t *testing.T) {
	bctx := browser.Require(t)
	s := serve(t, offCPURun(), "")
	ctx := open(t, bctx, s, "&mode=off_cpu&sel=")
	until(t, ctx, "the panel says there are no wakers", func() (bool, string) {
		got := text(ctx, "#wakers tbody")
		return strings.Contains(got, "has no wakers"), got
	})
	noErrors(t, ctx)
}

// TestTimelineStates: in the off-CPU and wall modes the timeline shows each thread's
// state in each bucket (the one with the most of its time, as stax timeline --states
// counts it): running, or blocked by reason; the CPU mode shows the samples alone.
func TestTimelineStates(t *testing.T) {
	bctx := browser.Require(t)
	run := offCPURun()
	// beta (102) waits for the lock 0-100 ms while alpha runs; alpha sleeps 150-450 ms
	// while beta runs (the samples: alpha 0-100 and 460-500 ms, beta 100-460 ms).
	run.OffCPUIntervals = []agg.Interval{{Tid: 102, Stack: 0, Start: 1.0e9, End: 1.1e9}, {Tid: 101, Stack: 1, Start: 1.15e9, End: 1.45e9}}
	s := serve(t, run, "")
	res, err := query.ThreadStates(run, query.TimelineOptions{Buckets: 200, MaxThreads: 16})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	seen := map[string]bool{}
	for _, th := range res.Threads {
		for i, b := range th.Buckets {
			keys := slices.Sorted(maps.Keys(b))
			top, most := "", uint64(0)
			for _, k := range keys {
				if b[k] > most {
					top, most = k, b[k]
				}
			}
			if top != "" {
				want = append(want, fmt.Sprintf("%d:%d:%s", th.Tid, i, top))
				seen[top] = true
			}
		}
	}
	if !seen["running"] || !seen[views.ReasonLock] || !seen[views.ReasonSleep] {
		t.Fatalf("the run's states are not running, lock and sleep: %v", seen)
	}
	sort.Strings(want)
	states := func(ctx context.Context) string {
		return eval[string](t, ctx, `[...document.querySelectorAll("#timeline rect.state")].map((r) => r.dataset.tid + ":" + r.dataset.i + ":" + r.dataset.state).sort().join(" ")`)
	}
	ctx := open(t, bctx, s, "&mode=off_cpu&sel=")
	until(t, ctx, "the threads' states", func() (bool, string) {
		got := states(ctx)
		return got == strings.Join(want, " "), got
	})
	// Each in its reason's colour.
	if got := eval[string](t, ctx, `(document.querySelector('#timeline rect.state[data-state="lock"]') || {getAttribute: () => ""}).getAttribute("fill")`); !strings.Contains(got, "--r-lock") {
		t.Errorf("a lock bucket is filled with %q", got)
	}
	eval[bool](t, ctx, `(() => { const m = document.querySelector("#mode"); m.value = "cpu"; m.dispatchEvent(new Event("change")); return true; })()`)
	until(t, ctx, "no states in the CPU mode", func() (bool, string) {
		got := states(ctx)
		return got == "", got
	})
	eval[bool](t, ctx, `(() => { const m = document.querySelector("#mode"); m.value = "wall"; m.dispatchEvent(new Event("change")); return true; })()`)
	until(t, ctx, "the states again in the wall mode", func() (bool, string) {
		got := states(ctx)
		return got == strings.Join(want, " "), got
	})
	noErrors(t, ctx)
}

// TestCallersPanelOffCPU: in the off-CPU mode the callers and callees of the selected
// function weigh its time off CPU, in milliseconds, as the graph does (the panel once
// showed its CPU samples: the socket API dropped the mode for callers).
func TestCallersPanelOffCPU(t *testing.T) {
	bctx := browser.Require(t)
	s := serve(t, offCPURun(), "")
	ctx := open(t, bctx, s, "&mode=off_cpu&sel=")
	if err := browser.ClickFrame(ctx, func(f browser.Frame) bool { return f.Func == "path_b" }); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "path_b's time off CPU in the panel's title", func() (bool, string) {
		got := text(ctx, "#calls-panel")
		return strings.Contains(got, "Callers and callees of path_b") && strings.Contains(got, "700 ms, self 0 ms"), got
	})
	idle(t, ctx)
	// path_b: 700 ms off CPU, all under main, all in pthread_mutex_lock.
	callers, callees := text(ctx, "#callers"), text(ctx, "#callees")
	for _, c := range []struct{ got, want string }{
		{callers, "700 ms\t100.0%\tmain"},
		{callees, "700 ms\t100.0%\tpthread_mutex_lock"},
	} {
		if !strings.Contains(c.got, c.want) {
			t.Errorf("the panel lacks %q:\n%s", c.want, c.got)
		}
	}
	if strings.Contains(callees, "hot_leaf") {
		t.Errorf("the off-CPU panel lists a CPU callee:\n%s", callees)
	}
	noErrors(t, ctx)
}

// topRow is the text of the top table's row for fn as shown (innerText: what is visible),
// its spaces, tabs and line breaks each one space.
func topRow(ctx context.Context, fn string) string {
	js := fmt.Sprintf(`[...document.querySelectorAll("#top tbody tr")].filter((tr) => tr.querySelector('td[title=%q]')).map((tr) => tr.innerText)[0] || ""`, fn)
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return strings.Join(strings.Fields(s), " ")
}
