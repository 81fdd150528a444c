package ittcollector

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/jit"
	"github.com/stax-profiler/stax/internal/spans"
	"github.com/stax-profiler/stax/internal/testutil"
)

// TestITTFullDirCountsLoss has 5 threads report 12,000 tasks, markers and frames each into
// a spans file on a 64 KiB tmpfs: most cannot be written. Every one is accounted for (the
// spans in the file plus the header's dropped count make the total the program reported),
// the file ends at a whole record (a failed write is rolled back, never left torn), the
// header says the writes failed with ENOSPC, and stderr says so once.
func TestITTFullDirCountsLoss(t *testing.T) {
	needBuild(t)
	dir := testutil.MountSmallTmpfs(t, 64<<10)
	prog, err := buildTestProgram(t.TempDir(), "itttasks")
	if err != nil {
		t.Fatal(err)
	}
	const threads, iters, depth = 4, 1000, 10
	out, stderr := runProg(t, time.Minute, append(collectEnv(dir), EnvITT64+"="+libPath), prog,
		fmt.Sprint(threads), fmt.Sprint(iters), fmt.Sprint(depth), "join")
	var pid, filled int
	if _, err := fmt.Sscanf(out, "pid %d filled %d", &pid, &filled); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("itt-%d.spans", pid)))
	if err != nil {
		t.Fatal(err)
	}
	h, err := spans.ParseITTHeaderFull(data)
	if err != nil {
		t.Fatal(err)
	}
	var d spans.ITTDecoder
	var got uint64
	consumed, bad, dropRecs, err := d.Decode(data[h.Size:], func(spans.Span) { got++ })
	if err != nil || bad != 0 || consumed != len(data)-h.Size {
		t.Fatalf("decode: %v, %d bad, %d of %d bytes: the file does not end at a whole record", err, bad, consumed, len(data)-h.Size)
	}
	// Each thread: per iteration depth tasks, a marker and a frame.
	want := uint64((threads + 1) * iters * (depth + 2))
	t.Logf("%d bytes: %d spans written, %d dropped (DROP records %d), %d failed writes, errno %d", len(data), got, h.Dropped, dropRecs, h.FailedWrites, h.Errno)
	if got+h.Dropped != want {
		t.Errorf("%d spans written + %d dropped = %d, want the %d reported", got, h.Dropped, got+h.Dropped, want)
	}
	if got == 0 || h.Dropped == 0 || dropRecs > h.Dropped {
		t.Errorf("%d written, %d dropped in the header, %d in DROP records: want some of each, the header holding every drop", got, h.Dropped, dropRecs)
	}
	if h.FailedWrites == 0 || unix.Errno(h.Errno) != unix.ENOSPC {
		t.Errorf("header: %d failed writes, errno %d: want some, ENOSPC", h.FailedWrites, h.Errno)
	}
	if n := strings.Count(stderr, "stax itt collector: cannot write"); n != 1 || !strings.Contains(strings.ToLower(stderr), unix.ENOSPC.Error()) {
		t.Errorf("stderr says the failure %d times, want once with %q:\n%s", n, unix.ENOSPC.Error(), stderr)
	}
	// The header's start time is the process's own (/proc/PID/stat is gone with it: the
	// test checks it is plausible, ticks since boot before now).
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
	if h.Start == 0 || h.Start > uint64(ts.Nano()/1e7)+1 {
		t.Errorf("header start %d ticks, boot time now %d ticks", h.Start, ts.Nano()/1e7)
	}
}

// TestJITDumpFullDirCountsLoss sends 100,000 loads from 8 threads into a jitdump on a 256
// KiB tmpfs: the collector gives the file up at its first failed write, cut back to its last
// whole record, warns once on stderr, and counts in the header every function it did not
// write, so that the written and the counted make the 100,000; stax's tailer reports the
// count and the error.
func TestJITDumpFullDirCountsLoss(t *testing.T) {
	needBuild(t)
	dir := testutil.MountSmallTmpfs(t, 256<<10)
	const calls = 100000
	out, stderr := runProg(t, 5*time.Minute, append(collectEnv(dir), "ITTFLOOD_FAILURES_OK=1"), floodPath, "flood", "8", fmt.Sprint(calls))
	pid := h0pid(t, out)
	path := filepath.Join(dir, fmt.Sprintf("jit-%d.dump", pid))
	h, recs, err := readDump(path)
	if err != nil {
		t.Fatalf("%s: %v (a torn record?)", path, err)
	}
	var loads uint64
	for _, r := range recs {
		if r.ID == 0 {
			loads++
		}
	}
	t.Logf("%d functions written, %d counted not written, %d failed writes, errno %d; stderr: %s", loads, h.LostFunctions, h.FailedWrites, h.Errno, strings.TrimSpace(stderr))
	if loads+h.LostFunctions != calls || h.LostFunctions == 0 {
		t.Errorf("%d written + %d not written = %d, want %d, some not written", loads, h.LostFunctions, loads+h.LostFunctions, calls)
	}
	if h.FailedWrites != 1 || unix.Errno(h.Errno) != unix.ENOSPC {
		t.Errorf("%d failed writes, errno %d: want 1 (the file is given up), ENOSPC", h.FailedWrites, h.Errno)
	}
	if n := strings.Count(stderr, "stax: JIT collector: writing"); n != 1 || !strings.Contains(strings.ToLower(stderr), unix.ENOSPC.Error()) {
		t.Errorf("stderr warns %d times, want once, with %q:\n%s", n, unix.ENOSPC.Error(), stderr)
	}

	tl, err := jit.OpenTailer(path, pid, uint32(os.Getuid()))
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	if _, _, err := tl.Poll(); err != nil {
		t.Fatal(err)
	}
	st := tl.Status()
	if st.Functions != loads || st.NotWritten != h.LostFunctions || !strings.Contains(st.WriteError, unix.ENOSPC.Error()) {
		t.Errorf("tailer status: %d functions, %d not written (%q); want %d, %d, ENOSPC", st.Functions, st.NotWritten, st.WriteError, loads, h.LostFunctions)
	}
}
