package recorder

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/spans"
	"github.com/stax-profiler/stax/internal/store"
)

// addTasks adds n ITT tasks to the recorder's spans, after the i-th.
func addTasks(r *Recorder, from, n int) {
	src := r.spans.Source(spans.KindITT, 10, "tasks")
	for i := from; i < from+n; i++ {
		at := uint64(3e14 + i*1000)
		r.spans.Add(spans.Span{Name: fmt.Sprintf("task %d", i%7), Pid: 10, Tid: 11, Start: at, End: at + 500, Source: src})
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

// TestCheckpointsAppendNewSpans: each checkpoint appends the records of the spans new
// since the last to the run's spans file, and the stored run reads back every span.
func TestCheckpointsAppendNewSpans(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	os.MkdirAll(store.Dir(), 0o700)
	r := newRecorder(Options{})
	r.id = "spans"
	addTasks(r, 0, 5000)
	r.save(false)
	first := fileSize(t, store.SpanLogPath(r.id))
	if first < 16+8*5000 {
		t.Fatalf("the spans file has %d bytes after 5,000 spans", first)
	}
	r.save(false)
	if got := fileSize(t, store.SpanLogPath(r.id)); got != first {
		t.Fatalf("a checkpoint without new spans wrote %d bytes to the spans file", got-first)
	}
	addTasks(r, 5000, 10)
	r.saveFinal()
	if grew := fileSize(t, store.SpanLogPath(r.id)) - first; grew < 8*10 || grew > 46*10 {
		t.Fatalf("10 new spans grew the spans file by %d bytes", grew)
	}
	run, err := store.Load(store.Path(r.id))
	if err != nil || run.SpansErr != nil || run.Spans.Len() != 5010 || run.Spans.At(5009).Start != 3e14+5009*1000 {
		t.Fatalf("%v, %v, %d spans", err, run.SpansErr, run.Spans.Len())
	}
	if fileSize(t, store.Path(r.id)) > 8<<10 {
		t.Errorf("the run's file takes %d bytes: it holds the spans' records", fileSize(t, store.Path(r.id)))
	}
}

// TestSpansStayInTheRunsFileWhenTheSpansFileFails: a spans file that cannot be made
// leaves the spans in the run's file, and a note says so.
func TestSpansStayInTheRunsFileWhenTheSpansFileFails(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	r := newRecorder(Options{})
	r.id = "nofile"
	os.MkdirAll(filepath.Join(store.SpanLogPath(r.id), "in the way"), 0o700)
	addTasks(r, 0, 100)
	r.save(false)
	addTasks(r, 100, 100)
	r.saveFinal()
	run, err := store.Load(store.Path(r.id))
	if err != nil || run.SpansErr != nil || run.Spans.Len() != 200 {
		t.Fatalf("%v, %v, %d spans", err, run.SpansErr, run.Spans.Len())
	}
	var notes int
	for _, n := range run.Meta.Notes {
		if strings.Contains(n, "spans stay in the run's file") {
			notes++
		}
	}
	if notes != 1 {
		t.Errorf("notes %q: want one saying the spans stay in the run's file", run.Meta.Notes)
	}
}

// TestCheckpointSetsTheMemoryLimitFromTheLiveHeap: after each checkpoint the Go runtime's
// soft memory limit is one and a half times the live heap plus the slack, never under the
// floor, and follows the live heap as it grows; the final save puts back the limit there
// was before, and a GOMEMLIMIT of the user's is never replaced.
func TestCheckpointSetsTheMemoryLimitFromTheLiveHeap(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	saved := heapLimit
	t.Cleanup(func() { heapLimit = saved })
	var live uint64 = 10 << 20
	var limits []int64
	var limit int64 = math.MaxInt64
	set := func(n int64) int64 {
		limits = append(limits, n)
		old := limit
		limit = n
		return old
	}
	heapLimit = &memLimiter{set: set, live: func() uint64 { return live }}
	r := newRecorder(Options{})
	r.id = "limit"
	r.save(false)
	live = 300 << 20
	r.save(false)
	r.saveFinal()
	want := []int64{heapLimitFloor, 450<<20 + heapLimitSlack, math.MaxInt64}
	if !slices.Equal(limits, want) {
		t.Fatalf("limits set %v, want %v", limits, want)
	}

	limits = nil
	heapLimit.user = true
	r = newRecorder(Options{})
	r.id = "user-limit"
	r.save(false)
	r.saveFinal()
	if len(limits) != 0 {
		t.Fatalf("with GOMEMLIMIT set, a checkpoint set the limit to %v", limits)
	}
}

// TestCheckpointMemoryLimitIsTheRuntimes: with the runtime's own live heap, the limit a
// checkpoint sets is the one the runtime then holds, above what is live, until the final
// save puts back the one before.
func TestCheckpointMemoryLimitIsTheRuntimes(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	saved := heapLimit.user
	t.Cleanup(func() { heapLimit.user = saved })
	heapLimit.user = false
	runtime.GC()
	r := newRecorder(Options{})
	r.id = "runtime-limit"
	r.save(false)
	got := debug.SetMemoryLimit(-1)
	if live := liveHeap(); live == 0 || got < int64(live)+heapLimitSlack || got < heapLimitFloor || got == before {
		t.Fatalf("memory limit %d after a checkpoint with %d bytes live", got, live)
	}
	r.saveFinal()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Fatalf("memory limit %d after the final save, %d before the recording", got, before)
	}
}
