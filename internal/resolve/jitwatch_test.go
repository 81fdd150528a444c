package resolve

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/jit"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/symbol"
)

// writeOwnPerfMap writes this process's perf map, as a JIT in it would, with n lines.
func writeOwnPerfMap(t *testing.T, n int) {
	t.Helper()
	path := "/tmp/perf-" + strconv.Itoa(os.Getpid()) + ".map"
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
	w := bufio.NewWriter(f)
	for i := range n {
		fmt.Fprintf(w, "%x 10 jitted_%d\n", 0x100000000+16*i, i)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func mapSource(t *testing.T, w *JITWatcher) store.JITSource {
	t.Helper()
	for _, s := range w.Sources() {
		if strings.HasSuffix(s.Path, ".map") {
			return s
		}
	}
	t.Fatalf("the perf map was not found: %+v", w.Sources())
	return store.JITSource{}
}

// TestJITWatcherKeepsToItsBudget gives the JIT tables a small budget: the watcher reads the
// whole file, keeps its newest functions within the budget, and counts the oldest dropped.
func TestJITWatcherKeepsToItsBudget(t *testing.T) {
	writeOwnPerfMap(t, 50000)
	r := New(proc.NewTracker(), symbol.Options{})
	r.jitBudget = jit.NewBudget(1 << 20)
	w := NewJITWatcher(r, nil)
	w.Track(os.Getpid())
	w.Finish(time.Now().Add(time.Minute))
	defer w.Close()

	table := r.JIT(uint32(os.Getpid()))
	if got := table.Bytes(); got > 1<<20 || got == 0 {
		t.Errorf("the table keeps %d bytes, want some and at most 1 MiB", got)
	}
	if used := r.JITBudget().Used(); used != table.Bytes() {
		t.Errorf("budget used %d, table holds %d", used, table.Bytes())
	}
	if _, ok := table.Lookup(0x100000000+16*49999, 1); !ok {
		t.Errorf("the last function was not kept")
	}
	if _, ok := table.Lookup(0x100000000, 1); ok {
		t.Errorf("the first function was kept beyond the budget")
	}
	src := mapSource(t, w)
	if st := table.Stats(); src.Evicted == 0 || src.Evicted != st.Evicted || uint64(st.Funcs)+st.Evicted != 50000 {
		t.Errorf("status does not count the functions dropped: %+v, table %+v", src, st)
	}
}

// TestJITWatcherSharesTheBudget: a process whose perf map took the whole budget gives back
// the share of another process whose JIT files come later, and keeps to its own: the
// other's functions are all kept, the flood's dropped ones counted against it alone.
func TestJITWatcherSharesTheBudget(t *testing.T) {
	writeOwnPerfMap(t, 50000)
	r := New(proc.NewTracker(), symbol.Options{})
	r.jitBudget = jit.NewBudget(1 << 20)
	w := NewJITWatcher(r, nil)
	w.Track(os.Getpid())
	w.Finish(time.Now().Add(time.Minute))
	defer w.Close()
	flood := r.JIT(uint32(os.Getpid()))
	if flood.Bytes() < 1<<20*9/10 {
		t.Fatalf("the flood keeps %d bytes, want nearly all the budget", flood.Bytes())
	}

	// A second process, with 800 functions: nearly its whole share.
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	path := "/tmp/perf-" + strconv.Itoa(other.Process.Pid) + ".map"
	var b strings.Builder
	for i := range 800 {
		fmt.Fprintf(&b, "%x 10 other_%d\n", 0x200000000+16*i, i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	w.Track(other.Process.Pid)
	w.Finish(time.Now().Add(time.Minute))

	ot := r.JIT(uint32(other.Process.Pid))
	if st := ot.Stats(); st.Funcs != 800 || st.Evicted != 0 || st.OverBudget != 0 {
		t.Errorf("the other process's table: %+v (flood %+v)", st, flood.Stats())
	}
	share := r.JITBudget().Share()
	if share != 1<<19 || w.JITShares() != 2 || flood.Bytes() > share || ot.Bytes() > share {
		t.Errorf("share %d of 2 (%d), tables %d and %d", share, w.JITShares(), flood.Bytes(), ot.Bytes())
	}
	if used := r.JITBudget().Used(); used != flood.Bytes()+ot.Bytes() || used > 1<<20 {
		t.Errorf("budget used %d, tables %d + %d", used, flood.Bytes(), ot.Bytes())
	}
	for _, s := range w.Sources() {
		switch s.Pid {
		case os.Getpid():
			if s.Evicted != flood.Stats().Evicted || s.Evicted == 0 {
				t.Errorf("the flood's evictions are not counted against it: %+v", s)
			}
		case other.Process.Pid:
			if s.Evicted != 0 || s.Functions != 800 {
				t.Errorf("the other process: %+v", s)
			}
		}
	}
}

// TestJITWatcherFinishStopsAtDeadline ends the reading of a large perf map at the deadline
// and says how much was read.
func TestJITWatcherFinishStopsAtDeadline(t *testing.T) {
	writeOwnPerfMap(t, 300000)
	r := New(proc.NewTracker(), symbol.Options{})
	w := NewJITWatcher(r, nil)
	w.Track(os.Getpid())
	w.Finish(time.Now()) // one round: one chunk of the file
	defer w.Close()
	if src := mapSource(t, w); !strings.Contains(src.Error, "not read to its end") {
		t.Errorf("status does not say the file was not read to its end: %+v", src)
	}
	if w.Watermark() != 0 {
		t.Errorf("the watermark moved (%d) though a file was not read to its end", w.Watermark())
	}
}

// TestJITWatcherWatermark moves the watermark once every file has been read.
func TestJITWatcherWatermark(t *testing.T) {
	writeOwnPerfMap(t, 10)
	r := New(proc.NewTracker(), symbol.Options{})
	w := NewJITWatcher(r, nil)
	w.Track(os.Getpid())
	before := monotonicNow()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		w.Run(stop)
	}()
	for w.Watermark() < before {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	<-done
	defer w.Close()
	if _, ok := r.JIT(uint32(os.Getpid())).Lookup(0x100000000+16*9, w.Watermark()); !ok {
		t.Errorf("a function written before the watermark is not in the table")
	}
}

// With no file to read, nothing waits for the watcher: its watermark is the current time.
// A file asked for by its path wakes the watcher, which reads it and keeps its watermark
// from then on.
func TestJITWatcherWithNoFiles(t *testing.T) {
	r := New(proc.NewTracker(), symbol.Options{})
	w := NewJITWatcher(r, nil)
	defer w.Close()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	w.Track(cmd.Process.Pid)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		w.Run(stop)
	}()
	defer func() { close(stop); <-done }()
	for !w.noFiles.Load() {
		time.Sleep(time.Millisecond)
	}
	if before := monotonicNow(); w.Watermark() < before {
		t.Errorf("with no files the watermark is %d, before %d", w.Watermark(), before)
	}

	writeOwnPerfMap(t, 10)
	w.Track(os.Getpid())
	for w.noFiles.Load() {
		time.Sleep(time.Millisecond)
	}
	mark := w.Watermark()
	if after := monotonicNow(); mark >= after {
		t.Errorf("with a file the watermark %d is not the last round's start (now %d)", mark, after)
	}
	for w.Watermark() <= mark {
		time.Sleep(time.Millisecond)
	}
	if _, ok := r.JIT(uint32(os.Getpid())).Lookup(0x100000000+16*9, w.Watermark()); !ok {
		t.Errorf("a function written before the watermark is not in the table")
	}
}

// TestJITWatcherFollowsOnlyLiveProcesses: the watcher searches a process's /proc while it
// runs; once its exit is known (the EXIT record, or /proc said it is gone) it looks no more,
// and Forget drops it. 200 short processes, of which the first half's exits are told, the
// others' found: after that, while a live process is searched on, the exited ones get
// no look at all.
func TestJITWatcherFollowsOnlyLiveProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 200 processes")
	}
	r := New(proc.NewTracker(), symbol.Options{})
	w := NewJITWatcher(r, nil)
	defer w.Close()
	w.SetBackoff(true)
	var mu sync.Mutex
	looks := map[int]int{}
	w.looks = func(pid int) {
		mu.Lock()
		looks[pid]++
		mu.Unlock()
	}
	lookCount := func(pid int) int {
		mu.Lock()
		defer mu.Unlock()
		return looks[pid]
	}
	live := exec.Command("sleep", "300")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	w.Track(live.Process.Pid)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { defer close(done); w.Run(stop) }()
	defer func() { close(stop); <-done }()

	const n = 200
	var pids []int
	reaped := map[int]int{} // looks when the process was reaped
	for i := 0; i < n; i++ {
		c := exec.Command("true")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		w.Track(c.Process.Pid)
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
		reaped[c.Process.Pid] = lookCount(c.Process.Pid)
		if i < n/2 {
			w.Exited(c.Process.Pid) // as its EXIT record says
		}
		pids = append(pids, c.Process.Pid)
	}
	// Wait, on the live process's searches, until the watcher has had its look at every
	// exited one: each Poke makes the live process due a search at the next round.
	waitLooks := func(k int) {
		t.Helper()
		want := lookCount(live.Process.Pid) + k
		deadline := time.Now().Add(time.Minute)
		for lookCount(live.Process.Pid) < want {
			w.Poke(live.Process.Pid)
			if time.Now().After(deadline) {
				t.Fatalf("the live process was searched %d times in a minute, want %d", lookCount(live.Process.Pid), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// The exits not told are found by a search: each is due one (with backoff, its first
	// comes scanEvery after it was tracked; a Poke makes it due now).
	for _, pid := range pids[n/2:] {
		w.Poke(pid)
	}
	waitLooks(3)
	before := map[int]int{}
	for _, pid := range pids {
		before[pid] = lookCount(pid)
	}
	waitLooks(5)
	for i, pid := range pids {
		if got := lookCount(pid) - before[pid]; got != 0 {
			t.Errorf("exited process %d (exit told: %v) was looked at %d times after its exit was known", pid, i < n/2, got)
		}
		if got := before[pid] - reaped[pid]; i >= n/2 && got > 1 {
			// Found gone by the look that failed.
			t.Errorf("exited process %d was looked at %d times after it was reaped, want at most 1", pid, got)
		}
	}
	for _, pid := range pids {
		if !w.Forget(pid) {
			t.Errorf("Forget(%d) kept a process with no JIT file", pid)
		}
	}
	if got := w.Watched(); got != 1 {
		t.Errorf("%d processes watched after forgetting the exited ones, want 1 (the live one)", got)
	}
}
