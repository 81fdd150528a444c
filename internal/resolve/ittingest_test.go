package resolve

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/jit"
	"github.com/stax-profiler/stax/internal/spans"
)

// writeITTFile writes a spans file as the collector writes one for threads threads that
// each run tasks of a few names, nested two deep: each thread's records go in 32 KiB
// writes, the threads' writes interleaved. It returns the tasks written.
func writeITTFile(tb testing.TB, path string, pid uint32, threads, tasks int) int {
	le := binary.LittleEndian
	rec := func(b []byte, typ uint16, size int, tid uint32) []byte {
		b = le.AppendUint16(b, typ)
		b = le.AppendUint16(b, uint16(size))
		return le.AppendUint32(b, tid)
	}
	names := []string{"frame", "update", "render", "physics"}
	out := make([]byte, 16, 16+tasks*40+threads*len(names)*32)
	copy(out, spans.ITTMagic)
	le.PutUint32(out[8:], pid)
	bufs := make([][]byte, threads)
	clock := make([]uint64, threads)
	written := 0
	for written < tasks {
		for th := 0; th < threads && written < tasks; th++ {
			tid := 1000 + uint32(th)
			b := bufs[th]
			if clock[th] == 0 { // the thread's first buffer names its keys
				for i, n := range names {
					b = rec(b, 1, 16+(len(n)+7)&^7, tid)
					b = le.AppendUint64(b, uint64(0x1000+i*8))
					b = append(b, n...)
					for len(b)%8 != 0 {
						b = append(b, 0)
					}
				}
			}
			// One outer task and its inner one: the inner ends first.
			start := 1e9 + clock[th]*1000
			key := uint64(0x1000 + (written/2%(len(names)-1)+1)*8)
			b = rec(b, 2, 40, tid)
			b = le.AppendUint64(b, key)
			b = le.AppendUint64(b, start+100)
			b = le.AppendUint64(b, start+600)
			b = le.AppendUint64(b, 1)
			b = rec(b, 2, 40, tid)
			b = le.AppendUint64(b, 0x1000)
			b = le.AppendUint64(b, start)
			b = le.AppendUint64(b, start+900)
			b = le.AppendUint64(b, 0)
			written += 2
			clock[th]++
			if len(b)+80 > 32<<10 {
				out = append(out, b...)
				b = b[:0]
			}
			bufs[th] = b
		}
	}
	for _, b := range bufs {
		out = append(out, b...)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		tb.Fatal(err)
	}
	return written
}

// BenchmarkITTIngest is what the recorder spends per ITT task: a spans file from 16 threads
// read by the watcher's poll, decoded and kept in a span set. kept: a million tasks, a
// run's budget (spans.MaxSpans); past-bound: twice as many, the second million counted
// as dropped. It reports ns and allocations per span read.
func BenchmarkITTIngest(b *testing.B) {
	for _, c := range []struct {
		name  string
		tasks int
	}{{"kept", spans.MaxSpans}, {"past-bound", 2 * spans.MaxSpans}} {
		b.Run(c.name, func(b *testing.B) { benchIngest(b, c.tasks) })
	}
}

func benchIngest(b *testing.B, tasks int) {
	pid := uint32(os.Getpid())
	path := filepath.Join(b.TempDir(), "itt-1.spans")
	n := writeITTFile(b, path, pid, 16, tasks)
	w := NewJITWatcher(nil, nil)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		set := spans.NewSet()
		w.spans = set
		tl, err := jit.OpenITTSpanTailer(path, int(pid), uint32(os.Getuid()))
		if err != nil {
			b.Fatal(err)
		}
		s := &watchedSource{kind: jit.SourceITTSpans, path: path, itt: tl, pid: int(pid),
			spanSrc: set.Source(spans.KindITT, int(pid), path)}
		for w.pollITT(s) {
		}
		tl.Close()
		got, src := set.Snapshot()
		if want := min(n, spans.MaxSpans); got.Len() != want || src[0].Received != uint64(n) || src[0].Dropped != uint64(n-want) || src[0].Error != "" {
			b.Fatalf("kept %d spans of %d: %+v", got.Len(), n, src[0])
		}
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&after)
	read := float64(b.N * n)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/read, "ns/span")
	// The process's CPU time, the garbage collector's included: on a busy machine it
	// says more than the elapsed time.
	b.ReportMetric(float64(cpu.Nanoseconds())/read, "cpu-ns/span")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/read, "allocs/span")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/read, "B/span")
}

// cpuTime is the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Once the set keeps no more spans, the spans read are counted (received and dropped) with
// the same counts of bad records, writer's drops and notes as when they are kept.
func TestPollITTPastBoundCounts(t *testing.T) {
	le := binary.LittleEndian
	rec := func(b []byte, typ uint16, words ...uint64) []byte {
		b = le.AppendUint16(b, typ)
		b = le.AppendUint16(b, uint16(8+8*len(words)))
		b = le.AppendUint32(b, 7)
		for _, w := range words {
			b = le.AppendUint64(b, w)
		}
		return b
	}
	pid := uint32(os.Getpid())
	b := make([]byte, 16)
	copy(b, spans.ITTMagic)
	le.PutUint32(b[8:], pid)
	b = rec(b, 1, 0x10, le.Uint64([]byte("work\x00\x00\x00\x00")))
	b = rec(b, 2, 0x10, 100, 200, 0)     // a task
	b = rec(b, 2, 0x10, 100, 300, 1<<32) // unfinished
	b = rec(b, 2, 0x10, 300, 200, 0)     // ends before it starts: bad
	b = rec(b, 3, 0x10, 400)             // a marker
	b = rec(b, 4, 5)                     // the writer dropped 5
	b = rec(b, 5, 2, 3)                  // 2 ends without a begin, 3 left open
	b = rec(b, 9, 1)                     // unknown: bad
	path := filepath.Join(t.TempDir(), "itt-1.spans")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	read := func(full bool) spans.Source {
		set := spans.NewSet()
		if full {
			src := set.Source(spans.KindMark, 0, "")
			for i := 0; !set.Full(); i++ {
				set.Add(spans.Span{Name: "x", Start: uint64(i), End: uint64(i), Source: src})
			}
		}
		w := NewJITWatcher(nil, set)
		tl, err := jit.OpenITTSpanTailer(path, int(pid), uint32(os.Getuid()))
		if err != nil {
			t.Fatal(err)
		}
		defer tl.Close()
		s := &watchedSource{kind: jit.SourceITTSpans, path: path, itt: tl, pid: int(pid),
			spanSrc: set.Source(spans.KindITT, int(pid), path)}
		for w.pollITT(s) {
		}
		_, srcs := set.Snapshot()
		return srcs[s.spanSrc]
	}
	kept, past := read(false), read(true)
	want := spans.Source{Kind: spans.KindITT, Pid: int(pid), Path: path, Received: 8, Dropped: 5, Bad: 2, Unmatched: 2, Unfinished: 4}
	if kept != want {
		t.Errorf("kept: %+v, want %+v", kept, want)
	}
	want.Dropped = 8
	if past != want {
		t.Errorf("past the bound: %+v, want %+v", past, want)
	}
}

// A collector writes its spans file in the STAX_JIT_DIR of the process, possibly only as
// the process exits: once it is gone, the watcher still looks there.
func TestJITWatcherFindsSpansLeftInTheJITDir(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("sleep", "60")
	cmd.Env = append(os.Environ(), "STAX_JIT_DIR="+dir)
	if err := cmd.Start(); err != nil {
		t.Skip("cannot start sleep:", err)
	}
	pid := cmd.Process.Pid
	// Start returns while the exec may still be setting up the new image's environment.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, ok := jit.ReadEnvJITDir(pid); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the process's environment is not readable after 10 s")
		}
	}
	set := spans.NewSet()
	w := NewJITWatcher(nil, set)
	defer w.Close()
	w.Track(pid)
	w.round(false, nil) // the process is looked at while it runs; it has written nothing yet
	cmd.Process.Kill()
	cmd.Wait()
	n := writeITTFile(t, filepath.Join(dir, "itt-"+strconv.Itoa(pid)+".spans"), uint32(pid), 1, 10)
	w.Finish(time.Now().Add(5 * time.Second))
	if got, srcs := set.Snapshot(); got.Len() != n {
		t.Errorf("%d spans read of the %d the exited process left in its STAX_JIT_DIR (sources %+v)", got.Len(), n, srcs)
	}
}
