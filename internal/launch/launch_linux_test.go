package launch

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestMain lets this test binary act as the gate, as the stax binary does.
func TestMain(m *testing.M) {
	RunGateIfRequested()
	os.Exit(m.Run())
}

func TestGateRunsTheCommandAndReportsItsStatus(t *testing.T) {
	for _, c := range []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 7", 7},
		{"kill -TERM $$", 128 + int(syscall.SIGTERM)},
	} {
		g, err := Start([]string{"sh", "-c", c.script}, os.Environ())
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Release(); err != nil {
			t.Fatal(err)
		}
		if got := g.Wait(); got != c.want {
			t.Errorf("%q: status %d, want %d", c.script, got, c.want)
		}
	}
}

func TestStartErrors(t *testing.T) {
	_, err := Start([]string{"/nonexistent/stax-no-such-cmd"}, nil)
	var nf *NotFoundError
	if !errors.As(err, &nf) {
		t.Errorf("missing command: %v", err)
	}
	data := filepath.Join(t.TempDir(), "data.txt")
	os.WriteFile(data, []byte("text"), 0o644)
	_, err = Start([]string{data}, nil)
	var ne *NotExecutableError
	if !errors.As(err, &ne) {
		t.Errorf("not executable: %v", err)
	}
	if _, err := Start(nil, nil); err == nil {
		t.Error("an empty command was accepted")
	}
}

// TestSignalIsNotSentTwice: a command in stax's process group got SIGINT from the group
// already, so Signal does not send it again; SIGTERM, sent to stax alone, is passed on.
func TestSignalIsNotSentTwice(t *testing.T) {
	// The command reports a SIGINT by exiting 3, and otherwise waits to be ended.
	g, err := Start([]string{"sh", "-c", "trap 'exit 3' INT; while :; do sleep 0.01; done"}, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Release(); err != nil {
		t.Fatal(err)
	}
	g.Signal(syscall.SIGINT)  // dropped: it shares our process group
	g.Signal(syscall.SIGTERM) // passed on
	if got := g.Wait(); got != 128+int(syscall.SIGTERM) {
		t.Errorf("status %d: want death by the forwarded SIGTERM (%d), not the SIGINT trap (3)", got, 128+int(syscall.SIGTERM))
	}
}
