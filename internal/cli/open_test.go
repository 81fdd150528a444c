package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/client"
	"github.com/stax-profiler/stax/internal/store"
)

// TestOpenDoesNotImportTwice: opening a file a second time names the run it was imported
// as, and so does opening a copy of a run this machine holds; a different run that has the
// same id is imported under another id, once.
func TestOpenDoesNotImportTwice(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	t.Setenv("XDG_RUNTIME_DIR", "")
	dir := t.TempDir()
	write := func(name string, r *store.Run) string {
		path := filepath.Join(dir, name)
		if err := store.Save(path, r); err != nil {
			t.Fatal(err)
		}
		return path
	}
	open := func(path, want string) {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := Main([]string{"open", path}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "\n"+want+": ask it with") {
			t.Errorf("open %s: exit %d, want %q\n%s%s", filepath.Base(path), code, want, out.String(), errOut.String())
		}
	}
	ids := func() []string {
		runs, err := client.Stored()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range runs {
			out = append(out, r.ID)
		}
		return out
	}

	a := write("a.stax", fixtureRun("run-a", true))
	open(a, "imported as run run-a")
	open(a, "already imported as run run-a")

	// Another run with the same id: imported once, under a new id.
	other := fixtureRun("run-a", true)
	other.Meta.Start = other.Meta.Start.Add(time.Hour)
	b := write("b.stax", other)
	open(b, "imported as run run-a-2")
	open(b, "already imported as run run-a-2")

	// A copy of a run held here, saved before it had all its samples.
	held := fixtureRun("run-c", true)
	if err := store.Save(store.Path("run-c"), held); err != nil {
		t.Fatal(err)
	}
	early := fixtureRun("run-c", false)
	early.Meta.Samples = 10
	open(write("c.stax", early), "already imported as run run-c")

	if got := ids(); len(got) != 3 {
		t.Errorf("the store holds %v, want run-a, run-a-2 and run-c", got)
	}
}
