package export

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/store"
)

var (
	bigOnce sync.Once
	bigRun  *store.Run
)

// bigProfile is a large synthetic run: 1,000,000 samples over 50,000 stacks (up to 40
// frames deep, from 5,000 functions of every kind) in 16 threads, with a series of times.
func bigProfile() *store.Run {
	bigOnce.Do(func() {
		const nSamples, nStacks, nFuncs, nThreads = 1_000_000, 50_000, 5_000, 16
		rng := rand.New(rand.NewPCG(1, 2))
		kinds := []string{agg.KindUser, agg.KindUser, agg.KindJIT, agg.KindKernel, agg.KindUnknown}
		frames := make([]agg.Frame, nFuncs)
		for i := range frames {
			k := kinds[i%len(kinds)]
			frames[i] = agg.Frame{Func: fmt.Sprintf("ns::Class%d::method_%d<T>", i/50, i), Kind: k,
				Image: fmt.Sprintf("/usr/lib/libbench%d.so", i%20), File: fmt.Sprintf("src/file%d.cc", i%300), Line: i % 900,
				Inlined: k == agg.KindUser && i%7 == 0}
		}
		stacks := make([][]uint32, nStacks)
		for i := range stacks {
			d := 5 + rng.IntN(36)
			s := make([]uint32, d)
			// Shared roots, varied leaves: like real call trees.
			for j := range s {
				pos := d - 1 - j
				s[j] = uint32((pos*131 + rng.IntN(1+pos*pos)) % nFuncs)
			}
			stacks[i] = s
		}
		p := agg.Profile{Frames: frames, Stacks: stacks}
		for t := 0; t < nThreads; t++ {
			p.Threads = append(p.Threads, agg.ThreadInfo{Tid: uint32(1000 + t), Pid: 1000, Name: fmt.Sprintf("worker-%d", t)})
		}
		// Entries: each stack in one or two threads.
		for i := range stacks {
			for k := 0; k < 1+i%2; k++ {
				p.Entries = append(p.Entries, agg.Entry{Tid: uint32(1000 + rng.IntN(nThreads)), Pid: 1000, Stack: uint32(i),
					Leaf: 0x400000 + uint64(rng.IntN(1<<20)), LeafFunc: int32(stacks[i][0])})
			}
		}
		p.KeyEntry = make([]int32, len(p.Entries))
		for i := range p.KeyEntry {
			p.KeyEntry[i] = int32(i)
		}
		const start = 1_000_000_000
		var ch []agg.SeriesChunk
		t := uint64(start)
		for i := 0; i < nSamples; i++ {
			// Zipf-like: a few stacks hot.
			e := int(float64(len(p.Entries)) * rng.Float64() * rng.Float64() * rng.Float64())
			p.Entries[e].Count++
			if p.Entries[e].Time == 0 {
				p.Entries[e].Time = t
			}
			if i%10_000 == 0 {
				ch = append(ch, agg.SeriesChunk{Base: t, Min: t, Max: t})
			}
			c := &ch[len(ch)-1]
			var dt int64
			if c.N > 0 {
				dt = 250_000
				t += 250_000
			}
			c.Data = binary.AppendVarint(c.Data, dt)
			c.Data = binary.AppendUvarint(c.Data, uint64(e))
			c.Data = binary.AppendUvarint(c.Data, uint64(i%8))
			c.N++
			c.Max = t
		}
		p.Series = agg.Series{Chunks: ch}
		p.LocateFrameStacks()
		bigRun = &store.Run{Meta: store.Meta{ID: "bench", Command: []string{"bench"}, Pid: 1000, Freq: 4000, StartNs: start},
			Profile: p}
	})
	return bigRun
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(b []byte) (int, error) { c.n += int64(len(b)); return len(b), nil }

// BenchmarkExport writes the large profile in every format; MB/s is output bytes per
// second, and samples/s the profile's samples exported per second.
func BenchmarkExport(b *testing.B) {
	r := bigProfile()
	total := r.Profile.TotalSamples()
	for _, f := range Formats {
		b.Run(f.Name, func(b *testing.B) {
			var out countWriter
			if err := f.Write(&out, r); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(out.n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := f.Write(&countWriter{}, r); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
			b.ReportMetric(float64(out.n)/1e6, "MB")
		})
	}
}
