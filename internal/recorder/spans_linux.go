package recorder

import (
	"github.com/stax-profiler/stax/internal/perfevent"
	"github.com/stax-profiler/stax/internal/spans"
)

// Mark drops a marker named name into the run (stax mark), at time at (CLOCK_MONOTONIC
// ns, when the command ran) or now when at is 0 or not between the run's start and now.
// It returns the marker's time.
func (r *Recorder) Mark(name string, at uint64) uint64 {
	now := perfevent.MonotonicNow()
	if at == 0 || at > now || at < r.meta.StartNs {
		at = now
	}
	src := r.spans.Source(spans.KindMark, 0, "")
	r.spans.Add(spans.Span{Name: name, Pid: uint32(r.meta.Pid), Start: at, End: at, Source: src})
	return at
}
