package symbol

import (
	"fmt"
	"os"
	"syscall"

	"github.com/stax-profiler/stax/internal/targetfile"
)

// fileKey identifies a file's contents without reading it.
type fileKey struct {
	path       string
	size       int64
	mtime      int64
	dev, inode uint64
}

func (k fileKey) String() string {
	return fmt.Sprintf("%s:%d:%d", k.path, k.size, k.mtime)
}

func statKey(path string) (fileKey, error) {
	st, err := os.Stat(path)
	if err != nil {
		return fileKey{}, err
	}
	if !st.Mode().IsRegular() {
		if !st.IsDir() {
			targetfile.Refuse(path, "is not a regular file")
		}
		return fileKey{}, fmt.Errorf("%s is not a regular file", path)
	}
	k := fileKey{path: path, size: st.Size(), mtime: st.ModTime().UnixNano()}
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		k.dev, k.inode = uint64(s.Dev), s.Ino
	}
	return k, nil
}
