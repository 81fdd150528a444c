package perfevent

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/perfrecord"
)

// The scheduler's own clock of a thread's time on CPU: sched:sched_stat_runtime fires each
// time the scheduler adds to a thread's run time (sum_exec_runtime, schedstat's first
// field), at a switch, a tick, a wakeup, with the time added in its raw data. The switch
// records time a thread's run from after the context switch and the switch in of its
// events to after the stack sample of its wait (an 8 KiB copy with DWARF stacks), and
// count the time interrupts and a hypervisor took from it: 0.98 to 1.13 times schedstat
// for a thread that runs ~50 us at a time. Summing the tracepoint's run times gives
// schedstat's, but for the scheduler's work after the thread's events are gone at its
// exit, and for run time the scheduler adds from another task's context (a wakeup made
// from another CPU into the thread's run queue), which the thread's events do not see.

// RuntimeSampleType is the sample layout of the sched_stat_runtime events: that of the
// CPU samples (SampleTypeFor) without stacks, with the raw data. Its fields up to the
// time, and the sample_id trailer of any other record the events write, lie where the CPU
// samples' do.
func RuntimeSampleType(cfg Config) uint64 {
	st, _ := SampleTypeFor(cfg)
	return st&^(perfrecord.SampleCallchain|perfrecord.SampleRegsUser|perfrecord.SampleStackUser) | perfrecord.SampleRaw
}

// openRuntime opens sched:sched_stat_runtime, sampled at every run time it adds, for each
// of the context-switch events' threads and CPUs, into their rings. It takes root or
// CAP_PERFMON; without, or if the kernel refuses it, the time on CPU is the switch
// records' and a note says why where it was not for want of the privilege.
func (s *Session) openRuntime(cfg Config, targets []switchTarget) {
	tp, err := readTracepoint("sched", "sched_stat_runtime")
	if err == nil {
		var ok bool
		s.RuntimePid, ok = tp.fields["pid"]
		if !ok || (s.RuntimePid.Size != 4 && s.RuntimePid.Size != 8) {
			err = errors.New("sched_stat_runtime has no pid field")
		}
		if s.RuntimeNs, ok = tp.fields["runtime"]; err == nil && (!ok || s.RuntimeNs.Size != 8) {
			err = errors.New("sched_stat_runtime has no runtime field")
		}
	}
	var opened []int
	for _, t := range targets {
		if err != nil {
			break
		}
		a := s.attr(cfg, unix.PERF_TYPE_TRACEPOINT, tp.id, cfg.EnableOnExec)
		a.Sample_type = RuntimeSampleType(cfg)
		a.Sample_stack_user, a.Sample_regs_user = 0, 0
		// The tracepoint fires in the kernel: excluding the kernel would exclude it.
		a.Bits &^= sideBand | unix.PerfBitExcludeKernel | unix.PerfBitExcludeCallchainUser | unix.PerfBitExcludeCallchainKernel | unix.PerfBitFreq
		a.Sample = 1
		fd, e := unix.PerfEventOpen(a, t.pid, t.cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if e != nil {
			if errors.Is(e, unix.ESRCH) {
				continue
			}
			err = fmt.Errorf("open sched_stat_runtime: %w", e)
			break
		}
		opened = append(opened, fd)
		var id uint64
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.PERF_EVENT_IOC_ID, uintptr(unsafe.Pointer(&id))); e != 0 {
			err = fmt.Errorf("read sched_stat_runtime id: %w", e)
			break
		}
		if e := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, t.r.fd); e != nil {
			err = fmt.Errorf("redirect sched_stat_runtime: %w", e)
			break
		}
		s.runtimeIDs[id] = true
	}
	if err != nil || len(opened) == 0 {
		for _, fd := range opened {
			unix.Close(fd)
		}
		clear(s.runtimeIDs)
		if err != nil && !errors.Is(err, os.ErrPermission) {
			s.Note = strings.TrimSpace(s.Note + "\ntime on CPU is the switch records', not the scheduler's: " + err.Error())
		}
		return
	}
	s.fds = append(s.fds, opened...)
	s.runtimeFDs = opened
	s.Runtime = true
}

// RuntimeCounted is the run time, in ns, the sched_stat_runtime events counted since they
// were enabled, those of the threads that inherited them included (false: not open, or
// a count could not be read): what their samples add up to when none was lost, and a
// little more (a run time passed to two threads' events is counted by both; one of a
// thread that is not the target's, passed to a target thread's event, is counted).
func (s *Session) RuntimeCounted() (uint64, bool) { return countAll(s.runtimeFDs) }

// IsRuntimeEvent says whether a sample's event id is a sched_stat_runtime event's: the
// run time the scheduler added to the thread in its raw data (RuntimeNs, of thread
// RuntimePid).
func (s *Session) IsRuntimeEvent(id uint64) bool { return s.runtimeIDs[id] }
