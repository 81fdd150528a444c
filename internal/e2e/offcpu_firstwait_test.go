package e2e

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
	"github.com/stax-profiler/stax/internal/views"
)

// TestOffCPUFirstWaitOfALateThread records two threads that switch tens of thousands of
// times a second, so that the stacks are sampled, and a thread started a third of the way
// in that sleeps 100 ms once, as root: that first wait has its own stack (late_nap,
// reason sleep), and none of the thread's blocked time is without a stack or a reason.
// Started after the switch to sampled stacks, it inherited the events that take every
// stack disabled, and the sampling events with the period the ping-pong had raised them
// to: all 100 ms were [no stack], reason other.
func TestOffCPUFirstWaitOfALateThread(t *testing.T) {
	testutil.RequirePerf(t)
	testutil.RequireRoot(t) // sched:sched_switch, filtered to waits
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/latethreads.c")
	prog := testutil.CC(t, t.TempDir(), "latethreads", "gcc", append(cflags, "-pthread", src)...)
	e := newEnv(t)
	// 500 stacks a second per thread and CPU rather than 4000: the ping-pong is sampled all
	// the same, and a recorder built with the race detector lost 98% of the records at
	// 4000 (among them every one of the late thread's, some runs) and none at 500.
	out, errOut, code := e.run("record", "-q", "--off-cpu-rate", "500", "--", prog, "60000")
	if code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var tid int
	if i := strings.Index(out, "late "); i < 0 {
		t.Fatalf("the program did not name its late thread:\n%s", out)
	} else if _, err := fmt.Sscanf(out[i:], "late %d", &tid); err != nil {
		t.Fatalf("the program's line: %v\n%s", err, out)
	}
	st, text := offCPUMeta(e)
	if st.Meta.OffCPU.SampledTimes == 0 {
		t.Fatalf("the stacks were never sampled: the ping-pong switches tens of thousands of times a second\n%s", text)
	}
	var top api.Top
	topArgs := []string{"top", "--off-cpu", "--tid", strconv.Itoa(tid), "--json", "-n", "1000"}
	if _, errOut, code := e.run(topArgs...); code == 5 && st.Meta.Lost > 0 {
		t.Skipf("the late thread %d is not in the run: %d records lost, its own among them (%s)", tid, st.Meta.Lost, strings.TrimSpace(errOut))
	}
	e.mustJSON(&top, topArgs...)
	var nap, noStack, blocked float64
	for _, r := range top.Rows {
		switch r.Func {
		case "late_nap":
			nap = float64(r.Total)
		case agg.FuncNoStack:
			if r.Reason != views.ReasonRunnable { // preempted before its first CPU sample: runnable
				noStack = float64(r.Total)
			}
		}
	}
	if top.Time != nil {
		blocked = float64(top.Time.BlockedNs)
	}
	t.Logf("late thread %d: %.1f ms blocked, %.1f ms under late_nap, %.1f ms without a stack; %d records lost",
		tid, blocked/1e6, nap/1e6, noStack/1e6, st.Meta.Lost)
	// A record lost from a full ring may be a stack: then its wait has none.
	var lostNoStack float64
	if noStack != 0 && st.Meta.Lost > 0 {
		t.Logf("%.1f ms blocked without a stack, %d records lost", noStack/1e6, st.Meta.Lost)
		lostNoStack, noStack = noStack, 0
	}
	if noStack != 0 || blocked < 90e6 || nap < 0.95*(blocked-lostNoStack) {
		t.Errorf("the late thread's first wait: %.1f ms blocked, %.1f ms under late_nap, %.1f ms without a stack: want its 100 ms sleep under late_nap, none without a stack\n%+v\n%s",
			blocked/1e6, nap/1e6, noStack/1e6, top.Rows, text)
	}
	for _, r := range threadsNamed(e, "late") {
		// The reason is read from the wait's stack: where a full ring lost it, there is none.
		if lostNoStack > 0 && r.OffCPU.Reason == views.ReasonOther {
			t.Logf("the late thread waits for reason %q: its stack was lost with the records", r.OffCPU.Reason)
			continue
		}
		if r.OffCPU.Reason != views.ReasonSleep {
			t.Errorf("the late thread waits for reason %q, want %s", r.OffCPU.Reason, views.ReasonSleep)
		}
	}
}
