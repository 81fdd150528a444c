package query

import (
	"encoding/json"
	"fmt"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/tracefmt"
)

// AnswerSamples answers a samples request: the samples of a tracepoint event kept with
// their fields (store.Run.Traces), the last N of those in the window and of the process
// asked for, oldest first, each with its thread, its stack's functions and its fields.
func AnswerSamples(run *store.Run, r api.SamplesRequest) (api.Samples, error) {
	if r.N < 0 {
		return api.Samples{}, fmt.Errorf("-n must be 0 (all) or more, not %d", r.N)
	}
	if r.Window.Span != "" {
		return api.Samples{}, fmt.Errorf("--span does not select samples of a tracepoint; use --from and --to")
	}
	i, err := run.Meta.EventIndex(r.Event)
	if err != nil {
		return api.Samples{}, noMatch("%v (stax status lists them)", err)
	}
	var tr *store.TraceEvent
	for k := range run.Traces {
		if run.Traces[k].Event == uint32(i) {
			tr = &run.Traces[k]
		}
	}
	if tr == nil {
		return api.Samples{}, notRecorded("run %s keeps no fields of %s: only tracepoints' samples keep them (stax record -e SYS:NAME, as root)", run.Meta.ID, r.Event)
	}
	format, err := tracefmt.Parse(tr.Format)
	if err != nil {
		return api.Samples{}, fmt.Errorf("event %s: %w", r.Event, err)
	}
	out := api.Samples{Schema: api.Schema, Run: run.Meta.ID, State: api.StateOf(run.Meta), Event: r.Event,
		Kept: len(tr.Samples), Cap: tr.Cap, Dropped: tr.Dropped, StartNs: runStart(run), Samples: []api.TraceSample{}}
	from, to := uint64(0), ^uint64(0)
	if r.Window.From != "" || r.Window.To != "" {
		w := Window{From: r.Window.From, To: r.Window.To}
		if from, to, err = w.bounds(run); err != nil {
			return api.Samples{}, err
		}
	}
	// The stacks, rewritten by the transform (KeyEntry follows the entries; -1: dropped).
	p := &run.Profile
	if !r.Transform.IsZero() {
		tp, _, err := ApplyTransform(run, r.Transform)
		if err != nil {
			return api.Samples{}, err
		}
		p = &tp.Profile
	}
	entry := func(key uint32) int32 {
		if int(key) >= len(p.KeyEntry) {
			return -1
		}
		if e := p.KeyEntry[key]; e >= 0 && int(e) < len(p.Entries) && int(p.Entries[e].Stack) < len(p.Stacks) {
			return e
		}
		return -1
	}
	var picked []int
	for k, s := range tr.Samples {
		if s.Time < from || s.Time >= to || r.Pid != 0 && s.Pid != r.Pid || r.Tid != 0 && s.Tid != r.Tid {
			continue
		}
		if !r.Transform.IsZero() && entry(s.Key) < 0 {
			continue
		}
		picked = append(picked, k)
	}
	out.Matched = len(picked)
	if r.N > 0 && len(picked) > r.N {
		picked = picked[len(picked)-r.N:]
	}
	names := make(map[uint32]string, len(p.Threads))
	for _, t := range p.Threads {
		names[t.Tid] = t.Name
	}
	var frames []uint32
	var vals []tracefmt.Value
	for _, k := range picked {
		s := tr.Samples[k]
		ts := api.TraceSample{TimeNs: s.Time, Pid: s.Pid, Tid: s.Tid, Comm: names[s.Tid], Stack: []string{}, Fields: api.FieldValues{}}
		if e := entry(s.Key); e >= 0 {
			frames = p.AppendFrames(frames[:0], p.Entries[e].Stack)
			for _, f := range frames {
				if int(f) < len(p.Frames) {
					ts.Stack = append(ts.Stack, p.Frames[f].Func)
				}
			}
		}
		if len(ts.Stack) > 0 {
			ts.Func = ts.Stack[0]
		}
		vals = format.Decode(s.Raw, false, vals[:0])
		for _, v := range vals {
			b, err := json.Marshal(v.Any())
			if err != nil {
				continue
			}
			ts.Fields = append(ts.Fields, api.FieldValue{Name: v.Name, Value: b})
		}
		out.Samples = append(out.Samples, ts)
	}
	return out, nil
}
