package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// TestDwarfUnwindingFindsCallersWithoutFramePointers records a program built
// -O2 -fomit-frame-pointer whose time goes to a qsort comparator, through libc (no frame
// pointers either), with --call-graph dwarf: stacks run from _start through main and qsort
// to cmp, and stax status counts how they ended.
func TestDwarfUnwindingFindsCallersWithoutFramePointers(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/qsortfp.c")
	prog := testutil.CC(t, t.TempDir(), "qsortfp", "gcc", "-O2", "-fomit-frame-pointer", src)
	if out, errOut, code := e.run("record", "-q", "--call-graph", "dwarf", "--", prog, "500"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var fl api.Flame
	e.mustJSON(&fl, "flame", "-d", "60", "--threshold-pct", "0")
	// sort_round calls qsort last, so -O2 makes that a tail call: main -> qsort_r, as
	// perf --call-graph=dwarf shows it too.
	if !hasPath(fl.Root, []string{"main", "qsort_r"}) {
		t.Errorf("no main -> qsort_r path")
	}
	var st api.Status
	e.mustJSON(&st, "status")
	ends := st.Meta.StackEnds
	var total uint64
	for _, n := range ends {
		total += n
	}
	t.Logf("%d samples, stacks ended: %v", st.Meta.Samples, ends)
	if st.Meta.CallGraph != "dwarf" || total == 0 || ends["complete"]*100 < total*95 {
		t.Errorf("call graph %q, stack ends %v: want dwarf with at least 95%% complete", st.Meta.CallGraph, ends)
	}
	if st.Meta.Lost != 0 {
		t.Errorf("%d samples lost with 16 KiB stack copies", st.Meta.Lost)
	}
	// The comparator's samples reach _start through main.
	var cmpSamples, rooted uint64
	var walk func(n *agg.FlameNode, path []string)
	walk = func(n *agg.FlameNode, path []string) {
		path = append(path, n.Func)
		if n.Func == "cmp" {
			cmpSamples += n.Total
			joined := strings.Join(path, ";")
			if strings.Contains(joined, "_start") && strings.Contains(joined, ";main;") {
				rooted += n.Total
			}
			return
		}
		for _, c := range n.Children {
			walk(c, path)
		}
	}
	for _, c := range fl.Root.Children {
		walk(c, nil)
	}
	t.Logf("cmp: %d samples, %d of them under _start -> main", cmpSamples, rooted)
	if cmpSamples == 0 || rooted*100 < cmpSamples*95 {
		t.Errorf("cmp has %d samples, %d under _start -> main: want at least 95%%", cmpSamples, rooted)
	}
}

// A recursion deeper than the kernel's callchain limit (fp) or than the stack copy (dwarf)
// ends in a [truncated] root, counted as such, never in a wrong root.
func TestDeepStacksAreMarkedTruncated(t *testing.T) {
	testutil.RequirePerf(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/deep.c")
	prog := testutil.CC(t, t.TempDir(), "deep", "gcc", append(cflags, src)...)
	// dwarf stops at the end of the copy or at its frame limit, whichever comes first.
	for _, mode := range []struct{ graph string }{{"fp"}, {"dwarf"}} {
		t.Run(mode.graph, func(t *testing.T) {
			e := newEnv(t)
			args := []string{"record", "-q", "--call-graph", mode.graph}
			if mode.graph == "dwarf" {
				args = append(args, "--stack-size", "8192")
			}
			if out, errOut, code := e.run(append(args, "--", prog, "1000", "400")...); code != 0 {
				t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
			}
			var st api.Status
			e.mustJSON(&st, "status")
			// The samples in the recursion (not those of the program's start, whose loader
			// code has no frame pointers) must all end in [truncated].
			var top api.Top
			e.mustJSON(&top, "top", "-n", "1000")
			_, deep, _ := row(top, "recurse")
			_, truncated, _ := row(top, "[truncated]")
			if deep < 200 || float64(truncated) < 0.99*float64(deep) {
				t.Errorf("%d of %d samples in the recursion end in [truncated]", truncated, deep)
			}
			if n := st.Meta.StackEnds["truncated"] + st.Meta.StackEnds["max_depth"]; float64(n) < 0.99*float64(deep) {
				t.Errorf("stack ends %v: want truncated or max_depth for nearly all %d samples in the recursion", st.Meta.StackEnds, deep)
			}
			if t.Failed() {
				roots, _, _ := e.run("flame", "-d", "2", "--threshold-pct", "0.1")
				t.Logf("%s\nroots:\n%s", e.diagnosis(), roots)
			}
		})
	}
}

// A JIT leaf with no prologue (it never saves rbp): with --call-graph dwarf its real caller
// is found, from the .eh_frame the JIT announced or, without one, from the return address
// at [rsp]; with frame pointers the stack skips that caller but holds no invented frame.
func TestFramelessJITLeafHasItsCaller(t *testing.T) {
	testutil.RequirePerf(t)
	prog := buildCJIT(t)
	for _, tc := range []struct{ mode, graph, path string }{
		{"unwind", "dwarf", "_start main run_frameless run frameless_delta"},
		{"frameless", "dwarf", "_start main run_frameless run frameless_delta"},
		{"frameless", "fp", "main run_frameless frameless_delta"},
	} {
		t.Run(tc.mode+"-"+tc.graph, func(t *testing.T) {
			e := newEnv(t)
			if out, errOut, code := e.run("record", "-q", "--call-graph", tc.graph, "--", prog, tc.mode, "300"); code != 0 {
				t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
			}
			var fl api.Flame
			e.mustJSON(&fl, "flame", "-d", "0", "--threshold-pct", "0")
			want := strings.Fields(tc.path)
			var on uint64
			var walk func(n *agg.FlameNode, i int)
			walk = func(n *agg.FlameNode, i int) {
				if i < len(want) && n.Func == want[i] {
					i++
					if i == len(want) {
						on += n.Total
						return
					}
				}
				for _, c := range n.Children {
					walk(c, i)
				}
			}
			walk(fl.Root, 0)
			if fl.Samples < 200 || float64(on) < 0.95*float64(fl.Samples) {
				text, _, _ := e.run("flame", "-d", "0")
				t.Errorf("%d of %d samples under %s\n%s", on, fl.Samples, tc.path, text)
			}
			var top api.Top
			e.mustJSON(&top, "top", "-n", "1000")
			for _, r := range top.Rows {
				if strings.HasPrefix(r.Func, "[unknown]") && r.Image != "[vdso]" { // vdso frames are named elsewhere
					t.Errorf("an unknown frame: %+v", r)
				}
			}
		})
	}
}

// C++ with exceptions thrown and caught at the bottom of a recursion: at depth 200 the
// stacks reach _start; at depth 500 the 16 KiB stack copy ends first, and the stacks end in
// [truncated], counted as such. Neither has a garbage frame.
func TestCxxExceptionsAndDeepRecursion(t *testing.T) {
	testutil.RequirePerf(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/exc.cc")
	prog := testutil.CC(t, t.TempDir(), "exc", "g++", "-O2", "-g", src)
	for _, tc := range []struct {
		depth, root, end string
	}{{"200", "_start", "complete"}, {"500", "[truncated]", "truncated"}} {
		t.Run(tc.depth, func(t *testing.T) {
			e := newEnv(t)
			if out, errOut, code := e.run("record", "-q", "--call-graph", "dwarf", "--", prog, tc.depth, "400"); code != 0 {
				t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
			}
			var st api.Status
			e.mustJSON(&st, "status")
			var fl api.Flame
			e.mustJSON(&fl, "flame", "-d", "1", "--threshold-pct", "0")
			var rooted uint64
			for _, n := range fl.Root.Children {
				if n.Func == tc.root {
					rooted = n.Total
				}
			}
			if fl.Samples < 300 || float64(rooted) < 0.99*float64(fl.Samples) {
				t.Errorf("%d of %d samples rooted at %s: %+v", rooted, fl.Samples, tc.root, fl.Root.Children)
			}
			if n := st.Meta.StackEnds[tc.end]; float64(n) < 0.99*float64(fl.Samples) {
				t.Errorf("stack ends %v: want %s for nearly all %d samples", st.Meta.StackEnds, tc.end, fl.Samples)
			}
		})
	}
}

// A static and a dynamic build of the same -O2 program without frame pointers: with the
// default (dwarf) unwinding nearly every stack ends at _start, none in garbage, and no
// frame is unknown.
func TestStaticAndDynamicStacksEndAtStart(t *testing.T) {
	testutil.RequirePerf(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/phases.c")
	inc := "-I" + filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata")
	for _, link := range []string{"static", "dynamic"} {
		t.Run(link, func(t *testing.T) {
			args := []string{"-O2", "-g", "-fomit-frame-pointer", inc, src}
			if link == "static" {
				args = append([]string{"-static"}, args...)
			}
			prog := testutil.CC(t, t.TempDir(), "phases", "gcc", args...)
			e := newEnv(t)
			if out, errOut, code := e.run("record", "-q", "--", prog, "200", "1"); code != 0 {
				t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
			}
			var st api.Status
			e.mustJSON(&st, "status")
			var fl api.Flame
			e.mustJSON(&fl, "flame", "-d", "1", "--threshold-pct", "0")
			var atStart uint64
			for _, n := range fl.Root.Children {
				if n.Func == "_start" {
					atStart = n.Total
				}
			}
			if fl.Samples < 300 || float64(atStart) < 0.99*float64(fl.Samples) {
				t.Errorf("%d of %d stacks end at _start: %+v", atStart, fl.Samples, fl.Root.Children)
			}
			if st.Meta.StackEnds["garbage"] > 0 {
				t.Errorf("stack ends %v: some in garbage", st.Meta.StackEnds)
			}
			var top api.Top
			e.mustJSON(&top, "top", "-n", "1000")
			for _, r := range top.Rows {
				if strings.HasPrefix(r.Func, "[unknown]") {
					t.Errorf("an unknown frame: %+v", r)
				}
			}
		})
	}
}
