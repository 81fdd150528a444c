package recorder

import (
	"slices"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/perfevent"
)

// read is one sample's group read of two counters: their values, the times enabled and
// running, the leader's id.
func read(a, b, enabled, running, leader uint64) []uint64 {
	return []uint64{a, b, enabled, running, leader}
}

func TestCounterDeltasPerThreadAndCPU(t *testing.T) {
	c := counterTrack{n: 2}
	steps := []struct {
		tid, cpu uint32
		read     []uint64
		want     []uint64
	}{
		{1, 0, read(100, 10, 1000, 1000, 7), []uint64{100, 10}}, // the group's first read: since it opened
		{1, 0, read(250, 30, 2000, 2000, 7), []uint64{150, 20}},
		{1, 1, read(40, 4, 2500, 500, 8), []uint64{40, 4}},      // another CPU's group
		{2, 0, read(5, 1, 100, 100, 9), []uint64{5, 1}},         // another thread
		{1, 0, read(300, 35, 3000, 2400, 7), []uint64{50, 5}},   // back on CPU 0
		{1, 0, read(20, 2, 200, 200, 7), []uint64{20, 2}},       // a new thread with the same id
		{1, 0, read(120, 12, 1200, 1200, 7), []uint64{100, 10}}, // and its next sample
	}
	for i, s := range steps {
		if got := c.deltas(s.tid, s.cpu, s.read); !slices.Equal(got, s.want) {
			t.Errorf("step %d: deltas %v, want %v", i, got, s.want)
		}
	}
	if want := []uint64{465, 52}; !slices.Equal(c.sums, want) {
		t.Errorf("sums %v, want %v", c.sums, want)
	}
	// Only steps 1 and 6 follow a sample of the same thread on the same CPU's group: step 4
	// follows tid 1's sample on CPU 1, where it ran meanwhile (enabled counted that too).
	if c.enabled != 1000+1000 || c.running != 1000+1000 || c.paired != 2 {
		t.Errorf("enabled %d running %d over %d pairs, want 2000, 2000 over 2", c.enabled, c.running, c.paired)
	}
	m := c.meta([]perfevent.EventSpec{{Name: "task-clock"}, {Name: "page-faults"}})
	if m[0].Time == nil || m[0].Time.EnabledNs != 2000 || m[0].Time.Pairs != 2 || m[1].Time == nil {
		t.Errorf("meta %+v, want the times on each counter", m)
	}
}

func TestCounterDeltasSeeMultiplexing(t *testing.T) {
	c := counterTrack{n: 2}
	// A group that counts 60% of the time it is enabled, on one CPU.
	var enabled, running uint64
	for i := range 100 {
		enabled += 1_000_000
		running += 600_000
		c.deltas(3, 2, read(uint64(i)*1000, uint64(i)*2000, enabled, running, 11))
	}
	m := c.meta([]perfevent.EventSpec{{Name: "cycles"}, {Name: "instructions"}})
	tm := m[0].Time
	if tm == nil {
		t.Fatal("no times measured")
	}
	at := api.CounterTime{EnabledNs: tm.EnabledNs, RunningNs: tm.RunningNs, Pairs: tm.Pairs}
	if !at.Multiplexed() || at.Share() < 0.599 || at.Share() > 0.601 || tm.Pairs != 99 {
		t.Errorf("share %.3f over %d pairs (multiplexed %v), want 0.6 over 99, multiplexed", at.Share(), tm.Pairs, at.Multiplexed())
	}
	if v, ok := at.Scaled(m[0].Count); !ok || v != 99*1000*10/6 {
		t.Errorf("scaled %d (%v), want %d", v, ok, 99*1000*10/6)
	}
}
