// Package targetfile opens the files stax reads on a recorded program's behalf: its ELF
// images, their debug files (found by build-id or .gnu_debuglink), JIT dumps, perf maps,
// spans and marker files, source files, and its /proc files. Their paths are chosen by the
// program's user, who may put a FIFO, a device or a file on a stalled file system there to
// stop a recorder running as root; nothing opened here can do that:
//
//   - the path is resolved with O_PATH first, which opens nothing (no FIFO waits for a
//     writer, no device driver runs), and the descriptor's fstat must say regular file;
//     else the file is refused;
//   - the file is then reopened through that descriptor, O_RDONLY|O_NONBLOCK|O_NOCTTY|
//     O_CLOEXEC, checked to be the same regular file, and O_NONBLOCK is cleared;
//   - the open (and ReadFile's read, bounded in size) runs in a goroutine, and is abandoned
//     when it has not returned within OpenTimeout (a FUSE or NFS server that does not
//     answer): the caller gets ErrStalled at once, the descriptor is closed when the
//     system call returns, and the same path fails at once while it is still stuck;
//   - ReaderAt gives each read of an opened file the same deadline (OpenELF reads through
//     it, and so do the symbol, DWARF and debug-file readers).
//
// The files refused and the opens abandoned are counted, each path once, and Counts and
// Notes report them (stax status shows them).
package targetfile

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// OpenTimeout is how long an open (or ReadFile) may take before it is abandoned.
var OpenTimeout = 2 * time.Second

// Errors of this package; a refused file's error wraps ErrNotRegular, an abandoned one's
// ErrStalled.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrStalled    = errors.New("did not answer in time; abandoned")
	ErrTooLarge   = errors.New("file too large")
)

// maxStuck bounds the opens left running: each holds an OS thread until its system call
// returns. Past it, an open of a new path is abandoned without being tried.
const maxStuck = 32

// maxNoted bounds the distinct paths remembered for Notes and for counting each once.
const maxNoted = 1024

var (
	mu        sync.Mutex
	stuck     = map[string]bool{} // paths whose open or read has not returned yet
	refused   = map[string]string{}
	abandoned = map[string]string{}
	nRefused  uint64
	nAband    uint64
)

// Counts returns how many distinct files were refused (not regular files) and how many
// opens or reads were abandoned (they did not return in time) in this process.
func Counts() (refusedFiles, abandonedOpens uint64) {
	mu.Lock()
	defer mu.Unlock()
	return nRefused, nAband
}

// Notes describes up to max of the files refused and abandoned, sorted, one line each.
func Notes(max int) []string {
	mu.Lock()
	var out []string
	for p, why := range refused {
		out = append(out, "refused "+p+": "+why)
	}
	for p, why := range abandoned {
		out = append(out, "abandoned "+p+": "+why)
	}
	mu.Unlock()
	sort.Strings(out)
	if len(out) > max {
		out = out[:max]
	}
	return out
}

// Refuse counts path as refused for why (once per path): for callers that find a file
// they will not open by other means (a scan of candidate paths).
func Refuse(path, why string) {
	mu.Lock()
	defer mu.Unlock()
	if _, ok := refused[path]; ok {
		return
	}
	nRefused++
	if len(refused) < maxNoted {
		refused[path] = why
	}
}

// Abandon counts an open of path abandoned for why (once per path): for callers that open
// by other means under their own deadline.
func Abandon(path, why string) {
	mu.Lock()
	defer mu.Unlock()
	if _, ok := abandoned[path]; ok {
		return
	}
	nAband++
	if len(abandoned) < maxNoted {
		abandoned[path] = why
	}
}

// Open opens path for reading as described in the package comment. Symbolic links are
// followed.
func Open(path string) (*os.File, error) { return open(path, false) }

// OpenNoFollow is Open where path's last component must not be a symbolic link: one is
// refused with an error wrapping unix.ELOOP (not counted as refused).
func OpenNoFollow(path string) (*os.File, error) { return open(path, true) }

// ReadFile reads the whole of path, at most max bytes (a larger file is ErrTooLarge), with
// the open and the read under one deadline.
func ReadFile(path string, max int64) ([]byte, error) {
	var data []byte
	_, err := run(path, func() (*os.File, error) {
		f, err := openNow(path, false)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		data, err = readAll(f, max)
		return nil, err
	})
	if err != nil {
		return nil, err
	}
	return data, nil
}

// ReadPrefix reads up to max bytes from the start of path (the rest is left unread),
// with the open and the read under one deadline.
func ReadPrefix(path string, max int64) ([]byte, error) {
	var data []byte
	_, err := run(path, func() (*os.File, error) {
		f, err := openNow(path, false)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		data, err = io.ReadAll(io.LimitReader(f, max))
		if err != nil {
			err = &os.PathError{Op: "read", Path: path, Err: err}
		}
		return nil, err
	})
	if err != nil {
		return nil, err
	}
	return data, nil
}

// Candidate reports whether path, found by a scan for a program's files (JIT dumps, perf
// maps, spans files), is a regular file, not a symbolic link. A FIFO, device or socket
// there is counted as refused. The lstat runs without a deadline: scans are frequent.
func Candidate(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil {
		return false
	}
	m := fi.Mode()
	if m&(os.ModeNamedPipe|os.ModeDevice|os.ModeCharDevice|os.ModeSocket) != 0 {
		Refuse(path, "is "+modeKind(m))
	}
	return m.IsRegular()
}

func modeKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file"
}

// readAll reads f to its end, at most max bytes.
func readAll(f *os.File, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: f.Name(), Err: err}
	}
	if int64(len(b)) > max {
		return nil, &os.PathError{Op: "read", Path: f.Name(), Err: fmt.Errorf("%w: over %d bytes", ErrTooLarge, max)}
	}
	return b, nil
}

// maxReadChunk is the most one read system call of a ReaderAt asks for.
const maxReadChunk = 1 << 20

// ReaderAt reads f (a file from Open) with a deadline on each read system call: a read
// that has not returned within OpenTimeout is abandoned and counted, it and every later
// read of f fail with ErrStalled, and the abandoned read finishes into a buffer of its own
// (never into the caller's, which it may have reused). Safe for concurrent use.
func ReaderAt(f *os.File) io.ReaderAt { return &deadlineReader{f: f} }

type deadlineReader struct {
	f    *os.File
	dead atomic.Bool
}

type readResult struct {
	n   int
	err error
}

func (r *deadlineReader) ReadAt(p []byte, off int64) (int, error) {
	total := 0
	for total < len(p) {
		if r.dead.Load() {
			return total, &os.PathError{Op: "read", Path: r.f.Name(), Err: ErrStalled}
		}
		buf := make([]byte, min(len(p)-total, maxReadChunk))
		done := make(chan readResult, 1)
		go func(at int64) {
			n, err := r.f.ReadAt(buf, at)
			done <- readResult{n, err}
		}(off + int64(total))
		t := time.NewTimer(OpenTimeout)
		select {
		case res := <-done:
			t.Stop()
			total += copy(p[total:], buf[:res.n])
			if res.err != nil {
				return total, res.err
			}
			if res.n == 0 {
				return total, io.ErrUnexpectedEOF
			}
		case <-t.C:
			r.dead.Store(true)
			Abandon(r.f.Name(), fmt.Sprintf("read: no answer within %v", OpenTimeout))
			return total, &os.PathError{Op: "read", Path: r.f.Name(), Err: ErrStalled}
		}
	}
	return total, nil
}

// ELF is an ELF file opened with Open; Close closes the file under it.
type ELF struct {
	*elf.File
	f *os.File
}

// Close closes the ELF file and its descriptor.
func (e *ELF) Close() error {
	e.File.Close()
	return e.f.Close()
}

// OpenELF opens the ELF file at path with Open.
func OpenELF(path string) (*ELF, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	ef, err := newELF(ReaderAt(f))
	if err != nil {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return &ELF{File: ef, f: f}, nil
}

// newELF is elf.NewFile with a malformed file's panic turned into an error.
func newELF(r io.ReaderAt) (f *elf.File, err error) {
	defer func() {
		if p := recover(); p != nil {
			f, err = nil, fmt.Errorf("malformed ELF: %v", p)
		}
	}()
	return elf.NewFile(r)
}

func open(path string, nofollow bool) (*os.File, error) {
	return run(path, func() (*os.File, error) { return openNow(path, nofollow) })
}

// run runs do, which opens path, with the deadline: when it does not return in time the
// caller gets ErrStalled, and the file do opens is closed when it does.
func run(path string, do func() (*os.File, error)) (*os.File, error) {
	mu.Lock()
	if stuck[path] {
		mu.Unlock()
		return nil, &os.PathError{Op: "open", Path: path, Err: ErrStalled}
	}
	if len(stuck) >= maxStuck {
		mu.Unlock()
		Abandon(path, "too many opens stalled already")
		return nil, &os.PathError{Op: "open", Path: path, Err: ErrStalled}
	}
	mu.Unlock()
	type result struct {
		f   *os.File
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := do()
		done <- result{f, err}
	}()
	t := time.NewTimer(OpenTimeout)
	defer t.Stop()
	select {
	case r := <-done:
		var nr *notRegular
		if errors.As(r.err, &nr) && !nr.dir {
			Refuse(path, "is "+nr.kind)
		}
		return r.f, r.err
	case <-t.C:
	}
	mu.Lock()
	stuck[path] = true
	mu.Unlock()
	Abandon(path, fmt.Sprintf("no answer within %v", OpenTimeout))
	go func() {
		r := <-done
		if r.f != nil {
			r.f.Close()
		}
		mu.Lock()
		delete(stuck, path)
		mu.Unlock()
	}()
	return nil, &os.PathError{Op: "open", Path: path, Err: ErrStalled}
}

// notRegular is the error of a file that is not a regular file.
type notRegular struct {
	kind string // "a FIFO", ...
	dir  bool
}

func (e *notRegular) Error() string { return "is " + e.kind + ", " + ErrNotRegular.Error() }
func (e *notRegular) Unwrap() error { return ErrNotRegular }
