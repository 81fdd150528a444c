package e2e

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// buildDaemon builds daemon.c (-O2 -g, no frame pointers) at dir/daemon.
func buildDaemon(t *testing.T, dir string) string {
	t.Helper()
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/daemon.c")
	inc := "-I" + filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata")
	return testutil.CC(t, dir, "daemon", "gcc", "-O2", "-g", "-fomit-frame-pointer", inc, src)
}

// buildOther builds another program (spin.c: other functions, another layout) at
// dir/daemon: the new build that replaces the one that runs.
func buildOther(t *testing.T, dir string) string {
	t.Helper()
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/spin.c")
	inc := "-I" + filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata")
	return testutil.CC(t, dir, "daemon", "gcc", "-O2", "-g", "-fomit-frame-pointer", inc, src, "-lpthread")
}

// replace deletes bin and writes another program at its path.
func replace(t *testing.T, bin string) {
	t.Helper()
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	buildOther(t, filepath.Dir(bin))
}

// checkDaemonStacks checks the run's daemon samples: named from the build that ran, and
// unwound (without frame pointers) from _start through main, daemon_outer and
// daemon_middle; nothing named from the build that replaced it.
func checkDaemonStacks(t *testing.T, e *staxEnv) {
	t.Helper()
	var fl api.Flame
	e.mustJSON(&fl, "flame", "-d", "0", "--threshold-pct", "0")
	want := []string{"_start", "main", "daemon_outer", "daemon_middle", "daemon_leaf"}
	var in, on uint64
	var walk func(n *api.FlameNode, i int)
	walk = func(n *api.FlameNode, i int) {
		if n.Func == "daemon_leaf" {
			in += n.Total
		}
		if i < len(want) && n.Func == want[i] {
			i++
			if i == len(want) {
				on += n.Total
				return
			}
		}
		for _, c := range n.Children {
			walk(c, i)
		}
	}
	walk(fl.Root, 0)
	var st api.Status
	e.mustJSON(&st, "status")
	t.Logf("%d samples, %d in daemon_leaf, %d of them under %s; stack ends %v", fl.Samples, in, on, strings.Join(want, " "), st.Meta.StackEnds)
	if in < 150 || float64(on) < 0.95*float64(in) {
		text, _, _ := e.run("flame", "-d", "8")
		t.Errorf("%d samples in daemon_leaf, %d of them under %s\n%s", in, on, strings.Join(want, " "), text)
	}
	var top api.Top
	e.mustJSON(&top, "top", "-n", "1000")
	for _, r := range top.Rows {
		if r.Image == "daemon" && (strings.HasPrefix(r.Func, "daemon+") || r.Func == "spin" || r.Func == "worker") {
			t.Errorf("a frame named from the wrong build, or not at all: %+v", r)
		}
	}
}

// A daemon whose binary was deleted, and another build written at its path, while it ran
// (a package upgrade): attached to afterwards (its mapping reads "(deleted)" and has no
// build-id), or recorded from its start (the MMAP2 record has the build-id), its functions
// are named and its stacks unwound from the build that runs, read through
// /proc/PID/map_files, never from the file now at the path.
func TestReplacedBinaryNamedAndUnwound(t *testing.T) {
	testutil.RequirePerf(t)
	t.Run("attach", func(t *testing.T) {
		e := newEnv(t)
		bin := buildDaemon(t, t.TempDir())
		target := exec.Command(bin, "300", "wait")
		stdin, _ := target.StdinPipe()
		stdout, _ := target.StdoutPipe()
		if err := target.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { target.Process.Kill(); target.Wait() })
		out := bufio.NewReader(stdout)
		if line, err := out.ReadString('\n'); err != nil || line != "waiting\n" {
			t.Fatalf("daemon: %q, %v", line, err)
		}
		replace(t, bin)
		rec := e.cmd("record", "-q", "-p", strconv.Itoa(target.Process.Pid))
		var recOut syncBuffer
		rec.Stdout, rec.Stderr = &recOut, &recOut
		if err := rec.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rec.Process.Kill() })
		waitLive(t, e)
		io.WriteString(stdin, "go\n")
		if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
			t.Fatalf("daemon: %q, %v", line, err)
		}
		// Named while the daemon runs (a daemon keeps running).
		waitNamed(t, e, "daemon_leaf", &recOut)
		stdin.Close()
		if err := rec.Wait(); err != nil {
			t.Fatalf("record -p: %v\n%s", err, recOut.String())
		}
		checkDaemonStacks(t, e)
	})
	t.Run("launch", func(t *testing.T) {
		e := newEnv(t)
		dir := t.TempDir()
		bin := buildDaemon(t, dir)
		l := e.startLines(dir, "record", "-q", "--", bin, "300", "wait")
		l.waitLine(t, "waiting")
		replace(t, bin)
		io.WriteString(l.stdin, "go\n")
		l.waitLine(t, "ready")
		waitNamed(t, e, "daemon_leaf", &l.log)
		l.finish(t)
		checkDaemonStacks(t, e)
	})
}

// A program in another mount namespace (a container) whose binary's path holds another
// build on the host: its stacks are unwound, and its functions named, from its own file,
// read through /proc/PID/root, never from the host's.
func TestContainerBinaryUnwoundFromItsOwnFile(t *testing.T) {
	testutil.RequirePerf(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and unshare (util-linux) to make a mount namespace")
	}
	if out, err := exec.Command(unshare, "--mount", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot make a mount namespace here: %v %s", err, out)
	}
	own, host := t.TempDir(), t.TempDir()
	buildDaemon(t, own)
	bin := buildOther(t, host)
	e := newEnv(t)
	// In the namespace, the host's directory shows the program's own build.
	script := "mount --bind " + own + " " + host + " && exec " + bin + " 300"
	l := e.startLines(host, "record", "-q", "--", unshare, "--mount", "--propagation", "private", "sh", "-c", script)
	l.waitLine(t, "ready")
	waitNamed(t, e, "daemon_leaf", &l.log)
	l.finish(t)
	checkDaemonStacks(t, e)
}

// waitNamed waits until the live run has named a sampled function sym.
func waitNamed(t *testing.T, e *staxEnv, sym string, log *syncBuffer) {
	t.Helper()
	if o, errOut, code := e.run("wait", "--until-symbol", sym, "--timeout-ms", "60000"); code != 0 {
		top, _, _ := e.run("top", "-n", "8")
		t.Fatalf("wait for %s: exit %d\n%s%s\n%s\n%s", sym, code, o, errOut, top, log.String())
	}
}

// waitLive waits until the env's recorder has a live run.
func waitLive(t *testing.T, e *staxEnv) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var l api.List
		e.mustJSON(&l, "list")
		for _, r := range l.Runs {
			if r.Live {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no live run: %+v", l.Runs)
		}
		time.Sleep(20 * time.Millisecond) // polling for the recorder's socket; not a timing assumption
	}
}

// lineRecording is a stax command whose output is read line by line while it runs.
type lineRecording struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines *bufio.Reader
	log   syncBuffer // what was read, and stax's standard error
}

func (e *staxEnv) startLines(dir string, args ...string) *lineRecording {
	e.t.Helper()
	l := &lineRecording{cmd: e.cmd(args...)}
	l.cmd.Dir = dir
	var err error
	if l.stdin, err = l.cmd.StdinPipe(); err != nil {
		e.t.Fatal(err)
	}
	stdout, err := l.cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	l.lines = bufio.NewReader(stdout)
	l.cmd.Stderr = &l.log
	if err := l.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { l.cmd.Process.Kill() })
	return l
}

// waitLine reads lines until one is want.
func (l *lineRecording) waitLine(t *testing.T, want string) {
	t.Helper()
	for {
		line, err := l.lines.ReadString('\n')
		l.log.Write([]byte(line))
		if strings.TrimSuffix(line, "\n") == want {
			return
		}
		if err != nil {
			l.cmd.Wait()
			t.Fatalf("no line %q:\n%s", want, l.log.String())
		}
	}
}

// finish ends the program's standard input and waits for the recording to end.
func (l *lineRecording) finish(t *testing.T) {
	t.Helper()
	l.stdin.Close()
	io.Copy(&l.log, l.lines)
	if err := l.cmd.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, l.log.String())
	}
}
