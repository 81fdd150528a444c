package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil"
)

// TestRunIDFile: a quiet recording tells a script its run id through --run-id-file, not
// on the command's stderr, and that id answers --run.
func TestRunIDFile(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	dir := t.TempDir()
	idFile := filepath.Join(dir, "run.id")
	out, errOut, code := e.run("record", "-q", "--run-id-file", idFile, "--", "true")
	if code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	b, err := os.ReadFile(idFile)
	if err != nil {
		t.Fatalf("no run id file: %v", err)
	}
	id := strings.TrimSuffix(string(b), "\n")
	if !store.ValidID(id) || strings.Contains(id, "\n") {
		t.Fatalf("run id file holds %q", b)
	}
	if strings.Contains(errOut, id) {
		t.Errorf("-q printed the run id on stderr: %q", errOut)
	}
	var st api.Status
	e.mustJSON(&st, "status", "--run", id)
	if st.Meta.ID != id {
		t.Errorf("status --run %s answered for run %q", id, st.Meta.ID)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the directory holds %d files, want only run.id (no temporary left)", len(ents))
	}
	// A path that cannot be written fails before anything runs.
	_, errOut, code = e.run("record", "-q", "--run-id-file", filepath.Join(dir, "missing", "run.id"), "--", "true")
	if code != 1 || !strings.Contains(errOut, "--run-id-file") {
		t.Errorf("unwritable --run-id-file: exit %d, %q", code, errOut)
	}
	checkOneLine(t, "unwritable --run-id-file", errOut)
}
