package api

import (
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
		}
	}
	return st
}

// WaitCondition is what `stax wait` waits for.
type WaitCondition struct {
	Samples uint64
	Seconds float64
	Symbol  string
}
