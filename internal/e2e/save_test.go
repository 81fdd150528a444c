package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil"
)

// TestSaveOfALiveRunIsCurrent: stax save of a live run writes the samples it holds when
// saved, streamed from the recorder, not the run's last checkpoint (here, with checkpoints
// an hour apart, the empty one written when recording began); the file opens elsewhere
// with them all, and opening it again imports nothing more.
func TestSaveOfALiveRunIsCurrent(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	e.env = []string{"STAX_CHECKPOINT_INTERVAL=1h"}
	toy := filepath.Join(t.TempDir(), "toyjit")
	testutil.Run(t, testutil.RepoRoot(t), "go", "build", "-o", toy, "./examples/toyjit")
	rec := e.startUntilReady(t.TempDir(), toy, "-cpu", "300ms", "-wait")
	var st api.Status
	e.mustJSON(&st, "status")
	if !st.Live || st.Meta.Samples == 0 {
		t.Fatalf("status of the live run: live %v, %d samples", st.Live, st.Meta.Samples)
	}
	if m, err := store.ReadMeta(e.runPath(st.Meta.ID)); err != nil || m.Samples != 0 {
		t.Fatalf("the stored checkpoint has %d samples (%v), want the empty first one", m.Samples, err)
	}
	file := filepath.Join(t.TempDir(), "live.stax")
	out, errOut, code := e.run("save", file)
	if code != 0 || errOut != "" {
		t.Fatalf("save: exit %d\n%s%s", code, out, errOut)
	}
	m, err := store.ReadMeta(file)
	if err != nil {
		t.Fatal(err)
	}
	// The program waits for its input: it takes no more samples after the status.
	if m.Samples < st.Meta.Samples || m.ID != st.Meta.ID || m.Finished {
		t.Errorf("saved run %s with %d samples (finished %v), want the live run %s with at least %d", m.ID, m.Samples, m.Finished, st.Meta.ID, st.Meta.Samples)
	}
	rec.finish(t)
	removeJITFiles(t, e)

	other := &staxEnv{t: t, bin: e.bin, home: t.TempDir()}
	for i, want := range []string{"imported as run " + st.Meta.ID, "already imported as run " + st.Meta.ID} {
		if out, errOut, code := other.run("open", file); code != 0 || !strings.Contains(out, want) {
			t.Fatalf("open #%d: exit %d, want %q\n%s%s", i+1, code, want, out, errOut)
		}
	}
	var l api.List
	other.mustJSON(&l, "list")
	if len(l.Runs) != 1 || l.Runs[0].Samples != m.Samples {
		t.Errorf("after opening the file twice, the runs are %+v; want one of %d samples", l.Runs, m.Samples)
	}
}
