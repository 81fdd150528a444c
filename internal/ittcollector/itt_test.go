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

// readITT decodes a spans file whole: its pid, its spans and the drops it reports.
func readITT(t *testing.T, path string) (pid uint32, got []spans.Span, dropped uint64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := spans.ParseITTHeaderFull(data)
	if err != nil {
		t.Fatal(err)
	}
	if h.Version != 2 || h.Start == 0 {
		t.Errorf("header %+v: want version 2 with the process's start time", h)
	}
	var d spans.ITTDecoder
	consumed, bad, dropped, err := d.Decode(data[h.Size:], func(s spans.Span) { got = append(got, s) })
	if err != nil || bad != 0 || consumed != len(data)-h.Size {
		t.Fatalf("decode %s: %v, %d unusable records, %d of %d bytes", path, err, bad, consumed, len(data)-h.Size)
	}
	if h.Dropped < dropped {
		t.Errorf("the header counts %d dropped, its DROP records %d: the header holds every drop", h.Dropped, dropped)
	}
	return h.Pid, got, max(dropped, h.Dropped)
}

// TestITTTasksFromThreads has 4 threads and main run frames of nested tasks 70 deep: every
// thread's 64 outermost tasks per frame, its marker and the frame are in the spans file,
// nested within each other, and the 6 levels past the collector's depth are counted as
// dropped.
func TestITTTasksFromThreads(t *testing.T) {
	needBuild(t)
	prog, err := buildTestProgram(t.TempDir(), "itttasks")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const threads, iters, depth = 4, 300, 70
	out, _ := runProg(t, time.Minute, append(collectEnv(dir), EnvITT64+"="+libPath), prog, "4", "300", "70", "join")
	var pid, filled int
	if _, err := fmt.Sscanf(out, "pid %d filled %d", &pid, &filled); err != nil || filled != 5 {
		t.Fatalf("output %q: want 5 entries filled (the string handle's left alone)", out)
	}
	fpid, got, dropped := readITT(t, filepath.Join(dir, fmt.Sprintf("itt-%d.spans", pid)))
	if int(fpid) != pid {
		t.Errorf("header pid %d, want %d", fpid, pid)
	}
	perThread := map[uint32][]spans.Span{}
	for _, s := range got {
		perThread[s.Tid] = append(perThread[s.Tid], s)
	}
	if len(perThread) != threads+1 {
		t.Fatalf("spans of %d threads, want %d", len(perThread), threads+1)
	}
	for tid, ss := range perThread {
		var tasks, marks, frames int
		for i, s := range ss {
			switch s.Name {
			case "m":
				marks++
				continue
			case "itttasks":
				// The frame holds the tasks before it, back to the previous frame.
				frames++
				if s.Depth != 0 || i < 65 || ss[i-1].Name != "m" || ss[i-2].Depth != 0 || ss[i-2].Start < s.Start || ss[i-1].Start > s.End {
					t.Fatalf("tid %d: frame %+v does not hold its tasks", tid, s)
				}
				continue
			}
			tasks++
			if want := []string{"a", "b", "c"}[s.Depth%3]; s.Name != want || s.Depth >= spans.MaxName {
				t.Fatalf("tid %d: task %+v at depth %d, want %s", tid, s, s.Depth, want)
			}
			// Ended innermost first: the next task is this one's parent, which holds it.
			if s.Depth > 0 && i+1 < len(ss) {
				p := ss[i+1]
				if p.Depth != s.Depth-1 || p.Start > s.Start || p.End < s.End {
					t.Fatalf("tid %d: %+v is not inside its parent %+v", tid, s, p)
				}
			}
		}
		if tasks != iters*64 || marks != iters || frames != iters {
			t.Errorf("tid %d: %d tasks, %d markers, %d frames, want %d, %d and %d", tid, tasks, marks, frames, iters*64, iters, iters)
		}
	}
	if want := uint64((threads + 1) * iters * (depth - 64)); dropped != want {
		t.Errorf("dropped %d, want %d", dropped, want)
	}
}

// Without STAX_JIT_COLLECT=1, __itt_api_init fills nothing and no file is made.
func TestITTOffWithoutCollect(t *testing.T) {
	needBuild(t)
	prog, err := buildTestProgram(t.TempDir(), "itttasks")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, _ := runProg(t, time.Minute, []string{EnvITT64 + "=" + libPath, EnvDir + "=" + dir}, prog, "2", "10", "3", "join")
	if !strings.Contains(out, "filled 0") {
		t.Errorf("output %q: want nothing filled", out)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files made: %v", ents)
	}
}

// A task's begin and end take no lock and make no write: only a full buffer (one write
// for hundreds of tasks) does, and every task reaches the file once.
func TestITTTaskTakesNoLock(t *testing.T) {
	needBuild(t)
	prog, err := buildTestProgram(t.TempDir(), "ittlocks", "-rdynamic")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, _ := runProg(t, time.Minute, collectEnv(dir), prog, "4", "100000")
	var tasks, locks, writes int
	if _, err := fmt.Sscanf(out, "tasks %d locks %d writes %d", &tasks, &locks, &writes); err != nil || tasks != 400000 {
		t.Fatalf("output %q", out)
	}
	// A task record is 40 bytes and a buffer 32 KiB: some 800 tasks a write, each write
	// taking its thread's lock and the file's; a thread's start and exit take a few more.
	if locks*50 > tasks || writes*200 > tasks {
		t.Errorf("%d tasks took %d locks and made %d writes; want about one lock and one write per 400 tasks", tasks, locks, writes)
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 {
		t.Fatalf("files %v, %v", ents, err)
	}
	_, got, dropped := readITT(t, filepath.Join(dir, ents[0].Name()))
	if len(got) != tasks+1 || dropped != 0 {
		t.Errorf("%d spans in the file (%d dropped), want %d", len(got), dropped, tasks+1)
	}
}
