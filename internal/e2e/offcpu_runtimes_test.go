package e2e

import (
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
	"github.com/stax-profiler/stax/internal/views"
)

// waitReasons are the reasons a runtime's idle threads may block for: anything else
// (other, io-read, ...) names a wait the programs below never make.
var waitReasons = []string{views.ReasonCond, views.ReasonPoll, views.ReasonSleep, views.ReasonLock, views.ReasonSem}

// rawAddress is a frame named by its address alone: no symbol resolved it. A stripped
// shared library's local functions (libstdc++'s, the dynamic loader's entry) are named
// so by their image and offset, as they should be: named is ELF.
var (
	rawAddress  = regexp.MustCompile(`^(\[unknown\]|0x[0-9a-f]+|.*\+0x[0-9a-f]+)$`)
	strippedLib = regexp.MustCompile(`\.so[.0-9]*\+0x[0-9a-f]+$`)
)

// blockedPaths calls f with every path from a root's child down to a node with time of
// its own, for the paths that blocked (not runnable: their leaf is no [runnable] frame).
func blockedPaths(n *api.FlameNode, path []*api.FlameNode, f func(path []*api.FlameNode, self uint64)) {
	path = append(path, n)
	if n.Self > 0 && n.Func != "[runnable]" && len(path) > 1 {
		f(path[1:], n.Self)
	}
	for _, c := range n.Children {
		blockedPaths(c, path, f)
	}
}

func funcsOf(path []*api.FlameNode) []string {
	s := make([]string, len(path))
	for i, n := range path {
		s[i] = n.Func
	}
	return s
}

// recordedOutput runs stax record on args, timing it, and returns the program's "name N"
// lines and the wall time of the whole record.
func recordedOutput(t *testing.T, e *staxEnv, args ...string) (map[string]int64, time.Duration) {
	t.Helper()
	start := time.Now()
	out, errOut, code := e.run(append([]string{"record", "-q", "--"}, args...)...)
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	vals := map[string]int64{}
	for _, line := range strings.Split(out, "\n") {
		var k string
		var v int64
		if _, err := fmt.Sscanf(line, "%s %d", &k, &v); err == nil {
			vals[k] = v
		}
	}
	if vals["wall"] == 0 {
		t.Fatalf("the program printed no wall time:\n%s%s", out, errOut)
	}
	return vals, took
}

// checkThreadTimes checks that each thread's time on CPU, runnable and off CPU adds up to
// no more than the recording lasted, and that the main thread's (alive from before the
// program measured its wall time to after) adds up to at least that wall time: the time
// off CPU is the wall time its CPU time leaves. The time on CPU is estimated from samples
// (one per millisecond of CPU at 999 Hz): it may be off by a few samples and their square
// root.
func checkThreadTimes(t *testing.T, rows []api.ThreadRow, pid uint32, wall, record time.Duration) {
	t.Helper()
	mainSeen := false
	for _, r := range rows {
		o := r.OffCPU
		if o == nil {
			t.Errorf("thread %d has no off-CPU time", r.Tid)
			continue
		}
		tol := 3*math.Sqrt(float64(r.Samples)) + 3 // ms
		life := o.OnCPUMs + o.RunnableMs + o.OffCPUMs
		t.Logf("thread %d: %.1f ms on CPU (%d samples), %.1f runnable, %.1f off CPU (%s): %.1f ms; program %.1f ms, record %.1f ms",
			r.Tid, o.OnCPUMs, r.Samples, o.RunnableMs, o.OffCPUMs, o.Reason, life, ms(wall), ms(record))
		if life > ms(record)+tol {
			t.Errorf("thread %d was on CPU, runnable and off CPU %.1f ms in all, more than the %.1f ms stax record ran", r.Tid, life, ms(record))
		}
		if r.Tid == pid {
			mainSeen = true
			if off := o.RunnableMs + o.OffCPUMs; off < ms(wall)-o.OnCPUMs-tol {
				t.Errorf("the main thread was off CPU %.1f ms, want at least its wall time %.1f ms less its %.1f ms on CPU", off, ms(wall), o.OnCPUMs)
			}
		}
		if o.OffCPUMs > o.RunnableMs && !slices.Contains(waitReasons, o.Reason) {
			t.Errorf("thread %d waited mostly for %q, want one of %v", r.Tid, o.Reason, waitReasons)
		}
	}
	if !mainSeen {
		t.Errorf("no row for the main thread %d", pid)
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// checkBlockedStacks checks the blocked stacks of the off-CPU flame graph: they hold no
// frame named by a raw address (the runtimes' own code is symbolized; JIT code, unnamed,
// runs but never blocks here), nearly all of their time has a known reason (page faults
// and file reads at start-up are io-read, not other), and most of it reaches a thread's
// start as rooted says.
func checkBlockedStacks(t *testing.T, fl api.Flame, rooted func(path []string) bool) {
	t.Helper()
	var total, reached, odd uint64
	var oddPaths, unreached []string
	blockedPaths(fl.Root, nil, func(path []*api.FlameNode, self uint64) {
		total += self
		fns := funcsOf(path)
		if rooted(fns) {
			reached += self
		} else if len(unreached) < 5 {
			unreached = append(unreached, fmt.Sprintf("%.1f ms: %v", float64(self)/1e6, fns))
		}
		for i, fn := range fns {
			if rawAddress.MatchString(fn) && !strippedLib.MatchString(fn) && !(i == 0 && fn == "[truncated]") {
				t.Errorf("a blocked stack holds the unnamed frame %q: %v", fn, fns)
				break
			}
		}
		if r := path[len(path)-1].Reason; r == views.ReasonOther || r == "" {
			odd += self
			if len(oddPaths) < 5 {
				oddPaths = append(oddPaths, fmt.Sprintf("%s (%.1f ms): %v", r, float64(self)/1e6, fns))
			}
		}
	})
	if total == 0 {
		t.Fatalf("no blocked stacks in the off-CPU flame graph")
	}
	t.Logf("blocked %.1f ms, %.1f ms from a thread's start, %.1f ms for no known wait", float64(total)/1e6, float64(reached)/1e6, float64(odd)/1e6)
	if reached*10 < total*9 {
		t.Errorf("%.1f of %.1f ms blocked reach a thread's start: want 90%%; others: %v", float64(reached)/1e6, float64(total)/1e6, unreached)
	}
	if odd*100 > total {
		t.Errorf("%.1f of %.1f ms blocked for no wait the program makes: %v", float64(odd)/1e6, float64(total)/1e6, oddPaths)
	}
}

// topRow returns the row of top --off-cpu for fn.
func topRow(t *testing.T, top api.Top, fn string) api.TopRow {
	t.Helper()
	i := slices.IndexFunc(top.Rows, func(r api.TopRow) bool { return r.Func == fn })
	if i < 0 {
		t.Fatalf("top --off-cpu has no row for %s", fn)
	}
	return top.Rows[i]
}

// TestOffCPUGoRuntime records a Go program whose goroutines wait on a channel and in
// time.Sleep while main alternates CPU work and sleeps: its threads wait in the runtime's
// scheduler (parked on a note, a futex, or in the network poller with a timer's
// timeout), for cond and poll, with stacks that reach the runtime's thread roots.
func TestOffCPUGoRuntime(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := filepath.Join(t.TempDir(), "goblock")
	testutil.Run(t, testutil.RepoRoot(t), "go", "build", "-o", prog, "./internal/e2e/testdata/goblock")
	const rounds, sleep = 10, 100 * time.Millisecond
	vals, took := recordedOutput(t, e, prog, strconv.Itoa(rounds), sleep.String())
	wall := time.Duration(vals["wall"])
	if min := rounds * sleep; wall < min {
		t.Fatalf("the program ran %v, less than its %v of sleeps", wall, min)
	}

	var th api.Threads
	e.mustJSON(&th, "threads", "-n", "1000")
	var pid uint32
	for _, r := range th.Rows {
		if r.Tid == r.Pid {
			pid = r.Pid
		}
	}
	checkThreadTimes(t, th.Rows, pid, wall, took)

	var top api.Top
	e.mustJSON(&top, "top", "--off-cpu", "--sort", "total", "-n", "1000")
	// Every M with nothing to run parks in the scheduler: on its note (a futex), or, for
	// the one that waits for the next timer, in the network poller.
	var all uint64
	for _, r := range top.Rows {
		all = max(all, r.Total)
	}
	sched := topRow(t, top, "runtime.findRunnable")
	note := topRow(t, top, "runtime.notesleep")
	t.Logf("off CPU %.1f ms; runtime.findRunnable %.1f ms (%s), runtime.notesleep %.1f ms (%s)",
		float64(all)/1e6, float64(sched.Total)/1e6, sched.Reason, float64(note.Total)/1e6, note.Reason)
	if note.Reason != views.ReasonCond {
		t.Errorf("runtime.notesleep's reason is %q, want cond", note.Reason)
	}
	if !slices.Contains([]string{views.ReasonCond, views.ReasonPoll}, sched.Reason) {
		t.Errorf("runtime.findRunnable's reason is %q, want cond or poll", sched.Reason)
	}
	// The program's threads are idle for all but its CPU work: at least the time main
	// sleeps is spent in the scheduler, on one thread or another.
	if sched.Total < uint64(rounds*sleep) {
		t.Errorf("runtime.findRunnable has %.1f ms off CPU, less than the %v main slept", float64(sched.Total)/1e6, rounds*sleep)
	}
	if i := slices.IndexFunc(top.Rows, func(r api.TopRow) bool { return r.Func == "runtime.netpoll" }); i >= 0 && top.Rows[i].Reason != views.ReasonPoll {
		t.Errorf("runtime.netpoll's reason is %q, want poll", top.Rows[i].Reason)
	}

	var fl api.Flame
	e.mustJSON(&fl, "flame", "--off-cpu", "--depth", "0", "--threshold-pct", "0")
	// A Go thread's stack starts at mstart or at the runtime's entry; a goroutine
	// switched to the scheduler's stack (g0) at mcall or systemstack.
	goRoots := []string{"runtime.mcall", "runtime.mstart", "runtime.rt0_go", "runtime.systemstack",
		"runtime.goexit", "runtime.morestack", "runtime.newproc", "_start", "main"}
	checkBlockedStacks(t, fl, func(path []string) bool {
		root := strings.TrimSuffix(path[0], ".abi0")
		return slices.Contains(goRoots, root) || (root == "runtime.clone" && len(path) == 1)
	})
	// The runtime's threads start at mstart (runtime.clone calls it, but nothing lies
	// above clone but the top of the thread's stack): no stack goes past it. A new thread
	// waits in clone itself before it calls mstart (its gettid system call may be
	// preempted): there clone is the only frame.
	for _, c := range fl.Root.Children {
		pastStart := strings.TrimSuffix(c.Func, ".abi0") == "runtime.clone" && len(c.Children) > 0
		if pastStart || c.Func == "[truncated]" {
			var below []string
			for _, k := range c.Children {
				below = append(below, k.Func)
			}
			t.Errorf("%.1f ms of stacks go past a thread's start, to %s (above %v)", float64(c.Total)/1e6, c.Func, below)
		}
	}
}

// TestOffCPUNode records node running a loop of CPU work and timers (setTimeout): its
// main thread waits for the timers in libuv's event loop (uv__io_poll, epoll), for poll,
// at least the timers' time; V8's and libuv's worker threads wait on condition variables
// and semaphores from their thread's start.
func TestOffCPUNode(t *testing.T) {
	testutil.RequirePerf(t)
	node := testutil.RequireTool(t, "node")
	e := newEnv(t)
	script := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/timers.js")
	const rounds, waitMs = 10, 100
	vals, took := recordedOutput(t, e, node, script, strconv.Itoa(rounds), strconv.Itoa(waitMs))
	wall := time.Duration(vals["wall"])

	var th api.Threads
	e.mustJSON(&th, "threads", "-n", "1000")
	var pid uint32
	for _, r := range th.Rows {
		if r.Tid == r.Pid {
			pid = r.Pid
		}
	}
	checkThreadTimes(t, th.Rows, pid, wall, took)
	mainRow := th.Rows[slices.IndexFunc(th.Rows, func(r api.ThreadRow) bool { return r.Tid == pid })]
	if mainRow.OffCPU.Reason != views.ReasonPoll {
		t.Errorf("node's main thread waited mostly for %q, want poll", mainRow.OffCPU.Reason)
	}

	var top api.Top
	e.mustJSON(&top, "top", "--off-cpu", "--tid", strconv.Itoa(int(pid)), "--sort", "total", "-n", "1000")
	loop := topRow(t, top, "uv__io_poll")
	t.Logf("uv__io_poll %.1f ms (%s)", float64(loop.Total)/1e6, loop.Reason)
	if loop.Reason != views.ReasonPoll {
		t.Errorf("uv__io_poll's reason is %q, want poll", loop.Reason)
	}
	// A timer fires no earlier than its time, less the event loop's millisecond rounding.
	if min := uint64(rounds) * (waitMs - 1) * 1e6; loop.Total < min {
		t.Errorf("uv__io_poll has %.1f ms off CPU, want at least the timers' %.1f ms", float64(loop.Total)/1e6, float64(min)/1e6)
	}
	epoll := slices.IndexFunc(top.Rows, func(r api.TopRow) bool {
		return r.Func == "epoll_pwait" || r.Func == "epoll_wait" || r.Func == "epoll_pwait2"
	})
	if epoll < 0 || top.Rows[epoll].Reason != views.ReasonPoll {
		t.Errorf("no epoll wait with reason poll under the main thread: %+v", top.Rows)
	}

	// The event loop's frame (uv__io_poll keeps 1024 epoll events on its stack, ~16 KiB)
	// is larger than the default stack copy: the main thread's waits may end [truncated]
	// above it; the other threads' stacks reach start_thread.
	var fl api.Flame
	e.mustJSON(&fl, "flame", "--off-cpu", "--depth", "0", "--threshold-pct", "0")
	checkBlockedStacks(t, fl, func(path []string) bool {
		if path[0] == "[truncated]" {
			return len(path) > 1 && path[1] == "uv__io_poll"
		}
		return slices.Contains([]string{"clone3", "clone", "start_thread", "_start", "main"}, path[0])
	})
}
