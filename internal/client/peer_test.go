package client

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/api"
)

// TestMain lets the test binary stand in for a recorder that listens and never answers
// (STAX_TEST_SILENT_LISTENER=PATH): the tests stop it with SIGSTOP.
func TestMain(m *testing.M) {
	if path := os.Getenv("STAX_TEST_SILENT_LISTENER"); path != "" {
		ln, err := net.Listen("unix", path)
		if err != nil {
			os.Exit(1)
		}
		os.Stdout.WriteString("listening\n")
		var held []net.Conn // open, unanswered
		for {
			c, err := ln.Accept()
			if err != nil {
				os.Exit(1)
			}
			held = append(held, c)
		}
	}
	os.Exit(m.Run())
}

// silentListener starts a process that listens on a unix socket and never answers.
func silentListener(t *testing.T) (*exec.Cmd, string) {
	t.Helper()
	return silentListenerAt(t, filepath.Join(t.TempDir(), "run.sock"))
}

func silentListenerAt(t *testing.T, sock string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "STAX_TEST_SILENT_LISTENER="+sock)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		cmd.Wait()
	})
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "listening\n" {
		t.Fatalf("the stand-in recorder did not start: %q, %v", line, err)
	}
	return cmd, sock
}

// TestStoppedRecorderIsNamed: a query of a recorder stopped with SIGSTOP ends, long before
// the query's own deadline, with an error naming its pid and how to resume it; LiveRuns
// finds it without asking it anything.
func TestStoppedRecorderIsNamed(t *testing.T) {
	old := queryTimeout
	queryTimeout = 10 * time.Minute
	defer func() { queryTimeout = old }()
	cmd, sock := silentListener(t)
	pid := cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	r := newLive("stopped-run", sock, 0)
	began := time.Now()
	var out map[string]any
	err := r.Get(context.Background(), "/v1/status", nil, &out)
	var na *NoAnswerError
	if !errors.As(err, &na) || na.Pid != pid || na.State != 'T' {
		t.Fatalf("Get of a stopped recorder: %v; want a NoAnswerError for pid %d, stopped", err, pid)
	}
	for _, want := range []string{"recorder pid " + strconv.Itoa(pid), "stopped", "kill -CONT " + strconv.Itoa(pid)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	t.Logf("gave up after %v: %v", time.Since(began), err)
	if _, stopped := r.Stopped(); !stopped {
		t.Errorf("Stopped: false for a stopped recorder")
	}
	// A long poll with no deadline of its own ends too.
	if err := r.LongPoll(context.Background(), "/v1/wait", nil, &out); !errors.As(err, &na) {
		t.Errorf("LongPoll of a stopped recorder: %v", err)
	}
	// A command is not even sent: it would take effect whenever the recorder resumes.
	began = time.Now()
	if err := r.Post(context.Background(), "/v1/stop", &out); !errors.As(err, &na) || time.Since(began) > stoppedGrace {
		t.Errorf("Post to a stopped recorder: %v after %v", err, time.Since(began))
	}
	syscall.Kill(pid, syscall.SIGCONT)
	deadline := time.Now().Add(10 * time.Second)
	for _, stopped := r.Stopped(); stopped; _, stopped = r.Stopped() {
		if time.Now().After(deadline) {
			t.Fatal("Stopped: still true 10 s after SIGCONT")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSilentRecorderTimesOut: a recorder that runs but does not answer is given up on at
// the query's deadline, with its pid.
func TestSilentRecorderTimesOut(t *testing.T) {
	old := queryTimeout
	queryTimeout = 300 * time.Millisecond
	defer func() { queryTimeout = old }()
	cmd, sock := silentListener(t)
	r := newLive("silent-run", sock, 0)
	var out map[string]any
	err := r.Get(context.Background(), "/v1/status", nil, &out)
	var na *NoAnswerError
	if !errors.As(err, &na) || na.Pid != cmd.Process.Pid || na.State != 0 || na.After < queryTimeout {
		t.Fatalf("Get of a silent recorder: %#v; want a NoAnswerError for pid %d after %v", err, cmd.Process.Pid, queryTimeout)
	}
	if !strings.Contains(err.Error(), "did not answer within") {
		t.Errorf("%q does not say it did not answer", err)
	}
}

// TestPickLiveFromThisTerminal: of several live runs, the default is the one started from
// this terminal, else the newest; with one, no reason is given beyond its being live.
func TestPickLiveFromThisTerminal(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	t.Setenv("XDG_RUNTIME_DIR", "")
	defer func(old func() int) { thisTerminal = old }(thisTerminal)
	dir, err := api.SocketDir()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	saveRunFrom(t, "20261101-120000-1", 34817, 0, now.Add(-time.Minute))
	saveRunFrom(t, "20261101-120100-2", 0, 0, now)
	saveRunFrom(t, "20261101-120200-3", 0, 900, now) // stored, not live
	older, _ := silentListenerAt(t, api.SocketPath(dir, "20261101-120000-1"))
	silentListenerAt(t, api.SocketPath(dir, "20261101-120100-2"))
	for _, c := range []struct {
		term    int
		id, why string
	}{
		{34817, "20261101-120000-1", "started from this terminal, of 2 live runs"},
		{34818, "20261101-120100-2", "newest of 2 live runs"},
		{0, "20261101-120100-2", "newest of 2 live runs"},
	} {
		thisTerminal = func() int { return c.term }
		r, err := Pick("")
		if err != nil || r.ID != c.id || r.Why != c.why || !r.Live {
			t.Errorf("terminal %d: Pick = %+v, %v; want live %s because %q", c.term, r, err, c.id, c.why)
		}
	}
	if r, err := Pick(""); err == nil && r.Pid() <= 0 {
		t.Errorf("the live run's recorder pid is unknown")
	}
	older.Process.Kill()
	older.Wait()
	thisTerminal = func() int { return 34817 }
	if r, err := Pick(""); err != nil || r.ID != "20261101-120100-2" || r.Why != "" {
		t.Errorf("one live run: Pick = %+v, %v", r, err)
	}
}
