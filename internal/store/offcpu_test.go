package store

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/views"
)

// offCPURun is sampleRun with off-CPU time: 700 ms of thread 1235 blocked under work.
func offCPURun() *Run {
	r := sampleRun()
	off := &agg.Profile{
		Frames:    []agg.Frame{{Func: "work", Image: "/bin/app", Kind: agg.KindUser}, {Func: agg.FuncRunnable, Image: agg.ImageSched, Kind: agg.KindUnknown}},
		Locations: []agg.Location{{Addr: 0x401010, Lines: []agg.Line{{Func: 0}}}, {Lines: []agg.Line{{Func: 1}}}},
		Stacks:    [][]uint32{{0}, {1, 0}},
		Entries: []agg.Entry{{Tid: 1235, Pid: 1234, Stack: 0, Count: 700e6, LeafFunc: -1, Time: 100},
			{Tid: 1235, Pid: 1234, Stack: 1, Count: 3e6, LeafFunc: -1, Time: 200}},
		Threads: []agg.ThreadInfo{{Tid: 1235, Pid: 1234, Name: "worker"}},
	}
	off.ExpandStacks()
	r.OffCPU = off
	return r
}

func TestOffCPURoundTrip(t *testing.T) {
	r := offCPURun()
	var b bytes.Buffer
	if err := Encode(&b, r); err != nil {
		t.Fatal(err)
	}
	got, err := Decode(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if got.OffCPU == nil || !reflect.DeepEqual(got.OffCPU.Entries, r.OffCPU.Entries) || !reflect.DeepEqual(got.OffCPU.Frames, r.OffCPU.Frames) ||
		!reflect.DeepEqual(got.OffCPU.Stacks, r.OffCPU.Stacks) {
		t.Fatalf("off-CPU read back as %+v, want %+v", got.OffCPU, r.OffCPU)
	}
	if !reflect.DeepEqual(got.Profile.Entries, r.Profile.Entries) || len(got.Code) != len(r.Code) {
		t.Error("the rest of the run changed")
	}

	// A reader that does not ask for it skips it; a run without it has none.
	path := filepath.Join(t.TempDir(), "run.stax")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if part, err := LoadParts(path, 0); err != nil || part.OffCPU != nil {
		t.Errorf("LoadParts without it: off-CPU %v, %v", part.OffCPU, err)
	}
	if part, err := LoadParts(path, OffCPUPart); err != nil || part.OffCPU == nil {
		t.Errorf("LoadParts with it: off-CPU %v, %v", part.OffCPU, err)
	}
	b.Reset()
	if err := Encode(&b, sampleRun()); err != nil {
		t.Fatal(err)
	}
	if got, err := Decode(bytes.NewReader(b.Bytes())); err != nil || got.OffCPU != nil {
		t.Errorf("a run without off-CPU time read back with %v, %v", got.OffCPU, err)
	}
}

// TestOffCPUDamaged checks that a damaged off-CPU section is an error, not a crash.
func TestOffCPUDamaged(t *testing.T) {
	r := offCPURun()
	r.OffCPU.Entries[0].Stack = 9 // no such stack
	var b bytes.Buffer
	if err := Encode(&b, r); err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(bytes.NewReader(b.Bytes())); err == nil {
		t.Error("an off-CPU entry of a stack that does not exist was read")
	}
}

// A run with spans and off-CPU time keeps both, each with the rest of the run, and each
// part is read alone.
func TestOffCPUAndSpansRoundTrip(t *testing.T) {
	r := spanRun()
	r.OffCPU = offCPURun().OffCPU
	var b bytes.Buffer
	if err := Encode(&b, r); err != nil {
		t.Fatal(err)
	}
	got, err := Decode(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if got.OffCPU == nil || !reflect.DeepEqual(got.OffCPU.Entries, r.OffCPU.Entries) || !reflect.DeepEqual(got.Spans.Slice(), r.Spans.Slice()) ||
		!reflect.DeepEqual(got.Profile.Series, r.Profile.Series) || len(got.Code) != len(r.Code) {
		t.Fatalf("read back: off-CPU %+v, spans %+v", got.OffCPU, got.Spans)
	}
	path := filepath.Join(t.TempDir(), "run.stax")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if part, err := LoadParts(path, OffCPUPart); err != nil || part.OffCPU == nil {
		t.Errorf("LoadParts(OffCPUPart): off-CPU %v, %v", part.OffCPU, err)
	}
	if part, err := LoadParts(path, All); err != nil || part.OffCPU == nil || part.Spans.Len() != r.Spans.Len() {
		t.Errorf("LoadParts(All): %v", err)
	}
}

// offCPUWakersRun is offCPURun with its intervals and wakers.
func offCPUWakersRun() *Run {
	r := offCPURun()
	r.OffCPUIntervals = []agg.Interval{{Tid: 1235, Stack: 0, Start: 1000, End: 701000, Waker: 1236}, {Tid: 1235, Stack: 1, Start: 800000, End: 803000}}
	p := &agg.Profile{
		Frames:    []agg.Frame{{Func: agg.WakeeFunc(1235), Image: agg.ImageSched, Kind: agg.KindUnknown}, {Func: "release_lock", Image: "/bin/app", Kind: agg.KindUser}},
		Locations: []agg.Location{{Lines: []agg.Line{{Func: 0}}}, {Addr: 0x401020, Lines: []agg.Line{{Func: 1}}}},
		Stacks:    [][]uint32{{0, 1}},
		Entries:   []agg.Entry{{Tid: 1236, Pid: 1234, Stack: 0, Count: 700e6, LeafFunc: -1, Time: 100}},
		Threads:   []agg.ThreadInfo{{Tid: 1235, Pid: 1234, Name: "worker"}, {Tid: 1236, Pid: 1234, Name: "holder"}},
	}
	p.ExpandStacks()
	n := *p
	n.Entries = []agg.Entry{{Tid: 1236, Pid: 1234, Stack: 0, Count: 1, LeafFunc: -1, Time: 100}}
	r.WakersNs, r.WakersN = p, &n
	return r
}

// TestWakersRoundTrip: the wakers' profiles are saved and read back with the off-CPU time,
// and views.Wakers reads who woke whom from them.
func TestWakersRoundTrip(t *testing.T) {
	r := offCPURun()
	wake := func(w uint64) *agg.Profile {
		p := &agg.Profile{
			Frames:    []agg.Frame{{Func: agg.WakeeFunc(1235), Image: agg.ImageSched, Kind: agg.KindUnknown}, {Func: "release_lock", Image: "/bin/app", Kind: agg.KindUser}},
			Locations: []agg.Location{{Lines: []agg.Line{{Func: 0}}}, {Addr: 0x401020, Lines: []agg.Line{{Func: 1}}}},
			Stacks:    [][]uint32{{0, 1}},
			Entries:   []agg.Entry{{Tid: 1236, Pid: 1234, Stack: 0, Count: w, LeafFunc: -1, Time: 100}},
			Threads:   []agg.ThreadInfo{{Tid: 1235, Pid: 1234, Name: "worker"}, {Tid: 1236, Pid: 1234, Name: "holder"}},
		}
		p.ExpandStacks()
		return p
	}
	r.WakersNs, r.WakersN = wake(700e6), wake(3)
	var b bytes.Buffer
	if err := Encode(&b, r); err != nil {
		t.Fatal(err)
	}
	got, err := Decode(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if got.WakersNs == nil || got.WakersN == nil {
		t.Fatalf("wakers not read back: %v %v", got.WakersNs, got.WakersN)
	}
	rows := views.Wakers(got.WakersNs, got.WakersN, 1235, 3)
	want := []views.WakerRow{{Wakee: 1235, WakeeName: "worker", Waker: 1236, WakerPid: 1234, WakerName: "holder", Count: 3, Ns: 700e6,
		Stacks: []views.WakerStack{{Frames: []string{"release_lock"}, Count: 3, Ns: 700e6}}}}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("wakers %+v, want %+v", rows, want)
	}
	if rows := views.Wakers(got.WakersNs, got.WakersN, 99, 3); len(rows) != 0 {
		t.Errorf("wakers of a thread never woken: %+v", rows)
	}
	path := filepath.Join(t.TempDir(), "run.stax")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if part, err := LoadParts(path, 0); err != nil || part.WakersNs != nil {
		t.Errorf("LoadParts without off-CPU: wakers %v, %v", part.WakersNs, err)
	}
}

// TestOffCPUIntervalsRoundTrip: the intervals off CPU keep their times through a saved run,
// and a window counts the part of each inside it.
func TestOffCPUIntervalsRoundTrip(t *testing.T) {
	r := offCPURun()
	r.OffCPUIntervals = []agg.Interval{{Tid: 1235, Stack: 0, Start: 1000, End: 701000, Waker: 1236}, {Tid: 1235, Stack: 1, Start: 800000, End: 803000}}
	var b bytes.Buffer
	if err := Encode(&b, r); err != nil {
		t.Fatal(err)
	}
	got, err := Decode(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.OffCPUIntervals, r.OffCPUIntervals) {
		t.Fatalf("intervals read back as %+v, want %+v", got.OffCPUIntervals, r.OffCPUIntervals)
	}
	w := views.IntervalsIn(got.OffCPU, got.OffCPUIntervals, 501000, 802000)
	want := map[uint32]uint64{0: 200000, 1: 2000}
	for _, e := range w.Entries {
		if want[e.Stack] != e.Count {
			t.Errorf("stack %d: %d ns in the window, want %d", e.Stack, e.Count, want[e.Stack])
		}
		delete(want, e.Stack)
	}
	if len(want) != 0 {
		t.Errorf("stacks missing from the window: %v", want)
	}

	// An interval that ends before it starts, or a section cut short, is an error.
	for _, bad := range [][]agg.Interval{{{Tid: 1, Start: 5, End: 4}}} {
		r.OffCPUIntervals = bad
		b.Reset()
		if err := Encode(&b, r); err != nil {
			t.Fatal(err)
		}
		if _, err := Decode(bytes.NewReader(b.Bytes())); err == nil {
			t.Errorf("intervals %+v were read", bad)
		}
	}
}

// offCPUIntervalsRun is offCPURun with intervals, one of them without a stack.
func offCPUIntervalsRun() *Run {
	r := offCPURun()
	r.OffCPUIntervals = []agg.Interval{{Tid: 1235, Stack: 0, Start: 1000, End: 701000, Waker: 1236},
		{Tid: 1235, Stack: 1, Start: 800000, End: 803000}, {Tid: 1235, Stack: agg.NoStack, Start: 900000, End: 900500}}
	return r
}

// Files written before the intervals section keep the intervals in the body, packed in a
// JSON string: they still open with them.
func TestOffCPUIntervalsInTheBodyStillOpen(t *testing.T) {
	got, err := Load("testdata/offcpu-intervals-in-body.stax")
	if err != nil {
		t.Fatal(err)
	}
	if want := offCPUIntervalsRun().OffCPUIntervals; !reflect.DeepEqual(got.OffCPUIntervals, want) {
		t.Errorf("intervals read as %+v, want %+v", got.OffCPUIntervals, want)
	}
}

// The intervals are written in a section of their own, a few bytes each, and a reader that
// wants no off-CPU time passes over them.
func TestOffCPUIntervalsSection(t *testing.T) {
	r := offCPURun()
	const n = 100000
	for i := range n {
		start := uint64(1e9 + i*5000)
		r.OffCPUIntervals = append(r.OffCPUIntervals, agg.Interval{Tid: 1235 + uint32(i%2), Stack: uint32(i % 2), Start: start, End: start + 2000 + uint64(i%7), Waker: 1236 - uint32(i%2)})
	}
	data := encode(t, r)
	var raw bytes.Buffer
	if err := writePayload(&raw, r, false); err != nil {
		t.Fatal(err)
	}
	if per := raw.Len() / n; per > 12 {
		t.Errorf("%d bytes of payload an interval, want at most 12", per)
	}
	got, err := Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.OffCPUIntervals, r.OffCPUIntervals) {
		t.Error("the intervals changed through the file")
	}
	got, err = decode(bytes.NewReader(data), int64(len(data)), Samples, "")
	if err != nil {
		t.Fatal(err)
	}
	if got.OffCPUIntervals != nil {
		t.Error("a reader that wants samples alone read the intervals")
	}
}

func BenchmarkSaveIntervals(b *testing.B) {
	r := offCPURun()
	intervalsFrom(r, 1<<20)
	path := filepath.Join(b.TempDir(), "run.stax")
	for b.Loop() {
		if err := Save(path, r); err != nil {
			b.Fatal(err)
		}
	}
	fi, _ := os.Stat(path)
	b.ReportMetric(float64(fi.Size())/float64(len(r.OffCPUIntervals)), "file-B/interval")
}
