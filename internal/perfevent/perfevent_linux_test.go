package perfevent

import (
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/perfrecord"
	"github.com/stax-profiler/stax/internal/testutil"
)

func TestParseCPUList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
		bad  bool
	}{
		{in: "0", want: []int{0}},
		{in: "0-3", want: []int{0, 1, 2, 3}},
		{in: "0,2-3,7", want: []int{0, 2, 3, 7}},
		{in: "", bad: true},
		{in: "a-b", bad: true},
		{in: "1-x", bad: true},
	} {
		got, err := parseCPUList(c.in)
		if c.bad != (err != nil) || (!c.bad && !reflect.DeepEqual(got, c.want)) {
			t.Errorf("parseCPUList(%q) = %v, %v", c.in, got, err)
		}
	}
}

// threadCPU is the calling thread's CPU time.
func threadCPU() time.Duration {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}

var sink uint64

// TestSamplesThisThread opens events on this test's own thread, burns CPU time and reads
// samples with this thread's id and a callchain back from the rings.
func TestSamplesThisThread(t *testing.T) {
	testutil.RequirePerf(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	s, err := Open(Config{Pids: []int{tid}, Freq: 999})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Event == "" {
		t.Error("no event name")
	}
	if err := s.Enable(); err != nil {
		t.Fatal(err)
	}
	dec := perfrecord.Decoder{SampleType: SampleType, SampleIDAll: true}
	samples := 0
	// 200 ms of this thread's CPU time: about 200 samples at 999 Hz.
	for end := threadCPU() + 200*time.Millisecond; threadCPU() < end; {
		for i := 0; i < 1<<16; i++ {
			sink += uint64(i)
		}
	}
	s.Disable()
	err = s.Read(func(cpu int, rec []byte) {
		h, err := perfrecord.ParseHeader(rec)
		if err != nil || h.Type != perfrecord.TypeSample {
			return
		}
		var smp perfrecord.Sample
		if err := dec.Sample(rec, &smp); err != nil {
			t.Errorf("decode sample: %v", err)
			return
		}
		if int(smp.Tid) != tid || int(smp.Pid) != os.Getpid() || len(smp.Callchain) == 0 {
			t.Errorf("sample of pid %d tid %d with %d frames; want %d/%d with a callchain", smp.Pid, smp.Tid, len(smp.Callchain), os.Getpid(), tid)
		}
		samples++
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d samples from 200 ms of CPU time (%s)", samples, s.Event)
	if samples < 50 {
		t.Errorf("%d samples from 200 ms of CPU time at 999 Hz", samples)
	}
}

// sleeper starts a process that sleeps and opens events on it: rings that stay empty.
func sleeper(t *testing.T) *Session {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	s, err := Open(Config{Pids: []int{cmd.Process.Pid}, Freq: 999})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Enable(); err != nil {
		t.Fatal(err)
	}
	return s
}

// inEpollWait reports whether a thread of this process is blocked in epoll_wait or
// epoll_pwait on fd.
func inEpollWait(t *testing.T, fd int) bool {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/syscall")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		nr, _ := strconv.Atoi(f[0])
		arg, _ := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 64)
		if (nr == unix.SYS_EPOLL_WAIT || nr == unix.SYS_EPOLL_PWAIT) && int(arg) == fd {
			return true
		}
	}
	return false
}

// TestWaitParksTheGoroutine: Wait leaves no thread blocked in epoll_wait on the rings'
// descriptor. A thread held in a system call is taken back by Go's monitor thread after
// 10 ms, which then wakes every 20 us for a while: with the recorder's other goroutines
// coming and going, a few percent of a core spent on nothing.
func TestWaitParksTheGoroutine(t *testing.T) {
	testutil.RequirePerf(t)
	s := sleeper(t)
	if s.epfd < 0 {
		t.Fatal("no epoll descriptor")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Wait(3 * time.Second)
	}()
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if inEpollWait(t, s.epfd) {
			t.Fatal("a thread is blocked in epoll_wait on the rings' descriptor")
		}
	}
	select {
	case <-done:
		t.Fatal("Wait(3s) returned within a second with nothing to read")
	default:
	}
	<-done
}

// TestWaitTimesOut: with nothing to read, each Wait lasts its timeout.
func TestWaitTimesOut(t *testing.T) {
	testutil.RequirePerf(t)
	s := sleeper(t)
	const waits, timeout = 5, 20 * time.Millisecond
	start := time.Now()
	for range waits {
		s.Wait(timeout)
	}
	if took := time.Since(start); took < waits*timeout*9/10 {
		t.Errorf("%d waits of %v took %v: a wait returned early with nothing to read", waits, timeout, took)
	}
}

// TestWaitWakesWhenARingFills: a Wait under way returns once samples fill a ring past its
// watermark, long before its timeout.
func TestWaitWakesWhenARingFills(t *testing.T) {
	testutil.RequirePerf(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s, err := Open(Config{Pids: []int{unix.Gettid()}, Freq: 999, RingPages: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		s.Wait(time.Minute)
		done <- time.Since(start)
	}()
	time.Sleep(50 * time.Millisecond) // most likely Wait is parked by now; if not, it returns at once all the same
	if err := s.Enable(); err != nil {
		t.Fatal(err)
	}
	// A quarter of 4 pages is some 20-40 samples with their callchains: at 999 Hz, tens of
	// milliseconds of this thread's CPU time. Burn up to 30 s of it.
	for end := threadCPU() + 30*time.Second; threadCPU() < end; {
		for i := 0; i < 1<<16; i++ {
			sink += uint64(i)
		}
		select {
		case took := <-done:
			t.Logf("Wait returned after %v, the fullest ring %.0f%% full", took, 100*s.Fill())
			return
		default:
		}
	}
	t.Fatalf("Wait did not return in 30 s of CPU time sampled at 999 Hz (fullest ring %.0f%% full)", 100*s.Fill())
}
