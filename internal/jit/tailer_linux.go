package jit

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/jit/jitformat"
	"github.com/stax-profiler/stax/internal/targetfile"
)

// Errors returned when opening a JIT file is refused.
var (
	ErrSymlink    = errors.New("refusing to follow a symbolic link")
	ErrNotRegular = errors.New("not a regular file")
	ErrWrongOwner = errors.New("file owner is not the target process's user")
	ErrWrongPid   = errors.New("header pid is not the target process's pid")
)

// Read sizes; variables so that tests can exercise chunk boundaries.
var (
	readChunk    = 1 << 20
	perfMapChunk = 256 << 10
)

// tailFile is an open, checked file being read incrementally.
type tailFile struct {
	path     string
	uid      uint32
	fd       int
	dev, ino uint64
	off      int64
	size     int64 // the file's size at the last check
	consumed int64 // bytes read and parsed since opening, over every reset
	buf      []byte
	head     []byte // the file's first bytes, to notice a rewrite that outgrew off
	mtime    int64  // the file's modification time at the last check (CLOCK_REALTIME ns)
	// headMax, when set, is how many leading bytes head keeps (less than headLen): a
	// format whose header changes in place keeps only its unchanging part.
	headMax int
}

// headLen is how many leading bytes are remembered to notice a file that
// was truncated and rewritten past the read offset between two polls.
const headLen = 64

// openChecked opens path for reading without following a final symbolic
// link, and checks it is a regular file owned by uid. The open is targetfile's:
// a FIFO or device is refused (and counted) without being opened, and a file
// system that does not answer is abandoned.
func openChecked(path string, uid uint32) (int, *unix.Stat_t, error) {
	f, err := targetfile.OpenNoFollow(path)
	if err != nil {
		switch {
		case errors.Is(err, unix.ELOOP):
			return -1, nil, fmt.Errorf("open jit file %s: %w", path, ErrSymlink)
		case errors.Is(err, targetfile.ErrNotRegular):
			return -1, nil, fmt.Errorf("open jit file %s: %w (%w)", path, ErrNotRegular, err)
		}
		return -1, nil, fmt.Errorf("open jit file %s: %w", path, err)
	}
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	f.Close()
	if err != nil {
		return -1, nil, fmt.Errorf("open jit file %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("stat jit file %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("open jit file %s: %w", path, ErrNotRegular)
	}
	if st.Uid != uid {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("open jit file %s: %w: owned by uid %d, expected uid %d", path, ErrWrongOwner, st.Uid, uid)
	}
	return fd, &st, nil
}

func (f *tailFile) open() error {
	fd, st, err := openChecked(f.path, f.uid)
	if err != nil {
		return err
	}
	f.fd, f.dev, f.ino = fd, st.Dev, st.Ino
	return nil
}

func (f *tailFile) close() error {
	if f.fd < 0 {
		return nil
	}
	err := unix.Close(f.fd)
	f.fd = -1
	return err
}

// check fstats the file and reports its size and whether reading must
// restart from the beginning: the file shrank below the read offset, or it
// was unlinked and a different file now has its path.
func (f *tailFile) check() (size int64, restart bool, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(f.fd, &st); err != nil {
		return 0, false, fmt.Errorf("stat jit file %s: %w", f.path, err)
	}
	f.mtime = st.Mtim.Nano()
	f.size = st.Size
	if st.Nlink == 0 {
		// Unlinked: if something new is at the path, switch to it.
		fd, nst, err := openChecked(f.path, f.uid)
		if err == nil {
			if nst.Dev != f.dev || nst.Ino != f.ino {
				unix.Close(f.fd)
				f.fd, f.dev, f.ino = fd, nst.Dev, nst.Ino
				f.restart()
				f.size = nst.Size
				return nst.Size, true, nil
			}
			unix.Close(fd)
		}
	}
	if st.Size < f.off {
		f.restart()
		return st.Size, true, nil
	}
	if st.Size > f.off && len(f.head) > 0 {
		// Grown: check it is still the same content, not a rewrite.
		head := make([]byte, len(f.head))
		n, err := unix.Pread(f.fd, head, 0)
		if err == nil && (n < len(head) || !bytes.Equal(head, f.head)) {
			f.restart()
			return st.Size, true, nil
		}
	}
	return st.Size, false, nil
}

// advance moves the read offset past n bytes read.
func (f *tailFile) advance(n int64) {
	f.off += n
	f.consumed += n
}

// Progress says how far a JIT file has been read: the offset, the file's size when last
// looked at, and the bytes read in all (a file rewritten from its start is read again).
type Progress struct {
	Offset, Size, Consumed int64
}

func (f *tailFile) progress() Progress {
	return Progress{Offset: f.off, Size: f.size, Consumed: f.consumed}
}

// Progress says how far the file has been read.
func (t *Tailer) Progress() Progress { return t.f.progress() }

// Progress says how far the file has been read.
func (t *PerfMapTailer) Progress() Progress { return t.f.progress() }

func (f *tailFile) restart() {
	f.off = 0
	f.head = f.head[:0]
}

// read preads n bytes at off into the reused buffer.
func (f *tailFile) read(off int64, n int) ([]byte, error) {
	if cap(f.buf) < n {
		f.buf = make([]byte, n)
	}
	b := f.buf[:n]
	got := 0
	for got < n {
		m, err := unix.Pread(f.fd, b[got:], off+int64(got))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return b[:got], fmt.Errorf("read jit file %s: %w", f.path, err)
		}
		if m == 0 {
			break
		}
		got += m
	}
	hl := headLen
	if f.headMax > 0 {
		hl = f.headMax
	}
	if off == 0 && len(f.head) < hl && got > len(f.head) {
		f.head = append(f.head[:0], b[:min(got, hl)]...)
	}
	return b[:got], nil
}

// Tailer reads a growing jitdump file.
type Tailer struct {
	f      tailFile
	pid    uint32
	hdr    Header
	hasHdr bool
	failed error
	recs   []Record

	mu     sync.Mutex
	status Source
}

// OpenTailer opens the jitdump file at path for tailing. The file must not
// be a symbolic link, must be a regular file owned by uid (the target
// process's user), and its header (checked once present) must name pid, as
// seen in the target's own pid namespace.
func OpenTailer(path string, pid int, uid uint32) (*Tailer, error) {
	// Only the header proper is compared to notice a rewrite: stax's extension after it
	// changes in place.
	t := &Tailer{f: tailFile{path: path, uid: uid, fd: -1, headMax: HeaderSize}, pid: uint32(pid)}
	t.status = Source{Path: path, Kind: SourceJitdump}
	if err := t.f.open(); err != nil {
		return nil, err
	}
	return t, nil
}

// Header returns the file's header once it has been read.
func (t *Tailer) Header() (Header, bool) { return t.hdr, t.hasHdr }

// Status returns a snapshot of the file's status.
func (t *Tailer) Status() Source {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.status.clone()
}

// Close closes the file.
func (t *Tailer) Close() error { return t.f.close() }

func (t *Tailer) setErr(err error) {
	t.mu.Lock()
	t.status.LastError = err.Error()
	t.mu.Unlock()
}

// Poll returns the records appended since the last poll. When reset is
// true the file was truncated or replaced and is being read again from its
// start: the caller should drop what it learned from this file before
// applying recs. A partial trailing record is left for the next poll. After
// a malformed record Poll keeps returning no records (the file cannot be
// resynchronized) until the file is reset. The returned slice is reused by
// the next call.
func (t *Tailer) Poll() (recs []Record, reset bool, err error) {
	recs, reset, _, err = t.PollUpTo(math.MaxInt64)
	return recs, reset, err
}

// PollUpTo is Poll reading at most about limit bytes (whole records: one record larger than
// limit is still read whole); more says that the file holds more to read now.
func (t *Tailer) PollUpTo(limit int64) (recs []Record, reset, more bool, err error) {
	size, reset, err := t.f.check()
	if err != nil {
		t.setErr(err)
		return nil, false, false, err
	}
	if reset {
		t.hasHdr, t.failed = false, nil
		t.mu.Lock()
		t.status.Resets++
		t.status.Closed = false
		t.status.LastError = ""
		t.status.NotWritten, t.status.WriteError = 0, ""
		t.mu.Unlock()
	}
	if t.hasHdr && t.failed == nil {
		t.readLost()
	}
	if t.failed != nil || size == t.f.off {
		return nil, reset, false, nil
	}
	if !t.hasHdr {
		if size < HeaderSize {
			return nil, reset, false, nil
		}
		b, err := t.f.read(0, HeaderSize)
		if err != nil {
			t.setErr(err)
			return nil, reset, false, err
		}
		if len(b) < HeaderSize {
			return nil, reset, false, nil
		}
		h, err := ParseHeader(b)
		if err == nil && h.Pid != t.pid {
			err = fmt.Errorf("check jitdump header of %s: %w: %d, expected %d", t.f.path, ErrWrongPid, h.Pid, t.pid)
		}
		if err != nil {
			err = fmt.Errorf("read %s: %w", t.f.path, err)
			t.failed = err
			t.setErr(err)
			return nil, reset, false, err
		}
		if size < int64(h.TotalSize) {
			return nil, reset, false, nil
		}
		t.hdr, t.hasHdr = h, true
		t.f.off = int64(h.TotalSize)
	}
	t.readLost()
	clear(t.recs)
	recs = t.recs[:0]
	want := readChunk
	began := t.f.off
	for t.f.off < size {
		if t.f.off-began >= limit {
			more = true
			break
		}
		n := int64(want)
		if left := size - t.f.off; n > left {
			n = left
		}
		b, err := t.f.read(t.f.off, int(n))
		if err != nil {
			t.setErr(err)
			t.recs = recs
			return recs, reset, false, err
		}
		if len(b) == 0 {
			break
		}
		start := len(recs)
		var consumed, need int
		recs, consumed, need, err = ParseRecords(t.hdr.Order, b, recs)
		t.count(recs[start:])
		t.f.advance(int64(consumed))
		if err != nil {
			err = fmt.Errorf("read %s: %w", t.f.path, err)
			t.failed = err
			t.setErr(err)
			t.recs = recs
			return recs, reset, false, err
		}
		if consumed == 0 {
			if int64(need) > size-t.f.off || need <= len(b) || int64(len(b)) < n {
				break // partial record, or the file shrank under us
			}
			want = need
			continue
		}
		want = readChunk
	}
	t.recs = recs
	return recs, reset, more, nil
}

// Torn is how many bytes the file holds past its last whole record, once it has been read
// to there: a record its writer did not finish. It is 0 while records remain to be read.
func (t *Tailer) Torn() int64 {
	rest := t.f.size - t.f.off
	if !t.hasHdr || t.failed != nil || rest <= 0 {
		return 0
	}
	b, err := t.f.read(t.f.off, int(min(rest, RecordPrefixSize)))
	if err != nil || len(b) < RecordPrefixSize {
		return rest
	}
	if size := int64(t.hdr.Order.Uint32(b[4:])); size >= RecordPrefixSize && size <= rest {
		return 0
	}
	return rest
}

// readLost reads stax's header extension, which its collector rewrites in place with the
// count of what it could not write.
func (t *Tailer) readLost() {
	if t.hdr.TotalSize < HeaderSize+jitformat.StaxLostSize {
		return
	}
	b, err := t.f.read(HeaderSize, jitformat.StaxLostSize)
	if err != nil || len(b) < jitformat.StaxLostSize {
		return
	}
	l, ok := ParseStaxLost(t.hdr.Order, b)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.status.NotWritten = l.Functions
	if l.FailedWrites > 0 {
		t.status.WriteError = fmt.Sprintf("%d writes failed, the last: %v", l.FailedWrites, unix.Errno(l.Error))
	}
}

func (t *Tailer) count(recs []Record) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range recs {
		r := &recs[i]
		t.status.Records++
		switch {
		case r.Load != nil:
			t.status.Functions++
		case r.ID == RecCodeClose:
			t.status.Closed = true
		case r.Unwind != nil && r.Unwind.Truncated:
			t.status.skip(SkipUnwindSize)
		case !r.ID.Known():
			t.status.skip(SkipUnknownID)
		}
	}
}

// PerfMapTailer reads a growing perf map file.
type PerfMapTailer struct {
	f        tailFile
	skipLine bool // discarding the rest of an over-long line
	entries  []PerfMapEntry

	mu     sync.Mutex
	status Source
}

// OpenPerfMapTailer opens the perf map at path for tailing, with the same
// checks as OpenTailer.
func OpenPerfMapTailer(path string, uid uint32) (*PerfMapTailer, error) {
	t := &PerfMapTailer{f: tailFile{path: path, uid: uid, fd: -1}}
	t.status = Source{Path: path, Kind: SourcePerfMap}
	if err := t.f.open(); err != nil {
		return nil, err
	}
	return t, nil
}

// Status returns a snapshot of the file's status.
func (t *PerfMapTailer) Status() Source {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.status.clone()
}

// Close closes the file.
func (t *PerfMapTailer) Close() error { return t.f.close() }

// WrittenAt is when the file was last written, as of the last Poll, on CLOCK_MONOTONIC (the
// clock of samples): the lines a Poll returns were written at or before it.
func (t *PerfMapTailer) WrittenAt() uint64 {
	var real, mono unix.Timespec
	if unix.ClockGettime(unix.CLOCK_REALTIME, &real) != nil || unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono) != nil {
		return 0
	}
	age := real.Nano() - t.f.mtime
	if age < 0 {
		age = 0
	}
	if age > mono.Nano() {
		return 0
	}
	return uint64(mono.Nano() - age)
}

// Poll returns the entries of the whole lines appended since the last
// poll; a partial last line is read again next time. reset reports that
// the file was truncated or replaced and is read again from its start.
// The returned slice is reused by the next call.
func (t *PerfMapTailer) Poll() (entries []PerfMapEntry, reset bool, err error) {
	entries, reset, _, err = t.PollUpTo(math.MaxInt64)
	return entries, reset, err
}

// PollUpTo is Poll reading at most about limit bytes; more says that the file holds more
// to read now.
func (t *PerfMapTailer) PollUpTo(limit int64) (entries []PerfMapEntry, reset, more bool, err error) {
	size, reset, err := t.f.check()
	if err != nil {
		t.mu.Lock()
		t.status.LastError = err.Error()
		t.mu.Unlock()
		return nil, false, false, err
	}
	if reset {
		t.skipLine = false
		t.mu.Lock()
		t.status.Resets++
		t.status.Functions = 0
		t.status.LastError = ""
		t.mu.Unlock()
	}
	clear(t.entries)
	entries = t.entries[:0]
	want := perfMapChunk
	began := t.f.off
	for t.f.off < size {
		if t.f.off-began >= limit {
			more = true
			break
		}
		n := min(int64(want), size-t.f.off)
		b, err := t.f.read(t.f.off, int(n))
		if err != nil {
			t.mu.Lock()
			t.status.LastError = err.Error()
			t.mu.Unlock()
			t.entries = entries
			return entries, reset, false, err
		}
		if len(b) == 0 {
			break
		}
		if t.skipLine {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				t.f.advance(int64(len(b)))
				continue
			}
			t.f.advance(int64(i + 1))
			t.skipLine = false
			continue
		}
		start := len(entries)
		var consumed, bad int
		entries, consumed, bad = ParsePerfMap(b, entries)
		if consumed == len(b) && len(b) > 0 && b[len(b)-1] != '\n' {
			t.skipLine = true // an over-long partial line was dropped
		}
		t.f.advance(int64(consumed))
		t.mu.Lock()
		if t.status.Skipped == nil {
			t.status.Skipped = make(map[string]uint64)
		}
		if bad > 0 {
			t.status.Skipped[SkipBadLine] += uint64(bad)
		}
		t.status.Records += uint64(len(entries) - start + bad)
		for i := start; i < len(entries); i++ {
			if t.status.Functions >= MaxPerfMapEntries {
				t.status.Skipped[SkipTooMany] += uint64(len(entries) - i)
				entries = entries[:i]
				break
			}
			t.status.Functions++
		}
		t.mu.Unlock()
		if consumed == 0 {
			// No whole line in b: read more, up to an over-long line's
			// length, unless b already reaches the end of the file.
			if int64(len(b)) >= size-t.f.off || int64(len(b)) < n || want > MaxPerfMapLine {
				break
			}
			want *= 2
			continue
		}
		want = perfMapChunk
	}
	t.entries = entries
	return entries, reset, more, nil
}
