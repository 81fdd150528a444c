package query

import (
	"fmt"
	"strings"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/spans"
	"github.com/stax-profiler/stax/internal/store"
)

// maxTimelineSpans bounds the spans and markers a timeline lists.
const maxTimelineSpans = 10000

// timelineSpans lists the spans that overlap [from, to) and the markers inside it (of
// thread tid alone when tid is not 0), each span in a lane of its thread: the first lane
// free when it starts, so that a span inside another lies below it.
func timelineSpans(run *store.Run, from, to, start uint64, tid uint32) api.TimelineSpans {
	var out api.TimelineSpans
	if run.SpansErr != nil {
		out.SpansError = run.SpansErr.Error()
	}
	if run.Spans.Len() == 0 {
		return out
	}
	sp := run.Spans.Slice()
	spans.Sort(sp)
	laneEnds := map[uint32][]uint64{} // per thread, the end of each lane's last span
	for i := range sp {
		s := &sp[i]
		if tid != 0 && s.Tid != tid {
			continue
		}
		if s.End == s.Start {
			if s.Start < from || s.Start >= to {
				continue
			}
			if len(out.Spans)+len(out.Markers) >= maxTimelineSpans {
				out.Omitted++
				continue
			}
			out.Markers = append(out.Markers, api.TimelineMarker{Name: s.Name, Pid: s.Pid, Tid: s.Tid, AtSec: secs(s.Start, start)})
			continue
		}
		ends := laneEnds[s.Tid]
		lane := 0
		for lane < len(ends) && ends[lane] > s.Start {
			lane++
		}
		if lane == len(ends) {
			ends = append(ends, 0)
		}
		ends[lane] = s.End
		laneEnds[s.Tid] = ends
		if s.End <= from || s.Start >= to {
			continue
		}
		if len(out.Spans)+len(out.Markers) >= maxTimelineSpans {
			out.Omitted++
			continue
		}
		out.Spans = append(out.Spans, api.TimelineSpan{Name: s.Name, Pid: s.Pid, Tid: s.Tid,
			StartSec: secs(s.Start, start), EndSec: secs(s.End, start), Lane: lane})
	}
	return out
}

// withSpans widens the timeline's [from, to) over the run's spans and markers, on the
// sides the window leaves open, within the recording (from its start to its end, or twice
// the samples' time while it runs): a marker made after the last sample (or a span before
// the first) is still drawn, one with a wild time is not.
func withSpans(run *store.Run, w Window, from, to uint64) (uint64, uint64) {
	start := runStart(run)
	limit := to + (to - from)
	if m := &run.Meta; m.StartNs != 0 && !m.Start.IsZero() && m.End.After(m.Start) {
		limit = max(to, m.StartNs+uint64(m.End.Sub(m.Start))+1)
	}
	for s := range run.Spans.All() {
		if s.End < start || s.End > limit {
			continue
		}
		if w.From == "" && s.Start < from {
			from = max(s.Start, start)
		}
		if w.To == "" && s.End >= to {
			to = s.End + 1
		}
	}
	return from, to
}

// MarkPrefix starts a --from or --to that names a marker or span instead of seconds.
const MarkPrefix = "mark:"

// anchor resolves "mark:NAME" to the time of the first marker or span named NAME: its
// start, or for --to (end set) its end.
func anchor(run *store.Run, flag, s string, end bool) (uint64, error) {
	name := strings.TrimPrefix(s, MarkPrefix)
	var first *spans.Span
	for sp := range run.Spans.All() {
		if sp.Name == name && (first == nil || sp.Start < first.Start) {
			first = &sp
		}
	}
	if first == nil {
		return 0, fmt.Errorf("%w: --%s %q: no marker or span named %q (stax spans lists them)", ErrNoSpan, flag, s, name)
	}
	if end {
		return first.End, nil
	}
	return first.Start, nil
}
