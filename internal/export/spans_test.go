package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stax-profiler/stax/internal/spans"
	"github.com/stax-profiler/stax/internal/store"
)

func TestInnermostSpans(t *testing.T) {
	ix := innermostSpans(spans.ListOf([]spans.Span{
		{Name: "A", Tid: 1, Start: 0, End: 100},
		{Name: "B", Tid: 1, Start: 10, End: 50},
		{Name: "C", Tid: 1, Start: 20, End: 30},
		{Name: "D", Tid: 1, Start: 60, End: 70},
		{Name: "E", Tid: 1, Start: 90, End: 120}, // outlasts A: cut at A's end
		{Name: "m", Tid: 1, Start: 40, End: 40},  // a marker holds no time
		{Name: "F", Tid: 2, Start: 5, End: 15},
	}))

	for _, c := range []struct {
		tid  uint32
		t    uint64
		want string
	}{
		{1, 0, "A"}, {1, 9, "A"}, {1, 10, "B"}, {1, 20, "C"}, {1, 29, "C"}, {1, 30, "B"}, {1, 40, "B"},
		{1, 50, "A"}, {1, 65, "D"}, {1, 70, "A"}, {1, 95, "E"}, {1, 100, ""}, {1, 110, ""},
		{2, 4, ""}, {2, 5, "F"}, {2, 15, ""}, {3, 50, ""},
	} {
		if got := ix.at(c.tid, c.t); got != c.want {
			t.Errorf("tid %d at %d: %q, want %q", c.tid, c.t, got, c.want)
		}
	}
}

// spanFixture is the fixture with spans on thread 101 (frame, physics inside it) and a
// marker of stax mark.
func spanFixture() *store.Run {
	f := fixture()
	const s = 5_000_000_000
	f.Spans = spans.ListOf([]spans.Span{
		{Name: "frame", Pid: 100, Tid: 101, Start: s, End: s + 1e9},
		{Name: "physics", Pid: 100, Tid: 101, Start: s + 2e8, End: s + 5e8, Depth: 1},
		{Name: "tick", Start: s + 3e8, End: s + 3e8},
	})
	return f
}

func TestPprofSpanLabels(t *testing.T) {
	r := spanFixture()
	samples, _ := samplesByTime(&r.Profile)
	want := map[string]int64{}
	for _, s := range samples {
		e := r.Profile.Entries[s.entry]
		if e.Tid != 101 {
			continue
		}
		switch {
		case s.time >= 5_200_000_000 && s.time < 5_500_000_000:
			want["physics"]++
		case s.time < 6_000_000_000:
			want["frame"]++
		}
	}
	// With off-CPU time the CPU samples are merged with the blocked stacks (values
	// off_cpu and wall): their spans stay.
	withOff := spanFixture()
	withOff.OffCPU = &spanFixture().Profile
	for _, r := range []*store.Run{r, withOff} {
		checkPprofSpanLabels(t, r, want)
	}
}

func checkPprofSpanLabels(t *testing.T, r *store.Run, want map[string]int64) {
	t.Helper()
	var b bytes.Buffer
	if err := WritePprof(&b, r); err != nil {
		t.Fatal(err)
	}
	p := parsePprof(t, b.Bytes())
	got := map[string]int64{}
	var total int64
	for _, s := range p.Sample {
		total += s.Value[0]
		if l := s.Label["span"]; len(l) == 1 {
			got[l[0]] += s.Value[0]
			if s.NumLabel["tid"][0] != 101 {
				t.Errorf("a sample of tid %d is labelled span %s", s.NumLabel["tid"][0], l[0])
			}
		}
	}
	if got["physics"] != want["physics"] || got["frame"] != want["frame"] || len(got) != 2 || want["physics"] == 0 {
		t.Errorf("off-CPU %v: span labels %v, want %v", r.OffCPU != nil, got, want)
	}
	if total != int64(r.Profile.TotalSamples()) {
		t.Errorf("%d samples, want %d", total, r.Profile.TotalSamples())
	}
}

func TestFirefoxSpanMarkers(t *testing.T) {
	r := spanFixture()
	var b bytes.Buffer
	if err := WriteFirefox(&b, r); err != nil {
		t.Fatal(err)
	}
	var out fxFile
	if err := json.Unmarshal(b.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, th := range out.Threads {
		m := th.Markers
		if m.Length != len(m.Name) || len(m.Phase) != m.Length || len(m.StartTime) != m.Length || len(m.EndTime) != m.Length || len(m.Data) != m.Length {
			t.Fatalf("thread %d: markers table of uneven columns: %+v", th.Tid, m)
		}
		for i := range m.Name {
			got[th.StringArray[m.Name[i]]] = fmt.Sprintf("tid %d phase %d %v-%v", th.Tid, m.Phase[i], m.StartTime[i], m.EndTime[i])
		}
	}
	want := map[string]string{
		"frame":   "tid 101 phase 1 0-1000",
		"physics": "tid 101 phase 1 200-500",
		"tick":    "tid 100 phase 0 300-<nil>",
	}
	if len(got) != len(want) {
		t.Errorf("markers %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("marker %s: %s, want %s", k, got[k], v)
		}
	}
}
