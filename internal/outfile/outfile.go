// Package outfile writes the files a user names on stax's command line (export -o, save
// PATH) without replacing what is not a regular file. A regular file, or a path that does
// not exist yet (its missing directories are created, 0700), is written through a temporary file beside it that is renamed over it
// once complete, so a failed write leaves the previous contents; a symlink is followed,
// and its target written, the link left in place. Anything else (a FIFO, a character
// device such as /dev/null or a terminal, a socket's or pipe's /proc/self/fd/N) is opened
// and written into: renaming over it would replace the device or FIFO with a regular
// file (as root, /dev/null for every program on the machine).
package outfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Write writes to path what write writes into a file (a seekable one: a run's header is
// finished last). A new file gets perm; a regular file that is replaced keeps its
// permission bits. It returns how many bytes were written.
func Write(path string, perm os.FileMode, write func(*os.File) error) (int64, error) {
	if path == "" {
		return 0, errors.New("no path to write to")
	}
	dest, info, err := resolve(path)
	if err != nil {
		return 0, err
	}
	if info != nil && !info.Mode().IsRegular() {
		return writeInto(path, write)
	}
	if info != nil {
		perm = info.Mode().Perm()
	} else if err := os.MkdirAll(filepath.Dir(dest), 0o700); err != nil {
		return 0, err
	}
	return replace(dest, perm, write)
}

// resolve follows path's symlinks: dest is the file they lead to, and info its stat (nil
// when it does not exist yet).
func resolve(path string) (dest string, info os.FileInfo, err error) {
	info, err = os.Stat(path)
	switch {
	case err == nil:
		if info.IsDir() {
			return "", nil, fmt.Errorf("%s is a directory: name a file in it", path)
		}
		if info.Mode().IsRegular() {
			if dest, err = filepath.EvalSymlinks(path); err != nil {
				return "", nil, err
			}
		}
		return dest, info, nil
	case errors.Is(err, os.ErrNotExist):
		if li, lerr := os.Lstat(path); lerr == nil && li.Mode()&os.ModeSymlink != 0 {
			t, _ := os.Readlink(path)
			return "", nil, fmt.Errorf("%s is a symlink to %s, which does not exist: stax does not create files where a link points; name the file itself", path, t)
		}
		return path, nil, nil
	}
	return "", nil, err
}

// replace writes a temporary file beside dest and renames it over dest.
func replace(dest string, perm os.FileMode, write func(*os.File) error) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return 0, err
	}
	size, err := tmp.Seek(0, io.SeekEnd)
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	return size, os.Rename(tmp.Name(), dest)
}

// writeInto writes into a file that is not a regular one: the whole output is written to
// a temporary file first, so that a failed write sends nothing, then copied in.
func writeInto(path string, write func(*os.File) error) (int64, error) {
	tmp, err := os.CreateTemp("", "stax-out-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if err := write(tmp); err != nil {
		return 0, err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	// No O_CREAT: what is there is written into, never replaced; no O_TRUNC, which a FIFO
	// or a device ignores anyway. A FIFO's open waits for its reader.
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return 0, err
	}
	if info.Mode().IsRegular() {
		// Replaced by a regular file since it was looked at: written the usual way.
		f.Close()
		if _, err := tmp.Seek(0, io.SeekStart); err != nil {
			return 0, err
		}
		return Write(path, 0o600, func(out *os.File) error {
			_, err := io.Copy(out, tmp)
			return err
		})
	}
	n, err := io.Copy(f, tmp)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("write %s: %w", path, err)
	}
	return n, nil
}
