package perfevent

import (
	"encoding/binary"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/perfrecord"
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
		dec := perfrecord.Decoder{SampleType: st, SampleIDAll: true}
		rdec := perfrecord.Decoder{SampleType: RuntimeSampleType(cfg), SampleIDAll: true}
		var outs, ins, stacks int
		var ran int64
		err = s.Read(func(cpu int, rec []byte) {
			h, _ := perfrecord.ParseHeader(rec)
			switch h.Type {
			case perfrecord.TypeSwitch:
				sw, err := dec.Switch(rec)
				if err != nil || int(sw.SampleID.Tid) != tid {
					t.Errorf("switch %+v, %v; want one of thread %d", sw, err, tid)
				}
				if sw.Out {
					outs++
				} else {
					ins++
				}
			case perfrecord.TypeSample:
				var smp perfrecord.Sample
				if id := binary.LittleEndian.Uint64(rec[8:]); s.IsRuntimeEvent(id) || s.IsDeathEvent(id) {
					// The scheduler's run times and the last switches: no stacks.
					if err := rdec.Sample(rec, &smp); err != nil {
						t.Errorf("decode a sample without a stack: %v", err)
					} else if of, _ := s.RuntimePid.Value(smp.Raw); s.IsRuntimeEvent(id) && int(of) == tid {
						ns, _ := s.RuntimeNs.Value(smp.Raw)
						ran += ns
					}
					return
				}
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
		t.Logf("user-only %v: %d switches out, %d in, %d stacks; the scheduler's run times (%v) %d ns", userOnly, outs, ins, stacks, s.Runtime, ran)
		if s.Runtime && ran <= 0 {
			t.Errorf("the scheduler's run times are open and gave the thread none")
		}
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

// pingPong hands a byte back and forth between two threads of this process through two
// pipes, rounds times, once they are attached to: each round switches both out.
func pingPong(t *testing.T, rounds int, attach func(tids []int)) {
	t.Helper()
	var ab, ba [2]int
	if err := unix.Pipe2(ab[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	if err := unix.Pipe2(ba[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, fd := range []int{ab[0], ab[1], ba[0], ba[1]} {
			unix.Close(fd)
		}
	}()
	tids := make(chan int, 2)
	start := make(chan struct{})
	done := make(chan error, 2)
	side := func(in, out int, first bool) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tids <- unix.Gettid()
		<-start
		b := []byte{'x'}
		for range rounds {
			if first {
				if _, err := unix.Write(out, b); err != nil {
					done <- err
					return
				}
			}
			if _, err := unix.Read(in, b); err != nil {
				done <- err
				return
			}
			if !first {
				if _, err := unix.Write(out, b); err != nil {
					done <- err
					return
				}
			}
		}
		done <- nil
	}
	go side(ba[0], ab[1], true)
	go side(ab[0], ba[1], false)
	attach([]int{<-tids, <-tids})
	close(start)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("ping-pong: %v", err)
		}
	}
}

// switchCounts are a session's switch records and switch-event samples.
type switchCounts struct {
	outs, ins, stacks, lost int
	period                  uint64 // the switches out the stack samples stand for
}

// readSwitches reads s from now on, until the function it returns is called: that one
// disables s, reads what is left and returns the counts.
func readSwitches(t *testing.T, s *Session, cfg Config) func() switchCounts {
	st, _ := SampleTypeFor(cfg)
	dec := perfrecord.Decoder{SampleType: st, SampleIDAll: true}
	var c switchCounts
	read := func() {
		err := s.Read(func(cpu int, rec []byte) {
			h, _ := perfrecord.ParseHeader(rec)
			switch h.Type {
			case perfrecord.TypeSwitch:
				sw, err := dec.Switch(rec)
				switch {
				case err != nil:
					t.Errorf("decode switch: %v", err)
				case sw.Out:
					c.outs++
				default:
					c.ins++
				}
			case perfrecord.TypeSample:
				var smp perfrecord.Sample
				if err := dec.Sample(rec, &smp); err == nil && s.IsSwitchEvent(smp.ID) && len(smp.Callchain) > 0 {
					c.stacks++
					c.period += smp.Period
				}
			case perfrecord.TypeLost:
				c.lost++
			}
		})
		if err != nil {
			t.Errorf("read the rings: %v", err)
		}
	}
	stop := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			default:
			}
			s.Wait(10 * time.Millisecond)
			read()
		}
	}()
	return func() switchCounts {
		close(stop)
		<-stopped
		s.Disable()
		read()
		return c
	}
}

// TestSampledSwitchStacks: with OffCPURate, sampled, a ping-pong of two threads that switch far
// more often than the rate gets far fewer stacks of switches out than switches, and every
// switch record still: each stack sample stands for the switches of its period.
func TestSampledSwitchStacks(t *testing.T) {
	testutil.RequirePerf(t)
	const rounds = 50_000
	const rate = 100
	var s *Session
	var stop func() switchCounts
	pingPong(t, rounds, func(tids []int) {
		cfg := Config{Pids: tids, Freq: 99, OffCPU: true, OffCPURate: rate}
		var err error
		if s, err = Open(cfg); err != nil {
			t.Fatal(err)
		}
		if !s.OffCPU || s.OffCPURate != rate {
			t.Fatalf("off-CPU %v at %d Hz: %s", s.OffCPU, s.OffCPURate, s.Note)
		}
		if err := s.Enable(); err != nil {
			t.Fatal(err)
		}
		if err := s.SampleOffCPU(true); err != nil {
			t.Fatal(err)
		}
		stop = readSwitches(t, s, cfg)
	})
	c := stop()
	woken, counted := s.WakeupsCounted()
	s.Close()
	t.Logf("%d switches out, %d in, %d stacks standing for %d switches, %d lost records, %d wakeups counted", c.outs, c.ins, c.stacks, c.period, c.lost, woken)
	// Each wait but the first is ended by the other thread's write: the sampling wakers
	// count them all, whatever they sampled.
	if s.Wakers && (!counted || woken < uint64(c.outs)/2) {
		t.Errorf("wakeups counted: %d (%v), want at least half the %d switches out", woken, counted, c.outs)
	} else if !s.Wakers && counted {
		t.Errorf("wakeups counted (%d) without wakers", woken)
	}
	if c.lost > 0 {
		t.Skipf("%d records lost: the rings were not read in time", c.lost)
	}
	// Not every round switches both threads out: the other may answer before one blocks.
	if c.outs < rounds/4 || c.ins < rounds/4 {
		t.Fatalf("%d switches out and %d in from %d rounds of two threads", c.outs, c.ins, rounds)
	}
	if c.stacks*10 > c.outs {
		t.Errorf("%d stacks of %d switches out at %d Hz: want far fewer", c.stacks, c.outs, rate)
	}
	// Each sample stands for the switches out since the one before it: together, about all.
	if c.period > 2*uint64(c.outs) || c.period < uint64(c.outs)/2 {
		t.Errorf("the stack samples stand for %d switches out, of %d", c.period, c.outs)
	}
}
