package agg

import (
	"encoding/binary"
	"github.com/stax-profiler/stax/internal/testutil/callgraph"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stax-profiler/stax/internal/perfevent"
	"github.com/stax-profiler/stax/internal/perfrecord"
)

// Realistic fixtures: stacks are paths through a synthetic call graph (every function calls
// a few others), so callers near the root are shared as in real programs, and samples are
// drawn from the stacks with a skewed (Zipf) distribution.

const (
	benchDepth   = callgraph.Depth
	benchThreads = 4
	benchPid     = 4242
)

// ringFixture lays out count PERF_RECORD_SAMPLE records, in the perfevent.SampleType layout,
// back to back as they sit in a perf ring.
func ringFixture(count int, stacks [][]uint64, seed uint64) []byte {
	pick := callgraph.Skewed(count, len(stacks), seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	var buf []byte
	t := uint64(1_000_000_000)
	for i := 0; i < count; i++ {
		chain := stacks[pick[i]]
		size := 8 + 8 + 8 + 8 + 8 + 8 + 8 + 8*len(chain)
		buf = binary.LittleEndian.AppendUint32(buf, perfrecord.TypeSample)
		buf = binary.LittleEndian.AppendUint16(buf, perfrecord.MiscUser)
		buf = binary.LittleEndian.AppendUint16(buf, uint16(size))
		buf = binary.LittleEndian.AppendUint64(buf, chain[1])                                // ip
		buf = binary.LittleEndian.AppendUint32(buf, benchPid)                                // pid
		buf = binary.LittleEndian.AppendUint32(buf, benchPid+uint32(rng.IntN(benchThreads))) // tid
		t += 1_000_000 + uint64(rng.IntN(1000))
		buf = binary.LittleEndian.AppendUint64(buf, t)                   // time
		buf = binary.LittleEndian.AppendUint64(buf, uint64(rng.IntN(8))) // cpu, res
		buf = binary.LittleEndian.AppendUint64(buf, 1_000_000)           // period
		buf = binary.LittleEndian.AppendUint64(buf, uint64(len(chain)))  // nr
		for _, a := range chain {
			buf = binary.LittleEndian.AppendUint64(buf, a)
		}
	}
	return buf
}

func TestRingFixtureDecodes(t *testing.T) {
	stacks := callgraph.Stacks(100, 50, 1)
	fix := ringFixture(1000, stacks, 1)
	d := perfrecord.Decoder{SampleType: perfevent.SampleType, SampleIDAll: true}
	r := NewRun()
	var s perfrecord.Sample
	for off := 0; off < len(fix); {
		h, err := perfrecord.ParseHeader(fix[off:])
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Sample(fix[off:off+int(h.Size)], &s); err != nil {
			t.Fatal(err)
		}
		if len(s.Callchain) != benchDepth+1 || s.Pid != benchPid || s.IP != s.Callchain[1] {
			t.Fatalf("bad sample %+v", s)
		}
		r.AddSample(s.Pid, s.Tid, 0, s.Time, 0, s.Callchain)
		off += int(h.Size)
	}
	st := r.Stats()
	if st.Samples != 1000 || st.DistinctStacks > 100 || st.Keys > 100*benchThreads {
		t.Errorf("stats = %+v", st)
	}
	r.Resolve(newFakeResolver(50))
	p := r.Profile(nil)
	if p.TotalSamples() != 1000 {
		t.Errorf("profile holds %d samples", p.TotalSamples())
	}
	for _, e := range p.Entries {
		if len(p.Stacks[e.Stack]) != benchDepth {
			t.Fatalf("stack of depth %d", len(p.Stacks[e.Stack]))
		}
	}
}

// BenchmarkIngest decodes ring records and counts them, one sample per iteration: the
// recorder's hot path. Target: at least 1,000,000 samples/s on one core.
func BenchmarkIngest(b *testing.B) {
	stacks := callgraph.Stacks(5000, 2000, 1)
	fix := ringFixture(1<<16, stacks, 2)
	d := perfrecord.Decoder{SampleType: perfevent.SampleType, SampleIDAll: true}
	r := NewRun()
	var s perfrecord.Sample
	off := 0
	b.ReportAllocs()
	for b.Loop() {
		if off == len(fix) {
			off = 0
		}
		size := int(binary.LittleEndian.Uint16(fix[off+6:]))
		rec := fix[off : off+size]
		off += size
		if err := d.Sample(rec, &s); err != nil {
			b.Fatal(err)
		}
		r.AddSample(s.Pid, s.Tid, 0, s.Time, 0, s.Callchain)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkRetainedPerSample measures the heap a run keeps per sample beyond the unique
// stacks themselves, after 1,000,000 samples over 5,000 stacks. Target: at most 48 bytes.
func BenchmarkRetainedPerSample(b *testing.B) {
	const samples = 1_000_000
	stacks := callgraph.Stacks(5000, 2000, 3)
	pick := callgraph.Skewed(samples, len(stacks), 4)
	tids := make([]uint8, samples)
	rng := rand.New(rand.NewPCG(5, 5))
	for i := range tids {
		tids[i] = uint8(rng.IntN(benchThreads))
	}
	var perSample float64
	b.ReportAllocs()
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r := NewRun()
		for i, p := range pick {
			r.AddSample(benchPid, benchPid+uint32(tids[i]), 0, uint64(i)*1000, 0, stacks[p])
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		retained := int64(after.HeapAlloc) - int64(before.HeapAlloc) - int64(r.raw.Bytes())
		perSample = float64(retained) / samples
		runtime.KeepAlive(r)
	}
	b.ReportMetric(perSample, "bytes/sample")
}

// BenchmarkResolve times naming 20,000 keys (5,000 stacks on 4 threads) with the fake
// resolver; building the run is not timed.
func BenchmarkResolve(b *testing.B) {
	stacks := callgraph.Stacks(5000, 2000, 10)
	res := newFakeResolver(2000)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		r := NewRun()
		for tid := uint32(0); tid < benchThreads; tid++ {
			for i, s := range stacks {
				r.AddSample(benchPid, benchPid+tid, 0, uint64(i), 0, s)
			}
		}
		b.StartTimer()
		r.Resolve(res)
	}
}

// BenchmarkProfileInto builds the snapshot a checkpoint writes of a run of 20,000 stacks on
// 4 threads, reusing the last one's memory (Into) or not (Profile, which also derives the
// stacks' functions): allocs/op and B/op are the garbage each checkpoint leaves.
func BenchmarkProfileInto(b *testing.B) {
	stacks := callgraph.Stacks(20000, 2000, 11)
	pick := callgraph.Skewed(200_000, len(stacks), 12)
	rng := rand.New(rand.NewPCG(13, 13))
	r := NewRun()
	for i, p := range pick {
		r.AddSample(benchPid, benchPid+uint32(rng.IntN(benchThreads)), 0, uint64(i)*1000, 0, stacks[p])
	}
	r.Resolve(newFakeResolver(2000))
	b.Run("Profile", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if p := r.Profile(nil); len(p.Entries) == 0 {
				b.Fatal("no entries")
			}
		}
	})
	b.Run("Into", func(b *testing.B) {
		var bufs ProfileBuffers
		b.ReportAllocs()
		for b.Loop() {
			if p := r.ProfileInto(nil, &bufs); len(p.Entries) == 0 {
				b.Fatal("no entries")
			}
		}
	})
}
