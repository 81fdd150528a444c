package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil"
)

// smallDisk mounts a tmpfs of 16 MiB as the stax home (root only), unmounted at the end.
func smallDisk(t *testing.T, e *staxEnv) {
	t.Helper()
	testutil.RequireRoot(t)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "stax-test", e.home).CombinedOutput(); err != nil {
		testutil.Require(t, "STAX_REQUIRE_ROOT", "cannot mount a tmpfs to fill: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", e.home).Run() })
}

// fill writes a file into dir until the file system has no room left, and returns its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	// What a short write left: fill that too.
	for _, n := range []int{4096, 512, 1} {
		for {
			if _, err := f.Write(buf[:n]); err != nil {
				break
			}
		}
	}
	return path
}

// fullDiskRecording records 4 threads of spinwait at 4999 Hz into a small tmpfs, and
// fills the tmpfs once a checkpoint with samples is in the store; it returns when a
// checkpoint has failed for want of room, with the samples of that checkpoint.
func fullDiskRecording(t *testing.T) (e *staxEnv, l *liveRecording, id, filler string, kept uint64) {
	e = newEnv(t)
	smallDisk(t, e)
	e.env = append(e.env, "STAX_CHECKPOINT_INTERVAL=200ms")
	dir := t.TempDir()
	bin := testutil.CC(t, dir, "spinwait", "gcc", append(cflags, "-pthread", filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/spinwait.c"))...)
	l = &liveRecording{cmd: e.cmd("record", "-F", "4999", "--run-id-file", filepath.Join(dir, "run.id"), "--", bin, "4")}
	startLive(t, l)
	if _, errOut, code := e.run("wait", "--for-samples", "2000", "--timeout-ms", "120000"); code != 0 {
		t.Fatalf("wait for 2,000 samples: exit %d: %s\n%s", code, errOut, l.out.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "run.id"))
	if err != nil {
		t.Fatal(err)
	}
	id = strings.TrimSpace(string(b))
	// A checkpoint with samples in the store, then no room for the next.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if m, err := store.ReadMeta(filepath.Join(e.home, "runs", id+".stax")); err == nil && m.Samples > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint with samples in 2 minutes:\n%s", l.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	filler = fill(t, e.home)
	for !strings.Contains(l.out.String(), "checkpoint of run "+id) {
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint failed on the full disk:\n%s", l.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	m, err := store.ReadMeta(filepath.Join(e.home, "runs", id+".stax"))
	if err != nil {
		t.Fatalf("the last good checkpoint is gone: %v", err)
	}
	kept = m.Samples
	// Samples the store does not hold.
	if _, errOut, code := e.run("wait", "--for-samples", strconv.FormatUint(kept+2000, 10), "--timeout-ms", "120000"); code != 0 {
		t.Fatalf("wait for more samples: exit %d: %s\n%s", code, errOut, l.out.String())
	}
	return e, l, id, filler, kept
}

// startLive starts a recording whose program prints "ready" and waits for a line.
func startLive(t *testing.T, l *liveRecording) {
	t.Helper()
	var err error
	if l.stdin, err = l.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	l.cmd.Stdout, l.cmd.Stderr = &l.out, &l.out
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.cmd.Process.Kill() })
}

// end lets the program exit and returns record's exit status.
func (l *liveRecording) end(t *testing.T) int {
	t.Helper()
	l.stdin.Write([]byte("\n"))
	l.stdin.Close()
	err := l.cmd.Wait()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0
}

// TestFullDiskSaveIsNotClaimed records into a tmpfs that fills up during the run: the
// failed checkpoint is said once, the final save fails, and record says what the store
// kept (its last good checkpoint) of how many samples, exits 125, and does not claim the
// run saved; list and status mark the run incomplete with those numbers, and it answers
// queries from its checkpoint.
func TestFullDiskSaveIsNotClaimed(t *testing.T) {
	testutil.RequirePerf(t)
	e, l, id, _, kept := fullDiskRecording(t)
	code := l.end(t)
	out := l.out.String()
	if code != 125 {
		t.Fatalf("record exited %d on a full disk, want 125:\n%s", code, out)
	}
	if strings.Contains(out, "saved to") {
		t.Errorf("record claims the run saved:\n%s", out)
	}
	if n := strings.Count(out, "checkpoint of run "+id); n != 1 {
		t.Errorf("the failed checkpoints were said %d times, want once:\n%s", n, out)
	}
	if !strings.Contains(out, "run "+id+" was not saved whole to "+filepath.Join(e.home, "runs")+": ") ||
		!strings.Contains(out, "no space left on device") {
		t.Errorf("record does not say where and why the save failed:\n%s", out)
	}
	var list api.List
	e.mustJSON(&list, "list")
	var info *api.RunInfo
	for i := range list.Runs {
		if list.Runs[i].ID == id {
			info = &list.Runs[i]
		}
	}
	if info == nil || info.State != api.StateIncomplete || info.Incomplete == nil {
		t.Fatalf("list: %+v, want run %s incomplete", list.Runs, id)
	}
	inc := info.Incomplete
	if inc.KeptSamples < kept || inc.KeptSamples != info.Samples || inc.RecordedSamples < kept+2000 || inc.KeptSec <= 0 || inc.KeptSec >= inc.RecordedSec {
		t.Errorf("list's incomplete run: %+v (samples %d); the checkpoint that failed next held %d", inc, info.Samples, kept)
	}
	want := "kept " + commasOf(inc.KeptSamples) + " of " + commasOf(inc.RecordedSamples) + " samples"
	if !strings.Contains(out, commasOf(inc.KeptSamples)+" of the "+commasOf(inc.RecordedSamples)+" samples recorded") {
		t.Errorf("record does not say what was kept (%s):\n%s", want, out)
	}
	text, _, _ := e.run("list")
	if !strings.Contains(text, "incomplete") || !strings.Contains(text, want) {
		t.Errorf("list does not mark the run incomplete (%s):\n%s", want, text)
	}
	st, errOut, code := e.run("status", "--run", id)
	if code != 0 || !strings.Contains(st, "("+api.StateIncomplete+")") || !strings.Contains(st, commasOf(inc.KeptSamples)+" of "+commasOf(inc.RecordedSamples)+" samples recorded") {
		t.Errorf("status: exit %d\n%s%s", code, st, errOut)
	}
	var top api.Top
	e.mustJSON(&top, "top", "--run", id)
	if top.State != api.StateIncomplete {
		t.Errorf("top calls the run %s", top.State)
	}
	// A checkpoint's samples are its profile's: top answers from the kept ones.
	if top.Samples == 0 || top.Samples >= inc.RecordedSamples {
		t.Errorf("top answers from %d samples, the checkpoint holds %d of %d", top.Samples, inc.KeptSamples, inc.RecordedSamples)
	}
	t.Logf("record said:\n%s\nlist:\n%s\nstatus:\n%s", out, text, st)
}

// TestFullDiskRetrySaves records into a tmpfs that fills up and then has room again
// before the end: the next checkpoint saves the run again, and the run is saved whole.
func TestFullDiskRetrySaves(t *testing.T) {
	testutil.RequirePerf(t)
	e, l, id, filler, _ := fullDiskRecording(t)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(l.out.String(), "run "+id+" saved again") {
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint saved the run again once there was room:\n%s", l.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	code := l.end(t)
	out := l.out.String()
	if code != 0 || !strings.Contains(out, "saved to") || strings.Contains(out, "incomplete") {
		t.Fatalf("record: exit %d:\n%s", code, out)
	}
	var st api.Status
	e.mustJSON(&st, "status", "--run", id)
	if st.State != api.StateStored || st.Incomplete != nil {
		t.Errorf("status: %s %+v, want stored", st.State, st.Incomplete)
	}
	summary := out[strings.LastIndex(out, "run "+id+": "):]
	if !strings.Contains(summary, commasOf(st.Meta.Samples)+" samples") {
		t.Errorf("the store holds %d samples; record said: %s", st.Meta.Samples, summary)
	}
	// Every sample's time is in the store: the series holds them all.
	var tl api.Timeline
	e.mustJSON(&tl, "timeline", "--run", id)
	var inSeries uint64
	for _, n := range tl.Total {
		inSeries += n
	}
	if inSeries != st.Meta.Samples {
		t.Errorf("timeline: %d samples, the run %d", inSeries, st.Meta.Samples)
	}
	if _, err := os.Stat(filepath.Join(e.home, "runs", id+".end")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the saved run keeps its end file: %v", err)
	}
}
