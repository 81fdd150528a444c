package export

import (
	"slices"
	"sort"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/spans"
	"github.com/stax-profiler/stax/internal/store"
)

// spanSeg is a stretch of a thread's time whose innermost span is name.
type spanSeg struct {
	start, end uint64
	name       string
}

// innermost finds the innermost span a thread was inside at a time.
type innermost map[uint32][]spanSeg

// innermostSpans cuts each thread's spans (markers aside) into stretches named by the
// innermost span: the one that began last. A span that outlasts the one it began in is
// cut at that one's end.
func innermostSpans(sp spans.List) innermost {
	byTid := map[uint32][]spans.Span{}
	for s := range sp.All() {
		if s.End > s.Start {
			byTid[s.Tid] = append(byTid[s.Tid], s)
		}
	}
	out := innermost{}
	for tid, list := range byTid {
		slices.SortStableFunc(list, func(a, b spans.Span) int {
			switch {
			case a.Start != b.Start:
				return cmpU64(a.Start, b.Start)
			default:
				return cmpU64(b.End, a.End) // the outer first
			}
		})
		var segs []spanSeg
		emit := func(from, to uint64, name string) {
			if to > from {
				segs = append(segs, spanSeg{from, to, name})
			}
		}
		var stack []spans.Span
		var at uint64
		closeUntil := func(t uint64, all bool) {
			for len(stack) > 0 {
				top := stack[len(stack)-1]
				if !all && top.End > t {
					return
				}
				emit(max(at, top.Start), top.End, top.Name)
				at = max(at, top.End)
				stack = stack[:len(stack)-1]
			}
		}
		for _, s := range list {
			closeUntil(s.Start, false)
			if n := len(stack); n > 0 {
				emit(max(at, stack[n-1].Start), s.Start, stack[n-1].Name)
				s.End = min(s.End, stack[n-1].End)
			}
			at = s.Start
			stack = append(stack, s)
		}
		closeUntil(0, true)
		out[tid] = segs
	}
	return out
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// at returns the innermost span of thread tid at time t ("" outside spans).
func (ix innermost) at(tid uint32, t uint64) string {
	segs := ix[tid]
	i := sort.Search(len(segs), func(i int) bool { return segs[i].end > t })
	if i < len(segs) && segs[i].start <= t {
		return segs[i].name
	}
	return ""
}

// entrySpans holds an entry's samples by the innermost span they were taken in, found by
// the entry's thread, stack and leaf: a profile merged with off-CPU time (WallProfile)
// keeps the CPU entries' stacks but not their order.
type entrySpans map[entryKey]map[string]uint64

type entryKey struct {
	pid, tid, stack uint32
	leaf            uint64
}

// spanCounts counts the samples of run's entries by the innermost span they were taken
// in; nil when the run has no spans or no sample times.
func spanCounts(run *store.Run) entrySpans {
	p := &run.Profile
	if run.Spans.Len() == 0 || !p.HasTimes() {
		return nil
	}
	ix := innermostSpans(run.Spans)
	samples, err := samplesByTime(p)
	if err != nil {
		return nil
	}
	out := entrySpans{}
	for _, s := range samples {
		e := &p.Entries[s.entry]
		name := ix.at(e.Tid, s.time)
		if name == "" {
			continue
		}
		k := entryKey{e.Pid, e.Tid, e.Stack, e.Leaf}
		m := out[k]
		if m == nil {
			m = map[string]uint64{}
			out[k] = m
		}
		m[name] += uint64(s.weight)
	}
	return out
}

// of gives the span counts of entry e (nil: none).
func (es entrySpans) of(e agg.Entry) map[string]uint64 {
	if es == nil {
		return nil
	}
	return es[entryKey{e.Pid, e.Tid, e.Stack, e.Leaf}]
}

// addFirefoxMarkers adds the run's spans to the Firefox threads as UserTiming markers:
// intervals ("measure") for spans, instants ("mark") for markers, on the span's thread
// (else its process's main thread, else the first thread).
func addFirefoxMarkers(threads []fxThread, index map[threadKey]int, run *store.Run, base uint64) {
	if len(threads) == 0 {
		return
	}
	ms := func(t uint64) float64 { return (float64(t) - float64(base)) / 1e6 }
	for s := range run.Spans.All() {
		i, ok := index[threadKey{s.Pid, s.Tid}]
		if !ok {
			if i, ok = index[threadKey{s.Pid, s.Pid}]; !ok {
				i, ok = index[threadKey{uint32(run.Meta.Pid), uint32(run.Meta.Pid)}]
			}
		}
		t := &threads[i]
		name := cleanText(s.Name)
		m := &t.Markers
		m.Name = append(m.Name, t.str(name))
		m.Category = append(m.Category, 0)
		m.StartTime = append(m.StartTime, ms(s.Start))
		if s.End > s.Start {
			m.EndTime = append(m.EndTime, ms(s.End))
			m.Phase = append(m.Phase, 1) // interval
			m.Data = append(m.Data, map[string]any{"type": "UserTiming", "name": name, "entryType": "measure"})
		} else {
			m.EndTime = append(m.EndTime, nil)
			m.Phase = append(m.Phase, 0) // instant
			m.Data = append(m.Data, map[string]any{"type": "UserTiming", "name": name, "entryType": "mark"})
		}
		m.Length++
	}
}
