//go:build linux

package jitdump

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/jit/jitformat"
)

// ErrClosed is returned by writes after Close.
var ErrClosed = errors.New("jitdump writer closed")

// DebugEntry maps the code from Addr on to a line of a source file.
type DebugEntry struct {
	Addr    uint64
	Line    uint32
	Discrim uint32
	File    string
}

// Writer writes a jitdump file.
type Writer struct {
	mu        sync.Mutex
	f         *os.File
	pid       int
	codeIndex uint64
	mapped    []byte
	buf       []byte
	prefix    jitformat.RecordPrefix // of the record in buf
}

// Create creates dir/jit-<pid>.dump for the calling process and writes its
// header. See Open for what happens to an existing file of that name.
func Create(dir string) (*Writer, error) {
	return Open(filepath.Join(dir, "jit-"+strconv.Itoa(os.Getpid())+".dump"))
}

// Open creates the jitdump file at path, mode 0600, and writes its header.
// Profilers find the file by its name, so it should be jit-<pid>.dump;
// Create builds that name. The file is created exclusively and a symbolic
// link is never followed: an existing regular file owned by the caller's
// effective uid (left by an earlier process with the same pid) is replaced,
// and anything else at path (a link, a file of another user or another
// kind) is refused, so that another user of a shared directory such as /tmp
// cannot make the caller overwrite a file of its choosing.
func Open(path string) (*Writer, error) {
	f, err := createNew(path, os.O_RDWR)
	if err != nil {
		return nil, fmt.Errorf("create jitdump: %w", err)
	}
	w := &Writer{f: f, pid: os.Getpid()}
	h := jitformat.Append(nil, &jitformat.Header{
		Magic:     jitformat.Magic,
		Version:   jitformat.Version,
		TotalSize: jitformat.HeaderSize,
		ElfMach:   jitformat.HostMachine(),
		Pid:       uint32(w.pid),
		Timestamp: Now(),
	})
	if _, err := f.Write(h); err != nil {
		f.Close()
		return nil, fmt.Errorf("write jitdump header: %w", err)
	}
	return w, nil
}

// createNew creates path exclusively, without following a link, mode 0600,
// open with flag. An existing regular file owned by the effective uid is
// removed first; anything else at path is refused.
func createNew(path string, flag int) (*os.File, error) {
	for retried := false; ; retried = true {
		f, err := os.OpenFile(path, flag|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == nil || !errors.Is(err, fs.ErrExist) || retried {
			return f, err
		}
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, &fs.PathError{Op: "lstat", Path: path, Err: err}
		}
		switch {
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			return nil, fmt.Errorf("%s is a symbolic link, which is not followed; remove it", path)
		case st.Mode&unix.S_IFMT != unix.S_IFREG:
			return nil, fmt.Errorf("%s exists and is not a regular file; remove it", path)
		case st.Uid != uint32(os.Geteuid()):
			return nil, fmt.Errorf("%s exists and belongs to uid %d, not to uid %d; remove it", path, st.Uid, os.Geteuid())
		}
		// A stale file of an earlier process of this user with the same pid. Unlinking
		// never follows a link, and the file is then created exclusively again.
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
}

// Now returns the CLOCK_MONOTONIC time in nanoseconds, the clock of jitdump
// timestamps.
func Now() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return uint64(ts.Nano())
}

// Path returns the file's name.
func (w *Writer) Path() string { return w.f.Name() }

// MarkMmap maps the file's first page executable, as perf's JVMTI
// library does: perf record sees the mapping of jit-<pid>.dump and
// perf inject --jit then finds the file. stax does not need it. A /tmp
// mounted noexec refuses the mapping.
func (w *Writer) MarkMmap() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return ErrClosed
	}
	if w.mapped != nil {
		return nil
	}
	m, err := unix.Mmap(int(w.f.Fd()), 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE)
	if err != nil {
		return fmt.Errorf("map jitdump: %w", err)
	}
	w.mapped = m
	return nil
}

// record starts a record of the given id in w.buf; the caller appends the
// body and calls flush. w.mu must be held.
func (w *Writer) record(id uint32) {
	w.prefix = jitformat.RecordPrefix{ID: id, Timestamp: Now()}
	w.buf = jitformat.Append(w.buf[:0], &w.prefix) // TotalSize set by flush
}

func (w *Writer) flush() error {
	if len(w.buf) > jitformat.MaxRecordSize {
		return fmt.Errorf("write jitdump record: %d bytes exceeds the %d-byte limit", len(w.buf), jitformat.MaxRecordSize)
	}
	w.prefix.TotalSize = uint32(len(w.buf))
	jitformat.Put(w.buf, &w.prefix)
	if _, err := w.f.Write(w.buf); err != nil {
		return fmt.Errorf("write jitdump record: %w", err)
	}
	return nil
}

func appendCString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			s = s[:i]
			break
		}
	}
	b = append(b, s...)
	return append(b, 0)
}

// WriteCodeLoad announces that code, a copy of the bytes now at addr, is
// the function name.
func (w *Writer) WriteCodeLoad(name string, addr uint64, code []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return ErrClosed
	}
	w.record(jitformat.RecCodeLoad)
	w.buf = jitformat.Append(w.buf, &jitformat.CodeLoad{
		Pid:       uint32(w.pid),
		Tid:       uint32(unix.Gettid()),
		VMA:       addr,
		CodeAddr:  addr,
		CodeSize:  uint64(len(code)),
		CodeIndex: w.codeIndex,
	})
	w.buf = appendCString(w.buf, name)
	w.buf = append(w.buf, code...)
	if err := w.flush(); err != nil {
		return err
	}
	w.codeIndex++
	return nil
}

// WriteDebugInfo gives the source lines of the function at addr. Write it
// before that function's WriteCodeLoad. Entry addresses are absolute.
func (w *Writer) WriteDebugInfo(addr uint64, entries []DebugEntry) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return ErrClosed
	}
	w.record(jitformat.RecCodeDebugInfo)
	w.buf = jitformat.Append(w.buf, &jitformat.DebugInfo{CodeAddr: addr, NrEntry: uint64(len(entries))})
	for _, e := range entries {
		w.buf = jitformat.Append(w.buf, &jitformat.DebugEntry{Addr: e.Addr, Line: e.Line, Discrim: e.Discrim})
		// The file name is written in full every time: the specification's
		// "\xff" same-file shorthand is not understood by perf inject.
		w.buf = appendCString(w.buf, e.File)
	}
	return w.flush()
}

// WriteClose writes CODE_CLOSE, telling readers that no more code will be
// announced.
func (w *Writer) WriteClose() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return ErrClosed
	}
	w.record(jitformat.RecCodeClose)
	return w.flush()
}

// Close unmaps and closes the file. It does not write CODE_CLOSE.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return ErrClosed
	}
	var errs []error
	if w.mapped != nil {
		errs = append(errs, unix.Munmap(w.mapped))
		w.mapped = nil
	}
	errs = append(errs, w.f.Close())
	w.f = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close jitdump: %w", err)
	}
	return nil
}

// PerfMap writes a perf map file, one "START SIZE name" line per function.
type PerfMap struct {
	mu sync.Mutex
	f  *os.File
}

// CreatePerfMap creates dir/perf-<pid>.map for the calling process.
// Profilers look for it in /tmp.
func CreatePerfMap(dir string) (*PerfMap, error) {
	return OpenPerfMap(filepath.Join(dir, "perf-"+strconv.Itoa(os.Getpid())+".map"))
}

// OpenPerfMap creates a perf map at path, mode 0600, exclusively and
// without following a link, as Open creates a jitdump file.
func OpenPerfMap(path string) (*PerfMap, error) {
	f, err := createNew(path, os.O_WRONLY|os.O_APPEND)
	if err != nil {
		return nil, fmt.Errorf("create perf map: %w", err)
	}
	return &PerfMap{f: f}, nil
}

// Path returns the file's name.
func (m *PerfMap) Path() string { return m.f.Name() }

// Add appends a line for the function name at [addr, addr+size). Line
// breaks in name are replaced by spaces.
func (m *PerfMap) Add(addr, size uint64, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.f == nil {
		return ErrClosed
	}
	line := make([]byte, 0, 40+len(name))
	line = strconv.AppendUint(line, addr, 16)
	line = append(line, ' ')
	line = strconv.AppendUint(line, size, 16)
	line = append(line, ' ')
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '\n' || c == '\r' || c == 0 {
			c = ' '
		}
		line = append(line, c)
	}
	line = append(line, '\n')
	if _, err := m.f.Write(line); err != nil {
		return fmt.Errorf("write perf map: %w", err)
	}
	return nil
}

// Close closes the file.
func (m *PerfMap) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.f == nil {
		return ErrClosed
	}
	err := m.f.Close()
	m.f = nil
	if err != nil {
		return fmt.Errorf("close perf map: %w", err)
	}
	return nil
}
