package query

import (
	"fmt"
	"strings"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/tracefmt"
)

// WeightView is run, a view of one tracepoint event (EventView: named event), with each
// entry counting the sum of field over its samples kept with their fields (store.Run.Traces)
// in window w, rather than its samples: top and flame then weigh functions by what the
// tracepoint said (the bytes a write asked for, the sectors a block request moved). Only
// the samples the run kept count (the last of them: api.Weight says how many were let
// go); negative values count as 0 and are counted. The window is applied here, to the
// kept samples' times: the view answered over the run returned is its whole.
func WeightView(run *store.Run, event, field string, w Window) (*store.Run, *api.Weight, error) {
	i, err := run.Meta.EventIndex(event)
	if err != nil {
		return nil, nil, noMatch("%v (stax status lists them)", err)
	}
	var tr *store.TraceEvent
	for k := range run.Traces {
		if run.Traces[k].Event == uint32(i) {
			tr = &run.Traces[k]
		}
	}
	if tr == nil {
		return nil, nil, notRecorded("--weight %s: run %s keeps no fields of its event %s: only tracepoints' samples keep them (stax record -e SYS:NAME, as root; --event picks one)", field, run.Meta.ID, run.Meta.Events[i].Name)
	}
	format, err := tracefmt.Parse(tr.Format)
	if err != nil {
		return nil, nil, fmt.Errorf("event %s: %w", run.Meta.Events[i].Name, err)
	}
	f, ok := format.Field(field)
	if !ok || f.Kind != tracefmt.Int {
		var numbers []string
		for _, g := range format.Fields {
			if g.Kind == tracefmt.Int && !g.Common() {
				numbers = append(numbers, g.Name)
			}
		}
		what := "has no field"
		if ok {
			what = "has no number in field"
		}
		return nil, nil, noMatch("--weight: %s %s %s; its numbers are %s (stax samples --event %s shows them)", run.Meta.Events[i].Name, what, field, strings.Join(numbers, ", "), run.Meta.Events[i].Name)
	}
	from, to := uint64(0), ^uint64(0)
	if !w.IsAll() {
		if w.Span != "" {
			return nil, nil, fmt.Errorf("--weight takes --from and --to, not --span")
		}
		if from, to, err = w.bounds(run); err != nil {
			return nil, nil, err
		}
	}
	p := &run.Profile
	sums := make([]uint64, len(p.Entries))
	desc := &api.Weight{Field: field, Dropped: tr.Dropped}
	for _, s := range tr.Samples {
		if s.Time < from || s.Time >= to || int(s.Key) >= len(p.KeyEntry) {
			continue
		}
		e := p.KeyEntry[s.Key]
		if e < 0 || int(e) >= len(sums) {
			continue
		}
		v, ok := f.Decode(s.Raw)
		if !ok {
			desc.Skipped++
			continue
		}
		if f.Signed && v.Int() < 0 {
			desc.Skipped++
			continue
		}
		desc.Samples++
		sums[e] += v.Num
		desc.Sum += v.Num
	}
	q := *p
	q.Entries = make([]agg.Entry, 0, len(p.Entries))
	index := make([]int32, len(p.Entries))
	for j, e := range p.Entries {
		index[j] = -1
		if sums[j] == 0 {
			continue
		}
		index[j] = int32(len(q.Entries))
		e.Count, e.Counters = sums[j], nil
		q.Entries = append(q.Entries, e)
	}
	// The view has no samples over time: the window was applied above.
	q.Series, q.KeyEntry = agg.Series{}, nil
	out := *run
	out.Profile = q
	return &out, desc, nil
}

// weighable says whether a view can weigh a tracepoint's field: not one of time, nor
// top by process.
func weighable(time, byProcess bool) error {
	switch {
	case time:
		return fmt.Errorf("--weight weighs a tracepoint's samples by a field: it does not go with --off-cpu, --wall or --runnable")
	case byProcess:
		return fmt.Errorf("--weight does not go with --by process yet")
	}
	return nil
}

// weightWindow describes the window a weighed view applied (WeightView), as views
// describe theirs; nil for the whole run.
func weightWindow(run *store.Run, w Window) *api.Window {
	if w.IsAll() {
		return nil
	}
	from, to, err := w.bounds(run)
	if err != nil {
		return nil
	}
	start := runStart(run)
	return &api.Window{FromSec: secs(from, start), ToSec: secs(to, start)}
}
