package proc

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/symbol/debugfile"
	"github.com/stax-profiler/stax/internal/testutil"
)

// waiter is a program that waits for its standard input to close; VARIANT makes builds
// that differ (and so have different build-ids).
const waiter = `#include <unistd.h>
int variant(void) { return VARIANT; }
int main(void) { char c; while (read(0, &c, 1) > 0) {} return variant() == 0; }
`

// startWaiter builds the waiter at dir/name and starts it; it ends with the test.
func startWaiter(t *testing.T, dir, name string) (*exec.Cmd, string) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "waiter.c")
	if err := os.WriteFile(src, []byte(waiter), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := testutil.CC(t, dir, name, "gcc", "-DVARIANT=1", src)
	cmd := exec.Command(bin)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	return cmd, bin
}

// mainMapping returns bin's executable mapping in the process (it has run exec once
// cmd.Start returns).
func mainMapping(t *testing.T, pid int, bin string) Mapping {
	t.Helper()
	ms, err := ReadMaps(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if strings.TrimSuffix(m.Path, " (deleted)") == bin {
			return m
		}
	}
	t.Fatalf("%s is not mapped by pid %d: %+v", bin, pid, ms)
	return Mapping{}
}

func buildIDOf(t *testing.T, f *os.File) []byte {
	t.Helper()
	id, err := debugfile.BuildID(f)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// A program whose binary was deleted, and another build written at its path, while it
// runs: OpenImage reads the mapped file, checked by the MMAP2 build-id or, without one
// (mappings read from /proc/PID/maps), by inode; never the new build.
func TestOpenImageOfReplacedBinary(t *testing.T) {
	dir := t.TempDir()
	cmd, bin := startWaiter(t, dir, "daemon")
	want, err := debugfile.ReadBuildID(bin)
	if err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	m := mainMapping(t, pid, bin)
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "new.c")
	os.WriteFile(src, []byte(strings.Replace(waiter, "VARIANT", "2", 1)), 0o644)
	testutil.CC(t, dir, "daemon", "gcc", "-DVARIANT=2", src)
	if other, _ := debugfile.ReadBuildID(bin); bytes.Equal(other, want) {
		t.Fatalf("the new build has the old build-id %x", want)
	}
	m = mainMapping(t, pid, bin)
	if !m.Deleted() {
		t.Fatalf("mapping %q is not deleted", m.Path)
	}
	withID := m
	withID.BuildID, withID.Ino = want, 0
	for _, tc := range []struct {
		name string
		m    Mapping
	}{
		{"build-id", withID},
		{"inode", m},
		{"exe", func() Mapping { e := withID; e.Start, e.End = 1, 2; return e }()}, // no map_files entry holds it
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := OpenImage(pid, &tc.m)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if got := buildIDOf(t, f); !bytes.Equal(got, want) {
				t.Errorf("%s has build-id %x, want the mapped %x", f.Name(), got, want)
			}
			if tc.name == "exe" && !strings.HasSuffix(f.Name(), "/exe") {
				t.Errorf("read %s, want /proc/PID/exe", f.Name())
			}
		})
	}
	// Once the process is gone, nothing reaches the mapped file: the new build is refused.
	cmd.Process.Kill()
	cmd.Wait()
	if f, err := OpenImage(pid, &withID); err == nil {
		f.Close()
		t.Errorf("opened %s for a gone process's replaced binary", f.Name())
	} else if !strings.Contains(err.Error(), "replaced") {
		t.Errorf("error %q does not say the file was replaced", err)
	}
}

// A file still at its path is read from there: through the process's root, else the host.
func TestOpenImageAtItsPath(t *testing.T) {
	cmd, bin := startWaiter(t, t.TempDir(), "prog")
	want, _ := debugfile.ReadBuildID(bin)
	m := mainMapping(t, cmd.Process.Pid, bin)
	m.BuildID = want
	f, err := OpenImage(cmd.Process.Pid, &m)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if wantName := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/root" + bin; f.Name() != wantName {
		t.Errorf("read %s, want %s", f.Name(), wantName)
	}
	f, err = OpenImage(0, &m)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if f.Name() != bin {
		t.Errorf("read %s, want %s", f.Name(), bin)
	}
	for _, path := range []string{"", "//anon", "[vdso]"} {
		if _, err := OpenImage(cmd.Process.Pid, &Mapping{Path: path}); err == nil {
			t.Errorf("OpenImage(%q) opened something", path)
		}
	}
}
