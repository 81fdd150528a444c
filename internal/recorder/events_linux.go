package recorder

import (
	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/perfrecord"
	"sync/atomic"

	"github.com/stax-profiler/stax/internal/perfevent"
	"github.com/stax-profiler/stax/internal/store"
)

// eventCounts counts, per event sampled (Options.Events), the samples added to the run
// and the events they stand for (the sum of their periods).
type eventCounts struct {
	samples, events [perfevent.MaxEvents]atomic.Uint64
}

func (c *eventCounts) count(event, period uint32) {
	if int(event) >= len(c.samples) {
		return
	}
	c.samples[event].Add(1)
	c.events[event].Add(uint64(period))
}

// traceSamples is how many samples of each tracepoint keep their fields
// (Options.TraceSamples).
func (r *Recorder) traceSamples() int {
	if r.opts.TraceSamples > 0 {
		return r.opts.TraceSamples
	}
	return agg.DefaultTraceSamples
}

// defaultEvents says whether events ask for what stax samples without -e.
func defaultEvents(events []perfevent.EventSpec) bool {
	return len(events) == 0 || len(events) == 1 && events[0].IsDefault()
}

// eventsMeta lists the events sampled with their counts so far, for the run's meta.
func (r *Recorder) eventsMeta() []store.Event {
	specs := r.opts.Events
	if len(specs) == 0 {
		// The default event (cycles or cpu-clock), in frequency mode.
		if r.meta.Event == "" {
			return nil
		}
		specs = []perfevent.EventSpec{{Name: r.meta.Event}}
	}
	out := make([]store.Event, len(specs))
	for i, ev := range specs {
		out[i] = store.Event{Name: ev.Name, Period: ev.Period, Samples: r.ev.samples[i].Load(), Count: r.ev.events[i].Load()}
		if ev.Period == 0 {
			out[i].Freq = r.opts.Freq
			if ev.Freq > 0 {
				out[i].Freq = ev.Freq
			}
		}
	}
	return out
}

// eventWorkers tells the stack workers how to tell the events' samples apart: their
// event by id, and the samples of events with a fixed period, which carry none.
func (r *Recorder) eventWorkers(sess *perfevent.Session, cfg perfevent.Config) {
	st, _ := perfevent.SampleTypeFor(cfg)
	var traced uint32
	for i, ev := range cfg.Events {
		if ev.Tracepoint != "" && len(ev.TraceFormat) > 0 && i < 32 {
			traced |= 1 << i
			r.run.KeepTraces(uint32(i), r.traceSamples())
		}
	}
	for _, w := range r.in.workers {
		w.traced = traced
		if len(cfg.Events) > 1 {
			w.eventOf = sess.EventOf
		}
		switch {
		case st&perfrecord.SampleIdentifier != 0:
			w.fixed = sess.FixedPeriod
			w.fixedDec = w.dec
			w.fixedDec.SampleType &^= perfrecord.SamplePeriod
		case len(cfg.Events) == 1 && cfg.Events[0].Period > 0:
			w.onlyPeriod = cfg.Events[0].Period
		}
	}
}

// traces is what the run keeps of its tracepoints' samples, with their formats, for a
// snapshot (taken before its profile, so that the profile has their keys; a key not named
// yet leaves a sample without a stack).
func (r *Recorder) traces() []store.TraceEvent {
	rings := r.run.Traces()
	if len(rings) == 0 {
		return nil
	}
	out := make([]store.TraceEvent, 0, len(rings))
	for _, t := range rings {
		if int(t.Event) >= len(r.opts.Events) {
			continue
		}
		out = append(out, store.TraceEvent{Event: t.Event, Format: r.opts.Events[t.Event].TraceFormat, Cap: t.Cap, Dropped: t.Dropped, Samples: t.Samples})
	}
	return out
}
