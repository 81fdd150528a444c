package targetfile

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestFIFORefused: a FIFO is refused at once, without waiting for a writer, and counted
// once however often it is tried.
func TestFIFORefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "prog.debug")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := Counts()
	for range 3 {
		if f, err := Open(fifo); !errors.Is(err, ErrNotRegular) {
			if f != nil {
				f.Close()
			}
			t.Fatalf("Open(FIFO) = %v, want ErrNotRegular", err)
		}
		if _, err := ReadFile(fifo, 1<<20); !errors.Is(err, ErrNotRegular) {
			t.Fatalf("ReadFile(FIFO) = %v, want ErrNotRegular", err)
		}
		if _, err := OpenELF(fifo); !errors.Is(err, ErrNotRegular) {
			t.Fatalf("OpenELF(FIFO) = %v, want ErrNotRegular", err)
		}
	}
	after, _ := Counts()
	if after != before+1 {
		t.Errorf("refused count went from %d to %d, want one more", before, after)
	}
	if !hasNote("refused " + fifo + ": is a FIFO") {
		t.Errorf("notes %q do not name the FIFO", Notes(maxNoted))
	}
	// A symbolic link to it is refused too, and a directory is not counted.
	link := filepath.Join(dir, "link")
	os.Symlink(fifo, link)
	if _, err := Open(link); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Open(link to FIFO) = %v", err)
	}
	if _, err := Open(dir); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Open(directory) = %v", err)
	}
	if got, _ := Counts(); got != before+2 {
		t.Errorf("refused count %d after a link and a directory, want %d", got, before+2)
	}
}

func hasNote(s string) bool {
	for _, n := range Notes(maxNoted) {
		if n == s {
			return true
		}
	}
	return false
}

// TestRegular: a regular file is opened blocking, read whole, and bounded by ReadFile.
func TestRegular(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fl&unix.O_NONBLOCK != 0 {
		t.Error("O_NONBLOCK left set on a regular file")
	}
	if fl&unix.O_ACCMODE != unix.O_RDONLY {
		t.Errorf("opened with access mode %#x", fl&unix.O_ACCMODE)
	}
	if b, err := ReadFile(p, 10); err != nil || string(b) != "0123456789" {
		t.Errorf("ReadFile = %q, %v", b, err)
	}
	if _, err := ReadFile(p, 9); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadFile over its bound = %v, want ErrTooLarge", err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(p, link)
	if _, err := OpenNoFollow(link); !errors.Is(err, unix.ELOOP) {
		t.Errorf("OpenNoFollow(link) = %v, want ELOOP", err)
	}
	if f, err := Open(link); err != nil {
		t.Errorf("Open(link) = %v", err)
	} else {
		f.Close()
	}
	if _, err := Open(filepath.Join(dir, "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(missing) = %v", err)
	}
}

// TestOpenELF reads this test's own binary, and a file that is not ELF fails without panic.
func TestOpenELF(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e, err := OpenELF(exe)
	if err != nil {
		t.Fatal(err)
	}
	if e.Section(".text") == nil {
		t.Error("no .text in the test binary")
	}
	if err := e.Close(); err != nil {
		t.Error(err)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	os.WriteFile(bad, []byte("\x7fELF\x02\x01\x01garbage"), 0o644)
	if _, err := OpenELF(bad); err == nil {
		t.Error("OpenELF of a truncated header succeeded")
	}
}

// TestStalledOpen: a file system that never answers (a FUSE mount whose server reads no
// request) stalls an open; it is abandoned after OpenTimeout and counted, the same path
// then fails at once, and the open is cleaned up when the file system goes. The mount is
// made by a child of this test in its own mount namespace, so nothing else sees it.
func TestStalledOpen(t *testing.T) {
	if os.Getenv("STAX_TEST_FUSE_CHILD") == "1" {
		stalledChild()
		return
	}
	if os.Geteuid() != 0 {
		if os.Getenv("STAX_REQUIRE_ROOT") != "" {
			t.Fatal("STAX_REQUIRE_ROOT is set, and this test needs root to mount a FUSE file system")
		}
		t.Skip("mounting a FUSE file system needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no FUSE: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStalledOpen$", "-test.v")
	cmd.Env = append(os.Environ(), "STAX_TEST_FUSE_CHILD=1", "STAX_TEST_FUSE_DIR="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	t.Logf("child:\n%s", out)
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	if strings.Contains(string(out), "SKIP:") {
		t.Skip(strings.TrimSpace(string(out[strings.Index(string(out), "SKIP:"):])))
	}
	if !strings.Contains(string(out), "STALL OK") {
		t.Fatal("the child did not report its checks")
	}
}

// stalledChild mounts the FUSE file system that never answers and checks Open and ReadFile
// against it; it prints STALL OK, or FAIL: lines and exits 1.
func stalledChild() {
	fail := func(format string, a ...any) {
		fmt.Printf("FAIL: "+format+"\n", a...)
		os.Exit(1)
	}
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		fail("make mounts private: %v", err)
	}
	mnt := filepath.Join(os.Getenv("STAX_TEST_FUSE_DIR"), "mnt")
	os.Mkdir(mnt, 0o755)
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		fmt.Printf("SKIP: open /dev/fuse: %v\n", err)
		return
	}
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=0,group_id=0", fd)
	if err := unix.Mount("stax-test", mnt, "fuse", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		fmt.Printf("SKIP: mount fuse: %v\n", err)
		return
	}
	OpenTimeout = 300 * time.Millisecond
	_, abandonedBefore := Counts()
	path := filepath.Join(mnt, "prog.debug")
	t0 := time.Now()
	_, err = Open(path)
	took := time.Since(t0)
	if !errors.Is(err, ErrStalled) {
		fail("Open on a stalled file system = %v, want ErrStalled", err)
	}
	if took > OpenTimeout+2*time.Second {
		fail("Open returned after %v, with a deadline of %v", took, OpenTimeout)
	}
	t0 = time.Now()
	if _, err := ReadFile(path, 100); !errors.Is(err, ErrStalled) {
		fail("ReadFile of the stuck path = %v, want ErrStalled", err)
	}
	if took := time.Since(t0); took > OpenTimeout/2 {
		fail("ReadFile of a path still stuck took %v, not at once", took)
	}
	other := filepath.Join(mnt, "jit-1.dump")
	if _, err := ReadFile(other, 100); !errors.Is(err, ErrStalled) {
		fail("ReadFile of another path there = %v, want ErrStalled", err)
	}
	if _, ab := Counts(); ab != abandonedBefore+2 {
		fail("abandoned count went from %d to %d, want 2 more", abandonedBefore, ab)
	}
	if !hasNote("abandoned " + path + ": no answer within 300ms") {
		fail("notes %q do not name %s", Notes(maxNoted), path)
	}
	// Ending the file system's connection ends the stuck opens: the path is tried again.
	unix.Unmount(mnt, unix.MNT_DETACH)
	unix.Close(fd)
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(stuck)
		mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			fail("%d opens still stuck 10 s after the file system went", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := Open(path); errors.Is(err, ErrStalled) {
		fail("Open after the file system went = %v", err)
	}
	fmt.Println("STALL OK")
}
