package perfevent

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// openAll opens the session's events with the CPU-sampling event typ/config: the
// sampling events (per thread, or per CPU), their rings, epoll over the rings, then the
// off-CPU events.
func (s *Session) openAll(cfg Config, cpus []int, typ uint32, config uint64) error {
	s.reset(cfg, cpus, typ, config)
	switches, err := s.openThreads(cfg, cpus, typ, config)
	if err != nil {
		return err
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
	if err := s.openEpoll(); err != nil {
		return err
	}
	s.openOffCPU(cfg, switches)
	return nil
}

// reset sets the session's state for opening its events with cfg anew.
func (s *Session) reset(cfg Config, cpus []int, typ uint32, config uint64) {
	s.OffCPU = cfg.OffCPU && !cfg.SystemWide
	s.OffCPURate, s.everyFDs, s.everyIDs, s.offSampled = 0, nil, map[uint64]bool{}, false
	if s.OffCPU && cfg.OffCPURate > 0 {
		s.OffCPURate = min(cfg.OffCPURate, maxSampleRate())
	}
	s.switchIDs = map[uint64]bool{}
	s.wakingIDs = map[uint64]bool{}
	s.events, s.counters = eventState{}, counterState{}
	s.runtimeIDs = map[uint64]bool{}
	s.deadIDs = map[uint64]bool{}
	s.newIDs, s.stoppedIDs, s.stoppedAt = map[uint64]bool{}, map[uint64]bool{}, 0
	s.resizable = cfg.ResizableStack && cfg.CallGraph == "dwarf" && !cfg.SystemWide && periodsSurviveReopen(typ, config)
	s.cfg, s.evType, s.evConfig = cfg, typ, config
	s.off = !cfg.EnableOnExec
	s.CPUWide = cfg.CPUWide && !cfg.SystemWide && !cfg.EnableOnExec && !s.resizable && s.cpuWideAllowed(cfg, cpus[0], typ, config)
}

// periodsSurviveReopen says whether events of type typ and config, opened anew in the
// middle of a recording (ResizeStack), report with each sample the events that elapsed
// since the last. The clocks are: the kernel turns their frequency into a fixed period of
// nanoseconds. Hardware events reload each period and report the one that elapsed. Other
// software events (page-faults, context-switches, tracepoints) in frequency mode start over
// from a period of 1 and report the period they adjust to, not the one that elapsed: two
// page-fault samples a millisecond apart, 320 faults a millisecond, reported 6,169 and
// 19,998, and a recording of 200,000 faults summed up to 216,000.
func periodsSurviveReopen(typ uint32, config uint64) bool {
	switch typ {
	case unix.PERF_TYPE_HARDWARE, unix.PERF_TYPE_HW_CACHE, unix.PERF_TYPE_RAW:
		return true
	case unix.PERF_TYPE_SOFTWARE:
		return config == unix.PERF_COUNT_SW_CPU_CLOCK || config == unix.PERF_COUNT_SW_TASK_CLOCK
	}
	return false
}

// openThreads opens, for each of cfg's threads (every task, system-wide) on each CPU,
// its events and the rings they write into, and lists where the context-switch events
// are to go.
func (s *Session) openThreads(cfg Config, cpus []int, typ uint32, config uint64) ([]switchTarget, error) {
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
			var r *mappedRing
			if i == 0 && anchored {
				var err error
				if r, err = s.openAnchor(cfg, pid, cpu); err != nil {
					return nil, err
				}
			}
			var target *mappedRing
			var gone bool
			var err error
			if s.CPUWide {
				target, gone, err = s.openThreadOfCPUWide(cfg, pid, cpu, r)
			} else {
				target, gone, err = s.openSampling(cfg, i, pid, cpu, typ, config, anchored, r)
			}
			if err != nil {
				return nil, err
			}
			if gone {
				break // the thread ended while we attached
			}
			if s.OffCPU && target != nil {
				switches = append(switches, switchTarget{pid, cpu, target})
			}
			if err := s.openCounters(cfg, pid, cpu); err != nil {
				if i > 0 && errors.Is(err, unix.ESRCH) {
					break
				}
				return nil, err
			}
			if err := s.openOtherEvents(cfg, pid, cpu, target); err != nil {
				if i > 0 && errors.Is(err, unix.ESRCH) {
					break
				}
				return nil, err
			}
		}
	}
	return switches, nil
}

// openAnchor opens the dummy event of the first thread on cpu, which carries the side
// band, and maps its ring.
func (s *Session) openAnchor(cfg Config, pid, cpu int) (*mappedRing, error) {
	// The dummy is built like the sampling event, so that the ring's records share its
	// layout (sample_id_all) and wakeups.
	d := s.attr(cfg, unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_DUMMY, cfg.EnableOnExec)
	dfd, err := unix.PerfEventOpen(d, pid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("open the side-band event for pid %d on cpu %d: %w", pid, cpu, err)
	}
	s.fds = append(s.fds, dfd)
	r, err := mapRing(dfd, cpu, cfg.RingPages)
	if err != nil {
		return nil, err
	}
	s.rings = append(s.rings, r)
	return r, nil
}

// openThreadOfCPUWide sets up a thread on cpu of a CPU-wide session: sampled by the
// CPU's own event (openCPUWide), its off-CPU events are the thread's, into the CPU's
// ring (r, where the thread's own dummy carries the side band), which it returns (nil:
// none). gone says the thread ended while we attached.
func (s *Session) openThreadOfCPUWide(cfg Config, pid, cpu int, r *mappedRing) (target *mappedRing, gone bool, err error) {
	if r != nil {
		return r, false, nil
	}
	r = s.ringOf(cpu)
	if r == nil {
		return nil, false, nil
	}
	// The processes another thread forks are the target's too: its forks and exits come
	// from a dummy of its own (the first thread's carries the mappings and names, which
	// are the process's).
	d := s.attr(cfg, unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_DUMMY, cfg.EnableOnExec)
	d.Bits &^= sideBand
	d.Bits |= unix.PerfBitTask
	dfd, err := unix.PerfEventOpen(d, pid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if errors.Is(err, unix.ESRCH) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("open the side-band event for pid %d on cpu %d: %w", pid, cpu, err)
	}
	s.fds = append(s.fds, dfd)
	if err := unix.IoctlSetInt(dfd, unix.PERF_EVENT_IOC_SET_OUTPUT, r.fd); err != nil {
		return nil, false, fmt.Errorf("redirect the side-band event of pid %d on cpu %d: %w", pid, cpu, err)
	}
	return r, false, nil
}

// openSampling opens the CPU-sampling event of the i-th thread pid on cpu, into ring r
// (the anchor's), a ring of its own (the first thread's), or the first thread's ring on
// cpu, and returns the ring it writes into (nil: none). gone says the thread ended while
// we attached.
func (s *Session) openSampling(cfg Config, i, pid, cpu int, typ uint32, config uint64, anchored bool, r *mappedRing) (target *mappedRing, gone bool, err error) {
	// Only the first thread's events carry mmap/comm/task side-band records, so they are
	// not duplicated per thread.
	a := s.attr(cfg, typ, config, cfg.EnableOnExec)
	if i > 0 || anchored {
		a.Bits &^= sideBand
	}
	fd, err := unix.PerfEventOpen(a, pid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
	keepProbes(cfg.Events)
	if err != nil {
		if i > 0 && errors.Is(err, unix.ESRCH) {
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("open perf event for pid %d on cpu %d: %w", pid, cpu, err)
	}
	s.fds = append(s.fds, fd)
	s.sampleFDs = append(s.sampleFDs, fd)
	switch {
	case r != nil:
		target = r
	case i == 0:
		r, err := mapRing(fd, cpu, cfg.RingPages)
		if err != nil {
			return nil, false, err
		}
		s.rings = append(s.rings, r)
		return r, false, nil
	default:
		for _, r := range s.rings {
			if r.cpu == cpu {
				target = r
			}
		}
		if target == nil {
			return nil, false, nil
		}
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, target.fd); err != nil {
		return nil, false, fmt.Errorf("redirect perf event of pid %d on cpu %d: %w", pid, cpu, err)
	}
	return target, false, nil
}

// openEpoll watches the rings with epoll.
func (s *Session) openEpoll() error {
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
	return nil
}

// openOffCPU opens the context-switch events, and the wakers', for switches. They come
// last: what they cannot have (descriptors) the CPU samples already hold.
func (s *Session) openOffCPU(cfg Config, switches []switchTarget) {
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
	if s.OffCPU && !cfg.NoRuntime {
		s.openRuntime(cfg, switches)
	}
	if s.OffCPU && !cfg.NoDeaths {
		s.openDeaths(cfg)
	}
}
