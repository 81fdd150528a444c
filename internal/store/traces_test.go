package store

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
)

func tracedRun() *Run {
	r := sampleRun()
	r.Traces = []TraceEvent{{Event: 0, Format: []byte("name: x\nformat:\n\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n"), Cap: 4, Dropped: 7,
		Samples: []agg.TraceSample{{Time: 1000, Pid: 1234, Tid: 1235, Key: 0, Raw: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0}},
			{Time: 900, Pid: 1234, Tid: 1236, Key: 1, Raw: []byte{}}, {Time: 5000, Pid: 1, Tid: 1, Key: 0, Raw: []byte{1}}}}}
	return r
}

func TestTracesRoundTrip(t *testing.T) {
	r := tracedRun()
	var b bytes.Buffer
	if err := Encode(&b, r); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "run.stax")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := LoadParts(path, Samples|TracesPart)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Traces, r.Traces) {
		t.Errorf("traces read back as %+v\nwant %+v", got.Traces, r.Traces)
	}
	// A reader that does not ask for them (as one that predates them) reads the rest alike.
	without, err := LoadParts(path, Samples)
	if err != nil || without.Traces != nil {
		t.Fatalf("without traces: %v, %+v", err, without.Traces)
	}
	if !reflect.DeepEqual(without.Profile.Entries, got.Profile.Entries) || !reflect.DeepEqual(without.Profile.KeyEntry, got.Profile.KeyEntry) {
		t.Error("the rest of the run differs without the traces")
	}
	if all, err := Decode(bytes.NewReader(b.Bytes())); err != nil || !reflect.DeepEqual(all.Traces, r.Traces) {
		t.Errorf("Decode: %v, %+v", err, all.Traces)
	}
	// A run with traces is saved whole: they have no delta form.
	if deltaable(r) {
		t.Error("a run with traces is deltaable")
	}
}

func TestDecodeTracesBounds(t *testing.T) {
	good := encodeTraces(tracedRun().Traces)
	if _, err := decodeTraces(good); err != nil {
		t.Fatal(err)
	}
	for i := range good {
		if _, err := decodeTraces(good[:i]); err == nil {
			t.Errorf("cut at %d decoded", i)
		}
	}
	bad := [][]byte{
		nil,
		[]byte("STAXTRC\x02"),
		append([]byte(tracesMagic), 17), // too many events
		append([]byte(tracesMagic), 1, 0, 2, 0, 0, 3),                            // 3 samples over a cap of 2... and no bytes
		append([]byte(tracesMagic), 1, 0, 0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0, 1), // cap over the bound
		append([]byte(tracesMagic), 2, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0),             // event 0 twice
	}
	for _, b := range bad {
		if got, err := decodeTraces(b); err == nil {
			t.Errorf("%q decoded: %+v", b, got)
		}
	}
}

func FuzzDecodeTraces(f *testing.F) {
	f.Add(encodeTraces(tracedRun().Traces))
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, err := decodeTraces(b)
		if err != nil {
			return
		}
		n := 0
		for _, e := range ts {
			n += len(e.Samples)
			if len(e.Samples) > e.Cap {
				t.Fatalf("%d samples over a cap of %d", len(e.Samples), e.Cap)
			}
		}
		if n*minTraceSampleB > len(b) {
			t.Fatalf("%d samples from %d bytes", n, len(b))
		}
	})
}
