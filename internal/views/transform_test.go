package views

import (
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
)

// Frame ids of transformProfile.
const (
	tMain = iota
	tA
	tB
	tC
	tRec
	tMalloc
	tIntMalloc
	tSysmalloc
	tCb
)

// transformProfile: 108 samples, leaf first below.
//
//	0: main>a>b 50 (tid 1)
//	1: main>a>c 15 (tid 1)
//	2: main>rec>rec>rec 10 (tid 1)
//	3: main>a 15 (tid 2)
//	4: main>b>malloc>_int_malloc>sysmalloc 8 (tid 1; the last three in libc)
//	5: main>a>malloc>cb>_int_malloc 4 (tid 1; libc calls back into the program)
//	6: main>b>a>b>c 6 (tid 2; b recurses through a)
func transformProfile() *agg.Profile {
	app := func(n string) agg.Frame { return agg.Frame{Func: n, Image: "/bin/app", Kind: agg.KindUser} }
	libc := func(n string) agg.Frame { return agg.Frame{Func: n, Image: "/usr/lib/libc.so.6", Kind: agg.KindUser} }
	return located(&agg.Profile{
		Frames: []agg.Frame{app("main"), app("a"), app("b"), app("c"), app("rec"),
			libc("malloc"), libc("_int_malloc"), libc("sysmalloc"), app("cb")},
		Stacks: [][]uint32{
			{tB, tA, tMain},
			{tC, tA, tMain},
			{tRec, tRec, tRec, tMain},
			{tA, tMain},
			{tSysmalloc, tIntMalloc, tMalloc, tB, tMain},
			{tIntMalloc, tCb, tMalloc, tA, tMain},
			{tC, tB, tA, tB, tMain},
		},
		Entries: []agg.Entry{
			{Tid: 1, Pid: 1, Stack: 0, Count: 50, Leaf: 0x10, LeafFunc: tB},
			{Tid: 1, Pid: 1, Stack: 1, Count: 15, Leaf: 0x20, LeafFunc: tC},
			{Tid: 2, Pid: 1, Stack: 3, Count: 15, Leaf: 0x30, LeafFunc: tA},
			{Tid: 1, Pid: 1, Stack: 2, Count: 10, Leaf: 0x40, LeafFunc: tRec},
			{Tid: 1, Pid: 1, Stack: 4, Count: 8, Leaf: 0x50, LeafFunc: tSysmalloc},
			{Tid: 2, Pid: 1, Stack: 6, Count: 6, Leaf: 0x20, LeafFunc: tC},
			{Tid: 1, Pid: 1, Stack: 5, Count: 4, Leaf: 0x60, LeafFunc: tIntMalloc},
		},
		Threads: []agg.ThreadInfo{{Tid: 1, Pid: 1, Name: "main"}, {Tid: 2, Pid: 1, Name: "worker"}},
	})
}

// folded lists a profile's samples as "tid:root;...;leaf count" lines, sorted, with the
// counts of equal lines added.
func folded(p *agg.Profile) []string {
	sum := map[string]uint64{}
	for _, e := range p.Entries {
		st := p.AppendFrames(nil, e.Stack)
		names := make([]string, len(st))
		for i, id := range st {
			names[len(st)-1-i] = p.Frames[id].Func
		}
		sum[itoa(uint64(e.Tid))+":"+strings.Join(names, ";")] += e.Count
	}
	var out []string
	for k, n := range sum {
		out = append(out, k+" "+itoa(n))
	}
	sort.Strings(out)
	return out
}

func TestTransform(t *testing.T) {
	re := regexp.MustCompile
	tests := []struct {
		name string
		t    Transform
		want []string
	}{
		{
			name: "ignore drops stacks through a match",
			t:    Transform{Ignore: re("^rec$")},
			want: []string{"1:main;a;b 50", "1:main;a;c 15", "1:main;a;malloc;cb;_int_malloc 4", "1:main;b;malloc;_int_malloc;sysmalloc 8",
				"2:main;a 15", "2:main;b;a;b;c 6"},
		},
		{
			name: "ignore matches anywhere in the name",
			t:    Transform{Ignore: re("malloc")},
			want: []string{"1:main;a;b 50", "1:main;a;c 15", "1:main;rec;rec;rec 10", "2:main;a 15", "2:main;b;a;b;c 6"},
		},
		{
			name: "focus keeps stacks through a match, rooted at the outermost",
			t:    Transform{Focus: re("^b$")},
			want: []string{"1:b 50", "1:b;malloc;_int_malloc;sysmalloc 8", "2:b;a;b;c 6"},
		},
		{
			name: "focus on a root keeps whole stacks",
			t:    Transform{Focus: re("^main$")},
			want: []string{"1:main;a;b 50", "1:main;a;c 15", "1:main;a;malloc;cb;_int_malloc 4", "1:main;b;malloc;_int_malloc;sysmalloc 8",
				"1:main;rec;rec;rec 10", "2:main;a 15", "2:main;b;a;b;c 6"},
		},
		{
			name: "hide merges callees into the caller, and keeps every sample",
			t:    Transform{Hide: re("^a$")},
			want: []string{"1:main;b 50", "1:main;b;malloc;_int_malloc;sysmalloc 8", "1:main;c 15", "1:main;malloc;cb;_int_malloc 4",
				"1:main;rec;rec;rec 10", "2:main 15", "2:main;b;b;c 6"},
		},
		{
			name: "hiding every frame keeps the samples, stackless",
			t:    Transform{Hide: re(".")},
			want: []string{"1: 87", "2: 21"},
		},
		{
			name: "collapse an image: one frame per entry, named by the entry function",
			t:    Transform{CollapseImages: []string{"libc.so.6"}},
			want: []string{"1:main;a;b 50", "1:main;a;c 15", "1:main;a;malloc;cb;_int_malloc 4", "1:main;b;malloc 8",
				"1:main;rec;rec;rec 10", "2:main;a 15", "2:main;b;a;b;c 6"},
		},
		{
			name: "collapse by full path",
			t:    Transform{CollapseImages: []string{"/usr/lib/libc.so.6"}},
			want: []string{"1:main;a;b 50", "1:main;a;c 15", "1:main;a;malloc;cb;_int_malloc 4", "1:main;b;malloc 8",
				"1:main;rec;rec;rec 10", "2:main;a 15", "2:main;b;a;b;c 6"},
		},
		{
			name: "fold recursion, direct and through other functions",
			t:    Transform{FoldRecursion: true},
			want: []string{"1:main;a;b 50", "1:main;a;c 15", "1:main;a;malloc;cb;_int_malloc 4", "1:main;b;malloc;_int_malloc;sysmalloc 8",
				"1:main;rec 10", "2:main;a 15", "2:main;b;c 6"},
		},
		{
			name: "every step: ignore, focus, hide, collapse, fold",
			t: Transform{Ignore: re("sysmalloc"), Focus: re("^(a|b)$"), Hide: re("^cb$"), CollapseImages: []string{"libc.so.6"},
				FoldRecursion: true},
			// main>a>malloc>cb>_int_malloc: cb hidden, so the libc frames become one run.
			want: []string{"1:a;b 50", "1:a;c 15", "1:a;malloc 4", "2:a 15", "2:b;c 6"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := transformProfile()
			before := folded(p)
			q := Transformed(p, &tc.t)
			if got := folded(q); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			if got := folded(p); !reflect.DeepEqual(got, before) {
				t.Errorf("the profile transformed changed: %q", got)
			}
			for i := 1; i < len(q.Entries); i++ {
				if q.Entries[i].Count > q.Entries[i-1].Count {
					t.Errorf("entries not ordered by count: %+v", q.Entries)
				}
			}
		})
	}
}

func TestTransformZeroIsIdentity(t *testing.T) {
	p := transformProfile()
	if q := Transformed(p, &Transform{}); q != p {
		t.Error("a zero transform copied the profile")
	}
	if q := Transformed(p, nil); q != p {
		t.Error("a nil transform copied the profile")
	}
}

func TestTransformMergesEntries(t *testing.T) {
	p := transformProfile()
	// Hiding a and c makes main>a>c (tid 1, leaf 0x20) and main>b>a>b>c (tid 2) stacks
	// main and main>b>b; hiding a, b, c makes tid 1's main>a>b and main>a>c both main, with
	// different leaves (kept apart), and tid 2's main>a and main>b>a>b>c both main.
	q := Transformed(p, &Transform{Hide: regexp.MustCompile("^(a|b|c)$")})
	var n2 int
	for _, e := range q.Entries {
		if e.Tid == 2 {
			n2++
		}
	}
	if n2 != 2 {
		t.Errorf("tid 2 has %d entries, want 2 (leaves 0x30 and 0x20 stay apart)", n2)
	}
	// The same leaf on the same thread merges: rec's three frames folded, and a second
	// entry of main>rec with that leaf.
	rec := p.Stacks[2] // main>rec>rec>rec: its first and last locations are rec's and main's
	p.Stacks = append(p.Stacks, []uint32{rec[0], rec[3]})
	p.Entries = append(p.Entries, agg.Entry{Tid: 1, Pid: 1, Stack: uint32(len(p.Stacks) - 1), Count: 3, Leaf: 0x40, LeafFunc: tRec, Time: 7})
	p.Entries[3].Time = 9
	q = Transformed(p, &Transform{FoldRecursion: true})
	if len(q.Entries) != len(p.Entries)-1 {
		t.Fatalf("%d entries, want %d (two merged)", len(q.Entries), len(p.Entries)-1)
	}
	for _, e := range q.Entries {
		if e.Leaf == 0x40 && (e.Count != 13 || e.Time != 7) {
			t.Errorf("merged entry %+v, want count 13 from time 7", e)
		}
	}
}

// TestTransformKeepsSeries: entries that merge or vanish in a transform keep the series
// pointing at the right ones, so a window or a timeline of the transformed profile counts
// what the same view of the original would after the transform.
func TestTransformKeepsSeries(t *testing.T) {
	const sec = 1_000_000_000
	r := agg.NewRun()
	// fn0 is main, fn1 work, fn4 rec. In [0, 1 s): main>rec>rec 100 and main>fn1 100;
	// in [1 s, 2 s): main>rec 300 and main>fn1 100. Both rec stacks have the same leaf.
	for i := 0; i < 100; i++ {
		r.AddSample(1, 1, 0, uint64(i)*(sec/100), 0, chainOf(4, 4, 0))
	}
	for i := 0; i < 300; i++ {
		r.AddSample(1, 1, 0, sec+uint64(i)*(sec/300+1), 0, chainOf(4, 0))
	}
	for i := 0; i < 200; i++ {
		r.AddSample(1, 1, 1, uint64(i)*(sec/100), 0, chainOf(1, 0))
	}
	r.Resolve(newFakeResolver(8))
	p := r.Profile(nil)

	q := Transformed(p, &Transform{FoldRecursion: true})
	if got, want := folded(q), []string{"1:fn0000;fn0001 200", "1:fn0000;fn0004 400"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("folded = %q, want %q", got, want)
	}
	if len(q.Entries) != 2 {
		t.Fatalf("%d entries, want 2: the two rec stacks merge", len(q.Entries))
	}
	for _, c := range []struct {
		from, to uint64
		want     []string
	}{
		{0, sec, []string{"1:fn0000;fn0001 100", "1:fn0000;fn0004 100"}},
		{sec, 0, []string{"1:fn0000;fn0001 100", "1:fn0000;fn0004 300"}},
		{sec / 2, sec + sec/2, []string{"1:fn0000;fn0001 100", "1:fn0000;fn0004 200"}},
	} {
		w, err := q.Window(c.from, c.to)
		if err != nil {
			t.Fatal(err)
		}
		if got := folded(w); !reflect.DeepEqual(got, c.want) {
			t.Errorf("window [%d, %d) of the transform: %q, want %q", c.from, c.to, got, c.want)
		}
		// The same window taken first, then transformed.
		w0, err := p.Window(c.from, c.to)
		if err != nil {
			t.Fatal(err)
		}
		if got := folded(Transformed(w0, &Transform{FoldRecursion: true})); !reflect.DeepEqual(got, c.want) {
			t.Errorf("transform of window [%d, %d): %q, want %q", c.from, c.to, got, c.want)
		}
	}

	// Ignoring rec leaves its samples out of the timeline; the series itself is shared.
	q = Transformed(p, &Transform{Ignore: regexp.MustCompile("fn0004")})
	tl, err := MakeTimeline(q, Filter{}, 0, 2*sec, sec, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tl.Total, []uint64{100, 100}) {
		t.Errorf("timeline without rec: %v, want [100 100]", tl.Total)
	}
	if len(tl.Phases) != 1 || tl.Phases[0].Func != "fn0001" {
		t.Errorf("phases %+v, want fn0001 throughout", tl.Phases)
	}
	w, err := q.Window(sec, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := folded(w); !reflect.DeepEqual(got, []string{"1:fn0000;fn0001 100"}) {
		t.Errorf("second half without rec: %q", got)
	}
}

// TestTransformedViews: the views take the transformed profile as it is.
func TestTransformedViews(t *testing.T) {
	p := transformProfile()
	q := Transformed(p, &Transform{Focus: regexp.MustCompile("^b$")})
	rows, samples := Top(q, Filter{}, 0, true)
	if samples != 64 || rows[0].Func != "b" || rows[0].Total != 64 {
		t.Errorf("top of focus b: %d samples, rows %+v", samples, rows)
	}
	root, _ := Flame(q, Filter{}, 0, 0)
	if got, want := flameString(root), "all:64/0(b:64/50(malloc:8/0(_int_malloc:8/0(sysmalloc:8/8)) a:6/0(b:6/0(c:6/6))))"; got != want {
		t.Errorf("flame of focus b:\n%s\nwant\n%s", got, want)
	}
	th, _ := Threads(q, 0)
	if th[0].Tid != 1 || th[0].Samples != 58 || th[1].Samples != 6 {
		t.Errorf("threads of focus b: %+v", th)
	}
}

// Python keeps the py:: frames of CPython's trampolines and the leaf below the innermost,
// whatever native frames lie between; a stack with no Python frame keeps its leaf.
func TestTransformPython(t *testing.T) {
	native := func(n string) agg.Frame { return agg.Frame{Func: n, Image: "libpython3.12.so.1.0", Kind: agg.KindUser} }
	py := func(n string) agg.Frame {
		return agg.Frame{Func: "py::" + n + ":/app.py", Image: "[jit]", Kind: agg.KindJIT}
	}
	const (
		start = iota
		eval
		module
		spinA
		spinB
		alloc
		other // a JIT frame that is not Python's
	)
	p := located(&agg.Profile{
		Frames: []agg.Frame{native("_start"), native("_PyEval_EvalFrameDefault"), py("<module>"), py("spin_a"), py("spin_b"),
			native("_PyObject_Malloc"), {Func: "jitted", Image: "[jit]", Kind: agg.KindJIT}},
		Stacks: [][]uint32{
			{alloc, eval, spinA, eval, module, eval, start},
			{eval, spinB, eval, module, eval, start},
			{spinB, eval, module, eval, start},
			{alloc, other, start},
		},
		Entries: []agg.Entry{
			{Tid: 1, Pid: 1, Stack: 0, Count: 3, LeafFunc: alloc},
			{Tid: 1, Pid: 1, Stack: 1, Count: 5, LeafFunc: eval},
			{Tid: 1, Pid: 1, Stack: 2, Count: 1, LeafFunc: spinB},
			{Tid: 1, Pid: 1, Stack: 3, Count: 2, LeafFunc: alloc},
		},
		Threads: []agg.ThreadInfo{{Tid: 1, Pid: 1, Name: "main"}},
	})
	got := folded(Transformed(p, &Transform{Python: true}))
	want := []string{"1:_PyObject_Malloc 2", "1:py::<module>:/app.py;py::spin_a:/app.py;_PyObject_Malloc 3",
		"1:py::<module>:/app.py;py::spin_b:/app.py 1", "1:py::<module>:/app.py;py::spin_b:/app.py;_PyEval_EvalFrameDefault 5"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The python transform keeps frames of kind python (as resolved now) as it keeps the
// py:: JIT frames of older runs (TestTransformPython), and Summarize counts them as JIT.
func TestTransformPythonKind(t *testing.T) {
	native := func(n string) agg.Frame { return agg.Frame{Func: n, Image: "libpython3.12.so.1.0", Kind: agg.KindUser} }
	py := func(n string) agg.Frame {
		return agg.Frame{Func: n + " (/app.py)", Image: "[jit]", Kind: agg.KindPython, File: "/app.py"}
	}
	const (
		start = iota
		eval
		module
		spinA
		alloc
	)
	p := located(&agg.Profile{
		Frames: []agg.Frame{native("_start"), native("_PyEval_EvalFrameDefault"), py("<module>"), py("spin_a"), native("_PyObject_Malloc")},
		Stacks: [][]uint32{
			{alloc, eval, spinA, eval, module, eval, start},
			{spinA, eval, module, eval, start},
		},
		Entries: []agg.Entry{
			{Tid: 1, Pid: 1, Stack: 0, Count: 3, LeafFunc: alloc},
			{Tid: 1, Pid: 1, Stack: 1, Count: 4, LeafFunc: spinA},
		},
		Threads: []agg.ThreadInfo{{Tid: 1, Pid: 1, Name: "main"}},
	})
	got := folded(Transformed(p, &Transform{Python: true}))
	want := []string{"1:<module> (/app.py);spin_a (/app.py) 4", "1:<module> (/app.py);spin_a (/app.py);_PyObject_Malloc 3"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s := agg.Summarize(p); s.JITSamples != 4 || s.JITUnnamed != 0 {
		t.Errorf("summary: %d JIT samples (%d unnamed), want 4 (0)", s.JITSamples, s.JITUnnamed)
	}
}
