package query

import (
	"math/rand/v2"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/views"
)

// offCPUBenchRun is a run whose off-CPU time comes from n intervals of 64 threads over
// 20,000 distinct blocked stacks 24 frames deep, 10 s long, kept with their times.
func offCPUBenchRun(n int) *store.Run {
	rng := rand.New(rand.NewPCG(1, 2))
	const nFrames, nStacks, depth, threads = 2000, 20000, 24, 64
	p := &agg.Profile{}
	for i := range nFrames {
		name := "func_" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
		if i%50 == 0 {
			name = "pthread_mutex_lock"
		}
		p.Frames = append(p.Frames, agg.Frame{Func: name, Image: "/bin/app", Kind: agg.KindUser})
		p.Locations = append(p.Locations, agg.Location{Addr: uint64(0x400000 + i*16), Lines: []agg.Line{{Func: uint32(i)}}})
	}
	for range nStacks {
		st := make([]uint32, depth)
		for j := range st {
			st[j] = uint32(rng.IntN(nFrames))
		}
		p.Stacks = append(p.Stacks, st)
	}
	for t := range threads {
		p.Threads = append(p.Threads, agg.ThreadInfo{Tid: uint32(1000 + t), Pid: 1000, Name: "worker"})
	}
	type key struct{ tid, stack uint32 }
	sums := map[key]uint64{}
	ivs := make([]agg.Interval, n)
	const span = 10e9
	for i := range ivs {
		start := uint64(rng.Int64N(span))
		d := uint64(rng.Int64N(2e6))
		iv := agg.Interval{Tid: uint32(1000 + rng.IntN(threads)), Stack: uint32(rng.IntN(nStacks)), Start: start, End: start + d}
		ivs[i] = iv
		sums[key{iv.Tid, iv.Stack}] += d
	}
	for k, c := range sums {
		p.Entries = append(p.Entries, agg.Entry{Tid: k.tid, Pid: 1000, Stack: k.stack, Count: c, LeafFunc: -1})
	}
	p.ExpandStacks()
	run := &store.Run{Meta: store.Meta{ID: "bench", Freq: 1000}, Profile: agg.Profile{Threads: p.Threads}, OffCPU: p, OffCPUIntervals: ivs}
	return run
}

// BenchmarkTopOffCPU1M is stax top --off-cpu over a run of 1,000,000 intervals off CPU:
// the whole run (from the aggregate), and a window of it (from the intervals).
func BenchmarkTopOffCPU1M(b *testing.B) {
	run := offCPUBenchRun(1_000_000)
	b.Run("all", func(b *testing.B) {
		for b.Loop() {
			if _, err := Top(run, TopOptions{N: 20, OffCPU: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("window", func(b *testing.B) {
		for b.Loop() {
			off := views.IntervalsIn(run.OffCPU, run.OffCPUIntervals, 2e9, 7e9)
			views.OffCPUTop(off, views.StackReasons(off), views.Filter{}, 20, false)
		}
	})
}
