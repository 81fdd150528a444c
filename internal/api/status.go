package api

import (
	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/store"
)

// StatusOf summarizes a saved or live run. A run read without its profile (its meta
// alone) is summarized from the summary its meta keeps.
func StatusOf(run *store.Run) Status {
	meta := run.Meta
	meta.Summary, meta.JITSources = nil, nil // the status's own fields hold them
	st := Status{Schema: Schema, State: StateOf(run.Meta), Meta: RunMetaOf(meta), JIT: JITSources(run.JIT), Events: EventCounts(run.Meta.Events), Traces: TraceEvents(run)}
	if st.JIT == nil {
		st.JIT = JITSources(run.Meta.JITSources)
	}
	if st.JIT == nil {
		st.JIT = []JITSource{}
	}
	if !run.Meta.End.IsZero() {
		st.ElapsedSec = run.Meta.End.Sub(run.Meta.Start).Seconds()
	}
	if st.State == StateIncomplete {
		st.Incomplete = IncompleteOf(run.Meta.ID, &run.Meta)
	}
	sum := agg.Summarize(&run.Profile)
	if p := &run.Profile; len(p.Entries) == 0 && len(p.Stacks) == 0 && run.Meta.Summary != nil {
		sum = *run.Meta.Summary
	}
	st.Threads, st.DistinctStacks = sum.Threads, sum.DistinctStacks
	st.JITSamples, st.JITUnnamed, st.UnknownSamples = sum.JITSamples, sum.JITUnnamed, sum.UnknownSamples
	st.Unsymbolized = ImageSamplesOf(sum.Unsymbolized)
	return st
}

// WaitCondition is what `stax wait` waits for.
type WaitCondition struct {
	Samples uint64
	Seconds float64
	Symbol  string
}

// PushStatus is how pushing the live run's profile to a fleet store goes (stax record
// --push).
type PushStatus struct {
	Target    string  `json:"target"`
	EverySec  float64 `json:"every_sec"`
	Pushed    uint64  `json:"pushed"`  // windows the endpoint accepted
	Queued    int     `json:"queued"`  // windows waiting on disk to be sent
	Failed    uint64  `json:"failed"`  // attempts that failed (each is retried unless refused)
	Dropped   uint64  `json:"dropped"` // windows lost: the queue was full, or the endpoint refused them
	LastError string  `json:"last_error,omitempty"`
	// LeftOut counts the samples not sent because the endpoint does not take their event
	// (Pyroscope: those of events other than the first).
	LeftOut uint64 `json:"left_out,omitempty"`
}
