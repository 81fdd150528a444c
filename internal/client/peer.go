package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/proc"
)

// How long a live run's recorder is given to answer. A stopped recorder is noticed sooner:
// the kernel accepts a connection into a stopped listener's backlog, so only the
// recorder's state says that no answer will come.
var (
	queryTimeout = 30 * time.Second // a query (top, flame, status, the whole run)
	stopTimeout  = 60 * time.Second // stax stop: the recorder saves the run before it answers
	// A recorder found stopped for this long is given up on: a debugger's or a shell's
	// brief stop is waited out.
	stoppedGrace = time.Second
	watchEvery   = 100 * time.Millisecond
)

// WaitGrace is how much longer than the time a long poll (stax wait) asked the recorder
// to wait the client waits for its answer.
const WaitGrace = 10 * time.Second

// NoAnswerError says a live run's recorder did not answer: it is stopped, or it did not
// answer in time.
type NoAnswerError struct {
	Run   string
	Pid   int           // the recorder's process, 0 when unknown
	State byte          // 'T' (stopped by a signal), 't' (by a debugger), else 0
	After time.Duration // how long it was waited for when it is not stopped
}

func (e *NoAnswerError) Error() string {
	switch {
	case e.State == 'T':
		return fmt.Sprintf("recorder pid %d of run %s is stopped (SIGSTOP, or Ctrl-Z in its shell) and cannot answer; resume it with kill -CONT %d", e.Pid, e.Run, e.Pid)
	case e.State == 't':
		return fmt.Sprintf("recorder pid %d of run %s is stopped by a debugger and cannot answer; continue it in the debugger", e.Pid, e.Run)
	case e.Pid > 0:
		return fmt.Sprintf("recorder pid %d of run %s did not answer within %s (it is not stopped: it may be overloaded); try again, or see stax list", e.Pid, e.Run, e.After.Round(time.Second))
	}
	return fmt.Sprintf("the recorder of run %s did not answer within %s; try again, or see stax list", e.Run, e.After.Round(time.Second))
}

// Pid is the pid of a live run's recorder, as its socket says (SO_PEERCRED); 0 when
// unknown (not yet connected, or in another pid namespace).
func (r *Run) Pid() int { return int(r.pid.Load()) }

// Stopped says whether a live run's recorder is stopped now (SIGSTOP, Ctrl-Z, a
// debugger), and returns the error a query of it would give.
func (r *Run) Stopped() (*NoAnswerError, bool) {
	pid := r.Pid()
	if !r.Live || pid <= 0 {
		return nil, false
	}
	st, err := proc.ReadStat(pid)
	if err != nil || !st.Stopped() {
		return nil, false
	}
	return &NoAnswerError{Run: r.ID, Pid: pid, State: st.State}, true
}

// peerPid is the pid of the process at the other end of a unix socket connection: for a
// client, the one that listened.
func peerPid(c net.Conn) int {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0
	}
	var cred *unix.Ucred
	raw.Control(func(fd uintptr) {
		cred, _ = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if cred == nil {
		return 0
	}
	return int(cred.Pid)
}

// watch gives up on a request (cancels ctx with a *NoAnswerError) once the recorder has
// been stopped for stoppedGrace. The returned function ends the watch.
func (r *Run) watch(ctx context.Context, cancel context.CancelCauseFunc) func() {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(watchEvery)
		defer tick.Stop()
		var since time.Time
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			na, stopped := r.Stopped()
			switch {
			case !stopped:
				since = time.Time{}
			case since.IsZero():
				since = time.Now()
			case time.Since(since) >= stoppedGrace:
				cancel(na)
				return
			}
		}
	}()
	return func() { close(done) }
}

// noAnswer turns a request's failure into a *NoAnswerError when the watch gave up on it
// or its deadline passed; otherwise it returns nil.
func (r *Run) noAnswer(ctx context.Context, began time.Time) error {
	var na *NoAnswerError
	if errors.As(context.Cause(ctx), &na) {
		return na
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		if na, stopped := r.Stopped(); stopped {
			return na
		}
		return &NoAnswerError{Run: r.ID, Pid: r.Pid(), After: time.Since(began)}
	}
	return nil
}
