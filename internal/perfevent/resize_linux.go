package perfevent

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/perfrecord"
)

// StackSize is the user stack copy, in bytes, the CPU samples take now (0 unless "dwarf").
func (s *Session) StackSize() int {
	if s.cfg.CallGraph != "dwarf" {
		return 0
	}
	return int(stackSize(s.cfg))
}

// Resizable says whether ResizeStack may reopen the sampling events: asked for
// (Config.ResizableStack), and an event whose samples' periods stay true when reopened
// (periodsSurviveReopen).
func (s *Session) Resizable() bool { return s.resizable }

// ErrThreadsChanged says ResizeStack gave up because the target started threads while it
// opened the new events; the old events go on, and a later try may find the threads still.
var ErrThreadsChanged = errors.New("resize the stack copy: the target started threads meanwhile")

// ErrNoThreads says ResizeStack found no live thread of the target to open events for: it
// has ended, or is ending.
var ErrNoThreads = errors.New("no thread to sample")

// minStackResize is the smallest copy ResizeStack takes.
const minStackResize = 512

// ResizeStack reopens the CPU-sampling events with a user stack copy of size bytes (rounded
// down to 8, from 512 to perfrecord.MaxStackUser), in a session opened with
// Config.ResizableStack: the copy costs the profiled threads in their own time, however
// shallow their stacks. The new events are opened per thread tids lists and inherited by the
// threads those start; tids is asked again after, and a thread it lists that was not
// covered ends the resize with ErrThreadsChanged (it may or may not have inherited a new
// event). cut is when the new events had all started.
//
// The old events go on sampling, and threads started meanwhile inherit them too, until
// RetireStack closes them (a later ResizeStack does first): the caller picks, thread by
// thread, whose samples count. A sample's copy size (perfrecord.Sample.StackSize) tells the two
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
	if size < minStackResize || size > perfrecord.MaxStackUser {
		return 0, fmt.Errorf("resize the stack copy to %d bytes: out of %d to %d", size, minStackResize, perfrecord.MaxStackUser)
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
	var opened, members []int // the new sampling events, the counters of their groups
	fail := func(err error) (uint64, error) {
		for _, fd := range opened {
			s.closeCounterGroup(fd)
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
			keepProbes(cfg.Events)
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
			if len(cfg.Counters) > 0 {
				fds, err := s.openCounterGroup(cfg, tid, r.cpu, fd)
				members = append(members, fds...)
				if errors.Is(err, unix.ESRCH) {
					break // the thread ended
				}
				if err != nil {
					return fail(err)
				}
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
		return fail(ErrNoThreads)
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
	s.fds = append(append(s.fds, opened...), members...)
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
		for _, m := range s.closeCounterGroup(fd) {
			old[m] = true
		}
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
