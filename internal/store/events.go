package store

import (
	"fmt"
	"strings"
)

// maxEvents bounds the events of a run (perfevent.MaxEvents, with room).
const maxEvents = 64

// Event is one event a run sampled (stax record -e EVENT,...), as its meta lists it.
type Event struct {
	Name string `json:"name"`
	// Period: a sample every Period events; else Freq samples a second, the kernel
	// choosing each sample's period.
	Period uint64 `json:"period,omitempty"`
	Freq   int    `json:"freq,omitempty"`
	// Samples counted, and Count the events they stand for: the sum of their periods
	// (Period times Samples for a fixed period; nanoseconds for cpu-clock and task-clock).
	Samples uint64 `json:"samples"`
	Count   uint64 `json:"count"`
}

// Weight is what one of the event's samples stands for: its period, or in frequency
// mode the mean of its samples' periods (0 when it has none).
func (e Event) Weight() float64 {
	if e.Period > 0 {
		return float64(e.Period)
	}
	if e.Samples == 0 {
		return 0
	}
	return float64(e.Count) / float64(e.Samples)
}

// EventNames lists the run's events by name: Meta.Event for a run that lists none.
func (m *Meta) EventNames() []string {
	if len(m.Events) == 0 {
		if m.Event == "" {
			return nil
		}
		return []string{m.Event}
	}
	out := make([]string, len(m.Events))
	for i, e := range m.Events {
		out[i] = e.Name
	}
	return out
}

// EventIndex is the index of the event named name in the run's events ("": the first);
// an error names the run's events when it has no such event.
func (m *Meta) EventIndex(name string) (int, error) {
	if name == "" {
		return 0, nil
	}
	names := m.EventNames()
	for i, n := range names {
		if n == name {
			return i, nil
		}
	}
	if len(names) == 0 {
		return 0, fmt.Errorf("run %s has no event named %q: it lists none", m.ID, name)
	}
	return 0, fmt.Errorf("run %s has no event %q: it sampled %s", m.ID, name, strings.Join(names, ", "))
}

// maxCounters bounds the counters read with each sample (perfrecord.MaxReadValues).
const maxCounters = 32

// Counter is one counter read with each sample (stax record --counters), as the meta
// lists it.
type Counter struct {
	Name string `json:"name"`
	// Count is what the samples read: the sum of each thread's counts between its
	// samples.
	Count uint64 `json:"count"`
	// Time is how long the counters' groups were enabled and counting (nil: not measured,
	// no thread had two samples in a row on one CPU).
	Time *CounterTime `json:"time,omitempty"`
}

// CounterTime is the time the counters' groups were enabled and counting, summed between
// two samples in a row of a thread on one CPU (where its per-CPU group was enabled only
// while it ran there). Counting less than enabled means the kernel multiplexed the groups
// with others on the PMU: Count is then what was counted while they counted, as the samples
// were taken only then.
type CounterTime struct {
	EnabledNs uint64 `json:"enabled_ns"`
	RunningNs uint64 `json:"running_ns"`
	Pairs     uint64 `json:"pairs"` // the pairs of samples summed
}

// checkEvents says whether every entry's event is one the meta lists, and its counters
// those the meta lists.
func checkEvents(r *Run) error {
	n := max(len(r.Meta.Events), 1)
	if len(r.Meta.Events) > maxEvents {
		return fmt.Errorf("the run lists %d events, at most %d", len(r.Meta.Events), maxEvents)
	}
	for i, e := range r.Profile.Entries {
		if int(e.Event) >= n {
			return fmt.Errorf("entry %d names event %d of %d", i, e.Event, n)
		}
		if len(e.Counters) != 0 && len(e.Counters) != len(r.Meta.Counters) {
			return fmt.Errorf("entry %d has %d counters, the run %d", i, len(e.Counters), len(r.Meta.Counters))
		}
	}
	return nil
}
