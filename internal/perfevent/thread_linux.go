package perfevent

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

func (s *Session) openAll(cfg Config, cpus []int, typ uint32, config uint64) error {
	s.OffCPU = cfg.OffCPU && !cfg.SystemWide
	s.OffCPURate, s.everyFDs, s.everyIDs, s.offSampled = 0, nil, map[uint64]bool{}, false
	if s.OffCPU && cfg.OffCPURate > 0 {
		s.OffCPURate = min(cfg.OffCPURate, maxSampleRate())
	}
	s.switchIDs = map[uint64]bool{}
	s.wakingIDs = map[uint64]bool{}
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
