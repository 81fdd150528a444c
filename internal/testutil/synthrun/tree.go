package synthrun

import (
	"math"
	"math/rand/v2"

	"github.com/stax-profiler/stax/internal/agg"
)

// Tree is a run of seconds at hz samples a second (one every 1/hz s, on 2 threads) whose
// stacks are walks down one call tree, as a real program's are: from main, each level
// calls one of its few usual callees most of the time and one of many others now and
// then, 6 to 30 levels deep, through 5,000 functions. Most stacks are seen once or
// twice: 60 s at 4999 Hz has about 166,000 distinct stacks, and a frame with 1% of the
// samples has thousands of frames under it, most of them far under the 0.1% a page's
// graph is pruned at. The first sample is at 1 s.
func Tree(seconds float64, hz int) *agg.Profile {
	rng := rand.New(rand.NewPCG(3, 4))
	n := int(seconds * float64(hz))
	period := uint64(1e9 / hz)
	// A pool of walks, three for every four samples, drawn evenly: about 55% of the samples
	// are of a stack of their own (at 300,000 samples, 166,000 distinct stacks).
	pool := make([][]uint64, max(n*3/4, 1))
	path := make([]uint64, 0, 32)
	for i := range pool {
		depth := 6 + rng.IntN(25)
		fn := uint64(0) // main
		path = append(path[:0], fn)
		for d := 1; d < depth; d++ {
			// The usual callees: 0-3 (geometric); now and then any of 40.
			c := uint64(math.Min(rng.ExpFloat64()*1.2, 3))
			if rng.IntN(4) == 0 {
				c = uint64(rng.IntN(40))
			}
			fn = (fn*2654435761 + c*40503 + uint64(d)) % 5000
			path = append(path, fn)
		}
		chain := make([]uint64, 0, len(path)+1)
		chain = append(chain, ^uint64(511))   // PERF_CONTEXT_USER
		for j := len(path) - 1; j >= 0; j-- { // leaf first
			chain = append(chain, path[j]<<8|16)
		}
		pool[i] = chain
	}
	r := agg.NewRun()
	for i := range n {
		tid := uint32(100 + i%2)
		r.AddSample(100, tid, uint32(tid%2), 1e9+uint64(i)*period, 0, pool[rng.IntN(len(pool))])
	}
	r.Resolve(Names{})
	return r.Profile(nil)
}
