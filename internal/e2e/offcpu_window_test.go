package e2e

import (
	"math"
	"testing"

	"github.com/stax-profiler/stax/internal/testutil"
)

// TestOffCPUThreadsInAWindowOfTheWholeRun records a thread that runs ~50 us at a time:
// stax threads over a window that holds the whole run gives each thread the time on CPU,
// runnable and blocked the whole run's view gives it. A window took its samples over the
// frequency for the time on CPU (318 ms where the whole run said 300), not the switch
// records' (or the scheduler's) time the whole run's view shares among them.
func TestOffCPUThreadsInAWindowOfTheWholeRun(t *testing.T) {
	testutil.RequirePerf(t)
	prog := buildBursts(t, t.TempDir())
	e := newEnv(t)
	if out, errOut, code := e.run("record", "-q", "--", prog, "switch", "200"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	whole := threadsNamed(e, "burster")[0]
	win := threadsNamed(e, "burster", "--from", "0", "--to", "100000")[0]
	t.Logf("whole run: %d samples, on CPU %.2f ms, runnable %.2f, blocked %.2f; window: %d samples, on CPU %.2f ms, runnable %.2f, blocked %.2f",
		whole.Samples, whole.OffCPU.OnCPUMs, whole.OffCPU.RunnableMs, whole.OffCPU.OffCPUMs, win.Samples, win.OffCPU.OnCPUMs, win.OffCPU.RunnableMs, win.OffCPU.OffCPUMs)
	near := func(a, b float64) bool { return math.Abs(a-b) <= 0.001*math.Max(a, b)+0.01 }
	if win.Samples != whole.Samples || !near(win.OffCPU.OnCPUMs, whole.OffCPU.OnCPUMs) ||
		!near(win.OffCPU.RunnableMs, whole.OffCPU.RunnableMs) || !near(win.OffCPU.OffCPUMs, whole.OffCPU.OffCPUMs) {
		t.Errorf("a window of the whole run: %+v %+v; the whole run: %+v %+v", win, *win.OffCPU, whole, *whole.OffCPU)
	}
}
