package perfevent

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/record"
	"github.com/stax-profiler/stax/internal/testutil"
)

// TestSwitchesThisThread sleeps on this test's own thread and reads back a switch out and
// in per sleep, and, unless user-only, the stack of each switch out.
func TestSwitchesThisThread(t *testing.T) {
	testutil.RequirePerf(t)
	for _, userOnly := range []bool{false, true} {
		runtime.LockOSThread()
		tid := unix.Gettid()
		cfg := Config{Pids: []int{tid}, Freq: 99, OffCPU: true, UserOnly: userOnly}
		s, err := Open(cfg)
		if err != nil {
			runtime.UnlockOSThread()
			t.Fatal(err)
		}
		if !s.OffCPU {
			t.Fatalf("user-only %v: no off-CPU events: %s", userOnly, s.Note)
		}
		if err := s.Enable(); err != nil {
			t.Fatal(err)
		}
		const sleeps = 10
		for range sleeps {
			unix.Nanosleep(&unix.Timespec{Nsec: int64(2 * time.Millisecond)}, nil)
		}
		s.Disable()
		runtime.UnlockOSThread()
		st, _ := SampleTypeFor(cfg)
		dec := record.Decoder{SampleType: st, SampleIDAll: true}
		var outs, ins, stacks int
		err = s.Read(func(cpu int, rec []byte) {
			h, _ := record.ParseHeader(rec)
			switch h.Type {
			case record.TypeSwitch:
				sw, err := dec.Switch(rec)
				if err != nil || int(sw.SampleID.Tid) != tid {
					t.Errorf("switch %+v, %v; want one of thread %d", sw, err, tid)
				}
				if sw.Out {
					outs++
				} else {
					ins++
				}
			case record.TypeSample:
				var smp record.Sample
				if err := dec.Sample(rec, &smp); err != nil {
					t.Errorf("decode sample: %v", err)
				} else if s.IsSwitchEvent(smp.ID) && len(smp.Callchain) > 0 {
					stacks++
				}
			}
		})
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("user-only %v: %d switches out, %d in, %d stacks", userOnly, outs, ins, stacks)
		if outs < sleeps || ins < sleeps {
			t.Errorf("user-only %v: %d switches out and %d in from %d sleeps", userOnly, outs, ins, sleeps)
		}
		if !userOnly && stacks < sleeps {
			t.Errorf("%d stacks of switches out from %d sleeps", stacks, sleeps)
		}
	}
}

// TestSwitchEventsGiveWayToSamples: when the descriptors run out for the context-switch
// events, they are closed and the CPU samples are recorded without them.
func TestSwitchEventsGiveWayToSamples(t *testing.T) {
	testutil.RequirePerf(t)
	cpus, err := OnlineCPUs()
	if err != nil || len(cpus) < 2 {
		t.Skip("needs two CPUs")
	}
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	// Fill the descriptors up to a limit, then free room for the CPU events, the epoll
	// descriptor and one switch event: not two.
	lim := old
	lim.Cur = min(4096, old.Max)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	var held []int
	for {
		fd, err := unix.Dup(0)
		if err != nil {
			break
		}
		held = append(held, fd)
	}
	for _, fd := range held[len(held)-(len(cpus)+2):] {
		unix.Close(fd)
	}
	held = held[:len(held)-(len(cpus)+2)]
	defer func() {
		for _, fd := range held {
			unix.Close(fd)
		}
	}()
	s, err := Open(Config{Pids: []int{os.Getpid()}, Freq: 99, OffCPU: true, RingPages: 16})
	unix.Setrlimit(unix.RLIMIT_NOFILE, &old)
	if err != nil {
		t.Fatalf("open with too few descriptors for the switch events: %v", err)
	}
	defer s.Close()
	if s.OffCPU || !strings.Contains(s.Note, "off-CPU time is not recorded") {
		t.Errorf("off-CPU %v, note %q; want it off, and said", s.OffCPU, s.Note)
	}
	if len(s.fds) != len(cpus) {
		t.Errorf("%d events open, want the %d CPU events", len(s.fds), len(cpus))
	}
}
