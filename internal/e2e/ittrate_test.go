package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/spans"
	"github.com/stax-profiler/stax/internal/testutil"
)

// TestITTFloodCounted records 16 threads that report short ITT tasks for a second (a
// million or more, more than a run keeps, on a server core):
// every task the program reported is received, and each is either kept or counted
// dropped. How much the tasks slow the program is bench/itt.sh's to measure.
func TestITTFloodCounted(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	e.env = append(e.env, "STAX_JIT_DIR="+t.TempDir())
	prog := testutil.CC(t, t.TempDir(), "ittrate", "gcc", "-std=gnu11", "-O2", "-pthread",
		filepath.Join(testutil.RepoRoot(t), "collector/testdata/ittrate.c"), "-ldl")
	out, errOut, code := e.run("record", "-q", "--", prog, "16", "1", "200")
	if code != 0 {
		t.Fatalf("stax record: exit %d\n%s%s", code, out, errOut)
	}
	var units, tasks uint64
	var rate float64
	if _, err := fmt.Sscanf(strings.TrimSpace(out), "units %d per_sec %f tasks %d", &units, &rate, &tasks); err != nil || tasks == 0 {
		t.Fatalf("ittrate printed %q (%v): want the tasks it reported", out, err)
	}
	var res api.Spans
	e.mustJSON(&res, "spans")
	unit, _ := spanRow(res, "unit")
	var src *api.SpanSource
	for i := range res.Sources {
		if res.Sources[i].Kind == spans.KindITT {
			src = &res.Sources[i]
		}
	}
	if src == nil {
		t.Fatalf("no ITT source: %+v", res.Sources)
	}
	t.Logf("%d tasks (%.0f a second): %d received, %d kept, %d dropped", tasks, rate, src.Received, unit.Count, src.Dropped)
	if src.Received != tasks || unit.Count+src.Dropped != tasks || src.Bad != 0 {
		t.Errorf("the program reported %d tasks; stax received %d, kept %d and dropped %d (%d unreadable)", tasks, src.Received, unit.Count, src.Dropped, src.Bad)
	}
	st, _, _ := e.run("status")
	if !strings.Contains(st, fmt.Sprintf("%s received, %s dropped", commasOf(tasks), commasOf(src.Dropped))) {
		t.Errorf("stax status does not count them:\n%s", st)
	}
}

func commasOf(n uint64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
