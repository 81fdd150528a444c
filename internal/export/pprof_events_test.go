package export

import (
	"bytes"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/store"
)

// eventsFixture is the fixture as a run of three events: cpu-clock (the first, at 1000
// Hz), page-faults (every 50: the page-fault stacks, entries 4 and 8) and
// context-switches (2 samples standing for 7 switches: entry 9), with the counters
// task-clock and page-faults read with the cpu-clock samples.
func eventsFixture(r *store.Run) *store.Run {
	r.Meta.Events = []store.Event{
		{Name: "cpu-clock", Freq: 1000, Samples: 1445, Count: 1_445_000_000},
		{Name: "page-faults", Period: 50, Samples: 13, Count: 650},
		{Name: "context-switches", Freq: 1000, Samples: 2, Count: 7},
	}
	r.Meta.Counters = []store.Counter{{Name: "task-clock"}, {Name: "page-faults"}}
	for i := range r.Profile.Entries {
		e := &r.Profile.Entries[i]
		switch i {
		case 4, 8:
			e.Event = 1
		case 9:
			e.Event = 2
		default:
			faults := uint64(i)
			if i == 3 { // mix faults its pages in
				faults = 1000
			}
			e.Counters = []uint64{e.Count*1_000_000 + uint64(i), faults}
		}
	}
	return r
}

func writeParse(t *testing.T, r *store.Run) *profile.Profile {
	t.Helper()
	var b bytes.Buffer
	if err := WritePprof(&b, r); err != nil {
		t.Fatal(err)
	}
	return parsePprof(t, b.Bytes())
}

func sampleTypes(p *profile.Profile) []string {
	var out []string
	for _, st := range p.SampleType {
		out = append(out, st.Type+"/"+st.Unit)
	}
	return out
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestPprofEvents: a run of several events has a value per event, each sample's in its
// own event's value and 0 in the others, and a value per counter.
func TestPprofEvents(t *testing.T) {
	r := eventsFixture(fixture())
	p := writeParse(t, r)
	want := []string{"samples/count", "cpu/nanoseconds", "page-faults/count", "context-switches/count",
		"task-clock/nanoseconds", "page-faults-counter/count"}
	if got := sampleTypes(p); !sameStrings(got, want) {
		t.Fatalf("sample types %v, want %v", got, want)
	}
	if p.DefaultSampleType != "cpu" || p.PeriodType.Type != "cpu" || p.PeriodType.Unit != "nanoseconds" || p.Period != 1_000_000 {
		t.Errorf("default %q, period %v %d", p.DefaultSampleType, p.PeriodType, p.Period)
	}
	if i, err := p.SampleIndexByName("page-faults"); err != nil || i != 2 {
		t.Errorf("-sample_index=page-faults: %d, %v", i, err)
	}
	col := map[string]int{"cpu-clock": 1, "page-faults": 2, "context-switches": 3}
	per := map[string]int64{"cpu-clock": 1_000_000, "page-faults": 50, "context-switches": 4} // 7/2 rounded
	sums := make([]int64, len(p.SampleType))
	byEvent := map[string]int64{}
	faultsIn := map[string]int64{} // page-faults by leaf function
	for _, s := range p.Sample {
		ev := s.Label["event"]
		if len(ev) != 1 || col[ev[0]] == 0 {
			t.Fatalf("sample labelled event %v", ev)
		}
		byEvent[ev[0]] += s.Value[0]
		for name, c := range col {
			want := int64(0)
			if name == ev[0] {
				want = s.Value[0] * per[name]
			}
			if s.Value[c] != want {
				t.Errorf("%s sample: %s value %d, want %d", ev[0], name, s.Value[c], want)
			}
		}
		if ev[0] != "cpu-clock" && (s.Value[4] != 0 || s.Value[5] != 0) {
			t.Errorf("%s sample with counters %v", ev[0], s.Value[4:])
		}
		for i, v := range s.Value {
			sums[i] += v
		}
		faultsIn[s.Location[0].Line[0].Function.Name] += s.Value[2]
	}
	if byEvent["cpu-clock"] != 1445 || byEvent["page-faults"] != 13 || byEvent["context-switches"] != 2 {
		t.Errorf("samples by event %v", byEvent)
	}
	if sums[0] != 1460 || sums[2] != 650 || sums[3] != 8 || faultsIn["asm_exc_page_fault"] != 650 {
		t.Errorf("sums %v, page-faults by function %v", sums, faultsIn)
	}
	var task, faults int64
	for _, e := range r.Profile.Entries {
		if len(e.Counters) == 2 {
			task += int64(e.Counters[0])
			faults += int64(e.Counters[1])
		}
	}
	if sums[4] != task || sums[5] != faults {
		t.Errorf("counters %d, %d, want %d, %d", sums[4], sums[5], task, faults)
	}
}

// TestPprofOneEventWithCounters: a run of one event with counters has their values after
// its own, named after them.
func TestPprofOneEventWithCounters(t *testing.T) {
	r := eventsFixture(fixture())
	r.Meta.Events = r.Meta.Events[:1]
	for i := range r.Profile.Entries {
		r.Profile.Entries[i].Event = 0
	}
	p := writeParse(t, r)
	want := []string{"samples/count", "cpu/nanoseconds", "task-clock/nanoseconds", "page-faults/count"}
	if got := sampleTypes(p); !sameStrings(got, want) {
		t.Fatalf("sample types %v, want %v", got, want)
	}
	byFunc := map[string]int64{}
	for _, s := range p.Sample {
		if _, ok := s.Label["event"]; ok {
			t.Fatalf("a run of one event labels its samples event: %v", s.Label)
		}
		byFunc[s.Location[0].Line[0].Function.Name] += s.Value[3]
	}
	if byFunc["mix"] != 1000 {
		t.Errorf("page-faults counted by function %v", byFunc)
	}
	// A window keeps no counters: no values for them.
	r.Profile.Entries[0].Counters = nil
	for i := range r.Profile.Entries {
		r.Profile.Entries[i].Counters = nil
	}
	if got := sampleTypes(writeParse(t, r)); len(got) != 2 {
		t.Errorf("without counters: sample types %v", got)
	}
}

// TestPprofOnlyEvent: one event of several (export --event) is written as a run of that
// event alone: its value alone, no counters but with the first.
func TestPprofOnlyEvent(t *testing.T) {
	r, left := OnlyEvent(eventsFixture(fixture()), 1)
	if left != 1447 {
		t.Errorf("%d samples of the other events, want 1447", left)
	}
	p := writeParse(t, r)
	if got := sampleTypes(p); !sameStrings(got, []string{"samples/count", "page-faults/count"}) {
		t.Fatalf("sample types %v", got)
	}
	var n int64
	for _, s := range p.Sample {
		if s.Value[1] != 50*s.Value[0] || s.Label["event"] != nil {
			t.Errorf("sample %v %v", s.Value, s.Label)
		}
		n += s.Value[0]
	}
	if n != 13 || p.DefaultSampleType != "page-faults" || p.Period != 50 {
		t.Errorf("%d samples, default %q, period %d", n, p.DefaultSampleType, p.Period)
	}
	first, _ := OnlyEvent(eventsFixture(fixture()), 0)
	want := []string{"samples/count", "cpu/nanoseconds", "task-clock/nanoseconds", "page-faults/count"}
	if got := sampleTypes(writeParse(t, first)); !sameStrings(got, want) {
		t.Errorf("first event: sample types %v, want %v", got, want)
	}
}

// TestPprofEventsOffCPU: with off-CPU time, only the first event's samples share their
// threads' time on CPU; the others have no off_cpu nor wall.
func TestPprofEventsOffCPU(t *testing.T) {
	r := eventsFixture(fixture())
	r.OffCPU = &fixture().Profile
	r.Meta.OffCPU = &store.OffCPUMeta{OnCPU: []agg.ThreadNs{{Tid: 102, Ns: 7_100_000_000}}}
	p := writeParse(t, r)
	want := []string{"samples/count", "cpu/nanoseconds", "off_cpu/nanoseconds", "wall/nanoseconds",
		"page-faults/count", "context-switches/count", "task-clock/nanoseconds", "page-faults-counter/count"}
	if got := sampleTypes(p); !sameStrings(got, want) {
		t.Fatalf("sample types %v, want %v", got, want)
	}
	var cpu102, off, wall int64
	for _, s := range p.Sample {
		ev := s.Label["event"]
		switch {
		case ev == nil: // blocked
			if s.Value[0] != 0 || s.Value[2] == 0 || s.Value[2] != s.Value[3] || s.Value[4] != 0 || s.Value[6] != 0 {
				t.Errorf("off-CPU sample %v", s.Value)
			}
			off += s.Value[2]
		case ev[0] == "cpu-clock":
			if s.Value[3] != s.Value[1] {
				t.Errorf("cpu-clock sample %v", s.Value)
			}
			if s.NumLabel["tid"][0] == 102 {
				cpu102 += s.Value[1]
			}
			wall += s.Value[3]
		default:
			if s.Value[1] != 0 || s.Value[2] != 0 || s.Value[3] != 0 {
				t.Errorf("%s sample %v", ev[0], s.Value)
			}
		}
	}
	// Thread 102's 700 cpu-clock samples share its 7.1 s; its page-fault samples none.
	if cpu102 != 7_100_000_000 || off != int64(fixture().Profile.TotalSamples()) || wall == 0 {
		t.Errorf("thread 102 on CPU %d, off CPU %d, wall %d", cpu102, off, wall)
	}
}

// TestPprofCountersInSpans: counters are shared among the spans a sample's stack was
// taken in, in proportion, to the unit.
func TestPprofCountersInSpans(t *testing.T) {
	r := eventsFixture(spanFixture())
	p := writeParse(t, r)
	var spanned int
	task, faults := map[string]int64{}, map[string]int64{}
	for _, s := range p.Sample {
		fn := s.Location[0].Line[0].Function.Name
		if s.Label["span"] != nil {
			spanned++
			// Shares of a whole: within a unit of the count's share.
			if s.Value[1] > 0 {
				share := float64(s.Value[4]) / float64(s.Value[1])
				if share < 0.99 || share > 1.01 {
					t.Errorf("task-clock %d for %d ns of samples", s.Value[4], s.Value[1])
				}
			}
		}
		task[fn] += s.Value[4]
		faults[fn] += s.Value[5]
	}
	if spanned == 0 {
		t.Fatal("no sample in a span")
	}
	wantTask := map[string]int64{}
	wantFaults := map[string]int64{}
	for _, e := range r.Profile.Entries {
		if len(e.Counters) == 2 {
			fn := cleanText(funcName(&r.Profile.Frames[r.Profile.Locations[r.Profile.Stacks[e.Stack][0]].Lines[0].Func]))
			wantTask[fn] += int64(e.Counters[0])
			wantFaults[fn] += int64(e.Counters[1])
		}
	}
	for fn, v := range wantTask {
		if task[fn] != v || faults[fn] != wantFaults[fn] {
			t.Errorf("%s: counters %d, %d, want %d, %d", fn, task[fn], faults[fn], v, wantFaults[fn])
		}
	}
}
