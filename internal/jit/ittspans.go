package jit

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/spans"
)

// ITTSpanTailer reads a growing spans file of stax's ITT collector (itt-PID.spans).
type ITTSpanTailer struct {
	f      tailFile
	pid    uint32
	hasHdr bool
	failed error
	dec    spans.ITTDecoder
	hdr    spans.ITTHeader
	// dropSum is what the DROP records read say; counted what was returned as dropped
	// so far: the larger of dropSum and the header's count, which holds every drop even
	// when no DROP record could be written (a full file system).
	dropSum, counted uint64
	// wantStart is the process's start time (clock ticks since boot), 0 if unknown: a
	// version 2 header naming another is an earlier process's with the same pid.
	wantStart uint64
}

// ExpectStart gives the start time of the process the file is read for (field 22 of
// /proc/PID/stat): a header that names another start time is refused as stale.
func (t *ITTSpanTailer) ExpectStart(ticks uint64) { t.wantStart = ticks }

// ittHeadStable is how many leading bytes of a spans file never change while it is
// written: a version 2 header's counts (from byte 24) are updated in place.
const ittHeadStable = 24

// OpenITTSpanTailer opens the spans file at path for tailing, with the same checks as
// OpenTailer (its header, once present, must name pid).
func OpenITTSpanTailer(path string, pid int, uid uint32) (*ITTSpanTailer, error) {
	t := &ITTSpanTailer{f: tailFile{path: path, uid: uid, fd: -1, headMax: ittHeadStable}, pid: uint32(pid)}
	if err := t.f.open(); err != nil {
		return nil, err
	}
	return t, nil
}

// Close closes the file.
func (t *ITTSpanTailer) Close() error { return t.f.close() }

// Is reports whether path is the file read (its device and inode), without following a
// final symbolic link.
func (t *ITTSpanTailer) Is(path string) bool {
	var st unix.Stat_t
	return unix.Lstat(path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Dev == t.f.dev && st.Ino == t.f.ino
}

// Notes returns the task ends without a begin and the unfinished tasks read so far.
func (t *ITTSpanTailer) Notes() (unmatched, unfinished uint64) {
	return t.dec.Unmatched, t.dec.Unfinished
}

// Progress says how far the file has been read.
func (t *ITTSpanTailer) Progress() Progress { return t.f.progress() }

// Header returns the file's header as last read, and whether it has been.
func (t *ITTSpanTailer) Header() (spans.ITTHeader, bool) { return t.hdr, t.hasHdr }

// WriteFailures says how many of the writer's writes failed (each rolled back, its spans
// counted dropped), and the error of the last; 0 for a file that does not say (version 1).
func (t *ITTSpanTailer) WriteFailures() (n uint32, errno unix.Errno) {
	return t.hdr.FailedWrites, unix.Errno(t.hdr.Errno)
}

// Torn is how many bytes the file holds past its last whole record, once it has been read
// to there: a record the writer had not finished (or a torn one, which stax's collector
// never leaves). It is 0 while records remain to be read.
func (t *ITTSpanTailer) Torn() int64 {
	if !t.hasHdr || t.failed != nil {
		return 0
	}
	size := t.f.size
	if size-t.f.off <= 0 {
		return 0
	}
	b, err := t.f.read(t.f.off, int(min(size-t.f.off, 8)))
	if err != nil || len(b) < 8 {
		return size - t.f.off
	}
	if rec := int64(binary.LittleEndian.Uint16(b[2:])); rec >= 8 && rec <= size-t.f.off {
		return 0 // a whole record is there to read
	}
	return size - t.f.off
}

// PollUpTo reads the records appended since the last poll, at most about limit bytes,
// calling emit for each span; it returns the records it could not use, the spans the
// writer dropped, and whether the file holds more to read now. After a damaged record it
// reads nothing more until the file is rewritten.
func (t *ITTSpanTailer) PollUpTo(limit int64, emit func(spans.Span)) (bad int, dropped uint64, more bool, err error) {
	_, bad, dropped, more, err = t.poll(limit, emit)
	return bad, dropped, more, err
}

// SkipUpTo reads on as PollUpTo does, counting the tasks and markers (n) instead of
// making spans of them: for a run that keeps no more spans.
func (t *ITTSpanTailer) SkipUpTo(limit int64) (n uint64, bad int, dropped uint64, more bool, err error) {
	return t.poll(limit, nil)
}

// poll is PollUpTo, and SkipUpTo when emit is nil.
func (t *ITTSpanTailer) poll(limit int64, emit func(spans.Span)) (n uint64, bad int, dropped uint64, more bool, err error) {
	size, reset, err := t.f.check()
	if err != nil {
		return 0, 0, 0, false, err
	}
	if reset {
		t.hasHdr, t.failed = false, nil
		t.dec.Reset()
		t.hdr, t.dropSum, t.counted = spans.ITTHeader{}, 0, 0
	}
	if t.failed != nil {
		return 0, 0, 0, false, t.failed
	}
	if !t.hasHdr {
		if size < spans.ITTHeaderSize {
			return 0, 0, 0, false, nil
		}
		b, err := t.f.read(0, spans.ITTHeaderSize)
		if err != nil || len(b) < spans.ITTHeaderSize {
			return 0, 0, 0, false, err
		}
		need := spans.ITTHeaderNeed(b)
		if size < int64(need) {
			return 0, 0, 0, false, nil
		}
		if b, err = t.f.read(0, need); err != nil || len(b) < need {
			return 0, 0, 0, false, err
		}
		h, err := spans.ParseITTHeaderFull(b)
		if err == nil && h.Pid != t.pid {
			err = fmt.Errorf("%w: %d, expected %d", ErrWrongPid, h.Pid, t.pid)
		}
		if err == nil && h.Start != 0 && t.wantStart != 0 && h.Start != t.wantStart {
			err = fmt.Errorf("%w (its header names a process started at tick %d, this one started at %d)", ErrStale, h.Start, t.wantStart)
		}
		if err == nil && int64(h.Size) > size {
			return 0, 0, 0, false, nil
		}
		if err != nil {
			t.failed = fmt.Errorf("read %s: %w", t.f.path, err)
			return 0, 0, 0, false, t.failed
		}
		t.hdr, t.hasHdr = h, true
		t.f.advance(int64(h.Size))
	} else if t.hdr.Version >= 2 {
		// The counts of what the writer could not write change in place.
		if b, err := t.f.read(0, spans.ITTHeaderV2Size); err == nil {
			t.hdr.ParseCounts(b)
		}
	}
	defer func() {
		// What was dropped: the DROP records' sum, or the header's count when larger
		// (drops that no DROP record could carry yet).
		all := max(t.dropSum, t.hdr.Dropped)
		if all > t.counted {
			dropped += all - t.counted
			t.counted = all
		}
	}()
	began := t.f.off
	for t.f.off < size {
		if t.f.off-began >= limit {
			more = true
			break
		}
		want := min(int64(readChunk), size-t.f.off)
		b, err := t.f.read(t.f.off, int(want))
		if err != nil {
			return n, bad, dropped, false, err
		}
		var consumed, nspans, nbad int
		var ndrop uint64
		if emit != nil {
			consumed, nbad, ndrop, err = t.dec.Decode(b, emit)
		} else {
			consumed, nspans, nbad, ndrop, err = t.dec.Skip(b)
		}
		n += uint64(nspans)
		bad += nbad
		t.dropSum += ndrop
		t.f.advance(int64(consumed))
		if err != nil {
			if errors.Is(err, spans.ErrITTDamaged) {
				t.failed = fmt.Errorf("read %s: %w", t.f.path, err)
				return n, bad, dropped, false, t.failed
			}
			return n, bad, dropped, false, err
		}
		if consumed == 0 {
			break
		}
	}
	return n, bad, dropped, more, nil
}

// CountRest counts the spans of the records not read yet, without keeping them, reading at
// most limit bytes: for a file the run could not read to its end in time. It returns the
// tasks and markers counted, and the writer's drops the records report.
func (t *ITTSpanTailer) CountRest(limit int64) (n uint64, err error) {
	size, _, err := t.f.check()
	if err != nil || !t.hasHdr || t.failed != nil {
		return 0, err
	}
	end := min(size, t.f.off+limit)
	for t.f.off < end {
		b, err := t.f.read(t.f.off, int(min(int64(readChunk), end-t.f.off)))
		if err != nil {
			return n, err
		}
		c, consumed, err := spans.CountITT(b)
		n += c
		t.f.advance(int64(consumed))
		if err != nil || consumed == 0 {
			return n, err
		}
	}
	return n, nil
}
