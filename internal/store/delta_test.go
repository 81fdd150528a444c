package store

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/testutil/synthrun"
)

// recording is a run being recorded as the recorder records one: samples added, named,
// sealed chunks spilled to the samples file, and the run saved at each checkpoint.
type recording struct {
	t       testing.TB
	live    *agg.Run
	log     *SampleLog
	reader  *SampleFile
	w       *DeltaWriter
	id      string
	next    uint64 // the next sample's time
	threads []agg.ThreadInfo
	n       uint64
	window  int           // spilled chunks the run keeps (0: all), as a rolling window does
	offCPU  *offRecording // nil: off-CPU time not recorded
	// traceFormat is the format of the tracepoint whose samples the run keeps (event 0;
	// nil: none kept).
	traceFormat []byte
}

func newRecording(t testing.TB, id string) *recording {
	if _, err := CheckDir(); err != nil {
		t.Fatal(err)
	}
	log, err := CreateSampleLog(SamplesPath(id))
	if err != nil {
		t.Fatal(err)
	}
	rec := &recording{t: t, live: agg.NewRun(), log: log, reader: OpenSampleFile(SamplesPath(id)), w: NewDeltaWriter(Path(id)), id: id, next: 1e9}
	t.Cleanup(func() { rec.reader.Close(); rec.log.Close(); rec.w.Close() })
	return rec
}

// add records n samples over stacks distinct stacks (numbered from first) on tids
// threads, 1 ms apart.
func (r *recording) add(n, first, stacks, tids int) {
	for i := range n {
		s := first + i%stacks
		chain := []uint64{^uint64(511), uint64(s%50+1) << 8, uint64(s/50+60) << 8, 7 << 8}
		tid := uint32(10 + i%tids)
		r.live.AddSample(10, tid, uint32(i%2), r.next, 0, chain)
		r.next += 1e6
		r.n++
		found := false
		for _, th := range r.threads {
			found = found || th.Tid == tid
		}
		if !found {
			r.threads = append(r.threads, agg.ThreadInfo{Tid: tid, Pid: 10, Name: fmt.Sprint("t", tid)})
		}
	}
}

// addThread records n samples of a new process of one thread, tid, each on a stack of
// its own.
func (r *recording) addThread(tid uint32, n int) {
	for i := range n {
		chain := []uint64{^uint64(511), uint64(i+1) << 8, uint64(tid) << 8, 7 << 8}
		r.live.AddSample(tid, tid, uint32(i%2), r.next, 0, chain)
		r.next += 1e5
		r.n++
	}
	r.threads = append(r.threads, agg.ThreadInfo{Tid: tid, Pid: tid, Name: fmt.Sprint("cmd", tid%7)})
}

// checkpoint saves the run as it stands and returns what was saved.
func (r *recording) checkpoint(final bool) *Run {
	r.live.Resolve(synthrun.Names{})
	if err := r.live.SpillSeries(r.log.Append, r.reader, 2); err != nil {
		r.t.Fatal(err)
	}
	ths := append([]agg.ThreadInfo(nil), r.threads...)
	run := &Run{Meta: Meta{ID: r.id, Pid: 10, Freq: 999, Samples: r.n, StartNs: 1e9, Start: time.Unix(1, 0).UTC(), Finished: final,
		SamplesFileSize: r.log.Size()}, Profile: *r.live.Profile(ths)}
	if r.offCPU != nil {
		r.offParts(run, ths)
		run.Meta.OffCPU = &OffCPUMeta{Switches: 2 * uint64(len(r.offCPU.ivs)), Intervals: uint64(len(r.offCPU.ivs)), Wakers: true, Wakeups: uint64(len(r.offCPU.ivs))}
	}
	if r.traceFormat != nil {
		for _, tr := range r.live.Traces() {
			run.Traces = append(run.Traces, TraceEvent{Event: tr.Event, Format: r.traceFormat, Cap: tr.Cap, Dropped: tr.Dropped, Samples: tr.Samples})
		}
	}
	if r.window > 0 {
		ch := run.Profile.Series.Chunks
		spilled := 0
		for spilled < len(ch) && ch[spilled].Ref != 0 {
			spilled++
		}
		if spilled > r.window {
			run.Profile.Series.Chunks = ch[spilled-r.window:]
		}
	}
	if err := r.w.Save(run, final); err != nil {
		r.t.Fatal(err)
	}
	return run
}

// sameRun checks that got (read back) holds what want (saved) does: the same tables, the
// same counts per entry, keys naming the same entries and the same samples.
func sameRun(t testing.TB, what string, got, want *Run) {
	t.Helper()
	gp, wp := &got.Profile, &want.Profile
	if !reflect.DeepEqual(gp.Frames, wp.Frames) || !reflect.DeepEqual(gp.Stacks, wp.Stacks) ||
		!reflect.DeepEqual(gp.Locations, wp.Locations) || !reflect.DeepEqual(gp.Mappings, wp.Mappings) {
		t.Fatalf("%s: the tables differ: %d/%d frames, %d/%d stacks", what, len(gp.Frames), len(wp.Frames), len(gp.Stacks), len(wp.Stacks))
	}
	if !reflect.DeepEqual(gp.Threads, wp.Threads) && len(gp.Threads)+len(wp.Threads) > 0 {
		t.Fatalf("%s: threads %v, want %v", what, gp.Threads, wp.Threads)
	}
	ents := map[entryID]agg.Entry{}
	for _, e := range wp.Entries {
		ents[idOf(&e)] = e
	}
	if len(gp.Entries) != len(wp.Entries) {
		t.Fatalf("%s: %d entries, want %d", what, len(gp.Entries), len(wp.Entries))
	}
	for i, e := range gp.Entries {
		if w := ents[idOf(&e)]; !sameEntry(&w, &e) {
			t.Fatalf("%s: entry %+v, want %+v", what, e, ents[idOf(&e)])
		}
		if i > 0 && e.Count > gp.Entries[i-1].Count {
			t.Fatalf("%s: entries out of order", what)
		}
	}
	if len(gp.KeyEntry) != len(wp.KeyEntry) {
		t.Fatalf("%s: %d keys, want %d", what, len(gp.KeyEntry), len(wp.KeyEntry))
	}
	for k := range wp.KeyEntry {
		g, w := gp.KeyEntry[k], wp.KeyEntry[k]
		if (g < 0) != (w < 0) || (w >= 0 && idOf(&gp.Entries[g]) != idOf(&wp.Entries[w])) {
			t.Fatalf("%s: key %d names entry %d, want %d", what, k, g, w)
		}
	}
	var gs, ws []agg.Sample
	if err := gp.Series.Each(0, 0, func(s agg.Sample) { gs = append(gs, s) }); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	wp.Series.Reader = OpenSampleFile(samplesPathOf(Path(want.Meta.ID)))
	defer wp.Series.Reader.(*SampleFile).Close()
	if err := wp.Series.Each(0, 0, func(s agg.Sample) { ws = append(ws, s) }); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !reflect.DeepEqual(gs, ws) {
		t.Fatalf("%s: %d samples read back, want %d", what, len(gs), len(ws))
	}
	if got.Meta.Samples != want.Meta.Samples || got.Meta.Finished != want.Meta.Finished {
		t.Fatalf("%s: meta says %d samples (finished %v), want %d (%v)", what, got.Meta.Samples, got.Meta.Finished, want.Meta.Samples, want.Meta.Finished)
	}
}

// TestDeltaCheckpointsReadBackAsTheRun: checkpoints written as deltas read back as the
// run they saved (its tables, counts, keys and samples), as does its meta alone, while the
// run grows new stacks and threads; the final save leaves one file, of format 4.
func TestDeltaCheckpointsReadBackAsTheRun(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	// Small bases are rewritten after 4 KiB of deltas, so a short run compacts too.
	defer func(n int64) { minDeltaBase = n }(minDeltaBase)
	minDeltaBase = 4 << 10
	rec := newRecording(t, "grow")
	for step := range 16 {
		rec.add(1000, step*3, 20+step, 2+step%5)
		want := rec.checkpoint(false)
		got, err := LoadParts(Path("grow"), All)
		if err != nil {
			t.Fatalf("checkpoint %d: %v", step, err)
		}
		sameRun(t, fmt.Sprint("checkpoint ", step), got, want)
		closeRun(got)
		m, err := ReadMeta(Path("grow"))
		if err != nil || m.Samples != rec.n || m.Summary == nil || m.Summary.DistinctStacks != len(want.Profile.Stacks) {
			t.Fatalf("checkpoint %d: meta %+v, %v", step, m, err)
		}
		// A view that needs no samples reads the profile alone.
		if p, err := LoadParts(Path("grow"), 0); err != nil || len(p.Profile.Entries) != len(want.Profile.Entries) {
			t.Fatalf("checkpoint %d: the profile alone: %v", step, err)
		}
	}
	if rec.w.Deltas == 0 || rec.w.Bases < 2 {
		t.Errorf("%d deltas and %d bases written: the deltas were never written, or never compacted", rec.w.Deltas, rec.w.Bases)
	}
	want := rec.checkpoint(true)
	if _, err := os.Stat(DeltaPath("grow")); !os.IsNotExist(err) {
		t.Errorf("the final save left the delta file: %v", err)
	}
	b, _ := os.ReadFile(Path("grow"))
	if v := b[8]; v != 5 {
		t.Errorf("the finished run is of format %d, want 5", v)
	}
	got, err := LoadParts(Path("grow"), All)
	if err != nil {
		t.Fatal(err)
	}
	sameRun(t, "final", got, want)
	closeRun(got)
}

// TestDeltaWindowDropsChunks: chunks that leave the front of the series (a rolling
// window) leave the run read back too.
func TestDeltaWindowDropsChunks(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	rec := newRecording(t, "window")
	rec.window = 2
	for step := range 12 {
		rec.add(9000, step, 40, 3)
		want := rec.checkpoint(false)
		got, err := LoadParts(Path("window"), All)
		if err != nil {
			t.Fatalf("checkpoint %d: %v", step, err)
		}
		sameRun(t, fmt.Sprint("checkpoint ", step), got, want)
		closeRun(got)
	}
	if rec.w.Deltas < 5 {
		t.Errorf("%d deltas", rec.w.Deltas)
	}
	if got, err := LoadParts(Path("window"), Samples); err != nil || got.Profile.Series.Len() >= rec.n || got.Profile.Series.Chunks[0].Min == 1e9 {
		t.Errorf("the window dropped nothing: %v", err)
	} else {
		closeRun(got)
	}
}

// TestDeltaBytesFollowNewData: over the checkpoints of a steady run of a busy host (long
// lived threads on the same stacks, and short-lived processes, each new threads and
// stacks), the bytes written grow with what is new, not with the run: at most three times
// the bytes the store keeps of it, where writing the run whole at each checkpoint writes
// many times that.
func TestDeltaBytesFollowNewData(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	rec := newRecording(t, "steady")
	scratch := filepath.Join(t.TempDir(), "whole.stax")
	// 8 threads at 99 Hz and 27 new processes a second, checkpoints every 2 s.
	const checkpoints = 100
	var whole int64
	tid := 1000
	for range checkpoints {
		rec.add(1584, 0, 400, 8)
		for range 54 {
			rec.addThread(uint32(tid), 3)
			tid++
		}
		run := rec.checkpoint(false)
		if err := SaveStored(scratch, run); err != nil {
			t.Fatal(err)
		}
		info, _ := os.Stat(scratch)
		whole += info.Size()
	}
	kept := int64(0)
	for _, p := range []string{Path("steady"), DeltaPath("steady"), SamplesPath("steady")} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		kept += info.Size()
	}
	written := rec.w.Written + rec.log.Size()
	t.Logf("%d checkpoints: %d bases, %d deltas; %d bytes written (run file and deltas %d, samples %d), %d kept (ratio %.2f); written whole at each checkpoint: %d (ratio %.2f)",
		checkpoints, rec.w.Bases, rec.w.Deltas, written, rec.w.Written, rec.log.Size(), kept, float64(written)/float64(kept),
		whole+rec.log.Size(), float64(whole+rec.log.Size())/float64(kept))
	if written > 3*kept {
		t.Errorf("%d bytes written to keep %d: more than 3 times", written, kept)
	}
	got, err := LoadParts(Path("steady"), Samples)
	if err != nil {
		t.Fatal(err)
	}
	defer closeRun(got)
	if got.Profile.TotalSamples() != rec.n {
		t.Errorf("read back %d samples, want %d", got.Profile.TotalSamples(), rec.n)
	}
}

// TestDeltaTornTailIsDropped: a record cut short (a crash, a full disk) or damaged is
// dropped, with what follows it, and counted; the run reads as of the checkpoint before.
func TestDeltaTornTailIsDropped(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	rec := newRecording(t, "torn")
	var saved []*Run
	var sizes []int64
	for range 4 {
		rec.add(500, 0, 30, 3)
		saved = append(saved, rec.checkpoint(false))
		sizes = append(sizes, rec.w.DeltaFileBytes)
	}
	if rec.w.Deltas != 3 {
		t.Fatalf("%d deltas written, want 3", rec.w.Deltas)
	}
	whole, err := os.ReadFile(DeltaPath("torn"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		b    []byte
		want int // checkpoint read back
	}{
		{"cut in the last record", whole[:len(whole)-7], 2},
		{"cut in its header", whole[:sizes[2]+3], 2},
		{"a bit flipped in the third record", func() []byte {
			b := bytes.Clone(whole)
			b[sizes[1]+20] ^= 1
			return b
		}(), 1},
	} {
		if err := os.WriteFile(DeltaPath("torn"), c.b, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := LoadParts(Path("torn"), All)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got.DeltaDamage == nil || got.DeltaDamage.Dropped != int64(len(c.b))-sizes[c.want] || got.DeltaDamage.Records != c.want {
			t.Errorf("%s: damage %+v, want %d records and %d bytes dropped", c.name, got.DeltaDamage, c.want, int64(len(c.b))-sizes[c.want])
		}
		sameRun(t, c.name, got, saved[c.want])
		closeRun(got)
		if m, err := ReadMeta(Path("torn")); err != nil || m.Samples != saved[c.want].Meta.Samples {
			t.Errorf("%s: meta alone: %d samples, %v; want %d", c.name, m.Samples, err, saved[c.want].Meta.Samples)
		}
	}
	// A new base written but the delta file not yet started over: its records are of the
	// older generation, and are not applied to the new base.
	if err := os.WriteFile(DeltaPath("torn"), whole, 0o600); err != nil {
		t.Fatal(err)
	}
	r := saved[3]
	r.Meta.DeltaGen = rec.w.gen + 1
	if err := SaveStored(Path("torn"), r); err != nil {
		t.Fatal(err)
	}
	got, err := LoadParts(Path("torn"), All)
	if err != nil || got.DeltaDamage != nil {
		t.Fatalf("a delta file of the older generation: %v, damage %+v", err, got.DeltaDamage)
	}
	sameRun(t, "older generation", got, saved[3])
	closeRun(got)
}

// deltaFuzzBase writes a base of generation 7 of run id and a delta file of several
// records to it into the store, and returns the delta file's bytes; with offCPU, the run
// records off-CPU time, wakers and intervals; with traces, it keeps a tracepoint's samples.
func deltaFuzzBase(t testing.TB, id string, offCPU, traces bool) []byte {
	rec := newRecording(t, id)
	if offCPU {
		rec.offCPU = &offRecording{off: agg.NewRun(), wakeNs: agg.NewRun(), wakeN: agg.NewRun(), late: 1}
	}
	if traces {
		rec.traceFormat = []byte("name: x\nformat:\n\tfield:u64 n;\toffset:8;\tsize:8;\tsigned:0;\n")
		rec.live.KeepTraces(0, 20)
	}
	rec.w.gen = 6
	for i := range 4 {
		rec.add(200, i*4, 6+i, 2+i)
		if offCPU {
			rec.addOff(100, i*3, 4+i, 2+i)
		}
		if traces {
			rec.addTraced(4 + i*6)
		}
		rec.checkpoint(false)
	}
	b, err := os.ReadFile(DeltaPath(id))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzDeltaFile: whatever the delta file holds, reading the run gives it or an error,
// never a panic, within the file's bounds: the run without off-CPU parts, the run with
// them and the run that keeps a tracepoint's samples, each read whole and as a view of its
// off-CPU time reads it.
func FuzzDeltaFile(f *testing.F) {
	dir := f.TempDir()
	f.Setenv("STAX_HOME", dir)
	good := deltaFuzzBase(f, "fuzz", false, false)
	offGood := deltaFuzzBase(f, "fuzzoff", true, false)
	trGood := deltaFuzzBase(f, "fuzztr", false, true)
	bases := map[string][]byte{}
	for _, id := range []string{"fuzz", "fuzzoff", "fuzztr"} {
		b, err := os.ReadFile(Path(id))
		if err != nil {
			f.Fatal(err)
		}
		bases[id] = b
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(good[:deltaHeaderSize])
	f.Add(offGood)
	f.Add(offGood[:len(offGood)-9])
	f.Add(offGood[:len(offGood)/2])
	f.Add(trGood)
	f.Add(trGood[:len(trGood)-9])
	f.Fuzz(func(t *testing.T, b []byte) {
		for id, base := range bases {
			os.WriteFile(Path(id), base, 0o600)
			if err := os.WriteFile(DeltaPath(id), b, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, want := range []Parts{All, OffCPUPart} {
				if r, err := LoadParts(Path(id), want); err == nil {
					if r.Profile.Series.Reader != nil {
						r.Profile.Series.Each(0, 0, func(agg.Sample) {})
						closeRun(r)
					}
					agg.Summarize(&r.Profile)
					for _, p := range partsOf(r) {
						if p != nil {
							agg.Summarize(p)
						}
					}
				}
			}
			ReadMeta(Path(id))
		}
	})
}

// TestDeltaFuzzSeeds keeps the committed seeds of FuzzDeltaFile those of this writer: a
// base of generation 7 and its records.
func TestDeltaFuzzSeeds(t *testing.T) {
	if os.Getenv("STAX_WRITE_FUZZ_SEEDS") == "" {
		t.Skip("set STAX_WRITE_FUZZ_SEEDS=1 to write the seeds")
	}
	t.Setenv("STAX_HOME", t.TempDir())
	good := deltaFuzzBase(t, "fuzz", false, false)
	tr := deltaFuzzBase(t, "fuzztr", false, true)
	dir := filepath.Join("testdata", "fuzz", "FuzzDeltaFile")
	os.MkdirAll(dir, 0o755)
	for i, b := range [][]byte{good, good[:len(good)-9], good[:deltaHeaderSize+5], tr, tr[:len(tr)-9]} {
		os.WriteFile(filepath.Join(dir, fmt.Sprint("seed", i)), fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", b), 0o644)
	}
}

func closeRun(r *Run) {
	if f, ok := r.Profile.Series.Reader.(*SampleFile); ok {
		f.Close()
	}
}
