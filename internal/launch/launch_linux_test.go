package launch

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/testutil"
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

// TestEventsOnTheGateFollowTheCommand: an event opened on the gate's pid with
// enable_on_exec counts the command's time, every time: the gate execs from the thread the
// event watches, never from another of its runtime's threads.
func TestEventsOnTheGateFollowTheCommand(t *testing.T) {
	testutil.RequirePerf(t)
	for i := range 30 {
		g, err := Start([]string{"sh", "-c", "exit 0"}, os.Environ())
		if err != nil {
			t.Fatal(err)
		}
		attr := &unix.PerfEventAttr{
			Type:   unix.PERF_TYPE_SOFTWARE,
			Config: unix.PERF_COUNT_SW_TASK_CLOCK,
			Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
			Bits:   unix.PerfBitDisabled | unix.PerfBitInherit | unix.PerfBitEnableOnExec | unix.PerfBitExcludeHv,
		}
		fd, err := unix.PerfEventOpen(attr, g.Pid(), -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			g.Abort()
			t.Fatalf("perf_event_open on the gate: %v", err)
		}
		if err := g.Release(); err != nil {
			t.Fatal(err)
		}
		if st := g.Wait(); st != 0 {
			t.Fatalf("run %d: status %d", i, st)
		}
		var buf [8]byte
		n, err := unix.Read(fd, buf[:])
		unix.Close(fd)
		if err != nil || n != 8 {
			t.Fatalf("read counter: %d bytes, %v", n, err)
		}
		if ns := binary.LittleEndian.Uint64(buf[:]); ns == 0 {
			t.Fatalf("run %d: the command ran 0 ns under the gate's event: it ran on a thread the event does not watch", i)
		}
	}
}
