package perfevent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

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

// IsEveryEvent says whether a sample's event id is, with Config.OffCPURate, a context-switch
// or sched_waking event's that takes every stack while the stacks are not sampled: its
// samples and those of the sampled events stand for the same switches and wakeups then.
func (s *Session) IsEveryEvent(id uint64) bool { return s.everyIDs[id] }

// IsSwitchEvent says whether a sample's event id (perfrecord.Sample.ID) is a context-switch
// event's: the sample is the stack its thread was switched out with.
func (s *Session) IsSwitchEvent(id uint64) bool { return s.switchIDs[id] }
