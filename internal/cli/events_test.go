package cli

import (
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
)

func TestCountersTextMarksMultiplexing(t *testing.T) {
	plain := []api.CounterCount{{Name: "cycles", Count: 1000, Time: &api.CounterTime{EnabledNs: 1000, RunningNs: 1000, Pairs: 3}}}
	if got := countersText(plain); got != "cycles 1,000" {
		t.Errorf("not multiplexed: %q", got)
	}
	unmeasured := []api.CounterCount{{Name: "cycles", Count: 1000}}
	if got := countersText(unmeasured); got != "cycles 1,000" {
		t.Errorf("not measured: %q", got)
	}
	mux := []api.CounterCount{
		{Name: "cycles", Count: 600, Time: &api.CounterTime{EnabledNs: 1000, RunningNs: 600, Pairs: 3}},
		{Name: "instructions", Count: 1200, Time: &api.CounterTime{EnabledNs: 1000, RunningNs: 600, Pairs: 3}},
	}
	want := "cycles 600 (1,000 scaled), instructions 1,200 (2,000 scaled); multiplexed by the kernel: they counted 60.0% of the time (the samples too)"
	if got := countersText(mux); got != want {
		t.Errorf("multiplexed:\n got %q\nwant %q", got, want)
	}
	var b strings.Builder
	share := 0.6
	printTopCounters(&b, api.Top{Counters: []string{"cycles", "instructions"}, CountersMultiplexed: &share})
	if !strings.HasPrefix(b.String(), "counters multiplexed by the kernel: they counted 60.0% of the time") {
		t.Errorf("top's counters:\n%s", b.String())
	}
	b.Reset()
	printTopCounters(&b, api.Top{Counters: []string{"cycles", "instructions"}})
	if strings.Contains(b.String(), "multiplexed") {
		t.Errorf("top's counters, not multiplexed:\n%s", b.String())
	}
}
