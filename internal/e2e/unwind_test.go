package e2e

import (
	"debug/elf"
	"io"
	"path/filepath"
	"strings"
	"testing"

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
	// A frameless program's samples carry no kernel walk of frame pointers it has not got.
	if !st.Meta.NoUserFPChain {
		t.Errorf("a program built without frame pointers was recorded with the kernel's walk of them")
	}
	if st.Meta.Lost != 0 {
		t.Errorf("%d samples lost with 16 KiB stack copies", st.Meta.Lost)
	}
	// The comparator's samples reach _start through main.
	var cmpSamples, rooted uint64
	var walk func(n *api.FlameNode, path []string)
	walk = func(n *api.FlameNode, path []string) {
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
			if st.Meta.NoUserFPChain {
				t.Errorf("a program built with frame pointers was recorded without the kernel's walk of them")
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
// The announced .eh_frame applies wherever the code lives: in anonymous memory, a memfd,
// /dev/zero or System V shared memory (no regular file describes any of them).
func TestFramelessJITLeafHasItsCaller(t *testing.T) {
	testutil.RequirePerf(t)
	prog := buildCJIT(t)
	for _, tc := range []struct{ mode, graph, path string }{
		{"unwind", "dwarf", "_start main run_frameless run frameless_delta"},
		{"unwind-memfd", "dwarf", "_start main run_frameless run frameless_delta"},
		{"unwind-devzero", "dwarf", "_start main run_frameless run frameless_delta"},
		{"unwind-shm", "dwarf", "_start main run_frameless run frameless_delta"},
		{"frameless", "dwarf", "_start main run_frameless run frameless_delta"},
		{"frameless", "fp", "main run_frameless frameless_delta"},
	} {
		t.Run(tc.mode+"-"+tc.graph, func(t *testing.T) {
			e := newEnv(t)
			if out, errOut, code := e.run("record", "-q", "--call-graph", tc.graph, "--", prog, tc.mode, "300"); code != 0 {
				t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
			}
			defer removeJITFiles(t, e)
			var fl api.Flame
			e.mustJSON(&fl, "flame", "-d", "0", "--threshold-pct", "0")
			want := strings.Fields(tc.path)
			leaf := want[len(want)-1]
			// The claim is about the JIT code's samples: where they lie. The program's other
			// samples (its clock reads, start and exit) grow in share on a busy machine,
			// where the clock event's samples come when the program is scheduled back in.
			var on, in uint64
			var walk func(n *api.FlameNode, i int)
			walk = func(n *api.FlameNode, i int) {
				if n.Func == leaf {
					in += n.Total
				}
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
			if fl.Samples < 200 || in*2 < fl.Samples || float64(on) < 0.95*float64(in) {
				text, _, _ := e.run("flame", "-d", "0")
				t.Errorf("%d of %d samples in %s, %d of them under %s\n%s", in, fl.Samples, leaf, on, tc.path, text)
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
// [truncated], counted as such. The copy is set, not the default (8 KiB): depth 200 needs
// about 8 KiB, and the exception's unwinding on top of it sometimes more. The claim is about the recursion's samples: those of the
// program's start and exit (the dynamic loader's relocations, libraries' constructors and
// destructors) have shallow stacks, complete or not, and grow in share on a busy machine.
func TestCxxExceptionsAndDeepRecursion(t *testing.T) {
	testutil.RequirePerf(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/exc.cc")
	prog := testutil.CC(t, t.TempDir(), "exc", "g++", "-O2", "-g", src)
	const level = "level(int, double)"
	for _, tc := range []struct {
		depth, root, end string
	}{{"200", "_start", "complete"}, {"500", "[truncated]", "truncated"}} {
		t.Run(tc.depth, func(t *testing.T) {
			e := newEnv(t)
			if out, errOut, code := e.run("record", "-q", "--call-graph", "dwarf", "--stack-size", "16384", "--", prog, tc.depth, "400"); code != 0 {
				t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
			}
			var st api.Status
			e.mustJSON(&st, "status")
			var fl api.Flame
			e.mustJSON(&fl, "flame", "-d", "0", "--threshold-pct", "0")
			// in: the samples in the recursion (under its outermost level frame); rooted:
			// those of them whose stack begins at tc.root (and, complete, runs through main).
			var in, rooted uint64
			var walk func(n *api.FlameNode, path []string)
			walk = func(n *api.FlameNode, path []string) {
				if n.Func == level {
					in += n.Total
					if len(path) > 0 && path[0] == tc.root && (tc.root != "_start" || path[len(path)-1] == "main") {
						rooted += n.Total
					}
					return
				}
				path = append(path, n.Func)
				for _, c := range n.Children {
					walk(c, path)
				}
			}
			for _, c := range fl.Root.Children {
				walk(c, nil)
			}
			t.Logf("%d samples, %d in the recursion, %d of them rooted at %s; stack ends %v", fl.Samples, in, rooted, tc.root, st.Meta.StackEnds)
			if in < 300 || float64(rooted) < 0.99*float64(in) {
				roots, _, _ := e.run("flame", "-d", "1", "--threshold-pct", "0")
				t.Errorf("%d samples in the recursion, %d of them rooted at %s\n%s", in, rooted, tc.root, roots)
			}
			if n := st.Meta.StackEnds[tc.end]; float64(n) < 0.99*float64(in) {
				t.Errorf("stack ends %v: want %s for nearly all %d samples in the recursion", st.Meta.StackEnds, tc.end, in)
			}
		})
	}
}

// A static and a dynamic build of the same -O2 program without frame pointers: with the
// default (dwarf) unwinding nearly every stack is complete, at _start, none in garbage,
// and no frame is unknown. The dynamic build starts in its loader (relocations, the
// libraries' constructors): those stacks end at the loader's entry point, whose code has
// no function symbol (its _start is a label) and is known by its image.
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
			loader := interpreter(t, prog)
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
				if n.Func == "_start" || (loader != "" && n.Image == loader) {
					atStart += n.Total
				}
			}
			t.Logf("%d samples, %d of them at _start or in %q; stack ends %v", fl.Samples, atStart, loader, st.Meta.StackEnds)
			if fl.Samples < 300 || float64(atStart) < 0.99*float64(fl.Samples) {
				roots, _, _ := e.run("flame", "-d", "1", "--threshold-pct", "0")
				t.Errorf("%d of %d stacks end at _start or in %q\n%s", atStart, fl.Samples, loader, roots)
			}
			if float64(st.Meta.StackEnds["complete"]) < 0.99*float64(fl.Samples) || st.Meta.StackEnds["garbage"] > 0 {
				t.Errorf("stack ends %v: want nearly all %d complete, none in garbage", st.Meta.StackEnds, fl.Samples)
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

// Samples taken in the kernel while exec replaces the program (here a launched shell
// execing the command) carry the old program's user registers, which lie in no mapping of
// the new one:
// they keep their kernel frames, lose their user frames, and count as stacks ended
// "unmapped"; no stack has an [unknown] frame from the old program. 150,000 arguments
// keep the kernel busy after the old program is gone (it copies them onto the new stack)
// for long enough to be sampled. Off-CPU recording is off: the stacks of switches and
// wakeups during exec end unmapped too, and would be counted with the samples' ends.
func TestExecSamplesHaveNoFramesOfTheOldProgram(t *testing.T) {
	testutil.RequirePerf(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/spin.c")
	inc := "-I" + filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata")
	prog := testutil.CC(t, t.TempDir(), "spin", "gcc", append(cflags, inc, src, "-lpthread")...)
	args := []string{"sh", "-c", `exec "$@"`, "sh", prog, "1", "100"}
	for range 150000 {
		args = append(args, "x")
	}
	for _, graph := range []string{"fp", "dwarf"} {
		t.Run(graph, func(t *testing.T) {
			e := newEnv(t)
			if out, errOut, code := e.run(append([]string{"record", "-q", "--no-off-cpu", "-F", "4000", "--call-graph", graph, "--"}, args...)...); code != 0 {
				t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
			}
			var st api.Status
			e.mustJSON(&st, "status")
			var top api.Top
			e.mustJSON(&top, "top", "-n", "1000")
			for _, r := range top.Rows {
				if strings.HasPrefix(r.Func, "[unknown]") {
					t.Errorf("an unknown frame: %+v", r)
				}
			}
			var execve uint64 // samples under the kernel's execve (its name varies by version)
			for _, r := range top.Rows {
				if strings.Contains(r.Func, "execve") && r.Image == "[kernel.kallsyms]" {
					execve = max(execve, r.Total)
				}
			}
			t.Logf("%d samples; stack ends %v; %d samples in execve", top.Samples, st.Meta.StackEnds, execve)
			if n := st.Meta.StackEnds["unmapped"]; n == 0 || n > execve {
				t.Errorf("%d stacks ended unmapped, %d samples in execve: want at least one, all of them in exec", n, execve)
			}
		})
	}
}

// A frame whose saved rbp points at itself (fploop.c; a JIT's deoptimisation entry can
// leave one) makes the kernel's frame-pointer chain repeat its caller to the depth limit,
// and the CFI walk reach the same CFA twice. With --call-graph dwarf the stack ends there,
// counted as a loop, with the frames before it: never a frame repeated.
func TestDwarfUnwindingStopsAtALoop(t *testing.T) {
	testutil.RequirePerf(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/fploop.c")
	inc := "-I" + filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata")
	prog := testutil.CC(t, t.TempDir(), "fploop", "gcc", "-O1", "-g", "-fno-omit-frame-pointer", inc, src)
	e := newEnv(t)
	if out, errOut, code := e.run("record", "-q", "--call-graph", "dwarf", "--", prog, "300"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var fl api.Flame
	e.mustJSON(&fl, "flame", "-d", "0", "--threshold-pct", "0")
	var in, under, repeated uint64
	var repeatedAt []string
	var walk func(n *api.FlameNode, path []string)
	walk = func(n *api.FlameNode, path []string) {
		// The loop's frames must not repeat. Others may: the loader's call_init has an
		// inlined copy of itself (its debug info says so), under which its start-up runs.
		if len(path) > 0 && path[len(path)-1] == n.Func && (n.Func == "deopt_caller" || n.Func == "selfloop") {
			repeated += n.Total
			repeatedAt = append(repeatedAt, strings.Join(append(path, n.Func), ";"))
			return
		}
		path = append(path, n.Func)
		if n.Func == "selfloop" {
			in += n.Total
			if len(path) >= 2 && path[len(path)-2] == "deopt_caller" {
				under += n.Total
			}
		}
		for _, c := range n.Children {
			walk(c, path)
		}
	}
	walk(fl.Root, nil)
	var st api.Status
	e.mustJSON(&st, "status")
	t.Logf("%d samples, %d in selfloop, %d of them under deopt_caller; stack ends %v", fl.Samples, in, under, st.Meta.StackEnds)
	if repeated > 0 {
		text, _, _ := e.run("flame", "-d", "6")
		t.Errorf("%d samples have a frame repeated, at %q\n%s", repeated, repeatedAt, text)
	}
	if fl.Samples < 200 || in*2 < fl.Samples || float64(under) < 0.95*float64(in) {
		t.Errorf("%d of %d samples in selfloop, %d of them under deopt_caller", in, fl.Samples, under)
	}
	if n := st.Meta.StackEnds["loop"]; float64(n) < 0.95*float64(in) {
		t.Errorf("stack ends %v: want a loop for nearly all %d samples in selfloop", st.Meta.StackEnds, in)
	}
}

// interpreter is the base name of the program's dynamic loader (PT_INTERP), "" for a
// static program.
func interpreter(t *testing.T, prog string) string {
	f, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, err := io.ReadAll(p.Open())
			if err != nil {
				t.Fatalf("read the interpreter of %s: %v", prog, err)
			}
			return filepath.Base(strings.TrimRight(string(b), "\x00"))
		}
	}
	return ""
}
