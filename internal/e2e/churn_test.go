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

// TestShortProcessesAreLetGo records, at 99 Hz as an agent would, a program that starts
// 1,000 short children one after another, each burning 10 ms of CPU. Once they have exited
// and the grace period passed, the live recorder holds the parent alone (its processes,
// threads, mappings and JIT watch), the children's keys are folded into one command's, a
// few keys for all of them, and every sample is still counted: under the command, by
// `threads`, `top` and the stored run.
func TestShortProcessesAreLetGo(t *testing.T) {
	testutil.RequirePerf(t)
	const children = 1000
	e := newEnv(t)
	dir := t.TempDir()
	prog := testutil.CC(t, dir, "churn", "gcc", append(append([]string{}, cflags...),
		filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/churn.c"))...)
	// Frame-pointer stacks without off-CPU time: off-CPU time keeps every process (its
	// intervals name their threads).
	l := e.startRecordUntilReady(dir, []string{"--no-off-cpu", "--call-graph", "fp", "-F", "99"}, prog, itoa(children), "10")
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
	// Each child is sampled about once (10 ms at 99 Hz, and its start and exit): most have keys, folded into
	// the command's. Without folding the run would hold a key or more per child.
	if b.ProcessesFolded < children/2 || b.KeysFolded < int(b.ProcessesFolded) || b.CommandsFolded != 1 {
		t.Errorf("folded %d processes (%d keys) into %d commands, want at least %d processes into 1 command",
			b.ProcessesFolded, b.KeysFolded, b.CommandsFolded, children/2)
	}
	// The folded keys are one per stack of functions of the command. Its samples in
	// short_work make a few (main, short_work, and the clock it reads); each of its other
	// samples, in the kernel mostly (exec, page faults, exit: as root each child's few
	// samples there take paths of their own), may make one more; and so may each of the
	// parent's. So the keys held are at most those samples and a few, whatever the number
	// of children; at this sizing, far fewer than one per child.
	parent, folded, hot := sampleSplit(t, e, "")
	if b.Keys > int(parent+folded-hot)+8 || b.Keys > children/2 {
		t.Errorf("the run holds %d keys after folding %d keys of %d children (%d samples, %d of them in short_work; the parent's %d), want at most %d and at most %d",
			b.Keys, b.KeysFolded, b.ProcessesFolded, folded, hot, parent, parent+folded-hot+8, children/2)
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
		var folded *api.ThreadRow
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

// sampleSplit counts, in a run (run: the live one), the samples of threads below the
// folding markers, those of the markers, and of those the samples whose leaf is short_work.
func sampleSplit(t *testing.T, e *staxEnv, run string) (plain, folded, hot uint64) {
	t.Helper()
	args := []string{"threads", "--json"}
	if run != "" {
		args = append(args, "--run", run)
	}
	out, errOut, code := e.run(args...)
	if code != 0 {
		t.Fatalf("threads: exit %d\n%s%s", code, out, errOut)
	}
	var th api.Threads
	if err := json.Unmarshal([]byte(out), &th); err != nil {
		t.Fatal(err)
	}
	marker := ""
	for _, r := range th.Rows {
		if agg.IsFolded(r.Tid) {
			folded += r.Samples
			marker = itoa(int(r.Tid))
		} else {
			plain += r.Samples
		}
	}
	if marker == "" {
		return plain, 0, 0
	}
	out, errOut, code = e.run("top", "--json", "--tid", marker, "-n", "5", "--sort", "self")
	if code != 0 {
		t.Fatalf("top --tid %s: exit %d\n%s%s", marker, code, out, errOut)
	}
	var top api.Top
	if err := json.Unmarshal([]byte(out), &top); err != nil {
		t.Fatal(err)
	}
	for _, r := range top.Rows {
		if r.Func == "short_work" {
			hot = r.Self
		}
	}
	return plain, folded, hot
}
