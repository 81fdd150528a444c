package agg

// Off-CPU time is kept in a Run of its own whose counts are nanoseconds: an entry is the
// time one thread spent switched out with one stack. The stack's leaf frame says when the
// thread was preempted (still runnable) rather than waiting, and when the kernel gave no
// stack; the reason a thread waited is read from its stack's frames (views.StackReasons).

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
