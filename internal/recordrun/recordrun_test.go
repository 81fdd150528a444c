package recordrun

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/launch"
	"github.com/stax-profiler/stax/internal/recorder"
	"github.com/stax-profiler/stax/internal/testutil"
)

// TestMain lets this test binary be the gate and the recorded program: with STAX_TEST_HOLD
// it waits until that file exists (the test decides when it ends), then exits with
// STAX_TEST_EXIT.
func TestMain(m *testing.M) {
	launch.RunGateIfRequested()
	if hold := os.Getenv("STAX_TEST_HOLD"); hold != "" {
		for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(hold); err == nil {
				code, _ := strconv.Atoi(os.Getenv("STAX_TEST_EXIT"))
				os.Exit(code)
			}
		}
		os.Exit(99) // the test that held it is gone
	}
	os.Exit(m.Run())
}

// notes collects what a Recording says.
type notes struct {
	mu    sync.Mutex
	lines []string
}

func (n *notes) add(format string, a ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lines = append(n.lines, fmt.Sprintf(format, a...))
}

func (n *notes) all() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.lines...)
}

func socketOf(t *testing.T, id string) string {
	t.Helper()
	dir, err := api.SocketDir()
	if err != nil {
		t.Fatal(err)
	}
	return api.SocketPath(dir, id)
}

// TestRecordingOfALaunchedCommand runs a recording of a real command through its life:
// the run-id file holds the id once Start returns, the live socket is there while it
// records and gone after Wait, the command's exit status comes back, the messages are the
// first and last lines stax prints, and Close leaves nothing beside the id file.
func TestRecordingOfALaunchedCommand(t *testing.T) {
	testutil.RequirePerf(t)
	t.Setenv("STAX_HOME", t.TempDir())
	dir := t.TempDir()
	idPath := filepath.Join(dir, "run.id")
	hold := filepath.Join(t.TempDir(), "hold")
	var n notes
	r, err := Start(Config{
		Recorder: recorder.Options{Argv: []string{os.Args[0]}, Freq: 999,
			Env: append(os.Environ(), "STAX_TEST_HOLD="+hold, "STAX_TEST_EXIT=3")},
		RunIDFile: idPath, Notef: n.add,
		Attached: func() func() { t.Error("Attached called for a launched command"); return func() {} },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if b, err := os.ReadFile(idPath); err != nil || string(b) != r.ID()+"\n" {
		t.Errorf("run-id file: %q, %v; want %q", b, err, r.ID()+"\n")
	}
	sock := socketOf(t, r.ID())
	if _, err := os.Stat(sock); err != nil {
		t.Errorf("live socket while recording: %v", err)
	}
	if err := os.WriteFile(hold, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	res := r.Wait()
	if res != (Result{Exit: 3, Saved: true}) {
		t.Errorf("Wait: %+v; want exit 3, saved", res)
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("live socket after Wait: %v; want it gone", err)
	}
	r.Close()
	r.Close() // a second Close does nothing
	ls := n.all()
	first := fmt.Sprintf("recording %s as run %s (999 Hz)", os.Args[0], r.ID())
	if len(ls) < 2 || !strings.HasPrefix(ls[0], first) {
		t.Fatalf("notes %q; want the first to start %q", ls, first)
	}
	last := ls[len(ls)-1]
	if !strings.HasPrefix(last, "run "+r.ID()+": ") || !strings.Contains(last, " samples, ") || !strings.Contains(last, "saved to ") {
		t.Errorf("last note %q; want the run's summary", last)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "run.id" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("beside the id file: %v; want run.id alone", names)
	}
}

// TestStopEndsAnAttachedRecording attaches to a running process: Attached is called once
// and undone once by Close, Stop ends the recording while the process runs on, and the
// run is saved.
func TestStopEndsAnAttachedRecording(t *testing.T) {
	testutil.RequirePerf(t)
	t.Setenv("STAX_HOME", t.TempDir())
	hold := filepath.Join(t.TempDir(), "hold")
	target := exec.Command(os.Args[0])
	target.Env = append(os.Environ(), "STAX_TEST_HOLD="+hold)
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		os.WriteFile(hold, nil, 0o600)
		target.Wait()
	}()
	var n notes
	var mu sync.Mutex
	attached, undone := 0, 0
	r, err := Start(Config{
		Recorder: recorder.Options{Pid: target.Process.Pid, Freq: 999}, Quiet: true, Notef: n.add,
		Attached: func() func() {
			mu.Lock()
			defer mu.Unlock()
			attached++
			return func() {
				mu.Lock()
				defer mu.Unlock()
				undone++
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	r.Stop()
	res := r.Wait()
	r.Close()
	r.Close()
	if res != (Result{Exit: 0, Saved: true}) {
		t.Errorf("Wait: %+v; want exit 0, saved", res)
	}
	mu.Lock()
	if attached != 1 || undone != 1 {
		t.Errorf("Attached called %d times, undone %d times; want once each", attached, undone)
	}
	mu.Unlock()
	if ls := n.all(); len(ls) != 0 {
		t.Errorf("-q recording said %q", ls)
	}
	if target.ProcessState != nil {
		t.Errorf("the attached process ended with the recording: %v", target.ProcessState)
	}
}

// TestFailedStartLeavesNothing: a command that does not exist fails Start with the
// launcher's error, which tells stax's exit status, and leaves no run-id file.
func TestFailedStartLeavesNothing(t *testing.T) {
	testutil.RequirePerf(t)
	t.Setenv("STAX_HOME", t.TempDir())
	dir := t.TempDir()
	var n notes
	r, err := Start(Config{
		Recorder:  recorder.Options{Argv: []string{filepath.Join(dir, "no-such-program")}, Freq: 999},
		RunIDFile: filepath.Join(dir, "run.id"), Notef: n.add,
	})
	var nf *launch.NotFoundError
	if !errors.As(err, &nf) {
		if err == nil {
			r.Stop()
			r.Wait()
			r.Close()
		}
		t.Fatalf("Start: %v; want a launch.NotFoundError", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("a failed start left %d files beside the id file's path (%s...)", len(ents), ents[0].Name())
	}
}
