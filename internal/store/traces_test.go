package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
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
	if !deltaable(r) {
		t.Error("a run with traces is not deltaable")
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

// addTraced records n samples of tracepoint 0 over 7 stacks, each with 64 bytes of
// fields: its number, and bytes that do not compress.
func (r *recording) addTraced(n int) {
	for i := range n {
		chain := []uint64{^uint64(511), uint64(i%7+1) << 8, 7 << 8}
		raw := binary.LittleEndian.AppendUint64(nil, r.n)
		for x := r.n*0x9e3779b97f4a7c15 + 1; len(raw) < 64; x = x*6364136223846793005 + 1442695040888963407 {
			raw = binary.LittleEndian.AppendUint64(raw, x)
		}
		r.live.AddTracedSample(0, 10, 11, 0, r.next, 0, chain, nil, raw)
		r.next += 1e5
		r.n++
	}
	if len(r.threads) == 0 {
		r.threads = append(r.threads, agg.ThreadInfo{Tid: 11, Pid: 10, Name: "writer"})
	}
}

// TestDeltaTracesReadBackAsTheRun: a run that keeps a tracepoint's samples has them in its
// checkpoints' deltas (a delta file of version 3), each record the samples since the one
// before, and reads back with the same ring: what it keeps and what it let go, also where
// more samples came between two checkpoints than the ring holds.
func TestDeltaTracesReadBackAsTheRun(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	rec := newRecording(t, "traced")
	rec.traceFormat = []byte("name: x\nformat:\n\tfield:u64 n;\toffset:8;\tsize:8;\tsigned:0;\n")
	const ringCap = 500
	rec.live.KeepTraces(0, ringCap)
	for step, n := range []int{10, 200, 0, 350, 1200, 3, 499, 501, 40} {
		rec.addTraced(n)
		want := rec.checkpoint(false)
		got, err := LoadParts(Path("traced"), All)
		if err != nil {
			t.Fatalf("checkpoint %d: %v", step, err)
		}
		if !reflect.DeepEqual(got.Traces, want.Traces) {
			g, w := got.Traces[0], want.Traces[0]
			t.Fatalf("checkpoint %d (%d samples added): read back %d kept, %d let go; want %d, %d", step, n, len(g.Samples), g.Dropped, len(w.Samples), w.Dropped)
		}
		sameRun(t, fmt.Sprint("checkpoint ", step), got, want)
		closeRun(got)
		if w := want.Traces[0]; w.Dropped+uint64(len(w.Samples)) != rec.n || len(w.Samples) != min(int(rec.n), ringCap) {
			t.Fatalf("checkpoint %d: the ring holds %d and let %d go of %d", step, len(w.Samples), w.Dropped, rec.n)
		}
	}
	if rec.w.Deltas < 6 {
		t.Errorf("%d deltas written for 9 checkpoints", rec.w.Deltas)
	}
	if b, err := os.ReadFile(DeltaPath("traced")); err != nil || binary.LittleEndian.Uint32(b[8:]) != deltaVersionTraces {
		t.Errorf("the delta file of a run with traces is not of version %d: %v", deltaVersionTraces, err)
	}
	// The record of 3 samples is small beside the run written whole (its 500 samples kept
	// with their fields, 3,000 in its series).
	rec.addTraced(3)
	rec.checkpoint(false) // a new base, where the deltas since the last outgrew it
	before, bases := rec.w.Written, rec.w.Bases
	rec.addTraced(3)
	run := rec.checkpoint(false)
	var whole bytes.Buffer
	if err := Encode(&whole, run); err != nil {
		t.Fatal(err)
	}
	d := rec.w.Written - before
	t.Logf("a checkpoint of 3 samples wrote %d bytes; the run whole is %d", d, whole.Len())
	if rec.w.Bases != bases || d*10 > int64(whole.Len()) {
		t.Errorf("a checkpoint of 3 samples wrote %d bytes (a base: %v); the run whole is %d", d, rec.w.Bases != bases, whole.Len())
	}
	want := rec.checkpoint(true)
	got, err := LoadParts(Path("traced"), All)
	if err != nil || !reflect.DeepEqual(got.Traces, want.Traces) {
		t.Fatalf("final: %v", err)
	}
	closeRun(got)
}
