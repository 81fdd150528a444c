package ittcollector

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/jit"
)

// Environment of collector/testdata/ittflood.c: extra time per write(2) to
// a jit-*.dump file, and the bandwidth of that stand-in file system.
const (
	envSlowUS   = "ITTFLOOD_SLOW_US"
	envSlowMBps = "ITTFLOOD_SLOW_MBPS"
)

// staxLoads reads a dump file the way stax does (internal/jit's parser and
// table) and returns the file's pid and how many CODE_LOAD records name
// each function. Every load must also be in the table stax builds.
func staxLoads(t testing.TB, path string) (int, map[string]int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := jit.ParseHeader(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	recs, used, need, err := jit.ParseRecords(h.Order, data[h.TotalSize:], nil)
	if err != nil || need != 0 || int(h.TotalSize)+used != len(data) {
		t.Fatalf("%s: parsed %d of %d bytes (need %d): %v", path, int(h.TotalSize)+used, len(data), need, err)
	}
	tab := jit.NewTable()
	tab.Apply(1, jit.SourceITTAPI, recs)
	inTable := map[string]bool{}
	for _, f := range tab.Funcs() {
		inTable[f.Name] = true
	}
	loads := map[string]int{}
	for _, r := range recs {
		if r.Load != nil {
			loads[r.Load.Name]++
			if !inTable[r.Load.Name] {
				t.Errorf("%s: %q is not in stax's table", path, r.Load.Name)
			}
			if int(r.Load.Pid) != int(h.Pid) {
				t.Errorf("%s: %q with pid %d in the file of %d", path, r.Load.Name, r.Load.Pid, h.Pid)
			}
		}
	}
	// and the strict reader of these tests
	sh, srecs, err := readDump(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	checkPairs(t, sh, srecs)
	return int(h.Pid), loads
}

// callStats returns the last "calls" line of ittflood's output.
func callStats(t testing.TB, out string) map[string]float64 {
	t.Helper()
	var c outLine
	for _, l := range parseOutput(t, out) {
		if l.kind == "calls" {
			c = l
		}
	}
	if c.kv == nil {
		t.Fatalf("no calls line:\n%s", tail(out))
	}
	m := map[string]float64{}
	for k, v := range c.kv {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("bad %s in %v", k, c.kv)
		}
		m[k] = f
	}
	return m
}

// slowWrites returns how many dump writes ittflood slowed down.
func slowWrites(t testing.TB, out string) int {
	t.Helper()
	for _, l := range parseOutput(t, out) {
		if l.kind == "slow" {
			return int(decU64(t, l.kv["writes"]))
		}
	}
	t.Fatalf("no slow line:\n%s", tail(out))
	return 0
}

// wantNames checks that loads has every name prefix_<thread>_<i> of
// threads threads sharing calls calls as ittflood numbers them, once.
func wantNames(t testing.TB, what string, loads map[string]int, prefix string, threads, calls int) {
	t.Helper()
	missing, twice := 0, 0
	for th := 0; th < threads; th++ {
		n := calls / threads
		if th < calls%threads {
			n++
		}
		for i := 0; i < n; i++ {
			switch loads[fmt.Sprintf("%s_%d_%d", prefix, th, i)] {
			case 1:
			case 0:
				missing++
			default:
				twice++
			}
		}
	}
	if missing != 0 || twice != 0 {
		t.Errorf("%s: of %d %s_* methods, %d missing and %d written more than once", what, calls, prefix, missing, twice)
	}
}

// TestFloodSlowWriter sends 100,000 loads from 8 threads while every write
// of the dump file is slowed down, and checks that stax reads every method
// exactly once. The call times are logged, never asserted.
func TestFloodSlowWriter(t *testing.T) {
	needBuild(t)
	calls := 100000
	if testing.Short() {
		calls = 10000
	}
	for _, c := range []struct {
		name string
		env  []string
	}{
		{"fast", nil},
		// 2ms a write: the writer thread is slower than the callers
		{"slow", []string{envSlowUS + "=2000"}},
		// and a 64 KiB buffer at 20 MB/s: callers must wait for space
		{"slow-small-buffer", []string{envSlowUS + "=2000", envSlowMBps + "=20", "STAX_JIT_BUFFER_KB=64"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			env := append(append(collectEnv(dir), "STAX_JIT_STATS=1"), c.env...)
			start := time.Now()
			out, stderr := runProg(t, 5*time.Minute, env, floodPath, "flood", "8", strconv.Itoa(calls))
			st := callStats(t, out)
			t.Logf("%d calls from 8 threads in %v: mean %.0fns p50 %.0fns p99 %.0fns max %.0fns; %s",
				calls, time.Since(start).Round(time.Millisecond), st["mean_ns"], st["p50_ns"], st["p99_ns"], st["max_ns"], strings.TrimSpace(stderr))
			if sw := slowWrites(t, out); (c.env != nil) != (sw > 0) {
				t.Errorf("%d slowed writes", sw)
			}
			if !strings.Contains(stderr, fmt.Sprintf(" %d events,", calls)) {
				t.Errorf("collector statistics: %q", stderr)
			}
			pid, loads := staxLoads(t, filepath.Join(dir, fmt.Sprintf("jit-%d.dump", h0pid(t, out))))
			if pid != h0pid(t, out) {
				t.Errorf("header pid %d", pid)
			}
			wantNames(t, "flood", loads, "flood", 8, calls)
			if len(loads) != calls {
				t.Errorf("%d names, want %d", len(loads), calls)
			}
		})
	}
}

// TestFloodFork: loads before a fork, then from threads of both processes,
// while the parent's writer has work pending; both exit by returning from
// main. Each file holds its process's methods once, nothing of the other
// process's later methods, and the child's file starts with the inherited
// ones.
func TestFloodFork(t *testing.T) {
	needBuild(t)
	const calls = 2000 // per thread; 4 threads in each process
	dir := t.TempDir()
	env := append(collectEnv(dir), envSlowUS+"=500")
	out, stderr := runProg(t, 3*time.Minute, env, floodPath, "fork", strconv.Itoa(calls))
	if stderr != "" {
		t.Errorf("stderr: %s", stderr)
	}
	ppid := h0pid(t, out)
	forks := findKind(parseOutput(t, out), "fork")
	if len(forks) != 1 {
		t.Fatalf("no fork line:\n%s", tail(out))
	}
	cpid := int(decU64(t, forks[0].kv["pid"]))

	pid, parent := staxLoads(t, filepath.Join(dir, fmt.Sprintf("jit-%d.dump", ppid)))
	if pid != ppid {
		t.Errorf("parent file of pid %d", pid)
	}
	wantNames(t, "parent", parent, "pre", 1, calls)
	wantNames(t, "parent", parent, "par", 4, 4*calls)
	if len(parent) != 5*calls {
		t.Errorf("parent: %d names, want %d", len(parent), 5*calls)
	}

	pid, child := staxLoads(t, filepath.Join(dir, fmt.Sprintf("jit-%d.dump", cpid)))
	if pid != cpid {
		t.Errorf("child file of pid %d", pid)
	}
	wantNames(t, "child", child, "pre", 1, calls)
	wantNames(t, "child", child, "child", 4, 4*calls)
	inherited := 0
	for name, n := range child {
		if strings.HasPrefix(name, "par_") {
			// reported before the fork: inherited, announced once
			inherited++
			if n != 1 {
				t.Errorf("child: %s %d times", name, n)
			}
		}
	}
	t.Logf("the child inherited %d of the parent's %d par_* methods", inherited, 4*calls)
}

func floodBench(b *testing.B, threads int, env ...string) {
	needBuild(b)
	calls := max(b.N, 10000)
	dir := b.TempDir()
	out, _ := runProg(b, 5*time.Minute, append(collectEnv(dir), env...), floodPath, "flood", strconv.Itoa(threads), strconv.Itoa(calls))
	st := callStats(b, out)
	b.ReportMetric(st["mean_ns"], "ns/op")
	b.ReportMetric(st["p50_ns"], "p50-ns")
	b.ReportMetric(st["p99_ns"], "p99-ns")
	b.ReportMetric(st["max_ns"], "max-ns")
	if _, loads := staxLoads(b, filepath.Join(dir, fmt.Sprintf("jit-%d.dump", h0pid(b, out)))); len(loads) != calls {
		b.Errorf("%d methods read, want %d", len(loads), calls)
	}
}

// BenchmarkNotifyEventFlood times NotifyEvent for 64-byte methods with 4 line
// entries, inside ittflood: the mean per call (ns/op), from one and from 8
// threads, with the dump on the test's file system and with every write of
// it slowed by 2ms (ittflood's write interposer).
func BenchmarkNotifyEventFlood(b *testing.B) {
	for _, threads := range []int{1, 8} {
		b.Run(fmt.Sprintf("threads=%d/writer=fast", threads), func(b *testing.B) { floodBench(b, threads) })
		b.Run(fmt.Sprintf("threads=%d/writer=slow", threads), func(b *testing.B) { floodBench(b, threads, envSlowUS+"=2000") })
	}
}
