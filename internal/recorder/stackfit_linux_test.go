package recorder

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

func TestStackSwitchDuplicate(t *testing.T) {
	var none stackSwitch
	if none.duplicate(8192, 5) {
		t.Error("no switch: a sample called a duplicate")
	}
	s := stackSwitch{from: 8192, to: 2048, at: 100}
	for _, c := range []struct {
		size uint32
		t    uint64
		dup  bool
	}{
		{8192, 99, false}, {8192, 100, true}, {2048, 99, true}, {2048, 100, false}, {0, 50, false}, {4096, 50, false},
	} {
		if got := s.duplicate(c.size, c.t); got != c.dup {
			t.Errorf("copy %d at %d: duplicate %v, want %v", c.size, c.t, got, c.dup)
		}
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
