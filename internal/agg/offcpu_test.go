package agg

import (
	"testing"
)

// offProfile is an off-CPU profile of thread 2: 700 ms in lock under main, 200 ms in
// sleep under main, 100 ms runnable under spin.
func offProfile() *Profile {
	u := func(name string) Frame { return Frame{Func: name, Image: "app", Kind: KindUser} }
	tab := NewFrameTable()
	ids := func(fs ...Frame) []uint32 {
		var out []uint32
		for _, f := range fs {
			out = append(out, tab.Intern(f))
		}
		return out
	}
	p := &Profile{}
	p.FrameStacks = [][]uint32{
		ids(u("pthread_mutex_lock"), u("wait_for_lock"), u("main")),
		ids(u("usleep"), u("nap"), u("main")),
		ids(Frame{Func: FuncRunnable, Image: ImageSched, Kind: KindUnknown}, u("spin"), u("main")),
	}
	p.Stacks = p.FrameStacks
	p.Frames = tab.Frames
	p.Entries = []Entry{{Tid: 2, Pid: 1, Stack: 0, Count: 700e6, LeafFunc: -1}, {Tid: 2, Pid: 1, Stack: 1, Count: 200e6, LeafFunc: -1},
		{Tid: 2, Pid: 1, Stack: 2, Count: 100e6, LeafFunc: -1}}
	p.Threads = []ThreadInfo{{Tid: 2, Pid: 1, Name: "worker"}}
	return p
}

func TestOffCPUViews(t *testing.T) {
	p := offProfile()
	reasons := StackReasons(p)
	rows, ns := OffCPUTop(p, reasons, Filter{}, 0, true)
	if ns != 1e9 {
		t.Errorf("top: %d ns, want 1e9", ns)
	}
	want := map[string]string{"main": ReasonLock, "wait_for_lock": ReasonLock, "nap": ReasonSleep, "spin": ReasonRunnable, FuncRunnable: ReasonRunnable}
	for _, r := range rows {
		if w, ok := want[r.Func]; ok && r.Reason != w {
			t.Errorf("top row %s: reason %q, want %s", r.Func, r.Reason, w)
		}
	}
	if plain, _ := Top(p, Filter{}, 0, true); plain[0].Reason != "" {
		t.Errorf("a CPU top row has a reason: %+v", plain[0])
	}
	root, _ := OffCPUFlame(p, reasons, Filter{}, 0, 0, false)
	if root.Reason != ReasonLock || len(root.Children) != 1 {
		t.Fatalf("flame root %+v, want one child and lock", root)
	}
	for _, c := range root.Children[0].Children { // main's
		if w := want[c.Func]; c.Reason != w {
			t.Errorf("flame node %s: reason %q, want %s", c.Func, c.Reason, w)
		}
	}
	inv, _ := OffCPUFlame(p, reasons, Filter{}, 0, 0, true)
	for _, c := range inv.Children {
		if c.Func == FuncRunnable && c.Reason != ReasonRunnable {
			t.Errorf("inverted flame leaf %s: reason %q", c.Func, c.Reason)
		}
	}

	th := OffCPUThreads([]ThreadRow{{Tid: 2, Pid: 1, Name: "worker", Samples: 50}, {Tid: 3, Pid: 1, Name: "idle"}}, p, reasons, 1000, 0, nil)
	if len(th) != 2 || th[0].Tid != 2 {
		t.Fatalf("threads %+v", th)
	}
	o := th[0].OffCPU
	if o.OnCPUMs != 50 || o.RunnableMs != 100 || o.OffCPUMs != 900 || o.Reason != ReasonLock {
		t.Errorf("worker %+v, want 50 ms on CPU, 100 runnable, 900 off CPU mostly lock", *o)
	}
	if th[1].OffCPU == nil || th[1].OffCPU.OffCPUMs != 0 {
		t.Errorf("idle thread %+v", th[1])
	}
}

// TestAddWeightBound: past its bound, a run refuses new stacks and keys, and keeps
// counting those it has.
func TestAddWeightBound(t *testing.T) {
	r := NewRun()
	a, b := []uint64{1, 2, 3}, []uint64{4, 5, 6}
	if !r.AddWeight(1, 1, 0, 0, a, 10, 200) {
		t.Fatal("the first stack was refused")
	}
	if r.AddWeight(1, 1, 0, 0, b, 10, 1) {
		t.Error("a new stack past the bound was counted")
	}
	if r.AddWeight(1, 2, 0, 0, a, 10, 1) {
		t.Error("a new key past the bound was counted")
	}
	if !r.AddWeight(1, 1, 0, 0, a, 5, 1) {
		t.Error("a known key past the bound was refused")
	}
	if got := r.Samples(); got != 15 {
		t.Errorf("%d ns counted, want 15", got)
	}
}
