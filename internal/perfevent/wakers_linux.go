package perfevent

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/perfrecord"
)

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
		a.Sample_type |= perfrecord.SampleRaw
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

// IsWakingEvent says whether a sample's event id is a sched_waking event's: the sample
// is a wakeup its thread made, with its stack, and the woken thread in its raw data.
func (s *Session) IsWakingEvent(id uint64) bool { return s.wakingIDs[id] }
