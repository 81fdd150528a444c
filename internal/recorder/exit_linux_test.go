package recorder

import (
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
)

// TestOffExitingUntilTheLastSwitch: a task's time from its exit record to its last switch
// out is runnable, under [exiting]; the last switch of a task that is not the target's
// counts nothing; without the last switches, the exits are counted and the time is not.
func TestOffExitingUntilTheLastSwitch(t *testing.T) {
	r := newRecorder(Options{OffCPU: true})
	r.off.on, r.off.deaths = true, true
	r.offFork(1, 5, 1000)
	r.offSwitch(1, 5, 1200, false, false) // its first run
	r.offExit(5, 3000)
	r.offDeath(77, 3100) // not the target's
	r.offDeath(5, 3500)  // waited 500 ns for a CPU to end
	r.offFlush(10_000, true)
	var exiting uint64
	p := r.offCPUProfile(nil)
	for _, e := range p.Entries {
		if fs := p.FrameStacks[e.Stack]; e.Tid == 5 && len(fs) == 2 && p.Frames[fs[0]].Func == agg.FuncRunnable && p.Frames[fs[1]].Func == agg.FuncExiting {
			exiting += e.Count
		}
	}
	m := r.offCPUMeta()
	if exiting != 500 || m.ExitingNs != 500 || m.ExitingTasks != 1 || m.NoStack != 0 {
		t.Errorf("exiting %d ns in the profile, %d ns of %d tasks in the meta, %d without a stack; want 500 ns of 1, none", exiting, m.ExitingNs, m.ExitingTasks, m.NoStack)
	}
	if ivs := r.offIntervals(p, nil); len(ivs) != 2 || ivs[1].Start != 3000 || ivs[1].End != 3500 {
		t.Errorf("intervals %+v: want its start's and its exit's", ivs)
	}

	r = newRecorder(Options{OffCPU: true})
	r.off.on = true
	r.offFork(1, 5, 1000)
	r.offExit(5, 3000)
	r.offDeath(5, 3500)
	if m := r.offCPUMeta(); m.ExitedTasks != 1 || m.ExitingTasks != 0 {
		t.Errorf("without the last switches: %d exited, %d exits counted; want 1 and none", m.ExitedTasks, m.ExitingTasks)
	}
}
