package asuser

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/testutil"
)

// TestRunAsNobody: what Run does is done with nobody's permissions and makes nobody's
// files, and stax's own identity is untouched after.
func TestRunAsNobody(t *testing.T) {
	testutil.RequireRoot(t)
	dir, err := os.MkdirTemp("", "stax-asuser-") // t.TempDir's parent is root's alone
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o1777)
	closed := filepath.Join(dir, "closed")
	os.Mkdir(closed, 0o700)
	nobody := &proc.Creds{UID: 65534, GIDs: []uint32{65534}}
	mine := filepath.Join(open, "mine")
	if err := Run(nobody, func() error { return os.WriteFile(mine, nil, 0o600) }); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(mine); err != nil {
		t.Fatal(err)
	} else if s := st.Sys().(*syscall.Stat_t); s.Uid != 65534 || s.Gid != 65534 {
		t.Errorf("made as uid %d gid %d, want 65534", s.Uid, s.Gid)
	}
	err = Run(nobody, func() error { return os.WriteFile(filepath.Join(closed, "x"), nil, 0o600) })
	if !errors.Is(err, os.ErrPermission) {
		t.Errorf("nobody wrote into root's 0700 directory: %v", err)
	}
	// Many runs later, every thread of the process still makes root's files.
	for range 20 {
		Run(nobody, func() error { return nil })
	}
	for i := range 20 {
		p := filepath.Join(closed, "root"+string(rune('a'+i)))
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatalf("as stax itself: %v", err)
		}
		if st, _ := os.Stat(p); st.Sys().(*syscall.Stat_t).Uid != 0 {
			t.Fatalf("%s made as uid %d after Run", p, st.Sys().(*syscall.Stat_t).Uid)
		}
	}
}
