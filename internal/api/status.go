package api

import (
	"sort"
	"strings"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/store"
)

// anonImage is the image of anonymous executable memory that no JIT source describes
// (resolve.ImageAnon).
const anonImage = "[anon]"

// StatusOf summarizes a saved or live run.
func StatusOf(run *store.Run) Status {
	st := Status{Schema: Schema, State: StateOf(run.Meta), Meta: run.Meta, JIT: run.JIT,
		Threads: len(run.Profile.Threads), DistinctStacks: len(run.Profile.Stacks)}
	if st.JIT == nil {
		st.JIT = []store.JITSource{}
	}
	if !run.Meta.End.IsZero() {
		st.ElapsedSec = run.Meta.End.Sub(run.Meta.Start).Seconds()
	}
	p := &run.Profile
	var unsym map[string]uint64
	for _, e := range p.Entries {
		s := p.Stacks[e.Stack]
		if len(s) == 0 {
			continue
		}
		f := p.Frames[s[0]]
		switch {
		case f.Kind == agg.KindJIT && strings.HasPrefix(f.Func, "[unknown]"):
			st.JITSamples += e.Count
			st.JITUnnamed += e.Count
			st.UnknownSamples += e.Count
		case f.Kind == agg.KindJIT:
			st.JITSamples += e.Count
		case f.Image == anonImage: // runs saved before unnamed JIT frames had the jit kind
			st.JITSamples += e.Count
			st.JITUnnamed += e.Count
			st.UnknownSamples += e.Count
		case f.Kind == agg.KindUnknown:
			st.UnknownSamples += e.Count
		case isImageOffset(f): // a function range with no name
			st.UnknownSamples += e.Count
		}
		if isImageOffset(f) {
			if unsym == nil {
				unsym = map[string]uint64{}
			}
			unsym[f.Image] += e.Count
		}
	}
	for img, n := range unsym {
		st.Unsymbolized = append(st.Unsymbolized, ImageSamples{Image: img, Samples: n})
	}
	sort.Slice(st.Unsymbolized, func(i, j int) bool {
		a, b := st.Unsymbolized[i], st.Unsymbolized[j]
		return a.Samples > b.Samples || a.Samples == b.Samples && a.Image < b.Image
	})
	return st
}

// isImageOffset says whether a frame stands for native code no symbol names: a row named
// image+0xOFF after an address, or after the start of the function range holding it.
func isImageOffset(f agg.Frame) bool {
	return f.Image != "" && f.Kind != agg.KindJIT && f.Image != anonImage && strings.HasPrefix(f.Func, f.Image+"+0x")
}

// WaitCondition is what `stax wait` waits for.
type WaitCondition struct {
	Samples uint64
	Seconds float64
	Symbol  string
}
