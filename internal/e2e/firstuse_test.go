package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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

	// A FIFO (what a script's process substitution gives) is written into, not replaced.
	fifo := filepath.Join(dir, "run.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		b, err := os.ReadFile(fifo)
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		got <- string(b)
	}()
	out, errOut, code = e.run("record", "-q", "--run-id-file", fifo, "--", "true")
	if code != 0 {
		t.Fatalf("record --run-id-file FIFO: exit %d\n%s%s", code, out, errOut)
	}
	var line string
	select {
	case line = <-got:
	case <-time.After(time.Minute):
		os.WriteFile(fifo, nil, 0) // lets the reader go
		t.Fatalf("nothing was written into the FIFO")
	}
	if !store.ValidID(strings.TrimSuffix(line, "\n")) || !strings.HasSuffix(line, "\n") {
		t.Errorf("the FIFO gave %q, want a run id and a newline", line)
	}
	if info, err := os.Lstat(fifo); err != nil || info.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("--run-id-file replaced the FIFO: %v %v", info.Mode(), err)
	}
}

// runBounded runs stax and kills it if it has not ended within limit: for commands that
// must not hang.
func (e *staxEnv) runBounded(limit time.Duration, args ...string) (stdout, stderr string, code int, took time.Duration) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	c := exec.CommandContext(ctx, e.bin, args...)
	c.Env = append(os.Environ(), "STAX_HOME="+e.home)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	began := time.Now()
	err := c.Run()
	took = time.Since(began)
	if ctx.Err() != nil {
		e.t.Errorf("stax %v did not end within %v (it hangs)", args, limit)
		return out.String(), errb.String(), -1, took
	}
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("run stax %v: %v", args, err)
	}
	return out.String(), errb.String(), code, took
}

// TestStoppedRecorder stops a live run's recorder with SIGSTOP: status, top, wait, stop
// and list end promptly, saying which pid is stopped and how to resume it, instead of
// waiting forever on a socket the kernel still accepts connections on. After SIGCONT
// they answer again.
func TestStoppedRecorder(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	target := startRatio(t)
	rec := e.cmd("record", "-q", "-p", strconv.Itoa(target.Process.Pid))
	var recOut syncBuffer
	rec.Stdout, rec.Stderr = &recOut, &recOut
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	recorder := rec.Process.Pid
	defer func() {
		syscall.Kill(recorder, syscall.SIGCONT)
		rec.Process.Kill()
		rec.Wait()
	}()
	// A checkpoint with samples: stax list describes a stopped recorder's run from it.
	waitForCheckpoint(t, e)
	if err := syscall.Kill(recorder, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Well under the 30 s a running recorder is given to answer: the stop is noticed.
	const limit = 20 * time.Second
	pid := strconv.Itoa(recorder)
	for _, args := range [][]string{{"status"}, {"top"}, {"wait", "--for-samples", "100000000"}, {"stop"}} {
		_, errOut, code, took := e.runBounded(limit, args...)
		t.Logf("stax %v: exit %d after %v: %s", args, code, took.Round(time.Millisecond), errOut)
		if code != 1 {
			t.Errorf("stax %v on a stopped recorder: exit %d, want 1", args, code)
		}
		checkOneLine(t, strings.Join(args, " "), errOut)
		for _, want := range []string{"recorder pid " + pid, "is stopped", "kill -CONT " + pid} {
			if !strings.Contains(errOut, want) {
				t.Errorf("stax %v: %q does not say %q", args, errOut, want)
			}
		}
	}
	out, errOut, code, _ := e.runBounded(limit, "list", "--json")
	var l api.List
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil {
		t.Fatalf("list: exit %d\n%s%s", code, out, errOut)
	}
	if len(l.Runs) != 1 || l.Runs[0].State != "stopped" || !l.Runs[0].Live || !strings.Contains(l.Runs[0].Reason, "kill -CONT "+pid) || l.Runs[0].Samples == 0 {
		t.Errorf("list of a stopped recorder: %+v", l.Runs)
	}
	syscall.Kill(recorder, syscall.SIGCONT)
	var st api.Status
	e.mustJSON(&st, "status")
	if st.State != api.StateLive {
		t.Errorf("status after SIGCONT: state %q, want live", st.State)
	}
	if out, errOut, code := e.run("stop"); code != 0 {
		t.Fatalf("stop: exit %d\n%s%s", code, out, errOut)
	}
	if err := rec.Wait(); err != nil {
		t.Errorf("record -p: %v\n%s", err, recOut.String())
	}
}

// openTerminal opens a pseudo-terminal and returns its terminal side.
func openTerminal(t *testing.T) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("number of the pseudo-terminal: %v", err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty
}

// runOn runs stax in a session of its own whose controlling terminal is tty (nil: none),
// as from a shell in that terminal.
func (e *staxEnv) runOn(tty *os.File, args ...string) (string, string, int) {
	e.t.Helper()
	c := e.cmd(args...)
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if tty != nil {
		c.Stdin = tty
		c.SysProcAttr.Setctty, c.SysProcAttr.Ctty = true, 0
	}
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("run stax %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// TestDefaultRun: with no run named, a command answers from the newest run with samples,
// started from its own terminal first, and its header says which run and why; a newer
// run with no samples is passed over and named, never answered from as if it were the
// run meant. stax wait with no live run says so instead of answering from a stored one.
func TestDefaultRun(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := buildRatio(t)
	term := openTerminal(t)
	// here: from the terminal; elsewhere: newer, from no terminal; empty: newest, attached
	// to a sleeping process, so it has no samples at all.
	ids := map[string]string{}
	record := func(name string, tty *os.File, args ...string) {
		idFile := filepath.Join(t.TempDir(), "run.id")
		args = append([]string{"record", "-q", "--run-id-file", idFile}, args...)
		if out, errOut, code := e.runOn(tty, args...); code != 0 {
			t.Fatalf("record %s: exit %d\n%s%s", name, code, out, errOut)
		}
		b, err := os.ReadFile(idFile)
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = strings.TrimSpace(string(b))
	}
	record("here", term, "--", prog, "100")
	record("elsewhere", nil, "--", prog, "100")
	sleeper := exec.Command("sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	record("empty", nil, "-p", strconv.Itoa(sleeper.Process.Pid), "-l", "0.3")
	for name, id := range ids {
		m, err := store.ReadMeta(e.runPath(id))
		if err != nil {
			t.Fatal(err)
		}
		if (m.Samples == 0) != (name == "empty") || (m.Terminal != 0) != (name == "here") {
			t.Fatalf("run %s (%s): %d samples, terminal %d", name, id, m.Samples, m.Terminal)
		}
	}

	// From no terminal: the newest run with samples.
	out, errOut, code := e.runOn(nil, "top", "-n", "3")
	want := fmt.Sprintf("run %s (stored, newest with samples; newer run %s has none) · ", ids["elsewhere"], ids["empty"])
	if code != 0 || !strings.HasPrefix(out, want) {
		t.Errorf("top from no terminal: exit %d, want a header starting %q:\n%s%s", code, want, out, errOut)
	}
	out, errOut, code = e.runOn(nil, "timeline")
	if code != 0 || !strings.HasPrefix(out, "run "+ids["elsewhere"]+" ") {
		t.Errorf("timeline from no terminal: exit %d, want run %s:\n%s%s", code, ids["elsewhere"], out, errOut)
	}
	// From the terminal that recorded one: that one, though another is newer.
	out, errOut, code = e.runOn(term, "status")
	want = fmt.Sprintf("run:       %s (stored, newest from this terminal)\n", ids["here"])
	if code != 0 || !strings.HasPrefix(out, want) {
		t.Errorf("status from the terminal: exit %d, want %q first:\n%s%s", code, want, out, errOut)
	}
	// The empty run answers when named, and says it has no samples.
	_, errOut, code = e.runOn(nil, "timeline", "--run", ids["empty"])
	if code == 0 || !strings.Contains(errOut, "run "+ids["empty"]+" has no samples") || strings.Contains(errOut, "older stax") {
		t.Errorf("timeline of the empty run: exit %d, %q", code, errOut)
	}
	checkOneLine(t, "timeline of the empty run", errOut)
	// wait with nothing live does not answer from a stored run; with --run it does.
	_, errOut, code = e.runOn(nil, "wait", "--for-samples", "1")
	if code != 5 || !strings.Contains(errOut, "no live run to wait on") || !strings.Contains(errOut, "stax wait --run "+ids["elsewhere"]) {
		t.Errorf("wait with no live run: exit %d, %q; want 5 naming run %s", code, errOut, ids["elsewhere"])
	}
	checkOneLine(t, "wait with no live run", errOut)
	if _, errOut, code := e.runOn(nil, "wait", "--run", ids["elsewhere"], "--for-samples", "1"); code != 0 {
		t.Errorf("wait --run on a stored run that met the condition: exit %d, %q", code, errOut)
	}
	if _, errOut, code := e.runOn(nil, "wait", "--run", ids["empty"], "--for-samples", "1"); code != 3 {
		t.Errorf("wait --run on the empty stored run: exit %d, %q; want 3 (it ended)", code, errOut)
	}
	// With --timeout-ms, wait gives a run that long to appear, not just two seconds.
	w := e.cmd("wait", "--for-samples", "1", "--timeout-ms", "120000")
	var wOut syncBuffer
	w.Stdout, w.Stderr = &wOut, &wOut
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- w.Wait() }()
	select {
	case err := <-waited:
		t.Fatalf("wait --timeout-ms with nothing live ended at once: %v\n%s", err, wOut.String())
	case <-time.After(3 * time.Second):
	}
	record("late", nil, "--", prog, "500") // live for 1.6 s of CPU time: long enough to be seen
	if err := <-waited; err != nil {
		t.Errorf("wait for a run started later: %v\n%s", err, wOut.String())
	}
}
