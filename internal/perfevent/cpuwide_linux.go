package perfevent

import (
	"fmt"

	"golang.org/x/sys/unix"
)

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
	keepProbes(cfg.Events)
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
		keepProbes(cfg.Events)
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
