package perfevent

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Threads started while the stacks are sampled (SampleOffCPU): the events that take every
// stack are disabled then, and a new thread inherits them disabled, and the sampling events
// with their period of the moment, raised by a target that switches fast: its first waits
// would have no stack of their own, and no sampled one to stand for them. A tracepoint's
// filter is set once (a second one is refused, EEXIST), so the events that take every
// stack cannot be narrowed to new threads: FollowNewThreads opens a family of its own
// beside them, filtered to the waits of threads whose id is above those of the threads
// running then, which the threads started since inherit.

// FollowNewThreads opens, for each thread of tids and each ring's CPU, sched:sched_switch
// sampled at every wait of a thread whose id is above above (the threads started since,
// which inherit the events), with the stacks of the other switch events, started at once.
// It replaces those it opened before, once the new ones are open. With WaitStacks only.
func (s *Session) FollowNewThreads(tids []int, above int) error {
	if !s.OffCPU || !s.WaitStacks {
		return errors.New("follow new threads: no sched_switch events")
	}
	filter := fmt.Sprintf("prev_state & 0xff && prev_pid > %d", above)
	var opened []int
	ids := map[uint64]bool{}
	fail := func(err error) error {
		for _, fd := range opened {
			unix.Close(fd)
		}
		return err
	}
	for _, tid := range tids {
		for _, r := range s.rings {
			a := s.attr(s.cfg, unix.PERF_TYPE_TRACEPOINT, s.switchTP.id, false)
			a.Bits &^= sideBand | unix.PerfBitExcludeKernel
			if !s.off {
				a.Bits &^= unix.PerfBitDisabled
			}
			s.offCPUPeriod(a, false)
			fd, err := unix.PerfEventOpen(a, tid, r.cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
			if errors.Is(err, unix.ESRCH) {
				break // the thread ended meanwhile
			}
			if err != nil {
				return fail(fmt.Errorf("follow new threads: open sched_switch of thread %d on cpu %d: %w", tid, r.cpu, err))
			}
			opened = append(opened, fd)
			if err := unix.IoctlSetString(fd, unix.PERF_EVENT_IOC_SET_FILTER, filter); err != nil {
				return fail(fmt.Errorf("follow new threads: filter sched_switch: %w", err))
			}
			var id uint64
			if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.PERF_EVENT_IOC_ID, uintptr(unsafe.Pointer(&id))); e != 0 {
				return fail(fmt.Errorf("follow new threads: read the event's id: %w", e))
			}
			if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, r.fd); err != nil {
				return fail(fmt.Errorf("follow new threads: redirect sched_switch: %w", err))
			}
			ids[id] = true
		}
	}
	if len(opened) == 0 {
		return errors.New("follow new threads: no thread to follow")
	}
	s.StopNewThreads()
	for id := range ids {
		s.switchIDs[id] = true
		s.newIDs[id] = true
	}
	s.newFDs = opened
	s.fds = append(s.fds, opened...)
	return nil
}

// StopNewThreads closes the events FollowNewThreads opened, those the threads inherited
// with them. Their ids stay switch events until ForgetStoppedThreads: the stacks they took
// before may not be read yet, and read as CPU samples they would leave their waits
// without a stack.
func (s *Session) StopNewThreads() {
	if len(s.newFDs) == 0 {
		return
	}
	closing := map[int]bool{}
	for _, fd := range s.newFDs {
		closing[fd] = true
		unix.Close(fd)
	}
	kept := s.fds[:0]
	for _, fd := range s.fds {
		if !closing[fd] {
			kept = append(kept, fd)
		}
	}
	s.fds = kept
	for id := range s.newIDs {
		s.stoppedIDs[id] = true
	}
	clear(s.newIDs)
	s.newFDs = nil
	s.stoppedAt = MonotonicNow()
}

// ForgetStoppedThreads lets go of the ids of the events StopNewThreads closed once the
// records up to readTo (a time of MonotonicNow's clock) are read, and readTo is past their
// closing.
func (s *Session) ForgetStoppedThreads(readTo uint64) {
	if len(s.stoppedIDs) == 0 || readTo <= s.stoppedAt {
		return
	}
	for id := range s.stoppedIDs {
		delete(s.switchIDs, id)
	}
	clear(s.stoppedIDs)
}
