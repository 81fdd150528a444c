package client

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil"
)

func saveRun(t *testing.T, id string, finished bool, mod time.Time) {
	t.Helper()
	r := &store.Run{Meta: store.Meta{ID: id, Pid: 1, Finished: finished, Start: mod}}
	if err := store.Save(store.Path(id), r); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(store.Path(id), mod, mod)
}

// TestStaleSocketIsRemoved: a socket nothing listens on (its recorder was killed) is not
// a live run, and the lookup removes it.
func TestStaleSocketIsRemoved(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	dir, err := api.SocketDir()
	if err != nil {
		t.Fatal(err)
	}
	path := api.SocketPath(dir, "dead-run")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the stand-in stale socket is missing: %v", err)
	}
	if live := LiveRuns(); len(live) != 0 {
		t.Errorf("a dead socket counted as live: %v", live[0].ID)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale socket was not removed: %v", err)
	}
}

// TestPickSkipsDamagedRuns: the default run is the newest whole one; stored runs are
// listed with their state from the header alone, damaged ones with the reason.
func TestPickSkipsDamagedRuns(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	now := time.Now()
	saveRun(t, "old", true, now.Add(-3*time.Minute))
	saveRun(t, "crashed", false, now.Add(-2*time.Minute))
	os.WriteFile(store.Path("broken"), []byte("STAXRUN\x00 not really"), 0o600)
	os.Chtimes(store.Path("broken"), now, now)

	r, err := Pick("")
	if err != nil || r.ID != "crashed" {
		t.Fatalf("Pick: %v, %v; want the newest whole run, crashed", r, err)
	}
	runs, err := Stored()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 || runs[0].ID != "broken" || runs[0].Err == nil || runs[1].Meta.Finished || !runs[2].Meta.Finished {
		t.Errorf("Stored: %+v", runs)
	}
	if _, err := Pick("no-such-run"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Pick of a missing run: %v", err)
	}
	os.Remove(store.Path("old"))
	os.Remove(store.Path("crashed"))
	if _, err := Pick(""); !errors.Is(err, ErrNotFound) {
		t.Errorf("Pick with only a damaged run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(os.Getenv("STAX_HOME"), "runs", "broken.stax")); err != nil {
		t.Errorf("Pick removed a damaged file: %v", err)
	}
}

// TestDependsOnAPIAndStoreOnly: the client talks to recorders through the socket API alone,
// never through the server's or the recorder's code.
func TestDependsOnAPIAndStoreOnly(t *testing.T) {
	allowed := map[string]bool{"internal/client": true, "internal/api": true, "internal/store": true, "internal/agg": true}
	for _, p := range testutil.StaxDeps(t, "./internal/client") {
		if !allowed[p] {
			t.Errorf("internal/client depends on %s", p)
		}
	}
}
