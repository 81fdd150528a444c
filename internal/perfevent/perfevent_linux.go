// Package perfevent opens perf events for a process tree and maps their ring buffers. It is
// the only package that talks to perf_event_open.
package perfevent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/record"
	"github.com/stax-profiler/stax/internal/ring"
)

// SampleType is the sample layout stax asks for.
const SampleType = record.SampleIP | record.SampleTID | record.SampleTime | record.SampleCPU |
	record.SamplePeriod | record.SampleCallchain

const bitBuildID = 1 << 34 // perf_event_attr.build_id: MMAP2 records carry the build-id

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
	// and CPU (counters_linux.go; not CPU-wide, nor resizable).
	Counters []EventSpec
}

// sideBand are the attr bits of the side-band records: one event per CPU carries them, so
// they are not written twice.
const sideBand = unix.PerfBitMmap | unix.PerfBitComm | unix.PerfBitTask | unix.PerfBitMmap2 | unix.PerfBitCommExec

// offCPUPeriod sets a context-switch or sched_waking event's sampling: every event, or,
// sampled, about Session.OffCPURate a second (the kernel's frequency mode).
func (s *Session) offCPUPeriod(a *unix.PerfEventAttr, sampled bool) {
	a.Bits &^= unix.PerfBitFreq
	a.Sample = 1
	if sampled {
		a.Bits |= unix.PerfBitFreq
		a.Sample = uint64(s.OffCPURate)
	}
}

// maxSampleRate is kernel.perf_event_max_sample_rate: a frequency above it is refused.
func maxSampleRate() int {
	if b, err := os.ReadFile("/proc/sys/kernel/perf_event_max_sample_rate"); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && v > 0 {
			return v
		}
	}
	return 100000
}

// RegsUserDwarf is sample_regs_user in "dwarf" mode: BP, SP, IP (perf x86-64 indices 6, 7, 8),
// in that order in a sample.
const RegsUserDwarf = 1<<6 | 1<<7 | 1<<8

// DwarfSampleType is the sample layout of "dwarf" mode.
const DwarfSampleType = SampleType | record.SampleRegsUser | record.SampleStackUser

// SampleTypeFor returns the sample layout and sample_regs_user for cfg, to configure a
// record.Decoder.
func SampleTypeFor(cfg Config) (sampleType, regsMask uint64) {
	sampleType = SampleType
	if cfg.CallGraph == "dwarf" {
		sampleType, regsMask = DwarfSampleType, RegsUserDwarf
	}
	if cfg.OffCPU && !cfg.SystemWide || len(cfg.Events) > 1 || len(cfg.Counters) > 0 {
		sampleType |= record.SampleIdentifier
	} else if len(cfg.Events) == 1 && cfg.Events[0].Period > 0 {
		sampleType &^= record.SamplePeriod // the only event's samples: FixedPeriod
	}
	return sampleType, regsMask
}

// DefaultStackSize is the user stack copied per sample in dwarf mode, as perf record's
// default: the kernel copies it in the profiled thread, so a larger copy costs the program
// (a 16 KiB copy cost it 2-9% more CPU than 8 KiB) for a few deep stacks (node: 0.1% more
// stacks complete); status says when stacks were cut short by it, and --stack-size raises it.
const DefaultStackSize = 8 << 10

// StackCopy is the user stack copy, in bytes, a dwarf-mode recording with cfg takes.
func StackCopy(cfg Config) int { return int(stackSize(cfg)) }

func stackSize(cfg Config) uint32 {
	n := cfg.StackSize &^ 7
	if n <= 0 {
		n = DefaultStackSize
	}
	return uint32(min(n, record.MaxStackUser))
}

// RingPagesFor sizes a CPU's ring so that it holds about half a second of samples at freq
// with stacks of maxStack frames (and stackCopy bytes of user stack, in dwarf mode): a reader that is late by a scheduling slice or a slow
// checkpoint loses nothing. The result is a power of two from 128 (512 KiB) to 8192
// (32 MiB) pages.
func RingPagesFor(freq, maxStack, stackCopy int) int {
	recordBytes := 64 + 8*(maxStack+2) + stackCopy // header, ip, tid, time, cpu, period, callchain, user stack
	want := freq * recordBytes / 2 / os.Getpagesize()
	pages := 128
	for pages < want && pages < 8192 {
		pages *= 2
	}
	return pages
}

// offCPURingFactor is how much larger automatically sized rings are with Config.OffCPU.
const offCPURingFactor = 4

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

// RingError says a ring of that size could not be mapped: over the locked-memory limit
// (kernel.perf_event_mlock_kb for unprivileged users) or out of memory.
type RingError struct {
	CPU, Pages int
	Err        string
}

func (e *RingError) Error() string {
	return fmt.Sprintf("map a perf ring of %d pages on cpu %d: %s (use fewer pages with -m, or raise kernel.perf_event_mlock_kb)", e.Pages, e.CPU, e.Err)
}

type mappedRing struct {
	cpu  int
	fd   int
	mem  []byte
	meta *unix.PerfEventMmapPage
	rd   ring.Reader
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
		cfg.CPUWide, cfg.ResizableStack = false, false // the groups are the per-thread events'
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

func (s *Session) attr(cfg Config, typ uint32, config uint64, enableOnExec bool) *unix.PerfEventAttr {
	a := &unix.PerfEventAttr{
		Type:             typ,
		Size:             uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Config:           config,
		Sample:           uint64(cfg.Freq),
		Clockid:          unix.CLOCK_MONOTONIC,
		Sample_max_stack: uint16(s.MaxStack),
		// Wake the reader when a ring is a quarter full, rather than relying on its tick.
		Wakeup: uint32(s.RingPages * os.Getpagesize() / 4),
	}
	a.Bits = unix.PerfBitDisabled | unix.PerfBitInherit | unix.PerfBitMmap | unix.PerfBitComm |
		unix.PerfBitFreq | unix.PerfBitTask | unix.PerfBitSampleIDAll | unix.PerfBitMmap2 |
		unix.PerfBitCommExec | unix.PerfBitUseClockID | unix.PerfBitExcludeHv | bitBuildID | unix.PerfBitWatermark
	if enableOnExec {
		a.Bits |= unix.PerfBitEnableOnExec
	}
	if cfg.SystemWide {
		a.Bits &^= unix.PerfBitInherit // a CPU-wide event sees every task already
	}
	a.Sample_type, a.Sample_regs_user = SampleTypeFor(cfg)
	if cfg.CallGraph == "dwarf" {
		a.Sample_stack_user = stackSize(cfg)
		if cfg.NoUserFPChain {
			a.Bits |= unix.PerfBitExcludeCallchainUser
		}
	}
	if s.UserOnly {
		a.Bits |= unix.PerfBitExcludeKernel | unix.PerfBitExcludeCallchainKernel
	}
	firstEventPeriod(cfg, a, typ, config)
	s.leaderRead(cfg, a, typ, config)
	return a
}

func (s *Session) openAll(cfg Config, cpus []int, typ uint32, config uint64) error {
	s.OffCPU = cfg.OffCPU && !cfg.SystemWide
	s.OffCPURate, s.everyFDs, s.everyIDs, s.offSampled = 0, nil, map[uint64]bool{}, false
	if s.OffCPU && cfg.OffCPURate > 0 {
		s.OffCPURate = min(cfg.OffCPURate, maxSampleRate())
	}
	s.switchIDs = map[uint64]bool{}
	s.wakingIDs = map[uint64]bool{}
	s.events, s.counters = eventState{}, counterState{}
	s.resizable = cfg.ResizableStack && cfg.CallGraph == "dwarf" && !cfg.SystemWide
	s.cfg, s.evType, s.evConfig = cfg, typ, config
	s.off = !cfg.EnableOnExec
	s.CPUWide = cfg.CPUWide && !cfg.SystemWide && !cfg.EnableOnExec && !s.resizable && s.cpuWideAllowed(cfg, cpus[0], typ, config)
	// The side band and the rings go to dummy events where the sampling events may be
	// replaced (resizable) or are not the target's (CPU-wide).
	anchored := s.resizable || s.CPUWide
	var switches []switchTarget
	pids := cfg.Pids
	if cfg.SystemWide {
		pids = []int{-1}
	}
	for i, pid := range pids {
		for _, cpu := range cpus {
			// Only the first thread's events carry mmap/comm/task side-band records, so
			// they are not duplicated per thread.
			a := s.attr(cfg, typ, config, cfg.EnableOnExec)
			if i > 0 || anchored {
				a.Bits &^= sideBand
			}
			var r *mappedRing
			if i == 0 && anchored {
				// The dummy is built like the sampling event, so that the ring's records
				// share its layout (sample_id_all) and wakeups.
				d := s.attr(cfg, unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_DUMMY, cfg.EnableOnExec)
				dfd, err := unix.PerfEventOpen(d, pid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
				if err != nil {
					return fmt.Errorf("open the side-band event for pid %d on cpu %d: %w", pid, cpu, err)
				}
				s.fds = append(s.fds, dfd)
				if r, err = mapRing(dfd, cpu, cfg.RingPages); err != nil {
					return err
				}
				s.rings = append(s.rings, r)
			}
			if s.CPUWide {
				// Sampled by the CPU's own event (below); the off-CPU events are the thread's.
				if r == nil {
					r = s.ringOf(cpu)
					if r == nil {
						continue
					}
					// The processes another thread forks are the target's too: its forks
					// and exits come from a dummy of its own (the first thread's carries
					// the mappings and names, which are the process's).
					d := s.attr(cfg, unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_DUMMY, cfg.EnableOnExec)
					d.Bits &^= sideBand
					d.Bits |= unix.PerfBitTask
					dfd, err := unix.PerfEventOpen(d, pid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
					if errors.Is(err, unix.ESRCH) {
						break // the thread ended while we attached
					}
					if err != nil {
						return fmt.Errorf("open the side-band event for pid %d on cpu %d: %w", pid, cpu, err)
					}
					s.fds = append(s.fds, dfd)
					if err := unix.IoctlSetInt(dfd, unix.PERF_EVENT_IOC_SET_OUTPUT, r.fd); err != nil {
						return fmt.Errorf("redirect the side-band event of pid %d on cpu %d: %w", pid, cpu, err)
					}
				}
				if s.OffCPU && r != nil {
					switches = append(switches, switchTarget{pid, cpu, r})
				}
				continue
			}
			fd, err := unix.PerfEventOpen(a, pid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
			if err != nil {
				if i > 0 && errors.Is(err, unix.ESRCH) {
					break // the thread ended while we attached
				}
				return fmt.Errorf("open perf event for pid %d on cpu %d: %w", pid, cpu, err)
			}
			s.fds = append(s.fds, fd)
			s.sampleFDs = append(s.sampleFDs, fd)
			var target *mappedRing
			if r != nil {
				if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, r.fd); err != nil {
					return fmt.Errorf("redirect perf event of pid %d on cpu %d: %w", pid, cpu, err)
				}
				target = r
			} else if i == 0 {
				r, err := mapRing(fd, cpu, cfg.RingPages)
				if err != nil {
					return err
				}
				s.rings = append(s.rings, r)
				target = r
			} else {
				for _, r := range s.rings {
					if r.cpu == cpu {
						target = r
					}
				}
				if target != nil {
					if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, target.fd); err != nil {
						return fmt.Errorf("redirect perf event of pid %d on cpu %d: %w", pid, cpu, err)
					}
				}
			}
			if s.OffCPU && target != nil {
				switches = append(switches, switchTarget{pid, cpu, target})
			}
			if err := s.openCounters(cfg, pid, cpu); err != nil {
				if i > 0 && errors.Is(err, unix.ESRCH) {
					break
				}
				return err
			}
			if err := s.openOtherEvents(cfg, pid, cpu, target); err != nil {
				if i > 0 && errors.Is(err, unix.ESRCH) {
					break
				}
				return err
			}
		}
	}
	if len(s.rings) == 0 {
		return fmt.Errorf("open perf events: %w", unix.ESRCH)
	}
	if s.CPUWide {
		fds, err := s.openCPUWide(cfg)
		if err != nil {
			return err
		}
		s.fds = append(s.fds, fds...)
		s.sampleFDs = fds
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("create epoll: %w", err)
	}
	s.epfd = epfd
	for _, r := range s.rings {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(r.fd)}
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, r.fd, &ev); err != nil {
			return fmt.Errorf("watch perf ring on cpu %d: %w", r.cpu, err)
		}
	}
	s.pollEpoll()
	// The context-switch events come last: what they cannot have (descriptors) the CPU
	// samples already hold.
	s.WaitStacks = false
	if s.OffCPU && len(switches) > 0 && !cfg.ContextSwitchEvent {
		if tp, err := readTracepoint("sched", "sched_switch"); err == nil {
			s.switchTP, s.WaitStacks = tp, true
		}
	}
	for _, sw := range switches {
		if !s.OffCPU {
			break
		}
		s.openSwitch(cfg, sw.pid, sw.cpu, sw.r)
	}
	if s.OffCPU && !cfg.NoWakers {
		s.openWakers(cfg, switches)
	}
	return nil
}

// cpuWideAttr is the attr of a CPU-wide sampling event with cfg's sampling.
func (s *Session) cpuWideAttr(cfg Config, typ uint32, config uint64) *unix.PerfEventAttr {
	a := s.attr(cfg, typ, config, false)
	a.Bits &^= sideBand | unix.PerfBitInherit // a CPU-wide event sees every task already
	if typ == unix.PERF_TYPE_SOFTWARE {
		a.Bits |= unix.PerfBitExcludeIdle // the idle task's ticks are no one's
	}
	return a
}

// cpuWideAllowed says whether the kernel lets this session open a CPU-wide sampling event
// (root, CAP_PERFMON or kernel.perf_event_paranoid <= 0), by opening one on cpu.
func (s *Session) cpuWideAllowed(cfg Config, cpu int, typ uint32, config uint64) bool {
	fd, err := unix.PerfEventOpen(s.cpuWideAttr(cfg, typ, config), -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

// openCPUWide opens, stopped unless the session runs, a CPU-sampling event per ring's CPU
// with cfg's sampling, writing into that ring.
func (s *Session) openCPUWide(cfg Config) ([]int, error) {
	a := s.cpuWideAttr(cfg, s.evType, s.evConfig)
	var opened []int
	fail := func(err error) ([]int, error) {
		for _, fd := range opened {
			unix.Close(fd)
		}
		return nil, err
	}
	for _, r := range s.rings {
		fd, err := unix.PerfEventOpen(a, -1, r.cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			return fail(fmt.Errorf("open the CPU-wide sampling event on cpu %d: %w", r.cpu, err))
		}
		opened = append(opened, fd)
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, r.fd); err != nil {
			return fail(fmt.Errorf("redirect the CPU-wide sampling event on cpu %d: %w", r.cpu, err))
		}
	}
	if !s.off {
		for _, fd := range opened {
			if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
				return fail(fmt.Errorf("enable perf event: %w", err))
			}
		}
	}
	return opened, nil
}

// ringOf is the ring of cpu, or nil.
func (s *Session) ringOf(cpu int) *mappedRing {
	for _, r := range s.rings {
		if r.cpu == cpu {
			return r
		}
	}
	return nil
}

// openWakers opens sched:sched_waking for each of the context-switch events' threads and
// CPUs, into their rings: the wakeups the target's threads make, with their stacks. It
// takes root or CAP_PERFMON; without, or if the kernel refuses, the recording goes on
// without wakers and says why.
func (s *Session) openWakers(cfg Config, targets []switchTarget) {
	tp, err := readTracepoint("sched", "sched_waking")
	if err == nil {
		f, ok := tp.fields["pid"]
		if !ok || (f.Size != 4 && f.Size != 8) {
			err = errors.New("sched_waking has no pid field")
		}
		s.WakingPid = f
		s.WakingFlags, ok = tp.fields["common_flags"]
		if !ok || s.WakingFlags.Size != 1 {
			s.WakingFlags = TraceField{Offset: -1} // unknown: Value says so
		}
	}
	opened, every, everyIDs, counting := []int{}, []int{}, []uint64{}, []int{}
	type waking struct {
		t       switchTarget
		sampled bool
	}
	var events []waking
	for _, t := range targets {
		events = append(events, waking{t, s.OffCPURate > 0})
		if s.OffCPURate > 0 {
			events = append(events, waking{t, false})
		}
	}
	for _, ev := range events {
		if err != nil {
			break
		}
		t := ev.t
		a := s.attr(cfg, unix.PERF_TYPE_TRACEPOINT, tp.id, cfg.EnableOnExec)
		a.Sample_type |= record.SampleRaw
		// The tracepoint fires in the kernel: excluding the kernel would exclude it.
		a.Bits &^= sideBand | unix.PerfBitExcludeKernel
		s.offCPUPeriod(a, ev.sampled)
		fd, e := unix.PerfEventOpen(a, t.pid, t.cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if e != nil {
			if errors.Is(e, unix.ESRCH) {
				continue
			}
			err = fmt.Errorf("open sched_waking: %w", e)
			break
		}
		var id uint64
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.PERF_EVENT_IOC_ID, uintptr(unsafe.Pointer(&id))); e != 0 {
			unix.Close(fd)
			err = fmt.Errorf("read sched_waking id: %w", e)
			break
		}
		if e := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, t.r.fd); e != nil {
			unix.Close(fd)
			err = fmt.Errorf("redirect sched_waking: %w", e)
			break
		}
		// Where the kernel does not take the filter, the reader drops such wakeups (and
		// the count of the events that sample includes them).
		_ = unix.IoctlSetString(fd, unix.PERF_EVENT_IOC_SET_FILTER, taskWakeFilter)
		opened = append(opened, fd)
		if s.OffCPURate > 0 && !ev.sampled {
			every = append(every, fd)
			everyIDs = append(everyIDs, id)
		}
		if ev.sampled {
			counting = append(counting, fd)
		}
		s.wakingIDs[id] = true
	}
	if err != nil {
		for _, fd := range opened {
			unix.Close(fd)
		}
		clear(s.wakingIDs)
		s.Note = strings.TrimSpace(s.Note + "\nwakers are not recorded (root or CAP_PERFMON records which thread ended each wait): " + err.Error())
		return
	}
	s.fds = append(s.fds, opened...)
	s.everyFDs = append(s.everyFDs, every...)
	s.wakingCountFDs = append(s.wakingCountFDs, counting...)
	for _, id := range everyIDs {
		s.everyIDs[id] = true
	}
	s.waking = tp
	s.Wakers = len(opened) > 0
}

// IRQContextFlags are the trace entry flags of an event raised in a hard or soft
// interrupt or an NMI (TRACE_FLAG_HARDIRQ, TRACE_FLAG_SOFTIRQ, TRACE_FLAG_NMI): a wakeup
// made there is the interrupt's (a timer's expiry, a ring's reader woken by its irq_work),
// not the interrupted thread's, although the sample carries that thread. A softirq's bit is
// set only while one is served, not while a thread has them disabled.
const IRQContextFlags = 0x08 | 0x10 | 0x40

// taskWakeFilter keeps, of sched_waking's events, the wakeups made in task context
// (IRQContextFlags): the kernel then neither samples nor counts an interrupt's.
const taskWakeFilter = "!(common_flags & 0x58)"

// WakeupsCounted is how many wakeups the target's threads made since the events were
// enabled, as the kernel counted them, and false where wakeups are not sampled
// (Config.OffCPURate). The sampling events count every wakeup, those of the threads that
// inherited them included, however few they sample: the kernel's frequency mode, on a
// per-thread tracepoint that fires in bursts, can raise its period to tens of thousands
// within a few milliseconds, so the periods of the samples taken are no estimate of it.
func (s *Session) WakeupsCounted() (uint64, bool) {
	return countAll(s.wakingCountFDs)
}

// SwitchOutsCounted is how many switches out of the target's threads the context-switch
// events saw since they were enabled (the waits, with WaitStacks), as the kernel counted
// them, and false where the stacks are not sampled (Config.OffCPURate). Read at any time,
// it does not wait for the reader to reach the records.
func (s *Session) SwitchOutsCounted() (uint64, bool) { return countAll(s.switchCountFDs) }

// countAll is the sum of the counts of fds (those of the threads that inherited them
// included), false when there are none or one cannot be read.
func countAll(fds []int) (uint64, bool) {
	if len(fds) == 0 {
		return 0, false
	}
	var total uint64
	var buf [8]byte
	for _, fd := range fds {
		if n, err := unix.Read(fd, buf[:]); err != nil || n != len(buf) {
			return 0, false
		}
		total += binary.LittleEndian.Uint64(buf[:])
	}
	return total, true
}

// IsWakingEvent says whether a sample's event id is a sched_waking event's: the sample
// is a wakeup its thread made, with its stack, and the woken thread in its raw data.
func (s *Session) IsWakingEvent(id uint64) bool { return s.wakingIDs[id] }

// Wait blocks until a ring passes its watermark or timeout passes.
func (s *Session) Wait(timeout time.Duration) {
	if s.epfd < 0 {
		time.Sleep(timeout)
		return
	}
	var evs [16]unix.EpollEvent
	if s.epollRC != nil && s.epoll.SetReadDeadline(time.Now().Add(timeout)) == nil {
		// A wake-up from the poller ends the wait without asking epfd again: the poller's
		// own look at epfd consumed the rings' readiness (a perf descriptor reports it once).
		first := true
		s.epollRC.Read(func(uintptr) bool {
			if !first {
				return true
			}
			first = false
			n, err := unix.EpollWait(s.epfd, evs[:], 0)
			return n > 0 || (err != nil && err != unix.EINTR)
		})
		return
	}
	unix.EpollWait(s.epfd, evs[:], int(timeout.Milliseconds()))
}

// pollEpoll puts the epoll descriptor in Go's network poller (an epoll descriptor is
// readable when one it watches is ready). Where that fails, Wait blocks in epoll_wait.
func (s *Session) pollEpoll() {
	if err := unix.SetNonblock(s.epfd, true); err != nil {
		return
	}
	f := os.NewFile(uintptr(s.epfd), "epoll")
	if f == nil {
		return
	}
	s.epoll = f // it owns epfd from now on
	if rc, err := f.SyscallConn(); err == nil && f.SetReadDeadline(time.Time{}) == nil {
		s.epollRC = rc
	}
}

func mapRing(fd, cpu, pages int) (*mappedRing, error) {
	pageSize := os.Getpagesize()
	mem, err := unix.Mmap(fd, 0, (pages+1)*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		// Not wrapped: an EPERM here is the locked-memory limit (perf_event_mlock_kb), not a
		// refusal to sample.
		return nil, &RingError{CPU: cpu, Pages: pages, Err: err.Error()}
	}
	r := &mappedRing{cpu: cpu, fd: fd, mem: mem, meta: (*unix.PerfEventMmapPage)(unsafe.Pointer(&mem[0]))}
	r.rd.Data = mem[pageSize:]
	return r, nil
}

// Fill is how full the fullest ring is, from 0 to 1: records written and not yet read
// back, over the ring's size. A reader that falls behind sees it rise before the kernel
// drops samples.
func (s *Session) Fill() float64 {
	var most float64
	for _, r := range s.rings {
		head := atomic.LoadUint64(&r.meta.Data_head)
		tail := atomic.LoadUint64(&r.meta.Data_tail)
		if size := len(r.rd.Data); size > 0 {
			most = max(most, float64(head-tail)/float64(size))
		}
	}
	return most
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

// Read drains every ring, calling fn for each record. The record slice is valid only during
// the call.
func (s *Session) Read(fn func(cpu int, rec []byte)) error {
	var firstErr error
	for _, r := range s.rings {
		head := atomic.LoadUint64(&r.meta.Data_head)
		tail := atomic.LoadUint64(&r.meta.Data_tail)
		cpu := r.cpu
		newTail, err := r.rd.Drain(tail, head, func(rec []byte) { fn(cpu, rec) })
		atomic.StoreUint64(&r.meta.Data_tail, newTail)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("cpu %d: %w", cpu, err)
		}
	}
	return firstErr
}

// ReadOrdered calls fn for the records of every ring in time order (timeOf gives a record's
// time), up to until: records timed at or after it stay in their ring for the next read.
// Reading CPU by CPU would hand over a sample before the mapping it ran in when the process
// moved between CPUs after the mmap. The records passed to fn stay valid until release
// returns (release may be nil): their space goes back to the kernel after it.
func (s *Session) ReadOrdered(until uint64, timeOf func(rec []byte) uint64, fn func(cpu int, rec []byte), release func()) error {
	if cap(s.spans) < len(s.rings) {
		s.spans = make([]ring.Span, len(s.rings))
	}
	spans := s.spans[:len(s.rings)]
	for i, r := range s.rings {
		spans[i] = ring.Span{R: &r.rd, Head: atomic.LoadUint64(&r.meta.Data_head), Tail: atomic.LoadUint64(&r.meta.Data_tail)}
	}
	err := ring.Merge(spans, timeOf, until, func(i int, rec []byte) { fn(s.rings[i].cpu, rec) })
	if release != nil {
		release()
	}
	for i, r := range s.rings {
		atomic.StoreUint64(&r.meta.Data_tail, spans[i].Tail)
	}
	return err
}

// openSwitch opens the context-switch event of pid on cpu into ring r. Off-CPU time is
// an addition: if the kernel refuses it, the recording goes on without it and says why.
func (s *Session) openSwitch(cfg Config, pid, cpu int, r *mappedRing) {
	// The first event writes the switch records and samples the stacks (every one, or at
	// OffCPURate); with OffCPURate the second takes the stack of every switch out while
	// enabled (SampleOffCPU).
	err := s.openSwitchEvent(cfg, pid, cpu, r, s.OffCPURate > 0)
	if err == nil && s.OffCPURate > 0 {
		err = s.openSwitchEvent(cfg, pid, cpu, r, false)
	}
	if err != nil && s.WaitStacks && len(s.switchIDs) == 0 && !errors.Is(err, unix.ESRCH) {
		// The kernel refused the tracepoint (or its filter) at the first thread: every
		// thread takes the context-switch event instead.
		s.closeSwitchEvents()
		s.WaitStacks = false
		err = s.openSwitchEvent(cfg, pid, cpu, r, s.OffCPURate > 0)
		if err == nil && s.OffCPURate > 0 {
			err = s.openSwitchEvent(cfg, pid, cpu, r, false)
		}
	}
	if err == nil {
		return
	}
	if errors.Is(err, unix.ESRCH) {
		return // the thread ended while we attached
	}
	// Those already open go: off-CPU time of some threads alone would mislead.
	s.closeSwitchEvents()
	s.OffCPU, s.WaitStacks = false, false
	s.Note = strings.TrimSpace(s.Note + "\noff-CPU time is not recorded: open the context-switch event: " + err.Error())
}

// closeSwitchEvents closes the context-switch events opened so far.
func (s *Session) closeSwitchEvents() {
	kept := s.fds[:0]
	for _, fd := range s.fds {
		var id uint64
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.PERF_EVENT_IOC_ID, uintptr(unsafe.Pointer(&id))); e == 0 && s.switchIDs[id] {
			unix.Close(fd)
			continue
		}
		kept = append(kept, fd)
	}
	s.fds = kept
	clear(s.switchIDs)
	clear(s.everyIDs)
	s.everyFDs, s.switchCountFDs = nil, nil
}

// waitFilter keeps, of sched_switch's events, the switches of threads that wait: the
// state they are switched out in has one of the sleeping, stopped or dead bits set
// (TASK_REPORT's, 0xff). A preempted thread's is 0 (running) or, since Linux 4.14,
// TASK_REPORT_MAX alone (0x100), set apart from those bits.
const waitFilter = "prev_state & 0xff"

// openSwitchEvent opens a context-switch event of pid on cpu into ring r: sampled at
// OffCPURate with the switch records, or at every switch without them.
func (s *Session) openSwitchEvent(cfg Config, pid, cpu int, r *mappedRing, sampled bool) error {
	a := s.attr(cfg, unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_CONTEXT_SWITCHES, cfg.EnableOnExec)
	if s.WaitStacks {
		a = s.attr(cfg, unix.PERF_TYPE_TRACEPOINT, s.switchTP.id, cfg.EnableOnExec)
		// The tracepoint fires in the kernel: excluding the kernel would exclude it.
		a.Bits &^= unix.PerfBitExcludeKernel
	}
	a.Bits &^= sideBand
	if sampled || s.OffCPURate == 0 {
		a.Bits |= unix.PerfBitContextSwitch
	}
	s.offCPUPeriod(a, sampled)
	fd, err := unix.PerfEventOpen(a, pid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return err
	}
	if s.WaitStacks {
		if err := unix.IoctlSetString(fd, unix.PERF_EVENT_IOC_SET_FILTER, waitFilter); err != nil {
			unix.Close(fd)
			return fmt.Errorf("filter sched_switch: %w", err)
		}
	}
	var id uint64
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.PERF_EVENT_IOC_ID, uintptr(unsafe.Pointer(&id))); e != 0 {
		unix.Close(fd)
		return e
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, r.fd); err != nil {
		unix.Close(fd)
		return err
	}
	s.fds = append(s.fds, fd)
	s.switchIDs[id] = true
	if s.OffCPURate > 0 && sampled {
		s.switchCountFDs = append(s.switchCountFDs, fd)
	}
	if s.OffCPURate > 0 && !sampled {
		s.everyFDs = append(s.everyFDs, fd)
		s.everyIDs[id] = true
	}
	return nil
}

// SampleOffCPU switches, with Config.OffCPURate, between taking the stack of every switch
// out and wakeup (false, as the events start) and sampling them at OffCPURate (true):
// for a target that switches too often for the one, the other. The switch records are
// every one either way.
func (s *Session) SampleOffCPU(on bool) error {
	if on == s.offSampled || len(s.everyFDs) == 0 {
		return nil
	}
	req := uint(unix.PERF_EVENT_IOC_ENABLE)
	if on {
		req = unix.PERF_EVENT_IOC_DISABLE
	}
	for _, fd := range s.everyFDs {
		// Without PERF_IOC_FLAG_GROUP the kernel applies it to the event's inherited
		// copies too: every thread the target started since.
		if err := unix.IoctlSetInt(fd, req, 0); err != nil {
			return fmt.Errorf("switch the off-CPU stacks' sampling: %w", err)
		}
	}
	s.offSampled = on
	return nil
}

// StackSize is the user stack copy, in bytes, the CPU samples take now (0 unless "dwarf").
func (s *Session) StackSize() int {
	if s.cfg.CallGraph != "dwarf" {
		return 0
	}
	return int(stackSize(s.cfg))
}

// ErrThreadsChanged says ResizeStack gave up because the target started threads while it
// opened the new events; the old events go on, and a later try may find the threads still.
var ErrThreadsChanged = errors.New("resize the stack copy: the target started threads meanwhile")

// minStackResize is the smallest copy ResizeStack takes.
const minStackResize = 512

// ResizeStack reopens the CPU-sampling events with a user stack copy of size bytes (rounded
// down to 8, from 512 to record.MaxStackUser), in a session opened with
// Config.ResizableStack: the copy costs the profiled threads in their own time, however
// shallow their stacks. The new events are opened per thread tids lists and inherited by the
// threads those start; tids is asked again after, and a thread it lists that was not
// covered ends the resize with ErrThreadsChanged (it may or may not have inherited a new
// event). cut is when the new events had all started.
//
// The old events go on sampling, and threads started meanwhile inherit them too, until
// RetireStack closes them (a later ResizeStack does first): the caller picks, thread by
// thread, whose samples count. A sample's copy size (record.Sample.StackSize) tells the two
// apart, which is why the current size is refused. Each event counts its thread's time on
// its CPU towards its next sample: closing the old ones at once would drop, per thread and
// CPU, the part of a period each had counted, half a sample on average (250 samples from
// 500 threads on 2 CPUs, 8 times as many on 16).
// On an error the old events stay and the recording goes on as before.
func (s *Session) ResizeStack(size int, tids func() []int) (cut uint64, err error) {
	if !s.resizable {
		return 0, errors.New("resize the stack copy: the events were not opened resizable")
	}
	size &^= 7
	if size < minStackResize || size > record.MaxStackUser {
		return 0, fmt.Errorf("resize the stack copy to %d bytes: out of %d to %d", size, minStackResize, record.MaxStackUser)
	}
	if size == s.StackSize() {
		return 0, fmt.Errorf("resize the stack copy: it is %d bytes already", size)
	}
	s.RetireStack()
	cfg := s.cfg
	cfg.StackSize = size
	// Opened stopped and started once all are open, so that a failure leaves no sample of
	// theirs behind; enabling an event enables its inherited copies too.
	a := s.attr(cfg, s.evType, s.evConfig, false)
	a.Bits &^= sideBand
	var opened []int
	fail := func(err error) (uint64, error) {
		for _, fd := range opened {
			unix.Close(fd)
		}
		return 0, fmt.Errorf("resize the stack copy: %w", err)
	}
	covered := map[int]bool{}
	for _, tid := range tids() {
		if covered[tid] {
			continue
		}
		covered[tid] = true
		for _, r := range s.rings {
			fd, err := unix.PerfEventOpen(a, tid, r.cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
			if errors.Is(err, unix.ESRCH) {
				break // the thread ended
			}
			if err != nil {
				return fail(fmt.Errorf("open perf event for thread %d on cpu %d: %w", tid, r.cpu, err))
			}
			opened = append(opened, fd)
			if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, r.fd); err != nil {
				return fail(fmt.Errorf("redirect perf event of thread %d on cpu %d: %w", tid, r.cpu, err))
			}
		}
	}
	// A thread started meanwhile may have inherited a new event from its starter, or not:
	// opening one of its own could sample it twice, and leaving it could miss it.
	for _, tid := range tids() {
		if !covered[tid] {
			fail(nil)
			return 0, ErrThreadsChanged
		}
	}
	if len(opened) == 0 {
		return fail(errors.New("no thread to sample"))
	}
	for _, fd := range opened {
		if s.off {
			break
		}
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
			return fail(fmt.Errorf("enable perf event: %w", err))
		}
	}
	cut = MonotonicNow()
	s.fds = append(s.fds, opened...)
	s.sampleFDs, s.retiring = opened, s.sampleFDs
	s.cfg = cfg
	return cut, nil
}

// RetireStack closes the sampling events the last ResizeStack replaced, if still open. Their
// samples written before are still in the rings.
func (s *Session) RetireStack() {
	if len(s.retiring) == 0 {
		return
	}
	old := make(map[int]bool, len(s.retiring))
	for _, fd := range s.retiring {
		old[fd] = true
		unix.Close(fd)
	}
	kept := s.fds[:0]
	for _, fd := range s.fds {
		if !old[fd] {
			kept = append(kept, fd)
		}
	}
	s.fds, s.retiring = kept, nil
}

// IsEveryEvent says whether a sample's event id is, with Config.OffCPURate, a context-switch
// or sched_waking event's that takes every stack while the stacks are not sampled: its
// samples and those of the sampled events stand for the same switches and wakeups then.
func (s *Session) IsEveryEvent(id uint64) bool { return s.everyIDs[id] }

// IsSwitchEvent says whether a sample's event id (record.Sample.ID) is a context-switch
// event's: the sample is the stack its thread was switched out with.
func (s *Session) IsSwitchEvent(id uint64) bool { return s.switchIDs[id] }

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
	s.rings, s.fds, s.sampleFDs, s.retiring, s.everyFDs, s.offSampled = nil, nil, nil, nil, nil, false
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
