package targetfile

import (
	"bytes"
	"encoding/binary"
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
	if os.Getenv("STAX_TEST_FUSE_CHILD") == "open" {
		stalledChild()
		return
	}
	inFUSEChild(t, "open", "TestStalledOpen")
}

// TestStalledRead: a file system that answers the open but never a read (a FUSE server
// that leaves READ unanswered) stalls a read of a file opened fine; ReaderAt abandons it
// after OpenTimeout and counts it, later reads fail at once, and OpenELF, which reads the
// header, fails instead of waiting.
func TestStalledRead(t *testing.T) {
	if os.Getenv("STAX_TEST_FUSE_CHILD") == "read" {
		stalledReadChild()
		return
	}
	inFUSEChild(t, "read", "TestStalledRead")
}

// inFUSEChild runs test in a child of this test binary, in a mount namespace of its own,
// with STAX_TEST_FUSE_CHILD=mode; the child prints STALL OK when its checks pass.
func inFUSEChild(t *testing.T, mode, test string) {
	if os.Geteuid() != 0 {
		if os.Getenv("STAX_REQUIRE_ROOT") != "" {
			t.Fatal("STAX_REQUIRE_ROOT is set, and this test needs root to mount a FUSE file system")
		}
		t.Skip("mounting a FUSE file system needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no FUSE: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.v")
	cmd.Env = append(os.Environ(), "STAX_TEST_FUSE_CHILD="+mode, "STAX_TEST_FUSE_DIR="+t.TempDir())
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

// fuseMount makes mounts private to this process's namespace and mounts a FUSE file system
// at a new directory, returning it and the /dev/fuse descriptor; ok is false (with a SKIP:
// line printed) where FUSE cannot be mounted.
func fuseMount(fail func(string, ...any)) (mnt string, fd int, ok bool) {
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		fail("make mounts private: %v", err)
	}
	mnt = filepath.Join(os.Getenv("STAX_TEST_FUSE_DIR"), "mnt")
	os.Mkdir(mnt, 0o755)
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		fmt.Printf("SKIP: open /dev/fuse: %v\n", err)
		return "", -1, false
	}
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=0,group_id=0", fd)
	if err := unix.Mount("stax-test", mnt, "fuse", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		fmt.Printf("SKIP: mount fuse: %v\n", err)
		return "", -1, false
	}
	return mnt, fd, true
}

// FUSE protocol numbers used by serveAllButRead.
const (
	fuseLookup      = 1
	fuseForget      = 2
	fuseGetattr     = 3
	fuseOpen        = 14
	fuseRead        = 15
	fuseInit        = 26
	fuseInterrupt   = 36
	fuseBatchForget = 42
	fuseInHeader    = 40
)

// serveAllButRead is a FUSE server of one file, /prog.debug (4096 bytes), that answers
// every request but READ, which it leaves unanswered. It returns when the connection ends.
func serveAllButRead(fd int) {
	le := binary.LittleEndian
	buf := make([]byte, 1<<20+4096)
	attr := func(b []byte, ino uint64, mode uint32, size uint64) []byte {
		b = le.AppendUint64(b, ino)
		b = le.AppendUint64(b, size)
		b = le.AppendUint64(b, (size+511)/512)
		b = append(b, make([]byte, 3*8+3*4)...) // times
		b = le.AppendUint32(b, mode)
		b = le.AppendUint32(b, 1)           // nlink
		b = append(b, make([]byte, 3*4)...) // uid, gid, rdev
		b = le.AppendUint32(b, 4096)        // blksize
		return le.AppendUint32(b, 0)        // flags
	}
	attrOf := func(node uint64) []byte {
		if node == 1 {
			return attr(nil, 1, unix.S_IFDIR|0o755, 0)
		}
		return attr(nil, node, unix.S_IFREG|0o644, 4096)
	}
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n < fuseInHeader {
			return
		}
		req := buf[:n]
		op, unique, node := le.Uint32(req[4:]), le.Uint64(req[8:]), le.Uint64(req[16:])
		body := req[fuseInHeader:]
		var out []byte
		errno := int32(0)
		switch op {
		case fuseForget, fuseBatchForget, fuseInterrupt, fuseRead:
			continue // no answer
		case fuseInit:
			out = le.AppendUint32(out, 7)
			out = le.AppendUint32(out, min(le.Uint32(body[4:]), 31))
			out = le.AppendUint32(out, 0)       // max_readahead
			out = le.AppendUint32(out, 0)       // flags
			out = le.AppendUint16(out, 1)       // max_background
			out = le.AppendUint16(out, 1)       // congestion_threshold
			out = le.AppendUint32(out, 128<<10) // max_write
			out = le.AppendUint32(out, 1)       // time_gran
			out = append(out, make([]byte, 64-len(out))...)
		case fuseLookup:
			if name := string(body[:max(0, bytes.IndexByte(body, 0))]); node != 1 || name != "prog.debug" {
				errno = -int32(unix.ENOENT)
				break
			}
			out = le.AppendUint64(out, 2)         // nodeid
			out = le.AppendUint64(out, 0)         // generation
			out = le.AppendUint64(out, 3600)      // entry_valid
			out = le.AppendUint64(out, 3600)      // attr_valid
			out = append(out, make([]byte, 8)...) // nsecs
			out = append(out, attrOf(2)...)
		case fuseGetattr:
			out = le.AppendUint64(out, 3600)
			out = append(out, make([]byte, 8)...)
			out = append(out, attrOf(node)...)
		case fuseOpen:
			out = make([]byte, 16)
		default:
			if op == 18 || op == 25 { // RELEASE, FLUSH
				break
			}
			errno = -int32(unix.ENOSYS)
		}
		hdr := le.AppendUint32(nil, uint32(16+len(out)))
		hdr = le.AppendUint32(hdr, uint32(errno))
		hdr = le.AppendUint64(hdr, unique)
		if _, err := unix.Write(fd, append(hdr, out...)); err != nil && err != unix.ENOENT {
			return
		}
	}
}

// stalledReadChild mounts serveAllButRead's file system and checks ReaderAt and OpenELF
// against it; it prints STALL OK, or FAIL: lines and exits 1.
func stalledReadChild() {
	fail := func(format string, a ...any) {
		fmt.Printf("FAIL: "+format+"\n", a...)
		os.Exit(1)
	}
	mnt, fd, ok := fuseMount(fail)
	if !ok {
		return
	}
	go serveAllButRead(fd)
	OpenTimeout = 300 * time.Millisecond
	path := filepath.Join(mnt, "prog.debug")
	f, err := Open(path)
	if err != nil {
		fail("Open of a file its server opens: %v", err)
	}
	_, abandonedBefore := Counts()
	ra := ReaderAt(f)
	buf := make([]byte, 100)
	t0 := time.Now()
	if _, err := ra.ReadAt(buf, 0); !errors.Is(err, ErrStalled) {
		fail("ReadAt on a file whose reads are never answered = %v, want ErrStalled", err)
	}
	if took := time.Since(t0); took > OpenTimeout+2*time.Second {
		fail("ReadAt returned after %v, with a deadline of %v", took, OpenTimeout)
	}
	t0 = time.Now()
	if _, err := ra.ReadAt(buf, 0); !errors.Is(err, ErrStalled) || time.Since(t0) > OpenTimeout/2 {
		fail("the next ReadAt = %v after %v, want ErrStalled at once", err, time.Since(t0))
	}
	if err := f.Close(); err != nil {
		fail("Close with a read in flight: %v", err)
	}
	if _, err := OpenELF(path); !errors.Is(err, ErrStalled) {
		fail("OpenELF of a file whose reads are never answered = %v, want ErrStalled", err)
	}
	if _, ab := Counts(); ab != abandonedBefore+1 {
		fail("abandoned count went from %d to %d, want 1 more (one path)", abandonedBefore, ab)
	}
	if !hasNote("abandoned " + path + ": read: no answer within 300ms") {
		fail("notes %q do not name %s", Notes(maxNoted), path)
	}
	unix.Unmount(mnt, unix.MNT_DETACH)
	unix.Close(fd)
	fmt.Println("STALL OK")
}

// BenchmarkOpen: what an Open costs (O_PATH, fstat, reopen, fstat, in a goroutine under a
// deadline) against a plain os.Open of the same file.
func BenchmarkOpen(b *testing.B) {
	exe, _ := os.Executable()
	b.Run("targetfile", func(b *testing.B) {
		for b.Loop() {
			f, err := Open(exe)
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
	b.Run("os", func(b *testing.B) {
		for b.Loop() {
			f, err := os.Open(exe)
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
}

// BenchmarkReadAt: 4 KiB reads of a cached file through ReaderAt against the file itself.
func BenchmarkReadAt(b *testing.B) {
	exe, _ := os.Executable()
	f, err := Open(exe)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for _, c := range []struct {
		name string
		r    interface {
			ReadAt([]byte, int64) (int, error)
		}
	}{{"targetfile", ReaderAt(f)}, {"os", f}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := c.r.ReadAt(buf, 4096); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
