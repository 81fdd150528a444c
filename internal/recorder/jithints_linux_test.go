package recorder

import (
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/jit"
	"github.com/stax-profiler/stax/internal/store"
)

// A process whose unnamed JIT code runs under a JVM, or oneDNN, with no perf map or
// jitdump, gets the hint of its runtime in one line; another process keeps the general one.
func TestJITRuntimeHints(t *testing.T) {
	run := &store.Run{
		Profile: agg.Profile{
			Frames: []agg.Frame{
				{Func: "[unknown] 0x7f00", Image: "[anon]", Kind: agg.KindJIT},
				{Func: "JavaCalls::call_helper", Image: "libjvm.so", Kind: agg.KindUser},
				{Func: "dnnl_primitive_execute", Image: "libdnnl.so.2.6", Kind: agg.KindUser},
				{Func: "main", Image: "app", Kind: agg.KindUser},
			},
			Stacks: [][]uint32{{0, 1}, {0, 2}, {0, 3}},
			Entries: []agg.Entry{{Pid: 10, Tid: 10, Stack: 0, Count: 5}, {Pid: 20, Tid: 20, Stack: 1, Count: 7},
				{Pid: 30, Tid: 30, Stack: 2, Count: 9}},
		},
	}
	run.Profile.LocateFrameStacks()
	notes := unnamedJITNotes(run, func(pid int) string { return map[int]string{10: "java"}[pid] })
	if len(notes) != 3 {
		t.Fatalf("want a note per process:\n%s", strings.Join(notes, "\n"))
	}
	for i, want := range []string{
		"pid 10 (java): 5 samples in JIT code with no name; it is a JVM (libjvm.so) with no perf map yet: `jcmd 10 Compiler.perfmap` writes one",
		"pid 20: 7 samples in JIT code with no name; its JIT kernels are oneDNN's (libdnnl.so.2.6), which names them in a perf map when started with ONEDNN_JIT_PROFILE=2",
		"pid 30: 9 samples in JIT code with no name; no jitdump or perf map names it yet",
	} {
		if !strings.HasPrefix(notes[i], want) || strings.Contains(notes[i], "\n") {
			t.Errorf("note %d:\n%s\nwant it to start\n%s", i, notes[i], want)
		}
	}
	// A stale file of an earlier process with the same pid is not the JVM's.
	run.JIT = []store.JITSource{{Pid: 10, Path: "/tmp/jit-10.dump", Kind: "jitdump", Error: jit.ErrStale.Error() + " (last written ...)"}}
	if notes = unnamedJITNotes(run, func(int) string { return "" }); !strings.Contains(notes[0], "`jcmd 10 Compiler.perfmap`") {
		t.Errorf("a JVM with a stale jitdump of its pid: %s", notes[0])
	}
	// A JVM that has a perf map already is told about its map, not about jcmd.
	run.JIT = []store.JITSource{{Pid: 10, Path: "/tmp/perf-10.map", Kind: "perfmap", Functions: 3}}
	notes = unnamedJITNotes(run, func(int) string { return "" })
	if strings.Contains(notes[0], "jcmd") || !strings.Contains(notes[0], "/tmp/perf-10.map has no line") {
		t.Errorf("a JVM with a perf map: %s", notes[0])
	}
}
