package e2e

import (
	"syscall"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil"
)

// TestCheckpointSamplesAreItsProfiles kills the recorder of a program that samples forever
// once a checkpoint is stored: the crashed run's samples in status are the sum of what top
// counts over the whole run, to the sample. The meta counted the samples before the
// profile was built, from the samples added meanwhile and those not named yet: tens more
// than any view could show.
func TestCheckpointSamplesAreItsProfiles(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := buildRatio(t)
	rec := e.cmd("record", "-q", "-F", "4999", "--", prog, "100", "forever")
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Process.Kill(); rec.Wait() })
	id := waitForCheckpoint(t, e)
	meta, err := store.ReadMeta(e.runPath(id))
	if err != nil || meta.Pid <= 0 {
		t.Fatalf("read the checkpoint: %+v, %v", meta, err)
	}
	target := meta.Pid
	t.Cleanup(func() { syscall.Kill(target, syscall.SIGKILL) }) // orphaned by the crash
	rec.Process.Kill()
	rec.Wait()

	var st api.Status
	e.mustJSON(&st, "status", "--run", id, "--json")
	var top api.Top
	e.mustJSON(&top, "top", "--run", id, "--json", "-n", "100000")
	var self uint64
	for _, r := range top.Rows {
		self += r.Self
	}
	t.Logf("checkpoint: status %d samples, top %d, its rows' self %d over %d rows", st.Meta.Samples, top.Samples, self, len(top.Rows))
	if st.Meta.Samples == 0 || st.Meta.Samples != self || top.Samples != self {
		t.Errorf("the checkpoint's samples: status %d, top %d, the sum of top's rows' self %d: want one count", st.Meta.Samples, top.Samples, self)
	}
}
