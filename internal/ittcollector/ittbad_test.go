package ittcollector

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/spans"
)

// TestITTBadInput drives the collector with ends without a begin, tasks left open (at
// thread exit, on the exiting thread at process exit, on a thread still running then), a
// 1 MB name and a marker without a name: nothing crashes, the open tasks end where their
// thread or the process did and are counted unfinished, the ends without a begin are
// counted, and __itt_thread_set_name names the thread.
func TestITTBadInput(t *testing.T) {
	needBuild(t)
	prog, err := buildTestProgram(t.TempDir(), "ittbad")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, _ := runProg(t, time.Minute, append(collectEnv(dir), EnvITT64+"="+libPath), prog)
	var pid, worker int
	var comm string
	if _, err := fmt.Sscanf(out, "pid %d worker %d comm %s", &pid, &worker, &comm); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	if comm != "itt-worker-name" {
		t.Errorf("the worker's name is %q, want the first 15 bytes of what it set", comm)
	}
	data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("itt-%d.spans", pid)))
	if err != nil {
		t.Fatal(err)
	}
	h, err := spans.ParseITTHeaderFull(data)
	if err != nil {
		t.Fatal(err)
	}
	var d spans.ITTDecoder
	got := map[string]spans.Span{}
	consumed, bad, dropped, err := d.Decode(data[h.Size:], func(s spans.Span) {
		if len(s.Name) > 100 {
			if s.Name != strings.Repeat("x", spans.MaxName) {
				t.Errorf("the long name is %d bytes, not cut to %d x", len(s.Name), spans.MaxName)
			}
			s.Name = "long"
		}
		got[s.Name] = s
	})
	if err != nil || bad != 0 || dropped != 0 || h.Dropped != 0 || consumed != len(data)-h.Size {
		t.Fatalf("decode: %v, %d bad, %d dropped (header %d), %d of %d bytes", err, bad, dropped, h.Dropped, consumed, len(data)-h.Size)
	}
	for _, name := range []string{"a", "b", "long", "(unnamed)", "open_at_exit"} {
		if _, ok := got[name]; !ok {
			t.Errorf("no %q span: %v", name, got)
		}
	}
	if _, ok := got["blocked"]; ok {
		t.Errorf("the task open on a running thread at exit was written")
	}
	if a, b := got["a"], got["b"]; a.Tid != uint32(worker) || a.End < b.End || a.Depth != 0 || b.Depth != 1 {
		t.Errorf("the worker's a %+v should hold b %+v and end when its thread did", a, b)
	}
	if e := got["open_at_exit"]; e.End < got["(unnamed)"].Start || e.Tid != uint32(pid) {
		t.Errorf("open_at_exit %+v: want it ended at exit on the main thread", e)
	}
	if d.Unmatched != 2 || d.Unfinished != 3 {
		t.Errorf("%d ends without a begin and %d unfinished tasks, want 2 and 3 (a, open_at_exit, blocked)", d.Unmatched, d.Unfinished)
	}
}
