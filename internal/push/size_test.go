package push

import (
	"encoding/binary"
	"fmt"
	"github.com/google/pprof/profile"
	"github.com/stax-profiler/stax/internal/export"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/store"
)

// busyRun is 10 s of a 4-thread program sampled at 999 Hz: each thread spreads its 9,990
// samples over 400 distinct stacks 8 to 24 frames deep (drawn from 600 functions of 3
// images, some inlined), about what a mid-sized service shows.
func busyRun() *store.Run {
	rng := rand.New(rand.NewPCG(1, 2))
	var frames []agg.Frame
	for i := range 600 {
		img := []string{"/usr/bin/service", "/usr/lib/x86_64-linux-gnu/libc.so.6", "[jit]"}[i%3]
		kind := agg.KindUser
		if img == "[jit]" {
			kind = agg.KindJIT
		}
		frames = append(frames, agg.Frame{Func: fmt.Sprintf("namespace::Class%d::method_%d(int, std::string const&)", i/10, i), Image: img, Kind: kind,
			File: fmt.Sprintf("src/module%d/file%d.cc", i/50, i/5), Line: 10 + i, Inlined: i%7 == 0})
	}
	p := agg.Profile{Frames: frames}
	const threads, stacksPerThread, hz, secs = 4, 400, 999, 10
	for th := range threads {
		p.Threads = append(p.Threads, agg.ThreadInfo{Tid: uint32(100 + th), Pid: 100, Name: fmt.Sprintf("worker-%d", th)})
		for range stacksPerThread {
			depth := 8 + rng.IntN(17)
			st := make([]uint32, depth)
			for d := range st {
				st[d] = uint32(rng.IntN(len(frames)))
			}
			p.Stacks = append(p.Stacks, st)
			p.Entries = append(p.Entries, agg.Entry{Tid: uint32(100 + th), Pid: 100, Stack: uint32(len(p.Stacks) - 1),
				Leaf: 0x400000 + uint64(rng.IntN(1<<20)), LeafFunc: int32(st[0])})
		}
	}
	p.LocateFrameStacks()
	type smp struct {
		t   uint64
		key int
	}
	var ss []smp
	for th := range threads {
		for i := range hz * secs {
			// A few hot stacks and a long tail, as profiles have.
			k := th*stacksPerThread + int(float64(stacksPerThread)*rng.Float64()*rng.Float64())
			ss = append(ss, smp{fixtureStart + uint64(i)*1e9/hz, k})
		}
	}
	sort.Slice(ss, func(i, j int) bool { return ss[i].t < ss[j].t })
	p.KeyEntry = make([]int32, len(p.Entries))
	for i := range p.KeyEntry {
		p.KeyEntry[i] = int32(i)
	}
	c := agg.SeriesChunk{Base: fixtureStart, Min: fixtureStart}
	last := uint64(fixtureStart)
	for _, s := range ss {
		c.Data = binary.AppendVarint(c.Data, int64(s.t-last))
		c.Data = binary.AppendUvarint(c.Data, uint64(s.key))
		c.Data = binary.AppendUvarint(c.Data, 0)
		c.N++
		c.Max, last = s.t, s.t
		e := &p.Entries[s.key]
		if e.Count == 0 {
			e.Time = s.t
		}
		e.Count++
	}
	p.Series.Chunks = []agg.SeriesChunk{c}
	run := fixture()
	run.Profile = p
	run.Meta.Freq = hz
	return run
}

// TestOTLPSizeOfBusyWindow: one 10 s window of a 4-thread program at 999 Hz encodes to
// under 200 KB of OTLP.
func TestOTLPSizeOfBusyWindow(t *testing.T) {
	r, _, err := Encoder{Protocol: OTLP, Resource: Resource{Host: "h", Service: "service", Pid: 100}}.Window(busyRun(), 0, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	got := decodeOTLP(t, r.Body)
	var n int64
	for _, v := range got.byThread {
		n += v
	}
	raw, err := EncodeOTLP(mustPprof(t, busyRun()), Resource{Host: "h", Service: "service", Pid: 100}, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d samples, 1,600 stacks: %d bytes of OTLP sent (gzip'd), %d before compression", n, len(r.Body), len(raw))
	if n != 4*9990 {
		t.Errorf("%d samples decoded, want %d", n, 4*9990)
	}
	if len(r.Body) >= 200_000 {
		t.Errorf("%d bytes of OTLP for a 10 s window, want under 200 KB", len(r.Body))
	}
}

func BenchmarkEncodeOTLPWindow(b *testing.B) {
	run := busyRun()
	enc := Encoder{Protocol: OTLP, Resource: Resource{Host: "h", Service: "service", Pid: 100}}
	b.ReportAllocs()
	var size int
	for b.Loop() {
		r, _, err := enc.Window(run, 0, 0, 1)
		if err != nil {
			b.Fatal(err)
		}
		size = len(r.Body)
	}
	b.ReportMetric(float64(size), "bytes/window")
}

func mustPprof(t *testing.T, run *store.Run) *profile.Profile {
	t.Helper()
	p, err := export.Pprof(run)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
