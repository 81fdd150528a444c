package perfevent

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Wait blocks until a ring passes its watermark or timeout passes.
func (s *Session) Wait(timeout time.Duration) {
	if s.epfd < 0 {
		time.Sleep(timeout)
		return
	}
	var evs [16]unix.EpollEvent
	if s.epollRC != nil && s.epoll.SetReadDeadline(time.Now().Add(timeout)) == nil {
		// A wake-up from the poller ends the wait without asking epfd again: the poller's
		// own look at epfd consumed the rings' readiness (a perf descriptor reports it once).
		first := true
		s.epollRC.Read(func(uintptr) bool {
			if !first {
				return true
			}
			first = false
			n, err := unix.EpollWait(s.epfd, evs[:], 0)
			return n > 0 || (err != nil && err != unix.EINTR)
		})
		return
	}
	unix.EpollWait(s.epfd, evs[:], int(timeout.Milliseconds()))
}

// pollEpoll puts the epoll descriptor in Go's network poller (an epoll descriptor is
// readable when one it watches is ready). Where that fails, Wait blocks in epoll_wait.
func (s *Session) pollEpoll() {
	if err := unix.SetNonblock(s.epfd, true); err != nil {
		return
	}
	f := os.NewFile(uintptr(s.epfd), "epoll")
	if f == nil {
		return
	}
	s.epoll = f // it owns epfd from now on
	if rc, err := f.SyscallConn(); err == nil && f.SetReadDeadline(time.Time{}) == nil {
		s.epollRC = rc
	}
}
