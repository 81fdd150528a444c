package web

import (
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/query"
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
