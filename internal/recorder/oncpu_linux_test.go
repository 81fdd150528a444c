package recorder

import "testing"

// TestOnCPUFromTheScheduler: with the scheduler's run times, a thread's time on CPU is
// their sum, not its switch records' spans; a thread's first run time is counted from when
// the events began; a run time added to another thread from this one's context counts for
// that thread, once, if it is the target's, and not otherwise.
func TestOnCPUFromTheScheduler(t *testing.T) {
	r := newRecorder(Options{OffCPU: true})
	r.off.on, r.off.runtime, r.off.begin = true, true, 1000
	r.tracker.Comm(1, 2, "main")
	r.tracker.Comm(1, 3, "worker")
	r.offRuntime(2, 2, 0, 1300, 5000) // ran since before the events began: 300 of it counted
	r.offSwitch(1, 2, 1400, true, false)
	r.offSwitch(1, 2, 2000, false, false)
	r.offRuntime(2, 2, 0, 2500, 450) // its run from 2000 less the scheduler's work
	r.offRuntime(2, 9, 0, 2600, 700) // another process's thread's run time, added from thread 2
	r.offSwitch(1, 2, 2600, true, false)
	r.offRuntime(3, 3, 1, 4000, 800)
	r.offRuntime(2, 3, 1, 4100, 60) // thread 3's, added from thread 2: read from both threads' events
	r.offRuntime(2, 3, 1, 4100, 60)
	r.offRuntime(77, 3, 1, 4200, 40) // from a thread not the target's: read from thread 3's event alone
	r.offFlush(5000, true)
	if got, _ := onCPU(r, 2); got != 300+450 {
		t.Errorf("thread 2: %d ns on CPU, want %d: the scheduler's run times", got, 300+450)
	}
	if got, ok := onCPU(r, 9); ok {
		t.Errorf("thread 9: %d ns on CPU from another thread's events, want none", got)
	}
	if got, _ := onCPU(r, 3); got != 800+60+40 {
		t.Errorf("thread 3: %d ns on CPU, want %d", got, 800+60+40)
	}
}
