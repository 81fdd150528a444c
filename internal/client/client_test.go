package client

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/server"
	"github.com/stax-profiler/stax/internal/store"
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
	dir, err := server.SocketDir()
	if err != nil {
		t.Fatal(err)
	}
	path := server.SocketPath(dir, "dead-run")
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

// saveRunFrom stores a finished run with samples recorded from terminal term.
func saveRunFrom(t *testing.T, id string, term int, samples uint64, mod time.Time) {
	t.Helper()
	r := &store.Run{Meta: store.Meta{ID: id, Pid: 1, Finished: true, Start: mod, Terminal: term, Samples: samples}}
	if err := store.Save(store.Path(id), r); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(store.Path(id), mod, mod)
}

// TestPickPrefersThisTerminalAndSamples: with no run named and none live, the default is
// the newest run with samples started from this terminal, else the newest with samples;
// a newer empty run is passed over and named in the reason; when every run is empty, the
// newest is chosen and the reason says it has none.
func TestPickPrefersThisTerminalAndSamples(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	t.Setenv("XDG_RUNTIME_DIR", "")
	defer func(old func() int) { thisTerminal = old }(thisTerminal)
	now := time.Now()
	saveRunFrom(t, "here-old", 34817, 500, now.Add(-4*time.Minute))
	saveRunFrom(t, "elsewhere", 34818, 700, now.Add(-3*time.Minute))
	saveRunFrom(t, "no-terminal", 0, 900, now.Add(-2*time.Minute))
	saveRunFrom(t, "here-empty", 34817, 0, now.Add(-1*time.Minute))
	for _, c := range []struct {
		term    int
		id, why string
	}{
		{34817, "here-old", "newest from this terminal with samples; newer run here-empty has none"},
		{34818, "elsewhere", "newest from this terminal"},
		{34819, "no-terminal", "newest with samples; newer run here-empty has none"},
		{0, "no-terminal", "newest with samples; newer run here-empty has none"},
	} {
		thisTerminal = func() int { return c.term }
		r, err := Pick("")
		if err != nil || r.ID != c.id || r.Why != c.why || r.Live {
			t.Errorf("terminal %d: Pick = %+v, %v; want %s because %q", c.term, r, err, c.id, c.why)
		}
	}
	// A damaged file is passed over even when it would be chosen: its header and meta read
	// well, its checksum does not.
	b, err := os.ReadFile(store.Path("no-terminal"))
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0xff
	os.WriteFile(store.Path("no-terminal"), b, 0o600)
	if _, err := store.ReadMeta(store.Path("no-terminal")); err != nil {
		t.Fatalf("the damaged stand-in's meta does not read: %v", err)
	}
	thisTerminal = func() int { return 0 }
	if r, err := Pick(""); err != nil || r.ID != "elsewhere" {
		t.Errorf("Pick past a damaged file: %+v, %v; want elsewhere", r, err)
	}
	// Named runs are chosen as named, with no reason.
	if r, err := Pick("here-empty"); err != nil || r.ID != "here-empty" || r.Why != "" {
		t.Errorf("Pick(here-empty) = %+v, %v", r, err)
	}
	for _, id := range []string{"here-old", "elsewhere", "no-terminal"} {
		os.Remove(store.Path(id))
	}
	if r, err := Pick(""); err != nil || r.ID != "here-empty" || r.Why != "newest; it has no samples" {
		t.Errorf("Pick among empty runs: %+v, %v", r, err)
	}
}
