// Package synthrun builds large synthetic profiles for benchmarks and browser tests.
package synthrun

import (
	"fmt"
	"math/rand/v2"

	"github.com/stax-profiler/stax/internal/agg"
)

// Names names each address after its 256-byte block: a stand-in for symbols.
type Names struct{}

func (Names) Resolve(pid uint32, _ uint64, chain []uint64, out []agg.Site) ([]agg.Site, int, uint64, int) {
	m := agg.Mapping{Pid: pid, Start: 0, Limit: 3000 << 8, File: "/usr/bin/app"}
	leaf := len(out)
	for i, a := range chain[1:] {
		at := a
		if i > 0 {
			at-- // a return address: the call is the byte before it
		}
		out = append(out, agg.Site{Frame: agg.Frame{Func: fmt.Sprintf("func_%d", a>>8), Image: "/usr/bin/app", Kind: agg.KindUser},
			Addr: at, Mapping: m})
	}
	return out, leaf, chain[1], 0
}
func (Names) Version() uint64 { return 1 }

// Profile is a run of n samples at 1 ms intervals on 4 threads over the given number of
// stacks, of depth 8 to 40 through 3,000 functions, drawn with a skewed distribution. The
// first sample is at 1 s (agg times are nanoseconds).
func Profile(n, stacks int) *agg.Profile {
	rng := rand.New(rand.NewPCG(1, 2))
	chains := make([][]uint64, stacks)
	for i := range chains {
		depth := 8 + rng.IntN(33)
		chain := []uint64{^uint64(511)} // PERF_CONTEXT_USER
		for d := 0; d < depth; d++ {
			chain = append(chain, uint64(rng.IntN(3000))<<8|uint64(rng.IntN(64)))
		}
		chains[i] = chain
	}
	z := rand.NewZipf(rng, 1.1, 4, uint64(len(chains)-1))
	r := agg.NewRun()
	for i := 0; i < n; i++ {
		tid := uint32(100 + rng.IntN(4))
		r.AddSample(100, tid, uint32(tid%2), 1e9+uint64(i)*1_000_000+uint64(rng.IntN(1000)), 0, chains[z.Uint64()])
	}
	r.Resolve(Names{})
	return r.Profile(nil)
}
