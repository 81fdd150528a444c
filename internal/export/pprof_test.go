package export

import (
	"bytes"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/store"
)

func parsePprof(t *testing.T, b []byte) *profile.Profile {
	t.Helper()
	p, err := profile.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPprof(t *testing.T) {
	r := fixture()
	var buf bytes.Buffer
	if err := WritePprof(&buf, r); err != nil {
		t.Fatal(err)
	}
	p := parsePprof(t, buf.Bytes())
	if len(p.SampleType) != 2 || p.SampleType[0].Type != "samples" || p.SampleType[0].Unit != "count" ||
		p.SampleType[1].Type != "cpu" || p.SampleType[1].Unit != "nanoseconds" {
		t.Fatalf("sample types %v", p.SampleType)
	}
	if p.Period != 1_000_000 || p.TimeNanos != r.Meta.Start.UnixNano() || p.DurationNanos != 2_500_000_000 {
		t.Errorf("period %d, time %d, duration %d", p.Period, p.TimeNanos, p.DurationNanos)
	}
	var total, cpu int64
	self := map[string]int64{} // leaf function
	inTid := map[int64]int64{} // per tid
	threads := map[string]bool{}
	for _, s := range p.Sample {
		total += s.Value[0]
		cpu += s.Value[1]
		if s.Value[1] != s.Value[0]*p.Period {
			t.Errorf("cpu %d for %d samples", s.Value[1], s.Value[0])
		}
		self[s.Location[0].Line[0].Function.Name] += s.Value[0]
		if len(s.NumLabel["pid"]) != 1 || len(s.NumLabel["tid"]) != 1 {
			t.Fatalf("labels %v", s.NumLabel)
		}
		inTid[s.NumLabel["tid"][0]] += s.Value[0]
		threads[s.Label["thread"][0]] = true
	}
	if uint64(total) != r.Profile.TotalSamples() {
		t.Errorf("total %d, want %d", total, r.Profile.TotalSamples())
	}
	// Proportions: self samples per leaf function (the innermost line of the leaf location).
	want := map[string]int64{"jitted_func1": 500, "jitted_func2": 700, "mix": 40, "asm_exc_page_fault": 13,
		"[unknown] 0x7f00000ff000": 7, "std::vector<int>::operator[]": 120, cleanText(hostileName): 80}
	for k, v := range want {
		if self[k] != v {
			t.Errorf("self %q = %d, want %d (all %v)", k, self[k], v, self)
		}
	}
	if inTid[101] != 545 || inTid[102] != 710 || inTid[201] != 203 || inTid[100] != 2 {
		t.Errorf("per tid %v", inTid)
	}
	if !threads["worker<b>"] || !threads["helper?;&"] {
		t.Errorf("thread labels %v", threads)
	}
	// Inlined frames are lines of their function's location, innermost first.
	var found bool
	for _, l := range p.Location {
		if len(l.Line) == 2 && l.Line[0].Function.Name == "mix" {
			found = true
			if l.Line[1].Function.Name != "run_jit" || l.Line[0].Function.Filename != "mix.h" || l.Line[0].Line != 9 {
				t.Errorf("inline location %+v", l.Line)
			}
			if l.Mapping.File != "/opt/app/bin/app" || l.Mapping.BuildID != "abcdef0123456789" {
				t.Errorf("mapping %+v", l.Mapping)
			}
		}
		for _, ln := range l.Line {
			if ln.Function.Name == "mix" && len(l.Line) != 2 {
				t.Errorf("mix outside its inline location: %+v", l.Line)
			}
		}
	}
	if !found {
		t.Error("no location with mix inlined into run_jit")
	}
	maps := map[string]bool{}
	for _, m := range p.Mapping {
		maps[m.File] = true
	}
	for _, m := range []string{"/opt/app/bin/app", "[jit]", "[kernel.kallsyms]", "/opt/app/lib/lib<&>.so", "[unknown]"} {
		if !maps[m] {
			t.Errorf("no mapping %q (have %v)", m, maps)
		}
	}
	for _, l := range p.Location {
		fn := l.Line[len(l.Line)-1].Function.Name
		switch {
		case strings.HasPrefix(fn, "jitted"):
			if l.Mapping.File != "[jit]" {
				t.Errorf("%s in mapping %s", fn, l.Mapping.File)
			}
		case fn == "asm_exc_page_fault":
			if l.Mapping.File != "[kernel.kallsyms]" {
				t.Errorf("%s in mapping %s", fn, l.Mapping.File)
			}
		}
	}
}

func TestPprofWithoutTimes(t *testing.T) {
	var a, b bytes.Buffer
	if err := WritePprof(&a, fixture()); err != nil {
		t.Fatal(err)
	}
	if err := WritePprof(&b, withoutTimes()); err != nil {
		t.Fatal(err)
	}
	pa, pb := parsePprof(t, a.Bytes()), parsePprof(t, b.Bytes())
	if len(pa.Sample) != len(pb.Sample) {
		t.Errorf("%d samples with times, %d without", len(pa.Sample), len(pb.Sample))
	}
}

// locatedRun is a run whose locations have addresses, lines and mappings: the program's
// image mapped in two processes at one address and a library at another, each process's
// JIT code, and the kernel.
func locatedRun() *store.Run {
	fr := func(name, image, kind, file string, inlined bool) agg.Frame {
		return agg.Frame{Func: name, Image: image, Kind: kind, File: file, Inlined: inlined}
	}
	p := agg.Profile{
		Frames: []agg.Frame{
			fr("main", "app", agg.KindUser, "/src/app.c", false),      // 0
			fr("helper", "app", agg.KindUser, "/src/util.h", true),    // 1
			fr("memcpy", "libc.so.6", agg.KindUser, "", false),        // 2
			fr("js_loop", "[jit]", agg.KindJIT, "loop.js", false),     // 3
			fr("irq", "[kernel.kallsyms]", agg.KindKernel, "", false), // 4
		},
		Mappings: []agg.Mapping{
			{Pid: 1, Start: 0x1000, Limit: 0x2000, Offset: 0x1000, File: "/bin/app", BuildID: "aa"},
			{Pid: 2, Start: 0x1000, Limit: 0x2000, Offset: 0x1000, File: "/bin/app", BuildID: "aa"},
			{Pid: 1, Start: 0x7000, Limit: 0x9000, File: "/lib/libc.so.6", BuildID: "bb"},
			{Pid: 1, File: "[jit]"},
			{Pid: 2, File: "[jit]"},
			{File: "[kernel.kallsyms]"},
		},
		Locations: []agg.Location{
			{Addr: 0x1010, Mapping: 1, Lines: []agg.Line{{Func: 1, Line: 3}, {Func: 0, Line: 10}}}, // 0
			{Addr: 0x1020, Mapping: 1, Lines: []agg.Line{{Func: 0, Line: 12}}},                     // 1
			{Addr: 0x7100, Mapping: 3, Lines: []agg.Line{{Func: 2}}},                               // 2
			{Addr: 0x50000, Mapping: 4, Lines: []agg.Line{{Func: 3, Line: 7}}},                     // 3
			{Addr: 0x50100, Mapping: 4, Lines: []agg.Line{{Func: 3, Line: 8}}},                     // 4
			{Addr: 0x60000, Mapping: 5, Lines: []agg.Line{{Func: 3, Line: 7}}},                     // 5
			{Addr: 0xffffffff81000010, Mapping: 6, Lines: []agg.Line{{Func: 4}}},                   // 6
			{Addr: 0x1020, Mapping: 2, Lines: []agg.Line{{Func: 0, Line: 12}}},                     // 7
		},
		Stacks: [][]uint32{{0}, {2, 1}, {3, 1}, {4, 1}, {6, 5, 7}},
		Entries: []agg.Entry{
			{Tid: 1, Pid: 1, Stack: 0, Count: 5, Leaf: 0x1010, LeafFunc: 0},
			{Tid: 1, Pid: 1, Stack: 1, Count: 4, Leaf: 0x7100, LeafFunc: 2},
			{Tid: 1, Pid: 1, Stack: 2, Count: 3, Leaf: 0x50000, LeafFunc: 3},
			{Tid: 1, Pid: 1, Stack: 3, Count: 2, Leaf: 0x50100, LeafFunc: 3},
			{Tid: 2, Pid: 2, Stack: 4, Count: 1, Leaf: 0xffffffff81000010, LeafFunc: 4},
		},
	}
	p.ExpandStacks()
	return &store.Run{Meta: store.Meta{ID: "x", Freq: 1000, Command: []string{"/bin/app"}}, Profile: p}
}

// TestPprofLocations: each location keeps its address, lines and mapping; the image is one
// mapping in both processes (same range), JIT code one per process ranged over its
// addresses, the kernel one; the program's image first.
func TestPprofLocations(t *testing.T) {
	var buf bytes.Buffer
	if err := WritePprof(&buf, locatedRun()); err != nil {
		t.Fatal(err)
	}
	p := parsePprof(t, buf.Bytes())
	var maps []string
	for _, m := range p.Mapping {
		maps = append(maps, fmt.Sprintf("%s %#x-%#x+%#x %s", m.File, m.Start, m.Limit, m.Offset, m.BuildID))
	}
	want := []string{"/bin/app 0x1000-0x2000+0x1000 aa", "/lib/libc.so.6 0x7000-0x9000+0x0 bb", "[jit] 0x50000-0x50101+0x0 ",
		"[jit] 0x60000-0x60001+0x0 ", "[kernel.kallsyms] 0xffffffff81000010-0xffffffff81000011+0x0 "}
	sort.Strings(maps[1:])
	if !reflect.DeepEqual(maps, want) {
		t.Errorf("mappings %q\nwant     %q", maps, want)
	}
	var locs []string
	for _, l := range p.Location {
		s := fmt.Sprintf("%#x %s:", l.Address, l.Mapping.File)
		for _, ln := range l.Line {
			s += fmt.Sprintf(" %s@%s:%d", ln.Function.Name, ln.Function.Filename, ln.Line)
		}
		locs = append(locs, s)
	}
	sort.Strings(locs)
	wantLocs := []string{"0x1010 /bin/app: helper@/src/util.h:3 main@/src/app.c:10", "0x1020 /bin/app: main@/src/app.c:12",
		"0x50000 [jit]: js_loop@loop.js:7", "0x50100 [jit]: js_loop@loop.js:8", "0x60000 [jit]: js_loop@loop.js:7",
		"0x7100 /lib/libc.so.6: memcpy@:0", "0xffffffff81000010 [kernel.kallsyms]: irq@:0"}
	if !reflect.DeepEqual(locs, wantLocs) {
		t.Errorf("locations %q\nwant      %q", locs, wantLocs)
	}
	if len(p.Sample) != 5 || len(p.Sample[4].Location) != 3 || p.Sample[4].Location[2].Mapping != p.Mapping[0] {
		t.Errorf("the second process's sample is not in the shared image mapping: %+v", p.Sample[4])
	}
}

// TestPprofMappingsDoNotOverlap: JIT code ranged over its sampled addresses is split where
// its range would hold another mapping, and the frames an off-CPU stack begins with
// ([sched]) have no mapping and no address, whatever the entry's leaf address.
func TestPprofMappingsDoNotOverlap(t *testing.T) {
	run := locatedRun()
	p := &run.Profile
	p.Frames = append(p.Frames, agg.Frame{Func: agg.FuncRunnable, Image: agg.ImageSched, Kind: agg.KindUnknown}) // 5
	p.Locations = append(p.Locations,
		agg.Location{Addr: 0x3000, Mapping: 4, Lines: []agg.Line{{Func: 3, Line: 9}}}, // 8: pid 1's JIT code below libc
		agg.Location{Lines: []agg.Line{{Func: 5}}})                                    // 9: [runnable]
	p.Stacks = append(p.Stacks, []uint32{8, 1}, []uint32{9, 6, 1})
	p.Entries = append(p.Entries,
		agg.Entry{Tid: 1, Pid: 1, Stack: 5, Count: 1, Leaf: 0x3000, LeafFunc: 3},
		agg.Entry{Tid: 1, Pid: 1, Stack: 6, Count: 1, Leaf: 0x7f0000001000, LeafFunc: 5})
	p.ExpandStacks()
	var buf bytes.Buffer
	if err := WritePprof(&buf, run); err != nil {
		t.Fatal(err)
	}
	out := parsePprof(t, buf.Bytes())
	var maps []string
	for i, a := range out.Mapping {
		maps = append(maps, fmt.Sprintf("%s %#x-%#x", a.File, a.Start, a.Limit))
		if a.File == agg.ImageSched {
			t.Errorf("a mapping for %s: %#x-%#x", a.File, a.Start, a.Limit)
		}
		for _, b := range out.Mapping[i+1:] {
			if a.Start < b.Limit && b.Start < a.Limit && a.File != b.File {
				t.Errorf("mappings overlap: %s %#x-%#x and %s %#x-%#x", a.File, a.Start, a.Limit, b.File, b.Start, b.Limit)
			}
		}
	}
	if maps[0] != "/bin/app 0x1000-0x2000" {
		t.Errorf("first mapping %s, want the program's", maps[0])
	}
	sort.Strings(maps[1:])
	want := []string{"/bin/app 0x1000-0x2000", "/lib/libc.so.6 0x7000-0x9000", "[jit] 0x3000-0x3001", "[jit] 0x50000-0x50101", "[jit] 0x60000-0x60001",
		"[kernel.kallsyms] 0xffffffff81000010-0xffffffff81000011"}
	if !reflect.DeepEqual(maps, want) {
		t.Errorf("mappings %q\nwant     %q", maps, want)
	}
	for _, l := range out.Location {
		if l.Line[0].Function.Name == agg.FuncRunnable && (l.Mapping != nil || l.Address != 0) {
			t.Errorf("[runnable] at %#x in mapping %+v", l.Address, l.Mapping)
		}
		if m := l.Mapping; m != nil && (l.Address < m.Start || l.Address >= m.Limit) {
			t.Errorf("%s at %#x outside its mapping %s %#x-%#x", l.Line[0].Function.Name, l.Address, m.File, m.Start, m.Limit)
		}
	}
}
