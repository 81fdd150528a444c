package recorder

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/perfevent"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil"
)

func TestStackFitWant(t *testing.T) {
	fresh := func() stackFit { return stackFit{on: true, max: 8192, cur: 8192} }
	f := fresh()
	for range fitWindow - 1 {
		f.observe(1000, false)
	}
	if n := f.want(); n != 0 {
		t.Fatalf("fitted after %d samples to %d; want to wait for %d", f.unwound, n, fitWindow)
	}
	f.observe(1300, false)
	// 1300 and half again, and room for a call or two: 2462, rounded up.
	if n := f.want(); n != 2560 {
		t.Fatalf("want %d for stacks of 1300 bytes at most, got %d", 2560, n)
	}

	f = fresh()
	for range fitWindow {
		f.observe(100, false)
	}
	if n := f.want(); n != fitMin {
		t.Errorf("shallow stacks: want the smallest copy %d, got %d", fitMin, n)
	}

	f = fresh()
	for range 10 * fitWindow {
		f.observe(6000, false)
	}
	if n := f.want(); n != 0 {
		t.Errorf("stacks needing 6000 of 8192 bytes: reopened for %d; want no change", n)
	}

	// The start of a program (the dynamic loader's large frames) does not size the copy
	// for the rest of it: the latest window does.
	f = fresh()
	f.observe(5600, false)
	for range fitWindow - 1 {
		f.observe(900, false)
	}
	if n := f.want(); n != 0 {
		t.Errorf("a window with a 5600-byte stack: reopened for %d; want no change", n)
	}
	for range fitWindow {
		f.observe(900, false)
	}
	if n := f.want(); n != 2048 {
		t.Errorf("the next window, of 900 bytes at most: want 2048, got %d", n)
	}

	f = fresh()
	for range 10 * fitWindow {
		f.observe(1000, false)
	}
	f.observe(8192, true)
	if n := f.want(); n != 0 {
		t.Errorf("a stack cut at the full copy: shrunk to %d; want no change", n)
	}

	// Fitted, then deeper stacks are cut: back to the full copy, shrunk as often as it was.
	f = stackFit{on: true, max: 8192, cur: 2048, need: 1300, shrunk: maxShrinks}
	for range 5000 {
		f.observe(1300, false)
	}
	f.observe(2048, true)
	if n := f.want(); n != 0 {
		t.Errorf("one cut stack in 5001: grew to %d; want no change", n)
	}
	f.observe(2048, true)
	if n := f.want(); n != 8192 {
		t.Errorf("two cut stacks: want the full copy, got %d", n)
	}

	f = fresh()
	f.shrunk = maxShrinks
	for range fitWindow {
		f.observe(100, false)
	}
	if n := f.want(); n != 0 {
		t.Errorf("after %d shrinks: shrunk again to %d", maxShrinks, n)
	}
}

func TestStackSwitchSet(t *testing.T) {
	var none stackSwitch
	if got := none.set(8192); got != setNone {
		t.Errorf("no resize: a sample of events %d", got)
	}
	s := stackSwitch{from: 8192, to: 2048, at: 100}
	for size, want := range map[uint32]stackSet{8192: setOld, 2048: setNew, 4096: setNone, 0: setNone} {
		if got := s.set(size); got != want {
			t.Errorf("copy %d: events %d, want %d", size, got, want)
		}
	}
}

// TestStackHandover: each thread and CPU counts its old events' samples until its new
// events' first, then only the new ones'. Simulated events that sample every period of a
// thread's time, each from a random phase, replaced at a random time: the samples counted
// stay, on average, those the old events alone would have taken (dropping the old at the
// resize loses half a sample per thread and CPU).
func TestStackHandover(t *testing.T) {
	f := stackFit{handed: map[uint64]uint8{}}
	if !f.handover(7, 0, setOld) || !f.handover(7, 1, setOld) {
		t.Fatal("an old sample before the new events' first does not count")
	}
	f.handover(7, 0, setNew)
	if f.handover(7, 0, setOld) || !f.handover(7, 1, setOld) || !f.handover(7, 0, setNew) {
		t.Fatal("after thread 7's first new sample on cpu 0: want its old samples there dropped, elsewhere kept, its new ones kept")
	}

	const period, pairs = 1000, 40000
	rng := rand.New(rand.NewPCG(1, 2))
	f = stackFit{handed: map[uint64]uint8{}}
	var diff, cutDiff, moved int
	for p := range pairs {
		tid, cpu := uint32(1000+p/4), uint32(p%4)
		phase := rng.Int64N(period)      // the old events' next sample, from 0
		resize := rng.Int64N(period * 5) // when the new events start
		end := resize + rng.Int64N(period*20)
		old := func(yield func(int64) bool) {
			for at := phase; at <= end; at += period {
				if !yield(at) {
					return
				}
			}
		}
		alone := 0
		for range old {
			alone++
		}
		counted, cut := 0, 0
		next := resize + period // the new events' next sample
		for at := range old {
			for next < at && next <= end {
				if f.handover(tid, cpu, setNew) {
					counted++
				}
				next += period
			}
			if f.handover(tid, cpu, setOld) {
				counted++
			}
			if at < resize {
				cut++
			}
		}
		for ; next <= end; next += period {
			if f.handover(tid, cpu, setNew) {
				counted++
			}
		}
		cut += int((end - resize) / period) // every new sample
		diff += counted - alone
		if counted != alone {
			moved++
		}
		cutDiff += cut - alone
	}
	mean, cutMean := float64(diff)/pairs, float64(cutDiff)/pairs
	t.Logf("samples counted - the old events' alone, per thread and CPU: %.3f handed over (%d of %d differ), %.3f cut at the resize", mean, moved, pairs, cutMean)
	if math.Abs(mean) > 0.05 {
		t.Errorf("handed over: %.3f samples per thread and CPU more than the old events alone, want about 0", mean)
	}
	if cutMean > -0.4 {
		t.Errorf("cut at the resize: %.3f samples per thread and CPU, want about -0.5 (the simulation does not show the loss)", cutMean)
	}
}

func TestDescendants(t *testing.T) {
	d := descendants(os.Getppid())
	if !slices.Contains(d, os.Getpid()) || d[0] != os.Getppid() {
		t.Errorf("descendants of our parent %d: %v; want it first and us (%d) among them", os.Getppid(), d, os.Getpid())
	}
}

// TestStackCopyFitsTheStacks records a frameless program in dwarf mode with the default
// copy: once its shallow stacks are measured the copy shrinks to fit them; when the
// program goes deeper than the fitted copy holds, it grows back to the full copy, and the
// deep stacks are whole again.
func TestStackCopyFitsTheStacks(t *testing.T) {
	testutil.RequirePerf(t)
	t.Setenv("STAX_HOME", t.TempDir())
	prog := testutil.CC(t, t.TempDir(), "stackfit", "gcc", "-O2", "-fomit-frame-pointer", "-g", filepath.Join("testdata", "stackfit.c"))
	const deepMs = 3000
	r, err := Start(Options{Argv: []string{prog, fmt.Sprint(deepMs)}, Freq: 999, CallGraph: "dwarf"})
	if err != nil {
		t.Fatal(err)
	}
	exit := make(chan int, 1)
	go func() { exit <- r.Loop() }()
	var fitted store.Meta
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		fitted = r.Counts()
		if fitted.StackFit != nil && fitted.StackSize <= 4096 {
			break
		}
		if time.Now().After(deadline) {
			syscall.Kill(r.Pid(), syscall.SIGKILL)
			t.Fatalf("no fit after a minute: %d samples, %+v", fitted.Samples, fitted.StackFit)
		}
	}
	if f := fitted.StackFit; fitted.StackSize > 4096 || f.Max != perfevent.DefaultStackSize || f.Need <= 0 || f.Need > fitted.StackSize {
		t.Errorf("fitted to %d bytes for stacks of %d (%+v); want at most 4096, above the need, from %d", fitted.StackSize, f.Need, f, perfevent.DefaultStackSize)
	}
	if err := syscall.Kill(r.Pid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	if code := <-exit; code != 0 {
		t.Fatalf("exit status %d", code)
	}
	run, err := store.Load(r.StorePath())
	if err != nil {
		t.Fatal(err)
	}
	m := run.Meta
	if m.StackFit == nil || m.StackFit.Resizes <= fitted.StackFit.Resizes || m.StackSize != perfevent.DefaultStackSize {
		t.Errorf("after the deep phase: copy %d, fit %+v; want the full %d again", m.StackSize, m.StackFit, perfevent.DefaultStackSize)
	}
	p := &run.Profile
	var n, whole [2]uint64 // shallow, wide
	for _, e := range p.Entries {
		var names []string
		for _, f := range p.AppendFrames(nil, e.Stack) {
			names = append(names, p.Frames[f].Func)
		}
		k := -1
		switch {
		case slices.Contains(names, "shallow"):
			k = 0
		case slices.Contains(names, "wide"):
			k = 1
		default:
			continue
		}
		n[k] += e.Count
		if slices.Contains(names, "main") {
			whole[k] += e.Count
		}
	}
	t.Logf("stack copy %d -> %d (need %d) -> %d; reaching main: shallow %d of %d, wide %d of %d; ends %v",
		perfevent.DefaultStackSize, fitted.StackSize, fitted.StackFit.Need, m.StackSize, whole[0], n[0], whole[1], n[1], m.StackEnds)
	if n[0] < fitWindow/2 || whole[0]*100 < n[0]*99 {
		t.Errorf("shallow stacks: %d of %d reach main; want 99%%", whole[0], n[0])
	}
	// Deep stacks are cut from the first until the copy grows back: a step or two.
	if n[1] < deepMs/2 || whole[1]*100 < n[1]*70 {
		t.Errorf("wide stacks: %d of %d reach main; want 70%%", whole[1], n[1])
	}
	if m.Lost > 0 {
		t.Errorf("%d samples lost", m.Lost)
	}
}

// TestStackCopyHeld: a target with more threads than maxFitThreads, and one whose threads
// switch far more often than they are sampled, keep the copy they started with, and the
// run says why: reopening their events per thread would cost them more than it saves.
func TestStackCopyHeld(t *testing.T) {
	testutil.RequirePerf(t)
	t.Setenv("STAX_HOME", t.TempDir())
	prog := testutil.CC(t, t.TempDir(), "switchy", "gcc", "-O2", "-g", "-pthread", filepath.Join("testdata", "switchy.c"))
	for _, c := range []struct {
		args []string
		held string
	}{
		// 3 s of CPU time each: samples for several fit windows.
		{[]string{"threads", fmt.Sprint(maxFitThreads + 4), "150"}, fmt.Sprintf("the target has %d threads", maxFitThreads+5)},
		{[]string{"pingpong", "3000"}, "the target's threads switch"},
	} {
		r, err := Start(Options{Argv: append([]string{prog}, c.args...), Freq: 999, CallGraph: "dwarf"})
		if err != nil {
			t.Fatal(err)
		}
		if code := r.Loop(); code != 0 {
			t.Fatalf("%v: exit status %d", c.args, code)
		}
		run, err := store.Load(r.StorePath())
		if err != nil {
			t.Fatal(err)
		}
		m := run.Meta
		t.Logf("%v: %d samples, copy %d, fit %+v", c.args, m.Samples, m.StackSize, m.StackFit)
		if m.StackFit == nil || m.StackFit.Resizes != 0 || m.StackSize != perfevent.DefaultStackSize || !strings.HasPrefix(m.StackFit.Held, c.held) {
			t.Errorf("%v: copy %d, fit %+v; want %d bytes, not reopened, held for %q", c.args, m.StackSize, m.StackFit, perfevent.DefaultStackSize, c.held)
		}
	}
}
