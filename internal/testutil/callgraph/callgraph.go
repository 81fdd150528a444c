// Package callgraph makes the synthetic call stacks that the run model's and the views'
// tests and benchmarks record: raw user callchains, as perf gives them, through a call graph
// in which every function calls a few others (so callers near the root are shared, as in
// real programs), and sample counts drawn from them with a skewed (Zipf) distribution. It
// names no frame: the tests' resolvers name TextBase + fid*FuncSize + offset as frame fid.
package callgraph

import (
	"math/rand/v2"

	"github.com/stax-profiler/stax/internal/perfrecord"
)

const (
	// TextBase and FuncSize lay the synthetic functions out: function fid spans
	// [TextBase + fid*FuncSize, TextBase + (fid+1)*FuncSize).
	TextBase = 0x400000
	FuncSize = 0x40
	// Depth is the frames of each stack Stacks makes; Fanout how many functions each calls.
	Depth  = 20
	Fanout = 4
)

// Addr is the address off bytes into function fid.
func Addr(fid int, off uint64) uint64 { return TextBase + uint64(fid)*FuncSize + off }

// Mix64 scrambles x (a hash's finalizer): the call graph's edges.
func Mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// Stacks returns n distinct raw user callchains (context marker, then Depth addresses,
// leaf first) over nframes functions. Each address is its function's start plus a call-site
// offset, so one function appears at several addresses, as return addresses do.
func Stacks(n, nframes int, seed uint64) [][]uint64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	seen := make(map[[Depth]uint16]bool, n)
	out := make([][]uint64, 0, n)
	for len(out) < n {
		var path [Depth]uint16 // root first
		f := 0
		for lvl := range path {
			if lvl > 0 {
				k := uint64(rng.IntN(Fanout))
				f = int(Mix64(uint64(f)*131+uint64(lvl)*7919+k) % uint64(nframes))
			}
			path[lvl] = uint16(f)
		}
		if seen[path] {
			continue
		}
		seen[path] = true
		chain := make([]uint64, 0, Depth+1)
		chain = append(chain, perfrecord.ContextUser)
		for lvl := Depth - 1; lvl >= 0; lvl-- {
			chain = append(chain, Addr(int(path[lvl]), uint64(rng.IntN(FuncSize/4))*4))
		}
		out = append(out, chain)
	}
	return out
}

// Skewed returns count stack indices in [0, n) drawn with a Zipf distribution.
func Skewed(count, n int, seed uint64) []uint32 {
	z := rand.NewZipf(rand.New(rand.NewPCG(seed, 9)), 1.1, 4, uint64(n-1))
	out := make([]uint32, count)
	for i := range out {
		out[i] = uint32(z.Uint64())
	}
	return out
}
