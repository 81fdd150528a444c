// Off-CPU time: the kernel writes a record when a thread is switched out and when it is
// switched back in, and sched:sched_switch (or the context-switch event) samples the stack
// of each switch out (perfevent.Config.OffCPU). Both go through the batch in time order with the CPU samples,
// so a stack is unwound and named as theirs are. An interval, a switch out to the thread's
// next switch in, is counted in the run's off-CPU aggregate (an agg.Run whose counts are
// nanoseconds) with the stack of the switch out, marked runnable when the thread was
// preempted rather than waiting.

package recorder

import (
	"cmp"
	"os"
	"strconv"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/perfevent"
	"github.com/stax-profiler/stax/internal/resolve"
	"github.com/stax-profiler/stax/internal/store"
	"slices"
)

// Markers put at the leaf of an off-CPU chain, named by offResolver: not contexts, not
// canonical addresses, not perfrecord.TruncatedMark.
const (
	runnableMark = ^uint64(16384 - 1)
	noStackMark  = ^uint64(16384 - 2)
	startingMark = ^uint64(16384 - 3)
	exitingMark  = ^uint64(16384 - 4)
)

// Bounds on the off-CPU state.
const (
	// maxOffBytes bounds the off-CPU aggregate's raw stacks and keys: intervals with new
	// stacks beyond it are counted as lost.
	maxOffBytes = 64 << 20
	// maxOffThreads bounds the threads followed; threads not mid-interval are forgotten
	// first when it is reached.
	maxOffThreads = 8192
	// stackSlack is how long before its switch-out record the stack sample of a switch may
	// be: the kernel writes both in the same call, on the same CPU.
	stackSlack = 1_000_000
	// maxIntervals bounds the intervals kept with their times (32 bytes each): those past
	// it are counted (store.OffCPUMeta.IntervalsDropped) but not kept.
	maxIntervals = 1 << 20
	// intervalChunk is how many intervals are kept in one allocation.
	intervalChunk = 1 << 14
	// offFlushAfter is how long a thread is off CPU before the time so far is counted,
	// without waiting for its switch in.
	offFlushAfter = 100_000_000
)

// offThread is a thread's off-CPU state.
type offThread struct {
	pid       uint32
	chain     []uint64 // the stack of its last switch-out sample, not yet taken by a switch out
	chainTime uint64   // when it was taken (0: none since it was used)
	// last holds the stack its latest sampled switch out of each kind had (0: waiting,
	// 1: preempted): when the stacks are sampled, a switch out without a sample of its own
	// has the one of its kind.
	last     [2][]uint64
	out      uint64 // when it went out (0: it is on a CPU, or not seen yet)
	in       uint64 // when it came in (0: it is off CPU, or not seen yet): its time on CPU runs from it
	counted  uint64 // up to when its time off CPU is counted (0: none of it yet)
	preempt  bool
	hasStack bool   // last[preempt] is the stack it went out with, or stands for it
	sampled  bool   // it stands for it: the switch out had no stack sample of its own
	fromCPU  bool   // it is the thread's latest CPU sample's (a preemption, waitStacks)
	starting bool   // it is runnable from its creation: its stack is startingMark
	exiting  bool   // it is past its exit record: its stack is exitingMark (offDeath)
	switched bool   // a switch record of it was read
	lost     bool   // part of its time off CPU could not be counted
	key      uint32 // the off-CPU run's key its time is counted under (keyOK)
	keyOK    bool
}

// offCPUState is the ingest stage's, but for its counters, read under Recorder.mu.
type offCPUState struct {
	on      bool
	sampled bool // the stacks of the switches out may be sampled (perfevent.Config.OffCPURate)
	// waitStacks says only the switches out of waiting threads come with a stack
	// (perfevent.Session.WaitStacks): a preemption takes its thread's latest CPU sample's,
	// kept in offThread.last[1] as each is added (offCPUSample). A thread preempted
	// anywhere in its code is a CPU sample taken at the scheduler's tick.
	waitStacks bool
	// stackOuts counts the switches out that come with a stack sample (with waitStacks,
	// the waits), for offRate.
	stackOuts uint64
	// sampling says they are now (offRate); modes are the latest changes of mode, for
	// offKeep. rateFrom and rateOuts are when the target's switch rate was last looked
	// at, and the switches out counted then.
	sampling           bool
	modes              []modeChange
	rateFrom, rateOuts uint64
	// counter counts the target's switches out in the kernel, nil where the source does
	// not (offRate then counts the switch records read).
	counter   switchCounter
	countNext uint64 // when counter may be read next
	isSwitch  func(id uint64) bool
	run       *agg.Run
	threads   map[uint32]*offThread
	counts    store.OffCPUMeta
	chainBuf  []uint64

	// wakers: the sched_waking events are recorded. wakes holds each thread's latest
	// wakeup not yet matched to its switch in; wakeNs and wakeN count, per waker thread
	// and stack (with a leaf naming the woken thread), the time off CPU the wakeups ended
	// and how many they were.
	wakers        bool
	wakes         map[uint32]*pendingWake
	wakeNs, wakeN *agg.Run
	wakeChainBuf  []uint64
	// wakeupsCounted says counts.WakeupsAll is the kernel's count, read last at
	// wakeupsCountedAt (offCountWakeups).
	wakeupsCounted   bool
	wakeupsCountedAt uint64
	// rejected counts the wakeups read that were not the target's (offOwnWakeup, or made
	// in an interrupt), by the samples' periods: the kernel's count includes those the
	// events delivered. self caches which threads are the recorder's own.
	rejected uint64
	self     map[uint32]bool

	// intervals are the intervals with their times, under their keys (agg.Interval's
	// Stack holds the key until offIntervals names it), nIntervals of them, in chunks of
	// intervalChunk: one slice grown by append would copy them all, under Recorder.mu,
	// each time it grew.
	intervals  [][]agg.Interval
	nIntervals int
	// open are the waits counted so far but not ended (offFlush's), up to when they are
	// counted, under Recorder.mu: a live run shows them.
	open map[uint32]agg.Interval

	// onNs is each thread's time on CPU from the switch records, a switch in to the next
	// switch out (or its exit), under Recorder.mu: exact where CPU samples estimate it (a
	// thread that runs in bursts shorter than the sampling period is sampled far less
	// than its share). begin is when the events were enabled: a thread whose first record
	// is a switch out was on CPU from then.
	onNs  map[uint32]uint64
	begin uint64
	// runtime says the time on CPU is the scheduler's (offRuntime), not the switch
	// records'. lastOther is the latest run time read for another thread than its
	// event's (offRuntime).
	runtime   bool
	lastOther runtimeRead
	// deaths says each task's last switch out is read (offDeath): exited holds the
	// tasks past their exit record, not yet switched out for the last time.
	deaths bool
	exited map[uint32]exitedTask
}

// pendingWake is a wakeup: who made it, when, and its stack.
type pendingWake struct {
	pid, tid uint32
	time     uint64
	chain    []uint64
}

// wakeeMark | tid leads a waker's chain: the thread it woke (named by offResolver).
const (
	wakeeMark = uint64(0xffff_fffe_0000_0000)
	wakeeMask = uint64(0xffff_ffff)
)

func newOffCPU() offCPUState {
	return offCPUState{run: agg.NewRun(), threads: map[uint32]*offThread{}, wakes: map[uint32]*pendingWake{}, wakeNs: agg.NewRun(), wakeN: agg.NewRun(),
		open: map[uint32]agg.Interval{}, onNs: map[uint32]uint64{}}
}

// offOwnWakeup says whether a wakeup of thread wakee, read from a sched_waking event as
// made by thread tid of process pid (in task context), is the target's: tid is one of its
// threads, and wakee is not one of the recorder's. The kernel delivers a wakeup of a
// target thread to that thread's events too, whoever made it (another process, or the
// idle task for a timer's expiry); and a target thread that writes a record past a ring's
// watermark wakes the recorder's reader.
func (r *Recorder) offOwnWakeup(pid, tid, wakee uint32) bool {
	if pid == 0 || tid == 0 {
		return false
	}
	if th, ok := r.tracker.Thread(int(tid)); !ok || th.Pid != int(pid) {
		if th, ok := r.off.threads[tid]; !ok || th.pid != pid {
			return false
		}
	}
	return !r.offSelf(wakee)
}

// offSelf says whether thread tid is one of the recorder's own.
func (r *Recorder) offSelf(tid uint32) bool {
	o := &r.off
	if self, ok := o.self[tid]; ok {
		return self
	}
	if o.self == nil || len(o.self) >= maxOffThreads {
		o.self = map[uint32]bool{}
	}
	_, err := os.Stat("/proc/self/task/" + strconv.FormatUint(uint64(tid), 10))
	o.self[tid] = err == nil
	return err == nil
}

// offWaking takes a wakeup of thread wakee by thread tid at time t, made with chain.
func (r *Recorder) offWaking(pid, tid, wakee uint32, t uint64, chain []uint64) {
	r.offWakingSampled(pid, tid, wakee, t, 1, chain)
}

// offWakingSampled is offWaking for a sample that stands for period wakeups (1 unless
// they are sampled).
func (r *Recorder) offWakingSampled(pid, tid, wakee uint32, t uint64, period uint32, chain []uint64) {
	o := &r.off
	w := o.wakes[wakee]
	if w == nil {
		if len(o.wakes) >= maxOffThreads {
			clear(o.wakes)
		}
		w = &pendingWake{}
		o.wakes[wakee] = w
	}
	w.pid, w.tid, w.time = pid, tid, t
	w.chain = append(w.chain[:0], chain...)
	r.mu.Lock()
	o.counts.Wakeups++
	if !o.wakeupsCounted {
		o.counts.WakeupsAll += uint64(max(period, 1))
	}
	r.mu.Unlock()
}

// wakeupCounter is a Source that counts the target's wakeups in the kernel while it
// samples their stacks (*perfevent.Session).
type wakeupCounter interface{ WakeupsCounted() (uint64, bool) }

// offCountWakeups takes the kernel's count of the target's wakeups as WakeupsAll, once an
// offRateWindow and at the end: the samples' periods are no estimate of it
// (perfevent.Session.WakeupsCounted).
func (r *Recorder) offCountWakeups(t uint64, final bool) {
	o := &r.off
	wc, ok := r.src.(wakeupCounter)
	if !o.on || !o.wakers || !ok || (!final && t < o.wakeupsCountedAt+offRateWindow) {
		return
	}
	o.wakeupsCountedAt = t
	if !o.sampling && o.counts.SampledTimes == 0 {
		// Every wakeup has had its stack taken so far: those seen are all there were.
		return
	}
	n, ok := wc.WakeupsCounted()
	if !ok {
		return
	}
	r.mu.Lock()
	o.wakeupsCounted = true
	// The samples read so far may include wakeups made after the count was read; the
	// count includes wakeups the events delivered that were not the target's.
	o.counts.WakeupsAll = max(n-min(n, o.rejected), o.counts.Wakeups)
	r.mu.Unlock()
}

// offWoken counts the wakeup that ended thread tid's wait from out to in, if one was seen,
// and returns its waker (0: none).
func (r *Recorder) offWoken(tid uint32, out, in uint64) uint32 {
	o := &r.off
	w := o.wakes[tid]
	if w == nil {
		return 0
	}
	delete(o.wakes, tid)
	if w.time < out || w.time > in {
		return 0 // a wakeup of an earlier wait, or none seen for this one
	}
	chain := append(o.wakeChainBuf[:0], wakeeMark|uint64(tid))
	chain = append(chain, w.chain...)
	o.wakeChainBuf = chain
	gen := r.res.Generation(w.pid, w.time)
	if o.wakeNs.AddWeight(w.pid, w.tid, w.time, gen, chain, in-out, maxOffBytes/4) {
		o.wakeN.AddWeight(w.pid, w.tid, w.time, gen, chain, 1, maxOffBytes/4)
		r.mu.Lock()
		o.counts.Woken++
		r.mu.Unlock()
	}
	return w.tid
}

// offInterval keeps thread tid's interval from out to in, ended by waker.
func (r *Recorder) offInterval(tid uint32, th *offThread, out, in uint64, waker uint32) {
	o := &r.off
	key := agg.NoStack
	if th.keyOK {
		key = th.key
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(o.open, tid)
	if o.nIntervals >= maxIntervals {
		o.counts.IntervalsDropped++
		return
	}
	if o.nIntervals%intervalChunk == 0 {
		o.intervals = append(o.intervals, make([]agg.Interval, 0, intervalChunk))
	}
	last := &o.intervals[len(o.intervals)-1]
	*last = append(*last, agg.Interval{Tid: tid, Stack: key, Start: out, End: in, Waker: waker})
	o.nIntervals++
}

func (r *Recorder) offThread(pid, tid uint32) *offThread {
	o := &r.off
	th := o.threads[tid]
	if th != nil {
		return th
	}
	if len(o.threads) >= maxOffThreads {
		for t, x := range o.threads {
			if x.out == 0 {
				delete(o.threads, t)
			}
		}
		if len(o.threads) >= maxOffThreads {
			clear(o.threads) // every thread followed is off CPU: start again
		}
	}
	th = &offThread{pid: pid}
	o.threads[tid] = th
	r.mu.Lock()
	// The threads followed: those that exited are forgotten (offExit), not uncounted.
	o.counts.Threads = max(o.counts.Threads, len(o.threads))
	r.mu.Unlock()
	return th
}

// offStack takes the stack a thread is being switched out with.
func (r *Recorder) offStack(pid, tid uint32, t uint64, chain []uint64) {
	th := r.offThread(pid, tid)
	th.chain = append(th.chain[:0], chain...)
	th.chainTime = t
}

// offCPUSample keeps the stack of a CPU sample of thread tid: the one its next preemption
// stands under (offCPUState.waitStacks).
func (r *Recorder) offCPUSample(pid, tid uint32, chain []uint64) {
	th := r.offThread(pid, tid)
	th.last[1] = append(th.last[1][:0], chain...)
}

// offSwitch takes a switch of thread tid out (preempted or not) or in at time t.
func (r *Recorder) offSwitch(pid, tid uint32, t uint64, out, preempt bool) {
	o := &r.off
	th := r.offThread(pid, tid)
	// Switch records alternate, out and in: one missing was lost (the thread's first may
	// be an in: it was switched out when the recording began).
	unpaired := th.switched && out == (th.out != 0)
	first := !th.switched
	th.switched = true
	r.mu.Lock()
	o.counts.Switches++
	if unpaired {
		o.counts.Unpaired++
	}
	r.mu.Unlock()
	if out {
		if from := th.in; from != 0 || first && r.offSinceBegin(tid) {
			if from == 0 {
				from = o.begin // on CPU since the events were enabled
			}
			r.offOnCPU(tid, from, t)
		}
		th.in = 0
		if !preempt || !o.waitStacks {
			o.stackOuts++
		}
		if unpaired && th.counted > th.out {
			// Its switch in was lost: the interval ends where its time was counted up to
			// (offFlush), so that the intervals hold all the time the aggregate does.
			r.offInterval(tid, th, th.out, th.counted, 0)
		}
		th.counted, th.keyOK, th.lost, th.starting = 0, false, false, false
		th.out, th.preempt, th.pid = t, preempt, pid
		k := kindOf(preempt)
		own := th.chainTime != 0 && th.chainTime <= t && t-th.chainTime < stackSlack
		th.chainTime = 0
		th.hasStack = own
		switch {
		case own:
			th.chain, th.last[k] = th.last[k], th.chain
		case preempt && o.waitStacks && len(th.last[k]) > 0:
			th.hasStack, th.fromCPU = true, true
		case o.sampled && len(th.last[k]) > 0:
			th.hasStack, th.sampled = true, true
		}
		return
	}
	th.in = t
	r.offEnd(tid, th, t)
}

// offEnd ends thread tid's interval off CPU, if one is open, at t.
func (r *Recorder) offEnd(tid uint32, th *offThread, t uint64) {
	o := &r.off
	if th.out == 0 || t < th.out {
		th.out = 0
		return // its switch out came before the recording began
	}
	r.offAccount(tid, th, t)
	var waker uint32
	if o.wakers && !th.preempt {
		waker = r.offWoken(tid, th.out, t)
	}
	r.offInterval(tid, th, th.out, t, waker)
	r.mu.Lock()
	o.counts.Intervals++
	if !th.hasStack && !th.starting && !th.exiting {
		o.counts.NoStack++
	}
	if th.sampled {
		o.counts.Sampled++
	}
	if th.fromCPU {
		o.counts.PreemptedCPU++
	}
	if th.lost {
		o.counts.Lost++
	}
	r.mu.Unlock()
	th.out, th.counted, th.hasStack, th.sampled, th.fromCPU, th.lost, th.keyOK, th.starting = 0, 0, false, false, false, false, false, false
}

func kindOf(preempt bool) int {
	if preempt {
		return 1
	}
	return 0
}

// offAccount counts thread tid's time off CPU from what was counted of its interval so far
// up to t.
func (r *Recorder) offAccount(tid uint32, th *offThread, t uint64) {
	o := &r.off
	from := max(th.out, th.counted)
	if t <= from {
		return
	}
	d := t - from
	chain := o.chainBuf[:0]
	if th.preempt {
		chain = append(chain, runnableMark)
	}
	switch {
	case th.starting:
		chain = append(chain, startingMark)
	case th.exiting:
		chain = append(chain, exitingMark)
	case th.hasStack:
		chain = append(chain, th.last[kindOf(th.preempt)]...)
	default:
		chain = append(chain, noStackMark)
	}
	o.chainBuf = chain
	th.counted = t
	key, ok := o.run.AddWeightKey(th.pid, tid, th.out, r.res.Generation(th.pid, th.out), chain, d, maxOffBytes)
	if ok {
		th.key, th.keyOK = key, true
	} else {
		th.lost = true
		r.mu.Lock()
		o.counts.LostNs += d
		r.mu.Unlock()
	}
}

// offSinceBegin says whether thread tid, whose first switch record is a switch out, was
// on CPU since the events were enabled: it was there then (a thread started since has a
// switch in first, and one that exited has no records after).
func (r *Recorder) offSinceBegin(tid uint32) bool {
	if r.off.begin == 0 {
		return false
	}
	th, ok := r.tracker.Thread(int(tid))
	return !ok || th.StartTime <= r.off.begin && th.ExitTime == 0
}

// offOnCPU counts thread tid's time on CPU from from to to.
func (r *Recorder) offOnCPU(tid uint32, from, to uint64) {
	if to <= from || r.off.runtime {
		return
	}
	r.mu.Lock()
	if _, ok := r.off.onNs[tid]; ok || len(r.off.onNs) < 4*maxOffThreads {
		r.off.onNs[tid] += to - from
	}
	r.mu.Unlock()
}

// offExit ends thread tid's state at its exit at t: the kernel writes no switch record of
// it past its exit record (its events go with it), so its time on CPU ends there, and so
// does an interval off CPU still open (a switch in lost).
func (r *Recorder) offExit(tid uint32, t uint64) {
	o := &r.off
	th := o.threads[tid]
	if th == nil {
		return
	}
	if th.in != 0 {
		r.offOnCPU(tid, th.in, t)
	} else if th.out != 0 {
		r.offEnd(tid, th, t)
	}
	delete(o.threads, tid) // Threads still counts it: followed
	delete(o.wakes, tid)
	r.offExited(th.pid, tid, t)
}

// offFork starts the state of thread tid of process pid, created at t: it is runnable
// from then until its first switch in, which the kernel records, but no switch out
// before it (the time a new process waits for a CPU: on a busy machine, much of a short
// one's life).
func (r *Recorder) offFork(pid, tid uint32, t uint64) {
	o := &r.off
	if th := o.threads[tid]; th != nil && th.switched {
		return // its records came first (rings are read in time order: not expected)
	}
	th := r.offThread(pid, tid)
	th.switched = true
	th.out, th.preempt, th.pid, th.starting = t, true, pid, true
	th.counted, th.keyOK, th.lost, th.hasStack, th.sampled, th.fromCPU = 0, false, false, false, false, false
}

// offFlush counts, up to t, the time of the threads off CPU for longer than offFlushAfter
// since it was last counted: a thread that waits long (or for ever) shows in the live run,
// and one still waiting when the recording ends is counted up to its end.
func (r *Recorder) offFlush(t uint64, final bool) {
	if !r.off.on {
		return
	}
	for tid, th := range r.off.threads {
		if final && th.in != 0 {
			r.offOnCPU(tid, th.in, t) // on CPU when the recording ended
			th.in = t
		}
		if th.out != 0 && t > th.out && (final || t-max(th.out, th.counted) >= offFlushAfter) {
			r.offAccount(tid, th, t)
			if final {
				r.offInterval(tid, th, th.out, t, 0)
			} else if th.keyOK && len(r.off.open) < maxOffThreads {
				r.mu.Lock()
				r.off.open[tid] = agg.Interval{Tid: tid, Stack: th.key, Start: th.out, End: t}
				r.mu.Unlock()
			}
		}
	}
}

// offSampler is a Source whose off-CPU stacks can be sampled (*perfevent.Session).
type offSampler interface{ SampleOffCPU(on bool) error }

// offRateWindow is how often, in ns, the target's switch rate is looked at by offRate.
const offRateWindow = 100_000_000

// offCountEvery is how often at most, in ns, offRate reads the kernel's count.
const offCountEvery = 10_000_000

// switchCounter is a Source that counts the target's switches out in the kernel
// (*perfevent.Session).
type switchCounter interface{ SwitchOutsCounted() (uint64, bool) }

// modeChange is a change of offCPUState.sampling: stacks taken from at on are the
// sampling events' (or the every-switch events').
type modeChange struct {
	at       uint64
	sampling bool
}

// maxModes bounds the changes of mode kept for offKeep: they are at least offRateWindow
// apart, so this many cover a reader that far behind the kernel.
const maxModes = 64

// offRate looks at the target's switch rate once a window: while it switches out more
// than the stack rate a second, the stacks are sampled at that rate (at once, when a
// window has had its share before its end); from when it switches out less than half as
// often again, every one is taken. The rate is the kernel's count
// over the time now where the source counts the switches (the ingest stage calls it after
// each batch, so that a reader far behind its rings, which are then filling with stacks,
// still changes the mode on time); otherwise that of the switch records read up to cut.
func (r *Recorder) offRate(cut uint64) {
	o := &r.off
	smp, ok := r.src.(offSampler)
	if !o.on || !o.sampled || !ok {
		return
	}
	t, outs := cut, o.stackOuts
	if o.counter != nil {
		// Reading the count reads every event (and the copies the threads inherited):
		// spaced so that it takes at most a hundredth of the time.
		t = perfevent.MonotonicNow()
		if t < o.countNext {
			return
		}
		n, ok := o.counter.SwitchOutsCounted()
		if !ok {
			return
		}
		o.countNext = t + max(offCountEvery, 100*(perfevent.MonotonicNow()-t))
		outs = n
		r.mu.Lock()
		o.counts.OutsCounted = n
		r.mu.Unlock()
	}
	if o.rateFrom == 0 || t < o.rateFrom || outs < o.rateOuts {
		o.rateFrom, o.rateOuts = t, outs
		return
	}
	rate := uint64(o.counts.StackRate)
	n, d := outs-o.rateOuts, t-o.rateFrom
	want := o.sampling
	switch {
	case !o.sampling && n*1_000_000_000 > rate*offRateWindow:
		// Past the window's share of stacks already: a target that starts switching
		// fast (with DWARF stacks, 8 KiB a wait) is sampled from now, not a window on.
		want = true
	case d < offRateWindow:
		return
	case n*1_000_000_000/d > rate:
		want = true
	case n*1_000_000_000/d < rate/2:
		want = false
	}
	o.rateFrom, o.rateOuts = t, outs
	if want == o.sampling {
		return
	}
	// A stack taken at t is kept from the events of the mode at t (offKeep): from when
	// every one is taken again, a few may be missed, but none is counted twice.
	from := perfevent.MonotonicNow()
	if want {
		// Before the events that take every stack stop: a thread started meanwhile has
		// both, not neither.
		r.offFollowNewThreads(true)
	}
	if err := smp.SampleOffCPU(want); err != nil {
		r.note("%v", err)
		if want {
			r.offFollowNewThreads(false)
		}
		return
	}
	if !want {
		r.offFollowNewThreads(false)
	}
	if want {
		from = perfevent.MonotonicNow()
	}
	o.sampling = want
	if len(o.modes) == maxModes {
		o.modes = append(o.modes[:0], o.modes[1:]...)
	}
	o.modes = append(o.modes, modeChange{from, want})
	r.mu.Lock()
	if want {
		o.counts.SampledTimes++
	}
	r.mu.Unlock()
}

// offKeep says whether to keep a stack of a switch out or a wakeup taken at t by an event
// that takes every one (every) or by one that samples them: the one of the mode at t.
func (r *Recorder) offKeep(t uint64, every bool) bool {
	o := &r.off
	if !o.sampled {
		return true
	}
	sampling := false // every stack is taken until the first change
	for i := len(o.modes) - 1; i >= 0; i-- {
		if o.modes[i].at <= t {
			sampling = o.modes[i].sampling
			break
		}
		if i == 0 {
			sampling = !o.modes[0].sampling // before the oldest change kept
		}
	}
	return every != sampling
}

// offCPUMeta is the run's off-CPU counters, nil when it is not recorded.
func (r *Recorder) offCPUMeta() *store.OffCPUMeta {
	if !r.off.on {
		return nil
	}
	r.mu.Lock()
	m := r.off.counts
	m.OnCPU = make([]agg.ThreadNs, 0, len(r.off.onNs))
	for tid, ns := range r.off.onNs {
		m.OnCPU = append(m.OnCPU, agg.ThreadNs{Tid: tid, Ns: ns})
	}
	r.mu.Unlock()
	slices.SortFunc(m.OnCPU, func(a, b agg.ThreadNs) int { return cmp.Compare(a.Tid, b.Tid) })
	return &m
}

// offCPUProfile names the off-CPU aggregate's new stacks and returns it, nil when it is
// not recorded.
func (r *Recorder) offCPUProfile(threads []agg.ThreadInfo) *agg.Profile {
	if !r.off.on {
		return nil
	}
	r.off.run.Resolve(offResolver{r.res})
	return r.off.run.Profile(threads)
}

// offIntervals is the intervals kept, each under its stack of p (the off-CPU profile),
// written over buf's memory (nil: new memory).
func (r *Recorder) offIntervals(p *agg.Profile, buf []agg.Interval) []agg.Interval {
	if p == nil {
		return nil
	}
	r.mu.Lock()
	out := slices.Grow(buf[:0], r.off.nIntervals+len(r.off.open))
	for _, c := range r.off.intervals {
		out = append(out, c...)
	}
	for _, iv := range r.off.open {
		out = append(out, iv)
	}
	r.mu.Unlock()
	for i := range out {
		iv := &out[i]
		if k := iv.Stack; k != agg.NoStack && int(k) < len(p.KeyEntry) && p.KeyEntry[k] >= 0 && int(p.KeyEntry[k]) < len(p.Entries) {
			iv.Stack = p.Entries[p.KeyEntry[k]].Stack
		} else {
			iv.Stack = agg.NoStack
		}
	}
	return out
}

// wakersProfiles names the wakers' aggregates' new stacks and returns them (time ended,
// wakeups), nil when wakers are not recorded.
func (r *Recorder) wakersProfiles(threads []agg.ThreadInfo) (ns, n *agg.Profile) {
	if !r.off.on || !r.off.wakers {
		return nil, nil
	}
	r.off.wakeNs.Resolve(offResolver{r.res})
	r.off.wakeN.Resolve(offResolver{r.res})
	return r.off.wakeNs.Profile(threads), r.off.wakeN.Profile(threads)
}

// offResolver names the off-CPU chains: their markers, then the stack as the CPU
// samples' are named.
type offResolver struct{ *resolve.Resolver }

func (o offResolver) Resolve(pid uint32, t uint64, chain []uint64, out []agg.Site) ([]agg.Site, int, uint64, int) {
	for len(chain) > 0 && (chain[0] == runnableMark || chain[0] == noStackMark || chain[0] == startingMark || chain[0] == exitingMark || chain[0]&^wakeeMask == wakeeMark) {
		name := agg.FuncRunnable
		switch {
		case chain[0] == noStackMark:
			name = agg.FuncNoStack
		case chain[0] == startingMark:
			name = agg.FuncStarting
		case chain[0] == exitingMark:
			name = agg.FuncExiting
		case chain[0]&^wakeeMask == wakeeMark:
			name = agg.WakeeFunc(uint32(chain[0] & wakeeMask))
		}
		out = append(out, agg.Site{Frame: agg.Frame{Func: name, Image: agg.ImageSched, Kind: agg.KindUnknown}})
		chain = chain[1:]
	}
	return o.Resolver.Resolve(pid, t, chain, out)
}
