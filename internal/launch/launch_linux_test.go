package launch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
		for _, start := range []func([]string, []string) (*Gate, error){Start, StartGate} {
			g, err := start([]string{"sh", "-c", c.script}, os.Environ())
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Release(); err != nil {
				t.Fatal(err)
			}
			if got := g.Wait(); got != c.want {
				t.Errorf("%q (traced %v): status %d, want %d", c.script, g.Traced(), got, c.want)
			}
		}
	}
}

// TestTracedStopsAtTheCommandsFirstInstruction: a traced command has executed its
// program, and waits, alone, in a tracing stop until released; Abort kills it there.
func TestTracedStopsAtTheCommandsFirstInstruction(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip(err)
	}
	g, err := Start([]string{"sh", "-c", "exit 5"}, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	if !g.Traced() {
		g.Abort()
		t.Skip("the kernel refused tracing here; the gate was used")
	}
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", g.Pid()))
	want, _ := filepath.EvalSymlinks(sh)
	if exe != want {
		t.Errorf("stopped process runs %q, want the command's program %q", exe, want)
	}
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", g.Pid()))
	if !strings.Contains(string(status), "State:\tt (tracing stop)") || !strings.Contains(string(status), "Threads:\t1\n") {
		t.Errorf("not one thread in a tracing stop:\n%s", status)
	}
	if err := g.Release(); err != nil {
		t.Fatal(err)
	}
	if got := g.Wait(); got != 5 {
		t.Errorf("status %d, want 5", got)
	}

	g, err = Start([]string{"sh", "-c", "exit 0"}, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	g.Abort()
	if st := g.cmd.ProcessState.Sys().(syscall.WaitStatus); !st.Signaled() || st.Signal() != syscall.SIGKILL {
		t.Errorf("aborted command: %v, want killed", st)
	}
}

// TestTracedCommandsUsageIsItsOwn: behind the gate, the command's resource usage includes
// the start of stax's Go runtime, whose threads block and wake dozens of times; traced, the
// process runs nothing before its exec but the fork.
func TestTracedCommandsUsageIsItsOwn(t *testing.T) {
	switches := func(start func([]string, []string) (*Gate, error)) (int64, bool) {
		g, err := start([]string{"sh", "-c", "exit 0"}, os.Environ())
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Release(); err != nil {
			t.Fatal(err)
		}
		if st := g.Wait(); st != 0 {
			t.Fatalf("status %d", st)
		}
		return g.cmd.ProcessState.SysUsage().(*syscall.Rusage).Nvcsw, g.Traced()
	}
	traced, ok := switches(Start)
	if !ok {
		t.Skip("the kernel refused tracing here; the gate was used")
	}
	gate, _ := switches(StartGate)
	t.Logf("voluntary context switches of sh -c 'exit 0': traced %d, behind the gate %d", traced, gate)
	if traced > 5 || traced >= gate {
		t.Errorf("traced command switched %d times (behind the gate %d): something ran in its process before the exec", traced, gate)
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

// TestEventsFollowTheCommand: an event opened on the gate's pid with enable_on_exec counts
// the command's time, every time: the gate execs from the thread the event watches, never
// from another of its runtime's threads. An event opened on a traced command before its
// release counts its time too.
func TestEventsFollowTheCommand(t *testing.T) {
	testutil.RequirePerf(t)
	for i := range 30 {
		start := StartGate
		if i%2 == 1 {
			start = Start
		}
		g, err := start([]string{"sh", "-c", "exit 0"}, os.Environ())
		if err != nil {
			t.Fatal(err)
		}
		attr := &unix.PerfEventAttr{
			Type:   unix.PERF_TYPE_SOFTWARE,
			Config: unix.PERF_COUNT_SW_TASK_CLOCK,
			Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
			Bits:   unix.PerfBitInherit | unix.PerfBitExcludeHv,
		}
		if !g.Traced() {
			attr.Bits |= unix.PerfBitDisabled | unix.PerfBitEnableOnExec
		}
		fd, err := unix.PerfEventOpen(attr, g.Pid(), -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			g.Abort()
			t.Fatalf("perf_event_open on the command: %v", err)
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
			t.Fatalf("run %d (traced %v): the command ran 0 ns under the event: it ran on a thread the event does not watch", i, g.Traced())
		}
	}
}
