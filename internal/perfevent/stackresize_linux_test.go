package perfevent

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/perfrecord"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/testutil"
)

// burner is testdata/resize.c running: a thread that burns CPU per line written to it.
type burner struct {
	pid   int
	in    io.Writer
	lines chan string
	exe   string
}

func startBurner(t *testing.T) *burner {
	t.Helper()
	dir := t.TempDir()
	exe := testutil.CC(t, dir, "resize", "gcc", "-O1", "-pthread", filepath.Join("testdata", "resize.c"))
	cmd := exec.Command(exe, exe)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	b := &burner{pid: cmd.Process.Pid, in: in, lines: make(chan string, 16), exe: exe}
	go func() {
		defer close(b.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			b.lines <- sc.Text()
		}
	}()
	return b
}

// thread starts a burning thread, mapping the program's file first if mapped, and returns
// its id and the mapping's address.
func (b *burner) thread(t *testing.T, mapped bool) (tid int, addr uint64) {
	t.Helper()
	cmd := "b\n"
	if mapped {
		cmd = "m\n"
	}
	if _, err := io.WriteString(b.in, cmd); err != nil {
		t.Fatal(err)
	}
	select {
	case line, ok := <-b.lines:
		if !ok {
			t.Fatal("the program ended")
		}
		if _, err := fmt.Sscanf(line, "thread %d %x", &tid, &addr); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no thread started in 30 s")
	}
	return tid, addr
}

type sampleOf struct {
	tid  int
	size uint64
	time uint64
}

// resizeReader keeps what a session's rings hold of one process: its CPU samples, its
// threads' MMAP2 and FORK records.
type resizeReader struct {
	s     *Session
	pid   int
	dec   perfrecord.Decoder
	smp   []sampleOf
	mmaps []perfrecord.Mmap2
	forks []int
	lost  uint64
}

func newResizeReader(s *Session, cfg Config, pid int) *resizeReader {
	st, regs := SampleTypeFor(cfg)
	return &resizeReader{s: s, pid: pid, dec: perfrecord.Decoder{SampleType: st, RegsUserMask: regs, SampleIDAll: true}}
}

func (r *resizeReader) read(t *testing.T) {
	t.Helper()
	err := r.s.Read(func(cpu int, rec []byte) {
		h, err := perfrecord.ParseHeader(rec)
		if err != nil {
			t.Errorf("record header: %v", err)
			return
		}
		switch h.Type {
		case perfrecord.TypeSample:
			var smp perfrecord.Sample
			if err := r.dec.Sample(rec, &smp); err != nil {
				t.Errorf("decode sample: %v", err)
			} else if int(smp.Pid) == r.pid {
				r.smp = append(r.smp, sampleOf{int(smp.Tid), smp.StackSize, smp.Time})
			}
		case perfrecord.TypeMmap2:
			m, err := r.dec.Mmap2(rec)
			if err != nil {
				t.Errorf("decode mmap2: %v", err)
			} else if int(m.Pid) == r.pid {
				r.mmaps = append(r.mmaps, m)
			}
		case perfrecord.TypeFork:
			f, err := r.dec.Task(rec)
			if err != nil {
				t.Errorf("decode fork: %v", err)
			} else if int(f.Pid) == r.pid {
				r.forks = append(r.forks, int(f.Tid))
			}
		case perfrecord.TypeLost:
			if l, err := r.dec.Lost(rec); err == nil {
				r.lost += l.Lost
			}
		}
	})
	if err != nil {
		t.Fatalf("read the rings: %v", err)
	}
}

// until reads the rings until done says so, for at most 30 s.
func (r *resizeReader) until(t *testing.T, what string, done func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); ; {
		r.read(t)
		if done() {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("no %s in 30 s (%d samples, %d records lost)", what, len(r.smp), r.lost)
		}
		r.s.Wait(10 * time.Millisecond)
	}
}

// count counts the samples of thread tid with a copy of size bytes, timed at or after from.
func (r *resizeReader) count(tid int, size, from uint64) int {
	n := 0
	for _, s := range r.smp {
		if s.tid == tid && s.size == size && s.time >= from {
			n++
		}
	}
	return n
}

func (r *resizeReader) mapped(tid int, addr uint64) bool {
	return slices.ContainsFunc(r.mmaps, func(m perfrecord.Mmap2) bool {
		return int(m.Tid) == tid && m.Addr == addr && m.Prot&unix.PROT_EXEC != 0
	})
}

// TestResizeStack shrinks, then grows, the stack copy of a recording of a process whose
// threads burn CPU: after each resize every thread, the old and one started since, is sampled
// with the new copy; a thread started since maps a file and the side band still reports it
// and the thread; the old events go on sampling until RetireStack, and their samples end then.
func TestResizeStack(t *testing.T) {
	testutil.RequirePerf(t)
	b := startBurner(t)
	cfg := Config{Pids: []int{b.pid}, Freq: 999, CallGraph: "dwarf", ResizableStack: true}
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Enable(); err != nil {
		t.Fatal(err)
	}
	if got := s.StackSize(); got != DefaultStackSize {
		t.Fatalf("StackSize() = %d at the start, want %d", got, DefaultStackSize)
	}
	for _, r := range s.rings {
		if slices.Contains(s.sampleFDs, r.fd) {
			t.Fatalf("the ring of cpu %d is a sampling event's", r.cpu)
		}
	}
	r := newResizeReader(s, cfg, b.pid)
	var threads []int // the burning threads
	for range 2 {
		tid, _ := b.thread(t, false)
		threads = append(threads, tid)
	}
	const enough = 5 // samples of a thread that show it sampled
	r.until(t, "samples of both threads", func() bool {
		return r.count(threads[0], DefaultStackSize, 0) >= enough && r.count(threads[1], DefaultStackSize, 0) >= enough
	})
	for _, smp := range r.smp {
		if smp.size != DefaultStackSize {
			t.Fatalf("a sample of thread %d with a copy of %d bytes before any resize", smp.tid, smp.size)
		}
	}

	// A thread that has ended is skipped.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	passes := 0
	tids := func() []int {
		passes++
		ids, err := proc.ThreadIDs(b.pid)
		if err != nil {
			t.Errorf("threads of %d: %v", b.pid, err)
		}
		return append(ids, gone.Process.Pid)
	}
	old := uint64(DefaultStackSize)
	retired := map[uint64]uint64{} // a replaced copy's size: when RetireStack returned
	// stale checks that no sample has a copy retired before it was taken.
	stale := func() {
		n := 0
		for _, smp := range r.smp {
			if end, ok := retired[smp.size]; ok && smp.time >= end {
				n++
			}
		}
		if n > 0 {
			t.Errorf("%d samples with a copy retired before they were taken", n)
		}
	}
	for _, size := range []int{2048, 4096} {
		passes = 0
		cut, err := s.ResizeStack(size+7, tids) // rounded down
		after := MonotonicNow()
		if err != nil {
			t.Fatalf("resize to %d: %v", size, err)
		}
		if got := s.StackSize(); got != size {
			t.Fatalf("StackSize() = %d after a resize to %d", got, size)
		}
		if passes < 2 {
			t.Errorf("tids asked %d times: want again until it lists no new thread", passes)
		}
		cpus := len(s.rings)
		if want := (len(threads) + 1) * cpus; len(s.sampleFDs) != want {
			t.Errorf("%d sampling events for %d threads on %d cpus", len(s.sampleFDs), len(threads)+1, cpus)
		}
		if len(s.fds) != cpus+len(s.sampleFDs)+len(s.retiring) || len(s.retiring) == 0 {
			t.Errorf("%d events open: want %d dummies, %d sampling events and the %d replaced", len(s.fds), cpus, len(s.sampleFDs), len(s.retiring))
		}
		tid, addr := b.thread(t, true)
		r.until(t, fmt.Sprintf("samples of %d bytes from every thread, the mapping and the fork of thread %d", size, tid), func() bool {
			for _, th := range append(threads, tid) {
				if r.count(th, uint64(size), cut) < enough {
					return false
				}
			}
			return r.mapped(tid, addr) && slices.Contains(r.forks, tid)
		})
		threads = append(threads, tid)
		stale()
		late, dup := 0, 0
		for _, smp := range r.smp {
			switch {
			case smp.size != DefaultStackSize && smp.size != 2048 && smp.size != 4096:
				t.Errorf("a sample of thread %d with a copy of %d bytes", smp.tid, smp.size)
			case smp.size == old && smp.time >= cut:
				late++
			case smp.size == uint64(size) && smp.time < cut:
				dup++
			case smp.tid == tid && smp.size != uint64(size) && smp.size != old:
				t.Errorf("a sample of thread %d, started after the resize to %d, with a copy of %d bytes", tid, size, smp.size)
			}
		}
		// The burning threads ran long enough for the new copy's samples: the old events,
		// not retired yet, sampled them too.
		if late == 0 {
			t.Errorf("resize %d -> %d: no sample of the old copy after the cut: the old events stopped before RetireStack", old, size)
		}
		s.RetireStack()
		retired[old] = MonotonicNow()
		if len(s.retiring) != 0 || len(s.fds) != cpus+len(s.sampleFDs) {
			t.Errorf("after RetireStack: %d events open, %d retiring: want %d dummies and %d sampling events", len(s.fds), len(s.retiring), cpus, len(s.sampleFDs))
		}
		t.Logf("resize %d -> %d: %d samples of the new copy before the cut, %d of the old after it (%v between the cut and the return); %d records lost",
			old, size, dup, late, time.Duration(after-cut), r.lost)
		old = uint64(size)
	}
	from := len(r.smp)
	r.until(t, "samples after the last retirement", func() bool {
		n := 0
		for _, smp := range r.smp[from:] {
			if smp.size == 4096 {
				n++
			}
		}
		return n >= enough*len(threads)
	})
	stale()
}

// TestResizeStackRefused: a session not opened resizable, a size out of bounds or the size
// it has, and a list of threads that have all ended are refused, and the events stay.
func TestResizeStackRefused(t *testing.T) {
	testutil.RequirePerf(t)
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	cpus, err := OnlineCPUs()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cfg     Config
		stack   int
		dummies bool
	}{
		{cfg: Config{CallGraph: "dwarf"}, stack: DefaultStackSize},
		{cfg: Config{ResizableStack: true}}, // fp: nothing to resize
		{cfg: Config{CallGraph: "dwarf", ResizableStack: true, StackSize: 4096}, stack: 4096, dummies: true},
	} {
		cfg := c.cfg
		cfg.Pids, cfg.Freq = []int{cmd.Process.Pid}, 999
		s, err := Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Enable(); err != nil {
			t.Fatal(err)
		}
		want := len(cpus)
		if c.dummies {
			want *= 2
		}
		if len(s.fds) != want || len(s.sampleFDs) != len(cpus) {
			t.Errorf("%+v: %d events, %d sampling; want %d, %d", c.cfg, len(s.fds), len(s.sampleFDs), want, len(cpus))
		}
		fds, sampleFDs := slices.Clone(s.fds), slices.Clone(s.sampleFDs)
		asked := false
		live := func() []int { asked = true; return []int{cmd.Process.Pid} }
		dead := func() []int { return []int{gone.Process.Pid} }
		if !c.dummies {
			if _, err := s.ResizeStack(2048, live); err == nil || asked {
				t.Errorf("%+v: resize: error %v, the threads asked for: %v", c.cfg, err, asked)
			}
		}
		for _, try := range []struct {
			size int
			tids func() []int
		}{{100, live}, {perfrecord.MaxStackUser + 8, live}, {c.stack, live}, {2048, dead}} {
			if !c.dummies {
				break
			}
			if _, err := s.ResizeStack(try.size, try.tids); err == nil {
				t.Errorf("%+v: resize to %d: no error", c.cfg, try.size)
			} else {
				t.Logf("resize to %d: %v", try.size, err)
			}
		}
		if s.StackSize() != c.stack || !slices.Equal(s.fds, fds) || !slices.Equal(s.sampleFDs, sampleFDs) {
			t.Errorf("%+v: after the refusals, copy %d bytes, events %v (sampling %v); want %d, %v (%v)", c.cfg, s.StackSize(), s.fds, s.sampleFDs, c.stack, fds, sampleFDs)
		}
		for _, fd := range fds {
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
				t.Errorf("%+v: event %d closed: %v", c.cfg, fd, err)
			}
		}
		s.Close()
	}
}

// TestResizeStackOffCPU: the context-switch events write into the dummies' rings, and go on
// doing so after a resize.
func TestResizeStackOffCPU(t *testing.T) {
	testutil.RequirePerf(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	cfg := Config{Pids: []int{tid}, Freq: 99, OffCPU: true, CallGraph: "dwarf", ResizableStack: true}
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.OffCPU {
		t.Fatalf("no off-CPU events: %s", s.Note)
	}
	if err := s.Enable(); err != nil {
		t.Fatal(err)
	}
	st, regs := SampleTypeFor(cfg)
	dec := perfrecord.Decoder{SampleType: st, RegsUserMask: regs, SampleIDAll: true}
	const sleeps = 10
	// switches sleeps on this thread and counts the switch records and switch stacks read.
	switches := func() (outs, ins, stacks int) {
		for range sleeps {
			unix.Nanosleep(&unix.Timespec{Nsec: int64(2 * time.Millisecond)}, nil)
		}
		err := s.Read(func(cpu int, rec []byte) {
			h, _ := perfrecord.ParseHeader(rec)
			switch h.Type {
			case perfrecord.TypeSwitch:
				if sw, err := dec.Switch(rec); err == nil && int(sw.SampleID.Tid) == tid {
					if sw.Out {
						outs++
					} else {
						ins++
					}
				}
			case perfrecord.TypeSample:
				var smp perfrecord.Sample
				if err := dec.Sample(rec, &smp); err == nil && s.IsSwitchEvent(smp.ID) && int(smp.Tid) == tid {
					stacks++
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return outs, ins, stacks
	}
	outs, ins, stacks := switches()
	t.Logf("before the resize: %d switches out, %d in, %d stacks", outs, ins, stacks)
	if outs < sleeps || ins < sleeps || stacks < sleeps {
		t.Errorf("before the resize: %d switches out, %d in, %d stacks from %d sleeps", outs, ins, stacks, sleeps)
	}
	if _, err := s.ResizeStack(2048, func() []int { return []int{tid} }); err != nil {
		t.Fatal(err)
	}
	outs, ins, stacks = switches()
	t.Logf("after the resize: %d switches out, %d in, %d stacks", outs, ins, stacks)
	if outs < sleeps || ins < sleeps || stacks < sleeps {
		t.Errorf("after the resize: %d switches out, %d in, %d stacks from %d sleeps", outs, ins, stacks, sleeps)
	}
}

// TestResizeStackWithCounters: the counters read with each sample (Config.Counters) are
// reopened with the sampling events, a group under each new one: the new events' samples
// read them (their ids known to CounterOf), and RetireStack closes the old groups whole.
func TestResizeStackWithCounters(t *testing.T) {
	testutil.RequirePerf(t)
	b := startBurner(t)
	cfg := Config{Pids: []int{b.pid}, Freq: 999, CallGraph: "dwarf", ResizableStack: true,
		Counters: []EventSpec{{Name: "task-clock", Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_TASK_CLOCK}}}
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Resizable() {
		t.Fatal("a session reading counters was not opened resizable")
	}
	if err := s.Enable(); err != nil {
		t.Fatal(err)
	}
	tid, _ := b.thread(t, false)
	cut, err := s.ResizeStack(2048, func() []int {
		ids, _ := proc.ThreadIDs(b.pid)
		return ids
	})
	if err != nil {
		t.Fatal(err)
	}
	cpus := len(s.rings)
	if want := cpus + 2*len(s.sampleFDs) + 2*len(s.retiring); len(s.fds) != want {
		t.Errorf("%d events open after the resize: want %d dummies and a sampling event and a counter each for %d new and %d old", len(s.fds), want, len(s.sampleFDs), len(s.retiring))
	}
	st, regs := SampleTypeFor(cfg)
	dec := perfrecord.Decoder{SampleType: st | perfrecord.SampleRead, RegsUserMask: regs, SampleIDAll: true, ReadFormat: CounterReadFormat}
	var read, unread, unknown int
	for end := time.Now().Add(30 * time.Second); read < 5 && time.Now().Before(end); s.Wait(10 * time.Millisecond) {
		err := s.Read(func(cpu int, rec []byte) {
			h, err := perfrecord.ParseHeader(rec)
			if err != nil || h.Type != perfrecord.TypeSample {
				return
			}
			var smp perfrecord.Sample
			if err := dec.Sample(rec, &smp); err != nil {
				t.Errorf("decode a sample with its counters' read: %v", err)
				return
			}
			if int(smp.Tid) != tid || smp.StackSize != 2048 || smp.Time < cut {
				return
			}
			switch {
			case !s.IsCounterLeader(smp.ID) || len(smp.Read.Values) != 2:
				unread++
			case func() bool { _, ok := s.CounterOf(smp.Read.Values[1].ID); return !ok }():
				unknown++
			default:
				read++
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if read < 5 || unread > 0 || unknown > 0 {
		t.Errorf("samples of the new events: %d read the counters, %d read nothing, %d an unknown counter", read, unread, unknown)
	}
	s.RetireStack()
	if want := cpus + 2*len(s.sampleFDs); len(s.fds) != want || len(s.counters.members) != len(s.sampleFDs) {
		t.Errorf("after RetireStack: %d events open (want %d), %d groups (want %d)", len(s.fds), want, len(s.counters.members), len(s.sampleFDs))
	}
}
