package query

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/stax-profiler/stax/internal/proc"
)

// errNotReadable says the target could not have read a file it names: stax, perhaps more
// privileged, does not read it for it.
var errNotReadable = errors.New("the recorded process could not read it")

// openNamedFile opens a file a recorded process named (a source path in its debug info) as
// that process could: a regular file (no FIFO or device that would block or never end),
// readable by its uid and groups along the whole path, at most max bytes. who nil: the
// run did not record the process's identity, and only the file's kind and size are checked.
func openNamedFile(path string, who *proc.Creds, max int64) (io.ReadCloser, error) {
	path = filepath.Clean(path)
	if who != nil {
		if err := mayRead(path, who); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > max {
		f.Close()
		return nil, fmt.Errorf("%s is over %d bytes", path, max)
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(f, max), f}, nil
}

// mayRead checks that who could search every directory on path and read the file.
func mayRead(path string, who *proc.Creds) error {
	if who.UID == 0 {
		return nil
	}
	dir := filepath.Dir(path)
	var dirs []string
	for d := dir; ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if d == "/" || d == "." {
			break
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if !allowed(dirs[i], who, 1) {
			return fmt.Errorf("%s: %w (no search permission on %s)", path, errNotReadable, dirs[i])
		}
	}
	if !allowed(path, who, 4) {
		return fmt.Errorf("%s: %w", path, errNotReadable)
	}
	return nil
}

// allowed applies the permission bits of path for who: bit is 4 (read) or 1 (search).
func allowed(path string, who *proc.Creds, bit uint32) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return os.IsNotExist(err) // a missing file fails later, with its own error
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	mode := uint32(fi.Mode().Perm())
	if st.Uid == who.UID {
		return mode&(bit<<6) != 0
	}
	for _, g := range who.GIDs {
		if g == st.Gid {
			return mode&(bit<<3) != 0
		}
	}
	return mode&bit != 0
}
