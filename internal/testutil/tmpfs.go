package testutil

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// MountSmallTmpfs mounts a tmpfs of size bytes (whole pages) on a new temporary directory
// and returns it; it is unmounted when the test ends. A test fills it to see what a program
// does on a full file system. It needs root: it is skipped without, or fails when
// STAX_REQUIRE_ROOT=1.
func MountSmallTmpfs(t testing.TB, size int) string {
	t.Helper()
	RequireRoot(t)
	dir, err := os.MkdirTemp("", "stax-small-tmpfs-")
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size="+itoa(size)); err != nil {
		os.Remove(dir)
		Require(t, EnvRoot, "cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
		os.Remove(dir)
	})
	return dir
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// GonePid returns the pid of a process that has exited and been reaped (a pid no process
// holds now, unless the system reuses it meanwhile).
func GonePid(t testing.TB) int {
	t.Helper()
	var attr os.ProcAttr
	p, err := os.StartProcess("/bin/true", []string{"true"}, &attr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	return p.Pid
}
