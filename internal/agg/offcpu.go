package agg

import (
	"cmp"
	"slices"
)

// Off-CPU time is kept in a Run of its own whose counts are nanoseconds: an entry is the
// time one thread spent switched out with one stack. The stack's leaf frame says when the
// thread was preempted (still runnable) rather than waiting, and when the kernel gave no
// stack; the reason a thread waited is read from its stack's frames (offcpu_reasons.go).

// Frames the recorder puts at the leaf of an off-CPU stack.
const (
	// FuncRunnable: the thread was switched out while it could run (preempted): it waited
	// for a CPU, not for an event.
	FuncRunnable = "[runnable]"
	// FuncNoStack: the kernel gave no stack for the switch (user-only recording, or the
	// context-switch event was throttled).
	FuncNoStack = "[no stack]"
	// FuncStarting: a thread or process the target started, runnable from its creation to
	// its first run (below FuncRunnable): it has no stack yet.
	FuncStarting = "[starting]"
	// FuncExiting: a task of the target from its exit record (where its events end) to
	// its last switch out (below FuncRunnable): it waited for a CPU, or ran the kernel's
	// exit code.
	FuncExiting = "[exiting]"
	// ImageSched is the image of those frames.
	ImageSched = "[sched]"
)

// keyBytes is about what a key costs: its state and its index entry.
const keyBytes = 96

// AddWeight adds w (nanoseconds) to the entry of thread tid with chain, taken at time t,
// without a time series. A new stack is refused once the run's raw stacks hold maxBytes
// (0: no bound), and so is a new key once the keys would; AddWeight then returns false and counts nothing.
func (r *Run) AddWeight(pid, tid uint32, t uint64, gen uint32, chain []uint64, w uint64, maxBytes int) bool {
	_, ok := r.AddWeightKey(pid, tid, t, gen, chain, w, maxBytes)
	return ok
}

// AddWeightKey is AddWeight that also returns the key counted (Profile.KeyEntry's index).
func (r *Run) AddWeightKey(pid, tid uint32, t uint64, gen uint32, chain []uint64, w uint64, maxBytes int) (uint32, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	stack, ok := r.raw.Find(chain)
	if !ok {
		if maxBytes > 0 && r.raw.Bytes()+len(chain)*8 > maxBytes {
			return 0, false
		}
		stack = r.raw.Intern(chain)
	}
	k := rawKey{Tid: tid, Pid: pid, Stack: stack, Gen: gen}
	i, ok := r.keyIndex[k]
	if ok {
		r.keys[i].count += w
		r.samples += w
		return i, true
	}
	if maxBytes > 0 && len(r.keys)*keyBytes > maxBytes {
		return 0, false
	}
	r.samples += w
	i = uint32(len(r.keys))
	r.keyIndex[k] = i
	r.keys = append(r.keys, keyState{rawKey: k, count: w, time: t, rstack: -1, leafFunc: -1})
	return i, true
}

// Interval is a thread's time off CPU, from Start to End (CLOCK_MONOTONIC nanoseconds),
// under stack Stack of the run's off-CPU profile (NoStack: not counted, for want of
// memory), ended by a wakeup from thread Waker (0: not known).
type Interval struct {
	Tid, Stack uint32
	Start, End uint64
	Waker      uint32
}

// ThreadNs is a thread's time, in nanoseconds.
type ThreadNs struct {
	Tid uint32 `json:"tid"`
	Ns  uint64 `json:"ns"`
}

// NoStack is the Stack of an interval that was not counted.
const NoStack = ^uint32(0)

// ThreadOffCPU is a thread's time on and off CPU.
type ThreadOffCPU struct {
	OnCPUMs    float64 `json:"on_cpu_ms"`        // from the switch records, else its samples over the sampling frequency
	RunnableMs float64 `json:"runnable_ms"`      // preempted, waiting for a CPU
	OffCPUMs   float64 `json:"off_cpu_ms"`       // waiting for an event (runnable time aside)
	Reason     string  `json:"reason,omitempty"` // the reason with the most of its waiting time
}

// OffCPUThreads adds to rows (Threads of the CPU profile, all of them) each thread's time
// on CPU and off CPU, from off (an off-CPU profile) and reasons (its StackReasons);
// threads seen only off CPU are added. The time on CPU is the thread's share of on (from
// the switch records) for its samples, where on has it, else its samples at freq Hz. Rows
// stay sorted by samples, then by time off CPU, most first, and are cut to n (0: all).
func OffCPUThreads(rows []ThreadRow, off *Profile, reasons []uint8, freq, n int, on *OnCPUTime) []ThreadRow {
	byTid := map[uint32]int{}
	for i := range rows {
		byTid[rows[i].Tid] = i
	}
	names := map[uint32]ThreadInfo{}
	for _, t := range off.Threads {
		names[t.Tid] = t
	}
	sums := map[uint32]*reasonSums{}
	for i := range off.Entries {
		e := &off.Entries[i]
		if _, ok := byTid[e.Tid]; !ok {
			t := names[e.Tid]
			rows = append(rows, ThreadRow{Tid: e.Tid, Pid: e.Pid, Name: t.Name})
			byTid[e.Tid] = len(rows) - 1
		}
		s := sums[e.Tid]
		if s == nil {
			s = &reasonSums{}
			sums[e.Tid] = s
		}
		r := uint8(reasonIndex(ReasonOther))
		if int(e.Stack) < len(reasons) {
			r = reasons[e.Stack]
		}
		s[r] += e.Count
	}
	runnable := reasonIndex(ReasonRunnable)
	for i := range rows {
		r := &rows[i]
		o := &ThreadOffCPU{}
		if ps, ok := on.PerSample(r.Tid); ok {
			o.OnCPUMs = float64(r.Samples) * ps / 1e6
		} else if ns, ok := on.Unsampled(r.Tid); ok {
			o.OnCPUMs = float64(ns) / 1e6
		} else if freq > 0 {
			o.OnCPUMs = float64(r.Samples) * 1000 / float64(freq)
		}
		if s := sums[r.Tid]; s != nil {
			o.RunnableMs = float64(s[runnable]) / 1e6
			var off uint64
			for j := range Reasons {
				if j != runnable {
					off += s[j]
				}
			}
			o.OffCPUMs = float64(off) / 1e6
			waiting := *s
			waiting[runnable] = 0
			o.Reason = waiting.dominant()
		}
		r.OffCPU = o
	}
	slices.SortStableFunc(rows, func(a, b ThreadRow) int {
		if c := cmp.Compare(b.Samples, a.Samples); c != 0 {
			return c
		}
		if c := cmp.Compare(b.OffCPU.OffCPUMs+b.OffCPU.RunnableMs, a.OffCPU.OffCPUMs+a.OffCPU.RunnableMs); c != 0 {
			return c
		}
		return cmp.Compare(a.Tid, b.Tid)
	})
	if n > 0 && len(rows) > n {
		rows = rows[:n]
	}
	return rows
}
