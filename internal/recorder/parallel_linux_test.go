package recorder

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/perfevent"
	"github.com/stax-profiler/stax/internal/perfrecord"
	"github.com/stax-profiler/stax/internal/replay"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil"
)

// dwarfCapture records a -O2 -fomit-frame-pointer qsort program (its time in libc's merge
// sort, recursive, and a comparator) for ms of CPU time in dwarf mode with STAX_CAPTURE set,
// and returns the capture's records and the program's pid.
func dwarfCapture(t testing.TB, dir string, ms, freq int) ([]replay.Record, int) {
	t.Helper()
	testutil.RequirePerf(t)
	prog := testutil.CC(t, dir, "qsort", "gcc", "-O2", "-fomit-frame-pointer", "-g",
		"-I", filepath.Join("..", "e2e", "testdata"), filepath.Join("..", "e2e", "testdata", "qsort.c"))
	path := filepath.Join(dir, "dwarf.cap")
	t.Setenv("STAX_CAPTURE", path)
	r, err := Start(Options{Argv: []string{prog, fmt.Sprint(ms)}, Freq: freq, CallGraph: "dwarf", StackSize: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if code := r.Loop(); code != 0 {
		t.Fatalf("qsort exit status %d", code)
	}
	os.Unsetenv("STAX_CAPTURE")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := replay.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return recs, r.Pid()
}

// replayed plays recs back with the given number of stack workers, each batch split as
// finely as minParallel allows, and returns the stored run's samples per thread and stack.
func replayed(t testing.TB, recs []replay.Record, pid int, callGraph string, workers, minParallel int) (map[string]uint64, *store.Run) {
	t.Helper()
	r, err := Replay(replay.NewSource(recs, 1000), store.Meta{Pid: pid, Command: []string{"replay"}, Event: "cpu-clock"},
		Options{Freq: 999, CallGraph: callGraph, Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	r.in.minParallel, r.in.alwaysParallel = minParallel, workers > 1
	r.Loop()
	run, err := store.Load(r.StorePath())
	if err != nil {
		t.Fatal(err)
	}
	p := &run.Profile
	got := map[string]uint64{}
	for _, e := range p.Entries {
		var names []string
		for _, f := range p.AppendFrames(nil, e.Stack) {
			names = append(names, p.Frames[f].Func)
		}
		got[fmt.Sprintf("%d %s", e.Tid, strings.Join(names, ";"))] += e.Count
	}
	return got, run
}

// sameProfile fails unless two replays counted the same stacks the same number of times, in
// the same order, and ended their stacks for the same reasons.
func sameProfile(t *testing.T, serial, parallel map[string]uint64, rs, rp *store.Run) {
	t.Helper()
	ms, mp := rs.Meta, rp.Meta
	if !reflect.DeepEqual(rs.Profile.Series, rp.Profile.Series) {
		t.Error("the samples' times, stacks and CPUs were added in another order")
	}
	if ms.Samples == 0 || ms.Samples != mp.Samples || ms.BadRecords != mp.BadRecords {
		t.Fatalf("serial: %d samples, %d bad; parallel: %d samples, %d bad", ms.Samples, ms.BadRecords, mp.Samples, mp.BadRecords)
	}
	if !maps.Equal(ms.StackEnds, mp.StackEnds) {
		t.Errorf("stack ends differ: serial %v, parallel %v", ms.StackEnds, mp.StackEnds)
	}
	if !maps.Equal(serial, parallel) {
		for _, k := range slices.Sorted(maps.Keys(serial)) {
			if serial[k] != parallel[k] {
				t.Errorf("%d serial, %d parallel: %s", serial[k], parallel[k], k)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(parallel)) {
			if _, ok := serial[k]; !ok {
				t.Errorf("0 serial, %d parallel: %s", parallel[k], k)
			}
		}
	}
}

// TestParallelUnwindingMatchesSerial unwinds one DWARF capture of a real program on one
// worker and on four, its batches cut into pieces of a few samples: every stack, its count
// and how it ended must be the same. Under -race this also checks the workers share the
// tracker and the call-frame tables safely.
func TestParallelUnwindingMatchesSerial(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("STAX_HOME", dir)
	recs, pid := dwarfCapture(t, dir, 300, 2000)
	serial, rs := replayed(t, recs, pid, "dwarf", 1, minParallel)
	parallel, rp := replayed(t, recs, pid, "dwarf", 4, 2)
	sameProfile(t, serial, parallel, rs, rp)
	ms := rs.Meta
	if ms.StackEnds["complete"] < ms.Samples/2 {
		t.Errorf("only %d of %d stacks complete: %v", ms.StackEnds["complete"], ms.Samples, ms.StackEnds)
	}
	t.Logf("%d samples, %d distinct stacks, ends %v", ms.Samples, len(serial), ms.StackEnds)
}

// TestParallelFramePointerStacksMatchSerial does the same with the committed frame-pointer
// capture, without a kernel.
func TestParallelFramePointerStacksMatchSerial(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	f, err := os.Open(capture)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := replay.Decode(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	pid := 0
	dec := perfrecord.Decoder{SampleType: perfevent.SampleType, SampleIDAll: true}
	for _, r := range recs {
		var s perfrecord.Sample
		if h, err := perfrecord.ParseHeader(r.Data); err == nil && h.Type == perfrecord.TypeSample && dec.Sample(r.Data, &s) == nil {
			pid = int(s.Pid)
			break
		}
	}
	serial, rs := replayed(t, recs, pid, "fp", 1, minParallel)
	parallel, rp := replayed(t, recs, pid, "fp", 3, 2)
	sameProfile(t, serial, parallel, rs, rp)
}

// BenchmarkDwarfIngest measures what each sample of a DWARF recording costs the recorder
// once read from its ring: decoding, unwinding 8 KiB of stack copy through libc and the
// program, and counting, on one worker and on all cores (samples/s is the rate kept up
// with; each worker needs a core to itself).
// Run: go test ./internal/recorder -run '^$' -bench DwarfIngest
func BenchmarkDwarfIngest(b *testing.B) {
	dir := b.TempDir()
	b.Setenv("STAX_HOME", dir)
	recs, pid := dwarfCapture(b, dir, 1000, 4000)
	for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			r, err := Replay(replay.NewSource(nil, 1), store.Meta{Pid: pid, Command: []string{"replay"}, Event: "cpu-clock"},
				Options{Freq: 999, CallGraph: "dwarf", Workers: workers, Checkpoint: time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			r.in.stepFinal, r.in.alwaysParallel = true, workers > 1
			var samples []replay.Record
			for _, rec := range recs { // the process tree, and the call-frame tables loaded once
				r.read(rec.CPU, rec.Data)
				if h, err := perfrecord.ParseHeader(rec.Data); err == nil && h.Type == perfrecord.TypeSample {
					samples = append(samples, rec)
				}
			}
			r.flushBatch()
			b.ResetTimer()
			start := time.Now()
			for b.Loop() {
				for _, s := range samples {
					r.addToBatch(s.CPU, s.Data)
				}
				r.flushBatch()
			}
			b.ReportMetric(float64(b.N*len(samples))/time.Since(start).Seconds(), "samples/s")
		})
	}
}

// TestIngestLoadSpreadsOnlyWhenBusy drives the load estimate with batches at steady rates:
// one core half busy or more spreads the batches, a light load keeps them on one, and the
// switch back waits until the load falls well below (no flapping at the threshold).
func TestIngestLoadSpreadsOnlyWhenBusy(t *testing.T) {
	now := time.Unix(1000, 0)
	run := func(l *ingestLoad, samplesPerSec, nsPerSample float64) {
		const batch = 1000
		every := time.Duration(batch / samplesPerSec * 1e9)
		for end := now.Add(time.Second); now.Before(end); {
			now = now.Add(every)
			l.observe(batch, 1, time.Duration(batch*nsPerSample), now)
		}
	}
	var l ingestLoad
	run(&l, 80_000, 2_000) // 2 CPUs at 40 kHz, frame pointers: 16% of a core
	if l.parallel {
		t.Fatal("a light load is spread")
	}
	run(&l, 640_000, 2_000) // 16 CPUs at 40 kHz: 1.3 cores
	if !l.parallel {
		t.Fatal("a load beyond one core is not spread")
	}
	run(&l, 200_000, 2_000) // 40%: stays spread
	if !l.parallel {
		t.Fatal("went back to one core above the lower threshold")
	}
	run(&l, 100_000, 2_000) // 20%
	if l.parallel {
		t.Fatal("a load that fell to 20% is still spread")
	}
}
