package views

import (
	"fmt"
	"github.com/stax-profiler/stax/internal/testutil/callgraph"
	"sync"

	"github.com/stax-profiler/stax/internal/agg"
)

// The run model's test fixtures (internal/agg's run_test.go and bench_test.go), for views
// computed from runs built sample by sample: a resolver that names frames from their
// addresses, and synthetic call graphs.

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
)

func addr(fid int, off uint64) uint64 { return textBase + uint64(fid)*funcSize + off }

// fakeResolver names frames deterministically from addresses.
type fakeResolver struct {
	mu      sync.Mutex
	version uint64
	frames  []agg.Frame // fid -> frame
	calls   int
}

func newFakeResolver(nframes int) *fakeResolver {
	r := &fakeResolver{version: 1, frames: make([]agg.Frame, nframes)}
	for i := range r.frames {
		img := "/usr/bin/app"
		if i%3 == 2 {
			img = "/usr/lib/libfoo.so"
		}
		r.frames[i] = agg.Frame{Func: fmt.Sprintf("fn%04d", i), Image: img, Kind: agg.KindUser}
	}
	return r
}

func (r *fakeResolver) Version() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.version
}

func (r *fakeResolver) Resolve(pid uint32, t uint64, chain []uint64, out []agg.Site) ([]agg.Site, int, uint64, int) {
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
		var f agg.Frame
		var m agg.Mapping
		switch {
		case a >= lateBase && version >= lateVersion:
			f = agg.Frame{Func: fmt.Sprintf("jit_%x", a&^0xf), Image: "//anon", Kind: agg.KindJIT}
			m = agg.Mapping{Pid: pid, File: "[jit]"}
		case a >= lateBase:
			f = agg.Frame{Func: "[unknown]", Image: "//anon", Kind: agg.KindUnknown}
			unresolved++
		case a >= textBase && int((a-textBase)/funcSize) < len(r.frames):
			f = r.frames[(a-textBase)/funcSize]
			m = agg.Mapping{Pid: pid, Start: textBase, Limit: textBase + uint64(len(r.frames))*funcSize, File: f.Image}
		default:
			f = agg.Frame{Func: "[unknown]", Kind: agg.KindUnknown}
			unresolved++
		}
		out = append(out, agg.Site{Frame: f, Addr: at, Mapping: m})
	}
	leafFunc := -1
	if len(out) > start && out[start].Frame.Kind != agg.KindUnknown {
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

const (
	benchDepth   = callgraph.Depth
	benchThreads = 4
	benchPid     = 4242
)
