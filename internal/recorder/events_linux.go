package recorder

import (
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
	for _, w := range r.in.workers {
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
