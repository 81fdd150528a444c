package jit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/proc"
)

// FindStaleSpans lists the spans files of a pid that is gone and of a pid whose process
// started after the file was written, and leaves the file of the live process that wrote
// it, one of a gone pid written just now (a recorder may be reading it), files of other
// names and links.
func TestFindStaleSpans(t *testing.T) {
	dir := t.TempDir()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	goneP := gone.Process.Pid
	self := os.Getpid()
	_, started, err := proc.Start(self)
	if err != nil {
		t.Fatal(err)
	}
	old := started.Add(-time.Hour)
	plant := func(name string, mtime time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("STAXITT\x01\x00\x00\x00\x00\x00\x00\x00\x00"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	staleGone := plant("itt-"+strconv.Itoa(goneP)+".spans", old)
	plant("stax-"+strconv.Itoa(goneP)+".spans", time.Now()) // just written: left
	staleReused := plant("stax-"+strconv.Itoa(self)+".spans", old)
	plant("itt-"+strconv.Itoa(self)+".spans", time.Now()) // the live process's own
	plant("itt-"+strconv.Itoa(goneP)+".dump", old)
	os.Symlink(staleGone, filepath.Join(dir, "itt-1.spans"))

	got, err := FindStaleSpans([]string{dir, dir + "/"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{staleGone: true, staleReused: true}
	for _, f := range got {
		t.Logf("%s: %s", f.Path, f.Why)
		if !want[f.Path] {
			t.Errorf("%s (%s) is listed stale", f.Path, f.Why)
		}
		delete(want, f.Path)
	}
	for p := range want {
		t.Errorf("%s is not listed stale", p)
	}
}

func TestCheckWrittenSince(t *testing.T) {
	now := time.Now()
	if err := CheckWrittenSince(now.Add(-3*time.Second), now); err == nil {
		t.Error("a file written 3 seconds before its process started is taken as its own")
	}
	if err := CheckWrittenSince(now.Add(-10*time.Millisecond), now); err != nil {
		t.Errorf("a file written within the clocks' slack is refused: %v", err)
	}
	if err := CheckWrittenSince(now.Add(-time.Hour), time.Time{}); err != nil {
		t.Errorf("a process whose start is unknown refuses a file: %v", err)
	}
}
