package recorder

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/perfevent"
	"github.com/stax-profiler/stax/internal/perfrecord"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil"
	"github.com/stax-profiler/stax/internal/views"
)

// TestOffSwitch pairs switches out and in per thread: the stack of the switch out, a
// preempted switch marked runnable, a switch in with no switch out before it ignored.
func TestOffSwitch(t *testing.T) {
	r := newRecorder(Options{OffCPU: true})
	r.off.on = true
	stack := []uint64{perfrecord.ContextUser, 0x401000, 0x401100}
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
	r.offStack(1, 4, 1000, []uint64{perfrecord.ContextUser, 0x401000})
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

// TestOffWakersAndIntervals: a wait is matched to the latest wakeup of its thread inside
// it, not to one before it; each wait is kept with its times and waker; a long wait still
// going shows up to when it was last counted, and ends where its switch in is.
func TestOffWakersAndIntervals(t *testing.T) {
	r := newRecorder(Options{OffCPU: true})
	r.off.on, r.off.wakers = true, true
	blocked := []uint64{perfrecord.ContextUser, 0x401000, 0x401100}
	waker := []uint64{perfrecord.ContextUser, 0x402000, 0x402100}
	r.offWaking(1, 3, 2, 900, waker) // before the wait: not its waker
	r.offStack(1, 2, 1000, blocked)
	r.offSwitch(1, 2, 1000, true, false)
	r.offWaking(1, 4, 2, 1500, waker)
	r.offWaking(1, 3, 2, 4000, waker) // the latest inside the wait
	r.offSwitch(1, 2, 5000, false, false)
	// Thread 5 waits long: counted so far at each flush, and kept open.
	r.offStack(1, 5, 10_000, blocked)
	r.offSwitch(1, 5, 10_000, true, false)
	r.offFlush(10_000+offFlushAfter, false)

	p := r.offCPUProfile(nil)
	ivs := r.offIntervals(p, nil)
	if len(ivs) != 2 {
		t.Fatalf("intervals %+v, want the ended wait and the open one", ivs)
	}
	if iv := ivs[0]; iv.Tid != 2 || iv.Start != 1000 || iv.End != 5000 || iv.Waker != 3 || iv.Stack == agg.NoStack {
		t.Errorf("ended wait %+v, want thread 2 from 1000 to 5000 woken by 3", iv)
	}
	if iv := ivs[1]; iv.Tid != 5 || iv.Start != 10_000 || iv.End != 10_000+offFlushAfter {
		t.Errorf("open wait %+v, want thread 5 from 10000 so far", iv)
	}
	ns, n := r.wakersProfiles(nil)
	rows := views.Wakers(ns, n, 2, 3)
	if len(rows) != 1 || rows[0].Waker != 3 || rows[0].Count != 1 || rows[0].Ns != 4000 {
		t.Errorf("wakers of thread 2: %+v, want thread 3 once for 4000 ns", rows)
	}
	r.offSwitch(1, 5, 10_000+2*offFlushAfter, false, false)
	ivs = r.offIntervals(r.offCPUProfile(nil), nil)
	if len(ivs) != 2 || ivs[1].End != 10_000+2*offFlushAfter {
		t.Errorf("after its switch in, the long wait is %+v", ivs)
	}
	if m := r.offCPUMeta(); m.Wakeups != 3 || m.Woken != 1 {
		t.Errorf("counts %+v, want 3 wakeups, 1 wait woken", *m)
	}
}

// TestOffSampledStacks: when the stacks of switches out are sampled, a switch out without
// a sample of its own takes its thread's latest sampled stack of a switch out like it
// (waiting, or preempted), and is counted as sampled; its time is its own. When every
// switch out is sampled, one without its stack has none.
func TestOffSampledStacks(t *testing.T) {
	blocked := []uint64{perfrecord.ContextUser, 0x401000, 0x401100}
	running := []uint64{perfrecord.ContextUser, 0x403000}
	for _, sampled := range []bool{true, false} {
		r := newRecorder(Options{OffCPU: true})
		r.off.on, r.off.sampled = true, sampled
		r.offSwitch(1, 2, 500, true, false) // no stack seen yet for the thread
		r.offSwitch(1, 2, 600, false, false)
		r.offStack(1, 2, 1000, blocked)
		r.offSwitch(1, 2, 1000, true, false)
		r.offSwitch(1, 2, 2000, false, false)
		r.offStack(1, 2, 3000, running)
		r.offSwitch(1, 2, 3000, true, true)
		r.offSwitch(1, 2, 3100, false, false)
		r.offSwitch(1, 2, 4000, true, false) // not sampled: blocked where it last blocked
		r.offSwitch(1, 2, 7000, false, false)
		r.offSwitch(1, 2, 8000, true, true) // not sampled: preempted where it last was
		r.offSwitch(1, 2, 8050, false, false)

		m := r.offCPUMeta()
		want := map[string]uint64{"no stack": 100, "blocked": 1000 + 3000, "runnable": 100 + 50}
		wantSampled, wantNoStack := uint64(2), uint64(1)
		if !sampled {
			want = map[string]uint64{"no stack": 100 + 3000, "blocked": 1000, "runnable": 100, "runnable, no stack": 50}
			wantSampled, wantNoStack = 0, 3
		}
		if m.Intervals != 5 || m.Sampled != wantSampled || m.NoStack != wantNoStack {
			t.Errorf("sampled %v: counts %+v, want 5 intervals, %d sampled, %d without a stack", sampled, *m, wantSampled, wantNoStack)
		}
		got := map[string]uint64{}
		p := r.offCPUProfile(nil)
		for _, e := range p.Entries {
			var names []string
			for _, f := range p.FrameStacks[e.Stack] {
				names = append(names, p.Frames[f].Func)
			}
			name := fmt.Sprint(names)
			switch {
			case len(names) == 1 && names[0] == agg.FuncNoStack:
				name = "no stack"
			case len(names) == 2 && names[0] == agg.FuncRunnable && names[1] == agg.FuncNoStack:
				name = "runnable, no stack"
			case strings.Contains(name, "401000") && names[0] != agg.FuncRunnable:
				name = "blocked"
			case strings.Contains(name, "403000") && names[0] == agg.FuncRunnable:
				name = "runnable"
			}
			got[name] += e.Count
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("sampled %v: ns by stack %v, want %v", sampled, got, want)
		}
	}
}

// TestOffCPUSampledPingPong records two threads that hand a byte back and forth far more
// often than the stacks are sampled: far fewer stacks than waits, each thread's time off
// CPU still that of its switch records.
func TestOffCPUSampledPingPong(t *testing.T) {
	testutil.RequirePerf(t)
	t.Setenv("STAX_HOME", t.TempDir())
	const rounds = 100_000
	const rate = 100
	env := append(os.Environ(), "STAX_TEST_PINGPONG="+strconv.Itoa(rounds))
	r, err := Start(Options{Argv: []string{os.Args[0]}, Freq: 99, Env: env, OffCPU: true, OffCPURate: rate})
	if err != nil {
		t.Fatal(err)
	}
	if code := r.Loop(); code != 0 {
		t.Fatalf("exit status %d", code)
	}
	<-r.Done()
	run, err := store.Load(r.StorePath())
	if err != nil {
		t.Fatal(err)
	}
	m := run.Meta.OffCPU
	if m == nil || run.OffCPU == nil {
		t.Fatalf("no off-CPU time recorded: %v", run.Meta.Notes)
	}
	// Records lost while the recorder was behind take intervals away, but not the rest.
	t.Logf("off-CPU counts %+v, %d records lost", *m, run.Meta.Lost)
	if m.StackRate != rate || m.Intervals < rounds/4 || m.IntervalsDropped > 0 {
		t.Fatalf("counts %+v: want a stack rate of %d and at least %d intervals, all kept", *m, rate, rounds/4)
	}
	// The stacks are of waits; under a slow recorder (-race) the switch records are lost
	// by the hundred thousand, and the kernel's count says how many waits there were.
	own := m.Intervals - m.Sampled - m.NoStack - m.PreemptedCPU
	waits := max(m.OutsCounted, m.Intervals-m.PreemptedCPU)
	if own*10 > waits || m.NoStack*10 > m.Intervals {
		t.Errorf("%d of %d waits (%d intervals read) have their own stack, %d none: want far fewer than all, nearly all the others sampled", own, waits, m.Intervals, m.NoStack)
	}
	// Each thread's time off CPU in the aggregate is that of its intervals.
	byTid := map[uint32]int64{}
	for _, e := range run.OffCPU.Entries {
		byTid[e.Tid] += int64(e.Count)
	}
	for _, iv := range run.OffCPUIntervals {
		byTid[iv.Tid] -= int64(iv.End - iv.Start)
	}
	for tid, d := range byTid {
		if d != 0 {
			t.Errorf("thread %d: the off-CPU aggregate and its intervals differ by %d ns", tid, d)
		}
	}
}

// A wait whose switch in was lost, counted in part while it lasted (offFlush), ends in the
// intervals where its time was counted: the aggregate and the intervals hold the same time.
func TestOffLostSwitchInKeepsIntervalsWhole(t *testing.T) {
	r := newRecorder(Options{OffCPU: true})
	r.off.on = true
	r.offSwitch(1, 2, 1000, true, false)
	r.offFlush(1000+2*offFlushAfter, false)              // counted so far
	r.offSwitch(1, 2, 1000+3*offFlushAfter, true, false) // its switch in was lost
	r.offSwitch(1, 2, 1000+4*offFlushAfter, false, false)
	var agg, ivs uint64
	for _, e := range r.offCPUProfile(nil).Entries {
		agg += e.Count
	}
	for _, c := range r.off.intervals {
		for _, iv := range c {
			ivs += iv.End - iv.Start
		}
	}
	if agg != 3*offFlushAfter || ivs != agg {
		t.Errorf("aggregate %d ns, intervals %d ns: want both %d", agg, ivs, 3*offFlushAfter)
	}
}

// TestOffUnpaired counts the switch records found missing: two switches out of a thread
// with no switch in between, two in with no switch out; not a thread's first switch in.
func TestOffUnpaired(t *testing.T) {
	r := newRecorder(Options{OffCPU: true})
	r.off.on = true
	r.offSwitch(1, 2, 100, false, false) // switched out when the recording began
	r.offSwitch(1, 2, 200, true, false)
	r.offSwitch(1, 2, 300, true, false) // its switch in was lost
	r.offSwitch(1, 2, 400, false, false)
	r.offSwitch(1, 2, 500, false, false) // its switch out was lost
	r.offSwitch(1, 2, 600, true, false)
	r.offSwitch(1, 2, 700, false, false)
	if m := r.offCPUMeta(); m.Unpaired != 2 || m.Switches != 7 {
		t.Errorf("counts %+v, want 2 switch records missing of 7", *m)
	}
}

// TestPreemptedStacksFromFramePointers: more busy threads than cores are preempted all the
// time; in DWARF mode the stacks of their preemptions come from the frame-pointer chain,
// not unwound, and every interval is still counted.
func TestPreemptedStacksFromFramePointers(t *testing.T) {
	testutil.RequirePerf(t)
	t.Setenv("STAX_HOME", t.TempDir())
	out := filepath.Join(t.TempDir(), "nice")
	r, err := Start(Options{Argv: []string{os.Args[0]}, Freq: 99, CallGraph: "dwarf", StackSize: 8 << 10, OffCPU: true,
		ContextSwitchEvent: true, Env: append(os.Environ(), "STAX_TEST_NICE_OUT="+out)})
	if err != nil {
		t.Fatal(err)
	}
	if code := r.Loop(); code != 0 {
		t.Fatalf("exit status %d", code)
	}
	<-r.Done()
	run, err := store.Load(r.StorePath())
	if err != nil {
		t.Fatal(err)
	}
	off := run.Meta.OffCPU
	if off == nil || off.Intervals == 0 {
		t.Fatalf("no off-CPU intervals: %+v", off)
	}
	if off.PreemptedFP == 0 || off.PreemptedFP > off.Intervals {
		t.Errorf("%d of %d intervals had a preemption's stack from frame pointers", off.PreemptedFP, off.Intervals)
	}
	t.Logf("%d intervals, %d preemption stacks from frame pointers", off.Intervals, off.PreemptedFP)
}

// TestPreemptionsCopyNoStack records more busy threads than cores with the blocked stacks
// taken from sched_switch (root): the kernel takes no stack at a preemption, and each
// runnable interval stands under its thread's latest CPU sample, in the busy function.
func TestPreemptionsCopyNoStack(t *testing.T) {
	testutil.RequirePerf(t)
	if os.Geteuid() != 0 {
		t.Skip("sched_switch takes root or CAP_PERFMON")
	}
	t.Setenv("STAX_HOME", t.TempDir())
	out := filepath.Join(t.TempDir(), "nice")
	r, err := Start(Options{Argv: []string{os.Args[0]}, Freq: 999, CallGraph: "dwarf", StackSize: 8 << 10, OffCPU: true,
		Env: append(os.Environ(), "STAX_TEST_NICE_OUT="+out)})
	if err != nil {
		t.Fatal(err)
	}
	if code := r.Loop(); code != 0 {
		t.Fatalf("exit status %d", code)
	}
	<-r.Done()
	run, err := store.Load(r.StorePath())
	if err != nil {
		t.Fatal(err)
	}
	off := run.Meta.OffCPU
	if off == nil || !off.WaitStacks {
		t.Fatalf("blocked stacks not from sched_switch: %+v, notes %q", off, run.Meta.Notes)
	}
	t.Logf("off-CPU counts %+v", *off)
	if off.PreemptedFP != 0 {
		t.Errorf("%d preemptions came with a stack sample of their own", off.PreemptedFP)
	}
	// The stacks each thread's CPU samples had, by function names.
	names := func(p *agg.Profile, stack uint32) []string {
		var out []string
		for _, f := range p.FrameStacks[stack] {
			out = append(out, p.Frames[f].Func)
		}
		return out
	}
	sampled := map[string]bool{}
	for _, e := range run.Profile.Entries {
		sampled[fmt.Sprint(e.Tid, names(&run.Profile, e.Stack))] = true
	}
	var runnable, withStack, matched, busy uint64
	var unmatched []string
	for _, iv := range run.OffCPUIntervals {
		if int(iv.Stack) >= len(run.OffCPU.FrameStacks) {
			continue
		}
		fr := names(run.OffCPU, iv.Stack)
		if len(fr) == 0 || fr[0] != agg.FuncRunnable || len(fr) > 1 && (fr[1] == agg.FuncStarting || fr[1] == agg.FuncExiting) {
			continue // not a preemption: a new thread's wait for its first run, or an exiting one's for its last
		}
		runnable++
		if len(fr) == 1 || fr[1] == agg.FuncNoStack {
			continue
		}
		withStack++
		if sampled[fmt.Sprint(iv.Tid, fr[1:])] {
			matched++
		} else if len(unmatched) < 10 {
			unmatched = append(unmatched, fmt.Sprint(iv.Tid, fr))
		}
		if strings.Contains(strings.Join(fr, " "), "TestMain") {
			busy++
		}
	}
	if runnable < 20 {
		t.Fatalf("%d runnable intervals: want the busy threads preempted", runnable)
	}
	if off.PreemptedCPU < withStack || withStack*10 < runnable*9 {
		t.Errorf("%d of %d runnable intervals have a stack, %d from CPU samples: want nearly all, all from CPU samples", withStack, runnable, off.PreemptedCPU)
	}
	// Each stands under a stack its thread's CPU samples had.
	if matched*20 < withStack*19 {
		t.Errorf("%d of %d runnable stacks are not among their thread's CPU samples' stacks, such as:\n%s", withStack-matched, withStack, strings.Join(unmatched, "\n"))
	}
	if busy == 0 {
		t.Error("no runnable interval under the busy loop")
	}
}

// countingSource counts switches out as the kernel would, and takes the stacks' mode.
type countingSource struct {
	Source
	outs    uint64
	sampled []bool // the modes asked for, in order
}

func (c *countingSource) SwitchOutsCounted() (uint64, bool) { return c.outs, true }
func (c *countingSource) SampleOffCPU(on bool) error {
	c.sampled = append(c.sampled, on)
	return nil
}

// TestOffRateFromTheKernelsCount: where the kernel counts the switches out, the stacks go
// to sampled as soon as a window of that count says so, with no switch record read (a
// reader far behind its rings), and back to every one when the rate falls. A stack taken
// in either mode is kept by the events of the mode at its time, even once the mode changed
// again since.
func TestOffRateFromTheKernelsCount(t *testing.T) {
	r := newRecorder(Options{OffCPU: true})
	src := &countingSource{}
	r.src = src
	r.off.on, r.off.sampled, r.off.counts.StackRate, r.off.counter = true, true, 100, src
	window := func(switches uint64) uint64 {
		src.outs += switches
		for began := perfevent.MonotonicNow(); perfevent.MonotonicNow()-began < offRateWindow; time.Sleep(time.Millisecond) {
		}
		before := perfevent.MonotonicNow()
		r.offRate(0)
		return before
	}
	r.offRate(0) // the first look: where the count starts
	beforeFirst := perfevent.MonotonicNow()
	toSampled := window(10_000) // 100,000 a second at most, over 100 a second
	if !slices.Equal(src.sampled, []bool{true}) || r.off.stackOuts != 0 {
		t.Fatalf("modes %v after a busy window: want sampled, with no record read", src.sampled)
	}
	window(30) // at most 300 a second: above half the rate, stays sampled
	if len(src.sampled) != 1 {
		t.Fatalf("modes %v: want no change while the rate is above half of it", src.sampled)
	}
	toEvery := window(0)
	if !slices.Equal(src.sampled, []bool{true, false}) {
		t.Fatalf("modes %v after an idle window: want every stack again", src.sampled)
	}
	for _, c := range []struct {
		at          uint64
		every, keep bool
	}{
		{beforeFirst, true, true}, {beforeFirst, false, false},
		{toSampled + (toEvery-toSampled)/2, true, false}, {toSampled + (toEvery-toSampled)/2, false, true},
		{toEvery + offRateWindow, true, true}, {toEvery + offRateWindow, false, false},
	} {
		if got := r.offKeep(c.at, c.every); got != c.keep {
			t.Errorf("offKeep(%d, every %v) = %v, want %v (changes %+v)", c.at, c.every, got, c.keep, r.off.modes)
		}
	}
}

// TestOffRateSampledBeforeTheWindowEnds: a window's share of stacks (10 at 100 a second)
// taken before its end makes the stacks sampled at once, not a window later; its share
// alone does not.
func TestOffRateSampledBeforeTheWindowEnds(t *testing.T) {
	r := newRecorder(Options{OffCPU: true})
	src := &countingSource{}
	r.src = src
	r.off.on, r.off.sampled, r.off.counts.StackRate, r.off.counter = true, true, 100, src
	r.offRate(0)
	src.outs += 10
	r.off.countNext = 0 // the count may be read again at once
	r.offRate(0)
	if len(src.sampled) != 0 {
		t.Fatalf("modes %v after the window's share: want every stack still", src.sampled)
	}
	src.outs++
	r.off.countNext = 0
	r.offRate(0)
	if !slices.Equal(src.sampled, []bool{true}) {
		t.Fatalf("modes %v past the window's share: want sampled at once", src.sampled)
	}
}
