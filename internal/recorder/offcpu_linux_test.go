package recorder

import (
	"fmt"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/record"
)

// TestOffSwitch pairs switches out and in per thread: the stack of the switch out, a
// preempted switch marked runnable, a switch in with no switch out before it ignored.
func TestOffSwitch(t *testing.T) {
	r := newRecorder(Options{OffCPU: true})
	r.off.on = true
	stack := []uint64{record.ContextUser, 0x401000, 0x401100}
	r.offSwitch(1, 3, 500, false, false) // in, before any out: the recording began mid-wait
	r.offStack(1, 2, 1000, stack)
	r.offSwitch(1, 2, 1001, true, false)
	r.offStack(1, 3, 1500, stack) // another thread's stack is its own
	r.offSwitch(1, 2, 5001, false, false)
	r.offSwitch(1, 2, 6000, true, true) // preempted, and its stack sample was lost
	r.offSwitch(1, 2, 6500, false, false)
	r.offStack(1, 2, 1_000, stack) // a stack long before its switch is not its
	r.offSwitch(1, 2, 9_000_000, true, false)
	r.offSwitch(1, 2, 9_000_100, false, false)

	m := r.offCPUMeta()
	if m.Switches != 7 || m.Intervals != 3 || m.NoStack != 2 || m.Lost != 0 {
		t.Errorf("counts %+v, want 7 switches, 3 intervals, 2 without a stack", *m)
	}
	if got := r.off.run.Samples(); got != 4000+500+100 {
		t.Errorf("%d ns off CPU, want %d", got, 4000+500+100)
	}
	want := map[string]uint64{"stack": 4000, "runnable, no stack": 500, "no stack": 100}
	got := map[string]uint64{}
	p := r.offCPUProfile(nil)
	for _, e := range p.Entries {
		fs := p.FrameStacks[e.Stack]
		name := "stack"
		switch {
		case len(fs) == 2 && p.Frames[fs[0]].Func == agg.FuncRunnable && p.Frames[fs[1]].Func == agg.FuncNoStack:
			name = "runnable, no stack"
		case len(fs) == 1 && p.Frames[fs[0]].Func == agg.FuncNoStack:
			name = "no stack"
		case len(fs) != 2:
			name = fmt.Sprintf("%d frames", len(fs))
		}
		if e.Tid != 2 || e.Pid != 1 {
			t.Errorf("an entry of thread %d/%d", e.Pid, e.Tid)
		}
		got[name] += e.Count
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %d ns, want %d (all: %v)", k, got[k], v, got)
		}
	}
}

// TestOffFlush counts a long wait as it goes, and a wait still open at the end up to it.
func TestOffFlush(t *testing.T) {
	r := newRecorder(Options{OffCPU: true})
	r.off.on = true
	const ms = 1_000_000
	r.offStack(1, 4, 1000, []uint64{record.ContextUser, 0x401000})
	r.offSwitch(1, 4, 1000, true, false)
	r.offFlush(1000+50*ms, false)
	if got := r.off.run.Samples(); got != 0 {
		t.Errorf("%d ns counted 50 ms into a wait", got)
	}
	r.offFlush(1000+200*ms, false)
	if got := r.off.run.Samples(); got != 200*ms {
		t.Errorf("%d ns counted 200 ms into a wait, want %d", got, 200*ms)
	}
	r.offSwitch(1, 4, 1000+300*ms, false, false)
	r.offSwitch(1, 5, 1000+400*ms, true, false) // another thread, still out at the end
	r.offFlush(1000+410*ms, true)
	if got := r.off.run.Samples(); got != 310*ms {
		t.Errorf("%d ns counted, want %d", got, 310*ms)
	}
	if m := r.offCPUMeta(); m.Intervals != 1 {
		t.Errorf("%d intervals ended, want 1", m.Intervals)
	}
}
