package export

import (
	"encoding/binary"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/store"
)

// Frame ids of the fixture.
const (
	fMain = iota
	fRunJIT
	fJIT1
	fJIT2
	fMix // inlined into run_jit
	fPageFault
	fUnknown
	fHostile
	fLeafInl // inlined into fHostile
	fWorkerLoop
	nFrames
)

// hostileName has every character a format has to escape or replace.
const hostileName = "op<T&U>::\"q'uote\";semi\ncontrol\x01\ttab]]> end"

// fixture is a small run with every kind of frame (native with files and lines, JIT,
// kernel, unknown, inlined) and hostile names, three threads of two processes, and a
// series of sample times from two CPUs, slightly out of order, with some samples whose
// key was never named.
func fixture() *store.Run {
	frames := make([]agg.Frame, nFrames)
	frames[fMain] = agg.Frame{Func: "main", Image: "/opt/app/bin/app", Kind: agg.KindUser, File: "app.c", Line: 40}
	frames[fRunJIT] = agg.Frame{Func: "run_jit", Image: "/opt/app/bin/app", Kind: agg.KindUser, File: "app.c", Line: 21}
	frames[fJIT1] = agg.Frame{Func: "jitted_func1", Image: "[jit]", Kind: agg.KindJIT, File: "loops.toy", Line: 4}
	frames[fJIT2] = agg.Frame{Func: "jitted_func2", Image: "[jit]", Kind: agg.KindJIT}
	frames[fMix] = agg.Frame{Func: "mix", Image: "/opt/app/bin/app", Kind: agg.KindUser, Inlined: true, File: "mix.h", Line: 9}
	frames[fPageFault] = agg.Frame{Func: "asm_exc_page_fault", Image: "[kernel.kallsyms]", Kind: agg.KindKernel}
	frames[fUnknown] = agg.Frame{Func: "[unknown] 0x7f00000ff000", Image: "[unknown]", Kind: agg.KindUnknown}
	frames[fHostile] = agg.Frame{Func: hostileName, Image: "/opt/app/lib/lib<&>.so", Kind: agg.KindUser, File: "a&b<c>.cc", Line: 7}
	frames[fLeafInl] = agg.Frame{Func: "std::vector<int>::operator[]", Image: "/opt/app/lib/lib<&>.so", Kind: agg.KindUser, Inlined: true}
	frames[fWorkerLoop] = agg.Frame{Func: "worker_loop", Image: "/opt/app/bin/app", Kind: agg.KindUser}
	stacks := [][]uint32{
		{fJIT1, fRunJIT, fMain},                       // 0
		{fJIT2, fRunJIT, fMain},                       // 1
		{fMix, fRunJIT, fMain},                        // 2: mix inlined into run_jit
		{fPageFault, fJIT2, fRunJIT, fMain},           // 3: a page fault in JIT code
		{fUnknown, fMain},                             // 4
		{fLeafInl, fHostile, fWorkerLoop},             // 5: inlined leaf in the hostile function
		{fHostile, fWorkerLoop},                       // 6
		{fPageFault, fLeafInl, fHostile, fWorkerLoop}, // 7
	}
	entries := []agg.Entry{
		{Tid: 101, Pid: 100, Stack: 0, Count: 300, Leaf: 0x7f0000001015, LeafFunc: fJIT1},
		{Tid: 101, Pid: 100, Stack: 0, Count: 200, Leaf: 0x7f000000101a, LeafFunc: fJIT1},
		{Tid: 102, Pid: 100, Stack: 1, Count: 700, Leaf: 0x7f0000001055, LeafFunc: fJIT2},
		{Tid: 101, Pid: 100, Stack: 2, Count: 40, Leaf: 0x401234, LeafFunc: fRunJIT},
		{Tid: 102, Pid: 100, Stack: 3, Count: 10, Leaf: 0xffffffff81001000, LeafFunc: fPageFault},
		{Tid: 101, Pid: 100, Stack: 4, Count: 5, Leaf: 0x7f00000ff000, LeafFunc: -1},
		{Tid: 201, Pid: 200, Stack: 5, Count: 120, Leaf: 0x7f1000002000, LeafFunc: fHostile},
		{Tid: 201, Pid: 200, Stack: 6, Count: 80, Leaf: 0x7f1000002100, LeafFunc: fHostile},
		{Tid: 201, Pid: 200, Stack: 7, Count: 3, Leaf: 0xffffffff81002000, LeafFunc: fPageFault},
		{Tid: 100, Pid: 100, Stack: 4, Count: 2, Leaf: 0x7f00000ff000, LeafFunc: -1},
	}
	threads := []agg.ThreadInfo{
		{Tid: 101, Pid: 100, Name: "worker-a"}, {Tid: 102, Pid: 100, Name: "worker<b>"},
		{Tid: 100, Pid: 100, Name: "app"}, {Tid: 201, Pid: 200, Name: "helper\x7f;&"},
	}
	const startNs = 5_000_000_000
	p := agg.Profile{Frames: frames, Stacks: stacks, Entries: entries, Threads: threads}
	p.LocateFrameStacks()
	// Keys: one per entry, and one never named (-1).
	p.KeyEntry = make([]int32, len(entries)+1)
	for i := range entries {
		p.KeyEntry[i] = int32(i)
	}
	p.KeyEntry[len(entries)] = -1
	type smp struct {
		t        uint64
		key, cpu uint32
	}
	var ss []smp
	rng := rand.New(rand.NewPCG(7, 8))
	for i, e := range entries {
		for c := uint64(0); c < e.Count; c++ {
			ss = append(ss, smp{startNs + uint64(rng.IntN(2_000_000_000)), uint32(i), uint32(rng.IntN(2))})
		}
	}
	for c := 0; c < 17; c++ {
		ss = append(ss, smp{startNs + uint64(rng.IntN(2_000_000_000)), uint32(len(entries)), 0})
	}
	sort.Slice(ss, func(i, j int) bool { return ss[i].t < ss[j].t })
	// Two CPUs' samples interleave slightly out of order, as the recorder reads them.
	for i := 0; i+1 < len(ss); i += 7 {
		ss[i], ss[i+1] = ss[i+1], ss[i]
	}
	first := make([]uint64, len(entries))
	var ch []agg.SeriesChunk
	for i, s := range ss {
		if i%400 == 0 {
			ch = append(ch, agg.SeriesChunk{Base: s.t, Min: s.t, Max: s.t})
		}
		c := &ch[len(ch)-1]
		last := c.Base
		if c.N > 0 {
			last = ss[i-1].t
		}
		c.Data = binary.AppendVarint(c.Data, int64(s.t-last))
		c.Data = binary.AppendUvarint(c.Data, uint64(s.key))
		c.Data = binary.AppendUvarint(c.Data, uint64(s.cpu))
		c.N++
		c.Min, c.Max = min(c.Min, s.t), max(c.Max, s.t)
		if int(s.key) < len(entries) && (first[s.key] == 0 || s.t < first[s.key]) {
			first[s.key] = s.t
		}
	}
	for i := range p.Entries {
		p.Entries[i].Time = first[i]
	}
	p.Series = agg.Series{Chunks: ch}
	exit := 0
	return &store.Run{
		Meta: store.Meta{
			ID: "20261101-120000-100", Command: []string{"/opt/app/bin/app", "--jit"}, Pid: 100, Freq: 1000,
			Event: "cpu-clock", Start: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC), StartNs: startNs,
			End: time.Date(2026, 11, 1, 12, 0, 2, 500e6, time.UTC), Finished: true, ExitCode: &exit, Samples: 1460,
		},
		Profile: p,
		Code: []store.Code{
			{Frame: fRunJIT, Pid: 100, Path: "/opt/app/bin/app", BuildID: "abcdef0123456789"},
		},
	}
}

// withoutTimes is the fixture as a run saved before the series existed.
func withoutTimes() *store.Run {
	r := fixture()
	r.Profile.Series = agg.Series{}
	r.Profile.KeyEntry = nil
	return r
}

func TestFixtureSeries(t *testing.T) {
	r := fixture()
	if !r.Profile.HasTimes() {
		t.Fatal("fixture has no times")
	}
	s, err := samplesByTime(&r.Profile)
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(s)) != r.Profile.TotalSamples() {
		t.Fatalf("%d timed samples, want %d", len(s), r.Profile.TotalSamples())
	}
	for i := 1; i < len(s); i++ {
		if s[i].time < s[i-1].time {
			t.Fatalf("sample %d out of order", i)
		}
	}
}

// TestFixtureLocations: the fixture's frames, inlined ones with the function they are
// inlined into, make its locations.
func TestFixtureLocations(t *testing.T) {
	p := &fixture().Profile
	var got [][]uint32
	for _, lid := range p.Stacks[7] {
		var fs []uint32
		for _, ln := range p.Locations[lid].Lines {
			fs = append(fs, ln.Func)
		}
		got = append(got, fs)
	}
	want := [][]uint32{{fPageFault}, {fLeafInl, fHostile}, {fWorkerLoop}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("locations %v, want %v", got, want)
	}
}

func TestCheckRejectsBadIndexes(t *testing.T) {
	r := fixture()
	r.Profile.Entries[0].Stack = 99
	for _, f := range Formats {
		if err := f.Write(discard{}, r); err == nil {
			t.Errorf("%s: no error for a bad stack index", f.Name)
		}
	}
	r = fixture()
	r.Profile.Stacks[0] = append(r.Profile.Stacks[0], 1000)
	if err := WriteFolded(discard{}, r); err == nil {
		t.Error("no error for a bad location index")
	}
	r = fixture()
	r.Profile.Locations[0].Lines = []agg.Line{{Func: 1000}}
	if err := WritePprof(discard{}, r); err == nil {
		t.Error("no error for a bad frame index")
	}
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

// EmptyRun: every format writes something valid for a run with no samples.
func TestEmptyRun(t *testing.T) {
	r := &store.Run{Meta: store.Meta{ID: "x", Freq: 99}}
	for _, f := range Formats {
		if err := f.Write(discard{}, r); err != nil {
			t.Errorf("%s: %v", f.Name, err)
		}
	}
}
