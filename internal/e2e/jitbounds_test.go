package e2e

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// TestHugePerfMapCostsBoundedMemoryAndTime records a program that writes a perf map of three
// million lines (far more than stax keeps) and then runs an ordinary function. The map is
// read off the rings' path and within a memory budget: no sample is lost while it is read,
// the recorder's memory stays bounded, the run ends soon after the program exits, and the
// status says the map's functions were not all kept.
func TestHugePerfMapCostsBoundedMemoryAndTime(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/bigmap.c")
	prog := testutil.CC(t, t.TempDir(), "bigmap", "gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-fno-inline", src)

	const budgetMs = 1500
	rec := e.cmd("record", "-q", "--", prog, "3000000", fmt.Sprint(budgetMs))
	var out, errb bytes.Buffer
	rec.Stdout, rec.Stderr = &out, &errb
	if err := rec.Run(); err != nil {
		t.Fatalf("record: %v\n%s%s", err, out.String(), errb.String())
	}
	ended := monotonicNs()
	defer removeJITFiles(t, e)

	var exitNs int64
	var beforeMs, inMs float64
	if _, err := fmt.Sscanf(strings.TrimSpace(out.String()), "exit %d %f %f", &exitNs, &beforeMs, &inMs); err != nil {
		t.Fatalf("program output %q: %v", out.String(), err)
	}
	after := time.Duration(ended - exitNs)
	maxRSS := rec.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10

	var st api.Status
	e.mustJSON(&st, "status")
	var top api.Top
	e.mustJSON(&top, "top", "-n", "5")
	hot, _, _ := row(top, "after_map")
	t.Logf("run ended %v after the program; recorder max RSS %d MiB; %d samples, %d lost, after_map %d; jit %+v",
		after, maxRSS>>20, st.Meta.Samples, st.Meta.Lost, hot, st.JIT)

	if st.Meta.Lost != 0 {
		t.Errorf("%d samples lost while the perf map was read", st.Meta.Lost)
	}
	// after_map's share of the samples is its share of the program's CPU time (the rate the
	// kernel kept under load does not matter); the run's own start and end cost a few.
	if want := uint64(float64(st.Meta.Samples) * inMs / (beforeMs + inMs) * 0.9); hot < want {
		t.Errorf("after_map has %d of %d samples, want at least %d (%.0f of the program's %.0f ms of CPU)", hot, st.Meta.Samples, want, inMs, beforeMs+inMs)
	}
	// The JIT tables keep at most their budget; the rest of the recorder is tens of MiB. A
	// race-detector build of stax takes several times the memory, so there the tables'
	// own count is checked instead of the process's size.
	if st.Meta.JITMemory == 0 || st.Meta.JITMemory > st.Meta.JITMemoryLimit || st.Meta.JITMemoryLimit > 256<<20 {
		t.Errorf("JIT tables keep %d bytes of at most %d", st.Meta.JITMemory, st.Meta.JITMemoryLimit)
	}
	if !testutil.Race && maxRSS > 600<<20 {
		t.Errorf("recorder's max RSS %d MiB, want under 600 MiB whatever the perf map holds", maxRSS>>20)
	}
	// The run ends within a second of the program's exit on an idle machine: the JIT files
	// get half a second, then the rest of the run is named and saved. Allow for a busy
	// machine and a race-detector build (each some times slower), not for reading the
	// whole map (minutes for maps of this kind).
	limit := 5 * time.Second
	if testutil.Race {
		limit *= 4
	}
	if after > limit {
		t.Errorf("run ended %v after the program exited", after)
	}
	// The map holds far more than the budget: its oldest functions were dropped (or, on a
	// slow machine, it was not read to its end), and status says so.
	var note string
	var evicted uint64
	for _, s := range st.JIT {
		if strings.HasSuffix(s.Path, ".map") {
			note, evicted = s.Error, s.Evicted
		}
	}
	if evicted == 0 && !strings.Contains(note, "stopped reading") && !strings.Contains(note, "not read to its end") {
		t.Errorf("status does not say the perf map's functions were not all kept: %+v", st.JIT)
	}
}

func monotonicNs() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}
