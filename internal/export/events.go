package export

import (
	"math"

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
			return &profile.ValueType{Type: e.Name, Unit: "count"}, max(int64(math.Round(e.Weight())), 1), true
		}
	}
	return nil, 0, false
}
