package recorder

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/stax-profiler/stax/internal/perfevent"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/store"
)

// The kernel copies a DWARF-mode sample's user stack in the profiled thread's own time,
// as many bytes as the events were opened with, however shallow the stack. Unless the
// user fixed the size (--stack-size), the recording starts with the default copy, measures
// how much of each copy the unwinder reads, and reopens the sampling events with a copy
// that fits the deepest stack seen, with room to spare: a depth-30 C program needs about
// 1 KiB of its 8. Stacks that then outgrow the copy (a deeper phase of the program) are
// seen cut short, and the copy grows back to the default.

// stackResizer is a Source whose CPU-sampling events can be reopened with another stack
// copy (*perfevent.Session opened with ResizableStack).
type stackResizer interface {
	StackSize() int
	// ResizeStack replaces the sampling events of the threads tids lists (and their
	// descendants, by inheritance) and returns the time from which only the new events'
	// samples count.
	ResizeStack(size int, tids func() []int) (cut uint64, err error)
	// RetireStack closes the events the last resize replaced.
	RetireStack()
}

// Fitting's bounds.
const (
	// fitWindow is how many unwound samples a fit looks at: the copy is fitted to the
	// deepest stack of the latest window, so the program's start (the dynamic loader's
	// frames are large) does not size it for the rest of the run.
	fitWindow = 500
	// fitMin is the smallest copy.
	fitMin = 1 << 10
	// fitAlign rounds a fitted copy up.
	fitAlign = 512
	// maxShrinks bounds how often a recording shrinks its copy: a program whose stacks
	// keep changing depth ends with the full copy.
	maxShrinks = 4
	// maxRetries bounds the resizes tried again after the target started threads during
	// one: a program that keeps starting them keeps its copy.
	maxRetries = 20
	// retireAfter is how long, in ns, the replaced events sample beside the new ones: long
	// enough for most threads to be handed over on each CPU they run on (stackFit.handover)
	// when hundreds of busy threads share the CPUs.
	retireAfter = 2_000_000_000
	// retireSoon is how long, in ns, they sample at least: once every thread and CPU they
	// sampled since has been handed over, they are closed (a program with few threads
	// hands them over within a few periods, and the copy cannot change meanwhile).
	retireSoon = 20_000_000
	// The first shrink reopens the sampling events per thread. The kernel then schedules
	// each thread's events out and in at each of its switches (the copies that threads
	// inherited from one parent are swapped whole when one follows another on a CPU), and
	// the part of a period each thread counted on each CPU ends with it. A ping-pong of two
	// threads ran 60% longer, and 500 short busy threads lost a sample each; the copy saves
	// well under a microsecond a sample. So a target with more threads than maxFitThreads,
	// or with several whose switches are more than one every fitSwitchEvery samples, keeps
	// its copy.
	maxFitThreads  = 16
	fitSwitchEvery = 8
)

// stackFit is the ingest stage's account of how much stack copy the samples needed.
type stackFit struct {
	on  bool
	max int // the copy the recording started with: never more
	cur int // the copy the sampling events take now
	// need is the deepest stack of the window the copy was last fitted to.
	need int
	// unwound and cut count the samples unwound with the current copy, and of those the
	// ones that ran off its end; winN and winHigh the current window's samples and the
	// most bytes of a copy one of them read.
	unwound, cut  int
	winN, winHigh int
	// full says a window was completed since the last want, fullHigh its deepest stack.
	full            bool
	fullHigh        int
	resizes, shrunk int
	retries         int // resizes given up because the target started threads meanwhile
	failed          bool
	// held says why the copy was not shrunk (holdFit); switchesAt, switches and samplesAt
	// are when the target's threads' switches were last counted, how many they were and
	// how many samples had been observed (observed counts them all); holdUntil is the
	// window (of windows) before which the next shrink is not looked at.
	held                string
	switchesAt          uint64
	switches, samplesAt uint64
	observed            uint64
	windows, holdUntil  int
	holds               int
	published           store.StackFit // what the run's meta says
	// switched is the resize in progress (its to is 0 when none is): both the old events
	// and the new sample, each thread and CPU is handed over from the old to the new by
	// handover (handed: where each thread and CPU stands, pending how many the old events
	// sampled that wait for the new ones' first sample). retired is when the old events
	// were closed: once the records up to then are read, the resize is over.
	switched stackSwitch
	handed   map[uint64]uint8
	pending  int
	retired  uint64
}

// stackSwitch is a resize: the old events take a copy of from bytes, the new of to, and the
// new had all started at at.
type stackSwitch struct {
	from, to uint32
	at       uint64
}

// Where a thread on a CPU stands in a resize (stackFit.handed).
const (
	pairWaiting = 1 // the old events sampled it, the new ones not yet
	pairHanded  = 2 // the new events sampled it: the old ones' samples no longer count
)

// stackSet is whose events took a CPU sample during a resize.
type stackSet uint8

const (
	setNone stackSet = iota // no resize is in progress
	setOld
	setNew
)

// set says whose events took a CPU sample with a stack copy of size bytes.
func (s stackSwitch) set(size uint32) stackSet {
	switch {
	case s.to == 0:
		return setNone
	case size == s.to:
		return setNew
	case size == s.from:
		return setOld
	}
	return setNone
}

// handover says whether a CPU sample of thread tid on cpu, taken by set's events during a
// resize, counts: the thread's old events' samples on that CPU do until its new events'
// first, then only the new ones' do. Both events count the thread's time on the CPU
// towards their next sample, each from its own start: a thread runs a whole period on the
// new events before their first sample, and its old events have taken one sample in that
// period. Counting both adds half a sample per thread and CPU on average, dropping the new
// event's first loses as much: half the threads and CPUs do each, by a hash.
func (f *stackFit) handover(tid, cpu uint32, set stackSet) bool {
	k := uint64(tid)<<32 | uint64(cpu)
	st := f.handed[k]
	if set == setOld {
		if st == 0 {
			f.handed[k], f.pending = pairWaiting, f.pending+1
		}
		return st != pairHanded
	}
	if st == pairHanded {
		return true
	}
	if st == pairWaiting {
		f.pending--
	}
	f.handed[k] = pairHanded
	return (k*0x9E3779B97F4A7C15)>>63 == 0
}

// observe counts a sample unwound with the current copy: high is how much of it the walk
// read, cut whether it ran off its end.
func (f *stackFit) observe(high int, cut bool) {
	f.unwound++
	f.observed++
	if cut {
		f.cut++
	}
	f.winN++
	f.winHigh = max(f.winHigh, high)
	if f.winN == fitWindow {
		f.fullHigh, f.full = f.winHigh, true
		f.windows++
		f.winN, f.winHigh = 0, 0
	}
}

// want is the copy the samples call for, or 0 to keep the current one.
func (f *stackFit) want() int {
	if !f.on || f.failed {
		return 0
	}
	if f.cur < f.max && f.cut >= max(2, f.unwound/5000) {
		// Deeper stacks than the copy was fitted to: back to the full copy, whose walks
		// measure them.
		return f.max
	}
	full := f.full
	f.full = false
	if f.cut > 0 || !full || f.shrunk >= maxShrinks {
		return 0
	}
	n := fitFor(f.fullHigh)
	if n > f.cur*3/4 {
		return 0 // not worth reopening the events for
	}
	return min(n, f.max)
}

// fitFor is the copy for stacks of need bytes: half again, and 512 bytes for a call or
// two more, rounded up.
func fitFor(need int) int {
	n := need + need/2 + fitAlign
	return max((n+fitAlign-1)/fitAlign*fitAlign, fitMin)
}

// fitStacks reopens the sampling events with the copy the samples call for, if any, and
// publishes the fit: on the ingest goroutine, between steps (no batch is being unwound).
func (r *Recorder) fitStacks() {
	f := &r.in.fit
	if !f.on {
		return
	}
	if f.switched.to != 0 {
		r.endResize()
	} else if size := f.want(); size != 0 && !r.holdFit(size) {
		rs := r.src.(stackResizer)
		from := rs.StackSize()
		cut, err := rs.ResizeStack(size, r.targetThreads)
		switch {
		case errors.Is(err, perfevent.ErrThreadsChanged) && f.retries < maxRetries:
			f.retries++ // the next window tries again
			return
		case errors.Is(err, perfevent.ErrThreadsChanged):
			err = fmt.Errorf("%w, %d times", err, f.retries+1)
		case errors.Is(err, perfevent.ErrNoThreads):
			return // the target has ended: its last records are being read
		}
		f.resizes++
		if err != nil {
			f.failed = true
			r.note("the stack copy stays at %d bytes: %v", from, err)
		} else {
			if size < f.cur {
				f.shrunk++
				f.need = f.fullHigh
			}
			f.cur, f.unwound, f.cut, f.winN, f.winHigh, f.full = size, 0, 0, 0, 0, false
			f.switched, f.retired = stackSwitch{from: uint32(from), to: uint32(size), at: cut}, 0
			if f.handed == nil {
				f.handed = map[uint64]uint8{}
			}
			clear(f.handed)
			f.pending = 0
			for _, w := range r.in.workers {
				w.switched, w.fitSize = f.switched, uint32(size)
			}
		}
	}
	fit := store.StackFit{Max: f.max, Need: f.need, Resizes: f.resizes, Held: f.held}
	if fit == f.published {
		return
	}
	f.published = fit
	r.mu.Lock()
	r.meta.StackSize, r.meta.StackFit = f.cur, &fit
	r.mu.Unlock()
}

// holdFit says whether to keep the copy rather than shrink it to size now: the first shrink
// waits for two counts of the target's switches a window apart, and is given up for a
// while (more windows each time) while the target has too many threads or switches too
// often, as stackFit.held then says.
func (r *Recorder) holdFit(size int) bool {
	f := &r.in.fit
	if size > f.cur || f.resizes > 0 {
		return false // its events are per thread already
	}
	if f.windows < f.holdUntil {
		return true
	}
	tids := r.targetThreads()
	n, now := switchesOf(tids), perfevent.MonotonicNow()
	from, fromN, fromSamples := f.switchesAt, f.switches, f.samplesAt
	f.switchesAt, f.switches, f.samplesAt = now, n, f.observed
	switch {
	case len(tids) > maxFitThreads:
		f.held = fmt.Sprintf("the target has %d threads", len(tids))
	case len(tids) <= 1:
		// Events are swapped whole only between threads whose copies came from one
		// parent: a lone thread's switches cost the same either way.
		f.held = ""
		return false
	case from == 0 || now <= from:
		return true // the next window has the rate
	default:
		perSec := float64(n-min(n, fromN)) * 1e9 / float64(now-from)
		samples := float64(f.observed-fromSamples) * 1e9 / float64(now-from)
		if perSec*fitSwitchEvery <= samples {
			f.held = ""
			return false
		}
		f.held = fmt.Sprintf("the target's threads switch %.0f times a second", perSec)
	}
	f.holds++
	f.holdUntil = f.windows + 1<<min(f.holds, 6)
	return true
}

// switchesOf is how many times threads tids have been switched out so far.
func switchesOf(tids []int) uint64 {
	var n uint64
	for _, tid := range tids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
		if err != nil {
			continue // it ended
		}
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && (k == "voluntary_ctxt_switches" || k == "nonvoluntary_ctxt_switches") {
				if c, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
					n += c
				}
			}
		}
	}
	return n
}

// endResize closes the old events of the resize in progress once the threads they sampled
// since are handed over to the new ones, retireAfter after it at the latest, and ends it
// once every record taken before they closed is read. No other resize starts meanwhile.
func (r *Recorder) endResize() {
	f := &r.in.fit
	if f.retired == 0 {
		now := perfevent.MonotonicNow()
		if now < f.switched.at+retireAfter && (now < f.switched.at+retireSoon || f.pending > 0 || len(f.handed) == 0) {
			return
		}
		r.src.(stackResizer).RetireStack()
		f.retired = perfevent.MonotonicNow()
		return
	}
	if r.in.stepCut <= f.retired && !r.in.stepFinal {
		return
	}
	f.switched = stackSwitch{}
	clear(f.handed)
	for _, w := range r.in.workers {
		w.switched = f.switched
	}
}

// targetThreads lists the live threads of the recorded processes: the target's process
// tree as /proc shows it now, and the processes the records said it forked.
func (r *Recorder) targetThreads() []int {
	pids := descendants(r.meta.Pid)
	for _, p := range r.tracker.Processes() {
		if p.ExitTime == 0 {
			pids = append(pids, p.Pid)
		}
	}
	slices.Sort(pids)
	pids = slices.Compact(pids)
	var tids []int
	for _, pid := range pids {
		if ts, err := proc.ThreadIDs(pid); err == nil {
			tids = append(tids, ts...)
		}
	}
	return tids
}

// descendants lists root and the processes below it, from each process's parent in /proc.
func descendants(root int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return []int{root}
	}
	children := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	out := []int{root}
	for i := 0; i < len(out) && len(out) < 1<<16; i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// parentOf reads a process's parent from /proc/PID/stat (after the command's closing
// parenthesis: state, then ppid).
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}
