package query

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/proc"
)

func TestOpenNamedFile(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755) // the test's own temporary directories
	os.Chmod(dir, 0o755)
	write := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("line one\nline two\n"), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	open := write("open.c", 0o644)
	secret := write("secret.c", 0o600)
	private := filepath.Join(dir, "private")
	os.Mkdir(private, 0o700)
	hidden := filepath.Join(private, "hidden.c")
	os.WriteFile(hidden, []byte("x\n"), 0o644)
	fifo := filepath.Join(dir, "fifo.c")
	if err := syscall.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	uid := uint32(os.Getuid())
	other := &proc.Creds{UID: uid + 12345, GIDs: []uint32{54321}}
	owner := &proc.Creds{UID: uid}

	for _, tc := range []struct {
		path string
		who  *proc.Creds
		want string // "" for success, else a substring of the error
	}{
		{open, other, ""},
		{open, nil, ""},
		{secret, owner, ""},
		{secret, other, "could not read it"},
		{hidden, other, "no search permission"},
		{hidden, owner, ""},
		{fifo, owner, "not a regular file"},
		{fifo, nil, "not a regular file"},
		{"/dev/zero", nil, "not a regular file"},
		{filepath.Join(dir, "missing.c"), other, "no such file"},
	} {
		done := make(chan error, 1)
		go func() {
			f, err := openNamedFile(tc.path, tc.who, 1<<20)
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s as %+v: %v", tc.path, tc.who, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%s as %+v: error %v, want %q", tc.path, tc.who, err, tc.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: open blocked", tc.path)
		}
	}
	if _, err := openNamedFile(open, nil, 4); err == nil || !strings.Contains(err.Error(), "over 4 bytes") {
		t.Errorf("an over-long file: %v", err)
	}
	if err := mayRead(secret, other); !errors.Is(err, errNotReadable) {
		t.Errorf("mayRead: %v", err)
	}
}
