package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/spans"
	"github.com/stax-profiler/stax/internal/testutil"
)

// TestITTFullDirCounted records 4 threads reporting ITT tasks for a second into a spans file
// on a 256 KiB tmpfs, which fills: every task the program reported is either kept or counted
// dropped, spans and status say how many were dropped and why.
func TestITTFullDirCounted(t *testing.T) {
	testutil.RequirePerf(t)
	dir := testutil.MountSmallTmpfs(t, 256<<10)
	e := newEnv(t)
	e.env = append(e.env, "STAX_JIT_DIR="+dir)
	prog := testutil.CC(t, t.TempDir(), "ittrate", "gcc", "-std=gnu11", "-O2", "-pthread",
		filepath.Join(testutil.RepoRoot(t), "collector/testdata/ittrate.c"), "-ldl")
	out, errOut, code := e.run("record", "-q", "--", prog, "4", "1", "200")
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
	t.Logf("%d tasks: %d received, %d kept, %d dropped (%s); collector: %s", tasks, src.Received, unit.Count, src.Dropped, src.Error, strings.TrimSpace(errOut))
	if src.Received != tasks || unit.Count+src.Dropped != tasks || src.Dropped == 0 || src.Bad != 0 {
		t.Errorf("the program reported %d tasks; stax received %d, kept %d and dropped %d (%d unreadable): want some dropped, all counted",
			tasks, src.Received, unit.Count, src.Dropped, src.Bad)
	}
	if !strings.Contains(src.Error, "no space left on device") {
		t.Errorf("the source's error %q does not say why", src.Error)
	}
	line := fmt.Sprintf("%s received, %s dropped", commasOf(tasks), commasOf(src.Dropped))
	for _, cmd := range []string{"spans", "status"} {
		if txt, _, _ := e.run(cmd); !strings.Contains(txt, line) || !strings.Contains(txt, "no space left on device") {
			t.Errorf("stax %s does not say %q and why:\n%s", cmd, line, txt)
		}
	}
	if n := strings.Count(errOut, "stax itt collector: cannot write"); n != 1 {
		t.Errorf("the collector said its failure %d times, want once:\n%s", n, errOut)
	}
}

// TestJITAPIFullDirCounted records a JIT announcing 100,000 functions through the JIT
// Profiling API into a jitdump on a 256 KiB tmpfs: the collector warns once, and stax status
// counts the functions not written beside those read, which together make the 100,000.
func TestJITAPIFullDirCounted(t *testing.T) {
	testutil.RequirePerf(t)
	dir := testutil.MountSmallTmpfs(t, 256<<10)
	e := newEnv(t)
	e.env = append(e.env, "STAX_JIT_DIR="+dir, "ITTFLOOD_FAILURES_OK=1")
	prog := testutil.CC(t, t.TempDir(), "ittflood", "gcc", "-std=gnu11", "-O2", "-pthread", "-rdynamic",
		filepath.Join(testutil.RepoRoot(t), "collector/testdata/ittflood.c"), "-ldl")
	const calls = 100000
	out, errOut, code := e.run("record", "-q", "--", prog, "flood", "8", strconv.Itoa(calls))
	if code != 0 {
		t.Fatalf("stax record: exit %d\n%s%s", code, out, errOut)
	}
	if n := strings.Count(errOut, "stax: JIT collector: writing"); n != 1 || !strings.Contains(errOut, "No space left on device") {
		t.Errorf("the collector warned %d times, want once, saying why:\n%s", n, errOut)
	}
	st, _, _ := e.run("status")
	m := regexp.MustCompile(`jitdump \S+: (\d+) functions, \d+ records, skipped (\d+) not written by the collector \((.*)\)`).FindStringSubmatch(st)
	if m == nil {
		t.Fatalf("status does not count the functions not written:\n%s", st)
	}
	read, _ := strconv.Atoi(m[1])
	lost, _ := strconv.Atoi(m[2])
	t.Logf("%d functions read, %d not written: %s", read, lost, m[3])
	if read+lost != calls || lost == 0 || !strings.Contains(m[3], "no space left on device") {
		t.Errorf("%d read + %d not written = %d, want %d, some not written, and why (%q)", read, lost, read+lost, calls, m[3])
	}
}
