package e2e

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
	"github.com/stax-profiler/stax/internal/views"
)

func buildOffCPU(t *testing.T, dir string) string {
	t.Helper()
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/offcpu.c")
	return testutil.CC(t, dir, "offcpu", "gcc", append(cflags, "-pthread", src)...)
}

// threadsNamed returns the rows of stax threads for the threads called name.
func threadsNamed(e *staxEnv, name string, args ...string) []api.ThreadRow {
	var th api.Threads
	e.mustJSON(&th, append([]string{"threads", "-n", "1000"}, args...)...)
	var rows []api.ThreadRow
	for _, r := range th.Rows {
		if r.Name == name {
			if r.OffCPU == nil {
				e.t.Fatalf("thread %d (%s) has no off-CPU time", r.Tid, name)
			}
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		e.t.Fatalf("no thread named %s in %+v", name, th.Rows)
	}
	return rows
}

// TestOffCPUWaits records a worker that waits, per loop, ~700 ms for a mutex another thread
// holds, sleeps 200 ms and reads a pipe a third thread fills after 100 ms: stax threads
// gives it ~1 s off CPU per loop, and stax top --off-cpu gives lock, sleep and io-read
// 70%, 20% and 10% of it under wait_for_lock, nap and read_pipe, whose stacks reach the
// thread's start.
func TestOffCPUWaits(t *testing.T) {
	testutil.RequirePerf(t)
	// A wait may overrun its time (a late wakeup: the program's threads wake ahead of
	// ordinary ones where it may raise their priority, not otherwise) by up to overrun in
	// the whole run; the shares hold within tolerance when that over the loops' time is
	// within it. Each loop may also overrun by up to slack, in the total off CPU.
	const (
		overrun   = 0.150 // s
		tolerance = 5.0   // percentage points
		perLoop   = 1.0   // s off CPU
		slack     = 0.3   // s per loop
	)
	loops := int(math.Ceil(overrun / (tolerance / 100 * perLoop)))
	e := newEnv(t)
	prog := buildOffCPU(t, t.TempDir())
	if out, errOut, code := e.run("record", "-q", "--", prog, "waits", strconv.Itoa(loops)); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	w := threadsNamed(e, "worker")[0]
	off := (w.OffCPU.OffCPUMs + w.OffCPU.RunnableMs) / 1000
	t.Logf("%d loops: worker %.3f s off CPU (%.3f s runnable), %.1f ms on CPU, mostly %s", loops, off, w.OffCPU.RunnableMs/1000,
		w.OffCPU.OnCPUMs, w.OffCPU.Reason)
	// Each wait lasts at least its time, less the moment a handoff between threads takes.
	if min, max := float64(loops)*perLoop*0.95, float64(loops)*(perLoop+slack); off < min || off > max {
		t.Errorf("worker off CPU %.3f s in %d loops, want %.2f to %.2f s", off, loops, min, max)
	}
	if w.OffCPU.Reason != views.ReasonLock {
		t.Errorf("worker's main reason is %q, want lock", w.OffCPU.Reason)
	}

	var top api.Top
	tid := strconv.Itoa(int(w.Tid))
	e.mustJSON(&top, "top", "--off-cpu", "--tid", tid, "--sort", "total", "-n", "1000")
	if !top.OffCPU {
		t.Errorf("top --off-cpu does not say it is off CPU")
	}
	want := []struct {
		fn, reason string
		pct        float64
	}{{"wait_for_lock", views.ReasonLock, 70}, {"nap", views.ReasonSleep, 20}, {"read_pipe", views.ReasonIORead, 10}}
	got := map[string]api.TopRow{}
	var sum uint64
	for _, wnt := range want {
		i := slices.IndexFunc(top.Rows, func(r api.TopRow) bool { return r.Func == wnt.fn })
		if i < 0 {
			t.Fatalf("top --off-cpu has no row for %s: %+v", wnt.fn, top.Rows)
		}
		got[wnt.fn] = top.Rows[i]
		sum += top.Rows[i].Total
	}
	for _, wnt := range want {
		r := got[wnt.fn]
		pct := float64(r.Total) * 100 / float64(sum)
		t.Logf("%-14s %8.1f ms %5.1f%% %s", wnt.fn, float64(r.Total)/1e6, pct, r.Reason)
		if math.Abs(pct-wnt.pct) > tolerance {
			t.Errorf("%s has %.1f%% of the waits, want %.0f%% ± %.0f", wnt.fn, pct, wnt.pct, tolerance)
		}
		if r.Reason != wnt.reason {
			t.Errorf("%s's reason is %q, want %s", wnt.fn, r.Reason, wnt.reason)
		}
	}

	// A saved file keeps it.
	saved := filepath.Join(t.TempDir(), "waits.stax")
	if out, errOut, code := e.run("save", saved); code != 0 {
		t.Fatalf("save: exit %d\n%s%s", code, out, errOut)
	}
	var fromFile api.Top
	e.mustJSON(&fromFile, "top", "--off-cpu", "--run", saved, "--tid", tid, "--sort", "total", "-n", "1000")
	if fromFile.Samples != top.Samples || len(fromFile.Rows) != len(top.Rows) {
		t.Errorf("the saved file has %d ns off CPU in %d rows, the run %d in %d", fromFile.Samples, len(fromFile.Rows), top.Samples, len(top.Rows))
	}

	// Each wait's stack reaches the thread's start: worker, start_thread.
	var fl api.Flame
	e.mustJSON(&fl, "flame", "--off-cpu", "--tid", tid, "--depth", "0", "--threshold-pct", "0")
	for _, wnt := range want {
		path := flamePath(fl.Root, wnt.fn)
		if path == nil {
			t.Errorf("flame --off-cpu has no node %s", wnt.fn)
			continue
		}
		if !slices.Contains(path, "worker") || !slices.Contains(path, "start_thread") {
			t.Errorf("the stack of %s does not reach the thread's start: %v", wnt.fn, path)
		}
		if n := flameNode(fl.Root, path); n.Reason != wnt.reason {
			t.Errorf("flame node %s has reason %q, want %s", wnt.fn, n.Reason, wnt.reason)
		}
	}
}

// flamePath is the functions from the root's child down to the first node called fn.
func flamePath(n *api.FlameNode, fn string) []string {
	for _, c := range n.Children {
		if c.Func == fn {
			return []string{fn}
		}
		if p := flamePath(c, fn); p != nil {
			return append([]string{c.Func}, p...)
		}
	}
	return nil
}

func flameNode(n *api.FlameNode, path []string) *api.FlameNode {
	for _, fn := range path {
		i := slices.IndexFunc(n.Children, func(c *api.FlameNode) bool { return c.Func == fn })
		n = n.Children[i]
	}
	return n
}

// TestOffCPURunnable records four CPU-bound threads pinned to at most two CPUs: the time
// they lose is runnable (waiting for a CPU), not lock or sleep.
func TestOffCPURunnable(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := buildOffCPU(t, t.TempDir())
	const cpuMs = 300 // of each thread's own CPU time
	if out, errOut, code := e.run("record", "-q", "--", prog, "spin", strconv.Itoa(cpuMs)); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	rows := threadsNamed(e, "spinner")
	if len(rows) != 4 {
		t.Fatalf("%d spinner threads, want 4", len(rows))
	}
	var on, runnable float64
	for _, r := range rows {
		o := r.OffCPU
		t.Logf("spinner %d: %.1f ms on CPU, %.1f ms runnable, %.1f ms waiting (%s)", r.Tid, o.OnCPUMs, o.RunnableMs, o.OffCPUMs, o.Reason)
		on += o.OnCPUMs
		runnable += o.RunnableMs
		if o.Reason == views.ReasonLock || o.Reason == views.ReasonSleep {
			t.Errorf("spinner %d waited mostly for %s", r.Tid, o.Reason)
		}
		if o.OffCPUMs > o.RunnableMs {
			t.Errorf("spinner %d waited %.1f ms and was runnable %.1f ms: the runnable time is not told apart", r.Tid, o.OffCPUMs, o.RunnableMs)
		}
	}
	// Four threads on two CPUs: while all run, two wait for every two that run. They start
	// together; the time they overlap is at least half of it.
	if runnable < on/2 {
		t.Errorf("spinners ran %.1f ms and were runnable %.1f ms, want at least half as long", on, runnable)
	}
	var top api.Top
	e.mustJSON(&top, "top", "--off-cpu", "--sort", "total", "-n", "1000")
	if i := slices.IndexFunc(top.Rows, func(r api.TopRow) bool { return r.Func == "burn" }); i < 0 || top.Rows[i].Reason != views.ReasonRunnable {
		t.Errorf("burn's off-CPU row is missing or not runnable: %+v", top.Rows)
	}
}

// TestOffCPUNotRoot records as a user that is not root: the context-switch events need no
// privilege on one's own process; without kernel samples the time is kept without stacks.
func TestOffCPUNotRoot(t *testing.T) {
	testutil.RequirePerf(t)
	e, setpriv := asNobody(t)
	dir := filepath.Dir(e.bin)
	prog := buildOffCPU(t, dir)
	os.Chmod(prog, 0o755)
	if out, errOut, code := e.runAs(setpriv, "record", "-q", "--", prog, "waits", "1"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code := e.runAs(setpriv, "status", "--json")
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errOut)
	}
	var st api.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status: bad JSON: %v\n%s", err, out)
	}
	o := st.Meta.OffCPU
	if o == nil || o.Intervals == 0 {
		t.Fatalf("no off-CPU time recorded as another user: %+v (notes %q)", o, st.Meta.Notes)
	}
	t.Logf("as nobody: %d switches, %d intervals, %d without a stack, user-only %v", o.Switches, o.Intervals, o.NoStack, st.Meta.UserOnly)
	if !st.Meta.UserOnly && o.NoStack == o.Intervals {
		t.Errorf("kernel samples are permitted, yet no off-CPU interval has a stack")
	}
	// Wakers take root: one note says so, and stax wakers says what to do.
	if notes := strings.Join(st.Meta.Notes, "\n"); o.Wakers || strings.Count(notes, "wakers are not recorded (root or CAP_PERFMON") != 1 {
		t.Errorf("wakers %v as nobody, notes %q: want none, and one note saying root records them", o.Wakers, st.Meta.Notes)
	}
	if out, errOut, code := e.runAs(setpriv, "wakers"); code == 0 || !strings.Contains(errOut, "root") {
		t.Errorf("wakers as nobody: exit %d, want an error that names root\n%s%s", code, out, errOut)
	}
}

// TestOffCPUStuckThreadLive: a thread blocked on a lock shows, while it is still blocked,
// in the live run's stax top --off-cpu, with the time it has waited so far; and in full in
// the stored run once it is let go.
func TestOffCPUStuckThreadLive(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	dir := t.TempDir()
	prog := buildOffCPU(t, dir)
	live := e.startUntilReady(dir, prog, "stuck", "1")
	// The program is ready before stax answers on its socket: stax wait waits for that.
	if out, errOut, code := e.run("wait", "--for-seconds", "0.1", "--timeout-ms", "60000"); code != 0 {
		t.Fatalf("wait: exit %d\n%s%s", code, out, errOut)
	}
	stuck := threadsNamed(e, "stuck")[0]
	tid := strconv.Itoa(int(stuck.Tid))
	// Its wait so far is counted every step once it is 100 ms long: poll until 300 ms of it.
	const want = 300e6
	var row api.TopRow
	deadline := time.Now().Add(30 * time.Second)
	for {
		var top api.Top
		e.mustJSON(&top, "top", "--off-cpu", "--tid", tid, "--sort", "total", "-n", "1000")
		if !top.Live {
			t.Fatalf("the run is not live: %+v", top)
		}
		if i := slices.IndexFunc(top.Rows, func(r api.TopRow) bool { return r.Func == "wait_for_lock" }); i >= 0 {
			row = top.Rows[i]
			if row.Total >= want {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s, wait_for_lock has %d ns off CPU in the live run, want %d", row.Total, int64(want))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if row.Reason != views.ReasonLock {
		t.Errorf("wait_for_lock's reason is %q, want lock", row.Reason)
	}
	live.finish(t)
	var top api.Top
	e.mustJSON(&top, "top", "--off-cpu", "--tid", tid, "--sort", "total", "-n", "1000")
	i := slices.IndexFunc(top.Rows, func(r api.TopRow) bool { return r.Func == "wait_for_lock" })
	if i < 0 || top.Rows[i].Total < row.Total {
		t.Errorf("the stored run has less of wait_for_lock than the live one had (%d ns): %+v", row.Total, top.Rows)
	}
}

// TestOffCPUSampledStacks records two threads that hand a byte back and forth far more
// often than --off-cpu-rate: status says most intervals took a sampled stack, their time
// is all counted, under the stack they wait in; with --off-cpu-rate all none is sampled.
func TestOffCPUSampledStacks(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := buildOffCPU(t, t.TempDir())
	if _, errOut, code := e.run("record", "-q", "--off-cpu-rate", "0", "--", prog, "pingpong", "1"); code == 0 || !strings.Contains(errOut, "--off-cpu-rate") {
		t.Errorf("--off-cpu-rate 0: exit %d, want a usage error naming it\n%s", code, errOut)
	}
	const rounds = 100000
	for _, rate := range []string{"200", "all"} {
		if out, errOut, code := e.run("record", "-q", "--off-cpu-rate", rate, "--", prog, "pingpong", strconv.Itoa(rounds)); code != 0 {
			t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
		}
		var st api.Status
		e.mustJSON(&st, "status", "--json")
		o := st.Meta.OffCPU
		if o == nil {
			t.Fatalf("--off-cpu-rate %s: no off-CPU time (notes %q)", rate, st.Meta.Notes)
		}
		t.Logf("--off-cpu-rate %s: %+v, %d records lost", rate, *o, st.Meta.Lost)
		text, _, _ := e.run("status")
		if rate == "all" {
			if o.StackRate != 0 || o.Sampled != 0 || strings.Contains(text, "blocked stacks sampled") {
				t.Errorf("--off-cpu-rate all: stack rate %d, %d intervals sampled: want none\n%s", o.StackRate, o.Sampled, text)
			}
			continue
		}
		// On a busy machine the threads are also preempted, and with wait stacks (root) a
		// preemption takes its thread's latest CPU sample's stack, not a sampled one: only
		// the waits count here.
		waits := o.Intervals - o.PreemptedCPU
		if o.StackRate != 200 || o.SampledTimes == 0 || o.Sampled*2 < waits || waits < rounds/4 {
			t.Errorf("--off-cpu-rate 200: %+v: want most of at least %d waits to take a sampled stack", *o, rounds/4)
		}
		if want := "blocked stacks sampled: " + commasOf(o.Sampled) + " of " + commasOf(o.Intervals) + " intervals"; !strings.Contains(text, want) {
			t.Errorf("status does not say %q:\n%s", want, text)
		}
		var top api.Top
		e.mustJSON(&top, "top", "--off-cpu", "--json", "-n", "1000")
		// On a busy machine much of the time off CPU is runnable (preempted, under
		// [runnable]): of the time the threads waited, most is in pingpong_wait.
		var wait, runnable float64
		for _, row := range top.Rows {
			switch row.Func {
			case "pingpong_wait":
				wait = row.TotalPct
			case "[runnable]":
				runnable = row.SelfPct
			}
		}
		if runnable >= 90 || wait < (100-runnable)/2 {
			t.Errorf("pingpong_wait has %.1f%% of the time off CPU, runnable time %.1f%%: want most of the time waited: %+v", wait, runnable, top.Rows)
		}
		if !o.Wakers {
			continue // not root
		}
		var wk api.Wakers
		e.mustJSON(&wk, "wakers", "--json")
		text, _, _ = e.run("wakers")
		if wk.WakeupsAll <= wk.Wakeups || !strings.Contains(text, "sampled: "+commasOf(wk.Wakeups)+" wakeups seen of "+commasOf(wk.WakeupsAll)) {
			t.Errorf("wakers: %d wakeups seen of %d: want the sampling said\n%s", wk.Wakeups, wk.WakeupsAll, text)
		}
	}
}
