//go:build linux

package stax

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/spans"
)

// reset forgets any recording, as in a process stax does not record.
func reset(t testing.TB) {
	state.Store(stateOff)
	cur.Store(nil)
	t.Setenv(envDir, t.TempDir())
}

func readSpans(t *testing.T) []spans.Span {
	t.Helper()
	out, h := readSpansHeader(t)
	if h.Dropped != 0 || h.FailedWrites != 0 {
		t.Fatalf("header: %d dropped, %d writes failed", h.Dropped, h.FailedWrites)
	}
	return out
}

// readSpansHeader reads the spans file whole (every record whole, none bad) and its header.
func readSpansHeader(t *testing.T) ([]spans.Span, spans.ITTHeader) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(os.Getenv(envDir), "stax-"+strconv.Itoa(os.Getpid())+".spans"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := spans.ParseITTHeaderFull(b)
	if err != nil || int(h.Pid) != os.Getpid() || h.Version != 2 || h.Start == 0 {
		t.Fatalf("header: %+v, %v", h, err)
	}
	var d spans.ITTDecoder
	var out []spans.Span
	n, bad, dropped, err := d.Decode(b[h.Size:], func(s spans.Span) { out = append(out, s) })
	if err != nil || bad != 0 || dropped != 0 || n != len(b)-h.Size {
		t.Fatalf("decode: %d of %d bytes, %d bad, %d dropped, %v", n, len(b)-h.Size, bad, dropped, err)
	}
	return out, h
}

func TestOffWritesNothing(t *testing.T) {
	reset(t)
	s := Begin("a")
	s.End()
	Mark("m")
	if s != (Span{}) || Recording() {
		t.Fatalf("spans off: Begin returned %+v, Recording %v", s, Recording())
	}
	if _, err := os.Stat(filepath.Join(os.Getenv(envDir), "stax-"+strconv.Itoa(os.Getpid())+".spans")); err == nil {
		t.Fatalf("a spans file was written while off")
	}
}

func TestSpansAndMarkers(t *testing.T) {
	reset(t)
	if !on() {
		t.Fatal("cannot turn spans on")
	}
	defer state.Store(stateOff)
	before := monoNow(t)
	outer := Begin("outer")
	inner := Begin("inner")
	time.Sleep(2 * time.Millisecond)
	inner.End()
	Mark("halfway")
	long := strings.Repeat("é", 1500)
	Begin(long).End()
	outer.End()
	after := monoNow(t)
	got := readSpans(t)
	if len(got) != 4 {
		t.Fatalf("%d spans, want 4: %+v", len(got), got)
	}
	names := []string{"inner", "halfway", long[:maxName], "outer"} // é is 2 bytes: the cut is whole
	for i, s := range got {
		if s.Name != names[i] {
			t.Errorf("span %d named %.20q, want %.20q", i, s.Name, names[i])
		}
		if s.Start < before || s.End > after || s.End < s.Start || s.Tid == 0 {
			t.Errorf("span %d %+v: not inside [%d, %d] on a thread", i, s, before, after)
		}
	}
	if d := got[0].End - got[0].Start; d < uint64(2*time.Millisecond) {
		t.Errorf("inner lasted %d ns, slept 2 ms in it", d)
	}
	if got[1].End != got[1].Start {
		t.Errorf("the marker lasts %d ns", got[1].End-got[1].Start)
	}
	if got[3].Start > got[0].Start || got[3].End < got[1].End {
		t.Errorf("outer %+v does not hold inner %+v", got[3], got[0])
	}
}

// TestAttachFile: without the variable, spans are on while stax's attach file exists, and
// a span begun in one recording is not written into the next.
func TestAttachFile(t *testing.T) {
	reset(t)
	state.Store(stateUnknown)
	defer state.Store(stateOff)
	flag := "/tmp/stax-" + strconv.Itoa(os.Getpid()) + ".recording"
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(flag)
	Mark("before") // starts the watcher
	waitState(t, stateOn)
	stale := Begin("stale")
	os.Remove(flag)
	waitState(t, stateOff)
	os.WriteFile(flag, nil, 0o644)
	waitState(t, stateOn)
	stale.End()
	Begin("fresh").End()
	got := readSpans(t)
	if len(got) != 1 || got[0].Name != "fresh" {
		t.Fatalf("after a second attach the file holds %+v, want the fresh span alone", got)
	}
}

func waitState(t *testing.T, want uint32) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); state.Load() != want; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("state %d after 10 s, want %d", state.Load(), want)
		}
	}
}

func monoNow(t *testing.T) uint64 {
	t.Helper()
	w := cur.Load()
	if w == nil {
		t.Fatal("no writer")
	}
	return w.now()
}

// BenchmarkBeginEndOff is a span in a process stax does not record: one atomic load each.
func BenchmarkBeginEndOff(b *testing.B) {
	reset(b)
	for i := 0; i < b.N; i++ {
		Begin("work").End()
	}
}

// BenchmarkBeginEndOn is a span in a recorded process: a clock read and a thread id at
// Begin, one write system call at End.
func BenchmarkBeginEndOn(b *testing.B) {
	reset(b)
	if !on() {
		b.Fatal("cannot turn spans on")
	}
	defer state.Store(stateOff)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		Begin("work").End()
	}
}
