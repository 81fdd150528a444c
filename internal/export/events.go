package export

import (
	"math"
	"slices"

	"github.com/google/pprof/profile"

	"github.com/stax-profiler/stax/internal/store"
)

// eventValue is the value type of a run's samples when its event (Meta.Event, the one
// chosen of a run of several: query.EventView) counts something other than time
// (page-faults, context-switches, a tracepoint): EVENT/count, each sample standing for
// the event's weight (its period, or the mean of its samples' periods). ok is false for
// cpu-clock, task-clock, cycles and runs that list no events: their samples are CPU time.
func eventValue(m *store.Meta) (vt *profile.ValueType, per int64, ok bool) {
	switch m.Event {
	case "", "cpu-clock", "task-clock", "cycles":
		return nil, 0, false
	}
	for _, e := range m.Events {
		if e.Name == m.Event {
			return &profile.ValueType{Type: e.Name, Unit: "count"}, eventWeight(e), true
		}
	}
	return nil, 0, false
}

// eventWeight is what one sample of e stands for, rounded: at least 1.
func eventWeight(e store.Event) int64 {
	return max(int64(math.Round(e.Weight())), 1)
}

// nsEvent says whether an event counts nanoseconds (its samples' periods are time).
func nsEvent(name string) bool { return name == "cpu-clock" || name == "task-clock" }

// otherEventType is the value type of an event of a run of several other than the first:
// cpu/nanoseconds for cpu-clock, task-clock/nanoseconds, EVENT/count for the others.
func otherEventType(name string) *profile.ValueType {
	switch {
	case name == "cpu-clock":
		return &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}
	case nsEvent(name):
		return &profile.ValueType{Type: name, Unit: "nanoseconds"}
	}
	return &profile.ValueType{Type: name, Unit: "count"}
}

// counterType is the value type of a counter read with each sample: NAME/nanoseconds for
// cpu-clock and task-clock, NAME/count for the others.
func counterType(name string) *profile.ValueType {
	if nsEvent(name) {
		return &profile.ValueType{Type: name, Unit: "nanoseconds"}
	}
	return &profile.ValueType{Type: name, Unit: "count"}
}

// OnlyEvent is run with the samples of its event number i alone, as a run of that one
// event: its meta lists that event alone (and its counters only if it is the first, whose
// samples they are read with). left is the number of samples of the other events. A run
// that lists at most one event is run itself.
func OnlyEvent(run *store.Run, i int) (out *store.Run, left uint64) {
	events := run.Meta.Events
	if len(events) <= 1 || i < 0 || i >= len(events) {
		return run, 0
	}
	p, left := run.Profile.OnlyEvent(uint32(i))
	for j := range p.Entries {
		e := &p.Entries[j]
		e.Event = 0
		if i != 0 {
			e.Counters = nil
		}
	}
	r := *run
	r.Profile = *p
	r.Meta.Event = events[i].Name
	r.Meta.Events = []store.Event{events[i]}
	if i != 0 {
		r.Meta.Counters = nil
	} else {
		r.Meta.Counters = slices.Clone(run.Meta.Counters)
	}
	return &r, left
}
