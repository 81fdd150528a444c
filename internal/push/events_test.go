package push

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"mime"
	"mime/multipart"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/push/pushtest"
	"github.com/stax-profiler/stax/internal/store"
)

// eventsFixture is the fixture as a run of two events: jit_a's 100 samples are cpu-clock's
// (with the counter task-clock read with them), jit_b's 200 page-faults' (a sample every
// 10 faults).
func eventsFixture() *store.Run {
	r := fixture()
	r.Meta.Events = []store.Event{{Name: "cpu-clock", Freq: 150, Samples: 100, Count: 666_666_600}, {Name: "page-faults", Period: 10, Samples: 200, Count: 2000}}
	r.Meta.Counters = []store.Counter{{Name: "task-clock", Count: 654_321}}
	r.Profile.Entries[0].Counters = []uint64{654_321}
	r.Profile.Entries[1].Event = 1
	return r
}

// otlpProfile is one OTLP profile read back: its sample and period types, period, and
// values by leaf function.
type otlpProfile struct {
	sampleType, periodType string
	period                 int64
	byLeaf                 map[string]int64
}

func otlpProfiles(t *testing.T, body []byte) []otlpProfile {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body, err = io.ReadAll(zr); err != nil {
		t.Fatal(err)
	}
	pd, err := (&pprofile.ProtoUnmarshaler{}).UnmarshalProfiles(body)
	if err != nil {
		t.Fatal(err)
	}
	d := pd.Dictionary()
	str := func(i int32) string { return d.StringTable().At(int(i)) }
	var out []otlpProfile
	for _, rp := range pd.ResourceProfiles().All() {
		for _, sp := range rp.ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				op := otlpProfile{sampleType: str(p.SampleType().TypeStrindex()) + "/" + str(p.SampleType().UnitStrindex()),
					periodType: str(p.PeriodType().TypeStrindex()) + "/" + str(p.PeriodType().UnitStrindex()),
					period:     p.Period(), byLeaf: map[string]int64{}}
				for _, s := range p.Samples().All() {
					li := d.StackTable().At(int(s.StackIndex())).LocationIndices().At(0)
					fn := str(d.FunctionTable().At(int(d.LocationTable().At(int(li)).Lines().At(0).FunctionIndex())).NameStrindex())
					for _, v := range s.Values().AsRaw() {
						op.byLeaf[fn] += v
					}
				}
				out = append(out, op)
			}
		}
	}
	return out
}

// TestOTLPEvents: each event of a run is a profile of its own samples, with its own sample
// type (cpu-clock's samples/count over cpu nanoseconds, page-faults' faults), and each
// counter a profile; a window, which keeps no counters, has the events' alone.
func TestOTLPEvents(t *testing.T) {
	r, empty, err := Encoder{Protocol: OTLP}.Window(eventsFixture(), 0, 0, 1)
	if err != nil || empty {
		t.Fatalf("encode: %v (empty %v)", err, empty)
	}
	got := otlpProfiles(t, r.Body)
	if len(got) != 3 {
		t.Fatalf("%d profiles, want 3: %+v", len(got), got)
	}
	cpu, faults, task := got[0], got[1], got[2]
	if cpu.sampleType != "samples/count" || cpu.periodType != "cpu/nanoseconds" || cpu.period != 1_000_000_000/150 ||
		len(cpu.byLeaf) != 1 || cpu.byLeaf["jit_a"] != 100 {
		t.Errorf("cpu-clock profile %+v", cpu)
	}
	if faults.sampleType != "page-faults/count" || faults.periodType != "page-faults/count" || faults.period != 10 ||
		len(faults.byLeaf) != 1 || faults.byLeaf["jit_b"] != 2000 {
		t.Errorf("page-faults profile %+v", faults)
	}
	if task.sampleType != "task-clock/nanoseconds" || len(task.byLeaf) != 1 || task.byLeaf["jit_a"] != 654_321 {
		t.Errorf("task-clock profile %+v", task)
	}

	r, _, err = Encoder{Protocol: OTLP}.Window(eventsFixture(), fixtureStart, fixtureStart+1_000_000_000, 2)
	if err != nil {
		t.Fatal(err)
	}
	got = otlpProfiles(t, r.Body)
	if len(got) != 2 || got[0].byLeaf["jit_a"]+got[1].byLeaf["jit_b"]/10 != 150 {
		t.Errorf("a window: %+v", got)
	}
}

// TestOTLPOneEventUnchanged: a run of one event is one profile of samples/count, as
// before there were several.
func TestOTLPOneEventUnchanged(t *testing.T) {
	run := fixture()
	run.Meta.Events = []store.Event{{Name: "cpu-clock", Freq: 150, Samples: 300}}
	r, _, err := Encoder{Protocol: OTLP}.Window(run, 0, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	got := otlpProfiles(t, r.Body)
	if len(got) != 1 || got[0].sampleType != "samples/count" || got[0].byLeaf["jit_a"] != 100 || got[0].byLeaf["jit_b"] != 200 {
		t.Errorf("profiles %+v", got)
	}
}

// TestPyroscopeFirstEvent: Pyroscope gets the first event's samples, as CPU samples; the
// others are counted, and the pusher's status says how many.
func TestPyroscopeFirstEvent(t *testing.T) {
	r, empty, err := Encoder{Protocol: Pyroscope}.Window(eventsFixture(), 0, 0, 1)
	if err != nil || empty {
		t.Fatalf("encode: %v (empty %v)", err, empty)
	}
	if r.LeftOut != 200 {
		t.Errorf("left out %d samples, want 200", r.LeftOut)
	}
	_, params, err := mime.ParseMediaType(r.ContentType)
	if err != nil {
		t.Fatal(err)
	}
	form, err := multipart.NewReader(bytes.NewReader(r.Body), params["boundary"]).ReadForm(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	f, err := form.File["profile"][0].Open()
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, st := range p.SampleType {
		types = append(types, st.Type+"/"+st.Unit)
	}
	byLeaf := map[string]int64{}
	for _, s := range p.Sample {
		byLeaf[s.Location[0].Line[0].Function.Name] += s.Value[0]
	}
	if strings.Join(types, " ") != "samples/count cpu/nanoseconds task-clock/nanoseconds" || len(byLeaf) != 1 || byLeaf["jit_a"] != 100 {
		t.Errorf("sample types %v, samples by leaf %v", types, byLeaf)
	}

	// A window of the other event's samples alone is not sent, and counted.
	run := eventsFixture()
	run.Profile.Entries[0].Event = 1
	if r, empty, err := (Encoder{Protocol: Pyroscope}).Window(run, 0, 0, 1); err != nil || !empty || r.LeftOut != 300 {
		t.Errorf("no first event's samples: empty %v, left out %d, %v", empty, r.LeftOut, err)
	}
}

// TestPusherCountsLeftOut: a pusher to Pyroscope counts, over its windows, the samples of
// the events it did not send.
func TestPusherCountsLeftOut(t *testing.T) {
	srv := pushtest.NewPyroscope()
	defer srv.Close()
	tg, err := ParseTarget("pyroscope+" + srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(fixedSource{eventsFixture()}, Options{Target: tg, Every: 20 * time.Millisecond,
		QueueDir: t.TempDir() + "/q", Encoder: Encoder{Protocol: Pyroscope, Resource: Resource{Service: "app"}}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if left := p.Close(5 * time.Second); left != 0 {
		t.Fatalf("%d windows left", left)
	}
	ins, errs := srv.Ingests()
	var sent int64
	for _, in := range ins {
		sent += pushtest.SamplesByLeaf(in.Profile)["jit_a"]
	}
	if st := p.Status(); st.LeftOut != 200 || sent != 100 || len(errs) > 0 {
		t.Errorf("left out %d, sent %d of jit_a, refused %q", st.LeftOut, sent, errs)
	}
}

// A window pushed to OTLP carries what its own samples' counters counted: each sample of
// the series keeps them (agg.Series.Counters).
func TestOTLPWindowCounters(t *testing.T) {
	r := eventsFixture()
	// The series again, each cpu-clock (jit_a) sample with its thread's task-clock: 6,543.
	c := agg.SeriesChunk{Base: fixtureStart, Min: fixtureStart}
	last := uint64(fixtureStart)
	for i := range 300 {
		tm := uint64(fixtureStart + i*2_000_000_000/300)
		key, counted := uint64(1), uint64(0)
		if i%3 == 0 {
			key, counted = 0, 6543
		}
		c.Data = binary.AppendVarint(c.Data, int64(tm-last))
		c.Data = binary.AppendUvarint(c.Data, key)
		c.Data = binary.AppendUvarint(c.Data, 0)
		c.Data = binary.AppendUvarint(c.Data, counted)
		c.N++
		c.Max, last = tm, tm
	}
	r.Profile.Series = agg.Series{Chunks: []agg.SeriesChunk{c}, Counters: 1}
	r.Profile.Entries[0].Counters = []uint64{100 * 6543}
	req, _, err := Encoder{Protocol: OTLP}.Window(r, fixtureStart, fixtureStart+1_000_000_000, 2)
	if err != nil {
		t.Fatal(err)
	}
	got := otlpProfiles(t, req.Body)
	if len(got) != 3 || got[2].sampleType != "task-clock/nanoseconds" || got[2].byLeaf["jit_a"] != 50*6543 {
		t.Errorf("a window's profiles: %+v; want the task-clock of its 50 samples of jit_a, %d", got, 50*6543)
	}
}
