package outfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteRegular: a new file gets the mode asked for, a replaced one keeps its own, a
// failed write leaves the previous contents and no temporary file, and a directory is
// refused.
func TestWriteRegular(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out")
	put := func(s string) func(*os.File) error {
		return func(f *os.File) error { _, err := f.WriteString(s); return err }
	}
	if n, err := Write(p, 0o644, put("first")); err != nil || n != 5 {
		t.Fatalf("new file: %d, %v", n, err)
	}
	if info, _ := os.Stat(p); info.Mode().Perm() != 0o644 {
		t.Errorf("new file mode %v", info.Mode())
	}
	os.Chmod(p, 0o600)
	if _, err := Write(p, 0o644, put("second")); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(p); info.Mode().Perm() != 0o600 {
		t.Errorf("replaced file mode %v, want 0600 kept", info.Mode())
	}
	boom := errors.New("boom")
	if _, err := Write(p, 0o644, func(f *os.File) error { f.WriteString("partial"); return boom }); !errors.Is(err, boom) {
		t.Errorf("failed write: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "second" {
		t.Errorf("after a failed write the file holds %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
	if _, err := Write(dir, 0o644, put("x")); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: %v", err)
	}
}
