package recorder

import (
	"os"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/perfrecord"
)

// onCPU is thread tid's time on CPU in the recorder's meta (false: none).
func onCPU(r *Recorder, tid uint32) (uint64, bool) {
	for _, t := range r.offCPUMeta().OnCPU {
		if t.Tid == tid {
			return t.Ns, true
		}
	}
	return 0, false
}

// TestOnCPUFromSwitches: a thread's time on CPU runs from each switch in to its next
// switch out, from the events' start for one on CPU then (its first record a switch out),
// to its exit record for its last, and to the recording's end for one on CPU then.
func TestOnCPUFromSwitches(t *testing.T) {
	r := newRecorder(Options{OffCPU: true})
	r.off.on, r.off.begin = true, 100
	r.offSwitch(1, 2, 1000, true, true) // on CPU since 100
	r.offSwitch(1, 2, 1500, false, false)
	r.offSwitch(1, 2, 1700, true, false)
	r.offSwitch(1, 2, 2000, false, false)
	r.tracker.Exit(1, 2, 2600)           // as the exit record's handling does
	r.offExit(2, 2600)                   // on CPU from 2000 to its exit
	r.offSwitch(1, 2, 9000, true, false) // no record of a thread past its exit: not counted from 100
	r.offFork(1, 3, 3000)
	r.offSwitch(1, 3, 3400, false, false) // its first run, after 400 ns runnable
	r.offFlush(4000, true)                // on CPU at the end
	if got, _ := onCPU(r, 2); got != 900+200+600 {
		t.Errorf("thread 2: %d ns on CPU, want %d", got, 900+200+600)
	}
	if got, _ := onCPU(r, 3); got != 600 {
		t.Errorf("thread 3: %d ns on CPU, want 600", got)
	}
	var runnable3 uint64
	p := r.offCPUProfile(nil)
	for _, e := range p.Entries {
		if fs := p.FrameStacks[e.Stack]; e.Tid == 3 && len(fs) == 2 && p.Frames[fs[0]].Func == agg.FuncRunnable && p.Frames[fs[1]].Func == agg.FuncStarting {
			runnable3 += e.Count
		}
	}
	if runnable3 != 400 {
		t.Errorf("thread 3 was runnable %d ns from its fork to its first run, want 400", runnable3)
	}
}

// TestOffExitEndsTheInterval: a thread whose switch in was lost, then exits, has its
// interval off CPU end at its exit, not at the end of the recording.
func TestOffExitEndsTheInterval(t *testing.T) {
	r := newRecorder(Options{OffCPU: true})
	r.off.on = true
	r.offStack(1, 4, 1000, []uint64{perfrecord.ContextUser, 0x401000})
	r.offSwitch(1, 4, 1000, true, false)
	r.offExit(4, 5000)
	r.offFlush(1_000_000, true)
	if got := r.off.run.Samples(); got != 4000 {
		t.Errorf("%d ns off CPU, want 4000 (to its exit)", got)
	}
	if m := r.offCPUMeta(); m.Intervals != 1 || len(r.off.threads) != 0 {
		t.Errorf("%d intervals, %d threads still followed; want 1 and none", m.Intervals, len(r.off.threads))
	}
}

// TestOffOwnWakeups: a wakeup is the target's when one of its threads made it, to a thread
// that is not the recorder's own.
func TestOffOwnWakeups(t *testing.T) {
	r := newRecorder(Options{OffCPU: true})
	r.off.on = true
	r.tracker.Comm(10, 11, "worker")
	self := uint32(os.Getpid())
	for _, c := range []struct {
		pid, tid, wakee uint32
		want            bool
		why             string
	}{
		{10, 11, 12, true, "a target thread woke another"},
		{10, 11, 999_999, true, "a target thread woke another process's"},
		{10, 11, self, false, "a target thread woke the recorder"},
		{0, 0, 12, false, "the idle task (a timer's expiry)"},
		{20, 21, 11, false, "another process woke a target thread"},
		{20, 11, 12, false, "a thread of another process by the target's thread id"},
	} {
		if got := r.offOwnWakeup(c.pid, c.tid, c.wakee); got != c.want {
			t.Errorf("%s: own %v, want %v", c.why, got, c.want)
		}
	}
}
