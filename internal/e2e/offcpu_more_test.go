package e2e

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
	"github.com/stax-profiler/stax/internal/views"
)

// TestOffCPUWakers records the worker that waits on a lock, a sleep and a pipe: as root,
// stax wakers --tid <worker> names the thread that held the lock and the one that filled
// the pipe, each with the stack it woke the worker from (release_lock, fill_pipe), and
// their wakeups end about the time the worker waited on each (700 and 100 ms a loop).
func TestOffCPUWakers(t *testing.T) {
	testutil.RequirePerf(t)
	testutil.RequireRoot(t)
	const loops = 3
	e := newEnv(t)
	prog := buildOffCPU(t, t.TempDir())
	if out, errOut, code := e.run("record", "-q", "--", prog, "waits", strconv.Itoa(loops)); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	worker := threadsNamed(e, "worker")[0].Tid
	holder := threadsNamed(e, "holder")[0].Tid
	filler := threadsNamed(e, "filler")[0].Tid
	var res api.Wakers
	e.mustJSON(&res, "wakers", "--tid", strconv.Itoa(int(worker)), "--json", "--stacks", "10")
	t.Logf("%+v", res.Rows)
	row := func(waker uint32) api.WakerRow {
		i := slices.IndexFunc(res.Rows, func(r api.WakerRow) bool { return r.Waker == waker })
		if i < 0 {
			t.Fatalf("no wakeups of the worker by thread %d in %+v", waker, res.Rows)
		}
		return res.Rows[i]
	}
	for _, c := range []struct {
		waker   uint32
		name    string
		fn      string
		perLoop float64 // ms of the worker's wait each loop
	}{{holder, "holder", "release_lock", 700}, {filler, "filler", "fill_pipe", 100}} {
		r := row(c.waker)
		if r.Wakee != worker || r.WakerName != c.name {
			t.Errorf("row %+v: want thread %d (%s) waking %d", r, c.waker, c.name, worker)
		}
		var fromFn uint64
		var ns uint64
		for _, s := range r.Stacks {
			if slices.Contains(s.Frames, c.fn) {
				fromFn += s.Count
				ns += s.Ns
			}
		}
		if fromFn != loops {
			t.Errorf("%s woke the worker from %s %d times, want %d: %+v", c.name, c.fn, fromFn, loops, r.Stacks)
		}
		// Each such wait lasts at least its time, less a handoff's moment.
		if ms := float64(ns) / 1e6; ms < loops*c.perLoop*0.9 {
			t.Errorf("%s's wakeups from %s ended %.1f ms of waiting, want at least %.0f", c.name, c.fn, ms, loops*c.perLoop*0.9)
		}
	}

	out, errOut, code := e.run("wakers", "--tid", strconv.Itoa(int(worker)))
	if code != 0 {
		t.Fatalf("wakers: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"holder", "filler", "release_lock", "fill_pipe"} {
		if !strings.Contains(out, want) {
			t.Errorf("stax wakers does not show %s:\n%s", want, out)
		}
	}
}

// TestOffCPUNoWakers: as root, --no-wakers records the worker's time off CPU, with its
// waits' stacks, and no wakers: stax status says they were not asked for, and stax wakers
// says why it has none, with no note about root.
func TestOffCPUNoWakers(t *testing.T) {
	testutil.RequirePerf(t)
	testutil.RequireRoot(t)
	e := newEnv(t)
	prog := buildOffCPU(t, t.TempDir())
	if out, errOut, code := e.run("record", "-q", "--no-wakers", "--", prog, "waits", "1"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var st api.Status
	e.mustJSON(&st, "status", "--json")
	o := st.Meta.OffCPU
	if o == nil || o.Intervals == 0 {
		t.Fatalf("no off-CPU time recorded with --no-wakers: %+v", o)
	}
	if o.Wakers || !o.WakersOff || o.Wakeups != 0 {
		t.Errorf("with --no-wakers: wakers %v, wakers_off %v, %d wakeups; want none recorded, and said so", o.Wakers, o.WakersOff, o.Wakeups)
	}
	if notes := strings.Join(st.Meta.Notes, "\n"); strings.Contains(notes, "wakers") {
		t.Errorf("a note about wakers that were not asked for: %q", notes)
	}
	if out, _, _ := e.run("status"); !strings.Contains(out, "wakers:    not recorded (--no-wakers)") {
		t.Errorf("stax status does not say the wakers were left out:\n%s", out)
	}
	if out, errOut, code := e.run("wakers"); code == 0 || !strings.Contains(errOut, "--no-wakers") {
		t.Errorf("stax wakers: exit %d, want an error that names --no-wakers\n%s%s", code, out, errOut)
	}
	w := threadsNamed(e, "worker")[0]
	if w.OffCPU == nil || w.OffCPU.Reason != views.ReasonLock || w.OffCPU.OffCPUMs < 900 {
		t.Errorf("the worker's time off CPU with --no-wakers: %+v; want about 1 s, mostly lock", w.OffCPU)
	}
}

// TestOffCPUWall records the worker that waits on a lock, a sleep and a pipe: stax flame
// --wall and top --wall of it add its time on and off CPU up to its wall clock, which the
// program measures itself, within 5%; its main reason in the wall view is still the lock.
func TestOffCPUWall(t *testing.T) {
	testutil.RequirePerf(t)
	const loops = 2
	e := newEnv(t)
	prog := buildOffCPU(t, t.TempDir())
	out, errOut, code := e.run("record", "-q", "--", prog, "waits", strconv.Itoa(loops))
	if code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var wallMs float64
	if _, err := fmt.Sscanf(out[strings.Index(out, "worker wall ms"):], "worker wall ms %g", &wallMs); err != nil || wallMs <= 0 {
		t.Fatalf("the program did not print its worker's wall clock: %v\n%s", err, out)
	}
	tid := strconv.Itoa(int(threadsNamed(e, "worker")[0].Tid))
	var fl api.Flame
	e.mustJSON(&fl, "flame", "--wall", "--tid", tid, "--json")
	var top api.Top
	e.mustJSON(&top, "top", "--wall", "--tid", tid, "--json", "--sort", "total", "-n", "1000")
	t.Logf("worker: %.1f ms by the program, %.1f ms in flame --wall, %.1f in top --wall", wallMs, float64(fl.Root.Total)/1e6, float64(top.Samples)/1e6)
	if !fl.Wall || !top.Wall {
		t.Errorf("the answers are not marked wall: flame %v, top %v", fl.Wall, top.Wall)
	}
	for name, ns := range map[string]uint64{"flame": fl.Root.Total, "top": top.Samples} {
		if got := float64(ns) / 1e6; math.Abs(got-wallMs) > 0.05*wallMs {
			t.Errorf("%s --wall gives the worker %.1f ms, its wall clock is %.1f ms: more than 5%% apart", name, got, wallMs)
		}
	}
	i := slices.IndexFunc(top.Rows, func(r api.TopRow) bool { return r.Func == "worker" })
	if i < 0 || top.Rows[i].Reason != views.ReasonLock {
		t.Errorf("worker's row in top --wall: %+v, want it with reason lock", top.Rows)
	}
	// In a window inside its life (which begins when the program has started, some time
	// into the run), its time on, runnable and off CPU is the window's.
	var life api.ThreadStates
	e.mustJSON(&life, "timeline", "--states", "--tid", tid, "--json", "--bucket", "10")
	if len(life.Threads) != 1 {
		t.Fatalf("timeline --states --tid %s: %d threads, want the worker alone", tid, len(life.Threads))
	}
	first := slices.IndexFunc(life.Threads[0].Buckets, func(b map[string]uint64) bool { return len(b) > 0 })
	from := life.StartSec + float64(first+1)*life.BucketSec + 0.2
	win := []string{"--from", strconv.FormatFloat(from, 'f', 3, 64), "--to", strconv.FormatFloat(from+1, 'f', 3, 64)}
	var th api.Threads
	e.mustJSON(&th, append([]string{"threads", "--json", "-n", "1000"}, win...)...)
	i = slices.IndexFunc(th.Rows, func(r api.ThreadRow) bool { return strconv.Itoa(int(r.Tid)) == tid })
	if i < 0 || th.Rows[i].OffCPU == nil {
		t.Fatalf("no worker with off-CPU time in threads %v: %+v", win, th.Rows)
	}
	if o := th.Rows[i].OffCPU; math.Abs(o.OnCPUMs+o.RunnableMs+o.OffCPUMs-1000) > 50 {
		t.Errorf("worker in the 1 s window %v: %.1f ms on CPU, %.1f runnable, %.1f off CPU, want 1000 ms in all within 5%%", win, o.OnCPUMs, o.RunnableMs, o.OffCPUMs)
	}
	var wtop api.Top
	e.mustJSON(&wtop, append([]string{"top", "--wall", "--tid", tid, "--json"}, win...)...)
	if got := float64(wtop.Samples) / 1e6; math.Abs(got-1000) > 50 || wtop.Window == nil {
		t.Errorf("top --wall of the worker in the 1 s window %v: %.1f ms (window %+v), want 1000 within 5%%", win, got, wtop.Window)
	}
	// --runnable keeps runnable time alone; --wall takes no transform.
	var run api.Top
	e.mustJSON(&run, "top", "--runnable", "--json", "-n", "1000")
	for _, r := range run.Rows {
		if r.Reason != views.ReasonRunnable {
			t.Errorf("top --runnable has a row of reason %s: %+v", r.Reason, r)
		}
	}
	if _, _, code := e.run("top", "--wall", "--focus", "worker"); code == 0 {
		t.Error("top --wall --focus did not refuse the transform")
	}

	// timeline --states: the worker's time by state adds up to its wall clock, 70% lock,
	// 20% sleep and 10% io-read within 5 points; its row shows the three.
	var st api.ThreadStates
	e.mustJSON(&st, "timeline", "--states", "--tid", tid, "--json", "--bucket", "50")
	if len(st.Threads) != 1 {
		t.Fatalf("timeline --states --tid %s: %d threads, want the worker alone", tid, len(st.Threads))
	}
	var all uint64
	for _, v := range st.Threads[0].Total {
		all += v
	}
	t.Logf("worker's states: %v", st.Threads[0].Total)
	if got := float64(all) / 1e6; math.Abs(got-wallMs) > 0.05*wallMs {
		t.Errorf("timeline --states gives the worker %.1f ms in all, its wall clock is %.1f ms", got, wallMs)
	}
	for reason, want := range map[string]float64{views.ReasonLock: 70, views.ReasonSleep: 20, views.ReasonIORead: 10} {
		if got := float64(st.Threads[0].Total[reason]) * 100 / float64(all); math.Abs(got-want) > 5 {
			t.Errorf("worker %s %.1f%% of its time, want %.0f%%", reason, got, want)
		}
	}
	text, errText, code := e.run("timeline", "--states", "--tid", tid, "--bucket", "50")
	if code != 0 {
		t.Fatalf("timeline --states: exit %d\n%s%s", code, text, errText)
	}
	if !strings.Contains(text, "LLLL") || !strings.Contains(text, "SS") || !strings.Contains(text, "R") {
		t.Errorf("timeline --states does not show the worker's lock, sleep and read:\n%s", text)
	}
}
