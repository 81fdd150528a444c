package ittcollector

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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
