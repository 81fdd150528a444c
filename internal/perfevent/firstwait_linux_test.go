package perfevent

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// The ids of the events StopNewThreads closed stay switch events until the records up to
// their closing are read: a stack they took, read after, is still a wait's stack.
func TestStoppedFollowersStaySwitchEventsUntilRead(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	fd, err := unix.Dup(int(w.Fd())) // StopNewThreads closes it
	if err != nil {
		t.Fatal(err)
	}
	s := &Session{switchIDs: map[uint64]bool{1: true, 7: true}, newIDs: map[uint64]bool{7: true}, stoppedIDs: map[uint64]bool{}}
	s.newFDs, s.fds = []int{fd}, []int{fd}
	before := MonotonicNow()
	s.StopNewThreads()
	if len(s.fds) != 0 || len(s.newIDs) != 0 {
		t.Fatalf("stopped: fds %v, new ids %v", s.fds, s.newIDs)
	}
	if !s.IsSwitchEvent(7) {
		t.Fatal("a stopped follower's id is no longer a switch event before its records are read")
	}
	s.ForgetStoppedThreads(before)
	if !s.IsSwitchEvent(7) {
		t.Fatal("forgotten with the records read only up to before it stopped")
	}
	s.ForgetStoppedThreads(MonotonicNow() + 1)
	if s.IsSwitchEvent(7) || !s.IsSwitchEvent(1) {
		t.Fatalf("after the records past its stop were read: switch ids %v, want 1 alone", s.switchIDs)
	}
}
