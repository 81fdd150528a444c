package proc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// userHZ is the unit of the times in /proc/PID/stat: fixed at 100 per second in the
// kernel's interface on every architecture Linux runs stax on.
const userHZ = 100

// Age is how long ago process pid started (its starttime in /proc/PID/stat, against
// CLOCK_BOOTTIME), to the hundredth of a second.
func Age(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	start, err := statStartTime(b)
	if err != nil {
		return 0, fmt.Errorf("pid %d: %w", pid, err)
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0, err
	}
	now := time.Duration(ts.Nano())
	started := time.Duration(start) * (time.Second / userHZ)
	return max(0, now-started), nil
}

// statStartTime is the starttime field (the 22nd) of a /proc/PID/stat line. The command
// name before it is in parentheses and may hold any byte, spaces and parentheses
// included: the fields are counted from the last ')'.
func statStartTime(b []byte) (uint64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat: no command name")
	}
	fields := bytes.Fields(b[i+1:])
	const startField = 22 - 3 // fields[0] is the 3rd field, the state
	if len(fields) <= startField {
		return 0, fmt.Errorf("stat: %d fields after the command name, want more than %d", len(fields), startField)
	}
	v, err := strconv.ParseUint(string(fields[startField]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stat: starttime: %w", err)
	}
	return v, nil
}

// ExitWatch returns a channel closed once process pid has exited (it is a zombie, or gone),
// from a pidfd polled by the Go runtime's poller: no thread wakes to look before then. stop
// releases the pidfd (the channel is then closed too). It fails where the kernel has no
// pidfd_open (before 5.3) or pid does not exist.
func ExitWatch(pid int) (exited <-chan struct{}, stop func(), err error) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil, nil, fmt.Errorf("watch pid %d for its exit: %w", pid, err)
	}
	f := os.NewFile(uintptr(fd), "pidfd:"+strconv.Itoa(pid))
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// A pidfd is readable (POLLIN) once its process has exited; it cannot be read.
		rc.Read(func(fd uintptr) bool {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, 0)
			return (n > 0 && fds[0].Revents != 0) || (err != nil && err != unix.EINTR)
		})
	}()
	var once sync.Once
	return done, func() { once.Do(func() { f.Close() }) }, nil
}

// Start is when process pid started: its starttime in /proc/PID/stat (clock ticks since
// boot, which identifies the process together with its pid), and that time on the wall
// clock (CLOCK_REALTIME, to the hundredth of a second, never later than the true start).
func Start(pid int) (ticks uint64, at time.Time, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, time.Time{}, err
	}
	ticks, err = statStartTime(b)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	var boot, real unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot); err != nil {
		return 0, time.Time{}, err
	}
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &real); err != nil {
		return 0, time.Time{}, err
	}
	age := time.Duration(boot.Nano()) - time.Duration(ticks)*(time.Second/userHZ)
	return ticks, time.Unix(0, real.Nano()).Add(-age), nil
}
