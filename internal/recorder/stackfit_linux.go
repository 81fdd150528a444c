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
	published       store.StackFit // what the run's meta says
	// switched is the latest resize: CPU samples of size from (the old events) timed at or
	// after at, and of size to (the new) timed before it, were taken twice.
	switched stackSwitch
}

type stackSwitch struct {
	from, to uint32
	at       uint64
}

// duplicate says whether a CPU sample with a stack copy of size bytes taken at t was also
// taken by the other events while both were open.
func (s stackSwitch) duplicate(size uint32, t uint64) bool {
	if s.to == 0 {
		return false
	}
	return size == s.to && t < s.at || size == s.from && t >= s.at
}

// observe counts a sample unwound with the current copy: high is how much of it the walk
// read, cut whether it ran off its end.
func (f *stackFit) observe(high int, cut bool) {
	f.unwound++
	if cut {
		f.cut++
	}
	f.winN++
	f.winHigh = max(f.winHigh, high)
	if f.winN == fitWindow {
		f.fullHigh, f.full = f.winHigh, true
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
	if size := f.want(); size != 0 {
		rs := r.src.(stackResizer)
		from := rs.StackSize()
		cut, err := rs.ResizeStack(size, r.targetThreads)
		switch {
		case errors.Is(err, perfevent.ErrThreadsChanged) && f.retries < maxRetries:
			f.retries++ // the next window tries again
			return
		case errors.Is(err, perfevent.ErrThreadsChanged):
			err = fmt.Errorf("%w, %d times", err, f.retries+1)
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
			f.switched = stackSwitch{from: uint32(from), to: uint32(size), at: cut}
			for _, w := range r.in.workers {
				w.switched, w.fitSize = f.switched, uint32(size)
			}
		}
	}
	fit := store.StackFit{Max: f.max, Need: f.need, Resizes: f.resizes}
	if fit == f.published {
		return
	}
	f.published = fit
	r.mu.Lock()
	r.meta.StackSize, r.meta.StackFit = f.cur, &fit
	r.mu.Unlock()
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
