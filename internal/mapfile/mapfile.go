// Package mapfile maps cache files read-only, so that a reader reads the parts it looks up
// from the page cache instead of copying the whole file into its heap. A mapping handed out
// here is never undone by this package: what is read from it (strings made in place) may
// live as long as the process. The caches mapped are replaced by renaming, never rewritten
// in place, so a mapped file stays whole.
package mapfile

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ErrSize says the file's size is outside the bounds asked for.
var ErrSize = errors.New("file size out of bounds")

// Map maps f read-only when its size is in [min, max].
func Map(f *os.File, min, max int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() < min || fi.Size() > max || fi.Size() == 0 {
		return nil, fmt.Errorf("map %s: %w (%d bytes)", f.Name(), ErrSize, fi.Size())
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", f.Name(), err)
	}
	return data, nil
}

// Unmap undoes a mapping none of whose bytes were handed out.
func Unmap(data []byte) { unix.Munmap(data) }
