package perfevent

import (
	"os"
	"reflect"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/record"
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
	dec := record.Decoder{SampleType: SampleType, SampleIDAll: true}
	samples := 0
	// 200 ms of this thread's CPU time: about 200 samples at 999 Hz.
	for end := threadCPU() + 200*time.Millisecond; threadCPU() < end; {
		for i := 0; i < 1<<16; i++ {
			sink += uint64(i)
		}
	}
	s.Disable()
	err = s.Read(func(cpu int, rec []byte) {
		h, err := record.ParseHeader(rec)
		if err != nil || h.Type != record.TypeSample {
			return
		}
		var smp record.Sample
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
