package e2e

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil"
	"github.com/stax-profiler/stax/internal/views"
)

func buildBursts(t *testing.T, dir string) string {
	t.Helper()
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/bursts.c")
	return testutil.CC(t, dir, "bursts", "gcc", append(cflags, "-pthread", src)...)
}

// offCPUMeta is the run's off-CPU counters from stax status --json, and its text.
func offCPUMeta(e *staxEnv) (api.Status, string) {
	e.t.Helper()
	var st api.Status
	e.mustJSON(&st, "status", "--json")
	if st.Meta.OffCPU == nil {
		e.t.Fatalf("no off-CPU time recorded: %+v", st.Meta)
	}
	out, errOut, code := e.run("status")
	if code != 0 {
		e.t.Fatalf("status: exit %d\n%s%s", code, out, errOut)
	}
	return st, out
}

// TestOffCPUWakeupsTheProgramMade records the worker that waits on a lock, a sleep and a
// pipe, as root: the wakeups counted are those its threads made, each loop at most five
// (the holder asked for the lock, the worker told it is held, the lock let go, the filler
// asked for data, the pipe filled), and at the end at most three joins and one line
// written. Not the timers' expiries that ended the sleeps, not interrupts that woke
// other tasks while a thread ran, not the recorder's reader: with those, 3 loops counted
// 33 to 43 "made" of 15 seen, and status said the wakeups were sampled. A stack was taken
// at every one (nothing sampled), so those seen are all there were.
func TestOffCPUWakeupsTheProgramMade(t *testing.T) {
	testutil.RequirePerf(t)
	testutil.RequireRoot(t)
	const loops = 3
	e := newEnv(t)
	prog := buildOffCPU(t, t.TempDir())
	if out, errOut, code := e.run("record", "-q", "--", prog, "waits", strconv.Itoa(loops)); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	st, text := offCPUMeta(e)
	o := st.Meta.OffCPU
	t.Logf("%d wakeups seen, %d made, %d waits matched, sampled %d times", o.Wakeups, o.WakeupsAll, o.Woken, o.SampledTimes)
	if !o.Wakers {
		t.Fatalf("wakers not recorded as root: %+v", o)
	}
	if lo, hi := uint64(2*loops), uint64(5*loops+4); o.Wakeups < lo || o.Wakeups > hi {
		t.Errorf("%d wakeups counted, want %d to %d: those the program's threads made", o.Wakeups, lo, hi)
	}
	if o.WakeupsAll > o.Wakeups || o.SampledTimes != 0 || strings.Contains(text, "sampled") {
		t.Errorf("%d wakeups seen of %d made, stacks sampled %d times: want every one seen, none sampled\n%s", o.Wakeups, o.WakeupsAll, o.SampledTimes, text)
	}
	// Each wait the worker's lock and pipe ended was ended by one of the program's
	// threads: every wakeup matched is.
	if o.Woken < 2*loops || o.Woken > o.Wakeups {
		t.Errorf("%d waits matched to a wakeup of %d: want at least %d (the lock's and the pipe's)", o.Woken, o.Wakeups, 2*loops)
	}
}

// TestOffCPUNoWakeupsOfACPUBoundThread records a single thread that burns 1 s of CPU and
// wakes nobody, at 4999 Hz as root: no wakeup is charged to it. The kernel wakes the
// recorder's reader from the interrupt that follows a record past a ring's watermark, and
// interrupts wake other tasks while the thread runs: the thread's sched_waking events saw
// hundreds of those (774 in one run), which were counted as its own.
func TestOffCPUNoWakeupsOfACPUBoundThread(t *testing.T) {
	testutil.RequirePerf(t)
	testutil.RequireRoot(t)
	prog := buildBursts(t, t.TempDir())
	e := newEnv(t)
	if out, errOut, code := e.run("record", "-q", "-F", "4999", "--", prog, "spin", "1000"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	st, text := offCPUMeta(e)
	o := st.Meta.OffCPU
	t.Logf("%d samples; %d wakeups seen, %d made", st.Meta.Samples, o.Wakeups, o.WakeupsAll)
	if !o.Wakers {
		t.Fatalf("wakers not recorded as root: %+v", o)
	}
	if st.Meta.Samples < 500 {
		t.Fatalf("%d samples of 1 s of CPU at 4999 Hz: the recording did not see it run", st.Meta.Samples)
	}
	if o.Wakeups != 0 || o.WakeupsAll != 0 {
		t.Errorf("a CPU-bound thread that wakes nobody: %d wakeups seen, %d made; want none\n%s", o.Wakeups, o.WakeupsAll, text)
	}
}

// TestOnCPUTimeFromSwitchRecords records a thread that runs ~50 us and sleeps ~50 us, over
// and over, until it has run 300 ms: its time on CPU in stax threads, and in top --wall
// beside its time off CPU, is 0.95 to 1.05 times what the kernel's schedstat says it ran
// (read by the thread as its last act). From its samples over the frequency it was 0.2 to
// 1.1 times that: a per-thread cpu-clock event counts a thread's time in ticks it may start
// and stop between. From the switch records it was 0.98 to 1.13 times: each interval starts
// late by the switch itself and ends late by the wait's stack sample, a few microseconds a
// switch either way that load moves, and holds the time interrupts and the hypervisor took.
// As root the time is the scheduler's own (sched_stat_runtime), which schedstat sums.
// Records lost from full rings (a reader under -race on a loaded machine) take their run
// times with them: the kernel's count of the run time says how much at most, and the
// bound below widens by it (status says it too).
func onCPUWithin(stax, sched, unread float64) bool {
	return stax >= 0.95*sched-unread && stax <= 1.05*sched
}

func TestOnCPUTimeFromSwitchRecords(t *testing.T) {
	testutil.RequirePerf(t)
	testutil.RequireRoot(t) // sched:sched_stat_runtime
	prog := buildBursts(t, t.TempDir())
	e := newEnv(t)
	out, errOut, code := e.run("record", "-q", "--", prog, "switch", "300")
	if code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var tid uint32
	var schedNs float64
	if i := strings.Index(out, "burster "); i < 0 {
		t.Fatalf("the program did not print its time on CPU:\n%s", out)
	} else if _, err := fmt.Sscanf(out[i:], "burster %d on_cpu_ns %g", &tid, &schedNs); err != nil || schedNs <= 0 {
		t.Fatalf("the program's line: %v\n%s", err, out)
	}
	st, _ := offCPUMeta(e)
	if st.Meta.OffCPU.OnCPUClock != store.OnCPUScheduler {
		t.Fatalf("time on CPU by the clock %q as root, want %q", st.Meta.OffCPU.OnCPUClock, store.OnCPUScheduler)
	}
	var readNs float64
	for _, th := range st.Meta.OffCPU.OnCPU {
		readNs += float64(th.Ns)
	}
	unreadMs := max(0, float64(st.Meta.OffCPU.OnCPUCounted)-readNs) / 1e6
	if st.Meta.Lost == 0 {
		unreadMs = 0
	}
	t.Logf("%d records lost, %d switch records unpaired, %d bad; run time counted %.1f ms, read %.1f ms",
		st.Meta.Lost, st.Meta.OffCPU.Unpaired, st.Meta.BadRecords, float64(st.Meta.OffCPU.OnCPUCounted)/1e6, readNs/1e6)
	w := threadsNamed(e, "burster")[0]
	if w.Tid != tid {
		t.Fatalf("threads has burster %d, the program said %d", w.Tid, tid)
	}
	schedMs := schedNs / 1e6
	t.Logf("burster %d: %d samples, %.1f ms on CPU in stax threads, %.1f ms by schedstat; %.1f ms runnable, %.1f ms off CPU",
		tid, w.Samples, w.OffCPU.OnCPUMs, schedMs, w.OffCPU.RunnableMs, w.OffCPU.OffCPUMs)
	if !onCPUWithin(w.OffCPU.OnCPUMs, schedMs, unreadMs) {
		t.Errorf("stax threads: burster on CPU %.1f ms, schedstat %.1f ms: want 0.95 to 1.05 times (less %.1f ms in records lost)", w.OffCPU.OnCPUMs, schedMs, unreadMs)
	}
	// top --wall: its time on and off CPU together; on CPU, the rest of what threads
	// says it spent off CPU.
	var top api.Top
	e.mustJSON(&top, "top", "--wall", "--tid", strconv.Itoa(int(tid)), "--json", "-n", "1")
	onMs := float64(top.Samples)/1e6 - w.OffCPU.OffCPUMs - w.OffCPU.RunnableMs
	if !onCPUWithin(onMs, schedMs, unreadMs) {
		t.Errorf("top --wall: burster %.1f ms in all, %.1f on CPU; schedstat %.1f ms on CPU: want 0.95 to 1.05 times (less %.1f ms in records lost)", float64(top.Samples)/1e6, onMs, schedMs, unreadMs)
	}
}

// TestOffCPUChildProcessesWholeLives records a program that starts 8 processes at once,
// each burning 20 ms of CPU, on a machine with fewer CPUs: each waits for a CPU from its
// fork to its first run and while the others run. The parent reads each one's schedstat
// once it has exited (its whole life, its exit included) before reaping it: stax threads
// gives the children that runnable time (within 2% and 1 ms in all), that time on CPU
// (within 5% and 1 ms in all: one child's may be a millisecond or two off, another's the
// other way), and the parent's wait for its children (waitid, waitpid) the reason child.
func TestOffCPUChildProcessesWholeLives(t *testing.T) {
	testutil.RequirePerf(t)
	const children = 8
	prog := buildBursts(t, t.TempDir())
	e := newEnv(t)
	out, errOut, code := e.run("record", "-q", "--", prog, "children", strconv.Itoa(children), "20")
	if code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	type life struct{ on, runnable float64 }
	lives := map[uint32]life{}
	for _, line := range strings.Split(out, "\n") {
		var pid uint32
		var l life
		if _, err := fmt.Sscanf(line, "child %d on_cpu_ns %g runnable_ns %g", &pid, &l.on, &l.runnable); err == nil {
			lives[pid] = life{l.on / 1e6, l.runnable / 1e6}
		}
	}
	if len(lives) != children {
		t.Fatalf("the program reported %d children, want %d:\n%s", len(lives), children, out)
	}
	// As root, each child's time from its exit record (where its events end) to its last
	// switch out is counted: under make -j2 a process waited there for a CPU for tens of
	// milliseconds, which schedstat counts and the switch records do not see.
	if os.Geteuid() == 0 {
		st, text := offCPUMeta(e)
		if o := st.Meta.OffCPU; !o.Deaths || o.ExitingTasks < children || !strings.Contains(text, "exiting:") {
			t.Errorf("as root: deaths %v, %d tasks' exits counted (%d ns), want at least %d, said in status\n%s", o.Deaths, o.ExitingTasks, o.ExitingNs, children, text)
		}
	}
	var th api.Threads
	e.mustJSON(&th, "threads", "-n", "1000")
	var staxSum, schedSum, staxOn, schedOn float64
	parent := false
	for _, r := range th.Rows {
		l, ok := lives[r.Tid]
		if !ok {
			if r.Tid == r.Pid && r.OffCPU != nil && r.OffCPU.OffCPUMs > 0 {
				parent = true
				if r.OffCPU.Reason != views.ReasonChild {
					t.Errorf("the parent %d waits for its children: reason %q, want %s", r.Tid, r.OffCPU.Reason, views.ReasonChild)
				}
			}
			continue
		}
		delete(lives, r.Tid)
		if r.OffCPU == nil {
			t.Errorf("child %d has no off-CPU time", r.Tid)
			continue
		}
		t.Logf("child %d: on CPU %.2f ms (schedstat %.2f), runnable %.2f ms (schedstat %.2f)", r.Tid, r.OffCPU.OnCPUMs, l.on, r.OffCPU.RunnableMs, l.runnable)
		staxSum += r.OffCPU.RunnableMs
		schedSum += l.runnable
		staxOn += r.OffCPU.OnCPUMs
		schedOn += l.on
	}
	if len(lives) != 0 {
		t.Errorf("stax threads has no row for children %v", lives)
	}
	if !parent {
		t.Errorf("no row for the parent's wait")
	}
	t.Logf("runnable in all: %.2f ms in stax threads, %.2f ms by schedstat; on CPU %.2f and %.2f ms", staxSum, schedSum, staxOn, schedOn)
	if math.Abs(staxOn-schedOn) > 0.05*schedOn+1 {
		t.Errorf("the children's time on CPU: %.2f ms in stax threads, %.2f ms by schedstat: want within 5%% and 1 ms", staxOn, schedOn)
	}
	if math.Abs(staxSum-schedSum) > 0.02*schedSum+1 {
		t.Errorf("the children's runnable time: %.2f ms in stax threads, %.2f ms by schedstat: want within 2%% and 1 ms", staxSum, schedSum)
	}
}
