package recorder

import (
	"encoding/binary"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/perfrecord"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/store"
)

// appendSample appends a PERF_RECORD_SAMPLE in perfevent.SampleType's layout (ip, pid/tid,
// time, cpu, period, callchain) to buf.
func appendSample(buf []byte, pid, tid uint32, t uint64, cpu uint32, chain []uint64) []byte {
	start := len(buf)
	b := append(buf, make([]byte, 8)...)
	binary.LittleEndian.PutUint32(b[start:], perfrecord.TypeSample)
	binary.LittleEndian.PutUint16(b[start+4:], 2) // PERF_RECORD_MISC_USER
	b = binary.LittleEndian.AppendUint64(b, chain[1])
	b = binary.LittleEndian.AppendUint32(b, pid)
	b = binary.LittleEndian.AppendUint32(b, tid)
	b = binary.LittleEndian.AppendUint64(b, t)
	b = binary.LittleEndian.AppendUint32(b, cpu)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint64(b, 1001001)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(chain)))
	for _, a := range chain {
		b = binary.LittleEndian.AppendUint64(b, a)
	}
	binary.LittleEndian.PutUint16(b[start+6:], uint16(len(b)-start))
	return b
}

// syntheticSource delivers n samples over a fixed set of stacks and threads, a batch per
// Read, and measures the heap once a minute's worth are in and named, and again at the end.
type syntheticSource struct {
	n, next  int
	stacks   [][]uint64
	buf      []byte
	done     chan struct{}
	once     sync.Once
	early    uint64 // heap in use after the first minute, less the time series
	late     uint64 // heap in use at the end, less the time series
	series   int    // the time series' bytes at the end
	measured bool
	// seriesBytes is the recorder's time series size, which grows by design; named says
	// whether every stack seen has been named (the heap is measured after that).
	seriesBytes func() int
	named       func() bool
}

func newSynthetic(n, nstacks int) *syntheticSource {
	s := &syntheticSource{n: n, done: make(chan struct{})}
	for i := range nstacks {
		chain := []uint64{perfrecord.ContextUser}
		for d := range 30 {
			chain = append(chain, 0x400000+uint64(i*4096+d*64))
		}
		s.stacks = append(s.stacks, chain)
	}
	return s
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func (s *syntheticSource) Read(fn func(cpu int, rec []byte)) error {
	end := min(s.next+4096, s.n)
	s.buf = s.buf[:0] // the last Read's records are done with
	for ; s.next < end; s.next++ {
		i := s.next
		tid := uint32(1000 + i%16)
		at := len(s.buf)
		s.buf = appendSample(s.buf, 1000, tid, uint64(i)*1e6/2, uint32(i%2), s.stacks[i%len(s.stacks)])
		fn(i%2, s.buf[at:len(s.buf):len(s.buf)])
	}
	if !s.measured && s.next >= s.n/60 && s.named() {
		s.early, s.measured = heapInUse()-uint64(s.seriesBytes()), true
	}
	if s.next == s.n {
		s.once.Do(func() {
			s.series = s.seriesBytes()
			s.late = heapInUse() - uint64(s.series)
			close(s.done)
		})
	}
	return nil
}

func (s *syntheticSource) Wait(time.Duration)    {}
func (s *syntheticSource) Enable() error         { return nil }
func (s *syntheticSource) Disable()              {}
func (s *syntheticSource) Close()                {}
func (s *syntheticSource) Done() <-chan struct{} { return s.done }

// BenchmarkReplayHour feeds the recorder an hour at 999 Hz on two CPUs (7.2M samples) over
// 2,000 distinct stacks of 30 frames: once the stacks are known, its heap beyond the
// per-sample time series must stay flat (heap-growth-% is the growth from the first minute
// to the end; the target is under 10); series-bytes/sample is what each sample costs.
// Run: go test ./internal/recorder -run '^$' -bench ReplayHour -benchtime 1x
func BenchmarkReplayHour(b *testing.B) {
	b.Setenv("STAX_HOME", b.TempDir())
	const samples = 3600 * 999 * 2
	for b.Loop() {
		src := newSynthetic(samples, 2000)
		r, err := Replay(src, store.Meta{Pid: 1000, Command: []string{"synthetic"}}, Options{Freq: 999, Checkpoint: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		// The synthetic stacks' code: an executable mapping, so their return addresses count.
		r.tracker.AddMapping(1000, proc.Mapping{Start: 0x400000, End: 0x10000000, Path: "/synthetic"})
		src.seriesBytes = func() int { return r.run.Stats().SeriesBytes }
		src.named = func() bool { st := r.run.Stats(); return st.NamedKeys == st.Keys }
		start := time.Now()
		r.Loop()
		el := time.Since(start)
		b.ReportMetric(float64(samples)/el.Seconds(), "samples/s")
		b.ReportMetric(float64(src.early)/(1<<20), "heap-MB-early")
		b.ReportMetric(float64(src.late)/(1<<20), "heap-MB-end")
		b.ReportMetric((float64(src.late)-float64(src.early))*100/float64(src.early), "heap-growth-%")
		b.ReportMetric(float64(src.series)/samples, "series-bytes/sample")
	}
}
