package query

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/stax-profiler/stax/internal/proc"
)

// errNotReadable says the target could not have read a file it names: stax, perhaps more
// privileged, does not read it for it.
var errNotReadable = errors.New("the recorded process could not read it")

// openNamedFile opens a file a recorded process named (a source path in its debug info) as
// that process could: the kernel resolves the path and applies permissions, ACLs and
// symbolic links with the process's file-system identity (see openAs), and the opened file
// must be a regular file (no FIFO or device that would block or never end) of at most max
// bytes. who nil: the run did not record the process's identity, and the file is opened
// with stax's own. Every file a run's debug info names is read through here.
func openNamedFile(path string, who *proc.Creds, max int64) (io.ReadCloser, error) {
	path = filepath.Clean(path)
	f, err := openAs(path, who)
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			return nil, fmt.Errorf("%s: %w (%v)", path, errNotReadable, err)
		}
		return nil, err
	}
	if err := checkOpened(f, max); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s %w", path, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(f, max), f}, nil
}
