package jit

import (
	"github.com/stax-profiler/stax/internal/spans"
)

// MarkerTailer reads a growing marker file (marker-PID.txt, see spans.ParseMarkers).
type MarkerTailer struct {
	f        tailFile
	skipLine bool // discarding the rest of an over-long line
	markers  []spans.Marker
}

// OpenMarkerTailer opens the marker file at path for tailing, with the same checks as
// OpenTailer.
func OpenMarkerTailer(path string, uid uint32) (*MarkerTailer, error) {
	t := &MarkerTailer{f: tailFile{path: path, uid: uid, fd: -1}}
	if err := t.f.open(); err != nil {
		return nil, err
	}
	return t, nil
}

// Close closes the file.
func (t *MarkerTailer) Close() error { return t.f.close() }

// Progress says how far the file has been read.
func (t *MarkerTailer) Progress() Progress { return t.f.progress() }

// PollUpTo returns the markers of the whole lines appended since the last poll, reading
// at most about limit bytes, and how many lines were not markers; more says that the
// file holds more to read now, reset that it was truncated or replaced and is read again
// from its start. The returned slice is reused by the next call.
func (t *MarkerTailer) PollUpTo(limit int64) (markers []spans.Marker, bad int, reset, more bool, err error) {
	size, reset, err := t.f.check()
	if err != nil {
		return nil, 0, false, false, err
	}
	if reset {
		t.skipLine = false
	}
	clear(t.markers)
	markers = t.markers[:0]
	began := t.f.off
	for t.f.off < size {
		if t.f.off-began >= limit {
			more = true
			break
		}
		n := min(int64(perfMapChunk), size-t.f.off)
		b, err := t.f.read(t.f.off, int(n))
		if err != nil {
			t.markers = markers
			return markers, bad, reset, false, err
		}
		if len(b) == 0 {
			break
		}
		if t.skipLine {
			i := indexNewline(b)
			if i < 0 {
				t.f.advance(int64(len(b)))
				continue
			}
			t.f.advance(int64(i + 1))
			t.skipLine = false
			continue
		}
		var consumed, nbad int
		var long bool
		markers, consumed, nbad, long = spans.ParseMarkers(b, markers)
		bad += nbad
		t.skipLine = long
		t.f.advance(int64(consumed))
		if consumed == 0 {
			break // a partial last line
		}
	}
	t.markers = markers
	return markers, bad, reset, more, nil
}

func indexNewline(b []byte) int {
	for i, c := range b {
		if c == '\n' {
			return i
		}
	}
	return -1
}
