package web

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil/browser"
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
	until(t, ctx, "the time off CPU in milliseconds", func() (bool, string) {
		info := text(ctx, "#frame-info")
		return strings.Contains(info, "all time off CPU · 1,000 ms"), info
	})
	// Back to CPU samples.
	eval[bool](t, ctx, `(() => { const m = document.querySelector("#mode"); m.value = "cpu"; m.dispatchEvent(new Event("change")); return true; })()`)
	cpu := flameOf(t, run, query.FlameOptions{})
	until(t, ctx, "the CPU graph", func() (bool, string) {
		got := rootChildren(t, ctx)
		return got == childrenOf(cpu), got
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
