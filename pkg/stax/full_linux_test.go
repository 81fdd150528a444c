//go:build linux

package stax

import (
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/testutil"
)

// TestFullDirectory writes spans and markers into a spans file on a full file system (a
// 64 KiB tmpfs): those that fit are whole, no record is torn, and each one that did not
// is counted in the header as dropped, with the failed writes and their error, which stax
// reports. The writes were ignored: spans were lost and the count said none.
func TestFullDirectory(t *testing.T) {
	reset(t)
	t.Setenv(envDir, testutil.MountSmallTmpfs(t, 64<<10))
	// The attach file keeps spans on should the watcher of an earlier test still run.
	flag := "/tmp/stax-" + strconv.Itoa(os.Getpid()) + ".recording"
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(flag)
	if !on() {
		t.Fatal("cannot turn spans on")
	}
	defer state.Store(stateOff)
	const spansN, marksN = 3000, 300 // 130 KB of records
	for i := range spansN {
		Begin("work").End()
		if i%10 == 0 {
			Mark("tick")
		}
	}
	got, h := readSpansHeader(t)
	t.Logf("%d spans and markers written of %d, %d dropped, %d failed writes, errno %d", len(got), spansN+marksN, h.Dropped, h.FailedWrites, h.Errno)
	if len(got) == 0 || len(got) >= spansN+marksN {
		t.Fatalf("%d of %d written: want the file system to fill", len(got), spansN+marksN)
	}
	if uint64(len(got))+h.Dropped != spansN+marksN || h.FailedWrites == 0 || unix.Errno(h.Errno) != unix.ENOSPC {
		t.Errorf("%d written and %d dropped of %d, %d writes failed (errno %d): want every one written or counted, the failures with ENOSPC",
			len(got), h.Dropped, spansN+marksN, h.FailedWrites, h.Errno)
	}
}
