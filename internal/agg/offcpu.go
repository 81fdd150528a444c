package agg

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
	// ImageSched is the image of those frames.
	ImageSched = "[sched]"
)

// keyBytes is about what a key costs: its state and its index entry.
const keyBytes = 96

// AddWeight adds w (nanoseconds) to the entry of thread tid with chain, taken at time t,
// without a time series. A new stack is refused once the run's raw stacks hold maxBytes
// (0: no bound), and so is a new key once the keys would; AddWeight then returns false and counts nothing.
func (r *Run) AddWeight(pid, tid uint32, t uint64, gen uint32, chain []uint64, w uint64, maxBytes int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	stack, ok := r.raw.Find(chain)
	if !ok {
		if maxBytes > 0 && r.raw.Bytes()+len(chain)*8 > maxBytes {
			return false
		}
		stack = r.raw.Intern(chain)
	}
	k := rawKey{Tid: tid, Pid: pid, Stack: stack, Gen: gen}
	i, ok := r.keyIndex[k]
	if ok {
		r.keys[i].count += w
		r.samples += w
		return true
	}
	if maxBytes > 0 && len(r.keys)*keyBytes > maxBytes {
		return false
	}
	r.samples += w
	r.keyIndex[k] = uint32(len(r.keys))
	r.keys = append(r.keys, keyState{rawKey: k, count: w, time: t, rstack: -1, leafFunc: -1})
	return true
}
