package e2e

import (
	"bufio"
	"bytes"
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

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// jitShareBudgetMiB is the JIT budget the tests below record with (STAX_JIT_MEMORY): small,
// so that a perf map of two million lines overfills it many times over in a second's reading.
const jitShareBudgetMiB = 64

// TestPerfMapFloodLeavesOtherJITsNamed: under record -a, one process floods its perf map with
// two million lines, far past the JIT budget, before another starts its JIT. The flood keeps
// to its share (its oldest functions dropped and counted against it in status), and the
// other program's jitdump is read whole: its JIT code stays named.
func TestPerfMapFloodLeavesOtherJITsNamed(t *testing.T) {
	testutil.RequirePerf(t)
	testutil.RequireRoot(t) // system-wide recording needs root or CAP_PERFMON
	// A race-detector build recording every process of 2 busy CPUs answered no status
	// query in 4 minutes, and the test synchronises on them: it records with a plain
	// build. The budget's sharing is checked under the race detector by internal/jit and
	// internal/resolve.
	e := newEnv(t)
	e.bin = testutil.StaxPlain(t)
	e.env = append(e.env, "STAX_JIT_MEMORY="+itoa(jitShareBudgetMiB))
	dir := t.TempDir()
	toy := filepath.Join(dir, "toyjit")
	testutil.Run(t, testutil.RepoRoot(t), "go", "build", "-o", toy, "./examples/toyjit")
	flooder := testutil.CC(t, dir, "bigmap", "gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-fno-inline",
		filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/bigmap.c"))

	// Frame-pointer stacks at 199 Hz without off-CPU time: with dwarf stacks and off-CPU
	// time for every process of a busy shared machine, the recorder can be too busy to
	// answer the status queries the test waits on within their timeout.
	rec := e.cmd("record", "-q", "-a", "-F", "199", "--call-graph", "fp", "--no-off-cpu")
	var recOut syncBuffer
	rec.Stdout, rec.Stderr = &recOut, &recOut
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	var recErr error
	recDone := make(chan struct{})
	go func() { recErr = rec.Wait(); close(recDone) }()
	t.Cleanup(func() {
		select {
		case <-recDone:
		default:
			rec.Process.Kill()
			<-recDone
		}
	})
	var st api.Status
	ended := func() (bool, error) {
		select {
		case <-recDone:
			return true, recErr
		default:
			return false, nil
		}
	}
	waitStatus(t, e, ended, &recOut, "the recording to start", func(*api.Status) bool { return true }, &st)

	// The flood: two million lines at once, then a little CPU work (it is recorded once it
	// is sampled), then it sleeps until the test ends, leaving the CPUs to the recorder.
	flood := exec.Command(flooder, "2000000", "300", "3600")
	if err := flood.Start(); err != nil {
		t.Fatal(err)
	}
	floodPid := flood.Process.Pid
	floodMap := "/tmp/perf-" + itoa(floodPid) + ".map"
	t.Cleanup(func() {
		flood.Process.Kill()
		flood.Wait()
		os.Remove(floodMap)
	})
	// Wait until its functions filled its share of the JIT tables (or, before shares, the
	// whole budget: its map was no longer read), so that the other program's functions come
	// after.
	waitStatus(t, e, ended, &recOut, "the flood to fill the JIT tables", func(st *api.Status) bool {
		for _, s := range st.JIT {
			if s.Pid == floodPid && (s.Evicted > 0 || strings.Contains(s.Error, "stopped reading")) {
				return true
			}
		}
		return false
	}, &st)

	toyCmd := exec.Command(toy, "-cpu", "3s", "-wait")
	toyCmd.Dir = dir
	toyIn, err := toyCmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	toyOut, err := toyCmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := toyCmd.Start(); err != nil {
		t.Fatal(err)
	}
	toyPid := toyCmd.Process.Pid
	t.Cleanup(func() {
		toyCmd.Process.Kill()
		toyCmd.Wait()
		os.Remove("/tmp/jit-" + itoa(toyPid) + ".dump")
	})
	sc := bufio.NewScanner(toyOut)
	for sc.Scan() && sc.Text() != "ready" {
	}
	if sc.Text() != "ready" {
		t.Fatalf("toyjit never printed ready")
	}
	// Its code has run; the run holds its samples once the watcher has read its jitdump.
	waitStatus(t, e, ended, &recOut, "the toy JIT's jitdump to be read", func(st *api.Status) bool {
		for _, s := range st.JIT {
			if s.Pid == toyPid && s.Kind == "jitdump" && s.Functions >= 2 {
				return true
			}
		}
		return false
	}, &st)
	if out, errOut, code := e.run("stop"); code != 0 {
		t.Fatalf("stop: exit %d\n%s%s", code, out, errOut)
	}
	select {
	case <-recDone:
		if recErr != nil {
			t.Fatalf("record -a: %v\n%s", recErr, recOut.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("record -a did not end after stop\n%s", recOut.String())
	}
	toyIn.Close()

	e.mustJSON(&st, "status")
	var floodSrc, toySrc *api.JITSource
	for i, s := range st.JIT {
		switch {
		case s.Pid == floodPid && s.Kind == "perfmap":
			floodSrc = &st.JIT[i]
		case s.Pid == toyPid && s.Kind == "jitdump":
			toySrc = &st.JIT[i]
		}
	}
	t.Logf("jit memory %d of %d, share %d of %d processes; flood %+v; toy %+v", st.Meta.JITMemory, st.Meta.JITMemoryLimit,
		st.Meta.JITMemoryShare, st.Meta.JITProcesses, floodSrc, toySrc)
	if floodSrc == nil || toySrc == nil {
		t.Fatalf("the flood's perf map or the toy JIT's jitdump is not in status: %+v", st.JIT)
	}
	if floodSrc.Evicted == 0 {
		t.Errorf("the flood's dropped functions are not counted against it: %+v", *floodSrc)
	}
	if toySrc.Evicted != 0 || len(toySrc.Skipped) != 0 || toySrc.Error != "" {
		t.Errorf("the toy JIT's jitdump lost functions: %+v", *toySrc)
	}
	if st.Meta.JITMemory > st.Meta.JITMemoryLimit || st.Meta.JITMemoryLimit != jitShareBudgetMiB<<20 ||
		st.Meta.JITProcesses < 2 || st.Meta.JITMemoryShare > st.Meta.JITMemoryLimit/2 {
		t.Errorf("JIT memory %d of %d, shared by %d processes at most %d each", st.Meta.JITMemory, st.Meta.JITMemoryLimit,
			st.Meta.JITProcesses, st.Meta.JITMemoryShare)
	}
	text, _, _ := e.run("status")
	if !strings.Contains(text, "oldest dropped") || !strings.Contains(text, "shared by") {
		t.Errorf("status does not show the flood's dropped functions or the shares:\n%s", text)
	}

	// The toy JIT's samples in JIT code: named (its two functions) or not ([anon], or a
	// [jit] frame without a name).
	var top api.Top
	e.mustJSON(&top, "top", "--pid", itoa(toyPid), "-n", "1000000")
	var named, unnamed uint64
	for _, r := range top.Rows {
		switch {
		case r.Kind == agg.KindJIT && strings.HasPrefix(r.Func, "jitted_func"):
			named += r.Self
		case r.Image == agg.AnonImage, r.Kind == agg.KindJIT:
			unnamed += r.Self
		}
	}
	t.Logf("toy JIT: %d samples in JIT code named, %d unnamed (%d samples in all)", named, unnamed, top.Samples)
	if named < 200 {
		t.Fatalf("the toy JIT has %d named samples in JIT code (%d unnamed), want 200 or more for 3 s of its CPU time at 199 Hz: %+v",
			named, unnamed, top.Rows)
	}
	if named*100 < (named+unnamed)*95 {
		t.Errorf("%d of the toy JIT's %d samples in JIT code are named, want 95%% or more", named, named+unnamed)
	}
}

// waitStatus polls the live run's status until ok says yes, failing the test after four
// minutes (a status query waits up to 30 s for a busy recorder) or if the recording ends.
func waitStatus(t *testing.T, e *staxEnv, ended func() (bool, error), recOut *syncBuffer, what string, ok func(*api.Status) bool, st *api.Status) {
	t.Helper()
	deadline := time.Now().Add(4 * time.Minute)
	for {
		if done, err := ended(); done {
			t.Fatalf("the recording ended waiting for %s: %v\n%s", what, err, recOut.String())
		}
		out, errOut, code := e.run("status", "--json")
		*st = api.Status{}
		if code == 0 && json.Unmarshal([]byte(out), st) == nil && ok(st) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s; last status (exit %d):\n%.4000s%s", what, code, out, errOut)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestJITMemoryBoundsResidentMemory records a program whose perf map overfills the JIT
// budget many times over: the recorder's peak resident memory (VmHWM) stays within the
// budget above that of the same recording of a perf map of a hundred lines.
func TestJITMemoryBoundsResidentMemory(t *testing.T) {
	testutil.RequirePerf(t)
	// A race-detector build takes several times the memory: the memory measured is that of
	// a plain build.
	bin := testutil.StaxPlain(t)
	const budgetMiB = 128
	flooder := testutil.CC(t, t.TempDir(), "bigmap", "gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-fno-inline",
		filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/bigmap.c"))
	peak := func(lines int) (hwm int64, st api.Status) {
		e := newEnv(t)
		e.bin = bin
		e.env = append(e.env, "STAX_JIT_MEMORY="+itoa(budgetMiB))
		rec := e.cmd("record", "-q", "--", flooder, itoa(lines), "2000")
		var out bytes.Buffer
		rec.Stdout, rec.Stderr = &out, &out
		if err := rec.Start(); err != nil {
			t.Fatal(err)
		}
		// VmHWM, read from /proc as the recorder runs: it exits at the end of the run, and
		// its peak is also its rusage's.
		hwm = -1
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				if n, err := vmHWM(rec.Process.Pid); err == nil {
					hwm = max(hwm, n)
				} else {
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
		err := rec.Wait()
		<-done
		if err != nil {
			t.Fatalf("record: %v\n%s", err, out.String())
		}
		hwm = max(hwm, rec.ProcessState.SysUsage().(*syscall.Rusage).Maxrss<<10)
		e.mustJSON(&st, "status")
		removeJITFiles(t, e)
		return hwm, st
	}
	base, _ := peak(100)
	full, st := peak(2000000)
	t.Logf("recorder's peak resident memory: %d MiB with a perf map of 100 lines, %d MiB with 2,000,000 lines and a JIT budget of %d MiB (%d bytes kept in its tables); jit %+v",
		base>>20, full>>20, budgetMiB, st.Meta.JITMemory, st.JIT)
	if st.Meta.JITMemory*10 < st.Meta.JITMemoryLimit*9 || st.Meta.JITMemoryLimit != budgetMiB<<20 {
		t.Fatalf("the JIT tables keep %d of %d bytes: the budget was not reached", st.Meta.JITMemory, st.Meta.JITMemoryLimit)
	}
	if full > base+budgetMiB<<20 {
		t.Errorf("peak resident memory %d MiB, over %d MiB (the recording without JIT functions) + the %d MiB JIT budget",
			full>>20, base>>20, budgetMiB)
	}
}

// vmHWM is a process's peak resident memory, from /proc/PID/status.
func vmHWM(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb); err != nil {
				return 0, err
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}
