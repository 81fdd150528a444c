package perfevent

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A task's last moments: the kernel ends a task's perf events in do_exit, where it writes
// its PERF_RECORD_EXIT, and the task goes on, to tell its parent and let go of what it
// held, then switches out for the last time, dead. On a busy machine it may wait for a CPU
// in between (34 ms for a bash under make -j2): its own events are gone, so no switch
// record of it says so. A CPU-wide sched:sched_switch, filtered to the switches out of
// dead tasks, gives the time of that last switch: from the exit record to it, the task
// was runnable or ran the kernel's exit code.

// deadFilter keeps, of sched_switch's events, the last switch out of a task: its state
// is EXIT_DEAD or EXIT_ZOMBIE (TASK_REPORT's 0x10 and 0x20). A preempted task's is
// TASK_REPORT_MAX alone (0x100), or 0.
const deadFilter = "prev_state & 0x30"

// openDeaths opens, for each ring's CPU, sched:sched_switch for every task on the CPU,
// filtered to the last switches out (deadFilter), without stacks, started at once (its
// samples of tasks that are not the target's are the reader's to drop). It takes root
// or CAP_PERFMON; without, the time from a task's exit record to its end is not
// recorded, and a note says why where it was not for want of the privilege.
func (s *Session) openDeaths(cfg Config) {
	tp, err := readTracepoint("sched", "sched_switch")
	if err == nil {
		var ok bool
		if s.DeadPid, ok = tp.fields["prev_pid"]; !ok || (s.DeadPid.Size != 4 && s.DeadPid.Size != 8) {
			err = errors.New("sched_switch has no prev_pid field")
		}
	}
	var opened []int
	for _, r := range s.rings {
		if err != nil {
			break
		}
		a := s.attr(cfg, unix.PERF_TYPE_TRACEPOINT, tp.id, false)
		a.Sample_type = RuntimeSampleType(cfg)
		a.Sample_stack_user, a.Sample_regs_user = 0, 0
		a.Bits &^= sideBand | unix.PerfBitInherit | unix.PerfBitDisabled | unix.PerfBitExcludeKernel |
			unix.PerfBitExcludeCallchainUser | unix.PerfBitExcludeCallchainKernel | unix.PerfBitFreq
		a.Sample = 1
		fd, e := unix.PerfEventOpen(a, -1, r.cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if e != nil {
			err = fmt.Errorf("open sched_switch on cpu %d: %w", r.cpu, e)
			break
		}
		opened = append(opened, fd)
		if e := unix.IoctlSetString(fd, unix.PERF_EVENT_IOC_SET_FILTER, deadFilter); e != nil {
			err = fmt.Errorf("filter sched_switch to dead tasks: %w", e)
			break
		}
		var id uint64
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.PERF_EVENT_IOC_ID, uintptr(unsafe.Pointer(&id))); e != 0 {
			err = fmt.Errorf("read sched_switch id: %w", e)
			break
		}
		if e := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, r.fd); e != nil {
			err = fmt.Errorf("redirect sched_switch on cpu %d: %w", r.cpu, e)
			break
		}
		s.deadIDs[id] = true
	}
	if err != nil || len(opened) == 0 {
		for _, fd := range opened {
			unix.Close(fd)
		}
		clear(s.deadIDs)
		if err != nil && !errors.Is(err, os.ErrPermission) {
			s.Note = strings.TrimSpace(s.Note + "\nthe time from a task's exit to its end is not recorded: " + err.Error())
		}
		return
	}
	s.fds = append(s.fds, opened...)
	s.Deaths = true
}

// IsDeathEvent says whether a sample's event id is one of the events openDeaths opened:
// the sample is the last switch out of task DeadPid of its raw data (and of the task
// it names, the one that ran).
func (s *Session) IsDeathEvent(id uint64) bool { return s.deadIDs[id] }
