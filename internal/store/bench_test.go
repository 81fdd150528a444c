package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
)

// nameByAddress names each address after its 256-byte block: a stand-in for symbols.
type nameByAddress struct{}

func (nameByAddress) Resolve(_ uint32, _ uint64, chain []uint64, out []agg.Frame) ([]agg.Frame, int, uint64, int) {
	for _, a := range chain[1:] {
		out = append(out, agg.Frame{Func: fmt.Sprintf("func_%d", a>>8), Image: "/usr/bin/app", Kind: agg.KindUser})
	}
	return out, 0, chain[1], 0
}
func (nameByAddress) Version() uint64 { return 1 }

// run1M is a run of 1,000,000 samples at 1 ms intervals on 4 threads over 50,000 stacks of
// depth 8 to 40 through 3,000 functions, drawn with a skewed distribution.
func run1M(tb testing.TB) *Run {
	rng := rand.New(rand.NewPCG(1, 2))
	stacks := make([][]uint64, 50_000)
	for i := range stacks {
		depth := 8 + rng.IntN(33)
		chain := []uint64{^uint64(511)} // PERF_CONTEXT_USER
		for d := 0; d < depth; d++ {
			chain = append(chain, uint64(rng.IntN(3000))<<8|uint64(rng.IntN(64)))
		}
		stacks[i] = chain
	}
	z := rand.NewZipf(rng, 1.1, 4, uint64(len(stacks)-1))
	r := agg.NewRun()
	for i := 0; i < 1_000_000; i++ {
		tid := uint32(100 + rng.IntN(4))
		r.AddSample(100, tid, uint32(tid%2), 1e9+uint64(i)*1_000_000+uint64(rng.IntN(1000)), 0, stacks[z.Uint64()])
	}
	r.Resolve(nameByAddress{})
	return &Run{Meta: Meta{ID: "bench", Samples: 1_000_000, Freq: 999}, Profile: *r.Profile(nil)}
}

// BenchmarkSaveOpen1M encodes and decodes a 1,000,000-sample run. Targets: each under 1 s,
// and under 12 bytes a sample (bytes/sample).
func BenchmarkSaveOpen1M(b *testing.B) {
	run := run1M(b)
	var buf bytes.Buffer
	if err := Encode(&buf, run); err != nil {
		b.Fatal(err)
	}
	b.Run("Save", func(b *testing.B) {
		for b.Loop() {
			buf.Reset()
			if err := Encode(&buf, run); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(buf.Len())/1e6, "bytes/sample")
	})
	b.Run("Open", func(b *testing.B) {
		for b.Loop() {
			got, err := Decode(bytes.NewReader(buf.Bytes()))
			if err != nil {
				b.Fatal(err)
			}
			if got.Profile.Series.Len() != 1_000_000 {
				b.Fatalf("%d samples read back", got.Profile.Series.Len())
			}
		}
	})
}
