// Package perfevent opens perf events for a process tree and maps their ring buffers. It is
// the only package that talks to perf_event_open.
package perfevent

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/ring"
)

// Config says what to sample.
type Config struct {
	// Pids are the threads to attach to; for a launched command, the gate's pid alone.
	Pids []int
	// SystemWide samples every process on every CPU (Pids is ignored): root or CAP_PERFMON.
	SystemWide bool
	// Freq is the sampling frequency in Hz.
	Freq int
	// EnableOnExec starts the events at the target's next exec (launch mode).
	EnableOnExec bool
	// UserOnly excludes kernel samples and callchains.
	UserOnly bool
	// RingPages is the data area size in pages per CPU (a power of two); 0 sizes it from
	// the frequency with RingPagesFor.
	RingPages int
	// CallGraph is "fp" (the kernel's frame-pointer callchain, the default when empty) or
	// "dwarf": samples also carry BP, SP, IP and StackSize bytes of the user stack.
	CallGraph string
	// StackSize is the user stack copy in bytes for "dwarf" (rounded down to 8; 0 means
	// DefaultStackSize).
	StackSize int
	// NoUserFPChain ("dwarf" only) leaves the user part out of the kernel's callchain, as
	// perf record --call-graph dwarf does. For a program built without frame pointers the
	// kernel's walk starts from rbp holding data and faults or reads garbage, in the
	// program's own time (some 4% of its CPU at 4999 Hz), for nothing: frameless frames
	// beyond the stack copy cannot be followed anyway.
	NoUserFPChain bool
	// OffCPU also records when the threads are switched out and in (PERF_RECORD_SWITCH),
	// and the stack each is switched out with: a context-switch event sampled at every
	// switch, with the CPU samples' call graph, into the same rings. Samples then carry
	// their event's id (PERF_SAMPLE_IDENTIFIER), which Session.IsSwitchEvent tells apart.
	// Not with SystemWide.
	OffCPU bool
	// OffCPURate, when above 0, lets the stacks of switches out (and of wakeups) be
	// sampled at about that many a second per thread and CPU (SampleOffCPU) instead of
	// taken at every one: the kernel skips more the more often a thread switches. The
	// switch records, and so the time off CPU, are still every one.
	OffCPURate int
	// ContextSwitchEvent takes the stacks of switches out from the context-switch
	// software event even where sched:sched_switch could be opened (Session.WaitStacks).
	ContextSwitchEvent bool
	// NoWakers leaves sched:sched_waking closed: no wakers, and none of what the
	// tracepoint costs a target at each of its wakeups.
	NoWakers bool
	// NoRuntime leaves sched:sched_stat_runtime closed: the time on CPU is then the
	// switch records' (runtime_linux.go).
	NoRuntime bool
	// NoDeaths leaves closed the CPU-wide events that give each task's last switch out
	// (exit_linux.go).
	NoDeaths bool
	// ResizableStack ("dwarf", not SystemWide) lets Session.ResizeStack reopen the CPU
	// sampling events with another stack copy. Closing an event ends its inherited copies,
	// so the side-band records (mmaps, comms, forks and exits) and the rings go to a dummy
	// event per CPU, which stays; the sampling events write into its ring.
	ResizableStack bool
	// CPUWide samples the CPU through one event per CPU that sees every task, where the
	// kernel allows it (root, CAP_PERFMON or kernel.perf_event_paranoid <= 0; not with
	// EnableOnExec, ResizableStack or SystemWide): the reader keeps the samples of the target's processes
	// (Session.CPUWide). A per-thread event is switched out and in with its thread at each
	// of its context switches, and a cpu-clock event's timer with it: a program that
	// switches 100,000 times a second ran 3.8 times as long under per-thread sampling (perf
	// record's, or stax's), and as long as alone under CPU-wide sampling. The side band,
	// the rings and the off-CPU events stay the target's own.
	CPUWide bool
	// Events are the events to sample (stax record -e; eventspec.go), resolved
	// (ResolveEvent): the first takes the place of cycles or cpu-clock, the others are
	// opened beside it, per thread, into the same rings (not CPU-wide, nor resizable).
	// Empty: cycles, else cpu-clock, at Freq.
	Events []EventSpec
	// Counters are read with each sample of the first event: a group under it per thread
	// and CPU (counters_linux.go; not CPU-wide), reopened with it when the stack copy is
	// resized.
	Counters []EventSpec
}

// Session is a set of open events, one ring per CPU.
type Session struct {
	Event     string // "cycles" or "cpu-clock"
	UserOnly  bool
	Note      string // a line to show the user, e.g. why kernel samples are off
	MaxStack  int
	RingPages int // data pages per CPU ring

	// CPUWide says the CPU-sampling events are one per CPU, for every task
	// (Config.CPUWide): samples of other processes are the reader's to drop.
	CPUWide bool
	// OffCPU says the context-switch events are open (Config.OffCPU).
	OffCPU bool
	// Wakers says the sched:sched_waking events are open too (with OffCPU, where
	// permitted): their samples carry the woken thread in WakingPid of their raw data.
	Wakers    bool
	WakingPid TraceField
	// WakingFlags is where their raw data holds the trace entry's flags: a wakeup made in
	// an interrupt (IRQContextFlags) is not the woken thread's waker's, whoever ran on
	// the CPU. The events are filtered in the kernel (taskWakeFilter) where it takes the
	// filter; the flags let the reader drop those that pass where it does not.
	WakingFlags TraceField
	// Runtime says the sched:sched_stat_runtime events are open too (with OffCPU, where
	// permitted): their samples carry, in their raw data, the run time the scheduler
	// added (RuntimeNs) to a thread (RuntimePid). See runtime_linux.go.
	Runtime               bool
	RuntimePid, RuntimeNs TraceField
	// Deaths says the CPU-wide sched:sched_switch events that give each task's last
	// switch out are open (with OffCPU, where permitted): their samples carry the task
	// in DeadPid of their raw data. See exit_linux.go.
	Deaths  bool
	DeadPid TraceField
	// OffCPURate is the rate the switches' and wakeups' stacks are sampled at, per second
	// per thread and CPU, while SampleOffCPU says so (0: never): Config.OffCPURate within
	// the kernel's bound.
	OffCPURate int
	// WaitStacks says the stacks of switches out come from sched:sched_switch, filtered
	// in the kernel to the switches of threads that wait: a preemption, where the thread
	// could still run, copies no stack (the context-switch event copies one at every
	// switch, thousands a second for a target with more busy threads than cores). Where
	// the tracepoint cannot be opened (it takes root or CAP_PERFMON), the context-switch
	// event takes every switch's stack.
	WaitStacks bool
	switchTP   tracepoint

	// everyFDs are, with OffCPURate, the events that take the stack of every switch out
	// and wakeup, beside those that sample them: disabled while offSampled.
	everyFDs   []int
	everyIDs   map[uint64]bool
	offSampled bool

	fds   []int
	rings []*mappedRing
	// sampleFDs are the CPU-sampling events (also in fds), which ResizeStack replaces;
	// retiring the ones it replaced, open (and in fds) until RetireStack.
	sampleFDs []int
	retiring  []int
	// resizable says the side band and the rings are the dummy events'
	// (Config.ResizableStack); cfg, evType and evConfig rebuild the sampling events.
	resizable bool
	cfg       Config
	evType    uint32
	evConfig  uint64
	// off says the events are stopped (not enabled yet, or disabled): events ResizeStack
	// opens then start stopped too.
	off bool
	// switchIDs are the ids of the context-switch events.
	switchIDs map[uint64]bool
	// wakingIDs are the ids of the sched_waking events, waking its tracepoint.
	wakingIDs map[uint64]bool
	waking    tracepoint
	// runtimeIDs are the ids of the sched_stat_runtime events, runtimeFDs the events.
	runtimeIDs map[uint64]bool
	runtimeFDs []int
	// deadIDs are the ids of the events openDeaths opened.
	deadIDs map[uint64]bool
	// newFDs and newIDs are the events FollowNewThreads opened (their ids are in
	// switchIDs too). stoppedIDs are those StopNewThreads closed, at stoppedAt: their
	// records may wait in the rings still, so they stay switch events until
	// ForgetStoppedThreads is told the records up to then are read.
	newFDs     []int
	newIDs     map[uint64]bool
	stoppedIDs map[uint64]bool
	stoppedAt  uint64
	// wakingCountFDs are the sched_waking events that sample, with OffCPURate: they count
	// every wakeup whatever they sample, and are never disabled (WakeupsCounted).
	wakingCountFDs []int
	// switchCountFDs are the context-switch events that sample, with OffCPURate: they
	// count every switch out they see (the waits, with WaitStacks) whatever they sample,
	// and are never disabled (SwitchOutsCounted).
	switchCountFDs []int

	epfd int // epoll over the rings, woken when one fills past its watermark
	// epoll holds epfd in Go's network poller when it could be put there: Wait then parks
	// its goroutine instead of holding a thread in epoll_wait, which the runtime's monitor
	// thread takes back after 10 ms and then polls every 20 us, at a cost of a few percent
	// of a core while the recorder's other goroutines come and go.
	epoll    *os.File
	epollRC  syscall.RawConn
	spans    []ring.Span
	events   eventState   // events_linux.go
	counters counterState // counters_linux.go
}

// switchTarget is a thread and CPU the context-switch events are opened for.
type switchTarget struct {
	pid, cpu int
	r        *mappedRing
}

// MaxStack is the deepest callchain samples carry: kernel.perf_event_max_stack, at most 127.
// A chain this long was cut by the kernel.
func MaxStack() int {
	maxStack := 127
	if b, err := os.ReadFile("/proc/sys/kernel/perf_event_max_stack"); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && v > 0 && v < maxStack {
			maxStack = v
		}
	}
	return maxStack
}

// Open opens the events. On EACCES for kernel sampling it retries user-only and says so in
// Session.Note.
func Open(cfg Config) (*Session, error) {
	if cfg.Freq <= 0 {
		cfg.Freq = 999
	}
	cpus, err := OnlineCPUs()
	if err != nil {
		return nil, err
	}
	maxStack := MaxStack()
	if cfg.RingPages == 0 {
		// Sized automatically: halve it while the locked-memory limit refuses it.
		stackCopy := 0
		if cfg.CallGraph == "dwarf" {
			stackCopy = int(stackSize(cfg)) + 32 // the copy, its sizes and three registers
		}
		pages := RingPagesFor(cfg.Freq, maxStack, stackCopy)
		if cfg.OffCPU && !cfg.SystemWide {
			// Every switch out writes a stack and two switch records into the same rings: a
			// program that switches often fills them faster than it is sampled.
			pages = min(pages*offCPURingFactor, 8192)
		}
		for ; ; pages /= 2 {
			cfg.RingPages = pages
			s, err := Open(cfg)
			var re *RingError
			if err == nil || !errors.As(err, &re) || pages <= 128 {
				return s, err
			}
		}
	}
	if cfg.RingPages < 1 || cfg.RingPages&(cfg.RingPages-1) != 0 {
		return nil, fmt.Errorf("ring of %d pages: the size must be a power of two", cfg.RingPages)
	}
	s := &Session{MaxStack: maxStack, UserOnly: cfg.UserOnly, RingPages: cfg.RingPages, epfd: -1}
	events := []struct {
		name   string
		typ    uint32
		config uint64
	}{
		{"cycles", unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_CPU_CYCLES},
		{"cpu-clock", unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_CPU_CLOCK},
	}
	if len(cfg.Counters) > 0 {
		cfg.CPUWide = false // the groups are the per-thread events'
	}
	if len(cfg.Events) > 0 {
		events = events[:1]
		events[0].name, events[0].typ, events[0].config = cfg.Events[0].Name, cfg.Events[0].Type, cfg.Events[0].Config
		if len(cfg.Events) > 1 || cfg.Events[0].Period > 0 {
			// The other events, and the first's ids (FixedPeriod), are the per-thread
			// events' that openAll opens once.
			cfg.CPUWide, cfg.ResizableStack = false, false
		}
	}
	var lastErr error
	for _, ev := range events {
		err := s.openAll(cfg, cpus, ev.typ, ev.config)
		if err == nil {
			s.Event = ev.name
			return s, nil
		}
		s.closeFDs()
		if (errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)) && !s.UserOnly {
			s.UserOnly = true
			if err2 := s.openAll(cfg, cpus, ev.typ, ev.config); err2 == nil {
				s.Event = ev.name
				note := "kernel sampling is not permitted (kernel.perf_event_paranoid=" + paranoid() + "); recording user space only"
				if s.OffCPU {
					// A context switch happens in the kernel: user-only, its samples are dropped.
					note += "; off-CPU time is recorded without the stacks threads blocked in"
				}
				s.Note = strings.TrimSpace(note + "\n" + s.Note)
				return s, nil
			} else {
				err = err2
			}
			s.closeFDs()
			s.UserOnly = cfg.UserOnly
		}
		lastErr = err
		if errors.Is(err, unix.ESRCH) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			break
		}
	}
	return nil, explain(cfg, lastErr)
}

func paranoid() string {
	b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// PermissionError says the kernel refused to open the events to this user.
type PermissionError struct {
	SystemWide bool
	Paranoid   string // kernel.perf_event_paranoid
	Err        error
}

func (e *PermissionError) Error() string {
	if e.SystemWide {
		// Events on a whole CPU need CAP_PERFMON above paranoid level 0, even user-only.
		return fmt.Sprintf("recording every process needs root or CAP_PERFMON (kernel.perf_event_paranoid=%s): run stax as root, grant it CAP_PERFMON, or lower the setting: sysctl kernel.perf_event_paranoid=0", e.Paranoid)
	}
	return fmt.Sprintf("%v (kernel.perf_event_paranoid=%s; run as root, grant CAP_PERFMON, or lower it: sysctl kernel.perf_event_paranoid=1)", e.Err, e.Paranoid)
}

func (e *PermissionError) Unwrap() error { return e.Err }

func explain(cfg Config, err error) error {
	switch {
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return &PermissionError{SystemWide: cfg.SystemWide, Paranoid: paranoid(), Err: err}
	case errors.Is(err, unix.ESRCH):
		return fmt.Errorf("%w: the process does not exist", err)
	}
	return err
}

// Enable starts every event (attach mode; launch mode uses enable-on-exec).
func (s *Session) Enable() error {
	for _, fd := range s.fds {
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
			return fmt.Errorf("enable perf event: %w", err)
		}
	}
	s.off = false
	return nil
}

// Disable stops every event; records already in the rings can still be read.
func (s *Session) Disable() {
	for _, fd := range s.fds {
		unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_DISABLE, 0)
	}
	s.off = true
}

func (s *Session) closeFDs() {
	if s.epoll != nil {
		s.epoll.Close() // and with it epfd
		s.epoll, s.epollRC, s.epfd = nil, nil, -1
	}
	if s.epfd >= 0 {
		unix.Close(s.epfd)
		s.epfd = -1
	}
	for _, r := range s.rings {
		unix.Munmap(r.mem)
	}
	for _, fd := range s.fds {
		unix.Close(fd)
	}
	s.rings, s.fds, s.sampleFDs, s.retiring, s.everyFDs, s.offSampled, s.runtimeFDs, s.newFDs = nil, nil, nil, nil, nil, false, nil, nil
}

// Close releases every event and ring.
func (s *Session) Close() { s.closeFDs() }

// OnlineCPUs lists the online CPUs.
func OnlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		cpus := make([]int, runtime.NumCPU())
		for i := range cpus {
			cpus[i] = i
		}
		return cpus, nil
	}
	return parseCPUList(strings.TrimSpace(string(b)))
}

func parseCPUList(s string) ([]int, error) {
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		lo, hi, found := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("parse cpu list %q: %w", s, err)
		}
		b := a
		if found {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("parse cpu list %q: %w", s, err)
			}
		}
		for c := a; c <= b && c-a < 4096; c++ {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) == 0 {
		return nil, fmt.Errorf("parse cpu list %q: no cpus", s)
	}
	return cpus, nil
}

// MonotonicNow is CLOCK_MONOTONIC in nanoseconds, the clock of every sample's time.
func MonotonicNow() uint64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Sec)*1e9 + uint64(ts.Nsec)
}
