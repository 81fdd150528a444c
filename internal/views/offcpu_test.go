package views

import (
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
)

// offProfile is an off-CPU profile of thread 2: 700 ms in lock under main, 200 ms in
// sleep under main, 100 ms runnable under spin.
func offProfile() *agg.Profile {
	u := func(name string) agg.Frame { return agg.Frame{Func: name, Image: "app", Kind: agg.KindUser} }
	tab := agg.NewFrameTable()
	ids := func(fs ...agg.Frame) []uint32 {
		var out []uint32
		for _, f := range fs {
			out = append(out, tab.Intern(f))
		}
		return out
	}
	p := &agg.Profile{}
	p.FrameStacks = [][]uint32{
		ids(u("pthread_mutex_lock"), u("wait_for_lock"), u("main")),
		ids(u("usleep"), u("nap"), u("main")),
		ids(agg.Frame{Func: agg.FuncRunnable, Image: agg.ImageSched, Kind: agg.KindUnknown}, u("spin"), u("main")),
	}
	p.Stacks = p.FrameStacks
	p.Frames = tab.Frames
	p.Entries = []agg.Entry{{Tid: 2, Pid: 1, Stack: 0, Count: 700e6, LeafFunc: -1}, {Tid: 2, Pid: 1, Stack: 1, Count: 200e6, LeafFunc: -1},
		{Tid: 2, Pid: 1, Stack: 2, Count: 100e6, LeafFunc: -1}}
	p.Threads = []agg.ThreadInfo{{Tid: 2, Pid: 1, Name: "worker"}}
	return p
}

func TestOffCPUViews(t *testing.T) {
	p := offProfile()
	reasons := StackReasons(p)
	rows, ns := OffCPUTop(p, reasons, Filter{}, 0, true)
	if ns != 1e9 {
		t.Errorf("top: %d ns, want 1e9", ns)
	}
	want := map[string]string{"main": ReasonLock, "wait_for_lock": ReasonLock, "nap": ReasonSleep, "spin": ReasonRunnable, agg.FuncRunnable: ReasonRunnable}
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
		if c.Func == agg.FuncRunnable && c.Reason != ReasonRunnable {
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

// TestOnCPUTimeShared: a thread's time on CPU from the switch records is shared among its
// samples, in threads and in a wall profile, by the samples of the whole run: a transform
// that keeps some of them keeps their share. A thread without such time keeps its samples
// over the frequency, one without samples shows its time.
func TestOnCPUTimeShared(t *testing.T) {
	cpu := offProfile() // its stacks stand for CPU stacks here: thread 2, 3 and 2 samples
	cpu.Entries = []agg.Entry{{Tid: 2, Pid: 1, Stack: 0, Count: 3, LeafFunc: -1}, {Tid: 2, Pid: 1, Stack: 1, Count: 1, LeafFunc: -1},
		{Tid: 4, Pid: 1, Stack: 2, Count: 2, LeafFunc: -1}}
	on := NewOnCPUTime([]agg.ThreadNs{{Tid: 2, Ns: 40e6}, {Tid: 3, Ns: 7e6}}, cpu)
	if NewOnCPUTime(nil, cpu) != nil {
		t.Error("no time from switch records, yet an OnCPUTime")
	}
	off := offProfile()
	th := OffCPUThreads([]ThreadRow{{Tid: 2, Pid: 1, Samples: 3}, {Tid: 3, Pid: 1}, {Tid: 4, Pid: 1, Samples: 2}}, off, StackReasons(off), 1000, 0, on)
	got := map[uint32]float64{}
	for _, r := range th {
		got[r.Tid] = r.OffCPU.OnCPUMs
	}
	// Thread 2: 3 of its 4 samples (a transform left one out) of 40 ms; 3: no samples, its
	// 7 ms; 4: no switch-record time, 2 samples at 1000 Hz.
	if want := map[uint32]float64{2: 30, 3: 7, 4: 2}; got[2] != want[2] || got[3] != want[3] || got[4] != want[4] {
		t.Errorf("on CPU %v ms, want %v", got, want)
	}
	for _, q := range []*agg.Profile{cpu, off} { // stacks of locations, one a frame
		q.Stacks, q.Locations = nil, nil
		for _, fs := range q.FrameStacks {
			var st []uint32
			for _, f := range fs {
				st = append(st, uint32(len(q.Locations)))
				q.Locations = append(q.Locations, agg.Location{Lines: []agg.Line{{Func: f}}})
			}
			q.Stacks = append(q.Stacks, st)
		}
	}
	w, n := WallProfile(cpu, off, 1e6, on)
	var onNs, offNs uint64
	for _, e := range w.Entries {
		if int(e.Stack) < n {
			onNs += e.Count
		} else {
			offNs += e.Count
		}
	}
	if onNs != 40e6+2e6 || offNs != 1e9 {
		t.Errorf("wall: %d ns on CPU, %d off; want %d and %d", onNs, offNs, uint64(42e6), uint64(1e9))
	}
}
