// Package e2e runs the stax binary on real programs built from source, with real perf events.
package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

var cflags = []string{"-O1", "-g", "-fno-omit-frame-pointer", "-fno-optimize-sibling-calls", "-fno-inline"}

// staxEnv is one isolated stax home (run store and sockets).
type staxEnv struct {
	t    *testing.T
	bin  string
	home string
	env  []string // added to stax's environment
}

func newEnv(t *testing.T) *staxEnv {
	t.Helper()
	return &staxEnv{t: t, bin: testutil.Stax(t), home: t.TempDir()}
}

// syncBuffer collects a process's output; safe to read while the process writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// shareTolerance is the half-width, in percentage points, allowed around an expected share
// p (0..1) measured over n samples: five standard errors of a binomial share, at least one
// point.
func shareTolerance(p float64, n uint64) float64 {
	if n == 0 {
		return 100
	}
	return math.Max(1, 500*math.Sqrt(p*(1-p)/float64(n)))
}

// liveRecording is a `stax record` of a program that does its work, prints "ready" and
// then waits for a line on its standard input: while it waits, the run is live and holds
// all of the program's samples.
type liveRecording struct {
	cmd   *exec.Cmd
	out   syncBuffer
	stdin io.WriteCloser
}

// startUntilReady starts `stax record -q -- args...` and returns once the program has
// printed "ready".
func (e *staxEnv) startUntilReady(dir string, args ...string) *liveRecording {
	e.t.Helper()
	return e.startRecordUntilReady(dir, nil, args...)
}

// startRecordUntilReady is startUntilReady with record's flags.
func (e *staxEnv) startRecordUntilReady(dir string, flags []string, args ...string) *liveRecording {
	e.t.Helper()
	l := &liveRecording{cmd: e.cmd(append(append(append([]string{"record", "-q"}, flags...), "--"), args...)...)}
	l.cmd.Dir = dir
	var err error
	if l.stdin, err = l.cmd.StdinPipe(); err != nil {
		e.t.Fatal(err)
	}
	stdout, err := l.cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	l.cmd.Stderr = &l.out
	if err := l.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { l.cmd.Process.Kill() })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		fmt.Fprintln(&l.out, sc.Text())
		if sc.Text() == "ready" {
			go io.Copy(&l.out, stdout)
			return l
		}
	}
	l.cmd.Wait()
	e.t.Fatalf("%v never printed ready:\n%s", args, l.out.String())
	return nil
}

// finish lets the program exit and waits for the recording to end.
func (l *liveRecording) finish(t *testing.T) {
	t.Helper()
	l.stdin.Write([]byte("\n"))
	l.stdin.Close()
	if err := l.cmd.Wait(); err != nil {
		t.Fatalf("record: %v\n%s", err, l.out.String())
	}
}

func (e *staxEnv) cmd(args ...string) *exec.Cmd {
	c := exec.Command(e.bin, args...)
	c.Env = append(append(os.Environ(), "STAX_HOME="+e.home), e.env...)
	return c
}

// run runs stax and returns stdout, stderr and the exit code.
func (e *staxEnv) run(args ...string) (string, string, int) {
	e.t.Helper()
	c := e.cmd(args...)
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

func (e *staxEnv) mustJSON(v any, args ...string) {
	e.t.Helper()
	out, errOut, code := e.run(append(args, "--json")...)
	if code != 0 {
		e.t.Fatalf("stax %v: exit %d\n%s%s\n%s", args, code, out, errOut, e.diagnosis())
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		e.t.Fatalf("stax %v: bad JSON: %v\n%s", args, err, out)
	}
}

func row(top api.Top, fn string) (self, total uint64, ok bool) {
	for _, r := range top.Rows {
		if r.Func == fn {
			return r.Self, r.Total, true
		}
	}
	return 0, 0, false
}

func buildRatio(t *testing.T) string {
	dir := t.TempDir()
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/ratio.c")
	return testutil.CC(t, dir, "ratio", "gcc", append(cflags, "-pthread", src)...)
}

// startRatio starts ratio.c running until it is killed (at the test's end) and returns it
// once it has named its threads.
func startRatio(t *testing.T) *exec.Cmd {
	t.Helper()
	target := exec.Command(buildRatio(t), "100", "forever")
	stdout, err := target.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		target.Process.Kill()
		target.Wait()
	})
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "threads named\n" {
		t.Fatalf("the target did not name its threads: %q, %v", line, err)
	}
	return target
}

func TestRatioTopAndFlame(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := buildRatio(t)
	// work_a runs for 1 s of CPU time, work_b for 2 s: about 3,000 samples at 999 Hz.
	out, errOut, code := e.run("record", "-q", "--", prog, "1000")
	if code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "ratio done") {
		t.Errorf("the program's stdout did not pass through: %q", out)
	}
	var top api.Top
	e.mustJSON(&top, "top", "-n", "50", "--sort", "self")
	a, _, okA := row(top, "work_a")
	b, _, okB := row(top, "work_b")
	if !okA || !okB {
		t.Fatalf("work_a or work_b missing from top: %+v", top.Rows)
	}
	// 1:2 CPU time: work_b holds two thirds of their samples. The workload is sized in CPU
	// time, so the sample count does not depend on the machine's speed or load; fewer than
	// half the expected 3,000 means samples were lost.
	share := float64(b) * 100 / float64(a+b)
	tol := shareTolerance(2.0/3, a+b)
	t.Logf("work_a %d, work_b %d samples: work_b share %.1f%% (want 66.7 ± %.1f)", a, b, share, tol)
	if a+b < 1500 {
		t.Fatalf("too few samples to judge: %d (about 3,000 expected from 3 s of CPU time)", a+b)
	}
	if math.Abs(share-200.0/3) > tol {
		t.Errorf("work_b share %.1f%%, want 66.7 ± %.1f", share, tol)
	}

	var fl api.Flame
	e.mustJSON(&fl, "flame", "-d", "30", "--threshold-pct", "0")
	if !hasPath(fl.Root, []string{"main", "outer", "inner"}) {
		t.Errorf("flame has no main -> outer -> inner path")
	}
	txt, _, _ := e.run("flame")
	if !strings.Contains(txt, "outer") || !strings.Contains(txt, "inner") {
		t.Errorf("text flame lacks outer/inner:\n%s", txt)
	}
}

// hasPath reports whether the tree has the functions of path as consecutive descendants.
func hasPath(n *api.FlameNode, path []string) bool {
	if n == nil {
		return false
	}
	if follows(n, path) {
		return true
	}
	for _, c := range n.Children {
		if hasPath(c, path) {
			return true
		}
	}
	return false
}

// pathTotal is the samples of the nodes that end path, wherever it starts in the tree.
func pathTotal(n *api.FlameNode, path []string) uint64 {
	if n == nil || len(path) == 0 {
		return 0
	}
	var total uint64
	if n.Func == path[0] {
		if len(path) == 1 {
			total += n.Total
		} else {
			for _, c := range n.Children {
				total += pathFrom(c, path[1:])
			}
		}
	}
	for _, c := range n.Children {
		total += pathTotal(c, path)
	}
	return total
}

// pathFrom is the samples of the nodes that end path starting at n.
func pathFrom(n *api.FlameNode, path []string) uint64 {
	if n.Func != path[0] {
		return 0
	}
	if len(path) == 1 {
		return n.Total
	}
	var total uint64
	for _, c := range n.Children {
		total += pathFrom(c, path[1:])
	}
	return total
}

func follows(n *api.FlameNode, path []string) bool {
	if len(path) == 0 {
		return true
	}
	if n.Func != path[0] {
		return false
	}
	if len(path) == 1 {
		return true
	}
	for _, c := range n.Children {
		if follows(c, path[1:]) {
			return true
		}
	}
	return false
}

func TestLiveQueriesThenStored(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := buildRatio(t)
	// 2 s + 4 s of CPU time: about 6,000 samples, so the run is still going after 2,000.
	rec := e.cmd("record", "-q", "--", prog, "2000")
	var recOut syncBuffer
	rec.Stdout, rec.Stderr = &recOut, &recOut
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	defer rec.Process.Kill()
	out, errOut, code := e.run("wait", "--for-samples", "2000", "--timeout-ms", "60000")
	if code != 0 {
		t.Fatalf("wait: exit %d\n%s%s\nrecord said: %s", code, out, errOut, recOut.String())
	}
	var top api.Top
	e.mustJSON(&top, "top", "-n", "5")
	if !top.Live {
		t.Errorf("top during the run says the run is not live")
	}
	if top.Samples < 2000 {
		t.Errorf("live top has %d samples, want >= 2000", top.Samples)
	}
	if _, _, ok := row(top, "work_b"); !ok {
		t.Errorf("live top lacks work_b: %+v", top.Rows)
	}
	txt, _, _ := e.run("top", "-n", "5")
	t.Logf("live top:\n%s", txt)
	if err := rec.Wait(); err != nil {
		t.Fatalf("record: %v\n%s", err, recOut.String())
	}
	var after api.Top
	e.mustJSON(&after, "top", "-n", "5")
	if after.Live {
		t.Errorf("top after the run says live")
	}
	if after.Samples <= top.Samples {
		t.Errorf("stored run has %d samples, fewer than the %d seen live", after.Samples, top.Samples)
	}
	if _, _, ok := row(after, "work_b"); !ok {
		t.Errorf("stored top lacks work_b: %+v", after.Rows)
	}
	// A wait on a finished run named with --run answers at once; without --run there is
	// no live run to wait on.
	if _, _, code := e.run("wait", "--run", after.Run, "--for-samples", "10"); code != 0 {
		t.Errorf("wait on a finished run that met the condition: exit %d", code)
	}
	if _, _, code := e.run("wait", "--run", after.Run, "--for-samples", "100000000"); code != 3 {
		t.Errorf("wait on a finished run that cannot meet the condition: exit %d, want 3", code)
	}
	if _, stderr, code := e.run("wait", "--for-samples", "10"); code != 5 || !strings.Contains(stderr, "--run "+after.Run) {
		t.Errorf("wait with no live run: exit %d, %q; want 5 naming the stored run", code, stderr)
	}
}

func TestAttachStopAndThreads(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	target := startRatio(t)
	rec := e.cmd("record", "-q", "-p", itoa(target.Process.Pid))
	var recOut syncBuffer
	rec.Stdout, rec.Stderr = &recOut, &recOut
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	defer rec.Process.Kill()
	if out, errOut, code := e.run("wait", "--for-samples", "1000", "--timeout-ms", "60000"); code != 0 {
		t.Fatalf("wait: exit %d\n%s%s\n%s", code, out, errOut, recOut.String())
	}
	if out, errOut, code := e.run("stop"); code != 0 {
		t.Fatalf("stop: exit %d\n%s%s", code, out, errOut)
	}
	done := make(chan error, 1)
	go func() { done <- rec.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("record -p exited with %v\n%s", err, recOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("record -p did not exit after stop")
	}
	if err := target.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the attached program did not survive the recording: %v", err)
	}
	var th api.Threads
	e.mustJSON(&th, "threads")
	names := map[string]uint64{}
	for _, r := range th.Rows {
		names[r.Name] = r.Samples
	}
	for _, want := range []string{"worker-a", "worker-b"} {
		if names[want] == 0 {
			t.Errorf("threads lacks %s with samples: %+v", want, th.Rows)
		}
	}
}

func TestForkAndExecAreFollowed(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/fork.c")
	prog := testutil.CC(t, t.TempDir(), "fork", "gcc", append(cflags, src)...)
	// 300 ms of CPU time in each of the three functions: about 300 samples each.
	if out, errOut, code := e.run("record", "-q", "--", prog, "300"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var top api.Top
	e.mustJSON(&top, "top", "-n", "50")
	for _, fn := range []string{"parent_work", "child_work", "exec_work"} {
		if self, _, ok := row(top, fn); !ok || self < 50 {
			t.Errorf("%s: %d samples, want a named row with samples", fn, self)
		}
	}
	if t.Failed() {
		t.Log(e.diagnosis())
	}
}

// diagnosis is what a failing test shows about the newest run: its status and top rows.
func (e *staxEnv) diagnosis() string {
	status, errOut, _ := e.run("status")
	top, errTop, _ := e.run("top", "-n", "15")
	return "stax status:\n" + status + errOut + "\nstax top:\n" + top + errTop
}

func TestCxxNamesAreDemangled(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/mangled.cc")
	prog := testutil.CC(t, t.TempDir(), "mangled", "g++", append(cflags, src)...)
	if out, errOut, code := e.run("record", "-q", "--", prog, "300"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var top api.Top
	e.mustJSON(&top, "top", "-n", "50", "--sort", "total")
	for _, fn := range []string{"geometry::Shape::area(double)", "geometry::Accumulator<unsigned long>::add(unsigned long)"} {
		if _, total, ok := row(top, fn); !ok || total < 50 {
			t.Errorf("%s missing (or %d samples) in %+v", fn, total, top.Rows)
		}
	}
}

func TestGoProgramIsNamed(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	dir := t.TempDir()
	prog := filepath.Join(dir, "goprog")
	testutil.Run(t, filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/goprog"), "go", "build", "-o", prog, ".")
	if out, errOut, code := e.run("record", "-q", "--", prog, "300ms"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var top api.Top
	e.mustJSON(&top, "top", "-n", "10")
	if self, _, ok := row(top, "main.hotLoop"); !ok || self < 50 {
		t.Errorf("main.hotLoop missing or cold: %+v", top.Rows)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
