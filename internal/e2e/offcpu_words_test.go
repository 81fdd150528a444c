package e2e

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// TestOffCPUTotalsSayWhatTheyHold records a ping-pong of two threads: the off-CPU totals of
// top, flame and threads (text and --json) all say "off CPU X ms, of which runnable Y ms",
// with the same X and Y, which are the threads' blocked and runnable time added up; top
// --off-cpu sorts by total, not by self, where the kernel's leaf of every wait comes first.
func TestOffCPUTotalsSayWhatTheyHold(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := buildOffCPU(t, t.TempDir())
	if out, errOut, code := e.run("record", "-q", "--", prog, "pingpong", "5000"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var top api.Top
	e.mustJSON(&top, "top", "--off-cpu", "-n", "1000")
	var th api.Threads
	e.mustJSON(&th, "threads", "-n", "1000")
	if top.Time == nil || th.Time == nil {
		t.Fatalf("no time totals: top %+v, threads %+v", top.Time, th.Time)
	}
	tt := *top.Time
	if tt.OffCPUNs != top.Samples || tt.RunnableNs+tt.BlockedNs != tt.OffCPUNs || tt.OffCPUNs == 0 {
		t.Errorf("top --off-cpu: %d ns in all, time %+v: want off CPU = all = runnable + blocked", top.Samples, tt)
	}
	if *th.Time != tt {
		t.Errorf("threads' time %+v, top --off-cpu's %+v", *th.Time, tt)
	}
	// The threads' rows add up to the totals: off_cpu_ms is their blocked time.
	var runnableMs, blockedMs float64
	for _, r := range th.Rows {
		if r.OffCPU != nil {
			runnableMs += r.OffCPU.RunnableMs
			blockedMs += r.OffCPU.OffCPUMs
		}
	}
	slack := 1e-3 * float64(len(th.Rows)) // ms: each row's rounding
	if math.Abs(runnableMs-float64(tt.RunnableNs)/1e6) > slack || math.Abs(blockedMs-float64(tt.BlockedNs)/1e6) > slack {
		t.Errorf("threads' rows: runnable %.3f ms, blocked %.3f ms; totals %+v", runnableMs, blockedMs, tt)
	}
	t.Logf("off CPU %.1f ms: runnable %.1f ms, blocked %.1f ms", float64(tt.OffCPUNs)/1e6, float64(tt.RunnableNs)/1e6, float64(tt.BlockedNs)/1e6)
	if top.Sort != "total" || len(top.Rows) == 0 {
		t.Errorf("top --off-cpu sorts by %s (%d rows), want total", top.Sort, len(top.Rows))
	}
	for i := 1; i < len(top.Rows); i++ {
		if top.Rows[i].Total > top.Rows[i-1].Total {
			t.Errorf("top --off-cpu: row %d (%s) has %d ns in total, more than the row before (%s, %d)", i, top.Rows[i].Func, top.Rows[i].Total, top.Rows[i-1].Func, top.Rows[i-1].Total)
			break
		}
	}

	// The text says the same, in milliseconds with one decimal, as ms() writes them.
	msText := func(ns uint64) string {
		s := fmt.Sprintf("%d", ns/1e6)
		for i := len(s) - 3; i > 0; i -= 3 {
			s = s[:i] + "," + s[i:]
		}
		return fmt.Sprintf("%s.%d", s, ns/1e5%10)
	}
	want := fmt.Sprintf("off CPU %s ms, of which runnable %s ms", msText(tt.OffCPUNs), msText(tt.RunnableNs))
	for _, args := range [][]string{{"top", "--off-cpu"}, {"flame", "--off-cpu"}, {"threads"}} {
		out, errOut, code := e.run(args...)
		if code != 0 {
			t.Fatalf("stax %v: exit %d\n%s", args, code, errOut)
		}
		head, _, _ := strings.Cut(out, "\n")
		if !strings.Contains(head, want) {
			t.Errorf("stax %v: header %q does not say %q", args, head, want)
		}
		if regexp.MustCompile(`[\d.] ms off CPU`).MatchString(out) {
			t.Errorf("stax %v still says 'N ms off CPU':\n%s", args, head)
		}
	}
	if out, _, _ := e.run("threads"); !strings.Contains(out, "BLOCKED ms") || strings.Contains(out, "OFF-CPU ms") {
		t.Errorf("threads' columns: want RUNNABLE and BLOCKED ms:\n%s", out)
	}
}
