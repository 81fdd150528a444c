package cli

import (
	"errors"
	"testing"

	"github.com/stax-profiler/stax/internal/perfevent"
)

// Without --counters, cycles and instructions are read where the kernel opens both, for a
// recording of the default event with DWARF stacks; never with -a, frame-pointer stacks,
// -e, --counters given, or where either cannot be opened.
func TestDefaultCounters(t *testing.T) {
	opens := func(*perfevent.EventSpec) error { return nil }
	noPMU := func(ev *perfevent.EventSpec) error {
		if ev.Name == "instructions" {
			return &perfevent.NoPMUError{Event: ev.Name}
		}
		return nil
	}
	refused := func(*perfevent.EventSpec) error { return errors.New("permission denied") }
	cpuClock := []perfevent.EventSpec{{Name: "cpu-clock"}}
	for _, c := range []struct {
		name       string
		counters   string
		callGraph  string
		systemWide bool
		events     []perfevent.EventSpec
		open       func(*perfevent.EventSpec) error
		want       []string
	}{
		{"a PMU", "", "dwarf", false, nil, opens, []string{"cycles", "instructions"}},
		{"no PMU", "", "dwarf", false, nil, noPMU, nil},
		{"not allowed", "", "dwarf", false, nil, refused, nil},
		{"-a", "", "dwarf", true, nil, opens, nil},
		{"frame pointers", "", "fp", false, nil, opens, nil},
		{"-e", "", "dwarf", false, cpuClock, opens, nil},
		{"--counters given", "task-clock", "dwarf", false, nil, opens, nil},
		{"--counters none", "none", "dwarf", false, nil, opens, nil},
	} {
		got := defaultCounters(c.counters, c.callGraph, c.systemWide, c.events, c.open)
		var names []string
		for _, ev := range got {
			names = append(names, ev.Name)
		}
		if len(names) != len(c.want) || len(names) > 0 && (names[0] != c.want[0] || names[1] != c.want[1]) {
			t.Errorf("%s: %v, want %v", c.name, names, c.want)
		}
	}
	// --counters none reads none.
	f := eventFlags{counters: "none"}
	if evs, err := f.counterList(func(string, ...any) {}); err != nil || evs != nil {
		t.Errorf("--counters none: %v, %v", evs, err)
	}
}
