package agg

import (
	"fmt"
	"github.com/stax-profiler/stax/internal/testutil/callgraph"
	"reflect"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"
)

// Addresses the fake resolver understands: textBase + fid*funcSize + offset names frame fid;
// addresses at or above lateBase stay unresolved until the resolver's version reaches
// lateVersion (JIT code whose symbols arrive later).
const (
	textBase    = 0x400000
	funcSize    = 0x40
	lateBase    = 0x7f0000000000
	lateVersion = 2
	markerMin   = ^uint64(4095 - 1) // perf's context markers are at or above this
	ctxUser     = ^uint64(512 - 1)
	ctxKernel   = ^uint64(128 - 1)
)

func addr(fid int, off uint64) uint64 { return textBase + uint64(fid)*funcSize + off }

// fakeResolver names frames deterministically from addresses.
type fakeResolver struct {
	mu      sync.Mutex
	version uint64
	frames  []Frame // fid -> frame
	calls   int
}

func newFakeResolver(nframes int) *fakeResolver {
	r := &fakeResolver{version: 1, frames: make([]Frame, nframes)}
	for i := range r.frames {
		img := "/usr/bin/app"
		if i%3 == 2 {
			img = "/usr/lib/libfoo.so"
		}
		r.frames[i] = Frame{Func: fmt.Sprintf("fn%04d", i), Image: img, Kind: KindUser}
	}
	return r
}

func (r *fakeResolver) Version() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.version
}

func (r *fakeResolver) bump() {
	r.mu.Lock()
	r.version++
	r.mu.Unlock()
}

func (r *fakeResolver) Resolve(pid uint32, t uint64, chain []uint64, out []Site) ([]Site, int, uint64, int) {
	r.mu.Lock()
	r.calls++
	version := r.version
	r.mu.Unlock()
	var leaf uint64
	unresolved := 0
	start := len(out)
	for _, a := range chain {
		if a >= markerMin {
			continue
		}
		at := a
		if leaf == 0 {
			leaf = a
		} else {
			at-- // a return address: the call is the byte before it
		}
		var f Frame
		var m Mapping
		switch {
		case a >= lateBase && version >= lateVersion:
			f = Frame{Func: fmt.Sprintf("jit_%x", a&^0xf), Image: "//anon", Kind: KindJIT}
			m = Mapping{Pid: pid, File: "[jit]"}
		case a >= lateBase:
			f = Frame{Func: "[unknown]", Image: "//anon", Kind: KindUnknown}
			unresolved++
		case a >= textBase && int((a-textBase)/funcSize) < len(r.frames):
			f = r.frames[(a-textBase)/funcSize]
			m = Mapping{Pid: pid, Start: textBase, Limit: textBase + uint64(len(r.frames))*funcSize, File: f.Image}
		default:
			f = Frame{Func: "[unknown]", Kind: KindUnknown}
			unresolved++
		}
		out = append(out, Site{Frame: f, Addr: at, Mapping: m})
	}
	leafFunc := -1
	if len(out) > start && out[start].Frame.Kind != KindUnknown {
		leafFunc = start
	}
	return out, leafFunc, leaf, unresolved
}

// chainOf builds a user callchain (leaf first) of frame ids with a zero offset.
func chainOf(fids ...int) []uint64 {
	c := []uint64{ctxUser}
	for _, f := range fids {
		c = append(c, addr(f, 0))
	}
	return c
}

// entryView is an Entry with frame names instead of ids.
type entryView struct {
	Tid, Pid uint32
	Stack    string
	Count    uint64
	Leaf     uint64
	LeafFunc string
	Time     uint64
}

func viewEntries(p *Profile) []entryView {
	var out []entryView
	for _, e := range p.Entries {
		v := entryView{Tid: e.Tid, Pid: e.Pid, Count: e.Count, Leaf: e.Leaf, Time: e.Time}
		for i, id := range p.AppendFrames(nil, e.Stack) {
			if i > 0 {
				v.Stack += ";"
			}
			v.Stack += p.Frames[id].Func
		}
		if e.LeafFunc >= 0 {
			v.LeafFunc = p.Frames[e.LeafFunc].Func
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		if out[i].Tid != out[j].Tid {
			return out[i].Tid < out[j].Tid
		}
		return out[i].Stack < out[j].Stack
	})
	return out
}

type sample struct {
	pid, tid uint32
	t        uint64
	gen      uint32
	chain    []uint64
}

func TestRunProfile(t *testing.T) {
	offChain := []uint64{ctxUser, addr(1, 4), addr(0, 0)} // same frames as chainOf(1, 0), other leaf
	tests := []struct {
		name      string
		samples   []sample
		want      []entryView
		wantStats Stats
	}{
		{
			name: "counts per thread and stack",
			samples: []sample{
				{1, 1, 10, 0, chainOf(1, 0)},
				{1, 1, 11, 0, chainOf(1, 0)},
				{1, 2, 12, 0, chainOf(1, 0)},
				{1, 1, 13, 0, chainOf(2, 0)},
			},
			want: []entryView{
				{1, 1, "fn0001;fn0000", 2, addr(1, 0), "fn0001", 10},
				{1, 1, "fn0002;fn0000", 1, addr(2, 0), "fn0002", 13},
				{2, 1, "fn0001;fn0000", 1, addr(1, 0), "fn0001", 12},
			},
			wantStats: Stats{Samples: 4, DistinctStacks: 2, Keys: 3},
		},
		{
			name: "generations merge when they resolve alike",
			samples: []sample{
				{1, 1, 30, 1, chainOf(1, 0)},
				{1, 1, 20, 0, chainOf(1, 0)},
				{1, 1, 40, 2, chainOf(1, 0)},
			},
			want:      []entryView{{1, 1, "fn0001;fn0000", 3, addr(1, 0), "fn0001", 20}},
			wantStats: Stats{Samples: 3, DistinctStacks: 1, Keys: 3},
		},
		{
			name: "same frames with another leaf address stay apart",
			samples: []sample{
				{1, 1, 10, 0, chainOf(1, 0)},
				{1, 1, 11, 0, offChain},
				{1, 1, 12, 0, offChain},
			},
			want: []entryView{
				{1, 1, "fn0001;fn0000", 2, addr(1, 4), "fn0001", 11},
				{1, 1, "fn0001;fn0000", 1, addr(1, 0), "fn0001", 10},
			},
			wantStats: Stats{Samples: 3, DistinctStacks: 2, Keys: 2},
		},
		{
			name: "kernel and user parts, unknown frames",
			samples: []sample{
				{1, 1, 10, 0, []uint64{ctxKernel, addr(5, 0), ctxUser, addr(1, 0), 0x10}},
			},
			want:      []entryView{{1, 1, "fn0005;fn0001;[unknown]", 1, addr(5, 0), "fn0005", 10}},
			wantStats: Stats{Samples: 1, DistinctStacks: 1, Keys: 1, UnresolvedFrames: 1},
		},
		{
			name:      "empty callchain",
			samples:   []sample{{1, 1, 10, 0, nil}},
			want:      []entryView{{1, 1, "", 1, 0, "", 10}},
			wantStats: Stats{Samples: 1, DistinctStacks: 1, Keys: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRun()
			for _, s := range tc.samples {
				r.AddSample(s.pid, s.tid, 0, s.t, s.gen, s.chain)
			}
			res := newFakeResolver(16)
			r.Resolve(res)
			p := r.Profile(nil)
			if got := viewEntries(p); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("entries:\n got %+v\nwant %+v", got, tc.want)
			}
			got := r.Stats()
			if got.SeriesBytes == 0 {
				t.Errorf("stats: series_bytes = 0 with %d samples", got.Samples)
			}
			got.SeriesBytes, got.NamedKeys = 0, 0
			if got != tc.wantStats {
				t.Errorf("stats = %+v, want %+v", got, tc.wantStats)
			}
			if p.TotalSamples() != r.Samples() {
				t.Errorf("profile holds %d samples, run counted %d", p.TotalSamples(), r.Samples())
			}
			for i := 1; i < len(p.Entries); i++ {
				if p.Entries[i-1].Count < p.Entries[i].Count {
					t.Errorf("entries not sorted by count: %d before %d", p.Entries[i-1].Count, p.Entries[i].Count)
				}
			}
		})
	}
}

func TestRunAddSampleCopiesChain(t *testing.T) {
	r := NewRun()
	c := chainOf(1, 0)
	r.AddSample(1, 1, 0, 1, 0, c)
	c[1] = addr(7, 0)
	r.Resolve(newFakeResolver(8))
	if got := viewEntries(r.Profile(nil)); len(got) != 1 || got[0].Stack != "fn0001;fn0000" {
		t.Errorf("entries = %+v", got)
	}
}

func TestRunProfileLeavesOutUnresolvedKeys(t *testing.T) {
	r := NewRun()
	res := newFakeResolver(8)
	r.AddSample(1, 1, 0, 1, 0, chainOf(1, 0))
	r.Resolve(res)
	r.AddSample(1, 1, 0, 2, 0, chainOf(2, 0))
	r.AddSample(1, 1, 0, 3, 0, chainOf(1, 0))
	p := r.Profile([]ThreadInfo{{Tid: 1, Pid: 1, Name: "main"}})
	if got := viewEntries(p); len(got) != 1 || got[0].Count != 2 {
		t.Errorf("entries = %+v, want the resolved key alone with 2 samples", got)
	}
	if r.Samples() != 3 || p.TotalSamples() != 2 {
		t.Errorf("run %d samples, profile %d", r.Samples(), p.TotalSamples())
	}
	if !reflect.DeepEqual(p.Threads, []ThreadInfo{{Tid: 1, Pid: 1, Name: "main"}}) {
		t.Errorf("threads = %+v", p.Threads)
	}
}

func TestRunReresolve(t *testing.T) {
	r := NewRun()
	res := newFakeResolver(8)
	jit := uint64(lateBase + 0x100)
	r.AddSample(1, 1, 0, 10, 0, []uint64{ctxUser, jit, addr(1, 0), addr(0, 0)})
	r.AddSample(1, 1, 0, 11, 0, chainOf(2, 0))

	newFrames := r.Resolve(res)
	if res.calls != 2 {
		t.Fatalf("%d resolver calls, want 2", res.calls)
	}
	if got := names(newFrames); !reflect.DeepEqual(got, []string{"[unknown]", "fn0001", "fn0000", "fn0002"}) {
		t.Errorf("new frames = %v", got)
	}
	if s := r.Stats(); s.UnresolvedFrames != 1 {
		t.Errorf("unresolved = %d, want 1", s.UnresolvedFrames)
	}
	first := viewEntries(r.Profile(nil))
	if first[0].Stack != "[unknown];fn0001;fn0000" || first[0].LeafFunc != "" {
		t.Errorf("before: %+v", first[0])
	}

	// Nothing learned: nothing is resolved again.
	if nf := r.Resolve(res); len(nf) != 0 || res.calls != 2 {
		t.Errorf("resolve without news: %d new frames, %d calls", len(nf), res.calls)
	}

	// New symbols: only the key with an unresolved frame is tried again.
	res.bump()
	newFrames = r.Resolve(res)
	if res.calls != 3 {
		t.Errorf("%d resolver calls, want 3", res.calls)
	}
	if got := names(newFrames); !reflect.DeepEqual(got, []string{"jit_7f0000000100"}) {
		t.Errorf("new frames = %v", got)
	}
	if s := r.Stats(); s.UnresolvedFrames != 0 {
		t.Errorf("unresolved = %d, want 0", s.UnresolvedFrames)
	}
	got := viewEntries(r.Profile(nil))
	want := []entryView{
		{1, 1, "fn0002;fn0000", 1, addr(2, 0), "fn0002", 11},
		{1, 1, "jit_7f0000000100;fn0001;fn0000", 1, jit, "jit_7f0000000100", 10},
	}
	sort.Slice(got, func(i, j int) bool { return got[i].Stack < got[j].Stack })
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after:\n got %+v\nwant %+v", got, want)
	}

	// Resolved for good: later versions do not call the resolver again.
	res.bump()
	r.Resolve(res)
	if res.calls != 3 {
		t.Errorf("%d resolver calls after everything resolved, want 3", res.calls)
	}
}

func names(fs []Frame) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Func)
	}
	return out
}

func TestRunConcurrent(t *testing.T) {
	r := NewRun()
	res := newFakeResolver(32)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				r.AddSample(1, uint32(w+1), 0, uint64(i), 0, chainOf(i%32, (i/32)%32))
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 20; i++ {
			r.Resolve(res)
			_ = r.Profile(nil)
			_ = r.Stats()
		}
	}()
	wg.Wait()
	<-done
	r.Resolve(res)
	if p := r.Profile(nil); p.TotalSamples() != 8000 || r.Samples() != 8000 {
		t.Errorf("profile %d samples, run %d, want 8000", p.TotalSamples(), r.Samples())
	}
}

func TestFrameTable(t *testing.T) {
	ft := NewFrameTable()
	a := Frame{Func: "f", Image: "/x", Kind: KindUser}
	b := a
	b.Inlined = true
	c := a
	c.File, c.Line = "f.c", 3
	d := a
	d.File, d.Line = "g.c", 9
	e := a
	e.Image = "/y"
	ids := []uint32{ft.Intern(a), ft.Intern(b), ft.Intern(c), ft.Intern(d), ft.Intern(e), ft.Intern(a)}
	if !reflect.DeepEqual(ids, []uint32{0, 1, 0, 0, 2, 0}) || len(ft.Frames) != 3 {
		t.Errorf("ids = %v, frames = %d", ids, len(ft.Frames))
	}
	// A function's location is the first one seen.
	if f := ft.Frames[0]; f.File != "f.c" || f.Line != 3 {
		t.Errorf("frame 0 at %s:%d, want f.c:3", f.File, f.Line)
	}
}

func TestRunTakeNewLeaves(t *testing.T) {
	r := NewRun()
	res := newFakeResolver(8)
	r.AddSample(7, 7, 0, 10, 0, []uint64{ctxUser, addr(1, 8), addr(0, 0)})
	r.AddSample(7, 7, 0, 11, 0, []uint64{ctxUser, addr(1, 12), addr(2, 0)})
	r.AddSample(7, 7, 0, 12, 0, chainOf(0))
	r.AddSample(7, 7, 0, 13, 0, []uint64{ctxUser, lateBase})
	r.Resolve(res)
	got := r.TakeNewLeaves()
	// One ref per stack, not per function: fn1 is at the leaf of two stacks (two places in
	// its code, maybe two versions of it); the unnamed JIT address gets its own.
	want := []LeafRef{{Frame: 0, Pid: 7, Addr: addr(1, 8), Time: 10}, {Frame: 0, Pid: 7, Addr: addr(1, 12), Time: 11},
		{Frame: 1, Pid: 7, Addr: addr(0, 0), Time: 12}, {Frame: 3, Pid: 7, Addr: lateBase, Time: 13, Unresolved: true}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("new leaves = %+v, want %+v", got, want)
	}
	if got := r.TakeNewLeaves(); len(got) != 0 {
		t.Errorf("leaves taken twice: %+v", got)
	}
	// Once its symbols arrive, the JIT stack is named again and its leaf comes back named.
	res.version = lateVersion
	r.Resolve(res)
	got = r.TakeNewLeaves()
	if len(got) != 1 || got[0].Unresolved || got[0].Addr != lateBase || r.Profile(nil).Frames[got[0].Frame].Func != "jit_7f0000000000" {
		t.Errorf("leaves after the JIT was named = %+v", got)
	}
}

// blockingResolver stands in for a slow symbol load: Resolve waits until released.
type blockingResolver struct {
	*fakeResolver
	entered, release chan struct{}
}

func (b *blockingResolver) Resolve(pid uint32, t uint64, chain []uint64, out []Site) ([]Site, int, uint64, int) {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-b.release
	return b.fakeResolver.Resolve(pid, t, chain, out)
}

// TestAddSampleNeverWaitsForResolve: while a resolver is stuck (a slow debuginfod, a
// large image), samples are still counted.
func TestAddSampleNeverWaitsForResolve(t *testing.T) {
	r := NewRun()
	r.AddSample(1, 1, 0, 10, 0, []uint64{0x10, 0x20})
	res := &blockingResolver{newFakeResolver(8), make(chan struct{}, 1), make(chan struct{})}
	done := make(chan []Frame)
	go func() { done <- r.Resolve(res) }()
	<-res.entered
	added := make(chan struct{})
	go func() {
		for i := range 1000 {
			r.AddSample(1, 1, 0, uint64(20+i), 0, []uint64{0x10, uint64(0x30 + i%7)})
		}
		close(added)
	}()
	select {
	case <-added:
	case <-time.After(10 * time.Second):
		t.Fatal("AddSample waited for a resolver that is stuck")
	}
	if n := r.Samples(); n != 1001 {
		t.Errorf("%d samples counted while resolving, want 1001", n)
	}
	close(res.release)
	if frames := <-done; len(frames) == 0 {
		t.Error("the resolve named nothing")
	}
	r.Resolve(res)
	if st := r.Stats(); st.Keys != 8 {
		t.Errorf("%d keys, want 8", st.Keys)
	}
	p := r.Profile(nil)
	var total uint64
	for _, e := range p.Entries {
		total += e.Count
	}
	if total != 1001 {
		t.Errorf("profile holds %d samples, want 1001", total)
	}
}

// inlineResolver names each address after its 0x100 block, with a line per address and,
// in block 2, a function inlined into it.
type inlineResolver struct{}

func (inlineResolver) Resolve(pid uint32, t uint64, chain []uint64, out []Site) ([]Site, int, uint64, int) {
	m := Mapping{Pid: pid, Start: 0x100, Limit: 0x1000, File: "/bin/app", BuildID: "ab"}
	leafFunc := -1
	for i, a := range chain[1:] {
		at := a
		if i > 0 {
			at--
		}
		if a>>8 == 2 {
			out = append(out, Site{Frame: Frame{Func: "inl", Image: "app", Kind: KindUser, Inlined: true}, Line: int(a & 0xff), Addr: at, Mapping: m})
		}
		if i == 0 {
			leafFunc = len(out)
		}
		out = append(out, Site{Frame: Frame{Func: fmt.Sprintf("f%d", a>>8), Image: "app", Kind: KindUser}, Line: int(a&0xff) + 100, Addr: at, Mapping: m})
	}
	return out, leafFunc, chain[1], 0
}
func (inlineResolver) Version() uint64 { return 1 }

// TestRunKeepsLocations: a stack keeps each machine frame's address (a caller's return
// address minus one), mapping and lines, functions inlined there first; stacks through the
// same functions from different call sites stay apart.
func TestRunKeepsLocations(t *testing.T) {
	r := NewRun()
	r.AddSample(1, 1, 0, 10, 0, []uint64{ctxUser, 0x210, 0x105})
	r.AddSample(1, 1, 0, 11, 0, []uint64{ctxUser, 0x210, 0x109})
	r.AddSample(1, 1, 0, 12, 0, []uint64{ctxUser, 0x210, 0x109})
	r.Resolve(inlineResolver{})
	p := r.Profile(nil)
	if len(p.Stacks) != 2 || len(p.Entries) != 2 || len(p.Mappings) != 1 {
		t.Fatalf("%d stacks, %d entries, %d mappings; want 2, 2, 1", len(p.Stacks), len(p.Entries), len(p.Mappings))
	}
	describe := func(lid uint32) string {
		l := p.Locations[lid]
		s := fmt.Sprintf("%#x@%d:", l.Addr, l.Mapping)
		for _, ln := range l.Lines {
			s += fmt.Sprintf(" %s:%d", p.Frames[ln.Func].Func, ln.Line)
		}
		return s
	}
	var got []string
	for _, e := range p.Entries {
		var locs []string
		for _, lid := range p.Stacks[e.Stack] {
			locs = append(locs, describe(lid))
		}
		got = append(got, fmt.Sprintf("%d %v", e.Count, locs))
		if f := p.Frames[p.FrameStacks[e.Stack][0]].Func; f != "inl" || p.Frames[e.LeafFunc].Func != "f2" {
			t.Errorf("leaf frame %s, leaf function %s; want inl, f2", f, p.Frames[e.LeafFunc].Func)
		}
	}
	want := []string{"2 [0x210@1: inl:16 f2:116 0x108@1: f1:109]", "1 [0x210@1: inl:16 f2:116 0x104@1: f1:105]"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stacks %q\nwant   %q", got, want)
	}
}

// badLineResolver gives a line of -1, as .gopclntab does for code without lines.
type badLineResolver struct{ inlineResolver }

func (badLineResolver) Resolve(pid uint32, t uint64, chain []uint64, out []Site) ([]Site, int, uint64, int) {
	return append(out, Site{Frame: Frame{Func: "runtime.cgoSigtramp", Image: "app", Kind: KindUser}, Line: -1, Addr: chain[1]}), len(out), chain[1], 0
}

// TestRunLinesNotKnown: a line that is not one is kept as 0 (not known), which a saved run
// can hold.
func TestRunLinesNotKnown(t *testing.T) {
	r := NewRun()
	r.AddSample(1, 1, 0, 10, 0, []uint64{ctxUser, 0x210})
	r.Resolve(badLineResolver{})
	p := r.Profile(nil)
	if got := p.Locations[0].Lines[0].Line; got != 0 {
		t.Errorf("line %d, want 0", got)
	}
	q := &Profile{Frames: []Frame{{Func: "f", Line: -1}}, Stacks: [][]uint32{{0}}}
	q.LocateFrameStacks()
	if got := q.Locations[0].Lines[0].Line; got != 0 {
		t.Errorf("a frame's line -1 became %d, want 0", got)
	}
}

// TestProfileIntoReusesItsMemory: snapshots built in the same buffers while the run grows
// are each the profile Profile builds at that moment (less the derived FrameStacks), and a
// snapshot of a run that did not grow allocates next to nothing.
func TestProfileIntoReusesItsMemory(t *testing.T) {
	stacks := callgraph.Stacks(3000, 300, 21)
	res := newFakeResolver(300)
	r := NewRun()
	var bufs ProfileBuffers
	at := 0
	for phase, n := range []int{500, 5000, 100, 20000} {
		known := len(stacks) * (phase + 1) / 4 // each phase samples more of the stacks
		for range n {
			r.AddSample(benchPid, benchPid+uint32(at%3), uint32(at%2), uint64(at)*1000, 0, stacks[at*7919%known])
			at++
		}
		r.Resolve(res)
		want := r.Profile(nil)
		want.FrameStacks = nil
		got := r.ProfileInto(nil, &bufs)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("after %d samples: ProfileInto differs from Profile: %d/%d stacks, %d/%d entries", at, len(got.Stacks), len(want.Stacks), len(got.Entries), len(want.Entries))
		}
	}
	allocs := testing.AllocsPerRun(5, func() { r.ProfileInto(nil, &bufs) })
	if allocs > 5 {
		t.Errorf("a snapshot of an unchanged run made %.0f allocations", allocs)
	}
}

// TestSortEntriesInPlace: entries end in the order a stable sort by count (highest first)
// gives, each key still naming its entry, with many ties and after reusing the scratch.
func TestSortEntriesInPlace(t *testing.T) {
	var scratch []int32
	for _, n := range []int{0, 1, 2, 7, 1000, 300} {
		entries := make([]Entry, n)
		keyEntry := make([]int32, 2*n)
		for i := range entries {
			entries[i] = Entry{Tid: uint32(i), Count: uint64((i * 7919) % 13)}
		}
		for k := range keyEntry {
			keyEntry[k] = int32(k/2) - int32(k%2)*int32(k/2+1) // entry k/2, or -1 for odd keys
		}
		want := slices.Clone(entries)
		sort.SliceStable(want, func(i, j int) bool { return want[i].Count > want[j].Count })
		scratch = sortEntriesInPlace(entries, keyEntry, scratch)
		if !reflect.DeepEqual(entries, want) && n > 0 {
			t.Fatalf("%d entries sorted as %v, want %v", n, entries, want)
		}
		for k, e := range keyEntry {
			if k%2 == 1 {
				if e != -1 {
					t.Fatalf("key %d names entry %d, want none", k, e)
				}
				continue
			}
			if entries[e].Tid != uint32(k/2) {
				t.Fatalf("key %d names the entry of tid %d, want %d", k, entries[e].Tid, k/2)
			}
		}
	}
}
