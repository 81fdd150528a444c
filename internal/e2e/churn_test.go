package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// TestShortProcessesAreLetGo records a program that starts 1,000 short children one after
// another, each burning 2 ms of CPU. Once they have exited and the grace period passed,
// the live recorder holds the parent alone (its processes, threads, mappings and JIT
// watch), the children's keys are folded into one command's, a few keys for all of them,
// and every sample is still counted: under the command, by `threads`, `top` and the stored
// run.
func TestShortProcessesAreLetGo(t *testing.T) {
	testutil.RequirePerf(t)
	const children = 1000
	e := newEnv(t)
	dir := t.TempDir()
	prog := testutil.CC(t, dir, "churn", "gcc", append(append([]string{}, cflags...),
		filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/churn.c"))...)
	// Frame-pointer stacks without off-CPU time: off-CPU time keeps every process (its
	// intervals name their threads).
	l := e.startRecordUntilReady(dir, []string{"--no-off-cpu", "--call-graph", "fp", "-F", "999"}, prog, itoa(children), "2")
	var st api.Status
	ended := func() (bool, error) { return false, nil }
	waitStatus(t, e, ended, &l.out, "the children to be let go", func(st *api.Status) bool {
		return st.Bounds != nil && st.Bounds.ProcessesReleased >= children
	}, &st)
	b := st.Bounds
	t.Logf("bounds after %d children: %+v; %d samples", children, *b, st.Meta.Samples)
	// The parent alone is held: one process, one thread, its few mappings.
	if b.ProcessesHeld > 1 || b.ThreadsHeld > 1 || b.JITWatched > 1 {
		t.Errorf("held %d processes, %d threads, %d watched for JIT files after the children were let go, want the parent alone",
			b.ProcessesHeld, b.ThreadsHeld, b.JITWatched)
	}
	if b.MappingsHeld > 100 {
		t.Errorf("held %d mappings: more than the parent's own", b.MappingsHeld)
	}
	if b.ThreadsReleased < children || b.MappingsPruned < children {
		t.Errorf("released %d threads and %d mappings of %d children, want each child's", b.ThreadsReleased, b.MappingsPruned, children)
	}
	// Each child is sampled about twice (2 ms at 999 Hz): most have keys, folded into
	// the command's. Without folding the run would hold a key or more per child.
	if b.ProcessesFolded < children/2 || b.KeysFolded < int(b.ProcessesFolded) || b.CommandsFolded != 1 {
		t.Errorf("folded %d processes (%d keys) into %d commands, want at least %d processes into 1 command",
			b.ProcessesFolded, b.KeysFolded, b.CommandsFolded, children/2)
	}
	// The folded keys are one per stack of functions of the command: its user stacks are
	// a handful, but as root each child's few samples also meet the kernel in paths of
	// its own (exec, page faults, exit), so they merge by half or more, not to a constant
	// (internal/agg's TestFoldBoundsKeys shows the bound without the kernel's variety).
	if b.Keys*2 > b.KeysFolded || b.Keys >= children {
		t.Errorf("the run holds %d keys after folding %d keys of %d children, want at most half as many, and fewer than the children",
			b.Keys, b.KeysFolded, b.ProcessesFolded)
	}

	// The command stands for its children in `threads`, by name, with their samples.
	check := func(args ...string) {
		t.Helper()
		out, errOut, code := e.run(append([]string{"threads", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("threads: exit %d\n%s%s", code, out, errOut)
		}
		var th api.Threads
		if err := json.Unmarshal([]byte(out), &th); err != nil {
			t.Fatal(err)
		}
		var folded *agg.ThreadRow
		for i, r := range th.Rows {
			if agg.IsFolded(r.Tid) {
				if folded != nil {
					t.Errorf("two folded rows: %+v and %+v", *folded, r)
				}
				folded = &th.Rows[i]
			}
		}
		if folded == nil || folded.Name != "churn" || folded.Pid != folded.Tid || folded.Samples < b.ProcessesFolded ||
			!strings.Contains(folded.TopFunc, "short_work") {
			t.Errorf("threads %v: the children's row is %+v, want churn with at least %d samples, short_work hottest\n%s", args, folded, b.ProcessesFolded, out)
		}
	}
	check()
	// Every sample counted is still in the views: top's total is the run's.
	out, errOut, code := e.run("top", "--json", "-n", "3")
	if code != 0 {
		t.Fatalf("top: exit %d\n%s%s", code, out, errOut)
	}
	var top api.Top
	if err := json.Unmarshal([]byte(out), &top); err != nil {
		t.Fatal(err)
	}
	if top.Samples < st.Meta.Samples {
		t.Errorf("top counts %d samples, the status said %d before", top.Samples, st.Meta.Samples)
	}
	l.finish(t)
	check("--run", st.Meta.ID) // the stored run names it too
}
