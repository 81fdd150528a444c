package views

import (
	"github.com/stax-profiler/stax/internal/testutil/callgraph"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
)

var (
	bigOnce    sync.Once
	bigProfile *agg.Profile
)

// profile1M is a resolved profile of 1,000,000 samples over 20,000 distinct stacks of depth
// 20 through about 2,000 functions on 4 threads.
func profile1M(tb testing.TB) *agg.Profile {
	bigOnce.Do(func() {
		stacks := callgraph.Stacks(20000, 2000, 6)
		pick := callgraph.Skewed(1_000_000, len(stacks), 7)
		rng := rand.New(rand.NewPCG(8, 8))
		r := agg.NewRun()
		for i, p := range pick {
			r.AddSample(benchPid, benchPid+uint32(rng.IntN(benchThreads)), 0, uint64(i)*1000, 0, stacks[p])
		}
		r.Resolve(newFakeResolver(2000))
		bigProfile = r.Profile(nil)
	})
	if n := bigProfile.TotalSamples(); n != 1_000_000 {
		tb.Fatalf("profile holds %d samples", n)
	}
	return bigProfile
}

// BenchmarkTopAndFlame1M times the top and flame views over a 1M-sample profile. Target:
// each under 200 ms; top over a time window (TopWindow) under 100 ms.
func BenchmarkTopAndFlame1M(b *testing.B) {
	p := profile1M(b)
	b.Logf("profile: %d frames, %d stacks, %d entries", len(p.Frames), len(p.Stacks), len(p.Entries))
	b.Run("Top", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if rows, n := Top(p, Filter{}, 50, false); len(rows) == 0 || n != 1_000_000 {
				b.Fatalf("%d rows, %d samples", len(rows), n)
			}
		}
	})
	b.Run("TopByTotalOneThread", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if rows, _ := Top(p, Filter{Tid: benchPid}, 50, true); len(rows) == 0 {
				b.Fatal("no rows")
			}
		}
	})
	b.Run("Flame", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if root, n := Flame(p, Filter{}, 0, 0); n != 1_000_000 || len(root.Children) == 0 {
				b.Fatalf("%d samples", n)
			}
		}
	})
	b.Run("FlamePruned", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if root, n := Flame(p, Filter{}, 10, 0.5); n != 1_000_000 || len(root.Children) == 0 {
				b.Fatalf("%d samples", n)
			}
		}
	})
	b.Run("TopWindow", func(b *testing.B) {
		// A window over the middle half of the run: recount from the series, then top.
		first, last := p.TimeRange()
		from, to := first+(last-first)/4, last-(last-first)/4
		b.ReportAllocs()
		for b.Loop() {
			w, err := p.Window(from, to)
			if err != nil {
				b.Fatal(err)
			}
			if rows, n := Top(w, Filter{}, 50, false); len(rows) == 0 || n < 400_000 || n > 600_000 {
				b.Fatalf("%d rows, %d samples", len(rows), n)
			}
		}
	})
	b.Run("Threads", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if rows, _ := Threads(p, 0); len(rows) != benchThreads {
				b.Fatalf("%d threads", len(rows))
			}
		}
	})
}
