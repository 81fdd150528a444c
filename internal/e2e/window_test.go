package e2e

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/numfmt"
	"github.com/stax-profiler/stax/internal/testutil"
)

// recordSpinwait starts `stax record` of 2 spinning threads at 4999 Hz with flags and
// returns it with its run id once it has n samples.
func recordSpinwait(t *testing.T, e *staxEnv, n string, flags ...string) (*liveRecording, string) {
	t.Helper()
	dir := t.TempDir()
	bin := testutil.CC(t, dir, "spinwait", "gcc", append(cflags, "-pthread", filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/spinwait.c"))...)
	args := append(append([]string{"record", "-q", "-F", "4999", "--run-id-file", filepath.Join(dir, "run.id")}, flags...), "--", bin, "2")
	l := &liveRecording{cmd: e.cmd(args...)}
	startLive(t, l)
	if _, errOut, code := e.run("wait", "--for-samples", n, "--timeout-ms", "1200000"); code != 0 {
		t.Fatalf("wait: exit %d: %s\n%s", code, errOut, l.out.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "run.id"))
	if err != nil {
		t.Fatal(err)
	}
	return l, strings.TrimSpace(string(b))
}

// TestRollingWindowKeepsTheLastSamples records 2 threads at 4999 Hz with --keep 2s until
// the oldest chunk of samples has left the run (their blocks of the
// samples file given back), status says how many samples left and from when the views
// cover the run, the counts of top are those of the samples kept (what the timeline
// holds), and the views' headers say the part of the run they cover.
func TestRollingWindowKeepsTheLastSamples(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	e.env = append(e.env, "STAX_CHECKPOINT_INTERVAL=200ms")
	// Some 13,000 samples a chunk: the first leaves once a chunk after it is in the file
	// and the newest sample is 2 s past it; the test waits for that, as samples come.
	l, id := recordSpinwait(t, e, "30000", "--keep", "2s", "--no-off-cpu", "--counters", "task-clock")
	var st api.Status
	for {
		e.mustJSON(&st, "status", "--run", id)
		if w := st.Meta.Window; w != nil && w.DroppedChunks >= 1 {
			break
		}
		if _, errOut, code := e.run("wait", "--run", id, "--for-samples", strconv.FormatUint(st.Meta.Samples+5000, 10), "--timeout-ms", "1200000"); code != 0 {
			t.Fatalf("wait: exit %d: %s\n%s", code, errOut, l.out.String())
		}
	}
	if code := l.end(t); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, l.out.String())
	}
	e.mustJSON(&st, "status", "--run", id)
	w := st.Meta.Window
	if w == nil || w.KeepSec != 2 || w.DroppedChunks < 1 || w.DroppedSamples == 0 || w.FromNs == 0 {
		t.Fatalf("status: window %+v, want chunks dropped under a 2 s window", w)
	}
	text, _, _ := e.run("status", "--run", id)
	if !strings.Contains(text, "window:    keeps the last 2s; ") || !strings.Contains(text, numfmt.Commas(w.DroppedSamples)+" samples") {
		t.Errorf("status does not say what left the window:\n%s", text)
	}
	var top api.Top
	e.mustJSON(&top, "top", "--run", id)
	if top.Samples+w.DroppedSamples != st.Meta.Samples {
		t.Errorf("top counts %d samples, the window dropped %d, the run recorded %d", top.Samples, w.DroppedSamples, st.Meta.Samples)
	}
	if top.Window == nil || top.Window.FromSec != float64(w.FromNs)/1e9 {
		t.Errorf("top's window %+v, want from %.3fs", top.Window, float64(w.FromNs)/1e9)
	}
	// The samples that left took what their counters counted with them: the run's rows
	// count what the samples kept count, read back one by one from the series.
	var all, kept api.Top
	e.mustJSON(&all, "top", "--run", id, "-n", "100000")
	e.mustJSON(&kept, "top", "--run", id, "-n", "100000", "--from", "0.001")
	sum := func(top api.Top) (n uint64) {
		for _, r := range top.Rows {
			if len(r.Counters) == 1 {
				n += r.Counters[0]
			}
		}
		return n
	}
	if all.Samples != kept.Samples || sum(all) != sum(kept) || sum(all) == 0 {
		t.Errorf("the run's rows: %d samples, task-clock %d; its samples kept: %d, task-clock %d", all.Samples, sum(all), kept.Samples, sum(kept))
	}
	var tl api.Timeline
	e.mustJSON(&tl, "timeline", "--run", id)
	var inSeries uint64
	for _, n := range tl.Total {
		inSeries += n
	}
	if inSeries != top.Samples {
		t.Errorf("the timeline holds %d samples, top counts %d", inSeries, top.Samples)
	}
	if out, _, _ := e.run("top", "--run", id, "-n", "1"); !strings.Contains(strings.SplitN(out, "\n", 2)[0], "s–") {
		t.Errorf("top's header does not say what part of the run it covers:\n%s", out)
	}
	// The file keeps its size, but not the blocks of the chunks that left.
	var fi syscall.Stat_t
	if err := syscall.Stat(filepath.Join(e.home, "runs", id+".samples"), &fi); err != nil {
		t.Fatal(err)
	}
	if held := fi.Blocks * 512; held > fi.Size-w.DroppedBytes+64<<10 {
		t.Errorf("the samples file holds %d bytes on disk of %d, after %d bytes left the window", held, fi.Size, w.DroppedBytes)
	}
}

// TestCrashedRunFromDeltaCheckpoints kills the recorder (SIGKILL) of a run written as
// deltas of its file: the run reads back as of its last checkpoint; a delta record cut
// short (as a crash while appending leaves it) is dropped and said.
func TestCrashedRunFromDeltaCheckpoints(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	e.env = append(e.env, "STAX_CHECKPOINT_INTERVAL=200ms")
	l, id := recordSpinwait(t, e, "4000", "--no-off-cpu")
	deltaPath := filepath.Join(e.home, "runs", id+".delta")
	// Three records in the delta file, the base behind them with samples.
	records := func() int {
		b, _ := os.ReadFile(deltaPath)
		n := 0
		for off := 16; off+8 <= len(b); n++ {
			off += 8 + int(binary.LittleEndian.Uint32(b[off:]))
			if off > len(b) {
				break
			}
		}
		return n
	}
	var st api.Status
	for {
		e.mustJSON(&st, "status", "--run", id)
		if st.Meta.Samples > 6000 && records() >= 3 {
			break
		}
		e.run("wait", "--for-samples", strconv.FormatUint(st.Meta.Samples+500, 10), "--timeout-ms", "2000")
	}
	l.cmd.Process.Kill()
	// The program runs on without its recorder until its line arrives.
	l.stdin.Write([]byte("\n"))
	l.stdin.Close()
	l.cmd.Wait()
	var top api.Top
	e.mustJSON(&top, "top", "--run", id)
	if top.State != api.StateCrashed || top.Samples < 4000 {
		t.Fatalf("the crashed run: state %s, %d samples", top.State, top.Samples)
	}
	b, err := os.ReadFile(deltaPath)
	if err != nil || len(b) <= 16 {
		t.Fatalf("delta file: %d bytes, %v", len(b), err)
	}
	if err := os.WriteFile(deltaPath, b[:len(b)-5], 0o600); err != nil {
		t.Fatal(err)
	}
	var cut api.Top
	e.mustJSON(&cut, "top", "--run", id)
	if cut.Samples > top.Samples || cut.Samples == 0 {
		t.Errorf("with its last record cut short: %d samples, before %d", cut.Samples, top.Samples)
	}
	if text, _, _ := e.run("status", "--run", id); !strings.Contains(text, "its last checkpoint was cut short") {
		t.Errorf("status does not say the last checkpoint was cut short:\n%s", text)
	}
}

// deltaRecords counts the records of the delta file at path (what is whole of them).
func deltaRecords(path string) int {
	b, _ := os.ReadFile(path)
	n := 0
	for off := 16; off+8 <= len(b); n++ {
		off += 8 + int(binary.LittleEndian.Uint32(b[off:]))
		if off > len(b) {
			break
		}
	}
	return n
}

// TestCrashedRunFromOffCPUDeltaCheckpoints: a recording with off-CPU time (the default)
// checkpoints as records appended to its delta file (of version 2), its file not rewritten
// at each checkpoint; killed, it reads back from them with its off-CPU time, also with
// its last record cut short.
func TestCrashedRunFromOffCPUDeltaCheckpoints(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	e.env = append(e.env, "STAX_CHECKPOINT_INTERVAL=200ms")
	dir := t.TempDir()
	prog := buildOffCPU(t, dir)
	l := &liveRecording{cmd: e.cmd("record", "-q", "--run-id-file", filepath.Join(dir, "run.id"), "--", prog, "waits", "600")}
	startLive(t, l)
	var id string
	for range 600 {
		if b, err := os.ReadFile(filepath.Join(dir, "run.id")); err == nil && len(b) > 0 {
			id = strings.TrimSpace(string(b))
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if id == "" {
		t.Fatalf("no run id\n%s", l.out.String())
	}
	runPath := filepath.Join(e.home, "runs", id+".stax")
	deltaPath := filepath.Join(e.home, "runs", id+".delta")
	inode := func() uint64 {
		var st syscall.Stat_t
		if err := syscall.Stat(runPath, &st); err != nil {
			return 0
		}
		return st.Ino
	}
	// Checkpoints appended as records, the run's file the same file meanwhile, once the
	// worker waited through a loop or two.
	var st api.Status
	from, fromRecords := uint64(0), 0
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("no run of off-CPU time checkpointed as deltas: %d records, status %+v\n%s", deltaRecords(deltaPath), st.Meta.OffCPU, l.out.String())
		}
		time.Sleep(200 * time.Millisecond)
		ino, n := inode(), deltaRecords(deltaPath)
		if ino == 0 || n == 0 {
			continue
		}
		if ino != from || n < fromRecords {
			from, fromRecords = ino, n // a new base (the first, or one compacting the records)
			continue
		}
		e.mustJSON(&st, "status", "--run", id)
		if n >= fromRecords+4 && st.Meta.OffCPU != nil && st.Meta.OffCPU.Intervals >= 3 {
			break
		}
	}
	if b, err := os.ReadFile(deltaPath); err != nil || len(b) < 16 || binary.LittleEndian.Uint32(b[8:]) != 2 {
		t.Fatalf("the delta file of a run with off-CPU time is not of version 2: %v", err)
	}
	l.cmd.Process.Kill()
	// The program runs on without its recorder: it is ended too.
	if st.Meta.Pid > 0 {
		syscall.Kill(st.Meta.Pid, syscall.SIGKILL)
	}
	l.cmd.Wait()
	if _, err := os.Stat(deltaPath); err != nil {
		t.Fatalf("the crashed run has no delta file: %v", err)
	}
	var top api.Top
	e.mustJSON(&top, "top", "--off-cpu", "--run", id, "--sort", "total", "-n", "1000")
	if top.State != api.StateCrashed || !top.OffCPU || top.Samples < 500e6 {
		t.Fatalf("the crashed run: state %s, off CPU %v, %d ns off CPU", top.State, top.OffCPU, top.Samples)
	}
	found := false
	for _, r := range top.Rows {
		found = found || r.Func == "wait_for_lock"
	}
	if !found {
		t.Errorf("top --off-cpu of the crashed run has no row for wait_for_lock: %+v", top.Rows)
	}
	var threads api.Threads
	e.mustJSON(&threads, "threads", "--run", id, "-n", "1000")
	if len(threads.Rows) == 0 {
		t.Errorf("stax threads of the crashed run has no rows")
	}
	b, err := os.ReadFile(deltaPath)
	if err != nil || len(b) <= 16 {
		t.Fatalf("delta file: %d bytes, %v", len(b), err)
	}
	if err := os.WriteFile(deltaPath, b[:len(b)-5], 0o600); err != nil {
		t.Fatal(err)
	}
	var cut api.Top
	e.mustJSON(&cut, "top", "--off-cpu", "--run", id, "--sort", "total", "-n", "1000")
	if !cut.OffCPU || cut.Samples > top.Samples || cut.Samples == 0 {
		t.Errorf("with its last record cut short: %d ns off CPU, before %d", cut.Samples, top.Samples)
	}
	if text, _, _ := e.run("status", "--run", id); !strings.Contains(text, "its last checkpoint was cut short") {
		t.Errorf("status does not say the last checkpoint was cut short:\n%s", text)
	}
}

// TestSymbolCacheBound: a recording trims the symbol cache to STAX_SYMBOL_CACHE_MAX as it
// starts and says what it evicted; stax gc --symbols says what the cache holds.
func TestSymbolCacheBound(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	l, _ := recordSpinwait(t, e, "500", "--no-off-cpu")
	if code := l.end(t); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, l.out.String())
	}
	cache := filepath.Join(e.home, "cache", "symbols")
	ents, err := os.ReadDir(cache)
	if err != nil || len(ents) == 0 {
		t.Fatalf("the first recording left no symbol cache: %v", err)
	}
	out, errOut, code := e.run("gc", "--symbols")
	if code != 0 || !strings.Contains(out, "symbol cache "+cache+": ") || !strings.Contains(out, " of 512.0 MiB") {
		t.Fatalf("gc --symbols: exit %d: %s%s", code, out, errOut)
	}
	e.env = append(e.env, "STAX_SYMBOL_CACHE_MAX=1K")
	l, id := recordSpinwait(t, e, "500", "--no-off-cpu")
	if code := l.end(t); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, l.out.String())
	}
	var st api.Status
	e.mustJSON(&st, "status", "--run", id)
	if !strings.Contains(strings.Join(st.Meta.Notes, "\n"), "least recently used") {
		t.Errorf("the recording under a 1K bound does not say what it evicted: %q", st.Meta.Notes)
	}
	out, errOut, code = e.run("gc", "--symbols")
	if code != 0 || !strings.Contains(out, "evicted") {
		t.Errorf("gc --symbols under a 1K bound: exit %d: %s%s", code, out, errOut)
	}
}
